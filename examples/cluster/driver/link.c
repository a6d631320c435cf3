/* A connection's frames out: encoding into its buffer, handing the buffer to libuv, the write's
 * completion, STOP, a connection's name for log lines, and the freeing of its record once its
 * handles closed. */

#include "driver.h"

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
  maybe_finish(d);
}

#define CONN_NAME_MAX (ESC_MAX + sizeof(((conn *)0)->peer) + 8)
const char *conn_name(const conn *c, char *buf) {
  char e[ESC_MAX];
  if (c->registered)
    snprintf(buf, CONN_NAME_MAX, "of %s (%s)", esc(e, c->id), c->peer);
  else
    snprintf(buf, CONN_NAME_MAX, "from %s", c->peer);
  return buf;
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
}

void send_stop(conn *c, const char *reason) {
  tlc_msg msg = {.type = TLC_MSG_STOP, .u.stop = {tlc_str(reason)}};
  encode(c, &msg);
  send_out(c);
}
