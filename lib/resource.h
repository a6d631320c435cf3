/* Resources beyond cores (resource.c): the records behind docs/api.md "Resources", for
 * resource.c, the transitions that book and give back addresses, inspect.c and snapshot.c.
 *
 * A resource name is interned once per scheduler (tl__rkind), so records compare names by
 * pointer and the per-name totals are kept as use changes; a name is freed when no executor
 * and no task set names it any more. An executor's declaration is one block (tl__eresources):
 * per resource its addresses' strings and each address's use, in units of TL_SHARE_UNIT per
 * whole address. A task set's requests are one block (tl__treqs). An attempt that holds
 * addresses points at a grant block (tl__grants), reference counted: the attempt holds one
 * reference and each queued task event that names it one more, so a callback sees the grants of
 * an attempt that has already ended. Everything here runs under the scheduler's lock.
 */
#ifndef TL_RESOURCE_H
#define TL_RESOURCE_H

#include "internal.h"

/* An interned resource name, with its totals over the executors the ledger holds (tombstones
 * aside). */
typedef struct tl__rkind {
  tl__link on_scheduler; /* s->rkinds, in the order the names were first seen */
  uint32_t refs;         /* executors' resources and task sets' requests that name it */
  uint32_t addresses;    /* declared by executors the ledger holds */
  uint32_t free;         /* of which no attempt holds any share */
  uint64_t used;         /* units held, summed */
  uint32_t check_refs;   /* tl_check's scratch sums */
  uint32_t check_addresses;
  uint32_t check_free;
  uint64_t check_used;
  uint32_t name_len; /* bytes of name */
  char name[];       /* NUL-terminated */
} tl__rkind;

/* One resource one executor declares. */
typedef struct tl__eres {
  tl__rkind *kind;
  uint32_t naddr;      /* addresses declared */
  uint32_t nfree;      /* of which no attempt holds any share */
  uint64_t used;       /* units held, summed over its addresses */
  uint64_t *addr_used; /* per address: units held, at most TL_SHARE_UNIT */
  char **addr;         /* per address: its string, NUL-terminated */
} tl__eres;

/* An executor's declaration: one block (the records, the use counters, the strings). */
typedef struct tl__eresources {
  size_t bytes; /* of the block */
  uint32_t n;   /* resources */
  tl__eres r[];
} tl__eresources;

/* One request of a task set: share 1 takes amount whole addresses, share k 1/k of one. */
typedef struct tl__treq {
  tl__rkind *kind;
  uint32_t amount;
  uint32_t share;
} tl__treq;

/* A task set's requests: one block. */
typedef struct tl__treqs {
  tl__link on_scheduler;  /* s->res_tasksets: every task set with requests */
  struct tl__taskset *ts; /* whose */
  tl__link on_timer;      /* s->res_timers while no live executor could run a task of it */
  uint64_t deadline;      /* then: when it is aborted (unschedulable_timeout_ns after) */
  bool timer;             /* on s->res_timers */
  uint32_t n;             /* requests */
  uint32_t ngrants;       /* grants per task: the amounts summed */
  tl__treq r[];
} tl__treqs;

/* What one attempt holds. Spare blocks are linked through next. */
typedef struct tl__grants {
  struct tl__grants *next; /* spare list */
  uint32_t refs;           /* the attempt's, and one per queued event naming it */
  uint32_t n;              /* grants */
  uint32_t check_refs;     /* tl_check's scratch count of its holders */
  tl_grant g[TL_TASK_GRANTS_MAX];
} tl__grants;

/* Units one grant of share k holds. */
static inline uint64_t tl__share_units(uint32_t share) { return TL_SHARE_UNIT / share; }

/* Validation, before anything changes (the entry layer): TL_OK or TL_ERESOURCE. */
int tl__res_decl_valid(const tl_resource *r, uint32_t n);
int tl__res_req_valid(const tl_resource_request *r, uint32_t n);

/* An executor's declaration as a block, its names interned (NULL with n == 0). TL_ENOMEM
 * leaves nothing behind. The block counts in its kinds' totals once added. */
int tl__res_executor_new(struct tl_scheduler *s, const tl_resource *r, uint32_t n,
                         tl__eresources **out);
/* Frees an executor's block (NULL: nothing), taking it out of its kinds' totals. Its attempts
 * must have given their grants back, or be given up with the scheduler (tl__res_teardown). */
void tl__res_executor_free(struct tl_scheduler *s, tl__eresources *e);

/* A task set's requests as a block, names interned (NULL with n == 0); TL_ENOMEM leaves
 * nothing behind. */
int tl__res_taskset_new(struct tl_scheduler *s, const tl_resource_request *r, uint32_t n,
                        tl__treqs **out);
/* The task set the block belongs to (set once the task set exists). */
static inline void tl__res_taskset_attach(tl__treqs *q, struct tl__taskset *ts) {
  if (q != NULL)
    q->ts = ts;
}
/* Tasks that may launch with grants: pending and speculatable tasks of task sets with requests
 * (an offer round prepares a grant block for each, up to its launch budget). */
size_t tl__res_launchable(const struct tl_scheduler *s);
/* A prepared grant block the round did not use: back to the spares exactly as it came. */
void tl__grants_unalloc(struct tl_scheduler *s, tl__grants *g);
void tl__res_taskset_free(struct tl_scheduler *s, tl__treqs *q);

/* Whether ex could ever run one task of ts: its profile, and every request within what it
 * declares (free or not). */
bool tl__res_could_fit(const tl__executor *ex, const tl__taskset *ts);
/* How many tasks of ts fit ex's free addresses now, at most limit (limit when ts asks for
 * nothing). */
uint32_t tl__res_fit_count(const tl__executor *ex, const tl__treqs *q, uint32_t limit);
/* Whether one task of ts fits ex's free addresses now (true when it asks for nothing). */
static inline bool tl__res_fits(const tl__executor *ex, const tl__treqs *q) {
  return q == NULL || tl__res_fit_count(ex, q, 1) == 1;
}
/* Books one task of q on ex (tl__res_fits said yes) into g, which gets n and the grants. */
void tl__res_grant(struct tl_scheduler *s, tl__executor *ex, const tl__treqs *q, tl__grants *g);
/* Books grants read from an image on ex; false (nothing booked) when one is out of range, of
 * the wrong share for its request, or does not fit. */
bool tl__res_book(struct tl_scheduler *s, tl__executor *ex, const tl__treqs *q,
                  const tl__grants *g);
/* Gives back, on ex's books, what grants g hold there (the block itself is untouched). */
void tl__res_unbook(tl__executor *ex, const tl__grants *g);

/* Unsatisfiable requests (the unschedulable rule of exclusion, applied to resources): after an
 * offer round, a task set with requests and work to launch that no ALIVE executor could ever
 * run (its profile, its cores, its requests within what the executor declares) gets a deadline
 * unschedulable_timeout_ns away, while at least one executor is ALIVE; one that some executor
 * could run loses it. tl__res_due gives, at its deadline, a task set still unsatisfiable, for
 * the caller to abort (TL__FAIL_NO_RESOURCES); tl__res_next is the earliest deadline. */
void tl__res_after_round(struct tl_scheduler *s);
struct tl__taskset *tl__res_due(struct tl_scheduler *s, uint64_t now);
uint64_t tl__res_next(const struct tl_scheduler *s, uint64_t now);
/* Whether no ALIVE executor could ever run a task of ts. */
bool tl__res_unsatisfiable(struct tl_scheduler *s, const struct tl__taskset *ts);

/* Grant blocks: taken (spares first) and given back. tl__grants_unref frees or keeps as spare
 * at the last reference. */
tl__grants *tl__grants_alloc(struct tl_scheduler *s);
void tl__grants_unref(struct tl_scheduler *s, tl__grants *g);
/* Frees every spare block (the scheduler is idle, or freed). */
void tl__grants_trim(struct tl_scheduler *s);

/* tl_check's part: every executor's books against its attempts' grants, the kinds' totals and
 * references, spare blocks; with the memory of all of it. */
int tl__res_check(tl__checker *c);

#endif /* TL_RESOURCE_H */
