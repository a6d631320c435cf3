/* Private declarations of taskledger: the core records, the tl__ functions shared between the
 * library's files, and small inline helpers. Nothing here is API; users include taskledger.h.
 * Module-private layouts have their own headers: locality.h (locality's records), journal.h (the
 * call journal's lines and writer), lock.h (the lock), hash.h (uthash). The files and the layer
 * each belongs to are in docs/design.md "Files and layers"; test/layers.sh holds the code to it.
 * The sections below come in the order of those layers: base, ledger, policy, task sets,
 * transitions, entry, beside.
 *
 * The ledger is a set of records (attempt, executor, host, rack, task set, stage), each linked
 * into every index it belongs to: one uthash handle per map, one intrusive link per list. All of
 * it is protected by the scheduler's one mutex (struct tl_scheduler.lock).
 */
#ifndef TL_INTERNAL_H
#define TL_INTERNAL_H

#include "taskledger.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <uv.h>

struct tl_scheduler;

/* ---------------------------------------------------------------------------------------------
 * Memory (alloc.c). Every allocation goes through these and is counted in the scheduler. The
 * size passed to tl__free must be the size allocated: records know their own sizes.
 * ------------------------------------------------------------------------------------------- */

void *tl__malloc(struct tl_scheduler *s, size_t size);
void *tl__calloc(struct tl_scheduler *s, size_t n, size_t size);
void *tl__realloc(struct tl_scheduler *s, void *p, size_t old_size, size_t new_size);
void tl__free(struct tl_scheduler *s, void *p, size_t size);

/* The raw process-wide functions, for the scheduler struct itself (counted by the caller). */
void *tl__raw_calloc(size_t n, size_t size);
void *tl__raw_realloc(void *p, size_t size); /* and snapshot images (codec.h), never counted */
void tl__raw_free(void *p);
/* Schedulers alive in the process; tl_replace_allocator needs zero. */
void tl__schedulers_inc(void);
void tl__schedulers_dec(void);

#include "hash.h" /* after tl__malloc/tl__free: uthash allocates through them */
#include "lock.h"
#include "codec.h"

/* ---------------------------------------------------------------------------------------------
 * Small utilities (base).
 * ------------------------------------------------------------------------------------------- */

#define TL__ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* a + b, or UINT64_MAX when that does not fit: a deadline that saturates there is past the end
 * of time and never comes (tl__due). */
static inline uint64_t tl__add_sat(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Whether a deadline (as tl__add_sat made it) has come at now: when the time reaches it, unless
 * it saturated at UINT64_MAX, which never comes, not even with the clock at UINT64_MAX. */
static inline bool tl__due(uint64_t deadline, uint64_t now) {
  return deadline <= now && deadline != UINT64_MAX;
}

/* Length of a name of 1 to max-1 bytes, or 0 when NULL, empty or too long (alloc.c). */
size_t tl__name_len(const char *name, size_t max);

/* The text writer (text.c): writes a text into buf, cap bytes, or only measures it (buf NULL).
 * len counts the whole text so far, whether it fit or not, so len + 1 is the room it needs;
 * what is written is the text's first cap - 1 bytes at most. tl__text_end then NUL-terminates
 * it and marks a text that did not fit: it ends in "...\n" (cap >= 5; a shorter buffer is just
 * cut). */
typedef struct tl__text {
  char *buf;  /* NULL while measuring */
  size_t cap; /* bytes of buf */
  size_t len; /* bytes of the whole text so far, without the NUL */
} tl__text;

/* Inline: the journal writes its strings a byte at a time. */
static inline void tl__text_put(tl__text *t, const char *p, size_t n) {
  if (t->buf != NULL && t->len + 1 < t->cap) {
    size_t room = t->cap - 1 - t->len;
    memcpy(t->buf + t->len, p, n < room ? n : room);
  }
  t->len += n;
}
static inline void tl__text_str(tl__text *t, const char *p) { tl__text_put(t, p, strlen(p)); }
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void tl__text_printf(tl__text *t, const char *fmt, ...);
void tl__text_end(tl__text *t);

/* ---------------------------------------------------------------------------------------------
 * Intrusive circular doubly-linked lists (libuv's QUEUE, typed). An unlinked node points to
 * itself, so "is it on a list" is a test, and removing twice is harmless.
 * ------------------------------------------------------------------------------------------- */

typedef struct tl__link {
  struct tl__link *prev;
  struct tl__link *next;
} tl__link;

#define tl__container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

static inline void tl__list_init(tl__link *h) { h->prev = h->next = h; }
static inline bool tl__list_empty(const tl__link *h) { return h->next == h; }
static inline bool tl__list_linked(const tl__link *n) { return n->next != n; }

/* Inserts n before pos (at the tail when pos is the list head). */
static inline void tl__list_insert_before(tl__link *pos, tl__link *n) {
  n->next = pos;
  n->prev = pos->prev;
  pos->prev->next = n;
  pos->prev = n;
}

static inline void tl__list_insert_tail(tl__link *h, tl__link *n) { tl__list_insert_before(h, n); }

static inline void tl__list_remove(tl__link *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->prev = n->next = n;
}

/* ---------------------------------------------------------------------------------------------
 * Reference-counted strings: executor names and messages that events carry past the life of the
 * record that made them. Counts change only under the scheduler's lock.
 * ------------------------------------------------------------------------------------------- */

typedef struct tl__str {
  uint32_t refs; /* holders: records and queued events; freed at 0 */
  uint32_t len;  /* bytes of text, without the final NUL */
  uint32_t mark; /* tl_check's visit stamp */
  uint32_t seen; /* tl_check's count of holders found */
  char text[];   /* len bytes, then NUL (executor names: "id\0host\0") */
} tl__str;

static inline size_t tl__str_size(const tl__str *str) { return sizeof(tl__str) + str->len + 1; }

/* A string of len bytes whose text the caller writes (its final NUL is written), or NULL
 * (TL_ENOMEM). refs = 1. */
tl__str *tl__str_alloc(struct tl_scheduler *s, size_t len);
/* A copy of len bytes of text (which may hold NULs), or NULL (TL_ENOMEM). refs = 1. */
tl__str *tl__str_new(struct tl_scheduler *s, const char *text, size_t len);
/* A copy of a C string, or NULL for NULL; *err = TL_ENOMEM when a copy could not be made. */
tl__str *tl__str_dup(struct tl_scheduler *s, const char *text, int *err);
static inline tl__str *tl__str_ref(tl__str *str) {
  if (str != NULL)
    str->refs++;
  return str;
}
void tl__str_free(struct tl_scheduler *s, tl__str *str);
/* Drops a reference (NULL: nothing); the last one frees the string. */
static inline void tl__str_unref(struct tl_scheduler *s, tl__str *str) {
  if (str != NULL && --str->refs == 0)
    tl__str_free(s, str);
}

/* ---------------------------------------------------------------------------------------------
 * Checking (checker.c; its context and helpers are laid out in checker.h). tl_check hands one
 * checker to each module's tl__*_check, declared with the module below: each checks the
 * invariants of its own records and accounts their memory. A module that holds shared strings
 * walks them with a tl__str_fn (its tl__*_each_str), for their reference counts.
 * ------------------------------------------------------------------------------------------- */

typedef struct tl__checker tl__checker;
typedef void tl__str_fn(tl__checker *c, tl__str *str, const char *holder);

/* ---------------------------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------------------------- */

#define TL__NONE UINT32_MAX /* "no index" in pending-list links */

enum { TL__LAUNCHING = 0, TL__RUNNING = 1 }; /* tl__attempt.state */

/* attempts_by_tid: the running attempts by tid (ledger.c). Direct-mapped: tid t's entry sits in
 * slot[t & (cap - 1)], its home, unless a newer running tid has the same home: then it is in
 * far, an open-addressing table with linear probing in Robin Hood order. A slot holds its key
 * beside the record, so a probe that misses reads no record; tid 0 (never a launch's) marks a
 * free slot. The capacity is 0 (no array: nothing runs) or a power of two, at most three quarters
 * full; far's is 0 or a power of two, at most three quarters full. */
typedef struct tl__tid_slot {
  tl_tid tid;
  struct tl__attempt *a;
} tl__tid_slot;

typedef struct tl__tidmap {
  tl__tid_slot *slot;
  size_t cap;     /* slots */
  size_t n;       /* attempts */
  unsigned shift; /* 64 - log2(cap): a tid's home slot is (tid * 2^64/phi) >> shift */
} tl__tidmap;

typedef struct tl__tidindex {
  tl__tid_slot *slot; /* cap slots: the homes */
  size_t cap;         /* slots */
  size_t n;           /* attempts, far's included */
  size_t quiet;       /* removals in a row that left it an eighth full or less (ledger.c) */
  tl__tidmap far;     /* those whose home a newer tid holds */
} tl__tidindex;

/* One launched copy of one task. */
typedef struct tl__attempt {
  tl_tid tid;                    /* key of attempts_by_tid (which holds it unless it is frozen) */
  tl__link on_executor;          /* executor's running list, or its frozen list */
  tl__link on_taskset;           /* task set's running list, until the attempt ends */
  struct tl__executor *executor; /* where it runs; never NULL while the attempt exists */
  struct tl__taskset *taskset;   /* whose task it is; never NULL while the attempt exists */
  uint64_t launch_time;          /* clock at launch */
  uint32_t index;                /* task index in the task set */
  uint32_t attempt;              /* attempt number of that index, from 0 */
  uint8_t state;                 /* TL__LAUNCHING until the first RUNNING update */
  uint8_t frozen;                /* on a PENDING_LOSS or RECOVERING executor's frozen list, not
                                    in the map */
  uint8_t locality;              /* tl_locality it was launched at */
  uint8_t speculative;           /* launched as a speculative copy */
  uint8_t killed_by_other;       /* another copy of its index succeeded and it was asked to die:
                                    nothing it reports counts (SPARK-13343, SPARK-22074) */
  uint8_t end_held;              /* reconciled as ended (tl_reconcile_item.ended): the executor
                                    holds its end and runs nothing for it, so it takes no cores
                                    (docs/snapshot.md "Adoption") */
  struct tl__attempt *sibling;   /* the other running copy of its index, or NULL */
  struct tl__grants *grants;     /* the addresses it holds (resource.h), or NULL */
} tl__attempt;

/* A host an attempt of an index was launched on (speculation: a copy never goes there). */
typedef struct tl__tried {
  struct tl__tried *next; /* the index's earlier ones */
  tl__str *names;         /* the executor's names (its host is the second string); one ref */
} tl__tried;

/* A completed map output of an active shuffle-map task set: the index is done, and its output
 * lives on the executor that ran it. When that executor is lost the index runs again
 * (TL_END_RESUBMITTED). Freed when that happens or the task set becomes zombie. */
typedef struct tl__output {
  tl__link on_executor;          /* its executor's outputs */
  tl__link on_taskset;           /* its task set's outputs */
  struct tl__taskset *taskset;   /* whose index it completes */
  struct tl__executor *executor; /* where it lives */
  tl_tid tid;                    /* the attempt that wrote it */
  uint32_t index;                /* the index */
  uint32_t attempt;              /* that attempt's number */
  uint8_t locality;              /* and its locality */
  uint8_t speculative;           /* 1 if it was a speculative copy */
} tl__output;

/* An executor, from registration until its tombstone is evicted. */
typedef struct tl__executor {
  UT_hash_handle hh_by_id;      /* scheduler's executors_by_id (tombstones included) */
  tl__str *names;               /* "id\0host\0"; this record holds one ref */
  tl__str *decommission_msg;    /* message of tl_executor_decommission, or NULL */
  struct tl__host *host;        /* its host while ALIVE or DECOMMISSIONING, else NULL */
  tl__link on_host;             /* host's executor list while it has a host */
  tl__link running;             /* attempts in attempts_by_tid that run here */
  tl__link frozen;              /* attempts frozen here; non-empty only while PENDING_LOSS or
                                   RECOVERING */
  tl__link outputs;             /* map outputs of active shuffle-map task sets written here */
  uint32_t noutputs;            /* length of outputs */
  union {
    tl__link on_timeline;              /* heartbeat_order, pending_order, recovery_order or
                                          tombstone_order by state */
    struct tl__executor *retired_next; /* freed but kept for task events (tl__executor_free,
                                          off every list by then): s->retired */
  };
  uint64_t when;                /* last heartbeat / pending-loss or recovery deadline / removal
                                   time */
  tl__str *rack;                /* RECOVERING: the rack it rejoins when it reconciles (NULL: none);
                                   NULL in every other state */
  uint32_t cores;               /* as registered */
  uint32_t free_cores;          /* cores - sum of cpus of running attempts */
  uint32_t nrunning;            /* length of running */
  uint32_t nfrozen;             /* length of frozen */
  uint8_t state;                /* tl_executor_state */
  bool was_decommissioning;     /* PENDING_LOSS, RECOVERING: the loss or the restore found it
                                   decommissioning (nothing counts; it reconciles to
                                   DECOMMISSIONING) */
  uint32_t offer_slot;          /* its slot in the offer round offer_round (offers.c's scratch) */
  uint64_t offer_round;         /* the round that last gave it a slot */
  struct tl__xfail *x_failures; /* exclude.c: its application-level failures, while ALIVE or
                                   DECOMMISSIONING (dropped when its loss begins) */
  uint32_t x_nfailures;         /* length of x_failures */
  bool x_excluded;              /* exclude.c: excluded for the whole application */
  struct tl__place *place;      /* its place while some task set prefers it, else NULL */
  void *ud;                     /* tl_executor_desc.ud: the caller's, never read */
  uint32_t profile;             /* tl_executor_desc.profile */
  uint32_t ev_stamp;            /* the sequence number (s->ev_pushed, mod 2^32) of the last task
                                   event that names it: task events hold its names without a
                                   reference, so its record outlives them (registry.c,
                                   tl__executor_free; tl__ev_unsettled) */
  struct tl__eresources *res;   /* its resources (resource.h), or NULL; freed with its burial */
  uint64_t decommission_time;   /* when tl_executor_decommission made it DECOMMISSIONING (kept
                                   through PENDING_LOSS and RECOVERING with was_decommissioning;
                                   decommission_kill_interval_ns counts from it); 0 otherwise */
} tl__executor;

static inline const char *tl__executor_id(const tl__executor *ex) { return ex->names->text; }

/* Whether a loss of ex with reason counts its attempts that reached RUNNING as task failures in
 * its second phase: the app caused it, the executor was not decommissioning (when the loss began,
 * or now if it has not begun), and the driver did not kill or decommission it. The one rule for
 * the loss (membership.c) and for the exclusion records reserved before it (exclude.c). */
static inline bool tl__loss_counts(const tl__executor *ex, const tl_loss_reason *reason) {
  bool decommissioning =
      ex->state == TL_EXECUTOR_PENDING_LOSS || ex->state == TL_EXECUTOR_RECOVERING
          ? ex->was_decommissioning
          : ex->state == TL_EXECUTOR_DECOMMISSIONING;
  return reason->caused_by_app && !decommissioning && reason->kind != TL_LOSS_KILLED &&
         reason->kind != TL_LOSS_DECOMMISSIONED;
}
static inline const char *tl__names_host(const tl__str *names) {
  return names->text + strlen(names->text) + 1;
}

/* A host with at least one ALIVE or DECOMMISSIONING executor. */
typedef struct tl__host {
  UT_hash_handle hh_by_name; /* scheduler's hosts_by_name */
  struct tl__rack *rack;     /* NULL: in no rack */
  tl__link executors;        /* its executors (tl__executor.on_host); never empty */
  tl__link on_rack;          /* rack's host list */
  struct tl__place *place;   /* its place while some task set prefers it, else NULL */
  uint32_t nalive;           /* of its executors, the ALIVE ones */
  uint32_t nexecutors;       /* length of executors */
  bool x_excluded;           /* exclude.c: the node is excluded for the whole application */
  uint32_t name_len;         /* bytes of name */
  char name[];               /* NUL-terminated */
} tl__host;

/* A rack with at least one host. */
typedef struct tl__rack {
  UT_hash_handle hh_by_name; /* scheduler's racks_by_name */
  tl__link hosts;            /* its hosts (tl__host.on_rack); never empty */
  uint32_t nhosts;           /* length of hosts */
  uint32_t name_len;         /* bytes of name */
  char name[];               /* NUL-terminated */
} tl__rack;

/* tl__index.flags. An index is PENDING (on the pending stack), SPECULATABLE (on the speculative
 * stack: one copy runs and a second waits to launch), or neither; the two stacks share links. */
enum { TL__IDX_SUCCESSFUL = 1, TL__IDX_PENDING = 2, TL__IDX_SPECULATABLE = 4 };

/* Per-index state of a task set: 16 bytes, allocated with the task set. */
typedef struct tl__index {
  uint32_t prev; /* pending stack links (TL__NONE at the ends), while PENDING */
  uint32_t next;
  uint32_t attempts;      /* attempts launched so far: the next attempt number */
  uint16_t failures;      /* counting failures since the last success */
  uint8_t copies_running; /* attempts of this index in flight, frozen included */
  uint8_t flags;          /* TL__IDX_*; PENDING only in a non-zombie task set */
} tl__index;

/* Levels of a pool's queue, a skip list of its schedulable task sets: a task set is on level l
 * with probability 4^-l, so 12 levels keep searches logarithmic to some 16 million entries. */
#define TL__QUEUE_LEVELS 12

/* A pool (pool.c). Under TL_FIFO only "default" exists. */
typedef struct tl__pool {
  UT_hash_handle hh_by_name;                   /* scheduler's pools_by_name */
  tl__link on_scheduler;                       /* scheduler's pools, in creation order */
  struct tl__taskset *queue[TL__QUEUE_LEVELS]; /* heads of its queue of schedulable task sets */
  uint32_t running;                            /* attempts in flight of its task sets, zombies' and
                                                  frozen ones included */
  uint32_t ntasksets;                          /* its task sets not yet released */
  uint32_t weight;                             /* FAIR share between pools; at least 1 */
  uint32_t min_share;                          /* running attempts it is owed first */
  uint8_t mode;                                /* tl_sched_mode between its task sets */
  uint32_t check_running, check_tasksets;      /* tl_check's scratch sums */
  /* The tree (nested pools). A pool with children holds no task set: its running and
   * ntasksets stay 0, and an offer round sums its leaves' into sub_running. */
  struct tl__pool *parent;                     /* NULL at the top level */
  tl__link on_parent;                          /* parent's children, or scheduler's top_pools */
  tl__link children;                           /* its child pools, in the last round's order */
  uint32_t nchildren;                          /* entries of children */
  uint32_t depth;                              /* 1 at the top level */
  uint32_t seq;                                /* creation order: FIFO between child pools */
  uint32_t sub_running;                        /* round scratch: its subtree's running */
  bool sub_queued;                             /* round scratch: its subtree queues something */
  uint32_t name_len;                           /* bytes of name */
  char name[];                                 /* NUL-terminated */
} tl__pool;

/* Locality's records (tl__place, tl__tskey, tl__pair, tl__locality) are private to locality.c
 * and laid out in locality.h; the rest of the library holds pointers to them. */
typedef struct tl__place tl__place;
typedef struct tl__locality tl__locality;
enum { TL__PLACE_EXECUTOR = 'e', TL__PLACE_HOST = 'h' }; /* a place's kind (tl__place_find) */

/* One attempt of one stage. */
typedef struct tl__taskset {
  tl_taskset_id id;         /* key of tasksets_by_id */
  UT_hash_handle hh_by_id;  /* scheduler's tasksets_by_id */
  struct tl__stage *stage;  /* its stage entry; never NULL */
  tl__pool *pool;           /* its pool; never NULL */
  tl__link on_stage;        /* stage's attempt list */
  tl__link running;         /* attempts in flight (tl__attempt.on_taskset), frozen included */
  tl__link outputs;         /* its map outputs (shuffle_map, not zombie) */
  void *payload;            /* the caller's, until taskset_released hands it back */
  uint32_t stage_id;        /* as submitted */
  uint32_t stage_attempt;   /* as submitted */
  uint32_t priority;        /* as submitted */
  uint32_t ntasks;          /* entries of idx */
  uint32_t cpus;            /* cores per task */
  uint32_t profile;         /* tl_taskset_desc.profile (beside cpus: an offer round's pass reads
                               both for every slot) */
  struct tl__treqs *req;    /* its resource requests (resource.h), or NULL; freed with it */
  uint32_t nrunning;        /* length of running */
  uint32_t nfrozen;         /* of which frozen */
  uint32_t npending;        /* indices on the pending stack; 0 when zombie */
  uint32_t nsucceeded;      /* indices flagged SUCCESSFUL */
  uint32_t pending_top;     /* index launched next, or TL__NONE */
  uint32_t nspeculatable;   /* indices on the speculative stack */
  uint32_t speculative_top; /* the speculative stack's top, or TL__NONE */
  uint32_t nheap_low;       /* speculation: durations in the median heap's lower half */
  uint32_t nheap_high;      /* and in its upper half */
  uint32_t heap_cap;        /* speculation: slots of heap; ntasks, doubled each time it grows */
  uint64_t *heap;           /* speculation (NULL without): durations of first successes, a
                               max-heap at the front and a min-heap at the back; in the task
                               set's block while heap_cap == ntasks, then in a block of its own
                               (indices run again after their map output was lost succeed for
                               the first time again), freed with the task set */
  tl__tried **tried;        /* speculation: per index, the hosts its attempts were launched on */
  tl__attempt **first;      /* speculation: per index, its running copy when it has exactly one */
  uint32_t nresults;        /* FINISHED updates taken (for max_result_bytes) */
  uint64_t result_bytes;    /* their result_size summed */
  bool shuffle_map;         /* as submitted: max_result_bytes does not apply */
  bool barrier;             /* as submitted: all tasks launch in one round, any failure zombies */
  uint8_t queue_levels;     /* levels of its pool's queue it is on; 0 unless schedulable */
  uint32_t queue_running;   /* the nrunning its place in a FAIR queue was chosen by */
  uint64_t offer_round;     /* the offer round that last launched in it (offers.c's scratch) */
  struct tl__taskset *launched_next; /* offers.c's list of the task sets a round launched in */
  struct tl__locality *loc;          /* preferred locations, or NULL (locality.c) */
  bool zombie;                       /* launches nothing; released when nrunning reaches 0 */
  bool failed;                       /* aborted: taskset_failed was made */
  bool restored;                     /* restored from an image (not submitted since): held
                                        while executors recover, may adopt attempts */
  uint8_t unsched;                   /* demand.c: the TL__UNSCHED_* states it is in; 0 when
                                        zombie (in the padding before max_failures) */
  uint16_t max_failures;             /* counting failures of one index that abort it: as
                                        submitted, or the config's */
  struct tl__tags *tags;             /* its tags (tags.c), or NULL; freed with it */
  struct tl__xset *exclude;          /* exclude.c: its counted failures and exclusions, or NULL
                                        (none yet, or exclude_on_failure off); freed with it */
  struct tl__placement *placement;   /* placement.c: its hard placement, or NULL (none: nothing
                                        is paid for it); freed with it */
  struct tl__taskset *queue_next[TL__QUEUE_LEVELS]; /* its successors in the queue, per level */
  tl__index idx[];                                  /* ntasks entries */
} tl__taskset;

/* Bytes of a task set's one block: the record, the index state and, with speculation, its
 * arrays (8 + 8 + 8 bytes per task). */
static inline size_t tl__taskset_size(uint32_t ntasks, bool speculation) {
  size_t per = sizeof(tl__index);
  if (speculation)
    per += sizeof(uint64_t) + sizeof(tl__tried *) + sizeof(tl__attempt *);
  return sizeof(tl__taskset) + (size_t)ntasks * per;
}
static inline size_t tl__taskset_bytes(const tl__taskset *ts) {
  return tl__taskset_size(ts->ntasks, ts->heap != NULL);
}

/* The attempts of one stage id. */
typedef struct tl__stage {
  uint32_t stage_id;       /* key of stages_by_id */
  UT_hash_handle hh_by_id; /* scheduler's stages_by_id */
  tl__link attempts;       /* its task sets (tl__taskset.on_stage); never empty */
  uint32_t nattempts;      /* length of attempts */
  tl__taskset *active;     /* the one non-zombie attempt, or NULL */
} tl__stage;

/* ---------------------------------------------------------------------------------------------
 * Events: made under the lock into the queue (queue.c), delivered after it by the serial
 * dispatcher (dispatch.c).
 * ------------------------------------------------------------------------------------------- */

typedef enum tl__event_kind {
  /* The task events first: a kind above TL__EV_TASK_ENDED is one whose names hold a reference
   * (tl__event_push, queue.c, dispatch.c). */
  TL__EV_TASK_STARTED,
  TL__EV_TASK_ENDED,
  TL__EV_TASKSET_FAILED,
  TL__EV_TASKSET_RELEASED,
  TL__EV_EXECUTOR_ADDED,
  TL__EV_EXECUTOR_LOST,
  TL__EV_REVIVE_OFFERS,
  TL__EV_KILL_TASK,
  TL__EV_SPECULATIVE_SUBMITTED,
  TL__EV_EXECUTOR_REMOVED,
  TL__EV_TASKSET_UNSCHEDULABLE, /* demand.c: u.ts.info, static_msg the reason */
  TL__EV_TASKSET_SCHEDULABLE,   /* demand.c: u.ts.info */
  TL__EV_DEMAND                 /* demand.c: u.demand */
} tl__event_kind;

/* Why a task set failed. */
enum {
  TL__FAIL_MAX_FAILURES,
  TL__FAIL_CANCELLED,
  TL__FAIL_RESULT_SIZE,
  TL__FAIL_UNSCHEDULABLE,
  TL__FAIL_NO_PAYLOAD,  /* restored without its payload (tl_scheduler_restore) */
  TL__FAIL_NO_RESOURCES, /* no live executor could ever run a task of it (resource.c) */
  TL__FAIL_NOT_RETRIED,  /* a counted failure said no_retry (tl_update) */
  TL__FAIL_PLACEMENT     /* no live executor satisfies its hard placement (placement.c): the
                            message says why */
};

typedef struct tl__event {
  uint8_t kind; /* tl__event_kind */
  /* A task event's small fields, in the 7 bytes beside kind (an event is 112 bytes: every
   * launch and every end writes one). */
  uint8_t locality;          /* task events */
  uint8_t end_kind;          /* task_ended */
  bool counts;               /* task_ended */
  bool drop_result;          /* task_ended: free the result with result_free, do not hand it over */
  bool speculative;          /* task_started, task_ended: a speculative copy */
  uint16_t host_at;          /* task events: where the host starts in names->text: the id's
                                length + 1 */
  tl__str *names;            /* executor "id\0host\0": one ref for executor and kill events; a
                                task event holds none (its executor's record outlives it:
                                tl__executor.ev_stamp) */
  tl__str *msg;              /* message, one ref, or NULL */
  const char *static_msg;    /* a static message used when msg is NULL, or NULL */
  struct tl__grants *grants; /* task events: the attempt's grants, one reference, or NULL */
  union {
    struct {
      tl_tid tid;
      tl_taskset_id taskset;
      uint32_t stage_id, stage_attempt, index, attempt;
      void *payload;
      void *executor_ud; /* the executor's tl_executor_desc.ud */
      void *result;      /* task_ended success: owned by the event until delivered */
      size_t result_size;
      void (*result_free)(void *);
    } task;
    struct {
      tl_taskset_info info;
      void *payload;     /* released */
      uint8_t why;       /* failed: TL__FAIL_* */
      uint32_t index;    /* failed, max failures: the index */
      uint32_t failures; /* and its count; result size: the results taken */
      uint64_t bytes;    /* result size: their bytes */
    } ts;
    struct {
      uint8_t kind;
      bool caused_by_app;
      int exit_code;
      void *executor_ud; /* the executor's tl_executor_desc.ud */
    } loss;              /* executor_lost, executor_removed */
    struct {
      tl_tid tid;
      bool interrupt;
      void *executor_ud; /* the executor's tl_executor_desc.ud */
    } kill;
    tl_demand demand; /* demand_changed: the totals */
  } u;
} tl__event;

typedef struct tl__event_array {
  tl__event *ev; /* cap slots */
  size_t n;      /* used */
  size_t cap;    /* allocated */
  bool refs;     /* some event holds a reference to drop when it is settled (a message, grants,
                    or the names of an event other than a task's); if not, settling the array
                    reads none of its events (dispatch.c) */
} tl__event_array;

#define TL__EVENTS_INITIAL 32 /* capacity of each event array when it holds nothing more */
/* The event queue's hysteresis: a burst grows the arrays (to the largest call's events), and
 * they keep that room until TL__EVENTS_KEEP times their capacity of delivered batches in a row
 * used a quarter of it or less (so growing them again costs O(1) per call, amortized), or until
 * the scheduler is idle (tl__idle): then both go back to TL__EVENTS_INITIAL (queue.c). */
#define TL__EVENTS_KEEP 2

/* Makes room for n more events in s->events (and, while demand_on, tl__demand_room more), so
 * that the pushes of a call cannot fail (queue.c): tl__events_reserve is the check,
 * tl__events_grow the allocation behind it. */
int tl__events_grow(struct tl_scheduler *s, size_t n);
static inline int tl__events_reserve(struct tl_scheduler *s, size_t n);
/* A zeroed slot of the given kind at the queue's tail; room must have been reserved (queue.c;
 * inline, as every transition pushes). */
static inline tl__event *tl__event_push(struct tl_scheduler *s, tl__event_kind kind);
/* What a pushed event starts as: every field zero (queue.c). */
extern const tl__event tl__event_blank;
/* Stops the process: a push found no room, so a call reserved less than it pushes (queue.c). */
_Noreturn void tl__events_overrun(void);
/* Pushes a revive_offers event if the call asked for one (s->revive_wanted); reserved
 * (TL__REVIVE_EVENTS) by every call that can set the flag. */
#define TL__REVIVE_EVENTS 1
static inline void tl__event_push_revive(struct tl_scheduler *s);
/* Drops the references events hold (names, messages) and frees undelivered results. */
void tl__events_clear(struct tl_scheduler *s, tl__event_array *a, size_t from);
/* Shrinks an event array back to TL__EVENTS_INITIAL after a burst (best effort). */
void tl__events_shrink(struct tl_scheduler *s, tl__event_array *a);
/* A batch of `used` events was delivered and dropped (the lock held, nobody dispatching):
 * counts it for the hysteresis (TL__EVENTS_KEEP) and shrinks both arrays when it says so. */
void tl__events_settled(struct tl_scheduler *s, size_t used);
/* tl_check's part: both event arrays, by capacity; and the strings queued events hold. */
int tl__queue_check(tl__checker *c);
void tl__events_each_str(tl__checker *c, tl__str_fn *fn);
/* After the strings' first walk: each task event's names were visited (its executor holds them). */
int tl__events_check_names(tl__checker *c);

/* ---------------------------------------------------------------------------------------------
 * The scheduler
 * ------------------------------------------------------------------------------------------- */

/* The call journal's lines (journal.c; journal.h, for the entry layer and inspect.c). */
struct tl__jline;

/* Exclude on failure's state (exclude.c, declared with it below), held by the scheduler. */
struct tl__xset;
struct tl__xfail;

typedef struct tl__exclude_state {
  tl__link tasksets;      /* xsets of task sets with counted failures (tl__taskset.exclude) */
  size_t ntasksets;       /* length of tasksets */
  tl__link timers;        /* xsets with an unschedulable deadline, earliest first */
  size_t ntimers;         /* length of timers */
  tl__link execs;         /* executors excluded for the application, earliest expiry first */
  size_t nexecs;          /* length of execs */
  tl__link nodes;         /* nodes with an excluded executor or excluded themselves */
  size_t nnodes;          /* length of nodes */
  tl__link node_timeline; /* excluded nodes, earliest expiry first */
  size_t nnodes_excluded; /* length of node_timeline */
  void *spare;            /* records reserved by the running call (singly linked); none between
                             calls */
  size_t nspare;          /* length of spare */
  size_t nrecords;        /* records allocated, spares included (tl_check's memory balance) */
  tl__link aborts;        /* xsets an offer round found unschedulable, for its caller to abort
                             (through their on_timer links); empty between calls */
} tl__exclude_state;

struct tl_scheduler {
  tl__mutex lock;  /* protects everything below, except where a field says otherwise */
  tl_config cfg;   /* validated copy */
  tl_callbacks cb; /* copy */

  /* Indexes. */
  tl__tidindex attempts_by_tid;    /* running attempts (not frozen) */
  tl__attempt *spare_attempts;     /* freed records kept for the next launches, through sibling */
  size_t nspare_attempts;          /* their number: none while nothing runs (ledger.c) */
  tl__executor *executors_by_id;   /* every executor record, tombstones included */
  tl__executor *last_executor;     /* the one tl__executor_find found last, or NULL */
  tl__host *hosts_by_name;         /* hosts with live executors */
  tl__rack *racks_by_name;         /* racks with hosts */
  tl__taskset *tasksets_by_id;     /* every task set not yet released */
  tl__stage *stages_by_id;         /* stages with task sets */
  tl__pool *pools_by_name;         /* every pool */
  struct tl__place *places_by_key; /* places some task set prefers */
  size_t nplaces;                  /* entries of places_by_key */
  tl__link locality_tasksets;      /* task sets with preferences, not zombie (tl__locality) */
  uint32_t locality_stamp;         /* numbers submissions for tl__place.stamp */
  uint64_t locality_wait[5];       /* the wait at each tl_locality, inherits resolved */
  uint64_t locality_ticked;        /* the time of the last tl_tick (locality waits) */
  tl__link pools;                  /* the same, in creation order */
  tl__pool *default_pool;          /* "default": the one pool under TL_FIFO */
  size_t npools;                   /* entries of pools_by_name */
  tl__link top_pools;              /* pools at the top level (on_parent) */
  size_t nnested;                  /* pools with a parent: 0 keeps the rounds on the flat path */
  uint32_t pool_seq;               /* the next pool's seq */
  tl__link heartbeat_order;        /* ALIVE/DECOMMISSIONING executors, oldest heartbeat first */
  tl__link pending_order;          /* PENDING_LOSS executors with a deadline, earliest first */
  tl__link recovery_order;         /* RECOVERING executors with a deadline, earliest first */
  tl__link tombstone_order;        /* REMOVED executors, oldest first */

  /* Counts kept with the indexes (tl_check recounts them). */
  size_t nalive, ndecommissioning, npending_loss, ntombstones, nrecovering, nhosts, nracks;
  size_t nactive, nzombie, nfrozen, npending_tasks;
  tl_stats totals; /* only its uint64_t totals are kept here */

  uint64_t epoch;                /* tl_epoch: 1, or what the restore gave; never changes */
  tl_tid next_tid;               /* the next launch's tid */
  tl_taskset_id next_taskset_id; /* the next submission's id */
  uint64_t last_now;             /* the running call's time: the latest clock reading */
  bool revive_wanted;            /* the running call made pending work: push revive_offers */
  size_t nspeculatable;          /* indices on speculative stacks, all task sets together */
  uint64_t next_speculation;     /* when tl_tick looks for slow tasks next, unless past_end */
  bool speculation_past_end;     /* the next check would come at or after UINT64_MAX: never */
  uint64_t offer_round;          /* numbers offer rounds, for tl__executor.offer_round; from 1 */
  /* Restore (snapshot.c) and reconciliation (membership.c): the image's next tid and the next
   * tid the restore began with (after restore_tid_floor), between which the tids a driver gave
   * out after the image lie, for adoption; and the recovery hold: while set (some executor is
   * RECOVERING since the restore), restored task sets launch nothing. */
  tl_tid restored_tid_lo, restored_tid_hi;
  bool restore_hold;
  tl__exclude_state x;             /* exclude_on_failure's records (exclude.c) */
  tl__link rkinds;                 /* resource names in use (resource.c), first seen first */
  size_t nrkinds;                  /* their number */
  tl__link res_tasksets;           /* task sets with resource requests, by their requests'
                                      block (resource.c) */
  size_t nres_tasksets;            /* their number */
  tl__link res_timers;             /* of them, those no live executor could run, earliest
                                      deadline first (resource.c) */
  size_t nres_timers;              /* their number */
  struct tl__grants *spare_grants; /* grant blocks kept for the next launches (resource.c) */
  /* Hard placement (placement.c). */
  tl__link place_tasksets;         /* task sets with a placement, by their blocks */
  size_t nplace_tasksets;          /* their number: 0 keeps every path free of placement */
  tl__link place_timers;           /* of them, those no live executor satisfies, earliest
                                      deadline first */
  size_t nplace_timers;            /* their number */
  size_t nspare_grants;            /* their number */

  /* Events. New events go to events; the dispatcher swaps it with batch and delivers the batch
   * with the lock released. */
  tl__event_array events;
  tl__event_array batch;
  uint64_t ev_pushed;            /* events pushed since the scheduler began (their sequence) */
  uint64_t ev_settled;           /* of which delivered and settled, or cleared: always
                                    ev_pushed - batch.n - events.n */
  struct tl__executor *retired;  /* executor records freed while a task event not yet settled
                                    named them, through retired_next (registry.c) */
  atomic_size_t batch_delivered; /* events of batch delivered so far (read without the lock) */
  size_t events_quiet;           /* delivered batches in a row that used a quarter of the
                                    arrays' capacity or less (TL__EVENTS_KEEP, queue.c) */
  atomic_uint dispatch_state;    /* TL__DISPATCHING, TL__MORE (events.c) */
  bool batch_dirty;              /* batch and journal_batch were delivered but still hold their
                                    references: the next lock holder drops them (events.c) */
  bool closing;                  /* tl_scheduler_free is releasing task sets */
  bool ready_sent;               /* deferred delivery: the wake-up for what is queued was made
                                    (events_ready or the driver's), and no tl_dispatch has taken
                                    the queue since (dispatch.c) */
  /* The driver attached (tl__driver_attach: the libuv driver, uv.c), if any: every mutating call
   * asks for the next deadline only while driver_wake is set. */
  void (*driver_wake)(void *ud);   /* under the lock: a call moved the next deadline earlier than
                                      driver_armed_at (it must not call the library) */
  void (*driver_ready)(void *ud);  /* under the lock, deferred delivery: something was queued
                                      to deliver (instead of events_ready; it must not call the
                                      library) */
  void *driver;                    /* the driver's handle, its wake's argument */
  uint64_t driver_armed_at;        /* the clock time the driver's timer is armed for, or will be
                                      once the tick that chose it returns; UINT64_MAX: stopped;
                                      0 while attaching (nothing is earlier: no wake) */
  struct tl__jline *journal;       /* journal lines queued, oldest first */
  struct tl__jline **journal_tail; /* where the next line is linked */
  struct tl__jline *journal_batch; /* lines the dispatcher is writing (the lock released) */

  /* Memory accounting of this scheduler's allocations, struct tl_scheduler included. */
  size_t mem_bytes;
  size_t mem_blocks;
  uint32_t check_epoch; /* tl_check's visit stamp for shared strings */

  /* Demand events (demand.c). */
  bool demand_on;          /* taskset_unschedulable, taskset_schedulable or demand_changed is
                              set: every reservation takes tl__demand_room's room too */
  size_t nunsched;         /* task sets whose unsched is not 0 */
  tl_demand demand_told;   /* the totals the last demand event carried (zeros before one) */
  /* Offer shuffle (shuffle.c; tl_config.offer_shuffle). */
  uint64_t offer_shuffle_state; /* the draw sequence's position: offer_shuffle_seed at creation,
                                   the image's after a restore, moved on by every round that
                                   goes through; 0 while offer_shuffle is off */
};

/* Demand events (demand.c; docs/api.md "Demand events"). The unschedulable states of a task
 * set, one bit each in tl__taskset.unsched: a source calls tl__unsched_enter when a task set
 * enters its state and tl__unsched_leave when it leaves it; the first bit set makes a
 * taskset_unschedulable event, the last one cleared a taskset_schedulable. A task set that
 * becomes zombie leaves them all (tl__unsched_zombie, taskset.c). A new source takes the next
 * bit and counts the task sets it may change in tl__demand_room. */
enum {
  TL__UNSCHED_EXCLUDED = 1u << 0, /* exclude.c: excluded from every live executor */
  TL__UNSCHED_RESOURCES = 1u << 1, /* resource.c: no ALIVE executor could run one of its tasks */
  TL__UNSCHED_PLACEMENT = 1u << 2  /* placement.c: no live executor satisfies its placement */
};
#define TL__UNSCHED_SOURCES 3
void tl__unsched_enter(struct tl_scheduler *s, tl__taskset *ts, uint8_t state);
void tl__unsched_leave(struct tl_scheduler *s, tl__taskset *ts, uint8_t state);
void tl__unsched_zombie(struct tl_scheduler *s, tl__taskset *ts);
/* A restored task set is in state (its image's deadline): set without an event; the restore
 * makes them with tl__unsched_restored once it has room. */
void tl__unsched_mark(struct tl_scheduler *s, tl__taskset *ts, uint8_t state);
void tl__unsched_restored(struct tl_scheduler *s);
/* The end of a public call (dispatch.c, the lock held): the demand event, when demand_changed
 * is set and the totals differ from the last it carried. */
void tl__demand_end(struct tl_scheduler *s);
/* tl_check's part: the unsched bits against the count, and the totals' sources. */
int tl__demand_check(tl__checker *c);
/* The room every reservation adds while demand_on (tl__events_reserve): the demand event, and
 * per task set a source may change in one transition, an event for each source and one for its
 * end (an upper bound: a transition changes each source of a task set at most once). */
static inline size_t tl__demand_room(const struct tl_scheduler *s) {
  return 1 + (TL__UNSCHED_SOURCES + 1) * (s->x.ntasksets + s->nres_tasksets + s->nplace_tasksets);
}

/* Room for n more events (queue.c); TL_ENOMEM, having changed nothing. A transition reserves,
 * before it changes anything, the sum of the TL__*_EVENTS of the calls it makes. While
 * demand_on, tl__events_grow adds the demand events' room (tl__demand_room): out of line, so
 * the test here is one flag when no demand callback is set. */
static inline int tl__events_reserve(struct tl_scheduler *s, size_t n) {
  return !s->demand_on && s->events.cap - s->events.n >= n ? TL_OK : tl__events_grow(s, n);
}

static inline tl__event *tl__event_push(struct tl_scheduler *s, tl__event_kind kind) {
  tl__event_array *q = &s->events;
  /* Room was reserved by the call before it changed anything; running out here is a bug in
   * that call's count, and writing past the array would be worse than stopping. */
  if (q->n == q->cap)
    tl__events_overrun();
  tl__event *ev = &q->ev[q->n++];
  s->ev_pushed++;
  /* Copied from a blank event, not memset: gcc makes a memset of this size a rep stosq, whose
   * start-up costs more than the copy's few vector moves. */
  *ev = tl__event_blank;
  ev->kind = (uint8_t)kind;
  if (kind > TL__EV_TASK_ENDED) /* other events hold their names, and may hold a message */
    q->refs = true;
  return ev;
}

/* A task event holds a reference beyond its names (a message, grants): settling its array must
 * read the events. */
static inline void tl__event_holds(struct tl_scheduler *s) { s->events.refs = true; }

_Static_assert(TL_ID_MAX <= UINT16_MAX, "an id's length + 1 fits tl__event's host_at");
_Static_assert(sizeof(tl__event) <= 112 || sizeof(void *) != 8, "an event fits 112 bytes");

/* A task event's executor: its names, without a reference (the executor's record, and so its
 * names, outlive the event: ev_stamp, tl__executor_free), and where the host starts in them, so
 * the dispatcher does not measure the id again for every task_started and task_ended. The event
 * must be the last one pushed. */
static inline void tl__event_task_names(struct tl_scheduler *s, tl__event *ev, tl__executor *ex) {
  ev->names = ex->names;
  ev->host_at = (uint16_t)(ex->hh_by_id.keylen + 1u); /* ids are shorter than TL_ID_MAX */
  ev->u.task.executor_ud = ex->ud;
  ex->ev_stamp = (uint32_t)s->ev_pushed;
}

/* Whether the event numbered stamp (mod 2^32) may not be settled yet: those not settled are
 * numbered ev_settled + 1 to ev_pushed. A stamp 2^32 events old may alias one of them: its record
 * then waits for those to be settled, which is harmless. */
static inline bool tl__ev_unsettled(const struct tl_scheduler *s, uint32_t stamp) {
  uint64_t pending = s->ev_pushed - s->ev_settled;
  return (uint64_t)(uint32_t)(stamp - (uint32_t)s->ev_settled) - 1 < pending;
}

/* One more reference to a grant block (resource.c). */
void tl__grants_ref(struct tl__grants *g);
/* A task event names its attempt's grants (resource.h): one more reference to them. */
static inline void tl__event_grants(struct tl_scheduler *s, tl__event *ev, const tl__attempt *a) {
  if (a->grants != NULL) {
    ev->grants = a->grants;
    tl__grants_ref(a->grants);
    tl__event_holds(s);
  }
}

/* The task_started event of attempt a, launched (offers.c) or adopted (membership.c). The caller
 * has reserved it, and makes it only when someone listens (cb.task_started). */
static inline void tl__event_task_started(struct tl_scheduler *s, const tl__attempt *a) {
  const tl__taskset *ts = a->taskset;
  tl__event *ev = tl__event_push(s, TL__EV_TASK_STARTED);
  tl__event_task_names(s, ev, a->executor);
  ev->u.task.tid = a->tid;
  ev->u.task.taskset = ts->id;
  ev->u.task.stage_id = ts->stage_id;
  ev->u.task.stage_attempt = ts->stage_attempt;
  ev->u.task.index = a->index;
  ev->u.task.attempt = a->attempt;
  ev->locality = a->locality;
  ev->speculative = a->speculative;
  ev->u.task.payload = ts->payload;
  tl__event_grants(s, ev, a);
}

static inline void tl__event_push_revive(struct tl_scheduler *s) {
  if (s->revive_wanted) {
    s->revive_wanted = false;
    if (s->cb.revive_offers != NULL) /* an event nobody listens to is not made */
      tl__event_push(s, TL__EV_REVIVE_OFFERS);
  }
}

/* ---------------------------------------------------------------------------------------------
 * Ledger (ledger.c): the tid index, attempt records, the one link and the one unlink, the freeze
 * and the thaw.
 * ------------------------------------------------------------------------------------------- */

/* A tid's home slot in attempts_by_tid's far table: its group of eight spread by Fibonacci
 * hashing, then its place in the group (ledger.c). */
static inline size_t tl__tid_home(const tl__tidmap *m, tl_tid tid) {
  size_t group = (size_t)(((tid >> 3) * 0x9e3779b97f4a7c15ull) >> m->shift);
  return (group + (size_t)(tid & 7)) & (m->cap - 1);
}
/* The attempt with this tid in a far table, or NULL (ledger.c). */
tl__attempt *tl__attempt_find_far(const tl__tidmap *m, tl_tid tid);
/* The running attempt with this tid, or NULL. Inline: every status update looks one up. */
static inline tl__attempt *tl__attempt_find(const struct tl_scheduler *s, tl_tid tid) {
  const tl__tidindex *m = &s->attempts_by_tid;
  if (m->n == 0 || tid == 0)
    return NULL;
  const tl__tid_slot *home = &m->slot[tid & (m->cap - 1)];
  if (home->tid == tid)
    return home->a;
  return m->far.n != 0 ? tl__attempt_find_far(&m->far, tid) : NULL;
}
/* Makes room in attempts_by_tid for more attempts whose tids lie in [lo, hi] (TL_ENOMEM: nothing
 * changed); then that many tl__attempt_link calls cannot fail. The range sizes the room its far
 * table needs: an offer round's launches are the `more` tids from s->next_tid. */
int tl__attempts_reserve(struct tl_scheduler *s, size_t more, tl_tid lo, tl_tid hi);
/* Frees attempts_by_tid's arrays (the scheduler's end). */
void tl__attempts_destroy(struct tl_scheduler *s);
/* Gives back what a call reserved and did not use: the array of an empty attempts_by_tid (a
 * round that reserved room and launched nothing) if the scheduler is idle or the array has been
 * quiet long enough, and an empty far table (ledger.c). */
void tl__attempts_unreserve(struct tl_scheduler *s);
/* Links a launched attempt (its executor, task set and tid set) into the scheduler-level
 * indexes: attempts_by_tid (room reserved) and its executor's running list, and takes its
 * cores. The one way in; tl__cleanup_task_state is the one way out. */
void tl__attempt_link(struct tl_scheduler *s, tl__attempt *a);
/* Whether any attempt is in attempts_by_tid. */
static inline bool tl__attempts_running(const struct tl_scheduler *s) {
  return s->attempts_by_tid.n != 0;
}
/* Whether the scheduler is idle: nothing runs, nothing is frozen, nothing is pending or
 * speculatable. What is kept for a steady load (the event arrays' room, attempts_by_tid's array,
 * spare attempt records) goes back once it is, so an idle scheduler holds what an empty one
 * does; until then each is given back by its own count of quiet use (ledger.c, queue.c). */
static inline bool tl__idle(const struct tl_scheduler *s) {
  return s->attempts_by_tid.n == 0 && s->nfrozen == 0 && s->npending_tasks == 0 &&
         s->nspeculatable == 0;
}
/* At the end of a call (the lock held): if the scheduler is idle, gives back attempts_by_tid's
 * empty array and the spare records. */
void tl__attempts_idle(struct tl_scheduler *s);
/* Removes a running attempt from every scheduler-level index: attempts_by_tid and its
 * executor's running list, and gives its cores back. The attempt stays on its task set's
 * running list: the task set's handlers (or the freeze of a two-phase loss) decide what comes
 * next. Used by the status-update path and the executor-loss path alike. */
void tl__cleanup_task_state(struct tl_scheduler *s, tl__attempt *a);
/* Moves a cleaned attempt to its executor's frozen list. */
void tl__attempt_freeze(struct tl_scheduler *s, tl__attempt *a);
/* Takes a frozen attempt off its executor's frozen list, the inverse of tl__attempt_freeze: the
 * second phase of a loss then ends it, a reconciliation links it again (tl__attempt_link) or
 * ends it. */
void tl__attempt_thaw(struct tl_scheduler *s, tl__attempt *a);
/* Records for a round's launches: makes sure n spare records are there, allocating those missing
 * onto the top of the spares (*fresh of them); TL_ENOMEM leaves the spares as they were. Each
 * launch then takes the top one (tl__attempt_take), touching a record once, when it launches. */
int tl__attempts_prepare(struct tl_scheduler *s, size_t n, size_t *fresh);
/* After a round that took used records: frees as many as it allocated and would not have needed
 * had it taken the spares it found first (so it keeps no more spares than it found, less those
 * it used), or, with used 0, all fresh ones (a round undone). */
void tl__attempts_unprepare(struct tl_scheduler *s, size_t fresh, size_t used);
/* After a round that succeeded and took used records: while the scheduler is not idle, the
 * fresh records it did not use stay spare up to the spares' bound (what tl__attempt_free keeps),
 * so rounds that find the same tasks waiting allocate nothing; idle, as tl__attempts_unprepare. */
void tl__attempts_round_end(struct tl_scheduler *s, size_t fresh, size_t used);
/* The top spare record, for a launch (tl__attempts_prepare made sure there is one). */
static inline tl__attempt *tl__attempt_take(struct tl_scheduler *s) {
  tl__attempt *a = s->spare_attempts;
  s->spare_attempts = a->sibling;
  s->nspare_attempts--;
  a->grants = NULL;
  return a;
}
/* Gives a record back: kept as a spare unless the scheduler is idle, freed otherwise. */
void tl__attempt_free(struct tl_scheduler *s, tl__attempt *a);
/* Frees every spare record. */
void tl__attempts_trim(struct tl_scheduler *s);
/* tl_check's part: the tid index against the running and frozen attempts the executors' lists
 * hold (tl__registry_check counts them), the spare records, and the attempts' memory. */
int tl__ledger_check(tl__checker *c, size_t running, size_t frozen);

/* ---------------------------------------------------------------------------------------------
 * Tags (tags.c): a task set's tags, copied into one block at submit, freed with the task set.
 * ------------------------------------------------------------------------------------------- */

typedef struct tl__tags {
  uint32_t n;     /* tags, 1 to TL_TAGS_MAX */
  uint32_t bytes; /* of text */
  char text[];    /* the n tags, each NUL-terminated, in the order submitted */
} tl__tags;

static inline size_t tl__tags_size(const tl__tags *t) { return sizeof *t + t->bytes; }
/* Length of a valid tag (TL_TAG_MAX, its charset), or 0 for NULL or an invalid one. */
size_t tl__tag_len(const char *tag);
/* TL_OK when tags[0 .. n) are valid and distinct (n <= TL_TAGS_MAX), else TL_EINVAL. */
int tl__tags_valid(const char *const *tags, uint32_t n);
/* A copy of valid tags into *out (NULL when n is 0); TL_ENOMEM. */
int tl__tags_new(struct tl_scheduler *s, const char *const *tags, uint32_t n, tl__tags **out);
void tl__tags_free(struct tl_scheduler *s, tl__tags *t); /* NULL: nothing */
/* Whether t (may be NULL) holds the tag of len bytes. */
bool tl__tags_has(const tl__tags *t, const char *tag, size_t len);
/* The tag after prev (NULL: the first), or NULL after the last. */
const char *tl__tags_next(const tl__tags *t, const char *prev);
/* In a snapshot: u32 count, then each tag a string. Restore checks every tag as tl_submit does
 * (TL_ESNAPSHOT) and may fail with TL_ENOMEM; *out is NULL for none. */
void tl__tags_save(tl__wbuf *w, const tl__tags *t);
int tl__tags_restore(struct tl_scheduler *s, tl__rbuf *r, tl__tags **out);

/* ---------------------------------------------------------------------------------------------
 * The registry (registry.c): executors, hosts, racks, task sets and stages by key, and the
 * executor record's shared state changes.
 * ------------------------------------------------------------------------------------------- */

tl__executor *tl__executor_find(struct tl_scheduler *s, const char *id);
/* The same, for an id of len bytes (its length already known). */
tl__executor *tl__executor_find_len(struct tl_scheduler *s, const char *id, size_t len);
tl__taskset *tl__taskset_find(struct tl_scheduler *s, tl_taskset_id id);
tl__stage *tl__stage_find(struct tl_scheduler *s, uint32_t stage_id);
/* Moves ex to state, keeping the scheduler's count of each state. */
void tl__executor_set_state(struct tl_scheduler *s, tl__executor *ex, tl_executor_state state);
/* Bytes of a host or rack record with a name of name_len bytes. */
size_t tl__host_size(size_t name_len);
size_t tl__rack_size(size_t name_len);
/* ex leaves its host (the loss of a live executor); a host left empty is freed, and its rack
 * when that is left empty too. */
void tl__executor_leave_host(struct tl_scheduler *s, tl__executor *ex);
/* ex becomes a tombstone (REMOVED, on tombstone_order, keeping only its names); the oldest
 * tombstones past max_tombstones are evicted. */
void tl__executor_bury(struct tl_scheduler *s, tl__executor *ex);
/* Forgets a tombstone: off its timeline and executors_by_id, and freed. */
void tl__tombstone_evict(struct tl_scheduler *s, tl__executor *ex);
/* Frees an executor record (it must be out of every list but executors_by_id), or, while a task
 * event not yet settled names it (ev_stamp), frees all but its names and keeps it on s->retired
 * until tl__executors_release. */
void tl__executor_free(struct tl_scheduler *s, tl__executor *ex);
/* Frees the records tl__executor_free kept for task events (s->retired) whose events are all
 * settled now, or every one (all: the scheduler's end). */
void tl__executors_release(struct tl_scheduler *s, bool all);
/* tl_check's part: executors (tombstones included) and their running and frozen lists, hosts,
 * racks and the timelines; *running and *frozen count the attempts on those lists. And the
 * strings executors hold. */
int tl__registry_check(tl__checker *c, size_t *running, size_t *frozen);
void tl__registry_each_str(tl__checker *c, tl__str_fn *fn);

/* ---------------------------------------------------------------------------------------------
 * Pools and their queues (pool.c).
 * ------------------------------------------------------------------------------------------- */

int tl__pools_init(struct tl_scheduler *s);
void tl__pools_destroy(struct tl_scheduler *s);
tl__pool *tl__pool_find(struct tl_scheduler *s, const char *name);
int tl__pool_add(struct tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                 uint32_t min_share);
/* tl_pool_set's work; the arguments are valid. Cannot fail but for TL_ESTATE and TL_ENOENT. */
int tl__pool_set(struct tl_scheduler *s, const char *name, tl_sched_mode mode, uint32_t weight,
                 uint32_t min_share);
/* tl_pool_add_child's work (parent NULL: tl__pool_add's); the arguments are valid. */
int tl__pool_add_child(struct tl_scheduler *s, const char *parent, const char *name,
                       tl_sched_mode mode, uint32_t weight, uint32_t min_share);
/* tl_submit's pool under TL_FAIR when pools nest or the config creates pools: TL_OK (*made: a
 * pool it created for the name, which tl__pool_unmake takes away if the submission fails, or
 * NULL), TL_ENOENT, TL_ESTATE (a pool with children), TL_ENOMEM. */
int tl__pool_for_submit(struct tl_scheduler *s, const char *name, tl__pool **made);
void tl__pool_unmake(struct tl_scheduler *s, tl__pool *p);
/* The pool's running attempts: its own, or for a pool with children its leaves' summed. */
uint32_t tl__pool_running(const tl__pool *p);
/* The queue's order in pool p: FIFO (priority, stage id, id) or FAIR (queue_running, stage id,
 * stage attempt, id). */
bool tl__queue_before(const tl__pool *p, const tl__taskset *a, const tl__taskset *b);
void tl__queue_insert(tl__taskset *ts);
void tl__queue_remove(tl__taskset *ts); /* a no-op when it is not queued */
/* Moves a queued task set to the place its running count now gives it (pool.c). */
void tl__queue_move(tl__taskset *ts);
/* Moves a queued task set of a FAIR pool to the place its running count now gives it; nothing
 * for any other (inline: every launch round and every attempt's end asks). */
static inline void tl__queue_replace(tl__taskset *ts) {
  if (ts->queue_levels != 0 && ts->pool->mode == TL_FAIR && ts->queue_running != ts->nrunning)
    tl__queue_move(ts);
}
/* Writes the pools with something queued into order, in the order a round visits them (FAIR
 * between pools; under TL_FIFO there is only "default"); returns how many. order must have
 * room for s->npools. */
size_t tl__pools_in_order(struct tl_scheduler *s, tl__pool **order);
/* tl_check's part (tl__tasksets_check calls it): the pools and their queues, against the queued
 * task sets the task sets counted (queued, and per level queued_at) and the sums they left in
 * each pool's check_running and check_tasksets. */
int tl__pools_check(tl__checker *c, size_t queued, const size_t queued_at[TL__QUEUE_LEVELS]);

/* ---------------------------------------------------------------------------------------------
 * Locality (locality.c).
 * ------------------------------------------------------------------------------------------- */

/* Submission: validates d->tasks (TL_EINVAL), then allocates the task set's locality block,
 * its keys' index and the places it names that do not exist yet (TL_ENOMEM, nothing changed).
 * *out is NULL when no task has a preference. Nothing is visible until tl__locality_attach. */
int tl__locality_validate(const tl_taskset_desc *d);
int tl__locality_prepare(struct tl_scheduler *s, const tl_taskset_desc *d,
                         struct tl__locality **out);
/* Undoes a prepared block that was not attached (a later step of the submission failed). */
void tl__locality_discard(struct tl_scheduler *s, struct tl__locality *loc);
/* Links a prepared block to its new task set, every index pending (the task set's pending stack
 * already holds them). */
void tl__locality_attach(struct tl_scheduler *s, tl__taskset *ts, struct tl__locality *loc);
/* An index entered or left the pending stack of a task set with locality. */
void tl__locality_pending_added(tl__taskset *ts, uint32_t index);
void tl__locality_pending_removed(tl__taskset *ts, uint32_t index);
/* The task set became zombie (its pending stack is cleared after this call). */
void tl__locality_zombie(struct tl_scheduler *s, tl__taskset *ts);
/* Frees a task set's locality (release or destroy). */
void tl__locality_free(struct tl_scheduler *s, tl__taskset *ts);
/* An executor was registered, decommissioned or lost (was_alive, is_alive: ALIVE before and
 * after): its place and its host's change, and every task set that prefers either recomputes
 * its levels. Call with ex->host still set. */
void tl__locality_executor_changed(struct tl_scheduler *s, tl__executor *ex, bool was_alive,
                                   bool is_alive);
/* A new executor or host record: points it at its place, if any. */
struct tl__place *tl__place_find(struct tl_scheduler *s, char kind, const char *name, size_t len);
/* Delay scheduling (Spark's getAllowedLocalityLevel): the farthest level a task set may launch
 * at now, advancing its level past expired waits and levels with nothing to run. */
tl_locality tl__locality_allowed(struct tl_scheduler *s, tl__taskset *ts);
/* The end of a task set's turn in an offer round (SPARK-18886): rejects says whether an offer
 * was turned down at the TL_ANY pass with tasks pending; best is the most local level launched,
 * or TL_ANY + 1 when nothing launched; full says whether the round offered every ALIVE
 * executor. */
void tl__locality_after_turn(struct tl_scheduler *s, tl__taskset *ts, bool rejects, int best,
                             bool full);
/* Whether index of ts may not run on ex (tl__exclude_task_blocked): a filter the caller hands
 * to locality, which knows nothing of exclusion. */
typedef bool tl__index_blocked_fn(struct tl_scheduler *s, const tl__taskset *ts, uint32_t index,
                                  const tl__executor *ex);
/* A pending index of ts to run on ex at a level no farther than allowed and below TL_ANY, the
 * most local first (Spark's dequeueTask: executor, host, no preference, rack), skipping those
 * blocked (NULL: none) says may not run on ex; false if none (at TL_ANY the caller takes the
 * topmost pending index that may run). The index stays pending: the caller takes it. *level
 * says where it came from. */
bool tl__locality_pick(struct tl_scheduler *s, const tl__taskset *ts, const tl__executor *ex,
                       tl_locality allowed, tl__index_blocked_fn *blocked, uint32_t *index,
                       tl_locality *level);
/* Whether ts certainly launches nothing in the running offer round and leaves its delay
 * scheduling as it is: it waits at PROCESS_LOCAL or NODE_LOCAL with time left, nothing without
 * preferences is pending, and no executor or host it prefers was offered (their places carry
 * the round's number). Its turn then only records a rejection. O(its places), and false when
 * it has more places than the round has slots. */
bool tl__locality_dormant(struct tl_scheduler *s, const tl__taskset *ts, size_t nslots);
/* The levels ts may launch at, bit (1 << tl_locality), most local first (TL_NO_PREF alone
 * without preferences). */
unsigned tl__locality_levels(const tl__taskset *ts);
/* ts (with preferences) turned down an offer for locality in the running round. */
void tl__locality_rejected(tl__taskset *ts);
/* The running offer round offers ex: its place and its host's carry the round's number (what
 * tl__locality_dormant looks for). */
void tl__locality_offered(struct tl_scheduler *s, const tl__executor *ex);
/* The level index would run at on ex. */
tl_locality tl__locality_of(struct tl_scheduler *s, const tl__taskset *ts, uint32_t index,
                            const tl__executor *ex);
/* tl_tick's part: a revive_offers when some task set's wait ran out since the last tick; ns
 * until the next one (TL_TICK_NEVER if none). */
uint64_t tl__locality_tick(struct tl_scheduler *s, uint64_t now);
uint64_t tl__locality_next(struct tl_scheduler *s, uint64_t now);
/* tl_check's part: places, the executors' and hosts' pointers to them, and every task set's
 * locality block. */
int tl__locality_check(tl__checker *c);

/* ---------------------------------------------------------------------------------------------
 * Exclude on failure (exclude.c): Spark's TaskSetExcludelist (per task set) and HealthTracker
 * (application level), and the abort of task sets no executor may run (SPARK-22148). All its
 * records are one size and private to exclude.c; the rest of the library sees these functions,
 * the per-record fields marked "exclude.c", and its state (tl__exclude_state, with the
 * scheduler, which holds it).
 * ------------------------------------------------------------------------------------------- */

/* A task set exclusion finds unschedulable, for the caller to abort (tl__taskset_abort with
 * TL__FAIL_UNSCHEDULABLE, index, 0 failures and the message of its latest counted failure):
 * exclusion decides, the task set layer aborts. */
typedef struct tl__exclude_abort {
  struct tl__taskset *ts;
  uint32_t index;
  tl__str *msg;
  const char *static_msg;
} tl__exclude_abort;

/* Records one counted failure may need (task set, executor, host, and the index on both). */
#define TL__EXCLUDE_RECORDS_PER_FAILURE 5

void tl__exclude_init(struct tl_scheduler *s);
/* Frees the application-level records and the executors' failure lists (tl_scheduler_free,
 * after the task sets). */
void tl__exclude_destroy(struct tl_scheduler *s);
/* Records a counted failure of index on ex (the one that ran it) would allocate now: 0 when
 * exclude_on_failure is off. */
size_t tl__exclude_records_for(struct tl_scheduler *s, const tl__taskset *ts,
                               const tl__executor *ex, uint32_t index);
/* The same for every attempt that a loss of ex with reason would end as a counted failure. */
size_t tl__exclude_records_for_loss(struct tl_scheduler *s, const tl__executor *ex,
                                    const tl_loss_reason *reason);
/* Makes n spare records available to the running call (before it changes anything); TL_ENOMEM.
 * The call ends with tl__exclude_unreserve, on success and failure alike. */
int tl__exclude_reserve(struct tl_scheduler *s, size_t n);
void tl__exclude_unreserve(struct tl_scheduler *s);
/* A counted failure of index, run on ex, in a task set that is not zombie: updates the task
 * set's exclusions (Spark's updateExcludedForFailedTask). Takes reserved records. */
void tl__exclude_task_failed(struct tl_scheduler *s, tl__taskset *ts, const tl__executor *ex,
                             uint32_t index, tl__str *msg, const char *static_msg);
/* ex or its host is excluded for the whole task set. */
bool tl__exclude_offer_blocked(struct tl_scheduler *s, const tl__taskset *ts,
                               const tl__executor *ex);
/* index may not run on ex or on ex's host. */
bool tl__exclude_task_blocked(struct tl_scheduler *s, const tl__taskset *ts, uint32_t index,
                              const tl__executor *ex);
/* ex or its host is excluded for the application: its offers launch nothing. */
static inline bool tl__exclude_app_blocked(const tl__executor *ex) {
  return ex->x_excluded || (ex->host != NULL && ex->host->x_excluded);
}
/* The most task sets the end of an offer round may find unschedulable (its caller reserves
 * TL__TASKSET_ABORT_EVENTS for each). */
size_t tl__exclude_abort_candidates(const struct tl_scheduler *s);
/* The end of a successful offer round that launched `launched` attempts: clears the
 * unschedulable timers, or, when nothing launched, looks at the task sets with exclusions and
 * queues those no executor may run while none is idle; the caller takes each with
 * tl__exclude_take_abort (counted there) and aborts it. */
void tl__exclude_after_round(struct tl_scheduler *s, size_t launched);
bool tl__exclude_take_abort(struct tl_scheduler *s, tl__exclude_abort *out);
/* tl_tick's aborts: the first task set whose unschedulable deadline came at now (ts and index
 * filled; timers of task sets gone zombie meanwhile are stopped on the way), or false. Once the
 * caller has room for the abort's events, tl__exclude_aborting stops its timer, counts it and
 * fills the message. */
bool tl__exclude_due_abort(struct tl_scheduler *s, uint64_t now, tl__exclude_abort *out);
void tl__exclude_aborting(struct tl_scheduler *s, tl__exclude_abort *ab);
/* A task set is being released: moves its failures to the application level if it succeeded
 * (Spark's updateExcludedForSuccessfulTaskSet; allocates nothing), then frees its records. */
void tl__exclude_taskset_released(struct tl_scheduler *s, tl__taskset *ts);
/* Frees a task set's records without any of that (tl_scheduler_free). */
void tl__exclude_taskset_free(struct tl_scheduler *s, tl__taskset *ts);
/* An executor was registered: its application-level flags, and no unschedulable timer goes on. */
void tl__exclude_executor_added(struct tl_scheduler *s, tl__executor *ex);
/* An executor's loss began: its application-level failures are dropped (handleRemovedExecutor). */
void tl__exclude_executor_removed(struct tl_scheduler *s, tl__executor *ex);
/* Runs the application-level expiries due at now (the unschedulable aborts are
 * tl__exclude_due_abort's). */
void tl__exclude_tick(struct tl_scheduler *s, uint64_t now);
uint64_t tl__exclude_next(const struct tl_scheduler *s, uint64_t now);
/* Inspection: invariants and memory of the records, every string they hold (for the
 * reference-count balance), the stats, and a task set's text. */
int tl__exclude_check(tl__checker *c);
void tl__exclude_each_str(tl__checker *c, tl__str_fn *fn);
void tl__exclude_stats(const struct tl_scheduler *s, tl_stats *out);
void tl__exclude_explain(struct tl_scheduler *s, const tl__taskset *ts,
                         void (*line)(void *ud, const char *text), void *ud);

/* ---------------------------------------------------------------------------------------------
 * Speculation (speculation.c): the median heap of run times and what is slow.
 * ------------------------------------------------------------------------------------------- */

/* Records the run time of an index's first success in the median heap. */
void tl__speculation_record(tl__taskset *ts, uint64_t duration);
/* The bytes of a bigger heap that a FINISHED update of a needs before its run time can be
 * recorded, or 0 when there is room (or nothing to record). The caller allocates them before it
 * changes anything and hands them to tl__speculation_grow once nothing can fail. */
size_t tl__speculation_room(const tl__taskset *ts, const tl__attempt *a);
/* Moves the heap into room (bytes long, as tl__speculation_room said), freeing its old block. */
void tl__speculation_grow(struct tl_scheduler *s, tl__taskset *ts, uint64_t *room, size_t bytes);
/* Frees the heap's own block, if it has one (a task set going away). */
void tl__speculation_free(struct tl_scheduler *s, tl__taskset *ts);
/* How the speculation check judges one task set's running attempts (tl__speculation_rule). */
typedef struct tl__spec_rule {
  uint64_t threshold; /* a run longer than this is slow (0 like any other: then every attempt
                         that has run at all is) */
  uint64_t median;    /* the median run time (the decommission rule's estimate of a run) */
  bool custom;        /* threshold is speculation_task_duration_threshold_ns: not enough of the
                         task set succeeded, and its tasks fit on one executor */
  bool decommission;  /* the decommission rule applies: decommission_kill_interval_ns is set
                         and the threshold is the median's */
} tl__spec_rule;
/* One check's memory of the largest live executor of a profile (tl__speculation_rule fills it
 * the first time a task set of that profile needs it; zero it before the check). */
typedef struct tl__spec_cores {
  bool known;
  uint32_t profile;
  uint32_t cores; /* 0: no live executor of that profile */
} tl__spec_cores;
/* Why an attempt is slow (tl__speculation_slow), as tl_explain_taskset names it. */
enum {
  TL__SLOW_NOT = 0,
  TL__SLOW_MEDIAN = 1,      /* ran longer than multiplier x the median (or the minimum run) */
  TL__SLOW_THRESHOLD = 2,   /* ran longer than speculation_task_duration_threshold_ns */
  TL__SLOW_DECOMMISSION = 3 /* its executor is to be killed before it would end */
};
/* Whether ts is looked at by the speculation check, and if so in *rule how; and whether (and
 * why: TL__SLOW_*) attempt a of ts is slow at now under that rule. */
bool tl__speculation_rule(const struct tl_scheduler *s, const tl__taskset *ts, tl__spec_rule *rule,
                          tl__spec_cores *cores);
int tl__speculation_slow(const struct tl_scheduler *s, const tl__taskset *ts, const tl__attempt *a,
                         const tl__spec_rule *rule, uint64_t now);
/* The rule's part alone (run time, decommission), whatever the state of a's index: why an
 * attempt is or was found slow (tl_explain_taskset). */
int tl__speculation_why(const struct tl_scheduler *s, const tl__attempt *a,
                        const tl__spec_rule *rule, uint64_t now);
/* ns until the next speculation check (TL_TICK_NEVER: none, or nothing runs). */
uint64_t tl__speculation_next(const struct tl_scheduler *s, uint64_t now);

/* ---------------------------------------------------------------------------------------------
 * Task sets (taskset.c).
 * ------------------------------------------------------------------------------------------- */

int tl__submit(struct tl_scheduler *s, const tl_taskset_desc *d, tl_taskset_id *out);
int tl__kill_task(struct tl_scheduler *s, tl_tid tid, bool interrupt, const char *reason);
int tl__kill_stage(struct tl_scheduler *s, uint32_t stage_id, bool interrupt, const char *reason);
int tl__cancel_stage(struct tl_scheduler *s, uint32_t stage_id, const char *reason);
/* tl_cancel_tag (cancel true) and tl_kill_tag: every task set holding the tag of len bytes. */
int tl__tag_cancel(struct tl_scheduler *s, const char *tag, size_t len, bool cancel, bool interrupt,
                   const char *reason, size_t *ntasksets);
int tl__partition_completed(struct tl_scheduler *s, uint32_t stage_id, uint32_t index);
/* Frees a task set and whatever it still holds, without events (tl_scheduler_free). */
void tl__taskset_destroy(struct tl_scheduler *s, tl__taskset *ts);
/* Takes index i (which must be pending) off the pending stack. */
void tl__taskset_take_pending(struct tl_scheduler *s, tl__taskset *ts, uint32_t i);
/* Takes the topmost pending index that may run on ex (Spark's
 * dequeueTaskFromList skips excluded ones); false when every pending index is excluded there. */
bool tl__taskset_take_unblocked(struct tl_scheduler *s, tl__taskset *ts, const tl__executor *ex,
                                uint32_t *index);
/* Aborts a task set (taskset_failed with why, index, failures and the message) and releases it
 * if nothing of it runs: TL__TASKSET_ABORT_EVENTS. */
#define TL__TASKSET_ABORT_EVENTS 2 /* taskset_failed, taskset_released */
void tl__taskset_abort(struct tl_scheduler *s, tl__taskset *ts, uint8_t why, uint32_t index,
                       uint32_t failures, tl__str *msg, const char *static_msg);
/* The end of an attempt: unlinks it from its task set, frees it, updates the index, queues
 * task_ended (and kill_task of the other copy, or taskset_failed, and taskset_released, as they
 * follow): at most TL__ATTEMPT_ENDED_EVENTS. It may ask for revive_offers (s->revive_wanted),
 * which the transition pushes once at its end (TL__REVIVE_EVENTS). The attempt must already be
 * out of the scheduler's indexes (tl__cleanup_task_state, or unfrozen). msg may be NULL; the
 * event takes its own reference. */
#define TL__ATTEMPT_ENDED_EVENTS 3 /* task_ended; kill_task or taskset_failed; taskset_released */
void tl__attempt_ended(struct tl_scheduler *s, tl__attempt *a, tl_end_kind kind, bool counts,
                       tl__str *msg, const char *static_msg, const tl_update *u, tl__output *out);
/* Whether a FINISHED update of a would leave a map output to remember (so the caller allocates
 * a tl__output before it changes anything and passes it to tl__attempt_ended). */
bool tl__taskset_wants_output(const tl__taskset *ts, const tl__attempt *a);
/* An executor's loss: its map outputs of active task sets are lost, their indices pending again
 * (one task_ended TL_END_RESUBMITTED each: ex->noutputs events). */
void tl__outputs_resubmit(struct tl_scheduler *s, tl__executor *ex);
/* Speculation: taskset.c's part (speculation.c's is declared above). */
void tl__taskset_speculate(struct tl_scheduler *s, tl__taskset *ts, uint32_t index);
/* Takes a speculatable index whose copy may run on ex (no attempt of it was launched on ex's
 * host) at a level no farther than allowed, the most local first; false when there is none. */
bool tl__taskset_take_speculative(struct tl_scheduler *s, tl__taskset *ts, const tl__executor *ex,
                                  tl_locality allowed, uint32_t *index, tl_locality *level);
/* Reconciliation's adoption (membership.c decides): a attempt of index i of ts, its tid,
 * executor, attempt number, speculative flag, locality and launch time set, becomes the index's
 * copy in flight: the index leaves the pending stack (or the speculative stack, or it was not
 * on either: then the one copy in flight becomes its sibling), its attempts launched become
 * a->attempt + 1, and a joins the task set (tried: with speculation, the host record). Then the
 * caller links it (tl__attempt_link). */
void tl__taskset_adopt(struct tl_scheduler *s, tl__taskset *ts, tl__attempt *a, tl__tried *tried);
/* Counts a FINISHED update's result toward max_result_bytes: TL_END_SUCCESS, or
 * TL_END_RESULT_TOO_LARGE when the task set's results pass the limit with it. Spark's
 * canFetchMoreResults: every result counts, dropped ones too, so once a task set's results have
 * passed the limit every later one is dropped as well. Inline: every FINISHED update asks. */
static inline tl_end_kind tl__taskset_take_result(struct tl_scheduler *s, tl__taskset *ts,
                                                  size_t size) {
  ts->nresults++;
  ts->result_bytes = size > UINT64_MAX - ts->result_bytes ? UINT64_MAX : ts->result_bytes + size;
  if (ts->shuffle_map || s->cfg.max_result_bytes == 0 ||
      ts->result_bytes <= s->cfg.max_result_bytes)
    return TL_END_SUCCESS;
  return TL_END_RESULT_TOO_LARGE;
}
/* tl_check's part: map outputs, task sets and their index state, stacks and speculation arrays,
 * the queues (through tl__pools_check) and stages; running and frozen are the attempts the
 * executors' lists hold. And the strings of the hosts tried. */
int tl__tasksets_check(tl__checker *c, size_t running, size_t frozen);
void tl__tasksets_each_str(tl__checker *c, tl__str_fn *fn);

/* ---------------------------------------------------------------------------------------------
 * Transitions: membership (membership.c), offer rounds (offers.c), status updates (status.c),
 * and the tick (tick.c). Each reserves the events it makes before it changes anything.
 * ------------------------------------------------------------------------------------------- */

int tl__executor_add(struct tl_scheduler *s, const tl_executor_desc *d);
int tl__executor_lost(struct tl_scheduler *s, const char *id, const tl_loss_reason *reason);
int tl__executor_heartbeat(struct tl_scheduler *s, const char *id);
int tl__executor_decommission(struct tl_scheduler *s, const char *id, const char *message);
/* Restore (snapshot.c): a new executor record in a saved state, indexed by id (TL_EEXIST when
 * the id is taken), ALIVE and DECOMMISSIONING ones joined to their host and rack (TL_EINVAL:
 * the host is known with another rack); not on a timeline, no event, no place (locality's
 * restore sets places), no exclusion flag (exclusion's restore sets them); TL_ENOMEM. */
int tl__executor_restore_add(struct tl_scheduler *s, const char *id, size_t id_len,
                             const char *host, size_t host_len, const char *rack, size_t rack_len,
                             uint32_t cores, tl_executor_state state, tl__executor **out);
/* Restore (snapshot.c): an ALIVE or DECOMMISSIONING executor becomes RECOVERING, its attempts
 * frozen as in the first phase of a loss, with no event and no loss counted; its rack is kept
 * for tl__executor_reconcile. Allocates (the rack's name): TL_ENOMEM, nothing changed. */
int tl__executor_recover(struct tl_scheduler *s, tl__executor *ex);
/* tl_executor_reconcile's and tl_executor_reconcile_items's transition (their arguments
 * validated): the reported attempts are running[0 .. n) (tids only: nothing is adopted) or
 * items[0 .. n), whichever is not NULL. */
int tl__executor_reconcile(struct tl_scheduler *s, const char *id, const tl_tid *running,
                           const tl_reconcile_item *items, size_t n, tl_tid *unknown, size_t ucap,
                           size_t *nunknown);
/* Runs the executors' due deadlines (heartbeats, pending losses, recoveries, tombstones); returns
 * ns until the next one (see tl_tick), 0 when a loss could not get room for its events. */
uint64_t tl__executors_tick(struct tl_scheduler *s, uint64_t now);
uint64_t tl__executors_next_deadline(struct tl_scheduler *s, uint64_t now);

/* lens: the length of each offer's executor id, or NULL (then measured again). */
/* grants: the caller's array for the launches' grants (tl_resource_offers_grants), or NULL. */
int tl__resource_offers(struct tl_scheduler *s, const tl_offer *offers, size_t noffers,
                        const size_t *lens, tl_launch *out, size_t cap, size_t *nout,
                        tl_grant *grants, size_t gcap, size_t *ngrants);
#define TL__ID_LENS 16 /* offers whose id lengths tl_resource_offers passes on */
/* Offer shuffle (shuffle.c): tl__resource_offers over the offers in the order the scheduler's
 * sequence draws next (offer_shuffle on; same arguments). Launches name the caller's offers. A
 * round that fails leaves the sequence where it was. */
int tl__shuffle_offers(struct tl_scheduler *s, const tl_offer *offers, size_t noffers,
                       const size_t *lens, tl_launch *out, size_t cap, size_t *nout,
                       tl_grant *grants, size_t gcap, size_t *ngrants);
/* tl_check's part: the sequence's position is 0 while the shuffle is off. */
int tl__shuffle_check(tl__checker *c);
int tl__status_update(struct tl_scheduler *s, const char *executor_id, size_t id_len, tl_tid tid,
                      const tl_update *u);
/* The two halves of tl__status_update, for a batch: the executor's checks (TL_ENOENT, TL_EGONE)
 * once, then each update on it (its own code; TL_ENOMEM leaves it unapplied). */
int tl__status_executor(struct tl_scheduler *s, const char *executor_id, size_t id_len,
                        tl__executor **out);
int tl__status_apply(struct tl_scheduler *s, tl__executor *ex, tl_tid tid, const tl_update *u);

/* The time to the next deadline of every part (what tl_tick would answer now), under the lock:
 * ns from now, 0 when one is due, TL_TICK_NEVER when there is none (tick.c). */
uint64_t tl__next_deadline(struct tl_scheduler *s, uint64_t now);
/* Runs every part's deadlines due at now and answers the same (tick.c). */
uint64_t tl__tick_run(struct tl_scheduler *s, uint64_t now);

/* ---------------------------------------------------------------------------------------------
 * Entry: lifetime, the clock and the driver's hook (scheduler.c), and delivery (dispatch.c).
 * The journal's lines and formats are in journal.h.
 * ------------------------------------------------------------------------------------------- */

/* Lifetime, for tl_scheduler_restore (scheduler.c): a new empty scheduler as tl_scheduler_new
 * makes it (cfg validated by tl__config_valid) but without its journal's first lines, which
 * tl__scheduler_start writes (with a `restore` line when restored is set); and the disposal of a
 * scheduler that was never handed out: everything freed, no callback. */
bool tl__config_valid(const tl_config *cfg);
int tl__scheduler_create(const tl_config *cfg, const tl_callbacks *cb, tl_scheduler **out);
void tl__scheduler_start(struct tl_scheduler *s, bool restored);
void tl__scheduler_discard(struct tl_scheduler *s);
/* The clock's reading (user code: never under the lock). */
uint64_t tl__clock_read(const struct tl_scheduler *s);

/* The wake hook (scheduler.c). tl__driver_attach attaches a driver (TL_EBUSY when one is, or
 * the scheduler is being freed): from then on every mutating call that moves the next deadline
 * earlier than the one the driver's timer is armed for records it as armed and calls wake(driver)
 * under the lock; with deferred delivery, a call that queues something to deliver when nothing
 * was waiting for a wake-up calls ready(driver) under the lock (instead of events_ready).
 * tl__tick_driver is tl_tick for the driver: it records the answer as armed in the same lock
 * section that computes it, while that driver is still attached. tl__driver_detach makes the
 * pending wake-up, if one is owed, through events_ready. */
int tl__driver_attach(struct tl_scheduler *s, void (*wake)(void *ud), void (*ready)(void *ud),
                      void *driver);
void tl__driver_detach(struct tl_scheduler *s);
uint64_t tl__tick_driver(struct tl_scheduler *s, const void *driver);

/* dispatch_state: some thread is delivering; more was queued for it meanwhile. */
enum { TL__DISPATCHING = 1u, TL__MORE = 2u };
/* Takes the scheduler's lock, and drops what the last delivered batch still holds. Every taking
 * of the lock but the dispatcher's own goes through here. */
void tl__lock(struct tl_scheduler *s);
/* Whether a thread is delivering events (the lock held). */
bool tl__dispatching(struct tl_scheduler *s);
/* Takes the lock's end of a public call: releases the lock and, unless another thread (or this
 * one, further up the stack) is dispatching, delivers queued events until the queue is empty.
 * Returns true if it delivered any event (journal lines do not count). */
bool tl__unlock_and_dispatch(struct tl_scheduler *s);
/* tl_dispatch's work with the lock held and nobody dispatching (tl_scheduler_free's use):
 * releases the lock, delivers the queue and returns how many events it delivered. */
size_t tl__dispatch_locked(struct tl_scheduler *s);

/* ---------------------------------------------------------------------------------------------
 * Snapshots (snapshot.c; docs/snapshot.md). snapshot.c frames the image and writes the records
 * every module can see; a module with private records writes and reads its own part through
 * these. Records are named by key (an executor by id, a task set by id, a host by name), never
 * by address. A restore function reads exactly what its save wrote, validates every value
 * before it uses it, and fails with TL_ENOMEM (an allocation) or TL_ESNAPSHOT (the bytes are
 * not a part its save could have written); on failure it leaves its records so that freeing the
 * scheduler (tl__taskset_destroy, tl__exclude_destroy, ...) frees whatever it allocated.
 * ------------------------------------------------------------------------------------------- */

/* Locality (locality.c). Per task set: what ts->loc holds (ts->loc NULL included), written
 * after the task set's own record. Restored after that record: ts is in tasksets_by_id with
 * its index state, pending stack and zombie flag as saved (its attempts and outputs are not
 * there yet), and every executor is registered in its saved state (hosts and racks joined).
 * Sets ts->loc (NULL when it had none) and links it as a submission would (places, and
 * locality_tasksets while not zombie), with the delay-scheduling state as saved. */
void tl__locality_save(struct tl_scheduler *s, const tl__taskset *ts, tl__wbuf *w);
int tl__locality_restore(struct tl_scheduler *s, tl__taskset *ts, tl__rbuf *r);
/* The scheduler-wide part (locality_ticked and what else is not per task set), written after
 * every task set and restored after every task set, attempt and output. */
void tl__locality_save_global(struct tl_scheduler *s, tl__wbuf *w);
int tl__locality_restore_global(struct tl_scheduler *s, tl__rbuf *r);

/* Exclusion (exclude.c): all of exclude_on_failure's state (the application-level records,
 * every task set's xset, executors' failure lists and flags, hosts' flags), restored after
 * every executor, task set, attempt and output. Writes nothing of note when the option is off
 * (the config fingerprint covers it). */
void tl__exclude_save(struct tl_scheduler *s, tl__wbuf *w);
int tl__exclude_restore(struct tl_scheduler *s, tl__rbuf *r);

#endif /* TL_INTERNAL_H */
