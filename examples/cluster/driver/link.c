/* A connection's life and its frames out: its record made at accept and freed once its handles
 * closed, its registration, its closing (what that means for its executor is conns.c's, through
 * link_state.on_close), encoding into its buffer, handing the buffer to libuv, the write's
 * completion, STOP, and a connection's name for log lines. */

#include "driver.h"

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
  uv_timer_init(d->run.loop, &c->register_timer);
  c->tcp.data = c;
  c->register_timer.data = c;
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
  uv_close((uv_handle_t *)&c->register_timer, on_conn_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
}

/* A write completed (conn_write): its bytes are freed. A connection closed meanwhile cancels it;
 * it is still allocated then, its handles' close callbacks not having run. */
static void on_written(void *data, int status) {
  if (status < 0 && status != UV_ECANCELED)
    close_conn(data, uv_strerror(status));
}

/* Hands the encoded frames to libuv; the write owns them from here. A connection that holds
 * launches for a record keeps them, and what follows them, until one holds them. */
void send_out(conn *c) {
  if (c->closing || c->held)
    return;
  int rc = conn_write((uv_stream_t *)&c->tcp, &c->out, on_written, c);
  if (rc == UV_ENOMEM)
    die_oom();
  if (rc < 0)
    close_conn(c, uv_strerror(rc));
}

void encode(conn *c, const tlc_msg *msg) {
  int rc = tlc_encode(&c->out, msg);
  if (rc == TLC_ENOMEM)
    die_oom();
  if (rc < 0) {
    fprintf(stderr, "tl-driver: encode %s: %s\n", tlc_msg_type_name(msg->type), tlc_err_name(rc));
    exit(1);
  }
  c->d->link.frames_out++;
  c->d->link.kills_sent += msg->type == TLC_MSG_KILL;
  c->d->link.forgets_sent += msg->type == TLC_MSG_FORGET;
}

void send_stop(conn *c, const char *reason) {
  tlc_msg msg = {.type = TLC_MSG_STOP, .u.stop = {tlc_str(reason)}};
  encode(c, &msg);
  send_out(c);
}
