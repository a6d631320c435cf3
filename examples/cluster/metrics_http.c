/* The metrics endpoint of tl-driver: one listening TCP socket on the driver's loop and, for each
 * client, a connection that reads one request head, answers it (GET /metrics with the text of
 * tl_metrics_text, anything else with an error status) and goes away. It is deliberately small:
 * no keep-alive, no request bodies, no chunked encoding; what a Prometheus scraper or curl sends
 * is all it needs to understand.
 *
 * A connection's life: accepted, its timer armed for METRICS_HTTP_TIMEOUT_MS; bytes gathered
 * into req until the blank line that ends the head (or the limit, or the timer); the response
 * written in one uv_write; then our side shut down and whatever the client still sends
 * discarded, until it closes (EOF) or METRICS_HTTP_LINGER_MS pass. Closing after the client's
 * EOF, rather than at once, keeps a client's unread bytes from turning the close into a reset
 * that could destroy the response before it is read.
 */
#include "metrics_http.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mconn mconn;

struct metrics_http {
  uv_tcp_t server;    /* the listening socket; data is this record */
  tl_scheduler *s;    /* whose metrics are served */
  mconn *conns;       /* open connections, closing ones included until freed */
  size_t nconns;      /* entries of conns */
  bool closing;       /* metrics_http_close ran: free once the socket and conns are gone */
  bool server_closed; /* the listening socket's close callback ran */
};

struct mconn {
  uv_tcp_t tcp;                       /* the client; data is this record */
  uv_timer_t timer;                   /* the request timeout, then the linger */
  metrics_http *m;                    /* its server */
  mconn *prev, *next;                 /* on m->conns */
  char req[METRICS_HTTP_REQUEST_MAX]; /* the request head so far */
  size_t nreq;                        /* bytes of req */
  bool responded;                     /* the response is written or being written */
  bool closing;                       /* uv_close was called on both handles */
  int handles_open;                   /* tcp and timer until their close callbacks */
  uv_write_t write_req;               /* the response */
  uv_shutdown_t shutdown_req;         /* then our side's FIN */
  char head[256];                     /* the response's status line and headers */
  char *body;                         /* its body (malloc), or NULL */
  size_t nbody;                       /* bytes of body */
};

/* ---------------------------------------------------------------------------------------------
 * Closing
 * ------------------------------------------------------------------------------------------- */

static void maybe_free_server(metrics_http *m) {
  if (m->closing && m->server_closed && m->conns == NULL)
    free(m);
}

static void on_conn_handle_closed(uv_handle_t *h) {
  mconn *c = h->data;
  if (--c->handles_open > 0)
    return;
  metrics_http *m = c->m;
  if (c->prev)
    c->prev->next = c->next;
  else
    m->conns = c->next;
  if (c->next)
    c->next->prev = c->prev;
  m->nconns--;
  free(c->body);
  free(c);
  maybe_free_server(m);
}

static void close_conn(mconn *c) {
  if (c->closing)
    return;
  c->closing = true;
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
  uv_close((uv_handle_t *)&c->timer, on_conn_handle_closed);
}

static void on_server_closed(uv_handle_t *h) {
  metrics_http *m = h->data;
  m->server_closed = true;
  maybe_free_server(m);
}

void metrics_http_close(metrics_http *m) {
  if (m == NULL || m->closing)
    return;
  m->closing = true;
  uv_close((uv_handle_t *)&m->server, on_server_closed);
  for (mconn *c = m->conns; c; c = c->next)
    close_conn(c);
}

/* ---------------------------------------------------------------------------------------------
 * Responding
 * ------------------------------------------------------------------------------------------- */

static void on_timeout(uv_timer_t *t) { close_conn(t->data); }

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)req;
  (void)status; /* the client's EOF or the linger timer closes the connection */
}

static void on_written(uv_write_t *req, int status) {
  mconn *c = req->data;
  if (c->closing)
    return;
  if (status < 0 || uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
    close_conn(c);
    return;
  }
  uv_timer_start(&c->timer, on_timeout, METRICS_HTTP_LINGER_MS, 0);
}

/* Sends the status line, the headers and body (taken: freed with the connection), then shuts
 * our side down. */
static void respond(mconn *c, const char *status, const char *content_type, const char *extra,
                    char *body, size_t nbody) {
  c->responded = true;
  c->body = body;
  c->nbody = nbody;
  int n = snprintf(c->head, sizeof c->head,
                   "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: "
                   "close\r\n\r\n",
                   status, content_type, nbody, extra);
  if (n < 0 || (size_t)n >= sizeof c->head) {
    close_conn(c);
    return;
  }
  uv_buf_t bufs[2] = {uv_buf_init(c->head, (unsigned)n), uv_buf_init(body, (unsigned)nbody)};
  c->write_req.data = c;
  if (uv_write(&c->write_req, (uv_stream_t *)&c->tcp, bufs, nbody > 0 ? 2 : 1, on_written) < 0)
    close_conn(c);
}

static void respond_error(mconn *c, const char *status, const char *extra) {
  size_t n = strlen(status) + 1;
  char *body = malloc(n + 1);
  if (body == NULL) {
    close_conn(c);
    return;
  }
  memcpy(body, status, n - 1);
  memcpy(body + n - 1, "\n", 2);
  respond(c, status, "text/plain; charset=utf-8", extra, body, n);
}

static void respond_metrics(mconn *c) {
  size_t needed = 0;
  if (tl_metrics_text(c->m->s, NULL, 0, &needed) != TL_OK) {
    respond_error(c, "500 Internal Server Error", "");
    return;
  }
  for (;;) { /* the text can grow between sizing and writing if another thread calls in */
    char *body = malloc(needed + 1);
    if (body == NULL) {
      respond_error(c, "503 Service Unavailable", "");
      return;
    }
    size_t size = needed + 1, got = 0;
    if (tl_metrics_text(c->m->s, body, size, &got) != TL_OK) {
      free(body);
      respond_error(c, "500 Internal Server Error", "");
      return;
    }
    if (got < size) {
      respond(c, "200 OK", "text/plain; version=0.0.4", "", body, got);
      return;
    }
    free(body);
    needed = got;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Reading the request
 * ------------------------------------------------------------------------------------------- */

/* An HTTP token character (RFC 9110 tchar), for the method and header names. */
static bool tchar(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         (ch != '\0' && strchr("!#$%&'*+-.^_`|~", ch) != NULL);
}

/* The end of the head in req[0..nreq): the index just past its blank line, or 0 when it has not
 * come yet. A bare LF ends a line as CRLF does (RFC 9112 allows a server to accept it). */
static size_t head_end(const char *req, size_t nreq) {
  for (size_t i = 0; i + 1 < nreq; i++) {
    if (req[i] != '\n')
      continue;
    if (req[i + 1] == '\n')
      return i + 2;
    if (req[i + 1] == '\r' && i + 2 < nreq && req[i + 2] == '\n')
      return i + 3;
  }
  return 0;
}

/* The length of the line at p (up to end), without its LF or CRLF; *next gets the next line. */
static size_t line_at(const char *p, const char *end, const char **next) {
  const char *nl = memchr(p, '\n', (size_t)(end - p));
  if (nl == NULL) {
    *next = end;
    return (size_t)(end - p);
  }
  *next = nl + 1;
  return (size_t)(nl - p) - (nl > p && nl[-1] == '\r');
}

/* Answers the head in req[0..n). */
static void handle_request(mconn *c, size_t n) {
  const char *p = c->req, *end = c->req + n, *next;
  size_t len = line_at(p, end, &next);
  /* The request line: METHOD SP TARGET SP VERSION, printable ASCII only. */
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] > 0x7e) {
      respond_error(c, "400 Bad Request", "");
      return;
    }
  const char *sp1 = memchr(p, ' ', len);
  const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', len - (size_t)(sp1 + 1 - p)) : NULL;
  if (sp1 == NULL || sp2 == NULL || sp1 == p || sp2 == sp1 + 1 || sp1[1] != '/') {
    respond_error(c, "400 Bad Request", "");
    return;
  }
  size_t mlen = (size_t)(sp1 - p);
  for (size_t i = 0; i < mlen; i++)
    if (!tchar(p[i])) {
      respond_error(c, "400 Bad Request", "");
      return;
    }
  const char *version = sp2 + 1;
  size_t vlen = len - (size_t)(version - p);
  if (vlen != 8 || (memcmp(version, "HTTP/1.0", 8) != 0 && memcmp(version, "HTTP/1.1", 8) != 0)) {
    respond_error(c, "400 Bad Request", "");
    return;
  }
  /* The header lines: NAME ":" VALUE, no folding. Their values do not matter here. */
  for (p = next; p < end;) {
    size_t hlen = line_at(p, end, &next);
    if (hlen == 0)
      break; /* the blank line */
    const char *colon = memchr(p, ':', hlen);
    bool ok = colon != NULL && colon > p;
    for (const char *q = p; ok && q < colon; q++)
      ok = tchar(*q);
    for (size_t i = 0; ok && i < hlen; i++)
      ok = p[i] == '\t' || ((unsigned char)p[i] >= 0x20 && (unsigned char)p[i] != 0x7f);
    if (!ok) {
      respond_error(c, "400 Bad Request", "");
      return;
    }
    p = next;
  }
  if (mlen != 3 || memcmp(c->req, "GET", 3) != 0) {
    respond_error(c, "405 Method Not Allowed", "Allow: GET\r\n");
    return;
  }
  const char *target = sp1 + 1;
  size_t tlen = (size_t)(sp2 - target);
  const char *query = memchr(target, '?', tlen);
  if (query != NULL)
    tlen = (size_t)(query - target);
  if (tlen == 8 && memcmp(target, "/metrics", 8) == 0)
    respond_metrics(c);
  else
    respond_error(c, "404 Not Found", "");
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  static char discard[4096]; /* what comes after the head: read and dropped */
  mconn *c = h->data;
  if (c->responded || c->nreq == sizeof c->req)
    *buf = uv_buf_init(discard, sizeof discard);
  else
    *buf = uv_buf_init(c->req + c->nreq, (unsigned)(sizeof c->req - c->nreq));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  mconn *c = stream->data;
  if (c->closing)
    return;
  if (nread < 0) { /* EOF or an error: before the whole head, there is nothing to answer */
    close_conn(c);
    return;
  }
  if (nread == 0 || c->responded)
    return;
  c->nreq += (size_t)nread;
  size_t end = head_end(c->req, c->nreq);
  if (end > 0)
    handle_request(c, end);
  else if (c->nreq == sizeof c->req)
    respond_error(c, "431 Request Header Fields Too Large", "");
}

static void free_handle(uv_handle_t *h) { free(h); }

static void on_connection(uv_stream_t *server, int status) {
  metrics_http *m = server->data;
  if (status < 0 || m->closing)
    return;
  mconn *c = calloc(1, sizeof *c);
  if (c == NULL) { /* take the connection off the backlog anyway, and drop it */
    uv_tcp_t *t = malloc(sizeof *t);
    if (t != NULL) {
      uv_tcp_init(server->loop, t);
      uv_accept(server, (uv_stream_t *)t);
      uv_close((uv_handle_t *)t, free_handle);
    }
    return;
  }
  c->m = m;
  uv_tcp_init(server->loop, &c->tcp);
  uv_timer_init(server->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->handles_open = 2;
  c->next = m->conns;
  if (m->conns)
    m->conns->prev = c;
  m->conns = c;
  m->nconns++;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 || m->nconns > METRICS_HTTP_CONNECTIONS_MAX ||
      uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
    close_conn(c);
    return;
  }
  uv_timer_start(&c->timer, on_timeout, METRICS_HTTP_TIMEOUT_MS, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Starting
 * ------------------------------------------------------------------------------------------- */

static void on_failed_server_closed(uv_handle_t *h) { free(h->data); }

int metrics_http_start(uv_loop_t *loop, const char *addr, int port, tl_scheduler *s,
                       metrics_http **out) {
  if (out != NULL)
    *out = NULL;
  if (loop == NULL || addr == NULL || s == NULL || out == NULL || port < 0 || port > 65535)
    return UV_EINVAL;
  struct sockaddr_storage sa;
  bool v6 = false;
  if (uv_ip4_addr(addr, port, (struct sockaddr_in *)&sa) != 0) {
    if (uv_ip6_addr(addr, port, (struct sockaddr_in6 *)&sa) != 0)
      return UV_EINVAL;
    v6 = true;
  }
  metrics_http *m = calloc(1, sizeof *m);
  if (m == NULL)
    return UV_ENOMEM;
  m->s = s;
  int rc = uv_tcp_init(loop, &m->server);
  if (rc < 0) {
    free(m);
    return rc;
  }
  m->server.data = m;
  rc = uv_tcp_bind(&m->server, (const struct sockaddr *)&sa, 0);
  if (rc == 0)
    rc = uv_listen((uv_stream_t *)&m->server, 64, on_connection);
  struct sockaddr_storage bound;
  int blen = sizeof bound;
  if (rc == 0)
    rc = uv_tcp_getsockname(&m->server, (struct sockaddr *)&bound, &blen);
  if (rc < 0) {
    uv_close((uv_handle_t *)&m->server, on_failed_server_closed);
    return rc;
  }
  *out = m;
  return v6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
            : ntohs(((struct sockaddr_in *)&bound)->sin_port);
}
