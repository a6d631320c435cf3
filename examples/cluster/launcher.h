/* How tl-driver gets its executors (docs/cluster.md, docs/slurm.md): one small interface, so
 * that a launcher is one more file. A launcher starts executor processes that connect back to
 * the driver, stops one or all of them, and tells the driver how each one ended, as soon as it
 * learns it: for `local` (launcher_local.c) from the uv_spawn exit callback; for `slurm`
 * (launcher_slurm.c) from Slurm's own account of the job step (squeue --json, scontrol), a
 * little after the connection dropped. That end is the second phase of a two-phase loss.
 *
 * Everything runs on the driver's loop thread; no call blocks (a launcher that runs commands
 * runs them with uv_spawn). The token reaches executors through the environment they inherit
 * (TL_CLUSTER_TOKEN, which the driver sets before creating the launcher), never argv.
 */
#ifndef TLC_LAUNCHER_H
#define TLC_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "taskledger.h"

/* How an executor ended, as its launcher learned it. Strings are valid during on_end only. */
typedef struct launcher_end {
  const char *executor_id; /* as given to start */
  tl_loss_kind kind;       /* TL_LOSS_EXITED (exit_code), TL_LOSS_KILLED (the driver asked),
                              TL_LOSS_PROCESS_LOST (gone, no reason: NODE_FAIL, PREEMPTED...) */
  bool caused_by_app;      /* whether it counts toward max_task_failures */
  int exit_code;           /* TL_LOSS_EXITED: the code, 128 + signal for a signal */
  bool requested;          /* the driver stopped it (launcher_ops.stop/stop_all) */
  const char *reason;      /* for a person: "exited 3", "CANCELLED", "OUT_OF_MEMORY", ... */
  const char *source;      /* where the reason came from: "waitpid status",
                              "squeue --json", "scontrol show job", ... */
} launcher_end;

typedef struct launcher_config {
  uv_loop_t *loop;           /* the driver's loop */
  const char *executor_path; /* the tl-executor binary */
  const char *connect_host;  /* the address executors connect to (--advertise, or --listen) */
  int port;                  /* the driver's port */
  uint32_t cores;            /* --executor-cores: each executor's cores */
  uint64_t heartbeat_ms;     /* the executors' heartbeat period */
  uint64_t reconnect_s;      /* their --reconnect-s: how long one whose driver went tries to
                                come back (0: it exits at once; a driver without --state-dir
                                recovers nothing, so it asks for 0) */
  /* slurm only (NULL / 0 otherwise) */
  const char *partition;         /* --partition */
  const char *time_limit;        /* --time-limit, Slurm's syntax */
  const char *const *extra_args; /* --slurm-arg, passed through to srun/sbatch */
  size_t nextra;                 /* entries of extra_args */
  uint64_t poll_ms;              /* the bounded period of Slurm queries */
  uint32_t gpus;                 /* --executor-gpus: each executor's job asks for --gres=gpu:N and
                                    its tl-executor declares the GPUs of Slurm's allocation, found
                                    by tl-slurm-gpus next to it (0: none) */
  /* Extra tl-executor arguments for one executor about to start (tl-driver --executor-profile:
   * its resource profile and resources), *n of them, at most LAUNCHER_ARGS_MAX; NULL (or *n 0)
   * for none. Called by start; the strings stay valid while the launcher runs. NULL: none. */
  const char *const *(*executor_args)(void *ud, const char *executor_id, size_t *n);
  /* slurm only: the GPUs one executor about to start asks for (tl-driver
   * --executor-profile-gpus: by its resource profile), 0 for none; NULL: gpus for every one. */
  uint32_t (*executor_gpus)(void *ud, const char *executor_id);
  /* Called once per executor started, when its end is known (never from inside a launcher_ops
   * call). ud is passed back. */
  void (*on_end)(void *ud, const launcher_end *end);
  void *ud;
} launcher_config;

typedef struct launcher_ops {
  const char *name; /* "local", "slurm": the --launcher value */
  /* Makes a launcher; *state is its own. 0, or a negative uv error / -1 with a message on
   * stderr. */
  int (*create)(const launcher_config *cfg, void **state);
  /* Starts one executor that registers as executor_id (1..255 bytes). 0, or < 0 when it could not
   * even be asked for (the driver then treats it as never started). */
  int (*start)(void *state, const char *executor_id);
  /* Stops one executor it started: its end is reported with requested = true. signum is what a
   * local process gets (SIGKILL, or SIGSTOP/SIGCONT for the tests' faults, which are not stops
   * and report nothing by themselves); a launcher that cannot deliver a signal maps it as best it
   * can (Slurm: scancel --signal). as_driver false: an injected fault that must look like a
   * death from outside (its end is not requested). 0 or < 0. */
  int (*signal)(void *state, const char *executor_id, int signum, bool as_driver);
  /* Stops every executor it started and has not seen end (the clean end: on exit, on a failed
   * job, on SIGINT/SIGTERM); their ends follow as requested. */
  void (*stop_all)(void *state);
  /* Executors started whose end has not been reported yet. */
  size_t (*running)(void *state);
  /* Asks for news of one executor sooner than the next poll (its connection just dropped). */
  void (*query)(void *state, const char *executor_id);
  /* Closes every handle once running() is 0 (or at once if it is), then calls done(ud); the
   * state is freed. */
  void (*close)(void *state, void (*done)(void *ud), void *ud);
  /* Driver failover (docs/cluster.md "Driver failover"). NULL both in a launcher that cannot
   * adopt (local: the crashed driver's processes are no children of the next one). */
  /* The handle the driver's record keeps of a started executor so that a driver started after a
   * crash can adopt it (slurm: its job id in decimal): written NUL-terminated into buf (cap
   * bytes, at least LAUNCHER_HANDLE_MAX); returns its length, 0 when there is none yet (its
   * sbatch has not answered) or it is not running. */
  size_t (*handle)(void *state, const char *executor_id, char *buf, size_t cap);
  /* Takes as its own an executor that a crashed driver started, by the handle its record kept:
   * from now on its end is reported through on_end as any other's (slurm: its job is polled,
   * so an end during the outage comes as Slurm's account has it, and a job Slurm no longer
   * knows ends as vanished). 0, or < 0: UV_EINVAL (an id of 0 or TL_ID_MAX bytes or more, a
   * handle this launcher does not make), UV_EEXIST (the id or the job is one of its already),
   * UV_ECANCELED (stop_all or close was called), UV_ENOMEM. */
  int (*adopt)(void *state, const char *executor_id, const char *handle);
} launcher_ops;

/* launcher_config.executor_args' arguments for one executor at most. */
#define LAUNCHER_ARGS_MAX 16

/* Bytes a launcher's handle takes at most, its NUL included. */
#define LAUNCHER_HANDLE_MAX 32

/* The launchers built in: launcher_find("local"), ...; NULL for an unknown name. */
const launcher_ops *launcher_find(const char *name);

/* Each launcher's operations, one per file, listed in launcher.c's table of built-in launchers:
 * launcher_local.c defines launcher_local_ops, launcher_slurm.c launcher_slurm_ops. A launcher
 * not built into this binary is simply absent from the table (launcher_find returns NULL). */
extern const launcher_ops launcher_local_ops;
extern const launcher_ops launcher_slurm_ops;

#endif
