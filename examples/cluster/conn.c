/* The write path of a cluster connection (conn.h): each batch of encoded frames is first offered
 * to the kernel at once (uv_try_write); what it does not take goes to one uv_write, whose request
 * owns the bytes until it completes.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conn.h"

/* A write in flight: owns the bytes it sends. */
typedef struct write_req {
  uv_write_t req;          /* the libuv request; its data is unused */
  uint8_t *bytes;          /* the frames, taken from the tlc_buf; freed when the write ends */
  conn_written_cb written; /* called after the bytes are freed */
  void *data;              /* written's argument */
} write_req;

static void on_written(uv_write_t *req, int status) {
  write_req *w = (write_req *)req;
  conn_written_cb written = w->written;
  void *data = w->data;
  free(w->bytes);
  free(w);
  written(data, status);
}

/* Forgets out's bytes; keeps its memory for the next frames unless it is larger than
 * CONN_KEEP_MAX. */
static void empty_out(tlc_buf *out) {
  if (out->cap > CONN_KEEP_MAX)
    tlc_buf_free(out);
  out->len = 0;
}

int conn_write(uv_stream_t *stream, tlc_buf *out, conn_written_cb written, void *data) {
  if (out->len == 0)
    return 0;
  /* The kernel takes the bytes now unless earlier writes still wait in libuv's queue (then
   * UV_EAGAIN, and they go behind them): no request, no callback, and none of the loop's work
   * that a completed request costs (its callback from the next iteration's pending queue, and
   * an epoll_ctl as the write watcher stops). */
  size_t taken = 0;
  uv_buf_t all = uv_buf_init((char *)out->data, (unsigned)out->len);
  int rc = uv_try_write(stream, &all, 1);
  if (rc >= 0 && (size_t)rc == out->len) {
    empty_out(out);
    return CONN_SENT;
  }
  if (rc >= 0)
    taken = (size_t)rc;
  else if (rc != UV_EAGAIN) {
    empty_out(out);
    return rc;
  }
  write_req *w = malloc(sizeof *w);
  if (!w) { /* what the kernel took is gone from out: the rest stays */
    memmove(out->data, out->data + taken, out->len - taken);
    out->len -= taken;
    return UV_ENOMEM;
  }
  w->bytes = out->data;
  w->written = written;
  w->data = data;
  uv_buf_t buf = uv_buf_init((char *)out->data + taken, (unsigned)(out->len - taken));
  tlc_buf_init(out);
  rc = uv_write(&w->req, stream, &buf, 1, on_written);
  if (rc < 0) {
    free(w->bytes);
    free(w);
  }
  return rc;
}

size_t conn_unsent(const uv_stream_t *stream, const tlc_buf *out) {
  return out->len + uv_stream_get_write_queue_size(stream);
}
