/* The libuv driver (taskledger-uv.h) on a real loop and a clock that follows real time:
 * heartbeat expiry and pending-loss deadlines fire from the loop, a call on another thread wakes
 * an idle loop, start and stop refuse what they must and change nothing then, and a stopped
 * driver leaves nothing on its loop (uv_loop_close succeeds; valgrind sees no leak).
 */
#include "harness.h"

#include "taskledger-uv.h"

#include <inttypes.h>

#define MS UINT64_C(1000000) /* nanoseconds in a millisecond */

/* The scheduler's clock in these tests: real time, plus the manual clock so that tlt_end can
 * still move time forward to expire tombstones. */
static uint64_t real_clock(void *ud) { return ((tlt_env *)ud)->now + uv_hrtime(); }

/* One loop with a driver, and a guard timer that stops the driver if the awaited event never
 * comes, so that a failing test ends instead of running the loop forever. */
typedef struct uvt {
  uv_loop_t loop;
  uv_timer_t guard;     /* unreferenced: it never keeps the loop alive on its own */
  tl_uv *h;             /* the driver under test */
  tlt_ev_type stop_on;  /* the event whose delivery stops the driver */
  tl_loss_kind lost_as; /* for TLT_EV_LOST: only a loss of this kind */
  bool stopped;         /* tl_uv_stop was called by the hook or the guard */
  bool timed_out;       /* the guard fired first */
  uint64_t at;          /* uv_hrtime when the awaited event was delivered */
  pthread_t at_thread;  /* and the thread that delivered it */
  unsigned closed;      /* close_cb calls */
} uvt;

static void on_closed(void *ud) { ((uvt *)ud)->closed++; }

static void stop_driver(uvt *u) {
  u->stopped = true;
  ck_assert_int_eq(tl_uv_stop(u->h, on_closed, u), TL_OK);
}

/* The test's hook: stops the driver from inside the callback that delivers the awaited event
 * (a callback of the driver's own tick, on the loop's thread). */
static void stop_hook(tlt_env *e, const tlt_event *ev) {
  uvt *u = e->hook_ud;
  if (u->stopped || ev->type != u->stop_on ||
      (ev->type == TLT_EV_LOST && ev->loss.kind != u->lost_as))
    return;
  u->at = uv_hrtime();
  u->at_thread = pthread_self();
  stop_driver(u);
}

static void on_guard(uv_timer_t *guard) {
  uvt *u = guard->data;
  if (!u->stopped) {
    u->timed_out = true;
    stop_driver(u);
  }
}

static void uvt_init(uvt *u, tlt_env *e) {
  memset(u, 0, sizeof *u);
  ck_assert_int_eq(uv_loop_init(&u->loop), 0);
  ck_assert_int_eq(uv_timer_init(&u->loop, &u->guard), 0);
  u->guard.data = u;
  e->hook = stop_hook;
  e->hook_ud = u;
}

/* Runs the loop until the driver is stopped and closed (the guard stops it after 5 s), then
 * closes the guard and the loop: nothing of the driver may be left on it. */
static void uvt_run(uvt *u) {
  ck_assert_int_eq(uv_timer_start(&u->guard, on_guard, 5000, 0), 0);
  uv_unref((uv_handle_t *)&u->guard);
  ck_assert_int_eq(uv_run(&u->loop, UV_RUN_DEFAULT), 0);
  ck_assert_msg(!u->timed_out, "the awaited event did not come within 5 s");
  ck_assert_uint_eq(u->closed, 1);
  uv_close((uv_handle_t *)&u->guard, NULL);
  ck_assert_int_eq(uv_run(&u->loop, UV_RUN_DEFAULT), 0);
  ck_assert_int_eq(uv_loop_close(&u->loop), 0);
}

/* An executor that never sends a heartbeat is lost by the loop's timer, not before its timeout,
 * and the driver stopped from that callback leaves the loop closable. The driver starts with
 * nothing due (its timer stopped), so the registration, on the loop's thread, wakes it. */
START_TEST(heartbeat_expiry_fires_from_the_loop) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 80 * MS;
  tlt_env *e = tlt_new_clock(&cfg, NULL, real_clock);
  uvt u;
  uvt_init(&u, e);
  u.stop_on = TLT_EV_LOST;
  u.lost_as = TL_LOSS_HEARTBEAT_TIMEOUT;
  TLT_OK(e, tl_uv_start(e->s, &u.loop, &u.h));
  ck_assert_ptr_nonnull(u.h);
  uint64_t t0 = uv_hrtime();
  tlt_add(e, "e1", "h1", NULL, 1);
  size_t mark = tlt_mark(e);
  uvt_run(&u);
  ck_assert_str_eq(tlt_seq(e, mark), "lost e1 kind=HEARTBEAT_TIMEOUT");
  ck_assert(pthread_equal(u.at_thread, pthread_self()));
  uint64_t waited = u.at - t0;
  ck_assert_msg(waited >= 80 * MS && waited < 80 * MS + TLT_SEC,
                "the loss came after %" PRIu64 " ms, want 80 ms or a little more", waited / MS);
  tl_executor_status st;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e1", &st));
  tlt_end(e);
}
END_TEST

/* A pending loss reported on the loop's thread moves the next deadline from the heartbeat's
 * 120 s to pending_loss_timeout_ns: the driver is woken, and the second phase comes from the
 * loop on time, ending the frozen attempt. */
START_TEST(pending_loss_deadline_fires_from_the_loop) {
  tl_config cfg = tlt_config();
  cfg.pending_loss_timeout_ns = 60 * MS;
  tlt_env *e = tlt_new_clock(&cfg, NULL, real_clock);
  uvt u;
  uvt_init(&u, e);
  u.stop_on = TLT_EV_ENDED;
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l, 1), 1);
  tlt_run(e, "e1", l.tid);
  TLT_OK(e, tl_uv_start(e->s, &u.loop, &u.h)); /* armed for the heartbeat, 120 s away */
  uint64_t t0 = uv_hrtime();
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  uvt_run(&u);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 0); /* no second executor_lost */
  const tlt_event *end = tlt_ended_of(e, l.tid);
  ck_assert_ptr_nonnull(end);
  ck_assert_int_eq(end->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert_ptr_nonnull(strstr(end->text, "pending-loss timeout"));
  uint64_t waited = u.at - t0;
  ck_assert_msg(waited >= 60 * MS && waited < 60 * MS + TLT_SEC,
                "the second phase came after %" PRIu64 " ms, want 60 ms or a little more",
                waited / MS);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_pending_loss, 0);
  ck_assert_uint_eq(st.attempts_frozen, 0);
  ck_assert_uint_eq(st.tombstones, 1);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 1); /* its index waits to run again */
  tlt_end(e);
}
END_TEST

/* Another thread's call wakes a loop whose timer is stopped. */
typedef struct adder {
  tlt_env *e;
  uint64_t t0; /* uv_hrtime just before the call */
  int rc;      /* what tl_executor_add answered */
} adder;

static void add_from_thread(void *arg) {
  adder *a = arg;
  uv_sleep(20); /* let the loop go idle first */
  tl_executor_desc d = {.id = "e1", .host = "h1", .cores = 1};
  a->t0 = uv_hrtime();
  a->rc = tl_executor_add(a->e->s, &d);
}

/* executor_added would be recorded on the adding thread, beside the loop thread's recording:
 * the recorder is not locked, so that one callback is left out. */
static void no_added(tl_callbacks *cb) { cb->executor_added = NULL; }

START_TEST(a_call_from_another_thread_wakes_the_idle_loop) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 60 * MS;
  tlt_env *e = tlt_new_clock(&cfg, no_added, real_clock);
  uvt u;
  uvt_init(&u, e);
  u.stop_on = TLT_EV_LOST;
  u.lost_as = TL_LOSS_HEARTBEAT_TIMEOUT;
  TLT_OK(e, tl_uv_start(e->s, &u.loop, &u.h)); /* nothing is due: the timer is stopped */
  adder a = {e, 0, TL_EINVAL};
  uv_thread_t thread;
  ck_assert_int_eq(uv_thread_create(&thread, add_from_thread, &a), 0);
  uvt_run(&u);
  ck_assert_int_eq(uv_thread_join(&thread), 0);
  ck_assert_int_eq(a.rc, TL_OK);
  ck_assert_str_eq(tlt_seq(e, 0), "lost e1 kind=HEARTBEAT_TIMEOUT");
  ck_assert(pthread_equal(u.at_thread, pthread_self()));
  uint64_t waited = u.at - a.t0;
  ck_assert_msg(waited >= 60 * MS && waited < 60 * MS + TLT_SEC,
                "the loss came after %" PRIu64 " ms, want 60 ms or a little more", waited / MS);
  tlt_end(e);
}
END_TEST

/* Bad arguments, a second driver and freeing an attached scheduler are refused and change
 * nothing; a stopped driver can be replaced; a driver with nothing due stops at once. */
START_TEST(start_and_stop_refuse_what_they_must) {
  tlt_env *e = tlt_new(NULL);
  uvt u;
  uvt_init(&u, e);
  uv_loop_t other;
  ck_assert_int_eq(uv_loop_init(&other), 0);
  tl_uv *h = NULL, *h2 = NULL;
  TLT_ERR(e, TL_EINVAL, tl_uv_start(NULL, &u.loop, &h));
  TLT_ERR(e, TL_EINVAL, tl_uv_start(e->s, NULL, &h));
  TLT_ERR(e, TL_EINVAL, tl_uv_start(e->s, &u.loop, NULL));
  ck_assert_ptr_null(h);
  ck_assert_int_eq(tl_uv_stop(NULL, on_closed, &u), TL_EINVAL);

  TLT_OK(e, tl_uv_start(e->s, &u.loop, &h));
  ck_assert_ptr_nonnull(h);
  TLT_ERR(e, TL_EBUSY, tl_uv_start(e->s, &u.loop, &h2));
  TLT_ERR(e, TL_EBUSY, tl_uv_start(e->s, &other, &h2));
  ck_assert_ptr_null(h2);
  TLT_ERR(e, TL_EBUSY, tl_scheduler_free(e->s));
  ck_assert_int_eq(tl_uv_stop(h, on_closed, &u), TL_OK);
  ck_assert_int_eq(tl_uv_stop(h, on_closed, &u), TL_ESTATE); /* still closing */
  ck_assert_uint_eq(u.closed, 0);                            /* close_cb comes only from the loop */
  ck_assert_int_eq(uv_run(&u.loop, UV_RUN_DEFAULT), 0);
  ck_assert_uint_eq(u.closed, 1);

  /* Stopped, the scheduler takes a new driver, on the same loop or another. */
  TLT_OK(e, tl_uv_start(e->s, &other, &h2));
  ck_assert_int_eq(tl_uv_stop(h2, NULL, NULL), TL_OK);
  ck_assert_int_eq(uv_run(&other, UV_RUN_DEFAULT), 0);
  ck_assert_int_eq(uv_loop_close(&other), 0);
  TLT_OK(e, tl_uv_start(e->s, &u.loop, &u.h));
  tlt_add(e, "e1", "h1", NULL, 1); /* works while attached, as before */
  ck_assert_int_eq(tl_uv_stop(u.h, on_closed, &u), TL_OK);
  u.stopped = true;
  u.closed = 0;
  uvt_run(&u);
  ck_assert_uint_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_ALIVE);
  tlt_end(e);
}
END_TEST

/* Stopping a driver whose timer is armed (a heartbeat 10 s away) closes everything at the next
 * run of the loop, which then returns at once: nothing fires, nothing is left. */
START_TEST(stop_while_the_timer_is_armed) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 10 * TLT_SEC;
  tlt_env *e = tlt_new_clock(&cfg, NULL, real_clock);
  uvt u;
  uvt_init(&u, e);
  tlt_add(e, "e1", "h1", NULL, 1);
  TLT_OK(e, tl_uv_start(e->s, &u.loop, &u.h));
  ck_assert(uv_loop_alive(&u.loop));
  stop_driver(&u);
  uint64_t t0 = uv_hrtime();
  uvt_run(&u);
  ck_assert_msg(uv_hrtime() - t0 < TLT_SEC, "the loop ran %" PRIu64 " ms after the stop",
                (uv_hrtime() - t0) / MS);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_LOST), 0);
  ck_assert_uint_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_ALIVE);
  tlt_end(e);
}
END_TEST

/* A driver that cannot be allocated is TL_ENOMEM, and the scheduler takes one afterwards. */
START_TEST(start_out_of_memory_changes_nothing) {
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  uvt u;
  uvt_init(&u, e);
  size_t before = tlt_alloc_live_blocks();
  tlt_alloc_fail_at(1);
  TLT_ERR(e, TL_ENOMEM, tl_uv_start(e->s, &u.loop, &u.h));
  ck_assert(tlt_alloc_failed());
  tlt_alloc_fail_at(0);
  ck_assert_ptr_null(u.h);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), before);
  ck_assert(!uv_loop_alive(&u.loop));
  TLT_OK(e, tl_uv_start(e->s, &u.loop, &u.h));
  ck_assert_uint_eq(tlt_alloc_live_blocks(), before + 1);
  stop_driver(&u);
  uvt_run(&u);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), before);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

Suite *tl_uv_suite(void) {
  Suite *s = suite_create("uv");
  TCase *tc = tlt_tcase(s, "driver");
  tcase_add_test(tc, heartbeat_expiry_fires_from_the_loop);
  tcase_add_test(tc, pending_loss_deadline_fires_from_the_loop);
  tcase_add_test(tc, a_call_from_another_thread_wakes_the_idle_loop);
  tcase_add_test(tc, start_and_stop_refuse_what_they_must);
  tcase_add_test(tc, stop_while_the_timer_is_armed);
  tcase_add_test(tc, start_out_of_memory_changes_nothing);
  return s;
}
