/* The shared test harness: recorder callbacks, the manual clock, asserting wrappers around the
 * public API, the counting allocator and the end-of-test drain. See harness.h for the contract
 * of each helper.
 */
#include "harness.h"

#include <inttypes.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tlt_line = 0;

TCase *tlt_tcase(Suite *suite, const char *name) {
  TCase *tc = tcase_create(name);
  tcase_set_timeout(tc, 30);
  suite_add_tcase(suite, tc);
  return tc;
}

/* Fails with the call site of the helper that is running. */
#define TLT_ASSERT(expr, ...)                                                                      \
  do {                                                                                             \
    if (!(expr)) {                                                                                 \
      char msg_[1024];                                                                             \
      snprintf(msg_, sizeof msg_, __VA_ARGS__);                                                    \
      ck_abort_msg("test line %d: %s", tlt_line, msg_);                                            \
    }                                                                                              \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * Small utilities.
 * ------------------------------------------------------------------------------------------- */

static void *xrealloc(void *p, size_t size) {
  void *q = realloc(p, size);
  ck_assert_msg(q != NULL, "test harness out of memory");
  return q;
}

static void copy_str(char *dst, size_t cap, const char *src) {
  if (src == NULL) {
    dst[0] = '\0';
    return;
  }
  snprintf(dst, cap, "%s", src);
}

/* ---------------------------------------------------------------------------------------------
 * Stats comparison.
 * ------------------------------------------------------------------------------------------- */

#define TLT_STATS_FIELDS(XX)                                                                       \
  XX(executors_alive)                                                                              \
  XX(executors_decommissioning)                                                                    \
  XX(executors_pending_loss)                                                                       \
  XX(tombstones)                                                                                   \
  XX(hosts)                                                                                        \
  XX(racks)                                                                                        \
  XX(tasksets_active)                                                                              \
  XX(tasksets_zombie)                                                                              \
  XX(attempts_running)                                                                             \
  XX(attempts_frozen)                                                                              \
  XX(tasks_pending)                                                                                \
  XX(events_queued)                                                                                \
  XX(launched)                                                                                     \
  XX(succeeded)                                                                                    \
  XX(failed)                                                                                       \
  XX(killed)                                                                                       \
  XX(stale_updates)                                                                                \
  XX(rejected_updates)                                                                             \
  XX(rejected_offers)                                                                              \
  XX(executors_lost)                                                                               \
  XX(tasksets_released)                                                                            \
  XX(executors_excluded)                                                                           \
  XX(nodes_excluded)                                                                               \
  XX(tasksets_with_failures)                                                                       \
  XX(tasksets_unschedulable)                                                                       \
  XX(excluded_offers)                                                                              \
  XX(tasksets_unschedulable_aborted)                                                               \
  XX(pending_loss_timeouts)

static void stats_compare(const tl_stats *a, const tl_stats *b, const char *what, bool memory) {
#define TLT_CMP(field)                                                                             \
  TLT_ASSERT(a->field == b->field, "%s changed stats." #field ": %ju -> %ju", what,                \
             (uintmax_t)a->field, (uintmax_t)b->field);
  TLT_STATS_FIELDS(TLT_CMP)
  if (memory) {
    TLT_CMP(mem_live_bytes)
    TLT_CMP(mem_live_blocks)
  }
#undef TLT_CMP
}

void tlt_assert_stats_same(const tl_stats *a, const tl_stats *b, const char *what) {
  stats_compare(a, b, what, true);
}

void tlt_assert_stats_same_but_memory(const tl_stats *a, const tl_stats *b, const char *what) {
  stats_compare(a, b, what, false);
}

/* ---------------------------------------------------------------------------------------------
 * Submissions and results.
 * ------------------------------------------------------------------------------------------- */

static tlt_submission *find_sub(tlt_env *e, tl_taskset_id id) {
  for (size_t i = 0; i < e->nsubs; i++)
    if (e->subs[i].id == id)
      return &e->subs[i];
  return NULL;
}

/* A task set's submission by id or, while its tl_submit has not returned yet (a callback made
 * the launch re-entrantly), by payload. */
static tlt_submission *find_sub_payload(tlt_env *e, tl_taskset_id id, const void *payload) {
  tlt_submission *sub = find_sub(e, id);
  if (sub != NULL)
    return sub;
  for (size_t i = 0; i < e->nsubs; i++) {
    if (e->subs[i].id == 0 && (const void *)e->subs[i].payload == payload) {
      e->subs[i].id = id;
      return &e->subs[i];
    }
  }
  return NULL;
}

tlt_submission *tlt_sub(tlt_env *e, tl_taskset_id id) {
  tlt_submission *sub = find_sub(e, id);
  TLT_ASSERT(sub != NULL, "task set %" PRIu64 " was not submitted through the harness", id);
  return sub;
}

unsigned tlt_released(const tlt_env *e, tl_taskset_id id) {
  for (size_t i = 0; i < e->nsubs; i++)
    if (e->subs[i].id == id)
      return e->subs[i].released;
  return 0;
}

tlt_result *tlt_result_new(tlt_env *e, size_t size) {
  tlt_result *r = calloc(1, sizeof *r);
  ck_assert_ptr_nonnull(r);
  r->magic = TLT_RESULT_MAGIC;
  r->size = size;
  r->env = e;
  if (e->nresults == e->rescap) {
    e->rescap = e->rescap ? 2 * e->rescap : 16;
    e->results = xrealloc(e->results, e->rescap * sizeof *e->results);
  }
  e->results[e->nresults++] = r;
  return r;
}

void tlt_result_free(void *result) {
  tlt_result *r = result;
  ck_assert_ptr_nonnull(r);
  ck_assert_msg(r->magic == TLT_RESULT_MAGIC, "result_free got something that is no result");
  r->frees++;
}

size_t tlt_results_made(const tlt_env *e) { return e->nresults; }

size_t tlt_results_frees(const tlt_env *e) {
  size_t n = 0;
  for (size_t i = 0; i < e->nresults; i++)
    n += e->results[i]->frees;
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * The recorder.
 * ------------------------------------------------------------------------------------------- */

static tlt_event *push_event(tlt_env *e, tlt_ev_type type) {
  if (e->nev == e->evcap) {
    e->evcap = e->evcap ? 2 * e->evcap : 64;
    e->ev = xrealloc(e->ev, e->evcap * sizeof *e->ev);
  }
  tlt_event *ev = &e->ev[e->nev++];
  memset(ev, 0, sizeof *ev);
  ev->type = type;
  ev->thread = pthread_self();
  return ev;
}

static void set_text(tlt_event *ev, const char *text) {
  ev->has_text = text != NULL;
  copy_str(ev->text, sizeof ev->text, text);
}

/* Runs the test's hook; the recorded event is copied first because the hook may record more
 * events (growing the array). */
static void run_hook(tlt_env *e, size_t at) {
  if (e->hook != NULL) {
    tlt_event copy = e->ev[at];
    e->hook(e, &copy);
  }
}

/* Callbacks of one scheduler are delivered one at a time: none may start while another runs. */
/* The callbacks assert with TLT_ASSERT, not ck_assert_msg: they run for every event, and Check
 * writes every passing ck_assert to its message file (a write(2) each), which made event-heavy
 * tests spend most of their time there. */
static void enter(tlt_env *e, const char *what) {
  TLT_ASSERT(!e->in_callback, "%s delivered while another callback was running", what);
  e->in_callback = true;
}

static void leave(tlt_env *e) { e->in_callback = false; }

/* The harness's ud record ud is, or NULL when ud is not one (a test's own, or NULL). */
static const tlt_exec_ud *harness_ud(const tlt_env *e, const void *ud) {
  for (size_t i = 0; ud != NULL && i < e->nuds; i++)
    if (e->uds[i] == ud)
      return e->uds[i];
  return NULL;
}

/* A ud handed back with executor id: if it is one of tlt_add's, it names that executor. */
static void check_exec_ud(const tlt_env *e, const char *id, void *ud, const char *what) {
  const tlt_exec_ud *x = harness_ud(e, ud);
  TLT_ASSERT(x == NULL || strcmp(x->id, id) == 0, "%s on %s with the ud of %s", what, id,
             x != NULL ? x->id : "");
}

static void check_task_info(tlt_env *e, const tl_task_info *t, const char *what) {
  TLT_ASSERT(t != NULL, "%s: NULL task", what);
  TLT_ASSERT(t->executor_id != NULL && t->host != NULL, "%s: NULL executor or host", what);
  TLT_ASSERT(t->tid >= 1 && t->taskset >= 1, "%s: tid or task set id 0", what);
  tlt_submission *sub = find_sub_payload(e, t->taskset, t->payload);
  TLT_ASSERT(sub != NULL, "%s: task set %" PRIu64 " unknown to the harness", what, t->taskset);
  TLT_ASSERT(sub->released == 0, "%s for task set %" PRIu64 " after its release", what, t->taskset);
  TLT_ASSERT(t->payload == sub->payload, "%s: payload %p is not the task set's %p", what,
             t->payload, (void *)sub->payload);
  TLT_ASSERT(t->stage_id == sub->stage_id && t->stage_attempt == sub->stage_attempt,
             "%s: stage %u.%u, task set has %u.%u", what, t->stage_id, t->stage_attempt,
             sub->stage_id, sub->stage_attempt);
  TLT_ASSERT(t->index < sub->ntasks, "%s: index %u of %u tasks", what, t->index, sub->ntasks);
  check_exec_ud(e, t->executor_id, t->executor_ud, what);
}

/* The type of the latest executor_added, executor_lost or executor_removed naming executor id,
 * or -1 when there is none. */
static int latest_membership(const tlt_env *e, const char *id) {
  for (size_t i = e->nev; i-- > 0;) {
    const tlt_event *ev = &e->ev[i];
    if ((ev->type == TLT_EV_ADDED || ev->type == TLT_EV_LOST || ev->type == TLT_EV_REMOVED) &&
        strcmp(ev->executor, id) == 0)
      return (int)ev->type;
  }
  return -1;
}

/* In an env that records executor_removed: no event names an executor after it (until an
 * executor of that id is added again, once its tombstone is gone). */
static void check_not_removed(const tlt_env *e, const char *id, const char *what) {
  if (e->records_removed)
    TLT_ASSERT(latest_membership(e, id) != TLT_EV_REMOVED, "%s names %s after its executor_removed",
               what, id);
}

static void copy_task(tlt_event *ev, const tl_task_info *t) {
  ev->task = *t;
  ev->task.executor_id = NULL;
  ev->task.host = NULL;
  TLT_ASSERT(t->ngrants <= TL_TASK_GRANTS_MAX && (t->ngrants == 0) == (t->grants == NULL),
             "task %" PRIu64 ": %u grants at %p", t->tid, t->ngrants, (const void *)t->grants);
  if (t->ngrants > 0)
    memcpy(ev->grants, t->grants, t->ngrants * sizeof *t->grants);
  ev->task.grants = NULL;
  ev->payload = t->payload;
  copy_str(ev->executor, sizeof ev->executor, t->executor_id);
  copy_str(ev->host, sizeof ev->host, t->host);
}

static void cb_task_started(void *ud, const tl_task_info *t) {
  tlt_env *e = ud;
  enter(e, "task_started");
  check_task_info(e, t, "task_started");
  check_not_removed(e, t->executor_id, "task_started");
  tlt_event *ev = push_event(e, TLT_EV_STARTED);
  copy_task(ev, t);
  snprintf(ev->line, sizeof ev->line,
           "started tid=%" PRIu64 " ts=%" PRIu64 " idx=%u att=%u exec=%s", t->tid, t->taskset,
           t->index, t->attempt, ev->executor);
  run_hook(e, e->nev - 1);
  leave(e);
}

static void cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  tlt_env *e = ud;
  enter(e, "task_ended");
  check_task_info(e, t, "task_ended");
  check_not_removed(e, t->executor_id, "task_ended");
  TLT_ASSERT(end != NULL, "NULL end");
  tlt_event *ev = push_event(e, TLT_EV_ENDED);
  copy_task(ev, t);
  ev->end_kind = end->kind;
  ev->counts = end->counts_toward_failures;
  ev->result = end->result;
  ev->result_size = end->result_size;
  ev->result_free = end->result_free;
  set_text(ev, end->message);
  snprintf(ev->line, sizeof ev->line, "ended tid=%" PRIu64 " kind=%s counts=%d", t->tid,
           tl_end_kind_name(end->kind), end->counts_toward_failures ? 1 : 0);
  if (end->kind != TL_END_SUCCESS) {
    TLT_ASSERT(end->result == NULL, "task_ended %s carries a result", tl_end_kind_name(end->kind));
    TLT_ASSERT(!(end->counts_toward_failures &&
                 (end->kind == TL_END_KILLED || end->kind == TL_END_COMMIT_DENIED ||
                  end->kind == TL_END_FETCH_FAILED)),
               "task_ended %s counted toward failures", tl_end_kind_name(end->kind));
  } else {
    TLT_ASSERT(!end->counts_toward_failures, "a success counted toward failures");
  }
  if (end->result != NULL) {
    /* The result is ours now: check it is one of this test's and free it exactly once. */
    tlt_result *r = end->result;
    TLT_ASSERT(r->magic == TLT_RESULT_MAGIC && r->env == e, "task_ended: foreign result");
    TLT_ASSERT(end->result_size == r->size, "task_ended: result_size %zu, update gave %zu",
               end->result_size, r->size);
    if (end->result_free != NULL)
      end->result_free(end->result);
    else
      r->frees++;
  }
  run_hook(e, e->nev - 1);
  leave(e);
}

static void cb_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  tlt_env *e = ud;
  enter(e, "taskset_failed");
  TLT_ASSERT(ts != NULL, "NULL ts");
  tlt_submission *sub = find_sub(e, ts->id);
  TLT_ASSERT(sub != NULL, "taskset_failed for unknown task set %" PRIu64, ts->id);
  TLT_ASSERT(sub->released == 0, "taskset_failed after release of %" PRIu64, ts->id);
  for (size_t i = 0; i < e->nev; i++)
    if (e->ev[i].type == TLT_EV_FAILED && e->ev[i].ts.id == ts->id)
      ck_abort_msg("taskset_failed delivered twice for %" PRIu64, ts->id);
  tlt_event *ev = push_event(e, TLT_EV_FAILED);
  ev->ts = *ts;
  set_text(ev, reason);
  snprintf(ev->line, sizeof ev->line, "failed ts=%" PRIu64, ts->id);
  run_hook(e, e->nev - 1);
  leave(e);
}

static void cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  tlt_env *e = ud;
  enter(e, "taskset_released");
  TLT_ASSERT(ts != NULL, "NULL ts");
  tlt_submission *sub = find_sub_payload(e, ts->id, payload);
  TLT_ASSERT(sub != NULL, "taskset_released for unknown task set %" PRIu64, ts->id);
  TLT_ASSERT(payload == sub->payload, "taskset_released %" PRIu64 ": payload %p, gave %p", ts->id,
             payload, (void *)sub->payload);
  TLT_ASSERT(ts->stage_id == sub->stage_id && ts->stage_attempt == sub->stage_attempt &&
                 ts->ntasks == sub->ntasks,
             "taskset_released %" PRIu64 ": info %u.%u/%u, submitted %u.%u/%u", ts->id,
             ts->stage_id, ts->stage_attempt, ts->ntasks, sub->stage_id, sub->stage_attempt,
             sub->ntasks);
  tlt_event *ev = push_event(e, TLT_EV_RELEASED);
  ev->ts = *ts;
  ev->payload = payload;
  snprintf(ev->line, sizeof ev->line, "released ts=%" PRIu64, ts->id);
  if (sub->released++ == 0)
    sub->released_at = e->nev - 1;
  run_hook(e, e->nev - 1);
  leave(e);
}

/* Remembers an executor id for the drain. */
static void remember_exec(tlt_env *e, const char *id) {
  for (size_t i = 0; i < e->nexecs; i++)
    if (strcmp(e->execs[i], id) == 0)
      return;
  if (e->nexecs == e->execcap) {
    e->execcap = e->execcap ? 2 * e->execcap : 16;
    e->execs = xrealloc(e->execs, e->execcap * sizeof *e->execs);
  }
  copy_str(e->execs[e->nexecs++], TL_ID_MAX, id);
}

static void cb_executor_added(void *ud, const char *id, const char *host) {
  tlt_env *e = ud;
  enter(e, "executor_added");
  TLT_ASSERT(id != NULL && host != NULL, "executor_added with NULL id or host");
  tlt_event *ev = push_event(e, TLT_EV_ADDED);
  copy_str(ev->executor, sizeof ev->executor, id);
  copy_str(ev->host, sizeof ev->host, host);
  snprintf(ev->line, sizeof ev->line, "added %s host=%s", id, host);
  remember_exec(e, id);
  run_hook(e, e->nev - 1);
  leave(e);
}

static void cb_executor_lost(void *ud, const char *id, void *executor_ud,
                             const tl_loss_reason *reason) {
  tlt_env *e = ud;
  enter(e, "executor_lost");
  TLT_ASSERT(id != NULL && reason != NULL, "executor_lost with NULL id or reason");
  check_exec_ud(e, id, executor_ud, "executor_lost");
  check_not_removed(e, id, "executor_lost");
  tlt_event *ev = push_event(e, TLT_EV_LOST);
  copy_str(ev->executor, sizeof ev->executor, id);
  ev->executor_ud = executor_ud;
  ev->loss = *reason;
  set_text(ev, reason->message);
  ev->loss.message = NULL;
  snprintf(ev->line, sizeof ev->line, "lost %s kind=%s", id, tl_loss_kind_name(reason->kind));
  run_hook(e, e->nev - 1);
  leave(e);
}

static void cb_executor_removed(void *ud, const char *id, void *executor_ud,
                                const tl_loss_reason *reason) {
  tlt_env *e = ud;
  enter(e, "executor_removed");
  TLT_ASSERT(id != NULL && reason != NULL, "executor_removed with NULL id or reason");
  TLT_ASSERT(reason->kind != TL_LOSS_PENDING, "executor_removed of %s with TL_LOSS_PENDING", id);
  check_exec_ud(e, id, executor_ud, "executor_removed");
  int latest = latest_membership(e, id);
  TLT_ASSERT(latest == TLT_EV_LOST, "executor_removed of %s %s", id,
             latest == TLT_EV_REMOVED ? "twice for one loss" : "without its executor_lost");
  /* Delivered after the call that removed it: the ledger holds a tombstone, or nothing. */
  tl_executor_status st;
  int rc = e->s != NULL ? tl_executor_get(e->s, id, &st) : TL_EGONE;
  TLT_ASSERT(rc == TL_EGONE || rc == TL_ENOENT,
             "executor_removed of %s, which tl_executor_get finds: %s", id, tl_err_name(rc));
  tlt_event *ev = push_event(e, TLT_EV_REMOVED);
  copy_str(ev->executor, sizeof ev->executor, id);
  ev->executor_ud = executor_ud;
  ev->loss = *reason;
  set_text(ev, reason->message);
  ev->loss.message = NULL;
  snprintf(ev->line, sizeof ev->line, "removed %s kind=%s app=%d exit=%d", id,
           tl_loss_kind_name(reason->kind), reason->caused_by_app ? 1 : 0, reason->exit_code);
  run_hook(e, e->nev - 1);
  leave(e);
}

void tlt_record_removed(tl_callbacks *cb) { cb->executor_removed = cb_executor_removed; }

static void cb_revive_offers(void *ud) {
  tlt_env *e = ud;
  enter(e, "revive_offers");
  tlt_event *ev = push_event(e, TLT_EV_REVIVE);
  snprintf(ev->line, sizeof ev->line, "revive");
  run_hook(e, e->nev - 1);
  leave(e);
}

static void cb_kill_task(void *ud, tl_tid tid, const char *exec, void *executor_ud, bool interrupt,
                         const char *reason) {
  tlt_env *e = ud;
  enter(e, "kill_task");
  TLT_ASSERT(exec != NULL, "kill_task with NULL executor");
  check_not_removed(e, exec, "kill_task");
  check_exec_ud(e, exec, executor_ud, "kill_task");
  tlt_event *ev = push_event(e, TLT_EV_KILL);
  ev->executor_ud = executor_ud;
  ev->kill_tid = tid;
  ev->interrupt = interrupt;
  copy_str(ev->executor, sizeof ev->executor, exec);
  set_text(ev, reason);
  snprintf(ev->line, sizeof ev->line, "kill tid=%" PRIu64 " exec=%s", tid, exec);
  char exec_copy[TL_ID_MAX];
  copy_str(exec_copy, sizeof exec_copy, exec);
  run_hook(e, e->nev - 1);
  if (e->auto_kill) {
    tl_update u = {.state = TL_TASK_KILLED, .message = "killed as asked"};
    int rc = tl_status_update(e->s, exec_copy, tid, &u);
    TLT_ASSERT(rc == TL_OK, "auto kill: KILLED update for tid %" PRIu64 ": %s", tid,
               tl_err_name(rc));
    TLT_CHECK(e);
  }
  leave(e);
}

static void cb_speculative(void *ud, const tl_taskset_info *ts, uint32_t index) {
  tlt_env *e = ud;
  enter(e, "speculative_task_submitted");
  ck_assert_ptr_nonnull(ts);
  ck_assert_msg(index < ts->ntasks, "speculative_task_submitted: index %u of %u", index,
                ts->ntasks);
  tlt_event *ev = push_event(e, TLT_EV_SPECULATIVE);
  ev->ts = *ts;
  ev->index = index;
  snprintf(ev->line, sizeof ev->line, "speculative ts=%" PRIu64 " idx=%u", ts->id, index);
  run_hook(e, e->nev - 1);
  leave(e);
}

tl_callbacks tlt_callbacks(tlt_env *e) {
  tl_callbacks cb = {
      .ud = e,
      .task_started = cb_task_started,
      .task_ended = cb_task_ended,
      .taskset_failed = cb_taskset_failed,
      .taskset_released = cb_taskset_released,
      .executor_added = cb_executor_added,
      .executor_lost = cb_executor_lost,
      .revive_offers = cb_revive_offers,
      .kill_task = cb_kill_task,
      .speculative_task_submitted = cb_speculative,
  };
  return cb;
}

size_t tlt_mark(const tlt_env *e) { return e->nev; }

static const char *seq(tlt_env *e, size_t mark, bool revive) {
  size_t need = 1;
  for (size_t i = mark; i < e->nev; i++)
    need += strlen(e->ev[i].line) + 1;
  if (need > e->seqcap) {
    e->seqcap = need;
    e->seqbuf = xrealloc(e->seqbuf, need);
  }
  char *p = e->seqbuf;
  *p = '\0';
  for (size_t i = mark; i < e->nev; i++) {
    if (!revive && e->ev[i].type == TLT_EV_REVIVE)
      continue;
    if (p != e->seqbuf)
      *p++ = '\n';
    size_t n = strlen(e->ev[i].line);
    memcpy(p, e->ev[i].line, n + 1);
    p += n;
  }
  return e->seqbuf;
}

const char *tlt_seq(tlt_env *e, size_t mark) { return seq(e, mark, false); }
const char *tlt_seq_all(tlt_env *e, size_t mark) { return seq(e, mark, true); }

size_t tlt_count(const tlt_env *e, size_t mark, tlt_ev_type type) {
  size_t n = 0;
  for (size_t i = mark; i < e->nev; i++)
    n += e->ev[i].type == type;
  return n;
}

const tlt_event *tlt_nth(const tlt_env *e, size_t mark, tlt_ev_type type, size_t n) {
  for (size_t i = mark; i < e->nev; i++)
    if (e->ev[i].type == type && n-- == 0)
      return &e->ev[i];
  return NULL;
}

const tlt_event *tlt_last(const tlt_env *e, tlt_ev_type type) {
  for (size_t i = e->nev; i-- > 0;)
    if (e->ev[i].type == type)
      return &e->ev[i];
  return NULL;
}

const tlt_event *tlt_ended_of(const tlt_env *e, tl_tid tid) {
  for (size_t i = e->nev; i-- > 0;)
    if (e->ev[i].type == TLT_EV_ENDED && e->ev[i].task.tid == tid)
      return &e->ev[i];
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Environment.
 * ------------------------------------------------------------------------------------------- */

uint64_t tlt_clock(void *ud) { return ((tlt_env *)ud)->now; }

tl_config tlt_config(void) {
  tl_config cfg;
  tl_config_init(&cfg);
  return cfg;
}

static tlt_env *new_env_clock(const tl_config *cfg, void (*edit)(tl_callbacks *cb),
                              bool no_callbacks, uint64_t (*clock)(void *ud)) {
  tlt_env *e = calloc(1, sizeof *e);
  ck_assert_ptr_nonnull(e);
  e->cfg = cfg != NULL ? *cfg : tlt_config();
  e->cfg.clock = clock;
  e->cfg.clock_ud = e;
  e->now = TLT_SEC;
  e->no_callbacks = no_callbacks;
  tl_callbacks cb = tlt_callbacks(e);
  if (edit != NULL)
    edit(&cb);
  e->records_removed = !no_callbacks && cb.executor_removed == cb_executor_removed;
  int rc = tl_scheduler_new(&e->cfg, no_callbacks ? NULL : &cb, &e->s);
  ck_assert_msg(rc == TL_OK, "tl_scheduler_new: %s", tl_err_name(rc));
  ck_assert_ptr_nonnull(e->s);
  TLT_CHECK(e);
  tl_stats st;
  tl_stats_get(e->s, &st);
  e->base_bytes = st.mem_live_bytes;
  e->base_blocks = st.mem_live_blocks;
  ck_assert_msg(st.mem_live_blocks > 0, "an empty scheduler accounts no memory at all");
  ck_assert_uint_eq(e->nev, 0);
  return e;
}

static tlt_env *new_env(const tl_config *cfg, void (*edit)(tl_callbacks *cb), bool no_callbacks) {
  return new_env_clock(cfg, edit, no_callbacks, tlt_clock);
}

tlt_env *tlt_new(const tl_config *cfg) { return new_env(cfg, NULL, false); }

tlt_env *tlt_new_clock(const tl_config *cfg, void (*edit)(tl_callbacks *cb),
                       uint64_t (*clock)(void *ud)) {
  return new_env_clock(cfg, edit, false, clock);
}

void tlt_rebase(tlt_env *e) {
  tl_stats st;
  tl_stats_get(e->s, &st);
  ck_assert_msg(st.tasksets_active + st.tasksets_zombie + st.attempts_running + st.executors_alive +
                        st.executors_pending_loss + st.tombstones ==
                    0,
                "tlt_rebase on a scheduler that is not empty");
  e->base_bytes = st.mem_live_bytes;
  e->base_blocks = st.mem_live_blocks;
}

tlt_env *tlt_new_edit(const tl_config *cfg, void (*edit)(tl_callbacks *cb)) {
  return new_env(cfg, edit, false);
}

tlt_env *tlt_new_nocb(const tl_config *cfg) { return new_env(cfg, NULL, true); }

static void free_env(tlt_env *e) {
  for (size_t i = 0; i < e->nsubs; i++)
    free(e->subs[i].payload);
  for (size_t i = 0; i < e->nresults; i++)
    free(e->results[i]);
  free(e->subs);
  free(e->results);
  free(e->execs);
  for (size_t i = 0; i < e->nuds; i++)
    free(e->uds[i]);
  free(e->uds);
  free(e->ev);
  free(e->seqbuf);
  free(e);
}

static void assert_ownership_settled(tlt_env *e) {
  for (size_t i = 0; i < e->nsubs && !e->no_callbacks; i++)
    ck_assert_msg(e->subs[i].released == 1,
                  "task set %" PRIu64 " (stage %u.%u) released %u times, want exactly once",
                  e->subs[i].id, e->subs[i].stage_id, e->subs[i].stage_attempt,
                  e->subs[i].released);
  for (size_t i = 0; i < e->nresults; i++)
    ck_assert_msg(e->results[i]->frees == 1, "result %zu freed %u times, want exactly once", i,
                  e->results[i]->frees);
}

/* Every map of st is empty, tombstones aside (the caller checks those and the memory). */
static void assert_drained_but_tombstones(const tl_stats *st) {
  ck_assert_uint_eq(st->executors_alive, 0);
  ck_assert_uint_eq(st->executors_decommissioning, 0);
  ck_assert_uint_eq(st->executors_pending_loss, 0);
  ck_assert_uint_eq(st->hosts, 0);
  ck_assert_uint_eq(st->racks, 0);
  ck_assert_uint_eq(st->tasksets_active, 0);
  ck_assert_uint_eq(st->tasksets_zombie, 0);
  ck_assert_uint_eq(st->attempts_running, 0);
  ck_assert_uint_eq(st->attempts_frozen, 0);
  ck_assert_uint_eq(st->tasks_pending, 0);
  ck_assert_uint_eq(st->events_queued, 0);
  ck_assert_uint_eq(st->executors_excluded, 0);
  ck_assert_uint_eq(st->nodes_excluded, 0);
  ck_assert_uint_eq(st->tasksets_with_failures, 0);
  ck_assert_uint_eq(st->tasksets_unschedulable, 0);
}

/* In an env that records executor_removed: every executor lost was removed as often (a drained
 * scheduler has no loss under way). */
static void assert_losses_completed(const tlt_env *e) {
  for (size_t i = 0; i < e->nexecs && e->records_removed; i++) {
    size_t lost = 0, removed = 0;
    for (size_t k = 0; k < e->nev; k++) {
      if (strcmp(e->ev[k].executor, e->execs[i]) != 0)
        continue;
      lost += e->ev[k].type == TLT_EV_LOST;
      removed += e->ev[k].type == TLT_EV_REMOVED;
    }
    ck_assert_msg(lost == removed, "%s: %zu executor_lost, %zu executor_removed", e->execs[i], lost,
                  removed);
  }
}

/* Frees the drained scheduler of e, which must deliver nothing, and then e. */
static void free_drained(tlt_env *e) {
  assert_ownership_settled(e);
  assert_losses_completed(e);
  size_t nev = e->nev;
  int rc = tl_scheduler_free(e->s);
  ck_assert_msg(rc == TL_OK, "tl_scheduler_free: %s", tl_err_name(rc));
  ck_assert_msg(e->nev == nev, "tl_scheduler_free of an empty scheduler delivered %zu events",
                e->nev - nev);
  e->s = NULL;
  free_env(e);
}

void tlt_dispatch_all(tlt_env *e) {
  if (e->cfg.delivery != TL_DELIVER_DEFERRED)
    return;
  int n;
  while ((n = tl_dispatch(e->s)) > 0)
    TLT_CHECK(e);
  TLT_ASSERT(n == 0, "tl_dispatch: %s", tl_err_name(n));
}

void tlt_end(tlt_env *e) {
  TLT_SITE();
  tlt_dispatch_all(e);
  TLT_CHECK(e);
  tlt_hook hook = e->hook;
  e->hook = NULL; /* the drain is the harness's, not the test's */
  (void)hook;
  e->auto_kill = false;

  /* Lose every executor that was ever added; removed or forgotten ones answer EGONE/ENOENT. */
  for (size_t i = 0; i < e->nexecs; i++) {
    tl_loss_reason why = {.kind = TL_LOSS_KILLED, .message = "test drain"};
    int rc = tl_executor_lost(e->s, e->execs[i], &why);
    ck_assert_msg(rc == TL_OK || rc == TL_EGONE || rc == TL_ENOENT,
                  "drain: tl_executor_lost(%s): %s", e->execs[i], tl_err_name(rc));
    tlt_dispatch_all(e);
    TLT_CHECK(e);
  }
  tl_stats st;
  tl_stats_get(e->s, &st);
  ck_assert_msg(st.attempts_running == 0 && st.attempts_frozen == 0,
                "drain: %zu attempts running, %zu frozen with every executor lost",
                st.attempts_running, st.attempts_frozen);
  ck_assert_msg(st.tasksets_zombie == 0, "drain: %zu zombie task sets with nothing running",
                st.tasksets_zombie);

  /* Cancel the stages of task sets still alive: with nothing running they go at once. */
  for (size_t i = 0; i < e->nsubs; i++) {
    if (e->subs[i].released != 0)
      continue;
    int rc = tl_cancel_stage(e->s, e->subs[i].stage_id, "test drain");
    ck_assert_msg(rc == TL_OK || (e->no_callbacks && rc == TL_ENOENT),
                  "drain: tl_cancel_stage(%u): %s", e->subs[i].stage_id, tl_err_name(rc));
    tlt_dispatch_all(e);
    TLT_CHECK(e);
    if (!e->no_callbacks)
      ck_assert_msg(e->subs[i].released == 1,
                    "drain: cancelled idle task set %" PRIu64 " was not released", e->subs[i].id);
    else
      e->subs[i].released = 1; /* nobody to hand it back to; the stats below check it */
  }

  /* Expire application-level exclusions (they outlive their executors, bounded in age). */
  if (e->cfg.exclude_on_failure) {
    e->now += e->cfg.exclude_timeout_ns;
    (void)tl_tick(e->s);
    tlt_dispatch_all(e);
    TLT_CHECK(e);
  }

  /* Expire the tombstones. */
  if (e->cfg.tombstone_ttl_ns != 0) {
    e->now += e->cfg.tombstone_ttl_ns + 1;
    (void)tl_tick(e->s);
    tlt_dispatch_all(e);
    TLT_CHECK(e);
  }

  tl_stats_get(e->s, &st);
  assert_drained_but_tombstones(&st);
  if (e->cfg.tombstone_ttl_ns != 0 || e->cfg.max_tombstones == 0)
    ck_assert_msg(st.tombstones == 0, "drain: %zu tombstones outlived tombstone_ttl_ns",
                  st.tombstones);
  if (st.tombstones == 0) {
    ck_assert_msg(st.mem_live_bytes == e->base_bytes && st.mem_live_blocks == e->base_blocks,
                  "drain: memory %zu bytes in %zu blocks, empty scheduler had %zu in %zu",
                  st.mem_live_bytes, st.mem_live_blocks, e->base_bytes, e->base_blocks);
  }
  ck_assert_uint_eq(st.tasksets_released, e->nsubs);
  free_drained(e);
}

void tlt_end_keeping_tombstones(tlt_env *e, size_t n) {
  TLT_CHECK(e);
  tl_stats st;
  tl_stats_get(e->s, &st);
  assert_drained_but_tombstones(&st);
  ck_assert_uint_eq(st.tombstones, n);
  ck_assert_uint_eq(st.tasksets_released, e->nsubs);
  free_drained(e);
}

void tlt_end_freed(tlt_env *e) {
  assert_ownership_settled(e);
  free_env(e);
}

/* ---------------------------------------------------------------------------------------------
 * Asserting wrappers.
 * ------------------------------------------------------------------------------------------- */

void tlt_add_(int line, tlt_env *e, const char *id, const char *host, const char *rack,
              uint32_t cores) {
  tlt_line = line;
  tl_executor_desc d = {
      .id = id, .host = host, .rack = rack, .cores = cores, .ud = tlt_ud_for(e, id)};
  int rc = tl_executor_add(e->s, &d);
  TLT_ASSERT(rc == TL_OK, "tl_executor_add(%s): %s", id, tl_err_name(rc));
  remember_exec(e, id);
  TLT_CHECK(e);
}

void tlt_add_desc_(int line, tlt_env *e, tl_executor_desc d) {
  tlt_line = line;
  d.ud = tlt_ud_for(e, d.id);
  int rc = tl_executor_add(e->s, &d);
  TLT_ASSERT(rc == TL_OK, "tl_executor_add(%s): %s", d.id, tl_err_name(rc));
  remember_exec(e, d.id);
  TLT_CHECK(e);
}

tlt_exec_ud *tlt_ud_for(tlt_env *e, const char *id) {
  for (size_t i = 0; i < e->nuds; i++)
    if (strcmp(e->uds[i]->id, id) == 0)
      return e->uds[i];
  if (e->nuds == e->udcap) {
    e->udcap = e->udcap ? 2 * e->udcap : 16;
    e->uds = xrealloc(e->uds, e->udcap * sizeof *e->uds);
  }
  tlt_exec_ud *x = xrealloc(NULL, sizeof *x);
  copy_str(x->id, sizeof x->id, id);
  e->uds[e->nuds++] = x;
  return x;
}

static int submit_desc_impl(tlt_env *e, const tl_taskset_desc *desc, tl_taskset_id *out,
                            bool null_out) {
  uint32_t stage = desc->stage_id, attempt = desc->stage_attempt, ntasks = desc->ntasks;
  tlt_payload *p = calloc(1, sizeof *p);
  if (p == NULL)
    return TL_ENOMEM;
  p->magic = TLT_PAYLOAD_MAGIC;
  /* Record the submission first (id 0 until known) so that events a callback makes before
   * tl_submit returns can find it by its payload. */
  if (e->nsubs == e->subcap) {
    size_t cap = e->subcap ? 2 * e->subcap : 16;
    tlt_submission *subs = realloc(e->subs, cap * sizeof *subs);
    if (subs == NULL) {
      free(p);
      return TL_ENOMEM;
    }
    e->subs = subs;
    e->subcap = cap;
  }
  size_t k = e->nsubs++;
  p->sub = k;
  memset(&e->subs[k], 0, sizeof e->subs[k]);
  e->subs[k].payload = p;
  e->subs[k].stage_id = stage;
  e->subs[k].stage_attempt = attempt;
  e->subs[k].ntasks = ntasks;
  for (uint32_t i = 0; desc->tasks != NULL && i < ntasks; i++)
    e->subs[k].prefs = e->subs[k].prefs || desc->tasks[i].nprefs > 0;
  tl_taskset_desc d = *desc;
  d.payload = p;
  tl_taskset_id id = 0;
  int rc = tl_submit(e->s, &d, null_out ? NULL : &id);
  if (rc != TL_OK) {
    /* No callback ran for a failed call, so no submission was recorded after this one. */
    if (k + 1 == e->nsubs)
      e->nsubs--;
    free(p);
    return rc;
  }
  if (null_out)
    return TL_OK; /* the id is learnt from the first event that names the payload */
  if (e->subs[k].id != 0 && e->subs[k].id != id)
    return TL_ECORRUPT; /* a callback saw this payload under another id */
  e->subs[k].id = id;
  if (out != NULL)
    *out = id;
  return TL_OK;
}

static int submit_impl(tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t priority,
                       uint32_t ntasks, uint32_t cpus, tl_taskset_id *out, bool null_out) {
  tl_taskset_desc d = {.stage_id = stage,
                       .stage_attempt = attempt,
                       .priority = priority,
                       .ntasks = ntasks,
                       .cpus_per_task = cpus};
  return submit_desc_impl(e, &d, out, null_out);
}

tl_taskset_id tlt_submit_desc_(int line, tlt_env *e, const tl_taskset_desc *d) {
  tlt_line = line;
  tl_taskset_id id = 0;
  int rc = submit_desc_impl(e, d, &id, false);
  tlt_line = line;
  TLT_ASSERT(rc == TL_OK, "tl_submit(stage %u.%u): %s", d->stage_id, d->stage_attempt,
             tl_err_name(rc));
  TLT_CHECK(e);
  return id;
}

int tlt_submit_rc(tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t priority, uint32_t ntasks,
                  uint32_t cpus, tl_taskset_id *out) {
  return submit_impl(e, stage, attempt, priority, ntasks, cpus, out, false);
}

int tlt_submit_desc_rc(tlt_env *e, const tl_taskset_desc *d, tl_taskset_id *out) {
  return submit_desc_impl(e, d, out, false);
}

int tlt_submit_null_out(tlt_env *e, uint32_t stage, uint32_t priority, uint32_t ntasks) {
  return submit_impl(e, stage, 0, priority, ntasks, 0, NULL, true);
}

tl_taskset_id tlt_submit_(int line, tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t priority,
                          uint32_t ntasks, uint32_t cpus) {
  tlt_line = line;
  tl_taskset_id id = 0;
  int rc = tlt_submit_rc(e, stage, attempt, priority, ntasks, cpus, &id);
  tlt_line = line;
  TLT_ASSERT(rc == TL_OK, "tl_submit(stage %u.%u): %s", stage, attempt, tl_err_name(rc));
  TLT_ASSERT(id >= 1, "tl_submit gave task set id 0");
  TLT_CHECK(e);
  return id;
}

size_t tlt_offers_(int line, tlt_env *e, const tl_offer *offers, size_t n, tl_launch *out,
                   size_t cap) {
  return tlt_offers_grants_(line, e, offers, n, out, cap, NULL, 0);
}

size_t tlt_offers_grants_(int line, tlt_env *e, const tl_offer *offers, size_t n, tl_launch *out,
                          size_t cap, tl_grant *grants, size_t gcap) {
  tlt_line = line;
  size_t nout = SIZE_MAX, ngrants = SIZE_MAX;
  size_t mark = e->nev;
  int rc = grants != NULL
               ? tl_resource_offers_grants(e->s, offers, n, out, cap, &nout, grants, gcap, &ngrants)
               : tl_resource_offers(e->s, offers, n, out, cap, &nout);
  tlt_line = line; /* hooks may have run other helpers */
  TLT_ASSERT(rc == TL_OK, "tl_resource_offers: %s", tl_err_name(rc));
  TLT_ASSERT(nout <= cap, "tl_resource_offers wrote %zu launches, cap %zu", nout, cap);
  TLT_CHECK(e);
  /* The launches' grants: with an array, consecutive in it and exactly what it says it wrote;
   * without, none pointed at. */
  size_t at = 0;
  for (size_t i = 0; i < nout; i++) {
    const tl_launch *l = &out[i];
    TLT_ASSERT(l->ngrants <= TL_TASK_GRANTS_MAX, "launch %zu: %u grants", i, l->ngrants);
    if (grants == NULL || l->ngrants == 0) {
      TLT_ASSERT(l->grants == NULL, "launch %zu points at grants it should not have", i);
      continue;
    }
    TLT_ASSERT(l->grants == grants + at, "launch %zu's grants are not next in the array", i);
    at += l->ngrants;
  }
  TLT_ASSERT(grants == NULL || (ngrants == at && at <= gcap),
             "the round wrote %zu grants, its launches have %zu (room %zu)", ngrants, at, gcap);
  /* Every launch names the first offer of its executor (with offer_shuffle, the first in the
   * drawn order: one naming it), points at that offer's id, and carries the executor's ud as
   * registered. */
  for (size_t i = 0; i < nout; i++) {
    const tl_launch *l = &out[i];
    TLT_ASSERT(l->offer < n && l->executor_id == offers[l->offer].executor_id,
               "launch %zu names offer %zu of %zu, its id not that offer's", i, l->offer, n);
    for (size_t j = 0; j < l->offer && !e->cfg.offer_shuffle; j++)
      TLT_ASSERT(strcmp(offers[j].executor_id, l->executor_id) != 0,
                 "launch %zu on %s names offer %zu, but offer %zu names it first", i,
                 l->executor_id, l->offer, j);
    check_exec_ud(e, l->executor_id, l->executor_ud, "a launch");
    tl_executor_status st = {0}; /* a hook may have lost it since */
    TLT_ASSERT(tl_executor_get(e->s, l->executor_id, &st) != TL_OK || st.ud == l->executor_ud,
               "launch %zu on %s: executor_ud %p, registered %p", i, l->executor_id, l->executor_ud,
               st.ud);
  }
  /* Every launch made exactly one task_started, in launch order, describing the same attempt.
   * From inside a callback the events are delivered only after it returns, so they can be
   * compared only for calls made outside callbacks. */
  if (e->in_callback || e->no_callbacks || e->cfg.delivery == TL_DELIVER_DEFERRED)
    return nout;
  TLT_ASSERT(tlt_count(e, mark, TLT_EV_STARTED) == nout, "%zu launches but %zu task_started events",
             nout, tlt_count(e, mark, TLT_EV_STARTED));
  for (size_t i = 0; i < nout; i++) {
    const tlt_event *ev = tlt_nth(e, mark, TLT_EV_STARTED, i);
    const tl_launch *l = &out[i];
    TLT_ASSERT(ev->task.tid == l->tid && ev->task.taskset == l->taskset &&
                   ev->task.index == l->index && ev->task.attempt == l->attempt &&
                   ev->task.stage_id == l->stage_id && ev->task.stage_attempt == l->stage_attempt &&
                   strcmp(ev->executor, l->executor_id) == 0 && ev->payload == l->payload &&
                   ev->task.locality == l->locality && ev->task.ngrants == l->ngrants &&
                   (l->grants == NULL ||
                    memcmp(l->grants, ev->grants, l->ngrants * sizeof *l->grants) == 0),
               "launch %zu (tid %" PRIu64 ") disagrees with its task_started (tid %" PRIu64 ")", i,
               l->tid, ev->task.tid);
    const tlt_submission *sub = find_sub(e, l->taskset);
    TLT_ASSERT((sub != NULL && sub->prefs) || l->locality == TL_NO_PREF,
               "launch %zu without preferences at locality %d", i, (int)l->locality);
  }
  return nout;
}

size_t tlt_offer_(int line, tlt_env *e, const char *exec, uint32_t cores, tl_launch *out,
                  size_t cap) {
  tlt_line = line;
  tl_offer o = {.executor_id = exec, .cores = cores};
  return tlt_offers_(line, e, &o, 1, out, cap);
}

void tlt_update_(int line, tlt_env *e, const char *exec, tl_tid tid, tl_task_state state,
                 tl_end_kind failure) {
  tlt_line = line;
  tl_update u = {.state = state, .failure = failure};
  if (state == TL_TASK_FAILED)
    u.message = "test failure";
  int rc = tl_status_update(e->s, exec, tid, &u);
  TLT_ASSERT(rc == TL_OK, "tl_status_update(%s, tid %" PRIu64 ", state %d): %s", exec, tid,
             (int)state, tl_err_name(rc));
  TLT_CHECK(e);
}

tlt_result *tlt_succeed_(int line, tlt_env *e, const char *exec, tl_tid tid) {
  tlt_line = line;
  tlt_result *r = tlt_result_new(e, 100 + (size_t)tid);
  tl_update u = {.state = TL_TASK_FINISHED,
                 .result = r,
                 .result_size = r->size,
                 .result_free = tlt_result_free};
  int rc = tl_status_update(e->s, exec, tid, &u);
  TLT_ASSERT(rc == TL_OK, "FINISHED update (%s, tid %" PRIu64 "): %s", exec, tid, tl_err_name(rc));
  TLT_CHECK(e);
  return r;
}

void tlt_lose_(int line, tlt_env *e, const char *exec, tl_loss_kind kind, bool app) {
  tlt_line = line;
  tl_loss_reason why = {.kind = kind, .caused_by_app = app, .message = "test loss"};
  int rc = tl_executor_lost(e->s, exec, &why);
  TLT_ASSERT(rc == TL_OK, "tl_executor_lost(%s, %s): %s", exec, tl_loss_kind_name(kind),
             tl_err_name(rc));
  TLT_CHECK(e);
}

uint64_t tlt_advance_tick_(int line, tlt_env *e, uint64_t ns) {
  tlt_line = line;
  e->now += ns;
  uint64_t next = tl_tick(e->s);
  TLT_CHECK(e);
  return next;
}

tl_taskset_status tlt_ts_(int line, tlt_env *e, tl_taskset_id id) {
  tlt_line = line;
  tl_taskset_status st;
  memset(&st, 0xa5, sizeof st);
  int rc = tl_taskset_get(e->s, id, &st);
  TLT_ASSERT(rc == TL_OK, "tl_taskset_get(%" PRIu64 "): %s", id, tl_err_name(rc));
  TLT_ASSERT(st.info.id == id, "tl_taskset_get(%" PRIu64 ") describes %" PRIu64, id, st.info.id);
  return st;
}

tl_executor_status tlt_ex_(int line, tlt_env *e, const char *id) {
  tlt_line = line;
  tl_executor_status st;
  memset(&st, 0xa5, sizeof st);
  int rc = tl_executor_get(e->s, id, &st);
  TLT_ASSERT(rc == TL_OK, "tl_executor_get(%s): %s", id, tl_err_name(rc));
  return st;
}

tl_stats tlt_stats(tlt_env *e) {
  tl_stats st;
  tl_stats_get(e->s, &st);
  return st;
}

/* ---------------------------------------------------------------------------------------------
 * Counting allocator. Each block carries its size in a header so free and realloc can account
 * it; counters are atomic because schedulers may be used from several threads.
 * ------------------------------------------------------------------------------------------- */

typedef union block_header {
  size_t size;
  max_align_t align;
} block_header;

static atomic_size_t live_blocks;
static atomic_size_t live_bytes;
static atomic_uint_fast64_t alloc_calls;
static atomic_uint_fast64_t fail_at; /* alloc_calls value that fails; 0: none */
static atomic_bool fail_happened;
static atomic_bool fail_onwards; /* every allocation from fail_at on fails */

static bool should_fail(void) {
  uint_fast64_t n = atomic_fetch_add(&alloc_calls, 1) + 1;
  uint_fast64_t f = atomic_load(&fail_at);
  if (f != 0 && (n == f || (n > f && atomic_load(&fail_onwards)))) {
    atomic_store(&fail_happened, true);
    return true;
  }
  return false;
}

static void *count_malloc(size_t size) {
  if (should_fail() || size > SIZE_MAX - sizeof(block_header))
    return NULL;
  block_header *h = malloc(sizeof *h + size);
  if (h == NULL)
    return NULL;
  h->size = size;
  atomic_fetch_add(&live_blocks, 1);
  atomic_fetch_add(&live_bytes, size);
  return h + 1;
}

static void count_free(void *p) {
  if (p == NULL)
    return;
  block_header *h = (block_header *)p - 1;
  atomic_fetch_sub(&live_blocks, 1);
  atomic_fetch_sub(&live_bytes, h->size);
  free(h);
}

static void *count_calloc(size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size)
    return NULL;
  void *p = count_malloc(n * size);
  if (p != NULL)
    memset(p, 0, n * size);
  return p;
}

static void *count_realloc(void *p, size_t size) {
  if (p == NULL)
    return count_malloc(size);
  if (size == 0) {
    count_free(p);
    return NULL;
  }
  if (should_fail() || size > SIZE_MAX - sizeof(block_header))
    return NULL;
  block_header *h = (block_header *)p - 1;
  size_t old = h->size;
  block_header *q = realloc(h, sizeof *q + size);
  if (q == NULL)
    return NULL;
  q->size = size;
  atomic_fetch_sub(&live_bytes, old);
  atomic_fetch_add(&live_bytes, size);
  return q + 1;
}

void tlt_alloc_install(void) {
  atomic_store(&fail_at, 0);
  atomic_store(&fail_happened, false);
  int rc = tl_replace_allocator(count_malloc, count_realloc, count_calloc, count_free);
  ck_assert_msg(rc == TL_OK, "tl_replace_allocator(counting): %s", tl_err_name(rc));
}

void tlt_alloc_restore(void) {
  int rc = tl_replace_allocator(malloc, realloc, calloc, free);
  ck_assert_msg(rc == TL_OK, "tl_replace_allocator(default): %s", tl_err_name(rc));
}

size_t tlt_alloc_live_blocks(void) { return atomic_load(&live_blocks); }
size_t tlt_alloc_live_bytes(void) { return atomic_load(&live_bytes); }
uint64_t tlt_alloc_calls(void) { return atomic_load(&alloc_calls); }

void tlt_alloc_fail_at(uint64_t n) {
  atomic_store(&fail_happened, false);
  atomic_store(&fail_onwards, false);
  atomic_store(&fail_at, n == 0 ? 0 : atomic_load(&alloc_calls) + n);
}

void tlt_alloc_fail_from(uint64_t n) {
  tlt_alloc_fail_at(n);
  atomic_store(&fail_onwards, n != 0);
}

bool tlt_alloc_failed(void) { return atomic_load(&fail_happened); }

bool tlt_alloc_may_fail(void) {
  return atomic_load(&fail_at) != 0 && (!atomic_load(&fail_happened) || atomic_load(&fail_onwards));
}

int tlt_image_write(void *ud, const void *buf, size_t n) {
  tlt_image *im = ud;
  if (im->n + n > im->cap) {
    im->cap = (im->n + n) * 2;
    im->p = realloc(im->p, im->cap);
    ck_assert_ptr_nonnull(im->p);
  }
  memcpy(im->p + im->n, buf, n);
  im->n += n;
  return 0;
}

int tlt_image_read(void *ud, void *buf, size_t n) {
  tlt_image *im = ud;
  if (n > im->n - im->at)
    n = im->n - im->at;
  memcpy(buf, im->p + im->at, n);
  im->at += n;
  return (int)n;
}

void tlt_journal_line(void *ud, const char *line) {
  tlt_journal *c = ud;
  size_t n = strlen(line);
  if (c->len + n + 2 > c->cap) {
    c->cap = 2 * (c->len + n + 2);
    c->text = realloc(c->text, c->cap);
    ck_assert_ptr_nonnull(c->text);
  }
  memcpy(c->text + c->len, line, n);
  c->len += n;
  c->text[c->len++] = '\n';
  c->text[c->len] = '\0';
  c->lines++;
}
