/* tl-driver's private header: the records of the run and the functions its files share
 * (docs/cluster.md "The driver's files and layers"). Private to examples/cluster/driver/. */
#ifndef TLC_DRIVER_H
#define TLC_DRIVER_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "codec.h"
#include "conn.h"
#include "driver_opts.h"
#include "launcher.h"
#include "metrics_http.h"
#include "proto.h"
#include "state.h"
#include "taskledger-uv.h"

void die_oom(void);
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
#define ESC_MAX (4 * TL_HOST_MAX + 1) /* an id or a host printed escaped, NUL included */
#define LOSS_KINDS (TL_LOSS_RECOVERY_TIMEOUT + 1) /* tl_loss_kind's values */

/* Failover (--state-dir; docs/cluster.md "Driver failover"). */
/* Tids reserved by one state write beyond the highest launched; a write is asked for when half
 * are used. */
#define TID_BLOCK (UINT64_C(1) << 20)
/* A failed write is logged when none was for this long (the first at once), with the count of
 * those that were not. */
#define RECORD_FAIL_LOG_S 10
#define FALLBACK_TID_GAP                                                                           \
  (UINT64_C(1) << 32)           /* tids skipped when recovery read state.prev: more than           \
                                   one write can have reserved */
#define STATE_BODY_VERSION 3    /* of the driver's record, inside the state file's version */
#define EXECUTOR_RECONNECT_S 60 /* its executors' --reconnect-s with --state-dir (else 0) */
#define RECOVERIES_MAX 64       /* recoveries of a run kept in its record and shown one by one */
#define OPEN_LOSSES_MAX 65536   /* open losses a record keeps at most; more read: bad */

typedef struct driver driver;
typedef struct recovery_rec recovery_rec; /* recovery.c's section */

/* ---------------------------------------------------------------------------------------------
 * Logging (log.c).
 * ------------------------------------------------------------------------------------------- */

/* A kind of edge log line, printed whatever --quiet says (an operator must see an attack), at
 * most EDGE_LOG_PER_S a second; the rest are counted and said in one line. */
typedef struct ratelog {
  uint64_t window;           /* the second (uv_hrtime / 1e9) of the lines being counted */
  uint32_t in_window;        /* lines printed in it */
  uint64_t suppressed;       /* lines not printed since the last one that was */
  uint64_t total_suppressed; /* lines not printed in the whole run */
} ratelog;

typedef struct log_state {
  bool quiet;      /* no log lines but errors */
  ratelog auth;    /* wrong tokens */
  ratelog refused; /* connections refused at once (caps, back-off) */
  ratelog accept;  /* accept errors */
} log_state;

void logf_(driver *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *esc(char *buf, const char *s);
bool edge_log_ok(ratelog *r, const char *what);
void copy_text(char *dst, size_t len, const char *src);

/* ---------------------------------------------------------------------------------------------
 * The phase (phase.c): where the run is, and the requests the files below driver.c make of it.
 * ------------------------------------------------------------------------------------------- */

typedef struct phase_state {
  bool stopping;            /* the run is ending (phase_stop, phase_give_up): nothing new begins,
                               STOP goes out (driver.c's begin_stop) */
  bool closed;              /* everything is closing (phase_close): no more offers */
  bool want_stop;           /* phase_stop: the jobs are over, the executors are to be stopped */
  const char *give_up;      /* phase_give_up's reason (a static string), until driver.c took it */
  bool want_check;          /* phase_check: an executor ended; is recovery over, is the run
                               starved? */
  bool offering;            /* phase_offer: every expected executor registered (or the run was
                               restored): offers are made */
  uint64_t start_ns;        /* uv_hrtime when offers began (again, after a restart) */
  uv_timer_t wake;          /* runs serve at the next turn of the loop */
  void (*serve)(driver *d); /* driver.c's: serves the requests, then finishes the run if it can */
} phase_state;

/* The wake handle on the loop, and driver.c's serve (called at the next turn after a request,
 * once for all those made since). */
void phase_init(driver *d, void (*serve)(driver *d));
/* Requests: each wakes the loop, and serve does the rest. phase_wake asks only whether the run
 * can finish (a connection or a bad client closed); phase_stop says the jobs are over (the run
 * stops now: nothing new begins, and serve sends STOP); phase_give_up ends the run as a failure
 * (why: a static string; the first one given is said); phase_check says an executor ended. */
void phase_wake(driver *d);
void phase_stop(driver *d);
/* Offers begin (every expected executor registered, or a restarted run): from now on the jobs'
 * time counts. */
void phase_offer(driver *d);
void phase_give_up(driver *d, const char *why);
void phase_check(driver *d);
/* For serve: each request once, cleared as it is taken. */
bool phase_take_check(driver *d);
const char *phase_take_give_up(driver *d);
bool phase_take_stop(driver *d);
/* Everything is closing: no request is served again; the wake handle is closed. */
void phase_close(driver *d, uv_close_cb on_closed);

/* ---------------------------------------------------------------------------------------------
 * Links (link.c): a connection, its frames out and its closing.
 * ------------------------------------------------------------------------------------------- */

/* What an executor declared in its REGISTER (conns.c), as given to tl_executor_add: the ledger's
 * grants are indices into it, and the LAUNCH frames name the addresses they point at
 * (offers.c). Allocated only for an executor that declared some. */
typedef struct conn_resources {
  size_t n;                                                   /* resources, 1..TLC_RESOURCES_MAX */
  tl_resource decl[TLC_RESOURCES_MAX];                        /* pointing into the arrays below */
  char names[TLC_RESOURCES_MAX][TL_RESOURCE_NAME_MAX];        /* NUL-terminated */
  const char *addrp[TLC_REGISTER_ADDRESSES_MAX];              /* decl[i].addresses point here */
  char addresses[TLC_REGISTER_ADDRESSES_MAX][TL_ADDRESS_MAX]; /* NUL-terminated */
} conn_resources;

/* One accepted connection; once registered, one executor of the ledger. */
typedef struct conn {
  uv_tcp_t tcp;              /* its socket; data is this record */
  uv_timer_t deadline_timer; /* closes it: if REGISTER does not come in time (edge.c); at the
                                next turn once it overflowed; STOP_GRACE_MS after its executor
                                was lost (link.c) */
  struct driver *d;          /* the driver */
  struct conn *next;         /* the driver's list of connections */
  bool registered;           /* REGISTER passed: id is an executor of the ledger */
  bool gone;                 /* the ledger removed it while connected: told to STOP */
  bool violated;             /* closed for a protocol fault after it registered */
  bool closing;              /* uv_close was called */
  bool released;             /* dynamic allocation released it: decommissioned, sent STOP */
  bool overflowed;           /* it held more than --max-unsent-bytes unsent: not read, nothing
                                more encoded or sent, closed at the next turn (a fault) */
  bool lost;                 /* the ledger lost its executor while it was open: its frames are
                                dropped, and it is closed within STOP_GRACE_MS (conn_lost) */
  bool recovering;           /* registered as an executor the restored ledger holds RECOVERING:
                                RECONCILE must come before anything but HEARTBEAT */
  uint64_t status_frames;    /* STATUS frames read on this connection */
  uint64_t synced;           /* of those, acknowledged durable by the last SYNCED sent */
  bool reconciled;           /* it reconciled with the restored ledger (handle_reconcile) */
  uint64_t status_recorded;  /* of those, read before the body of the write in flight (or the
                                last one) was encoded: its SYNCED covers them */
  bool held;                 /* out holds a release's frames (FORGETs, STOP) that wait for the
                                record that holds the release: nothing is sent until then */
  uint64_t held_until;       /* the body (record_state.seq_encoded) that must be durable */
  uint64_t gate_seq;         /* the body that must be durable before its first launches (it
                                holds the registration); 0 until its first offer */
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
  uint32_t profile;          /* the resource profile it registered with */
  conn_resources *res;       /* the resources it declared; NULL when none */
  tl_reconcile_item *recon;  /* its reconciliation's items so far (RECONCILE frames with more
                                set), from a recovering executor; freed once applied */
  size_t nrecon, recon_cap;  /* used and allocated entries of recon */
  uint64_t recon_named;      /* items its RECONCILE frames named so far: at most
                                TLC_RECONCILE_ITEMS_MAX (handle_reconcile) */
  bool recon_done;           /* its reconciliation ended (more = 0): no RECONCILE may follow */
  uint8_t addr_key[16];      /* its peer address, the key of its auth record (auth_key) */
  char peer[64];             /* its peer address and port, printable: "127.0.0.1:5000" */
  uint32_t floor_running;    /* --null-ledger: attempts the null floor has running on it */
} conn;

/* A connection, for a log line: "of ID (PEER)" once it registered, "from PEER" before (the id
 * escaped). buf holds CONN_NAME_MAX bytes. */
#define CONN_NAME_MAX (ESC_MAX + sizeof(((conn *)0)->peer) + 8)

typedef struct link_state {
  void (*on_close)(conn *c); /* conns.c's conn_closing: what a close means for its executor */
  uint64_t max_unsent;       /* --max-unsent-bytes: a connection holding more is closed */
  uint64_t closed_unsent;    /* connections closed for it (overflowed) */
  uint64_t unsent_peak;      /* the most bytes one connection held unsent */
  conn *list;                /* open connections */
  uint32_t nconns;           /* connections on list (closing ones hold a descriptor too) */
  uint32_t npending;         /* of those, not registered and not closing */
  uint64_t frames_out;       /* frames sent */
  uint64_t kills_sent;       /* KILL frames sent (kill_task) */
  uint64_t forgets_sent;     /* FORGET frames sent */
} link_state;

/* Set-up. */
void link_configure(driver *d, const driver_opts *o);

conn *conn_new(driver *d);
void conn_registered(conn *c);
void conn_dismiss(conn *c, const char *reason);
void conn_lost(driver *d, const char *id);
void close_conn(conn *c, const char *why);
void on_conn_handle_closed(uv_handle_t *h);
const char *conn_name(const conn *c, char *buf);
void send_out(conn *c);
void encode(conn *c, const tlc_msg *msg);
void send_stop(conn *c, const char *reason);

/* ---------------------------------------------------------------------------------------------
 * Kills (kills.c): KILL frames, gathered into few while a reconciliation's are held.
 * ------------------------------------------------------------------------------------------- */

typedef struct kills_state {
  conn *held;                    /* the connection whose kills are gathered; NULL: none */
  uint64_t *tids;                /* the tids gathered, n of cap */
  size_t n, cap;                 /* used and allocated entries of tids */
  bool interrupt;                /* theirs */
  char reason[TLC_TEXT_MAX + 1]; /* theirs */
  uint64_t tids_sent;            /* tids named by KILL frames sent, in all */
} kills_state;

void send_kills(conn *c, const uint64_t *tids, size_t n, bool interrupt, const char *reason);
void kills_hold(driver *d, conn *c);
void kill_tid(driver *d, conn *c, tl_tid tid, bool interrupt, const char *reason);
void kills_release(driver *d);

/* ---------------------------------------------------------------------------------------------
 * Authentication (auth.c): the token and the back-off of wrong ones.
 * ------------------------------------------------------------------------------------------- */

/* One address that sent wrong tokens (auth_failed): IPv4 addresses by themselves, IPv6 ones by
 * their /64, which one host may hold whole. */
typedef struct auth_rec {
  uint8_t key[16];     /* auth_key's */
  uint32_t failures;   /* wrong tokens since it was first seen (or forgotten) */
  uint64_t last_ns;    /* uv_hrtime of the last one */
  uint64_t wait_until; /* connections from it are refused at once until then */
  UT_hash_handle hh;   /* on driver.auth.addrs by key */
} auth_rec;

typedef struct auth_state {
  char token[2 * TOKEN_BYTES + 1]; /* the shared token, NUL-terminated */
  uint64_t auth_failures;          /* REGISTER frames with a wrong token */
  uint64_t auth_addresses;         /* addresses (IPv6: /64s) that sent one, first seen */
  auth_rec *addrs;                 /* uthash by key: AUTH_TRACKED_MAX at most */
  uint32_t nauth;                  /* entries of addrs */
} auth_state;

/* Set-up and tear-down. */
void auth_free(driver *d);

bool token_matches(const char *expected, tlc_view got);
void auth_key(const struct sockaddr_storage *sa, uint8_t key[16]);
auth_rec *auth_find(driver *d, const uint8_t key[16], uint64_t now);
void auth_failed(driver *d, conn *c);
void make_token(driver *d, const char *token_file);

/* ---------------------------------------------------------------------------------------------
 * The record (record.c): the state written for a restart (--state-dir).
 * ------------------------------------------------------------------------------------------- */

/* The write in flight (one at a time): its body is encoded on the loop, then written, fsynced and
 * renamed by state_write on libuv's thread pool (record.c's write_work); the loop reads the
 * result in write_done. The worker touches nothing else. */
typedef struct record_write {
  uv_work_t req;           /* req.data is the driver */
  const char *dir;         /* --state-dir */
  uint64_t reserve;        /* the tid reservation it writes */
  const uint8_t *buf;      /* the body: record_state.spare (fresh) or .body (tids only) */
  size_t len;              /* its bytes */
  bool fresh;              /* a body encoded for it, not the last durable one again */
  uint64_t seq;            /* the body's number (record_state.seq_encoded when encoded) */
  int rc;                  /* state_write's answer */
  uint64_t ns;             /* how long it took, on the worker */
  char why[STATE_WHY_MAX]; /* with rc -1: state_write's sentence */
} record_write;

typedef struct record_state {
  const char *state_dir;      /* --state-dir; NULL: none */
  uint64_t snapshot_ms;       /* --snapshot-ms */
  uv_timer_t state_timer;     /* asks for a record every --snapshot-ms, and at once when due */
  void (*on_durable)(void *); /* launches that waited for a record may go: driver.c sets it
                                (offers.c's cb_revive_offers) */
  tl__wbuf body;              /* the newest durable record's body, for a write of tids only */
  tl__wbuf spare;             /* the next body is encoded here; swapped with body once durable */
  record_write w;             /* the write in flight */
  bool writing;               /* w is on the thread pool */
  bool want;                  /* a fresh record is due once the write in flight ends */
  uint64_t seq_encoded;       /* bodies encoded, the first one 1 */
  uint64_t seq_durable;       /* the number of the newest durable body */
  uint64_t gate_seq;          /* launches wait until seq_durable reaches it: a task set was
                                 submitted that no durable record holds (record_gate) */
  uint64_t tid_reserved;      /* no tid above it is sent before a durable write reserves more */
  uint64_t tid_max;           /* the highest tid launched */
  uint64_t state_writes;      /* records written */
  uint64_t state_reserves;    /* of those, written for a tid reservation with the last body */
  uint64_t state_busy;        /* encodes put off: the ledger had undelivered events */
  uint64_t state_failed;      /* writes that failed */
  uint64_t state_ns;          /* time the thread pool spent writing, in all */
  uint64_t encodes;           /* bodies encoded on the loop */
  uint64_t encode_ns;         /* the loop's time encoding them, in all */
  uint64_t encode_max_ns;     /* the longest */
  uint64_t synced_sent;       /* SYNCED frames sent */
  uint64_t wait_tids;         /* offers put off: their tids would pass the durable reservation */
  uint64_t wait_new;          /* offers put off: a task set or an executor no durable record
                                 holds yet */
  uint64_t wait_since;        /* uv_hrtime of the first offer put off since launches last went;
                                 0: none waits */
  uint64_t wait_ns;           /* how long launches waited, in all */
  uint64_t wait_max_ns;       /* the longest wait */
  uint64_t held_releases;     /* releases whose STOP waited for the record holding them */
  uint64_t unrecorded;        /* launches let go and releases sent with no record holding them:
                                 the write failed (degraded) */
  bool degraded;              /* the last write failed: a crash now recovers an older record */
  uint64_t degraded_since;    /* uv_hrtime of the failure that began it */
  uint64_t degraded_times;    /* times it began */
  uint64_t degraded_ns;       /* time degraded in the episodes that ended */
  uint64_t degraded_failures; /* failed writes of the episode under way (or the last one) */
  bool degraded_logged;       /* a failure of that episode was logged: so is its end */
  uint64_t fail_logged_ns;    /* uv_hrtime of the last failure logged */
  uint64_t fail_unlogged;     /* failures since it that were only counted */
  uint64_t recovered_elapsed; /* ns the run had been offering before the crash */
} record_state;

/* Set-up and tear-down. */
void record_configure(driver *d, const driver_opts *o);
void record_init(driver *d);
void record_stop(driver *d);
void record_close(driver *d, uv_close_cb on_closed);
void record_free(driver *d);
void record_restored(driver *d, uint64_t floor);

int record_first(driver *d);
void hold_for_record(driver *d, conn *c);
void record_gate(driver *d);
bool record_may_launch(driver *d, conn *c, uint32_t slots);
void record_launched(driver *d, conn *c, uint64_t max_tid);
void on_state_timer(uv_timer_t *t);
void state_due(driver *d);
double record_degraded_s(const driver *d);
int read_state_body(driver *d, const state_record *rec, const uint8_t **snap, size_t *snap_len);
void remove_state(driver *d);
/* The wall clock (CLOCK_REALTIME) in ns since the epoch; the run's first start by it; this
 * driver's recovery as the record and the summary show it (a recovered run only). */
uint64_t wall_clock_ns(void);
uint64_t run_start_unix_ns(const driver *d);
void recovery_now(const driver *d, recovery_rec *out);

/* ---------------------------------------------------------------------------------------------
 * Test faults (faults.c): the fault flags and the bad clients.
 * ------------------------------------------------------------------------------------------- */

/* One spawned tl-badclient process (--bad-client). */
typedef struct bad_child {
  uv_process_t process; /* data is this record */
  bad_mode mode;
  bool running;        /* spawned and its handle not yet closed */
  bool exited;         /* the exit callback ran */
  int64_t exit_status; /* as the exit callback gave it */
  int term_signal;     /* likewise */
} bad_child;

typedef struct faults_state {
  uint64_t tasks_finished;        /* task_ended with TL_END_SUCCESS, for the fault flags */
  uint64_t kill_after;            /* --kill-executor-after N (0: none) */
  uint64_t stop_after;            /* --stop-executor-after N (0: none) */
  uint64_t external_kill_after;   /* --external-kill-after N (0: none) */
  uv_timer_t fault;               /* runs the fault a fault flag asks for */
  bool fault_armed;               /* its count was reached: act at exec-1's next RUNNING */
  uv_timer_t resume;              /* SIGCONTs the stopped executor after the heartbeat expiry */
  bad_child bad[MAX_BAD_CLIENTS]; /* --bad-client: nbad of them, spawned once all registered */
  uint32_t nbad;                  /* --bad-client options */
  bool bad_spawned;               /* spawn_bad_clients ran */
  tl_tid exec1_tid;               /* the first tid launched on exec-1: foreign-status's target */
  size_t max_alive;               /* the most executors ALIVE in the ledger, sampled at each
                                                   refusal and at each bad client's exit */
  bool crash_after_release;       /* --crash-in-state-write release[+K]:P: the write that holds
                                          the first release (K more writes after it) kills the driver
                                          (a test's fault) */
  uint64_t crash_release_skip;    /* that K */
  bool crash_release_armed;       /* the first release came: the next write starting arms it */
} faults_state;

/* The seam: set up from the command line; the timers on the loop, and closed. */
void faults_configure(driver *d, const driver_opts *o);
void faults_init(driver *d);
void faults_close(driver *d, uv_close_cb on_closed);
/* The hooks, where the main path meets a fault. A task succeeded (the fault flags count them);
 * a STATUS frame of c was applied (running: it reported a task RUNNING); c was sent launches,
 * the first of tid first; the heartbeat of executor id expired; an executor was released; a
 * record's write is about to start (on the loop, none in flight);
 * every expected executor registered (offers begin); a connection or an update was refused;
 * the run stops; the run stops by force. */
void faults_task_finished(driver *d);
void faults_status(driver *d, const conn *c, bool running);
void faults_launched(driver *d, const conn *c, tl_tid first);
void faults_heartbeat_expired(driver *d, const char *id);
void faults_released(driver *d);
void faults_write_starting(driver *d);
void faults_all_registered(driver *d);
void faults_refused(driver *d);
void faults_stopping(driver *d);
void faults_force_stop(driver *d);
/* Whether a fault's process (a bad client) still runs: the run waits for it to end. */
bool faults_busy(const driver *d);
/* The bad clients' verdict line, when there are any: whether each was refused as it should
 * have been. true when there are none. */
bool faults_verdict(const driver *d);

/* ---------------------------------------------------------------------------------------------
 * Losses (losses.c): every lost executor, reported and recorded.
 * ------------------------------------------------------------------------------------------- */

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
  UT_hash_handle hh; /* on driver.losses.open_losses by id, while no real reason came */
} loss_rec;

typedef struct losses_state {
  bool reporting;        /* report_loss is in tl_executor_lost: the events are its report's */
  detection detecting;   /* how the loss it reports began */
  const char *source;    /* where its real reason came from (NULL for a first phase) */
  loss_rec *open_losses; /* uthash by id; at most one per live executor */
  loss_rec lost_detail[LOST_DETAIL_MAX];  /* a ring: the last ones that ended */
  uint64_t lost_ended;                    /* records put in the ring: its next slot mod MAX */
  uint64_t lost_total;                    /* loss records made (lost executors) */
  uint64_t lost_by_detection[DETECTED_N]; /* of those, by how the loss began */
  uint64_t lost_by_kind[LOSS_KINDS];      /* the real reasons that came, by kind */
  uint64_t reports[LOSS_KINDS];           /* reports by kind: first phases and real ones */
  uint64_t executors_released; /* executor_lost events for releases (TL_LOSS_DECOMMISSIONED) */
  uint64_t executors_lost;     /* executor_lost events */
  uint64_t recovery_timeouts;  /* of those, lost to the recovery timeout */
} losses_state;

/* Set-up and tear-down. */
void losses_free(driver *d);

extern const char *const loss_kind_names[LOSS_KINDS];
extern const char *const phase_names[LOSS_KINDS];
void report_loss(driver *d, const char *id, const tl_loss_reason *reason, detection detected_by,
                 const char *source);
void remove_released(driver *d, const char *id);
bool in_ledger(driver *d, const char *id, tl_executor_state *state);
void cb_executor_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *reason);
void cb_executor_removed(void *ud, const char *id, void *executor_ud, const tl_loss_reason *reason);
size_t shown_losses(driver *d, const loss_rec ***shown);
extern const char *const detection_names[DETECTED_N];

/* ---------------------------------------------------------------------------------------------
 * Jobs (jobs.c): the jobs of the command line and their stages.
 * ------------------------------------------------------------------------------------------- */

/* One stage of a job: one task set of ntasks tasks of one kind. */
typedef struct stage {
  struct job *job;             /* the job it belongs to */
  char kind[TLC_KIND_MAX + 1]; /* "noop", "sleep:5", ...: the tasks' kind and the binary */
  uint32_t ntasks;             /* tasks in its task set */
  uint32_t profile;            /* its task set's resource profile */
  uint32_t nresources;         /* what each task asks for beyond a core: requests[0 .. n) */
  resource_spec resources[STAGE_RESOURCES_MAX];
  char pool[POOLS_XML_NAME_MAX + 1]; /* its task set's pool (%POOL); "" for "default" */
  tl_taskset_id taskset;     /* as tl_submit gave it; 0 until submitted */
  uint32_t succeeded;        /* task_ended with TL_END_SUCCESS */
  uint32_t failed_attempts;  /* task_ended with anything else */
  uint32_t counted_failures; /* of those, counted toward max_task_failures */
  uint32_t killed;           /* of those, ended TL_END_KILLED (--kill-on-job-failure) */
  uint32_t zombie_finished;  /* attempts that succeeded after taskset_failed (zombie tasks) */
  bool failed;               /* taskset_failed arrived */
  bool released;             /* taskset_released arrived */
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

typedef struct jobs_state {
  uint64_t end_ns;        /* when the last job's last task set was released */
  job list[MAX_JOBS];     /* the jobs of the command line */
  size_t njobs;           /* used entries of jobs */
  bool kill_on_failure;   /* --kill-on-job-failure */
  bool has_crash;         /* some stage runs `crash` tasks: exit 42 is expected */
  uint64_t total_tasks;   /* of every stage of every job */
  size_t res_names;       /* when the last job ended: resource names the executors declared */
  uint64_t res_addresses; /* their addresses */
  uint64_t res_held;      /* of those, held by some attempt (none, with every task ended) */
  uint64_t res_used;      /* what attempts held, in TL_SHARE_UNITs */
} jobs_state;

/* Set-up and tear-down. */
void jobs_configure(driver *d, const driver_opts *o);

int submit_stage(driver *d, job *j, uint32_t k);
void cb_task_ended(void *ud, const tl_task_info *task, const tl_task_end *end);
void cb_kill_task(void *ud, tl_tid tid, const char *executor_id, void *executor_ud, bool interrupt,
                  const char *reason);
void cb_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason);
void cb_taskset_released(void *ud, const tl_taskset_info *ts, void *payload);
bool cb_taskset_restored(void *ud, const tl_taskset_info *ts, void **payload);

/* ---------------------------------------------------------------------------------------------
 * The null floor (nullfloor.c): --bench --null-ledger, the least that could run the bench's job
 * in place of the ledger on its hot path (a FIFO of pending indexes, a map of running tids).
 * ------------------------------------------------------------------------------------------- */

typedef struct nullfloor_run {
  tl_tid tid;     /* a running attempt; 0: an empty slot of the map */
  uint32_t index; /* its task */
  conn *c;        /* the connection that runs it */
} nullfloor_run;

typedef struct nullfloor_state {
  bool on;            /* --null-ledger */
  stage *st;          /* the bench's one stage; NULL once released (or never submitted) */
  stage_binary *bin;  /* its payload, until the release hands it to cb_taskset_released */
  uint32_t *fifo;     /* pending task indexes: a ring of st->ntasks entries */
  uint32_t head;      /* the ring's first pending entry */
  uint32_t npending;  /* its pending entries */
  nullfloor_run *map; /* running attempts by tid: open addressing, map_cap (a power of 2) */
  size_t map_cap;     /* slots of map; at most half are used */
  size_t nrunning;    /* used slots of map */
  tl_tid next_tid;    /* the last tid given: launches so far */
} nullfloor_state;

void nullfloor_configure(driver *d, const driver_opts *o);
void nullfloor_submit(driver *d);
size_t nullfloor_offer(driver *d, conn *c, tl_launch *out, size_t cap);
int nullfloor_updates(driver *d, conn *c, const tl_tid *tids, const tl_update *ups, size_t n,
                      int *results);
void nullfloor_closing(driver *d, conn *c);
void nullfloor_print(const driver *d);
void nullfloor_free(driver *d);

/* ---------------------------------------------------------------------------------------------
 * Recovery (recovery.c): a run restarted from its record.
 * ------------------------------------------------------------------------------------------- */

/* One recovery of the run (a driver restarted from its record), for the summary: this
 * driver's, made from its counters when a record is written or the summary printed
 * (recovery_now), and those of the drivers before it, kept in the record. */
struct recovery_rec {
  char from[16];                   /* the file read: "state", "state.tmp" or "state.prev" */
  bool done;                       /* every executor to reconcile reconciled or lost */
  uint64_t start_unix_ns;          /* when the driver restarted (CLOCK_REALTIME) */
  uint64_t took_ns;                /* done: how long it took; else how long it had run */
  uint32_t executors_to_reconcile; /* RECOVERING after the restore */
  uint64_t reconciled;             /* executors reconciled */
  uint64_t tids_named;             /* tids their RECONCILE named */
  uint64_t unknown_killed;         /* of those, unknown to the restored ledger: KILL sent */
  uint64_t attempts_lost;          /* attempts lost to the outage (not named): run again */
  uint64_t recovery_timeouts;      /* executors lost to the recovery timeout */
  uint64_t stray_reconciles;       /* RECONCILE from executors that were not recovering */
  uint64_t stray_kills;            /* their tids, each sent a KILL */
  uint64_t updates_unknown;        /* updates for tids the restored ledger did not hold */
  uint32_t launcher_adopted;       /* executors the launcher took back by their handles */
};

typedef struct recovery_state {
  int lock_fd;                          /* --state-dir: DIR/lock, locked until the process exits
                                           (state_lock) */
  bool recovered;                       /* this run began from a previous run's record */
  bool fell_back;                       /* and state was missing or bad */
  const char *state_file;               /* the file it read: "state", "state.tmp" or "state.prev" */
  char fell_back_why[STATE_WHY_MAX];    /* why */
  uint64_t recover_start_ns;            /* uv_hrtime at the restart */
  uint64_t recover_start_unix_ns;       /* and the wall clock's time (CLOCK_REALTIME) */
  uint64_t recover_end_ns;              /* when no executor was RECOVERING any more; 0 until then */
  uint32_t recovering_at_start;         /* executors RECOVERING after the restore */
  uint64_t run_start_unix_ns;           /* the run's first start, from the record; 0: this
                                           driver's start (summary_state.start_unix_ns) */
  recovery_rec earlier[RECOVERIES_MAX]; /* the recoveries before this driver's, from the record:
                                           the last RECOVERIES_MAX, oldest first */
  uint32_t nearlier;                    /* used entries of earlier */
  uint64_t earlier_total;               /* recoveries before this driver's, in all */
} recovery_state;

void check_recovery(driver *d);
int recover_state(driver *d, const tl_config *cfg, const tl_callbacks *cb, bool *restored);

/* ---------------------------------------------------------------------------------------------
 * Scaling (scaling.c): the executors the launcher starts, and dynamic allocation.
 * ------------------------------------------------------------------------------------------- */

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
  uint32_t profile;   /* the resource profile it was started for (--executor-profile; 0) */
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

typedef struct scaling_state {
  uint64_t tick_ms;            /* dynamic allocation's check runs this often */
  uint32_t launcher_adopted;   /* executors of the crashed run its launcher took back */
  uv_timer_t alloc_timer;      /* dynamic allocation's periodic check */
  exec_rec *execs;             /* MAX_STARTED records: nexecs asked for, in order */
  uint32_t nexecs;             /* used entries of execs; execs[0] is exec-1 */
  uint32_t started;            /* of those, started (ops->start returned 0) */
  uint32_t released;           /* of those, released by the driver (dynamic allocation) */
  uint32_t forced;             /* of those, stopped by force after the grace period */
  uint32_t most_active;        /* the most executors active at once (started, not ended,
                                             not released) */
  bool dynamic;                /* on */
  uint32_t min_executors;      /* never release below this many active */
  uint32_t max_executors;      /* never start beyond this many active */
  uint64_t backlog_ns;         /* tasks pending this long: request more executors */
  uint64_t idle_ns;            /* an executor that ran nothing this long is released */
  uint64_t backlog_since;      /* uv_hrtime since tasks have been pending; 0: none pend */
  uint64_t next_request;       /* uv_hrtime of the next request while the backlog lasts */
  uint32_t to_add;             /* executors the next request adds: 1, 2, 4, ... */
  const profile_shape *shapes; /* --executor-profile: the shapes of profiles 1.. */
  size_t nshapes;              /* entries of shapes */
  uint32_t start_profile;      /* the profile start_executors starts executors of */
  tl_demand demand;            /* the last demand_changed event's totals (zeros before one) */
} scaling_state;

/* Set-up and tear-down. */
void scaling_configure(driver *d, const driver_opts *o);
/* The ledger's demand events, set with dynamic allocation only: the totals kept for the
 * periodic check, and the unschedulable task sets logged. */
void cb_demand_changed(void *ud, const tl_demand *demand);
void cb_taskset_unschedulable(void *ud, const tl_taskset_info *ts, const char *reason);
void cb_taskset_schedulable(void *ud, const tl_taskset_info *ts);
void scaling_init(driver *d);
void scaling_start(driver *d);
void adopt_executors(driver *d);
void scaling_force_stop(driver *d);
void scaling_close(driver *d, uv_close_cb on_closed);
void scaling_free(driver *d);

exec_rec *find_exec(driver *d, const char *id);
uint32_t active_executors(driver *d);
void check_starved(driver *d);
void on_end(void *ud, const launcher_end *end);
uint32_t start_executors(driver *d, uint32_t n);
const char *const *scaling_executor_args(void *ud, const char *executor_id, size_t *n);
uint32_t scaling_executor_gpus(void *ud, const char *executor_id);
void on_alloc_tick(uv_timer_t *t);

/* ---------------------------------------------------------------------------------------------
 * Offers (offers.c): offer rounds and the LAUNCH frames they make.
 * ------------------------------------------------------------------------------------------- */

typedef struct offers_state {
  uv_idle_t revive;       /* runs an offer round for every executor when revive_offers came */
  uint64_t launched;      /* launches sent */
  uint64_t retries;       /* of those, attempts after the first of their task */
  uint64_t binaries_sent; /* TASKSET_BINARY frames sent */
  tl_launch *launch_buf;  /* tl_resource_offers' output, launch_cap entries */
  size_t launch_cap;      /* the most cores an executor has */
  tlc_launch_item *items; /* a LAUNCH frame's items, launch_cap entries */
  tl_grant *grants;       /* the round's grants, grants_cap entries (launch_cap x
                             TLC_GRANTS_MAX once an executor declared resources; NULL before) */
  tlc_grant *wire_grants; /* a LAUNCH frame's grants by name, as many */
  size_t grants_cap;      /* entries of grants and wire_grants */
  uint64_t granted;       /* addresses granted to launches sent (a share counts one) */
  uint64_t held_peak;     /* the most addresses held at once (any share of one counts it),
                             seen at the offer rounds */
  bool has_resources;     /* some executor declared resources */
} offers_state;

/* Set-up and tear-down. */
void offers_init(driver *d);
void offers_close(driver *d, uv_close_cb on_closed);
void offers_reserve(driver *d, uint32_t slots);
void offers_free(driver *d);

void offer(driver *d, conn *c);
void cb_revive_offers(void *ud);

/* ---------------------------------------------------------------------------------------------
 * The executors' connections (conns.c): their frames read and applied.
 * ------------------------------------------------------------------------------------------- */

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

typedef struct conns_state {
  uint32_t registered;            /* executors registered so far */
  uint64_t refused_updates;       /* tl_status_update errors */
  uint64_t gone_frames;           /* frames of an executor the ledger lost or removed
                                     (TL_EGONE): each dropped unapplied */
  uint64_t refused_conns;         /* connections closed for a protocol or registration fault */
  uint64_t refused_token;         /* of those: REGISTER with a wrong token */
  uint64_t refused_dup;           /* REGISTER refused by tl_executor_add (TL_EEXIST) */
  uint64_t refused_resource;      /* REGISTER refused by tl_executor_add (TL_ERESOURCE) */
  uint64_t refused_host;          /* REGISTER of a recovering executor's id from another host */
  uint64_t refused_timeout;       /* no REGISTER within the registration timeout */
  uint64_t refused_frame[16];     /* a frame the decoder refused, by -TLC_E* code */
  uint64_t refused_owner;         /* status updates refused with TL_EOWNER */
  uint64_t refused_early;         /* a frame before REGISTER */
  uint64_t refused_second;        /* a second REGISTER */
  uint64_t refused_unexpected;    /* a message an executor may not send (LAUNCH, KILL, ...) */
  uint64_t refused_reconcile_max; /* a reconciliation of more than TLC_RECONCILE_ITEMS_MAX */
  uint64_t violations;            /* of the refused: registered executors, removed for it */
  uint64_t registered_cores;      /* cores of every registration, summed */
  uint64_t frames_in;             /* frames received */
  exec_report reports[REPORT_DETAIL_MAX]; /* a ring */
  uint64_t nreports;                      /* reports kept: the ring's next slot mod MAX */
  uint64_t reconciled;                    /* RECONCILE frames of recovering executors */
  uint64_t reconciled_tids;               /* tids they named */
  uint64_t reconcile_unknown;             /* of those, unknown to the restored ledger: KILL sent */
  uint64_t reconcile_lost;                /* attempts held on them they did not name: run again */
  uint64_t reconcile_adopted; /* attempts they named that the image did not hold, adopted
                                 (tl_executor_reconcile_items) */
  uint64_t stray_reconciles;  /* RECONCILE from an executor that was not recovering */
  uint64_t stray_kills;       /* its tids, each named by a KILL */
  uint64_t reconcile_max_ns;  /* the longest reconciliation applied (ledger call and
                                 KILLs), as the loop saw it */
  uint64_t
      resent_unknown; /* updates of reconciled executors for tids the restored ledger
                                   did not hold (their ends, held and sent again): not refusals */
  recon_rec recons[REPORT_DETAIL_MAX]; /* the first REPORT_DETAIL_MAX reconciliations */
  uint8_t read_buf[READ_CHUNK];        /* every connection's reads: each is decoded at once */
} conns_state;

void conn_closing(conn *c);
void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
void on_register_timeout(uv_timer_t *t);

/* ---------------------------------------------------------------------------------------------
 * The edge (edge.c): listening, accepting, the limits, /metrics.
 * ------------------------------------------------------------------------------------------- */

typedef struct edge_state {
  uv_poll_t server;             /* the listening socket's readiness (accept_ready) */
  int server_fd;                /* the listening socket; -1 once closed */
  int spare_fd;                 /* /dev/null, held to be closed when accept fails for lack of
                                                  descriptors (accept_ready); -1 when none could be opened */
  metrics_http *metrics;        /* --metrics-port: GET /metrics, until maybe_finish */
  const char *listen_host;      /* the address listened on (--listen) */
  const char *connect_host;     /* the address executors connect to (--advertise) */
  int port;                     /* the port listened on */
  uint64_t register_timeout_ms; /* --register-timeout-ms */
  uint32_t max_pending;         /* --max-pending-connections */
  uint32_t max_conns;           /* --max-connections */
  bool server_closed;           /* the listening socket is closing: nothing more is accepted */
  uint64_t evicted_pending;     /* waiting connections closed for a newer one (the oldest) */
  uint64_t refused_conn_cap;    /* connections refused at once: --max-connections open */
  uint64_t refused_backoff;     /* connections refused at once: their address must wait */
  uint64_t accept_emfile;       /* accepts that failed: EMFILE (the process's descriptors) */
  uint64_t accept_enfile;       /* ENFILE (the system's) */
  uint64_t accept_other;        /* any other accept error */
} edge_state;

/* Set-up and tear-down. */
void edge_configure(driver *d, const driver_opts *o);
void edge_close(driver *d);

void close_server(driver *d);
void warn_nofile(const driver *d);
int listen_on(driver *d, const char *host, const char *advertise, bool *is_v6);
int start_metrics(driver *d, int metrics_port, bool v6);

/* ---------------------------------------------------------------------------------------------
 * The summary (summary.c): the progress line and what the run says at its end.
 * ------------------------------------------------------------------------------------------- */

typedef struct summary_state {
  uint64_t start_unix_ns;    /* when this driver started (CLOCK_REALTIME) */
  uint64_t start_ns;         /* and uv_hrtime then */
  const char *summary_json;  /* --summary-json: the file to write */
  bool progress;             /* on */
  bool progress_tty;         /* stderr is a terminal: rewrite one line */
  uint64_t progress_ms;      /* its period */
  uv_timer_t progress_timer; /* prints it */
  uint64_t progress_done;    /* tasks done at the last line */
  uint64_t progress_ns;      /* the time of the last line */
} summary_state;

/* Set-up and tear-down. */
void summary_configure(driver *d, const driver_opts *o);
void summary_init(driver *d);
void summary_close(driver *d, uv_close_cb on_closed);

void print_recovery(const driver *d);
void on_progress(uv_timer_t *t);
void end_progress(driver *d);
int write_summary_json(driver *d, const char *path, bool ok, const tl_stats *st, uint64_t tasks,
                       uint32_t jobs_succeeded);
bool print_jobs(const driver *d, uint64_t *tasks, uint32_t *jobs_succeeded);
bool print_executors(const driver *d);
bool print_allocation(const driver *d);
void print_losses(driver *d, const tl_stats *st);
void print_edge(const driver *d);
void print_ledger(const driver *d, const tl_stats *st, int check, const char *why);

/* ---------------------------------------------------------------------------------------------
 * The run (driver.c): the loop, the ledger, the launcher, the run's shape and its verdict.
 * ------------------------------------------------------------------------------------------- */

typedef struct run_state {
  uv_loop_t *loop;               /* the one loop */
  tl_scheduler *s;               /* the ledger */
  tl_uv *uv;                     /* its libuv driver, until tl_uv_stop */
  uv_timer_t deadline;           /* gives up after --timeout-s */
  uv_signal_t sigint;            /* SIGINT: stop the executors and give up */
  uv_signal_t sigterm;           /* SIGTERM: likewise */
  uv_timer_t grace;              /* STOP_GRACE_MS after STOP: stop_all what has not ended */
  const launcher_ops *ops;       /* --launcher */
  void *launcher;                /* its state; NULL once closed */
  launcher_config lcfg;          /* as given to ops->create */
  const char *executor_path;     /* the tl-executor binary */
  uint32_t nexecutors;           /* executors to start first (--executors) */
  uint32_t accept;               /* --accept: executors started elsewhere to wait for */
  uint32_t cores;                /* cores each registers with */
  uint32_t queue;                /* --queue: task slots in the ledger beyond each one's cores */
  uint64_t heartbeat_ms;         /* the executors' heartbeat period */
  uint32_t active_at_end;        /* active when the jobs ended */
  bool stop_sent;                /* begin_stop ran: STOP went out to every executor */
  bool gave_up;                  /* the deadline or a signal ended the run */
  bool expect_failure;           /* --expect-job-failure */
  uint64_t expect_losses;        /* --expect-losses N: executors lost (UINT64_MAX: any) */
  uint64_t heartbeat_timeout_ms; /* --heartbeat-timeout-ms */
  uint64_t unforgotten;          /* binaries an executor still held at STOP (a bug) */
} run_state;

/* The driver: one record per file above, each written by its file. */
struct driver {
  log_state log;
  phase_state phase;
  link_state link;
  kills_state kills;
  auth_state auth;
  record_state record;
  faults_state faults;
  losses_state losses;
  jobs_state jobs;
  nullfloor_state nullfloor;
  recovery_state recovery;
  scaling_state scaling;
  offers_state offers;
  conns_state conns;
  edge_state edge;
  summary_state summary;
  run_state run;
};

#endif /* TLC_DRIVER_H */
