/* Resources beyond cores: interned names, executors' declarations, task sets' requests, and the
 * grants attempts hold (docs/api.md "Resources", docs/design.md "Resources").
 *
 * Use is counted per address in units of TL_SHARE_UNIT per whole address, the least common
 * multiple of 1 .. TL_SHARE_MAX, so a share 1/k is TL_SHARE_UNIT / k exactly and any mix of
 * shares adds up exactly: no floating point, nothing left over after nine tasks of 1/9. A whole
 * grant takes an address nobody holds any of (use 0 to TL_SHARE_UNIT); a share takes the first
 * address, in declaration order, with that much left. The ledger books a grant when the offer
 * round launches its attempt and gives it back when the attempt ends (taskset.c), whatever ends
 * it; nothing depends on the executor echoing it.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "resource.h"

#include "checker.h"

#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Validation
 * ------------------------------------------------------------------------------------------- */

/* Bytes of a resource name (1 to TL_RESOURCE_NAME_MAX - 1 of [A-Za-z0-9_.-]), 0 if malformed. */
static size_t name_len(const char *name) {
  if (name == NULL)
    return 0;
  size_t n = 0;
  for (; name[n] != '\0'; n++) {
    char ch = name[n];
    if (n + 1 >= TL_RESOURCE_NAME_MAX ||
        !((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '_' || ch == '.' || ch == '-'))
      return 0;
  }
  return n;
}

/* Bytes of an address (1 to TL_ADDRESS_MAX - 1 of printable ASCII but space, ',', '"', '\'),
 * 0 if malformed. */
static size_t address_len(const char *a) {
  if (a == NULL)
    return 0;
  size_t n = 0;
  for (; a[n] != '\0'; n++) {
    unsigned char ch = (unsigned char)a[n];
    if (n + 1 >= TL_ADDRESS_MAX || ch <= ' ' || ch > '~' || ch == ',' || ch == '"' || ch == '\\')
      return 0;
  }
  return n;
}

int tl__res_decl_valid(const tl_resource *r, uint32_t n) {
  if (n == 0)
    return TL_OK;
  if (n > TL_RESOURCES_MAX || r == NULL)
    return TL_ERESOURCE;
  for (uint32_t i = 0; i < n; i++) {
    if (name_len(r[i].name) == 0 || r[i].naddresses == 0 ||
        r[i].naddresses > TL_RESOURCE_ADDRESSES_MAX || r[i].addresses == NULL)
      return TL_ERESOURCE;
    for (uint32_t k = 0; k < i; k++)
      if (strcmp(r[k].name, r[i].name) == 0)
        return TL_ERESOURCE;
    for (uint32_t a = 0; a < r[i].naddresses; a++) {
      if (address_len(r[i].addresses[a]) == 0)
        return TL_ERESOURCE;
      for (uint32_t b = 0; b < a; b++) /* at most half a million compares of short strings */
        if (strcmp(r[i].addresses[a], r[i].addresses[b]) == 0)
          return TL_ERESOURCE;
    }
  }
  return TL_OK;
}

int tl__res_req_valid(const tl_resource_request *r, uint32_t n) {
  if (n == 0)
    return TL_OK;
  if (n > TL_RESOURCES_MAX || r == NULL)
    return TL_ERESOURCE;
  uint32_t grants = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (name_len(r[i].name) == 0 || r[i].amount == 0 || r[i].amount > TL_TASK_GRANTS_MAX ||
        r[i].share > TL_SHARE_MAX || (r[i].share > 1 && r[i].amount != 1))
      return TL_ERESOURCE;
    for (uint32_t k = 0; k < i; k++)
      if (strcmp(r[k].name, r[i].name) == 0)
        return TL_ERESOURCE;
    grants += r[i].amount;
  }
  return grants <= TL_TASK_GRANTS_MAX ? TL_OK : TL_ERESOURCE;
}

/* ---------------------------------------------------------------------------------------------
 * Names: interned, found by a walk of the few in use, freed with their last reference.
 * ------------------------------------------------------------------------------------------- */

static size_t kind_size(size_t len) { return sizeof(tl__rkind) + len + 1; }

static tl__rkind *kind_find(struct tl_scheduler *s, const char *name, size_t len) {
  for (tl__link *l = s->rkinds.next; l != &s->rkinds; l = l->next) {
    tl__rkind *k = tl__container_of(l, tl__rkind, on_scheduler);
    if (k->name_len == len && memcmp(k->name, name, len) == 0)
      return k;
  }
  return NULL;
}

/* The name's record with one more reference, made if new; NULL: TL_ENOMEM. */
static tl__rkind *kind_ref(struct tl_scheduler *s, const char *name) {
  size_t len = strlen(name);
  tl__rkind *k = kind_find(s, name, len);
  if (k == NULL) {
    if ((k = tl__calloc(s, 1, kind_size(len))) == NULL)
      return NULL;
    k->name_len = (uint32_t)len;
    memcpy(k->name, name, len + 1);
    tl__list_insert_tail(&s->rkinds, &k->on_scheduler);
    s->nrkinds++;
  }
  k->refs++;
  return k;
}

static void kind_unref(struct tl_scheduler *s, tl__rkind *k) {
  if (--k->refs != 0)
    return;
  tl__list_remove(&k->on_scheduler);
  s->nrkinds--;
  tl__free(s, k, kind_size(k->name_len));
}

/* ---------------------------------------------------------------------------------------------
 * Executors' declarations
 * ------------------------------------------------------------------------------------------- */

int tl__res_executor_new(struct tl_scheduler *s, const tl_resource *r, uint32_t n,
                         tl__eresources **out) {
  *out = NULL;
  if (n == 0)
    return TL_OK;
  size_t naddr = 0, text = 0;
  for (uint32_t i = 0; i < n; i++) {
    naddr += r[i].naddresses;
    for (uint32_t a = 0; a < r[i].naddresses; a++)
      text += strlen(r[i].addresses[a]) + 1;
  }
  size_t head = sizeof(tl__eresources) + n * sizeof(tl__eres);
  head = (head + 7) & ~(size_t)7;
  size_t bytes = head + naddr * (sizeof(uint64_t) + sizeof(char *)) + text;
  tl__eresources *e = tl__calloc(s, 1, bytes);
  if (e == NULL)
    return TL_ENOMEM;
  e->bytes = bytes;
  uint64_t *used = (uint64_t *)(void *)((char *)e + head);
  char **addr = (char **)(void *)(used + naddr);
  char *str = (char *)(addr + naddr);
  for (uint32_t i = 0; i < n; i++) {
    tl__eres *x = &e->r[i];
    if ((x->kind = kind_ref(s, r[i].name)) == NULL) {
      for (uint32_t k = 0; k < i; k++)
        kind_unref(s, e->r[k].kind);
      tl__free(s, e, bytes);
      return TL_ENOMEM;
    }
    x->naddr = x->nfree = r[i].naddresses;
    x->addr_used = used;
    x->addr = addr;
    for (uint32_t a = 0; a < x->naddr; a++) {
      size_t len = strlen(r[i].addresses[a]);
      memcpy(str, r[i].addresses[a], len + 1);
      addr[a] = str;
      str += len + 1;
    }
    used += x->naddr;
    addr += x->naddr;
  }
  e->n = n;
  for (uint32_t i = 0; i < n; i++) { /* into the totals: nothing can fail from here */
    e->r[i].kind->addresses += e->r[i].naddr;
    e->r[i].kind->free += e->r[i].naddr;
  }
  *out = e;
  return TL_OK;
}

void tl__res_executor_free(struct tl_scheduler *s, tl__eresources *e) {
  if (e == NULL)
    return;
  for (uint32_t i = 0; i < e->n; i++) {
    tl__eres *x = &e->r[i];
    x->kind->addresses -= x->naddr;
    x->kind->free -= x->nfree;
    x->kind->used -= x->used;
    kind_unref(s, x->kind);
  }
  tl__free(s, e, e->bytes);
}

/* ---------------------------------------------------------------------------------------------
 * Task sets' requests
 * ------------------------------------------------------------------------------------------- */

static size_t treqs_size(uint32_t n) { return sizeof(tl__treqs) + n * sizeof(tl__treq); }

int tl__res_taskset_new(struct tl_scheduler *s, const tl_resource_request *r, uint32_t n,
                        tl__treqs **out) {
  *out = NULL;
  if (n == 0)
    return TL_OK;
  tl__treqs *q = tl__malloc(s, treqs_size(n));
  if (q == NULL)
    return TL_ENOMEM;
  q->ngrants = 0;
  for (uint32_t i = 0; i < n; i++) {
    if ((q->r[i].kind = kind_ref(s, r[i].name)) == NULL) {
      for (uint32_t k = 0; k < i; k++)
        kind_unref(s, q->r[k].kind);
      tl__free(s, q, treqs_size(n));
      return TL_ENOMEM;
    }
    q->r[i].share = r[i].share > 1 ? r[i].share : 1;
    q->r[i].amount = r[i].amount;
    q->ngrants += r[i].amount;
  }
  q->n = n;
  q->ts = NULL;
  q->timer = false;
  q->deadline = 0;
  tl__list_init(&q->on_timer);
  tl__list_insert_tail(&s->res_tasksets, &q->on_scheduler);
  s->nres_tasksets++;
  *out = q;
  return TL_OK;
}

size_t tl__res_launchable(const struct tl_scheduler *s) {
  size_t n = 0;
  for (const tl__link *l = s->res_tasksets.next; l != &s->res_tasksets; l = l->next) {
    const tl__taskset *ts = tl__container_of(l, tl__treqs, on_scheduler)->ts;
    if (ts != NULL)
      n += (size_t)ts->npending + ts->nspeculatable;
  }
  return n;
}

static void timer_stop(struct tl_scheduler *s, tl__treqs *q) {
  if (!q->timer)
    return;
  q->timer = false;
  tl__list_remove(&q->on_timer);
  s->nres_timers--;
  if (q->ts != NULL)
    tl__unsched_leave(s, q->ts, TL__UNSCHED_RESOURCES);
}

void tl__res_taskset_free(struct tl_scheduler *s, tl__treqs *q) {
  if (q == NULL)
    return;
  for (uint32_t i = 0; i < q->n; i++)
    kind_unref(s, q->r[i].kind);
  timer_stop(s, q);
  tl__list_remove(&q->on_scheduler);
  s->nres_tasksets--;
  tl__free(s, q, treqs_size(q->n));
}

/* ---------------------------------------------------------------------------------------------
 * Fitting, granting, giving back
 * ------------------------------------------------------------------------------------------- */

/* The executor's resource of kind k: its index, or -1. */
static int eres_index(const tl__eresources *e, const tl__rkind *k) {
  if (e != NULL)
    for (uint32_t i = 0; i < e->n; i++)
      if (e->r[i].kind == k)
        return (int)i;
  return -1;
}

bool tl__res_could_fit(const tl__executor *ex, const tl__taskset *ts) {
  if (ex->profile != ts->profile || ex->cores < ts->cpus)
    return false;
  const tl__treqs *q = ts->req;
  for (uint32_t i = 0; q != NULL && i < q->n; i++) {
    int at = eres_index(ex->res, q->r[i].kind);
    if (at < 0 || ex->res->r[at].naddr < q->r[i].amount)
      return false;
  }
  return true;
}

uint32_t tl__res_fit_count(const tl__executor *ex, const tl__treqs *q, uint32_t limit) {
  if (q == NULL)
    return limit;
  uint32_t fit = limit;
  for (uint32_t i = 0; i < q->n && fit > 0; i++) {
    const tl__treq *rq = &q->r[i];
    int at = eres_index(ex->res, rq->kind);
    if (at < 0)
      return 0;
    const tl__eres *x = &ex->res->r[at];
    uint32_t n;
    if (rq->share == 1) {
      n = x->nfree / rq->amount;
    } else {
      uint64_t unit = tl__share_units(rq->share);
      n = 0;
      for (uint32_t a = 0; a < x->naddr && n < fit; a++)
        n += (uint32_t)((TL_SHARE_UNIT - x->addr_used[a]) / unit);
    }
    if (n < fit)
      fit = n;
  }
  return fit;
}

/* ---------------------------------------------------------------------------------------------
 * Unsatisfiable requests
 * ------------------------------------------------------------------------------------------- */

bool tl__res_unsatisfiable(struct tl_scheduler *s, const tl__taskset *ts) {
  for (const tl__host *h = s->hosts_by_name; h != NULL; h = h->hh_by_name.next)
    for (const tl__link *l = h->executors.next; l != &h->executors; l = l->next) {
      const tl__executor *ex = tl__container_of(l, tl__executor, on_host);
      if (ex->state == TL_EXECUTOR_ALIVE && tl__res_could_fit(ex, ts))
        return false;
    }
  return true;
}

void tl__res_after_round(struct tl_scheduler *s) {
  for (tl__link *l = s->res_tasksets.next; l != &s->res_tasksets; l = l->next) {
    tl__treqs *q = tl__container_of(l, tl__treqs, on_scheduler);
    const tl__taskset *ts = q->ts;
    /* One that launched in this round is satisfiable without looking (offers.c stamps it). */
    bool waiting = !ts->zombie && ts->npending + ts->nspeculatable > 0 && s->nalive > 0 &&
                   ts->offer_round != s->offer_round && tl__res_unsatisfiable(s, ts);
    if (!waiting) {
      timer_stop(s, q);
    } else if (!q->timer) { /* appended: every deadline is now + the same timeout */
      q->timer = true;
      q->deadline = tl__add_sat(s->last_now, s->cfg.unschedulable_timeout_ns);
      tl__list_insert_tail(&s->res_timers, &q->on_timer);
      s->nres_timers++;
      tl__unsched_enter(s, q->ts, TL__UNSCHED_RESOURCES);
    }
  }
}

tl__taskset *tl__res_due(struct tl_scheduler *s, uint64_t now) {
  while (!tl__list_empty(&s->res_timers)) {
    tl__treqs *q = tl__container_of(s->res_timers.next, tl__treqs, on_timer);
    if (!tl__due(q->deadline, now))
      return NULL;
    timer_stop(s, q);
    /* Still nothing that could run it? (An executor may have joined since the round.) */
    if (!q->ts->zombie && s->nalive > 0 && tl__res_unsatisfiable(s, q->ts)) {
      s->totals.tasksets_unschedulable_aborted++;
      return q->ts;
    }
  }
  return NULL;
}

uint64_t tl__res_next(const struct tl_scheduler *s, uint64_t now) {
  if (tl__list_empty(&s->res_timers))
    return TL_TICK_NEVER;
  uint64_t due = tl__container_of(s->res_timers.next, tl__treqs, on_timer)->deadline;
  if (due == UINT64_MAX)
    return TL_TICK_NEVER;
  return due > now ? due - now : 0;
}

/* Books units on address a of ex's resource x. */
static void take(tl__eres *x, uint32_t a, uint64_t units) {
  if (x->addr_used[a] == 0) {
    x->nfree--;
    x->kind->free--;
  }
  x->addr_used[a] += units;
  x->used += units;
  x->kind->used += units;
}

static void give(tl__eres *x, uint32_t a, uint64_t units) {
  x->addr_used[a] -= units;
  x->used -= units;
  x->kind->used -= units;
  if (x->addr_used[a] == 0) {
    x->nfree++;
    x->kind->free++;
  }
}

void tl__res_grant(struct tl_scheduler *s, tl__executor *ex, const tl__treqs *q, tl__grants *g) {
  (void)s;
  g->n = 0;
  for (uint32_t i = 0; i < q->n; i++) {
    const tl__treq *rq = &q->r[i];
    int at = eres_index(ex->res, rq->kind);
    tl__eres *x = &ex->res->r[at]; /* tl__res_fits found it */
    if (rq->share == 1) {
      uint32_t left = rq->amount;
      for (uint32_t a = 0; a < x->naddr && left > 0; a++) {
        if (x->addr_used[a] != 0)
          continue;
        take(x, a, TL_SHARE_UNIT);
        g->g[g->n++] = (tl_grant){(uint16_t)at, (uint16_t)a, 1};
        left--;
      }
    } else {
      uint64_t unit = tl__share_units(rq->share);
      for (uint32_t a = 0; a < x->naddr; a++) {
        if (TL_SHARE_UNIT - x->addr_used[a] < unit)
          continue;
        take(x, a, unit);
        g->g[g->n++] = (tl_grant){(uint16_t)at, (uint16_t)a, rq->share};
        break;
      }
    }
  }
}

bool tl__res_book(struct tl_scheduler *s, tl__executor *ex, const tl__treqs *q,
                  const tl__grants *g) {
  (void)s;
  if (q == NULL || ex->res == NULL || g->n != q->ngrants)
    return false;
  /* Checked against the books as they are, then booked: the grants of one attempt never name
   * one address twice (a whole one) nor pass what is left of it. */
  uint32_t k = 0;
  for (uint32_t i = 0; i < q->n; i++) {
    const tl__treq *rq = &q->r[i];
    int at = eres_index(ex->res, rq->kind);
    if (at < 0)
      return false;
    const tl__eres *x = &ex->res->r[at];
    for (uint32_t m = 0; m < rq->amount; m++, k++) {
      const tl_grant *gr = &g->g[k];
      if (gr->resource != (uint32_t)at || gr->address >= x->naddr || gr->share != rq->share)
        return false;
      uint64_t need = tl__share_units(rq->share);
      for (uint32_t p = k - m; p < k; p++) /* the same request's earlier grants */
        if (g->g[p].address == gr->address)
          need += tl__share_units(rq->share);
      if (TL_SHARE_UNIT - x->addr_used[gr->address] < need)
        return false;
    }
  }
  for (uint32_t i = 0; i < g->n; i++)
    take(&ex->res->r[g->g[i].resource], g->g[i].address, tl__share_units(g->g[i].share));
  return true;
}

void tl__res_unbook(tl__executor *ex, const tl__grants *g) {
  for (uint32_t i = 0; i < g->n; i++)
    give(&ex->res->r[g->g[i].resource], g->g[i].address, tl__share_units(g->g[i].share));
}

/* ---------------------------------------------------------------------------------------------
 * Grant blocks. A steady load of resource tasks reuses the blocks its ended attempts gave back:
 * up to TL__SPARE_GRANTS are kept until the scheduler is idle (tl__idle), then all are freed.
 * ------------------------------------------------------------------------------------------- */

#define TL__SPARE_GRANTS 256

tl__grants *tl__grants_alloc(struct tl_scheduler *s) {
  tl__grants *g = s->spare_grants;
  if (g != NULL) {
    s->spare_grants = g->next;
    s->nspare_grants--;
  } else if ((g = tl__malloc(s, sizeof *g)) == NULL) {
    return NULL;
  }
  g->next = NULL;
  g->refs = 1;
  g->n = 0;
  return g;
}

void tl__grants_ref(tl__grants *g) { g->refs++; }

void tl__grants_unalloc(struct tl_scheduler *s, tl__grants *g) {
  g->next = s->spare_grants;
  s->spare_grants = g;
  s->nspare_grants++;
}

void tl__grants_unref(struct tl_scheduler *s, tl__grants *g) {
  if (--g->refs != 0)
    return;
  if (s->nspare_grants < TL__SPARE_GRANTS && !tl__idle(s)) {
    g->next = s->spare_grants;
    s->spare_grants = g;
    s->nspare_grants++;
    return;
  }
  tl__free(s, g, sizeof *g);
}

void tl__grants_trim(struct tl_scheduler *s) {
  while (s->spare_grants != NULL) {
    tl__grants *g = s->spare_grants;
    s->spare_grants = g->next;
    s->nspare_grants--;
    tl__free(s, g, sizeof *g);
  }
}

/* ---------------------------------------------------------------------------------------------
 * tl_check's part.
 *
 * Per executor: each address's use at most one whole address, nfree and the sums agree with the
 * addresses, and the grants of its running and frozen attempts add up exactly to each address's
 * use (they are taken off the books and put back: modular arithmetic restores the books exactly
 * whatever the check finds). Per name: the totals and references. The grant blocks: attempts'
 * and queued events' references, and the spares.
 * ------------------------------------------------------------------------------------------- */

/* An attempt's grants against its task set's requests and its executor's declaration. */
static int check_grants(tl__checker *c, const tl__attempt *a) {
  const tl__grants *g = a->grants;
  const tl__treqs *q = a->taskset->req;
  const tl__executor *ex = a->executor;
  unsigned long long tid = (unsigned long long)a->tid;
  if (q == NULL) {
    TL__CHECK(c, g == NULL, "resources: tid %llu holds grants its task set did not ask for", tid);
    return TL_OK;
  }
  TL__CHECK(c, g != NULL && g->refs >= 1 && g->n == q->ngrants,
            "resources: tid %llu holds %u grants, its task set asks for %u", tid,
            g != NULL ? g->n : 0, q->ngrants);
  uint32_t k = 0;
  for (uint32_t i = 0; i < q->n; i++) {
    for (uint32_t m = 0; m < q->r[i].amount; m++, k++) {
      const tl_grant *gr = &g->g[k];
      TL__CHECK(c,
                ex->res != NULL && gr->resource < ex->res->n &&
                    ex->res->r[gr->resource].kind == q->r[i].kind &&
                    gr->address < ex->res->r[gr->resource].naddr && gr->share == q->r[i].share,
                "resources: tid %llu's grant %u does not match its request of %s", tid, k,
                q->r[i].kind->name);
    }
  }
  return TL_OK;
}

/* Takes (sign -1) or puts back (+1) the grants of the attempts on list from ex's books. */
static void unbook_list(tl__executor *ex, tl__link *list, int sign) {
  for (tl__link *l = list->next; l != list; l = l->next) {
    const tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
    const tl__grants *g = a->grants;
    for (uint32_t i = 0; g != NULL && i < g->n; i++) {
      uint64_t u = tl__share_units(g->g[i].share);
      uint64_t *used = &ex->res->r[g->g[i].resource].addr_used[g->g[i].address];
      *used = sign < 0 ? *used - u : *used + u;
    }
  }
}

static int check_executor(tl__checker *c, tl__executor *ex) {
  const char *id = tl__executor_id(ex);
  tl__eresources *e = ex->res;
  for (int pass = 0; pass < 2; pass++) {
    tl__link *list = pass == 0 ? &ex->running : &ex->frozen;
    for (tl__link *l = list->next; l != list; l = l->next) {
      int err = check_grants(c, tl__container_of(l, tl__attempt, on_executor));
      if (err != TL_OK)
        return err;
    }
  }
  if (e == NULL)
    return TL_OK;
  TL__CHECK(c, ex->state != TL_EXECUTOR_REMOVED, "resources: tombstone %s keeps its resources", id);
  tl__check_account(c, e->bytes);
  for (uint32_t i = 0; i < e->n; i++) {
    const tl__eres *x = &e->r[i];
    uint64_t sum = 0;
    uint32_t nfree = 0;
    for (uint32_t a = 0; a < x->naddr; a++) {
      TL__CHECK(c, x->addr_used[a] <= TL_SHARE_UNIT,
                "resources: executor %s's %s %s is held past one whole address", id, x->kind->name,
                x->addr[a]);
      sum += x->addr_used[a];
      nfree += x->addr_used[a] == 0;
    }
    TL__CHECK(c, sum == x->used && nfree == x->nfree,
              "resources: executor %s's %s: use %llu and %u free, its addresses say %llu and %u",
              id, x->kind->name, (unsigned long long)x->used, x->nfree, (unsigned long long)sum,
              nfree);
    x->kind->check_refs++;
    x->kind->check_addresses += x->naddr;
    x->kind->check_free += x->nfree;
    x->kind->check_used += x->used;
  }
  unbook_list(ex, &ex->running, -1);
  unbook_list(ex, &ex->frozen, -1);
  const char *name = NULL, *address = NULL;
  for (uint32_t i = 0; i < e->n && name == NULL; i++)
    for (uint32_t a = 0; a < e->r[i].naddr && name == NULL; a++)
      if (e->r[i].addr_used[a] != 0) {
        name = e->r[i].kind->name;
        address = e->r[i].addr[a];
      }
  unbook_list(ex, &ex->running, +1);
  unbook_list(ex, &ex->frozen, +1);
  TL__CHECK(c, name == NULL,
            "resources: executor %s's %s %s: its attempts' grants do not add up to its use", id,
            name, address);
  return TL_OK;
}

/* One holder of block g (NULL: none), at step 0 (zero its count), 1 (count the holder, and the
 * block's memory at its first) or 2 (compare the count with its references). */
static int visit_block(tl__checker *c, tl__grants *g, int step) {
  if (g == NULL)
    return TL_OK;
  if (step == 0) {
    g->check_refs = 0;
  } else if (step == 1) {
    if (g->check_refs++ == 0)
      tl__check_account(c, sizeof *g);
  } else {
    TL__CHECK(c, g->check_refs == g->refs && g->n <= TL_TASK_GRANTS_MAX,
              "resources: a grant block has %u references, %u holders", g->refs, g->check_refs);
  }
  return TL_OK;
}

int tl__res_check(tl__checker *c) {
  struct tl_scheduler *s = c->s;
  size_t nkinds = 0;
  for (tl__link *l = s->rkinds.next; l != &s->rkinds && nkinds <= s->nrkinds; l = l->next) {
    tl__rkind *k = tl__container_of(l, tl__rkind, on_scheduler);
    k->check_refs = k->check_addresses = k->check_free = 0;
    k->check_used = 0;
    nkinds++;
    tl__check_account(c, kind_size(k->name_len));
  }
  TL__CHECK(c, nkinds == s->nrkinds, "resources: %zu names, count says %zu", nkinds, s->nrkinds);
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    int err = check_executor(c, ex);
    if (err != TL_OK)
      return err;
  }
  size_t nreq = 0;
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    const tl__treqs *q = ts->req;
    if (q == NULL)
      continue;
    nreq++;
    tl__check_account(c, treqs_size(q->n));
    uint32_t grants = 0;
    for (uint32_t i = 0; i < q->n; i++) {
      q->r[i].kind->check_refs++;
      grants += q->r[i].amount;
      TL__CHECK(c,
                q->r[i].share >= 1 && q->r[i].share <= TL_SHARE_MAX &&
                    (q->r[i].share == 1 || q->r[i].amount == 1),
                "resources: task set %llu's request of %s is malformed", (unsigned long long)ts->id,
                q->r[i].kind->name);
    }
    TL__CHECK(c, grants == q->ngrants && grants <= TL_TASK_GRANTS_MAX,
              "resources: task set %llu asks for %u grants, its requests sum to %u",
              (unsigned long long)ts->id, q->ngrants, grants);
  }
  size_t listed = 0;
  for (const tl__link *l = s->res_tasksets.next; l != &s->res_tasksets && listed <= nreq;
       l = l->next) {
    const tl__treqs *q = tl__container_of(l, tl__treqs, on_scheduler);
    TL__CHECK(c, q->ts != NULL && q->ts->req == q,
              "resources: a requests block on the list belongs to no task set");
    /* Its unschedulable state (demand.c) is its deadline's, while it is active. */
    TL__CHECK(c, q->ts->zombie || ((q->ts->unsched & TL__UNSCHED_RESOURCES) != 0) == q->timer,
              "resources: task set %llu's unschedulable state disagrees with its deadline",
              (unsigned long long)q->ts->id);
    listed++;
  }
  size_t timers = 0;
  uint64_t last = 0;
  for (const tl__link *l = s->res_timers.next; l != &s->res_timers && timers <= nreq; l = l->next) {
    const tl__treqs *q = tl__container_of(l, tl__treqs, on_timer);
    TL__CHECK(c, q->timer && q->deadline >= last,
              "resources: the unsatisfiable deadlines are out of order");
    last = q->deadline;
    timers++;
  }
  TL__CHECK(c, timers == s->nres_timers, "resources: %zu deadlines, count says %zu", timers,
            s->nres_timers);
  TL__CHECK(c, nreq == s->nres_tasksets && listed == nreq,
            "resources: %zu task sets with requests, %zu listed, count says %zu", nreq, listed,
            s->nres_tasksets);
  for (tl__link *l = s->rkinds.next; l != &s->rkinds; l = l->next) {
    const tl__rkind *k = tl__container_of(l, tl__rkind, on_scheduler);
    TL__CHECK(c,
              k->refs == k->check_refs && k->refs > 0 && k->addresses == k->check_addresses &&
                  k->free == k->check_free && k->used == k->check_used,
              "resources: %s: %u references, %u addresses, %u free, use %llu; the records say "
              "%u, %u, %u, %llu",
              k->name, k->refs, k->addresses, k->free, (unsigned long long)k->used, k->check_refs,
              k->check_addresses, k->check_free, (unsigned long long)k->check_used);
  }
  /* Blocks: an attempt holds its own, a queued task event a reference to its attempt's (which
   * may have ended since). Each block reached is counted once, and its references must be
   * exactly its holders: three walks, zeroing, counting (the memory at the first holder) and
   * comparing. */
  for (int step = 0; step < 3; step++) {
    for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next)
      for (int pass = 0; pass < 2; pass++) {
        tl__link *list = pass == 0 ? &ex->running : &ex->frozen;
        for (tl__link *l = list->next; l != list; l = l->next) {
          int err = visit_block(c, tl__container_of(l, tl__attempt, on_executor)->grants, step);
          if (err != TL_OK)
            return err;
        }
      }
    for (int pass = 0; pass < 2; pass++) {
      const tl__event_array *q = pass == 0 ? &s->events : &s->batch;
      for (size_t i = 0; i < q->n; i++) {
        int err = visit_block(c, q->ev[i].grants, step);
        if (err != TL_OK)
          return err;
      }
    }
  }
  size_t spare = 0;
  for (const tl__grants *g = s->spare_grants; g != NULL && spare <= s->nspare_grants; g = g->next)
    spare++;
  TL__CHECK(c, spare == s->nspare_grants, "resources: %zu spare grant blocks, count says %zu",
            spare, s->nspare_grants);
  TL__CHECK(c, spare == 0 || !tl__idle(s), "resources: idle, yet %zu spare grant blocks are kept",
            spare);
  tl__check_account_n(c, spare, sizeof(tl__grants));
  return TL_OK;
}
