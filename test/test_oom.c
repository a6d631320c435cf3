/* Out-of-memory sweeps in the manner of SQLite's malloc tests: every public entry point, in
 * states that reach its deep paths, with its 1st, 2nd, 3rd... allocation failing, transiently
 * and persistently: a failed call changes nothing, a successful one does what it does anyway.
 * These are the scenarios and the tests; oom_sweep.[ch] is the sweep that runs them.
 */
#include "oom_sweep.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Helpers of the builders and calls: the library's calls in one line each, the launch log, a long
 * message.
 * ------------------------------------------------------------------------------------------- */

static int add_exec(tlt_env *e, const char *id, const char *host, const char *rack,
                    uint32_t cores) {
  tl_executor_desc d = {.id = id, .host = host, .rack = rack, .cores = cores};
  return tl_executor_add(e->s, &d);
}

static int submit(tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t priority,
                  uint32_t ntasks) {
  return tlt_submit_rc(e, stage, attempt, priority, ntasks, 0, NULL);
}

/* An offer round into c->out; on TL_OK its launches are appended to c->log. */
static int offers(tlt_env *e, oom_ctx *c, const tl_offer *o, size_t n, size_t cap) {
  OOM_ASSERT(cap <= OOM_LOG_MAX, "cap %zu", cap);
  c->nout = SIZE_MAX;
  c->ngrants = 0;
  int rc = tl_resource_offers(e->s, o, n, c->out, cap, &c->nout);
  if (rc != TL_OK) {
    OOM_ASSERT(c->nout == 0, "failed offer round reports %zu launches", c->nout);
    return rc;
  }
  OOM_ASSERT(c->nlog + c->nout <= OOM_LOG_MAX, "launch log full");
  memcpy(&c->log[c->nlog], c->out, c->nout * sizeof *c->out);
  c->nlog += c->nout;
  return rc;
}

static int offer(tlt_env *e, oom_ctx *c, const char *exec, uint32_t cores, size_t cap) {
  tl_offer o = {.executor_id = exec, .cores = cores};
  return offers(e, c, &o, 1, cap);
}

static int update(tlt_env *e, const char *exec, tl_tid tid, tl_task_state state,
                  tl_end_kind failure, const char *message) {
  tl_update u = {.state = state, .failure = failure, .message = message};
  return tl_status_update(e->s, exec, tid, &u);
}

/* A FINISHED update with a fresh result of size bytes; on error the result stays ours and is
 * freed here. */
static int finish_size(tlt_env *e, const char *exec, tl_tid tid, const char *message, size_t size) {
  tlt_result *r = tlt_result_new(e, size);
  tl_update u = {.state = TL_TASK_FINISHED,
                 .message = message,
                 .result = r,
                 .result_size = size,
                 .result_free = tlt_result_free};
  int rc = tl_status_update(e->s, exec, tid, &u);
  if (rc != TL_OK)
    tlt_result_free(r);
  return rc;
}

static int finish(tlt_env *e, const char *exec, tl_tid tid, const char *message) {
  return finish_size(e, exec, tid, message, 64);
}

static int lose(tlt_env *e, const char *exec, tl_loss_kind kind, bool app, const char *message) {
  tl_loss_reason why = {.kind = kind, .caused_by_app = app, .exit_code = 137, .message = message};
  return tl_executor_lost(e->s, exec, &why);
}

/* The launch in the log of one attempt of one index of one stage attempt. */
static const tl_launch *find_launch(const oom_ctx *c, uint32_t stage, uint32_t stage_attempt,
                                    uint32_t index, uint32_t attempt) {
  for (size_t i = 0; i < c->nlog; i++) {
    const tl_launch *l = &c->log[i];
    if (l->stage_id == stage && l->stage_attempt == stage_attempt && l->index == index &&
        l->attempt == attempt)
      return l;
  }
  ck_abort_msg("no launch of stage %u.%u index %u attempt %u", stage, stage_attempt, index,
               attempt);
  return NULL;
}

/* Sends RUNNING for every launch in the log on exec (those that still run). */
static void run_all_on(tlt_env *e, const oom_ctx *c, const char *exec) {
  for (size_t i = 0; i < c->nlog; i++)
    if (strcmp(c->log[i].executor_id, exec) == 0)
      B_OK(update(e, exec, c->log[i].tid, TL_TASK_RUNNING, 0, NULL));
}

static char long_text[16 * 1024 + 1]; /* a 16 KiB message: longer than any buffer on a stack */

static const char *long_message(void) {
  if (long_text[0] == '\0') {
    for (size_t i = 0; i + 1 < sizeof long_text; i++)
      long_text[i] = (char)('a' + i % 26);
    long_text[sizeof long_text - 1] = '\0';
  }
  return long_text;
}

/* ---------------------------------------------------------------------------------------------
 * Configurations.
 * ------------------------------------------------------------------------------------------- */

static void cfg_max_failures_1(tl_config *cfg) { cfg->max_task_failures = 1; }
static void cfg_max_tombstones_1(tl_config *cfg) { cfg->max_tombstones = 1; }

static void cfg_heartbeat_10s(tl_config *cfg) { cfg->heartbeat_timeout_ns = 10 * TLT_SEC; }

static void cfg_pending_5s(tl_config *cfg) {
  cfg->heartbeat_timeout_ns = 0;
  cfg->pending_loss_timeout_ns = 5 * TLT_SEC;
}

static void cfg_ttl_30s(tl_config *cfg) {
  cfg->heartbeat_timeout_ns = 0;
  cfg->tombstone_ttl_ns = 30 * TLT_SEC;
}

static void cfg_everything_due(tl_config *cfg) {
  cfg->heartbeat_timeout_ns = 10 * TLT_SEC;
  cfg->pending_loss_timeout_ns = 5 * TLT_SEC;
  cfg->tombstone_ttl_ns = 8 * TLT_SEC;
  cfg->max_tombstones = 4;
}

/* ---------------------------------------------------------------------------------------------
 * tl_scheduler_new: its allocations fail; it must answer TL_ENOMEM and leave nothing allocated,
 * and no scheduler may stay counted (tl_replace_allocator works again at once).
 * ------------------------------------------------------------------------------------------- */

static void noop_released(void *ud, const tl_taskset_info *ts, void *payload) {
  (void)ud;
  (void)ts;
  (void)payload;
}

static void count_line(void *ud, const char *line) {
  (void)line;
  ++*(unsigned *)ud;
}

/* Both modes: a TL_FAIR scheduler makes its "default" pool like a TL_FIFO one (and with
 * speculation on, nothing more). */
START_TEST(oom_scheduler_new) {
  tlt_alloc_install();
  tl_callbacks cb = {.taskset_released = noop_released};
  uint64_t points[2] = {0, 0};
  for (int run = 0; run < 4; run++) {
    oom_mode m = run % 2 == 0 ? OOM_TRANSIENT : OOM_PERSISTENT;
    /* Transient with a journal and no callbacks, persistent the other way round. */
    tl_config cfg = tlt_config();
    if (run >= 2) {
      cfg.mode = TL_FAIR;
      cfg.speculation = true;
    }
    unsigned lines = 0;
    if (m == OOM_TRANSIENT) {
      cfg.journal = count_line;
      cfg.journal_ud = &lines;
    }
    tl_scheduler *s = NULL;
    uint64_t k = 1;
    for (;; k++) {
      ck_assert_uint_lt(k, 100);
      oom_arm(m, k);
      int rc = tl_scheduler_new(&cfg, m == OOM_TRANSIENT ? NULL : &cb, &s);
      bool hit = tlt_alloc_failed();
      oom_disarm();
      if (rc == TL_OK) {
        OOM_ASSERT(!hit, "tl_scheduler_new succeeded with allocation %" PRIu64 " failing", k);
        break;
      }
      OOM_ASSERT(rc == TL_ENOMEM, "tl_scheduler_new with allocation %ju failing (%s): %s",
                 (uintmax_t)k, oom_mode_name(m), tl_err_name(rc));
      OOM_ASSERT(hit, "tl_scheduler_new returned ENOMEM with nothing failing");
      OOM_ASSERT(tlt_alloc_live_blocks() == 0, "failed tl_scheduler_new leaked %zu blocks",
                 tlt_alloc_live_blocks());
      OOM_ASSERT(lines == 0, "a failed tl_scheduler_new wrote %u journal lines", lines);
      /* A scheduler that was never made is not counted: the allocator may change again. */
      tlt_alloc_install();
      points[m]++;
    }
    OOM_ASSERT(k > 1, "tl_scheduler_new allocated nothing through the allocator");
    tl_pool_status pool;
    ck_assert_int_eq(tl_pool_get(s, "default", &pool), TL_OK);
    OOM_ASSERT(lines == (m == OOM_TRANSIENT ? 2u : 0u), "tl_scheduler_new wrote %u journal lines",
               lines);
    tl_stats st;
    tl_stats_get(s, &st);
    ck_assert_uint_eq(st.mem_live_blocks, tlt_alloc_live_blocks());
    ck_assert_uint_eq(st.mem_live_bytes, tlt_alloc_live_bytes());
    ck_assert_int_eq(tl_scheduler_free(s), TL_OK);
    ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  }
  tlt_alloc_restore();
  fprintf(stderr,
          "oom tl_scheduler_new (FIFO and FAIR): swept %" PRIu64 " points (ENOMEM %" PRIu64
          " transient + %" PRIu64 " persistent)\n",
          points[0] + points[1], points[0], points[1]);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_executor_add.
 * ------------------------------------------------------------------------------------------- */

static int call_add_e1_h1_r1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return add_exec(e, "e1", "h1", "r1", 4);
}

static void build_e1_h1_r1(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(add_exec(e, "e1", "h1", "r1", 4));
}

static int call_add_e2_h1_r1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return add_exec(e, "e2", "h1", "r1", 2);
}

static int call_add_e2_h2_r1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return add_exec(e, "e2", "h2", "r1", 2);
}

/* e1 was the last executor of h1 and r1: both are gone, their tables freed, e1 a tombstone. */
static void build_rack_emptied(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", "r1", 4));
  B_OK(submit(e, 0, 0, 0, 4));
  B_OK(offer(e, c, "e1", 4, 4));
  B_OK(lose(e, "e1", TL_LOSS_EXITED, true, "gone"));
}

/* The add of executor number param (from 0) expands executors_by_id's buckets (found by
 * probe_executor_expansion). Every earlier executor is a tombstone, so the add also makes the
 * host and rack tables again, after the executor's own entry went in. */
static void build_executor_table_full(tlt_env *e, oom_ctx *c) {
  for (size_t i = 0; i < c->param; i++) {
    char id[32];
    snprintf(id, sizeof id, "x%zu", i);
    B_OK(add_exec(e, id, "hx", NULL, 1));
  }
  for (size_t i = 0; i < c->param; i++) {
    char id[32];
    snprintf(id, sizeof id, "x%zu", i);
    B_OK(lose(e, id, TL_LOSS_KILLED, false, NULL));
  }
}

static int call_add_expanding(tlt_env *e, oom_ctx *c) {
  char id[32];
  snprintf(id, sizeof id, "x%zu", c->param);
  return add_exec(e, id, "h-new", "r-new", 2);
}

/* The index of the first executor add after the first whose allocations exceed the usual
 * two (its name and record): the one that expands executors_by_id. */
static size_t probe_executor_expansion(void) {
  tlt_env *e = tlt_new(NULL);
  size_t found = 0;
  for (size_t i = 0; i < 2000 && found == 0; i++) {
    char id[32];
    snprintf(id, sizeof id, "x%zu", i);
    uint64_t calls = tlt_alloc_calls();
    B_OK(add_exec(e, id, "hx", NULL, 1));
    if (i > 0 && tlt_alloc_calls() - calls > 2)
      found = i;
  }
  OOM_ASSERT(found > 0, "executors_by_id never expanded");
  oom_finish_env(e, "probe");
  return found;
}

START_TEST(oom_executor_add) {
  tlt_alloc_install();
  size_t expanding = probe_executor_expansion();
  tlt_alloc_restore();
  const oom_scenario sc[] = {
      {"tl_executor_add", "first executor: new host, new rack, every table made", NULL, NULL,
       call_add_e1_h1_r1, OOM_ALLOCATES, 0},
      {"tl_executor_add", "second executor of an existing host", NULL, build_e1_h1_r1,
       call_add_e2_h1_r1, OOM_ALLOCATES, 0},
      {"tl_executor_add", "a new host in an existing rack", NULL, build_e1_h1_r1, call_add_e2_h2_r1,
       OOM_ALLOCATES, 0},
      {"tl_executor_add", "re-adding the host and rack whose last executor was lost", NULL,
       build_rack_emptied, call_add_e2_h1_r1, OOM_ALLOCATES, 0},
      {"tl_executor_add", "expanding executors_by_id, host and rack tables made again", NULL,
       build_executor_table_full, call_add_expanding, OOM_ALLOCATES, expanding},
  };
  SWEEP_ALL("tl_executor_add", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_submit.
 * ------------------------------------------------------------------------------------------- */

static int call_submit_stage0(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit(e, 0, 0, 0, 4);
}

static void build_stage0(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(submit(e, 0, 0, 0, 4));
}

static int call_submit_stage1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit(e, 1, 0, 1, 3);
}

static int call_submit_stage0_attempt1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit(e, 0, 1, 0, 4);
}

/* Stage 0 attempt 0 runs two attempts: a new attempt makes it zombie but cannot release it. */
static void build_stage0_running(tlt_env *e, oom_ctx *c) {
  build_stage0(e, c);
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(update(e, "e1", c->log[0].tid, TL_TASK_RUNNING, 0, NULL));
}

/* Stages 0 .. param-1 are submitted; stage param's submission expands a table. */
static void build_stages(tlt_env *e, oom_ctx *c) {
  for (size_t i = 0; i < c->param; i++)
    B_OK(submit(e, (uint32_t)i, 0, (uint32_t)i, 1));
}

static int call_submit_next_stage(tlt_env *e, oom_ctx *c) {
  return submit(e, (uint32_t)c->param, 0, (uint32_t)c->param, 2);
}

/* The indices of the first two submissions (of new stages, one each) whose allocations exceed
 * the usual two (the task set and its stage): they expand tasksets_by_id or stages_by_id. */
static void probe_submit_expansions(size_t found[2]) {
  tlt_env *e = tlt_new(NULL);
  size_t n = 0;
  for (size_t i = 0; i < 2000 && n < 2; i++) {
    uint64_t calls = tlt_alloc_calls();
    B_OK(submit(e, (uint32_t)i, 0, (uint32_t)i, i == 0 ? 1 : 2));
    if (i > 0 && tlt_alloc_calls() - calls > 2)
      found[n++] = i;
  }
  OOM_ASSERT(n == 2, "the task set and stage tables expanded %zu times", n);
  oom_finish_env(e, "probe");
}

START_TEST(oom_submit) {
  size_t expanding[2];
  tlt_alloc_install();
  probe_submit_expansions(expanding);
  tlt_alloc_restore();
  const oom_scenario sc[] = {
      {"tl_submit", "first task set: both tables made", NULL, NULL, call_submit_stage0,
       OOM_ALLOCATES, 0},
      {"tl_submit", "a new stage beside another", NULL, build_stage0, call_submit_stage1,
       OOM_ALLOCATES, 0},
      {"tl_submit", "superseding an idle attempt, released in the same call", NULL, build_stage0,
       call_submit_stage0_attempt1, OOM_ALLOCATES, 0},
      {"tl_submit", "superseding an attempt with running attempts", NULL, build_stage0_running,
       call_submit_stage0_attempt1, OOM_ALLOCATES, 0},
      {"tl_submit", "the first submission that expands a table", NULL, build_stages,
       call_submit_next_stage, OOM_ALLOCATES, expanding[0]},
      {"tl_submit", "the second submission that expands a table", NULL, build_stages,
       call_submit_next_stage, OOM_ALLOCATES, expanding[1]},
  };
  SWEEP_ALL("tl_submit", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_resource_offers.
 * ------------------------------------------------------------------------------------------- */

static void build_e1_stage0_6(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(submit(e, 0, 0, 0, 6));
}

static int call_offer_e1_4(tlt_env *e, oom_ctx *c) { return offer(e, c, "e1", 4, 8); }

/* A spare attempt record kept while nothing runs: e1 ran two attempts, one finished (its record
 * kept as a spare: the other still ran), then e1 went PENDING_LOSS and froze the other. The
 * round on e2 takes the spare first; a round that fails must put it back, not free it. */
static void build_spare_with_only_frozen(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(submit(e, 0, 0, 0, 4));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(finish(e, "e1", c->log[0].tid, NULL));
  B_OK(lose(e, "e1", TL_LOSS_PENDING, false, NULL));
}

static int call_offer_e2_spare(tlt_env *e, oom_ctx *c) { return offer(e, c, "e2", 2, 2); }

enum { WIDE = 20 }; /* executors of the wide round: more offers than the 16 on the stack */
static const char *const wide_ids[WIDE] = {"w0",  "w1",  "w2",  "w3",  "w4",  "w5",  "w6",
                                           "w7",  "w8",  "w9",  "w10", "w11", "w12", "w13",
                                           "w14", "w15", "w16", "w17", "w18", "w19"};

/* Twenty executors of two cores, a task set of 50: a round of 20 offers launches 40, more than
 * the 16 prepared records on the stack and the event queue's 32 slots. */
static void build_wide(tlt_env *e, oom_ctx *c) {
  (void)c;
  for (int i = 0; i < WIDE; i++)
    B_OK(add_exec(e, wide_ids[i], i < 10 ? "h1" : "h2", "r1", 2));
  B_OK(submit(e, 0, 0, 0, 50));
  B_OK(submit(e, 1, 0, 1, 5));
}

static int call_offer_wide(tlt_env *e, oom_ctx *c) {
  tl_offer o[WIDE];
  for (int i = 0; i < WIDE; i++) {
    o[i].executor_id = wide_ids[i];
    o[i].cores = 2;
  }
  return offers(e, c, o, WIDE, 64);
}

enum { BIG = 400 }; /* cores of the big executor, tasks of its task set */

/* One executor with 400 cores and a task set of 400; the builder launches param attempts, so
 * the call's 24 launches include the one whose tid expands attempts_by_tid's buckets. */
static void build_tid_table_full(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "big", "h1", NULL, BIG));
  B_OK(submit(e, 0, 0, 0, BIG));
  if (c->param > 0)
    B_OK(offer(e, c, "big", BIG, c->param));
}

static int call_offer_big_24(tlt_env *e, oom_ctx *c) { return offer(e, c, "big", BIG, 24); }

/* The number of launches before the one that expands attempts_by_tid (one launch per round:
 * a round allocates one record, and the expanding one its new bucket array as well). */
static size_t probe_tid_expansion(void) {
  oom_ctx *c = oom_ctx_new();
  tlt_env *e = tlt_new(NULL);
  B_OK(add_exec(e, "big", "h1", NULL, BIG));
  B_OK(submit(e, 0, 0, 0, BIG));
  size_t found = 0;
  for (size_t i = 0; i < BIG && found == 0; i++) {
    uint64_t calls = tlt_alloc_calls();
    B_OK(offer(e, c, "big", 1, 1));
    OOM_ASSERT(c->nout == 1, "probe round launched %zu", c->nout);
    if (i > 0 && tlt_alloc_calls() - calls > 1)
      found = i;
  }
  OOM_ASSERT(found > 12 && found + 12 < BIG, "attempts_by_tid expanded at launch %zu", found);
  oom_finish_env(e, "probe");
  free(c);
  return found;
}

/* Offers from a decommissioning, a pending-loss, an unknown and a removed executor beside a
 * usable one: the rejected ones are counted only if the round succeeds. */
static void build_rejected_offers(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(add_exec(e, "e2", "h1", NULL, 4));
  B_OK(add_exec(e, "e3", "h2", NULL, 4));
  B_OK(add_exec(e, "e4", "h2", NULL, 4));
  B_OK(tl_executor_decommission(e->s, "e2", NULL));
  B_OK(lose(e, "e3", TL_LOSS_PENDING, false, NULL));
  B_OK(lose(e, "e4", TL_LOSS_EXITED, false, NULL));
  B_OK(submit(e, 0, 0, 0, 8));
}

static int call_offer_mixed(tlt_env *e, oom_ctx *c) {
  tl_offer o[] = {{"nobody", 4}, {"e2", 4}, {"e1", 4}, {"e3", 4}, {"e4", 4}};
  return offers(e, c, o, 5, 8);
}

/* Offer shuffle: the rounds above in a drawn order (its copy on the stack up to 16 offers, in
 * one block past that); a round that fails leaves the sequence where it was, or the retry would
 * launch elsewhere than the reference. */
static void cfg_offer_shuffle(tl_config *cfg) {
  cfg->offer_shuffle = true;
  cfg->offer_shuffle_seed = 31;
}

START_TEST(oom_resource_offers) {
  tlt_alloc_install();
  size_t expanding = probe_tid_expansion();
  tlt_alloc_restore();
  const oom_scenario sc[] = {
      {"tl_resource_offers", "first launches: the tid table made", NULL, build_e1_stage0_6,
       call_offer_e1_4, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "20 offers, 40 launches: heap arrays, event queue grown", NULL,
       build_wide, call_offer_wide, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "24 launches expanding the tid table", NULL, build_tid_table_full,
       call_offer_big_24, OOM_ALLOCATES, expanding - 12},
      {"tl_resource_offers", "rejected offers beside a usable one", NULL, build_rejected_offers,
       call_offer_mixed, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "a spare record while only frozen attempts remain", NULL,
       build_spare_with_only_frozen, call_offer_e2_spare, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "shuffled: 20 offers, 40 launches", cfg_offer_shuffle, build_wide,
       call_offer_wide, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "shuffled: rejected offers beside a usable one", cfg_offer_shuffle,
       build_rejected_offers, call_offer_mixed, OOM_ALLOCATES, 0},
  };
  SWEEP_ALL("tl_resource_offers", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_status_update.
 * ------------------------------------------------------------------------------------------- */

/* e1 runs four attempts of stage 0 (four tasks), the first two RUNNING; e2 is idle. */
static void build_four_on_e1(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(add_exec(e, "e2", "h2", NULL, 4));
  B_OK(submit(e, 0, 0, 0, 4));
  B_OK(offer(e, c, "e1", 4, 4));
  B_OK(update(e, "e1", c->log[0].tid, TL_TASK_RUNNING, 0, NULL));
  B_OK(update(e, "e1", c->log[1].tid, TL_TASK_RUNNING, 0, NULL));
}

static int call_running_l2(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", c->log[2].tid, TL_TASK_RUNNING, 0, NULL);
}

static int call_finish_l0(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", c->log[0].tid, "task 0 done");
}

static int call_finish_l0_long(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", c->log[0].tid, long_message());
}

static int call_fail_l1(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", c->log[1].tid, TL_TASK_FAILED, TL_END_EXCEPTION,
                "java.lang.NullPointerException");
}

static int call_fail_launching_l3(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", c->log[3].tid, TL_TASK_FAILED, TL_END_COMMIT_DENIED, "commit denied");
}

static int call_fetch_failed_l1(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", c->log[1].tid, TL_TASK_FAILED, TL_END_FETCH_FAILED,
                "shuffle 3 map 7 missing");
}

static int call_killed_l3(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", c->log[3].tid, TL_TASK_KILLED, 0, NULL);
}

/* A one-task stage whose only attempt is RUNNING: its failure aborts and releases it. */
static void build_one_task(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(submit(e, 0, 0, 0, 1));
  B_OK(submit(e, 1, 0, 1, 2));
  B_OK(offer(e, c, "e1", 1, 1));
  B_OK(update(e, "e1", c->log[0].tid, TL_TASK_RUNNING, 0, NULL));
}

static int call_fail_result_lost_l0(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", c->log[0].tid, TL_TASK_FAILED, TL_END_RESULT_LOST, "result lost");
}

/* Stage 0 attempt 0 is zombie (superseded) with one attempt left running. */
static void build_zombie_last_attempt(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(submit(e, 0, 0, 0, 2));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(submit(e, 0, 1, 0, 2));
  B_OK(finish(e, "e1", c->log[0].tid, NULL));
}

static int call_finish_l1(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", c->log[1].tid, "last attempt of a zombie");
}

START_TEST(oom_status_update) {
  const oom_scenario sc[] = {
      {"tl_status_update", "RUNNING", NULL, build_four_on_e1, call_running_l2, OOM_NO_ALLOC, 0},
      {"tl_status_update", "FINISHED with a message", NULL, build_four_on_e1, call_finish_l0,
       OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED with a 16 KiB message", NULL, build_four_on_e1,
       call_finish_l0_long, OOM_ALLOCATES, 0},
      {"tl_status_update", "FAILED, the index re-queued", NULL, build_four_on_e1, call_fail_l1,
       OOM_ALLOCATES, 0},
      {"tl_status_update", "FAILED of a LAUNCHING attempt", NULL, build_four_on_e1,
       call_fail_launching_l3, OOM_ALLOCATES, 0},
      {"tl_status_update", "FAILED, the task set aborted", cfg_max_failures_1, build_four_on_e1,
       call_fail_l1, OOM_ALLOCATES, 0},
      {"tl_status_update", "FAILED, the task set aborted and released", cfg_max_failures_1,
       build_one_task, call_fail_result_lost_l0, OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED, the last attempt of a zombie: released", NULL,
       build_zombie_last_attempt, call_finish_l1, OOM_ALLOCATES, 0},
      {"tl_status_update", "FETCH_FAILED", NULL, build_four_on_e1, call_fetch_failed_l1,
       OOM_ALLOCATES, 0},
      {"tl_status_update", "KILLED without a message", NULL, build_four_on_e1, call_killed_l3,
       OOM_NO_ALLOC, 0},
  };
  SWEEP_ALL("tl_status_update", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_status_updates: TL_ENOMEM for one update leaves that update unapplied with its code and
 * the rest applied, and the batch answers TL_OK; so the sweep's rule is per update. At every
 * allocation point, in both modes, with and without a journal: the batch's state must equal
 * that of a fresh scheduler given, one call each, exactly the updates whose code was not
 * TL_ENOMEM (and each such call must answer that code); then the failed updates, made again one
 * by one with nothing failing, are applied. Nothing failing, it answers the codes below.
 * ------------------------------------------------------------------------------------------- */

#define OOM_BATCH 6
static void batch_of_e1(const oom_ctx *c, tl_tid t[OOM_BATCH], tl_update u[OOM_BATCH]) {
  const tl_tid tids[OOM_BATCH] = {c->log[0].tid, c->log[1].tid, c->log[2].tid,
                                  c->log[0].tid, c->log[3].tid, 424242};
  const tl_update ups[OOM_BATCH] = {
      {.state = TL_TASK_FINISHED, .message = "task 0 done"},
      {.state = TL_TASK_FAILED, .failure = TL_END_EXCEPTION, .message = "java.lang.Error"},
      {.state = TL_TASK_RUNNING},
      {.state = TL_TASK_FINISHED, .message = "again: stale"},
      {.state = TL_TASK_KILLED, .message = "killed"},
      {.state = TL_TASK_FINISHED},
  };
  memcpy(t, tids, sizeof tids);
  memcpy(u, ups, sizeof ups);
}

START_TEST(oom_status_updates) {
  tlt_alloc_install();
  const oom_scenario sc = {
      "tl_status_updates", "a batch of six", NULL, build_four_on_e1, NULL, 0, 0};
  const int want[OOM_BATCH] = {TL_OK, TL_OK, TL_OK, TL_ESTALE, TL_OK, TL_ESTALE};
  uint64_t points = 0, enomem = 0;
  for (int journal = 0; journal <= 1; journal++) {
    oom_ctx *c = oom_ctx_new(), *cf = oom_ctx_new();
    c->journal = cf->journal = journal != 0;
    tl_tid t[OOM_BATCH];
    tl_update u[OOM_BATCH];
    int results[OOM_BATCH];
    /* The reference: nothing failing. */
    tlt_env *e = oom_fresh(&sc, c);
    batch_of_e1(c, t, u);
    uint64_t calls = tlt_alloc_calls();
    ck_assert_int_eq(tl_status_updates(e->s, "e1", t, u, OOM_BATCH, results), TL_OK);
    uint64_t allocs = tlt_alloc_calls() - calls;
    ck_assert_uint_gt(allocs, 0);
    for (size_t i = 0; i < OOM_BATCH; i++)
      ck_assert_int_eq(results[i], want[i]);
    TLT_CHECK(e);
    oom_finish_env(e, "tl_status_updates, nothing failing");
    for (int m = OOM_TRANSIENT; m <= OOM_PERSISTENT; m++) {
      for (uint64_t k = 1; k <= allocs; k++) {
        char what[160];
        snprintf(what, sizeof what, "tl_status_updates%s, allocation %" PRIu64 " failing, %s",
                 journal ? ", journaled" : "", k, oom_mode_name((oom_mode)m));
        e = oom_fresh(&sc, c);
        oom_arm((oom_mode)m, k);
        int rc = tl_status_updates(e->s, "e1", t, u, OOM_BATCH, results);
        bool hit = tlt_alloc_failed();
        oom_disarm();
        OOM_ASSERT(rc == TL_OK, "%s: returned %s", what, tl_err_name(rc));
        OOM_ASSERT(hit, "%s: no allocation failed", what);
        TLT_CHECK(e);
        points++;
        oom_state *got = oom_state_take(e, true);
        /* The failed ones again, nothing failing: each is applied now (its code is what the
         * ledger says of it then: a later update of the batch may have ended its attempt). */
        for (size_t i = 0; i < OOM_BATCH; i++)
          if (results[i] == TL_ENOMEM) {
            int again = tl_status_update(e->s, "e1", t[i], &u[i]);
            OOM_ASSERT(again != TL_ENOMEM, "%s: update %zu again: %s", what, i, tl_err_name(again));
          }
        TLT_CHECK(e);
        oom_finish_env(e, what);
        /* The same updates, one call each, but for those that ran out of memory. */
        tlt_env *f = oom_fresh(&sc, cf);
        for (size_t i = 0; i < OOM_BATCH; i++) {
          if (results[i] == TL_ENOMEM) {
            enomem++;
            continue;
          }
          int one = tl_status_update(f->s, "e1", t[i], &u[i]);
          OOM_ASSERT(one == results[i], "%s: update %zu alone: %s, in the batch %s", what, i,
                     tl_err_name(one), tl_err_name(results[i]));
        }
        oom_state *alone = oom_state_take(f, true);
        oom_state_assert_same(alone, got, what, false);
        oom_state_free(alone);
        oom_state_free(got);
        oom_finish_env(f, what);
      }
    }
    oom_ctx_free(c);
    oom_ctx_free(cf);
  }
  ck_assert_uint_gt(enomem, 0);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
  printf("oom tl_status_updates: %" PRIu64 " allocation points, %" PRIu64
         " updates left unapplied with TL_ENOMEM\n",
         points, enomem);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_executor_lost.
 * ------------------------------------------------------------------------------------------- */

/* e1 (h1, r1) and e2 (h2, r2) run three attempts each of stage 0, two of e1's RUNNING. */
static void build_two_racks_running(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", "r1", 3));
  B_OK(add_exec(e, "e2", "h2", "r2", 3));
  B_OK(submit(e, 0, 0, 0, 6));
  B_OK(offer(e, c, "e1", 3, 3));
  B_OK(offer(e, c, "e2", 3, 3));
  B_OK(update(e, "e1", c->log[0].tid, TL_TASK_RUNNING, 0, NULL));
  B_OK(update(e, "e1", c->log[1].tid, TL_TASK_RUNNING, 0, NULL));
}

static int call_lose_e1_pending(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_PENDING, false, "heartbeat missed");
}

static int call_lose_e1_pending_no_message(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_PENDING, false, NULL);
}

static int call_lose_e1_process_lost(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_PROCESS_LOST, true, "connection reset");
}

static int call_lose_e1_long(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_EXITED, true, long_message());
}

static int call_lose_e1_killed(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_KILLED, false, "preempted");
}

static int call_lose_e1_exited(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_EXITED, true, "Container killed: exit 137");
}

static int call_lose_e1_decommissioned(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_DECOMMISSIONED, false, "decommission finished");
}

/* As build_two_racks_running with e0 lost before: with max_tombstones 1 its tombstone is
 * evicted by e1's removal. */
static void build_tombstone_to_evict(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e0", "h0", NULL, 1));
  B_OK(lose(e, "e0", TL_LOSS_EXITED, false, "first to go"));
  build_two_racks_running(e, c);
}

/* e1 is pending loss with its attempts frozen. */
static void build_e1_pending(tlt_env *e, oom_ctx *c) {
  build_two_racks_running(e, c);
  B_OK(lose(e, "e1", TL_LOSS_PENDING, false, "unreachable"));
}

static void build_e1_decommissioning(tlt_env *e, oom_ctx *c) {
  build_two_racks_running(e, c);
  B_OK(tl_executor_decommission(e->s, "e1", "scale down"));
}

/* Three task sets frozen on e1 (16 attempts, all RUNNING), with max_task_failures 1: stage 2
 * attempt 0 is zombie (superseded) with every attempt there, stage 0 has every attempt there
 * (aborted and released by the loss), stage 1 half there and half on e2 (aborted, stays). The
 * second phase reserves 3 x 16 + 1 events, past the queue's 32 slots. */
static void build_many_frozen(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", "r1", 16));
  B_OK(add_exec(e, "e2", "h2", "r1", 4));
  B_OK(submit(e, 2, 0, 0, 4));
  B_OK(submit(e, 0, 0, 1, 8));
  B_OK(submit(e, 1, 0, 2, 8));
  B_OK(offer(e, c, "e1", 16, 16));
  B_OK(offer(e, c, "e2", 4, 4));
  run_all_on(e, c, "e1");
  B_OK(submit(e, 2, 1, 0, 4));
  B_OK(lose(e, "e1", TL_LOSS_PENDING, false, NULL));
}

static int call_pending_again(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_PENDING, false, "still unreachable");
}

START_TEST(oom_executor_lost) {
  const oom_scenario sc[] = {
      {"tl_executor_lost", "TL_LOSS_PENDING: freeze, host and rack freed", NULL,
       build_two_racks_running, call_lose_e1_pending, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "TL_LOSS_PENDING without a message", NULL, build_two_racks_running,
       call_lose_e1_pending_no_message, OOM_NO_ALLOC, 0},
      {"tl_executor_lost", "one phase, a new tombstone", NULL, build_two_racks_running,
       call_lose_e1_process_lost, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "one phase evicting the oldest tombstone", cfg_max_tombstones_1,
       build_tombstone_to_evict, call_lose_e1_killed, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "one phase with a 16 KiB message", NULL, build_two_racks_running,
       call_lose_e1_long, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "one phase of a decommissioning executor", NULL,
       build_e1_decommissioning, call_lose_e1_decommissioned, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "second phase", NULL, build_e1_pending, call_lose_e1_exited,
       OOM_ALLOCATES, 0},
      {"tl_executor_lost", "second phase over three task sets: aborts, releases, queue grown",
       cfg_max_failures_1, build_many_frozen, call_lose_e1_exited, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "TL_LOSS_PENDING again while pending", NULL, build_e1_pending,
       call_pending_again, OOM_NO_ALLOC, 0},
  };
  SWEEP_ALL("tl_executor_lost", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_executor_heartbeat and tl_executor_decommission.
 * ------------------------------------------------------------------------------------------- */

static void build_two_racks_later(tlt_env *e, oom_ctx *c) {
  build_two_racks_running(e, c);
  e->now += 5 * TLT_SEC;
}

static int call_heartbeat_e1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_executor_heartbeat(e->s, "e1");
}

static int call_decommission_e1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_executor_decommission(e->s, "e1", "node draining");
}

static int call_decommission_e1_long(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_executor_decommission(e->s, "e1", long_message());
}

static int call_decommission_e1_no_message(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_executor_decommission(e->s, "e1", NULL);
}

START_TEST(oom_heartbeat_and_decommission) {
  const oom_scenario sc[] = {
      {"tl_executor_heartbeat", "a running executor", NULL, build_two_racks_later,
       call_heartbeat_e1, OOM_NO_ALLOC, 0},
      {"tl_executor_decommission", "with a message", NULL, build_two_racks_running,
       call_decommission_e1, OOM_ALLOCATES, 0},
      {"tl_executor_decommission", "with a 16 KiB message", NULL, build_two_racks_running,
       call_decommission_e1_long, OOM_ALLOCATES, 0},
      {"tl_executor_decommission", "without a message", NULL, build_two_racks_running,
       call_decommission_e1_no_message, OOM_NO_ALLOC, 0},
      {"tl_executor_decommission", "again while decommissioning", NULL, build_e1_decommissioning,
       call_decommission_e1, OOM_NO_ALLOC, 0},
  };
  SWEEP_ALL("heartbeat and decommission", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_kill_task, tl_kill_stage, tl_cancel_stage, tl_partition_completed.
 * ------------------------------------------------------------------------------------------- */

static int call_kill_l1(tlt_env *e, oom_ctx *c) {
  return tl_kill_task(e->s, c->log[1].tid, true, "speculative copy won");
}

static int call_kill_l1_no_reason(tlt_env *e, oom_ctx *c) {
  return tl_kill_task(e->s, c->log[1].tid, false, NULL);
}

/* Stage 0: attempt 0 is zombie with 30 attempts running on e1; attempt 1 runs 10 on e1 and 10
 * frozen on e2 (pending loss). Stage 1 runs 2 on e3. 40 attempts of stage 0 can be killed. */
static void build_stage_with_zombie(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", "r1", 40));
  B_OK(add_exec(e, "e2", "h2", "r1", 10));
  B_OK(add_exec(e, "e3", "h3", NULL, 10));
  B_OK(submit(e, 0, 0, 0, 30));
  B_OK(offer(e, c, "e1", 30, 30));
  B_OK(submit(e, 0, 1, 0, 20));
  tl_offer o[] = {{"e1", 10}, {"e2", 10}};
  B_OK(offers(e, c, o, 2, 20));
  B_OK(lose(e, "e2", TL_LOSS_PENDING, false, "unreachable"));
  B_OK(submit(e, 1, 0, 1, 2));
  B_OK(offer(e, c, "e3", 2, 2));
}

static int call_kill_stage0(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_kill_stage(e->s, 0, true, "stage killed");
}

static int call_kill_stage0_no_reason(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_kill_stage(e->s, 0, false, NULL);
}

static int call_cancel_stage0(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_cancel_stage(e->s, 0, "job 0 cancelled");
}

/* Stage 0: attempt 0 zombie with only frozen attempts (e1 pending loss), attempt 1 active with
 * nothing running; stage 1 untouched. Cancelling stage 0 releases attempt 1 at once. */
static void build_stage_frozen_zombie(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(submit(e, 0, 0, 0, 2));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(lose(e, "e1", TL_LOSS_PENDING, false, NULL));
  B_OK(submit(e, 0, 1, 0, 2));
  B_OK(submit(e, 1, 0, 1, 2));
  B_OK(offer(e, c, "e2", 2, 2)); /* stage 0 attempt 1 takes both cores */
  B_OK(finish(e, "e2", c->log[2].tid, NULL));
  B_OK(finish(e, "e2", c->log[3].tid, NULL));
}

static int call_cancel_stage0_no_reason(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_cancel_stage(e->s, 0, NULL);
}

/* Stage 0 has two indices done and the last pending, nothing running. */
static void build_last_index_pending(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(submit(e, 0, 0, 0, 3));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(finish(e, "e1", c->log[0].tid, NULL));
  B_OK(finish(e, "e1", c->log[1].tid, NULL));
}

static int call_partition_2(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_partition_completed(e->s, 0, 2);
}

static int call_partition_1(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_partition_completed(e->s, 0, 1);
}

START_TEST(oom_kills_cancel_and_partitions) {
  const oom_scenario sc[] = {
      {"tl_kill_task", "with a reason", NULL, build_four_on_e1, call_kill_l1, OOM_ALLOCATES, 0},
      {"tl_kill_task", "without a reason", NULL, build_four_on_e1, call_kill_l1_no_reason,
       OOM_NO_ALLOC, 0},
      {"tl_kill_stage", "40 attempts of an active and a zombie attempt, frozen ones left out", NULL,
       build_stage_with_zombie, call_kill_stage0, OOM_ALLOCATES, 0},
      {"tl_kill_stage", "the same without a reason", NULL, build_stage_with_zombie,
       call_kill_stage0_no_reason, OOM_ALLOCATES, 0},
      {"tl_cancel_stage", "running and frozen attempts, active and zombie attempts", NULL,
       build_stage_with_zombie, call_cancel_stage0, OOM_ALLOCATES, 0},
      {"tl_cancel_stage", "an idle active attempt released, a frozen zombie kept", NULL,
       build_stage_frozen_zombie, call_cancel_stage0, OOM_ALLOCATES, 0},
      {"tl_cancel_stage", "the same without a reason", NULL, build_stage_frozen_zombie,
       call_cancel_stage0_no_reason, OOM_NO_ALLOC, 0},
      {"tl_partition_completed", "the last index: zombie and released", NULL,
       build_last_index_pending, call_partition_2, OOM_NO_ALLOC, 0},
      {"tl_partition_completed", "a running index", NULL, build_four_on_e1, call_partition_1,
       OOM_NO_ALLOC, 0},
  };
  SWEEP_ALL("kills, cancel and partitions", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_tick.
 * ------------------------------------------------------------------------------------------- */

static int call_tick(tlt_env *e, oom_ctx *c) {
  c->tick = tl_tick(e->s);
  return TL_OK;
}

static const char *const hb_ids[] = {"e0", "e1", "e2", "e3", "e4", "e5"};

/* Six executors of twelve cores, each running twelve attempts (half RUNNING), silent since
 * registration at 1 s; the clock is at 11 s, when all six expire. Each loss reserves 38 events,
 * so the queue grows twice during the tick. */
static void build_silent_executors(tlt_env *e, oom_ctx *c) {
  for (size_t i = 0; i < 6; i++)
    B_OK(add_exec(e, hb_ids[i], i % 2 == 0 ? "h0" : "h1", "r0", 12));
  B_OK(submit(e, 0, 0, 0, 72));
  for (size_t i = 0; i < 6; i++)
    B_OK(offer(e, c, hb_ids[i], 12, 12));
  for (size_t i = 0; i < c->nlog; i += 2)
    B_OK(update(e, c->log[i].executor_id, c->log[i].tid, TL_TASK_RUNNING, 0, NULL));
  e->now = 11 * TLT_SEC;
}

/* Five executors of twelve cores, pending loss since 1 s with twelve frozen attempts each; the
 * clock is at 6 s, past every pending-loss deadline. */
static void build_pending_deadlines(tlt_env *e, oom_ctx *c) {
  for (size_t i = 0; i < 5; i++)
    B_OK(add_exec(e, hb_ids[i], "h0", NULL, 12));
  B_OK(submit(e, 0, 0, 0, 30));
  B_OK(submit(e, 1, 0, 1, 30));
  for (size_t i = 0; i < 5; i++)
    B_OK(offer(e, c, hb_ids[i], 12, 12));
  for (size_t i = 0; i < c->nlog; i += 3)
    B_OK(update(e, c->log[i].executor_id, c->log[i].tid, TL_TASK_RUNNING, 0, NULL));
  for (size_t i = 0; i < 5; i++)
    B_OK(lose(e, hb_ids[i], TL_LOSS_PENDING, false, NULL));
  e->now = 6 * TLT_SEC;
}

/* Two tombstones past their time to live, nothing else due. */
static void build_old_tombstones(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(add_exec(e, "e1", "h1", NULL, 1));
  B_OK(add_exec(e, "e2", "h1", NULL, 1));
  B_OK(add_exec(e, "e3", "h1", NULL, 1));
  B_OK(lose(e, "e1", TL_LOSS_EXITED, false, NULL));
  B_OK(lose(e, "e2", TL_LOSS_EXITED, false, NULL));
  e->now = 40 * TLT_SEC;
  B_OK(tl_executor_heartbeat(e->s, "e3"));
}

/* At 12 s, with heartbeats due at 11 s, pending-loss deadlines at 8 s and tombstones living
 * 8 s: e1 and e2 are tombstones since 1 s, e3 pending loss since 3 s with frozen attempts, e4
 * and e5 silent with running attempts. One tick does all of it. */
static void build_everything_due(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 1));
  B_OK(add_exec(e, "e2", "h1", NULL, 1));
  B_OK(lose(e, "e1", TL_LOSS_EXITED, false, NULL));
  B_OK(lose(e, "e2", TL_LOSS_EXITED, false, NULL));
  B_OK(add_exec(e, "e3", "h3", "r1", 8));
  B_OK(add_exec(e, "e4", "h4", "r1", 8));
  B_OK(add_exec(e, "e5", "h5", NULL, 8));
  B_OK(submit(e, 0, 0, 0, 24));
  B_OK(offer(e, c, "e3", 8, 8));
  B_OK(offer(e, c, "e4", 8, 8));
  B_OK(offer(e, c, "e5", 8, 8));
  run_all_on(e, c, "e4");
  e->now = 3 * TLT_SEC;
  B_OK(lose(e, "e3", TL_LOSS_PENDING, false, NULL));
  e->now = 12 * TLT_SEC;
}

START_TEST(oom_tick) {
  const oom_scenario sc[] = {
      {"tl_tick", "heartbeat expiry of six executors with running attempts", cfg_heartbeat_10s,
       build_silent_executors, call_tick, OOM_TICK | OOM_ALLOCATES, 0},
      {"tl_tick", "pending-loss deadlines of five executors", cfg_pending_5s,
       build_pending_deadlines, call_tick, OOM_TICK | OOM_ALLOCATES, 0},
      {"tl_tick", "tombstone expiry", cfg_ttl_30s, build_old_tombstones, call_tick,
       OOM_TICK | OOM_NO_ALLOC, 0},
      {"tl_tick", "heartbeat, pending-loss and tombstone expiry at once", cfg_everything_due,
       build_everything_due, call_tick, OOM_TICK, 0},
  };
  SWEEP_ALL("tl_tick", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Locality: a submission with preferences allocates its block, its keys' table and the places
 * it names that do not exist yet; no other call allocates for locality.
 * ------------------------------------------------------------------------------------------- */

enum { MANY_PLACES = 40 }; /* hosts named by one task set: more than a table's first buckets */

static char place_hosts[MANY_PLACES][8];

/* Stage `stage` of four tasks: 0 prefers (h1, e1), 1 prefers h2 and h9, 2 none, 3 h1 and
 * (with many) the hosts p0..p39. */
static int submit_local(tlt_env *e, uint32_t stage, bool many) {
  static tl_location p0[] = {{"h1", "e1"}}, p1[] = {{"h2", NULL}, {"h9", NULL}};
  static tl_location p3[MANY_PLACES + 1];
  p3[0].host = "h1";
  p3[0].executor_id = NULL;
  for (int i = 0; i < MANY_PLACES; i++) {
    snprintf(place_hosts[i], sizeof place_hosts[i], "p%d", i);
    p3[i + 1].host = place_hosts[i];
    p3[i + 1].executor_id = NULL;
  }
  tl_task_desc tasks[4] = {{p0, 1}, {p1, 2}, {NULL, 0}, {p3, many ? MANY_PLACES + 1 : 1}};
  tl_taskset_desc d = {.stage_id = stage, .ntasks = 4, .tasks = tasks};
  return tlt_submit_desc_rc(e, &d, NULL);
}

static void build_local_executors(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(add_exec(e, "e1", "h1", "r1", 2));
  B_OK(add_exec(e, "e2", "h2", "r1", 2));
}

static void build_local_stage0(tlt_env *e, oom_ctx *c) {
  build_local_executors(e, c);
  B_OK(submit_local(e, 0, false));
}

/* Stage 0 with preferences, one task launched on e1 and its wait at NODE_LOCAL running. */
static void build_local_waiting(tlt_env *e, oom_ctx *c) {
  build_local_stage0(e, c);
  B_OK(offer(e, c, "e1", 1, 4));
  B_OK(add_exec(e, "e3", "h3", NULL, 2));
}

static int call_submit_local(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_local(e, 1, false);
}

static int call_submit_local_many(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_local(e, 1, true);
}

static int call_offer_local(tlt_env *e, oom_ctx *c) {
  tl_offer o[] = {{"e1", 2}, {"e2", 2}};
  return offers(e, c, o, 2, 8);
}

static int call_add_preferred(tlt_env *e, oom_ctx *c) {
  (void)c;
  return add_exec(e, "e9", "h9", "r1", 2);
}

static int call_lose_preferred(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_EXITED, false, NULL);
}

/* The builder leaves the clock at 1 s; the wait at NODE_LOCAL ends at 4 s. A retried call
 * ticks at the same time. */
static int call_tick_after_wait(tlt_env *e, oom_ctx *c) {
  if (e->now < 4 * TLT_SEC)
    e->now = 4 * TLT_SEC;
  c->tick = tl_tick(e->s);
  return TL_OK;
}

START_TEST(oom_locality) {
  const oom_scenario sc[] = {
      {"tl_submit", "preferences naming new places", NULL, build_local_executors, call_submit_local,
       OOM_ALLOCATES, 0},
      {"tl_submit", "preferences naming places that exist", NULL, build_local_stage0,
       call_submit_local, OOM_ALLOCATES, 0},
      {"tl_submit", "preferences naming 41 hosts", NULL, build_local_stage0, call_submit_local_many,
       OOM_ALLOCATES, 0},
      {"tl_resource_offers", "a round over a task set with preferences", NULL, build_local_stage0,
       call_offer_local, OOM_ALLOCATES, 0},
      {"tl_executor_add", "a preferred executor joins", NULL, build_local_stage0,
       call_add_preferred, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "a preferred executor is lost", NULL, build_local_waiting,
       call_lose_preferred, 0, 0},
      {"tl_tick", "a locality wait runs out", NULL, build_local_waiting, call_tick_after_wait,
       OOM_TICK, 0},
  };
  SWEEP_ALL("locality", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The scheduling policies: pools (TL_FAIR), speculation, shuffle-map outputs, the result-size
 * limit and barrier task sets, each with allocation points of its own.
 * ------------------------------------------------------------------------------------------- */

#define MS (TLT_SEC / 1000)

static void cfg_fair(tl_config *cfg) { cfg->mode = TL_FAIR; }

/* Speculation checked every 100 ms: slow past 1.5 x the median once half the tasks are done,
 * with no minimum run time. */
static void cfg_speculation(tl_config *cfg) {
  cfg->speculation = true;
  cfg->speculation_interval_ns = 100 * MS;
  cfg->speculation_quantile = 0.5;
  cfg->speculation_multiplier = 1.5;
  cfg->speculation_min_runtime_ns = 0;
}

static void cfg_result_100(tl_config *cfg) { cfg->max_result_bytes = 100; }

static int submit_desc(tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t ntasks,
                       const char *pool, bool shuffle_map, bool barrier) {
  tl_taskset_desc d = {.stage_id = stage,
                       .stage_attempt = attempt,
                       .priority = stage,
                       .ntasks = ntasks,
                       .pool = pool,
                       .shuffle_map = shuffle_map,
                       .barrier = barrier};
  return tlt_submit_desc_rc(e, &d, NULL);
}

/* tl_pool_add, then the drain's memory baseline taken again: a pool lives as long as its
 * scheduler, and a failed add may have grown pools_by_name's buckets (capacity only). The
 * scheduler must hold nothing else yet (tlt_rebase asserts it), so pools come first. Nothing a
 * failed add leaked would hide here: the sweep compares its blocks with the state before, and
 * tl_check's memory balance accounts every byte. */
static int pool_add(tlt_env *e, const char *name, tl_sched_mode mode, uint32_t weight,
                    uint32_t min_share) {
  int rc = tl_pool_add(e->s, name, mode, weight, min_share);
  tlt_rebase(e);
  return rc;
}

/* A call that must answer want without changing anything (every tl_stats field, memory
 * included) or delivering an event, for the sweep: TL_OK then, and TL_ENOMEM (its journal line
 * could not be allocated) passed on. */
static int expect_error(tlt_env *e, int want, int (*call)(tlt_env *e)) {
  tl_stats before = tlt_stats(e);
  size_t nev = e->nev;
  int rc = call(e);
  if (rc == TL_ENOMEM)
    return rc;
  OOM_ASSERT(rc == want, "returned %s, want %s", tl_err_name(rc), tl_err_name(want));
  tl_stats after = tlt_stats(e);
  tlt_assert_stats_same(&before, &after, tl_err_name(want));
  OOM_ASSERT(e->nev == nev, "a call answering %s delivered %zu callbacks", tl_err_name(want),
             e->nev - nev);
  return TL_OK;
}

/* ---------------------------------------------------------------------------------------------
 * tl_pool_add, and tl_submit into pools.
 * ------------------------------------------------------------------------------------------- */

static int call_pool_add_etl(tlt_env *e, oom_ctx *c) {
  (void)c;
  return pool_add(e, "etl", TL_FAIR, 2, 1);
}

static char pool_name_255[256]; /* the longest pool name */

static int call_pool_add_long_name(tlt_env *e, oom_ctx *c) {
  (void)c;
  if (pool_name_255[0] == '\0')
    memset(pool_name_255, 'p', sizeof pool_name_255 - 1);
  return pool_add(e, pool_name_255, TL_FIFO, 1, 0);
}

/* Pools p0 .. p(param-1); the add of p(param) expands pools_by_name's buckets. */
static void build_pools(tlt_env *e, oom_ctx *c) {
  for (size_t i = 0; i < c->param; i++) {
    char name[32];
    snprintf(name, sizeof name, "p%zu", i);
    B_OK(pool_add(e, name, i % 2 == 0 ? TL_FIFO : TL_FAIR, 1, 0));
  }
}

static int call_pool_add_next(tlt_env *e, oom_ctx *c) {
  char name[32];
  snprintf(name, sizeof name, "p%zu", c->param);
  return pool_add(e, name, TL_FAIR, 3, 2);
}

/* The index of the first pool add after "default" that makes more than its one allocation. */
static size_t probe_pool_expansion(void) {
  tl_config cfg = tlt_config();
  cfg.mode = TL_FAIR;
  tlt_env *e = tlt_new(&cfg);
  size_t found = 0;
  for (size_t i = 0; i < 2000 && found == 0; i++) {
    char name[32];
    snprintf(name, sizeof name, "p%zu", i);
    uint64_t calls = tlt_alloc_calls();
    B_OK(pool_add(e, name, i % 2 == 0 ? TL_FIFO : TL_FAIR, 1, 0));
    if (tlt_alloc_calls() - calls > 1)
      found = i;
  }
  OOM_ASSERT(found > 0, "pools_by_name never expanded");
  oom_finish_env(e, "probe");
  return found;
}

static int pool_add_fifo_scheduler(tlt_env *e) { return tl_pool_add(e->s, "etl", TL_FAIR, 1, 0); }

static int call_pool_add_estate(tlt_env *e, oom_ctx *c) {
  (void)c;
  return expect_error(e, TL_ESTATE, pool_add_fifo_scheduler);
}

static void build_pool_etl(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(pool_add(e, "etl", TL_FAIR, 2, 1));
}

static int pool_add_etl_again(tlt_env *e) { return tl_pool_add(e->s, "etl", TL_FIFO, 1, 0); }
static int pool_add_default_again(tlt_env *e) {
  return tl_pool_add(e->s, "default", TL_FAIR, 1, 0);
}

static int call_pool_add_eexist(tlt_env *e, oom_ctx *c) {
  (void)c;
  return expect_error(e, TL_EEXIST, pool_add_etl_again);
}

static int call_pool_add_default_eexist(tlt_env *e, oom_ctx *c) {
  (void)c;
  return expect_error(e, TL_EEXIST, pool_add_default_again);
}

/* Pools "etl" (FAIR inside) and "adhoc" (FIFO), e1; stage 0 in "default", stages 1 and 2 in
 * "etl" (stage 1 running two attempts on e1, so the two sit apart in etl's FAIR order). */
static void build_pools_in_use(tlt_env *e, oom_ctx *c) {
  B_OK(pool_add(e, "etl", TL_FAIR, 2, 1));
  B_OK(pool_add(e, "adhoc", TL_FIFO, 1, 2));
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(submit_desc(e, 0, 0, 4, NULL, false, false));
  B_OK(submit_desc(e, 1, 0, 3, "etl", false, false));
  B_OK(offer(e, c, "e1", 4, 4)); /* etl, below its min share, first: 3 of stage 1, then 1 */
  B_OK(submit_desc(e, 2, 0, 2, "etl", false, false));
}

static int call_submit_adhoc(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_desc(e, 3, 0, 2, "adhoc", false, false);
}

static int call_submit_etl(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_desc(e, 4, 0, 3, "etl", true, false);
}

static int call_submit_etl_superseding(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_desc(e, 2, 1, 2, "etl", false, false);
}

static int call_submit_speculating(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_desc(e, 1, 0, 6, NULL, true, false);
}

static int call_submit_barrier(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_desc(e, 1, 0, 3, NULL, false, true);
}

/* Nested pools: "etl" with the child "nightly" (and "probe", which tells what one pool of a
 * five-byte name takes), under a config that makes pools for unknown names. */
static size_t pool5_bytes; /* a pool of a five-byte name, measured by build_nested */

static void cfg_fair_auto(tl_config *cfg) {
  cfg->mode = TL_FAIR;
  cfg->pool_auto_create = true;
}

static void build_nested(tlt_env *e, oom_ctx *c) {
  (void)c;
  B_OK(pool_add(e, "etl", TL_FAIR, 2, 1));
  B_OK(tl_pool_add_child(e->s, "etl", "nightly", TL_FIFO, 1, 2));
  size_t before = tlt_stats(e).mem_live_bytes;
  B_OK(pool_add(e, "probe", TL_FIFO, 1, 0));
  pool5_bytes = tlt_stats(e).mem_live_bytes - before;
  tlt_rebase(e);
}

static int call_pool_add_child(tlt_env *e, oom_ctx *c) {
  (void)c;
  int rc = tl_pool_add_child(e->s, "nightly", "hourly", TL_FAIR, 3, 1);
  tlt_rebase(e);
  return rc;
}

/* A task set naming "adhoc", which does not exist: made with the defaults; the drain's baseline
 * then counts it, as it counts pools added (it lives as long as the scheduler). */
static int call_submit_auto_pool(tlt_env *e, oom_ctx *c) {
  (void)c;
  int rc = submit_desc(e, 5, 0, 2, "adhoc", false, false);
  if (rc == TL_OK) {
    e->base_bytes += pool5_bytes;
    e->base_blocks++;
  }
  return rc;
}

static int submit_into_parent(tlt_env *e) {
  tl_taskset_desc d = {.stage_id = 6, .ntasks = 1, .pool = "etl"};
  return tl_submit(e->s, &d, NULL);
}

static int call_submit_parent_estate(tlt_env *e, oom_ctx *c) {
  (void)c;
  return expect_error(e, TL_ESTATE, submit_into_parent);
}

/* Nested pools in use: e1 runs stage 0 of "nightly" and a default-pool stage waits. */
static void build_nested_in_use(tlt_env *e, oom_ctx *c) {
  build_nested(e, c);
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(submit_desc(e, 0, 0, 3, "nightly", false, false));
  B_OK(submit_desc(e, 1, 0, 3, NULL, false, false));
  B_OK(offer(e, c, "e1", 1, 1));
}

static int call_offer_nested(tlt_env *e, oom_ctx *c) { return offer(e, c, "e1", 1, 1); }

/* tl_pool_set: "etl" (FAIR, queued task sets) made FIFO, its queue placed again; "default"'s
 * settings; an unknown pool. It allocates nothing but its journal line. */
static int call_pool_set_etl_fifo(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_pool_set(e->s, "etl", TL_FIFO, 3, 0);
}

static int call_pool_set_default(tlt_env *e, oom_ctx *c) {
  (void)c;
  return tl_pool_set(e->s, "default", TL_FAIR, 2, 1);
}

static int pool_set_unknown(tlt_env *e) { return tl_pool_set(e->s, "nope", TL_FIFO, 1, 0); }

static int call_pool_set_enoent(tlt_env *e, oom_ctx *c) {
  (void)c;
  return expect_error(e, TL_ENOENT, pool_set_unknown);
}

START_TEST(oom_pools) {
  tlt_alloc_install();
  size_t expanding = probe_pool_expansion();
  tlt_alloc_restore();
  const oom_scenario sc[] = {
      {"tl_pool_add", "the first pool beside \"default\"", cfg_fair, NULL, call_pool_add_etl,
       OOM_ALLOCATES, 0},
      {"tl_pool_add", "a pool with a 255-byte name", cfg_fair, build_pool_etl,
       call_pool_add_long_name, OOM_ALLOCATES, 0},
      {"tl_pool_add", "expanding pools_by_name", cfg_fair, build_pools, call_pool_add_next,
       OOM_ALLOCATES, expanding},
      {"tl_pool_add", "TL_ESTATE under TL_FIFO", NULL, NULL, call_pool_add_estate, OOM_NO_ALLOC, 0},
      {"tl_pool_add", "TL_EEXIST", cfg_fair, build_pool_etl, call_pool_add_eexist, OOM_NO_ALLOC, 0},
      {"tl_pool_add", "TL_EEXIST for \"default\"", cfg_fair, NULL, call_pool_add_default_eexist,
       OOM_NO_ALLOC, 0},
      {"tl_submit", "a new stage into a FIFO pool", cfg_fair, build_pools_in_use, call_submit_adhoc,
       OOM_ALLOCATES, 0},
      {"tl_submit", "a shuffle-map stage into a FAIR pool with queued task sets", cfg_fair,
       build_pools_in_use, call_submit_etl, OOM_ALLOCATES, 0},
      {"tl_submit", "superseding an idle attempt in a FAIR pool", cfg_fair, build_pools_in_use,
       call_submit_etl_superseding, OOM_ALLOCATES, 0},
      {"tl_submit", "a speculating shuffle-map task set", cfg_speculation, build_stage0,
       call_submit_speculating, OOM_ALLOCATES, 0},
      {"tl_submit", "a barrier task set with speculation on", cfg_speculation, build_stage0,
       call_submit_barrier, OOM_ALLOCATES, 0},
      {"tl_pool_add_child", "a pool inside a child pool", cfg_fair, build_nested,
       call_pool_add_child, OOM_ALLOCATES, 0},
      {"tl_submit", "into a pool made for its unknown name", cfg_fair_auto, build_nested,
       call_submit_auto_pool, OOM_ALLOCATES, 0},
      {"tl_submit", "TL_ESTATE into a pool with children", cfg_fair_auto, build_nested,
       call_submit_parent_estate, OOM_NO_ALLOC, 0},
      {"tl_resource_offers", "a round over nested pools", cfg_fair, build_nested_in_use,
       call_offer_nested, OOM_ALLOCATES, 0},
      {"tl_pool_set", "a FAIR pool with queued task sets made FIFO", cfg_fair, build_pools_in_use,
       call_pool_set_etl_fifo, OOM_NO_ALLOC, 0},
      {"tl_pool_set", "\"default\"'s settings", cfg_fair, build_pools_in_use,
       call_pool_set_default, OOM_NO_ALLOC, 0},
      {"tl_pool_set", "TL_ENOENT", cfg_fair, build_pools_in_use, call_pool_set_enoent,
       OOM_NO_ALLOC, 0},
  };
  SWEEP_ALL("pools", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Speculation: tl_resource_offers, tl_tick, tl_status_update.
 * ------------------------------------------------------------------------------------------- */

/* Five executors of four cores (on two hosts), stages 0 (24 tasks) and 1: a round of five
 * offers capped at 18 launches takes more prepared records and hosts-tried records than the 16
 * on the stack. */
static void build_five(tlt_env *e, oom_ctx *c) {
  (void)c;
  for (int i = 0; i < 5; i++)
    B_OK(add_exec(e, wide_ids[i], i < 3 ? "h1" : "h2", "r1", 4));
  B_OK(submit(e, 0, 0, 0, 24));
  B_OK(submit(e, 1, 0, 1, 5));
}

static int call_offer_five(tlt_env *e, oom_ctx *c) {
  tl_offer o[5];
  for (int i = 0; i < 5; i++) {
    o[i].executor_id = wide_ids[i];
    o[i].cores = 4;
  }
  return offers(e, c, o, 5, 18);
}

/* e1 (h1, 3 cores) and e2 (h2, 2 cores). Stage 0 (param 0: two tasks; param 1: a shuffle-map
 * stage of three) runs on e1 from 1 s; index 0 finished after 10 ms, and tl_tick's check at
 * 110 ms found the others slow (past 15 ms): each waits for a copy, which only h2 may run. */
static void build_speculatable(tlt_env *e, oom_ctx *c) {
  uint32_t n = c->param == 1 ? 3 : 2;
  B_OK(add_exec(e, "e1", "h1", NULL, 3));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(submit_desc(e, 0, 0, n, NULL, c->param == 1, false));
  B_OK(offer(e, c, "e1", n, n));
  B_OK(update(e, "e1", find_launch(c, 0, 0, 1, 0)->tid, TL_TASK_RUNNING, 0, NULL));
  e->now += 10 * MS;
  B_OK(finish(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, NULL));
  e->now += 100 * MS;
  OOM_ASSERT(tl_tick(e->s) != 0, "builder: tick");
  OOM_ASSERT(tlt_stats(e).tasks_speculatable == n - 1, "builder: %zu tasks speculatable",
             tlt_stats(e).tasks_speculatable);
}

static int call_offer_e2_2(tlt_env *e, oom_ctx *c) { return offer(e, c, "e2", 2, 2); }

static int call_offer_e1_3(tlt_env *e, oom_ctx *c) { return offer(e, c, "e1", 3, 3); }

/* build_speculatable and stage 1 (two tasks) submitted after the check: an offer round gives
 * stage 0 its copy and stage 1 a regular launch. */
static void build_speculatable_and_stage1(tlt_env *e, oom_ctx *c) {
  build_speculatable(e, c);
  B_OK(submit(e, 1, 0, 1, 2));
}

/* build_speculatable with the copies launched on e2. */
static void build_copies_running(tlt_env *e, oom_ctx *c) {
  build_speculatable(e, c);
  B_OK(offer(e, c, "e2", 2, 2));
  OOM_ASSERT(c->nout == (c->param == 1 ? 2u : 1u) && c->out[0].speculative,
             "builder: %zu copies launched", c->nout);
  e->now += 5 * MS;
}

static int call_finish_copy_1(tlt_env *e, oom_ctx *c) {
  return finish(e, "e2", find_launch(c, 0, 0, 1, 1)->tid, "the copy won");
}

static int call_finish_original_1(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", find_launch(c, 0, 0, 1, 0)->tid, "the original won");
}

/* build_copies_running, and the copy of index 1 won: the original is marked killed. */
static void build_copy_won(tlt_env *e, oom_ctx *c) {
  build_copies_running(e, c);
  B_OK(finish(e, "e2", find_launch(c, 0, 0, 1, 1)->tid, NULL));
}

static void cfg_speculation_many(tl_config *cfg) {
  cfg_speculation(cfg);
  cfg->speculation_quantile = 0.05;
  cfg->speculation_multiplier = 1.0;
}

static const char *const spec_ids[] = {"s0", "s1", "s2", "s3", "s4"};

/* Five executors of eight cores run the 40 tasks of stage 0 from 1 s; two finished after
 * 10 ms; at 210 ms the other 38 are slow: the check reserves 39 events, past the queue's 32. */
static void build_many_slow(tlt_env *e, oom_ctx *c) {
  tl_offer o[5];
  for (size_t i = 0; i < 5; i++) {
    char host[8];
    snprintf(host, sizeof host, "h%zu", i);
    B_OK(add_exec(e, spec_ids[i], host, i < 3 ? "r0" : NULL, 8));
    o[i].executor_id = spec_ids[i];
    o[i].cores = 8;
  }
  B_OK(submit(e, 0, 0, 0, 40));
  B_OK(offers(e, c, o, 5, 40));
  e->now += 10 * MS;
  for (uint32_t i = 0; i < 2; i++) {
    const tl_launch *l = find_launch(c, 0, 0, i, 0);
    B_OK(finish(e, l->executor_id, l->tid, NULL));
  }
  e->now += 200 * MS;
}

/* build_speculatable's state just before its check: stage 0's index 1 is slow. */
static void build_one_slow(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 3));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(submit(e, 0, 0, 0, 2));
  B_OK(offer(e, c, "e1", 2, 2));
  e->now += 10 * MS;
  B_OK(finish(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, NULL));
  e->now += 100 * MS;
}

static void cfg_speculation_heartbeat(tl_config *cfg) {
  cfg_speculation(cfg);
  cfg->heartbeat_timeout_ns = 10 * TLT_SEC;
}

/* At 11.5 s: e1 is silent since 1 s with three attempts of stage 1 (RUNNING) and the map
 * outputs of indices 0-2 of the shuffle-map stage 0; e2, heard from at 5 s, runs stage 0's
 * index 3, slow by then. One tick expires e1 (its outputs resubmitted, its attempts ended) and
 * then finds index 3 slow. */
static void build_expiry_and_slow(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 6));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(submit_desc(e, 0, 0, 4, NULL, true, false));
  B_OK(submit(e, 1, 0, 1, 4));
  B_OK(offer(e, c, "e1", 3, 3)); /* stage 0's indices 0-2 */
  B_OK(offer(e, c, "e2", 2, 2)); /* stage 0's index 3, stage 1's 0 */
  B_OK(offer(e, c, "e1", 3, 3)); /* stage 1's 1-3 */
  run_all_on(e, c, "e1");
  e->now += 10 * MS;
  for (uint32_t i = 0; i < 3; i++)
    B_OK(finish(e, "e1", find_launch(c, 0, 0, i, 0)->tid, NULL));
  e->now = 5 * TLT_SEC;
  B_OK(tl_executor_heartbeat(e->s, "e2"));
  e->now = 11 * TLT_SEC + 500 * MS;
}

/* A speculating shuffle-map stage of three: indices 0 and 1 done on e1 (h1) after 10 ms, 2
 * running on e2 (h2); e1 lost, so 0 and 1 run again on e2, 1 done there: three run times fill
 * the median heap's three slots, and the success of index 0's second attempt needs a fourth. */
static void build_heap_full(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(submit_desc(e, 0, 0, 3, NULL, true, false));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(offer(e, c, "e2", 1, 1));
  e->now += 10 * MS;
  B_OK(finish(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, NULL));
  B_OK(finish(e, "e1", find_launch(c, 0, 0, 1, 0)->tid, NULL));
  B_OK(lose(e, "e1", TL_LOSS_EXITED, false, "map outputs lost"));
  B_OK(offer(e, c, "e2", 1, 1));
  B_OK(finish(e, "e2", find_launch(c, 0, 0, 1, 1)->tid, NULL));
  B_OK(offer(e, c, "e2", 1, 1));
  e->now += 20 * MS;
}

static int call_finish_index_0_again(tlt_env *e, oom_ctx *c) {
  return finish(e, "e2", find_launch(c, 0, 0, 0, 1)->tid, "a fourth run time");
}

START_TEST(oom_speculation) {
  const oom_scenario sc[] = {
      {"tl_resource_offers", "18 launches with speculation: a hosts-tried record each",
       cfg_speculation, build_five, call_offer_five, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "a speculative copy on the other host", cfg_speculation,
       build_speculatable, call_offer_e2_2, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "two speculative copies of a shuffle-map stage", cfg_speculation,
       build_speculatable, call_offer_e2_2, OOM_ALLOCATES, 1},
      {"tl_resource_offers", "a speculative copy and a regular launch", cfg_speculation,
       build_speculatable_and_stage1, call_offer_e2_2, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "a copy only the tried host offers: nothing launched", cfg_speculation,
       build_speculatable, call_offer_e1_3, OOM_ALLOCATES, 0},
      {"tl_tick", "the speculation check finding 38 slow tasks: the queue grown",
       cfg_speculation_many, build_many_slow, call_tick, OOM_TICK | OOM_ALLOCATES, 0},
      {"tl_tick", "the speculation check finding one slow task", cfg_speculation, build_one_slow,
       call_tick, OOM_TICK | OOM_NO_ALLOC, 0},
      {"tl_tick", "heartbeat expiry of an executor with map outputs, then the check",
       cfg_speculation_heartbeat, build_expiry_and_slow, call_tick, OOM_TICK | OOM_NO_ALLOC, 0},
      {"tl_status_update", "FINISHED of a winning copy: the original killed", cfg_speculation,
       build_copies_running, call_finish_copy_1, OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED of a winning copy of a map task: output and kill",
       cfg_speculation, build_copies_running, call_finish_copy_1, OOM_ALLOCATES, 1},
      {"tl_status_update", "FINISHED of an original beating its copy", cfg_speculation,
       build_copies_running, call_finish_original_1, OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED of the killed loser: dropped, released", cfg_speculation,
       build_copy_won, call_finish_original_1, OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED of the killed loser of a map task", cfg_speculation,
       build_copy_won, call_finish_original_1, OOM_ALLOCATES, 1},
      {"tl_status_update", "FINISHED of a map task run again, the median heap full: grown",
       cfg_speculation, build_heap_full, call_finish_index_0_again, OOM_ALLOCATES, 0},
  };
  SWEEP_ALL("speculation", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Shuffle-map outputs, the result-size limit, barrier task sets.
 * ------------------------------------------------------------------------------------------- */

/* e1 (h1) runs stage 0's indices 0-3, a shuffle-map stage of eight (index 0 RUNNING), e2 (h2)
 * its indices 4-7; stage 1 (two tasks) waits. */
static void build_map_stage(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(add_exec(e, "e2", "h2", NULL, 4));
  B_OK(submit_desc(e, 0, 0, 8, NULL, true, false));
  B_OK(submit(e, 1, 0, 1, 2));
  B_OK(offer(e, c, "e1", 4, 4));
  B_OK(offer(e, c, "e2", 4, 4));
  B_OK(update(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, TL_TASK_RUNNING, 0, NULL));
}

static int call_finish_map_0(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, "map output 0");
}

/* A shuffle-map stage of two, index 0 done on e1: the success of index 1 completes it. */
static void build_map_stage_last(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 4));
  B_OK(submit_desc(e, 0, 0, 2, NULL, true, false));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(finish(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, NULL));
}

static int call_finish_map_1(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", find_launch(c, 0, 0, 1, 0)->tid, "the last map output");
}

/* build_map_stage, then: indices 0 and 1 done on e1 (their outputs there), 4 done on e2, 2
 * RUNNING on e1, 3 still LAUNCHING. With param 1 e1 is pending loss already. */
static void build_outputs_on_e1(tlt_env *e, oom_ctx *c) {
  build_map_stage(e, c);
  B_OK(finish(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, NULL));
  B_OK(finish(e, "e1", find_launch(c, 0, 0, 1, 0)->tid, NULL));
  B_OK(finish(e, "e2", find_launch(c, 0, 0, 4, 0)->tid, NULL));
  B_OK(update(e, "e1", find_launch(c, 0, 0, 2, 0)->tid, TL_TASK_RUNNING, 0, NULL));
  if (c->param == 1)
    B_OK(lose(e, "e1", TL_LOSS_PENDING, false, "unreachable"));
}

/* e1 (40 cores) ran 40 of stage 0's 48 map tasks and 36 are done there, e2 idle: losing e1
 * makes 1 + 36 + 3 x 4 + 1 events, past the queue's 32. With param 1 e1 is pending loss. */
static void build_many_outputs(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", "r1", 40));
  B_OK(add_exec(e, "e2", "h2", "r1", 2));
  B_OK(submit_desc(e, 0, 0, 48, NULL, true, false));
  B_OK(offer(e, c, "e1", 40, 40));
  run_all_on(e, c, "e1");
  for (size_t i = 0; i < 36; i++)
    B_OK(finish(e, "e1", c->log[i].tid, NULL));
  if (c->param == 1)
    B_OK(lose(e, "e1", TL_LOSS_PENDING, false, NULL));
}

static int call_lose_e1_exited_outputs(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_EXITED, true, "map outputs lost");
}

/* With max_result_bytes 100, stage 0 (four tasks) runs on e1 and index 0's 64 bytes came
 * back: index 1's make 128. */
static void build_results_64(tlt_env *e, oom_ctx *c) {
  build_four_on_e1(e, c);
  B_OK(finish(e, "e1", c->log[0].tid, NULL));
}

static int call_finish_l1_too_large(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", c->log[1].tid, "one result too many");
}

/* Stage 0 (two tasks) on e1, index 0's 64 bytes back: index 1's pass the limit, and its end
 * drains the aborted set. */
static void build_results_64_of_2(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(submit(e, 0, 0, 0, 2));
  B_OK(submit(e, 1, 0, 1, 1));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(finish(e, "e1", c->log[0].tid, NULL));
}

/* build_results_64 with index 1's result passing the limit: aborted, indices 2 and 3 run on. */
static void build_results_aborted(tlt_env *e, oom_ctx *c) {
  build_results_64(e, c);
  B_OK(finish(e, "e1", c->log[1].tid, NULL));
}

static int call_finish_l2(tlt_env *e, oom_ctx *c) {
  return finish(e, "e1", c->log[2].tid, "a result after the abort");
}

/* e1 and e2 (two hosts, two cores each); with param 0 a barrier stage of four, with param 1
 * one of five (it cannot fit in four cores) before stage 1, three regular tasks. */
static void build_barrier(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(submit_desc(e, 0, 0, c->param == 0 ? 4 : 5, NULL, false, true));
  if (c->param == 1)
    B_OK(submit(e, 1, 0, 1, 3));
}

static int call_offer_e1_e2(tlt_env *e, oom_ctx *c) {
  tl_offer o[] = {{"e1", 2}, {"e2", 2}};
  return offers(e, c, o, 2, 8);
}

static const char *const barrier_ids[] = {"b0", "b1", "b2", "b3", "b4"};

/* Five executors of four cores and a barrier stage of 17: one round launches all of it. */
static void build_barrier_17(tlt_env *e, oom_ctx *c) {
  (void)c;
  for (size_t i = 0; i < 5; i++)
    B_OK(add_exec(e, barrier_ids[i], i < 2 ? "h1" : "h2", NULL, 4));
  B_OK(submit_desc(e, 0, 0, 17, NULL, false, true));
}

static int call_offer_barrier_17(tlt_env *e, oom_ctx *c) {
  tl_offer o[5];
  for (size_t i = 0; i < 5; i++) {
    o[i].executor_id = barrier_ids[i];
    o[i].cores = 4;
  }
  return offers(e, c, o, 5, 32);
}

/* build_barrier (param 0) launched, two attempts RUNNING. */
static void build_barrier_running(tlt_env *e, oom_ctx *c) {
  build_barrier(e, c);
  B_OK(call_offer_e1_e2(e, c));
  run_all_on(e, c, "e1");
}

static int call_fail_barrier(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", c->log[0].tid, TL_TASK_FAILED, TL_END_EXCEPTION, "barrier task failed");
}

enum { NPOOLS = 16 }; /* pools added for the wide FAIR round: with "default", past 16 */

/* Sixteen pools (modes, weights and min shares mixed), a task set of two in each and in
 * "default", e1 with 18 cores: a round orders 17 pools on the heap and launches 18. */
static void build_many_pools(tlt_env *e, oom_ctx *c) {
  (void)c;
  char names[NPOOLS][8];
  for (int i = 0; i < NPOOLS; i++) {
    snprintf(names[i], sizeof names[i], "q%02d", i);
    B_OK(pool_add(e, names[i], i % 2 == 0 ? TL_FIFO : TL_FAIR, (uint32_t)(i % 3 + 1),
                  (uint32_t)(i % 4)));
  }
  B_OK(add_exec(e, "e1", "h1", NULL, 18));
  for (int i = 0; i < NPOOLS; i++)
    B_OK(submit_desc(e, (uint32_t)i, 0, 2, names[i], false, false));
  B_OK(submit_desc(e, NPOOLS, 0, 2, NULL, false, false));
}

static int call_offer_e1_18(tlt_env *e, oom_ctx *c) { return offer(e, c, "e1", 18, 64); }

START_TEST(oom_outputs_results_barriers_and_fair_rounds) {
  const oom_scenario sc[] = {
      {"tl_status_update", "FINISHED of a map task: its output recorded", NULL, build_map_stage,
       call_finish_map_0, OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED of the last map task: no record, released", NULL,
       build_map_stage_last, call_finish_map_1, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "one phase, map outputs resubmitted", NULL, build_outputs_on_e1,
       call_lose_e1_exited_outputs, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "second phase, map outputs resubmitted", NULL, build_outputs_on_e1,
       call_lose_e1_exited_outputs, OOM_ALLOCATES, 1},
      {"tl_executor_lost", "one phase, 36 map outputs: the queue grown", NULL, build_many_outputs,
       call_lose_e1_exited_outputs, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "second phase, 36 map outputs: the queue grown", NULL,
       build_many_outputs, call_lose_e1_exited_outputs, OOM_ALLOCATES, 1},
      {"tl_status_update", "FINISHED passing max_result_bytes: aborted", cfg_result_100,
       build_results_64, call_finish_l1_too_large, OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED passing max_result_bytes: aborted and released",
       cfg_result_100, build_results_64_of_2, call_finish_l1_too_large, OOM_ALLOCATES, 0},
      {"tl_status_update", "FINISHED after the abort: dropped", cfg_result_100,
       build_results_aborted, call_finish_l2, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "a barrier stage of four in one round", NULL, build_barrier,
       call_offer_e1_e2, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "a barrier stage that does not fit, a regular one that does", NULL,
       build_barrier, call_offer_e1_e2, OOM_ALLOCATES, 1},
      {"tl_resource_offers", "a barrier stage of 17 in one round: heap arrays", NULL,
       build_barrier_17, call_offer_barrier_17, OOM_ALLOCATES, 0},
      {"tl_status_update", "FAILED in a barrier stage: zombie, nothing retried", NULL,
       build_barrier_running, call_fail_barrier, OOM_ALLOCATES, 0},
      {"tl_resource_offers", "TL_FAIR, 17 pools with queued task sets: the order on the heap",
       cfg_fair, build_many_pools, call_offer_e1_18, OOM_ALLOCATES, 0},
  };
  SWEEP_ALL("outputs, results, barriers, FAIR rounds", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Calls made from inside callbacks. While the dispatcher delivers a batch, the calls its
 * callbacks make queue their events behind it, so even a call that reserves one event can have
 * to grow the queue, and an offer round made from revive_offers allocates like any other. The
 * hook below makes such a call after an event; one that runs out of memory must change nothing
 * (and deliver nothing meanwhile). The hook then turns failures off and makes the call again,
 * so the outer call must end exactly as the reference did: a failed call inside a callback must
 * not disturb the delivery around it.
 * ------------------------------------------------------------------------------------------- */

static void reenter(tlt_env *e, const tlt_event *ev,
                    int (*inner)(tlt_env *e, oom_ctx *c, const tlt_event *ev)) {
  oom_ctx *c = e->hook_ud;
  /* Only a call made while an allocation can still fail can fail (a failure still to come, or
   * a persistent one that an earlier allocation met and tolerated, such as a table's best-effort
   * shrink): only then is the state before it needed (without the explanations, which would
   * make the hooks quadratic). */
  oom_state *before = oom_armed && tlt_alloc_may_fail() ? oom_state_take(e, false) : NULL;
  size_t nev = e->nev;
  int rc = inner(e, c, ev);
  if (rc == TL_ENOMEM) {
    OOM_ASSERT(tlt_alloc_failed() && before != NULL,
               "a re-entrant call returned ENOMEM with nothing failing");
    oom_state *after = oom_state_take(e, false);
    /* One block more is the failed call's journal line ("... = ENOMEM"), queued behind the
     * batch being delivered and freed once written: expect_like_ref looks for it. */
    bool line = c->journal && after->stats.mem_live_blocks == before->stats.mem_live_blocks + 1;
    OOM_ASSERT(after->stats.mem_live_blocks == before->stats.mem_live_blocks || line,
               "a re-entrant call under ENOMEM holds %zu blocks, had %zu",
               after->stats.mem_live_blocks, before->stats.mem_live_blocks);
    after->stats.mem_live_blocks = before->stats.mem_live_blocks;
    oom_state_assert_same(before, after, "a re-entrant call under ENOMEM", false);
    oom_state_free(after);
    c->inner_lines += line;
    OOM_ASSERT(e->nev == nev, "a re-entrant call under ENOMEM delivered %zu callbacks",
               e->nev - nev);
    TLT_CHECK(e);
    c->inner_failures++;
    oom_disarm();
    rc = inner(e, c, ev);
  }
  oom_state_free(before);
  OOM_ASSERT(rc == TL_OK, "a re-entrant call (param %zu) returned %s", c->param, tl_err_name(rc));
}

static int inner_kill(tlt_env *e, oom_ctx *c, const tlt_event *ev) {
  (void)c;
  return tl_kill_task(e->s, ev->task.tid, false, "killed from task_started");
}

static void hook_kill_started(tlt_env *e, const tlt_event *ev) {
  if (ev->type == TLT_EV_STARTED)
    reenter(e, ev, inner_kill);
}

static int inner_offer_wide(tlt_env *e, oom_ctx *c, const tlt_event *ev) {
  (void)ev;
  return call_offer_wide(e, c);
}

static void hook_offer_on_revive(tlt_env *e, const tlt_event *ev) {
  if (ev->type == TLT_EV_REVIVE)
    reenter(e, ev, inner_offer_wide);
}

/* build_wide, and every task_started is answered with a kill from inside the callback: 40
 * kills queued behind a batch of 40 events. */
static void build_wide_killing(tlt_env *e, oom_ctx *c) {
  build_wide(e, c);
  e->hook = hook_kill_started;
  e->hook_ud = c;
}

/* build_wide's executors beside "big", which runs all 40 tasks of stage 0; revive_offers is
 * answered with a round over the 20 small executors from inside the callback. */
static void build_big_then_wide(tlt_env *e, oom_ctx *c) {
  for (int i = 0; i < WIDE; i++)
    B_OK(add_exec(e, wide_ids[i], i < 10 ? "h1" : "h2", "r1", 2));
  B_OK(add_exec(e, "big", "h3", NULL, 40));
  B_OK(submit(e, 0, 0, 0, 40));
  B_OK(offer(e, c, "big", 40, 40));
  run_all_on(e, c, "big");
  e->hook = hook_offer_on_revive;
  e->hook_ud = c;
}

static int call_lose_big(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "big", TL_LOSS_PROCESS_LOST, false, "big is gone");
}

/* The call param of the queue-full scenarios, made once the queue is full. */
static int inner_when_full(tlt_env *e, oom_ctx *c, const tlt_event *ev) {
  (void)ev;
  const tl_launch *side = c->log; /* the builder's four launches on "side" come first */
  switch (c->param) {
  case 0:
    return lose(e, "side", TL_LOSS_PENDING, false, NULL);
  case 1:
    return lose(e, "side", TL_LOSS_EXITED, true, "side exited");
  case 2:
    return update(e, "side", side[0].tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL);
  case 3:
    return finish(e, "side", side[1].tid, NULL);
  case 4:
    return update(e, "side", side[2].tid, TL_TASK_KILLED, 0, NULL);
  case 5:
    return submit(e, 8, 0, 3, 2);
  case 6:
    return submit(e, 7, 1, 0, 4);
  case 7:
    return tl_partition_completed(e->s, 7, 3);
  case 8:
    return tl_cancel_stage(e->s, 7, NULL);
  case 9:
    return tl_kill_stage(e->s, 7, true, NULL);
  case 10:
    return tl_kill_task(e->s, side[3].tid, true, NULL);
  case 11:
    return add_exec(e, "late", "h10", "r9", 2);
  case 12:
    return tl_executor_decommission(e->s, "side", NULL);
  case 13:
    return tl_cancel_stage(e->s, 5, "cancel an idle stage");
  case 14:
    return tl_partition_completed(e->s, 4, 0);
  case 15:
    return submit(e, 5, 1, 9, 2);
  case 16:
    return lose(e, "solo", TL_LOSS_EXITED, true, NULL);
  default:
    ck_abort_msg("no inner call %zu", c->param);
    return TL_EINVAL;
  }
}

static const char *const when_full_names[] = {
    "tl_executor_lost, pending",
    "tl_executor_lost, one phase",
    "tl_status_update, FAILED",
    "tl_status_update, FINISHED",
    "tl_status_update, KILLED",
    "tl_submit, new stage",
    "tl_submit, superseding",
    "tl_partition_completed",
    "tl_cancel_stage",
    "tl_kill_stage",
    "tl_kill_task",
    "tl_executor_add",
    "tl_executor_decommission",
    "tl_cancel_stage, idle",
    "tl_partition_completed, last",
    "tl_submit, superseding idle",
    "tl_executor_lost, aborting and releasing two task sets"};

static int inner_fill(tlt_env *e, oom_ctx *c, const tlt_event *ev) {
  (void)c;
  (void)ev;
  return tl_kill_stage(e->s, 6, false, NULL);
}

/* The first event of the call (its revive_offers) is answered with a kill of stage 6, whose 32
 * running attempts fill the 32 slots of the queue behind the batch, then with the call under
 * test, whose few events then need the queue to grow. */
static void hook_fill_then_call(tlt_env *e, const tlt_event *ev) {
  oom_ctx *c = e->hook_ud;
  if (c->hooked++ != 0)
    return;
  reenter(e, ev, inner_fill);
  reenter(e, ev, inner_when_full);
}

/* "side" runs the four tasks of stage 7 (two RUNNING), "filler" the 32 of stage 6 (the
 * launches c->log[4 .. 35]) and "solo" the one task each of stages 2 and 3, RUNNING (with
 * max_task_failures 1 its loss aborts and releases both); stage 5 (two tasks) and stage 4 (one)
 * wait with nothing running. */
static void build_side_and_filler_state(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "side", "h9", "r9", 4));
  B_OK(submit(e, 7, 0, 0, 4));
  B_OK(offer(e, c, "side", 4, 4));
  B_OK(update(e, "side", c->log[0].tid, TL_TASK_RUNNING, 0, NULL));
  B_OK(update(e, "side", c->log[1].tid, TL_TASK_RUNNING, 0, NULL));
  B_OK(add_exec(e, "filler", "h11", NULL, 32));
  B_OK(submit(e, 6, 0, 1, 32));
  B_OK(offer(e, c, "filler", 32, 32));
  B_OK(add_exec(e, "solo", "h12", NULL, 2));
  B_OK(submit(e, 2, 0, 0, 1));
  B_OK(submit(e, 3, 0, 0, 1));
  B_OK(offer(e, c, "solo", 2, 2));
  run_all_on(e, c, "solo");
  B_OK(submit(e, 5, 0, 9, 2));
  B_OK(submit(e, 4, 0, 9, 1));
}

static int call_submit_stage9(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit(e, 9, 0, 5, 1);
}

static void build_side_and_filler(tlt_env *e, oom_ctx *c) {
  build_side_and_filler_state(e, c);
  e->hook = hook_fill_then_call;
  e->hook_ud = c;
}

/* The first event of the call is answered with c->fill kills of stage 6's attempts (one event
 * each, no allocation), then with the call under test: it then finds the queue behind the batch
 * holding exactly c->fill events. */
static void hook_fill_level(tlt_env *e, const tlt_event *ev) {
  oom_ctx *c = e->hook_ud;
  if (c->hooked++ != 0)
    return;
  for (size_t i = 0; i < c->fill; i++) {
    int rc = tl_kill_task(e->s, c->log[4 + i].tid, false, NULL);
    OOM_ASSERT(rc == TL_OK, "filling kill %zu: %s", i, tl_err_name(rc));
  }
  int rc = inner_when_full(e, c, ev);
  OOM_ASSERT(rc == TL_OK, "%s with %zu events queued: %s", when_full_names[c->param], c->fill,
             tl_err_name(rc));
  TLT_CHECK(e);
}

/* A call reserves room for the most events it can make before it changes anything, and a push
 * past the reservation aborts. Outside callbacks the queue is empty and has 32 slots, which
 * hides a count that is short; here each call runs with 0 to 32 events already queued, so that
 * whatever it pushes lands exactly on the boundary once (and the cases that make every event
 * their count allows for are among the calls: an idle stage cancelled, a last partition, an
 * idle attempt superseded). Nothing fails here; a short count aborts the run. */
START_TEST(oom_reservations_at_every_queue_level) {
  enum { N = sizeof when_full_names / sizeof when_full_names[0] };
  unsigned runs = 0;
  for (size_t x = 0; x < N; x++) {
    for (size_t fill = 0; fill <= 32; fill++) {
      oom_ctx *c = oom_ctx_new();
      oom_scenario sc = {when_full_names[x],
                         "queue level",
                         cfg_max_failures_1,
                         build_side_and_filler_state,
                         call_submit_stage9,
                         0,
                         x};
      tlt_env *e = oom_fresh(&sc, c);
      c->fill = fill;
      e->hook = hook_fill_level;
      e->hook_ud = c;
      OOM_ASSERT(call_submit_stage9(e, c) == TL_OK, "the outer submission failed");
      OOM_ASSERT(c->hooked > 0, "the hook never ran");
      TLT_CHECK(e);
      oom_finish_env(e, when_full_names[x]);
      oom_ctx_free(c);
      runs++;
    }
  }
  fprintf(stderr, "oom queue levels: %u runs (%zu calls at 33 levels each)\n", runs, (size_t)N);
}
END_TEST

START_TEST(oom_reentrant_with_a_full_queue) {
  enum { N = sizeof when_full_names / sizeof when_full_names[0] };
  oom_scenario sc[N];
  for (size_t i = 0; i < N; i++) {
    oom_scenario one = {when_full_names[i],
                        "from a callback with the queue full",
                        cfg_max_failures_1,
                        build_side_and_filler,
                        call_submit_stage9,
                        OOM_ALLOCATES | OOM_REENTRANT,
                        i};
    sc[i] = one;
  }
  SWEEP_ALL("calls from a callback with the queue full", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The same two checks for the calls of the scheduling policies: each made from a callback with
 * 16 to 32 events queued behind the batch (a reservation one short aborts the run), and swept
 * with the queue full (kills of all of stage 6 first). The state, of which the builder makes
 * stage 6 and the parts the call needs (policy_parts):
 *
 *   stage 1 (pool etl, 3 tasks) on e1 (h1): index 0 done, 1 and 2 slow; one has a copy on e2
 *   stage 2 (shuffle map, 4) on m1 (h3): indices 0 and 1 done (their outputs on m1), 2 and 3
 *     RUNNING and slow
 *   stage 3 (shuffle map, 3) on m2 (h4), pending loss: index 0 done there, 1 and 2 frozen
 *   stage 4 (2 tasks) on r1 (h5): index 0's 100 bytes back, of max_result_bytes 150
 *   stage 5 (barrier, 2) on b1 (h6): index 0 done, 1 RUNNING
 *   stage 6 (32 tasks) on filler (h11): the attempts the hooks kill
 *   stage 7 (3 tasks) on t1 (h7): index 0 done after the check, 1 and 2 slow at the next one
 *   stage 8 (pool etl, 64 cpus) waits, idle; stage 10 (barrier, 2, priority 0) waits, and bb
 *     (h8) is idle
 *
 * with max_task_failures 1 and the clock past the next speculation check. The outer call
 * submits stage 99 (64 cpus: it launches nothing).
 * ------------------------------------------------------------------------------------------- */

static void cfg_policy_side(tl_config *cfg) {
  cfg_speculation(cfg);
  cfg->mode = TL_FAIR;
  cfg->max_task_failures = 1;
  cfg->max_result_bytes = 150;
}

static int submit_cpus(tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t ntasks, uint32_t cpus,
                       const char *pool) {
  tl_taskset_desc d = {.stage_id = stage,
                       .stage_attempt = attempt,
                       .priority = stage,
                       .ntasks = ntasks,
                       .cpus_per_task = cpus,
                       .pool = pool};
  return tlt_submit_desc_rc(e, &d, NULL);
}

static int submit_barrier_first(tlt_env *e, uint32_t stage, uint32_t ntasks) {
  tl_taskset_desc d = {.stage_id = stage, .priority = 0, .ntasks = ntasks, .barrier = true};
  return tlt_submit_desc_rc(e, &d, NULL);
}

/* The speculative copy of stage 1 the builder launched. */
static const tl_launch *policy_copy(const oom_ctx *c) {
  for (size_t i = 0; i < c->nlog; i++)
    if (c->log[i].stage_id == 1 && c->log[i].speculative)
      return &c->log[i];
  ck_abort_msg("no speculative copy of stage 1");
  return NULL;
}

/* The parts of that state a call needs (the builder makes only those, and the filler). */
enum {
  PART_SPECULATION = 1,     /* stage 1 on e1, its copy on e2 */
  PART_MAP = 2,             /* stage 2 on m1 */
  PART_MAP_PENDING = 4,     /* stage 3 on m2 */
  PART_RESULT = 8,          /* stage 4 on r1 */
  PART_BARRIER = 16,        /* stage 5 on b1 */
  PART_TICK = 32,           /* stage 7 on t1 */
  PART_IDLE = 64,           /* stage 8 */
  PART_BARRIER_WAITS = 128, /* stage 10 and bb */
  PART_OUTPUT_ONLY = 256,   /* stage 9: o1 holds its index 0's map output and runs nothing */
  PART_OUTPUT_PENDING = 512 /* and o1's loss is pending */
};

static unsigned policy_parts(size_t call);

static void build_policy_side_state(tlt_env *e, oom_ctx *c) {
  unsigned parts = policy_parts(c->param);
  B_OK(pool_add(e, "etl", TL_FAIR, 1, 0));
  B_OK(add_exec(e, "filler", "h11", NULL, 32));
  B_OK(submit(e, 6, 0, 6, 32));
  B_OK(offer(e, c, "filler", 32, 32));
  size_t first = c->nlog; /* the launches to make RUNNING */
  if (parts & PART_SPECULATION) {
    B_OK(add_exec(e, "e1", "h1", NULL, 3));
    B_OK(add_exec(e, "e2", "h2", NULL, 2));
    B_OK(submit_desc(e, 1, 0, 3, "etl", false, false));
    B_OK(offer(e, c, "e1", 3, 3));
  }
  if (parts & PART_MAP) {
    B_OK(add_exec(e, "m1", "h3", NULL, 4));
    B_OK(submit_desc(e, 2, 0, 4, NULL, true, false));
    B_OK(offer(e, c, "m1", 4, 4));
  }
  if (parts & PART_MAP_PENDING) {
    B_OK(add_exec(e, "m2", "h4", NULL, 3));
    B_OK(submit_desc(e, 3, 0, 3, NULL, true, false));
    B_OK(offer(e, c, "m2", 3, 3));
  }
  if (parts & PART_RESULT) {
    B_OK(add_exec(e, "r1", "h5", NULL, 2));
    B_OK(submit(e, 4, 0, 4, 2));
    B_OK(offer(e, c, "r1", 2, 2));
  }
  if (parts & PART_BARRIER) {
    B_OK(add_exec(e, "b1", "h6", NULL, 2));
    B_OK(submit_desc(e, 5, 0, 2, NULL, false, true));
    B_OK(offer(e, c, "b1", 2, 2));
  }
  if (parts & PART_TICK) {
    B_OK(add_exec(e, "t1", "h7", NULL, 3));
    B_OK(submit(e, 7, 0, 7, 3));
    B_OK(offer(e, c, "t1", 3, 3));
  }
  if (parts & PART_OUTPUT_ONLY) {
    B_OK(add_exec(e, "o1", "h9", NULL, 1));
    B_OK(submit_desc(e, 9, 0, 2, NULL, true, false));
    B_OK(offer(e, c, "o1", 1, 1)); /* index 1 stays pending */
  }
  for (size_t i = first; i < c->nlog; i++)
    B_OK(update(e, c->log[i].executor_id, c->log[i].tid, TL_TASK_RUNNING, 0, NULL));
  e->now += 10 * MS;
  if (parts & PART_SPECULATION)
    B_OK(finish(e, "e1", find_launch(c, 1, 0, 0, 0)->tid, NULL));
  if (parts & PART_MAP) {
    B_OK(finish(e, "m1", find_launch(c, 2, 0, 0, 0)->tid, NULL));
    B_OK(finish(e, "m1", find_launch(c, 2, 0, 1, 0)->tid, NULL));
  }
  if (parts & PART_MAP_PENDING) {
    B_OK(finish(e, "m2", find_launch(c, 3, 0, 0, 0)->tid, NULL));
    B_OK(lose(e, "m2", TL_LOSS_PENDING, false, NULL));
  }
  if (parts & PART_RESULT)
    B_OK(finish_size(e, "r1", find_launch(c, 4, 0, 0, 0)->tid, NULL, 100));
  if (parts & PART_BARRIER)
    B_OK(finish(e, "b1", find_launch(c, 5, 0, 0, 0)->tid, NULL));
  if (parts & PART_OUTPUT_ONLY)
    B_OK(finish(e, "o1", find_launch(c, 9, 0, 0, 0)->tid, NULL));
  if (parts & PART_OUTPUT_PENDING)
    B_OK(lose(e, "o1", TL_LOSS_PENDING, false, NULL));
  e->now += 100 * MS;
  OOM_ASSERT(tl_tick(e->s) != 0, "builder: tick");
  if (parts & PART_SPECULATION) {
    B_OK(offer(e, c, "e2", 1, 1)); /* etl runs fewer than default: a copy of stage 1 */
    OOM_ASSERT(c->nout == 1 && c->out[0].stage_id == 1 && c->out[0].speculative,
               "builder: no copy of stage 1");
  }
  e->now += 10 * MS;
  if (parts & PART_TICK)
    B_OK(finish(e, "t1", find_launch(c, 7, 0, 0, 0)->tid, NULL));
  if (parts & PART_IDLE)
    B_OK(submit_cpus(e, 8, 0, 1, 64, "etl"));
  if (parts & PART_BARRIER_WAITS) {
    B_OK(add_exec(e, "bb", "h8", NULL, 2));
    B_OK(submit_barrier_first(e, 10, 2));
  }
  e->now += 200 * MS;
}

static int call_submit_stage99(tlt_env *e, oom_ctx *c) {
  (void)c;
  return submit_cpus(e, 99, 0, 1, 64, NULL);
}

static int inner_policy(tlt_env *e, oom_ctx *c, const tlt_event *ev) {
  (void)ev;
  switch (c->param) {
  case 0:
    return finish(e, "e2", policy_copy(c)->tid, "the copy won");
  case 1:
    return finish(e, "e1", find_launch(c, 1, 0, policy_copy(c)->index, 0)->tid, NULL);
  case 2:
    return finish(e, "m1", find_launch(c, 2, 0, 2, 0)->tid, NULL);
  case 3:
    return finish(e, "r1", find_launch(c, 4, 0, 1, 0)->tid, "too large");
  case 4:
    return update(e, "b1", find_launch(c, 5, 0, 1, 0)->tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL);
  case 5:
    return lose(e, "m1", TL_LOSS_EXITED, true, NULL);
  case 6:
    return lose(e, "m2", TL_LOSS_EXITED, true, "m2 exited");
  case 7: {
    tl_offer o[] = {{"e2", 1}, {"bb", 2}};
    return offers(e, c, o, 2, 8);
  }
  case 8:
    return submit_cpus(e, 8, 1, 1, 64, "etl");
  case 9:
    return tl_kill_stage(e->s, 1, true, NULL);
  case 10: { /* the check of tl_tick: stage 7's indices 1 and 2 are slow */
    size_t speculatable = tlt_stats(e).tasks_speculatable;
    if (tl_tick(e->s) == 0)
      return TL_ENOMEM; /* cut short (see the full-queue sweep) */
    OOM_ASSERT(tlt_stats(e).tasks_speculatable == speculatable + 2, "the check found %zu",
               tlt_stats(e).tasks_speculatable - speculatable);
    return TL_OK;
  }
  case 11: /* the most events per attempt a loss reserves for: lost, resubmitted, removed, revive */
  case 12: /* and of a second phase: resubmitted, removed, revive */
    return lose(e, "o1", TL_LOSS_EXITED, true, "o1 exited");
  default:
    ck_abort_msg("no inner policy call %zu", c->param);
    return TL_EINVAL;
  }
}

static unsigned policy_parts(size_t call) {
  static const unsigned parts[] = {PART_SPECULATION,
                                   PART_SPECULATION,
                                   PART_MAP,
                                   PART_RESULT,
                                   PART_BARRIER,
                                   PART_MAP,
                                   PART_MAP_PENDING,
                                   PART_SPECULATION | PART_BARRIER_WAITS,
                                   PART_IDLE,
                                   PART_SPECULATION,
                                   PART_TICK,
                                   PART_OUTPUT_ONLY,
                                   PART_OUTPUT_ONLY | PART_OUTPUT_PENDING};
  OOM_ASSERT(call < sizeof parts / sizeof parts[0], "no inner policy call %zu", call);
  return parts[call];
}

static const char *const policy_inner_names[] = {"tl_status_update, FINISHED, the copy wins",
                                                 "tl_status_update, FINISHED, the original wins",
                                                 "tl_status_update, FINISHED, a map output",
                                                 "tl_status_update, FINISHED, result too large",
                                                 "tl_status_update, FAILED, barrier",
                                                 "tl_executor_lost, one phase, map outputs",
                                                 "tl_executor_lost, second phase, map outputs",
                                                 "tl_resource_offers, a copy and a barrier stage",
                                                 "tl_submit, superseding in a FAIR pool",
                                                 "tl_kill_stage, copies included",
                                                 "tl_tick, speculation check",
                                                 "tl_executor_lost, one phase, outputs only",
                                                 "tl_executor_lost, second phase, outputs only"};

enum { POLICY_INNER = sizeof policy_inner_names / sizeof policy_inner_names[0] };

static int inner_policy_fill(tlt_env *e, oom_ctx *c, const tlt_event *ev) {
  (void)c;
  (void)ev;
  return tl_kill_stage(e->s, 6, false, NULL);
}

static void hook_policy_fill_then_call(tlt_env *e, const tlt_event *ev) {
  oom_ctx *c = e->hook_ud;
  if (c->hooked++ != 0)
    return;
  reenter(e, ev, inner_policy_fill);
  reenter(e, ev, inner_policy);
}

static void build_policy_side(tlt_env *e, oom_ctx *c) {
  build_policy_side_state(e, c);
  e->hook = hook_policy_fill_then_call;
  e->hook_ud = c;
}

static void hook_policy_fill_level(tlt_env *e, const tlt_event *ev) {
  oom_ctx *c = e->hook_ud;
  if (c->hooked++ != 0)
    return;
  for (uint32_t i = 0; i < c->fill; i++) {
    int rc = tl_kill_task(e->s, find_launch(c, 6, 0, i, 0)->tid, false, NULL);
    OOM_ASSERT(rc == TL_OK, "filling kill %u: %s", i, tl_err_name(rc));
  }
  int rc = inner_policy(e, c, ev);
  OOM_ASSERT(rc == TL_OK, "%s with %zu events queued: %s", policy_inner_names[c->param], c->fill,
             tl_err_name(rc));
  TLT_CHECK(e);
}

/* A call reserving n events lands on the boundary when n are queued before it: these calls make
 * at most 16 events (asserted), so levels 16 to 32 find every count that is short. */
enum { POLICY_MOST_EVENTS = 16 };

START_TEST(oom_policy_reservations_at_every_queue_level) {
  unsigned runs = 0;
  for (size_t x = 0; x < POLICY_INNER; x++) {
    for (size_t fill = 32 - POLICY_MOST_EVENTS; fill <= 32; fill++) {
      oom_ctx *c = oom_ctx_new();
      oom_scenario sc = {policy_inner_names[x],
                         "queue level",
                         cfg_policy_side,
                         build_policy_side_state,
                         call_submit_stage99,
                         0,
                         x};
      tlt_env *e = oom_fresh(&sc, c);
      c->fill = fill;
      e->hook = hook_policy_fill_level;
      e->hook_ud = c;
      size_t mark = e->nev;
      OOM_ASSERT(call_submit_stage99(e, c) == TL_OK, "the outer submission failed");
      OOM_ASSERT(c->hooked > 0, "the hook never ran");
      size_t made = e->nev - mark - 1 - fill; /* but the submission's revive and the kills */
      OOM_ASSERT(made > 0 && made <= POLICY_MOST_EVENTS, "%s made %zu events",
                 policy_inner_names[x], made);
      TLT_CHECK(e);
      oom_finish_env(e, policy_inner_names[x]);
      oom_ctx_free(c);
      runs++;
    }
  }
  fprintf(stderr, "oom policy queue levels: %u runs (%zu calls at %d levels each)\n", runs,
          (size_t)POLICY_INNER, POLICY_MOST_EVENTS + 1);
}
END_TEST

/* Only there must a reservation of a status update or a loss grow the queue, after what the
 * call allocated before it (a map-output record, hosts-tried records) must be undone. One call
 * per undo path: the others reserve as these do. The tick is left out: a tick cut short still
 * journals itself as OK, which the sweep of calls from callbacks cannot tell from a success
 * (its reservation is swept by oom_speculation). */
START_TEST(oom_policy_reentrant_with_a_full_queue) {
  static const size_t calls[] = {0, 2, 5, 6, 7};
  enum { N = sizeof calls / sizeof calls[0] };
  oom_scenario sc[N];
  for (size_t i = 0; i < N; i++) {
    oom_scenario one = {policy_inner_names[calls[i]],
                        "from a callback with the queue full",
                        cfg_policy_side,
                        build_policy_side,
                        call_submit_stage99,
                        OOM_ALLOCATES | OOM_REENTRANT,
                        calls[i]};
    sc[i] = one;
  }
  SWEEP_ALL("policy calls from a callback with the queue full", sc);
}
END_TEST

START_TEST(oom_reentrant_calls) {
  const oom_scenario sc[] = {
      {"tl_kill_task", "40 from inside task_started, queued behind the batch", NULL,
       build_wide_killing, call_offer_wide, OOM_ALLOCATES | OOM_REENTRANT, 0},
      {"tl_resource_offers", "40 launches from inside revive_offers after a loss", NULL,
       build_big_then_wide, call_lose_big, OOM_ALLOCATES | OOM_REENTRANT, 0},
  };
  SWEEP_ALL("re-entrant calls", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_scheduler_free needs no memory: with every allocation failing it still releases every task
 * set (more than the event queue's initial 32) and frees everything, and it allocates nothing.
 * ------------------------------------------------------------------------------------------- */

START_TEST(oom_scheduler_free_allocates_nothing) {
  tlt_alloc_install();
  oom_ctx *c = oom_ctx_new();
  tl_config cfg = tlt_config();
  cfg.journal = oom_journal_line; /* its last line needs no memory either */
  cfg.journal_ud = c;
  tlt_env *e = tlt_new(&cfg);
  build_many_frozen(e, c);
  enum { NSETS = 40 };
  for (uint32_t i = 0; i < NSETS; i++)
    B_OK(submit(e, 10 + i, 0, 5, 3));
  B_OK(add_exec(e, "e3", "h3", NULL, 8));
  B_OK(offer(e, c, "e3", 8, 8));
  B_OK(tl_executor_decommission(e->s, "e3", "going"));
  B_OK(add_exec(e, "e4", "h4", NULL, 2));
  B_OK(lose(e, "e4", TL_LOSS_EXITED, false, "tombstone"));
  TLT_CHECK(e);
  size_t live = tlt_stats(e).tasksets_active + tlt_stats(e).tasksets_zombie;
  size_t mark = tlt_mark(e), jmark = c->jtext.n;
  uint64_t calls = tlt_alloc_calls();
  tlt_alloc_fail_from(1);
  int rc = tl_scheduler_free(e->s);
  bool hit = tlt_alloc_failed();
  oom_disarm();
  ck_assert_int_eq(rc, TL_OK);
  e->s = NULL;
  OOM_ASSERT(!hit && tlt_alloc_calls() == calls, "tl_scheduler_free made %" PRIu64 " allocations",
             tlt_alloc_calls() - calls);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_RELEASED), live);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_RELEASED), e->nev - mark);
  const char *last = oom_journal_since(c, jmark);
  OOM_ASSERT(last[0] == '@' && strchr(last, '\n') == last + strlen(last) - 1 &&
                 strstr(last, " free = OK\n") != NULL,
             "tl_scheduler_free journaled %s", last);
  OOM_ASSERT(tlt_alloc_live_blocks() == 0, "tl_scheduler_free left %zu blocks",
             tlt_alloc_live_blocks());
  tlt_end_freed(e);
  oom_ctx_free(c);
  tlt_alloc_restore();
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_metrics_text needs no memory: with every allocation failing it writes the same text as
 * with memory to spare, sizes it the same, and allocates nothing (so it has no TL_ENOMEM).
 * ------------------------------------------------------------------------------------------- */

START_TEST(oom_metrics_text_allocates_nothing) {
  tlt_alloc_install();
  oom_ctx *c = oom_ctx_new();
  tlt_env *e = tlt_new(NULL);
  build_many_frozen(e, c);
  TLT_CHECK(e);
  static char want[16384], got[16384];
  size_t want_n = 0, got_n = 0, sized = 0;
  ck_assert_int_eq(tl_metrics_text(e->s, want, sizeof want, &want_n), TL_OK);
  ck_assert_uint_lt(want_n, sizeof want);
  uint64_t calls = tlt_alloc_calls();
  tlt_alloc_fail_from(1);
  int rc = tl_metrics_text(e->s, got, sizeof got, &got_n);
  int rc_sized = tl_metrics_text(e->s, NULL, 0, &sized);
  bool hit = tlt_alloc_failed();
  oom_disarm();
  ck_assert_int_eq(rc, TL_OK);
  ck_assert_int_eq(rc_sized, TL_OK);
  OOM_ASSERT(!hit && tlt_alloc_calls() == calls, "tl_metrics_text made %" PRIu64 " allocations",
             tlt_alloc_calls() - calls);
  ck_assert_uint_eq(got_n, want_n);
  ck_assert_uint_eq(sized, want_n);
  ck_assert_str_eq(got, want);
  TLT_CHECK(e);
  tlt_end(e);
  oom_ctx_free(c);
  tlt_alloc_restore();
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * In-place sweeps (moved from test_errors.c): the k-th allocation of a call fails, for k = 1,
 * 2, ... until the call succeeds, all on the same scheduler, so every failure is made on top of
 * the earlier ones. Every failure must be TL_ENOMEM, deliver nothing and leave the ledger as it
 * was (only table capacity may have grown: mem_live_bytes aside, mem_live_blocks exactly).
 * ------------------------------------------------------------------------------------------- */

#define IN_PLACE_SWEEP(e, call)                                                                    \
  do {                                                                                             \
    uint64_t k_ = 1;                                                                               \
    for (;; k_++) {                                                                                \
      OOM_ASSERT(k_ < 5000, "%s never succeeded", #call);                                          \
      tl_stats before_, after_;                                                                    \
      tl_stats_get((e)->s, &before_);                                                              \
      size_t nev_ = (e)->nev;                                                                      \
      tlt_alloc_fail_at(k_);                                                                       \
      int rc_ = (call);                                                                            \
      bool hit_ = tlt_alloc_failed();                                                              \
      tlt_alloc_fail_at(0);                                                                        \
      if (rc_ == TL_OK) {                                                                          \
        TLT_CHECK(e);                                                                              \
        break;                                                                                     \
      }                                                                                            \
      OOM_ASSERT(rc_ == TL_ENOMEM, "%s with allocation %ju failing: %s", #call, (uintmax_t)k_,     \
                 tl_err_name(rc_));                                                                \
      OOM_ASSERT(hit_, "%s returned ENOMEM with no allocation failing", #call);                    \
      tl_stats_get((e)->s, &after_);                                                               \
      tlt_assert_stats_same_but_memory(&before_, &after_, #call);                                  \
      OOM_ASSERT(after_.mem_live_blocks == before_.mem_live_blocks,                                \
                 "%s failed with ENOMEM but holds %zu blocks, had %zu", #call,                     \
                 after_.mem_live_blocks, before_.mem_live_blocks);                                 \
      OOM_ASSERT((e)->nev == nev_, "%s failed with ENOMEM but delivered %zu callbacks", #call,     \
                 (e)->nev - nev_);                                                                 \
      TLT_CHECK(e);                                                                                \
    }                                                                                              \
    oom_failures += k_ - 1;                                                                        \
  } while (0)

static int ip_add(tlt_env *e, const char *id, const char *host, const char *rack, uint32_t cores) {
  tl_executor_desc d = {.id = id, .host = host, .rack = rack, .cores = cores};
  return tl_executor_add(e->s, &d);
}

static int ip_offer(tlt_env *e, const char *exec, uint32_t cores, tl_launch *out, size_t cap,
                    size_t *nout) {
  tl_offer o = {.executor_id = exec, .cores = cores};
  *nout = SIZE_MAX;
  int rc = tl_resource_offers(e->s, &o, 1, out, cap, nout);
  if (rc != TL_OK)
    OOM_ASSERT(*nout == 0, "failed offer reports %zu launches (*nout is 0 on any error)", *nout);
  return rc;
}

static int ip_offers(tlt_env *e, const tl_offer *o, size_t n, tl_launch *out, size_t cap,
                     size_t *nout) {
  *nout = SIZE_MAX;
  int rc = tl_resource_offers(e->s, o, n, out, cap, nout);
  if (rc != TL_OK)
    OOM_ASSERT(*nout == 0, "failed offer reports %zu launches (*nout is 0 on any error)", *nout);
  return rc;
}

static int ip_update(tlt_env *e, const char *exec, tl_tid tid, tl_task_state state,
                     tl_end_kind failure) {
  tl_update u = {.state = state, .failure = failure, .message = "oom sweep"};
  return tl_status_update(e->s, exec, tid, &u);
}

/* A FINISHED update with a fresh result; on error the result stays ours, so we free it. */
static int ip_finish(tlt_env *e, const char *exec, tl_tid tid) {
  tlt_result *r = tlt_result_new(e, 64);
  tl_update u = {
      .state = TL_TASK_FINISHED, .result = r, .result_size = 64, .result_free = tlt_result_free};
  int rc = tl_status_update(e->s, exec, tid, &u);
  if (rc != TL_OK)
    tlt_result_free(r);
  return rc;
}

static int ip_lose(tlt_env *e, const char *exec, tl_loss_kind kind, bool app) {
  tl_loss_reason why = {.kind = kind, .caused_by_app = app, .message = "oom sweep loss"};
  return tl_executor_lost(e->s, exec, &why);
}

START_TEST(in_place_sweep_executors_and_submissions) {
  uint64_t oom_failures = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  IN_PLACE_SWEEP(e, ip_add(e, "e1", "h1", "r1", 4));
  IN_PLACE_SWEEP(e, ip_add(e, "e2", "h1", "r1", 4));
  IN_PLACE_SWEEP(e, ip_add(e, "e3", "h3", NULL, 4));
  IN_PLACE_SWEEP(e, tl_executor_heartbeat(e->s, "e1"));
  IN_PLACE_SWEEP(e, tl_executor_decommission(e->s, "e3", "going away"));
  tl_taskset_id ts = 0;
  IN_PLACE_SWEEP(e, tlt_submit_rc(e, 0, 0, 0, 8, 0, &ts));
  IN_PLACE_SWEEP(e, tlt_submit_rc(e, 1, 0, 1, 3, 2, NULL));
  /* A newer attempt that makes the idle older one zombie and releases it. */
  IN_PLACE_SWEEP(e, tlt_submit_rc(e, 1, 1, 1, 3, 0, NULL));
  ck_assert_uint_eq(tlt_stats(e).tasksets_released, 1);
  ck_assert_uint_gt(oom_failures, 0);
  (void)ts;
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(in_place_sweep_offers_updates_and_kills) {
  uint64_t oom_failures = 0;
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 2;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tlt_submit(e, 0, 0, 0, 6);
  tl_launch l[4];
  size_t n = 0;
  IN_PLACE_SWEEP(e, ip_offer(e, "e1", 4, l, 4, &n));
  ck_assert_uint_eq(n, 4);
  IN_PLACE_SWEEP(e, ip_update(e, "e1", l[0].tid, TL_TASK_RUNNING, 0));
  IN_PLACE_SWEEP(e, ip_finish(e, "e1", l[0].tid));
  /* A failure that retries the index (revive_offers). */
  IN_PLACE_SWEEP(e, ip_update(e, "e1", l[1].tid, TL_TASK_FAILED, TL_END_EXCEPTION));
  IN_PLACE_SWEEP(e, ip_update(e, "e1", l[2].tid, TL_TASK_KILLED, 0));
  IN_PLACE_SWEEP(e, tl_kill_task(e->s, l[3].tid, true, "oom sweep kill"));
  IN_PLACE_SWEEP(e, tl_kill_stage(e->s, 0, false, "oom sweep kill stage"));
  IN_PLACE_SWEEP(e, tl_partition_completed(e->s, 0, 5));
  /* The second counting failure of index 1 aborts the task set. */
  tl_launch m[4];
  IN_PLACE_SWEEP(e, ip_offer(e, "e2", 4, m, 4, &n));
  size_t idx1 = SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (m[i].index == 1)
      idx1 = i;
  OOM_ASSERT(idx1 != SIZE_MAX, "the failed index 1 was not relaunched");
  IN_PLACE_SWEEP(e, ip_update(e, "e2", m[idx1].tid, TL_TASK_RUNNING, 0));
  IN_PLACE_SWEEP(e, ip_update(e, "e2", m[idx1].tid, TL_TASK_FAILED, TL_END_EXCEPTION));
  ck_assert_ptr_nonnull(tlt_last(e, TLT_EV_FAILED));
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* A straggler: an attempt that runs while more launches than attempts_by_tid has slots pass.
 * Each round whose tids reach its home moves it to the index's far table; every allocation of
 * those rounds (the far table's included) fails in turn, and each failure leaves all as it was. */
START_TEST(in_place_sweep_rounds_past_a_straggler) {
  uint64_t oom_failures = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "slow", "h1", NULL, 1);
  tlt_add(e, "fast", "h2", NULL, 4);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch straggler;
  size_t n = 0;
  IN_PLACE_SWEEP(e, ip_offer(e, "slow", 1, &straggler, 1, &n));
  ck_assert_uint_eq(n, 1);
  tlt_submit(e, 1, 0, 0, 200);
  for (int round = 0; round < 50; round++) {
    tl_launch l[4];
    IN_PLACE_SWEEP(e, ip_offer(e, "fast", 4, l, 4, &n));
    ck_assert_uint_eq(n, 4);
    for (size_t i = 0; i < n; i++)
      IN_PLACE_SWEEP(e, ip_finish(e, "fast", l[i].tid));
  }
  IN_PLACE_SWEEP(e, ip_finish(e, "slow", straggler.tid)); /* found in far, and taken out */
  ck_assert_uint_eq(tlt_stats(e).attempts_running, 0);
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(in_place_sweep_executor_loss_and_cancel) {
  uint64_t oom_failures = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", "r1", 2);
  tlt_add(e, "e2", "h2", "r1", 2);
  tlt_add(e, "e3", "h3", NULL, 2);
  tlt_submit(e, 0, 0, 0, 6);
  tlt_submit(e, 1, 0, 1, 2);
  tl_launch l[8];
  tl_offer o[3] = {{"e1", 2}, {"e2", 2}, {"e3", 2}};
  ck_assert_uint_eq(tlt_offers(e, o, 3, l, 8), 6);
  tlt_run(e, "e1", l[0].tid);
  IN_PLACE_SWEEP(e, ip_lose(e, "e1", TL_LOSS_PENDING, false));
  IN_PLACE_SWEEP(e, ip_lose(e, "e1", TL_LOSS_EXITED, true));
  IN_PLACE_SWEEP(e, ip_lose(e, "e2", TL_LOSS_PROCESS_LOST, true));
  IN_PLACE_SWEEP(e, tl_cancel_stage(e->s, 0, "oom sweep cancel"));
  IN_PLACE_SWEEP(e, tl_cancel_stage(e->s, 1, "oom sweep cancel"));
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* "A loss that could not get memory is retried by the next call": tl_tick answers 0 and
 * changes nothing until it can make the heartbeat-expiry loss. */
START_TEST(in_place_tick_retries_a_heartbeat_expiry) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 10 * TLT_SEC;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_run(e, "e1", l[0].tid);
  e->now += 11 * TLT_SEC;
  uint64_t k = 1;
  for (;; k++) {
    ck_assert_uint_lt(k, 1000);
    tl_stats before = tlt_stats(e);
    size_t nev = e->nev;
    tlt_alloc_fail_at(k);
    uint64_t next = tl_tick(e->s);
    bool hit = tlt_alloc_failed();
    tlt_alloc_fail_at(0);
    TLT_CHECK(e);
    if (tlt_stats(e).executors_alive == 0)
      break;
    OOM_ASSERT(hit, "tl_tick did not expire a silent executor");
    ck_assert_uint_eq(next, 0);
    tl_stats after = tlt_stats(e);
    tlt_assert_stats_same_but_memory(&before, &after, "tl_tick under ENOMEM");
    ck_assert_uint_eq(e->nev, nev);
  }
  const tlt_event *lost = tlt_last(e, TLT_EV_LOST);
  ck_assert_ptr_nonnull(lost);
  ck_assert_int_eq(lost->loss.kind, TL_LOSS_HEARTBEAT_TIMEOUT);
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_LOST), 1);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* Rounds of more offers and launches than fit on the stack, and bursts of events larger than
 * the event queue's initial capacity. */
START_TEST(in_place_sweep_large_rounds_and_event_bursts) {
  uint64_t oom_failures = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(NULL);
  enum { NEXEC = 20 };
  tl_offer o[NEXEC];
  char ids[NEXEC][8];
  for (int i = 0; i < NEXEC; i++) {
    snprintf(ids[i], sizeof ids[i], "x%d", i);
    tlt_add(e, ids[i], "h1", NULL, 2);
    o[i].executor_id = ids[i];
    o[i].cores = 2;
  }
  tlt_submit(e, 0, 0, 0, 50);
  tl_launch l[64];
  size_t n = 0;
  IN_PLACE_SWEEP(e, ip_offers(e, o, NEXEC, l, 64, &n));
  ck_assert_uint_eq(n, 2 * NEXEC);
  IN_PLACE_SWEEP(e, tl_kill_stage(e->s, 0, true, "burst"));
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_KILL), 2 * NEXEC);
  IN_PLACE_SWEEP(e, ip_lose(e, "x0", TL_LOSS_PENDING, false));
  IN_PLACE_SWEEP(e, tl_cancel_stage(e->s, 0, "burst"));
  IN_PLACE_SWEEP(e, ip_lose(e, "x0", TL_LOSS_EXITED, true));
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* The pending-loss deadline and tombstone expiry of tl_tick, with allocations failing: the tick
 * answers 0 and changes nothing until it can do the work. */
START_TEST(in_place_tick_retries_a_pending_loss_deadline) {
  tl_config cfg = tlt_config();
  cfg.heartbeat_timeout_ns = 0;
  cfg.pending_loss_timeout_ns = 5 * TLT_SEC;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_run(e, "e1", l[0].tid);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  e->now += 6 * TLT_SEC;
  for (uint64_t k = 1;; k++) {
    ck_assert_uint_lt(k, 1000);
    tl_stats before = tlt_stats(e);
    size_t nev = e->nev;
    tlt_alloc_fail_at(k);
    uint64_t next = tl_tick(e->s);
    bool hit = tlt_alloc_failed();
    tlt_alloc_fail_at(0);
    TLT_CHECK(e);
    if (tlt_stats(e).executors_pending_loss == 0)
      break;
    OOM_ASSERT(hit, "tl_tick did not end a pending loss past its deadline");
    ck_assert_uint_eq(next, 0);
    tl_stats after = tlt_stats(e);
    tlt_assert_stats_same_but_memory(&before, &after, "tl_tick under ENOMEM");
    ck_assert_uint_eq(e->nev, nev);
  }
  ck_assert_uint_eq(tlt_count(e, 0, TLT_EV_ENDED), 2);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* The scheduling policies in place: pools, a shuffle-map stage, a barrier stage, speculation
 * and the result-size limit on one TL_FAIR scheduler, every call swept on top of the failures
 * before it. The speculation check of tl_tick answers 0 and changes nothing until it can
 * reserve its events. */
START_TEST(in_place_sweep_policies) {
  uint64_t oom_failures = 0;
  tl_config cfg = tlt_config();
  cfg_speculation(&cfg);
  cfg.mode = TL_FAIR;
  cfg.max_result_bytes = 150;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  IN_PLACE_SWEEP(e, tl_pool_add(e->s, "etl", TL_FAIR, 2, 1));
  IN_PLACE_SWEEP(e, tl_pool_add(e->s, "adhoc", TL_FIFO, 1, 0));
  tlt_rebase(e); /* the pools stay for the scheduler's life */
  IN_PLACE_SWEEP(e, ip_add(e, "e1", "h1", NULL, 4));
  IN_PLACE_SWEEP(e, ip_add(e, "e2", "h2", NULL, 5));
  tl_taskset_desc map = {.stage_id = 0, .ntasks = 4, .pool = "etl", .shuffle_map = true};
  tl_taskset_desc results = {.stage_id = 1, .priority = 1, .ntasks = 3, .pool = "adhoc"};
  tl_taskset_desc barrier = {.stage_id = 2, .priority = 2, .ntasks = 2, .barrier = true};
  IN_PLACE_SWEEP(e, tlt_submit_desc_rc(e, &map, NULL));
  IN_PLACE_SWEEP(e, tlt_submit_desc_rc(e, &results, NULL));
  IN_PLACE_SWEEP(e, tlt_submit_desc_rc(e, &barrier, NULL));
  tl_launch l[16];
  size_t n = 0;
  IN_PLACE_SWEEP(e, ip_offer(e, "e1", 4, l, 16, &n)); /* etl's min share first */
  ck_assert_uint_eq(n, 4);
  size_t m = 0;
  IN_PLACE_SWEEP(e, ip_offer(e, "e2", 5, l + n, 16 - n, &m)); /* adhoc, then the barrier */
  n += m;
  ck_assert_uint_eq(n, 9);
  e->now += 10 * MS;
  /* Two map outputs on e1, then the result stage's 64 + 64 + 64 bytes pass the limit. */
  for (size_t i = 0, done = 0; i < n && done < 2; i++)
    if (l[i].stage_id == 0 && strcmp(l[i].executor_id, "e1") == 0 && ++done)
      IN_PLACE_SWEEP(e, ip_finish(e, "e1", l[i].tid));
  for (size_t i = 0; i < n; i++)
    if (l[i].stage_id == 1)
      IN_PLACE_SWEEP(e, ip_finish(e, l[i].executor_id, l[i].tid));
  ck_assert_ptr_nonnull(tlt_last(e, TLT_EV_FAILED));
  /* The map stage's other tasks are slow now. */
  e->now += 100 * MS;
  for (uint64_t k = 1;; k++) {
    ck_assert_uint_lt(k, 1000);
    tl_stats before = tlt_stats(e);
    size_t nev = e->nev;
    tlt_alloc_fail_at(k);
    uint64_t next = tl_tick(e->s);
    bool hit = tlt_alloc_failed();
    tlt_alloc_fail_at(0);
    TLT_CHECK(e);
    if (tlt_stats(e).tasks_speculatable > 0)
      break;
    OOM_ASSERT(hit, "the speculation check found nothing slow");
    ck_assert_uint_eq(next, 0);
    tl_stats after = tlt_stats(e);
    tlt_assert_stats_same_but_memory(&before, &after, "tl_tick under ENOMEM");
    ck_assert_uint_eq(e->nev, nev);
  }
  tl_launch copies[4];
  IN_PLACE_SWEEP(e, ip_offer(e, "e2", 5, copies, 4, &m));
  ck_assert_uint_gt(m, 0);
  ck_assert(copies[0].speculative);
  IN_PLACE_SWEEP(e, ip_finish(e, "e2", copies[0].tid)); /* the copy wins */
  ck_assert_ptr_nonnull(tlt_last(e, TLT_EV_KILL));
  /* e1 goes in two phases with its map outputs; the barrier stage fails on e2. */
  IN_PLACE_SWEEP(e, ip_lose(e, "e1", TL_LOSS_PENDING, false));
  IN_PLACE_SWEEP(e, ip_lose(e, "e1", TL_LOSS_EXITED, true));
  for (size_t i = 0; i < n; i++)
    if (l[i].stage_id == 2 && strcmp(l[i].executor_id, "e2") == 0) {
      IN_PLACE_SWEEP(e, ip_update(e, "e2", l[i].tid, TL_TASK_FAILED, TL_END_EXCEPTION));
      break;
    }
  IN_PLACE_SWEEP(e, ip_offer(e, "e2", 5, copies, 4, &m)); /* the resubmitted map tasks */
  IN_PLACE_SWEEP(e, ip_lose(e, "e2", TL_LOSS_PROCESS_LOST, true));
  IN_PLACE_SWEEP(e, tl_cancel_stage(e->s, 0, "oom sweep cancel"));
  ck_assert_uint_gt(oom_failures, 0);
  tlt_end(e);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The whole run: a scripted run of a few executors and stages (failures, a decommission, a
 * two-phase loss, supersession, kills, a fetch failure, cancellation, heartbeat and pending
 * expiry, tombstones). Every call of it is swept in turn: for call j, calls 0 .. j-1 are
 * replayed with nothing failing, then call j is swept like any scenario. This is what reaches
 * the states only a longer history makes.
 * ------------------------------------------------------------------------------------------- */

static void cfg_script(tl_config *cfg) {
  cfg->max_task_failures = 2;
  cfg->heartbeat_timeout_ns = 20 * TLT_SEC;
  cfg->pending_loss_timeout_ns = 10 * TLT_SEC;
  cfg->max_tombstones = 2;
  cfg->tombstone_ttl_ns = 60 * TLT_SEC;
}

/* The tid of attempt `att` of index `idx` of stage attempt `st`.`sa`. */
#define TID(st, sa, idx, att) (find_launch(c, st, sa, idx, att)->tid)

/* The manual clock of each step: from the listed step on, until the next. */
static const struct {
  size_t step;
  uint64_t now;
} script_clock[] = {
    {13, 5 * TLT_SEC},  {20, 6 * TLT_SEC},  {28, 8 * TLT_SEC},
    {29, 20 * TLT_SEC}, {34, 40 * TLT_SEC}, {35, 200 * TLT_SEC},
};

static uint64_t script_time(size_t j) {
  uint64_t now = TLT_SEC; /* tlt_new's start */
  for (size_t i = 0; i < sizeof script_clock / sizeof script_clock[0]; i++)
    if (script_clock[i].step <= j)
      now = script_clock[i].now;
  return now;
}

static int script_step(tlt_env *e, oom_ctx *c, size_t j) {
  e->now = script_time(j);
  switch (j) {
  case 0:
    return add_exec(e, "e1", "h1", "r1", 4);
  case 1:
    return add_exec(e, "e2", "h1", "r1", 2);
  case 2:
    return add_exec(e, "e3", "h2", "r2", 2);
  case 3:
    return add_exec(e, "e4", "h3", NULL, 2);
  case 4:
    return submit(e, 0, 0, 0, 6);
  case 5:
    return submit(e, 1, 0, 1, 4);
  case 6: {
    tl_offer o[] = {{"e1", 4}, {"e2", 2}, {"e3", 2}, {"e4", 2}};
    return offers(e, c, o, 4, 16);
  }
  case 7:
    return update(e, "e1", TID(0, 0, 0, 0), TL_TASK_RUNNING, 0, NULL);
  case 8:
    return update(e, "e2", TID(0, 0, 1, 0), TL_TASK_RUNNING, 0, NULL);
  case 9:
    return update(e, "e2", TID(0, 0, 5, 0), TL_TASK_RUNNING, 0, NULL);
  case 10:
    return finish(e, "e1", TID(0, 0, 0, 0), "result ready");
  case 11:
    return update(e, "e1", TID(0, 0, 4, 0), TL_TASK_FAILED, TL_END_EXCEPTION, "boom");
  case 12:
    return tl_executor_decommission(e->s, "e4", "scale down");
  case 13:
    return lose(e, "e2", TL_LOSS_PENDING, false, "connection reset");
  case 14:
    return tl_executor_heartbeat(e->s, "e1");
  case 15: {
    tl_offer o[] = {{"e1", 4}, {"e3", 2}, {"e4", 2}, {"e2", 2}};
    return offers(e, c, o, 4, 8);
  }
  case 16:
    return tl_kill_task(e->s, TID(0, 0, 2, 0), true, "speculative loser");
  case 17:
    return update(e, "e3", TID(0, 0, 2, 0), TL_TASK_KILLED, 0, NULL);
  case 18:
    return submit(e, 1, 1, 1, 4);
  case 19:
    return tl_kill_stage(e->s, 1, false, "superseded");
  case 20:
    return lose(e, "e2", TL_LOSS_EXITED, true, "oom killed");
  case 21:
    return tl_partition_completed(e->s, 0, 5);
  case 22:
    return update(e, "e1", TID(1, 0, 0, 0), TL_TASK_KILLED, 0, "killed as asked");
  case 23: {
    tl_offer o[] = {{"e1", 4}, {"e3", 2}};
    return offers(e, c, o, 2, 8);
  }
  case 24:
    return update(e, "e1", TID(0, 0, 1, 1), TL_TASK_RUNNING, 0, NULL);
  case 25:
    return update(e, "e1", TID(1, 1, 0, 0), TL_TASK_FAILED, TL_END_FETCH_FAILED,
                  "shuffle 0 missing");
  case 26:
    return tl_cancel_stage(e->s, 0, "job cancelled");
  case 27:
    return lose(e, "e3", TL_LOSS_PENDING, false, NULL);
  case 28:
    return lose(e, "e4", TL_LOSS_DECOMMISSIONED, false, "decommissioned");
  case 29:
    c->tick = tl_tick(e->s);
    return TL_OK;
  case 30:
    return add_exec(e, "e5", "h4", "r1", 4);
  case 31:
    return submit(e, 2, 0, 2, 8);
  case 32: {
    tl_offer o[] = {{"e1", 4}, {"e5", 4}};
    return offers(e, c, o, 2, 16);
  }
  case 33:
    return update(e, "e5", TID(2, 0, 1, 0), TL_TASK_RUNNING, 0, NULL);
  case 34:
    c->tick = tl_tick(e->s);
    return TL_OK;
  case 35:
    c->tick = tl_tick(e->s);
    return TL_OK;
  case 36:
    return add_exec(e, "e6", "h5", NULL, 2);
  case 37:
    return tl_cancel_stage(e->s, 2, "done");
  default:
    ck_abort_msg("no script step %zu", j);
    return TL_EINVAL;
  }
}

#undef TID

enum { SCRIPT_STEPS = 38 };
static const size_t script_ticks[] = {29, 34, 35};

static bool script_is_tick(size_t j) {
  for (size_t i = 0; i < sizeof script_ticks / sizeof script_ticks[0]; i++)
    if (script_ticks[i] == j)
      return true;
  return false;
}

static void build_script_prefix(tlt_env *e, oom_ctx *c) {
  for (size_t j = 0; j < c->param; j++) {
    int rc = script_step(e, c, j);
    OOM_ASSERT(rc == TL_OK, "script step %zu: %s", j, tl_err_name(rc));
  }
  e->now = script_time(c->param); /* the time of the call under test (see oom_fresh) */
}

static int call_script_step(tlt_env *e, oom_ctx *c) { return script_step(e, c, c->param); }

static const char *const script_names[SCRIPT_STEPS] = {
    "add e1",         "add e2",        "add e3",           "add e4",
    "submit 0.0",     "submit 1.0",    "offers x4",        "RUNNING",
    "RUNNING",        "RUNNING",       "FINISHED",         "FAILED, retried",
    "decommission",   "loss pending",  "heartbeat",        "offers, 2 rejected",
    "kill task",      "KILLED",        "submit 1.1",       "kill stage 1",
    "second phase",   "partition 0/5", "KILLED, zombie",   "offers x2",
    "RUNNING",        "FETCH_FAILED",  "cancel stage 0",   "loss pending",
    "decommissioned", "tick: pending", "add e5",           "submit 2.0",
    "offers",         "RUNNING",       "tick: heartbeats", "tick: tombstones",
    "add e6",         "cancel stage 2"};

static const char *script_entry(size_t j) {
  static const char *const entries[SCRIPT_STEPS] = {"tl_executor_add",
                                                    "tl_executor_add",
                                                    "tl_executor_add",
                                                    "tl_executor_add",
                                                    "tl_submit",
                                                    "tl_submit",
                                                    "tl_resource_offers",
                                                    "tl_status_update",
                                                    "tl_status_update",
                                                    "tl_status_update",
                                                    "tl_status_update",
                                                    "tl_status_update",
                                                    "tl_executor_decommission",
                                                    "tl_executor_lost",
                                                    "tl_executor_heartbeat",
                                                    "tl_resource_offers",
                                                    "tl_kill_task",
                                                    "tl_status_update",
                                                    "tl_submit",
                                                    "tl_kill_stage",
                                                    "tl_executor_lost",
                                                    "tl_partition_completed",
                                                    "tl_status_update",
                                                    "tl_resource_offers",
                                                    "tl_status_update",
                                                    "tl_status_update",
                                                    "tl_cancel_stage",
                                                    "tl_executor_lost",
                                                    "tl_executor_lost",
                                                    "tl_tick",
                                                    "tl_executor_add",
                                                    "tl_submit",
                                                    "tl_resource_offers",
                                                    "tl_status_update",
                                                    "tl_tick",
                                                    "tl_tick",
                                                    "tl_executor_add",
                                                    "tl_cancel_stage"};
  return entries[j];
}

START_TEST(oom_whole_run) {
  oom_tally t[2];
  memset(t, 0, sizeof t);
  tlt_alloc_install();
  for (int journal = 0; journal <= 1; journal++) {
    for (size_t j = 0; j < SCRIPT_STEPS; j++) {
      char name[64];
      snprintf(name, sizeof name, "whole run, call %zu: %s", j, script_names[j]);
      oom_scenario sc = {script_entry(j),
                         name,
                         cfg_script,
                         build_script_prefix,
                         call_script_step,
                         script_is_tick(j) ? OOM_TICK : 0u,
                         j};
      oom_sweep(&sc, journal != 0, &t[journal]);
    }
  }
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
  oom_tally_print("whole run", "", &t[0]);
  oom_tally_print("whole run", ", journaled", &t[1]);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The whole run with the scheduling policies: TL_FAIR pools (one below its min share, one FAIR
 * inside), a shuffle-map stage whose outputs are lost with two executors, speculation with a
 * winning copy and a losing one, a result-size abort, a barrier stage that fails, heartbeat
 * expiry and tombstones. Swept call by call as the first whole run is.
 * ------------------------------------------------------------------------------------------- */

static void cfg_policy_script(tl_config *cfg) {
  cfg_speculation(cfg);
  cfg->mode = TL_FAIR;
  cfg->max_task_failures = 2;
  cfg->heartbeat_timeout_ns = 20 * TLT_SEC;
  cfg->pending_loss_timeout_ns = 10 * TLT_SEC;
  cfg->max_tombstones = 2;
  cfg->tombstone_ttl_ns = 60 * TLT_SEC;
  cfg->max_result_bytes = 150; /* the third 64-byte result of a task set passes it */
}

/* The launch of attempt `att` of index `idx` of stage attempt `st`.`sa`. */
#define L(st, sa, idx, att) find_launch(c, st, sa, idx, att)

static const struct {
  size_t step;
  uint64_t now;
} policy_clock[] = {
    {10, TLT_SEC + 10 * MS},  {16, TLT_SEC + 200 * MS}, {18, TLT_SEC + 250 * MS},
    {22, TLT_SEC + 300 * MS}, {29, TLT_SEC + 500 * MS}, {35, 25 * TLT_SEC},
    {36, 100 * TLT_SEC},
};

static uint64_t policy_time(size_t j) {
  uint64_t now = TLT_SEC;
  for (size_t i = 0; i < sizeof policy_clock / sizeof policy_clock[0]; i++)
    if (policy_clock[i].step <= j)
      now = policy_clock[i].now;
  return now;
}

static int finish_l(tlt_env *e, const tl_launch *l, const char *message) {
  return finish(e, l->executor_id, l->tid, message);
}

static int update_l(tlt_env *e, const tl_launch *l, tl_task_state state, tl_end_kind failure,
                    const char *message) {
  return update(e, l->executor_id, l->tid, state, failure, message);
}

static int policy_offers(tlt_env *e, oom_ctx *c) {
  tl_offer o[] = {{"e1", 4}, {"e2", 4}, {"e3", 4}, {"e4", 4}};
  return offers(e, c, o, 4, 16);
}

/* What each step does, as the library is expected to place things (the names say it; the
 * reference run of each sweep checks every call succeeds). */
static int policy_step(tlt_env *e, oom_ctx *c, size_t j) {
  e->now = policy_time(j);
  switch (j) {
  case 0:
    return pool_add(e, "etl", TL_FAIR, 2, 0);
  case 1:
    return pool_add(e, "adhoc", TL_FIFO, 1, 2);
  case 2:
    return add_exec(e, "e1", "h1", "r1", 4);
  case 3:
    return add_exec(e, "e2", "h2", "r1", 4);
  case 4:
    return add_exec(e, "e3", "h3", NULL, 4);
  case 5:
    return submit_desc(e, 0, 0, 4, "etl", true, false);
  case 6:
    return submit_desc(e, 1, 0, 4, "adhoc", false, false);
  case 7:
    return submit_desc(e, 2, 0, 3, NULL, false, true);
  case 8: /* adhoc (needy) first, then "default" (the barrier stage fits), then etl */
    return policy_offers(e, c);
  case 9:
    return update_l(e, L(0, 0, 0, 0), TL_TASK_RUNNING, 0, NULL);
  case 10:
    return finish_l(e, L(0, 0, 0, 0), NULL);
  case 11:
    return finish_l(e, L(0, 0, 1, 0), "map output");
  case 12:
    return finish_l(e, L(1, 0, 0, 0), NULL);
  case 13:
    return finish_l(e, L(1, 0, 1, 0), NULL);
  case 14: /* 192 bytes: stage 1 aborted */
    return finish_l(e, L(1, 0, 2, 0), "too much");
  case 15: /* the barrier stage is zombie */
    return update_l(e, L(2, 0, 1, 0), TL_TASK_FAILED, TL_END_EXCEPTION, "barrier broken");
  case 16: /* stage 0's indices 2 and 3 are slow */
    c->tick = tl_tick(e->s);
    return TL_OK;
  case 17: /* their copies, on other hosts */
    return policy_offers(e, c);
  case 18: /* the copy of index 2 wins: its original is killed */
    return finish_l(e, L(0, 0, 2, 1), "copy won");
  case 19:
    return update_l(e, L(0, 0, 2, 0), TL_TASK_KILLED, 0, NULL);
  case 20: /* e2 holds the outputs of indices 1 and 2 */
    return lose(e, "e2", TL_LOSS_PENDING, false, "unreachable");
  case 21:
    return lose(e, "e2", TL_LOSS_EXITED, true, "exited");
  case 22: /* indices 1 and 2 run again; e2 and the unknown e4 are rejected */
    return policy_offers(e, c);
  case 23: /* the copy of index 3 wins; its original ended with e2 */
    return finish_l(e, L(0, 0, 3, 1), NULL);
  case 24: /* e1 holds the outputs of indices 0 and 3; stage 1 is released */
    return lose(e, "e1", TL_LOSS_KILLED, false, "preempted");
  case 25: /* the barrier stage's last attempt: released */
    return finish_l(e, L(2, 0, 2, 0), NULL);
  case 26:
    return submit_desc(e, 3, 0, 2, "etl", false, false);
  case 27:
    return add_exec(e, "e4", "h4", "r1", 4);
  case 28: /* in etl stage 3 (nothing running) goes before stage 0 */
    return policy_offers(e, c);
  case 29: /* stage 0's running indices are slow again */
    c->tick = tl_tick(e->s);
    return TL_OK;
  case 30:
    return policy_offers(e, c);
  case 31:
    return finish_l(e, L(3, 0, 0, 0), NULL);
  case 32:
    return tl_kill_stage(e->s, 0, true, "enough");
  case 33:
    return update_l(e, L(3, 0, 1, 0), TL_TASK_FAILED, TL_END_RESULT_LOST, NULL);
  case 34:
    return lose(e, "e3", TL_LOSS_EXITED, true, NULL);
  case 35: /* e4 is silent since 1.3 s */
    c->tick = tl_tick(e->s);
    return TL_OK;
  case 36: /* tombstones expire */
    c->tick = tl_tick(e->s);
    return TL_OK;
  case 37:
    return submit_desc(e, 4, 0, 2, "adhoc", false, true);
  case 38:
    return tl_cancel_stage(e->s, 3, "done");
  default:
    ck_abort_msg("no policy step %zu", j);
    return TL_EINVAL;
  }
}

#undef L

enum { POLICY_STEPS = 39 };
static const size_t policy_ticks[] = {16, 29, 35, 36};

static bool policy_is_tick(size_t j) {
  for (size_t i = 0; i < sizeof policy_ticks / sizeof policy_ticks[0]; i++)
    if (policy_ticks[i] == j)
      return true;
  return false;
}

static void build_policy_prefix(tlt_env *e, oom_ctx *c) {
  for (size_t j = 0; j < c->param; j++) {
    int rc = policy_step(e, c, j);
    OOM_ASSERT(rc == TL_OK, "policy step %zu: %s", j, tl_err_name(rc));
  }
  e->now = policy_time(c->param);
}

static int call_policy_step(tlt_env *e, oom_ctx *c) { return policy_step(e, c, c->param); }

static const struct {
  const char *entry;
  const char *name;
} policy_names[POLICY_STEPS] = {
    {"tl_pool_add", "pool etl"},
    {"tl_pool_add", "pool adhoc"},
    {"tl_executor_add", "add e1"},
    {"tl_executor_add", "add e2"},
    {"tl_executor_add", "add e3"},
    {"tl_submit", "submit 0.0, shuffle map, etl"},
    {"tl_submit", "submit 1.0, adhoc"},
    {"tl_submit", "submit 2.0, barrier"},
    {"tl_resource_offers", "offers over three pools"},
    {"tl_status_update", "RUNNING"},
    {"tl_status_update", "FINISHED, map output"},
    {"tl_status_update", "FINISHED, map output"},
    {"tl_status_update", "FINISHED, 64 bytes"},
    {"tl_status_update", "FINISHED, 128 bytes"},
    {"tl_status_update", "FINISHED, result too large"},
    {"tl_status_update", "FAILED, barrier zombie"},
    {"tl_tick", "tick: two slow"},
    {"tl_resource_offers", "offers: two copies"},
    {"tl_status_update", "FINISHED, the copy wins"},
    {"tl_status_update", "KILLED, the loser"},
    {"tl_executor_lost", "loss pending, outputs held"},
    {"tl_executor_lost", "second phase, outputs resubmitted"},
    {"tl_resource_offers", "offers: resubmitted indices"},
    {"tl_status_update", "FINISHED, a copy"},
    {"tl_executor_lost", "one phase, outputs resubmitted"},
    {"tl_status_update", "FINISHED, barrier released"},
    {"tl_submit", "submit 3.0, etl"},
    {"tl_executor_add", "add e4"},
    {"tl_resource_offers", "offers in a FAIR pool"},
    {"tl_tick", "tick: slow again"},
    {"tl_resource_offers", "offers: copies"},
    {"tl_status_update", "FINISHED"},
    {"tl_kill_stage", "kill stage 0"},
    {"tl_status_update", "FAILED, result lost"},
    {"tl_executor_lost", "one phase"},
    {"tl_tick", "tick: heartbeats"},
    {"tl_tick", "tick: tombstones"},
    {"tl_submit", "submit 4.0, barrier, adhoc"},
    {"tl_cancel_stage", "cancel stage 3"},
};

START_TEST(oom_whole_run_with_policies) {
  oom_tally t[2];
  memset(t, 0, sizeof t);
  tlt_alloc_install();
  for (int journal = 0; journal <= 1; journal++) {
    for (size_t j = 0; j < POLICY_STEPS; j++) {
      char name[96];
      snprintf(name, sizeof name, "whole run with policies, call %zu: %s", j, policy_names[j].name);
      oom_scenario sc = {policy_names[j].entry,
                         name,
                         cfg_policy_script,
                         build_policy_prefix,
                         call_policy_step,
                         policy_is_tick(j) ? OOM_TICK : 0u,
                         j};
      oom_sweep(&sc, journal != 0, &t[journal]);
    }
  }
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
  oom_tally_print("whole run with policies", "", &t[0]);
  oom_tally_print("whole run with policies", ", journaled", &t[1]);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Exclude on failure: the records a counted failure or a loss reserves, the release that moves
 * failures to the application level (allocating nothing), the unschedulable check at the end
 * of a round, its deadline and the application-level expiry in tl_tick, a new executor.
 * ------------------------------------------------------------------------------------------- */

static void cfg_exclude(tl_config *cfg) {
  cfg->exclude_on_failure = true;
  cfg->heartbeat_timeout_ns = 0;
  cfg->exclude_timeout_ns = 60 * TLT_SEC;
  cfg->unschedulable_timeout_ns = 5 * TLT_SEC;
}

/* e1 (h1) runs indices 0-1 of stage 0 (four tasks), RUNNING; e2 (h2) indices 2-3; e3 (h1) is
 * idle. With param 1, index 0 has already failed once on e1. */
static void build_excl_running(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(add_exec(e, "e3", "h1", NULL, 2));
  B_OK(submit(e, 0, 0, 0, 4));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(offer(e, c, "e2", 2, 2));
  run_all_on(e, c, "e1");
  if (c->param == 1) {
    B_OK(update(e, "e1", find_launch(c, 0, 0, 0, 0)->tid, TL_TASK_FAILED, TL_END_EXCEPTION,
                "first"));
    B_OK(offer(e, c, "e3", 1, 1)); /* index 0 again, on the other executor of h1 */
    run_all_on(e, c, "e3");
  }
}

static int call_fail_e1_index1(tlt_env *e, oom_ctx *c) {
  return update(e, "e1", find_launch(c, 0, 0, 1, 0)->tid, TL_TASK_FAILED, TL_END_EXCEPTION, "boom");
}

static int call_fail_e3_index0(tlt_env *e, oom_ctx *c) {
  return update(e, "e3", find_launch(c, 0, 0, 0, 1)->tid, TL_TASK_FAILED, TL_END_RESULT_LOST, NULL);
}

static int call_lose_e1_by_app(tlt_env *e, oom_ctx *c) {
  (void)c;
  return lose(e, "e1", TL_LOSS_PROCESS_LOST, true, "gone");
}

/* Stage 0 (two tasks): both failed on e1 (excluded for the task set), both then launched on
 * e2, the first done; the call finishes the second: release, e1 excluded for the
 * application, and with param 1 h1 too (e3 failed both as well). */
static void build_excl_promotion(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 2));
  B_OK(add_exec(e, "e2", "h2", NULL, 2));
  B_OK(add_exec(e, "e3", "h1", NULL, 2));
  B_OK(submit(e, 0, 0, 0, 2));
  B_OK(offer(e, c, "e1", 2, 2));
  B_OK(update(e, "e1", c->out[0].tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL));
  B_OK(update(e, "e1", c->out[1].tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL));
  if (c->param == 1) {
    B_OK(offer(e, c, "e3", 2, 2));
    B_OK(update(e, "e3", c->out[0].tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL));
    B_OK(update(e, "e3", c->out[1].tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL));
  }
  B_OK(offer(e, c, "e2", 2, 2));
  B_OK(finish(e, "e2", c->out[0].tid, NULL));
}

static int call_finish_last_on_e2(tlt_env *e, oom_ctx *c) {
  const tl_launch *l = &c->log[c->nlog - 1];
  return finish(e, "e2", l->tid, NULL);
}

/* Stage 0 (two tasks) on e1 alone (one core): index 0 failed there; index 1 runs there with
 * param 1 (every executor busy), not with param 0 (e1 idle). */
static void build_excl_unschedulable(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e1", "h1", NULL, 1));
  B_OK(submit(e, 0, 0, 0, c->param == 1 ? 2 : 1));
  B_OK(offer(e, c, "e1", 1, 1));
  B_OK(update(e, "e1", c->out[0].tid, TL_TASK_FAILED, TL_END_EXCEPTION, "bad"));
  if (c->param == 1)
    B_OK(offer(e, c, "e1", 1, 1));
}

static int call_offer_e1_1(tlt_env *e, oom_ctx *c) { return offer(e, c, "e1", 1, 1); }

/* A deadline set (e1 idle) and an application-level exclusion (e9 on h9, from a stage that
 * succeeded), both due at the tick. */
static void build_excl_due(tlt_env *e, oom_ctx *c) {
  B_OK(add_exec(e, "e9", "h9", NULL, 2));
  B_OK(add_exec(e, "e8", "h8", NULL, 2));
  B_OK(submit(e, 5, 0, 0, 2));
  B_OK(offer(e, c, "e9", 2, 2));
  B_OK(update(e, "e9", c->out[0].tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL));
  B_OK(update(e, "e9", c->out[1].tid, TL_TASK_FAILED, TL_END_EXCEPTION, NULL));
  B_OK(offer(e, c, "e8", 2, 2));
  B_OK(finish(e, "e8", c->out[0].tid, NULL));
  B_OK(finish(e, "e8", c->out[1].tid, NULL));
  B_OK(lose(e, "e8", TL_LOSS_KILLED, false, NULL));
  build_excl_unschedulable(e, c);
  B_OK(offer(e, c, "e1", 1, 1)); /* nothing launched: the deadline */
  e->now += 60 * TLT_SEC;
}

static int call_add_e4(tlt_env *e, oom_ctx *c) {
  (void)c;
  return add_exec(e, "e4", "h1", NULL, 1);
}

START_TEST(oom_exclusion) {
  const oom_scenario sc[] = {
      {"tl_status_update", "a first counted failure: a task set's exclusion records", cfg_exclude,
       build_excl_running, call_fail_e1_index1, OOM_ALLOCATES, 0},
      {"tl_status_update", "a second failure on the node: index excluded on h1", cfg_exclude,
       build_excl_running, call_fail_e3_index0, OOM_ALLOCATES, 1},
      {"tl_executor_lost", "an app-caused loss with two counted failures", cfg_exclude,
       build_excl_running, call_lose_e1_by_app, OOM_ALLOCATES, 0},
      {"tl_executor_lost", "an app-caused loss with failures already recorded", cfg_exclude,
       build_excl_running, call_lose_e1_by_app, OOM_ALLOCATES, 1},
      {"tl_status_update", "the last success: failures move to the application level", cfg_exclude,
       build_excl_promotion, call_finish_last_on_e2, 0, 0},
      {"tl_status_update", "the last success: executors and their node excluded", cfg_exclude,
       build_excl_promotion, call_finish_last_on_e2, 0, 1},
      {"tl_resource_offers", "nothing launched, an idle executor: a deadline", cfg_exclude,
       build_excl_unschedulable, call_offer_e1_1, 0, 0},
      {"tl_resource_offers", "nothing launched, every executor busy: an abort", cfg_exclude,
       build_excl_unschedulable, call_offer_e1_1, 0, 1},
      {"tl_tick", "an unschedulable deadline and application-level expiry", cfg_exclude,
       build_excl_due, call_tick, OOM_TICK, 0},
      {"tl_executor_add", "a new executor clears the deadlines", cfg_exclude,
       build_excl_unschedulable, call_add_e4, OOM_ALLOCATES, 0},
  };
  SWEEP_ALL("exclusion", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * tl_executor_reconcile, right after a restore: every attempt of the image is frozen on its
 * RECOVERING executor, no host is known, attempts_by_tid holds nothing (and no array).
 * ------------------------------------------------------------------------------------------- */

/* The image of the builder's state (a growing buffer). */
static int image_put(void *ud, const void *buf, size_t n) {
  oom_buf *b = ud;
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    b->p = realloc(b->p, b->cap);
    OOM_ASSERT(b->p != NULL, "test out of memory");
  }
  memcpy(b->p + b->n, buf, n);
  b->n += n;
  return 0;
}

typedef struct image_reader {
  const oom_buf *b;
  size_t at;
} image_reader;

static int image_get(void *ud, void *buf, size_t n) {
  image_reader *r = ud;
  if (n > r->b->n - r->at)
    n = r->b->n - r->at;
  memcpy(buf, r->b->p + r->at, n);
  r->at += n;
  return (int)n;
}

/* The restored task sets get their payloads back from the harness's submissions; the executors,
 * added by add_exec, had no ud. */
static bool resolve_payload(void *ud, const tl_taskset_info *ts, void **payload) {
  tlt_env *e = ud;
  for (size_t i = 0; i < e->nsubs; i++) {
    if (e->subs[i].id == ts->id) {
      *payload = e->subs[i].payload;
      return true;
    }
  }
  ck_abort_msg("restore asked for unknown task set %" PRIu64, ts->id);
  return false;
}

static void *resolve_no_ud(void *ud, const char *id, const char *host) {
  (void)ud;
  (void)id;
  (void)host;
  return NULL;
}

/* Snapshots e's scheduler, drops it as the driver's crash would (tl_scheduler_abandon: no
 * event, the payloads stay the harness's) and restores the image in its place. */
static void snapshot_and_restore(tlt_env *e) {
  oom_buf img = {NULL, 0, 0};
  B_OK(tl_snapshot(e->s, image_put, &img));
  size_t mark = e->nev;
  B_OK(tl_scheduler_abandon(e->s));
  e->s = NULL;
  OOM_ASSERT(e->nev == mark, "tl_scheduler_abandon delivered %zu events", e->nev - mark);
  tl_callbacks cb = tlt_callbacks(e);
  tlt_record_removed(&cb);
  cb.taskset_restored = resolve_payload;
  cb.executor_restored = resolve_no_ud;
  image_reader r = {&img, 0};
  B_OK(tl_scheduler_restore(&e->cfg, &cb, image_get, &r, &e->s));
  free(img.p);
  tl_stats st = tlt_stats(e);
  OOM_ASSERT(st.attempts_running == 0 && st.attempts_frozen == 6 && st.executors_recovering == 2,
             "restored: %zu running, %zu frozen, %zu recovering", st.attempts_running,
             st.attempts_frozen, st.executors_recovering);
}

/* build_two_racks_running, snapshot, restore: e1 (h1, r1) and e2 (h2, r2) RECOVERING, their six
 * attempts frozen, no host known. */
static void build_restored(tlt_env *e, oom_ctx *c) {
  build_two_racks_running(e, c);
  snapshot_and_restore(e);
}

/* As build_restored, then e3 registers on h1 (rack r1) during the recovery: e1 joins that host. */
static void build_restored_host_back(tlt_env *e, oom_ctx *c) {
  build_restored(e, c);
  B_OK(add_exec(e, "e3", "h1", "r1", 1));
}

/* e1 reports two of its three attempts and a tid the ledger never issued: two kept, one lost,
 * one unknown (killed). */
static int call_reconcile_e1(tlt_env *e, oom_ctx *c) {
  tl_tid running[3] = {c->log[0].tid, c->log[2].tid, 999999};
  tl_tid unknown[2];
  size_t nunknown = 0;
  return tl_executor_reconcile(e->s, "e1", running, 3, unknown, 2, &nunknown);
}

/* e1 reports all three of its attempts. */
static int call_reconcile_e1_all(tlt_env *e, oom_ctx *c) {
  tl_tid running[3] = {c->log[2].tid, c->log[1].tid, c->log[0].tid};
  size_t nunknown = 0;
  return tl_executor_reconcile(e->s, "e1", running, 3, NULL, 0, &nunknown);
}

/* e1 reports nothing: its three attempts end. */
static int call_reconcile_e1_nothing(tlt_env *e, oom_ctx *c) {
  (void)c;
  size_t nunknown = 0;
  return tl_executor_reconcile(e->s, "e1", NULL, 0, NULL, 0, &nunknown);
}

START_TEST(oom_reconcile_after_restore) {
  const oom_scenario sc[] = {
      {"tl_executor_reconcile", "after a restore: two kept, one lost, one unknown", NULL,
       build_restored, call_reconcile_e1, OOM_ALLOCATES, 0},
      {"tl_executor_reconcile", "after a restore: every attempt kept", NULL, build_restored,
       call_reconcile_e1_all, OOM_ALLOCATES, 0},
      {"tl_executor_reconcile", "after a restore: nothing reported", NULL, build_restored,
       call_reconcile_e1_nothing, OOM_ALLOCATES, 0},
      {"tl_executor_reconcile", "after a restore, its host registered again", NULL,
       build_restored_host_back, call_reconcile_e1, OOM_ALLOCATES, 0},
  };
  SWEEP_ALL("tl_executor_reconcile after a restore", sc);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Resources (docs/api.md "Resources"): a scripted run of GPU executors of two profiles (one with
 * a second resource), whole and shared requests, a barrier task set of profile 1, offer rounds
 * through tl_resource_offers_grants, a two-phase loss whose frozen attempts keep their grants
 * until the second phase, a kill, a decommission and cancels; every call swept as the whole
 * run's are, the resources' books (tl_executor_resources, tl_executor_addresses) and each
 * round's grants compared with the reference's, the scheduler drained to empty after each.
 * ------------------------------------------------------------------------------------------- */

static const char *const res_gpus[] = {"0", "1", "2", "3"};
static const char *const res_fpgas[] = {"f0"};

static int add_res_exec(tlt_env *e, const char *id, const char *host, uint32_t cores,
                        uint32_t ngpus, bool fpga, uint32_t profile) {
  tl_resource r[2] = {{.name = "gpu", .addresses = res_gpus, .naddresses = ngpus},
                      {.name = "fpga", .addresses = res_fpgas, .naddresses = 1}};
  tl_executor_desc d = {.id = id,
                        .host = host,
                        .cores = cores,
                        .profile = profile,
                        .resources = r,
                        .nresources = fpga ? 2 : 1};
  return tl_executor_add(e->s, &d);
}

static int submit_res(tlt_env *e, uint32_t stage, uint32_t ntasks, uint32_t amount, uint32_t share,
                      uint32_t profile, bool barrier) {
  tl_resource_request q = {.name = "gpu", .amount = amount, .share = share};
  tl_taskset_desc d = {.stage_id = stage,
                       .priority = stage,
                       .ntasks = ntasks,
                       .barrier = barrier,
                       .profile = profile,
                       .resources = &q,
                       .nresources = 1};
  return tlt_submit_desc_rc(e, &d, NULL);
}

/* tl_resource_offers_grants into c->out and c->grants; on TL_OK the launches go to c->log. */
static int offers_grants(tlt_env *e, oom_ctx *c, const tl_offer *o, size_t n, size_t cap) {
  OOM_ASSERT(cap <= OOM_LOG_MAX, "cap %zu", cap);
  c->nout = SIZE_MAX;
  c->ngrants = SIZE_MAX;
  int rc = tl_resource_offers_grants(e->s, o, n, c->out, cap, &c->nout, c->grants, OOM_LOG_MAX,
                                     &c->ngrants);
  if (rc != TL_OK) {
    OOM_ASSERT(c->nout == 0 && c->ngrants == 0, "failed round reports %zu launches, %zu grants",
               c->nout, c->ngrants);
    return rc;
  }
  size_t g = 0;
  for (size_t i = 0; i < c->nout; i++) { /* each launch's grants follow the last one's */
    OOM_ASSERT(c->out[i].ngrants == 0 || c->out[i].grants == &c->grants[g],
               "launch %zu's grants are not the next in the array", i);
    g += c->out[i].ngrants;
  }
  OOM_ASSERT(g == c->ngrants, "launches hold %zu grants, the round says %zu", g, c->ngrants);
  OOM_ASSERT(c->nlog + c->nout <= OOM_LOG_MAX, "launch log full");
  memcpy(&c->log[c->nlog], c->out, c->nout * sizeof *c->out);
  c->nlog += c->nout;
  return rc;
}

/* The k-th launch (from 0) the log holds on exec of stage `stage`. */
static tl_tid res_tid(const oom_ctx *c, const char *exec, uint32_t stage, size_t k) {
  for (size_t i = 0; i < c->nlog; i++)
    if (strcmp(c->log[i].executor_id, exec) == 0 && c->log[i].stage_id == stage && k-- == 0)
      return c->log[i].tid;
  ck_abort_msg("no launch %zu of stage %u on %s", k, stage, exec);
  return 0;
}

static int res_step(tlt_env *e, oom_ctx *c, size_t j) {
  e->now = TLT_SEC * (1 + j);
  switch (j) {
  case 0:
    return add_res_exec(e, "g1", "h1", 4, 4, false, 0);
  case 1:
    return add_res_exec(e, "g2", "h2", 4, 2, true, 0);
  case 2:
    return add_res_exec(e, "p1", "h3", 2, 2, false, 1);
  case 3:
    return submit_res(e, 0, 4, 1, 0, 0, false); /* a whole gpu per task */
  case 4:
    return submit_res(e, 1, 4, 1, 2, 0, false); /* half a gpu per task */
  case 5:
    return submit_res(e, 2, 2, 1, 0, 1, true); /* a barrier of profile 1 */
  case 6: {
    tl_offer o[] = {{"g1", 4}, {"g2", 4}, {"p1", 2}};
    return offers_grants(e, c, o, 3, 16);
  }
  case 7:
    return update(e, "g1", res_tid(c, "g1", 0, 0), TL_TASK_RUNNING, 0, NULL);
  case 8:
    return finish(e, "g1", res_tid(c, "g1", 0, 0), NULL);
  case 9:
    return lose(e, "g2", TL_LOSS_PENDING, false, "connection reset");
  case 10: {
    tl_offer o[] = {{"g1", 4}, {"g2", 4}};
    return offers_grants(e, c, o, 2, 16);
  }
  case 11:
    return lose(e, "g2", TL_LOSS_EXITED, false, "exited"); /* frozen grants given back */
  case 12:
    return tl_kill_task(e->s, res_tid(c, "g1", 1, 0), true, "not needed");
  case 13:
    return update(e, "g1", res_tid(c, "g1", 1, 0), TL_TASK_KILLED, 0, NULL);
  case 14: {
    tl_offer o[] = {{"g1", 4}};
    return offers_grants(e, c, o, 1, 16);
  }
  case 15:
    return update(e, "p1", res_tid(c, "p1", 2, 0), TL_TASK_FAILED, TL_END_EXCEPTION, "boom");
  case 16: /* the barrier's other task, killed when its set failed, reports */
    return update(e, "p1", res_tid(c, "p1", 2, 1), TL_TASK_KILLED, 0, NULL);
  case 17:
    return tl_executor_decommission(e->s, "p1", "scale down");
  case 18:
    return tl_cancel_stage(e->s, 0, "job cancelled");
  case 19:
    return tl_cancel_stage(e->s, 1, "job cancelled");
  case 20:
    return lose(e, "g1", TL_LOSS_KILLED, false, NULL);
  default:
    ck_abort_msg("no resources step %zu", j);
    return TL_EINVAL;
  }
}

enum { RES_STEPS = 21 };

static const char *const res_names[RES_STEPS] = {"add g1 (gpu x4)",
                                                 "add g2 (gpu x2, fpga)",
                                                 "add p1 (profile 1)",
                                                 "submit whole",
                                                 "submit 1/2",
                                                 "submit barrier",
                                                 "offers x3",
                                                 "RUNNING",
                                                 "FINISHED",
                                                 "loss pending",
                                                 "offers, frozen",
                                                 "second phase",
                                                 "kill task",
                                                 "KILLED",
                                                 "offers again",
                                                 "barrier FAILED",
                                                 "barrier KILLED",
                                                 "decommission",
                                                 "cancel stage 0",
                                                 "cancel stage 1",
                                                 "lose g1"};

static const char *const res_entries[RES_STEPS] = {"tl_executor_add",
                                                   "tl_executor_add",
                                                   "tl_executor_add",
                                                   "tl_submit",
                                                   "tl_submit",
                                                   "tl_submit",
                                                   "tl_resource_offers_grants",
                                                   "tl_status_update",
                                                   "tl_status_update",
                                                   "tl_executor_lost",
                                                   "tl_resource_offers_grants",
                                                   "tl_executor_lost",
                                                   "tl_kill_task",
                                                   "tl_status_update",
                                                   "tl_resource_offers_grants",
                                                   "tl_status_update",
                                                   "tl_status_update",
                                                   "tl_executor_decommission",
                                                   "tl_cancel_stage",
                                                   "tl_cancel_stage",
                                                   "tl_executor_lost"};

static void build_res_prefix(tlt_env *e, oom_ctx *c) {
  for (size_t j = 0; j < c->param; j++) {
    int rc = res_step(e, c, j);
    OOM_ASSERT(rc == TL_OK, "resources step %zu: %s", j, tl_err_name(rc));
  }
  e->now = TLT_SEC * (1 + c->param);
}

static int call_res_step(tlt_env *e, oom_ctx *c) { return res_step(e, c, c->param); }

/* The script's books at a few steps, so that it is known to reach what it claims. */
static void res_script_reaches(void) {
  oom_ctx *c = oom_ctx_new();
  oom_scenario sc = {"", "", cfg_script, NULL, NULL, 0, 0};
  tlt_env *e = oom_fresh(&sc, c);
  tl_resource_info r[2];
  size_t n;
  for (size_t j = 0; j < RES_STEPS; j++) {
    int rc = res_step(e, c, j);
    ck_assert_msg(rc == TL_OK, "step %zu: %s", j, tl_err_name(rc));
    TLT_CHECK(e);
    if (j == 6) { /* whole gpus on both, two halves of one address of g1, the barrier on p1 */
      ck_assert_uint_eq(c->nout, 8);
      ck_assert_uint_eq(c->ngrants, 8);
      ck_assert_int_eq(tl_executor_resources(e->s, "g1", r, 2, &n), TL_OK);
      ck_assert_uint_eq(r[0].free, 1);
      ck_assert_uint_eq(r[0].used, 3 * TL_SHARE_UNIT);
      ck_assert_int_eq(tl_executor_resources(e->s, "p1", r, 2, &n), TL_OK);
      ck_assert_uint_eq(r[0].free, 0);
    }
    if (j == 10 || j == 14) { /* one core free on g1: one launch, one grant */
      ck_assert_uint_eq(c->nout, 1);
      ck_assert_uint_eq(c->ngrants, 1);
      ck_assert_str_eq(c->out[0].executor_id, "g1");
      ck_assert_uint_eq(c->grants[0].share, c->out[0].stage_id == 1 ? 2 : 1);
    }
    if (j == 9 || j == 10) { /* frozen attempts keep their gpus; g2 offers nothing */
      ck_assert_int_eq(tl_executor_resources(e->s, "g2", r, 2, &n), TL_OK);
      ck_assert_uint_eq(n, 2);
      ck_assert_uint_eq(r[0].free, 0);
      ck_assert_uint_eq(r[0].used, 2 * TL_SHARE_UNIT);
    }
    if (j == 15) { /* the failed barrier task gave its gpu back, its killed sibling not yet */
      ck_assert_int_eq(tl_executor_resources(e->s, "p1", r, 2, &n), TL_OK);
      ck_assert_uint_eq(r[0].free, 1);
    }
    if (j == 11) { /* the second phase gave them back */
      ck_assert_int_eq(tl_executor_resources(e->s, "g2", r, 2, &n), TL_EGONE);
    }
  }
  ck_assert_int_eq(tl_executor_resources(e->s, "p1", r, 2, &n), TL_OK);
  ck_assert_uint_eq(r[0].used, 0);
  ck_assert_uint_eq(r[0].free, 2);
  tl_resource_info t[2];
  ck_assert_int_eq(tl_resource_totals(e->s, t, 2, &n), TL_OK);
  for (size_t i = 0; i < n && i < 2; i++)
    ck_assert_uint_eq(t[i].used, 0);
  oom_finish_env(e, "the resources script");
  oom_ctx_free(c);
}

START_TEST(oom_resources) {
  tlt_alloc_install();
  res_script_reaches();
  oom_tally t[2];
  memset(t, 0, sizeof t);
  for (int journal = 0; journal <= 1; journal++) {
    for (size_t j = 0; j < RES_STEPS; j++) {
      char name[64];
      snprintf(name, sizeof name, "resources, call %zu: %s", j, res_names[j]);
      oom_scenario sc = {res_entries[j], name, cfg_script, build_res_prefix, call_res_step, 0u, j};
      oom_sweep(&sc, journal != 0, &t[journal]);
    }
  }
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
  oom_tally_print("resources", "", &t[0]);
  oom_tally_print("resources", ", journaled", &t[1]);
}
END_TEST

Suite *tl_oom_suite(void) {
  Suite *s = suite_create("oom");
  TCase *tc = tlt_tcase(s, "entry_points");
  tcase_add_test(tc, oom_scheduler_new);
  tcase_add_test(tc, oom_executor_add);
  tcase_add_test(tc, oom_submit);
  tcase_add_test(tc, oom_resource_offers);
  tcase_add_test(tc, oom_status_update);
  tcase_add_test(tc, oom_status_updates);
  tcase_add_test(tc, oom_executor_lost);
  tcase_add_test(tc, oom_heartbeat_and_decommission);
  tcase_add_test(tc, oom_kills_cancel_and_partitions);
  tcase_add_test(tc, oom_tick);
  tcase_add_test(tc, oom_locality);
  tcase_add_test(tc, oom_pools);
  tcase_add_test(tc, oom_speculation);
  tcase_add_test(tc, oom_exclusion);
  tcase_add_test(tc, oom_reconcile_after_restore);
  tcase_add_test(tc, oom_outputs_results_barriers_and_fair_rounds);
  tcase_add_test(tc, oom_reentrant_calls);
  tcase_add_test(tc, oom_reentrant_with_a_full_queue);
  tcase_add_test(tc, oom_reservations_at_every_queue_level);
  tcase_add_test(tc, oom_policy_reentrant_with_a_full_queue);
  tcase_add_test(tc, oom_policy_reservations_at_every_queue_level);
  tcase_add_test(tc, oom_scheduler_free_allocates_nothing);
  tcase_add_test(tc, oom_metrics_text_allocates_nothing);
  tc = tlt_tcase(s, "in_place");
  tcase_add_test(tc, in_place_sweep_executors_and_submissions);
  tcase_add_test(tc, in_place_sweep_offers_updates_and_kills);
  tcase_add_test(tc, in_place_sweep_rounds_past_a_straggler);
  tcase_add_test(tc, in_place_sweep_executor_loss_and_cancel);
  tcase_add_test(tc, in_place_tick_retries_a_heartbeat_expiry);
  tcase_add_test(tc, in_place_sweep_large_rounds_and_event_bursts);
  tcase_add_test(tc, in_place_tick_retries_a_pending_loss_deadline);
  tcase_add_test(tc, in_place_sweep_policies);
  tc = tlt_tcase(s, "whole_run");
  tcase_add_test(tc, oom_whole_run);
  tcase_add_test(tc, oom_whole_run_with_policies);
  tcase_add_test(tc, oom_resources);
  return s;
}
