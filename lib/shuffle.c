/* Offer shuffle (tl_config.offer_shuffle; Spark's TaskSchedulerImpl.shuffleOffers): an offer
 * round over the caller's offers in an order drawn from the scheduler's own sequence, so that a
 * task set taking fewer offers than it is given lands on other executors from round to round,
 * and a run is the same under the same seed and the same calls.
 *
 * The sequence is splitmix64: its whole state is one 64-bit counter (offer_shuffle_state),
 * which the journal's config line starts (offer_shuffle_seed) and a snapshot carries. A round
 * of n offers draws n - 1 numbers (Fisher-Yates, from the last position down); the offers are
 * copied in that order, the round runs over the copy (offers.c, unchanged), and each launch's
 * offer index is mapped back to the caller's array. The state moves on only when the round goes
 * through: a round that fails (TL_ENOMEM) leaves it, like everything else, as it was.
 *
 * Memory: up to SHUFFLE_STACK offers the copy and the order live on the stack; a bigger round
 * allocates one block for both before anything changes, and frees it before it returns (the
 * round itself allocates its slots for such a round too). With offer_shuffle off none of this
 * runs: the entry point's one branch goes straight to the round.
 */
#include "checker.h"
#include "internal.h"

#include <inttypes.h>

#define SHUFFLE_STACK TL__ID_LENS /* offers a round shuffles without an allocation */

/* splitmix64 (Steele, Lea and Flood): the counter moves by the golden ratio, the output mixes it.
 */
static uint64_t draw(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

int tl__shuffle_offers(struct tl_scheduler *s, const tl_offer *offers, size_t noffers,
                       const size_t *lens, tl_launch *out, size_t cap, size_t *nout,
                       tl_grant *grants, size_t gcap, size_t *ngrants) {
  tl_offer drawn_on_stack[SHUFFLE_STACK], *drawn = drawn_on_stack;
  size_t from_on_stack[SHUFFLE_STACK], *from = from_on_stack; /* drawn[k] is offers[from[k]] */
  size_t drawn_lens[SHUFFLE_STACK];
  size_t block = noffers * (sizeof *drawn + sizeof *from);
  if (noffers > SHUFFLE_STACK) {
    drawn = tl__malloc(s, block);
    if (drawn == NULL)
      return TL_ENOMEM;
    from = (size_t *)(void *)(drawn + noffers);
  }
  uint64_t state = s->offer_shuffle_state;
  for (size_t k = 0; k < noffers; k++)
    from[k] = k;
  for (size_t k = noffers; k > 1; k--) { /* Fisher-Yates: position k - 1 takes one of 0 .. k - 1 */
    size_t j = (size_t)(draw(&state) % k);
    size_t t = from[k - 1];
    from[k - 1] = from[j];
    from[j] = t;
  }
  for (size_t k = 0; k < noffers; k++) {
    drawn[k] = offers[from[k]]; /* the caller's id strings: launches point at them */
    if (lens != NULL)
      drawn_lens[k] = lens[from[k]];
  }
  int err = tl__resource_offers(s, drawn, noffers, lens != NULL ? drawn_lens : NULL, out, cap, nout,
                                grants, gcap, ngrants);
  if (err == TL_OK) {
    for (size_t k = 0; k < *nout; k++)
      out[k].offer = from[out[k].offer]; /* the caller's index */
    s->offer_shuffle_state = state;
  }
  if (drawn != drawn_on_stack)
    tl__free(s, drawn, block);
  return err;
}

int tl__shuffle_check(tl__checker *c) {
  const struct tl_scheduler *s = c->s;
  if (!s->cfg.offer_shuffle && s->offer_shuffle_state != 0)
    return tl__check_violated(c, "offer shuffle: off, but its sequence is at %" PRIu64,
                              s->offer_shuffle_state);
  return TL_OK;
}
