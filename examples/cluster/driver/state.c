/* tl-driver's state files: state.h says what they are. */

#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "codec.h"

static const char magic[8] = {'T', 'L', 'D', 'S', 'T', 'A', 'T', 'E'};

/* A file's header, as STATE_HEADER_FIELDS describes it, with its checksum. */
typedef struct state_header {
#define STATE_FIELD(name, bits) uint##bits##_t name;
  STATE_HEADER_FIELDS(STATE_FIELD)
#undef STATE_FIELD
  uint64_t checksum; /* FNV-1a 64 of the bytes before it and of the body */
} state_header;

/* Bytes of the header the checksum covers: the magic and the fields. */
#define STATE_FIELD_BYTES(name, bits) +(bits) / 8
#define STATE_COVERED (sizeof magic STATE_HEADER_FIELDS(STATE_FIELD_BYTES))
_Static_assert(STATE_COVERED + 8 == STATE_HEADER, "the header is its fields and its checksum");

/* The header's bytes before its checksum, then the body: the checksum's input. */
static uint64_t checksum(const uint8_t *h, const void *body, size_t len) {
  return tl__fnv1a(tl__fnv1a(TL__FNV1A_INIT, h, STATE_COVERED), body, len);
}

/* The header of a body into out, its checksum computed. */
static void header_put(uint8_t out[STATE_HEADER], const state_header *h, const void *body,
                       size_t len) {
  tl__wbuf w;
  tl__wbuf_init_fixed(&w, out, STATE_HEADER);
  tl__put_bytes(&w, magic, sizeof magic);
#define STATE_PUT(name, bits) tl__put_u##bits(&w, h->name);
  STATE_HEADER_FIELDS(STATE_PUT)
#undef STATE_PUT
  tl__put_u64(&w, checksum(out, body, len));
}

/* The header in bytes into *h: false when the magic is not this format's. */
static bool header_get(const uint8_t bytes[STATE_HEADER], state_header *h) {
  tl__rbuf r = tl__rbuf_over(bytes, STATE_HEADER);
  bool ours = memcmp(tl__get_bytes(&r, sizeof magic), magic, sizeof magic) == 0;
#define STATE_GET(name, bits) h->name = tl__get_u##bits(&r);
  STATE_HEADER_FIELDS(STATE_GET)
#undef STATE_GET
  h->checksum = tl__get_u64(&r);
  return ours;
}

uint64_t state_crash_write;
int state_crash_point;
uint64_t state_write_count;

static void crash_at(int point) {
  if (state_crash_write != 0 && state_write_count == state_crash_write &&
      state_crash_point == point)
    raise(SIGKILL);
}

/* Writes all n bytes at p to fd; 0, or -1 with errno. */
static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int fail(char *why, size_t whylen, const char *what, const char *path) {
  snprintf(why, whylen, "%s %.*s: %s", what, STATE_PATH_MAX, path, strerror(errno));
  return -1;
}

int state_write(const char *dir, uint64_t tid_reserved, const void *body, size_t len, char *why,
                size_t whylen) {
  char tmp[STATE_PATH_MAX], cur[STATE_PATH_MAX], prev[STATE_PATH_MAX], link_tmp[STATE_PATH_MAX];
  if (strlen(dir) > STATE_DIR_MAX) {
    snprintf(why, whylen, "the directory's name is longer than %d bytes", STATE_DIR_MAX);
    return -1;
  }
  snprintf(tmp, sizeof tmp, "%.*s/state.tmp", STATE_DIR_MAX, dir);
  snprintf(cur, sizeof cur, "%.*s/state", STATE_DIR_MAX, dir);
  snprintf(prev, sizeof prev, "%.*s/state.prev", STATE_DIR_MAX, dir);
  snprintf(link_tmp, sizeof link_tmp, "%.*s/state.prev.tmp", STATE_DIR_MAX, dir);
  state_write_count++;
  uint8_t h[STATE_HEADER];
  state_header header = {.version = STATE_VERSION, .tid_reserved = tid_reserved, .body_len = len};
  header_put(h, &header, body, len);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return fail(why, whylen, "open", tmp);
  size_t half = len / 2;
  int rc = write_all(fd, h, sizeof h);
  if (rc == 0)
    rc = write_all(fd, body, half);
  if (rc == 0) {
    crash_at(STATE_CRASH_TORN);
    rc = write_all(fd, (const uint8_t *)body + half, len - half);
  }
  if (rc == 0)
    rc = fsync(fd);
  if (rc != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return fail(why, whylen, "write", tmp);
  }
  if (close(fd) != 0)
    return fail(why, whylen, "close", tmp);
  /* The record in state gets a second name, which replaces state.prev in one rename; then
   * state.tmp replaces state in one rename: at no point is either name missing or torn. Where
   * the file system has no hard links, state is renamed to state.prev instead, and a crash
   * before the next rename leaves no state (the reader takes state.prev). */
  if (unlink(link_tmp) != 0 && errno != ENOENT)
    return fail(why, whylen, "unlink", link_tmp);
  if (link(cur, link_tmp) == 0) {
    if (rename(link_tmp, prev) != 0)
      return fail(why, whylen, "rename", link_tmp);
  } else if (errno != ENOENT) { /* ENOENT: the first record */
    if (errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK)
      return fail(why, whylen, "link", cur);
    if (rename(cur, prev) != 0)
      return fail(why, whylen, "rename", cur);
  }
  crash_at(STATE_CRASH_LINKED);
  if (rename(tmp, cur) != 0)
    return fail(why, whylen, "rename", tmp);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return fail(why, whylen, "open", dir);
  rc = fsync(dfd);
  int e = errno;
  close(dfd);
  errno = e;
  return rc == 0 ? 0 : fail(why, whylen, "fsync", dir);
}

/* Reads one file: 1 with *out's body, len and reservation set; 0 when it does not exist; -1 with
 * why when it is bad. */
static int read_one(const char *path, state_record *out, char *why, size_t whylen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    return fail(why, whylen, "open", path);
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return fail(why, whylen, "stat", path);
  }
  uint8_t h[STATE_HEADER];
  state_header header;
  size_t size = (size_t)sb.st_size;
  ssize_t got = size >= sizeof h ? read(fd, h, sizeof h) : 0;
  const char *bad = NULL;
  uint64_t len = 0;
  if (got != (ssize_t)sizeof h)
    bad = "shorter than its header";
  else if (!header_get(h, &header))
    bad = "not a tl-driver state file";
  else if (header.version != STATE_VERSION)
    bad = "of another version";
  else if ((len = header.body_len) > STATE_BODY_MAX || len > size - sizeof h)
    bad = "truncated: its body is shorter than its header says";
  else if (len < size - sizeof h)
    bad = "longer than its header says";
  uint8_t *body = NULL;
  if (!bad) {
    body = malloc(len ? len : 1);
    if (!body) {
      close(fd);
      snprintf(why, whylen, "%.*s: out of memory", STATE_PATH_MAX, path);
      return -1;
    }
    size_t have = 0;
    while (have < len) {
      ssize_t r = read(fd, body + have, len - have);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      have += (size_t)r;
    }
    if (have != len)
      bad = "truncated while it was read";
    else if (checksum(h, body, len) != header.checksum)
      bad = "corrupt: its checksum does not match";
  }
  close(fd);
  if (bad) {
    free(body);
    snprintf(why, whylen, "%.*s is %s", STATE_PATH_MAX, path, bad);
    return -1;
  }
  out->body = body;
  out->len = len;
  out->tid_reserved = header.tid_reserved;
  return 1;
}

int state_read(const char *dir, state_record *out, char *why, size_t whylen) {
  char cur[STATE_PATH_MAX], prev[STATE_PATH_MAX], tmp[STATE_PATH_MAX];
  char why_cur[STATE_WHY_MAX], why_prev[STATE_WHY_MAX], why_tmp[STATE_WHY_MAX];
  memset(out, 0, sizeof *out);
  out->name = "state";
  if (strlen(dir) > STATE_DIR_MAX) {
    snprintf(why, whylen, "the directory's name is longer than %d bytes", STATE_DIR_MAX);
    return -1;
  }
  snprintf(cur, sizeof cur, "%.*s/state", STATE_DIR_MAX, dir);
  snprintf(prev, sizeof prev, "%.*s/state.prev", STATE_DIR_MAX, dir);
  snprintf(tmp, sizeof tmp, "%.*s/state.tmp", STATE_DIR_MAX, dir);
  int rc = read_one(cur, out, why_cur, sizeof why_cur);
  if (rc == 1)
    return 1;
  if (rc == 0)
    snprintf(why_cur, sizeof why_cur, "%.*s does not exist", STATE_PATH_MAX, cur);
  memcpy(out->why_newest, why_cur, sizeof why_cur);
  out->fell_back = 1;
  /* A whole state.tmp is a write's record, fsynced, that a crash kept from being renamed: newer
   * than state.prev (and than state, which may be the same file as state.prev then). */
  int rt = read_one(tmp, out, why_tmp, sizeof why_tmp);
  if (rt == 1) {
    out->name = "state.tmp";
    return 1;
  }
  int rp = read_one(prev, out, why_prev, sizeof why_prev);
  if (rp == 1) {
    out->name = "state.prev";
    return 1;
  }
  out->fell_back = 0;
  out->why_newest[0] = '\0';
  if (rc == 0 && rp == 0 && rt == 0)
    return 0;
  if (rp == 0)
    snprintf(why_prev, sizeof why_prev, "%.*s does not exist", STATE_PATH_MAX, prev);
  if (rt == 0)
    snprintf(why, whylen, "%s; %s", why_cur, why_prev);
  else
    snprintf(why, whylen, "%s; %s; %s", why_cur, why_prev, why_tmp);
  return -1;
}
