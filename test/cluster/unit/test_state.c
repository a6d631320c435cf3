/* tl-driver's state files (state.h): a record reads back whole; a torn, truncated, flipped or
 * foreign newest file is refused and the previous one is read instead; neither good is refused
 * with both faults named; no file at all is a first run; a writer killed inside a write, or
 * between its link and its rename, leaves the older record as state, and a whole state.tmp a
 * crash left is promoted to state. The directory: locked by one process at a time (the second
 * refused, the holder's pid named), refused when its group or others may write it, refused
 * when one of its files is a symbolic link, and no link is ever followed (a dangling one at
 * state.tmp creates nothing). ctest runs it as cluster-state.
 */
#include "state.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/tl-state-test-XXXXXX";

static void setup(void) { ck_assert_ptr_nonnull(mkdtemp(dir)); }

static void teardown(void) {
  char path[256];
  static const char *const names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp",
                                      "lock",  "target",     "fifo"};
  chmod(dir, 0700);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
  strcpy(dir, "/tmp/tl-state-test-XXXXXX");
}

static void put(const char *body, uint64_t reserve) {
  char why[256];
  int rc = state_write(dir, reserve, body, strlen(body), why, sizeof why);
  ck_assert_msg(rc == 0, "state_write: %s", why);
}

static void expect(const char *body, uint64_t reserve, int fell_back) {
  state_record r;
  char why[1024];
  int rc = state_read(dir, &r, why, sizeof why);
  ck_assert_msg(rc == 1, "state_read: %d %s", rc, rc < 0 ? why : "");
  ck_assert_uint_eq(r.len, strlen(body));
  ck_assert(memcmp(r.body, body, r.len) == 0);
  ck_assert_uint_eq(r.tid_reserved, reserve);
  ck_assert_int_eq(r.fell_back, fell_back);
  free(r.body);
}

/* Changes the file: a byte at `at` xor'ed with x (x 0: none), then cut to `len` (-1: not). */
static void damage(const char *name, long at, int x, long len) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  if (x) {
    fseek(f, at, SEEK_SET);
    int c = fgetc(f);
    fseek(f, at, SEEK_SET);
    fputc(c ^ x, f);
  }
  fclose(f);
  if (len >= 0)
    ck_assert_int_eq(truncate(path, len), 0);
}

static void expect_refused(const char *part1, const char *part2) {
  state_record r;
  char why[1024];
  ck_assert_int_eq(state_read(dir, &r, why, sizeof why), -1);
  ck_assert_msg(strstr(why, part1) && strstr(why, part2), "why: %s", why);
}

START_TEST(a_record_reads_back_and_the_previous_one_is_kept) {
  state_record r;
  char why[256];
  ck_assert_int_eq(state_read(dir, &r, why, sizeof why), 0); /* a first run */
  put("first", 10);
  expect("first", 10, 0);
  put("second record", 20);
  expect("second record", 20, 0);
  char path[256];
  snprintf(path, sizeof path, "%s/state.prev", dir);
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0);
  ck_assert_uint_eq(sb.st_size, STATE_HEADER + 5);
  ck_assert_uint_eq(sb.st_mode & 0777, 0600); /* it holds the token */
}
END_TEST

START_TEST(every_damage_to_the_newest_falls_back_to_the_previous) {
  put("older", 1);
  put("newer body", 2);
  /* A flipped byte in the body, in the header's length, in its checksum, its magic. */
  const long ats[] = {STATE_HEADER + 3, 24, 33, 0, 8};
  for (size_t i = 0; i < sizeof ats / sizeof ats[0]; i++) {
    damage("state", ats[i], 0x10, -1);
    expect("older", 1, 1);
    damage("state", ats[i], 0x10, -1); /* undone: good again */
    expect("newer body", 2, 0);
  }
  damage("state", 0, 0, STATE_HEADER + 4); /* truncated body */
  expect("older", 1, 1);
  damage("state", 0, 0, 10); /* shorter than its header */
  expect("older", 1, 1);
  char path[256];
  snprintf(path, sizeof path, "%s/state", dir);
  unlink(path); /* removed (or a crash between the renames where there are no hard links) */
  expect("older", 1, 1);
}
END_TEST

/* A writer killed (SIGKILL, as a crash would) at `point` of its third write: state is the
 * second record, whole; with state damaged, the reader takes the whole new record a crash left
 * in state.tmp, else state.prev; the next write goes on from there. */
static void crash_in_third_write(int point) {
  put("zeroth", 5);
  put("first", 10);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    state_crash_write = state_write_count + 1;
    state_crash_point = point;
    char why[256];
    state_write(dir, 20, "second, not renamed", 19, why, sizeof why);
    _exit(0); /* not reached: the write kills the process */
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  expect("first", 10, 0);
  char path[256];
  snprintf(path, sizeof path, "%s/state.tmp", dir);
  struct stat sb;
  ck_assert_int_eq(stat(path, &sb), 0); /* the new record was there, torn or whole */
  ck_assert_uint_eq(sb.st_size, point == STATE_CRASH_TORN ? STATE_HEADER + 9 : STATE_HEADER + 19);
  damage("state", STATE_HEADER, 1, -1);
  if (point == STATE_CRASH_TORN) {
    expect("zeroth", 5, 1); /* state.tmp is torn: state.prev */
    damage("state.prev", STATE_HEADER, 1, -1);
    expect_refused("state is corrupt", "state.tmp is truncated");
    damage("state.prev", STATE_HEADER, 1, -1);
  } else {
    /* state.prev is the first record's second name: damaged with state. state.tmp is whole. */
    char prev[256];
    struct stat sp;
    snprintf(path, sizeof path, "%s/state", dir);
    snprintf(prev, sizeof prev, "%s/state.prev", dir);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_int_eq(stat(prev, &sp), 0);
    ck_assert(sb.st_ino == sp.st_ino);
    expect("second, not renamed", 20, 1);
  }
  damage("state", STATE_HEADER, 1, -1); /* undone */
  put("third", 30);
  expect("third", 30, 0);
  damage("state", STATE_HEADER, 1, -1);
  expect("first", 10, 1); /* state.prev: the first record; state.tmp is gone */
}

START_TEST(a_crash_inside_a_write_leaves_the_older_record_whole) {
  crash_in_third_write(STATE_CRASH_TORN);
}
END_TEST

START_TEST(a_crash_between_link_and_rename_leaves_the_older_record_as_state) {
  crash_in_third_write(STATE_CRASH_LINKED);
}
END_TEST

START_TEST(neither_good_is_refused_with_both_faults) {
  put("older", 1);
  put("newer", 2);
  damage("state", STATE_HEADER + 1, 1, -1);
  damage("state.prev", 0, 0, STATE_HEADER + 2);
  expect_refused("state is corrupt", "state.prev is truncated");
  char path[256];
  snprintf(path, sizeof path, "%s/state.prev", dir);
  unlink(path);
  expect_refused("state is corrupt", "state.prev does not exist");
}
END_TEST

START_TEST(a_longer_file_or_another_version_is_refused) {
  put("x", 1);
  put("y", 2);
  char path[256];
  snprintf(path, sizeof path, "%s/state", dir);
  FILE *f = fopen(path, "ab");
  fputc('z', f);
  fclose(f);
  expect("x", 1, 1);
  damage("state", 0, 0, STATE_HEADER + 1); /* good again */
  expect("y", 2, 0);
  damage("state", 8, 2, -1); /* version 3 */
  expect("x", 1, 1);
}
END_TEST

/* The file's bytes, field by field as state.h's table gives them, the checksum computed here
 * with a loop of its own: the format is pinned, whatever describes it in state.c. */
START_TEST(the_header_is_the_documented_bytes) {
  put("abc", UINT64_C(0x0102030405060708));
  char path[256];
  snprintf(path, sizeof path, "%s/state", dir);
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  uint8_t b[64];
  size_t n = fread(b, 1, sizeof b, f);
  fclose(f);
  ck_assert_uint_eq(n, STATE_HEADER + 3);
  static const uint8_t head[32] = {'T', 'L', 'D', 'S', 'T', 'A', 'T', 'E', 1, 0, 0, 0, 0, 0, 0, 0,
                                   8,   7,   6,   5,   4,   3,   2,   1,   3, 0, 0, 0, 0, 0, 0, 0};
  ck_assert(memcmp(b, head, sizeof head) == 0);
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++) {
    if (i >= 32 && i < STATE_HEADER)
      continue; /* the checksum itself */
    h ^= b[i];
    h *= UINT64_C(0x100000001b3);
  }
  for (size_t i = 0; i < 8; i++)
    ck_assert_uint_eq(b[32 + i], (uint8_t)(h >> (8 * i)));
  ck_assert(memcmp(b + STATE_HEADER, "abc", 3) == 0);
}
END_TEST

/* The path of name in the directory (in one of four buffers, used in turn: two in one call
 * are two paths). */
static const char *in_dir(const char *name) {
  static char paths[4][256];
  static unsigned next;
  char *path = paths[next++ % 4];
  snprintf(path, sizeof paths[0], "%s/%s", dir, name);
  return path;
}

START_TEST(the_directory_is_locked_by_one_process_at_a_time) {
  char why[1024];
  int fd = state_lock(dir, why, sizeof why);
  ck_assert_msg(fd >= 0, "state_lock: %s", why);
  struct stat sb;
  ck_assert_int_eq(lstat(in_dir("lock"), &sb), 0);
  ck_assert(S_ISREG(sb.st_mode));
  ck_assert_uint_eq(sb.st_mode & 0777, 0600);
  /* A second process: refused, the holder named; once the holder lets go, it may. */
  for (int round = 0; round < 2; round++) {
    int pipefd[2];
    ck_assert_int_eq(pipe(pipefd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
      close(pipefd[0]);
      char w[1024] = "";
      int rc = state_lock(dir, w, sizeof w);
      ssize_t n = write(pipefd[1], w, strlen(w) + 1);
      _exit(n > 0 && rc >= 0 ? 0 : 1);
    }
    close(pipefd[1]);
    char got[1024] = "";
    ssize_t n = read(pipefd[0], got, sizeof got - 1);
    close(pipefd[0]);
    ck_assert_int_gt(n, 0);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    if (round == 0) {
      char expect[512];
      snprintf(expect, sizeof expect, "%s is in use by another tl-driver (pid %ld holds %s/lock)",
               dir, (long)getpid(), dir);
      ck_assert_int_eq(WEXITSTATUS(status), 1);
      ck_assert_msg(strcmp(got, expect) == 0, "why: %s", got);
      close(fd); /* the holder lets go */
    } else {
      ck_assert_int_eq(WEXITSTATUS(status), 0);
    }
  }
}
END_TEST

START_TEST(a_directory_others_may_write_is_refused) {
  static const mode_t modes[] = {0770, 0720, 0702, 0777, 01777};
  char why[1024];
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
    ck_assert_int_eq(chmod(dir, modes[i]), 0);
    ck_assert_int_eq(state_lock(dir, why, sizeof why), -1);
    ck_assert_msg(strstr(why, "is writable by its group or others"), "why: %s", why);
    struct stat sb;
    ck_assert_int_eq(lstat(in_dir("lock"), &sb), -1); /* nothing made */
  }
  ck_assert_int_eq(chmod(dir, 0750), 0); /* others may read: theirs to decide */
  int fd = state_lock(dir, why, sizeof why);
  ck_assert_msg(fd >= 0, "state_lock: %s", why);
  close(fd);
}
END_TEST

/* Whether the target of the planted links exists. */
static bool target_exists(void) {
  struct stat sb;
  return lstat(in_dir("target"), &sb) == 0;
}

START_TEST(a_link_in_the_directory_is_refused_and_never_followed) {
  static const char *const names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp", "lock"};
  char why[1024], target[256];
  snprintf(target, sizeof target, "%s", in_dir("target"));
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    unlink(in_dir("lock")); /* made by the lock before it looked at the others */
    ck_assert_int_eq(symlink(target, in_dir(names[i])), 0); /* dangling */
    ck_assert_int_eq(state_lock(dir, why, sizeof why), -1);
    char expect[512];
    snprintf(expect, sizeof expect, "%s/%s is a symbolic link", dir, names[i]);
    ck_assert_msg(strstr(why, expect), "why: %s", why);
    ck_assert(!target_exists());
    unlink(in_dir(names[i]));
  }
  /* Not a regular file: a FIFO at state is refused by the lock, and read without waiting. */
  ck_assert_int_eq(mkfifo(in_dir("state"), 0600), 0);
  ck_assert_int_eq(state_lock(dir, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "state is not a regular file"), "why: %s", why);
  state_record r;
  ck_assert_int_eq(state_read(dir, &r, why, sizeof why), -1);
  ck_assert_msg(strstr(why, "state is not a regular file"), "why: %s", why);
  unlink(in_dir("state"));
}
END_TEST

START_TEST(a_record_is_read_through_no_link) {
  put("older", 1);
  put("newer", 2);
  /* state made a link to a good record: not followed, state.prev is read instead. */
  ck_assert_int_eq(rename(in_dir("state"), in_dir("target")), 0);
  char target[256];
  snprintf(target, sizeof target, "%s", in_dir("target"));
  ck_assert_int_eq(symlink(target, in_dir("state")), 0);
  state_record r;
  char why[1024];
  ck_assert_int_eq(state_read(dir, &r, why, sizeof why), 1);
  ck_assert_str_eq(r.name, "state.prev");
  ck_assert_msg(strstr(r.why_newest, "state is a symbolic link: not followed"), "why: %s",
                r.why_newest);
  free(r.body);
  unlink(in_dir("state"));
  unlink(in_dir("target"));
}
END_TEST

START_TEST(a_write_replaces_what_is_at_state_tmp_without_following_it) {
  char target[256];
  snprintf(target, sizeof target, "%s", in_dir("target"));
  ck_assert_int_eq(symlink(target, in_dir("state.tmp")), 0); /* dangling */
  put("first", 1);
  ck_assert(!target_exists()); /* the record is not written through the link */
  expect("first", 1, 0);
  struct stat sb;
  ck_assert_int_eq(lstat(in_dir("state.tmp"), &sb), -1); /* renamed to state */
  /* A link to a file of the user's: that file is not changed. */
  FILE *f = fopen(target, "w");
  ck_assert_ptr_nonnull(f);
  fputs("keep", f);
  fclose(f);
  ck_assert_int_eq(symlink(target, in_dir("state.tmp")), 0);
  put("second", 2);
  expect("second", 2, 0);
  ck_assert_int_eq(stat(target, &sb), 0);
  ck_assert_uint_eq(sb.st_size, 4);
  /* A stale regular state.tmp (a failed write's): replaced. */
  f = fopen(in_dir("state.tmp"), "w");
  ck_assert_ptr_nonnull(f);
  fputs("stale and longer than a record", f);
  fclose(f);
  put("third", 3);
  expect("third", 3, 0);
}
END_TEST

START_TEST(a_whole_state_tmp_a_crash_left_is_promoted_to_state) {
  put("zeroth", 5);
  put("first", 10);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    state_crash_write = state_write_count + 1;
    state_crash_point = STATE_CRASH_LINKED;
    char why[256];
    state_write(dir, 20, "second", 6, why, sizeof why);
    _exit(0);
  }
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  damage("state", STATE_HEADER, 1, -1); /* state and state.prev: the same file, both bad */
  expect("second", 20, 1);              /* state.tmp is the one good record */
  char why[256];
  ck_assert_int_eq(state_promote_tmp(dir, why, sizeof why), 0);
  expect("second", 20, 0); /* state now */
  struct stat sb;
  ck_assert_int_eq(lstat(in_dir("state.tmp"), &sb), -1);
  put("third", 30); /* the next write leaves the promoted record as state.prev */
  damage("state", STATE_HEADER, 1, -1);
  expect("second", 20, 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("state");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, a_record_reads_back_and_the_previous_one_is_kept);
  tcase_add_test(tc, every_damage_to_the_newest_falls_back_to_the_previous);
  tcase_add_test(tc, a_crash_inside_a_write_leaves_the_older_record_whole);
  tcase_add_test(tc, a_crash_between_link_and_rename_leaves_the_older_record_as_state);
  tcase_add_test(tc, neither_good_is_refused_with_both_faults);
  tcase_add_test(tc, a_longer_file_or_another_version_is_refused);
  tcase_add_test(tc, the_header_is_the_documented_bytes);
  tcase_add_test(tc, the_directory_is_locked_by_one_process_at_a_time);
  tcase_add_test(tc, a_directory_others_may_write_is_refused);
  tcase_add_test(tc, a_link_in_the_directory_is_refused_and_never_followed);
  tcase_add_test(tc, a_record_is_read_through_no_link);
  tcase_add_test(tc, a_write_replaces_what_is_at_state_tmp_without_following_it);
  tcase_add_test(tc, a_whole_state_tmp_a_crash_left_is_promoted_to_state);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
