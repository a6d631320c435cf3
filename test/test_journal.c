/* The call journal: the documented line format, lock order for calls made from callbacks,
 * calls that fail (journaled with their result) and calls that cannot be journaled (TL_ENOMEM,
 * nothing changed), and the replayer: journals replay to the same state, and a journal that
 * does not match the library is reported at the line where it stops matching.
 */
#include "harness.h"

#include "../examples/replay/replay.h"

/* Every journal line, in order. */
typedef struct capture {
  char **lines;
  size_t n, cap;
} capture;

static void capture_line(void *ud, const char *line) {
  capture *c = ud;
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 64;
    c->lines = realloc(c->lines, c->cap * sizeof *c->lines);
    ck_assert_ptr_nonnull(c->lines);
  }
  c->lines[c->n] = strdup(line);
  ck_assert_ptr_nonnull(c->lines[c->n]);
  c->n++;
}

static void capture_free(capture *c) {
  for (size_t i = 0; i < c->n; i++)
    free(c->lines[i]);
  free(c->lines);
  memset(c, 0, sizeof *c);
}

/* The journal so far as one text, lines ended by newlines (caller frees). */
static char *capture_text(const capture *c, size_t nlines) {
  size_t len = 1;
  for (size_t i = 0; i < nlines; i++)
    len += strlen(c->lines[i]) + 1;
  char *text = malloc(len), *p = text;
  ck_assert_ptr_nonnull(text);
  for (size_t i = 0; i < nlines; i++)
    p += sprintf(p, "%s\n", c->lines[i]);
  *p = '\0';
  return text;
}

/* The line that starts with the call's time and then op (the first such line from index from). */
static size_t find_line(const capture *c, size_t from, const char *needle) {
  for (size_t i = from; i < c->n; i++)
    if (strstr(c->lines[i], needle) != NULL)
      return i;
  ck_abort_msg("no journal line contains \"%s\"", needle);
  return 0;
}

static tlt_env *journaled(capture *c, tl_config *cfg) {
  memset(c, 0, sizeof *c);
  cfg->journal = capture_line;
  cfg->journal_ud = c;
  return tlt_new(cfg);
}

/* Compares two stats except mem_live_bytes: a replay runs without a journal, and its event
 * arrays may end with a different capacity. */
static void assert_same_state(const tl_stats *a, const tl_stats *b) {
  tlt_assert_stats_same_but_memory(a, b, "replayed state");
  ck_assert_uint_eq(a->mem_live_blocks, b->mem_live_blocks);
}

/* The journal's first mid_lines lines replay to mid (not drained yet), the whole journal
 * replays clean and drained; then the capture is freed. */
static void assert_replays(capture *c, size_t mid_lines, const tl_stats *mid) {
  char *text = capture_text(c, mid_lines);
  tlr_report r;
  int verdict = tlr_replay_text(text, NULL, &r);
  ck_assert_msg(verdict == TLR_NOT_DRAINED, "%d at line %zu: %s", verdict, r.bad_line, r.why);
  assert_same_state(mid, &r.final);
  free(text);
  text = capture_text(c, c->n);
  verdict = tlr_replay_text(text, NULL, &r);
  ck_assert_msg(verdict == TLR_OK, "%d at line %zu: %s", verdict, r.bad_line, r.why);
  free(text);
  capture_free(c);
}

START_TEST(lines_follow_the_documented_format) {
  capture c;
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 2;
  tlt_env *e = journaled(&c, &cfg);
  ck_assert_uint_ge(c.n, 2);
  ck_assert_str_eq(c.lines[0], "# taskledger journal v3");
  ck_assert_str_eq(c.lines[1], "config mode=FIFO cpus_per_task=1 max_task_failures=2 "
                               "heartbeat_timeout_ns=120000000000 "
                               "pending_loss_timeout_ns=120000000000 max_tombstones=1024 "
                               "tombstone_ttl_ns=600000000000 max_result_bytes=1073741824 "
                               "speculation=0 speculation_interval_ns=100000000 "
                               "speculation_multiplier=3 speculation_quantile=0.90000000000000002 "
                               "speculation_min_runtime_ns=100000000 locality_wait_ns=3000000000 "
                               "locality_wait_process_ns=18446744073709551615 "
                               "locality_wait_node_ns=18446744073709551615 "
                               "locality_wait_rack_ns=18446744073709551615 start=1000000000");

  tlt_add(e, "e1", "h1", NULL, 2);
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000000 add \"e1\" \"h1\" - cores=2 = OK");
  tl_taskset_id ts = tlt_submit(e, 3, 1, 7, 2);
  ck_assert_str_eq(c.lines[c.n - 1],
                   "@1000000000 submit stage=3 attempt=1 priority=7 ntasks=2 cpus=0 "
                   "shuffle_map=0 barrier=0 - = OK ts=1");
  ck_assert_uint_eq(ts, 1);
  e->now += 5;
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000005 offers cap=2 n=1 \"e1\" 2 = OK launched=2 tid=1");
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);
  ck_assert_str_eq(
      c.lines[c.n - 1],
      "@1000000005 update \"e1\" tid=1 FAILED EXCEPTION \"test failure\" result=0 size=0 = OK");

  /* A failed call is journaled with its result; an invalid one (TL_EINVAL) is not. */
  size_t before = c.n;
  TLT_ERR(e, TL_ENOENT, tl_executor_heartbeat(e->s, "nobody"));
  ck_assert_uint_eq(c.n, before + 1);
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000005 heartbeat \"nobody\" = ENOENT");
  TLT_ERR(e, TL_EINVAL, tl_executor_heartbeat(e->s, ""));
  ck_assert_uint_eq(c.n, before + 1);

  /* Strings are quoted, with quotes, backslashes and non-printable bytes escaped. */
  tl_loss_reason why = {TL_LOSS_EXITED, true, -9, "said \"bye\"\\\n\xc3\xa9"};
  TLT_OK(e, tl_executor_lost(e->s, "e1", &why));
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000005 lost \"e1\" EXITED app=1 exit=-9 "
                                     "\"said \\\"bye\\\"\\\\\\x0a\\xc3\\xa9\" = OK");
  e->now += 1;
  tl_tick(e->s);
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000006 tick = OK");
  tlt_end(e);
  ck_assert_str_eq(c.lines[c.n - 1], "@601000000007 free = OK");
  capture_free(&c);
}
END_TEST

/* A DAG layer that submits stage 1 from the task_ended of stage 0's last task. */
static void submit_next_stage(tlt_env *e, const tlt_event *ev) {
  if (ev->type == TLT_EV_ENDED && ev->task.stage_id == 0 && ev->end_kind == TL_END_SUCCESS &&
      tlt_count(e, 0, TLT_EV_ENDED) == 4) {
    tl_taskset_id id;
    ck_assert_int_eq(tlt_submit_rc(e, 1, 0, 0, 4, 0, &id), TL_OK);
  }
}

START_TEST(calls_from_callbacks_are_journaled_in_lock_order) {
  capture c;
  tl_config cfg = tlt_config();
  tlt_env *e = journaled(&c, &cfg);
  e->hook = submit_next_stage;
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "e1", l[i].tid);
  /* The submission made inside the last task_ended comes right after the update whose event
   * triggered it, before any later call. */
  size_t last = find_line(&c, 0, "tid=4 FINISHED");
  ck_assert_uint_lt(last + 1, c.n);
  ck_assert_ptr_nonnull(strstr(c.lines[last + 1], " submit stage=1 "));
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  ck_assert_ptr_nonnull(strstr(c.lines[last + 2], " offers "));
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "e1", l[i].tid);
  tlt_end(e);

  /* The journal replays to the end, drained, through the same number of calls. */
  char *text = capture_text(&c, c.n);
  tlr_report r;
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_OK);
  ck_assert(r.drained);
  ck_assert_uint_eq(r.submitted, 2);
  ck_assert_uint_eq(r.released, 2);
  ck_assert_uint_eq(r.calls, c.n - 3); /* all but the header, the config and the free line */
  free(text);
  capture_free(&c);
}
END_TEST

/* A run through every kind of call, with a two-phase loss, an abort, a cancellation and a
 * partition completed from another attempt; the journal taken at several points must replay
 * to the same tl_stats as the run had at that point. */
START_TEST(journals_replay_to_the_same_state) {
  capture c;
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 2;
  cfg.max_tombstones = 2;
  tlt_env *e = journaled(&c, &cfg);
  tl_stats at[4];
  size_t lines_at[4];
  int points = 0;

  tlt_add(e, "e1", "h1", "r1", 4);
  tlt_add(e, "e2", "h2", "r1", 4);
  tlt_add(e, "e3", "h2", "r1", 2);
  tl_taskset_id a = tlt_submit(e, 0, 0, 0, 6);
  tlt_submit_cpus(e, 1, 0, 1, 3, 2);
  tl_offer o[3] = {{"e1", 4}, {"e2", 4}, {"e3", 2}};
  tl_launch l[16];
  size_t n = tlt_offers(e, o, 3, l, 16);
  ck_assert_uint_ge(n, 6);
  for (size_t i = 0; i < n; i++)
    tlt_run(e, l[i].executor_id, l[i].tid);
  tlt_fail(e, l[0].executor_id, l[0].tid, TL_END_EXCEPTION);
  tlt_killed(e, l[1].executor_id, l[1].tid);
  TLT_OK(e, tl_executor_decommission(e->s, "e3", "draining"));
  TLT_OK(e, tl_kill_task(e->s, l[2].tid, true, "speculation lost"));
  at[points] = tlt_stats(e);
  lines_at[points++] = c.n;

  tl_tid on_e2 = 0; /* an attempt still running on e2, frozen by its pending loss */
  for (size_t i = 2; i < n && on_e2 == 0; i++)
    if (strcmp(l[i].executor_id, "e2") == 0)
      on_e2 = l[i].tid;
  ck_assert_uint_ne(on_e2, 0);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  TLT_UPDATE_ERR(e, TL_ESTALE, tl_status_update(e->s, "e2", on_e2, &(tl_update){0}));
  e->now += 3 * TLT_SEC;
  TLT_OK(e, tl_executor_heartbeat(e->s, "e1"));
  tlt_lose(e, "e2", TL_LOSS_EXITED, true);
  at[points] = tlt_stats(e);
  lines_at[points++] = c.n;

  tlt_submit(e, 0, 1, 0, 6); /* supersedes task set a */
  TLT_OK(e, tl_partition_completed(e->s, 0, 2));
  TLT_OK(e, tl_kill_stage(e->s, 1, false, NULL));
  TLT_OK(e, tl_cancel_stage(e->s, 1, "user"));
  n = tlt_offer(e, "e1", 4, l, 16);
  tlt_advance_tick(e, 200 * TLT_SEC); /* every executor's heartbeat expires */
  at[points] = tlt_stats(e);
  lines_at[points++] = c.n;
  ck_assert_int_eq(tl_taskset_get(e->s, a, &(tl_taskset_status){0}), TL_ENOENT);
  tlt_end(e);

  for (int p = 0; p < points; p++) {
    char *text = capture_text(&c, lines_at[p]);
    tlr_report r;
    int verdict = tlr_replay_text(text, NULL, &r);
    ck_assert_msg(verdict == TLR_OK || verdict == TLR_NOT_DRAINED, "point %d: %d, line %zu: %s", p,
                  verdict, r.bad_line, r.why);
    assert_same_state(&at[p], &r.final);
    free(text);
  }
  char *text = capture_text(&c, c.n);
  tlr_report r;
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_OK);
  free(text);
  capture_free(&c);
}
END_TEST

/* Events are not in the journal: they follow from the calls, so a replay makes the same ones.
 * Every way a loss begins and ends (a two-phase loss ended by a second call and one by the
 * pending-loss timeout, one phase, heartbeat expiry) replays to as many executor_lost and
 * executor_removed events as the run made, a loss left pending included. */
START_TEST(journals_replay_every_loss_to_its_end) {
  capture c;
  memset(&c, 0, sizeof c);
  tl_config cfg = tlt_config();
  cfg.pending_loss_timeout_ns = 10 * TLT_SEC;
  cfg.heartbeat_timeout_ns = 30 * TLT_SEC;
  cfg.journal = capture_line;
  cfg.journal_ud = &c;
  tlt_env *e = tlt_new_edit(&cfg, tlt_record_removed);
  const char *ids[] = {"e1", "e2", "e3", "e4", "e5"};
  for (int i = 0; i < 5; i++)
    tlt_add(e, ids[i], "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 5);
  tl_offer o[5] = {{"e1", 1}, {"e2", 1}, {"e3", 1}, {"e4", 1}, {"e5", 1}};
  tl_launch l[5];
  ck_assert_uint_eq(tlt_offers(e, o, 5, l, 5), 5);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);   /* second phase by a call */
  tlt_lose(e, "e2", TL_LOSS_PENDING, false); /* ended by the timeout */
  tlt_lose(e, "e3", TL_LOSS_KILLED, false);  /* one phase */
  tlt_advance_tick(e, 10 * TLT_SEC);
  TLT_OK(e, tl_executor_heartbeat(e->s, "e4"));
  tlt_lose(e, "e4", TL_LOSS_PENDING, false); /* still pending when the journal is cut */
  tlt_advance_tick(e, 9 * TLT_SEC);
  size_t cut = c.n;
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_LOST), 4);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_REMOVED), 3);
  tlt_advance_tick(e, 21 * TLT_SEC); /* e5's heartbeat expires, e4's pending loss times out */
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_LOST), 5);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_REMOVED), 5);
  tlt_end(e);

  char *text = capture_text(&c, cut);
  tlr_report r;
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_NOT_DRAINED);
  ck_assert_uint_eq(r.lost, 4);
  ck_assert_uint_eq(r.removed, 3);
  ck_assert_uint_eq(r.final.executors_pending_loss, 1);
  free(text);
  text = capture_text(&c, c.n);
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_OK);
  ck_assert_uint_eq(r.lost, 5);
  ck_assert_uint_eq(r.removed, 5);
  free(text);
  capture_free(&c);
}
END_TEST

/* A batch of status updates is journaled as the single updates it is equivalent to, one line
 * each with its own code, in order; a batch refused as a whole writes nothing; the journal
 * replays to the same state. */
START_TEST(batched_updates_are_journaled_as_single_updates_and_replay) {
  capture c;
  tl_config cfg = tlt_config();
  tlt_env *e = journaled(&c, &cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit(e, 0, 0, 0, 6);
  tl_launch l[4], m[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, m, 1), 1);
  size_t before = c.n;
  TLT_ERR(e, TL_ENOENT, tl_status_updates(e->s, "never", &l[0].tid, &(tl_update){0}, 1, NULL));
  ck_assert_uint_eq(c.n, before); /* refused as a whole: no line */
  tl_tid t[5] = {l[0].tid, l[0].tid, l[1].tid, m[0].tid, l[2].tid};
  tl_update u[5] = {{.state = TL_TASK_RUNNING},
                    {.state = TL_TASK_FINISHED, .message = "done"},
                    {.state = TL_TASK_FAILED, .failure = TL_END_EXCEPTION},
                    {.state = TL_TASK_FINISHED},
                    {.state = TL_TASK_KILLED}};
  int results[5];
  TLT_OK(e, tl_status_updates(e->s, "e1", t, u, 5, results));
  ck_assert_int_eq(results[3], TL_EOWNER);
  ck_assert_uint_eq(c.n, before + 5);
  const char *want[5] = {
      "RUNNING - - result=0 size=0 = OK", "FINISHED - \"done\" result=0 size=0 = OK",
      "FAILED EXCEPTION - result=0 size=0 = OK", "FINISHED - - result=0 size=0 = EOWNER",
      "KILLED - - result=0 size=0 = OK"};
  for (size_t i = 0; i < 5; i++) {
    char head[64];
    snprintf(head, sizeof head, " update \"e1\" tid=%llu ", (unsigned long long)t[i]);
    const char *line = c.lines[before + i];
    ck_assert_msg(strstr(line, head) != NULL && strstr(line, want[i]) != NULL, "line %zu: %s", i,
                  line);
  }
  tl_stats mid = tlt_stats(e);
  size_t mid_lines = c.n;
  tl_launch more[8];
  size_t n;
  while ((n = tlt_offer(e, "e1", 4, more, 8)) > 0)
    for (size_t i = 0; i < n; i++)
      tlt_succeed(e, "e1", more[i].tid);
  tlt_succeed(e, "e1", l[3].tid);
  tlt_succeed(e, "e2", m[0].tid);
  while ((n = tlt_offer(e, "e1", 4, more, 8)) > 0)
    for (size_t i = 0; i < n; i++)
      tlt_succeed(e, "e1", more[i].tid);
  tlt_end(e);
  assert_replays(&c, mid_lines, &mid);
}
END_TEST

START_TEST(a_journal_that_does_not_match_is_reported_at_its_line) {
  capture c;
  tl_config cfg = tlt_config();
  tlt_env *e = journaled(&c, &cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  tlt_end(e);

  /* A result changed: the replay diverges on that line (1-based, the header is line 1). */
  size_t i = find_line(&c, 0, "tid=2 FINISHED");
  char *saved = c.lines[i];
  c.lines[i] = strdup("@1000000000 update \"e1\" tid=2 FINISHED - - result=1 size=0 = ESTALE");
  char *text = capture_text(&c, c.n);
  tlr_report r;
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_BROKEN);
  ck_assert_uint_eq(r.bad_line, i + 1);
  ck_assert_ptr_nonnull(strstr(r.why, "diverged"));
  free(text);
  free(c.lines[i]);

  /* A launch count changed. */
  c.lines[i] = saved;
  size_t k = find_line(&c, 0, " offers ");
  saved = c.lines[k];
  c.lines[k] = strdup("@1000000000 offers cap=2 n=1 \"e1\" 2 = OK launched=1 tid=1");
  text = capture_text(&c, c.n);
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_BROKEN);
  ck_assert_uint_eq(r.bad_line, k + 1);
  free(text);
  free(c.lines[k]);
  c.lines[k] = saved;

  /* Cut before the last update: every call matches, but a task set is retained, and the report
   * says which attempt holds it. */
  text = capture_text(&c, i);
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_NOT_DRAINED);
  ck_assert(!r.drained);
  ck_assert_ptr_nonnull(strstr(r.why, "tid 2"));
  free(text);

  /* Not a journal, a later version, a line that does not parse. */
  ck_assert_int_eq(tlr_replay_text("hello\n", NULL, &r), TLR_BAD_INPUT);
  ck_assert_int_eq(tlr_replay_text("# taskledger journal v3\n", NULL, &r), TLR_BAD_INPUT);
  ck_assert_int_eq(
      tlr_replay_text("# taskledger journal v1\nconfig start=0\n@0 add \"e1 = OK\n", NULL, &r),
      TLR_BAD_INPUT);
  ck_assert_uint_eq(r.bad_line, 3);
  ck_assert_int_eq(tlr_replay_text("# taskledger journal v1\n@0 tick = OK\n", NULL, &r),
                   TLR_BAD_INPUT);
  capture_free(&c);
}
END_TEST

/* With the journal on, a call needs one allocation more (its line, made first). When that one
 * fails the call fails before doing anything and is not journaled; when a later one fails the
 * call is journaled as TL_ENOMEM, and the replayer skips it. */
START_TEST(calls_out_of_memory_are_journaled_or_not_and_replay) {
  tlt_alloc_install();
  capture c;
  tl_config cfg = tlt_config();
  tlt_env *e = journaled(&c, &cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_executor_desc d = {.id = "e2", .host = "h2", .rack = "r2", .cores = 2};

  size_t before = c.n;
  tlt_alloc_fail_at(1); /* the journal line itself */
  TLT_ERR(e, TL_ENOMEM, tl_executor_add(e->s, &d));
  tlt_alloc_fail_at(0);
  ck_assert_uint_eq(c.n, before);

  tlt_alloc_fail_at(2); /* the first allocation of the registration */
  TLT_ERR(e, TL_ENOMEM, tl_executor_add(e->s, &d));
  tlt_alloc_fail_at(0);
  ck_assert_uint_eq(c.n, before + 1);
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000000 add \"e2\" \"h2\" \"r2\" cores=2 = ENOMEM");

  /* A tick that cannot journal does nothing and asks to be called again. */
  e->now += 200 * TLT_SEC;
  tlt_alloc_fail_at(1);
  ck_assert_uint_eq(tl_tick(e->s), 0);
  tlt_alloc_fail_at(0);
  TLT_CHECK(e);
  ck_assert_uint_eq(tlt_stats(e).executors_alive, 1);
  tl_stats now = tlt_stats(e);

  char *text = capture_text(&c, c.n);
  tlr_report r;
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_OK);
  ck_assert_uint_eq(r.skipped, 1);
  assert_same_state(&now, &r.final);
  free(text);
  tlt_end(e);
  capture_free(&c);
  tlt_alloc_restore();
}
END_TEST

/* Speculation decides by time: the journal's times must make the replay decide the same. */
START_TEST(journals_with_speculation_and_pools_replay_to_the_same_state) {
  capture c;
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  cfg.speculation = true;
  cfg.speculation_quantile = 0.5;
  cfg.speculation_multiplier = 1.5;
  cfg.speculation_min_runtime_ns = 0;
  tlt_env *e = journaled(&c, &cfg);
  TLT_OK(e, tl_pool_add(e->s, "etl", TL_FAIR, 2, 1));
  tlt_rebase(e);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 4, .pool = "etl"};
  tlt_submit_desc(e, &d);
  tl_launch l[4], x[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 4), 4);
  e->now += TLT_SEC / 100;
  tlt_succeed(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[1].tid);
  tlt_advance_tick(e, TLT_SEC / 5);
  ck_assert_uint_eq(tlt_stats(e).tasks_speculatable, 2);
  size_t n = tlt_offer(e, "e2", 4, x, 4);
  ck_assert_uint_eq(n, 2);
  tlt_succeed(e, "e2", x[0].tid);
  tl_stats mid = tlt_stats(e);
  size_t mid_lines = c.n;
  tlt_killed(e, "e1", x[0].index == l[2].index ? l[2].tid : l[3].tid);
  tlt_succeed(e, "e1", x[0].index == l[2].index ? l[3].tid : l[2].tid);
  tlt_killed(e, "e2", x[1].tid);
  tlt_end(e);

  assert_replays(&c, mid_lines, &mid);
}
END_TEST

/* Nested pools and pools made for unknown names: the config line says pool_auto_create, the
 * pool_add_child line its parent, and the journal replays to the same state. */
START_TEST(journals_with_nested_pools_replay_to_the_same_state) {
  capture c;
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  cfg.pool_auto_create = true;
  tlt_env *e = journaled(&c, &cfg);
  ck_assert_ptr_nonnull(strstr(c.lines[1], " pool_auto_create=1"));
  TLT_OK(e, tl_pool_add_child(e->s, NULL, "etl", TL_FAIR, 2, 1));
  TLT_OK(e, tl_pool_add_child(e->s, "etl", "nightly", TL_FIFO, 1, 2));
  TLT_ERR(e, TL_ENOENT, tl_pool_add_child(e->s, "none", "x", TL_FIFO, 1, 0));
  find_line(&c, 0, "pool_add_child \"etl\" \"nightly\" FIFO weight=1 min_share=2 = OK");
  find_line(&c, 0, "pool_add_child - \"etl\" FAIR weight=2 min_share=1 = OK");
  /* tl_pool_set (after 0.2.0): its line, refused ones too, replayed in order. */
  TLT_OK(e, tl_pool_set(e->s, "nightly", TL_FAIR, 3, 1));
  TLT_ERR(e, TL_ENOENT, tl_pool_set(e->s, "none", TL_FIFO, 1, 0));
  find_line(&c, 0, "pool_set \"nightly\" FAIR weight=3 min_share=1 = OK");
  find_line(&c, 0, "pool_set \"none\" FIFO weight=1 min_share=0 = ENOENT");
  tl_taskset_desc d = {.stage_id = 9, .ntasks = 1, .pool = "adhoc"}; /* made with the defaults */
  tlt_submit_desc(e, &d);
  TLT_OK(e, tl_cancel_stage(e->s, 9, "made the pool"));
  tlt_rebase(e); /* pools live as long as the scheduler */
  tlt_add(e, "e1", "h1", NULL, 4);
  d = (tl_taskset_desc){.stage_id = 0, .ntasks = 3, .pool = "nightly"};
  tlt_submit_desc(e, &d);
  d.stage_id = 1;
  d.pool = "adhoc";
  tlt_submit_desc(e, &d);
  d.stage_id = 2;
  d.pool = "etl"; /* it has a child: refused */
  TLT_ERR(e, TL_ESTATE, tl_submit(e->s, &d, NULL));
  tl_launch l[6];
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 6), 4);
  tl_stats mid = tlt_stats(e);
  size_t mid_lines = c.n;
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "e1", l[i].tid);
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l, 6), 2);
  for (int i = 0; i < 2; i++)
    tlt_succeed(e, "e1", l[i].tid);
  tlt_end(e);

  assert_replays(&c, mid_lines, &mid);
}
END_TEST

/* Exclusion: the config line carries its fields (non-default values too), and a journal with
 * task-set, application-level exclusions and an unschedulable abort replays to the same state. */
START_TEST(journals_with_exclusion_replay_to_the_same_state) {
  capture c;
  tl_config cfg = tlt_config();
  cfg.exclude_on_failure = true;
  cfg.exclude_stage_max_failed_tasks_per_executor = 1;
  cfg.exclude_app_max_failed_tasks_per_executor = 1;
  cfg.exclude_timeout_ns = 90 * TLT_SEC;
  cfg.unschedulable_timeout_ns = 7 * TLT_SEC;
  tlt_env *e = journaled(&c, &cfg);
  ck_assert_ptr_nonnull(strstr(c.lines[1], " exclude_on_failure=1 "
                                           "exclude_max_task_attempts_per_executor=1 "
                                           "exclude_max_task_attempts_per_node=2 "
                                           "exclude_stage_max_failed_tasks_per_executor=1 "));
  ck_assert_ptr_nonnull(strstr(c.lines[1], " exclude_timeout_ns=90000000000 "
                                           "unschedulable_timeout_ns=7000000000"));
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l, 1), 1);
  tlt_fail(e, "e1", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, &l, 1), 1);
  e->now += TLT_SEC;
  tlt_succeed(e, "e2", l.tid); /* e1 excluded for the application */
  tlt_submit(e, 1, 0, 0, 1);
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, &l, 1), 1);
  tlt_fail(e, "e2", l.tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, NULL, 0), 0); /* unschedulable: a deadline */
  tl_stats mid = tlt_stats(e);
  ck_assert_uint_eq(mid.executors_excluded, 1);
  ck_assert_uint_eq(mid.tasksets_unschedulable, 1);
  size_t mid_lines = c.n;
  tlt_advance_tick(e, 7 * TLT_SEC); /* the abort */
  ck_assert_uint_eq(tlt_stats(e).tasksets_unschedulable_aborted, 1);
  tlt_end(e);

  assert_replays(&c, mid_lines, &mid);
}
END_TEST

/* Preferences and locality waits are journaled; the replay takes the same decisions (the
 * offers' launch counts and tids are checked line by line). */
START_TEST(journals_with_locality_replay_to_the_same_state) {
  capture c;
  tl_config cfg = tlt_config();
  cfg.locality_wait_node_ns = 2 * TLT_SEC;
  tlt_env *e = journaled(&c, &cfg);
  tlt_add(e, "e1", "h1", "r1", 1);
  tlt_add(e, "e2", "h2", "r1", 1);
  tlt_add(e, "e3", "h3", NULL, 2);
  const tl_location p0[] = {{"h1", "e1"}}, p1[] = {{"h1", NULL}, {"h9", NULL}};
  tl_task_desc tasks[3] = {{p0, 1}, {p1, 2}, {NULL, 0}};
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 3, .tasks = tasks};
  tlt_submit_desc(e, &d);
  ck_assert_str_eq(c.lines[c.n - 1],
                   "@1000000000 submit stage=0 attempt=0 priority=0 ntasks=3 cpus=0 shuffle_map=0 "
                   "barrier=0 - task=0 prefs=1 \"h1\" \"e1\" task=1 prefs=2 \"h1\" - \"h9\" - "
                   "= OK ts=1");
  tl_launch l[4];
  tl_offer all[3] = {{"e1", 1}, {"e3", 2}, {"e2", 1}};
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 4), 2); /* e1: task 0; e3: the no-pref task */
  ck_assert_str_eq(l[1].executor_id, "e3");
  e->now += 2 * TLT_SEC;
  ck_assert_uint_eq(tlt_offers(e, all, 3, l, 4), 1); /* task 1, rack-local on e2 */
  ck_assert_int_eq(l[0].locality, TL_RACK_LOCAL);
  tl_stats mid = tlt_stats(e);
  size_t mid_lines = c.n;
  tlt_end(e);

  assert_replays(&c, mid_lines, &mid);
}
END_TEST

/* A 255-byte executor id, with a quote and a backslash that the journal escapes, is journaled
 * in full by every call that names it and replays to the same state (tl-replay's parser has no
 * bound of its own). */
START_TEST(journals_with_255_byte_ids_replay_to_the_same_state) {
  capture c;
  tl_config cfg = tlt_config();
  tlt_env *e = journaled(&c, &cfg);
  char id[256], esc[600];
  size_t k = 0;
  for (size_t i = 0; i < 255; i++) {
    id[i] = i == 100 ? '"' : i == 200 ? '\\' : (char)('a' + i % 26);
    if (id[i] == '"' || id[i] == '\\')
      esc[k++] = '\\';
    esc[k++] = id[i];
  }
  id[255] = '\0';
  esc[k] = '\0';
  tlt_add(e, id, "h1", NULL, 2);
  char want[700];
  snprintf(want, sizeof want, "add \"%s\" \"h1\" - cores=2", esc);
  ck_assert_msg(strstr(c.lines[c.n - 1], want) != NULL, "line: %s", c.lines[c.n - 1]);
  const tl_location p0[] = {{"h1", id}};
  tl_task_desc tasks[2] = {{p0, 1}, {NULL, 0}};
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 2, .tasks = tasks};
  tlt_submit_desc(e, &d);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, id, 2, l, 2), 2);
  tlt_run(e, id, l[0].tid);
  tlt_succeed(e, id, l[1].tid);
  tlt_lose(e, id, TL_LOSS_PENDING, false);
  tl_stats mid = tlt_stats(e);
  size_t mid_lines = c.n;
  tlt_lose(e, id, TL_LOSS_EXITED, true);
  tlt_end(e);

  assert_replays(&c, mid_lines, &mid);
}
END_TEST

/* Resources (journal version 2): executors' profiles and resources on the add line, task sets'
 * profiles and requests on the submit line, the grants of an offer round in its result, the
 * offers_grants call; a run that uses them replays to the same state, a round whose grants
 * differ diverges, and the replayer bounds every count by the tokens that follow it. */
START_TEST(journals_with_resources_replay_to_the_same_state) {
  capture c;
  tl_config cfg = tlt_config();
  tlt_env *e = journaled(&c, &cfg);
  const char *const gpus[] = {"0", "1"}, *const fpga[] = {"x"}, *const one[] = {"GPU-5d1c:0"};
  tl_resource r1[2] = {{"gpu", gpus, 2}, {"fpga", fpga, 1}}, r2[1] = {{"gpu", one, 1}};
  tl_executor_desc d1 = {.id = "g1", .host = "h1", .cores = 4, .resources = r1, .nresources = 2};
  TLT_OK(e, tl_executor_add(e->s, &d1));
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000000 add \"g1\" \"h1\" - cores=4 resources=2 \"gpu\" "
                                     "addresses=2 \"0\" \"1\" \"fpga\" addresses=1 \"x\" = OK");
  tl_executor_desc d2 = {
      .id = "g2", .host = "h2", .cores = 2, .profile = 1, .resources = r2, .nresources = 1};
  TLT_OK(e, tl_executor_add(e->s, &d2));
  ck_assert_str_eq(c.lines[c.n - 1], "@1000000000 add \"g2\" \"h2\" - cores=2 profile=1 "
                                     "resources=1 \"gpu\" addresses=1 \"GPU-5d1c:0\" = OK");
  tl_resource_request qa[1] = {{"gpu", 1, 0}}, qb[2] = {{"gpu", 1, 2}, {"fpga", 1, 1}};
  tl_taskset_desc da = {.stage_id = 0, .ntasks = 3, .resources = qa, .nresources = 1};
  tlt_submit_desc(e, &da);
  ck_assert_str_eq(c.lines[c.n - 1],
                   "@1000000000 submit stage=0 attempt=0 priority=0 ntasks=3 cpus=0 shuffle_map=0 "
                   "barrier=0 - requests=1 \"gpu\" amount=1 share=0 = OK ts=1");
  tl_taskset_desc db = {
      .stage_id = 1, .priority = 1, .ntasks = 2, .profile = 1, .resources = qb, .nresources = 1};
  tlt_submit_desc(e, &db);
  ck_assert_str_eq(c.lines[c.n - 1],
                   "@1000000000 submit stage=1 attempt=0 priority=1 ntasks=2 cpus=0 shuffle_map=0 "
                   "barrier=0 - profile=1 requests=1 \"gpu\" amount=1 share=2 = OK ts=2");
  tl_taskset_desc dc = {
      .stage_id = 2, .priority = 2, .ntasks = 1, .resources = qb, .nresources = 2};
  tlt_submit_desc(e, &dc); /* a GPU whole and the FPGA */
  ck_assert_str_eq(c.lines[c.n - 1],
                   "@1000000000 submit stage=2 attempt=0 priority=2 ntasks=1 cpus=0 shuffle_map=0 "
                   "barrier=0 - requests=2 \"gpu\" amount=1 share=2 \"fpga\" amount=1 share=1 = "
                   "OK ts=3");

  /* A's two tasks take g1's GPUs, B's two share g2's; then the plain call. */
  e->now += 5;
  tl_offer o[2] = {{"g1", 4}, {"g2", 2}};
  tl_launch l[8];
  tl_grant g[32];
  size_t nout, ng;
  TLT_OK(e, tl_resource_offers_grants(e->s, o, 2, l, 8, &nout, g, 32, &ng));
  ck_assert_uint_eq(nout, 4);
  ck_assert_uint_eq(ng, 4);
  size_t first_round = c.n - 1;
  for (size_t i = 0; i < nout; i++)
    tlt_run(e, l[i].executor_id, l[i].tid);
  for (size_t i = 0; i < nout; i++) /* A's two, on g1 */
    if (strcmp(l[i].executor_id, "g1") == 0)
      tlt_succeed(e, "g1", l[i].tid);
  /* A's last task takes a GPU; C's (half a GPU and the FPGA) the other. */
  ck_assert_uint_eq(tlt_offer(e, "g1", 4, l, 8), 2);
  ck_assert_uint_eq(l[0].ngrants + l[1].ngrants, 3);
  ck_assert_ptr_null(l[0].grants);
  tl_stats mid = tlt_stats(e);
  size_t mid_lines = c.n;
  tlt_fail(e, "g1", l[0].tid, TL_END_EXCEPTION);
  tlt_lose(e, "g2", TL_LOSS_PENDING, false);
  e->now += 1;
  tlt_lose(e, "g2", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_offer(e, "g1", 4, l, 8), 1); /* A's retry */
  tlt_succeed(e, "g1", l[0].tid);
  tlt_end(e);

  /* The first round as an offers_grants line replays to the same state; one whose grants
   * differ from the journal's diverges there. */
  char *saved = c.lines[first_round];
  for (int k = 0; k < 2; k++) {
    char line[160];
    snprintf(line, sizeof line,
             "@1000000005 offers_grants cap=8 gcap=32 n=2 \"g1\" 4 \"g2\" 2 = OK launched=4 "
             "tid=1 grants=%d",
             k == 0 ? 4 : 3);
    c.lines[first_round] = line;
    char *text = capture_text(&c, c.n);
    tlr_report r;
    int verdict = tlr_replay_text(text, NULL, &r);
    free(text);
    if (k == 0) {
      ck_assert_msg(verdict == TLR_OK, "%d at line %zu: %s", verdict, r.bad_line, r.why);
    } else {
      ck_assert_int_eq(verdict, TLR_BROKEN);
      ck_assert_uint_eq(r.bad_line, first_round + 1);
    }
  }
  c.lines[first_round] = saved;
  assert_replays(&c, mid_lines, &mid);
  tlr_report r;

  /* Counts a line cannot back are bad input, refused before anything is allocated for them. */
  static const char *const hostile[] = {
      "@0 add \"e\" \"h\" - cores=1 resources=4000000000 \"gpu\" addresses=1 \"0\" = OK",
      "@0 add \"e\" \"h\" - cores=1 resources=1 \"gpu\" addresses=4000000000 \"0\" = OK",
      "@0 add \"e\" \"h\" - cores=1 resources=1 \"gpu\" addresses=2 \"0\" = OK",
      "@0 add \"e\" \"h\" - cores=1 resources=1 gpu addresses=1 \"0\" = OK",
      "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - "
      "requests=3000000000 \"gpu\" amount=1 share=0 = OK ts=1",
      "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - "
      "requests=1 \"gpu\" amount=1 = OK ts=1",
      "@0 offers_grants cap=1 gcap=18446744073709551615 n=2 \"e\" 1 = OK launched=0 tid=1 grants=0",
  };
  for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
    char line[512];
    snprintf(line, sizeof line, "# taskledger journal v2\nconfig start=0\n%s\n", hostile[i]);
    ck_assert_msg(tlr_replay_text(line, NULL, &r) == TLR_BAD_INPUT, "%s: %s", hostile[i], r.why);
    ck_assert_uint_eq(r.bad_line, 3);
  }
  /* A huge gcap with one offer is fine: the replayer gives the round what it can use. */
  ck_assert_int_eq(tlr_replay_text("# taskledger journal v2\nconfig start=0\n@0 add \"e\" \"h\" - "
                                   "cores=1 = OK\n@0 offers_grants cap=1 "
                                   "gcap=18446744073709551615 n=1 \"e\" 1 = OK launched=0 tid=1 "
                                   "grants=0\n",
                                   NULL, &r),
                   TLR_OK);
}
END_TEST

/* A declaration or request the library refuses (TL_ERESOURCE) is journaled as malformed, and the
 * replay makes a call that the library refuses the same way. */
START_TEST(malformed_resources_are_journaled_and_replay_as_refused) {
  capture c;
  tl_config cfg = tlt_config();
  tlt_env *e = journaled(&c, &cfg);
  const char *const twice[] = {"0", "0"};
  tl_resource bad = {"gpu", twice, 2};
  tl_executor_desc d = {.id = "g1", .host = "h1", .cores = 4, .resources = &bad, .nresources = 1};
  size_t before = c.n;
  TLT_ERR(e, TL_ERESOURCE, tl_executor_add(e->s, &d));
  if (c.n != before) /* journaled when the call refuses it past its argument checks */
    ck_assert_str_eq(c.lines[c.n - 1],
                     "@1000000000 add \"g1\" \"h1\" - cores=4 resources=malformed = ERESOURCE");
  tl_resource_request q = {"gpu", 2, 4}; /* a share of more than one address */
  tl_taskset_desc ts = {.stage_id = 0, .ntasks = 1, .resources = &q, .nresources = 1};
  before = c.n;
  TLT_ERR(e, TL_ERESOURCE, tlt_submit_desc_rc(e, &ts, NULL));
  if (c.n != before)
    ck_assert_str_eq(c.lines[c.n - 1], "@1000000000 submit stage=0 attempt=0 priority=0 ntasks=1 "
                                       "cpus=0 shuffle_map=0 barrier=0 - requests=malformed = "
                                       "ERESOURCE");
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_end(e);
  char *text = capture_text(&c, c.n);
  tlr_report r;
  ck_assert_int_eq(tlr_replay_text(text, NULL, &r), TLR_OK);
  free(text);
  /* A malformed line replays as a refused call: a journal that says it succeeded diverges. */
  static const char *const lines[] = {
      "@0 add \"g\" \"h\" - cores=1 resources=malformed = OK",
      "@0 submit stage=0 attempt=0 priority=0 ntasks=1 cpus=0 shuffle_map=0 barrier=0 - "
      "requests=malformed = OK ts=1",
  };
  for (size_t i = 0; i < 2; i++) {
    char journal[512];
    snprintf(journal, sizeof journal, "# taskledger journal v2\nconfig start=0\n%s\n", lines[i]);
    ck_assert_int_eq(tlr_replay_text(journal, NULL, &r), TLR_BROKEN);
    ck_assert_ptr_nonnull(strstr(r.why, "ERESOURCE"));
  }
  capture_free(&c);
}
END_TEST

/* A version 1 journal (before resources) still replays. */
START_TEST(a_version_1_journal_still_replays) {
  tlr_report r;
  ck_assert_int_eq(tlr_replay_text("# taskledger journal v1\nconfig start=0\n"
                                   "@0 add \"e1\" \"h1\" - cores=2 = OK\n"
                                   "@0 submit stage=0 attempt=0 priority=0 ntasks=2 cpus=0 "
                                   "shuffle_map=0 barrier=0 - = OK ts=1\n"
                                   "@0 offers cap=2 n=1 \"e1\" 2 = OK launched=2 tid=1\n"
                                   "@0 update \"e1\" tid=1 FINISHED - - result=0 size=0 = OK\n"
                                   "@0 update \"e1\" tid=2 FINISHED - - result=0 size=0 = OK\n"
                                   "@0 free = OK\n",
                                   NULL, &r),
                   TLR_OK);
  ck_assert_uint_eq(r.calls, 5);
}
END_TEST

Suite *tl_journal_suite(void) {
  Suite *s = suite_create("journal");
  TCase *tc = tlt_tcase(s, "journal");
  tcase_add_test(tc, lines_follow_the_documented_format);
  tcase_add_test(tc, calls_from_callbacks_are_journaled_in_lock_order);
  tcase_add_test(tc, journals_replay_to_the_same_state);
  tcase_add_test(tc, journals_replay_every_loss_to_its_end);
  tcase_add_test(tc, a_journal_that_does_not_match_is_reported_at_its_line);
  tcase_add_test(tc, calls_out_of_memory_are_journaled_or_not_and_replay);
  tcase_add_test(tc, journals_with_speculation_and_pools_replay_to_the_same_state);
  tcase_add_test(tc, journals_with_nested_pools_replay_to_the_same_state);
  tcase_add_test(tc, journals_with_exclusion_replay_to_the_same_state);
  tcase_add_test(tc, journals_with_locality_replay_to_the_same_state);
  tcase_add_test(tc, batched_updates_are_journaled_as_single_updates_and_replay);
  tcase_add_test(tc, journals_with_255_byte_ids_replay_to_the_same_state);
  tcase_add_test(tc, journals_with_resources_replay_to_the_same_state);
  tcase_add_test(tc, malformed_resources_are_journaled_and_replay_as_refused);
  tcase_add_test(tc, a_version_1_journal_still_replays);
  return s;
}
