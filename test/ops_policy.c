/* The retry policy and tags in the randomized runs (docs/api.md "Retry policy and tags"), on
 * with the policy bytes after the header (TLO_POLICY_MARK): task sets get their own
 * max_task_failures and tags from {t0, t1, t2}, failures may say no_retry, and kill and cancel
 * operations may act on a tag (t3: a tag no task set has) instead of a stage. Every choice is
 * drawn from those bytes and a per-stream count, so a program replays exactly; programs without
 * the bytes run as before these features existed. A bad choice now and then (a tag with a comma,
 * a limit past 65535, no_retry where nothing counts) must be refused with TL_EINVAL.
 */
#include "ops_internal.h"

#include <stdlib.h>
#include <string.h>

const char *const tlo_tag_names[TLO_NTAGS] = {"t0", "t1", "t2", "t3"};

void tlo_pol_config(tlo_run *r, const uint8_t ext[TLO_POLICY_BYTES]) {
  r->policy = true;
  r->pol_seed = (uint64_t)ext[0] << 8 | ext[1];
}

/* The k-th draw of a stream (1 submissions, 2 updates, 3 kill and cancel operations). */
static uint64_t draw(const tlo_run *r, uint64_t stream, uint64_t k) {
  uint64_t x = (r->pol_seed + 1) * UINT64_C(0x9e3779b97f4a7c15) ^ (k << 2 | stream);
  return tlo_splitmix64(&x);
}

mpol tlo_pol_draw_submit(tlo_run *r) {
  mpol p;
  memset(&p, 0, sizeof p);
  if (!r->policy)
    return p;
  uint64_t v = draw(r, 1, r->pol_submits++);
  static const uint32_t limits[8] = {0, 0, 0, 1, 1, 2, 3, 6};
  p.max = limits[v & 7];
  p.tags = (uint8_t)((v >> 3) & 7); /* a subset of t0, t1, t2 */
  unsigned bad = (unsigned)((v >> 6) % 32);
  if (bad == 0)
    p.bad = 1; /* a tag with a comma */
  else if (bad == 1)
    p.bad = 2; /* max_task_failures past 65535 */
  else if (bad == 2 && p.tags != 0)
    p.bad = 3; /* a tag twice */
  return p;
}

bool tlo_pol_draw_no_retry(tlo_run *r, unsigned state) {
  if (!r->policy)
    return false;
  uint64_t v = draw(r, 2, r->pol_updates++);
  return state == TL_TASK_FAILED ? v % 3 == 0 : v % 24 == 0;
}

int tlo_pol_draw_tag_op(tlo_run *r) {
  if (!r->policy)
    return -1;
  uint64_t v = draw(r, 3, r->pol_tag_ops++);
  if (v % 2 == 0)
    return -1; /* the stage operation, as without the policy */
  return (v >> 1) % 16 == 0 ? TLO_NTAGS : (int)((v >> 5) % TLO_NTAGS); /* TLO_NTAGS: "" */
}

size_t tlo_pol_desc(const mpol *p, const char **tags, char *bad_tag, size_t len) {
  size_t n = 0;
  for (unsigned i = 0; i < 3; i++)
    if (p->tags & (1u << i))
      tags[n++] = tlo_tag_names[i];
  if (p->bad == 1) {
    snprintf(bad_tag, len, "t,%u", (unsigned)n);
    tags[n++] = bad_tag;
  } else if (p->bad == 3) {
    tags[n] = tags[0];
    n++;
  }
  return n;
}

/* kill_tag and cancel_tag: every task set with the tag, in submission order; each one's
 * attempts in the tid index are asked to die (with the message, and the cancel's prefix), and,
 * cancelling, each active one is aborted, then each drained one released. */
void tlo_do_tag(tlo_run *r, int tag, bool cancel, bool interrupt, const char *msg) {
  const char *name = tag < TLO_NTAGS ? tlo_tag_names[tag] : "";
  int want = tag < TLO_NTAGS ? TL_OK : TL_EINVAL;
  size_t touched = 0;
  char *text = NULL;
  if (want == TL_OK) {
    size_t len = 64 + (msg != NULL ? strlen(msg) : 0);
    text = tlo_xrealloc(NULL, len);
    if (cancel)
      snprintf(text, len, "part of cancelled job tag %s%s%s", name, msg ? ": " : "",
               msg ? msg : "");
    else if (msg != NULL)
      snprintf(text, len, "%s", msg);
    else
      text[0] = '\0';
    for (uint32_t k = 0; k < r->nts; k++) {
      mts *t = &r->ts[k];
      if (t->released || !(t->tags & (1u << tag)))
        continue;
      bool acted = false;
      tl_tid *v;
      size_t n = tlo_inflight_where(r, &v, NULL, 0, (int)k);
      for (size_t i = 0; i < n; i++) {
        mevent *e = tlo_push_ev(r, EV_KILL);
        e->tid = v[i];
        e->ex = r->att[v[i] - 1].ex;
        e->interrupt = interrupt;
        e->text = cancel || msg != NULL ? tlo_dup_text(text) : NULL;
        acted = true;
      }
      free(v);
      if (cancel && !t->zombie) {
        tlo_abort_ts(r, k, ABORT_CANCEL, 0, 0, text);
        acted = true;
      }
      touched += acted;
      if (cancel)
        tlo_finish_if_drained(r, k);
    }
    r->f_tag_ops++;
    r->f_tag_touched += touched;
  }
  free(text);
  char d[96];
  snprintf(d, sizeof d, "%s \"%s\" interrupt=%d msg=%.12s", cancel ? "cancel_tag" : "kill_tag",
           name, interrupt, msg ? msg : "(null)");
  tlo_note_call(r, d);
  size_t got = 77;
  int rc = cancel ? tl_cancel_tag(r->s, name, interrupt, msg, &got)
                  : tl_kill_tag(r->s, name, interrupt, msg, &got);
  tlo_expect_rc(r, d, rc, want);
  if (rc == TL_OK && want == TL_OK && got != touched)
    tlo_fail(r, "%s touched %zu task sets, the model says %zu", d, got, touched);
  if (rc != TL_OK && got != 0)
    tlo_fail(r, "%s failed and set *ntasksets to %zu", d, got);
}

/* A task set's max_task_failures and tags against the model (tl_taskset_get's fields and
 * tl_taskset_tags). */
void tlo_pol_cmp_ts(tlo_run *r, const mts *t, const tl_taskset_status *st) {
  uint32_t max = t->maxf != 0 ? t->maxf : r->cfg.max_task_failures;
  if (st->max_task_failures != max)
    tlo_fail(r, "task set %" PRIu64 " max_task_failures is %u, the model says %u", t->id,
             st->max_task_failures, max);
  const char *want[3];
  char unused[8];
  mpol p = {0, t->tags, 0};
  size_t n = tlo_pol_desc(&p, want, unused, sizeof unused);
  tl_tag_info got[4];
  size_t count = 0;
  int rc = tl_taskset_tags(r->s, t->id, got, 4, &count);
  if (rc != TL_OK || count != n || st->ntags != n) {
    tlo_fail(r, "task set %" PRIu64 " has %zu tags (%u in its status: %s), the model says %zu",
             t->id, count, st->ntags, tl_err_name(rc), n);
    return;
  }
  for (size_t i = 0; i < n; i++)
    if (strcmp(got[i].tag, want[i]) != 0)
      tlo_fail(r, "task set %" PRIu64 " tag %zu is %s, the model says %s", t->id, i, got[i].tag,
               want[i]);
}
