/* The slurm launcher against a real Slurm (test/cluster/slurm/launcher.sh brings the environment):
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
 *            last one's id is 63 bytes long (LONG_ID, a long one; ids may have up to 255): its
 *            job must be named tl-exec-ID in full.
 *
 * Before them, without Slurm, the parse of a big squeue --json answer is shown to run off the
 * loop, and close to wait for it, and adopt and handle (driver failover) are checked
 * (fake_checks, adopt_checks, below: fake Slurm commands).
 *
 *   test_launcher_slurm TL_EXECUTOR [PARTITION]
 *   test_launcher_slurm --fake-only       the fake-command checks alone (no cluster needed)
 * Prints the figures (start rate, scancel to the connection's close, scancel to the end, the
 * loop's longest gap during a big parse). Exit status 0 when everything held, 1 otherwise.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "launcher.h"
#include "proto.h"
#include "slurm_parse.h"

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
  /* A tl-executor acts on no frame before its driver's epoch (docs/cluster.md "Fencing"). */
  tlc_msg e = {.type = TLC_MSG_EPOCH, .u.epoch = {1}};
  tlc_msg m = {.type = TLC_MSG_STOP, .u.stop = {tlc_str("test over")}};
  if (tlc_encode(&b, &e) != 0 || tlc_encode(&b, &m) != 0) {
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

/* ---------------------------------------------------------------------------------------------
 * The parse off the loop, with fake Slurm commands (no cluster needed)
 *
 * sbatch, squeue, scontrol and scancel are scripts of a private directory put first in PATH:
 * sbatch answers job ids from 1001 on; squeue prints a synthetic answer of about FAKE_MB MiB (as
 * many jobs as a big cluster holds, shaped like Slurm 22.05's) in which only job 1001 is ours,
 * COMPLETED, then counts its runs in a file; scontrol says any job it is asked about was
 * CANCELLED. A 5 ms timer measures the loop's longest gap meanwhile. Three launchers, one after
 * another:
 *   big-1  its end comes from that answer (squeue --json, COMPLETED: exited 0), and the loop's
 *          longest gap during the poll stays under a quarter of what the same parse takes on
 *          this thread (or 50 ms); parsed on the loop, the gap is the parse itself
 *   big-2  close is called once squeue has answered, while its parse runs: the results are still
 *          applied (job 1002 is not listed: "no longer known to Slurm") and close ends after
 *   big-3  likewise, but its end comes first from scontrol (query): close, with nothing left to
 *          run, waits for the parse, whose results are freed unread
 * Under ASan and TSan this is also the proof that neither side touches what the other holds.
 */
#define FAKE_MB 16 /* TL_FAKE_SQUEUE_MB overrides it (64 is near the launcher's bound) */
#define FAKE_TICK_MS 5

static char fake_dir[64];       /* the fake commands' directory */
static uv_timer_t fake_timer;   /* every FAKE_TICK_MS: the gap, the next step */
static void *fake_l;            /* the launcher of the step */
static int fake_step;           /* 1..3: big-N's launcher; 4: over */
static bool fake_ended;         /* big-N's end came */
static bool fake_closed;        /* its close's done came */
static bool fake_close_called;  /* close was called */
static bool fake_queried;       /* big-3: query was called */
static int fake_runs_seen;      /* squeue runs counted before the step began */
static uint64_t fake_last_tick; /* uv_hrtime of the last tick, 0 before the first */
static uint64_t fake_max_gap;   /* the longest gap between ticks during big-1, ns */
static uint64_t fake_t_close;   /* when close was called */
static uint64_t fake_t_begin;   /* when the step began */
static double fake_parse_ms;    /* one parse of the answer, on this thread, before the loop ran */

static void fake_check(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAIL: fake Slurm, big-%d: %s\n", fake_step, what);
    failures++;
  }
}

static void fake_file(const char *name, const char *text) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", fake_dir, name);
  FILE *f = fopen(path, "w");
  if (f == NULL || fputs(text, f) < 0 || fclose(f) != 0 || chmod(path, 0755) != 0) {
    fprintf(stderr, "FAIL: cannot write %s\n", path);
    failures++;
  }
}

/* The synthetic squeue --json answer: filler jobs of other users, then job 1001. */
static bool fake_answer(const char *path) {
  FILE *f = fopen(path, "w");
  if (f == NULL)
    return false;
  fprintf(f, "{\"meta\":{\"plugin\":{\"type\":\"openapi/v0.0.38\",\"name\":\"Slurm OpenAPI "
             "v0.0.38\"},\"Slurm\":{\"version\":{\"major\":22,\"micro\":8,\"minor\":5},"
             "\"release\":\"22.05.8\"}},\"errors\":[],\"jobs\":[");
  const char *mb = getenv("TL_FAKE_SQUEUE_MB");
  long size = (mb != NULL && atol(mb) > 0 ? atol(mb) : FAKE_MB) << 20;
  for (long id = 100000; ftell(f) < size - 4096; id++) {
    fprintf(f,
            "{\"account\":\"proj%ld\",\"accrue_time\":1796272420,\"admin_comment\":\"\","
            "\"array_job_id\":0,\"array_task_id\":null,\"array_max_tasks\":0,"
            "\"batch_flag\":true,\"batch_host\":\"node%03ld\",\"flags\":[\"TRES_STR_CALC\","
            "\"JOB_WAS_RUNNING\"],\"cluster\":\"tl\",\"command\":\"/home/user%ld/run.sh\","
            "\"comment\":\"\",\"contiguous\":false,\"core_spec\":null,\"billable_tres\":1.0,"
            "\"cpus_per_task\":null,\"deadline\":0,\"delay_boot\":0,\"dependency\":\"\","
            "\"derived_exit_code\":0,\"eligible_time\":1796272420,\"end_time\":1796275420,"
            "\"excluded_nodes\":\"\",\"exit_code\":0,\"features\":\"\",\"gres_detail\":[],"
            "\"group_id\":1000,\"job_id\":%ld,\"job_resources\":{\"nodes\":\"node%03ld\","
            "\"allocated_cores\":4,\"allocated_hosts\":1,\"allocated_nodes\":[{\"sockets\":{"
            "\"0\":{\"cores\":{\"0\":\"allocated\",\"1\":\"allocated\",\"2\":\"allocated\","
            "\"3\":\"allocated\"}}},\"nodename\":\"node%03ld\",\"cpus_used\":0,"
            "\"memory_used\":0,\"memory_allocated\":4096}]},\"job_state\":\"RUNNING\","
            "\"last_sched_evaluation\":1796272420,\"licenses\":\"\",\"max_cpus\":0,"
            "\"max_nodes\":0,\"mcs_label\":\"\",\"memory_per_tres\":\"\",\"name\":\"job-%ld\","
            "\"nodes\":\"node%03ld\",\"nice\":null,\"tasks_per_core\":null,"
            "\"tasks_per_node\":0,\"tasks_per_socket\":null,\"tasks_per_board\":0,\"cpus\":4,"
            "\"node_count\":1,\"tasks\":1,\"het_job_id\":0,\"het_job_id_set\":\"\","
            "\"het_job_offset\":0,\"partition\":\"compute\",\"memory_per_node\":null,"
            "\"memory_per_cpu\":1024,\"minimum_cpus_per_node\":4,\"minimum_tmp_disk_per_node\":"
            "0,\"preempt_time\":0,\"pre_sus_time\":0,\"priority\":4294901759,\"profile\":null,"
            "\"qos\":\"normal\",\"reboot\":false,\"required_nodes\":\"\",\"requeue\":false,"
            "\"resize_time\":0,\"restart_cnt\":0,\"resv_name\":\"\",\"shared\":null,"
            "\"show_flags\":[\"SHOW_ALL\",\"SHOW_DETAIL\",\"SHOW_LOCAL\"],\"sockets_per_board\":0,"
            "\"sockets_per_node\":null,\"start_time\":1796272420,\"state_description\":\"\","
            "\"state_reason\":\"None\",\"standard_error\":\"/home/user%ld/slurm-%ld.out\","
            "\"standard_input\":\"/dev/null\",\"standard_output\":\"/home/user%ld/slurm-%ld.out\","
            "\"submit_time\":1796272420,\"suspend_time\":0,\"system_comment\":\"\","
            "\"time_limit\":1440,\"time_minimum\":0,\"threads_per_core\":null,"
            "\"tres_bind\":\"\",\"tres_freq\":\"\",\"tres_per_job\":\"\",\"tres_per_node\":\"\","
            "\"tres_per_socket\":\"\",\"tres_per_task\":\"\",\"tres_req_str\":"
            "\"cpu=4,mem=4G,node=1,billing=4\",\"tres_alloc_str\":\"cpu=4,mem=4G,node=1,"
            "billing=4\",\"user_id\":%ld,\"user_name\":\"user%ld\",\"wckey\":\"\","
            "\"current_working_directory\":\"/home/user%ld\"},",
            id % 97, id % 512, id % 97, id, id % 512, id % 512, id, id % 512, id % 97, id, id % 97,
            id, 1000 + id % 97, id % 97, id % 97);
  }
  fprintf(f, "{\"job_id\":1001,\"job_state\":\"COMPLETED\",\"state_reason\":\"None\","
             "\"name\":\"tl-exec-big-1\",\"exit_code\":0}]}\n");
  return fclose(f) == 0;
}

/* This process's resident memory in MiB (Linux), -1 where it cannot be read. */
static long fake_rss_mib(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages, resident = -1;
  if (f == NULL)
    return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
    resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024) / 1024;
}

/* Times one parse of the answer here, as the loop would have run it. */
static void fake_count_job(void *ud, const slurm_job *j) {
  (void)j;
  (*(size_t *)ud)++;
}

static bool fake_time_parse(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return false;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)len);
  bool ok = text != NULL && fread(text, 1, (size_t)len, f) == (size_t)len;
  fclose(f);
  size_t njobs = 0;
  uint64_t t0 = uv_hrtime();
  ok = ok && slurm_parse_squeue_json(text, (size_t)len, fake_count_job, &njobs) == 0;
  fake_parse_ms = ms_since(t0, uv_hrtime());
  free(text);
  printf("fake squeue --json: %.1f MiB, %zu jobs, parsed in %.0f ms on this thread; resident "
         "memory %ld MiB\n",
         (double)len / (1 << 20), njobs, fake_parse_ms, fake_rss_mib());
  return ok;
}

static int fake_squeue_runs(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/squeue-runs", fake_dir);
  FILE *f = fopen(path, "r");
  int n = 0;
  if (f == NULL)
    return 0;
  while (fgetc(f) == 'x')
    n++;
  fclose(f);
  return n;
}

static void fake_on_end(void *ud, const launcher_end *end) {
  (void)ud;
  printf("fake end: %s: kind %d, exit_code %d, reason \"%s\", source \"%s\" (%.0f ms after "
         "close)\n",
         end->executor_id, (int)end->kind, end->exit_code, end->reason, end->source,
         fake_close_called ? ms_since(fake_t_close, uv_hrtime()) : 0.0);
  char id[16];
  snprintf(id, sizeof id, "big-%d", fake_step);
  fake_check(strcmp(end->executor_id, id) == 0 && !fake_ended, "an unexpected end");
  fake_ended = true;
  const char *source = fake_step == 3 ? "scontrol show job" : "squeue --json";
  const char *reason = fake_step == 1   ? "COMPLETED: exited 0"
                       : fake_step == 2 ? "no longer known to Slurm"
                                        : "CANCELLED (not by the driver)";
  fake_check(strcmp(end->source, source) == 0, "source");
  fake_check(strstr(end->reason, reason) != NULL, "reason");
}

static void fake_close_done(void *ud) {
  (void)ud;
  printf("fake close of big-%d's launcher: done %.0f ms after close; resident memory %ld MiB\n",
         fake_step, ms_since(fake_t_close, uv_hrtime()), fake_rss_mib());
  fake_check(fake_ended, "close done before the end");
  fake_closed = true;
}

static void fake_close(void) {
  fake_close_called = true;
  fake_t_close = uv_hrtime();
  ops->close(fake_l, fake_close_done, NULL);
}

static void fake_begin(int step) {
  fake_step = step;
  fake_ended = fake_closed = fake_close_called = fake_queried = false;
  fake_runs_seen = fake_squeue_runs();
  fake_t_begin = uv_hrtime();
  launcher_config cfg = {.loop = loop,
                         .executor_path = "/bin/false", /* fake sbatch runs nothing */
                         .connect_host = "127.0.0.1",
                         .port = 9,
                         .cores = 1,
                         .poll_ms = 50,
                         .on_end = fake_on_end};
  char id[16];
  snprintf(id, sizeof id, "big-%d", step);
  fake_l = NULL;
  if (ops->create(&cfg, &fake_l) != 0 || ops->start(fake_l, id) != 0) {
    fprintf(stderr, "FAIL: cannot create the launcher or start %s\n", id);
    failures++;
    if (fake_l != NULL)
      ops->close(fake_l, NULL, NULL);
    fake_step = 4;
    uv_close((uv_handle_t *)&fake_timer, NULL);
  }
}

static void fake_tick(uv_timer_t *t) {
  uint64_t now = uv_hrtime();
  if (fake_step == 1 && fake_last_tick != 0 && now - fake_last_tick > fake_max_gap)
    fake_max_gap = now - fake_last_tick;
  fake_last_tick = now;
  bool answered = fake_squeue_runs() > fake_runs_seen;
  if (!fake_close_called && ((fake_step == 1 && fake_ended) || (fake_step == 2 && answered) ||
                             (fake_step == 3 && fake_ended))) {
    fake_close();
  } else if (fake_step == 3 && answered && !fake_queried) {
    fake_queried = true;
    ops->query(fake_l, "big-3");
  }
  if (now - fake_t_begin > 60000000000ull && !fake_closed) {
    fprintf(stderr, "FAIL: big-%d: not over within 60 s\n", fake_step);
    failures++;
    exit(1);
  }
  if (!fake_closed)
    return;
  if (fake_step == 1) {
    double gap = (double)fake_max_gap / 1e6;
    printf("fake big-1: the loop's longest gap while squeue's answer was read and parsed: %.0f "
           "ms (the parse alone takes %.0f ms)\n",
           gap, fake_parse_ms);
    fake_check(gap < (fake_parse_ms / 4 > 50 ? fake_parse_ms / 4 : 50),
               "the loop stalled during the parse");
  }
  if (fake_step < 3) {
    fake_begin(fake_step + 1);
  } else {
    fake_step = 4;
    uv_close((uv_handle_t *)t, NULL);
  }
}

/* Driver failover: adopt and handle. Bad ids and handles are refused before anything runs; an
 * adopted job is one of the launcher's (its handle, running(), duplicates refused) and its end
 * comes from the poll: job 4242 is not in the fake answer, so it ends "no longer known to
 * Slurm", and close, waiting for it, then finishes. */
static int adopt_ends;
static bool adopt_closed;

static void adopt_check(bool ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "FAIL: fake Slurm, adopt: %s\n", what);
    failures++;
  }
}

static void adopt_on_end(void *ud, const launcher_end *end) {
  (void)ud;
  printf("fake adopt end: %s: kind %d, reason \"%s\", source \"%s\"\n", end->executor_id,
         (int)end->kind, end->reason, end->source);
  adopt_ends++;
  adopt_check(strcmp(end->executor_id, "taken") == 0, "the end of another executor");
  adopt_check(end->kind == TL_LOSS_PROCESS_LOST && !end->requested && !end->caused_by_app,
              "the end's kind");
  adopt_check(strstr(end->reason, "no longer known to Slurm") != NULL, "the end's reason");
}

static void adopt_close_done(void *ud) {
  (void)ud;
  adopt_closed = true;
}

static void adopt_checks(void) {
  launcher_config cfg = {.loop = loop,
                         .executor_path = "/bin/false",
                         .connect_host = "127.0.0.1",
                         .port = 9,
                         .cores = 1,
                         .poll_ms = 50,
                         .on_end = adopt_on_end};
  void *l = NULL;
  if (ops->create(&cfg, &l) != 0) {
    adopt_check(false, "cannot create the launcher");
    return;
  }
  static const char *const bad[] = {
      "", "0", "007", "12x", "-5", " 5", "18446744073709551616", "123456789012345678901"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    adopt_check(ops->adopt(l, "taken", bad[i]) == UV_EINVAL, "a bad handle accepted");
  adopt_check(ops->adopt(l, "", "4242") == UV_EINVAL, "an empty id accepted");
  adopt_check(ops->running(l) == 0, "a refused adopt counted");
  char h[LAUNCHER_HANDLE_MAX];
  adopt_check(ops->handle(l, "taken", h, sizeof h) == 0 && h[0] == '\0', "a handle for no one");
  adopt_check(ops->adopt(l, "taken", "4242") == 0, "a good handle refused");
  adopt_check(ops->handle(l, "taken", h, sizeof h) == 4 && strcmp(h, "4242") == 0,
              "the handle of the adopted job");
  adopt_check(ops->adopt(l, "taken", "4243") == UV_EEXIST, "the same id adopted twice");
  adopt_check(ops->adopt(l, "other", "4242") == UV_EEXIST, "the same job adopted twice");
  adopt_check(ops->start(l, "taken") == UV_EEXIST, "an adopted id started again");
  adopt_check(ops->running(l) == 1, "running() does not count the adopted job");
  ops->close(l, adopt_close_done, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  adopt_check(adopt_ends == 1 && adopt_closed, "no end, or close never done");
}

/* --executor-gpus (launcher_config.gpus) against a fake sbatch that runs the job script it is
 * given, as Slurm would, with Slurm's GPU variables: the job asks for --gres=gpu:2, and the real
 * tl-executor (linked next to tl-slurm-gpus in the fake directory) takes its addresses from the
 * allocation through tl-slurm-gpus: with SLURM_JOB_GPUS=0,1 discovery passes and it fails only to
 * connect (exit 1, the port is closed); with no GPU variable it refuses to start (exit 2). */
static bool gres_closed;
static int gres_ends;

static void gres_on_end(void *ud, const launcher_end *end) {
  (void)ud;
  (void)end;
  gres_ends++;
}

static void gres_close_done(void *ud) {
  (void)ud;
  gres_closed = true;
}

static bool file_has(const char *path, const char *text) {
  char buf[8192];
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f)
    fclose(f);
  buf[n] = '\0';
  return strstr(buf, text) != NULL;
}

static void gres_run(const char *gpus_env, const char *want_rc, const char *want_err) {
  char script[1024], path[160], exe[160];
  snprintf(exe, sizeof exe, "%s/tl-executor", fake_dir);
  /* sbatch: its arguments one a line, then the --wrap script run as the job would be, with the
   * GPU variables of the allocation, its status and its stderr kept; then a job id. */
  snprintf(script, sizeof script,
           "#!/bin/sh\nprintf '%%s\\n' \"$@\" >%s/sbatch-args\nwhile [ $# -gt 1 ]; do shift; "
           "done\nunset SLURM_JOB_GPUS SLURM_STEP_GPUS CUDA_VISIBLE_DEVICES GPU_DEVICE_ORDINAL\n"
           "%s sh -c \"$1\" 2>%s/job-err\necho $? >%s/job-rc\necho 2001\n",
           fake_dir, gpus_env, fake_dir, fake_dir);
  fake_file("sbatch", script);
  launcher_config cfg = {.loop = loop,
                         .executor_path = exe,
                         .connect_host = "127.0.0.1",
                         .port = 9,
                         .cores = 1,
                         .heartbeat_ms = 100,
                         .poll_ms = 50,
                         .gpus = 2,
                         .on_end = gres_on_end};
  void *l = NULL;
  gres_closed = false;
  gres_ends = 0;
  if (ops->create(&cfg, &l) != 0 || ops->start(l, "gpu-1") != 0) {
    fprintf(stderr, "FAIL: fake Slurm, gres: cannot create the launcher or start gpu-1\n");
    failures++;
    if (l != NULL)
      ops->close(l, NULL, NULL);
    return;
  }
  ops->close(l, gres_close_done, NULL); /* once gpu-1's end is known: Slurm does not know 2001 */
  uv_run(loop, UV_RUN_DEFAULT);
  snprintf(path, sizeof path, "%s/sbatch-args", fake_dir);
  bool args = file_has(path, "\n--gres=gpu:2\n");
  snprintf(script, sizeof script, " --resource-discovery '%s/tl-slurm-gpus'", fake_dir);
  bool wrap = file_has(path, script);
  snprintf(path, sizeof path, "%s/job-rc", fake_dir);
  bool rc = file_has(path, want_rc);
  snprintf(path, sizeof path, "%s/job-err", fake_dir);
  bool err = file_has(path, want_err);
  printf("fake gres (%s): --gres=gpu:2 %s, discovery in the job script %s, job exit %s, its "
         "stderr %s\n",
         gpus_env, args ? "asked" : "MISSING", wrap ? "named" : "MISSING", rc ? want_rc : "WRONG",
         err ? "as expected" : "WRONG");
  if (!args || !wrap || !rc || !err || !gres_closed || gres_ends != 1) {
    fprintf(stderr, "FAIL: fake Slurm, gres (%s)\n", gpus_env);
    failures++;
  }
}

/* launcher_config.executor_gpus (tl-driver --executor-profile-gpus): the GPUs by executor. One
 * whose answer is 0 asks for no --gres and names no discovery script, whatever gpus says; one
 * whose answer is 3 asks for --gres=gpu:3. */
static uint32_t gpus_by_id(void *ud, const char *executor_id) {
  (void)ud;
  return strcmp(executor_id, "cpu-1") == 0 ? 0 : 3;
}

static void gres_by_profile(const char *id, bool want_gres) {
  char script[1024], path[160], exe[160];
  snprintf(exe, sizeof exe, "%s/tl-executor", fake_dir);
  snprintf(script, sizeof script,
           "#!/bin/sh\nprintf '%%s\\n' \"$@\" >%s/sbatch-args\necho 2002\n", fake_dir);
  fake_file("sbatch", script);
  launcher_config cfg = {.loop = loop,
                         .executor_path = exe,
                         .connect_host = "127.0.0.1",
                         .port = 9,
                         .cores = 1,
                         .heartbeat_ms = 100,
                         .poll_ms = 50,
                         .gpus = 2,
                         .executor_gpus = gpus_by_id,
                         .on_end = gres_on_end};
  void *l = NULL;
  gres_closed = false;
  gres_ends = 0;
  if (ops->create(&cfg, &l) != 0 || ops->start(l, id) != 0) {
    fprintf(stderr, "FAIL: fake Slurm, gres by profile: cannot create the launcher or start %s\n",
            id);
    failures++;
    if (l != NULL)
      ops->close(l, NULL, NULL);
    return;
  }
  ops->close(l, gres_close_done, NULL);
  uv_run(loop, UV_RUN_DEFAULT);
  snprintf(path, sizeof path, "%s/sbatch-args", fake_dir);
  bool gres = file_has(path, "--gres=");
  bool three = file_has(path, "\n--gres=gpu:3\n");
  bool discovery = file_has(path, "--resource-discovery");
  printf("fake gres by profile (%s): --gres %s, discovery %s\n", id, gres ? "asked" : "not asked",
         discovery ? "named" : "not named");
  if (gres != want_gres || discovery != want_gres || (want_gres && !three) || !gres_closed) {
    fprintf(stderr, "FAIL: fake Slurm, gres by profile (%s)\n", id);
    failures++;
  }
}

static void gres_checks(void) {
  char path[160];
  snprintf(path, sizeof path, "%s/tl-executor", fake_dir);
  if (symlink(TL_EXECUTOR_BIN, path) != 0) {
    fprintf(stderr, "FAIL: fake Slurm, gres: cannot link %s\n", TL_EXECUTOR_BIN);
    failures++;
    return;
  }
  FILE *in = fopen(TL_SLURM_GPUS, "r");
  char text[4096];
  size_t n = in ? fread(text, 1, sizeof text - 1, in) : 0;
  if (in)
    fclose(in);
  text[n] = '\0';
  fake_file("tl-slurm-gpus", text);
  setenv("TL_CLUSTER_TOKEN", TOKEN, 1);
  /* A small squeue answer that lists no job: the executor's job is gone at the first poll. */
  fake_file("squeue", "#!/bin/sh\necho '{\"errors\":[],\"jobs\":[]}'\n");
  gres_run("SLURM_JOB_GPUS=0,1", "1", "connect");
  gres_run("SLURM_STEP_GPUS=", "2", "no GPU in Slurm's allocation");
  gres_by_profile("cpu-1", false);
  gres_by_profile("gpu-2", true);
}

/* Runs the three steps above on the loop, then the adopt and gres checks; failures counts what
 * went wrong. */
static void fake_checks(void) {
  static const char *const names[] = {"sbatch",      "squeue",   "scontrol",    "scancel",
                                      "next",        "big.json", "squeue-runs", "tl-slurm-gpus",
                                      "tl-executor", "job-rc",   "job-err",     "sbatch-args",
                                      NULL};
  snprintf(fake_dir, sizeof fake_dir, "/tmp/tl-fake-slurm-XXXXXX");
  if (mkdtemp(fake_dir) == NULL) {
    fprintf(stderr, "FAIL: mkdtemp\n");
    failures++;
    return;
  }
  char script[512], path[128];
  snprintf(script, sizeof script,
           "#!/bin/sh\nn=$(cat %s/next)\necho $((n + 1)) >%s/next\necho \"$n\"\n", fake_dir,
           fake_dir);
  fake_file("sbatch", script);
  fake_file("next", "1001\n");
  snprintf(script, sizeof script, "#!/bin/sh\ncat %s/big.json\nprintf x >>%s/squeue-runs\n",
           fake_dir, fake_dir);
  fake_file("squeue", script);
  fake_file("scontrol", "#!/bin/sh\necho \"JobId=$4 JobName=x JobState=CANCELLED "
                        "Reason=None ExitCode=0:15\"\n");
  fake_file("scancel", "#!/bin/sh\nexit 0\n");
  snprintf(path, sizeof path, "%s/big.json", fake_dir);
  bool ok = fake_answer(path) && fake_time_parse(path);
  fake_check(ok, "cannot write or parse the synthetic squeue answer");
  const char *old_path = getenv("PATH");
  char *saved = strdup(old_path ? old_path : "/usr/bin:/bin");
  size_t n = strlen(fake_dir) + strlen(saved) + 2;
  char *fake_path = malloc(n);
  snprintf(fake_path, n, "%s:%s", fake_dir, saved);
  setenv("PATH", fake_path, 1);
  if (ok && failures == 0) {
    uv_timer_init(loop, &fake_timer);
    uv_timer_start(&fake_timer, fake_tick, FAKE_TICK_MS, FAKE_TICK_MS);
    fake_begin(1);
    uv_run(loop, UV_RUN_DEFAULT);
    adopt_checks();
    gres_checks();
  }
  setenv("PATH", saved, 1);
  free(saved);
  free(fake_path);
  for (int i = 0; names[i] != NULL; i++) {
    snprintf(path, sizeof path, "%s/%s", fake_dir, names[i]);
    unlink(path);
  }
  rmdir(fake_dir);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: test_launcher_slurm TL_EXECUTOR [PARTITION] | --fake-only\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  loop = uv_default_loop();
  fake_checks();
  if (strcmp(argv[1], "--fake-only") == 0) {
    check(uv_loop_close(loop) == 0, "handles left open on the loop", 0);
    printf("%s\n", failures == 0 ? "OK" : "FAILED");
    return failures == 0 ? 0 : 1;
  }
  setenv("TL_CLUSTER_TOKEN", TOKEN, 1); /* as the driver does before creating the launcher */
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
