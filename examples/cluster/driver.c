/* tl-driver: the driver process of the cluster example (docs/cluster.md). It embeds taskledger
 * on a libuv loop (taskledger-uv.h), listens on TCP, has its launcher (launcher.h: local
 * processes, or Slurm job steps) start tl-executor processes, registers them in the ledger once
 * they present the shared token, and runs the jobs given on its command line: offers each
 * executor its free cores, sends each task set's binary once per executor, batches an offer
 * round's launches into one LAUNCH frame and applies the executors' batched STATUS frames. A
 * lost executor is reported in two phases: TL_LOSS_PENDING when its connection closes, the real
 * reason from its launcher's account of its end (or, for an executor no launcher started or one
 * whose end never comes, the pending-loss timeout); a stopped one is caught by heartbeat expiry.
 * With --min-executors/--max-executors the number of executors follows the backlog (dynamic
 * allocation). At the end it stops the executors, has the launcher stop those that do not go,
 * waits for every end, checks that the ledger drained and prints a summary (and, with
 * --summary-json, writes it as JSON). With --queue Q each executor is registered with Q task
 * slots beyond its cores, so an offer round launches up to cores + Q tasks to it in one LAUNCH
 * frame; the executor runs cores of them at once and queues the rest.
 *
 *   tl-driver [--launcher local|slurm] [--executors N] [--accept N] [--executor-cores C]
 *             [--cores C] [--queue Q] [--job KIND:M[,KIND:M]...]...
 *             [--min-executors N] [--max-executors M] [--backlog-timeout MS]
 *             [--idle-timeout MS] [--summary-json FILE] [--advertise ADDR]
 *             [--partition P] [--time-limit T] [--slurm-arg ARG]... [--slurm-poll-ms MS]
 *             [--listen ADDR] [--port P] [--token-file PATH] [--executor PATH]
 *             [--heartbeat-ms MS] [--timeout-s S] [--bench [--tasks N]] [--quiet]
 *             [--progress] [--progress-ms MS] [--kill-on-job-failure]
 *             [--heartbeat-timeout-ms MS] [--pending-loss-timeout-ms MS]
 *             [--max-task-failures N] [--kill-executor-after N] [--external-kill-after N]
 *             [--stop-executor-after N] [--expect-losses N] [--expect-job-failure]
 *             [--register-timeout-ms MS] [--bad-client MODE]... [--metrics-port P]
 *             [--max-pending-connections N] [--max-connections N]
 *             [--state-dir DIR] [--snapshot-ms MS] [--recovery-timeout-ms MS]
 *             [--crash-in-state-write N:P]
 *
 * With --state-dir it keeps a durable record of the run there (every --snapshot-ms, at stage
 * boundaries, at registrations, before the launches and releases of a turn of the loop go out and
 * before launches pass the tid reservation), and a driver started on a directory that holds one
 * recovers the run: the ledger restored, its executors reconnecting and reconciling, dynamic
 * allocation going on (docs/cluster.md "Driver failover").
 *
 * (driver_opts.c parses the command line; main below sets the run up from it, runs the loop and
 * gives the verdict.)
 *
 * Exit status: 0 when every job succeeded (or, with --expect-job-failure, failed), the ledger
 * drained, the expected losses happened and every executor ended as it should have (one that
 * was sent a task set's binary twice exits 4, which fails the run); 1 otherwise; 2 for bad
 * arguments (an unknown launcher, or one not built into this binary, a token shorter than
 * TOKEN_MIN, included).
 *
 * Everything that arrives on the listening port is hostile until REGISTER with the token is
 * accepted, and bounded after: docs/cluster.md "Limits and hardening" has every limit.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "conn.h"
#include "driver_opts.h"
#include "launcher.h"
#include "metrics_http.h"
#include "proto.h"
#include "state.h"
#include "taskledger-uv.h"

static void die_oom(void);
#define uthash_fatal(msg) die_oom()
#include <uthash.h>

#define MAX_STARTED 256        /* executors a run may start in all (dynamic allocation) */
#define STOP_GRACE_MS 2000     /* after STOP, executors still running are stopped by force */
#define TOKEN_BYTES 32         /* random bytes of a generated token (hex-encoded) */
#define READ_CHUNK 65536       /* bytes of a connection's read buffer */
#define LAUNCH_FRAME_MAX 16384 /* launches in one LAUNCH frame at most */
#define FAULT_DELAY_MS 1000    /* a fault flag acts at most this long after its count */
#define LOG_LIMIT 20           /* refused updates logged one by one, then only counted */
#define CRASH_EXIT_CODE 42     /* tl-executor's exit status after a `crash` task */

/* The edge's limits (docs/cluster.md "Limits and hardening"): what a peer may cost the driver
 * before and after it authenticates, and how failed authentications are slowed. */
#define LISTEN_BACKLOG 128            /* the listening socket's queue of connections not accepted */
#define ACCEPT_BATCH 64               /* connections accepted in one turn of the loop at most */
#define FD_HEADROOM 64                /* descriptors beyond the connections: files, pipes, ... */
#define TOKEN_MIN 16                  /* bytes of the shared token at least */
#define AUTH_FREE_FAILURES 3          /* wrong tokens from one address before it must wait */
#define AUTH_WAIT_FIRST_MS 1000       /* the first wait; each further failure doubles it */
#define AUTH_WAIT_MAX_MS 60000        /* the longest wait */
#define AUTH_FORGET_MS 600000         /* an address with no failure for this long starts afresh */
#define AUTH_TRACKED_MAX 4096         /* addresses remembered; the stalest is dropped for a new */
#define EDGE_LOG_PER_S 10             /* edge log lines of one kind a second, then only counted */
#define LOST_DETAIL_MAX 64            /* lost executors shown one by one in the summary */
#define REPORT_DETAIL_MAX 64          /* executors' reports shown one by one in the summary */
#define SETTLE_MS 1000                /* open loss records checked against the ledger this often */
#define ESC_MAX (4 * TL_HOST_MAX + 1) /* an id or a host printed escaped, NUL included */
#define LOSS_KINDS (TL_LOSS_RECOVERY_TIMEOUT + 1) /* tl_loss_kind's values */

/* Failover (--state-dir; docs/cluster.md "Driver failover"). */
#define TID_BLOCK 65536 /* tids reserved by one state write: the next write comes before more */
#define FALLBACK_TID_GAP                                                                           \
  (UINT64_C(1) << 32)           /* tids skipped when recovery read state.prev: more than           \
                                   one write can have reserved */
#define STATE_BODY_VERSION 2    /* of the driver's record, inside the state file's version */
#define EXECUTOR_RECONNECT_S 60 /* its executors' --reconnect-s with --state-dir (else 0) */

/* One stage of a job: one task set of ntasks tasks of one kind. */
typedef struct stage {
  struct job *job;             /* the job it belongs to */
  char kind[TLC_KIND_MAX + 1]; /* "noop", "sleep:5", ...: the tasks' kind and the binary */
  uint32_t ntasks;             /* tasks in its task set */
  tl_taskset_id taskset;       /* as tl_submit gave it; 0 until submitted */
  uint32_t succeeded;          /* task_ended with TL_END_SUCCESS */
  uint32_t failed_attempts;    /* task_ended with anything else */
  uint32_t counted_failures;   /* of those, counted toward max_task_failures */
  uint32_t killed;             /* of those, ended TL_END_KILLED (--kill-on-job-failure) */
  uint32_t zombie_finished;    /* attempts that succeeded after taskset_failed (zombie tasks) */
  bool failed;                 /* taskset_failed arrived */
  bool released;               /* taskset_released arrived */
} stage;

/* One job: a chain of stages, each submitted when the one before it succeeded (a tiny DAG
 * layer). A failed stage fails the job; the stages after it are never submitted. */
typedef struct job {
  uint32_t id;              /* from 0: its priority, and its stage ids' high part */
  stage stages[MAX_STAGES]; /* nstages of them, in order */
  uint32_t nstages;         /* at least 1 */
  uint32_t current;         /* the stage submitted last */
  bool failed;              /* a stage failed, or could not be submitted */
  bool done;                /* its last task set was released, or it failed */
} job;

/* A task set's payload: its binary (the kind string), shared by all its launches. */
typedef struct stage_binary {
  stage *stage; /* whose task set */
  size_t len;   /* bytes of the binary: strlen(stage->kind) */
} stage_binary;

struct driver;

/* One accepted connection; once registered, one executor of the ledger. */
typedef struct conn {
  uv_tcp_t tcp;              /* its socket; data is this record */
  uv_timer_t register_timer; /* closes it if REGISTER does not come in time */
  struct driver *d;          /* the driver */
  struct conn *next;         /* the driver's list of connections */
  bool registered;           /* REGISTER passed: id is an executor of the ledger */
  bool gone;                 /* the ledger removed it while connected: told to STOP */
  bool violated;             /* closed for a protocol fault after it registered */
  bool closing;              /* uv_close was called */
  bool released;             /* dynamic allocation released it: decommissioned, sent STOP */
  bool recovering;           /* registered as an executor the restored ledger holds RECOVERING:
                                RECONCILE must come before anything but HEARTBEAT */
  uint64_t status_frames;    /* STATUS frames read on this connection */
  uint64_t synced;           /* of those, acknowledged durable by the last SYNCED sent */
  bool reconciled;           /* it reconciled with the restored ledger (handle_reconcile) */
  bool held;                 /* out holds launches no record holds yet: nothing is sent until
                                one does (hold_launches) */
  uint64_t idle_since;       /* uv_hrtime when it last ran nothing; 0 while it runs tasks */
  int handles_open;          /* handles not yet closed (tcp, timer): freed at 0 */
  char id[TL_ID_MAX];        /* the executor id, once registered */
  uint64_t binaries;         /* the last HEARTBEAT's binaries count */
  uint64_t heartbeats;       /* HEARTBEAT frames received */
  tl_taskset_id *sent;       /* task sets whose binary it holds: sent, no FORGET yet */
  size_t nsent, sent_cap;    /* used and allocated entries of sent */
  size_t tasksets_sent;      /* task sets whose binary was ever sent here */
  tlc_decoder decoder;       /* the executor's frames: at most TLC_REGISTER_FRAME_MAX bytes
                                each until REGISTER is accepted, TLC_FRAME_MAX after */
  tlc_buf out;               /* frames encoded and not yet handed to uv_write */
  uint32_t cores;            /* the cores it registered with */
  uint8_t addr_key[16];      /* its peer address, the key of its auth record (auth_key) */
  char peer[64];             /* its peer address and port, printable: "127.0.0.1:5000" */
} conn;

/* One executor the launcher was asked to start, and how it ended. */
typedef struct exec_rec {
  char id[TL_ID_MAX]; /* "exec-N": the id it registers with */
  bool started;       /* ops->start returned 0: its end will be reported */
  bool ended;         /* on_end came */
  bool released;      /* dynamic allocation released it: its end is requested, not a loss */
  bool fault_killed;  /* --kill-executor-after killed it (as the driver) */
  bool injected;      /* --external-kill-after killed it, as something outside would */
  bool stopped;       /* --stop-executor-after stopped it (SIGSTOP), not yet resumed */
  bool forced;        /* still running when the stop grace period ran out: stop_all got it */
  bool adopted;       /* started by the driver before a crash: its end is not reported here */
  char handle[LAUNCHER_HANDLE_MAX]; /* its launcher's handle (slurm: the job id), kept in the
                                       record so that the launcher can take it back after a
                                       crash (launcher_ops.adopt); "" for none */
  tl_loss_kind kind;                /* the end: as launcher_end */
  bool caused_by_app;               /* likewise */
  int exit_code;                    /* likewise */
  bool requested;                   /* likewise */
  char reason[160];                 /* likewise, truncated */
  char source[64];                  /* likewise, truncated */
} exec_rec;

/* One lost executor (any executor the ledger lost, started by the launcher or not; not one
 * released by dynamic allocation), for the summary: each report to the ledger in order. */
#define MAX_PHASES 4
typedef enum detection {
  DETECTED_CLOSE,     /* its connection closed */
  DETECTED_FAULT,     /* the driver closed it for a protocol fault */
  DETECTED_HEARTBEAT, /* tl_tick: heartbeat expiry */
  DETECTED_END,       /* its launcher reported its end first */
  DETECTED_RECOVERY,  /* tl_tick: restored, it did not reconcile in time */
  DETECTED_N
} detection;
static const char *const detection_names[DETECTED_N] = {
    "connection closed", "protocol fault", "heartbeat timeout", "launcher end", "recovery timeout"};
typedef struct loss_rec {
  char id[TL_ID_MAX];              /* the executor */
  uint64_t seq;                    /* the order in which the losses began, from 1 */
  detection detected_by;           /* how the loss began */
  tl_loss_kind phases[MAX_PHASES]; /* the reasons reported, first phase first */
  size_t nphases;                  /* used entries of phases */
  bool final;                      /* a real reason came (kind ... below are it) */
  tl_loss_kind kind;               /* the real reason's kind */
  bool caused_by_app;              /* likewise */
  int exit_code;                   /* likewise */
  char reason[160];                /* its message */
  char source[64];                 /* where it came from: the launcher's source, "driver", ... */
  UT_hash_handle hh;               /* on driver.open_losses by id, while no real reason came */
} loss_rec;

/* One address that sent wrong tokens (auth_failed): IPv4 addresses by themselves, IPv6 ones by
 * their /64, which one host may hold whole. */
typedef struct auth_rec {
  uint8_t key[16];     /* auth_key's */
  uint32_t failures;   /* wrong tokens since it was first seen (or forgotten) */
  uint64_t last_ns;    /* uv_hrtime of the last one */
  uint64_t wait_until; /* connections from it are refused at once until then */
  UT_hash_handle hh;   /* on driver.auth by key */
} auth_rec;

/* A kind of edge log line, printed whatever --quiet says (an operator must see an attack), at
 * most EDGE_LOG_PER_S a second; the rest are counted and said in one line. */
typedef struct ratelog {
  uint64_t window;           /* the second (uv_hrtime / 1e9) of the lines being counted */
  uint32_t in_window;        /* lines printed in it */
  uint64_t suppressed;       /* lines not printed since the last one that was */
  uint64_t total_suppressed; /* lines not printed in the whole run */
} ratelog;

/* What an executor reported last, kept after its connection closes, for the summary. */
typedef struct exec_report {
  char id[TL_ID_MAX];
  uint32_t cores;    /* as it registered */
  uint64_t binaries; /* materialisations it reported (shown, never trusted) */
  size_t tasksets;   /* distinct task sets whose binary the driver sent it */
} exec_report;

/* One executor that reconciled with the restored driver, for the summary. */
typedef struct recon_rec {
  char id[TL_ID_MAX];
  uint64_t reported; /* tids its RECONCILE named */
  uint64_t unknown;  /* of those, unknown to the restored ledger: killed */
  uint64_t lost;     /* attempts the ledger held on it that it did not name */
  uint64_t ms;       /* from the restart */
} recon_rec;

/* One spawned tl-badclient process (--bad-client). */
typedef struct bad_child {
  uv_process_t process; /* data is this record */
  bad_mode mode;
  bool running;        /* spawned and its handle not yet closed */
  bool exited;         /* the exit callback ran */
  int64_t exit_status; /* as the exit callback gave it */
  int term_signal;     /* likewise */
} bad_child;

typedef struct driver {
  uv_loop_t *loop;             /* the one loop */
  tl_scheduler *s;             /* the ledger */
  tl_uv *uv;                   /* its libuv driver, until tl_uv_stop */
  uv_poll_t server;            /* the listening socket's readiness (accept_ready) */
  int server_fd;               /* the listening socket; -1 once closed */
  int spare_fd;                /* /dev/null, held to be closed when accept fails for lack of
                                  descriptors (accept_ready); -1 when none could be opened */
  metrics_http *metrics;       /* --metrics-port: GET /metrics, until maybe_finish */
  uv_idle_t revive;            /* runs an offer round for every executor when revive_offers came */
  uv_timer_t deadline;         /* gives up after --timeout-s */
  uv_signal_t sigint, sigterm; /* stop the executors and give up */
  uv_timer_t grace;            /* STOP_GRACE_MS after STOP: stop_all what has not ended */
  uv_timer_t after_end;        /* runs, off on_end's stack, what an executor's end may lead to */
  uv_timer_t alloc_timer;      /* dynamic allocation's periodic check */
  const launcher_ops *ops;     /* --launcher */
  void *launcher;              /* its state; NULL once closed */
  launcher_config lcfg;        /* as given to ops->create */
  char token[2 * TOKEN_BYTES + 1]; /* the shared token, NUL-terminated */
  const char *executor_path;       /* the tl-executor binary */
  const char *listen_host;         /* the address listened on (--listen) */
  const char *connect_host;        /* the address executors connect to (--advertise) */
  int port;                        /* the port listened on */
  uint32_t nexecutors;             /* executors to start first (--executors) */
  uint32_t accept;                 /* --accept: executors started elsewhere to wait for */
  bool offering;                   /* nexecutors + accept registered: offers are made */
  uint32_t cores;                  /* cores each registers with */
  uint32_t queue;                  /* --queue: task slots in the ledger beyond each one's cores */
  uint64_t heartbeat_ms;           /* the executors' heartbeat period */
  bool quiet;                      /* no log lines but errors */
  bool bench;                      /* --bench */
  job jobs[MAX_JOBS];              /* the jobs of the command line */
  size_t njobs;                    /* used entries of jobs */
  exec_rec *execs;                 /* MAX_STARTED records: nexecs asked for, in order */
  uint32_t nexecs;                 /* used entries of execs; execs[0] is exec-1 */
  uint32_t started;                /* of those, started (ops->start returned 0) */
  uint32_t released;               /* of those, released by the driver (dynamic allocation) */
  uint32_t forced;                 /* of those, stopped by force after the grace period */
  uint32_t most_active;            /* the most executors active at once (started, not ended,
                                      not released) */
  uint32_t active_at_end;          /* active when the jobs ended */
  /* Lost executors: the records of losses still waiting for their real reason (by id), and
   * the last LOST_DETAIL_MAX that got one; everything else only counted. */
  loss_rec *open_losses;                  /* uthash by id; at most one per live executor */
  loss_rec lost_detail[LOST_DETAIL_MAX];  /* a ring: the last ones that ended */
  uint64_t lost_ended;                    /* records put in the ring: its next slot mod MAX */
  uint64_t lost_total;                    /* loss records made (lost executors) */
  uint64_t lost_by_detection[DETECTED_N]; /* of those, by how the loss began */
  uint64_t lost_by_kind[LOSS_KINDS];      /* the real reasons that came, by kind */
  uv_timer_t settle_timer;                /* settle_open_losses every SETTLE_MS */
  size_t settle_at;                       /* and when open_losses reaches this many */
  const char *summary_json;               /* --summary-json: the file to write */
  /* Dynamic allocation (--min-executors/--max-executors): Spark's ExecutorAllocationManager,
   * simplified; see docs/cluster.md "Dynamic allocation". */
  bool dynamic;                  /* on */
  uint32_t min_executors;        /* never release below this many active */
  uint32_t max_executors;        /* never start beyond this many active */
  uint64_t backlog_ns;           /* tasks pending this long: request more executors */
  uint64_t idle_ns;              /* an executor that ran nothing this long is released */
  uint64_t backlog_since;        /* uv_hrtime since tasks have been pending; 0: none pend */
  uint64_t next_request;         /* uv_hrtime of the next request while the backlog lasts */
  uint32_t to_add;               /* executors the next request adds: 1, 2, 4, ... */
  conn *conns;                   /* open connections */
  uint32_t registered;           /* executors registered so far */
  bool stopping;                 /* STOP sent: waiting for the executors to go */
  bool gave_up;                  /* the deadline or a signal ended the run */
  bool closed;                   /* everything is closing: no more offers */
  uint64_t start_ns;             /* when offers began: every expected executor registered */
  uint64_t end_ns;               /* when the last job's last task set was released */
  uint64_t refused_updates;      /* tl_status_update errors */
  uint64_t gone_frames;          /* frames of an executor the ledger removed (TL_EGONE) */
  uint64_t losses[LOSS_KINDS];   /* reports by kind: first phases and real ones */
  uint64_t tasks_finished;       /* task_ended with TL_END_SUCCESS, for the fault flags */
  uint64_t executors_released;   /* executor_lost events for releases (TL_LOSS_DECOMMISSIONED) */
  uint64_t kill_after;           /* --kill-executor-after N (0: none) */
  uint64_t stop_after;           /* --stop-executor-after N (0: none) */
  uint64_t external_kill_after;  /* --external-kill-after N (0: none) */
  bool expect_failure;           /* --expect-job-failure */
  uint64_t executors_lost;       /* executor_lost events */
  uint64_t expect_losses;        /* --expect-losses N: executors lost (UINT64_MAX: any) */
  uint64_t heartbeat_timeout_ms; /* --heartbeat-timeout-ms */
  uv_timer_t fault;              /* runs the fault a fault flag asks for */
  bool fault_armed;              /* its count was reached: act at exec-1's next RUNNING */
  uv_timer_t resume;             /* SIGCONTs the stopped executor after the heartbeat expiry */
  uint64_t refused_conns;        /* connections closed for a protocol or registration fault */
  uint64_t refused_token;        /* of those: REGISTER with a wrong token */
  uint64_t refused_dup;          /* REGISTER refused by tl_executor_add (TL_EEXIST) */
  uint64_t refused_timeout;      /* no REGISTER within the registration timeout */
  uint64_t refused_frame[16];    /* a frame the decoder refused, by -TLC_E* code */
  uint64_t refused_owner;        /* status updates refused with TL_EOWNER */
  uint64_t refused_early;        /* a frame before REGISTER */
  uint64_t refused_second;       /* a second REGISTER */
  uint64_t refused_unexpected;   /* a message an executor may not send (LAUNCH, KILL, ...) */
  uint64_t violations;           /* of the refused: registered executors, removed for it */
  uint64_t register_timeout_ms;  /* --register-timeout-ms */
  /* The edge (docs/cluster.md "Limits and hardening") */
  uint32_t max_pending;           /* --max-pending-connections */
  uint32_t max_conns;             /* --max-connections */
  uint32_t nconns;                /* connections on conns (closing ones hold a descriptor too) */
  uint32_t npending;              /* of those, not registered and not closing */
  bool server_closed;             /* the listening socket is closing: nothing more is accepted */
  uint64_t evicted_pending;       /* waiting connections closed for a newer one (the oldest) */
  uint64_t refused_conn_cap;      /* connections refused at once: --max-connections open */
  uint64_t refused_backoff;       /* connections refused at once: their address must wait */
  uint64_t accept_emfile;         /* accepts that failed: EMFILE (the process's descriptors) */
  uint64_t accept_enfile;         /* ENFILE (the system's) */
  uint64_t accept_other;          /* any other accept error */
  uint64_t auth_failures;         /* REGISTER frames with a wrong token */
  uint64_t auth_addresses;        /* addresses (IPv6: /64s) that sent one, first seen */
  auth_rec *auth;                 /* uthash by key: AUTH_TRACKED_MAX at most */
  uint32_t nauth;                 /* entries of auth */
  ratelog log_auth;               /* wrong tokens */
  ratelog log_refused;            /* connections refused at once (caps, back-off) */
  ratelog log_accept;             /* accept errors */
  uint64_t registered_cores;      /* cores of every registration, summed */
  bad_child bad[MAX_BAD_CLIENTS]; /* --bad-client: nbad of them, spawned once all registered */
  uint32_t nbad;                  /* --bad-client options */
  bool bad_spawned;               /* spawn_bad_clients ran */
  tl_tid exec1_tid;               /* the first tid launched on exec-1: foreign-status's target */
  size_t max_alive;               /* the most executors ALIVE in the ledger, sampled at each
                                     refusal and at each bad client's exit */
  uint64_t frames_in, frames_out; /* frames received and sent */
  uint64_t launched;              /* launches sent */
  uint64_t retries;               /* of those, attempts after the first of their task */
  uint64_t kills_sent;            /* KILL frames sent (kill_task) */
  bool kill_on_failure;           /* --kill-on-job-failure */
  bool has_crash;                 /* some stage runs `crash` tasks: exit 42 is expected */
  /* --progress: a line on stderr every progress_ms while the jobs run */
  bool progress;                       /* on */
  bool progress_tty;                   /* stderr is a terminal: rewrite one line */
  uint64_t progress_ms;                /* its period */
  uv_timer_t progress_timer;           /* prints it */
  uint64_t progress_done, progress_ns; /* tasks done and the time at the last line */
  uint64_t total_tasks;                /* of every stage of every job */
  uint64_t binaries_sent;              /* TASKSET_BINARY frames sent */
  uint64_t forgets_sent;               /* FORGET frames sent */
  uint64_t unforgotten;                /* binaries an executor still held at STOP (a bug) */
  tl_launch *launch_buf;               /* tl_resource_offers' output, launch_cap entries */
  size_t launch_cap;                   /* the most cores an executor has */
  tlc_launch_item *items;              /* a LAUNCH frame's items, launch_cap entries */
  /* What the last REPORT_DETAIL_MAX registered executors reported, kept after their
   * connections closed, for the summary; the rest only counted. */
  exec_report reports[REPORT_DETAIL_MAX]; /* a ring */
  uint64_t nreports;                      /* reports kept: the ring's next slot mod MAX */
  /* Failover (--state-dir): the state record, written every snapshot_ms, at stage boundaries
   * and before held launches go out (hold_launches); a run started on a record recovers it. */
  const char *state_dir;         /* --state-dir; NULL: none */
  uint64_t snapshot_ms;          /* --snapshot-ms */
  uv_timer_t state_timer;        /* writes the record */
  uint8_t *state_body;           /* the last record's body, for a write that only reserves tids */
  size_t state_len, state_cap;   /* its bytes, and those allocated */
  uint8_t *state_spare;          /* the next body is encoded here, then swapped with it */
  size_t state_spare_cap;        /* bytes allocated */
  uint64_t tid_reserved;         /* no tid above it is sent before a write reserves more */
  uint64_t tid_max;              /* the highest tid launched */
  uint64_t state_writes;         /* records written */
  uint64_t state_reserves;       /* of those, written for a tid reservation with the last body */
  uint64_t state_busy;           /* writes put off: the ledger had undelivered events */
  uint64_t state_failed;         /* writes that failed (logged) */
  uint64_t state_ns;             /* time spent writing, in all */
  uint64_t synced_sent;          /* SYNCED frames sent */
  bool launch_early;             /* --launch-before-record: launches are not held for a record */
  bool crash_after_release;      /* --crash-in-state-write release[+K]:P: the write that holds
                                    the first release (K more writes after it) kills the driver
                                    (a test's fault) */
  uint64_t crash_release_skip;   /* that K */
  uv_idle_t commit;              /* writes the record that held launches wait for */
  bool commit_due;               /* some connection holds frames for a record (launches, a
                                    release's STOP): commit is started */
  uint64_t commit_since;         /* uv_hrtime of the first launch held since the last record */
  uint64_t held_now;             /* launches held since the last record */
  uint64_t held_launches;        /* launches that waited for a record, in all */
  uint64_t held_rounds;          /* times launches waited (each ended by one record) */
  uint64_t held_ns, held_max_ns; /* how long they waited: in all, and the longest */
  uint64_t unrecorded;           /* launches sent without a record: the write failed */
  uint32_t launcher_adopted;     /* executors of the crashed run its launcher took back */
  bool recovered;                /* this run began from a previous run's record */
  bool fell_back;                /* and state was missing or bad */
  const char *state_file;        /* the file it read: "state", "state.tmp" or "state.prev" */
  char fell_back_why[STATE_WHY_MAX]; /* why */
  uint64_t recover_start_ns;         /* uv_hrtime at the restart */
  uint64_t recover_end_ns;           /* when no executor was RECOVERING any more; 0 until then */
  uint64_t recovered_elapsed;        /* ns the run had been offering before the crash */
  uint32_t recovering_at_start;      /* executors RECOVERING after the restore */
  uint64_t recovery_timeouts;        /* of those, lost to the recovery timeout */
  uint64_t reconciled;               /* RECONCILE frames of recovering executors */
  uint64_t reconciled_tids;          /* tids they named */
  uint64_t reconcile_unknown;        /* of those, unknown to the restored ledger: KILL sent */
  uint64_t reconcile_lost;           /* attempts held on them they did not name: run again */
  uint64_t stray_reconciles;         /* RECONCILE from an executor that was not recovering */
  uint64_t stray_kills;              /* its tids, each sent a KILL */
  uint64_t resent_unknown;           /* updates of reconciled executors for tids the restored ledger
                                        did not hold (their ends, held and sent again): not refusals */
  recon_rec recons[REPORT_DETAIL_MAX]; /* the first REPORT_DETAIL_MAX reconciliations */
  uint8_t read_buf[READ_CHUNK];        /* every connection's reads: each is decoded at once */
} driver;

static void die_oom(void) {
  fprintf(stderr, "tl-driver: out of memory\n");
  exit(1);
}

static void logf_(driver *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(driver *d, const char *fmt, ...) {
  if (d->quiet)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("tl-driver: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Names are data: an executor id or a host came from the wire and may hold any byte but NUL.
 * Printed, it is escaped so that no control byte or escape sequence reaches a terminal or the
 * summary: printable ASCII stays as it is, a backslash becomes "\\", every other byte "\xNN".
 * Returns buf (ESC_MAX bytes), which holds all of s that fits. */
static const char *esc(char *buf, const char *s) {
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 <= ESC_MAX; p++) {
    if (*p == '\\') {
      buf[n++] = '\\';
      buf[n++] = '\\';
    } else if (*p >= 0x20 && *p < 0x7f) {
      buf[n++] = (char)*p;
    } else {
      buf[n++] = '\\';
      buf[n++] = 'x';
      buf[n++] = hex[*p >> 4];
      buf[n++] = hex[*p & 15];
    }
  }
  buf[n] = '\0';
  return buf;
}

/* Whether a line of kind r may be printed now (EDGE_LOG_PER_S a second); when a new second
 * begins after lines were held back, says how many first. */
static bool edge_log_ok(ratelog *r, const char *what) {
  uint64_t second = uv_hrtime() / 1000000000u;
  if (second != r->window) {
    if (r->suppressed > 0)
      fprintf(stderr, "tl-driver: %" PRIu64 " more %s not logged (at most %d lines a second)\n",
              r->suppressed, what, EDGE_LOG_PER_S);
    r->window = second;
    r->in_window = 0;
    r->suppressed = 0;
  }
  if (r->in_window < EDGE_LOG_PER_S) {
    r->in_window++;
    return true;
  }
  r->suppressed++;
  r->total_suppressed++;
  return false;
}

/* Samples the ledger's ALIVE executors, for the bad-client test. */
static void sample_alive(driver *d) {
  tl_stats st;
  tl_stats_get(d->s, &st);
  if (st.executors_alive > d->max_alive)
    d->max_alive = st.executors_alive;
}

static void offer(driver *d, conn *c);
static void hold_launches(driver *d, conn *c, size_t n);
static void on_commit(uv_idle_t *idle);
static void release_held(driver *d);
static void begin_stop(driver *d);
static void spawn_bad_clients(driver *d);
static void give_up(driver *d, const char *why);
static void maybe_finish(driver *d);

/* ---------------------------------------------------------------------------------------------
 * Connections
 * ------------------------------------------------------------------------------------------- */

static void on_conn_handle_closed(uv_handle_t *h) {
  conn *c = h->data;
  if (--c->handles_open > 0)
    return;
  driver *d = c->d;
  for (conn **p = &d->conns; *p; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      break;
    }
  tlc_decoder_fini(&c->decoder);
  tlc_buf_free(&c->out);
  free(c->sent);
  free(c);
  d->nconns--;
  maybe_finish(d);
}

/* Keeps what an executor reported, for the summary: the last REPORT_DETAIL_MAX in the ring. The
 * binaries count is the executor's word: shown, never part of the verdict (the executor itself
 * exits non-zero if it is sent a binary twice). */
static void keep_report(driver *d, conn *c) {
  if (!c->registered)
    return;
  exec_report *r = &d->reports[d->nreports++ % REPORT_DETAIL_MAX];
  memcpy(r->id, c->id, sizeof c->id);
  r->cores = c->cores;
  r->binaries = c->binaries;
  r->tasksets = c->tasksets_sent;
}

/* tl_loss_kind's names, for the JSON summary: the enum's and, lower case, a phase's. */
static const char *const loss_kind_names[LOSS_KINDS] = {
    "TL_LOSS_PENDING",           "TL_LOSS_EXITED",          "TL_LOSS_PROCESS_LOST",
    "TL_LOSS_HEARTBEAT_TIMEOUT", "TL_LOSS_KILLED",          "TL_LOSS_DECOMMISSIONED",
    "TL_LOSS_PENDING_TIMEOUT",   "TL_LOSS_RECOVERY_TIMEOUT"};
static const char *const phase_names[LOSS_KINDS] = {
    "pending", "exited",         "process_lost",    "heartbeat_timeout",
    "killed",  "decommissioned", "pending_timeout", "recovery_timeout"};

/* The record of an executor the launcher was asked to start; NULL for any other id. */
static exec_rec *find_exec(driver *d, const char *id) {
  for (uint32_t i = 0; i < d->nexecs; i++)
    if (!strcmp(d->execs[i].id, id))
      return &d->execs[i];
  return NULL;
}

static void copy_text(char *dst, size_t len, const char *src) {
  snprintf(dst, len, "%s", src ? src : "");
}

/* Notes a loss report the ledger took, for the summary, in O(1): the first one makes the
 * executor's record (detected_by says how the loss began), each one adds its phase. A record
 * whose real reason came is counted by kind and moved to the ring of the last LOST_DETAIL_MAX;
 * one still waiting stays on open_losses, which holds at most one record per executor the
 * ledger holds in PENDING_LOSS (settle_open_losses ends those that the pending-loss timeout
 * ended), so memory follows live executors, not losses ever made. */
static void settle_open_losses(driver *d);

static void note_loss(driver *d, const char *id, const tl_loss_reason *r, detection detected_by,
                      const char *source) {
  loss_rec *lr = NULL;
  HASH_FIND_STR(d->open_losses, id, lr);
  if (!lr) {
    lr = calloc(1, sizeof *lr);
    if (!lr)
      die_oom();
    copy_text(lr->id, sizeof lr->id, id);
    lr->seq = ++d->lost_total;
    lr->detected_by = detected_by;
    d->lost_by_detection[detected_by]++;
    HASH_ADD_STR(d->open_losses, id, lr);
  }
  if (lr->nphases < MAX_PHASES)
    lr->phases[lr->nphases++] = r->kind;
  if (r->kind != TL_LOSS_PENDING) {
    lr->final = true;
    lr->kind = r->kind;
    lr->caused_by_app = r->caused_by_app;
    lr->exit_code = r->exit_code;
    copy_text(lr->reason, sizeof lr->reason, r->message);
    copy_text(lr->source, sizeof lr->source, source);
    d->lost_by_kind[r->kind]++;
    HASH_DEL(d->open_losses, lr);
    loss_rec *slot = &d->lost_detail[d->lost_ended++ % LOST_DETAIL_MAX];
    *slot = *lr;
    memset(&slot->hh, 0, sizeof slot->hh);
    free(lr);
  }
  /* A burst of losses: settle now, once lr is no longer used (settling may free any record). */
  if (HASH_COUNT(d->open_losses) >= d->settle_at)
    settle_open_losses(d);
}

/* A pending loss that no second phase ended and that the ledger no longer holds as pending: the
 * pending-loss timeout ended it (TL_LOSS_PENDING_TIMEOUT, the app's, as tl_tick makes it). */
static void settle_pending_timeout(driver *d, loss_rec *lr) {
  tl_loss_reason r = {.kind = TL_LOSS_PENDING_TIMEOUT,
                      .caused_by_app = true,
                      .message = "no real reason came within the pending-loss timeout"};
  char id[TL_ID_MAX];
  memcpy(id, lr->id, sizeof id);
  note_loss(d, id, &r, lr->detected_by, "pending-loss timeout");
}

/* Ends every open record whose executor the ledger no longer holds as PENDING_LOSS: every
 * SETTLE_MS, and whenever the table has doubled since the last time (at least 64), so that it
 * holds at most about twice the executors the ledger holds pending, at O(1) a loss amortised. */
static void settle_open_losses(driver *d) {
  loss_rec *lr, *tmp;
  d->settle_at = SIZE_MAX; /* settle_pending_timeout must not start another */
  HASH_ITER(hh, d->open_losses, lr, tmp) {
    tl_executor_status es;
    if (tl_executor_get(d->s, lr->id, &es) < 0 || es.state != TL_EXECUTOR_PENDING_LOSS)
      settle_pending_timeout(d, lr);
  }
  size_t left = HASH_COUNT(d->open_losses);
  d->settle_at = left < 32 ? 64 : 2 * left;
}

static void on_settle(uv_timer_t *t) { settle_open_losses(t->data); }

/* Reports a loss to the ledger and counts it by kind. detected_by: how the loss began, when this
 * is its first report; source: where a real reason came from. */
static void report_loss(driver *d, const char *id, const tl_loss_reason *reason,
                        detection detected_by, const char *source) {
  char e[ESC_MAX];
  int rc = tl_executor_lost(d->s, id, reason);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_executor_lost %s: %s\n", esc(e, id), tl_err_name(rc));
    return;
  }
  d->losses[reason->kind]++;
  note_loss(d, id, reason, detected_by, source);
  logf_(d, "executor %s lost: %s", esc(e, id), reason->message ? reason->message : "");
}

/* Removes a released executor from the ledger once it is gone (its connection closed after STOP,
 * or its end came): TL_LOSS_DECOMMISSIONED, never the app's; not a loss (cb_executor_lost counts
 * it as a release). */
static void remove_released(driver *d, const char *id) {
  tl_loss_reason r = {.kind = TL_LOSS_DECOMMISSIONED, .message = "released by the driver"};
  char e[ESC_MAX];
  int rc = tl_executor_lost(d->s, id, &r);
  if (rc < 0)
    fprintf(stderr, "tl-driver: tl_executor_lost %s: %s\n", esc(e, id), tl_err_name(rc));
  else
    logf_(d, "executor %s released", esc(e, id));
}

/* Whether the ledger holds id as an executor not yet removed; *state is its state. */
static bool in_ledger(driver *d, const char *id, tl_executor_state *state) {
  tl_executor_status es;
  if (tl_executor_get(d->s, id, &es) < 0)
    return false;
  *state = es.state;
  return true;
}

/* Whether e is active: its end has not come and the driver did not release it, and it was
 * started by this process or, adopted after a crash, the ledger still holds it (an adopted
 * executor's end is not reported here: its removal from the ledger is that end). */
static bool exec_active(driver *d, const exec_rec *e) {
  tl_executor_state state;
  if (e->ended || e->released)
    return false;
  return e->started || (e->adopted && in_ledger(d, e->id, &state));
}

/* Executors active (exec_active). */
static uint32_t active_executors(driver *d) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < d->nexecs; i++)
    n += exec_active(d, &d->execs[i]);
  return n;
}

/* A connection, for a log line: "of ID (PEER)" once it registered, "from PEER" before (the id
 * escaped). buf holds CONN_NAME_MAX bytes. */
#define CONN_NAME_MAX (ESC_MAX + sizeof(((conn *)0)->peer) + 8)
static const char *conn_name(const conn *c, char *buf) {
  char e[ESC_MAX];
  if (c->registered)
    snprintf(buf, CONN_NAME_MAX, "of %s (%s)", esc(e, c->id), c->peer);
  else
    snprintf(buf, CONN_NAME_MAX, "from %s", c->peer);
  return buf;
}

/* Closes a connection. A registered executor that goes before STOP, and that the ledger still
 * holds, is reported TL_LOSS_PENDING: its attempts freeze until the real reason comes from its
 * launcher (on_end), or, for an executor no launcher started (or whose end never comes), until
 * pending_loss_timeout_ns. When the launcher's end came first, the real reason is already in;
 * otherwise the launcher is asked for news now (ops->query). One the driver closes for a
 * protocol fault (c->violated) has a known reason at once: the driver dropped it,
 * TL_LOSS_KILLED, not the app's doing; its tasks run elsewhere now. One the driver released is
 * removed as decommissioned: its end was asked for. */
static void close_conn(conn *c, const char *why) {
  if (c->closing)
    return;
  driver *d = c->d;
  char name[CONN_NAME_MAX];
  c->closing = true;
  if (!c->registered)
    d->npending--;
  if (why)
    logf_(d, "closing connection %s: %s", conn_name(c, name), why);
  keep_report(d, c);
  tl_executor_state state;
  if (c->registered && !d->stopping && in_ledger(d, c->id, &state) &&
      state != TL_EXECUTOR_PENDING_LOSS) {
    if (c->released) {
      remove_released(d, c->id);
    } else if (c->violated) {
      tl_loss_reason reason = {.kind = TL_LOSS_KILLED,
                               .message = "closed by the driver for a protocol fault"};
      report_loss(d, c->id, &reason, DETECTED_FAULT, "driver");
    } else {
      tl_loss_reason reason = {.kind = TL_LOSS_PENDING, .message = "connection closed"};
      report_loss(d, c->id, &reason, DETECTED_CLOSE, NULL);
      exec_rec *er = find_exec(d, c->id);
      if (er && er->started && !er->ended && d->launcher)
        d->ops->query(d->launcher, c->id);
    }
  }
  uv_close((uv_handle_t *)&c->register_timer, on_conn_handle_closed);
  uv_close((uv_handle_t *)&c->tcp, on_conn_handle_closed);
}

/* A write completed (conn_write): its bytes are freed. A connection closed meanwhile cancels it;
 * it is still allocated then, its handles' close callbacks not having run. */
static void on_written(void *data, int status) {
  if (status < 0 && status != UV_ECANCELED)
    close_conn(data, uv_strerror(status));
}

/* Hands the encoded frames to libuv; the write owns them from here. A connection that holds
 * launches for a record keeps them, and what follows them, until one holds them. */
static void send_out(conn *c) {
  if (c->closing || c->held)
    return;
  int rc = conn_write((uv_stream_t *)&c->tcp, &c->out, on_written, c);
  if (rc == UV_ENOMEM)
    die_oom();
  if (rc < 0)
    close_conn(c, uv_strerror(rc));
}

static void encode(conn *c, const tlc_msg *msg) {
  int rc = tlc_encode(&c->out, msg);
  if (rc == TLC_ENOMEM)
    die_oom();
  if (rc < 0) {
    fprintf(stderr, "tl-driver: encode %s: %s\n", tlc_msg_type_name(msg->type), tlc_err_name(rc));
    exit(1);
  }
  c->d->frames_out++;
}

static void send_stop(conn *c, const char *reason) {
  tlc_msg msg = {.type = TLC_MSG_STOP, .u.stop = {tlc_str(reason)}};
  encode(c, &msg);
  send_out(c);
}

/* Closes a connection for a protocol or registration fault; *counter counts its kind, why (NULL:
 * already logged) says what it was. A registered executor closed so is removed from the ledger
 * (close_conn). */
static void refuse_conn(conn *c, uint64_t *counter, const char *why) {
  driver *d = c->d;
  d->refused_conns++;
  if (counter)
    (*counter)++;
  if (c->registered) {
    c->violated = true;
    d->violations++;
  }
  sample_alive(d);
  /* Logged whatever --quiet says, rate-limited: a peer that breaks the protocol may be an
   * attack, and an operator must be able to see it. */
  char name[CONN_NAME_MAX];
  if (why && edge_log_ok(&d->log_refused, "refused-connection lines"))
    fprintf(stderr, "tl-driver: closing connection %s: %s\n", conn_name(c, name), why);
  close_conn(c, NULL);
}

/* Compares the whole of both tokens whatever they hold: the time taken depends only on the
 * length of the expected token. */
static bool token_matches(const char *expected, tlc_view got) {
  size_t n = strlen(expected);
  unsigned diff = got.len != n;
  for (size_t i = 0; i < n; i++)
    diff |= (unsigned)(uint8_t)expected[i] ^ (unsigned)(i < got.len ? got.ptr[i] : 0);
  return diff == 0;
}

/* A frame of an executor the ledger removed (heartbeat expiry while it was stopped): refused
 * and counted; the executor is told to FORGET every binary it holds and to STOP, once. */
static void refuse_gone(conn *c, const char *what) {
  driver *d = c->d;
  d->gone_frames++;
  if (c->gone)
    return;
  c->gone = true;
  char e[ESC_MAX];
  fprintf(stderr, "tl-driver: %s from %s refused: %s (removed); sending STOP\n", what,
          esc(e, c->id), tl_err_name(TL_EGONE));
  /* It will run nothing again: every binary it holds goes, whether or not its task set lives
   * on elsewhere, so that after STOP no executor holds a binary (executor.c checks). */
  while (c->nsent > 0) {
    tlc_msg m = {.type = TLC_MSG_FORGET, .u.forget = {c->sent[--c->nsent]}};
    encode(c, &m);
    d->forgets_sent++;
  }
  send_stop(c, "removed by the driver");
}

/* ---------------------------------------------------------------------------------------------
 * Failed authentications are slowed, by address.
 *
 * The first AUTH_FREE_FAILURES wrong tokens from an address cost it nothing more than their
 * connections; after that each one makes the address wait, exponentially: AUTH_WAIT_FIRST_MS,
 * then twice that, up to AUTH_WAIT_MAX_MS. While it waits, every connection from it is closed as
 * soon as it is accepted, before a byte is read. So one address makes at most about one guess a
 * minute once the back-off is at its cap: a 4-digit token (10,000 guesses) takes about a week,
 * a 16-byte one never falls. An address with no failure for AUTH_FORGET_MS starts afresh. At
 * most AUTH_TRACKED_MAX addresses are remembered (the one whose last failure is oldest makes
 * room for a new one), so the table's memory is bounded whatever the attacker's addresses. An
 * IPv6 address counts by its /64: one host may hold the whole prefix. The price: a real
 * executor behind an address that is waiting is refused too until the wait ends (docs/cluster.md
 * says so); an executor started by the launcher then exits and is reported lost.
 * ------------------------------------------------------------------------------------------- */

/* The key of a peer address: IPv4 as an IPv4-mapped IPv6 address, IPv6 by its first 64 bits. */
static void auth_key(const struct sockaddr_storage *sa, uint8_t key[16]) {
  memset(key, 0, 16);
  if (sa->ss_family == AF_INET) {
    key[10] = key[11] = 0xff;
    memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
  } else if (sa->ss_family == AF_INET6) {
    const uint8_t *a = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(a, mapped, 12)) /* an IPv4 peer on a dual-stack socket */
      memcpy(key, a, 16);
    else
      memcpy(key, a, 8);
  }
}

/* The address's record, or NULL; a stale one is forgotten. */
static auth_rec *auth_find(driver *d, const uint8_t key[16], uint64_t now) {
  auth_rec *a = NULL;
  HASH_FIND(hh, d->auth, key, 16, a);
  if (a && now - a->last_ns > (uint64_t)AUTH_FORGET_MS * 1000000u && now >= a->wait_until) {
    HASH_DEL(d->auth, a);
    free(a);
    d->nauth--;
    a = NULL;
  }
  return a;
}

/* A wrong token from c's address: counted, logged (rate-limited, whatever --quiet says) with the
 * address, and the address made to wait once it has had its free failures. */
static void auth_failed(driver *d, conn *c) {
  uint64_t now = uv_hrtime();
  d->auth_failures++;
  auth_rec *a = auth_find(d, c->addr_key, now);
  if (!a) {
    if (d->nauth == AUTH_TRACKED_MAX) { /* room: the stalest address goes */
      auth_rec *stalest = d->auth, *it, *tmp;
      HASH_ITER(hh, d->auth, it, tmp) {
        if (it->last_ns < stalest->last_ns)
          stalest = it;
      }
      HASH_DEL(d->auth, stalest);
      free(stalest);
      d->nauth--;
    }
    a = calloc(1, sizeof *a);
    if (!a)
      die_oom();
    memcpy(a->key, c->addr_key, 16);
    HASH_ADD(hh, d->auth, key, 16, a);
    d->nauth++;
    d->auth_addresses++;
  }
  a->failures++;
  a->last_ns = now;
  uint64_t wait_ms = 0;
  if (a->failures > AUTH_FREE_FAILURES) {
    uint32_t doublings = a->failures - AUTH_FREE_FAILURES - 1;
    wait_ms = doublings >= 6 ? AUTH_WAIT_MAX_MS : (uint64_t)AUTH_WAIT_FIRST_MS << doublings;
    if (wait_ms > AUTH_WAIT_MAX_MS)
      wait_ms = AUTH_WAIT_MAX_MS;
    a->wait_until = now + wait_ms * 1000000u;
  }
  if (edge_log_ok(&d->log_auth, "wrong-token lines"))
    fprintf(stderr,
            "tl-driver: REGISTER from %s with a wrong token: failure %" PRIu32
            " from that address; it waits %" PRIu64 " ms\n",
            c->peer, a->failures, wait_ms);
}

static void on_fault(uv_timer_t *t);
static void check_recovery(driver *d);
static void reserve_tids(driver *d, uint64_t max);
static void state_due(driver *d);

static void handle_register(conn *c, const tlc_register *r) {
  driver *d = c->d;
  if (!token_matches(d->token, r->token)) {
    auth_failed(d, c); /* logs it, with the address */
    refuse_conn(c, &d->refused_token, NULL);
    return;
  }
  char id[TL_ID_MAX], host[TL_HOST_MAX], e[ESC_MAX], eh[ESC_MAX];
  memcpy(id, r->executor_id.ptr, r->executor_id.len);
  id[r->executor_id.len] = '\0';
  memcpy(host, r->host.ptr, r->host.len);
  host[r->host.len] = '\0';
  /* The ledger counts task slots: the executor's cores plus the launches its queue may hold. */
  uint32_t slots = r->cores > UINT32_MAX - d->queue ? UINT32_MAX : r->cores + d->queue;
  tl_executor_desc desc = {.id = id, .host = host, .cores = slots};
  /* An executor of the run before a crash, back: the restored ledger holds it RECOVERING, and
   * its RECONCILE comes next (handle_reconcile). It is not added again. */
  tl_executor_status es;
  bool recovering = tl_executor_get(d->s, id, &es) == TL_OK && es.state == TL_EXECUTOR_RECOVERING;
  for (conn *o = d->conns; recovering && o; o = o->next)
    if (o != c && o->registered && !o->closing && !strcmp(o->id, id))
      recovering = false; /* a second connection for it: a duplicate */
  int rc = recovering ? (es.cores == slots ? TL_OK : TL_EINVAL) : tl_executor_add(d->s, &desc);
  if (rc < 0) {
    char why[ESC_MAX + 64];
    snprintf(why, sizeof why, "REGISTER of %s refused: %s", esc(e, id), tl_err_name(rc));
    /* Told to STOP first: an executor that reconnects after a crash and is not known as
     * recovering (its loss was begun before the crash) stops at once instead of retrying. */
    send_stop(c, why);
    refuse_conn(c, rc == TL_EEXIST ? &d->refused_dup : NULL, why);
    return;
  }
  c->recovering = recovering;
  /* A loss record of an earlier executor of this id that is still open: the ledger let the id
   * register again, so that loss is over (the pending-loss timeout ended it). */
  loss_rec *old = NULL;
  HASH_FIND_STR(d->open_losses, id, old);
  if (old)
    settle_pending_timeout(d, old);
  memcpy(c->id, id, sizeof id);
  c->registered = true;
  c->cores = r->cores;
  d->npending--;
  d->registered_cores += r->cores;
  c->idle_since = uv_hrtime();
  uv_timer_stop(&c->register_timer);
  /* Authenticated: its frames may now be as large as the protocol allows. */
  tlc_decoder_set_frame_max(&c->decoder, TLC_FRAME_MAX);
  if (slots > d->launch_cap) {
    tl_launch *l = realloc(d->launch_buf, slots * sizeof *l);
    if (!l)
      die_oom();
    d->launch_buf = l;
    tlc_launch_item *it = realloc(d->items, slots * sizeof *it);
    if (!it)
      die_oom();
    d->items = it;
    d->launch_cap = slots;
  }
  d->registered++;
  logf_(d, "executor %s %s from %s (host %s, %" PRIu32 " cores, queue %" PRIu32 ")", esc(e, id),
        recovering ? "reconnected" : "registered", c->peer, esc(eh, host), r->cores, d->queue);
  if (recovering)
    return;     /* offers once it reconciled */
  state_due(d); /* a record that knows it: after a crash it reconciles instead of starting over */
  if (d->offering) {
    offer(d, c);
  } else if (d->registered == d->nexecutors + d->accept) { /* everyone came: offers begin */
    d->offering = true;
    d->start_ns = uv_hrtime();
    for (conn *o = d->conns; o; o = o->next)
      offer(d, o);
    spawn_bad_clients(d);
  }
}

/* Updates of a STATUS frame applied per tl_status_updates call (a frame may carry more: they go
 * in chunks of this many), and their messages' NUL-terminated copies (the loop is one thread). */
#define STATUS_CHUNK 32
static char status_texts[STATUS_CHUNK][TLC_TEXT_MAX + 1];

/* The library's update for one item of a STATUS frame; its message in text. */
static tl_update status_update_of(const tlc_status_item *it, char *text) {
  tl_update u = {0};
  memcpy(text, it->text.ptr ? (const char *)it->text.ptr : "", it->text.len);
  text[it->text.len] = '\0';
  switch (it->state) {
  case TLC_TASK_RUNNING:
    u.state = TL_TASK_RUNNING;
    break;
  case TLC_TASK_FINISHED:
    u.state = TL_TASK_FINISHED; /* the result's bytes are not kept: only their size */
    u.result_size = it->result.len;
    break;
  case TLC_TASK_FAILED:
    u.state = TL_TASK_FAILED;
    u.failure = TL_END_EXCEPTION;
    u.message = text;
    break;
  default:
    u.state = TL_TASK_KILLED;
    u.message = text;
    break;
  }
  return u;
}

/* What the driver does with one update's refusal. */
static void status_refused(conn *c, tl_tid tid, int rc) {
  driver *d = c->d;
  char e[ESC_MAX];
  if (rc == TL_EGONE) {
    d->refused_updates++;
    refuse_gone(c, "status update");
    return;
  }
  if (rc == TL_EOWNER) {
    d->refused_owner++;
    sample_alive(d);
  }
  if (rc == TL_ESTALE && c->reconciled) { /* an end it held of a tid the restored ledger does */
    d->resent_unknown++;                  /* not hold (it was told to kill it): expected */
    return;
  }
  if (d->refused_updates++ < LOG_LIMIT)
    fprintf(stderr, "tl-driver: update of task %" PRIu64 " from %s refused: %s\n", tid,
            esc(e, c->id), tl_err_name(rc));
}

/* Applies a STATUS frame, a chunk of updates per tl_status_updates call (one lock, one dispatch
 * each), then offers the executor its freed cores. */
static void handle_status(conn *c, const tlc_status *st) {
  driver *d = c->d;
  bool running = false;
  for (size_t from = 0; from < st->count; from += STATUS_CHUNK) {
    size_t n = st->count - from < STATUS_CHUNK ? st->count - from : STATUS_CHUNK;
    tl_tid tids[STATUS_CHUNK];
    tl_update ups[STATUS_CHUNK];
    int results[STATUS_CHUNK];
    for (size_t i = 0; i < n; i++) {
      const tlc_status_item *it = &st->items[from + i];
      running = running || it->state == TLC_TASK_RUNNING;
      tids[i] = it->tid;
      ups[i] = status_update_of(it, status_texts[i]);
    }
    int rc = tl_status_updates(d->s, c->id, tids, ups, n, results);
    for (size_t i = 0; i < n; i++) {
      int one = rc == TL_OK ? results[i] : rc; /* refused as a whole: each update was */
      if (one < 0)
        status_refused(c, tids[i], one);
    }
  }
  if (d->fault_armed && running && !strcmp(c->id, d->execs[0].id))
    on_fault(&d->fault);
  if (d->dynamic && c->idle_since == 0) { /* for --idle-timeout */
    tl_executor_status es;
    if (tl_executor_get(d->s, c->id, &es) == 0 && es.running == 0)
      c->idle_since = uv_hrtime();
  }
  offer(d, c);
}

static void on_after_end(uv_timer_t *t);

/* RECONCILE: an executor that reconnected names the tids it runs, queues, or holds the ends
 * of. From one the restored ledger holds RECOVERING, it is the reconciliation
 * (tl_executor_reconcile): what it names and the ledger holds runs on, what the ledger holds
 * and it does not name ends EXECUTOR_LOST (run again), and what it names that the ledger does
 * not hold gets a KILL (the kill_task events, cb_kill_task); then it is offered its cores. From
 * any other registered executor (one that was not recovering: it registered afresh), every tid
 * it names is unknown here, and each gets a KILL, so nothing runs that nobody tracks. */
static void handle_reconcile(conn *c, const tlc_reconcile *rc_msg) {
  driver *d = c->d;
  char e[ESC_MAX];
  if (!c->recovering) {
    d->stray_reconciles++;
    for (size_t i = 0; i < rc_msg->count; i++) {
      tlc_msg m = {.type = TLC_MSG_KILL,
                   .u.kill = {.tid = rc_msg->tids[i],
                              .interrupt = 1,
                              .reason = tlc_str("Unknown to the restored driver")}};
      encode(c, &m);
      d->stray_kills++;
      d->kills_sent++;
    }
    send_out(c);
    logf_(d, "executor %s reconciled %zu tids, but it was not recovering: each sent a KILL",
          esc(e, c->id), rc_msg->count);
    return;
  }
  tl_stats before;
  tl_stats_get(d->s, &before);
  size_t nunknown = 0;
  /* tl_tid is uint64_t: the decoded tids are passed as they are. */
  int rc = tl_executor_reconcile(d->s, c->id, (const tl_tid *)rc_msg->tids, rc_msg->count, NULL, 0,
                                 &nunknown);
  if (rc == TL_EINVAL) { /* a tid 0: the executor's fault */
    refuse_conn(c, &d->refused_unexpected, "RECONCILE with a tid 0");
    return;
  }
  if (rc < 0) { /* lost meanwhile (the recovery timeout): it may register afresh */
    fprintf(stderr, "tl-driver: tl_executor_reconcile %s: %s\n", esc(e, c->id), tl_err_name(rc));
    c->recovering = false;
    refuse_gone(c, "reconciliation");
    return;
  }
  tl_stats after;
  tl_stats_get(d->s, &after);
  c->recovering = false;
  c->reconciled = true;
  uint64_t lost = after.reconcile_lost - before.reconcile_lost;
  if (d->reconciled < REPORT_DETAIL_MAX) {
    recon_rec *r = &d->recons[d->reconciled];
    copy_text(r->id, sizeof r->id, c->id);
    r->reported = rc_msg->count;
    r->unknown = nunknown;
    r->lost = lost;
    r->ms = (uv_hrtime() - d->recover_start_ns) / 1000000;
  }
  d->reconciled++;
  d->reconciled_tids += rc_msg->count;
  d->reconcile_unknown += nunknown;
  d->reconcile_lost += lost;
  logf_(d,
        "executor %s reconciled: %zu tids named, %zu unknown (killed), %" PRIu64
        " not named (run again)",
        esc(e, c->id), rc_msg->count, nunknown, lost);
  check_recovery(d);
  offer(d, c);
}

/* Every connection reads into the driver's one buffer: on_read decodes what came before the
 * loop reads again (the decoder copies what it keeps), so a connection costs no read buffer. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  conn *c = h->data;
  *buf = uv_buf_init((char *)c->d->read_buf, sizeof c->d->read_buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  conn *c = s->data;
  if (nread < 0) {
    close_conn(c, nread == UV_EOF ? (c->d->stopping ? NULL : "closed by the peer")
                                  : uv_strerror((int)nread));
    return;
  }
  const uint8_t *data = (const uint8_t *)buf->base;
  size_t len = (size_t)nread;
  while (len > 0 && !c->closing) {
    size_t used;
    tlc_msg msg;
    int rc = tlc_decoder_feed(&c->decoder, data, len, &used, &msg);
    if (rc < 0) {
      char why[96];
      snprintf(why, sizeof why, "bad frame: %s", tlc_err_name(rc));
      refuse_conn(c, -rc < 16 ? &c->d->refused_frame[-rc] : NULL, why);
      return;
    }
    data += used;
    len -= used;
    if (msg.type == TLC_MSG_NONE)
      continue;
    c->d->frames_in++;
    if (!c->registered && msg.type != TLC_MSG_REGISTER) {
      refuse_conn(c, &c->d->refused_early, "a frame before REGISTER");
      return;
    }
    if (c->recovering && msg.type != TLC_MSG_RECONCILE && msg.type != TLC_MSG_HEARTBEAT) {
      char why[96];
      snprintf(why, sizeof why, "%s before RECONCILE", tlc_msg_type_name(msg.type));
      refuse_conn(c, &c->d->refused_unexpected, why);
      return;
    }
    switch (msg.type) {
    case TLC_MSG_REGISTER:
      if (c->registered) {
        refuse_conn(c, &c->d->refused_second, "a second REGISTER");
        return;
      }
      handle_register(c, &msg.u.reg);
      break;
    case TLC_MSG_HEARTBEAT:
      c->binaries = msg.u.heartbeat.binaries;
      c->heartbeats++;
      if (!c->d->state_dir && c->status_frames > c->synced && !c->closing) {
        /* Nothing is recovered after a crash without --state-dir: what the executor holds
         * for a restarted driver may go, once a heartbeat. */
        tlc_msg m = {.type = TLC_MSG_SYNCED, .u.synced = {c->status_frames}};
        encode(c, &m);
        send_out(c);
        c->synced = c->status_frames;
      }
      if (!c->d->stopping && !c->released && !c->recovering) {
        int hb = tl_executor_heartbeat(c->d->s, c->id);
        if (hb == TL_EGONE)
          refuse_gone(c, "heartbeat");
        else if (hb < 0) {
          char e[ESC_MAX];
          fprintf(stderr, "tl-driver: heartbeat of %s: %s\n", esc(e, c->id), tl_err_name(hb));
        }
      }
      break;
    case TLC_MSG_STATUS:
      c->status_frames++;
      handle_status(c, &msg.u.status);
      break;
    case TLC_MSG_RECONCILE:
      handle_reconcile(c, &msg.u.reconcile);
      break;
    default: {
      char why[96];
      snprintf(why, sizeof why, "unexpected %s", tlc_msg_type_name(msg.type));
      refuse_conn(c, &c->d->refused_unexpected, why);
      return;
    }
    }
  }
}

static void on_register_timeout(uv_timer_t *t) {
  conn *c = t->data;
  refuse_conn(c, &c->d->refused_timeout, "no REGISTER in time");
}

/* Its peer's address, printable and as its auth key. */
static void name_peer(conn *c) {
  struct sockaddr_storage sa;
  int len = sizeof sa;
  memset(&sa, 0, sizeof sa);
  char ip[INET6_ADDRSTRLEN] = "?";
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&sa, &len) != 0) {
    snprintf(c->peer, sizeof c->peer, "an unknown address");
  } else if (sa.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&sa;
    uv_ip6_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "[%s]:%d", ip, ntohs(a->sin6_port));
  } else {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&sa;
    uv_ip4_name(a, ip, sizeof ip);
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, ntohs(a->sin_port));
  }
  auth_key(&sa, c->addr_key);
}

/* Closes a connection just accepted, before a byte of it is read; *counter counts the reason. */
static void refuse_at_accept(conn *c, uint64_t *counter, const char *why) {
  driver *d = c->d;
  (*counter)++;
  if (edge_log_ok(&d->log_refused, "refused-connection lines"))
    fprintf(stderr, "tl-driver: connection from %s refused: %s\n", c->peer, why);
  close_conn(c, NULL);
}

/* The oldest connection still waiting for its REGISTER (the list is newest first). */
static conn *oldest_pending(driver *d, conn *except) {
  conn *oldest = NULL;
  for (conn *o = d->conns; o; o = o->next)
    if (o != except && !o->registered && !o->closing)
      oldest = o;
  return oldest;
}

/* An accept that failed: counted by error, logged (rate-limited) with what it means. For a lack
 * of descriptors the connection is still taken off the queue and closed at once, with the spare
 * descriptor (libuv's trick, done here because libuv's own accept loop does it silently: a real
 * executor was reset and nothing said why), so that it is refused now rather than left to spin
 * the loop. Without a spare (only a start already out of descriptors leaves none) the
 * level-triggered poll comes back at once until descriptors are freed. */
static void accept_failed(driver *d, int err) {
  uint64_t *n = err == UV_EMFILE   ? &d->accept_emfile
                : err == UV_ENFILE ? &d->accept_enfile
                                   : &d->accept_other;
  (*n)++;
  if (edge_log_ok(&d->log_accept, "accept-error lines"))
    fprintf(stderr, "tl-driver: accept: %s (%s)%s; a connection was refused (%" PRIu64 " so far)\n",
            uv_strerror(err), uv_err_name(err),
            err == UV_EMFILE   ? ": the open-file limit (ulimit -n) is reached"
            : err == UV_ENFILE ? ": the system's file table is full"
                               : "",
            *n);
  if ((err == UV_EMFILE || err == UV_ENFILE) && d->spare_fd >= 0) {
    close(d->spare_fd);
    int fd = accept(d->server_fd, NULL, NULL);
    if (fd >= 0)
      close(fd);
    d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  }
}

static void on_connection(driver *d, int fd);

/* The listening socket is readable: accepts what is queued, at most ACCEPT_BATCH at a time (the
 * poll is level-triggered, so the rest come on the next turn, after the other handles). */
static void accept_ready(uv_poll_t *p, int status, int events) {
  driver *d = p->data;
  (void)events;
  if (status < 0) {
    accept_failed(d, status);
    return;
  }
  for (int i = 0; i < ACCEPT_BATCH && !d->server_closed; i++) {
    int fd = accept(d->server_fd, NULL, NULL); /* uv_tcp_open makes it non-blocking */
    if (fd >= 0)
      fcntl(fd, F_SETFD, FD_CLOEXEC); /* executors spawned later must not inherit it */
    if (fd < 0) {
      int err = -errno;
      if (err == UV_EAGAIN || err == -EWOULDBLOCK || err == UV_EINTR)
        return;
      if (err == UV_ECONNABORTED)
        continue;
      accept_failed(d, err);
      return;
    }
    on_connection(d, fd);
  }
}

/* A new connection (never once stopping: begin_stop closes the listening socket). Before it has
 * authenticated it costs a record, two handles and a decoder that holds at most
 * TLC_REGISTER_FRAME_MAX bytes; its address is checked against the back-off, the connections
 * against --max-connections (the newest is refused) and those waiting for REGISTER against
 * --max-pending-connections (the oldest waiting one is closed to make room: a real executor
 * sends REGISTER at once, so it is the slow or silent ones that go). */
static void on_connection(driver *d, int fd) {
  conn *c = calloc(1, sizeof *c);
  if (!c)
    die_oom();
  c->d = d;
  tlc_decoder_init(&c->decoder, TLC_REGISTER_FRAME_MAX);
  tlc_buf_init(&c->out);
  uv_tcp_init(d->loop, &c->tcp);
  uv_timer_init(d->loop, &c->register_timer);
  c->tcp.data = c;
  c->register_timer.data = c;
  c->handles_open = 2;
  c->next = d->conns;
  d->conns = c;
  d->nconns++;
  d->npending++;
  snprintf(c->peer, sizeof c->peer, "an unaccepted connection");
  if (uv_tcp_open(&c->tcp, fd) < 0) {
    close(fd);
    close_conn(c, NULL);
    return;
  }
  name_peer(c);
  uint64_t now = uv_hrtime();
  auth_rec *a = auth_find(d, c->addr_key, now);
  if (a && now < a->wait_until) {
    refuse_at_accept(c, &d->refused_backoff, "its address sent wrong tokens and must wait");
    return;
  }
  if (d->nconns > d->max_conns) {
    refuse_at_accept(c, &d->refused_conn_cap, "--max-connections are open");
    return;
  }
  if (d->npending > d->max_pending) {
    conn *oldest = oldest_pending(d, c);
    d->evicted_pending++;
    if (edge_log_ok(&d->log_refused, "refused-connection lines"))
      fprintf(stderr,
              "tl-driver: connection from %s closed: --max-pending-connections (%" PRIu32
              ") wait for REGISTER and it waited longest\n",
              oldest->peer, d->max_pending);
    close_conn(oldest, NULL);
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_timer_start(&c->register_timer, on_register_timeout, d->register_timeout_ms, 0);
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---------------------------------------------------------------------------------------------
 * Offers and launches
 * ------------------------------------------------------------------------------------------- */

static bool binary_sent(conn *c, tl_taskset_id id) {
  for (size_t i = 0; i < c->nsent; i++)
    if (c->sent[i] == id)
      return true;
  return false;
}

/* Offers one executor its free cores and sends what launched: each task set's binary the first
 * time it runs there, then the launches in LAUNCH frames of up to LAUNCH_FRAME_MAX. */
static void offer(driver *d, conn *c) {
  if (d->closed || d->stopping || !d->offering || !c->registered || c->closing)
    return;
  tl_executor_status es;
  if (tl_executor_get(d->s, c->id, &es) < 0 || es.state != TL_EXECUTOR_ALIVE || es.free_cores == 0)
    return;
  tl_offer o = {.executor_id = c->id, .cores = es.free_cores};
  size_t n = 0;
  int rc = tl_resource_offers(d->s, &o, 1, d->launch_buf, d->launch_cap, &n);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_resource_offers: %s\n", tl_err_name(rc));
    return;
  }
  if (n > 0 && d->exec1_tid == 0 && !strcmp(c->id, d->execs[0].id))
    d->exec1_tid = d->launch_buf[0].tid;
  if (n > 0)
    c->idle_since = 0;
  size_t nitems = 0;
  tl_tid max_tid = 0;
  for (size_t i = 0; i < n; i++) {
    const tl_launch *l = &d->launch_buf[i];
    stage_binary *b = l->payload;
    d->retries += l->attempt > 0;
    max_tid = l->tid > max_tid ? l->tid : max_tid;
    if (!binary_sent(c, l->taskset)) {
      if (nitems > 0) { /* launches already batched go first, keeping the order simple */
        tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->items}};
        encode(c, &m);
        nitems = 0;
      }
      if (c->nsent == c->sent_cap) {
        size_t cap = c->sent_cap ? 2 * c->sent_cap : 8;
        tl_taskset_id *sent = realloc(c->sent, cap * sizeof *sent);
        if (!sent)
          die_oom();
        c->sent = sent;
        c->sent_cap = cap;
      }
      c->sent[c->nsent++] = l->taskset;
      c->tasksets_sent++;
      tlc_msg m = {.type = TLC_MSG_TASKSET_BINARY,
                   .u.binary = {.taskset_id = l->taskset,
                                .payload = {(const uint8_t *)b->stage->kind, b->len}}};
      encode(c, &m);
      d->binaries_sent++;
    }
    d->items[nitems++] = (tlc_launch_item){.tid = l->tid,
                                           .taskset_id = l->taskset,
                                           .index = l->index,
                                           .attempt = l->attempt,
                                           .kind = tlc_str(b->stage->kind)};
    if (nitems == LAUNCH_FRAME_MAX) {
      tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->items}};
      encode(c, &m);
      nitems = 0;
    }
  }
  if (nitems > 0) {
    tlc_msg m = {.type = TLC_MSG_LAUNCH, .u.launch = {nitems, d->items}};
    encode(c, &m);
  }
  d->launched += n;
  hold_launches(d, c, n);
  reserve_tids(d, max_tid); /* durable before the LAUNCH frames that name them go out */
  send_out(c);
}

static void on_revive(uv_idle_t *idle) {
  driver *d = idle->data;
  uv_idle_stop(idle);
  for (conn *c = d->conns; c; c = c->next)
    offer(d, c);
}

/* ---------------------------------------------------------------------------------------------
 * Ledger callbacks: they run on the loop's thread, after the ledger's lock is released, from
 * inside the call that made them. They only record, or defer work to the loop.
 * ------------------------------------------------------------------------------------------- */

static stage *stage_of(driver *d, tl_taskset_id id) {
  for (size_t i = 0; i < d->njobs; i++)
    for (uint32_t k = 0; k < d->jobs[i].nstages; k++)
      if (d->jobs[i].stages[k].taskset == id)
        return &d->jobs[i].stages[k];
  return NULL;
}

/* Submits a job's stage k (stage id job id x MAX_STAGES + k, priority the job id). From main
 * and from taskset_released; its revive_offers is delivered after the caller returns. */
static int submit_stage(driver *d, job *j, uint32_t k) {
  stage *st = &j->stages[k];
  stage_binary *b = malloc(sizeof *b);
  if (!b)
    die_oom();
  b->stage = st;
  b->len = strlen(st->kind);
  tl_taskset_desc desc = {
      .stage_id = j->id * MAX_STAGES + k, .priority = j->id, .ntasks = st->ntasks, .payload = b};
  int rc = tl_submit(d->s, &desc, &st->taskset);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_submit: %s\n", tl_err_name(rc));
    free(b);
    return rc;
  }
  j->current = k;
  return 0;
}

static void inject_faults(driver *d);
static void on_resume(uv_timer_t *t);
static void check_starved(driver *d);
static void end_progress(driver *d);

static void cb_task_ended(void *ud, const tl_task_info *task, const tl_task_end *end) {
  driver *d = ud;
  stage *st = stage_of(d, task->taskset);
  if (!st)
    return;
  if (end->kind == TL_END_SUCCESS) {
    st->succeeded++;
    st->zombie_finished += st->failed;
    d->tasks_finished++;
    inject_faults(d);
  } else {
    st->failed_attempts++;
    st->killed += end->kind == TL_END_KILLED;
    if (end->counts_toward_failures)
      st->counted_failures++;
  }
}

/* tl_kill_stage asks for an attempt to be killed: a KILL frame to its executor, if it is still
 * connected (if not, the attempt ends with the executor's loss). */
static void cb_kill_task(void *ud, tl_tid tid, const char *executor_id, bool interrupt,
                         const char *reason) {
  driver *d = ud;
  for (conn *c = d->conns; c; c = c->next)
    if (c->registered && !c->closing && !strcmp(c->id, executor_id)) {
      tlc_msg m = {.type = TLC_MSG_KILL,
                   .u.kill = {.tid = tid, .interrupt = interrupt, .reason = tlc_str(reason)}};
      encode(c, &m);
      send_out(c);
      d->kills_sent++;
      return;
    }
}

/* Counts the executors lost (first reports: TL_LOSS_PENDING on a closed connection, or
 * TL_LOSS_HEARTBEAT_TIMEOUT from tl_tick), and apart from them those released (removed as
 * TL_LOSS_DECOMMISSIONED: not losses). A stopped executor that expired is resumed soon after,
 * so that its frames come and are refused. */
static void cb_executor_lost(void *ud, const char *id, void *executor_ud,
                             const tl_loss_reason *reason) {
  driver *d = ud;
  (void)executor_ud; /* registered without one: a connection is freed before its executor is */
  if (reason->kind == TL_LOSS_DECOMMISSIONED) {
    d->executors_released++;
    return;
  }
  d->executors_lost++;
  if (reason->kind == TL_LOSS_RECOVERY_TIMEOUT) { /* both phases at once, from tl_tick */
    d->losses[reason->kind]++;
    d->recovery_timeouts++;
    note_loss(d, id, reason, DETECTED_RECOVERY, "tl_tick (recovery timeout)");
    char e[ESC_MAX];
    logf_(d, "executor %s lost: it did not reconcile in time", esc(e, id));
    uv_timer_start(&d->after_end, on_after_end, 0, 0); /* check_recovery, off this stack */
  }
  if (reason->kind == TL_LOSS_HEARTBEAT_TIMEOUT) {
    d->losses[reason->kind]++;
    note_loss(d, id, reason, DETECTED_HEARTBEAT, "tl_tick (heartbeat expiry)");
    char e[ESC_MAX];
    logf_(d, "executor %s lost: heartbeat timeout", esc(e, id));
    if (d->execs[0].stopped && !strcmp(id, d->execs[0].id))
      uv_timer_start(&d->resume, on_resume, 100, 0);
  }
}

static void cb_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  driver *d = ud;
  stage *st = stage_of(d, ts->id);
  if (st)
    st->failed = true;
  fprintf(stderr, "tl-driver: task set %" PRIu64 " failed: %s\n", ts->id, reason);
  /* --kill-on-job-failure: the job is lost, so its running attempts are not worth finishing
   * (Spark's DAG scheduler kills them when it fails a job). They end KILLED, and the zombie
   * task set is released as soon as they have. */
  if (st && d->kill_on_failure) {
    int rc = tl_kill_stage(d->s, ts->stage_id, true, "the job failed");
    if (rc < 0)
      fprintf(stderr, "tl-driver: tl_kill_stage %" PRIu32 ": %s\n", ts->stage_id, tl_err_name(rc));
  }
}

/* A task set was released: no launch of it will come again, so every executor holding its
 * binary is told to drop it (FORGET); an executor's cache then holds only live task sets. */
static void forget_everywhere(driver *d, tl_taskset_id id) {
  for (conn *c = d->conns; c; c = c->next)
    for (size_t i = 0; i < c->nsent; i++)
      if (c->sent[i] == id) {
        c->sent[i] = c->sent[--c->nsent];
        if (c->registered && !c->closing) {
          tlc_msg m = {.type = TLC_MSG_FORGET, .u.forget = {id}};
          encode(c, &m);
          send_out(c);
          d->forgets_sent++;
        }
        break;
      }
}

/* A stage's task set is gone: the next stage is submitted if it succeeded, else the job fails;
 * once every job is done, the executors are stopped. */
static void cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  driver *d = ud;
  stage_binary *b = payload;
  stage *st = b->stage;
  job *j = st->job;
  free(b);
  forget_everywhere(d, ts->id);
  st->released = true;
  uint32_t k = (uint32_t)(st - j->stages);
  if (st->failed || st->succeeded != st->ntasks) {
    j->failed = true;
    j->done = true;
  } else if (k + 1 < j->nstages && !d->closed && !d->stopping) {
    if (submit_stage(d, j, k + 1) < 0)
      j->failed = j->done = true;
  } else {
    j->done = true;
  }
  state_due(d); /* a stage boundary */
  bool all = true;
  for (size_t i = 0; i < d->njobs; i++)
    all = all && d->jobs[i].done;
  if (all && !d->closed) {
    d->end_ns = uv_hrtime();
    begin_stop(d);
  }
}

static void cb_revive_offers(void *ud) {
  driver *d = ud;
  if (!d->closed && !d->stopping)
    uv_idle_start(&d->revive, on_revive);
}

/* ---------------------------------------------------------------------------------------------
 * Failover (--state-dir; docs/cluster.md "Driver failover"): the run's record, written with
 * state.c, and the recovery of a run from it.
 *
 * The record's body, every integer little-endian, every string a u16 length and its bytes:
 *   u32 STATE_BODY_VERSION; the token; u32 the port; u64 ns offering so far;
 *   u32 jobs, and for each: u32 stages, u32 current, u8 failed, u8 done, and for each stage:
 *     the kind, u32 ntasks, u64 taskset, u32 succeeded, failed attempts, counted failures,
 *     killed, finished as zombies, u8 failed, u8 released;
 *   u32 executors started (exec_rec), and for each: the id, u8 started, ended, released,
 *     fault_killed, injected, forced, caused_by_app, requested, kind, i32 exit code, the reason
 *     and the source;
 *   u64 counters (STATE_COUNTERS below);
 *   u64 the ledger's snapshot length, then tl_snapshot's bytes (docs/snapshot.md).
 * The record and the ledger are taken at one moment of the loop, between two calls: what the
 * jobs counted is exactly what the ledger holds.
 * ------------------------------------------------------------------------------------------- */

#define STATE_COUNTERS(XX)                                                                         \
  XX(started)                                                                                      \
  XX(registered)                                                                                   \
  XX(registered_cores)                                                                             \
  XX(launched)                                                                                     \
  XX(retries)                                                                                      \
  XX(tasks_finished)                                                                               \
  XX(kills_sent)                                                                                   \
  XX(binaries_sent)                                                                                \
  XX(forgets_sent)                                                                                 \
  XX(executors_lost)                                                                               \
  XX(executors_released)                                                                           \
  XX(refused_updates)                                                                              \
  XX(frames_in)                                                                                    \
  XX(frames_out)                                                                                   \
  XX(most_active)

typedef struct wbuf {
  uint8_t *p;
  size_t len, cap;
} wbuf;

static void w_bytes(wbuf *w, const void *src, size_t n) {
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n)
      cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p)
      die_oom();
    w->p = p;
    w->cap = cap;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

static void w_le(wbuf *w, uint64_t v, int n) {
  uint8_t b[8];
  state_put_le(b, v, n);
  w_bytes(w, b, (size_t)n);
}

static void w_str(wbuf *w, const char *s) {
  size_t n = strlen(s);
  w_le(w, n, 2);
  w_bytes(w, s, n);
}

typedef struct rbuf {
  const uint8_t *p;
  size_t len, at;
  bool bad; /* read past the end, or a field out of its bounds */
} rbuf;

static uint64_t r_le(rbuf *r, int n) {
  if (r->bad || r->len - r->at < (size_t)n) {
    r->bad = true;
    return 0;
  }
  uint64_t v = state_get_le(r->p + r->at, n);
  r->at += (size_t)n;
  return v;
}

/* A string into dst[0..cap): longer ones, or ones holding a NUL, make the record bad. */
static void r_str(rbuf *r, char *dst, size_t cap) {
  size_t n = (size_t)r_le(r, 2);
  if (r->bad || n >= cap || r->len - r->at < n || memchr(r->p + r->at, 0, n)) {
    r->bad = true;
    dst[0] = '\0';
    return;
  }
  memcpy(dst, r->p + r->at, n);
  dst[n] = '\0';
  r->at += n;
}

static int snapshot_to_wbuf(void *ud, const void *buf, size_t n) {
  w_bytes(ud, buf, n);
  return 0;
}

/* The record's body into w: TL_OK, or tl_snapshot's error (TL_EBUSY: events undelivered). */
static int encode_state(driver *d, wbuf *w) {
  w->len = 0;
  w_le(w, STATE_BODY_VERSION, 4);
  w_str(w, d->token);
  w_le(w, (uint64_t)d->port, 4);
  w_le(w, d->offering ? d->recovered_elapsed + (uv_hrtime() - d->start_ns) : 0, 8);
  w_le(w, d->njobs, 4);
  for (size_t i = 0; i < d->njobs; i++) {
    const job *j = &d->jobs[i];
    w_le(w, j->nstages, 4);
    w_le(w, j->current, 4);
    w_le(w, j->failed, 1);
    w_le(w, j->done, 1);
    for (uint32_t k = 0; k < j->nstages; k++) {
      const stage *st = &j->stages[k];
      w_str(w, st->kind);
      w_le(w, st->ntasks, 4);
      w_le(w, st->taskset, 8);
      w_le(w, st->succeeded, 4);
      w_le(w, st->failed_attempts, 4);
      w_le(w, st->counted_failures, 4);
      w_le(w, st->killed, 4);
      w_le(w, st->zombie_finished, 4);
      w_le(w, st->failed, 1);
      w_le(w, st->released, 1);
    }
  }
  w_le(w, d->nexecs, 4);
  for (uint32_t i = 0; i < d->nexecs; i++) {
    exec_rec *e = &d->execs[i];
    w_str(w, e->id);
    /* An adopted executor is still running as far as the run knows: started, its end not in. */
    w_le(w, e->started || e->adopted, 1);
    w_le(w, e->ended, 1);
    w_le(w, e->released, 1);
    w_le(w, e->fault_killed, 1);
    w_le(w, e->injected, 1);
    w_le(w, e->forced, 1);
    w_le(w, e->caused_by_app, 1);
    w_le(w, e->requested, 1);
    w_le(w, (uint64_t)e->kind, 1);
    w_le(w, (uint32_t)e->exit_code, 4);
    w_str(w, e->reason);
    w_str(w, e->source);
    char h[LAUNCHER_HANDLE_MAX];
    if (e->started && !e->ended && d->launcher && d->ops->handle &&
        d->ops->handle(d->launcher, e->id, h, sizeof h) > 0)
      copy_text(e->handle, sizeof e->handle, h);
    w_str(w, e->handle);
  }
#define PUT_COUNTER(f) w_le(w, d->f, 8);
  STATE_COUNTERS(PUT_COUNTER)
#undef PUT_COUNTER
  size_t at = w->len;
  w_le(w, 0, 8);
  int rc = tl_snapshot(d->s, snapshot_to_wbuf, w);
  if (rc != TL_OK)
    return rc;
  uint64_t n = w->len - at - 8;
  for (int i = 0; i < 8; i++)
    w->p[at + (size_t)i] = (uint8_t)(n >> (8 * i));
  return TL_OK;
}

/* Writes the record (the last body again when fresh is false, for a tid reservation), then
 * tells every connection how many of its STATUS frames it holds durably (SYNCED): their ends
 * need not be kept by the executor any more. Returns 0, or -1 (logged; the last record
 * stays). */
static int write_state(driver *d, bool fresh) {
  if (!d->state_dir)
    return 0;
  uint64_t t0 = uv_hrtime();
  if (fresh) {
    /* Into the spare buffer: the last good body stays for reservations until this one is. */
    wbuf w = {d->state_spare, 0, d->state_spare_cap};
    int rc = encode_state(d, &w);
    d->state_spare = w.p;
    d->state_spare_cap = w.cap;
    if (rc != TL_OK) {
      if (rc == TL_EBUSY) {
        d->state_busy++;
      } else {
        fprintf(stderr, "tl-driver: tl_snapshot: %s\n", tl_err_name(rc));
        d->state_failed++;
      }
      return -1;
    }
    uint8_t *p = d->state_body;
    size_t cap = d->state_cap;
    d->state_body = d->state_spare;
    d->state_cap = d->state_spare_cap;
    d->state_len = w.len;
    d->state_spare = p;
    d->state_spare_cap = cap;
  } else if (d->state_len == 0) {
    return -1;
  } else {
    d->state_reserves++;
  }
  /* Every tid launched so far, and a block beyond it, may be sent before the next write. */
  uint64_t reserve = (d->tid_max > d->tid_reserved ? d->tid_max : d->tid_reserved) + TID_BLOCK;
  char why[512];
  if (state_write(d->state_dir, reserve, d->state_body, d->state_len, why, sizeof why) != 0) {
    fprintf(stderr, "tl-driver: writing the state: %s\n", why);
    d->state_failed++;
    return -1;
  }
  d->tid_reserved = reserve;
  d->state_writes++;
  d->state_ns += uv_hrtime() - t0;
  if (fresh)
    for (conn *c = d->conns; c; c = c->next)
      if (c->registered && !c->closing && !c->recovering && c->status_frames > c->synced) {
        tlc_msg m = {.type = TLC_MSG_SYNCED, .u.synced = {c->status_frames}};
        encode(c, &m);
        send_out(c);
        c->synced = c->status_frames;
        d->synced_sent++;
      }
  if (fresh)
    release_held(d);
  return 0;
}

/* With --state-dir (unless --launch-before-record), c's frames, those encoded so far and those
 * after them, wait for the next record, which on_commit writes at the next turn of the loop, so
 * that what is held in one turn shares one write. Returns whether they wait. */
static bool hold_for_record(driver *d, conn *c) {
  if (!d->state_dir || d->launch_early)
    return false;
  c->held = true;
  if (!d->commit_due) {
    d->commit_due = true;
    d->commit_since = uv_hrtime();
    uv_idle_start(&d->commit, on_commit);
  }
  return true;
}

/* A LAUNCH goes out only once a record holds its attempt: then a crash can lose no launch that
 * an executor got (it is in the record the restart reads, and the executor names it when it
 * reconciles), and a launch the crash kept from going out is offered again. offer() calls this
 * for the n launches it just encoded into c's frames. */
static void hold_launches(driver *d, conn *c, size_t n) {
  if (n > 0 && hold_for_record(d, c))
    d->held_now += n;
}

/* A record holds every launch encoded so far (or none could be written, or the run ends): the
 * held frames go out. */
static void release_held(driver *d) {
  if (!d->commit_due)
    return;
  d->commit_due = false;
  uv_idle_stop(&d->commit);
  if (d->held_now > 0) { /* a turn that held only a release's STOP is not a launches' wait */
    uint64_t waited = uv_hrtime() - d->commit_since;
    d->held_ns += waited;
    d->held_max_ns = waited > d->held_max_ns ? waited : d->held_max_ns;
    d->held_rounds++;
    d->held_launches += d->held_now;
    d->held_now = 0;
  }
  for (conn *c = d->conns; c; c = c->next)
    if (c->held) {
      c->held = false;
      send_out(c);
    }
}

/* The loop turned with launches held: the record that holds them. A write put off for
 * undelivered events is tried at the next turn; one that failed (logged, counted) sends them
 * anyway, as --launch-before-record would: a crash before the next record reruns them, and the
 * tid reservation (reserve_tids) still keeps their tids from being given again. */
static void on_commit(uv_idle_t *idle) {
  driver *d = idle->data;
  uint64_t busy = d->state_busy;
  if (write_state(d, true) == 0 || d->state_busy > busy)
    return;
  d->unrecorded += d->held_now;
  logf_(d, "no record holds %" PRIu64 " launches: sending them anyway", d->held_now);
  release_held(d);
}

static void on_state_timer(uv_timer_t *t) {
  driver *d = t->data;
  if (d->stopping || d->closed)
    return;
  uint64_t busy = d->state_busy;
  if (write_state(d, true) != 0 && d->state_busy > busy) /* undelivered events: soon again */
    uv_timer_start(&d->state_timer, on_state_timer, 1, d->snapshot_ms);
}

/* A stage boundary (from a callback, where a snapshot is refused): the record is written at the
 * next turn of the loop. */
static void state_due(driver *d) {
  if (d->state_dir && !d->stopping && !d->closed)
    uv_timer_start(&d->state_timer, on_state_timer, 0, d->snapshot_ms);
}

/* Launches up to tid max are about to be sent: past the reservation, a record reserves more
 * first (the last one's body again when no fresh one can be had), so that a restored driver
 * never gives a tid an executor may hold. Exits when neither can be written: sending would
 * break the promise. */
static void reserve_tids(driver *d, uint64_t max) {
  if (max > d->tid_max)
    d->tid_max = max;
  if (!d->state_dir || max <= d->tid_reserved)
    return;
  if (write_state(d, true) != 0 && write_state(d, false) != 0) {
    fprintf(stderr, "tl-driver: cannot reserve tids in %s/state: giving up\n", d->state_dir);
    exit(1);
  }
}

/* Whether recovery is over: no executor the restore made RECOVERING is left. */
static void check_recovery(driver *d) {
  if (!d->recovered || d->recover_end_ns)
    return;
  tl_stats st;
  tl_stats_get(d->s, &st);
  if (st.executors_recovering > 0)
    return;
  d->recover_end_ns = uv_hrtime();
  logf_(d,
        "recovery done in %.3f s: %" PRIu64 " executors reconciled, %" PRIu64
        " lost to the recovery timeout",
        (double)(d->recover_end_ns - d->recover_start_ns) / 1e9, d->reconciled,
        d->recovery_timeouts);
}

/* The resolver of tl_scheduler_restore: a task set's payload is its stage's binary. */
static bool cb_taskset_restored(void *ud, const tl_taskset_info *ts, void **payload) {
  stage *st = stage_of(ud, ts->id);
  if (!st)
    return false; /* aborted by the restore; its release then carries NULL */
  stage_binary *b = malloc(sizeof *b);
  if (!b)
    die_oom();
  b->stage = st;
  b->len = strlen(st->kind);
  *payload = b;
  return true;
}

/* Reads the run's part of a record into d, checking it against the command line's jobs.
 * Returns 0 with the snapshot's bytes in *snap, or 1 (the message printed). */
static int read_state_body(driver *d, const state_record *rec, const uint8_t **snap,
                           size_t *snap_len) {
  rbuf r = {rec->body, rec->len, 0, false};
  const char *bad = NULL;
  char token[sizeof d->token];
  if (r_le(&r, 4) != STATE_BODY_VERSION)
    bad = "its body is of another version";
  r_str(&r, token, sizeof token);
  uint64_t port = r_le(&r, 4);
  uint64_t elapsed = r_le(&r, 8);
  if (!bad && (r.bad || port == 0 || port > 65535 || strlen(token) < TOKEN_MIN))
    bad = "its token or port is bad";
  if (!bad && r_le(&r, 4) != d->njobs)
    bad = "its jobs differ from the command line's";
  for (size_t i = 0; i < d->njobs && !bad; i++) {
    job *j = &d->jobs[i];
    if (r_le(&r, 4) != j->nstages) {
      bad = "its jobs differ from the command line's";
      break;
    }
    j->current = (uint32_t)r_le(&r, 4);
    j->failed = r_le(&r, 1) != 0;
    j->done = r_le(&r, 1) != 0;
    if (j->current >= j->nstages)
      r.bad = true;
    for (uint32_t k = 0; k < j->nstages && !bad; k++) {
      stage *st = &j->stages[k];
      char kind[TLC_KIND_MAX + 1];
      r_str(&r, kind, sizeof kind);
      if (strcmp(kind, st->kind) != 0 || r_le(&r, 4) != st->ntasks)
        bad = "its jobs differ from the command line's";
      st->taskset = r_le(&r, 8);
      st->succeeded = (uint32_t)r_le(&r, 4);
      st->failed_attempts = (uint32_t)r_le(&r, 4);
      st->counted_failures = (uint32_t)r_le(&r, 4);
      st->killed = (uint32_t)r_le(&r, 4);
      st->zombie_finished = (uint32_t)r_le(&r, 4);
      st->failed = r_le(&r, 1) != 0;
      st->released = r_le(&r, 1) != 0;
      if (st->succeeded > st->ntasks)
        r.bad = true;
    }
  }
  uint64_t nexecs = bad ? 0 : r_le(&r, 4);
  if (nexecs > MAX_STARTED)
    r.bad = true;
  for (uint32_t i = 0; i < nexecs && !r.bad && !bad; i++) {
    exec_rec *e = &d->execs[i];
    r_str(&r, e->id, sizeof e->id);
    bool started = r_le(&r, 1) != 0;
    e->ended = r_le(&r, 1) != 0;
    e->released = r_le(&r, 1) != 0;
    e->fault_killed = r_le(&r, 1) != 0;
    e->injected = r_le(&r, 1) != 0;
    e->forced = r_le(&r, 1) != 0;
    e->caused_by_app = r_le(&r, 1) != 0;
    e->requested = r_le(&r, 1) != 0;
    uint64_t kind = r_le(&r, 1);
    e->exit_code = (int)(int32_t)(uint32_t)r_le(&r, 4);
    r_str(&r, e->reason, sizeof e->reason);
    r_str(&r, e->source, sizeof e->source);
    r_str(&r, e->handle, sizeof e->handle);
    if (kind >= LOSS_KINDS)
      r.bad = true;
    e->kind = (tl_loss_kind)kind;
    /* Still running when the driver died: this process did not start it, so its launcher
     * will not report its end; the connection and the pending-loss timeout will. */
    e->started = started && e->ended;
    e->adopted = started && !e->ended;
  }
#define GET_COUNTER(f) d->f = (__typeof__(d->f))r_le(&r, 8);
  if (!bad)
    STATE_COUNTERS(GET_COUNTER)
#undef GET_COUNTER
  uint64_t n = bad ? 0 : r_le(&r, 8);
  if (!bad && !r.bad && n != r.len - r.at)
    r.bad = true;
  if (!bad && r.bad)
    bad = "its body does not parse";
  if (bad) {
    fprintf(stderr, "tl-driver: the state in %s cannot be recovered: %s\n", d->state_dir, bad);
    return 1;
  }
  d->nexecs = (uint32_t)nexecs;
  d->released = 0;
  for (uint32_t i = 0; i < d->nexecs; i++)
    d->released += d->execs[i].released;
  strcpy(d->token, token);
  if (setenv("TL_CLUSTER_TOKEN", d->token, 1) != 0)
    die_oom();
  d->port = (int)port;
  /* Offers go on at once: the executors that registered before the crash come back by
   * themselves, and one that never registered may register now. */
  d->offering = true;
  d->recovered_elapsed = elapsed;
  *snap = r.p + r.at;
  *snap_len = (size_t)n;
  return 0;
}

typedef struct snap_reader {
  const uint8_t *p;
  size_t len, at;
} snap_reader;

static int snap_read(void *ud, void *buf, size_t n) {
  snap_reader *sr = ud;
  size_t left = sr->len - sr->at;
  if (n > left)
    n = left;
  memcpy(buf, sr->p + sr->at, n);
  sr->at += n;
  return (int)n;
}

/* --state-dir: reads the record there, if any, and restores the ledger from it (*restored true),
 * or prepares a fresh run's directory. Returns 0, or the exit status of a run that cannot begin:
 * 1 for a record that cannot be had or recovered (the message says why; nothing is changed in
 * the directory, so that it can be looked at). */
static int recover_state(driver *d, const tl_config *cfg, const tl_callbacks *cb, bool *restored) {
  *restored = false;
  if (mkdir(d->state_dir, 0700) != 0 && errno != EEXIST) {
    fprintf(stderr, "tl-driver: --state-dir %s: %s\n", d->state_dir, strerror(errno));
    return 1;
  }
  state_record rec;
  char why[3 * STATE_WHY_MAX + 8];
  int rc = state_read(d->state_dir, &rec, why, sizeof why);
  if (rc == 0)
    return 0;
  if (rc < 0) {
    fprintf(stderr, "tl-driver: the state in %s cannot be read, and recovery is refused: %s\n",
            d->state_dir, why);
    return 1;
  }
  const uint8_t *snap;
  size_t snap_len;
  if (read_state_body(d, &rec, &snap, &snap_len) != 0) {
    free(rec.body);
    return 1;
  }
  tl_config rcfg = *cfg;
  /* No tid the crashed driver may have sent is given again (docs/snapshot.md). With the older
   * record, the newer one's reservation is unknown: far beyond what one write reserves. */
  bool older = !strcmp(rec.name, "state.prev");
  rcfg.restore_tid_floor = rec.tid_reserved + 1 + (older ? FALLBACK_TID_GAP : 0);
  snap_reader sr = {snap, snap_len, 0};
  rc = tl_scheduler_restore(&rcfg, cb, snap_read, &sr, &d->s);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: the state in %s cannot be recovered: tl_scheduler_restore: %s\n",
            d->state_dir, tl_err_name(rc));
    free(rec.body);
    return 1;
  }
  d->recovered = true;
  d->fell_back = rec.fell_back;
  d->state_file = rec.name;
  copy_text(d->fell_back_why, sizeof d->fell_back_why, rec.why_newest);
  d->tid_reserved = rcfg.restore_tid_floor - 1;
  d->tid_max = d->tid_reserved;
  /* An executor dynamic allocation released before the crash runs nothing and was sent STOP
   * (or would have been, had the crash not come first): it is not waited for. Its end is
   * requested, so it is removed as decommissioned; if it comes back, its REGISTER is refused
   * and answered with STOP. */
  for (uint32_t i = 0; i < d->nexecs; i++) {
    tl_executor_state state;
    if (d->execs[i].released && !d->execs[i].ended && in_ledger(d, d->execs[i].id, &state))
      remove_released(d, d->execs[i].id);
  }
  d->recover_start_ns = uv_hrtime();
  tl_stats st;
  tl_stats_get(d->s, &st);
  d->recovering_at_start = (uint32_t)st.executors_recovering;
  if (rec.fell_back)
    fprintf(stderr, "tl-driver: %s; recovering from %s/%s\n", rec.why_newest, d->state_dir,
            rec.name);
  logf_(d, "recovering from %s: %zu bytes, %u executors to reconcile, %zu attempts frozen",
        d->state_dir, rec.len, d->recovering_at_start, st.attempts_frozen);
  free(rec.body);
  *restored = true;
  check_recovery(d); /* none to reconcile: done at once */
  return 0;
}

/* The summary's recovery lines (a recovered run only). */
static void print_recovery(const driver *d) {
  if (d->state_dir) {
    printf("state: %" PRIu64 " records written (%" PRIu64 " for tids only, %" PRIu64
           " put off while events were undelivered, %" PRIu64 " failed), %.3f ms each, last "
           "%" PRIu64 " bytes; SYNCED frames: %" PRIu64 "\n",
           d->state_writes, d->state_reserves, d->state_busy, d->state_failed,
           d->state_writes ? (double)d->state_ns / 1e6 / (double)d->state_writes : 0.0,
           (uint64_t)d->state_len, d->synced_sent);
    if (d->launch_early)
      printf("launches: sent before a record holds them (--launch-before-record)\n");
    else
      printf("launches: %" PRIu64 " held until a record held them, in %" PRIu64
             " waits of %.3f ms on average, %.3f ms at most; %" PRIu64 " sent unrecorded\n",
             d->held_launches, d->held_rounds,
             d->held_rounds ? (double)d->held_ns / 1e6 / (double)d->held_rounds : 0.0,
             (double)d->held_max_ns / 1e6, d->unrecorded);
  }
  if (!d->recovered)
    return;
  printf("recovered: from %s/%s%s; %" PRIu32 " executors to reconcile, recovery %s%.3f s; "
         "reconciled %" PRIu64 " (%" PRIu64 " tids named, %" PRIu64 " unknown and killed), "
         "%" PRIu64 " attempts lost to the outage, %" PRIu64 " executors lost to the recovery "
         "timeout; stray reconciliations %" PRIu64 " (%" PRIu64 " KILLs); updates of unknown tids "
         "%" PRIu64 "\n",
         d->state_dir, d->state_file, d->fell_back ? " (state was missing or bad)" : "",
         d->recovering_at_start, d->recover_end_ns ? "" : "NOT DONE after ",
         (double)((d->recover_end_ns ? d->recover_end_ns : uv_hrtime()) - d->recover_start_ns) /
             1e9,
         d->reconciled, d->reconciled_tids, d->reconcile_unknown, d->reconcile_lost,
         d->recovery_timeouts, d->stray_reconciles, d->stray_kills, d->resent_unknown);
  if (d->fell_back)
    printf("  state was not read: %s\n", d->fell_back_why);
  if (d->launcher_adopted)
    printf("  the %s launcher took back %" PRIu32 " executors of the crashed run, by the "
           "handles in the record\n",
           d->ops->name, d->launcher_adopted);
  for (uint64_t i = 0; i < d->reconciled && i < REPORT_DETAIL_MAX; i++) {
    const recon_rec *r = &d->recons[i];
    char e[ESC_MAX];
    printf("  %s: reconciled after %" PRIu64 " ms: %" PRIu64 " tids named, %" PRIu64
           " unknown (killed), %" PRIu64 " not named (run again)\n",
           esc(e, r->id), r->ms, r->reported, r->unknown, r->lost);
  }
}

/* A run that ended (well or not, but not by a crash) leaves no record to recover. */
static void remove_state(driver *d) {
  if (!d->state_dir)
    return;
  char path[4096];
  static const char *const names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", d->state_dir, names[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      fprintf(stderr, "tl-driver: unlink %s: %s\n", path, strerror(errno));
  }
}

/* ---------------------------------------------------------------------------------------------
 * Processes and the end of the run
 * ------------------------------------------------------------------------------------------- */

static void on_handle_closed(uv_handle_t *h) { (void)h; }

/* Without --accept nothing but the launcher's executors can run the jobs: once no executor it
 * started is running and the ledger holds no executor that can take tasks, the jobs cannot
 * finish, so the run gives up now instead of waiting for --timeout-s (say, every executor died
 * of `crash` tasks whose failures did not yet reach max_task_failures). With --accept the
 * driver waits: executors started elsewhere may still come; with dynamic allocation it starts
 * new ones. */
static void check_starved(driver *d) {
  if (d->accept > 0 || d->dynamic || d->recovered || d->stopping || d->closed || !d->launcher ||
      d->ops->running(d->launcher) > 0)
    return;
  tl_stats st;
  tl_stats_get(d->s, &st);
  if (st.executors_alive + st.executors_decommissioning == 0)
    give_up(d, "no executor started by the launcher is running and none can take tasks");
}

/* What an executor's end may lead to, run off on_end's stack (a launcher's callback is never
 * asked to bear calls back into it): giving up when nothing is left, finishing the run. */
static void on_after_end(uv_timer_t *t) {
  driver *d = t->data;
  check_recovery(d);
  check_starved(d);
  maybe_finish(d);
}

/* The launcher's account of an executor's end: the second phase of its loss, whether its
 * connection closed already (the executor is PENDING_LOSS) or not yet (ALIVE: both phases at
 * once; the close then finds it removed). One the driver released is removed as decommissioned
 * instead (not a loss); once the driver is stopping, nothing is reported. */
static void on_end(void *ud, const launcher_end *end) {
  driver *d = ud;
  exec_rec *e = find_exec(d, end->executor_id);
  if (!e || !e->started || e->ended) {
    fprintf(stderr, "tl-driver: an end for %s, which is not running\n", end->executor_id);
    return;
  }
  e->ended = true;
  e->kind = end->kind;
  e->caused_by_app = end->caused_by_app;
  e->exit_code = end->exit_code;
  e->requested = end->requested;
  copy_text(e->reason, sizeof e->reason, end->reason);
  copy_text(e->source, sizeof e->source, end->source);
  bool clean = end->kind == TL_LOSS_EXITED && end->exit_code == 0;
  if (!clean || !d->stopping)
    logf_(d, "executor %s ended: %s (%s)", e->id, e->reason, e->source);
  tl_executor_state state;
  if (!d->stopping && !d->closed && in_ledger(d, e->id, &state)) {
    if (e->released) {
      remove_released(d, e->id);
    } else {
      tl_loss_reason r = {.kind = end->kind,
                          .caused_by_app = end->caused_by_app,
                          .exit_code = end->exit_code,
                          .message = end->reason};
      report_loss(d, e->id, &r, DETECTED_END, end->source);
    }
  }
  uv_timer_start(&d->after_end, on_after_end, 0, 0);
}

static void kill_bad_clients(driver *d) {
  for (uint32_t i = 0; i < d->nbad; i++)
    if (d->bad[i].running && !d->bad[i].exited && !uv_is_closing((uv_handle_t *)&d->bad[i].process))
      uv_process_kill(&d->bad[i].process, SIGKILL);
}

/* Stops by force what did not go: every executor the launcher still runs (their ends follow, as
 * requested), every bad client, every connection. */
static void force_stop(driver *d) {
  if (d->launcher) {
    for (uint32_t i = 0; i < d->nexecs; i++)
      if (d->execs[i].started && !d->execs[i].ended && !d->execs[i].forced) {
        d->execs[i].forced = true;
        d->forced++;
      }
    d->ops->stop_all(d->launcher);
  }
  kill_bad_clients(d);
  for (conn *c = d->conns; c; c = c->next)
    close_conn(c, NULL);
}

static void on_grace(uv_timer_t *t) {
  driver *d = t->data;
  size_t left = d->launcher ? d->ops->running(d->launcher) : 0;
  if (left > 0)
    fprintf(stderr, "tl-driver: %zu executors did not stop within %d ms: stopping them\n", left,
            STOP_GRACE_MS);
  force_stop(d);
}

static void on_bad_closed(uv_handle_t *h) {
  bad_child *b = h->data;
  b->running = false;
  maybe_finish(h->loop->data);
}

static void on_bad_exit(uv_process_t *p, int64_t exit_status, int term_signal) {
  bad_child *b = p->data;
  driver *d = p->loop->data;
  b->exited = true;
  b->exit_status = exit_status;
  b->term_signal = term_signal;
  if (!d->stopping)
    sample_alive(d);
  logf_(d, "bad client %s exited: status %" PRId64 ", signal %d", bad_mode_names[b->mode],
        exit_status, term_signal);
  uv_close((uv_handle_t *)p, on_bad_closed);
}

/* --bad-client: once every executor registered, spawn the tl-badclient next to the executor
 * binary once per option, with the port, the mode and what the mode needs (exec-1's id, a tid
 * running on exec-1); the token is in the environment they inherit. */
static void spawn_bad_clients(driver *d) {
  if (d->bad_spawned || d->nbad == 0)
    return;
  d->bad_spawned = true;
  char path[4096];
  const char *slash = strrchr(d->executor_path, '/');
  size_t dir = slash ? (size_t)(slash - d->executor_path) + 1 : 0;
  if (dir + sizeof "tl-badclient" > sizeof path) {
    give_up(d, "the executor's path is too long");
    return;
  }
  memcpy(path, d->executor_path, dir);
  strcpy(path + dir, "tl-badclient");
  char port[16], tid[24];
  snprintf(port, sizeof port, "%d", d->port);
  snprintf(tid, sizeof tid, "%" PRIu64, d->exec1_tid);
  for (uint32_t i = 0; i < d->nbad; i++) {
    bad_child *b = &d->bad[i];
    char *args[] = {path, "--port", port, (char *)bad_mode_names[b->mode], NULL, NULL};
    if (b->mode == BAD_DUPLICATE_ID)
      args[4] = d->execs[0].id;
    else if (b->mode == BAD_FOREIGN_STATUS)
      args[4] = tid;
    uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                     {.flags = UV_INHERIT_FD, .data.fd = 1},
                                     {.flags = UV_INHERIT_FD, .data.fd = 2}};
    uv_process_options_t opt = {
        .exit_cb = on_bad_exit, .file = path, .args = args, .stdio_count = 3, .stdio = stdio};
    b->process.data = b;
    int rc = uv_spawn(d->loop, &b->process, &opt);
    if (rc < 0) {
      fprintf(stderr, "tl-driver: spawn %s: %s\n", path, uv_strerror(rc));
      give_up(d, "could not spawn a bad client");
      return;
    }
    b->running = true;
    logf_(d, "bad client %s spawned", bad_mode_names[b->mode]);
  }
}

static void on_resume(uv_timer_t *t) {
  driver *d = t->data;
  exec_rec *e = &d->execs[0];
  if (e->stopped) {
    e->stopped = false;
    logf_(d, "resuming %s (SIGCONT)", e->id);
    if (e->started && !e->ended && d->launcher)
      d->ops->signal(d->launcher, e->id, SIGCONT, false);
  }
}

/* --kill-executor-after, --external-kill-after and --stop-executor-after: once N tasks have
 * finished, at the first STATUS frame from exec-1 that reports a task RUNNING (so that the loss
 * finds attempts that reached RUNNING), or FAULT_DELAY_MS later at the latest, SIGKILL or
 * SIGSTOP the first executor, once. An external kill is not recorded as the
 * driver's: the exit callback reports it as something outside the driver (the OOM killer, an
 * operator) would make it, TL_LOSS_EXITED with exit code 137, caused by the app. */
static void on_fault(uv_timer_t *t) {
  driver *d = t->data;
  exec_rec *e = &d->execs[0];
  if (!d->fault_armed)
    return;
  d->fault_armed = false;
  uv_timer_stop(&d->fault);
  if (d->closed || d->stopping || !d->launcher || !e->started || e->ended)
    return;
  int rc = 0;
  if (d->kill_after) {
    logf_(d, "killing %s (SIGKILL)", e->id);
    e->fault_killed = true;
    rc = d->ops->signal(d->launcher, e->id, SIGKILL, true);
  } else if (d->external_kill_after) {
    logf_(d, "killing %s (SIGKILL) as from outside the driver", e->id);
    e->injected = true;
    rc = d->ops->signal(d->launcher, e->id, SIGKILL, false);
  } else if (d->stop_after) {
    logf_(d, "stopping %s (SIGSTOP)", e->id);
    e->stopped = true;
    rc = d->ops->signal(d->launcher, e->id, SIGSTOP, false);
  }
  if (rc < 0)
    fprintf(stderr, "tl-driver: the fault on %s: %s\n", e->id, uv_strerror(rc));
}

static void inject_faults(driver *d) {
  uint64_t n = d->kill_after            ? d->kill_after
               : d->external_kill_after ? d->external_kill_after
                                        : d->stop_after;
  if (n && d->tasks_finished == n) {
    logf_(d, "%" PRIu64 " tasks finished: injecting the fault", n);
    d->fault_armed = true;
    uv_timer_start(&d->fault, on_fault, FAULT_DELAY_MS, 0);
  }
}

static void on_uv_stopped(void *ud) { (void)ud; }

static void on_server_closed(uv_handle_t *h) {
  driver *d = h->data;
  close(d->server_fd); /* after the poll is off the loop's epoll set */
  d->server_fd = -1;
  if (d->spare_fd >= 0)
    close(d->spare_fd);
  d->spare_fd = -1;
}

/* Closes the listening socket (once): from then on a connection attempt is refused by the
 * kernel, so no flood of new connections can hold the driver's end back. */
static void close_server(driver *d) {
  if (d->server_closed)
    return;
  d->server_closed = true;
  uv_close((uv_handle_t *)&d->server, on_server_closed);
}

static void on_launcher_closed(void *ud) {
  driver *d = ud;
  d->launcher = NULL;
}

/* Once STOP is out, every connection closed, every executor's end came and every bad client
 * exited: closes the rest, the launcher included. */
static void maybe_finish(driver *d) {
  if (!d->stopping || d->closed || d->conns)
    return;
  if (d->launcher && d->ops->running(d->launcher) > 0)
    return;
  for (uint32_t i = 0; i < d->nbad; i++)
    if (d->bad[i].running)
      return;
  d->closed = true;
  if (d->launcher)
    d->ops->close(d->launcher, on_launcher_closed, d);
  uv_close((uv_handle_t *)&d->grace, on_handle_closed);
  uv_close((uv_handle_t *)&d->after_end, on_handle_closed);
  uv_close((uv_handle_t *)&d->alloc_timer, on_handle_closed);
  uv_close((uv_handle_t *)&d->state_timer, on_handle_closed);
  tl_uv_stop(d->uv, on_uv_stopped, NULL);
  d->uv = NULL;
  close_server(d);
  uv_close((uv_handle_t *)&d->settle_timer, on_handle_closed);
  metrics_http_close(d->metrics);
  d->metrics = NULL;
  uv_close((uv_handle_t *)&d->revive, on_handle_closed);
  uv_close((uv_handle_t *)&d->commit, on_handle_closed);
  uv_close((uv_handle_t *)&d->deadline, on_handle_closed);
  uv_close((uv_handle_t *)&d->resume, on_handle_closed);
  uv_close((uv_handle_t *)&d->fault, on_handle_closed);
  uv_close((uv_handle_t *)&d->sigint, on_handle_closed);
  uv_close((uv_handle_t *)&d->sigterm, on_handle_closed);
  uv_close((uv_handle_t *)&d->progress_timer, on_handle_closed);
}

/* --progress: tasks done of all, executors alive, and the rate since the last line. On a
 * terminal the line is rewritten in place; otherwise each is a line of its own. */
static void print_progress(driver *d, bool last) {
  uint64_t done = 0, now = uv_hrtime();
  for (size_t i = 0; i < d->njobs; i++)
    for (uint32_t k = 0; k < d->jobs[i].nstages; k++)
      done += d->jobs[i].stages[k].succeeded;
  tl_stats st;
  tl_stats_get(d->s, &st);
  double secs = (double)(now - d->progress_ns) / 1e9;
  double rate = secs > 0 && d->offering ? (double)(done - d->progress_done) / secs : 0;
  d->progress_done = done;
  d->progress_ns = now;
  fprintf(stderr, "%sprogress: %" PRIu64 "/%" PRIu64 " tasks, %zu executors alive, %.0f tasks/s%s",
          d->progress_tty ? "\r" : "", done, d->total_tasks, st.executors_alive, rate,
          d->progress_tty ? (last ? "\033[K\n" : "\033[K") : "\n");
}

static void on_progress(uv_timer_t *t) { print_progress(t->data, false); }

/* The last progress line, once: the jobs are over or the run gives up. */
static void end_progress(driver *d) {
  if (!d->progress || !uv_is_active((uv_handle_t *)&d->progress_timer))
    return;
  uv_timer_stop(&d->progress_timer);
  print_progress(d, true);
}

/* Every job is over, one failed, or the run gives up: STOP every connected executor (a
 * released one has had its STOP), and STOP_GRACE_MS later have the launcher stop whatever has
 * not ended (on_grace); maybe_finish then waits for every end. */
static void begin_stop(driver *d) {
  if (d->stopping)
    return;
  end_progress(d);
  d->stopping = true;
  close_server(d); /* nothing new comes in: the end is bounded by the STOP grace */
  d->active_at_end = active_executors(d);
  uv_idle_stop(&d->revive);
  release_held(d); /* no record now: the run ends and removes it */
  uv_timer_stop(&d->alloc_timer);
  uv_timer_stop(&d->state_timer); /* the record stays as the jobs' end left it */
  on_resume(&d->resume);          /* a stopped executor must run to take its STOP */
  for (conn *c = d->conns; c; c = c->next) {
    if (!d->gave_up && c->registered && !c->closing)
      d->unforgotten += c->nsent; /* every task set was released: none may be left */
    if (c->registered && !c->closing && !c->released)
      send_stop(c, d->gave_up ? "the driver gives up" : "all jobs done");
    else if (!c->registered)
      close_conn(c, NULL);
  }
  uv_timer_start(&d->grace, on_grace, STOP_GRACE_MS, 0);
  maybe_finish(d);
}

static void give_up(driver *d, const char *why) {
  end_progress(d);
  fprintf(stderr, "tl-driver: giving up: %s\n", why);
  d->gave_up = true;
  if (d->stopping) { /* already stopping: the executors do not go, so make them */
    uv_timer_stop(&d->grace);
    force_stop(d);
    return;
  }
  begin_stop(d);
}

/* ---------------------------------------------------------------------------------------------
 * Dynamic allocation (--min-executors/--max-executors): Spark's ExecutorAllocationManager,
 * simplified.
 *
 * Growing. While tasks have been pending (tl_stats.tasks_pending) for --backlog-timeout, each
 * round (one every --backlog-timeout while the backlog lasts) starts to_add more executors and
 * doubles to_add (1, 2, 4, ...), as Spark does, never beyond --max-executors active, nor beyond
 * what the pending and running tasks could use (their count over each executor's task slots).
 * Executors started and not yet registered count as active, so a slow start is not answered
 * with more starts. When no task is pending, to_add is back to 1.
 *
 * Shrinking. An executor the launcher started that has run nothing for --idle-timeout is
 * released, while more than --min-executors are active: tl_executor_decommission first (no
 * launch reaches it any more), then, as it runs nothing, FORGET for every binary it holds and
 * STOP. Its end is requested, not a loss: when its connection closes (or its end comes first)
 * it is removed from the ledger as TL_LOSS_DECOMMISSIONED, which cb_executor_lost counts as a
 * release.
 *
 * Replacing. Fewer than --min-executors active (some were lost): new ones are started at once.
 * ------------------------------------------------------------------------------------------- */

/* Asks the launcher for n more executors, exec-<next> onwards; how many it started. An id the
 * ledger already knows (an executor started elsewhere, --accept, registered under it) is
 * skipped: the launcher's executor would be refused, and its end taken for the other's. */
static uint32_t start_executors(driver *d, uint32_t n) {
  uint32_t done = 0;
  while (done < n && d->nexecs < MAX_STARTED) {
    exec_rec *e = &d->execs[d->nexecs++];
    snprintf(e->id, sizeof e->id, "exec-%" PRIu32, d->nexecs);
    tl_executor_status es;
    if (tl_executor_get(d->s, e->id, &es) != TL_ENOENT) {
      logf_(d, "%s is taken by an executor started elsewhere: not started", e->id);
      continue;
    }
    int rc = d->ops->start(d->launcher, e->id);
    if (rc < 0) {
      fprintf(stderr, "tl-driver: the %s launcher could not start %s: %s\n", d->ops->name, e->id,
              rc == -1 ? "failed" : uv_strerror(rc));
      break;
    }
    e->started = true;
    d->started++;
    done++;
    logf_(d, "executor %s requested", e->id);
  }
  uint32_t active = active_executors(d);
  if (active > d->most_active)
    d->most_active = active;
  if (done > 0)
    state_due(d); /* a record soon holds them (and a Slurm job's id), for a crash to find */
  return done;
}

/* Releases an idle executor (above); returns whether it did. */
static bool release_executor(driver *d, conn *c, exec_rec *e) {
  int rc = tl_executor_decommission(d->s, c->id, "idle: released by dynamic allocation");
  if (rc < 0) {
    fprintf(stderr, "tl-driver: tl_executor_decommission %s: %s\n", c->id, tl_err_name(rc));
    return false;
  }
  c->released = true;
  e->released = true;
  d->released++;
  logf_(d, "releasing %s: idle", c->id);
  /* Its STOP waits for a record that holds the release. Sent before, a crash could make it exit
   * while the newest record holds it running: the restart would wait for it, lose it to the
   * recovery timeout, and run again any task whose end no record covered yet. */
  hold_for_record(d, c);
  if (d->crash_after_release && state_crash_write == 0)
    state_crash_write = state_write_count + 1 + d->crash_release_skip;
  while (c->nsent > 0) { /* it will run nothing again */
    tlc_msg m = {.type = TLC_MSG_FORGET, .u.forget = {c->sent[--c->nsent]}};
    encode(c, &m);
    d->forgets_sent++;
  }
  send_stop(c, "released: idle");
  return true;
}

static void on_alloc_tick(uv_timer_t *t) {
  driver *d = t->data;
  if (d->stopping || d->closed || !d->launcher)
    return;
  uint64_t now = uv_hrtime();
  uint32_t active = active_executors(d);
  if (active < d->min_executors) {
    logf_(d, "%" PRIu32 " executors active, fewer than --min-executors: starting more", active);
    if (start_executors(d, d->min_executors - active) < d->min_executors - active &&
        active_executors(d) == 0)
      give_up(d, "the launcher cannot start executors");
    return;
  }
  if (!d->offering)
    return;
  tl_stats st;
  tl_stats_get(d->s, &st);
  if (st.tasks_pending == 0) {
    d->backlog_since = 0;
    d->to_add = 1;
  } else if (d->backlog_since == 0) {
    d->backlog_since = now;
    d->next_request = now + d->backlog_ns;
  } else if (now >= d->next_request) {
    uint64_t slots = (uint64_t)d->cores + d->queue;
    uint64_t needed = (st.tasks_pending + st.attempts_running + slots - 1) / slots;
    uint32_t target = needed < d->max_executors ? (uint32_t)needed : d->max_executors;
    if (target > active) {
      uint32_t add = target - active < d->to_add ? target - active : d->to_add;
      logf_(d, "tasks pending for %" PRIu64 " ms: requesting %" PRIu32 " more executors",
            (now - d->backlog_since) / 1000000, add);
      uint32_t got = start_executors(d, add);
      d->to_add = got == d->to_add ? 2 * d->to_add : 1;
      if (got < add && active_executors(d) == 0)
        give_up(d, "the launcher cannot start executors");
    }
    d->next_request = now + d->backlog_ns;
  }
  active = active_executors(d);
  for (conn *c = d->conns; c && !d->stopping && active > d->min_executors; c = c->next) {
    if (!c->registered || c->closing || c->released || c->idle_since == 0 ||
        now - c->idle_since < d->idle_ns)
      continue;
    exec_rec *e = find_exec(d, c->id);
    tl_executor_status es;
    if (!e || !exec_active(d, e) || tl_executor_get(d->s, c->id, &es) < 0 ||
        es.state != TL_EXECUTOR_ALIVE || es.running != 0)
      continue;
    if (release_executor(d, c, e))
      active--;
  }
}

static void on_deadline(uv_timer_t *t) { give_up(t->data, "the run took longer than --timeout-s"); }

static void on_signal(uv_signal_t *s, int signum) {
  (void)signum;
  give_up(s->data, "signalled");
}

/* The driver's own metrics after the ledger's on /metrics (Prometheus text 0.0.4): the edge's
 * counters and connections, every one named in docs/cluster.md "Limits and hardening".
 * snprintf-like: the bytes needed, at most cap written. */
static int metrics_extra(void *ud, char *buf, size_t cap) {
  driver *d = ud;
  size_t n = 0;
#define PUT(...)                                                                                   \
  do {                                                                                             \
    int k = snprintf(n < cap ? buf + n : NULL, n < cap ? cap - n : 0, __VA_ARGS__);                \
    if (k < 0)                                                                                     \
      return -1;                                                                                   \
    n += (size_t)k;                                                                                \
  } while (0)
#define COUNTER(name, help, value)                                                                 \
  PUT("# HELP taskledger_driver_" name " " help "\n# TYPE taskledger_driver_" name                 \
      " counter\ntaskledger_driver_" name " %" PRIu64 "\n",                                        \
      (uint64_t)(value))
#define GAUGE(name, help, value)                                                                   \
  PUT("# HELP taskledger_driver_" name " " help "\n# TYPE taskledger_driver_" name                 \
      " gauge\ntaskledger_driver_" name " %" PRIu64 "\n",                                          \
      (uint64_t)(value))
  GAUGE("connections", "Connections open, registered or not.", d->nconns);
  GAUGE("connections_pending", "Connections waiting for their REGISTER.", d->npending);
  COUNTER("auth_failures_total", "REGISTER frames with a wrong token.", d->auth_failures);
  COUNTER("auth_addresses_total", "Addresses (IPv6: /64s) that sent a wrong token.",
          d->auth_addresses);
  COUNTER("refused_backoff_total", "Connections refused at once: their address must wait.",
          d->refused_backoff);
  COUNTER("refused_connection_cap_total", "Connections refused at once: --max-connections open.",
          d->refused_conn_cap);
  COUNTER("evicted_pending_total",
          "Waiting connections closed for a newer one over --max-pending-connections.",
          d->evicted_pending);
  COUNTER("refused_connections_total", "Connections closed for a protocol or registration fault.",
          d->refused_conns);
  PUT("# HELP taskledger_driver_accept_errors_total Accepts that failed, by error.\n"
      "# TYPE taskledger_driver_accept_errors_total counter\n"
      "taskledger_driver_accept_errors_total{error=\"EMFILE\"} %" PRIu64 "\n"
      "taskledger_driver_accept_errors_total{error=\"ENFILE\"} %" PRIu64 "\n"
      "taskledger_driver_accept_errors_total{error=\"other\"} %" PRIu64 "\n",
      d->accept_emfile, d->accept_enfile, d->accept_other);
#undef GAUGE
#undef COUNTER
#undef PUT
  return n > INT32_MAX ? -1 : (int)n;
}

/* ---------------------------------------------------------------------------------------------
 * Setup
 * ------------------------------------------------------------------------------------------- */

/* Reads a token file into buf (len bytes, NUL included): its first line, without the line end
 * (check_token then wants TOKEN_MIN bytes of it). Exits with status 2 when it cannot be read or
 * is too long. */
static void read_token_file(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "tl-driver: cannot open the token file %s\n", path);
    exit(2);
  }
  size_t n = fread(buf, 1, len, f);
  fclose(f);
  size_t end = 0;
  while (end < n && buf[end] != '\n' && buf[end] != '\r')
    end++;
  if (end == len) {
    fprintf(stderr, "tl-driver: the token file %s is longer than %zu bytes\n", path, len - 1);
    exit(2);
  }
  buf[end] = '\0';
}

/* A token given by the user must be at least TOKEN_MIN bytes, from every source: an empty one
 * would turn authentication off and a short one falls to guessing. Exits with status 2. */
static void check_token(const char *token, const char *source) {
  size_t n = strlen(token);
  if (n >= TOKEN_MIN)
    return;
  fprintf(stderr,
          "tl-driver: the token from %s is %zu bytes: at least %d are needed; make one with\n"
          "  head -c 32 /dev/urandom | base64\n",
          source, n, TOKEN_MIN);
  exit(2);
}

/* The token: from --token-file, else TL_CLUSTER_TOKEN (set, even empty, it is the token), else
 * TOKEN_BYTES from /dev/urandom, hex-encoded; put in the environment the executors inherit
 * (never on their command line, where ps would show it). */
static void make_token(driver *d, const char *token_file) {
  if (token_file) {
    read_token_file(token_file, d->token, sizeof d->token);
    check_token(d->token, "--token-file");
    if (setenv("TL_CLUSTER_TOKEN", d->token, 1) != 0)
      die_oom();
    return;
  }
  const char *env = getenv("TL_CLUSTER_TOKEN");
  if (env) {
    if (strlen(env) > 2 * TOKEN_BYTES) {
      fprintf(stderr, "tl-driver: TL_CLUSTER_TOKEN is longer than %d bytes\n", 2 * TOKEN_BYTES);
      exit(2);
    }
    check_token(env, "TL_CLUSTER_TOKEN");
    strcpy(d->token, env);
    return;
  }
  uint8_t raw[TOKEN_BYTES];
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(raw, 1, sizeof raw, f) != sizeof raw) {
    fprintf(stderr, "tl-driver: cannot read /dev/urandom\n");
    exit(1);
  }
  fclose(f);
  for (size_t i = 0; i < TOKEN_BYTES; i++)
    snprintf(d->token + 2 * i, 3, "%02x", raw[i]);
  if (setenv("TL_CLUSTER_TOKEN", d->token, 1) != 0)
    die_oom();
}

/* The tl-executor next to this program, unless --executor named one. */
static char exe_dir_path[4096];
static const char *default_executor_path(void) {
  size_t len = sizeof exe_dir_path;
  if (uv_exepath(exe_dir_path, &len) < 0)
    return "tl-executor";
  char *slash = strrchr(exe_dir_path, '/');
  if (!slash || (size_t)(slash - exe_dir_path) + sizeof "/tl-executor" > sizeof exe_dir_path)
    return "tl-executor";
  strcpy(slash, "/tl-executor");
  return exe_dir_path;
}

/* The command line's values (driver_opts.h) in the driver's own fields, and what they imply:
 * the token, the executor binary, the totals of the jobs and whether the progress line runs. */
static void apply_options(driver *d, const driver_opts *o) {
  d->nexecutors = o->executors;
  d->accept = o->accept;
  d->cores = o->cores;
  d->queue = o->queue;
  d->heartbeat_ms = o->heartbeat_ms;
  d->heartbeat_timeout_ms = o->heartbeat_timeout_ms;
  d->register_timeout_ms = o->register_timeout_ms;
  d->max_pending = o->max_pending < o->max_conns ? o->max_pending : o->max_conns;
  d->max_conns = o->max_conns;
  d->port = o->port;
  d->quiet = o->quiet;
  d->bench = o->bench;
  d->summary_json = o->summary_json;
  d->kill_after = o->kill_after;
  d->external_kill_after = o->external_kill_after;
  d->stop_after = o->stop_after;
  d->expect_losses = o->expect_losses;
  d->expect_failure = o->expect_failure;
  d->kill_on_failure = o->kill_on_failure;
  d->dynamic = o->dynamic;
  if (d->dynamic) {
    d->min_executors = o->min_executors;
    d->max_executors = o->max_executors;
    d->backlog_ns = o->backlog_ms * UINT64_C(1000000);
    d->idle_ns = o->idle_ms * UINT64_C(1000000);
    d->to_add = 1;
  }
  for (uint32_t i = 0; i < o->nbad; i++)
    d->bad[i].mode = o->bad[i];
  d->nbad = o->nbad;
  d->njobs = o->njobs;
  for (size_t i = 0; i < o->njobs; i++) {
    job *j = &d->jobs[i];
    j->id = (uint32_t)i;
    j->nstages = o->jobs[i].nstages;
    for (uint32_t k = 0; k < j->nstages; k++) {
      stage *st = &j->stages[k];
      st->job = j;
      strcpy(st->kind, o->jobs[i].stages[k].kind);
      st->ntasks = o->jobs[i].stages[k].ntasks;
      d->total_tasks += st->ntasks;
      d->has_crash = d->has_crash || !strcmp(st->kind, "crash");
    }
  }
  d->settle_at = 64;
  d->server_fd = d->spare_fd = -1;
  d->execs = calloc(MAX_STARTED, sizeof *d->execs);
  if (!d->execs)
    die_oom();
  d->executor_path = o->executor_path ? o->executor_path : default_executor_path();
  make_token(d, o->token_file);
  /* Shown by default on a terminal; --progress forces it, --quiet silences the default. */
  d->progress_tty = isatty(2);
  d->progress = o->progress || (d->progress_tty && !d->quiet);
  d->progress_ms = o->progress_ms;
  d->state_dir = o->state_dir;
  d->snapshot_ms = o->snapshot_ms;
  d->launch_early = o->launch_early;
  state_crash_write = o->crash_write;
  state_crash_point = o->crash_point;
  d->crash_after_release = o->crash_after_release;
  d->crash_release_skip = o->crash_release_skip;
}

/* Connections past the open-file limit fail with EMFILE (logged and counted when they do): says
 * so at the start if --max-connections cannot be reached. */
static void warn_nofile(const driver *d) {
  struct rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY &&
      nofile.rlim_cur < (rlim_t)d->max_conns + FD_HEADROOM)
    fprintf(stderr,
            "tl-driver: the open-file limit (ulimit -n) is %ju, below --max-connections %" PRIu32
            " + %d: connections past it will be refused with EMFILE\n",
            (uintmax_t)nofile.rlim_cur, d->max_conns, FD_HEADROOM);
}

/* The loop and the ledger on it (tl_uv_start): a new one, or, with --state-dir holding a
 * record, the one it restores (*restored). Returns 0 or the exit status. */
static int start_ledger(driver *d, const driver_opts *o, bool *restored) {
  /* A write to an executor that just died must fail with EPIPE (the connection then closes and
   * the loss is reported), not kill the driver: libuv writes with write(2), which raises
   * SIGPIPE. */
  signal(SIGPIPE, SIG_IGN);
  d->loop = uv_default_loop();
  d->loop->data = d;
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.heartbeat_timeout_ns = d->heartbeat_timeout_ms * UINT64_C(1000000);
  cfg.pending_loss_timeout_ns = o->pending_loss_ms * UINT64_C(1000000);
  if (o->max_task_failures)
    cfg.max_task_failures = o->max_task_failures;
  tl_callbacks cb = {.ud = d,
                     .task_ended = cb_task_ended,
                     .taskset_failed = cb_taskset_failed,
                     .taskset_released = cb_taskset_released,
                     .executor_lost = cb_executor_lost,
                     .revive_offers = cb_revive_offers,
                     .kill_task = cb_kill_task};
  cfg.recovery_timeout_ns = o->recovery_timeout_ms * UINT64_C(1000000);
  cb.taskset_restored = cb_taskset_restored;
  *restored = false;
  if (d->state_dir) {
    int rc = recover_state(d, &cfg, &cb, restored);
    if (rc != 0)
      return rc;
  }
  if (!*restored && tl_scheduler_new(&cfg, &cb, &d->s) < 0)
    die_oom();
  if (tl_uv_start(d->s, d->loop, &d->uv) < 0)
    die_oom();
  return 0;
}

/* Listens on host (--listen, an IPv4 or IPv6 address: *is_v6 says which) and d->port, and prints
 * the address. Executors are told to connect to advertise, else to host, or to the loopback
 * address of its family when it is the wildcard. Returns 0, or the exit status: 2 for an address
 * that is neither, 1 when it cannot listen. */
static int listen_on(driver *d, const char *host, const char *advertise, bool *is_v6) {
  struct sockaddr_storage addr;
  bool v6 = false;
  if (uv_ip4_addr(host, d->port, (struct sockaddr_in *)&addr) != 0) {
    if (uv_ip6_addr(host, d->port, (struct sockaddr_in6 *)&addr) != 0) {
      fprintf(stderr, "tl-driver: --listen %s is not an IPv4 or IPv6 address\n", host);
      return 2;
    }
    v6 = true;
  }
  *is_v6 = v6;
  d->listen_host = host;
  d->connect_host = advertise                  ? advertise
                    : !strcmp(host, "0.0.0.0") ? "127.0.0.1"
                    : !strcmp(host, "::")      ? "::1"
                                               : host;
  /* The listening socket is the driver's own, watched with a uv_poll_t, so that an accept that
   * fails reaches accept_failed (libuv's uv_listen hides EMFILE). Set up as uv_tcp_bind would:
   * SO_REUSEADDR, dual-stack for "::". */
  int rc = 0;
  d->server_fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
  int on = 1, off = 0;
  if (d->server_fd < 0 || fcntl(d->server_fd, F_SETFD, FD_CLOEXEC) != 0 ||
      fcntl(d->server_fd, F_SETFL, fcntl(d->server_fd, F_GETFL) | O_NONBLOCK) != 0 ||
      setsockopt(d->server_fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
      (v6 && setsockopt(d->server_fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off) != 0) ||
      bind(d->server_fd, (const struct sockaddr *)&addr,
           v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in)) != 0 ||
      listen(d->server_fd, LISTEN_BACKLOG) != 0)
    rc = -errno;
  if (rc == 0)
    rc = uv_poll_init_socket(d->loop, &d->server, d->server_fd);
  if (rc == 0) {
    d->server.data = d;
    rc = uv_poll_start(&d->server, UV_READABLE, accept_ready);
  }
  if (rc < 0) {
    fprintf(stderr, "tl-driver: listen on %s port %d: %s\n", host, d->port, uv_strerror(rc));
    return 1;
  }
  d->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  struct sockaddr_storage bound;
  socklen_t blen = sizeof bound;
  getsockname(d->server_fd, (struct sockaddr *)&bound, &blen);
  d->port = v6 ? ntohs(((struct sockaddr_in6 *)&bound)->sin6_port)
               : ntohs(((struct sockaddr_in *)&bound)->sin_port);
  printf(v6 ? "listening on [%s]:%d\n" : "listening on %s:%d\n", host, d->port);
  fflush(stdout);
  return 0;
}

/* --metrics-port: GET /metrics on the --listen address (an IPv6 one when v6). Returns 0, or 1
 * when it cannot start. */
static int start_metrics(driver *d, int metrics_port, bool v6) {
  const char *host = d->listen_host;
  int rc = metrics_http_start(d->loop, host, metrics_port, d->s, &d->metrics);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: metrics on %s port %d: %s\n", host, metrics_port, uv_strerror(rc));
    return 1;
  }
  metrics_http_set_extra(d->metrics, metrics_extra, d);
  printf(v6 ? "metrics on [%s]:%d\n" : "metrics on %s:%d\n", host, rc);
  fflush(stdout);
  return 0;
}

/* The driver's own handles: the deadline (--timeout-s), the signals, the timers the run uses
 * later, the loss records' settling and the progress line. */
static void init_handles(driver *d, uint64_t timeout_s) {
  uv_idle_init(d->loop, &d->revive);
  d->revive.data = d;
  uv_idle_init(d->loop, &d->commit);
  d->commit.data = d;
  uv_timer_init(d->loop, &d->deadline);
  d->deadline.data = d;
  uv_timer_start(&d->deadline, on_deadline, timeout_s * 1000, 0);
  uv_timer_init(d->loop, &d->resume);
  uv_timer_init(d->loop, &d->fault);
  d->fault.data = d;
  d->resume.data = d;
  uv_signal_init(d->loop, &d->sigint);
  uv_signal_init(d->loop, &d->sigterm);
  d->sigint.data = d->sigterm.data = d;
  uv_signal_start(&d->sigint, on_signal, SIGINT);
  uv_signal_start(&d->sigterm, on_signal, SIGTERM);
  uv_timer_init(d->loop, &d->progress_timer);
  d->progress_timer.data = d;
  uv_timer_init(d->loop, &d->grace);
  d->grace.data = d;
  uv_timer_init(d->loop, &d->after_end);
  d->after_end.data = d;
  uv_timer_init(d->loop, &d->alloc_timer);
  d->alloc_timer.data = d;
  uv_timer_init(d->loop, &d->settle_timer);
  d->settle_timer.data = d;
  uv_timer_init(d->loop, &d->state_timer);
  d->state_timer.data = d;
  uv_timer_start(&d->settle_timer, on_settle, SETTLE_MS, SETTLE_MS);
  if (d->progress) {
    d->progress_ns = uv_hrtime();
    uv_timer_start(&d->progress_timer, on_progress, d->progress_ms, d->progress_ms);
  }
}

/* The launcher, and the first executors it starts; with dynamic allocation, its periodic check.
 * The token is in the environment its executors inherit (make_token). o's strings must stay
 * valid while the launcher runs. A launcher that cannot be created, or cannot start them, ends
 * the run (give_up). */
static void start_launcher(driver *d, const driver_opts *o, bool restored) {
  d->lcfg = (launcher_config){.loop = d->loop,
                              .executor_path = d->executor_path,
                              .connect_host = d->connect_host,
                              .port = d->port,
                              .cores = d->cores,
                              .heartbeat_ms = d->heartbeat_ms,
                              .reconnect_s = d->state_dir ? EXECUTOR_RECONNECT_S : 0,
                              .partition = o->partition,
                              .time_limit = o->time_limit,
                              .extra_args = o->nslurm_args ? o->slurm_args : NULL,
                              .nextra = o->nslurm_args,
                              .poll_ms = strcmp(o->launcher, "slurm") ? 0 : o->slurm_poll_ms,
                              .on_end = on_end,
                              .ud = d};
  int rc = d->ops->create(&d->lcfg, &d->launcher);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: the %s launcher: %s\n", d->ops->name,
            rc == -1 ? "cannot be created" : uv_strerror(rc));
    d->launcher = NULL;
    give_up(d, "no launcher");
  } else if (restored) {
    /* The executors of the run before the crash are adopted (exec_rec.adopted): they reconnect
     * by themselves; none is started. A launcher that can take them back by the handle the
     * record kept (slurm: the job id) does, and reports their ends from then on. */
    for (uint32_t i = 0; i < d->nexecs && d->ops->adopt; i++) {
      exec_rec *e = &d->execs[i];
      if (!e->adopted || !e->handle[0])
        continue;
      int arc = d->ops->adopt(d->launcher, e->id, e->handle);
      if (arc < 0) {
        fprintf(stderr, "tl-driver: the %s launcher cannot take back %s (%s): %s\n", d->ops->name,
                e->id, e->handle, uv_strerror(arc));
        continue;
      }
      e->adopted = false;
      e->started = true;
      d->launcher_adopted++;
      logf_(d, "executor %s: taken back by the %s launcher (%s)", e->id, d->ops->name, e->handle);
    }
  } else if (start_executors(d, d->nexecutors) < d->nexecutors) {
    give_up(d, "could not start the executors");
    return;
  }
  if (d->dynamic) {
    uint64_t period = (o->backlog_ms < o->idle_ms ? o->backlog_ms : o->idle_ms) / 4;
    period = period < 10 ? 10 : period > 250 ? 250 : period;
    uv_timer_start(&d->alloc_timer, on_alloc_tick, period, period);
    if (!restored && d->nexecutors + d->accept == 0) { /* nothing to wait for: offers begin */
      d->offering = true;
      d->start_ns = uv_hrtime();
    }
  }
}

/* Everything before the loop runs: the options applied, the ledger on the loop, the listening
 * socket (and the metrics endpoint), the handles, the jobs' first stages submitted and the
 * launcher started. Returns 0, or the exit status of a run that cannot begin. */
static int set_up(driver *d, const driver_opts *o) {
  d->ops = launcher_find(o->launcher);
  if (!d->ops) {
    fprintf(stderr, "tl-driver: the %s launcher is not built into this tl-driver\n", o->launcher);
    return 2;
  }
  apply_options(d, o);
  warn_nofile(d);
  bool restored;
  int rs = start_ledger(d, o, &restored);
  if (rs != 0)
    return rs;
  bool v6;
  int rc = listen_on(d, o->listen, o->advertise, &v6);
  if (rc == 0 && o->metrics_port >= 0)
    rc = start_metrics(d, o->metrics_port, v6);
  if (rc != 0)
    return rc;
  init_handles(d, o->timeout_s);
  if (restored) { /* the jobs go on where the record left them */
    d->start_ns = uv_hrtime();
  } else {
    for (size_t i = 0; i < d->njobs; i++)
      if (submit_stage(d, &d->jobs[i], 0) < 0)
        return 1;
  }
  start_launcher(d, o, restored);
  if (d->state_dir && !d->stopping) {
    if (write_state(d, true) != 0) /* the first record: a crash from here on is recovered */
      return 1;
    uv_timer_start(&d->state_timer, on_state_timer, d->snapshot_ms, d->snapshot_ms);
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The summary as JSON (--summary-json; docs/cluster.md "The JSON summary")
 * ------------------------------------------------------------------------------------------- */

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong form, no surrogate,
 * nothing above U+10FFFF), or 0 when the bytes there are not one. p is NUL-terminated. */
static size_t utf8_len(const unsigned char *p) {
  size_t n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;
  unsigned lo = 0x80, hi = 0xbf; /* the allowed range of the second byte */
  if (p[0] < 0xc2 || p[0] > 0xf4)
    return 0;
  if (p[0] == 0xe0)
    lo = 0xa0;
  else if (p[0] == 0xed)
    hi = 0x9f;
  else if (p[0] == 0xf0)
    lo = 0x90;
  else if (p[0] == 0xf4)
    hi = 0x8f;
  if (p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++)
    if (p[i] < 0x80 || p[i] > 0xbf)
      return 0;
  return n;
}

/* Writes s as a JSON string: quotes, backslashes and control characters escaped; well-formed
 * UTF-8 as it is; any other byte (an executor id is whatever bytes its REGISTER held) as
 * U+FFFD, so that the file is always valid JSON, which must be UTF-8 (RFC 8259). */
static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p >= 0x80) {
      size_t n = utf8_len(p);
      if (n == 0)
        fputs("\\ufffd", f);
      else
        fwrite(p, 1, n, f);
      p += n ? n - 1 : 0;
    } else if (*p == '"' || *p == '\\')
      fprintf(f, "\\%c", *p);
    else if (*p == '\n')
      fputs("\\n", f);
    else if (*p == '\t')
      fputs("\\t", f);
    else if (*p < 0x20 || *p == 0x7f)
      fprintf(f, "\\u%04x", *p);
    else
      fputc(*p, f);
  }
  fputc('"', f);
}

/* Every field of tl_stats, in the struct's order. */
#define TL_STATS_FIELDS(X)                                                                         \
  X(executors_alive)                                                                               \
  X(executors_decommissioning)                                                                     \
  X(executors_pending_loss)                                                                        \
  X(executors_recovering)                                                                          \
  X(tombstones)                                                                                    \
  X(hosts)                                                                                         \
  X(racks)                                                                                         \
  X(pools)                                                                                         \
  X(places)                                                                                        \
  X(tasksets_active)                                                                               \
  X(tasksets_zombie)                                                                               \
  X(attempts_running)                                                                              \
  X(attempts_frozen)                                                                               \
  X(tasks_pending)                                                                                 \
  X(tasks_speculatable)                                                                            \
  X(events_queued)                                                                                 \
  X(mem_live_bytes)                                                                                \
  X(mem_live_blocks)                                                                               \
  X(launched)                                                                                      \
  X(succeeded)                                                                                     \
  X(failed)                                                                                        \
  X(killed)                                                                                        \
  X(stale_updates)                                                                                 \
  X(rejected_updates)                                                                              \
  X(rejected_offers)                                                                               \
  X(executors_lost)                                                                                \
  X(tasksets_released)                                                                             \
  X(executors_excluded)                                                                            \
  X(nodes_excluded)                                                                                \
  X(tasksets_with_failures)                                                                        \
  X(tasksets_unschedulable)                                                                        \
  X(excluded_offers)                                                                               \
  X(tasksets_unschedulable_aborted)                                                                \
  X(pending_loss_timeouts)                                                                         \
  X(recovery_timeouts)                                                                             \
  X(reconciled)                                                                                    \
  X(reconcile_lost)                                                                                \
  X(reconcile_unknown)

static int by_seq(const void *a, const void *b) {
  uint64_t x = (*(const loss_rec *const *)a)->seq, y = (*(const loss_rec *const *)b)->seq;
  return x < y ? -1 : x > y;
}

/* The lost executors the summary shows one by one: the last LOST_DETAIL_MAX losses to begin,
 * of those whose real reason came (the ring) and those still waiting for it, in the order the
 * losses began. *shown is a malloc'd array the caller frees; returns its length. */
static size_t shown_losses(driver *d, const loss_rec ***shown) {
  size_t ended = d->lost_ended < LOST_DETAIL_MAX ? (size_t)d->lost_ended : LOST_DETAIL_MAX;
  size_t n = ended + HASH_COUNT(d->open_losses);
  const loss_rec **all = malloc((n ? n : 1) * sizeof *all);
  if (!all)
    die_oom();
  size_t k = 0;
  for (size_t i = 0; i < ended; i++)
    all[k++] = &d->lost_detail[i];
  for (loss_rec *lr = d->open_losses; lr; lr = lr->hh.next)
    all[k++] = lr;
  qsort(all, n, sizeof *all, by_seq);
  if (n > LOST_DETAIL_MAX) {
    memmove(all, all + (n - LOST_DETAIL_MAX), LOST_DETAIL_MAX * sizeof *all);
    n = LOST_DETAIL_MAX;
  }
  *shown = all;
  return n;
}

/* --summary-json: what the summary says, as one JSON object (the format is in
 * docs/cluster.md). 0, or -1 with a message on stderr. */
static int write_summary_json(driver *d, const char *path, bool ok, const tl_stats *st,
                              uint64_t tasks, uint32_t jobs_succeeded) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "tl-driver: cannot write %s\n", path);
    return -1;
  }
  fprintf(f, "{\n  \"launcher\": ");
  json_str(f, d->ops->name);
  fprintf(f, ",\n  \"ok\": %s,\n  \"gave_up\": %s,\n", ok ? "true" : "false",
          d->gave_up ? "true" : "false");
  fprintf(f, "  \"jobs\": {\"succeeded\": %" PRIu32 ", \"failed\": %zu},\n", jobs_succeeded,
          d->njobs - jobs_succeeded);
  fprintf(f,
          "  \"tasks\": {\"succeeded\": %" PRIu64 ", \"launched\": %" PRIu64
          ", \"retries\": %" PRIu64 "},\n",
          tasks, d->launched, d->retries);
  fprintf(f,
          "  \"executors\": {\"started\": %" PRIu32 ", \"registered\": %" PRIu32
          ", \"released\": %" PRIu32 ", \"stopped_by_force\": %" PRIu32
          ", \"most_active\": %" PRIu32 ", \"active_at_end\": %" PRIu32 ", \"lost\": %" PRIu64
          "},\n",
          d->started, d->registered, d->released, d->forced, d->most_active, d->active_at_end,
          d->executors_lost);
  fprintf(f, "  \"dynamic_allocation\": ");
  if (d->dynamic)
    fprintf(f,
            "{\"min\": %" PRIu32 ", \"max\": %" PRIu32 ", \"backlog_timeout_ms\": %" PRIu64
            ", \"idle_timeout_ms\": %" PRIu64 "},\n",
            d->min_executors, d->max_executors, d->backlog_ns / 1000000, d->idle_ns / 1000000);
  else
    fprintf(f, "null,\n");
  fprintf(f, "  \"state\": ");
  if (d->state_dir)
    fprintf(f,
            "{\"records\": %" PRIu64 ", \"failed\": %" PRIu64
            ", \"launch_before_record\": %s, \"launches_held\": %" PRIu64
            ", \"held_mean_ms\": %.3f, \"held_max_ms\": %.3f, \"unrecorded\": %" PRIu64 "},\n",
            d->state_writes, d->state_failed, d->launch_early ? "true" : "false", d->held_launches,
            d->held_rounds ? (double)d->held_ns / 1e6 / (double)d->held_rounds : 0.0,
            (double)d->held_max_ns / 1e6, d->unrecorded);
  else
    fprintf(f, "null,\n");
  fprintf(f, "  \"recovery\": ");
  if (d->recovered)
    fprintf(f,
            "{\"from\": \"%s\", \"executors_to_reconcile\": %" PRIu32
            ", \"done\": %s, \"seconds\": %.3f, \"reconciled\": %" PRIu64
            ", \"tids_named\": %" PRIu64 ", \"unknown_killed\": %" PRIu64
            ", \"attempts_lost\": %" PRIu64 ", \"recovery_timeouts\": %" PRIu64
            ", \"stray_reconciles\": %" PRIu64 ", \"updates_unknown\": %" PRIu64
            ", \"launcher_adopted\": %" PRIu32 "},\n",
            d->state_file, d->recovering_at_start, d->recover_end_ns ? "true" : "false",
            d->recover_end_ns ? (double)(d->recover_end_ns - d->recover_start_ns) / 1e9 : 0.0,
            d->reconciled, d->reconciled_tids, d->reconcile_unknown, d->reconcile_lost,
            d->recovery_timeouts, d->stray_reconciles, d->resent_unknown, d->launcher_adopted);
  else
    fprintf(f, "null,\n");
  const loss_rec **shown;
  size_t nshown = shown_losses(d, &shown);
  fprintf(f, "  \"lost_executors_total\": %" PRIu64 ",\n", d->lost_total);
  fprintf(f, "  \"lost_executors\": [");
  for (size_t i = 0; i < nshown; i++) {
    const loss_rec *lr = shown[i];
    fprintf(f, "%s\n    {\"id\": ", i ? "," : "");
    json_str(f, lr->id);
    fprintf(f, ", \"detected_by\": ");
    json_str(f, detection_names[lr->detected_by]);
    fprintf(f, ", \"phases_seen\": [");
    for (size_t k = 0; k < lr->nphases; k++) {
      fprintf(f, "%s", k ? ", " : "");
      json_str(f, phase_names[lr->phases[k]]);
    }
    fprintf(f, "], \"reason_kind\": ");
    if (lr->final) {
      json_str(f, loss_kind_names[lr->kind]);
      fprintf(f, ", \"caused_by_app\": %s, \"exit_code\": %d, \"reason\": ",
              lr->caused_by_app ? "true" : "false", lr->exit_code);
      json_str(f, lr->reason);
      fprintf(f, ", \"reason_source\": ");
      json_str(f, lr->source);
    } else { /* still pending when the run ended */
      fprintf(f, "null, \"caused_by_app\": null, \"exit_code\": null, \"reason\": null, "
                 "\"reason_source\": null");
    }
    fprintf(f, "}");
  }
  fprintf(f, "%s],\n", nshown ? "\n  " : "");
  free(shown);
  fprintf(f,
          "  \"edge\": {\"auth_failures\": %" PRIu64 ", \"auth_addresses\": %" PRIu64
          ", \"refused_backoff\": %" PRIu64 ", \"evicted_pending\": %" PRIu64
          ", \"refused_connection_cap\": %" PRIu64 ", \"accept_emfile\": %" PRIu64
          ", \"accept_enfile\": %" PRIu64 ", \"accept_other\": %" PRIu64 "},\n",
          d->auth_failures, d->auth_addresses, d->refused_backoff, d->evicted_pending,
          d->refused_conn_cap, d->accept_emfile, d->accept_enfile, d->accept_other);
  fprintf(f, "  \"tl_stats\": {");
  const char *sep = "\n    ";
#define X(field)                                                                                   \
  fprintf(f, "%s\"" #field "\": %" PRIuMAX, sep, (uintmax_t)st->field);                            \
  sep = ",\n    ";
  TL_STATS_FIELDS(X)
#undef X
  fprintf(f, "\n  }\n}\n");
  if (fclose(f) != 0) {
    fprintf(stderr, "tl-driver: cannot write %s\n", path);
    return -1;
  }
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * The verdict: the summary on stdout, and whether the run passed
 * ------------------------------------------------------------------------------------------- */

/* Each job and its stages; *tasks gets the tasks that succeeded, *jobs_succeeded the jobs.
 * Returns whether every job ended as it should have: succeeded, or with --expect-job-failure
 * failed with every submitted stage released. */
static bool print_jobs(const driver *d, uint64_t *tasks, uint32_t *jobs_succeeded) {
  bool ok = true;
  *tasks = 0;
  *jobs_succeeded = 0;
  for (size_t i = 0; i < d->njobs; i++) {
    const job *j = &d->jobs[i];
    bool job_ok = j->done && !j->failed;
    for (uint32_t k = 0; k < j->nstages; k++)
      job_ok = job_ok && j->stages[k].released && j->stages[k].succeeded == j->stages[k].ntasks;
    *jobs_succeeded += job_ok;
    printf("job %zu: %s\n", i + 1, job_ok ? "succeeded" : "FAILED");
    if (d->expect_failure) { /* expected: it failed, and every submitted stage was released */
      job_ok = j->done && j->failed;
      for (uint32_t k = 0; k < j->nstages; k++)
        job_ok = job_ok && (j->stages[k].taskset == 0 || j->stages[k].released);
      printf("  (expected to fail: %s)\n", job_ok ? "as expected" : "NOT AS EXPECTED");
    }
    for (uint32_t k = 0; k < j->nstages; k++) {
      const stage *sg = &j->stages[k];
      *tasks += sg->succeeded;
      printf("  stage %" PRIu32 ": %s x %" PRIu32 ": %s (%" PRIu32 " succeeded, %" PRIu32
             " failed attempts, %" PRIu32 " counted; %" PRIu32 " finished as zombies, %" PRIu32
             " killed)\n",
             k + 1, sg->kind, sg->ntasks,
             sg->taskset == 0                                             ? "not submitted"
             : sg->released && !sg->failed && sg->succeeded == sg->ntasks ? "succeeded"
                                                                          : "FAILED",
             sg->succeeded, sg->failed_attempts, sg->counted_failures, sg->zombie_finished,
             sg->killed);
    }
    ok = ok && job_ok;
  }
  return ok;
}

/* The executors line and what the last executors reported. Their binaries counts are their
 * word: shown, never trusted (an executor sent a binary it holds exits non-zero, which its
 * launcher reports). Returns whether no executor still held a binary at STOP. */
static bool print_executors(const driver *d) {
  printf("executors: %" PRIu32 " spawned with %" PRIu32 " cores each, %" PRIu32
         " registered with %" PRIu64 " cores in all, queue %" PRIu32 "; frames: %" PRIu64
         " in, %" PRIu64 " out; launches: %" PRIu64 "; binaries sent: %" PRIu64
         ", forgotten: %" PRIu64 "%s\n",
         d->started, d->cores, d->registered, d->registered_cores, d->queue, d->frames_in,
         d->frames_out, d->launched, d->binaries_sent, d->forgets_sent,
         d->unforgotten ? " (SOME HELD AT STOP)" : "");
  uint64_t first_report = d->nreports > REPORT_DETAIL_MAX ? d->nreports - REPORT_DETAIL_MAX : 0;
  if (first_report > 0)
    printf("  (%" PRIu64 " earlier executors' reports not shown)\n", first_report);
  for (uint64_t i = first_report; i < d->nreports; i++) {
    const exec_report *r = &d->reports[i % REPORT_DETAIL_MAX];
    char e[ESC_MAX];
    printf("  %s: %" PRIu32 " cores; reported %" PRIu64 " binaries materialised, for %zu task "
           "sets sent%s\n",
           esc(e, r->id), r->cores, r->binaries, r->tasksets,
           r->binaries > r->tasksets ? " (more than it was sent: its word, not trusted)" : "");
  }
  return d->unforgotten == 0;
}

/* The allocation line, and how each executor ended, from its launcher: a clean end is an exit
 * with code 0 (after STOP, or after its release). A death from outside the driver is a loss the
 * run survives: killed by a signal (exit code above 128) or gone by the launcher's account
 * (TL_LOSS_PROCESS_LOST: a job cancelled by someone else, NODE_FAIL, PREEMPTED...);
 * --expect-losses can pin their number. An executor that exited with a code of its own (1: its
 * connection broke; 3: it ran more tasks than cores) is a bug, unless a `crash` task explains
 * it. Returns whether every executor ended as it should have. */
static bool print_allocation(const driver *d) {
  bool ok = true;
  printf("allocation: %s", d->ops->name);
  if (d->dynamic)
    printf(", dynamic, min %" PRIu32 ", max %" PRIu32 ", initial %" PRIu32, d->min_executors,
           d->max_executors, d->nexecutors);
  printf("; executors started %" PRIu32 ", released %" PRIu32 ", most at once %" PRIu32
         ", at the end of the jobs %" PRIu32 ", stopped by force %" PRIu32 "\n",
         d->started, d->released, d->most_active, d->active_at_end, d->forced);
  for (uint32_t i = 0; i < d->nexecs; i++) {
    const exec_rec *e = &d->execs[i];
    if (!e->started)
      continue;
    if (!e->ended) { /* cannot be: the loop ran until every end came */
      printf("  %s: NO END REPORTED\n", e->id);
      ok = false;
      continue;
    }
    if (e->kind == TL_LOSS_EXITED && e->exit_code == 0 && !e->forced)
      continue;
    bool crashed = d->has_crash && e->kind == TL_LOSS_EXITED && e->exit_code == CRASH_EXIT_CODE;
    bool killed = e->fault_killed && e->kind == TL_LOSS_KILLED;
    bool outside =
        e->kind == TL_LOSS_PROCESS_LOST || (e->kind == TL_LOSS_EXITED && e->exit_code > 128);
    printf("  %s: exit code %d, %s: %s%s\n", e->id, e->exit_code, loss_kind_names[e->kind],
           e->reason,
           e->forced               ? " (stopped by force: it did not stop in time)"
           : killed && !d->gave_up ? " (killed by the driver)"
           : e->injected           ? " (killed as from outside)"
           : crashed               ? " (a crash task)"
           : outside               ? " (ended from outside the driver)"
                                   : "");
    ok = ok && !e->forced && (killed || e->injected || crashed || outside) && !d->gave_up;
  }
  return ok;
}

/* The attempts and losses lines, then the lost executors: counted by how each loss began and by
 * its real reason, then the last LOST_DETAIL_MAX one by one: the phases reported and the real
 * reason with where it came from (the same records as --summary-json's lost_executors). The
 * open loss records are settled first. */
static void print_losses(driver *d, const tl_stats *st) {
  printf("attempts: %" PRIu64 " launched, %" PRIu64 " retries; KILL frames sent: %" PRIu64 "\n",
         d->launched, d->retries, d->kills_sent);
  printf("losses: %" PRIu64 " executors lost; reported: pending on close %" PRIu64
         ", heartbeat timeout %" PRIu64 ", exited %" PRIu64 ", killed by the driver %" PRIu64
         " (of which removed for a protocol fault %" PRIu64 "), pending-loss timeout %" PRIu64
         "; frames refused after removal (TL_EGONE): %" PRIu64 "; process lost %" PRIu64 "\n",
         d->executors_lost, d->losses[TL_LOSS_PENDING], d->losses[TL_LOSS_HEARTBEAT_TIMEOUT],
         d->losses[TL_LOSS_EXITED], d->losses[TL_LOSS_KILLED], d->violations,
         st->pending_loss_timeouts, d->gone_frames, d->losses[TL_LOSS_PROCESS_LOST]);
  settle_open_losses(d);
  printf("  lost executors: %" PRIu64 "; detected by", d->lost_total);
  for (int k = 0; k < DETECTED_N; k++)
    printf("%s %s %" PRIu64, k ? "," : "", detection_names[k], d->lost_by_detection[k]);
  printf("; real reasons");
  for (int k = TL_LOSS_EXITED; k < LOSS_KINDS; k++)
    printf("%s %s %" PRIu64, k > TL_LOSS_EXITED ? "," : "", phase_names[k], d->lost_by_kind[k]);
  printf("\n");
  const loss_rec **shown;
  size_t nshown = shown_losses(d, &shown);
  if (d->lost_total > nshown)
    printf("  (%" PRIu64 " earlier lost executors not shown)\n", d->lost_total - nshown);
  for (size_t i = 0; i < nshown; i++) {
    const loss_rec *lr = shown[i];
    char e[ESC_MAX];
    printf("  lost %s: detected by %s; phases", esc(e, lr->id), detection_names[lr->detected_by]);
    for (size_t k = 0; k < lr->nphases; k++)
      printf("%s %s", k ? "," : "", phase_names[lr->phases[k]]);
    char er[ESC_MAX];
    if (lr->final)
      printf("; %s, %s, exit code %d: %s (from %s)\n", loss_kind_names[lr->kind],
             lr->caused_by_app ? "caused by the app" : "not caused by the app", lr->exit_code,
             esc(er, lr->reason), lr->source);
    else
      printf("; no real reason when the run ended\n");
  }
  free(shown);
}

/* The edge: every limit that refused something, and the accept errors (docs/cluster.md "Limits
 * and hardening"). */
static void print_edge(const driver *d) {
  printf("edge: wrong tokens %" PRIu64 " from %" PRIu64 " addresses; refused at accept: %" PRIu64
         " waiting out a back-off, %" PRIu64 " over --max-connections; %" PRIu64
         " closed waiting for REGISTER over --max-pending-connections; accept errors: EMFILE "
         "%" PRIu64 ", ENFILE %" PRIu64 ", other %" PRIu64 "; log lines not shown %" PRIu64 "\n",
         d->auth_failures, d->auth_addresses, d->refused_backoff, d->refused_conn_cap,
         d->evicted_pending, d->accept_emfile, d->accept_enfile, d->accept_other,
         d->log_auth.total_suppressed + d->log_refused.total_suppressed +
             d->log_accept.total_suppressed);
}

/* The ledger's state and its final stats. */
static void print_ledger(const driver *d, const tl_stats *st, int check, const char *why) {
  printf("ledger: %zu attempts, %zu task sets, tl_check %s%s%s; refused: %" PRIu64
         " updates, %" PRIu64 " connections\n",
         st->attempts_running + st->attempts_frozen, st->tasksets_active + st->tasksets_zombie,
         tl_err_name(check), check ? ": " : "", why, d->refused_updates, d->refused_conns);
  printf("ledger stats: launched %" PRIu64 ", succeeded %" PRIu64 ", failed %" PRIu64
         ", killed %" PRIu64 ", stale updates %" PRIu64 ", rejected updates %" PRIu64
         ", executors lost %" PRIu64 ", task sets released %" PRIu64
         "; executors alive %zu, tombstones %zu; memory %zu bytes in %zu blocks\n",
         st->launched, st->succeeded, st->failed, st->killed, st->stale_updates,
         st->rejected_updates, st->executors_lost, st->tasksets_released, st->executors_alive,
         st->tombstones, st->mem_live_bytes, st->mem_live_blocks);
}

/* --bad-client: each refused for its reason, none changed the ledger. Prints the bad clients
 * line and returns whether it says "as expected". */
static bool bad_clients_verdict(const driver *d) {
  uint64_t want[BAD_NMODES] = {0};
  uint32_t clean_exits = 0;
  for (uint32_t i = 0; i < d->nbad; i++) {
    want[d->bad[i].mode]++;
    clean_exits += d->bad[i].exited && d->bad[i].exit_status == 0 && d->bad[i].term_signal == 0;
  }
  uint64_t got[BAD_NMODES] = {d->refused_token,
                              d->refused_frame[-TLC_EVERSION],
                              d->refused_frame[-TLC_ETOOBIG],
                              d->refused_dup,
                              d->refused_owner,
                              d->refused_timeout,
                              d->refused_frame[-TLC_ETYPE],
                              d->refused_frame[-TLC_ETRUNCATED],
                              d->refused_early,
                              d->refused_second,
                              d->refused_unexpected};
  bool as_expected = d->bad_spawned && clean_exits == d->nbad;
  for (int m = 0; m < BAD_NMODES; m++)
    as_expected = as_expected && got[m] == want[m];
  /* Only a foreign-status client registers (that is its point); it is offered nothing. */
  uint64_t frames_refused = 0;
  for (int k = 0; k < 16; k++)
    frames_refused += d->refused_frame[k];
  /* foreign-status, second-register and driver-message clients register correctly first; the
   * last two are then removed for their fault (TL_LOSS_KILLED at once), and nothing else may
   * have been. */
  uint64_t registering = want[BAD_FOREIGN_STATUS] + want[BAD_SECOND] + want[BAD_DRIVER_MSG];
  uint64_t removed = want[BAD_SECOND] + want[BAD_DRIVER_MSG];
  as_expected = as_expected &&
                frames_refused ==
                    got[BAD_GARBAGE] + got[BAD_OVERSIZED] + got[BAD_UNKNOWN] + got[BAD_TRUNCATED] &&
                d->refused_conns == d->nbad - want[BAD_FOREIGN_STATUS] &&
                d->max_alive <= d->nexecutors + d->accept + registering &&
                d->registered == d->nexecutors + d->accept + registering &&
                d->violations == removed && d->losses[TL_LOSS_KILLED] == removed;
  printf("bad clients: %" PRIu32 " spawned, %" PRIu32 " exited 0; refused: wrong token %" PRIu64
         ", TLC_EVERSION %" PRIu64 ", TLC_ETOOBIG %" PRIu64 ", TL_EEXIST %" PRIu64
         ", TL_EOWNER %" PRIu64 ", no REGISTER in time %" PRIu64 ", TLC_ETYPE %" PRIu64
         ", TLC_ETRUNCATED %" PRIu64 ", before REGISTER %" PRIu64 ", second REGISTER %" PRIu64
         ", driver's message %" PRIu64 "; removed for a fault %" PRIu64
         "; executors alive at most %zu; %s\n",
         d->bad_spawned ? d->nbad : 0, clean_exits, got[BAD_WRONG_TOKEN], got[BAD_GARBAGE],
         got[BAD_OVERSIZED], got[BAD_DUPLICATE_ID], got[BAD_FOREIGN_STATUS], got[BAD_SILENT],
         got[BAD_UNKNOWN], got[BAD_TRUNCATED], got[BAD_EARLY], got[BAD_SECOND], got[BAD_DRIVER_MSG],
         d->violations, d->max_alive, as_expected ? "as expected" : "NOT AS EXPECTED");
  return as_expected;
}

/* Frees what the driver still holds once the loop is closed: the ledger (which hands back any
 * payload still held, in a failed run), the buffers and the records. */
static void free_driver(driver *d) {
  tl_scheduler_free(d->s);
  free(d->launch_buf);
  free(d->items);
  free(d->execs);
  free(d->state_body);
  free(d->state_spare);
  loss_rec *lr, *lr_tmp;
  HASH_ITER(hh, d->open_losses, lr, lr_tmp) {
    HASH_DEL(d->open_losses, lr);
    free(lr);
  }
  auth_rec *ar, *ar_tmp;
  HASH_ITER(hh, d->auth, ar, ar_tmp) {
    HASH_DEL(d->auth, ar);
    free(ar);
  }
}

/* After the loop: the summary (and --summary-json), the driver freed, and the exit status: 0
 * when the run passed (it did not give up, the loop closed, the ledger is consistent and
 * drained, every job, executor, loss and bad client was as expected), 1 otherwise. */
static int verdict(driver *d, int close_rc) {
  tl_stats st;
  tl_stats_get(d->s, &st);
  char why[256] = "";
  int check = tl_check(d->s, why, sizeof why);
  bool ok = !d->gave_up && check == TL_OK && close_rc == 0;
  uint64_t tasks;
  uint32_t jobs_succeeded;
  ok = print_jobs(d, &tasks, &jobs_succeeded) && ok;
  ok = ok && st.attempts_running == 0 && st.attempts_frozen == 0 &&
       st.tasksets_active + st.tasksets_zombie == 0;
  /* A recovered run: the time before the crash and the time since the restart. */
  double secs =
      d->end_ns > d->start_ns ? (double)(d->end_ns - d->start_ns + d->recovered_elapsed) / 1e9 : 0;
  printf("tasks: %" PRIu64 " in %.3f s: %.0f tasks/s\n", tasks, secs,
         secs > 0 ? (double)tasks / secs : 0.0);
  ok = print_executors(d) && ok;
  ok = print_allocation(d) && ok;
  print_losses(d, &st);
  print_edge(d);
  if (d->expect_losses != UINT64_MAX && d->executors_lost != d->expect_losses) {
    printf("expected %" PRIu64 " executors lost\n", d->expect_losses);
    ok = false;
  }
  print_ledger(d, &st, check, why);
  print_recovery(d);
  if (d->recovered && !d->recover_end_ns)
    ok = false;
  remove_state(d);
  if (d->nbad > 0)
    ok = bad_clients_verdict(d) && ok;
  if (d->summary_json && write_summary_json(d, d->summary_json, ok, &st, tasks, jobs_succeeded) < 0)
    ok = false;
  free_driver(d);
  printf("%s\n", ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}

/* Parses the command line (driver_opts.c), sets the run up, runs the loop until every executor
 * has ended and every handle is closed, then says how it went. */
int main(int argc, char **argv) {
  static driver d;  /* large: static */
  driver_opts opts; /* its strings and arrays are the launcher's until the loop ends */
  driver_opts_parse(argc, argv, &opts);
  int rc = set_up(&d, &opts);
  if (rc != 0)
    return rc;
  uv_run(d.loop, UV_RUN_DEFAULT);
  return verdict(&d, uv_loop_close(d.loop));
}
