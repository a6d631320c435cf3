/* tl-executor: one executor process of the cluster example (docs/cluster.md). It connects to
 * tl-driver over TCP, registers, heartbeats, caches task binaries by task set id and runs the
 * built-in task kinds the driver launches, reporting their ends in batched STATUS frames. It
 * never runs more than --cores tasks at once: launches beyond that wait in a FIFO queue until a
 * sleeping task ends (the driver's --queue). One libuv loop, one thread.
 *
 *   TL_CLUSTER_TOKEN=... tl-executor --port PORT [--host ADDR] [--id ID] [--cores N]
 *                                    [--heartbeat-ms MS] [--token-file PATH]
 *                                    [--reconnect-s S] [--profile N]
 *                                    [--resource NAME=ADDR[,ADDR]...]...
 *                                    [--discovery-timeout-ms MS]
 *                                    [--resource-discovery SCRIPT]... [--task-command PATH]
 *
 * Resources (docs/cluster.md "Resources", resources.c): REGISTER declares the resources of each
 * --resource and of each discovery script's output, and the --profile; each launched task holds
 * the addresses its LAUNCH item grants it while it runs. A task of kind `exec:ARG` runs
 * `--task-command ARG` as a child process holding its core until it exits (0: FINISHED, else
 * FAILED; KILL sends it SIGKILL), with TL_RESOURCE_<NAME> and, for `gpu`, CUDA_VISIBLE_DEVICES
 * set to the addresses it holds, and TL_EXECUTOR_ID, TL_TASK_TID, TL_TASK_INDEX and
 * TL_TASK_ATTEMPT. An executor never lets its running tasks hold more of an address than there
 * is (a whole address held by one task alone, shares summing to at most one): a launch that
 * would is the driver's bug, and it exits 5.
 *
 * When the connection drops without a STOP (the driver died: docs/cluster.md "Driver
 * failover"), its tasks run on and it reconnects, with a back-off from RECONNECT_FIRST_MS
 * doubling to RECONNECT_MAX_MS, for up to --reconnect-s seconds (60; 0: it exits at once, as
 * before). Back, it sends REGISTER, RECONCILE (every attempt it runs, queues, or holds an end of,
 * with its task set, index, attempt number and flags, in as many frames as it takes) and the ends
 * it holds, as STATUS. It holds every end it reported until the driver's SYNCED says a durable
 * record covers the frame that carried it (at most RETAINED_MAX, the oldest dropped first). When
 * the time is up, it stops its tasks and exits 1.
 *
 * Fencing (docs/cluster.md "Fencing"): the driver's first frame on a connection is EPOCH. The
 * executor keeps the highest epoch it has seen, over every connection, and refuses a driver of a
 * lower one: it logs it, counts it, closes the connection and reconnects as after a drop (a
 * newer driver may take the address), never acting on a frame of that driver. Any other frame
 * before EPOCH is the driver's fault: it exits 1.
 *
 * ADDR is the driver's IPv4 or IPv6 address (127.0.0.1). The token comes from --token-file (its
 * first line) or TL_CLUSTER_TOKEN, never from the command line, where ps would show it.
 *
 * Exit status: 0 after STOP, 1 when the connection closed or broke without one and could not be
 * made again within --reconnect-s (or a bad frame came, or a frame before EPOCH, or more
 * launches than it may hold: HELD_MAX), 2 for bad
 * arguments (a token shorter than 16 bytes included), 3 if it ever ran more than --cores tasks
 * at once (a bug the queue exists to rule out; the tests depend on this check), 4 if the driver
 * ever sent it the binary of a task set it held already (materialised twice: the driver's bug,
 * which its verdict sees in this exit status rather than trusting a count the executor reports),
 * 5 if a task was granted more of an address than its running tasks left free (the same kind of
 * check, for resources), 42 for a `crash` task. A bad --resource or a discovery script that
 * fails, prints too much, takes too long or prints no valid resource is a bad argument (2).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "codec.h"
#include "conn.h"
#include "proto.h"
#include "resources.h"

extern char **environ;

#define READ_CHUNK 65536       /* bytes of the connection's read buffer */
#define STATUS_FLUSH 16384     /* updates in one STATUS frame at most (well under TLC_FRAME_MAX) */
#define CRASH_EXIT_CODE 42     /* the exit status of a `crash` task */
#define OVERCOMMIT_EXIT_CODE 3 /* the exit status when more tasks ran at once than cores */
#define TWICE_EXIT_CODE 4      /* the exit status when a binary it held was sent again */
#define GRANT_EXIT_CODE 5      /* the exit status when a task was granted what others hold */
#define TOKEN_MIN 16           /* bytes of the token at least, as tl-driver wants */
#define RESULT_BYTES 8         /* a task's result: a little-endian u64 */
#define RETAINED_MAX 65536     /* ends held for a driver that may have to be told them again */
#define RECONNECT_FIRST_MS 100 /* the first reconnection comes this long after the drop */
#define RECONNECT_MAX_MS 2000  /* each wait doubles, up to this */
/* Attempts running or queued at most: a launch beyond is the driver's fault (exit 1). With the
 * ends held, every attempt a RECONCILE may have to name fits TLC_RECONCILE_ITEMS_MAX. */
#define HELD_MAX (TLC_RECONCILE_ITEMS_MAX - RETAINED_MAX)
_Static_assert(HELD_MAX >= TLC_CORES_MAX + 4096,
               "running and queued: cores + the driver's --queue");

/* What an attempt is, as its LAUNCH said: RECONCILE names it so. */
typedef struct task_ref {
  uint64_t tid;        /* the attempt */
  uint64_t taskset_id; /* its task set */
  uint32_t index;      /* its index there */
  uint32_t attempt;    /* the attempt number of that index */
  uint8_t flags;       /* TLC_LAUNCH_* of its LAUNCH item */
} task_ref;

/* A task binary received by TASKSET_BINARY, cached for the task set's launches. */
typedef struct cached_binary {
  uint64_t taskset_id; /* the task set it belongs to */
  uint64_t conn_no;    /* the connection it came on (executor.conn_no) */
  uint8_t *bytes;      /* owned; NULL when len is 0 */
  size_t len;          /* its size */
} cached_binary;

/* A finished task's update waiting for the end of the loop iteration. */
typedef struct pending_status {
  uint64_t tid;                 /* the attempt */
  uint8_t state;                /* a tlc_task_state */
  uint8_t result[RESULT_BYTES]; /* for FINISHED */
  const char *text;             /* static: why it failed, or "" */
} pending_status;

/* An end reported and not yet acknowledged by the driver's SYNCED. */
typedef struct retained_end {
  task_ref task;                /* the attempt */
  uint8_t state;                /* FINISHED, FAILED or KILLED */
  uint8_t result[RESULT_BYTES]; /* for FINISHED */
  const char *text;             /* static */
  uint64_t frame;               /* the STATUS frame of this connection that carried it; 0: not
                                   sent on it yet */
} retained_end;

/* A task holding its core over time: a `sleep:MS` task waiting on its timer, or an `exec:ARG`
 * task's process. */
typedef struct sleeping_task {
  uv_timer_t timer;                 /* sleep: fires when it is done; its data is this record */
  uv_process_t process;             /* exec: the child; its data is this record */
  bool proc;                        /* an exec task: process, not timer */
  bool killed;                      /* exec: KILL sent it SIGKILL; KILLED once it exits */
  task_ref task;                    /* the attempt; its index is the result */
  res_grant grants[TLC_GRANTS_MAX]; /* the addresses it holds */
  uint8_t ngrants;
  struct sleeping_task *next; /* the executor's list of sleeping tasks */
} sleeping_task;

/* A launch waiting for a core: a copy of its LAUNCH item, whose frame is not kept. */
typedef struct queued_task {
  task_ref task;                    /* the attempt, and whose binary it runs */
  uint8_t kind[TLC_KIND_MAX];       /* kind_len bytes, not NUL-terminated, as in the LAUNCH item */
  size_t kind_len;                  /* 1..TLC_KIND_MAX */
  res_grant grants[TLC_GRANTS_MAX]; /* the addresses its LAUNCH item granted */
  uint8_t ngrants;
  struct queued_task *next; /* the next one to start, NULL for the newest */
} queued_task;

/* The executor: its connection, its cache and its batch of updates. */
typedef struct executor {
  uv_loop_t *loop;              /* the one loop */
  uv_tcp_t conn;                /* the connection to the driver */
  bool conn_open;               /* conn is initialised and not closed */
  uv_connect_t connect_req;     /* its connect request */
  struct sockaddr_storage addr; /* the driver's address */
  uint64_t reconnect_ms;        /* --reconnect-s, in ms; 0: never */
  uv_timer_t reconnect;         /* the next try while the connection is down */
  bool down;                    /* the connection dropped without STOP: reconnecting */
  uint64_t down_since;          /* uv_now of the drop */
  uint64_t backoff_ms;          /* the wait before the next try */
  uint64_t conn_no;             /* connections made so far (1 for the first) */
  uint64_t driver_epoch;        /* the highest EPOCH seen, over every connection; 0: none yet */
  bool got_epoch;               /* this connection's driver sent its EPOCH */
  uint64_t stale_drivers;       /* drivers refused: their EPOCH was below driver_epoch */
  uint64_t reconnects;          /* of those, reconnections */
  uint64_t started;             /* tasks started, over every connection */
  uint64_t status_frames;       /* STATUS frames sent on this connection */
  retained_end *retained;       /* a ring of RETAINED_MAX at most, oldest at retained_head */
  size_t retained_head, nretained, retained_cap;
  size_t retained_sent;  /* of those, from the oldest, sent on this connection (frame != 0):
                            a prefix, since ends are sent in the order they are reported */
  uint64_t ends_resent;  /* ends sent again after a reconnection */
  uint64_t ends_dropped; /* ends dropped unacknowledged from a full ring */
  uv_timer_t heartbeat;  /* every heartbeat_ms once registered */
  uv_prepare_t flush;    /* sends the updates of the last iteration before polling */
  bool connected;        /* the connection was made */
  bool closing;          /* everything is being closed */
  bool crashing;         /* a `crash` task ran: exit once the writes are out */
  int exit_code;         /* 0 after STOP, 1 otherwise */
  const char *id;        /* as registered */
  const char *token;     /* from --token-file or TL_CLUSTER_TOKEN ("" if neither) */
  char hostname[TLC_HOST_MAX + 1]; /* this machine's name, sent in REGISTER */
  uint32_t cores;                  /* as registered */
  uint32_t profile;                /* --profile, as registered */
  res_set resources;               /* --resource and --resource-discovery, as registered */
  const char *task_command;        /* --task-command: what an exec task runs; NULL: none */
  uint64_t bad_grants;             /* launches whose grants named what it did not declare */
  uint32_t dying;                  /* exec tasks sent SIGKILL, not yet exited: they still hold
                                      their core and addresses */
  uint64_t waited_dying;           /* launches that waited for them */
  uint64_t heartbeat_ms;           /* the heartbeat period */
  uint64_t heartbeat_seq;          /* heartbeats sent */
  uint64_t binaries;               /* task binaries materialised since start */
  uint64_t twice;                  /* of those, of a task set whose binary it held already, sent on
                                      the connection that sent it (a new connection's driver
                                      cannot know what the one before sent) */
  uint64_t forgotten;              /* of those, dropped on FORGET */
  cached_binary *cache;            /* ncache of them, by arrival */
  size_t ncache, cache_cap;        /* used and allocated entries of cache */
  pending_status *pending;         /* updates not yet sent */
  size_t npending, pending_cap;    /* used and allocated entries of pending */
  sleeping_task *sleeping;         /* tasks waiting on a timer */
  uint32_t running;                /* tasks holding a core: the sleeping ones, plus one while an
                                      inline task runs; never above cores (else exit 3) */
  uint32_t running_peak;           /* the most running at once */
  queued_task *queue_head;         /* launches waiting for a core, oldest first; NULL when none */
  queued_task *queue_tail;         /* the newest of them; NULL when none */
  uint32_t queued;                 /* tasks in the queue */
  uint32_t queued_peak;            /* the most in the queue at once */
  uint64_t queued_total;           /* launches that waited in the queue */
  tlc_decoder decoder;             /* the driver's frames */
  tlc_buf out;                     /* frames encoded and not yet handed to uv_write */
  uint8_t read_buf[READ_CHUNK];    /* the read buffer, reused by every read */
} executor;

static void die_oom(void) {
  fprintf(stderr, "tl-executor: out of memory\n");
  exit(1);
}

static void on_closed_handle(uv_handle_t *h) { (void)h; }

static void on_sleeping_closed(uv_handle_t *h) { free(h->data); }

static uv_handle_t *sleeping_handle(sleeping_task *t) {
  return t->proc ? (uv_handle_t *)&t->process : (uv_handle_t *)&t->timer;
}

/* Closes every handle; uv_run then returns. exit_code says why. */
static void shut_down(executor *ex, int exit_code) {
  if (ex->closing)
    return;
  ex->closing = true;
  ex->exit_code = exit_code;
  uv_close((uv_handle_t *)&ex->heartbeat, on_closed_handle);
  uv_close((uv_handle_t *)&ex->flush, on_closed_handle);
  uv_close((uv_handle_t *)&ex->reconnect, on_closed_handle);
  if (ex->conn_open)
    uv_close((uv_handle_t *)&ex->conn, on_closed_handle);
  ex->conn_open = false;
  for (sleeping_task *t = ex->sleeping; t; t = t->next) {
    if (t->proc)
      uv_process_kill(&t->process, SIGKILL);
    uv_close(sleeping_handle(t), on_sleeping_closed);
  }
  ex->sleeping = NULL;
  while (ex->queue_head) { /* never started: they report nothing, like the sleeping ones */
    queued_task *q = ex->queue_head;
    ex->queue_head = q->next;
    free(q);
  }
  ex->queue_tail = NULL;
  ex->queued = 0;
}

static void lose_connection(executor *ex);

/* A write completed (conn_write): its bytes are freed. */
static void on_written(void *data, int status) {
  executor *ex = data;
  if (ex->crashing && (status < 0 || uv_stream_get_write_queue_size((uv_stream_t *)&ex->conn) == 0))
    exit(CRASH_EXIT_CODE);
  if (status < 0 && status != UV_ECANCELED && !ex->down && !ex->closing) {
    fprintf(stderr, "tl-executor %s: write: %s\n", ex->id, uv_strerror(status));
    lose_connection(ex);
  }
}

/* Hands the encoded frames to the kernel, or what it does not take at once to libuv, whose write
 * owns them from there (conn_send: one write(2) when the connection is idle). A crashing
 * executor's go through libuv alone: on_written is its exit once they are out. While the
 * connection is down they are dropped: what matters of them (the ends) is retained. */
static void send_out(executor *ex) {
  if (ex->closing)
    return;
  if (ex->down) {
    ex->out.len = 0;
    return;
  }
  int rc = ex->crashing ? conn_write((uv_stream_t *)&ex->conn, &ex->out, on_written, ex)
                        : conn_send((uv_stream_t *)&ex->conn, &ex->out, on_written, ex);
  if (rc == UV_ENOMEM)
    die_oom();
  if (rc < 0) {
    fprintf(stderr, "tl-executor %s: write: %s\n", ex->id, uv_strerror(rc));
    lose_connection(ex);
  }
}

static void encode(executor *ex, const tlc_msg *msg) {
  int rc = tlc_encode(&ex->out, msg);
  if (rc == TLC_ENOMEM)
    die_oom();
  if (rc < 0) {
    fprintf(stderr, "tl-executor %s: encode %s: %s\n", ex->id, tlc_msg_type_name(msg->type),
            tlc_err_name(rc));
    exit(1);
  }
}

static void send_heartbeat(executor *ex) {
  tlc_msg msg = {.type = TLC_MSG_HEARTBEAT,
                 .u.heartbeat = {.seq = ex->heartbeat_seq++, .binaries = ex->binaries}};
  encode(ex, &msg);
  send_out(ex);
}

static void on_heartbeat(uv_timer_t *t) { send_heartbeat(t->data); }

/* The i-th retained end, oldest first. */
static retained_end *retained_at(executor *ex, size_t i) {
  return &ex->retained[(ex->retained_head + i) % ex->retained_cap];
}

/* Holds an end until a SYNCED covers it; the oldest goes when RETAINED_MAX are held. */
static void retain_end(executor *ex, const task_ref *task, uint8_t state, const uint8_t *result,
                       const char *text) {
  if (ex->nretained == ex->retained_cap && ex->retained_cap < RETAINED_MAX) {
    size_t cap = ex->retained_cap ? 2 * ex->retained_cap : 256;
    retained_end *r = malloc(cap * sizeof *r);
    if (!r)
      die_oom();
    for (size_t i = 0; i < ex->nretained; i++)
      r[i] = *retained_at(ex, i);
    free(ex->retained);
    ex->retained = r;
    ex->retained_cap = cap;
    ex->retained_head = 0;
  }
  if (ex->nretained == ex->retained_cap) { /* full: the oldest is dropped */
    if (ex->retained_sent > 0)
      ex->retained_sent--;
    ex->retained_head = (ex->retained_head + 1) % ex->retained_cap;
    ex->nretained--;
    ex->ends_dropped++;
  }
  retained_end *e = retained_at(ex, ex->nretained++);
  e->task = *task;
  e->state = state;
  memcpy(e->result, result, RESULT_BYTES);
  e->text = text;
  e->frame = 0;
}

/* SYNCED: the driver holds the first `frames` STATUS frames of this connection durably; the ends
 * they carried are dropped. More frames than were sent is the driver's fault: false. */
static bool synced(executor *ex, uint64_t frames) {
  if (frames > ex->status_frames)
    return false;
  while (ex->nretained > 0 && retained_at(ex, 0)->frame != 0 &&
         retained_at(ex, 0)->frame <= frames) {
    ex->retained_head = (ex->retained_head + 1) % ex->retained_cap;
    ex->nretained--;
    ex->retained_sent--;
  }
  return true;
}

/* One update as a STATUS item (its views point into result and text). */
static tlc_status_item status_item(uint64_t tid, uint8_t state, const uint8_t *result,
                                   const char *text) {
  bool finished = state == TLC_TASK_FINISHED;
  return (tlc_status_item){.tid = tid,
                           .state = state,
                           .result = {finished ? result : NULL, finished ? RESULT_BYTES : 0},
                           .text = tlc_str(text)};
}

/* Encodes items[0 .. n) as STATUS frames of up to STATUS_FLUSH updates, counted on this
 * connection. The ends among them are the retained ones not yet sent, in order: each is marked
 * with the frame that carries it. */
static void encode_statuses(executor *ex, const tlc_status_item *items, size_t n) {
  for (size_t at = 0; at < n; at += STATUS_FLUSH) {
    size_t k = n - at < STATUS_FLUSH ? n - at : STATUS_FLUSH;
    tlc_msg msg = {.type = TLC_MSG_STATUS, .u.status = {k, items + at}};
    encode(ex, &msg);
    ex->status_frames++;
    for (size_t i = at; i < at + k; i++)
      if (items[i].state != TLC_TASK_RUNNING && ex->retained_sent < ex->nretained)
        retained_at(ex, ex->retained_sent++)->frame = ex->status_frames;
  }
}

/* Encodes the updates collected so far into one STATUS frame (or several if huge). Each end in
 * them is marked with the frame that carries it. While the connection is down nothing is sent:
 * the ends wait in the retained ring, the RUNNING updates are dropped (RECONCILE says it). */
static void flush_statuses(executor *ex) {
  if (ex->npending == 0 || ex->closing)
    return;
  if (ex->down) {
    ex->npending = 0;
    return;
  }
  tlc_status_item *items = malloc(ex->npending * sizeof *items);
  if (!items)
    die_oom();
  for (size_t i = 0; i < ex->npending; i++) {
    pending_status *p = &ex->pending[i];
    items[i] = status_item(p->tid, p->state, p->result, p->text);
  }
  encode_statuses(ex, items, ex->npending);
  free(items);
  ex->npending = 0;
  send_out(ex);
}

static void on_flush(uv_prepare_t *p) { flush_statuses(p->data); }

/* Queues one update of the attempt for the end of this loop iteration. */
static void report(executor *ex, const task_ref *task, uint8_t state, uint64_t result,
                   const char *text) {
  if (ex->npending == ex->pending_cap) {
    size_t cap = ex->pending_cap ? 2 * ex->pending_cap : 256;
    pending_status *p = realloc(ex->pending, cap * sizeof *p);
    if (!p)
      die_oom();
    ex->pending = p;
    ex->pending_cap = cap;
  }
  pending_status *p = &ex->pending[ex->npending++];
  p->tid = task->tid;
  p->state = state;
  tl__le_put(p->result, result, RESULT_BYTES);
  p->text = text;
  if (state != TLC_TASK_RUNNING && ex->reconnect_ms > 0)
    retain_end(ex, task, state, p->result, text);
}

/* FORGET: the task set ended, so no launch of it will come; its binary is dropped (the last
 * cached one takes its place). A task set never cached is ignored. */
static void forget_binary(executor *ex, uint64_t taskset_id) {
  for (size_t i = 0; i < ex->ncache; i++)
    if (ex->cache[i].taskset_id == taskset_id) {
      free(ex->cache[i].bytes);
      ex->cache[i] = ex->cache[--ex->ncache];
      ex->forgotten++;
      return;
    }
}

static cached_binary *find_binary(executor *ex, uint64_t taskset_id) {
  for (size_t i = 0; i < ex->ncache; i++)
    if (ex->cache[i].taskset_id == taskset_id)
      return &ex->cache[i];
  return NULL;
}

/* Caches a task set's binary; every call counts as one materialisation, a repeated one too (the
 * driver's bug, which the count makes visible). */
static void cache_binary(executor *ex, const tlc_taskset_binary *b) {
  uint8_t *bytes = NULL;
  if (b->payload.len > 0) {
    bytes = malloc(b->payload.len);
    if (!bytes)
      die_oom();
    memcpy(bytes, b->payload.ptr, b->payload.len);
  }
  ex->binaries++;
  cached_binary *c = find_binary(ex, b->taskset_id);
  if (!c) {
    if (ex->ncache == ex->cache_cap) {
      size_t cap = ex->cache_cap ? 2 * ex->cache_cap : 8;
      cached_binary *cache = realloc(ex->cache, cap * sizeof *cache);
      if (!cache)
        die_oom();
      ex->cache = cache;
      ex->cache_cap = cap;
    }
    c = &ex->cache[ex->ncache++];
    c->taskset_id = b->taskset_id;
  } else {
    free(c->bytes);
    if (c->conn_no == ex->conn_no)
      ex->twice++;
  }
  c->conn_no = ex->conn_no;
  c->bytes = bytes;
  c->len = b->payload.len;
}

/* Whether kind is prefix followed by a decimal number, stored in *arg. */
static bool kind_arg(tlc_view kind, const char *prefix, uint64_t *arg) {
  size_t plen = strlen(prefix);
  if (kind.len <= plen || memcmp(kind.ptr, prefix, plen) != 0)
    return false;
  uint64_t v = 0;
  for (size_t i = plen; i < kind.len; i++) {
    if (kind.ptr[i] < '0' || kind.ptr[i] > '9' || v > UINT64_MAX / 10 - 1)
      return false;
    v = v * 10 + (uint64_t)(kind.ptr[i] - '0');
  }
  *arg = v;
  return true;
}

static bool kind_is(tlc_view kind, const char *name) {
  return kind.len == strlen(name) && memcmp(kind.ptr, name, kind.len) == 0;
}

/* Takes a core for a task about to start. More running tasks than cores is a bug of the queue
 * below, not a condition to survive: the process says so and exits 3, which fails the run. */
static void take_core(executor *ex) {
  ex->running++;
  ex->started++;
  if (ex->running > ex->running_peak)
    ex->running_peak = ex->running;
  if (ex->running > ex->cores) {
    fprintf(stderr, "tl-executor %s: %" PRIu32 " tasks running at once on %" PRIu32 " cores\n",
            ex->id, ex->running, ex->cores);
    exit(OVERCOMMIT_EXIT_CODE);
  }
}

static void start_queued(executor *ex);

/* A launch about to start or to wait: its attempt, kind and the addresses it holds. */
typedef struct launch {
  task_ref task;
  tlc_view kind;
  const res_grant *grants;
  uint8_t ngrants;
} launch;

/* A task that held its core ended: its addresses and its core are free again. */
static void release(executor *ex, const res_grant *g, uint8_t n) {
  res_give(&ex->resources, g, n);
  ex->running--;
}

/* A sleeping task's core is free again: it ended or was killed, and is off the list. */
static void end_sleeping(executor *ex, sleeping_task *task) {
  uv_close(sleeping_handle(task), on_sleeping_closed);
  release(ex, task->grants, task->ngrants);
  start_queued(ex);
}

static void unlist(executor *ex, sleeping_task *task) {
  for (sleeping_task **p = &ex->sleeping; *p; p = &(*p)->next)
    if (*p == task) {
      *p = task->next;
      break;
    }
}

static void on_slept(uv_timer_t *t) {
  sleeping_task *task = t->data;
  executor *ex = t->loop->data;
  unlist(ex, task);
  report(ex, &task->task, TLC_TASK_FINISHED, task->task.index, "");
  end_sleeping(ex, task);
}

/* An exec task's process exited: FINISHED for status 0, KILLED after a KILL, FAILED else. */
static void on_exited(uv_process_t *p, int64_t status, int signal) {
  sleeping_task *task = p->data;
  executor *ex = p->loop->data;
  unlist(ex, task);
  if (task->killed) {
    ex->dying--;
    report(ex, &task->task, TLC_TASK_KILLED, 0, "");
  } else if (status == 0 && signal == 0)
    report(ex, &task->task, TLC_TASK_FINISHED, task->task.index, "");
  else
    report(ex, &task->task, TLC_TASK_FAILED, 0,
           signal ? "its process was killed by a signal" : "its process exited with a failure");
  end_sleeping(ex, task);
}

static sleeping_task *new_sleeping(const launch *l) {
  sleeping_task *task = calloc(1, sizeof *task);
  if (!task)
    die_oom();
  task->task = l->task;
  memcpy(task->grants, l->grants, l->ngrants * sizeof *l->grants);
  task->ngrants = l->ngrants;
  return task;
}

/* Starts an exec task's process: --task-command ARG, its environment with its addresses. False
 * when it could not start (the task is then reported FAILED). */
static bool spawn_task(executor *ex, const launch *l, sleeping_task *task) {
  char arg[TLC_KIND_MAX + 1], tid[48], index[40], attempt[40], id[TLC_ID_MAX + 32];
  size_t alen = l->kind.len - strlen("exec:");
  memcpy(arg, l->kind.ptr + strlen("exec:"), alen);
  arg[alen] = '\0';
  snprintf(tid, sizeof tid, "TL_TASK_TID=%" PRIu64, l->task.tid);
  snprintf(index, sizeof index, "TL_TASK_INDEX=%" PRIu32, l->task.index);
  snprintf(attempt, sizeof attempt, "TL_TASK_ATTEMPT=%" PRIu32, l->task.attempt);
  snprintf(id, sizeof id, "TL_EXECUTOR_ID=%s", ex->id);
  const char *extra[] = {tid, index, attempt, id};
  char **env = res_env(&ex->resources, l->grants, l->ngrants, environ, extra, 4);
  if (!env)
    die_oom();
  char *args[] = {(char *)ex->task_command, arg, NULL};
  uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                   {.flags = UV_INHERIT_FD, .data.fd = 2},
                                   {.flags = UV_INHERIT_FD, .data.fd = 2}};
  uv_process_options_t opts = {.exit_cb = on_exited,
                               .file = ex->task_command,
                               .args = args,
                               .env = env,
                               .stdio_count = 3,
                               .stdio = stdio};
  task->proc = true;
  task->process.data = task;
  int rc = uv_spawn(ex->loop, &task->process, &opts);
  free(env);
  if (rc < 0) {
    fprintf(stderr, "tl-executor %s: %s: %s\n", ex->id, ex->task_command, uv_strerror(rc));
    uv_close((uv_handle_t *)&task->process, on_sleeping_closed);
    return false;
  }
  return true;
}

/* Starts one task on a free core: inline, except `sleep` and `exec`, which hold their core until
 * the timer fires or the process exits and report RUNNING first. An inline task gives its core
 * back when it returns. */
static void start_task(executor *ex, const launch *l) {
  uint64_t arg;
  task_ref ref = l->task;
  take_core(ex);
  if (!res_take(&ex->resources, l->grants, l->ngrants)) {
    fprintf(stderr,
            "tl-executor %s: task %" PRIu64 " was granted addresses its running tasks hold\n",
            ex->id, ref.tid);
    exit(GRANT_EXIT_CODE);
  }
  bool exec = l->kind.len > strlen("exec:") && memcmp(l->kind.ptr, "exec:", 5) == 0;
  if (kind_arg(l->kind, "sleep:", &arg) || (exec && ex->task_command)) {
    sleeping_task *task = new_sleeping(l);
    if (exec && !spawn_task(ex, l, task)) {
      report(ex, &ref, TLC_TASK_FAILED, 0, "its process could not start");
      release(ex, l->grants, l->ngrants);
      return;
    }
    if (!exec) {
      uv_timer_init(ex->loop, &task->timer);
      task->timer.data = task;
      uv_timer_start(&task->timer, on_slept, arg, 0);
    }
    task->next = ex->sleeping;
    ex->sleeping = task;
    report(ex, &ref, TLC_TASK_RUNNING, 0, ""); /* a task that takes time says it runs */
    return;
  }
  if (kind_is(l->kind, "noop")) {
    report(ex, &ref, TLC_TASK_FINISHED, ref.index, "");
  } else if (exec) {
    report(ex, &ref, TLC_TASK_FAILED, 0, "an exec task, and no --task-command");
  } else if (kind_is(l->kind, "hash")) {
    cached_binary *c = find_binary(ex, ref.taskset_id); /* its result: FNV-1a 64 of the binary */
    if (c)
      report(ex, &ref, TLC_TASK_FINISHED, tl__fnv1a(TL__FNV1A_INIT, c->bytes, c->len), "");
    else
      report(ex, &ref, TLC_TASK_FAILED, 0, "no binary for its task set");
  } else if (kind_arg(l->kind, "spin:", &arg)) {
    uint64_t until = uv_hrtime() + arg * 1000;
    while (uv_hrtime() < until) {
      /* spin */
    }
    report(ex, &ref, TLC_TASK_FINISHED, ref.index, "");
  } else if (kind_is(l->kind, "crash")) {
    /* As a real task would, it says it runs before it brings the process down: the RUNNING
     * update (and every update before it) is written before the exit, so that the driver sees
     * an attempt that reached RUNNING, whose loss counts when the exit is the app's doing. */
    report(ex, &ref, TLC_TASK_RUNNING, 0, "");
    fprintf(stderr, "tl-executor %s: task %" PRIu64 " crashes the process\n", ex->id, ref.tid);
    ex->crashing = true;
    flush_statuses(ex); /* on_written exits once everything is written */
    if (ex->closing)    /* the write failed at once: nothing to wait for */
      exit(CRASH_EXIT_CODE);
  } else {
    report(ex, &ref, TLC_TASK_FAILED, 0, "unknown task kind");
  }
  release(ex, l->grants, l->ngrants);
}

/* Starts queued tasks, oldest first, while a core is free. Inline ones give their core back at
 * once, so one freed core may start several of them and then one sleeping task. */
static void start_queued(executor *ex) {
  while (ex->queue_head && ex->running < ex->cores && !ex->crashing) {
    queued_task *q = ex->queue_head;
    /* Its addresses held by a killed task whose process has not exited yet: it waits for that
     * exit (a restored driver kills an attempt it does not adopt and may grant its addresses in
     * the same breath). Held by a live task, it is the driver's bug: start_task exits 5. */
    if (ex->dying > 0 && !res_fits(&ex->resources, q->grants, q->ngrants))
      break;
    ex->queue_head = q->next;
    if (!ex->queue_head)
      ex->queue_tail = NULL;
    ex->queued--;
    launch l = {q->task, {q->kind, q->kind_len}, q->grants, q->ngrants};
    start_task(ex, &l);
    free(q);
  }
}

/* One launched task: started now if a core is free and no older launch waits, else queued (the
 * driver's --queue gives the ledger more task slots than cores). A queued task reports nothing
 * until it starts. A launch whose grants name what the executor did not declare fails at once. */
static void launch_task(executor *ex, const tlc_launch_item *it) {
  res_grant grants[TLC_GRANTS_MAX];
  char why[256];
  task_ref ref = {it->tid, it->taskset_id, it->index, it->attempt, it->flags};
  if (!res_resolve(&ex->resources, it->grants, it->ngrants, grants, why, sizeof why)) {
    ex->bad_grants++;
    fprintf(stderr, "tl-executor %s: task %" PRIu64 ": %s\n", ex->id, it->tid, why);
    report(ex, &ref, TLC_TASK_FAILED, 0, "granted an address its executor did not declare");
    return;
  }
  launch l = {ref, it->kind, grants, (uint8_t)it->ngrants};
  bool wait = ex->dying > 0 && !res_fits(&ex->resources, grants, it->ngrants);
  if (!ex->queue_head && ex->running < ex->cores && !wait) {
    start_task(ex, &l);
    return;
  }
  ex->waited_dying += wait;
  if (ex->running + ex->queued >= HELD_MAX) { /* the driver's fault: no RECONCILE could say it */
    fprintf(stderr, "tl-executor %s: the driver launched more than %d tasks at once\n", ex->id,
            HELD_MAX);
    shut_down(ex, 1);
    return;
  }
  queued_task *q = malloc(sizeof *q);
  if (!q)
    die_oom();
  q->task = ref;
  memcpy(q->kind, it->kind.ptr, it->kind.len); /* 1..TLC_KIND_MAX: the decoder checked */
  q->kind_len = it->kind.len;
  memcpy(q->grants, grants, it->ngrants * sizeof *grants); /* at most TLC_GRANTS_MAX */
  q->ngrants = (uint8_t)it->ngrants;
  q->next = NULL;
  if (ex->queue_tail)
    ex->queue_tail->next = q;
  else
    ex->queue_head = q;
  ex->queue_tail = q;
  ex->queued++;
  ex->queued_total++;
  if (ex->queued > ex->queued_peak)
    ex->queued_peak = ex->queued;
}

/* KILL of one tid: a queued task leaves the queue and a sleeping one stops, each reporting
 * KILLED (an exec task's process is sent SIGKILL: KILLED, its core and addresses free, once it
 * exited); any other has already finished. */
static void kill_task(executor *ex, uint64_t tid) {
  queued_task *prev = NULL;
  for (queued_task *q = ex->queue_head; q; prev = q, q = q->next) {
    if (q->task.tid == tid) {
      if (prev)
        prev->next = q->next;
      else
        ex->queue_head = q->next;
      if (ex->queue_tail == q)
        ex->queue_tail = prev;
      ex->queued--;
      report(ex, &q->task, TLC_TASK_KILLED, 0, "");
      free(q);
      return;
    }
  }
  for (sleeping_task **p = &ex->sleeping; *p; p = &(*p)->next) {
    sleeping_task *task = *p;
    if (task->task.tid == tid && task->proc) {
      if (!task->killed) {
        uv_process_kill(&task->process, SIGKILL);
        ex->dying++;
      }
      task->killed = true;
      return;
    }
    if (task->task.tid == tid) {
      *p = task->next;
      report(ex, &task->task, TLC_TASK_KILLED, 0, "");
      end_sleeping(ex, task);
      return;
    }
  }
}

static void on_written_stop(void *data, int status) {
  on_written(data, status);
  shut_down(data, 0);
}

/* STOP: the updates pending and a last heartbeat (its binaries count is the final one) go out,
 * then the connection closes once they are written. */
static void stop(executor *ex) {
  flush_statuses(ex);
  tlc_msg msg = {.type = TLC_MSG_HEARTBEAT,
                 .u.heartbeat = {.seq = ex->heartbeat_seq++, .binaries = ex->binaries}};
  encode(ex, &msg);
  int rc = conn_write((uv_stream_t *)&ex->conn, &ex->out, on_written_stop, ex);
  if (rc == UV_ENOMEM)
    die_oom();
  if (rc < 0)
    shut_down(ex, 0);
  uv_read_stop((uv_stream_t *)&ex->conn);
}

/* EPOCH: a driver of the highest epoch seen or a higher one is this executor's driver from now
 * on; one of a lower epoch is refused (a driver thought dead, or an image restored twice, may
 * not drive an executor a newer driver took over): the connection closes, as after a drop, and
 * nothing it sent is acted on. A second EPOCH on a connection is held to the same rule. False
 * when the connection was refused. */
static bool take_epoch(executor *ex, uint64_t epoch) {
  if (epoch < ex->driver_epoch) {
    ex->stale_drivers++;
    fprintf(stderr,
            "tl-executor %s: refused a driver of epoch %" PRIu64 ": epoch %" PRIu64
            " was seen (%" PRIu64 " refused)\n",
            ex->id, epoch, ex->driver_epoch, ex->stale_drivers);
    lose_connection(ex);
    return false;
  }
  ex->driver_epoch = epoch;
  ex->got_epoch = true;
  return true;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  executor *ex = h->loop->data;
  *buf = uv_buf_init((char *)ex->read_buf, sizeof ex->read_buf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  executor *ex = s->loop->data;
  if (nread < 0) {
    if (nread != UV_EOF)
      fprintf(stderr, "tl-executor %s: read: %s\n", ex->id, uv_strerror((int)nread));
    else
      fprintf(stderr, "tl-executor %s: the driver closed the connection\n", ex->id);
    lose_connection(ex);
    return;
  }
  const uint8_t *data = (const uint8_t *)buf->base;
  size_t len = (size_t)nread;
  while (len > 0 && !ex->closing && !ex->crashing && !ex->down) {
    size_t used;
    tlc_msg msg;
    int rc = tlc_decoder_feed(&ex->decoder, data, len, &used, &msg);
    if (rc < 0) {
      fprintf(stderr, "tl-executor %s: bad frame from the driver: %s\n", ex->id, tlc_err_name(rc));
      shut_down(ex, 1);
      return;
    }
    data += used;
    len -= used;
    if (msg.type == TLC_MSG_NONE)
      continue;
    if (!ex->got_epoch && msg.type != TLC_MSG_EPOCH) {
      fprintf(stderr, "tl-executor %s: %s from the driver before its EPOCH\n", ex->id,
              tlc_msg_type_name(msg.type));
      shut_down(ex, 1);
      return;
    }
    switch (msg.type) {
    case TLC_MSG_EPOCH:
      if (!take_epoch(ex, msg.u.epoch.epoch))
        return;
      break;
    case TLC_MSG_TASKSET_BINARY:
      cache_binary(ex, &msg.u.binary);
      break;
    case TLC_MSG_LAUNCH:
      for (size_t i = 0; i < msg.u.launch.count && !ex->crashing && !ex->closing; i++)
        launch_task(ex, &msg.u.launch.items[i]);
      if (ex->npending >= STATUS_FLUSH)
        flush_statuses(ex);
      break;
    case TLC_MSG_KILL:
      for (size_t i = 0; i < msg.u.kill.count; i++)
        kill_task(ex, msg.u.kill.tids[i]);
      break;
    case TLC_MSG_FORGET:
      forget_binary(ex, msg.u.forget.taskset_id);
      break;
    case TLC_MSG_STOP:
      stop(ex);
      return;
    case TLC_MSG_SYNCED:
      if (!synced(ex, msg.u.synced.frames)) {
        fprintf(stderr, "tl-executor %s: SYNCED of %" PRIu64 " frames, but %" PRIu64 " were sent\n",
                ex->id, msg.u.synced.frames, ex->status_frames);
        shut_down(ex, 1);
        return;
      }
      break;
    default:
      fprintf(stderr, "tl-executor %s: unexpected %s from the driver\n", ex->id,
              tlc_msg_type_name(msg.type));
      shut_down(ex, 1);
      return;
    }
  }
}

static void on_connect(uv_connect_t *req, int status);
static void on_reconnect(uv_timer_t *t);

/* Closes the connection's handle; a reconnection initialises it again. */
static void close_conn(executor *ex) {
  if (ex->conn_open)
    uv_close((uv_handle_t *)&ex->conn, on_closed_handle);
  ex->conn_open = false;
}

/* The next try after the back-off (doubling up to RECONNECT_MAX_MS), and no later than the
 * deadline, where on_reconnect gives up. */
static void schedule_reconnect(executor *ex) {
  uint64_t waited = uv_now(ex->loop) - ex->down_since;
  uint64_t left = waited < ex->reconnect_ms ? ex->reconnect_ms - waited : 0;
  uv_timer_start(&ex->reconnect, on_reconnect, ex->backoff_ms < left ? ex->backoff_ms : left, 0);
  ex->backoff_ms = 2 * ex->backoff_ms > RECONNECT_MAX_MS ? RECONNECT_MAX_MS : 2 * ex->backoff_ms;
}

/* The connection dropped (or broke) without STOP: with --reconnect-s, the tasks run on and the
 * executor tries to come back (schedule_reconnect); without, it exits 1 as it always did. What
 * was encoded and not written is dropped, and so are the RUNNING updates not sent; the ends
 * stay retained, to be sent again, all of them, on the next connection. */
static void lose_connection(executor *ex) {
  if (ex->closing || ex->down)
    return;
  if (ex->reconnect_ms == 0) {
    shut_down(ex, 1);
    return;
  }
  ex->down = true;
  ex->down_since = uv_now(ex->loop);
  ex->backoff_ms = RECONNECT_FIRST_MS;
  uv_timer_stop(&ex->heartbeat);
  close_conn(ex);
  ex->out.len = 0;
  ex->npending = 0;
  for (size_t i = 0; i < ex->nretained; i++)
    retained_at(ex, i)->frame = 0;
  ex->retained_sent = 0;
  tlc_decoder_fini(&ex->decoder);
  tlc_decoder_init(&ex->decoder, TLC_FRAME_MAX);
  fprintf(stderr,
          "tl-executor %s: the connection is down: %" PRIu32 " tasks run on and %" PRIu32
          " wait; reconnecting for up to %" PRIu64 " s\n",
          ex->id, ex->running, ex->queued, ex->reconnect_ms / 1000);
  schedule_reconnect(ex);
}

static void on_reconnect(uv_timer_t *t) {
  executor *ex = t->data;
  if (ex->closing)
    return;
  if (uv_now(ex->loop) - ex->down_since >= ex->reconnect_ms) {
    fprintf(stderr,
            "tl-executor %s: gave up reconnecting after %" PRIu64 " s: %" PRIu32
            " running and %" PRIu32 " queued tasks stop\n",
            ex->id, ex->reconnect_ms / 1000, ex->running, ex->queued);
    shut_down(ex, 1);
    return;
  }
  uv_tcp_init(ex->loop, &ex->conn);
  ex->conn_open = true;
  int rc =
      uv_tcp_connect(&ex->connect_req, &ex->conn, (const struct sockaddr *)&ex->addr, on_connect);
  if (rc < 0) {
    close_conn(ex);
    schedule_reconnect(ex);
  }
}

/* The RECONCILE item of an attempt; ended says the executor holds its end. */
static tlc_reconcile_item reconcile_item(const task_ref *t, bool ended) {
  uint8_t flags = (t->flags & TLC_LAUNCH_SPECULATIVE) ? TLC_RECONCILE_SPECULATIVE : 0;
  return (tlc_reconcile_item){t->tid, t->taskset_id, t->index, t->attempt,
                              (uint8_t)(flags | (ended ? TLC_RECONCILE_ENDED : 0))};
}

/* RECONCILE, right after REGISTER on a reconnection: every attempt it runs or queues, and every
 * end it holds, in frames of TLC_RECONCILE_FRAME_ITEMS (the last with more = 0); then those ends
 * again, as STATUS frames of this connection. HELD_MAX and RETAINED_MAX keep the whole within
 * TLC_RECONCILE_ITEMS_MAX. */
static void send_reconcile(executor *ex) {
  ex->npending = 0; /* made since the drop: RECONCILE names the running, the ends are retained */
  size_t n = 0, cap = ex->queued + ex->nretained + 1;
  for (sleeping_task *t = ex->sleeping; t; t = t->next)
    cap++;
  tlc_reconcile_item *items = malloc(cap * sizeof *items);
  if (!items)
    die_oom();
  for (sleeping_task *t = ex->sleeping; t; t = t->next)
    items[n++] = reconcile_item(&t->task, false);
  for (queued_task *q = ex->queue_head; q; q = q->next)
    items[n++] = reconcile_item(&q->task, false);
  for (size_t i = 0; i < ex->nretained; i++)
    items[n++] = reconcile_item(&retained_at(ex, i)->task, true);
  if (n > TLC_RECONCILE_ITEMS_MAX) { /* never: HELD_MAX + RETAINED_MAX */
    fprintf(stderr, "tl-executor %s: %zu attempts to reconcile\n", ex->id, n);
    exit(1);
  }
  size_t at = 0;
  do {
    size_t k = n - at < TLC_RECONCILE_FRAME_ITEMS ? n - at : TLC_RECONCILE_FRAME_ITEMS;
    tlc_msg m = {.type = TLC_MSG_RECONCILE, .u.reconcile = {at + k<n, k, k> 0 ? items + at : NULL}};
    encode(ex, &m);
    at += k;
  } while (at < n);
  free(items);
  if (ex->nretained > 0) {
    tlc_status_item *st = malloc(ex->nretained * sizeof *st);
    if (!st)
      die_oom();
    for (size_t i = 0; i < ex->nretained; i++) {
      retained_end *e = retained_at(ex, i);
      st[i] = status_item(e->task.tid, e->state, e->result, e->text);
    }
    ex->retained_sent = 0; /* lose_connection unmarked them all: each is marked again here */
    encode_statuses(ex, st, ex->nretained);
    free(st);
    ex->ends_resent += ex->nretained;
  }
}

static void on_connect(uv_connect_t *req, int status) {
  executor *ex = req->data;
  if (ex->closing)
    return;
  if (status < 0) {
    if (!ex->down) { /* the first connection: nobody to come back to */
      fprintf(stderr, "tl-executor %s: connect: %s\n", ex->id, uv_strerror(status));
      shut_down(ex, 1);
      return;
    }
    close_conn(ex);
    schedule_reconnect(ex);
    return;
  }
  bool again = ex->down;
  ex->down = false;
  ex->connected = true;
  ex->conn_no++;
  ex->got_epoch = false; /* this connection's driver has yet to say its epoch */
  ex->status_frames = 0;
  uv_tcp_nodelay(&ex->conn, 1);
  tlc_msg reg = {.type = TLC_MSG_REGISTER,
                 .u.reg = {.executor_id = tlc_str(ex->id),
                           .host = tlc_str(ex->hostname),
                           .cores = ex->cores,
                           .token = tlc_str(ex->token),
                           .profile = ex->profile,
                           .nresources = ex->resources.n,
                           .resources = res_wire(&ex->resources)}};
  encode(ex, &reg);
  if (again) {
    ex->reconnects++;
    fprintf(stderr,
            "tl-executor %s: reconnected after %.3f s: reconciling %" PRIu32 " running, %" PRIu32
            " queued, %zu ends held\n",
            ex->id, (double)(uv_now(ex->loop) - ex->down_since) / 1000, ex->running, ex->queued,
            ex->nretained);
    send_reconcile(ex);
  }
  send_heartbeat(ex);
  uv_timer_start(&ex->heartbeat, on_heartbeat, ex->heartbeat_ms, ex->heartbeat_ms);
  if (!again)
    uv_prepare_start(&ex->flush, on_flush);
  uv_read_start((uv_stream_t *)&ex->conn, on_alloc, on_read);
}

static void usage(void) {
  fprintf(stderr, "usage: TL_CLUSTER_TOKEN=... tl-executor --port PORT [--host ADDR] [--id ID]\n"
                  "       [--cores N] [--heartbeat-ms MS] [--token-file PATH] [--reconnect-s S]\n"
                  "       [--profile N] [--resource NAME=ADDR[,ADDR]...]...\n"
                  "       [--discovery-timeout-ms MS] [--resource-discovery SCRIPT]...\n"
                  "       [--task-command PATH]\n");
  exit(2);
}

static uint64_t parse_u64(const char *s, uint64_t lo, uint64_t hi) {
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < lo || v > hi)
    usage();
  return (uint64_t)v;
}

int main(int argc, char **argv) {
  static executor ex; /* large (its read buffer): static */
  const char *host = "127.0.0.1";
  int port = -1;
  const char *token_file = NULL;
  uint64_t discovery_ms = RES_SCRIPT_TIMEOUT_MS; /* --discovery-timeout-ms */
  ex.id = NULL; /* --id, or made from the host name and pid below */
  ex.cores = 1;
  ex.heartbeat_ms = 1000;
  ex.exit_code = 1;
  ex.reconnect_ms = 60000;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc)
      usage();
    if (strcmp(argv[i], "--port") == 0)
      port = (int)parse_u64(argv[++i], 1, 65535);
    else if (strcmp(argv[i], "--host") == 0)
      host = argv[++i];
    else if (strcmp(argv[i], "--id") == 0)
      ex.id = argv[++i];
    else if (strcmp(argv[i], "--cores") == 0)
      ex.cores = (uint32_t)parse_u64(argv[++i], 1, TLC_CORES_MAX);
    else if (strcmp(argv[i], "--heartbeat-ms") == 0)
      ex.heartbeat_ms = parse_u64(argv[++i], 1, 3600000);
    else if (strcmp(argv[i], "--token-file") == 0)
      token_file = argv[++i];
    else if (strcmp(argv[i], "--reconnect-s") == 0)
      ex.reconnect_ms = parse_u64(argv[++i], 0, 86400) * 1000;
    else if (strcmp(argv[i], "--profile") == 0)
      ex.profile = (uint32_t)parse_u64(argv[++i], 0, UINT32_MAX);
    else if (strcmp(argv[i], "--discovery-timeout-ms") == 0)
      discovery_ms = parse_u64(argv[++i], 1, 3600000);
    else if (strcmp(argv[i], "--task-command") == 0)
      ex.task_command = argv[++i];
    else if (strcmp(argv[i], "--resource") == 0 || strcmp(argv[i], "--resource-discovery") == 0) {
      char err[512];
      bool flag = strcmp(argv[i], "--resource") == 0;
      const char *v = argv[++i];
      if ((flag ? res_add_flag(&ex.resources, v, err, sizeof err)
                : res_discover(&ex.resources, v, discovery_ms, err, sizeof err)) != 0) {
        fprintf(stderr, "tl-executor: %s\n", err);
        res_free(&ex.resources);
        return 2;
      }
    } else
      usage();
  }
  size_t hlen = sizeof ex.hostname;
  if (uv_os_gethostname(ex.hostname, &hlen) != 0 || hlen == 0)
    strcpy(ex.hostname, "localhost");
  /* Without --id: "HOST-PID", unlike the "exec-K" ids a driver's launcher gives, so that an
   * executor started by hand does not take the id of one the driver is starting (REGISTER says
   * nothing of which process sent it: the first to register under an id keeps it). */
  static char default_id[TLC_ID_MAX + 1];
  if (!ex.id) {
    snprintf(default_id, sizeof default_id, "%.40s-%lu", ex.hostname,
             (unsigned long)uv_os_getpid());
    ex.id = default_id;
  }
  size_t idlen = strlen(ex.id);
  if (port < 0 || idlen == 0 || idlen > TLC_ID_MAX)
    usage();
  static char token_buf[TLC_TOKEN_MAX + 2];
  if (token_file) {
    FILE *f = fopen(token_file, "rb");
    size_t n = f ? fread(token_buf, 1, sizeof token_buf - 1, f) : 0;
    if (f)
      fclose(f);
    size_t end = 0;
    while (end < n && token_buf[end] != '\n' && token_buf[end] != '\r')
      end++;
    token_buf[end] = '\0';
    if (!f || end == 0) {
      fprintf(stderr, "tl-executor: cannot read a token from %s\n", token_file);
      return 2;
    }
    ex.token = token_buf;
  } else {
    ex.token = getenv("TL_CLUSTER_TOKEN");
  }
  if (!ex.token)
    ex.token = "";
  if (strlen(ex.token) > TLC_TOKEN_MAX)
    usage();
  if (strlen(ex.token) < TOKEN_MIN) {
    fprintf(stderr,
            "tl-executor: the token (--token-file or TL_CLUSTER_TOKEN) is %zu bytes: at least %d "
            "are needed; make one with\n  head -c 32 /dev/urandom | base64\n",
            strlen(ex.token), TOKEN_MIN);
    return 2;
  }
  struct sockaddr_storage *addr = &ex.addr; /* the driver's: IPv4 or IPv6 */
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)addr) != 0 &&
      uv_ip6_addr(host, port, (struct sockaddr_in6 *)addr) != 0)
    usage();
  signal(SIGPIPE, SIG_IGN); /* a write to a driver that went fails with EPIPE instead */
  ex.loop = uv_default_loop();
  ex.loop->data = &ex;
  tlc_decoder_init(&ex.decoder, TLC_FRAME_MAX);
  tlc_buf_init(&ex.out);
  uv_tcp_init(ex.loop, &ex.conn);
  ex.conn_open = true;
  uv_timer_init(ex.loop, &ex.reconnect);
  ex.reconnect.data = &ex;
  uv_timer_init(ex.loop, &ex.heartbeat);
  ex.heartbeat.data = &ex;
  uv_prepare_init(ex.loop, &ex.flush);
  ex.flush.data = &ex;
  ex.connect_req.data = &ex;
  int rc = uv_tcp_connect(&ex.connect_req, &ex.conn, (const struct sockaddr *)addr, on_connect);
  if (rc < 0) {
    fprintf(stderr, "tl-executor %s: connect: %s\n", ex.id, uv_strerror(rc));
    shut_down(&ex, 1);
  }
  uv_run(ex.loop, UV_RUN_DEFAULT);
  if (ex.queued_total > 0) /* the queue was used: say how far, for the driver's tests */
    fprintf(stderr,
            "tl-executor %s: %" PRIu64 " tasks waited in the queue, at most %" PRIu32
            " at once; at most %" PRIu32 " of %" PRIu32 " cores busy\n",
            ex.id, ex.queued_total, ex.queued_peak, ex.running_peak, ex.cores);
  /* After STOP every task set has ended, and the driver says FORGET for each one it sent: a
   * binary still cached is one it forgot to (the tests fail on this line). */
  size_t held = 0; /* by this connection: the one before may have ended before its FORGETs */
  for (size_t i = 0; i < ex.ncache; i++)
    held += ex.cache[i].conn_no == ex.conn_no;
  if (ex.exit_code == 0 && held > 0)
    fprintf(stderr, "tl-executor %s: %zu task binaries still cached at exit (no FORGET)\n", ex.id,
            held);
  /* An executor that can outlive its driver (--reconnect-s) always says it: what it started
   * over every connection is how a failover is seen from here (test/cluster/failover.sh). */
  if (ex.reconnect_ms > 0 || ex.stale_drivers > 0)
    fprintf(stderr,
            "tl-executor %s: driver epoch %" PRIu64 "; %" PRIu64
            " drivers of an older epoch refused\n",
            ex.id, ex.driver_epoch, ex.stale_drivers);
  if (ex.reconnect_ms > 0 || ex.reconnects > 0 || ex.ends_dropped > 0)
    fprintf(stderr,
            "tl-executor %s: %" PRIu64 " reconnections, %" PRIu64 " ends sent again, %" PRIu64
            " ends dropped unacknowledged (more than %d held); %" PRIu64 " tasks started\n",
            ex.id, ex.reconnects, ex.ends_resent, ex.ends_dropped, RETAINED_MAX, ex.started);
  if (ex.waited_dying > 0)
    fprintf(stderr, "tl-executor %s: %" PRIu64 " launches waited for killed tasks to exit\n", ex.id,
            ex.waited_dying);
  if (ex.bad_grants > 0)
    fprintf(stderr, "tl-executor %s: %" PRIu64 " launches granted addresses it did not declare\n",
            ex.id, ex.bad_grants);
  if (ex.twice > 0) {
    fprintf(stderr, "tl-executor %s: %" PRIu64 " task binaries were sent while it held them\n",
            ex.id, ex.twice);
    if (ex.exit_code == 0)
      ex.exit_code = TWICE_EXIT_CODE;
  }
  for (size_t i = 0; i < ex.ncache; i++)
    free(ex.cache[i].bytes);
  free(ex.cache);
  free(ex.pending);
  free(ex.retained);
  res_free(&ex.resources);
  tlc_buf_free(&ex.out);
  tlc_decoder_fini(&ex.decoder);
  uv_loop_close(ex.loop);
  return ex.exit_code;
}
