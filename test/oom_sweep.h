/* The out-of-memory sweep (oom_sweep.c, which says how it works): a scenario's state is built
 * afresh for every allocation its call makes, that allocation fails, transiently or persistently,
 * and a failed call must have changed nothing, a successful one done exactly what it does when
 * nothing fails. The scenarios and the tests are in test_oom.c.
 */
#ifndef TLT_OOM_SWEEP_H
#define TLT_OOM_SWEEP_H

#include "harness.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ck_assert_msg, except that a passing assertion costs nothing: Check records the site of every
 * passing ck_assert in its message file, and the sweeps make millions of assertions. */
#define OOM_ASSERT(cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ck_abort_msg(__VA_ARGS__);                                                                   \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * The allocator's two failure modes.
 * ------------------------------------------------------------------------------------------- */

typedef enum oom_mode {
  OOM_TRANSIENT = 0, /* only the k-th allocation from now fails */
  OOM_PERSISTENT = 1 /* the k-th and every later one fail */
} oom_mode;

const char *oom_mode_name(oom_mode mode);
extern bool oom_armed; /* between oom_arm and oom_disarm */
void oom_arm(oom_mode mode, uint64_t k);
void oom_disarm(void);

/* ---------------------------------------------------------------------------------------------
 * State snapshots: tl_stats, every executor the recorder has seen and every task set submitted
 * through the harness, as the inspection calls describe them.
 * ------------------------------------------------------------------------------------------- */

typedef struct oom_state {
  tl_stats stats;
  size_t nexecs;
  char (*exec_id)[TL_ID_MAX];
  int *exec_rc; /* tl_executor_get's answer */
  tl_executor_status *exec;
  size_t nsets;
  tl_taskset_id *set_id;
  int *set_rc; /* tl_taskset_get's answer */
  tl_taskset_status *set;
  char **set_explain; /* tl_explain_taskset's text (attempt states and all), or NULL */
  char **exec_res;    /* each executor's resources (tl_executor_resources and the use of each
                         address, tl_executor_addresses), as text; NULL when it has none */
} oom_state;

oom_state *oom_state_take(tlt_env *e, bool explain);
void oom_state_free(oom_state *st);
void oom_state_assert_same(const oom_state *want, const oom_state *got, const char *what,
                           bool bytes);

/* ---------------------------------------------------------------------------------------------
 * Scenarios. A scenario builds a scheduler state from scratch, deterministically and with no
 * allocation failing, then makes the one call under test. Whatever the builder and the call
 * need to remember (the launches made so far) lives in the context, which is rebuilt with the
 * state every time.
 * ------------------------------------------------------------------------------------------- */

/* A text that grows (oom_ctx.jtext). */
typedef struct oom_buf {
  char *p;    /* NUL-terminated text, or NULL while empty */
  size_t n;   /* bytes of text */
  size_t cap; /* bytes allocated */
} oom_buf;

enum { OOM_LOG_MAX = 640 }; /* launches a scenario may make in all */

typedef struct oom_ctx {
  size_t param;               /* the scenario's parameter (from a probe, or a step number) */
  tl_launch log[OOM_LOG_MAX]; /* every launch made so far, the builder's and the call's */
  size_t nlog;
  tl_launch out[OOM_LOG_MAX]; /* the launches of the last offer round (0 after the builder) */
  size_t nout;
  tl_grant grants[OOM_LOG_MAX]; /* that round's grants (tl_resource_offers_grants), out[i].grants
                                   pointing here; ngrants 0 after a plain tl_resource_offers */
  size_t ngrants;
  uint64_t tick;           /* tl_tick's answer, for OOM_TICK calls */
  unsigned flags;          /* the scenario's OOM_* */
  uint64_t inner_failures; /* re-entrant calls that ran out of memory (see reenter, test_oom.c) */
  uint64_t inner_lines;    /* of which journaled (their line was allocated) */
  size_t hooked;           /* events the hook has answered */
  size_t fill;             /* kills hook_fill_level queues before its call */
  bool journal;  /* the scheduler has a call journal (tl_config.journal), written to jtext */
  oom_buf jtext; /* every journal line so far, each ending in a newline */
} oom_ctx;

#define OOM_ALLOCATES 1u /* the call must allocate: the sweep must make it fail at least once */
#define OOM_NO_ALLOC 2u  /* the call must not allocate at all */
#define OOM_TICK 4u      /* a tl_tick: out of memory is an answer of 0 with the work cut short */
#define OOM_REENTRANT 8u /* a harness hook makes calls from inside the call's callbacks */

typedef struct oom_scenario {
  const char *entry;              /* the entry point under test */
  const char *name;               /* the state it is called in */
  void (*config)(tl_config *cfg); /* edits the defaults, or NULL */
  void (*build)(tlt_env *e, oom_ctx *c);
  int (*call)(tlt_env *e, oom_ctx *c); /* the call; TL_OK for a tick (its answer in c->tick) */
  unsigned flags;                      /* OOM_* */
  size_t param;                        /* copied to oom_ctx.param */
} oom_scenario;

/* What a sweep found, summed over scenarios. */
typedef struct oom_tally {
  unsigned scenarios;
  uint64_t allocs;       /* allocations the calls make when nothing fails */
  uint64_t failed[2];    /* allocation points where the call returned TL_ENOMEM, per mode */
  uint64_t tolerated[2]; /* where the call succeeded anyway: a best-effort shrink failed, or a
                            re-entrant call failed and the hook made it again */
} oom_tally;

#define B_OK(call)                                                                                 \
  do {                                                                                             \
    int rc_b_ = (call);                                                                            \
    OOM_ASSERT(rc_b_ == TL_OK, "builder: %s: %s", #call, tl_err_name(rc_b_));                      \
  } while (0)

oom_ctx *oom_ctx_new(void);
void oom_ctx_free(oom_ctx *c);
void oom_journal_line(void *ud, const char *line);
const char *oom_journal_since(const oom_ctx *c, size_t jmark);
void oom_tally_print(const char *test, const char *variant, const oom_tally *t);

/* ---------------------------------------------------------------------------------------------
 * The sweep (oom_sweep.c says what it checks).
 * ------------------------------------------------------------------------------------------- */

tlt_env *oom_fresh(const oom_scenario *sc, oom_ctx *c);
void oom_finish_env(tlt_env *e, const char *what);
void oom_sweep(const oom_scenario *sc, bool journal, oom_tally *t);
void oom_sweep_all(const char *test, const oom_scenario *sc, size_t n);

#define SWEEP_ALL(test, table) oom_sweep_all(test, table, sizeof table / sizeof table[0])

#endif /* TLT_OOM_SWEEP_H */
