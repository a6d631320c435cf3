/* The `local` launcher (launcher.h, docs/cluster.md "Launchers"): each executor is a tl-executor
 * process on this machine, started with uv_spawn; its end comes from the uv_spawn exit callback.
 * Killed by the driver: TL_LOSS_KILLED, not the app's doing; otherwise TL_LOSS_EXITED with the
 * exit code (128 + the signal for a process killed by a signal), the app's doing unless 0.
 *
 * Everything runs on the driver's loop thread; nothing blocks.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher.h"

/* One tl-executor process. Freed by its handle's close callback. */
typedef struct local_proc {
  uv_process_t process;     /* data is this record */
  struct local_launcher *l; /* its launcher */
  struct local_proc *next;  /* the launcher's list of processes whose handle is open */
  char id[TL_ID_MAX];       /* the id it registers with */
  bool spawned;             /* uv_spawn succeeded: its end will be reported */
  bool exited;              /* the exit callback ran (or uv_spawn failed) */
  bool killed;              /* the driver killed it (signal as_driver, stop_all) */
  bool stopped;             /* sent SIGSTOP and no SIGCONT since */
} local_proc;

typedef struct local_launcher {
  launcher_config cfg;    /* as given; its strings belong to the driver, which keeps them */
  char port[16];          /* cfg.port, as an argument */
  char cores[16];         /* cfg.cores, likewise */
  char heartbeat[24];     /* cfg.heartbeat_ms, likewise */
  char reconnect[24];     /* cfg.reconnect_s, likewise */
  local_proc *procs;      /* every process whose handle is not closed yet */
  size_t running;         /* spawned, end not reported yet */
  bool closing;           /* close was called: done runs once procs is empty */
  void (*done)(void *ud); /* close's callback */
  void *done_ud;          /* and its argument */
} local_launcher;

static void finish_close(local_launcher *l) {
  void (*done)(void *) = l->done;
  void *ud = l->done_ud;
  free(l);
  done(ud);
}

static void on_proc_closed(uv_handle_t *h) {
  local_proc *p = h->data;
  local_launcher *l = p->l;
  for (local_proc **pp = &l->procs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
  free(p);
  if (l->closing && !l->procs)
    finish_close(l);
}

static void on_proc_exit(uv_process_t *process, int64_t exit_status, int term_signal) {
  local_proc *p = process->data;
  local_launcher *l = p->l;
  p->exited = true;
  l->running--;
  /* Closed first, so that the driver may close the launcher from inside on_end. */
  uv_close((uv_handle_t *)process, on_proc_closed);
  int code = term_signal ? 128 + term_signal : (int)exit_status;
  char reason[128];
  launcher_end end = {
      .executor_id = p->id, .exit_code = code, .reason = reason, .source = "uv_spawn exit status"};
  if (p->killed) {
    end.kind = TL_LOSS_KILLED;
    end.requested = true;
    snprintf(reason, sizeof reason,
             "killed by the driver: exited with status %" PRId64 ", signal %d", exit_status,
             term_signal);
  } else {
    end.kind = TL_LOSS_EXITED;
    end.caused_by_app = code != 0;
    snprintf(reason, sizeof reason, "exited with status %" PRId64 ", signal %d", exit_status,
             term_signal);
  }
  l->cfg.on_end(l->cfg.ud, &end);
}

static int local_create(const launcher_config *cfg, void **state) {
  local_launcher *l = calloc(1, sizeof *l);
  if (!l)
    return UV_ENOMEM;
  l->cfg = *cfg;
  snprintf(l->port, sizeof l->port, "%d", cfg->port);
  snprintf(l->cores, sizeof l->cores, "%" PRIu32, cfg->cores);
  snprintf(l->heartbeat, sizeof l->heartbeat, "%" PRIu64, cfg->heartbeat_ms);
  snprintf(l->reconnect, sizeof l->reconnect, "%" PRIu64, cfg->reconnect_s);
  *state = l;
  return 0;
}

static int local_start(void *state, const char *executor_id) {
  local_launcher *l = state;
  size_t idlen = strlen(executor_id);
  if (l->closing || idlen == 0 || idlen >= TL_ID_MAX)
    return UV_EINVAL;
  local_proc *p = calloc(1, sizeof *p);
  if (!p)
    return UV_ENOMEM;
  p->l = l;
  memcpy(p->id, executor_id, idlen + 1);
  char *args[14 + LAUNCHER_ARGS_MAX] = {(char *)l->cfg.executor_path,
                                        "--host",
                                        (char *)l->cfg.connect_host,
                                        "--port",
                                        l->port,
                                        "--id",
                                        p->id,
                                        "--cores",
                                        l->cores,
                                        "--heartbeat-ms",
                                        l->heartbeat,
                                        "--reconnect-s",
                                        l->reconnect,
                                        NULL};
  size_t nextra = 0; /* its resource profile's arguments, if any (launcher_config) */
  const char *const *extra =
      l->cfg.executor_args ? l->cfg.executor_args(l->cfg.ud, executor_id, &nextra) : NULL;
  for (size_t i = 0; extra && i < nextra && i < LAUNCHER_ARGS_MAX; i++)
    args[13 + i] = (char *)extra[i];
  uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE},
                                   {.flags = UV_INHERIT_FD, .data.fd = 1},
                                   {.flags = UV_INHERIT_FD, .data.fd = 2}};
  uv_process_options_t opt = {.exit_cb = on_proc_exit,
                              .file = l->cfg.executor_path,
                              .args = args,
                              .stdio_count = 3,
                              .stdio = stdio};
  p->process.data = p;
  p->next = l->procs;
  l->procs = p;
  int rc = uv_spawn(l->cfg.loop, &p->process, &opt);
  if (rc < 0) {
    fprintf(stderr, "tl-driver: spawn %s: %s\n", l->cfg.executor_path, uv_strerror(rc));
    p->exited = true;
    uv_close((uv_handle_t *)&p->process, on_proc_closed); /* libuv: even after a failure */
    return rc;
  }
  p->spawned = true;
  l->running++;
  return 0;
}

static local_proc *find_proc(local_launcher *l, const char *executor_id) {
  for (local_proc *p = l->procs; p; p = p->next)
    if (p->spawned && !p->exited && !strcmp(p->id, executor_id))
      return p;
  return NULL;
}

/* SIGKILL, then SIGCONT: a stopped process dies only once continued. */
static void kill_proc(local_proc *p) {
  p->killed = true;
  uv_process_kill(&p->process, SIGKILL);
  uv_process_kill(&p->process, SIGCONT);
  p->stopped = false;
}

static int local_signal(void *state, const char *executor_id, int signum, bool as_driver) {
  local_launcher *l = state;
  local_proc *p = find_proc(l, executor_id);
  if (!p)
    return UV_ESRCH;
  if (signum == SIGKILL && as_driver) {
    kill_proc(p);
    return 0;
  }
  int rc = uv_process_kill(&p->process, signum);
  if (rc == 0 && signum == SIGKILL) /* as from outside: it must still die if it was stopped */
    uv_process_kill(&p->process, SIGCONT);
  if (rc == 0 && (signum == SIGSTOP || signum == SIGCONT))
    p->stopped = signum == SIGSTOP;
  return rc;
}

static void local_stop_all(void *state) {
  local_launcher *l = state;
  for (local_proc *p = l->procs; p; p = p->next)
    if (p->spawned && !p->exited)
      kill_proc(p);
}

static size_t local_running(void *state) { return ((local_launcher *)state)->running; }

/* The exit callback brings the news as soon as there is any: nothing to ask. */
static void local_query(void *state, const char *executor_id) {
  (void)state;
  (void)executor_id;
}

static void local_close(void *state, void (*done)(void *ud), void *ud) {
  local_launcher *l = state;
  l->closing = true;
  l->done = done;
  l->done_ud = ud;
  if (!l->procs)
    finish_close(l);
}

const launcher_ops launcher_local_ops = {.name = "local",
                                         .create = local_create,
                                         .start = local_start,
                                         .signal = local_signal,
                                         .stop_all = local_stop_all,
                                         .running = local_running,
                                         .query = local_query,
                                         .close = local_close};
