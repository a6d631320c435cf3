/* tl-spark-18553: the leak that taskledger exists to prevent, replayed step by step.
 *
 * Spark 2.0 removed a task's tid -> TaskSetManager entry only when its executor sent a final
 * status update. An executor that dies silently never sends one, so the entries stayed, and
 * with them the zombie TaskSetManager and its task binary (SPARK-18553). This program replays
 * Josh Rosen's reproduction at the library's level: two executors of 5 cores, a 10-task map
 * stage, a 10-task result stage submitted from inside task_ended, max_task_failures = 1, and
 * exec-2 dying in the middle of the result stage. It runs the scenario twice, once with the loss
 * found by heartbeat expiry (the truly silent case) and once as a two-phase loss (reason
 * pending, then the exit code). After every step it prints the size of every map the ledger
 * keeps and runs tl_check; at the end it requires that everything drained back to the empty
 * scheduler's allocations, and exits non-zero, saying what was retained, if it did not.
 *
 *   tl-spark-18553 [--journal PREFIX]
 *
 * With --journal, each run's call journal (docs/journal.md) is written to PREFIX.a and PREFIX.b,
 * for tl-replay.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskledger.h"

#define NEXECUTORS 2             /* exec-1 on host-1, exec-2 on host-2 */
#define CORES 5                  /* per executor, as in local-cluster[2,5,1024] */
#define NTASKS 10                /* per stage, as in parallelize(1 to 10, 10) and groupByKey(10) */
#define MAX_ATTEMPTS 64          /* the demo's launch records; the scenario makes 20 */
#define MAX_TASKSETS 8           /* the demo's task set records; the scenario makes 2 */
#define SEC UINT64_C(1000000000) /* nanoseconds in a second */
#define HEARTBEAT_EVERY (10 * SEC)

/* The payload of a task set: its "task binary", one per task set, shared by all its tasks. In
 * Spark it is the serialized RDD and ShuffleDependency, the objects the leak kept alive. */
typedef struct task_binary {
  uint32_t stage_id; /* the stage it was built for */
  char lineage[48];  /* stands for the closure and the lineage it references */
} task_binary;

/* One executor process as the demo's runtime sees it. */
typedef struct executor_model {
  const char *id;   /* the executor id given to the ledger */
  const char *host; /* its host */
  bool alive;       /* the process runs and heartbeats; false once it died or was removed */
} executor_model;

/* One launched attempt, as the runtime recorded it from tl_resource_offers. */
typedef struct attempt_record {
  tl_tid tid;                /* the attempt */
  tl_taskset_id taskset;     /* its task set */
  uint32_t stage_id;         /* its stage */
  int executor;              /* index into demo.executors */
  bool ended;                /* task_ended arrived for it */
  bool terminal_update_sent; /* its executor sent FINISHED, FAILED or KILLED: what Spark 2.0
                                needed to see before it dropped the tid's entries */
} attempt_record;

/* One submitted task set, to check that its payload comes back once and is the right one. */
typedef struct taskset_record {
  tl_taskset_id id;     /* as tl_submit gave it */
  uint32_t stage_id;    /* its stage */
  task_binary *payload; /* owned by the ledger from tl_submit until taskset_released */
  bool released;        /* taskset_released arrived */
} taskset_record;

/* Everything one run of the scenario keeps: the runtime, the tiny DAG layer and the counts. */
typedef struct demo {
  tl_scheduler *s;                       /* the ledger under test */
  tl_config cfg;                         /* as given to tl_scheduler_new */
  uint64_t now_ns;                       /* the manual clock */
  executor_model executors[NEXECUTORS];  /* exec-1 and exec-2 */
  attempt_record attempts[MAX_ATTEMPTS]; /* every launch, in launch order */
  size_t nattempts;                      /* used entries of attempts */
  taskset_record tasksets[MAX_TASKSETS]; /* every submission, in submission order */
  size_t ntasksets;                      /* used entries of tasksets */
  size_t payloads_live;           /* task binaries handed to tl_submit and not yet handed back */
  size_t payloads_made;           /* task binaries built */
  size_t results_live;            /* result buffers sent in FINISHED updates and not yet freed */
  uint32_t map_outputs;           /* stage 0 results the DAG layer has taken */
  bool result_stage_submitted;    /* the DAG layer submitted stage 1 */
  bool job_failed;                /* taskset_failed arrived for the job's stage */
  bool freeing;                   /* inside tl_scheduler_free */
  size_t released_by_free;        /* task sets tl_scheduler_free had to release: retained ones */
  size_t problems;                /* contract violations the callbacks saw */
  size_t steps;                   /* steps taken, each followed by a clean tl_check */
  size_t base_blocks;             /* mem_live_blocks right after tl_scheduler_new */
  size_t base_bytes;              /* mem_live_bytes right after tl_scheduler_new */
  char line_key[96];              /* the callback line being coalesced: its text before the tids */
  tl_tid line_tids[MAX_ATTEMPTS]; /* the tids it lists so far */
  size_t line_ntids;              /* 0 while no line is being coalesced */
} demo;

/* ---------------------------------------------------------------------------------------------
 * Printing
 * ------------------------------------------------------------------------------------------- */

/* Lets gcc and clang check the formats given to the printing helpers below. */
#if defined(__GNUC__)
#define PRINTF_LIKE(fmt_arg, first_arg) __attribute__((format(printf, fmt_arg, first_arg)))
#else
#define PRINTF_LIKE(fmt_arg, first_arg)
#endif
static void say(demo *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void problem(demo *d, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void step(demo *d, const char *fmt, ...) PRINTF_LIKE(2, 3);

/* Writes tids as "1-10" for runs of three or more consecutive ids and "12 14 16" otherwise. */
static void format_tids(const tl_tid *tids, size_t n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < n && used < len;) {
    size_t j = i;
    while (j + 1 < n && tids[j + 1] == tids[j] + 1)
      j++;
    int w;
    if (j - i >= 2)
      w = snprintf(buf + used, len - used, "%s%" PRIu64 "-%" PRIu64, used ? " " : "", tids[i],
                   tids[j]);
    else {
      w = snprintf(buf + used, len - used, "%s%" PRIu64, used ? " " : "", tids[i]);
      j = i;
    }
    used += (size_t)w;
    i = j + 1;
  }
}

/* Prints the coalesced callback line, if any. Every other line flushes it first, so the output
 * keeps the order in which callbacks arrived. */
static void flush_line(demo *d) {
  if (d->line_ntids == 0)
    return;
  char tids[160];
  format_tids(d->line_tids, d->line_ntids, tids, sizeof tids);
  printf("    %s: tid%s %s\n", d->line_key, d->line_ntids > 1 ? "s" : "", tids);
  d->line_ntids = 0;
}

/* Adds a tid to the coalesced line; consecutive callbacks with the same text share a line. */
static void note_tid(demo *d, const char *key, tl_tid tid) {
  if (d->line_ntids > 0 && (strcmp(d->line_key, key) != 0 || d->line_ntids == MAX_ATTEMPTS))
    flush_line(d);
  if (d->line_ntids == 0)
    snprintf(d->line_key, sizeof d->line_key, "%s", key);
  d->line_tids[d->line_ntids++] = tid;
}

/* Prints one callback or DAG-layer line, indented under the step that caused it. */
static void say(demo *d, const char *fmt, ...) {
  flush_line(d);
  va_list ap;
  va_start(ap, fmt);
  fputs("    ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
}

/* Prints one callback line whose last part is free text (a reason from the library), wrapping
 * it at spaces to fit 100 columns, continuation lines aligned under the callback's details. */
static void say_wrapped(demo *d, const char *head, const char *text) {
  enum { WIDTH = 100, HANG = 21 };
  flush_line(d);
  int col = printf("    %s", head);
  for (const char *word = text; *word != '\0';) {
    while (*word == ' ')
      word++;
    size_t n = strcspn(word, " ");
    if (n == 0)
      break;
    if (col + 1 + (int)n > WIDTH && col > HANG)
      col = printf("\n%*s", HANG, "") - 1;
    col += printf(" %.*s", (int)n, word);
    word += n;
  }
  fputc('\n', stdout);
}

/* Records a contract violation seen from a callback; the verdict fails on any. */
static void problem(demo *d, const char *fmt, ...) {
  flush_line(d);
  va_list ap;
  va_start(ap, fmt);
  fputs("    !! ", stdout);
  vprintf(fmt, ap);
  fputc('\n', stdout);
  va_end(ap);
  d->problems++;
}

/* Stops the demo when a call that must succeed does not. */
static void must(int rc, const char *what) {
  if (rc == TL_OK)
    return;
  fflush(stdout);
  fprintf(stderr, "tl-spark-18553: %s failed: %s (%s)\n", what, tl_err_name(rc), tl_strerror(rc));
  exit(EXIT_FAILURE);
}

/* One table cell for an executor: its running attempts, "-" while it is pending loss (its
 * attempts are then in the frozen column), "gone" for a tombstone, "none" once not even that. */
static void executor_cell(demo *d, const char *id, char *buf, size_t len) {
  tl_executor_status st;
  int rc = tl_executor_get(d->s, id, &st);
  if (rc == TL_OK && st.state == TL_EXECUTOR_PENDING_LOSS)
    snprintf(buf, len, "-");
  else if (rc == TL_OK)
    snprintf(buf, len, "%" PRIu32, st.running);
  else if (rc == TL_EGONE)
    snprintf(buf, len, "gone");
  else if (rc == TL_ENOENT)
    snprintf(buf, len, "none");
  else
    snprintf(buf, len, "%s", tl_err_name(rc));
}

static void print_table_header(void) {
  printf("  %-32s %4s %6s %6s %6s %6s %8s %4s %4s %6s %4s\n", "step", "t/s", "by_tid", "exec-1",
         "exec-2", "frozen", "sets a/z", "pend", "tomb", "blocks", "payl");
}

/* Ends a step: prints its row of map sizes and stops the demo if tl_check finds a violation. */
static void step(demo *d, const char *fmt, ...) {
  char label[64];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(label, sizeof label, fmt, ap);
  va_end(ap);
  flush_line(d);

  tl_stats st;
  tl_stats_get(d->s, &st);
  char e1[16], e2[16], sets[24];
  executor_cell(d, d->executors[0].id, e1, sizeof e1);
  executor_cell(d, d->executors[1].id, e2, sizeof e2);
  snprintf(sets, sizeof sets, "%zu/%zu", st.tasksets_active, st.tasksets_zombie);
  printf("  %-32s %4" PRIu64 " %6zu %6s %6s %6zu %8s %4zu %4zu %6zu %4zu\n", label, d->now_ns / SEC,
         st.attempts_running, e1, e2, st.attempts_frozen, sets, st.tasks_pending, st.tombstones,
         st.mem_live_blocks, d->payloads_live);

  char why[256];
  int rc = tl_check(d->s, why, sizeof why);
  if (rc != TL_OK) {
    fflush(stdout);
    fprintf(stderr, "tl-spark-18553: tl_check failed after \"%s\": %s: %s\n", label,
            tl_err_name(rc), why);
    exit(EXIT_FAILURE);
  }
  d->steps++;
}

/* ---------------------------------------------------------------------------------------------
 * The demo's records
 * ------------------------------------------------------------------------------------------- */

static attempt_record *find_attempt(demo *d, tl_tid tid) {
  for (size_t i = 0; i < d->nattempts; i++)
    if (d->attempts[i].tid == tid)
      return &d->attempts[i];
  return NULL;
}

static taskset_record *find_taskset(demo *d, tl_taskset_id id) {
  for (size_t i = 0; i < d->ntasksets; i++)
    if (d->tasksets[i].id == id)
      return &d->tasksets[i];
  return NULL;
}

/* The executor a launch names: its tl_executor_desc.ud is its model (no lookup by id); -1 for a
 * ud that is none of them. */
static int executor_index(demo *d, const void *executor_ud) {
  for (int i = 0; i < NEXECUTORS; i++)
    if (executor_ud == &d->executors[i])
      return i;
  return -1;
}

/* ---------------------------------------------------------------------------------------------
 * The DAG layer: builds task binaries, submits stages, takes results, fails the job
 * ------------------------------------------------------------------------------------------- */

/* Builds the stage's task binary and submits it as one task set. May run inside a callback. */
static void submit_stage(demo *d, uint32_t stage_id) {
  if (d->ntasksets == MAX_TASKSETS) {
    problem(d, "the demo's task set records are full");
    return;
  }
  task_binary *binary = malloc(sizeof *binary);
  if (binary == NULL) {
    problem(d, "out of memory building stage %" PRIu32 "'s task binary", stage_id);
    return;
  }
  binary->stage_id = stage_id;
  snprintf(binary->lineage, sizeof binary->lineage, "stage %" PRIu32 " closure and lineage",
           stage_id);
  tl_taskset_desc desc = {.stage_id = stage_id,
                          .stage_attempt = 0,
                          .priority = 0,
                          .shuffle_map = stage_id == 0, /* stage 0 writes map outputs */
                          .ntasks = NTASKS,
                          .cpus_per_task = 0,
                          .payload = binary};
  tl_taskset_id id;
  int rc = tl_submit(d->s, &desc, &id);
  if (rc != TL_OK) {
    free(binary); /* on error the payload stays ours */
    problem(d, "tl_submit(stage %" PRIu32 "): %s", stage_id, tl_err_name(rc));
    return;
  }
  d->tasksets[d->ntasksets++] = (taskset_record){.id = id, .stage_id = stage_id, .payload = binary};
  d->payloads_made++;
  d->payloads_live++;
}

static void on_task_started(void *ud, const tl_task_info *task) {
  demo *d = ud;
  char key[64];
  snprintf(key, sizeof key, "%-17s stage %" PRIu32, "task_started", task->stage_id);
  note_tid(d, key, task->tid);
}

static void on_task_ended(void *ud, const tl_task_info *task, const tl_task_end *end) {
  demo *d = ud;
  attempt_record *rec = find_attempt(d, task->tid);
  if (rec == NULL)
    problem(d, "task_ended for tid %" PRIu64 ", which was never launched", task->tid);
  else if (rec->ended)
    problem(d, "task_ended twice for tid %" PRIu64, task->tid);
  else
    rec->ended = true;

  /* The result is ours now: the DAG layer takes what it needs from it and frees it. */
  if (end->kind == TL_END_SUCCESS && end->result != NULL) {
    if (end->result_free != NULL)
      end->result_free(end->result);
    else
      free(end->result);
    d->results_live--;
  }

  char key[96];
  const char *dropped = end->kind == TL_END_SUCCESS && d->job_failed ? ", result dropped" : "";
  snprintf(key, sizeof key, "%-17s stage %" PRIu32 " %s%s%s", "task_ended", task->stage_id,
           tl_end_kind_name(end->kind), end->counts_toward_failures ? ", counted" : "", dropped);
  note_tid(d, key, task->tid);

  /* Stage 0 is the shuffle map stage: when its last output lands, the job's result stage can
   * run. Submitting it from here is a re-entrant call, which the API allows. */
  if (task->stage_id == 0 && end->kind == TL_END_SUCCESS && ++d->map_outputs == NTASKS &&
      !d->result_stage_submitted) {
    say(d, "DAG: stage 0 has all %" PRIu32 " map outputs; tl_submit(stage 1) from task_ended",
        d->map_outputs);
    d->result_stage_submitted = true;
    submit_stage(d, 1);
  }
}

static void on_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  demo *d = ud;
  char head[64];
  snprintf(head, sizeof head, "%-17s ts %" PRIu64 " (stage %" PRIu32 "):", "taskset_failed", ts->id,
           ts->stage_id);
  say_wrapped(d, head, reason != NULL ? reason : "(no reason)");
  d->job_failed = true;
  /* The ledger has finished the whole transition before delivering: ask it what still runs. */
  tl_taskset_status st;
  int rc = tl_taskset_get(d->s, ts->id, &st);
  if (rc == TL_OK)
    say(d, "DAG: job 0 failed; ts %" PRIu64 " is %s with %" PRIu32 " attempt(s) still running",
        ts->id, st.zombie ? "a zombie" : "NOT a zombie", st.running);
  else
    say(d, "DAG: job 0 failed; tl_taskset_get(ts %" PRIu64 "): %s", ts->id, tl_err_name(rc));
}

static void on_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  demo *d = ud;
  taskset_record *rec = find_taskset(d, ts->id);
  if (rec == NULL || rec->released || rec->payload != payload) {
    problem(d, "taskset_released for ts %" PRIu64 " with %s", ts->id,
            rec == NULL     ? "an unknown id"
            : rec->released ? "its payload again"
                            : "a foreign payload");
    return;
  }
  rec->released = true;
  free(payload); /* the task binary: the library keeps no pointer to it now */
  d->payloads_live--;
  if (d->freeing)
    d->released_by_free++;
  say(d, "%-17s ts %" PRIu64 " (stage %" PRIu32 "): task binary freed, %zu live",
      "taskset_released", ts->id, ts->stage_id, d->payloads_live);
}

static void on_executor_added(void *ud, const char *executor_id, const char *host) {
  say(ud, "%-17s %s on %s", "executor_added", executor_id, host);
}

static void on_executor_lost(void *ud, const char *executor_id, void *executor_ud,
                             const tl_loss_reason *reason) {
  (void)executor_ud;
  say(ud, "%-17s %s: %s%s", "executor_lost", executor_id, tl_loss_kind_name(reason->kind),
      reason->caused_by_app ? ", caused by the app" : "");
}

static void on_revive_offers(void *ud) { say(ud, "revive_offers"); }

static void on_kill_task(void *ud, tl_tid tid, const char *executor_id, void *executor_ud,
                         bool interrupt, const char *reason) {
  (void)executor_ud;
  (void)interrupt;
  say(ud, "%-17s tid %" PRIu64 " on %s: %s", "kill_task", tid, executor_id,
      reason != NULL ? reason : "");
}

/* ---------------------------------------------------------------------------------------------
 * The runtime: clock, offers, status updates, heartbeats
 * ------------------------------------------------------------------------------------------- */

static uint64_t demo_clock(void *ud) { return ((demo *)ud)->now_ns; }

/* Moves the clock on in heartbeat intervals: each live executor heartbeats, then tl_tick runs
 * what is due (an executor that stopped heartbeating expires in one of these ticks). */
static void advance(demo *d, uint64_t ns) {
  while (ns > 0) {
    uint64_t dt = ns < HEARTBEAT_EVERY ? ns : HEARTBEAT_EVERY;
    d->now_ns += dt;
    ns -= dt;
    for (int i = 0; i < NEXECUTORS; i++)
      if (d->executors[i].alive)
        must(tl_executor_heartbeat(d->s, d->executors[i].id), "tl_executor_heartbeat");
    (void)tl_tick(d->s);
  }
}

/* Offers every live executor all its cores and records what was launched. */
static size_t offer(demo *d) {
  tl_offer offers[NEXECUTORS];
  size_t noffers = 0;
  for (int i = 0; i < NEXECUTORS; i++)
    if (d->executors[i].alive)
      offers[noffers++] = (tl_offer){.executor_id = d->executors[i].id, .cores = CORES};
  tl_launch launches[NEXECUTORS * CORES];
  size_t nlaunched = 0;
  must(tl_resource_offers(d->s, offers, noffers, launches, NEXECUTORS * CORES, &nlaunched),
       "tl_resource_offers");
  for (size_t i = 0; i < nlaunched; i++) {
    int executor = executor_index(d, launches[i].executor_ud);
    if (executor < 0 || d->nattempts == MAX_ATTEMPTS) {
      problem(d, "tid %" PRIu64 " launched on %s: %s", launches[i].tid, launches[i].executor_id,
              executor < 0 ? "an executor never offered" : "the demo's records are full");
      continue;
    }
    d->attempts[d->nattempts++] = (attempt_record){.tid = launches[i].tid,
                                                   .taskset = launches[i].taskset,
                                                   .stage_id = launches[i].stage_id,
                                                   .executor = executor};
  }
  return nlaunched;
}

/* The executor running rec sends one status update; FINISHED carries a small result buffer. */
static void send_update(demo *d, attempt_record *rec, tl_task_state state) {
  tl_update u = {.state = state};
  if (state == TL_TASK_FINISHED) {
    char *result = malloc(32); /* a MapStatus for stage 0, a count for stage 1 */
    if (result == NULL)
      must(TL_ENOMEM, "building a task result");
    snprintf(result, 32, "result of tid %" PRIu64, rec->tid);
    u.result = result;
    u.result_size = 32;
    u.result_free = free;
    d->results_live++;
  }
  int rc = tl_status_update(d->s, d->executors[rec->executor].id, rec->tid, &u);
  if (rc != TL_OK && u.result != NULL) {
    free(u.result); /* on error the result stays ours */
    d->results_live--;
  }
  must(rc, state == TL_TASK_RUNNING ? "tl_status_update(RUNNING)" : "tl_status_update");
  if (state != TL_TASK_RUNNING)
    rec->terminal_update_sent = true;
}

/* Sends the same update for every attempt of a stage whose executor still lives. */
static size_t update_stage(demo *d, uint32_t stage_id, tl_task_state state) {
  size_t n = 0;
  for (size_t i = 0; i < d->nattempts; i++) {
    attempt_record *rec = &d->attempts[i];
    if (rec->stage_id == stage_id && !rec->ended && d->executors[rec->executor].alive) {
      send_update(d, rec, state);
      n++;
    }
  }
  return n;
}

static void lose_executor(demo *d, int which, tl_loss_kind kind, int exit_code,
                          const char *message) {
  /* A pending reason knows nothing yet; the real reasons of this demo blame the app, except
   * the driver's own kill at the end. */
  tl_loss_reason reason = {.kind = kind,
                           .caused_by_app = kind != TL_LOSS_PENDING && kind != TL_LOSS_KILLED,
                           .exit_code = exit_code,
                           .message = message};
  must(tl_executor_lost(d->s, d->executors[which].id, &reason), "tl_executor_lost");
  d->executors[which].alive = false;
}

/* ---------------------------------------------------------------------------------------------
 * One run of the scenario
 * ------------------------------------------------------------------------------------------- */

/* Says what Spark 2.0 before the fix would still hold, from the demo's own launch records: a
 * tid left taskIdToTaskSetManager only when its executor sent a terminal status update. */
static void print_old_design(demo *d) {
  tl_tid kept[MAX_ATTEMPTS] = {0};
  size_t nkept = 0, npinned = 0;
  tl_taskset_id pinned[MAX_TASKSETS] = {0};
  const char *by = NULL;
  for (size_t i = 0; i < d->nattempts; i++) {
    attempt_record *rec = &d->attempts[i];
    if (rec->terminal_update_sent)
      continue;
    kept[nkept++] = rec->tid;
    /* by names the executor that never reported, or is "" when there were several. */
    by = by == NULL || strcmp(by, d->executors[rec->executor].id) == 0
             ? d->executors[rec->executor].id
             : "";
    bool seen = false;
    for (size_t j = 0; j < npinned; j++)
      seen = seen || pinned[j] == rec->taskset;
    if (!seen && npinned < MAX_TASKSETS)
      pinned[npinned++] = rec->taskset;
  }
  printf("  Spark 2.0 before the fix would still hold %zu entries in taskIdToTaskSetManager",
         nkept);
  if (nkept == 0) {
    printf(".\n");
    return;
  }
  char tids[160];
  format_tids(kept, nkept, tids, sizeof tids);
  taskset_record *ts = find_taskset(d, pinned[0]);
  printf("\n  (tids %s, never reported%s%s), ", tids, by[0] ? " by " : "", by);
  if (npinned == 1 && ts != NULL)
    printf("pinning the zombie TaskSetManager of stage %" PRIu32 ".\n", ts->stage_id);
  else
    printf("pinning %zu zombie TaskSetManagers.\n", npinned);
}

static const char *journal_prefix; /* --journal PREFIX, or NULL */

static void write_journal_line(void *ud, const char *line) { fprintf(ud, "%s\n", line); }

/* Runs the scenario once; returns true when everything drained. */
static bool run_scenario(bool two_phase) {
  static demo d; /* static: the records are a few kilobytes */
  memset(&d, 0, sizeof d);
  d.executors[0] = (executor_model){.id = "exec-1", .host = "host-1"};
  d.executors[1] = (executor_model){.id = "exec-2", .host = "host-2"};
  tl_config_init(&d.cfg);
  d.cfg.max_task_failures = 1; /* spark.task.maxFailures=1, as in the reproduction */
  d.cfg.clock = demo_clock;
  d.cfg.clock_ud = &d;
  FILE *journal = NULL;
  if (journal_prefix != NULL) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%c", journal_prefix, two_phase ? 'b' : 'a');
    if ((journal = fopen(path, "w")) == NULL) {
      perror(path);
      exit(EXIT_FAILURE);
    }
    d.cfg.journal = write_journal_line;
    d.cfg.journal_ud = journal;
  }
  tl_callbacks cb = {.ud = &d,
                     .task_started = on_task_started,
                     .task_ended = on_task_ended,
                     .taskset_failed = on_taskset_failed,
                     .taskset_released = on_taskset_released,
                     .executor_added = on_executor_added,
                     .executor_lost = on_executor_lost,
                     .revive_offers = on_revive_offers,
                     .kill_task = on_kill_task};
  must(tl_scheduler_new(&d.cfg, &cb, &d.s), "tl_scheduler_new");
  tl_stats st;
  tl_stats_get(d.s, &st);
  d.base_blocks = st.mem_live_blocks;
  d.base_bytes = st.mem_live_bytes;

  const char *run = two_phase ? "b" : "a";
  if (two_phase)
    printf("\n(b) exec-2's loss in two phases: TL_LOSS_PENDING, then TL_LOSS_EXITED\n");
  else
    printf("\n(a) exec-2 dies silently; heartbeat expiry in tl_tick finds it (one phase)\n");
  print_table_header();
  step(&d, "new scheduler (the baseline)");

  for (int i = 0; i < NEXECUTORS; i++) {
    tl_executor_desc desc = {.id = d.executors[i].id,
                             .host = d.executors[i].host,
                             .cores = CORES,
                             .ud = &d.executors[i]};
    must(tl_executor_add(d.s, &desc), "tl_executor_add");
    d.executors[i].alive = true;
  }
  step(&d, "add 2 executors of %d cores", CORES);

  submit_stage(&d, 0);
  step(&d, "DAG submits stage 0 (%d tasks)", NTASKS);
  step(&d, "offer: %zu launched", offer(&d));
  step(&d, "RUNNING x%zu", update_stage(&d, 0, TL_TASK_RUNNING));
  advance(&d, 1 * SEC); /* each map task sleeps a second */
  step(&d, "FINISHED x%zu", update_stage(&d, 0, TL_TASK_FINISHED));
  step(&d, "offer: %zu launched", offer(&d));
  step(&d, "RUNNING x%zu", update_stage(&d, 1, TL_TASK_RUNNING));

  /* exec-2's process dies mid-stage. It sends nothing: the ledger still counts its tasks. */
  advance(&d, 1 * SEC);
  d.executors[1].alive = false;
  step(&d, "exec-2 dies silently (kill -9)");

  if (!two_phase) {
    uint64_t wait = d.cfg.heartbeat_timeout_ns + HEARTBEAT_EVERY;
    advance(&d, wait);
    step(&d, "+%" PRIu64 " s: exec-1 heartbeats, tl_tick", wait / SEC);
  } else {
    lose_executor(&d, 1, TL_LOSS_PENDING, 0, "disconnected; asking the cluster manager why");
    step(&d, "exec-2 lost, reason pending");
    advance(&d, 2 * SEC);
    lose_executor(&d, 1, TL_LOSS_EXITED, 137, "container exited with code 137 (kill -9)");
    step(&d, "+2 s: exec-2 EXITED, code 137");
  }

  /* The surviving executor's attempts of the failed stage run on and finish one by one. */
  size_t nzombies = 0, done = 0;
  for (size_t i = 0; i < d.nattempts; i++)
    nzombies += d.attempts[i].stage_id == 1 && !d.attempts[i].ended;
  for (size_t i = 0; i < d.nattempts; i++) {
    attempt_record *rec = &d.attempts[i];
    if (rec->stage_id != 1 || rec->ended || !d.executors[rec->executor].alive)
      continue;
    advance(&d, 5 * SEC);
    send_update(&d, rec, TL_TASK_FINISHED);
    step(&d, "zombie tid %" PRIu64 " FINISHED (%zu/%zu)", rec->tid, ++done, nzombies);
  }

  lose_executor(&d, 0, TL_LOSS_KILLED, 0, "application finished");
  step(&d, "exec-1 KILLED by the driver");
  uint64_t ttl = d.cfg.tombstone_ttl_ns + 1 * SEC;
  advance(&d, ttl);
  step(&d, "+%" PRIu64 " s: tombstones expire", ttl / SEC);

  /* The verdict: every map empty and the allocations back to the empty scheduler's. */
  tl_stats_get(d.s, &st);
  bool drained = st.attempts_running == 0 && st.attempts_frozen == 0 && st.tasksets_active == 0 &&
                 st.tasksets_zombie == 0 && st.tasks_pending == 0 && st.executors_alive == 0 &&
                 st.executors_decommissioning == 0 && st.executors_pending_loss == 0 &&
                 st.tombstones == 0 && st.hosts == 0 && st.racks == 0 && st.events_queued == 0;
  bool memory_back = st.mem_live_blocks == d.base_blocks && st.mem_live_bytes == d.base_bytes;
  if (!drained || !memory_back) {
    printf("  RETAINED: %zu attempts, %zu frozen, %zu/%zu task sets, %zu pending, %zu events\n",
           st.attempts_running, st.attempts_frozen, st.tasksets_active, st.tasksets_zombie,
           st.tasks_pending, st.events_queued);
    printf("  RETAINED: executors %zu alive, %zu decommissioning, %zu pending loss; %zu tombstones,"
           " %zu hosts, %zu racks\n",
           st.executors_alive, st.executors_decommissioning, st.executors_pending_loss,
           st.tombstones, st.hosts, st.racks);
    printf("  RETAINED: %zu blocks / %zu bytes live (the empty scheduler had %zu / %zu)\n",
           st.mem_live_blocks, st.mem_live_bytes, d.base_blocks, d.base_bytes);
  }
  for (size_t i = 0; i < d.ntasksets; i++) {
    if (d.tasksets[i].released)
      continue;
    char why[1024];
    int rc = tl_explain_taskset(d.s, d.tasksets[i].id, why, sizeof why);
    printf("  RETAINED: task set %" PRIu64 " (stage %" PRIu32
           ") is still alive; the ledger says:\n",
           d.tasksets[i].id, d.tasksets[i].stage_id);
    if (rc != TL_OK)
      snprintf(why, sizeof why, "tl_explain_taskset: %s\n", tl_err_name(rc));
    for (const char *line = why; *line != '\0';) {
      size_t n = strcspn(line, "\n");
      printf("    %.*s\n", (int)n, line);
      line += n + (line[n] == '\n');
    }
  }
  print_old_design(&d);

  size_t back_before_free = d.payloads_made - d.payloads_live;
  d.freeing = true;
  must(tl_scheduler_free(d.s), "tl_scheduler_free");
  d.freeing = false;
  d.s = NULL;

  if (!d.job_failed)
    printf("  UNEXPECTED: stage 1 never failed, though max_task_failures is %" PRIu32 "\n",
           d.cfg.max_task_failures);
  if (d.released_by_free > 0)
    printf("  RETAINED: tl_scheduler_free had to hand back %zu payload(s)\n", d.released_by_free);
  if (d.payloads_live > 0 || d.results_live > 0)
    printf("  LEAKED: %zu task binaries and %zu results never came back\n", d.payloads_live,
           d.results_live);
  bool ok = drained && memory_back && d.job_failed && d.released_by_free == 0 &&
            d.payloads_live == 0 && d.results_live == 0 && d.problems == 0;
  printf("  verdict (%s): %s; %zu/%zu task binaries back; %zu blocks, %zu B %s baseline;"
         " tl_check clean x%zu\n",
         run, ok ? "DRAINED" : "RETAINED", back_before_free, d.payloads_made, st.mem_live_blocks,
         st.mem_live_bytes, memory_back ? "=" : "!=", d.steps);
  if (journal != NULL && fclose(journal) != 0) {
    perror("journal");
    ok = false;
  }
  return ok;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--journal") == 0) {
    journal_prefix = argv[2];
  } else if (argc != 1) {
    fprintf(stderr, "usage: %s [--journal PREFIX]\n", argv[0]);
    return EXIT_FAILURE;
  }
  printf("tl-spark-18553 (taskledger %s): SPARK-18553, two executors x %d cores, "
         "max_task_failures 1\n",
         tl_version_string(), CORES);
  printf("Columns: by_tid = attempts in the tid index; exec-N = attempts running there ('-':\n"
         "pending loss, 'gone': a tombstone); frozen = attempts on pending-loss executors;\n"
         "sets a/z = task sets active/zombie; pend = tasks pending; tomb = tombstones; blocks =\n"
         "the ledger's live allocations; payl = task binaries not yet handed back. Callbacks\n"
         "are printed as they arrive, indented above the row of the step that caused them.\n");
  bool one_phase = run_scenario(false);
  bool two_phase = run_scenario(true);
  bool ok = one_phase && two_phase;
  printf("\n%s\n", ok ? "OK: both runs drained to the empty scheduler; nothing was retained."
                      : "FAILED: state was retained (see RETAINED above).");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
