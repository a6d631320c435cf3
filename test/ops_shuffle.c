/* The offer shuffle in the randomized model (tl_config.offer_shuffle), in runs with the shuffle
 * bytes after the header (TLO_SHUFFLE_MARK): the seed comes from those bytes, and each offer
 * round is predicted over the offers in the order the model draws with the library's rule
 * (splitmix64 from the seed, Fisher-Yates from the last position down, n - 1 draws per round of
 * n offers, moved on only by a round that goes through). The launches are then compared with
 * their offers mapped back to the caller's array.
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

void tlo_shuffle_config(tlo_run *r, const uint8_t ext[TLO_SHUFFLE_BYTES]) {
  /* Twelve bits: small seeds (0 included) one time in sixteen, mixed ones otherwise. */
  uint64_t x = (uint64_t)(ext[0] & 0x0f) << 8 | ext[1];
  r->cfg.offer_shuffle = true;
  r->cfg.offer_shuffle_seed = (ext[0] & 0x0f) == 0 ? x : tlo_splitmix64(&x);
  r->shuffle_state = r->cfg.offer_shuffle_seed;
}

void tlo_shuffle_draw(tlo_run *r, mexec **caller_xs, const uint32_t *caller_cores, size_t n,
                      tlo_drawn *d) {
  if (n > NSLOTS * MAXGEN) {
    tlo_fail(r, "a round of %zu offers: the model draws at most %d", n, NSLOTS * MAXGEN);
    n = NSLOTS * MAXGEN;
  }
  for (size_t k = 0; k < n; k++)
    d->from[k] = k;
  for (size_t k = n; k > 1; k--) { /* Fisher-Yates: position k - 1 takes one of 0 .. k - 1 */
    size_t j = (size_t)(tlo_splitmix64(&r->shuffle_state) % k);
    size_t t = d->from[k - 1];
    d->from[k - 1] = d->from[j];
    d->from[j] = t;
  }
  bool moved = false;
  for (size_t k = 0; k < n; k++) {
    d->xs[k] = caller_xs[d->from[k]];
    d->cores[k] = caller_cores[d->from[k]];
    moved = moved || d->from[k] != k;
  }
  r->f_shuffled_rounds += moved;
}

/* tl_pool_set, in the runs with the shuffle bytes (half of their pool operations; programs
 * without the bytes make none): the settings of tlo_pool_names[pool], "default" included. The
 * model's order of pools and of each pool's task sets reads the settings at every round, so the
 * rounds after it check the library's reordering; cmp_pool compares the settings themselves. */
void tlo_do_pool_set(tlo_run *r, unsigned pool, unsigned mode, uint32_t weight,
                     uint32_t min_share) {
  const char *name = tlo_pool_names[pool];
  int want;
  if (name == NULL || name[0] == '\0' || strlen(name) >= 256 || mode > TL_FAIR || weight == 0)
    want = TL_EINVAL;
  else if (r->cfg.mode != TL_FAIR)
    want = TL_ESTATE;
  else if (!r->pools[pool].exists)
    want = TL_ENOENT;
  else
    want = TL_OK;
  if (want == TL_OK) {
    r->pools[pool].mode = (tl_sched_mode)mode;
    r->pools[pool].weight = weight;
    r->pools[pool].min_share = min_share;
    r->f_pool_sets++;
  }
  char d[96];
  snprintf(d, sizeof d, "pool_set %.8s mode=%u weight=%u min_share=%u",
           name == NULL      ? "(null)"
           : name[0] == '\0' ? "\"\""
                             : name,
           mode, weight, min_share);
  tlo_note_call(r, d);
  int rc = tl_pool_set(r->s, name, (tl_sched_mode)mode, weight, min_share);
  tlo_expect_rc(r, d, rc, want);
}
