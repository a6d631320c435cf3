/* tl-sim's seeded random numbers (xoshiro256** from splitmix64) and its event queue (a binary
 * min-heap on virtual time, then scheduling order). */
#include "sim.h"

#include <math.h>
#include <stdlib.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

void sim_rng_seed(sim_rng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sim_rng_next(sim_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double sim_rng_unit(sim_rng *r) { return (double)(sim_rng_next(r) >> 11) * 0x1.0p-53; }

double sim_rng_exp(sim_rng *r, double mean) { return -mean * log(1.0 - sim_rng_unit(r)); }

uint32_t sim_rng_below(sim_rng *r, uint32_t n) {
  return (uint32_t)(((sim_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

static int before(const sim_event *a, const sim_event *b) {
  return a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
}

int sim_queue_push(sim_queue *q, sim_event e) {
  if (q->n == q->cap) {
    size_t cap = q->cap ? 2 * q->cap : 1024;
    sim_event *p = realloc(q->items, cap * sizeof *p);
    if (!p)
      return -1;
    q->items = p;
    q->cap = cap;
  }
  e.seq = q->next_seq++;
  size_t i = q->n++;
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (!before(&e, &q->items[parent]))
      break;
    q->items[i] = q->items[parent];
    i = parent;
  }
  q->items[i] = e;
  return 0;
}

int sim_queue_pop(sim_queue *q, sim_event *out) {
  if (q->n == 0)
    return -1;
  *out = q->items[0];
  sim_event last = q->items[--q->n];
  size_t i = 0;
  for (;;) {
    size_t child = 2 * i + 1;
    if (child >= q->n)
      break;
    if (child + 1 < q->n && before(&q->items[child + 1], &q->items[child]))
      child++;
    if (!before(&q->items[child], &last))
      break;
    q->items[i] = q->items[child];
    i = child;
  }
  if (q->n > 0)
    q->items[i] = last;
  return 0;
}

void sim_queue_free(sim_queue *q) {
  free(q->items);
  q->items = NULL;
  q->n = q->cap = 0;
}
