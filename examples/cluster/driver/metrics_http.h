/* The metrics endpoint of tl-driver (--metrics-port, docs/cluster.md): GNU libmicrohttpd (MHD)
 * serving GET /metrics with tl_metrics_text, driven from the driver's libuv loop. MHD runs no
 * thread of its own: everything runs on the loop's thread, and nothing here blocks.
 */
#ifndef TLC_METRICS_HTTP_H
#define TLC_METRICS_HTTP_H

#include <stddef.h>

#include <uv.h>

#include "taskledger.h"

/* The limits, each handed to MHD as the option named; docs/cluster.md ("Metrics") lists them
 * for users, with what a client beyond each sees. */

/* MHD_OPTION_CONNECTION_TIMEOUT (whole seconds): a connection that sends and takes nothing for
 * this long is closed, without an answer if its request is unfinished. */
#define METRICS_HTTP_TIMEOUT_MS 2000
/* MHD_OPTION_CONNECTION_LIMIT: connections open at once; at the limit MHD stops accepting until
 * one closes, and new ones wait in the listen backlog. */
#define METRICS_HTTP_CONNECTIONS_MAX 64
/* MHD_OPTION_PER_IP_CONNECTION_LIMIT: connections open at once from one address; more are
 * accepted and closed at once, unanswered. */
#define METRICS_HTTP_PER_IP_MAX 8
/* MHD_OPTION_CONNECTION_MEMORY_LIMIT: bytes of one connection's memory pool, which holds its
 * request head and MHD's parse of it; a head that does not fit is answered 431 (414 while the
 * request line itself does not fit). */
#define METRICS_HTTP_MEMORY_MAX 4096
/* listen(2) backlog of the socket, bound here and lent to MHD (MHD_OPTION_LISTEN_SOCKET). */
#define METRICS_HTTP_BACKLOG 64

typedef struct metrics_http metrics_http;

/* More Prometheus text written after tl_metrics_text's in every 200 response (tl-driver's own
 * counters), as snprintf writes: at most cap bytes to buf, the NUL included when cap > 0 (buf is
 * NULL when cap is 0, a call that only sizes the text); returns the length of the whole text
 * without its NUL (it fit iff the return value < cap), or a negative number for an error, which
 * turns the scrape into a 500. The text is whole exposition lines, each ending in a newline. It
 * is called on the loop's thread from inside the server's libuv callbacks, twice per scrape (to
 * size the text, then to write it; again when it grew in between); it must not block and must
 * not call metrics_http_close. */
typedef int (*metrics_http_extra_fn)(void *ud, char *buf, size_t cap);

/* Listens on addr (an IPv4 or IPv6 literal) and port (0: any free port) on loop, and serves s's
 * metrics from there until metrics_http_close. s must outlive the server. Returns the port bound
 * (1..65535) with *out set, or a negative libuv error with *out NULL: UV_EINVAL for a bad
 * argument or an address that is neither IPv4 nor IPv6, what socket, bind or listen answered
 * (UV_EADDRINUSE, UV_EACCES, ...), or UV_ENOMEM (also for any other failure to start MHD); on
 * error no descriptor is left open, and a handle may still be closing, freed by the loop's next
 * run. Does not block; call it on the loop's thread, not from inside the extra function.
 *
 * Responses (MHD writes the status line, always HTTP/1.1, Date and Content-Length):
 *   200  GET /metrics (a query string is ignored; MHD percent-decodes the path first):
 *        Content-Type text/plain; version=0.0.4, the text of tl_metrics_text, then that of the
 *        extra function if one is set (metrics_http_set_extra);
 *   404  GET of any other path;
 *   405  another method, HEAD included (with Allow: GET);
 *   400  from MHD: a malformed request line or header (no HTTP version, a header line without
 *        a colon, bad characters), or a Content-Length or Transfer-Encoding it cannot follow;
 *   505  from MHD: a version before HTTP/1.0 or from HTTP/2 on (HTTP/1.2..1.9 pass as 1.1);
 *   431  from MHD: a request head that does not fit METRICS_HTTP_MEMORY_MAX (414 while the
 *        request line itself does not fit), with a short HTML body;
 *   500  tl_metrics_text or the extra function failed; 503: no memory for the text.
 * Every response says Connection: close, and MHD closes the connection once it is sent: one
 * request per connection, as curl and Prometheus cope with. We answer as soon as the head is
 * parsed, so MHD never reads a request body, and with 431 and 414 it stops reading the head.
 * Bytes a client is still sending when MHD closes turn the close into a reset: the answer
 * arrives first, then the client's writes fail (EPIPE) and its read may end in ECONNRESET.
 * Beyond the limits above a client sees: after METRICS_HTTP_TIMEOUT_MS idle, its connection
 * closed (unanswered if its head is unfinished); beyond METRICS_HTTP_PER_IP_MAX from its
 * address, its connection closed at once; beyond METRICS_HTTP_CONNECTIONS_MAX in all, its
 * connection waiting in the backlog until one closes. */
int metrics_http_start(uv_loop_t *loop, const char *addr, int port, tl_scheduler *s,
                       metrics_http **out);

/* Sets (fn non-NULL) or clears (fn NULL) the function whose text follows tl_metrics_text's in
 * every 200 from now on, with ud passed to it; ud is not owned and must stay valid while fn is
 * set and the server is open. Cannot fail; call it on the loop's thread, not from inside fn. m
 * NULL: nothing happens. */
void metrics_http_set_extra(metrics_http *m, metrics_http_extra_fn fn, void *ud);

/* Closes the listening socket and every open connection (MHD_stop_daemon, which does not
 * block: MHD has no thread to join). The record itself is freed by the close callbacks of its
 * two libuv handles, so the loop must run once more (uv_run) before uv_loop_close; after that
 * the loop holds nothing of the server. m NULL: nothing happens. Call it once, on the loop's
 * thread, not from inside the extra function. */
void metrics_http_close(metrics_http *m);

#endif /* TLC_METRICS_HTTP_H */
