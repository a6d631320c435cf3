/* Offers and launches: an executor's free cores offered to the ledger, each task set's binary
 * sent once per executor, the launches batched into LAUNCH frames; revive_offers. */

#include "driver.h"

static bool binary_sent(conn *c, tl_taskset_id id) {
  for (size_t i = 0; i < c->nsent; i++)
    if (c->sent[i] == id)
      return true;
  return false;
}

/* The ledger's launches for one executor's free cores, into launch_buf: *n of them. False when
 * nothing is offered (no free core, not alive, or waiting for a record, whose end offers again). */
static bool ledger_offer(driver *d, conn *c, size_t *n) {
  tl_executor_status es;
  if (tl_executor_get(d->run.s, c->id, &es) < 0 || es.state != TL_EXECUTOR_ALIVE ||
      es.free_cores == 0)
    return false;
  if (!record_may_launch(d, c, es.free_cores))
    return false;
  tl_offer o = {.executor_id = c->id, .cores = es.free_cores};
  int rc = tl_resource_offers(d->run.s, &o, 1, d->offers.launch_buf, d->offers.launch_cap, n);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_resource_offers: %s\n", tl_err_name(rc));
    return false;
  }
  return true;
}

/* Offers one executor its free cores and sends what launched: each task set's binary the first
 * time it runs there, then the launches in LAUNCH frames of up to LAUNCH_FRAME_MAX. With
 * --null-ledger the launches are the null floor's (nullfloor.c), framed and sent alike. */
void offer(driver *d, conn *c) {
  if (d->phase.closed || d->phase.stopping || !d->phase.offering || !c->registered || c->closing)
    return;
  size_t n = 0;
  if (d->nullfloor.on)
    n = nullfloor_offer(d, c, d->offers.launch_buf, d->offers.launch_cap);
  else if (!ledger_offer(d, c, &n))
    return;
  if (n > 0)
    faults_launched(d, c, d->offers.launch_buf[0].tid);
  if (n > 0)
    c->idle_since = 0;
  size_t nitems = 0;
  tl_tid max_tid = 0;
  for (size_t i = 0; i < n; i++) {
    const tl_launch *l = &d->offers.launch_buf[i];
    stage_binary *b = l->payload;
    d->offers.retries += l->attempt > 0;
    max_tid = l->tid > max_tid ? l->tid : max_tid;
    if (!binary_sent(c, l->taskset)) {
      if (nitems > 0) { /* launches already batched go first, keeping the order simple */
        tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->offers.items}};
        encode(c, &m);
        nitems = 0;
      }
      if (c->nsent == c->sent_cap) {
        size_t cap = c->sent_cap ? 2 * c->sent_cap : 8;
        tl_taskset_id *sent = realloc(c->sent, cap * sizeof *sent);
        if (!sent)
          die_oom();
        c->sent = sent;
        c->sent_cap = cap;
      }
      c->sent[c->nsent++] = l->taskset;
      c->tasksets_sent++;
      tlc_msg m = {.type = TLC_MSG_TASKSET_BINARY,
                   .u.binary = {.taskset_id = l->taskset,
                                .payload = {(const uint8_t *)b->stage->kind, b->len}}};
      encode(c, &m);
      d->offers.binaries_sent++;
    }
    d->offers.items[nitems++] =
        (tlc_launch_item){.tid = l->tid,
                          .taskset_id = l->taskset,
                          .index = l->index,
                          .attempt = l->attempt,
                          .flags = l->speculative ? TLC_LAUNCH_SPECULATIVE : 0,
                          .kind = tlc_str(b->stage->kind)};
    if (nitems == LAUNCH_FRAME_MAX) {
      tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->offers.items}};
      encode(c, &m);
      nitems = 0;
    }
  }
  if (nitems > 0) {
    tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->offers.items}};
    encode(c, &m);
  }
  d->offers.launched += n;
  record_launched(d, c, max_tid);
  send_out(c);
}

static void on_revive(uv_idle_t *idle) {
  driver *d = idle->data;
  uv_idle_stop(idle);
  for (conn *c = d->link.list; c; c = c->next)
    offer(d, c);
}

void cb_revive_offers(void *ud) {
  driver *d = ud;
  if (!d->phase.closed && !d->phase.stopping)
    uv_idle_start(&d->offers.revive, on_revive);
}

void offers_init(driver *d) {
  uv_idle_init(d->run.loop, &d->offers.revive);
  d->offers.revive.data = d;
}

void offers_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->offers.revive, on_closed);
}

/* Room for an offer round's launches to an executor of this many task slots. */
void offers_reserve(driver *d, uint32_t slots) {
  if (slots <= d->offers.launch_cap)
    return;
  tl_launch *l = realloc(d->offers.launch_buf, slots * sizeof *l);
  if (!l)
    die_oom();
  d->offers.launch_buf = l;
  tlc_launch_item *it = realloc(d->offers.items, slots * sizeof *it);
  if (!it)
    die_oom();
  d->offers.items = it;
  d->offers.launch_cap = slots;
}

void offers_free(driver *d) {
  free(d->offers.launch_buf);
  free(d->offers.items);
}
