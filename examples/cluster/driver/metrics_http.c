/* The metrics endpoint of tl-driver: GNU libmicrohttpd (MHD) parses the requests, enforces the
 * limits of metrics_http.h and writes the responses; this file binds the socket, answers the
 * requests MHD has parsed, and drives MHD from the driver's libuv loop without any thread.
 *
 * Driving MHD from libuv
 *
 * MHD is started with MHD_USE_EPOLL and without MHD_USE_INTERNAL_POLLING_THREAD ("external
 * polling"): it keeps its listening socket and connections in an epoll set of its own and does
 * the work only when MHD_run is called, which never blocks (it waits on that set with a zero
 * timeout). That epoll descriptor is itself readable whenever one of its sockets has an event,
 * so one uv_poll_t watching it for UV_READABLE tells the loop when MHD has socket work. The
 * other kind of work is time: idle connections to close, and data MHD has already read but not
 * processed (it then asks to run again at once). MHD_get_timeout gives the milliseconds until
 * it must run next, or says there is no deadline; a uv_timer_t is re-armed from it after every
 * MHD_run. The poll callback and the timer callback both call MHD_run and then re-arm the
 * timer, so MHD never waits longer than it asked. MHD accepts at most 10 connections per run;
 * its listening socket is level-triggered in its set, so the poll fires again for the rest.
 *
 * The request handler (on_request) runs inside MHD_run, so on the loop's thread. It queues its
 * response at once (on its first call for a request, before any body), so MHD never calls it
 * twice for one request, and never reads a body: it answers and closes.
 *
 * Ownership: the record owns the daemon (until metrics_http_close stops it) and its two
 * handles. MHD owns the listening socket once MHD_start_daemon has succeeded, and closes it in
 * MHD_stop_daemon. metrics_http_close stops watching MHD's epoll descriptor (uv_close removes it
 * from the loop's epoll set at once) before MHD_stop_daemon closes it.
 */

#include "metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

struct metrics_http {
  uv_poll_t poll;              /* MHD's epoll descriptor, readable when MHD has socket work */
  uv_timer_t timer;            /* due when MHD_get_timeout says MHD must run next; else idle */
  struct MHD_Daemon *daemon;   /* the server; NULL once metrics_http_close has stopped it */
  tl_scheduler *s;             /* whose metrics are served; not owned */
  metrics_http_extra_fn extra; /* text after tl_metrics_text's in a 200, or NULL */
  void *extra_ud;              /* extra's argument; not owned */
  int handles_open;            /* poll and timer until their close callbacks; freed at 0 */
  bool closing;                /* metrics_http_close ran (or start failed after the handles) */
};

/* ---------------------------------------------------------------------------------------------
 * Driving MHD
 * ------------------------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

/* Arms the timer for MHD's next deadline, or stops it when MHD has none. */
static void arm_timer(metrics_http *m) {
  MHD_UNSIGNED_LONG_LONG ms = 0;
  if (MHD_get_timeout(m->daemon, &ms) == MHD_YES)
    uv_timer_start(&m->timer, on_timer, (uint64_t)ms, 0);
  else
    uv_timer_stop(&m->timer);
}

/* Lets MHD do what is ready (accept, read, answer, write, close what timed out); never blocks.
 * MHD_NO means a failure inside MHD (an epoll_ctl that failed): nothing to do about it here but
 * run again at the next event or deadline. */
static void run_daemon(metrics_http *m) {
  if (m->daemon == NULL)
    return;
  (void)MHD_run(m->daemon);
  arm_timer(m);
}

static void on_poll(uv_poll_t *p, int status, int events) {
  (void)events;
  metrics_http *m = p->data;
  /* An error on the epoll descriptor itself (none is known to happen) has libuv stop the
   * handle: watch again, and let MHD_run find out what is wrong. */
  if (status < 0 && !m->closing)
    uv_poll_start(p, UV_READABLE, on_poll);
  run_daemon(m);
}

static void on_timer(uv_timer_t *t) { run_daemon(t->data); }

/* ---------------------------------------------------------------------------------------------
 * Answering
 * ------------------------------------------------------------------------------------------- */

/* Queues resp on conn with our headers and drops our reference: MHD keeps the response until it
 * is sent. resp NULL (no memory) returns MHD_NO, which has MHD close the connection. */
static enum MHD_Result queue(struct MHD_Connection *conn, unsigned int status,
                             struct MHD_Response *resp, const char *content_type, bool allow_get) {
  if (resp == NULL)
    return MHD_NO;
  enum MHD_Result rc = MHD_NO;
  /* Connection: close has MHD close the connection once the response is sent: one request per
   * connection, so no idle keep-alive connection holds a slot between scrapes. */
  if (MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) == MHD_YES &&
      MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close") == MHD_YES &&
      (!allow_get || MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, "GET") == MHD_YES))
    rc = MHD_queue_response(conn, status, resp);
  MHD_destroy_response(resp);
  return rc;
}

/* An error status with its status line (a static string) as a plain-text body. */
static enum MHD_Result queue_error(struct MHD_Connection *conn, unsigned int status,
                                   const char *text, bool allow_get) {
  struct MHD_Response *resp =
      MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
  return queue(conn, status, resp, "text/plain; charset=utf-8", allow_get);
}

/* The body of a 200: tl_metrics_text's text, then the extra function's, in one malloc'd buffer
 * of *len bytes (plus a NUL not counted), or NULL with *status the error to answer instead. The
 * texts can grow between sizing and writing (another thread changes the ledger, a counter gains
 * a digit): then it sizes again from what the write said, a few times at most. */
static char *metrics_body(metrics_http *m, size_t *len, unsigned int *status) {
  size_t ledger_len = 0;
  if (tl_metrics_text(m->s, NULL, 0, &ledger_len) != TL_OK) {
    *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    return NULL;
  }
  int extra_len = m->extra != NULL ? m->extra(m->extra_ud, NULL, 0) : 0;
  if (extra_len < 0) {
    *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
    return NULL;
  }
  for (int round = 0; round < 4; round++) {
    size_t slack = round == 0 ? 0 : 64; /* after a miss, room for a few more digits */
    size_t ledger_cap = ledger_len + slack + 1, extra_cap = (size_t)extra_len + slack + 1;
    if (ledger_cap > SIZE_MAX - extra_cap) {
      *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
      return NULL;
    }
    char *buf = malloc(ledger_cap + extra_cap);
    if (buf == NULL) {
      *status = MHD_HTTP_SERVICE_UNAVAILABLE;
      return NULL;
    }
    size_t ledger_got = 0;
    if (tl_metrics_text(m->s, buf, ledger_cap, &ledger_got) != TL_OK) {
      free(buf);
      *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
      return NULL;
    }
    if (ledger_got >= ledger_cap) { /* grew: size again */
      free(buf);
      ledger_len = ledger_got;
      continue;
    }
    /* The extra text goes right after the ledger's, over its NUL. */
    size_t room = ledger_cap + extra_cap - ledger_got;
    int extra_got = m->extra != NULL ? m->extra(m->extra_ud, buf + ledger_got, room) : 0;
    if (extra_got < 0) {
      free(buf);
      *status = MHD_HTTP_INTERNAL_SERVER_ERROR;
      return NULL;
    }
    if ((size_t)extra_got < room) {
      *len = ledger_got + (size_t)extra_got;
      return buf;
    }
    free(buf);
    extra_len = extra_got;
  }
  *status = MHD_HTTP_INTERNAL_SERVER_ERROR; /* still growing after four tries */
  return NULL;
}

static enum MHD_Result queue_metrics(metrics_http *m, struct MHD_Connection *conn) {
  size_t len = 0;
  unsigned int status = 0;
  char *body = metrics_body(m, &len, &status);
  if (body == NULL)
    return queue_error(conn, status,
                       status == MHD_HTTP_SERVICE_UNAVAILABLE ? "503 Service Unavailable\n"
                                                              : "500 Internal Server Error\n",
                       false);
  /* MHD_RESPMEM_MUST_FREE: MHD free()s body with the response; when none is made, it is ours. */
  struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
  if (resp == NULL) {
    free(body);
    return queue_error(conn, MHD_HTTP_SERVICE_UNAVAILABLE, "503 Service Unavailable\n", false);
  }
  return queue(conn, MHD_HTTP_OK, resp, "text/plain; version=0.0.4", false);
}

/* MHD's access handler, called once the request head is parsed: url is the path,
 * percent-decoded, without its query string. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls) {
  (void)version; /* MHD has refused the versions we do not speak (400 or 505) */
  (void)upload_data;
  (void)upload_data_size;
  (void)req_cls;
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
    return queue_error(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "405 Method Not Allowed\n", true);
  if (strcmp(url, "/metrics") != 0)
    return queue_error(conn, MHD_HTTP_NOT_FOUND, "404 Not Found\n", false);
  return queue_metrics(cls, conn);
}

/* ---------------------------------------------------------------------------------------------
 * Starting and closing
 * ------------------------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h) {
  metrics_http *m = h->data;
  if (--m->handles_open == 0)
    free(m);
}

void metrics_http_close(metrics_http *m) {
  if (m == NULL || m->closing)
    return;
  m->closing = true;
  /* First off the loop (uv_close takes the descriptor out of the loop's epoll set now), then
   * MHD closes its connections, its listening socket and that descriptor. */
  uv_close((uv_handle_t *)&m->poll, on_handle_closed);
  uv_close((uv_handle_t *)&m->timer, on_handle_closed);
  MHD_stop_daemon(m->daemon);
  m->daemon = NULL;
}

void metrics_http_set_extra(metrics_http *m, metrics_http_extra_fn fn, void *ud) {
  if (m == NULL)
    return;
  m->extra = fn;
  m->extra_ud = fn != NULL ? ud : NULL;
}

/* A listening TCP socket on sa, non-blocking and close-on-exec, SO_REUSEADDR as libuv's
 * uv_tcp_bind sets it (and, like it, IPv6 sockets left dual-stack as the system sets them): the
 * descriptor, or a negative libuv error with nothing left open. */
static int listen_on(const struct sockaddr *sa, socklen_t salen) {
  int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return uv_translate_sys_error(errno);
  int on = 1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 || bind(fd, sa, salen) != 0 ||
      listen(fd, METRICS_HTTP_BACKLOG) != 0) {
    int rc = uv_translate_sys_error(errno);
    close(fd);
    return rc;
  }
  return fd;
}

/* The port fd is bound to, or a negative libuv error. */
static int bound_port(int fd) {
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  if (getsockname(fd, (struct sockaddr *)&bound, &blen) != 0)
    return uv_translate_sys_error(errno);
  return bound.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                                     : ntohs(((struct sockaddr_in *)&bound)->sin_port);
}

/* After MHD_start_daemon failed: closes fd unless MHD has. MHD 0.9.75 closes a listening socket
 * it was given on most of its failure paths but not all (an allocation or epoll_create failure
 * leaves it open), so fd is closed here iff it still names the socket it named before the call
 * (same device and inode in *was). A number MHD closed and something else reused names another
 * file; the socket's own inode cannot come back, since fd was its only descriptor. */
static void close_if_still(int fd, const struct stat *was) {
  struct stat now;
  if (fstat(fd, &now) == 0 && now.st_dev == was->st_dev && now.st_ino == was->st_ino)
    close(fd);
}

int metrics_http_start(uv_loop_t *loop, const char *addr, int port, tl_scheduler *s,
                       metrics_http **out) {
  if (out != NULL)
    *out = NULL;
  if (loop == NULL || addr == NULL || s == NULL || out == NULL || port < 0 || port > 65535)
    return UV_EINVAL;
  struct sockaddr_storage sa;
  socklen_t salen = sizeof(struct sockaddr_in);
  bool v6 = false;
  if (uv_ip4_addr(addr, port, (struct sockaddr_in *)&sa) != 0) {
    if (uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&sa) != 0)
      return UV_EINVAL;
    v6 = true;
    salen = sizeof(struct sockaddr_in6);
  }
  metrics_http *m = calloc(1, sizeof *m);
  if (m == NULL)
    return UV_ENOMEM;
  m->s = s;
  int fd = listen_on((const struct sockaddr *)&sa, salen);
  int bound = fd >= 0 ? bound_port(fd) : fd;
  struct stat st;
  if (bound >= 0 && fstat(fd, &st) != 0)
    bound = uv_translate_sys_error(errno);
  if (bound < 0) {
    if (fd >= 0)
      close(fd);
    free(m);
    return bound;
  }
  /* No MHD_USE_INTERNAL_POLLING_THREAD: MHD starts no thread and works only inside MHD_run. No
   * MHD_USE_ERROR_LOG: a client refused at a limit would otherwise print a line to stderr, so
   * any client could flood the driver's output. The port argument is unused: MHD takes fd. */
  struct MHD_OptionItem options[] = {
      {MHD_OPTION_CONNECTION_TIMEOUT, (METRICS_HTTP_TIMEOUT_MS + 999) / 1000, NULL}, /* in s */
      {MHD_OPTION_CONNECTION_LIMIT, METRICS_HTTP_CONNECTIONS_MAX, NULL},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT, METRICS_HTTP_PER_IP_MAX, NULL},
      {MHD_OPTION_CONNECTION_MEMORY_LIMIT, METRICS_HTTP_MEMORY_MAX, NULL},
      {MHD_OPTION_LISTEN_SOCKET, fd, NULL},
      {MHD_OPTION_END, 0, NULL},
  };
  m->daemon = MHD_start_daemon(MHD_USE_EPOLL | (v6 ? MHD_USE_IPv6 : 0), 0, NULL, NULL, on_request,
                               m, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
  if (m->daemon == NULL) {
    close_if_still(fd, &st);
    free(m);
    return UV_ENOMEM;
  }
  /* From here MHD owns fd. */
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_EPOLL_FD);
  int rc = info != NULL ? uv_poll_init(loop, &m->poll, info->epoll_fd) : UV_EINVAL;
  if (rc < 0) { /* nothing is on the loop yet */
    MHD_stop_daemon(m->daemon);
    free(m);
    return rc;
  }
  uv_timer_init(loop, &m->timer);
  m->poll.data = m;
  m->timer.data = m;
  m->handles_open = 2;
  rc = uv_poll_start(&m->poll, UV_READABLE, on_poll);
  if (rc < 0) { /* the handles close on the loop's next run, and free m */
    metrics_http_close(m);
    return rc;
  }
  arm_timer(m);
  *out = m;
  return bound;
}
