/* The registry: the records of executors (tombstones included), hosts, racks, task sets and
 * stages, found by their keys, and the state changes of an executor record that every
 * transition shares (its state counts, leaving its host, becoming and ceasing to be a
 * tombstone). Transitions (membership.c) decide when; this file keeps the records and their
 * counts consistent.
 *
 * Everything here runs under the scheduler's lock.
 */
#include "internal.h"

/* The executor found last is tried first: a runtime's status update is usually followed by an
 * offer of the same executor (Spark's backend offers the executor that reported), and a
 * comparison is cheaper than hashing. */
tl__executor *tl__executor_find_len(struct tl_scheduler *s, const char *id, size_t len) {
  tl__executor *ex = s->last_executor;
  const char *key = ex != NULL ? ex->hh_by_id.key : NULL;
  /* The last byte first: ids of one cluster tend to differ at their end (exec-7, exec-8). */
  if (ex != NULL && ex->hh_by_id.keylen == len && len > 0 && key[len - 1] == id[len - 1] &&
      memcmp(key, id, len) == 0)
    return ex;
  HASH_FIND(hh_by_id, s->executors_by_id, id, len, ex);
  if (ex != NULL)
    s->last_executor = ex;
  return ex;
}

tl__executor *tl__executor_find(struct tl_scheduler *s, const char *id) {
  return tl__executor_find_len(s, id, strlen(id));
}

void tl__executor_free(struct tl_scheduler *s, tl__executor *ex) {
  if (s->last_executor == ex)
    s->last_executor = NULL;
  tl__str_unref(s, ex->names);
  tl__str_unref(s, ex->decommission_msg);
  tl__free(s, ex, sizeof *ex);
}

static size_t *state_count(struct tl_scheduler *s, uint8_t state) {
  switch (state) {
  case TL_EXECUTOR_ALIVE:
    return &s->nalive;
  case TL_EXECUTOR_DECOMMISSIONING:
    return &s->ndecommissioning;
  case TL_EXECUTOR_PENDING_LOSS:
    return &s->npending_loss;
  default:
    return &s->ntombstones;
  }
}

void tl__executor_set_state(struct tl_scheduler *s, tl__executor *ex, tl_executor_state state) {
  (*state_count(s, ex->state))--;
  ex->state = (uint8_t)state;
  (*state_count(s, ex->state))++;
}

size_t tl__host_size(size_t name_len) { return sizeof(tl__host) + name_len + 1; }
size_t tl__rack_size(size_t name_len) { return sizeof(tl__rack) + name_len + 1; }

void tl__executor_leave_host(struct tl_scheduler *s, tl__executor *ex) {
  tl__host *host = ex->host;
  tl__list_remove(&ex->on_host);
  ex->host = NULL;
  if (--host->nexecutors != 0)
    return;
  tl__rack *rack = host->rack;
  if (rack != NULL) {
    tl__list_remove(&host->on_rack);
    if (--rack->nhosts == 0) {
      HASH_DELETE(hh_by_name, s->racks_by_name, rack);
      tl__free(s, rack, tl__rack_size(rack->name_len));
      s->nracks--;
    }
  }
  HASH_DELETE(hh_by_name, s->hosts_by_name, host);
  tl__free(s, host, tl__host_size(host->name_len));
  s->nhosts--;
}

void tl__tombstone_evict(struct tl_scheduler *s, tl__executor *ex) {
  tl__list_remove(&ex->on_timeline);
  HASH_DELETE(hh_by_id, s->executors_by_id, ex);
  s->ntombstones--;
  tl__executor_free(s, ex);
}

void tl__executor_bury(struct tl_scheduler *s, tl__executor *ex) {
  tl__list_remove(&ex->on_timeline);
  tl__executor_set_state(s, ex, TL_EXECUTOR_REMOVED);
  tl__str_unref(s, ex->decommission_msg); /* a tombstone keeps its names and nothing else */
  ex->decommission_msg = NULL;
  ex->when = s->last_now;
  tl__list_insert_tail(&s->tombstone_order, &ex->on_timeline);
  while (s->ntombstones > s->cfg.max_tombstones)
    tl__tombstone_evict(s, tl__container_of(s->tombstone_order.next, tl__executor, on_timeline));
}

tl__taskset *tl__taskset_find(struct tl_scheduler *s, tl_taskset_id id) {
  tl__taskset *ts;
  HASH_FIND(hh_by_id, s->tasksets_by_id, &id, sizeof id, ts);
  return ts;
}

tl__stage *tl__stage_find(struct tl_scheduler *s, uint32_t stage_id) {
  tl__stage *st;
  HASH_FIND(hh_by_id, s->stages_by_id, &stage_id, sizeof stage_id, st);
  return st;
}
