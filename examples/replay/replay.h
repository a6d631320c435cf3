/* Replays a taskledger call journal (docs/journal.md) into a fresh scheduler, call for call,
 * checking that every call returns what it returned when the journal was written and that
 * tl_check is clean after each one, and says whether the scheduler drained. tl-replay is its
 * command line; the tests use it to prove that journals replay to the same state.
 */
#ifndef TL_REPLAY_H
#define TL_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "taskledger.h"

/* What tlr_replay returns. */
enum {
  TLR_OK = 0,        /* every call as journaled, tl_check always clean, drained at the end */
  TLR_BROKEN = 1,    /* an invariant broke, or a call returned something else (diverged) */
  TLR_BAD_INPUT = 2, /* not a journal of a version this replayer reads, or a line it cannot parse */
  TLR_NOT_DRAINED = 3, /* all calls as journaled, but task sets or attempts remain at the end */
  TLR_NO_MEMORY = 4    /* the replay itself ran out of memory */
};

typedef struct tlr_options {
  FILE *trace; /* NULL, or where to print each call and its result */
} tlr_options;

typedef struct tlr_report {
  size_t lines;       /* lines read */
  size_t calls;       /* calls replayed */
  size_t skipped;     /* calls journaled as TL_ENOMEM: they changed nothing and are skipped */
  size_t bad_line;    /* the line after which the replay stopped (0: it did not stop) */
  char why[1024];     /* why it stopped, or what was retained */
  bool drained;       /* at the end (before free): no task set, no attempt running or frozen */
  tl_stats final;     /* tl_stats at the end (before free) */
  unsigned released;  /* task sets released during the replay */
  unsigned submitted; /* task sets submitted */
  unsigned lost;      /* executor losses begun during the replay (executor_lost) */
  unsigned removed;   /* and ended (executor_removed): fewer while a loss is pending */
  /* Demand events (added after 0.2.0; docs/api.md "Demand events"): the replay sets their
   * callbacks, so that a journal's replay can be shown to make the events its run made. */
  unsigned unschedulable; /* taskset_unschedulable events */
  unsigned schedulable;   /* taskset_schedulable events */
  unsigned demand_events; /* demand_changed events */
  tl_demand last_demand;  /* the last demand_changed's totals (zeros before one) */
} tlr_report;

/* Replays the journal read from in. options may be NULL. Returns one of TLR_*. */
int tlr_replay(FILE *in, const tlr_options *options, tlr_report *report);

/* The same for a journal held in memory (lines separated by newlines). */
int tlr_replay_text(const char *text, const tlr_options *options, tlr_report *report);

#endif /* TL_REPLAY_H */
