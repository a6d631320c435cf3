/* taskledger: an embeddable task-scheduler core.
 *
 * This header is the whole public API. A cluster runtime (a driver process that hands work to
 * executor processes) calls it when task sets are submitted, when executors offer free cores,
 * when executors report task status, and when executors join, go quiet or die. The library
 * decides which task runs where and keeps the bookkeeping of every running task so exactly that
 * nothing is retained after it stops mattering.
 *
 * Conventions that hold for every function below unless its comment says otherwise:
 *   - 0 (TL_OK) is success; errors are negative TL_E* codes from one table.
 *   - Arguments are validated before anything changes. An error return means nothing changed
 *     (apart from the counters a comment names) and no callback ran for that call. TL_ENOMEM
 *     leaves the scheduler as it was; only internal table capacity may have grown.
 *   - Every function is thread-safe: one mutex per scheduler serialises them.
 *   - No callback ever runs while that mutex is held. Events are queued under it and delivered
 *     after it is released by the serial dispatcher (see tl_callbacks), so any function may be
 *     called from inside a callback, except tl_scheduler_free, which then returns TL_EBUSY.
 *   - Strings passed in are copied; the caller may free them when the call returns (the
 *     launches of tl_resource_offers point at their offers' id strings, see tl_launch). Strings
 *     passed to a callback are valid until that callback returns.
 *   - No function blocks on anything but the scheduler's mutex.
 */
#ifndef TASKLEDGER_H
#define TASKLEDGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#if defined(TL_BUILDING_SHARED)
#define TL_EXTERN __declspec(dllexport)
#elif defined(TL_USING_SHARED)
#define TL_EXTERN __declspec(dllimport)
#else
#define TL_EXTERN /* nothing */
#endif
#elif __GNUC__ >= 4
#define TL_EXTERN __attribute__((visibility("default")))
#else
#define TL_EXTERN /* nothing */
#endif

#define TL_VERSION_MAJOR 0
#define TL_VERSION_MINOR 2
#define TL_VERSION_PATCH 0
#define TL_VERSION_HEX ((TL_VERSION_MAJOR << 16) | (TL_VERSION_MINOR << 8) | TL_VERSION_PATCH)

/* Executor ids are 1 to TL_ID_MAX - 1 bytes; host and rack names 1 to TL_HOST_MAX - 1. The
 * ledger keeps each id at its own length: a longer bound costs a short id nothing. */
#define TL_ID_MAX 256
#define TL_HOST_MAX 256

/* Resources beyond cores (docs/api.md "Resources"): an executor declares named resources, each
 * with its addresses (gpu "0" .. "7"); a task set asks each task for whole addresses or for a
 * share 1/k of one. A resource name is 1 to TL_RESOURCE_NAME_MAX - 1 bytes of [A-Za-z0-9_.-];
 * an address 1 to TL_ADDRESS_MAX - 1 bytes of printable ASCII but space, ',', '"' and '\\'. An
 * executor declares at most TL_RESOURCES_MAX resources of at most TL_RESOURCE_ADDRESSES_MAX
 * addresses each; a task set asks for at most TL_RESOURCES_MAX of them; a share is 1/k with k
 * at most TL_SHARE_MAX; a task holds at most TL_TASK_GRANTS_MAX addresses in all (its requests'
 * amounts summed). The ledger counts use in units of TL_SHARE_UNIT per whole address (the least
 * common multiple of 1 .. TL_SHARE_MAX), so every share is exact. */
#define TL_RESOURCE_NAME_MAX 64
#define TL_ADDRESS_MAX 64
#define TL_RESOURCES_MAX 16
#define TL_RESOURCE_ADDRESSES_MAX 1024
#define TL_SHARE_MAX 32
#define TL_TASK_GRANTS_MAX 16
#define TL_SHARE_UNIT UINT64_C(144403552893600)

/* Task set tags (tl_taskset_desc.tags; Spark's job tags and job groups): a tag is 1 to
 * TL_TAG_MAX - 1 bytes of printable ASCII (0x21 to 0x7e) but ',', '"' and '\\'; a task set
 * carries at most TL_TAGS_MAX distinct tags. tl_cancel_tag and tl_kill_tag act on every task
 * set that carries one. */
#define TL_TAG_MAX 128
#define TL_TAGS_MAX 16

/* Hard placement (tl_taskset_desc.allowed_executors, allowed_hosts and spread; Ray's
 * NodeAffinitySchedulingStrategy(soft=False) and STRICT_SPREAD; docs/api.md "Hard placement"):
 * a task set names at most TL_PLACE_MAX executor ids (each 1 to TL_ID_MAX - 1 bytes) and at most
 * TL_PLACE_MAX host names (each 1 to TL_HOST_MAX - 1 bytes), each list without repeats. */
#define TL_PLACE_MAX 64

/* Anti-affinity of a task set (tl_taskset_desc.spread): at most one running attempt of the task
 * set per host, or per executor. */
typedef enum tl_spread {
  TL_SPREAD_NONE = 0,     /* no limit */
  TL_SPREAD_HOST = 1,     /* at most one running attempt of the task set on each host */
  TL_SPREAD_EXECUTOR = 2  /* at most one running attempt of the task set on each executor */
} tl_spread;

/* tl_tick's answer when nothing is due, ever (a deadline at or beyond UINT64_MAX never is). */
#define TL_TICK_NEVER UINT64_MAX
/* A per-level locality wait (tl_config.locality_wait_*_ns) that takes locality_wait_ns. */
#define TL_WAIT_INHERIT UINT64_MAX

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */

/* XX(name, value, sentence). The table generates the enum, tl_err_name and tl_strerror. */
#define TL_ERRNO_MAP(XX)                                                                           \
  XX(EINVAL, -1, "An argument is invalid.")                                                        \
  XX(ENOMEM, -2, "Out of memory; the scheduler is unchanged.")                                     \
  XX(ENOENT, -3, "No such executor, task set or stage is known.")                                  \
  XX(EEXIST, -4, "It already exists.")                                                             \
  XX(ESTALE, -5, "The task id is unknown, already finished, or frozen on a lost executor.")        \
  XX(EOWNER, -6, "The task is run by another executor.")                                           \
  XX(EGONE, -7, "The executor has been removed; a restarted executor takes a new id.")             \
  XX(ESTATE, -8, "The operation is not valid in the object's current state.")                      \
  XX(EBUSY, -9, "The scheduler is busy: called from a callback, or in use elsewhere.")             \
  XX(ECORRUPT, -10, "An invariant of the ledger is broken.")                                       \
  XX(EIO, -11, "Reading or writing a snapshot failed.")                                            \
  XX(ESNAPSHOT, -12, "The snapshot is truncated or corrupt.")                                      \
  XX(EVERSION, -13, "The snapshot is of another format version.")                                  \
  XX(ECONFIG, -14, "The snapshot was taken with another configuration.")                          \
  XX(ERESOURCE, -15, "A resource declaration or request is malformed.")

typedef enum tl_errno {
  TL_OK = 0,
#define TL__ERRNO_ENUM(name, value, sentence) TL_##name = (value),
  TL_ERRNO_MAP(TL__ERRNO_ENUM)
#undef TL__ERRNO_ENUM
} tl_errno;

/* The code's name without the prefix ("EOWNER"; "OK" for 0; "UNKNOWN" for other values).
 * Never NULL; the string is static. */
TL_EXTERN const char *tl_err_name(int err);

/* A sentence describing the code; never NULL; static. Unknown codes get "Unknown error." */
TL_EXTERN const char *tl_strerror(int err);

/* TL_VERSION_HEX of the library linked in, and "0.2.0". */
TL_EXTERN unsigned int tl_version(void);
TL_EXTERN const char *tl_version_string(void);

/* ---------------------------------------------------------------------------------------------
 * Allocator
 * ------------------------------------------------------------------------------------------- */

/* Replaces the functions every allocation of the library goes through (process-wide). All four
 * must be given. Allowed only while no scheduler exists: TL_EBUSY otherwise, TL_EINVAL for a
 * NULL function. Each scheduler still accounts its own live bytes and blocks (tl_stats). */
TL_EXTERN int tl_replace_allocator(void *(*malloc_fn)(size_t), void *(*realloc_fn)(void *, size_t),
                                   void *(*calloc_fn)(size_t, size_t), void (*free_fn)(void *));

/* ---------------------------------------------------------------------------------------------
 * Plain types
 * ------------------------------------------------------------------------------------------- */

typedef uint64_t tl_tid;        /* one task attempt: from 1, never reused by a scheduler */
typedef uint64_t tl_taskset_id; /* one task set (one attempt of one stage): from 1, never reused */

typedef struct tl_scheduler tl_scheduler; /* opaque */

/* Locality of a launch, best first (Spark's TaskLocality). Tasks without preferred locations
 * launch at TL_NO_PREF. */
#define TL_LOCALITY_MAP(XX)                                                                        \
  XX(PROCESS_LOCAL, 0)                                                                             \
  XX(NODE_LOCAL, 1)                                                                                \
  XX(NO_PREF, 2)                                                                                   \
  XX(RACK_LOCAL, 3)                                                                                \
  XX(ANY, 4)

typedef enum tl_locality {
#define TL__LOCALITY_ENUM(name, value) TL_##name = (value),
  TL_LOCALITY_MAP(TL__LOCALITY_ENUM)
#undef TL__LOCALITY_ENUM
} tl_locality;

/* How a task attempt ended, as task_ended reports it and a FAILED update names it. */
/* XX(name, value): the table generates the enum and tl_end_kind_name.
 *   SUCCESS           FINISHED; the result comes with it
 *   EXCEPTION         the task threw: counts toward max_task_failures
 *   FETCH_FAILED      a shuffle input is missing: makes the task set zombie, no count
 *   KILLED            killed on request: does not count
 *   COMMIT_DENIED     output commit refused: does not count
 *   RESULT_LOST       the result could not be fetched: counts
 *   EXECUTOR_LOST     its executor was lost: counts only if caused by the app and the attempt had
 *                     reached RUNNING; never given in a status update
 *   RESUBMITTED       a done index of an active shuffle-map task set whose output was on a lost
 *                     executor: pending again (the task is the attempt that wrote it: its tid,
 *                     attempt, locality and speculative flag, so that tid, which ended SUCCESS,
 *                     ends a second time); does not count; never given in an update
 *   RESULT_TOO_LARGE  FINISHED, but the task set's results passed max_result_bytes: the library
 *                     freed the result (result_free) and aborted the task set; does not count;
 *                     never given in a status update */
#define TL_END_KIND_MAP(XX)                                                                        \
  XX(SUCCESS, 0)                                                                                   \
  XX(EXCEPTION, 1)                                                                                 \
  XX(FETCH_FAILED, 2)                                                                              \
  XX(KILLED, 3)                                                                                    \
  XX(COMMIT_DENIED, 4)                                                                             \
  XX(RESULT_LOST, 5)                                                                               \
  XX(EXECUTOR_LOST, 6)                                                                             \
  XX(RESUBMITTED, 7)                                                                               \
  XX(RESULT_TOO_LARGE, 8)

typedef enum tl_end_kind {
#define TL__END_KIND_ENUM(name, value) TL_END_##name = (value),
  TL_END_KIND_MAP(TL__END_KIND_ENUM)
#undef TL__END_KIND_ENUM
} tl_end_kind;

/* Executor states. XX(name, value): the table generates the enum and tl_executor_state_name.
 *   ALIVE            runs tasks and takes new ones
 *   DECOMMISSIONING  runs its tasks, takes no new ones
 *   PENDING_LOSS     lost, reason pending: its attempts are frozen
 *   REMOVED          a tombstone: its id (and host) remembered, nothing else
 *   RECOVERING       restored from a snapshot (tl_scheduler_restore) and not yet reconciled:
 *                    its attempts are frozen, as in a pending loss, until
 *                    tl_executor_reconcile or recovery_timeout_ns */
#define TL_EXECUTOR_STATE_MAP(XX)                                                                  \
  XX(ALIVE, 0)                                                                                     \
  XX(DECOMMISSIONING, 1)                                                                           \
  XX(PENDING_LOSS, 2)                                                                              \
  XX(REMOVED, 3)                                                                                   \
  XX(RECOVERING, 4)

typedef enum tl_executor_state {
#define TL__EXECUTOR_STATE_ENUM(name, value) TL_EXECUTOR_##name = (value),
  TL_EXECUTOR_STATE_MAP(TL__EXECUTOR_STATE_ENUM)
#undef TL__EXECUTOR_STATE_ENUM
} tl_executor_state;

/* Why an executor was lost. TL_LOSS_PENDING is the first phase of a two-phase loss.
 * XX(name, value): the table generates the enum and tl_loss_kind_name.
 *   PENDING            lost, reason not yet known: freeze, do not reschedule
 *   EXITED             the process exited (exit_code)
 *   PROCESS_LOST       the process or its connection disappeared
 *   HEARTBEAT_TIMEOUT  no heartbeat for heartbeat_timeout_ns (made by tl_tick)
 *   KILLED             killed by the driver: never caused by the app
 *   DECOMMISSIONED     removed after decommissioning: never caused by the app
 *   PENDING_TIMEOUT    no real reason came within pending_loss_timeout_ns
 *   RECOVERY_TIMEOUT   a restored executor did not reconcile within recovery_timeout_ns (made by
 *                      tl_tick; never caused by the app) */
#define TL_LOSS_KIND_MAP(XX)                                                                       \
  XX(PENDING, 0)                                                                                   \
  XX(EXITED, 1)                                                                                    \
  XX(PROCESS_LOST, 2)                                                                              \
  XX(HEARTBEAT_TIMEOUT, 3)                                                                         \
  XX(KILLED, 4)                                                                                    \
  XX(DECOMMISSIONED, 5)                                                                            \
  XX(PENDING_TIMEOUT, 6)                                                                           \
  XX(RECOVERY_TIMEOUT, 7)

typedef enum tl_loss_kind {
#define TL__LOSS_KIND_ENUM(name, value) TL_LOSS_##name = (value),
  TL_LOSS_KIND_MAP(TL__LOSS_KIND_ENUM)
#undef TL__LOSS_KIND_ENUM
} tl_loss_kind;

/* A loss reason. Zero-initialised: TL_LOSS_PENDING, not caused by the app. */
typedef struct tl_loss_reason {
  tl_loss_kind kind;
  bool caused_by_app;  /* the app made it exit: its RUNNING attempts count as task failures */
  int exit_code;       /* for TL_LOSS_EXITED; informational otherwise */
  const char *message; /* may be NULL; copied */
} tl_loss_reason;

/* How a scheduler, or a pool, orders what it schedules (Spark's spark.scheduler.mode). */
typedef enum tl_sched_mode {
  TL_FIFO = 0, /* by priority (the job id), then stage id */
  TL_FAIR = 1  /* by running attempts: below min share first, then running / weight, then name */
} tl_sched_mode;

/* Who delivers events (tl_callbacks) and on which thread (docs/api.md "Delivery"). */
typedef enum tl_delivery {
  TL_DELIVER_INLINE = 0,  /* the call that made them, outside the lock, before it returns (or the
                             thread already delivering) */
  TL_DELIVER_DEFERRED = 1 /* tl_dispatch, on the thread that calls it; no other call delivers */
} tl_delivery;

/* One resource an executor declares (tl_executor_desc.resources): its name and its addresses, in
 * the order grants prefer them (the first free one first). Copied by tl_executor_add. */
typedef struct tl_resource {
  const char *name;             /* "gpu": 1 to TL_RESOURCE_NAME_MAX - 1 bytes of [A-Za-z0-9_.-] */
  const char *const *addresses; /* naddresses distinct strings ("0", "1"; a UUID) */
  uint32_t naddresses;          /* 1 to TL_RESOURCE_ADDRESSES_MAX */
} tl_resource;

/* What each task of a task set needs of one resource (tl_taskset_desc.resources): amount whole
 * addresses (no other task holds any share of them), or, with share k > 1, 1/k of one address
 * (k tasks may share it; amount is then 1). Spark's spark.task.resource.NAME.amount: 2 is
 * {amount 2}, 0.25 is {amount 1, share 4}. */
typedef struct tl_resource_request {
  const char *name; /* a resource name, as executors declare it */
  uint32_t amount;  /* whole addresses per task: 1 to TL_TASK_GRANTS_MAX (all requests' summed
                       too); 1 with share */
  uint32_t share;   /* 0 or 1: whole addresses; k in 2 .. TL_SHARE_MAX: 1/k of one address */
} tl_resource_request;

/* One address a task attempt holds: indices into its executor's declaration as registered
 * (tl_executor_desc.resources[resource].addresses[address]: the runtime's record of the
 * executor, executor_ud, has it at hand), and how much of it. */
typedef struct tl_grant {
  uint16_t resource; /* index in the executor's resources */
  uint16_t address;  /* index in that resource's addresses */
  uint32_t share;    /* 1: the whole address; k: 1/k of it */
} tl_grant;

/* ---------------------------------------------------------------------------------------------
 * Configuration
 * ------------------------------------------------------------------------------------------- */

typedef struct tl_config {
  tl_sched_mode mode;               /* TL_FIFO: every task set in one FIFO order; TL_FAIR: task
                                       sets in pools (tl_pool_add), pools shared FAIR; TL_FIFO */
  uint32_t cpus_per_task;           /* cores one task takes unless its task set says; 1 */
  uint32_t max_task_failures;       /* counting failures of one index that abort its task set:
                                       1 to 65535; 4 */
  uint64_t heartbeat_timeout_ns;    /* an executor silent this long is lost; 0 = never; 120 s */
  uint64_t pending_loss_timeout_ns; /* a pending loss with no real reason this long ends as
                                       TL_LOSS_PENDING_TIMEOUT; 0 = wait forever; 120 s */
  uint64_t recovery_timeout_ns;     /* a restored executor that has not reconciled this long
                                       after tl_scheduler_restore is lost with
                                       TL_LOSS_RECOVERY_TIMEOUT; 0 = wait forever; 60 s */
  uint64_t restore_tid_floor;       /* tl_scheduler_restore only (tl_scheduler_new ignores it):
                                       the restored scheduler gives no tid below this, when it is
                                       above the snapshot's next tid. A driver that launched
                                       attempts after its last snapshot passes one more than the
                                       highest tid it may have launched, so that no tid is given
                                       twice (docs/snapshot.md "Tids after a restore"); 0 */
  uint64_t restore_epoch_floor;     /* tl_scheduler_restore only (tl_scheduler_new ignores it):
                                       the restored scheduler's epoch is at least this (it is
                                       the image's epoch + 1 otherwise: tl_epoch); 0 = none */
  uint32_t max_tombstones;          /* removed executor ids remembered; 0 = none; 1024 */
  uint64_t tombstone_ttl_ns;        /* and for at most this long; 0 = until evicted; 10 min */
  uint64_t max_result_bytes;        /* results of one task set (result_size summed over its
                                       FINISHED updates) may not pass this: the update that passes
                                       it aborts the task set (Spark's spark.driver.maxResultSize;
                                       never for shuffle-map task sets); 0 = unlimited; 1 GiB */
  bool speculation;                 /* launch a second copy of tasks that run far longer than
                                       their task set's median (Spark's spark.speculation); off */
  uint64_t speculation_interval_ns; /* how often tl_tick looks for them; 100 ms */
  double speculation_multiplier;    /* a task is slow past multiplier x the median run time of its
                                       task set's successful tasks; 3 */
  double speculation_quantile;      /* only once this fraction of its tasks succeeded; 0.9 */
  uint64_t speculation_min_runtime_ns; /* and never before it ran this long; 100 ms */
  uint64_t locality_wait_ns;           /* delay scheduling: how long a task set with preferred
                                          locations waits at a locality level for a slot there
                                          before it takes the next level (Spark's
                                          spark.locality.wait); 0 = never wait; 3 s */
  uint64_t locality_wait_process_ns;   /* the wait at TL_PROCESS_LOCAL; TL_WAIT_INHERIT */
  uint64_t locality_wait_node_ns;      /* the wait at TL_NODE_LOCAL; TL_WAIT_INHERIT */
  uint64_t locality_wait_rack_ns;      /* the wait at TL_RACK_LOCAL; TL_WAIT_INHERIT */
  /* Exclude on failure (Spark's spark.excludeOnFailure.*, docs/api.md "Exclusion"): counted
   * failures keep a task away from where it failed, for one task, one task set, or (after the
   * task set succeeded) the whole application for exclude_timeout_ns. The thresholds below are
   * checked only when it is on: each at least 1, and exclude_max_task_attempts_per_node below
   * max_task_failures (Spark's startup check). */
  bool exclude_on_failure;                         /* off */
  uint32_t exclude_max_task_attempts_per_executor; /* failures of one index on one executor that
                                                      keep that index off it; 1 */
  uint32_t exclude_max_task_attempts_per_node;     /* and off its node; 2 */
  uint32_t exclude_stage_max_failed_tasks_per_executor; /* indices failed on one executor that
                                                           exclude it for the task set; 2 */
  uint32_t exclude_stage_max_failed_executors_per_node; /* executors excluded on one node that
                                                           exclude the node for the task set; 2 */
  uint32_t exclude_app_max_failed_tasks_per_executor;   /* failures (of successful task sets,
                                                           not yet expired) that exclude an
                                                           executor for the application; 2 */
  uint32_t exclude_app_max_failed_executors_per_node;   /* executors excluded for the application
                                                           on one node that exclude the node; 2 */
  uint64_t exclude_timeout_ns;       /* how long an application-level exclusion (and a failure
                                        counted toward one) lasts; more than 0; 1 h */
  uint64_t unschedulable_timeout_ns; /* a task set that no live executor may run is aborted after
                                        this long without a launch anywhere (SPARK-22148's
                                        spark.scheduler.excludeOnFailure.unschedulableTaskSet
                                        Timeout); 0 = at the next tl_tick; 120 s */
  uint64_t (*clock)(void *ud);       /* monotonic nanoseconds; NULL = uv_hrtime. Called without
                                        the lock, by any thread that calls in */
  void *clock_ud;                    /* passed to clock */
  /* The call journal (docs/journal.md); NULL = off. With it, tl_scheduler_new writes the
   * header and config lines, then every call that passes its argument checks writes one line
   * (failed calls included, with their result), and tl_scheduler_free a last one. Lines come in
   * the order the calls took the scheduler's lock, one at a time, never under the lock, written
   * by the thread that delivers events (so a call may return before its line is written). line
   * has no newline and is valid until journal returns. This is not an event callback: it is
   * called for failed calls too. A call whose line cannot be allocated fails with TL_ENOMEM
   * before it changes anything (tl_tick then does nothing and returns 0) and is not journaled.
   * journal may call the functions of taskledger.h except tl_scheduler_free. */
  void (*journal)(void *ud, const char *line);
  void *journal_ud; /* passed to journal */
  /* Delivery (docs/api.md "Delivery"). TL_DELIVER_DEFERRED: calls queue their events (and
   * journal lines) and return; tl_dispatch delivers them on its caller's thread, and with the
   * libuv driver attached (taskledger-uv.h) the loop's thread does. TL_DELIVER_INLINE */
  tl_delivery delivery;
  /* Deferred delivery only (TL_EINVAL with TL_DELIVER_INLINE); NULL = none. Called outside the
   * lock by the call that queued something to deliver when nothing was waiting for a wake-up:
   * once, then not again until a tl_dispatch has taken what was queued (so once per wake-up,
   * however many calls queue events meanwhile, from whatever thread). Typically it wakes the
   * runtime's loop, which then calls tl_dispatch. It may call any function of taskledger.h but
   * tl_scheduler_free. Not called while the libuv driver is attached (the driver wakes its loop
   * instead). */
  void (*events_ready)(void *ud);
  void *events_ready_ud; /* passed to events_ready */
  /* Added after 0.2.0, at the end (zero: off, as before; docs/api.md "Speculation"). Both need
   * speculation on: set with it off, tl_scheduler_new and tl_scheduler_restore answer
   * TL_EINVAL. */
  uint64_t speculation_task_duration_threshold_ns; /* a task set whose tasks all fit on one
                                                      executor (tasks <= the largest live
                                                      executor's cores of its profile / its cores
                                                      per task, at least 1) speculates a task
                                                      running longer than this before enough
                                                      of its tasks succeeded (Spark's
                                                      spark.speculation.task.duration.threshold,
                                                      SPARK-29976); 0 = off */
  uint64_t decommission_kill_interval_ns; /* a decommissioning executor is expected to be killed
                                             this long after tl_executor_decommission: a task
                                             on it that would end later (its launch plus its
                                             task set's median run time) is speculatable (Spark's
                                             spark.executor.decommission.killInterval,
                                             SPARK-21040); 0 = off */
  /* Added after 0.2.0 (nested pools; docs/api.md "Pools"). TL_FAIR only: a task set naming a pool
   * that does not exist creates it, top level, FIFO, weight 1, min share 0 (Spark's
   * FairSchedulableBuilder), instead of failing with TL_ENOENT; a submission that then fails
   * takes the pool away again. false */
  bool pool_auto_create;
  /* Added after 0.2.0 (offer shuffle; docs/api.md "Offers"). Each tl_resource_offers and
   * tl_resource_offers_grants call visits its offers in an order drawn from a pseudo-random
   * sequence the scheduler keeps (Spark's TaskSchedulerImpl.shuffleOffers), instead of the
   * caller's order: a task set that takes fewer offers than it is given spreads over executors
   * from round to round. The sequence starts at offer_shuffle_seed, so a run is the same under
   * the same seed and calls (the journal's config line carries both; a snapshot carries where
   * the sequence is). Launches are still reported as without it (tl_launch.offer indexes the
   * caller's array). false: the caller's order, exactly as before */
  bool offer_shuffle;
  uint64_t offer_shuffle_seed; /* where the sequence starts; any value; needs offer_shuffle
                                  (set without it: TL_EINVAL); 0 */
} tl_config;

/* Fills the defaults shown above. */
TL_EXTERN void tl_config_init(tl_config *cfg);

/* ---------------------------------------------------------------------------------------------
 * Callbacks
 * ------------------------------------------------------------------------------------------- */

/* One attempt, as task_started and task_ended see it. */
typedef struct tl_task_info {
  tl_tid tid;              /* the attempt's id */
  tl_taskset_id taskset;   /* its task set */
  uint32_t stage_id;       /* its stage */
  uint32_t stage_attempt;  /* the task set's attempt of that stage */
  uint32_t index;          /* task index within the task set, from 0 */
  uint32_t attempt;        /* attempt number of this index, from 0 */
  const char *executor_id; /* where it ran; valid until the callback returns */
  const char *host;        /* that executor's host; valid until the callback returns */
  tl_locality locality;    /* the level it was launched at */
  bool speculative;        /* a speculative copy (speculation) */
  void *payload;           /* the task set's payload; valid until taskset_released */
  void *executor_ud;       /* its executor's tl_executor_desc.ud (or executor_restored's answer),
                              NULL if it had none: the runtime's record of it, found without a
                              lookup */
  const tl_grant *grants;        /* the addresses it holds (docs/api.md "Resources"): ngrants
                                    entries, valid until the callback returns; NULL when none */
  uint32_t ngrants;
} tl_task_info;

/* How an attempt ended. */
typedef struct tl_task_end {
  tl_end_kind kind;            /* TL_END_SUCCESS or the failure */
  bool counts_toward_failures; /* this failure was counted toward max_task_failures (never in a
                                  zombie or barrier task set) */
  const char *message;         /* the update's or the loss's message, or NULL; valid until the
                                  callback returns */
  void *result;                /* TL_END_SUCCESS: the result, now owned by the callee */
  size_t result_size;          /* its size as the update gave it */
  void (*result_free)(void *); /* how the update said to free it, or NULL */
} tl_task_end;

/* One task set, as taskset_failed and taskset_released see it. */
typedef struct tl_taskset_info {
  tl_taskset_id id;
  uint32_t stage_id;
  uint32_t stage_attempt;
  uint32_t ntasks;
} tl_taskset_info;

/* What tl_callbacks.demand_changed carries (added after 0.2.0): the totals Spark's
 * ExecutorAllocationManager sizes a cluster by, all task sets and profiles together (per
 * profile, walk tl_taskset_list: a count per profile would cost every launch and end). The first four
 * equal the tl_stats fields of the same names at the end of the call that made the event. */
typedef struct tl_demand {
  size_t tasks_pending;          /* indices of active task sets waiting to launch */
  size_t tasks_speculatable;     /* speculative copies waiting to launch */
  size_t attempts_running;       /* attempts in flight (frozen ones included) */
  size_t tasksets_active;        /* task sets not zombie */
  size_t unschedulable_tasksets; /* of those, unschedulable: taskset_unschedulable made, its
                                    taskset_schedulable not yet (a task set in both states counts
                                    once: tl_stats.tasksets_unschedulable counts deadlines) */
} tl_demand;

/* The runtime's side. Every member may be NULL; a task_started, revive_offers or
 * executor_removed event whose callback is NULL is not even made (the hot paths pay nothing for
 * it). Events are delivered exactly once, one at a time, in the order they were made, never
 * while the scheduler's lock is held. Who delivers is tl_config.delivery's: inline (the default),
 * the thread whose call made them, unless another thread is already delivering (then that thread
 * delivers them, and the call may return before they are delivered); deferred, the thread that
 * calls tl_dispatch (the libuv driver's loop thread while it is attached). A callback may call any
 * function of this header; the events those calls make are delivered after it returns. */
typedef struct tl_callbacks {
  void *ud; /* passed to every callback */
  /* An attempt was launched by tl_resource_offers. */
  void (*task_started)(void *ud, const tl_task_info *task);
  /* An attempt ended: a status update, or the loss of its executor. With TL_END_SUCCESS the
   * result is now the callee's (when this member is NULL, the library calls result_free).
   * Once per attempt, and once more for a success of an active shuffle-map task set whose map
   * output is lost with its executor: the same tid then ends again, TL_END_RESUBMITTED, so a
   * tid ends at most twice, SUCCESS then RESUBMITTED. A loss's second phase makes its
   * RESUBMITTED ends first, in completion order (the order the outputs were recorded on the
   * executor, not launch order), then the TL_END_EXECUTOR_LOST ends, in launch order. */
  void (*task_ended)(void *ud, const tl_task_info *task, const tl_task_end *end);
  /* A task set was aborted (too many failures, or its stage cancelled). It is zombie now and
   * is released once its running attempts end. Delivered at most once per task set. */
  void (*taskset_failed)(void *ud, const tl_taskset_info *ts, const char *reason);
  /* A task set is gone: zombie with nothing running. The payload given to tl_submit is handed
   * back, exactly once; the library keeps no pointer to it. */
  void (*taskset_released)(void *ud, const tl_taskset_info *ts, void *payload);
  /* An executor was registered by tl_executor_add. */
  void (*executor_added)(void *ud, const char *executor_id, const char *host);
  /* An executor was lost: once per executor, at its first loss (for a two-phase loss, with
   * the TL_LOSS_PENDING reason; its second phase is executor_removed's, not reported here
   * again). executor_ud is its tl_executor_desc.ud as registered: the runtime's record of it,
   * found without a lookup. */
  void (*executor_lost)(void *ud, const char *executor_id, void *executor_ud,
                        const tl_loss_reason *reason);
  /* A running task was found slow (speculation): a copy of index is now waiting for an offer
   * (Spark's speculativeTaskSubmitted). */
  void (*speculative_task_submitted)(void *ud, const tl_taskset_info *ts, uint32_t index);
  /* There is new pending work (a submission, a task to retry): offer resources again. */
  void (*revive_offers)(void *ud);
  /* Ask the executor to kill an attempt (tl_kill_task, tl_kill_stage, tl_cancel_stage; and
   * tl_executor_reconcile for a tid the ledger does not hold there). The attempt ends when the
   * executor reports it KILLED (or its executor is lost). executor_ud as for executor_lost.
   * reason is the one the call gave, NULL if it gave none. */
  void (*kill_task)(void *ud, tl_tid tid, const char *executor_id, void *executor_ud,
                    bool interrupt, const char *reason);
  /* Resolvers, not events: tl_scheduler_restore calls them before it returns, on its caller's
   * thread, once the whole snapshot has been read and checked (so a restore that fails calls
   * neither), with no lock held; they may not call the library (the scheduler does not exist
   * yet). taskset_restored is asked for each task set's payload, in submission order: it sets
   * *payload and returns true, or returns false when the payload cannot be had (NULL member:
   * every payload is NULL); such a task set is aborted (taskset_failed, "Payload not restored")
   * and released once its attempts end, with a NULL payload. executor_restored gives the ud of
   * each executor that is not a tombstone, in registration order (NULL member: NULL uds). */
  bool (*taskset_restored)(void *ud, const tl_taskset_info *ts, void **payload);
  void *(*executor_restored)(void *ud, const char *executor_id, const char *host);
  /* An event, as those before the resolvers: an executor's loss is complete and the ledger
   * removed it for good (it is a tombstone, or forgotten past max_tombstones). Exactly once per
   * executor whose loss completes, made by the call that completes it: a one-phase loss
   * (tl_executor_lost with a real reason on an ALIVE, DECOMMISSIONING or RECOVERING executor;
   * tl_tick's heartbeat expiry and recovery timeout), or the second phase of a two-phase loss
   * (tl_executor_lost with a real reason while PENDING_LOSS; tl_tick's pending-loss timeout).
   * reason is the final one: as that call gave it, or tl_tick's (TL_LOSS_HEARTBEAT_TIMEOUT or
   * TL_LOSS_PENDING_TIMEOUT, caused by the app; TL_LOSS_RECOVERY_TIMEOUT, not), its message valid
   * until the callback returns. It comes after that executor's executor_lost and the task_ended
   * events of its second phase (and what they cause), before revive_offers, and no later event
   * names the executor. executor_ud as for executor_lost. Never for a failed call, a
   * TL_LOSS_PENDING report, a reconciliation, a tombstone's expiry, or the executors
   * tl_scheduler_free forgets. Added in 0.2.0, at the end of the struct; NULL: the event is not
   * made (as for task_started and revive_offers). */
  void (*executor_removed)(void *ud, const char *executor_id, void *executor_ud,
                           const tl_loss_reason *reason);
  /* Added after 0.2.0, at the end (docs/api.md "Demand events"); NULL: the event is not made and
   * nothing is computed for it. What dynamic allocation needs, pushed instead of polled.
   *
   * A task set became unschedulable: no live executor may run it, so it waits for a new executor
   * or, after tl_config.unschedulable_timeout_ns, is aborted (Spark's unschedulableTaskSetAdded).
   * The states: exclusion's (exclude_on_failure: every live executor or node is excluded for its
   * next task, after an offer round that launched nothing while some executor is idle),
   * resources' (no ALIVE executor could ever meet its profile, cores or resource requests) and
   * hard placement's (no live executor is one its tl_taskset_desc allows and can run its tasks).
   * A task set in several is one unschedulable task set: one event when it enters the first, one
   * taskset_schedulable when it has left the last. reason is a short static sentence naming the
   * state it entered, valid until the callback returns. tl_scheduler_restore makes one for each
   * restored task set in exclusion's state (its image's deadline), in submission order;
   * resources' and placement's are found again by the next offer round. Each event of this callback and the next
   * two may be called from any thread that delivers events (see above); the events are not
   * journaled (a replay of the calls makes them again). */
  void (*taskset_unschedulable)(void *ud, const tl_taskset_info *ts, const char *reason);
  /* It is not unschedulable any more (Spark's unschedulableTaskSetRemoved), exactly once after
   * each taskset_unschedulable: a launch anywhere (exclusion's state ends with any launch, as in
   * Spark), an executor that may run it, or its end: a task set aborted (its unschedulable
   * timeout included), cancelled or finished while unschedulable gets this event in that same
   * call, before its taskset_released. So a runtime that counts the first event up and this one
   * down holds the number of unschedulable task sets (tl_demand.unschedulable_tasksets). */
  void (*taskset_schedulable)(void *ud, const tl_taskset_info *ts);
  /* The demand changed: at most once per call (tl_status_updates and tl_executor_reconcile count
   * as one), made at the end of a call whose totals differ from the last ones this event carried
   * (the first differs from all zeros), so it is the last event of its call. demand is valid
   * until the callback returns; its totals are those tl_stats_get would have given at the end of
   * that call. */
  void (*demand_changed)(void *ud, const tl_demand *demand);
} tl_callbacks;

/* ---------------------------------------------------------------------------------------------
 * Scheduler
 * ------------------------------------------------------------------------------------------- */

/* Creates a scheduler. cfg NULL = defaults; cb NULL = no callbacks (both are copied).
 * TL_EINVAL: out NULL, or a config value out of range; TL_ENOMEM. */
TL_EXTERN int tl_scheduler_new(const tl_config *cfg, const tl_callbacks *cb, tl_scheduler **out);

/* Releases every task set that still exists (taskset_released, in submission order, delivered
 * by this call, with no other event), then frees everything. Attempts still in flight are
 * forgotten. With deferred delivery, the events still queued are delivered first, as tl_dispatch
 * would deliver them (until none is left: their callbacks may call anything, and what those
 * calls queue is delivered too), so no payload or result is lost. TL_EBUSY (nothing changes,
 * though queued events may have been delivered) when called from inside a callback, while
 * another thread is delivering events, or while a libuv driver is attached (taskledger-uv.h:
 * stop it first); TL_EINVAL for NULL. No other thread may use the scheduler once this call has
 * started; the taskset_released callbacks it makes may only inspect it (other calls are
 * TL_EBUSY). */
TL_EXTERN int tl_scheduler_free(tl_scheduler *s);

/* Drops the scheduler as the death of its process would, for a test that simulates a crash
 * (then restores an image) without leaking: frees everything and makes no callback and no
 * journal line. What is still queued is discarded, not delivered: the result an undelivered
 * task_ended holds is freed with its result_free (not at all when that is NULL), and no payload
 * is handed back, not even by a queued taskset_released: every payload given to tl_submit and
 * not yet handed back by a delivered taskset_released is the caller's again, to free or to give
 * to a restored scheduler's taskset_restored; executor uds likewise. Attempts in flight are
 * forgotten. TL_EBUSY (nothing changes) when called from inside a callback, while another
 * thread is delivering events or tl_scheduler_free runs, or while a libuv driver is attached
 * (taskledger-uv.h: stop it first); TL_EINVAL for NULL. Does not block but on the lock. No other
 * thread may use the scheduler once this call has started. */
TL_EXTERN int tl_scheduler_abandon(tl_scheduler *s);

/* Delivers, on the calling thread, every event queued when it takes the lock (and the journal
 * lines queued with them), in order, outside the lock, and returns how many events it delivered.
 * Events queued meanwhile (by its callbacks' calls or by other threads) wait for the next
 * tl_dispatch, and with events_ready set the first of them wakes the runtime again. Meant for
 * TL_DELIVER_DEFERRED; with inline delivery calls deliver their own events and this finds
 * nothing (0). While another thread is delivering, that thread delivers them too, after its
 * batch, and this returns 0. TL_EBUSY from inside a callback of s (nothing delivered: the
 * events wait for the next tl_dispatch, after the callback returns), or while tl_scheduler_free
 * runs; TL_EINVAL for NULL. */
TL_EXTERN int tl_dispatch(tl_scheduler *s);

/* ---------------------------------------------------------------------------------------------
 * Snapshot, restore, reconcile (docs/snapshot.md: the format and what each field becomes)
 * ------------------------------------------------------------------------------------------- */

/* Writes one consistent picture of everything the ledger holds: executors (state, cores, host,
 * rack, deadlines), tombstones, pools, task sets with their per-index state, failure counts and
 * pending order, running and frozen attempts, map outputs, locality waits, exclusion state,
 * counters and the next tid. The image is built under the lock in O(state), then written after
 * the lock is released through write(ud, buf, n), in order, in chunks of at most 64 KiB: write
 * takes all n bytes and returns 0, or anything else to stop (TL_EIO). Calls of other threads go
 * on meanwhile and are not in the image. Payloads and executors' uds are the caller's pointers
 * and are not saved (tl_scheduler_restore asks for them again). Undelivered events are not
 * saved either, so a snapshot is refused (TL_EBUSY, nothing written) while any event made
 * before it is undelivered: from inside a callback, while another thread delivers, or with
 * deferred delivery before tl_dispatch (tl_dispatch_snapshot delivers them instead). Not journaled;
 * makes no event; the ledger is unchanged. TL_EINVAL: s or write NULL; TL_ENOMEM; TL_EIO; TL_EBUSY
 * (as above, and during tl_scheduler_free). */
TL_EXTERN int tl_snapshot(tl_scheduler *s, int (*write)(void *ud, const void *buf, size_t n),
                          void *ud);

/* tl_snapshot at a dispatch point, which never waits for a quiet moment (docs/snapshot.md
 * "Snapshots under load"): under the lock it builds the image and takes every event queued then
 * (all made before the image) as tl_dispatch would, delivers them on the calling thread, in
 * order, outside the lock, and only then writes the image. Events queued after the image are not
 * in it and wait for the next tl_dispatch. So with deferred delivery it succeeds at its first
 * try however busy other threads are; call it where tl_dispatch may be called (its callbacks
 * run here), e.g. on the owner's loop with a write that copies the bytes for a writer thread.
 * With inline delivery and nothing queued it is tl_snapshot. TL_EBUSY from inside a callback of
 * s, while another thread is delivering or during tl_scheduler_free (nothing delivered, nothing
 * written); TL_ENOMEM (nothing delivered, nothing written); TL_EIO (the events were delivered,
 * the image not wholly written); TL_EINVAL: s or write NULL. Not journaled. */
TL_EXTERN int tl_dispatch_snapshot(tl_scheduler *s,
                                   int (*write)(void *ud, const void *buf, size_t n), void *ud);

/* Creates a scheduler from a snapshot (driver failover). cfg and cb as tl_scheduler_new takes
 * them; cfg must match the snapshot's config in the fields its fingerprint covers
 * (docs/snapshot.md; the timeouts, clock, journal and delivery may differ). read(ud, buf, n)
 * fills buf with 1 to n bytes and returns how many, 0 at the end of the input, or a negative
 * value for an error (TL_EIO). Every saved time is moved by (now - the snapshot's now), so each
 * deadline is as far away as it was when the snapshot was taken: time stops during the outage.
 * Then every executor that was ALIVE or DECOMMISSIONING is RECOVERING: its attempts are frozen
 * (not offered, not counted, their updates TL_ESTALE) until it reconciles
 * (tl_executor_reconcile) or recovery_timeout_ns passes; PENDING_LOSS executors and tombstones
 * stay as they were. While any executor is RECOVERING, the task sets restored from the image
 * launch nothing (the recovery hold: a recovering executor may run what the image shows
 * pending); task sets submitted since launch as usual; the call that ends the last recovery
 * makes a revive_offers. The resolvers (tl_callbacks.taskset_restored, .executor_restored) give
 * payloads and uds back. Events it makes (taskset_failed and taskset_released of task sets
 * without a payload) are delivered as any call's: before it returns with inline delivery, by
 * tl_dispatch with deferred delivery. With a journal, the journal begins with the header and
 * config lines and a `restore` line (tl-replay does not replay it: the snapshot is not in the
 * journal). Errors create nothing, call no callback, and leave *out NULL: TL_EINVAL (cfg
 * invalid, read or out NULL); TL_EIO; TL_ESNAPSHOT (not a snapshot, truncated, a checksum that
 * does not match, or contents no scheduler could hold); TL_EVERSION (a format version other
 * than 1 to 4; a version 1 image, written before epochs, is read with epoch 0; an image before
 * version 4 gives its task sets the config's max_task_failures and no tags, and a
 * decommissioning executor the image's clock as its decommission time);
 * TL_ECONFIG (another config); TL_ENOMEM. */
TL_EXTERN int tl_scheduler_restore(const tl_config *cfg, const tl_callbacks *cb,
                                   int (*read)(void *ud, void *buf, size_t n), void *ud,
                                   tl_scheduler **out);

/* The scheduler's epoch, for fencing (docs/snapshot.md "Epochs"): 1 for tl_scheduler_new; a
 * restore gives max(the image's epoch + 1, tl_config.restore_epoch_floor), and the image of a
 * scheduler carries its epoch. Two schedulers restored from one image have the same epoch
 * unless a floor tells them apart: a driver keeps, durably, the highest epoch it has run under
 * and passes one more as the floor, so a later restore always runs under a higher epoch than
 * any before it, and executors can refuse a driver of an older one. Fixed for the scheduler's
 * life: no lock, callable from any thread and any callback. 0 for s NULL. */
TL_EXTERN uint64_t tl_epoch(const tl_scheduler *s);

/* A RECOVERING executor reconnected and says which attempts it has: running[0 .. n), in any
 * order (duplicates count once), including those that ended while the driver was down and whose
 * ends it still holds (their status updates, made after this call, then apply as usual). The
 * reported attempts the ledger holds frozen on it run on; its frozen attempts it does not report
 * end with TL_END_EXECUTOR_LOST, not counted toward failures, in launch order; the reported tids
 * it does not hold there (unknown, ended, or another executor's) are written, in increasing
 * order, to unknown[0 .. ucap) with their number in *nunknown (however small ucap is), and each
 * gets a kill_task event naming this executor (interrupt true, reason "Unknown to the restored
 * driver"). The executor is then ALIVE again (DECOMMISSIONING if it was), with a heartbeat now,
 * on its host and rack; if another executor registered on that host meanwhile with another
 * rack, it joins that rack (a host has one rack). Events: the ends, then the kills, then
 * revive_offers when an index became pending. TL_EINVAL: s, executor_id or nunknown NULL, a bad id,
 * running NULL with n > 0, unknown NULL with ucap > 0, a tid 0; TL_ENOENT; TL_EGONE; TL_ESTATE: not
 * RECOVERING; TL_ENOMEM. */
TL_EXTERN int tl_executor_reconcile(tl_scheduler *s, const char *executor_id, const tl_tid *running,
                                    size_t n, tl_tid *unknown, size_t ucap, size_t *nunknown);

/* One attempt an executor reports when it reconciles: what it runs, queues or holds the end of
 * (the cluster's RECONCILE v2 item). */
typedef struct tl_reconcile_item {
  tl_tid tid;            /* not 0 */
  tl_taskset_id taskset; /* its task set */
  uint32_t index;        /* task index within the task set */
  uint32_t attempt;      /* attempt number of that index */
  bool speculative;      /* launched as a speculative copy */
  bool ended;            /* the executor holds the attempt's end (unacknowledged): kept or
                            adopted, the attempt takes no cores (it runs nothing); the caller
                            applies it as an ordinary status update after this call */
} tl_reconcile_item;

/* tl_executor_reconcile with what each attempt is (docs/snapshot.md "Adoption"). A reported
 * attempt the ledger holds frozen on this executor runs on only if its task set, index and
 * attempt number agree with the ledger's (else that attempt is not reported, and the tid is
 * unknown). Items with one tid count once; items with one tid that disagree make it unknown. An
 * attempt the ledger does not hold is ADOPTED, in tid order, when all of these hold:
 *   - the tid is one this scheduler never gave out nor holds: at or above the image's next tid,
 *     and below the next tid the restore began with (restore_tid_floor) or at or above the next
 *     tid now, and not running anywhere; and not UINT64_MAX;
 *   - its task set was restored from the image (not submitted since), is not zombie and not a
 *     barrier task set; index < its tasks, the index is not done, and attempt is at least the
 *     attempts launched for the index (and below UINT32_MAX);
 *   - the index is pending, or (with speculation's arrays) exactly one copy of it is in flight,
 *     not killed by its other copy, and for a speculative item that copy's hosts tried do not
 *     include this executor's host;
 *   - its task set's cores per task fit the executor's free cores after the attempts it keeps
 *     and those adopted before it, unless the item is ended.
 * An attempt reported ended, kept or adopted, takes no cores until it ends (its executor runs
 * nothing for it), so the attempts that ran in its place during the outage fit. An adopted attempt runs on this executor (RUNNING, launched now, at the locality it has
 * there) with its tid and attempt number; the index's attempts launched become attempt + 1 and
 * the next tid moves above the tid; it makes task_started, as a launch, and counts in launched
 * and reconcile_adopted. Every other item is unknown: written to unknown[], killed. Events: the
 * ends, the task_started of adoptions, the kills, then revive_offers when an index became
 * pending or the recovery ended. Errors as tl_executor_reconcile's (items NULL with n > 0, an
 * item's tid 0: TL_EINVAL); journaled as `reconcile_items`. */
TL_EXTERN int tl_executor_reconcile_items(tl_scheduler *s, const char *executor_id,
                                          const tl_reconcile_item *items, size_t n,
                                          tl_tid *unknown, size_t ucap, size_t *nunknown);

/* ---------------------------------------------------------------------------------------------
 * Executors
 * ------------------------------------------------------------------------------------------- */

typedef struct tl_executor_desc {
  const char *id;   /* 1 to 255 bytes, unique among executors ever known (tombstones) */
  const char *host; /* 1 to 255 bytes */
  const char *rack; /* NULL: no rack; else 1 to 255 bytes, the same for every executor of a host */
  uint32_t cores;   /* at least 1 */
  void *ud;         /* the caller's, never read: given back by tl_executor_get and
                       tl_executor_list, in every tl_launch on it and to executor_lost
                       and executor_removed (NULL when not set) */
  /* Added in 0.2.0 (zero: profile 0, no resources; docs/api.md "Resources"). */
  uint32_t profile;               /* its resource profile: it runs only task sets of this profile */
  const tl_resource *resources;        /* nresources entries, distinct names; copied */
  uint32_t nresources;                 /* 0 to TL_RESOURCES_MAX (resources may be NULL with 0) */
} tl_executor_desc;

/* Registers an executor (ALIVE; registration counts as a heartbeat). Event executor_added.
 * Errors, the first that applies: TL_EINVAL: bad descriptor; TL_ERESOURCE: a malformed resource
 * declaration (a bad name or address, two resources of one name, two equal addresses of one
 * resource, no addresses or more than the limits); TL_EEXIST: the id is known;
 * TL_EGONE: the id is a tombstone (a restarted executor takes a new id); TL_EINVAL: a rack
 * different from the host's; TL_ENOMEM. */
TL_EXTERN int tl_executor_add(tl_scheduler *s, const tl_executor_desc *d);

/* Reports an executor lost. See docs/design.md "Two-phase executor loss":
 *   ALIVE or DECOMMISSIONING, reason TL_LOSS_PENDING: its running attempts are frozen (gone
 *     from the tid index, status updates for them are TL_ESTALE), its cores and host released,
 *     state PENDING_LOSS until a second call or pending_loss_timeout_ns. Event executor_lost.
 *   ALIVE or DECOMMISSIONING, any other reason: the same, then the second phase at once.
 *   PENDING_LOSS, a real reason: the second phase: first each map output it held ends again
 *     with TL_END_RESUBMITTED, in completion order; then each frozen attempt ends with
 *     TL_END_EXECUTOR_LOST, in launch order (counting only if reason->caused_by_app, the attempt
 *     had reached RUNNING, the executor was not decommissioning and the task set is not zombie:
 *     once one counted failure aborts a task set, the rest no longer count), and the executor
 *     becomes a tombstone: event executor_removed with this reason, then revive_offers if an
 *     index became pending. A real reason is not reported by executor_lost again; task_ended
 *     carries its message.
 *   PENDING_LOSS, TL_LOSS_PENDING again: nothing changes; TL_OK.
 *   RECOVERING (restored, not yet reconciled; its attempts already frozen): executor_lost with
 *     this reason, then as from ALIVE: PENDING_LOSS for TL_LOSS_PENDING, else the second phase.
 * TL_EINVAL: NULL argument, bad id, reason kind out of range; TL_ENOENT: never known;
 * TL_EGONE: already removed; TL_ENOMEM. */
TL_EXTERN int tl_executor_lost(tl_scheduler *s, const char *executor_id,
                               const tl_loss_reason *reason);

/* Records a heartbeat now (tl_config.clock). TL_ENOENT, TL_EGONE; TL_ESTATE while the executor
 * is pending loss (a heartbeat does not undo a loss); TL_EINVAL. */
TL_EXTERN int tl_executor_heartbeat(tl_scheduler *s, const char *executor_id);

/* Decommissions an executor: its attempts run on, no new one is launched there, and when it is
 * later lost its attempts do not count as failures. message (may be NULL) is kept and shown by
 * tl_explain_taskset. The executor keeps the clock's now as its decommission time
 * (decommission_kill_interval_ns counts from it; a snapshot keeps it). Again on a
 * decommissioning executor: TL_OK, nothing changes. TL_ENOENT, TL_EGONE, TL_ESTATE (pending
 * loss), TL_EINVAL, TL_ENOMEM. */
TL_EXTERN int tl_executor_decommission(tl_scheduler *s, const char *executor_id,
                                       const char *message);

/* What the ledger holds for one executor (a snapshot; nothing points into the scheduler). */
typedef struct tl_executor_status {
  tl_executor_state state; /* never TL_EXECUTOR_REMOVED here: removed ids are TL_EGONE */
  uint32_t cores;          /* as registered */
  uint32_t free_cores;     /* cores minus running attempts x their cpus */
  uint32_t running;        /* attempts running here (in the tid index) */
  uint32_t frozen;         /* attempts frozen here while pending loss or recovering */
  char host[TL_HOST_MAX];  /* its host */
  void *ud;                /* tl_executor_desc.ud as registered */
  uint32_t profile;        /* as registered (0.2.0) */
  uint32_t nresources;     /* resources declared: tl_executor_resources lists them (0.2.0) */
} tl_executor_status;

/* TL_ENOENT, TL_EGONE, TL_EINVAL. */
TL_EXTERN int tl_executor_get(tl_scheduler *s, const char *executor_id, tl_executor_status *out);

/* One executor as tl_executor_list describes it (a snapshot; nothing points into the
 * scheduler). */
typedef struct tl_executor_info {
  char id[TL_ID_MAX];      /* its id */
  char host[TL_HOST_MAX];  /* its host */
  tl_executor_state state; /* any but REMOVED: tombstones are not listed */
  uint32_t cores;          /* as registered */
  uint32_t free_cores;     /* cores minus running attempts x their cpus */
  uint32_t running;        /* attempts running here */
  uint32_t frozen;         /* attempts frozen here while pending loss or recovering */
  void *ud;                /* tl_executor_desc.ud as registered */
  uint32_t profile;        /* as registered (0.2.0) */
  uint32_t nresources;     /* resources declared (0.2.0) */
} tl_executor_info;

/* Every executor the ledger holds but tombstones, in registration order: the first cap in
 * out[0 .. cap), and in *n how many there are, however small cap is (cap 0 and out NULL ask only
 * for the count; summing free_cores of the ALIVE ones gives what a round could offer). One lock,
 * O(executors, tombstones included). TL_EINVAL: s or n NULL, or out NULL with cap > 0. */
TL_EXTERN int tl_executor_list(tl_scheduler *s, tl_executor_info *out, size_t cap, size_t *n);

/* The tids of the attempts frozen on one executor, in launch order: those a RECOVERING executor
 * is waited for (after a restore, until it reconciles or its recovery deadline), or a
 * PENDING_LOSS one holds until its loss's second phase; an executor in any other state has
 * none. As tl_executor_list, the first cap in tids[0 .. cap), and in *n how many there are,
 * however small cap is (cap 0 and tids NULL ask only for the count: tl_executor_status.frozen).
 * One lock, O(its frozen attempts). TL_EINVAL: s or n NULL, a bad id, or tids NULL with cap > 0;
 * TL_ENOENT: unknown id; TL_EGONE: a tombstone (*n is 0 on every error). */
TL_EXTERN int tl_executor_frozen(tl_scheduler *s, const char *executor_id, tl_tid *tids, size_t cap,
                                 size_t *n);

/* ---------------------------------------------------------------------------------------------
 * Task sets
 * ------------------------------------------------------------------------------------------- */

/* A preferred location of a task (Spark's TaskLocation): a host, or one executor on it (a
 * cached copy of the input: TL_PROCESS_LOCAL there, TL_NODE_LOCAL on the rest of the host). */
typedef struct tl_location {
  const char *host;        /* 1 to 255 bytes */
  const char *executor_id; /* NULL: any executor of host; else 1 to 255 bytes */
} tl_location;

/* One task's preferences. Zero-initialised: none (it launches at TL_NO_PREF). */
typedef struct tl_task_desc {
  const tl_location *prefs; /* nprefs entries; copied by tl_submit */
  uint32_t nprefs;          /* 0: no preference (prefs may be NULL) */
} tl_task_desc;

typedef struct tl_taskset_desc {
  uint32_t stage_id;         /* the stage this is an attempt of */
  uint32_t stage_attempt;    /* which attempt; unique per stage among live task sets */
  uint32_t priority;         /* the job id: lower first (FIFO), then lower stage id */
  uint32_t ntasks;           /* at least 1, at most 2^32 - 2 */
  uint32_t cpus_per_task;    /* 0: the config's */
  void *payload;             /* shared by all tasks, given to every launch, handed back once by
                                taskset_released; the library never touches what it points to */
  bool shuffle_map;          /* its results are map outputs, kept on the executor that wrote them:
                                max_result_bytes does not apply, and while the task set is active an
                                index done on an executor that is later lost runs again */
  bool barrier;              /* all its tasks launch in one offer round or none do; the failure of
                                any of them makes it zombie (the DAG layer resubmits the stage),
                                counts toward nothing and retries nothing */
  const char *pool;          /* its pool under TL_FAIR (NULL = "default"); ignored under TL_FIFO,
                                whose one pool is "default"; copied */
  const tl_task_desc *tasks; /* NULL: no task has a preferred location; else ntasks entries,
                                tasks[i] for index i (docs/locality.md); copied */
  /* Added in 0.2.0 (zero: profile 0, no resources; docs/api.md "Resources"). */
  uint32_t profile;                     /* runs only on executors of this resource profile */
  const tl_resource_request *resources; /* what each task needs beyond cores: nresources
                                           entries, distinct names; copied */
  uint32_t nresources;                  /* 0 to TL_RESOURCES_MAX (resources may be NULL with 0) */
  /* Added after 0.2.0 (zero: the config's max_task_failures, no tags; docs/api.md "Retry
   * policy and tags"). */
  uint32_t max_task_failures; /* counting failures of one index that abort this task set: 1 to
                                 65535; 0 = tl_config.max_task_failures */
  const char *const *tags;    /* ntags distinct tags (TL_TAG_MAX, TL_TAGS_MAX); copied */
  uint32_t ntags;             /* 0 to TL_TAGS_MAX (tags may be NULL with 0) */
  /* Added after 0.2.0 (zero: anywhere, no spread; docs/api.md "Hard placement"). A task runs
   * only on an executor named in allowed_executors or on a host named in allowed_hosts (both
   * empty: on any executor); with spread, never beside a running attempt of its own task set on
   * the same host (TL_SPREAD_HOST) or executor (TL_SPREAD_EXECUTOR). Not with barrier. */
  const char *const *allowed_executors; /* nallowed_executors distinct executor ids; copied */
  uint32_t nallowed_executors;          /* 0 to TL_PLACE_MAX */
  const char *const *allowed_hosts;     /* nallowed_hosts distinct host names; copied */
  uint32_t nallowed_hosts;              /* 0 to TL_PLACE_MAX */
  tl_spread spread;                     /* TL_SPREAD_NONE (0), _HOST or _EXECUTOR */
} tl_taskset_desc;

/* Submits a task set; every older attempt of the same stage becomes zombie (and is released at
 * once if nothing of it runs). Event revive_offers. *out (may be NULL) gets its id.
 * TL_EINVAL: bad descriptor (a preferred location included; max_task_failures above 65535; a
 * bad tag, two equal tags, more than TL_TAGS_MAX, tags NULL with ntags > 0; an allowed list
 * longer than TL_PLACE_MAX, NULL with a count, with an empty, too long or repeated name; spread
 * not a tl_spread; placement on a barrier task set); TL_ERESOURCE: a
 * malformed resource request (a bad name, two requests of one name, amount 0, amounts summed
 * above TL_TASK_GRANTS_MAX, share above TL_SHARE_MAX, a share with amount other than 1);
 * TL_ENOENT: no such pool (TL_FAIR, without pool_auto_create); TL_ESTATE: its pool holds child
 * pools; TL_EEXIST: that stage attempt is live; TL_ENOMEM. On error the payload stays the
 * caller's. */
TL_EXTERN int tl_submit(tl_scheduler *s, const tl_taskset_desc *d, tl_taskset_id *out);

/* Adds a pool (TL_FAIR schedulers only; "default" exists from the start: FIFO, weight 1, min
 * share 0). Its task sets are ordered by mode among themselves; between pools, an offer round
 * goes first to pools running fewer attempts than min_share (lowest running / min_share first),
 * then by lowest running / weight, then by name (Spark's FairSchedulingAlgorithm). Pools live as
 * long as the scheduler. TL_EINVAL: name NULL or not 1 to 255 bytes, mode not a tl_sched_mode,
 * weight 0; TL_ESTATE: the scheduler is TL_FIFO; TL_EEXIST; TL_ENOMEM. */
TL_EXTERN int tl_pool_add(tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                          uint32_t min_share);

/* Pools nest at most this deep: a top-level pool is at depth 1. */
#define TL_POOL_DEPTH_MAX 8

/* Added in 0.2.0. Adds a pool as tl_pool_add does, inside the pool parent (NULL: at the top
 * level, as tl_pool_add). A pool holds either task sets or child pools, never both: task sets
 * are submitted to leaf pools. An offer round visits the pools depth first (Spark's
 * getSortedTaskSetQueue): at the top level and in every FAIR pool the children in FAIR order,
 * by their subtree's running attempts against their own min share and weight; in a FIFO pool
 * the children in the order they were added; then a leaf pool's task sets in its mode's order.
 * A parent is named when its child is added and never changes, so the pools form a tree, never
 * a cycle. TL_EINVAL: as tl_pool_add, or parent not 1 to 255 bytes, or parent equal to name;
 * TL_ESTATE: the scheduler is TL_FIFO, or parent is "default" (which takes the task sets that
 * name no pool, so it stays a leaf), holds task sets, or is at depth TL_POOL_DEPTH_MAX already;
 * TL_ENOENT: no pool parent; TL_EEXIST; TL_ENOMEM. */
TL_EXTERN int tl_pool_add_child(tl_scheduler *s, const char *parent, const char *name,
                                tl_sched_mode mode, uint32_t weight, uint32_t min_share);

/* Added after 0.2.0. Changes an existing pool's mode, weight and min share, "default" included
 * (Spark's allocation file may give it settings), with tl_pool_add's arguments and checks. Its
 * task sets, child pools and parent stay; its queued task sets are ordered by the new mode at
 * once (O(q log q) for q queued), and the weight and min share count from the next offer round.
 * Journaled (pool_set); a snapshot holds every pool's settings. Allocates nothing but its
 * journal line. TL_EINVAL: as tl_pool_add; TL_ESTATE: the scheduler is TL_FIFO; TL_ENOENT: no
 * such pool; TL_ENOMEM (the journal line only: nothing changed). Any thread; may be called from
 * a callback. */
TL_EXTERN int tl_pool_set(tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                          uint32_t min_share);

typedef struct tl_pool_status {
  tl_sched_mode mode; /* between its task sets */
  uint32_t weight;    /* as added */
  uint32_t min_share; /* as added */
  uint32_t running;   /* attempts in flight of its task sets, zombies' and frozen ones included */
  uint32_t tasksets;  /* its task sets not yet released */
  /* Added in 0.2.0 (nested pools). For a pool with children, running is the sum over its leaf
   * pools; its tasksets is 0. */
  uint32_t depth;           /* 1 at the top level, at most TL_POOL_DEPTH_MAX */
  uint32_t children;        /* its child pools */
  char parent[TL_HOST_MAX]; /* its parent's name; "" at the top level */
} tl_pool_status;

/* TL_ENOENT for an unknown pool ("default" always exists); TL_EINVAL. */
TL_EXTERN int tl_pool_get(tl_scheduler *s, const char *name, tl_pool_status *out);

/* Asks for one attempt to be killed (event kill_task). Nothing else changes: the attempt ends
 * when its executor reports TL_TASK_KILLED. TL_ESTALE if the tid is not running; TL_EINVAL;
 * TL_ENOMEM. reason may be NULL. */
TL_EXTERN int tl_kill_task(tl_scheduler *s, tl_tid tid, bool interrupt, const char *reason);

/* Asks for every running attempt of every attempt of a stage to be killed (Spark's
 * killAllTaskAttempts): one kill_task each. Attempts frozen on a pending-loss executor are left
 * out: they end with that executor's loss. The task sets stay as they are; killed tasks are
 * retried. TL_ENOENT: no task set of that stage exists; TL_EINVAL; TL_ENOMEM. */
TL_EXTERN int tl_kill_stage(tl_scheduler *s, uint32_t stage_id, bool interrupt, const char *reason);

/* Cancels a stage: kills every running attempt (interrupt false) and aborts its active attempt
 * (taskset_failed with "Stage N cancelled" and the reason); every attempt of the stage is
 * zombie afterwards and is released once its attempts end. TL_ENOENT, TL_EINVAL, TL_ENOMEM. */
TL_EXTERN int tl_cancel_stage(tl_scheduler *s, uint32_t stage_id, const char *reason);

/* Cancels every task set that carries tag (Spark's cancelJobsWithTag), in one lock: in
 * submission order, each one's running attempts are asked to be killed (kill_task with
 * interrupt; attempts frozen on a pending-loss executor are left to its loss), and each that is
 * not zombie is aborted (taskset_failed with "Stage N cancelled: part of cancelled job tag TAG"
 * and ": REASON" when reason is not NULL); then each is zombie and is released once its attempts
 * end (at once when none runs). *ntasksets (may be NULL) gets how many task sets it touched: those
 * it aborted or asked to kill an attempt of. No task set with the tag: TL_OK, nothing changes, 0.
 * TL_EINVAL: s NULL, tag not a valid tag (TL_TAG_MAX); TL_ENOMEM. *ntasksets is 0 on error. */
TL_EXTERN int tl_cancel_tag(tl_scheduler *s, const char *tag, bool interrupt, const char *reason,
                            size_t *ntasksets);

/* Asks for every running attempt of every task set that carries tag to be killed (as
 * tl_kill_stage does for a stage), in one lock: one kill_task each, with interrupt and reason.
 * The task sets stay as they are; killed tasks are retried. *ntasksets (may be NULL) gets how
 * many task sets had an attempt to kill. Errors as tl_cancel_tag's. */
TL_EXTERN int tl_kill_tag(tl_scheduler *s, const char *tag, bool interrupt, const char *reason,
                          size_t *ntasksets);

/* Tells the active (non-zombie) attempt of a stage that a result for index landed from another
 * attempt (Spark's notifyPartitionCompletion): the index counts as done there and is no longer
 * pending; if it was the last, that task set becomes zombie. Attempts of that index still
 * running go on; their results are still delivered. TL_OK and nothing changes when the stage
 * has no active attempt or the index is already done. TL_ENOENT: no task set of that stage;
 * TL_EINVAL: index out of range for the active attempt; TL_ENOMEM. */
TL_EXTERN int tl_partition_completed(tl_scheduler *s, uint32_t stage_id, uint32_t index);

/* What the ledger holds for one task set (a snapshot). */
typedef struct tl_taskset_status {
  tl_taskset_info info; /* id, stage, attempt, ntasks */
  bool zombie;          /* launches nothing more; released when running reaches 0 */
  bool failed;          /* aborted (taskset_failed was made) */
  uint32_t running;     /* attempts in flight, frozen ones included */
  uint32_t frozen;      /* of which frozen on executors pending loss */
  uint32_t pending;     /* indices waiting to launch (0 for a zombie) */
  uint32_t succeeded;   /* indices done (by a result here or tl_partition_completed) */
  uint32_t cpus_per_task;
  uint32_t locality_levels; /* its valid locality levels: bit (1u << level) per tl_locality; a
                               task set without preferences has TL_NO_PREF and TL_ANY */
  tl_locality locality;     /* the level delay scheduling holds it at, as of the last offer
                               round or executor change (TL_NO_PREF without preferences) */
  uint32_t profile;         /* as submitted (0.2.0) */
  uint32_t nresources;      /* resource requests per task, as submitted (0.2.0) */
  uint32_t max_task_failures; /* what aborts it: as submitted, or the config's (after 0.2.0) */
  uint32_t ntags;             /* its tags: tl_taskset_tags lists them (after 0.2.0) */
  /* Added after 0.2.0: hard placement, as submitted (tl_taskset_placement lists the names). */
  uint32_t nallowed_executors;
  uint32_t nallowed_hosts;
  tl_spread spread;
  bool unplaceable; /* no live executor satisfies its placement: aborted at the unschedulable
                       timeout unless one joins (docs/api.md "Hard placement") */
} tl_taskset_status;

/* TL_ENOENT once the task set is released; TL_EINVAL. Events lag the ledger: inside the
 * task_ended of a task set's last attempt, the ledger has already released it (its
 * taskset_released comes next), so this is TL_ENOENT there. */
TL_EXTERN int tl_taskset_get(tl_scheduler *s, tl_taskset_id id, tl_taskset_status *out);

/* Every task set the ledger holds (active and zombie; a released one is gone), in submission
 * order, after a restore too (the image keeps that order): as tl_executor_list, the first cap in
 * out[0 .. cap), and in *n how many there are, however small cap is (cap 0 and out NULL ask only
 * for the count). Each is what tl_taskset_get gives. One lock, O(task sets). TL_EINVAL: s or n
 * NULL, or out NULL with cap > 0. */
TL_EXTERN int tl_taskset_list(tl_scheduler *s, tl_taskset_status *out, size_t cap, size_t *n);

/* One tag of a task set (tl_taskset_tags). */
typedef struct tl_tag_info {
  char tag[TL_TAG_MAX]; /* as submitted, NUL-terminated */
} tl_tag_info;

/* The tags of a task set, in the order submitted: the first cap in out[0 .. cap), and in *n how
 * many there are (tl_taskset_status.ntags). TL_ENOENT once released; TL_EINVAL: s or n NULL, out
 * NULL with cap > 0 (*n is 0 on every error). */
TL_EXTERN int tl_taskset_tags(tl_scheduler *s, tl_taskset_id id, tl_tag_info *out, size_t cap,
                              size_t *n);

/* One name of a task set's hard placement (tl_taskset_placement). */
typedef struct tl_place_info {
  bool host;               /* a host name (allowed_hosts); else an executor id */
  char name[TL_HOST_MAX];  /* as submitted, NUL-terminated (TL_ID_MAX == TL_HOST_MAX) */
} tl_place_info;

/* Added after 0.2.0. The names a task set may run on, its allowed executors first, then its
 * allowed hosts, each in the order submitted: the first cap in out[0 .. cap), and in *n how many
 * there are (tl_taskset_status.nallowed_executors + nallowed_hosts). Errors as tl_taskset_tags'
 * (*n is 0 on every error). */
TL_EXTERN int tl_taskset_placement(tl_scheduler *s, tl_taskset_id id, tl_place_info *out,
                                   size_t cap, size_t *n);

/* ---------------------------------------------------------------------------------------------
 * Offers
 * ------------------------------------------------------------------------------------------- */

typedef struct tl_offer {
  const char *executor_id; /* an ALIVE executor; others launch nothing and are counted */
  uint32_t cores;          /* what the runtime believes is free; the ledger uses the smaller of
                              this and its own count */
} tl_offer;

typedef struct tl_launch {
  tl_tid tid;              /* the new attempt */
  tl_taskset_id taskset;   /* its task set */
  uint32_t stage_id;       /* its stage */
  uint32_t stage_attempt;  /* the task set's stage attempt */
  uint32_t index;          /* task index */
  uint32_t attempt;        /* attempt number of this index, from 0 */
  uint32_t cpus;           /* cores it takes */
  tl_locality locality;    /* level it was launched at */
  size_t offer;            /* the offer it came from: its index in the call's offers array (the
                              first offer naming the executor, when several do; with
                              offer_shuffle, the first in the drawn order) */
  const char *executor_id; /* where to run it: offers[offer].executor_id itself, the caller's
                              string (no copy), valid as long as the caller keeps it */
  void *executor_ud;       /* that executor's tl_executor_desc.ud as registered */
  bool speculative;        /* a speculative copy of a slow task */
  uint32_t ngrants;        /* addresses it holds (0.2.0; in what was padding, so a launch is 88
                              bytes): one grant per address, in the order of its task set's
                              requests, each request's addresses in the order of the executor's
                              declaration */
  void *payload;           /* the task set's payload: valid until taskset_released */
  const tl_grant *grants;  /* tl_resource_offers_grants: those ngrants grants, in the caller's
                              grants array; tl_resource_offers: NULL (tl_attempt_grants and
                              task_started give them) */
} tl_launch;

/* Fills offers with pending tasks: pools in FAIR order (TL_FAIR), and in each pool task sets
 * in its order (TL_FIFO: priority, then stage id; TL_FAIR: fewest running attempts first, as
 * they were when the round began), each filling the offers round-robin (one task per offer per
 * pass, in the caller's order; with tl_config.offer_shuffle, in an order drawn for the call,
 * docs/api.md "Offer shuffle") so a stage spreads over executors; a task set with preferred locations makes its passes
 * level by level, most local first, no farther than delay scheduling allows, and a round that
 * names every ALIVE executor counts as a full offer for its timer (docs/locality.md). Tasks
 * excluded after failures are skipped (exclude_on_failure). Never launches more than an
 * executor's free cores or cap launches; every launch takes at least one core of an offer, so a
 * cap of the offers' cores summed always suffices (a round that stops at a smaller cap leaves
 * the rest pending, launched by a later round). Launches are
 * written to out[0..*nout) and each makes a task_started event; *nout is 0 on any error. Each
 * names its offer (tl_launch.offer) and points at that offer's executor_id: keep the offers'
 * strings while the launches are used. Several offers naming one executor are one offer of
 * their cores summed (up to its free cores), named by the first of them (with offer_shuffle,
 * the first in the drawn order); out is in launch order, tids ascending. Offers
 * naming unknown, pending-loss, decommissioning or removed executors launch nothing and count in
 * rejected_offers. TL_EINVAL: s or nout NULL, offers NULL with noffers > 0, out NULL with
 * cap > 0, an offer id NULL or of bad length; TL_ENOMEM (nothing launched). */
TL_EXTERN int tl_resource_offers(tl_scheduler *s, const tl_offer *offers, size_t noffers,
                                 tl_launch *out, size_t cap, size_t *nout);

/* tl_resource_offers, with the addresses each launch holds written to the caller's
 * grants[0 .. gcap) and *ngrants their number: launch i's are out[i].grants[0 .. out[i].ngrants),
 * pointing into that array. Offers are checked for resources as for cores: a task launches on
 * an executor of its task set's profile that has, besides the cores, every address it asks for
 * free at once (a whole address: no share of it held; a share 1/k: the first address in
 * declaration order with that much left), or not at all; a barrier task set launches all its
 * tasks, addresses included, or none. A round stops as it stops at cap when the next launch's
 * grants would pass gcap. Errors as tl_resource_offers's, and TL_EINVAL for ngrants NULL or
 * grants NULL with gcap > 0; *ngrants is 0 on any error. */
TL_EXTERN int tl_resource_offers_grants(tl_scheduler *s, const tl_offer *offers, size_t noffers,
                                        tl_launch *out, size_t cap, size_t *nout, tl_grant *grants,
                                        size_t gcap, size_t *ngrants);

/* ---------------------------------------------------------------------------------------------
 * Resources (docs/api.md "Resources")
 * ------------------------------------------------------------------------------------------- */

/* One resource, on one executor (tl_executor_resources) or summed over every executor the ledger
 * holds but tombstones (tl_resource_totals). A snapshot; nothing points into the scheduler. */
typedef struct tl_resource_info {
  char name[TL_RESOURCE_NAME_MAX]; /* its name */
  uint32_t addresses;              /* declared */
  uint32_t free;                   /* of which no attempt holds any share */
  uint64_t used;                   /* what attempts hold, TL_SHARE_UNIT per whole address: a task
                                      of share 4 holds TL_SHARE_UNIT / 4 (frozen attempts keep
                                      theirs until their loss's second phase) */
} tl_resource_info;

/* One address of one executor's resource (tl_executor_addresses). */
typedef struct tl_address_info {
  char address[TL_ADDRESS_MAX]; /* as declared */
  uint64_t used;                /* TL_SHARE_UNIT when held whole, the shares held summed else */
} tl_address_info;

/* The resources an executor declared, in declaration order, as tl_executor_list lists: the
 * first cap in out[0 .. cap), and in *n how many there are. TL_EINVAL: s or n NULL, a bad id,
 * out NULL with cap > 0; TL_ENOENT; TL_EGONE (*n is 0 on every error). */
TL_EXTERN int tl_executor_resources(tl_scheduler *s, const char *executor_id,
                                    tl_resource_info *out, size_t cap, size_t *n);

/* The addresses of an executor's resource (its index in tl_executor_resources' order), in
 * declaration order, likewise. TL_ENOENT also for a resource index out of range. */
TL_EXTERN int tl_executor_addresses(tl_scheduler *s, const char *executor_id, uint32_t resource,
                                    tl_address_info *out, size_t cap, size_t *n);

/* Every resource name some executor the ledger holds (tombstones aside) declares, in the order
 * the names were first seen, summed over those executors: the first cap in out[0 .. cap), and
 * in *n how many there are. TL_EINVAL: s or n NULL, out NULL with cap > 0. */
TL_EXTERN int tl_resource_totals(tl_scheduler *s, tl_resource_info *out, size_t cap, size_t *n);

/* The addresses one running (or frozen) attempt holds, as its launch gave them: the first cap in
 * out[0 .. cap), and in *n how many there are. TL_ESTALE: the tid is not running nor frozen;
 * TL_EINVAL: s or n NULL, out NULL with cap > 0 (*n is 0 on every error). */
TL_EXTERN int tl_attempt_grants(tl_scheduler *s, tl_tid tid, tl_grant *out, size_t cap,
                                size_t *n);

/* ---------------------------------------------------------------------------------------------
 * Status updates
 * ------------------------------------------------------------------------------------------- */

/* XX(name, value): the table generates the enum and tl_task_state_name.
 *   RUNNING   the launch succeeded: the attempt is no longer LAUNCHING
 *   FINISHED  success, with a result
 *   FAILED    failure of kind tl_update.failure
 *   KILLED    killed as asked */
#define TL_TASK_STATE_MAP(XX)                                                                      \
  XX(RUNNING, 0)                                                                                   \
  XX(FINISHED, 1)                                                                                  \
  XX(FAILED, 2)                                                                                    \
  XX(KILLED, 3)

typedef enum tl_task_state {
#define TL__TASK_STATE_ENUM(name, value) TL_TASK_##name = (value),
  TL_TASK_STATE_MAP(TL__TASK_STATE_ENUM)
#undef TL__TASK_STATE_ENUM
} tl_task_state;

/* The names of the values above, without their prefix ("EXECUTOR_LOST", "NODE_LOCAL",
 * "PENDING_LOSS"); "UNKNOWN" for a value outside the enum. Never NULL; the strings are static. The
 * journal, tl_explain_taskset and the examples print these names. */
TL_EXTERN const char *tl_end_kind_name(tl_end_kind kind);
TL_EXTERN const char *tl_loss_kind_name(tl_loss_kind kind);
TL_EXTERN const char *tl_locality_name(tl_locality level);
TL_EXTERN const char *tl_task_state_name(tl_task_state state);
TL_EXTERN const char *tl_executor_state_name(tl_executor_state state);

/* Zero-initialised: a RUNNING update. */
typedef struct tl_update {
  tl_task_state state;
  tl_end_kind failure;         /* for TL_TASK_FAILED: TL_END_EXCEPTION, _FETCH_FAILED, _KILLED,
                                  _COMMIT_DENIED or _RESULT_LOST */
  const char *message;         /* may be NULL; copied */
  void *result;                /* TL_TASK_FINISHED only (NULL otherwise) */
  size_t result_size;          /* its size, passed on to task_ended */
  void (*result_free)(void *); /* how to free it, passed on; may be NULL */
  /* Added after 0.2.0 (false: retried as usual). */
  bool no_retry; /* TL_TASK_FAILED with TL_END_EXCEPTION or _RESULT_LOST only (TL_EINVAL
                    otherwise): retrying cannot help (Spark's TaskOutputFileAlreadyExist
                    Exception), so a counted failure aborts its task set at once, with the
                    update's message in taskset_failed's reason, whatever max_task_failures
                    says. A failure that does not count (a zombie's, a barrier task set's, a
                    copy that lost the race, an index already done) aborts nothing */
} tl_update;

/* An executor reports one of its attempts. RUNNING marks the launch successful; a terminal
 * state ends the attempt (task_ended) and, for a failure, retries the index or aborts the task
 * set at max_task_failures. On TL_OK a FINISHED result's ownership passes to task_ended's
 * callee; on error it stays with the caller. Errors, the first that applies:
 *   TL_EINVAL  bad argument (a result with a state other than FINISHED, a failure kind that is
 *              not one of those above);
 *   TL_ENOENT  executor never known;
 *   TL_EGONE   executor removed;
 *   TL_ESTALE  tid unknown, already finished, or frozen on a pending-loss executor (the
 *              stale_updates counter goes up);
 *   TL_EOWNER  tid run by another executor (rejected_updates goes up);
 *   TL_ENOMEM. */
TL_EXTERN int tl_status_update(tl_scheduler *s, const char *executor_id, tl_tid tid,
                               const tl_update *u);

/* n updates of one executor under one lock: updates[i] for tids[i], each applied in order
 * exactly as tl_status_update would apply it (its result's ownership likewise: taken on its
 * TL_OK, the caller's otherwise), with results[i] its code (results may be NULL). Returns TL_OK
 * when it applied the batch, whatever each update's code; or an error that applies to the
 * whole batch, having applied nothing and written no result: TL_EINVAL (s or executor_id bad,
 * tids or updates NULL with n > 0, or any update that tl_status_update would refuse with
 * TL_EINVAL), TL_ENOENT, TL_EGONE, TL_EBUSY. TL_ENOMEM for one update leaves it unapplied with
 * that code and the rest applied. The callbacks of the whole batch come after it, in order.
 * With a journal, each update is one `update` line, as if made by tl_status_update. */
TL_EXTERN int tl_status_updates(tl_scheduler *s, const char *executor_id, const tl_tid *tids,
                                const tl_update *updates, size_t n, int *results);

/* ---------------------------------------------------------------------------------------------
 * Time
 * ------------------------------------------------------------------------------------------- */

/* Runs what is due at the config clock's now (a deadline is due when now reaches it: an
 * executor registered or heard from at t expires at t + heartbeat_timeout_ns; a deadline that
 * would fall at or beyond UINT64_MAX never fires, not even at now == UINT64_MAX, and tl_tick
 * reports TL_TICK_NEVER for it): heartbeat expiry (a one-phase loss with
 * TL_LOSS_HEARTBEAT_TIMEOUT, caused by the app), pending-loss deadlines (the second phase with
 * TL_LOSS_PENDING_TIMEOUT, caused by the app), recovery deadlines of restored executors (both
 * phases with TL_LOSS_RECOVERY_TIMEOUT, not caused by the app), each loss it completes reported
 * by executor_removed with that reason, tombstone expiry, speculation checks, locality
 * waits (one revive_offers when a wait ran out since the previous tick), application-level
 * exclusion expiry and unschedulable aborts (exclude_on_failure). Returns nanoseconds until
 * the next deadline, 0 if something is due again already (a loss that could not get memory
 * is retried by the next call), TL_TICK_NEVER if nothing will ever be due (also for NULL). The
 * answer takes in what this call's callbacks did when it delivered them; called from inside a
 * callback (its events are then delivered after that callback), or with deferred delivery (a
 * later tl_dispatch delivers them), it does not: tick again after that tl_dispatch, or let the
 * libuv driver tick, which it wakes when a call brings the next deadline closer. */
TL_EXTERN uint64_t tl_tick(tl_scheduler *s);

/* ---------------------------------------------------------------------------------------------
 * Inspection
 * ------------------------------------------------------------------------------------------- */

typedef struct tl_stats {
  size_t executors_alive;           /* ALIVE */
  size_t executors_decommissioning; /* DECOMMISSIONING */
  size_t executors_pending_loss;    /* PENDING_LOSS */
  size_t executors_recovering;      /* RECOVERING: restored, not yet reconciled */
  size_t tombstones;                /* removed ids remembered */
  size_t hosts;                     /* hosts with at least one live executor: ALIVE or
                                       DECOMMISSIONING (a pending-loss one has left its host) */
  size_t racks;                     /* racks with at least one such host */
  size_t pools;                     /* pools, "default" included */
  size_t places;                    /* executors and hosts some task set prefers */
  size_t tasksets_active;           /* not zombie */
  size_t tasksets_zombie;           /* zombie, still draining running attempts */
  size_t attempts_running;          /* entries of the tid index */
  size_t attempts_frozen;           /* on PENDING_LOSS and RECOVERING executors */
  size_t tasks_pending;             /* indices of active task sets waiting to launch */
  size_t tasks_speculatable;        /* slow tasks whose speculative copy waits to launch */
  size_t events_queued;             /* made and not yet delivered */
  size_t mem_live_bytes;            /* this scheduler's own allocations */
  size_t mem_live_blocks;           /* and their number */
  uint64_t launched;                /* attempts launched since creation */
  uint64_t succeeded;               /* FINISHED updates taken */
  uint64_t failed;                  /* attempts ended by a failure or their executor's loss */
  uint64_t killed;                  /* attempts ended TL_END_KILLED (KILLED, FAILED so named, or
                                       the FINISHED of a speculated index's losing copy) */
  uint64_t stale_updates;           /* updates answered TL_ESTALE */
  uint64_t rejected_updates;        /* updates answered TL_EOWNER */
  uint64_t rejected_offers;         /* offers from executors that cannot take tasks */
  uint64_t executors_lost;          /* executors whose loss began */
  uint64_t tasksets_released;       /* task sets released */
  /* exclude_on_failure (all 0 when it is off) */
  size_t executors_excluded;     /* executors excluded for the application (removed ones too,
                                    until their exclusion expires) */
  size_t nodes_excluded;         /* nodes excluded for the application */
  size_t tasksets_with_failures; /* task sets holding counted failures (their exclusions) */
  size_t tasksets_unschedulable; /* task sets waiting out unschedulable_timeout_ns */
  uint64_t excluded_offers;      /* offers from executors excluded for the application */
  uint64_t tasksets_unschedulable_aborted; /* task sets aborted because no executor may run
                                              one of their tasks */
  uint64_t pending_loss_timeouts;          /* pending losses that pending_loss_timeout_ns ended
                                              (TL_LOSS_PENDING_TIMEOUT: no second phase came) */
  uint64_t recovery_timeouts;              /* restored executors lost to recovery_timeout_ns
                                              (TL_LOSS_RECOVERY_TIMEOUT) */
  uint64_t reconciled;                     /* executors reconciled (tl_executor_reconcile) */
  uint64_t reconcile_lost;                 /* attempts ended TL_END_EXECUTOR_LOST by a
                                              reconciliation that did not report them */
  uint64_t reconcile_unknown;              /* tids reconciliations reported that the ledger did
                                              not hold there (each asked to be killed) */
  uint64_t reconcile_adopted;              /* attempts reconciliations adopted: launched
                                              after the image, taken over without a rerun
                                              (tl_executor_reconcile_items) */
  /* Added after 0.2.0 (hard placement). */
  size_t tasksets_unplaceable; /* of tasksets_unschedulable, those whose placement no live
                                  executor satisfies (their aborts count in
                                  tasksets_unschedulable_aborted) */
} tl_stats;

/* A consistent snapshot. s NULL: *out is zeroed. */
TL_EXTERN void tl_stats_get(tl_scheduler *s, tl_stats *out);

/* Verifies every invariant of docs/design.md. TL_OK, or TL_ECORRUPT with the first violation
 * written to why (truncated to len; why may be NULL). TL_EINVAL for s NULL. O(size of the
 * ledger): meant for tests and debugging. */
TL_EXTERN int tl_check(tl_scheduler *s, char *why, size_t len);

/* Writes, as text, why a task set is still alive: its state and, for each attempt in flight,
 * the tid, index, attempt number and the executor holding it (state, host, deadlines); with
 * speculation, how the check judges the task set and why an attempt's index is speculatable
 * (docs/api.md). The text is truncated to fit len (ending in "...\n" when cut). TL_ENOENT once
 * released; TL_EINVAL for s NULL, buf NULL or len 0. */
TL_EXTERN int tl_explain_taskset(tl_scheduler *s, tl_taskset_id id, char *buf, size_t len);

/* Writes every field of tl_stats as Prometheus text (exposition format 0.0.4), in the struct's
 * order: for each a "# HELP taskledger_NAME sentence" line, a "# TYPE taskledger_NAME gauge" (or
 * "counter") line and the sample line "taskledger_NAME VALUE". A size_t field is a gauge named
 * after it (taskledger_attempts_running); a uint64_t total is a counter named after it with the
 * suffix _total (taskledger_launched_total). Then, when executors declare resources, three
 * labelled gauges per resource name (docs/api.md "Resources"): taskledger_resource_addresses,
 * taskledger_resource_free and taskledger_resource_used (in addresses, a decimal), each sample
 * as taskledger_resource_used{resource="gpu"} 1.250000. The values are one consistent snapshot,
 * taken under the lock. The text is ASCII and ends with a newline.
 *
 * Buffer: at most len bytes are written to buf, the NUL included, and when len > 0 the text is
 * always NUL-terminated. *needed (needed may be NULL) gets the length of the whole text without
 * its NUL, as snprintf counts it: the text fit iff *needed < len, and a buffer of *needed + 1
 * bytes holds it (values can grow between two calls, so check again). A text that does not fit
 * is truncated as tl_explain_taskset's is, ending in "...\n" when len >= 5 (no valid exposition
 * line, so a scraper fed it fails instead of taking a partial scrape for a whole one), and the
 * call still returns TL_OK: compare *needed with len. buf may be NULL only with len 0, which
 * writes nothing and only sizes the text.
 *
 * TL_EINVAL for s NULL, or buf NULL with len > 0; *needed is 0 on any error. Allocates nothing,
 * so never TL_ENOMEM. Runs no user code; blocks only on the scheduler's mutex; callable from any
 * thread and from any callback, also during tl_scheduler_free. Not journaled (read-only). */
TL_EXTERN int tl_metrics_text(tl_scheduler *s, char *buf, size_t len, size_t *needed);

#ifdef __cplusplus
}
#endif
#endif /* TASKLEDGER_H */
