/* tl-sim's private header: the records of a run and the functions its files share (docs/sim.md,
 * "Files"). Private to examples/sim/; everything here runs on one thread, in virtual time.
 *
 * The files are built in layers, and a file calls only files of lower layers:
 *
 *   0 base       queue.c        the seeded random numbers and the event queue (this header)
 *                record.c       the record of a run, which trace.c and svg.c write (record.h)
 *                options.c      the command line: defaults, parsing, usage
 *   1 world      world.c        what every file uses: memory, the event log, problems, marks,
 *                               scheduling events, executor ids and attempts by tid
 *   2 resources  gpu.c          GPU executors and stages, the simulator's book of addresses
 *                pools.c        nested pools and tags: the pool tree, jobs' pools and tags, the
 *                               tag calls (--pools)
 *   3 rooms      executors.c    executors join, are picked for faults, leave the ledger
 *                dag.c          the DAG layer: jobs arrive, stages submitted, retried, resubmitted
 *                after_event.c  after every event: tl_tick, offer rounds, tl_check, samples
 *   4 reactions  callbacks.c    the ledger's callbacks (tl_callbacks)
 *                events.c       what each event does: updates, heartbeats, faults, joins
 *                summary.c      the summary and the verdict
 *   5 top        main.c         the run: set up, the loop, the end of the run, the teardown
 *
 * Two things go the other way, and neither is a call by name. The library calls callbacks.c from
 * inside the tl_ calls of the files below it (through the tl_callbacks main.c installs). And a
 * lower file that must tell the run something sets a field that main.c reads (problems,
 * check_failed), as main.c tells them the run is ending through faults_on and stopping.
 */
#ifndef TL_SIM_SIM_H
#define TL_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record.h"
#include "taskledger.h"

typedef struct sim sim;                 /* the run (at the end of this header) */
typedef struct sim_attempt sim_attempt; /* an attempt (callbacks.c's) */

/* ---------------------------------------------------------------------------------------------
 * Random numbers and the event queue (queue.c)
 * ------------------------------------------------------------------------------------------- */

/* xoshiro256** seeded through splitmix64: the simulator's only source of randomness, so that one
 * seed gives one run. */
typedef struct sim_rng {
  uint64_t s[4]; /* the generator's state; never all zero */
} sim_rng;

void sim_rng_seed(sim_rng *r, uint64_t seed);
uint64_t sim_rng_next(sim_rng *r);
double sim_rng_unit(sim_rng *r);                /* uniform in [0, 1) */
double sim_rng_exp(sim_rng *r, double mean);    /* exponential with this mean */
uint32_t sim_rng_below(sim_rng *r, uint32_t n); /* uniform in [0, n), n > 0 */

/* One scheduled event. Events at the same virtual time run in the order they were scheduled
 * (seq), which makes a run a function of its seed and options alone. */
typedef struct sim_event {
  uint64_t t_ns;   /* when it happens */
  uint64_t seq;    /* scheduling order: ties at t_ns run in this order */
  uint64_t tid;    /* the attempt it is about, or 0 */
  uint32_t exec;   /* the executor (or job) it is about */
  uint8_t kind;    /* what happens: an ev_kind (below) */
  uint8_t state;   /* for an update: its tl_task_state */
  uint8_t failure; /* for a FAILED update: its tl_end_kind */
  uint8_t flag;    /* kind-specific */
} sim_event;

/* A binary min-heap on (t_ns, seq). */
typedef struct sim_queue {
  sim_event *items;  /* heap order */
  size_t n, cap;     /* used and allocated */
  uint64_t next_seq; /* the seq of the next push */
} sim_queue;

int sim_queue_push(sim_queue *q, sim_event e);   /* 0, or -1 when out of memory */
int sim_queue_pop(sim_queue *q, sim_event *out); /* 0, or -1 when empty */
void sim_queue_free(sim_queue *q);

/* ---------------------------------------------------------------------------------------------
 * Options (options.c)
 * ------------------------------------------------------------------------------------------- */

typedef struct sim_options {
  uint32_t executors;         /* executors at the start (and the size replacements keep) */
  uint32_t cores;             /* cores per executor */
  uint32_t per_host;          /* executors per host */
  uint32_t hosts_per_rack;    /* hosts per rack */
  uint32_t jobs;              /* jobs submitted */
  uint32_t stages;            /* stages per job */
  uint32_t tasks;             /* mean tasks per stage */
  double duration_s;          /* mean task duration */
  double job_interval_s;      /* between job submissions */
  double task_failure;        /* probability that an attempt throws */
  double crash_rate;          /* one-phase crashes per virtual second, cluster-wide */
  double crash2_rate;         /* two-phase crashes per virtual second */
  double reason_delay_s;      /* mean delay of a two-phase crash's real reason */
  double reason_lost;         /* probability that the real reason never comes */
  double hang_rate;           /* silent hangs per virtual second */
  double decommission_rate;   /* decommissionings per virtual second */
  double join_rate;           /* late joins (beyond replacements) per virtual second */
  double duplicate_rate;      /* probability that a terminal update is sent twice */
  double late_rate;           /* probability that an update arrives late (see docs/sim.md) */
  uint32_t stage_retries;     /* failed attempts a stage may retry */
  uint32_t max_task_failures; /* tl_config.max_task_failures */
  double heartbeat_s;         /* heartbeat interval */
  double heartbeat_timeout_s; /* tl_config.heartbeat_timeout_ns */
  double pending_timeout_s;   /* tl_config.pending_loss_timeout_ns */
  uint64_t seed;              /* the PRNG's seed */
  double until_s;             /* virtual time limit */
  uint32_t check_every;       /* tl_check after every N events (1: every event) */
  const char *trace_path;     /* --trace */
  const char *svg_path;       /* --svg */
  const char *metrics_path;   /* --metrics */
  const char *journal_path;   /* --journal */
  uint32_t gpu_executors;     /* executors (of the start) that declare "gpu"; 0: none */
  uint32_t gpus;              /* addresses each declares: "0" .. gpus - 1 */
  uint32_t gpu_profile;       /* their resource profile and the GPU stages' (0: the default) */
  double gpu_stages;          /* probability that a stage asks for GPUs */
  uint32_t gpu_amount;        /* whole GPUs per task of such a stage */
  uint32_t gpu_share;         /* k > 1: each task holds 1/k of one GPU instead */
  const char *id_prefix;      /* executor ids are the prefix and a number: 1 to SIM_PREFIX_MAX
                                 bytes ("exec-") */
  bool quiet;                 /* no progress line, no event log */
  bool pools;                 /* --pools: TL_FAIR with nested pools, tags, tag calls (pools.c) */
  bool speculation;           /* --speculation: tl_config.speculation */
  double spec_threshold_s;    /* --speculation-threshold: speculation_task_duration_threshold_ns;
                                 0: off */
  double decom_kill_s;        /* --decommission-kill-interval: decommission_kill_interval_ns;
                                 0: off */
} sim_options;

/* The longest --id-prefix: with the up to 15 digits of an executor's number the id stays
 * within the library's TL_ID_MAX - 1 bytes. */
#define SIM_PREFIX_MAX (TL_ID_MAX - 1 - 15)

/* The defaults (docs/sim.md, "Options"). */
void options_init(sim_options *o);
/* Parses argv into o; --help prints the usage and exits 0. 0, or -1 after saying why on
 * stderr. */
int parse_args(sim_options *o, int argc, char **argv);

/* ---------------------------------------------------------------------------------------------
 * The simulated world (world.c): what every file uses
 * ------------------------------------------------------------------------------------------- */

#if defined(__GNUC__)
#define PRINTF_LIKE(a, b) __attribute__((format(printf, a, b)))
#else
#define PRINTF_LIKE(a, b)
#endif

#define MS UINT64_C(1000000)

/* What an event does (sim_event.kind): events.c's run_event runs it; world.c schedules it. */
enum ev_kind {
  EV_JOB,          /* exec: the job to submit */
  EV_HEARTBEAT,    /* exec */
  EV_RUNNING,      /* tid */
  EV_FETCH,        /* tid: it reads its shuffle inputs */
  EV_FINISH,       /* tid */
  EV_KILL,         /* tid: the executor kills it as asked */
  EV_BAD_UPDATE,   /* exec, tid, state, failure: a duplicate or late update */
  EV_CRASH,        /* a one-phase crash of some executor */
  EV_CRASH2,       /* a two-phase crash */
  EV_REASON,       /* exec: the real reason of its two-phase loss */
  EV_HANG,         /* an executor hangs */
  EV_WAKE,         /* exec: a hung executor comes back, to find itself removed */
  EV_DECOMMISSION, /* an executor is decommissioned */
  EV_DECOM_REMOVE, /* exec: it is drained or its time is up */
  EV_JOIN,         /* a late executor joins (the Poisson process of --join) */
  EV_REPLACE,      /* exec: a replacement for a lost executor joins on its host */
  EV_TICK          /* tl_tick is due */
};

extern size_t results_live; /* result buffers sent in FINISHED updates and not yet freed */

/* A result buffer of a FINISHED update, and its result_free. */
void result_free(void *p);
void *result_new(void);
/* calloc and the growth of an array of `size`-byte items to `need` (new items zeroed); both exit
 * with status 2 when out of memory, as oom does. */
void *xcalloc(size_t n, size_t size);
void grow(void **items, size_t *cap, size_t need, size_t size);
void oom(void);
/* A line of the event log (stdout, unless --quiet); a broken contract (stderr, counted in
 * problems); a mark in the record at the current time. */
void logf_(sim *m, const char *fmt, ...) PRINTF_LIKE(2, 3);
void problem(sim *m, const char *fmt, ...) PRINTF_LIKE(2, 3);
void mark(sim *m, uint32_t exec, sim_mark_kind kind, const char *fmt, ...) PRINTF_LIKE(4, 5);
/* Events: one of `kind` at `at`; a duplicate or late update (EV_BAD_UPDATE); the next arrival of
 * a Poisson process of `rate` per second (none for 0). */
void schedule(sim *m, uint64_t at, uint8_t kind, uint32_t exec, uint64_t tid);
void schedule_update(sim *m, uint64_t at, uint32_t exec, uint64_t tid, tl_task_state st,
                     tl_end_kind failure);
void schedule_poisson(sim *m, uint8_t kind, double rate);
uint64_t secs(double s); /* seconds to nanoseconds; 0 for s <= 0 */
/* tl_config.clock and tl_config.journal; ud is the sim. */
uint64_t sim_clock(void *ud);
void journal_line(void *ud, const char *line);
/* An executor's index from its id (UINT32_MAX when not one of ours), its ud from its index and
 * back; an attempt by tid, or NULL. */
uint32_t exec_of(const sim *m, const char *id);
void *exec_ud(uint32_t x);
uint32_t exec_of_ud(const void *ud);
sim_attempt *attempt_of(sim *m, uint64_t tid);

/* ---------------------------------------------------------------------------------------------
 * GPUs (gpu.c): executors that declare "gpu", stages that ask for it, and the simulator's own
 * book of who holds which address, compared with the ledger's (docs/sim.md, "GPUs")
 * ------------------------------------------------------------------------------------------- */

#define SIM_GPUS_MAX 64 /* --gpus at most: addresses "0" .. "63" */

typedef struct sim_gpu {
  char names[SIM_GPUS_MAX][4];         /* the addresses' strings */
  const char *addresses[SIM_GPUS_MAX]; /* pointing at them, for the declaration */
  tl_resource decl;                    /* what a GPU executor declares */
  tl_resource_request req;             /* what each task of a GPU stage asks for */
  uint32_t stages;                     /* stages that asked */
  uint64_t attempts;                   /* attempts that held addresses */
  uint64_t held_now, held_peak;        /* attempts holding addresses now, and at most */
  uint32_t share_peak;                 /* most attempts on one address at once (shares) */
  uint64_t checks;                     /* the book compared with tl_executor_addresses */
  bool end_checked;                    /* gpu_end read tl_resource_totals */
  uint32_t end_addresses;              /* its gpu addresses then */
  uint64_t end_used;                   /* and their use */
} sim_gpu;

struct sim_stage;

/* Whether the run has GPU executors (--gpu-executors); everything below is a no-op without. */
bool gpu_on(const sim *m);
void gpu_init(sim *m);
void gpu_free(sim *m); /* before executors_free */
/* Whether a late joiner declares "gpu". */
bool gpu_late_kind(const sim *m);
/* A GPU executor's declaration and profile, in the descriptor tl_executor_add gets. */
void gpu_declare(sim *m, uint32_t x, tl_executor_desc *d);
/* A new stage draws whether it asks for GPUs (only with --gpu-stages above 0); a GPU stage's
 * request and profile, in the descriptor tl_submit gets. */
void gpu_stage_draw(sim *m, struct sim_stage *st);
void gpu_request(sim *m, const struct sim_stage *st, tl_taskset_desc *d);
/* task_started, each launch of an offer round, task_ended (which writes the slice's addresses). */
void gpu_started(sim *m, sim_attempt *a, const tl_task_info *t);
void gpu_launched(sim *m, const tl_launch *l);
void gpu_ended(sim *m, sim_attempt *a, const tl_task_info *t, sim_slice *sl);
/* After each tl_check: the book against tl_executor_addresses. At the end, executors still
 * registered: tl_resource_totals (used 0 when drained); after they stopped: the book empty. */
void gpu_check(sim *m);
void gpu_end(sim *m, bool drained);
void gpu_stopped(sim *m);
void gpu_summary(const sim *m);

/* ---------------------------------------------------------------------------------------------
 * Nested pools and tags (pools.c; --pools): everything is a no-op without it.
 * ------------------------------------------------------------------------------------------- */

#define SIM_TAG_MAX 32 /* a tag this scenario makes, with its NUL */

/* A submission's tags, kept by its caller until tl_submit returns (which copies them). */
typedef struct sim_pool_tags {
  char job[SIM_TAG_MAX];   /* "job-J" */
  char group[SIM_TAG_MAX]; /* "group-LEAF" */
  const char *tags[2];     /* the two, as tl_taskset_desc.tags takes them */
} sim_pool_tags;

void pools_config(const sim *m, tl_config *cfg); /* before tl_scheduler_new */
void pools_init(sim *m);                         /* after it: the pool tree */
/* Job j's pool and tags into d (pt holds the tags' text). */
void pools_request(const sim *m, uint32_t j, sim_pool_tags *pt, tl_taskset_desc *d);
void pools_arrive(sim *m, uint32_t j); /* the tag calls at job j's arrival */
void pools_end(sim *m);                /* at the drained end: every pool empty */
void pools_summary(const sim *m);

/* ---------------------------------------------------------------------------------------------
 * Executors (executors.c)
 * ------------------------------------------------------------------------------------------- */

/* What the ledger knows of an executor, as the simulator tracks it: X_PENDING from its
 * executor_lost (the loss began) to its executor_removed (the loss ended: X_GONE). */
typedef enum xstate { X_ALIVE, X_DECOM, X_PENDING, X_GONE } xstate;
/* What its process does. */
typedef enum pstate { P_RUNNING, P_HUNG, P_DEAD } pstate;

typedef struct sim_executor {
  char id[SIM_NAME_MAX];   /* "exec-N" (--id-prefix): N - 1 is its index here and in the record */
  char host[SIM_NAME_MAX]; /* "host-H" */
  char rack[SIM_NAME_MAX]; /* "rack-R" */
  uint32_t host_index;     /* H - 1 */
  xstate ledger;           /* the ledger's view */
  pstate proc;             /* the process's */
  uint64_t *core_tid;      /* cores entries: the attempt holding each core, 0 when free */
  uint32_t busy;           /* cores held */
  bool shutdown;           /* stopped at the end of the run: no replacement */
  bool gpu;                /* it declares "gpu" (gpu.c) */
  uint64_t *gpu_used;      /* gpus entries for a GPU executor (else NULL): the simulator's book of
                              each address's use, in TL_SHARE_UNIT per whole address */
} sim_executor;

/* The run's first executors (--executors), and the end of those still registered when the run
 * stops: each leaves the ledger at once (TL_LOSS_KILLED), without a replacement. */
void executors_start(sim *m);
void executors_stop(sim *m);
void executors_free(sim *m);
/* Registers a new executor on host_index (UINT32_MAX: a new host for a late joiner), a GPU
 * executor when gpu. */
void executor_join(sim *m, uint32_t host_index, const char *why, bool gpu);
/* The ledger removed executor x: its lane ends, and a replacement comes while faults are on. */
void executor_removed(sim *m, uint32_t x);
/* An executor a fault may hit (ALIVE, or DECOM too when allow_decom; its process running), never
 * the last one; -1 when none. */
int pick_executor(sim *m, bool allow_decom);
/* Executor x's process died: its attempts stop, and some of their reports arrive late. */
void in_flight_reports(sim *m, uint32_t x);

/* ---------------------------------------------------------------------------------------------
 * The DAG layer (dag.c)
 * ------------------------------------------------------------------------------------------- */

#define RESULT_DONE (-2) /* a result stage's partition whose result reached the driver */

struct sim_ts;

/* A stage of a job. Map stages keep their outputs on the executor that wrote them. */
typedef struct sim_stage {
  uint32_t stage_id;     /* global, as given to tl_submit */
  uint32_t job;          /* its job */
  uint32_t nparts;       /* partitions */
  bool result;           /* the job's last stage: results go to the driver */
  uint32_t nparents;     /* parents, by index in the job */
  uint32_t parents[16];  /* their indices */
  int32_t *where;        /* per partition: executor holding the map output, RESULT_DONE, -1 */
  uint32_t nmissing;     /* partitions at -1 */
  uint32_t attempts;     /* task sets submitted: the next stage_attempt */
  uint32_t failures;     /* attempts that failed (taskset_failed or fetch failure) */
  struct sim_ts *active; /* the attempt the simulator believes active, or NULL */
  const char *why;       /* why the next attempt is submitted (for its mark) */
  bool lost_outputs;     /* the next attempt re-runs lost outputs (SIM_MARK_STAGE_RESUBMITTED);
                            false: a retry after the stage's own failure (a submission mark) */
  bool gpu;              /* its tasks ask for GPUs (gpu.c) */
} sim_stage;

typedef enum jstate { J_WAITING, J_RUNNING, J_SUCCEEDED, J_FAILED } jstate;

typedef struct sim_job {
  uint32_t nstages;
  sim_stage *stages; /* parents before children; the last is the result stage */
  jstate state;
  uint64_t submitted_ns, done_ns;
  bool cancelled; /* cancelled by its tag (pools.c): a stage failure fails the job */
} sim_job;

/* The payload of a task set: its "task binary", one per task set, handed back once. */
typedef struct task_binary {
  struct sim_ts *ts; /* the task set it belongs to */
  char lineage[48];  /* stands for the closure and its lineage */
} task_binary;

/* One submitted task set (one stage attempt). Kept to the end of the run. */
typedef struct sim_ts {
  tl_taskset_id id;
  uint32_t job, stage;    /* job number and the stage's index in it */
  uint32_t stage_attempt; /* as submitted */
  uint32_t ntasks;
  uint32_t *parts;   /* per index: its partition */
  int32_t *index_of; /* per partition of the stage: its index here, or -1 */
  uint8_t *done;     /* per index: done here (its result, or tl_partition_completed) */
  uint32_t ndone;
  bool zombie;               /* the simulator's view: done, failed, fetch-failed or cancelled */
  bool failed;               /* taskset_failed came */
  bool fetch_failed;         /* a task reported TL_END_FETCH_FAILED */
  bool draining;             /* became zombie with attempts in flight */
  uint32_t drained_attempts; /* attempts that ended through an update after it became zombie */
  bool released;             /* taskset_released came */
  task_binary *binary;       /* the payload, until released */
} sim_ts;

/* The jobs' table; a job's stages made when it arrives (EV_JOB); and all of it freed, with every
 * task set, at the end. */
void dag_init(sim *m);
void job_arrive(sim *m, uint32_t j);
void dag_free(sim *m);
/* The task set became zombie in the simulator's view (its stage's active attempt no more). */
void became_zombie(sim *m, sim_ts *ts);
/* A stage attempt failed: the stage is retried, or its job fails. */
void stage_failed(sim *m, sim_ts *ts, const char *why);
/* Submits what job j can run now, or ends the job when its result stage is complete. */
void dag_advance(sim *m, uint32_t j);
/* A result for partition p of from's stage landed on executor x. */
void output_landed(sim *m, sim_ts *from, uint32_t p, uint32_t x);

/* ---------------------------------------------------------------------------------------------
 * Callbacks (callbacks.c): the ledger calls them; ud is the sim
 * ------------------------------------------------------------------------------------------- */

/* One attempt, indexed by tid. */
struct sim_attempt {
  sim_ts *ts;
  uint32_t exec, core, index, attempt;
  uint64_t start_ns;
  uint64_t duration_ns;
  bool throws;       /* it will fail with an exception */
  bool late_running; /* its RUNNING update comes after its terminal one */
  bool proc_done;    /* its process stopped working on it (reported, killed, or died) */
  bool ended;        /* task_ended came */
  bool speculative;
  tl_grant *grants; /* the addresses it holds, from task_started to task_ended (gpu.c) */
  uint32_t ngrants;
};

void cb_task_started(void *ud, const tl_task_info *t);
void cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end);
void cb_taskset_failed(void *ud, const tl_taskset_info *info, const char *reason);
void cb_taskset_released(void *ud, const tl_taskset_info *info, void *payload);
void cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *r);
void cb_executor_removed(void *ud, const char *id, void *executor_ud, const tl_loss_reason *r);
void cb_kill_task(void *ud, tl_tid tid, const char *id, void *executor_ud, bool interrupt,
                  const char *reason);

/* ---------------------------------------------------------------------------------------------
 * Events (events.c)
 * ------------------------------------------------------------------------------------------- */

/* Does what the event says, at m->now. */
void run_event(sim *m, const sim_event *ev);

/* ---------------------------------------------------------------------------------------------
 * After every event (after_event.c)
 * ------------------------------------------------------------------------------------------- */

/* Peaks of tl_stats' sizes. */
#define STAT_FIELDS(XX)                                                                            \
  XX(executors_alive)                                                                              \
  XX(executors_decommissioning)                                                                    \
  XX(executors_pending_loss)                                                                       \
  XX(tombstones)                                                                                   \
  XX(hosts)                                                                                        \
  XX(racks)                                                                                        \
  XX(pools)                                                                                        \
  XX(places)                                                                                       \
  XX(tasksets_active)                                                                              \
  XX(tasksets_zombie)                                                                              \
  XX(attempts_running)                                                                             \
  XX(attempts_frozen)                                                                              \
  XX(tasks_pending)                                                                                \
  XX(tasks_speculatable)                                                                           \
  XX(events_queued)                                                                                \
  XX(mem_live_bytes)                                                                               \
  XX(mem_live_blocks)

#define STAT_ONE(name) +1
#define NSTATS ((size_t)(0 STAT_FIELDS(STAT_ONE))) /* the sizes of STAT_FIELDS */

/* The STAT_FIELDS sizes: their names, and field i of st. */
extern const char *const stat_names[NSTATS];
size_t *stat_field(tl_stats *st, size_t i);
/* tl_tick, offer rounds while tasks are pending, tl_check, peaks and a sample of the ledger's
 * sizes. */
void after_event(sim *m);

/* ---------------------------------------------------------------------------------------------
 * The summary (summary.c)
 * ------------------------------------------------------------------------------------------- */

typedef struct counters {
  uint64_t jobs_succeeded, jobs_failed; /* jobs by how they ended */
  uint64_t outcome[SIM_OUT_COUNT];      /* attempts by how they ended */
  uint64_t resubmitted;                 /* TL_END_RESUBMITTED: done map indices pending again */
  uint64_t stage_retries;               /* new attempts after a stage's own failure */
  uint64_t parent_resubmits;            /* parents resubmitted after a child's fetch failure */
  uint64_t output_resubmits;            /* complete stages resubmitted for lost outputs */
  uint64_t tasksets_failed;             /* taskset_failed (cancellations of a failed job too) */
  uint64_t fetch_failures;              /* TL_END_FETCH_FAILED attempts */
  uint64_t partition_completed;         /* tl_partition_completed calls */
  uint64_t crashes, crashes2;           /* one- and two-phase crashes */
  uint64_t reasons;                     /* second phases the ledger took */
  uint64_t reasons_refused;             /* second phases after the pending-loss timeout */
  uint64_t hangs, hb_timeouts;          /* hangs, and heartbeat expiries that found them */
  uint64_t pending_timeouts;            /* pending losses ended by the timeout */
  uint64_t decommissions;               /* executors decommissioned */
  uint64_t joins_late, joins_replace;   /* executors that joined after the start */
  uint64_t bad_sent;                    /* duplicate or late updates and heartbeats sent */
  uint64_t bad_stale, bad_gone;         /* of which refused with TL_ESTALE, TL_EGONE */
  uint64_t bad_other;                   /* of which answered otherwise: a problem */
  uint64_t zombies_drained;             /* task sets that became zombie with attempts in flight,
                                           drained through updates and were released */
  uint64_t zombies_failed_drained;      /* of which failed or fetch-failed */
  uint64_t zombie_attempts_drained;     /* attempts that ended in them after they became zombie */
  uint64_t events, checks;              /* events run; tl_check calls */
  uint64_t tag_cancels, tag_kills;      /* tl_cancel_tag and tl_kill_tag calls (pools.c) */
  uint64_t tag_cancelled_tasksets;      /* task sets they cancelled */
  uint64_t tag_killed_tasksets;         /* task sets whose attempts they killed */
  uint64_t jobs_cancelled;              /* jobs failed because their tag was cancelled */
  uint64_t speculative_launches;        /* speculative copies started (--speculation) */
} counters;

/* Prints the summary and the verdict on stdout; wall is the run's wall-clock seconds. */
void summary(sim *m, double wall, bool drained);

/* ---------------------------------------------------------------------------------------------
 * The run (main.c)
 * ------------------------------------------------------------------------------------------- */

/* The run: one per process (main.c's), handed to every function and to the library as ud.
 * Its fields are grouped by the file that owns them, one comment each, which names any other
 * file that writes them. */
struct sim {
  /* The run's machinery (main.c sets it up; every file uses it). */
  sim_options o;     /* as parsed (options.c) */
  sim_rng rng;       /* every random draw of the run */
  sim_queue q;       /* the events to come (world.c schedules them, main.c runs them) */
  sim_record rec;    /* what the trace and the SVG are written from */
  tl_scheduler *s;   /* the ledger under simulation */
  uint64_t now;      /* virtual nanoseconds: the ledger's clock (main.c's loop advances it) */
  uint64_t problems; /* contract violations the simulator saw (world.c's problem) */

  /* GPUs (gpu.c; executors.c, dag.c, callbacks.c, after_event.c, summary.c and main.c call it). */
  sim_gpu gpu;

  /* Executors (executors.c; events.c and callbacks.c move each one's ledger and proc). */
  sim_executor *execs;      /* every executor ever, by index (exec-N is index N - 1) */
  size_t nexecs, execs_cap; /* used and allocated */
  uint32_t hosts_made;      /* hosts named so far */
  uint32_t late_on_host;    /* late executors placed on the newest host */

  /* The DAG layer (dag.c; callbacks.c counts payloads_live down). */
  sim_job *jobs;           /* --jobs entries; those not yet submitted are J_WAITING */
  uint32_t jobs_submitted; /* jobs that arrived */
  uint32_t next_stage_id;  /* stage ids are global, from 0 */
  sim_ts **ts;             /* every task set, in submission order, kept to the end */
  size_t nts, ts_cap;      /* used and allocated */
  size_t payloads_live;    /* payloads submitted and not yet handed back (callbacks.c takes
                              them back) */

  /* Attempts (callbacks.c, at task_started; world.c's attempt_of finds them). */
  sim_attempt *attempts; /* by tid (dense from 1) */
  size_t attempts_cap;   /* allocated */
  uint64_t max_tid;      /* the highest tid launched */

  /* After every event (after_event.c). */
  uint64_t tick_at;         /* the earliest EV_TICK scheduled, or UINT64_MAX */
  tl_stats st;              /* after the last event */
  size_t stat_peak[NSTATS]; /* the peak of each STAT_FIELDS size */
  sim_sample last_sample;   /* the last one recorded */
  bool have_sample;         /* one was recorded */
  bool check_failed;        /* tl_check failed at least once (main.c's last check too) */
  char check_why[256];      /* its first violation */

  /* The run's course and its end (main.c). */
  bool faults_on;         /* fault processes run until every job is done */
  bool stopping;          /* the run is over: the DAG layer submits nothing more */
  bool progress;          /* a progress line on stderr */
  FILE *journal;          /* --journal's file, or NULL */
  int journal_err;        /* the first write error (world.c's journal_line), or 0 */
  size_t retained;        /* task sets not released when the run ended */
  size_t payloads_at_end; /* payloads not handed back before tl_scheduler_free */
  size_t results_at_end;  /* results not freed before tl_scheduler_free */

  /* What the summary reports (summary.c); each file counts what it sees. */
  counters c;
};

#endif
