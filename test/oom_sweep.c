/* The out-of-memory sweep of test_oom.c's scenarios, in the manner of SQLite's malloc tests: the
 * allocator's two failure modes, event signatures and state snapshots to compare runs by, and
 * the sweep itself (the reference run, then every allocation failing in turn).
 */
#include "oom_sweep.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * The allocator's two failure modes.
 * ------------------------------------------------------------------------------------------- */

const char *oom_mode_name(oom_mode mode) {
  return mode == OOM_TRANSIENT ? "transient" : "persistent";
}

bool oom_armed; /* between oom_arm and oom_disarm */

void oom_arm(oom_mode mode, uint64_t k) {
  oom_armed = true;
  if (mode == OOM_TRANSIENT)
    tlt_alloc_fail_at(k);
  else
    tlt_alloc_fail_from(k);
}

void oom_disarm(void) {
  oom_armed = false;
  tlt_alloc_fail_from(0);
}

/* ---------------------------------------------------------------------------------------------
 * Event signatures: what the recorder saw since a mark, one line per event, with the parts of
 * each event that tlt_event.line leaves out (messages, loss details, the payload's submission).
 * Two runs of the same scenario must produce the same signature byte for byte.
 * ------------------------------------------------------------------------------------------- */

static void buf_printf(oom_buf *b, const char *fmt, ...) {
  for (;;) {
    size_t room = b->cap - b->n;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p != NULL ? b->p + b->n : NULL, room, fmt, ap);
    va_end(ap);
    OOM_ASSERT(w >= 0, "vsnprintf failed");
    if ((size_t)w < room) {
      b->n += (size_t)w;
      return;
    }
    b->cap = 2 * (b->cap + (size_t)w + 1);
    b->p = realloc(b->p, b->cap);
    OOM_ASSERT(b->p != NULL, "test out of memory");
  }
}

/* The submission a payload belongs to (payload pointers differ from run to run). */
static size_t payload_sub(const void *payload) {
  const tlt_payload *p = payload;
  return p != NULL && p->magic == TLT_PAYLOAD_MAGIC ? p->sub : SIZE_MAX;
}

static char *events_since(const tlt_env *e, size_t mark) {
  oom_buf b = {NULL, 0, 0};
  buf_printf(&b, "%s", "");
  for (size_t i = mark; i < e->nev; i++) {
    const tlt_event *ev = &e->ev[i];
    buf_printf(&b, "%s", ev->line);
    switch (ev->type) {
    case TLT_EV_STARTED:
      buf_printf(&b, " sub=%zu", payload_sub(ev->payload));
      break;
    case TLT_EV_ENDED:
      buf_printf(&b, " sub=%zu size=%zu", payload_sub(ev->payload), ev->result_size);
      break;
    case TLT_EV_FAILED:
      buf_printf(&b, " stage=%u.%u ntasks=%u", ev->ts.stage_id, ev->ts.stage_attempt,
                 ev->ts.ntasks);
      break;
    case TLT_EV_RELEASED:
      buf_printf(&b, " stage=%u.%u ntasks=%u sub=%zu", ev->ts.stage_id, ev->ts.stage_attempt,
                 ev->ts.ntasks, payload_sub(ev->payload));
      break;
    case TLT_EV_LOST:
      buf_printf(&b, " app=%d exit=%d", ev->loss.caused_by_app ? 1 : 0, ev->loss.exit_code);
      break;
    case TLT_EV_KILL:
      buf_printf(&b, " interrupt=%d", ev->interrupt ? 1 : 0);
      break;
    default:
      break;
    }
    if (ev->has_text)
      buf_printf(&b, " text=\"%.80s\" len=%zu", ev->text, strlen(ev->text));
    buf_printf(&b, "\n");
  }
  return b.p;
}

/* Whether got is want cut after one of its lines (the events of a tick cut short). */
static bool is_line_prefix(const char *got, const char *want) {
  size_t n = strlen(got);
  return strncmp(got, want, n) == 0 && (n == 0 || got[n - 1] == '\n');
}

/* ---------------------------------------------------------------------------------------------
 * State snapshots: tl_stats, every executor the recorder has seen and every task set submitted
 * through the harness, as the inspection calls describe them.
 * ------------------------------------------------------------------------------------------- */

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n == 0 ? 1 : n, size);
  OOM_ASSERT(p != NULL, "test out of memory");
  return p;
}

/* An executor's resources as text: each resource's name, addresses, free and used, then the use
 * of each address; NULL when it declares none (or is unknown). */
static char *resources_text(tlt_env *e, const char *id) {
  tl_resource_info r[TL_RESOURCES_MAX];
  size_t n = 0;
  if (tl_executor_resources(e->s, id, r, TL_RESOURCES_MAX, &n) != TL_OK || n == 0)
    return NULL;
  oom_buf b = {NULL, 0, 0};
  for (size_t i = 0; i < n && i < TL_RESOURCES_MAX; i++) {
    buf_printf(&b, "%s: %u addresses, %u free, used %" PRIu64 " [", r[i].name, r[i].addresses,
               r[i].free, r[i].used);
    tl_address_info a[16];
    size_t na = 0;
    int rc = tl_executor_addresses(e->s, id, (uint32_t)i, a, 16, &na);
    OOM_ASSERT(rc == TL_OK, "tl_executor_addresses(%s, %zu): %s", id, i, tl_err_name(rc));
    for (size_t k = 0; k < na && k < 16; k++)
      buf_printf(&b, " %s=%" PRIu64, a[k].address, a[k].used);
    buf_printf(&b, " ]; ");
  }
  return b.p;
}

/* A snapshot; with explain, also tl_explain_taskset of every task set (O(attempts)). */
oom_state *oom_state_take(tlt_env *e, bool explain) {
  oom_state *st = xcalloc(1, sizeof *st);
  tl_stats_get(e->s, &st->stats);
  st->nexecs = e->nexecs;
  st->exec_id = xcalloc(st->nexecs, sizeof *st->exec_id);
  st->exec_rc = xcalloc(st->nexecs, sizeof *st->exec_rc);
  st->exec = xcalloc(st->nexecs, sizeof *st->exec);
  for (size_t i = 0; i < st->nexecs; i++) {
    memcpy(st->exec_id[i], e->execs[i], TL_ID_MAX);
    st->exec_rc[i] = tl_executor_get(e->s, e->execs[i], &st->exec[i]);
  }
  st->nsets = e->nsubs;
  st->set_id = xcalloc(st->nsets, sizeof *st->set_id);
  st->set_rc = xcalloc(st->nsets, sizeof *st->set_rc);
  st->set = xcalloc(st->nsets, sizeof *st->set);
  st->set_explain = xcalloc(st->nsets, sizeof *st->set_explain);
  st->exec_res = xcalloc(st->nexecs, sizeof *st->exec_res);
  for (size_t i = 0; i < st->nexecs; i++)
    st->exec_res[i] = resources_text(e, e->execs[i]);
  static char text[256 * 1024];
  for (size_t i = 0; i < st->nsets; i++) {
    st->set_id[i] = e->subs[i].id;
    st->set_rc[i] = tl_taskset_get(e->s, e->subs[i].id, &st->set[i]);
    if (explain && st->set_rc[i] == TL_OK &&
        tl_explain_taskset(e->s, e->subs[i].id, text, sizeof text) == TL_OK) {
      st->set_explain[i] = strdup(text);
      OOM_ASSERT(st->set_explain[i] != NULL, "test out of memory");
    }
  }
  return st;
}

void oom_state_free(oom_state *st) {
  if (st == NULL)
    return;
  free(st->exec_id);
  free(st->exec_rc);
  free(st->exec);
  free(st->set_id);
  free(st->set_rc);
  free(st->set);
  for (size_t i = 0; i < st->nsets; i++)
    free(st->set_explain[i]);
  free(st->set_explain);
  for (size_t i = 0; i < st->nexecs; i++)
    free(st->exec_res[i]);
  free(st->exec_res);
  free(st);
}

static bool exec_same(const oom_state *a, const oom_state *b, size_t i) {
  if (a->exec_rc[i] != b->exec_rc[i])
    return false;
  if (a->exec_rc[i] != TL_OK)
    return true;
  const tl_executor_status *x = &a->exec[i], *y = &b->exec[i];
  return x->state == y->state && x->cores == y->cores && x->free_cores == y->free_cores &&
         x->running == y->running && x->frozen == y->frozen && strcmp(x->host, y->host) == 0;
}

static void exec_describe(const oom_state *a, size_t i, char *buf, size_t len) {
  const tl_executor_status *x = &a->exec[i];
  if (a->exec_rc[i] != TL_OK)
    snprintf(buf, len, "%s", tl_err_name(a->exec_rc[i]));
  else
    snprintf(buf, len, "state=%d cores=%u free=%u running=%u frozen=%u host=%s", (int)x->state,
             x->cores, x->free_cores, x->running, x->frozen, x->host);
}

static bool set_same(const oom_state *a, const oom_state *b, size_t i) {
  if (a->set_rc[i] != b->set_rc[i] || a->set_id[i] != b->set_id[i])
    return false;
  if (a->set_rc[i] != TL_OK)
    return true;
  const tl_taskset_status *x = &a->set[i], *y = &b->set[i];
  return x->info.id == y->info.id && x->info.stage_id == y->info.stage_id &&
         x->info.stage_attempt == y->info.stage_attempt && x->info.ntasks == y->info.ntasks &&
         x->zombie == y->zombie && x->failed == y->failed && x->running == y->running &&
         x->frozen == y->frozen && x->pending == y->pending && x->succeeded == y->succeeded &&
         x->cpus_per_task == y->cpus_per_task;
}

static void set_describe(const oom_state *a, size_t i, char *buf, size_t len) {
  const tl_taskset_status *x = &a->set[i];
  if (a->set_rc[i] != TL_OK)
    snprintf(buf, len, "%s", tl_err_name(a->set_rc[i]));
  else
    snprintf(buf, len,
             "%" PRIu64 " zombie=%d failed=%d running=%u frozen=%u pending=%u succeeded=%u",
             x->info.id, x->zombie, x->failed, x->running, x->frozen, x->pending, x->succeeded);
}

/* Asserts got is want: every stats field but mem_live_bytes (also that one with bytes),
 * mem_live_blocks exactly, every executor and every task set. */
void oom_state_assert_same(const oom_state *want, const oom_state *got, const char *what,
                           bool bytes) {
  tlt_assert_stats_same_but_memory(&want->stats, &got->stats, what);
  OOM_ASSERT(got->stats.mem_live_blocks == want->stats.mem_live_blocks,
             "%s: mem_live_blocks %zu, want %zu", what, got->stats.mem_live_blocks,
             want->stats.mem_live_blocks);
  if (bytes)
    OOM_ASSERT(got->stats.mem_live_bytes == want->stats.mem_live_bytes,
               "%s: mem_live_bytes %zu, want %zu", what, got->stats.mem_live_bytes,
               want->stats.mem_live_bytes);
  OOM_ASSERT(got->nexecs == want->nexecs, "%s: %zu executors known, want %zu", what, got->nexecs,
             want->nexecs);
  for (size_t i = 0; i < want->nexecs; i++) {
    char a[400], b[400];
    exec_describe(got, i, a, sizeof a);
    exec_describe(want, i, b, sizeof b);
    OOM_ASSERT(strcmp(got->exec_id[i], want->exec_id[i]) == 0 && exec_same(want, got, i),
               "%s: executor %s is %s, want %s", what, want->exec_id[i], a, b);
    const char *x = got->exec_res[i] != NULL ? got->exec_res[i] : "";
    const char *y = want->exec_res[i] != NULL ? want->exec_res[i] : "";
    OOM_ASSERT(strcmp(x, y) == 0, "%s: executor %s's resources are %.1000s, want %.1000s", what,
               want->exec_id[i], x, y);
  }
  OOM_ASSERT(got->nsets == want->nsets, "%s: %zu task sets submitted, want %zu", what, got->nsets,
             want->nsets);
  for (size_t i = 0; i < want->nsets; i++) {
    char a[200], b[200];
    set_describe(got, i, a, sizeof a);
    set_describe(want, i, b, sizeof b);
    OOM_ASSERT(set_same(want, got, i), "%s: task set %" PRIu64 " is %s, want %s", what,
               want->set_id[i], a, b);
    const char *x = got->set_explain[i] != NULL ? got->set_explain[i] : "";
    const char *y = want->set_explain[i] != NULL ? want->set_explain[i] : "";
    OOM_ASSERT(strcmp(x, y) == 0, "%s: task set %" PRIu64 " explained as\n%.1500s\nwant\n%.1500s",
               what, want->set_id[i], x, y);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Scenarios' contexts, journals and tallies.
 * ------------------------------------------------------------------------------------------- */

static uint64_t tally_points(const oom_tally *t) {
  return t->failed[0] + t->failed[1] + t->tolerated[0] + t->tolerated[1];
}

void oom_tally_print(const char *test, const char *variant, const oom_tally *t) {
  fprintf(stderr,
          "oom %s%s: %u scenarios, %" PRIu64 " allocations; swept %" PRIu64
          " points (ENOMEM %" PRIu64 " transient + %" PRIu64 " persistent, tolerated %" PRIu64
          " + %" PRIu64 ")\n",
          test, variant, t->scenarios, t->allocs, tally_points(t), t->failed[0], t->failed[1],
          t->tolerated[0], t->tolerated[1]);
}

oom_ctx *oom_ctx_new(void) { return xcalloc(1, sizeof(oom_ctx)); }

void oom_ctx_free(oom_ctx *c) {
  free(c->jtext.p);
  free(c);
}

/* The tl_config.journal of journaled scenarios: the lines go to the context. */
void oom_journal_line(void *ud, const char *line) {
  oom_ctx *c = ud;
  buf_printf(&c->jtext, "%s\n", line);
}

/* The journal lines written since a mark (a length of jtext). */
const char *oom_journal_since(const oom_ctx *c, size_t jmark) {
  return c->jtext.p != NULL ? c->jtext.p + jmark : "";
}

/* ---------------------------------------------------------------------------------------------
 * The sweep.
 *
 * The reference run builds the scenario and makes the call with nothing failing, and keeps what
 * it did: the state before and after, the events, the launches, the tick's answer and the
 * number of allocations the call made. Then, for each mode and k = 1, 2, ...: build afresh, arm
 * the allocator to fail the k-th allocation from now, make the call, disarm.
 *
 *   TL_ENOMEM: the state equals the one before the call (mem_live_bytes aside: a table or the
 *     event queue may have grown), no callback was delivered and tl_check is clean. In
 *     transient mode the call is then retried with nothing failing and must do exactly what the
 *     reference did (a failed call that consumed an id or left a record half indexed would
 *     show here); in persistent mode the failed state itself is drained. Either way the
 *     scheduler must drain to the empty baseline and leave nothing allocated.
 *   TL_OK with a failure injected: only a best-effort allocation failed (the event queue's
 *     shrink), or a call made from a callback failed and was made again (see reenter, test_oom.c);
 * the call must have done exactly what the reference did. TL_OK with nothing injected: k is past
 * the call's last allocation; the sweep ends.
 *
 * A tick has no error code: it answers 0 and keeps the losses it completed. There the events
 * delivered must be a prefix of the reference's, each executor must be either as it was or as
 * the reference left it, and a second tick must finish the work exactly as the reference did.
 *
 * Every scenario is swept twice, the second time with a call journal (tl_config.journal): then
 * every call allocates its line first, and the lines are compared too. A failed call writes
 * either no line (its own could not be allocated) or the reference's with " = ENOMEM".
 * ------------------------------------------------------------------------------------------- */

typedef struct oom_ref {
  oom_state *before; /* right before the call */
  oom_state *after;  /* right after it */
  char *events;      /* its events' signature */
  char *journal;     /* its journal line (journaled scenarios) */
  tl_launch *out;    /* its launches */
  size_t *out_sub;   /* the submission of each launch's payload (freed with its run) */
  size_t nout;
  tl_grant *grants; /* its grants (tl_resource_offers_grants), in launch order */
  size_t ngrants;
  uint64_t tick;   /* a tick's answer */
  uint64_t allocs; /* allocations it made */
} oom_ref;

typedef enum oom_outcome {
  OOM_CLEAN,     /* TL_OK and no allocation failed */
  OOM_TOLERATED, /* TL_OK although an allocation failed */
  OOM_FAILED     /* TL_ENOMEM (for a tick: 0 with work left) */
} oom_outcome;

/* The demand events (docs/api.md "Demand events"), set in the journaled sweeps: every call then
 * reserves their room too, and none may allocate for them once it has begun to change things. */
static void demand_unsched(void *ud, const tl_taskset_info *ts, const char *reason) {
  (void)ud, (void)ts, (void)reason;
}
static void demand_sched(void *ud, const tl_taskset_info *ts) { (void)ud, (void)ts; }
static void demand_changed(void *ud, const tl_demand *d) { (void)ud, (void)d; }

static void record_removed_and_demand(tl_callbacks *cb) {
  tlt_record_removed(cb);
  cb->taskset_unschedulable = demand_unsched;
  cb->taskset_schedulable = demand_sched;
  cb->demand_changed = demand_changed;
}

tlt_env *oom_fresh(const oom_scenario *sc, oom_ctx *c) {
  tl_config cfg = tlt_config();
  if (sc->config != NULL)
    sc->config(&cfg);
  c->jtext.n = 0;
  if (c->journal) {
    cfg.journal = oom_journal_line;
    cfg.journal_ud = c;
  }
  /* Every event a loss can make; journaled, the demand events too. */
  tlt_env *e = tlt_new_edit(&cfg, c->journal ? record_removed_and_demand : tlt_record_removed);
  c->param = sc->param;
  c->flags = sc->flags;
  c->inner_failures = 0;
  c->inner_lines = 0;
  c->hooked = 0;
  c->nlog = 0;
  c->nout = 0;
  c->ngrants = 0;
  c->tick = 0;
  if (sc->build != NULL)
    sc->build(e, c);
  c->nout = 0;
  c->ngrants = 0;
  /* Every call that reads the clock moves the scheduler's time to the reading, before it can
   * fail, so a failed call may leave the time later than it was (tl_explain_taskset says how
   * far off each deadline is). A heartbeat of an unknown id reads the clock and changes
   * nothing else: after it the call under test cannot move the time. */
  OOM_ASSERT(tl_executor_heartbeat(e->s, "clock") == TL_ENOENT, "no executor named clock");
  TLT_CHECK(e);
  OOM_ASSERT(tlt_stats(e).events_queued == 0, "builder left events queued");
  return e;
}

/* Drains and frees the scheduler (tlt_end), then checks nothing is left allocated. A big
 * ledger (hundreds of executors, task sets or attempts) is first drained the same way without
 * tl_check after every step, which would make the drain quadratic; tlt_end then checks the
 * result and finds nothing left to do. */
void oom_finish_env(tlt_env *e, const char *what) {
  tl_stats st = tlt_stats(e);
  if (e->nsubs > 16 || e->nexecs > 16 || st.attempts_running + st.attempts_frozen > 64) {
    for (size_t i = 0; i < e->nexecs; i++) {
      tl_loss_reason why = {.kind = TL_LOSS_KILLED, .message = "test drain"};
      int rc = tl_executor_lost(e->s, e->execs[i], &why);
      OOM_ASSERT(rc == TL_OK || rc == TL_EGONE || rc == TL_ENOENT, "%s: drain: %s", what,
                 tl_err_name(rc));
    }
    for (size_t i = 0; i < e->nsubs; i++) {
      if (e->subs[i].released != 0)
        continue;
      int rc = tl_cancel_stage(e->s, e->subs[i].stage_id, "test drain");
      OOM_ASSERT(rc == TL_OK, "%s: drain: tl_cancel_stage: %s", what, tl_err_name(rc));
    }
    if (e->cfg.tombstone_ttl_ns != 0) { /* tlt_end then finds the ids forgotten */
      e->now += e->cfg.tombstone_ttl_ns + 1;
      (void)tl_tick(e->s);
    }
  }
  tlt_end(e);
  OOM_ASSERT(tlt_alloc_live_blocks() == 0, "%s: %zu blocks still allocated with no scheduler", what,
             tlt_alloc_live_blocks());
}

static void launches_assert_same(const oom_ctx *c, const oom_ref *ref, const char *what) {
  OOM_ASSERT(c->nout == ref->nout, "%s: %zu launches, want %zu", what, c->nout, ref->nout);
  for (size_t i = 0; i < ref->nout; i++) {
    const tl_launch *a = &c->out[i], *b = &ref->out[i];
    OOM_ASSERT(a->tid == b->tid && a->taskset == b->taskset && a->stage_id == b->stage_id &&
                   a->stage_attempt == b->stage_attempt && a->index == b->index &&
                   a->attempt == b->attempt && a->cpus == b->cpus &&
                   strcmp(a->executor_id, b->executor_id) == 0 && a->locality == b->locality &&
                   payload_sub(a->payload) == ref->out_sub[i],
               "%s: launch %zu is tid %" PRIu64 " index %u on %s, want tid %" PRIu64
               " index %u on %s",
               what, i, a->tid, a->index, a->executor_id, b->tid, b->index, b->executor_id);
    OOM_ASSERT(a->ngrants == b->ngrants, "%s: launch %zu holds %u grants, want %u", what, i,
               a->ngrants, b->ngrants);
  }
  OOM_ASSERT(c->ngrants == ref->ngrants, "%s: %zu grants, want %zu", what, c->ngrants,
             ref->ngrants);
  for (size_t i = 0; i < ref->ngrants; i++)
    OOM_ASSERT(c->grants[i].resource == ref->grants[i].resource &&
                   c->grants[i].address == ref->grants[i].address &&
                   c->grants[i].share == ref->grants[i].share,
               "%s: grant %zu is %u/%u/%u, want %u/%u/%u", what, i, c->grants[i].resource,
               c->grants[i].address, c->grants[i].share, ref->grants[i].resource,
               ref->grants[i].address, ref->grants[i].share);
}

/* The journal lines of text but those of calls that failed with TL_ENOMEM (counted in
 * *failed_lines). */
static char *journal_without_enomem(const char *text, uint64_t *failed_lines) {
  static const char failed[] = " = ENOMEM\n";
  oom_buf b = {NULL, 0, 0};
  buf_printf(&b, "%s", "");
  for (const char *p = text; *p != '\0';) {
    const char *nl = strchr(p, '\n');
    size_t len = nl != NULL ? (size_t)(nl - p) + 1 : strlen(p);
    if (len < sizeof failed - 1 ||
        strncmp(p + len - (sizeof failed - 1), failed, sizeof failed - 1) != 0)
      buf_printf(&b, "%.*s", (int)len, p);
    else
      ++*failed_lines;
    p += len;
  }
  return b.p;
}

/* Asserts the call (whose events start at mark, its journal lines at jmark) did exactly what
 * the reference did. A re-entrant call that failed inside it has a journal line of its own. */
static void expect_like_ref(tlt_env *e, const oom_ctx *c, const oom_ref *ref, size_t mark,
                            size_t jmark, bool tick, const char *what) {
  TLT_CHECK(e);
  if (c->journal) {
    uint64_t failed_lines = 0;
    char *got = c->flags & OOM_REENTRANT
                    ? journal_without_enomem(oom_journal_since(c, jmark), &failed_lines)
                    : strdup(oom_journal_since(c, jmark));
    OOM_ASSERT(got != NULL, "test out of memory");
    OOM_ASSERT(failed_lines == c->inner_lines,
               "%s: %" PRIu64 " re-entrant calls journaled as ENOMEM, want %" PRIu64 "\n%.3000s",
               what, failed_lines, c->inner_lines, oom_journal_since(c, jmark));
    OOM_ASSERT(
        strcmp(got, ref->journal) == 0,
        "%s: journal differs from the run without failures\n--- got:\n%.1000s\n--- want:\n%.1000s",
        what, got, ref->journal);
    free(got);
  }
  char *got = events_since(e, mark);
  OOM_ASSERT(strcmp(got, ref->events) == 0,
             "%s: events differ from the run without failures\n--- got:\n%.1500s--- want:\n%.1500s",
             what, got, ref->events);
  free(got);
  oom_state *now = oom_state_take(e, true);
  oom_state_assert_same(ref->after, now, what, false);
  oom_state_free(now);
  launches_assert_same(c, ref, what);
  if (tick)
    OOM_ASSERT(c->tick == ref->tick, "%s: tick answered %" PRIu64 ", want %" PRIu64, what, c->tick,
               ref->tick);
}

/* After a tick cut short: what it did is the start of what the reference did, delivered (the
 * losses it completed made their events). A tick that could not journal itself did nothing. */
static void expect_partial_tick(tlt_env *e, const oom_ctx *c, const oom_ref *ref,
                                const oom_state *before, size_t mark, size_t jmark,
                                const char *what) {
  TLT_CHECK(e);
  OOM_ASSERT(tlt_stats(e).events_queued == 0, "%s: a tick cut short left %zu events queued", what,
             tlt_stats(e).events_queued);
  if (c->journal && *oom_journal_since(c, jmark) == '\0') {
    oom_state *now = oom_state_take(e, true);
    oom_state_assert_same(before, now, "a tick that could not journal itself", false);
    oom_state_free(now);
    OOM_ASSERT(e->nev == mark, "%s: a tick that could not journal itself delivered events", what);
  }
  char *got = events_since(e, mark);
  OOM_ASSERT(is_line_prefix(got, ref->events),
             "%s: the events of a tick cut short are not the start of the full tick's\n"
             "--- got:\n%.1500s--- want a prefix of:\n%.1500s",
             what, got, ref->events);
  free(got);
  oom_state *now = oom_state_take(e, true);
  OOM_ASSERT(now->nexecs == before->nexecs, "%s: executors known changed", what);
  for (size_t i = 0; i < now->nexecs; i++) {
    char a[400], b[400], d[400];
    exec_describe(now, i, a, sizeof a);
    exec_describe(before, i, b, sizeof b);
    exec_describe(ref->after, i, d, sizeof d);
    OOM_ASSERT(exec_same(now, before, i) || exec_same(now, ref->after, i),
               "%s: executor %s is %s: neither as before (%s) nor as after the tick (%s)", what,
               now->exec_id[i], a, b, d);
  }
  oom_state_free(now);
}

static void reference_run(const oom_scenario *sc, oom_ref *ref, oom_ctx *c) {
  char what[256];
  snprintf(what, sizeof what, "%s (%s), nothing failing", sc->entry, sc->name);
  tlt_env *e = oom_fresh(sc, c);
  ref->before = oom_state_take(e, true);
  size_t mark = e->nev, jmark = c->jtext.n;
  uint64_t calls = tlt_alloc_calls();
  int rc = sc->call(e, c);
  ref->allocs = tlt_alloc_calls() - calls;
  OOM_ASSERT(rc == TL_OK, "%s: returned %s", what, tl_err_name(rc));
  OOM_ASSERT(c->inner_failures == 0, "%s: a re-entrant call failed", what);
  TLT_CHECK(e);
  if (sc->flags & OOM_TICK)
    OOM_ASSERT(c->tick != 0, "%s: the tick answered 0, so a sweep could not tell", what);
  /* With a journal every call allocates its line, and nothing more if it allocated nothing. */
  if (sc->flags & OOM_NO_ALLOC)
    OOM_ASSERT(ref->allocs == (c->journal ? 1 : 0), "%s: made %" PRIu64 " allocations, want %d",
               what, ref->allocs, c->journal ? 1 : 0);
  if (sc->flags & OOM_ALLOCATES)
    OOM_ASSERT(ref->allocs > 0, "%s: made no allocation", what);
  ref->after = oom_state_take(e, true);
  ref->events = events_since(e, mark);
  ref->journal = strdup(oom_journal_since(c, jmark));
  OOM_ASSERT(ref->journal != NULL, "test out of memory");
  if (c->journal && !(sc->flags & OOM_REENTRANT))
    OOM_ASSERT(strchr(ref->journal, '\n') == ref->journal + strlen(ref->journal) - 1,
               "%s: want one journal line, got:\n%.1000s", what, ref->journal);
  ref->nout = c->nout;
  ref->out = xcalloc(c->nout, sizeof *ref->out);
  memcpy(ref->out, c->out, c->nout * sizeof *ref->out);
  ref->out_sub = xcalloc(c->nout, sizeof *ref->out_sub);
  for (size_t i = 0; i < c->nout; i++) {
    ref->out_sub[i] = payload_sub(c->out[i].payload);
    ref->out[i].payload = NULL; /* freed with the run */
  }
  ref->ngrants = c->ngrants;
  ref->grants = xcalloc(c->ngrants, sizeof *ref->grants);
  memcpy(ref->grants, c->grants, c->ngrants * sizeof *ref->grants);
  ref->tick = c->tick;
  if (getenv("TLT_OOM_VERBOSE") != NULL)
    fprintf(stderr, "%s: %" PRIu64 " allocations\n%s", what, ref->allocs, ref->events);
  oom_finish_env(e, what);
}

static void ref_free(oom_ref *ref) {
  oom_state_free(ref->before);
  oom_state_free(ref->after);
  free(ref->events);
  free(ref->journal);
  free(ref->out);
  free(ref->out_sub);
  free(ref->grants);
}

/* The journal of a call that ran out of memory: no line if its own line could not be
 * allocated, else the reference's line with " = ENOMEM" for its result (a tick cut short still
 * says OK: it keeps the losses it completed). */
static void expect_failed_journal(const oom_ctx *c, const oom_ref *ref, size_t jmark, bool tick,
                                  const char *what) {
  const char *got = oom_journal_since(c, jmark);
  if (*got == '\0')
    return;
  /* The call's own line is the reference's first; the others are those of re-entrant calls
   * made from its callbacks, which a failed call does not make. */
  const char *nl = strchr(ref->journal, '\n');
  OOM_ASSERT(nl != NULL, "%s: the reference wrote no journal line", what);
  int len = (int)(nl - ref->journal);
  const char *result = NULL;
  for (const char *p = strstr(ref->journal, " = "); p != NULL && p < nl; p = strstr(p + 1, " = "))
    result = p;
  OOM_ASSERT(result != NULL, "%s: journal line without a result: %.*s", what, len, ref->journal);
  oom_buf want = {NULL, 0, 0};
  if (tick)
    buf_printf(&want, "%.*s\n", len, ref->journal);
  else
    buf_printf(&want, "%.*s = ENOMEM\n", (int)(result - ref->journal), ref->journal);
  OOM_ASSERT(strcmp(got, want.p) == 0,
             "%s: journal of the failed call is\n%.500s\nwant nothing or\n%.500s", what, got,
             want.p);
  free(want.p);
}

/* One try: build, fail allocation k in mode, make the call, check. After a transient failure
 * the call is made again with nothing failing and must match the reference; after a persistent
 * one the scheduler is drained straight from the failed state. (Both modes fail the same k-th
 * allocation first, so each failure point gets both checks.) */
static oom_outcome try_at(const oom_scenario *sc, const oom_ref *ref, oom_ctx *c, oom_mode mode,
                          uint64_t k) {
  bool retry = mode == OOM_TRANSIENT;
  char what[256];
  snprintf(what, sizeof what, "%s (%s%s), allocation %" PRIu64 " failing, %s", sc->entry, sc->name,
           c->journal ? ", journaled" : "", k, oom_mode_name(mode));
  bool tick = (sc->flags & OOM_TICK) != 0;
  tlt_env *e = oom_fresh(sc, c);
  oom_state *before = oom_state_take(e, true);
  oom_state_assert_same(ref->before, before, "the builder is not deterministic", true);
  size_t mark = e->nev, jmark = c->jtext.n;

  oom_arm(mode, k);
  int rc = sc->call(e, c);
  bool hit = tlt_alloc_failed() || c->inner_failures != 0;
  oom_disarm();

  bool failed = tick ? hit && c->tick == 0 : rc != TL_OK;
  if (!failed) {
    OOM_ASSERT(rc == TL_OK, "%s: returned %s", what, tl_err_name(rc));
    expect_like_ref(e, c, ref, mark, jmark, tick, what);
    oom_finish_env(e, what);
    oom_state_free(before);
    return hit ? OOM_TOLERATED : OOM_CLEAN;
  }

  if (tick) {
    expect_partial_tick(e, c, ref, before, mark, jmark, what);
  } else {
    OOM_ASSERT(rc == TL_ENOMEM, "%s: returned %s, want ENOMEM", what, tl_err_name(rc));
    OOM_ASSERT(hit, "%s: returned ENOMEM with no allocation failing", what);
    OOM_ASSERT(e->nev == mark, "%s: failed with ENOMEM but delivered %zu callbacks", what,
               e->nev - mark);
    TLT_CHECK(e);
    oom_state *after = oom_state_take(e, true);
    oom_state_assert_same(before, after, what, false);
    oom_state_free(after);
  }
  if (c->journal)
    expect_failed_journal(c, ref, jmark, tick, what);
  if (retry) {
    jmark = c->jtext.n;
    rc = sc->call(e, c);
    OOM_ASSERT(rc == TL_OK, "%s: the retry with nothing failing returned %s", what,
               tl_err_name(rc));
    OOM_ASSERT(!tick || c->tick != 0, "%s: the retried tick answered 0 again", what);
    expect_like_ref(e, c, ref, mark, jmark, tick, what);
  }
  oom_finish_env(e, what);
  oom_state_free(before);
  return OOM_FAILED;
}

/* Sweeps one scenario in both modes, with or without a call journal. */
void oom_sweep(const oom_scenario *sc, bool journal, oom_tally *t) {
  oom_ref ref;
  memset(&ref, 0, sizeof ref);
  oom_ctx *c = oom_ctx_new();
  c->journal = journal;
  reference_run(sc, &ref, c);
  t->scenarios++;
  t->allocs += ref.allocs;
  for (int m = OOM_TRANSIENT; m <= OOM_PERSISTENT; m++) {
    uint64_t k = 1;
    for (;; k++) {
      OOM_ASSERT(k <= ref.allocs + 1,
                 "%s (%s%s), %s: allocation %" PRIu64 " still fails the call, which makes %" PRIu64
                 " allocations when nothing fails",
                 sc->entry, sc->name, journal ? ", journaled" : "", oom_mode_name((oom_mode)m), k,
                 ref.allocs);
      oom_outcome o = try_at(sc, &ref, c, (oom_mode)m, k);
      if (o == OOM_CLEAN)
        break;
      if (o == OOM_TOLERATED)
        t->tolerated[m]++;
      else
        t->failed[m]++;
    }
    if (sc->flags & OOM_ALLOCATES)
      OOM_ASSERT(k > 1, "%s (%s), %s: the sweep injected no failure", sc->entry, sc->name,
                 oom_mode_name((oom_mode)m));
  }
  if (getenv("TLT_OOM_VERBOSE") != NULL)
    fprintf(stderr, "%s (%s%s): %" PRIu64 " allocations\n", sc->entry, sc->name,
            journal ? ", journaled" : "", ref.allocs);
  ref_free(&ref);
  oom_ctx_free(c);
}

/* Sweeps every scenario, without and then with a call journal. */
void oom_sweep_all(const char *test, const oom_scenario *sc, size_t n) {
  oom_tally t[2];
  memset(t, 0, sizeof t);
  tlt_alloc_install();
  for (int journal = 0; journal <= 1; journal++)
    for (size_t i = 0; i < n; i++)
      oom_sweep(&sc[i], journal != 0, &t[journal]);
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
  oom_tally_print(test, "", &t[0]);
  oom_tally_print(test, ", journaled", &t[1]);
}
