/* Exclude on failure's records (exclude.c; the header comment there describes each), private to
 * the two files of the module: exclude.c (the records' life, the offer-time checks, the
 * timelines, inspection) and exclude_snapshot.c (their image in a snapshot, and its restore).
 * Everything here runs under the scheduler's lock. */
#ifndef TL_EXCLUDE_H
#define TL_EXCLUDE_H

#include "checker.h"

#include <stdlib.h>
#include <string.h>

typedef struct tl__xfail {
  struct tl__xfail *next; /* the owner's other indices / failures */
  uint32_t index;         /* task index */
  uint32_t count;         /* task set: failures of index there (only grows) */
  uint64_t time;          /* task set: the latest failure; application: its expiry */
  uint32_t stage_id;      /* application: the task set it failed in */
  uint32_t stage_attempt;
} xfail;

typedef struct xhost {
  struct xhost *next;       /* the task set's other hosts */
  tl__str *names;           /* names of its first failing executor (host second); one ref */
  xfail *indices;           /* failures per index on the host */
  uint32_t nexcluded_execs; /* its executors excluded for the task set */
  bool excluded;            /* excluded for the task set */
} xhost;

typedef struct xexec {
  struct xexec *next; /* the task set's other executors */
  tl__str *names;     /* the executor's names; one ref */
  xhost *host;        /* its host's record in the same task set */
  xfail *failures;    /* failures per index */
  uint32_t nfailed;   /* length of failures: indices that failed here */
  bool excluded;      /* excluded for the task set */
} xexec;

struct tl__xset {
  tl__link on_scheduler;     /* s->x.tasksets */
  tl__link on_timer;         /* s->x.timers while timer */
  tl__taskset *ts;           /* its task set; the xset is freed with it */
  xexec *execs;              /* executors with counted failures */
  xhost *hosts;              /* their hosts */
  uint32_t nexcluded_execs;  /* execs excluded for the task set */
  uint32_t nexcluded_hosts;  /* hosts excluded for the task set */
  uint32_t nblocked;         /* (index, executor) and (index, host) pairs excluded */
  bool timer;                /* unschedulable: aborted at deadline unless something launches */
  uint32_t timer_index;      /* the task no executor may run, named by the abort */
  uint64_t deadline;         /* when */
  tl__str *latest_msg;       /* the latest counted failure's message (one ref), or NULL */
  const char *latest_static; /* or its static message */
};
typedef struct tl__xset xset;

typedef struct xnode {
  tl__link on_list;         /* s->x.nodes */
  tl__link on_timeline;     /* s->x.node_timeline while excluded */
  tl__str *names;           /* names of an executor of the node (host second); one ref */
  uint32_t nexcluded_execs; /* xapp records pointing here */
  bool excluded;            /* excluded for the application until expiry */
  uint64_t expiry;
} xnode;

typedef struct xapp {
  tl__link on_timeline; /* s->x.execs */
  tl__str *names;       /* the executor's names; one ref */
  xnode *node;          /* its node's record */
  uint64_t expiry;      /* excluded until then */
} xapp;

typedef union xrec {
  void *next_spare;
  xfail f;
  xhost h;
  xexec e;
  xset x;
  xnode n;
  xapp a;
} xrec;

static inline const char *host_of(const tl__str *names) { return tl__names_host(names); }
static inline const char *id_of(const tl__str *names) { return names->text; }

/* The records' primitives, for both files. */

static inline void *take_record(struct tl_scheduler *s) {
  void **r = s->x.spare;
  if (r == NULL) /* the call reserved too few: a bug, and writing on would be worse */
    abort();
  s->x.spare = *r;
  s->x.nspare--;
  memset(r, 0, sizeof(xrec));
  return r;
}

static inline void free_record(struct tl_scheduler *s, void *r) {
  tl__free(s, r, sizeof(xrec));
  s->x.nrecords--;
}

static inline xexec *find_exec(const xset *x, const char *id) {
  for (xexec *e = x->execs; e != NULL; e = e->next)
    if (strcmp(id_of(e->names), id) == 0)
      return e;
  return NULL;
}

static inline xhost *find_host(const xset *x, const char *host) {
  for (xhost *h = x->hosts; h != NULL; h = h->next)
    if (strcmp(host_of(h->names), host) == 0)
      return h;
  return NULL;
}

static inline xapp *find_app(struct tl_scheduler *s, const char *id) {
  for (tl__link *l = s->x.execs.next; l != &s->x.execs; l = l->next) {
    xapp *a = tl__container_of(l, xapp, on_timeline);
    if (strcmp(id_of(a->names), id) == 0)
      return a;
  }
  return NULL;
}

static inline xnode *find_node(struct tl_scheduler *s, const char *host) {
  for (tl__link *l = s->x.nodes.next; l != &s->x.nodes; l = l->next) {
    xnode *n = tl__container_of(l, xnode, on_list);
    if (strcmp(host_of(n->names), host) == 0)
      return n;
  }
  return NULL;
}

/* ALIVE or DECOMMISSIONING: the states that keep exclusion state (failure list, flag). A
 * PENDING_LOSS or RECOVERING executor had tl__exclude_executor_removed called (RECOVERING: by the
 * restore; it gets tl__exclude_executor_added when it reconciles), a tombstone is REMOVED. */
static inline bool alive(const tl__executor *ex) {
  return ex != NULL && (ex->state == TL_EXECUTOR_ALIVE || ex->state == TL_EXECUTOR_DECOMMISSIONING);
}

static inline size_t count_fails(const xfail *f) {
  size_t n = 0;
  for (; f != NULL; f = f->next)
    n++;
  return n;
}

/* Frees a task set's records (its executors', its hosts', their failures) and the xset. */
void tl__exclude_xset_free(struct tl_scheduler *s, xset *x);

#endif /* TL_EXCLUDE_H */
