/* tl-driver's command line (driver_opts.h): the option table for getopt_long, the parsing of
 * each value, and the defaults and checks that involve more than one option.
 */

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver_opts.h"

#define MAX_CONNS_LIMIT 65536    /* the largest --max-connections and --max-pending-connections */
#define BENCH_TASKS 100000       /* --bench's default size */
#define REGISTER_TIMEOUT_MS 5000 /* --register-timeout-ms's default */
#define MAX_PENDING_CONNS 64     /* --max-pending-connections' default */
#define MAX_CONNS 1024           /* --max-connections' default */
#define PROGRESS_MS 500          /* --progress-ms's default */

/* --max-unsent-bytes' default: what one connection may hold that its peer has not read. Normal
 * traffic queues far less: one offer's LAUNCH frames for cores + --queue slots (8,192 at most,
 * 90 bytes each: 0.7 MiB), a TASKSET_BINARY of at most 64 bytes, and a reconciliation's KILLs
 * (an executor names at most its slots and the 65,536 ends it retains: a 47-byte KILL each,
 * 3.5 MB). */
#define MAX_UNSENT_BYTES (UINT64_C(16) << 20)
#define MIN_UNSENT_BYTES (UINT64_C(1) << 20) /* its least: one frame (TLC_FRAME_MAX) */

const char *const bad_mode_names[BAD_NMODES] = {
    "wrong-token",    "garbage",           "oversized",  "duplicate-id", "foreign-status",
    "silent",         "unknown-message",   "truncated",  "early-frame",  "second-register",
    "driver-message", "duplicate-address", "bad-address"};

static void usage(void) __attribute__((noreturn));
static void usage(void) {
  fprintf(stderr,
          "usage: tl-driver [--launcher local|slurm] [--executors N] [--accept N]\n"
          "                 [--executor-cores C | --cores C] [--queue Q]\n"
          "                 [--job KIND:M[+NAME=AMOUNT]...[@PROFILE][%%POOL][,...]]...\n"
          "                 [--fair-scheduler-xml FILE]\n"
          "                 [--min-executors N] [--max-executors M] [--backlog-timeout MS]\n"
          "                 [--idle-timeout MS] [--executor-profile P=ARGS]...\n"
          "                 [--summary-json FILE] [--advertise ADDR]\n"
          "                 [--partition P] [--time-limit T] [--slurm-arg ARG]...\n"
          "                 [--slurm-poll-ms MS] [--executor-gpus N]\n"
          "                 [--executor-profile-gpus P=N]...\n"
          "                 [--listen ADDR] [--port P] [--token-file PATH] [--executor PATH]\n"
          "                 [--heartbeat-ms MS] [--timeout-s S]\n"
          "                 [--bench [--tasks N] [--null-ledger]] [--quiet]\n"
          "                 [--progress] [--progress-ms MS] [--kill-on-job-failure]\n"
          "                 [--heartbeat-timeout-ms MS] [--pending-loss-timeout-ms MS]\n"
          "                 [--max-task-failures N] [--register-timeout-ms MS]\n"
          "                 [--speculation [--speculation-task-duration-threshold-ms MS]\n"
          "                  [--decommission-kill-interval-ms MS]]\n"
          "                 [--metrics-port P] [--max-pending-connections N]\n"
          "                 [--max-connections N] [--max-unsent-bytes B]\n"
          "                 [--state-dir DIR] [--snapshot-ms MS]\n"
          "                 [--recovery-timeout-ms MS]\n"
          "                 [TEST-ONLY OPTIONS]\n"
          "  KIND: noop | sleep:MS | spin:US | hash | crash | exec:ARG; M tasks; a chain of stages "
          "runs in order\n"
          "  +NAME=AMOUNT: each task holds AMOUNT of resource NAME: N addresses or 1/K of one\n"
          "  @PROFILE: the stage runs on executors of that resource profile (default 0)\n"
          "  %%POOL: the stage's task set goes to that pool (--fair-scheduler-xml only; a pool\n"
          "     the file does not name is made with Spark's defaults)\n"
          "  --fair-scheduler-xml FILE: FAIR scheduling, the pools of Spark's allocation file\n"
          "     (<pool> may nest: a child pool)\n"
          "  --executor-profile P=ARGS: dynamic allocation starts executors of profile P, with\n"
          "     the tl-executor arguments ARGS, for a backlog of its tasks\n"
          "  Q: launches each executor may queue beyond its C cores, 0..4096 (default 0;\n"
          "     1 with --bench)\n"
          "  --null-ledger: --bench on the null floor (a FIFO of pending tasks and a map of\n"
          "     running tids in place of the ledger), to compare --bench with; --bench only\n"
          "  P: serve GET /metrics (Prometheus text) on the --listen address, 0 = any free port\n"
          "  --partition, --time-limit, --slurm-arg, --slurm-poll-ms, --executor-gpus,\n"
          "     --executor-profile-gpus: --launcher slurm only (--executor-gpus N: each\n"
          "     executor's job asks for --gres=gpu:N and declares the GPUs of Slurm's\n"
          "     allocation; --executor-profile-gpus P=N: so do profile P's, with N, 0: none)\n"
          "  --state-dir: keep the run's state there and recover it after a crash (records\n"
          "     are written off the loop every --snapshot-ms: launches do not wait for them)\n"
          "TEST-ONLY OPTIONS: faults a test injects, and what its verdict expects; not for a\n"
          "real run (docs/cluster.md \"Test-only options\"):\n"
          "  [--kill-executor-after N] [--external-kill-after N] [--stop-executor-after N]\n"
          "  [--bad-client MODE]... [--crash-in-state-write N:P] [--expect-losses N]\n"
          "  [--expect-job-failure]\n"
          "  MODE: wrong-token | garbage | oversized | duplicate-id | foreign-status | silent |\n"
          "        unknown-message | truncated | early-frame | second-register | driver-message |\n"
          "        duplicate-address | bad-address\n"
          "  --crash-in-state-write N:P: N a write's number, or release[+K] (the (K+1)-th write\n"
          "     after the first release); P torn | linked\n");
  exit(2);
}

/* A decimal number in [lo, hi], the whole of s; anything else is a usage error. */
static uint64_t parse_u64(const char *s, uint64_t lo, uint64_t hi) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi)
    usage();
  return (uint64_t)v;
}

/* Whether kind is one the executors run: noop, hash, crash, sleep:N, spin:N or exec:ARG (ARG of
 * [A-Za-z0-9_./-], what an executor's --task-command is given). */
static bool valid_kind(const char *kind) {
  if (!strcmp(kind, "noop") || !strcmp(kind, "hash") || !strcmp(kind, "crash"))
    return true;
  if (!strncmp(kind, "exec:", 5) && kind[5]) {
    for (const char *p = kind + 5; *p; p++)
      if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
            *p == '_' || *p == '.' || *p == '/' || *p == '-'))
        return false;
    return true;
  }
  const char *arg = NULL;
  if (!strncmp(kind, "sleep:", 6))
    arg = kind + 6;
  else if (!strncmp(kind, "spin:", 5))
    arg = kind + 5;
  if (!arg || !*arg || strlen(arg) > 9)
    return false;
  for (; *arg; arg++)
    if (*arg < '0' || *arg > '9')
      return false;
  return true;
}

/* "NAME=N" or "NAME=1/K" of a stage's "+NAME=AMOUNT": false when malformed or out of bounds. */
static bool parse_request(char *text, resource_spec *r) {
  char *eq = strchr(text, '=');
  if (!eq || eq == text || (size_t)(eq - text) > TLC_RESOURCE_NAME_MAX)
    return false;
  *eq = '\0';
  for (const char *p = text; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '_' || *p == '.' || *p == '-'))
      return false;
  strcpy(r->name, text);
  const char *v = eq + 1;
  r->share = 0;
  if (!strncmp(v, "1/", 2)) {
    v += 2;
    r->amount = 1;
  }
  char *end;
  unsigned long n = strtoul(v, &end, 10);
  if (*v < '0' || *v > '9' || *end != '\0')
    return false;
  if (v != eq + 1) { /* 1/K */
    if (n < 2 || n > TLC_SHARE_MAX)
      return false;
    r->share = (uint32_t)n;
    return true;
  }
  if (n < 1 || n > TLC_GRANTS_MAX)
    return false;
  r->amount = (uint32_t)n;
  return true;
}

/* A stage's "KIND:M[+NAME=AMOUNT]...[@PROFILE][%POOL]", parsed into st. False when
 * malformed. */
static bool parse_stage(char *part, stage_spec *st) {
  char *pct = strrchr(part, '%');
  if (pct) {
    *pct = '\0';
    size_t len = strlen(pct + 1);
    if (!pools_xml_name_ok(pct + 1, len))
      return false;
    memcpy(st->pool, pct + 1, len + 1);
  }
  char *at = strrchr(part, '@');
  if (at) {
    *at = '\0';
    char *end;
    unsigned long long p = strtoull(at + 1, &end, 10);
    if (at[1] < '0' || at[1] > '9' || *end != '\0' || p > UINT32_MAX)
      return false;
    st->profile = (uint32_t)p;
  }
  char *plus = strchr(part, '+');
  while (plus) {
    *plus = '\0';
    char *next = strchr(plus + 1, '+');
    if (next)
      *next = '\0';
    if (st->nresources == STAGE_RESOURCES_MAX ||
        !parse_request(plus + 1, &st->resources[st->nresources]))
      return false;
    for (uint32_t i = 0; i < st->nresources; i++)
      if (!strcmp(st->resources[i].name, st->resources[st->nresources].name))
        return false;
    st->nresources++;
    plus = next;
  }
  char *colon = strrchr(part, ':');
  if (!colon || colon == part || (size_t)(colon - part) > TLC_KIND_MAX)
    return false;
  *colon = '\0';
  strcpy(st->kind, part);
  st->ntasks = (uint32_t)parse_u64(colon + 1, 1, 10000000);
  return true;
}

/* "P=N" of --executor-profile-gpus: the executors of profile P (an --executor-profile's, once
 * each) ask Slurm for N GPUs, 0 to the wire's limit (0: none, whatever --executor-gpus says). */
static void profile_gpus(driver_opts *o, const char *spec) {
  const char *eq = strchr(spec, '=');
  char num[16];
  if (!eq || eq == spec || (size_t)(eq - spec) >= sizeof num)
    usage();
  memcpy(num, spec, (size_t)(eq - spec));
  num[eq - spec] = '\0';
  uint32_t p = (uint32_t)parse_u64(num, 1, UINT32_MAX);
  for (size_t i = 0; i < o->nshapes; i++) {
    if (o->shapes[i].profile != p)
      continue;
    if (o->shapes[i].gpus_set)
      usage();
    o->shapes[i].gpus = (uint32_t)parse_u64(eq + 1, 0, TLC_RESOURCE_ADDRESSES_MAX);
    o->shapes[i].gpus_set = true;
    return;
  }
  fprintf(stderr, "tl-driver: --executor-profile-gpus %s: no --executor-profile %s\n", spec, num);
  usage();
}

/* "P=ARGS" of --executor-profile: profile P (1..UINT32_MAX, once each) and the tl-executor
 * arguments its executors get, split at spaces (no quoting), after "--profile P". */
static void parse_shape(driver_opts *o, const char *spec) {
  if (o->nshapes == MAX_PROFILE_SHAPES)
    usage();
  profile_shape *sh = &o->shapes[o->nshapes];
  const char *eq = strchr(spec, '=');
  if (!eq || eq == spec || (size_t)(eq - spec) > 10 || strlen(spec) >= sizeof sh->text - 12)
    usage();
  char num[16];
  memcpy(num, spec, (size_t)(eq - spec));
  num[eq - spec] = '\0';
  sh->profile = (uint32_t)parse_u64(num, 1, UINT32_MAX);
  for (size_t i = 0; i < o->nshapes; i++)
    if (o->shapes[i].profile == sh->profile)
      usage();
  char *t = sh->text;
  strcpy(t, num);
  sh->args[0] = "--profile";
  sh->args[1] = t;
  sh->nargs = 2;
  t += strlen(num) + 1;
  strcpy(t, eq + 1);
  for (char *tok = strtok(t, " "); tok; tok = strtok(NULL, " ")) {
    if (sh->nargs == PROFILE_ARGS_MAX)
      usage();
    sh->args[sh->nargs++] = tok;
  }
  o->nshapes++;
}

/* "STAGE[,STAGE]...": a chain of stages, each "KIND:M[+NAME=AMOUNT]...[@PROFILE][%POOL]" (the
 * count after the kind's last colon). */
static void parse_job(driver_opts *o, const char *spec) {
  if (o->njobs == MAX_JOBS)
    usage();
  job_spec *j = &o->jobs[o->njobs++];
  while (*spec) {
    const char *end = strchr(spec, ',');
    if (!end)
      end = spec + strlen(spec);
    char part[TLC_KIND_MAX + 16 + STAGE_RESOURCES_MAX * (TLC_RESOURCE_NAME_MAX + 8) +
              POOLS_XML_NAME_MAX + 2];
    if (end == spec || (size_t)(end - spec) >= sizeof part || j->nstages == MAX_STAGES)
      usage();
    memcpy(part, spec, (size_t)(end - spec));
    part[end - spec] = '\0';
    stage_spec *st = &j->stages[j->nstages++];
    if (!parse_stage(part, st))
      usage();
    if (!valid_kind(st->kind)) {
      fprintf(stderr, "tl-driver: unknown task kind '%s'\n", st->kind);
      usage();
    }
    spec = *end ? end + 1 : end;
    if (*end && !*spec)
      usage();
  }
  if (j->nstages == 0)
    usage();
}

/* The options, as getopt_long returns them (values beyond any character's), in three groups:
 * what runs where, the driver's own settings, and the tests' faults and expectations. */
enum {
  /* what runs where (take_run_option) */
  OPT_LAUNCHER = 256,
  OPT_EXECUTORS,
  OPT_ACCEPT,
  OPT_CORES, /* --executor-cores and --cores */
  OPT_QUEUE,
  OPT_JOB,
  OPT_FAIR_SCHEDULER_XML,
  OPT_BENCH,
  OPT_TASKS,
  OPT_NULL_LEDGER,
  OPT_MIN_EXECUTORS,
  OPT_EXECUTOR_PROFILE,
  OPT_MAX_EXECUTORS,
  OPT_BACKLOG_TIMEOUT,
  OPT_IDLE_TIMEOUT,
  OPT_PARTITION,
  OPT_EXECUTOR_GPUS,
  OPT_EXECUTOR_PROFILE_GPUS,
  OPT_TIME_LIMIT,
  OPT_SLURM_ARG,
  OPT_SLURM_POLL_MS,
  /* the driver's own settings (take_driver_option) */
  OPT_LISTEN,
  OPT_PORT,
  OPT_ADVERTISE,
  OPT_METRICS_PORT,
  OPT_TOKEN_FILE,
  OPT_EXECUTOR,
  OPT_HEARTBEAT_MS,
  OPT_HEARTBEAT_TIMEOUT_MS,
  OPT_PENDING_LOSS_TIMEOUT_MS,
  OPT_MAX_TASK_FAILURES,
  OPT_SPECULATION,
  OPT_SPECULATION_THRESHOLD_MS,
  OPT_DECOMMISSION_KILL_INTERVAL_MS,
  OPT_KILL_ON_JOB_FAILURE,
  OPT_REGISTER_TIMEOUT_MS,
  OPT_MAX_PENDING_CONNECTIONS,
  OPT_MAX_CONNECTIONS,
  OPT_MAX_UNSENT_BYTES,
  OPT_TIMEOUT_S,
  OPT_SUMMARY_JSON,
  OPT_QUIET,
  OPT_PROGRESS,
  OPT_PROGRESS_MS,
  /* the tests' faults and expectations (take_test_option) */
  OPT_KILL_EXECUTOR_AFTER,
  OPT_EXTERNAL_KILL_AFTER,
  OPT_STOP_EXECUTOR_AFTER,
  OPT_EXPECT_LOSSES,
  OPT_EXPECT_JOB_FAILURE,
  OPT_BAD_CLIENT,
  OPT_STATE_DIR,
  OPT_SNAPSHOT_MS,
  OPT_RECOVERY_TIMEOUT_MS,
  OPT_CRASH_IN_STATE_WRITE,
};

static const struct option long_options[] = {
    {"launcher", required_argument, NULL, OPT_LAUNCHER},
    {"executors", required_argument, NULL, OPT_EXECUTORS},
    {"accept", required_argument, NULL, OPT_ACCEPT},
    {"executor-cores", required_argument, NULL, OPT_CORES},
    {"cores", required_argument, NULL, OPT_CORES},
    {"queue", required_argument, NULL, OPT_QUEUE},
    {"job", required_argument, NULL, OPT_JOB},
    {"fair-scheduler-xml", required_argument, NULL, OPT_FAIR_SCHEDULER_XML},
    {"bench", no_argument, NULL, OPT_BENCH},
    {"tasks", required_argument, NULL, OPT_TASKS},
    {"null-ledger", no_argument, NULL, OPT_NULL_LEDGER},
    {"min-executors", required_argument, NULL, OPT_MIN_EXECUTORS},
    {"executor-profile", required_argument, NULL, OPT_EXECUTOR_PROFILE},
    {"max-executors", required_argument, NULL, OPT_MAX_EXECUTORS},
    {"backlog-timeout", required_argument, NULL, OPT_BACKLOG_TIMEOUT},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"partition", required_argument, NULL, OPT_PARTITION},
    {"executor-gpus", required_argument, NULL, OPT_EXECUTOR_GPUS},
    {"executor-profile-gpus", required_argument, NULL, OPT_EXECUTOR_PROFILE_GPUS},
    {"time-limit", required_argument, NULL, OPT_TIME_LIMIT},
    {"slurm-arg", required_argument, NULL, OPT_SLURM_ARG},
    {"slurm-poll-ms", required_argument, NULL, OPT_SLURM_POLL_MS},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"port", required_argument, NULL, OPT_PORT},
    {"advertise", required_argument, NULL, OPT_ADVERTISE},
    {"metrics-port", required_argument, NULL, OPT_METRICS_PORT},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"executor", required_argument, NULL, OPT_EXECUTOR},
    {"heartbeat-ms", required_argument, NULL, OPT_HEARTBEAT_MS},
    {"heartbeat-timeout-ms", required_argument, NULL, OPT_HEARTBEAT_TIMEOUT_MS},
    {"pending-loss-timeout-ms", required_argument, NULL, OPT_PENDING_LOSS_TIMEOUT_MS},
    {"max-task-failures", required_argument, NULL, OPT_MAX_TASK_FAILURES},
    {"speculation", no_argument, NULL, OPT_SPECULATION},
    {"speculation-task-duration-threshold-ms", required_argument, NULL,
     OPT_SPECULATION_THRESHOLD_MS},
    {"decommission-kill-interval-ms", required_argument, NULL, OPT_DECOMMISSION_KILL_INTERVAL_MS},
    {"kill-on-job-failure", no_argument, NULL, OPT_KILL_ON_JOB_FAILURE},
    {"register-timeout-ms", required_argument, NULL, OPT_REGISTER_TIMEOUT_MS},
    {"max-pending-connections", required_argument, NULL, OPT_MAX_PENDING_CONNECTIONS},
    {"max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS},
    {"max-unsent-bytes", required_argument, NULL, OPT_MAX_UNSENT_BYTES},
    {"timeout-s", required_argument, NULL, OPT_TIMEOUT_S},
    {"summary-json", required_argument, NULL, OPT_SUMMARY_JSON},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"progress-ms", required_argument, NULL, OPT_PROGRESS_MS},
    {"kill-executor-after", required_argument, NULL, OPT_KILL_EXECUTOR_AFTER},
    {"external-kill-after", required_argument, NULL, OPT_EXTERNAL_KILL_AFTER},
    {"stop-executor-after", required_argument, NULL, OPT_STOP_EXECUTOR_AFTER},
    {"expect-losses", required_argument, NULL, OPT_EXPECT_LOSSES},
    {"expect-job-failure", no_argument, NULL, OPT_EXPECT_JOB_FAILURE},
    {"bad-client", required_argument, NULL, OPT_BAD_CLIENT},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"snapshot-ms", required_argument, NULL, OPT_SNAPSHOT_MS},
    {"recovery-timeout-ms", required_argument, NULL, OPT_RECOVERY_TIMEOUT_MS},
    {"crash-in-state-write", required_argument, NULL, OPT_CRASH_IN_STATE_WRITE},
    {NULL, 0, NULL, 0},
};

/* What the command line gave beyond the options' values: which options that have a default
 * depending on others were given, for resolve. */
typedef struct given {
  bool executors, cores, queue; /* --bench keeps what is given */
  bool min, max;                /* dynamic allocation */
  bool slurm_only;              /* an option only --launcher slurm takes */
  const char *profile_gpus[MAX_PROFILE_SHAPES]; /* --executor-profile-gpus P=N, as given */
  size_t nprofile_gpus;
  uint32_t bench_tasks;         /* --tasks, or BENCH_TASKS */
} given;

static void set_defaults(driver_opts *o, given *g) {
  *o = (driver_opts){.launcher = "local",
                     .executors = 2,
                     .cores = 4,
                     .backlog_ms = 1000,
                     .idle_ms = 60000,
                     .slurm_poll_ms = 1000,
                     .listen = "127.0.0.1",
                     .metrics_port = -1,
                     .heartbeat_ms = 1000,
                     .heartbeat_timeout_ms = 5000,
                     .pending_loss_ms = 10000,
                     .expect_losses = UINT64_MAX,
                     .register_timeout_ms = REGISTER_TIMEOUT_MS,
                     .max_pending = MAX_PENDING_CONNS,
                     .max_conns = MAX_CONNS,
                     .max_unsent = MAX_UNSENT_BYTES,
                     .timeout_s = 60,
                     .progress_ms = PROGRESS_MS,
                     .snapshot_ms = 200,
                     .recovery_timeout_ms = 30000};
  *g = (given){.bench_tasks = BENCH_TASKS};
}

/* An option of what runs where, and its value v (NULL for a flag). Returns false for an option
 * of another group. */
static bool take_run_option(driver_opts *o, given *g, int opt, const char *v) {
  switch (opt) {
  case OPT_LAUNCHER:
    if (strcmp(v, "local") != 0 && strcmp(v, "slurm") != 0) {
      fprintf(stderr, "tl-driver: unknown launcher '%s'\n", v);
      usage();
    }
    o->launcher = v;
    return true;
  case OPT_EXECUTORS:
    o->executors = (uint32_t)parse_u64(v, 0, MAX_EXECUTORS);
    g->executors = true;
    return true;
  case OPT_ACCEPT:
    o->accept = (uint32_t)parse_u64(v, 0, MAX_EXECUTORS);
    return true;
  case OPT_CORES:
    o->cores = (uint32_t)parse_u64(v, 1, 4096);
    g->cores = true;
    return true;
  case OPT_QUEUE:
    o->queue = (uint32_t)parse_u64(v, 0, 4096);
    g->queue = true;
    return true;
  case OPT_JOB:
    parse_job(o, v);
    return true;
  case OPT_FAIR_SCHEDULER_XML:
    o->fair_scheduler_xml = v;
    return true;
  case OPT_BENCH:
    o->bench = true;
    return true;
  case OPT_TASKS:
    g->bench_tasks = (uint32_t)parse_u64(v, 1, 10000000);
    return true;
  case OPT_NULL_LEDGER:
    o->null_ledger = true;
    return true;
  case OPT_EXECUTOR_PROFILE:
    parse_shape(o, v);
    return true;
  case OPT_MIN_EXECUTORS:
    o->min_executors = (uint32_t)parse_u64(v, 0, MAX_EXECUTORS);
    g->min = true;
    return true;
  case OPT_MAX_EXECUTORS:
    o->max_executors = (uint32_t)parse_u64(v, 1, MAX_EXECUTORS);
    g->max = true;
    return true;
  case OPT_BACKLOG_TIMEOUT:
    o->backlog_ms = parse_u64(v, 1, 3600000);
    return true;
  case OPT_IDLE_TIMEOUT:
    o->idle_ms = parse_u64(v, 1, 86400000);
    return true;
  case OPT_PARTITION:
    o->partition = v;
    g->slurm_only = true;
    return true;
  case OPT_EXECUTOR_GPUS:
    o->executor_gpus = (uint32_t)parse_u64(v, 1, TLC_RESOURCE_ADDRESSES_MAX);
    g->slurm_only = true;
    return true;
  case OPT_EXECUTOR_PROFILE_GPUS:
    if (g->nprofile_gpus == MAX_PROFILE_SHAPES)
      usage();
    g->profile_gpus[g->nprofile_gpus++] = v; /* resolved once every --executor-profile is read */
    g->slurm_only = true;
    return true;
  case OPT_TIME_LIMIT:
    o->time_limit = v;
    g->slurm_only = true;
    return true;
  case OPT_SLURM_ARG:
    if (o->nslurm_args == MAX_SLURM_ARGS)
      usage();
    o->slurm_args[o->nslurm_args++] = v;
    g->slurm_only = true;
    return true;
  case OPT_SLURM_POLL_MS:
    o->slurm_poll_ms = parse_u64(v, 10, 3600000);
    g->slurm_only = true;
    return true;
  default:
    return false;
  }
}

/* An option of the driver's own settings, and its value v (NULL for a flag). Returns false for
 * an option of another group. */
static bool take_driver_option(driver_opts *o, int opt, const char *v) {
  switch (opt) {
  case OPT_LISTEN:
    o->listen = v;
    break;
  case OPT_PORT:
    o->port = (int)parse_u64(v, 0, 65535);
    break;
  case OPT_ADVERTISE:
    o->advertise = v;
    break;
  case OPT_METRICS_PORT:
    o->metrics_port = (int)parse_u64(v, 0, 65535);
    break;
  case OPT_TOKEN_FILE:
    o->token_file = v;
    break;
  case OPT_EXECUTOR:
    o->executor_path = v;
    break;
  case OPT_HEARTBEAT_MS:
    o->heartbeat_ms = parse_u64(v, 1, 3600000);
    break;
  case OPT_HEARTBEAT_TIMEOUT_MS:
    o->heartbeat_timeout_ms = parse_u64(v, 1, 3600000);
    break;
  case OPT_PENDING_LOSS_TIMEOUT_MS:
    o->pending_loss_ms = parse_u64(v, 1, 3600000);
    break;
  case OPT_MAX_TASK_FAILURES:
    o->max_task_failures = (uint32_t)parse_u64(v, 1, 1000);
    break;
  case OPT_SPECULATION:
    o->speculation = true;
    break;
  case OPT_SPECULATION_THRESHOLD_MS: /* 1 ms to a day, as the other timeouts in ms */
    o->speculation_threshold_ms = parse_u64(v, 1, 86400000);
    break;
  case OPT_DECOMMISSION_KILL_INTERVAL_MS:
    o->decommission_kill_interval_ms = parse_u64(v, 1, 86400000);
    break;
  case OPT_KILL_ON_JOB_FAILURE:
    o->kill_on_failure = true;
    break;
  case OPT_REGISTER_TIMEOUT_MS:
    o->register_timeout_ms = parse_u64(v, 1, 3600000);
    break;
  case OPT_MAX_PENDING_CONNECTIONS:
    o->max_pending = (uint32_t)parse_u64(v, 1, MAX_CONNS_LIMIT);
    break;
  case OPT_MAX_CONNECTIONS:
    o->max_conns = (uint32_t)parse_u64(v, 1, MAX_CONNS_LIMIT);
    break;
  case OPT_MAX_UNSENT_BYTES:
    o->max_unsent = parse_u64(v, MIN_UNSENT_BYTES, UINT64_C(1) << 40);
    break;
  case OPT_TIMEOUT_S:
    o->timeout_s = parse_u64(v, 1, 86400);
    break;
  case OPT_SUMMARY_JSON:
    o->summary_json = v;
    break;
  case OPT_QUIET:
    o->quiet = true;
    break;
  case OPT_PROGRESS:
    o->progress = true;
    break;
  case OPT_PROGRESS_MS:
    o->progress_ms = parse_u64(v, 1, 3600000);
    break;
  case OPT_STATE_DIR:
    if (!*v)
      usage();
    o->state_dir = v;
    break;
  case OPT_SNAPSHOT_MS:
    o->snapshot_ms = parse_u64(v, 1, 3600000);
    break;
  case OPT_RECOVERY_TIMEOUT_MS:
    o->recovery_timeout_ms = parse_u64(v, 1, 3600000);
    break;
  default:
    return false;
  }
  return true;
}

/* An option of the tests' faults and expectations, and its value v (NULL for a flag). Returns
 * false for an option of another group. */
static bool take_test_option(driver_opts *o, int opt, const char *v) {
  switch (opt) {
  case OPT_KILL_EXECUTOR_AFTER:
    o->kill_after = parse_u64(v, 1, UINT32_MAX);
    break;
  case OPT_EXTERNAL_KILL_AFTER:
    o->external_kill_after = parse_u64(v, 1, UINT32_MAX);
    break;
  case OPT_STOP_EXECUTOR_AFTER:
    o->stop_after = parse_u64(v, 1, UINT32_MAX);
    break;
  case OPT_EXPECT_LOSSES:
    o->expect_losses = parse_u64(v, 0, MAX_EXECUTORS);
    break;
  case OPT_EXPECT_JOB_FAILURE:
    o->expect_failure = true;
    break;
  case OPT_CRASH_IN_STATE_WRITE: {
    const char *colon = strchr(v, ':');
    if (!colon || colon == v || colon - v > 10)
      usage();
    char n[11];
    memcpy(n, v, (size_t)(colon - v));
    n[colon - v] = '\0';
    if (!strncmp(n, "release", 7)) {
      o->crash_after_release = true;
      if (n[7] == '+')
        o->crash_release_skip = parse_u64(n + 8, 0, 99);
      else if (n[7] != '\0')
        usage();
    } else {
      o->crash_write = parse_u64(n, 1, UINT32_MAX);
    }
    if (!strcmp(colon + 1, "torn"))
      o->crash_point = 1;
    else if (!strcmp(colon + 1, "linked"))
      o->crash_point = 2;
    else
      usage();
    break;
  }
  case OPT_BAD_CLIENT: {
    if (o->nbad == MAX_BAD_CLIENTS)
      usage();
    int m = 0;
    while (m < BAD_NMODES && strcmp(v, bad_mode_names[m]) != 0)
      m++;
    if (m == BAD_NMODES)
      usage();
    o->bad[o->nbad++] = (bad_mode)m;
    break;
  }
  default:
    return false;
  }
  return true;
}

/* The defaults that depend on other options, and the checks across options. */
static void resolve(driver_opts *o, const given *g) {
  if (o->bench) {
    if (o->njobs > 0)
      usage();
    o->executors = g->executors ? o->executors : 2;
    o->cores = g->cores ? o->cores : 1;
    /* One launch waiting behind the running one on each single-core executor: what Dask does
     * by default (worker-saturation 1.1: ceil(1.1 x 1 thread) = 2 tasks per worker), so that
     * the comparison with Dask's figure is like for like. --queue 0 measures strictly one task
     * in flight per core. */
    o->queue = g->queue ? o->queue : 1;
    o->jobs[0] = (job_spec){.stages = {{.kind = "noop", .ntasks = g->bench_tasks}}, .nstages = 1};
    o->njobs = 1;
  }
  if (g->slurm_only && strcmp(o->launcher, "slurm") != 0) {
    fprintf(stderr, "tl-driver: --partition, --time-limit, --slurm-arg, --slurm-poll-ms, "
                    "--executor-gpus and --executor-profile-gpus are for --launcher slurm\n");
    usage();
  }
  /* Dynamic allocation: --executors is the initial count (default --min-executors), within
   * [min, max]. */
  o->dynamic = g->min || g->max;
  if (o->dynamic) {
    if (!g->max)
      o->max_executors = MAX_EXECUTORS;
    if (!g->executors)
      o->executors = o->min_executors;
    if (o->min_executors > o->max_executors || o->executors < o->min_executors ||
        o->executors > o->max_executors) {
      fprintf(stderr, "tl-driver: want --min-executors <= --executors <= --max-executors\n");
      usage();
    }
  }
  for (size_t k = 0; k < g->nprofile_gpus; k++)
    profile_gpus(o, g->profile_gpus[k]);
  if (o->nshapes > 0 && !o->dynamic) {
    fprintf(stderr, "tl-driver: --executor-profile is for dynamic allocation "
                    "(--min-executors, --max-executors)\n");
    usage();
  }
  if (o->njobs == 0 || (o->executors + o->accept == 0 && !o->dynamic))
    usage();
  for (size_t i = 0; i < o->njobs && !o->fair_scheduler_xml; i++)
    for (uint32_t k = 0; k < o->jobs[i].nstages; k++)
      if (o->jobs[i].stages[k].pool[0]) {
        fprintf(stderr,
                "tl-driver: a stage names a pool (%%%s): pools need "
                "--fair-scheduler-xml\n",
                o->jobs[i].stages[k].pool);
        usage();
      }
  if ((o->crash_write || o->crash_after_release) && !o->state_dir)
    usage();
  /* The library refuses both without speculation (tl_config): so does the command line. */
  if ((o->speculation_threshold_ms || o->decommission_kill_interval_ms) && !o->speculation) {
    fprintf(stderr, "tl-driver: --speculation-task-duration-threshold-ms and "
                    "--decommission-kill-interval-ms need --speculation\n");
    usage();
  }
  if (o->null_ledger &&
      (!o->bench || o->dynamic || o->state_dir || o->kill_on_failure || o->fair_scheduler_xml ||
       o->kill_after || o->external_kill_after || o->stop_after || o->nbad || o->expect_failure ||
       o->expect_losses != UINT64_MAX)) {
    fprintf(stderr, "tl-driver: --null-ledger runs --bench alone: not with --job, dynamic "
                    "allocation, --state-dir, --kill-on-job-failure, --fair-scheduler-xml or a "
                    "test-only option\n");
    usage();
  }
  if (o->crash_after_release && !o->dynamic) /* nothing is released without it */
    usage();
}

void driver_opts_parse(int argc, char **argv, driver_opts *o) {
  given g;
  set_defaults(o, &g);
  opterr = 0; /* a bad option gets the usage text, as every other mistake does */
  int opt;
  /* "+": stop at the first argument that is not an option (tl-driver takes none). */
  while ((opt = getopt_long(argc, argv, "+", long_options, NULL)) != -1)
    if (!take_run_option(o, &g, opt, optarg) && !take_driver_option(o, opt, optarg) &&
        !take_test_option(o, opt, optarg))
      usage(); /* '?': an unknown option, a missing value, or a value given to a flag */
  if (optind < argc)
    usage();
  resolve(o, &g);
}
