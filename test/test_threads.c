/* Thread stress: several threads drive one scheduler at once (offers, status updates, executor
 * losses, submissions, kills and cancellations, inspection) while callbacks re-enter it. A
 * recorder with its own mutex checks the order of every event per task, task set and executor;
 * the end of each test proves every task set, result and byte came back exactly once, and that
 * the run's call journal, in lock order, replays call for call.
 *
 * Runs are bounded by work, not time. TLT_SEED=N reruns every test from seed N (a failure prints
 * the seed to use); TLT_THREADS_VERBOSE=1 prints what each run exercised.
 */
#include "harness.h"

#include "../examples/replay/replay.h"

#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>

#define MAX_WORKERS 4    /* worker threads a scenario may have */
#define MAX_INSPECTORS 2 /* inspector threads a scenario may have */
#define MAX_CORES 8      /* cores of an executor, and launches one offer can make */
#define MAX_TID 10000000 /* a tid above this is garbage: the recorder refuses to index it */
#define NONE UINT32_MAX  /* no executor */
#define NO_CHAIN UINT32_MAX
#define SET_MAGIC 0x53455453u
#define RESULT_MAGIC 0x52534c54u

/* A set of acceptable return codes: bit -rc, so TL_OK is bit 0. */
#define RC(code) (1u << -(code))

/* ---------------------------------------------------------------------------------------------
 * What a scenario runs.
 * ------------------------------------------------------------------------------------------- */

typedef struct knobs {
  unsigned workers;      /* worker threads, each driving its own executors (1 to MAX_WORKERS) */
  uint32_t cores;        /* cores of each executor, offered whole every round */
  unsigned chains;       /* DAG chains of stages (0: no DAG) */
  unsigned stages;       /* stages per chain */
  unsigned feed_sets;    /* without chains: task sets a feeder thread submits as work drains */
  uint32_t feed_tasks;   /* and tasks in each */
  unsigned pct_running;  /* chance the owner reports RUNNING before the end, in percent */
  unsigned pct_fail;     /* chance an attempt ends by a FAILED or KILLED update, in percent */
  bool fetch_failures;   /* some failures are FETCH_FAILED (the chain resubmits the stage) */
  unsigned pct_hold;     /* chance the owner keeps an attempt for a later round, in percent */
  unsigned losses;       /* executor losses a loser thread makes (0: no loser) */
  bool decommission;     /* workers sometimes decommission their executor and retire it */
  unsigned kills;        /* kill and cancel calls a killer thread makes (0: no killer) */
  bool answer_kills;     /* kill_task answers with a KILLED update, from the callback */
  bool offer_on_revive;  /* revive_offers offers some worker's executor, from the callback */
  bool running_on_start; /* task_started reports RUNNING, from the callback */
  unsigned inspectors;   /* threads inspecting and ticking (1 to MAX_INSPECTORS) */
  uint64_t tick_ns;      /* how far an inspector moves the clock before each tl_tick */
  tl_config cfg;         /* the scheduler's config; the clock and journal are the test's */
} knobs;

static knobs knobs_default(void) {
  knobs k;
  memset(&k, 0, sizeof k);
  k.workers = MAX_WORKERS;
  k.cores = 2;
  k.pct_running = 80;
  k.inspectors = 1;
  k.tick_ns = 1000; /* 1 us: no heartbeat of 120 s can expire in any number of rounds */
  k.cfg = tlt_config();
  k.cfg.max_task_failures = 3;
  k.cfg.max_tombstones = 100000;                     /* no tombstone is evicted during a run */
  k.cfg.tombstone_ttl_ns = UINT64_C(3600) * TLT_SEC; /* nor expires: the drain expires them */
  return k;
}

/* ---------------------------------------------------------------------------------------------
 * The recorder's records. Everything in them is protected by stress.mu.
 * ------------------------------------------------------------------------------------------- */

/* One attempt, indexed by tid (tids are dense from 1). */
typedef struct tid_rec {
  uint8_t launched;    /* launches returned by offers: must end at 1 */
  uint8_t started;     /* task_started deliveries: must end at 1 */
  uint8_t ended;       /* task_ended deliveries: must end at 1 */
  uint8_t kills;       /* kill_task deliveries, each between started and ended */
  uint8_t ok_terminal; /* terminal updates answered TL_OK: at most 1 */
  uint8_t ok_kind;     /* the tl_end_kind that update reported */
  uint8_t end_kind;    /* the tl_end_kind task_ended reported */
  bool end_counts;     /* counts_toward_failures of task_ended */
  bool running_ok;     /* a RUNNING update was answered TL_OK */
  bool described;      /* the four fields below are set (by its launch or its task_started) */
  uint32_t exec;       /* its executor's registry index */
  tl_taskset_id ts;    /* its task set */
  uint32_t index;      /* its task index */
  uint32_t attempt;    /* its attempt number */
  /* Who must deliver its events. A call that returns before its event is delivered found
   * another thread dispatching, which delivers it; a call made inside a callback has its events
   * delivered by the same thread, after the callback. 0: the event came before the call
   * returned; 1: it had not, and the call came from outside callbacks; 2: from inside one. */
  uint8_t start_pending;  /* for task_started, by the offer that launched it */
  uint8_t end_pending;    /* for task_ended, by the update that was taken */
  pthread_t start_caller; /* the thread of that offer */
  pthread_t end_caller;   /* and of that update */
} tid_rec;

/* One executor the test registered, named "x<registry index>". */
typedef struct exec_rec {
  unsigned owner;          /* the worker that registered it */
  unsigned added;          /* executor_added deliveries: must end at 1 */
  unsigned lost;           /* executor_lost deliveries: must end at 1 (the drain loses all) */
  bool registered;         /* tl_executor_add answered TL_OK */
  bool decommissioned;     /* tl_executor_decommission answered TL_OK */
  bool removed_not_by_app; /* a loss whose reason counts no failure did its second phase */
  bool loss_claimed;       /* the loser or its owner chose to lose it */
} exec_rec;

/* One task set; it is also the payload given to tl_submit, so every event finds it. */
typedef struct ts_rec {
  uint32_t magic;         /* SET_MAGIC */
  tl_taskset_id id;       /* 0 until tl_submit returns or an event names it */
  uint32_t chain;         /* its DAG chain, or NO_CHAIN */
  uint32_t step;          /* its stage's place in the chain (the feed number without one) */
  uint32_t stage_id;      /* as submitted */
  uint32_t stage_attempt; /* as submitted */
  uint32_t ntasks;        /* as submitted */
  unsigned started;       /* task_started deliveries of its attempts */
  unsigned ended;         /* task_ended deliveries of its attempts */
  unsigned failed;        /* taskset_failed deliveries: at most 1 */
  unsigned released;      /* taskset_released deliveries: must end at 1 */
  uint32_t nsucceeded;    /* indices whose success was delivered */
  bool advanced;          /* its chain moved on because of it (done, aborted, fetch failure) */
  uint8_t done[];         /* per index: a success was delivered */
} ts_rec;

/* A result handed over with a FINISHED update. */
typedef struct thr_result {
  uint32_t magic;    /* RESULT_MAGIC */
  tl_tid tid;        /* the attempt whose update carried it */
  size_t size;       /* the size given with it */
  atomic_uint frees; /* times freed (by task_ended's callee or, on error, the caller): 1 */
} thr_result;

/* Attempts a worker still has to report. */
typedef struct work_item {
  tl_tid tid;    /* the attempt */
  uint32_t exec; /* the executor it was launched on */
  unsigned age;  /* rounds it has been held */
} work_item;

typedef struct work_list {
  work_item *v;
  size_t n, cap;
} work_list;

/* One DAG chain: stages submitted one after another, the next when the last ends. */
typedef struct chain_rec {
  uint32_t stage_id; /* the stage submitted last (what the killer aims at) */
  bool done;         /* its last stage ended */
} chain_rec;

typedef struct stress stress;

/* One thread of a scenario (the test's own thread has one too: callbacks run on any). */
typedef struct thr_ctx {
  stress *st;       /* the scenario */
  const char *role; /* "main", "worker", "dag", "inspector", "loser", "killer" */
  unsigned index;   /* among threads of its role */
  uint64_t seed;    /* its seed, printed on failure */
  uint64_t rng;     /* its generator's state */
  work_list local;  /* worker: the attempts it runs */
  uint32_t exec;    /* worker: its executor now, or NONE */
  unsigned depth;   /* callbacks of the scheduler this thread is inside (0 or 1) */
  pthread_t thread; /* the thread */
} thr_ctx;

struct stress {
  knobs k;                  /* the scenario */
  tl_scheduler *s;          /* the scheduler under test */
  atomic_uint_fast64_t now; /* the manual clock, in nanoseconds */
  uint64_t seed;            /* the test's seed; each thread's is derived from it */
  size_t base_bytes;        /* tl_stats.mem_live_bytes of the empty scheduler */
  size_t base_blocks;       /* and mem_live_blocks */
  bool can_lose;            /* executors are lost while work runs (a loser, retirement) */
  bool ends_race;           /* someone other than the owner may end an attempt (loss, kill) */
  unsigned update_ok;       /* what the owner's status updates may answer */

  pthread_mutex_t mu;   /* the recorder's lock: protects every field down to `draining` */
  tid_rec *tids;        /* indexed by tid */
  size_t ntids, tidcap; /* entries used (highest tid + 1) and allocated */
  ts_rec **sets;        /* every task set submitted, in submission order */
  size_t nsets, setcap;
  ts_rec **by_id; /* indexed by task set id, once known */
  size_t nby_id, by_idcap;
  exec_rec *execs; /* indexed by registry index */
  size_t nexecs, execcap;
  thr_result **results; /* every result made */
  size_t nresults, rescap;
  work_list inbox[MAX_WORKERS]; /* launches made by callbacks, for the executor's owner */
  chain_rec *chains;            /* k.chains of them */
  tl_tid last_started;          /* the tid of the last task_started: they come in tid order */
  char *journal;                /* the journal lines so far, each ended by a newline */
  size_t journal_len, journal_cap;
  bool draining; /* the final drain runs: chains no longer move */

  atomic_int in_callback;                /* a callback (or journal line) of this scheduler runs */
  atomic_uint chains_done;               /* chains whose last stage ended */
  atomic_bool supply_done;               /* the DAG or feeder thread has submitted all it submits */
  atomic_bool go;                        /* every thread is created: start (so that they overlap) */
  atomic_bool stop;                      /* the workers are done: inspectors and the killer stop */
  atomic_uint losses_made;               /* losses the loser has begun */
  atomic_bool failed;                    /* something failed: every thread stops */
  atomic_uint current_exec[MAX_WORKERS]; /* each worker's executor now, or NONE */
  atomic_uint_fast64_t max_ts_id;        /* the highest task set id submitted so far */
  atomic_size_t callbacks;               /* callbacks delivered */
  atomic_size_t finished_ok;             /* FINISHED updates answered TL_OK */
  atomic_size_t deferred;  /* terminal updates whose task_ended came after they returned */
  atomic_size_t reentrant; /* calls made from inside callbacks */

  pthread_mutex_t fail_mu; /* protects why */
  char why[1024];          /* the first failure, with the thread and seed that saw it */

  thr_ctx main_ctx;             /* the test's thread */
  thr_ctx workers[MAX_WORKERS]; /* and the others */
  thr_ctx inspectors[MAX_INSPECTORS];
  thr_ctx dag, loser, killer;
};

static _Thread_local thr_ctx *self; /* the running thread's context */

/* ---------------------------------------------------------------------------------------------
 * Failures. Only the test's thread may use Check's asserts (a failed assert leaves the thread
 * that makes it), so every other thread, and every callback, records the first failure here and
 * stops; the test asserts after joining them.
 * ------------------------------------------------------------------------------------------- */

static void failf(stress *st, int line, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&st->fail_mu);
  if (!atomic_load(&st->failed)) {
    snprintf(st->why, sizeof st->why, "line %d, on %s %u (thread seed %#" PRIx64 "): %s", line,
             self != NULL ? self->role : "?", self != NULL ? self->index : 0,
             self != NULL ? self->seed : 0, msg);
    atomic_store(&st->failed, true);
  }
  pthread_mutex_unlock(&st->fail_mu);
}

#define EXPECT(st, cond, ...)                                                                      \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      failf((st), __LINE__, __VA_ARGS__);                                                          \
  } while (0)

/* Fails unless rc is one of allowed (a set of RC bits). */
#define EXPECT_RC(st, rc, allowed, what)                                                           \
  do {                                                                                             \
    int rc_ = (rc);                                                                                \
    if (rc_ > 0 || rc_ < -31 || ((allowed)&RC(rc_)) == 0)                                          \
      failf((st), __LINE__, "%s returned %s", (what), tl_err_name(rc_));                           \
  } while (0)

/* Asserts on the test's thread that no thread has failed. */
static void assert_no_failure(stress *st) {
  ck_assert_msg(!atomic_load(&st->failed),
                "%s [test seed %#" PRIx64 "; TLT_SEED=%" PRIu64 " reruns it]", st->why, st->seed,
                st->seed);
}

/* ---------------------------------------------------------------------------------------------
 * Small utilities.
 * ------------------------------------------------------------------------------------------- */

static uint64_t rnd(thr_ctx *c) { /* splitmix64 */
  uint64_t z = (c->rng += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static unsigned below(thr_ctx *c, unsigned n) { return (unsigned)(rnd(c) % n); }

/* Grows an array of elem-sized entries to hold need, zeroing the new part. The test's own
 * memory running out is not something to report: it stops the process. */
static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return p;
  size_t c = *cap != 0 ? *cap : 16;
  while (c < need)
    c *= 2;
  char *q = realloc(p, c * elem);
  if (q == NULL)
    abort();
  memset(q + *cap * elem, 0, (c - *cap) * elem);
  *cap = c;
  return q;
}

static void list_push(work_list *w, tl_tid tid, uint32_t exec) {
  w->v = grow(w->v, &w->cap, w->n + 1, sizeof *w->v);
  w->v[w->n++] = (work_item){tid, exec, 0};
}

static void exec_name(uint32_t ex, char id[16]) { snprintf(id, 16, "x%" PRIu32, ex); }
/* The ud an executor is registered with: its registry index + 1 (the registry moves when it
 * grows, so no pointer into it would do). */
static void *exec_ud(uint32_t ex) { return (void *)(uintptr_t)(ex + 1u); }

/* Executors of worker w live on host h<w % 3>; hosts h0 and h1 are on rack ra, h2 on none. */
static void exec_host(unsigned owner, char host[16]) { snprintf(host, 16, "h%u", owner % 3); }
static const char *exec_rack(unsigned owner) { return owner % 3 == 2 ? NULL : "ra"; }

static uint32_t stage_of(uint32_t chain, uint32_t step) {
  return chain == NO_CHAIN ? 1000 + step : chain * 100 + step;
}

static uint64_t stress_clock(void *ud) { return atomic_load(&((stress *)ud)->now); }

static tl_end_kind kind_of(tl_task_state state, tl_end_kind failure) {
  return state == TL_TASK_FINISHED ? TL_END_SUCCESS
         : state == TL_TASK_KILLED ? TL_END_KILLED
                                   : failure;
}

/* Under mu: the record of a tid (NULL, after a failure, for a tid that cannot be one). */
static tid_rec *tid_at(stress *st, tl_tid tid) {
  if (tid == 0 || tid > MAX_TID) {
    failf(st, __LINE__, "tid %" PRIu64 " is not one the scheduler could have made", tid);
    return NULL;
  }
  st->tids = grow(st->tids, &st->tidcap, (size_t)tid + 1, sizeof *st->tids);
  if (tid >= st->ntids)
    st->ntids = (size_t)tid + 1;
  return &st->tids[tid];
}

/* Under mu: the registry index of an executor id the library gave us, or NONE. */
static uint32_t exec_parse(stress *st, const char *id) {
  if (id == NULL || id[0] != 'x')
    return NONE;
  char *end;
  unsigned long v = strtoul(id + 1, &end, 10);
  if (end == id + 1 || *end != '\0' || v >= st->nexecs)
    return NONE;
  return (uint32_t)v;
}

/* Under mu: remembers which task set id a record has; each id names one record. */
static void map_id(stress *st, ts_rec *ts) {
  st->by_id = grow(st->by_id, &st->by_idcap, (size_t)ts->id + 1, sizeof *st->by_id);
  if (ts->id >= st->nby_id)
    st->nby_id = (size_t)ts->id + 1;
  EXPECT(st, st->by_id[ts->id] == NULL || st->by_id[ts->id] == ts,
         "task set id %" PRIu64 " given to two submissions", ts->id);
  st->by_id[ts->id] = ts;
}

/* Under mu: the record of a payload an event carries, learning its id on first sight. */
static ts_rec *set_of(stress *st, tl_taskset_id id, void *payload, const char *what) {
  ts_rec *ts = payload;
  if (ts == NULL || ts->magic != SET_MAGIC) {
    failf(st, __LINE__, "%s of task set %" PRIu64 " carries %p, no payload of this test", what, id,
          payload);
    return NULL;
  }
  if (ts->id == 0) {
    ts->id = id;
    map_id(st, ts);
  }
  EXPECT(st, ts->id == id, "%s names task set %" PRIu64 " with the payload of %" PRIu64, what, id,
         ts->id);
  return ts;
}

/* Under mu: a task set by id alone (taskset_failed carries no payload). Before its tl_submit
 * returns and before any event names it, the id is unknown: then it is the one live submission
 * of that stage attempt with no id yet. */
static ts_rec *set_by_id(stress *st, const tl_taskset_info *info) {
  if (info->id < st->nby_id && st->by_id[info->id] != NULL)
    return st->by_id[info->id];
  for (size_t i = 0; i < st->nsets; i++) {
    ts_rec *ts = st->sets[i];
    if (ts->id == 0 && ts->released == 0 && ts->stage_id == info->stage_id &&
        ts->stage_attempt == info->stage_attempt) {
      ts->id = info->id;
      map_id(st, ts);
      return ts;
    }
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * Calls into the library, each recording what it returned. What may be answered depends on
 * what races with the call; each caller passes its set and says why.
 * ------------------------------------------------------------------------------------------- */

static void thr_result_free(void *result) {
  thr_result *r = result;
  if (r != NULL && r->magic == RESULT_MAGIC)
    atomic_fetch_add(&r->frees, 1);
  else
    abort(); /* not a result of ours: memory corruption, nothing to report safely */
}

static thr_result *result_new(stress *st, tl_tid tid) {
  thr_result *r = calloc(1, sizeof *r);
  if (r == NULL)
    abort();
  r->magic = RESULT_MAGIC;
  r->tid = tid;
  r->size = 16 + (size_t)(tid % 64);
  atomic_init(&r->frees, 0);
  pthread_mutex_lock(&st->mu);
  st->results = grow(st->results, &st->rescap, st->nresults + 1, sizeof *st->results);
  st->results[st->nresults++] = r;
  pthread_mutex_unlock(&st->mu);
  return r;
}

/* Registers a new executor for worker owner: TL_OK only (its id is new, its host's rack is the
 * same for every executor of the host). Returns its registry index, NONE after a failure. */
static uint32_t add_exec(stress *st, unsigned owner) {
  pthread_mutex_lock(&st->mu);
  st->execs = grow(st->execs, &st->execcap, st->nexecs + 1, sizeof *st->execs);
  uint32_t ex = (uint32_t)st->nexecs++;
  st->execs[ex].owner = owner;
  pthread_mutex_unlock(&st->mu);
  char id[16], host[16];
  exec_name(ex, id);
  exec_host(owner, host);
  tl_executor_desc d = {
      .id = id, .host = host, .rack = exec_rack(owner), .cores = st->k.cores, .ud = exec_ud(ex)};
  int rc = tl_executor_add(st->s, &d);
  EXPECT_RC(st, rc, RC(TL_OK), "tl_executor_add");
  pthread_mutex_lock(&st->mu);
  st->execs[ex].registered = rc == TL_OK;
  pthread_mutex_unlock(&st->mu);
  return rc == TL_OK ? ex : NONE;
}

/* Submits a task set: TL_OK only (stage attempts are unique: a chain's stage is submitted again
 * only with the next attempt number). Returns its record. */
static ts_rec *submit_set(stress *st, uint32_t chain, uint32_t step, uint32_t attempt,
                          uint32_t ntasks) {
  ts_rec *ts = calloc(1, sizeof *ts + ntasks);
  if (ts == NULL)
    abort();
  ts->magic = SET_MAGIC;
  ts->chain = chain;
  ts->step = step;
  ts->stage_id = stage_of(chain, step);
  ts->stage_attempt = attempt;
  ts->ntasks = ntasks;
  pthread_mutex_lock(&st->mu);
  st->sets = grow(st->sets, &st->setcap, st->nsets + 1, sizeof *st->sets);
  st->sets[st->nsets++] = ts;
  if (chain != NO_CHAIN)
    st->chains[chain].stage_id = ts->stage_id;
  pthread_mutex_unlock(&st->mu);
  tl_taskset_desc d = {.stage_id = ts->stage_id,
                       .stage_attempt = attempt,
                       .priority = chain == NO_CHAIN ? 0 : chain,
                       .ntasks = ntasks,
                       .payload = ts};
  tl_taskset_id id = 0;
  int rc = tl_submit(st->s, &d, &id);
  EXPECT_RC(st, rc, RC(TL_OK), "tl_submit");
  if (rc != TL_OK)
    return ts;
  pthread_mutex_lock(&st->mu);
  if (ts->id == 0) {
    ts->id = id;
    map_id(st, ts);
  }
  EXPECT(st, ts->id == id, "tl_submit gave id %" PRIu64 ", events said %" PRIu64, id, ts->id);
  pthread_mutex_unlock(&st->mu);
  uint_fast64_t max = atomic_load(&st->max_ts_id);
  while (id > max && !atomic_compare_exchange_weak(&st->max_ts_id, &max, id)) {
  }
  return ts;
}

/* Under mu: checks a tid's launch or task_started against what is already known of it. */
static void describe(stress *st, tid_rec *r, tl_tid tid, uint32_t ex, tl_taskset_id ts,
                     uint32_t index, uint32_t attempt, const char *what) {
  if (!r->described) {
    r->described = true;
    r->exec = ex;
    r->ts = ts;
    r->index = index;
    r->attempt = attempt;
    return;
  }
  EXPECT(st, r->exec == ex && r->ts == ts && r->index == index && r->attempt == attempt,
         "%s of tid %" PRIu64 " says x%u ts %" PRIu64 " index %u attempt %u; known: x%u ts %" PRIu64
         " index %u attempt %u",
         what, tid, ex, ts, index, attempt, r->exec, r->ts, r->index, r->attempt);
}

/* Under mu, on a call's return: remembers that its event has not come yet, and from where. */
static void note_pending(uint8_t *pending, pthread_t *caller) {
  *pending = self != NULL && self->depth > 0 ? 2 : 1;
  *caller = pthread_self();
}

/* Under mu, at delivery: checks the thread delivering it against the rule of tid_rec. */
static void check_deliverer(stress *st, uint8_t pending, pthread_t caller, tl_tid tid,
                            const char *what) {
  bool same = pthread_equal(caller, pthread_self()) != 0;
  EXPECT(st, pending != 1 || !same,
         "%s of tid %" PRIu64 " was not delivered when its call returned, yet that same thread "
         "delivered it later: no other thread was dispatching it",
         what, tid);
  EXPECT(st, pending != 2 || same,
         "%s of tid %" PRIu64 " was made from inside a callback and delivered by another thread",
         what, tid);
}

/* Offers the whole of an executor: TL_OK only (an offer naming an executor that cannot take
 * tasks launches nothing and is counted, it is no error). Launches go to list, or, when list is
 * NULL, to the inbox of the executor's owner. Returns the number of launches. */
static size_t offer(stress *st, uint32_t ex, work_list *list) {
  char id[16];
  exec_name(ex, id);
  tl_offer o = {.executor_id = id, .cores = st->k.cores};
  tl_launch l[MAX_CORES];
  size_t n = SIZE_MAX;
  int rc = tl_resource_offers(st->s, &o, 1, l, st->k.cores, &n);
  EXPECT_RC(st, rc, RC(TL_OK), "tl_resource_offers");
  if (rc != TL_OK)
    return 0;
  EXPECT(st, n <= st->k.cores, "%zu launches for an offer of %u cores", n, st->k.cores);
  if (n > st->k.cores)
    return 0;
  pthread_mutex_lock(&st->mu);
  unsigned owner = st->execs[ex].owner;
  for (size_t i = 0; i < n; i++) {
    tid_rec *r = tid_at(st, l[i].tid);
    if (r == NULL)
      break;
    EXPECT(st, r->launched++ == 0, "tid %" PRIu64 " launched twice", l[i].tid);
    EXPECT(st, l[i].executor_id == id && l[i].offer == 0, "launch on %s from an offer of %s",
           l[i].executor_id, id);
    EXPECT(st, l[i].executor_ud == exec_ud(ex), "launch on %s with the ud of another", id);
    EXPECT(st, l[i].cpus == st->k.cfg.cpus_per_task && l[i].locality == TL_NO_PREF,
           "launch of tid %" PRIu64 " with %u cpus at locality %d", l[i].tid, l[i].cpus,
           (int)l[i].locality);
    ts_rec *ts = set_of(st, l[i].taskset, l[i].payload, "a launch");
    if (ts != NULL)
      EXPECT(st,
             l[i].stage_id == ts->stage_id && l[i].stage_attempt == ts->stage_attempt &&
                 l[i].index < ts->ntasks,
             "launch of tid %" PRIu64 ": stage %u.%u index %u, task set has %u.%u/%u", l[i].tid,
             l[i].stage_id, l[i].stage_attempt, l[i].index, ts->stage_id, ts->stage_attempt,
             ts->ntasks);
    describe(st, r, l[i].tid, ex, l[i].taskset, l[i].index, l[i].attempt, "launch");
    if (r->started == 0)
      note_pending(&r->start_pending, &r->start_caller);
    list_push(list != NULL ? list : &st->inbox[owner], l[i].tid, ex);
  }
  pthread_mutex_unlock(&st->mu);
  return n;
}

/* A status update; a FINISHED one carries a fresh result, given back to the caller (and freed
 * here) when the update is refused. */
static int update(stress *st, uint32_t ex, tl_tid tid, tl_task_state state, tl_end_kind failure,
                  unsigned allowed, const char *who) {
  char id[16];
  exec_name(ex, id);
  tl_update u = {.state = state, .failure = failure};
  thr_result *res = NULL;
  if (state == TL_TASK_FINISHED) {
    res = result_new(st, tid);
    u.result = res;
    u.result_size = res->size;
    u.result_free = thr_result_free;
  }
  if (state == TL_TASK_FAILED)
    u.message = "stress failure";
  int rc = tl_status_update(st->s, id, tid, &u);
  if (rc < 0 || rc > 0) {
    char what[96];
    snprintf(what, sizeof what, "%s: tl_status_update(%s, tid %" PRIu64 ", state %d)", who, id, tid,
             (int)state);
    EXPECT_RC(st, rc, allowed, what);
    if (res != NULL)
      atomic_fetch_add(&res->frees, 1); /* still ours: the update was refused */
    return rc;
  }
  pthread_mutex_lock(&st->mu);
  tid_rec *r = tid_at(st, tid);
  if (r != NULL && state == TL_TASK_RUNNING) {
    r->running_ok = true;
  } else if (r != NULL) {
    r->ok_terminal++;
    r->ok_kind = (uint8_t)kind_of(state, failure);
    if (r->ended == 0) {
      note_pending(&r->end_pending, &r->end_caller);
      atomic_fetch_add(&st->deferred, 1);
    }
  }
  pthread_mutex_unlock(&st->mu);
  if (state == TL_TASK_FINISHED)
    atomic_fetch_add(&st->finished_ok, 1);
  return rc;
}

/* An executor loss. A real reason answered TL_OK did the second phase; if that reason counts
 * no failure, no attempt of it may say counts_toward_failures. */
static int lose(stress *st, uint32_t ex, tl_loss_kind kind, bool app, unsigned allowed,
                const char *who) {
  char id[16];
  exec_name(ex, id);
  tl_loss_reason why = {.kind = kind, .caused_by_app = app, .exit_code = 3, .message = who};
  int rc = tl_executor_lost(st->s, id, &why);
  char what[96];
  snprintf(what, sizeof what, "%s: tl_executor_lost(%s, %s)", who, id, tl_loss_kind_name(kind));
  EXPECT_RC(st, rc, allowed, what);
  if (rc == TL_OK && kind != TL_LOSS_PENDING &&
      (!app || kind == TL_LOSS_KILLED || kind == TL_LOSS_DECOMMISSIONED)) {
    pthread_mutex_lock(&st->mu);
    st->execs[ex].removed_not_by_app = true;
    pthread_mutex_unlock(&st->mu);
  }
  return rc;
}

/* Claims an executor for a loss, so that two threads rarely aim at the same one (they may:
 * both answers are then checked). */
static bool claim_loss(stress *st, uint32_t ex) {
  pthread_mutex_lock(&st->mu);
  bool mine = !st->execs[ex].loss_claimed;
  st->execs[ex].loss_claimed = true;
  pthread_mutex_unlock(&st->mu);
  return mine;
}

/* The work is done: everything the DAG or feeder submits is submitted, every chain ended, and
 * the ledger holds no task set (so no attempt, running or frozen, and nothing can launch). */
static bool work_done(stress *st) {
  if (!atomic_load(&st->supply_done) || atomic_load(&st->chains_done) < st->k.chains)
    return false;
  tl_stats s;
  tl_stats_get(st->s, &s);
  return s.tasksets_active == 0 && s.tasksets_zombie == 0;
}

/* ---------------------------------------------------------------------------------------------
 * The DAG: a chain moves on once per task set, when its last index succeeded, when it was
 * aborted (taskset_failed), or at a fetch failure (the same stage again, up to attempt 2).
 * ------------------------------------------------------------------------------------------- */

typedef struct next_set {
  bool submit; /* a task set is to be submitted */
  uint32_t chain, step, attempt;
} next_set;

static uint32_t chain_tasks(uint32_t chain, uint32_t step, uint32_t attempt) {
  return 1 + (chain * 7 + step * 3 + attempt) % 8;
}

/* Under mu: what ts's end makes its chain do. */
static next_set advance(stress *st, ts_rec *ts, bool fetch_failed) {
  next_set n = {false, 0, 0, 0};
  if (ts->chain == NO_CHAIN || ts->advanced || st->draining)
    return n;
  ts->advanced = true;
  n.chain = ts->chain;
  if (fetch_failed && ts->stage_attempt < 2) {
    n.step = ts->step;
    n.attempt = ts->stage_attempt + 1;
  } else if (ts->step + 1 < st->k.stages) {
    n.step = ts->step + 1;
  } else {
    st->chains[ts->chain].done = true;
    atomic_fetch_add(&st->chains_done, 1);
    return n;
  }
  n.submit = true;
  return n;
}

/* Outside mu, from the callback: the re-entrant submission of the chain's next task set. */
static void submit_next(stress *st, next_set n) {
  if (!n.submit)
    return;
  atomic_fetch_add(&st->reentrant, 1);
  submit_set(st, n.chain, n.step, n.attempt, chain_tasks(n.chain, n.step, n.attempt));
}

/* ---------------------------------------------------------------------------------------------
 * Callbacks. Each records and checks under mu, then acts (re-entrant calls) after releasing
 * it: mu is never held across a call into the library, which may deliver callbacks itself.
 * ------------------------------------------------------------------------------------------- */

/* The library runs one callback of a scheduler at a time, on whichever thread dispatches. */
static void enter_cb(stress *st, const char *what) {
  if (atomic_exchange(&st->in_callback, 1) != 0)
    failf(st, __LINE__, "%s delivered while another callback of the scheduler was running", what);
  atomic_fetch_add(&st->callbacks, 1);
  if (self != NULL)
    self->depth++;
}

static void leave_cb(stress *st) {
  /* Now and then take longer, so that other threads' calls find this one dispatching and leave
   * their events to it; and look at the scheduler from inside: the lock is free. */
  if (self != NULL && below(self, 8) == 0)
    sched_yield();
  if (self != NULL && below(self, 32) == 0) {
    char why[256] = "";
    int rc = tl_check(st->s, why, sizeof why);
    EXPECT(st, rc == TL_OK, "tl_check inside a callback: %s: %s", tl_err_name(rc), why);
  }
  if (self != NULL)
    self->depth--;
  atomic_store(&st->in_callback, 0);
}

/* Under mu: the checks every task event makes; returns its task set's record or NULL. */
static ts_rec *check_task(stress *st, const tl_task_info *t, uint32_t ex, const char *what) {
  EXPECT(st, ex != NONE, "%s names executor %s, not one of this test", what,
         t->executor_id != NULL ? t->executor_id : "(null)");
  if (ex == NONE)
    return NULL;
  char host[16];
  exec_host(st->execs[ex].owner, host);
  EXPECT(st, t->host != NULL && strcmp(t->host, host) == 0, "%s: host %s, %s is on %s", what,
         t->host != NULL ? t->host : "(null)", t->executor_id, host);
  EXPECT(st, t->locality == TL_NO_PREF, "%s at locality %d", what, (int)t->locality);
  ts_rec *ts = set_of(st, t->taskset, t->payload, what);
  if (ts == NULL)
    return NULL;
  EXPECT(st, ts->released == 0, "%s of tid %" PRIu64 " after task set %" PRIu64 " was released",
         what, t->tid, t->taskset);
  EXPECT(st,
         t->stage_id == ts->stage_id && t->stage_attempt == ts->stage_attempt &&
             t->index < ts->ntasks,
         "%s: stage %u.%u index %u, task set has %u.%u/%u", what, t->stage_id, t->stage_attempt,
         t->index, ts->stage_id, ts->stage_attempt, ts->ntasks);
  return t->index < ts->ntasks ? ts : NULL;
}

static void cb_task_started(void *ud, const tl_task_info *t) {
  stress *st = ud;
  enter_cb(st, "task_started");
  pthread_mutex_lock(&st->mu);
  uint32_t ex = exec_parse(st, t->executor_id);
  EXPECT(st, t->tid > st->last_started,
         "task_started of tid %" PRIu64 " after that of tid %" PRIu64 ": not in launch order",
         t->tid, st->last_started);
  st->last_started = t->tid;
  ts_rec *ts = check_task(st, t, ex, "task_started");
  tid_rec *r = tid_at(st, t->tid);
  if (ts != NULL && r != NULL) {
    EXPECT(st, r->started++ == 0, "task_started twice for tid %" PRIu64, t->tid);
    EXPECT(st, r->ended == 0 && r->kills == 0, "an event for tid %" PRIu64 " before its start",
           t->tid);
    describe(st, r, t->tid, ex, t->taskset, t->index, t->attempt, "task_started");
    check_deliverer(st, r->start_pending, r->start_caller, t->tid, "task_started");
    EXPECT(st, st->execs[ex].added == 1 && st->execs[ex].lost == 0,
           "task_started on %s, which was added %u times and lost %u times", t->executor_id,
           st->execs[ex].added, st->execs[ex].lost);
    ts->started++;
  }
  pthread_mutex_unlock(&st->mu);
  if (st->k.running_on_start && ts != NULL && r != NULL) {
    /* The owner may have ended it already (TL_ESTALE), or its executor is gone. */
    atomic_fetch_add(&st->reentrant, 1);
    update(st, ex, t->tid, TL_TASK_RUNNING, TL_END_SUCCESS,
           RC(TL_OK) | RC(TL_ESTALE) | (st->can_lose ? RC(TL_EGONE) : 0), "task_started");
  }
  leave_cb(st);
}

static void cb_task_ended(void *ud, const tl_task_info *t, const tl_task_end *end) {
  stress *st = ud;
  enter_cb(st, "task_ended");
  next_set next = {false, 0, 0, 0};
  pthread_mutex_lock(&st->mu);
  uint32_t ex = exec_parse(st, t->executor_id);
  ts_rec *ts = check_task(st, t, ex, "task_ended");
  tid_rec *r = tid_at(st, t->tid);
  if (ts != NULL && r != NULL) {
    EXPECT(st, r->started == 1, "task_ended of tid %" PRIu64 " before its task_started", t->tid);
    EXPECT(st, r->ended++ == 0, "task_ended twice for tid %" PRIu64, t->tid);
    describe(st, r, t->tid, ex, t->taskset, t->index, t->attempt, "task_ended");
    check_deliverer(st, r->end_pending, r->end_caller, t->tid, "task_ended");
    r->end_kind = (uint8_t)end->kind;
    r->end_counts = end->counts_toward_failures;
    ts->ended++;
    if (end->kind == TL_END_SUCCESS) {
      thr_result *res = end->result;
      EXPECT(st, res != NULL && res->magic == RESULT_MAGIC && res->tid == t->tid,
             "the success of tid %" PRIu64 " carries another result", t->tid);
      EXPECT(st, res == NULL || end->result_size == res->size, "result_size %zu, update gave %zu",
             end->result_size, res != NULL ? res->size : 0);
      EXPECT(st, !end->counts_toward_failures, "a success counted toward failures");
      if (!ts->done[t->index]) {
        ts->done[t->index] = 1;
        if (++ts->nsucceeded == ts->ntasks)
          next = advance(st, ts, false);
      }
    } else {
      EXPECT(st, end->result == NULL, "task_ended %s carries a result",
             tl_end_kind_name(end->kind));
      EXPECT(st,
             !end->counts_toward_failures || end->kind == TL_END_EXCEPTION ||
                 end->kind == TL_END_RESULT_LOST || end->kind == TL_END_EXECUTOR_LOST,
             "task_ended %s counted toward failures", tl_end_kind_name(end->kind));
      if (end->kind == TL_END_EXECUTOR_LOST)
        EXPECT(st, st->execs[ex].lost == 1,
               "tid %" PRIu64 " ended by the loss of %s before its executor_lost", t->tid,
               t->executor_id);
      if (end->kind == TL_END_FETCH_FAILED)
        next = advance(st, ts, true);
    }
  }
  pthread_mutex_unlock(&st->mu);
  if (end->result != NULL && end->result_free != NULL)
    end->result_free(end->result); /* ours now */
  submit_next(st, next);
  leave_cb(st);
}

static void cb_taskset_failed(void *ud, const tl_taskset_info *info, const char *reason) {
  stress *st = ud;
  enter_cb(st, "taskset_failed");
  next_set next = {false, 0, 0, 0};
  pthread_mutex_lock(&st->mu);
  ts_rec *ts = set_by_id(st, info);
  EXPECT(st, ts != NULL, "taskset_failed of unknown task set %" PRIu64, info->id);
  if (ts != NULL) {
    EXPECT(st, ts->failed++ == 0, "taskset_failed twice for %" PRIu64, info->id);
    EXPECT(st, ts->released == 0, "taskset_failed of %" PRIu64 " after its release", info->id);
    EXPECT(st, reason != NULL && reason[0] != '\0', "taskset_failed without a reason");
    next = advance(st, ts, false);
  }
  pthread_mutex_unlock(&st->mu);
  submit_next(st, next);
  leave_cb(st);
}

static void cb_taskset_released(void *ud, const tl_taskset_info *info, void *payload) {
  stress *st = ud;
  enter_cb(st, "taskset_released");
  pthread_mutex_lock(&st->mu);
  ts_rec *ts = set_of(st, info->id, payload, "taskset_released");
  if (ts != NULL) {
    EXPECT(st, ts->released++ == 0, "task set %" PRIu64 " released twice", info->id);
    EXPECT(st,
           info->stage_id == ts->stage_id && info->stage_attempt == ts->stage_attempt &&
               info->ntasks == ts->ntasks,
           "taskset_released %" PRIu64 ": %u.%u/%u, submitted %u.%u/%u", info->id, info->stage_id,
           info->stage_attempt, info->ntasks, ts->stage_id, ts->stage_attempt, ts->ntasks);
    EXPECT(st, ts->started == ts->ended,
           "task set %" PRIu64 " released with %u of its %u started attempts ended", info->id,
           ts->ended, ts->started);
    EXPECT(st, ts->chain == NO_CHAIN || ts->advanced || st->draining,
           "task set %" PRIu64 " released before it completed, failed or fetch-failed", info->id);
  }
  pthread_mutex_unlock(&st->mu);
  leave_cb(st);
}

static void cb_executor_added(void *ud, const char *id, const char *host) {
  stress *st = ud;
  enter_cb(st, "executor_added");
  pthread_mutex_lock(&st->mu);
  uint32_t ex = exec_parse(st, id);
  EXPECT(st, ex != NONE, "executor_added of %s, not one of this test", id != NULL ? id : "(null)");
  if (ex != NONE) {
    char want[16];
    exec_host(st->execs[ex].owner, want);
    EXPECT(st, st->execs[ex].added++ == 0, "executor_added twice for %s", id);
    EXPECT(st, host != NULL && strcmp(host, want) == 0, "executor_added of %s on %s, want %s", id,
           host != NULL ? host : "(null)", want);
  }
  pthread_mutex_unlock(&st->mu);
  leave_cb(st);
}

static void cb_executor_lost(void *ud, const char *id, void *executor_ud,
                             const tl_loss_reason *reason) {
  stress *st = ud;
  enter_cb(st, "executor_lost");
  pthread_mutex_lock(&st->mu);
  uint32_t ex = exec_parse(st, id);
  EXPECT(st, ex != NONE, "executor_lost of %s, not one of this test", id != NULL ? id : "(null)");
  if (ex != NONE) {
    EXPECT(st, st->execs[ex].added == 1, "executor_lost of %s before its executor_added", id);
    EXPECT(st, st->execs[ex].lost++ == 0, "executor_lost twice for %s", id);
    EXPECT(st, executor_ud == exec_ud(ex), "executor_lost of %s with the ud of another", id);
    EXPECT(st, reason != NULL && (unsigned)reason->kind <= TL_LOSS_PENDING_TIMEOUT,
           "executor_lost of %s with a bad reason", id);
  }
  pthread_mutex_unlock(&st->mu);
  leave_cb(st);
}

static void cb_revive_offers(void *ud) {
  stress *st = ud;
  enter_cb(st, "revive_offers");
  if (st->k.offer_on_revive && self != NULL) {
    /* Offer some worker's executor now; the launches go to that worker's inbox. It may have
     * been lost meanwhile: then the offer launches nothing. */
    uint32_t ex = atomic_load(&st->current_exec[below(self, st->k.workers)]);
    if (ex != NONE) {
      atomic_fetch_add(&st->reentrant, 1);
      offer(st, ex, NULL);
    }
  }
  leave_cb(st);
}

static void cb_kill_task(void *ud, tl_tid tid, const char *executor_id, void *executor_ud,
                         bool interrupt, const char *reason) {
  stress *st = ud;
  (void)executor_ud;
  (void)interrupt;
  (void)reason; /* NULL when tl_kill_task was given none */
  enter_cb(st, "kill_task");
  pthread_mutex_lock(&st->mu);
  uint32_t ex = exec_parse(st, executor_id);
  tid_rec *r = tid_at(st, tid);
  if (r != NULL) {
    /* A kill is made while the attempt runs, so it comes between its start and its end. */
    EXPECT(st, r->started == 1 && r->ended == 0,
           "kill_task of tid %" PRIu64 " with %u starts and %u ends delivered", tid, r->started,
           r->ended);
    EXPECT(st, ex != NONE && r->exec == ex, "kill_task of tid %" PRIu64 " names %s", tid,
           executor_id != NULL ? executor_id : "(null)");
    r->kills++;
  }
  pthread_mutex_unlock(&st->mu);
  if (st->k.answer_kills && r != NULL && ex != NONE) {
    /* The owner may have ended it meanwhile (TL_ESTALE), or its executor is gone. */
    atomic_fetch_add(&st->reentrant, 1);
    update(st, ex, tid, TL_TASK_KILLED, TL_END_SUCCESS,
           RC(TL_OK) | RC(TL_ESTALE) | (st->can_lose ? RC(TL_EGONE) : 0), "kill_task");
  }
  leave_cb(st);
}

/* The journal is written by the dispatching thread too, one line at a time, between events. */
static void cb_journal(void *ud, const char *line) {
  stress *st = ud;
  if (atomic_exchange(&st->in_callback, 1) != 0)
    failf(st, __LINE__, "a journal line written while a callback was running");
  size_t n = strlen(line);
  pthread_mutex_lock(&st->mu);
  st->journal = grow(st->journal, &st->journal_cap, st->journal_len + n + 2, 1);
  memcpy(st->journal + st->journal_len, line, n);
  st->journal_len += n;
  st->journal[st->journal_len++] = '\n';
  st->journal[st->journal_len] = '\0';
  pthread_mutex_unlock(&st->mu);
  atomic_store(&st->in_callback, 0);
}

/* ---------------------------------------------------------------------------------------------
 * Threads.
 * ------------------------------------------------------------------------------------------- */

static void thread_start(stress *st, thr_ctx *c, const char *role, unsigned index,
                         void *(*fn)(void *)) {
  c->st = st;
  c->role = role;
  c->index = index;
  c->seed = st->seed + UINT64_C(0x1000) * (uint64_t)(unsigned char)role[0] + index;
  c->rng = c->seed;
  c->exec = NONE;
  ck_assert_int_eq(pthread_create(&c->thread, NULL, fn, c), 0);
}

/* Every thread waits here until all are created, so that they start together. */
static void wait_go(stress *st) {
  while (!atomic_load(&st->go))
    sched_yield();
}

static void thread_join(thr_ctx *c) {
  ck_assert_int_eq(pthread_join(c->thread, NULL), 0);
  free(c->local.v);
  c->local.v = NULL;
  c->local.n = c->local.cap = 0;
}

/* On two cores a thread can run a whole scenario in one time slice; yielding now and then makes
 * the threads interleave within rounds, not only between them. */
static void maybe_yield(thr_ctx *c) {
  if (below(c, 4) == 0)
    sched_yield();
}

/* The owner's report of one attempt: RUNNING (usually), then its end. What the updates may
 * answer is st->update_ok: TL_OK, and where something else may end the attempt first (a loss, a
 * kill answered by a callback) TL_ESTALE, and where its executor may be removed TL_EGONE. */
static void act(stress *st, thr_ctx *c, const work_item *it) {
  const knobs *k = &st->k;
  if (below(c, 100) < k->pct_running) {
    if (update(st, it->exec, it->tid, TL_TASK_RUNNING, TL_END_SUCCESS, st->update_ok, "owner") !=
        TL_OK)
      return; /* it is over already: nothing more to report */
    maybe_yield(c);
  }
  tl_task_state state = TL_TASK_FINISHED;
  tl_end_kind failure = TL_END_SUCCESS;
  if (below(c, 100) < k->pct_fail) {
    static const tl_end_kind kinds[] = {TL_END_EXCEPTION, TL_END_RESULT_LOST, TL_END_COMMIT_DENIED,
                                        TL_END_KILLED,    TL_END_EXCEPTION,   TL_END_FETCH_FAILED};
    unsigned nkinds = k->fetch_failures ? 6 : 5;
    unsigned pick = below(c, nkinds + 1);
    if (pick == nkinds) {
      state = TL_TASK_KILLED;
    } else {
      state = TL_TASK_FAILED;
      failure = kinds[pick];
    }
  }
  update(st, it->exec, it->tid, state, failure, st->update_ok, "owner");
  maybe_yield(c);
}

/* Reports the worker's attempts, keeping some for a later round when hold allows. */
static void run_local(stress *st, thr_ctx *c, bool hold) {
  size_t keep = 0;
  for (size_t i = 0; i < c->local.n && !atomic_load(&st->failed); i++) {
    work_item it = c->local.v[i];
    if (hold && it.age < 3 && below(c, 100) < st->k.pct_hold) {
      it.age++;
      c->local.v[keep++] = it;
      continue;
    }
    act(st, c, &it);
  }
  c->local.n = keep;
}

/* Moves the launches callbacks made on the worker's executors into its own list. */
static bool take_inbox(stress *st, thr_ctx *c) {
  pthread_mutex_lock(&st->mu);
  work_list *in = &st->inbox[c->index];
  bool any = in->n != 0;
  for (size_t i = 0; i < in->n; i++)
    list_push(&c->local, in->v[i].tid, in->v[i].exec);
  in->n = 0;
  pthread_mutex_unlock(&st->mu);
  return any;
}

static void abandon(stress *st, thr_ctx *c) {
  c->exec = NONE;
  atomic_store(&st->current_exec[c->index], NONE);
}

/* Decommissions the worker's executor, reports its attempts (they run on), and removes it with
 * TL_LOSS_DECOMMISSIONED. The decommission may find it lost already (TL_ESTATE pending loss,
 * TL_EGONE removed), and the removal may find it removed by the loser or by tl_tick (TL_EGONE). */
static void retire(stress *st, thr_ctx *c) {
  uint32_t old = c->exec;
  char id[16];
  exec_name(old, id);
  int rc = tl_executor_decommission(st->s, id, "stress retirement");
  EXPECT_RC(st, rc, RC(TL_OK) | RC(TL_ESTATE) | RC(TL_EGONE), "tl_executor_decommission");
  abandon(st, c);
  if (rc != TL_OK)
    return;
  pthread_mutex_lock(&st->mu);
  st->execs[old].decommissioned = true;
  st->execs[old].loss_claimed = true;
  pthread_mutex_unlock(&st->mu);
  take_inbox(st, c);
  run_local(st, c, false);
  lose(st, old, TL_LOSS_DECOMMISSIONED, below(c, 2) == 0, RC(TL_OK) | RC(TL_EGONE), "retire");
}

/* A worker: registers an executor, offers it, reports what launched, heartbeats, and starts
 * over with a new executor when its own is lost. Heartbeats may answer TL_ESTATE (pending loss)
 * or TL_EGONE (removed) only where executors are lost during the run. */
static void *worker_main(void *arg) {
  thr_ctx *c = arg;
  self = c;
  stress *st = c->st;
  wait_go(st);
  unsigned heartbeat_ok = RC(TL_OK) | (st->can_lose ? RC(TL_ESTATE) | RC(TL_EGONE) : 0);
  while (!atomic_load(&st->failed)) {
    if (c->exec == NONE) {
      c->exec = add_exec(st, c->index);
      if (c->exec == NONE)
        break;
      atomic_store(&st->current_exec[c->index], c->exec);
    }
    bool busy = take_inbox(st, c);
    busy = offer(st, c->exec, &c->local) > 0 || busy;
    busy = busy || c->local.n > 0;
    run_local(st, c, true);
    char id[16];
    exec_name(c->exec, id);
    int rc = tl_executor_heartbeat(st->s, id);
    EXPECT_RC(st, rc, heartbeat_ok, "tl_executor_heartbeat");
    if (rc != TL_OK)
      abandon(st, c);
    else if (st->k.decommission && busy && below(c, 64) == 0)
      retire(st, c); /* only in busy rounds: idle spinning must not pile up tombstones */
    if (c->local.n == 0 && work_done(st) && !take_inbox(st, c))
      break;
    if (!busy)
      sched_yield();
  }
  return NULL;
}

/* The DAG thread submits the first stage of every chain; the feeder submits its task sets one
 * by one as the pending work drains. */
static void *dag_main(void *arg) {
  thr_ctx *c = arg;
  self = c;
  stress *st = c->st;
  wait_go(st);
  const knobs *k = &st->k;
  for (unsigned ch = 0; ch < k->chains && !atomic_load(&st->failed); ch++) {
    submit_set(st, ch, 0, 0, chain_tasks(ch, 0, 0));
    for (unsigned i = below(c, 4); i > 0; i--)
      sched_yield();
  }
  /* While the loser still has losses to make, the feeder goes on (up to four times as long), so
   * that the losses hit running work. */
  for (unsigned f = 0; !atomic_load(&st->failed); f++) {
    if (f >= k->feed_sets && (atomic_load(&st->losses_made) >= k->losses || f >= 4 * k->feed_sets))
      break;
    for (;;) {
      tl_stats s;
      tl_stats_get(st->s, &s);
      if (s.tasks_pending <= k->workers * k->cores || atomic_load(&st->failed))
        break;
      sched_yield();
    }
    submit_set(st, NO_CHAIN, f, 0, k->feed_tasks);
  }
  atomic_store(&st->supply_done, true);
  return NULL;
}

/* An inspector: consistent snapshots, tl_check, explanations and snapshots of random task sets
 * and executors, and tl_tick with the clock moved on, all while the others mutate. */
static void *inspector_main(void *arg) {
  thr_ctx *c = arg;
  self = c;
  stress *st = c->st;
  wait_go(st);
  tl_stats prev;
  memset(&prev, 0, sizeof prev);
  while (!atomic_load(&st->stop) && !atomic_load(&st->failed)) {
    tl_stats s;
    tl_stats_get(st->s, &s);
#define MONOTONIC(field)                                                                           \
  EXPECT(st, s.field >= prev.field, "stats." #field " went back from %ju to %ju",                  \
         (uintmax_t)prev.field, (uintmax_t)s.field)
    MONOTONIC(launched);
    MONOTONIC(succeeded);
    MONOTONIC(failed);
    MONOTONIC(killed);
    MONOTONIC(stale_updates);
    MONOTONIC(rejected_updates);
    MONOTONIC(rejected_offers);
    MONOTONIC(executors_lost);
    MONOTONIC(tasksets_released);
#undef MONOTONIC
    /* Every attempt launched is running, frozen, or ended exactly one way. */
    EXPECT(st,
           s.launched == s.attempts_running + s.attempts_frozen + s.succeeded + s.failed + s.killed,
           "a snapshot with %ju launched, %zu running, %zu frozen, %ju succeeded, %ju failed, %ju "
           "killed",
           (uintmax_t)s.launched, s.attempts_running, s.attempts_frozen, (uintmax_t)s.succeeded,
           (uintmax_t)s.failed, (uintmax_t)s.killed);
    if (!st->can_lose)
      EXPECT(st, s.attempts_running <= (size_t)st->k.workers * st->k.cores,
             "%zu attempts run on %u executors of %u cores", s.attempts_running, st->k.workers,
             st->k.cores);
    prev = s;

    char why[256] = "";
    int rc = tl_check(st->s, why, sizeof why);
    EXPECT(st, rc == TL_OK, "tl_check: %s: %s", tl_err_name(rc), why);

    uint64_t max = atomic_load(&st->max_ts_id);
    if (max != 0) {
      tl_taskset_id id = 1 + rnd(c) % max;
      char text[1024];
      size_t len = below(c, 2) == 0 ? 40 : sizeof text; /* a short buffer cuts the text */
      memset(text, 'Z', sizeof text);
      rc = tl_explain_taskset(st->s, id, text, len);
      EXPECT_RC(st, rc, RC(TL_OK) | RC(TL_ENOENT), "tl_explain_taskset");
      if (rc == TL_OK)
        EXPECT(st, memchr(text, '\0', len) != NULL && text[0] != '\0',
               "tl_explain_taskset(%" PRIu64 ") wrote no terminated text into %zu bytes", id, len);
      tl_taskset_status ts;
      rc = tl_taskset_get(st->s, id, &ts);
      EXPECT_RC(st, rc, RC(TL_OK) | RC(TL_ENOENT), "tl_taskset_get");
      if (rc == TL_OK)
        EXPECT(st,
               ts.info.id == id && ts.frozen <= ts.running && ts.succeeded <= ts.info.ntasks &&
                   ts.pending <= ts.info.ntasks && (!ts.zombie || ts.pending == 0) &&
                   (!ts.failed || ts.zombie),
               "tl_taskset_get(%" PRIu64 "): id %" PRIu64 " zombie %d failed %d running %u frozen "
               "%u pending %u succeeded %u of %u",
               id, ts.info.id, ts.zombie, ts.failed, ts.running, ts.frozen, ts.pending,
               ts.succeeded, ts.info.ntasks);
    }

    pthread_mutex_lock(&st->mu);
    uint32_t ex = st->nexecs != 0 ? below(c, (unsigned)st->nexecs) : NONE;
    bool registered = ex != NONE && st->execs[ex].registered;
    pthread_mutex_unlock(&st->mu);
    if (ex != NONE) {
      char id[16];
      exec_name(ex, id);
      tl_executor_status es;
      rc = tl_executor_get(st->s, id, &es);
      /* TL_ENOENT only before its tl_executor_add is known to have returned: no tombstone is
       * evicted during a run. */
      EXPECT_RC(st, rc, RC(TL_OK) | RC(TL_EGONE) | (registered ? 0 : RC(TL_ENOENT)),
                "tl_executor_get");
      if (rc == TL_OK)
        EXPECT(st,
               es.state != TL_EXECUTOR_REMOVED && es.free_cores <= es.cores &&
                   (es.frozen == 0 || es.state == TL_EXECUTOR_PENDING_LOSS) &&
                   (es.state != TL_EXECUTOR_PENDING_LOSS ||
                    (es.running == 0 && es.free_cores == es.cores)),
               "tl_executor_get(%s): state %d cores %u free %u running %u frozen %u", id,
               (int)es.state, es.cores, es.free_cores, es.running, es.frozen);
    }

    atomic_fetch_add(&st->now, st->k.tick_ns);
    (void)tl_tick(st->s);
    sched_yield();
  }
  return NULL;
}

/* The loser: loses workers' executors while they report on them, half in one phase with a real
 * reason, half in two (TL_LOSS_PENDING now, the real reason a few rounds later). tl_tick may get
 * there first (heartbeat expiry, pending-loss deadline), so every loss may answer TL_EGONE. */
static void *loser_main(void *arg) {
  thr_ctx *c = arg;
  self = c;
  stress *st = c->st;
  wait_go(st);
  static const tl_loss_kind real[] = {TL_LOSS_EXITED, TL_LOSS_PROCESS_LOST, TL_LOSS_KILLED};
  struct {
    uint32_t exec; /* pending loss */
    unsigned wait; /* rounds until its real reason */
  } pending[64];
  size_t npending = 0;
  unsigned made = 0;
  while (!atomic_load(&st->failed)) {
    uint32_t ex = NONE;
    if (made < st->k.losses && npending < 64)
      ex = atomic_load(&st->current_exec[below(c, st->k.workers)]);
    if (ex != NONE) {
      /* Aim at an executor with attempts running: those are what the race is about. It may be
       * lost already (TL_EGONE; a pending loss still answers TL_OK). */
      char id[16];
      exec_name(ex, id);
      tl_executor_status es;
      int rc = tl_executor_get(st->s, id, &es);
      EXPECT_RC(st, rc, RC(TL_OK) | RC(TL_EGONE), "tl_executor_get");
      if (rc != TL_OK || es.running == 0)
        ex = NONE;
    }
    if (ex != NONE) {
      if (claim_loss(st, ex)) {
        made++;
        atomic_fetch_add(&st->losses_made, 1);
        bool app = below(c, 2) == 0;
        if (below(c, 2) == 0) {
          lose(st, ex, real[below(c, 3)], app, RC(TL_OK) | RC(TL_EGONE), "loser, one phase");
        } else if (lose(st, ex, TL_LOSS_PENDING, app, RC(TL_OK) | RC(TL_EGONE),
                        "loser, phase one") == TL_OK) {
          pending[npending].exec = ex;
          pending[npending].wait = below(c, 24);
          npending++;
        }
      }
    }
    for (size_t i = 0; i < npending;) {
      if (pending[i].wait-- != 0) {
        i++;
        continue;
      }
      lose(st, pending[i].exec, real[below(c, 3)], below(c, 2) == 0, RC(TL_OK) | RC(TL_EGONE),
           "loser, phase two");
      pending[i] = pending[--npending];
    }
    if (npending == 0 && (made == st->k.losses || work_done(st)))
      break;
    sched_yield();
  }
  return NULL;
}

/* The killer: kills stages and single attempts and cancels stages while they complete. A stage
 * may be gone or not submitted yet (TL_ENOENT), an attempt over already (TL_ESTALE). */
static void *killer_main(void *arg) {
  thr_ctx *c = arg;
  self = c;
  stress *st = c->st;
  wait_go(st);
  for (unsigned i = 0; i < st->k.kills && !atomic_load(&st->stop) && !atomic_load(&st->failed);
       i++) {
    /* Aim at a chain still running and at one of the latest tids: those may still run. */
    pthread_mutex_lock(&st->mu);
    uint32_t chain = below(c, st->k.chains);
    for (uint32_t n = 0; n < st->k.chains && st->chains[chain].done; n++)
      chain = (chain + 1) % st->k.chains;
    uint32_t stage = st->chains[chain].stage_id;
    tl_tid tid =
        st->ntids > 1 ? st->ntids - 1 - below(c, st->ntids > 8 ? 8 : (unsigned)st->ntids - 1) : 1;
    pthread_mutex_unlock(&st->mu);
    unsigned pick = below(c, 10);
    if (pick < 5) {
      EXPECT_RC(st, tl_kill_stage(st->s, stage, below(c, 2) == 0, "stress kill"),
                RC(TL_OK) | RC(TL_ENOENT), "tl_kill_stage");
    } else if (pick < 7) {
      EXPECT_RC(st, tl_cancel_stage(st->s, stage, "stress cancel"), RC(TL_OK) | RC(TL_ENOENT),
                "tl_cancel_stage");
    } else {
      EXPECT_RC(st, tl_kill_task(st->s, tid, true, NULL), RC(TL_OK) | RC(TL_ESTALE),
                "tl_kill_task");
    }
    for (unsigned y = below(c, 16); y > 0; y--)
      sched_yield();
  }
  return NULL;
}

/* ---------------------------------------------------------------------------------------------
 * A scenario's life: set up, run the threads, drain, verify, free.
 * ------------------------------------------------------------------------------------------- */

static uint64_t test_seed(uint64_t fallback) {
  const char *env = getenv("TLT_SEED");
  return env != NULL && env[0] != '\0' ? strtoull(env, NULL, 0) : fallback;
}

static stress *stress_new(const knobs *k, uint64_t fallback_seed) {
  ck_assert(k->workers >= 1 && k->workers <= MAX_WORKERS);
  ck_assert(k->inspectors >= 1 && k->inspectors <= MAX_INSPECTORS);
  ck_assert(k->cores >= 1 && k->cores <= MAX_CORES);
  ck_assert(k->kills == 0 || k->chains > 0);
  stress *st = calloc(1, sizeof *st);
  ck_assert_ptr_nonnull(st);
  st->k = *k;
  st->seed = test_seed(fallback_seed);
  st->can_lose = k->losses > 0 || k->decommission;
  st->ends_race = st->can_lose || k->answer_kills;
  /* The owner's updates: TL_ESTALE when a loss or an answered kill ended (or froze) the attempt
   * first, TL_EGONE when a loss removed its executor. Nothing else may race with them. */
  st->update_ok =
      RC(TL_OK) | (st->ends_race ? RC(TL_ESTALE) : 0) | (st->can_lose ? RC(TL_EGONE) : 0);
  ck_assert_int_eq(pthread_mutex_init(&st->mu, NULL), 0);
  ck_assert_int_eq(pthread_mutex_init(&st->fail_mu, NULL), 0);
  atomic_init(&st->now, TLT_SEC);
  atomic_init(&st->in_callback, 0);
  atomic_init(&st->chains_done, 0);
  atomic_init(&st->supply_done, false);
  atomic_init(&st->go, false);
  atomic_init(&st->stop, false);
  atomic_init(&st->losses_made, 0);
  atomic_init(&st->failed, false);
  atomic_init(&st->max_ts_id, 0);
  atomic_init(&st->callbacks, 0);
  atomic_init(&st->finished_ok, 0);
  atomic_init(&st->deferred, 0);
  atomic_init(&st->reentrant, 0);
  for (unsigned w = 0; w < MAX_WORKERS; w++)
    atomic_init(&st->current_exec[w], NONE);
  st->chains = calloc(k->chains + 1, sizeof *st->chains);
  ck_assert_ptr_nonnull(st->chains);
  st->main_ctx.st = st;
  st->main_ctx.role = "main";
  st->main_ctx.seed = st->main_ctx.rng = st->seed;
  st->main_ctx.exec = NONE;
  self = &st->main_ctx;

  st->k.cfg.clock = stress_clock;
  st->k.cfg.clock_ud = st;
  st->k.cfg.journal = cb_journal;
  st->k.cfg.journal_ud = st;
  tl_callbacks cb = {.ud = st,
                     .task_started = cb_task_started,
                     .task_ended = cb_task_ended,
                     .taskset_failed = cb_taskset_failed,
                     .taskset_released = cb_taskset_released,
                     .executor_added = cb_executor_added,
                     .executor_lost = cb_executor_lost,
                     .revive_offers = cb_revive_offers,
                     .kill_task = cb_kill_task};
  int rc = tl_scheduler_new(&st->k.cfg, &cb, &st->s);
  ck_assert_msg(rc == TL_OK, "tl_scheduler_new: %s", tl_err_name(rc));
  char why[256] = "";
  ck_assert_msg(tl_check(st->s, why, sizeof why) == TL_OK, "tl_check: %s", why);
  tl_stats s;
  tl_stats_get(st->s, &s);
  st->base_bytes = s.mem_live_bytes;
  st->base_blocks = s.mem_live_blocks;
  return st;
}

/* Runs the scenario's threads to the end of the work, then stops the inspectors and killer. */
static void stress_run(stress *st) {
  const knobs *k = &st->k;
  bool dag = k->chains > 0 || k->feed_sets > 0;
  if (!dag)
    atomic_store(&st->supply_done, true);
  for (unsigned i = 0; i < k->inspectors; i++)
    thread_start(st, &st->inspectors[i], "inspector", i, inspector_main);
  if (k->kills > 0)
    thread_start(st, &st->killer, "killer", 0, killer_main);
  if (k->losses > 0)
    thread_start(st, &st->loser, "loser", 0, loser_main);
  for (unsigned w = 0; w < k->workers; w++)
    thread_start(st, &st->workers[w], "worker", w, worker_main);
  if (dag)
    thread_start(st, &st->dag, "dag", 0, dag_main);
  atomic_store(&st->go, true);

  for (unsigned w = 0; w < k->workers; w++)
    thread_join(&st->workers[w]);
  if (dag)
    thread_join(&st->dag);
  if (k->losses > 0)
    thread_join(&st->loser);
  atomic_store(&st->stop, true);
  if (k->kills > 0)
    thread_join(&st->killer);
  for (unsigned i = 0; i < k->inspectors; i++)
    thread_join(&st->inspectors[i]);
  self = &st->main_ctx;
  assert_no_failure(st);
}

#define ASSERT_CHECK(st)                                                                           \
  do {                                                                                             \
    char why_[512] = "";                                                                           \
    int crc_ = tl_check((st)->s, why_, sizeof why_);                                               \
    ck_assert_msg(crc_ == TL_OK, "tl_check: %s: %s", tl_err_name(crc_), why_);                     \
  } while (0)

/* After the threads: every executor lost (TL_LOSS_KILLED), what is left cancelled, tombstones
 * expired; then the scheduler must be empty, memory at the baseline, and every record settled:
 * each launch started and ended once, as the update that won said (or by its executor's loss
 * when no update won), each task set released once after its attempts, each executor added and
 * lost once, each result freed once. Then the journal must replay call for call. */
static void stress_end(stress *st) {
  ASSERT_CHECK(st);
  tl_stats s;
  tl_stats_get(st->s, &s);
  ck_assert_msg(s.events_queued == 0, "%zu events undelivered with every thread joined",
                s.events_queued);
  pthread_mutex_lock(&st->mu);
  st->draining = true;
  size_t nexecs = st->nexecs;
  pthread_mutex_unlock(&st->mu);

  for (uint32_t ex = 0; ex < nexecs; ex++) {
    lose(st, ex, TL_LOSS_KILLED, false, RC(TL_OK) | RC(TL_EGONE), "drain");
    assert_no_failure(st);
    ASSERT_CHECK(st);
  }
  tl_stats_get(st->s, &s);
  ck_assert_msg(s.attempts_running == 0 && s.attempts_frozen == 0 && s.tasksets_zombie == 0,
                "drain: %zu running, %zu frozen, %zu zombie with every executor lost",
                s.attempts_running, s.attempts_frozen, s.tasksets_zombie);
  for (size_t i = 0; i < st->nsets; i++) {
    if (st->sets[i]->released != 0)
      continue;
    ck_assert_int_eq(tl_cancel_stage(st->s, st->sets[i]->stage_id, "drain"), TL_OK);
    assert_no_failure(st);
    ck_assert_msg(st->sets[i]->released == 1, "drain: idle task set %" PRIu64 " not released",
                  st->sets[i]->id);
  }
  atomic_fetch_add(&st->now, st->k.cfg.tombstone_ttl_ns + 1);
  (void)tl_tick(st->s);
  ASSERT_CHECK(st);
  assert_no_failure(st);

  tl_stats_get(st->s, &s);
  ck_assert_uint_eq(s.executors_alive + s.executors_decommissioning + s.executors_pending_loss, 0);
  ck_assert_uint_eq(s.tombstones, 0);
  ck_assert_uint_eq(s.hosts + s.racks, 0);
  ck_assert_uint_eq(s.tasksets_active + s.tasksets_zombie, 0);
  ck_assert_uint_eq(s.attempts_running + s.attempts_frozen + s.tasks_pending, 0);
  ck_assert_uint_eq(s.events_queued, 0);
  ck_assert_msg(s.mem_live_bytes == st->base_bytes && s.mem_live_blocks == st->base_blocks,
                "memory %zu bytes in %zu blocks, the empty scheduler had %zu in %zu",
                s.mem_live_bytes, s.mem_live_blocks, st->base_bytes, st->base_blocks);
  ck_assert_uint_eq(s.tasksets_released, st->nsets);
  ck_assert_uint_eq(s.executors_lost, nexecs);

  /* Every attempt. */
  ck_assert_msg(st->ntids <= s.launched + 1, "events named tid %zu, %ju were launched",
                st->ntids - 1, (uintmax_t)s.launched);
  size_t successes = 0;
  for (tl_tid tid = 1; tid <= s.launched; tid++) {
    tid_rec *r = tid < st->ntids ? &st->tids[tid] : NULL;
    ck_assert_msg(r != NULL && r->launched == 1 && r->started == 1 && r->ended == 1,
                  "tid %" PRIu64 ": %u launches, %u task_started, %u task_ended", tid,
                  r != NULL ? r->launched : 0, r != NULL ? r->started : 0,
                  r != NULL ? r->ended : 0);
    ck_assert_msg(r->ok_terminal <= 1, "tid %" PRIu64 ": %u terminal updates taken", tid,
                  r->ok_terminal);
    if (r->ok_terminal == 1)
      ck_assert_msg(r->end_kind == r->ok_kind,
                    "tid %" PRIu64 ": the update taken said %s, "
                    "task_ended %s",
                    tid, tl_end_kind_name(r->ok_kind), tl_end_kind_name(r->end_kind));
    else
      ck_assert_msg(r->end_kind == TL_END_EXECUTOR_LOST,
                    "tid %" PRIu64 " ended %s with no update taken", tid,
                    tl_end_kind_name(r->end_kind));
    if (r->end_kind == TL_END_EXECUTOR_LOST && r->end_counts) {
      const exec_rec *e = &st->execs[r->exec];
      ck_assert_msg(r->running_ok && !e->decommissioned && !e->removed_not_by_app,
                    "tid %" PRIu64 " counted its loss: RUNNING taken %d, x%u decommissioned %d, "
                    "removed for a reason not the app's %d",
                    tid, r->running_ok, r->exec, e->decommissioned, e->removed_not_by_app);
    }
    successes += r->end_kind == TL_END_SUCCESS;
  }
  ck_assert_uint_eq(successes, s.succeeded);
  ck_assert_uint_eq(atomic_load(&st->finished_ok), s.succeeded);

  /* Every task set, executor and result. */
  for (size_t i = 0; i < st->nsets; i++) {
    const ts_rec *ts = st->sets[i];
    ck_assert_msg(ts->released == 1 && ts->failed <= 1 && ts->started == ts->ended,
                  "task set %" PRIu64 ": released %u times, failed %u, %u started %u ended", ts->id,
                  ts->released, ts->failed, ts->started, ts->ended);
    ck_assert_msg(ts->chain == NO_CHAIN || ts->advanced,
                  "task set %" PRIu64 " of chain %u never completed, failed or fetch-failed",
                  ts->id, ts->chain);
  }
  ck_assert_uint_eq(atomic_load(&st->chains_done), st->k.chains);
  for (uint32_t ex = 0; ex < nexecs; ex++)
    ck_assert_msg(st->execs[ex].registered && st->execs[ex].added == 1 && st->execs[ex].lost == 1,
                  "x%u: registered %d, added %u times, lost %u times", ex, st->execs[ex].registered,
                  st->execs[ex].added, st->execs[ex].lost);
  for (size_t i = 0; i < st->nresults; i++)
    ck_assert_msg(atomic_load(&st->results[i]->frees) == 1,
                  "the result of tid %" PRIu64 " was freed %u times", st->results[i]->tid,
                  atomic_load(&st->results[i]->frees));

  if (getenv("TLT_THREADS_VERBOSE") != NULL)
    fprintf(stderr,
            "threads: seed %#" PRIx64 ": %ju launched, %ju succeeded, %ju failed, %ju killed, "
            "%zu task sets, %zu executors, %zu callbacks (%zu calls from them), %zu ends "
            "delivered after their update returned, %ju stale updates, %zu journal bytes\n",
            st->seed, (uintmax_t)s.launched, (uintmax_t)s.succeeded, (uintmax_t)s.failed,
            (uintmax_t)s.killed, st->nsets, nexecs, atomic_load(&st->callbacks),
            atomic_load(&st->reentrant), atomic_load(&st->deferred), (uintmax_t)s.stale_updates,
            st->journal_len);

  size_t ncallbacks = atomic_load(&st->callbacks);
  ck_assert_int_eq(tl_scheduler_free(st->s), TL_OK);
  st->s = NULL;
  ck_assert_msg(atomic_load(&st->callbacks) == ncallbacks,
                "tl_scheduler_free of an empty scheduler made callbacks");
  assert_no_failure(st);

  /* The journal is in the order the calls took the lock: replayed alone, call for call, it
   * must give every call the same answer and end in the same state. */
  tlr_report rep;
  int rrc = tlr_replay_text(st->journal, NULL, &rep);
  ck_assert_msg(rrc == TLR_OK, "replay of the journal: %d after line %zu: %s", rrc, rep.bad_line,
                rep.why);
  tlt_assert_stats_same_but_memory(&s, &rep.final, "the replayed journal");
  ck_assert_uint_eq(rep.submitted, st->nsets);

  for (size_t i = 0; i < st->nsets; i++)
    free(st->sets[i]);
  for (size_t i = 0; i < st->nresults; i++)
    free(st->results[i]);
  for (unsigned w = 0; w < MAX_WORKERS; w++)
    free(st->inbox[w].v);
  free(st->sets);
  free(st->by_id);
  free(st->tids);
  free(st->execs);
  free(st->results);
  free(st->chains);
  free(st->journal);
  pthread_mutex_destroy(&st->mu);
  pthread_mutex_destroy(&st->fail_mu);
  self = NULL;
  free(st);
}

/* ---------------------------------------------------------------------------------------------
 * The scenarios.
 * ------------------------------------------------------------------------------------------- */

/* Many threads offer their own executors and report RUNNING and FINISHED for what they got,
 * until one large task set is done, while an inspector checks and ticks. Nothing races with
 * anything that could refuse a call, so every call must answer TL_OK. */
START_TEST(offers_and_updates_from_many_threads_keep_the_ledger_consistent) {
  knobs k = knobs_default();
  k.pct_running = 100;
  stress *st = stress_new(&k, 0x7001);
  ts_rec *ts = submit_set(st, NO_CHAIN, 0, 0, 400);
  assert_no_failure(st);
  stress_run(st);
  ck_assert_uint_eq(atomic_load(&st->finished_ok), 400);
  ck_assert_uint_eq(ts->released, 1);
  ck_assert_uint_eq(ts->started, 400);
  ck_assert_uint_eq(ts->ended, 400);
  tl_stats s;
  tl_stats_get(st->s, &s);
  ck_assert_uint_eq(s.launched, 400);
  ck_assert_uint_eq(s.succeeded, 400);
  ck_assert_uint_eq(s.stale_updates + s.rejected_updates, 0);
  ck_assert_uint_eq(s.events_queued, 0);
  stress_end(st);
}
END_TEST

/* Scenario 1: a DAG thread starts chains of stages and task_ended submits each next stage
 * re-entrantly when a stage completes (taskset_failed when it aborts, a fetch failure submits
 * the stage again), while four workers offer, report every kind of end and heartbeat. Nobody
 * else ends an attempt, so every update must be TL_OK. */
START_TEST(stages_submitted_from_task_ended_while_workers_run_them) {
  knobs k = knobs_default();
  k.chains = 8;
  k.stages = 5;
  k.pct_fail = 20;
  k.fetch_failures = true;
  k.pct_hold = 30;
  stress *st = stress_new(&k, 0x7002);
  stress_run(st);
  stress_end(st);
}
END_TEST

/* Scenario 2: a loser thread loses the executors workers are reporting on, in one phase and in
 * two, while tl_tick expires silent executors and pending losses. Every update is either taken
 * (TL_OK) or refused as stale or gone, never both and never neither: each launched tid ends
 * exactly once, as the update taken said or, when none was, by its executor's loss. Workers
 * also decommission and retire executors, whose attempts then must not count their loss. */
START_TEST(losses_race_status_updates_for_the_same_executor) {
  knobs k = knobs_default();
  k.workers = 3;
  k.feed_sets = 24;
  k.feed_tasks = 6;
  k.pct_fail = 10;
  k.pct_hold = 50;
  k.losses = 40;
  k.decommission = true;
  k.tick_ns = 100000;                      /* 100 us a round */
  k.cfg.heartbeat_timeout_ns = 20000000;   /* 200 rounds of an inspector without a heartbeat */
  k.cfg.pending_loss_timeout_ns = 2000000; /* 20 rounds */
  stress *st = stress_new(&k, 0x7003);
  stress_run(st);
  stress_end(st);
}
END_TEST

/* Scenario 3: two inspectors call tl_check, tl_stats_get, tl_explain_taskset, tl_taskset_get,
 * tl_executor_get and tl_tick without pause while workers, a DAG and a loser mutate; every
 * snapshot must be consistent (launched = running + frozen + ended, counters never go back). */
START_TEST(inspection_runs_while_others_mutate) {
  knobs k = knobs_default();
  k.workers = 3;
  k.inspectors = 2;
  k.chains = 6;
  k.stages = 4;
  k.pct_fail = 10;
  k.pct_hold = 40;
  k.losses = 20;
  k.tick_ns = 100000;
  k.cfg.pending_loss_timeout_ns = 5000000;
  stress *st = stress_new(&k, 0x7004);
  stress_run(st);
  stress_end(st);
}
END_TEST

/* Scenario 4: revive_offers offers a worker's executor and task_started reports RUNNING, from
 * inside the callbacks, while the workers call in from their threads: calls that find another
 * thread dispatching leave their events to it, and those events are still delivered once, in
 * order, one at a time. */
START_TEST(callbacks_reenter_with_offers_and_updates_while_threads_call_in) {
  knobs k = knobs_default();
  k.chains = 8;
  k.stages = 5;
  k.pct_fail = 10;
  k.pct_hold = 30;
  k.offer_on_revive = true;
  k.running_on_start = true;
  stress *st = stress_new(&k, 0x7005);
  stress_run(st);
  ck_assert_uint_gt(atomic_load(&st->reentrant), 0);
  stress_end(st);
}
END_TEST

/* Scenario 5: a killer thread kills stages and attempts and cancels stages while workers
 * complete them; kill_task answers with a KILLED update from the callback, racing the owner's
 * own end. One of the two is taken, the other is stale. */
START_TEST(kills_and_cancellations_race_completions) {
  knobs k = knobs_default();
  k.chains = 8;
  k.stages = 5;
  k.pct_fail = 10;
  k.pct_hold = 50;
  k.kills = 80;
  k.answer_kills = true;
  stress *st = stress_new(&k, 0x7006);
  stress_run(st);
  stress_end(st);
}
END_TEST

/* All of it at once: DAG chains, re-entrant offers, RUNNING reports and kill answers, a loser,
 * retirements, a killer, two inspectors and heartbeat expiry. */
START_TEST(everything_at_once) {
  knobs k = knobs_default();
  k.inspectors = 2;
  k.chains = 8;
  k.stages = 5;
  k.pct_fail = 15;
  k.fetch_failures = true;
  k.pct_hold = 40;
  k.losses = 30;
  k.decommission = true;
  k.kills = 60;
  k.answer_kills = true;
  k.offer_on_revive = true;
  k.running_on_start = true;
  k.tick_ns = 100000;
  k.cfg.heartbeat_timeout_ns = 20000000;
  k.cfg.pending_loss_timeout_ns = 2000000;
  stress *st = stress_new(&k, 0x7007);
  stress_run(st);
  stress_end(st);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The lock's slow path (lib/lock.c). An allocator that sleeps holds the scheduler's lock for far
 * longer than a waiter backs off, so the waiter must sleep on the lock's condition variable and
 * be woken by the unlock; what it then sees must be the finished call's state.
 * ------------------------------------------------------------------------------------------- */

static atomic_bool slow_armed, slow_inside;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static void *slow_malloc(size_t n) {
  if (atomic_exchange(&slow_armed, false)) {
    atomic_store(&slow_inside, true);
    sleep_ms(30); /* with the scheduler's lock held: the back-off lasts about 0.1 ms */
  }
  return malloc(n);
}

typedef struct lock_waiter {
  tl_scheduler *s;
  tl_stats seen;
} lock_waiter;

static void *lock_waiter_main(void *arg) {
  lock_waiter *w = arg;
  while (!atomic_load(&slow_inside))
    sleep_ms(1);
  tl_stats_get(w->s, &w->seen); /* waits for the offer round that holds the lock */
  return NULL;
}

START_TEST(a_waiter_past_the_back_off_sleeps_and_is_woken_by_the_unlock) {
  ck_assert_int_eq(tl_replace_allocator(slow_malloc, realloc, calloc, free), TL_OK);
  atomic_store(&slow_armed, false);
  atomic_store(&slow_inside, false);
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_submit(e, 0, 0, 0, 1);
  lock_waiter w = {e->s, {0}};
  pthread_t th;
  ck_assert_int_eq(pthread_create(&th, NULL, lock_waiter_main, &w), 0);
  atomic_store(&slow_armed, true); /* the round's attempt record: allocated under the lock */
  tl_launch l;
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, &l, 1), 1);
  ck_assert_int_eq(pthread_join(th, NULL), 0);
  ck_assert(atomic_load(&slow_inside));
  /* The waiter got the lock only once the round was over. */
  ck_assert_uint_eq(w.seen.attempts_running, 1);
  ck_assert_uint_eq(w.seen.tasks_pending, 0);
  ck_assert_uint_eq(w.seen.launched, 1);
  tlt_succeed(e, "e1", l.tid);
  tlt_end(e);
  ck_assert_int_eq(tl_replace_allocator(malloc, realloc, calloc, free), TL_OK);
}
END_TEST

Suite *tl_threads_suite(void) {
  Suite *s = suite_create("threads");
  TCase *tc = tlt_tcase(s, "plain");
  tcase_add_test(tc, offers_and_updates_from_many_threads_keep_the_ledger_consistent);
  tcase_add_test(tc, stages_submitted_from_task_ended_while_workers_run_them);
  tc = tlt_tcase(s, "races");
  tcase_add_test(tc, losses_race_status_updates_for_the_same_executor);
  tcase_add_test(tc, inspection_runs_while_others_mutate);
  tcase_add_test(tc, kills_and_cancellations_race_completions);
  tc = tlt_tcase(s, "reentrancy");
  tcase_add_test(tc, callbacks_reenter_with_offers_and_updates_while_threads_call_in);
  tcase_add_test(tc, everything_at_once);
  tc = tlt_tcase(s, "lock");
  tcase_add_test(tc, a_waiter_past_the_back_off_sleeps_and_is_woken_by_the_unlock);
  return s;
}
