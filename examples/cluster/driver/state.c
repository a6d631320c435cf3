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
#include <sys/types.h>
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
  /* A state.tmp left by a failed write, or by a crash (its record recovered and promoted, or
   * older than state): removed, never followed (unlink removes a link, not its target), and
   * the new one made exclusively, so that nothing planted there is written through. */
  if (unlink(tmp) != 0 && errno != ENOENT)
    return fail(why, whylen, "unlink", tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
 * why when it is bad. A link is not followed; a FIFO or a device is not waited on (O_NONBLOCK)
 * and refused. */
static int read_one(const char *path, state_record *out, char *why, size_t whylen) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return 0;
    if (errno == ELOOP) {
      snprintf(why, whylen, "%.*s is a symbolic link: not followed", STATE_PATH_MAX, path);
      return -1;
    }
    return fail(why, whylen, "open", path);
  }
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return fail(why, whylen, "stat", path);
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    snprintf(why, whylen, "%.*s is not a regular file", STATE_PATH_MAX, path);
    return -1;
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

/* The files of the directory besides lock: none may be a link or anything but a regular file. */
static const char *const state_names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp"};

/* Why the entry name of the directory open at dfd cannot be used (a link, not a regular file),
 * into why; 0 when it is a regular file or absent. */
static int check_entry(int dfd, const char *dir, const char *name, char *why, size_t whylen) {
  struct stat sb;
  if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT)
      return 0;
    snprintf(why, whylen, "stat %.*s/%s: %s", STATE_DIR_MAX, dir, name, strerror(errno));
    return -1;
  }
  if (S_ISREG(sb.st_mode))
    return 0;
  snprintf(why, whylen, "%.*s/%s is %s: refused, nothing is read or written through it (remove it)",
           STATE_DIR_MAX, dir, name,
           S_ISLNK(sb.st_mode) ? "a symbolic link" : "not a regular file");
  return -1;
}

/* state_lock's checks and lock on the directory open at dfd: 0 with *fd the lock's descriptor
 * (or -1 with it, when one was opened, in *fd for the caller to close). */
static int lock_dir(int dfd, const char *dir, int *fd, char *why, size_t whylen) {
  struct stat sb;
  if (fstat(dfd, &sb) != 0)
    return fail(why, whylen, "stat", dir);
  /* Anyone else who may write here could plant a link or replace a record: refused, not
   * warned about, since the record holds the token. */
  if (sb.st_uid != geteuid()) {
    snprintf(why, whylen, "%.*s is owned by uid %lu, not by this user (uid %lu): refused",
             STATE_DIR_MAX, dir, (unsigned long)sb.st_uid, (unsigned long)geteuid());
    return -1;
  }
  if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
    snprintf(why, whylen,
             "%.*s is writable by its group or others (mode %04o): refused (chmod go-w it)",
             STATE_DIR_MAX, dir, (unsigned)(sb.st_mode & 07777));
    return -1;
  }
  *fd = openat(dfd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (*fd < 0 && errno != ELOOP) {
    snprintf(why, whylen, "open %.*s/lock: %s", STATE_DIR_MAX, dir, strerror(errno));
    return -1;
  }
  if (*fd < 0 || fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    if (check_entry(dfd, dir, "lock", why, whylen) == 0)
      snprintf(why, whylen, "%.*s/lock cannot be used", STATE_DIR_MAX, dir);
    return -1;
  }
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
  if (fcntl(*fd, F_SETLK, &fl) != 0) {
    if (errno != EAGAIN && errno != EACCES) {
      snprintf(why, whylen, "lock %.*s/lock: %s", STATE_DIR_MAX, dir, strerror(errno));
      return -1;
    }
    struct flock held = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(*fd, F_GETLK, &held) == 0 && held.l_type != F_UNLCK && held.l_pid > 0)
      snprintf(why, whylen, "%.*s is in use by another tl-driver (pid %ld holds %.*s/lock)",
               STATE_DIR_MAX, dir, (long)held.l_pid, STATE_DIR_MAX, dir);
    else
      snprintf(why, whylen, "%.*s is in use by another tl-driver (it holds %.*s/lock)",
               STATE_DIR_MAX, dir, STATE_DIR_MAX, dir);
    return -1;
  }
  for (size_t i = 0; i < sizeof state_names / sizeof state_names[0]; i++)
    if (check_entry(dfd, dir, state_names[i], why, whylen) != 0)
      return -1;
  return 0;
}

int state_lock(const char *dir, char *why, size_t whylen) {
  if (strlen(dir) > STATE_DIR_MAX) {
    snprintf(why, whylen, "the directory's name is longer than %d bytes", STATE_DIR_MAX);
    return -1;
  }
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return fail(why, whylen, "open", dir);
  int fd = -1;
  int rc = lock_dir(dfd, dir, &fd, why, whylen);
  close(dfd);
  if (rc != 0 && fd >= 0)
    close(fd); /* the lock, if it was taken, goes with it */
  return rc == 0 ? fd : -1;
}

int state_promote_tmp(const char *dir, char *why, size_t whylen) {
  char tmp[STATE_PATH_MAX], cur[STATE_PATH_MAX];
  if (strlen(dir) > STATE_DIR_MAX) {
    snprintf(why, whylen, "the directory's name is longer than %d bytes", STATE_DIR_MAX);
    return -1;
  }
  snprintf(tmp, sizeof tmp, "%.*s/state.tmp", STATE_DIR_MAX, dir);
  snprintf(cur, sizeof cur, "%.*s/state", STATE_DIR_MAX, dir);
  if (rename(tmp, cur) != 0)
    return fail(why, whylen, "rename", tmp);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    return fail(why, whylen, "open", dir);
  int rc = fsync(dfd);
  int e = errno;
  close(dfd);
  errno = e;
  return rc == 0 ? 0 : fail(why, whylen, "fsync", dir);
}
