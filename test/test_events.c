/* Callbacks: the order events are delivered in, re-entrant calls from callbacks, proof that no
 * callback runs under the scheduler's lock, delivery by the dispatching thread, tl_scheduler_free
 * refused from callbacks and while another thread delivers, NULL callbacks, and
 * tl_scheduler_free with work in flight releasing every task set exactly once without a leak.
 */
#include "harness.h"

#include <inttypes.h>

START_TEST(a_simple_lifecycle_makes_events_in_order) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", "r1", 2);
  tl_taskset_id ts = tlt_submit(e, 4, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_run(e, "e1", l[0].tid);
  tlt_run(e, "e1", l[1].tid);
  tlt_succeed(e, "e1", l[1].tid);
  tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(ts, 1);
  ck_assert_str_eq(tlt_seq_all(e, 0), "added e1 host=h1\n"
                                      "revive\n"
                                      "started tid=1 ts=1 idx=0 att=0 exec=e1\n"
                                      "started tid=2 ts=1 idx=1 att=0 exec=e1\n"
                                      "ended tid=2 kind=SUCCESS counts=0\n"
                                      "ended tid=1 kind=SUCCESS counts=0\n"
                                      "released ts=1");
  const tlt_event *st = tlt_nth(e, 0, TLT_EV_STARTED, 0);
  ck_assert_str_eq(st->host, "h1");
  ck_assert_uint_eq(st->task.stage_id, 4);
  ck_assert_int_eq(st->task.locality, TL_NO_PREF);
  tlt_end(e);
}
END_TEST

/* task_started, task_ended (by a status update, by a kill answered, by the loss of the executor)
 * and kill_task carry the executor's tl_executor_desc.ud; NULL for an executor that gave none. */
START_TEST(task_and_kill_events_carry_the_executor_ud) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 2); /* ud: tlt_ud_for(e, "e1") */
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_executor_desc bare = {.id = "e3", .host = "h3", .cores = 1};
  TLT_OK(e, tl_executor_add(e->s, &bare));
  void *ud1 = tlt_ud_for(e, "e1"), *ud2 = tlt_ud_for(e, "e2");
  ck_assert_ptr_ne(ud1, ud2);
  tlt_submit(e, 0, 0, 0, 5);
  tl_offer offers[] = {{"e1", 2}, {"e2", 2}, {"e3", 1}};
  tl_launch l[5];
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(tlt_offers(e, offers, 3, l, 5), 5);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_STARTED), 5);
  for (size_t i = 0; i < 5; i++) {
    const tlt_event *ev = tlt_nth(e, mark, TLT_EV_STARTED, i);
    void *want = strcmp(ev->executor, "e1") == 0   ? ud1
                 : strcmp(ev->executor, "e2") == 0 ? ud2
                                                   : NULL;
    ck_assert_ptr_eq(ev->task.executor_ud, want);
    ck_assert_ptr_eq(l[i].executor_ud, want); /* the same as the launch's */
  }
  tl_tid on1[2], on2[2], on3 = 0;
  size_t n1 = 0, n2 = 0;
  for (size_t i = 0; i < 5; i++) {
    if (strcmp(l[i].executor_id, "e1") == 0)
      on1[n1++] = l[i].tid;
    else if (strcmp(l[i].executor_id, "e2") == 0)
      on2[n2++] = l[i].tid;
    else
      on3 = l[i].tid;
  }
  ck_assert_uint_eq(n1, 2);
  ck_assert_uint_eq(n2, 2);

  /* A kill, and the end it is answered with. */
  mark = tlt_mark(e);
  TLT_OK(e, tl_kill_task(e->s, on1[0], true, "asked"));
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_KILL), 1);
  const tlt_event *kill = tlt_nth(e, mark, TLT_EV_KILL, 0);
  ck_assert_uint_eq(kill->kill_tid, on1[0]);
  ck_assert_ptr_eq(kill->executor_ud, ud1);
  tlt_killed(e, "e1", on1[0]);
  ck_assert_ptr_eq(tlt_ended_of(e, on1[0])->task.executor_ud, ud1);
  /* Ends by status. */
  tlt_succeed(e, "e1", on1[1]);
  ck_assert_ptr_eq(tlt_ended_of(e, on1[1])->task.executor_ud, ud1);
  tlt_fail(e, "e2", on2[0], TL_END_EXCEPTION);
  ck_assert_ptr_eq(tlt_ended_of(e, on2[0])->task.executor_ud, ud2);
  /* A kill and an end on the executor without a ud. */
  mark = tlt_mark(e);
  TLT_OK(e, tl_kill_task(e->s, on3, false, NULL));
  ck_assert_ptr_null(tlt_nth(e, mark, TLT_EV_KILL, 0)->executor_ud);
  tlt_succeed(e, "e3", on3);
  ck_assert_ptr_null(tlt_ended_of(e, on3)->task.executor_ud);
  /* An end by the loss of the executor, in two phases: the ud outlives nothing it needs. */
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  tlt_lose(e, "e2", TL_LOSS_EXITED, true);
  const tlt_event *lost_end = tlt_ended_of(e, on2[1]);
  ck_assert_int_eq(lost_end->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert_ptr_eq(lost_end->task.executor_ud, ud2);
  tlt_end(e);
}
END_TEST

START_TEST(an_abort_makes_ended_then_failed_then_released) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  size_t mark = tlt_mark(e);
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);
  ck_assert_str_eq(tlt_seq_all(e, mark), "ended tid=1 kind=EXCEPTION counts=1\n"
                                         "failed ts=1\n"
                                         "released ts=1");
  tlt_end(e);
}
END_TEST

/* A DAG layer submits the next stage from task_ended of the last task of the previous one (it
 * counts the successes itself: the ledger has released the set by the time the event arrives). */
static void submit_next_stage(tlt_env *e, const tlt_event *ev) {
  unsigned *successes = e->hook_ud;
  if (ev->type != TLT_EV_ENDED || ev->end_kind != TL_END_SUCCESS || ev->task.stage_id >= 2)
    return;
  if (++successes[ev->task.stage_id] == 2)
    tlt_submit(e, ev->task.stage_id + 1, 0, 0, 2);
}

START_TEST(reentrant_submit_of_the_next_stage_from_task_ended) {
  tlt_env *e = tlt_new(NULL);
  unsigned successes[3] = {0, 0, 0};
  e->hook = submit_next_stage;
  e->hook_ud = successes;
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 2);
  for (tl_taskset_id want = 1; want <= 3; want++) {
    tl_launch l[2];
    ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
    ck_assert_uint_eq(l[0].taskset, want);
    ck_assert_uint_eq(l[0].stage_id, want - 1);
    size_t mark = tlt_mark(e);
    tlt_succeed(e, "e1", l[0].tid);
    tlt_succeed(e, "e1", l[1].tid);
    char expect[256];
    if (want < 3)
      snprintf(expect, sizeof expect,
               "ended tid=%ju kind=SUCCESS counts=0\nended tid=%ju kind=SUCCESS counts=0\n"
               "released ts=%ju\nrevive",
               (uintmax_t)l[0].tid, (uintmax_t)l[1].tid, (uintmax_t)want);
    else
      snprintf(expect, sizeof expect,
               "ended tid=%ju kind=SUCCESS counts=0\nended tid=%ju kind=SUCCESS counts=0\n"
               "released ts=%ju",
               (uintmax_t)l[0].tid, (uintmax_t)l[1].tid, (uintmax_t)want);
    ck_assert_str_eq(tlt_seq_all(e, mark), expect);
  }
  ck_assert_uint_eq(tlt_stats(e).tasksets_released, 3);
  ck_assert_uint_eq(tlt_stats(e).tasksets_active, 0);
  tlt_end(e);
}
END_TEST

/* A runtime that answers revive_offers with an offer of its executor's cores. */
static void offer_on_revive(tlt_env *e, const tlt_event *ev) {
  if (ev->type != TLT_EV_REVIVE)
    return;
  tl_launch l[8];
  tlt_offer(e, "e1", 8, l, 8);
}

START_TEST(revive_callback_can_offer_reentrantly) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 3);
  e->hook = offer_on_revive;
  size_t mark = tlt_mark(e);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 5);
  /* The launches were made and delivered before tl_submit returned. */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_STARTED), 3);
  ck_assert_uint_eq(tlt_ts(e, ts).running, 3);
  /* A failure revives, the hook relaunches the index at once. */
  const tlt_event *first = tlt_nth(e, mark, TLT_EV_STARTED, 0);
  tl_tid tid = first->task.tid;
  uint32_t index = first->task.index;
  mark = tlt_mark(e);
  tlt_fail(e, "e1", tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_STARTED), 1);
  const tlt_event *again = tlt_nth(e, mark, TLT_EV_STARTED, 0);
  ck_assert_uint_eq(again->task.index, index);
  ck_assert_uint_eq(again->task.attempt, 1);
  e->hook = NULL;
  tlt_end(e);
}
END_TEST

/* Probes the scheduler from another thread while a callback runs: if the lock were held the
 * join would never return (and the test would time out). */
typedef struct probe {
  tlt_env *e;                     /* the test */
  int hb_rc;                      /* tl_executor_heartbeat's answer */
  int check_rc;                   /* tl_check's answer */
  int get_rc;                     /* tl_executor_get's answer */
  size_t probes[TLT_EV_KILL + 1]; /* probes done per event type */
} probe;

static void *probe_thread(void *arg) {
  probe *p = arg;
  tl_stats st;
  tl_stats_get(p->e->s, &st);
  p->hb_rc = tl_executor_heartbeat(p->e->s, "prober");
  char why[256];
  p->check_rc = tl_check(p->e->s, why, sizeof why);
  tl_executor_status ex;
  p->get_rc = tl_executor_get(p->e->s, "prober", &ex);
  return NULL;
}

static void probe_from_another_thread(tlt_env *e, const tlt_event *ev) {
  probe *p = e->hook_ud;
  p->hb_rc = p->check_rc = p->get_rc = -1000;
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, probe_thread, p), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  ck_assert_int_eq(p->hb_rc, TL_OK);
  ck_assert_int_eq(p->check_rc, TL_OK);
  ck_assert_int_eq(p->get_rc, TL_OK);
  p->probes[ev->type]++;
}

START_TEST(no_callback_runs_under_the_lock) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "prober", "hp", NULL, 1);
  probe p = {.e = e};
  e->hook = probe_from_another_thread;
  e->hook_ud = &p;
  tlt_add(e, "e1", "h1", NULL, 2);              /* executor_added */
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3); /* revive_offers */
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);    /* task_started */
  TLT_OK(e, tl_kill_task(e->s, l[1].tid, false, NULL)); /* kill_task */
  tlt_fail(e, "e1", l[0].tid, TL_END_EXCEPTION);        /* task_ended, taskset_failed */
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);             /* executor_lost, task_ended, released */
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  for (int type = 0; type <= TLT_EV_KILL; type++)
    ck_assert_msg(p.probes[type] > 0, "no probe during event type %d", type);
  e->hook = NULL;
  tlt_end(e);
}
END_TEST

/* tl_scheduler_free from inside a callback is TL_EBUSY and changes nothing. */
static void free_from_callback(tlt_env *e, const tlt_event *ev) {
  int *answers = e->hook_ud;
  tl_stats before, after;
  tl_stats_get(e->s, &before);
  size_t nev = e->nev;
  int rc = tl_scheduler_free(e->s);
  tl_stats_get(e->s, &after);
  tlt_assert_stats_same(&before, &after, "tl_scheduler_free in a callback");
  ck_assert_uint_eq(e->nev, nev);
  TLT_CHECK(e);
  ck_assert_int_eq(rc, TL_EBUSY);
  answers[ev->type]++;
}

START_TEST(scheduler_free_from_a_callback_is_ebusy) {
  tlt_env *e = tlt_new(NULL);
  int answers[TLT_EV_KILL + 1] = {0};
  e->hook = free_from_callback;
  e->hook_ud = answers;
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_int_eq(answers[TLT_EV_ADDED], 1);
  ck_assert_int_eq(answers[TLT_EV_STARTED], 1);
  ck_assert_int_eq(answers[TLT_EV_ENDED], 1);
  ck_assert_int_eq(answers[TLT_EV_RELEASED], 1);
  e->hook = NULL;
  tlt_end(e);
}
END_TEST

/* While the main thread delivers (inside a callback), another thread's call queues its events
 * for the dispatching thread, which delivers them after the current callback returns. */
typedef struct other_thread {
  tlt_env *e;            /* the test */
  bool done;             /* the hook ran */
  int submit_rc;         /* the other thread's tl_submit */
  int free_rc;           /* the other thread's tl_scheduler_free */
  size_t revives_before; /* revive_offers seen when the hook started */
  size_t revives_after;  /* and after the other thread's submit returned */
  size_t queued;         /* events_queued seen after it */
} other_thread;

static void *submit_from_other_thread(void *arg) {
  other_thread *o = arg;
  o->submit_rc = tlt_submit_rc(o->e, 9, 0, 5, 1, 0, NULL);
  o->free_rc = tl_scheduler_free(o->e->s);
  return NULL;
}

static void call_from_other_thread(tlt_env *e, const tlt_event *ev) {
  other_thread *o = e->hook_ud;
  if (ev->type != TLT_EV_ENDED || o->done)
    return;
  o->done = true;
  o->revives_before = tlt_count(e, 0, TLT_EV_REVIVE);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, submit_from_other_thread, o), 0);
  ck_assert_int_eq(pthread_join(t, NULL), 0);
  o->revives_after = tlt_count(e, 0, TLT_EV_REVIVE);
  tl_stats st;
  tl_stats_get(e->s, &st);
  o->queued = st.events_queued;
}

START_TEST(events_of_another_thread_are_delivered_by_the_dispatching_thread) {
  tlt_env *e = tlt_new(NULL);
  other_thread o = {.e = e};
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  e->hook = call_from_other_thread;
  e->hook_ud = &o;
  size_t mark = tlt_mark(e);
  tlt_succeed(e, "e1", l[0].tid);
  e->hook = NULL;
  ck_assert(o.done);
  ck_assert_int_eq(o.submit_rc, TL_OK);
  ck_assert_int_eq(o.free_rc, TL_EBUSY);
  /* Not delivered while the callback ran... */
  ck_assert_uint_eq(o.revives_after, o.revives_before);
  ck_assert_uint_ge(o.queued, 1);
  /* ...but by the time this thread's call returned, by this thread. */
  ck_assert_str_eq(tlt_seq_all(e, mark), "ended tid=1 kind=SUCCESS counts=0\n"
                                         "released ts=1\n"
                                         "revive");
  const tlt_event *rev = tlt_last(e, TLT_EV_REVIVE);
  ck_assert(pthread_equal(rev->thread, pthread_self()));
  ck_assert_uint_eq(tlt_stats(e).events_queued, 0);
  ck_assert_uint_eq(tlt_stats(e).tasksets_active, 1);
  tlt_end(e);
}
END_TEST

static void count_queued_in_ended(tlt_env *e, const tlt_event *ev) {
  if (ev->type != TLT_EV_ENDED)
    return;
  tl_stats st;
  tl_stats_get(e->s, &st);
  *(size_t *)e->hook_ud = st.events_queued;
}

START_TEST(events_queued_counts_what_is_not_delivered_yet) {
  tlt_env *e = tlt_new(NULL);
  size_t queued = 0;
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  e->hook = count_queued_in_ended;
  e->hook_ud = &queued;
  tlt_succeed(e, "e1", l[0].tid);
  e->hook = NULL;
  ck_assert_uint_ge(queued, 1); /* taskset_released was still to come */
  ck_assert_uint_eq(tlt_stats(e).events_queued, 0);
  tlt_end(e);
}
END_TEST

static void no_task_ended(tl_callbacks *cb) { cb->task_ended = NULL; }

START_TEST(without_task_ended_the_library_frees_results) {
  tlt_env *e = tlt_new_edit(NULL, no_task_ended);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_result *r = tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(r->frees, 1);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_ENDED), 0);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end(e);
}
END_TEST

START_TEST(a_scheduler_without_callbacks_works) {
  tlt_env *e = tlt_new_nocb(NULL);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_result *r = tlt_succeed(e, "e1", l[0].tid);
  ck_assert_uint_eq(r->frees, 1);
  tlt_fail(e, "e1", l[1].tid, TL_END_EXCEPTION);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(e->nev, 0);
  tlt_end(e);
}
END_TEST

START_TEST(a_scheduler_with_default_config_and_clock_works) {
  tl_scheduler *s = NULL;
  ck_assert_int_eq(tl_scheduler_new(NULL, NULL, &s), TL_OK);
  ck_assert_int_eq(tl_check(s, NULL, 0), TL_OK);
  tl_executor_desc d = {.id = "e1", .host = "h1", .cores = 1};
  ck_assert_int_eq(tl_executor_add(s, &d), TL_OK);
  ck_assert_int_eq(tl_check(s, NULL, 0), TL_OK);
  ck_assert_int_eq(tl_executor_heartbeat(s, "e1"), TL_OK);
  ck_assert_int_eq(tl_check(s, NULL, 0), TL_OK);
  uint64_t next = tl_tick(s);
  ck_assert_uint_le(next, 120 * TLT_SEC);
  ck_assert_uint_gt(next, 0);
  ck_assert_int_eq(tl_check(s, NULL, 0), TL_OK);
  ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
}
END_TEST

/* Calls made from taskset_released while tl_scheduler_free runs: inspection works, everything
 * else is TL_EBUSY. */
typedef struct during_free {
  size_t releases;   /* taskset_released seen */
  int submit_rc;     /* tl_submit's answer */
  int add_rc;        /* tl_executor_add's answer */
  int offers_rc;     /* tl_resource_offers's answer */
  int free_rc;       /* tl_scheduler_free's answer */
  size_t stats_sets; /* tasksets_active + tasksets_zombie seen by tl_stats_get */
} during_free;

static void call_during_free(tlt_env *e, const tlt_event *ev) {
  during_free *d = e->hook_ud;
  if (ev->type != TLT_EV_RELEASED)
    return;
  if (d->releases++ > 0)
    return;
  static int payload;
  tl_taskset_desc td = {.stage_id = 50, .ntasks = 1, .payload = &payload};
  d->submit_rc = tl_submit(e->s, &td, NULL);
  tl_executor_desc xd = {.id = "late", .host = "h9", .cores = 1};
  d->add_rc = tl_executor_add(e->s, &xd);
  tl_offer o = {.executor_id = "e1", .cores = 4};
  tl_launch l[4];
  size_t n = 0;
  d->offers_rc = tl_resource_offers(e->s, &o, 1, l, 4, &n);
  d->free_rc = tl_scheduler_free(e->s);
  tl_stats st;
  tl_stats_get(e->s, &st);
  d->stats_sets = st.tasksets_active + st.tasksets_zombie;
}

START_TEST(scheduler_free_with_work_in_flight_releases_every_task_set_once) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", "r1", 2);
  tlt_add(e, "e2", "h2", "r1", 2);
  tlt_add(e, "e3", "h3", NULL, 1);
  /* A finished and released task set: not released again. */
  tl_taskset_id done = tlt_submit(e, 9, 0, 9, 1);
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offer(e, "e3", 1, l, 1), 1);
  tlt_succeed(e, "e3", l[0].tid);
  ck_assert_uint_eq(tlt_released(e, done), 1);
  /* A zombie with two running attempts on e1. */
  tl_taskset_id zombie = tlt_submit(e, 0, 0, 0, 3);
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_run(e, "e1", l[0].tid);
  tl_taskset_id active = tlt_submit(e, 0, 1, 0, 3);
  ck_assert(tlt_ts(e, zombie).zombie);
  /* The active attempt runs two attempts on e2, which is then pending loss (frozen). */
  ck_assert_uint_eq(tlt_offer(e, "e2", 2, l + 2, 2), 2);
  ck_assert_uint_eq(l[2].taskset, active);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  /* An active task set that never ran, and a tombstone. */
  tl_taskset_id idle = tlt_submit(e, 1, 0, 1, 4);
  tlt_lose(e, "e3", TL_LOSS_EXITED, false);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.attempts_running, 2);
  ck_assert_uint_eq(st.attempts_frozen, 2);
  ck_assert_uint_eq(st.tasksets_zombie, 1);
  ck_assert_uint_eq(st.tasksets_active, 2);
  ck_assert_uint_eq(st.executors_pending_loss, 1);
  ck_assert_uint_eq(st.tombstones, 1);

  during_free d = {0};
  e->hook = call_during_free;
  e->hook_ud = &d;
  size_t mark = tlt_mark(e);
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  e->s = NULL;
  /* Released in submission order, delivered by this call, with no other event. */
  char want[128];
  snprintf(want, sizeof want, "released ts=%ju\nreleased ts=%ju\nreleased ts=%ju",
           (uintmax_t)zombie, (uintmax_t)active, (uintmax_t)idle);
  ck_assert_str_eq(tlt_seq_all(e, mark), want);
  ck_assert_uint_eq(d.releases, 3);
  ck_assert_int_eq(d.submit_rc, TL_EBUSY);
  ck_assert_int_eq(d.add_rc, TL_EBUSY);
  ck_assert_int_eq(d.offers_rc, TL_EBUSY);
  ck_assert_int_eq(d.free_rc, TL_EBUSY);
  ck_assert_uint_le(d.stats_sets, 3);
  ck_assert_msg(tlt_alloc_live_blocks() == 0, "tl_scheduler_free left %zu blocks (%zu bytes)",
                tlt_alloc_live_blocks(), tlt_alloc_live_bytes());
  ck_assert_uint_eq(tlt_alloc_live_bytes(), 0);
  tlt_end_freed(e);
  tlt_alloc_restore();
}
END_TEST

/* An executor dies just as its tasks start: the loss, made from task_started, is delivered
 * after the started events already queued, and ends both attempts. */
static void lose_on_start(tlt_env *e, const tlt_event *ev) {
  if (ev->type != TLT_EV_STARTED || strcmp(ev->executor, "e1") != 0)
    return;
  tl_loss_reason why = {.kind = TL_LOSS_PROCESS_LOST, .caused_by_app = true};
  int rc = tl_executor_lost(e->s, "e1", &why);
  ck_assert_int_eq(rc, *(int *)e->hook_ud == 0 ? TL_OK : TL_EGONE);
  (*(int *)e->hook_ud)++;
  TLT_CHECK(e);
}

START_TEST(reentrant_loss_from_task_started) {
  tlt_env *e = tlt_new(NULL);
  int calls = 0;
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  e->hook = lose_on_start;
  e->hook_ud = &calls;
  size_t mark = tlt_mark(e);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  e->hook = NULL;
  ck_assert_int_eq(calls, 2);
  ck_assert_str_eq(tlt_seq(e, mark), "started tid=1 ts=1 idx=0 att=0 exec=e1\n"
                                     "started tid=2 ts=1 idx=1 att=0 exec=e1\n"
                                     "lost e1 kind=PROCESS_LOST\n"
                                     "ended tid=1 kind=EXECUTOR_LOST counts=0\n"
                                     "ended tid=2 kind=EXECUTOR_LOST counts=0");
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 2);
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 0);
  tlt_end(e);
}
END_TEST

/* Strings passed in are copied: calls made from a callback have their events delivered later,
 * after the caller's buffers were reused. */
static void calls_with_reused_buffers(tlt_env *e, const tlt_event *ev) {
  if (ev->type != TLT_EV_STARTED || ev->task.index != 0)
    return;
  char buf[64];
  snprintf(buf, sizeof buf, "kill reason");
  TLT_OK(e, tl_kill_task(e->s, ev->task.tid, true, buf));
  snprintf(buf, sizeof buf, "update message");
  tl_update u = {.state = TL_TASK_FAILED, .failure = TL_END_COMMIT_DENIED, .message = buf};
  TLT_OK(e, tl_status_update(e->s, "e1", ev->task.tid, &u));
  snprintf(buf, sizeof buf, "loss message");
  tl_loss_reason why = {.kind = TL_LOSS_PROCESS_LOST, .message = buf};
  TLT_OK(e, tl_executor_lost(e->s, "e2", &why));
  snprintf(buf, sizeof buf, "cancel reason");
  TLT_OK(e, tl_cancel_stage(e->s, 0, buf));
  memset(buf, 'X', sizeof buf - 1);
  buf[sizeof buf - 1] = '\0';
}

/* The room a steady load needs is kept (issue: rounds of many launches whose tasks all end
 * before the next round). Each round here launches 300 tasks in one call (300 task_started
 * events) and finishes them all, so nothing runs between rounds while tasks stay pending: the
 * event arrays, attempts_by_tid's array and the attempt records the first round allocated are
 * the next rounds' too, and a later round allocates at most one block. Once the task set is
 * done the scheduler is idle and holds what an empty one does. */
START_TEST(a_steady_load_keeps_its_room_and_an_idle_scheduler_gives_it_back) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 300);
  tl_stats added;
  tl_stats_get(e->s, &added);
  tlt_submit(e, 0, 0, 0, 3000);
  tl_stats submitted;
  tl_stats_get(e->s, &submitted);
  tl_launch l[300];
  size_t kept_bytes = 0;
  for (int round = 0; round < 10; round++) {
    uint64_t calls = tlt_alloc_calls();
    ck_assert_uint_eq(tlt_offer(e, "e1", 300, l, 300), 300);
    for (size_t i = 0; i < 300; i++)
      tlt_succeed(e, "e1", l[i].tid);
    tl_stats st;
    tl_stats_get(e->s, &st);
    uint64_t allocated = tlt_alloc_calls() - calls;
    if (round == 0) {
      ck_assert_msg(allocated > 300, "the first round allocated only %" PRIu64 " times", allocated);
      kept_bytes = st.mem_live_bytes;
      ck_assert_msg(kept_bytes > submitted.mem_live_bytes,
                    "nothing was kept for the next round: %zu bytes, %zu before it", kept_bytes,
                    submitted.mem_live_bytes);
    } else if (round >= 2 && round < 9) { /* round 1 grows the other event array */
      ck_assert_msg(allocated <= 1, "round %d allocated %" PRIu64 " times", round, allocated);
    }
    if (round == 1)
      kept_bytes = st.mem_live_bytes;
    else if (round > 1 && round < 9)
      ck_assert_uint_eq(st.mem_live_bytes, kept_bytes);
    ck_assert_uint_eq(st.attempts_running, 0);
  }
  tlt_dispatch_all(e);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_RELEASED), 1);
  tl_stats st;
  tl_stats_get(e->s, &st);
  ck_assert_uint_eq(st.mem_live_bytes, added.mem_live_bytes);
  ck_assert_uint_eq(st.mem_live_blocks, added.mem_live_blocks);
  tlt_end(e);
  tlt_alloc_restore();
}
END_TEST

/* What a burst grew is given back while the scheduler stays busy, once a quiet stretch has paid
 * for growing it again. A burst is a round of 300 launches whose tasks all end; right after one,
 * the next burst finds its room and allocates at most its temporary array; after a few single
 * launches (each ended before the next) it still does; after thousands, the event arrays,
 * attempts_by_tid and the spare records beyond TL__SPARE_ATTEMPTS were given back, and the next
 * burst grows them again. */
static uint64_t burst(tlt_env *e) {
  tl_launch l[300];
  uint64_t calls = tlt_alloc_calls();
  ck_assert_uint_eq(tlt_offer(e, "e1", 300, l, 300), 300);
  for (size_t i = 0; i < 300; i++)
    tlt_succeed(e, "e1", l[i].tid);
  return tlt_alloc_calls() - calls;
}

static void singles(tlt_env *e, int n) {
  for (int i = 0; i < n; i++) {
    tl_launch l;
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l, 1), 1);
    tlt_succeed(e, "e1", l.tid);
  }
}

START_TEST(a_burst_is_given_back_after_a_quiet_stretch) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 300);
  tlt_submit(e, 0, 0, 0, 10000);
  uint64_t first = burst(e);
  ck_assert_msg(first > 300, "the first burst allocated only %" PRIu64 " times", first);
  burst(e); /* the second grows the other event array, which the first burst's batch did not */
  uint64_t kept = burst(e);
  ck_assert_msg(kept <= 1, "a burst right after another allocated %" PRIu64 " times", kept);
  singles(e, 100);
  kept = burst(e);
  ck_assert_msg(kept <= 1, "a burst 100 single launches later allocated %" PRIu64 " times", kept);
  singles(e, 3000);
  uint64_t again = burst(e);
  ck_assert_msg(again > 8,
                "a burst 3000 single launches later allocated %" PRIu64 " times: nothing was "
                "given back",
                again);
  tlt_end(e);
  tlt_alloc_restore();
}
END_TEST

START_TEST(strings_given_inside_a_callback_are_copied) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_submit(e, 0, 0, 0, 2);
  e->hook = calls_with_reused_buffers;
  tl_offer o[2] = {{"e1", 1}, {"e2", 1}};
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 2), 2);
  e->hook = NULL;
  const tlt_event *kill = tlt_last(e, TLT_EV_KILL);
  ck_assert_ptr_nonnull(kill);
  ck_assert_ptr_nonnull(strstr(kill->text, "kill reason"));
  ck_assert_str_eq(tlt_ended_of(e, l[0].tid)->text, "update message");
  const tlt_event *lost = tlt_last(e, TLT_EV_LOST);
  ck_assert_str_eq(lost->text, "loss message");
  ck_assert_ptr_nonnull(strstr(tlt_ended_of(e, l[1].tid)->text, "loss message"));
  const tlt_event *failed = tlt_last(e, TLT_EV_FAILED);
  ck_assert_ptr_nonnull(failed);
  ck_assert_ptr_nonnull(strstr(failed->text, "cancel reason"));
  ck_assert_uint_eq(tlt_stats(e).tasksets_released, 1);
  tlt_end(e);
}
END_TEST

Suite *tl_events_suite(void) {
  Suite *s = suite_create("events");
  TCase *tc = tlt_tcase(s, "order");
  tcase_add_test(tc, a_simple_lifecycle_makes_events_in_order);
  tcase_add_test(tc, an_abort_makes_ended_then_failed_then_released);
  tcase_add_test(tc, task_and_kill_events_carry_the_executor_ud);
  tcase_add_test(tc, events_queued_counts_what_is_not_delivered_yet);
  tc = tlt_tcase(s, "reentrancy");
  tcase_add_test(tc, reentrant_submit_of_the_next_stage_from_task_ended);
  tcase_add_test(tc, revive_callback_can_offer_reentrantly);
  tcase_add_test(tc, no_callback_runs_under_the_lock);
  tcase_add_test(tc, scheduler_free_from_a_callback_is_ebusy);
  tcase_add_test(tc, events_of_another_thread_are_delivered_by_the_dispatching_thread);
  tcase_add_test(tc, reentrant_loss_from_task_started);
  tcase_add_test(tc, strings_given_inside_a_callback_are_copied);
  tcase_add_test(tc, a_steady_load_keeps_its_room_and_an_idle_scheduler_gives_it_back);
  tcase_add_test(tc, a_burst_is_given_back_after_a_quiet_stretch);
  tc = tlt_tcase(s, "callbacks");
  tcase_add_test(tc, without_task_ended_the_library_frees_results);
  tcase_add_test(tc, a_scheduler_without_callbacks_works);
  tcase_add_test(tc, a_scheduler_with_default_config_and_clock_works);
  tc = tlt_tcase(s, "free");
  tcase_add_test(tc, scheduler_free_with_work_in_flight_releases_every_task_set_once);
  return s;
}
