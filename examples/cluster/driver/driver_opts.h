/* tl-driver's command line (docs/cluster.md "The programs"): every option, parsed with
 * getopt_long into one record with the defaults filled in and the options that depend on each
 * other resolved (--bench, dynamic allocation, the Slurm-only options). A bad command line is
 * refused here, with the usage text and exit status 2.
 */
#ifndef TLC_DRIVER_OPTS_H
#define TLC_DRIVER_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pools_xml.h"
#include "proto.h"

#define MAX_JOBS 16        /* --job options at most */
#define MAX_STAGES 8       /* stages in one job's chain at most */
#define MAX_EXECUTORS 64   /* --executors, --max-executors at most */
#define MAX_SLURM_ARGS 32  /* --slurm-arg options at most */
#define MAX_BAD_CLIENTS 16 /* --bad-client options at most */

/* The bad-client modes of tl-badclient, and what the driver must refuse each one for. */
typedef enum bad_mode {
  BAD_WRONG_TOKEN,    /* REGISTER with a wrong token: closed */
  BAD_GARBAGE,        /* a frame of version 0xff: closed, TLC_EVERSION */
  BAD_OVERSIZED,      /* a length prefix over TLC_FRAME_MAX: closed, TLC_ETOOBIG */
  BAD_DUPLICATE_ID,   /* REGISTER as exec-1, alive: closed, TL_EEXIST */
  BAD_FOREIGN_STATUS, /* a STATUS for exec-1's task: refused by the ledger, TL_EOWNER */
  BAD_SILENT,         /* nothing: closed by the registration timeout */
  BAD_UNKNOWN,        /* a frame of an unknown message type: closed, TLC_ETYPE */
  BAD_TRUNCATED,      /* a REGISTER frame one byte short: closed, TLC_ETRUNCATED */
  BAD_EARLY,          /* a HEARTBEAT before REGISTER: closed */
  BAD_SECOND,         /* REGISTER, then REGISTER again: closed, its executor removed */
  BAD_DRIVER_MSG,     /* REGISTER, then a LAUNCH (the driver's message): closed, removed */
  BAD_DUP_ADDRESS,    /* REGISTER declaring gpu=0,0: STOP, closed, TL_ERESOURCE */
  BAD_ADDRESS,        /* REGISTER with the address "0,1": closed, TLC_ERESOURCE */
  BAD_NMODES
} bad_mode;

/* The --bad-client MODE names, by bad_mode; also tl-badclient's own argument. */
extern const char *const bad_mode_names[BAD_NMODES];

/* Resources one stage's tasks may ask for at most (+NAME=AMOUNT in its --job). */
#define STAGE_RESOURCES_MAX 4

/* What each task of a stage asks for of one resource: +NAME=N (N whole addresses) or
 * +NAME=1/K (a share of one address). */
typedef struct resource_spec {
  char name[TLC_RESOURCE_NAME_MAX + 1]; /* [A-Za-z0-9_.-], 1..63 bytes */
  uint32_t amount;                      /* whole addresses, 1..TLC_GRANTS_MAX; 1 with a share */
  uint32_t share;                       /* 0: whole; K in 2..TLC_SHARE_MAX */
} resource_spec;

/* One stage of a --job: ntasks tasks of one kind, on executors of one profile, each task asking
 * for the resources listed. */
typedef struct stage_spec {
  char kind[TLC_KIND_MAX + 1]; /* "noop", "sleep:5", ...: a kind the executors run */
  uint32_t ntasks;             /* 1..10,000,000 */
  uint32_t profile;            /* @P: the resource profile of its task set (0) */
  char pool[POOLS_XML_NAME_MAX + 1]; /* %POOL: its task set's pool; "" for none ("default") */
  uint32_t nresources;         /* 0..STAGE_RESOURCES_MAX */
  resource_spec resources[STAGE_RESOURCES_MAX];
} stage_spec;

/* Executor shapes of resource profiles (--executor-profile P=ARGS): what dynamic allocation
 * starts for a backlog of profile P's tasks. */
#define MAX_PROFILE_SHAPES 4 /* --executor-profile options at most */
#define PROFILE_ARGS_MAX 16  /* tl-executor arguments of one, "--profile P" included */
typedef struct profile_shape {
  uint32_t profile;                   /* P, 1..UINT32_MAX (profile 0 is the default shape) */
  const char *args[PROFILE_ARGS_MAX]; /* "--profile", "P", then ARGS split at spaces */
  size_t nargs;                       /* used entries of args */
  char text[512];                     /* ARGS and P's digits, the strings args point at */
  uint32_t gpus;                      /* --executor-profile-gpus P=N: its Slurm jobs ask for
                                         --gres=gpu:N (gpus_set); else --executor-gpus's */
  bool gpus_set;
} profile_shape;

/* One --job: a chain of stages, in order. */
typedef struct job_spec {
  stage_spec stages[MAX_STAGES]; /* nstages of them */
  uint32_t nstages;              /* at least 1 */
} job_spec;

/* The command line, resolved: each field holds what the option gave or its default. The strings
 * point into argv. */
typedef struct driver_opts {
  const char *launcher;    /* --launcher: "local" or "slurm" */
  uint32_t executors;      /* --executors, or --bench's or --min-executors' count */
  uint32_t accept;         /* --accept */
  uint32_t cores;          /* --executor-cores (--cores), or --bench's 1 */
  uint32_t queue;          /* --queue, or --bench's 1 */
  job_spec jobs[MAX_JOBS]; /* --job, in order; --bench's one job */
  const char *fair_scheduler_xml; /* --fair-scheduler-xml; NULL: TL_FIFO, no pools */
  size_t njobs;            /* at least 1 */
  bool bench;              /* --bench */
  bool null_ledger;        /* --null-ledger: --bench on the null floor (nullfloor.c) */
  bool dynamic;            /* --min-executors or --max-executors was given */
  uint32_t min_executors;  /* --min-executors; with dynamic only */
  profile_shape shapes[MAX_PROFILE_SHAPES]; /* --executor-profile, with dynamic only */
  size_t nshapes;                           /* used entries of shapes */
  uint32_t max_executors;   /* --max-executors, MAX_EXECUTORS unless given; dynamic only */
  uint64_t backlog_ms;      /* --backlog-timeout */
  uint64_t idle_ms;         /* --idle-timeout */
  const char *summary_json; /* --summary-json; NULL: none */
  const char *advertise;    /* --advertise; NULL: derived from --listen */
  const char *partition;    /* --partition (slurm only); NULL: Slurm's */
  const char *time_limit;   /* --time-limit (slurm only); NULL: Slurm's */
  const char *slurm_args[MAX_SLURM_ARGS]; /* --slurm-arg, in order (slurm only) */
  size_t nslurm_args;                     /* used entries of slurm_args */
  uint64_t slurm_poll_ms;                 /* --slurm-poll-ms */
  uint32_t executor_gpus;                 /* --executor-gpus (slurm only): 0 for none */
  const char *listen;                     /* --listen */
  int port;                               /* --port; 0: any free port */
  int metrics_port;                       /* --metrics-port; -1: no metrics endpoint */
  const char *token_file;                 /* --token-file; NULL: TL_CLUSTER_TOKEN or random */
  const char *executor_path;              /* --executor; NULL: the one next to tl-driver */
  uint64_t heartbeat_ms;                  /* --heartbeat-ms */
  uint64_t heartbeat_timeout_ms;          /* --heartbeat-timeout-ms */
  uint64_t pending_loss_ms;               /* --pending-loss-timeout-ms */
  uint32_t max_task_failures;             /* --max-task-failures; 0: the library's default */
  bool speculation;                       /* --speculation: tl_config.speculation */
  uint64_t speculation_threshold_ms;      /* --speculation-task-duration-threshold-ms; 0: off */
  uint64_t decommission_kill_interval_ms; /* --decommission-kill-interval-ms; 0: off */
  uint64_t kill_after;                    /* --kill-executor-after (0: none) */
  uint64_t external_kill_after;           /* --external-kill-after (0: none) */
  uint64_t stop_after;                    /* --stop-executor-after (0: none) */
  uint64_t expect_losses;                 /* --expect-losses; UINT64_MAX: any number */
  bool expect_failure;                    /* --expect-job-failure */
  uint64_t register_timeout_ms;           /* --register-timeout-ms */
  uint32_t max_pending;                   /* --max-pending-connections */
  uint32_t max_conns;                     /* --max-connections */
  uint64_t max_unsent;                    /* --max-unsent-bytes */
  bad_mode bad[MAX_BAD_CLIENTS];          /* --bad-client, in order */
  uint32_t nbad;                          /* used entries of bad */
  bool kill_on_failure;                   /* --kill-on-job-failure */
  uint64_t timeout_s;                     /* --timeout-s */
  bool quiet;                             /* --quiet */
  bool progress;                          /* --progress (forced on; else the terminal decides) */
  uint64_t progress_ms;                   /* --progress-ms */
  const char *state_dir;                  /* --state-dir; NULL: no failover */
  uint64_t snapshot_ms;                   /* --snapshot-ms */
  uint64_t recovery_timeout_ms;           /* --recovery-timeout-ms */
  uint64_t crash_write;                   /* --crash-in-state-write N (0: none) */
  bool crash_after_release;               /* its N was `release[+K]`: the (K+1)-th write after
                                             the first release (dynamic allocation) */
  uint64_t crash_release_skip;            /* that K */
  int crash_point;                        /* and its P: 1 torn, 2 linked (state.h) */
} driver_opts;

/* Parses argv into *o, by getopt_long's rules: the long options of the usage text, each value as
 * the next argument (--opt value) or after '=' (--opt=value), an unambiguous prefix for a name,
 * and no arguments that are not options. A bad command line (an unknown option, a value out of
 * its range, no --job, options that do not go together) prints the usage text on stderr, after a
 * line saying what was wrong where there is one, and exits with status 2. Called once (getopt's
 * state is global). */
void driver_opts_parse(int argc, char **argv, driver_opts *o);

#endif
