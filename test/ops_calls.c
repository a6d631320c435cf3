/* The calls but the offer round (ops_offer.c): each predicts its answer and events from the
 * model, applies the prediction, makes the call and checks its answer; and the results that
 * FINISHED updates hand over.
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Results.
 * ------------------------------------------------------------------------------------------- */

void tlo_res_free(void *p) { ((tlo_res *)p)->frees++; }

static tlo_res *res_new(tlo_run *r) {
  if (r->nres == r->rescap) {
    r->rescap = r->rescap ? 2 * r->rescap : 64;
    r->res = tlo_xrealloc(r->res, r->rescap * sizeof *r->res);
  }
  tlo_res *res = tlo_xrealloc(NULL, sizeof *res);
  res->magic = RES_MAGIC;
  res->frees = 0;
  r->res[r->nres++] = res;
  return res;
}

/* ---------------------------------------------------------------------------------------------
 * The calls: each predicts from the model, applies the prediction, calls, and compares.
 * ------------------------------------------------------------------------------------------- */

static const char *const rack_names[2] = {"r0", "r1"};

void tlo_do_add(tlo_run *r, mexec *x, unsigned slot, bool fresh, unsigned host, unsigned rackc,
                uint32_t cores) {
  static const int canonical[NHOSTS] = {0, 1, 0, -1};
  int rk = rackc == 0 ? canonical[host] : rackc == 1 ? 0 : rackc == 2 ? 1 : rackc == 3 ? -1 : -2;
  const char *rack = rk == -2 ? "" : rk < 0 ? NULL : rack_names[rk];
  mdecl decl = tlo_res_draw_decl(r); /* its resources and profile (none without resources) */
  int want;
  if (cores == 0 || rk == -2) {
    want = TL_EINVAL;
  } else if (decl.bad) {
    want = TL_ERESOURCE; /* before the clock is read */
    r->f_res[TLO_RF_REFUSED]++;
  } else {
    tlo_clock_read(r);
    if (x->state == MX_REMOVED)
      want = TL_EGONE;
    else if (x->state != MX_NONE)
      want = TL_EEXIST;
    else if (r->host_live[host] > 0 && r->host_rack[host] != rk)
      want = TL_EINVAL;
    else
      want = TL_OK;
  }
  if (want == TL_OK) {
    if (fresh)
      r->ngen[slot]++;
    x->state = MX_ALIVE;
    x->cores = x->free_cores = cores;
    x->nrunning = x->nfrozen = 0;
    x->host = host;
    x->was_decom = false;
    x->hb_when = r->now;
    x->hb_seq = ++r->seq;
    x->pend_timed = false;
    x->rec_timed = false;
    x->rack = rk;
    x->decl = decl;
    memset(x->used, 0, sizeof x->used);
    r->f_res[TLO_RF_EXECUTORS] += decl.nres > 0;
    x->reg_seq = ++r->seq;
    tlo_pl_executor_added(r, x); /* a task set placed only where nothing lived may run here */
    r->host_live[host]++;
    r->host_rack[host] = rk;
    x->was_alive = false;
    tlo_executor_changed(r, x);
    tlo_push_ev(r, EV_ADDED)->ex = x;
    tlo_clear_deadlines(r, TLO_XF_CLEARED_ADD); /* a task set may run there */
  }
  char d[160];
  int w = snprintf(d, sizeof d, "add %s host=%s rack=%s cores=%u", x->id, tlo_host_names[host],
                   rack == NULL ? "(none)"
                   : rack[0]    ? rack
                                : "\"\"",
                   cores);
  tl_resource res[NRKINDS];
  size_t nres = tlo_res_decl_desc(&decl, res);
  for (size_t i = 0; i < nres && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, " %s=%u", res[i].name, res[i].naddresses);
  if (decl.profile != 0 && w > 0 && (size_t)w < sizeof d)
    snprintf(d + w, sizeof d - (size_t)w, " profile=%u", decl.profile);
  /* Its ud is its record: launches and callbacks must hand back this one. */
  tl_executor_desc desc = {.id = x->id,
                           .host = tlo_host_names[host],
                           .rack = rack,
                           .cores = cores,
                           .ud = x,
                           .profile = decl.profile,
                           .resources = nres > 0 ? res : NULL,
                           .nresources = (uint32_t)nres};
  tlo_note_call(r, d);
  int rc = tl_executor_add(r->s, &desc);
  tlo_expect_rc(r, d, rc, want);
}

void tlo_do_lose(tlo_run *r, mexec *x, unsigned kind, bool app, int exit_code, const char *msg) {
  int want;
  if (kind > TL_LOSS_PENDING_TIMEOUT) {
    want = TL_EINVAL;
  } else {
    tlo_clock_read(r);
    if (x->state == MX_NONE)
      want = TL_ENOENT;
    else if (x->state == MX_REMOVED)
      want = TL_EGONE;
    else
      want = TL_OK;
  }
  if (want == TL_OK && !(x->state == MX_PENDING && kind == TL_LOSS_PENDING))
    tlo_lose(r, x, (tl_loss_kind)kind, app, exit_code, msg);
  char d[160];
  snprintf(d, sizeof d, "lose %s %s app=%d exit=%d msg=%.12s", x->id,
           tl_loss_kind_name((tl_loss_kind)kind), app, exit_code, msg ? msg : "(null)");
  tl_loss_reason why = {(tl_loss_kind)kind, app, exit_code, msg};
  tlo_note_call(r, d);
  int rc = tl_executor_lost(r->s, x->id, &why);
  tlo_expect_rc(r, d, rc, want);
}

void tlo_do_heartbeat(tlo_run *r, mexec *x) {
  tlo_clock_read(r);
  int want = x->state == MX_NONE                                   ? TL_ENOENT
             : x->state == MX_REMOVED                              ? TL_EGONE
             : x->state == MX_PENDING || x->state == MX_RECOVERING ? TL_ESTATE
                                                                   : TL_OK;
  if (want == TL_OK) {
    x->hb_when = r->now;
    x->hb_seq = ++r->seq;
  }
  char d[64];
  snprintf(d, sizeof d, "heartbeat %s", x->id);
  tlo_note_call(r, d);
  int rc = tl_executor_heartbeat(r->s, x->id);
  tlo_expect_rc(r, d, rc, want);
}

void tlo_do_decommission(tlo_run *r, mexec *x, const char *msg) {
  tlo_clock_read(r); /* the decommission's time: the kill interval counts from it */
  int want = x->state == MX_NONE                                   ? TL_ENOENT
             : x->state == MX_REMOVED                              ? TL_EGONE
             : x->state == MX_PENDING || x->state == MX_RECOVERING ? TL_ESTATE
                                                                   : TL_OK;
  if (want == TL_OK && x->state == MX_ALIVE) {
    x->state = MX_DECOM;
    x->decom_at = r->now;
    x->was_alive = true;
    tlo_executor_changed(r, x);
    x->was_alive = false;
  }
  char d[80];
  snprintf(d, sizeof d, "decommission %s msg=%.12s", x->id, msg ? msg : "(null)");
  tlo_note_call(r, d);
  int rc = tl_executor_decommission(r->s, x->id, msg);
  tlo_expect_rc(r, d, rc, want);
}

static bool pool_name_valid(const char *name) {
  return name != NULL && name[0] != '\0' && strlen(name) < 256;
}

void tlo_do_submit(tlo_run *r, uint32_t stage, int attempt_sel, uint32_t prio, uint32_t ntasks,
                   uint32_t cpus, unsigned pool, bool shuffle, bool barrier, const mprefs *prefs) {
  if (r->nts == MAXTS)
    return; /* the model's table is full: the operation does nothing */
  uint32_t sattempt = attempt_sel < 0 ? r->stage_next[stage] : (uint32_t)attempt_sel;
  mreq req = tlo_res_draw_req(r); /* what each task asks for (nothing without resources) */
  mpol pol = tlo_pol_draw_submit(r); /* its limit and tags (nothing without the policy) */
  mpl pl = tlo_pl_draw_submit(r, barrier); /* its placement (nothing without placement) */
  const char *pname = tlo_pool_names[pool];
  unsigned in_pool = POOL_DEFAULT; /* TL_FIFO ignores the pool's name, as Spark does */
  int want = TL_OK;
  if (ntasks == 0 || (pname != NULL && !pool_name_valid(pname)) || (prefs != NULL && prefs->bad) ||
      pol.bad != 0) {
    want = TL_EINVAL;
  } else if (req.bad) {
    want = TL_ERESOURCE;
    r->f_res[TLO_RF_REFUSED]++;
  } else {
    if (r->cfg.mode == TL_FAIR && pname != NULL) {
      in_pool = pool;
      if (!r->pools[pool].exists && !r->cfg.pool_auto_create)
        want = TL_ENOENT;
      else if (r->pools[pool].exists && r->pools[pool].nchildren > 0)
        want = TL_ESTATE;
    }
    for (uint32_t k = 0; k < r->nts && want == TL_OK; k++)
      if (!r->ts[k].released && r->ts[k].stage == stage && r->ts[k].sattempt == sattempt)
        want = TL_EEXIST;
  }
  uint32_t k = r->nts;
  mts *t = &r->ts[k];
  if (want == TL_OK && r->cfg.mode == TL_FAIR && pname != NULL && !r->pools[pool].exists) {
    /* Made with Spark's defaults; its record joins the baseline, as an added pool's does. */
    tlo_pool_make(r, pool, TL_FIFO, 1, 0, -1);
    r->f_auto_pools++;
    r->base_bytes += r->pool_bytes + strlen(pname) + 1;
    r->base_blocks++;
  }
  if (want == TL_OK) {
    int older = tlo_active_of(r, stage);
    memset(t, 0, sizeof *t);
    t->id = r->next_ts_id++;
    t->stage = stage;
    t->sattempt = sattempt;
    t->prio = prio;
    t->ntasks = ntasks;
    t->cpus = cpus != 0 ? cpus : r->cfg.cpus_per_task;
    t->pool = in_pool;
    t->shuffle = shuffle;
    t->barrier = barrier;
    t->may_spec = r->cfg.speculation && !barrier;
    t->req = req;
    t->maxf = pol.max;
    t->tags = pol.tags;
    t->pl = pl;
    r->f_pl_placed += pl.spread != 0 || pl.nexec != 0 || pl.hosts != 0;
    r->f_res[TLO_RF_REQUESTS] += req.nreq > 0;
    for (uint32_t i = ntasks; i-- > 0;)
      tlo_pend_push(t, i);
    for (uint32_t i = 0; prefs != NULL && i < ntasks; i++) {
      t->nprefs[i] = prefs->n[i];
      memcpy(t->prefs[i], prefs->p[i], sizeof t->prefs[i]);
      t->has_loc |= prefs->n[i] > 0;
    }
    if (t->has_loc) { /* delay scheduling starts at the most local valid level, now */
      t->levels = tlo_valid_levels_of(r, t);
      t->level = (uint8_t)tlo_next_level(t->levels, TL_PROCESS_LOCAL);
      t->reset = r->now;
      t->no_rejects = true;
    }
    r->nts++;
    if (sattempt >= r->stage_next[stage])
      r->stage_next[stage] = sattempt + 1;
    if (older >= 0) {
      tlo_make_zombie(r, (uint32_t)older);
      tlo_finish_if_drained(r, (uint32_t)older);
    }
    r->revive_wanted = true;
    tlo_push_revive_if_wanted(r);
  }
  char d[512];
  snprintf(d, sizeof d, "submit stage=%u attempt=%u priority=%u ntasks=%u cpus=%u pool=%.8s%s%s",
           stage, sattempt, prio, ntasks, cpus,
           pname == NULL      ? "(null)"
           : pname[0] == '\0' ? "\"\""
                              : pname,
           shuffle ? " shuffle_map" : "", barrier ? " barrier" : "");
  tl_location locs[MAXTASKS][MAXPREFS];
  tl_task_desc tasks[MAXTASKS];
  int w = (int)strlen(d);
  tl_resource_request rq[NRKINDS];
  size_t nrq = tlo_res_req_desc(&req, rq);
  for (size_t i = 0; i < nrq && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, " %s=%u/%u", rq[i].name, rq[i].amount, rq[i].share);
  if (req.profile != 0 && w > 0 && (size_t)w < sizeof d)
    w += snprintf(d + w, sizeof d - (size_t)w, " profile=%u", req.profile);
  const char *tags[4];
  char bad_tag[8];
  size_t ntags = tlo_pol_desc(&pol, tags, bad_tag, sizeof bad_tag);
  uint32_t maxf = pol.bad == 2 ? UINT16_MAX + 1u : pol.max;
  if (maxf != 0 && w > 0 && (size_t)w < sizeof d)
    w += snprintf(d + w, sizeof d - (size_t)w, " max_failures=%u", maxf);
  for (size_t i = 0; i < ntags && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, "%s%s", i == 0 ? " tags=" : ",", tags[i]);
  for (uint32_t i = 0; prefs != NULL && i < ntasks && i < MAXTASKS; i++) {
    tasks[i].prefs = prefs->n[i] > 0 ? locs[i] : NULL;
    tasks[i].nprefs = prefs->n[i];
    if (w > 0 && (size_t)w < sizeof d)
      w += snprintf(d + w, sizeof d - (size_t)w, " %u:", i);
    for (unsigned j = 0; j < prefs->n[i]; j++) {
      const mpref *pf = &prefs->p[i][j];
      locs[i][j].host = i == 0 && j == 0 && prefs->bad ? "" : tlo_host_names[pf->host];
      locs[i][j].executor_id = pf->ex != NULL ? pf->ex->id : NULL;
      if (w > 0 && (size_t)w < sizeof d)
        w += snprintf(d + w, sizeof d - (size_t)w, "%s%s%s", j ? "," : "", locs[i][j].host,
                      pf->ex != NULL ? "/" : "");
      if (pf->ex != NULL && w > 0 && (size_t)w < sizeof d)
        w += snprintf(d + w, sizeof d - (size_t)w, "%s", pf->ex->id);
    }
  }
  tl_taskset_desc desc = {.stage_id = stage,
                          .stage_attempt = sattempt,
                          .priority = prio,
                          .ntasks = ntasks,
                          .cpus_per_task = cpus,
                          .payload = t,
                          .shuffle_map = shuffle,
                          .barrier = barrier,
                          .pool = pname,
                          .tasks = prefs != NULL ? tasks : NULL,
                          .profile = req.profile,
                          .resources = nrq > 0 ? rq : NULL,
                          .nresources = (uint32_t)nrq,
                          .max_task_failures = maxf,
                          .tags = ntags > 0 ? tags : NULL,
                          .ntags = (uint32_t)ntags};
  const char *pl_execs[2], *pl_hosts[NHOSTS];
  tlo_pl_desc(r, &pl, &desc, pl_execs, pl_hosts);
  if (pl.spread != 0 && w > 0 && (size_t)w < sizeof d)
    w += snprintf(d + w, sizeof d - (size_t)w, " spread=%u", pl.spread);
  for (uint32_t i = 0; i < desc.nallowed_executors && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, "%s%s", i == 0 ? " on=" : ",", pl_execs[i]);
  for (uint32_t i = 0; i < desc.nallowed_hosts && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, "%s%s", i == 0 ? " hosts=" : ",", pl_hosts[i]);
  tl_taskset_id id = 0;
  tlo_note_call(r, d);
  int rc = tl_submit(r->s, &desc, &id);
  tlo_expect_rc(r, d, rc, want);
  if (rc == TL_OK && want == TL_OK && id != t->id)
    tlo_fail(r, "tl_submit gave id %" PRIu64 ", the model says %" PRIu64, id, t->id);
}

void tlo_pool_make(tlo_run *r, unsigned p, tl_sched_mode mode, uint32_t weight, uint32_t min_share,
                   int parent) {
  mpool *m = &r->pools[p];
  *m = (mpool){true, mode, weight, min_share, parent, 1, 0, r->pool_seq++};
  if (parent >= 0) {
    m->depth = r->pools[parent].depth + 1;
    r->pools[parent].nchildren++;
  }
}

uint32_t tlo_pool_running(const tlo_run *r, unsigned p) {
  uint32_t running = 0;
  if (r->pools[p].nchildren > 0) {
    for (unsigned q = 0; q < NPOOLNAMES; q++)
      if (r->pools[q].exists && r->pools[q].parent == (int)p)
        running += tlo_pool_running(r, q);
    return running;
  }
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released && r->ts[k].pool == p)
      running += r->ts[k].nrunning;
  return running;
}

/* tl_pool_add (parent_sel 0), or tl_pool_add_child in tlo_pool_names[parent_sel - 1] (NULL: the
 * top level). A pool lives as long as the scheduler, so the memory it takes joins the empty
 * scheduler's baseline. */
void tlo_do_pool_add(tlo_run *r, unsigned pool, unsigned mode, uint32_t weight, uint32_t min_share,
                     unsigned parent_sel) {
  const char *name = tlo_pool_names[pool];
  bool child = parent_sel > 0;
  unsigned parent = child ? parent_sel - 1 : 0;
  const char *pname = child ? tlo_pool_names[parent] : NULL;
  int want;
  bool has_tasksets = false;
  for (uint32_t k = 0; child && k < r->nts; k++)
    has_tasksets |= !r->ts[k].released && r->ts[k].pool == parent;
  if (!pool_name_valid(name) || mode > TL_FAIR || weight == 0 ||
      (pname != NULL && (!pool_name_valid(pname) || strcmp(pname, name) == 0)))
    want = TL_EINVAL;
  else if (r->cfg.mode != TL_FAIR)
    want = TL_ESTATE;
  else if (pname != NULL && !r->pools[parent].exists)
    want = TL_ENOENT;
  else if (pname != NULL &&
           (parent == POOL_DEFAULT || has_tasksets || r->pools[parent].depth >= TL_POOL_DEPTH_MAX))
    want = TL_ESTATE;
  else if (r->pools[pool].exists)
    want = TL_EEXIST;
  else
    want = TL_OK;
  if (want == TL_OK) {
    tlo_pool_make(r, pool, (tl_sched_mode)mode, weight, min_share,
                  pname != NULL ? (int)parent : -1);
    r->f_nested_pools += pname != NULL;
  }
  char d[128];
  snprintf(d, sizeof d, "pool_add%s %.8s%s%.8s mode=%u weight=%u min_share=%u",
           child ? "_child" : "",
           name == NULL      ? "(null)"
           : name[0] == '\0' ? "\"\""
                             : name,
           child ? " in " : "",
           !child             ? ""
           : pname == NULL    ? "(null)"
           : pname[0] == '\0' ? "\"\""
                              : pname,
           mode, weight, min_share);
  tl_stats before, after;
  tl_stats_get(r->s, &before);
  tlo_note_call(r, d);
  int rc = child ? tl_pool_add_child(r->s, pname, name, (tl_sched_mode)mode, weight, min_share)
                 : tl_pool_add(r->s, name, (tl_sched_mode)mode, weight, min_share);
  tlo_expect_rc(r, d, rc, want);
  if (!r->in_cb)
    tlo_dispatch_all(r); /* deferred: the journal line it queued is not the pool's */
  tl_stats_get(r->s, &after);
  if (rc == TL_OK && want == TL_OK && !r->in_cb) {
    r->base_bytes += after.mem_live_bytes - before.mem_live_bytes;
    r->base_blocks += after.mem_live_blocks - before.mem_live_blocks;
  }
}

void tlo_do_kill_task(tlo_run *r, tl_tid tid, bool interrupt, const char *msg) {
  matt *a = tlo_indexed(r, tid);
  int want = a != NULL ? TL_OK : TL_ESTALE;
  if (a != NULL) {
    mevent *e = tlo_push_ev(r, EV_KILL);
    e->tid = tid;
    e->ex = a->ex;
    e->interrupt = interrupt;
    e->text = tlo_dup_text(msg);
  }
  char d[96];
  snprintf(d, sizeof d, "kill_task tid=%" PRIu64 " interrupt=%d msg=%.12s", tid, interrupt,
           msg ? msg : "(null)");
  tlo_note_call(r, d);
  int rc = tl_kill_task(r->s, tid, interrupt, msg);
  tlo_expect_rc(r, d, rc, want);
}

/* kill_task for every attempt in the tid index of every task set of a stage. */
static void kill_stage_model(tlo_run *r, uint32_t stage, bool interrupt, const char *msg) {
  for (uint32_t k = 0; k < r->nts; k++) {
    if (r->ts[k].released || r->ts[k].stage != stage)
      continue;
    tl_tid *v;
    size_t n = tlo_inflight_where(r, &v, NULL, 0, (int)k);
    for (size_t i = 0; i < n; i++) {
      mevent *e = tlo_push_ev(r, EV_KILL);
      e->tid = v[i];
      e->ex = r->att[v[i] - 1].ex;
      e->interrupt = interrupt;
      e->text = tlo_dup_text(msg);
    }
    free(v);
  }
}

void tlo_do_kill_stage(tlo_run *r, uint32_t stage, bool interrupt, const char *msg) {
  int want = tlo_stage_exists(r, stage) ? TL_OK : TL_ENOENT;
  if (want == TL_OK)
    kill_stage_model(r, stage, interrupt, msg);
  char d[96];
  snprintf(d, sizeof d, "kill_stage stage=%u interrupt=%d msg=%.12s", stage, interrupt,
           msg ? msg : "(null)");
  tlo_note_call(r, d);
  int rc = tl_kill_stage(r->s, stage, interrupt, msg);
  tlo_expect_rc(r, d, rc, want);
}

void tlo_do_cancel(tlo_run *r, uint32_t stage, const char *msg) {
  int want = tlo_stage_exists(r, stage) ? TL_OK : TL_ENOENT;
  if (want == TL_OK) {
    kill_stage_model(r, stage, false, msg);
    int active = tlo_active_of(r, stage);
    if (active >= 0)
      tlo_abort_ts(r, (uint32_t)active, ABORT_CANCEL, 0, 0, msg);
    for (uint32_t k = 0; k < r->nts; k++)
      if (!r->ts[k].released && r->ts[k].stage == stage)
        tlo_finish_if_drained(r, k);
  }
  char d[96];
  snprintf(d, sizeof d, "cancel_stage stage=%u msg=%.12s", stage, msg ? msg : "(null)");
  tlo_note_call(r, d);
  int rc = tl_cancel_stage(r->s, stage, msg);
  tlo_expect_rc(r, d, rc, want);
}

void tlo_do_partition(tlo_run *r, uint32_t stage, uint32_t index) {
  int want = TL_OK;
  int active = -1;
  if (!tlo_stage_exists(r, stage)) {
    want = TL_ENOENT;
  } else if ((active = tlo_active_of(r, stage)) >= 0) {
    mts *t = &r->ts[active];
    if (index >= t->ntasks) {
      want = TL_EINVAL;
    } else if (!t->idx[index].done) {
      tlo_mark_successful(r, (uint32_t)active, index);
      tlo_finish_if_drained(r, (uint32_t)active);
    }
  }
  char d[64];
  snprintf(d, sizeof d, "partition_completed stage=%u index=%u", stage, index);
  tlo_note_call(r, d);
  int rc = tl_partition_completed(r->s, stage, index);
  tlo_expect_rc(r, d, rc, want);
}

/* result_size choices of TLO_UPDATE (d): 0 the result mode's own (8 per mode, 0 for mode 3). */
static const size_t result_sizes[8] = {0, 0, 1, 7, 13, 40, 1000, SIZE_MAX};

/* The tl_update an update makes: a new result for every mode but 0 (1 with result_free, 2
 * without, 3 of size 0), its size, and the message. */
static tl_update update_of(tlo_run *r, const mupdate *m) {
  tlo_res *res = m->resmode != 0 ? res_new(r) : NULL;
  void (*rfree)(void *) = m->resmode == 2 ? NULL : tlo_res_free;
  size_t rsize = m->sizesel % 8 != 0 ? result_sizes[m->sizesel % 8]
                 : m->resmode == 3   ? 0
                                     : 8 * m->resmode;
  return (tl_update){(tl_task_state)m->state, (tl_end_kind)m->failure, m->msg, res, rsize, rfree,
                     tlo_pol_draw_no_retry(r, m->state)};
}

/* Whether tl_status_update refuses u with TL_EINVAL (the header: a state out of range, a result
 * with a state other than FINISHED, a failure kind no update may give). */
static bool update_invalid(const tl_update *u) {
  unsigned state = (unsigned)u->state, failure = (unsigned)u->failure;
  return state > TL_TASK_KILLED || (u->result != NULL && state != TL_TASK_FINISHED) ||
         (u->no_retry && (state != TL_TASK_FAILED || (failure != TL_END_EXCEPTION &&
                                                      failure != TL_END_RESULT_LOST))) ||
         (state == TL_TASK_FAILED &&
          (failure == TL_END_SUCCESS || failure == TL_END_EXECUTOR_LOST ||
           failure > TL_END_RESULT_LOST));
}

/* A success's run time is recorded, a failure's time starts its expiry: with speculation or
 * exclusion the updates read the clock, once per call (a batch's updates share one reading). */
static void update_clock(tlo_run *r) {
  if (r->cfg.speculation || tlo_xon(r))
    tlo_clock_read(r);
}

/* The executor's part of a valid update's answer, the same for every update of a batch. */
static int update_executor(const mexec *x) {
  return x->state == MX_NONE ? TL_ENOENT : x->state == MX_REMOVED ? TL_EGONE : TL_OK;
}

/* The rest of a valid update's answer, from an executor that is known and not removed, as the
 * model has it at that point (after the updates before it in its batch): TL_ESTALE or TL_EOWNER
 * (each counted), or TL_OK with the update applied to the model and its events queued. */
static int update_apply(tlo_run *r, mexec *x, tl_tid tid, const tl_update *u) {
  unsigned state = (unsigned)u->state, failure = (unsigned)u->failure;
  matt *a = tlo_indexed(r, tid);
  if (a == NULL) {
    r->stale++;
    return TL_ESTALE;
  }
  if (a->ex != x) {
    r->rejected_updates++;
    return TL_EOWNER;
  }
  r->f_late_reports += a->killed_by_other;
  if (state == TL_TASK_RUNNING) {
    a->running = true;
    return TL_OK;
  }
  mts *t = &r->ts[a->ts];
  const mindex *ix = &t->idx[a->index];
  mend m = {TL_END_SUCCESS, false, u->message, NULL, 0, NULL, NULL, false, u->no_retry};
  if (state == TL_TASK_FINISHED) {
    /* What the update gave is passed on (the result itself only with a success). */
    m.result_size = u->result_size;
    m.result_free = u->result_free;
    if (a->killed_by_other && ix->done) {
      /* Another copy won: the result is not taken, and counts for nothing. */
      m.kind = TL_END_KILLED;
      m.msg = "Finish but did not commit: another attempt succeeded.";
      r->killed++;
    } else {
      /* Every result counts toward max_result_bytes, dropped ones too. */
      size_t rsize = u->result_size;
      t->nresults++;
      t->result_bytes = rsize > UINT64_MAX - t->result_bytes ? UINT64_MAX : t->result_bytes + rsize;
      if (!t->shuffle && r->cfg.max_result_bytes != 0 &&
          t->result_bytes > r->cfg.max_result_bytes) {
        m.kind = TL_END_RESULT_TOO_LARGE;
        r->failed_count++;
      } else {
        m.kind = TL_END_SUCCESS;
        r->succeeded++;
        /* The output of an active shuffle-map task set stays on its executor, unless this
         * success completes the task set. */
        m.output = t->shuffle && !t->zombie && !ix->done && t->nsucceeded + 1 < t->ntasks;
      }
    }
    if (m.kind == TL_END_SUCCESS)
      m.result = u->result;
    else
      m.dropped = u->result;
  } else if (state == TL_TASK_KILLED) {
    m.kind = TL_END_KILLED;
    r->killed++;
  } else {
    m.kind = (tl_end_kind)failure;
    m.counts = m.kind == TL_END_EXCEPTION || m.kind == TL_END_RESULT_LOST;
    if (m.kind == TL_END_KILLED)
      r->killed++;
    else
      r->failed_count++;
  }
  x->nrunning--;
  if (!a->end_held) /* an end its executor held took no cores */
    x->free_cores += t->cpus;
  tlo_attempt_ended(r, tid, &m);
  tlo_push_revive_if_wanted(r);
  return TL_OK;
}

/* What an update is, for the trace and the messages. */
static int update_describe(const mupdate *m, const tl_update *u, char *buf, size_t len) {
  return snprintf(buf, len, "tid=%" PRIu64 " %s%s%s result=%u size=%zu msg=%.12s", m->tid,
                  tl_task_state_name(u->state), u->state == TL_TASK_FAILED ? "/" : "",
                  u->state == TL_TASK_FAILED ? tl_end_kind_name(u->failure) : "", m->resmode,
                  u->result_size, m->msg ? m->msg : "(null)");
}

void tlo_do_update(tlo_run *r, mexec *x, tl_tid tid, unsigned state, unsigned failure,
                   const char *msg, unsigned resmode, unsigned sizesel) {
  mupdate m = {tid, state, failure, msg, resmode, sizesel};
  tl_update u = update_of(r, &m);
  int want;
  if (update_invalid(&u)) {
    want = TL_EINVAL;
  } else {
    update_clock(r);
    want = update_executor(x);
    if (want == TL_OK)
      want = update_apply(r, x, tid, &u);
  }
  char d[176];
  int w = snprintf(d, sizeof d, "update %s ", x->id);
  update_describe(&m, &u, d + w, sizeof d - (size_t)w);
  tlo_note_call(r, d);
  int rc = tl_status_update(r->s, x->id, tid, &u);
  if (rc != TL_OK && u.result != NULL)
    tlo_res_free(u.result); /* on error the result is still ours */
  tlo_expect_rc(r, d, rc, want);
}

/* What tl_status_updates must leave in a result it does not write. */
#define RESULT_UNWRITTEN 0x5eed

/* tl_status_updates: the batch is refused as a whole for any update tl_status_update would
 * refuse with TL_EINVAL, or bad arguments, before the clock is read; then the clock is read
 * once and the executor checked once (TL_ENOENT, TL_EGONE refuse the batch); then each update
 * is predicted and applied to the model in order exactly as tl_status_update's, so its events
 * are queued in order. Then the one call, its answer and each results[i]; a result whose update
 * was not TL_OK stays ours, as with tl_status_update. */
void tlo_do_updates(tlo_run *r, mexec *x, const mupdate *m, size_t n, unsigned flags) {
  tl_tid tids[TLO_MAX_BATCH];
  tl_update us[TLO_MAX_BATCH];
  int want[TLO_MAX_BATCH], results[TLO_MAX_BATCH + 1];
  bool no_tids = n > 0 && (flags & BATCH_NULL_ARRAY) && !(flags & BATCH_NULL_UPDATES);
  bool no_updates = n > 0 && (flags & BATCH_NULL_ARRAY) && (flags & BATCH_NULL_UPDATES);
  bool invalid = no_tids || no_updates || (flags & BATCH_EMPTY_ID);
  for (size_t i = 0; i < n; i++) {
    tids[i] = m[i].tid;
    us[i] = update_of(r, &m[i]);
    invalid |= update_invalid(&us[i]);
  }
  int want_rc = TL_EINVAL;
  if (!invalid) {
    update_clock(r);
    want_rc = update_executor(x);
  }
  for (size_t i = 0; i < n; i++)
    want[i] = want_rc == TL_OK ? update_apply(r, x, tids[i], &us[i]) : want_rc;
  char d[512];
  int w =
      snprintf(d, sizeof d, "updates %s n=%zu%s%s%s%s:", (flags & BATCH_EMPTY_ID) ? "\"\"" : x->id,
               n, no_tids ? " tids=NULL" : "", no_updates ? " updates=NULL" : "",
               (flags & BATCH_NO_RESULTS) ? " results=NULL" : "", n == 0 ? " (none)" : "");
  for (size_t i = 0; i < n && w > 0 && (size_t)w < sizeof d; i++) {
    w += snprintf(d + w, sizeof d - (size_t)w, " [%zu] ", i);
    if (w > 0 && (size_t)w < sizeof d)
      w += update_describe(&m[i], &us[i], d + w, sizeof d - (size_t)w);
  }
  for (size_t i = 0; i <= n; i++)
    results[i] = RESULT_UNWRITTEN;
  tlo_note_call(r, d);
  r->f_batches++;
  r->f_batch_updates += n;
  int *res_out = (flags & BATCH_NO_RESULTS) ? NULL : results;
  int rc = tl_status_updates(r->s, (flags & BATCH_EMPTY_ID) ? "" : x->id, no_tids ? NULL : tids,
                             no_updates ? NULL : us, n, res_out);
  /* Whose each result is now: the library's on its update's TL_OK (as results[i] says it, or
   * as the model does when there is no results array), ours otherwise. */
  for (size_t i = 0; i < n; i++) {
    int code = rc != TL_OK ? rc : res_out != NULL ? results[i] : want[i];
    if (code != TL_OK && us[i].result != NULL)
      tlo_res_free(us[i].result);
  }
  if (res_out != NULL && rc == TL_OK && r->opt.verbose >= 1) {
    char line[160];
    int k = snprintf(line, sizeof line, "  results:");
    for (size_t i = 0; i < n && k > 0 && (size_t)k < sizeof line; i++)
      k += snprintf(line + k, sizeof line - (size_t)k, " %s", tl_err_name(results[i]));
    tlo_trace(r, 1, "%s", line);
  }
  tlo_expect_rc(r, d, rc, want_rc);
  if (r->failed || res_out == NULL)
    return;
  for (size_t i = 0; i < n; i++) {
    if (rc == TL_OK && results[i] != want[i]) {
      char u[160];
      update_describe(&m[i], &us[i], u, sizeof u);
      tlo_fail(r, "tl_status_updates: update %zu of %zu (%s) answered %s, the model says %s", i, n,
               u, tl_err_name(results[i]), tl_err_name(want[i]));
      return;
    }
    if (rc != TL_OK && results[i] != RESULT_UNWRITTEN) {
      tlo_fail(r, "tl_status_updates refused with %s, yet wrote results[%zu] = %d", tl_err_name(rc),
               i, results[i]);
      return;
    }
  }
  if (results[n] != RESULT_UNWRITTEN)
    tlo_fail(r, "tl_status_updates wrote results[%zu] = %d, past its %zu updates", n, results[n],
             n);
}

/* How the check judges task set t's attempts (the library's tl__spec_rule). */
typedef struct spec_rule {
  uint64_t threshold; /* slow past this run time */
  uint64_t median;    /* the median run time (the decommission rule's estimate) */
  bool custom;        /* threshold is the configured duration threshold */
  bool decom;         /* the decommission rule applies */
} spec_rule;

/* Whether t's tasks fit on one executor: at most max(the largest live executor of its
 * profile's cores / its cores per task, 1). */
static bool fits_one_executor(const tlo_run *r, const mts *t) {
  uint32_t most = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      const mexec *x = &r->ex[s][g];
      if (tlo_live_state(x->state) && x->decl.profile == t->req.profile && x->cores > most)
        most = x->cores;
    }
  uint32_t slots = most / t->cpus;
  return t->ntasks <= (slots > 1 ? slots : 1);
}

/* Whether task set t is looked at, and how: only active task sets that may speculate; once at
 * least max(floor(quantile x ntasks), 1) run times are recorded (more than one task), slow past
 * max(multiplier x the median of those run times, min runtime), and with a kill interval also
 * on a decommissioning executor whose kill comes before the median run would end; before that,
 * with a duration threshold and tasks that fit on one executor (one task included), slow past
 * the threshold. */
static bool slow_after(const tlo_run *r, const mts *t, spec_rule *rule) {
  uint64_t custom = r->cfg.speculation_task_duration_threshold_ns;
  if (t->released || t->zombie || !t->may_spec || (t->ntasks < 2 && custom == 0))
    return false;
  double wanted = r->cfg.speculation_quantile * (double)t->ntasks;
  uint64_t min_finished = wanted < 1.0 ? 1 : (uint64_t)wanted;
  if (t->ndur < min_finished) {
    if (custom == 0 || !fits_one_executor(r, t))
      return false;
    rule->threshold = custom;
    rule->median = 0;
    rule->custom = true;
    rule->decom = false;
    return true;
  }
  uint64_t median = tlo_median_of(t);
  /* Exactly: a run of n ns is longer than multiplier x median when n > floor(that); past 2^64
   * no run is. The configured multipliers are halves (k / 2). */
  uint64_t k = (uint32_t)(2 * r->cfg.speculation_multiplier), half = median / 2,
           odd = (median % 2) * k / 2;
  /* floor(k x median / 2) = k x floor(median / 2) + floor(k x (median mod 2) / 2) */
  rule->threshold = half != 0 && k > (UINT64_MAX - odd) / half ? UINT64_MAX : k * half + odd;
  if (rule->threshold < r->cfg.speculation_min_runtime_ns)
    rule->threshold = r->cfg.speculation_min_runtime_ns;
  rule->median = median;
  rule->custom = false;
  rule->decom = r->cfg.decommission_kill_interval_ns != 0;
  return true;
}

/* Whether a (alone in flight for its index, neither done nor speculatable, not frozen) is slow:
 * it ran past the threshold, or its decommissioning executor is to be killed before it would
 * end (decommissioned at d, killed at d + the interval, before launch + median; sums past
 * 2^64 - 1 saturate, and a saturated end is never before anything). Counts which rule. */
static bool slow(tlo_run *r, const spec_rule *rule, const matt *a) {
  if (r->now > a->launched_at && r->now - a->launched_at > rule->threshold) {
    r->f_spec_threshold += rule->custom;
    return true;
  }
  bool decom = rule->decom && a->ex->state == MX_DECOM &&
               tlo_add_sat(a->ex->decom_at, r->cfg.decommission_kill_interval_ns) <
                   tlo_add_sat(a->launched_at, rule->median);
  r->f_spec_decom += decom;
  return decom;
}

/* tl_tick's speculation check, every speculation_interval_ns: each attempt that is slow, alone
 * in flight for its index (which is neither done nor speculatable already) and not frozen,
 * makes its index speculatable; task sets in submission order, attempts in launch order. */
static void spec_check(tlo_run *r) {
  if (!r->cfg.speculation || r->now < r->next_spec || r->spec_never)
    return;
  for (uint32_t k = 0; k < r->nts; k++) {
    mts *t = &r->ts[k];
    spec_rule rule;
    if (!slow_after(r, t, &rule))
      continue;
    tlo_trace(r, 2,
              "  speculation check: task set %" PRIu64 " slow past %" PRIu64
              " ns (%u run times%s%s)",
              t->id, rule.threshold, t->ndur, rule.custom ? ", the duration threshold" : "",
              rule.decom ? ", the kill rule" : "");
    for (size_t j = 0; j < r->ninflight; j++) {
      const matt *a = &r->att[r->inflight[j] - 1];
      if (a->ts != k)
        continue;
      const mindex *ix = &t->idx[a->index];
      if (a->frozen || ix->done || ix->spec || ix->copies != 1 || !slow(r, &rule, a))
        continue;
      tlo_spec_push(t, a->index);
      r->f_spec_submitted++;
      mevent *e = tlo_push_ev(r, EV_SPEC);
      e->ts = k;
      e->index = a->index;
      r->revive_wanted = true;
    }
  }
  tlo_push_revive_if_wanted(r);
  /* At or past the end of time the next check never comes (a deadline saturated there never
   * does). */
  r->spec_never = r->now >= UINT64_MAX - r->cfg.speculation_interval_ns;
  r->next_spec = r->spec_never ? UINT64_MAX : r->now + r->cfg.speculation_interval_ns;
}

void tlo_do_tick(tlo_run *r) {
  tlo_clock_read(r);
  if (r->cfg.heartbeat_timeout_ns != 0) {
    for (;;) {
      mexec *head = NULL;
      for (unsigned s = 0; s < NSLOTS; s++)
        for (uint32_t g = 0; g < r->ngen[s]; g++) {
          mexec *x = &r->ex[s][g];
          if (tlo_live_state(x->state) && (head == NULL || x->hb_seq < head->hb_seq))
            head = x;
        }
      if (head == NULL ||
          !tlo_due_at(tlo_add_sat(head->hb_when, r->cfg.heartbeat_timeout_ns), r->now))
        break;
      tlo_lose(r, head, TL_LOSS_HEARTBEAT_TIMEOUT, true, 0, "Executor heartbeat timed out.");
    }
  }
  for (;;) {
    mexec *head = NULL;
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->state == MX_PENDING && x->pend_timed &&
            (head == NULL || x->pend_seq < head->pend_seq))
          head = x;
      }
    if (head == NULL || !tlo_due_at(head->pend_deadline, r->now))
      break;
    tlo_remove_executor(r, head, TL_LOSS_PENDING_TIMEOUT, true, 0,
                        "No loss reason arrived within the pending-loss timeout.");
    r->pending_loss_timeouts++;
  }
  /* Restored executors that did not reconcile in time, in restore order: executor_lost, then
   * the second phase at once, nothing counted. */
  for (;;) {
    mexec *head = NULL;
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->state == MX_RECOVERING && x->rec_timed &&
            (head == NULL || x->rec_seq < head->rec_seq))
          head = x;
      }
    if (head == NULL || !tlo_due_at(head->rec_deadline, r->now))
      break;
    tlo_lose(r, head, TL_LOSS_RECOVERY_TIMEOUT, false, 0,
             "The executor did not reconcile within the recovery timeout.");
    r->recovery_timeouts++;
  }
  if (r->cfg.tombstone_ttl_ns != 0) {
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->state == MX_REMOVED &&
            tlo_due_at(tlo_add_sat(x->tomb_when, r->cfg.tombstone_ttl_ns), r->now)) {
          x->state = MX_NONE;
          x->none_checked = false;
        }
      }
  }
  spec_check(r);
  /* Delay scheduling: one revive_offers when a wait ran out since the last tick. */
  bool fired = false;
  for (uint32_t k = 0; k < r->nts; k++)
    (void)tlo_wait_end(r, &r->ts[k], r->loc_ticked, &fired);
  if (fired) {
    r->f_loc_revives++;
    tlo_push_ev(r, EV_REVIVE);
  }
  r->loc_ticked = r->now;
  /* The library takes each part's next deadline as it goes, the waits before the exclusion
   * part's aborts: from a callback (no recomputation after delivery) the answer may still
   * count the wait of a task set this tick aborted. */
  uint64_t loc_before = tlo_loc_next_of(r);
  if (tlo_xon(r)) {
    /* Application-level exclusions whose time came end; then unschedulable deadlines that
     * came abort their task sets, in the order they were set. */
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->xapp && tlo_due_at(x->xapp_expiry, r->now)) {
          x->xapp = false;
          r->f_x[TLO_XF_EXPIRED]++;
        }
      }
    for (unsigned h = 0; h < NHOSTS; h++)
      if (r->node_excl[h] && tlo_due_at(r->node_expiry[h], r->now)) {
        r->node_excl[h] = false;
        r->f_x[TLO_XF_EXPIRED]++;
      }
    for (;;) {
      int due = -1;
      for (uint32_t k = 0; k < r->nts; k++)
        if (r->ts[k].xdl && tlo_due_at(r->ts[k].xdl_at, r->now) &&
            (due < 0 || r->ts[k].xdl_seq < r->ts[due].xdl_seq))
          due = (int)k;
      if (due < 0)
        break;
      mts *t = &r->ts[due];
      t->xdl = false;
      if (t->zombie) /* it became zombie while waiting: there is nothing left to abort */
        continue;
      r->unsched_aborted++;
      r->f_x[TLO_XF_ABORT_TICK]++;
      tlo_abort_ts(r, (uint32_t)due, ABORT_UNSCHEDULABLE, t->xdl_task, 0, t->xmsg);
      tlo_finish_if_drained(r, (uint32_t)due);
    }
  }
  bool nested = r->in_cb != 0;
  uint64_t want_next = tlo_next_deadline(r);
  if (loc_before < want_next)
    want_next = loc_before;
  char d[80];
  snprintf(d, sizeof d, "tick at %" PRIu64 " ms", r->now / 1000000);
  tlo_note_call(r, d);
  uint64_t next = tl_tick(r->s);
  tlo_expect_rc(r, d, TL_OK, TL_OK);
  /* A top-level tick answers after its events are delivered, so re-entrant calls count (unless
   * something was due again already: then 0 stands). With deferred delivery nothing is
   * delivered before it answers: the answer is that of its own transition. */
  if (!nested && want_next != 0 && !r->deferred)
    want_next = tlo_next_deadline(r);
  if (next != want_next)
    tlo_fail(r, "tl_tick returned %" PRIu64 ", the model says %" PRIu64, next, want_next);
}

/* Inspection of one executor, one task set and its explanation. */
void tlo_do_inspect(tlo_run *r, mexec *x, uint8_t tsref, uint8_t lensel) {
  static const size_t lens[4] = {1, 8, 64, 4096};
  snprintf(r->desc, sizeof r->desc, "inspect %s", x->id);
  tlo_cmp_exec(r, x);
  tl_taskset_id id;
  int k = -1;
  unsigned back = tsref % 16;
  if (back == 15 || back >= r->nts)
    id = tsref & 16 ? 0 : r->next_ts_id;
  else
    id = r->ts[(k = (int)(r->nts - 1 - back))].id;
  if (k >= 0)
    tlo_cmp_ts(r, (uint32_t)k);
  size_t len = lens[lensel % 4];
  char *buf = tlo_xrealloc(NULL, len);
  char d[64];
  snprintf(d, sizeof d, "explain %" PRIu64 " len=%zu", id, len);
  tlo_note_call(r, d);
  int rc = tl_explain_taskset(r->s, id, buf, len);
  bool exists = k >= 0 && !r->ts[k].released;
  tlo_expect_rc(r, d, rc, exists ? TL_OK : TL_ENOENT);
  if (rc == TL_OK && exists) {
    const mts *t = &r->ts[k];
    char line[256];
    snprintf(line, sizeof line,
             "task set %" PRIu64 " (stage %u attempt %u, %u tasks): %s%s; %u running (%u frozen), "
             "%u pending, %u succeeded\n",
             t->id, t->stage, t->sattempt, t->ntasks, t->zombie ? "zombie" : "active",
             t->failed ? ", failed" : "", t->nrunning, t->nfrozen, t->zombie ? 0 : t->npend,
             t->nsucceeded);
    /* The text always has more than its first line, so a buffer shorter than that line plus
     * the cut marker holds a cut text: a prefix, then "...\n" when there is room for it. */
    size_t blen = strnlen(buf, len);
    size_t llen = strlen(line);
    if (blen >= len)
      tlo_fail(r, "tl_explain_taskset wrote %zu bytes without a NUL into %zu", blen, len);
    else if (len >= llen + 5 && strncmp(buf, line, llen) != 0)
      tlo_fail(r, "tl_explain_taskset begins \"%.*s\", the model says \"%s\"", (int)llen, buf,
               line);
    else if (len >= 5 && len < llen + 5 &&
             (blen != len - 1 || strcmp(buf + len - 5, "...\n") != 0 ||
              strncmp(buf, line, len - 5) != 0))
      tlo_fail(r, "tl_explain_taskset cut to %zu is \"%s\"", len, buf);
    else if (len < 5 && (blen != len - 1 || strncmp(buf, line, blen) != 0))
      tlo_fail(r, "tl_explain_taskset cut to %zu is \"%s\"", len, buf);
  }
  free(buf);
}

/* ---------------------------------------------------------------------------------------------
 * Failover: reconciliation, and the snapshot-restore operation.
 * ------------------------------------------------------------------------------------------- */

/* What tl_executor_reconcile must leave where it writes nothing. */
#define UNKNOWN_UNWRITTEN UINT64_C(0x5eed5eed5eed)

/* What a reconciliation of x answers when its arguments are valid (invalid: TL_EINVAL). */
static int reconcile_want(tlo_run *r, const mexec *x, bool invalid) {
  if (invalid)
    return TL_EINVAL;
  tlo_clock_read(r);
  return x->state == MX_NONE         ? TL_ENOENT
         : x->state == MX_REMOVED    ? TL_EGONE
         : x->state != MX_RECOVERING ? TL_ESTATE
                                     : TL_OK;
}

/* A reconciliation's unknown tids and their count (out[0 .. ucap], its last slot a guard) against
 * the model's unk[0 .. nunk). */
static void check_unknown(tlo_run *r, const char *desc, const tl_tid *unk, size_t nunk,
                          const tl_tid *out, size_t ucap, size_t count) {
  if (r->failed)
    return;
  if (count != nunk)
    tlo_fail(r, "%s: *nunknown is %zu, the model says %zu", desc, count, nunk);
  for (size_t i = 0; i < ucap && !r->failed; i++) {
    tl_tid want_tid = i < nunk ? unk[i] : UNKNOWN_UNWRITTEN;
    if (out[i] != want_tid)
      tlo_fail(r, "%s: unknown[%zu] is %" PRIu64 ", the model says %" PRIu64, desc, i, out[i],
               want_tid);
  }
  if (out[ucap] != UNKNOWN_UNWRITTEN)
    tlo_fail(r, "%s wrote unknown[%zu], past ucap", desc, ucap);
}

/* tl_executor_reconcile(x, tids[0 .. n), ucap). flags (TLO_RECONCILE's, bits 0-3): running
 * NULL, unknown NULL, nunknown NULL, the id "" (each TL_EINVAL where the header says so). */
void tlo_do_reconcile(tlo_run *r, mexec *x, const tl_tid *tids, size_t n, size_t ucap,
                      unsigned flags) {
  bool no_running = flags & 1, no_unknown = flags & 2, no_count = flags & 4, empty_id = flags & 8;
  bool invalid = empty_id || no_count || (no_running && n > 0) || (no_unknown && ucap > 0);
  for (size_t i = 0; i < n && !invalid; i++)
    invalid = tids[i] == 0;
  int want = reconcile_want(r, x, invalid);
  char d[512];
  int w = snprintf(d, sizeof d, "reconcile %s ucap=%zu%s%s%s n=%zu:", empty_id ? "\"\"" : x->id,
                   ucap, no_running ? " running=NULL" : "", no_unknown ? " unknown=NULL" : "",
                   no_count ? " nunknown=NULL" : "", n);
  for (size_t i = 0; i < n && w > 0 && (size_t)w < sizeof d; i++)
    w += snprintf(d + w, sizeof d - (size_t)w, " %" PRIu64, tids[i]);
  tl_tid *unk = NULL;
  size_t nunk = 0;
  if (want == TL_OK)
    unk = tlo_reconciled(r, x, tids, n, &nunk);
  tl_tid *out = tlo_xrealloc(NULL, (ucap + 1) * sizeof *out);
  for (size_t i = 0; i <= ucap; i++)
    out[i] = UNKNOWN_UNWRITTEN;
  size_t count = SIZE_MAX;
  tlo_note_call(r, d);
  r->f_reconcile_calls++;
  int rc = tl_executor_reconcile(r->s, empty_id ? "" : x->id, no_running ? NULL : tids, n,
                                 no_unknown ? NULL : out, ucap, no_count ? NULL : &count);
  tlo_expect_rc(r, d, rc, want);
  if (rc == TL_OK && want == TL_OK)
    check_unknown(r, d, unk, nunk, out, ucap, count);
  free(out);
  free(unk);
}

/* The model's plan of a reconciliation with items: which tids are reported with an attempt
 * number that is not the frozen attempt's, and which pending indices are adopted. */
void tlo_do_reconcile_items(tlo_run *r, mexec *x, const tl_tid *tids, size_t n, size_t ucap,
                            unsigned flags, uint8_t d) {
  bool no_items = flags & 1, no_unknown = flags & 2, no_count = flags & 4, empty_id = flags & 8;
  tl_reconcile_item *items = tlo_xrealloc(NULL, (n + 8) * sizeof *items);
  tl_tid *all = tlo_xrealloc(NULL, (n + 8) * sizeof *all);
  tl_tid bad = 0, ended = 0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    if (tids[i] > r->natt)
      continue; /* never launched: it would take a tid the adoptions below take */
    tl_reconcile_item it = {tids[i], 0, 0, 0, false, false};
    if (tids[i] != 0) {
      const matt *a = &r->att[tids[i] - 1];
      it = (tl_reconcile_item){tids[i], r->ts[a->ts].id, a->index, a->attempt, a->spec, false};
      /* One frozen attempt of x reported as another attempt: it is not kept. */
      if ((d & 32) && bad == 0 && a->live && a->frozen && a->ex == x) {
        bad = tids[i];
        it.attempt++;
      } else if (tids[i] == bad) {
        it.attempt++;
      } else if ((d & 128) && (ended == 0 || ended == tids[i]) && a->live && a->frozen &&
                 a->ex == x) {
        ended = tids[i]; /* one kept attempt reported ended: it takes no cores */
        it.ended = true;
      }
    }
    items[m] = it;
    all[m++] = tids[i];
  }
  bool invalid = empty_id || no_count || (no_items && m > 0) || (no_unknown && ucap > 0);
  for (size_t i = 0; i < m && !invalid; i++)
    invalid = items[i].tid == 0;
  int want = reconcile_want(r, x, invalid);
  /* The adoptions: pending indices of restored task sets, under the next tids, while x's cores
   * (after what it keeps) fit; then at most one more, which need not fit (killed if not: the
   * last tid, so the adopted ones stay consecutive). */
  tlo_adopt adopt[4];
  size_t nadopt = 0, nplanned = 0;
  if (want == TL_OK && !no_items) {
    uint64_t cores = x->free_cores;
    for (size_t i = 0; i < m; i++) {
      const matt *a = &r->att[all[i] - 1];
      bool first = true;
      for (size_t j = 0; j < i; j++)
        first = first && all[j] != all[i];
      if (first && a->live && a->frozen && a->ex == x && all[i] != bad && !a->end_held &&
          all[i] != ended)
        cores -= r->ts[a->ts].cpus;
    }
    size_t want_adopt = (size_t)(d >> 2) % 4 + ((d & 16) != 0);
    for (uint32_t k = 0; k < r->nts && nplanned < want_adopt; k++) {
      mts *t = &r->ts[k];
      /* Never one that asks for resources, nor one of another profile (the library's rule). */
      if (!t->restored || t->released || t->zombie || t->barrier || t->req.nreq > 0 ||
          t->req.profile != x->decl.profile)
        continue;
      for (uint32_t p = t->npend; p-- > 0 && nplanned < want_adopt;) {
        uint32_t i = t->pend[p];
        bool taken = false;
        for (size_t j = 0; j < nplanned; j++)
          taken = taken || (adopt[j].ts == k && adopt[j].index == i);
        if (taken)
          continue;
        tl_tid tid = (tl_tid)r->natt + 1 + nplanned;
        bool ended_item = (d & 64) != 0; /* ended: adopted whatever the cores, taking none */
        items[m] = (tl_reconcile_item){tid, t->id, i, t->idx[i].attempts, false, ended_item};
        all[m++] = tid;
        adopt[nplanned++] = (tlo_adopt){tid, k, i, ended_item};
        if (!ended_item) {
          if (t->cpus > cores)
            break; /* this one is killed: no more */
          cores -= t->cpus;
        }
        nadopt = nplanned;
      }
      if (nadopt < nplanned)
        break;
    }
  }
  char desc[640];
  int w = snprintf(desc, sizeof desc,
                   "reconcile_items %s ucap=%zu%s%s%s n=%zu:", empty_id ? "\"\"" : x->id, ucap,
                   no_items ? " items=NULL" : "", no_unknown ? " unknown=NULL" : "",
                   no_count ? " nunknown=NULL" : "", m);
  for (size_t i = 0; i < m && w > 0 && (size_t)w < sizeof desc; i++)
    w += snprintf(desc + w, sizeof desc - (size_t)w, " %" PRIu64 "/%" PRIu64 "/%u/%u", items[i].tid,
                  items[i].taskset, items[i].index, items[i].attempt);
  tl_tid *unk = NULL;
  size_t nunk = 0;
  if (want == TL_OK)
    unk = tlo_reconciled_items(r, x, all, m, &bad, bad != 0, ended, adopt, nadopt, &nunk);
  tl_tid *out = tlo_xrealloc(NULL, (ucap + 1) * sizeof *out);
  for (size_t i = 0; i <= ucap; i++)
    out[i] = UNKNOWN_UNWRITTEN;
  size_t count = SIZE_MAX;
  tlo_note_call(r, desc);
  r->f_reconcile_calls++;
  int rc = tl_executor_reconcile_items(r->s, empty_id ? "" : x->id, no_items ? NULL : items, m,
                                       no_unknown ? NULL : out, ucap, no_count ? NULL : &count);
  tlo_expect_rc(r, desc, rc, want);
  if (rc == TL_OK && want == TL_OK)
    check_unknown(r, desc, unk, nunk, out, ucap, count);
  free(out);
  free(unk);
  free(items);
  free(all);
}

/* The image of the latest snapshot, and readers and writers of it. */
typedef struct image_reader {
  const uint8_t *p;
  size_t len, at;
  size_t step; /* at most this many bytes per read (1 .. ) */
  int fail_at; /* -1: never; else the read that returns TL_EIO's trigger (-1) */
  int reads;
} image_reader;

static int image_read(void *ud, void *buf, size_t n) {
  image_reader *rd = ud;
  if (rd->fail_at >= 0 && rd->reads++ == rd->fail_at)
    return -1;
  size_t left = rd->len - rd->at;
  size_t k = n < left ? n : left;
  if (k > rd->step)
    k = rd->step;
  memcpy(buf, rd->p + rd->at, k);
  rd->at += k;
  return (int)k;
}

static int image_write(void *ud, const void *buf, size_t n) {
  tlo_run *r = ud;
  if (r->image_len + n > r->image_cap) {
    r->image_cap = (r->image_len + n) * 2;
    r->image = tlo_xrealloc(r->image, r->image_cap);
  }
  memcpy(r->image + r->image_len, buf, n);
  r->image_len += n;
  return 0;
}

static int failing_write(void *ud, const void *buf, size_t n) {
  (void)ud;
  (void)buf;
  (void)n;
  return 1;
}

/* CRC-32C (Castagnoli, reflected 0x82F63B78), written here from its definition. */
static uint32_t crc32c(const uint8_t *p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
  return ~c;
}

static void put_le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* A restore that must refuse: *out NULL, no resolver or other callback (the expected-event
 * queue is empty and the resolvers are not armed). */
static void restore_refused(tlo_run *r, const char *what, const tl_config *cfg, image_reader *rd,
                            int want) {
  tl_scheduler *got = (tl_scheduler *)&r->cb; /* any non-NULL pointer: it must become NULL */
  char d[96];
  snprintf(d, sizeof d, "restore %s", what);
  tlo_note_call(r, d);
  r->restoring = true;
  int rc = tl_scheduler_restore(cfg, &r->cb, image_read, rd, &got);
  r->restoring = false;
  tlo_expect_rc(r, d, rc, want);
  if (rc == TL_OK && got != NULL && got != (tl_scheduler *)&r->cb) {
    (void)tl_scheduler_free(got); /* the failure is recorded; do not leak it */
  } else if (got != NULL && !r->failed) {
    tlo_fail(r, "restore %s returned %s with *out not NULL", what, tl_err_name(rc));
  }
  if (rc != TL_OK)
    r->f_restore_refusals++;
}

/* Whether the resolver withholds task set k's payload at the restore seeded so. */
static bool withheld(uint64_t seed, uint32_t k) {
  if (seed % 4 == 0)
    return false; /* a quarter of the restores give every payload back */
  uint64_t x = seed * 1000003u + k;
  return tlo_splitmix64(&x) % 10 == 0;
}

/* TLO_SNAPSHOT: the driver fails over. The clock is first brought up to the scheduler's time
 * (so the restore reads the snapshot's own time: nothing moves); flags try the refusals first
 * (bit 0 a writer that fails: TL_EIO; bit 1 tl_snapshot's TL_EINVALs; bit 2 a reader that fails:
 * TL_EIO; bit 3 the image cut at c: TL_ESNAPSHOT; bit 4 another max_task_failures: TL_ECONFIG;
 * bit 5 another version with its header checksum right: TL_EVERSION); then the snapshot, the
 * old scheduler freed (it hands every payload back: not a final release) and the restore, whose
 * resolvers give the payloads (some withheld, by a) and the uds back. */
void tlo_do_snapshot_restore(tlo_run *r, const tlo_op *op) {
  if (r->raw_now < r->now) {
    r->raw_now = r->now;
    tlo_trace(r, 1, "clock to %" PRIu64 " ms for the snapshot", r->raw_now / 1000000);
  }
  tlo_clock_read(r); /* the image's time: the restore reads the same, so nothing moves */
  unsigned flags = op->flags;
  if (flags & 1) {
    tlo_note_call(r, "snapshot to a failing writer");
    tlo_expect_rc(r, "snapshot to a failing writer", tl_snapshot(r->s, failing_write, r), TL_EIO);
    r->f_snapshot_errors++;
  }
  if (flags & 2) {
    tlo_note_call(r, "snapshot NULL");
    tlo_expect_rc(r, "snapshot of NULL", tl_snapshot(NULL, image_write, r), TL_EINVAL);
    tlo_expect_rc(r, "snapshot with write NULL", tl_snapshot(r->s, NULL, r), TL_EINVAL);
    r->f_snapshot_errors += 2;
  }
  r->image_len = 0;
  tlo_note_call(r, "snapshot");
  int rc = tl_snapshot(r->s, image_write, r);
  tlo_expect_rc(r, "snapshot", rc, TL_OK);
  if (r->failed || rc != TL_OK)
    return;
  tlo_trace(r, 1, "  image of %zu bytes", r->image_len);
  tlo_compare_all(r, true); /* a snapshot changes nothing */
  if (r->failed)
    return;

  /* Restores that must refuse. */
  image_reader rd = {r->image, r->image_len, 0, SIZE_MAX, -1, 0};
  if (flags & 4) {
    rd.fail_at = op->c % 3;
    rd.step = 1 + op->c % 64;
    restore_refused(r, "from a failing reader", &r->cfg, &rd, TL_EIO);
  }
  if ((flags & 8) && !r->failed) {
    rd = (image_reader){r->image, (size_t)op->c * r->image_len / 256, 0, SIZE_MAX, -1, 0};
    restore_refused(r, "of a cut image", &r->cfg, &rd, TL_ESNAPSHOT);
  }
  if ((flags & 16) && !r->failed) {
    tl_config other = r->cfg;
    other.max_task_failures = r->cfg.max_task_failures + 1;
    rd = (image_reader){r->image, r->image_len, 0, SIZE_MAX, -1, 0};
    restore_refused(r, "with another config", &other, &rd, TL_ECONFIG);
  }
  if ((flags & 32) && !r->failed && r->image_len >= 40) {
    uint8_t *copy = tlo_xrealloc(NULL, r->image_len);
    memcpy(copy, r->image, r->image_len);
    put_le32(copy + 8, 5 + op->c); /* versions 1 to 4 are read */
    put_le32(copy + 36, crc32c(copy, 36));
    rd = (image_reader){copy, r->image_len, 0, SIZE_MAX, -1, 0};
    restore_refused(r, "of another version", &r->cfg, &rd, TL_EVERSION);
    free(copy);
  }
  if (r->failed)
    return;

  /* The old scheduler goes: every task set it holds comes back, in submission order. */
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released) {
      mevent *e = tlo_push_ev(r, EV_RELEASED);
      e->ts = k;
      e->not_final = true;
    }
  r->closing = true;
  tlo_note_call(r, "scheduler_free for the failover");
  rc = tl_scheduler_free(r->s);
  tlo_expect_rc(r, "scheduler_free for the failover", rc, TL_OK);
  r->closing = false;
  if (rc != TL_OK)
    return;
  r->s = NULL;
  tlo_demand_reset(r); /* the restored scheduler's demand events start afresh */
  if (!r->failed && r->qhead != r->qlen)
    tlo_fail(r, "tl_scheduler_free delivered %zu releases fewer than the model expects",
             r->qlen - r->qhead);
  if (r->failed)
    return;
  tlo_drop_events(r);

  /* Who the resolvers are asked for: every executor but tombstones in registration order, every
   * task set in submission order. */
  r->nask_ex = r->next_ex = 0;
  for (;;) {
    mexec *next = NULL;
    for (unsigned s = 0; s < NSLOTS; s++)
      for (uint32_t g = 0; g < r->ngen[s]; g++) {
        mexec *x = &r->ex[s][g];
        if (x->state != MX_NONE && x->state != MX_REMOVED &&
            (r->nask_ex == 0 || x->reg_seq > r->ask_ex[r->nask_ex - 1]->reg_seq) &&
            (next == NULL || x->reg_seq < next->reg_seq))
          next = x;
      }
    if (next == NULL)
      break;
    r->ask_ex[r->nask_ex++] = next;
  }
  r->nask_ts = 0;
  uint64_t seed = (uint64_t)op->a | (uint64_t)op->b << 8 | (uint64_t)op->c << 16;
  for (uint32_t k = 0; k < r->nts; k++) {
    r->withhold[k] = false;
    if (!r->ts[k].released) {
      r->ask_ts[r->nask_ts++] = k;
      r->withhold[k] = withheld(seed, k);
    }
  }
  /* The recovery transitions, in registration order; then the task sets without a payload are
   * aborted (and released if nothing of theirs runs). */
  r->hold = false;
  for (uint32_t i = 0; i < r->nask_ex; i++) {
    if (tlo_live_state(r->ask_ex[i]->state))
      tlo_recover(r, r->ask_ex[i]);
    /* Restored task sets launch nothing until no executor recovers (those the image held
     * recovering included). */
    r->hold = r->hold || r->ask_ex[i]->state == MX_RECOVERING;
  }
  for (uint32_t i = 0; i < r->nask_ts; i++) {
    r->ts[r->ask_ts[i]].restored = true;
    /* The unsatisfiable requests' deadlines are not in the image: the next round starts them. */
    r->ts[r->ask_ts[i]].res_wait = false;
    r->ts[r->ask_ts[i]].pl_wait = false; /* nor placement's */
  }
  for (uint32_t i = 0; i < r->nask_ts; i++) {
    uint32_t k = r->ask_ts[i];
    if (!r->withhold[k])
      continue;
    r->ts[k].lost_payload = true;
    r->f_payloads_lost++;
    /* Only an active task set is aborted: a zombie launches nothing anyway, and is released
     * (with NULL) once its attempts end, as it would have been. */
    if (!r->ts[k].zombie)
      tlo_abort_ts(r, k, ABORT_PAYLOAD, 0, 0, NULL);
    tlo_finish_if_drained(r, k);
  }
  r->res_next_ts = 0;
  r->resolvers_armed = true;
  r->restoring = true;
  rd = (image_reader){r->image, r->image_len, 0, 1 + (size_t)op->b * 97, -1, 0};
  tl_scheduler *news = NULL;
  char d[64];
  snprintf(d, sizeof d, "restore (%u executors, %u task sets)", r->nask_ex, r->nask_ts);
  tlo_note_call(r, d);
  /* The epoch: the image's + 1, or a floor above it one restore in four. */
  tl_config rcfg = r->cfg;
  rcfg.restore_epoch_floor = seed % 4 == 0 ? r->epoch + 1 + (seed >> 2) % 3 : seed % 4 == 1 ? 1 : 0;
  r->epoch = rcfg.restore_epoch_floor > r->epoch + 1 ? rcfg.restore_epoch_floor : r->epoch + 1;
  rc = tl_scheduler_restore(&rcfg, &r->cb, image_read, &rd, &news);
  r->restoring = false;
  r->resolvers_armed = false;
  tlo_expect_rc(r, d, rc, TL_OK);
  if (rc != TL_OK || news == NULL) {
    if (!r->failed)
      tlo_fail(r, "restore returned TL_OK with *out NULL");
    return;
  }
  r->s = news;
  r->f_restores++;
  if (r->failed)
    return;
  if (r->next_ex != r->nask_ex)
    tlo_fail(r, "executor_restored was asked for %u executors, the model says %u", r->next_ex,
             r->nask_ex);
  else if (r->res_next_ts != r->nask_ts)
    tlo_fail(r, "taskset_restored was asked for %u task sets, the model says %u", r->res_next_ts,
             r->nask_ts);
}
