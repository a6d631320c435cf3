/* The operation layer shared by the seeded randomized runs (test_random.c, tl-random) and the
 * fuzzer (test/fuzz/fuzz_ops.c): operations on one scheduler drawn from small domains, a decoder
 * from bytes, a seeded generator and an encoder, and an applier that checks every call, every
 * event and every counter against a reference model kept independently of the library.
 */
#ifndef TLO_OPS_H
#define TLO_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "taskledger.h"

/* What one operation does. The byte that encodes a kind is taken modulo TLO_NKINDS. */
typedef enum tlo_kind {
  TLO_ADD = 0,           /* tl_executor_add */
  TLO_LOSE = 1,          /* tl_executor_lost, any loss kind (and an invalid one) */
  TLO_HEARTBEAT = 2,     /* tl_executor_heartbeat of one executor */
  TLO_HEARTBEAT_ALL = 3, /* a heartbeat from every executor that can send one */
  TLO_DECOMMISSION = 4,  /* tl_executor_decommission */
  TLO_SUBMIT = 5,        /* tl_submit */
  TLO_KILL_TASK = 6,     /* tl_kill_task */
  TLO_KILL_STAGE = 7,    /* tl_kill_stage */
  TLO_CANCEL_STAGE = 8,  /* tl_cancel_stage */
  TLO_PARTITION = 9,     /* tl_partition_completed */
  TLO_OFFER = 10,        /* tl_resource_offers with up to TLO_MAX_OFFERS chosen offers */
  TLO_OFFER_ALL = 11,    /* tl_resource_offers naming every executor the run has known */
  TLO_UPDATE = 12,       /* tl_status_update: RUNNING, FINISHED, FAILED, KILLED or invalid */
  TLO_CLOCK = 13,        /* moves the manual clock (forward, or back a little); no call */
  TLO_TICK = 14,         /* tl_tick, its answer checked */
  TLO_INSPECT = 15,      /* tl_executor_get, tl_taskset_get and tl_explain_taskset */
  TLO_POOL_ADD = 16,     /* tl_pool_add or tl_pool_add_child (TL_FAIR; TL_ESTATE under TL_FIFO) */
  TLO_UPDATES = 17,      /* tl_status_updates: a batch of one executor's updates */
  TLO_SNAPSHOT = 18,     /* tl_snapshot, tl_scheduler_free, tl_scheduler_restore: a failover */
  TLO_RECONCILE = 19,    /* tl_executor_reconcile of a restored (RECOVERING) executor */
  TLO_NKINDS = 20
} tlo_kind;

#define TLO_MAX_OFFERS 4 /* offers one TLO_OFFER names */
#define TLO_MAX_BATCH 8  /* updates one TLO_UPDATES makes */
#define TLO_MAX_OPS 1024 /* operations a decoded input runs at most */

/* Bits of tlo_op.reent: what the callbacks made while this operation runs do re-entrantly.
 * "First" means once per top-level operation, whichever callback of its cascade comes first. */
enum {
  TLO_RE_SUBMIT = 1 << 0,  /* the first task_ended submits a task set (stage from re_arg) */
  TLO_RE_OFFER = 1 << 1,   /* the first revive_offers offers every ALIVE executor */
  TLO_RE_KILLED = 1 << 2,  /* every kill_task is answered at once with a KILLED update */
  TLO_RE_RUNNING = 1 << 3, /* every task_started is answered with a RUNNING update */
  TLO_RE_FREE = 1 << 4,    /* the first callback tries tl_scheduler_free (TL_EBUSY) */
  TLO_RE_POKE = 1 << 5,    /* every executor_lost and executor_removed heartbeats the executor
                              (refused), and the first task_ended loses its attempt's executor */
  TLO_RE_FINISH = 1 << 6,  /* the first task_started is answered with a FINISHED update */
  TLO_RE_TICK = 1 << 7     /* the first callback runs tl_tick */
};

/* One operation. Every field is a raw byte; the applier reduces each to its domain when it
 * runs, against the model's state at that moment (an attempt reference picks among the attempts
 * in flight then), so any byte string is a valid program and a program replays exactly.
 *   exec:  an executor: slot = exec & 7, back = (exec >> 3) & 3; back 0..2 names generation
 *          latest - back of that slot ("e<slot>.<gen>"), back 3 an id never registered.
 *   tid:   an attempt: 0-127 one in the tid index (sel/128 of the way along them, in tid
 *          order), 128-159 one frozen, 160-223 any tid launched, 224-255 a tid never launched
 *          (0 or past the last).
 *   stage: stage id modulo 6; for kill and cancel 6 names a stage never used.
 *   a, b, c, d, flags, msg: per kind, see ops_codec.c (tlo_fields). msg: 0 none, 1-2 short, 3 long.
 *   offer_exec, offer_cores, noffers: the offers of TLO_OFFER.
 *   nupd, upd_tid, upd_how, upd_res: the updates of TLO_UPDATES (see ops_codec.c).
 *   reent, re_arg: re-entrant behaviour (TLO_RE_*) and its argument. */
typedef struct tlo_op {
  uint8_t kind;                        /* tlo_kind, modulo TLO_NKINDS */
  uint8_t exec;                        /* an executor reference */
  uint8_t tid;                         /* an attempt reference */
  uint8_t stage;                       /* a stage */
  uint8_t a;                           /* kind-specific numbers */
  uint8_t b;                           /* ... */
  uint8_t c;                           /* ... */
  uint8_t d;                           /* ... (a pool, a result size) */
  uint8_t flags;                       /* kind-specific booleans */
  uint8_t msg;                         /* a message or reason */
  uint8_t noffers;                     /* TLO_OFFER: offers, modulo TLO_MAX_OFFERS + 1 */
  uint8_t offer_exec[TLO_MAX_OFFERS];  /* their executors */
  uint8_t offer_cores[TLO_MAX_OFFERS]; /* their cores, modulo 5 */
  uint8_t nupd;                        /* TLO_UPDATES: updates, modulo TLO_MAX_BATCH + 1 */
  uint8_t upd_tid[TLO_MAX_BATCH];      /* each one's attempt, by the batch's executor */
  uint8_t upd_how[TLO_MAX_BATCH];      /* each one's state, failure kind and message */
  uint8_t upd_res[TLO_MAX_BATCH];      /* each one's result mode and size */
  uint8_t reent;                       /* TLO_RE_* bits */
  uint8_t re_arg;                      /* their argument */
} tlo_op;

/* A program: four header bytes that choose the configuration (the first two: failures, cores,
 * timeouts, tombstones; the last two: TL_FAIR, speculation and its settings, max_result_bytes),
 * how the run ends and whether it journals its calls (to a sink that reads and drops each line,
 * unless tlo_options names a journal), then the operations. */
#define TLO_HEADER_BYTES 4
/* Optionally, right after the header: two bytes, the first at least TLO_EXCLUDE_MARK (no
 * generated operation starts so), that turn exclude_on_failure on and choose its thresholds and
 * timeouts. Programs without them run as before exclusion existed. */
#define TLO_EXCLUDE_BYTES 2
#define TLO_EXCLUDE_MARK 0xc0

/* Optionally, after the header and the exclusion bytes: two bytes, the first in
 * [TLO_RESOURCE_MARK, TLO_EXCLUDE_MARK) (no generated operation starts so, and no operation of
 * the stored corpus), that turn resources on (ops_resource.c): executors declare "gpu" and
 * "fpga" addresses and a profile, task sets ask for whole addresses or shares and a profile,
 * offer rounds go through tl_resource_offers_grants or tl_resource_offers, all drawn from these
 * bytes. Programs without them run as before resources existed. */
#define TLO_RESOURCE_BYTES 2
#define TLO_RESOURCE_MARK 0xa0

/* Optionally, after those: two bytes, the first in [TLO_POLICY_MARK, TLO_SPEC_MARK) (no
 * generated operation starts so, and no operation of the stored corpus), that turn the retry
 * policy and tags on (ops_policy.c): task sets' own max_task_failures and tags, no_retry
 * failures, kill and cancel by tag, all drawn from these bytes. Programs without them run as
 * before those features existed. */
#define TLO_POLICY_BYTES 2
#define TLO_POLICY_MARK 0x80
/* Optionally, after those: two bytes, the first in [TLO_SPEC_MARK, TLO_RESOURCE_MARK), that
 * choose speculation's duration threshold and decommission kill interval (with speculation on;
 * ops_run.c, spec_config). Programs without them run as before those settings existed. */
#define TLO_SPEC_BYTES 2
#define TLO_SPEC_MARK 0x90
/* Optionally, after those: two bytes, the first in [TLO_PLACEMENT_MARK, TLO_PLACEMENT_MARK +
 * 0x10) (no generated operation starts so: kinds are below TLO_NKINDS; and no program of the
 * stored corpus has such a byte there), that turn hard placement on (ops_placement.c): task sets
 * get allowed executors and hosts and a spread, all drawn from these bytes. Programs without
 * them run as before hard placement existed. */
#define TLO_PLACEMENT_BYTES 2
#define TLO_PLACEMENT_MARK 0x60
/* Optionally, after those: two bytes, the first in [TLO_SHUFFLE_MARK, TLO_SHUFFLE_MARK + 0x10)
 * (no generated operation starts so, and no program of the stored corpus has such a byte
 * there), that turn the offer shuffle on and choose its seed (ops_shuffle.c). Programs without
 * them run as before the shuffle existed. */
#define TLO_SHUFFLE_BYTES 2
#define TLO_SHUFFLE_MARK 0x70

typedef struct tlo_options {
  int verbose; /* 0 quiet; 1 one line per operation; 2 and every event */
  FILE *trace; /* where the trace goes; NULL = stdout */
  /* Passed to tl_config.journal and journal_ud (NULL = no journal). */
  void (*journal)(void *ud, const char *line);
  void *journal_ud;
  /* If encoded is not NULL, the program run is written there as bytes (tlo_run_bytes replays
   * it), up to encoded_cap bytes; *encoded_len gets the full length, even when cut. */
  uint8_t *encoded;
  size_t encoded_cap;
  size_t *encoded_len;
  /* The generator makes no TLO_SNAPSHOT or TLO_RECONCILE (runs whose journals must replay). */
  bool no_failover;
} tlo_options;

/* Exclusion features a run reached (tlo_outcome.exclusion). */
enum {
  TLO_XF_COUNTED,         /* counted failures recorded for exclusion */
  TLO_XF_INDEX_EXEC,      /* an index excluded on an executor */
  TLO_XF_INDEX_NODE,      /* an index excluded on a node */
  TLO_XF_TS_EXEC,         /* an executor excluded for a task set */
  TLO_XF_TS_NODE,         /* a node excluded for a task set */
  TLO_XF_SKIPS,           /* pending indices passed over by an offer for their exclusion */
  TLO_XF_SPEC_SKIPS,      /* speculative copies passed over for their exclusion */
  TLO_XF_BLOCKED,         /* offers a task set passed over, excluded for it */
  TLO_XF_APP_EXEC,        /* executors excluded for the application */
  TLO_XF_APP_NODE,        /* nodes excluded for the application */
  TLO_XF_EXPIRED,         /* application exclusions ended by tl_tick */
  TLO_XF_EXCLUDED_OFFERS, /* offers from excluded executors */
  TLO_XF_DEADLINES,       /* unschedulable deadlines started */
  TLO_XF_CLEARED_LAUNCH,  /* deadlines cleared by a launch */
  TLO_XF_CLEARED_ADD,     /* deadlines cleared by a new executor */
  TLO_XF_ABORT_NOW,       /* unschedulable task sets aborted at once (every executor busy) */
  TLO_XF_ABORT_TICK,      /* unschedulable task sets aborted by tl_tick */
  TLO_XF_N
};

/* Resource features a run reached (tlo_outcome.resources). */
enum {
  TLO_RF_EXECUTORS,   /* executors registered with resources */
  TLO_RF_REQUESTS,    /* task sets submitted with requests */
  TLO_RF_LAUNCHES,    /* launches that hold addresses */
  TLO_RF_SHARED,      /* of which of a share */
  TLO_RF_GRANT_CALLS, /* rounds made through tl_resource_offers_grants */
  TLO_RF_GCAP_STOPS,  /* rounds cut short by the grants array */
  TLO_RF_NO_FIT,      /* slots passed over for their profile or addresses */
  TLO_RF_BARRIERS,    /* barrier task sets with requests launched whole */
  TLO_RF_REFUSED,     /* malformed declarations and requests refused (TL_ERESOURCE) */
  TLO_RF_N
};

/* What a run did, and the first disagreement if any. */
typedef struct tlo_outcome {
  bool ok;            /* every check held */
  size_t ops;         /* operations applied, the failing one included */
  size_t failed_op;   /* index of the operation that failed; ops run for the end phase;
                         SIZE_MAX when ok */
  uint64_t calls;     /* library calls made (re-entrant ones included) */
  uint64_t events;    /* callbacks delivered and checked */
  uint64_t launched;  /* attempts launched */
  uint64_t reentrant; /* calls made from inside callbacks */
  uint64_t errors;    /* calls that returned an error the model expected */
  /* Batches of status updates. */
  uint64_t batches;       /* tl_status_updates calls */
  uint64_t batch_updates; /* updates those calls carried */
  uint64_t deferred;      /* 1 if the run delivered deferred (tl_dispatch after each call) */
  uint64_t dispatched;    /* events tl_dispatch delivered in it */
  /* How often the policy features were reached (events predicted and then checked). */
  uint64_t spec_submitted;   /* speculative_task_submitted */
  uint64_t spec_threshold;   /* of them, by the duration threshold before the quantile */
  uint64_t spec_decom;       /* of them, by the decommission kill interval alone */
  bool spec_settings;        /* the run set the threshold or the kill interval */
  uint64_t spec_launches;    /* speculative copies launched */
  uint64_t lost_races;       /* kill_task for the losing copy of a speculated index */
  uint64_t late_reports;     /* updates from such losers after the kill */
  uint64_t too_large;        /* attempts ended TL_END_RESULT_TOO_LARGE */
  uint64_t resubmitted;      /* TL_END_RESUBMITTED */
  uint64_t barrier_launches; /* barrier task sets launched (whole) */
  uint64_t fair_rounds;      /* offer rounds that visited more than one pool */
  uint64_t nested_pools;     /* pools added inside another */
  uint64_t nested_rounds;    /* offer rounds that visited leaf pools below the top level */
  uint64_t auto_pools;       /* pools tl_submit made for unknown names (pool_auto_create) */
  /* Locality (docs/locality.md). */
  uint64_t loc_launches[5]; /* launches of task sets with preferences, per tl_locality */
  uint64_t waits_out;       /* levels left because their wait ran out (at an offer) */
  uint64_t level_skips;     /* levels skipped at once: nothing to launch there */
  uint64_t timer_resets;    /* SPARK-18886 resets after a turn */
  uint64_t recomputes;      /* valid levels or the level changed with an executor */
  uint64_t wait_revives;    /* revive_offers from tl_tick for a wait that ran out */
  /* Exclusion (exclude_on_failure), TLO_XF_*. */
  uint64_t exclusion[TLO_XF_N];
  /* Failover (docs/snapshot.md). */
  uint64_t restores;          /* snapshots restored into the scheduler the run went on with */
  uint64_t restore_refusals;  /* restores refused as predicted (TL_EIO, TL_ESNAPSHOT, ...) */
  uint64_t snapshot_errors;   /* tl_snapshot refused as predicted (TL_EIO, TL_EINVAL, TL_EBUSY) */
  uint64_t recovering;        /* executors made RECOVERING by a restore */
  uint64_t payloads_lost;     /* task sets whose payload the resolver did not give back */
  uint64_t reconcile_calls;   /* tl_executor_reconcile calls, whatever they answered */
  uint64_t reconciles;        /* tl_executor_reconcile calls that succeeded */
  uint64_t reconcile_lost;    /* attempts they ended (not reported) */
  uint64_t reconcile_unknown; /* tids they answered unknown (each killed) */
  uint64_t reconcile_adopted; /* attempts reconciliations with items adopted */
  uint64_t reracks;           /* reconciled onto the rack another executor gave their host */
  uint64_t recovery_timeouts; /* restored executors tl_tick lost to recovery_timeout_ns */
  /* Resources (TLO_RF_*); all 0 without the resource bytes. */
  bool resources;
  uint64_t resource_features[TLO_RF_N];
  /* The retry policy and tags; all 0 without the policy bytes. */
  bool policy;
  uint64_t tag_ops;          /* tl_cancel_tag and tl_kill_tag calls that passed their checks */
  uint64_t tag_touched;      /* task sets they touched */
  uint64_t no_retry_aborts;  /* task sets aborted by a no_retry failure */
  uint64_t own_limit_aborts; /* task sets aborted at a max_task_failures of their own */
  /* Demand events (ops_demand.c); all 0 for the programs that run without them. */
  bool demand;
  uint64_t demand_events;        /* demand_changed delivered */
  uint64_t unschedulable_events; /* taskset_unschedulable delivered */
  /* Hard placement (ops_placement.c). */
  bool placement;       /* the run had the placement bytes */
  uint64_t pl_placed;   /* task sets submitted with a placement */
  uint64_t pl_blocked;  /* slots an offer round's pass turned away for placement */
  uint64_t pl_waits;    /* task sets that came to wait: no live executor satisfied them */
  uint64_t pl_rescues;  /* of which an executor that joined rescued */
  /* The offer shuffle; 0 without the shuffle bytes. */
  bool shuffle;
  uint64_t shuffled_rounds; /* offer rounds drawn in an order other than the caller's */
  uint64_t pool_sets;       /* tl_pool_set calls that changed a pool (same runs) */
  char message[4096]; /* the disagreement, with the operation that showed it */
  bool has_final;     /* the run reached tl_scheduler_free: */
  tl_stats final;     /* tl_stats just before it */
} tlo_outcome;

/* Runs a generated program: seed picks the configuration and, step by step from the model's
 * state, nops operations; then the end phase (drain, or tl_scheduler_free with work left).
 * opt may be NULL. */
void tlo_run_seed(uint64_t seed, size_t nops, const tlo_options *opt, tlo_outcome *out);

/* Runs the program that data encodes (TLO_HEADER_BYTES, then operations until the bytes run
 * out or TLO_MAX_OPS); a cut operation at the end is dropped. Any input is valid. */
void tlo_run_bytes(const uint8_t *data, size_t size, const tlo_options *opt, tlo_outcome *out);

/* Encodes one operation (the fields its kind uses) into buf; returns the bytes it takes, which
 * may exceed cap (then nothing is written). */
size_t tlo_encode_op(const tlo_op *op, uint8_t *buf, size_t cap);

/* Decodes one operation from data; returns the bytes used, 0 if data is too short. */
size_t tlo_decode_op(const uint8_t *data, size_t size, tlo_op *op);

/* A one-line description of an operation's bytes (not resolved against a model). */
void tlo_op_describe(const tlo_op *op, char *buf, size_t len);

/* The mutated-snapshot runs (tl-random --snapshot-fuzz, test_random.c): a generated run of nops
 * operations that, at steps chosen from the seed, takes a snapshot, mutates a copy of it (bytes
 * flipped, cut short, a field overwritten; half the time with both checksums made right again, so
 * the semantic validation is what refuses it) and restores the copy with the run's config: the
 * restore must refuse (TL_ESNAPSHOT, TL_EVERSION, TL_ECONFIG, TL_ENOMEM) with *out NULL and no
 * callback, or give a scheduler that passes tl_check and drains to nothing (every executor lost,
 * every stage cancelled, the tombstones expired) with its memory back to an empty scheduler's.
 * The run itself goes on, checked against the model as tlo_run_seed's. */
typedef struct tlo_fuzz_outcome {
  bool ok;             /* every check held */
  char message[4096];  /* the first failure, or "ok" */
  uint64_t tries;      /* mutated images restored */
  uint64_t fixed;      /* of which with the checksums made right */
  uint64_t refused[5]; /* refusals: TL_ESNAPSHOT, TL_EVERSION, TL_ECONFIG, TL_ENOMEM, other */
  uint64_t accepted;   /* restores that gave a scheduler (then drained) */
  uint64_t tasksets;   /* task sets those held (taskset_restored calls) */
  uint64_t lost;       /* executors they held, lost by the drain */
} tlo_fuzz_outcome;

void tlo_snapshot_fuzz(uint64_t seed, size_t nops, size_t mutations, tlo_fuzz_outcome *out);

#endif /* TLO_OPS_H */
