/* KILL frames: one for each kill_task event, or, while a connection's kills are held (a
 * reconciliation: its unknown attempts each get a kill_task event), gathered and sent as a few
 * KILL frames of many tids each, in one write, so that no reconciliation writes a frame per tid
 * (docs/cluster.md "Driver failover"). */

#include "driver.h"

/* Encodes tids[0 .. n) as KILL frames of up to TLC_KILL_FRAME_TIDS tids (whatever the reason's
 * length, they fit), then hands them to libuv in one write. */
void send_kills(conn *c, const uint64_t *tids, size_t n, bool interrupt, const char *reason) {
  if (c->closing)
    return;
  for (size_t at = 0; at < n; at += TLC_KILL_FRAME_TIDS) {
    size_t k = n - at < TLC_KILL_FRAME_TIDS ? n - at : TLC_KILL_FRAME_TIDS;
    tlc_msg m = {.type = TLC_MSG_KILL, .u.kill = {interrupt, tlc_str(reason), k, tids + at}};
    encode(c, &m);
  }
  c->d->kills.tids_sent += n;
  send_out(c);
}

/* Sends what is gathered, and gathers anew (for the same connection). */
static void flush(driver *d) {
  kills_state *k = &d->kills;
  if (k->n > 0)
    send_kills(k->held, k->tids, k->n, k->interrupt, k->reason);
  k->n = 0;
}

void kills_hold(driver *d, conn *c) {
  d->kills.held = c;
  d->kills.n = 0;
}

/* kill_task's KILL for the attempt tid on c: gathered while c's kills are held (a change of
 * interrupt or reason sends what was gathered first, so one frame has one of each), else sent
 * at once. The reason is copied, cut to TLC_TEXT_MAX bytes. */
void kill_tid(driver *d, conn *c, tl_tid tid, bool interrupt, const char *reason) {
  kills_state *k = &d->kills;
  if (k->held != c) {
    send_kills(c, &tid, 1, interrupt, reason);
    return;
  }
  if (k->n > 0 && (k->interrupt != interrupt || strncmp(k->reason, reason, TLC_TEXT_MAX) != 0))
    flush(d);
  if (k->n == 0) {
    k->interrupt = interrupt;
    copy_text(k->reason, sizeof k->reason, reason);
  }
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 1024;
    uint64_t *tids = realloc(k->tids, cap * sizeof *tids);
    if (!tids)
      die_oom();
    k->tids = tids;
    k->cap = cap;
  }
  k->tids[k->n++] = tid;
}

/* Sends what was gathered and holds nothing any more; the gathering's memory is freed (a
 * reconciliation is rare, and may have been large). */
void kills_release(driver *d) {
  kills_state *k = &d->kills;
  if (k->held)
    flush(d);
  k->held = NULL;
  free(k->tids);
  k->tids = NULL;
  k->cap = 0;
}
