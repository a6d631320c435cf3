/* A run: the configuration from the program's header bytes, the scheduler and its callbacks,
 * the end phase and the verdict (tlo_run_seed, tlo_run_bytes).
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * A run: set-up, the end phase, and the verdict.
 * ------------------------------------------------------------------------------------------- */

static uint64_t run_clock(void *ud) { return ((tlo_run *)ud)->raw_now; }

static void journal_sink(void *ud, const char *line) {
  tlo_run *r = ud;
  r->journal_lines++;
  r->journal_bytes += strlen(line);
}

/* The optional exclusion bytes after the header (TLO_EXCLUDE_BYTES, the first one at least
 * TLO_EXCLUDE_MARK: no operation's kind byte written by the generator is), which turn
 * exclude_on_failure on with small thresholds and timeouts. */
static void exclusion_config(tlo_run *r, const uint8_t ext[TLO_EXCLUDE_BYTES]) {
  static const uint32_t max_failures[4] = {2, 3, 4, 6};
  static const uint64_t timeouts[4] = {SEC, 5 * SEC, 30 * SEC, UINT64_MAX - 1};
  static const uint64_t unschedulable[8] = {0,       1,        SEC,       2 * SEC,
                                            5 * SEC, 10 * SEC, 120 * SEC, UINT64_MAX};
  uint8_t e0 = ext[0], e1 = ext[1];
  tl_config *c = &r->cfg;
  c->exclude_on_failure = true;
  c->max_task_failures = max_failures[e0 & 3];
  c->exclude_max_task_attempts_per_executor = 1 + ((e0 >> 2) & 1);
  c->exclude_max_task_attempts_per_node = 1 + ((e0 >> 3) & 3) % (c->max_task_failures - 1);
  c->exclude_stage_max_failed_tasks_per_executor = 1 + ((e0 >> 5) & 1);
  c->exclude_stage_max_failed_executors_per_node = 1 + (e1 & 1);
  c->exclude_app_max_failed_tasks_per_executor = 1 + ((e1 >> 1) & 1);
  c->exclude_app_max_failed_executors_per_node = 1 + ((e1 >> 2) & 1);
  c->exclude_timeout_ns = timeouts[(e1 >> 3) & 3];
  c->unschedulable_timeout_ns = unschedulable[e1 >> 5];
}

/* Speculation's duration threshold (speculation_task_duration_threshold_ns) and decommission
 * kill interval from the speculation bytes: each off or one of three, from short enough that
 * most task sets pass them to long enough that few do; with speculation off, none (the library
 * refuses them there). */
static void spec_config(tlo_run *r, const uint8_t sext[TLO_SPEC_BYTES]) {
  static const uint64_t thresholds[4] = {0, SEC / 100, SEC, 5 * SEC};
  static const uint64_t kills[4] = {0, 1, SEC / 1000, SEC};
  if (!r->cfg.speculation)
    return;
  r->cfg.speculation_task_duration_threshold_ns = thresholds[sext[1] & 3];
  r->cfg.decommission_kill_interval_ns = kills[(sext[1] >> 2) & 3];
  /* Half of them speculate after a first success (the kill rule needs the median), with checks
   * every millisecond. */
  if ((sext[1] >> 4) & 1) {
    r->cfg.speculation_quantile = 0.01;
    r->cfg.speculation_interval_ns = SEC / 1000;
  }
}

static tlo_run *run_new(const uint8_t header[TLO_HEADER_BYTES], const uint8_t *ext,
                        const uint8_t *rext, const uint8_t *pext, const uint8_t *sext,
                        const uint8_t *plext, const uint8_t *shext, const tlo_options *opt) {
  if (tlo_long_message[0] == '\0') {
    memset(tlo_long_message, 'x', LONG_MESSAGE);
    tlo_long_message[LONG_MESSAGE] = '\0';
    memset(tlo_pool_255, 'p', 255);
    memset(tlo_pool_256, 'q', 256);
  }
  tlo_run *r = tlo_xrealloc(NULL, sizeof *r);
  memset(r, 0, sizeof *r);
  if (opt != NULL)
    r->opt = *opt;
  for (unsigned s = 0; s < NSLOTS; s++) {
    for (unsigned g = 0; g < MAXGEN; g++)
      snprintf(r->ex[s][g].id, sizeof r->ex[s][g].id, "e%u.%u", s, g);
    snprintf(r->phantom[s].id, sizeof r->phantom[s].id, "p%u", s);
  }
  for (unsigned h = 0; h < NHOSTS; h++)
    r->host_rack[h] = -1;
  r->next_ts_id = 1;
  r->epoch = 1;
  r->raw_now = r->now = SEC;
  tlo_pool_make(r, POOL_DEFAULT, TL_FIFO, 1, 0, -1);

  /* The configuration: small timeouts so that every expiry path is taken often. */
  static const struct {
    uint32_t max;
    uint64_t ttl;
  } tombs[5] = {{0, 0}, {1, 30 * SEC}, {4, 30 * SEC}, {4, 30 * SEC}, {64, 30 * SEC}};
  uint8_t h0 = header[0], h1 = header[1];
  r->demand = tlo_demand_chosen(header); /* from the header alone: the program is unchanged */
  tl_config_init(&r->cfg);
  r->cfg.max_task_failures = 1 + h0 % 3u;
  r->cfg.cpus_per_task = ((h0 >> 2) & 3) == 3 ? 2 : 1;
  r->cfg.heartbeat_timeout_ns = ((h0 >> 4) & 3) == 0 ? 0 : 10 * SEC;
  r->cfg.pending_loss_timeout_ns = ((h0 >> 6) & 3) == 0 ? 0 : 5 * SEC;
  r->cfg.max_tombstones = tombs[h1 % 5].max;
  r->cfg.tombstone_ttl_ns = tombs[h1 % 5].ttl;
  r->end_free = ((h1 >> 4) & 7) == 0;
  /* Half the programs deliver deferred: the events must be the very same, in the same order. */
  r->deferred = ((header[0] ^ header[1] ^ header[2] ^ header[3]) & 1) != 0;
  /* The scheduling policy: pools, speculation with small intervals and thresholds (so slow
   * tasks, copies and their losers are common), small result limits. */
  static const uint64_t limits[4] = {UINT64_C(1) << 30, 0, 20, 48};
  static const uint64_t intervals[4] = {SEC / 1000, SEC / 10, SEC, 3 * SEC};
  static const uint64_t min_runtimes[4] = {0, 0, SEC / 1000, 2 * SEC};
  static const double multipliers[4] = {0, 1, 1.5, 3}; /* halves: see slow_after */
  static const double quantiles[4] = {0.01, 0.25, 0.5, 1.0};
  uint8_t h2 = header[2], h3 = header[3];
  r->cfg.mode = (h2 & 1) ? TL_FAIR : TL_FIFO;
  r->cfg.speculation = (h2 >> 1) & 1;
  r->cfg.max_result_bytes = limits[(h2 >> 2) & 3];
  r->cfg.speculation_interval_ns = intervals[(h2 >> 4) & 3];
  r->cfg.speculation_min_runtime_ns = min_runtimes[(h2 >> 6) & 3];
  r->cfg.speculation_multiplier = multipliers[h3 & 3];
  r->cfg.speculation_quantile = quantiles[(h3 >> 2) & 3];
  /* Locality waits (docs/locality.md): locality_wait_ns, then the per-level overrides
   * (PROCESS_LOCAL, NODE_LOCAL, RACK_LOCAL; TL_WAIT_INHERIT takes the first). Programs from
   * before preferences existed submit none, so these change nothing for them. */
  static const uint64_t inherit = TL_WAIT_INHERIT, forever = UINT64_MAX - 1;
  static const uint64_t waits[16][4] = {{3 * SEC, inherit, inherit, inherit},
                                        {0, inherit, inherit, inherit},
                                        {SEC, inherit, inherit, inherit},
                                        {SEC / 2, inherit, inherit, inherit},
                                        {2 * SEC, 0, inherit, inherit},
                                        {SEC, inherit, 3 * SEC, 0},
                                        {0, SEC, inherit, 2 * SEC},
                                        {4 * SEC, 1, SEC, inherit},
                                        {SEC, 0, 0, inherit},
                                        {3 * SEC, inherit, forever, inherit},
                                        {forever, inherit, inherit, inherit},
                                        {2 * SEC, 5 * SEC, 0, SEC},
                                        {SEC, inherit, inherit, 6 * SEC},
                                        {0, inherit, inherit, inherit},
                                        {SEC / 1000, inherit, inherit, inherit},
                                        {6 * SEC, 2 * SEC, inherit, 0}};
  const uint64_t *wv = waits[h3 >> 4];
  r->cfg.locality_wait_ns = wv[0];
  r->cfg.locality_wait_process_ns = wv[1];
  r->cfg.locality_wait_node_ns = wv[2];
  r->cfg.locality_wait_rack_ns = wv[3];
  r->wait_ns[TL_PROCESS_LOCAL] = wv[1] == inherit ? wv[0] : wv[1];
  r->wait_ns[TL_NODE_LOCAL] = wv[2] == inherit ? wv[0] : wv[2];
  r->wait_ns[TL_RACK_LOCAL] = wv[3] == inherit ? wv[0] : wv[3];
  if (ext != NULL)
    exclusion_config(r, ext);
  if (rext != NULL)
    tlo_res_config(r, rext);
  if (pext != NULL)
    tlo_pol_config(r, pext);
  if (sext != NULL)
    spec_config(r, sext);
  if (plext != NULL)
    tlo_pl_config(r, plext);
  if (shext != NULL) /* offer shuffle */
    tlo_shuffle_config(r, shext);
  r->cfg.delivery = r->deferred ? TL_DELIVER_DEFERRED : TL_DELIVER_INLINE;
  r->cfg.clock = run_clock;
  r->cfg.clock_ud = r;
  r->cfg.journal = r->opt.journal;
  r->cfg.journal_ud = r->opt.journal_ud;
  if (r->cfg.journal == NULL && (h1 & 0x80)) {
    /* The journal's own sink: it reads every line (so ASan sees them) and keeps nothing. */
    r->cfg.journal = journal_sink;
    r->cfg.journal_ud = r;
  }

  /* The recovery timeout matters only to runs that restore (TLO_SNAPSHOT), which no program
   * made before it could: bits the other choices use serve. */
  static const uint64_t recovery[4] = {0, 5 * SEC, 20 * SEC, 60 * SEC};
  r->cfg.recovery_timeout_ns = recovery[(h0 ^ h2) & 3];
  /* Half the FAIR programs make pools for unknown names (nested pools come from pool_add). */
  r->cfg.pool_auto_create = ((h0 ^ h3) >> 2) & 1;
  /* What a pool record takes less its name, for the pools tl_submit makes: measured once on a
   * scheduler of its own. */
  {
    tl_config pc;
    tl_config_init(&pc);
    pc.mode = TL_FAIR;
    tl_scheduler *ps = NULL;
    tl_stats a, b;
    if (tl_scheduler_new(&pc, NULL, &ps) != TL_OK) {
      tlo_fail(r, "measuring a pool's record failed");
    } else {
      tl_stats_get(ps, &a);
      int rc = tl_pool_add(ps, "x", TL_FIFO, 1, 0);
      tl_stats_get(ps, &b);
      if (rc != TL_OK)
        tlo_fail(r, "measuring a pool's record failed");
      r->pool_bytes = b.mem_live_bytes - a.mem_live_bytes - 2;
    }
    if (ps != NULL)
      tl_scheduler_free(ps);
  }
  snprintf(r->desc, sizeof r->desc, "tl_scheduler_new");
  int rc = tl_scheduler_new(&r->cfg, tlo_callbacks(r), &r->s);
  if (rc != TL_OK) {
    tlo_fail(r, "tl_scheduler_new returned %s", tl_err_name(rc));
    r->s = NULL;
    return r;
  }
  tl_stats st;
  tl_stats_get(r->s, &st);
  r->base_bytes = st.mem_live_bytes;
  r->base_blocks = st.mem_live_blocks;
  tlo_trace(r, 1,
            "config: max_task_failures=%u cpus_per_task=%u heartbeat=%" PRIu64
            "s pending_loss=%" PRIu64 "s tombstones=%u ttl=%" PRIu64
            "s end=%s journal=%s delivery=%s",
            r->cfg.max_task_failures, r->cfg.cpus_per_task, r->cfg.heartbeat_timeout_ns / SEC,
            r->cfg.pending_loss_timeout_ns / SEC, r->cfg.max_tombstones,
            r->cfg.tombstone_ttl_ns / SEC, r->end_free ? "free with work left" : "drain",
            r->cfg.journal != NULL ? "on" : "off", r->deferred ? "deferred" : "inline");
  tlo_trace(r, 1,
            "policy: mode=%s max_result_bytes=%" PRIu64 " speculation=%s interval=%" PRIu64
            "ms min_runtime=%" PRIu64 "ms multiplier=%g quantile=%g",
            r->cfg.mode == TL_FAIR ? "FAIR" : "FIFO", r->cfg.max_result_bytes,
            r->cfg.speculation ? "on" : "off", r->cfg.speculation_interval_ns / 1000000,
            r->cfg.speculation_min_runtime_ns / 1000000, r->cfg.speculation_multiplier,
            r->cfg.speculation_quantile);
  tlo_trace(r, 1, "locality waits: process=%" PRIu64 "ns node=%" PRIu64 "ns rack=%" PRIu64 "ns",
            r->wait_ns[TL_PROCESS_LOCAL], r->wait_ns[TL_NODE_LOCAL], r->wait_ns[TL_RACK_LOCAL]);
  if (ext != NULL)
    tlo_trace(r, 1,
              "exclusion: max_task_failures=%u per executor=%u per node=%u stage per executor=%u "
              "stage per node=%u app per executor=%u app per node=%u timeout=%" PRIu64
              "ns unschedulable=%" PRIu64 "ns",
              r->cfg.max_task_failures, r->cfg.exclude_max_task_attempts_per_executor,
              r->cfg.exclude_max_task_attempts_per_node,
              r->cfg.exclude_stage_max_failed_tasks_per_executor,
              r->cfg.exclude_stage_max_failed_executors_per_node,
              r->cfg.exclude_app_max_failed_tasks_per_executor,
              r->cfg.exclude_app_max_failed_executors_per_node, r->cfg.exclude_timeout_ns,
              r->cfg.unschedulable_timeout_ns);
  if (rext != NULL)
    tlo_trace(r, 1, "resources: profiles=%s seed=%" PRIu64, r->res_profiles ? "0,1" : "0",
              r->rsrc_seed);
  if (sext != NULL)
    tlo_trace(r, 1, "speculation: duration threshold=%" PRIu64 "ns kill interval=%" PRIu64 "ns",
              r->cfg.speculation_task_duration_threshold_ns, r->cfg.decommission_kill_interval_ns);
  tlo_emit(r, header, TLO_HEADER_BYTES);
  if (ext != NULL)
    tlo_emit(r, ext, TLO_EXCLUDE_BYTES);
  if (rext != NULL)
    tlo_emit(r, rext, TLO_RESOURCE_BYTES);
  if (pext != NULL) {
    tlo_trace(r, 1, "retry policy and tags: seed=%" PRIu64, r->pol_seed);
    tlo_emit(r, pext, TLO_POLICY_BYTES);
  }
  if (sext != NULL)
    tlo_emit(r, sext, TLO_SPEC_BYTES);
  if (plext != NULL) {
    tlo_trace(r, 1, "hard placement: seed=%" PRIu64, r->pl_seed);
    tlo_emit(r, plext, TLO_PLACEMENT_BYTES);
  }
  if (shext != NULL) { /* offer shuffle */
    tlo_trace(r, 1, "offer shuffle: seed=%" PRIu64, r->cfg.offer_shuffle_seed);
    tlo_emit(r, shext, TLO_SHUFFLE_BYTES);
  }
  return r;
}

/* Checks after an end-phase call, as after a top-level operation. */
static void end_step(tlo_run *r) {
  tlo_dispatch_all(r);
  if (r->failed)
    return;
  if (r->qhead != r->qlen) {
    char d[256];
    tlo_describe_ev(r, &r->q[r->qhead], d, sizeof d);
    tlo_fail(r, "%zu expected events were not delivered, the first: %s", r->qlen - r->qhead, d);
    return;
  }
  tlo_drop_events(r);
  tlo_compare_all(r, true);
}

static void check_payloads_and_results(tlo_run *r) {
  for (uint32_t k = 0; k < r->nts && !r->failed; k++)
    if (r->ts[k].released_seen != 1)
      tlo_fail(r, "task set %" PRIu64 " was released %u times", r->ts[k].id,
               r->ts[k].released_seen);
  for (size_t i = 0; i < r->nres && !r->failed; i++)
    if (r->res[i]->frees != 1)
      tlo_fail(r, "result %zu was freed %u times", i, r->res[i]->frees);
}

/* The end phase: lose every executor, cancel what is left, expire the tombstones, and prove the
 * scheduler is empty and its memory back to the baseline; or free it with work left. */
static void finish(tlo_run *r) {
  r->reent = 0;
  snprintf(r->desc, sizeof r->desc, "end of run");
  if (r->end_free) {
    for (uint32_t k = 0; k < r->nts; k++)
      if (!r->ts[k].released) {
        r->ts[k].released = true;
        tlo_push_ev(r, EV_RELEASED)->ts = k;
      }
    r->closing = true;
    tlo_note_call(r, "scheduler_free with work left");
    tl_stats_get(r->s, &r->final);
    r->has_final = true;
    int rc = tl_scheduler_free(r->s);
    tlo_expect_rc(r, "scheduler_free with work left", rc, TL_OK);
    if (rc == TL_OK)
      r->s = NULL;
    if (r->qhead != r->qlen)
      tlo_fail(r, "tl_scheduler_free delivered %zu releases fewer than the model expects",
               r->qlen - r->qhead);
    tlo_drop_events(r);
    check_payloads_and_results(r);
    return;
  }
  for (unsigned s = 0; s < NSLOTS && !r->failed; s++)
    for (uint32_t g = 0; g < r->ngen[s] && !r->failed; g++) {
      mx_state st = r->ex[s][g].state;
      if (st == MX_ALIVE || st == MX_DECOM || st == MX_PENDING || st == MX_RECOVERING) {
        tlo_do_lose(r, &r->ex[s][g], TL_LOSS_KILLED, false, 0, NULL);
        end_step(r);
      }
    }
  for (uint32_t k = 0; k < r->nts && !r->failed; k++)
    if (!r->ts[k].released) {
      tlo_do_cancel(r, r->ts[k].stage, NULL);
      end_step(r);
    }
  if (r->failed)
    return;
  r->raw_now = tlo_add_sat(r->raw_now, 100 * SEC);
  tlo_do_tick(r);
  end_step(r);
  if (r->failed)
    return;
  tl_stats st;
  tl_stats_get(r->s, &st);
  /* Tombstones whose time to live saturated at the end of time never expire (the model agrees,
   * see end_step); then only the memory balance of tl_check vouches for the bytes. */
  size_t tombs = tlo_count_tombstones(r);
  size_t left = st.executors_alive + st.executors_decommissioning + st.executors_pending_loss +
                st.tombstones - tombs + st.hosts + st.racks + st.tasksets_active +
                st.tasksets_zombie + st.attempts_running + st.attempts_frozen + st.tasks_pending +
                st.events_queued + st.tasksets_with_failures + st.tasksets_unschedulable;
  if (left != 0)
    tlo_fail(r, "the drained scheduler still holds %zu things", left);
  /* So do application-level exclusions whose expiry saturated (tlo_compare_all counted them). */
  if (tombs == 0 && st.executors_excluded + st.nodes_excluded == 0) {
    CMP(r, "drained mem_live_bytes", st.mem_live_bytes, r->base_bytes);
    CMP(r, "drained mem_live_blocks", st.mem_live_blocks, r->base_blocks);
  }
  check_payloads_and_results(r);
  if (r->failed)
    return;
  tlo_note_call(r, "scheduler_free");
  tl_stats_get(r->s, &r->final);
  r->has_final = true;
  int rc = tl_scheduler_free(r->s);
  tlo_expect_rc(r, "scheduler_free", rc, TL_OK);
  if (rc == TL_OK)
    r->s = NULL;
}

static void run_end(tlo_run *r, size_t nops, tlo_outcome *out) {
  if (!r->failed) {
    r->op_index = nops;
    finish(r);
  }
  if (r->s != NULL) {
    /* After a disagreement: free what is left; callbacks do nothing once the run failed. */
    r->failed = true;
    r->closing = true;
    (void)tl_scheduler_free(r->s);
  }
  if (r->opt.encoded_len != NULL)
    *r->opt.encoded_len = r->enc_len;
  memset(out, 0, sizeof *out);
  out->ok = !r->failed;
  out->ops = r->failed ? r->op_index + 1 : nops;
  out->failed_op = r->failed ? r->op_index : SIZE_MAX;
  out->calls = r->calls;
  out->events = r->events;
  out->launched = r->launched;
  out->reentrant = r->reentrant;
  out->errors = r->errors;
  out->batches = r->f_batches;
  out->batch_updates = r->f_batch_updates;
  out->deferred = r->deferred;
  out->dispatched = r->dispatched;
  out->spec_submitted = r->f_spec_submitted;
  out->spec_threshold = r->f_spec_threshold;
  out->spec_decom = r->f_spec_decom;
  out->spec_settings = r->cfg.speculation_task_duration_threshold_ns != 0 ||
                       r->cfg.decommission_kill_interval_ns != 0;
  out->spec_launches = r->f_spec_launches;
  out->lost_races = r->f_lost_races;
  out->late_reports = r->f_late_reports;
  out->too_large = r->f_too_large;
  out->resubmitted = r->f_resubmitted;
  out->barrier_launches = r->f_barrier_launches;
  out->fair_rounds = r->f_fair_rounds;
  out->nested_pools = r->f_nested_pools;
  out->nested_rounds = r->f_nested_rounds;
  out->auto_pools = r->f_auto_pools;
  memcpy(out->loc_launches, r->f_loc_launches, sizeof out->loc_launches);
  out->waits_out = r->f_waits_out;
  out->level_skips = r->f_skips;
  out->timer_resets = r->f_resets;
  out->recomputes = r->f_recomputes;
  out->wait_revives = r->f_loc_revives;
  memcpy(out->exclusion, r->f_x, sizeof out->exclusion);
  out->restores = r->f_restores;
  out->restore_refusals = r->f_restore_refusals;
  out->snapshot_errors = r->f_snapshot_errors;
  out->recovering = r->f_recovering;
  out->payloads_lost = r->f_payloads_lost;
  out->reconcile_calls = r->f_reconcile_calls;
  out->reracks = r->f_reracks;
  out->reconciles = r->reconciled;
  out->reconcile_lost = r->reconcile_lost;
  out->reconcile_unknown = r->reconcile_unknown;
  out->reconcile_adopted = r->reconcile_adopted;
  out->recovery_timeouts = r->recovery_timeouts;
  out->policy = r->policy;
  out->tag_ops = r->f_tag_ops;
  out->shuffle = r->cfg.offer_shuffle;
  out->shuffled_rounds = r->f_shuffled_rounds;
  out->pool_sets = r->f_pool_sets;
  out->tag_touched = r->f_tag_touched;
  out->no_retry_aborts = r->f_no_retry_aborts;
  out->own_limit_aborts = r->f_own_limit_aborts;
  out->demand = r->demand;
  out->demand_events = r->f_d_demand;
  out->unschedulable_events = r->f_d_unsched;
  out->placement = r->placement;
  out->pl_placed = r->f_pl_placed;
  out->pl_blocked = r->f_pl_blocked;
  out->pl_waits = r->f_pl_waits;
  out->pl_rescues = r->f_pl_rescues;
  out->resources = r->resources;
  memcpy(out->resource_features, r->f_res, sizeof out->resource_features);
  snprintf(out->message, sizeof out->message, "%s", r->failed ? r->why : "ok");
  out->has_final = r->has_final && !r->failed;
  out->final = r->final;
  tlo_drop_events(r);
  free(r->q);
  for (size_t i = 0; i < r->nres; i++)
    free(r->res[i]);
  free(r->res);
  free(r->att);
  free(r->inflight);
  for (uint32_t k = 0; k < r->nts; k++) {
    free(r->ts[k].dur);
    free(r->ts[k].xf);
    free(r->ts[k].xmsg);
  }
  for (unsigned s = 0; s < NSLOTS; s++)
    for (unsigned g = 0; g < MAXGEN; g++)
      free(r->ex[s][g].appf);
  free(r->outs);
  free(r->image);
  free(r);
}

/* The mutated-snapshot part of a run: called between operations, with nothing undelivered. */
typedef struct fuzz_state fuzz_state;
static void fuzz_point(tlo_run *r, fuzz_state *f);

static void run_seed(uint64_t seed, size_t nops, const tlo_options *opt, tlo_outcome *out,
                     fuzz_state *f, size_t points);

void tlo_run_seed(uint64_t seed, size_t nops, const tlo_options *opt, tlo_outcome *out) {
  run_seed(seed, nops, opt, out, NULL, 0);
}

static void run_seed(uint64_t seed, size_t nops, const tlo_options *opt, tlo_outcome *out,
                     fuzz_state *f, size_t points) {
  uint64_t rng = seed;
  uint64_t frng = seed ^ UINT64_C(0x5a17f00d5a17f00d); /* the snapshot points' own draws */
  uint8_t header[TLO_HEADER_BYTES];
  uint64_t h = tlo_splitmix64(&rng);
  for (unsigned k = 0; k < TLO_HEADER_BYTES; k++)
    header[k] = (uint8_t)(h >> (8 * k));
  /* Two seeds in five turn exclusion on, from bits the header leaves (so the operations of the
   * others are what they were before exclusion existed). */
  uint8_t ext[TLO_EXCLUDE_BYTES] = {(uint8_t)(TLO_EXCLUDE_MARK | ((h >> 40) & 0x3f)),
                                    (uint8_t)(h >> 48)};
  /* Two seeds in five run with resources, chosen from the seed alone (the others' programs are
   * what they were before resources existed). */
  uint64_t hr = seed ^ UINT64_C(0x7265736f75726365);
  hr = tlo_splitmix64(&hr);
  uint8_t rext[TLO_RESOURCE_BYTES] = {(uint8_t)(TLO_RESOURCE_MARK | ((hr >> 8) & 0x1f)),
                                      (uint8_t)(hr >> 16)};
  /* Two seeds in five run with the retry policy and tags, likewise. */
  uint64_t hp = seed ^ UINT64_C(0x706f6c6963790000);
  hp = tlo_splitmix64(&hp);
  uint8_t pext[TLO_POLICY_BYTES] = {(uint8_t)(TLO_POLICY_MARK | ((hp >> 8) & 0x0f)),
                                    (uint8_t)(hp >> 16)};
  /* Two seeds in five (of those that speculate) choose the duration threshold and the kill
   * interval, from the seed alone (the others' programs are what they were before). */
  uint64_t hs = seed ^ UINT64_C(0x7370656374687265);
  hs = tlo_splitmix64(&hs);
  uint8_t sext[TLO_SPEC_BYTES] = {(uint8_t)(TLO_SPEC_MARK | ((hs >> 8) & 0x0f)),
                                  (uint8_t)(hs >> 16)};
  /* Two seeds in five run with hard placement, likewise. */
  uint64_t hl = seed ^ UINT64_C(0x706c6163656d6e74);
  hl = tlo_splitmix64(&hl);
  uint8_t plext[TLO_PLACEMENT_BYTES] = {(uint8_t)(TLO_PLACEMENT_MARK | ((hl >> 8) & 0x0f)),
                                        (uint8_t)(hl >> 16)};
  bool spec = hs % 5 < 2 && ((header[2] >> 1) & 1);
  /* Offer shuffle: two seeds in five, from the seed alone, likewise. */
  uint64_t hsh = seed ^ UINT64_C(0x73687566666c6500);
  hsh = tlo_splitmix64(&hsh);
  uint8_t shext[TLO_SHUFFLE_BYTES] = {(uint8_t)(TLO_SHUFFLE_MARK | ((hsh >> 8) & 0x0f)),
                                      (uint8_t)(hsh >> 16)};
  /* (Placement not with the speculation settings: their runs stay as they were, so what they
   * reach does not move.) */
  tlo_run *r = run_new(header, (h >> 32) % 5 < 2 ? ext : NULL, hr % 5 < 2 ? rext : NULL,
                       hp % 5 < 2 ? pext : NULL, spec ? sext : NULL,
                       hl % 5 < 2 && !spec ? plext : NULL, hsh % 5 < 2 ? shext : NULL, opt);
  r->rng = rng;
  size_t i = 0;
  for (; i < nops && !r->failed; i++) {
    tlo_op op;
    tlo_gen_op(r, &op);
    uint8_t bytes[64];
    size_t n = tlo_encode_op(&op, bytes, sizeof bytes);
    tlo_emit(r, bytes, n);
    r->op_index = i;
    tlo_apply_top(r, &op);
    if (f != NULL && !r->failed && r->s != NULL && tlo_splitmix64(&frng) % nops < points)
      fuzz_point(r, f);
  }
  run_end(r, nops, out);
}

void tlo_run_bytes(const uint8_t *data, size_t size, const tlo_options *opt, tlo_outcome *out) {
  uint8_t header[TLO_HEADER_BYTES] = {0};
  for (size_t k = 0; k < TLO_HEADER_BYTES && k < size; k++)
    header[k] = data[k];
  size_t at = size < TLO_HEADER_BYTES ? size : TLO_HEADER_BYTES;
  const uint8_t *ext = NULL;
  if (size >= at + TLO_EXCLUDE_BYTES && data[at] >= TLO_EXCLUDE_MARK) {
    ext = data + at;
    at += TLO_EXCLUDE_BYTES;
  }
  const uint8_t *rext = NULL;
  if (size >= at + TLO_RESOURCE_BYTES && data[at] >= TLO_RESOURCE_MARK &&
      data[at] < TLO_EXCLUDE_MARK) {
    rext = data + at;
    at += TLO_RESOURCE_BYTES;
  }
  const uint8_t *pext = NULL;
  if (size >= at + TLO_POLICY_BYTES && data[at] >= TLO_POLICY_MARK &&
      data[at] < TLO_SPEC_MARK) {
    pext = data + at;
    at += TLO_POLICY_BYTES;
  }
  const uint8_t *sext = NULL;
  if (size >= at + TLO_SPEC_BYTES && data[at] >= TLO_SPEC_MARK && data[at] < TLO_RESOURCE_MARK) {
    sext = data + at;
    at += TLO_SPEC_BYTES;
  }
  /* Parsed after every older block, so a program without it reads as before. */
  const uint8_t *plext = NULL;
  if (size >= at + TLO_PLACEMENT_BYTES && data[at] >= TLO_PLACEMENT_MARK &&
      data[at] < TLO_PLACEMENT_MARK + 0x10) {
    plext = data + at;
    at += TLO_PLACEMENT_BYTES;
  }
  const uint8_t *shext = NULL; /* offer shuffle */
  if (size >= at + TLO_SHUFFLE_BYTES && data[at] >= TLO_SHUFFLE_MARK &&
      data[at] < TLO_SHUFFLE_MARK + 0x10) {
    shext = data + at;
    at += TLO_SHUFFLE_BYTES;
  }
  tlo_run *r = run_new(header, ext, rext, pext, sext, plext, shext, opt);
  size_t i = 0;
  while (i < TLO_MAX_OPS && !r->failed) {
    tlo_op op;
    size_t n = tlo_decode_op(data + at, size - at, &op);
    if (n == 0)
      break;
    tlo_emit(r, data + at, n);
    at += n;
    r->op_index = i++;
    tlo_apply_top(r, &op);
  }
  run_end(r, i, out);
}

/* ---------------------------------------------------------------------------------------------
 * Mutated snapshots (tlo_snapshot_fuzz): at chosen points of a run its scheduler's image is taken,
 * mutated, and restored beside it with the run's config; the restore refuses, or gives a
 * scheduler that is then drained to nothing. The run itself goes on against its model.
 * ------------------------------------------------------------------------------------------- */

struct fuzz_state {
  tlo_run *r;
  tlo_fuzz_outcome *out;
  uint64_t rng;
  uint64_t clock;   /* the restored scheduler's own clock */
  unsigned calls;   /* callbacks of the restored scheduler (none for a refused restore) */
  unsigned ended;   /* losses the drain completed (tl_executor_lost answered TL_OK) */
  unsigned removed; /* executor_removed events: one per loss completed */
  /* What taskset_restored gave, by task set id: its payload (NULL: withheld), released yet. */
  tl_taskset_id *ids;
  void **payloads;
  unsigned *releases;
  uint32_t *stages;
  size_t n, cap;
  unsigned tags[1]; /* payloads are addresses just past it, numbered, never read */
  uint8_t *image;
  size_t len, imcap;
  char why[1024]; /* the first thing the callbacks saw wrong */
};

static uint64_t fuzz_clock(void *ud) { return ((fuzz_state *)ud)->clock; }

static int fuzz_write(void *ud, const void *buf, size_t n) {
  fuzz_state *f = ud;
  if (f->len + n > f->imcap) {
    f->imcap = (f->len + n) * 2;
    f->image = tlo_xrealloc(f->image, f->imcap);
  }
  memcpy(f->image + f->len, buf, n);
  f->len += n;
  return 0;
}

typedef struct fuzz_reader {
  const uint8_t *p;
  size_t len, at;
} fuzz_reader;

static int fuzz_read(void *ud, void *buf, size_t n) {
  fuzz_reader *rd = ud;
  size_t k = rd->len - rd->at < n ? rd->len - rd->at : n;
  memcpy(buf, rd->p + rd->at, k);
  rd->at += k;
  return (int)k;
}

static void fuzz_wrong(fuzz_state *f, const char *what) {
  size_t n = strlen(what);
  if (f->why[0] == '\0') {
    if (n >= sizeof f->why)
      n = sizeof f->why - 1;
    memcpy(f->why, what, n);
    f->why[n] = '\0';
  }
}

static bool fz_taskset_restored(void *ud, const tl_taskset_info *ts, void **payload) {
  fuzz_state *f = ud;
  *payload = NULL;
  f->calls++;
  for (size_t i = 0; i < f->n; i++)
    if (f->ids[i] == ts->id)
      fuzz_wrong(f, "taskset_restored asked twice for one task set");
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 64;
    f->ids = tlo_xrealloc(f->ids, f->cap * sizeof *f->ids);
    f->payloads = tlo_xrealloc(f->payloads, f->cap * sizeof *f->payloads);
    f->releases = tlo_xrealloc(f->releases, f->cap * sizeof *f->releases);
    f->stages = tlo_xrealloc(f->stages, f->cap * sizeof *f->stages);
  }
  bool give = tlo_splitmix64(&f->rng) % 8 != 0;
  f->ids[f->n] = ts->id;
  /* A payload is a distinct address the run owns: one past tags, numbered (never read). */
  f->payloads[f->n] = give ? (void *)((char *)f->tags + 1 + f->n) : NULL;
  f->releases[f->n] = 0;
  f->stages[f->n] = ts->stage_id;
  *payload = f->payloads[f->n];
  f->n++;
  return give;
}

static void *fz_executor_restored(void *ud, const char *id, const char *host) {
  fuzz_state *f = ud;
  (void)id;
  (void)host;
  f->calls++;
  return f;
}

static void fz_released(void *ud, const tl_taskset_info *ts, void *payload) {
  fuzz_state *f = ud;
  f->calls++;
  for (size_t i = 0; i < f->n; i++)
    if (f->ids[i] == ts->id) {
      if (payload != f->payloads[i])
        fuzz_wrong(f, "taskset_released hands back another payload than the resolver gave");
      if (++f->releases[i] > 1)
        fuzz_wrong(f, "a task set released twice");
      return;
    }
  fuzz_wrong(f, "taskset_released of a task set the resolver was not asked for");
}

static void fz_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  fuzz_state *f = ud;
  (void)t;
  f->calls++;
  if (end->result != NULL)
    fuzz_wrong(f, "task_ended with a result no update gave");
}

static void fz_other(fuzz_state *f) { f->calls++; }
static void fz_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  (void)ts;
  (void)reason;
  fz_other(ud);
}
static void fz_lost(void *ud, const char *id, void *exud, const tl_loss_reason *why) {
  (void)id;
  (void)why;
  if (exud != ud)
    fuzz_wrong(ud, "executor_lost with another ud than executor_restored gave");
  fz_other(ud);
}
static void fz_removed(void *ud, const char *id, void *exud, const tl_loss_reason *why) {
  (void)id;
  if (exud != ud)
    fuzz_wrong(ud, "executor_removed with another ud than executor_restored gave");
  if (why->kind != TL_LOSS_KILLED)
    fuzz_wrong(ud, "executor_removed with another reason than the drain's");
  ((fuzz_state *)ud)->removed++;
  fz_other(ud);
}
static void fz_kill(void *ud, tl_tid tid, const char *id, void *executor_ud, bool interrupt,
                    const char *reason) {
  (void)tid;
  (void)executor_ud;
  (void)id;
  (void)interrupt;
  (void)reason;
  fz_other(ud);
}
static void fz_started(void *ud, const tl_task_info *t) {
  (void)t;
  fz_other(ud);
  fuzz_wrong(ud, "task_started: nothing launches while the restored scheduler drains");
}
static void fz_added(void *ud, const char *id, const char *host) {
  (void)id;
  (void)host;
  fz_other(ud);
  fuzz_wrong(ud, "executor_added: nothing registers");
}
static void fz_revive(void *ud) { fz_other(ud); }
static void fz_spec(void *ud, const tl_taskset_info *ts, uint32_t index) {
  (void)ts;
  (void)index;
  fz_other(ud);
}

static uint64_t le_get(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n; i-- > 0;)
    v = v << 8 | p[i];
  return v;
}

static void le_put(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t crc32c_of(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

/* Mutates img[0 .. *len) in place (it has room for 16 more bytes); returns what it did. */
static const char *mutate(fuzz_state *f, uint8_t *img, size_t *len) {
  uint64_t v = tlo_splitmix64(&f->rng);
  size_t n = *len;
  switch (v % 6) {
  case 0: { /* flip bits of 1 to 8 bytes, anywhere */
    unsigned k = 1 + (unsigned)((v >> 8) % 8);
    for (unsigned i = 0; i < k; i++) {
      uint64_t w = tlo_splitmix64(&f->rng);
      img[w % n] ^= (uint8_t)(1u << ((w >> 32) % 8));
    }
    return "bytes flipped";
  }
  case 1: /* cut short, or a few bytes too many */
    if ((v >> 8) % 4 == 0) {
      size_t extra = 1 + (size_t)((v >> 16) % 16);
      for (size_t i = 0; i < extra; i++)
        img[n + i] = (uint8_t)(v >> (i % 8));
      *len = n + extra;
      return "bytes appended";
    }
    *len = (size_t)((v >> 8) % n);
    return "cut short";
  case 2: { /* a body section's count (its first u32) or length (its u64) overwritten */
    size_t secs[16], nsec = 0;
    for (size_t at = 40; at + 12 <= n && nsec < 16;) {
      secs[nsec++] = at;
      uint64_t sl = le_get(img + at + 4, 8);
      if (sl > n - at - 12)
        break;
      at += 12 + (size_t)sl;
    }
    if (nsec == 0)
      return "nothing (no section)";
    size_t at = secs[(v >> 8) % nsec];
    static const uint64_t values[] = {0, 1, 2, 3, 255, 0xffffffffu, 0x7fffffffu, UINT64_MAX};
    uint64_t val = values[(v >> 16) % 8];
    if ((v >> 24) % 3 == 0) {
      le_put(img + at + 4, val, 8);
      return "a section's length overwritten";
    }
    if (at + 16 <= n) {
      uint64_t old = le_get(img + at + 12, 4);
      le_put(img + at + 12, (v >> 28) % 2 ? val : old + 1 - 2 * ((v >> 29) % 2), 4);
    }
    return "a section's count overwritten";
  }
  case 3: { /* an aligned u32 of the body overwritten with a small or extreme value */
    if (n < 48)
      return "nothing (no body)";
    size_t at = 40 + 4 * (size_t)(((v >> 8) % ((n - 44) / 4)));
    static const uint32_t values[] = {0, 1, 2, 5, 0xff, 0xffff, 0x7fffffff, 0xffffffff};
    le_put(img + at, values[(v >> 40) % 8], 4);
    return "a body word overwritten";
  }
  case 4: { /* a byte of the body set: flags, states, localities, small counts */
    if (n <= 40)
      return "nothing (no body)";
    img[40 + (v >> 8) % (n - 40)] = (uint8_t)((v >> 40) % 9);
    return "a body byte set";
  }
  default: { /* a header field: version, flags, fingerprint, body length */
    static const int offsets[4] = {8, 12, 16, 24}, widths[4] = {4, 4, 8, 8};
    unsigned which = (unsigned)((v >> 8) % 4);
    if (n >= 32)
      le_put(img + offsets[which], le_get(img + offsets[which], widths[which]) + 1 + (v >> 16) % 3,
             widths[which]);
    return which == 0   ? "the version"
           : which == 1 ? "the flags"
           : which == 2 ? "the fingerprint"
                        : "the body length";
  }
  }
}

/* Loses every executor, cancels every stage, ticks far ahead: the restored scheduler must then
 * hold nothing. */
static void fuzz_drain(fuzz_state *f, tl_scheduler *s, const tl_config *cfg, const char *how) {
  tlo_run *r = f->r;
  char msg[2048];
  tl_executor_info *list = NULL;
  for (int round = 0; round < 4; round++) {
    size_t n = 0;
    if (tl_executor_list(s, NULL, 0, &n) != TL_OK) {
      fuzz_wrong(f, "tl_executor_list failed");
      break;
    }
    if (n == 0)
      break;
    list = tlo_xrealloc(list, n * sizeof *list);
    size_t m = 0;
    tl_executor_list(s, list, n, &m);
    tl_loss_reason why = {TL_LOSS_KILLED, false, 0, "drained"};
    for (size_t i = 0; i < m && i < n; i++) {
      f->out->lost++;
      int rc = tl_executor_lost(s, list[i].id, &why);
      f->ended += rc == TL_OK;
      if (rc != TL_OK) {
        snprintf(msg, sizeof msg, "tl_executor_lost(%.40s) of a restored executor: %s", list[i].id,
                 tl_err_name(rc));
        fuzz_wrong(f, msg);
      }
      if (cfg->delivery == TL_DELIVER_DEFERRED)
        while (tl_dispatch(s) > 0) {
        }
    }
  }
  free(list);
  for (size_t i = 0; i < f->n; i++) {
    int rc = tl_cancel_stage(s, f->stages[i], NULL);
    if (rc != TL_OK && rc != TL_ENOENT) {
      snprintf(msg, sizeof msg, "tl_cancel_stage(%u): %s", f->stages[i], tl_err_name(rc));
      fuzz_wrong(f, msg);
    }
    if (cfg->delivery == TL_DELIVER_DEFERRED)
      while (tl_dispatch(s) > 0) {
      }
  }
  for (int k = 0; k < 3; k++) {
    f->clock = tlo_add_sat(f->clock, UINT64_C(100000) * SEC);
    (void)tl_tick(s);
    if (cfg->delivery == TL_DELIVER_DEFERRED)
      while (tl_dispatch(s) > 0) {
      }
  }
  char why[512] = "";
  if (tl_check(s, why, sizeof why) != TL_OK) {
    snprintf(msg, sizeof msg, "tl_check of the drained restored scheduler: %s", why);
    fuzz_wrong(f, msg);
  }
  tl_stats st;
  tl_stats_get(s, &st);
  size_t left = st.executors_alive + st.executors_decommissioning + st.executors_pending_loss +
                st.executors_recovering + st.hosts + st.racks + st.tasksets_active +
                st.tasksets_zombie + st.attempts_running + st.attempts_frozen + st.tasks_pending +
                st.tasks_speculatable + st.events_queued + st.tasksets_with_failures +
                st.tasksets_unschedulable + st.places;
  if (left != 0) {
    snprintf(msg, sizeof msg,
             "the drained restored scheduler still holds %zu things (alive %zu, pending %zu, "
             "recovering %zu, task sets %zu + %zu zombie, attempts %zu + %zu frozen)",
             left, st.executors_alive, st.executors_pending_loss, st.executors_recovering,
             st.tasksets_active, st.tasksets_zombie, st.attempts_running, st.attempts_frozen);
    fuzz_wrong(f, msg);
  }
  for (size_t i = 0; i < f->n; i++)
    if (f->releases[i] != 1)
      fuzz_wrong(f, "a restored task set was not released once while draining");
  if (f->removed != f->ended)
    fuzz_wrong(f, "the drain's losses of restored executors were not each removed once");
  /* Memory: an empty scheduler of this config with the run's pools, unless a tombstone or an
   * application-level exclusion is left whose time saturated (they never expire), or the image's
   * pools are not the run's. */
  size_t npools = 0;
  for (unsigned p = 0; p < NPOOLNAMES; p++)
    npools += r->pools[p].exists;
  if (st.tombstones == 0 && st.executors_excluded + st.nodes_excluded == 0 && st.pools == npools) {
    tl_scheduler *empty;
    if (tl_scheduler_new(cfg, NULL, &empty) == TL_OK) {
      for (unsigned p = 0; p < NPOOLNAMES; p++)
        if (r->pools[p].exists && p != POOL_DEFAULT)
          (void)tl_pool_add(empty, tlo_pool_names[p], r->pools[p].mode, r->pools[p].weight,
                            r->pools[p].min_share);
      tl_stats e;
      tl_stats_get(empty, &e);
      if (e.mem_live_bytes != st.mem_live_bytes || e.mem_live_blocks != st.mem_live_blocks) {
        snprintf(msg, sizeof msg,
                 "the drained restored scheduler (%s) holds %zu bytes in %zu blocks, an empty one "
                 "%zu in %zu",
                 how, st.mem_live_bytes, st.mem_live_blocks, e.mem_live_bytes, e.mem_live_blocks);
        fuzz_wrong(f, msg);
      }
      tl_scheduler_free(empty);
    }
  }
  int rc = tl_scheduler_free(s);
  if (rc != TL_OK)
    fuzz_wrong(f, "tl_scheduler_free of the drained restored scheduler failed");
}

static void fuzz_point(tlo_run *r, fuzz_state *f) {
  tlo_fuzz_outcome *out = f->out;
  f->r = r;
  f->len = 0;
  int rc = tl_snapshot(r->s, fuzz_write, f);
  if (rc != TL_OK) {
    tlo_fail(r, "tl_snapshot for a mutated image returned %s", tl_err_name(rc));
    return;
  }
  size_t len = f->len;
  uint8_t *img = tlo_xrealloc(NULL, len + 16);
  memcpy(img, f->image, len);
  const char *how = mutate(f, img, &len);
  bool fix = tlo_splitmix64(&f->rng) % 2 == 0;
  if (fix && len >= 40) {
    /* The checksums made right again (the body length too, unless that was the mutation). */
    if (strcmp(how, "the body length") != 0)
      le_put(img + 24, len - 40, 8);
    le_put(img + 32, crc32c_of(img + 40, len - 40), 4);
    le_put(img + 36, crc32c_of(img, 36), 4);
    out->fixed++;
  }
  out->tries++;
  tl_config cfg = r->cfg;
  cfg.journal = NULL;
  cfg.journal_ud = NULL;
  cfg.clock = fuzz_clock;
  cfg.clock_ud = f;
  cfg.events_ready = NULL;
  f->clock = r->raw_now > r->now ? r->raw_now : r->now;
  tl_callbacks cb = {.ud = f,
                     .task_started = fz_started,
                     .task_ended = fz_task_ended,
                     .taskset_failed = fz_failed,
                     .taskset_released = fz_released,
                     .executor_added = fz_added,
                     .executor_lost = fz_lost,
                     .executor_removed = fz_removed,
                     .revive_offers = fz_revive,
                     .kill_task = fz_kill,
                     .speculative_task_submitted = fz_spec,
                     .taskset_restored = fz_taskset_restored,
                     .executor_restored = fz_executor_restored};
  f->n = 0;
  f->why[0] = '\0';
  f->calls = 0;
  f->ended = f->removed = 0;
  fuzz_reader rd = {img, len, 0};
  tl_scheduler *s = (tl_scheduler *)f; /* must become NULL on error */
  rc = tl_scheduler_restore(&cfg, &cb, fuzz_read, &rd, &s);
  char msg[4096];
  if (rc != TL_OK) {
    int slot = rc == TL_ESNAPSHOT  ? 0
               : rc == TL_EVERSION ? 1
               : rc == TL_ECONFIG  ? 2
               : rc == TL_ENOMEM   ? 3
                                   : 4;
    out->refused[slot]++;
    if (slot == 4)
      snprintf(msg, sizeof msg, "restore of a mutated image (%s%s) returned %s", how,
               fix ? ", checksums fixed" : "", tl_err_name(rc));
    else if (s != NULL)
      snprintf(msg, sizeof msg, "restore refused a mutated image (%s) with %s, *out not NULL", how,
               tl_err_name(rc));
    else if (f->calls > 0)
      snprintf(msg, sizeof msg, "restore refused a mutated image (%s) with %s after callbacks", how,
               tl_err_name(rc));
    else
      msg[0] = '\0';
    if (msg[0] != '\0')
      tlo_fail(r, "%s", msg);
  } else {
    out->accepted++;
    char why[512] = "";
    if (tl_check(s, why, sizeof why) != TL_OK) {
      snprintf(msg, sizeof msg, "the restored scheduler of a mutated image (%s) fails tl_check: %s",
               how, why);
      fuzz_wrong(f, msg);
    }
    if (cfg.delivery == TL_DELIVER_DEFERRED)
      while (tl_dispatch(s) > 0) {
      }
    out->tasksets += f->n;
    fuzz_drain(f, s, &cfg, how);
    if (f->why[0] != '\0')
      tlo_fail(r, "mutated image (%s%s) accepted: %s", how, fix ? ", checksums fixed" : "", f->why);
  }
  free(img);
}

void tlo_snapshot_fuzz(uint64_t seed, size_t nops, size_t mutations, tlo_fuzz_outcome *out) {
  memset(out, 0, sizeof *out);
  fuzz_state f = {0};
  f.out = out;
  f.rng = seed * UINT64_C(0x9e3779b97f4a7c15) + 17;
  tlo_outcome run;
  /* r is known only inside the run: fuzz_point gets it. */
  run_seed(seed, nops == 0 ? 1 : nops, NULL, &run, &f, mutations);
  out->ok = run.ok;
  snprintf(out->message, sizeof out->message, "%s", run.message);
  free(f.image);
  free(f.ids);
  free(f.payloads);
  free(f.releases);
  free(f.stages);
}
