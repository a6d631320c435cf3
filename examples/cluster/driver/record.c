/* The run's durable record (--state-dir): encoded on the loop and written with state.c on libuv's
 * thread pool, SYNCED once it is durable, releases held until a record holds them, the tid
 * reservation, and the record read back by a restarted driver (recovery.c). */

#include <errno.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

/* ---------------------------------------------------------------------------------------------
 * The record's body (docs/cluster.md "Driver failover"), written and read with the project's
 * byte codec (codec.h): every integer little-endian, every string a u16 length and its bytes.
 *
 *   u32 STATE_BODY_VERSION; the token; u32 the port; u64 ns offering so far;
 *   u32 jobs, and for each: JOB_FIELDS, and for each of its stages: STAGE_FIELDS;
 *   u32 executors started (exec_rec), and for each: EXEC_FIELDS;
 *   STATE_COUNTERS, a u64 each;
 *   the run's history (put_history): u64 the run's first start (CLOCK_REALTIME, ns since the
 *   epoch); DETECTED_N u64 lost executors by how their losses began, LOSS_KINDS u64 by their
 *   real reasons, LOSS_KINDS u64 loss reports by kind; u32 loss records, and for each:
 *   LOSS_FIELDS (the last LOST_DETAIL_MAX that ended, then those still open); u64 recoveries
 *   in all, u32 recoveries kept (the last RECOVERIES_MAX, this driver's last), and for each:
 *   RECOVERY_FIELDS;
 *   u64 the ledger's snapshot length, then tl_snapshot's bytes (docs/snapshot.md).
 *
 * Each record's fields are described once, in a table below, and the writer and the reader of
 * a record both run over its table, side by side in this file. A table's row says how its field
 * is kept:
 *   U(width, field)   an unsigned integer of width bytes
 *   I(width, field)   a signed one, two's complement
 *   B(field)          a bool, one byte (any byte but 0 is true)
 *   S(field)          a string (a char array), which must fit it and hold no NUL
 *   C(width, field)   an integer of the command line's, which the record must match
 *   K(field)          a string of the command line's, which the record must match
 *   X(field)          a u8 the record's own code says how to write and read (exec_started)
 * The record and the ledger are taken at one moment of the loop, between two calls: what the
 * jobs counted is exactly what the ledger holds.
 * ------------------------------------------------------------------------------------------- */

#define JOB_FIELDS(U, I, B, S, C, K, X)                                                            \
  C(4, nstages)                                                                                    \
  U(4, current)                                                                                    \
  B(failed)                                                                                        \
  B(done)

#define STAGE_FIELDS(U, I, B, S, C, K, X)                                                          \
  K(kind)                                                                                          \
  C(4, ntasks)                                                                                     \
  U(8, taskset)                                                                                    \
  U(4, succeeded)                                                                                  \
  U(4, failed_attempts)                                                                            \
  U(4, counted_failures)                                                                           \
  U(4, killed)                                                                                     \
  U(4, zombie_finished)                                                                            \
  B(failed)                                                                                        \
  B(released)

/* An executor's `started` is X: an adopted executor is written as started (running, as far as
 * the run knows), and read back as adopted when its end had not come. */
#define EXEC_FIELDS(U, I, B, S, C, K, X)                                                           \
  S(id)                                                                                            \
  X(started)                                                                                       \
  B(ended)                                                                                         \
  B(released)                                                                                      \
  B(fault_killed)                                                                                  \
  B(injected)                                                                                      \
  B(forced)                                                                                        \
  B(caused_by_app)                                                                                 \
  B(requested)                                                                                     \
  U(1, kind)                                                                                       \
  I(4, exit_code)                                                                                  \
  S(reason)                                                                                        \
  S(source)                                                                                        \
  S(handle)

/* One lost executor (losses.c's loss_rec): ended (final) or still open when written. */
#define LOSS_FIELDS(U, I, B, S, C, K, X)                                                           \
  S(id)                                                                                            \
  U(8, seq)                                                                                        \
  U(1, detected_by)                                                                                \
  U(1, nphases)                                                                                    \
  U(1, phases[0])                                                                                  \
  U(1, phases[1])                                                                                  \
  U(1, phases[2])                                                                                  \
  U(1, phases[3])                                                                                  \
  B(final)                                                                                         \
  U(1, kind)                                                                                       \
  B(caused_by_app)                                                                                 \
  I(4, exit_code)                                                                                  \
  S(reason)                                                                                        \
  S(source)
_Static_assert(MAX_PHASES == 4, "LOSS_FIELDS writes MAX_PHASES phases");

/* One recovery of the run (recovery_rec). */
#define RECOVERY_FIELDS(U, I, B, S, C, K, X)                                                       \
  S(from)                                                                                          \
  B(done)                                                                                          \
  U(8, start_unix_ns)                                                                              \
  U(8, took_ns)                                                                                    \
  U(4, executors_to_reconcile)                                                                     \
  U(8, reconciled)                                                                                 \
  U(8, tids_named)                                                                                 \
  U(8, unknown_killed)                                                                             \
  U(8, attempts_lost)                                                                              \
  U(8, recovery_timeouts)                                                                          \
  U(8, stray_reconciles)                                                                           \
  U(8, stray_kills)                                                                                \
  U(8, updates_unknown)                                                                            \
  U(4, launcher_adopted)

/* The counters, each kept by the file that owns it (a u64 each). */
#define STATE_COUNTERS(XX)                                                                         \
  XX(scaling, started)                                                                             \
  XX(conns, registered)                                                                            \
  XX(conns, registered_cores)                                                                      \
  XX(offers, launched)                                                                             \
  XX(offers, retries)                                                                              \
  XX(faults, tasks_finished)                                                                       \
  XX(link, kills_sent)                                                                             \
  XX(offers, binaries_sent)                                                                        \
  XX(link, forgets_sent)                                                                           \
  XX(losses, executors_lost)                                                                       \
  XX(losses, executors_released)                                                                   \
  XX(conns, refused_updates)                                                                       \
  XX(conns, frames_in)                                                                             \
  XX(link, frames_out)                                                                             \
  XX(scaling, most_active)                                                                         \
  XX(losses, lost_total)                                                                           \
  XX(conns, violations)                                                                            \
  XX(conns, gone_frames)

/* The writer's rows: rec is the record written. */
#define W_U(n, f) tl__put_le(w, (uint64_t)rec->f, n);
#define W_I(n, f) tl__put_le(w, (uint64_t)(int64_t)rec->f, n);
#define W_B(f) tl__put_u8(w, rec->f ? 1 : 0);
#define W_S(f) tl__put_str16(w, rec->f, strlen(rec->f));
#define W_C W_U
#define W_K W_S
#define W_X(f) tl__put_u8(w, exec_##f##_out(rec));
#define WRITE(FIELDS) FIELDS(W_U, W_I, W_B, W_S, W_C, W_K, W_X)

/* The reader's rows: rec is the record read into; *same turns false where it differs from the
 * command line's. A value out of its field's range makes r bad. */
#define R_U(n, f)                                                                                  \
  {                                                                                                \
    uint64_t v = tl__get_le(r, n);                                                                 \
    rec->f = (__typeof__(rec->f))v;                                                                \
    if ((uint64_t)rec->f != v)                                                                     \
      tl__rbuf_fail(r, TL__RFAULT_RANGE);                                                          \
  }
#define R_I(n, f)                                                                                  \
  rec->f = (__typeof__(rec->f))((int64_t)(tl__get_le(r, n) << (64 - 8 * (n))) >> (64 - 8 * (n)));
#define R_B(f) rec->f = tl__get_u8(r) != 0;
#define R_S(f) tl__get_cstr16(r, 0, rec->f, sizeof rec->f, NULL);
#define R_C(n, f) *same = *same && tl__get_le(r, n) == (uint64_t)rec->f;
#define R_K(f)                                                                                     \
  {                                                                                                \
    char text[sizeof rec->f];                                                                      \
    tl__get_cstr16(r, 0, text, sizeof text, NULL);                                                 \
    *same = *same && !strcmp(text, rec->f);                                                        \
  }
#define R_X(f) exec_##f##_in(rec, tl__get_u8(r) != 0);
#define READ(FIELDS) FIELDS(R_U, R_I, R_B, R_S, R_C, R_K, R_X)

static uint8_t exec_started_out(const exec_rec *e) { return e->started || e->adopted; }

/* Read as it was written; get_exec then makes it adopted when the executor was still running
 * when the driver died: this process did not start it, so its launcher will not report its end;
 * the connection and the pending-loss timeout will (unless the launcher takes it back:
 * adopt_executors). */
static void exec_started_in(exec_rec *e, bool started) { e->started = started; }

static void put_job(tl__wbuf *w, const job *rec) { WRITE(JOB_FIELDS) }
static void get_job(tl__rbuf *r, job *rec, bool *same) {
  READ(JOB_FIELDS)
  if (rec->current >= rec->nstages)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
}

static void put_stage(tl__wbuf *w, const stage *rec) { WRITE(STAGE_FIELDS) }
static void get_stage(tl__rbuf *r, stage *rec, bool *same) {
  READ(STAGE_FIELDS)
  if (rec->succeeded > rec->ntasks)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
}

static void put_exec(tl__wbuf *w, const exec_rec *rec) { WRITE(EXEC_FIELDS) }
static void get_exec(tl__rbuf *r, exec_rec *rec, bool *same) {
  (void)same; /* nothing of an executor's comes from the command line */
  READ(EXEC_FIELDS)
  if (rec->kind >= LOSS_KINDS)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  bool started = rec->started;
  rec->started = started && rec->ended;
  rec->adopted = started && !rec->ended;
}

static void put_loss(tl__wbuf *w, const loss_rec *rec) { WRITE(LOSS_FIELDS) }
static void get_loss(tl__rbuf *r, loss_rec *rec, bool *same) {
  (void)same;
  READ(LOSS_FIELDS)
  bool bad = rec->detected_by >= DETECTED_N || rec->nphases == 0 || rec->nphases > MAX_PHASES ||
             rec->kind >= LOSS_KINDS;
  for (size_t k = 0; k < rec->nphases && !bad; k++)
    bad = rec->phases[k] >= LOSS_KINDS;
  if (bad)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
}

static void put_recovery(tl__wbuf *w, const recovery_rec *rec) { WRITE(RECOVERY_FIELDS) }
static void get_recovery(tl__rbuf *r, recovery_rec *rec, bool *same) {
  (void)same;
  READ(RECOVERY_FIELDS)
}

uint64_t wall_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * UINT64_C(1000000000) + (uint64_t)ts.tv_nsec;
}

uint64_t run_start_unix_ns(const driver *d) {
  return d->recovery.run_start_unix_ns ? d->recovery.run_start_unix_ns : d->summary.start_unix_ns;
}

void recovery_now(const driver *d, recovery_rec *out) {
  memset(out, 0, sizeof *out);
  copy_text(out->from, sizeof out->from, d->recovery.state_file);
  out->done = d->recovery.recover_end_ns != 0;
  out->start_unix_ns = d->recovery.recover_start_unix_ns;
  out->took_ns =
      (out->done ? d->recovery.recover_end_ns : uv_hrtime()) - d->recovery.recover_start_ns;
  out->executors_to_reconcile = d->recovery.recovering_at_start;
  out->reconciled = d->conns.reconciled;
  out->tids_named = d->conns.reconciled_tids;
  out->unknown_killed = d->conns.reconcile_unknown;
  out->attempts_lost = d->conns.reconcile_lost;
  out->recovery_timeouts = d->losses.recovery_timeouts;
  out->stray_reconciles = d->conns.stray_reconciles;
  out->stray_kills = d->conns.stray_kills;
  out->updates_unknown = d->conns.resent_unknown;
  out->launcher_adopted = d->scaling.launcher_adopted;
}

/* What the summary tells of the whole run and a restart would lose: its first start, the lost
 * executors (the counts, the last LOST_DETAIL_MAX that ended, every one still open) and its
 * recoveries (those before this driver's, then this one's). */
static void put_history(tl__wbuf *w, driver *d) {
  tl__put_u64(w, run_start_unix_ns(d));
  for (int k = 0; k < DETECTED_N; k++)
    tl__put_u64(w, d->losses.lost_by_detection[k]);
  for (int k = 0; k < LOSS_KINDS; k++)
    tl__put_u64(w, d->losses.lost_by_kind[k]);
  for (int k = 0; k < LOSS_KINDS; k++)
    tl__put_u64(w, d->losses.reports[k]);
  uint64_t ended = d->losses.lost_ended < LOST_DETAIL_MAX ? d->losses.lost_ended : LOST_DETAIL_MAX;
  size_t open = HASH_COUNT(d->losses.open_losses);
  open = open < OPEN_LOSSES_MAX ? open : OPEN_LOSSES_MAX; /* what a reader takes */
  tl__put_u32(w, (uint32_t)(ended + open));
  for (uint64_t i = 0; i < ended; i++)
    put_loss(w, &d->losses.lost_detail[i]);
  const loss_rec *lr = d->losses.open_losses;
  for (size_t i = 0; i < open; i++, lr = lr->hh.next)
    put_loss(w, lr);
  uint32_t n = d->recovery.nearlier + (d->recovery.recovered ? 1 : 0);
  uint32_t skip = n > RECOVERIES_MAX ? n - RECOVERIES_MAX : 0;
  tl__put_u64(w, d->recovery.earlier_total + (d->recovery.recovered ? 1 : 0));
  tl__put_u32(w, n - skip);
  for (uint32_t i = skip; i < d->recovery.nearlier; i++)
    put_recovery(w, &d->recovery.earlier[i]);
  if (d->recovery.recovered) {
    recovery_rec now;
    recovery_now(d, &now);
    put_recovery(w, &now);
  }
}

static int loss_seq_order(const void *a, const void *b) {
  uint64_t x = ((const loss_rec *)a)->seq, y = ((const loss_rec *)b)->seq;
  return x < y ? -1 : x > y;
}

/* The run's history read back into d (put_history). The records still open go back on
 * open_losses, so that the end of their losses (executor_removed, after the restart) ends
 * them. r turns bad on anything out of range. */
static void get_history(tl__rbuf *r, driver *d) {
  bool same = true;
  d->recovery.run_start_unix_ns = tl__get_u64(r);
  for (int k = 0; k < DETECTED_N; k++)
    d->losses.lost_by_detection[k] = tl__get_u64(r);
  for (int k = 0; k < LOSS_KINDS; k++)
    d->losses.lost_by_kind[k] = tl__get_u64(r);
  for (int k = 0; k < LOSS_KINDS; k++)
    d->losses.reports[k] = tl__get_u64(r);
  uint32_t nloss = tl__get_u32(r);
  if (nloss > LOST_DETAIL_MAX + OPEN_LOSSES_MAX) /* more open ones than any writer writes */
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  d->losses.lost_ended = 0;
  for (uint32_t i = 0; i < nloss && !r->bad; i++) {
    loss_rec one;
    memset(&one, 0, sizeof one);
    get_loss(r, &one, &same);
    if (!r->bad && (one.seq == 0 || one.seq > d->losses.lost_total))
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
    if (r->bad)
      break;
    if (one.final) {
      if (d->losses.lost_ended == LOST_DETAIL_MAX) {
        tl__rbuf_fail(r, TL__RFAULT_RANGE);
        break;
      }
      d->losses.lost_detail[d->losses.lost_ended++] = one;
      continue;
    }
    loss_rec *lr = NULL;
    HASH_FIND_STR(d->losses.open_losses, one.id, lr);
    if (lr) { /* one open loss per executor */
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
      break;
    }
    lr = malloc(sizeof *lr);
    if (!lr)
      die_oom();
    *lr = one;
    HASH_ADD_STR(d->losses.open_losses, id, lr);
  }
  /* The ring oldest first, as its writer fills it: the next loss replaces the oldest. */
  qsort(d->losses.lost_detail, (size_t)d->losses.lost_ended, sizeof d->losses.lost_detail[0],
        loss_seq_order);
  d->recovery.earlier_total = tl__get_u64(r);
  uint32_t nrec = tl__get_u32(r);
  if (nrec > RECOVERIES_MAX || nrec > d->recovery.earlier_total)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  for (uint32_t i = 0; i < nrec && !r->bad; i++)
    get_recovery(r, &d->recovery.earlier[i], &same);
  d->recovery.nearlier = r->bad ? 0 : nrec;
}

static int snapshot_to_wbuf(void *ud, const void *buf, size_t n) {
  tl__put_bytes(ud, buf, n);
  return 0;
}

/* The record's body into w (emptied first): TL_OK, or tl_snapshot's error (TL_EBUSY: events
 * undelivered). */
static int encode_state(driver *d, tl__wbuf *w) {
  tl__wbuf_reset(w);
  tl__put_u32(w, STATE_BODY_VERSION);
  tl__put_str16(w, d->auth.token, strlen(d->auth.token));
  tl__put_u32(w, (uint32_t)d->edge.port);
  tl__put_u64(w, d->phase.offering ? d->record.recovered_elapsed + (uv_hrtime() - d->phase.start_ns)
                                   : 0);
  tl__put_u32(w, (uint32_t)d->jobs.njobs);
  for (size_t i = 0; i < d->jobs.njobs; i++) {
    const job *j = &d->jobs.list[i];
    put_job(w, j);
    for (uint32_t k = 0; k < j->nstages; k++)
      put_stage(w, &j->stages[k]);
  }
  tl__put_u32(w, d->scaling.nexecs);
  for (uint32_t i = 0; i < d->scaling.nexecs; i++) {
    exec_rec *e = &d->scaling.execs[i];
    char h[LAUNCHER_HANDLE_MAX];
    if (e->started && !e->ended && d->run.launcher && d->run.ops->handle &&
        d->run.ops->handle(d->run.launcher, e->id, h, sizeof h) > 0)
      copy_text(e->handle, sizeof e->handle, h);
    put_exec(w, e);
  }
#define PUT_COUNTER(g, f) tl__put_u64(w, d->g.f);
  STATE_COUNTERS(PUT_COUNTER)
#undef PUT_COUNTER
  put_history(w, d);
  size_t at = w->len;
  tl__put_u64(w, 0);
  int rc = tl_snapshot(d->run.s, snapshot_to_wbuf, w);
  if (w->failed)
    die_oom();
  if (rc != TL_OK)
    return rc;
  tl__patch_u64(w, at, w->len - at - 8);
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Writing (docs/cluster.md "Driver failover"). Launches never wait for a record: a record is
 * asked for every --snapshot-ms, at stage boundaries, registrations and executor starts
 * (state_due), at a release (hold_for_record) and before launches use up the tid reservation
 * (record_launched). Its body is encoded on the loop (the scheduler's consistent moment: the
 * jobs' counts are what the ledger holds), then written, fsynced and renamed on libuv's thread
 * pool, one write in flight at a time; a record asked for meanwhile is encoded when it ends
 * (want). When it ends, on the loop: SYNCED to every executor for the STATUS frames read before
 * its body was encoded, the releases it holds sent, and offers that waited for it resumed.
 *
 * What still waits for a durable record: a release's FORGETs and STOP (hold_for_record), the
 * launches of a task set no durable record holds yet (record_gate: once per stage), and launches
 * whose tids would pass the durable reservation (record_may_launch: rare, a write is asked for
 * when half of it is used).
 * ------------------------------------------------------------------------------------------- */

static void start_write(driver *d);

/* The thread pool's part: the file written, nothing else touched. */
static void write_work(uv_work_t *req) {
  record_write *w = (record_write *)req;
  uint64_t t0 = uv_hrtime();
  w->rc = state_write(w->dir, w->reserve, w->buf, w->len, w->why, sizeof w->why);
  w->ns = uv_hrtime() - t0;
}

/* Launches that waited for a record may go: offers resume (driver.c's on_durable). */
static void resume_launches(driver *d) {
  if (d->record.wait_since == 0)
    return;
  uint64_t waited = uv_hrtime() - d->record.wait_since;
  d->record.wait_since = 0;
  d->record.wait_ns += waited;
  d->record.wait_max_ns = waited > d->record.wait_max_ns ? waited : d->record.wait_max_ns;
  if (d->record.on_durable)
    d->record.on_durable(d);
}

/* Sends the held frames of every connection whose release a durable record holds (all of them
 * when all is true). */
static void send_held(driver *d, bool all) {
  for (conn *c = d->link.list; c; c = c->next)
    if (c->held && (all || c->held_until <= d->record.seq_durable)) {
      c->held = false;
      send_out(c);
    }
}

/* A write failed: the run goes on without it, degraded (a crash now recovers an older record).
 * Logged rate-limited: a failure when no line was logged for RECORD_FAIL_LOG_S (the first one
 * included), with the count of those that were not; the end of an episode whose failure was
 * logged. A disk that fails for hours, or fails and recovers over and over, logs at most two
 * lines every RECORD_FAIL_LOG_S. */
static void write_failed(driver *d, const char *why) {
  record_state *r = &d->record;
  uint64_t now = uv_hrtime();
  r->state_failed++;
  if (!r->degraded) {
    r->degraded = true;
    r->degraded_since = now;
    r->degraded_times++;
    r->degraded_failures = 0;
    r->degraded_logged = false;
  }
  r->degraded_failures++;
  if (r->fail_logged_ns && now - r->fail_logged_ns < RECORD_FAIL_LOG_S * UINT64_C(1000000000)) {
    r->fail_unlogged++;
    return;
  }
  if (r->fail_unlogged)
    fprintf(stderr,
            "tl-driver: writing the state: %s (and %" PRIu64 " failures not logged in the last "
            "%.1f s); failover degraded for %.1f s\n",
            why, r->fail_unlogged, (double)(now - r->fail_logged_ns) / 1e9,
            (double)(now - r->degraded_since) / 1e9);
  else
    fprintf(stderr,
            "tl-driver: writing the state: %s; failover degraded: a crash now recovers an older "
            "record\n",
            why);
  r->fail_logged_ns = now;
  r->fail_unlogged = 0;
  r->degraded_logged = true;
}

/* A write succeeded: no longer degraded. */
static void write_ok(driver *d) {
  record_state *r = &d->record;
  if (!r->degraded)
    return;
  uint64_t now = uv_hrtime();
  r->degraded = false;
  r->degraded_ns += now - r->degraded_since;
  if (r->degraded_logged)
    fprintf(stderr,
            "tl-driver: the state is written again, after %" PRIu64 " failed writes in %.1f s: "
            "failover no longer degraded\n",
            r->degraded_failures, (double)(now - r->degraded_since) / 1e9);
}

/* Degraded (a write or an encode failed): what waited for a record goes without it, the
 * releases' frames and a new task set's or executor's launches (a crash before the next good record
 * recovers an older one, as for any failed write). Launches whose tids pass the durable reservation
 * still wait: the timer tries again every --snapshot-ms. */
static void go_unrecorded(driver *d) {
  for (conn *c = d->link.list; c; c = c->next) {
    d->record.unrecorded += c->held;
    if (c->gate_seq > d->record.seq_durable) { /* a new executor's first launches */
      c->gate_seq = 1;
      d->record.unrecorded++;
    }
  }
  send_held(d, true);
  if (d->record.gate_seq > d->record.seq_durable) {
    d->record.gate_seq = 0;
    d->record.unrecorded++;
  }
}

/* The write ended, on the loop. Cancelled (the run stops): nothing. */
static void write_done(uv_work_t *req, int status) {
  driver *d = req->data;
  record_write *w = &d->record.w;
  d->record.writing = false;
  if (status == UV_ECANCELED || d->phase.closed)
    return;
  if (w->rc == 0) {
    write_ok(d);
    d->record.state_writes++;
    d->record.state_reserves += !w->fresh;
    d->record.state_ns += w->ns;
    d->record.tid_reserved = w->reserve;
    if (w->fresh) {
      tl__wbuf b = d->record.body; /* the body written is the newest durable one */
      d->record.body = d->record.spare;
      d->record.spare = b;
      d->record.seq_durable = w->seq;
      for (conn *c = d->link.list; c; c = c->next)
        if (c->registered && !c->closing && !c->recovering && c->status_recorded > c->synced) {
          tlc_msg m = {.type = TLC_MSG_SYNCED, .u.synced = {c->status_recorded}};
          encode(c, &m);
          send_out(c);
          c->synced = c->status_recorded;
          d->record.synced_sent++;
        }
      send_held(d, false);
    }
  } else {
    write_failed(d, w->why);
    if (w->fresh && d->record.tid_max + TID_BLOCK / 2 > d->record.tid_reserved &&
        d->record.body.len > 0) {
      /* The tids must be reserved: the last durable body again, which was written once. */
      w->fresh = false;
      w->buf = d->record.body.buf;
      w->len = d->record.body.len;
      d->record.writing = true;
      if (uv_queue_work(d->run.loop, &w->req, write_work, write_done) != 0)
        die_oom();
      return;
    }
    go_unrecorded(d);
  }
  if (!d->phase.stopping)
    resume_launches(d);
  if (d->record.want && !d->phase.stopping)
    start_write(d);
}

/* The body of a fresh record encoded into spare (on the loop), and its write queued; one put
 * off for undelivered events (inside a callback) is tried again at the next turn. */
static void start_write(driver *d) {
  record_state *r = &d->record;
  if (r->writing) {
    r->want = true;
    return;
  }
  r->want = false;
  uint64_t t0 = uv_hrtime();
  int rc = encode_state(d, &r->spare);
  if (rc != TL_OK) {
    if (rc == TL_EBUSY) {
      r->state_busy++;
      uv_timer_start(&r->state_timer, on_state_timer, 1, r->snapshot_ms);
    } else {
      fprintf(stderr, "tl-driver: tl_snapshot: %s\n", tl_err_name(rc));
      write_failed(d, "tl_snapshot failed");
      go_unrecorded(d);
      resume_launches(d);
    }
    return;
  }
  uint64_t ns = uv_hrtime() - t0;
  r->encodes++;
  r->encode_ns += ns;
  r->encode_max_ns = ns > r->encode_max_ns ? ns : r->encode_max_ns;
  for (conn *c = d->link.list; c; c = c->next)
    c->status_recorded = c->status_frames;
  faults_write_starting(d);
  /* Every tid launched so far and a block beyond: launches go on while it is written, up to
   * the durable reservation, which this one never lowers. */
  uint64_t reserve = r->tid_max + TID_BLOCK;
  r->w.reserve = reserve > r->tid_reserved ? reserve : r->tid_reserved;
  r->w.dir = r->state_dir;
  r->w.buf = r->spare.buf;
  r->w.len = r->spare.len;
  r->w.fresh = true;
  r->w.seq = ++r->seq_encoded;
  r->writing = true;
  if (uv_queue_work(d->run.loop, &r->w.req, write_work, write_done) != 0)
    die_oom();
}

/* The first record, before the loop runs (nothing to overlap yet): written at once. Returns 0,
 * or -1 (logged): the run cannot promise a recovery. */
int record_first(driver *d) {
  record_state *r = &d->record;
  uint64_t t0 = uv_hrtime();
  int rc = encode_state(d, &r->body);
  if (rc != TL_OK) {
    fprintf(stderr, "tl-driver: tl_snapshot: %s\n", tl_err_name(rc));
    return -1;
  }
  r->encodes = 1;
  r->encode_ns = r->encode_max_ns = uv_hrtime() - t0;
  uint64_t reserve = (r->tid_max > r->tid_reserved ? r->tid_max : r->tid_reserved) + TID_BLOCK;
  faults_write_starting(d);
  t0 = uv_hrtime();
  char why[STATE_WHY_MAX];
  if (state_write(r->state_dir, reserve, r->body.buf, r->body.len, why, sizeof why) != 0) {
    fprintf(stderr, "tl-driver: writing the state: %s\n", why);
    r->state_failed++;
    return -1;
  }
  r->state_ns += uv_hrtime() - t0;
  r->state_writes++;
  r->tid_reserved = reserve;
  r->seq_durable = r->seq_encoded = 1;
  return 0;
}

/* A release: c's frames, those encoded so far and those after them (its FORGETs and STOP), wait
 * for a record that holds it. Sent before, a crash could make the executor exit while the newest
 * record holds it running: the restart would wait for it, lose it to the recovery timeout, and
 * run again any task whose end no record covered yet. */
void hold_for_record(driver *d, conn *c) {
  if (!d->record.state_dir)
    return;
  c->held = true;
  c->held_until = d->record.seq_encoded + 1;
  d->record.held_releases++;
  start_write(d);
}

/* A task set was submitted (a stage boundary): its launches wait for the record that holds it,
 * so that after a crash the restored ledger holds the task set and adopts them. So do an
 * executor's first launches (record_may_launch): adoption needs it RECOVERING in the image. */
void record_gate(driver *d) {
  if (d->record.state_dir)
    d->record.gate_seq = d->record.seq_encoded + 1;
}

/* Whether an offer of this many slots to c may launch now: not while a submitted task set or
 * c's executor (registered afresh: not reconciled) is in no durable record, nor when its tids
 * could pass the durable reservation. When not, the offer waits (counted); a record is asked
 * for, and its end resumes the offers. */
bool record_may_launch(driver *d, conn *c, uint32_t slots) {
  record_state *r = &d->record;
  if (!r->state_dir)
    return true;
  if (c->gate_seq == 0) /* its first offer: the next record holds its registration */
    c->gate_seq = c->reconciled ? 1 : r->seq_encoded + 1;
  uint64_t gate = r->gate_seq > c->gate_seq ? r->gate_seq : c->gate_seq;
  bool gated = gate > r->seq_durable;
  bool tids = r->tid_max + slots > r->tid_reserved;
  if (!gated && !tids)
    return true;
  r->wait_new += gated;
  r->wait_tids += !gated && tids;
  if (r->wait_since == 0)
    r->wait_since = uv_hrtime();
  if (!r->writing) {
    if (gated || !r->degraded) /* degraded: the timer tries again, not every offer */
      start_write(d);
  } else if ((gated && r->w.seq < gate) || (tids && r->w.reserve < r->tid_max + slots)) {
    r->want = true;
  }
  return false;
}

/* Launches up to tid max_tid were encoded for c. Half the reservation used: a record reserving
 * more is asked for now, so that launches rarely wait for one. */
void record_launched(driver *d, conn *c, uint64_t max_tid) {
  record_state *r = &d->record;
  if (max_tid > r->tid_max)
    r->tid_max = max_tid;
  if (!r->state_dir)
    return;
  if (r->tid_max > r->tid_reserved) { /* record_may_launch prevents it; should it come, hold */
    hold_for_record(d, c);
    return;
  }
  if (r->tid_max + TID_BLOCK / 2 > r->tid_reserved && !r->writing && !r->degraded)
    start_write(d);
}

void on_state_timer(uv_timer_t *t) {
  driver *d = t->data;
  if (d->phase.stopping || d->phase.closed)
    return;
  start_write(d);
}

/* A stage boundary, a registration, executors started (maybe from a callback, where a snapshot
 * is refused): a record is asked for at the next turn of the loop. */
void state_due(driver *d) {
  if (d->record.state_dir && !d->phase.stopping && !d->phase.closed)
    uv_timer_start(&d->record.state_timer, on_state_timer, 0, d->record.snapshot_ms);
}

/* Seconds degraded in all, the episode under way included. */
double record_degraded_s(const driver *d) {
  uint64_t ns = d->record.degraded_ns;
  if (d->record.degraded)
    ns += uv_hrtime() - d->record.degraded_since;
  return (double)ns / 1e9;
}

/* Reads the run's part of a record into d, checking it against the command line's jobs.
 * Returns 0 with the snapshot's bytes in *snap, or 1 (the message printed). */
int read_state_body(driver *d, const state_record *rec, const uint8_t **snap, size_t *snap_len) {
  tl__rbuf rb = tl__rbuf_over(rec->body, rec->len);
  tl__rbuf *r = &rb;
  const char *bad = NULL;
  char token[sizeof d->auth.token];
  bool same = true;
  if (tl__get_u32(r) != STATE_BODY_VERSION)
    bad = "its body is of another version";
  tl__get_cstr16(r, 0, token, sizeof token, NULL);
  uint64_t port = tl__get_u32(r);
  uint64_t elapsed = tl__get_u64(r);
  if (!bad && (r->bad || port == 0 || port > 65535 || strlen(token) < TOKEN_MIN))
    bad = "its token or port is bad";
  if (!bad && tl__get_u32(r) != d->jobs.njobs)
    same = false;
  for (size_t i = 0; i < d->jobs.njobs && !bad && same && !r->bad; i++) {
    job *j = &d->jobs.list[i];
    get_job(r, j, &same);
    for (uint32_t k = 0; k < j->nstages && same && !r->bad; k++)
      get_stage(r, &j->stages[k], &same);
  }
  if (!bad && !same)
    bad = "its jobs differ from the command line's";
  uint64_t nexecs = bad ? 0 : tl__get_u32(r);
  if (nexecs > MAX_STARTED)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  for (uint32_t i = 0; i < nexecs && !r->bad && !bad; i++)
    get_exec(r, &d->scaling.execs[i], &same);
#define GET_COUNTER(g, f) d->g.f = (__typeof__(d->g.f))tl__get_u64(r);
  if (!bad)
    STATE_COUNTERS(GET_COUNTER)
#undef GET_COUNTER
  if (!bad)
    get_history(r, d);
  uint64_t n = bad ? 0 : tl__get_u64(r);
  if (!bad && !r->bad && n != tl__rbuf_left(r))
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  if (!bad && r->bad)
    bad = "its body does not parse";
  if (bad) {
    fprintf(stderr, "tl-driver: the state in %s cannot be recovered: %s\n", d->record.state_dir,
            bad);
    return 1;
  }
  d->scaling.nexecs = (uint32_t)nexecs;
  d->scaling.released = 0;
  for (uint32_t i = 0; i < d->scaling.nexecs; i++)
    d->scaling.released += d->scaling.execs[i].released;
  strcpy(d->auth.token, token);
  if (setenv("TL_CLUSTER_TOKEN", d->auth.token, 1) != 0)
    die_oom();
  d->edge.port = (int)port;
  /* Offers go on at once: the executors that registered before the crash come back by
   * themselves, and one that never registered may register now. */
  phase_offer(d);
  d->record.recovered_elapsed = elapsed;
  *snap = r->p + r->at;
  *snap_len = (size_t)n;
  return 0;
}

/* A run that ended (well or not, but not by a crash) leaves no record to recover. */
void remove_state(driver *d) {
  if (!d->record.state_dir)
    return;
  char path[4096];
  static const char *const names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", d->record.state_dir, names[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      fprintf(stderr, "tl-driver: unlink %s: %s\n", path, strerror(errno));
  }
}

void record_configure(driver *d, const driver_opts *o) {
  d->record.state_dir = o->state_dir;
  d->record.snapshot_ms = o->snapshot_ms;
}

void record_init(driver *d) {
  tl__wbuf_init(&d->record.body, realloc, free);
  tl__wbuf_init(&d->record.spare, realloc, free);
  uv_timer_init(d->run.loop, &d->record.state_timer);
  d->record.state_timer.data = d;
  d->record.w.req.data = d;
}

/* The run stops: no record is written again (the one the jobs' end left stays until the run
 * removes it), a write not yet begun is cancelled (one under way ends by itself: the loop runs
 * until it has, before anything it uses is freed), and held frames go out. */
void record_stop(driver *d) {
  uv_timer_stop(&d->record.state_timer);
  d->record.want = false;
  if (d->record.writing)
    uv_cancel((uv_req_t *)&d->record.w.req);
  send_held(d, true);
}

void record_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->record.state_timer, on_closed);
}

void record_free(driver *d) {
  tl__wbuf_free(&d->record.body);
  tl__wbuf_free(&d->record.spare);
}

/* A restored run: no tid up to floor - 1 may be given again, and none was launched above it. */
void record_restored(driver *d, uint64_t floor) {
  d->record.tid_reserved = floor - 1;
  d->record.tid_max = d->record.tid_reserved;
}
