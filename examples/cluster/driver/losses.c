/* Lost executors: the loss reports to the ledger (both phases), the records of each loss for the
 * summary (open until its real reason came, then in a ring of the last ones; both kept in the
 * run's record, so that a restarted driver tells every loss of the run), the removal of
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

/* Each lost executor has one record, made by the ledger's executor_lost (the loss begins: its
 * first phase, how it was detected) and ended by its executor_removed (the loss is over: its
 * real reason, and where that came from). An ended record is counted by kind and moved to the
 * ring of the last LOST_DETAIL_MAX; one still waiting stays on open_losses, which so holds one
 * record per executor the ledger holds in PENDING_LOSS: memory follows live executors, not the
 * losses ever made. A report the driver makes (report_loss) says how the loss was detected and
 * where its reason came from, for the events it makes (losses_state.reporting); the events
 * tl_tick makes say it by their kind. */

static const char *tick_source(tl_loss_kind kind) {
  return kind == TL_LOSS_HEARTBEAT_TIMEOUT  ? "tl_tick (heartbeat expiry)"
         : kind == TL_LOSS_RECOVERY_TIMEOUT ? "tl_tick (recovery timeout)"
         : kind == TL_LOSS_PENDING_TIMEOUT  ? "pending-loss timeout"
                                            : "tl_tick";
}

static void add_phase(loss_rec *lr, const tl_loss_reason *r) {
  if (lr->nphases < MAX_PHASES)
    lr->phases[lr->nphases++] = r->kind;
}

/* The loss of id begins (executor_lost): its record, with its first phase. */
static void loss_begins(driver *d, const char *id, const tl_loss_reason *r, detection detected_by) {
  loss_rec *lr = NULL;
  HASH_FIND_STR(d->losses.open_losses, id, lr);
  if (lr) { /* the ledger begins a loss once per executor: not seen, but a phase, not a copy */
    add_phase(lr, r);
    return;
  }
  lr = calloc(1, sizeof *lr);
  if (!lr)
    die_oom();
  copy_text(lr->id, sizeof lr->id, id);
  lr->seq = ++d->losses.lost_total;
  lr->detected_by = detected_by;
  d->losses.lost_by_detection[detected_by]++;
  add_phase(lr, r);
  HASH_ADD_STR(d->losses.open_losses, id, lr);
}

/* The loss of lr's executor is over (executor_removed): its real reason, a second phase unless
 * the first one was it already, and the record to the ring. */
static void loss_ends(driver *d, loss_rec *lr, const tl_loss_reason *r, const char *source) {
  if (lr->phases[lr->nphases - 1] != r->kind)
    add_phase(lr, r);
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

/* Reports a loss to the ledger and counts it by kind. detected_by: how the loss began, when this
 * is its first report; source: where a real reason came from. The events the report makes
 * (executor_lost, executor_removed) come back before tl_executor_lost returns, and keep the
 * records. */
void report_loss(driver *d, const char *id, const tl_loss_reason *reason, detection detected_by,
                 const char *source) {
  char e[ESC_MAX];
  /* A callback of this report may report another loss (a write to a closed connection): the
   * context is put back as it was after each. */
  bool outer_reporting = d->losses.reporting;
  detection outer_detecting = d->losses.detecting;
  const char *outer_source = d->losses.source;
  d->losses.reporting = true;
  d->losses.detecting = detected_by;
  d->losses.source = source;
  int rc = tl_executor_lost(d->run.s, id, reason);
  d->losses.reporting = outer_reporting;
  d->losses.detecting = outer_detecting;
  d->losses.source = outer_source;
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_executor_lost %s: %s\n", esc(e, id), tl_err_name(rc));
    return;
  }
  d->losses.reports[reason->kind]++;
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

/* A loss begins: its record (how it was detected: the driver's report says it, tl_tick's
 * losses are known by their kind), and the count of executors lost; apart from them those
 * released (removed as TL_LOSS_DECOMMISSIONED: not losses, no record). A connection still open
 * for the lost executor is heard no more and closed (conn_lost). A stopped executor that
 * expired is resumed soon after, so that its frames come and are refused. */
void cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *reason) {
  driver *d = ud;
  (void)executor_ud; /* registered without one: a connection is freed before its executor is */
  if (reason->kind == TL_LOSS_DECOMMISSIONED) {
    d->losses.executors_released++;
    return;
  }
  d->losses.executors_lost++;
  conn_lost(d, id);
  if (d->losses.reporting) {
    loss_begins(d, id, reason, d->losses.detecting);
    return;
  }
  char e[ESC_MAX];
  if (reason->kind == TL_LOSS_RECOVERY_TIMEOUT) { /* both phases at once, from tl_tick */
    d->losses.reports[reason->kind]++;
    d->losses.recovery_timeouts++;
    loss_begins(d, id, reason, DETECTED_RECOVERY);
    logf_(d, "executor %s lost: it did not reconcile in time", esc(e, id));
    phase_check(d); /* check_recovery, off this stack */
  } else if (reason->kind == TL_LOSS_HEARTBEAT_TIMEOUT) {
    d->losses.reports[reason->kind]++;
    loss_begins(d, id, reason, DETECTED_HEARTBEAT);
    logf_(d, "executor %s lost: heartbeat timeout", esc(e, id));
    faults_heartbeat_expired(d, id); /* a stopped executor: resumed, its frames refused */
  }
}

/* A loss is over: the ledger removed the executor for good, with the real reason (the one the
 * driver reported, or tl_tick's: the heartbeat or recovery timeout, or the pending-loss timeout
 * when no second phase came). An executor with no open record is not a loss: a released one.
 * (A loss that began before a restart has its record back from the run's record, record.c's
 * get_history, open as it was, so its end after the restart ends it.) */
void cb_executor_removed(void *ud, const char *id, void *executor_ud,
                         const tl_loss_reason *reason) {
  driver *d = ud;
  (void)executor_ud;
  loss_rec *lr = NULL;
  HASH_FIND_STR(d->losses.open_losses, id, lr);
  if (lr)
    loss_ends(d, lr, reason, d->losses.reporting ? d->losses.source : tick_source(reason->kind));
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

void losses_free(driver *d) {
  loss_rec *lr, *lr_tmp;
  HASH_ITER(hh, d->losses.open_losses, lr, lr_tmp) {
    HASH_DEL(d->losses.open_losses, lr);
    free(lr);
  }
}
