/* The operation layer: a reference model of the scheduler that follows the header and docs and
 * shares no code with lib/, the applier that predicts each call's answer and events from the model
 * before making the call and then checks what the library did, the byte codec, and the generator.
 *
 * How a check works. Each call is first applied to the model, which decides the error the call
 * must return (in the order the header documents) and, on success, changes its state and
 * appends the events the call must make to an expected-event queue. Then the library is called.
 * Every callback pops the head of that queue and compares each field; because the library
 * delivers events in the one order they were made, and a callback's own calls make theirs after
 * the current batch, a single FIFO describes re-entrant calls too: the model applies a call made
 * from a callback at the moment it is made. After every top-level operation the queue must be
 * empty, tl_check clean, and every counter of tl_stats, every executor and every task set equal
 * to the model's. The model is also compared from inside each callback, since the ledger is
 * ahead of the events and the model is kept in step with the ledger.
 */
#include "ops.h"

#include "taskledger.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SEC UINT64_C(1000000000)
#define NSLOTS 8        /* executor slots: ids "e<slot>.<generation>" */
#define MAXGEN 32       /* generations per slot a run may register */
#define NHOSTS 4        /* hosts h0..h3 */
#define NSTAGES 6       /* stage ids 0..5 */
#define MAXTS 256       /* task sets a run may submit */
#define MAXTASKS 12     /* tasks per task set */
#define MAXCAP 32       /* launches one offer round may return */
#define REASON_MAX 4096 /* taskset_failed's reason buffer (api.md: at most 4,095 bytes) */
#define LONG_MESSAGE 5000
#define NPOOLNAMES 8 /* pool names an operation can give (pool_names) */
#define MAXPREFS 4   /* preferred locations per task */
#define NLEVELS 5    /* tl_locality: PROCESS_LOCAL .. ANY */

/* ---------------------------------------------------------------------------------------------
 * The model.
 * ------------------------------------------------------------------------------------------- */

typedef enum mx_state { MX_NONE, MX_ALIVE, MX_DECOM, MX_PENDING, MX_REMOVED } mx_state;

/* One executor id. MX_NONE: never registered, or its tombstone was evicted (then it may be
 * registered again and this record describes the new executor). */
typedef struct mexec {
  char id[16];            /* "e<slot>.<generation>", or "p<slot>" for an id never registered */
  mx_state state;         /* what the ledger must say about this id */
  uint32_t cores;         /* as registered */
  uint32_t free_cores;    /* cores minus its running attempts' cpus */
  uint32_t nrunning;      /* attempts in the tid index on it */
  uint32_t nfrozen;       /* attempts frozen on it (PENDING only) */
  unsigned host;          /* 0..3, from registration on (events name it after the loss too) */
  bool was_decom;         /* it was decommissioning when its loss began */
  bool was_alive;         /* ALIVE until the change executor_changed is told about */
  uint64_t hb_when;       /* last heartbeat (ALIVE, DECOM) */
  uint64_t hb_seq;        /* its place on the heartbeat timeline */
  bool pend_timed;        /* PENDING with a deadline */
  uint64_t pend_deadline; /* when the pending loss times out */
  uint64_t pend_seq;      /* its place on the pending-loss timeline */
  uint64_t tomb_when;     /* removal time (REMOVED) */
  uint64_t tomb_seq;      /* its place among the tombstones */
  bool none_checked;      /* MX_NONE, and tl_executor_get has said TL_ENOENT since */
  /* Application-level exclusion, by id (it outlives the executor's loss). */
  uint64_t *appf;          /* expiries of its application-level failures (dropped at its loss) */
  uint32_t nappf, appfcap; /* their number; room */
  bool xapp;               /* excluded for the application */
  uint64_t xapp_expiry;    /* until then */
  unsigned xapp_host;      /* the node it counts toward */
} mexec;

typedef struct mindex {
  uint32_t attempts; /* launched so far: the next attempt number */
  uint32_t failures; /* counted failures since the last success */
  uint32_t copies;   /* attempts in flight, frozen ones included */
  bool done;         /* succeeded here or by tl_partition_completed */
  bool pending;      /* on the pending stack */
  bool spec;         /* speculatable: on the speculative stack, its copy waits for an offer */
  uint8_t tried;     /* hosts (bit per host) an attempt of it was launched on (speculation) */
} mindex;

/* A preferred location: a host, or an executor id (and its host as named: the executor may be
 * registered on another host, or not at all). */
typedef struct mpref {
  unsigned host; /* 0..3; a preference for an executor is one for this host too */
  mexec *ex;     /* the executor id preferred; NULL: any executor of host */
} mpref;

/* A counted failure of a task set (exclusion): index failed on executor ex while it was on
 * host, count times, the latest at last. */
typedef struct mxf {
  mexec *ex;
  unsigned host;
  uint32_t index, count;
  uint64_t last;
} mxf;

typedef struct mts {
  tl_taskset_id id;                             /* as tl_submit returns it */
  uint32_t stage, sattempt, prio, ntasks, cpus; /* as submitted (cpus resolved) */
  bool zombie, failed;                          /* launches nothing more; aborted */
  bool released;            /* the model has released it (its event is expected or delivered) */
  unsigned released_seen;   /* taskset_released deliveries with its payload */
  bool gone_checked;        /* released, and tl_taskset_get has said TL_ENOENT since */
  uint32_t nrunning;        /* attempts in flight, frozen ones included */
  uint32_t nfrozen;         /* of which frozen */
  uint32_t nsucceeded;      /* indices done */
  uint32_t pend[MAXTASKS];  /* the pending stack: pend[npend - 1] launches next */
  uint32_t npend;           /* its height (0 for a zombie) */
  mindex idx[MAXTASKS];     /* per index */
  unsigned pool;            /* its pool: an index of pool_names ("default" under TL_FIFO) */
  bool shuffle, barrier;    /* as submitted */
  bool may_spec;            /* speculation on and not barrier: it keeps run times and hosts */
  uint32_t nresults;        /* FINISHED updates counted toward max_result_bytes */
  uint64_t result_bytes;    /* their result_size, summed (saturating) */
  uint32_t specs[MAXTASKS]; /* the speculative stack: specs[nspecs - 1] is its top */
  uint32_t nspecs;          /* its height */
  uint64_t *dur;            /* run times of first successes, ascending (the median heap) */
  uint32_t ndur, durcap;    /* their number; room */
  /* Locality (docs/locality.md). */
  bool has_loc;                    /* some task has preferences: delay scheduling applies */
  uint8_t nprefs[MAXTASKS];        /* per index; 0: no preference (TL_NO_PREF) */
  mpref prefs[MAXTASKS][MAXPREFS]; /* as submitted, duplicates included */
  uint8_t levels;                  /* valid levels, bit per tl_locality, as last computed */
  uint8_t level;                   /* the level delay scheduling holds it at */
  uint64_t reset;                  /* when its wait at that level began */
  bool no_rejects;                 /* no delay-scheduling reject since the last reset */
  /* Exclusion (exclude_on_failure): Spark's TaskSetExcludelist, as plain records. */
  mxf *xf;             /* its counted failures; nxf > 0: it "has failures" */
  uint32_t nxf, xfcap; /* their number; room */
  char *xmsg;          /* the latest counted failure's message (NULL: none); malloc'd */
  bool xdl;            /* an unschedulable deadline runs */
  uint64_t xdl_at;     /* when it comes */
  uint64_t xdl_seq;    /* the order deadlines were set in */
  uint32_t xdl_task;   /* the index it names */
  uint64_t xseq;       /* the order of task sets' first counted failures */
} mts;

/* A pool (pool_names[k] is its name). */
typedef struct mpool {
  bool exists;        /* added ("default": from the start) */
  tl_sched_mode mode; /* between its task sets */
  uint32_t weight, min_share;
} mpool;

/* A map output of an active shuffle-map task set, on the executor that wrote it. */
typedef struct mout {
  uint32_t ts;      /* model index of its task set */
  uint32_t index;   /* the index it completes */
  uint32_t attempt; /* the writer's attempt number */
  tl_tid tid;       /* the writer */
  bool spec;        /* the writer was a speculative copy */
  uint8_t loc;      /* the writer's locality */
  mexec *ex;        /* where it lives */
} mout;

typedef struct matt {
  uint32_t ts;          /* model index of its task set */
  uint32_t index;       /* task index */
  uint32_t attempt;     /* attempt number of that index */
  mexec *ex;            /* where it runs */
  bool running;         /* a RUNNING update came (else LAUNCHING) */
  bool live;            /* not ended */
  bool frozen;          /* on a PENDING executor */
  bool spec;            /* launched as a speculative copy */
  bool killed_by_other; /* the other copy of its index succeeded: nothing it reports counts */
  tl_tid sibling;       /* the other copy of its index in flight, 0 none */
  uint64_t launched_at; /* the scheduler's time at launch */
  uint8_t loc;          /* the tl_locality it was launched at */
} matt;

/* The callbacks, as the expected-event queue names them. */
typedef enum ev_type {
  EV_STARTED,
  EV_ENDED,
  EV_FAILED,
  EV_RELEASED,
  EV_ADDED,
  EV_LOST,
  EV_REVIVE,
  EV_KILL,
  EV_SPEC
} ev_type;

/* One event the library must deliver. */
typedef struct mevent {
  ev_type type;
  tl_tid tid;                  /* started, ended, kill */
  uint32_t ts;                 /* started, ended, failed, released, spec: its task set's index */
  uint32_t index;              /* started, ended, spec */
  uint32_t attempt;            /* started, ended */
  mexec *ex;                   /* started, ended, added, lost, kill */
  tl_end_kind kind;            /* ended */
  bool counts;                 /* ended: counts_toward_failures */
  void *result;                /* ended: the update's result, or NULL */
  size_t result_size;          /* ended */
  void (*result_free)(void *); /* ended */
  char *text;        /* ended, lost, kill: the message (NULL: none); failed: the reason; malloc'd */
  tl_loss_kind loss; /* lost */
  bool app;          /* lost: caused_by_app */
  int exit_code;     /* lost */
  bool interrupt;    /* kill */
  bool spec;         /* started, ended: the attempt is a speculative copy */
  uint8_t loc;       /* started, ended: the attempt's locality */
  void *dropped;     /* ended: a result the library must have freed (result_free) and withheld */
} mevent;

/* A result handed to a FINISHED update; kept until the end of the run so a second free is
 * counted, not a crash. */
typedef struct tlo_res {
  uint32_t magic; /* RES_MAGIC */
  unsigned frees; /* times result_free ran on it: must end at exactly 1 */
} tlo_res;
#define RES_MAGIC 0x7e5a17u

/* One run: the scheduler under test, the model beside it, and the run's verdict. */
typedef struct tlo_run {
  tl_scheduler *s; /* NULL once freed */
  tl_config cfg;   /* as given to tl_scheduler_new */
  tlo_options opt; /* the caller's (zeroed if none) */
  bool end_free;   /* end with tl_scheduler_free and work left instead of draining */

  uint64_t raw_now; /* what the clock function answers */
  uint64_t now;     /* the scheduler's time: the largest reading a call has taken */
  uint64_t seq;     /* orders the timelines */

  mexec ex[NSLOTS][MAXGEN];
  mexec phantom[NSLOTS];      /* ids never registered: "p<slot>" */
  uint32_t ngen[NSLOTS];      /* generations registered per slot */
  int host_rack[NHOSTS];      /* the rack of a host while it has live executors: -1 none */
  uint32_t host_live[NHOSTS]; /* live (ALIVE, DECOM) executors per host */

  mts ts[MAXTS];                /* payload of ts[k] is &ts[k] */
  mpool pools[NPOOLNAMES];      /* by name (pool_names) */
  mout *outs;                   /* map outputs, in the order they were written */
  size_t nouts, outcap;         /* their number; room */
  uint64_t next_spec;           /* when tl_tick looks for slow tasks next */
  bool spec_never;              /* it passed the end of time: it never comes */
  uint32_t nts;                 /* task sets submitted */
  tl_taskset_id next_ts_id;     /* the id the next submission gets */
  uint32_t stage_next[NSTAGES]; /* the next fresh stage attempt per stage */

  matt *att;                     /* att[tid - 1] */
  size_t natt, attcap;           /* attempts launched; room */
  tl_tid *inflight;              /* tids of attempts not ended, ascending */
  size_t ninflight, inflightcap; /* their number; room */
  bool revive_wanted;            /* an index went back to pending in this transition */

  /* The totals of tl_stats. */
  uint64_t launched, succeeded, failed_count, killed, stale, rejected_updates, rejected_offers,
      executors_lost, tasksets_released, pending_loss_timeouts;

  mevent *q; /* expected events: q[qhead .. qlen) */
  size_t qhead, qlen, qcap;

  tlo_res **res;       /* every result made, freed at the end of the run */
  size_t nres, rescap; /* their number; room */

  size_t base_bytes, base_blocks; /* memory of the empty scheduler, right after tl_scheduler_new */

  /* Progress and verdict. */
  size_t op_index;       /* the operation running (ops run for the end phase) */
  bool failed;           /* a disagreement was seen: why says which; callbacks do nothing now */
  char why[4096];        /* the first disagreement */
  char desc[512];        /* the top-level operation, resolved */
  int in_cb;             /* callbacks running (nested) */
  bool closing;          /* tl_scheduler_free is handing payloads back */
  bool has_final;        /* final was taken just before tl_scheduler_free */
  tl_stats final;        /* for tlo_outcome */
  uint8_t reent, re_arg; /* the running operation's TLO_RE_* bits and argument */
  const tlo_op *op;      /* the running top-level operation */
  bool re_submit_done, re_offer_done, re_first_done, re_finish_done, re_lose_done; /* once each */
  uint64_t calls, events, reentrant, errors; /* figures for tlo_outcome */
  uint64_t f_spec_submitted, f_spec_launches, f_lost_races, f_late_reports, f_too_large,
      f_resubmitted, f_barrier_launches, f_fair_rounds; /* and the policy features' */
  uint64_t f_loc_launches[NLEVELS]; /* launches per locality level, of task sets with prefs */
  uint64_t f_waits_out, f_skips, f_resets, f_recomputes, f_loc_revives; /* delay scheduling */
  uint64_t wait_ns[NLEVELS];             /* each level's wait (0 at TL_NO_PREF and TL_ANY) */
  uint64_t loc_ticked;                   /* when tl_tick last looked at the waits (0 before) */
  uint64_t journal_lines, journal_bytes; /* seen by the run's own journal sink */

  /* Application-level exclusion of nodes, and the exclusion totals of tl_stats. */
  bool node_excl[NHOSTS];       /* excluded for the application */
  uint64_t node_expiry[NHOSTS]; /* until then */
  uint64_t excluded_offers, unsched_aborted;
  uint64_t f_x[TLO_XF_N]; /* exclusion features reached */

  uint64_t rng;   /* the generator's splitmix64 state */
  size_t enc_len; /* bytes of the program encoded so far */
} tlo_run;

static char long_message[LONG_MESSAGE + 1];
static char pool_255[256], pool_256[257]; /* the longest pool name, and one byte too long */
static const char *const host_names[NHOSTS] = {"h0", "h1", "h2", "h3"};
static const char *const rack_names[2] = {"r0", "r1"};
/* Pool names an operation can give: 0 NULL (the default pool; invalid for tl_pool_add), 1-5
 * valid names, 6 and 7 invalid ones. */
static const char *const pool_names[NPOOLNAMES] = {NULL, "default", "a", "b",
                                                   "c",  pool_255,  "",  pool_256};
#define POOL_DEFAULT 1
/* TLO_CLOCK's steps; the last three are special: one speculation interval, back 3 s, and a
 * jump to 20 s before the end of time, after which deadlines saturate and never come. 1 ns
 * probes every "longer than". */
static const uint64_t clock_steps[] = {0,
                                       1,
                                       SEC / 1000,
                                       SEC / 2,
                                       SEC,
                                       2 * SEC,
                                       4 * SEC,
                                       5 * SEC,
                                       6 * SEC,
                                       10 * SEC,
                                       11 * SEC,
                                       31 * SEC,
                                       0 /* one speculation interval */,
                                       0 /* back */,
                                       0 /* to the end of time */};
#define NCLOCK_STEPS (sizeof clock_steps / sizeof clock_steps[0])
#define CLOCK_BACK (3 * SEC)
#define CLOCK_END (UINT64_MAX - 20 * SEC)

static const char *message_of(uint8_t m) {
  switch (m % 4) {
  case 1:
    return "m1";
  case 2:
    return "a second message";
  case 3:
    return long_message;
  default:
    return NULL;
  }
}

static const char *ev_name(ev_type t) {
  static const char *const names[] = {
      "task_started",     "task_ended",     "taskset_failed",
      "taskset_released", "executor_added", "executor_lost",
      "revive_offers",    "kill_task",      "speculative_task_submitted"};
  return names[t];
}

static void *xrealloc(void *p, size_t size) {
  void *q = realloc(p, size);
  if (q == NULL) {
    fprintf(stderr, "ops: out of memory\n");
    abort();
  }
  return q;
}

static uint64_t add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Whether a deadline (saturated by add_sat) has come at now: when the time reaches it, unless it
 * saturated at UINT64_MAX, which is past the end of time and never comes, not even then. */
static bool due_at(uint64_t deadline, uint64_t now) {
  return deadline <= now && deadline != UINT64_MAX;
}

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* ---------------------------------------------------------------------------------------------
 * Verdicts and traces.
 * ------------------------------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
fail(tlo_run *r, const char *fmt, ...) {
  if (r->failed)
    return;
  r->failed = true;
  if (r->desc[0] == '\0' && r->op != NULL)
    tlo_op_describe(r->op, r->desc, sizeof r->desc);
  char what[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(r->why, sizeof r->why, "op %zu (%s)%s: %s", r->op_index, r->desc,
           r->in_cb ? ", inside a callback" : "", what);
}

static FILE *trace_file(const tlo_run *r) { return r->opt.trace != NULL ? r->opt.trace : stdout; }

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
trace(const tlo_run *r, int level, const char *fmt, ...) {
  if (r->opt.verbose < level)
    return;
  FILE *f = trace_file(r);
  for (int i = 0; i < r->in_cb; i++)
    fputs("    ", f);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
}

/* Names the call about to be made: a disagreement seen by its callbacks names it. */
static void note_call(tlo_run *r, const char *desc) {
  if (!r->in_cb)
    snprintf(r->desc, sizeof r->desc, "%s", desc);
  /* With events traced, the call comes first and its answer after its events. */
  if (r->in_cb)
    trace(r, 2, "re-entrant %s", desc);
  else
    trace(r, 2, "#%zu %s", r->op_index, desc);
}

/* Counts the call described by desc and checks its answer. */
static void expect_rc(tlo_run *r, const char *desc, int rc, int want) {
  r->calls++;
  if (r->in_cb)
    r->reentrant++;
  if (r->opt.verbose >= 2)
    trace(r, 2, "  -> %s", tl_err_name(rc));
  else
    trace(r, 1, "%s%s -> %s", r->in_cb ? "re-entrant " : "", desc, tl_err_name(rc));
  if (rc != want) {
    fail(r, "%s%s returned %s, the model expects %s", r->in_cb ? "re-entrant " : "", desc,
         tl_err_name(rc), tl_err_name(want));
    return;
  }
  if (want != TL_OK)
    r->errors++;
}

/* ---------------------------------------------------------------------------------------------
 * Expected events.
 * ------------------------------------------------------------------------------------------- */

static mevent *push_ev(tlo_run *r, ev_type type) {
  if (r->qlen == r->qcap) {
    r->qcap = r->qcap ? 2 * r->qcap : 64;
    r->q = xrealloc(r->q, r->qcap * sizeof *r->q);
  }
  mevent *e = &r->q[r->qlen++];
  memset(e, 0, sizeof *e);
  e->type = type;
  return e;
}

static char *dup_text(const char *s) {
  if (s == NULL)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = xrealloc(NULL, n);
  memcpy(d, s, n);
  return d;
}

static void describe_ev(const tlo_run *r, const mevent *e, char *buf, size_t len) {
  const char *exid = e->ex != NULL ? e->ex->id : "-";
  switch (e->type) {
  case EV_STARTED:
    snprintf(buf, len, "task_started tid=%" PRIu64 " ts=%" PRIu64 " index=%u attempt=%u on %s %s%s",
             e->tid, r->ts[e->ts].id, e->index, e->attempt, exid,
             tl_locality_name((tl_locality)e->loc), e->spec ? " speculative" : "");
    break;
  case EV_ENDED:
    snprintf(buf, len,
             "task_ended tid=%" PRIu64 " ts=%" PRIu64 " index=%u attempt=%u on %s %s counts=%d "
             "msg=%.20s",
             e->tid, r->ts[e->ts].id, e->index, e->attempt, exid,
             tl_end_kind_name((tl_end_kind)e->kind), e->counts,
             e->text != NULL ? e->text : "(null)");
    break;
  case EV_FAILED:
    snprintf(buf, len, "taskset_failed ts=%" PRIu64 " \"%.60s\"", r->ts[e->ts].id, e->text);
    break;
  case EV_RELEASED:
    snprintf(buf, len, "taskset_released ts=%" PRIu64, r->ts[e->ts].id);
    break;
  case EV_ADDED:
    snprintf(buf, len, "executor_added %s on %s", exid, host_names[e->ex->host]);
    break;
  case EV_LOST:
    snprintf(buf, len, "executor_lost %s %s app=%d exit=%d msg=%.20s", exid,
             tl_loss_kind_name((tl_loss_kind)e->loss), e->app, e->exit_code,
             e->text != NULL ? e->text : "(null)");
    break;
  case EV_REVIVE:
    snprintf(buf, len, "revive_offers");
    break;
  case EV_KILL:
    snprintf(buf, len, "kill_task tid=%" PRIu64 " on %s interrupt=%d reason=%.20s", e->tid, exid,
             e->interrupt, e->text != NULL ? e->text : "(null)");
    break;
  case EV_SPEC:
    snprintf(buf, len, "speculative_task_submitted ts=%" PRIu64 " index=%u", r->ts[e->ts].id,
             e->index);
    break;
  }
}

/* The event a callback of this type must be; NULL (and the run failed) if it is not. */
static mevent *pop_ev(tlo_run *r, ev_type type) {
  if (r->qhead == r->qlen) {
    fail(r, "unexpected %s: no event is expected", ev_name(type));
    return NULL;
  }
  mevent *e = &r->q[r->qhead];
  if (e->type != type) {
    char want[256];
    describe_ev(r, e, want, sizeof want);
    fail(r, "got %s, expected %s", ev_name(type), want);
    return NULL;
  }
  r->qhead++;
  if (r->opt.verbose >= 2) {
    char d[256];
    describe_ev(r, e, d, sizeof d);
    trace(r, 2, "  event %s", d);
  }
  return e;
}

static void drop_events(tlo_run *r) {
  for (size_t i = 0; i < r->qlen; i++)
    free(r->q[i].text);
  r->qhead = r->qlen = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Model helpers.
 * ------------------------------------------------------------------------------------------- */

static void clock_read(tlo_run *r) {
  if (r->raw_now > r->now)
    r->now = r->raw_now;
}

static bool live_state(mx_state st) { return st == MX_ALIVE || st == MX_DECOM; }

static matt *att_of(tlo_run *r, tl_tid tid) {
  return tid >= 1 && tid <= r->natt ? &r->att[tid - 1] : NULL;
}

/* An attempt in the tid index: launched, not ended, not frozen. */
static matt *indexed(tlo_run *r, tl_tid tid) {
  matt *a = att_of(r, tid);
  return a != NULL && a->live && !a->frozen ? a : NULL;
}

static void inflight_remove(tlo_run *r, tl_tid tid) {
  size_t lo = 0, hi = r->ninflight;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r->inflight[mid] < tid)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < r->ninflight && r->inflight[lo] == tid) {
    memmove(&r->inflight[lo], &r->inflight[lo + 1], (r->ninflight - lo - 1) * sizeof(tl_tid));
    r->ninflight--;
  }
}

/* Copies the in-flight tids matching a filter, in launch (tid) order. */
static size_t inflight_where(tlo_run *r, tl_tid **out, const mexec *ex, int frozen, int ts) {
  tl_tid *v = xrealloc(NULL, (r->ninflight + 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < r->ninflight; i++) {
    matt *a = &r->att[r->inflight[i] - 1];
    if (ex != NULL && a->ex != ex)
      continue;
    if (frozen >= 0 && a->frozen != (frozen != 0))
      continue;
    if (ts >= 0 && a->ts != (uint32_t)ts)
      continue;
    v[n++] = r->inflight[i];
  }
  *out = v;
  return n;
}

static void pend_push(mts *t, uint32_t i) {
  t->pend[t->npend++] = i;
  t->idx[i].pending = true;
}

static void pend_remove(mts *t, uint32_t i) {
  for (uint32_t k = 0; k < t->npend; k++) {
    if (t->pend[k] == i) {
      memmove(&t->pend[k], &t->pend[k + 1], (t->npend - k - 1) * sizeof t->pend[0]);
      t->npend--;
      break;
    }
  }
  t->idx[i].pending = false;
}

static void spec_push(mts *t, uint32_t i) {
  t->specs[t->nspecs++] = i;
  t->idx[i].spec = true;
}

static void spec_remove(mts *t, uint32_t i) {
  for (uint32_t k = 0; k < t->nspecs; k++) {
    if (t->specs[k] == i) {
      memmove(&t->specs[k], &t->specs[k + 1], (t->nspecs - k - 1) * sizeof t->specs[0]);
      t->nspecs--;
      break;
    }
  }
  t->idx[i].spec = false;
}

/* A zombie launches nothing: its stacks are emptied and its map outputs forgotten (a zombie's
 * lost outputs are the DAG layer's business). */
static void make_zombie(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  if (t->zombie)
    return;
  t->zombie = true;
  for (uint32_t i = 0; i < t->npend; i++)
    t->idx[t->pend[i]].pending = false;
  t->npend = 0;
  for (uint32_t i = 0; i < t->nspecs; i++)
    t->idx[t->specs[i]].spec = false;
  t->nspecs = 0;
  size_t w = 0;
  for (size_t i = 0; i < r->nouts; i++)
    if (r->outs[i].ts != k)
      r->outs[w++] = r->outs[i];
  r->nouts = w;
}

static void compose_reason(char *buf, const char *full) {
  size_t n = strlen(full);
  if (n < REASON_MAX) {
    memcpy(buf, full, n + 1);
  } else {
    memcpy(buf, full, REASON_MAX - 4);
    memcpy(buf + REASON_MAX - 4, "...", 4);
  }
}

typedef enum abort_why {
  ABORT_FAILURES,
  ABORT_CANCEL,
  ABORT_RESULT_SIZE,
  ABORT_UNSCHEDULABLE /* index: the task that cannot run; msg: the latest counted failure's */
} abort_why;

/* Aborts once: failed, zombie, taskset_failed. index/failures for too many failures; msg the
 * failure's message or the cancel reason. */
static void abort_ts(tlo_run *r, uint32_t k, abort_why why, uint32_t index, uint32_t failures,
                     const char *msg) {
  mts *t = &r->ts[k];
  if (t->failed)
    return;
  t->failed = true;
  make_zombie(r, k);
  char *full = xrealloc(NULL, LONG_MESSAGE + 256);
  if (why == ABORT_CANCEL)
    snprintf(full, LONG_MESSAGE + 256, "Stage %u cancelled%s%s", t->stage, msg ? ": " : "",
             msg ? msg : "");
  else if (why == ABORT_UNSCHEDULABLE)
    snprintf(full, LONG_MESSAGE + 256,
             "Aborting task set %u.%u because task %u cannot run anywhere due to node and executor "
             "exclusion (exclude_on_failure); most recent failure: %s",
             t->stage, t->sattempt, index, msg ? msg : "(no message)");
  else if (why == ABORT_RESULT_SIZE)
    snprintf(full, LONG_MESSAGE + 256,
             "Total size of the results of %u tasks (%" PRIu64
             " bytes) is bigger than max_result_bytes (%" PRIu64 " bytes)",
             t->nresults, t->result_bytes, r->cfg.max_result_bytes);
  else
    snprintf(full, LONG_MESSAGE + 256,
             "Task %u in stage %u.%u failed %u times; most recent failure: %s", index, t->stage,
             t->sattempt, failures, msg ? msg : "(no message)");
  mevent *e = push_ev(r, EV_FAILED);
  e->ts = k;
  e->text = xrealloc(NULL, REASON_MAX);
  compose_reason(e->text, full);
  free(full);
}

static bool xon(const tlo_run *r);
static void xf_taskset_succeeded(tlo_run *r, uint32_t k);

static void finish_if_drained(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  if (!t->zombie || t->nrunning != 0 || t->released)
    return;
  /* A task set that succeeded takes its failures to the application level. */
  if (xon(r) && t->nxf > 0 && !t->failed && t->nsucceeded == t->ntasks)
    xf_taskset_succeeded(r, k);
  t->xdl = false;
  t->released = true;
  r->tasksets_released++;
  push_ev(r, EV_RELEASED)->ts = k;
}

static void mark_successful(tlo_run *r, uint32_t k, uint32_t i) {
  mts *t = &r->ts[k];
  mindex *ix = &t->idx[i];
  if (ix->pending)
    pend_remove(t, i);
  if (ix->spec) /* a copy is not needed any more */
    spec_remove(t, i);
  ix->done = true;
  ix->failures = 0;
  if (++t->nsucceeded == t->ntasks)
    make_zombie(r, k);
}

/* The median heap: every first success's run time (Spark's MedianHeap keeps them all; an
 * index resubmitted after its output was lost succeeds for the first time again). */
static void record_duration(mts *t, uint64_t d) {
  if (t->ndur == t->durcap) {
    t->durcap = t->durcap ? 2 * t->durcap : 16;
    t->dur = xrealloc(t->dur, t->durcap * sizeof *t->dur);
  }
  uint32_t pos = t->ndur++;
  while (pos > 0 && t->dur[pos - 1] > d) {
    t->dur[pos] = t->dur[pos - 1];
    pos--;
  }
  t->dur[pos] = d;
}

/* The middle run time; with an even count the mean of the two middle ones, rounded down. */
static uint64_t median_of(const mts *t) {
  if (t->ndur == 0)
    return 0;
  if (t->ndur % 2)
    return t->dur[t->ndur / 2];
  uint64_t a = t->dur[t->ndur / 2 - 1], b = t->dur[t->ndur / 2];
  return a / 2 + b / 2 + (a % 2 + b % 2) / 2;
}

/* ---------------------------------------------------------------------------------------------
 * Exclude on failure (docs/api.md "Exclude on failure"), written from that page and Spark's
 * TaskSetExcludelist, HealthTracker and TaskSchedulerImpl: a task set's counted failures are
 * plain (executor, host, index) records, scanned; every "is it excluded" is recomputed from
 * them, except the application-level exclusions, which Spark decides once, when a task set
 * that succeeded finishes, and ends by time.
 * ------------------------------------------------------------------------------------------- */

static bool xon(const tlo_run *r) { return r->cfg.exclude_on_failure; }

/* Failures of index i on executor x (isExecutorExcludedForTask's count). */
static uint32_t xf_on_exec(const mts *t, const mexec *x, uint32_t i) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++)
    if (t->xf[f].ex == x && t->xf[f].index == i)
      n += t->xf[f].count;
  return n;
}

/* Failures of index i on host h, whichever executor (nodeToExcludedTaskIndexes' count). */
static uint32_t xf_on_host(const mts *t, unsigned h, uint32_t i) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++)
    if (t->xf[f].host == h && t->xf[f].index == i)
      n += t->xf[f].count;
  return n;
}

/* Different indices that failed on executor x (numUniqueTasksWithFailures). */
static uint32_t xf_indices_of(const mts *t, const mexec *x) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++) {
    if (t->xf[f].ex != x)
      continue;
    uint32_t g = 0;
    while (g < f && !(t->xf[g].ex == x && t->xf[g].index == t->xf[f].index))
      g++;
    n += g == f;
  }
  return n;
}

static bool ts_exec_excluded(const tlo_run *r, const mts *t, const mexec *x) {
  return t->nxf > 0 && xf_indices_of(t, x) >= r->cfg.exclude_stage_max_failed_tasks_per_executor;
}

/* A node is excluded for the task set by the executors excluded for it that first failed
 * there. */
static bool ts_node_excluded(const tlo_run *r, const mts *t, unsigned h) {
  uint32_t n = 0;
  for (uint32_t f = 0; f < t->nxf; f++) {
    uint32_t g = 0;
    while (g < f && t->xf[g].ex != t->xf[f].ex)
      g++;
    n += g == f && t->xf[f].host == h && ts_exec_excluded(r, t, t->xf[f].ex);
  }
  return t->nxf > 0 && n >= r->cfg.exclude_stage_max_failed_executors_per_node;
}

/* isExecutorExcludedForTaskSet || isNodeExcludedForTaskSet. */
static bool offer_blocked(const tlo_run *r, const mts *t, const mexec *x) {
  return xon(r) && t->nxf > 0 && (ts_exec_excluded(r, t, x) || ts_node_excluded(r, t, x->host));
}

/* isTaskExcludedOnExecOrNode: x, and the node x is on now. */
static bool task_blocked(const tlo_run *r, const mts *t, uint32_t i, const mexec *x) {
  if (!xon(r) || t->nxf == 0)
    return false;
  return xf_on_exec(t, x, i) >= r->cfg.exclude_max_task_attempts_per_executor ||
         xf_on_host(t, x->host, i) >= r->cfg.exclude_max_task_attempts_per_node;
}

/* HealthTracker.isExecutorExcluded || isNodeExcluded. */
static bool app_blocked(const tlo_run *r, const mexec *x) {
  return xon(r) && (x->xapp || r->node_excl[x->host]);
}

/* updateExcludedForFailedTask: a failure that counts, at now, with its message. */
static void xf_record(tlo_run *r, uint32_t k, const matt *a, const char *msg) {
  mts *t = &r->ts[k];
  mexec *x = a->ex;
  bool was_exec = ts_exec_excluded(r, t, x), was_node = ts_node_excluded(r, t, x->host);
  bool was_ie = task_blocked(r, t, a->index, x) &&
                xf_on_exec(t, x, a->index) >= r->cfg.exclude_max_task_attempts_per_executor;
  bool was_in =
      t->nxf > 0 && xf_on_host(t, x->host, a->index) >= r->cfg.exclude_max_task_attempts_per_node;
  uint32_t f = 0;
  while (f < t->nxf &&
         !(t->xf[f].ex == x && t->xf[f].host == x->host && t->xf[f].index == a->index))
    f++;
  if (f == t->nxf) {
    if (t->nxf == t->xfcap) {
      t->xfcap = t->xfcap ? 2 * t->xfcap : 8;
      t->xf = xrealloc(t->xf, t->xfcap * sizeof *t->xf);
    }
    if (t->nxf == 0)
      t->xseq = ++r->seq;
    t->xf[t->nxf++] = (mxf){x, x->host, a->index, 0, 0};
  }
  t->xf[f].count++;
  t->xf[f].last = r->now;
  free(t->xmsg);
  t->xmsg = dup_text(msg);
  r->f_x[TLO_XF_COUNTED]++;
  r->f_x[TLO_XF_INDEX_EXEC] +=
      !was_ie && xf_on_exec(t, x, a->index) >= r->cfg.exclude_max_task_attempts_per_executor;
  r->f_x[TLO_XF_INDEX_NODE] +=
      !was_in && xf_on_host(t, x->host, a->index) >= r->cfg.exclude_max_task_attempts_per_node;
  r->f_x[TLO_XF_TS_EXEC] += !was_exec && ts_exec_excluded(r, t, x);
  r->f_x[TLO_XF_TS_NODE] += !was_node && ts_node_excluded(r, t, x->host);
}

/* Every unschedulable deadline ends: something launched, or a new executor came. */
static void clear_deadlines(tlo_run *r, int feature) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (r->ts[k].xdl) {
      r->ts[k].xdl = false;
      r->f_x[feature]++;
    }
}

/* HealthTracker.updateExcludedForSuccessfulTaskSet, when a task set whose every index
 * succeeded is released: each executor's failed indices join its application-level failures
 * (one each, expiring exclude_timeout_ns after the index's latest failure there); those expired
 * are dropped; enough of them exclude the executor (unless it is already), and enough excluded
 * executors on its node the node (unless it is already). An executor whose loss has begun keeps
 * no list: only this task set's failures count for it, and are then dropped. */
static void xf_taskset_succeeded(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  uint64_t now = r->now, timeout = r->cfg.exclude_timeout_ns;
  for (uint32_t f = 0; f < t->nxf; f++) {
    mexec *x = t->xf[f].ex;
    uint32_t g = 0;
    while (g < f && t->xf[g].ex != x)
      g++;
    if (g < f) /* this executor was seen at its first record */
      continue;
    unsigned node = t->xf[f].host;
    bool gone = !live_state(x->state);
    if (gone)
      x->nappf = 0;
    for (uint32_t e = f; e < t->nxf; e++) {
      if (t->xf[e].ex != x)
        continue;
      uint32_t d = f;
      while (d < e && !(t->xf[d].ex == x && t->xf[d].index == t->xf[e].index))
        d++;
      if (d < e)
        continue; /* this index was taken at its first record */
      uint64_t last = t->xf[e].last;
      for (uint32_t c = e + 1; c < t->nxf; c++)
        if (t->xf[c].ex == x && t->xf[c].index == t->xf[e].index && t->xf[c].last > last)
          last = t->xf[c].last;
      if (x->nappf == x->appfcap) {
        x->appfcap = x->appfcap ? 2 * x->appfcap : 8;
        x->appf = xrealloc(x->appf, x->appfcap * sizeof *x->appf);
      }
      x->appf[x->nappf++] = add_sat(last, timeout);
    }
    uint32_t w = 0;
    for (uint32_t e = 0; e < x->nappf; e++)
      if (!due_at(x->appf[e], now)) /* a saturated expiry never comes */
        x->appf[w++] = x->appf[e];
    x->nappf = w;
    if (x->nappf >= r->cfg.exclude_app_max_failed_tasks_per_executor && !x->xapp) {
      x->xapp = true;
      x->xapp_expiry = add_sat(now, timeout);
      x->xapp_host = node;
      x->nappf = 0;
      r->f_x[TLO_XF_APP_EXEC]++;
      uint32_t on_node = 0;
      for (unsigned s = 0; s < NSLOTS; s++)
        for (uint32_t gg = 0; gg < r->ngen[s]; gg++)
          on_node += r->ex[s][gg].xapp && r->ex[s][gg].xapp_host == node;
      if (on_node >= r->cfg.exclude_app_max_failed_executors_per_node && !r->node_excl[node]) {
        r->node_excl[node] = true;
        r->node_expiry[node] = add_sat(now, timeout);
        r->f_x[TLO_XF_APP_NODE]++;
      }
    }
    if (gone)
      x->nappf = 0;
  }
}

/* The earliest exclusion deadline after now (exclusions ending, unschedulable aborts);
 * TL_TICK_NEVER if none (one saturated at the end of time never comes). */
static uint64_t exclude_next_of(const tlo_run *r) {
  uint64_t next = TL_TICK_NEVER;
  if (!xon(r))
    return next;
  uint64_t at[NSLOTS * MAXGEN + NHOSTS + MAXTS];
  size_t n = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      if (r->ex[s][g].xapp)
        at[n++] = r->ex[s][g].xapp_expiry;
  for (unsigned h = 0; h < NHOSTS; h++)
    if (r->node_excl[h])
      at[n++] = r->node_expiry[h];
  for (uint32_t k = 0; k < r->nts; k++)
    if (r->ts[k].xdl)
      at[n++] = r->ts[k].xdl_at;
  for (size_t i = 0; i < n; i++) {
    if (at[i] == UINT64_MAX)
      continue;
    uint64_t d = at[i] > r->now ? at[i] - r->now : 0;
    if (d < next)
      next = d;
  }
  return next;
}

/* How an attempt ends, as the caller decided it. */
typedef struct mend {
  tl_end_kind kind;
  bool counts;                 /* the kind counts (before the zombie and done rules) */
  const char *msg;             /* the event's message */
  void *result;                /* handed to task_ended */
  size_t result_size;          /* passed on */
  void (*result_free)(void *); /* passed on */
  void *dropped;               /* a result the library frees and withholds */
  bool output;                 /* a success that leaves a map output on its executor */
} mend;

/* The one way an attempt ends (status update or phase two). The caller has taken it out of the
 * tid index (or unfrozen it) already. */
static void attempt_ended(tlo_run *r, tl_tid tid, const mend *m) {
  matt *a = &r->att[tid - 1];
  uint32_t k = a->ts;
  mts *t = &r->ts[k];
  mindex *ix = &t->idx[a->index];
  t->nrunning--;
  ix->copies--;
  a->live = false;
  inflight_remove(r, tid);
  tl_tid sib = a->sibling; /* the other copy of the index, still in flight */
  if (sib != 0) {
    r->att[sib - 1].sibling = 0;
    a->sibling = 0;
  }

  /* Nothing counts in a zombie, for an index already done, from a copy that lost the race, or
   * in a barrier task set (its failure makes it zombie first, as in Spark's handleFailedTask). */
  bool counted = m->kind != TL_END_SUCCESS && m->kind != TL_END_RESULT_TOO_LARGE && m->counts &&
                 !t->zombie && !ix->done && !a->killed_by_other && !t->barrier;
  mevent *e = push_ev(r, EV_ENDED);
  e->tid = tid;
  e->ts = k;
  e->index = a->index;
  e->attempt = a->attempt;
  e->ex = a->ex;
  e->kind = m->kind;
  e->counts = counted;
  e->text = dup_text(m->msg);
  e->result = m->result;
  e->result_size = m->result_size;
  e->result_free = m->result_free;
  e->spec = a->spec;
  e->loc = a->loc;
  e->dropped = m->dropped;

  if (m->kind == TL_END_SUCCESS) {
    if (m->output) {
      if (r->nouts == r->outcap) {
        r->outcap = r->outcap ? 2 * r->outcap : 32;
        r->outs = xrealloc(r->outs, r->outcap * sizeof *r->outs);
      }
      r->outs[r->nouts++] = (mout){k, a->index, a->attempt, tid, a->spec, a->loc, a->ex};
    }
    if (!ix->done) {
      if (t->may_spec)
        record_duration(t, r->now - a->launched_at);
      mark_successful(r, k, a->index);
    }
    /* The other copy is asked to die; what it reports afterwards counts for nothing. */
    if (sib != 0 && !r->att[sib - 1].killed_by_other) {
      matt *other = &r->att[sib - 1];
      other->killed_by_other = true;
      r->f_lost_races++;
      mevent *kill = push_ev(r, EV_KILL);
      kill->tid = sib;
      kill->ex = other->ex;
      kill->interrupt = true;
      kill->text = dup_text("another attempt succeeded");
    }
  } else if (m->kind == TL_END_RESULT_TOO_LARGE) {
    r->f_too_large++;
    abort_ts(r, k, ABORT_RESULT_SIZE, 0, 0, NULL);
  } else {
    if (counted && xon(r)) /* recorded before it is counted, as Spark's handleFailedTask */
      xf_record(r, k, a, m->msg);
    if (m->kind == TL_END_FETCH_FAILED)
      make_zombie(r, k);
    else if (counted && ++ix->failures >= r->cfg.max_task_failures)
      abort_ts(r, k, ABORT_FAILURES, a->index, ix->failures, m->msg);
    if (t->barrier) /* the stage runs again as a whole */
      make_zombie(r, k);
    if (ix->spec && ix->copies == 0) /* its one copy is gone: a retry, not a copy */
      spec_remove(t, a->index);
    if (!t->zombie && !ix->done && !ix->pending && ix->copies == 0) {
      pend_push(t, a->index);
      r->revive_wanted = true;
    }
  }
  finish_if_drained(r, k);
}

static void push_revive_if_wanted(tlo_run *r) {
  if (r->revive_wanted) {
    r->revive_wanted = false;
    push_ev(r, EV_REVIVE);
  }
}

static size_t count_tombstones(const tlo_run *r) {
  size_t n = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      n += r->ex[s][g].state == MX_REMOVED;
  return n;
}

static mexec *oldest_tombstone(tlo_run *r) {
  mexec *best = NULL;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      mexec *x = &r->ex[s][g];
      if (x->state == MX_REMOVED && (best == NULL || x->tomb_seq < best->tomb_seq))
        best = x;
    }
  return best;
}

static bool host_alive(const tlo_run *r, unsigned h);
static void executor_changed(tlo_run *r, const mexec *x);

/* Phase one of a loss. */
static void freeze(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, int exit_code,
                   const char *msg) {
  tl_tid *v;
  size_t n = inflight_where(r, &v, x, 0, -1);
  for (size_t i = 0; i < n; i++) {
    matt *a = &r->att[v[i] - 1];
    a->frozen = true;
    x->nrunning--;
    x->free_cores += r->ts[a->ts].cpus;
    x->nfrozen++;
    r->ts[a->ts].nfrozen++;
  }
  free(v);
  r->host_live[x->host]--;
  x->nappf = 0; /* its application-level failures are dropped when its loss begins */
  x->was_decom = x->state == MX_DECOM;
  x->was_alive = x->state == MX_ALIVE;
  x->state = MX_PENDING;
  executor_changed(r, x);
  x->was_alive = false;
  x->pend_timed = r->cfg.pending_loss_timeout_ns != 0;
  if (x->pend_timed) {
    x->pend_deadline = add_sat(r->now, r->cfg.pending_loss_timeout_ns);
    x->pend_seq = ++r->seq;
  }
  r->executors_lost++;
  mevent *e = push_ev(r, EV_LOST);
  e->ex = x;
  e->loss = kind;
  e->app = app;
  e->exit_code = exit_code;
  e->text = dup_text(msg);
}

/* The map outputs an executor held, lost with it: each done index of an active shuffle-map task
 * set whose output was there is done no more, reported TL_END_RESUBMITTED with the writer's tid,
 * and pending again unless a copy of it still runs. */
static void resubmit_outputs(tlo_run *r, mexec *x) {
  size_t w = 0;
  for (size_t i = 0; i < r->nouts; i++) {
    mout o = r->outs[i];
    if (o.ex != x) {
      r->outs[w++] = o;
      continue;
    }
    mts *t = &r->ts[o.ts];
    mindex *ix = &t->idx[o.index];
    ix->done = false;
    t->nsucceeded--;
    mevent *e = push_ev(r, EV_ENDED);
    e->tid = o.tid;
    e->ts = o.ts;
    e->index = o.index;
    e->attempt = o.attempt;
    e->ex = x;
    e->kind = TL_END_RESUBMITTED;
    r->f_resubmitted++;
    e->text = dup_text("Its map output was lost with its executor; the task runs again.");
    e->spec = o.spec;
    e->loc = o.loc;
    if (ix->copies == 0) {
      pend_push(t, o.index);
      r->revive_wanted = true;
    }
  }
  r->nouts = w;
}

/* Phase two: the map outputs there are lost, every frozen attempt ends, the executor becomes a
 * tombstone. */
static void remove_executor(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, const char *msg) {
  bool app_fault = app && !x->was_decom && kind != TL_LOSS_KILLED && kind != TL_LOSS_DECOMMISSIONED;
  resubmit_outputs(r, x);
  tl_tid *v;
  size_t n = inflight_where(r, &v, x, 1, -1);
  for (size_t i = 0; i < n; i++) {
    matt *a = &r->att[v[i] - 1];
    a->frozen = false;
    x->nfrozen--;
    r->ts[a->ts].nfrozen--;
    r->failed_count++;
    mend m = {TL_END_EXECUTOR_LOST, app_fault && a->running, msg, NULL, 0, NULL, NULL, false};
    attempt_ended(r, v[i], &m);
  }
  free(v);
  x->state = MX_REMOVED;
  x->pend_timed = false;
  x->tomb_when = r->now;
  x->tomb_seq = ++r->seq;
  while (count_tombstones(r) > r->cfg.max_tombstones) {
    mexec *old = oldest_tombstone(r);
    old->state = MX_NONE;
    old->none_checked = false;
  }
  push_revive_if_wanted(r);
}

/* Both phases, or the one that is due. */
static void lose(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, int exit_code,
                 const char *msg) {
  if (live_state(x->state))
    freeze(r, x, kind, app, exit_code, msg);
  if (kind != TL_LOSS_PENDING)
    remove_executor(r, x, kind, app, msg);
}

static mexec *exec_by_id(tlo_run *r, const char *id) {
  unsigned s, g;
  char tail;
  if (sscanf(id, "e%u.%u%c", &s, &g, &tail) == 2 && s < NSLOTS && g < MAXGEN)
    return &r->ex[s][g];
  if (sscanf(id, "p%u%c", &s, &tail) == 1 && s < NSLOTS)
    return &r->phantom[s];
  return NULL;
}

static int ts_of_payload(const tlo_run *r, const void *payload) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (payload == &r->ts[k])
      return (int)k;
  return -1;
}

/* The unreleased task set of a stage that is not zombie, or -1. */
static int active_of(const tlo_run *r, uint32_t stage) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released && !r->ts[k].zombie && r->ts[k].stage == stage)
      return (int)k;
  return -1;
}

static bool stage_exists(const tlo_run *r, uint32_t stage) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released && r->ts[k].stage == stage)
      return true;
  return false;
}

/* ---------------------------------------------------------------------------------------------
 * Locality: the model of docs/locality.md, written from it and from Spark's TaskSetManager
 * (computeValidLocalityLevels, getAllowedLocalityLevel, dequeueTask, recomputeLocality,
 * resetDelayScheduleTimer). Everything is recomputed by scanning: a task's preferences, the
 * pending stack and the executors.
 * ------------------------------------------------------------------------------------------- */

/* A host is live for locality while it has an ALIVE executor (decommissioning ones take no
 * tasks); its rack is known while it has a live one (host_rack). */
static bool host_alive(const tlo_run *r, unsigned h) {
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      if (r->ex[s][g].state == MX_ALIVE && r->ex[s][g].host == h)
        return true;
  return false;
}

static bool prefers_exec(const mts *t, uint32_t i, const mexec *x) {
  for (unsigned p = 0; p < t->nprefs[i]; p++)
    if (t->prefs[i][p].ex == x)
      return true;
  return false;
}

static bool prefers_host(const mts *t, uint32_t i, unsigned h) {
  for (unsigned p = 0; p < t->nprefs[i]; p++)
    if (t->prefs[i][p].host == h)
      return true;
  return false;
}

/* Whether index i prefers a live host, other than `except` (NHOSTS: none), in rack `rack`
 * (-1: any rack). */
static bool prefers_rack(const tlo_run *r, const mts *t, uint32_t i, int rack, unsigned except) {
  for (unsigned p = 0; p < t->nprefs[i]; p++) {
    unsigned h = t->prefs[i][p].host;
    if (h != except && r->host_rack[h] >= 0 && (rack < 0 || r->host_rack[h] == rack) &&
        host_alive(r, h))
      return true;
  }
  return false;
}

/* Whether pending index i could launch at level l somewhere live now (Spark's pending lists
 * whose place is alive). */
static bool pending_at(const tlo_run *r, const mts *t, uint32_t i, unsigned l) {
  switch (l) {
  case TL_PROCESS_LOCAL:
    for (unsigned p = 0; p < t->nprefs[i]; p++)
      if (t->prefs[i][p].ex != NULL && t->prefs[i][p].ex->state == MX_ALIVE)
        return true;
    return false;
  case TL_NODE_LOCAL:
    for (unsigned p = 0; p < t->nprefs[i]; p++)
      if (host_alive(r, t->prefs[i][p].host))
        return true;
    return false;
  case TL_NO_PREF:
    return t->nprefs[i] == 0;
  case TL_RACK_LOCAL:
    return prefers_rack(r, t, i, -1, NHOSTS);
  default:
    return true;
  }
}

/* Something pending to launch at level l (Spark's moreTasksToRunIn). */
static bool has_at(const tlo_run *r, const mts *t, unsigned l) {
  for (uint32_t k = 0; k < t->npend; k++)
    if (pending_at(r, t, t->pend[k], l))
      return true;
  return false;
}

static uint8_t valid_levels_of(const tlo_run *r, const mts *t) {
  uint8_t m = 1u << TL_ANY;
  for (unsigned l = TL_PROCESS_LOCAL; l < TL_ANY; l++)
    if (has_at(r, t, l))
      m |= (uint8_t)(1u << l);
  return m;
}

/* The first level of m at l or after (TL_ANY is always in m). */
static unsigned next_level(uint8_t m, unsigned l) {
  while (l < TL_ANY && !(m & (1u << l)))
    l++;
  return l;
}

static unsigned levels_below(uint8_t m, unsigned l) {
  unsigned n = 0;
  for (unsigned k = 0; k < l; k++)
    n += (m >> k) & 1u;
  return n;
}

/* Spark's recomputeLocality: the new valid levels; the task set stays at its level (or the next
 * valid one), unless a level appeared below it: then it goes to the most local level that
 * appeared (SPARK-31837). The timer is left alone. */
static void recompute_levels(tlo_run *r, mts *t) {
  if (!t->has_loc || t->zombie || t->released)
    return;
  uint8_t before = t->levels, after = valid_levels_of(r, t);
  unsigned level = next_level(after, t->level);
  if (levels_below(after, t->level) > levels_below(before, t->level)) {
    uint8_t added = (uint8_t)(after & ~before);
    level = 0;
    while (!(added & (1u << level)))
      level++;
  }
  if (after != before || level != t->level) {
    r->f_recomputes++;
    trace(r, 2, "  task set %" PRIu64 " levels %#x -> %#x, at %s -> %s", t->id, before, after,
          tl_locality_name((tl_locality)t->level), tl_locality_name((tl_locality)level));
  }
  t->levels = after;
  t->level = (uint8_t)level;
}

/* An executor was registered, decommissioned or lost: every task set that prefers it or its
 * host recomputes its levels, once, from the new state (docs/locality.md; Spark recomputes
 * every task set on every executor added or lost). */
static void recompute_where(tlo_run *r, const mexec *x, bool by_exec, bool by_host) {
  for (uint32_t k = 0; k < r->nts; k++) {
    mts *t = &r->ts[k];
    if (!t->has_loc || t->zombie || t->released)
      continue;
    bool touched = false;
    for (uint32_t i = 0; i < t->ntasks && !touched; i++)
      touched = (by_exec && prefers_exec(t, i, x)) || (by_host && prefers_host(t, i, x->host));
    if (touched)
      recompute_levels(r, t);
  }
}

static void executor_changed(tlo_run *r, const mexec *x) { recompute_where(r, x, true, true); }

/* Spark's getAllowedLocalityLevel at the scheduler's now: a level with nothing to launch is
 * skipped and the wait restarts (SPARK-4939); a level whose wait ran out is left, the next wait
 * starting where it ended. */
static unsigned allowed_level(tlo_run *r, mts *t) {
  while (t->level != TL_ANY) {
    unsigned l = t->level;
    if (!has_at(r, t, l)) {
      t->reset = r->now;
      r->f_skips++;
    } else if (due_at(add_sat(t->reset, r->wait_ns[l]), r->now)) {
      t->reset += r->wait_ns[l];
      r->f_waits_out += l != TL_NO_PREF;
    } else {
      return l;
    }
    t->level = (uint8_t)next_level(t->levels, l + 1);
    trace(r, 2, "  task set %" PRIu64 " moves to %s (reset %" PRIu64 " ms)", t->id,
          tl_locality_name((tl_locality)t->level), t->reset / 1000000);
  }
  return TL_ANY;
}

/* The level index i has on executor x (for a speculative copy): its best preference there. */
static unsigned locality_on(const tlo_run *r, const mts *t, uint32_t i, const mexec *x) {
  if (!t->has_loc || t->nprefs[i] == 0)
    return TL_NO_PREF;
  if (prefers_exec(t, i, x))
    return TL_PROCESS_LOCAL;
  if (prefers_host(t, i, x->host))
    return TL_NODE_LOCAL;
  if (r->host_rack[x->host] >= 0 && prefers_rack(r, t, i, r->host_rack[x->host], x->host))
    return TL_RACK_LOCAL;
  return TL_ANY;
}

/* Spark's dequeueTask for a regular pending task on x, no farther than allowed: the topmost
 * pending index that prefers x, then x's host, then none, then another live host of x's rack,
 * then any. Returns the index, or -1. */
static int take_pending(tlo_run *r, const mts *t, const mexec *x, unsigned allowed,
                        unsigned *level) {
  if (t->npend == 0)
    return -1;
  int rack = r->host_rack[x->host];
  for (unsigned l = TL_PROCESS_LOCAL; l <= allowed; l++) {
    for (uint32_t k = t->npend; k-- > 0;) {
      uint32_t i = t->pend[k];
      bool fits = l == TL_PROCESS_LOCAL ? prefers_exec(t, i, x)
                  : l == TL_NODE_LOCAL  ? prefers_host(t, i, x->host)
                  : l == TL_NO_PREF     ? t->nprefs[i] == 0
                  : l == TL_RACK_LOCAL  ? rack >= 0 && prefers_rack(r, t, i, rack, x->host)
                                        : true;
      if (fits && task_blocked(r, t, i, x)) { /* dequeueTaskFromList skips it */
        r->f_x[TLO_XF_SKIPS]++;
        continue;
      }
      if (fits) {
        *level = l;
        return (int)i;
      }
    }
  }
  return -1;
}

/* tl_tick's view of a task set's waits: when the wait at its level (and at the next ones, if
 * that one has already run out) ends after now; *fired when one ended in (since, now]. A level
 * with nothing to launch ends the look: the next offer skips it, and the wait after it starts
 * only then. */
static uint64_t wait_end(const tlo_run *r, const mts *t, uint64_t since, bool *fired) {
  if (!t->has_loc || t->zombie || t->released || t->npend + t->nspecs == 0)
    return TL_TICK_NEVER;
  uint64_t reset = t->reset;
  for (unsigned l = t->level; l != TL_ANY; l = next_level(t->levels, l + 1)) {
    if (!has_at(r, t, l))
      break;
    uint64_t end = add_sat(reset, r->wait_ns[l]);
    if (end == UINT64_MAX)
      return TL_TICK_NEVER; /* past the end of time: it never runs out */
    if (end > r->now)
      return end;
    if (end > since)
      *fired = true;
    reset = end;
  }
  return TL_TICK_NEVER;
}

static uint64_t loc_next_of(const tlo_run *r) {
  uint64_t next = TL_TICK_NEVER;
  bool fired = false;
  for (uint32_t k = 0; k < r->nts; k++) {
    uint64_t end = wait_end(r, &r->ts[k], UINT64_MAX, &fired);
    if (end != TL_TICK_NEVER && end - r->now < next)
      next = end - r->now;
  }
  return next;
}

/* Places: the executor ids and host names the task sets not yet released prefer. */
static size_t count_places(const tlo_run *r) {
  bool host[NHOSTS] = {false};
  const mexec *seen[NSLOTS * MAXGEN + NSLOTS];
  size_t nseen = 0, n = 0;
  for (uint32_t k = 0; k < r->nts; k++) {
    const mts *t = &r->ts[k];
    if (t->released || !t->has_loc)
      continue;
    for (uint32_t i = 0; i < t->ntasks; i++)
      for (unsigned p = 0; p < t->nprefs[i]; p++) {
        host[t->prefs[i][p].host] = true;
        const mexec *x = t->prefs[i][p].ex;
        if (x == NULL)
          continue;
        size_t j = 0;
        while (j < nseen && seen[j] != x)
          j++;
        if (j == nseen)
          seen[nseen++] = x;
      }
  }
  for (unsigned h = 0; h < NHOSTS; h++)
    n += host[h];
  return n + nseen;
}

/* The speculation check's share of tl_tick's answer: the time until the next check while an
 * attempt is in the tid index (nothing can be slow otherwise). A check that saturated at the
 * end of time never comes, like every deadline there. */
static uint64_t spec_next_of(const tlo_run *r) {
  if (!r->cfg.speculation)
    return TL_TICK_NEVER;
  bool any = false;
  for (size_t i = 0; i < r->ninflight && !any; i++)
    any = !r->att[r->inflight[i] - 1].frozen;
  if (!any || r->spec_never)
    return TL_TICK_NEVER;
  return r->next_spec > r->now ? r->next_spec - r->now : 0;
}

/* tl_tick's answer from the model's timelines. */
static uint64_t next_deadline(tlo_run *r) {
  uint64_t due = UINT64_MAX;
  const mexec *hb = NULL, *pend = NULL, *tomb = NULL;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      const mexec *x = &r->ex[s][g];
      if (live_state(x->state) && (hb == NULL || x->hb_seq < hb->hb_seq))
        hb = x;
      if (x->state == MX_PENDING && x->pend_timed && (pend == NULL || x->pend_seq < pend->pend_seq))
        pend = x;
      if (x->state == MX_REMOVED && (tomb == NULL || x->tomb_seq < tomb->tomb_seq))
        tomb = x;
    }
  if (r->cfg.heartbeat_timeout_ns != 0 && hb != NULL)
    due = add_sat(hb->hb_when, r->cfg.heartbeat_timeout_ns);
  if (pend != NULL && pend->pend_deadline < due)
    due = pend->pend_deadline;
  if (r->cfg.tombstone_ttl_ns != 0 && tomb != NULL) {
    uint64_t t = add_sat(tomb->tomb_when, r->cfg.tombstone_ttl_ns);
    if (t < due)
      due = t;
  }
  uint64_t spec = spec_next_of(r), wait = loc_next_of(r), excl = exclude_next_of(r);
  uint64_t answer = due == UINT64_MAX ? TL_TICK_NEVER : due > r->now ? due - r->now : 0;
  if (wait < answer)
    answer = wait;
  if (excl < answer)
    answer = excl;
  return spec < answer ? spec : answer;
}

/* ---------------------------------------------------------------------------------------------
 * Comparing the library with the model.
 * ------------------------------------------------------------------------------------------- */

#define CMP(r, what, got, want)                                                                    \
  do {                                                                                             \
    uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);                                     \
    if (got_ != want_)                                                                             \
      fail((r), "%s is %" PRIu64 ", the model says %" PRIu64, (what), got_, want_);                \
  } while (0)

/* CMP for a field of a named object: the name is formatted only when they differ. */
#define CMP_OF(r, kind, name, field, got, want)                                                    \
  do {                                                                                             \
    uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);                                     \
    if (got_ != want_)                                                                             \
      fail((r), "%s %s %s is %" PRIu64 ", the model says %" PRIu64, (kind), (name), (field), got_, \
           want_);                                                                                 \
  } while (0)

static void check_ledger(tlo_run *r) {
  char why[512] = "";
  int rc = tl_check(r->s, why, sizeof why);
  if (rc != TL_OK)
    fail(r, "tl_check: %s: %s", tl_err_name(rc), why);
}

static void cmp_exec(tlo_run *r, mexec *x) {
  tl_executor_status st;
  int rc = tl_executor_get(r->s, x->id, &st);
  int want = x->state == MX_NONE ? TL_ENOENT : x->state == MX_REMOVED ? TL_EGONE : TL_OK;
  if (rc != want) {
    fail(r, "tl_executor_get(%s) returned %s, the model expects %s", x->id, tl_err_name(rc),
         tl_err_name(want));
    return;
  }
  if (rc != TL_OK) {
    if (x->state == MX_NONE)
      x->none_checked = true;
    return;
  }
  tl_executor_state ws = x->state == MX_ALIVE   ? TL_EXECUTOR_ALIVE
                         : x->state == MX_DECOM ? TL_EXECUTOR_DECOMMISSIONING
                                                : TL_EXECUTOR_PENDING_LOSS;
  CMP_OF(r, "executor", x->id, "state", st.state, ws);
  CMP_OF(r, "executor", x->id, "cores", st.cores, x->cores);
  CMP_OF(r, "executor", x->id, "free_cores", st.free_cores, x->free_cores);
  CMP_OF(r, "executor", x->id, "running", st.running, x->nrunning);
  CMP_OF(r, "executor", x->id, "frozen", st.frozen, x->nfrozen);
  if (strcmp(st.host, host_names[x->host]) != 0)
    fail(r, "executor %s host is %s, the model says %s", x->id, st.host, host_names[x->host]);
}

static void cmp_ts(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  tl_taskset_status st;
  int rc = tl_taskset_get(r->s, t->id, &st);
  int want = t->released ? TL_ENOENT : TL_OK;
  if (rc != want) {
    fail(r, "tl_taskset_get(%" PRIu64 ") returned %s, the model expects %s", t->id, tl_err_name(rc),
         tl_err_name(want));
    return;
  }
  if (rc != TL_OK) {
    t->gone_checked = true;
    return;
  }
#define CMP_TS(field, value)                                                                       \
  do {                                                                                             \
    uint64_t got_ = (uint64_t)(st.field), want_ = (uint64_t)(value);                               \
    if (got_ != want_)                                                                             \
      fail(r, "task set %" PRIu64 " %s is %" PRIu64 ", the model says %" PRIu64, t->id, #field,    \
           got_, want_);                                                                           \
  } while (0)
  CMP_TS(info.id, t->id);
  CMP_TS(info.stage_id, t->stage);
  CMP_TS(info.stage_attempt, t->sattempt);
  CMP_TS(info.ntasks, t->ntasks);
  CMP_TS(zombie, t->zombie);
  CMP_TS(failed, t->failed);
  CMP_TS(running, t->nrunning);
  CMP_TS(frozen, t->nfrozen);
  CMP_TS(pending, t->zombie ? 0 : t->npend);
  CMP_TS(succeeded, t->nsucceeded);
  CMP_TS(cpus_per_task, t->cpus);
  CMP_TS(locality_levels, t->has_loc ? t->levels : (1u << TL_NO_PREF) | (1u << TL_ANY));
  CMP_TS(locality, t->has_loc ? t->level : TL_NO_PREF);
#undef CMP_TS
}

/* tl_pool_get of one of pool_names against the model. */
static void cmp_pool(tlo_run *r, unsigned p) {
  const char *name = pool_names[p];
  tl_pool_status st;
  int rc = tl_pool_get(r->s, name, &st);
  bool valid = name != NULL && name[0] != '\0' && strlen(name) < 256;
  int want = !valid ? TL_EINVAL : r->pools[p].exists ? TL_OK : TL_ENOENT;
  if (rc != want) {
    fail(r, "tl_pool_get(%.12s) returned %s, the model expects %s", name ? name : "(null)",
         tl_err_name(rc), tl_err_name(want));
    return;
  }
  if (rc != TL_OK)
    return;
  uint32_t running = 0, tasksets = 0;
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released && r->ts[k].pool == p) {
      running += r->ts[k].nrunning;
      tasksets++;
    }
  CMP_OF(r, "pool", name, "mode", st.mode, r->pools[p].mode);
  CMP_OF(r, "pool", name, "weight", st.weight, r->pools[p].weight);
  CMP_OF(r, "pool", name, "min_share", st.min_share, r->pools[p].min_share);
  CMP_OF(r, "pool", name, "running", st.running, running);
  CMP_OF(r, "pool", name, "tasksets", st.tasksets, tasksets);
}

/* tl_check and every counter; between operations (top) also every executor and task set that
 * exists or has not been seen gone since it went. */
static void compare_all(tlo_run *r, bool top) {
  if (r->failed || r->closing)
    return;
  check_ledger(r);
  tl_stats st;
  tl_stats_get(r->s, &st);
  size_t alive = 0, decom = 0, pending = 0, tombs = 0, hosts = 0, racks = 0, active = 0, zombie = 0,
         running = 0, frozen = 0, tasks_pending = 0, speculatable = 0, pools = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      const mexec *x = &r->ex[s][g];
      alive += x->state == MX_ALIVE;
      decom += x->state == MX_DECOM;
      pending += x->state == MX_PENDING;
      tombs += x->state == MX_REMOVED;
    }
  bool rack_used[2] = {false, false};
  for (unsigned h = 0; h < NHOSTS; h++) {
    if (r->host_live[h] == 0)
      continue;
    hosts++;
    if (r->host_rack[h] >= 0)
      rack_used[r->host_rack[h]] = true;
  }
  racks = (size_t)rack_used[0] + (size_t)rack_used[1];
  for (uint32_t k = 0; k < r->nts; k++) {
    const mts *t = &r->ts[k];
    if (t->released)
      continue;
    if (t->zombie)
      zombie++;
    else {
      active++;
      tasks_pending += t->npend;
    }
    speculatable += t->nspecs;
  }
  for (unsigned p = 0; p < NPOOLNAMES; p++)
    pools += r->pools[p].exists;
  for (size_t i = 0; i < r->ninflight; i++) {
    if (r->att[r->inflight[i] - 1].frozen)
      frozen++;
    else
      running++;
  }
  CMP(r, "stats.executors_alive", st.executors_alive, alive);
  CMP(r, "stats.executors_decommissioning", st.executors_decommissioning, decom);
  CMP(r, "stats.executors_pending_loss", st.executors_pending_loss, pending);
  CMP(r, "stats.tombstones", st.tombstones, tombs);
  CMP(r, "stats.hosts", st.hosts, hosts);
  CMP(r, "stats.racks", st.racks, racks);
  CMP(r, "stats.tasksets_active", st.tasksets_active, active);
  CMP(r, "stats.tasksets_zombie", st.tasksets_zombie, zombie);
  CMP(r, "stats.attempts_running", st.attempts_running, running);
  CMP(r, "stats.attempts_frozen", st.attempts_frozen, frozen);
  CMP(r, "stats.tasks_pending", st.tasks_pending, tasks_pending);
  CMP(r, "stats.tasks_speculatable", st.tasks_speculatable, speculatable);
  CMP(r, "stats.pools", st.pools, pools);
  CMP(r, "stats.places", st.places, count_places(r));
  /* Inside a callback the event being delivered still counts as queued (it is not delivered
   * until its callback returns), as do the rest of its batch and what calls made since. */
  CMP(r, "stats.events_queued", st.events_queued, top ? 0 : r->qlen - r->qhead + 1);
  CMP(r, "stats.launched", st.launched, r->launched);
  CMP(r, "stats.succeeded", st.succeeded, r->succeeded);
  CMP(r, "stats.failed", st.failed, r->failed_count);
  CMP(r, "stats.killed", st.killed, r->killed);
  CMP(r, "stats.stale_updates", st.stale_updates, r->stale);
  CMP(r, "stats.rejected_updates", st.rejected_updates, r->rejected_updates);
  CMP(r, "stats.rejected_offers", st.rejected_offers, r->rejected_offers);
  CMP(r, "stats.executors_lost", st.executors_lost, r->executors_lost);
  CMP(r, "stats.tasksets_released", st.tasksets_released, r->tasksets_released);
  CMP(r, "stats.pending_loss_timeouts", st.pending_loss_timeouts, r->pending_loss_timeouts);
  size_t xexecs = 0, xnodes = 0, xsets = 0, xwaiting = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      xexecs += r->ex[s][g].xapp;
  for (unsigned h = 0; h < NHOSTS; h++)
    xnodes += r->node_excl[h];
  for (uint32_t k = 0; k < r->nts; k++) {
    xsets += !r->ts[k].released && r->ts[k].nxf > 0;
    xwaiting += !r->ts[k].released && r->ts[k].xdl;
  }
  CMP(r, "stats.executors_excluded", st.executors_excluded, xexecs);
  CMP(r, "stats.nodes_excluded", st.nodes_excluded, xnodes);
  CMP(r, "stats.tasksets_with_failures", st.tasksets_with_failures, xsets);
  CMP(r, "stats.tasksets_unschedulable", st.tasksets_unschedulable, xwaiting);
  CMP(r, "stats.excluded_offers", st.excluded_offers, r->excluded_offers);
  CMP(r, "stats.tasksets_unschedulable_aborted", st.tasksets_unschedulable_aborted,
      r->unsched_aborted);
  if (!top)
    return;
  for (unsigned s = 0; s < NSLOTS && !r->failed; s++)
    for (uint32_t g = 0; g < r->ngen[s] && !r->failed; g++)
      if (r->ex[s][g].state != MX_NONE || !r->ex[s][g].none_checked)
        cmp_exec(r, &r->ex[s][g]);
  if (!r->failed)
    cmp_exec(r, &r->phantom[r->op_index % NSLOTS]);
  /* Every pool that exists; and one other name in turn (unknown: TL_ENOENT; invalid). */
  for (unsigned p = 0; p < NPOOLNAMES && !r->failed; p++)
    if (r->pools[p].exists || p == r->op_index % NPOOLNAMES)
      cmp_pool(r, p);
  for (uint32_t k = 0; k < r->nts && !r->failed; k++)
    if (!r->ts[k].gone_checked)
      cmp_ts(r, k);
}

/* From inside a callback: tl_check, the counters, and the task set and executor the event
 * names (-1, NULL: none), before the callback acts re-entrantly. */
static void cb_check(tlo_run *r, int k, mexec *x) {
  compare_all(r, false);
  if (!r->failed && !r->closing && k >= 0)
    cmp_ts(r, (uint32_t)k);
  if (!r->failed && !r->closing && x != NULL)
    cmp_exec(r, x);
}

/* ---------------------------------------------------------------------------------------------
 * Results.
 * ------------------------------------------------------------------------------------------- */

static void res_free(void *p) { ((tlo_res *)p)->frees++; }

static tlo_res *res_new(tlo_run *r) {
  if (r->nres == r->rescap) {
    r->rescap = r->rescap ? 2 * r->rescap : 64;
    r->res = xrealloc(r->res, r->rescap * sizeof *r->res);
  }
  tlo_res *res = xrealloc(NULL, sizeof *res);
  res->magic = RES_MAGIC;
  res->frees = 0;
  r->res[r->nres++] = res;
  return res;
}

/* ---------------------------------------------------------------------------------------------
 * The calls: each predicts from the model, applies the prediction, calls, and compares.
 * ------------------------------------------------------------------------------------------- */

static void do_add(tlo_run *r, mexec *x, unsigned slot, bool fresh, unsigned host, unsigned rackc,
                   uint32_t cores) {
  static const int canonical[NHOSTS] = {0, 1, 0, -1};
  int rk = rackc == 0 ? canonical[host] : rackc == 1 ? 0 : rackc == 2 ? 1 : rackc == 3 ? -1 : -2;
  const char *rack = rk == -2 ? "" : rk < 0 ? NULL : rack_names[rk];
  int want;
  if (cores == 0 || rk == -2) {
    want = TL_EINVAL;
  } else {
    clock_read(r);
    if (x->state == MX_REMOVED)
      want = TL_EGONE;
    else if (x->state != MX_NONE)
      want = TL_EEXIST;
    else if (r->host_live[host] > 0 && r->host_rack[host] != rk)
      want = TL_EINVAL;
    else
      want = TL_OK;
  }
  if (want == TL_OK) {
    if (fresh)
      r->ngen[slot]++;
    x->state = MX_ALIVE;
    x->cores = x->free_cores = cores;
    x->nrunning = x->nfrozen = 0;
    x->host = host;
    x->was_decom = false;
    x->hb_when = r->now;
    x->hb_seq = ++r->seq;
    x->pend_timed = false;
    r->host_live[host]++;
    r->host_rack[host] = rk;
    x->was_alive = false;
    executor_changed(r, x);
    push_ev(r, EV_ADDED)->ex = x;
    clear_deadlines(r, TLO_XF_CLEARED_ADD); /* a task set may run there */
  }
  char d[160];
  snprintf(d, sizeof d, "add %s host=%s rack=%s cores=%u", x->id, host_names[host],
           rack == NULL ? "(none)"
           : rack[0]    ? rack
                        : "\"\"",
           cores);
  tl_executor_desc desc = {x->id, host_names[host], rack, cores};
  note_call(r, d);
  int rc = tl_executor_add(r->s, &desc);
  expect_rc(r, d, rc, want);
}

static void do_lose(tlo_run *r, mexec *x, unsigned kind, bool app, int exit_code, const char *msg) {
  int want;
  if (kind > TL_LOSS_PENDING_TIMEOUT) {
    want = TL_EINVAL;
  } else {
    clock_read(r);
    if (x->state == MX_NONE)
      want = TL_ENOENT;
    else if (x->state == MX_REMOVED)
      want = TL_EGONE;
    else
      want = TL_OK;
  }
  if (want == TL_OK && !(x->state == MX_PENDING && kind == TL_LOSS_PENDING))
    lose(r, x, (tl_loss_kind)kind, app, exit_code, msg);
  char d[160];
  snprintf(d, sizeof d, "lose %s %s app=%d exit=%d msg=%.12s", x->id,
           tl_loss_kind_name((tl_loss_kind)kind), app, exit_code, msg ? msg : "(null)");
  tl_loss_reason why = {(tl_loss_kind)kind, app, exit_code, msg};
  note_call(r, d);
  int rc = tl_executor_lost(r->s, x->id, &why);
  expect_rc(r, d, rc, want);
}

static void do_heartbeat(tlo_run *r, mexec *x) {
  clock_read(r);
  int want = x->state == MX_NONE      ? TL_ENOENT
             : x->state == MX_REMOVED ? TL_EGONE
             : x->state == MX_PENDING ? TL_ESTATE
                                      : TL_OK;
  if (want == TL_OK) {
    x->hb_when = r->now;
    x->hb_seq = ++r->seq;
  }
  char d[64];
  snprintf(d, sizeof d, "heartbeat %s", x->id);
  note_call(r, d);
  int rc = tl_executor_heartbeat(r->s, x->id);
  expect_rc(r, d, rc, want);
}

static void do_decommission(tlo_run *r, mexec *x, const char *msg) {
  int want = x->state == MX_NONE      ? TL_ENOENT
             : x->state == MX_REMOVED ? TL_EGONE
             : x->state == MX_PENDING ? TL_ESTATE
                                      : TL_OK;
  if (want == TL_OK && x->state == MX_ALIVE) {
    x->state = MX_DECOM;
    x->was_alive = true;
    executor_changed(r, x);
    x->was_alive = false;
  }
  char d[80];
  snprintf(d, sizeof d, "decommission %s msg=%.12s", x->id, msg ? msg : "(null)");
  note_call(r, d);
  int rc = tl_executor_decommission(r->s, x->id, msg);
  expect_rc(r, d, rc, want);
}

static bool pool_name_valid(const char *name) {
  return name != NULL && name[0] != '\0' && strlen(name) < 256;
}

/* Preferred locations of a submission (NULL: tasks NULL). */
typedef struct mprefs {
  uint8_t n[MAXTASKS];         /* per index */
  mpref p[MAXTASKS][MAXPREFS]; /* as given */
  bool bad;                    /* index 0's first preference names the host "" (TL_EINVAL) */
} mprefs;

static void do_submit(tlo_run *r, uint32_t stage, int attempt_sel, uint32_t prio, uint32_t ntasks,
                      uint32_t cpus, unsigned pool, bool shuffle, bool barrier,
                      const mprefs *prefs) {
  if (r->nts == MAXTS)
    return; /* the model's table is full: the operation does nothing */
  uint32_t sattempt = attempt_sel < 0 ? r->stage_next[stage] : (uint32_t)attempt_sel;
  const char *pname = pool_names[pool];
  unsigned in_pool = POOL_DEFAULT; /* TL_FIFO ignores the pool's name, as Spark does */
  int want = TL_OK;
  if (ntasks == 0 || (pname != NULL && !pool_name_valid(pname)) || (prefs != NULL && prefs->bad)) {
    want = TL_EINVAL;
  } else {
    if (r->cfg.mode == TL_FAIR && pname != NULL) {
      in_pool = pool;
      if (!r->pools[pool].exists)
        want = TL_ENOENT;
    }
    for (uint32_t k = 0; k < r->nts && want == TL_OK; k++)
      if (!r->ts[k].released && r->ts[k].stage == stage && r->ts[k].sattempt == sattempt)
        want = TL_EEXIST;
  }
  uint32_t k = r->nts;
  mts *t = &r->ts[k];
  if (want == TL_OK) {
    int older = active_of(r, stage);
    memset(t, 0, sizeof *t);
    t->id = r->next_ts_id++;
    t->stage = stage;
    t->sattempt = sattempt;
    t->prio = prio;
    t->ntasks = ntasks;
    t->cpus = cpus != 0 ? cpus : r->cfg.cpus_per_task;
    t->pool = in_pool;
    t->shuffle = shuffle;
    t->barrier = barrier;
    t->may_spec = r->cfg.speculation && !barrier;
    for (uint32_t i = ntasks; i-- > 0;)
      pend_push(t, i);
    for (uint32_t i = 0; prefs != NULL && i < ntasks; i++) {
      t->nprefs[i] = prefs->n[i];
      memcpy(t->prefs[i], prefs->p[i], sizeof t->prefs[i]);
      t->has_loc |= prefs->n[i] > 0;
    }
    if (t->has_loc) { /* delay scheduling starts at the most local valid level, now */
      t->levels = valid_levels_of(r, t);
      t->level = (uint8_t)next_level(t->levels, TL_PROCESS_LOCAL);
      t->reset = r->now;
      t->no_rejects = true;
    }
    r->nts++;
    if (sattempt >= r->stage_next[stage])
      r->stage_next[stage] = sattempt + 1;
    if (older >= 0) {
      make_zombie(r, (uint32_t)older);
      finish_if_drained(r, (uint32_t)older);
    }
    r->revive_wanted = true;
    push_revive_if_wanted(r);
  }
  char d[512];
  snprintf(d, sizeof d, "submit stage=%u attempt=%u priority=%u ntasks=%u cpus=%u pool=%.8s%s%s",
           stage, sattempt, prio, ntasks, cpus,
           pname == NULL      ? "(null)"
           : pname[0] == '\0' ? "\"\""
                              : pname,
           shuffle ? " shuffle_map" : "", barrier ? " barrier" : "");
  tl_location locs[MAXTASKS][MAXPREFS];
  tl_task_desc tasks[MAXTASKS];
  int w = (int)strlen(d);
  for (uint32_t i = 0; prefs != NULL && i < ntasks && i < MAXTASKS; i++) {
    tasks[i].prefs = prefs->n[i] > 0 ? locs[i] : NULL;
    tasks[i].nprefs = prefs->n[i];
    if (w > 0 && (size_t)w < sizeof d)
      w += snprintf(d + w, sizeof d - (size_t)w, " %u:", i);
    for (unsigned j = 0; j < prefs->n[i]; j++) {
      const mpref *pf = &prefs->p[i][j];
      locs[i][j].host = i == 0 && j == 0 && prefs->bad ? "" : host_names[pf->host];
      locs[i][j].executor_id = pf->ex != NULL ? pf->ex->id : NULL;
      if (w > 0 && (size_t)w < sizeof d)
        w += snprintf(d + w, sizeof d - (size_t)w, "%s%s%s", j ? "," : "", locs[i][j].host,
                      pf->ex != NULL ? "/" : "");
      if (pf->ex != NULL && w > 0 && (size_t)w < sizeof d)
        w += snprintf(d + w, sizeof d - (size_t)w, "%s", pf->ex->id);
    }
  }
  tl_taskset_desc desc = {.stage_id = stage,
                          .stage_attempt = sattempt,
                          .priority = prio,
                          .ntasks = ntasks,
                          .cpus_per_task = cpus,
                          .payload = t,
                          .shuffle_map = shuffle,
                          .barrier = barrier,
                          .pool = pname,
                          .tasks = prefs != NULL ? tasks : NULL};
  tl_taskset_id id = 0;
  note_call(r, d);
  int rc = tl_submit(r->s, &desc, &id);
  expect_rc(r, d, rc, want);
  if (rc == TL_OK && want == TL_OK && id != t->id)
    fail(r, "tl_submit gave id %" PRIu64 ", the model says %" PRIu64, id, t->id);
}

/* tl_pool_add. A pool lives as long as the scheduler, so the memory it takes joins the empty
 * scheduler's baseline. */
static void do_pool_add(tlo_run *r, unsigned pool, unsigned mode, uint32_t weight,
                        uint32_t min_share) {
  const char *name = pool_names[pool];
  int want;
  if (!pool_name_valid(name) || mode > TL_FAIR || weight == 0)
    want = TL_EINVAL;
  else if (r->cfg.mode != TL_FAIR)
    want = TL_ESTATE;
  else if (r->pools[pool].exists)
    want = TL_EEXIST;
  else
    want = TL_OK;
  if (want == TL_OK)
    r->pools[pool] = (mpool){true, (tl_sched_mode)mode, weight, min_share};
  char d[96];
  snprintf(d, sizeof d, "pool_add %.8s mode=%u weight=%u min_share=%u",
           name == NULL      ? "(null)"
           : name[0] == '\0' ? "\"\""
                             : name,
           mode, weight, min_share);
  tl_stats before, after;
  tl_stats_get(r->s, &before);
  note_call(r, d);
  int rc = tl_pool_add(r->s, name, (tl_sched_mode)mode, weight, min_share);
  expect_rc(r, d, rc, want);
  tl_stats_get(r->s, &after);
  if (rc == TL_OK && want == TL_OK && !r->in_cb) {
    r->base_bytes += after.mem_live_bytes - before.mem_live_bytes;
    r->base_blocks += after.mem_live_blocks - before.mem_live_blocks;
  }
}

static void do_kill_task(tlo_run *r, tl_tid tid, bool interrupt, const char *msg) {
  matt *a = indexed(r, tid);
  int want = a != NULL ? TL_OK : TL_ESTALE;
  if (a != NULL) {
    mevent *e = push_ev(r, EV_KILL);
    e->tid = tid;
    e->ex = a->ex;
    e->interrupt = interrupt;
    e->text = dup_text(msg);
  }
  char d[96];
  snprintf(d, sizeof d, "kill_task tid=%" PRIu64 " interrupt=%d msg=%.12s", tid, interrupt,
           msg ? msg : "(null)");
  note_call(r, d);
  int rc = tl_kill_task(r->s, tid, interrupt, msg);
  expect_rc(r, d, rc, want);
}

/* kill_task for every attempt in the tid index of every task set of a stage. */
static void kill_stage_model(tlo_run *r, uint32_t stage, bool interrupt, const char *msg) {
  for (uint32_t k = 0; k < r->nts; k++) {
    if (r->ts[k].released || r->ts[k].stage != stage)
      continue;
    tl_tid *v;
    size_t n = inflight_where(r, &v, NULL, 0, (int)k);
    for (size_t i = 0; i < n; i++) {
      mevent *e = push_ev(r, EV_KILL);
      e->tid = v[i];
      e->ex = r->att[v[i] - 1].ex;
      e->interrupt = interrupt;
      e->text = dup_text(msg);
    }
    free(v);
  }
}

static void do_kill_stage(tlo_run *r, uint32_t stage, bool interrupt, const char *msg) {
  int want = stage_exists(r, stage) ? TL_OK : TL_ENOENT;
  if (want == TL_OK)
    kill_stage_model(r, stage, interrupt, msg);
  char d[96];
  snprintf(d, sizeof d, "kill_stage stage=%u interrupt=%d msg=%.12s", stage, interrupt,
           msg ? msg : "(null)");
  note_call(r, d);
  int rc = tl_kill_stage(r->s, stage, interrupt, msg);
  expect_rc(r, d, rc, want);
}

static void do_cancel(tlo_run *r, uint32_t stage, const char *msg) {
  int want = stage_exists(r, stage) ? TL_OK : TL_ENOENT;
  if (want == TL_OK) {
    kill_stage_model(r, stage, false, msg);
    int active = active_of(r, stage);
    if (active >= 0)
      abort_ts(r, (uint32_t)active, ABORT_CANCEL, 0, 0, msg);
    for (uint32_t k = 0; k < r->nts; k++)
      if (!r->ts[k].released && r->ts[k].stage == stage)
        finish_if_drained(r, k);
  }
  char d[96];
  snprintf(d, sizeof d, "cancel_stage stage=%u msg=%.12s", stage, msg ? msg : "(null)");
  note_call(r, d);
  int rc = tl_cancel_stage(r->s, stage, msg);
  expect_rc(r, d, rc, want);
}

static void do_partition(tlo_run *r, uint32_t stage, uint32_t index) {
  int want = TL_OK;
  int active = -1;
  if (!stage_exists(r, stage)) {
    want = TL_ENOENT;
  } else if ((active = active_of(r, stage)) >= 0) {
    mts *t = &r->ts[active];
    if (index >= t->ntasks) {
      want = TL_EINVAL;
    } else if (!t->idx[index].done) {
      mark_successful(r, (uint32_t)active, index);
      finish_if_drained(r, (uint32_t)active);
    }
  }
  char d[64];
  snprintf(d, sizeof d, "partition_completed stage=%u index=%u", stage, index);
  note_call(r, d);
  int rc = tl_partition_completed(r->s, stage, index);
  expect_rc(r, d, rc, want);
}

/* In its pool's queue: not zombie, something pending or a speculative copy waiting. */
static bool schedulable(const mts *t) {
  return !t->released && !t->zombie && t->npend + t->nspecs > 0;
}

/* Spark's FAIR order between pools: below their min share first (by running / min share),
 * then by running / weight, then by name. */
static bool pool_before(const tlo_run *r, unsigned a, unsigned b, const uint32_t *running) {
  const mpool *pa = &r->pools[a], *pb = &r->pools[b];
  bool needy_a = running[a] < pa->min_share, needy_b = running[b] < pb->min_share;
  if (needy_a != needy_b)
    return needy_a;
  uint64_t lhs, rhs;
  if (needy_a) {
    lhs = (uint64_t)running[a] * (pb->min_share > 1 ? pb->min_share : 1);
    rhs = (uint64_t)running[b] * (pa->min_share > 1 ? pa->min_share : 1);
  } else {
    lhs = (uint64_t)running[a] * pb->weight;
    rhs = (uint64_t)running[b] * pa->weight;
  }
  if (lhs != rhs)
    return lhs < rhs;
  return strcmp(pool_names[a], pool_names[b]) < 0;
}

/* Inside a pool: TL_FIFO by priority, stage id, id; TL_FAIR by running attempts (as the round
 * began), stage id, stage attempt, id. */
static bool ts_before(tl_sched_mode mode, const mts *a, const mts *b) {
  if (mode == TL_FAIR) {
    if (a->nrunning != b->nrunning)
      return a->nrunning < b->nrunning;
    if (a->stage != b->stage)
      return a->stage < b->stage;
    if (a->sattempt != b->sattempt)
      return a->sattempt < b->sattempt;
  } else {
    if (a->prio != b->prio)
      return a->prio < b->prio;
    if (a->stage != b->stage)
      return a->stage < b->stage;
  }
  return a->id < b->id;
}

/* Launches the next attempt of index i of task set k on x (spec: a speculative copy). */
static void launch(tlo_run *r, uint32_t k, uint32_t i, mexec *x, bool spec, unsigned level) {
  mts *t = &r->ts[k];
  if (r->natt == r->attcap) {
    r->attcap = r->attcap ? 2 * r->attcap : 256;
    r->att = xrealloc(r->att, r->attcap * sizeof *r->att);
  }
  tl_tid tid = (tl_tid)r->natt + 1;
  matt *a = &r->att[r->natt++];
  memset(a, 0, sizeof *a);
  a->ts = k;
  a->index = i;
  a->attempt = t->idx[i].attempts++;
  a->ex = x;
  a->live = true;
  a->spec = spec;
  a->loc = (uint8_t)level;
  a->launched_at = r->now;
  if (t->has_loc)
    r->f_loc_launches[level]++;
  if (t->may_spec)
    t->idx[i].tried |= (uint8_t)(1u << x->host);
  if (t->idx[i].copies > 0) { /* the two copies know each other, to kill the loser */
    for (size_t j = 0; j < r->ninflight; j++) {
      matt *b = &r->att[r->inflight[j] - 1];
      if (b->ts == k && b->index == i) {
        a->sibling = r->inflight[j];
        b->sibling = tid;
      }
    }
  }
  t->idx[i].copies++;
  t->nrunning++;
  x->free_cores -= t->cpus;
  x->nrunning++;
  if (r->ninflight == r->inflightcap) {
    r->inflightcap = r->inflightcap ? 2 * r->inflightcap : 64;
    r->inflight = xrealloc(r->inflight, r->inflightcap * sizeof *r->inflight);
  }
  r->inflight[r->ninflight++] = tid;
  r->launched++;
  mevent *e = push_ev(r, EV_STARTED);
  e->tid = tid;
  e->ts = k;
  e->index = i;
  e->attempt = a->attempt;
  e->ex = x;
  e->spec = spec;
  e->loc = a->loc;
}

/* After a round (SPARK-22148, as docs/api.md says): one that launched anything clears every
 * unschedulable deadline; one that launched nothing looks at each active task set with counted
 * failures, in submission order: if the top of its pending stack may run on no live executor
 * (each excluded for the application, or for the task set, or for that index, itself or its
 * node), it gets a deadline if some live executor runs nothing (unless it has one), and is
 * aborted at once otherwise. Nothing happens while no executor is live. */
static void after_round(tlo_run *r, size_t launched, const uint32_t *order, size_t norder) {
  if (!xon(r))
    return;
  if (launched > 0) {
    clear_deadlines(r, TLO_XF_CLEARED_LAUNCH);
    return;
  }
  bool any = false, idle = false;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      const mexec *x = &r->ex[s][g];
      if (live_state(x->state)) {
        any = true;
        idle = idle || x->nrunning == 0;
      }
    }
  if (!any)
    return;
  uint32_t by_first[MAXTS];
  size_t nfirst = 0;
  for (size_t o = 0; o < norder; o++) {
    size_t pos = nfirst++;
    while (pos > 0 && r->ts[by_first[pos - 1]].xseq > r->ts[order[o]].xseq) {
      by_first[pos] = by_first[pos - 1];
      pos--;
    }
    by_first[pos] = order[o];
  }
  for (size_t o = 0; o < nfirst; o++) {
    uint32_t k = by_first[o];
    mts *t = &r->ts[k];
    if (t->released || t->zombie || t->nxf == 0 || t->npend == 0)
      continue;
    uint32_t i = t->pend[t->npend - 1];
    bool nowhere = true;
    for (unsigned s = 0; s < NSLOTS && nowhere; s++)
      for (uint32_t g = 0; g < r->ngen[s] && nowhere; g++) {
        const mexec *x = &r->ex[s][g];
        if (live_state(x->state) && !app_blocked(r, x) && !offer_blocked(r, t, x) &&
            !task_blocked(r, t, i, x))
          nowhere = false;
      }
    if (!nowhere)
      continue;
    if (idle) {
      if (!t->xdl) {
        t->xdl = true;
        t->xdl_at = add_sat(r->now, r->cfg.unschedulable_timeout_ns);
        t->xdl_seq = ++r->seq;
        t->xdl_task = i;
        r->f_x[TLO_XF_DEADLINES]++;
      }
    } else {
      t->xdl = false; /* the deadline it may have had ends with it */
      r->unsched_aborted++;
      r->f_x[TLO_XF_ABORT_NOW]++;
      abort_ts(r, k, ABORT_UNSCHEDULABLE, i, 0, t->xmsg);
      finish_if_drained(r, k);
    }
  }
}

/* One offer round. bad: one more offer with an empty id (TL_EINVAL). */
static void do_offer(tlo_run *r, mexec **xs, const uint32_t *cores, size_t n, size_t cap,
                     bool bad) {
  tl_offer *offers = xrealloc(NULL, (n + 1) * sizeof *offers);
  for (size_t i = 0; i < n; i++) {
    offers[i].executor_id = xs[i]->id;
    offers[i].cores = cores[i];
  }
  size_t noffers = n;
  if (bad) {
    offers[noffers].executor_id = "";
    offers[noffers].cores = 1;
    noffers++;
  }
  int want = bad ? TL_EINVAL : TL_OK;
  tl_tid first = (tl_tid)r->natt + 1;
  size_t npred = 0;
  if (want == TL_OK) {
    clock_read(r);
    /* Usable offers: ALIVE executors, capped by the ledger's free cores. */
    mexec **slot_ex = xrealloc(NULL, (n + 1) * sizeof *slot_ex);
    uint32_t *slot_cores = xrealloc(NULL, (n + 1) * sizeof *slot_cores);
    size_t nslots = 0, nnamed = 0; /* ALIVE executors named, excluded ones included */
    mexec **named = xrealloc(NULL, (n + 1) * sizeof *named);
    for (size_t i = 0; i < n; i++) {
      if (xs[i]->state != MX_ALIVE) {
        r->rejected_offers++;
        continue;
      }
      size_t q = 0;
      while (q < nnamed && named[q] != xs[i])
        q++;
      if (q == nnamed)
        named[nnamed++] = xs[i];
      /* Excluded for the application: filtered before the round (HealthTracker's filter). */
      if (app_blocked(r, xs[i])) {
        r->excluded_offers++;
        r->f_x[TLO_XF_EXCLUDED_OFFERS]++;
        continue;
      }
      /* Offers naming one executor twice share its slot, capped by its free cores. */
      size_t j = 0;
      while (j < nslots && slot_ex[j] != xs[i])
        j++;
      if (j < nslots) {
        uint32_t room = xs[i]->free_cores - slot_cores[j];
        slot_cores[j] += cores[i] < room ? cores[i] : room;
        continue;
      }
      slot_ex[nslots] = xs[i];
      slot_cores[nslots] = cores[i] < xs[i]->free_cores ? cores[i] : xs[i]->free_cores;
      nslots++;
    }
    /* The round's launch budget: min(cap, pending and speculatable tasks, offered cores). */
    uint64_t offered = 0;
    for (size_t i = 0; i < nslots; i++)
      offered += slot_cores[i];
    size_t todo = 0;
    for (uint32_t k = 0; k < r->nts; k++)
      if (!r->ts[k].released && !r->ts[k].zombie)
        todo += r->ts[k].npend + r->ts[k].nspecs;
    size_t most = cap < todo ? cap : todo;
    if (most > offered)
      most = (size_t)offered;
    uint64_t left = offered;
    /* A full round names every ALIVE executor (Spark's isAllFreeResources). */
    size_t nalive = 0;
    for (unsigned sl = 0; sl < NSLOTS; sl++)
      for (uint32_t g = 0; g < r->ngen[sl]; g++)
        nalive += r->ex[sl][g].state == MX_ALIVE;
    bool full = nnamed == nalive; /* executors excluded for the application included */
    free(named);
    /* The order is taken when the round begins: pools with something schedulable by Spark's
     * FAIR comparator (TL_FIFO: "default" only), and in each its task sets in its mode's order. */
    uint32_t order[MAXTS];
    size_t norder = 0;
    unsigned porder[NPOOLNAMES];
    size_t npools = 0;
    uint32_t prun[NPOOLNAMES] = {0};
    bool queued[NPOOLNAMES] = {false};
    for (uint32_t k = 0; k < r->nts; k++) {
      const mts *t = &r->ts[k];
      if (t->released)
        continue;
      prun[t->pool] += t->nrunning;
      if (schedulable(t))
        queued[t->pool] = true;
    }
    for (unsigned p = 0; p < NPOOLNAMES; p++) {
      if (!queued[p])
        continue;
      size_t pos = npools++;
      while (pos > 0 && pool_before(r, p, porder[pos - 1], prun)) {
        porder[pos] = porder[pos - 1];
        pos--;
      }
      porder[pos] = p;
    }
    r->f_fair_rounds += npools > 1;
    for (size_t pi = 0; pi < npools; pi++) {
      unsigned p = porder[pi];
      for (uint32_t k = 0; k < r->nts; k++) {
        const mts *t = &r->ts[k];
        if (t->released || t->pool != p || !schedulable(t))
          continue;
        size_t pos = norder++;
        while (pos > 0 && r->ts[order[pos - 1]].pool == p &&
               ts_before(r->pools[p].mode, t, &r->ts[order[pos - 1]])) {
          order[pos] = order[pos - 1];
          pos--;
        }
        order[pos] = k;
      }
    }
    for (size_t o = 0; o < norder && npred < most && left > 0; o++) {
      uint32_t k = order[o];
      mts *t = &r->ts[k];
      if (t->cpus > left)
        continue;
      if (t->barrier) { /* all of its tasks in this round, or none */
        uint64_t fit = 0;
        for (size_t i = 0; i < nslots; i++)
          fit += slot_cores[i] / t->cpus;
        if (t->npend != t->ntasks || most - npred < t->npend || fit < t->npend)
          continue;
      }
      /* Its turn: a pass per valid level, most local first (a task set without preferences
       * has TL_NO_PREF only), repeated while a pass launches something; one task per slot per
       * pass (Spark's resourceOffers over resourceOfferSingleTaskSet). */
      uint8_t levels = t->has_loc ? t->levels : (uint8_t)(1u << TL_NO_PREF);
      bool rejects = false;
      unsigned best = NLEVELS; /* the most local level launched */
      for (unsigned l = TL_PROCESS_LOCAL; l <= TL_ANY; l++) {
        if (!(levels & (1u << l)))
          continue;
        for (;;) {
          size_t launched = 0;
          for (size_t i = 0; i < nslots && npred < most && t->npend + t->nspecs > 0; i++) {
            mexec *x = slot_ex[i];
            if (slot_cores[i] < t->cpus)
              continue;
            /* Excluded for the whole task set: no task, and no delay-scheduling reject (Spark's
             * resourceOffer with offerExcluded). */
            if (offer_blocked(r, t, x)) {
              r->f_x[TLO_XF_BLOCKED]++;
              continue;
            }
            /* How far delay scheduling lets it go, never past the pass's level; not asked at
             * the NO_PREF pass, nor by a barrier task set, which never waits. */
            unsigned allowed = l;
            if (t->has_loc && l != TL_NO_PREF && !t->barrier) {
              unsigned now_at = allowed_level(r, t);
              if (now_at < allowed)
                allowed = now_at;
            }
            /* Regular pending tasks first, then speculative copies at the most local level
             * allowed, never on a host an attempt of the index was launched on. */
            unsigned level = TL_NO_PREF;
            int index = -1;
            bool spec = false;
            if (!t->has_loc) {
              for (uint32_t p = t->npend; p-- > 0 && index < 0;) {
                if (task_blocked(r, t, t->pend[p], x))
                  r->f_x[TLO_XF_SKIPS]++;
                else
                  index = (int)t->pend[p];
              }
            } else {
              index = take_pending(r, t, x, allowed, &level);
            }
            if (index >= 0) {
              pend_remove(t, (uint32_t)index);
            } else {
              unsigned best_l = NLEVELS;
              for (uint32_t s_at = t->nspecs; s_at-- > 0;) {
                uint32_t i2 = t->specs[s_at];
                if (t->idx[i2].tried & (1u << x->host))
                  continue;
                if (task_blocked(r, t, i2, x)) {
                  r->f_x[TLO_XF_SPEC_SKIPS]++;
                  continue;
                }
                unsigned l2 = locality_on(r, t, i2, x);
                if (l2 <= allowed && l2 < best_l) {
                  best_l = l2;
                  index = (int)i2;
                }
              }
              if (index < 0) {
                if (l == TL_ANY) /* an offer refused while something waits */
                  rejects = true;
                continue;
              }
              spec_remove(t, (uint32_t)index);
              spec = true;
              level = best_l;
            }
            launch(r, k, (uint32_t)index, x, spec, level);
            if (level < best)
              best = level;
            r->f_spec_launches += spec;
            r->f_barrier_launches += t->barrier && t->npend == 0 && !spec;
            slot_cores[i] -= t->cpus;
            left -= t->cpus;
            npred++;
            launched++;
          }
          if (launched == 0 || t->npend + t->nspecs == 0 || npred == most || left < t->cpus)
            break;
        }
        if (t->npend + t->nspecs == 0 || npred == most || left < t->cpus)
          break;
      }
      /* The timer rule (SPARK-18886): a turn with a reject stops partial rounds from resetting;
       * one that launched without a reject resets the timer to the most local level launched,
       * if the round is full or nothing was rejected since the last reset. */
      if (t->has_loc && !t->barrier) {
        if (rejects) {
          t->no_rejects = false;
        } else if (best < NLEVELS && (full || t->no_rejects)) {
          t->reset = r->now;
          t->level = (uint8_t)next_level(t->levels, best);
          t->no_rejects = true;
          r->f_resets++;
          trace(r, 2, "  task set %" PRIu64 " timer reset at %s", t->id,
                tl_locality_name((tl_locality)t->level));
        }
      }
    }
    free(slot_ex);
    free(slot_cores);
    after_round(r, npred, order, norder);
  }
  char d[200];
  int w = snprintf(d, sizeof d, "offer cap=%zu", cap);
  for (size_t i = 0; i < noffers && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, " %s:%u",
                  offers[i].executor_id[0] ? offers[i].executor_id : "\"\"", offers[i].cores);
  tl_launch out[MAXCAP];
  size_t nout = 99;
  note_call(r, d);
  int rc = tl_resource_offers(r->s, offers, noffers, out, cap, &nout);
  free(offers);
  expect_rc(r, d, rc, want);
  if (rc != TL_OK) {
    if (nout != 0)
      fail(r, "tl_resource_offers failed with *nout %zu, not 0", nout);
    return;
  }
  if (nout != npred) {
    fail(r, "tl_resource_offers launched %zu, the model says %zu", nout, npred);
    return;
  }
  for (size_t k = 0; k < nout && !r->failed; k++) {
    const matt *a = &r->att[first + k - 1];
    const mts *t = &r->ts[a->ts];
    char name[24];
    snprintf(name, sizeof name, "%zu", k);
#define CMP_L(field, value) CMP_OF(r, "launch", name, #field, out[k].field, value)
    CMP_L(tid, first + k);
    CMP_L(taskset, t->id);
    CMP_L(stage_id, t->stage);
    CMP_L(stage_attempt, t->sattempt);
    CMP_L(index, a->index);
    CMP_L(attempt, a->attempt);
    CMP_L(cpus, t->cpus);
    CMP_L(locality, a->loc);
    CMP_L(speculative, a->spec);
#undef CMP_L
    if (strcmp(out[k].executor_id, a->ex->id) != 0)
      fail(r, "launch %zu on %s, the model says %s", k, out[k].executor_id, a->ex->id);
    if (out[k].payload != t)
      fail(r, "launch %zu has another task set's payload", k);
  }
}

/* Every executor record the run has used that is ALIVE, offered `cores` each. */
static void do_offer_alive(tlo_run *r, uint32_t cores, size_t cap, bool all) {
  mexec *xs[NSLOTS * MAXGEN];
  uint32_t cs[NSLOTS * MAXGEN];
  size_t n = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      mexec *x = &r->ex[s][g];
      if (all || x->state == MX_ALIVE) {
        xs[n] = x;
        cs[n] = cores;
        n++;
      }
    }
  do_offer(r, xs, cs, n, cap, false);
}

/* result_size choices of TLO_UPDATE (d): 0 the result mode's own (8 per mode, 0 for mode 3). */
static const size_t result_sizes[8] = {0, 0, 1, 7, 13, 40, 1000, SIZE_MAX};

static void do_update(tlo_run *r, mexec *x, tl_tid tid, unsigned state, unsigned failure,
                      const char *msg, unsigned resmode, unsigned sizesel) {
  tlo_res *res = resmode != 0 ? res_new(r) : NULL;
  void (*rfree)(void *) = resmode == 2 ? NULL : res_free;
  size_t rsize = sizesel % 8 != 0 ? result_sizes[sizesel % 8] : resmode == 3 ? 0 : 8 * resmode;
  int want;
  matt *a = NULL;
  if (state > TL_TASK_KILLED || (res != NULL && state != TL_TASK_FINISHED) ||
      (state == TL_TASK_FAILED && (failure == TL_END_SUCCESS || failure == TL_END_EXECUTOR_LOST ||
                                   failure > TL_END_RESULT_LOST))) {
    want = TL_EINVAL;
  } else {
    /* A success's run time is recorded, a failure's time starts its expiry: the update reads
     * the clock. */
    if (r->cfg.speculation || xon(r))
      clock_read(r);
    if (x->state == MX_NONE) {
      want = TL_ENOENT;
    } else if (x->state == MX_REMOVED) {
      want = TL_EGONE;
    } else if ((a = indexed(r, tid)) == NULL) {
      want = TL_ESTALE;
      r->stale++;
    } else if (a->ex != x) {
      want = TL_EOWNER;
      r->rejected_updates++;
    } else {
      want = TL_OK;
    }
  }
  if (want == TL_OK) {
    r->f_late_reports += a->killed_by_other;
    if (state == TL_TASK_RUNNING) {
      a->running = true;
    } else {
      mts *t = &r->ts[a->ts];
      const mindex *ix = &t->idx[a->index];
      mend m = {TL_END_SUCCESS, false, msg, NULL, 0, NULL, NULL, false};
      if (state == TL_TASK_FINISHED) {
        /* What the update gave is passed on (the result itself only with a success). */
        m.result_size = rsize;
        m.result_free = rfree;
        if (a->killed_by_other && ix->done) {
          /* Another copy won: the result is not taken, and counts for nothing. */
          m.kind = TL_END_KILLED;
          m.msg = "Finish but did not commit: another attempt succeeded.";
          r->killed++;
        } else {
          /* Every result counts toward max_result_bytes, dropped ones too. */
          t->nresults++;
          t->result_bytes =
              rsize > UINT64_MAX - t->result_bytes ? UINT64_MAX : t->result_bytes + rsize;
          if (!t->shuffle && r->cfg.max_result_bytes != 0 &&
              t->result_bytes > r->cfg.max_result_bytes) {
            m.kind = TL_END_RESULT_TOO_LARGE;
            r->failed_count++;
          } else {
            m.kind = TL_END_SUCCESS;
            r->succeeded++;
            /* The output of an active shuffle-map task set stays on its executor, unless this
             * success completes the task set. */
            m.output = t->shuffle && !t->zombie && !ix->done && t->nsucceeded + 1 < t->ntasks;
          }
        }
        if (m.kind == TL_END_SUCCESS)
          m.result = res;
        else
          m.dropped = res;
      } else if (state == TL_TASK_KILLED) {
        m.kind = TL_END_KILLED;
        r->killed++;
      } else {
        m.kind = (tl_end_kind)failure;
        m.counts = m.kind == TL_END_EXCEPTION || m.kind == TL_END_RESULT_LOST;
        if (m.kind == TL_END_KILLED)
          r->killed++;
        else
          r->failed_count++;
      }
      x->nrunning--;
      x->free_cores += t->cpus;
      attempt_ended(r, tid, &m);
      push_revive_if_wanted(r);
    }
  }
  char d[176];
  snprintf(d, sizeof d, "update %s tid=%" PRIu64 " %s%s%s result=%u size=%zu msg=%.12s", x->id, tid,
           tl_task_state_name((tl_task_state)state), state == TL_TASK_FAILED ? "/" : "",
           state == TL_TASK_FAILED ? tl_end_kind_name((tl_end_kind)failure) : "", resmode, rsize,
           msg ? msg : "(null)");
  tl_update u = {(tl_task_state)state, (tl_end_kind)failure, msg, res, rsize, rfree};
  note_call(r, d);
  int rc = tl_status_update(r->s, x->id, tid, &u);
  if (rc != TL_OK && res != NULL)
    res_free(res); /* on error the result is still ours */
  expect_rc(r, d, rc, want);
}

/* Whether task set t is looked at, and the run time past which its attempts are slow: only
 * active task sets that may speculate and have more than one task, once at least
 * max(floor(quantile x ntasks), 1) run times are recorded; then slow past
 * max(multiplier x the median of those run times, min runtime). */
static bool slow_after(const tlo_run *r, const mts *t, uint64_t *threshold) {
  if (t->released || t->zombie || !t->may_spec || t->ntasks < 2)
    return false;
  double wanted = r->cfg.speculation_quantile * (double)t->ntasks;
  uint64_t min_finished = wanted < 1.0 ? 1 : (uint64_t)wanted;
  if (t->ndur < min_finished)
    return false;
  uint64_t median = median_of(t);
  /* Exactly: a run of n ns is longer than multiplier x median when n > floor(that); past 2^64
   * no run is. The configured multipliers are halves (k / 2). */
  uint64_t k = (uint32_t)(2 * r->cfg.speculation_multiplier), half = median / 2,
           odd = (median % 2) * k / 2;
  /* floor(k x median / 2) = k x floor(median / 2) + floor(k x (median mod 2) / 2) */
  *threshold = half != 0 && k > (UINT64_MAX - odd) / half ? UINT64_MAX : k * half + odd;
  if (*threshold < r->cfg.speculation_min_runtime_ns)
    *threshold = r->cfg.speculation_min_runtime_ns;
  return true;
}

/* tl_tick's speculation check, every speculation_interval_ns: each attempt that has run longer
 * than its task set's threshold, alone in flight for its index (which is neither done nor
 * speculatable already) and not frozen, makes its index speculatable; task sets in submission
 * order, attempts in launch order. */
static void spec_check(tlo_run *r) {
  if (!r->cfg.speculation || r->now < r->next_spec || r->spec_never)
    return;
  for (uint32_t k = 0; k < r->nts; k++) {
    mts *t = &r->ts[k];
    uint64_t threshold;
    if (!slow_after(r, t, &threshold))
      continue;
    trace(r, 2, "  speculation check: task set %" PRIu64 " slow past %" PRIu64 " ns (%u run times)",
          t->id, threshold, t->ndur);
    for (size_t j = 0; j < r->ninflight; j++) {
      const matt *a = &r->att[r->inflight[j] - 1];
      if (a->ts != k)
        continue;
      const mindex *ix = &t->idx[a->index];
      if (a->frozen || ix->done || ix->spec || ix->copies != 1 || r->now <= a->launched_at ||
          r->now - a->launched_at <= threshold)
        continue;
      spec_push(t, a->index);
      r->f_spec_submitted++;
      mevent *e = push_ev(r, EV_SPEC);
      e->ts = k;
      e->index = a->index;
      r->revive_wanted = true;
    }
  }
  push_revive_if_wanted(r);
  /* At or past the end of time the next check never comes (a deadline saturated there never
   * does). */
  r->spec_never = r->now >= UINT64_MAX - r->cfg.speculation_interval_ns;
  r->next_spec = r->spec_never ? UINT64_MAX : r->now + r->cfg.speculation_interval_ns;
}

static void do_tick(tlo_run *r) {
  clock_read(r);
  if (r->cfg.heartbeat_timeout_ns != 0) {
    for (;;) {
      mexec *head = NULL;
      for (unsigned s = 0; s < NSLOTS; s++)
        for (uint32_t g = 0; g < r->ngen[s]; g++) {
          mexec *x = &r->ex[s][g];
          if (live_state(x->state) && (head == NULL || x->hb_seq < head->hb_seq))
            head = x;
        }
      if (head == NULL || !due_at(add_sat(head->hb_when, r->cfg.heartbeat_timeout_ns), r->now))
        break;
      lose(r, head, TL_LOSS_HEARTBEAT_TIMEOUT, true, 0, "Executor heartbeat timed out.");
    }
  }
  for (;;) {
    mexec *head = NULL;
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->state == MX_PENDING && x->pend_timed &&
            (head == NULL || x->pend_seq < head->pend_seq))
          head = x;
      }
    if (head == NULL || !due_at(head->pend_deadline, r->now))
      break;
    remove_executor(r, head, TL_LOSS_PENDING_TIMEOUT, true,
                    "No loss reason arrived within the pending-loss timeout.");
    r->pending_loss_timeouts++;
  }
  if (r->cfg.tombstone_ttl_ns != 0) {
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->state == MX_REMOVED &&
            due_at(add_sat(x->tomb_when, r->cfg.tombstone_ttl_ns), r->now)) {
          x->state = MX_NONE;
          x->none_checked = false;
        }
      }
  }
  spec_check(r);
  /* Delay scheduling: one revive_offers when a wait ran out since the last tick. */
  bool fired = false;
  for (uint32_t k = 0; k < r->nts; k++)
    (void)wait_end(r, &r->ts[k], r->loc_ticked, &fired);
  if (fired) {
    r->f_loc_revives++;
    push_ev(r, EV_REVIVE);
  }
  r->loc_ticked = r->now;
  /* The library takes each part's next deadline as it goes, the waits before the exclusion
   * part's aborts: from a callback (no recomputation after delivery) the answer may still
   * count the wait of a task set this tick aborted. */
  uint64_t loc_before = loc_next_of(r);
  if (xon(r)) {
    /* Application-level exclusions whose time came end; then unschedulable deadlines that
     * came abort their task sets, in the order they were set. */
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->xapp && due_at(x->xapp_expiry, r->now)) {
          x->xapp = false;
          r->f_x[TLO_XF_EXPIRED]++;
        }
      }
    for (unsigned h = 0; h < NHOSTS; h++)
      if (r->node_excl[h] && due_at(r->node_expiry[h], r->now)) {
        r->node_excl[h] = false;
        r->f_x[TLO_XF_EXPIRED]++;
      }
    for (;;) {
      int due = -1;
      for (uint32_t k = 0; k < r->nts; k++)
        if (r->ts[k].xdl && due_at(r->ts[k].xdl_at, r->now) &&
            (due < 0 || r->ts[k].xdl_seq < r->ts[due].xdl_seq))
          due = (int)k;
      if (due < 0)
        break;
      mts *t = &r->ts[due];
      t->xdl = false;
      if (t->zombie) /* it became zombie while waiting: there is nothing left to abort */
        continue;
      r->unsched_aborted++;
      r->f_x[TLO_XF_ABORT_TICK]++;
      abort_ts(r, (uint32_t)due, ABORT_UNSCHEDULABLE, t->xdl_task, 0, t->xmsg);
      finish_if_drained(r, (uint32_t)due);
    }
  }
  bool nested = r->in_cb != 0;
  uint64_t want_next = next_deadline(r);
  if (loc_before < want_next)
    want_next = loc_before;
  char d[80];
  snprintf(d, sizeof d, "tick at %" PRIu64 " ms", r->now / 1000000);
  note_call(r, d);
  uint64_t next = tl_tick(r->s);
  expect_rc(r, d, TL_OK, TL_OK);
  /* A top-level tick answers after its events are delivered, so re-entrant calls count (unless
   * something was due again already: then 0 stands). */
  if (!nested && want_next != 0)
    want_next = next_deadline(r);
  if (next != want_next)
    fail(r, "tl_tick returned %" PRIu64 ", the model says %" PRIu64, next, want_next);
}

/* Inspection of one executor, one task set and its explanation. */
static void do_inspect(tlo_run *r, mexec *x, uint8_t tsref, uint8_t lensel) {
  static const size_t lens[4] = {1, 8, 64, 4096};
  snprintf(r->desc, sizeof r->desc, "inspect %s", x->id);
  cmp_exec(r, x);
  tl_taskset_id id;
  int k = -1;
  unsigned back = tsref % 16;
  if (back == 15 || back >= r->nts)
    id = tsref & 16 ? 0 : r->next_ts_id;
  else
    id = r->ts[(k = (int)(r->nts - 1 - back))].id;
  if (k >= 0)
    cmp_ts(r, (uint32_t)k);
  size_t len = lens[lensel % 4];
  char *buf = xrealloc(NULL, len);
  char d[64];
  snprintf(d, sizeof d, "explain %" PRIu64 " len=%zu", id, len);
  note_call(r, d);
  int rc = tl_explain_taskset(r->s, id, buf, len);
  bool exists = k >= 0 && !r->ts[k].released;
  expect_rc(r, d, rc, exists ? TL_OK : TL_ENOENT);
  if (rc == TL_OK && exists) {
    const mts *t = &r->ts[k];
    char line[256];
    snprintf(line, sizeof line,
             "task set %" PRIu64 " (stage %u attempt %u, %u tasks): %s%s; %u running (%u frozen), "
             "%u pending, %u succeeded\n",
             t->id, t->stage, t->sattempt, t->ntasks, t->zombie ? "zombie" : "active",
             t->failed ? ", failed" : "", t->nrunning, t->nfrozen, t->zombie ? 0 : t->npend,
             t->nsucceeded);
    /* The text always has more than its first line, so a buffer shorter than that line plus
     * the cut marker holds a cut text: a prefix, then "...\n" when there is room for it. */
    size_t blen = strnlen(buf, len);
    size_t llen = strlen(line);
    if (blen >= len)
      fail(r, "tl_explain_taskset wrote %zu bytes without a NUL into %zu", blen, len);
    else if (len >= llen + 5 && strncmp(buf, line, llen) != 0)
      fail(r, "tl_explain_taskset begins \"%.*s\", the model says \"%s\"", (int)llen, buf, line);
    else if (len >= 5 && len < llen + 5 &&
             (blen != len - 1 || strcmp(buf + len - 5, "...\n") != 0 ||
              strncmp(buf, line, len - 5) != 0))
      fail(r, "tl_explain_taskset cut to %zu is \"%s\"", len, buf);
    else if (len < 5 && (blen != len - 1 || strncmp(buf, line, blen) != 0))
      fail(r, "tl_explain_taskset cut to %zu is \"%s\"", len, buf);
  }
  free(buf);
}

/* ---------------------------------------------------------------------------------------------
 * Callbacks: compare with the expected event, then act re-entrantly as the operation asks.
 * ------------------------------------------------------------------------------------------- */

static tlo_run *cb_enter(void *ud) {
  tlo_run *r = ud;
  if (r->failed)
    return NULL;
  r->events++;
  r->in_cb++;
  return r;
}

/* The re-entrant actions any callback may take, once per operation. */
static void cb_leave(tlo_run *r) {
  if (!r->failed && !r->closing && !r->re_first_done && (r->reent & (TLO_RE_FREE | TLO_RE_TICK))) {
    r->re_first_done = true;
    if (r->reent & TLO_RE_FREE) {
      note_call(r, "scheduler_free");
      int rc = tl_scheduler_free(r->s);
      expect_rc(r, "scheduler_free", rc, TL_EBUSY);
    }
    if ((r->reent & TLO_RE_TICK) && !r->failed)
      do_tick(r);
  }
  r->in_cb--;
}

static void cmp_str(tlo_run *r, const char *what, const char *got, const char *want) {
  if ((got == NULL) != (want == NULL) || (got != NULL && strcmp(got, want) != 0))
    fail(r, "%s is \"%.60s\", the model says \"%.60s\"", what, got ? got : "(null)",
         want ? want : "(null)");
}

static void cmp_task(tlo_run *r, const mevent *e, const tl_task_info *t) {
  const mts *ts = &r->ts[e->ts];
  CMP(r, "task.tid", t->tid, e->tid);
  CMP(r, "task.taskset", t->taskset, ts->id);
  CMP(r, "task.stage_id", t->stage_id, ts->stage);
  CMP(r, "task.stage_attempt", t->stage_attempt, ts->sattempt);
  CMP(r, "task.index", t->index, e->index);
  CMP(r, "task.attempt", t->attempt, e->attempt);
  CMP(r, "task.locality", t->locality, e->loc);
  CMP(r, "task.speculative", t->speculative, e->spec);
  cmp_str(r, "task.executor_id", t->executor_id, e->ex->id);
  cmp_str(r, "task.host", t->host, host_names[e->ex->host]);
  if (t->payload != ts)
    fail(r, "task.payload is not its task set's");
}

static void cb_task_started(void *ud, const tl_task_info *t) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_STARTED);
  if (e != NULL) {
    cmp_task(r, e, t);
    cb_check(r, (int)e->ts, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_RUNNING))
    do_update(r, exec_by_id(r, t->executor_id), t->tid, TL_TASK_RUNNING, 0, NULL, 0, 0);
  if (!r->failed && (r->reent & TLO_RE_FINISH) && !r->re_finish_done) {
    r->re_finish_done = true;
    do_update(r, exec_by_id(r, t->executor_id), t->tid, TL_TASK_FINISHED, 0, "re-entrant", 1,
              r->re_arg);
  }
  cb_leave(r);
}

static void cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_ENDED);
  if (e != NULL) {
    cmp_task(r, e, t);
    CMP(r, "end.kind", end->kind, e->kind);
    CMP(r, "end.counts_toward_failures", end->counts_toward_failures, e->counts);
    cmp_str(r, "end.message", end->message, e->text);
    CMP(r, "end.result_size", end->result_size, e->result_size);
    if (end->result != e->result || end->result_free != e->result_free) {
      fail(r, "end.result %p (free %s) is not the update's %p (free %s)", end->result,
           end->result_free ? "set" : "NULL", e->result, e->result_free ? "set" : "NULL");
    } else if (end->result != NULL) {
      tlo_res *res = end->result;
      if (res->magic != RES_MAGIC)
        fail(r, "end.result is not a result of this run");
      else if (end->result_free != NULL)
        end->result_free(end->result);
      else
        res_free(res);
    }
    if (e->dropped != NULL) {
      /* Withheld: the library has freed it with result_free; without one, nobody can (the
       * callee gets NULL), so the run counts it freed here. */
      tlo_res *res = e->dropped;
      if (e->result_free == NULL)
        res_free(res);
      else if (res->frees != 1)
        fail(r, "a withheld result was freed %u times before task_ended", res->frees);
    }
    cb_check(r, (int)e->ts, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_POKE) && !r->re_lose_done) {
    r->re_lose_done = true;
    mexec *x = exec_by_id(r, t->executor_id);
    if (x != NULL)
      do_lose(r, x, TL_LOSS_PROCESS_LOST, true, 1, "lost re-entrantly");
  }
  if (!r->failed && (r->reent & TLO_RE_SUBMIT) && !r->re_submit_done) {
    r->re_submit_done = true;
    do_submit(r, r->re_arg % NSTAGES, -1, (r->re_arg >> 3) & 3, 1 + (r->re_arg >> 5), 0, 0,
              (r->re_arg & 4) != 0, false, NULL);
  }
  cb_leave(r);
}

static void cb_speculative(void *ud, const tl_taskset_info *ts, uint32_t index) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_SPEC);
  if (e != NULL) {
    const mts *t = &r->ts[e->ts];
    CMP(r, "speculative.id", ts->id, t->id);
    CMP(r, "speculative.stage_id", ts->stage_id, t->stage);
    CMP(r, "speculative.stage_attempt", ts->stage_attempt, t->sattempt);
    CMP(r, "speculative.ntasks", ts->ntasks, t->ntasks);
    CMP(r, "speculative.index", index, e->index);
    cb_check(r, (int)e->ts, NULL);
  }
  cb_leave(r);
}

static void cb_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_FAILED);
  if (e != NULL) {
    const mts *t = &r->ts[e->ts];
    CMP(r, "failed.id", ts->id, t->id);
    CMP(r, "failed.stage_id", ts->stage_id, t->stage);
    CMP(r, "failed.stage_attempt", ts->stage_attempt, t->sattempt);
    CMP(r, "failed.ntasks", ts->ntasks, t->ntasks);
    cmp_str(r, "failed.reason", reason, e->text);
    cb_check(r, (int)e->ts, NULL);
  }
  cb_leave(r);
}

/* Inside a taskset_released that tl_scheduler_free makes: inspection works, every mutating call
 * is TL_EBUSY (freeing again too, and whatever its arguments name) and tl_tick answers
 * TL_TICK_NEVER. */
static void while_closing(tlo_run *r) {
  check_ledger(r);
  tl_taskset_desc desc = {.stage_id = 0, .stage_attempt = 1000, .ntasks = 1};
  note_call(r, "submit while freeing");
  expect_rc(r, "submit while freeing", tl_submit(r->s, &desc, NULL), TL_EBUSY);
  tl_offer offer = {r->ex[0][0].id, 1};
  tl_launch out[1];
  size_t nout = 99;
  note_call(r, "offer while freeing");
  expect_rc(r, "offer while freeing", tl_resource_offers(r->s, &offer, 1, out, 1, &nout), TL_EBUSY);
  if (nout != 0)
    fail(r, "tl_resource_offers while freeing set *nout to %zu", nout);
  const char *id = r->ex[0][0].id;
  tl_executor_desc ed = {"busy", "h0", NULL, 1};
  tl_loss_reason why = {TL_LOSS_KILLED, false, 0, NULL};
  tl_update u = {TL_TASK_RUNNING, TL_END_SUCCESS, NULL, NULL, 0, NULL};
  note_call(r, "every mutating call while freeing");
  expect_rc(r, "add while freeing", tl_executor_add(r->s, &ed), TL_EBUSY);
  expect_rc(r, "lose while freeing", tl_executor_lost(r->s, id, &why), TL_EBUSY);
  expect_rc(r, "heartbeat while freeing", tl_executor_heartbeat(r->s, id), TL_EBUSY);
  expect_rc(r, "decommission while freeing", tl_executor_decommission(r->s, id, NULL), TL_EBUSY);
  expect_rc(r, "kill_task while freeing", tl_kill_task(r->s, 1, false, NULL), TL_EBUSY);
  expect_rc(r, "kill_stage while freeing", tl_kill_stage(r->s, 0, false, NULL), TL_EBUSY);
  expect_rc(r, "cancel_stage while freeing", tl_cancel_stage(r->s, 0, NULL), TL_EBUSY);
  expect_rc(r, "partition while freeing", tl_partition_completed(r->s, 0, 0), TL_EBUSY);
  expect_rc(r, "pool_add while freeing", tl_pool_add(r->s, "busy", TL_FAIR, 1, 0), TL_EBUSY);
  expect_rc(r, "update while freeing", tl_status_update(r->s, id, 1, &u), TL_EBUSY);
  note_call(r, "scheduler_free while freeing");
  expect_rc(r, "scheduler_free while freeing", tl_scheduler_free(r->s), TL_EBUSY);
  uint64_t next = tl_tick(r->s);
  if (next != TL_TICK_NEVER)
    fail(r, "tl_tick while freeing returned %" PRIu64 ", not TL_TICK_NEVER", next);
}

static void cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_RELEASED);
  int k = ts_of_payload(r, payload);
  if (k < 0) {
    fail(r, "taskset_released of %" PRIu64 " hands back a payload that is no task set's", ts->id);
  } else if (++r->ts[k].released_seen > 1) {
    fail(r, "task set %" PRIu64 " released a second time", r->ts[k].id);
  } else if (e != NULL) {
    const mts *t = &r->ts[e->ts];
    if (k != (int)e->ts)
      fail(r, "taskset_released of %" PRIu64 ", the model says %" PRIu64, r->ts[k].id, t->id);
    CMP(r, "released.id", ts->id, t->id);
    CMP(r, "released.stage_id", ts->stage_id, t->stage);
    CMP(r, "released.stage_attempt", ts->stage_attempt, t->sattempt);
    CMP(r, "released.ntasks", ts->ntasks, t->ntasks);
    cb_check(r, (int)e->ts, NULL);
  }
  if (!r->failed && r->closing)
    while_closing(r);
  cb_leave(r);
}

static void cb_executor_added(void *ud, const char *id, const char *host) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_ADDED);
  if (e != NULL) {
    cmp_str(r, "added.executor_id", id, e->ex->id);
    cmp_str(r, "added.host", host, host_names[e->ex->host]);
    cb_check(r, -1, e->ex);
  }
  cb_leave(r);
}

static void cb_executor_lost(void *ud, const char *id, const tl_loss_reason *why) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_LOST);
  if (e != NULL) {
    cmp_str(r, "lost.executor_id", id, e->ex->id);
    CMP(r, "lost.kind", why->kind, e->loss);
    CMP(r, "lost.caused_by_app", why->caused_by_app, e->app);
    CMP(r, "lost.exit_code", why->exit_code, e->exit_code);
    cmp_str(r, "lost.message", why->message, e->text);
    cb_check(r, -1, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_POKE)) {
    mexec *x = exec_by_id(r, id);
    if (x != NULL)
      do_heartbeat(r, x);
  }
  cb_leave(r);
}

static void cb_revive(void *ud) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  if (pop_ev(r, EV_REVIVE) != NULL)
    cb_check(r, -1, NULL);
  if (!r->failed && (r->reent & TLO_RE_OFFER) && !r->re_offer_done) {
    r->re_offer_done = true;
    do_offer_alive(r, 64, 16, false);
  }
  cb_leave(r);
}

static void cb_kill(void *ud, tl_tid tid, const char *id, bool interrupt, const char *reason) {
  tlo_run *r = cb_enter(ud);
  if (r == NULL)
    return;
  mevent *e = pop_ev(r, EV_KILL);
  if (e != NULL) {
    CMP(r, "kill.tid", tid, e->tid);
    cmp_str(r, "kill.executor_id", id, e->ex->id);
    CMP(r, "kill.interrupt", interrupt, e->interrupt);
    cmp_str(r, "kill.reason", reason, e->text);
    cb_check(r, -1, e->ex);
  }
  if (!r->failed && (r->reent & TLO_RE_KILLED)) {
    mexec *x = exec_by_id(r, id);
    if (x != NULL)
      do_update(r, x, tid, TL_TASK_KILLED, 0, "killed as asked", 0, 0);
  }
  cb_leave(r);
}

/* ---------------------------------------------------------------------------------------------
 * Resolving an operation's bytes against the model, and applying it.
 * ------------------------------------------------------------------------------------------- */

static mexec *resolve_exec(tlo_run *r, uint8_t v) {
  unsigned slot = v & 7, back = (v >> 3) & 3;
  if (back == 3 || back >= r->ngen[slot])
    return &r->phantom[slot];
  return &r->ex[slot][r->ngen[slot] - 1 - back];
}

static tl_tid resolve_tid(tlo_run *r, uint8_t sel) {
  tl_tid max = (tl_tid)r->natt;
  if (sel < 160) {
    int frozen = sel >= 128;
    size_t n = 0;
    for (size_t i = 0; i < r->ninflight; i++)
      n += r->att[r->inflight[i] - 1].frozen == (frozen != 0);
    if (n > 0) {
      /* Spread over all of them, however many there are. */
      size_t want = frozen ? (sel - 128u) % n : (size_t)sel * n / 128;
      for (size_t i = 0; i < r->ninflight; i++)
        if (r->att[r->inflight[i] - 1].frozen == (frozen != 0) && want-- == 0)
          return r->inflight[i];
    }
    if (!frozen || max == 0)
      return max + 1; /* nothing of that kind: a tid never launched */
  }
  if (sel < 224)
    return max == 0 ? 1 : max - sel % max;
  return (sel & 1) ? 0 : max + 1 + ((sel - 224u) >> 1);
}

/* A submission's preferences, from bits its other fields leave unused: flags bits 4-7 choose a
 * pattern (0: tasks NULL, as before preferences existed), and with the high bits of a, b and d
 * seed the choices, resolved against the model's executors now. Executors are chosen among
 * each slot's latest id, the next one (not registered yet), an older one (dead, or evicted) and
 * "p<slot>" (never registered); hosts mostly the one the executor was registered on. */
static bool resolve_prefs(tlo_run *r, const tlo_op *op, mprefs *out) {
  unsigned pattern = op->flags >> 4;
  if (pattern == 0)
    return false;
  memset(out, 0, sizeof *out);
  uint64_t seed = pattern | (uint64_t)(op->a >> 3) << 4 | (uint64_t)(op->b >> 2) << 9 |
                  (uint64_t)(op->d >> 3) << 15;
  uint64_t x = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
  /* pattern bits: 1 every task prefers something; 2 executors and hosts from a narrow set (more
   * contention, duplicates); 4 and 8 how many preferences a task has. */
  bool all = pattern & 1, narrow = pattern & 2;
  unsigned most = 1 + ((pattern >> 2) & 3); /* 1-4 */
  for (uint32_t i = 0; i < MAXTASKS; i++) {
    uint64_t v = splitmix64(&x);
    if (!all && v % 4 == 0)
      continue; /* no preference */
    unsigned n = 1 + (unsigned)((v >> 2) % most);
    for (unsigned j = 0; j < n; j++) {
      uint64_t c = splitmix64(&x);
      mpref *pf = &out->p[i][j];
      unsigned slot = (unsigned)(c % (narrow ? 3 : NSLOTS));
      unsigned which = (unsigned)((c >> 8) % 8);
      mexec *ex = NULL;
      if (which < 3) {
        pf->host = (unsigned)((c >> 16) % (narrow ? 2 : NHOSTS));
      } else {
        uint32_t ng = r->ngen[slot];
        if (which < 6)
          ex = &r->ex[slot][ng > 0 ? ng - 1 : 0]; /* the latest */
        else if (which == 6)
          ex = ng < MAXGEN ? &r->ex[slot][ng] : &r->phantom[slot]; /* not registered yet */
        else
          ex = ng > 1 && (c >> 24) % 2 ? &r->ex[slot][(c >> 32) % (ng - 1)] : &r->phantom[slot];
        bool registered = ex->state != MX_NONE || ex->cores != 0;
        pf->host = registered && (c >> 40) % 4 != 0 ? ex->host : (unsigned)((c >> 48) % NHOSTS);
      }
      pf->ex = ex;
    }
    out->n[i] = (uint8_t)n;
  }
  /* One submission with preferences in 64 is invalid: an empty host name. */
  out->bad = (seed >> 4) % 64 == 63 && out->n[0] > 0;
  return true;
}

static void apply(tlo_run *r, const tlo_op *op) {
  switch ((tlo_kind)(op->kind % TLO_NKINDS)) {
  case TLO_ADD: {
    unsigned slot = op->exec & 7;
    mexec *x = resolve_exec(r, op->exec);
    bool fresh = (op->flags & 1) || x == &r->phantom[slot];
    if (fresh) {
      if (r->ngen[slot] == MAXGEN)
        return;
      x = &r->ex[slot][r->ngen[slot]];
    }
    static const uint32_t cores[8] = {0, 1, 2, 3, 4, 2, 4, 64};
    unsigned host = op->a % NHOSTS;
    do_add(r, x, slot, fresh, host, op->b % 5, cores[op->c % 8]);
    break;
  }
  case TLO_LOSE:
    do_lose(r, resolve_exec(r, op->exec), op->a % 8, op->flags & 1, op->c % 4, message_of(op->msg));
    break;
  case TLO_HEARTBEAT:
    do_heartbeat(r, resolve_exec(r, op->exec));
    break;
  case TLO_HEARTBEAT_ALL:
    for (unsigned s = 0; s < NSLOTS && !r->failed; s++)
      for (uint32_t g = 0; g < r->ngen[s] && !r->failed; g++)
        if (live_state(r->ex[s][g].state))
          do_heartbeat(r, &r->ex[s][g]);
    break;
  case TLO_DECOMMISSION:
    do_decommission(r, resolve_exec(r, op->exec), message_of(op->msg));
    break;
  case TLO_SUBMIT: {
    mprefs prefs;
    bool with = resolve_prefs(r, op, &prefs);
    do_submit(r, op->stage % NSTAGES, op->a % 8 == 0 ? -1 : (int)(op->a % 8) - 1, op->b % 4,
              op->c % 13, (op->flags & 3) % 3, op->d % NPOOLNAMES, (op->flags & 4) != 0,
              (op->flags & 8) != 0, with ? &prefs : NULL);
    break;
  }
  case TLO_KILL_TASK:
    do_kill_task(r, resolve_tid(r, op->tid), op->flags & 1, message_of(op->msg));
    break;
  case TLO_KILL_STAGE:
    do_kill_stage(r, op->stage % 7 == 6 ? 99 : op->stage % 7, op->flags & 1, message_of(op->msg));
    break;
  case TLO_CANCEL_STAGE:
    do_cancel(r, op->stage % 7 == 6 ? 99 : op->stage % 7, message_of(op->msg));
    break;
  case TLO_PARTITION:
    do_partition(r, op->stage % NSTAGES, op->a % 14);
    break;
  case TLO_OFFER: {
    mexec *xs[TLO_MAX_OFFERS];
    uint32_t cores[TLO_MAX_OFFERS];
    size_t n = op->noffers % (TLO_MAX_OFFERS + 1);
    for (size_t i = 0; i < n; i++) {
      xs[i] = resolve_exec(r, op->offer_exec[i]);
      cores[i] = op->offer_cores[i] % 5;
    }
    do_offer(r, xs, cores, n, op->a % 17, op->flags & 1);
    break;
  }
  case TLO_OFFER_ALL:
    do_offer_alive(r, 64, MAXCAP, true);
    break;
  case TLO_UPDATE: {
    tl_tid tid = resolve_tid(r, op->tid);
    matt *a = att_of(r, tid);
    mexec *x = (op->flags & 1) || a == NULL ? resolve_exec(r, op->exec) : a->ex;
    do_update(r, x, tid, op->a % 5, op->b % 8, message_of(op->msg), op->c % 4, op->d);
    break;
  }
  case TLO_CLOCK: {
    unsigned step = op->a % NCLOCK_STEPS;
    if (step == NCLOCK_STEPS - 3)
      r->raw_now = add_sat(r->raw_now, r->cfg.speculation_interval_ns);
    else if (step == NCLOCK_STEPS - 2)
      r->raw_now = r->raw_now > CLOCK_BACK ? r->raw_now - CLOCK_BACK : 0;
    else if (step == NCLOCK_STEPS - 1)
      r->raw_now = r->raw_now > CLOCK_END ? r->raw_now : CLOCK_END;
    else
      r->raw_now = add_sat(r->raw_now, clock_steps[step]);
    snprintf(r->desc, sizeof r->desc, "clock to %" PRIu64 " ms", r->raw_now / 1000000);
    trace(r, 1, "%s", r->desc);
    break;
  }
  case TLO_TICK:
    do_tick(r);
    break;
  case TLO_INSPECT:
    do_inspect(r, resolve_exec(r, op->exec), op->a, op->b);
    break;
  case TLO_POOL_ADD: {
    static const uint32_t weights[4] = {0, 1, 2, 5}, shares[4] = {0, 1, 2, 4};
    do_pool_add(r, op->d % NPOOLNAMES, op->a % 3, weights[op->b % 4], shares[op->c % 4]);
    break;
  }
  case TLO_NKINDS:
    break;
  }
}

/* One top-level operation and the checks that follow it. */
static void apply_top(tlo_run *r, const tlo_op *op) {
  r->reent = op->reent;
  r->re_arg = op->re_arg;
  r->re_submit_done = r->re_offer_done = r->re_first_done = r->re_finish_done = false;
  r->re_lose_done = false;
  r->desc[0] = '\0'; /* until a call names itself; a failure before that describes the op */
  r->op = op;
  apply(r, op);
  r->reent = 0;
  if (!r->failed && r->qhead != r->qlen) {
    char d[256];
    describe_ev(r, &r->q[r->qhead], d, sizeof d);
    fail(r, "%zu expected events were not delivered, the first: %s", r->qlen - r->qhead, d);
  }
  if (!r->failed) {
    drop_events(r);
    compare_all(r, true);
  }
  r->op = NULL;
}

/* ---------------------------------------------------------------------------------------------
 * The codec.
 * ------------------------------------------------------------------------------------------- */

enum { F_EXEC, F_TID, F_STAGE, F_A, F_B, F_C, F_D, F_FLAGS, F_MSG, F_OFFERS, F_END };

/* The fields each kind encodes, in order; reent and re_arg follow every operation. What they
 * mean (each taken modulo its domain when the operation runs):
 *   ADD       exec: slot (and, without fresh, which old id to register again); a: host h0-h3;
 *             b: rack (0 the host's usual one, 1 r0, 2 r1, 3 none, 4 "" = invalid); c: cores
 *             {0 = invalid, 1, 2, 3, 4, 2, 4, 64}; flags bit 0: a fresh id "e<slot>.<next>".
 *   LOSE      exec; a: loss kind 0-6, 7 = invalid; flags bit 0: caused_by_app; c: exit code;
 *             msg.
 *   HEARTBEAT, DECOMMISSION (msg), INSPECT (a: task set, from the newest back, 15 = unknown;
 *             b: explain buffer {1, 8, 64, 4096}): exec.
 *   SUBMIT    stage; a: stage attempt (0 = the next fresh one, k = k - 1); b: priority 0-3;
 *             c: ntasks 0-12 (0 invalid); flags bits 0-1: cpus per task 0-2 (0 = the
 *             config's; 3 is 0), bit 2: shuffle_map, bit 3: barrier; d: pool (pool_names:
 *             0 NULL, 1 "default", 2-4 "a"-"c", 5 255 bytes, 6 "" and 7 256 bytes invalid).
 *   POOL_ADD  d: name (pool_names); a: mode (0 FIFO, 1 FAIR, 2 invalid); b: weight {0 =
 *             invalid, 1, 2, 5}; c: min share {0, 1, 2, 4}.
 *   KILL_TASK tid; flags bit 0: interrupt; msg.  KILL_STAGE, CANCEL_STAGE: stage (6 = 99),
 *             flags, msg.  PARTITION: stage, a: index 0-13.
 *   OFFER     noffers, then exec and cores (0-4) of each; a: cap 0-16; flags bit 0: one more
 *             offer with an empty id (invalid).
 *   UPDATE    tid; flags bit 0: from exec rather than the tid's own executor; a: state (4 =
 *             invalid); b: failure kind 0-7 (0, 6, 7 invalid in an update); c: result (0 none,
 *             1 with result_free, 2 without, 3 of size 0); d: result_size (result_sizes: 0
 *             the mode's own, else 0, 1, 7, 13, 40, 1000, SIZE_MAX); msg.
 *   CLOCK     a: step (see clock_steps).  HEARTBEAT_ALL, OFFER_ALL, TICK: nothing. */
static const uint8_t tlo_fields[TLO_NKINDS][10] = {
    [TLO_ADD] = {F_EXEC, F_A, F_B, F_C, F_FLAGS, F_END},
    [TLO_LOSE] = {F_EXEC, F_A, F_FLAGS, F_C, F_MSG, F_END},
    [TLO_HEARTBEAT] = {F_EXEC, F_END},
    [TLO_HEARTBEAT_ALL] = {F_END},
    [TLO_DECOMMISSION] = {F_EXEC, F_MSG, F_END},
    [TLO_SUBMIT] = {F_STAGE, F_A, F_B, F_C, F_FLAGS, F_D, F_END},
    [TLO_KILL_TASK] = {F_TID, F_FLAGS, F_MSG, F_END},
    [TLO_KILL_STAGE] = {F_STAGE, F_FLAGS, F_MSG, F_END},
    [TLO_CANCEL_STAGE] = {F_STAGE, F_MSG, F_END},
    [TLO_PARTITION] = {F_STAGE, F_A, F_END},
    [TLO_OFFER] = {F_OFFERS, F_A, F_FLAGS, F_END},
    [TLO_OFFER_ALL] = {F_END},
    [TLO_UPDATE] = {F_TID, F_FLAGS, F_EXEC, F_A, F_B, F_C, F_MSG, F_D, F_END},
    [TLO_CLOCK] = {F_A, F_END},
    [TLO_TICK] = {F_END},
    [TLO_INSPECT] = {F_EXEC, F_A, F_B, F_END},
    [TLO_POOL_ADD] = {F_D, F_A, F_B, F_C, F_END},
};

static uint8_t *field_of(tlo_op *op, int f) {
  switch (f) {
  case F_EXEC:
    return &op->exec;
  case F_TID:
    return &op->tid;
  case F_STAGE:
    return &op->stage;
  case F_A:
    return &op->a;
  case F_B:
    return &op->b;
  case F_C:
    return &op->c;
  case F_D:
    return &op->d;
  case F_FLAGS:
    return &op->flags;
  default:
    return &op->msg;
  }
}

size_t tlo_encode_op(const tlo_op *op, uint8_t *buf, size_t cap) {
  uint8_t tmp[64];
  size_t n = 0;
  tlo_op copy = *op;
  unsigned kind = op->kind % TLO_NKINDS;
  tmp[n++] = op->kind;
  for (const uint8_t *f = tlo_fields[kind]; *f != F_END; f++) {
    if (*f == F_OFFERS) {
      tmp[n++] = op->noffers;
      for (unsigned i = 0; i < op->noffers % (TLO_MAX_OFFERS + 1u); i++) {
        tmp[n++] = op->offer_exec[i];
        tmp[n++] = op->offer_cores[i];
      }
    } else {
      tmp[n++] = *field_of(&copy, *f);
    }
  }
  tmp[n++] = op->reent;
  tmp[n++] = op->re_arg;
  if (n <= cap)
    memcpy(buf, tmp, n);
  return n;
}

size_t tlo_decode_op(const uint8_t *data, size_t size, tlo_op *op) {
  size_t n = 0;
  memset(op, 0, sizeof *op);
  if (size < 1)
    return 0;
  op->kind = data[n++];
  unsigned kind = op->kind % TLO_NKINDS;
  for (const uint8_t *f = tlo_fields[kind]; *f != F_END; f++) {
    if (*f == F_OFFERS) {
      if (n >= size)
        return 0;
      op->noffers = data[n++];
      for (unsigned i = 0; i < op->noffers % (TLO_MAX_OFFERS + 1u); i++) {
        if (n + 2 > size)
          return 0;
        op->offer_exec[i] = data[n++];
        op->offer_cores[i] = data[n++];
      }
    } else {
      if (n >= size)
        return 0;
      *field_of(op, *f) = data[n++];
    }
  }
  if (n + 2 > size)
    return 0;
  op->reent = data[n++];
  op->re_arg = data[n++];
  return n;
}

void tlo_op_describe(const tlo_op *op, char *buf, size_t len) {
  static const char *const names[TLO_NKINDS] = {
      "add",       "lose",       "heartbeat",    "heartbeat_all", "decommission", "submit",
      "kill_task", "kill_stage", "cancel_stage", "partition",     "offer",        "offer_all",
      "update",    "clock",      "tick",         "inspect",       "pool_add"};
  snprintf(buf, len,
           "%s exec=%u tid=%u stage=%u a=%u b=%u c=%u d=%u flags=%u msg=%u offers=%u reent=%#x",
           names[op->kind % TLO_NKINDS], op->exec, op->tid, op->stage, op->a, op->b, op->c, op->d,
           op->flags, op->msg, op->noffers % (TLO_MAX_OFFERS + 1u), op->reent);
}

static void emit(tlo_run *r, const uint8_t *bytes, size_t n) {
  if (r->opt.encoded != NULL && r->enc_len + n <= r->opt.encoded_cap)
    memcpy(r->opt.encoded + r->enc_len, bytes, n);
  r->enc_len += n;
}

/* ---------------------------------------------------------------------------------------------
 * The generator: operations chosen from the model's state so that most of them do something
 * (an update names an attempt in flight, an offer an ALIVE executor), with a share of invalid,
 * stale, foreign and unknown ones.
 * ------------------------------------------------------------------------------------------- */

static uint32_t rnd(tlo_run *r, uint32_t n) { return (uint32_t)(splitmix64(&r->rng) % n); }
static bool chance(tlo_run *r, uint32_t percent) { return rnd(r, 100) < percent; }

/* An executor reference byte: usually one that is live (or ALIVE only), else anything. */
static uint8_t gen_exec(tlo_run *r, bool alive_only) {
  if (chance(r, 85)) {
    uint8_t cand[NSLOTS * 3];
    size_t n = 0;
    for (unsigned s = 0; s < NSLOTS; s++)
      for (unsigned back = 0; back < 3 && back < r->ngen[s]; back++) {
        const mexec *x = &r->ex[s][r->ngen[s] - 1 - back];
        if (alive_only ? x->state == MX_ALIVE : x->state != MX_NONE && x->state != MX_REMOVED)
          cand[n++] = (uint8_t)(s | back << 3);
      }
    if (n > 0)
      return cand[rnd(r, (uint32_t)n)];
  }
  return (uint8_t)rnd(r, 256);
}

/* An attempt reference: mostly one in the tid index. */
static uint8_t gen_tid(tlo_run *r) {
  uint32_t p = rnd(r, 100);
  if (p < 85)
    return (uint8_t)rnd(r, 128);
  if (p < 90)
    return (uint8_t)(128 + rnd(r, 32));
  if (p < 97)
    return (uint8_t)(160 + rnd(r, 64));
  return (uint8_t)(224 + rnd(r, 32));
}

/* An attempt reference (below 128) to an attempt in the tid index that is a loser already
 * killed (which 1) or one of two copies in flight (which 2); false when there is none. */
static bool pick_indexed(tlo_run *r, int which, uint8_t *sel) {
  size_t n = 0, ncand = 0, cand[64];
  for (size_t i = 0; i < r->ninflight; i++) {
    const matt *a = &r->att[r->inflight[i] - 1];
    if (a->frozen)
      continue;
    bool want = which == 1 ? a->killed_by_other : a->sibling != 0 && !a->killed_by_other;
    if (want && ncand < 64)
      cand[ncand++] = n;
    n++;
  }
  if (ncand == 0 || n > 128)
    return false;
  size_t j = cand[rnd(r, (uint32_t)ncand)];
  *sel = (uint8_t)((j * 128 + n - 1) / n); /* resolve_tid: the sel-th 128th of the way */
  return true;
}

static uint8_t gen_msg(tlo_run *r) {
  uint32_t p = rnd(r, 100);
  return p < 55 ? 0 : p < 75 ? 1 : p < 97 ? 2 : 3;
}

static void gen_op(tlo_run *r, tlo_op *op) {
  static const struct {
    tlo_kind kind;
    uint32_t weight;
  } base[] = {{TLO_ADD, 8},          {TLO_LOSE, 5},      {TLO_HEARTBEAT, 2}, {TLO_HEARTBEAT_ALL, 6},
              {TLO_DECOMMISSION, 2}, {TLO_SUBMIT, 8},    {TLO_KILL_TASK, 3}, {TLO_KILL_STAGE, 2},
              {TLO_CANCEL_STAGE, 1}, {TLO_PARTITION, 2}, {TLO_OFFER, 10},    {TLO_OFFER_ALL, 8},
              {TLO_UPDATE, 32},      {TLO_CLOCK, 5},     {TLO_TICK, 4},      {TLO_INSPECT, 2},
              {TLO_POOL_ADD, 1}};
  uint32_t weights[TLO_NKINDS];
  bool spec = r->cfg.speculation, fair = r->cfg.mode == TL_FAIR;
  unsigned npools = 0, alive = 0;
  for (unsigned p = 0; p < NPOOLNAMES; p++)
    npools += r->pools[p].exists;
  for (unsigned sl = 0; sl < NSLOTS; sl++)
    for (uint32_t g = 0; g < r->ngen[sl]; g++)
      alive += r->ex[sl][g].state == MX_ALIVE;
  uint32_t total = 0;
  for (size_t i = 0; i < TLO_NKINDS; i++) {
    weights[i] = base[i].weight;
    if (spec && (base[i].kind == TLO_CLOCK || base[i].kind == TLO_TICK))
      weights[i] += 5; /* time passes in small steps and checks run often: slow tasks */
    if (spec && base[i].kind == TLO_OFFER_ALL)
      weights[i] += 4; /* and their copies find offers */
    if (spec && base[i].kind == TLO_ADD && alive < 3)
      weights[i] += 16; /* on several hosts */
    if (spec && base[i].kind == TLO_LOSE)
      weights[i] -= 2;
    if (fair && base[i].kind == TLO_POOL_ADD)
      weights[i] = npools < 4 ? 8 : 1;
    total += weights[i];
  }
  uint32_t pick = rnd(r, total);
  tlo_kind kind = TLO_TICK;
  for (size_t i = 0; i < TLO_NKINDS; i++) {
    if (pick < weights[i]) {
      kind = base[i].kind;
      break;
    }
    pick -= weights[i];
  }
  memset(op, 0, sizeof *op);
  op->kind = (uint8_t)kind;
  switch (kind) {
  case TLO_ADD: {
    unsigned slot = rnd(r, NSLOTS);
    /* Prefer a slot whose latest executor is gone: it comes back under a new id. */
    for (int tries = 0; tries < 4; tries++) {
      if (r->ngen[slot] == 0)
        break;
      mx_state st = r->ex[slot][r->ngen[slot] - 1].state;
      if (st == MX_NONE || st == MX_REMOVED)
        break;
      slot = rnd(r, NSLOTS);
    }
    bool fresh = chance(r, 90);
    op->exec = (uint8_t)(slot | (fresh ? 0 : rnd(r, 3)) << 3);
    op->flags = fresh;
    op->a = (uint8_t)rnd(r, NHOSTS);
    op->b = chance(r, 92) ? 0 : (uint8_t)rnd(r, 5);
    op->c = chance(r, 3) ? 0 : chance(r, spec ? 25 : 3) ? 7 : (uint8_t)(1 + rnd(r, 4));
    break;
  }
  case TLO_LOSE: {
    op->exec = gen_exec(r, false);
    static const uint8_t kinds[] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 2, 2, 2,
                                    3, 4, 4, 4, 5, 5, 6, 1, 2, 4, 0, 7};
    const mexec *x = resolve_exec(r, op->exec);
    op->a = kinds[rnd(r, sizeof kinds)];
    if (x->state == MX_PENDING && op->a == 0 && chance(r, 70))
      op->a = (uint8_t)(1 + rnd(r, 6));
    op->flags = chance(r, 60);
    op->c = (uint8_t)rnd(r, 3);
    op->msg = gen_msg(r);
    break;
  }
  case TLO_HEARTBEAT:
    op->exec = gen_exec(r, false);
    break;
  case TLO_DECOMMISSION:
    op->exec = gen_exec(r, false);
    op->msg = gen_msg(r);
    break;
  case TLO_SUBMIT: {
    op->stage = (uint8_t)rnd(r, NSTAGES);
    op->a = chance(r, 85) ? 0 : (uint8_t)(1 + rnd(r, 4));
    op->b = (uint8_t)rnd(r, 4);
    bool barrier = chance(r, 12);
    op->c = chance(r, 2)               ? 0
            : barrier && chance(r, 70) ? (uint8_t)(1 + rnd(r, 4))
                                       : (uint8_t)(1 + rnd(r, MAXTASKS));
    op->flags = chance(r, 85) ? 0 : (uint8_t)(1 + rnd(r, 2));
    op->flags |= (uint8_t)((chance(r, 35) ? 4 : 0) | (barrier ? 8 : 0));
    /* Preferred locations (resolve_prefs), in the bits the other choices leave unused. */
    if (chance(r, 55)) {
      op->flags |= (uint8_t)((1 + rnd(r, 15)) << 4);
      op->a |= (uint8_t)(rnd(r, 32) << 3);
      op->b |= (uint8_t)(rnd(r, 64) << 2);
    }
    /* A pool: under TL_FAIR mostly one that exists; a few unknown and invalid names. */
    uint32_t p = rnd(r, 100);
    if (fair && p < 60) {
      unsigned cand[NPOOLNAMES], n = 0;
      for (unsigned q = 1; q < NPOOLNAMES; q++)
        if (r->pools[q].exists)
          cand[n++] = q;
      op->d = (uint8_t)cand[rnd(r, n)];
    } else {
      op->d = p < 85 ? 0 : p < 97 ? (uint8_t)(1 + rnd(r, 5)) : (uint8_t)(6 + rnd(r, 2));
    }
    if (op->flags >> 4)
      op->d |= (uint8_t)(rnd(r, 32) << 3);
    break;
  }
  case TLO_POOL_ADD:
    op->d = chance(r, 85) ? (uint8_t)(2 + rnd(r, 4)) : (uint8_t)rnd(r, NPOOLNAMES);
    op->a = chance(r, 95) ? (uint8_t)rnd(r, 2) : 2;
    op->b = chance(r, 95) ? (uint8_t)(1 + rnd(r, 3)) : 0;
    op->c = (uint8_t)rnd(r, 4);
    break;
  case TLO_KILL_TASK:
    op->tid = gen_tid(r);
    op->flags = chance(r, 50);
    op->msg = gen_msg(r);
    break;
  case TLO_KILL_STAGE:
  case TLO_CANCEL_STAGE:
  case TLO_PARTITION: {
    uint8_t cand[MAXTS];
    size_t n = 0;
    for (uint32_t k = 0; k < r->nts; k++)
      if (!r->ts[k].released && (kind != TLO_PARTITION || !r->ts[k].zombie))
        cand[n++] = (uint8_t)r->ts[k].stage;
    op->stage = n > 0 && chance(r, 85) ? cand[rnd(r, (uint32_t)n)] : (uint8_t)rnd(r, 7);
    op->flags = chance(r, 50);
    op->msg = gen_msg(r);
    if (kind == TLO_PARTITION) {
      int active = active_of(r, op->stage % NSTAGES);
      if (active >= 0 && r->ts[active].npend > 0 && chance(r, 70))
        op->a = (uint8_t)r->ts[active].pend[rnd(r, r->ts[active].npend)];
      else
        op->a = (uint8_t)rnd(r, 14);
    }
    break;
  }
  case TLO_OFFER:
    op->noffers = (uint8_t)(1 + rnd(r, TLO_MAX_OFFERS));
    for (unsigned i = 0; i < op->noffers; i++) {
      op->offer_exec[i] = gen_exec(r, true);
      op->offer_cores[i] = chance(r, 5) ? 0 : (uint8_t)(1 + rnd(r, 4));
    }
    op->a = chance(r, 70) ? 16 : (uint8_t)rnd(r, 17);
    op->flags = chance(r, 2);
    break;
  case TLO_UPDATE: {
    op->tid = gen_tid(r);
    op->flags = chance(r, 8);
    op->exec = gen_exec(r, false);
    const matt *a = att_of(r, resolve_tid(r, op->tid));
    uint32_t p = rnd(r, 100);
    if (a != NULL && a->live && !a->running && p < 60)
      op->a = TL_TASK_RUNNING;
    else
      op->a = p < 25   ? TL_TASK_RUNNING
              : p < 62 ? TL_TASK_FINISHED
              : p < 87 ? TL_TASK_FAILED
              : p < 97 ? TL_TASK_KILLED
                       : 4;
    static const uint8_t failures[] = {1, 1, 1, 1, 1, 2, 3, 4, 4, 5, 5, 5, 0, 6, 7};
    op->b = failures[rnd(r, sizeof failures)];
    if (op->a == TL_TASK_FINISHED)
      op->c = chance(r, 75) ? 1 : chance(r, 60) ? 2 : chance(r, 50) ? 3 : 0;
    else
      op->c = chance(r, 3) ? 1 : 0;
    op->msg = gen_msg(r);
    p = rnd(r, 100);
    op->d = p < 50 ? 0 : p < 97 ? (uint8_t)(1 + rnd(r, 6)) : 7;
    /* Speculation wants slow tasks: successes mostly of the youngest attempts, so the old
     * ones keep running past the median. */
    /* Exclusion wants counted failures. */
    if (r->cfg.exclude_on_failure && op->a == TL_TASK_FINISHED && chance(r, 25)) {
      op->a = TL_TASK_FAILED;
      op->b = TL_END_EXCEPTION;
      op->c = 0;
    }
    if (spec && op->a == TL_TASK_FINISHED && op->tid < 128 && chance(r, 60))
      op->tid = (uint8_t)(112 + rnd(r, 16));
    /* And races: one of two copies in flight reports, or the loser after its kill. */
    if (spec) {
      p = rnd(r, 100);
      uint8_t sel;
      if (p < 30 && pick_indexed(r, 1, &sel)) {
        op->tid = sel;
        p = rnd(r, 100);
        op->a = p < 45 ? TL_TASK_FINISHED : p < 65 ? TL_TASK_FAILED : p < 85 ? TL_TASK_KILLED : 0;
      } else if (p < 60 && pick_indexed(r, 2, &sel)) {
        op->tid = sel;
        op->a = chance(r, 70) ? TL_TASK_FINISHED : TL_TASK_FAILED;
      }
    }
    break;
  }
  case TLO_CLOCK: {
    static const uint8_t steps[] = {0, 1, 2, 3, 4, 4, 4, 5, 5, 6, 7, 8, 9, 10, 11, 13};
    static const uint8_t small[] = {1, 2, 2, 3, 12, 12, 12, 12};
    if (spec && chance(r, 60))
      op->a = small[rnd(r, sizeof small)];
    else
      op->a = chance(r, 2) ? 14 : steps[rnd(r, sizeof steps)];
    break;
  }
  case TLO_INSPECT:
    op->exec = gen_exec(r, false);
    op->a = (uint8_t)rnd(r, 32);
    op->b = (uint8_t)rnd(r, 4);
    break;
  case TLO_HEARTBEAT_ALL:
  case TLO_OFFER_ALL:
  case TLO_TICK:
  case TLO_NKINDS:
    break;
  }
  if (chance(r, 20)) {
    for (int bit = 0; bit < 8; bit++)
      if (chance(r, 30))
        op->reent |= (uint8_t)(1u << bit);
    op->re_arg = (uint8_t)rnd(r, 256);
  }
}

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

static tlo_run *run_new(const uint8_t header[TLO_HEADER_BYTES], const uint8_t *ext,
                        const tlo_options *opt) {
  if (long_message[0] == '\0') {
    memset(long_message, 'x', LONG_MESSAGE);
    long_message[LONG_MESSAGE] = '\0';
    memset(pool_255, 'p', 255);
    memset(pool_256, 'q', 256);
  }
  tlo_run *r = xrealloc(NULL, sizeof *r);
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
  r->raw_now = r->now = SEC;
  r->pools[POOL_DEFAULT] = (mpool){true, TL_FIFO, 1, 0};

  /* The configuration: small timeouts so that every expiry path is taken often. */
  static const struct {
    uint32_t max;
    uint64_t ttl;
  } tombs[5] = {{0, 0}, {1, 30 * SEC}, {4, 30 * SEC}, {4, 30 * SEC}, {64, 30 * SEC}};
  uint8_t h0 = header[0], h1 = header[1];
  tl_config_init(&r->cfg);
  r->cfg.max_task_failures = 1 + h0 % 3u;
  r->cfg.cpus_per_task = ((h0 >> 2) & 3) == 3 ? 2 : 1;
  r->cfg.heartbeat_timeout_ns = ((h0 >> 4) & 3) == 0 ? 0 : 10 * SEC;
  r->cfg.pending_loss_timeout_ns = ((h0 >> 6) & 3) == 0 ? 0 : 5 * SEC;
  r->cfg.max_tombstones = tombs[h1 % 5].max;
  r->cfg.tombstone_ttl_ns = tombs[h1 % 5].ttl;
  r->end_free = ((h1 >> 4) & 7) == 0;
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
  r->cfg.clock = run_clock;
  r->cfg.clock_ud = r;
  r->cfg.journal = r->opt.journal;
  r->cfg.journal_ud = r->opt.journal_ud;
  if (r->cfg.journal == NULL && (h1 & 0x80)) {
    /* The journal's own sink: it reads every line (so ASan sees them) and keeps nothing. */
    r->cfg.journal = journal_sink;
    r->cfg.journal_ud = r;
  }

  tl_callbacks cb = {.ud = r,
                     .task_started = cb_task_started,
                     .task_ended = cb_task_ended,
                     .taskset_failed = cb_taskset_failed,
                     .taskset_released = cb_taskset_released,
                     .executor_added = cb_executor_added,
                     .executor_lost = cb_executor_lost,
                     .revive_offers = cb_revive,
                     .speculative_task_submitted = cb_speculative,
                     .kill_task = cb_kill};
  snprintf(r->desc, sizeof r->desc, "tl_scheduler_new");
  int rc = tl_scheduler_new(&r->cfg, &cb, &r->s);
  if (rc != TL_OK) {
    fail(r, "tl_scheduler_new returned %s", tl_err_name(rc));
    r->s = NULL;
    return r;
  }
  tl_stats st;
  tl_stats_get(r->s, &st);
  r->base_bytes = st.mem_live_bytes;
  r->base_blocks = st.mem_live_blocks;
  trace(r, 1,
        "config: max_task_failures=%u cpus_per_task=%u heartbeat=%" PRIu64 "s pending_loss=%" PRIu64
        "s tombstones=%u ttl=%" PRIu64 "s end=%s journal=%s",
        r->cfg.max_task_failures, r->cfg.cpus_per_task, r->cfg.heartbeat_timeout_ns / SEC,
        r->cfg.pending_loss_timeout_ns / SEC, r->cfg.max_tombstones, r->cfg.tombstone_ttl_ns / SEC,
        r->end_free ? "free with work left" : "drain", r->cfg.journal != NULL ? "on" : "off");
  trace(r, 1,
        "policy: mode=%s max_result_bytes=%" PRIu64 " speculation=%s interval=%" PRIu64
        "ms min_runtime=%" PRIu64 "ms multiplier=%g quantile=%g",
        r->cfg.mode == TL_FAIR ? "FAIR" : "FIFO", r->cfg.max_result_bytes,
        r->cfg.speculation ? "on" : "off", r->cfg.speculation_interval_ns / 1000000,
        r->cfg.speculation_min_runtime_ns / 1000000, r->cfg.speculation_multiplier,
        r->cfg.speculation_quantile);
  trace(r, 1, "locality waits: process=%" PRIu64 "ns node=%" PRIu64 "ns rack=%" PRIu64 "ns",
        r->wait_ns[TL_PROCESS_LOCAL], r->wait_ns[TL_NODE_LOCAL], r->wait_ns[TL_RACK_LOCAL]);
  if (ext != NULL)
    trace(r, 1,
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
  emit(r, header, TLO_HEADER_BYTES);
  if (ext != NULL)
    emit(r, ext, TLO_EXCLUDE_BYTES);
  return r;
}

/* Checks after an end-phase call, as after a top-level operation. */
static void end_step(tlo_run *r) {
  if (r->failed)
    return;
  if (r->qhead != r->qlen) {
    char d[256];
    describe_ev(r, &r->q[r->qhead], d, sizeof d);
    fail(r, "%zu expected events were not delivered, the first: %s", r->qlen - r->qhead, d);
    return;
  }
  drop_events(r);
  compare_all(r, true);
}

static void check_payloads_and_results(tlo_run *r) {
  for (uint32_t k = 0; k < r->nts && !r->failed; k++)
    if (r->ts[k].released_seen != 1)
      fail(r, "task set %" PRIu64 " was released %u times", r->ts[k].id, r->ts[k].released_seen);
  for (size_t i = 0; i < r->nres && !r->failed; i++)
    if (r->res[i]->frees != 1)
      fail(r, "result %zu was freed %u times", i, r->res[i]->frees);
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
        push_ev(r, EV_RELEASED)->ts = k;
      }
    r->closing = true;
    note_call(r, "scheduler_free with work left");
    tl_stats_get(r->s, &r->final);
    r->has_final = true;
    int rc = tl_scheduler_free(r->s);
    expect_rc(r, "scheduler_free with work left", rc, TL_OK);
    if (rc == TL_OK)
      r->s = NULL;
    if (r->qhead != r->qlen)
      fail(r, "tl_scheduler_free delivered %zu releases fewer than the model expects",
           r->qlen - r->qhead);
    drop_events(r);
    check_payloads_and_results(r);
    return;
  }
  for (unsigned s = 0; s < NSLOTS && !r->failed; s++)
    for (uint32_t g = 0; g < r->ngen[s] && !r->failed; g++) {
      mx_state st = r->ex[s][g].state;
      if (st == MX_ALIVE || st == MX_DECOM || st == MX_PENDING) {
        do_lose(r, &r->ex[s][g], TL_LOSS_KILLED, false, 0, NULL);
        end_step(r);
      }
    }
  for (uint32_t k = 0; k < r->nts && !r->failed; k++)
    if (!r->ts[k].released) {
      do_cancel(r, r->ts[k].stage, NULL);
      end_step(r);
    }
  if (r->failed)
    return;
  r->raw_now = add_sat(r->raw_now, 100 * SEC);
  do_tick(r);
  end_step(r);
  if (r->failed)
    return;
  tl_stats st;
  tl_stats_get(r->s, &st);
  /* Tombstones whose time to live saturated at the end of time never expire (the model agrees,
   * see end_step); then only the memory balance of tl_check vouches for the bytes. */
  size_t tombs = count_tombstones(r);
  size_t left = st.executors_alive + st.executors_decommissioning + st.executors_pending_loss +
                st.tombstones - tombs + st.hosts + st.racks + st.tasksets_active +
                st.tasksets_zombie + st.attempts_running + st.attempts_frozen + st.tasks_pending +
                st.events_queued + st.tasksets_with_failures + st.tasksets_unschedulable;
  if (left != 0)
    fail(r, "the drained scheduler still holds %zu things", left);
  /* So do application-level exclusions whose expiry saturated (compare_all counted them). */
  if (tombs == 0 && st.executors_excluded + st.nodes_excluded == 0) {
    CMP(r, "drained mem_live_bytes", st.mem_live_bytes, r->base_bytes);
    CMP(r, "drained mem_live_blocks", st.mem_live_blocks, r->base_blocks);
  }
  check_payloads_and_results(r);
  if (r->failed)
    return;
  note_call(r, "scheduler_free");
  tl_stats_get(r->s, &r->final);
  r->has_final = true;
  int rc = tl_scheduler_free(r->s);
  expect_rc(r, "scheduler_free", rc, TL_OK);
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
  out->spec_submitted = r->f_spec_submitted;
  out->spec_launches = r->f_spec_launches;
  out->lost_races = r->f_lost_races;
  out->late_reports = r->f_late_reports;
  out->too_large = r->f_too_large;
  out->resubmitted = r->f_resubmitted;
  out->barrier_launches = r->f_barrier_launches;
  out->fair_rounds = r->f_fair_rounds;
  memcpy(out->loc_launches, r->f_loc_launches, sizeof out->loc_launches);
  out->waits_out = r->f_waits_out;
  out->level_skips = r->f_skips;
  out->timer_resets = r->f_resets;
  out->recomputes = r->f_recomputes;
  out->wait_revives = r->f_loc_revives;
  memcpy(out->exclusion, r->f_x, sizeof out->exclusion);
  snprintf(out->message, sizeof out->message, "%s", r->failed ? r->why : "ok");
  out->has_final = r->has_final && !r->failed;
  out->final = r->final;
  drop_events(r);
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
  free(r);
}

void tlo_run_seed(uint64_t seed, size_t nops, const tlo_options *opt, tlo_outcome *out) {
  uint64_t rng = seed;
  uint8_t header[TLO_HEADER_BYTES];
  uint64_t h = splitmix64(&rng);
  for (unsigned k = 0; k < TLO_HEADER_BYTES; k++)
    header[k] = (uint8_t)(h >> (8 * k));
  /* Two seeds in five turn exclusion on, from bits the header leaves (so the operations of the
   * others are what they were before exclusion existed). */
  uint8_t ext[TLO_EXCLUDE_BYTES] = {(uint8_t)(TLO_EXCLUDE_MARK | ((h >> 40) & 0x3f)),
                                    (uint8_t)(h >> 48)};
  tlo_run *r = run_new(header, (h >> 32) % 5 < 2 ? ext : NULL, opt);
  r->rng = rng;
  size_t i = 0;
  for (; i < nops && !r->failed; i++) {
    tlo_op op;
    gen_op(r, &op);
    uint8_t bytes[64];
    size_t n = tlo_encode_op(&op, bytes, sizeof bytes);
    emit(r, bytes, n);
    r->op_index = i;
    apply_top(r, &op);
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
  tlo_run *r = run_new(header, ext, opt);
  size_t i = 0;
  while (i < TLO_MAX_OPS && !r->failed) {
    tlo_op op;
    size_t n = tlo_decode_op(data + at, size - at, &op);
    if (n == 0)
      break;
    emit(r, data + at, n);
    at += n;
    r->op_index = i++;
    apply_top(r, &op);
  }
  run_end(r, i, out);
}
