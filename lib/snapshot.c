/* Snapshots: tl_snapshot writes the ledger as one image, tl_scheduler_restore builds a scheduler
 * from one (driver failover; docs/snapshot.md has the format, field by field).
 *
 * The image is built under the lock into a buffer of the process allocator, O(state), then
 * written with the lock released. It holds the records every module can see (executors, their
 * timelines, pools, task sets with their per-index state and stacks, speculation's run times and
 * hosts tried, attempts, map outputs, counters), and the private parts of locality and exclusion,
 * which those modules write and read themselves. What follows from the rest is not saved but
 * derived again (counts, free cores, hosts and racks, stages, queues, copies and siblings).
 *
 * A restore reads the whole image (growing its buffer as bytes arrive, so a lying length
 * allocates nothing), checks both checksums, the version and the config's fingerprint, then
 * rebuilds the records, validating every value before it uses it, and runs tl_check on the
 * result: a snapshot that passes its checksums but says something no scheduler could hold is
 * refused as corrupt. Only then do the resolvers run and restored executors become RECOVERING;
 * nothing after that can fail.
 *
 * Resources (version 3): each executor's profile and declaration, each task set's profile and
 * requests and each attempt's grants, at the end of their records. The restore decodes them
 * into the shapes of tl_executor_add and tl_submit and validates them by the same rules
 * (tl__res_decl_valid, tl__res_req_valid), then books each attempt's grants on its executor
 * (tl__res_book: in range, of its request's share, within what is free), frozen attempts
 * included; tl_check then sums them against the executors' books.
 *
 * Retry policy and tags (version 4): each task set's max_task_failures and its tags, after its
 * requests; an older image's task sets take the config's max_task_failures and no tag.
 * Hard placement (version 4): after the tags, each task set's spread and allowed executors and
 * hosts (placement.c); its counts follow from its attempts as they are linked, and an
 * unschedulable timer starts again with the first round. An older image's have none.
 * And in version 4, decommission times: each executor's, at the end of its record: when it was
 * decommissioned (decommission_kill_interval_ns counts from it) if it is or was decommissioning
 * (DECOMMISSIONING, or PENDING_LOSS and RECOVERING with was_decommissioning), else never. An
 * older image gives such an executor the image's clock, rebased: the latest the decommission
 * can have been, so the kill it expects comes no earlier than the real one.
 *
 * Offer shuffle (version 4, optional): an image of a scheduler with offer_shuffle on ends with a
 * SHUF section, the shuffle's sequence position, which a restore with the shuffle on continues.
 */
#include "internal.h"
#include "placement.h"
#include "resource.h"

#include <stdlib.h>

#define SNAP_MAGIC "TLSNAP\r\n"
/* The version written; 1 (no epoch), 2 (no resources) and 3 (no retry policy nor tags, no
 * decommission time, no nested pools) are still read. */
#define SNAP_VERSION 4u
#define SNAP_HEADER 40u
#define SNAP_CHUNK 65536u

/* Section tags, four ASCII letters read as a little-endian u32. */
#define TAG(a, b, c, d)                                                                            \
  ((uint32_t)(a) | (uint32_t)(b) << 8 | (uint32_t)(c) << 16 | (uint32_t)(d) << 24)
enum {
  SEC_CLOCK = TAG('C', 'L', 'C', 'K'),
  SEC_COUNTERS = TAG('C', 'N', 'T', 'R'),
  SEC_POOLS = TAG('P', 'O', 'O', 'L'),
  SEC_EXECUTORS = TAG('E', 'X', 'E', 'C'),
  SEC_TIMELINES = TAG('T', 'I', 'M', 'E'),
  SEC_TASKSETS = TAG('T', 'S', 'E', 'T'),
  SEC_ATTEMPTS = TAG('A', 'T', 'T', 'M'),
  SEC_OUTPUTS = TAG('O', 'U', 'T', 'P'),
  SEC_LOCALITY = TAG('L', 'O', 'C', 'G'),
  SEC_EXCLUDE = TAG('E', 'X', 'C', 'L'),
  SEC_SHUFFLE = TAG('S', 'H', 'U', 'F'), /* offer shuffle (version 4, optional, last) */
};

/* Task set flags. */
enum { TS_SHUFFLE = 1, TS_BARRIER = 2, TS_ZOMBIE = 4, TS_FAILED = 8, TS_SPECULATION = 16 };
/* Attempt flags. */
enum {
  AT_RUNNING = 1,
  AT_FROZEN = 2,
  AT_SPECULATIVE = 4,
  AT_KILLED_BY_OTHER = 8,
  AT_END_HELD = 16
};

/* The counters of tl_stats the scheduler keeps in s->totals, in the image's order. */
#define TOTALS(XX)                                                                                 \
  XX(launched)                                                                                     \
  XX(succeeded)                                                                                    \
  XX(failed)                                                                                       \
  XX(killed)                                                                                       \
  XX(stale_updates)                                                                                \
  XX(rejected_updates)                                                                             \
  XX(rejected_offers)                                                                              \
  XX(executors_lost)                                                                               \
  XX(tasksets_released)                                                                            \
  XX(excluded_offers)                                                                              \
  XX(tasksets_unschedulable_aborted)                                                               \
  XX(pending_loss_timeouts)                                                                        \
  XX(recovery_timeouts)                                                                            \
  XX(reconciled)                                                                                   \
  XX(reconcile_lost)                                                                               \
  XX(reconcile_unknown)
/* Version 2 adds, after those: reconcile_adopted, then the epoch. */

/* The config fields a snapshot depends on: the records' shapes and the meaning of their counts.
 * Timeouts, the clock, the journal and delivery may change across a restore. */
static uint64_t fingerprint(const tl_config *c) {
  uint32_t f[10] = {(uint32_t)c->mode, c->cpus_per_task, c->max_task_failures,
                    c->speculation ? 1u : 0u, c->exclude_on_failure ? 1u : 0u};
  if (c->exclude_on_failure) {
    f[5] = c->exclude_max_task_attempts_per_executor;
    f[6] = c->exclude_max_task_attempts_per_node;
    f[7] = c->exclude_stage_max_failed_tasks_per_executor;
    f[8] = c->exclude_stage_max_failed_executors_per_node;
    f[9] = c->exclude_app_max_failed_tasks_per_executor ^
           (c->exclude_app_max_failed_executors_per_node << 16);
  }
  uint8_t b[sizeof f];
  for (size_t i = 0; i < TL__ARRAY_SIZE(f); i++)
    tl__le_put(b + 4 * i, f[i], 4);
  return tl__fnv1a(TL__FNV1A_INIT, b, sizeof b);
}

/* ---------------------------------------------------------------------------------------------
 * Writing
 * ------------------------------------------------------------------------------------------- */

static size_t section_open(tl__wbuf *w, uint32_t tag) {
  tl__put_u32(w, tag);
  size_t at = w->len;
  tl__put_u64(w, 0);
  return at;
}

static void section_close(tl__wbuf *w, size_t at) {
  if (!w->failed)
    tl__patch_u64(w, at, w->len - at - 8);
}

static void put_msg(tl__wbuf *w, const tl__str *msg) {
  tl__put_u8(w, msg != NULL);
  if (msg != NULL)
    tl__put_str(w, msg->text, msg->len);
}

/* An executor's declaration (version 3): u32 count; per resource its name, u32 addresses and
 * each address, in declaration order. */
static void put_resources(tl__wbuf *w, const tl__eresources *e) {
  uint32_t n = e != NULL ? e->n : 0;
  tl__put_u32(w, n);
  for (uint32_t i = 0; i < n; i++) {
    const tl__eres *r = &e->r[i];
    tl__put_str(w, r->kind->name, r->kind->name_len);
    tl__put_u32(w, r->naddr);
    for (uint32_t k = 0; k < r->naddr; k++)
      tl__put_str(w, r->addr[k], strlen(r->addr[k]));
  }
}

/* A task set's requests (version 3): u32 count; per request its name, u32 amount, u32 share. */
static void put_requests(tl__wbuf *w, const tl__treqs *q) {
  uint32_t n = q != NULL ? q->n : 0;
  tl__put_u32(w, n);
  for (uint32_t i = 0; i < n; i++) {
    tl__put_str(w, q->r[i].kind->name, q->r[i].kind->name_len);
    tl__put_u32(w, q->r[i].amount);
    tl__put_u32(w, q->r[i].share);
  }
}

/* Whether ex is or was decommissioning, so that its decommission time means something. */
static bool decommissioned(const tl__executor *ex) {
  return ex->state == TL_EXECUTOR_DECOMMISSIONING ||
         ((ex->state == TL_EXECUTOR_PENDING_LOSS || ex->state == TL_EXECUTOR_RECOVERING) &&
          ex->was_decommissioning);
}

static void save_executors(struct tl_scheduler *s, tl__wbuf *w) {
  size_t at = section_open(w, SEC_EXECUTORS);
  tl__put_u32(w, HASH_CNT(hh_by_id, s->executors_by_id));
  uint32_t ordinal = 0;
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    ex->offer_slot = ordinal++; /* offers.c's scratch, read only in the round that sets it */
    const char *host = tl__names_host(ex->names);
    tl__put_str(w, tl__executor_id(ex), ex->hh_by_id.keylen);
    tl__put_str(w, host, strlen(host));
    if (ex->host != NULL && ex->host->rack != NULL)
      tl__put_str(w, ex->host->rack->name, ex->host->rack->name_len);
    else if (ex->rack != NULL)
      tl__put_str(w, ex->rack->text, ex->rack->len);
    else
      tl__put_str(w, "", 0);
    tl__put_u32(w, ex->cores);
    tl__put_u8(w, ex->state);
    tl__put_u8(w, ex->was_decommissioning);
    tl__put_u64(w, ex->when);
    put_msg(w, ex->decommission_msg);
    tl__put_u32(w, ex->profile);
    put_resources(w, ex->res);
    tl__put_u64(w, decommissioned(ex) ? ex->decommission_time : UINT64_MAX);
  }
  section_close(w, at);

  at = section_open(w, SEC_TIMELINES);
  const tl__link *lists[4] = {&s->heartbeat_order, &s->pending_order, &s->recovery_order,
                              &s->tombstone_order};
  for (int k = 0; k < 4; k++) {
    size_t count_at = tl__put_u32_later(w);
    uint32_t n = 0;
    for (const tl__link *l = lists[k]->next; l != lists[k]; l = l->next, n++)
      tl__put_u32(w, tl__container_of(l, tl__executor, on_timeline)->offer_slot);
    tl__patch_u32(w, count_at, n);
  }
  section_close(w, at);
}

static void save_tasksets(struct tl_scheduler *s, tl__wbuf *w) {
  size_t at = section_open(w, SEC_TASKSETS);
  tl__put_u32(w, HASH_CNT(hh_by_id, s->tasksets_by_id));
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next) {
    tl__put_u64(w, ts->id);
    tl__put_u32(w, ts->stage_id);
    tl__put_u32(w, ts->stage_attempt);
    tl__put_u32(w, ts->priority);
    tl__put_u32(w, ts->ntasks);
    tl__put_u32(w, ts->cpus);
    tl__put_str(w, ts->pool->name, ts->pool->name_len);
    tl__put_u8(w, (uint8_t)((ts->shuffle_map ? TS_SHUFFLE : 0) | (ts->barrier ? TS_BARRIER : 0) |
                            (ts->zombie ? TS_ZOMBIE : 0) | (ts->failed ? TS_FAILED : 0) |
                            (ts->heap != NULL ? TS_SPECULATION : 0)));
    tl__put_u32(w, ts->nresults);
    tl__put_u64(w, ts->result_bytes);
    for (uint32_t i = 0; i < ts->ntasks; i++) {
      tl__put_u32(w, ts->idx[i].attempts);
      tl__put_u16(w, ts->idx[i].failures);
      tl__put_u8(w, ts->idx[i].flags);
    }
    uint32_t tops[2] = {ts->pending_top, ts->speculative_top};
    uint32_t counts[2] = {ts->npending, ts->nspeculatable};
    for (int k = 0; k < 2; k++) {
      tl__put_u32(w, counts[k]);
      for (uint32_t i = tops[k]; i != TL__NONE; i = ts->idx[i].next)
        tl__put_u32(w, i);
    }
    if (ts->heap != NULL) {
      tl__put_u32(w, ts->heap_cap);
      tl__put_u32(w, ts->nheap_low);
      tl__put_u32(w, ts->nheap_high);
      for (uint32_t k = 0; k < ts->nheap_low; k++)
        tl__put_u64(w, ts->heap[k]);
      for (uint32_t k = 0; k < ts->nheap_high; k++)
        tl__put_u64(w, ts->heap[ts->heap_cap - 1 - k]);
      for (uint32_t i = 0; i < ts->ntasks; i++) {
        size_t count_at = tl__put_u32_later(w);
        uint32_t n = 0;
        for (const tl__tried *t = ts->tried[i]; t != NULL; t = t->next, n++)
          tl__put_str(w, t->names->text, t->names->len);
        tl__patch_u32(w, count_at, n);
      }
    }
    tl__locality_save(s, ts, w);
    tl__put_u32(w, ts->profile);
    put_requests(w, ts->req);
    tl__put_u16(w, ts->max_failures);
    tl__tags_save(w, ts->tags);
    /* placement (version 4): spread, allowed executors, allowed hosts (placement.c) */
    tl__placement_save(w, ts);
  }
  section_close(w, at);
}

static void save_attempts(struct tl_scheduler *s, tl__wbuf *w) {
  size_t at = section_open(w, SEC_ATTEMPTS);
  tl__put_u32(w, (uint32_t)(s->attempts_by_tid.n + s->nfrozen));
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    const tl__link *lists[2] = {&ex->running, &ex->frozen};
    for (int k = 0; k < 2; k++) {
      for (const tl__link *l = lists[k]->next; l != lists[k]; l = l->next) {
        const tl__attempt *a = tl__container_of(l, tl__attempt, on_executor);
        tl__put_u64(w, a->tid);
        tl__put_u64(w, a->taskset->id);
        tl__put_u32(w, ex->offer_slot);
        tl__put_u32(w, a->index);
        tl__put_u32(w, a->attempt);
        tl__put_u64(w, a->launch_time);
        tl__put_u8(w,
                   (uint8_t)((a->state == TL__RUNNING ? AT_RUNNING : 0) |
                             (a->frozen ? AT_FROZEN : 0) | (a->speculative ? AT_SPECULATIVE : 0) |
                             (a->killed_by_other ? AT_KILLED_BY_OTHER : 0) |
                             (a->end_held ? AT_END_HELD : 0)));
        tl__put_u8(w, a->locality);
        uint32_t ng = a->grants != NULL ? a->grants->n : 0;
        tl__put_u8(w, (uint8_t)ng);
        for (uint32_t g = 0; g < ng; g++) {
          tl__put_u16(w, a->grants->g[g].resource);
          tl__put_u16(w, a->grants->g[g].address);
          tl__put_u32(w, a->grants->g[g].share);
        }
      }
    }
  }
  section_close(w, at);

  at = section_open(w, SEC_OUTPUTS);
  size_t count_at = tl__put_u32_later(w);
  uint32_t n = 0;
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next) {
    for (const tl__link *l = ex->outputs.next; l != &ex->outputs; l = l->next, n++) {
      const tl__output *o = tl__container_of(l, tl__output, on_executor);
      tl__put_u32(w, ex->offer_slot);
      tl__put_u64(w, o->taskset->id);
      tl__put_u64(w, o->tid);
      tl__put_u32(w, o->index);
      tl__put_u32(w, o->attempt);
      tl__put_u8(w, o->locality);
      tl__put_u8(w, o->speculative);
    }
  }
  tl__patch_u32(w, count_at, n);
  section_close(w, at);
}

static void save_body(struct tl_scheduler *s, tl__wbuf *w, uint64_t now) {
  size_t at = section_open(w, SEC_CLOCK);
  tl__put_u64(w, now);
  section_close(w, at);

  at = section_open(w, SEC_COUNTERS);
  tl__put_u64(w, s->next_tid);
  tl__put_u64(w, s->next_taskset_id);
  tl__put_u64(w, s->next_speculation);
  tl__put_u8(w, s->speculation_past_end);
#define PUT_TOTAL(f) tl__put_u64(w, s->totals.f);
  TOTALS(PUT_TOTAL)
#undef PUT_TOTAL
  tl__put_u64(w, s->totals.reconcile_adopted);
  tl__put_u64(w, s->epoch);
  section_close(w, at);

  at = section_open(w, SEC_POOLS);
  tl__put_u32(w, (uint32_t)s->npools);
  for (const tl__link *l = s->pools.next; l != &s->pools; l = l->next) {
    const tl__pool *p = tl__container_of(l, tl__pool, on_scheduler);
    tl__put_str(w, p->name, p->name_len);
    tl__put_u8(w, p->mode);
    tl__put_u32(w, p->weight);
    tl__put_u32(w, p->min_share);
    if (p->parent != NULL) /* version 4: its parent, made before it; "" at the top level */
      tl__put_str(w, p->parent->name, p->parent->name_len);
    else
      tl__put_str(w, "", 0);
  }
  section_close(w, at);

  save_executors(s, w);
  save_tasksets(s, w);
  save_attempts(s, w);

  at = section_open(w, SEC_LOCALITY);
  tl__locality_save_global(s, w);
  section_close(w, at);
  at = section_open(w, SEC_EXCLUDE);
  tl__exclude_save(s, w);
  section_close(w, at);

  /* Offer shuffle (version 4): where the sequence is, only while the shuffle is on; a restore
   * with it on continues from there. */
  if (s->cfg.offer_shuffle) {
    at = section_open(w, SEC_SHUFFLE);
    tl__put_u64(w, s->offer_shuffle_state);
    section_close(w, at);
  }
}

/* tl_snapshot and tl_dispatch_snapshot: the image is built under the lock; with dispatch, the
 * events (and journal lines) queued then, all made before the image, are taken as the
 * dispatcher's batch in the same lock section and delivered before the image is written, so a
 * written image never holds a state whose events were not delivered. */
static int snapshot(tl_scheduler *s, int (*write)(void *ud, const void *buf, size_t n), void *ud,
                    bool dispatch) {
  if (s == NULL || write == NULL)
    return TL_EINVAL;
  uint64_t t = tl__clock_read(s);
  tl__lock(s);
  bool queued = s->events.n != 0 || s->journal != NULL;
  if (s->closing || tl__dispatching(s) || (!dispatch && s->events.n != 0)) {
    tl__mutex_unlock(&s->lock);
    return TL_EBUSY;
  }
  uint64_t now = t > s->last_now ? t : s->last_now;
  tl__wbuf w;
  tl__wbuf_init(&w, tl__raw_realloc, tl__raw_free);
  uint8_t zero[SNAP_HEADER] = {0};
  tl__put_bytes(&w, zero, sizeof zero);
  save_body(s, &w, now);
  uint64_t fp = fingerprint(&s->cfg);
  if (w.failed || !dispatch || !queued)
    tl__mutex_unlock(&s->lock);
  else
    tl__dispatch_locked(s); /* releases the lock */
  if (w.failed) {
    tl__wbuf_free(&w);
    return TL_ENOMEM;
  }

  uint8_t *h = w.buf;
  memcpy(h, SNAP_MAGIC, 8);
  tl__le_put(h + 8, SNAP_VERSION, 4);
  tl__le_put(h + 12, 0, 4);
  tl__le_put(h + 16, fp, 8);
  tl__le_put(h + 24, w.len - SNAP_HEADER, 8);
  tl__le_put(h + 32, tl__crc32c(0, w.buf + SNAP_HEADER, w.len - SNAP_HEADER), 4);
  tl__le_put(h + 36, tl__crc32c(0, h, 36), 4);

  int err = TL_OK;
  for (size_t off = 0; off < w.len && err == TL_OK;) {
    size_t n = w.len - off < SNAP_CHUNK ? w.len - off : SNAP_CHUNK;
    if (write(ud, w.buf + off, n) != 0)
      err = TL_EIO;
    off += n;
  }
  tl__wbuf_free(&w);
  return err;
}

int tl_snapshot(tl_scheduler *s, int (*write)(void *ud, const void *buf, size_t n), void *ud) {
  return snapshot(s, write, ud, false);
}

int tl_dispatch_snapshot(tl_scheduler *s, int (*write)(void *ud, const void *buf, size_t n),
                         void *ud) {
  return snapshot(s, write, ud, true);
}

/* ---------------------------------------------------------------------------------------------
 * Reading
 * ------------------------------------------------------------------------------------------- */

typedef struct restore_state {
  struct tl_scheduler *s;
  uint32_t version;   /* the image's format version */
  tl__executor **exs; /* by ordinal */
  uint32_t nexs;
  tl__attempt **attempts; /* the attempts read, before they are linked */
  uint32_t nattempts;
  uint32_t nlinked; /* of which linked */
} restore_state;

/* The next section, which must have this tag: a reader over it (bad: r is marked). */
static tl__rbuf section(tl__rbuf *r, uint32_t tag) {
  uint32_t t = tl__get_u32(r);
  uint64_t n = tl__get_u64(r);
  if (!r->bad && (t != tag || n > tl__rbuf_left(r)))
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  size_t len = r->bad ? 0 : (size_t)n;
  tl__rbuf sub = tl__rbuf_over(tl__get_bytes(r, len), len);
  sub.saved_now = r->saved_now;
  sub.now = r->now;
  if (r->bad)
    tl__rbuf_fail(&sub, (tl__rfault)r->fault);
  return sub;
}

/* Ends a section: TL_ESNAPSHOT unless read whole and well. */
static int section_end(const tl__rbuf *r, int err) {
  if (err != TL_OK)
    return err;
  return tl__rbuf_done(r) ? TL_OK : TL_ESNAPSHOT;
}

/* s->epoch is the image's epoch here (version 1: 0); the restore moves it on. */
static int restore_counters(struct tl_scheduler *s, tl__rbuf *r, uint32_t version) {
  s->next_tid = tl__get_u64(r);
  s->next_taskset_id = tl__get_u64(r);
  s->next_speculation = tl__get_time(r);
  s->speculation_past_end = tl__get_bool(r);
#define GET_TOTAL(f) s->totals.f = tl__get_u64(r);
  TOTALS(GET_TOTAL)
#undef GET_TOTAL
  s->totals.reconcile_adopted = 0;
  s->epoch = 0;
  if (version >= 2) {
    s->totals.reconcile_adopted = tl__get_u64(r);
    s->epoch = tl__get_u64(r);
    if (s->epoch == 0) /* every scheduler has one from 1 */
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
  }
  /* One more must fit: an image at the last epoch cannot be restored. */
  if (s->next_tid == 0 || s->next_taskset_id == 0 || s->epoch == UINT64_MAX)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  return TL_OK;
}

static int restore_pools(struct tl_scheduler *s, tl__rbuf *r, uint32_t version) {
  uint32_t n = tl__get_count(r, version >= 4 ? 17 : 13);
  if (n == 0)
    tl__rbuf_fail(r, TL__RFAULT_RANGE);
  for (uint32_t i = 0; i < n && !r->bad; i++) {
    char name[TL_ID_MAX], parent[TL_ID_MAX] = "";
    size_t len, parent_len = 0;
    tl__get_cstr(r, 1, name, sizeof name, &len);
    uint8_t mode = tl__get_enum(r, 2);
    uint32_t weight = tl__get_u32(r), min_share = tl__get_u32(r);
    if (version >= 4)
      tl__get_cstr(r, 0, parent, sizeof parent, &parent_len);
    if (r->bad || weight == 0 || (i == 0) != (strcmp(name, "default") == 0) ||
        (i == 0 && parent_len != 0) || strcmp(name, parent) == 0) {
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
      break;
    }
    if (i == 0) { /* "default", made with every scheduler */
      s->default_pool->mode = mode;
      s->default_pool->weight = weight;
      s->default_pool->min_share = min_share;
      continue;
    }
    int err = tl__pool_add_child(s, parent_len != 0 ? parent : NULL, name, (tl_sched_mode)mode,
                                 weight, min_share);
    if (err == TL_ENOMEM)
      return err;
    if (err != TL_OK)
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
  }
  return r->bad ? TL_ESNAPSHOT : TL_OK;
}

/* An executor's declaration as put_resources wrote it, decoded into tl_executor_add's shape and
 * validated by its rules (tl__res_decl_valid: names, addresses, distinct, within the limits),
 * then made into the executor's block. The addresses are copied out NUL-terminated into one
 * scratch block per resource, of the process allocator; its size is bounded by the bytes that
 * remain (tl__get_count), so a lying count allocates nothing the input does not back. */
static int restore_resources(struct tl_scheduler *s, tl__rbuf *r, tl__executor *ex) {
  uint32_t n = tl__get_count(r, 14); /* a name (5 bytes at least), a count, an address (5) */
  if (r->bad || n > TL_RESOURCES_MAX)
    return TL_ESNAPSHOT;
  if (n == 0)
    return TL_OK;
  tl_resource decl[TL_RESOURCES_MAX];
  char names[TL_RESOURCES_MAX][TL_RESOURCE_NAME_MAX];
  char *scratch[TL_RESOURCES_MAX] = {NULL};
  int err = TL_OK;
  for (uint32_t i = 0; i < n && err == TL_OK; i++) {
    tl__get_cstr(r, 1, names[i], sizeof names[i], NULL);
    uint32_t na = tl__get_count(r, 5);
    if (r->bad || na == 0 || na > TL_RESOURCE_ADDRESSES_MAX) {
      err = TL_ESNAPSHOT;
      break;
    }
    char *b = tl__raw_calloc(na, sizeof(char *) + TL_ADDRESS_MAX);
    if (b == NULL) {
      err = TL_ENOMEM;
      break;
    }
    scratch[i] = b;
    char **addr = (char **)(void *)b;
    char *text = b + (size_t)na * sizeof(char *);
    for (uint32_t k = 0; k < na && !r->bad; k++) {
      addr[k] = text + (size_t)k * TL_ADDRESS_MAX;
      tl__get_cstr(r, 1, addr[k], TL_ADDRESS_MAX, NULL);
    }
    if (r->bad)
      err = TL_ESNAPSHOT;
    decl[i].name = names[i];
    decl[i].addresses = (const char *const *)addr;
    decl[i].naddresses = na;
  }
  if (err == TL_OK && tl__res_decl_valid(decl, n) != TL_OK)
    err = TL_ESNAPSHOT;
  if (err == TL_OK)
    err = tl__res_executor_new(s, decl, n, &ex->res);
  for (uint32_t i = 0; i < n; i++)
    tl__raw_free(scratch[i]);
  return err;
}

/* A task set's requests as put_requests wrote them, validated by tl_submit's rules. */
static int restore_requests(struct tl_scheduler *s, tl__rbuf *r, tl__taskset *ts) {
  uint32_t n = tl__get_count(r, 13);
  if (r->bad || n > TL_RESOURCES_MAX)
    return TL_ESNAPSHOT;
  if (n == 0)
    return TL_OK;
  tl_resource_request req[TL_RESOURCES_MAX];
  char names[TL_RESOURCES_MAX][TL_RESOURCE_NAME_MAX];
  for (uint32_t i = 0; i < n; i++) {
    tl__get_cstr(r, 1, names[i], sizeof names[i], NULL);
    req[i].name = names[i];
    req[i].amount = tl__get_u32(r);
    req[i].share = tl__get_u32(r);
  }
  if (r->bad || tl__res_req_valid(req, n) != TL_OK)
    return TL_ESNAPSHOT;
  int err = tl__res_taskset_new(s, req, n, &ts->req);
  tl__res_taskset_attach(ts->req, ts);
  return err;
}

static int restore_executors(restore_state *rs, tl__rbuf *r) {
  struct tl_scheduler *s = rs->s;
  uint32_t n = tl__get_count(r, 27);
  if (r->bad)
    return TL_ESNAPSHOT;
  if (n != 0 && (rs->exs = tl__raw_calloc(n, sizeof *rs->exs)) == NULL)
    return TL_ENOMEM;
  for (uint32_t i = 0; i < n; i++) {
    char id[TL_ID_MAX], host[TL_HOST_MAX], rack[TL_HOST_MAX];
    size_t id_len, host_len, rack_len;
    tl__get_cstr(r, 1, id, sizeof id, &id_len);
    tl__get_cstr(r, 1, host, sizeof host, &host_len);
    tl__get_cstr(r, 0, rack, sizeof rack, &rack_len);
    uint32_t cores = tl__get_u32(r);
    tl_executor_state state = (tl_executor_state)tl__get_enum(r, TL_EXECUTOR_RECOVERING + 1);
    bool was_decommissioning = tl__get_bool(r);
    uint64_t when = tl__get_time(r);
    bool has_msg = tl__get_bool(r);
    size_t msg_len = 0;
    const char *msg = has_msg ? tl__get_str(r, 0, UINT32_MAX, &msg_len) : NULL;
    /* A heartbeat or a removal lies in the past: later ones are appended after it. */
    bool past = state == TL_EXECUTOR_ALIVE || state == TL_EXECUTOR_DECOMMISSIONING ||
                state == TL_EXECUTOR_REMOVED;
    if (r->bad || cores == 0 || (past && when > r->now) ||
        (has_msg && state == TL_EXECUTOR_REMOVED) ||
        (rack_len != 0 && state == TL_EXECUTOR_REMOVED))
      return TL_ESNAPSHOT;
    tl__executor *ex;
    int err = tl__executor_restore_add(s, id, id_len, host, host_len, rack_len != 0 ? rack : NULL,
                                       rack_len, cores, state, &ex);
    if (err != TL_OK)
      return err == TL_ENOMEM ? err : TL_ESNAPSHOT;
    rs->exs[rs->nexs++] = ex;
    ex->when = when;
    ex->was_decommissioning = was_decommissioning;
    if (has_msg && (ex->decommission_msg = tl__str_new(s, msg, msg_len)) == NULL)
      return TL_ENOMEM;
    if (state == TL_EXECUTOR_RECOVERING && rack_len != 0 &&
        (ex->rack = tl__str_new(s, rack, rack_len)) == NULL)
      return TL_ENOMEM;
    if (rs->version >= 3) {
      ex->profile = tl__get_u32(r);
      if ((err = restore_resources(s, r, ex)) != TL_OK)
        return err;
      if (ex->res != NULL && state == TL_EXECUTOR_REMOVED)
        return TL_ESNAPSHOT; /* a tombstone's resources are freed with its burial */
    }
    /* A decommission time lies in the past, and only a decommissioned executor has one. */
    uint64_t decommission_time = rs->version >= 4 ? tl__get_time(r) : r->now;
    if (r->bad || (decommissioned(ex) ? decommission_time > r->now
                                      : rs->version >= 4 && decommission_time != UINT64_MAX))
      return TL_ESNAPSHOT;
    ex->decommission_time = decommissioned(ex) ? decommission_time : 0;
  }
  return TL_OK;
}

/* Inserts ex on a timeline in deadline order (from the tail: restored deadlines come in order). */
static void timeline_insert(tl__link *head, tl__executor *ex) {
  tl__link *pos = head;
  while (pos->prev != head &&
         tl__container_of(pos->prev, tl__executor, on_timeline)->when > ex->when)
    pos = pos->prev;
  tl__list_insert_before(pos, &ex->on_timeline);
}

static int restore_timelines(restore_state *rs, tl__rbuf *r) {
  struct tl_scheduler *s = rs->s;
  tl__link *lists[4] = {&s->heartbeat_order, &s->pending_order, &s->recovery_order,
                        &s->tombstone_order};
  for (int k = 0; k < 4; k++) {
    uint32_t n = tl__get_count(r, 4);
    for (uint32_t i = 0; i < n && !r->bad; i++) {
      uint32_t ordinal = tl__get_below(r, rs->nexs);
      if (r->bad)
        return TL_ESNAPSHOT;
      tl__executor *ex = rs->exs[ordinal];
      bool fits = k == 0
                      ? ex->state == TL_EXECUTOR_ALIVE || ex->state == TL_EXECUTOR_DECOMMISSIONING
                  : k == 1 ? ex->state == TL_EXECUTOR_PENDING_LOSS
                  : k == 2 ? ex->state == TL_EXECUTOR_RECOVERING
                           : ex->state == TL_EXECUTOR_REMOVED;
      if (r->bad || !fits || tl__list_linked(&ex->on_timeline))
        return TL_ESNAPSHOT;
      tl__list_insert_tail(lists[k], &ex->on_timeline);
    }
  }
  if (r->bad)
    return TL_ESNAPSHOT;
  /* Every executor on the timeline of its state; a deadline this config has and the saved one
   * had not (or the reverse) is made (or dropped) now. */
  for (uint32_t i = 0; i < rs->nexs; i++) {
    tl__executor *ex = rs->exs[i];
    uint64_t timeout = ex->state == TL_EXECUTOR_PENDING_LOSS ? s->cfg.pending_loss_timeout_ns
                       : ex->state == TL_EXECUTOR_RECOVERING ? s->cfg.recovery_timeout_ns
                                                             : 1;
    if (timeout == 0) {
      tl__list_remove(&ex->on_timeline);
    } else if (tl__list_linked(&ex->on_timeline)) {
      /* No later than this config's timeout from now: a deadline made later is appended with
       * it, after this one. (Taking the smaller keeps the list in order.) */
      uint64_t latest = tl__add_sat(s->last_now, timeout);
      if ((ex->state == TL_EXECUTOR_PENDING_LOSS || ex->state == TL_EXECUTOR_RECOVERING) &&
          ex->when > latest)
        ex->when = latest;
    } else {
      if (ex->state != TL_EXECUTOR_PENDING_LOSS && ex->state != TL_EXECUTOR_RECOVERING)
        return TL_ESNAPSHOT;
      ex->when = tl__add_sat(s->last_now, timeout);
      timeline_insert(
          ex->state == TL_EXECUTOR_PENDING_LOSS ? &s->pending_order : &s->recovery_order, ex);
    }
  }
  return TL_OK;
}

static tl__str *names_find_or_new(struct tl_scheduler *s, const char *text, size_t len) {
  tl__executor *ex = tl__executor_find(s, text);
  if (ex != NULL && ex->names->len == len && memcmp(ex->names->text, text, len) == 0)
    return tl__str_ref(ex->names);
  return tl__str_new(s, text, len);
}

/* "id\0host": one NUL, each part 1 to 255 bytes. */
static bool valid_names(const char *p, size_t len) {
  const char *nul = memchr(p, '\0', len);
  if (nul == NULL)
    return false;
  size_t id = (size_t)(nul - p), host = len - id - 1;
  return id >= 1 && id < TL_ID_MAX && host >= 1 && host < TL_HOST_MAX &&
         memchr(nul + 1, '\0', host) == NULL;
}

/* A stack (pending or speculative) as saved, top first: each index once, with flag. */
static void read_stack(tl__rbuf *r, tl__taskset *ts, uint32_t *top, uint32_t *count, uint8_t flag) {
  uint32_t n = tl__get_count(r, 4);
  uint32_t prev = TL__NONE;
  *top = TL__NONE;
  *count = 0;
  for (uint32_t k = 0; k < n && !r->bad; k++) {
    uint32_t i = tl__get_below(r, ts->ntasks);
    if (r->bad || !(ts->idx[i].flags & flag) || ts->idx[i].prev != UINT32_MAX - 1) {
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
      return;
    }
    ts->idx[i].prev = prev;
    ts->idx[i].next = TL__NONE;
    if (prev == TL__NONE)
      *top = i;
    else
      ts->idx[prev].next = i;
    prev = i;
    (*count)++;
  }
}

static int restore_taskset(struct tl_scheduler *s, tl__rbuf *r, uint32_t version) {
  tl_taskset_id id = tl__get_u64(r);
  uint32_t stage_id = tl__get_u32(r), stage_attempt = tl__get_u32(r);
  uint32_t priority = tl__get_u32(r), ntasks = tl__get_u32(r), cpus = tl__get_u32(r);
  char pool_name[TL_ID_MAX];
  size_t pool_len;
  tl__get_cstr(r, 1, pool_name, sizeof pool_name, &pool_len);
  uint8_t flags = tl__get_u8(r);
  uint32_t nresults = tl__get_u32(r);
  uint64_t result_bytes = tl__get_u64(r);
  tl__pool *pool = r->bad ? NULL : tl__pool_find(s, pool_name);
  bool barrier = (flags & TS_BARRIER) != 0, speculation = (flags & TS_SPECULATION) != 0;
  if (r->bad || pool == NULL || pool->nchildren > 0 || id == 0 || id >= s->next_taskset_id ||
      tl__taskset_find(s, id) != NULL || ntasks == 0 || ntasks > UINT32_MAX - 2 || cpus == 0 ||
      flags >= 32 || speculation != (s->cfg.speculation && !barrier) ||
      ntasks > (r->len - r->at) / 7)
    return TL_ESNAPSHOT;
  tl__stage *st = tl__stage_find(s, stage_id);
  if (st != NULL) {
    for (tl__link *l = st->attempts.next; l != &st->attempts; l = l->next)
      if (tl__container_of(l, tl__taskset, on_stage)->stage_attempt == stage_attempt)
        return TL_ESNAPSHOT;
    if (!(flags & TS_ZOMBIE) && st->active != NULL)
      return TL_ESNAPSHOT;
  }

  size_t size = tl__taskset_size(ntasks, speculation);
  tl__taskset *ts = tl__malloc(s, size);
  if (ts == NULL)
    return TL_ENOMEM;
  memset(ts, 0, sizeof *ts);
  if (speculation) {
    ts->heap = (uint64_t *)(void *)&ts->idx[ntasks];
    ts->heap_cap = ntasks;
    ts->tried = (tl__tried **)(void *)(ts->heap + ntasks);
    ts->first = (tl__attempt **)(void *)(ts->tried + ntasks);
    memset(ts->tried, 0, (size_t)ntasks * (sizeof *ts->tried + sizeof *ts->first));
  }
  tl__stage *new_stage = NULL;
  if (st == NULL && (new_stage = tl__calloc(s, 1, sizeof *new_stage)) == NULL) {
    tl__free(s, ts, size);
    return TL_ENOMEM;
  }
  ts->id = id;
  HASH_ADD(hh_by_id, s->tasksets_by_id, id, sizeof ts->id, ts);
  if (!TL__HASH_ADDED(ts, hh_by_id)) {
    tl__free(s, new_stage, sizeof *new_stage);
    tl__free(s, ts, size);
    return TL_ENOMEM;
  }
  if (new_stage != NULL) {
    new_stage->stage_id = stage_id;
    HASH_ADD(hh_by_id, s->stages_by_id, stage_id, sizeof new_stage->stage_id, new_stage);
    if (!TL__HASH_ADDED(new_stage, hh_by_id)) {
      HASH_DELETE(hh_by_id, s->tasksets_by_id, ts);
      tl__free(s, new_stage, sizeof *new_stage);
      tl__free(s, ts, size);
      return TL_ENOMEM;
    }
    tl__list_init(&new_stage->attempts);
    st = new_stage;
  }
  /* From here on ts is a record tl__taskset_destroy frees. */
  ts->stage = st;
  tl__list_insert_tail(&st->attempts, &ts->on_stage);
  st->nattempts++;
  ts->pool = pool;
  pool->ntasksets++;
  tl__list_init(&ts->running);
  tl__list_init(&ts->outputs);
  ts->stage_id = stage_id;
  ts->stage_attempt = stage_attempt;
  ts->priority = priority;
  ts->ntasks = ntasks;
  ts->cpus = cpus;
  ts->shuffle_map = (flags & TS_SHUFFLE) != 0;
  ts->barrier = barrier;
  ts->zombie = (flags & TS_ZOMBIE) != 0;
  ts->failed = (flags & TS_FAILED) != 0;
  ts->nresults = nresults;
  ts->result_bytes = result_bytes;
  ts->max_failures = (uint16_t)s->cfg.max_task_failures; /* an image before version 4 */
  ts->pending_top = ts->speculative_top = TL__NONE;
  if (ts->zombie) {
    s->nzombie++;
  } else {
    s->nactive++;
    st->active = ts;
  }
  if (ts->failed && !ts->zombie)
    return TL_ESNAPSHOT;

  for (uint32_t i = 0; i < ntasks; i++) {
    tl__index *ix = &ts->idx[i];
    ix->attempts = tl__get_u32(r);
    ix->failures = tl__get_u16(r);
    ix->flags = tl__get_u8(r);
    ix->copies_running = 0;
    ix->prev = UINT32_MAX - 1; /* not yet on a stack */
    ix->next = TL__NONE;
    if (ix->flags >= 8 || (ts->zombie && (ix->flags & (TL__IDX_PENDING | TL__IDX_SPECULATABLE))))
      tl__rbuf_fail(r, TL__RFAULT_RANGE);
    ts->nsucceeded += (ix->flags & TL__IDX_SUCCESSFUL) != 0;
  }
  read_stack(r, ts, &ts->pending_top, &ts->npending, TL__IDX_PENDING);
  read_stack(r, ts, &ts->speculative_top, &ts->nspeculatable, TL__IDX_SPECULATABLE);
  for (uint32_t i = 0; i < ntasks && !r->bad; i++) {
    tl__index *ix = &ts->idx[i];
    if (ix->prev == UINT32_MAX - 1) {
      if (ix->flags & (TL__IDX_PENDING | TL__IDX_SPECULATABLE))
        tl__rbuf_fail(r, TL__RFAULT_RANGE); /* flagged but not on its stack */
      ix->prev = TL__NONE;
    }
  }
  if (r->bad)
    return TL_ESNAPSHOT;
  if (!ts->zombie) {
    s->npending_tasks += ts->npending;
    s->nspeculatable += ts->nspeculatable;
  }

  if (speculation) {
    uint32_t cap = tl__get_u32(r), nlow = tl__get_u32(r), nhigh = tl__get_u32(r);
    /* A heap grows only by doubling when full and never shrinks: one larger than the task set's
     * own holds more than half its slots, which bounds its size by the bytes that follow. */
    if (r->bad || cap < ntasks || nlow > cap || nhigh > cap - nlow ||
        (uint64_t)(nlow + nhigh) * 8 > r->len - r->at ||
        (cap > ntasks && (uint64_t)(nlow + nhigh) * 2 <= cap))
      return TL_ESNAPSHOT;
    if (cap > ntasks) {
      uint64_t *heap = tl__malloc(s, (size_t)cap * sizeof *heap);
      if (heap == NULL)
        return TL_ENOMEM;
      ts->heap = heap;
      ts->heap_cap = cap;
    }
    ts->nheap_low = nlow;
    ts->nheap_high = nhigh;
    for (uint32_t k = 0; k < nlow; k++)
      ts->heap[k] = tl__get_u64(r);
    for (uint32_t k = 0; k < nhigh; k++)
      ts->heap[cap - 1 - k] = tl__get_u64(r);
    for (uint32_t i = 0; i < ntasks; i++) {
      uint32_t n = tl__get_count(r, 7);
      if (r->bad || n > ts->idx[i].attempts)
        return TL_ESNAPSHOT;
      tl__tried **tail = &ts->tried[i];
      for (uint32_t k = 0; k < n; k++) {
        size_t len;
        const char *text = tl__get_str(r, 3, TL_ID_MAX + TL_HOST_MAX, &len);
        if (text == NULL || !valid_names(text, len))
          return TL_ESNAPSHOT;
        tl__tried *t = tl__malloc(s, sizeof *t);
        if (t == NULL)
          return TL_ENOMEM;
        if ((t->names = names_find_or_new(s, text, len)) == NULL) {
          tl__free(s, t, sizeof *t);
          return TL_ENOMEM;
        }
        t->next = NULL;
        *tail = t;
        tail = &t->next;
      }
    }
  }
  int err = tl__locality_restore(s, ts, r);
  if (err != TL_OK || version < 3)
    return err;
  ts->profile = tl__get_u32(r);
  err = restore_requests(s, r, ts);
  if (err != TL_OK || version < 4)
    return err;
  ts->max_failures = tl__get_u16(r);
  if (r->bad || ts->max_failures == 0)
    return TL_ESNAPSHOT;
  err = tl__tags_restore(s, r, &ts->tags);
  if (err != TL_OK)
    return err;
  /* placement (version 4): spread, allowed executors, allowed hosts (placement.c) */
  return tl__placement_restore(s, r, ts);
}

static int restore_tasksets(struct tl_scheduler *s, tl__rbuf *r, uint32_t version) {
  uint32_t n = tl__get_count(r, 44);
  for (uint32_t i = 0; i < n && !r->bad; i++) {
    int err = restore_taskset(s, r, version);
    if (err != TL_OK)
      return err;
  }
  return r->bad ? TL_ESNAPSHOT : TL_OK;
}

static int attempt_cmp(const void *x, const void *y) {
  const tl__attempt *a = *(tl__attempt *const *)x, *b = *(tl__attempt *const *)y;
  return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int restore_attempts(restore_state *rs, tl__rbuf *r) {
  struct tl_scheduler *s = rs->s;
  uint32_t n = tl__get_count(r, 38);
  if (r->bad)
    return TL_ESNAPSHOT;
  if (n == 0)
    return TL_OK;
  if ((rs->attempts = tl__raw_calloc(n, sizeof *rs->attempts)) == NULL)
    return TL_ENOMEM;
  size_t running = 0;
  for (uint32_t i = 0; i < n; i++) {
    tl_tid tid = tl__get_u64(r);
    tl__taskset *ts = tl__taskset_find(s, tl__get_u64(r));
    uint32_t ordinal = tl__get_below(r, rs->nexs);
    uint32_t index = tl__get_u32(r), attempt = tl__get_u32(r);
    uint64_t launch_time = tl__get_time(r);
    uint8_t flags = tl__get_u8(r), locality = tl__get_enum(r, TL_ANY + 1);
    tl__grants read;
    memset(&read, 0, sizeof read);
    if (rs->version >= 3) {
      read.n = tl__get_u8(r);
      if (read.n > TL_TASK_GRANTS_MAX)
        tl__rbuf_fail(r, TL__RFAULT_RANGE);
      for (uint32_t k = 0; k < read.n && !r->bad; k++) {
        read.g[k].resource = tl__get_u16(r);
        read.g[k].address = tl__get_u16(r);
        read.g[k].share = tl__get_u32(r);
        if (read.g[k].share == 0 || read.g[k].share > TL_SHARE_MAX)
          tl__rbuf_fail(r, TL__RFAULT_RANGE);
      }
    }
    tl__executor *ex = r->bad ? NULL : rs->exs[ordinal];
    /* A task set runs only on executors of its profile, and each of its attempts holds one
     * grant per address its requests add up to. */
    if (r->bad || ts == NULL || ex == NULL || tid == 0 || tid >= s->next_tid ||
        launch_time > r->now || index >= ts->ntasks || attempt >= ts->idx[index].attempts ||
        flags >= 32 || ts->idx[index].copies_running == UINT8_MAX || ts->profile != ex->profile ||
        read.n != (ts->req != NULL ? ts->req->ngrants : 0))
      return TL_ESNAPSHOT;
    bool frozen = (flags & AT_FROZEN) != 0;
    bool live = ex->state == TL_EXECUTOR_ALIVE || ex->state == TL_EXECUTOR_DECOMMISSIONING;
    bool still = ex->state == TL_EXECUTOR_PENDING_LOSS || ex->state == TL_EXECUTOR_RECOVERING;
    if (frozen ? !still : !live)
      return TL_ESNAPSHOT;
    bool end_held = (flags & AT_END_HELD) != 0;
    if (!frozen && !end_held && ex->free_cores < ts->cpus)
      return TL_ESNAPSHOT;
    tl__attempt *a = tl__malloc(s, sizeof *a);
    if (a == NULL)
      return TL_ENOMEM;
    memset(a, 0, sizeof *a);
    a->tid = tid;
    a->executor = ex;
    a->taskset = ts;
    a->launch_time = launch_time;
    a->index = index;
    a->attempt = attempt;
    a->state = (flags & AT_RUNNING) ? TL__RUNNING : TL__LAUNCHING;
    a->frozen = frozen;
    a->locality = locality;
    a->speculative = (flags & AT_SPECULATIVE) != 0;
    a->killed_by_other = (flags & AT_KILLED_BY_OTHER) != 0;
    a->end_held = end_held;
    /* On its task set's list at once, so that destroying the task set frees it. */
    tl__list_insert_tail(&ts->running, &a->on_taskset);
    tl__list_init(&a->on_executor);
    ts->nrunning++;
    ts->pool->running++;
    ts->idx[index].copies_running++;
    rs->attempts[rs->nattempts++] = a;
    /* Its grants booked on its executor (frozen attempts keep theirs): each in range, of its
     * request's share, within what the attempts before it left free. */
    if (read.n != 0) {
      tl__grants *g = tl__grants_alloc(s);
      if (g == NULL)
        return TL_ENOMEM;
      g->n = read.n;
      memcpy(g->g, read.g, read.n * sizeof *g->g);
      if (!tl__res_book(s, ex, ts->req, g)) {
        tl__grants_unref(s, g);
        return TL_ESNAPSHOT;
      }
      a->grants = g;
    }
    if (!frozen) {
      if (!end_held)
        ex->free_cores -= ts->cpus;
      running++;
    }
  }
  tl_tid lo = UINT64_MAX, hi = 0; /* the tids that will be linked */
  for (uint32_t i = 0; i < n; i++) {
    if (!rs->attempts[i]->frozen) {
      lo = rs->attempts[i]->tid < lo ? rs->attempts[i]->tid : lo;
      hi = rs->attempts[i]->tid > hi ? rs->attempts[i]->tid : hi;
    }
  }
  if (tl__attempts_reserve(s, running, lo, hi) != TL_OK)
    return TL_ENOMEM;
  /* Launch order is tid order: in it, onto every list. */
  qsort(rs->attempts, n, sizeof *rs->attempts, attempt_cmp);
  for (uint32_t i = 0; i < n; i++) {
    tl__attempt *a = rs->attempts[i];
    if (i > 0 && rs->attempts[i - 1]->tid == a->tid)
      return TL_ESNAPSHOT;
    tl__taskset *ts = a->taskset;
    tl__list_remove(&a->on_taskset);
    tl__list_insert_tail(&ts->running, &a->on_taskset);
    if (a->frozen) {
      a->frozen = 0;
      tl__attempt_freeze(s, a);
    } else {
      if (!a->end_held)
        a->executor->free_cores += ts->cpus; /* tl__attempt_link takes them */
      tl__attempt_link(s, a);
    }
    rs->nlinked++;
    if (ts->first != NULL) { /* the oldest running copy first; a second one is its sibling */
      tl__attempt *first = ts->first[a->index];
      if (first == NULL) {
        ts->first[a->index] = a;
      } else if (first->sibling == NULL) {
        first->sibling = a;
        a->sibling = first;
      } else {
        return TL_ESNAPSHOT; /* at most two copies run */
      }
    }
  }
  tl__attempts_unreserve(s); /* room in the tid index's far table that no collision took */
  return TL_OK;
}

static int restore_outputs(restore_state *rs, tl__rbuf *r) {
  struct tl_scheduler *s = rs->s;
  uint32_t n = tl__get_count(r, 30);
  for (uint32_t i = 0; i < n && !r->bad; i++) {
    uint32_t ordinal = tl__get_below(r, rs->nexs);
    tl__taskset *ts = tl__taskset_find(s, tl__get_u64(r));
    tl_tid tid = tl__get_u64(r);
    uint32_t index = tl__get_u32(r), attempt = tl__get_u32(r);
    uint8_t locality = tl__get_enum(r, TL_ANY + 1);
    bool speculative = tl__get_bool(r);
    tl__executor *ex = r->bad ? NULL : rs->exs[ordinal];
    if (r->bad || ex == NULL || ts == NULL || ex->state == TL_EXECUTOR_REMOVED ||
        !ts->shuffle_map || ts->zombie || index >= ts->ntasks ||
        !(ts->idx[index].flags & TL__IDX_SUCCESSFUL) || tid == 0 || tid >= s->next_tid)
      return TL_ESNAPSHOT;
    tl__output *o = tl__malloc(s, sizeof *o);
    if (o == NULL)
      return TL_ENOMEM;
    o->taskset = ts;
    o->executor = ex;
    o->tid = tid;
    o->index = index;
    o->attempt = attempt;
    o->locality = locality;
    o->speculative = speculative;
    tl__list_insert_tail(&ex->outputs, &o->on_executor);
    tl__list_insert_tail(&ts->outputs, &o->on_taskset);
    ex->noutputs++;
  }
  return r->bad ? TL_ESNAPSHOT : TL_OK;
}

/* The records of a body whose checksums held. */
static int restore_body(restore_state *rs, tl__rbuf *body) {
  struct tl_scheduler *s = rs->s;
  tl__rbuf r = section(body, SEC_CLOCK);
  body->saved_now = r.saved_now = tl__get_u64(&r);
  int err = section_end(&r, TL_OK);
  if (err != TL_OK)
    return err;
  r = section(body, SEC_COUNTERS);
  if ((err = section_end(&r, restore_counters(s, &r, rs->version))) != TL_OK)
    return err;
  r = section(body, SEC_POOLS);
  if ((err = section_end(&r, restore_pools(s, &r, rs->version))) != TL_OK)
    return err;
  r = section(body, SEC_EXECUTORS);
  if ((err = section_end(&r, restore_executors(rs, &r))) != TL_OK)
    return err;
  r = section(body, SEC_TIMELINES);
  if ((err = section_end(&r, restore_timelines(rs, &r))) != TL_OK)
    return err;
  r = section(body, SEC_TASKSETS);
  if ((err = section_end(&r, restore_tasksets(s, &r, rs->version))) != TL_OK)
    return err;
  r = section(body, SEC_ATTEMPTS);
  if ((err = section_end(&r, restore_attempts(rs, &r))) != TL_OK)
    return err;
  r = section(body, SEC_OUTPUTS);
  if ((err = section_end(&r, restore_outputs(rs, &r))) != TL_OK)
    return err;
  /* The queues, now that every task set counts its running attempts. */
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next)
    if (!ts->zombie && ts->npending + ts->nspeculatable > 0)
      tl__queue_insert(ts);
  r = section(body, SEC_LOCALITY);
  if ((err = section_end(&r, tl__locality_restore_global(s, &r))) != TL_OK)
    return err;
  r = section(body, SEC_EXCLUDE);
  if ((err = section_end(&r, tl__exclude_restore(s, &r))) != TL_OK)
    return err;
  /* Offer shuffle (version 4, optional): the image's position of the sequence, taken when the
   * restoring config has the shuffle on (else its own seed starts it, as without the section). */
  if (rs->version >= 4 && !tl__rbuf_done(body)) {
    r = section(body, SEC_SHUFFLE);
    uint64_t state = tl__get_u64(&r);
    if ((err = section_end(&r, TL_OK)) != TL_OK)
      return err;
    if (s->cfg.offer_shuffle)
      s->offer_shuffle_state = state;
  }
  if (!tl__rbuf_done(body))
    return TL_ESNAPSHOT;
  /* A config that keeps fewer tombstones forgets the oldest (last: the ordinals are used up). */
  while (s->ntombstones > s->cfg.max_tombstones)
    tl__tombstone_evict(s, tl__container_of(s->tombstone_order.next, tl__executor, on_timeline));
  return TL_OK;
}

/* Fills buf with n bytes from read: TL_OK, TL_EIO, or TL_ESNAPSHOT when the input ends first. */
static int read_full(int (*read)(void *ud, void *buf, size_t n), void *ud, uint8_t *buf, size_t n) {
  while (n > 0) {
    int got = read(ud, buf, n);
    if (got < 0)
      return TL_EIO;
    if (got == 0)
      return TL_ESNAPSHOT;
    if ((size_t)got > n)
      return TL_EIO; /* a reader that claims more than it was asked for */
    buf += got;
    n -= (size_t)got;
  }
  return TL_OK;
}

/* The header and the body, checked: TL_OK with *body (the caller frees it) and its length. */
static int read_image(const tl_config *cfg, int (*read)(void *ud, void *buf, size_t n), void *ud,
                      uint8_t **body, size_t *len, uint32_t *version) {
  uint8_t h[SNAP_HEADER];
  int err = read_full(read, ud, h, sizeof h);
  if (err != TL_OK)
    return err;
  if (memcmp(h, SNAP_MAGIC, 8) != 0 || tl__le_get(h + 36, 4) != tl__crc32c(0, h, 36))
    return TL_ESNAPSHOT;
  *version = (uint32_t)tl__le_get(h + 8, 4);
  if (*version < 1 || *version > SNAP_VERSION)
    return TL_EVERSION;
  if (tl__le_get(h + 12, 4) != 0)
    return TL_ESNAPSHOT;
  if (tl__le_get(h + 16, 8) != fingerprint(cfg))
    return TL_ECONFIG;
  uint64_t n = tl__le_get(h + 24, 8);
  if (n > SIZE_MAX / 2)
    return TL_ESNAPSHOT;
  /* Grown as bytes arrive: a length the input does not back allocates at most twice what came. */
  uint8_t *buf = NULL;
  size_t cap = 0, have = 0;
  while (have < n) {
    if (have == cap) {
      size_t want = cap == 0 ? SNAP_CHUNK : cap * 2;
      if (want > n)
        want = (size_t)n;
      uint8_t *p = tl__raw_realloc(buf, want);
      if (p == NULL) {
        tl__raw_free(buf);
        return TL_ENOMEM;
      }
      buf = p;
      cap = want;
    }
    size_t step = cap - have < SNAP_CHUNK ? cap - have : SNAP_CHUNK;
    if ((err = read_full(read, ud, buf + have, step)) != TL_OK) {
      tl__raw_free(buf);
      return err;
    }
    have += step;
  }
  if (tl__le_get(h + 32, 4) != tl__crc32c(0, buf, have)) {
    tl__raw_free(buf);
    return TL_ESNAPSHOT;
  }
  *body = buf;
  *len = have;
  return TL_OK;
}

static tl_taskset_info taskset_info(const tl__taskset *ts) {
  tl_taskset_info info = {ts->id, ts->stage_id, ts->stage_attempt, ts->ntasks};
  return info;
}

uint64_t tl_epoch(const tl_scheduler *s) { return s != NULL ? s->epoch : 0; }

int tl_scheduler_restore(const tl_config *cfg, const tl_callbacks *cb,
                         int (*read)(void *ud, void *buf, size_t n), void *ud, tl_scheduler **out) {
  tl_config defaults;
  if (out != NULL)
    *out = NULL;
  if (out == NULL || read == NULL)
    return TL_EINVAL;
  if (cfg == NULL) {
    tl_config_init(&defaults);
    cfg = &defaults;
  }
  if (!tl__config_valid(cfg))
    return TL_EINVAL;
  uint8_t *body = NULL;
  size_t len = 0;
  uint32_t version = 0;
  int err = read_image(cfg, read, ud, &body, &len, &version);
  if (err != TL_OK)
    return err;
  tl_scheduler *s;
  if ((err = tl__scheduler_create(cfg, cb, &s)) != TL_OK) {
    tl__raw_free(body);
    return err;
  }
  restore_state rs = {s, version, NULL, 0, NULL, 0, 0};
  tl__rbuf r = tl__rbuf_over(body, len);
  r.now = s->last_now;
  err = restore_body(&rs, &r);
  /* Attempts read but not linked (a failure between): freed by their task sets, which hold
   * them; their executors' lists are not walked when the scheduler is discarded. */
  tl__raw_free(rs.attempts);
  tl__raw_free(rs.exs);
  tl__raw_free(body);
  if (err == TL_OK && tl_check(s, NULL, 0) != TL_OK)
    err = TL_ESNAPSHOT;
  /* Tids the caller may have launched after the snapshot are never given again; those between
   * the image's next tid and the floor are the ones reconciliation may adopt. */
  s->restored_tid_lo = s->next_tid;
  if (err == TL_OK && cfg->restore_tid_floor > s->next_tid)
    s->next_tid = cfg->restore_tid_floor;
  s->restored_tid_hi = s->next_tid;
  /* The epoch moves on (fencing): the image's + 1 (it is below UINT64_MAX), or the floor. */
  s->epoch = s->epoch + 1 > cfg->restore_epoch_floor ? s->epoch + 1 : cfg->restore_epoch_floor;
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL; ts = ts->hh_by_id.next)
    ts->restored = true;
  /* Room for what follows, so nothing after it can fail: the aborts' events, and each running
   * executor's rack name (tl__executor_recover). */
  if (err == TL_OK)
    err = tl__events_reserve(s, TL__TASKSET_ABORT_EVENTS * HASH_CNT(hh_by_id, s->tasksets_by_id));
  for (tl__executor *ex = s->executors_by_id; ex != NULL && err == TL_OK; ex = ex->hh_by_id.next)
    if (ex->state == TL_EXECUTOR_ALIVE || ex->state == TL_EXECUTOR_DECOMMISSIONING)
      err = tl__executor_recover(s, ex);
  if (err != TL_OK) {
    tl__scheduler_discard(s);
    return err;
  }
  /* The recovery hold: restored task sets launch nothing until no executor recovers. */
  s->restore_hold = s->nrecovering > 0;

  /* Nothing fails from here: the resolvers, the unschedulable task sets' events (demand.c),
   * then the aborts of what has no payload. */
  tl__unsched_restored(s);
  for (tl__executor *ex = s->executors_by_id; ex != NULL; ex = ex->hh_by_id.next)
    if (ex->state != TL_EXECUTOR_REMOVED && s->cb.executor_restored != NULL)
      ex->ud = s->cb.executor_restored(s->cb.ud, tl__executor_id(ex), tl__names_host(ex->names));
  for (tl__taskset *ts = s->tasksets_by_id; ts != NULL;) {
    tl__taskset *next = ts->hh_by_id.next; /* an abort may release ts */
    void *payload = NULL;
    bool have = true;
    if (s->cb.taskset_restored != NULL) {
      tl_taskset_info info = taskset_info(ts);
      have = s->cb.taskset_restored(s->cb.ud, &info, &payload);
    }
    ts->payload = have ? payload : NULL;
    if (!have && !ts->zombie)
      tl__taskset_abort(s, ts, TL__FAIL_NO_PAYLOAD, 0, 0, NULL, NULL);
    ts = next;
  }
  tl__scheduler_start(s, true);
  *out = s;
  tl__lock(s);
  tl__unlock_and_dispatch(s);
  return TL_OK;
}
