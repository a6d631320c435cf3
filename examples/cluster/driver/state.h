/* tl-driver's state files (docs/cluster.md "Driver failover"): one durable record of the run in a
 * directory, written so that a crash at any moment leaves a file that reads back whole or is
 * refused, never one read as good that is not. It knows nothing of what the record holds.
 *
 * DIR/state is the newest record, DIR/state.prev the one before. A write goes to DIR/state.tmp
 * (mode 0600: the record holds the shared token), is fsynced, then the record in state gets a
 * second name, DIR/state.prev.tmp, renamed to state.prev, then state.tmp is renamed to state,
 * and the directory is fsynced: at every moment state is a whole record, the newest written or
 * the one before it, and state.prev the one before that or older. (Where the file system has no
 * hard links, state is renamed to state.prev instead, and a crash before the second rename
 * leaves no state: the reader takes state.prev.) Each file is a 40-byte header then the
 * body. The header is the magic, the fields of STATE_HEADER_FIELDS below, then the checksum,
 * every integer little-endian, written and read with the project's byte codec (lib/codec.h):
 *
 *   offset  size  field
 *        0     8  magic "TLDSTATE"
 *        8     4  version (STATE_VERSION)
 *       12     4  0
 *       16     8  tid reservation: no tid above it was sent to an executor while this was the
 *                 newest record
 *       24     8  body length
 *       32     8  FNV-1a 64 of bytes 0..32 and of the body
 *
 * The directory is the run's alone (docs/cluster.md "Driver failover"): state_lock takes
 * DIR/lock (an fcntl write lock, held until the process exits) before anything reads a record,
 * and refuses a directory that is not the user's or that its group or others may write, and
 * any of the files above (and lock) that is a symbolic link or not a regular file. No file is
 * opened through a link: records are read with O_NOFOLLOW, and state.tmp is unlinked and
 * created afresh with O_CREAT | O_EXCL | O_NOFOLLOW for each write.
 */
#ifndef TLC_STATE_H
#define TLC_STATE_H

#include <stddef.h>
#include <stdint.h>

#define STATE_VERSION 1
#define STATE_HEADER 40 /* bytes of a file's header */

/* The header's fields between its magic and its checksum, in their order: XX(name, bits). The
 * one description of them: state.c makes the header's struct, its writer and its reader from
 * it. */
#define STATE_HEADER_FIELDS(XX)                                                                    \
  XX(version, 32)                           /* STATE_VERSION */                                    \
  XX(zero, 32)                              /* 0; not checked when read */                         \
  XX(tid_reserved, 64)                      /* the tid reservation */                              \
  XX(body_len, 64)                          /* bytes of the body */
#define STATE_BODY_MAX (UINT64_C(1) << 32)  /* a longer body is refused as corrupt */
#define STATE_DIR_MAX 1000                  /* bytes of the directory's name at most */
#define STATE_PATH_MAX (STATE_DIR_MAX + 16) /* a file's path in it, NUL included */
#define STATE_WHY_MAX (STATE_PATH_MAX + 64) /* a sentence on one file */

/* A record read back. */
typedef struct state_record {
  uint8_t *body;                  /* malloc'ed; the caller frees it */
  size_t len;                     /* bytes of body */
  uint64_t tid_reserved;          /* the header's reservation */
  const char *name;               /* the file read: "state", "state.tmp" or "state.prev" */
  int fell_back;                  /* 1: state was missing or bad (name says what was read) */
  char why_newest[STATE_WHY_MAX]; /* with fell_back: why state was not taken */
} state_record;

/* Fault injection for tests (tl-driver --crash-in-state-write N:P): when state_crash_write is
 * the number of the write (counting this process's writes from 1), the process kills itself
 * with SIGKILL at point state_crash_point of it: STATE_CRASH_TORN halfway through the body of
 * state.tmp, STATE_CRASH_LINKED once state.prev names the older record and before state.tmp is
 * renamed to state. 0: never. */
enum { STATE_CRASH_TORN = 1, STATE_CRASH_LINKED = 2 };
extern uint64_t state_crash_write;
extern int state_crash_point;
extern uint64_t state_write_count; /* state_write calls this process made */

/* Writes a record as above (dir: at most STATE_DIR_MAX bytes): a state.tmp left by a failed
 * write or a crash is unlinked first (never followed), and the new one created exclusively. The
 * caller holds the directory (state_lock), and has read or promoted any record state.tmp held.
 * Returns 0, or -1 with why (a
 * sentence with the file and errno's text) in why[0..whylen); DIR/state and DIR/state.prev are then
 * as they were or as the link and rename left them, each whole. */
int state_write(const char *dir, uint64_t tid_reserved, const void *body, size_t len, char *why,
                size_t whylen);

/* Takes the directory for this process (dir: at most STATE_DIR_MAX bytes; it must exist):
 * checks that it is a directory owned by the effective user that neither its group nor others
 * may write, takes an fcntl write lock on DIR/lock (created 0600, empty, opened with
 * O_NOFOLLOW; fcntl names the holder's pid), then checks that none of state, state.prev, state.tmp,
 * state.prev.tmp is a symbolic link or anything but a regular file. Returns the lock's
 * descriptor (O_CLOEXEC: the lock is held until the process exits or closes it; the file stays,
 * so that a driver that opens it later locks the same file), or -1 with why: the directory is
 * in use (the holder's pid named when fcntl tells it), or what is wrong with it or with one of
 * its files. Nothing in the directory is changed but lock's creation. */
int state_lock(const char *dir, char *why, size_t whylen);

/* Completes the write a crash stopped before its last rename, once the record it left in
 * DIR/state.tmp was recovered (state_read named "state.tmp"): state.tmp is renamed over state
 * and the directory fsynced, so that the next write, which replaces state.tmp, never removes
 * the only good record. state.prev is left as it is. Returns 0, or -1 with why. */
int state_promote_tmp(const char *dir, char *why, size_t whylen);

/* Reads DIR/state; when it is missing or bad (too short, another magic or version, a body
 * length beyond the file or STATE_BODY_MAX, trailing bytes, a checksum that does not match; a
 * symbolic link, which is not followed, or anything but a regular file),
 * DIR/state.tmp if it is whole (a write that a crash stopped before its last rename: the newest
 * record), else DIR/state.prev. Returns 1 with *out filled, 0 when none of them exists (a first
 * run), -1 when no good record can be had, why (3 * STATE_WHY_MAX bytes are enough) saying what
 * is wrong with each. */
int state_read(const char *dir, state_record *out, char *why, size_t whylen);

#endif
