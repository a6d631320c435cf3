/* Speculation: a second copy of a task that runs far longer than its task set's others.
 *
 * Every speculation_interval_ns, tl_tick looks at the active task sets (not zombie, not barrier,
 * more than one task) in which enough tasks have succeeded: at least
 * max(floor(speculation_quantile x ntasks), 1) first successes with a recorded run time. There a
 * running attempt is slow when it has run longer than max(speculation_multiplier x the median
 * run time, speculation_min_runtime_ns) and its index has exactly one copy running, is not done
 * and is not already speculatable. Each slow index goes on its task set's speculative stack, and
 * speculative_task_submitted and revive_offers tell the runtime (Spark's checkSpeculatableTasks;
 * the check is the tick's, tick.c: this file answers what is slow).
 * Two more rules, both off unless configured, both read only by the check (nothing on a task's
 * own path): with speculation_task_duration_threshold_ns, a task set that has not reached the
 * quantile yet (one task included) but whose tasks all fit on one executor (tasks <= max(the
 * largest live executor's cores of its profile / cores per task, 1)) has a running attempt slow
 * past that threshold (SPARK-29976, SPARK-30417); with decommission_kill_interval_ns, where the
 * median applies, an attempt on a decommissioning executor is slow too when the executor is
 * expected to be killed (decommissioned at t: at t + the interval) before the attempt would end
 * (its launch plus the median run time; SPARK-21040).
 * An offer round launches a task set's copies in that task set's turn, regular tasks first, as
 * Spark's dequeueTask: in each pass an offer takes a pending index that may run there, and only
 * an offer no pending index can take (excluded there, or outside the locality level allowed)
 * gets a copy (offers.c), so copies can launch while regular tasks are still pending. A copy
 * never goes to a host where an attempt of that index was launched before, nor where the index
 * is excluded (taskset.c); when one copy succeeds the other is killed and whatever it reports
 * afterwards counts for nothing.
 *
 * Run times go into a median heap (Spark's MedianHeap): a max-heap of the lower half at the
 * front of an array and a min-heap of the upper half at its back, so recording is O(log n) and
 * the median O(1). The array has ntasks slots in the task set's block, enough unless indices
 * run again after their map output was lost: their new first successes are recorded too (Spark
 * keeps every one), and then the status update that records one more than fits allocates an
 * array twice as large before it changes anything (tl__speculation_room). A zombie task set is
 * never looked at again and records nothing.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "internal.h"

#include <float.h>

#if FLT_RADIX != 2 || DBL_MANT_DIG != 53 || DBL_MAX_EXP != 1024
#error "mul_floor reads a double as IEEE 754 binary64"
#endif

/* The most slots a heap may have and still double (in uint32_t slots and size_t bytes). */
#define GROWABLE_CAP (SIZE_MAX / 16 < UINT32_MAX / 2 ? SIZE_MAX / 16 : UINT32_MAX / 2)

/* The upper half's k-th slot counts from the back of the array. */
#define LOW(ts, k) ((ts)->heap[(k)])
#define HIGH(ts, k) ((ts)->heap[(ts)->heap_cap - 1 - (k)])

static void swap_u64(uint64_t *a, uint64_t *b) {
  uint64_t t = *a;
  *a = *b;
  *b = t;
}

/* Sifts with before(parent, child) true for the heap's order: max-heap for the lower half. */
static void low_up(tl__taskset *ts, uint32_t k) {
  while (k > 0 && LOW(ts, (k - 1) / 2) < LOW(ts, k)) {
    swap_u64(&LOW(ts, (k - 1) / 2), &LOW(ts, k));
    k = (k - 1) / 2;
  }
}

static void low_down(tl__taskset *ts, uint32_t k) {
  for (;;) {
    uint32_t l = 2 * k + 1, r = l + 1, top = k;
    if (l < ts->nheap_low && LOW(ts, l) > LOW(ts, top))
      top = l;
    if (r < ts->nheap_low && LOW(ts, r) > LOW(ts, top))
      top = r;
    if (top == k)
      return;
    swap_u64(&LOW(ts, top), &LOW(ts, k));
    k = top;
  }
}

static void high_up(tl__taskset *ts, uint32_t k) {
  while (k > 0 && HIGH(ts, (k - 1) / 2) > HIGH(ts, k)) {
    swap_u64(&HIGH(ts, (k - 1) / 2), &HIGH(ts, k));
    k = (k - 1) / 2;
  }
}

static void high_down(tl__taskset *ts, uint32_t k) {
  for (;;) {
    uint32_t l = 2 * k + 1, r = l + 1, top = k;
    if (l < ts->nheap_high && HIGH(ts, l) < HIGH(ts, top))
      top = l;
    if (r < ts->nheap_high && HIGH(ts, r) < HIGH(ts, top))
      top = r;
    if (top == k)
      return;
    swap_u64(&HIGH(ts, top), &HIGH(ts, k));
    k = top;
  }
}

static void low_push(tl__taskset *ts, uint64_t v) {
  LOW(ts, ts->nheap_low) = v;
  low_up(ts, ts->nheap_low++);
}

static uint64_t low_pop(tl__taskset *ts) {
  uint64_t top = LOW(ts, 0);
  LOW(ts, 0) = LOW(ts, --ts->nheap_low);
  low_down(ts, 0);
  return top;
}

static void high_push(tl__taskset *ts, uint64_t v) {
  HIGH(ts, ts->nheap_high) = v;
  high_up(ts, ts->nheap_high++);
}

static uint64_t high_pop(tl__taskset *ts) {
  uint64_t top = HIGH(ts, 0);
  HIGH(ts, 0) = HIGH(ts, --ts->nheap_high);
  high_down(ts, 0);
  return top;
}

size_t tl__speculation_room(const tl__taskset *ts, const tl__attempt *a) {
  if (ts->heap == NULL || ts->zombie || (ts->idx[a->index].flags & TL__IDX_SUCCESSFUL) ||
      ts->nheap_low + ts->nheap_high < ts->heap_cap)
    return 0;
  if (ts->heap_cap > GROWABLE_CAP)
    return 0; /* some 2^32 run times: later ones are dropped (tl__speculation_record) */
  return (size_t)2 * ts->heap_cap * sizeof *ts->heap;
}

void tl__speculation_free(struct tl_scheduler *s, tl__taskset *ts) {
  if (ts->heap != NULL && ts->heap_cap > ts->ntasks)
    tl__free(s, ts->heap, (size_t)ts->heap_cap * sizeof *ts->heap);
}

void tl__speculation_grow(struct tl_scheduler *s, tl__taskset *ts, uint64_t *room, size_t bytes) {
  uint32_t cap = (uint32_t)(bytes / sizeof *room);
  memcpy(room, ts->heap, ts->nheap_low * sizeof *room);
  memcpy(room + cap - ts->nheap_high, ts->heap + ts->heap_cap - ts->nheap_high,
         ts->nheap_high * sizeof *room);
  tl__speculation_free(s, ts);
  ts->heap = room;
  ts->heap_cap = cap;
}

void tl__speculation_record(tl__taskset *ts, uint64_t duration) {
  if (ts->nheap_low + ts->nheap_high == ts->heap_cap)
    return; /* only when it could not grow (tl__speculation_room): never write past it */
  if (ts->nheap_low == 0 || duration <= LOW(ts, 0))
    low_push(ts, duration);
  else
    high_push(ts, duration);
  /* The lower half holds as many as the upper half, or one more. */
  if (ts->nheap_low > ts->nheap_high + 1)
    high_push(ts, low_pop(ts));
  else if (ts->nheap_high > ts->nheap_low)
    low_push(ts, high_pop(ts));
}

/* The median of the recorded run times (0 when there is none), Spark's MedianHeap. */
static uint64_t median(const tl__taskset *ts) {
  if (ts->nheap_low == 0)
    return 0;
  if (ts->nheap_low > ts->nheap_high)
    return LOW(ts, 0);
  uint64_t a = LOW(ts, 0), b = HIGH(ts, 0);
  return a / 2 + b / 2 + (a % 2 + b % 2) / 2;
}

/* floor(m x v) for m >= 0 (finite or +infinity), exactly, or UINT64_MAX when it does not fit.
 * Doubles would not do: their product is rounded to 53 bits (off by up to 2^11 ns past 2^53 ns)
 * and cannot tell whether it reached 2^64. m is mant x 2^shift exactly, with mant below 2^53;
 * mant x v (at most 117 bits) is made from 32-bit halves, then shifted. */
static uint64_t mul_floor(double m, uint64_t v) {
  if (v == 0 || !(m > 0.0))
    return 0;
  uint64_t bits;
  memcpy(&bits, &m, sizeof bits);
  int exp = (int)(bits >> 52 & 0x7ff);
  uint64_t mant = bits & ((UINT64_C(1) << 52) - 1);
  if (exp == 0x7ff)
    return UINT64_MAX; /* infinity */
  if (exp != 0)
    mant |= UINT64_C(1) << 52; /* normal: the implicit bit; subnormal: exponent as for 1 */
  int shift = (exp != 0 ? exp : 1) - 1075;

  /* mant x v = hi x 2^64 + lo */
  uint64_t a0 = mant & 0xffffffffu, a1 = mant >> 32, b0 = v & 0xffffffffu, b1 = v >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
  uint64_t lo = mid << 32 | (p00 & 0xffffffffu);
  uint64_t hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);

  if (shift >= 0) {
    if (hi != 0 || shift >= 64 || (shift > 0 && lo >> (64 - shift) != 0))
      return UINT64_MAX;
    return lo << shift;
  }
  int right = -shift;
  if (right >= 128)
    return 0;
  if (right >= 64)
    return hi >> (right - 64);
  if (hi >> right != 0)
    return UINT64_MAX;
  return hi << (64 - right) | lo >> right;
}

/* Whether ts's tasks all fit on one executor: at most max(the largest live executor's cores of
 * its profile / its cores per task, 1) tasks (Spark's speculationTasksLessEqToSlots; the floor
 * of 1 is SPARK-30417's, for a task wider than any executor known). */
static bool fits_one_executor(const struct tl_scheduler *s, const tl__taskset *ts,
                              tl__spec_cores *c) {
  if (ts->ntasks == 1)
    return true;
  if (!c->known || c->profile != ts->profile) {
    uint32_t most = 0;
    for (const tl__link *l = s->heartbeat_order.next; l != &s->heartbeat_order; l = l->next) {
      const tl__executor *ex = tl__container_of(l, tl__executor, on_timeline);
      if (ex->profile == ts->profile && ex->cores > most)
        most = ex->cores;
    }
    c->known = true;
    c->profile = ts->profile;
    c->cores = most;
  }
  uint32_t slots = c->cores / ts->cpus;
  return ts->ntasks <= (slots > 1 ? slots : 1);
}

bool tl__speculation_rule(const struct tl_scheduler *s, const tl__taskset *ts, tl__spec_rule *rule,
                          tl__spec_cores *cores) {
  uint64_t custom = s->cfg.speculation_task_duration_threshold_ns;
  if (ts->zombie || ts->heap == NULL || (ts->ntasks < 2 && custom == 0))
    return false; /* one task and no threshold: no run time to compare it with */
  double wanted = s->cfg.speculation_quantile * (double)ts->ntasks;
  uint64_t min_finished = wanted < 1.0 ? 1 : (uint64_t)wanted;
  if ((uint64_t)ts->nheap_low + ts->nheap_high >= min_finished) {
    /* A run of n ns is longer than multiplier x median when n > floor(that); past UINT64_MAX no
     * run is. The median path wins even with a threshold configured (Spark's order). */
    rule->median = median(ts);
    rule->threshold = mul_floor(s->cfg.speculation_multiplier, rule->median);
    if (rule->threshold < s->cfg.speculation_min_runtime_ns)
      rule->threshold = s->cfg.speculation_min_runtime_ns;
    rule->custom = false;
    rule->decommission = s->cfg.decommission_kill_interval_ns != 0;
    return true;
  }
  if (custom == 0 || !fits_one_executor(s, ts, cores))
    return false;
  rule->threshold = custom;
  rule->median = 0;
  rule->custom = true;
  rule->decommission = false; /* Spark's rule needs a median */
  return true;
}

int tl__speculation_slow(const struct tl_scheduler *s, const tl__taskset *ts, const tl__attempt *a,
                         const tl__spec_rule *rule, uint64_t now) {
  const tl__index *ix = &ts->idx[a->index];
  if (a->frozen || (ix->flags & (TL__IDX_SUCCESSFUL | TL__IDX_SPECULATABLE)) ||
      ix->copies_running != 1)
    return TL__SLOW_NOT;
  return tl__speculation_why(s, a, rule, now);
}

int tl__speculation_why(const struct tl_scheduler *s, const tl__attempt *a,
                        const tl__spec_rule *rule, uint64_t now) {
  if (now > a->launch_time && now - a->launch_time > rule->threshold)
    return rule->custom ? TL__SLOW_THRESHOLD : TL__SLOW_MEDIAN;
  /* SPARK-21040: its executor is expected to be killed (decommissioned at t, killed at t + the
   * interval) before the attempt would end (launched at l, running the median m: at l + m). A
   * sum past UINT64_MAX is never: an end that never comes is not before anything. */
  const tl__executor *ex = a->executor;
  if (rule->decommission && ex->state == TL_EXECUTOR_DECOMMISSIONING &&
      tl__add_sat(ex->decommission_time, s->cfg.decommission_kill_interval_ns) <
          tl__add_sat(a->launch_time, rule->median))
    return TL__SLOW_DECOMMISSION;
  return TL__SLOW_NOT;
}

uint64_t tl__speculation_next(const struct tl_scheduler *s, uint64_t now) {
  if (!s->cfg.speculation || s->speculation_past_end || !tl__attempts_running(s))
    return TL_TICK_NEVER; /* no next check, or nothing runs: nothing can be slow */
  return s->next_speculation > now ? s->next_speculation - now : 0;
}
