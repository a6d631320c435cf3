/* Offers and launches: an executor's free cores offered to the ledger, each task set's binary
 * sent once per executor, the launches batched into LAUNCH frames, each naming the addresses its
 * attempt holds (docs/cluster.md "Resources"); revive_offers. */

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
  /* Room for grants only once some executor declared resources: a run without them holds none
   * (a launch cannot hold an address no executor has). */
  size_t gcap = d->offers.has_resources ? d->offers.launch_cap * TLC_GRANTS_MAX : 0;
  if (gcap > d->offers.grants_cap) {
    tl_grant *g = realloc(d->offers.grants, gcap * sizeof *g);
    if (!g)
      die_oom();
    d->offers.grants = g;
    tlc_grant *w = realloc(d->offers.wire_grants, gcap * sizeof *w);
    if (!w)
      die_oom();
    d->offers.wire_grants = w;
    d->offers.grants_cap = gcap;
  }
  size_t ngrants;
  int rc = tl_resource_offers_grants(d->run.s, &o, 1, d->offers.launch_buf, d->offers.launch_cap, n,
                                     d->offers.grants, gcap, &ngrants);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_resource_offers_grants: %s\n", tl_err_name(rc));
    return false;
  }
  return true;
}

/* The addresses the ledger's grants name, by name, through the executor's record of what it
 * registered, into wire[0 .. n). False (logged) when a grant points outside the record: the
 * ledger's indices are into the declaration it was given, so this is never. */
static bool grants_by_name(const conn *c, const tl_launch *l, tlc_grant *wire) {
  for (uint32_t g = 0; g < l->ngrants; g++) {
    const tl_grant *gr = &l->grants[g];
    if (!c->res || gr->resource >= c->res->n ||
        gr->address >= c->res->decl[gr->resource].naddresses || gr->share > TLC_SHARE_MAX) {
      fprintf(stderr, "tl-driver: a grant of tid %" PRIu64 " is outside its executor's record\n",
              l->tid);
      return false;
    }
    const tl_resource *r = &c->res->decl[gr->resource];
    wire[g] = (tlc_grant){tlc_str(r->name), tlc_str(r->addresses[gr->address]),
                          (uint8_t)(gr->share > 1 ? gr->share : 1)};
  }
  return true;
}

/* A LAUNCH item's bytes on the wire (proto.c's layout). */
static size_t item_bytes(const tlc_launch_item *it) {
  size_t n = 8 + 8 + 4 + 4 + 1 + 2 + it->kind.len + 1;
  for (size_t g = 0; g < it->ngrants; g++)
    n += 2 + it->grants[g].name.len + 2 + it->grants[g].address.len + 1;
  return n;
}

/* The addresses the executors hold now (any share of one counts it), for the summary's peak. */
static void note_held(driver *d) {
  tl_resource_info info[TLC_RESOURCES_MAX];
  size_t n;
  if (!d->offers.has_resources || tl_resource_totals(d->run.s, info, TLC_RESOURCES_MAX, &n) < 0)
    return;
  uint64_t held = 0;
  for (size_t i = 0; i < n && i < TLC_RESOURCES_MAX; i++)
    held += info[i].addresses - info[i].free;
  if (held > d->offers.held_peak)
    d->offers.held_peak = held;
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
  size_t nitems = 0, frame_bytes = 4, ngrants = 0;
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
        frame_bytes = 4;
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
    /* Its grants, by name, at the round's next free slots (the ledger wrote at most
     * TLC_GRANTS_MAX per launch). A launch of --null-ledger holds none. */
    uint32_t ng = l->ngrants <= TLC_GRANTS_MAX ? l->ngrants : 0;
    tlc_grant *wire = ng > 0 ? d->offers.wire_grants + ngrants : NULL; /* NULL: no grant room */
    if (ng > 0 && !grants_by_name(c, l, wire))
      ng = 0; /* never (grants_by_name): the executor would run it without its addresses */
    ngrants += ng;
    d->offers.granted += ng;
    tlc_launch_item it = {.tid = l->tid,
                          .taskset_id = l->taskset,
                          .index = l->index,
                          .attempt = l->attempt,
                          .flags = l->speculative ? TLC_LAUNCH_SPECULATIVE : 0,
                          .kind = tlc_str(b->stage->kind),
                          .ngrants = ng,
                          .grants = ng > 0 ? wire : NULL};
    /* A frame ends at LAUNCH_FRAME_MAX items or before the item that would pass TLC_FRAME_MAX
     * (its version and type bytes, the count, the items). */
    if (nitems > 0 &&
        (nitems == LAUNCH_FRAME_MAX || 2 + frame_bytes + item_bytes(&it) > TLC_FRAME_MAX)) {
      tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->offers.items}};
      encode(c, &m);
      nitems = 0;
      frame_bytes = 4;
    }
    frame_bytes += item_bytes(&it);
    d->offers.items[nitems++] = it;
  }
  if (nitems > 0) {
    tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->offers.items}};
    encode(c, &m);
  }
  d->offers.launched += n;
  if (n > 0)
    note_held(d);
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
  free(d->offers.grants);
  free(d->offers.wire_grants);
}
