/* tl-wordcount: a small multi-threaded runtime on taskledger, the way a runtime embeds it.
 *
 * One driver thread runs a libuv loop with the libuv driver on a scheduler with deferred
 * delivery, so every callback runs on that thread; worker threads are the executors. They take
 * their launches from a queue, run them, heartbeat and report FINISHED with tl_status_update from
 * their own threads. The job is a two-stage word count over generated text: stage 0 counts the
 * words of each chunk, stage 1 (submitted from the task_ended callback that sees the last map
 * task end) sums the counts of a range of words over every chunk. One worker is killed silently
 * after it took a few tasks: it stops heartbeating and never reports what it held, the heartbeat
 * timeout finds it, and its tasks run again elsewhere.
 *
 * The verdict, exit status 0 only if all hold: the counts equal a serial count of the same text,
 * every callback ran on the loop's thread, the killed worker was lost and its tasks rerun, and
 * the ledger drained to empty.
 *
 *   tl-wordcount [--workers N] [--chunks N] [--words N] [--seed N] [--quiet]
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "taskledger-uv.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CORES 2              /* cores per worker (its slots: it runs their tasks one by one) */
#define NREDUCE 4            /* stage 1's tasks: each sums a range of the vocabulary */
#define HEARTBEAT_MS 50      /* how often a live worker heartbeats */
#define HEARTBEAT_TIMEOUT 1  /* seconds of silence before a worker is lost */
#define MAX_WORKERS 16

/* The vocabulary, sorted (a map task finds each word by binary search). */
static const char *const vocab[] = {
    "a",     "about", "after",  "all",   "and",   "any",   "as",    "at",   "be",    "but",
    "by",    "can",   "come",   "day",   "do",    "even",  "first", "for",  "from",  "get",
    "give",  "go",    "good",   "have",  "he",    "her",   "his",   "how",  "i",     "if",
    "in",    "into",  "it",     "just",  "know",  "like",  "look",  "make", "me",    "most",
    "my",    "new",   "no",     "not",   "now",   "of",    "on",    "one",  "only",  "or",
    "other", "our",   "out",    "over",  "people", "say",  "see",   "she",  "so",    "some",
    "take",  "than",  "that",   "the",   "their", "them",  "then",  "there", "these", "they",
    "think", "this",  "time",   "to",    "two",   "up",    "us",    "use",  "want",  "way",
    "we",    "well",  "what",   "when",  "which", "who",   "will",  "with", "work",  "would",
    "year",  "you",   "your"};
#define NVOCAB (sizeof vocab / sizeof vocab[0])

/* One worker thread: an executor of CORES cores. */
typedef struct worker {
  struct job *job;
  unsigned index;
  char id[24]; /* "worker-N" */
  pthread_t thread;
  pthread_mutex_t mu;   /* guards the queue and stop */
  pthread_cond_t cv;    /* a launch was queued, or stop */
  tl_launch queue[64];  /* launches not yet run (at most CORES at a time: free cores bound it) */
  size_t qhead, qlen;
  bool stop;            /* the job is over: return */
  unsigned taken;       /* launches it took, for the killing */
  bool killed;          /* it was killed: it went silent and dropped what it held */
} worker;

/* A stage's payload: what its tasks compute. */
typedef struct stage {
  uint32_t id;
  uint32_t ntasks;
} stage;

typedef struct job {
  tl_scheduler *s;
  tl_uv *driver;
  pthread_t loop_thread;
  unsigned nworkers, nchunks, words_per_chunk, victim;
  uint64_t seed;
  bool quiet;
  worker workers[MAX_WORKERS];
  char **chunks;            /* the text, one string per map task */
  uint32_t **map_out;       /* per chunk: counts[NVOCAB], set on the map task's success */
  uint32_t reduce_out[NVOCAB];
  unsigned maps_done, reduces_done;
  bool stage1_submitted, stage1_from_loop_thread, done, failed;
  unsigned callbacks, off_thread; /* callbacks made, and those not on the loop thread */
  unsigned lost_executors, lost_attempts, victim_lost;
  tl_loss_kind victim_loss;
} job;

static void die(const char *what, int rc) {
  fprintf(stderr, "tl-wordcount: %s: %s\n", what, rc < 0 ? tl_strerror(rc) : strerror(rc));
  exit(2);
}

static uint64_t next_rand(uint64_t *x) { /* splitmix64 */
  uint64_t z = (*x += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static int vocab_index(const char *w, size_t len) {
  size_t lo = 0, hi = NVOCAB;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    int c = strncmp(vocab[mid], w, len);
    if (c == 0 && vocab[mid][len] != '\0')
      c = 1;
    if (c == 0)
      return (int)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* ---------------------------------------------------------------------------------------------
 * The tasks, run on the worker threads.
 * ------------------------------------------------------------------------------------------- */

/* Map: the counts of each vocabulary word in one chunk. */
static uint32_t *count_chunk(const char *text) {
  uint32_t *counts = calloc(NVOCAB, sizeof *counts);
  if (counts == NULL)
    die("calloc", ENOMEM);
  for (const char *p = text; *p != '\0';) {
    while (*p == ' ')
      p++;
    const char *w = p;
    while (*p != '\0' && *p != ' ')
      p++;
    int k = vocab_index(w, (size_t)(p - w));
    if (k >= 0)
      counts[k]++;
  }
  return counts;
}

/* Reduce r: the sums over every chunk of the words [r * NVOCAB / NREDUCE, (r + 1) * ...). The
 * map outputs were all written before stage 1 was submitted, on the loop's thread; the worker's
 * queue mutex orders those writes before this read. */
static uint32_t *sum_range(const job *j, uint32_t r) {
  uint32_t *sums = calloc(NVOCAB, sizeof *sums);
  if (sums == NULL)
    die("calloc", ENOMEM);
  for (size_t k = r * NVOCAB / NREDUCE; k < (r + 1) * NVOCAB / NREDUCE; k++)
    for (unsigned c = 0; c < j->nchunks; c++)
      sums[k] += j->map_out[c][k];
  return sums;
}

static void *worker_main(void *arg) {
  worker *w = arg;
  job *j = w->job;
  for (;;) {
    pthread_mutex_lock(&w->mu);
    if (w->qhead == w->qlen && !w->stop) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += HEARTBEAT_MS * 1000000L;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      pthread_cond_timedwait(&w->cv, &w->mu, &until);
    }
    if (w->stop) {
      pthread_mutex_unlock(&w->mu);
      return NULL;
    }
    bool have = w->qhead != w->qlen;
    tl_launch l = {0};
    if (have)
      l = w->queue[w->qhead++ % 64];
    /* The victim dies after its third task arrives: silently, holding what it was given. */
    if (have && w->index == j->victim && ++w->taken == 3)
      w->killed = true;
    bool killed = w->killed;
    pthread_mutex_unlock(&w->mu);
    if (killed)
      continue; /* a dead process: no heartbeat, no report, until the job tells it to stop */
    int rc = tl_executor_heartbeat(j->s, w->id);
    if (rc != TL_OK) /* it was lost after all (a slow machine): nothing of it counts any more */
      continue;
    if (!have)
      continue;
    const stage *st = l.payload;
    uint32_t *out = st->id == 0 ? count_chunk(j->chunks[l.index]) : sum_range(j, l.index);
    tl_update u = {.state = TL_TASK_FINISHED,
                   .result = out,
                   .result_size = NVOCAB * sizeof *out,
                   .result_free = free};
    if (tl_status_update(j->s, w->id, l.tid, &u) != TL_OK)
      free(out); /* stale (its attempt ended meanwhile): the result stays ours */
  }
}

/* ---------------------------------------------------------------------------------------------
 * The driver's side: the callbacks, all on the loop's thread.
 * ------------------------------------------------------------------------------------------- */

static void on_loop_thread(job *j) {
  j->callbacks++;
  if (!pthread_equal(pthread_self(), j->loop_thread))
    j->off_thread++;
}

/* Offers every live worker's free cores and queues the launches on their workers. */
static void offer_all(job *j) {
  tl_executor_info info[MAX_WORKERS];
  tl_offer offers[MAX_WORKERS];
  size_t n, noffers = 0, cores = 0;
  int rc = tl_executor_list(j->s, info, MAX_WORKERS, &n);
  if (rc != TL_OK)
    die("tl_executor_list", rc);
  for (size_t i = 0; i < n && i < MAX_WORKERS; i++)
    if (info[i].state == TL_EXECUTOR_ALIVE && info[i].free_cores > 0) {
      offers[noffers++] = (tl_offer){((worker *)info[i].ud)->id, info[i].free_cores};
      cores += info[i].free_cores;
    }
  if (noffers == 0)
    return;
  tl_launch launches[MAX_WORKERS * CORES];
  size_t nl;
  rc = tl_resource_offers(j->s, offers, noffers, launches, cores, &nl);
  if (rc != TL_OK)
    die("tl_resource_offers", rc);
  for (size_t i = 0; i < nl; i++) {
    worker *w = launches[i].executor_ud; /* registered as the executor's ud: no lookup */
    pthread_mutex_lock(&w->mu);
    w->queue[w->qlen++ % 64] = launches[i];
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
  }
}

static void submit_stage(job *j, uint32_t id, uint32_t ntasks) {
  stage *st = malloc(sizeof *st);
  if (st == NULL)
    die("malloc", ENOMEM);
  *st = (stage){id, ntasks};
  tl_taskset_desc d = {.stage_id = id, .ntasks = ntasks, .priority = 0, .payload = st};
  int rc = tl_submit(j->s, &d, NULL);
  if (rc != TL_OK)
    die("tl_submit", rc);
}

static void on_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  job *j = ud;
  on_loop_thread(j);
  const stage *st = t->payload;
  if (end->kind == TL_END_SUCCESS) {
    uint32_t *out = end->result;
    if (st->id == 0 && j->map_out[t->index] != NULL) {
      free(out); /* a second success of a done index (two copies): one is enough */
    } else if (st->id == 0) {
      j->map_out[t->index] = out;
      if (++j->maps_done == j->nchunks) {
        /* The next stage, from inside the callback, as a DAG layer does. */
        j->stage1_submitted = true;
        j->stage1_from_loop_thread = pthread_equal(pthread_self(), j->loop_thread);
        submit_stage(j, 1, NREDUCE);
      }
    } else {
      for (size_t k = t->index * NVOCAB / NREDUCE; k < (t->index + 1) * NVOCAB / NREDUCE; k++)
        j->reduce_out[k] = out[k];
      j->reduces_done++;
      free(out);
    }
  } else if (end->kind == TL_END_EXECUTOR_LOST) {
    j->lost_attempts++;
  }
  offer_all(j);
}

static void on_taskset_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  job *j = ud;
  on_loop_thread(j);
  fprintf(stderr, "tl-wordcount: stage %u failed: %s\n", ts->stage_id, reason);
  j->failed = true;
}

static void on_taskset_released(void *ud, const tl_taskset_info *ts, void *payload) {
  job *j = ud;
  on_loop_thread(j);
  free(payload);
  if (ts->stage_id == 1 || j->failed) {
    j->done = true;
    int rc = tl_uv_stop(j->driver, NULL, NULL);
    if (rc != TL_OK)
      die("tl_uv_stop", rc);
  }
}

static void on_executor_lost(void *ud, const char *id, void *executor_ud,
                             const tl_loss_reason *why) {
  job *j = ud;
  on_loop_thread(j);
  j->lost_executors++;
  if (executor_ud == &j->workers[j->victim]) {
    j->victim_lost++;
    j->victim_loss = why->kind;
  }
  if (!j->quiet)
    printf("executor %s lost: %s\n", id, tl_loss_kind_name(why->kind));
}

static void on_revive(void *ud) {
  job *j = ud;
  on_loop_thread(j);
  offer_all(j);
}

/* ---------------------------------------------------------------------------------------------
 * The job.
 * ------------------------------------------------------------------------------------------- */

static void make_text(job *j) {
  uint64_t x = j->seed;
  j->chunks = calloc(j->nchunks, sizeof *j->chunks);
  j->map_out = calloc(j->nchunks, sizeof *j->map_out);
  if (j->chunks == NULL || j->map_out == NULL)
    die("calloc", ENOMEM);
  for (unsigned c = 0; c < j->nchunks; c++) {
    size_t cap = (size_t)j->words_per_chunk * 8 + 1, len = 0;
    char *text = malloc(cap);
    if (text == NULL)
      die("malloc", ENOMEM);
    for (unsigned k = 0; k < j->words_per_chunk; k++) {
      /* Skewed: low vocabulary indices are far more common, like words of a real text. */
      uint64_t r = next_rand(&x);
      size_t wi = (size_t)((r % NVOCAB) * ((r >> 32) % NVOCAB) / NVOCAB);
      len += (size_t)snprintf(text + len, cap - len, "%s%s", k ? " " : "", vocab[wi]);
    }
    j->chunks[c] = text;
  }
}

static bool counts_match(const job *j) {
  uint32_t serial[NVOCAB] = {0};
  for (unsigned c = 0; c < j->nchunks; c++) {
    uint32_t *counts = count_chunk(j->chunks[c]);
    for (size_t k = 0; k < NVOCAB; k++)
      serial[k] += counts[k];
    free(counts);
  }
  return memcmp(serial, j->reduce_out, sizeof serial) == 0;
}

static unsigned parse_uint(const char *opt, const char *v, unsigned lo, unsigned hi) {
  char *end;
  errno = 0;
  unsigned long x = strtoul(v, &end, 10);
  if (errno != 0 || *end != '\0' || end == v || x < lo || x > hi) {
    fprintf(stderr, "tl-wordcount: %s wants a number from %u to %u, not '%s'\n", opt, lo, hi, v);
    exit(2);
  }
  return (unsigned)x;
}

int main(int argc, char **argv) {
  static job j;
  j.nworkers = 4;
  j.nchunks = 64;
  j.words_per_chunk = 2000;
  j.seed = 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--quiet") == 0) {
      j.quiet = true;
      continue;
    }
    if (v == NULL) {
      fprintf(stderr, "usage: tl-wordcount [--workers N] [--chunks N] [--words N] [--seed N] "
                      "[--quiet]\n");
      return 2;
    }
    if (strcmp(a, "--workers") == 0)
      j.nworkers = parse_uint(a, v, 2, MAX_WORKERS);
    else if (strcmp(a, "--chunks") == 0)
      j.nchunks = parse_uint(a, v, 1, 100000);
    else if (strcmp(a, "--words") == 0)
      j.words_per_chunk = parse_uint(a, v, 1, 1000000);
    else if (strcmp(a, "--seed") == 0)
      j.seed = parse_uint(a, v, 0, 4000000000u);
    else {
      fprintf(stderr, "tl-wordcount: unknown option %s\n", a);
      return 2;
    }
    i++;
  }
  j.victim = j.nworkers - 1;
  make_text(&j);

  tl_config cfg;
  tl_config_init(&cfg);
  cfg.delivery = TL_DELIVER_DEFERRED; /* every callback on the loop's thread */
  cfg.heartbeat_timeout_ns = HEARTBEAT_TIMEOUT * UINT64_C(1000000000);
  tl_callbacks cb = {.ud = &j,
                     .task_ended = on_task_ended,
                     .taskset_failed = on_taskset_failed,
                     .taskset_released = on_taskset_released,
                     .executor_lost = on_executor_lost,
                     .revive_offers = on_revive};
  int rc = tl_scheduler_new(&cfg, &cb, &j.s);
  if (rc != TL_OK)
    die("tl_scheduler_new", rc);
  uv_loop_t loop;
  if ((rc = uv_loop_init(&loop)) != 0)
    die("uv_loop_init", -rc);
  j.loop_thread = pthread_self();

  for (unsigned i = 0; i < j.nworkers; i++) {
    worker *w = &j.workers[i];
    w->job = &j;
    w->index = i;
    snprintf(w->id, sizeof w->id, "worker-%u", i);
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    char host[32];
    snprintf(host, sizeof host, "host-%u", i / 2);
    tl_executor_desc d = {.id = w->id, .host = host, .cores = CORES, .ud = w};
    if ((rc = tl_executor_add(j.s, &d)) != TL_OK)
      die("tl_executor_add", rc);
    if ((rc = pthread_create(&w->thread, NULL, worker_main, w)) != 0)
      die("pthread_create", rc);
  }
  submit_stage(&j, 0, j.nchunks);
  /* The driver delivers what was queued (the submission's revive_offers: the first offers),
   * then runs the loop until the last stage's release stops it. */
  if ((rc = tl_uv_start(j.s, &loop, &j.driver)) != TL_OK)
    die("tl_uv_start", rc);
  uv_run(&loop, UV_RUN_DEFAULT);

  for (unsigned i = 0; i < j.nworkers; i++) {
    worker *w = &j.workers[i];
    pthread_mutex_lock(&w->mu);
    w->stop = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
  }
  /* The workers' last calls may have queued events after the driver stopped. */
  while ((rc = tl_dispatch(j.s)) > 0) {
  }
  /* Shut down: every worker leaves; what is left in the ledger must be nothing. */
  for (unsigned i = 0; i < j.nworkers; i++) {
    tl_loss_reason why = {.kind = TL_LOSS_KILLED, .message = "job over"};
    rc = tl_executor_lost(j.s, j.workers[i].id, &why);
    if (rc != TL_OK && rc != TL_EGONE)
      die("tl_executor_lost", rc);
  }
  while (tl_dispatch(j.s) > 0) {
  }
  tl_stats st;
  tl_stats_get(j.s, &st);
  char why[256];
  bool clean = tl_check(j.s, why, sizeof why) == TL_OK;
  bool drained = st.tasksets_active == 0 && st.tasksets_zombie == 0 && st.attempts_running == 0 &&
                 st.attempts_frozen == 0 && st.tasks_pending == 0 && st.executors_alive == 0 &&
                 st.executors_pending_loss == 0 && st.hosts == 0 && st.events_queued == 0;
  bool counts = j.done && !j.failed && counts_match(&j);
  bool threads = j.off_thread == 0 && j.stage1_from_loop_thread;
  bool loss = j.victim_lost == 1 && j.victim_loss == TL_LOSS_HEARTBEAT_TIMEOUT;

  uint64_t words = (uint64_t)j.nchunks * j.words_per_chunk;
  printf("words: %" PRIu64 " in %u chunks, %zu distinct; counts %s the serial count\n", words,
         j.nchunks, NVOCAB, counts ? "equal" : "DIFFER FROM");
  printf("tasks: %" PRIu64 " launched for %u (stage 0 %u, stage 1 %u), %u lost with their "
         "executor and run again\n",
         st.launched, j.nchunks + NREDUCE, j.nchunks, NREDUCE, j.lost_attempts);
  printf("killed worker: %s, lost by %s\n", j.workers[j.victim].id,
         j.victim_lost ? tl_loss_kind_name(j.victim_loss) : "nothing (NOT LOST)");
  printf("callbacks: %u, on the loop's thread %u; stage 1 submitted from a callback there: %s\n",
         j.callbacks, j.callbacks - j.off_thread, j.stage1_from_loop_thread ? "yes" : "NO");
  printf("ledger: %s, %s\n", drained ? "drained" : "NOT DRAINED", clean ? "tl_check clean" : why);
  bool ok = counts && threads && loss && drained && clean && j.lost_attempts > 0;
  printf("verdict: %s\n", ok ? "ok" : "FAILED");

  rc = tl_scheduler_free(j.s);
  if (rc != TL_OK)
    die("tl_scheduler_free", rc);
  uv_loop_close(&loop);
  for (unsigned i = 0; i < j.nworkers; i++) {
    pthread_mutex_destroy(&j.workers[i].mu);
    pthread_cond_destroy(&j.workers[i].cv);
  }
  for (unsigned c = 0; c < j.nchunks; c++) {
    free(j.chunks[c]);
    free(j.map_out[c]);
  }
  free(j.chunks);
  free(j.map_out);
  return ok ? 0 : 1;
}
