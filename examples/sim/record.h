/* The record of one tl-sim run, in virtual time (docs/sim.md): the executors, one slice per
 * attempt on an executor's core, marks for losses and phase changes, and samples of the
 * ledger's map sizes. The simulator appends to it as it runs; the writers read it at the end:
 * trace.c (Chrome Trace Event JSON, for Perfetto) and svg.c (a self-contained SVG timeline).
 *
 * Times are the simulator's virtual nanoseconds from 0. Every append copies what it is given
 * (strings included) and returns 0, or -1 when out of memory (the record is then unchanged).
 */
#ifndef TL_SIM_RECORD_H
#define TL_SIM_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define SIM_NAME_MAX 256     /* executor ids, hosts and racks: 1..255 bytes, as the library's */
#define SIM_TEXT_MAX 128     /* a mark's text: 0..127 bytes (longer is cut) */
#define SIM_NEVER UINT64_MAX /* an executor that never left: its gone_ns */
#define SIM_RES_NAME_MAX 16  /* a resource's name ("gpu"): 0..15 bytes (longer is cut) */
#define SIM_ADDRS_MAX 64     /* the addresses an attempt held, comma-separated: 0..63 bytes */

/* One executor: a lane of `cores` rows in the pictures. */
typedef struct sim_exec {
  char id[SIM_NAME_MAX];           /* "exec-12" */
  char host[SIM_NAME_MAX];         /* "host-3" */
  char rack[SIM_NAME_MAX];         /* "rack-1", or "" for none */
  uint32_t cores;                  /* rows of its lane */
  uint64_t joined_ns;              /* when it registered */
  uint64_t gone_ns;                /* when the ledger removed it (or it was stopped); SIM_NEVER */
  char resource[SIM_RES_NAME_MAX]; /* the resource it declared beyond cores ("gpu"), or "" */
  uint32_t naddresses;             /* that resource's addresses (0 for none) */
} sim_exec;

/* How an attempt ended: its slice's colour. */
typedef enum sim_outcome {
  SIM_OUT_SUCCESS = 0,      /* FINISHED, its result taken */
  SIM_OUT_FAILED = 1,       /* FAILED: an exception */
  SIM_OUT_FETCH_FAILED = 2, /* FAILED: a shuffle input was missing */
  SIM_OUT_KILLED = 3,       /* KILLED (another copy won, a cancelled stage) */
  SIM_OUT_LOST = 4,         /* ended by its executor's loss */
  SIM_OUT_ZOMBIE = 5,       /* FINISHED after its task set had become a zombie */
  SIM_OUT_COUNT
} sim_outcome;

/* One attempt: it held `core` of executor `exec` from start_ns to end_ns. */
typedef struct sim_slice {
  uint32_t exec;                   /* index into sim_record.execs */
  uint32_t core;                   /* 0 .. cores - 1: the row it held */
  uint64_t start_ns;               /* launched */
  uint64_t end_ns;                 /* its end reached the ledger (>= start_ns) */
  uint64_t tid;                    /* the ledger's tid */
  uint32_t job;                    /* the simulator's job number, from 0 */
  uint32_t stage_id;               /* as submitted */
  uint32_t stage_attempt;          /* 0 for the first attempt of the stage */
  uint32_t index;                  /* the task's index in its task set */
  uint32_t attempt;                /* the attempt number of that index, from 0 */
  uint8_t outcome;                 /* a sim_outcome */
  uint8_t speculative;             /* 1: a speculative copy */
  uint8_t share;                   /* addresses held: 0 whole ones; k: 1/k of the one address */
  char resource[SIM_RES_NAME_MAX]; /* the resource it held beyond cores ("gpu"), or "" */
  char addresses[SIM_ADDRS_MAX];   /* the addresses of it it held, comma-separated ("0,2") */
} sim_slice;

/* What a mark says happened. */
typedef enum sim_mark_kind {
  SIM_MARK_JOINED = 0,            /* an executor registered (also a late one) */
  SIM_MARK_LOST_PENDING = 1,      /* first phase of a loss: TL_LOSS_PENDING */
  SIM_MARK_LOST = 2,              /* a loss with its real reason (second phase, or at once) */
  SIM_MARK_HEARTBEAT_TIMEOUT = 3, /* tl_tick removed a silent executor */
  SIM_MARK_PENDING_TIMEOUT = 4,   /* tl_tick ended a pending loss: no reason came */
  SIM_MARK_DECOMMISSION = 5,      /* decommissioning began */
  SIM_MARK_STAGE_SUBMITTED = 6,   /* a task set was submitted (exec: SIM_NO_EXEC) */
  SIM_MARK_STAGE_FAILED = 7,      /* taskset_failed */
  SIM_MARK_STAGE_RESUBMITTED = 8, /* a parent stage resubmitted after a fetch failure */
  SIM_MARK_TASKSET_RELEASED = 9,  /* taskset_released: the payload came back */
  SIM_MARK_JOB_DONE = 10,         /* a job succeeded or failed (the text says which) */
  SIM_MARK_COUNT
} sim_mark_kind;

#define SIM_NO_EXEC UINT32_MAX /* a mark about no executor */

typedef struct sim_mark {
  uint64_t t_ns;           /* when */
  uint32_t exec;           /* index into sim_record.execs, or SIM_NO_EXEC */
  uint8_t kind;            /* a sim_mark_kind */
  char text[SIM_TEXT_MAX]; /* what a person reads: "exited 137, caused by the app" */
} sim_mark;

/* The ledger's sizes at one moment (tl_stats_get), taken after every change of them. */
typedef struct sim_sample {
  uint64_t t_ns;
  uint32_t attempts_running;       /* tl_stats.attempts_running */
  uint32_t attempts_frozen;        /* tl_stats.attempts_frozen */
  uint32_t tasksets_active;        /* tl_stats.tasksets_active */
  uint32_t tasksets_zombie;        /* tl_stats.tasksets_zombie */
  uint32_t executors_alive;        /* tl_stats.executors_alive */
  uint32_t executors_pending_loss; /* tl_stats.executors_pending_loss */
  uint32_t tasks_pending;          /* tl_stats.tasks_pending */
} sim_sample;

typedef struct sim_record {
  sim_exec *execs;
  size_t nexecs, execs_cap;
  sim_slice *slices;
  size_t nslices, slices_cap;
  sim_mark *marks;
  size_t nmarks, marks_cap;
  sim_sample *samples;
  size_t nsamples, samples_cap;
  uint64_t end_ns; /* the run's last virtual moment (sim_record_finish) */
} sim_record;

void sim_record_init(sim_record *r);
void sim_record_free(sim_record *r);

/* Appends an executor; *index is its index for slices and marks. gone_ns starts SIM_NEVER. */
int sim_record_exec(sim_record *r, const char *id, const char *host, const char *rack,
                    uint32_t cores, uint64_t joined_ns, uint32_t *index);
/* Sets the resource executor `exec` declared beyond cores: its name and how many addresses. */
void sim_record_exec_resource(sim_record *r, uint32_t exec, const char *name, uint32_t naddresses);
/* Sets when executor `exec` went (the ledger removed it, or the run stopped it). */
void sim_record_exec_gone(sim_record *r, uint32_t exec, uint64_t gone_ns);
int sim_record_slice(sim_record *r, const sim_slice *s);
int sim_record_mark(sim_record *r, uint64_t t_ns, uint32_t exec, sim_mark_kind kind,
                    const char *text);
/* Appends a sample; one at the same time as the last replaces it (the latest sizes win). */
int sim_record_sample(sim_record *r, const sim_sample *s);
void sim_record_finish(sim_record *r, uint64_t end_ns);

/* The names used in the pictures and in their legends: "success", "lost", ...; "joined",
 * "lost (pending)", ... Never NULL. */
const char *sim_outcome_name(sim_outcome o);
const char *sim_mark_name(sim_mark_kind k);

/* Writers (trace.c, svg.c): 0, or -1 when writing failed (errno says why). */
int sim_trace_write(const sim_record *r, FILE *f);
int sim_svg_write(const sim_record *r, FILE *f);

#endif
