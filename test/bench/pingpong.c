/* tl-pingpong: the floor of the cluster's strict round trip (docs/performance.md "The strict
 * round trip against a raw ping-pong"). The shape of `tl-driver --bench --queue 0` with nothing
 * of the runtime: one "driver" process holds a loopback TCP connection to each of P "executor"
 * processes (forked), and keeps exactly one round trip in flight on each; a round trip is the
 * bytes of one LAUNCH frame of a `noop` task one way and of one STATUS frame (FINISHED, its 8-byte
 * result, no text) the other, the frames encoded by the protocol's own encoder (proto.c), so
 * their sizes are the wire's. TCP_NODELAY on both ends, as the cluster sets it; the driver waits
 * with poll() and reads and writes plainly, each executor blocks in read() and write(). No
 * decoding, no ledger, no event loop: what is left is the kernel's share of a round trip.
 *
 *   tl-pingpong [--pairs P] [--round-trips N] [--launch-bytes L] [--status-bytes S]
 *               [--executor-poll] [--executor-timeout-ms MS] [--driver-timeout-ms MS] [--quiet]
 *
 * --executor-poll has each executor wait in epoll_wait (with a timeout, as an event loop with a
 * timer armed does) before each read, as tl-executor's libuv loop must: the floor of a round trip
 * whose executor runs an event loop, one syscall more per round trip. --executor-timeout-ms is
 * that wait's timeout (1000, tl-executor's heartbeat; -1: none, so that the kernel arms no timer
 * for it); --driver-timeout-ms the driver's poll() timeout (-1, none; tl-driver's loop waits
 * with one, its next timer's).
 *
 * P defaults to 2 (the executors x cores of --bench), N to 100,000 (its tasks) in all, shared by
 * the pairs as they come. Printed: "round trips: N in T s: R round trips/s", timed from the first
 * LAUNCH to the last STATUS, like --bench's tasks/s from the first offer to the release.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"

#define PAIRS_MAX 64         /* concurrent round trips at most */
#define FRAME_BYTES_MAX 4096 /* --launch-bytes and --status-bytes at most */

/* One executor's connection, as the driver sees it. */
typedef struct pair {
  int fd;         /* the driver's end */
  pid_t pid;      /* the executor process */
  size_t have;    /* bytes of the current STATUS received */
  bool in_flight; /* a LAUNCH is out and its STATUS not yet all in */
} pair;

static void die(const char *what) {
  perror(what);
  exit(1);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Writes all n bytes (blocking). */
static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      die("write");
    p += w;
    n -= (size_t)w;
  }
}

/* Reads exactly n bytes (blocking); false at end of stream before the first. */
static bool read_all(int fd, uint8_t *p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0 && got == 0)
      return false;
    if (r <= 0)
      die("read");
    got += (size_t)r;
  }
  return true;
}

static void nodelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
    die("setsockopt TCP_NODELAY");
}

/* The executor: for every LAUNCH read, one STATUS written, until the driver closes. With
 * epoll, it waits for the LAUNCH in epoll_wait before reading it. */
static void run_executor(int fd, size_t launch_bytes, const uint8_t *status, size_t status_bytes,
                         bool epoll, int timeout_ms) {
  uint8_t buf[FRAME_BYTES_MAX];
  int ep = -1;
  if (epoll) {
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
      die("epoll");
  }
  for (;;) {
    if (epoll) {
      struct epoll_event ev;
      int n = epoll_wait(ep, &ev, 1, timeout_ms);
      if (n < 0 && errno != EINTR)
        die("epoll_wait");
      if (n <= 0)
        continue;
    }
    if (!read_all(fd, buf, launch_bytes))
      break;
    write_all(fd, status, status_bytes);
  }
  exit(0);
}

/* A LAUNCH frame of one `noop` task and a STATUS frame of its end, as the cluster encodes them
 * (the values do not change the sizes: every integer field has a fixed width). */
static void encode_frames(tlc_buf *launch, tlc_buf *status) {
  tlc_launch_item item = {.tid = 1000,
                          .taskset_id = 8,
                          .index = 999,
                          .attempt = 0,
                          .flags = 0,
                          .kind = tlc_str("noop")};
  tlc_msg l = {.type = TLC_MSG_LAUNCH, .u.launch = {1, &item}};
  uint8_t result[8] = {0xe7, 0x03}; /* the executor's result for noop: its index, a u64 */
  tlc_status_item update = {.tid = 1000,
                            .state = TLC_TASK_FINISHED,
                            .result = {result, sizeof result},
                            .text = tlc_str("")};
  tlc_msg s = {.type = TLC_MSG_STATUS, .u.status = {1, &update}};
  if (tlc_encode(launch, &l) < 0 || tlc_encode(status, &s) < 0) {
    fprintf(stderr, "tl-pingpong: the frames do not encode\n");
    exit(1);
  }
}

static uint64_t parse_u64(const char *s, uint64_t lo, uint64_t hi) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s || *end || v < lo || v > hi) {
    fprintf(stderr, "tl-pingpong: %s: not a number in %" PRIu64 "..%" PRIu64 "\n", s, lo, hi);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  uint64_t pairs = 2, total = 100000, launch_bytes = 0, status_bytes = 0;
  bool quiet = false, executor_poll = false;
  int executor_timeout = 1000; /* tl-executor's heartbeat is due in a second */
  int driver_timeout = -1;
  static const struct option opts[] = {{"pairs", required_argument, NULL, 'p'},
                                       {"round-trips", required_argument, NULL, 'n'},
                                       {"launch-bytes", required_argument, NULL, 'l'},
                                       {"status-bytes", required_argument, NULL, 's'},
                                       {"executor-poll", no_argument, NULL, 'e'},
                                       {"executor-timeout-ms", required_argument, NULL, 't'},
                                       {"driver-timeout-ms", required_argument, NULL, 'd'},
                                       {"quiet", no_argument, NULL, 'q'},
                                       {NULL, 0, NULL, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (o) {
    case 'p':
      pairs = parse_u64(optarg, 1, PAIRS_MAX);
      break;
    case 'n':
      total = parse_u64(optarg, 1, UINT32_MAX);
      break;
    case 'l':
      launch_bytes = parse_u64(optarg, 1, FRAME_BYTES_MAX);
      break;
    case 's':
      status_bytes = parse_u64(optarg, 1, FRAME_BYTES_MAX);
      break;
    case 'e':
      executor_poll = true;
      break;
    case 't':
      executor_timeout = strcmp(optarg, "-1") == 0 ? -1 : (int)parse_u64(optarg, 0, 3600000);
      break;
    case 'd':
      driver_timeout = strcmp(optarg, "-1") == 0 ? -1 : (int)parse_u64(optarg, 0, 3600000);
      break;
    case 'q':
      quiet = true;
      break;
    default:
      fprintf(stderr, "usage: tl-pingpong [--pairs P] [--round-trips N] [--launch-bytes L] "
                      "[--status-bytes S] [--executor-poll] [--executor-timeout-ms MS]\n"
                      "                   [--driver-timeout-ms MS] [--quiet]\n");
      return 2;
    }
  }
  if (optind != argc) {
    fprintf(stderr, "tl-pingpong: unexpected argument %s\n", argv[optind]);
    return 2;
  }

  /* The frames: the protocol's own, or as many bytes as asked (their first bytes those of the
   * real frame, the rest zero: nothing reads them). */
  tlc_buf lf, sf;
  tlc_buf_init(&lf);
  tlc_buf_init(&sf);
  encode_frames(&lf, &sf);
  if (!launch_bytes)
    launch_bytes = lf.len;
  if (!status_bytes)
    status_bytes = sf.len;
  static uint8_t launch[FRAME_BYTES_MAX], status[FRAME_BYTES_MAX];
  memcpy(launch, lf.data, lf.len < launch_bytes ? lf.len : launch_bytes);
  memcpy(status, sf.data, sf.len < status_bytes ? sf.len : status_bytes);
  if (!quiet)
    printf("frames: LAUNCH %" PRIu64 " bytes (noop: %zu), STATUS %" PRIu64
           " bytes (FINISHED: %zu); "
           "%" PRIu64 " pairs\n",
           launch_bytes, lf.len, status_bytes, sf.len, pairs);
  tlc_buf_free(&lf);
  tlc_buf_free(&sf);
  fflush(stdout);
  signal(SIGPIPE, SIG_IGN);

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (lfd < 0)
    die("socket");
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof addr;
  if (bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, PAIRS_MAX) < 0 ||
      getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0)
    die("listen");

  pair ps[PAIRS_MAX];
  struct pollfd pfds[PAIRS_MAX];
  for (uint64_t i = 0; i < pairs; i++) {
    pid_t pid = fork();
    if (pid < 0)
      die("fork");
    if (pid == 0) {
      close(lfd);
      for (uint64_t j = 0; j < i; j++)
        close(ps[j].fd);
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
        die("connect");
      nodelay(fd);
      run_executor(fd, launch_bytes, status, status_bytes, executor_poll, executor_timeout);
    }
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0)
      die("accept");
    nodelay(fd);
    ps[i] = (pair){.fd = fd, .pid = pid};
    pfds[i] = (struct pollfd){.fd = fd, .events = POLLIN};
  }
  close(lfd);

  /* One LAUNCH out on every connection, then one more for each STATUS in, until N were sent. */
  uint64_t sent = 0, done = 0;
  double t0 = now_s();
  for (uint64_t i = 0; i < pairs && sent < total; i++, sent++) {
    write_all(ps[i].fd, launch, launch_bytes);
    ps[i].in_flight = true;
  }
  uint8_t buf[FRAME_BYTES_MAX];
  while (done < total) {
    int n = poll(pfds, (nfds_t)pairs, driver_timeout);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      die("poll");
    for (uint64_t i = 0; i < pairs; i++) {
      if (!(pfds[i].revents & (POLLIN | POLLERR | POLLHUP)))
        continue;
      pair *p = &ps[i];
      ssize_t r = read(p->fd, buf, status_bytes - p->have);
      if (r <= 0 || !p->in_flight)
        die("read: the executor went away, or sent what was not asked");
      p->have += (size_t)r;
      if (p->have < status_bytes)
        continue;
      p->have = 0;
      p->in_flight = false;
      done++;
      if (sent < total) {
        write_all(p->fd, launch, launch_bytes);
        p->in_flight = true;
        sent++;
      }
    }
  }
  double secs = now_s() - t0;

  int failed = 0;
  for (uint64_t i = 0; i < pairs; i++) {
    close(ps[i].fd);
    int st;
    if (waitpid(ps[i].pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      failed = 1;
  }
  printf("round trips: %" PRIu64 " in %.3f s: %.0f round trips/s\n", done, secs,
         (double)done / secs);
  return failed;
}
