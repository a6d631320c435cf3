/* Recovery of a crashed run (--state-dir): the directory locked for the run, the record read
 * (record.c), the ledger restored from it, the executors of the crashed run adopted, and the
 * end of recovery once none is left RECOVERING. What each recovery did is kept for the summary
 * and in the record (recovery_rec): the drivers before this one's, and this one's. */

#include <errno.h>
#include <sys/stat.h>

#include "driver.h"

/* Whether recovery is over: no executor the restore made RECOVERING is left. */
void check_recovery(driver *d) {
  if (!d->recovery.recovered || d->recovery.recover_end_ns)
    return;
  tl_stats st;
  tl_stats_get(d->run.s, &st);
  if (st.executors_recovering > 0)
    return;
  d->recovery.recover_end_ns = uv_hrtime();
  logf_(d,
        "recovery done in %.3f s: %" PRIu64 " executors reconciled, %" PRIu64
        " lost to the recovery timeout",
        (double)(d->recovery.recover_end_ns - d->recovery.recover_start_ns) / 1e9,
        d->conns.reconciled, d->losses.recovery_timeouts);
}

typedef struct snap_reader {
  const uint8_t *p;
  size_t len, at;
} snap_reader;

static int snap_read(void *ud, void *buf, size_t n) {
  snap_reader *sr = ud;
  size_t left = sr->len - sr->at;
  if (n > left)
    n = left;
  memcpy(buf, sr->p + sr->at, n);
  sr->at += n;
  return (int)n;
}

/* --state-dir: takes the directory (made 0700 if it is missing) for the run (state_lock), then
 * reads the record there, if any, and restores the ledger from it (*restored true), or prepares
 * a fresh run's directory. Returns 0, or the exit status of a run that cannot begin: 1 for a
 * directory another driver holds, that others may write or that holds a link, and for a record
 * that cannot be had or recovered (the message says why; nothing is changed in the directory,
 * so that it can be looked at, but the lock file's creation). */
int recover_state(driver *d, const tl_config *cfg, const tl_callbacks *cb, bool *restored) {
  *restored = false;
  if (mkdir(d->record.state_dir, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "tl-driver: --state-dir %s: %s\n", d->record.state_dir, strerror(errno));
    return 1;
  }
  char why[3 * STATE_WHY_MAX + 8];
  /* The directory is this run's before anything reads a record: a second driver on it is
   * refused here, before it could take a live record for a crashed one's. */
  d->recovery.lock_fd = state_lock(d->record.state_dir, why, sizeof why);
  if (d->recovery.lock_fd < 0) {
    fprintf(stderr, "tl-driver: --state-dir: %s\n", why);
    return 1;
  }
  state_record rec;
  int rc = state_read(d->record.state_dir, &rec, why, sizeof why);
  if (rc == 0)
    return 0;
  if (rc < 0) {
    fprintf(stderr, "tl-driver: the state in %s cannot be read, and recovery is refused: %s\n",
            d->record.state_dir, why);
    return 1;
  }
  const uint8_t *snap;
  size_t snap_len;
  if (read_state_body(d, &rec, &snap, &snap_len) != 0) {
    free(rec.body);
    return 1;
  }
  tl_config rcfg = *cfg;
  /* No tid the crashed driver may have sent is given again (docs/snapshot.md). With the older
   * record, the newer one's reservation is unknown: far beyond what one write reserves. */
  bool older = !strcmp(rec.name, "state.prev");
  rcfg.restore_tid_floor = rec.tid_reserved + 1 + (older ? FALLBACK_TID_GAP : 0);
  snap_reader sr = {snap, snap_len, 0};
  rc = tl_scheduler_restore(&rcfg, cb, snap_read, &sr, &d->run.s);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: the state in %s cannot be recovered: tl_scheduler_restore: %s\n",
            d->record.state_dir, tl_err_name(rc));
    free(rec.body);
    return 1;
  }
  /* A record a crash left in state.tmp becomes state before the next write replaces
   * state.tmp: at no moment is the only good record gone. */
  if (!strcmp(rec.name, "state.tmp") &&
      state_promote_tmp(d->record.state_dir, why, sizeof why) != 0) {
    fprintf(stderr, "tl-driver: the state in %s cannot be kept: %s\n", d->record.state_dir, why);
    free(rec.body);
    return 1;
  }
  d->recovery.recovered = true;
  d->recovery.fell_back = rec.fell_back;
  d->recovery.state_file = rec.name;
  copy_text(d->recovery.fell_back_why, sizeof d->recovery.fell_back_why, rec.why_newest);
  record_restored(d, rcfg.restore_tid_floor);
  /* An executor dynamic allocation released before the crash runs nothing and was sent STOP
   * (or would have been, had the crash not come first): it is not waited for. Its end is
   * requested, so it is removed as decommissioned; if it comes back, its REGISTER is refused
   * and answered with STOP. */
  for (uint32_t i = 0; i < d->scaling.nexecs; i++) {
    tl_executor_state state;
    if (d->scaling.execs[i].released && !d->scaling.execs[i].ended &&
        in_ledger(d, d->scaling.execs[i].id, &state))
      remove_released(d, d->scaling.execs[i].id);
  }
  d->recovery.recover_start_ns = uv_hrtime();
  d->recovery.recover_start_unix_ns = wall_clock_ns();
  tl_stats st;
  tl_stats_get(d->run.s, &st);
  d->recovery.recovering_at_start = (uint32_t)st.executors_recovering;
  if (rec.fell_back)
    fprintf(stderr, "tl-driver: %s; recovering from %s/%s\n", rec.why_newest, d->record.state_dir,
            rec.name);
  logf_(d, "recovering from %s: %zu bytes, %u executors to reconcile, %zu attempts frozen",
        d->record.state_dir, rec.len, d->recovery.recovering_at_start, st.attempts_frozen);
  free(rec.body);
  *restored = true;
  check_recovery(d); /* none to reconcile: done at once */
  return 0;
}
