/* The `local` launcher (launcher.h, docs/cluster.md "Launchers"): each executor is a tl-executor
 * process on this machine, started with posix_spawnp; its end comes from waitpid when SIGCHLD
 * says a child changed state. Killed by the driver: TL_LOSS_KILLED, not the app's doing;
 * otherwise TL_LOSS_EXITED with the exit code (128 + the signal for a process killed by a
 * signal), the app's doing unless 0.
 *
 * Not uv_spawn: libuv 1.44 forks, and a fork write-protects every page of the driver, whose
 * first write after it then faults again (for a big ledger, thousands of faults inside a run
 * whose executors start late: dynamic allocation, a replacement). glibc's posix_spawn starts the
 * child with CLONE_VM | CLONE_VFORK, sharing the driver's memory until its exec, so the driver's
 * pages are never write-protected. The child is set up as uv_spawn would (stdin from /dev/null,
 * stdout and stderr the driver's, every signal's action the default and none blocked, the
 * environment the driver's, PATH searched for a name without a slash), and each process is
 * reaped by its own pid, so that libuv's own children (the Slurm launcher's commands, the bad
 * clients of the tests) stay libuv's.
 *
 * Everything runs on the driver's loop thread; nothing blocks but the spawn itself, which
 * returns once the child has called exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "launcher.h"

extern char **environ;

/* One tl-executor process. Freed once its end was reported (or its spawn failed). */
typedef struct local_proc {
  pid_t pid;               /* the process, once spawned */
  struct local_proc *next; /* the launcher's list of processes whose end is not reported yet */
  char id[TL_ID_MAX];      /* the id it registers with */
  bool spawned;            /* posix_spawnp succeeded: its end will be reported */
  bool exited;             /* reaped (or never spawned) */
  bool killed;             /* the driver killed it (signal as_driver, stop_all) */
  bool stopped;            /* sent SIGSTOP and no SIGCONT since */
} local_proc;

typedef struct local_launcher {
  launcher_config cfg;    /* as given; its strings belong to the driver, which keeps them */
  char port[16];          /* cfg.port, as an argument */
  char cores[16];         /* cfg.cores, likewise */
  char heartbeat[24];     /* cfg.heartbeat_ms, likewise */
  char reconnect[24];     /* cfg.reconnect_s, likewise */
  uv_signal_t sigchld;    /* SIGCHLD: some child changed state; referenced while running > 0,
                             as a process handle would hold the loop */
  local_proc *procs;      /* every process spawned whose end is not reported yet */
  size_t running;         /* spawned, end not reported yet */
  bool closing;           /* close was called: done runs once procs is empty */
  bool handle_closing;    /* sigchld is being closed */
  void (*done)(void *ud); /* close's callback */
  void *done_ud;          /* and its argument */
} local_launcher;

static void on_sigchld_closed(uv_handle_t *h) {
  local_launcher *l = h->data;
  void (*done)(void *) = l->done;
  void *ud = l->done_ud;
  free(l);
  done(ud);
}

/* Once closing and nothing is left to report: the handle closes, then done runs. */
static void maybe_finish_close(local_launcher *l) {
  if (l->closing && !l->procs && !l->handle_closing) {
    l->handle_closing = true;
    uv_close((uv_handle_t *)&l->sigchld, on_sigchld_closed);
  }
}

static void unlink_proc(local_launcher *l, local_proc *p) {
  for (local_proc **pp = &l->procs; *pp; pp = &(*pp)->next)
    if (*pp == p) {
      *pp = p->next;
      break;
    }
}

/* Reports the end of a reaped process (wait status st) and frees it. It leaves the list first,
 * so that the driver may start, stop or close from inside on_end. */
static void report_end(local_launcher *l, local_proc *p, int st) {
  p->exited = true;
  unlink_proc(l, p);
  if (--l->running == 0)
    uv_unref((uv_handle_t *)&l->sigchld);
  int exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 0;
  int term_signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
  int code = term_signal ? 128 + term_signal : exit_status;
  char reason[128];
  launcher_end end = {
      .executor_id = p->id, .exit_code = code, .reason = reason, .source = "waitpid status"};
  if (p->killed) {
    end.kind = TL_LOSS_KILLED;
    end.requested = true;
    snprintf(reason, sizeof reason, "killed by the driver: exited with status %d, signal %d",
             exit_status, term_signal);
  } else {
    end.kind = TL_LOSS_EXITED;
    end.caused_by_app = code != 0;
    snprintf(reason, sizeof reason, "exited with status %d, signal %d", exit_status, term_signal);
  }
  l->cfg.on_end(l->cfg.ud, &end);
  free(p);
}

/* SIGCHLD (signals merge: one may stand for several children): every process of this launcher
 * that ended is reaped by its pid and reported, one at a time from the list's head, since
 * on_end may change the list. A stop or a continue is no end (no WUNTRACED: not reported). */
static void on_sigchld(uv_signal_t *s, int signum) {
  (void)signum;
  local_launcher *l = s->data;
  for (;;) {
    local_proc *ended = NULL;
    int st = 0;
    for (local_proc *p = l->procs; p && !ended; p = p->next) {
      if (!p->spawned || p->exited)
        continue;
      pid_t r;
      do
        r = waitpid(p->pid, &st, WNOHANG);
      while (r < 0 && errno == EINTR);
      if (r == p->pid)
        ended = p;
    }
    if (!ended)
      break;
    report_end(l, ended, st);
  }
  maybe_finish_close(l);
}

static void free_after_failed_create(void *ud) { (void)ud; }

static int local_create(const launcher_config *cfg, void **state) {
  local_launcher *l = calloc(1, sizeof *l);
  if (!l)
    return UV_ENOMEM;
  l->cfg = *cfg;
  snprintf(l->port, sizeof l->port, "%d", cfg->port);
  snprintf(l->cores, sizeof l->cores, "%" PRIu32, cfg->cores);
  snprintf(l->heartbeat, sizeof l->heartbeat, "%" PRIu64, cfg->heartbeat_ms);
  snprintf(l->reconnect, sizeof l->reconnect, "%" PRIu64, cfg->reconnect_s);
  int rc = uv_signal_init(cfg->loop, &l->sigchld);
  if (rc == 0) {
    l->sigchld.data = l;
    rc = uv_signal_start(&l->sigchld, on_sigchld, SIGCHLD);
    if (rc < 0) { /* initialised: it must be closed before its memory goes */
      l->closing = true;
      l->done = free_after_failed_create;
      l->done_ud = NULL;
      maybe_finish_close(l);
      return rc;
    }
    uv_unref((uv_handle_t *)&l->sigchld); /* nothing running yet */
  }
  if (rc < 0) {
    free(l);
    return rc;
  }
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
  /* As uv_spawn sets a child up: stdin from /dev/null, every signal's action the default (an
   * ignored SIGPIPE included) and an empty signal mask. */
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t attr;
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  int rc = posix_spawn_file_actions_init(&fa);
  if (rc != 0) {
    free(p);
    return uv_translate_sys_error(rc);
  }
  rc = posix_spawnattr_init(&attr);
  if (rc != 0) {
    posix_spawn_file_actions_destroy(&fa);
    free(p);
    return uv_translate_sys_error(rc);
  }
  rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0)
    rc = posix_spawnattr_setsigdefault(&attr, &all);
  if (rc == 0)
    rc = posix_spawnattr_setsigmask(&attr, &none);
  if (rc == 0)
    rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  if (rc == 0)
    rc = posix_spawnp(&p->pid, l->cfg.executor_path, &fa, &attr, args, environ);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    fprintf(stderr, "tl-driver: spawn %s: %s\n", l->cfg.executor_path, strerror(rc));
    free(p);
    return uv_translate_sys_error(rc);
  }
  p->spawned = true;
  p->next = l->procs;
  l->procs = p;
  if (l->running++ == 0)
    uv_ref((uv_handle_t *)&l->sigchld);
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
  kill(p->pid, SIGKILL);
  kill(p->pid, SIGCONT);
  p->stopped = false;
}

/* kill(2) of a process not reaped yet (so its pid is still its own): 0 or a negative uv error. */
static int signal_proc(local_proc *p, int signum) {
  return kill(p->pid, signum) == 0 ? 0 : uv_translate_sys_error(errno);
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
  int rc = signal_proc(p, signum);
  if (rc == 0 && signum == SIGKILL) /* as from outside: it must still die if it was stopped */
    signal_proc(p, SIGCONT);
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

/* SIGCHLD brings the news as soon as there is any: nothing to ask. */
static void local_query(void *state, const char *executor_id) {
  (void)state;
  (void)executor_id;
}

static void local_close(void *state, void (*done)(void *ud), void *ud) {
  local_launcher *l = state;
  l->closing = true;
  l->done = done;
  l->done_ud = ud;
  maybe_finish_close(l);
}

const launcher_ops launcher_local_ops = {.name = "local",
                                         .create = local_create,
                                         .start = local_start,
                                         .signal = local_signal,
                                         .stop_all = local_stop_all,
                                         .running = local_running,
                                         .query = local_query,
                                         .close = local_close};
