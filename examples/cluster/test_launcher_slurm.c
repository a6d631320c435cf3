/* The slurm launcher against a real Slurm (test/slurm/launcher.sh brings the environment):
 * executors started as Slurm jobs connect to a small listener here that reads their REGISTER
 * and stands in for the driver; then each way an executor can end is made to happen and the end
 * the launcher reports is checked against what Slurm must have said.
 *
 *   phase 1  exec-1..4 started and registered (the token checked: it came through the
 *            environment), then at once:
 *              exec-1  `scancel --signal=KILL JOB` from outside: PROCESS_LOST, not the app's,
 *                      "CANCELLED (not by the driver)"; query() is called when its connection
 *                      drops, as the driver does, so scontrol usually answers first
 *              exec-2  signal(SIGKILL, as_driver): KILLED, requested
 *              exec-3  its connection closed by us: the executor exits 1, Slurm says FAILED
 *                      1:0: EXITED 1, the app's
 *              exec-4  sent STOP: it exits 0, COMPLETED: EXITED 0, not the app's
 *   phase 2  exec-5..12 started together (executors registered per second measured), then
 *            stop_all: every end KILLED and requested, running() 0, close's done called. The
 *            last one's id is 63 bytes long (LONG_ID, the longest allowed): its job must be
 *            named tl-exec-ID in full.
 *
 *   test_launcher_slurm TL_EXECUTOR [PARTITION]
 * Prints the figures (start rate, scancel to the connection's close, scancel to the end). Exit
 * status 0 when everything held, 1 otherwise.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "launcher.h"
#include "proto.h"

extern const launcher_ops launcher_slurm_ops;

#define NEXEC 12
#define PHASE1 4
#define TOKEN "test-launcher-slurm-token"
/* Executor NEXEC's id: 63 bytes, exec_number reads 12 from it. */
#define LONG_ID "exec-12-abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabc"

typedef struct conn {
  uv_tcp_t tcp;       /* the executor's connection */
  tlc_decoder dec;    /* its frames */
  char id[TL_ID_MAX]; /* its id once REGISTER came, "" before */
  bool closing;       /* uv_close called */
} conn;

typedef struct expect {
  tl_loss_kind kind;
  bool caused_by_app;
  bool requested;
  int exit_code;      /* -1: any */
  const char *reason; /* a substring of the reason */
} expect;

static uv_loop_t *loop;
static const launcher_ops *ops = &launcher_slurm_ops;
static void *launcher;
static uv_tcp_t server;
static uv_timer_t step_timer;
static conn *conns[NEXEC + 1];     /* by executor number, once registered */
static bool registered[NEXEC + 1]; /* REGISTER came with the right token */
static bool ended[NEXEC + 1];      /* on_end came */
static uint64_t t_end[NEXEC + 1];  /* when (uv_hrtime) */
static uint64_t t_close1;          /* exec-1's connection closed */
static uint64_t t_scancel1;        /* the outside scancel of exec-1 returned */
static int failures;
static int phase;
static uint64_t t_phase_start;
static uint64_t t_start2, t_registered2, t_stop_all;
static bool closed_done;
static const expect expected[PHASE1 + 1] = {
    {0},
    {TL_LOSS_PROCESS_LOST, false, false, -1, "CANCELLED (not by the driver)"},
    {TL_LOSS_KILLED, false, true, -1, "cancelled by the driver"},
    {TL_LOSS_EXITED, true, false, 1, "FAILED: exited 1"},
    {TL_LOSS_EXITED, false, false, 0, "COMPLETED: exited 0"}};

static void check(bool ok, const char *what, int n) {
  if (!ok) {
    fprintf(stderr, "FAIL: exec-%d: %s\n", n, what);
    failures++;
  }
}

static int exec_number(const char *id) {
  int n = 0;
  if (sscanf(id, "exec-%d", &n) != 1 || n < 1 || n > NEXEC)
    return 0;
  return n;
}

static void on_end(void *ud, const launcher_end *end) {
  (void)ud;
  int n = exec_number(end->executor_id);
  printf("end: %s: kind %d, caused_by_app %d, exit_code %d, requested %d, reason \"%s\", "
         "source \"%s\"\n",
         end->executor_id, (int)end->kind, end->caused_by_app, end->exit_code, end->requested,
         end->reason, end->source);
  check(n > 0 && !ended[n], "an end for an unknown executor, or a second one", n);
  if (n == 0 || ended[n])
    return;
  ended[n] = true;
  t_end[n] = uv_hrtime();
  check(end->source != NULL && (strcmp(end->source, "squeue --json") == 0 ||
                                strcmp(end->source, "scontrol show job") == 0),
        "the source is not a Slurm command", n);
  if (n <= PHASE1) {
    const expect *x = &expected[n];
    check(end->kind == x->kind, "kind", n);
    check(end->caused_by_app == x->caused_by_app, "caused_by_app", n);
    check(end->requested == x->requested, "requested", n);
    check(x->exit_code < 0 || end->exit_code == x->exit_code, "exit_code", n);
    check(strstr(end->reason, x->reason) != NULL, "reason", n);
  } else {
    check(end->kind == TL_LOSS_KILLED && end->requested && !end->caused_by_app,
          "a stop_all end that is not a requested kill", n);
  }
}

static void conn_closed(uv_handle_t *h) {
  conn *c = h->data;
  tlc_decoder_fini(&c->dec);
  free(c);
}

static void conn_close(conn *c) {
  if (c->closing)
    return;
  c->closing = true;
  int n = exec_number(c->id);
  if (n > 0 && conns[n] == c)
    conns[n] = NULL;
  uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)h;
  buf->base = malloc(suggested);
  buf->len = buf->base ? suggested : 0;
}

static void conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  conn *c = s->data;
  if (nread < 0) {
    int n = exec_number(c->id);
    if (n == 1 && t_close1 == 0)
      t_close1 = uv_hrtime();
    /* The first phase, as the driver sees it: ask the launcher for news now. */
    if (n > 0 && !ended[n] && launcher != NULL)
      ops->query(launcher, c->id);
    conn_close(c);
  }
  const char *p = buf->base;
  size_t len = nread > 0 ? (size_t)nread : 0;
  while (len > 0 && !c->closing) {
    size_t used;
    tlc_msg msg;
    if (tlc_decoder_feed(&c->dec, (const uint8_t *)p, len, &used, &msg) < 0) {
      conn_close(c);
      break;
    }
    p += used;
    len -= used;
    if (msg.type == TLC_MSG_REGISTER && c->id[0] == '\0') {
      tlc_register *r = &msg.u.reg;
      snprintf(c->id, sizeof c->id, "%.*s", (int)r->executor_id.len,
               (const char *)r->executor_id.ptr);
      int n = exec_number(c->id);
      bool token_ok =
          r->token.len == strlen(TOKEN) && memcmp(r->token.ptr, TOKEN, r->token.len) == 0;
      check(n > 0 && !registered[n], "registered twice or unknown", n);
      check(token_ok, "the token did not arrive through the environment", n);
      if (n > 0 && !registered[n]) {
        registered[n] = true;
        conns[n] = c;
      }
    }
  }
  free(buf->base);
}

static void on_connection(uv_stream_t *srv, int status) {
  if (status < 0)
    return;
  conn *c = calloc(1, sizeof *c);
  uv_tcp_init(loop, &c->tcp);
  c->tcp.data = c;
  tlc_decoder_init(&c->dec, TLC_FRAME_MAX);
  if (uv_accept(srv, (uv_stream_t *)&c->tcp) == 0)
    uv_read_start((uv_stream_t *)&c->tcp, conn_alloc, conn_read);
  else
    conn_close(c);
}

static void write_done(uv_write_t *w, int status) {
  (void)status;
  free(w->data);
  free(w);
}

static void send_stop(conn *c) {
  tlc_buf b;
  tlc_buf_init(&b);
  tlc_msg m = {.type = TLC_MSG_STOP, .u.stop = {tlc_str("test over")}};
  if (tlc_encode(&b, &m) != 0) {
    tlc_buf_free(&b);
    return;
  }
  uv_write_t *w = malloc(sizeof *w);
  w->data = b.data; /* freed in write_done */
  uv_buf_t ub = uv_buf_init((char *)b.data, (unsigned)b.len);
  uv_write(w, (uv_stream_t *)&c->tcp, &ub, 1, write_done);
}

/* The job id of executor id, from squeue (a blocking call: this is a test, not the launcher). */
static long job_of(const char *id) {
  char cmd[256], line[64] = "";
  snprintf(cmd, sizeof cmd, "squeue -h -t R -n tl-exec-%s -o %%i", id);
  FILE *f = popen(cmd, "r");
  if (f == NULL)
    return -1;
  if (fgets(line, sizeof line, f) == NULL)
    line[0] = '\0';
  pclose(f);
  return atol(line);
}

static double ms_since(uint64_t t0, uint64_t t1) { return (double)(t1 - t0) / 1e6; }

static void close_done(void *ud) {
  (void)ud;
  closed_done = true;
  launcher = NULL;
  uv_close((uv_handle_t *)&server, NULL);
  uv_close((uv_handle_t *)&step_timer, NULL);
  for (int n = 1; n <= NEXEC; n++)
    if (conns[n] != NULL)
      conn_close(conns[n]);
}

static bool all(bool *flags, int from, int to) {
  for (int n = from; n <= to; n++)
    if (!flags[n])
      return false;
  return true;
}

static void step(uv_timer_t *t) {
  (void)t;
  uint64_t now = uv_hrtime();
  if (now - t_phase_start > 60000000000ull) {
    fprintf(stderr, "FAIL: phase %d did not finish within 60 s\n", phase);
    failures++;
    phase = 99;
    ops->stop_all(launcher);
    ops->close(launcher, close_done, NULL);
    uv_timer_stop(&step_timer);
    return;
  }
  switch (phase) {
  case 1: /* wait for exec-1..4 */
    if (!all(registered, 1, PHASE1))
      return;
    printf("phase 1: %d executors registered in %.0f ms\n", PHASE1, ms_since(t_phase_start, now));
    {
      char cmd[128];
      long job = job_of("exec-1");
      check(job > 0, "no running job found with squeue", 1);
      snprintf(cmd, sizeof cmd, "scancel --signal=KILL %ld", job);
      uint64_t t0 = uv_hrtime();
      check(system(cmd) == 0, "scancel failed", 1);
      t_scancel1 = t0;
    }
    check(ops->signal(launcher, "exec-2", SIGKILL, true) == 0, "signal", 2);
    conn_close(conns[3]);
    send_stop(conns[4]);
    phase = 2;
    t_phase_start = now;
    return;
  case 2: /* wait for their ends */
    if (!all(ended, 1, PHASE1))
      return;
    printf("exec-1: scancel --signal=KILL to its connection's close %.0f ms, to the launcher's "
           "end %.0f ms\n",
           ms_since(t_scancel1, t_close1), ms_since(t_scancel1, t_end[1]));
    check(ops->running(launcher) == 0, "running() is not 0 after phase 1", 0);
    t_start2 = uv_hrtime();
    for (int n = PHASE1 + 1; n <= NEXEC; n++) {
      char id[TL_ID_MAX];
      snprintf(id, sizeof id, "%s", LONG_ID);
      if (n < NEXEC)
        snprintf(id, sizeof id, "exec-%d", n);
      check(ops->start(launcher, id) == 0, "start", n);
    }
    check(ops->running(launcher) == NEXEC - PHASE1, "running() after the starts", 0);
    phase = 3;
    t_phase_start = now;
    return;
  case 3:
    if (!all(registered, PHASE1 + 1, NEXEC))
      return;
    t_registered2 = uv_hrtime();
    printf("phase 2: %d executors started and registered in %.0f ms: %.1f executors/s\n",
           NEXEC - PHASE1, ms_since(t_start2, t_registered2),
           (NEXEC - PHASE1) / (ms_since(t_start2, t_registered2) / 1000));
    check(job_of(LONG_ID) > 0, "no running job named tl-exec-" LONG_ID, NEXEC);
    t_stop_all = uv_hrtime();
    ops->stop_all(launcher);
    check(ops->start(launcher, "exec-late") < 0, "start after stop_all accepted", 0);
    phase = 4;
    t_phase_start = now;
    return;
  case 4:
    if (ops->running(launcher) != 0)
      return;
    check(all(ended, PHASE1 + 1, NEXEC), "running() 0 before every end", 0);
    printf("stop_all: %d ends in %.0f ms\n", NEXEC - PHASE1, ms_since(t_stop_all, uv_hrtime()));
    phase = 5;
    ops->close(launcher, close_done, NULL);
    uv_timer_stop(&step_timer);
    return;
  default:
    return;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_launcher_slurm TL_EXECUTOR [PARTITION]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  setenv("TL_CLUSTER_TOKEN", TOKEN, 1); /* as the driver does before creating the launcher */
  loop = uv_default_loop();
  struct sockaddr_in addr;
  uv_ip4_addr("127.0.0.1", 0, &addr);
  uv_tcp_init(loop, &server);
  if (uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0) != 0 ||
      uv_listen((uv_stream_t *)&server, 64, on_connection) != 0) {
    fprintf(stderr, "cannot listen\n");
    return 1;
  }
  struct sockaddr_storage ss;
  int len = sizeof ss;
  uv_tcp_getsockname(&server, (struct sockaddr *)&ss, &len);
  int port = ntohs(((struct sockaddr_in *)&ss)->sin_port);

  launcher_config cfg = {.loop = loop,
                         .executor_path = argv[1],
                         .connect_host = "127.0.0.1",
                         .port = port,
                         .cores = 1,
                         .heartbeat_ms = 200,
                         .partition = argc > 2 ? argv[2] : NULL,
                         .poll_ms = 500,
                         .on_end = on_end};
  int rc = ops->create(&cfg, &launcher);
  if (rc != 0) {
    fprintf(stderr, "create: %s\n", uv_strerror(rc));
    return 1;
  }
  for (int n = 1; n <= PHASE1; n++) {
    char id[16];
    snprintf(id, sizeof id, "exec-%d", n);
    if (ops->start(launcher, id) != 0) {
      fprintf(stderr, "start %s failed\n", id);
      return 1;
    }
  }
  check(ops->start(launcher, "exec-1") == UV_EEXIST, "a second start of exec-1 accepted", 1);
  phase = 1;
  t_phase_start = uv_hrtime();
  uv_timer_init(loop, &step_timer);
  uv_timer_start(&step_timer, step, 20, 20);
  uv_run(loop, UV_RUN_DEFAULT);
  check(closed_done, "close never called done", 0);
  check(uv_loop_close(loop) == 0, "handles left open on the loop", 0);
  printf("%s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}
