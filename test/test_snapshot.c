/* Snapshots, restore and reconciliation (docs/snapshot.md): an image taken and restored gives
 * the same ledger (the same bytes again when nothing was running), restored executors are
 * RECOVERING and reconcile or time out, payloads that cannot be had abort their task sets,
 * times are rebased, and every bad image is refused with its own error and creates nothing;
 * out of memory at every allocation of snapshot, restore and reconcile changes nothing.
 */
#include "harness.h"
#include "oom_sweep.h"

#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

/* ---------------------------------------------------------------------------------------------
 * Images in memory.
 * ------------------------------------------------------------------------------------------- */

typedef struct image {
  uint8_t *p;
  size_t n, cap;
  size_t at;        /* read position */
  size_t chunk;     /* the most a read hands back (0: all it is asked for) */
  int fail_after;   /* writes (or reads) left before one fails; -1: never */
  size_t max_write; /* largest chunk write was given */
} image;

static int image_write(void *ud, const void *buf, size_t n) {
  image *im = ud;
  if (im->fail_after == 0)
    return -1;
  if (im->fail_after > 0)
    im->fail_after--;
  if (n > im->max_write)
    im->max_write = n;
  if (im->n + n > im->cap) {
    im->cap = (im->n + n) * 2;
    im->p = realloc(im->p, im->cap);
    ck_assert_ptr_nonnull(im->p);
  }
  memcpy(im->p + im->n, buf, n);
  im->n += n;
  return 0;
}

static int image_read(void *ud, void *buf, size_t n) {
  image *im = ud;
  if (im->fail_after == 0)
    return -1;
  if (im->fail_after > 0)
    im->fail_after--;
  size_t left = im->n - im->at;
  if (n > left)
    n = left;
  if (im->chunk != 0 && n > im->chunk)
    n = im->chunk;
  memcpy(buf, im->p + im->at, n);
  im->at += n;
  return (int)n;
}

static image take(tlt_env *e) {
  image im = {NULL, 0, 0, 0, 0, -1, 0};
  int rc = tl_snapshot(e->s, image_write, &im);
  ck_assert_msg(rc == TL_OK, "tl_snapshot: %s", tl_err_name(rc));
  ck_assert_uint_ge(im.n, 40);
  TLT_CHECK(e);
  return im;
}

/* CRC-32C (Castagnoli, reflected), bit by bit: the test's own, not the library's. */
static uint32_t crc32c(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  while (n-- != 0) {
    c ^= *p++;
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

static uint64_t get_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = v << 8 | p[i];
  return v;
}

/* Where the epoch is in a version 2 or 3 image: the header (40), the CLCK section (a tag, a length,
 * the clock: 20), the CNTR section's tag and length (12), then next tid, next task set id, next
 * speculation check, past the end (25) and 17 counters (136). */
#define CNTR_AT (40 + 20)
#define EPOCH_AT (CNTR_AT + 12 + 25 + 136)

/* The header's checksum again, after a test changed its fields. */
static void reseal_header(image *im) {
  uint32_t crc = crc32c(im->p, 36);
  for (int i = 0; i < 4; i++)
    im->p[36 + i] = (uint8_t)(crc >> (8 * i));
}

/* ---------------------------------------------------------------------------------------------
 * Restoring into a test's env: the old scheduler is freed (its releases are not the final
 * ones: the payloads come back through the resolver) and the env goes on with the new one.
 * ------------------------------------------------------------------------------------------- */

typedef struct resolver {
  tlt_env *e;
  tl_taskset_id refuse; /* this task set's payload "cannot be had"; 0: none */
  unsigned tasksets, executors;
} resolver;

static resolver the_resolver;

static bool resolve_taskset(void *ud, const tl_taskset_info *ts, void **payload) {
  tlt_env *e = ud;
  the_resolver.tasksets++;
  for (size_t i = 0; i < e->nsubs; i++) {
    if (e->subs[i].id == ts->id) {
      ck_assert_uint_eq(e->subs[i].stage_id, ts->stage_id);
      ck_assert_uint_eq(e->subs[i].ntasks, ts->ntasks);
      if (ts->id == the_resolver.refuse) {
        free(e->subs[i].payload);  /* lost with the old driver, as far as the test goes */
        e->subs[i].payload = NULL; /* what its launches and its release carry from now on */
        return false;
      }
      *payload = e->subs[i].payload;
      return true;
    }
  }
  ck_abort_msg("resolver asked for unknown task set %" PRIu64, ts->id);
  return false;
}

static void *resolve_executor(void *ud, const char *id, const char *host) {
  tlt_env *e = ud;
  (void)host;
  the_resolver.executors++;
  return tlt_ud_for(e, id);
}

static tl_callbacks restore_callbacks(tlt_env *e) {
  tl_callbacks cb = tlt_callbacks(e);
  if (e->records_removed)
    tlt_record_removed(&cb);
  cb.taskset_restored = resolve_taskset;
  cb.executor_restored = resolve_executor;
  return cb;
}

/* Frees e's scheduler and restores im into it, with cfg (NULL: e's own). */
static void restore_into(tlt_env *e, image *im, const tl_config *cfg) {
  unsigned released[256];
  ck_assert_uint_le(e->nsubs, 256);
  for (size_t i = 0; i < e->nsubs; i++)
    released[i] = e->subs[i].released;
  size_t mark = e->nev;
  ck_assert_int_eq(tl_scheduler_free(e->s), TL_OK);
  for (size_t i = 0; i < e->nsubs; i++)
    e->subs[i].released = released[i];
  e->nev = mark; /* the releases of the free are not the task sets' */
  e->s = NULL;
  tl_callbacks cb = restore_callbacks(e);
  im->at = 0;
  the_resolver.tasksets = the_resolver.executors = 0;
  int rc = tl_scheduler_restore(cfg != NULL ? cfg : &e->cfg, &cb, image_read, im, &e->s);
  ck_assert_msg(rc == TL_OK, "tl_scheduler_restore: %s", tl_err_name(rc));
  ck_assert_ptr_nonnull(e->s);
  TLT_CHECK(e);
}

/* Frees a scheduler restored beside e's, without counting its releases as the task sets'. */
static void free_aside(tlt_env *e, tl_scheduler *s) {
  unsigned released[256];
  ck_assert_uint_le(e->nsubs, 256);
  for (size_t i = 0; i < e->nsubs; i++)
    released[i] = e->subs[i].released;
  size_t mark = e->nev;
  ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
  for (size_t i = 0; i < e->nsubs; i++)
    e->subs[i].released = released[i];
  e->nev = mark;
}

static tl_config snapshot_config(void) {
  tl_config cfg = tlt_config();
  cfg.speculation = true;
  cfg.recovery_timeout_ns = 30 * TLT_SEC;
  cfg.pending_loss_timeout_ns = 20 * TLT_SEC;
  return cfg;
}

/* Executors on hosts and racks, two task sets (one a shuffle-map stage with outputs, one with
 * preferred locations), attempts launched, running, finished and failed, a decommissioning
 * executor with its message, a pending loss, a tombstone. Returns the launches. */
static size_t build_state(tlt_env *e, tl_launch *out, tl_taskset_id *ts1, tl_taskset_id *ts2) {
  tlt_add(e, "e1", "h1", "r1", 4);
  tlt_add(e, "e2", "h1", "r1", 2);
  tlt_add(e, "e3", "h2", NULL, 2);
  tlt_add(e, "e4", "h3", "r2", 2);
  tlt_add(e, "e5", "h4", NULL, 1);
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 6, .shuffle_map = true};
  *ts1 = tlt_submit_desc(e, &d);
  tl_location at_h1[] = {{"h1", NULL}}, at_e3[] = {{"h2", "e3"}};
  tl_task_desc tasks[4] = {{at_h1, 1}, {at_e3, 1}, {NULL, 0}, {at_h1, 1}};
  tl_taskset_desc d2 = {.stage_id = 1, .priority = 1, .ntasks = 4, .tasks = tasks};
  *ts2 = tlt_submit_desc(e, &d2);
  tl_offer offers[] = {{"e1", 4}, {"e2", 2}, {"e3", 2}, {"e4", 2}, {"e5", 1}};
  size_t n = tlt_offers(e, offers, 5, out, 16);
  ck_assert_uint_ge(n, 8);
  for (size_t i = 0; i < n; i++)
    tlt_run(e, out[i].executor_id, out[i].tid);
  /* An output on e1 and one on e5 (which becomes a tombstone: its index runs again), a
   * counted failure. */
  for (size_t i = 0; i < n; i++) {
    if (out[i].taskset == *ts1 && (strcmp(out[i].executor_id, "e1") == 0) && out[i].index == 0)
      tlt_succeed(e, "e1", out[i].tid);
    if (out[i].taskset == *ts1 && strcmp(out[i].executor_id, "e2") == 0)
      tlt_fail(e, "e2", out[i].tid, TL_END_EXCEPTION);
  }
  ck_assert_int_eq(tl_executor_decommission(e->s, "e3", "scale-down"), TL_OK);
  TLT_CHECK(e);
  tlt_advance_tick(e, TLT_SEC);
  tlt_lose(e, "e4", TL_LOSS_PENDING, true);
  tlt_lose(e, "e5", TL_LOSS_EXITED, true);
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * Tests
 * ------------------------------------------------------------------------------------------- */

START_TEST(an_image_of_a_ledger_with_nothing_running_restores_to_the_same_bytes) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tl_launch out[16];
  tl_taskset_id ts1, ts2;
  build_state(e, out, &ts1, &ts2);
  /* Nothing ALIVE or DECOMMISSIONING: the restore's recovery has nothing to do, so the image of
   * the restored ledger is the image it came from. */
  tlt_lose(e, "e1", TL_LOSS_PENDING, true);
  tlt_lose(e, "e2", TL_LOSS_PENDING, true);
  tlt_lose(e, "e3", TL_LOSS_PENDING, false);
  tl_stats before = tlt_stats(e);
  image a = take(e);
  ck_assert_uint_le(a.max_write, 65536);
  tl_stats after = tlt_stats(e);
  tlt_assert_stats_same(&before, &after, "tl_snapshot changed the ledger");

  restore_into(e, &a, NULL);
  ck_assert_uint_eq(the_resolver.tasksets, 2);
  ck_assert_uint_eq(the_resolver.executors, 4); /* e5 is a tombstone */
  tl_stats restored = tlt_stats(e);
  tlt_assert_stats_same_but_memory(&before, &restored, "restored ledger");
  image b = take(e);
  ck_assert_uint_eq(a.n, b.n);
  /* But for its epoch, one more (and so the checksums). */
  ck_assert_uint_eq(get_le(a.p + EPOCH_AT, 8), 1);
  ck_assert_uint_eq(get_le(b.p + EPOCH_AT, 8), 2);
  ck_assert_uint_eq(tl_epoch(e->s), 2);
  b.p[EPOCH_AT] = 1;
  ck_assert_msg(memcmp(a.p, b.p, 32) == 0 && memcmp(a.p + 40, b.p + 40, a.n - 40) == 0,
                "the restored ledger's image differs");
  free(a.p);
  free(b.p);
  tlt_end(e);
}
END_TEST

START_TEST(restored_executors_recover_reconcile_or_time_out) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", "r1", 2);
  tlt_add(e, "e2", "h2", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_launch out[8];
  tl_offer offers[] = {{"e1", 2}, {"e2", 2}};
  size_t n = tlt_offers(e, offers, 2, out, 8);
  ck_assert_uint_eq(n, 4);
  tl_tid on_e1[2], on_e2[2];
  size_t k1 = 0, k2 = 0;
  for (size_t i = 0; i < n; i++) {
    tlt_run(e, out[i].executor_id, out[i].tid);
    if (strcmp(out[i].executor_id, "e1") == 0)
      on_e1[k1++] = out[i].tid;
    else
      on_e2[k2++] = out[i].tid;
  }
  ck_assert_uint_eq(k1, 2);
  ck_assert_uint_eq(k2, 2);
  ck_assert_uint_ne(on_e2[0], on_e2[1]);
  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);

  /* Both RECOVERING: frozen, no host, nothing offered, heartbeats and updates refused. */
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_recovering, 2);
  ck_assert_uint_eq(st.executors_alive, 0);
  ck_assert_uint_eq(st.hosts, 0);
  ck_assert_uint_eq(st.attempts_running, 0);
  ck_assert_uint_eq(st.attempts_frozen, 4);
  ck_assert_uint_eq(st.executors_lost, 0);
  tl_executor_status x = tlt_ex(e, "e1");
  ck_assert_int_eq(x.state, TL_EXECUTOR_RECOVERING);
  ck_assert_uint_eq(x.frozen, 2);
  ck_assert_uint_eq(x.free_cores, 2);
  ck_assert_ptr_eq(x.ud, tlt_ud_for(e, "e1"));
  ck_assert_str_eq(x.host, "h1");
  tl_taskset_status tss = tlt_ts(e, ts);
  ck_assert_uint_eq(tss.running, 4);
  ck_assert_uint_eq(tss.frozen, 4);
  char why[512];
  ck_assert_int_eq(tl_explain_taskset(e->s, ts, why, sizeof why), TL_OK);
  ck_assert_msg(strstr(why, "RECOVERING") != NULL && strstr(why, "reconcile") != NULL, "%s", why);
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 8), 0);
  TLT_ERR(e, TL_ESTATE, tl_executor_heartbeat(e->s, "e1"));
  TLT_ERR(e, TL_ESTATE, tl_executor_decommission(e->s, "e1", NULL));
  tl_update run = {0};
  TLT_UPDATE_ERR(e, TL_ESTALE, tl_status_update(e->s, "e1", on_e1[0], &run));

  /* e1 reconciles: on_e1[0] twice and an unknown tid; on_e1[1] is not reported. */
  tl_tid report[3] = {999, on_e1[0], on_e1[0]};
  tl_tid unknown[4] = {0};
  size_t nunknown = 7;
  size_t mark = e->nev;
  TLT_ERR(e, TL_EINVAL, tl_executor_reconcile(e->s, "e1", report, 3, NULL, 1, &nunknown));
  TLT_ERR(e, TL_ENOENT, tl_executor_reconcile(e->s, "nope", report, 3, unknown, 4, &nunknown));
  tl_tid zero = 0;
  TLT_ERR(e, TL_EINVAL, tl_executor_reconcile(e->s, "e1", &zero, 1, unknown, 4, &nunknown));
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", report, 3, unknown, 4, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  ck_assert_uint_eq(unknown[0], 999);
  ck_assert_uint_eq(e->nev - mark, 3);
  ck_assert_int_eq(e->ev[mark].type, TLT_EV_ENDED);
  ck_assert_uint_eq(e->ev[mark].task.tid, on_e1[1]);
  ck_assert_int_eq(e->ev[mark].end_kind, TL_END_EXECUTOR_LOST);
  ck_assert(!e->ev[mark].counts);
  ck_assert_int_eq(e->ev[mark + 1].type, TLT_EV_KILL);
  ck_assert_uint_eq(e->ev[mark + 1].kill_tid, 999);
  ck_assert_str_eq(e->ev[mark + 1].executor, "e1");
  /* Both carry the ud executor_restored gave e1. */
  ck_assert_ptr_eq(e->ev[mark].task.executor_ud, tlt_ud_for(e, "e1"));
  ck_assert_ptr_eq(e->ev[mark + 1].executor_ud, tlt_ud_for(e, "e1"));
  ck_assert_int_eq(e->ev[mark + 2].type, TLT_EV_REVIVE);
  TLT_ERR(e, TL_ESTATE, tl_executor_reconcile(e->s, "e1", NULL, 0, NULL, 0, &nunknown));
  x = tlt_ex(e, "e1");
  ck_assert_int_eq(x.state, TL_EXECUTOR_ALIVE);
  ck_assert_uint_eq(x.running, 1);
  ck_assert_uint_eq(x.free_cores, 1);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.reconciled, 1);
  ck_assert_uint_eq(st.reconcile_lost, 1);
  ck_assert_uint_eq(st.reconcile_unknown, 1);
  ck_assert_uint_eq(st.hosts, 1);
  ck_assert_uint_eq(st.racks, 1);
  tlt_succeed(e, "e1", on_e1[0]); /* it ended while the driver was down: applies now */
  TLT_OK(e, tl_executor_heartbeat(e->s, "e1"));

  /* e2 never comes back: lost to the recovery timeout, its attempts not counted. */
  tlt_advance_tick(e, 29 * TLT_SEC);
  TLT_OK(e, tl_executor_heartbeat(e->s, "e1"));
  ck_assert_uint_eq(tlt_stats(e).executors_recovering, 1);
  mark = e->nev;
  tlt_advance_tick(e, TLT_SEC);
  ck_assert_int_eq(e->ev[mark].type, TLT_EV_LOST);
  ck_assert_str_eq(e->ev[mark].executor, "e2");
  ck_assert_int_eq(e->ev[mark].loss.kind, TL_LOSS_RECOVERY_TIMEOUT);
  ck_assert(!e->ev[mark].loss.caused_by_app);
  ck_assert_ptr_eq(e->ev[mark].executor_ud, tlt_ud_for(e, "e2"));
  size_t ended = 0;
  for (size_t i = mark; i < e->nev; i++)
    if (e->ev[i].type == TLT_EV_ENDED) {
      ck_assert_int_eq(e->ev[i].end_kind, TL_END_EXECUTOR_LOST);
      ck_assert(!e->ev[i].counts);
      ended++;
    }
  ck_assert_uint_eq(ended, 2);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.recovery_timeouts, 1);
  ck_assert_uint_eq(st.executors_lost, 1);
  ck_assert_uint_eq(st.tombstones, 1);
  TLT_ERR(e, TL_EGONE, tl_executor_reconcile(e->s, "e2", NULL, 0, NULL, 0, &nunknown));

  /* The run goes on: the three pending indices on e1 and a new executor. */
  tlt_add(e, "e3", "h3", NULL, 4);
  tl_offer again[] = {{"e1", 2}, {"e3", 4}};
  n = tlt_offers(e, again, 2, out, 8);
  ck_assert_uint_eq(n, 3);
  for (size_t i = 0; i < n; i++)
    tlt_succeed(e, out[i].executor_id, out[i].tid);
  ck_assert_int_eq(e->ev[e->nev - 1].type, TLT_EV_RELEASED); /* all four indices done */
  ck_assert_uint_eq(e->ev[e->nev - 1].ts.id, ts);
  tlt_end(e);
}
END_TEST

START_TEST(a_recovering_executor_lost_reports_its_loss_once) {
  tl_config cfg = snapshot_config();
  cfg.recovery_timeout_ns = 0; /* wait forever */
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch out[4];
  tl_offer offers[] = {{"e1", 1}, {"e2", 1}};
  ck_assert_uint_eq(tlt_offers(e, offers, 2, out, 4), 2);
  tlt_run(e, out[0].executor_id, out[0].tid);
  tlt_run(e, out[1].executor_id, out[1].tid);
  ck_assert_int_eq(tl_executor_decommission(e->s, "e2", "going"), TL_OK);
  TLT_CHECK(e);
  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  ck_assert_uint_eq(tlt_advance_tick(e, 1000 * TLT_SEC), TL_TICK_NEVER); /* no deadline */
  ck_assert_uint_eq(tlt_stats(e).executors_recovering, 2);

  /* e1: a two-phase loss: executor_lost once, then the second phase counts (caused by the app,
   * RUNNING). e2 was decommissioning: its attempt does not count. */
  size_t mark = e->nev;
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(e->nev - mark, 1);
  ck_assert_int_eq(e->ev[mark].type, TLT_EV_LOST);
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_PENDING_LOSS);
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  tlt_lose(e, "e2", TL_LOSS_EXITED, true);
  size_t counted = 0, lost = 0;
  for (size_t i = mark; i < e->nev; i++) {
    lost += e->ev[i].type == TLT_EV_LOST;
    if (e->ev[i].type == TLT_EV_ENDED)
      counted += e->ev[i].counts;
  }
  ck_assert_uint_eq(lost, 2);
  ck_assert_uint_eq(counted, 1);
  ck_assert_uint_eq(tlt_stats(e).executors_lost, 2);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 2);
  tlt_end(e);
}
END_TEST

/* executor_removed across a restore: the restored scheduler reports each loss it completes with
 * the ud the resolver gave, a PENDING_LOSS executor's second phase (its executor_lost came from
 * the scheduler before) and a RECOVERING one's recovery timeout (both phases at once, not
 * caused by the app); a reconciliation is no loss, and the tombstone restored is not reported
 * again. */
START_TEST(restored_executors_report_their_removal_with_the_resolved_ud) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new_edit(&cfg, tlt_record_removed);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_add(e, "e3", "h3", NULL, 1);
  tlt_add(e, "e4", "h4", NULL, 1);
  tlt_submit(e, 0, 0, 0, 3);
  tl_offer offers[] = {{"e1", 1}, {"e2", 1}, {"e3", 1}};
  tl_launch out[3];
  ck_assert_uint_eq(tlt_offers(e, offers, 3, out, 3), 3);
  for (size_t i = 0; i < 3; i++)
    tlt_run(e, out[i].executor_id, out[i].tid);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  tlt_lose(e, "e4", TL_LOSS_KILLED, false); /* a tombstone in the image */
  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  ck_assert_uint_eq(the_resolver.executors, 3);

  /* e1 reconciles with its attempt: no loss. */
  size_t mark = tlt_mark(e), nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  ck_assert_str_eq(tlt_seq_all(e, mark), "");

  /* e2's second phase, with the real reason. */
  tl_loss_reason exited = {.kind = TL_LOSS_EXITED, .caused_by_app = true, .exit_code = 2};
  TLT_OK(e, tl_executor_lost(e->s, "e2", &exited));
  char want[256];
  snprintf(want, sizeof want,
           "ended tid=%ju kind=EXECUTOR_LOST counts=1\nremoved e2 kind=EXITED app=1 exit=2\n"
           "revive",
           (uintmax_t)out[1].tid);
  ck_assert_str_eq(tlt_seq_all(e, mark), want);
  ck_assert_ptr_eq(tlt_last(e, TLT_EV_REMOVED)->executor_ud, tlt_ud_for(e, "e2"));

  /* e3 never reconciles: both phases at the recovery timeout, nothing counted. */
  mark = tlt_mark(e);
  tlt_advance_tick(e, cfg.recovery_timeout_ns);
  snprintf(want, sizeof want,
           "lost e3 kind=RECOVERY_TIMEOUT\nended tid=%ju kind=EXECUTOR_LOST counts=0\n"
           "removed e3 kind=RECOVERY_TIMEOUT app=0 exit=0\nrevive",
           (uintmax_t)out[2].tid);
  ck_assert_str_eq(tlt_seq_all(e, mark), want);
  const tlt_event *r = tlt_last(e, TLT_EV_REMOVED);
  ck_assert_ptr_eq(r->executor_ud, tlt_ud_for(e, "e3"));
  ck_assert_str_eq(r->text, "The executor did not reconcile within the recovery timeout.");
  ck_assert_uint_eq(tlt_stats(e).recovery_timeouts, 1);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 3);
  tlt_end(e);
}
END_TEST

/* During the recovery another executor registers on the host with another rack: the host's
 * rack is the newcomer's, and the reconciling executor joins it. */
START_TEST(a_reconciling_executor_joins_its_host_as_it_is_now) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", "r1", 1);
  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  tlt_add(e, "e2", "h1", "r2", 1);
  size_t n;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", NULL, 0, NULL, 0, &n));
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.hosts, 1);
  ck_assert_uint_eq(st.racks, 1);
  ck_assert_uint_eq(st.executors_alive, 2);
  tlt_end(e);
}
END_TEST

START_TEST(a_task_set_whose_payload_cannot_be_had_is_aborted) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts1 = tlt_submit(e, 0, 0, 0, 2);
  tl_taskset_id ts2 = tlt_submit(e, 1, 0, 1, 1);
  tl_launch out[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 2), 1);
  ck_assert_uint_eq(out[0].taskset, ts1);
  image im = take(e);
  the_resolver.refuse = ts1;
  size_t mark = e->nev;
  restore_into(e, &im, NULL);
  the_resolver.refuse = 0;
  free(im.p);
  /* Aborted; released once its frozen attempt ends. ts2 untouched. */
  ck_assert_uint_eq(e->nev - mark, 1);
  ck_assert_int_eq(e->ev[mark].type, TLT_EV_FAILED);
  ck_assert_str_eq(e->ev[mark].text, "Payload not restored");
  tl_taskset_status st = tlt_ts(e, ts1);
  ck_assert(st.zombie && st.failed);
  ck_assert(!tlt_ts(e, ts2).zombie);
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  ck_assert_uint_eq(nunknown, 0);
  tlt_succeed(e, "e1", out[0].tid);
  ck_assert_int_eq(e->ev[e->nev - 1].type, TLT_EV_RELEASED);
  ck_assert_ptr_null(e->ev[e->nev - 1].payload);
  tlt_end(e);
}
END_TEST

/* The tids a driver launched after its last snapshot are not given again: restore_tid_floor
 * moves the next tid up, never down, and tl_scheduler_new ignores it. */
START_TEST(the_tid_floor_keeps_tids_launched_after_the_snapshot_unique) {
  tl_config cfg = snapshot_config();
  cfg.restore_tid_floor = 5; /* below what the image will hold: no effect on new or restore */
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 8);
  tl_launch out[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 8), 2);
  ck_assert_uint_eq(out[0].tid, 1); /* tl_scheduler_new ignored the floor */
  tl_tid kept = out[0].tid, lost = out[1].tid;
  tlt_run(e, "e1", kept);
  for (int i = 0; i < 5; i++) { /* tids 3..7 launched and ended: next tid 8 at the snapshot */
    tlt_succeed(e, "e1", lost);
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 8), 1);
    lost = out[0].tid;
  }
  ck_assert_uint_eq(lost, 7);
  image im = take(e);
  cfg = e->cfg; /* the harness's clock */
  ck_assert_uint_eq(cfg.restore_tid_floor, 5);
  restore_into(e, &im, &cfg); /* a floor of 5, below 8: unchanged */
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &kept, 1, NULL, 0, &nunknown));
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 8), 1);
  ck_assert_uint_eq(out[0].tid, 8);
  /* Again from the same image, as a driver that may have launched up to tid 99 after it. */
  cfg.restore_tid_floor = 100;
  im.at = 0;
  restore_into(e, &im, &cfg);
  free(im.p);
  tl_tid report[] = {kept, 50}; /* 50: launched after the snapshot, unknown here */
  tl_tid unknown[2];
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", report, 2, unknown, 2, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  ck_assert_uint_eq(unknown[0], 50);
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 8), 1);
  ck_assert_uint_eq(out[0].tid, 100);
  ck_assert_uint_eq(out[0].taskset, ts);
  tlt_succeed(e, "e1", out[0].tid);
  tlt_succeed(e, "e1", kept);
  for (;;) { /* the rest of the task set */
    size_t n = tlt_offer(e, "e1", 2, out, 8);
    if (n == 0)
      break;
    for (size_t i = 0; i < n; i++) {
      ck_assert_uint_gt(out[i].tid, 100);
      tlt_succeed(e, "e1", out[i].tid);
    }
  }
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Adoption (tl_executor_reconcile_items): attempts launched after the image.
 * ------------------------------------------------------------------------------------------- */

static tl_reconcile_item item_of(const tl_launch *l) {
  tl_reconcile_item it = {l->tid, l->taskset, l->index, l->attempt, l->speculative, false};
  return it;
}

/* The launch with this tid among out[0 .. n). */
static const tl_launch *launch_of(const tl_launch *out, size_t n, tl_tid tid) {
  for (size_t i = 0; i < n; i++)
    if (out[i].tid == tid)
      return &out[i];
  ck_abort_msg("no launch with tid %" PRIu64, tid);
  return NULL;
}

/* task_started events from mark on naming tid. */
static size_t started_of(tlt_env *e, size_t mark, tl_tid tid) {
  size_t n = 0;
  for (size_t i = mark; i < e->nev; i++)
    n += e->ev[i].type == TLT_EV_STARTED && e->ev[i].task.tid == tid;
  return n;
}

static size_t kills_of(tlt_env *e, size_t mark, tl_tid tid) {
  size_t n = 0;
  for (size_t i = mark; i < e->nev; i++)
    n += e->ev[i].type == TLT_EV_KILL && e->ev[i].kill_tid == tid;
  return n;
}

/* A driver took an image, launched more and died; the restored ledger adopts what the
 * executors report when the rule allows, and kills the rest. */
START_TEST(launches_made_after_the_image_are_adopted_when_they_reconcile) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_add(e, "e3", "h3", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 8);
  tl_launch out[16];
  size_t n = tlt_offer(e, "e1", 2, out, 16); /* tids 1 and 2, in the image */
  ck_assert_uint_eq(n, 2);
  tlt_run(e, "e1", 1);
  tlt_run(e, "e1", 2);
  image im = take(e); /* next tid 3; six indices pending */
  /* After the image: tids 3, 4 on e1, 5 on e2, 6 and 7 on e3; one index left pending. */
  n += tlt_offer(e, "e1", 2, out + n, 16 - n);
  n += tlt_offer(e, "e2", 1, out + n, 16 - n);
  n += tlt_offer(e, "e3", 2, out + n, 16 - n);
  ck_assert_uint_eq(n, 7);
  uint64_t launched = tlt_stats(e).launched;
  cfg = e->cfg;
  cfg.restore_tid_floor = 100; /* as a driver that may have launched up to 99 */
  restore_into(e, &im, &cfg);
  free(im.p);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.launched, 2);
  ck_assert_uint_eq(st.tasks_pending, 6);
  ck_assert_uint_eq(st.reconcile_adopted, 0);

  /* e1: tid 1 as the image holds it; tid 2 with another attempt number (not the ledger's: lost,
   * and the tid killed); tids 3 and 4 adopted, 4 ended (its end applies after), 3 twice. A
   * tids-only reconcile could not have adopted them. */
  tl_reconcile_item items[8];
  items[0] = item_of(launch_of(out, n, 1));
  items[1] = item_of(launch_of(out, n, 2));
  items[1].attempt = 5;
  items[2] = item_of(launch_of(out, n, 4));
  items[2].ended = true;
  items[3] = item_of(launch_of(out, n, 3));
  items[4] = items[3];
  tl_tid unknown[8];
  size_t nunknown = 9, mark = e->nev;
  TLT_ERR(e, TL_EINVAL, tl_executor_reconcile_items(e->s, "e1", NULL, 1, unknown, 8, &nunknown));
  tl_reconcile_item zero = items[0];
  zero.tid = 0;
  TLT_ERR(e, TL_EINVAL, tl_executor_reconcile_items(e->s, "e1", &zero, 1, unknown, 8, &nunknown));
  TLT_ERR(e, TL_ENOENT, tl_executor_reconcile_items(e->s, "nope", items, 5, unknown, 8, &nunknown));
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e1", items, 5, unknown, 8, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  ck_assert_uint_eq(unknown[0], 2);
  ck_assert_uint_eq(kills_of(e, mark, 2), 1);
  ck_assert_uint_eq(started_of(e, mark, 3), 1);
  ck_assert_uint_eq(started_of(e, mark, 4), 1);
  ck_assert_int_eq(e->ev[mark].type, TLT_EV_ENDED); /* the ends first: tid 2's attempt lost */
  ck_assert_uint_eq(e->ev[mark].task.tid, 2);
  ck_assert(!e->ev[mark].counts);
  for (size_t i = mark; i < e->nev; i++) {
    if (e->ev[i].type != TLT_EV_STARTED)
      continue;
    const tl_launch *l = launch_of(out, n, e->ev[i].task.tid);
    ck_assert_uint_eq(e->ev[i].task.taskset, ts);
    ck_assert_uint_eq(e->ev[i].task.index, l->index);
    ck_assert_uint_eq(e->ev[i].task.attempt, l->attempt);
    ck_assert_str_eq(e->ev[i].executor, "e1");
  }
  st = tlt_stats(e);
  ck_assert_uint_eq(st.reconcile_adopted, 2);
  ck_assert_uint_eq(st.reconcile_unknown, 1);
  ck_assert_uint_eq(st.reconcile_lost, 1);
  ck_assert_uint_eq(st.launched, 4);
  ck_assert_uint_eq(st.attempts_running, 3);
  tl_executor_status x = tlt_ex(e, "e1");
  ck_assert_uint_eq(x.running, 3);
  ck_assert_uint_eq(x.free_cores, 2); /* tid 4's end is held: it takes no core */
  /* The adopted run on: RUNNING applies, the held end applies and counts once. */
  tlt_run(e, "e1", 3);
  uint64_t succeeded = st.succeeded;
  tlt_succeed(e, "e1", 4);
  ck_assert_uint_eq(tlt_stats(e).succeeded, succeeded + 1);
  TLT_UPDATE_ERR(e, TL_ESTALE, tl_status_update(e->s, "e1", 4, &(tl_update){0}));
  ck_assert_uint_eq(tlt_stats(e).succeeded, succeeded + 1);

  /* e2 (one core): tid 5 fits and is adopted, tid 90 (an index still pending, but no core left)
   * is killed, and so are: tid 1 (below the image's next tid: in the image, on e1), tid 91
   * naming the index tid 4 finished (done), tid 92 naming a task set the image does not hold. */
  const tl_launch *l5 = launch_of(out, n, 5);
  uint32_t free_index = 0;
  bool used[8] = {false};
  for (size_t i = 0; i < n; i++)
    used[out[i].index] = true;
  while (used[free_index])
    free_index++;
  tl_reconcile_item on_e2[5] = {item_of(l5),
                                {90, ts, free_index, 0, false, false},
                                item_of(launch_of(out, n, 1)),
                                {91, ts, launch_of(out, n, 4)->index, 1, false, false},
                                {92, ts + 1, 0, 0, false, false}};
  mark = e->nev;
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e2", on_e2, 5, unknown, 8, &nunknown));
  ck_assert_uint_eq(nunknown, 4);
  ck_assert_uint_eq(unknown[0], 1);
  ck_assert_uint_eq(unknown[1], 90);
  ck_assert_uint_eq(unknown[2], 91);
  ck_assert_uint_eq(unknown[3], 92);
  ck_assert_uint_eq(started_of(e, mark, 5), 1);
  ck_assert_uint_eq(tlt_stats(e).reconcile_adopted, 3);
  ck_assert_uint_eq(tlt_ex(e, "e2").free_cores, 0);

  /* e3: tid 6 as reported, tid 7 with an attempt number below what the index launched
   * (impossible after the image: killed), tid 95 naming tid 6's index again (a second
   * non-speculative copy on its own host is allowed only as a retry: attempt 1 is one). */
  const tl_launch *l6 = launch_of(out, n, 6), *l7 = launch_of(out, n, 7);
  tl_reconcile_item on_e3[3] = {item_of(l6), item_of(l7), {95, ts, l6->index, 1, false, false}};
  on_e3[1].attempt = 0;
  on_e3[1].index = launch_of(out, n, 1)->index; /* its attempt 0 ran before the image */
  mark = e->nev;
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e3", on_e3, 3, unknown, 8, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  ck_assert_uint_eq(unknown[0], 7);
  ck_assert_uint_eq(started_of(e, mark, 6), 1);
  ck_assert_uint_eq(started_of(e, mark, 95), 1);
  for (size_t i = mark; i < e->nev; i++)
    if (e->ev[i].type == TLT_EV_STARTED && e->ev[i].task.tid == 95)
      ck_assert_uint_eq(e->ev[i].task.attempt, 1);
  ck_assert_int_eq(e->ev[e->nev - 1].type, TLT_EV_REVIVE); /* the recovery is over */
  st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_recovering, 0);
  ck_assert_uint_eq(st.reconcile_adopted, 5);
  ck_assert_uint_eq(st.launched, 2 + 5); /* the image's two and the five adopted */
  ck_assert_uint_eq(launched, 7);

  /* Tids given from now on stay above every adopted one, and above the floor. */
  tlt_add(e, "e4", "h4", NULL, 8);
  size_t m = tlt_offer(e, "e4", 8, out, 16);
  ck_assert_uint_ge(m, 1);
  for (size_t i = 0; i < m; i++) {
    ck_assert_uint_ge(out[i].tid, 100);
    tlt_succeed(e, "e4", out[i].tid);
  }
  tlt_end(e);
}
END_TEST

/* Without a floor the next tid is the image's: a tid at or above it is one the new ledger never
 * gave, and the next tid moves above the adopted one. A task set submitted after the restore
 * (which may take the id of one the dead driver submitted after the image) adopts nothing. */
START_TEST(an_adopted_tid_moves_the_next_tid_above_it) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  image im = take(e); /* next tid 1, nothing running */
  tl_launch out[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 8), 2);
  restore_into(e, &im, NULL);
  free(im.p);
  /* The id the dead driver's next submission had, now another task set's: nothing the dead
   * driver ran under that id goes into it. */
  tl_taskset_id later = tlt_submit(e, 1, 0, 0, 1);
  ck_assert_uint_eq(later, ts + 1);
  tl_reconcile_item items[3] = {item_of(&out[1]), {3, later, 0, 0, false, false}, item_of(&out[0])};
  items[0].tid = 7; /* the dead driver's tids need not be consecutive */
  tl_tid unknown[4];
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e1", items, 3, unknown, 4, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  ck_assert_uint_eq(unknown[0], 3);
  ck_assert_uint_eq(tlt_stats(e).reconcile_adopted, 2);
  ck_assert_uint_eq(tlt_ts(e, ts).running, 2);
  tl_launch more[8];
  size_t m = tlt_offer(e, "e1", 2, more, 8);
  ck_assert_uint_eq(m, 2);
  for (size_t i = 0; i < m; i++)
    ck_assert_uint_ge(more[i].tid, 8);
  tlt_succeed(e, "e1", 7);
  tlt_succeed(e, "e1", out[0].tid);
  for (size_t i = 0; i < m; i++)
    tlt_succeed(e, "e1", more[i].tid);
  tlt_end(e);
}
END_TEST

/* Speculation: a copy launched after the image beside a copy the image holds is adopted as its
 * sibling (the first success kills the other); a speculative copy on a host the index already
 * ran on is not. */
START_TEST(a_speculative_copy_launched_after_the_image_is_adopted_as_the_sibling) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_add(e, "e3", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch out[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 2), 1);
  tlt_run(e, "e1", out[0].tid);
  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  tl_reconcile_item same_host = {out[0].tid + 1, ts, 0, 1, true, false};
  tl_tid unknown[2];
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e3", &same_host, 1, unknown, 2, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  tl_reconcile_item copy = {out[0].tid + 2, ts, 0, 1, true, false};
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e2", &copy, 1, unknown, 2, &nunknown));
  ck_assert_uint_eq(nunknown, 0);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.running, 2);
  size_t mark = e->nev;
  tlt_succeed(e, "e2", copy.tid);
  ck_assert_uint_eq(kills_of(e, mark, out[0].tid), 1); /* the other copy: killed */
  tlt_killed(e, "e1", out[0].tid);
  tlt_end(e);
}
END_TEST

/* The recovery hold: while an executor recovers, the restored task sets launch nothing (it may
 * run their pending indices, launched after the image); task sets submitted since launch as
 * usual. The hold ends when the last recovering executor reconciles, times out or is lost,
 * with a revive_offers. */
START_TEST(restored_task_sets_wait_while_executors_recover) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 4);
  tl_launch out[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 8), 1);
  tl_tid kept = out[0].tid;
  image im = take(e);
  for (int way = 0; way < 3; way++) {
    restore_into(e, &im, NULL);
    char id[8];
    snprintf(id, sizeof id, "n%d", way);
    tlt_add(e, id, "h9", NULL, 4);
    size_t n;
    if (way == 2) { /* (once, in the last: the harness knows a task set by its id) */
      tl_taskset_id fresh = tlt_submit(e, 1, 0, 0, 1);
      n = tlt_offer(e, id, 4, out, 8);
      ck_assert_uint_eq(n, 1); /* only the task set submitted since */
      ck_assert_uint_eq(out[0].taskset, fresh);
      tlt_succeed(e, id, out[0].tid);
    }
    ck_assert_uint_eq(tlt_offer(e, id, 3, out, 8), 0);
    ck_assert_uint_eq(tlt_ts(e, ts).pending, 3);
    size_t mark = e->nev, nunknown;
    if (way == 0) {
      TLT_OK(e, tl_executor_reconcile(e->s, "e1", &kept, 1, NULL, 0, &nunknown));
    } else if (way == 1) {
      tlt_advance_tick(e, 29 * TLT_SEC);
      ck_assert_uint_eq(tlt_offer(e, id, 3, out, 8), 0);
      mark = e->nev;
      tlt_advance_tick(e, TLT_SEC); /* e1 lost to the recovery timeout */
    } else {
      tlt_lose(e, "e1", TL_LOSS_PENDING, false); /* no longer recovering */
    }
    ck_assert_int_eq(e->ev[e->nev - 1].type, TLT_EV_REVIVE);
    ck_assert_uint_gt(e->nev, mark);
    n = tlt_offer(e, id, 3, out, 8);
    ck_assert_uint_eq(n, 3);
    for (size_t i = 0; i < n; i++)
      ck_assert_uint_eq(out[i].taskset, ts);
  }
  free(im.p);
  tlt_end(e);
}
END_TEST

START_TEST(saved_times_are_rebased_to_the_restore) {
  tl_config cfg = snapshot_config();
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_lose(e, "e2", TL_LOSS_PENDING, false); /* due 20 s from now */
  tlt_advance_tick(e, 5 * TLT_SEC);
  image im = take(e);
  e->now += 1000 * TLT_SEC; /* the outage */
  restore_into(e, &im, NULL);
  free(im.p);
  /* 15 s left of e2's pending loss, 30 s of e1's recovery, as at the snapshot. */
  ck_assert_uint_eq(tl_tick(e->s), 15 * TLT_SEC);
  tlt_advance_tick(e, 15 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).pending_loss_timeouts, 1);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
  ck_assert_uint_eq(tl_tick(e->s), 15 * TLT_SEC);
  tlt_end(e);
}
END_TEST

/* A config with shorter timeouts: the restored deadlines come no later than the new timeout from
 * the restore, so the deadlines made afterwards still come after them (their lists stay in
 * order); a config without the timeout drops them. */
START_TEST(a_shorter_timeout_brings_restored_deadlines_closer) {
  tl_config cfg = snapshot_config();
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h2", NULL, 1);
  tlt_add(e, "e3", "h3", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false); /* due in 20 s */
  image im = take(e);
  tl_config shorter = e->cfg;
  shorter.pending_loss_timeout_ns = 5 * TLT_SEC;
  shorter.recovery_timeout_ns = 2 * TLT_SEC;
  e->cfg = shorter;
  restore_into(e, &im, &shorter);
  ck_assert_uint_eq(tl_tick(e->s), 2 * TLT_SEC); /* e2 and e3 recovering, 2 s */
  size_t n;
  TLT_OK(e, tl_executor_reconcile(e->s, "e2", NULL, 0, NULL, 0, &n));
  tlt_lose(e, "e2", TL_LOSS_PENDING, false); /* due in 5 s, after e1's (clamped to 5 s) */
  tlt_advance_tick(e, 2 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).recovery_timeouts, 1);
  tlt_advance_tick(e, 3 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).pending_loss_timeouts, 2);
  free(im.p);

  /* Without the timeouts: no deadline at all. */
  tlt_add(e, "e4", "h4", NULL, 1);
  tlt_lose(e, "e4", TL_LOSS_PENDING, false);
  tlt_add(e, "e5", "h5", NULL, 1);
  im = take(e);
  tl_config none = e->cfg;
  none.pending_loss_timeout_ns = 0;
  none.recovery_timeout_ns = 0;
  none.tombstone_ttl_ns = 0;
  e->cfg = none;
  restore_into(e, &im, &none);
  ck_assert_uint_eq(tl_tick(e->s), TL_TICK_NEVER);
  free(im.p);
  tlt_end(e);
}
END_TEST

START_TEST(bad_images_are_refused_with_their_own_error) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tl_launch out[16];
  tl_taskset_id ts1, ts2;
  build_state(e, out, &ts1, &ts2);
  image im = take(e);
  tl_callbacks cb = restore_callbacks(e);
  tl_scheduler *s = (tl_scheduler *)&im; /* must come back NULL */
  the_resolver.tasksets = the_resolver.executors = 0;
  size_t mark = e->nev;

  /* Every truncation. */
  size_t full = im.n;
  for (size_t len = 0; len < full; len += len < 64 ? 1 : 37) {
    im.n = len;
    im.at = 0;
    s = (tl_scheduler *)&im;
    ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s), TL_ESNAPSHOT);
    ck_assert_ptr_null(s);
  }
  im.n = full;
  /* A flipped byte anywhere: the checksums catch it. */
  for (size_t i = 0; i < full; i += 1 + i / 8) {
    im.p[i] ^= 0x20;
    im.at = 0;
    int rc = tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s);
    ck_assert_msg(rc == TL_ESNAPSHOT, "byte %zu flipped: %s", i, tl_err_name(rc));
    ck_assert_ptr_null(s);
    im.p[i] ^= 0x20;
  }
  /* Another version, resealed: EVERSION; another config: ECONFIG; the reader's error: EIO. */
  /* Versions 1 to 3 (read: see a_version_1_image_is_read_with_epoch_0) and 4 are known; a
   * version 4 body read as an older version's is corrupt. */
  for (uint8_t v = 0; v < 8; v++) {
    im.p[8] = v;
    reseal_header(&im);
    im.at = 0;
    ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s),
                     v >= 1 && v <= 3 ? TL_ESNAPSHOT
                     : v == 4         ? TL_OK
                                      : TL_EVERSION);
    if (s != NULL) {
      free_aside(e, s);
      s = NULL;
    }
  }
  im.p[8] = 4;
  reseal_header(&im);
  the_resolver.tasksets = the_resolver.executors = 0;
  tl_config other = e->cfg;
  other.mode = TL_FAIR;
  im.at = 0;
  ck_assert_int_eq(tl_scheduler_restore(&other, &cb, image_read, &im, &s), TL_ECONFIG);
  other = e->cfg;
  other.speculation = false;
  im.at = 0;
  ck_assert_int_eq(tl_scheduler_restore(&other, &cb, image_read, &im, &s), TL_ECONFIG);
  im.at = 0;
  im.fail_after = 1; /* the header reads, the body's first read fails */
  ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s), TL_EIO);
  im.fail_after = -1;
  ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, NULL, &im, &s), TL_EINVAL);
  ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &im, NULL), TL_EINVAL);
  /* A body whose checksum was made again over a change no scheduler could hold: the
   * validation refuses it. The executors' count, 4 bytes after the EXEC section's header. */
  size_t at = 40;
  while (at + 12 <= full && memcmp(im.p + at, "EXEC", 4) != 0) {
    uint64_t len = 0;
    for (int i = 0; i < 8; i++)
      len |= (uint64_t)im.p[at + 4 + i] << (8 * i);
    at += 12 + len;
  }
  ck_assert_uint_lt(at + 16, full);
  im.p[at + 12] += 1;
  uint32_t crc = crc32c(im.p + 40, full - 40);
  for (int i = 0; i < 4; i++)
    im.p[32 + i] = (uint8_t)(crc >> (8 * i));
  reseal_header(&im);
  im.at = 0;
  ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s), TL_ESNAPSHOT);
  ck_assert_ptr_null(s);
  /* And a reader that hands back one byte at a time reads a good image fine (below). */
  ck_assert_uint_eq(the_resolver.tasksets + the_resolver.executors, 0); /* nothing resolved */
  ck_assert_uint_eq(e->nev, mark);                                      /* no callback */
  free(im.p);

  /* The writer's error: EIO; arguments: EINVAL. */
  image w = {NULL, 0, 0, 0, 0, 0, 0};
  ck_assert_int_eq(tl_snapshot(e->s, image_write, &w), TL_EIO);
  ck_assert_int_eq(tl_snapshot(e->s, NULL, &w), TL_EINVAL);
  ck_assert_int_eq(tl_snapshot(NULL, image_write, &w), TL_EINVAL);
  free(w.p);

  im = take(e);
  im.chunk = 1;
  restore_into(e, &im, NULL);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* A snapshot from inside a callback: refused, the batch being delivered is not in the ledger's
 * past yet. */
static int busy_rc;
static void snapshot_in_callback(tlt_env *e, const tlt_event *ev) {
  if (ev->type == TLT_EV_ADDED) {
    image im = {NULL, 0, 0, 0, 0, -1, 0};
    busy_rc = tl_snapshot(e->s, image_write, &im);
    free(im.p);
  }
}

START_TEST(a_snapshot_waits_for_undelivered_events) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  e->hook = snapshot_in_callback;
  busy_rc = 0;
  tlt_add(e, "e1", "h1", NULL, 1);
  ck_assert_int_eq(busy_rc, TL_EBUSY);
  e->hook = NULL;
  tlt_end(e);
}
END_TEST

/* Out of memory at each allocation: snapshot and reconcile change nothing, restore creates
 * nothing; each eventually succeeds. */
START_TEST(out_of_memory_anywhere_changes_nothing) {
  tlt_alloc_install(); /* the counting allocator, which oom_arm makes fail */
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tl_launch out[16];
  tl_taskset_id ts1, ts2;
  size_t nout = build_state(e, out, &ts1, &ts2);
  tl_stats before = tlt_stats(e);
  for (oom_mode mode = OOM_TRANSIENT; mode <= OOM_PERSISTENT; mode++) {
    for (uint64_t k = 1;; k++) {
      image im = {NULL, 0, 0, 0, 0, -1, 0};
      oom_arm(mode, k);
      int rc = tl_snapshot(e->s, image_write, &im);
      oom_disarm();
      free(im.p);
      tl_stats now = tlt_stats(e);
      tlt_assert_stats_same(&before, &now, "snapshot under OOM");
      if (rc == TL_OK) {
        ck_assert_uint_gt(k, 1); /* the sweep failed something */
        break;
      }
      ck_assert_int_eq(rc, TL_ENOMEM);
    }
  }
  image im = take(e);
  tl_callbacks cb = restore_callbacks(e);
  for (oom_mode mode = OOM_TRANSIENT; mode <= OOM_PERSISTENT; mode++) {
    for (uint64_t k = 1;; k++) {
      tl_scheduler *s = NULL;
      im.at = 0;
      the_resolver.tasksets = 0;
      oom_arm(mode, k);
      int rc = tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s);
      oom_disarm();
      if (rc == TL_OK) {
        ck_assert_int_eq(tl_check(s, NULL, 0), TL_OK);
        /* Free it without counting its releases as the task sets'. */
        unsigned released[256];
        for (size_t i = 0; i < e->nsubs; i++)
          released[i] = e->subs[i].released;
        size_t mark = e->nev;
        ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
        for (size_t i = 0; i < e->nsubs; i++)
          e->subs[i].released = released[i];
        e->nev = mark;
        ck_assert_uint_gt(k, 1);
        break;
      }
      ck_assert_int_eq(rc, TL_ENOMEM);
      ck_assert_ptr_null(s);
      ck_assert_uint_eq(the_resolver.tasksets, 0);
    }
  }
  /* Reconcile, from a fresh restore for each mode. */
  for (oom_mode mode = OOM_TRANSIENT; mode <= OOM_PERSISTENT; mode++) {
    restore_into(e, &im, NULL);
    tl_tid tids[8];
    size_t nt = 0;
    for (size_t i = 0; i < nout && nt < 6; i++)
      if (strcmp(out[i].executor_id, "e1") == 0 && i % 2 == 0)
        tids[nt++] = out[i].tid;
    tids[nt++] = 12345;
    ck_assert_uint_gt(tlt_ex(e, "e1").frozen, 0);
    before = tlt_stats(e);
    for (uint64_t k = 1;; k++) {
      size_t nunknown, mark = e->nev;
      tl_tid unknown[4];
      oom_arm(mode, k);
      int rc = tl_executor_reconcile(e->s, "e1", tids, nt, unknown, 4, &nunknown);
      oom_disarm();
      if (rc == TL_OK) {
        ck_assert_uint_gt(k, 1);
        break;
      }
      ck_assert_int_eq(rc, TL_ENOMEM);
      ck_assert_uint_eq(e->nev, mark);
      tl_stats now = tlt_stats(e);
      tlt_assert_stats_same_but_memory(&before, &now, "reconcile under OOM");
      TLT_CHECK(e);
    }
    ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_ALIVE);
  }
  free(im.p);
  tlt_end(e);
  tlt_alloc_restore();
}
END_TEST

/* A reconciliation that keeps nothing and whose one candidate does not fit the executor's cores
 * leaves no room reserved in the tid index (tl_check would find an empty table). */
START_TEST(a_reconcile_that_adopts_nothing_reserves_nothing) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit_cpus(e, 0, 0, 0, 1, 4); /* 4 cores a task: never fits */
  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  tl_reconcile_item it = {1, ts, 0, 0, false, false};
  tl_tid unknown[1];
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e1", &it, 1, unknown, 1, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  ck_assert_uint_eq(tlt_stats(e).reconcile_adopted, 0);
  tlt_end(e);
}
END_TEST

/* Out of memory at each allocation of a reconciliation that keeps, loses, adopts (with
 * speculation's host records) and kills: nothing changes, no event; then it succeeds. */
START_TEST(out_of_memory_in_an_adopting_reconcile_changes_nothing) {
  tlt_alloc_install();
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", "r1", 4);
  tlt_add(e, "e2", "h2", "r1", 1);
  tlt_submit(e, 0, 0, 0, 6);
  tl_launch out[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 8), 2); /* tids 1, 2 */
  image im = take(e);
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out + 2, 6), 2); /* tids 3, 4: after the image */
  for (oom_mode mode = OOM_TRANSIENT; mode <= OOM_PERSISTENT; mode++) {
    restore_into(e, &im, NULL);
    /* tid 1 kept, tid 2 not reported (lost), 3 and 4 adopted, 99 killed. */
    tl_reconcile_item items[4] = {item_of(&out[0]),
                                  item_of(&out[2]),
                                  item_of(&out[3]),
                                  {99, out[0].taskset, 5, 0, false, false}};
    items[3].index = out[0].index; /* running: not adoptable */
    tl_stats before = tlt_stats(e);
    size_t nunknown = 0;
    uint64_t k = 1;
    for (;; k++) {
      size_t mark = e->nev;
      tl_tid unknown[4];
      oom_arm(mode, k);
      int rc = tl_executor_reconcile_items(e->s, "e1", items, 4, unknown, 4, &nunknown);
      oom_disarm();
      if (rc == TL_OK)
        break;
      ck_assert_int_eq(rc, TL_ENOMEM);
      ck_assert_uint_eq(e->nev, mark);
      tl_stats now = tlt_stats(e);
      tlt_assert_stats_same_but_memory(&before, &now, "reconcile_items under OOM");
      TLT_CHECK(e);
    }
    ck_assert_uint_ge(k, 7); /* the report, two records, two host records, the host, the tids */
    ck_assert_uint_eq(nunknown, 1);
    tl_stats st = tlt_stats(e);
    ck_assert_uint_eq(st.reconcile_adopted, 2);
    ck_assert_uint_eq(st.reconcile_lost, 1);
    ck_assert_uint_eq(st.attempts_running, 3);
  }
  free(im.p);
  tlt_end(e);
  tlt_alloc_restore();
}
END_TEST

/* An executor whose cores the image fills, whose attempts there ended during the outage (it
 * holds their ends) and which ran new ones in their place: the ended ones take no cores, so the
 * new ones are adopted, not killed; an image taken before the ends apply keeps them coreless. */
START_TEST(held_ends_take_no_cores_so_their_successors_are_adopted) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 6);
  tl_launch out[8];
  size_t n = tlt_offer(e, "e1", 2, out, 8); /* tids 1, 2: the image holds them running */
  ck_assert_uint_eq(n, 2);
  image im = take(e);
  /* After the image: 1 and 2 end (the executor holds the ends), 3 and 4 run in their place, and
   * 5 runs and ends too: three ends held, two cores taken. */
  tlt_succeed(e, "e1", 1);
  tlt_succeed(e, "e1", 2);
  n += tlt_offer(e, "e1", 2, out + n, 8 - n);
  ck_assert_uint_eq(n, 4);
  tlt_succeed(e, "e1", 3);
  n += tlt_offer(e, "e1", 1, out + n, 8 - n);
  ck_assert_uint_eq(n, 5);
  cfg = e->cfg;
  cfg.restore_tid_floor = 100;
  restore_into(e, &im, &cfg);
  free(im.p);
  tl_reconcile_item items[5];
  for (size_t i = 0; i < 5; i++)
    items[i] = item_of(&out[i]);
  items[0].ended = items[1].ended = items[2].ended = true;
  tl_tid unknown[5];
  size_t nunknown = 9;
  TLT_OK(e, tl_executor_reconcile_items(e->s, "e1", items, 5, unknown, 5, &nunknown));
  ck_assert_uint_eq(nunknown, 0);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.reconcile_adopted, 3);
  ck_assert_uint_eq(st.reconcile_lost, 0);
  tl_executor_status x = tlt_ex(e, "e1");
  ck_assert_uint_eq(x.running, 5);
  ck_assert_uint_eq(x.free_cores, 0); /* 4 and 5 run; 1, 2 and 3 are ends */

  /* An image now, before the ends apply: restored and reconciled by tids only, the held ends
   * still take no cores. */
  image again = take(e);
  restore_into(e, &again, &cfg);
  free(again.p);
  tl_tid tids[5] = {1, 2, 3, 4, 5};
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", tids, 5, unknown, 5, &nunknown));
  ck_assert_uint_eq(nunknown, 0);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 0);

  /* The ends apply and give no cores back; the runners' ends do. */
  for (tl_tid t = 1; t <= 3; t++)
    tlt_succeed(e, "e1", t);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 0);
  tlt_succeed(e, "e1", 4);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 1);
  tlt_succeed(e, "e1", 5);
  ck_assert_uint_eq(tlt_ex(e, "e1").free_cores, 2);
  ck_assert_uint_eq(tlt_stats(e).succeeded, 5);
  /* The last index runs once more and the task set drains. */
  n = tlt_offer(e, "e1", 2, out, 8);
  ck_assert_uint_eq(n, 1);
  tlt_succeed(e, "e1", out[0].tid);
  ck_assert_uint_eq(tlt_stats(e).succeeded, 6);
  (void)ts;
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Epochs.
 * ------------------------------------------------------------------------------------------- */

/* The body's checksum and the header's again, after a test changed the body. */
static void reseal(image *im) {
  uint32_t crc = crc32c(im->p + 40, im->n - 40);
  for (int i = 0; i < 4; i++)
    im->p[32 + i] = (uint8_t)(crc >> (8 * i));
  for (int i = 0; i < 8; i++)
    im->p[24 + i] = (uint8_t)((uint64_t)(im->n - 40) >> (8 * i));
  reseal_header(im);
}

static char restore_line[256];
static void keep_restore_line(void *ud, const char *line) {
  (void)ud;
  if (strstr(line, " restore ") != NULL)
    snprintf(restore_line, sizeof restore_line, "%s", line);
}

/* tl_scheduler_new's epoch is 1 (the floor ignored); each restore's is the image's + 1, or the
 * floor when that is higher: one image restored twice gives one epoch twice unless the floor
 * tells them apart; the image of a restored scheduler carries its epoch; the journal's restore
 * line shows it. */
START_TEST(each_restore_advances_the_epoch_the_floor_raises_it) {
  tl_config cfg = snapshot_config();
  cfg.restore_epoch_floor = 9;
  tlt_env *e = tlt_new(&cfg);
  ck_assert_uint_eq(tl_epoch(e->s), 1);
  ck_assert_uint_eq(tl_epoch(NULL), 0);
  tlt_add(e, "e1", "h1", NULL, 1);
  image one = take(e);
  cfg = e->cfg;
  cfg.restore_epoch_floor = 0;
  cfg.journal = keep_restore_line;
  restore_into(e, &one, &cfg);
  ck_assert_uint_eq(tl_epoch(e->s), 2);
  ck_assert_msg(strstr(restore_line, " epoch=2 = OK") != NULL, "%s", restore_line);
  restore_into(e, &one, &cfg); /* the same image again: the same epoch */
  ck_assert_uint_eq(tl_epoch(e->s), 2);
  cfg.restore_epoch_floor = 2; /* not above: no effect */
  restore_into(e, &one, &cfg);
  ck_assert_uint_eq(tl_epoch(e->s), 2);
  cfg.restore_epoch_floor = 7;
  restore_into(e, &one, &cfg);
  ck_assert_uint_eq(tl_epoch(e->s), 7);
  ck_assert_msg(strstr(restore_line, " epoch=7 = OK") != NULL, "%s", restore_line);
  image two = take(e); /* carries 7 */
  ck_assert_uint_eq(get_le(two.p + EPOCH_AT, 8), 7);
  cfg.restore_epoch_floor = 0;
  restore_into(e, &two, &cfg);
  ck_assert_uint_eq(tl_epoch(e->s), 8);
  /* An image at the last epoch cannot be restored (no epoch is above it); one with epoch 0
   * was never written. */
  tl_callbacks cb = restore_callbacks(e);
  tl_scheduler *s = NULL;
  for (int k = 0; k < 2; k++) {
    uint64_t bad = k == 0 ? UINT64_MAX : 0;
    for (int i = 0; i < 8; i++)
      two.p[EPOCH_AT + i] = (uint8_t)(bad >> (8 * i));
    reseal(&two);
    two.at = 0;
    ck_assert_int_eq(tl_scheduler_restore(&cfg, &cb, image_read, &two, &s), TL_ESNAPSHOT);
    ck_assert_ptr_null(s);
  }
  free(one.p);
  free(two.p);
  tlt_end(e);
}
END_TEST

/* A section's offset in an image (its tag) and its length. */
static size_t section_at(const image *im, const char *tag, uint64_t *len) {
  for (size_t at = 40; at + 12 <= im->n; at += 12 + (size_t)get_le(im->p + at + 4, 8)) {
    if (memcmp(im->p + at, tag, 4) == 0) {
      *len = get_le(im->p + at + 4, 8);
      return at;
    }
  }
  ck_abort_msg("no section %s", tag);
  return 0;
}

/* Cuts the last k bytes of a section (reseal afterwards). */
static void cut_section_end(image *im, const char *tag, size_t k) {
  uint64_t len;
  size_t at = section_at(im, tag, &len);
  size_t end = at + 12 + (size_t)len;
  ck_assert_uint_ge(len, k);
  memmove(im->p + end - k, im->p + end, im->n - end);
  im->n -= k;
  for (int i = 0; i < 8; i++)
    im->p[at + 4 + i] = (uint8_t)((len - k) >> (8 * i));
}

/* Nested pools are in the image: their parents, depths and order survive the restore, and the
 * restored round visits them as the original would have. */
START_TEST(nested_pools_survive_a_restore) {
  tl_config cfg = snapshot_config();
  cfg.mode = TL_FAIR;
  cfg.speculation = false;
  tlt_env *e = tlt_new(&cfg);
  TLT_OK(e, tl_pool_add_child(e->s, NULL, "top", TL_FIFO, 3, 1));
  TLT_OK(e, tl_pool_add_child(e->s, "top", "z", TL_FAIR, 1, 0));
  TLT_OK(e, tl_pool_add_child(e->s, "top", "a", TL_FIFO, 2, 0));
  TLT_OK(e, tl_pool_add_child(e->s, "a", "a1", TL_FIFO, 1, 0));
  tlt_rebase(e);
  tlt_add(e, "e1", "h1", NULL, 4);
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 2, .pool = "a1"};
  tlt_submit_desc(e, &d);
  d = (tl_taskset_desc){.stage_id = 1, .ntasks = 2, .pool = "z"};
  tlt_submit_desc(e, &d);
  tl_launch out[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 4), 1);
  ck_assert_uint_eq(out[0].stage_id, 1); /* "top" is FIFO: "z" was added before "a" */
  image im = take(e);
  restore_into(e, &im, NULL);
  tl_pool_status p;
  TLT_OK(e, tl_pool_get(e->s, "a1", &p));
  ck_assert_uint_eq(p.depth, 3);
  ck_assert_str_eq(p.parent, "a");
  TLT_OK(e, tl_pool_get(e->s, "top", &p));
  ck_assert_uint_eq(p.children, 2);
  ck_assert_uint_eq(p.weight, 3);
  ck_assert_uint_eq(p.min_share, 1);
  ck_assert_uint_eq(p.running, 1);
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &out[1], 1), 1);
  ck_assert_uint_eq(out[1].stage_id, 1); /* still "z" first */
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, &out[2], 2), 2);
  ck_assert_uint_eq(out[2].stage_id, 0);
  for (int i = 0; i < 4; i++)
    tlt_succeed(e, "e1", out[i].tid);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* An image whose pools do not make a tree is refused: a pool its own parent, a parent no
 * earlier pool names, a task set in a pool with children. Made from a good image of pools
 * "a" and its child "b" by changing the last byte of the POOL section (b's parent's name). */
START_TEST(pools_that_are_not_a_tree_are_refused) {
  tl_config cfg = snapshot_config();
  cfg.mode = TL_FAIR;
  cfg.speculation = false;
  tlt_env *e = tlt_new(&cfg);
  TLT_OK(e, tl_pool_add_child(e->s, NULL, "a", TL_FAIR, 1, 0));
  TLT_OK(e, tl_pool_add_child(e->s, "a", "b", TL_FIFO, 1, 0));
  TLT_OK(e, tl_pool_add_child(e->s, NULL, "c", TL_FIFO, 1, 0));
  tlt_rebase(e);
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 1, .pool = "c"};
  tlt_submit_desc(e, &d);
  image im = take(e);
  uint64_t len;
  size_t at = section_at(&im, "POOL", &len);
  /* The last pool is "c" (parent ""), the one before it "b" (parent "a"): b's parent's byte is
   * 4 (c's empty parent) + 4 + 4 + 1 (its min share, weight, mode) + 1 ("c") + 4 before. */
  size_t c_parent = at + 12 + (size_t)len - 4;
  ck_assert_uint_eq(get_le(im.p + c_parent, 4), 0);
  size_t b_parent = c_parent - 4 - 4 - 1 - 1 - 4 - 1;
  ck_assert_uint_eq(im.p[b_parent], 'a');
  ck_assert_uint_eq(get_le(im.p + b_parent - 4, 4), 1);
  tl_callbacks cb = restore_callbacks(e);
  tl_scheduler *s = NULL;
  static const uint8_t bad[] = {'b', 'z', 'c'}; /* itself; no such pool; "c" holds a task set */
  for (size_t i = 0; i < sizeof bad; i++) {
    im.p[b_parent] = bad[i];
    reseal(&im);
    im.at = 0;
    ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s), TL_ESNAPSHOT);
    ck_assert_ptr_null(s);
  }
  /* b's parent "a" again, and the task set moved from "c" into "a", which has a child. */
  im.p[b_parent] = 'a';
  uint64_t tlen;
  size_t tset = section_at(&im, "TSET", &tlen);
  /* The task set's pool is the first string of its record: count, id, stage, attempt,
   * priority, tasks, cores (4 + 8 + 4 x 5), then its length (1) and "c". */
  size_t pool_at = tset + 12 + 4 + 8 + 4 * 5;
  ck_assert_uint_eq(get_le(im.p + pool_at, 4), 1);
  ck_assert_uint_eq(im.p[pool_at + 4], 'c');
  im.p[pool_at + 4] = 'a';
  reseal(&im);
  im.at = 0;
  ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s), TL_ESNAPSHOT);
  ck_assert_ptr_null(s);
  /* And back to the image as taken: it restores. */
  im.p[pool_at + 4] = 'c';
  reseal(&im);
  restore_into(e, &im, NULL);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "done"));
  free(im.p);
  tlt_end(e);
}
END_TEST

/* A version 3 image (no retry policy, no tags, no decommission times, no nested pools) of one
 * executor, one task set and the "default" pool only, made by the format's rules from the
 * version 4 image: without the task set's max_task_failures and tag count (TSET's last 6
 * bytes; it has no tag), the executor's decommission time (EXEC's last 8 bytes) and the pool's
 * parent (POOL's last 4 bytes, an empty string). */
/* A task set's placement at the end of its record (version 4) when it has none: u8 spread 0,
 * u32 0 executors, u32 0 hosts. */
#define TS_PLACEMENT_BYTES 9

static void to_version_3(image *im) {
  ck_assert_uint_eq(get_le(im->p + 8, 4), 4);
  uint64_t len;
  size_t at = section_at(im, "TSET", &len);
  ck_assert_uint_eq(get_le(im->p + at + 12, 4), 1); /* one task set */
  /* no tag, then no placement */
  ck_assert_uint_eq(get_le(im->p + at + 12 + len - TS_PLACEMENT_BYTES - 4, 4), 0);
  ck_assert_uint_eq(get_le(im->p + at + 12 + len - TS_PLACEMENT_BYTES, 1), 0);
  cut_section_end(im, "TSET", 6 + TS_PLACEMENT_BYTES);
  at = section_at(im, "EXEC", &len);
  ck_assert_uint_eq(get_le(im->p + at + 12, 4), 1); /* one executor */
  cut_section_end(im, "EXEC", 8);
  at = section_at(im, "POOL", &len);
  ck_assert_uint_eq(get_le(im->p + at + 12, 4), 1);           /* one pool */
  ck_assert_uint_eq(get_le(im->p + at + 12 + len - 4, 4), 0); /* parent "" */
  cut_section_end(im, "POOL", 4);
  im->p[8] = 3;
  reseal(im);
}

/* A version 3 image (before nested pools) restores with its pools at the top level. */
START_TEST(a_version_3_image_restores_with_flat_pools) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch out[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 4), 1);
  image im = take(e);
  to_version_3(&im);
  restore_into(e, &im, NULL);
  tl_pool_status ps;
  TLT_OK(e, tl_pool_get(e->s, "default", &ps));
  ck_assert_uint_eq(ps.depth, 1);
  ck_assert_uint_eq(ps.children, 0);
  ck_assert_str_eq(ps.parent, "");
  ck_assert_uint_eq(ps.tasksets, 1);
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  tlt_succeed(e, "e1", out[0].tid);
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 4), 2);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* A version 2 image (no resources) of one executor, one task set and one attempt, made by the
 * format's rules from the version 3 image of that ledger, which declares and asks for none:
 * without the executor's profile and resource count (the EXEC section's last 8 bytes), the
 * task set's (TSET's last 8) and the attempt's grant count (ATTM's last byte). */
static void to_version_3(image *im);
static void to_version_2(image *im) {
  to_version_3(im);
  ck_assert_uint_eq(get_le(im->p + 8, 4), 3);
  uint64_t len;
  size_t at = section_at(im, "EXEC", &len);
  ck_assert_uint_eq(get_le(im->p + at + 12 + len - 8, 8), 0); /* profile 0, no resources */
  at = section_at(im, "TSET", &len);
  ck_assert_uint_eq(get_le(im->p + at + 12 + len - 8, 8), 0); /* profile 0, no requests */
  at = section_at(im, "ATTM", &len);
  ck_assert_uint_eq(get_le(im->p + at + 12, 4), 1); /* one attempt */
  ck_assert_uint_eq(im->p[at + 12 + len - 1], 0);   /* no grant */
  cut_section_end(im, "EXEC", 8);
  cut_section_end(im, "TSET", 8);
  cut_section_end(im, "ATTM", 1);
  im->p[8] = 2;
  reseal(im);
}

/* A task set's max_task_failures and tags survive a restore; its failures count on toward its
 * own limit. */
START_TEST(retry_policy_and_tags_survive_a_restore) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  const char *tags[2] = {"job-7", "group:etl"};
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 2, .max_task_failures = 2, .tags = tags,
                       .ntags = 2};
  tl_taskset_id ts = tlt_submit_desc(e, &d);
  tl_launch out[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 4), 1);
  tlt_fail(e, "e1", out[0].tid, TL_END_EXCEPTION); /* one of its two failures */
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 4), 2);
  image im = take(e);
  restore_into(e, &im, NULL);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert_uint_eq(st.max_task_failures, 2);
  ck_assert_uint_eq(st.ntags, 2);
  tl_tag_info got[2];
  size_t n;
  TLT_OK(e, tl_taskset_tags(e->s, ts, got, 2, &n));
  ck_assert_str_eq(got[0].tag, "job-7");
  ck_assert_str_eq(got[1].tag, "group:etl");
  size_t nunknown;
  tl_tid tids[2] = {out[0].tid, out[1].tid};
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", tids, 2, NULL, 0, &nunknown));
  size_t mark = tlt_mark(e);
  uint32_t i = out[0].index == 0 ? 0 : 1; /* index 0 failed once before */
  tlt_fail(e, "e1", out[i].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 1); /* its second: aborted */
  TLT_OK(e, tl_cancel_tag(e->s, "group:etl", true, NULL, &n));
  ck_assert_uint_eq(n, 1); /* the zombie's other attempt asked to die */
  tlt_killed(e, "e1", out[1 - i].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* A version 3 image (before the retry policy and tags) restores with the config's
 * max_task_failures and no tag. */
START_TEST(a_version_3_image_restores_with_the_configs_policy) {
  tl_config cfg = snapshot_config();
  cfg.max_task_failures = 3;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch out[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 1), 1);
  image im = take(e);
  to_version_3(&im);
  restore_into(e, &im, NULL);
  ck_assert_uint_eq(tlt_ts(e, ts).max_task_failures, 3);
  ck_assert_uint_eq(tlt_ts(e, ts).ntags, 0);
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  tlt_succeed(e, "e1", out[0].tid);
  ck_assert_uint_eq(tlt_released(e, ts), 1);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* A version 2 image (before resources) restores with no profile, resource or grant, and its
 * attempt runs on when reconciled. */
START_TEST(a_version_2_image_restores_with_no_resources) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch out[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 4), 1);
  image im = take(e);
  to_version_2(&im);
  restore_into(e, &im, NULL);
  ck_assert_uint_eq(tl_epoch(e->s), 2);
  tl_executor_status st = tlt_ex(e, "e1");
  ck_assert_uint_eq(st.profile, 0);
  ck_assert_uint_eq(st.nresources, 0);
  size_t n = 99;
  ck_assert_int_eq(tl_resource_totals(e->s, NULL, 0, &n), TL_OK);
  ck_assert_uint_eq(n, 0);
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  ck_assert_uint_eq(nunknown, 0);
  tl_grant g[1];
  TLT_OK(e, tl_attempt_grants(e->s, out[0].tid, g, 1, &n));
  ck_assert_uint_eq(n, 0);
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 1);
  tlt_succeed(e, "e1", out[0].tid);
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 4), 2);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* A decommissioning executor's decommission time is in the image: restored after an outage it
 * is as far in the past as it was, so the kill it expects (decommission_kill_interval_ns) is as
 * near, and a task it would cut short is speculated at the first check (SPARK-21040). A version
 * 3 image, without the time, gives it the image's clock: the kill is then expected later, after
 * the task would end, and the task is left alone. */
START_TEST(a_decommission_time_survives_the_image) {
  for (int version = 3; version <= 4; version++) {
    tl_config cfg = snapshot_config();
    cfg.speculation_quantile = 0.5;
    cfg.speculation_multiplier = 1.5;
    cfg.speculation_min_runtime_ns = 0;
    cfg.decommission_kill_interval_ns = 5 * TLT_SEC;
    cfg.heartbeat_timeout_ns = 0;
    tlt_env *e = tlt_new(&cfg);
    tlt_add(e, "e1", "h1", NULL, 3);
    tlt_submit(e, 0, 0, 0, 3);
    tl_launch out[3];
    ck_assert_uint_eq(tlt_offer(e, "e1", 2, out, 3), 2); /* indices 0 and 1 at t = 0 */
    e->now += 6 * TLT_SEC;
    ck_assert_uint_eq(tlt_offer(e, "e1", 1, &out[2], 1), 1); /* index 2 at t = 6 s */
    e->now += 4 * TLT_SEC;
    tlt_succeed(e, "e1", out[0].tid); /* the median: 10 s */
    /* t = 10 s: to be killed at 15 s, before index 2 would end (16 s). */
    TLT_OK(e, tl_executor_decommission(e->s, "e1", NULL));
    e->now += 2 * TLT_SEC; /* the image at t = 12 s, before any check */
    image im = take(e);
    if (version == 3) {
      to_version_3(&im);
    } else {
      /* A decommissioned executor without a time (never), or one in the future: corrupt. */
      uint64_t len;
      size_t end = section_at(&im, "EXEC", &len) + 12 + (size_t)len;
      ck_assert_uint_eq(get_le(im.p + end - 8, 8), 10 * TLT_SEC + TLT_SEC); /* t = 10 s */
      tl_callbacks cb = restore_callbacks(e);
      for (int k = 0; k < 2; k++) {
        image copy = im;
        copy.p = malloc(im.n);
        ck_assert_ptr_nonnull(copy.p);
        memcpy(copy.p, im.p, im.n);
        uint64_t bad = k == 0 ? UINT64_MAX : e->now + 1;
        for (int i = 0; i < 8; i++)
          copy.p[end - 8 + (size_t)i] = (uint8_t)(bad >> (8 * i));
        reseal(&copy);
        copy.at = 0;
        tl_scheduler *s = NULL;
        ck_assert_int_eq(tl_scheduler_restore(&e->cfg, &cb, image_read, &copy, &s), TL_ESNAPSHOT);
        ck_assert_ptr_null(s);
        free(copy.p);
      }
    }
    e->now += 100 * TLT_SEC; /* the outage: time stops for the image */
    restore_into(e, &im, NULL);
    tl_tid tids[2] = {out[1].tid, out[2].tid};
    size_t nunknown;
    TLT_OK(e, tl_executor_reconcile(e->s, "e1", tids, 2, NULL, 0, &nunknown));
    ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_DECOMMISSIONING);
    size_t mark = tlt_mark(e);
    tlt_advance_tick(e, 1);
    if (version == 4) {
      ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 1);
      ck_assert_uint_eq(tlt_last(e, TLT_EV_SPECULATIVE)->index, 2);
    } else {
      ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_SPECULATIVE), 0); /* kill expected at 17 s */
    }
    free(im.p);
    tlt_end(e);
  }
}
END_TEST

/* A version 1 image (no epoch, no reconcile_adopted) is still read: epoch 0, so the restored
 * scheduler's is 1 (or the floor). Made here from a version 2 image by the format's rules. */
START_TEST(a_version_1_image_is_read_with_epoch_0) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 3);
  tl_launch out[4];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, out, 4), 1);
  image im = take(e);
  to_version_2(&im);
  ck_assert_uint_eq(get_le(im.p + 8, 4), 2);
  ck_assert_uint_eq(get_le(im.p + CNTR_AT, 4), 0x52544e43); /* "CNTR" */
  uint64_t cntr = get_le(im.p + CNTR_AT + 4, 8);
  ck_assert_uint_eq(cntr, 25 + 136 + 8);
  /* Without its last 16 bytes (reconcile_adopted and the epoch). */
  memmove(im.p + EPOCH_AT - 8, im.p + EPOCH_AT + 8, im.n - (EPOCH_AT + 8));
  im.n -= 16;
  for (int i = 0; i < 8; i++)
    im.p[CNTR_AT + 4 + i] = (uint8_t)((cntr - 16) >> (8 * i));
  im.p[8] = 1;
  reseal(&im);
  cfg = e->cfg;
  restore_into(e, &im, &cfg);
  ck_assert_uint_eq(tl_epoch(e->s), 1);
  ck_assert_uint_eq(tlt_stats(e).launched, 1);
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", &out[0].tid, 1, NULL, 0, &nunknown));
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 1);
  cfg.restore_epoch_floor = 5;
  restore_into(e, &im, &cfg);
  ck_assert_uint_eq(tl_epoch(e->s), 5);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Snapshots under load (tl_dispatch_snapshot), with deferred delivery and another thread
 * queueing events all the time.
 * ------------------------------------------------------------------------------------------- */

#define LOAD_EXECUTORS 20000

typedef struct load {
  tl_scheduler *s;
  atomic_bool stop;
  atomic_uint added; /* executors the other thread has added */
  /* The owner's thread only (deliveries and writes happen there). */
  uint32_t delivered;           /* executor_added delivered so far */
  uint32_t seq[LOAD_EXECUTORS]; /* per executor, its delivery's number (from 1), or 0 */
  uint32_t at_write;            /* delivered when the image's first byte was written */
  image im;
  unsigned restored, restored_late; /* executors restored; of them, delivered after it */
} load;

static load the_load;

static void load_added(void *ud, const char *id, const char *host) {
  load *l = ud;
  (void)host;
  unsigned k = (unsigned)strtoul(id + 1, NULL, 10);
  ck_assert_uint_lt(k, LOAD_EXECUTORS);
  ck_assert_uint_eq(l->seq[k], 0);
  l->seq[k] = ++l->delivered;
}

static int load_write(void *ud, const void *buf, size_t n) {
  load *l = ud;
  if (l->im.n == 0)
    l->at_write = l->delivered;
  return image_write(&l->im, buf, n);
}

static void *load_restored(void *ud, const char *id, const char *host) {
  load *l = ud;
  (void)host;
  unsigned k = (unsigned)strtoul(id + 1, NULL, 10);
  l->restored++;
  if (l->seq[k] == 0 || l->seq[k] > l->at_write)
    l->restored_late++;
  return NULL;
}

static void *load_thread(void *arg) {
  load *l = arg;
  for (unsigned k = 0; k < LOAD_EXECUTORS && !atomic_load(&l->stop); k++) {
    char id[16];
    snprintf(id, sizeof id, "x%u", k);
    tl_executor_desc d = {.id = id, .host = "h", .cores = 1};
    if (tl_executor_add(l->s, &d) != TL_OK)
      abort();
    atomic_store(&l->added, k + 1);
    nanosleep(&(struct timespec){0, 100000}, NULL); /* some 10,000 a second, while it runs */
  }
  return NULL;
}

/* While another thread keeps queueing (an executor_added per registration), tl_snapshot is
 * refused whenever something is queued, but tl_dispatch_snapshot succeeds at every first try,
 * and its image holds exactly the executors whose executor_added it delivered before writing:
 * nothing the image implies is undelivered, nothing delivered is missing from it. */
START_TEST(a_snapshot_at_a_dispatch_point_succeeds_under_load) {
  load *l = &the_load;
  memset(l, 0, sizeof *l);
  tl_config cfg = tlt_config();
  cfg.delivery = TL_DELIVER_DEFERRED;
  tl_callbacks cb = {0};
  cb.ud = l;
  cb.executor_added = load_added;
  ck_assert_int_eq(tl_scheduler_new(&cfg, &cb, &l->s), TL_OK);
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, load_thread, l), 0);
  unsigned rounds = 0, busy = 0;
  for (; rounds < 12; rounds++) {
    while (atomic_load(&l->added) < (rounds + 1) * 100 && atomic_load(&l->added) < LOAD_EXECUTORS)
      sched_yield(); /* let the other thread queue some */
    image plain = {NULL, 0, 0, 0, 0, -1, 0};
    int rc = tl_snapshot(l->s, image_write, &plain);
    ck_assert(rc == TL_OK || rc == TL_EBUSY);
    busy += rc == TL_EBUSY;
    free(plain.p);
    l->im = (image){NULL, 0, 0, 0, 0, -1, 0};
    l->at_write = 0;
    ck_assert_int_eq(tl_dispatch_snapshot(l->s, load_write, l), TL_OK);
    ck_assert_int_eq(tl_check(l->s, NULL, 0), TL_OK);
    /* The image against the deliveries. */
    tl_callbacks rcb = {0};
    rcb.ud = l;
    rcb.executor_restored = load_restored;
    l->restored = l->restored_late = 0;
    tl_scheduler *r = NULL;
    ck_assert_int_eq(tl_scheduler_restore(&cfg, &rcb, image_read, &l->im, &r), TL_OK);
    ck_assert_uint_eq(l->restored_late, 0);      /* none it holds was undelivered */
    ck_assert_uint_eq(l->restored, l->at_write); /* and every one delivered is in it */
    ck_assert_int_eq(tl_scheduler_free(r), TL_OK);
    free(l->im.p);
  }
  atomic_store(&l->stop, true);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert_uint_ge(rounds, 12);
  (void)busy; /* how often the plain snapshot was refused: the race decides */
  while (tl_dispatch(l->s) > 0) {
  }
  ck_assert_uint_eq(l->delivered, atomic_load(&l->added));
  ck_assert_int_eq(tl_scheduler_free(l->s), TL_OK);
}
END_TEST

/* tl_dispatch_snapshot's refusals: inside a callback (nothing delivered, nothing written), and
 * its arguments; with nothing queued it is tl_snapshot. */
static int dispatch_snapshot_rc;
static void dispatch_snapshot_in_callback(tlt_env *e, const tlt_event *ev) {
  if (ev->type == TLT_EV_ADDED) {
    image im = {NULL, 0, 0, 0, 0, -1, 0};
    dispatch_snapshot_rc = tl_dispatch_snapshot(e->s, image_write, &im);
    ck_assert_uint_eq(im.n, 0);
    free(im.p);
  }
}

START_TEST(a_dispatch_snapshot_is_refused_inside_a_callback) {
  tl_config cfg = snapshot_config();
  cfg.delivery = TL_DELIVER_DEFERRED;
  tlt_env *e = tlt_new(&cfg);
  e->hook = dispatch_snapshot_in_callback;
  dispatch_snapshot_rc = 0;
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_dispatch_all(e);
  ck_assert_int_eq(dispatch_snapshot_rc, TL_EBUSY);
  e->hook = NULL;
  image im = {NULL, 0, 0, 0, 0, -1, 0};
  ck_assert_int_eq(tl_dispatch_snapshot(NULL, image_write, &im), TL_EINVAL);
  ck_assert_int_eq(tl_dispatch_snapshot(e->s, NULL, &im), TL_EINVAL);
  tlt_add(e, "e2", "h1", NULL, 1); /* queued, undelivered */
  ck_assert_int_eq(tl_snapshot(e->s, image_write, &im), TL_EBUSY);
  size_t mark = e->nev;
  ck_assert_int_eq(tl_dispatch_snapshot(e->s, image_write, &im), TL_OK);
  ck_assert_uint_eq(e->nev, mark + 1); /* e2's executor_added, before the image */
  ck_assert_int_eq(e->ev[mark].type, TLT_EV_ADDED);
  ck_assert_uint_gt(im.n, 40);
  restore_into(e, &im, NULL);
  ck_assert_uint_eq(tlt_stats(e).executors_recovering, 2);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* After a restore, tl_taskset_list gives the task sets of the image in the same (submission)
 * order, their attempts all frozen. */
START_TEST(task_sets_are_listed_after_a_restore) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tl_launch out[16];
  tl_taskset_id ts1, ts2;
  build_state(e, out, &ts1, &ts2);
  tl_taskset_status before[4], after[4];
  size_t nbefore, nafter;
  TLT_OK(e, tl_taskset_list(e->s, before, 4, &nbefore));
  ck_assert_uint_eq(nbefore, 2);
  ck_assert_uint_eq(before[0].info.id, ts1);
  ck_assert_uint_eq(before[1].info.id, ts2);
  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  TLT_OK(e, tl_taskset_list(e->s, after, 4, &nafter));
  ck_assert_uint_eq(nafter, nbefore);
  for (size_t i = 0; i < nafter; i++) {
    ck_assert_uint_eq(after[i].info.id, before[i].info.id);
    ck_assert_uint_eq(after[i].info.stage_id, before[i].info.stage_id);
    ck_assert_uint_eq(after[i].info.ntasks, before[i].info.ntasks);
    ck_assert_uint_eq(after[i].running, before[i].running); /* frozen ones included */
    ck_assert_uint_gt(after[i].running, 0);
    ck_assert_uint_eq(after[i].succeeded, before[i].succeeded);
    ck_assert_uint_eq(after[i].frozen, after[i].running); /* all of them now */
  }
  tlt_end(e);
}
END_TEST

/* The tids launched on exec and not ended, in launch order (tid order: out is). */
static size_t unended_on(const tlt_env *e, const tl_launch *out, size_t nout, const char *exec,
                         tl_tid *tids) {
  size_t k = 0;
  for (size_t i = 0; i < nout; i++)
    if (strcmp(out[i].executor_id, exec) == 0 && tlt_ended_of(e, out[i].tid) == NULL)
      tids[k++] = out[i].tid;
  return k;
}

/* tl_executor_frozen gives the tids a pending loss holds, and after a restore those each
 * RECOVERING executor is waited for, in launch order; none once it has reconciled. */
START_TEST(frozen_tids_are_listed_before_and_after_a_restore) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  tl_launch out[16];
  tl_taskset_id ts1, ts2;
  size_t nout = build_state(e, out, &ts1, &ts2);
  tl_tid want[4][16], got[16];
  size_t nwant[4], n;
  const char *ids[4] = {"e1", "e2", "e3", "e4"};
  for (int x = 0; x < 4; x++)
    nwant[x] = unended_on(e, out, nout, ids[x], want[x]);
  ck_assert_uint_gt(nwant[0], 1);
  ck_assert_uint_gt(nwant[3], 0);
  /* Before: only e4, pending loss, has frozen attempts. */
  TLT_OK(e, tl_executor_frozen(e->s, "e4", got, 16, &n));
  ck_assert_uint_eq(n, nwant[3]);
  ck_assert_mem_eq(got, want[3], n * sizeof *got);
  TLT_OK(e, tl_executor_frozen(e->s, "e1", got, 16, &n));
  ck_assert_uint_eq(n, 0);

  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  for (int x = 0; x < 4; x++) {
    TLT_OK(e, tl_executor_frozen(e->s, ids[x], got, 16, &n));
    ck_assert_uint_eq(n, nwant[x]);
    ck_assert_mem_eq(got, want[x], n * sizeof *got);
    ck_assert_uint_eq(tlt_ex(e, ids[x]).frozen, n);
  }
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_RECOVERING);
  /* A short array: the first ones, and the count; the count alone. */
  got[1] = 0;
  TLT_OK(e, tl_executor_frozen(e->s, "e1", got, 1, &n));
  ck_assert_uint_eq(n, nwant[0]);
  ck_assert_uint_eq(got[0], want[0][0]);
  ck_assert_uint_eq(got[1], 0);
  TLT_OK(e, tl_executor_frozen(e->s, "e1", NULL, 0, &n));
  ck_assert_uint_eq(n, nwant[0]);
  n = 7;
  ck_assert_int_eq(tl_executor_frozen(e->s, "e5", got, 16, &n), TL_EGONE); /* a tombstone */
  ck_assert_uint_eq(n, 0);
  ck_assert_int_eq(tl_executor_frozen(e->s, "nope", got, 16, &n), TL_ENOENT);
  ck_assert_int_eq(tl_executor_frozen(NULL, "e1", got, 16, &n), TL_EINVAL);
  ck_assert_int_eq(tl_executor_frozen(e->s, "", got, 16, &n), TL_EINVAL);
  ck_assert_int_eq(tl_executor_frozen(e->s, "e1", NULL, 1, &n), TL_EINVAL);
  ck_assert_int_eq(tl_executor_frozen(e->s, "e1", got, 16, NULL), TL_EINVAL);
  /* Reconciled, e1 has none left. */
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "e1", want[0], nwant[0], NULL, 0, &nunknown));
  TLT_OK(e, tl_executor_frozen(e->s, "e1", got, 16, &n));
  ck_assert_uint_eq(n, 0);
  tlt_end(e);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Resources (docs/api.md "Resources"): the image carries the executors' declarations, the task
 * sets' requests and every attempt's grants.
 * ------------------------------------------------------------------------------------------- */

static const char *const two_gpus[] = {"0", "1"};
static const char *const one_gpu[] = {"0"};
static const char *const named_gpu[] = {"GPU-5d1c"};

static void add_gpus(tlt_env *e, const char *id, const char *host, uint32_t cores, uint32_t profile,
                     const char *const *addresses, uint32_t n) {
  tl_resource r = {"gpu", addresses, n};
  tl_executor_desc d = {.id = id,
                        .host = host,
                        .cores = cores,
                        .ud = tlt_ud_for(e, id),
                        .profile = profile,
                        .resources = &r,
                        .nresources = 1};
  TLT_OK(e, tl_executor_add(e->s, &d));
}

/* A task set whose tasks take one core and amount GPUs of share share each. */
static tl_taskset_id submit_gpus(tlt_env *e, uint32_t stage, uint32_t priority, uint32_t ntasks,
                                 uint32_t profile, uint32_t amount, uint32_t share) {
  tl_resource_request q = {"gpu", amount, share};
  tl_taskset_desc d = {.stage_id = stage,
                       .priority = priority,
                       .ntasks = ntasks,
                       .cpus_per_task = 1,
                       .profile = profile,
                       .resources = &q,
                       .nresources = 1};
  return tlt_submit_desc(e, &d);
}

/* One offer with grants; the launches' grants point into g. */
static size_t offer_gpus(tlt_env *e, const char *exec, uint32_t cores, tl_launch *out, size_t cap,
                         tl_grant *g, size_t gcap) {
  tl_offer o = {exec, cores};
  size_t nout = SIZE_MAX, ng = SIZE_MAX;
  TLT_OK(e, tl_resource_offers_grants(e->s, &o, 1, out, cap, &nout, g, gcap, &ng));
  size_t sum = 0;
  for (size_t i = 0; i < nout; i++)
    sum += out[i].ngrants;
  ck_assert_uint_eq(sum, ng);
  return nout;
}

static void assert_grant(const tl_grant *g, uint16_t resource, uint16_t address, uint32_t share) {
  ck_assert_uint_eq(g->resource, resource);
  ck_assert_uint_eq(g->address, address);
  ck_assert_uint_eq(g->share, share);
}

/* What an attempt holds, as tl_attempt_grants says. */
typedef struct held {
  tl_tid tid;
  size_t n;
  tl_grant g[TL_TASK_GRANTS_MAX];
} held;

static held held_by(tlt_env *e, tl_tid tid) {
  held h = {tid, 0, {{0, 0, 0}}};
  ck_assert_int_eq(tl_attempt_grants(e->s, tid, h.g, TL_TASK_GRANTS_MAX, &h.n), TL_OK);
  return h;
}

static void assert_holds(tlt_env *e, const held *h) {
  held now = held_by(e, h->tid);
  ck_assert_uint_eq(now.n, h->n);
  for (size_t i = 0; i < h->n; i++)
    assert_grant(&now.g[i], h->g[i].resource, h->g[i].address, h->g[i].share);
}

static void assert_holds_nothing(tlt_env *e, tl_tid tid) {
  tl_grant g[1];
  size_t n = 99;
  ck_assert_int_eq(tl_attempt_grants(e->s, tid, g, 1, &n), TL_ESTALE);
  ck_assert_uint_eq(n, 0);
}

/* The use of an executor's GPU address, in TL_SHARE_UNITs. */
static uint64_t gpu_use(tlt_env *e, const char *exec, uint32_t address) {
  tl_address_info a[4];
  size_t n;
  ck_assert_int_eq(tl_executor_addresses(e->s, exec, 0, a, 4, &n), TL_OK);
  ck_assert_uint_lt(address, n);
  return a[address].used;
}

/* The "gpu" totals over every executor the ledger holds. */
static tl_resource_info gpu_totals(tlt_env *e) {
  tl_resource_info r[4];
  size_t n;
  ck_assert_int_eq(tl_resource_totals(e->s, r, 4, &n), TL_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_str_eq(r[0].name, "gpu");
  return r[0];
}

#define QUARTER (TL_SHARE_UNIT / 4)

/* GPU executors, whole and shared addresses, attempts running and frozen (a pending loss): the
 * restored ledger holds the very same grants, booked on the same addresses, and every way an
 * attempt ends afterwards gives them back (a reconciliation that does not report it, FINISHED,
 * a kill's KILLED, FAILED, the second phase of a loss, the recovery timeout, the drain). */
START_TEST(a_restore_brings_back_every_grant_and_every_end_gives_it_back) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  add_gpus(e, "g1", "h1", 4, 0, two_gpus, 2);
  add_gpus(e, "g2", "h2", 4, 0, one_gpu, 1);
  add_gpus(e, "g3", "h3", 4, 0, two_gpus, 2);
  add_gpus(e, "p1", "h4", 2, 1, named_gpu, 1);
  submit_gpus(e, 1, 0, 2, 0, 1, 0); /* A: a whole GPU a task */
  submit_gpus(e, 2, 1, 6, 0, 1, 4); /* B: a quarter of one */
  submit_gpus(e, 3, 2, 1, 1, 1, 0); /* C: profile 1, a whole GPU */
  tl_launch a[4], b[8], c[2], more[8];
  tl_grant ga[8], gb[16], gc[4], gm[16];
  ck_assert_uint_eq(offer_gpus(e, "g1", 4, a, 4, ga, 8), 2); /* A's two; nothing left for B */
  assert_grant(&a[0].grants[0], 0, 0, 1);
  assert_grant(&a[1].grants[0], 0, 1, 1);
  ck_assert_uint_eq(offer_gpus(e, "g2", 4, b, 8, gb, 16), 4); /* four quarters of "0" */
  ck_assert_uint_eq(offer_gpus(e, "g3", 4, b + 4, 4, gb + 8, 8), 2);
  for (int i = 0; i < 6; i++) {
    ck_assert_uint_eq(b[i].ngrants, 1);
    assert_grant(&b[i].grants[0], 0, 0, 4);
  }
  ck_assert_uint_eq(offer_gpus(e, "g1", 2, more, 8, gm, 16), 0); /* both of g1's held whole */
  ck_assert_uint_eq(offer_gpus(e, "p1", 2, c, 2, gc, 4), 1);
  assert_grant(&c[0].grants[0], 0, 0, 1);
  tlt_run(e, "g1", a[0].tid);
  tlt_run(e, "g2", b[0].tid);
  tlt_lose(e, "g3", TL_LOSS_PENDING, false); /* b[4], b[5] frozen: they keep their quarters */
  ck_assert_uint_eq(gpu_use(e, "g3", 0), 2 * QUARTER);
  ck_assert_uint_eq(gpu_use(e, "g3", 1), 0);

  held h[9];
  tl_tid tids[9] = {a[0].tid, a[1].tid, b[0].tid, b[1].tid, b[2].tid,
                    b[3].tid, b[4].tid, b[5].tid, c[0].tid};
  for (int i = 0; i < 9; i++) {
    h[i] = held_by(e, tids[i]);
    ck_assert_uint_eq(h[i].n, 1);
  }
  tl_resource_info before = gpu_totals(e);
  ck_assert_uint_eq(before.addresses, 6);
  ck_assert_uint_eq(before.free, 1); /* g3's "1" and nothing else */
  ck_assert_uint_eq(before.used, 2 * TL_SHARE_UNIT + 6 * QUARTER + TL_SHARE_UNIT);

  image im = take(e);
  restore_into(e, &im, NULL);
  free(im.p);
  for (int i = 0; i < 9; i++)
    assert_holds(e, &h[i]);
  tl_executor_status st = tlt_ex(e, "p1");
  ck_assert_uint_eq(st.profile, 1);
  ck_assert_uint_eq(st.nresources, 1);
  tl_address_info addr[2];
  size_t n;
  ck_assert_int_eq(tl_executor_addresses(e->s, "p1", 0, addr, 2, &n), TL_OK);
  ck_assert_uint_eq(n, 1);
  ck_assert_str_eq(addr[0].address, "GPU-5d1c");
  ck_assert_uint_eq(addr[0].used, TL_SHARE_UNIT);
  ck_assert_uint_eq(gpu_use(e, "g1", 0), TL_SHARE_UNIT);
  ck_assert_uint_eq(gpu_use(e, "g1", 1), TL_SHARE_UNIT);
  ck_assert_uint_eq(gpu_use(e, "g2", 0), TL_SHARE_UNIT);
  ck_assert_uint_eq(gpu_use(e, "g3", 0), 2 * QUARTER);
  tl_resource_info after = gpu_totals(e);
  ck_assert_uint_eq(after.addresses, before.addresses);
  ck_assert_uint_eq(after.free, before.free);
  ck_assert_uint_eq(after.used, before.used);
  tl_taskset_status ts = tlt_ts(e, 3); /* C */
  ck_assert_uint_eq(ts.profile, 1);
  ck_assert_uint_eq(ts.nresources, 1);

  /* g1 reports a[0] only: a[1] ends as lost, its GPU back; a[0] finishes, its GPU back. */
  size_t nunknown;
  TLT_OK(e, tl_executor_reconcile(e->s, "g1", &a[0].tid, 1, NULL, 0, &nunknown));
  assert_holds_nothing(e, a[1].tid);
  ck_assert_uint_eq(gpu_use(e, "g1", 1), 0);
  assert_holds(e, &h[0]);
  tlt_succeed(e, "g1", a[0].tid);
  ck_assert_uint_eq(gpu_use(e, "g1", 0), 0);
  /* g2 reports its four: one killed, one failed, two finished, a quarter back each time. */
  TLT_OK(e, tl_executor_reconcile(e->s, "g2", &tids[2], 4, NULL, 0, &nunknown));
  ck_assert_uint_eq(nunknown, 0);
  ck_assert_uint_eq(gpu_use(e, "g2", 0), TL_SHARE_UNIT);
  TLT_OK(e, tl_kill_task(e->s, b[0].tid, true, "test kill"));
  ck_assert_uint_eq(gpu_use(e, "g2", 0), TL_SHARE_UNIT); /* until the executor says KILLED */
  tlt_killed(e, "g2", b[0].tid);
  ck_assert_uint_eq(gpu_use(e, "g2", 0), 3 * QUARTER);
  tlt_fail(e, "g2", b[1].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(gpu_use(e, "g2", 0), 2 * QUARTER);
  tlt_succeed(e, "g2", b[2].tid);
  tlt_succeed(e, "g2", b[3].tid);
  ck_assert_uint_eq(gpu_use(e, "g2", 0), 0);
  /* g3's loss ends: its frozen attempts end, and it leaves with its GPUs. */
  tlt_lose(e, "g3", TL_LOSS_EXITED, false);
  assert_holds_nothing(e, b[4].tid);
  assert_holds_nothing(e, b[5].tid);
  /* p1 never reconciles: the recovery timeout ends c[0] and takes p1 away. */
  tlt_advance_tick(e, cfg.recovery_timeout_ns + 1);
  assert_holds_nothing(e, c[0].tid);
  ck_assert_int_eq(tl_executor_addresses(e->s, "p1", 0, addr, 2, &n), TL_EGONE);
  after = gpu_totals(e);
  ck_assert_uint_eq(after.addresses, 3); /* g1's two, g2's one */
  ck_assert_uint_eq(after.free, 3);
  ck_assert_uint_eq(after.used, 0);

  /* The indices that did not finish launch again, with addresses the restored ledger grants:
   * A's on g1's first GPU, B's four on g2's one, a quarter each. */
  ck_assert_uint_eq(offer_gpus(e, "g1", 1, more, 8, gm, 16), 1);
  ck_assert_uint_eq(more[0].taskset, a[1].taskset);
  assert_grant(&more[0].grants[0], 0, 0, 1);
  ck_assert_uint_eq(offer_gpus(e, "g2", 4, more, 8, gm, 16), 4);
  for (int i = 0; i < 4; i++)
    assert_grant(&more[i].grants[0], 0, 0, 4);
  ck_assert_uint_eq(gpu_use(e, "g2", 0), TL_SHARE_UNIT);
  tlt_end(e);
}
END_TEST

/* Which addresses an attempt launched after the image holds, the restored ledger cannot know: a
 * reconciliation never adopts an attempt whose task set asks for resources (it is killed and its
 * index runs again), while one beside it that asks for none is adopted. */
START_TEST(an_attempt_asking_for_resources_is_never_adopted) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  add_gpus(e, "g1", "h1", 4, 0, two_gpus, 2);
  submit_gpus(e, 1, 0, 1, 0, 1, 0);
  tlt_submit_cpus(e, 2, 0, 1, 1, 1);
  image im = take(e);
  tl_launch l[4];
  tl_grant g[8];
  ck_assert_uint_eq(offer_gpus(e, "g1", 4, l, 4, g, 8), 2);
  ck_assert_uint_eq(l[0].ngrants, 1);
  ck_assert_uint_eq(l[1].ngrants, 0);
  restore_into(e, &im, NULL);
  free(im.p);
  tl_reconcile_item items[2] = {item_of(&l[0]), item_of(&l[1])};
  tl_tid unknown[2];
  size_t nunknown, mark = e->nev;
  TLT_OK(e, tl_executor_reconcile_items(e->s, "g1", items, 2, unknown, 2, &nunknown));
  ck_assert_uint_eq(nunknown, 1);
  ck_assert_uint_eq(unknown[0], l[0].tid);
  ck_assert_uint_eq(kills_of(e, mark, l[0].tid), 1);
  ck_assert_uint_eq(started_of(e, mark, l[1].tid), 1);
  ck_assert_uint_eq(tlt_stats(e).reconcile_adopted, 1);
  assert_holds_nothing(e, l[0].tid);
  ck_assert_uint_eq(gpu_use(e, "g1", 0), 0);
  /* Its index runs again, with an address the ledger books. */
  ck_assert_uint_eq(offer_gpus(e, "g1", 3, l + 2, 2, g, 8), 1);
  ck_assert_uint_eq(l[2].index, 0);
  assert_grant(&l[2].grants[0], 0, 0, 1);
  ck_assert_uint_eq(gpu_use(e, "g1", 0), TL_SHARE_UNIT);
  tlt_succeed(e, "g1", l[2].tid);
  tlt_succeed(e, "g1", l[1].tid);
  tlt_end(e);
}
END_TEST

/* Grants and declarations are validated as everything else an image holds: a grant out of
 * range, over what its address has left, of another share than its request's or missing, a
 * declaration or request tl_executor_add or tl_submit would refuse, an attempt on an executor
 * of another profile: TL_ESNAPSHOT, nothing created, no callback. */
START_TEST(an_image_with_a_corrupt_grant_is_refused) {
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  add_gpus(e, "g1", "h1", 4, 0, two_gpus, 2);
  submit_gpus(e, 1, 0, 2, 0, 1, 0);
  tl_launch l[2];
  tl_grant g[4];
  ck_assert_uint_eq(offer_gpus(e, "g1", 4, l, 2, g, 4), 2);
  image im = take(e);
  uint64_t len;
  size_t at = section_at(&im, "ATTM", &len);
  size_t grant = at + 12 + (size_t)len - 8; /* the last: u16 resource, u16 address, u32 share */
  ck_assert_uint_eq(get_le(im.p + grant, 2), 0);
  ck_assert_uint_eq(get_le(im.p + grant + 2, 2), 1);
  ck_assert_uint_eq(get_le(im.p + grant + 4, 4), 1);
  ck_assert_uint_eq(im.p[grant - 1], 1); /* one grant */
  at = section_at(&im, "EXEC", &len);
  size_t exec_end = at + 12 + (size_t)len - 8; /* ... "gpu" u32 2, "0", "1", then (version 4) the
                                                  decommission time: never */
  ck_assert_uint_eq(get_le(im.p + exec_end, 8), UINT64_MAX);
  ck_assert_uint_eq(im.p[exec_end - 1], '1');
  ck_assert_int_eq(memcmp(im.p + exec_end - 21 + 4, "gpu", 3), 0);
  at = section_at(&im, "TSET", &len);
  /* ... u32 profile, u32 1, "gpu", u32 amount, u32 share; then (version 4) u16 max failures and
   * u32 tags (none) */
  size_t ts_tail = at + 12 + (size_t)len - 6 - TS_PLACEMENT_BYTES; /* then no placement */
  ck_assert_uint_eq(get_le(im.p + ts_tail, 2), e->cfg.max_task_failures);
  ck_assert_uint_eq(get_le(im.p + ts_tail + 2, 4), 0);
  size_t ts_end = ts_tail;
  ck_assert_uint_eq(get_le(im.p + ts_end - 8, 4), 1);
  ck_assert_uint_eq(get_le(im.p + ts_end - 23, 4), 0);
  struct {
    size_t at;
    int width;
    uint64_t value;
    const char *what;
  } bad[] = {
      {grant + 2, 2, 2, "an address out of range"},
      {grant + 2, 2, 0, "an address held whole by the other attempt"},
      {grant, 2, 1, "a resource out of range"},
      {grant + 4, 4, 2, "half an address for a request of whole ones"},
      {grant + 4, 4, 0, "share 0"},
      {grant - 1, 1, 0, "no grant for a request of one"},
      {grant - 1, 1, 17, "more grants than any task holds"},
      {exec_end - 1, 1, '0', "two equal addresses"},
      {exec_end - 21 + 5, 1, ' ', "a space in a resource name"},
      {exec_end - 21, 4, 0, "an empty resource name"},
      {ts_end - 8, 4, 0, "a request of amount 0"},
      {ts_end - 4, 4, 33, "a share above TL_SHARE_MAX"},
      {ts_end - 23, 4, 1, "a task set of another profile than its attempts' executor"},
      {ts_tail, 2, 0, "max_task_failures 0"},
      {ts_tail + 2, 4, 1, "a tag count with no tag after it"},
      {exec_end, 8, 0, "a decommission time of an executor never decommissioned"},
  };
  tl_callbacks cb = restore_callbacks(e);
  the_resolver.tasksets = the_resolver.executors = 0;
  size_t mark = e->nev;
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    image copy = im;
    copy.p = malloc(im.n);
    ck_assert_ptr_nonnull(copy.p);
    memcpy(copy.p, im.p, im.n);
    for (int i = 0; i < bad[k].width; i++)
      copy.p[bad[k].at + (size_t)i] = (uint8_t)(bad[k].value >> (8 * i));
    reseal(&copy);
    copy.at = 0;
    tl_scheduler *s = (tl_scheduler *)&copy;
    int rc = tl_scheduler_restore(&e->cfg, &cb, image_read, &copy, &s);
    ck_assert_msg(rc == TL_ESNAPSHOT, "%s: %s", bad[k].what, tl_err_name(rc));
    ck_assert_ptr_null(s);
    free(copy.p);
  }
  ck_assert_uint_eq(the_resolver.tasksets + the_resolver.executors, 0);
  ck_assert_uint_eq(e->nev, mark);
  /* The image itself restores, with the grants those bytes said. */
  held last = {l[1].tid, 1, {{0, 1, 1}}};
  restore_into(e, &im, NULL);
  assert_holds(e, &last);
  free(im.p);
  tlt_end(e);
}
END_TEST

/* Out of memory at every allocation of a snapshot and a restore of a ledger with resources (the
declarations, the requests, the grant blocks, the addresses' scratch) changes nothing: a failed
restore leaves nothing behind, a good one holds the grants. */
START_TEST(out_of_memory_in_a_restore_with_resources_changes_nothing) {
  tlt_alloc_install();
  tl_config cfg = snapshot_config();
  tlt_env *e = tlt_new(&cfg);
  add_gpus(e, "g1", "h1", 4, 0, two_gpus, 2);
  add_gpus(e, "g2", "h2", 4, 1, one_gpu, 1);
  submit_gpus(e, 1, 0, 2, 0, 1, 0);
  submit_gpus(e, 2, 1, 3, 1, 1, 2);
  tl_launch l[4];
  tl_grant g[8];
  ck_assert_uint_eq(offer_gpus(e, "g1", 4, l, 4, g, 8), 2);
  ck_assert_uint_eq(offer_gpus(e, "g2", 4, l + 2, 2, g + 2, 4), 2);
  tlt_lose(e, "g2", TL_LOSS_PENDING, false);
  held h = held_by(e, l[3].tid);
  image im = take(e);
  tl_callbacks cb = restore_callbacks(e);
  for (oom_mode mode = OOM_TRANSIENT; mode <= OOM_PERSISTENT; mode++) {
    for (uint64_t k = 1;; k++) {
      tl_scheduler *s = NULL;
      im.at = 0;
      the_resolver.tasksets = 0;
      oom_arm(mode, k);
      int rc = tl_scheduler_restore(&e->cfg, &cb, image_read, &im, &s);
      oom_disarm();
      if (rc == TL_OK) {
        ck_assert_int_eq(tl_check(s, NULL, 0), TL_OK);
        tl_grant got[2];
        size_t n;
        ck_assert_int_eq(tl_attempt_grants(s, h.tid, got, 2, &n), TL_OK);
        ck_assert_uint_eq(n, 1);
        assert_grant(&got[0], h.g[0].resource, h.g[0].address, h.g[0].share);
        free_aside(e, s);
        ck_assert_uint_gt(k, 1);
        break;
      }
      ck_assert_int_eq(rc, TL_ENOMEM);
      ck_assert_ptr_null(s);
      ck_assert_uint_eq(the_resolver.tasksets, 0);
    }
  }
  free(im.p);
  tlt_end(e);
  tlt_alloc_restore();
}
END_TEST

Suite *tl_snapshot_suite(void) {
  Suite *s = suite_create("snapshot");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, an_image_of_a_ledger_with_nothing_running_restores_to_the_same_bytes);
  tcase_add_test(tc, restored_executors_recover_reconcile_or_time_out);
  tcase_add_test(tc, a_recovering_executor_lost_reports_its_loss_once);
  tcase_add_test(tc, restored_executors_report_their_removal_with_the_resolved_ud);
  tcase_add_test(tc, a_reconciling_executor_joins_its_host_as_it_is_now);
  tcase_add_test(tc, a_task_set_whose_payload_cannot_be_had_is_aborted);
  tcase_add_test(tc, the_tid_floor_keeps_tids_launched_after_the_snapshot_unique);
  tcase_add_test(tc, launches_made_after_the_image_are_adopted_when_they_reconcile);
  tcase_add_test(tc, an_adopted_tid_moves_the_next_tid_above_it);
  tcase_add_test(tc, a_speculative_copy_launched_after_the_image_is_adopted_as_the_sibling);
  tcase_add_test(tc, held_ends_take_no_cores_so_their_successors_are_adopted);
  tcase_add_test(tc, a_reconcile_that_adopts_nothing_reserves_nothing);
  tcase_add_test(tc, restored_task_sets_wait_while_executors_recover);
  tcase_add_test(tc, each_restore_advances_the_epoch_the_floor_raises_it);
  tcase_add_test(tc, a_version_1_image_is_read_with_epoch_0);
  tcase_add_test(tc, a_version_3_image_restores_with_flat_pools);
  tcase_add_test(tc, nested_pools_survive_a_restore);
  tcase_add_test(tc, pools_that_are_not_a_tree_are_refused);
  tcase_add_test(tc, a_version_2_image_restores_with_no_resources);
  tcase_add_test(tc, a_version_3_image_restores_with_the_configs_policy);
  tcase_add_test(tc, retry_policy_and_tags_survive_a_restore);
  tcase_add_test(tc, a_decommission_time_survives_the_image);
  tcase_add_test(tc, a_restore_brings_back_every_grant_and_every_end_gives_it_back);
  tcase_add_test(tc, an_attempt_asking_for_resources_is_never_adopted);
  tcase_add_test(tc, an_image_with_a_corrupt_grant_is_refused);
  tcase_add_test(tc, out_of_memory_in_a_restore_with_resources_changes_nothing);
  tcase_add_test(tc, saved_times_are_rebased_to_the_restore);
  tcase_add_test(tc, a_shorter_timeout_brings_restored_deadlines_closer);
  tcase_add_test(tc, bad_images_are_refused_with_their_own_error);
  tcase_add_test(tc, a_snapshot_waits_for_undelivered_events);
  tcase_add_test(tc, a_snapshot_at_a_dispatch_point_succeeds_under_load);
  tcase_add_test(tc, a_dispatch_snapshot_is_refused_inside_a_callback);
  tcase_add_test(tc, out_of_memory_anywhere_changes_nothing);
  tcase_add_test(tc, out_of_memory_in_an_adopting_reconcile_changes_nothing);
  tcase_add_test(tc, task_sets_are_listed_after_a_restore);
  tcase_add_test(tc, frozen_tids_are_listed_before_and_after_a_restore);
  suite_add_tcase(s, tc);
  return s;
}
