/* tl-sim's options (docs/sim.md, "Options"): their defaults, the command line parsed into them,
 * and the usage text. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

void options_init(sim_options *o) {
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
  o->gpus = 4;
  o->gpu_amount = 1;
}

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
        "  --gpu-executors N    the first N executors declare \"gpu\" (0: no GPUs)\n"
        "  --gpus G             addresses \"0\" .. G-1 each, 1 to 64 (4)\n"
        "  --gpu-profile P      the GPU executors' and GPU stages' resource profile (0)\n"
        "  --gpu-stages P       probability that a stage asks each task for GPUs (0)\n"
        "  --gpu-amount N       whole GPUs per task of such a stage (1)\n"
        "  --gpu-share K        each such task holds 1/K of one GPU instead, K 2 to 32\n"
        "  --id-prefix TEXT     executor ids are TEXT and a number (exec-)\n"
        "  --pools              FAIR, nested pools, tagged jobs, cancel and kill by tag\n"
        "  --speculation        tl_config.speculation (off)\n"
        "  --speculation-threshold S  speculation_task_duration_threshold_ns, to 86400 (0: off)\n"
        "  --decommission-kill-interval S  decommission_kill_interval_ns, to 86400 (0: off)\n"
        "  --quiet              no event log, no progress line\n",
        f);
}

/* The GPU options agree with each other and with the cluster (docs/sim.md, "GPUs"). */
static int check_gpu(const sim_options *o) {
  const char *why = NULL;
  if (o->gpu_executors > o->executors)
    why = "--gpu-executors is more than --executors";
  else if (o->gpu_stages > 0 && o->gpu_executors == 0)
    why = "--gpu-stages needs --gpu-executors";
  else if (o->gpu_share && o->gpu_amount != 1)
    why = "--gpu-share and --gpu-amount exclude each other";
  else if (o->gpu_amount > o->gpus)
    why = "--gpu-amount is more than --gpus: no executor could run such a task";
  else if (o->gpu_profile && o->gpu_stages < 1 && o->gpu_executors == o->executors)
    why = "with --gpu-profile, the stages that ask for no GPU need executors without them";
  else if (o->gpu_executors == 0 && (o->gpu_profile || o->gpu_share))
    why = "--gpu-profile and --gpu-share need --gpu-executors";
  else if (!o->speculation && (o->spec_threshold_s > 0 || o->decom_kill_s > 0))
    why = "--speculation-threshold and --decommission-kill-interval need --speculation";
  if (why) {
    fprintf(stderr, "tl-sim: %s\n", why);
    return -1;
  }
  return 0;
}

int parse_args(sim_options *o, int argc, char **argv) {
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
    if (!strcmp(a, "--pools")) {
      o->pools = true;
      continue;
    }
    if (!strcmp(a, "--speculation")) {
      o->speculation = true;
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
        {"--gpu-executors", &o->gpu_executors, NULL, 0, 10000},
        {"--gpus", &o->gpus, NULL, 1, SIM_GPUS_MAX},
        {"--gpu-profile", &o->gpu_profile, NULL, 0, UINT32_MAX},
        {"--gpu-amount", &o->gpu_amount, NULL, 1, TL_TASK_GRANTS_MAX},
        {"--gpu-share", &o->gpu_share, NULL, 2, TL_SHARE_MAX},
        {"--gpu-stages", NULL, &o->gpu_stages, 0, 1},
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
        {"--speculation-threshold", NULL, &o->spec_threshold_s, 0, 86400},
        {"--decommission-kill-interval", NULL, &o->decom_kill_s, 0, 86400},
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
  return check_gpu(o);
  return 0;
}
