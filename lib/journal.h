/* The call journal (journal.c, docs/journal.md): its line records and the formats of the
 * journaled calls, which write with the base layer's text writer (tl__text). For the entry layer
 * (scheduler.c, dispatch.c) and tl_check (inspect.c), which asks tl__journal_account for the lines'
 * memory.
 */
#ifndef TL_JOURNAL_H
#define TL_JOURNAL_H

#include "internal.h"

/* ---------------------------------------------------------------------------------------------
 * The call journal (journal.c). A call formats its line twice: once to measure it (a tl__text
 * whose buf is NULL), once into the line allocated for it before the call changes anything. The
 * line is queued under the lock at the end of the call, in lock order, and handed to cfg.journal by
 * the dispatcher after the lock is released.
 * ------------------------------------------------------------------------------------------- */

typedef struct tl__jline {
  struct tl__jline *next; /* the next line in s->journal or the batch being written */
  size_t cap;             /* bytes of text allocated, the NUL included */
  size_t len;             /* bytes written */
  char text[];
} tl__jline;

static inline size_t tl__jline_size(const tl__jline *j) { return sizeof(tl__jline) + j->cap; }

/* Allocates the line measured by w (with room for the time and the result) and points w at
 * it, with the call's time written: NULL on TL_ENOMEM. */
tl__jline *tl__journal_open(struct tl_scheduler *s, tl__text *w);
/* Writes the result of the call (" = OK" and the extra text, which may be NULL) and queues the
 * line. A NULL j (journal off) does nothing. */
void tl__journal_close(struct tl_scheduler *s, tl__jline *j, tl__text *w, int err,
                       const char *extra);
/* Frees a list of lines. */
void tl__journal_free_list(struct tl_scheduler *s, tl__jline *j);
/* The header and config lines tl_scheduler_new writes (directly: nothing is shared yet). */
void tl__journal_start(struct tl_scheduler *s);
/* tl_check's part: the memory of the lines queued and of those being written. */
void tl__journal_account(tl__checker *c);

/* Formats of the journaled calls (docs/journal.md). */
void tl__jfmt_add(tl__text *w, const tl_executor_desc *d);
void tl__jfmt_lost(tl__text *w, const char *id, const tl_loss_reason *r);
void tl__jfmt_id(tl__text *w, const char *op, const char *id);
void tl__jfmt_decommission(tl__text *w, const char *id, const char *message);
void tl__jfmt_submit(tl__text *w, const tl_taskset_desc *d);
void tl__jfmt_pool_add(tl__text *w, const char *name, tl_sched_mode mode, uint32_t weight,
                       uint32_t min_share);
void tl__jfmt_pool_set(tl__text *w, const char *name, tl_sched_mode mode, uint32_t weight,
                       uint32_t min_share);
void tl__jfmt_pool_add_child(tl__text *w, const char *parent, const char *name, tl_sched_mode mode,
                             uint32_t weight, uint32_t min_share);
void tl__jfmt_kill_task(tl__text *w, tl_tid tid, bool interrupt, const char *reason);
void tl__jfmt_kill_stage(tl__text *w, uint32_t stage_id, bool interrupt, const char *reason);
void tl__jfmt_cancel_stage(tl__text *w, uint32_t stage_id, const char *reason);
/* cancel_tag or kill_tag (version 3). */
void tl__jfmt_tag(tl__text *w, bool cancel, const char *tag, bool interrupt, const char *reason);
void tl__jfmt_partition_completed(tl__text *w, uint32_t stage_id, uint32_t index);
void tl__jfmt_offers(tl__text *w, const tl_offer *offers, size_t noffers, size_t cap);
void tl__jfmt_offers_grants(tl__text *w, const tl_offer *offers, size_t noffers, size_t cap,
                            size_t gcap);
/* An offer round's extra result, into buf (TL__JOURNAL_OFFERS_EXTRA bytes suffice):
 * " launched=N tid=FIRST", then " grants=G" (the launches' grants summed) when G is not 0 or
 * grants_always (tl_resource_offers_grants). Formatted only when the journal is on. */
#define TL__JOURNAL_OFFERS_EXTRA 96
void tl__journal_offers_extra(char *buf, size_t cap, const tl_launch *out, size_t nout,
                              tl_tid first, bool grants_always);
void tl__jfmt_reconcile(tl__text *w, const char *id, const tl_tid *running, size_t n, size_t ucap);
void tl__jfmt_reconcile_items(tl__text *w, const char *id, const tl_reconcile_item *items, size_t n,
                              size_t ucap);
/* A restored scheduler's `restore` line, after tl__journal_start's (directly: not shared yet). */
void tl__journal_restored(struct tl_scheduler *s);
void tl__jfmt_update(tl__text *w, const char *id, tl_tid tid, const tl_update *u);

#endif /* TL_JOURNAL_H */
