/* What the slurm launcher reads from Slurm's commands, and what it makes of it: a job's state
 * from `squeue --json` (Slurm 22.05's OpenAPI v0.0.38 layout, and the later one where job_state
 * is an array and exit_code an object) or from one line of `scontrol show job -o ID`, and the
 * mapping of a finished job's state to a loss reason (docs/slurm.md has the table).
 */
#ifndef TLC_SLURM_PARSE_H
#define TLC_SLURM_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "launcher.h"

/* One job as Slurm described it. */
typedef struct slurm_job {
  uint64_t job_id; /* Slurm's job id */
  char state[32];  /* job_state / JobState: "RUNNING", "CANCELLED", "" if absent */
  char reason[64]; /* state_reason / Reason: "NonZeroExitCode", "None", ... */
  char name[64];   /* the job's name (tl-exec-ID for ours), truncated */
  bool has_exit;   /* whether exit_code / ExitCode was there */
  int exit_status; /* the exit status of the batch script (0..255) */
  int signal;      /* the signal that ended it, 0 if none */
} slurm_job;

/* Why slurm_parse_squeue_json refused a document, negative as everywhere in taskledger. Jansson
 * parses it (docs/slurm.md, "Reading squeue --json"); these say what kind of trouble it met. */
#define JSON_DEPTH_MAX 64    /* nesting deeper than this is refused (JSON_EDEPTH) */
#define JSON_ENOMEM (-1)     /* the document could not be held in memory */
#define JSON_ESYNTAX (-2)    /* not JSON, cut short, or no "jobs" array in an object */
#define JSON_EDEPTH (-3)     /* nesting deeper than JSON_DEPTH_MAX */
#define JSON_ETRAILING (-4)  /* something other than white space after the value */
#define JSON_ESTRING (-5)    /* a control character or bad escape in a string, \u0000 in a key */
#define JSON_ETOOBIG (-6)    /* a text of 2^32 bytes or more */
#define JSON_EDUPLICATE (-7) /* a key twice in one object: which one Slurm meant is unknown */
#define JSON_ERANGE (-8)     /* an integer beyond int64_t, or a number beyond a double */

/* Calls job(ud, j) for each job of an `squeue --json` document, in order. 0, or < 0 (a
 * JSON_E* code, or JSON_ESYNTAX for a document without a "jobs" array) with no call made.
 * text[0..len) may hold any bytes (no NUL needed); bytes that are not UTF-8 read as '?'.
 * Does no I/O; time and memory grow with len: Jansson's tree of the whole document, about five
 * times len, is held until it returns (about 2 s at 64 MiB: docs/slurm.md). Touches nothing but
 * its arguments (Jansson keeps no mutable state but its hash seed, set once with atomics): it may
 * run on any thread, on several at once for different texts; the launcher runs it on libuv's
 * thread pool, job called on that thread. */
int slurm_parse_squeue_json(const char *text, size_t len, void (*job)(void *ud, const slurm_job *j),
                            void *ud);

/* Reads one `scontrol show job -o ID` answer into *j. 0; 1 when scontrol said the job is not
 * known ("Invalid job id specified"); -1 for text it does not understand. */
int slurm_parse_scontrol(const char *text, size_t len, slurm_job *j);

/* Whether state is a final one: COMPLETED, FAILED, CANCELLED, TIMEOUT, OUT_OF_MEMORY,
 * NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE. Anything else (PENDING, RUNNING, COMPLETING,
 * SUSPENDED, REQUEUED, a state this code does not know) is not: the job is asked about again. */
bool slurm_state_is_final(const char *state);

/* The end of a finished job (slurm_state_is_final(j->state)) for the driver: kind,
 * caused_by_app, exit_code and reason (written into reason_buf, which end->reason then points
 * to); requested says whether the launcher had cancelled it for the driver. executor_id and
 * source are left to the caller. */
void slurm_end_of(const slurm_job *j, bool requested, launcher_end *end, char *reason_buf,
                  size_t cap);

#endif
