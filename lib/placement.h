/* Hard placement's interface (placement.c; docs/api.md "Hard placement"), for the files that
 * call it: the ledger's link and unlink, offer rounds, task sets, membership, the tick,
 * snapshots and inspection. Its records are private to placement.c. */
#ifndef TL_PLACEMENT_H
#define TL_PLACEMENT_H

#include "internal.h"

/* ---------------------------------------------------------------------------------------------
 * Hard placement (placement.c; docs/api.md "Hard placement"): the
 * executors and hosts a task set may run on, its spread, the count of its running attempts per
 * host or executor, and the task sets no live executor satisfies (the caller aborts them).
 * Nothing here runs for a task set without a placement (ts->placement NULL), and nothing at all
 * while no task set has one (s->nplace_tasksets 0).
 * ------------------------------------------------------------------------------------------- */

/* TL_OK when d's placement fields are valid (and not on a barrier task set), else TL_EINVAL. */
int tl__placement_valid(const tl_taskset_desc *d);
/* A copy of a valid placement for a task set of ntasks tasks into *out (NULL when d has none);
 * TL_ENOMEM. Nothing is visible until tl__placement_attach. */
int tl__placement_new(struct tl_scheduler *s, const char *const *execs, uint32_t nexec,
                      const char *const *hosts, uint32_t nhost, tl_spread spread, uint32_t ntasks,
                      struct tl__placement **out);
/* Frees a block that was never attached (NULL: nothing). */
void tl__placement_discard(struct tl_scheduler *s, struct tl__placement *p);
/* Links a new block to its task set (p NULL: nothing). */
void tl__placement_attach(struct tl_scheduler *s, struct tl__placement *p, tl__taskset *ts);
/* Frees a task set's placement as it is released (its timer, if on, ends: "leave"). */
void tl__placement_free(struct tl_scheduler *s, tl__taskset *ts);
/* The same at the scheduler's end (tl__taskset_destroy): no transition, counts as they are. */
void tl__placement_destroy(struct tl_scheduler *s, tl__taskset *ts);
/* Whether ts (with a placement) may not launch on the ALIVE executor ex now: ex is not allowed,
 * or the spread's host or executor of ex runs an attempt of ts already. */
bool tl__placement_blocked(const tl__taskset *ts, const tl__executor *ex);
/* An attempt of a task set with a placement entered attempts_by_tid (tl__attempt_link) or left
 * it (tl__cleanup_task_state): the spread's count of its host or executor. */
void tl__placement_link(struct tl_scheduler *s, const tl__attempt *a);
void tl__placement_unlink(struct tl_scheduler *s, const tl__attempt *a);
/* The end of an offer round: each task set with a placement, work to launch and nothing
 * launched in the round, that no ALIVE executor satisfies while some executor is alive, goes
 * on a timer; every other one comes off. */
void tl__placement_after_round(struct tl_scheduler *s);
/* An executor became ALIVE: the timers of the task sets it satisfies stop. */
void tl__placement_executor_added(struct tl_scheduler *s, const tl__executor *ex);
/* tl_tick's aborts: the first task set whose deadline came at now and that still no live
 * executor satisfies (the timers of the others stop on the way), or NULL. */
tl__taskset *tl__placement_due(struct tl_scheduler *s, uint64_t now);
/* Makes the abort message of such a task set (TL_ENOMEM: nothing changed), then stops its
 * timer and counts the abort; the caller aborts it with TL__FAIL_PLACEMENT and drops *msg. */
int tl__placement_aborting(struct tl_scheduler *s, tl__taskset *ts, tl__str **msg);
/* ns until the next deadline (TL_TICK_NEVER: none). */
uint64_t tl__placement_next(const struct tl_scheduler *s, uint64_t now);
/* Inspection: the records' invariants (counts against the running attempts, lists, memory),
 * the strings they hold, a task set's status fields, its names and its text. */
int tl__placement_check(tl__checker *c);
void tl__placement_each_str(tl__checker *c, tl__str_fn *fn);
void tl__placement_status(const tl__taskset *ts, tl_taskset_status *out);
size_t tl__placement_names(const tl__taskset *ts, tl_place_info *out, size_t cap);
void tl__placement_explain(struct tl_scheduler *s, const tl__taskset *ts, tl__text *t);
/* In a snapshot, after a task set's tags (version 4): u8 spread, u32 count and the executor
 * ids, u32 count and the host names. Restore validates as tl_submit does (TL_ESNAPSHOT), may
 * fail with TL_ENOMEM, and attaches the block to ts (before its attempts are linked: their
 * links count them). No timer is saved: the first round after a restore starts it again. */
void tl__placement_save(tl__wbuf *w, const tl__taskset *ts);
int tl__placement_restore(struct tl_scheduler *s, tl__rbuf *r, tl__taskset *ts);

#endif /* TL_PLACEMENT_H */
