/* The operation layer's private header, for test/ops_*.c only (test/ops.h is its public face):
 * the reference model's types and what the layer's pieces share. The layer is a reference model
 * of the scheduler that follows the header and docs and shares no code with lib/, the applier
 * that predicts each call's answer and events from the model before making the call and then
 * checks what the library did, the byte codec, and the generator.
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
 *
 * The pieces: ops_model.c (the model's tables, verdicts and traces, expected events, the model's
 * helpers, attempts ending and executors lost), ops_exclude.c (exclude on failure),
 * ops_locality.c (locality, and tl_tick's answer), ops_compare.c (the library against the
 * model), ops_calls.c and ops_offer.c (the calls; single and batched status updates share one
 * prediction), ops_apply.c (the callbacks, and resolving and applying an operation),
 * ops_codec.c, ops_gen.c (the generator), ops_run.c (a run) and ops_resource.c (resources:
 * declarations and requests drawn from the resource bytes, fitting and booking addresses, and
 * the library's books compared with the model's after every top-level operation).
 * The functions and tables they share are named tlo_; every other function is static to its
 * file.
 */
#ifndef TLO_OPS_INTERNAL_H
#define TLO_OPS_INTERNAL_H

#include "ops.h"

#include "taskledger.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
#define NPOOLNAMES 8 /* pool names an operation can give (tlo_pool_names) */
#define MAXPREFS 4   /* preferred locations per task */
#define NLEVELS 5    /* tl_locality: PROCESS_LOCAL .. ANY */

/* ---------------------------------------------------------------------------------------------
 * The model.
 * ------------------------------------------------------------------------------------------- */

/* Resources (docs/api.md "Resources"), in runs with the resource bytes (TLO_RESOURCE_MARK):
 * two names, "gpu" (up to MAXADDR addresses) and "fpga" (one), and profiles 0 and 1. */
#define NRKINDS 2 /* resource names: 0 "gpu", 1 "fpga" */
#define MAXADDR 4 /* addresses of one resource an executor may declare */
#define MAXGR 3   /* grants one task may hold: gpu x2 and fpga x1 */

/* What an executor declares: its profile, and its resources in declaration order. */
typedef struct mdecl {
  uint32_t profile;
  uint8_t nres;           /* 0 .. NRKINDS */
  uint8_t kind[NRKINDS];  /* resource i's name (0 gpu, 1 fpga) */
  uint8_t naddr[NRKINDS]; /* and its addresses: "0" .. */
  uint8_t bad;            /* 0; 1-4 a malformed declaration instead (TL_ERESOURCE) */
} mdecl;

/* What each task of a task set asks for: its profile, and its requests in order. */
typedef struct mreq {
  uint32_t profile;
  uint8_t nreq;
  uint8_t kind[NRKINDS];   /* request i's name */
  uint8_t amount[NRKINDS]; /* whole addresses (1 with a share) */
  uint8_t share[NRKINDS];  /* 1 whole; k: 1/k of one address */
  uint8_t ngrants;         /* the amounts summed: grants per task */
  uint8_t bad;             /* 0; 1-5 a malformed request instead (TL_ERESOURCE) */
} mreq;

/* MX_RECOVERING: restored from a snapshot while ALIVE or DECOMMISSIONING (was_decom says which)
 * and not yet reconciled: its attempts frozen, off its host, as in a pending loss. */
typedef enum mx_state {
  MX_NONE,
  MX_ALIVE,
  MX_DECOM,
  MX_PENDING,
  MX_REMOVED,
  MX_RECOVERING
} mx_state;

/* One executor id. MX_NONE: never registered, or its tombstone was evicted (then it may be
 * registered again and this record describes the new executor). */
typedef struct mexec {
  char id[16];            /* "e<slot>.<generation>", or "p<slot>" for an id never registered */
  mx_state state;         /* what the ledger must say about this id */
  uint32_t cores;         /* as registered */
  uint32_t free_cores;    /* cores minus its running attempts' cpus */
  uint32_t nrunning;      /* attempts in the tid index on it */
  uint32_t nfrozen;       /* attempts frozen on it (PENDING, RECOVERING) */
  unsigned host;          /* 0..3, from registration on (events name it after the loss too) */
  int rack;               /* its rack as registered: 0 r0, 1 r1, -1 none */
  uint64_t reg_seq;       /* its place in registration order (tl_executor_list, restore) */
  bool was_decom;         /* it was decommissioning when its loss (or its recovery) began */
  uint64_t decom_at;      /* when tl_executor_decommission made it DECOMMISSIONING */
  bool was_alive;         /* ALIVE until the change tlo_executor_changed is told about */
  uint64_t hb_when;       /* last heartbeat (ALIVE, DECOM) */
  uint64_t hb_seq;        /* its place on the heartbeat timeline */
  bool pend_timed;        /* PENDING with a deadline */
  uint64_t pend_deadline; /* when the pending loss times out */
  uint64_t pend_seq;      /* its place on the pending-loss timeline */
  bool rec_timed;         /* RECOVERING with a deadline (recovery_timeout_ns not 0) */
  uint64_t rec_deadline;  /* when tl_tick loses it, unless it reconciles first */
  uint64_t rec_seq;       /* its place on the recovery timeline (restore order) */
  uint64_t tomb_when;     /* removal time (REMOVED) */
  uint64_t tomb_seq;      /* its place among the tombstones */
  bool none_checked;      /* MX_NONE, and tl_executor_get has said TL_ENOENT since */
  mdecl decl;             /* its resources and profile as registered */
  uint64_t used[NRKINDS][MAXADDR]; /* per declared resource and address: TL_SHARE_UNITs held
                                      by its attempts not ended (frozen ones included) */
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

/* A task set's hard placement (ops_placement.c): executors by (slot, generation), hosts by bit. */
typedef struct mpl {
  uint8_t spread; /* tl_spread */
  uint8_t hosts;  /* bit h: tlo_host_names[h] is allowed */
  uint8_t nexec;  /* allowed executors: exec[0 .. nexec) */
  uint8_t exec[2][2];
} mpl;

typedef struct mts {
  tl_taskset_id id;                             /* as tl_submit returns it */
  uint32_t stage, sattempt, prio, ntasks, cpus; /* as submitted (cpus resolved) */
  bool zombie, failed;                          /* launches nothing more; aborted */
  bool released;            /* the model has released it (its event is expected or delivered) */
  unsigned released_seen;   /* final taskset_released deliveries (with its payload, or NULL once
                               the payload was not restored); a tl_scheduler_free before a
                               restore hands it back too, and is not counted */
  bool lost_payload;        /* a restore's resolver did not give its payload: NULL from then */
  bool restored;            /* restored from an image: launches nothing while r->hold */
  bool gone_checked;        /* released, and tl_taskset_get has said TL_ENOENT since */
  uint32_t nrunning;        /* attempts in flight, frozen ones included */
  uint32_t nfrozen;         /* of which frozen */
  uint32_t nsucceeded;      /* indices done */
  uint32_t pend[MAXTASKS];  /* the pending stack: pend[npend - 1] launches next */
  uint32_t npend;           /* its height (0 for a zombie) */
  mindex idx[MAXTASKS];     /* per index */
  unsigned pool;            /* its pool: an index of tlo_pool_names ("default" under TL_FIFO) */
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
  mreq req;            /* its resource requests and profile (resources runs) */
  bool res_wait;       /* no ALIVE executor could run it at the last offer round's end */
  uint32_t maxf;       /* its own max_task_failures (0: the config's; policy runs) */
  uint8_t tags;        /* its tags: bit i for tlo_tag_names[i] (policy runs) */
  mpl pl;              /* its hard placement (placement runs) */
  bool pl_wait;        /* no ALIVE executor satisfies its placement (since the last round's end,
                          until one joins) */
} mts;

/* A pool (tlo_pool_names[k] is its name). */
typedef struct mpool {
  bool exists;        /* added ("default": from the start) */
  tl_sched_mode mode; /* between its task sets, or its child pools */
  uint32_t weight, min_share;
  int parent;         /* its parent's index in tlo_pool_names; -1 at the top level */
  unsigned depth;     /* 1 at the top level */
  unsigned nchildren; /* pools whose parent it is */
  uint32_t seq;       /* creation order: FIFO between child pools */
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
  bool end_held;        /* reconciled as ended (its executor holds the end): takes no cores */
  tl_tid sibling;       /* the other copy of its index in flight, 0 none */
  uint64_t launched_at; /* the scheduler's time at launch */
  uint8_t loc;          /* the tl_locality it was launched at */
  uint8_t ngr;          /* the addresses it holds (booked at launch, given back at its end) */
  tl_grant gr[MAXGR];
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
  EV_SPEC,
  EV_REMOVED
} ev_type;

/* One event the library must deliver. */
typedef struct mevent {
  ev_type type;
  tl_tid tid;                  /* started, ended, kill */
  uint32_t ts;                 /* started, ended, failed, released, spec: its task set's index */
  uint32_t index;              /* started, ended, spec */
  uint32_t attempt;            /* started, ended */
  mexec *ex;                   /* started, ended, added, lost, kill, removed */
  tl_end_kind kind;            /* ended */
  bool counts;                 /* ended: counts_toward_failures */
  void *result;                /* ended: the update's result, or NULL */
  size_t result_size;          /* ended */
  void (*result_free)(void *); /* ended */
  char *text;        /* ended, lost, removed, kill: the message (NULL: none); failed: the reason;
                        malloc'd */
  tl_loss_kind loss; /* lost, removed */
  bool app;          /* lost, removed: caused_by_app */
  int exit_code;     /* lost, removed */
  bool interrupt;    /* kill */
  bool spec;         /* started, ended: the attempt is a speculative copy */
  uint8_t loc;       /* started, ended: the attempt's locality */
  void *dropped;     /* ended: a result the library must have freed (result_free) and withheld */
  bool not_final;    /* released: by the tl_scheduler_free before a restore (it comes back) */
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
  bool deferred;   /* TL_DELIVER_DEFERRED: tl_dispatch after each call delivers its events */

  uint64_t raw_now; /* what the clock function answers */
  uint64_t now;     /* the scheduler's time: the largest reading a call has taken */
  uint64_t seq;     /* orders the timelines */

  mexec ex[NSLOTS][MAXGEN];
  mexec phantom[NSLOTS];      /* ids never registered: "p<slot>" */
  uint32_t ngen[NSLOTS];      /* generations registered per slot */
  int host_rack[NHOSTS];      /* the rack of a host while it has live executors: -1 none */
  uint32_t host_live[NHOSTS]; /* live (ALIVE, DECOM) executors per host */

  mts ts[MAXTS];                /* payload of ts[k] is &ts[k] */
  mpool pools[NPOOLNAMES];      /* by name (tlo_pool_names) */
  uint32_t pool_seq;            /* the next pool's seq */
  size_t pool_bytes;            /* a pool record less its name's bytes (measured at the start) */
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
  bool hold;                     /* the recovery hold: some executor RECOVERING since the last
                                    restore; restored task sets launch nothing */

  /* The totals of tl_stats. */
  uint64_t launched, succeeded, failed_count, killed, stale, rejected_updates, rejected_offers,
      executors_lost, tasksets_released, pending_loss_timeouts;
  uint64_t recovery_timeouts, reconciled, reconcile_lost, reconcile_unknown; /* failover's */
  uint64_t reconcile_adopted; /* attempts reconciliations with items adopted */
  uint64_t epoch;             /* tl_epoch: 1, then each restore's */

  /* Failover (the snapshot-restore operation). */
  bool restoring;         /* inside tl_scheduler_restore: r->s is not known yet, so its callbacks
                             (inline delivery) check their events but not the scheduler */
  uint32_t res_next_ts;   /* the task set taskset_restored must be asked for next (model index) */
  uint64_t res_last_reg;  /* reg_seq of the executor executor_restored was last asked for */
  uint64_t res_seed;      /* chooses the payloads the resolver does not give back */
  bool resolvers_armed;   /* a restore that must call the resolvers is running */
  uint32_t ask_ts[MAXTS]; /* the task sets taskset_restored is asked for, in order */
  uint32_t nask_ts;       /* their number */
  bool withhold[MAXTS];   /* by model index: the resolver gives no payload */
  mexec *ask_ex[NSLOTS * MAXGEN]; /* the executors executor_restored is asked for */
  uint32_t nask_ex, next_ex;      /* their number; the next one asked */
  tl_callbacks cb;                /* the callbacks every scheduler of the run is given */
  uint8_t *image;                 /* the latest snapshot (tl_snapshot's bytes) */
  size_t image_len, image_cap;    /* its length; room */
  uint64_t f_reconcile_calls;     /* tl_executor_reconcile calls made */
  uint64_t f_reracks;             /* reconciliations onto the rack another executor gave the host */
  uint64_t f_restores, f_restore_refusals, f_snapshot_errors, f_recovering, f_payloads_lost;

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
  uint64_t dispatched;                       /* events delivered by tlo_dispatch_all */
  uint64_t f_batches, f_batch_updates;       /* tl_status_updates calls, their updates */
  uint64_t f_spec_threshold, f_spec_decom;   /* speculatable by the threshold, by the kill */
  uint64_t f_spec_submitted, f_spec_launches, f_lost_races, f_late_reports, f_too_large,
      f_resubmitted, f_barrier_launches, f_fair_rounds; /* and the policy features' */
  uint64_t f_nested_pools, f_nested_rounds, f_auto_pools; /* pools in pools, rounds over them,
                                                             pools tl_submit made */
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

  /* Resources (ops_resource.c): on with the resource bytes after the header. */
  bool resources;           /* executors declare, task sets ask, offers book addresses */
  bool res_profiles;        /* profile 1 is used too */
  uint64_t rsrc_seed;       /* chooses declarations and requests (the resource bytes) */
  uint64_t res_adds;        /* tl_executor_add calls made (each draws its declaration) */
  uint64_t res_submits;     /* tl_submit calls made (each draws its requests) */
  uint64_t res_rounds;      /* offer rounds made (each draws its call and grants array) */
  uint64_t f_res[TLO_RF_N]; /* resource features reached */

  /* The retry policy and tags (ops_policy.c): on with the policy bytes. */
  bool policy;
  uint64_t pol_seed;                                 /* chooses what is drawn */
  uint64_t pol_submits, pol_updates, pol_tag_ops;    /* draws made per stream */
  uint64_t f_tag_ops, f_tag_touched, f_no_retry_aborts, f_own_limit_aborts; /* reached */

  /* Demand events (ops_demand.c): on for the programs tlo_demand_chosen picks. */
  bool demand;
  bool d_seen;              /* a demand event came from this scheduler */
  tl_demand d_last;         /* the last one's totals */
  size_t d_balance;         /* taskset_unschedulable minus taskset_schedulable */
  uint64_t d_op_events;     /* demand events of the running operation */
  uint64_t d_op_calls;      /* r->calls when it began */
  uint64_t f_d_demand, f_d_unsched; /* demand and unschedulable events delivered */
  /* Hard placement (ops_placement.c): on with the placement bytes. */
  bool placement;
  uint64_t pl_seed, pl_submits;                      /* chooses what is drawn; draws made */
  uint64_t f_pl_placed, f_pl_blocked, f_pl_waits, f_pl_rescues; /* reached */
  /* Offer shuffle (ops_shuffle.c): on with the shuffle bytes. */
  uint64_t shuffle_state;     /* the model's position of the library's sequence */
  uint64_t f_shuffled_rounds; /* rounds drawn in an order other than the caller's */
  uint64_t f_pool_sets;       /* tl_pool_set calls that changed a pool (same bytes) */
} tlo_run;

/* Demand events (ops_demand.c). */
bool tlo_demand_chosen(const uint8_t header[TLO_HEADER_BYTES]);
void tlo_demand_callbacks(tlo_run *r, tl_callbacks *cb);
void tlo_demand_reset(tlo_run *r);
void tlo_demand_op_begin(tlo_run *r);
void tlo_demand_check(tlo_run *r);

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
  bool no_retry;               /* the update said no_retry: a counted failure aborts */
} mend;

typedef enum abort_why {
  ABORT_FAILURES,
  ABORT_CANCEL,
  ABORT_RESULT_SIZE,
  ABORT_UNSCHEDULABLE, /* index: the task that cannot run; msg: the latest counted failure's */
  ABORT_PAYLOAD,       /* a restore's resolver did not give its payload back */
  ABORT_NOT_RETRIED    /* a counted failure said no_retry */
} abort_why;

/* The retry policy of one submission (ops_policy.c): its own limit, its tags, or a bad one. */
#define TLO_NTAGS 4 /* tags: t0, t1, t2 (which task sets carry), t3 (which none does) */
typedef struct mpol {
  uint32_t max; /* max_task_failures (0: the config's) */
  uint8_t tags; /* bit i: tlo_tag_names[i] */
  uint8_t bad;  /* 0; 1 a tag with a comma, 2 a limit past 65535, 3 a tag twice (TL_EINVAL) */
} mpol;

/* One status update as an operation gives it (tlo_do_update's arguments, for one tid). */
typedef struct mupdate {
  tl_tid tid;
  unsigned state;   /* tl_task_state; past TL_TASK_KILLED invalid */
  unsigned failure; /* tl_end_kind, for FAILED (0, 6, 7 invalid there) */
  const char *msg;  /* the update's message */
  unsigned resmode; /* its result: 0 none, 1 with result_free, 2 without, 3 of size 0 */
  unsigned sizesel; /* its result_size: 0 the mode's own, else one of ops_calls.c's sizes */
} mupdate;

/* TLO_UPDATES' flags: how the batch's call is made. */
enum {
  BATCH_NO_RESULTS = 1 << 0,   /* results NULL */
  BATCH_NULL_ARRAY = 1 << 1,   /* tids NULL, or updates NULL with BATCH_NULL_UPDATES */
  BATCH_NULL_UPDATES = 1 << 2, /* which of the two BATCH_NULL_ARRAY makes NULL */
  BATCH_EMPTY_ID = 1 << 3      /* the executor id "" (TL_EINVAL) */
};

/* Preferred locations of a submission (NULL: tasks NULL). */
typedef struct mprefs {
  uint8_t n[MAXTASKS];         /* per index */
  mpref p[MAXTASKS][MAXPREFS]; /* as given */
  bool bad;                    /* index 0's first preference names the host "" (TL_EINVAL) */
} mprefs;

/* Comparisons with the model: one that differs fails the run. */
#define CMP(r, what, got, want)                                                                    \
  do {                                                                                             \
    uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);                                     \
    if (got_ != want_)                                                                             \
      tlo_fail((r), "%s is %" PRIu64 ", the model says %" PRIu64, (what), got_, want_);            \
  } while (0)

/* CMP for a field of a named object: the name is formatted only when they differ. */
#define CMP_OF(r, kind, name, field, got, want)                                                    \
  do {                                                                                             \
    uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);                                     \
    if (got_ != want_)                                                                             \
      tlo_fail((r), "%s %s %s is %" PRIu64 ", the model says %" PRIu64, (kind), (name), (field),   \
               got_, want_);                                                                       \
  } while (0)

/* ---------------------------------------------------------------------------------------------
 * What the pieces share, by the file that defines it; each comment is at the definition.
 * ------------------------------------------------------------------------------------------- */

/* ops_model.c: the tables operations choose from. */
extern char tlo_long_message[LONG_MESSAGE + 1];
extern char tlo_pool_255[256], tlo_pool_256[257];
extern const char *const tlo_host_names[NHOSTS];
extern const char *const tlo_pool_names[NPOOLNAMES];
#define POOL_DEFAULT 1

/* ops_model.c: small helpers. */
void *tlo_xrealloc(void *p, size_t size);
uint64_t tlo_add_sat(uint64_t a, uint64_t b);
bool tlo_due_at(uint64_t deadline, uint64_t now);
uint64_t tlo_splitmix64(uint64_t *x);

/* ops_model.c: verdicts and traces. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void tlo_fail(tlo_run *r, const char *fmt, ...);
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void tlo_trace(const tlo_run *r, int level, const char *fmt, ...);
void tlo_note_call(tlo_run *r, const char *desc);
void tlo_expect_rc(tlo_run *r, const char *desc, int rc, int want);

/* ops_model.c: expected events. */
mevent *tlo_push_ev(tlo_run *r, ev_type type);
char *tlo_dup_text(const char *s);
void tlo_describe_ev(const tlo_run *r, const mevent *e, char *buf, size_t len);
mevent *tlo_pop_ev(tlo_run *r, ev_type type);
void tlo_drop_events(tlo_run *r);

/* ops_model.c: the model's helpers. */
void tlo_clock_read(tlo_run *r);
bool tlo_live_state(mx_state st);
matt *tlo_att_of(tlo_run *r, tl_tid tid);
matt *tlo_indexed(tlo_run *r, tl_tid tid);
size_t tlo_inflight_where(tlo_run *r, tl_tid **out, const mexec *ex, int frozen, int ts);
void tlo_pend_push(mts *t, uint32_t i);
void tlo_pend_remove(mts *t, uint32_t i);
void tlo_spec_push(mts *t, uint32_t i);
void tlo_spec_remove(mts *t, uint32_t i);
void tlo_make_zombie(tlo_run *r, uint32_t k);
void tlo_abort_ts(tlo_run *r, uint32_t k, abort_why why, uint32_t index, uint32_t failures,
                  const char *msg);
void tlo_finish_if_drained(tlo_run *r, uint32_t k);
void tlo_mark_successful(tlo_run *r, uint32_t k, uint32_t i);
uint64_t tlo_median_of(const mts *t);

/* ops_model.c: attempts ending, executors lost, lookups. */
void tlo_attempt_ended(tlo_run *r, tl_tid tid, const mend *m);
void tlo_push_revive_if_wanted(tlo_run *r);
/* The recovery hold ends when no executor is RECOVERING: revive_offers wanted if anything
 * waits to launch. */
void tlo_recovery_maybe_over(tlo_run *r);
size_t tlo_count_tombstones(const tlo_run *r);
void tlo_remove_executor(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, int exit_code,
                         const char *msg);
void tlo_lose(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, int exit_code, const char *msg);
void tlo_recover(tlo_run *r, mexec *x);
/* An adoption a reconciliation with items is expected to make: tid, task set, index. */
typedef struct tlo_adopt {
  tl_tid tid;
  uint32_t ts, index;
  bool ended; /* reported ended: adopted whatever the cores, taking none */
} tlo_adopt;
tl_tid *tlo_reconciled(tlo_run *r, mexec *x, const tl_tid *tids, size_t n, size_t *nunknown);
/* The same with items (tl_executor_reconcile_items): bad[0 .. nbad) are reported tids whose
 * items disagree with the frozen attempt (never kept); ended, when not 0, a kept tid reported
 * ended (it takes no cores from then on); adopt[0 .. nadopt) are adopted, in order, after the
 * ends and before the kills (the caller chose them to fit). */
tl_tid *tlo_reconciled_items(tlo_run *r, mexec *x, const tl_tid *tids, size_t n,
                             const tl_tid *bad, size_t nbad, tl_tid ended,
                             const tlo_adopt *adopt, size_t nadopt, size_t *nunknown);
void tlo_launch(tlo_run *r, uint32_t k, uint32_t i, mexec *x, bool spec, unsigned level);
mexec *tlo_exec_by_id(tlo_run *r, const char *id);
int tlo_ts_of_payload(const tlo_run *r, const void *payload);
int tlo_active_of(const tlo_run *r, uint32_t stage);
bool tlo_stage_exists(const tlo_run *r, uint32_t stage);

/* ops_exclude.c: exclude on failure. */
bool tlo_xon(const tlo_run *r);
bool tlo_offer_blocked(const tlo_run *r, const mts *t, const mexec *x);
bool tlo_task_blocked(const tlo_run *r, const mts *t, uint32_t i, const mexec *x);
bool tlo_app_blocked(const tlo_run *r, const mexec *x);
void tlo_xf_record(tlo_run *r, uint32_t k, const matt *a, const char *msg);
void tlo_clear_deadlines(tlo_run *r, int feature);
void tlo_xf_taskset_succeeded(tlo_run *r, uint32_t k);
uint64_t tlo_exclude_next_of(const tlo_run *r);

/* ops_locality.c: locality, and tl_tick's answer. */
bool tlo_host_alive(const tlo_run *r, unsigned h);
uint8_t tlo_valid_levels_of(const tlo_run *r, const mts *t);
unsigned tlo_next_level(uint8_t m, unsigned l);
void tlo_executor_changed(tlo_run *r, const mexec *x);
unsigned tlo_allowed_level(tlo_run *r, mts *t);
unsigned tlo_locality_on(const tlo_run *r, const mts *t, uint32_t i, const mexec *x);
int tlo_take_pending(tlo_run *r, const mts *t, const mexec *x, unsigned allowed, unsigned *level);
uint64_t tlo_wait_end(const tlo_run *r, const mts *t, uint64_t since, bool *fired);
uint64_t tlo_loc_next_of(const tlo_run *r);
size_t tlo_count_places(const tlo_run *r);
uint64_t tlo_next_deadline(tlo_run *r);

/* ops_compare.c: the library compared with the model. */
void tlo_check_ledger(tlo_run *r);
void tlo_cmp_exec(tlo_run *r, mexec *x);
void tlo_cmp_ts(tlo_run *r, uint32_t k);
void tlo_compare_all(tlo_run *r, bool top);
void tlo_cb_check(tlo_run *r, int k, mexec *x);

/* ops_calls.c: results, and the calls. */
void tlo_res_free(void *p);
void tlo_do_add(tlo_run *r, mexec *x, unsigned slot, bool fresh, unsigned host, unsigned rackc,
                uint32_t cores);
void tlo_do_lose(tlo_run *r, mexec *x, unsigned kind, bool app, int exit_code, const char *msg);
void tlo_do_heartbeat(tlo_run *r, mexec *x);
void tlo_do_decommission(tlo_run *r, mexec *x, const char *msg);
void tlo_do_submit(tlo_run *r, uint32_t stage, int attempt_sel, uint32_t prio, uint32_t ntasks,
                   uint32_t cpus, unsigned pool, bool shuffle, bool barrier, const mprefs *prefs);
void tlo_do_pool_add(tlo_run *r, unsigned pool, unsigned mode, uint32_t weight, uint32_t min_share,
                     unsigned parent_sel);
/* Makes pool p in the model (parent -1: top level). */
void tlo_pool_make(tlo_run *r, unsigned p, tl_sched_mode mode, uint32_t weight, uint32_t min_share,
                   int parent);
/* A pool's running attempts: its task sets', or for a pool with children its leaves'. */
uint32_t tlo_pool_running(const tlo_run *r, unsigned p);
void tlo_do_kill_task(tlo_run *r, tl_tid tid, bool interrupt, const char *msg);
void tlo_do_kill_stage(tlo_run *r, uint32_t stage, bool interrupt, const char *msg);
void tlo_do_cancel(tlo_run *r, uint32_t stage, const char *msg);
void tlo_do_partition(tlo_run *r, uint32_t stage, uint32_t index);
void tlo_do_update(tlo_run *r, mexec *x, tl_tid tid, unsigned state, unsigned failure,
                   const char *msg, unsigned resmode, unsigned sizesel);
void tlo_do_updates(tlo_run *r, mexec *x, const mupdate *m, size_t n, unsigned flags);
void tlo_do_tick(tlo_run *r);
void tlo_do_inspect(tlo_run *r, mexec *x, uint8_t tsref, uint8_t lensel);
/* tl_executor_reconcile_items: the report as items (tids never launched dropped, one frozen
 * attempt's number changed with d bit 5), and up to d >> 2 & 3 adoptions of pending indices of
 * restored task sets under the next tids while x's cores fit, then one that may not fit. */
void tlo_do_reconcile_items(tlo_run *r, mexec *x, const tl_tid *tids, size_t n, size_t ucap,
                            unsigned flags, uint8_t d);
void tlo_do_reconcile(tlo_run *r, mexec *x, const tl_tid *tids, size_t n, size_t ucap,
                      unsigned flags);
void tlo_do_snapshot_restore(tlo_run *r, const tlo_op *op);

/* ops_offer.c: the offer round. */
void tlo_do_offer(tlo_run *r, mexec **xs, const uint32_t *cores, size_t n, size_t cap, bool bad);
void tlo_do_offer_alive(tlo_run *r, uint32_t cores, size_t cap, bool all);

/* ops_apply.c: the callbacks, and resolving and applying an operation. */
void tlo_cb_task_started(void *ud, const tl_task_info *t);
void tlo_cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end);
void tlo_cb_speculative(void *ud, const tl_taskset_info *ts, uint32_t index);
void tlo_cb_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason);
void tlo_cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload);
void tlo_cb_executor_added(void *ud, const char *id, const char *host);
void tlo_cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *why);
void tlo_cb_executor_removed(void *ud, const char *id, void *executor_ud,
                             const tl_loss_reason *why);
void tlo_cb_revive(void *ud);
void tlo_cb_kill(void *ud, tl_tid tid, const char *id, void *executor_ud, bool interrupt,
                 const char *reason);
mexec *tlo_resolve_exec(tlo_run *r, uint8_t v);
tl_tid tlo_resolve_tid(tlo_run *r, uint8_t sel);
void tlo_apply_top(tlo_run *r, const tlo_op *op);
/* With deferred delivery, calls tl_dispatch until nothing is left (a callback's calls queue
 * their events for the next one), as a top-level call's end; with inline delivery, nothing. */
void tlo_dispatch_all(tlo_run *r);
/* The callbacks every scheduler of the run gets (r->cb), the resolvers included. */
const tl_callbacks *tlo_callbacks(tlo_run *r);
/* A tl_snapshot writer that keeps nothing. */
int tlo_discard_image(void *ud, const void *buf, size_t n);

/* ops_resource.c: resources. */
void tlo_res_config(tlo_run *r, const uint8_t ext[TLO_RESOURCE_BYTES]);
mdecl tlo_res_draw_decl(tlo_run *r);
mreq tlo_res_draw_req(tlo_run *r);
void tlo_res_round(tlo_run *r, bool *with_grants, size_t *gcap);
size_t tlo_res_decl_desc(const mdecl *d, tl_resource out[NRKINDS]);
size_t tlo_res_req_desc(const mreq *q, tl_resource_request out[NRKINDS]);
uint32_t tlo_res_fit_count(const mexec *x, const mts *t, uint32_t limit);
bool tlo_res_fits(const mexec *x, const mts *t);
void tlo_res_grant(tlo_run *r, mexec *x, const mts *t, matt *a);
void tlo_res_unbook(tlo_run *r, matt *a);
void tlo_res_compare(tlo_run *r);
void tlo_res_cmp_grants(tlo_run *r, const char *what, const tl_grant *g, uint32_t n, const matt *a);

/* ops_shuffle.c: the offer shuffle. */
void tlo_shuffle_config(tlo_run *r, const uint8_t ext[TLO_SHUFFLE_BYTES]);
/* One round's drawn order, on its caller's stack (a round's callbacks may make rounds too). */
typedef struct tlo_drawn {
  size_t from[NSLOTS * MAXGEN];   /* position -> the caller's offer */
  mexec *xs[NSLOTS * MAXGEN];     /* the offers' executors in that order */
  uint32_t cores[NSLOTS * MAXGEN]; /* and their cores */
} tlo_drawn;
/* The next round's order of the caller's n offers; moves the model's sequence on. */
void tlo_shuffle_draw(tlo_run *r, mexec **caller_xs, const uint32_t *caller_cores, size_t n,
                      tlo_drawn *d);
/* tl_pool_set of tlo_pool_names[pool] (runs with the shuffle bytes only). */
void tlo_do_pool_set(tlo_run *r, unsigned pool, unsigned mode, uint32_t weight,
                     uint32_t min_share);

/* ops_policy.c: the retry policy and tags. */
extern const char *const tlo_tag_names[TLO_NTAGS];
void tlo_pol_config(tlo_run *r, const uint8_t ext[TLO_POLICY_BYTES]);
mpol tlo_pol_draw_submit(tlo_run *r);
bool tlo_pol_draw_no_retry(tlo_run *r, unsigned state);
/* -1: the stage operation; 0 .. TLO_NTAGS - 1 a tag; TLO_NTAGS the invalid tag "". */
int tlo_pol_draw_tag_op(tlo_run *r);
/* A submission's tags as tl_taskset_desc takes them (a bad one written into bad_tag). */
size_t tlo_pol_desc(const mpol *p, const char **tags, char *bad_tag, size_t len);
void tlo_do_tag(tlo_run *r, int tag, bool cancel, bool interrupt, const char *msg);
void tlo_pol_cmp_ts(tlo_run *r, const mts *t, const tl_taskset_status *st);

/* ops_placement.c: hard placement. */
void tlo_pl_config(tlo_run *r, const uint8_t ext[TLO_PLACEMENT_BYTES]);
mpl tlo_pl_draw_submit(tlo_run *r, bool barrier);
/* Its fields of tl_taskset_desc (names written into execs). */
void tlo_pl_desc(const tlo_run *r, const mpl *p, tl_taskset_desc *d, const char *execs[2],
                 const char *hosts[NHOSTS]);
/* Whether t may not launch on the ALIVE executor x now. */
bool tlo_pl_blocked(tlo_run *r, const mts *t, const mexec *x);
/* After a round (launched_from: the first attempt the round made). */
void tlo_pl_after_round(tlo_run *r, size_t launched_from);
/* An executor became ALIVE. */
void tlo_pl_executor_added(tlo_run *r, const mexec *x);
void tlo_pl_cmp_ts(tlo_run *r, const mts *t, const tl_taskset_status *st);
size_t tlo_pl_waiting(const tlo_run *r);

/* ops_codec.c: the program's bytes. */
void tlo_emit(tlo_run *r, const uint8_t *bytes, size_t n);

/* ops_gen.c: the generator. */
void tlo_gen_op(tlo_run *r, tlo_op *op);

#endif /* TLO_OPS_INTERNAL_H */
