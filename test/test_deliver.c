/* Delivery (tl_config.delivery): with TL_DELIVER_DEFERRED no call delivers; tl_dispatch delivers
 * what was queued, in order, on its caller's thread; events_ready is made once per wake-up;
 * tl_dispatch refuses from inside a callback; tl_scheduler_free delivers what is left and
 * tl_scheduler_abandon discards it; journal lines wait with the events; with four threads making
 * calls every callback runs on the one thread that dispatches, with and without the libuv
 * driver.
 */
#include "harness.h"

#include "taskledger-uv.h"

#include "../examples/replay/replay.h"

#include <inttypes.h>
#include <stdatomic.h>

/* What events_ready saw: how often it was made, and on which thread last. */
typedef struct ready_log {
  atomic_uint n;
} ready_log;

static void count_ready(void *ud) { atomic_fetch_add(&((ready_log *)ud)->n, 1); }

static unsigned readies(ready_log *r) { return atomic_load(&r->n); }

static tl_config deferred_config(ready_log *r) {
  tl_config cfg = tlt_config();
  cfg.delivery = TL_DELIVER_DEFERRED;
  cfg.events_ready = r != NULL ? count_ready : NULL;
  cfg.events_ready_ud = r;
  return cfg;
}

static size_t queued(tlt_env *e) { return tlt_stats(e).events_queued; }

/* Every event recorded from mark on was delivered by thread t. */
static void assert_delivered_by(const tlt_env *e, size_t mark, pthread_t t) {
  for (size_t i = mark; i < e->nev; i++)
    ck_assert_msg(pthread_equal(e->ev[i].thread, t), "event %zu (%s) delivered by another thread",
                  i, e->ev[i].line);
}

START_TEST(calls_queue_and_tl_dispatch_delivers_them_in_order) {
  ready_log r = {0};
  tl_config cfg = deferred_config(&r);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  ck_assert_uint_eq(e->nev, 0); /* the call delivered nothing */
  ck_assert_uint_eq(readies(&r), 1);
  ck_assert_uint_eq(queued(e), 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  ck_assert_uint_eq(e->nev, 0);
  ck_assert_uint_eq(readies(&r), 1); /* one wake-up for both */
  ck_assert_uint_eq(queued(e), 2);

  ck_assert_int_eq(tl_dispatch(e->s), 2);
  TLT_CHECK(e);
  ck_assert_str_eq(tlt_seq_all(e, 0), "added e1 host=h1\nrevive");
  assert_delivered_by(e, 0, pthread_self());
  ck_assert_uint_eq(queued(e), 0);
  ck_assert_int_eq(tl_dispatch(e->s), 0); /* nothing left */
  ck_assert_uint_eq(readies(&r), 1);

  /* The next event makes the next wake-up. */
  tl_offer o = {"e1", 2};
  tl_launch l[2];
  size_t n = 0;
  TLT_OK(e, tl_resource_offers(e->s, &o, 1, l, 2, &n));
  ck_assert_uint_eq(n, 2);
  ck_assert_uint_eq(readies(&r), 2);
  size_t mark = tlt_mark(e);
  tl_tid tids[2] = {l[0].tid, l[1].tid};
  tl_update fin[2] = {{.state = TL_TASK_FINISHED}, {.state = TL_TASK_FINISHED}};
  TLT_OK(e, tl_status_updates(e->s, "e1", tids, fin, 2, NULL));
  ck_assert_uint_eq(readies(&r), 2);
  ck_assert_uint_eq(e->nev, mark);
  ck_assert_int_eq(tl_dispatch(e->s), 5); /* 2 started, 2 ended, the release */
  TLT_CHECK(e);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_STARTED), 2);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_STARTED, 0)->task.tid, tids[0]);
  ck_assert_uint_eq(tlt_nth(e, mark, TLT_EV_ENDED, 1)->task.tid, tids[1]);
  tlt_end(e);
}
END_TEST

START_TEST(inline_delivery_is_unchanged_and_tl_dispatch_finds_nothing) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  ck_assert_uint_eq(e->nev, 1);
  ck_assert_int_eq(tl_dispatch(e->s), 0);
  TLT_CHECK(e);
  ck_assert_int_eq(tl_dispatch(NULL), TL_EINVAL);
  tlt_end(e);
}
END_TEST

START_TEST(bad_delivery_settings_are_refused) {
  ready_log r = {0};
  tl_scheduler *s = (tl_scheduler *)&r; /* must stay untouched */
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.events_ready = count_ready; /* only with deferred delivery */
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  tl_config_init(&cfg);
  cfg.delivery = (tl_delivery)2;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_EINVAL);
  ck_assert_ptr_eq(s, (tl_scheduler *)&r);
  /* Deferred without events_ready is fine: the runtime polls tl_dispatch. */
  cfg.delivery = TL_DELIVER_DEFERRED;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_OK);
  ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
}
END_TEST

/* The hook of dispatch_inside_a_callback: at the first task_ended, tl_dispatch is refused and
 * a submission is made (its revive_offers waits for the next tl_dispatch). */
typedef struct inside {
  ready_log *r;
  int busy;              /* what tl_dispatch answered inside */
  unsigned ready_before; /* events_ready made before the submission inside */
  unsigned ready_after;  /* and after it */
  bool done;
} inside;

static void dispatch_inside(tlt_env *e, const tlt_event *ev) {
  inside *in = e->hook_ud;
  if (ev->type != TLT_EV_ENDED || in->done)
    return;
  in->done = true;
  in->busy = tl_dispatch(e->s);
  in->ready_before = readies(in->r);
  (void)tlt_submit(e, 1, 0, 0, 1);
  in->ready_after = readies(in->r);
}

START_TEST(dispatch_inside_a_callback_is_refused_and_its_events_wait) {
  ready_log r = {0};
  tl_config cfg = deferred_config(&r);
  tlt_env *e = tlt_new(&cfg);
  inside in = {.r = &r};
  e->hook = dispatch_inside;
  e->hook_ud = &in;
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_succeed(e, "e1", l[0].tid);
  size_t mark = tlt_mark(e);
  ck_assert_int_eq(tl_dispatch(e->s), 5); /* added, revive, started, ended, released */
  TLT_CHECK(e);
  ck_assert_int_eq(in.busy, TL_EBUSY);
  /* The dispatch took the queue before delivering: the callback's call made a new wake-up. */
  ck_assert_uint_eq(in.ready_after, in.ready_before + 1);
  ck_assert_uint_eq(queued(e), 1); /* the inner submission's revive_offers, not delivered */
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_REVIVE), 1);
  size_t mark2 = tlt_mark(e);
  ck_assert_int_eq(tl_dispatch(e->s), 1);
  TLT_CHECK(e);
  ck_assert_str_eq(tlt_seq_all(e, mark2), "revive");
  tlt_end(e);
}
END_TEST

START_TEST(free_delivers_what_is_still_queued) {
  tl_config cfg = deferred_config(NULL);
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_result *res = tlt_succeed(e, "e1", l[0].tid); /* its result waits in the queue */
  ck_assert_uint_eq(e->nev, 0);
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  e->s = NULL;
  /* Queued events first, in order; then the release of the task set still alive. */
  ck_assert_str_eq(tlt_seq_all(e, 0), "added e1 host=h1\nrevive\n"
                                      "started tid=1 ts=1 idx=0 att=0 exec=e1\n"
                                      "started tid=2 ts=1 idx=1 att=0 exec=e1\n"
                                      "ended tid=1 kind=SUCCESS counts=0\nreleased ts=1");
  ck_assert_ptr_eq(tlt_ended_of(e, l[0].tid)->result, res);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end_freed(e);
}
END_TEST

/* tl_scheduler_abandon drops the scheduler as a crash would: the queued events (ends holding
 * results, a release) and journal lines are discarded, not delivered; each result is freed once
 * by its result_free, no payload comes back, and nothing is left allocated. */
static void count_journal_line(void *ud, const char *line) {
  (void)line;
  ++*(unsigned *)ud;
}

static void abandon_inside(tlt_env *e, const tlt_event *ev) {
  (void)ev;
  *(int *)e->hook_ud = tl_scheduler_abandon(e->s);
}

START_TEST(abandon_delivers_nothing_and_hands_no_payload_back) {
  tlt_alloc_install();
  unsigned lines = 0;
  tl_config cfg = deferred_config(NULL);
  cfg.journal = count_journal_line;
  cfg.journal_ud = &lines;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 3);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id done = tlt_submit(e, 0, 0, 0, 2);
  tl_taskset_id busy = tlt_submit(e, 1, 0, 0, 3);
  tl_offer o[] = {{"e1", 3}, {"e2", 1}};
  tl_launch l[4];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 4), 4);
  tlt_dispatch_all(e);
  /* Queued, undelivered: two ends holding results and the release of the finished task set;
   * running, frozen (e2 pending loss) and pending work stays behind in the ledger. */
  tlt_result *res[2];
  size_t nres = 0;
  for (size_t i = 0; i < 4; i++)
    if (l[i].taskset == done)
      res[nres++] = tlt_succeed(e, l[i].executor_id, l[i].tid);
  ck_assert_uint_eq(nres, 2);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_ge(st.events_queued, 3);
  ck_assert_uint_eq(st.attempts_running + st.attempts_frozen, 2);
  TLT_ERR(e, TL_EINVAL, tl_scheduler_abandon(NULL));

  size_t mark = tlt_mark(e);
  unsigned lines_before = lines;
  ck_assert_int_eq(tl_scheduler_abandon(e->s), TL_OK);
  e->s = NULL;
  ck_assert_uint_eq(e->nev, mark);        /* no callback */
  ck_assert_uint_eq(lines, lines_before); /* no journal line, the queued ones dropped */
  for (size_t i = 0; i < nres; i++)
    ck_assert_uint_eq(res[i]->frees, 1);       /* by result_free, once */
  ck_assert_uint_eq(tlt_released(e, done), 0); /* its queued release was not delivered */
  ck_assert_uint_eq(tlt_released(e, busy), 0);
  ck_assert_msg(tlt_alloc_live_blocks() == 0, "tl_scheduler_abandon left %zu blocks (%zu bytes)",
                tlt_alloc_live_blocks(), tlt_alloc_live_bytes());
  /* The payloads are the test's again: the harness frees them with the env. */
  for (size_t i = 0; i < e->nsubs; i++)
    e->subs[i].released = 1;
  tlt_end_freed(e);
  tlt_alloc_restore();
}
END_TEST

/* From inside a callback, and while tl_scheduler_free hands payloads back: TL_EBUSY, nothing
 * changes; with the libuv driver attached, too. */
START_TEST(abandon_is_refused_where_free_is) {
  int rc = 0;
  tlt_env *e = tlt_new(NULL);
  e->hook = abandon_inside;
  e->hook_ud = &rc;
  tlt_add(e, "e1", "h1", NULL, 1);
  ck_assert_int_eq(rc, TL_EBUSY);
  e->hook = NULL;
  TLT_CHECK(e);
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_ALIVE);
  tlt_submit(e, 0, 0, 0, 1);
  rc = 0;
  e->hook = abandon_inside; /* the release tl_scheduler_free makes */
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  ck_assert_int_eq(rc, TL_EBUSY);
  e->s = NULL;
  tlt_end_freed(e);

  tl_config cfg = deferred_config(NULL);
  e = tlt_new(&cfg);
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  tl_uv *h;
  ck_assert_int_eq(tl_uv_start(e->s, &loop, &h), TL_OK);
  ck_assert_int_eq(tl_scheduler_abandon(e->s), TL_EBUSY);
  ck_assert_int_eq(tl_uv_stop(h, NULL, NULL), TL_OK);
  ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  ck_assert_int_eq(tl_scheduler_abandon(e->s), TL_OK);
  e->s = NULL;
  tlt_end_freed(e);
}
END_TEST

/* executor_removed waits in the queue like every event and is delivered in its place: after
 * executor_lost and the ends, before revive_offers; its message is the library's copy (the
 * caller's buffer may change before the dispatch). A scheduler without the callback queues one
 * event less; tl_scheduler_free delivers one still queued. */
START_TEST(executor_removed_waits_for_the_dispatch_in_its_place) {
  ready_log r = {0}, r2 = {0};
  tl_config cfg = deferred_config(&r), cfg2 = deferred_config(&r2);
  tlt_env *e = tlt_new_edit(&cfg, tlt_record_removed), *without = tlt_new(&cfg2);
  tlt_env *both[2] = {e, without};
  char message[] = "exited 1";
  tl_loss_reason why = {
      .kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 1, .message = message};
  tl_taskset_id ts = 0;
  for (int i = 0; i < 2; i++) {
    tlt_add(both[i], "e1", "h1", NULL, 2);
    ts = tlt_submit(both[i], 0, 0, 0, 2);
    tl_launch l[2];
    ck_assert_uint_eq(tlt_offer(both[i], "e1", 2, l, 2), 2);
    tlt_dispatch_all(both[i]);
    TLT_OK(both[i], tl_executor_lost(both[i]->s, "e1", &why));
  }
  memset(message, 'x', sizeof message - 1);
  size_t mark = tlt_mark(e);
  ck_assert_uint_eq(queued(e), 5);
  ck_assert_uint_eq(queued(without), 4);
  ck_assert_int_eq(tl_dispatch(e->s), 5);
  TLT_CHECK(e);
  ck_assert_str_eq(tlt_seq_all(e, mark), "lost e1 kind=EXITED\n"
                                         "ended tid=1 kind=EXECUTOR_LOST counts=0\n"
                                         "ended tid=2 kind=EXECUTOR_LOST counts=0\n"
                                         "removed e1 kind=EXITED app=1 exit=1\nrevive");
  assert_delivered_by(e, mark, pthread_self());
  const tlt_event *removed = tlt_last(e, TLT_EV_REMOVED);
  ck_assert_str_eq(removed->text, "exited 1");
  ck_assert_ptr_eq(removed->executor_ud, tlt_ud_for(e, "e1"));
  size_t mark2 = tlt_mark(without);
  ck_assert_int_eq(tl_dispatch(without->s), 4);
  TLT_CHECK(without);
  ck_assert_str_eq(tlt_seq_all(without, mark2), "lost e1 kind=EXITED\n"
                                                "ended tid=1 kind=EXECUTOR_LOST counts=0\n"
                                                "ended tid=2 kind=EXECUTOR_LOST counts=0\nrevive");
  tlt_end(without);

  tlt_add(e, "e2", "h2", NULL, 1);
  tl_loss_reason reset = {.kind = TL_LOSS_PROCESS_LOST, .message = "connection reset"};
  TLT_OK(e, tl_executor_lost(e->s, "e2", &reset));
  mark = tlt_mark(e);
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  e->s = NULL;
  ck_assert_str_eq(tlt_seq_all(e, mark), "added e2 host=h2\nlost e2 kind=PROCESS_LOST\n"
                                         "removed e2 kind=PROCESS_LOST app=0 exit=0\n"
                                         "released ts=1");
  ck_assert_str_eq(tlt_last(e, TLT_EV_REMOVED)->text, "connection reset");
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  tlt_end_freed(e);
}
END_TEST

/* A task event names its executor without a reference. An executor forgotten at once (no
 * tombstones kept) by the second phase of its loss, whose executor_lost was delivered in the
 * first and whose executor_removed nobody listens to, leaves only task events naming it in the
 * queue: its record is kept, out of every index, until they are delivered and settled, and
 * tl_check accounts it all the while. */
START_TEST(task_events_keep_a_forgotten_executors_names) {
  ready_log r = {0};
  tl_config cfg = deferred_config(&r);
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_add(e, "e2", "h2", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 3);
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  TLT_CHECK(e);
  tl_loss_reason pending = {.kind = TL_LOSS_PENDING};
  TLT_OK(e, tl_executor_lost(e->s, "e1", &pending));
  ck_assert_int_eq(tl_dispatch(e->s), 6); /* added e1, e2, revive, started, started, lost */
  TLT_CHECK(e);
  tl_loss_reason why = {.kind = TL_LOSS_EXITED, .caused_by_app = false, .message = "gone"};
  TLT_OK(e, tl_executor_lost(e->s, "e1", &why));
  TLT_CHECK(e);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 0);
  tl_executor_status info;
  ck_assert_int_eq(tl_executor_get(e->s, "e1", &info), TL_ENOENT); /* forgotten */
  size_t kept = tlt_stats(e).mem_live_bytes;

  /* e2 takes the retry and finishes it: the queue holds task events of both. */
  ck_assert_uint_eq(tlt_offer(e, "e2", 1, l, 1), 1);
  tl_update fin = {.state = TL_TASK_FINISHED};
  TLT_OK(e, tl_status_update(e->s, "e2", l[0].tid, &fin));
  TLT_CHECK(e);
  ck_assert_uint_eq(tlt_stats(e).mem_live_bytes, kept); /* e1's record is still kept */

  size_t mark = tlt_mark(e);
  ck_assert_int_gt(tl_dispatch(e->s), 0);
  TLT_CHECK(e); /* settled: the kept record is freed */
  ck_assert_uint_lt(tlt_stats(e).mem_live_bytes, kept);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_STARTED), 1);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 3);
  for (unsigned k = 0; k < 2; k++) {
    const tlt_event *ended = tlt_nth(e, mark, TLT_EV_ENDED, k);
    ck_assert_str_eq(ended->executor, "e1");
    ck_assert_str_eq(ended->host, "h1");
    ck_assert_int_eq(ended->end_kind, TL_END_EXECUTOR_LOST);
  }
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_STARTED, 0)->executor, "e2");
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_ENDED, 2)->executor, "e2");
  ck_assert_uint_eq(tlt_released(e, ts), 0);
  tlt_end(e);
}
END_TEST

/* The journal of journal_lines_wait: each line with the number of events delivered when it was
 * written. */
typedef struct jlog {
  tlt_env *e;
  char lines[16][1200];
  size_t at[16];
  size_t n;
  char text[16 * 1200]; /* every line, each ended by a newline: for the replay */
  size_t len;
} jlog;

static void on_line(void *ud, const char *line) {
  jlog *j = ud;
  if (j->n < 16) {
    snprintf(j->lines[j->n], sizeof j->lines[j->n], "%s", line);
    j->at[j->n] = j->e != NULL ? j->e->nev : 0;
    j->len += (size_t)snprintf(j->text + j->len, sizeof j->text - j->len, "%s\n", line);
  }
  j->n++;
}

START_TEST(journal_lines_wait_for_the_dispatch) {
  ready_log r = {0};
  jlog j = {0};
  tl_config cfg = deferred_config(&r);
  cfg.journal = on_line;
  cfg.journal_ud = &j;
  tlt_env *e = tlt_new(&cfg);
  j.e = e;
  ck_assert_uint_eq(j.n, 2); /* header and config, written by tl_scheduler_new */
  ck_assert_ptr_nonnull(strstr(j.lines[1], " delivery=DEFERRED"));
  /* A failed call: a line and no event; the line alone makes the wake-up (and the memory it
   * holds until then is counted, so this is not TLT_UPDATE_ERR). */
  tl_update u = {.state = TL_TASK_RUNNING};
  ck_assert_int_eq(tl_status_update(e->s, "nobody", 1, &u), TL_ENOENT);
  TLT_CHECK(e);
  ck_assert_uint_eq(e->nev, 0);
  ck_assert_uint_eq(j.n, 2);
  ck_assert_uint_eq(readies(&r), 1);
  tlt_add(e, "e1", "h1", NULL, 1);
  ck_assert_uint_eq(j.n, 2);
  ck_assert_int_eq(tl_dispatch(e->s), 1);
  TLT_CHECK(e);
  ck_assert_uint_eq(j.n, 4);
  ck_assert_ptr_nonnull(strstr(j.lines[2], "update"));
  ck_assert_ptr_nonnull(strstr(j.lines[3], "add"));
  ck_assert_uint_eq(j.at[3], 0); /* the lines before the events of the same dispatch */
  ck_assert_uint_eq(e->nev, 1);
  tlt_end(e);
  ck_assert_uint_le(j.n, 16);
  ck_assert_ptr_nonnull(strstr(j.lines[j.n - 1], "free = OK"));
  /* The deferred journal replays (inline), drained, through every call. */
  tlr_report rep;
  ck_assert_int_eq(tlr_replay_text(j.text, NULL, &rep), TLR_OK);
  ck_assert(rep.drained);
  ck_assert_uint_eq(rep.calls, j.n - 3); /* all but the header, the config and the free line */
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Four threads making calls, one thread delivering.
 * ------------------------------------------------------------------------------------------- */

#define NTHREADS 4
#define NTASKS 2000
#define CORES 4

/* The shared state of a threaded run. The workers touch only the scheduler and the atomics. */
typedef struct crowd {
  tlt_env *e;
  atomic_uint finished;     /* FINISHED updates answered TL_OK */
  atomic_uint errors;       /* calls of workers that answered an unexpected error */
  atomic_uint dispatches;   /* tl_dispatch calls begun by the delivering thread */
  pthread_mutex_t mu;       /* guards the fields below */
  pthread_cond_t cv;        /* signalled by events_ready and by the workers' end */
  bool woken;               /* events_ready was made since the delivering thread last looked */
  unsigned readies;         /* events_ready calls */
  unsigned ready_twice;     /* events_ready made again with no tl_dispatch begun in between */
  unsigned last_dispatch;   /* dispatches when the last events_ready was made */
  unsigned workers_done;    /* workers that returned */
  unsigned ended_seen;      /* task_ended callbacks (on the delivering thread) */
  unsigned readies_at_stop; /* events_ready calls when the driver was stopped */
  tl_uv *h;                 /* the driver, in the libuv variant */
} crowd;

static void crowd_ready(void *ud) {
  crowd *c = ud;
  pthread_mutex_lock(&c->mu);
  unsigned d = atomic_load(&c->dispatches);
  if (c->readies > 0 && d == c->last_dispatch)
    c->ready_twice++;
  c->last_dispatch = d;
  c->readies++;
  c->woken = true;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
}

static void exec_name(char *buf, size_t len, unsigned i) { snprintf(buf, len, "w%u", i); }

/* A worker: the executor w<i>, offering its cores and finishing what it got, one batch at a
 * time, until every task of the run finished. */
static void *worker(void *arg) {
  crowd *c = ((void **)arg)[0];
  unsigned i = (unsigned)(uintptr_t)((void **)arg)[1];
  char id[16];
  exec_name(id, sizeof id, i);
  tl_launch l[CORES];
  tl_tid tids[CORES];
  tl_update fin[CORES];
  int results[CORES];
  for (size_t k = 0; k < CORES; k++)
    fin[k] = (tl_update){.state = TL_TASK_FINISHED};
  while (atomic_load(&c->finished) < NTASKS) {
    tl_offer o = {id, CORES};
    size_t n = 0;
    if (tl_resource_offers(c->e->s, &o, 1, l, CORES, &n) != TL_OK)
      atomic_fetch_add(&c->errors, 1);
    for (size_t k = 0; k < n; k++)
      tids[k] = l[k].tid;
    if (n == 0) {
      sched_yield();
      continue;
    }
    if (tl_status_updates(c->e->s, id, tids, fin, n, results) != TL_OK)
      atomic_fetch_add(&c->errors, 1);
    for (size_t k = 0; k < n; k++) {
      if (results[k] == TL_OK)
        atomic_fetch_add(&c->finished, 1);
      else
        atomic_fetch_add(&c->errors, 1);
    }
  }
  pthread_mutex_lock(&c->mu);
  c->workers_done++;
  pthread_cond_signal(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return NULL;
}

static void crowd_init(crowd *c, tlt_env *e) {
  memset(c, 0, sizeof *c);
  c->e = e;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
}

static void crowd_destroy(crowd *c) {
  pthread_cond_destroy(&c->cv);
  pthread_mutex_destroy(&c->mu);
}

/* A crowd and its scheduler: deferred, events_ready waking the dispatching thread, NTHREADS
 * executors and one task set of NTASKS. */
static tlt_env *crowd_env(crowd *c, tl_config *cfg) {
  crowd_init(c, NULL);
  *cfg = tlt_config();
  cfg->delivery = TL_DELIVER_DEFERRED;
  cfg->events_ready = crowd_ready;
  cfg->events_ready_ud = c;
  tlt_env *e = tlt_new(cfg);
  for (unsigned i = 0; i < NTHREADS; i++) {
    char id[16], host[16];
    exec_name(id, sizeof id, i);
    snprintf(host, sizeof host, "h%u", i);
    tlt_add(e, id, host, NULL, CORES);
  }
  tlt_submit(e, 0, 0, 0, NTASKS);
  c->e = e;
  return e;
}

static void start_workers(crowd *c, pthread_t *th, void *args[][2]) {
  for (unsigned i = 0; i < NTHREADS; i++) {
    args[i][0] = c;
    args[i][1] = (void *)(uintptr_t)i;
    ck_assert_int_eq(pthread_create(&th[i], NULL, worker, args[i]), 0);
  }
}

static void join_workers(pthread_t *th) {
  for (unsigned i = 0; i < NTHREADS; i++)
    ck_assert_int_eq(pthread_join(th[i], NULL), 0);
}

static void crowd_check_end(crowd *c, tlt_env *e) {
  ck_assert_uint_eq(atomic_load(&c->errors), 0);
  ck_assert_uint_eq(atomic_load(&c->finished), NTASKS);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_ENDED), NTASKS);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_STARTED), NTASKS);
  ck_assert_uint_eq(tlt_released(e, 1), 1);
  assert_delivered_by(e, 0, pthread_self());
}

START_TEST(four_threads_and_every_callback_on_the_dispatching_thread) {
  crowd c;
  tl_config cfg;
  tlt_env *e = crowd_env(&c, &cfg);
  pthread_t th[NTHREADS];
  void *args[NTHREADS][2];
  start_workers(&c, th, args);
  /* This thread is the runtime's loop: it sleeps until woken, then dispatches. */
  for (;;) {
    pthread_mutex_lock(&c.mu);
    while (!c.woken && c.workers_done < NTHREADS)
      pthread_cond_wait(&c.cv, &c.mu);
    bool all_done = c.workers_done == NTHREADS;
    c.woken = false;
    pthread_mutex_unlock(&c.mu);
    atomic_fetch_add(&c.dispatches, 1);
    int n = tl_dispatch(e->s);
    ck_assert_int_ge(n, 0);
    if (all_done && n == 0 && queued(e) == 0)
      break;
  }
  TLT_CHECK(e);
  join_workers(th);
  crowd_check_end(&c, e);
  ck_assert_uint_eq(c.ready_twice, 0); /* once per wake-up */
  ck_assert_uint_gt(c.readies, 0);
  ck_assert_uint_le(c.readies, atomic_load(&c.dispatches));
  tlt_end(e);
  crowd_destroy(&c);
}
END_TEST

/* The libuv variant: the delivering thread is the loop's; the driver stops itself from the
 * callback that sees the last task end. */
static void count_ends(tlt_env *e, const tlt_event *ev) {
  crowd *c = e->hook_ud;
  if (ev->type != TLT_EV_ENDED)
    return;
  if (++c->ended_seen == NTASKS) {
    pthread_mutex_lock(&c->mu);
    c->readies_at_stop = c->readies; /* none while attached: checked below */
    pthread_mutex_unlock(&c->mu);
    ck_assert_int_eq(tl_uv_stop(c->h, NULL, NULL), TL_OK);
  }
}

START_TEST(four_threads_and_the_libuv_driver_deliver_on_the_loop_thread) {
  crowd c;
  tl_config cfg;
  tlt_env *e = crowd_env(&c, &cfg);
  e->hook = count_ends;
  e->hook_ud = &c;
  ck_assert_uint_eq(c.readies, 1); /* the registrations and the submission, before the driver */
  unsigned readies_attached = c.readies;
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  ck_assert_int_eq(tl_uv_start(e->s, &loop, &c.h), TL_OK);
  /* tl_uv_start delivered what was queued, on this thread. */
  ck_assert_uint_eq(e->nev, NTHREADS + 1);
  pthread_t th[NTHREADS];
  void *args[NTHREADS][2];
  start_workers(&c, th, args);
  ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
  join_workers(th);
  /* events_ready was not made while the driver was attached. */
  ck_assert_uint_eq(c.readies_at_stop, readies_attached);
  tlt_dispatch_all(e); /* what came after the stop, if anything */
  crowd_check_end(&c, e);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  tlt_end(e);
  crowd_destroy(&c);
}
END_TEST

/* A wake-up the driver took but can no longer act on is made again through events_ready. */
START_TEST(stopping_the_driver_hands_a_pending_wake_up_to_events_ready) {
  ready_log r = {0};
  tl_config cfg = deferred_config(&r);
  tlt_env *e = tlt_new(&cfg);
  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  tl_uv *h;
  ck_assert_int_eq(tl_uv_start(e->s, &loop, &h), TL_OK);
  tlt_add(e, "e1", "h1", NULL, 1); /* the driver's ready hook, not events_ready */
  ck_assert_uint_eq(readies(&r), 0);
  ck_assert_uint_eq(e->nev, 0);
  ck_assert_int_eq(tl_uv_stop(h, NULL, NULL), TL_OK); /* before the loop ran its async */
  ck_assert_uint_eq(readies(&r), 1);
  ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
  ck_assert_uint_eq(e->nev, 0); /* the stopped driver delivered nothing */
  ck_assert_int_eq(tl_dispatch(e->s), 1);
  TLT_CHECK(e);
  ck_assert_str_eq(tlt_seq_all(e, 0), "added e1 host=h1");
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  tlt_end(e);
}
END_TEST

Suite *tl_deliver_suite(void) {
  Suite *s = suite_create("deliver");
  TCase *tc = tlt_tcase(s, "deferred");
  tcase_add_test(tc, calls_queue_and_tl_dispatch_delivers_them_in_order);
  tcase_add_test(tc, inline_delivery_is_unchanged_and_tl_dispatch_finds_nothing);
  tcase_add_test(tc, bad_delivery_settings_are_refused);
  tcase_add_test(tc, dispatch_inside_a_callback_is_refused_and_its_events_wait);
  tcase_add_test(tc, free_delivers_what_is_still_queued);
  tcase_add_test(tc, abandon_delivers_nothing_and_hands_no_payload_back);
  tcase_add_test(tc, abandon_is_refused_where_free_is);
  tcase_add_test(tc, executor_removed_waits_for_the_dispatch_in_its_place);
  tcase_add_test(tc, journal_lines_wait_for_the_dispatch);
  tcase_add_test(tc, task_events_keep_a_forgotten_executors_names);
  tc = tlt_tcase(s, "threads");
  tcase_add_test(tc, four_threads_and_every_callback_on_the_dispatching_thread);
  tcase_add_test(tc, four_threads_and_the_libuv_driver_deliver_on_the_loop_thread);
  tcase_add_test(tc, stopping_the_driver_hands_a_pending_wake_up_to_events_ready);
  return s;
}
