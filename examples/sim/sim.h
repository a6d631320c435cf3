/* tl-sim's pieces shared between its files: the seeded random numbers and the event queue of
 * the discrete-event loop (docs/sim.md). Everything here runs on one thread, in virtual time. */
#ifndef TL_SIM_SIM_H
#define TL_SIM_SIM_H

#include <stddef.h>
#include <stdint.h>

/* xoshiro256** seeded through splitmix64: the simulator's only source of randomness, so that one
 * seed gives one run. */
typedef struct sim_rng {
  uint64_t s[4]; /* the generator's state; never all zero */
} sim_rng;

void sim_rng_seed(sim_rng *r, uint64_t seed);
uint64_t sim_rng_next(sim_rng *r);
double sim_rng_unit(sim_rng *r);                /* uniform in [0, 1) */
double sim_rng_exp(sim_rng *r, double mean);    /* exponential with this mean */
uint32_t sim_rng_below(sim_rng *r, uint32_t n); /* uniform in [0, n), n > 0 */

/* One scheduled event. Events at the same virtual time run in the order they were scheduled
 * (seq), which makes a run a function of its seed and options alone. */
typedef struct sim_event {
  uint64_t t_ns;   /* when it happens */
  uint64_t seq;    /* scheduling order: ties at t_ns run in this order */
  uint64_t tid;    /* the attempt it is about, or 0 */
  uint32_t exec;   /* the executor (or job) it is about */
  uint8_t kind;    /* what happens: sim.c's ev_kind */
  uint8_t state;   /* for an update: its tl_task_state */
  uint8_t failure; /* for a FAILED update: its tl_end_kind */
  uint8_t flag;    /* kind-specific */
} sim_event;

/* A binary min-heap on (t_ns, seq). */
typedef struct sim_queue {
  sim_event *items;  /* heap order */
  size_t n, cap;     /* used and allocated */
  uint64_t next_seq; /* the seq of the next push */
} sim_queue;

int sim_queue_push(sim_queue *q, sim_event e);   /* 0, or -1 when out of memory */
int sim_queue_pop(sim_queue *q, sim_event *out); /* 0, or -1 when empty */
void sim_queue_free(sim_queue *q);

#endif
