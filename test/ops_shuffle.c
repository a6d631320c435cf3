/* The offer shuffle in the randomized model (tl_config.offer_shuffle), in runs with the shuffle
 * bytes after the header (TLO_SHUFFLE_MARK): the seed comes from those bytes, and each offer
 * round is predicted over the offers in the order the model draws with the library's rule
 * (splitmix64 from the seed, Fisher-Yates from the last position down, n - 1 draws per round of
 * n offers, moved on only by a round that goes through). The launches are then compared with
 * their offers mapped back to the caller's array.
 */
#include "ops_internal.h"

#include <inttypes.h>

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
