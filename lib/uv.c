/* The libuv driver (taskledger-uv.h): one timer armed for tl_tick's next deadline, and one async
 * handle through which calls on other threads wake the loop when they move that deadline
 * earlier.
 *
 * The driver stands on the public API and the scheduler's one wake hook (tl__driver_attach,
 * scheduler.c). The wake rule lives there, under the scheduler's lock: the scheduler keeps the
 * clock time the driver's timer is armed for; the driver's tick (tl__tick_driver) records it in
 * the same lock section that computes the answer, so no call can fall between the answer and
 * the record; every mutating call, only while a driver is attached, asks the parts for their
 * next deadline and, when it is earlier than the armed time, lowers it and calls the hook,
 * which sends on the async handle. Later calls with the same or a later deadline send nothing,
 * and the loop's thread ticks once for any number of sends (libuv coalesces them). The timer is
 * armed on the loop's thread after the tick returns; a call that lowers the armed time in
 * between sends, and the async callback comes after the arming, so no deadline is missed.
 *
 * With deferred delivery (tl_config.delivery) the same async handle carries the scheduler's
 * ready hook: the call that queues the first event since the loop last dispatched sends on it,
 * and the loop's thread calls tl_dispatch after every tick and on every async callback, so every
 * callback runs on the loop's thread. tick_due tells a wake (tick, then dispatch) from a ready
 * (dispatch only). The delivery mode is read once, from the scheduler's config, which never
 * changes.
 *
 * Attaching and detaching happen under the scheduler's lock, so a call never sends on a handle
 * that tl_uv_stop has begun to close. While the driver attaches, the armed time is 0, which no
 * deadline is earlier than: no call sends before the async handle exists; the first tick, after
 * it, sees what those calls did. The handles and the rest of struct tl_uv belong to the loop's
 * thread.
 */
#include "taskledger-uv.h"

#include "internal.h"

struct tl_uv {
  uv_timer_t timer;           /* armed for the next deadline; stopped for TL_TICK_NEVER */
  uv_async_t async;           /* woken by calls that move the next deadline earlier, and with
                                 deferred delivery by calls that queue events */
  atomic_bool tick_due;       /* a wake asked for a tick (set by any thread, taken by the loop's
                                 async callback; a ready alone only delivers) */
  bool deferred;              /* the scheduler delivers with tl_dispatch: the loop's thread does */
  tl_scheduler *s;            /* the scheduler driven; not touched after tl_uv_stop */
  unsigned open_handles;      /* handles not yet closed: the driver is freed at 0 */
  bool stopping;              /* tl_uv_stop was called: the callbacks arm nothing more */
  void (*close_cb)(void *ud); /* called once after both handles closed, or NULL */
  void *close_ud;             /* for close_cb */
};

/* The wake hook: called under the scheduler's lock by a call that moved the next deadline
 * earlier. uv_async_send is thread-safe, runs no user code, and cannot fail on an open handle. */
static void wake(void *ud) {
  tl_uv *h = ud;
  atomic_store_explicit(&h->tick_due, true, memory_order_release);
  uv_async_send(&h->async);
}

/* The ready hook, with deferred delivery: called under the lock by the call that queued the
 * first event since the loop last dispatched. */
static void ready(void *ud) {
  tl_uv *h = ud;
  uv_async_send(&h->async);
}

static void on_timer(uv_timer_t *timer);

/* With deferred delivery, the loop's thread delivers what is queued. A callback may stop the
 * driver (h->s is then NULL). */
static void dispatch(tl_uv *h) {
  if (h->deferred && !h->stopping)
    (void)tl_dispatch(h->s);
}

/* Ticks and arms the timer for the answer (rounded up to whole milliseconds). */
static void tick_and_arm(tl_uv *h) {
  if (h->stopping) /* never: a closing handle's callbacks are not called */
    return;
  uint64_t next = tl__tick_driver(h->s, h);
  if (h->stopping) /* a callback of this tick stopped the driver */
    return;
  if (next == TL_TICK_NEVER) {
    uv_timer_stop(&h->timer);
    return;
  }
  uint64_t ms = next / 1000000u + (next % 1000000u != 0);
  /* The loop's time was read when this iteration began; the callbacks of the tick may have
   * taken a while. */
  uv_update_time(h->timer.loop);
  uv_timer_start(&h->timer, on_timer, ms, 0);
}

static void on_timer(uv_timer_t *timer) {
  tl_uv *h = timer->data;
  tick_and_arm(h);
  dispatch(h);
}

static void on_async(uv_async_t *async) {
  tl_uv *h = async->data;
  /* Without deferred delivery every wake asks for a tick; with it, a ready asks only for the
   * dispatch. Taken before the tick: a wake that comes later sends again. */
  if (!h->deferred || atomic_exchange_explicit(&h->tick_due, false, memory_order_acq_rel))
    tick_and_arm(h);
  dispatch(h);
}

int tl_uv_start(tl_scheduler *s, uv_loop_t *loop, tl_uv **out) {
  if (s == NULL || loop == NULL || out == NULL)
    return TL_EINVAL;
  /* The allocator cannot change while s exists; the driver counts as a scheduler until it is
   * freed, which may be after s is. */
  tl_uv *h = tl__raw_calloc(1, sizeof *h);
  if (h == NULL)
    return TL_ENOMEM;
  /* Attached, nothing wakes it until its first tick below: the async handle exists by then. */
  h->deferred = s->cfg.delivery == TL_DELIVER_DEFERRED; /* fixed for the scheduler's life */
  atomic_init(&h->tick_due, false);
  if (tl__driver_attach(s, wake, ready, h) != TL_OK) {
    tl__raw_free(h);
    return TL_EBUSY;
  }
  /* uv_async_init registers nothing on the loop when it fails; uv_timer_init cannot fail. */
  if (uv_async_init(loop, &h->async, on_async) != 0) {
    tl__driver_detach(s);
    tl__raw_free(h);
    return TL_ENOMEM;
  }
  uv_timer_init(loop, &h->timer);
  h->timer.data = h;
  h->async.data = h;
  h->s = s;
  h->open_handles = 2;
  tl__schedulers_inc();
  *out = h;
  tick_and_arm(h);
  dispatch(h); /* deferred: what was queued before, and what the tick made */
  return TL_OK;
}

static void on_closed(uv_handle_t *handle) {
  tl_uv *h = handle->data;
  if (--h->open_handles != 0)
    return;
  void (*close_cb)(void *ud) = h->close_cb;
  void *ud = h->close_ud;
  tl__raw_free(h);
  tl__schedulers_dec();
  if (close_cb != NULL)
    close_cb(ud);
}

int tl_uv_stop(tl_uv *h, void (*close_cb)(void *ud), void *ud) {
  if (h == NULL)
    return TL_EINVAL;
  if (h->stopping)
    return TL_ESTATE;
  tl__driver_detach(h->s);
  h->s = NULL;
  h->stopping = true;
  h->close_cb = close_cb;
  h->close_ud = ud;
  uv_timer_stop(&h->timer);
  uv_close((uv_handle_t *)&h->timer, on_closed);
  uv_close((uv_handle_t *)&h->async, on_closed);
  return TL_OK;
}
