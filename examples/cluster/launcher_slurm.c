/* The `slurm` launcher (launcher.h, docs/slurm.md): each executor is one Slurm batch job,
 * `sbatch --wrap "exec tl-executor ..."`, and its end is Slurm's own account of that job, read
 * with `squeue --json` every poll_ms and with `scontrol show job -o ID` when the driver asks
 * (its connection just dropped). Every Slurm command runs through uv_spawn with its output read
 * from uv pipes, under a time limit; nothing here blocks the driver's loop. The one costly step,
 * the parse of an squeue --json answer (seconds, on a big cluster), runs on libuv's thread pool
 * (squeue_parse, below); everything else, scontrol's small answers included, runs on the loop.
 *
 * Why one batch job per executor, not steps of one allocation: a job's state and exit code are
 * kept by slurmctld for MinJobAge after it ends, for anyone to ask (a step's are not, without
 * accounting), scancel of a job id cancels exactly that executor, and Slurm places each one
 * wherever it has room. `--no-requeue`: after NODE_FAIL Slurm would otherwise requeue the job
 * and start a second executor under the same id, which the driver refuses.
 *
 * Lifecycle of one executor (slurm_exec):
 *   start      sbatch in flight (job_id 0); a cancel asked for now is kept in cancel_signal
 *   submitted  job_id known; polled by squeue --json, queried by scontrol
 *   ended      Slurm gave a final state (or sbatch failed, or the job vanished): on_end is
 *              called once and the record is freed
 * If Slurm cannot answer (slurmctld down), nothing is reported: the driver's pending-loss
 * timeout resolves a lost executor, and the polls go on until Slurm answers again.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif

#include "launcher.h"
#include "slurm_parse.h"

/* A Slurm command that runs longer than this is killed. */
#define CMD_TIMEOUT_MS 30000u
/* The stdout kept per command: squeue --json of a big cluster. */
#define CMD_OUT_MAX ((size_t)64 << 20)
/* The stderr kept per command, for messages. */
#define CMD_ERR_MAX 1024u
/* After query(): scontrol again this often, this many times, while the job still runs. */
#define REQUERY_MS 200u
#define REQUERY_TRIES 25
/* stop_all: ends Slurm has not confirmed by then are reported as requested kills. */
#define STOP_ALL_WAIT_MS 30000u
/* The squeue period when the config says 0. */
#define DEFAULT_POLL_MS 1000u

typedef struct slurm_launcher slurm_launcher;
typedef struct slurm_cmd slurm_cmd;
typedef struct squeue_parse squeue_parse;

/* One executor started by this launcher, until its end is reported. */
typedef struct slurm_exec {
  char id[TL_ID_MAX];        /* the executor id given to start */
  uint64_t serial;           /* unique in this launcher: a command's answer is applied only to
                                the record it was run for, even if the id is started again */
  uint64_t job_id;           /* Slurm's job id; 0 while sbatch has not answered */
  bool requested;            /* the driver stopped it: its end is reported requested */
  int cancel_signal;         /* a scancel still to send (SIGKILL, SIGTERM), 0 for none */
  bool cancelling;           /* a scancel for it is in flight */
  bool cancel_failed_logged; /* a failed scancel was logged once */
  bool in_poll;              /* job_id was known when the squeue in flight started */
  bool seen;                 /* that squeue listed it */
  bool querying;             /* an scontrol for it is in flight */
  int requery_left;          /* scontrol re-asks left (query() found it not yet ended) */
  struct slurm_exec *next;   /* on slurm_launcher.execs */
} slurm_exec;

typedef void (*cmd_done_fn)(slurm_cmd *c, bool ok);

/* One Slurm command in flight: its process, its two output pipes, its time limit. */
struct slurm_cmd {
  slurm_launcher *l;      /* the owner */
  uv_process_t proc;      /* the command */
  uv_pipe_t out, err;     /* its stdout and stderr */
  uv_timer_t timeout;     /* kills it after CMD_TIMEOUT_MS */
  char *obuf;             /* stdout so far (malloc'ed), NUL-terminated once done */
  size_t olen, ocap;      /* bytes in obuf, bytes allocated */
  char ebuf[CMD_ERR_MAX]; /* stderr so far, truncated, NUL-terminated */
  size_t elen;            /* bytes in ebuf */
  bool overflow;          /* stdout went past CMD_OUT_MAX: killed, failed */
  bool timed_out;         /* killed by its time limit */
  bool exited;            /* the exit callback came */
  int64_t exit_status;    /* its exit status */
  int term_signal;        /* the signal that ended it, 0 if none */
  int eofs;               /* pipes that reached EOF or failed (2: all read) */
  int open_handles;       /* handles not yet closed: freed at 0 */
  cmd_done_fn done;       /* called once it exited and its output is read */
  char what[32];          /* "sbatch", "squeue --json", ...: for messages */
  uint64_t exec_serial;   /* the executor it is about (slurm_exec.serial), 0 for none */
  slurm_cmd *next;        /* on slurm_launcher.cmds */
};

struct slurm_launcher {
  uv_loop_t *loop;                                   /* the driver's loop */
  char *executor_path;                               /* copied from the config */
  char *connect_host;                                /* copied */
  int port;                                          /* the driver's port */
  uint32_t cores;                                    /* each executor's cores */
  uint32_t gpus;                                     /* each executor's --gres=gpu:N; 0: none */
  uint64_t heartbeat_ms;                             /* the executors' heartbeat period */
  uint64_t reconnect_s;                              /* their --reconnect-s */
  char *partition;                                   /* copied, NULL for Slurm's default */
  char *time_limit;                                  /* copied, NULL for none */
  char **extra_args;                                 /* copied, nextra entries */
  size_t nextra;                                     /* entries of extra_args */
  uint64_t poll_ms;                                  /* squeue period */
  void (*on_end)(void *ud, const launcher_end *end); /* the driver's callback */
  void *ud;                                          /* its argument */
  uint32_t (*executor_gpus)(void *ud, const char *executor_id); /* or NULL: gpus for all */
  const char *const *(*executor_args)(void *ud, const char *executor_id,
                                      size_t *n); /* launcher_config's */
  uv_timer_t poll_timer;        /* every poll_ms: squeue --json, pending cancels, stop deadline */
  uv_timer_t requery_timer;     /* every REQUERY_MS while an executor has requery_left */
  slurm_exec *execs;            /* executors whose end has not been reported */
  size_t running;               /* entries of execs */
  uint64_t next_serial;         /* the serial of the next executor started (from 1) */
  slurm_cmd *cmds;              /* commands in flight */
  size_t cmds_alive;            /* commands not yet freed (in flight, or their handles closing) */
  bool polling;                 /* an squeue --json is in flight, or the parse of its answer */
  bool poll_again;              /* poll once more as soon as the one in flight ends */
  squeue_parse *parse;          /* the parse on the thread pool, NULL for none (at most one: it
                                   belongs to the poll in flight) */
  bool poll_failed_logged;      /* a failing squeue was logged (once until it works again) */
  bool stopping_all;            /* stop_all was called: start is refused from then on */
  uint64_t stop_deadline;       /* uv_now after which stop_all's unconfirmed ends are reported */
  bool closing;                 /* close was called */
  int timers_open;              /* timers not yet closed */
  void (*close_done)(void *ud); /* close's callback */
  void *close_ud;               /* its argument */
};

static void poll_now(slurm_launcher *l);
static void query_one(slurm_launcher *l, struct slurm_exec *e);
static void maybe_close(slurm_launcher *l);

/* ---------------------------------------------------------------------------------------------
 * Commands
 */

static void cmd_handle_closed(uv_handle_t *h) {
  slurm_cmd *c = h->data;
  if (--c->open_handles > 0)
    return;
  slurm_launcher *l = c->l;
  free(c->obuf);
  free(c);
  l->cmds_alive--;
  maybe_close(l);
}

static void cmd_unlink(slurm_cmd *c) {
  for (slurm_cmd **p = &c->l->cmds; *p != NULL; p = &(*p)->next)
    if (*p == c) {
      *p = c->next;
      return;
    }
}

/* Once the process exited and both pipes are read: done, then close everything. */
static void cmd_maybe_finish(slurm_cmd *c) {
  if (!c->exited || c->eofs < 2)
    return;
  uv_timer_stop(&c->timeout);
  cmd_unlink(c);
  c->obuf[c->olen] = '\0';
  c->ebuf[c->elen] = '\0';
  bool ok = !c->overflow && !c->timed_out && c->term_signal == 0 && c->exit_status == 0;
  if (c->done != NULL)
    c->done(c, ok);
  uv_close((uv_handle_t *)&c->proc, cmd_handle_closed);
  uv_close((uv_handle_t *)&c->out, cmd_handle_closed);
  uv_close((uv_handle_t *)&c->err, cmd_handle_closed);
  uv_close((uv_handle_t *)&c->timeout, cmd_handle_closed);
}

/* A command killed for its time limit or its output has failed whatever it still writes: once
 * it exited, its pipes are not waited for, since a process it started may hold them open
 * (a wrapper script's child) and would keep the command, and the launcher's close, from ever
 * finishing. */
static void cmd_drop_output_if_killed(slurm_cmd *c) {
  if (!c->exited || (!c->timed_out && !c->overflow) || c->eofs >= 2)
    return;
  uv_read_stop((uv_stream_t *)&c->out);
  uv_read_stop((uv_stream_t *)&c->err);
  c->eofs = 2;
  cmd_maybe_finish(c);
}

static void cmd_exit(uv_process_t *p, int64_t status, int term_signal) {
  slurm_cmd *c = p->data;
  c->exited = true;
  c->exit_status = status;
  c->term_signal = term_signal;
  cmd_maybe_finish(c);
  cmd_drop_output_if_killed(c);
}

static void cmd_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  slurm_cmd *c = h->data;
  (void)suggested;
  if ((uv_pipe_t *)h == &c->err) {
    static char sink[256]; /* stderr past ebuf's room is read and dropped */
    size_t room = sizeof c->ebuf - 1 - c->elen;
    *buf =
        room > 0 ? uv_buf_init(c->ebuf + c->elen, (unsigned)room) : uv_buf_init(sink, sizeof sink);
    return;
  }
  if (c->ocap - c->olen < 65537) { /* room for a 64 KiB read and the final NUL */
    size_t cap = c->ocap * 2;
    char *b = cap <= CMD_OUT_MAX + 65537 ? realloc(c->obuf, cap) : NULL;
    if (b == NULL) {
      *buf = uv_buf_init(NULL, 0); /* libuv reports UV_ENOBUFS to cmd_read */
      return;
    }
    c->obuf = b;
    c->ocap = cap;
  }
  *buf = uv_buf_init(c->obuf + c->olen, 65536);
}

static void cmd_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf) {
  slurm_cmd *c = s->data;
  if (n > 0) {
    if ((uv_pipe_t *)s == &c->err) {
      if (buf->base == c->ebuf + c->elen)
        c->elen += (size_t)n;
    } else {
      c->olen += (size_t)n;
      if (c->olen > CMD_OUT_MAX && !c->overflow) {
        c->overflow = true;
        if (!c->exited)
          uv_process_kill(&c->proc, SIGKILL);
        cmd_drop_output_if_killed(c);
      }
    }
    return;
  }
  if (n == 0)
    return;
  if (n == UV_ENOBUFS && !c->overflow) {
    c->overflow = true;
    if (!c->exited)
      uv_process_kill(&c->proc, SIGKILL);
  }
  uv_read_stop(s);
  c->eofs++;
  cmd_maybe_finish(c);
  cmd_drop_output_if_killed(c);
}

static void cmd_timeout(uv_timer_t *t) {
  slurm_cmd *c = t->data;
  c->timed_out = true;
  if (!c->exited)
    uv_process_kill(&c->proc, SIGKILL);
  cmd_drop_output_if_killed(c);
}

/* Runs argv (argv[0] found through PATH), inheriting the environment (SLURM_CONF, and
 * TL_CLUSTER_TOKEN for sbatch --export=ALL). 0, or a negative uv error with nothing started. */
static int cmd_run(slurm_launcher *l, char **argv, const char *what, uint64_t exec_serial,
                   cmd_done_fn done) {
  slurm_cmd *c = calloc(1, sizeof *c);
  if (c == NULL)
    return UV_ENOMEM;
  c->ocap = 65537 * 2;
  c->obuf = malloc(c->ocap);
  if (c->obuf == NULL) {
    free(c);
    return UV_ENOMEM;
  }
  c->l = l;
  l->cmds_alive++;
  c->done = done;
  snprintf(c->what, sizeof c->what, "%s", what);
  c->exec_serial = exec_serial;
  uv_pipe_init(l->loop, &c->out, 0);
  uv_pipe_init(l->loop, &c->err, 0);
  uv_timer_init(l->loop, &c->timeout);
  c->proc.data = c->out.data = c->err.data = c->timeout.data = c;
  uv_stdio_container_t stdio[3] = {
      {.flags = UV_IGNORE},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&c->out},
      {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&c->err}};
  uv_process_options_t opts = {.exit_cb = cmd_exit,
                               .file = argv[0],
                               .args = argv,
                               .env = NULL,
                               .stdio_count = 3,
                               .stdio = stdio};
  int rc = uv_spawn(l->loop, &c->proc, &opts);
  if (rc < 0) {
    /* The pipes and timer exist and must be closed; the process handle is closed too, as
     * libuv asks after a failed spawn. */
    c->eofs = 2;
    c->done = NULL;
    c->open_handles = 4;
    uv_close((uv_handle_t *)&c->proc, cmd_handle_closed);
    uv_close((uv_handle_t *)&c->out, cmd_handle_closed);
    uv_close((uv_handle_t *)&c->err, cmd_handle_closed);
    uv_close((uv_handle_t *)&c->timeout, cmd_handle_closed);
    return rc;
  }
  c->open_handles = 4;
  uv_read_start((uv_stream_t *)&c->out, cmd_alloc, cmd_read);
  uv_read_start((uv_stream_t *)&c->err, cmd_alloc, cmd_read);
  uv_timer_start(&c->timeout, cmd_timeout, CMD_TIMEOUT_MS, 0);
  c->next = l->cmds;
  l->cmds = c;
  return 0;
}

/* The first line of a command's stderr (or why it failed), for messages. */
static const char *cmd_why(slurm_cmd *c, char *buf, size_t cap) {
  if (c->timed_out)
    snprintf(buf, cap, "no answer in %u s", CMD_TIMEOUT_MS / 1000);
  else if (c->overflow)
    snprintf(buf, cap, "output over %zu bytes", CMD_OUT_MAX);
  else if (c->elen > 0)
    snprintf(buf, cap, "%.*s", (int)strcspn(c->ebuf, "\n"), c->ebuf);
  else if (c->term_signal)
    snprintf(buf, cap, "killed by signal %d", c->term_signal);
  else
    snprintf(buf, cap, "exit status %" PRId64, c->exit_status);
  return buf;
}

/* ---------------------------------------------------------------------------------------------
 * Executors
 */

static slurm_exec *find_exec(slurm_launcher *l, const char *id) {
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    if (strcmp(e->id, id) == 0)
      return e;
  return NULL;
}

/* The executor a command was run for, NULL once its end was reported. */
static slurm_exec *find_serial(slurm_launcher *l, uint64_t serial) {
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    if (e->serial == serial)
      return e;
  return NULL;
}

static slurm_exec *find_job(slurm_launcher *l, uint64_t job_id) {
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    if (e->job_id == job_id)
      return e;
  return NULL;
}

/* Reports e's end and forgets it. Only ever called from a libuv callback of this launcher. */
static void report(slurm_launcher *l, slurm_exec *e, launcher_end *end) {
  for (slurm_exec **p = &l->execs; *p != NULL; p = &(*p)->next)
    if (*p == e) {
      *p = e->next;
      break;
    }
  l->running--;
  end->executor_id = e->id;
  l->on_end(l->ud, end);
  free(e);
}

static void report_job(slurm_launcher *l, slurm_exec *e, const slurm_job *j, const char *source) {
  char reason[160];
  launcher_end end = {0};
  slurm_end_of(j, e->requested, &end, reason, sizeof reason);
  end.source = source;
  report(l, e, &end);
}

/* An end Slurm did not describe (sbatch failed, the job vanished, no confirmation in time). */
static void report_other(slurm_launcher *l, slurm_exec *e, const char *reason, const char *source) {
  launcher_end end = {.kind = e->requested ? TL_LOSS_KILLED : TL_LOSS_PROCESS_LOST,
                      .caused_by_app = false,
                      .requested = e->requested,
                      .reason = reason,
                      .source = source};
  report(l, e, &end);
}

/* ---------------------------------------------------------------------------------------------
 * scancel
 */

static void scancel_done(slurm_cmd *c, bool ok) {
  slurm_exec *e = find_serial(c->l, c->exec_serial);
  if (e == NULL)
    return;
  e->cancelling = false;
  /* A job that has just ended is no longer a valid target: scancel says so, and there is
   * nothing left to cancel. */
  bool gone = !ok && (strstr(c->ebuf, "Invalid job id specified") != NULL ||
                      strstr(c->ebuf, "already completing or completed") != NULL);
  if (ok || gone) {
    e->cancel_signal = 0;
    poll_now(c->l); /* the end is known at once: ask for it */
  } else if (!e->cancel_failed_logged) {
    /* Kept in cancel_signal: sent again at the next poll until Slurm reports the end. */
    char why[160];
    fprintf(stderr, "launcher slurm: scancel of job %" PRIu64 " (%s) failed: %s; will retry\n",
            e->job_id, e->id, cmd_why(c, why, sizeof why));
    e->cancel_failed_logged = true;
  }
}

/* Sends e's pending cancel if it can be sent now. */
static void send_cancel(slurm_launcher *l, slurm_exec *e) {
  if (e->cancel_signal == 0 || e->job_id == 0 || e->cancelling)
    return;
  char job[24], sig[32];
  snprintf(job, sizeof job, "%" PRIu64, e->job_id);
  char *argv[5] = {"scancel", NULL, NULL, NULL, NULL};
  if (e->cancel_signal == SIGTERM) {
    argv[1] = job; /* Slurm's own cancel: SIGCONT, SIGTERM, SIGKILL after KillWait */
  } else {
    snprintf(sig, sizeof sig, "--signal=%s", e->cancel_signal == SIGKILL ? "KILL" : "TERM");
    argv[1] = sig;
    argv[2] = job;
  }
  if (cmd_run(l, argv, "scancel", e->serial, scancel_done) == 0)
    e->cancelling = true;
}

/* ---------------------------------------------------------------------------------------------
 * sbatch
 */

static void sbatch_done(slurm_cmd *c, bool ok) {
  slurm_launcher *l = c->l;
  slurm_exec *e = find_serial(l, c->exec_serial);
  if (e == NULL)
    return;
  /* --parsable: "JOBID" or "JOBID;CLUSTER". */
  char *end;
  unsigned long long id = ok ? strtoull(c->obuf, &end, 10) : 0;
  if (!ok || id == 0 || end == c->obuf) {
    char why[160], reason[200];
    snprintf(reason, sizeof reason, "sbatch failed: %s", cmd_why(c, why, sizeof why));
    fprintf(stderr, "launcher slurm: executor %s: %s\n", e->id, reason);
    report_other(l, e, reason, "sbatch");
    return;
  }
  e->job_id = id;
  send_cancel(l, e); /* a stop that came while sbatch ran */
}

/* Appends s to buf[*n..cap) in single quotes for sh; false if it does not fit. */
static bool put_quoted(char *buf, size_t cap, size_t *n, const char *s) {
  if (*n + 1 >= cap)
    return false;
  buf[(*n)++] = '\'';
  for (; *s; s++) {
    const char *piece = *s == '\'' ? "'\\''" : NULL;
    size_t len = piece ? 4 : 1;
    if (*n + len + 2 >= cap)
      return false;
    if (piece)
      memcpy(buf + *n, piece, len);
    else
      buf[*n] = *s;
    *n += len;
  }
  buf[(*n)++] = '\'';
  buf[*n] = '\0';
  return true;
}

/* Whether executor_id may become a new executor of l (start, adopt): 0, or the error. */
static int new_id_check(slurm_launcher *l, const char *executor_id) {
  size_t idlen = strlen(executor_id);
  if (l->closing || l->stopping_all)
    return UV_ECANCELED;
  if (idlen == 0 || idlen >= TL_ID_MAX)
    return UV_EINVAL;
  return find_exec(l, executor_id) != NULL ? UV_EEXIST : 0;
}

static int slurm_start(void *state, const char *executor_id) {
  slurm_launcher *l = state;
  size_t idlen = strlen(executor_id);
  int bad = new_id_check(l, executor_id);
  if (bad < 0)
    return bad;
  /* The job script: exec, so that the batch step is the executor itself and a signal to it
   * (or its exit status) is the executor's. */
  char wrap[4096], tail[96];
  size_t n = 0;
  snprintf(wrap, sizeof wrap, "exec ");
  n = strlen(wrap);
  bool fits = put_quoted(wrap, sizeof wrap, &n, l->executor_path);
  fits = fits && n + 8 < sizeof wrap;
  if (fits) {
    memcpy(wrap + n, " --host ", 9);
    n += 8;
    fits = put_quoted(wrap, sizeof wrap, &n, l->connect_host);
  }
  snprintf(tail, sizeof tail, " --port %d --id ", l->port);
  fits = fits && n + strlen(tail) < sizeof wrap;
  if (fits) {
    memcpy(wrap + n, tail, strlen(tail) + 1);
    n += strlen(tail);
    fits = put_quoted(wrap, sizeof wrap, &n, executor_id);
  }
  snprintf(tail, sizeof tail,
           " --cores %" PRIu32 " --heartbeat-ms %" PRIu64 " --reconnect-s %" PRIu64, l->cores,
           l->heartbeat_ms, l->reconnect_s);
  fits = fits && n + strlen(tail) < sizeof wrap;
  if (!fits)
    return UV_E2BIG;
  memcpy(wrap + n, tail, strlen(tail) + 1);
  n += strlen(tail);
  /* Its resource profile's arguments (tl-driver --executor-profile), each quoted. */
  size_t nextra = 0;
  const char *const *extra =
      l->executor_args ? l->executor_args(l->ud, executor_id, &nextra) : NULL;
  for (size_t i = 0; extra && i < nextra && i < LAUNCHER_ARGS_MAX; i++) {
    if (n + 2 >= sizeof wrap)
      return UV_E2BIG;
    wrap[n++] = ' ';
    if (!put_quoted(wrap, sizeof wrap, &n, extra[i]))
      return UV_E2BIG;
  }
  /* GPUs: the addresses of Slurm's allocation, found in the job's environment by tl-slurm-gpus,
   * a discovery script next to tl-executor (docs/slurm.md "GPUs"). */
  char gres[48] = "";
  uint32_t gpus = l->executor_gpus ? l->executor_gpus(l->ud, executor_id) : l->gpus;
  if (gpus > 0) {
    char script[4096];
    const char *slash = strrchr(l->executor_path, '/');
    size_t dir = slash ? (size_t)(slash - l->executor_path) + 1 : 0;
    if (dir + sizeof "tl-slurm-gpus" > sizeof script || n + 24 >= sizeof wrap)
      return UV_E2BIG;
    memcpy(script, l->executor_path, dir);
    memcpy(script + dir, "tl-slurm-gpus", sizeof "tl-slurm-gpus");
    memcpy(wrap + n, " --resource-discovery ", 23);
    n += 22;
    if (!put_quoted(wrap, sizeof wrap, &n, script))
      return UV_E2BIG;
    snprintf(gres, sizeof gres, "--gres=gpu:%" PRIu32, gpus);
  }

  char name[TL_ID_MAX + 32], cpus[32], partition[256], time_limit[128];
  snprintf(name, sizeof name, "--job-name=tl-exec-%s", executor_id);
  snprintf(cpus, sizeof cpus, "--cpus-per-task=%" PRIu32, l->cores);
  size_t argc = 0, max = 16 + l->nextra;
  char **argv = calloc(max, sizeof *argv);
  if (argv == NULL)
    return UV_ENOMEM;
  argv[argc++] = "sbatch";
  argv[argc++] = "--parsable";
  argv[argc++] = "--no-requeue";
  argv[argc++] = name;
  argv[argc++] = "--ntasks=1";
  argv[argc++] = cpus;
  argv[argc++] = "--output=/dev/null"; /* --slurm-arg=--output=... overrides it */
  if (gres[0] != '\0')
    argv[argc++] = gres;
  if (l->partition != NULL) {
    snprintf(partition, sizeof partition, "--partition=%s", l->partition);
    argv[argc++] = partition;
  }
  if (l->time_limit != NULL) {
    snprintf(time_limit, sizeof time_limit, "--time=%s", l->time_limit);
    argv[argc++] = time_limit;
  }
  for (size_t i = 0; i < l->nextra; i++)
    argv[argc++] = l->extra_args[i];
  argv[argc++] = "--wrap";
  argv[argc++] = wrap;
  argv[argc] = NULL;

  slurm_exec *e = calloc(1, sizeof *e);
  if (e == NULL) {
    free(argv);
    return UV_ENOMEM;
  }
  memcpy(e->id, executor_id, idlen + 1);
  e->serial = ++l->next_serial;
  int rc = cmd_run(l, argv, "sbatch", e->serial, sbatch_done);
  free(argv);
  if (rc < 0) {
    fprintf(stderr, "launcher slurm: cannot run sbatch: %s\n", uv_strerror(rc));
    free(e);
    return rc;
  }
  e->next = l->execs;
  l->execs = e;
  l->running++;
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * squeue --json, every poll_ms
 */

/* The parse of one squeue --json answer, on libuv's thread pool.
 *
 * Why: Jansson builds the whole tree of the answer, which lists every job slurmctld holds; at the
 * 64 MiB bound that is about 2 s and 340 MiB, and on the loop it would stall the driver (its
 * heartbeats, status updates, every connection) for that long at every poll.
 *
 * What each side touches. The work callback (a pool thread) reads and writes only its own
 * squeue_parse: text, taken over from the command (nothing else holds it), and wanted, a copy of
 * the job ids the poll is for, are its input; jobs and rc its output. It never reads the launcher
 * or an executor, calls nothing of libuv, and takes no lock of ours: libuv's queue orders it after
 * uv_queue_work and before the after-work callback, which runs on the loop and alone applies the
 * results (poll_listed, poll_failed) exactly as when the loop parsed the answer itself.
 *
 * At most one in flight. The parse is the end of its poll: `polling` stays true until its results
 * are applied, so no squeue starts meanwhile, and a poll asked for meanwhile (a poll_ms tick, a
 * scancel that worked) waits, merged with any other into the one poll_again starts as soon as
 * the results are applied, as for an squeue that runs long. No parse ever waits for another.
 *
 * Close. The launcher is not freed while a parse is queued or running (maybe_close waits for
 * `parse` to be NULL). While close waits for running() to reach 0 the results are applied, since
 * they are how those ends are learnt; once nothing runs, a parse still queued is cancelled
 * (uv_cancel; one already running cannot be) and the results of one that finishes are freed
 * unread. */
struct squeue_parse {
  uv_work_t req;         /* on the thread pool; req.data is this */
  slurm_launcher *l;     /* the owner: read by the after-work callback only, on the loop */
  char *text;            /* the answer, taken over from squeue's command; freed by the work */
  size_t len;            /* bytes of text */
  uint64_t *wanted;      /* the job ids of the poll's executors (in_poll), sorted: a copy */
  size_t nwanted;        /* entries of wanted */
  slurm_job *jobs;       /* the answer's jobs whose id is in wanted, in its order (malloc'ed) */
  size_t njobs, jobscap; /* entries of jobs, entries allocated */
  bool nomem;            /* jobs could not grow: the answer is not read (rc JSON_ENOMEM) */
  int rc;                /* slurm_parse_squeue_json's result: 0, or a JSON_E* code */
  bool cancel_tried;     /* maybe_close has called uv_cancel (once is enough) */
};

static int cmp_job_id(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* On the pool: keeps a job of the answer if it is one of the poll's. */
static void parse_keep_job(void *ud, const slurm_job *j) {
  squeue_parse *p = ud;
  if (p->nomem || bsearch(&j->job_id, p->wanted, p->nwanted, sizeof *p->wanted, cmp_job_id) == NULL)
    return;
  if (p->njobs == p->jobscap) {
    size_t cap = p->jobscap ? 2 * p->jobscap : 16;
    slurm_job *jobs = realloc(p->jobs, cap * sizeof *jobs);
    if (jobs == NULL) {
      p->nomem = true;
      return;
    }
    p->jobs = jobs;
    p->jobscap = cap;
  }
  p->jobs[p->njobs++] = *j;
}

/* On the pool: the parse itself. */
static void parse_work(uv_work_t *req) {
  squeue_parse *p = req->data;
  p->rc = slurm_parse_squeue_json(p->text, p->len, parse_keep_job, p);
  if (p->rc == 0 && p->nomem)
    p->rc = JSON_ENOMEM;
  free(p->text); /* up to 64 MiB: not held until the loop gets to the results */
  p->text = NULL;
#ifdef __GLIBC__
  /* glibc gives each pool thread an arena of its own and keeps the tree's memory in it once
   * freed (seen: 500 MiB after a 63 MiB answer): the parse's next turn may fall to another of
   * libuv's threads, and the driver would hold one such peak per thread. Given back here, it is
   * held between polls by none. */
  malloc_trim(0);
#endif
}

static void parse_free(squeue_parse *p) {
  free(p->text);
  free(p->wanted);
  free(p->jobs);
  free(p);
}

/* The end of a poll, whatever came of it: the next one may start. */
static void poll_end(slurm_launcher *l) {
  l->polling = false;
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    e->in_poll = false;
  if (l->poll_again && !l->closing)
    poll_now(l);
}

/* Slurm did not answer (why says how), or its answer could not be read (answered). */
static void poll_failed(slurm_launcher *l, const char *why, bool answered) {
  /* Slurm cannot answer: report nothing (the driver's pending-loss timeout decides). Not logged
   * once close has nothing left to learn: then the failure is close's own kill. */
  if (!l->poll_failed_logged && !(l->closing && l->running == 0)) {
    fprintf(stderr, "launcher slurm: squeue --json failed: %s\n", why);
    l->poll_failed_logged = true;
  }
  /* squeue --json lists every job of the cluster. Where that is more than this launcher reads
   * (CMD_OUT_MAX), or a layout it cannot read, Slurm did answer: ask about each executor with
   * scontrol instead. */
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    if (answered && e->in_poll)
      query_one(l, e);
}

/* The answer was read: jobs[0..njobs) are those of its jobs this poll is about (and possibly
 * some whose executor has ended since), in its order. */
static void poll_listed(slurm_launcher *l, const slurm_job *jobs, size_t njobs) {
  if (l->poll_failed_logged)
    fprintf(stderr, "launcher slurm: squeue --json answers again\n");
  l->poll_failed_logged = false;
  for (size_t i = 0; i < njobs; i++) {
    slurm_exec *e = find_job(l, jobs[i].job_id);
    if (e == NULL || !e->in_poll)
      continue;
    e->seen = true;
    if (slurm_state_is_final(jobs[i].state))
      report_job(l, e, &jobs[i], "squeue --json");
  }
  /* A job squeue no longer lists has been purged (MinJobAge) or was never kept: its end is
   * lost for good. */
  slurm_exec *next;
  for (slurm_exec *e = l->execs; e != NULL; e = next) {
    next = e->next;
    bool missing = e->in_poll && !e->seen;
    e->in_poll = false;
    if (missing)
      report_other(l, e, "no longer known to Slurm", "squeue --json");
  }
}

/* On the loop: the parse is over (status 0), or was cancelled before it began (UV_ECANCELED). */
static void parse_done(uv_work_t *req, int status) {
  squeue_parse *p = req->data;
  slurm_launcher *l = p->l;
  l->parse = NULL;
  if (status != UV_ECANCELED && !(l->closing && l->running == 0)) {
    if (p->rc < 0)
      poll_failed(l, "unreadable JSON", true);
    else
      poll_listed(l, p->jobs, p->njobs);
  }
  parse_free(p);
  poll_end(l);
  maybe_close(l);
}

/* Hands squeue's answer, c->obuf, to the thread pool for the executors in the poll (in_poll).
 * 0, or < 0 (UV_ENOMEM) with nothing queued and c->obuf left to c. */
static int parse_start(slurm_launcher *l, slurm_cmd *c) {
  squeue_parse *p = calloc(1, sizeof *p);
  size_t n = 0;
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    n += e->in_poll;
  uint64_t *wanted = malloc((n ? n : 1) * sizeof *wanted);
  if (p == NULL || wanted == NULL) {
    free(p);
    free(wanted);
    return UV_ENOMEM;
  }
  n = 0;
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    if (e->in_poll)
      wanted[n++] = e->job_id;
  qsort(wanted, n, sizeof *wanted, cmp_job_id);
  p->req.data = p;
  p->l = l;
  p->wanted = wanted;
  p->nwanted = n;
  p->text = c->obuf;
  p->len = c->olen;
  int rc = uv_queue_work(l->loop, &p->req, parse_work, parse_done);
  if (rc < 0) { /* only for a NULL callback: never */
    p->text = NULL;
    parse_free(p);
    return rc;
  }
  c->obuf = NULL; /* the pool's now: cmd_handle_closed frees NULL */
  c->olen = c->ocap = 0;
  l->parse = p;
  return 0;
}

static void squeue_done(slurm_cmd *c, bool ok) {
  slurm_launcher *l = c->l;
  if (!ok) {
    char why[160];
    poll_failed(l, cmd_why(c, why, sizeof why), c->overflow);
  } else if (l->closing && l->running == 0) {
    /* Nothing left to learn: the answer is not read. */
  } else if (parse_start(l, c) == 0) {
    return; /* the poll ends in parse_done */
  } else {
    poll_failed(l, "no memory to read it", true);
  }
  poll_end(l);
}

static void poll_now(slurm_launcher *l) {
  if (l->polling) {
    l->poll_again = true;
    return;
  }
  l->poll_again = false;
  bool any = false;
  for (slurm_exec *e = l->execs; e != NULL; e = e->next) {
    e->in_poll = e->job_id != 0;
    e->seen = false;
    any = any || e->in_poll;
  }
  if (!any)
    return;
  char *argv[] = {"squeue", "--json", NULL};
  if (cmd_run(l, argv, "squeue --json", 0, squeue_done) == 0)
    l->polling = true;
  else
    for (slurm_exec *e = l->execs; e != NULL; e = e->next)
      e->in_poll = false;
}

static void poll_tick(uv_timer_t *t) {
  slurm_launcher *l = t->data;
  if (l->stopping_all && uv_now(l->loop) >= l->stop_deadline) {
    /* Cancelled, but Slurm never confirmed it (it does not answer): the driver must not wait
     * forever for these. An executor whose sbatch is still in flight waits for it. */
    slurm_exec *next;
    for (slurm_exec *e = l->execs; e != NULL; e = next) {
      next = e->next;
      if (e->job_id != 0 && e->requested)
        report_other(l, e, "cancelled; Slurm did not confirm the end in time", "stop_all");
    }
  }
  for (slurm_exec *e = l->execs; e != NULL; e = e->next)
    send_cancel(l, e);
  poll_now(l);
  maybe_close(l);
}

/* ---------------------------------------------------------------------------------------------
 * scontrol show job -o ID, on query
 */

static void scontrol_done(slurm_cmd *c, bool ok) {
  slurm_launcher *l = c->l;
  slurm_exec *e = find_serial(l, c->exec_serial);
  if (e == NULL)
    return;
  e->querying = false;
  slurm_job j;
  /* An unknown job id is an error for scontrol: its message is on stderr. */
  int rc =
      ok ? slurm_parse_scontrol(c->obuf, c->olen, &j) : slurm_parse_scontrol(c->ebuf, c->elen, &j);
  if (rc == 1 && e->job_id != 0) {
    e->requery_left = 0;
    report_other(l, e, "no longer known to Slurm", "scontrol show job");
  } else if (rc == 0 && j.job_id == e->job_id && slurm_state_is_final(j.state)) {
    report_job(l, e, &j, "scontrol show job");
  }
  maybe_close(l);
}

static void query_one(slurm_launcher *l, slurm_exec *e) {
  if (e->job_id == 0 || e->querying)
    return;
  char job[24];
  snprintf(job, sizeof job, "%" PRIu64, e->job_id);
  char *argv[] = {"scontrol", "show", "job", "-o", job, NULL};
  if (cmd_run(l, argv, "scontrol show job", e->serial, scontrol_done) == 0)
    e->querying = true;
}

static void requery_tick(uv_timer_t *t) {
  slurm_launcher *l = t->data;
  bool more = false;
  for (slurm_exec *e = l->execs; e != NULL; e = e->next) {
    if (e->requery_left > 0 && !e->querying && e->job_id != 0) {
      e->requery_left--;
      query_one(l, e);
    }
    more = more || e->requery_left > 0;
  }
  if (!more)
    uv_timer_stop(t);
}

static void slurm_query(void *state, const char *executor_id) {
  slurm_launcher *l = state;
  slurm_exec *e = find_exec(l, executor_id);
  if (e == NULL || l->closing)
    return;
  query_one(l, e);
  e->requery_left = REQUERY_TRIES;
  if (!uv_is_active((uv_handle_t *)&l->requery_timer))
    uv_timer_start(&l->requery_timer, requery_tick, REQUERY_MS, REQUERY_MS);
}

/* ---------------------------------------------------------------------------------------------
 * Stopping
 */

static int slurm_signal(void *state, const char *executor_id, int signum, bool as_driver) {
  slurm_launcher *l = state;
  slurm_exec *e = find_exec(l, executor_id);
  if (e == NULL)
    return UV_ESRCH;
  if (signum == SIGKILL || signum == SIGTERM) {
    if (as_driver)
      e->requested = true;
    e->cancel_signal = signum;
    e->cancel_failed_logged = false;
    send_cancel(l, e);
    return 0;
  }
  /* Any other signal (SIGSTOP, SIGCONT for the fault tests) goes to the executor itself, the
   * batch step; it ends nothing by itself. */
  if (e->job_id == 0)
    return UV_EAGAIN;
  char job[24], sig[32];
  snprintf(job, sizeof job, "%" PRIu64, e->job_id);
  snprintf(sig, sizeof sig, "--signal=%d", signum);
  char *argv[] = {"scancel", "--batch", sig, job, NULL};
  return cmd_run(l, argv, "scancel --batch", 0, NULL);
}

static void slurm_stop_all(void *state) {
  slurm_launcher *l = state;
  l->stopping_all = true;
  l->stop_deadline = uv_now(l->loop) + STOP_ALL_WAIT_MS;
  if (l->stop_deadline < uv_now(l->loop) + 10 * l->poll_ms)
    l->stop_deadline = uv_now(l->loop) + 10 * l->poll_ms;
  for (slurm_exec *e = l->execs; e != NULL; e = e->next) {
    e->requested = true;
    e->cancel_signal = SIGKILL;
    e->cancel_failed_logged = false;
    send_cancel(l, e);
  }
}

static size_t slurm_running(void *state) { return ((slurm_launcher *)state)->running; }

/* ---------------------------------------------------------------------------------------------
 * Create and close
 */

static void free_launcher(slurm_launcher *l) {
  free(l->executor_path);
  free(l->connect_host);
  free(l->partition);
  free(l->time_limit);
  for (size_t i = 0; i < l->nextra; i++)
    free(l->extra_args[i]);
  free(l->extra_args);
  free(l);
}

static void timer_closed(uv_handle_t *h) {
  slurm_launcher *l = h->data;
  if (--l->timers_open > 0)
    return;
  void (*done)(void *) = l->close_done;
  void *ud = l->close_ud;
  free_launcher(l);
  if (done != NULL)
    done(ud);
}

/* Closing: once no executor runs, stop the commands still in flight (polls) and a parse not yet
 * begun, wait for them to go (a parse that has begun runs to its end: the pool cannot stop it),
 * then close the timers; their close callbacks free the launcher and call done. */
static void maybe_close(slurm_launcher *l) {
  if (!l->closing || l->running > 0 || l->timers_open < 2 ||
      uv_is_closing((uv_handle_t *)&l->poll_timer))
    return;
  if (l->parse != NULL && !l->parse->cancel_tried) {
    l->parse->cancel_tried = true;
    (void)uv_cancel((uv_req_t *)&l->parse->req); /* UV_EBUSY once it runs: parse_done waits */
  }
  if (l->cmds_alive > 0) {
    for (slurm_cmd *c = l->cmds; c != NULL; c = c->next)
      if (!c->exited) /* its pid may be another process's by now */
        uv_process_kill(&c->proc, SIGKILL);
  }
  if (l->cmds_alive > 0 || l->parse != NULL)
    return; /* each command's last close callback, and parse_done, call maybe_close again */
  uv_close((uv_handle_t *)&l->poll_timer, timer_closed);
  uv_close((uv_handle_t *)&l->requery_timer, timer_closed);
}

static void slurm_close(void *state, void (*done)(void *ud), void *ud) {
  slurm_launcher *l = state;
  l->closing = true;
  l->close_done = done;
  l->close_ud = ud;
  maybe_close(l);
}

static char *dup_str(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d != NULL)
    memcpy(d, s, n);
  return d;
}

static char *dup_or_null(const char *s) {
  if (s == NULL || *s == '\0')
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d != NULL)
    memcpy(d, s, n);
  return d;
}

static int slurm_create(const launcher_config *cfg, void **state) {
  if (cfg->loop == NULL || cfg->executor_path == NULL || cfg->connect_host == NULL ||
      cfg->on_end == NULL || cfg->port <= 0 || cfg->cores == 0) {
    fprintf(stderr, "launcher slurm: incomplete configuration\n");
    return UV_EINVAL;
  }
  /* They go into fixed buffers of start's sbatch options. */
  if ((cfg->partition != NULL && strlen(cfg->partition) > 200) ||
      (cfg->time_limit != NULL && strlen(cfg->time_limit) > 100)) {
    fprintf(stderr, "launcher slurm: partition or time limit too long\n");
    return UV_EINVAL;
  }
  slurm_launcher *l = calloc(1, sizeof *l);
  if (l == NULL)
    return UV_ENOMEM;
  l->loop = cfg->loop;
  l->port = cfg->port;
  l->cores = cfg->cores;
  l->gpus = cfg->gpus;
  l->heartbeat_ms = cfg->heartbeat_ms ? cfg->heartbeat_ms : 1000;
  l->reconnect_s = cfg->reconnect_s;
  l->poll_ms = cfg->poll_ms ? cfg->poll_ms : DEFAULT_POLL_MS;
  l->on_end = cfg->on_end;
  l->ud = cfg->ud;
  l->executor_args = cfg->executor_args;
  l->executor_gpus = cfg->executor_gpus;
  l->executor_path = dup_or_null(cfg->executor_path);
  l->connect_host = dup_or_null(cfg->connect_host);
  l->partition = dup_or_null(cfg->partition);
  l->time_limit = dup_or_null(cfg->time_limit);
  bool ok = l->executor_path != NULL && l->connect_host != NULL &&
            (cfg->partition == NULL || *cfg->partition == '\0' || l->partition != NULL) &&
            (cfg->time_limit == NULL || *cfg->time_limit == '\0' || l->time_limit != NULL);
  if (ok && cfg->nextra > 0) {
    l->extra_args = calloc(cfg->nextra, sizeof *l->extra_args);
    ok = l->extra_args != NULL;
    for (size_t i = 0; ok && i < cfg->nextra; i++) {
      l->extra_args[i] = dup_str(cfg->extra_args[i] ? cfg->extra_args[i] : "");
      ok = l->extra_args[i] != NULL;
      l->nextra = i + 1;
    }
  }
  if (!ok) {
    free_launcher(l);
    return UV_ENOMEM;
  }
  uv_timer_init(l->loop, &l->poll_timer);
  uv_timer_init(l->loop, &l->requery_timer);
  l->poll_timer.data = l->requery_timer.data = l;
  l->timers_open = 2;
  uv_timer_start(&l->poll_timer, poll_tick, l->poll_ms, l->poll_ms);
  *state = l;
  return 0;
}

/* ---------------------------------------------------------------------------------------------
 * Failover: a job id kept in the driver's record, and the job taken back by the next driver
 */

static size_t slurm_handle(void *state, const char *executor_id, char *buf, size_t cap) {
  slurm_exec *e = find_exec(state, executor_id);
  if (cap == 0)
    return 0;
  buf[0] = '\0';
  if (e == NULL || e->job_id == 0)
    return 0;
  int n = snprintf(buf, cap, "%" PRIu64, e->job_id);
  if (n < 0 || (size_t)n >= cap) {
    buf[0] = '\0';
    return 0;
  }
  return (size_t)n;
}

static int slurm_adopt(void *state, const char *executor_id, const char *handle) {
  slurm_launcher *l = state;
  size_t idlen = strlen(executor_id);
  int bad = new_id_check(l, executor_id);
  if (bad < 0)
    return bad;
  /* A job id as slurm_handle writes it: decimal digits, no sign or leading zero, not 0. */
  uint64_t job_id = 0;
  size_t len = strlen(handle);
  if (len == 0 || len > 20 || handle[0] == '0')
    return UV_EINVAL;
  for (size_t i = 0; i < len; i++) {
    unsigned d = (unsigned)(unsigned char)handle[i] - '0';
    if (d > 9 || job_id > (UINT64_MAX - d) / 10)
      return UV_EINVAL;
    job_id = job_id * 10 + d;
  }
  if (find_job(l, job_id) != NULL)
    return UV_EEXIST;
  slurm_exec *e = calloc(1, sizeof *e);
  if (e == NULL)
    return UV_ENOMEM;
  memcpy(e->id, executor_id, idlen + 1);
  e->serial = ++l->next_serial;
  e->job_id = job_id;
  e->next = l->execs;
  l->execs = e;
  l->running++;
  poll_now(l); /* an end during the outage is learnt at once, not at the next tick */
  return 0;
}

const launcher_ops launcher_slurm_ops = {.name = "slurm",
                                         .create = slurm_create,
                                         .start = slurm_start,
                                         .signal = slurm_signal,
                                         .stop_all = slurm_stop_all,
                                         .running = slurm_running,
                                         .query = slurm_query,
                                         .close = slurm_close,
                                         .handle = slurm_handle,
                                         .adopt = slurm_adopt};
