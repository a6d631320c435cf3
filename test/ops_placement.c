/* Hard placement in the randomized runs (docs/api.md "Hard placement"), on with the placement
 * bytes after the header (TLO_PLACEMENT_MARK): task sets get allowed executors (by slot and
 * generation, registered or not), allowed hosts and a spread per host or per executor, drawn
 * from those bytes and a per-stream count, so a program replays exactly; programs without the
 * bytes run as before hard placement existed. The model turns away the slots placement blocks
 * (an offer's executor not allowed, or its host or itself running an attempt of the task set
 * that is not frozen) and keeps which task sets no ALIVE executor satisfies (the library's
 * tasksets_unplaceable): after a round, and until an executor that satisfies one joins. Runs
 * with placement make unschedulable_timeout_ns endless, as runs with resources do: the abort
 * itself is test_placement's.
 */
#include "ops_internal.h"

#include <string.h>

void tlo_pl_config(tlo_run *r, const uint8_t ext[TLO_PLACEMENT_BYTES]) {
  r->placement = true;
  r->pl_seed = (uint64_t)ext[0] << 8 | ext[1];
  r->cfg.unschedulable_timeout_ns = UINT64_MAX;
}

/* The k-th draw of submissions. */
static uint64_t draw(const tlo_run *r, uint64_t k) {
  uint64_t x = (r->pl_seed + 1) * UINT64_C(0x9e3779b97f4a7c15) ^ (k << 2 | 1);
  return tlo_splitmix64(&x);
}

static bool placed(const mpl *p) { return p->spread != 0 || p->nexec != 0 || p->hosts != 0; }

mpl tlo_pl_draw_submit(tlo_run *r, bool barrier) {
  mpl p;
  memset(&p, 0, sizeof p);
  if (!r->placement)
    return p;
  uint64_t v = draw(r, r->pl_submits++);
  /* Half the task sets have none, so the features other checks look for are still reached. */
  unsigned kind = (unsigned)(v % 8);
  if (barrier || kind < 4)
    return p; /* placement on a barrier task set is refused: none drawn there */
  kind -= 3;  /* 1 spread only, 2 hosts, 3 executors, 4 both */
  p.spread = (uint8_t)((v >> 3) % 3);
  if (kind == 1 && p.spread == 0)
    p.spread = TL_SPREAD_HOST;
  if (kind == 2 || kind == 4) {
    p.hosts = (uint8_t)((v >> 5) & 15);
    if (p.hosts == 0)
      p.hosts = (uint8_t)(1u << ((v >> 9) & 3));
  }
  if (kind == 3 || kind == 4) {
    p.nexec = 1;
    p.exec[0][0] = (uint8_t)((v >> 11) % NSLOTS);
    p.exec[0][1] = (uint8_t)((v >> 15) % 3);
    if ((v >> 17) & 1) {
      p.exec[1][0] = (uint8_t)((v >> 18) % NSLOTS);
      p.exec[1][1] = (uint8_t)((v >> 22) % 3);
      if (p.exec[1][0] != p.exec[0][0] || p.exec[1][1] != p.exec[0][1])
        p.nexec = 2;
    }
  }
  return p;
}

void tlo_pl_desc(const tlo_run *r, const mpl *p, tl_taskset_desc *d, const char *execs[2],
                 const char *hosts[NHOSTS]) {
  uint32_t nh = 0;
  for (unsigned h = 0; h < NHOSTS; h++)
    if (p->hosts & (1u << h))
      hosts[nh++] = tlo_host_names[h];
  for (unsigned i = 0; i < p->nexec; i++)
    execs[i] = r->ex[p->exec[i][0]][p->exec[i][1]].id;
  d->allowed_executors = p->nexec > 0 ? execs : NULL;
  d->nallowed_executors = p->nexec;
  d->allowed_hosts = nh > 0 ? hosts : NULL;
  d->nallowed_hosts = nh;
  d->spread = (tl_spread)p->spread;
}

static bool allowed(const tlo_run *r, const mpl *p, const mexec *x) {
  if (p->nexec == 0 && p->hosts == 0)
    return true;
  for (unsigned i = 0; i < p->nexec; i++)
    if (&r->ex[p->exec[i][0]][p->exec[i][1]] == x)
      return true;
  return (p->hosts & (1u << x->host)) != 0;
}

bool tlo_pl_blocked(tlo_run *r, const mts *t, const mexec *x) {
  const mpl *p = &t->pl;
  if (!placed(p))
    return false;
  bool blocked = !allowed(r, p, x);
  uint32_t k = (uint32_t)(t - r->ts);
  for (size_t i = 0; i < r->natt && !blocked && p->spread != 0; i++) {
    const matt *a = &r->att[i];
    if (!a->live || a->frozen || a->ts != k)
      continue;
    blocked = p->spread == TL_SPREAD_HOST ? a->ex->host == x->host : a->ex == x;
  }
  r->f_pl_blocked += blocked;
  return blocked;
}

/* Whether the ALIVE executor x could run t's tasks: its profile, cores and resources. */
static bool can_run(const mexec *x, const mts *t) {
  if (x->state != MX_ALIVE || x->decl.profile != t->req.profile || x->cores < t->cpus)
    return false;
  for (uint8_t i = 0; i < t->req.nreq; i++) {
    bool has = false;
    for (uint8_t j = 0; j < x->decl.nres; j++)
      has = has || (x->decl.kind[j] == t->req.kind[i] && x->decl.naddr[j] >= t->req.amount[i]);
    if (!has)
      return false;
  }
  return true;
}

static bool satisfiable(const tlo_run *r, const mts *t) {
  const mpl *p = &t->pl;
  if (p->nexec == 0 && p->hosts == 0)
    return true;
  for (unsigned i = 0; i < p->nexec; i++)
    if (can_run(&r->ex[p->exec[i][0]][p->exec[i][1]], t))
      return true;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      if ((p->hosts & (1u << r->ex[s][g].host)) && can_run(&r->ex[s][g], t))
        return true;
  return false;
}

void tlo_pl_after_round(tlo_run *r, size_t launched_from) {
  if (!r->placement)
    return;
  size_t nalive = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      nalive += r->ex[s][g].state == MX_ALIVE;
  for (uint32_t k = 0; k < r->nts; k++) {
    mts *t = &r->ts[k];
    if (t->released || !placed(&t->pl))
      continue;
    bool launched = false;
    for (size_t i = launched_from; i < r->natt && !launched; i++)
      launched = r->att[i].ts == k;
    bool waiting = !t->zombie && t->npend + t->nspecs > 0 && nalive > 0 &&
                   !(t->restored && r->hold) && !launched && !satisfiable(r, t);
    if (waiting && !t->pl_wait) {
      r->f_pl_waits++;
      tlo_trace(r, 2, "  task set %" PRIu64 " waits: no live executor satisfies its placement",
                t->id);
    }
    t->pl_wait = waiting;
  }
}

void tlo_pl_executor_added(tlo_run *r, const mexec *x) {
  for (uint32_t k = 0; k < r->nts && r->placement; k++) {
    mts *t = &r->ts[k];
    if (t->released || !t->pl_wait || !allowed(r, &t->pl, x) || !can_run(x, t))
      continue;
    t->pl_wait = false;
    r->f_pl_rescues++;
    tlo_trace(r, 2, "  task set %" PRIu64 " no longer waits: %s satisfies its placement", t->id,
              x->id);
  }
}

size_t tlo_pl_waiting(const tlo_run *r) {
  size_t n = 0;
  for (uint32_t k = 0; k < r->nts; k++)
    n += !r->ts[k].released && r->ts[k].pl_wait;
  return n;
}

/* A task set's placement against the model: tl_taskset_get's fields and tl_taskset_placement. */
void tlo_pl_cmp_ts(tlo_run *r, const mts *t, const tl_taskset_status *st) {
  const mpl *p = &t->pl;
  unsigned nh = (unsigned)__builtin_popcount(p->hosts);
  if (st->nallowed_executors != p->nexec || st->nallowed_hosts != nh ||
      st->spread != (tl_spread)p->spread || st->unplaceable != t->pl_wait) {
    tlo_fail(r,
             "task set %" PRIu64 " placement is %u executors, %u hosts, spread %d, unplaceable %d; "
             "the model says %u, %u, %u, %d",
             t->id, st->nallowed_executors, st->nallowed_hosts, (int)st->spread,
             (int)st->unplaceable, p->nexec, nh, p->spread, (int)t->pl_wait);
    return;
  }
  tl_place_info got[2 + NHOSTS];
  size_t n = 0;
  int rc = tl_taskset_placement(r->s, t->id, got, 2 + NHOSTS, &n);
  if (rc != TL_OK || n != p->nexec + nh) {
    tlo_fail(r, "task set %" PRIu64 " lists %zu placement names (%s), the model says %u", t->id, n,
             tl_err_name(rc), p->nexec + nh);
    return;
  }
  const char *execs[2], *hosts[NHOSTS];
  tl_taskset_desc d;
  memset(&d, 0, sizeof d);
  tlo_pl_desc(r, p, &d, execs, hosts);
  for (size_t i = 0; i < n; i++) {
    bool host = i >= p->nexec;
    const char *want = host ? hosts[i - p->nexec] : execs[i];
    if (got[i].host != host || strcmp(got[i].name, want) != 0)
      tlo_fail(r, "task set %" PRIu64 " placement name %zu is %s, the model says %s", t->id, i,
               got[i].name, want);
  }
}
