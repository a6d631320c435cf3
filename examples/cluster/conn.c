/* The write path of a cluster connection (conn.h): one uv_write per batch of encoded frames, its
 * request owning the bytes until it completes; or (conn_send) the kernel's write at once, and a
 * uv_write only for what it did not take.
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

int conn_write(uv_stream_t *stream, tlc_buf *out, conn_written_cb written, void *data) {
  if (out->len == 0)
    return 0;
  write_req *w = malloc(sizeof *w);
  if (!w)
    return UV_ENOMEM;
  w->bytes = out->data;
  w->written = written;
  w->data = data;
  uv_buf_t buf = uv_buf_init((char *)out->data, (unsigned)out->len);
  tlc_buf_init(out);
  int rc = uv_write(&w->req, stream, &buf, 1, on_written);
  if (rc < 0) {
    free(w->bytes);
    free(w);
  }
  return rc;
}

int conn_send(uv_stream_t *stream, tlc_buf *out, conn_written_cb written, void *data) {
  if (out->len == 0)
    return 0;
  /* libuv refuses (UV_EAGAIN) while earlier bytes wait in its queue: they go first. An error
   * (the peer gone) is left to uv_write, which meets it again and reports it as it always did:
   * through written, in a later turn of the loop. */
  uv_buf_t buf = uv_buf_init((char *)out->data, (unsigned)out->len);
  int n = uv_try_write(stream, &buf, 1);
  if (n < 0)
    n = 0;
  if ((size_t)n == out->len) { /* all out: the memory is kept for the next frames, if small */
    out->len = 0;
    if (out->cap > CONN_KEEP_MAX) {
      free(out->data);
      tlc_buf_init(out);
    }
    return 0;
  }
  if (n > 0) { /* the kernel took a part: the rest, moved to the front, goes through uv_write */
    memmove(out->data, out->data + n, out->len - (size_t)n);
    out->len -= (size_t)n;
  }
  return conn_write(stream, out, written, data);
}

size_t conn_unsent(const uv_stream_t *stream, const tlc_buf *out) {
  return out->len + uv_stream_get_write_queue_size(stream);
}
