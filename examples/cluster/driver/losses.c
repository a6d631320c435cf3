/* Lost executors: the loss reports to the ledger (both phases), the records of each loss for the
 * summary (open until its real reason came, then in a ring of the last ones), the removal of
 * released executors, and the ledger's executor_lost callback. */

#include "driver.h"

const char *const detection_names[DETECTED_N] = {
    "connection closed", "protocol fault", "heartbeat timeout", "launcher end", "recovery timeout"};

/* tl_loss_kind's names, for the JSON summary: the enum's and, lower case, a phase's. */
const char *const loss_kind_names[LOSS_KINDS] = {
    "TL_LOSS_PENDING",           "TL_LOSS_EXITED",          "TL_LOSS_PROCESS_LOST",
    "TL_LOSS_HEARTBEAT_TIMEOUT", "TL_LOSS_KILLED",          "TL_LOSS_DECOMMISSIONED",
    "TL_LOSS_PENDING_TIMEOUT",   "TL_LOSS_RECOVERY_TIMEOUT"};
const char *const phase_names[LOSS_KINDS] = {
    "pending", "exited",         "process_lost",    "heartbeat_timeout",
    "killed",  "decommissioned", "pending_timeout", "recovery_timeout"};

/* Notes a loss report the ledger took, for the summary, in O(1): the first one makes the
 * executor's record (detected_by says how the loss began), each one adds its phase. A record
 * whose real reason came is counted by kind and moved to the ring of the last LOST_DETAIL_MAX;
 * one still waiting stays on open_losses, which holds at most one record per executor the
 * ledger holds in PENDING_LOSS (settle_open_losses ends those that the pending-loss timeout
 * ended), so memory follows live executors, not losses ever made. */
static void note_loss(driver *d, const char *id, const tl_loss_reason *r, detection detected_by,
                      const char *source) {
  loss_rec *lr = NULL;
  HASH_FIND_STR(d->losses.open_losses, id, lr);
  if (!lr) {
    lr = calloc(1, sizeof *lr);
    if (!lr)
      die_oom();
    copy_text(lr->id, sizeof lr->id, id);
    lr->seq = ++d->losses.lost_total;
    lr->detected_by = detected_by;
    d->losses.lost_by_detection[detected_by]++;
    HASH_ADD_STR(d->losses.open_losses, id, lr);
  }
  if (lr->nphases < MAX_PHASES)
    lr->phases[lr->nphases++] = r->kind;
  if (r->kind != TL_LOSS_PENDING) {
    lr->final = true;
    lr->kind = r->kind;
    lr->caused_by_app = r->caused_by_app;
    lr->exit_code = r->exit_code;
    copy_text(lr->reason, sizeof lr->reason, r->message);
    copy_text(lr->source, sizeof lr->source, source);
    d->losses.lost_by_kind[r->kind]++;
    HASH_DEL(d->losses.open_losses, lr);
    loss_rec *slot = &d->losses.lost_detail[d->losses.lost_ended++ % LOST_DETAIL_MAX];
    *slot = *lr;
    memset(&slot->hh, 0, sizeof slot->hh);
    free(lr);
  }
  /* A burst of losses: settle now, once lr is no longer used (settling may free any record). */
  if (HASH_COUNT(d->losses.open_losses) >= d->losses.settle_at)
    settle_open_losses(d);
}

/* A pending loss that no second phase ended and that the ledger no longer holds as pending: the
 * pending-loss timeout ended it (TL_LOSS_PENDING_TIMEOUT, the app's, as tl_tick makes it). */
void settle_pending_timeout(driver *d, loss_rec *lr) {
  tl_loss_reason r = {.kind = TL_LOSS_PENDING_TIMEOUT,
                      .caused_by_app = true,
                      .message = "no real reason came within the pending-loss timeout"};
  char id[TL_ID_MAX];
  memcpy(id, lr->id, sizeof id);
  note_loss(d, id, &r, lr->detected_by, "pending-loss timeout");
}

/* Ends every open record whose executor the ledger no longer holds as PENDING_LOSS: every
 * SETTLE_MS, and whenever the table has doubled since the last time (at least 64), so that it
 * holds at most about twice the executors the ledger holds pending, at O(1) a loss amortised. */
void settle_open_losses(driver *d) {
  loss_rec *lr, *tmp;
  d->losses.settle_at = SIZE_MAX; /* settle_pending_timeout must not start another */
  HASH_ITER(hh, d->losses.open_losses, lr, tmp) {
    tl_executor_status es;
    if (tl_executor_get(d->run.s, lr->id, &es) < 0 || es.state != TL_EXECUTOR_PENDING_LOSS)
      settle_pending_timeout(d, lr);
  }
  size_t left = HASH_COUNT(d->losses.open_losses);
  d->losses.settle_at = left < 32 ? 64 : 2 * left;
}

void on_settle(uv_timer_t *t) { settle_open_losses(t->data); }

/* Reports a loss to the ledger and counts it by kind. detected_by: how the loss began, when this
 * is its first report; source: where a real reason came from. */
void report_loss(driver *d, const char *id, const tl_loss_reason *reason, detection detected_by,
                 const char *source) {
  char e[ESC_MAX];
  int rc = tl_executor_lost(d->run.s, id, reason);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_executor_lost %s: %s\n", esc(e, id), tl_err_name(rc));
    return;
  }
  d->losses.reports[reason->kind]++;
  note_loss(d, id, reason, detected_by, source);
  logf_(d, "executor %s lost: %s", esc(e, id), reason->message ? reason->message : "");
}

/* Removes a released executor from the ledger once it is gone (its connection closed after STOP,
 * or its end came): TL_LOSS_DECOMMISSIONED, never the app's; not a loss (cb_executor_lost counts
 * it as a release). */
void remove_released(driver *d, const char *id) {
  tl_loss_reason r = {.kind = TL_LOSS_DECOMMISSIONED, .message = "released by the driver"};
  char e[ESC_MAX];
  int rc = tl_executor_lost(d->run.s, id, &r);
  if (rc < 0)
    fprintf(stderr, "tl-driver: tl_executor_lost %s: %s\n", esc(e, id), tl_err_name(rc));
  else
    logf_(d, "executor %s released", esc(e, id));
}

/* Whether the ledger holds id as an executor not yet removed; *state is its state. */
bool in_ledger(driver *d, const char *id, tl_executor_state *state) {
  tl_executor_status es;
  if (tl_executor_get(d->run.s, id, &es) < 0)
    return false;
  *state = es.state;
  return true;
}

/* Counts the executors lost (first reports: TL_LOSS_PENDING on a closed connection, or
 * TL_LOSS_HEARTBEAT_TIMEOUT from tl_tick), and apart from them those released (removed as
 * TL_LOSS_DECOMMISSIONED: not losses). A stopped executor that expired is resumed soon after,
 * so that its frames come and are refused. */
void cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *reason) {
  driver *d = ud;
  (void)executor_ud; /* registered without one: a connection is freed before its executor is */
  if (reason->kind == TL_LOSS_DECOMMISSIONED) {
    d->losses.executors_released++;
    return;
  }
  d->losses.executors_lost++;
  if (reason->kind == TL_LOSS_RECOVERY_TIMEOUT) { /* both phases at once, from tl_tick */
    d->losses.reports[reason->kind]++;
    d->losses.recovery_timeouts++;
    note_loss(d, id, reason, DETECTED_RECOVERY, "tl_tick (recovery timeout)");
    char e[ESC_MAX];
    logf_(d, "executor %s lost: it did not reconcile in time", esc(e, id));
    phase_check(d); /* check_recovery, off this stack */
  }
  if (reason->kind == TL_LOSS_HEARTBEAT_TIMEOUT) {
    d->losses.reports[reason->kind]++;
    note_loss(d, id, reason, DETECTED_HEARTBEAT, "tl_tick (heartbeat expiry)");
    char e[ESC_MAX];
    logf_(d, "executor %s lost: heartbeat timeout", esc(e, id));
    faults_heartbeat_expired(d, id); /* a stopped executor: resumed, its frames refused */
  }
}

static int by_seq(const void *a, const void *b) {
  uint64_t x = (*(const loss_rec *const *)a)->seq, y = (*(const loss_rec *const *)b)->seq;
  return x < y ? -1 : x > y;
}

/* The lost executors the summary shows one by one: the last LOST_DETAIL_MAX losses to begin,
 * of those whose real reason came (the ring) and those still waiting for it, in the order the
 * losses began. *shown is a malloc'd array the caller frees; returns its length. */
size_t shown_losses(driver *d, const loss_rec ***shown) {
  size_t ended =
      d->losses.lost_ended < LOST_DETAIL_MAX ? (size_t)d->losses.lost_ended : LOST_DETAIL_MAX;
  size_t n = ended + HASH_COUNT(d->losses.open_losses);
  const loss_rec **all = malloc((n ? n : 1) * sizeof *all);
  if (!all)
    die_oom();
  size_t k = 0;
  for (size_t i = 0; i < ended; i++)
    all[k++] = &d->losses.lost_detail[i];
  for (loss_rec *lr = d->losses.open_losses; lr; lr = lr->hh.next)
    all[k++] = lr;
  qsort(all, n, sizeof *all, by_seq);
  if (n > LOST_DETAIL_MAX) {
    memmove(all, all + (n - LOST_DETAIL_MAX), LOST_DETAIL_MAX * sizeof *all);
    n = LOST_DETAIL_MAX;
  }
  *shown = all;
  return n;
}

/* The settling of open loss records, every SETTLE_MS and at 64 open ones at first. */
void losses_init(driver *d) {
  d->losses.settle_at = 64;
  uv_timer_init(d->run.loop, &d->losses.settle_timer);
  d->losses.settle_timer.data = d;
  uv_timer_start(&d->losses.settle_timer, on_settle, SETTLE_MS, SETTLE_MS);
}

void losses_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->losses.settle_timer, on_closed);
}

void losses_free(driver *d) {
  loss_rec *lr, *lr_tmp;
  HASH_ITER(hh, d->losses.open_losses, lr, lr_tmp) {
    HASH_DEL(d->losses.open_losses, lr);
    free(lr);
  }
}
