/* Where the run is (running, stopping, closed), and what the other files ask of driver.c. A file
 * below driver.c never calls its stop, give-up or finish code: it sets a request here and wakes
 * the loop, and at the next turn driver.c serves the requests (phase_init's serve). So the calls
 * between the driver's files all go down (docs/cluster.md "The driver's files and layers"). */

#include "driver.h"

static void on_wake(uv_timer_t *t) {
  driver *d = t->data;
  d->phase.serve(d);
}

void phase_init(driver *d, void (*serve)(driver *d)) {
  d->phase.serve = serve;
  uv_timer_init(d->run.loop, &d->phase.wake);
  d->phase.wake.data = d;
}

void phase_wake(driver *d) {
  if (!d->phase.closed)
    uv_timer_start(&d->phase.wake, on_wake, 0, 0);
}

void phase_offer(driver *d) {
  d->phase.offering = true;
  d->phase.start_ns = uv_hrtime();
}

void phase_stop(driver *d) {
  if (d->phase.stopping)
    return;
  d->phase.stopping = true;
  d->phase.want_stop = true;
  phase_wake(d);
}

void phase_give_up(driver *d, const char *why) {
  if (!d->phase.give_up)
    d->phase.give_up = why;
  d->phase.stopping = true;
  phase_wake(d);
}

void phase_check(driver *d) {
  d->phase.want_check = true;
  phase_wake(d);
}

bool phase_take_check(driver *d) {
  bool want = d->phase.want_check;
  d->phase.want_check = false;
  return want;
}

const char *phase_take_give_up(driver *d) {
  const char *why = d->phase.give_up;
  d->phase.give_up = NULL;
  return why;
}

bool phase_take_stop(driver *d) {
  bool want = d->phase.want_stop;
  d->phase.want_stop = false;
  return want;
}

void phase_close(driver *d, uv_close_cb on_closed) {
  d->phase.closed = true;
  uv_close((uv_handle_t *)&d->phase.wake, on_closed);
}
