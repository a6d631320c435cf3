/* The record of a tl-sim run (record.h): growable arrays, appended to by the simulator. */
#include "record.h"

#include <stdlib.h>
#include <string.h>

void sim_record_init(sim_record *r) { memset(r, 0, sizeof *r); }

void sim_record_free(sim_record *r) {
  free(r->execs);
  free(r->slices);
  free(r->marks);
  free(r->samples);
  sim_record_init(r);
}

/* Makes room for one more element of size `size` in *items (n used, *cap allocated). */
static int reserve(void **items, size_t n, size_t *cap, size_t size) {
  if (n < *cap)
    return 0;
  size_t next = *cap ? 2 * *cap : 64;
  if (next > SIZE_MAX / size)
    return -1;
  void *p = realloc(*items, next * size);
  if (!p)
    return -1;
  *items = p;
  *cap = next;
  return 0;
}

/* Copies s (NULL: "") into a buffer of len bytes, cut to fit. */
static void copy_name(char *dst, size_t len, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n >= len)
    n = len - 1;
  memcpy(dst, s ? s : "", n);
  dst[n] = '\0';
}

int sim_record_exec(sim_record *r, const char *id, const char *host, const char *rack,
                    uint32_t cores, uint64_t joined_ns, uint32_t *index) {
  if (r->nexecs >= SIM_NO_EXEC || reserve((void **)&r->execs, r->nexecs, &r->execs_cap,
                                          sizeof *r->execs) < 0)
    return -1;
  sim_exec *e = &r->execs[r->nexecs];
  copy_name(e->id, sizeof e->id, id);
  copy_name(e->host, sizeof e->host, host);
  copy_name(e->rack, sizeof e->rack, rack);
  e->cores = cores;
  e->joined_ns = joined_ns;
  e->gone_ns = SIM_NEVER;
  e->resource[0] = '\0';
  e->naddresses = 0;
  *index = (uint32_t)r->nexecs++;
  return 0;
}

void sim_record_exec_gone(sim_record *r, uint32_t exec, uint64_t gone_ns) {
  if (exec < r->nexecs)
    r->execs[exec].gone_ns = gone_ns;
}

void sim_record_exec_resource(sim_record *r, uint32_t exec, const char *name, uint32_t naddresses) {
  if (exec >= r->nexecs)
    return;
  copy_name(r->execs[exec].resource, sizeof r->execs[exec].resource, name);
  r->execs[exec].naddresses = naddresses;
}

int sim_record_slice(sim_record *r, const sim_slice *s) {
  if (reserve((void **)&r->slices, r->nslices, &r->slices_cap, sizeof *r->slices) < 0)
    return -1;
  r->slices[r->nslices++] = *s;
  return 0;
}

int sim_record_mark(sim_record *r, uint64_t t_ns, uint32_t exec, sim_mark_kind kind,
                    const char *text) {
  if (reserve((void **)&r->marks, r->nmarks, &r->marks_cap, sizeof *r->marks) < 0)
    return -1;
  sim_mark *m = &r->marks[r->nmarks++];
  m->t_ns = t_ns;
  m->exec = exec;
  m->kind = (uint8_t)kind;
  copy_name(m->text, sizeof m->text, text);
  return 0;
}

int sim_record_sample(sim_record *r, const sim_sample *s) {
  if (r->nsamples > 0 && r->samples[r->nsamples - 1].t_ns == s->t_ns) {
    r->samples[r->nsamples - 1] = *s;
    return 0;
  }
  if (reserve((void **)&r->samples, r->nsamples, &r->samples_cap, sizeof *r->samples) < 0)
    return -1;
  r->samples[r->nsamples++] = *s;
  return 0;
}

void sim_record_finish(sim_record *r, uint64_t end_ns) { r->end_ns = end_ns; }

const char *sim_outcome_name(sim_outcome o) {
  static const char *const names[SIM_OUT_COUNT] = {"success", "failed", "fetch failed",
                                                   "killed",  "lost",   "zombie success"};
  return (unsigned)o < SIM_OUT_COUNT ? names[o] : "unknown";
}

const char *sim_mark_name(sim_mark_kind k) {
  static const char *const names[SIM_MARK_COUNT] = {
      "joined",          "lost (pending)",   "lost",           "heartbeat timeout",
      "pending timeout", "decommissioning",  "stage submitted", "stage failed",
      "stage resubmitted", "task set released", "job done"};
  return (unsigned)k < SIM_MARK_COUNT ? names[k] : "unknown";
}
