/* The metrics endpoint of tl-driver (--metrics-port, docs/cluster.md): a minimal HTTP/1.0 and
 * HTTP/1.1 server on the driver's libuv loop that answers GET /metrics with tl_metrics_text, one
 * request per connection. Everything runs on the loop's thread; nothing here blocks.
 */
#ifndef TLC_METRICS_HTTP_H
#define TLC_METRICS_HTTP_H

#include <uv.h>

#include "taskledger.h"

/* Limits of one connection. */
#define METRICS_HTTP_REQUEST_MAX 4096   /* bytes of a request head; more is refused with 431 */
#define METRICS_HTTP_TIMEOUT_MS 5000    /* for the whole request head, then the connection closes */
#define METRICS_HTTP_LINGER_MS 2000     /* after the response, for the client to close first */
#define METRICS_HTTP_CONNECTIONS_MAX 16 /* open at once; more are closed at once */

typedef struct metrics_http metrics_http;

/* Listens on addr (an IPv4 or IPv6 literal) and port (0: any free port) on loop, and serves s's
 * metrics from there until metrics_http_close. s must outlive the server. Returns the port bound
 * (1..65535) with *out set, or a negative libuv error (UV_EINVAL for an address that is neither
 * IPv4 nor IPv6, UV_ENOMEM, or what bind or listen answered) with *out NULL; on error a handle
 * may still be closing, and is freed by the loop's next run. Responses:
 *   200  GET /metrics (a query string is ignored): Content-Type text/plain; version=0.0.4,
 *        Content-Length, the text;
 *   404  GET of any other path;
 *   405  another method (with Allow: GET);
 *   400  a malformed request line or header, or a version other than HTTP/1.0 and HTTP/1.1;
 *   431  a request head over METRICS_HTTP_REQUEST_MAX bytes.
 * Every response says Connection: close; the server then shuts its side down, and closes the
 * connection when the client does or after METRICS_HTTP_LINGER_MS. A client that has not sent a
 * whole request head within METRICS_HTTP_TIMEOUT_MS is closed without an answer. */
int metrics_http_start(uv_loop_t *loop, const char *addr, int port, tl_scheduler *s,
                       metrics_http **out);

/* Closes the listening socket and every open connection. The memory is freed by the close
 * callbacks, so the loop must run once more (uv_run) before uv_loop_close; after that the loop
 * holds nothing of the server. m NULL: nothing happens. Call it once. */
void metrics_http_close(metrics_http *m);

#endif /* TLC_METRICS_HTTP_H */
