/* The null floor (--bench --null-ledger, docs/cluster.md "The programs", docs/performance.md
 * "The wire's own floor"): the least that could run --bench's one job, in place of the ledger on
 * the bench's hot path. The same driver, executors, frames and loop run; what offers.c asks of
 * tl_executor_get and tl_resource_offers and what conns.c asks of tl_status_updates is answered
 * here instead, from a FIFO of pending task indexes and a map of running tids (each connection's
 * free slots: its cores and --queue, less what it runs). It measures what the wire costs without
 * the ledger, so that `--bench` can be compared with it; it runs nothing else: no retries beyond
 * putting a failed attempt's index back in the FIFO, no losses (a lost executor gives the run up),
 * no record, no callbacks but the release of the task set at the end (jobs.c's, as the ledger
 * would call it). The ledger still registers the executors and takes their heartbeats. */

#include "driver.h"

#define NULLFLOOR_TASKSET 1  /* the task set id of the bench's one stage */
#define NULLFLOOR_MAP_MIN 64 /* slots of the running map at first; it doubles at half full */

void nullfloor_configure(driver *d, const driver_opts *o) { d->nullfloor.on = o->null_ledger; }

/* The map's slot for tid: its own, or the empty one where it would go (linear probing). */
static size_t slot_of(const nullfloor_state *nf, tl_tid tid) {
  size_t mask = nf->map_cap - 1;
  size_t i = (size_t)(tid * UINT64_C(0x9E3779B97F4A7C15) >> 32) & mask;
  while (nf->map[i].tid != 0 && nf->map[i].tid != tid)
    i = (i + 1) & mask;
  return i;
}

static void map_grow(nullfloor_state *nf) {
  nullfloor_run *old = nf->map;
  size_t old_cap = nf->map_cap;
  nf->map_cap = old_cap ? 2 * old_cap : NULLFLOOR_MAP_MIN;
  nf->map = calloc(nf->map_cap, sizeof *nf->map);
  if (!nf->map)
    die_oom();
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].tid != 0)
      nf->map[slot_of(nf, old[i].tid)] = old[i];
  free(old);
}

/* Removes the entry at slot i, moving back the entries of its probe run (no tombstones). */
static void map_remove(nullfloor_state *nf, size_t i) {
  size_t mask = nf->map_cap - 1;
  nf->map[i].tid = 0;
  for (size_t j = (i + 1) & mask; nf->map[j].tid != 0; j = (j + 1) & mask) {
    nullfloor_run e = nf->map[j];
    nf->map[j].tid = 0;
    nf->map[slot_of(nf, e.tid)] = e;
  }
  nf->nrunning--;
}

/* In place of submit_stage for --bench's one stage: every index pending, in order. */
void nullfloor_submit(driver *d) {
  nullfloor_state *nf = &d->nullfloor;
  job *j = &d->jobs.list[0];
  stage *st = &j->stages[0];
  nf->bin = malloc(sizeof *nf->bin);
  nf->fifo = malloc(st->ntasks * sizeof *nf->fifo);
  if (!nf->bin || !nf->fifo)
    die_oom();
  nf->bin->stage = st;
  nf->bin->len = strlen(st->kind);
  nf->st = st;
  for (uint32_t i = 0; i < st->ntasks; i++)
    nf->fifo[i] = i;
  nf->head = 0;
  nf->npending = st->ntasks;
  st->taskset = NULLFLOOR_TASKSET;
  j->current = 0;
  map_grow(nf);
}

/* In place of tl_executor_get and tl_resource_offers: up to c's free slots of the FIFO's first
 * indexes, each a new tid, into out (cap entries). Returns how many. */
size_t nullfloor_offer(driver *d, conn *c, tl_launch *out, size_t cap) {
  nullfloor_state *nf = &d->nullfloor;
  uint32_t slots = c->cores + d->run.queue;
  size_t n = slots > c->floor_running ? slots - c->floor_running : 0;
  n = n < cap ? n : cap;
  n = n < nf->npending ? n : nf->npending;
  for (size_t k = 0; k < n; k++) {
    if (2 * (nf->nrunning + 1) > nf->map_cap)
      map_grow(nf);
    uint32_t index = nf->fifo[nf->head];
    nf->head = nf->head + 1 == nf->st->ntasks ? 0 : nf->head + 1;
    tl_tid tid = ++nf->next_tid;
    nf->map[slot_of(nf, tid)] = (nullfloor_run){.tid = tid, .index = index, .c = c};
    nf->nrunning++;
    out[k] = (tl_launch){.tid = tid,
                         .taskset = NULLFLOOR_TASKSET,
                         .index = index,
                         .cpus = 1,
                         .executor_id = c->id,
                         .payload = nf->bin};
  }
  nf->npending -= (uint32_t)n;
  c->floor_running += (uint32_t)n;
  return n;
}

/* In place of tl_status_updates: each update's code in results (TL_ESTALE for a tid not running,
 * TL_EOWNER for one another connection runs). An end frees its slot; a failed or killed attempt's
 * index goes back to the FIFO's tail. The last success releases the task set, as the ledger does
 * (cb_taskset_released: FORGET to the executors, the job done, the run's end). */
int nullfloor_updates(driver *d, conn *c, const tl_tid *tids, const tl_update *ups, size_t n,
                      int *results) {
  nullfloor_state *nf = &d->nullfloor;
  for (size_t k = 0; k < n; k++) {
    size_t i = nf->st ? slot_of(nf, tids[k]) : 0;
    if (!nf->st || nf->map[i].tid == 0) {
      results[k] = TL_ESTALE;
      continue;
    }
    if (nf->map[i].c != c) {
      results[k] = TL_EOWNER;
      continue;
    }
    results[k] = TL_OK;
    if (ups[k].state == TL_TASK_RUNNING)
      continue;
    uint32_t index = nf->map[i].index;
    map_remove(nf, i);
    c->floor_running--;
    if (ups[k].state == TL_TASK_FINISHED) {
      nf->st->succeeded++;
    } else {
      nf->st->failed_attempts++;
      uint32_t tail = (nf->head + nf->npending) % nf->st->ntasks;
      nf->fifo[tail] = index;
      nf->npending++;
    }
  }
  if (nf->st && nf->st->succeeded == nf->st->ntasks) {
    tl_taskset_info ts = {.id = NULLFLOOR_TASKSET, .ntasks = nf->st->ntasks};
    stage_binary *b = nf->bin;
    nf->st = NULL; /* released: nothing more is offered or applied */
    nf->bin = NULL;
    cb_taskset_released(d, &ts, b); /* frees b */
  }
  return TL_OK;
}

/* A connection closes: the attempts it ran are not run again (the null floor knows no loss), so
 * a run that still needs them gives up at once instead of waiting for --timeout-s. */
void nullfloor_closing(driver *d, conn *c) {
  if (c->floor_running > 0 && d->nullfloor.st)
    phase_give_up(d, "an executor of the null floor (--null-ledger) was lost");
}

/* Says in the summary that the ledger did not run the tasks. */
void nullfloor_print(const driver *d) {
  printf("null floor (--null-ledger): the ledger ran no task; %" PRIu64
         " launches from a FIFO and a map of running tids\n",
         d->nullfloor.next_tid);
}

void nullfloor_free(driver *d) {
  free(d->nullfloor.fifo);
  free(d->nullfloor.map);
  free(d->nullfloor.bin);
}
