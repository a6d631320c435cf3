/* tl-sim: a discrete-event simulation of a cluster driving one taskledger scheduler through its
 * public API, in virtual time (docs/sim.md). Executors on hosts in racks run jobs made of stages
 * (chains and fan-in DAGs) with shuffle dependencies, under injected faults; a small DAG layer
 * on the callbacks submits stages, tracks map outputs and resubmits what was lost. At the end a
 * summary and a verdict: the ledger drained and every payload came back, or what was retained.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "record.h"
#include "sim.h"
#include "taskledger.h"

#define MS UINT64_C(1000000)
#define RESULT_DONE (-2)      /* a result stage's partition whose result reached the driver */
#define MAX_STAGE_ATTEMPTS 64 /* a stage resubmitted this often fails its job whatever else */

/* ---------------------------------------------------------------------------------------------
 * Options
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
  const char *id_prefix;      /* executor ids are the prefix and a number: 1 to SIM_PREFIX_MAX
                                 bytes ("exec-") */
  bool quiet;                 /* no progress line, no event log */
} sim_options;

/* The longest --id-prefix: with the up to 15 digits of an executor's number the id stays
 * within the library's TL_ID_MAX - 1 bytes. */
#define SIM_PREFIX_MAX (TL_ID_MAX - 1 - 15)

static void options_init(sim_options *o) {
  memset(o, 0, sizeof *o);
  o->executors = 12;
  o->cores = 4;
  o->per_host = 2;
  o->hosts_per_rack = 3;
  o->jobs = 20;
  o->stages = 3;
  o->tasks = 40;
  o->duration_s = 1.0;
  o->job_interval_s = 3.0;
  o->task_failure = 0.03;
  o->crash_rate = 0.05;
  o->crash2_rate = 0.05;
  o->reason_delay_s = 2.0;
  o->reason_lost = 0.3;
  o->hang_rate = 0.04;
  o->decommission_rate = 0.04;
  o->join_rate = 0.03;
  o->duplicate_rate = 0.02;
  o->late_rate = 0.02;
  o->stage_retries = 4;
  o->max_task_failures = 2;
  o->heartbeat_s = 1.0;
  o->heartbeat_timeout_s = 10.0;
  o->pending_timeout_s = 15.0;
  o->seed = 1;
  o->id_prefix = "exec-";
  o->until_s = 3600.0;
  o->check_every = 1;
}

/* ---------------------------------------------------------------------------------------------
 * The simulated world
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
} sim_executor;

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
} sim_stage;

typedef enum jstate { J_WAITING, J_RUNNING, J_SUCCEEDED, J_FAILED } jstate;

typedef struct sim_job {
  uint32_t nstages;
  sim_stage *stages; /* parents before children; the last is the result stage */
  jstate state;
  uint64_t submitted_ns, done_ns;
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

/* One attempt, indexed by tid. */
typedef struct sim_attempt {
  sim_ts *ts;
  uint32_t exec, core, index, attempt;
  uint64_t start_ns;
  uint64_t duration_ns;
  bool throws;       /* it will fail with an exception */
  bool late_running; /* its RUNNING update comes after its terminal one */
  bool proc_done;    /* its process stopped working on it (reported, killed, or died) */
  bool ended;        /* task_ended came */
  bool speculative;
} sim_attempt;

/* Event kinds. */
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
} counters;

typedef struct sim {
  sim_options o;            /* as parsed */
  sim_rng rng;              /* every random draw of the run */
  sim_queue q;              /* the events to come */
  sim_record rec;           /* what the trace is written from */
  tl_scheduler *s;          /* the ledger under simulation */
  uint64_t now;             /* virtual nanoseconds: the ledger's clock */
  sim_executor *execs;      /* every executor ever, by index (exec-N is index N - 1) */
  size_t nexecs, execs_cap; /* used and allocated */
  uint32_t hosts_made;      /* hosts named so far */
  uint32_t late_on_host;    /* late executors placed on the newest host */
  sim_job *jobs;            /* --jobs entries; those not yet submitted are J_WAITING */
  uint32_t jobs_submitted;  /* jobs that arrived */
  uint32_t next_stage_id;   /* stage ids are global, from 0 */
  sim_ts **ts;              /* every task set, in submission order, kept to the end */
  size_t nts, ts_cap;       /* used and allocated */
  sim_attempt *attempts;    /* by tid (dense from 1) */
  size_t attempts_cap;      /* allocated */
  uint64_t max_tid;         /* the highest tid launched */
  uint64_t tick_at;         /* the earliest EV_TICK scheduled, or UINT64_MAX */
  size_t payloads_live;     /* payloads submitted and not yet handed back */
  size_t stat_peak[32];     /* the peak of each STAT_FIELDS size */
  tl_stats st;              /* after the last event */
  sim_sample last_sample;   /* the last one recorded */
  bool have_sample;         /* one was recorded */
  bool check_failed;        /* tl_check failed at least once */
  char check_why[256];      /* its first violation */
  uint64_t problems;        /* contract violations the simulator saw */
  bool faults_on;           /* fault processes run until every job is done */
  bool stopping;            /* the run is over: the DAG layer submits nothing more */
  size_t retained;          /* task sets not released when the run ended */
  size_t payloads_at_end;   /* payloads not handed back before tl_scheduler_free */
  size_t results_at_end;    /* results not freed before tl_scheduler_free */
  bool progress;            /* a progress line on stderr */
  FILE *journal;            /* --journal's file, or NULL */
  int journal_err;          /* the first write error, or 0 */
  counters c;               /* what the summary reports */
} sim;

static size_t results_live; /* result buffers sent in FINISHED updates and not yet freed */

static void result_free(void *p) {
  free(p);
  results_live--;
}

static void *result_new(void) {
  void *p = malloc(32);
  if (!p) {
    fprintf(stderr, "tl-sim: out of memory\n");
    exit(2);
  }
  memset(p, 0x5a, 32);
  results_live++;
  return p;
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "tl-sim: out of memory\n");
    exit(2);
  }
  return p;
}

static void grow(void **items, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return;
  size_t next = *cap ? *cap : 64;
  while (next < need)
    next *= 2;
  void *p = realloc(*items, next * size);
  if (!p) {
    fprintf(stderr, "tl-sim: out of memory\n");
    exit(2);
  }
  memset((char *)p + *cap * size, 0, (next - *cap) * size);
  *items = p;
  *cap = next;
}

#if defined(__GNUC__)
#define PRINTF_LIKE(a, b) __attribute__((format(printf, a, b)))
#else
#define PRINTF_LIKE(a, b)
#endif

static void logf_(sim *m, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void problem(sim *m, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void mark(sim *m, uint32_t exec, sim_mark_kind kind, const char *fmt, ...) PRINTF_LIKE(4, 5);

/* One line of the event log (stdout, unless --quiet). */
static void logf_(sim *m, const char *fmt, ...) {
  if (m->o.quiet)
    return;
  if (m->progress)
    fputs("\r\033[K", stderr);
  printf("%10.3f  ", (double)m->now / 1e9);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
}

static void problem(sim *m, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  m->problems++;
  fprintf(stderr, "tl-sim: at %.3f s: %s\n", (double)m->now / 1e9, buf);
}

static void oom(void) {
  fprintf(stderr, "tl-sim: out of memory\n");
  exit(2);
}

static void mark(sim *m, uint32_t exec, sim_mark_kind kind, const char *fmt, ...) {
  char buf[SIM_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (sim_record_mark(&m->rec, m->now, exec, kind, buf) < 0)
    oom();
}

static void schedule(sim *m, uint64_t at, uint8_t kind, uint32_t exec, uint64_t tid) {
  sim_event e = {.t_ns = at, .kind = kind, .exec = exec, .tid = tid};
  if (sim_queue_push(&m->q, e) < 0)
    oom();
}

static void schedule_update(sim *m, uint64_t at, uint32_t exec, uint64_t tid, tl_task_state st,
                            tl_end_kind failure) {
  sim_event e = {.t_ns = at,
                 .kind = EV_BAD_UPDATE,
                 .exec = exec,
                 .tid = tid,
                 .state = (uint8_t)st,
                 .failure = (uint8_t)failure};
  if (sim_queue_push(&m->q, e) < 0)
    oom();
}

static uint64_t secs(double s) { return s <= 0 ? 0 : (uint64_t)(s * 1e9); }

/* The next arrival of a Poisson process of this rate per second; 0 rate: never. */
static void schedule_poisson(sim *m, uint8_t kind, double rate) {
  if (rate <= 0)
    return;
  schedule(m, m->now + 1 + secs(sim_rng_exp(&m->rng, 1.0 / rate)), kind, 0, 0);
}

static uint64_t sim_clock(void *ud) { return ((sim *)ud)->now; }

static void journal_line(void *ud, const char *line) {
  sim *m = ud;
  if (m->journal && fprintf(m->journal, "%s\n", line) < 0)
    m->journal_err = errno ? errno : EIO;
}

static uint32_t exec_of(const sim *m, const char *id) {
  size_t n = strlen(m->o.id_prefix);
  if (strncmp(id, m->o.id_prefix, n) != 0)
    return UINT32_MAX;
  return (uint32_t)strtoul(id + n, NULL, 10) - 1;
}

/* An executor's ud is its index + 1 (m->execs moves as it grows, so no pointer into it):
 * executor_lost finds the executor by it, without parsing its id. */
static void *exec_ud(uint32_t x) { return (void *)(uintptr_t)(x + 1u); }
static uint32_t exec_of_ud(const void *ud) { return (uint32_t)((uintptr_t)ud - 1u); }

static sim_attempt *attempt_of(sim *m, uint64_t tid) {
  return tid >= 1 && tid <= m->max_tid ? &m->attempts[tid] : NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Executors
 * ------------------------------------------------------------------------------------------- */

/* Registers a new executor on host_index (UINT32_MAX: a new host for a late joiner). */
static void executor_join(sim *m, uint32_t host_index, const char *why) {
  if (host_index == UINT32_MAX) {
    if (m->late_on_host == 0 || m->late_on_host >= m->o.per_host) {
      host_index = m->hosts_made++;
      m->late_on_host = 0;
    } else {
      host_index = m->hosts_made - 1;
    }
    m->late_on_host++;
  }
  grow((void **)&m->execs, &m->execs_cap, m->nexecs + 1, sizeof *m->execs);
  uint32_t x = (uint32_t)m->nexecs++;
  sim_executor *e = &m->execs[x];
  snprintf(e->id, sizeof e->id, "%s%" PRIu32, m->o.id_prefix, x + 1);
  snprintf(e->host, sizeof e->host, "host-%" PRIu32, host_index + 1);
  snprintf(e->rack, sizeof e->rack, "rack-%" PRIu32, host_index / m->o.hosts_per_rack + 1);
  e->host_index = host_index;
  e->ledger = X_ALIVE;
  e->proc = P_RUNNING;
  e->core_tid = xcalloc(m->o.cores, sizeof *e->core_tid);
  uint32_t index;
  if (sim_record_exec(&m->rec, e->id, e->host, e->rack, m->o.cores, m->now, &index) < 0)
    oom();
  tl_executor_desc d = {
      .id = e->id, .host = e->host, .rack = e->rack, .cores = m->o.cores, .ud = exec_ud(x)};
  int rc = tl_executor_add(m->s, &d);
  if (rc != TL_OK)
    problem(m, "tl_executor_add(%s): %s", e->id, tl_err_name(rc));
  mark(m, x, SIM_MARK_JOINED, "%s on %s (%s)", e->id, e->host, why);
  if (m->now > 0)
    logf_(m, "%s joins on %s (%s)", e->id, e->host, why);
  /* Heartbeats start at a random phase so that executors do not beat in step. */
  schedule(m, m->now + 1 + secs(sim_rng_unit(&m->rng) * m->o.heartbeat_s), EV_HEARTBEAT, x, 0);
}

/* The executor is gone from the ledger (its executor_removed): the record's lane ends and a
 * replacement is started. */
static void executor_removed(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  e->ledger = X_GONE;
  sim_record_exec_gone(&m->rec, x, m->now);
  if (!e->shutdown && m->faults_on)
    schedule(m, m->now + secs(2.0 + 3.0 * sim_rng_unit(&m->rng)), EV_REPLACE, x, 0);
}

/* An executor a fault may hit: in the ledger, ALIVE, its process working. */
static int pick_executor(sim *m, bool allow_decom) {
  uint32_t n = 0;
  for (size_t i = 0; i < m->nexecs; i++)
    if ((m->execs[i].ledger == X_ALIVE || (allow_decom && m->execs[i].ledger == X_DECOM)) &&
        m->execs[i].proc == P_RUNNING)
      n++;
  if (n <= 1) /* leave the cluster one executor */
    return -1;
  uint32_t k = sim_rng_below(&m->rng, n);
  for (size_t i = 0; i < m->nexecs; i++)
    if ((m->execs[i].ledger == X_ALIVE || (allow_decom && m->execs[i].ledger == X_DECOM)) &&
        m->execs[i].proc == P_RUNNING && k-- == 0)
      return (int)i;
  return -1;
}

/* Updates sent by a process that died with work in flight: they reach the driver after the
 * loss, and must be refused (TL_ESTALE while frozen, TL_EGONE once removed). */
static void in_flight_reports(sim *m, uint32_t x) {
  for (uint64_t tid = 1; tid <= m->max_tid; tid++) {
    sim_attempt *a = &m->attempts[tid];
    if (a->ts && a->exec == x && !a->proc_done) {
      a->proc_done = true;
      if (sim_rng_unit(&m->rng) < m->o.late_rate)
        schedule_update(m, m->now + 1 + secs(0.05 * sim_rng_unit(&m->rng)), x, tid,
                        TL_TASK_FINISHED, TL_END_SUCCESS);
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * The DAG layer
 * ------------------------------------------------------------------------------------------- */

static void dag_advance(sim *m, uint32_t j);

static bool stage_complete(const sim_stage *st) { return st->nmissing == 0; }

/* The task set became zombie in the simulator's view; if attempts still run, its drain is
 * watched (the SPARK-18553 shape: they end, running reaches 0, the payload comes back). */
static void became_zombie(sim *m, sim_ts *ts) {
  if (ts->zombie)
    return;
  ts->zombie = true;
  sim_stage *st = &m->jobs[ts->job].stages[ts->stage];
  if (st->active == ts)
    st->active = NULL;
  tl_taskset_status status;
  if (tl_taskset_get(m->s, ts->id, &status) == TL_OK && status.running > 0)
    ts->draining = true;
}

static void submit_stage(sim *m, uint32_t j, uint32_t k) {
  sim_job *job = &m->jobs[j];
  sim_stage *st = &job->stages[k];
  sim_ts *ts = xcalloc(1, sizeof *ts);
  ts->job = j;
  ts->stage = k;
  ts->stage_attempt = st->attempts;
  ts->parts = xcalloc(st->nmissing, sizeof *ts->parts);
  ts->index_of = xcalloc(st->nparts, sizeof *ts->index_of);
  for (uint32_t p = 0; p < st->nparts; p++) {
    ts->index_of[p] = -1;
    if (st->where[p] == -1) {
      ts->index_of[p] = (int32_t)ts->ntasks;
      ts->parts[ts->ntasks++] = p;
    }
  }
  ts->done = xcalloc(ts->ntasks, 1);
  ts->binary = xcalloc(1, sizeof *ts->binary);
  ts->binary->ts = ts;
  snprintf(ts->binary->lineage, sizeof ts->binary->lineage, "job %" PRIu32 " stage %" PRIu32, j,
           st->stage_id);
  tl_taskset_desc d = {.stage_id = st->stage_id,
                       .stage_attempt = st->attempts,
                       .priority = j,
                       .ntasks = ts->ntasks,
                       .payload = ts->binary,
                       .shuffle_map = !st->result};
  int rc = tl_submit(m->s, &d, &ts->id);
  if (rc != TL_OK) {
    problem(m, "tl_submit(stage %" PRIu32 ".%" PRIu32 "): %s", st->stage_id, st->attempts,
            tl_err_name(rc));
    free(ts->binary);
    free(ts->parts);
    free(ts->index_of);
    free(ts->done);
    free(ts);
    return;
  }
  m->payloads_live++;
  grow((void **)&m->ts, &m->ts_cap, m->nts + 1, sizeof *m->ts);
  m->ts[m->nts++] = ts;
  st->active = ts;
  if (st->attempts == 0) {
    mark(m, SIM_NO_EXEC, SIM_MARK_STAGE_SUBMITTED,
         "job %" PRIu32 " stage %" PRIu32 ": %" PRIu32 " tasks", j, st->stage_id, ts->ntasks);
  } else {
    mark(m, SIM_NO_EXEC, st->lost_outputs ? SIM_MARK_STAGE_RESUBMITTED : SIM_MARK_STAGE_SUBMITTED,
         "job %" PRIu32 " stage %" PRIu32 ".%" PRIu32 ": %" PRIu32 " tasks, %s", j, st->stage_id,
         st->attempts, ts->ntasks, st->why ? st->why : "outputs lost");
    logf_(m,
          "job %" PRIu32 ": stage %" PRIu32 " attempt %" PRIu32 " submitted (%" PRIu32
          " tasks, %s)",
          j, st->stage_id, st->attempts, ts->ntasks, st->why ? st->why : "outputs lost");
  }
  st->attempts++;
  st->why = NULL;
  st->lost_outputs = false;
}

static void job_fail(sim *m, uint32_t j, const char *why) {
  sim_job *job = &m->jobs[j];
  if (job->state != J_RUNNING)
    return;
  job->state = J_FAILED;
  job->done_ns = m->now;
  m->c.jobs_failed++;
  mark(m, SIM_NO_EXEC, SIM_MARK_JOB_DONE, "job %" PRIu32 " failed: %s", j, why);
  logf_(m, "job %" PRIu32 " FAILED: %s", j, why);
  /* Cancel what still runs, as Spark does when a job fails. */
  for (uint32_t k = 0; k < job->nstages; k++) {
    sim_stage *st = &job->stages[k];
    bool live = false;
    for (size_t i = 0; i < m->nts; i++)
      if (m->ts[i]->job == j && m->ts[i]->stage == k && !m->ts[i]->released)
        live = true;
    if (!live)
      continue;
    if (st->active)
      became_zombie(m, st->active);
    int rc = tl_cancel_stage(m->s, st->stage_id, "job failed");
    if (rc != TL_OK && rc != TL_ENOENT)
      problem(m, "tl_cancel_stage(%" PRIu32 "): %s", st->stage_id, tl_err_name(rc));
  }
}

/* A stage attempt failed (taskset_failed, or a fetch failure): retry it or fail the job. */
static void stage_failed(sim *m, sim_ts *ts, const char *why) {
  sim_job *job = &m->jobs[ts->job];
  if (job->state != J_RUNNING)
    return;
  sim_stage *st = &job->stages[ts->stage];
  st->failures++;
  if (st->failures > m->o.stage_retries) {
    char buf[96];
    snprintf(buf, sizeof buf, "stage %" PRIu32 " failed %" PRIu32 " times", st->stage_id,
             st->failures);
    job_fail(m, ts->job, buf);
    return;
  }
  st->why = why;
  m->c.stage_retries++;
}

/* Spark's submitStage, in one pass: a stage is submitted when its job needs it, it has missing
 * partitions, no attempt of it is active and its parents are complete. A parent of an active
 * stage is not resubmitted until that stage's tasks report the missing input (fetch failure). */
static void dag_advance(sim *m, uint32_t j) {
  sim_job *job = &m->jobs[j];
  if (job->state != J_RUNNING || m->stopping)
    return;
  sim_stage *result = &job->stages[job->nstages - 1];
  if (stage_complete(result)) {
    job->state = J_SUCCEEDED;
    job->done_ns = m->now;
    m->c.jobs_succeeded++;
    mark(m, SIM_NO_EXEC, SIM_MARK_JOB_DONE, "job %" PRIu32 " succeeded", j);
    logf_(m, "job %" PRIu32 " succeeded (%.3f s)", j,
          (double)(job->done_ns - job->submitted_ns) / 1e9);
    return;
  }
  bool needed[64] = {false};
  needed[job->nstages - 1] = true;
  for (uint32_t k = job->nstages; k-- > 0;) {
    sim_stage *st = &job->stages[k];
    if (!needed[k] || stage_complete(st) || st->active)
      continue;
    for (uint32_t i = 0; i < st->nparents; i++)
      needed[st->parents[i]] = true;
  }
  for (uint32_t k = 0; k < job->nstages; k++) {
    sim_stage *st = &job->stages[k];
    if (!needed[k] || stage_complete(st) || st->active)
      continue;
    bool ready = true;
    for (uint32_t i = 0; i < st->nparents; i++)
      if (!stage_complete(&job->stages[st->parents[i]]))
        ready = false;
    if (!ready)
      continue;
    if (st->attempts >= MAX_STAGE_ATTEMPTS) {
      job_fail(m, j, "a stage was resubmitted too often");
      return;
    }
    if (st->attempts > 0) {
      if (!st->why) {
        /* Not after its own failure: its outputs were lost and a child needs them. */
        bool child_fetch = false;
        for (uint32_t c = k + 1; c < job->nstages; c++)
          for (uint32_t i = 0; i < job->stages[c].nparents; i++)
            if (job->stages[c].parents[i] == k && job->stages[c].attempts > 0)
              child_fetch = true;
        if (child_fetch) {
          st->why = "a child's fetch failed";
          st->lost_outputs = true;
          m->c.parent_resubmits++;
        } else {
          st->why = "its outputs were lost";
          st->lost_outputs = true;
          m->c.output_resubmits++;
        }
      }
    }
    submit_stage(m, j, k);
  }
}

/* A result landed for partition p of the stage (from any attempt). */
static void output_landed(sim *m, sim_ts *from, uint32_t p, uint32_t x) {
  sim_job *job = &m->jobs[from->job];
  sim_stage *st = &job->stages[from->stage];
  if (job->state != J_RUNNING)
    return;
  if (st->where[p] == -1) {
    st->where[p] = st->result ? RESULT_DONE : (int32_t)x;
    st->nmissing--;
  } else if (!st->result && st->where[p] != (int32_t)x && st->where[p] >= 0) {
    st->where[p] = (int32_t)x; /* the newest copy; both are live */
  }
  sim_ts *active = st->active;
  if (active && active != from && active->index_of[p] >= 0) {
    uint32_t i = (uint32_t)active->index_of[p];
    if (!active->done[i]) {
      /* The header's tl_partition_completed: the result came from another attempt. */
      int rc = tl_partition_completed(m->s, st->stage_id, i);
      if (rc != TL_OK)
        problem(m, "tl_partition_completed(%" PRIu32 ", %" PRIu32 "): %s", st->stage_id, i,
                tl_err_name(rc));
      m->c.partition_completed++;
      active->done[i] = 1;
      if (++active->ndone == active->ntasks)
        became_zombie(m, active);
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Callbacks
 * ------------------------------------------------------------------------------------------- */

static void cb_task_started(void *ud, const tl_task_info *t) {
  sim *m = ud;
  task_binary *b = t->payload;
  uint32_t x = exec_of(m, t->executor_id);
  if (x >= m->nexecs || !b) {
    problem(m, "task_started on unknown executor %s", t->executor_id);
    return;
  }
  sim_executor *e = &m->execs[x];
  grow((void **)&m->attempts, &m->attempts_cap, t->tid + 1, sizeof *m->attempts);
  if (t->tid > m->max_tid)
    m->max_tid = t->tid;
  sim_attempt *a = &m->attempts[t->tid];
  a->ts = b->ts;
  a->exec = x;
  a->index = t->index;
  a->attempt = t->attempt;
  a->speculative = t->speculative;
  a->start_ns = m->now;
  a->core = UINT32_MAX;
  for (uint32_t c = 0; c < m->o.cores; c++)
    if (e->core_tid[c] == 0) {
      e->core_tid[c] = t->tid;
      a->core = c;
      e->busy++;
      break;
    }
  if (a->core == UINT32_MAX) {
    problem(m, "tid %" PRIu64 " launched on %s beyond its cores", t->tid, e->id);
    a->core = 0;
  }
  /* Its plan, drawn at launch so that one seed gives one run. */
  double mean = m->o.duration_s;
  double d = mean * (0.3 + sim_rng_exp(&m->rng, 0.7));
  a->duration_ns = secs(d) + 1;
  a->throws = sim_rng_unit(&m->rng) < m->o.task_failure;
  a->late_running = sim_rng_unit(&m->rng) < m->o.late_rate;
  if (e->proc != P_RUNNING)
    return; /* a hung process never takes up the launch */
  uint64_t launch = 1 + secs(0.002 + 0.01 * sim_rng_unit(&m->rng));
  if (!a->late_running)
    schedule(m, m->now + launch, EV_RUNNING, x, t->tid);
  if (m->jobs[a->ts->job].stages[a->ts->stage].nparents > 0)
    schedule(m, m->now + launch + a->duration_ns / 10, EV_FETCH, x, t->tid);
  schedule(m, m->now + launch + a->duration_ns, EV_FINISH, x, t->tid);
}

static sim_outcome outcome_of(tl_end_kind k, bool zombie) {
  switch (k) {
  case TL_END_SUCCESS:
    return zombie ? SIM_OUT_ZOMBIE : SIM_OUT_SUCCESS;
  case TL_END_FETCH_FAILED:
    return SIM_OUT_FETCH_FAILED;
  case TL_END_KILLED:
    return SIM_OUT_KILLED;
  case TL_END_EXECUTOR_LOST:
    return SIM_OUT_LOST;
  default:
    return SIM_OUT_FAILED;
  }
}

static void cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  sim *m = ud;
  sim_attempt *a = attempt_of(m, t->tid);
  task_binary *b = t->payload;
  if (!a || !a->ts || !b || b->ts != a->ts) {
    problem(m, "task_ended for unknown tid %" PRIu64, t->tid);
    if (end->kind == TL_END_SUCCESS && end->result && end->result_free)
      end->result_free(end->result);
    return;
  }
  sim_ts *ts = a->ts;
  if (end->kind == TL_END_RESUBMITTED) {
    /* A done map index whose output was on a lost executor is pending again. */
    m->c.resubmitted++;
    if (!ts->zombie && ts->done[t->index]) {
      ts->done[t->index] = 0;
      ts->ndone--;
    }
    return;
  }
  if (a->ended) {
    problem(m, "task_ended twice for tid %" PRIu64, t->tid);
    return;
  }
  a->ended = true;
  sim_executor *e = &m->execs[a->exec];
  if (a->core < m->o.cores && e->core_tid[a->core] == t->tid) {
    e->core_tid[a->core] = 0;
    e->busy--;
  }
  sim_outcome out = outcome_of(end->kind, ts->zombie);
  m->c.outcome[out]++;
  if (ts->zombie && end->kind != TL_END_EXECUTOR_LOST)
    ts->drained_attempts++;
  sim_slice sl = {.exec = a->exec,
                  .core = a->core,
                  .start_ns = a->start_ns,
                  .end_ns = m->now,
                  .tid = t->tid,
                  .job = ts->job,
                  .stage_id = t->stage_id,
                  .stage_attempt = t->stage_attempt,
                  .index = t->index,
                  .attempt = t->attempt,
                  .outcome = (uint8_t)out,
                  .speculative = t->speculative};
  if (sim_record_slice(&m->rec, &sl) < 0)
    oom();
  if (end->kind == TL_END_SUCCESS) {
    if (end->result) {
      if (end->result_free)
        end->result_free(end->result);
      else
        problem(m, "a result without result_free");
    }
    if (!ts->zombie && !ts->done[t->index]) {
      ts->done[t->index] = 1;
      if (++ts->ndone == ts->ntasks)
        became_zombie(m, ts);
    }
    output_landed(m, ts, ts->parts[t->index], a->exec);
    dag_advance(m, ts->job);
  } else if (end->kind == TL_END_FETCH_FAILED) {
    m->c.fetch_failures++;
    if (!ts->fetch_failed && !ts->failed) {
      ts->fetch_failed = true;
      bool was_zombie = ts->zombie;
      became_zombie(m, ts);
      if (!was_zombie) {
        logf_(m, "job %" PRIu32 ": stage %" PRIu32 ".%" PRIu32 " fetch failed: %s", ts->job,
              t->stage_id, t->stage_attempt, end->message ? end->message : "");
        stage_failed(m, ts, "after a fetch failure");
      }
    }
    dag_advance(m, ts->job);
  }
  if (e->ledger == X_DECOM && e->busy == 0)
    schedule(m, m->now + 1, EV_DECOM_REMOVE, a->exec, 0);
}

static void cb_taskset_failed(void *ud, const tl_taskset_info *info, const char *reason) {
  sim *m = ud;
  sim_ts *ts = NULL;
  for (size_t i = m->nts; i-- > 0;)
    if (m->ts[i]->id == info->id) {
      ts = m->ts[i];
      break;
    }
  if (!ts) {
    problem(m, "taskset_failed for unknown task set %" PRIu64, info->id);
    return;
  }
  if (ts->failed)
    problem(m, "taskset_failed twice for task set %" PRIu64, info->id);
  ts->failed = true;
  m->c.tasksets_failed++;
  bool was_zombie = ts->zombie;
  became_zombie(m, ts);
  mark(m, SIM_NO_EXEC, SIM_MARK_STAGE_FAILED, "stage %" PRIu32 ".%" PRIu32 ": %.90s",
       info->stage_id, info->stage_attempt, reason ? reason : "");
  logf_(m, "job %" PRIu32 ": stage %" PRIu32 ".%" PRIu32 " failed: %s", ts->job, info->stage_id,
        info->stage_attempt, reason ? reason : "");
  if (!was_zombie)
    stage_failed(m, ts, "after its task set failed");
  dag_advance(m, ts->job);
}

static void cb_taskset_released(void *ud, const tl_taskset_info *info, void *payload) {
  sim *m = ud;
  task_binary *b = payload;
  sim_ts *ts = b ? b->ts : NULL;
  if (!ts || ts->id != info->id || ts->binary != b || ts->released) {
    problem(m, "taskset_released for task set %" PRIu64 " with the wrong payload", info->id);
    return;
  }
  ts->released = true;
  ts->binary = NULL;
  free(b);
  m->payloads_live--;
  if (ts->draining && ts->drained_attempts > 0) {
    m->c.zombies_drained++;
    m->c.zombie_attempts_drained += ts->drained_attempts;
    if (ts->failed || ts->fetch_failed)
      m->c.zombies_failed_drained++;
  }
  mark(m, SIM_NO_EXEC, SIM_MARK_TASKSET_RELEASED,
       "task set %" PRIu64 " (stage %" PRIu32 ".%" PRIu32 ")%s", info->id, info->stage_id,
       info->stage_attempt, ts->draining ? ": a zombie drained" : "");
  sim_stage *st = &m->jobs[ts->job].stages[ts->stage];
  if (st->active == ts) {
    st->active = NULL;
    ts->zombie = true;
    dag_advance(m, ts->job);
  }
}

/* The executor of an executor_lost or executor_removed, by its ud; UINT32_MAX (and a problem)
 * if the event names another. */
static uint32_t lost_executor(sim *m, const char *event, const char *id, void *executor_ud) {
  uint32_t x = exec_of_ud(executor_ud);
  if (x >= m->nexecs || strcmp(m->execs[x].id, id) != 0) {
    problem(m, "%s for unknown %s", event, id);
    return UINT32_MAX;
  }
  return x;
}

/* A loss began. The ledger reports its end, whichever call or timeout ends it, with
 * executor_removed (below), in the same call for a loss with a real reason. */
static void cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *r) {
  sim *m = ud;
  uint32_t x = lost_executor(m, "executor_lost", id, executor_ud);
  if (x == UINT32_MAX)
    return;
  m->execs[x].ledger = X_PENDING;
  if (r->kind == TL_LOSS_PENDING) {
    mark(m, x, SIM_MARK_LOST_PENDING, "%s: reason pending", id);
  } else if (r->kind == TL_LOSS_HEARTBEAT_TIMEOUT) {
    m->c.hb_timeouts++;
    mark(m, x, SIM_MARK_HEARTBEAT_TIMEOUT, "%s: no heartbeat", id);
    logf_(m, "%s lost: heartbeat timeout", id);
  } else {
    mark(m, x, SIM_MARK_LOST, "%s: %s", id, r->message ? r->message : "lost");
  }
  /* Its map outputs are gone with it. */
  for (uint32_t j = 0; j < m->jobs_submitted; j++) {
    sim_job *job = &m->jobs[j];
    if (job->state != J_RUNNING)
      continue;
    for (uint32_t k = 0; k < job->nstages; k++) {
      sim_stage *st = &job->stages[k];
      if (st->result)
        continue;
      for (uint32_t p = 0; p < st->nparts; p++)
        if (st->where[p] == (int32_t)x) {
          st->where[p] = -1;
          st->nmissing++;
        }
    }
  }
  for (uint32_t j = 0; j < m->jobs_submitted; j++)
    dag_advance(m, j);
}

/* A loss ended: the executor is gone from the ledger. A pending loss that no reason ended says
 * so here (its second phase came from tl_tick's pending-loss timeout). */
static void cb_executor_removed(void *ud, const char *id, void *executor_ud,
                                const tl_loss_reason *r) {
  sim *m = ud;
  uint32_t x = lost_executor(m, "executor_removed", id, executor_ud);
  if (x == UINT32_MAX)
    return;
  if (m->execs[x].ledger != X_PENDING)
    problem(m, "executor_removed of %s without its executor_lost", id);
  if (r->kind == TL_LOSS_PENDING_TIMEOUT) {
    m->c.pending_timeouts++;
    mark(m, x, SIM_MARK_PENDING_TIMEOUT, "%s: no reason came", id);
    logf_(m, "%s: no reason came: the pending-loss timeout ended its loss", id);
  }
  executor_removed(m, x);
}

static void cb_kill_task(void *ud, tl_tid tid, const char *id, bool interrupt, const char *reason) {
  sim *m = ud;
  (void)interrupt;
  (void)reason;
  uint32_t x = exec_of(m, id);
  if (x < m->nexecs)
    schedule(m, m->now + 1 * MS, EV_KILL, x, tid);
}

/* ---------------------------------------------------------------------------------------------
 * Events
 * ------------------------------------------------------------------------------------------- */

static void job_arrive(sim *m, uint32_t j) {
  sim_job *job = &m->jobs[j];
  uint32_t n = m->o.stages;
  job->nstages = n;
  job->stages = xcalloc(n, sizeof *job->stages);
  job->state = J_RUNNING;
  job->submitted_ns = m->now;
  bool fan_in = (j % 2 == 1) && n > 2;
  for (uint32_t k = 0; k < n; k++) {
    sim_stage *st = &job->stages[k];
    st->stage_id = m->next_stage_id++;
    st->job = j;
    st->result = k == n - 1;
    uint32_t lo = m->o.tasks / 2 ? m->o.tasks / 2 : 1;
    st->nparts = lo + sim_rng_below(&m->rng, m->o.tasks + 1);
    st->where = xcalloc(st->nparts, sizeof *st->where);
    for (uint32_t p = 0; p < st->nparts; p++)
      st->where[p] = -1;
    st->nmissing = st->nparts;
    if (k == 0)
      continue;
    if (fan_in && st->result) {
      for (uint32_t i = 0; i < k && i < 16; i++)
        st->parents[st->nparents++] = i;
    } else if (!fan_in) {
      st->parents[st->nparents++] = k - 1;
    }
  }
  m->jobs_submitted = j + 1;
  logf_(m, "job %" PRIu32 " submitted: %" PRIu32 " stages (%s)", j, n, fan_in ? "fan-in" : "chain");
  dag_advance(m, j);
  if (j + 1 < m->o.jobs)
    schedule(m, m->now + secs(m->o.job_interval_s), EV_JOB, j + 1, 0);
}

/* Sends one update as an executor would and returns the result. */
static int send_update(sim *m, uint32_t x, uint64_t tid, tl_task_state state, tl_end_kind failure,
                       const char *msg) {
  tl_update u = {.state = state, .failure = failure, .message = msg};
  if (state == TL_TASK_FINISHED) {
    u.result = result_new();
    u.result_size = 32;
    u.result_free = result_free;
  }
  int rc = tl_status_update(m->s, m->execs[x].id, tid, &u);
  if (rc != TL_OK && u.result)
    result_free(u.result);
  return rc;
}

/* Sends a duplicate or late update, which the ledger must refuse. */
static void bad_update(sim *m, uint32_t x, uint64_t tid, tl_task_state state, tl_end_kind failure) {
  m->c.bad_sent++;
  int rc = send_update(m, x, tid, state, failure, "late or duplicate");
  if (rc == TL_ESTALE)
    m->c.bad_stale++;
  else if (rc == TL_EGONE)
    m->c.bad_gone++;
  else {
    m->c.bad_other++;
    problem(m, "a duplicate or late update for tid %" PRIu64 " from %s was answered %s", tid,
            m->execs[x].id, tl_err_name(rc));
  }
}

/* The attempt's process reports (FINISHED, FAILED or KILLED) unless it stopped. */
static bool attempt_live(sim *m, sim_attempt *a, uint32_t x) {
  return a && a->ts && a->exec == x && !a->proc_done && m->execs[x].proc == P_RUNNING;
}

static void terminal_update(sim *m, uint64_t tid, uint32_t x, tl_task_state st, tl_end_kind fk,
                            const char *msg) {
  sim_attempt *a = attempt_of(m, tid);
  a->proc_done = true;
  int rc = send_update(m, x, tid, st, fk, msg);
  if (rc != TL_OK && rc != TL_ESTALE)
    problem(m, "update for tid %" PRIu64 " from %s: %s", tid, m->execs[x].id, tl_err_name(rc));
  if (sim_rng_unit(&m->rng) < m->o.duplicate_rate)
    schedule_update(m, m->now + 1 + secs(0.02 * sim_rng_unit(&m->rng)), x, tid, st, fk);
  if (a->late_running)
    schedule_update(m, m->now + 1 + secs(0.02 * sim_rng_unit(&m->rng)), x, tid, TL_TASK_RUNNING,
                    TL_END_SUCCESS);
}

static void ev_fetch(sim *m, uint64_t tid, uint32_t x) {
  sim_attempt *a = attempt_of(m, tid);
  if (!attempt_live(m, a, x))
    return;
  sim_job *job = &m->jobs[a->ts->job];
  sim_stage *st = &job->stages[a->ts->stage];
  for (uint32_t i = 0; i < st->nparents; i++) {
    sim_stage *parent = &job->stages[st->parents[i]];
    for (uint32_t p = 0; p < parent->nparts; p++)
      if (parent->where[p] < 0) {
        char msg[96];
        snprintf(msg, sizeof msg, "shuffle %" PRIu32 " partition %" PRIu32 " is missing",
                 parent->stage_id, p);
        terminal_update(m, tid, x, TL_TASK_FAILED, TL_END_FETCH_FAILED, msg);
        return;
      }
  }
}

static void ev_finish(sim *m, uint64_t tid, uint32_t x) {
  sim_attempt *a = attempt_of(m, tid);
  if (!attempt_live(m, a, x))
    return;
  if (a->throws)
    terminal_update(m, tid, x, TL_TASK_FAILED, TL_END_EXCEPTION, "simulated task failure");
  else
    terminal_update(m, tid, x, TL_TASK_FINISHED, TL_END_SUCCESS, NULL);
}

static void ev_crash(sim *m, bool two_phase) {
  int pick = pick_executor(m, true);
  if (pick < 0)
    return;
  uint32_t x = (uint32_t)pick;
  sim_executor *e = &m->execs[x];
  e->proc = P_DEAD;
  in_flight_reports(m, x);
  bool by_app = sim_rng_unit(&m->rng) < 0.5;
  if (!two_phase) {
    m->c.crashes++;
    tl_loss_reason r = {.kind = TL_LOSS_EXITED,
                        .caused_by_app = by_app,
                        .exit_code = by_app ? 1 : 137,
                        .message = by_app ? "exited 1, caused by the app" : "exited 137"};
    logf_(m, "%s crashes (%s)", e->id, r.message);
    int rc = tl_executor_lost(m->s, e->id, &r);
    if (rc != TL_OK)
      problem(m, "tl_executor_lost(%s): %s", e->id, tl_err_name(rc));
    return;
  }
  m->c.crashes2++;
  tl_loss_reason r = {.kind = TL_LOSS_PENDING, .message = "connection closed"};
  bool never = sim_rng_unit(&m->rng) < m->o.reason_lost;
  logf_(m, "%s crashes: loss reported in two phases%s", e->id,
        never ? " (the reason will never come)" : "");
  int rc = tl_executor_lost(m->s, e->id, &r);
  if (rc != TL_OK)
    problem(m, "tl_executor_lost(%s, pending): %s", e->id, tl_err_name(rc));
  if (!never)
    schedule(m, m->now + 1 + secs(sim_rng_exp(&m->rng, m->o.reason_delay_s)), EV_REASON, x, by_app);
}

static void ev_reason(sim *m, uint32_t x, bool by_app) {
  sim_executor *e = &m->execs[x];
  tl_loss_reason r = {.kind = by_app ? TL_LOSS_EXITED : TL_LOSS_PROCESS_LOST,
                      .caused_by_app = by_app,
                      .exit_code = by_app ? 1 : 0,
                      .message = by_app ? "exited 1, caused by the app" : "process lost"};
  int rc = tl_executor_lost(m->s, e->id, &r);
  if (rc == TL_OK) { /* its executor_removed has ended the loss */
    m->c.reasons++;
    mark(m, x, SIM_MARK_LOST, "%s: %s", e->id, r.message);
    logf_(m, "%s: the real reason came: %s", e->id, r.message);
  } else if (rc == TL_EGONE) {
    m->c.reasons_refused++; /* the pending-loss timeout came first */
  } else {
    problem(m, "tl_executor_lost(%s, real reason): %s", e->id, tl_err_name(rc));
  }
}

static void ev_hang(sim *m) {
  int pick = pick_executor(m, false);
  if (pick < 0)
    return;
  uint32_t x = (uint32_t)pick;
  m->execs[x].proc = P_HUNG;
  m->c.hangs++;
  logf_(m, "%s hangs silently", m->execs[x].id);
  schedule(m, m->now + secs(m->o.heartbeat_timeout_s + 1.0 + 4.0 * sim_rng_unit(&m->rng)), EV_WAKE,
           x, 0);
}

/* A hung executor comes back: everything it says now must be refused with TL_EGONE. */
static void ev_wake(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  for (uint64_t tid = 1; tid <= m->max_tid; tid++) {
    sim_attempt *a = &m->attempts[tid];
    if (a->ts && a->exec == x && !a->proc_done) {
      a->proc_done = true;
      bad_update(m, x, tid, TL_TASK_FINISHED, TL_END_SUCCESS);
    }
  }
  m->c.bad_sent++;
  int rc = tl_executor_heartbeat(m->s, e->id);
  if (rc == TL_EGONE)
    m->c.bad_gone++;
  else {
    m->c.bad_other++;
    problem(m, "a heartbeat from the hung %s was answered %s", e->id, tl_err_name(rc));
  }
  logf_(m, "%s wakes up and is refused (removed)", e->id);
  e->proc = P_DEAD;
}

static void ev_decommission(sim *m) {
  int pick = pick_executor(m, false);
  if (pick < 0)
    return;
  uint32_t x = (uint32_t)pick;
  sim_executor *e = &m->execs[x];
  int rc = tl_executor_decommission(m->s, e->id, "scaling down");
  if (rc != TL_OK) {
    problem(m, "tl_executor_decommission(%s): %s", e->id, tl_err_name(rc));
    return;
  }
  m->c.decommissions++;
  e->ledger = X_DECOM;
  mark(m, x, SIM_MARK_DECOMMISSION, "%s: scaling down", e->id);
  logf_(m, "%s decommissioning (%" PRIu32 " attempts to drain)", e->id, e->busy);
  schedule(m, m->now + (e->busy == 0 ? 1 : secs(10 * m->o.duration_s)), EV_DECOM_REMOVE, x, 0);
}

static void ev_decom_remove(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  if (e->ledger != X_DECOM)
    return;
  e->proc = P_DEAD;
  in_flight_reports(m, x);
  tl_loss_reason r = {.kind = TL_LOSS_DECOMMISSIONED, .message = "decommissioned"};
  int rc = tl_executor_lost(m->s, e->id, &r);
  if (rc != TL_OK)
    problem(m, "tl_executor_lost(%s, decommissioned): %s", e->id, tl_err_name(rc));
}

static void ev_heartbeat(sim *m, uint32_t x) {
  sim_executor *e = &m->execs[x];
  if (e->proc != P_RUNNING || (e->ledger != X_ALIVE && e->ledger != X_DECOM))
    return;
  int rc = tl_executor_heartbeat(m->s, e->id);
  if (rc != TL_OK)
    problem(m, "tl_executor_heartbeat(%s): %s", e->id, tl_err_name(rc));
  schedule(m, m->now + secs(m->o.heartbeat_s), EV_HEARTBEAT, x, 0);
}

static void run_event(sim *m, const sim_event *ev) {
  switch (ev->kind) {
  case EV_JOB:
    job_arrive(m, ev->exec);
    break;
  case EV_HEARTBEAT:
    ev_heartbeat(m, ev->exec);
    break;
  case EV_RUNNING: {
    sim_attempt *a = attempt_of(m, ev->tid);
    if (attempt_live(m, a, ev->exec)) {
      int rc = send_update(m, ev->exec, ev->tid, TL_TASK_RUNNING, TL_END_SUCCESS, NULL);
      if (rc != TL_OK && rc != TL_ESTALE)
        problem(m, "RUNNING for tid %" PRIu64 ": %s", ev->tid, tl_err_name(rc));
    }
    break;
  }
  case EV_FETCH:
    ev_fetch(m, ev->tid, ev->exec);
    break;
  case EV_FINISH:
    ev_finish(m, ev->tid, ev->exec);
    break;
  case EV_KILL: {
    sim_attempt *a = attempt_of(m, ev->tid);
    if (attempt_live(m, a, ev->exec))
      terminal_update(m, ev->tid, ev->exec, TL_TASK_KILLED, TL_END_KILLED, "killed as asked");
    break;
  }
  case EV_BAD_UPDATE:
    bad_update(m, ev->exec, ev->tid, (tl_task_state)ev->state, (tl_end_kind)ev->failure);
    break;
  case EV_CRASH:
  case EV_CRASH2:
    if (!m->faults_on)
      break;
    ev_crash(m, ev->kind == EV_CRASH2);
    schedule_poisson(m, ev->kind, ev->kind == EV_CRASH ? m->o.crash_rate : m->o.crash2_rate);
    break;
  case EV_REASON:
    ev_reason(m, ev->exec, ev->tid != 0);
    break;
  case EV_HANG:
    if (!m->faults_on)
      break;
    ev_hang(m);
    schedule_poisson(m, EV_HANG, m->o.hang_rate);
    break;
  case EV_WAKE:
    ev_wake(m, ev->exec);
    break;
  case EV_DECOMMISSION:
    if (!m->faults_on)
      break;
    ev_decommission(m);
    schedule_poisson(m, EV_DECOMMISSION, m->o.decommission_rate);
    break;
  case EV_DECOM_REMOVE:
    ev_decom_remove(m, ev->exec);
    break;
  case EV_JOIN:
    if (!m->faults_on)
      break;
    m->c.joins_late++;
    executor_join(m, UINT32_MAX, "late");
    schedule_poisson(m, EV_JOIN, m->o.join_rate);
    break;
  case EV_REPLACE:
    if (!m->faults_on)
      break;
    m->c.joins_replace++;
    executor_join(m, m->execs[ev->exec].host_index, "replacement");
    break;
  case EV_TICK:
    break; /* tl_tick runs after every event */
  }
}

/* ---------------------------------------------------------------------------------------------
 * After every event
 * ------------------------------------------------------------------------------------------- */

static void offer_round(sim *m) {
  size_t n = 0, cap = 0;
  for (size_t i = 0; i < m->nexecs; i++)
    if (m->execs[i].ledger == X_ALIVE && m->execs[i].busy < m->o.cores)
      n++;
  if (n == 0)
    return;
  tl_offer *offers = xcalloc(n, sizeof *offers);
  n = 0;
  for (size_t i = 0; i < m->nexecs; i++) {
    sim_executor *e = &m->execs[i];
    if (e->ledger == X_ALIVE && e->busy < m->o.cores) {
      offers[n].executor_id = e->id;
      offers[n].cores = m->o.cores - e->busy;
      cap += offers[n].cores;
      n++;
    }
  }
  tl_launch *launches = xcalloc(cap, sizeof *launches);
  size_t nout = 0;
  int rc = tl_resource_offers(m->s, offers, n, launches, cap, &nout);
  if (rc != TL_OK)
    problem(m, "tl_resource_offers: %s", tl_err_name(rc));
  free(launches);
  free(offers);
}

static size_t *stat_field(tl_stats *st, size_t i) {
  size_t *fields[] = {
#define XX(name) &st->name,
      STAT_FIELDS(XX)
#undef XX
  };
  return fields[i];
}

static const char *const stat_names[] = {
#define XX(name) #name,
    STAT_FIELDS(XX)
#undef XX
};
#define NSTATS (sizeof stat_names / sizeof stat_names[0])

static void after_event(sim *m) {
  /* Time: what is due runs now (the losses it ends come as executor_removed); an EV_TICK waits
   * for the next deadline. */
  uint64_t next = tl_tick(m->s);
  tl_stats_get(m->s, &m->st);
  /* Offers while work is pending and a core is free. */
  for (int round = 0; round < 4 && m->st.tasks_pending > 0; round++) {
    uint64_t launched = m->st.launched;
    offer_round(m);
    tl_stats_get(m->s, &m->st);
    if (m->st.launched == launched)
      break;
  }
  if (next != TL_TICK_NEVER) {
    uint64_t at = m->now + (next ? next : 1);
    if (at < m->tick_at || m->tick_at <= m->now) {
      m->tick_at = at;
      schedule(m, at, EV_TICK, 0, 0);
    }
  }
  m->c.events++;
  if (m->o.check_every && m->c.events % m->o.check_every == 0) {
    char why[256];
    m->c.checks++;
    if (tl_check(m->s, why, sizeof why) != TL_OK && !m->check_failed) {
      m->check_failed = true;
      snprintf(m->check_why, sizeof m->check_why, "%s", why);
      problem(m, "tl_check: %s", why);
    }
  }
  for (size_t i = 0; i < NSTATS; i++)
    if (*stat_field(&m->st, i) > m->stat_peak[i])
      m->stat_peak[i] = *stat_field(&m->st, i);
  sim_sample smp = {.t_ns = m->now,
                    .attempts_running = (uint32_t)m->st.attempts_running,
                    .attempts_frozen = (uint32_t)m->st.attempts_frozen,
                    .tasksets_active = (uint32_t)m->st.tasksets_active,
                    .tasksets_zombie = (uint32_t)m->st.tasksets_zombie,
                    .executors_alive = (uint32_t)m->st.executors_alive,
                    .executors_pending_loss = (uint32_t)m->st.executors_pending_loss,
                    .tasks_pending = (uint32_t)m->st.tasks_pending};
  const sim_sample *last = &m->last_sample;
  bool same = m->have_sample && last->attempts_running == smp.attempts_running &&
              last->attempts_frozen == smp.attempts_frozen &&
              last->tasksets_active == smp.tasksets_active &&
              last->tasksets_zombie == smp.tasksets_zombie &&
              last->executors_alive == smp.executors_alive &&
              last->executors_pending_loss == smp.executors_pending_loss &&
              last->tasks_pending == smp.tasks_pending;
  if (!same) {
    if (sim_record_sample(&m->rec, &smp) < 0)
      oom();
    m->last_sample = smp;
    m->have_sample = true;
  }
}

static bool all_jobs_done(const sim *m) {
  if (m->jobs_submitted < m->o.jobs)
    return false;
  for (uint32_t j = 0; j < m->o.jobs; j++)
    if (m->jobs[j].state == J_RUNNING || m->jobs[j].state == J_WAITING)
      return false;
  return true;
}

/* Nothing more can happen that matters: every job is done, the ledger holds no task set, no
 * loss is pending, no hung executor is still to come back. */
static bool finished(sim *m) {
  if (!all_jobs_done(m))
    return false;
  if (m->st.tasksets_active || m->st.tasksets_zombie || m->st.attempts_running ||
      m->st.executors_pending_loss)
    return false;
  for (size_t i = 0; i < m->nexecs; i++)
    if (m->execs[i].proc == P_HUNG || m->execs[i].ledger == X_DECOM)
      return false;
  return true;
}

/* --metrics: the ledger's metrics at the end of the run (tl_metrics_text: Prometheus text), read
 * before the scheduler is freed. 0, or -1 after saying why. */
static int write_metrics(tl_scheduler *s, const char *path) {
  size_t needed = 0;
  if (tl_metrics_text(s, NULL, 0, &needed) != TL_OK)
    return -1;
  char *text = malloc(needed + 1);
  if (!text) {
    fprintf(stderr, "tl-sim: %s: out of memory\n", path);
    return -1;
  }
  int rc = tl_metrics_text(s, text, needed + 1, &needed);
  FILE *f = rc == TL_OK ? fopen(path, "w") : NULL;
  bool ok = f && fwrite(text, 1, needed, f) == needed;
  if (f && fclose(f) != 0)
    ok = false;
  if (!ok)
    fprintf(stderr, "tl-sim: %s: %s\n", path, rc != TL_OK ? tl_err_name(rc) : strerror(errno));
  free(text);
  return ok ? 0 : -1;
}

static double wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void progress_line(sim *m) {
  fprintf(stderr,
          "\r\033[Kt=%.1f s  tasks done %" PRIu64 "  jobs %" PRIu64 "/%" PRIu32
          "  executors alive %zu  in flight %zu",
          (double)m->now / 1e9, m->st.succeeded, m->c.jobs_succeeded + m->c.jobs_failed, m->o.jobs,
          m->st.executors_alive, m->st.attempts_running + m->st.attempts_frozen);
}

/* ---------------------------------------------------------------------------------------------
 * The run
 * ------------------------------------------------------------------------------------------- */

static void usage(FILE *f) {
  fputs("usage: tl-sim [options]   (docs/sim.md)\n"
        "  --executors N        executors at the start (12)\n"
        "  --cores N            cores per executor (4)\n"
        "  --per-host N         executors per host (2)\n"
        "  --hosts-per-rack N   hosts per rack (3)\n"
        "  --jobs N             jobs (20)\n"
        "  --stages N           stages per job, 1 to 16 (3)\n"
        "  --tasks N            mean tasks per stage (40)\n"
        "  --duration S         mean task duration in seconds (1)\n"
        "  --job-interval S     seconds between job submissions (3)\n"
        "  --task-failure P     probability that an attempt throws (0.03)\n"
        "  --crash R            one-phase executor crashes per second (0.05)\n"
        "  --crash2 R           two-phase crashes per second (0.05)\n"
        "  --reason-delay S     mean delay of a two-phase crash's reason (2)\n"
        "  --reason-lost P      probability that the reason never comes (0.3)\n"
        "  --hang R             silent hangs per second (0.04)\n"
        "  --decommission R     decommissionings per second (0.04)\n"
        "  --join R             late executor joins per second (0.03)\n"
        "  --duplicate P        probability of a duplicate terminal update (0.02)\n"
        "  --late P             probability of a late update (0.02)\n"
        "  --no-faults          every fault rate and probability 0\n"
        "  --stage-retries N    failed attempts a stage may retry (4)\n"
        "  --max-task-failures N  tl_config.max_task_failures (2)\n"
        "  --heartbeat S        heartbeat interval (1)\n"
        "  --heartbeat-timeout S  tl_config.heartbeat_timeout_ns (10)\n"
        "  --pending-timeout S  tl_config.pending_loss_timeout_ns (15)\n"
        "  --seed N             PRNG seed (1)\n"
        "  --until S            virtual time limit in seconds (3600)\n"
        "  --check-every N      tl_check after every N events, 0 only at the end (1)\n"
        "  --trace FILE.json    Chrome Trace Event JSON of the run (Perfetto)\n"
        "  --svg FILE.svg       an SVG timeline: the ledger's sizes above the executor lanes\n"
        "  --metrics FILE       the ledger's final metrics (tl_metrics_text, Prometheus text)\n"
        "  --journal FILE       the library's call journal\n"
        "  --id-prefix TEXT     executor ids are TEXT and a number (exec-)\n"
        "  --quiet              no event log, no progress line\n",
        f);
}

static int parse_args(sim_options *o, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      exit(0);
    }
    if (!strcmp(a, "--quiet")) {
      o->quiet = true;
      continue;
    }
    if (!strcmp(a, "--no-faults")) {
      o->task_failure = o->crash_rate = o->crash2_rate = o->hang_rate = 0;
      o->decommission_rate = o->join_rate = o->duplicate_rate = o->late_rate = 0;
      continue;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "tl-sim: %s needs a value (or is unknown)\n", a);
      return -1;
    }
    const char *v = argv[++i];
    char *end = NULL;
    errno = 0;
    double d = strtod(v, &end);
    bool num_ok = end && *end == '\0' && end != v && errno == 0 && d >= 0;
    struct {
      const char *name;
      uint32_t *u;
      double *f;
      uint32_t min, max;
    } const table[] = {
        {"--executors", &o->executors, NULL, 1, 10000},
        {"--cores", &o->cores, NULL, 1, 1024},
        {"--per-host", &o->per_host, NULL, 1, 1024},
        {"--hosts-per-rack", &o->hosts_per_rack, NULL, 1, 100000},
        {"--jobs", &o->jobs, NULL, 1, 100000},
        {"--stages", &o->stages, NULL, 1, 16},
        {"--tasks", &o->tasks, NULL, 1, 1000000},
        {"--stage-retries", &o->stage_retries, NULL, 0, 1000},
        {"--max-task-failures", &o->max_task_failures, NULL, 1, 65535},
        {"--check-every", &o->check_every, NULL, 0, UINT32_MAX},
        {"--duration", NULL, &o->duration_s, 0, 0},
        {"--job-interval", NULL, &o->job_interval_s, 0, 0},
        {"--task-failure", NULL, &o->task_failure, 0, 1},
        {"--crash", NULL, &o->crash_rate, 0, 0},
        {"--crash2", NULL, &o->crash2_rate, 0, 0},
        {"--reason-delay", NULL, &o->reason_delay_s, 0, 0},
        {"--reason-lost", NULL, &o->reason_lost, 0, 1},
        {"--hang", NULL, &o->hang_rate, 0, 0},
        {"--decommission", NULL, &o->decommission_rate, 0, 0},
        {"--join", NULL, &o->join_rate, 0, 0},
        {"--duplicate", NULL, &o->duplicate_rate, 0, 1},
        {"--late", NULL, &o->late_rate, 0, 1},
        {"--heartbeat", NULL, &o->heartbeat_s, 0, 0},
        {"--heartbeat-timeout", NULL, &o->heartbeat_timeout_s, 0, 0},
        {"--pending-timeout", NULL, &o->pending_timeout_s, 0, 0},
        {"--until", NULL, &o->until_s, 0, 0},
    };
    if (!strcmp(a, "--seed")) {
      errno = 0;
      unsigned long long s = strtoull(v, &end, 0);
      if (!end || *end || errno) {
        fprintf(stderr, "tl-sim: bad --seed %s\n", v);
        return -1;
      }
      o->seed = s;
      continue;
    }
    if (!strcmp(a, "--trace")) {
      o->trace_path = v;
      continue;
    }
    if (!strcmp(a, "--svg")) {
      o->svg_path = v;
      continue;
    }
    if (!strcmp(a, "--metrics")) {
      o->metrics_path = v;
      continue;
    }
    if (!strcmp(a, "--journal")) {
      o->journal_path = v;
      continue;
    }
    if (!strcmp(a, "--id-prefix")) {
      size_t n = strlen(v);
      if (n == 0 || n > SIM_PREFIX_MAX || strchr("0123456789", v[n - 1]) != NULL) {
        fprintf(stderr, "tl-sim: --id-prefix must be 1 to %d bytes, not ending in a digit\n",
                SIM_PREFIX_MAX);
        return -1;
      }
      o->id_prefix = v;
      continue;
    }
    bool found = false;
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++) {
      if (strcmp(a, table[k].name) != 0)
        continue;
      found = true;
      if (!num_ok ||
          (table[k].u && (d != (double)(uint32_t)d || d < table[k].min || d > table[k].max)) ||
          (table[k].f && table[k].max && d > table[k].max)) {
        fprintf(stderr, "tl-sim: bad value for %s: %s\n", a, v);
        return -1;
      }
      if (table[k].u)
        *table[k].u = (uint32_t)d;
      else
        *table[k].f = d;
    }
    if (!found) {
      fprintf(stderr, "tl-sim: unknown option %s\n", a);
      usage(stderr);
      return -1;
    }
  }
  if (o->heartbeat_timeout_s <= 0)
    o->hang_rate = 0; /* a hang is found only by heartbeat expiry */
  if (o->duration_s <= 0 || o->heartbeat_s <= 0) {
    fprintf(stderr, "tl-sim: --duration and --heartbeat must be more than 0\n");
    return -1;
  }
  return 0;
}

static void summary(sim *m, double wall, bool drained) {
  counters *c = &m->c;
  uint64_t attempts = 0;
  for (int i = 0; i < SIM_OUT_COUNT; i++)
    attempts += c->outcome[i];
  uint64_t parts = 0;
  for (uint32_t j = 0; j < m->jobs_submitted; j++)
    for (uint32_t k = 0; k < m->jobs[j].nstages; k++)
      parts += m->jobs[j].stages[k].nparts;
  printf("\n== tl-sim summary (seed %" PRIu64 ") ==\n", m->o.seed);
  printf("cluster             %" PRIu32 " executors x %" PRIu32 " cores, %" PRIu32
         " per host, %" PRIu32 " hosts per rack; %zu executors in all\n",
         m->o.executors, m->o.cores, m->o.per_host, m->o.hosts_per_rack, m->nexecs);
  printf("jobs                %" PRIu32 " submitted: %" PRIu64 " succeeded, %" PRIu64 " failed\n",
         m->jobs_submitted, c->jobs_succeeded, c->jobs_failed);
  printf("tasks               %" PRIu64 " partitions in %zu task sets\n", parts, m->nts);
  printf("attempts            %" PRIu64 " ended: %" PRIu64 " success, %" PRIu64
         " zombie success, %" PRIu64 " failed, %" PRIu64 " fetch failed, %" PRIu64
         " killed, %" PRIu64 " lost\n",
         attempts, c->outcome[SIM_OUT_SUCCESS], c->outcome[SIM_OUT_ZOMBIE],
         c->outcome[SIM_OUT_FAILED], c->outcome[SIM_OUT_FETCH_FAILED], c->outcome[SIM_OUT_KILLED],
         c->outcome[SIM_OUT_LOST]);
  printf("losses              %" PRIu64 " crashes, %" PRIu64 " two-phase (%" PRIu64
         " reasons came, %" PRIu64 " pending-loss timeouts, %" PRIu64
         " late reasons refused), %" PRIu64 " hangs (%" PRIu64 " heartbeat timeouts), %" PRIu64
         " decommissioned\n",
         c->crashes, c->crashes2, c->reasons, c->pending_timeouts, c->reasons_refused, c->hangs,
         c->hb_timeouts, c->decommissions);
  printf("joins               %" PRIu64 " replacements, %" PRIu64 " late\n", c->joins_replace,
         c->joins_late);
  printf("retries             %" PRIu64 " task sets failed, %" PRIu64 " fetch failures, %" PRIu64
         " stage retries, %" PRIu64 " map outputs re-run (TL_END_RESUBMITTED)\n",
         c->tasksets_failed, c->fetch_failures, c->stage_retries, c->resubmitted);
  printf("resubmissions       %" PRIu64 " parent stages after fetch failures, %" PRIu64
         " stages whose outputs were lost, %" PRIu64 " tl_partition_completed\n",
         c->parent_resubmits, c->output_resubmits, c->partition_completed);
  printf("bad updates         %" PRIu64 " sent: %" PRIu64 " ESTALE, %" PRIu64 " EGONE, %" PRIu64
         " accepted or otherwise answered\n",
         c->bad_sent, c->bad_stale, c->bad_gone, c->bad_other);
  printf("zombies drained     %" PRIu64 " task sets (%" PRIu64 " failed or fetch-failed) became "
         "zombie with attempts in flight, drained to zero (%" PRIu64
         " attempts ended after) and were released: SPARK-18553's shape\n",
         c->zombies_drained, c->zombies_failed_drained, c->zombie_attempts_drained);
  printf("ledger              launched %" PRIu64 ", succeeded %" PRIu64 ", failed %" PRIu64
         ", killed %" PRIu64 ", stale %" PRIu64 ", released %" PRIu64 "\n",
         m->st.launched, m->st.succeeded, m->st.failed, m->st.killed, m->st.stale_updates,
         m->st.tasksets_released);
  printf("%-27s %10s %10s\n", "map (tl_stats)", "peak", "final");
  for (size_t i = 0; i < NSTATS; i++)
    printf("  %-25s %10zu %10zu\n", stat_names[i], m->stat_peak[i], *stat_field(&m->st, i));
  printf("simulated time      %.3f s\n", (double)m->now / 1e9);
  printf("events              %" PRIu64 "\n", c->events);
  if (m->o.check_every == 1)
    printf("tl_check            after every event: %" PRIu64 " checks, %s\n", c->checks,
           m->check_failed ? m->check_why : "all clean");
  else if (m->o.check_every == 0)
    printf("tl_check            at the end only: %s\n", m->check_failed ? m->check_why : "clean");
  else
    printf("tl_check            after every %" PRIu32 " events and at the end: %" PRIu64
           " checks, %s\n",
           m->o.check_every, c->checks, m->check_failed ? m->check_why : "all clean");
  printf("wall time           %.3f s\n", wall);
  printf("wall rate           %.0f simulated tasks per wall second\n",
         wall > 0 ? (double)attempts / wall : 0.0);
  printf("problems            %" PRIu64 "\n", m->problems);
  if (drained && !m->check_failed && m->problems == 0)
    printf("verdict             DRAINED: every task set released, all %zu payloads and every "
           "result handed back, tl_check clean\n",
           m->nts);
  else if (m->check_failed)
    printf("verdict             BROKEN: tl_check failed: %s\n", m->check_why);
  else if (!drained)
    printf("verdict             RETAINED: %zu task sets were still held at %.3f s (explained "
           "above); once the executors stopped, %zu payloads and %zu results came back only "
           "through tl_scheduler_free\n",
           m->retained, (double)m->now / 1e9, m->payloads_at_end, m->results_at_end);
  else
    printf("verdict             BROKEN: %" PRIu64 " problems (on stderr)\n", m->problems);
}

int main(int argc, char **argv) {
  static sim m_;
  sim *m = &m_;
  options_init(&m->o);
  if (parse_args(&m->o, argc, argv) < 0)
    return 2;
  sim_rng_seed(&m->rng, m->o.seed);
  sim_record_init(&m->rec);
  m->tick_at = UINT64_MAX;
  m->progress = !m->o.quiet && isatty(STDERR_FILENO);
  if (m->o.journal_path) {
    m->journal = fopen(m->o.journal_path, "w");
    if (!m->journal) {
      fprintf(stderr, "tl-sim: %s: %s\n", m->o.journal_path, strerror(errno));
      return 2;
    }
  }
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.clock = sim_clock;
  cfg.clock_ud = m;
  cfg.max_task_failures = m->o.max_task_failures;
  cfg.heartbeat_timeout_ns = secs(m->o.heartbeat_timeout_s);
  cfg.pending_loss_timeout_ns = secs(m->o.pending_timeout_s);
  if (m->journal) {
    cfg.journal = journal_line;
    cfg.journal_ud = m;
  }
  tl_callbacks cb = {.ud = m,
                     .task_started = cb_task_started,
                     .task_ended = cb_task_ended,
                     .taskset_failed = cb_taskset_failed,
                     .taskset_released = cb_taskset_released,
                     .executor_lost = cb_executor_lost,
                     .executor_removed = cb_executor_removed,
                     .kill_task = cb_kill_task};
  int rc = tl_scheduler_new(&cfg, &cb, &m->s);
  if (rc != TL_OK) {
    fprintf(stderr, "tl-sim: tl_scheduler_new: %s\n", tl_strerror(rc));
    return 2;
  }
  m->jobs = xcalloc(m->o.jobs, sizeof *m->jobs);
  m->faults_on = true;
  double wall0 = wall_now(), last_progress = wall0;

  for (uint32_t i = 0; i < m->o.executors; i++)
    executor_join(m, i / m->o.per_host, "start");
  m->hosts_made = (m->o.executors + m->o.per_host - 1) / m->o.per_host;
  m->late_on_host = 0;
  schedule(m, 0, EV_JOB, 0, 0);
  schedule_poisson(m, EV_CRASH, m->o.crash_rate);
  schedule_poisson(m, EV_CRASH2, m->o.crash2_rate);
  schedule_poisson(m, EV_HANG, m->o.hang_rate);
  schedule_poisson(m, EV_DECOMMISSION, m->o.decommission_rate);
  schedule_poisson(m, EV_JOIN, m->o.join_rate);
  after_event(m);

  uint64_t until = secs(m->o.until_s);
  sim_event ev;
  while (!finished(m) && sim_queue_pop(&m->q, &ev) == 0) {
    if (ev.t_ns > until) {
      m->now = until;
      break;
    }
    if (ev.t_ns > m->now)
      m->now = ev.t_ns;
    run_event(m, &ev);
    if (m->faults_on && all_jobs_done(m))
      m->faults_on = false;
    after_event(m);
    if (m->progress && (m->c.events & 255) == 0) {
      double w = wall_now();
      if (w - last_progress > 0.1) {
        last_progress = w;
        progress_line(m);
      }
    }
  }
  if (m->progress) {
    progress_line(m);
    fputc('\n', stderr);
  }
  uint64_t end_ns = m->now;
  m->faults_on = false;
  m->stopping = true;

  /* Retained task sets, explained before the executors are stopped. */
  bool drained = m->st.tasksets_active == 0 && m->st.tasksets_zombie == 0;
  if (!drained) {
    printf("\nretained task sets at %.3f s:\n", (double)m->now / 1e9);
    for (size_t i = 0; i < m->nts; i++) {
      if (m->ts[i]->released)
        continue;
      m->retained++;
      char buf[2048];
      if (tl_explain_taskset(m->s, m->ts[i]->id, buf, sizeof buf) == TL_OK)
        printf("%s", buf);
    }
  }
  /* Stop the executors still registered, as a driver does at the end. */
  for (size_t i = 0; i < m->nexecs; i++) {
    sim_executor *e = &m->execs[i];
    if (e->ledger == X_GONE)
      continue;
    e->shutdown = true;
    e->proc = P_DEAD;
    tl_loss_reason r = {.kind = TL_LOSS_KILLED, .message = "simulation over"};
    rc = tl_executor_lost(m->s, e->id, &r);
    if (rc != TL_OK)
      problem(m, "tl_executor_lost(%s) at the end: %s", e->id, tl_err_name(rc));
    else if (e->ledger != X_GONE)
      problem(m, "tl_executor_lost(%s) at the end made no executor_removed", e->id);
  }
  after_event(m);
  m->now = end_ns;
  char why[256];
  m->c.checks++;
  if (tl_check(m->s, why, sizeof why) != TL_OK && !m->check_failed) {
    m->check_failed = true;
    snprintf(m->check_why, sizeof m->check_why, "%s", why);
  }
  if (m->st.attempts_running || m->st.attempts_frozen || m->st.executors_pending_loss ||
      m->st.executors_alive)
    drained = false;
  m->payloads_at_end = m->payloads_live;
  m->results_at_end = results_live;
  if (m->payloads_live || results_live)
    drained = false;
  sim_record_finish(&m->rec, end_ns);
  double wall = wall_now() - wall0;
  bool metrics_failed = m->o.metrics_path && write_metrics(m->s, m->o.metrics_path) < 0;

  rc = tl_scheduler_free(m->s);
  if (rc != TL_OK)
    problem(m, "tl_scheduler_free: %s", tl_err_name(rc));
  if (m->payloads_live != 0 || results_live != 0) {
    drained = false;
    printf("\n%zu payloads and %zu results were not handed back\n", m->payloads_live, results_live);
  }
  summary(m, wall, drained);

  int status = drained && !m->check_failed && m->problems == 0 ? 0 : 1;
  if (m->journal) {
    if (fclose(m->journal) != 0 || m->journal_err) {
      fprintf(stderr, "tl-sim: writing %s failed\n", m->o.journal_path);
      status = 1;
    }
  }
  if (m->o.trace_path) {
    FILE *f = fopen(m->o.trace_path, "w");
    if (!f || sim_trace_write(&m->rec, f) < 0 || fclose(f) != 0) {
      fprintf(stderr, "tl-sim: %s: %s\n", m->o.trace_path, strerror(errno));
      status = 1;
    }
  }
  if (m->o.svg_path) {
    FILE *f = fopen(m->o.svg_path, "w");
    if (!f || sim_svg_write(&m->rec, f) < 0 || fclose(f) != 0) {
      fprintf(stderr, "tl-sim: %s: %s\n", m->o.svg_path, strerror(errno));
      status = 1;
    }
  }
  if (metrics_failed)
    status = 1;

  for (size_t i = 0; i < m->nts; i++) {
    sim_ts *ts = m->ts[i];
    free(ts->parts);
    free(ts->index_of);
    free(ts->done);
    free(ts);
  }
  free(m->ts);
  for (uint32_t j = 0; j < m->jobs_submitted; j++) {
    for (uint32_t k = 0; k < m->jobs[j].nstages; k++)
      free(m->jobs[j].stages[k].where);
    free(m->jobs[j].stages);
  }
  free(m->jobs);
  for (size_t i = 0; i < m->nexecs; i++)
    free(m->execs[i].core_tid);
  free(m->execs);
  free(m->attempts);
  sim_queue_free(&m->q);
  sim_record_free(&m->rec);
  return status;
}
