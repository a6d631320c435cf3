/* tl_metrics_text: the Prometheus text of tl_stats. The text must parse (HELP, TYPE and one sample
 * for each metric, valid and distinct names, a final newline), name every field of tl_stats with
 * its value from the same moment, size itself and truncate as documented, and refuse bad
 * arguments without touching anything.
 */
#include "harness.h"

#include <ctype.h>
#include <inttypes.h>

#define NMETRICS 40 /* fields of tl_stats */

/* ---------------------------------------------------------------------------------------------
 * A parser for the exposition format, strict about what tl_metrics_text promises.
 * ------------------------------------------------------------------------------------------- */

typedef struct sample {
  char name[96];
  bool counter;
  uint64_t value;
} sample;

typedef struct parsed {
  sample s[NMETRICS + 8]; /* room for a few too many, which the tests then report */
  size_t n;
} parsed;

/* [a-zA-Z_:][a-zA-Z0-9_:]*, the exposition format's metric name. */
static bool valid_name(const char *p, size_t n) {
  if (n == 0 || !(isalpha((unsigned char)p[0]) || p[0] == '_' || p[0] == ':'))
    return false;
  for (size_t i = 1; i < n; i++)
    if (!(isalnum((unsigned char)p[i]) || p[i] == '_' || p[i] == ':'))
      return false;
  return true;
}

/* The line starting at *pos (without its newline), advancing *pos past the newline. */
static const char *next_line(const char *text, size_t *pos, size_t *n) {
  const char *line = text + *pos;
  const char *nl = strchr(line, '\n');
  ck_assert_msg(nl != NULL, "line without a newline: \"%s\"", line);
  *n = (size_t)(nl - line);
  *pos += *n + 1;
  return line;
}

/* Parses text; fails the test at the first line that is not as promised. */
static void parse(const char *text, parsed *out) {
  size_t len = strlen(text);
  ck_assert_msg(len > 0 && text[len - 1] == '\n', "the text does not end with a newline");
  out->n = 0;
  size_t pos = 0;
  while (pos < len) {
    ck_assert_msg(out->n < sizeof out->s / sizeof out->s[0], "too many metrics");
    sample *sm = &out->s[out->n];
    size_t n;
    /* # HELP name sentence */
    const char *line = next_line(text, &pos, &n);
    ck_assert_msg(n > 7 && strncmp(line, "# HELP ", 7) == 0, "not a HELP line: %.*s", (int)n, line);
    const char *name = line + 7;
    const char *sp = memchr(name, ' ', n - 7);
    ck_assert_msg(sp != NULL && sp + 1 < line + n, "HELP line without a sentence: %.*s", (int)n,
                  line);
    size_t nlen = (size_t)(sp - name);
    ck_assert_msg(valid_name(name, nlen), "bad metric name in: %.*s", (int)n, line);
    ck_assert_msg(nlen < sizeof sm->name, "name too long: %.*s", (int)n, line);
    memcpy(sm->name, name, nlen);
    sm->name[nlen] = '\0';
    ck_assert_msg(strncmp(sm->name, "taskledger_", 11) == 0, "not a taskledger_ name: %s",
                  sm->name);
    for (size_t i = 0; i < out->n; i++)
      ck_assert_msg(strcmp(out->s[i].name, sm->name) != 0, "metric %s appears twice", sm->name);
    ck_assert_msg(pos < len, "%s: no TYPE line", sm->name);
    /* # TYPE name gauge|counter */
    line = next_line(text, &pos, &n);
    char want[160];
    snprintf(want, sizeof want, "# TYPE %s ", sm->name);
    size_t wlen = strlen(want);
    ck_assert_msg(n > wlen && strncmp(line, want, wlen) == 0, "%s: not its TYPE line: %.*s",
                  sm->name, (int)n, line);
    const char *type = line + wlen;
    size_t tlen = n - wlen;
    if (tlen == 7 && strncmp(type, "counter", 7) == 0)
      sm->counter = true;
    else if (tlen == 5 && strncmp(type, "gauge", 5) == 0)
      sm->counter = false;
    else
      ck_abort_msg("%s: type is %.*s", sm->name, (int)tlen, type);
    /* Prometheus naming: counters, and only they, end in _total. */
    bool total = nlen > 6 && strcmp(sm->name + nlen - 6, "_total") == 0;
    ck_assert_msg(total == sm->counter, "%s is a %s", sm->name, sm->counter ? "counter" : "gauge");
    ck_assert_msg(pos < len, "%s: no sample line", sm->name);
    /* name value */
    line = next_line(text, &pos, &n);
    ck_assert_msg(n > nlen + 1 && strncmp(line, sm->name, nlen) == 0 && line[nlen] == ' ',
                  "%s: not its sample line: %.*s", sm->name, (int)n, line);
    uint64_t v = 0;
    for (size_t i = nlen + 1; i < n; i++) {
      ck_assert_msg(isdigit((unsigned char)line[i]), "%s: value is not a whole number: %.*s",
                    sm->name, (int)n, line);
      v = v * 10 + (uint64_t)(line[i] - '0');
    }
    sm->value = v;
    out->n++;
  }
}

/* The metric every field of st must give, by its name, type and value. */
static void expected(const tl_stats *st, sample want[NMETRICS]) {
#define G(f)                                                                                       \
  { "taskledger_" #f, false, (uint64_t)st->f }
#define C(f)                                                                                       \
  { "taskledger_" #f "_total", true, st->f }
  const sample all[NMETRICS] = {
      G(executors_alive),
      G(executors_decommissioning),
      G(executors_pending_loss),
      G(executors_recovering),
      G(tombstones),
      G(hosts),
      G(racks),
      G(pools),
      G(places),
      G(tasksets_active),
      G(tasksets_zombie),
      G(attempts_running),
      G(attempts_frozen),
      G(tasks_pending),
      G(tasks_speculatable),
      G(events_queued),
      G(mem_live_bytes),
      G(mem_live_blocks),
      C(launched),
      C(succeeded),
      C(failed),
      C(killed),
      C(stale_updates),
      C(rejected_updates),
      C(rejected_offers),
      C(executors_lost),
      C(tasksets_released),
      G(executors_excluded),
      G(nodes_excluded),
      G(tasksets_with_failures),
      G(tasksets_unschedulable),
      C(excluded_offers),
      C(tasksets_unschedulable_aborted),
      C(pending_loss_timeouts),
      C(recovery_timeouts),
      C(reconciled),
      C(reconcile_lost),
      C(reconcile_unknown),
      C(reconcile_adopted),
      G(tasksets_unplaceable),
  };
#undef G
#undef C
  memcpy(want, all, sizeof all);
}

/* The text of e's scheduler, which must fit in 16 KiB (it is about 4). */
static void text_of(tlt_env *e, char *buf, size_t len) {
  size_t needed = SIZE_MAX;
  int rc = tl_metrics_text(e->s, buf, len, &needed);
  ck_assert_msg(rc == TL_OK, "tl_metrics_text: %s", tl_err_name(rc));
  ck_assert_uint_lt(needed, len);
  ck_assert_uint_eq(strlen(buf), needed);
}

/* The text parses, and every metric is its field of tl_stats taken just before (nothing runs
 * between: the values must be equal, not merely close). Returns the parsed text. */
#define verify(e, p) verify_(__LINE__, e, p)
static void verify_(int line, tlt_env *e, parsed *p) {
  tlt_line = line;
  tl_stats st = tlt_stats(e);
  char text[16384];
  text_of(e, text, sizeof text);
  tl_stats after = tlt_stats(e);
  tlt_assert_stats_same(&st, &after, "tl_metrics_text");
  parse(text, p);
  sample want[NMETRICS];
  expected(&st, want);
  ck_assert_msg(p->n == NMETRICS, "line %d: %zu metrics, want %d", line, p->n, NMETRICS);
  for (size_t i = 0; i < NMETRICS; i++) {
    /* In the struct's order, which the text follows. */
    const sample *got = &p->s[i];
    ck_assert_msg(strcmp(got->name, want[i].name) == 0, "line %d: metric %zu is %s, want %s", line,
                  i, got->name, want[i].name);
    ck_assert_msg(got->counter == want[i].counter, "line %d: %s has the wrong type", line,
                  got->name);
    ck_assert_msg(got->value == want[i].value,
                  "line %d: %s is %" PRIu64 ", tl_stats says %" PRIu64 "\n%s", line, got->name,
                  got->value, want[i].value, text);
  }
  TLT_CHECK(e);
}

/* The value of one metric in a parsed text. */
static uint64_t value_of(const parsed *p, const char *name) {
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->s[i].name, name) == 0)
      return p->s[i].value;
  ck_abort_msg("no metric %s", name);
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Tests.
 * ------------------------------------------------------------------------------------------- */

START_TEST(text_of_an_empty_scheduler) {
  tlt_env *e = tlt_new(NULL);
  parsed p;
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_pools"), 1); /* the default pool */
  ck_assert_uint_eq(value_of(&p, "taskledger_launched_total"), 0);
  ck_assert_uint_eq(value_of(&p, "taskledger_mem_live_bytes"), e->base_bytes);
  ck_assert_uint_eq(value_of(&p, "taskledger_mem_live_blocks"), e->base_blocks);
  tlt_end(e);
}
END_TEST

START_TEST(values_follow_every_state_change) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 0; /* only the pending-loss deadline expires below */
  cfg.pending_loss_timeout_ns = 10 * TLT_SEC;
  tlt_env *e = tlt_new(&cfg);
  parsed p;
  verify(e, &p);
  tlt_add(e, "e1", "h1", "r1", 4);
  verify(e, &p);
  tlt_add(e, "e2", "h2", "r1", 4);
  tlt_add(e, "e3", "h3", NULL, 2);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_executors_alive"), 3);
  ck_assert_uint_eq(value_of(&p, "taskledger_hosts"), 3);
  ck_assert_uint_eq(value_of(&p, "taskledger_racks"), 1);
  tl_taskset_id a = tlt_submit(e, 0, 0, 0, 6);
  verify(e, &p);
  tl_taskset_id b = tlt_submit(e, 1, 0, 1, 6);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_tasksets_active"), 2);
  ck_assert_uint_eq(value_of(&p, "taskledger_tasks_pending"), 12);
  tl_launch l[10];
  tl_offer o[3] = {{"e1", 4}, {"e2", 4}, {"e3", 2}};
  ck_assert_uint_eq(tlt_offers(e, o, 3, l, 10), 10);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_launched_total"), 10);
  ck_assert_uint_eq(value_of(&p, "taskledger_attempts_running"), 10);
  ck_assert_uint_eq(value_of(&p, "taskledger_tasks_pending"), 2);
  /* An offer from an executor that does not exist launches nothing and is counted. */
  ck_assert_uint_eq(tlt_offer(e, "nobody", 4, l, 1), 0);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_rejected_offers_total"), 1);
  /* Status updates: RUNNING, FINISHED, FAILED, KILLED, a stale one and a foreign one. */
  for (size_t i = 0; i < 10; i++)
    tlt_run(e, l[i].executor_id, l[i].tid);
  verify(e, &p);
  size_t ia = 0, ib = 0;
  while (l[ia].taskset != a)
    ia++;
  while (l[ib].taskset != b)
    ib++;
  tlt_succeed(e, l[ia].executor_id, l[ia].tid);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_succeeded_total"), 1);
  tlt_fail(e, l[ib].executor_id, l[ib].tid, TL_END_EXCEPTION);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_failed_total"), 1);
  tl_update u = {.state = TL_TASK_FINISHED};
  TLT_UPDATE_ERR(e, TL_ESTALE, tl_status_update(e->s, l[ia].executor_id, l[ia].tid, &u));
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_stale_updates_total"), 1);
  size_t other = 0; /* an attempt still running on another executor than l[ia]'s */
  while (other == ia || other == ib || strcmp(l[other].executor_id, l[ia].executor_id) == 0)
    other++;
  TLT_UPDATE_ERR(e, TL_EOWNER, tl_status_update(e->s, l[ia].executor_id, l[other].tid, &u));
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_rejected_updates_total"), 1);
  tlt_killed(e, l[other].executor_id, l[other].tid);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_killed_total"), 1);
  /* A decommission, then a loss in two phases on e2. */
  TLT_OK(e, tl_executor_decommission(e->s, "e1", "draining"));
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_executors_decommissioning"), 1);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_executors_pending_loss"), 1);
  ck_assert_uint_gt(value_of(&p, "taskledger_attempts_frozen"), 0);
  ck_assert_uint_eq(value_of(&p, "taskledger_executors_lost_total"), 1);
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_tombstones"), 1);
  ck_assert_uint_eq(value_of(&p, "taskledger_attempts_frozen"), 0);
  /* A pending loss whose reason never comes: the deadline ends it. */
  tlt_lose(e, "e3", TL_LOSS_PENDING, false);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_pending_loss_timeouts_total"), 0);
  tlt_advance_tick(e, 11 * TLT_SEC);
  verify(e, &p);
  ck_assert_uint_eq(value_of(&p, "taskledger_pending_loss_timeouts_total"), 1);
  ck_assert_uint_eq(value_of(&p, "taskledger_executors_pending_loss"), 0);
  ck_assert_uint_eq(value_of(&p, "taskledger_tombstones"), 2);
  ck_assert_uint_eq(value_of(&p, "taskledger_executors_lost_total"), 2);
  /* A new executor runs what is left; then everything is cancelled and released. */
  tlt_add(e, "e4", "h4", NULL, 8);
  size_t n = tlt_offer(e, "e4", 8, l, 8);
  ck_assert_uint_gt(n, 0);
  verify(e, &p);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "done"));
  TLT_OK(e, tl_cancel_stage(e->s, 1, "done"));
  verify(e, &p);
  tlt_end(e);
}
END_TEST

START_TEST(exclusion_metrics_follow_failures) {
  tl_config cfg = tlt_config();
  cfg.exclude_on_failure = true;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 4), 2);
  parsed p;
  for (int i = 0; i < 2; i++) {
    tlt_fail(e, "e1", l[i].tid, TL_END_EXCEPTION);
    verify(e, &p);
  }
  ck_assert_uint_gt(value_of(&p, "taskledger_tasksets_with_failures"), 0);
  tlt_end(e);
}
END_TEST

START_TEST(sizing_and_truncation) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 3), 3);
  char full[16384];
  text_of(e, full, sizeof full);
  size_t n = strlen(full);
  /* len 0 with buf NULL: the size, nothing written. */
  size_t needed = 0;
  TLT_OK(e, tl_metrics_text(e->s, NULL, 0, &needed));
  ck_assert_uint_eq(needed, n);
  /* len 0 with a buffer: nothing written either. */
  char *buf = malloc(n + 16);
  ck_assert_ptr_nonnull(buf);
  memset(buf, 'Z', n + 16);
  needed = 0;
  TLT_OK(e, tl_metrics_text(e->s, buf, 0, &needed));
  ck_assert_uint_eq(needed, n);
  ck_assert_int_eq(buf[0], 'Z');
  /* needed NULL is fine. */
  TLT_OK(e, tl_metrics_text(e->s, NULL, 0, NULL));
  /* Exactly needed + 1 bytes: the whole text and its NUL, nothing past. */
  memset(buf, 'Z', n + 16);
  needed = 0;
  TLT_OK(e, tl_metrics_text(e->s, buf, n + 1, &needed));
  ck_assert_uint_eq(needed, n);
  ck_assert_str_eq(buf, full);
  ck_assert_int_eq(buf[n + 1], 'Z');
  /* One byte less: cut, marked "...\n", NUL-terminated within len, TL_OK, needed unchanged. */
  memset(buf, 'Z', n + 16);
  needed = 0;
  TLT_OK(e, tl_metrics_text(e->s, buf, n, &needed));
  ck_assert_uint_eq(needed, n);
  ck_assert_uint_eq(strlen(buf), n - 1);
  ck_assert_str_eq(buf + n - 5, "...\n");
  ck_assert_int_eq(strncmp(buf, full, n - 5), 0);
  ck_assert_int_eq(buf[n], 'Z');
  /* Smaller buffers: a prefix, the mark when there is room for it, never past len. */
  const size_t lens[] = {1, 2, 4, 5, 6, 64, 100, n / 2};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    size_t len = lens[i];
    memset(buf, 'Z', n + 16);
    needed = 0;
    TLT_OK(e, tl_metrics_text(e->s, buf, len, &needed));
    ck_assert_uint_eq(needed, n);
    size_t m = strlen(buf);
    ck_assert_uint_eq(m, len - 1);
    ck_assert_int_eq(buf[len], 'Z');
    if (len >= 5) {
      ck_assert_msg(strcmp(buf + m - 4, "...\n") == 0, "len %zu: no mark: %s", len, buf);
      ck_assert_int_eq(strncmp(buf, full, m - 4), 0);
    } else {
      ck_assert_int_eq(strncmp(buf, full, m), 0);
    }
  }
  free(buf);
  tlt_end(e);
}
END_TEST

START_TEST(bad_arguments_change_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  char buf[64];
  memset(buf, 'Z', sizeof buf);
  size_t needed = 12345;
  TLT_ERR(e, TL_EINVAL, tl_metrics_text(NULL, buf, sizeof buf, &needed));
  ck_assert_uint_eq(needed, 0);
  ck_assert_int_eq(buf[0], 'Z');
  needed = 12345;
  TLT_ERR(e, TL_EINVAL, tl_metrics_text(NULL, NULL, 0, &needed));
  ck_assert_uint_eq(needed, 0);
  TLT_ERR(e, TL_EINVAL, tl_metrics_text(NULL, NULL, 0, NULL));
  needed = 12345;
  TLT_ERR(e, TL_EINVAL, tl_metrics_text(e->s, NULL, 1, &needed));
  ck_assert_uint_eq(needed, 0);
  TLT_ERR(e, TL_EINVAL, tl_metrics_text(e->s, NULL, sizeof buf, NULL));
  parsed p;
  verify(e, &p);
  tlt_end(e);
}
END_TEST

/* Inspection may be called from inside a callback: the text is taken under the lock there too
 * and shows the state the callback's call left. */
static void metrics_in_callback(tlt_env *e, const tlt_event *ev) {
  if (ev->type != TLT_EV_STARTED)
    return;
  size_t *seen = e->hook_ud;
  char text[16384];
  size_t needed = 0;
  int rc = tl_metrics_text(e->s, text, sizeof text, &needed);
  ck_assert_int_eq(rc, TL_OK);
  ck_assert_uint_lt(needed, sizeof text);
  parsed p;
  parse(text, &p);
  ck_assert_uint_eq(p.n, NMETRICS);
  seen[0]++;
  seen[1] = (size_t)value_of(&p, "taskledger_launched_total");
}

START_TEST(callable_from_a_callback) {
  tlt_env *e = tlt_new(NULL);
  size_t seen[2] = {0, 0};
  e->hook = metrics_in_callback;
  e->hook_ud = seen;
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 3, l, 3), 3);
  ck_assert_uint_eq(seen[0], 3);
  ck_assert_uint_eq(seen[1], 3); /* the round had launched all three before any was delivered */
  e->hook = NULL;
  parsed p;
  verify(e, &p);
  tlt_end(e);
}
END_TEST

/* Read-only: no journal line. */
static void count_line(void *ud, const char *line) {
  (void)line;
  (*(size_t *)ud)++;
}

START_TEST(not_journaled) {
  size_t lines = 0;
  tl_config cfg = tlt_config();
  cfg.journal = count_line;
  cfg.journal_ud = &lines;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  size_t before = lines;
  ck_assert_uint_gt(before, 0);
  char text[16384];
  for (int i = 0; i < 3; i++)
    text_of(e, text, sizeof text);
  TLT_OK(e, tl_metrics_text(e->s, NULL, 0, NULL));
  tlt_add(e, "e2", "h2", NULL, 2); /* delivers anything queued */
  ck_assert_uint_eq(lines, before + 1);
  tlt_end(e);
}
END_TEST

Suite *tl_metrics_suite(void) {
  Suite *s = suite_create("metrics");
  TCase *tc = tlt_tcase(s, "text");
  tcase_add_test(tc, text_of_an_empty_scheduler);
  tcase_add_test(tc, values_follow_every_state_change);
  tcase_add_test(tc, exclusion_metrics_follow_failures);
  tc = tlt_tcase(s, "buffer");
  tcase_add_test(tc, sizing_and_truncation);
  tcase_add_test(tc, bad_arguments_change_nothing);
  tc = tlt_tcase(s, "context");
  tcase_add_test(tc, callable_from_a_callback);
  tcase_add_test(tc, not_journaled);
  return s;
}
