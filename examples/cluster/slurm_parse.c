/* Reading Slurm's answers (slurm_parse.h) and mapping a finished job to a loss reason. The
 * mapping is the table of docs/slurm.md; keep the two together.
 */
#include "slurm_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_reader.h"

/* Reads an integer that later layouts wrap as {"set": true, "number": N}. */
static bool int_or_number(const json_doc *d, size_t i, int64_t *out) {
  if (i == JSON_NONE)
    return false;
  if (d->tok[i].type == JSON_OBJECT) {
    size_t set = json_get(d, i, "set");
    if (set != JSON_NONE && d->tok[set].type != JSON_TRUE)
      return false;
    return json_int(d, json_get(d, i, "number"), out);
  }
  return json_int(d, i, out);
}

/* A string, or the first string of an array of them (job_state became a list of flags). */
static void string_or_first(const json_doc *d, size_t i, char *buf, size_t cap) {
  buf[0] = '\0';
  if (i != JSON_NONE && d->tok[i].type == JSON_ARRAY)
    i = json_first(d, i);
  if (i != JSON_NONE)
    (void)json_string(d, i, buf, cap);
}

static void read_exit_code(const json_doc *d, size_t i, slurm_job *j) {
  int64_t v;
  if (i == JSON_NONE)
    return;
  if (d->tok[i].type == JSON_NUMBER) {
    /* v0.0.38 (22.05): the raw wait status, as waitpid gives it. */
    if (!json_int(d, i, &v) || v < 0)
      return;
    j->has_exit = true;
    j->exit_status = (int)((v >> 8) & 0xff);
    j->signal = (int)(v & 0x7f);
    return;
  }
  if (d->tok[i].type != JSON_OBJECT)
    return;
  /* Later layouts: {"status": ..., "return_code": N or {number}, "signal": {"signal_id": N}}. */
  if (int_or_number(d, json_get(d, i, "return_code"), &v)) {
    j->has_exit = true;
    j->exit_status = (int)(v & 0xff);
  }
  size_t sig = json_get(d, i, "signal");
  if (sig != JSON_NONE && int_or_number(d, json_get(d, sig, "signal_id"), &v) && v > 0 && v < 128) {
    j->has_exit = true;
    j->signal = (int)v;
  }
}

int slurm_parse_squeue_json(const char *text, size_t len, void (*job)(void *ud, const slurm_job *j),
                            void *ud) {
  json_doc d;
  int rc = json_parse(&d, text, len);
  if (rc < 0)
    return rc;
  size_t jobs = json_get(&d, 0, "jobs");
  if (jobs == JSON_NONE || d.tok[jobs].type != JSON_ARRAY) {
    json_free(&d);
    return JSON_ESYNTAX;
  }
  for (size_t e = json_first(&d, jobs); e != JSON_NONE; e = json_next(&d, jobs, e)) {
    int64_t id;
    if (d.tok[e].type != JSON_OBJECT || !int_or_number(&d, json_get(&d, e, "job_id"), &id) ||
        id <= 0)
      continue; /* not a job we could ever have started */
    slurm_job j;
    memset(&j, 0, sizeof j);
    j.job_id = (uint64_t)id;
    string_or_first(&d, json_get(&d, e, "job_state"), j.state, sizeof j.state);
    string_or_first(&d, json_get(&d, e, "state_reason"), j.reason, sizeof j.reason);
    string_or_first(&d, json_get(&d, e, "name"), j.name, sizeof j.name);
    read_exit_code(&d, json_get(&d, e, "exit_code"), &j);
    job(ud, &j);
  }
  json_free(&d);
  return 0;
}

/* The value of " KEY=" (or KEY= at the start) in line[0..len), up to the next space, copied into
 * buf; false if absent. */
static bool kv(const char *line, size_t len, const char *key, char *buf, size_t cap) {
  size_t kl = strlen(key);
  for (size_t i = 0; i + kl + 1 <= len; i++) {
    if ((i == 0 || line[i - 1] == ' ' || line[i - 1] == '\n') && memcmp(line + i, key, kl) == 0 &&
        line[i + kl] == '=') {
      size_t s = i + kl + 1, e = s;
      while (e < len && line[e] != ' ' && line[e] != '\n')
        e++;
      size_t n = e - s < cap - 1 ? e - s : cap - 1;
      memcpy(buf, line + s, n);
      buf[n] = '\0';
      return true;
    }
  }
  return false;
}

int slurm_parse_scontrol(const char *text, size_t len, slurm_job *j) {
  memset(j, 0, sizeof *j);
  static const char unknown[] = "Invalid job id specified";
  for (size_t i = 0; i + sizeof unknown - 1 <= len; i++)
    if (memcmp(text + i, unknown, sizeof unknown - 1) == 0)
      return 1;
  char v[64];
  char *end;
  if (!kv(text, len, "JobId", v, sizeof v))
    return -1;
  unsigned long long id = strtoull(v, &end, 10);
  if (end == v || *end != '\0' || id == 0)
    return -1;
  j->job_id = id;
  if (!kv(text, len, "JobState", j->state, sizeof j->state))
    return -1;
  (void)kv(text, len, "Reason", j->reason, sizeof j->reason);
  (void)kv(text, len, "JobName", j->name, sizeof j->name);
  if (kv(text, len, "ExitCode", v, sizeof v)) {
    /* STATUS:SIGNAL */
    long st = strtol(v, &end, 10);
    if (end != v && *end == ':') {
      char *sig = end + 1;
      long sg = strtol(sig, &end, 10);
      if (end != sig && *end == '\0' && st >= 0 && st <= 255 && sg >= 0 && sg < 128) {
        j->has_exit = true;
        j->exit_status = (int)st;
        j->signal = (int)sg;
      }
    }
  }
  return 0;
}

bool slurm_state_is_final(const char *state) {
  static const char *const final[] = {"COMPLETED", "FAILED",        "CANCELLED",
                                      "TIMEOUT",   "OUT_OF_MEMORY", "NODE_FAIL",
                                      "PREEMPTED", "BOOT_FAIL",     "DEADLINE"};
  for (size_t i = 0; i < sizeof final / sizeof final[0]; i++)
    if (strcmp(state, final[i]) == 0)
      return true;
  return false;
}

void slurm_end_of(const slurm_job *j, bool requested, launcher_end *end, char *reason_buf,
                  size_t cap) {
  const char *st = j->state;
  end->requested = requested;
  end->exit_code = j->signal ? 128 + j->signal : j->exit_status;
  end->reason = reason_buf;
  if (requested) {
    /* Whatever Slurm says, the driver asked for this end: never the app's. */
    end->kind = TL_LOSS_KILLED;
    end->caused_by_app = false;
    snprintf(reason_buf, cap, "%s (cancelled by the driver)", st);
  } else if (strcmp(st, "COMPLETED") == 0 || strcmp(st, "FAILED") == 0) {
    if (!j->has_exit || (j->exit_status == 0 && j->signal == 0 && strcmp(st, "FAILED") == 0)) {
      /* FAILED with no code: Slurm could not run it at all (a launch failure). */
      end->kind = TL_LOSS_PROCESS_LOST;
      end->caused_by_app = false;
      snprintf(reason_buf, cap, "%s (%s), no exit code", st, j->reason);
    } else {
      end->kind = TL_LOSS_EXITED;
      end->caused_by_app = end->exit_code != 0;
      if (j->signal)
        snprintf(reason_buf, cap, "%s: killed by signal %d", st, j->signal);
      else
        snprintf(reason_buf, cap, "%s: exited %d", st, j->exit_status);
    }
  } else if (strcmp(st, "OUT_OF_MEMORY") == 0) {
    /* The executor's tasks used more memory than the job was given: the app's doing. Its exit
     * code is 137 (SIGKILL, what the OOM killer sends) whatever Slurm records: Slurm marks an
     * OOM end with its own SIG_OOM (253), shown as signal 125 (ExitCode=0:125), which is no
     * signal the executor got. */
    end->kind = TL_LOSS_EXITED;
    end->caused_by_app = true;
    end->exit_code = 128 + 9;
    snprintf(reason_buf, cap, "OUT_OF_MEMORY");
  } else {
    /* CANCELLED by someone else, TIMEOUT (the allocation's time limit, which is the
     * submitter's choice, not a task's fault), NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE: the
     * executor went for a reason outside the app. */
    end->kind = TL_LOSS_PROCESS_LOST;
    end->caused_by_app = false;
    if (strcmp(st, "CANCELLED") == 0)
      snprintf(reason_buf, cap, "CANCELLED (not by the driver)");
    else
      snprintf(reason_buf, cap, "%s", st);
  }
}
