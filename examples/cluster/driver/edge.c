/* The edge: the listening socket, accepting (batches, descriptor exhaustion), the limits on
 * connections before they authenticate, and the driver's own counters on /metrics
 * (docs/cluster.md "Limits and hardening"). */

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "driver.h"

static void on_connection(driver *d, int fd);

/* Its peer's address, printable and as its auth key. */
static void name_peer(conn *c) {
  struct sockaddr_storage sa;
  int len = sizeof sa;
  memset(&sa, 0, sizeof sa);
  char ip[INET6_ADDRSTRLEN] = "?";
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &len) != 0) {
    snprintf(c->peer, sizeof c->peer, "an unknown address");
  } else if (sa.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&sa;
    uv_ip6_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "[%s]:%d", ip, ntohs(a->sin6_port));
  } else {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&sa;
    uv_ip4_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(a->sin_port));
  }
  auth_key(&sa, c->addr_key);
}

/* Closes a connection just accepted, before a byte of it is read; *counter counts the reason. */
static void refuse_at_accept(conn *c, uint64_t *counter, const char *why) {
  driver *d = c->d;
  (*counter)++;
  if (edge_log_ok(&d->log.refused, "refused-connection lines"))
    fprintf(stderr, "tl-driver: connection from %s refused: %s\n", c->peer, why);
  close_conn(c, NULL);
}

/* The oldest connection still waiting for its REGISTER (the list is newest first). */
static conn *oldest_pending(driver *d, conn *except) {
  conn *oldest = NULL;
  for (conn *o = d->link.list; o; o = o->next)
    if (o != except && !o->registered && !o->closing)
      oldest = o;
  return oldest;
}

/* An accept that failed: counted by error, logged (rate-limited) with what it means. For a lack
 * of descriptors the connection is still taken off the queue and closed at once, with the spare
 * descriptor (libuv's trick, done here because libuv's own accept loop does it silently: a real
 * executor was reset and nothing said why), so that it is refused now rather than left to spin
 * the loop. Without a spare (only a start already out of descriptors leaves none) the
 * level-triggered poll comes back at once until descriptors are freed. */
static void accept_failed(driver *d, int err) {
  uint64_t *n = err == UV_EMFILE   ? &d->edge.accept_emfile
                : err == UV_ENFILE ? &d->edge.accept_enfile
                                   : &d->edge.accept_other;
  (*n)++;
  if (edge_log_ok(&d->log.accept, "accept-error lines"))
    fprintf(stderr, "tl-driver: accept: %s (%s)%s; a connection was refused (%" PRIu64 " so far)\n",
            uv_strerror(err), uv_err_name(err),
            err == UV_EMFILE   ? ": the open-file limit (ulimit -n) is reached"
            : err == UV_ENFILE ? ": the system's file table is full"
                               : "",
            *n);
  if ((err == UV_EMFILE || err == UV_ENFILE) && d->edge.spare_fd >= 0) {
    close(d->edge.spare_fd);
    int fd = accept(d->edge.server_fd, NULL, NULL);
    if (fd >= 0)
      close(fd);
    d->edge.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
}

/* The listening socket is readable: accepts what is queued, at most ACCEPT_BATCH at a time (the
 * poll is level-triggered, so the rest come on the next turn, after the other handles). */
static void accept_ready(uv_poll_t *p, int status, int events) {
  driver *d = p->data;
  (void)events;
  if (status < 0) {
    accept_failed(d, status);
    return;
  }
  for (int i = 0; i < ACCEPT_BATCH && !d->edge.server_closed; i++) {
    int fd = accept(d->edge.server_fd, NULL, NULL); /* uv_tcp_open makes it non-blocking */
    if (fd >= 0)
      fcntl(fd, F_SETFD, FD_CLOEXEC); /* executors spawned later must not inherit it */
    if (fd < 0) {
      int err = -errno;
      if (err == UV_EAGAIN || err == -EWOULDBLOCK || err == UV_EINTR)
        return;
      if (err == UV_ECONNABORTED)
        continue;
      accept_failed(d, err);
      return;
    }
    on_connection(d, fd);
  }
}

/* A new connection (never once stopping: begin_stop closes the listening socket). Before it has
 * authenticated it costs a record, two handles and a decoder that holds at most
 * TLC_REGISTER_FRAME_MAX bytes; its address is checked against the back-off, the connections
 * against --max-connections (the newest is refused) and those waiting for REGISTER against
 * --max-pending-connections (the oldest waiting one is closed to make room: a real executor
 * sends REGISTER at once, so it is the slow or silent ones that go). */
static void on_connection(driver *d, int fd) {
  conn *c = conn_new(d);
  if (uv_tcp_open(&c->tcp, fd) < 0) {
    close(fd);
    close_conn(c, NULL);
    return;
  }
  name_peer(c);
  uint64_t now = uv_hrtime();
  auth_rec *a = auth_find(d, c->addr_key, now);
  if (a && now < a->wait_until) {
    refuse_at_accept(c, &d->edge.refused_backoff, "its address sent wrong tokens and must wait");
    return;
  }
  if (d->link.nconns > d->edge.max_conns) {
    refuse_at_accept(c, &d->edge.refused_conn_cap, "--max-connections are open");
    return;
  }
  if (d->link.npending > d->edge.max_pending) {
    conn *oldest = oldest_pending(d, c);
    d->edge.evicted_pending++;
    if (edge_log_ok(&d->log.refused, "refused-connection lines"))
      fprintf(stderr,
              "tl-driver: connection from %s closed: --max-pending-connections (%" PRIu32
              ") wait for REGISTER and it waited longest\n",
              oldest->peer, d->edge.max_pending);
    close_conn(oldest, NULL);
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_timer_start(&c->deadline_timer, on_register_timeout, d->edge.register_timeout_ms, 0);
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

static void on_server_closed(uv_handle_t *h) {
  driver *d = h->data;
  close(d->edge.server_fd); /* after the poll is off the loop's epoll set */
  d->edge.server_fd = -1;
  if (d->edge.spare_fd >= 0)
    close(d->edge.spare_fd);
  d->edge.spare_fd = -1;
}

/* Closes the listening socket (once): from then on a connection attempt is refused by the
 * kernel, so no flood of new connections can hold the driver's end back. */
void close_server(driver *d) {
  if (d->edge.server_closed)
    return;
  d->edge.server_closed = true;
  uv_close((uv_handle_t *)&d->edge.server, on_server_closed);
}

/* The driver's own metrics after the ledger's on /metrics (Prometheus text 0.0.4): the edge's
 * counters and connections, every one named in docs/cluster.md "Limits and hardening".
 * snprintf-like: the bytes needed, at most cap written. */
static int metrics_extra(void *ud, char *buf, size_t cap) {
  driver *d = ud;
  size_t n = 0;
#define PUT(...)                                                                                   \
  do {                                                                                             \
    int k = snprintf(n < cap ? buf + n : NULL, n < cap ? cap - n : 0, __VA_ARGS__);                \
    if (k < 0)                                                                                     \
      return -1;                                                                                   \
    n += (size_t)k;                                                                                \
  } while (0)
#define COUNTER(name, help, value)                                                                 \
  PUT("# HELP taskledger_driver_" name " " help "\n# TYPE taskledger_driver_" name                 \
      " counter\ntaskledger_driver_" name " %" PRIu64 "\n",                                        \
      (uint64_t)(value))
#define GAUGE(name, help, value)                                                                   \
  PUT("# HELP taskledger_driver_" name " " help "\n# TYPE taskledger_driver_" name                 \
      " gauge\ntaskledger_driver_" name " %" PRIu64 "\n",                                          \
      (uint64_t)(value))
  GAUGE("connections", "Connections open, registered or not.", d->link.nconns);
  GAUGE("connections_pending", "Connections waiting for their REGISTER.", d->link.npending);
  COUNTER("auth_failures_total", "REGISTER frames with a wrong token.", d->auth.auth_failures);
  COUNTER("auth_addresses_total", "Addresses (IPv6: /64s) that sent a wrong token.",
          d->auth.auth_addresses);
  COUNTER("refused_backoff_total", "Connections refused at once: their address must wait.",
          d->edge.refused_backoff);
  COUNTER("refused_connection_cap_total", "Connections refused at once: --max-connections open.",
          d->edge.refused_conn_cap);
  COUNTER("evicted_pending_total",
          "Waiting connections closed for a newer one over --max-pending-connections.",
          d->edge.evicted_pending);
  COUNTER("refused_connections_total", "Connections closed for a protocol or registration fault.",
          d->conns.refused_conns);
  COUNTER("closed_unsent_total",
          "Connections closed holding more than --max-unsent-bytes that their peer had not read.",
          d->link.closed_unsent);
  GAUGE("unsent_peak_bytes", "The most bytes one connection held that its peer had not read.",
        d->link.unsent_peak);
  COUNTER("refused_host_total",
          "REGISTER frames of a recovering executor's id from another host than its record's.",
          d->conns.refused_host);
  COUNTER("lost_frames_total",
          "Frames of an executor the ledger had lost or removed, dropped unapplied.",
          d->conns.gone_frames);
  PUT("# HELP taskledger_driver_accept_errors_total Accepts that failed, by error.\n"
      "# TYPE taskledger_driver_accept_errors_total counter\n"
      "taskledger_driver_accept_errors_total{error=\"EMFILE\"} %" PRIu64 "\n"
      "taskledger_driver_accept_errors_total{error=\"ENFILE\"} %" PRIu64 "\n"
      "taskledger_driver_accept_errors_total{error=\"other\"} %" PRIu64 "\n",
      d->edge.accept_emfile, d->edge.accept_enfile, d->edge.accept_other);
  if (d->record.state_dir) { /* --state-dir (docs/cluster.md "Driver failover") */
    GAUGE("failover_degraded", "1 while the last write of the run's record failed.",
          d->record.degraded);
    COUNTER("state_writes_total", "Records of the run written (--state-dir).",
            d->record.state_writes);
    COUNTER("state_write_failures_total", "Writes of the run's record that failed.",
            d->record.state_failed);
  }
#undef GAUGE
#undef COUNTER
#undef PUT
  return n > INT32_MAX ? -1 : (int)n;
}

/* Connections past the open-file limit fail with EMFILE (logged and counted when they do): says
 * so at the start if --max-connections cannot be reached. */
void warn_nofile(const driver *d) {
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      nofile.rlim_cur < (rlim_t)d->edge.max_conns + FD_HEADROOM)
    fprintf(stderr,
            "tl-driver: the open-file limit (ulimit -n) is %ju, below --max-connections %" PRIu32
            " + %d: connections past it will be refused with EMFILE\n",
            (uintmax_t)nofile.rlim_cur, d->edge.max_conns, FD_HEADROOM);
}

/* Listens on host (--listen, an IPv4 or IPv6 address: *is_v6 says which) and d->edge.port, and
 * prints the address. Executors are told to connect to advertise, else to host, or to the loopback
 * address of its family when it is the wildcard. Returns 0, or the exit status: 2 for an address
 * that is neither, 1 when it cannot listen. */
int listen_on(driver *d, const char *host, const char *advertise, bool *is_v6) {
  struct sockaddr_storage addr;
  bool v6 = false;
  if (uv_ip4_addr(host, d->edge.port, (struct sockaddr_in *)&addr) != 0) {
    if (uv_ip6_addr(host, d->edge.port, (struct sockaddr_in6 *)&addr) != 0) {
      fprintf(stderr, "tl-driver: --listen %s is not an IPv4 or IPv6 address\n", host);
      return 2;
    }
    v6 = true;
  }
  *is_v6 = v6;
  d->edge.listen_host = host;
  d->edge.connect_host = advertise                  ? advertise
                         : !strcmp(host, "0.0.0.0") ? "127.0.0.1"
                         : !strcmp(host, "::")      ? "::1"
                                                    : host;
  /* The listening socket is the driver's own, watched with a uv_poll_t, so that an accept that
   * fails reaches accept_failed (libuv's uv_listen hides EMFILE). Set up as uv_tcp_bind would:
   * SO_REUSEADDR, dual-stack for "::". */
  int rc = 0;
  d->edge.server_fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  int on = 1, off = 0;
  if (d->edge.server_fd < 0 || fcntl(d->edge.server_fd, F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(d->edge.server_fd, F_SETFL, fcntl(d->edge.server_fd, F_GETFL) | O_NONBLOCK) != 0 ||
      setsockopt(d->edge.server_fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      (v6 && setsockopt(d->edge.server_fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) != 0) ||
      bind(d->edge.server_fd, (const struct sockaddr *)&addr,
           v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0 ||
      listen(d->edge.server_fd, LISTEN_BACKLOG) != 0)
    rc = -errno;
  if (rc == 0)
    rc = uv_poll_init_socket(d->run.loop, &d->edge.server, d->edge.server_fd);
  if (rc == 0) {
    d->edge.server.data = d;
    rc = uv_poll_start(&d->edge.server, UV_READABLE, accept_ready);
  }
  if (rc < 0) {
    fprintf(stderr, "tl-driver: listen on %s port %d: %s\n", host, d->edge.port, uv_strerror(rc));
    return 1;
  }
  d->edge.spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  getsockname(d->edge.server_fd, (struct sockaddr *)&bound, &blen);
  d->edge.port = v6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
                    : ntohs(((struct sockaddr_in *)&bound)->sin_port);
  printf(v6 ? "listening on [%s]:%d\n" : "listening on %s:%d\n", host, d->edge.port);
  fflush(stdout);
  return 0;
}

/* --metrics-port: GET /metrics on the --listen address (an IPv6 one when v6). Returns 0, or 1
 * when it cannot start. */
int start_metrics(driver *d, int metrics_port, bool v6) {
  const char *host = d->edge.listen_host;
  int rc = metrics_http_start(d->run.loop, host, metrics_port, d->run.s, &d->edge.metrics);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: metrics on %s port %d: %s\n", host, metrics_port, uv_strerror(rc));
    return 1;
  }
  metrics_http_set_extra(d->edge.metrics, metrics_extra, d);
  printf(v6 ? "metrics on [%s]:%d\n" : "metrics on %s:%d\n", host, rc);
  fflush(stdout);
  return 0;
}

/* The edge's limits and the port to listen on, from the command line; no socket yet. */
void edge_configure(driver *d, const driver_opts *o) {
  d->edge.register_timeout_ms = o->register_timeout_ms;
  d->edge.max_pending = o->max_pending < o->max_conns ? o->max_pending : o->max_conns;
  d->edge.max_conns = o->max_conns;
  d->edge.port = o->port;
  d->edge.server_fd = d->edge.spare_fd = -1;
}

/* The end of the run: the listening socket (if not yet) and the metrics server close. */
void edge_close(driver *d) {
  close_server(d);
  metrics_http_close(d->edge.metrics);
  d->edge.metrics = NULL;
}
