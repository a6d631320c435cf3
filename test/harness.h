/* Shared helpers of the taskledger Check suites: a manual clock, a recorder of every callback,
 * wrappers that assert success and tl_check after each state-changing call, a counting (and
 * failing) allocator, and the end-of-test drain that proves the scheduler is back to empty.
 */
#ifndef TLT_HARNESS_H
#define TLT_HARNESS_H

#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* pthread, strdup */
#endif

#include <check.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskledger.h"

/* ---------------------------------------------------------------------------------------------
 * Suites (one per test_<module>.c), declared from the one list of them: TLT_SUITES of
 * test/CMakeLists.txt, generated into suites.h.
 * ------------------------------------------------------------------------------------------- */

#include "suites.h"

#define TLT_DECLARE_SUITE(suite) Suite *tl_##suite##_suite(void);
TLT_SUITE_LIST(TLT_DECLARE_SUITE)
#undef TLT_DECLARE_SUITE

/* A test case with the project's per-test timeout. */
TCase *tlt_tcase(Suite *suite, const char *name);

#define TLT_SEC UINT64_C(1000000000) /* nanoseconds in a second */

/* ---------------------------------------------------------------------------------------------
 * The recorder.
 * ------------------------------------------------------------------------------------------- */

typedef enum tlt_ev_type {
  TLT_EV_STARTED,
  TLT_EV_ENDED,
  TLT_EV_FAILED,
  TLT_EV_RELEASED,
  TLT_EV_ADDED,
  TLT_EV_LOST,
  TLT_EV_REVIVE,
  TLT_EV_KILL,
  TLT_EV_SPECULATIVE,
  TLT_EV_REMOVED /* only in envs that record it (tlt_record_removed) */
} tlt_ev_type;

/* One delivered callback, copied (strings included) so it outlives the callback. */
typedef struct tlt_event {
  tlt_ev_type type;
  tl_task_info task; /* started, ended: executor_id, host and grants are NULL in the
                        copy (ngrants stays: grants holds them) */
  tl_grant grants[TL_TASK_GRANTS_MAX]; /* started, ended: the attempt's grants */
  char executor[TL_ID_MAX];    /* started, ended, added, lost, kill, removed: the executor id */
  void *executor_ud;           /* lost, removed, kill: the executor's ud as delivered (started,
                                  ended: task.executor_ud) */
  char host[TL_HOST_MAX];      /* started, ended, added: its host */
  tl_end_kind end_kind;        /* ended */
  bool counts;                 /* ended: counts_toward_failures */
  void *result;                /* ended: the result pointer that was handed over */
  size_t result_size;          /* ended */
  void (*result_free)(void *); /* ended: as task_ended got it */
  tl_taskset_info ts;          /* failed, released */
  void *payload;               /* released: the payload handed back; started, ended: task's */
  tl_loss_reason loss;         /* lost, removed: message is NULL (text holds it) */
  tl_tid kill_tid;             /* kill */
  uint32_t index;              /* speculative: the index whose copy waits */
  bool interrupt;              /* kill */
  bool has_text;               /* text holds a message or reason (it was not NULL) */
  char text[512];              /* ended, lost, removed: message; failed, kill: reason */
  char line[192 + TL_ID_MAX + TL_HOST_MAX]; /* one-line summary ("ended tid=3 kind=...") */
  pthread_t thread;                         /* the thread that delivered it */
} tlt_event;

/* A result handed to FINISHED updates. result_free marks it freed; memory is kept until the end
 * of the test so a double free is counted instead of crashing. */
typedef struct tlt_result {
  uint32_t magic;      /* TLT_RESULT_MAGIC */
  unsigned frees;      /* times it was freed: must end at exactly 1 */
  size_t size;         /* the size given with the update */
  struct tlt_env *env; /* its test */
} tlt_result;

typedef struct tlt_payload {
  uint32_t magic; /* TLT_PAYLOAD_MAGIC */
  size_t sub;     /* index of its submission in env->subs */
} tlt_payload;

/* One task set submitted through the harness. */
typedef struct tlt_submission {
  tl_taskset_id id;     /* as tl_submit returned it */
  tlt_payload *payload; /* what was given to tl_submit */
  uint32_t stage_id;    /* as submitted */
  uint32_t stage_attempt;
  uint32_t ntasks;
  bool prefs;         /* some task has a preferred location */
  unsigned released;  /* taskset_released deliveries seen: must end at exactly 1 */
  size_t released_at; /* event index of the (first) release */
} tlt_submission;

typedef struct tlt_env tlt_env;

/* Called after an event has been recorded; may call the library (re-entrancy). */
typedef void (*tlt_hook)(tlt_env *e, const tlt_event *ev);

struct tlt_env {
  tl_scheduler *s;    /* the scheduler under test */
  tl_config cfg;      /* as given to tl_scheduler_new (clock = tlt_clock) */
  uint64_t now;       /* the manual clock, in nanoseconds */
  size_t base_bytes;  /* tl_stats.mem_live_bytes right after tl_scheduler_new */
  size_t base_blocks; /* and mem_live_blocks */
  tlt_event *ev;      /* every callback delivered, in order */
  size_t nev;
  size_t evcap;
  tlt_submission *subs; /* every successful submission */
  size_t nsubs;
  size_t subcap;
  char (*execs)[TL_ID_MAX]; /* every executor id seen in executor_added */
  size_t nexecs;
  size_t execcap;
  struct tlt_exec_ud **uds; /* the uds tlt_add registered executors with, one per id */
  size_t nuds;
  size_t udcap;
  tlt_result **results; /* every result made by tlt_result_new */
  size_t nresults;
  size_t rescap;
  tlt_hook hook;        /* test-specific behaviour after each event, or NULL */
  void *hook_ud;        /* for the hook */
  bool auto_kill;       /* kill_task answers with a KILLED update at once */
  bool in_callback;     /* a callback of this env is running (on some thread) */
  bool no_callbacks;    /* created with cb NULL: nothing is recorded */
  bool records_removed; /* executor_removed is recorded (tlt_record_removed): the recorder
                           checks every event against it, and the end that every executor lost
                           was removed as often */
  char *seqbuf;         /* tlt_seq's answer */
  size_t seqcap;
};

/* ---------------------------------------------------------------------------------------------
 * Call sites: helpers report the test line that called them.
 * ------------------------------------------------------------------------------------------- */

extern int tlt_line; /* the test line of the helper running (Check names the test) */
#define TLT_SITE() (tlt_line = __LINE__)

/* Asserts tl_check is clean, printing its first violation. */
#define TLT_CHECK(e)                                                                               \
  do {                                                                                             \
    char why_[512] = "";                                                                           \
    int crc_ = tl_check((e)->s, why_, sizeof why_);                                                \
    ck_assert_msg(crc_ == TL_OK, "tl_check: %s: %s", tl_err_name(crc_), why_);                     \
  } while (0)

/* Runs a state-changing call, asserts TL_OK, then tl_check. */
#define TLT_OK(e, call)                                                                            \
  do {                                                                                             \
    int rc_ = (call);                                                                              \
    ck_assert_msg(rc_ == TL_OK, "%s returned %s", #call, tl_err_name(rc_));                        \
    TLT_CHECK(e);                                                                                  \
  } while (0)

/* Runs a call that must fail with want and change nothing: stats equal before and after (the
 * counters stale_updates / rejected_updates may only move for TL_ESTALE / TL_EOWNER answers of
 * status updates, see TLT_UPDATE_ERR), no callback delivered, tl_check clean. */
#define TLT_ERR(e, want, call)                                                                     \
  do {                                                                                             \
    TLT_SITE();                                                                                    \
    tl_stats before_, after_;                                                                      \
    tl_stats_get((e)->s, &before_);                                                                \
    size_t nev_ = (e)->nev;                                                                        \
    int rc_ = (call);                                                                              \
    ck_assert_msg(rc_ == (want), "%s returned %s, want %s", #call, tl_err_name(rc_),               \
                  tl_err_name(want));                                                              \
    tl_stats_get((e)->s, &after_);                                                                 \
    tlt_assert_stats_same(&before_, &after_, #call);                                               \
    ck_assert_msg((e)->nev == nev_, "%s delivered %zu callbacks", #call, (e)->nev - nev_);         \
    TLT_CHECK(e);                                                                                  \
  } while (0)

/* TLT_ERR for tl_status_update: TL_ESTALE raises stale_updates by one, TL_EOWNER raises
 * rejected_updates by one, any other error neither. */
#define TLT_UPDATE_ERR(e, want, call)                                                              \
  do {                                                                                             \
    TLT_SITE();                                                                                    \
    tl_stats before_, after_;                                                                      \
    tl_stats_get((e)->s, &before_);                                                                \
    size_t nev_ = (e)->nev;                                                                        \
    int rc_ = (call);                                                                              \
    ck_assert_msg(rc_ == (want), "%s returned %s, want %s", #call, tl_err_name(rc_),               \
                  tl_err_name(want));                                                              \
    if ((want) == TL_ESTALE)                                                                       \
      before_.stale_updates++;                                                                     \
    if ((want) == TL_EOWNER)                                                                       \
      before_.rejected_updates++;                                                                  \
    tl_stats_get((e)->s, &after_);                                                                 \
    tlt_assert_stats_same(&before_, &after_, #call);                                               \
    ck_assert_msg((e)->nev == nev_, "%s delivered %zu callbacks", #call, (e)->nev - nev_);         \
    TLT_CHECK(e);                                                                                  \
  } while (0)

/* Compares every field of two stats; fails naming the first that differs. */
void tlt_assert_stats_same(const tl_stats *a, const tl_stats *b, const char *what);
/* The same, ignoring mem_live_bytes and mem_live_blocks (TL_ENOMEM may grow capacity). */
void tlt_assert_stats_same_but_memory(const tl_stats *a, const tl_stats *b, const char *what);

/* ---------------------------------------------------------------------------------------------
 * Environment.
 * ------------------------------------------------------------------------------------------- */

/* The defaults of tl_config_init (the clock is set by tlt_new). */
tl_config tlt_config(void);
/* A scheduler with cfg (NULL: defaults), the manual clock at 1 s and the recording callbacks. */
tlt_env *tlt_new(const tl_config *cfg);
/* The same with the recorder's callbacks edited first (e.g. a member set to NULL). */
tlt_env *tlt_new_edit(const tl_config *cfg, void (*edit)(tl_callbacks *cb));
/* The same with no callbacks at all (cb NULL): the drain checks releases by tl_stats only. */
tlt_env *tlt_new_nocb(const tl_config *cfg);
/* tlt_new_edit (edit may be NULL) with another clock in place of the manual one (ud is the env);
 * tlt_end still moves e->now forward to expire tombstones, so the clock should add e->now. */
tlt_env *tlt_new_clock(const tl_config *cfg, void (*edit)(tl_callbacks *cb),
                       uint64_t (*clock)(void *ud));
/* The clock function tlt_new installs (ud is the env). */
uint64_t tlt_clock(void *ud);
/* The callbacks tlt_new installs, with ud = e. */
tl_callbacks tlt_callbacks(tlt_env *e);
/* An edit for tlt_new_edit (or a part of one) that records executor_removed too, which the
 * default recorder leaves NULL so that the events of the other tests stay as they are. The
 * recorder then checks that each executor_removed comes once per loss, after that executor's
 * executor_lost (in a scheduler that saw it), names a removed executor and its ud, and that no
 * later event names the executor; tlt_end, that every executor lost was removed. */
void tlt_record_removed(tl_callbacks *cb);
/* Drains the scheduler (loses every executor with TL_LOSS_KILLED, cancels the stages of task
 * sets still alive, expires tombstones), asserts it is empty and memory is back at the
 * baseline, every submission released exactly once and every result freed exactly once, then
 * frees the scheduler (which must deliver nothing) and the env. */
void tlt_end(tlt_env *e);
/* With deferred delivery, calls tl_dispatch until it delivers nothing (tl_check after each);
 * with inline delivery, nothing. tlt_end does it after each call of its drain. */
void tlt_dispatch_all(tlt_env *e);
/* For a test that ends with n tombstones whose time to live runs past the end of time (they
 * never expire, so tlt_end cannot drain them): asserts every other map is empty and every
 * submission released, then frees the scheduler (which must deliver nothing) and the env. With
 * the counting allocator installed, the caller then checks that no block is left. */
void tlt_end_keeping_tombstones(tlt_env *e, size_t n);
/* For tests that freed the scheduler themselves: asserts every submission was released exactly
 * once and every result freed exactly once, then frees the env. */
void tlt_end_freed(tlt_env *e);

/* ---------------------------------------------------------------------------------------------
 * Calls that must succeed (each asserts TL_OK and tl_check).
 * ------------------------------------------------------------------------------------------- */

/* Registers an executor with ud tlt_ud_for(e, id): the recorder checks that every ud handed
 * back (launches, executor_lost) names the executor it comes with. */
#define tlt_add(e, id, host, rack, cores) tlt_add_(__LINE__, e, id, host, rack, cores)
void tlt_add_(int line, tlt_env *e, const char *id, const char *host, const char *rack,
              uint32_t cores);

/* The ud tlt_add gives an executor: one record per id, kept until the env is freed. */
/* tlt_add with a whole descriptor (resources, profile); its ud is set as tlt_add sets it. */
#define tlt_add_desc(e, d) tlt_add_desc_(__LINE__, e, d)
void tlt_add_desc_(int line, tlt_env *e, tl_executor_desc d);

typedef struct tlt_exec_ud {
  char id[TL_ID_MAX]; /* the executor it stands for */
} tlt_exec_ud;
tlt_exec_ud *tlt_ud_for(tlt_env *e, const char *id);

/* Submits a task set with a fresh harness payload; returns its id. */
#define tlt_submit(e, stage, attempt, priority, ntasks)                                            \
  tlt_submit_(__LINE__, e, stage, attempt, priority, ntasks, 0)
#define tlt_submit_cpus(e, stage, attempt, priority, ntasks, cpus)                                 \
  tlt_submit_(__LINE__, e, stage, attempt, priority, ntasks, cpus)
tl_taskset_id tlt_submit_(int line, tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t priority,
                          uint32_t ntasks, uint32_t cpus);
/* Submits d (its payload replaced by a fresh harness payload); asserts TL_OK; returns the id. */
#define tlt_submit_desc(e, d) tlt_submit_desc_(__LINE__, e, d)
tl_taskset_id tlt_submit_desc_(int line, tlt_env *e, const tl_taskset_desc *d);
/* Takes the memory baseline again, for a scheduler configured after creation (its pools live
 * as long as it does): asserts that it holds no task set, attempt or executor yet. */
void tlt_rebase(tlt_env *e);
/* tl_submit with a harness payload, returning its code; the submission is recorded only on
 * TL_OK (the payload is freed otherwise). Asserts nothing, so it may run on a thread Check does
 * not watch, but the recorder it writes is not locked: not while other threads call in. */
int tlt_submit_rc(tlt_env *e, uint32_t stage, uint32_t attempt, uint32_t priority, uint32_t ntasks,
                  uint32_t cpus, tl_taskset_id *out);
/* tlt_submit_rc for a whole descriptor (its payload replaced by a fresh harness payload). */
int tlt_submit_desc_rc(tlt_env *e, const tl_taskset_desc *d, tl_taskset_id *out);
/* tl_submit with out NULL (stage attempt 0, config cpus); the id is learnt from events. */
int tlt_submit_null_out(tlt_env *e, uint32_t stage, uint32_t priority, uint32_t ntasks);

/* One offer; returns the number of launches written to out (which may be NULL when cap 0). */
#define tlt_offer(e, exec, cores, out, cap) tlt_offer_(__LINE__, e, exec, cores, out, cap)
size_t tlt_offer_(int line, tlt_env *e, const char *exec, uint32_t cores, tl_launch *out,
                  size_t cap);
#define tlt_offers(e, offers, n, out, cap) tlt_offers_(__LINE__, e, offers, n, out, cap)
size_t tlt_offers_(int line, tlt_env *e, const tl_offer *offers, size_t n, tl_launch *out,
                   size_t cap);

/* Status updates that must succeed. */
/* (offers, n, out, cap, grants, gcap): variadic, so that a compound literal may be the offers */
#define tlt_offers_grants(e, ...) tlt_offers_grants_(__LINE__, e, __VA_ARGS__)
size_t tlt_offers_grants_(int line, tlt_env *e, const tl_offer *offers, size_t n, tl_launch *out,
                          size_t cap, tl_grant *grants, size_t gcap);

#define tlt_run(e, exec, tid) tlt_update_(__LINE__, e, exec, tid, TL_TASK_RUNNING, 0)
#define tlt_fail(e, exec, tid, kind) tlt_update_(__LINE__, e, exec, tid, TL_TASK_FAILED, kind)
#define tlt_killed(e, exec, tid) tlt_update_(__LINE__, e, exec, tid, TL_TASK_KILLED, 0)
void tlt_update_(int line, tlt_env *e, const char *exec, tl_tid tid, tl_task_state state,
                 tl_end_kind failure);
/* FINISHED with a fresh result (freed by the recorder's task_ended); returns the result. */
#define tlt_succeed(e, exec, tid) tlt_succeed_(__LINE__, e, exec, tid)
tlt_result *tlt_succeed_(int line, tlt_env *e, const char *exec, tl_tid tid);

/* tl_executor_lost that must succeed. */
#define tlt_lose(e, exec, kind, app) tlt_lose_(__LINE__, e, exec, kind, app)
void tlt_lose_(int line, tlt_env *e, const char *exec, tl_loss_kind kind, bool app);

/* Advances the manual clock by ns and runs tl_tick (tl_check after); returns tl_tick's answer. */
#define tlt_advance_tick(e, ns) tlt_advance_tick_(__LINE__, e, ns)
uint64_t tlt_advance_tick_(int line, tlt_env *e, uint64_t ns);

/* Snapshots that must succeed. */
#define tlt_ts(e, id) tlt_ts_(__LINE__, e, id)
tl_taskset_status tlt_ts_(int line, tlt_env *e, tl_taskset_id id);
#define tlt_ex(e, id) tlt_ex_(__LINE__, e, id)
tl_executor_status tlt_ex_(int line, tlt_env *e, const char *id);
tl_stats tlt_stats(tlt_env *e);

/* ---------------------------------------------------------------------------------------------
 * Results.
 * ------------------------------------------------------------------------------------------- */

#define TLT_RESULT_MAGIC 0x52455355u
#define TLT_PAYLOAD_MAGIC 0x5041594cu

tlt_result *tlt_result_new(tlt_env *e, size_t size);
/* The result_free function given with updates: counts a free. */
void tlt_result_free(void *result);
/* Results made so far, and frees counted over all of them. */
size_t tlt_results_made(const tlt_env *e);
size_t tlt_results_frees(const tlt_env *e);

/* ---------------------------------------------------------------------------------------------
 * Reading the recorder.
 * ------------------------------------------------------------------------------------------- */

/* The number of events recorded so far (a mark for the functions below). */
size_t tlt_mark(const tlt_env *e);
/* The lines of events recorded since mark, joined by '\n', without "revive" lines. */
const char *tlt_seq(tlt_env *e, size_t mark);
/* The same with "revive" lines. */
const char *tlt_seq_all(tlt_env *e, size_t mark);
/* Events of a type since mark. */
size_t tlt_count(const tlt_env *e, size_t mark, tlt_ev_type type);
/* The n-th (from 0) event of a type since mark, or NULL. */
const tlt_event *tlt_nth(const tlt_env *e, size_t mark, tlt_ev_type type, size_t n);
/* The last event of a type, or NULL. */
const tlt_event *tlt_last(const tlt_env *e, tlt_ev_type type);
/* The last task_ended of a tid, or NULL. */
const tlt_event *tlt_ended_of(const tlt_env *e, tl_tid tid);
/* taskset_released deliveries seen for a task set id. */
unsigned tlt_released(const tlt_env *e, tl_taskset_id id);
/* The submission of a task set id (asserts it exists). */
tlt_submission *tlt_sub(tlt_env *e, tl_taskset_id id);

/* ---------------------------------------------------------------------------------------------
 * Counting allocator (process-wide; install only while no scheduler exists).
 * ------------------------------------------------------------------------------------------- */

/* Installs the counting allocator with tl_replace_allocator (asserts TL_OK). */
void tlt_alloc_install(void);
/* Puts back malloc/realloc/calloc/free (asserts TL_OK). */
void tlt_alloc_restore(void);
size_t tlt_alloc_live_blocks(void);
size_t tlt_alloc_live_bytes(void);
/* Allocations made through the counting allocator so far (successful or not). */
uint64_t tlt_alloc_calls(void);
/* Makes the n-th allocation from now fail (1 = the next one); 0 turns failing off. */
void tlt_alloc_fail_at(uint64_t n);
/* Makes every allocation fail from the n-th from now on (1 = all); 0 turns failing off. */
void tlt_alloc_fail_from(uint64_t n);
/* Whether the armed failure has happened. */
bool tlt_alloc_failed(void);
/* Whether some allocation from now on can fail: the armed failure is still to come, or it
 * came and every later one fails too. */
bool tlt_alloc_may_fail(void);

/* ---------------------------------------------------------------------------------------------
 * An image in memory, for tl_snapshot and tl_scheduler_restore: zero-initialise it, pass
 * tlt_image_write and it to tl_snapshot, then tlt_image_read and it to tl_scheduler_restore
 * (which reads from at); free(p) at the end.
 * ------------------------------------------------------------------------------------------- */

/* The call journal as one text (tl_config.journal = tlt_journal_line, journal_ud = the record):
 * each line ended by a newline, NUL-terminated, and counted; zero-initialise it, free(text) once
 * the scheduler is freed (its last line comes from tl_scheduler_free). */
typedef struct tlt_journal {
  char *text;
  size_t len, cap, lines;
} tlt_journal;
void tlt_journal_line(void *ud, const char *line);

typedef struct tlt_image {
  uint8_t *p;
  size_t n, cap, at;
} tlt_image;
int tlt_image_write(void *ud, const void *buf, size_t n);
int tlt_image_read(void *ud, void *buf, size_t n);

#endif /* TLT_HARNESS_H */
