/* Resources in the model (docs/api.md "Resources"): what executors declare and task sets ask
 * for, drawn from the resource bytes; fitting and booking addresses as an offer round does;
 * giving them back when an attempt ends; and the library's books (tl_executor_resources,
 * tl_executor_addresses, tl_resource_totals, tl_attempt_grants) compared with the model's.
 *
 * The model books like the header says: a whole address is taken by one task alone, the first
 * free ones in declaration order; a share 1/k takes TL_SHARE_UNIT / k of the first address in
 * declaration order with that much left. Runs with resources set unschedulable_timeout_ns to
 * forever, so that a task set no executor of its profile can ever run waits (the rule that
 * aborts it is tested in test_resources.c) and tl_tick's answer is what it was.
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[NRKINDS] = {"gpu", "fpga"};
static const char *const gpu_addresses[MAXADDR] = {"0", "1", "2", "3"};
static const char *const fpga_addresses[1] = {"f0"};

void tlo_res_config(tlo_run *r, const uint8_t ext[TLO_RESOURCE_BYTES]) {
  r->resources = true;
  r->res_profiles = (ext[0] & 1) != 0;
  r->rsrc_seed = (uint64_t)ext[0] << 8 | ext[1];
  r->cfg.unschedulable_timeout_ns = UINT64_MAX;
}

/* The k-th draw of a stream (1 executors, 2 task sets, 3 offer rounds). */
static uint64_t draw(const tlo_run *r, uint64_t stream, uint64_t k) {
  uint64_t x = r->rsrc_seed * UINT64_C(0x100000001b3) ^ (k << 2 | stream);
  return tlo_splitmix64(&x);
}

mdecl tlo_res_draw_decl(tlo_run *r) {
  mdecl d;
  memset(&d, 0, sizeof d);
  if (!r->resources)
    return d;
  uint64_t u = draw(r, 1, r->res_adds++);
  static const uint8_t gpus[8] = {0, 0, 1, 2, 2, 3, 4, 4};
  uint8_t ngpu = gpus[u & 7];
  bool fpga = ((u >> 3) & 3) == 0;
  bool fpga_first = (u >> 5) & 1;
  if (fpga && fpga_first) {
    d.kind[d.nres] = 1;
    d.naddr[d.nres++] = 1;
  }
  if (ngpu > 0) {
    d.kind[d.nres] = 0;
    d.naddr[d.nres++] = ngpu;
  }
  if (fpga && !fpga_first) {
    d.kind[d.nres] = 1;
    d.naddr[d.nres++] = 1;
  }
  d.profile = r->res_profiles && ((u >> 6) % 3) == 0 ? 1 : 0;
  if ((u >> 8) % 24 == 0) /* one in 24: malformed, refused before anything changes */
    d.bad = (uint8_t)(1 + (u >> 13) % 4);
  return d;
}

mreq tlo_res_draw_req(tlo_run *r) {
  mreq q;
  memset(&q, 0, sizeof q);
  if (!r->resources)
    return q;
  uint64_t v = draw(r, 2, r->res_submits++);
  unsigned g = v & 7; /* gpu: 0-2 none, 3-4 one whole, 5 two whole, 6-7 a share */
  bool fpga = ((v >> 5) % 6) == 0;
  bool fpga_first = (v >> 8) & 1;
  uint8_t kinds[NRKINDS], amounts[NRKINDS], shares[NRKINDS], n = 0;
  if (g >= 3) {
    kinds[n] = 0;
    amounts[n] = g == 5 ? 2 : 1;
    shares[n] = g >= 6 ? (uint8_t)(2 + (v >> 3) % 3) : 1;
    n++;
  }
  if (fpga) {
    kinds[n] = 1;
    amounts[n] = 1;
    shares[n] = (v >> 9) & 1 ? 2 : 1;
    n++;
  }
  for (uint8_t i = 0; i < n; i++) {
    uint8_t j = n == 2 && fpga_first ? (uint8_t)(1 - i) : i;
    q.kind[q.nreq] = kinds[j];
    q.amount[q.nreq] = amounts[j];
    q.share[q.nreq] = shares[j];
    q.ngrants = (uint8_t)(q.ngrants + amounts[j]);
    q.nreq++;
  }
  q.profile = r->res_profiles && ((v >> 10) & 3) == 0 ? 1 : 0;
  if ((v >> 12) % 24 == 0) /* one in 24: malformed, refused before anything changes */
    q.bad = (uint8_t)(1 + (v >> 17) % 5);
  return q;
}

/* A round's call: tl_resource_offers_grants half the time, its array mostly large enough for
 * any round, one round in eight 0 to 3 entries. */
void tlo_res_round(tlo_run *r, bool *with_grants, size_t *gcap) {
  uint64_t u = draw(r, 3, r->res_rounds++);
  *with_grants = (u & 1) != 0;
  *gcap = ((u >> 1) & 7) == 0 ? (size_t)((u >> 4) & 3) : (size_t)MAXCAP * MAXGR;
}

static const char *const twice[2] = {"0", "0"};

size_t tlo_res_decl_desc(const mdecl *d, tl_resource out[NRKINDS]) {
  switch (d->bad) {
  case 1: /* one address twice */
    out[0] = (tl_resource){"gpu", twice, 2};
    return 1;
  case 2: /* a name with a space */
    out[0] = (tl_resource){"g pu", gpu_addresses, 1};
    return 1;
  case 3: /* no addresses */
    out[0] = (tl_resource){"gpu", gpu_addresses, 0};
    return 1;
  case 4: /* two resources of one name */
    out[0] = (tl_resource){"gpu", gpu_addresses, 1};
    out[1] = (tl_resource){"gpu", gpu_addresses + 1, 1};
    return 2;
  default:
    break;
  }
  for (uint8_t i = 0; i < d->nres; i++)
    out[i] = (tl_resource){kind_names[d->kind[i]], d->kind[i] == 0 ? gpu_addresses : fpga_addresses,
                           d->naddr[i]};
  return d->nres;
}

size_t tlo_res_req_desc(const mreq *q, tl_resource_request out[NRKINDS]) {
  switch (q->bad) {
  case 1: /* a share past TL_SHARE_MAX */
    out[0] = (tl_resource_request){"gpu", 1, TL_SHARE_MAX + 1};
    return 1;
  case 2: /* no amount */
    out[0] = (tl_resource_request){"gpu", 0, 0};
    return 1;
  case 3: /* more addresses than a task may hold */
    out[0] = (tl_resource_request){"gpu", TL_TASK_GRANTS_MAX + 1, 0};
    return 1;
  case 4: /* an empty name */
    out[0] = (tl_resource_request){"", 1, 0};
    return 1;
  case 5: /* one name twice */
    out[0] = (tl_resource_request){"fpga", 1, 0};
    out[1] = (tl_resource_request){"fpga", 1, 2};
    return 2;
  default:
    break;
  }
  for (uint8_t i = 0; i < q->nreq; i++)
    out[i] = (tl_resource_request){kind_names[q->kind[i]], q->amount[i],
                                   q->share[i] == 1 ? 0 : q->share[i]};
  return q->nreq;
}

/* The index of kind in x's declaration, or -1. */
static int decl_index(const mexec *x, uint8_t kind) {
  for (uint8_t i = 0; i < x->decl.nres; i++)
    if (x->decl.kind[i] == kind)
      return i;
  return -1;
}

/* How many tasks of t fit x's free addresses now, at most limit; each request on its own, as
 * the library counts (a barrier's fit). The profile is the caller's. */
uint32_t tlo_res_fit_count(const mexec *x, const mts *t, uint32_t limit) {
  uint32_t fit = limit;
  for (uint8_t i = 0; i < t->req.nreq && fit > 0; i++) {
    int at = decl_index(x, t->req.kind[i]);
    if (at < 0)
      return 0;
    uint32_t n = 0;
    if (t->req.share[i] == 1) {
      uint32_t nfree = 0;
      for (uint8_t a = 0; a < x->decl.naddr[at]; a++)
        nfree += x->used[at][a] == 0;
      n = nfree / t->req.amount[i];
    } else {
      uint64_t unit = TL_SHARE_UNIT / t->req.share[i];
      for (uint8_t a = 0; a < x->decl.naddr[at]; a++)
        n += (uint32_t)((TL_SHARE_UNIT - x->used[at][a]) / unit);
    }
    if (n < fit)
      fit = n;
  }
  return fit;
}

/* Whether one task of t may launch on x as far as resources go: its profile, its addresses. */
bool tlo_res_fits(const mexec *x, const mts *t) {
  return x->decl.profile == t->req.profile && tlo_res_fit_count(x, t, 1) == 1;
}

void tlo_res_grant(tlo_run *r, mexec *x, const mts *t, matt *a) {
  a->ngr = 0;
  if (t->req.nreq == 0)
    return;
  if (x->decl.profile != t->req.profile)
    tlo_fail(r, "the model launched a task of profile %u on %s of profile %u", t->req.profile,
             x->id, x->decl.profile);
  for (uint8_t i = 0; i < t->req.nreq; i++) {
    int at = decl_index(x, t->req.kind[i]);
    if (at < 0) {
      tlo_fail(r, "the model launched a task on %s, which lacks what it asks for", x->id);
      return;
    }
    if (t->req.share[i] == 1) {
      uint32_t left = t->req.amount[i];
      for (uint8_t ad = 0; ad < x->decl.naddr[at] && left > 0; ad++) {
        if (x->used[at][ad] != 0)
          continue;
        x->used[at][ad] = TL_SHARE_UNIT;
        a->gr[a->ngr++] = (tl_grant){(uint16_t)at, ad, 1};
        left--;
      }
    } else {
      uint64_t unit = TL_SHARE_UNIT / t->req.share[i];
      for (uint8_t ad = 0; ad < x->decl.naddr[at]; ad++) {
        if (TL_SHARE_UNIT - x->used[at][ad] < unit)
          continue;
        x->used[at][ad] += unit;
        a->gr[a->ngr++] = (tl_grant){(uint16_t)at, ad, t->req.share[i]};
        r->f_res[TLO_RF_SHARED]++;
        break;
      }
    }
  }
  if (a->ngr != t->req.ngrants)
    tlo_fail(r, "the model booked %u grants on %s, the task asks %u", a->ngr, x->id,
             t->req.ngrants);
  r->f_res[TLO_RF_LAUNCHES]++;
}

void tlo_res_unbook(tlo_run *r, matt *a) {
  for (uint8_t i = 0; i < a->ngr; i++) {
    uint64_t *u = &a->ex->used[a->gr[i].resource][a->gr[i].address];
    uint64_t unit = TL_SHARE_UNIT / a->gr[i].share;
    if (*u < unit) {
      tlo_fail(r, "the model gives back more of %s than it booked", a->ex->id);
      return;
    }
    *u -= unit;
  }
}

void tlo_res_cmp_grants(tlo_run *r, const char *what, const tl_grant *g, uint32_t n,
                        const matt *a) {
  if (n != a->ngr) {
    tlo_fail(r, "%s holds %u grants, the model says %u", what, n, a->ngr);
    return;
  }
  if (n > 0 && g == NULL) {
    tlo_fail(r, "%s has %u grants and no array", what, n);
    return;
  }
  for (uint32_t i = 0; i < n; i++)
    if (g[i].resource != a->gr[i].resource || g[i].address != a->gr[i].address ||
        g[i].share != a->gr[i].share) {
      tlo_fail(r, "%s grant %u is %u/%u/%u, the model says %u/%u/%u", what, i, g[i].resource,
               g[i].address, g[i].share, a->gr[i].resource, a->gr[i].address, a->gr[i].share);
      return;
    }
}

/* The model's own books against its attempts: each executor's use is what its attempts not
 * ended hold, never past an address's capacity; a launch's whole addresses are distinct; a
 * task runs only on an executor of its profile. */
static void self_check(tlo_run *r) {
  static uint64_t sum[NSLOTS][MAXGEN][NRKINDS][MAXADDR];
  memset(sum, 0, sizeof sum);
  for (size_t j = 0; j < r->ninflight; j++) {
    const matt *a = &r->att[r->inflight[j] - 1];
    const mts *t = &r->ts[a->ts];
    if (a->ex->decl.profile != t->req.profile)
      tlo_fail(r, "tid %" PRIu64 " of profile %u runs on %s of profile %u", r->inflight[j],
               t->req.profile, a->ex->id, a->ex->decl.profile);
    size_t at = (size_t)(a->ex - &r->ex[0][0]);
    if (at >= (size_t)NSLOTS * MAXGEN) {
      tlo_fail(r, "tid %" PRIu64 " runs on no executor of the run", r->inflight[j]);
      return;
    }
    size_t s = at / MAXGEN, g = at % MAXGEN;
    for (uint8_t i = 0; i < a->ngr; i++) {
      for (uint8_t k = 0; k < i; k++)
        if (a->gr[k].resource == a->gr[i].resource && a->gr[k].address == a->gr[i].address)
          tlo_fail(r, "tid %" PRIu64 " holds one address twice", r->inflight[j]);
      sum[s][g][a->gr[i].resource][a->gr[i].address] += TL_SHARE_UNIT / a->gr[i].share;
    }
  }
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      for (unsigned k = 0; k < NRKINDS; k++)
        for (unsigned ad = 0; ad < MAXADDR; ad++) {
          uint64_t u = r->ex[s][g].used[k][ad];
          if (u != sum[s][g][k][ad] || u > TL_SHARE_UNIT)
            tlo_fail(r,
                     "the model's books of %s say %" PRIu64 " of %u/%u, its attempts hold %" PRIu64,
                     r->ex[s][g].id, u, k, ad, sum[s][g][k][ad]);
        }
}

void tlo_res_compare(tlo_run *r) {
  if (r->failed || r->s == NULL)
    return;
  self_check(r);
  uint64_t tot_addr[NRKINDS] = {0}, tot_free[NRKINDS] = {0}, tot_used[NRKINDS] = {0};
  for (unsigned s = 0; s < NSLOTS && !r->failed; s++)
    for (uint32_t g = 0; g < r->ngen[s] && !r->failed; g++) {
      const mexec *x = &r->ex[s][g];
      tl_resource_info info[NRKINDS + 1];
      size_t n = 99;
      int rc = tl_executor_resources(r->s, x->id, info, NRKINDS + 1, &n);
      int want = x->state == MX_NONE ? TL_ENOENT : x->state == MX_REMOVED ? TL_EGONE : TL_OK;
      if (rc != want) {
        tlo_fail(r, "tl_executor_resources(%s) returned %s, the model says %s", x->id,
                 tl_err_name(rc), tl_err_name(want));
        return;
      }
      if (rc != TL_OK)
        continue;
      CMP_OF(r, "executor", x->id, "resources", n, x->decl.nres);
      for (uint8_t i = 0; i < x->decl.nres && i < n && !r->failed; i++) {
        uint8_t k = x->decl.kind[i];
        uint32_t nfree = 0;
        uint64_t used = 0;
        for (uint8_t ad = 0; ad < x->decl.naddr[i]; ad++) {
          nfree += x->used[i][ad] == 0;
          used += x->used[i][ad];
        }
        tot_addr[k] += x->decl.naddr[i];
        tot_free[k] += nfree;
        tot_used[k] += used;
        if (strcmp(info[i].name, kind_names[k]) != 0)
          tlo_fail(r, "executor %s's resource %u is \"%s\", the model says %s", x->id, i,
                   info[i].name, kind_names[k]);
        CMP_OF(r, "executor", x->id, "resource addresses", info[i].addresses, x->decl.naddr[i]);
        CMP_OF(r, "executor", x->id, "resource free", info[i].free, nfree);
        CMP_OF(r, "executor", x->id, "resource used", info[i].used, used);
        tl_address_info ai[MAXADDR + 1];
        size_t na = 99;
        rc = tl_executor_addresses(r->s, x->id, i, ai, MAXADDR + 1, &na);
        if (rc != TL_OK || na != x->decl.naddr[i]) {
          tlo_fail(r, "tl_executor_addresses(%s, %u): %s, %zu addresses, the model says %u", x->id,
                   i, tl_err_name(rc), na, x->decl.naddr[i]);
          return;
        }
        for (uint8_t ad = 0; ad < na; ad++) {
          const char *name = k == 0 ? gpu_addresses[ad] : fpga_addresses[ad];
          if (strcmp(ai[ad].address, name) != 0)
            tlo_fail(r, "executor %s's address %u/%u is \"%s\"", x->id, i, ad, ai[ad].address);
          CMP_OF(r, "executor", x->id, "address used", ai[ad].used, x->used[i][ad]);
        }
      }
    }
  if (r->failed)
    return;
  /* The totals over the executors the ledger holds, by name. */
  tl_resource_info t[8];
  size_t nt = 99;
  int rc = tl_resource_totals(r->s, t, 8, &nt);
  if (rc != TL_OK || nt > 8) {
    tlo_fail(r, "tl_resource_totals: %s, %zu names", tl_err_name(rc), nt);
    return;
  }
  bool seen[NRKINDS] = {false, false};
  for (size_t i = 0; i < nt; i++) {
    int k = strcmp(t[i].name, "gpu") == 0 ? 0 : strcmp(t[i].name, "fpga") == 0 ? 1 : -1;
    if (k < 0) {
      tlo_fail(r, "tl_resource_totals names \"%s\"", t[i].name);
      return;
    }
    seen[k] = true;
    CMP_OF(r, "total", kind_names[k], "addresses", t[i].addresses, tot_addr[k]);
    CMP_OF(r, "total", kind_names[k], "free", t[i].free, tot_free[k]);
    CMP_OF(r, "total", kind_names[k], "used", t[i].used, tot_used[k]);
  }
  for (unsigned k = 0; k < NRKINDS; k++)
    if (!seen[k] && tot_addr[k] > 0)
      tlo_fail(r, "tl_resource_totals leaves %s out", kind_names[k]);
  /* Every attempt not ended holds what the model booked for it. */
  for (size_t j = 0; j < r->ninflight && !r->failed; j++) {
    tl_tid tid = r->inflight[j];
    tl_grant g[TL_TASK_GRANTS_MAX];
    size_t n = 99;
    rc = tl_attempt_grants(r->s, tid, g, TL_TASK_GRANTS_MAX, &n);
    char what[48];
    snprintf(what, sizeof what, "attempt %" PRIu64, tid);
    if (rc != TL_OK) {
      tlo_fail(r, "tl_attempt_grants(%" PRIu64 ") returned %s", tid, tl_err_name(rc));
      return;
    }
    tlo_res_cmp_grants(r, what, g, (uint32_t)n, &r->att[tid - 1]);
  }
}
