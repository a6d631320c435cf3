/* The executors' connections: the frames an executor sends (REGISTER, HEARTBEAT, STATUS,
 * RECONCILE) read, decoded and applied to the ledger, protocol faults refused, and what a
 * closing connection means for its executor (a loss, or a release). */

#include "driver.h"

/* Keeps what an executor reported, for the summary: the last REPORT_DETAIL_MAX in the ring. The
 * binaries count is the executor's word: shown, never part of the verdict (the executor itself
 * exits non-zero if it is sent a binary twice). */
static void keep_report(driver *d, conn *c) {
  if (!c->registered)
    return;
  exec_report *r = &d->conns.reports[d->conns.nreports++ % REPORT_DETAIL_MAX];
  memcpy(r->id, c->id, sizeof c->id);
  r->cores = c->cores;
  r->binaries = c->binaries;
  r->tasksets = c->tasksets_sent;
}

/* What the close of a connection means for its executor (link.c's close_conn calls it, set up as
 * link_state.on_close). A registered executor that goes before STOP, and that the ledger still
 * holds, is reported TL_LOSS_PENDING: its attempts freeze until the real reason comes from its
 * launcher (on_end), or, for an executor no launcher started (or whose end never comes), until
 * pending_loss_timeout_ns. When the launcher's end came first, the real reason is already in;
 * otherwise the launcher is asked for news now (ops->query). One the driver closes for a
 * protocol fault (c->violated), or because it did not read what it was sent (c->overflowed:
 * --max-unsent-bytes), has a known reason at once: the driver dropped it, TL_LOSS_KILLED, not
 * the app's doing; its tasks run elsewhere now. One the driver released is removed as
 * decommissioned: its end was asked for. */
void conn_closing(conn *c) {
  driver *d = c->d;
  keep_report(d, c);
  free(c->recon); /* a reconciliation cut short by the close: never applied */
  c->recon = NULL;
  c->nrecon = c->recon_cap = 0;
  if (d->nullfloor.on)
    nullfloor_closing(d, c);
  tl_executor_state state;
  if (c->registered && !d->phase.stopping && in_ledger(d, c->id, &state) &&
      state != TL_EXECUTOR_PENDING_LOSS) {
    if (c->released) {
      remove_released(d, c->id);
    } else if (c->violated || c->overflowed) {
      tl_loss_reason reason = {.kind = TL_LOSS_KILLED,
                               .message = c->violated
                                              ? "closed by the driver for a protocol fault"
                                              : "closed by the driver: it did not read what it "
                                                "was sent (--max-unsent-bytes)"};
      report_loss(d, c->id, &reason, DETECTED_FAULT, "driver");
    } else {
      tl_loss_reason reason = {.kind = TL_LOSS_PENDING, .message = "connection closed"};
      report_loss(d, c->id, &reason, DETECTED_CLOSE, NULL);
      exec_rec *er = find_exec(d, c->id);
      if (er && er->started && !er->ended && d->run.launcher)
        d->run.ops->query(d->run.launcher, c->id);
    }
  }
}

/* Closes a connection for a protocol or registration fault; *counter counts its kind, why (NULL:
 * already logged) says what it was. A registered executor closed so is removed from the ledger
 * (close_conn). */
static void refuse_conn(conn *c, uint64_t *counter, const char *why) {
  driver *d = c->d;
  d->conns.refused_conns++;
  if (counter)
    (*counter)++;
  if (c->registered) {
    c->violated = true;
    d->conns.violations++;
  }
  faults_refused(d);
  /* Logged whatever --quiet says, rate-limited: a peer that breaks the protocol may be an
   * attack, and an operator must be able to see it. */
  char name[CONN_NAME_MAX];
  if (why && edge_log_ok(&d->log.refused, "refused-connection lines"))
    fprintf(stderr, "tl-driver: closing connection %s: %s\n", conn_name(c, name), why);
  close_conn(c, NULL);
}

/* A frame of an executor the ledger lost or removed (heartbeat expiry while it was stopped):
 * refused and counted; the executor is told to FORGET every binary it holds and to STOP, once
 * (conn_dismiss). */
static void refuse_gone(conn *c, const char *what) {
  driver *d = c->d;
  d->conns.gone_frames++;
  if (c->gone)
    return;
  char e[ESC_MAX];
  fprintf(stderr, "tl-driver: %s from %s refused: %s (removed); sending STOP\n", what,
          esc(e, c->id), tl_err_name(TL_EGONE));
  conn_dismiss(c, "removed by the driver");
}

/* The driver's epoch, the ledger's (tl_epoch: 1 for a new run, higher after each restore): the
 * first frame on a connection whose token was accepted (docs/cluster.md "Fencing"), before any
 * other, a refusal's STOP included. */
static void send_epoch(conn *c) {
  tlc_msg m = {.type = TLC_MSG_EPOCH, .u.epoch = {tl_epoch(c->d->run.s)}};
  encode(c, &m);
}

/* The resources a REGISTER declares, copied NUL-terminated into a record of their own, and the
 * descriptor's fields pointing at it; NULL when it declares none. The codec bounded every count
 * and length (TLC_RESOURCES_MAX, TLC_REGISTER_ADDRESSES_MAX, 63 bytes) and checked the
 * character sets; the ledger checks the rest (distinct names and addresses). */
static conn_resources *copy_resources(const tlc_register *r, tl_executor_desc *desc) {
  if (r->nresources == 0)
    return NULL;
  conn_resources *res = malloc(sizeof *res);
  if (!res)
    die_oom();
  size_t at = 0;
  for (size_t i = 0; i < r->nresources; i++) {
    const tlc_resource *t = &r->resources[i];
    memcpy(res->names[i], t->name.ptr, t->name.len);
    res->names[i][t->name.len] = '\0';
    for (size_t a = 0; a < t->naddresses; a++) {
      memcpy(res->addresses[at + a], t->addresses[a].ptr, t->addresses[a].len);
      res->addresses[at + a][t->addresses[a].len] = '\0';
      res->addrp[at + a] = res->addresses[at + a];
    }
    res->decl[i] = (tl_resource){res->names[i], res->addrp + at, (uint32_t)t->naddresses};
    at += t->naddresses;
  }
  res->n = r->nresources;
  desc->resources = res->decl;
  desc->nresources = (uint32_t)res->n;
  return res;
}

static void handle_register(conn *c, const tlc_register *r) {
  driver *d = c->d;
  if (!token_matches(d->auth.token, r->token)) {
    auth_failed(d, c); /* logs it, with the address */
    refuse_conn(c, &d->conns.refused_token, NULL);
    return;
  }
  char id[TL_ID_MAX], host[TL_HOST_MAX], e[ESC_MAX], eh[ESC_MAX];
  memcpy(id, r->executor_id.ptr, r->executor_id.len);
  id[r->executor_id.len] = '\0';
  memcpy(host, r->host.ptr, r->host.len);
  host[r->host.len] = '\0';
  /* The ledger counts task slots: the executor's cores plus the launches its queue may hold. */
  uint32_t slots = r->cores > UINT32_MAX - d->run.queue ? UINT32_MAX : r->cores + d->run.queue;
  tl_executor_desc desc = {.id = id, .host = host, .cores = slots, .profile = r->profile};
  conn_resources *res = copy_resources(r, &desc);
  /* An executor of the run before a crash, back: the restored ledger holds it RECOVERING, and
   * its RECONCILE comes next (handle_reconcile). It is not added again. */
  tl_executor_status es;
  bool recovering =
      tl_executor_get(d->run.s, id, &es) == TL_OK && es.state == TL_EXECUTOR_RECOVERING;
  for (conn *o = d->link.list; recovering && o; o = o->next)
    if (o != c && o->registered && !o->closing && !strcmp(o->id, id))
      recovering = false; /* a second connection for it: a duplicate */
  /* A recovering id is bound to the host the record holds it on: another host's REGISTER is
   * refused, and the real executor can still come back and reconcile. The host is the
   * executor's word: a client with the token can name the right one (the token is the trust
   * boundary, docs/cluster.md "Limits and hardening"). */
  if (recovering && strcmp(es.host, host) != 0) {
    free(res);
    char why[3 * ESC_MAX + 96], er[ESC_MAX];
    snprintf(why, sizeof why,
             "REGISTER of recovering executor %s from host %s refused: its record holds it on "
             "host %s",
             esc(e, id), esc(eh, host), esc(er, es.host));
    send_epoch(c); /* an executor takes a STOP only after its driver's epoch */
    send_stop(c, "a recovering executor's id from another host");
    refuse_conn(c, &d->conns.refused_host, why);
    return;
  }
  /* A recovering executor comes back as it was: its cores, profile and resources. */
  bool same = es.cores == slots && es.profile == r->profile && es.nresources == desc.nresources;
  int rc = recovering ? (same ? TL_OK : TL_EINVAL) : tl_executor_add(d->run.s, &desc);
  if (rc < 0) {
    free(res);
    char why[ESC_MAX + 64];
    snprintf(why, sizeof why, "REGISTER of %s refused: %s", esc(e, id), tl_err_name(rc));
    /* Told to STOP first: an executor that reconnects after a crash and is not known as
     * recovering (its loss was begun before the crash) stops at once instead of retrying. The
     * epoch comes before it: an executor takes a STOP only from a driver not older than any it
     * has seen. */
    send_epoch(c);
    send_stop(c, why);
    refuse_conn(c,
                rc == TL_EEXIST      ? &d->conns.refused_dup
                : rc == TL_ERESOURCE ? &d->conns.refused_resource
                                     : NULL,
                why);
    return;
  }
  c->res = res;
  c->profile = r->profile;
  d->offers.has_resources = d->offers.has_resources || res != NULL;
  c->recovering = recovering;
  memcpy(c->id, id, sizeof id);
  conn_registered(c);
  c->cores = r->cores;
  d->conns.registered_cores += r->cores;
  c->idle_since = uv_hrtime();
  uv_timer_stop(&c->deadline_timer);
  /* Authenticated: its frames may now be as large as the protocol allows. */
  tlc_decoder_set_frame_max(&c->decoder, TLC_FRAME_MAX);
  send_epoch(c); /* before any launch: sent with the first frames that follow */
  offers_reserve(d, slots);
  d->conns.registered++;
  logf_(d,
        "executor %s %s from %s (host %s, %" PRIu32 " cores, queue %" PRIu32 ", profile %" PRIu32
        ", %zu resources)",
        esc(e, id), recovering ? "reconnected" : "registered", c->peer, esc(eh, host), r->cores,
        d->run.queue, r->profile, r->nresources);
  if (recovering)
    return; /* offers once it reconciled */
  /* Its first offer asks for a record that holds it (record_may_launch): after a crash it
   * reconciles instead of starting over. */
  if (d->phase.offering) {
    offer(d, c);
  } else if (d->conns.registered ==
             d->run.nexecutors + d->run.accept) { /* everyone came: offers begin */
    phase_offer(d);
    for (conn *o = d->link.list; o; o = o->next)
      offer(d, o);
    faults_all_registered(d);
  }
}

/* Updates of a STATUS frame applied per tl_status_updates call (a frame may carry more: they go
 * in chunks of this many), and their messages' NUL-terminated copies (the loop is one thread). */
#define STATUS_CHUNK 32
static char status_texts[STATUS_CHUNK][TLC_TEXT_MAX + 1];

/* The library's update for one item of a STATUS frame; its message in text. */
static tl_update status_update_of(const tlc_status_item *it, char *text) {
  tl_update u = {0};
  memcpy(text, it->text.ptr ? (const char *)it->text.ptr : "", it->text.len);
  text[it->text.len] = '\0';
  switch (it->state) {
  case TLC_TASK_RUNNING:
    u.state = TL_TASK_RUNNING;
    break;
  case TLC_TASK_FINISHED:
    u.state = TL_TASK_FINISHED; /* the result's bytes are not kept: only their size */
    u.result_size = it->result.len;
    break;
  case TLC_TASK_FAILED:
    u.state = TL_TASK_FAILED;
    u.failure = TL_END_EXCEPTION;
    u.message = text;
    break;
  default:
    u.state = TL_TASK_KILLED;
    u.message = text;
    break;
  }
  return u;
}

/* What the driver does with one update's refusal. */
static void status_refused(conn *c, tl_tid tid, int rc) {
  driver *d = c->d;
  char e[ESC_MAX];
  if (rc == TL_EGONE) {
    d->conns.refused_updates++;
    refuse_gone(c, "status update");
    return;
  }
  if (rc == TL_EOWNER) {
    d->conns.refused_owner++;
    faults_refused(d);
  }
  if (rc == TL_ESTALE && c->reconciled) { /* an end it held of a tid the restored ledger does */
    d->conns.resent_unknown++;            /* not hold (it was told to kill it): expected */
    return;
  }
  if (d->conns.refused_updates++ < LOG_LIMIT)
    fprintf(stderr, "tl-driver: update of task %" PRIu64 " from %s refused: %s\n", tid,
            esc(e, c->id), tl_err_name(rc));
}

/* Applies a STATUS frame, a chunk of updates per tl_status_updates call (one lock, one dispatch
 * each), then offers the executor its freed cores. */
static void handle_status(conn *c, const tlc_status *st) {
  driver *d = c->d;
  bool running = false;
  for (size_t from = 0; from < st->count; from += STATUS_CHUNK) {
    size_t n = st->count - from < STATUS_CHUNK ? st->count - from : STATUS_CHUNK;
    tl_tid tids[STATUS_CHUNK];
    tl_update ups[STATUS_CHUNK];
    int results[STATUS_CHUNK];
    for (size_t i = 0; i < n; i++) {
      const tlc_status_item *it = &st->items[from + i];
      running = running || it->state == TLC_TASK_RUNNING;
      tids[i] = it->tid;
      ups[i] = status_update_of(it, status_texts[i]);
    }
    int rc = d->nullfloor.on ? nullfloor_updates(d, c, tids, ups, n, results)
                             : tl_status_updates(d->run.s, c->id, tids, ups, n, results);
    for (size_t i = 0; i < n; i++) {
      int one = rc == TL_OK ? results[i] : rc; /* refused as a whole: each update was */
      if (one < 0)
        status_refused(c, tids[i], one);
    }
  }
  faults_status(d, c, running);
  if (d->scaling.dynamic && c->idle_since == 0) { /* for --idle-timeout */
    tl_executor_status es;
    if (tl_executor_get(d->run.s, c->id, &es) == 0 && es.running == 0)
      c->idle_since = uv_hrtime();
  }
  offer(d, c);
}

/* A stray reconciliation's frame (from an executor that was not recovering: it registered
 * afresh): every attempt it names is unknown here, and is named by a KILL, so nothing runs that
 * nobody tracks. Each frame's KILLs go out as it comes: nothing is gathered. */
static void stray_reconcile(conn *c, const tlc_reconcile *m) {
  driver *d = c->d;
  char e[ESC_MAX];
  if (m->count > 0) {
    uint64_t *tids = malloc(m->count * sizeof *tids);
    if (!tids)
      die_oom();
    for (size_t i = 0; i < m->count; i++)
      tids[i] = m->items[i].tid;
    send_kills(c, tids, m->count, true, "Unknown to the restored driver");
    free(tids);
  }
  d->conns.stray_kills += m->count;
  if (!m->more) {
    d->conns.stray_reconciles++;
    logf_(d,
          "executor %s reconciled %" PRIu64 " attempts, but it was not recovering: each named by "
          "a KILL",
          esc(e, c->id), c->recon_named);
  }
}

/* Applies a recovering executor's whole reconciliation, gathered from its RECONCILE frames, to
 * the restored ledger, its kills gathered into few KILL frames (kills.c); then offers it work. */
static void apply_reconcile(conn *c) {
  driver *d = c->d;
  char e[ESC_MAX];
  uint64_t t0 = uv_hrtime();
  tl_stats before;
  tl_stats_get(d->run.s, &before);
  size_t n = c->nrecon, nunknown = 0;
  kills_hold(d, c); /* the unknown attempts' kill_task events: gathered, sent as one write */
  int rc = tl_executor_reconcile_items(d->run.s, c->id, c->recon, n, NULL, 0, &nunknown);
  kills_release(d);
  free(c->recon);
  c->recon = NULL;
  c->nrecon = c->recon_cap = 0;
  if (rc == TL_EINVAL) { /* a tid 0: the executor's fault */
    refuse_conn(c, &d->conns.refused_unexpected, "RECONCILE with a tid 0");
    return;
  }
  if (rc < 0) { /* lost meanwhile (the recovery timeout): it may register afresh */
    fprintf(stderr, "tl-driver: tl_executor_reconcile_items %s: %s\n", esc(e, c->id),
            tl_err_name(rc));
    c->recovering = false;
    refuse_gone(c, "reconciliation");
    return;
  }
  tl_stats after;
  tl_stats_get(d->run.s, &after);
  c->recovering = false;
  c->reconciled = true;
  uint64_t lost = after.reconcile_lost - before.reconcile_lost;
  uint64_t adopted = after.reconcile_adopted - before.reconcile_adopted;
  if (d->conns.reconciled < REPORT_DETAIL_MAX) {
    recon_rec *r = &d->conns.recons[d->conns.reconciled];
    copy_text(r->id, sizeof r->id, c->id);
    r->reported = n;
    r->unknown = nunknown;
    r->lost = lost;
    r->ms = (uv_hrtime() - d->recovery.recover_start_ns) / 1000000;
  }
  d->conns.reconciled++;
  d->conns.reconciled_tids += n;
  d->conns.reconcile_unknown += nunknown;
  d->conns.reconcile_lost += lost;
  d->conns.reconcile_adopted += adopted;
  uint64_t took = uv_hrtime() - t0;
  if (took > d->conns.reconcile_max_ns)
    d->conns.reconcile_max_ns = took;
  logf_(d,
        "executor %s reconciled: %zu tids named, %zu unknown (killed), %" PRIu64
        " not named (run again), %" PRIu64 " adopted; applied in %.1f ms",
        esc(e, c->id), n, nunknown, lost, adopted, (double)took / 1e6);
  check_recovery(d);
  offer(d, c);
}

/* RECONCILE: an executor that reconnected names the attempts it runs, queues, or holds the ends
 * of, in one or more frames (more set on all but the last): its reconciliation, at most
 * TLC_RECONCILE_ITEMS_MAX attempts in all, and one per connection (another RECONCILE after the
 * last frame is a fault). From one the restored ledger holds RECOVERING, the frames' items are
 * gathered (each frame costs the loop what its bytes cost to copy) and the last frame applies
 * them (apply_reconcile): what it names and the ledger holds runs on, what the ledger holds and
 * it does not name ends EXECUTOR_LOST (run again), and what it names that the ledger does not
 * hold gets a KILL. From any other registered executor, each frame's attempts get KILLs at
 * once (stray_reconcile). */
static void handle_reconcile(conn *c, const tlc_reconcile *m) {
  driver *d = c->d;
  if (c->recon_done) {
    refuse_conn(c, &d->conns.refused_unexpected, "a second reconciliation");
    return;
  }
  if (m->count > TLC_RECONCILE_ITEMS_MAX - c->recon_named) {
    char why[96];
    snprintf(why, sizeof why, "a reconciliation of more than %d attempts", TLC_RECONCILE_ITEMS_MAX);
    refuse_conn(c, &d->conns.refused_reconcile_max, why);
    return;
  }
  c->recon_named += m->count;
  c->recon_done = !m->more;
  if (!c->recovering) {
    stray_reconcile(c, m);
    return;
  }
  if (c->nrecon + m->count > c->recon_cap) { /* within TLC_RECONCILE_ITEMS_MAX: checked above */
    size_t cap = c->recon_cap ? c->recon_cap : 1024;
    while (cap < c->nrecon + m->count)
      cap *= 2;
    tl_reconcile_item *items = realloc(c->recon, cap * sizeof *items);
    if (!items)
      die_oom();
    c->recon = items;
    c->recon_cap = cap;
  }
  for (size_t i = 0; i < m->count; i++) {
    const tlc_reconcile_item *it = &m->items[i];
    c->recon[c->nrecon++] = (tl_reconcile_item){
        .tid = it->tid,
        .taskset = it->taskset_id,
        .index = it->index,
        .attempt = it->attempt,
        .speculative = (it->flags & TLC_RECONCILE_SPECULATIVE) != 0,
        .ended = (it->flags & TLC_RECONCILE_ENDED) != 0,
    };
  }
  if (c->recon_done)
    apply_reconcile(c);
}

/* Every connection reads into the driver's one buffer: on_read decodes what came before the
 * loop reads again (the decoder copies what it keeps), so a connection costs no read buffer. */
void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  conn *c = h->data;
  *buf = uv_buf_init((char *)c->d->conns.read_buf, sizeof c->d->conns.read_buf);
}

void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  conn *c = s->data;
  if (nread < 0) {
    close_conn(c, nread == UV_EOF ? (c->d->phase.stopping ? NULL : "closed by the peer")
                                  : uv_strerror((int)nread));
    return;
  }
  const uint8_t *data = (const uint8_t *)buf->base;
  size_t len = (size_t)nread;
  while (len > 0 && !c->closing && !c->overflowed) {
    size_t used;
    tlc_msg msg;
    int rc = tlc_decoder_feed(&c->decoder, data, len, &used, &msg);
    if (rc < 0) {
      char why[96];
      snprintf(why, sizeof why, "bad frame: %s", tlc_err_name(rc));
      refuse_conn(c, -rc < 16 ? &c->d->conns.refused_frame[-rc] : NULL, why);
      return;
    }
    data += used;
    len -= used;
    if (msg.type == TLC_MSG_NONE)
      continue;
    c->d->conns.frames_in++;
    if (!c->registered && msg.type != TLC_MSG_REGISTER) {
      refuse_conn(c, &c->d->conns.refused_early, "a frame before REGISTER");
      return;
    }
    if (c->lost || c->gone) { /* its executor was lost: nothing it sends is applied */
      refuse_gone(c, tlc_msg_type_name(msg.type));
      continue;
    }
    if (c->recovering && msg.type != TLC_MSG_RECONCILE && msg.type != TLC_MSG_HEARTBEAT) {
      char why[96];
      snprintf(why, sizeof why, "%s before RECONCILE", tlc_msg_type_name(msg.type));
      refuse_conn(c, &c->d->conns.refused_unexpected, why);
      return;
    }
    switch (msg.type) {
    case TLC_MSG_REGISTER:
      if (c->registered) {
        refuse_conn(c, &c->d->conns.refused_second, "a second REGISTER");
        return;
      }
      handle_register(c, &msg.u.reg);
      break;
    case TLC_MSG_HEARTBEAT:
      c->binaries = msg.u.heartbeat.binaries;
      c->heartbeats++;
      if (!c->d->record.state_dir && c->status_frames > c->synced && !c->closing) {
        /* Nothing is recovered after a crash without --state-dir: what the executor holds
         * for a restarted driver may go, once a heartbeat. */
        tlc_msg m = {.type = TLC_MSG_SYNCED, .u.synced = {c->status_frames}};
        encode(c, &m);
        send_out(c);
        c->synced = c->status_frames;
      }
      if (!c->d->phase.stopping && !c->released && !c->recovering) {
        int hb = tl_executor_heartbeat(c->d->run.s, c->id);
        if (hb == TL_EGONE)
          refuse_gone(c, "heartbeat");
        else if (hb < 0) {
          char e[ESC_MAX];
          fprintf(stderr, "tl-driver: heartbeat of %s: %s\n", esc(e, c->id), tl_err_name(hb));
        }
      }
      break;
    case TLC_MSG_STATUS:
      c->status_frames++;
      handle_status(c, &msg.u.status);
      break;
    case TLC_MSG_RECONCILE:
      handle_reconcile(c, &msg.u.reconcile);
      break;
    default: {
      char why[96];
      snprintf(why, sizeof why, "unexpected %s", tlc_msg_type_name(msg.type));
      refuse_conn(c, &c->d->conns.refused_unexpected, why);
      return;
    }
    }
  }
}

void on_register_timeout(uv_timer_t *t) {
  conn *c = t->data;
  refuse_conn(c, &c->d->conns.refused_timeout, "no REGISTER in time");
}
