/* tl-badclient: a misbehaving client of tl-driver, for the bad-client test (docs/cluster.md).
 * It connects to the driver on 127.0.0.1, misbehaves in the one way its mode names, then reads
 * until the driver closes the connection.
 *
 *   tl-badclient --port P MODE [ARG]
 *
 *   wrong-token         REGISTER with a token that is not the driver's
 *   garbage             bytes that are no frame (a version byte of 0xff)
 *   oversized           a length prefix of TLC_FRAME_MAX + 1
 *   duplicate-id ID     REGISTER, with the right token, under an id already alive; then STOP
 *                       may come before the close
 *   foreign-status TID  REGISTER correctly as a new executor, then a STATUS (FINISHED) for TID,
 *                       a task it was never given; then wait for STOP
 *   silent              connect and send nothing
 *   unknown-message     a frame of message type 0x42, which does not exist
 *   truncated           a REGISTER frame whose length prefix is one byte short of the message
 *   early-frame         a HEARTBEAT before REGISTER
 *   second-register     REGISTER correctly as a new executor, then REGISTER again
 *   driver-message      REGISTER correctly as a new executor, then a LAUNCH (a driver's message)
 *   duplicate-address   REGISTER, with the right token, declaring gpu=0,0 (a frame the codec
 *                       takes, a declaration the ledger refuses); then STOP may come
 *   bad-address         REGISTER, with the right token, declaring gpu=0,1 as one address: a
 *                       ',' the codec refuses
 *
 * The token is TL_CLUSTER_TOKEN, which the driver puts in its children's environment.
 * Exit status: 0 when the driver closed the connection without sending a frame but EPOCH (which
 * comes first on a connection whose token it accepted), or, for foreign-status, duplicate-id and
 * duplicate-address,
 * after sending nothing but EPOCH and STOP; 1 for anything else (a LAUNCH, no close within 10 s,
 * a socket error); 2 for bad arguments.
 */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "codec.h"
#include "proto.h"

#define WAIT_MS 10000 /* the driver must close within this */

static void usage(void) __attribute__((noreturn));
static void usage(void) {
  fprintf(stderr, "usage: tl-badclient --port P wrong-token | garbage | oversized | "
                  "duplicate-id ID | foreign-status TID | silent | unknown-message | truncated |\n"
                  "       early-frame | second-register | driver-message | duplicate-address |\n"
                  "       bad-address\n");
  exit(2);
}

static int send_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int send_msg(int fd, const tlc_msg *m) {
  tlc_buf b;
  tlc_buf_init(&b);
  int rc = tlc_encode(&b, m);
  if (rc == 0)
    rc = send_all(fd, b.data, b.len);
  tlc_buf_free(&b);
  return rc;
}

static int send_register(int fd, const char *id, const char *token) {
  tlc_msg m = {.type = TLC_MSG_REGISTER,
               .u.reg = {.executor_id = tlc_str(id),
                         .host = tlc_str("127.0.0.1"),
                         .cores = 1,
                         .token = tlc_str(token)}};
  return send_msg(fd, &m);
}

/* Reads until the driver closes. Frames are decoded: EPOCH is allowed, STOP too when allow_stop
 * (the client then closes itself), any other frame fails. */
static int wait_close(int fd, const char *mode, int allow_stop) {
  tlc_decoder d;
  tlc_decoder_init(&d, TLC_FRAME_MAX);
  uint8_t buf[4096];
  int rc = 1;
  for (;;) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, WAIT_MS);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      fprintf(stderr, "tl-badclient %s: the driver did not close the connection\n", mode);
      break;
    }
    ssize_t r = recv(fd, buf, sizeof buf, 0);
    if (r < 0 && errno == EINTR)
      continue;
    if (r == 0 || (r < 0 && errno == ECONNRESET)) { /* closed by the driver: refused */
      rc = 0;
      break;
    }
    if (r < 0) {
      perror("tl-badclient: recv");
      break;
    }
    const uint8_t *data = buf;
    size_t len = (size_t)r;
    int stop = 0, bad = 0;
    while (len > 0 && !stop && !bad) {
      size_t used;
      tlc_msg m;
      if (tlc_decoder_feed(&d, data, len, &used, &m) < 0) {
        bad = 1;
        break;
      }
      data += used, len -= used;
      if (m.type == TLC_MSG_STOP && allow_stop)
        stop = 1;
      else if (m.type != TLC_MSG_NONE && m.type != TLC_MSG_EPOCH) {
        fprintf(stderr, "tl-badclient %s: the driver sent %s\n", mode, tlc_msg_type_name(m.type));
        bad = 1;
      }
    }
    if (stop)
      rc = 0;
    if (stop || bad)
      break;
  }
  tlc_decoder_fini(&d);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 4 || strcmp(argv[1], "--port") != 0)
    usage();
  char *end;
  long port = strtol(argv[2], &end, 10);
  if (*end || port <= 0 || port > 65535)
    usage();
  const char *mode = argv[3];
  const char *arg = argc > 4 ? argv[4] : NULL;
  const char *token = getenv("TL_CLUSTER_TOKEN");
  if (!token)
    token = "";
  int needs_arg = !strcmp(mode, "duplicate-id") || !strcmp(mode, "foreign-status");
  if (argc != (needs_arg ? 5 : 4))
    usage();

  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    perror("tl-badclient: connect");
    return 1;
  }

  int rc = 0, allow_stop = 0;
  if (!strcmp(mode, "wrong-token")) {
    rc = send_register(fd, "bad-token", "not-the-token");
  } else if (!strcmp(mode, "garbage")) {
    static const uint8_t g[] = {8, 0, 0, 0, 0xff, 0xfe, 'g', 'a', 'r', 'b', 'a', 'g'};
    rc = send_all(fd, g, sizeof g);
  } else if (!strcmp(mode, "oversized")) {
    uint32_t n = TLC_FRAME_MAX + 1;
    uint8_t p[6] = {(uint8_t)n,         (uint8_t)(n >> 8), (uint8_t)(n >> 16),
                    (uint8_t)(n >> 24), TLC_PROTO_VERSION, TLC_MSG_REGISTER};
    rc = send_all(fd, p, sizeof p);
  } else if (!strcmp(mode, "duplicate-id")) {
    rc = send_register(fd, arg, token);
    allow_stop = 1; /* a REGISTER the ledger refuses is told to STOP, then closed */
  } else if (!strcmp(mode, "foreign-status")) {
    uint64_t tid = strtoull(arg, &end, 10);
    if (*arg == '\0' || *end)
      usage();
    tlc_status_item it = {.tid = tid, .state = TLC_TASK_FINISHED};
    tlc_msg st = {.type = TLC_MSG_STATUS, .u.status = {1, &it}};
    rc = send_register(fd, "bad-foreign", token);
    if (rc == 0)
      rc = send_msg(fd, &st);
    allow_stop = 1;
  } else if (!strcmp(mode, "unknown-message")) {
    static const uint8_t u[] = {2, 0, 0, 0, TLC_PROTO_VERSION, 0x42};
    rc = send_all(fd, u, sizeof u);
  } else if (!strcmp(mode, "truncated")) {
    tlc_msg m = {.type = TLC_MSG_REGISTER,
                 .u.reg = {.executor_id = tlc_str("bad-truncated"),
                           .host = tlc_str("127.0.0.1"),
                           .cores = 1,
                           .token = tlc_str(token)}};
    tlc_buf b;
    tlc_buf_init(&b);
    rc = tlc_encode(&b, &m);
    if (rc == 0) { /* the length prefix (little-endian u32) one less, the last byte dropped */
      tl__le_put(b.data, tl__le_get(b.data, 4) - 1, 4);
      rc = send_all(fd, b.data, b.len - 1);
    }
    tlc_buf_free(&b);
  } else if (!strcmp(mode, "early-frame")) {
    tlc_msg hb = {.type = TLC_MSG_HEARTBEAT, .u.heartbeat = {.seq = 0, .binaries = 0}};
    rc = send_msg(fd, &hb);
  } else if (!strcmp(mode, "second-register")) {
    rc = send_register(fd, "bad-second", token);
    if (rc == 0)
      rc = send_register(fd, "bad-second", token);
  } else if (!strcmp(mode, "driver-message")) {
    tlc_launch_item it = {
        .tid = 1, .taskset_id = 1, .index = 0, .attempt = 0, .kind = tlc_str("noop")};
    tlc_msg launch = {.type = TLC_MSG_LAUNCH, .u.launch = {1, &it}};
    rc = send_register(fd, "bad-driver-msg", token);
    if (rc == 0)
      rc = send_msg(fd, &launch);
  } else if (!strcmp(mode, "duplicate-address") || !strcmp(mode, "bad-address")) {
    bool dup = !strcmp(mode, "duplicate-address");
    tlc_view addrs[2] = {tlc_str("0"), tlc_str(dup ? "0" : "0;1")};
    tlc_resource gpu = {tlc_str("gpu"), 2, addrs};
    tlc_msg m = {.type = TLC_MSG_REGISTER,
                 .u.reg = {.executor_id = tlc_str(dup ? "bad-dup-address" : "bad-address"),
                           .host = tlc_str("127.0.0.1"),
                           .cores = 1,
                           .token = tlc_str(token),
                           .nresources = 1,
                           .resources = &gpu}};
    tlc_buf b;
    tlc_buf_init(&b);
    rc = tlc_encode(&b, &m);
    if (rc == 0 && !dup) /* "0;1" becomes "0,1": its last 3 bytes, the frame's last */
      b.data[b.len - 2] = ',';
    if (rc == 0)
      rc = send_all(fd, b.data, b.len);
    tlc_buf_free(&b);
    allow_stop = dup; /* a REGISTER the ledger refuses is told to STOP, then closed */
  } else if (strcmp(mode, "silent") != 0) {
    usage();
  }
  if (rc < 0 && errno != ECONNRESET && errno != EPIPE) {
    perror("tl-badclient: send");
    close(fd);
    return 1;
  }
  rc = wait_close(fd, mode, allow_stop);
  close(fd);
  return rc;
}
