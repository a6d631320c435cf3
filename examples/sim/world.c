/* What every file of tl-sim uses: memory that exits when it runs out, the event log and the
 * problems it counts, marks in the record, the scheduling of events, and executors and attempts
 * found by id, ud and tid. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

size_t results_live; /* result buffers sent in FINISHED updates and not yet freed */

void result_free(void *p) {
  free(p);
  results_live--;
}

void *result_new(void) {
  void *p = malloc(32);
  if (!p) {
    fprintf(stderr, "tl-sim: out of memory\n");
    exit(2);
  }
  memset(p, 0x5a, 32);
  results_live++;
  return p;
}

void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "tl-sim: out of memory\n");
    exit(2);
  }
  return p;
}

void grow(void **items, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return;
  size_t next = *cap ? *cap : 64;
  while (next < need)
    next *= 2;
  void *p = realloc(*items, next * size);
  if (!p) {
    fprintf(stderr, "tl-sim: out of memory\n");
    exit(2);
  }
  memset((char *)p + *cap * size, 0, (next - *cap) * size);
  *items = p;
  *cap = next;
}

/* One line of the event log (stdout, unless --quiet). */
void logf_(sim *m, const char *fmt, ...) {
  if (m->o.quiet)
    return;
  if (m->progress)
    fputs("\r\033[K", stderr);
  printf("%10.3f  ", (double)m->now / 1e9);
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fputc('\n', stdout);
}

void problem(sim *m, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  m->problems++;
  fprintf(stderr, "tl-sim: at %.3f s: %s\n", (double)m->now / 1e9, buf);
}

void oom(void) {
  fprintf(stderr, "tl-sim: out of memory\n");
  exit(2);
}

void mark(sim *m, uint32_t exec, sim_mark_kind kind, const char *fmt, ...) {
  char buf[SIM_TEXT_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (sim_record_mark(&m->rec, m->now, exec, kind, buf) < 0)
    oom();
}

void schedule(sim *m, uint64_t at, uint8_t kind, uint32_t exec, uint64_t tid) {
  sim_event e = {.t_ns = at, .kind = kind, .exec = exec, .tid = tid};
  if (sim_queue_push(&m->q, e) < 0)
    oom();
}

void schedule_update(sim *m, uint64_t at, uint32_t exec, uint64_t tid, tl_task_state st,
                     tl_end_kind failure) {
  sim_event e = {.t_ns = at,
                 .kind = EV_BAD_UPDATE,
                 .exec = exec,
                 .tid = tid,
                 .state = (uint8_t)st,
                 .failure = (uint8_t)failure};
  if (sim_queue_push(&m->q, e) < 0)
    oom();
}

uint64_t secs(double s) { return s <= 0 ? 0 : (uint64_t)(s * 1e9); }

/* The next arrival of a Poisson process of this rate per second; 0 rate: never. */
void schedule_poisson(sim *m, uint8_t kind, double rate) {
  if (rate <= 0)
    return;
  schedule(m, m->now + 1 + secs(sim_rng_exp(&m->rng, 1.0 / rate)), kind, 0, 0);
}

uint64_t sim_clock(void *ud) { return ((sim *)ud)->now; }

void journal_line(void *ud, const char *line) {
  sim *m = ud;
  if (m->journal && fprintf(m->journal, "%s\n", line) < 0)
    m->journal_err = errno ? errno : EIO;
}

uint32_t exec_of(const sim *m, const char *id) {
  size_t n = strlen(m->o.id_prefix);
  if (strncmp(id, m->o.id_prefix, n) != 0)
    return UINT32_MAX;
  return (uint32_t)strtoul(id + n, NULL, 10) - 1;
}

/* An executor's ud is its index + 1 (m->execs moves as it grows, so no pointer into it):
 * executor_lost finds the executor by it, without parsing its id. */
void *exec_ud(uint32_t x) { return (void *)(uintptr_t)(x + 1u); }
uint32_t exec_of_ud(const void *ud) { return (uint32_t)((uintptr_t)ud - 1u); }

sim_attempt *attempt_of(sim *m, uint64_t tid) {
  return tid >= 1 && tid <= m->max_tid ? &m->attempts[tid] : NULL;
}
