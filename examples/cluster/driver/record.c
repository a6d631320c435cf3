/* The run's durable record (--state-dir): written with state.c, held launches and releases
 * released when a record holds them, the tid reservation, and the record read back by a
 * restarted driver (recovery.c). */

#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

static void on_commit(uv_idle_t *idle);

/* ---------------------------------------------------------------------------------------------
 * The record's body (docs/cluster.md "Driver failover"), written and read with the project's
 * byte codec (codec.h): every integer little-endian, every string a u16 length and its bytes.
 *
 *   u32 STATE_BODY_VERSION; the token; u32 the port; u64 ns offering so far;
 *   u32 jobs, and for each: JOB_FIELDS, and for each of its stages: STAGE_FIELDS;
 *   u32 executors started (exec_rec), and for each: EXEC_FIELDS;
 *   STATE_COUNTERS, a u64 each;
 *   the run's history (put_history): u64 the run's first start (CLOCK_REALTIME, ns since the
 *   epoch); DETECTED_N u64 lost executors by how their losses began, LOSS_KINDS u64 by their
 *   real reasons, LOSS_KINDS u64 loss reports by kind; u32 loss records, and for each:
 *   LOSS_FIELDS (the last LOST_DETAIL_MAX that ended, then those still open); u64 recoveries
 *   in all, u32 recoveries kept (the last RECOVERIES_MAX, this driver's last), and for each:
 *   RECOVERY_FIELDS;
 *   u64 the ledger's snapshot length, then tl_snapshot's bytes (docs/snapshot.md).
 *
 * Each record's fields are described once, in a table below, and the writer and the reader of
 * a record both run over its table, side by side in this file. A table's row says how its field
 * is kept:
 *   U(width, field)   an unsigned integer of width bytes
 *   I(width, field)   a signed one, two's complement
 *   B(field)          a bool, one byte (any byte but 0 is true)
 *   S(field)          a string (a char array), which must fit it and hold no NUL
 *   C(width, field)   an integer of the command line's, which the record must match
 *   K(field)          a string of the command line's, which the record must match
 *   X(field)          a u8 the record's own code says how to write and read (exec_started)
 * The record and the ledger are taken at one moment of the loop, between two calls: what the
 * jobs counted is exactly what the ledger holds.
 * ------------------------------------------------------------------------------------------- */

#define JOB_FIELDS(U, I, B, S, C, K, X)                                                            \
  C(4, nstages)                                                                                    \
  U(4, current)                                                                                    \
  B(failed)                                                                                        \
  B(done)

#define STAGE_FIELDS(U, I, B, S, C, K, X)                                                          \
  K(kind)                                                                                          \
  C(4, ntasks)                                                                                     \
  U(8, taskset)                                                                                    \
  U(4, succeeded)                                                                                  \
  U(4, failed_attempts)                                                                            \
  U(4, counted_failures)                                                                           \
  U(4, killed)                                                                                     \
  U(4, zombie_finished)                                                                            \
  B(failed)                                                                                        \
  B(released)

/* An executor's `started` is X: an adopted executor is written as started (running, as far as
 * the run knows), and read back as adopted when its end had not come. */
#define EXEC_FIELDS(U, I, B, S, C, K, X)                                                           \
  S(id)                                                                                            \
  X(started)                                                                                       \
  B(ended)                                                                                         \
  B(released)                                                                                      \
  B(fault_killed)                                                                                  \
  B(injected)                                                                                      \
  B(forced)                                                                                        \
  B(caused_by_app)                                                                                 \
  B(requested)                                                                                     \
  U(1, kind)                                                                                       \
  I(4, exit_code)                                                                                  \
  S(reason)                                                                                        \
  S(source)                                                                                        \
  S(handle)

/* One lost executor (losses.c's loss_rec): ended (final) or still open when written. */
#define LOSS_FIELDS(U, I, B, S, C, K, X)                                                           \
  S(id)                                                                                            \
  U(8, seq)                                                                                        \
  U(1, detected_by)                                                                                \
  U(1, nphases)                                                                                    \
  U(1, phases[0])                                                                                  \
  U(1, phases[1])                                                                                  \
  U(1, phases[2])                                                                                  \
  U(1, phases[3])                                                                                  \
  B(final)                                                                                         \
  U(1, kind)                                                                                       \
  B(caused_by_app)                                                                                 \
  I(4, exit_code)                                                                                  \
  S(reason)                                                                                        \
  S(source)
_Static_assert(MAX_PHASES == 4, "LOSS_FIELDS writes MAX_PHASES phases");

/* One recovery of the run (recovery_rec). */
#define RECOVERY_FIELDS(U, I, B, S, C, K, X)                                                       \
  S(from)                                                                                          \
  B(done)                                                                                          \
  U(8, start_unix_ns)                                                                              \
  U(8, took_ns)                                                                                    \
  U(4, executors_to_reconcile)                                                                     \
  U(8, reconciled)                                                                                 \
  U(8, tids_named)                                                                                 \
  U(8, unknown_killed)                                                                             \
  U(8, attempts_lost)                                                                              \
  U(8, recovery_timeouts)                                                                          \
  U(8, stray_reconciles)                                                                           \
  U(8, stray_kills)                                                                                \
  U(8, updates_unknown)                                                                            \
  U(4, launcher_adopted)

/* The counters, each kept by the file that owns it (a u64 each). */
#define STATE_COUNTERS(XX)                                                                         \
  XX(scaling, started)                                                                             \
  XX(conns, registered)                                                                            \
  XX(conns, registered_cores)                                                                      \
  XX(offers, launched)                                                                             \
  XX(offers, retries)                                                                              \
  XX(faults, tasks_finished)                                                                       \
  XX(link, kills_sent)                                                                             \
  XX(offers, binaries_sent)                                                                        \
  XX(link, forgets_sent)                                                                           \
  XX(losses, executors_lost)                                                                       \
  XX(losses, executors_released)                                                                   \
  XX(conns, refused_updates)                                                                       \
  XX(conns, frames_in)                                                                             \
  XX(link, frames_out)                                                                             \
  XX(scaling, most_active)                                                                         \
  XX(losses, lost_total)                                                                           \
  XX(conns, violations)                                                                            \
  XX(conns, gone_frames)

/* The writer's rows: rec is the record written. */
#define W_U(n, f) tl__put_le(w, (uint64_t)rec->f, n);
#define W_I(n, f) tl__put_le(w, (uint64_t)(int64_t)rec->f, n);
#define W_B(f) tl__put_u8(w, rec->f ? 1 : 0);
#define W_S(f) tl__put_str16(w, rec->f, strlen(rec->f));
#define W_C W_U
#define W_K W_S
#define W_X(f) tl__put_u8(w, exec_##f##_out(rec));
#define WRITE(FIELDS) FIELDS(W_U, W_I, W_B, W_S, W_C, W_K, W_X)

/* The reader's rows: rec is the record read into; *same turns false where it differs from the
 * command line's. A value out of its field's range makes r bad. */
#define R_U(n, f)                                                                                  \
  {                                                                                                \
    uint64_t v = tl__get_le(r, n);                                                                 \
    rec->f = (__typeof__(rec->f))v;                                                                \
    if ((uint64_t)rec->f != v)                                                                     \
      tl__rbuf_fail(r, TL__RFAULT_RANGE);                                                          \
  }
#define R_I(n, f)                                                                                  \
  rec->f = (__typeof__(rec->f))((int64_t)(tl__get_le(r, n) << (64 - 8 * (n))) >> (64 - 8 * (n)));
#define R_B(f) rec->f = tl__get_u8(r) != 0;
#define R_S(f) tl__get_cstr16(r, 0, rec->f, sizeof rec->f, NULL);
#define R_C(n, f) *same = *same && tl__get_le(r, n) == (uint64_t)rec->f;
#define R_K(f)                                                                                     \
  {                                                                                                \
    char text[sizeof rec->f];                                                                      \
    tl__get_cstr16(r, 0, text, sizeof text, NULL);                                                 \
    *same = *same && !strcmp(text, rec->f);                                                        \
  }
#define R_X(f) exec_##f##_in(rec, tl__get_u8(r) != 0);
#define READ(FIELDS) FIELDS(R_U, R_I, R_B, R_S, R_C, R_K, R_X)

static uint8_t exec_started_out(const exec_rec *e) { return e->started || e->adopted; }

/* Read as it was written; get_exec then makes it adopted when the executor was still running
 * when the driver died: this process did not start it, so its launcher will not report its end;
 * the connection and the pending-loss timeout will (unless the launcher takes it back:
 * adopt_executors). */
static void exec_started_in(exec_rec *e, bool started) { e->started = started; }

static void put_job(tl__wbuf *w, const job *rec) { WRITE(JOB_FIELDS) }
static void get_job(tl__rbuf *r, job *rec, bool *same) {
  READ(JOB_FIELDS)
  if (rec->current >= rec->nstages)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
}

static void put_stage(tl__wbuf *w, const stage *rec) { WRITE(STAGE_FIELDS) }
static void get_stage(tl__rbuf *r, stage *rec, bool *same) {
  READ(STAGE_FIELDS)
  if (rec->succeeded > rec->ntasks)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
}

static void put_exec(tl__wbuf *w, const exec_rec *rec) { WRITE(EXEC_FIELDS) }
static void get_exec(tl__rbuf *r, exec_rec *rec, bool *same) {
  (void)same; /* nothing of an executor's comes from the command line */
  READ(EXEC_FIELDS)
  if (rec->kind >= LOSS_KINDS)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  bool started = rec->started;
  rec->started = started && rec->ended;
  rec->adopted = started && !rec->ended;
}

static void put_loss(tl__wbuf *w, const loss_rec *rec) { WRITE(LOSS_FIELDS) }
static void get_loss(tl__rbuf *r, loss_rec *rec, bool *same) {
  (void)same;
  READ(LOSS_FIELDS)
  bool bad = rec->detected_by >= DETECTED_N || rec->nphases == 0 || rec->nphases > MAX_PHASES ||
             rec->kind >= LOSS_KINDS;
  for (size_t k = 0; k < rec->nphases && !bad; k++)
    bad = rec->phases[k] >= LOSS_KINDS;
  if (bad)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
}

static void put_recovery(tl__wbuf *w, const recovery_rec *rec) { WRITE(RECOVERY_FIELDS) }
static void get_recovery(tl__rbuf *r, recovery_rec *rec, bool *same) {
  (void)same;
  READ(RECOVERY_FIELDS)
}

uint64_t wall_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

uint64_t run_start_unix_ns(const driver *d) {
  return d->recovery.run_start_unix_ns ? d->recovery.run_start_unix_ns : d->summary.start_unix_ns;
}

void recovery_now(const driver *d, recovery_rec *out) {
  memset(out, 0, sizeof *out);
  copy_text(out->from, sizeof out->from, d->recovery.state_file);
  out->done = d->recovery.recover_end_ns != 0;
  out->start_unix_ns = d->recovery.recover_start_unix_ns;
  out->took_ns =
      (out->done ? d->recovery.recover_end_ns : uv_hrtime()) - d->recovery.recover_start_ns;
  out->executors_to_reconcile = d->recovery.recovering_at_start;
  out->reconciled = d->conns.reconciled;
  out->tids_named = d->conns.reconciled_tids;
  out->unknown_killed = d->conns.reconcile_unknown;
  out->attempts_lost = d->conns.reconcile_lost;
  out->recovery_timeouts = d->losses.recovery_timeouts;
  out->stray_reconciles = d->conns.stray_reconciles;
  out->stray_kills = d->conns.stray_kills;
  out->updates_unknown = d->conns.resent_unknown;
  out->launcher_adopted = d->scaling.launcher_adopted;
}

/* What the summary tells of the whole run and a restart would lose: its first start, the lost
 * executors (the counts, the last LOST_DETAIL_MAX that ended, every one still open) and its
 * recoveries (those before this driver's, then this one's). */
static void put_history(tl__wbuf *w, driver *d) {
  tl__put_u64(w, run_start_unix_ns(d));
  for (int k = 0; k < DETECTED_N; k++)
    tl__put_u64(w, d->losses.lost_by_detection[k]);
  for (int k = 0; k < LOSS_KINDS; k++)
    tl__put_u64(w, d->losses.lost_by_kind[k]);
  for (int k = 0; k < LOSS_KINDS; k++)
    tl__put_u64(w, d->losses.reports[k]);
  uint64_t ended = d->losses.lost_ended < LOST_DETAIL_MAX ? d->losses.lost_ended : LOST_DETAIL_MAX;
  size_t open = HASH_COUNT(d->losses.open_losses);
  open = open < OPEN_LOSSES_MAX ? open : OPEN_LOSSES_MAX; /* what a reader takes */
  tl__put_u32(w, (uint32_t)(ended + open));
  for (uint64_t i = 0; i < ended; i++)
    put_loss(w, &d->losses.lost_detail[i]);
  const loss_rec *lr = d->losses.open_losses;
  for (size_t i = 0; i < open; i++, lr = lr->hh.next)
    put_loss(w, lr);
  uint32_t n = d->recovery.nearlier + (d->recovery.recovered ? 1 : 0);
  uint32_t skip = n > RECOVERIES_MAX ? n - RECOVERIES_MAX : 0;
  tl__put_u64(w, d->recovery.earlier_total + (d->recovery.recovered ? 1 : 0));
  tl__put_u32(w, n - skip);
  for (uint32_t i = skip; i < d->recovery.nearlier; i++)
    put_recovery(w, &d->recovery.earlier[i]);
  if (d->recovery.recovered) {
    recovery_rec now;
    recovery_now(d, &now);
    put_recovery(w, &now);
  }
}

static int loss_seq_order(const void *a, const void *b) {
  uint64_t x = ((const loss_rec *)a)->seq, y = ((const loss_rec *)b)->seq;
  return x < y ? -1 : x > y;
}

/* The run's history read back into d (put_history). The records still open go back on
 * open_losses, so that the end of their losses (executor_removed, after the restart) ends
 * them. r turns bad on anything out of range. */
static void get_history(tl__rbuf *r, driver *d) {
  bool same = true;
  d->recovery.run_start_unix_ns = tl__get_u64(r);
  for (int k = 0; k < DETECTED_N; k++)
    d->losses.lost_by_detection[k] = tl__get_u64(r);
  for (int k = 0; k < LOSS_KINDS; k++)
    d->losses.lost_by_kind[k] = tl__get_u64(r);
  for (int k = 0; k < LOSS_KINDS; k++)
    d->losses.reports[k] = tl__get_u64(r);
  uint32_t nloss = tl__get_u32(r);
  if (nloss > LOST_DETAIL_MAX + OPEN_LOSSES_MAX) /* more open ones than any writer writes */
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  d->losses.lost_ended = 0;
  for (uint32_t i = 0; i < nloss && !r->bad; i++) {
    loss_rec one;
    memset(&one, 0, sizeof one);
    get_loss(r, &one, &same);
    if (!r->bad && (one.seq == 0 || one.seq > d->losses.lost_total))
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
    if (r->bad)
      break;
    if (one.final) {
      if (d->losses.lost_ended == LOST_DETAIL_MAX) {
        tl__rbuf_fail(r, TL__RFAULT_RANGE);
        break;
      }
      d->losses.lost_detail[d->losses.lost_ended++] = one;
      continue;
    }
    loss_rec *lr = NULL;
    HASH_FIND_STR(d->losses.open_losses, one.id, lr);
    if (lr) { /* one open loss per executor */
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
      break;
    }
    lr = malloc(sizeof *lr);
    if (!lr)
      die_oom();
    *lr = one;
    HASH_ADD_STR(d->losses.open_losses, id, lr);
  }
  /* The ring oldest first, as its writer fills it: the next loss replaces the oldest. */
  qsort(d->losses.lost_detail, (size_t)d->losses.lost_ended, sizeof d->losses.lost_detail[0],
        loss_seq_order);
  d->recovery.earlier_total = tl__get_u64(r);
  uint32_t nrec = tl__get_u32(r);
  if (nrec > RECOVERIES_MAX || nrec > d->recovery.earlier_total)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  for (uint32_t i = 0; i < nrec && !r->bad; i++)
    get_recovery(r, &d->recovery.earlier[i], &same);
  d->recovery.nearlier = r->bad ? 0 : nrec;
}

static int snapshot_to_wbuf(void *ud, const void *buf, size_t n) {
  tl__put_bytes(ud, buf, n);
  return 0;
}

/* The record's body into w (emptied first): TL_OK, or tl_snapshot's error (TL_EBUSY: events
 * undelivered). */
static int encode_state(driver *d, tl__wbuf *w) {
  tl__wbuf_reset(w);
  tl__put_u32(w, STATE_BODY_VERSION);
  tl__put_str16(w, d->auth.token, strlen(d->auth.token));
  tl__put_u32(w, (uint32_t)d->edge.port);
  tl__put_u64(w, d->phase.offering ? d->record.recovered_elapsed + (uv_hrtime() - d->phase.start_ns)
                                   : 0);
  tl__put_u32(w, (uint32_t)d->jobs.njobs);
  for (size_t i = 0; i < d->jobs.njobs; i++) {
    const job *j = &d->jobs.list[i];
    put_job(w, j);
    for (uint32_t k = 0; k < j->nstages; k++)
      put_stage(w, &j->stages[k]);
  }
  tl__put_u32(w, d->scaling.nexecs);
  for (uint32_t i = 0; i < d->scaling.nexecs; i++) {
    exec_rec *e = &d->scaling.execs[i];
    char h[LAUNCHER_HANDLE_MAX];
    if (e->started && !e->ended && d->run.launcher && d->run.ops->handle &&
        d->run.ops->handle(d->run.launcher, e->id, h, sizeof h) > 0)
      copy_text(e->handle, sizeof e->handle, h);
    put_exec(w, e);
  }
#define PUT_COUNTER(g, f) tl__put_u64(w, d->g.f);
  STATE_COUNTERS(PUT_COUNTER)
#undef PUT_COUNTER
  put_history(w, d);
  size_t at = w->len;
  tl__put_u64(w, 0);
  int rc = tl_snapshot(d->run.s, snapshot_to_wbuf, w);
  if (w->failed)
    die_oom();
  if (rc != TL_OK)
    return rc;
  tl__patch_u64(w, at, w->len - at - 8);
  return TL_OK;
}

/* Writes the record (the last body again when fresh is false, for a tid reservation), then
 * tells every connection how many of its STATUS frames it holds durably (SYNCED): their ends
 * need not be kept by the executor any more. Returns 0, or -1 (logged; the last record
 * stays). */
int write_state(driver *d, bool fresh) {
  if (!d->record.state_dir)
    return 0;
  uint64_t t0 = uv_hrtime();
  if (fresh) {
    /* Into the spare buffer: the last good body stays for reservations until this one is. */
    int rc = encode_state(d, &d->record.spare);
    if (rc != TL_OK) {
      if (rc == TL_EBUSY) {
        d->record.state_busy++;
      } else {
        fprintf(stderr, "tl-driver: tl_snapshot: %s\n", tl_err_name(rc));
        d->record.state_failed++;
      }
      return -1;
    }
    tl__wbuf spare = d->record.spare;
    d->record.spare = d->record.body;
    d->record.body = spare;
  } else if (d->record.body.len == 0) {
    return -1;
  } else {
    d->record.state_reserves++;
  }
  /* Every tid launched so far, and a block beyond it, may be sent before the next write. */
  uint64_t reserve =
      (d->record.tid_max > d->record.tid_reserved ? d->record.tid_max : d->record.tid_reserved) +
      TID_BLOCK;
  char why[512];
  if (state_write(d->record.state_dir, reserve, d->record.body.buf, d->record.body.len, why,
                  sizeof why) != 0) {
    fprintf(stderr, "tl-driver: writing the state: %s\n", why);
    d->record.state_failed++;
    return -1;
  }
  d->record.tid_reserved = reserve;
  d->record.state_writes++;
  d->record.state_ns += uv_hrtime() - t0;
  if (fresh)
    for (conn *c = d->link.list; c; c = c->next)
      if (c->registered && !c->closing && !c->recovering && c->status_frames > c->synced) {
        tlc_msg m = {.type = TLC_MSG_SYNCED, .u.synced = {c->status_frames}};
        encode(c, &m);
        send_out(c);
        c->synced = c->status_frames;
        d->record.synced_sent++;
      }
  if (fresh)
    release_held(d);
  return 0;
}

/* With --state-dir (unless --launch-before-record), c's frames, those encoded so far and those
 * after them, wait for the next record, which on_commit writes at the next turn of the loop, so
 * that what is held in one turn shares one write. Returns whether they wait. */
bool hold_for_record(driver *d, conn *c) {
  if (!d->record.state_dir || d->record.launch_early)
    return false;
  c->held = true;
  if (!d->record.commit_due) {
    d->record.commit_due = true;
    d->record.commit_since = uv_hrtime();
    uv_idle_start(&d->record.commit, on_commit);
  }
  return true;
}

/* A LAUNCH goes out only once a record holds its attempt: then a crash can lose no launch that
 * an executor got (it is in the record the restart reads, and the executor names it when it
 * reconciles), and a launch the crash kept from going out is offered again. offer() calls this
 * for the n launches it just encoded into c's frames. */
void hold_launches(driver *d, conn *c, size_t n) {
  if (n > 0 && hold_for_record(d, c))
    d->record.held_now += n;
}

/* A record holds every launch encoded so far (or none could be written, or the run ends): the
 * held frames go out. */
void release_held(driver *d) {
  if (!d->record.commit_due)
    return;
  d->record.commit_due = false;
  uv_idle_stop(&d->record.commit);
  if (d->record.held_now > 0) { /* a turn that held only a release's STOP is not a launches' wait */
    uint64_t waited = uv_hrtime() - d->record.commit_since;
    d->record.held_ns += waited;
    d->record.held_max_ns = waited > d->record.held_max_ns ? waited : d->record.held_max_ns;
    d->record.held_rounds++;
    d->record.held_launches += d->record.held_now;
    d->record.held_now = 0;
  }
  for (conn *c = d->link.list; c; c = c->next)
    if (c->held) {
      c->held = false;
      send_out(c);
    }
}

/* The loop turned with launches held: the record that holds them. A write put off for
 * undelivered events is tried at the next turn; one that failed (logged, counted) sends them
 * anyway, as --launch-before-record would: a crash before the next record reruns them, and the
 * tid reservation (reserve_tids) still keeps their tids from being given again. */
static void on_commit(uv_idle_t *idle) {
  driver *d = idle->data;
  uint64_t busy = d->record.state_busy;
  if (write_state(d, true) == 0 || d->record.state_busy > busy)
    return;
  d->record.unrecorded += d->record.held_now;
  logf_(d, "no record holds %" PRIu64 " launches: sending them anyway", d->record.held_now);
  release_held(d);
}

void on_state_timer(uv_timer_t *t) {
  driver *d = t->data;
  if (d->phase.stopping || d->phase.closed)
    return;
  uint64_t busy = d->record.state_busy;
  if (write_state(d, true) != 0 && d->record.state_busy > busy) /* undelivered events: soon again */
    uv_timer_start(&d->record.state_timer, on_state_timer, 1, d->record.snapshot_ms);
}

/* A stage boundary (from a callback, where a snapshot is refused): the record is written at the
 * next turn of the loop. */
void state_due(driver *d) {
  if (d->record.state_dir && !d->phase.stopping && !d->phase.closed)
    uv_timer_start(&d->record.state_timer, on_state_timer, 0, d->record.snapshot_ms);
}

/* Launches up to tid max are about to be sent: past the reservation, a record reserves more
 * first (the last one's body again when no fresh one can be had), so that a restored driver
 * never gives a tid an executor may hold. Exits when neither can be written: sending would
 * break the promise. */
void reserve_tids(driver *d, uint64_t max) {
  if (max > d->record.tid_max)
    d->record.tid_max = max;
  if (!d->record.state_dir || max <= d->record.tid_reserved)
    return;
  if (write_state(d, true) != 0 && write_state(d, false) != 0) {
    fprintf(stderr, "tl-driver: cannot reserve tids in %s/state: giving up\n", d->record.state_dir);
    exit(1);
  }
}

/* Reads the run's part of a record into d, checking it against the command line's jobs.
 * Returns 0 with the snapshot's bytes in *snap, or 1 (the message printed). */
int read_state_body(driver *d, const state_record *rec, const uint8_t **snap, size_t *snap_len) {
  tl__rbuf rb = tl__rbuf_over(rec->body, rec->len);
  tl__rbuf *r = &rb;
  const char *bad = NULL;
  char token[sizeof d->auth.token];
  bool same = true;
  if (tl__get_u32(r) != STATE_BODY_VERSION)
    bad = "its body is of another version";
  tl__get_cstr16(r, 0, token, sizeof token, NULL);
  uint64_t port = tl__get_u32(r);
  uint64_t elapsed = tl__get_u64(r);
  if (!bad && (r->bad || port == 0 || port > 65535 || strlen(token) < TOKEN_MIN))
    bad = "its token or port is bad";
  if (!bad && tl__get_u32(r) != d->jobs.njobs)
    same = false;
  for (size_t i = 0; i < d->jobs.njobs && !bad && same && !r->bad; i++) {
    job *j = &d->jobs.list[i];
    get_job(r, j, &same);
    for (uint32_t k = 0; k < j->nstages && same && !r->bad; k++)
      get_stage(r, &j->stages[k], &same);
  }
  if (!bad && !same)
    bad = "its jobs differ from the command line's";
  uint64_t nexecs = bad ? 0 : tl__get_u32(r);
  if (nexecs > MAX_STARTED)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  for (uint32_t i = 0; i < nexecs && !r->bad && !bad; i++)
    get_exec(r, &d->scaling.execs[i], &same);
#define GET_COUNTER(g, f) d->g.f = (__typeof__(d->g.f))tl__get_u64(r);
  if (!bad)
    STATE_COUNTERS(GET_COUNTER)
#undef GET_COUNTER
  if (!bad)
    get_history(r, d);
  uint64_t n = bad ? 0 : tl__get_u64(r);
  if (!bad && !r->bad && n != tl__rbuf_left(r))
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  if (!bad && r->bad)
    bad = "its body does not parse";
  if (bad) {
    fprintf(stderr, "tl-driver: the state in %s cannot be recovered: %s\n", d->record.state_dir,
            bad);
    return 1;
  }
  d->scaling.nexecs = (uint32_t)nexecs;
  d->scaling.released = 0;
  for (uint32_t i = 0; i < d->scaling.nexecs; i++)
    d->scaling.released += d->scaling.execs[i].released;
  strcpy(d->auth.token, token);
  if (setenv("TL_CLUSTER_TOKEN", d->auth.token, 1) != 0)
    die_oom();
  d->edge.port = (int)port;
  /* Offers go on at once: the executors that registered before the crash come back by
   * themselves, and one that never registered may register now. */
  phase_offer(d);
  d->record.recovered_elapsed = elapsed;
  *snap = r->p + r->at;
  *snap_len = (size_t)n;
  return 0;
}

/* A run that ended (well or not, but not by a crash) leaves no record to recover. */
void remove_state(driver *d) {
  if (!d->record.state_dir)
    return;
  char path[4096];
  static const char *const names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", d->record.state_dir, names[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      fprintf(stderr, "tl-driver: unlink %s: %s\n", path, strerror(errno));
  }
}

void record_configure(driver *d, const driver_opts *o) {
  d->record.state_dir = o->state_dir;
  d->record.snapshot_ms = o->snapshot_ms;
  d->record.launch_early = o->launch_early;
}

void record_init(driver *d) {
  tl__wbuf_init(&d->record.body, realloc, free);
  tl__wbuf_init(&d->record.spare, realloc, free);
  uv_idle_init(d->run.loop, &d->record.commit);
  d->record.commit.data = d;
  uv_timer_init(d->run.loop, &d->record.state_timer);
  d->record.state_timer.data = d;
}

void record_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->record.state_timer, on_closed);
  uv_close((uv_handle_t *)&d->record.commit, on_closed);
}

void record_free(driver *d) {
  tl__wbuf_free(&d->record.body);
  tl__wbuf_free(&d->record.spare);
}

/* A restored run: no tid up to floor - 1 may be given again, and none was launched above it. */
void record_restored(driver *d, uint64_t floor) {
  d->record.tid_reserved = floor - 1;
  d->record.tid_max = d->record.tid_reserved;
}
