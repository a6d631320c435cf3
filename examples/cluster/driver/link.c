/* A connection's life and its frames out: its record made at accept and freed once its handles
 * closed, its registration, its closing (what that means for its executor is conns.c's, through
 * link_state.on_close), encoding into its buffer, handing the buffer to libuv, the write's
 * completion, STOP, the bound on what it may hold unsent (--max-unsent-bytes), the end of a
 * connection whose executor was lost, and a connection's name for log lines. */

#include "driver.h"

void link_configure(driver *d, const driver_opts *o) { d->link.max_unsent = o->max_unsent; }

/* A connection just accepted: its record, its two handles (not yet open) and its decoder, at the
 * head of the list, counted as open and as waiting for REGISTER. */
conn *conn_new(driver *d) {
  conn *c = calloc(1, sizeof *c);
  if (!c)
    die_oom();
  c->d = d;
  tlc_decoder_init(&c->decoder, TLC_REGISTER_FRAME_MAX);
  tlc_buf_init(&c->out);
  uv_tcp_init(d->run.loop, &c->tcp);
  uv_timer_init(d->run.loop, &c->deadline_timer);
  c->tcp.data = c;
  c->deadline_timer.data = c;
  c->handles_open = 2;
  c->next = d->link.list;
  d->link.list = c;
  d->link.nconns++;
  d->link.npending++;
  snprintf(c->peer, sizeof c->peer, "an unaccepted connection");
  return c;
}

/* Its REGISTER was accepted: it is an executor of the ledger, no longer waiting. */
void conn_registered(conn *c) {
  c->registered = true;
  c->d->link.npending--;
}

void on_conn_handle_closed(uv_handle_t *h) {
  conn *c = h->data;
  if (--c->handles_open > 0)
    return;
  driver *d = c->d;
  for (conn **p = &d->link.list; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  tlc_decoder_fini(&c->decoder);
  tlc_buf_free(&c->out);
  free(c->sent);
  free(c->res);
  free(c);
  d->link.nconns--;
  phase_wake(d);
}

const char *conn_name(const conn *c, char *buf) {
  char e[ESC_MAX];
  if (c->registered)
    snprintf(buf, CONN_NAME_MAX, "of %s (%s)", esc(e, c->id), c->peer);
  else
    snprintf(buf, CONN_NAME_MAX, "from %s", c->peer);
  return buf;
}

/* Closes a connection (once): what it means for its executor is said first (on_close: a loss,
 * or a release), then both handles close, and the record is freed once they have
 * (on_conn_handle_closed). */
void close_conn(conn *c, const char *why) {
  if (c->closing)
    return;
  driver *d = c->d;
  char name[CONN_NAME_MAX];
  c->closing = true;
  if (!c->registered)
    d->link.npending--;
  if (why)
    logf_(d, "closing connection %s: %s", conn_name(c, name), why);
  d->link.on_close(c);
  uv_close((uv_handle_t *)&c->deadline_timer, on_conn_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
}

/* A write completed (conn_write): its bytes are freed. A connection closed meanwhile cancels it;
 * it is still allocated then, its handles' close callbacks not having run. */
static void on_written(void *data, int status) {
  if (status < 0 && status != UV_ECANCELED)
    close_conn(data, uv_strerror(status));
}

/* Hands the encoded frames to the kernel, or what it does not take at once to libuv, whose write
 * owns them from there (conn_send: one write(2) when the connection is idle). A connection that
 * holds launches for a record keeps them, and what follows them, until one holds them; one that
 * overflowed sends nothing more. */
void send_out(conn *c) {
  if (c->closing || c->held || c->overflowed)
    return;
  int rc = conn_send((uv_stream_t *)&c->tcp, &c->out, on_written, c);
  if (rc == UV_ENOMEM)
    die_oom();
  if (rc < 0)
    close_conn(c, uv_strerror(rc));
}

static void on_close_due(uv_timer_t *t) { close_conn(t->data, NULL); }

/* c holds more than --max-unsent-bytes that its peer has not read (conn_unsent: what is encoded
 * and what libuv queues). A peer that does not read could otherwise make the driver hold
 * without bound what it answers (a RECONCILE of 131,071 tids from an executor that is not
 * recovering is answered with 131,071 KILL frames, 6 MB). It is not read again, nothing more is
 * encoded or sent on it, and it is closed at the next turn of the loop, off the stack of
 * whatever encoded (for its executor, a fault of the driver's finding: conn_closing). Logged
 * (rate-limited, whatever --quiet says) and counted. */
static void overflow(conn *c, size_t unsent) {
  driver *d = c->d;
  c->overflowed = true;
  d->link.closed_unsent++;
  uv_read_stop((uv_stream_t *)&c->tcp);
  char name[CONN_NAME_MAX];
  if (edge_log_ok(&d->log.refused, "refused-connection lines"))
    fprintf(stderr,
            "tl-driver: closing connection %s: %zu bytes it has not read, more than "
            "--max-unsent-bytes (%" PRIu64 ")\n",
            conn_name(c, name), unsent, d->link.max_unsent);
  uv_timer_start(&c->deadline_timer, on_close_due, 0, 0);
}

/* Encodes msg into c's buffer, for send_out. Nothing is encoded for a connection that
 * overflowed; one whose frame passes --max-unsent-bytes overflows. */
void encode(conn *c, const tlc_msg *msg) {
  if (c->overflowed)
    return;
  int rc = tlc_encode(&c->out, msg);
  if (rc == TLC_ENOMEM)
    die_oom();
  if (rc < 0) {
    fprintf(stderr, "tl-driver: encode %s: %s\n", tlc_msg_type_name(msg->type), tlc_err_name(rc));
    exit(1);
  }
  driver *d = c->d;
  d->link.frames_out++;
  d->link.kills_sent += msg->type == TLC_MSG_KILL;
  d->link.forgets_sent += msg->type == TLC_MSG_FORGET;
  size_t unsent = conn_unsent((const uv_stream_t *)&c->tcp, &c->out);
  if (unsent > d->link.unsent_peak)
    d->link.unsent_peak = unsent;
  if (unsent > d->link.max_unsent && !c->closing)
    overflow(c, unsent);
}

void send_stop(conn *c, const char *reason) {
  tlc_msg msg = {.type = TLC_MSG_STOP, .u.stop = {tlc_str(reason)}};
  encode(c, &msg);
  send_out(c);
}

/* Tells c's executor, which the ledger lost or removed, to FORGET every binary it holds and to
 * STOP, once: it will run nothing again, whether or not its task sets live on elsewhere, so
 * that after STOP no executor holds a binary (executor.c checks). */
void conn_dismiss(conn *c, const char *reason) {
  if (c->gone)
    return;
  c->gone = true;
  while (c->nsent > 0) {
    tlc_msg m = {.type = TLC_MSG_FORGET, .u.forget = {c->sent[--c->nsent]}};
    encode(c, &m);
  }
  send_stop(c, reason);
}

/* STOP_GRACE_MS after its executor was lost: told to STOP if it was not yet, and closed. */
static void on_lost_grace(uv_timer_t *t) {
  conn *c = t->data;
  conn_dismiss(c, "lost by the driver");
  close_conn(c, "its executor was lost");
}

/* The ledger lost executor id (any loss but a release: the heartbeat or recovery timeout, its
 * launcher's end) while a connection registered as it is open. Nothing that connection sends
 * is applied from now on (conns.c's on_read drops and counts its frames, and tells it to STOP
 * at the first), and it is closed STOP_GRACE_MS from now at the latest: a real executor has
 * taken its STOP and closed by then; a client that goes on sending is not heard. */
void conn_lost(driver *d, const char *id) {
  for (conn *c = d->link.list; c; c = c->next)
    if (c->registered && !c->closing && !c->lost && !strcmp(c->id, id)) {
      c->lost = true;
      uv_timer_start(&c->deadline_timer, on_lost_grace, STOP_GRACE_MS, 0);
    }
}
