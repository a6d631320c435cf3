/* taskledger-uv: drives a scheduler's timers from a libuv loop.
 *
 * tl_tick runs what is due and answers how long until the next deadline. This driver keeps one
 * uv_timer_t on a loop armed for that answer, and one uv_async_t through which a call on the
 * scheduler from any thread wakes the loop when it moves the next deadline earlier than the one
 * the timer is armed for (an executor registered, a pending loss, a locality wait begun, a
 * first task launched with speculation on). The loop's thread then ticks and arms the timer
 * again. Without a driver attached the library pays one load and one branch per call for this.
 *
 * The scheduler's clock (tl_config.clock) decides what is due; the timer counts the loop's
 * time. The timer is armed for tl_tick's answer rounded up to whole milliseconds, and
 * TL_TICK_NEVER stops it. With a clock that does not follow real time (a manual clock in
 * tests), deadlines are in that clock's time while the timer still waits real milliseconds.
 *
 * With deferred delivery (tl_config.delivery = TL_DELIVER_DEFERRED) the driver also delivers:
 * a call on any thread that queues events wakes the loop through the same async handle, and the
 * loop's thread calls tl_dispatch after each tick and each wake-up, so every callback runs on
 * the loop's thread whatever thread made the call (events_ready is not called meanwhile). After
 * tl_uv_stop, events are delivered by tl_dispatch again (a wake-up the driver took and can no
 * longer act on is made again through events_ready).
 *
 * Include it after, or instead of, taskledger.h; it needs uv.h (link the program with libuv).
 */
#ifndef TASKLEDGER_UV_H
#define TASKLEDGER_UV_H

#include <uv.h>

#include "taskledger.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tl_uv tl_uv; /* opaque: one driver, attached to one scheduler and one loop */

/* Attaches a driver to s on loop: initialises its timer and async handles on loop, calls
 * tl_tick once (events it makes are delivered during this call; with deferred delivery, so is
 * everything queued before) and arms the timer for the answer. *out gets the driver, for tl_uv_stop. At most one driver per scheduler.
 * Errors, and then nothing changed (no handle is left on the loop, *out untouched):
 *   TL_EINVAL  s, loop or out NULL;
 *   TL_EBUSY   a driver is already attached to s, or s is being freed;
 *   TL_ENOMEM  no memory for the driver, or libuv could not make the async handle.
 * Call it on the loop's thread (libuv handles are not thread-safe); it may be called from a
 * scheduler callback running there. While attached, the driver keeps the loop alive (its async
 * handle is active): uv_run returns once tl_uv_stop has closed it and nothing else is active.
 * tl_scheduler_free answers TL_EBUSY while a driver is attached. */
TL_EXTERN int tl_uv_start(tl_scheduler *s, uv_loop_t *loop, tl_uv **out);

/* Detaches the driver from its scheduler (from the moment it returns, no call on the scheduler
 * touches the driver) and closes its handles. Once both are closed, from the loop (after their
 * close callbacks, during a later uv_run), the driver is freed and then close_cb(ud) is called,
 * once; close_cb may be NULL. After that the loop holds nothing of the driver: uv_loop_close
 * succeeds if nothing else is open. TL_EINVAL for h NULL; TL_ESTATE if tl_uv_stop was already
 * called on h and its handles are still closing (after close_cb, h is gone: do not pass it
 * again). Call it on the loop's thread, while the scheduler still exists; it may be called from
 * a scheduler callback delivered on that thread, the driver's own included. The scheduler may
 * be freed once it returns (from the loop's thread, outside the driver's callbacks) or, from
 * any thread, once close_cb has run. */
TL_EXTERN int tl_uv_stop(tl_uv *h, void (*close_cb)(void *ud), void *ud);

#ifdef __cplusplus
}
#endif
#endif /* TASKLEDGER_UV_H */
