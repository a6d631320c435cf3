/* The snapshot fuzzer's scheduler settings, shared by its harness (fuzz_snapshot.c) and the seed
 * generator (snapshot_seeds.c), so that the seeds are written under the config the harness
 * restores them with: the image's fingerprint must match it. Each file that includes this has
 * its own clock (fuzz_now), which it moves itself. And the image in memory both write and read
 * (buf: tl_snapshot's writer buf_write, tl_scheduler_restore's reader buf_read, from at). */
#ifndef TL_FUZZ_CONFIG_H
#define TL_FUZZ_CONFIG_H

#include "taskledger.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t fuzz_now = 1000000000ull;
static inline uint64_t fuzz_clock(void *ud) {
  (void)ud;
  return fuzz_now;
}

static inline tl_config fuzz_config(void) {
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.clock = fuzz_clock;
  cfg.speculation = true;
  cfg.exclude_on_failure = true;
  cfg.mode = TL_FAIR;
  cfg.speculation_task_duration_threshold_ns = 60ull * 1000000000ull; /* not fingerprinted */
  cfg.decommission_kill_interval_ns = 5ull * 1000000000ull;
  cfg.offer_shuffle = true; /* not fingerprinted: an image's SHUF section is read and taken */
  cfg.offer_shuffle_seed = 7;
  return cfg;
}

typedef struct buf {
  uint8_t *p;
  size_t n, cap, at;
} buf;

static inline int buf_write(void *ud, const void *p, size_t n) {
  buf *b = ud;
  if (b->n + n > b->cap) {
    b->cap = (b->n + n) * 2;
    if ((b->p = realloc(b->p, b->cap)) == NULL)
      abort();
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  return 0;
}

static inline int buf_read(void *ud, void *p, size_t n) {
  buf *b = ud;
  if (n > b->n - b->at)
    n = b->n - b->at;
  memcpy(p, b->p + b->at, n);
  b->at += n;
  return (int)n;
}

#endif
