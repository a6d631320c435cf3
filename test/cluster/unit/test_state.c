/* tl-driver's state files (state.h): a record reads back whole; a torn, truncated, flipped or
 * foreign newest file is refused and the previous one is read instead; neither good is refused
 * with both faults named; no file at all is a first run; a writer killed inside a write, or
 * between its link and its rename, leaves the older record as state. ctest runs it as
 * cluster-state.
 */
#include "state.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/tl-state-test-XXXXXX";

static void setup(void) { ck_assert_ptr_nonnull(mkdtemp(dir)); }

static void teardown(void) {
  char path[256];
  static const char *const names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp"};
  for (size_t i = 0; i < 4; i++) {
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
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
