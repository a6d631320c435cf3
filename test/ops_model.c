/* The reference model's own code (its types are in ops_internal.h): the tables operations choose
 * from, verdicts and traces, the expected-event queue, and the helpers every prediction uses,
 * down to how an attempt ends and how an executor is lost.
 */
#include "ops_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char tlo_long_message[LONG_MESSAGE + 1];
char tlo_pool_255[256], tlo_pool_256[257]; /* the longest pool name, and one byte too long */
const char *const tlo_host_names[NHOSTS] = {"h0", "h1", "h2", "h3"};
/* Pool names an operation can give: 0 NULL (the default pool; invalid for tl_pool_add), 1-5
 * valid names, 6 and 7 invalid ones. */
const char *const tlo_pool_names[NPOOLNAMES] = {NULL, "default",    "a", "b",
                                                "c",  tlo_pool_255, "",  tlo_pool_256};

static const char *ev_name(ev_type t) {
  static const char *const names[] = {
      "task_started",     "task_ended",     "taskset_failed",
      "taskset_released", "executor_added", "executor_lost",
      "revive_offers",    "kill_task",      "speculative_task_submitted",
      "executor_removed"};
  return names[t];
}

void *tlo_xrealloc(void *p, size_t size) {
  void *q = realloc(p, size);
  if (q == NULL) {
    fprintf(stderr, "ops: out of memory\n");
    abort();
  }
  return q;
}

uint64_t tlo_add_sat(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* Whether a deadline (saturated by tlo_add_sat) has come at now: when the time reaches it, unless
 * it saturated at UINT64_MAX, which is past the end of time and never comes, not even then. */
bool tlo_due_at(uint64_t deadline, uint64_t now) {
  return deadline <= now && deadline != UINT64_MAX;
}

uint64_t tlo_splitmix64(uint64_t *x) {
  uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* ---------------------------------------------------------------------------------------------
 * Verdicts and traces.
 * ------------------------------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void
tlo_fail(tlo_run *r, const char *fmt, ...) {
  if (r->failed)
    return;
  r->failed = true;
  if (r->desc[0] == '\0' && r->op != NULL)
    tlo_op_describe(r->op, r->desc, sizeof r->desc);
  char what[1536];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(r->why, sizeof r->why, "op %zu (%s)%s: %s", r->op_index, r->desc,
           r->in_cb ? ", inside a callback" : "", what);
}

static FILE *trace_file(const tlo_run *r) { return r->opt.trace != NULL ? r->opt.trace : stdout; }

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void
tlo_trace(const tlo_run *r, int level, const char *fmt, ...) {
  if (r->opt.verbose < level)
    return;
  FILE *f = trace_file(r);
  for (int i = 0; i < r->in_cb; i++)
    fputs("    ", f);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
}

/* Names the call about to be made: a disagreement seen by its callbacks names it. */
void tlo_note_call(tlo_run *r, const char *desc) {
  if (!r->in_cb)
    snprintf(r->desc, sizeof r->desc, "%s", desc);
  /* With events traced, the call comes first and its answer after its events. */
  if (r->in_cb)
    tlo_trace(r, 2, "re-entrant %s", desc);
  else
    tlo_trace(r, 2, "#%zu %s", r->op_index, desc);
}

/* Counts the call described by desc and checks its answer. */
void tlo_expect_rc(tlo_run *r, const char *desc, int rc, int want) {
  r->calls++;
  if (r->in_cb)
    r->reentrant++;
  if (r->opt.verbose >= 2)
    tlo_trace(r, 2, "  -> %s", tl_err_name(rc));
  else
    tlo_trace(r, 1, "%s%s -> %s", r->in_cb ? "re-entrant " : "", desc, tl_err_name(rc));
  if (rc != want) {
    tlo_fail(r, "%s%s returned %s, the model expects %s", r->in_cb ? "re-entrant " : "", desc,
             tl_err_name(rc), tl_err_name(want));
    return;
  }
  if (want != TL_OK)
    r->errors++;
}

/* ---------------------------------------------------------------------------------------------
 * Expected events.
 * ------------------------------------------------------------------------------------------- */

mevent *tlo_push_ev(tlo_run *r, ev_type type) {
  if (r->qlen == r->qcap) {
    r->qcap = r->qcap ? 2 * r->qcap : 64;
    r->q = tlo_xrealloc(r->q, r->qcap * sizeof *r->q);
  }
  mevent *e = &r->q[r->qlen++];
  memset(e, 0, sizeof *e);
  e->type = type;
  return e;
}

char *tlo_dup_text(const char *s) {
  if (s == NULL)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = tlo_xrealloc(NULL, n);
  memcpy(d, s, n);
  return d;
}

void tlo_describe_ev(const tlo_run *r, const mevent *e, char *buf, size_t len) {
  const char *exid = e->ex != NULL ? e->ex->id : "-";
  switch (e->type) {
  case EV_STARTED:
    snprintf(buf, len, "task_started tid=%" PRIu64 " ts=%" PRIu64 " index=%u attempt=%u on %s %s%s",
             e->tid, r->ts[e->ts].id, e->index, e->attempt, exid,
             tl_locality_name((tl_locality)e->loc), e->spec ? " speculative" : "");
    break;
  case EV_ENDED:
    snprintf(buf, len,
             "task_ended tid=%" PRIu64 " ts=%" PRIu64 " index=%u attempt=%u on %s %s counts=%d "
             "msg=%.20s",
             e->tid, r->ts[e->ts].id, e->index, e->attempt, exid,
             tl_end_kind_name((tl_end_kind)e->kind), e->counts,
             e->text != NULL ? e->text : "(null)");
    break;
  case EV_FAILED:
    snprintf(buf, len, "taskset_failed ts=%" PRIu64 " \"%.60s\"", r->ts[e->ts].id, e->text);
    break;
  case EV_RELEASED:
    snprintf(buf, len, "taskset_released ts=%" PRIu64, r->ts[e->ts].id);
    break;
  case EV_ADDED:
    snprintf(buf, len, "executor_added %s on %s", exid, tlo_host_names[e->ex->host]);
    break;
  case EV_LOST:
    snprintf(buf, len, "executor_lost %s %s app=%d exit=%d msg=%.20s", exid,
             tl_loss_kind_name((tl_loss_kind)e->loss), e->app, e->exit_code,
             e->text != NULL ? e->text : "(null)");
    break;
  case EV_REMOVED:
    snprintf(buf, len, "executor_removed %s %s app=%d exit=%d msg=%.20s", exid,
             tl_loss_kind_name((tl_loss_kind)e->loss), e->app, e->exit_code,
             e->text != NULL ? e->text : "(null)");
    break;
  case EV_REVIVE:
    snprintf(buf, len, "revive_offers");
    break;
  case EV_KILL:
    snprintf(buf, len, "kill_task tid=%" PRIu64 " on %s interrupt=%d reason=%.20s", e->tid, exid,
             e->interrupt, e->text != NULL ? e->text : "(null)");
    break;
  case EV_SPEC:
    snprintf(buf, len, "speculative_task_submitted ts=%" PRIu64 " index=%u", r->ts[e->ts].id,
             e->index);
    break;
  }
}

/* The event a callback of this type must be; NULL (and the run failed) if it is not. */
mevent *tlo_pop_ev(tlo_run *r, ev_type type) {
  if (r->qhead == r->qlen) {
    tlo_fail(r, "unexpected %s: no event is expected", ev_name(type));
    return NULL;
  }
  mevent *e = &r->q[r->qhead];
  if (e->type != type) {
    char want[256];
    tlo_describe_ev(r, e, want, sizeof want);
    tlo_fail(r, "got %s, expected %s", ev_name(type), want);
    return NULL;
  }
  r->qhead++;
  if (r->opt.verbose >= 2) {
    char d[256];
    tlo_describe_ev(r, e, d, sizeof d);
    tlo_trace(r, 2, "  event %s", d);
  }
  return e;
}

void tlo_drop_events(tlo_run *r) {
  for (size_t i = 0; i < r->qlen; i++)
    free(r->q[i].text);
  r->qhead = r->qlen = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Model helpers.
 * ------------------------------------------------------------------------------------------- */

void tlo_clock_read(tlo_run *r) {
  if (r->raw_now > r->now)
    r->now = r->raw_now;
}

bool tlo_live_state(mx_state st) { return st == MX_ALIVE || st == MX_DECOM; }

matt *tlo_att_of(tlo_run *r, tl_tid tid) {
  return tid >= 1 && tid <= r->natt ? &r->att[tid - 1] : NULL;
}

/* An attempt in the tid index: launched, not ended, not frozen. */
matt *tlo_indexed(tlo_run *r, tl_tid tid) {
  matt *a = tlo_att_of(r, tid);
  return a != NULL && a->live && !a->frozen ? a : NULL;
}

static void inflight_remove(tlo_run *r, tl_tid tid) {
  size_t lo = 0, hi = r->ninflight;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r->inflight[mid] < tid)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo < r->ninflight && r->inflight[lo] == tid) {
    memmove(&r->inflight[lo], &r->inflight[lo + 1], (r->ninflight - lo - 1) * sizeof(tl_tid));
    r->ninflight--;
  }
}

/* Copies the in-flight tids matching a filter, in launch (tid) order. */
size_t tlo_inflight_where(tlo_run *r, tl_tid **out, const mexec *ex, int frozen, int ts) {
  tl_tid *v = tlo_xrealloc(NULL, (r->ninflight + 1) * sizeof *v);
  size_t n = 0;
  for (size_t i = 0; i < r->ninflight; i++) {
    matt *a = &r->att[r->inflight[i] - 1];
    if (ex != NULL && a->ex != ex)
      continue;
    if (frozen >= 0 && a->frozen != (frozen != 0))
      continue;
    if (ts >= 0 && a->ts != (uint32_t)ts)
      continue;
    v[n++] = r->inflight[i];
  }
  *out = v;
  return n;
}

void tlo_pend_push(mts *t, uint32_t i) {
  t->pend[t->npend++] = i;
  t->idx[i].pending = true;
}

void tlo_pend_remove(mts *t, uint32_t i) {
  for (uint32_t k = 0; k < t->npend; k++) {
    if (t->pend[k] == i) {
      memmove(&t->pend[k], &t->pend[k + 1], (t->npend - k - 1) * sizeof t->pend[0]);
      t->npend--;
      break;
    }
  }
  t->idx[i].pending = false;
}

void tlo_spec_push(mts *t, uint32_t i) {
  t->specs[t->nspecs++] = i;
  t->idx[i].spec = true;
}

void tlo_spec_remove(mts *t, uint32_t i) {
  for (uint32_t k = 0; k < t->nspecs; k++) {
    if (t->specs[k] == i) {
      memmove(&t->specs[k], &t->specs[k + 1], (t->nspecs - k - 1) * sizeof t->specs[0]);
      t->nspecs--;
      break;
    }
  }
  t->idx[i].spec = false;
}

/* A zombie launches nothing: its stacks are emptied and its map outputs forgotten (a zombie's
 * lost outputs are the DAG layer's business). */
void tlo_make_zombie(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  if (t->zombie)
    return;
  t->zombie = true;
  for (uint32_t i = 0; i < t->npend; i++)
    t->idx[t->pend[i]].pending = false;
  t->npend = 0;
  for (uint32_t i = 0; i < t->nspecs; i++)
    t->idx[t->specs[i]].spec = false;
  t->nspecs = 0;
  size_t w = 0;
  for (size_t i = 0; i < r->nouts; i++)
    if (r->outs[i].ts != k)
      r->outs[w++] = r->outs[i];
  r->nouts = w;
}

static void compose_reason(char *buf, const char *full) {
  size_t n = strlen(full);
  if (n < REASON_MAX) {
    memcpy(buf, full, n + 1);
  } else {
    memcpy(buf, full, REASON_MAX - 4);
    memcpy(buf + REASON_MAX - 4, "...", 4);
  }
}

/* Aborts once: failed, zombie, taskset_failed. index/failures for too many failures; msg the
 * failure's message or the cancel reason. */
void tlo_abort_ts(tlo_run *r, uint32_t k, abort_why why, uint32_t index, uint32_t failures,
                  const char *msg) {
  mts *t = &r->ts[k];
  if (t->failed)
    return;
  t->failed = true;
  tlo_make_zombie(r, k);
  char *full = tlo_xrealloc(NULL, LONG_MESSAGE + 256);
  if (why == ABORT_PAYLOAD)
    snprintf(full, LONG_MESSAGE + 256, "Payload not restored");
  else if (why == ABORT_CANCEL)
    snprintf(full, LONG_MESSAGE + 256, "Stage %u cancelled%s%s", t->stage, msg ? ": " : "",
             msg ? msg : "");
  else if (why == ABORT_UNSCHEDULABLE)
    snprintf(full, LONG_MESSAGE + 256,
             "Aborting task set %u.%u because task %u cannot run anywhere due to node and executor "
             "exclusion (exclude_on_failure); most recent failure: %s",
             t->stage, t->sattempt, index, msg ? msg : "(no message)");
  else if (why == ABORT_NOT_RETRIED)
    snprintf(full, LONG_MESSAGE + 256, "Task %u in stage %u.%u failed and is not retried: %s",
             index, t->stage, t->sattempt, msg ? msg : "(no message)");
  else if (why == ABORT_RESULT_SIZE)
    snprintf(full, LONG_MESSAGE + 256,
             "Total size of the results of %u tasks (%" PRIu64
             " bytes) is bigger than max_result_bytes (%" PRIu64 " bytes)",
             t->nresults, t->result_bytes, r->cfg.max_result_bytes);
  else
    snprintf(full, LONG_MESSAGE + 256,
             "Task %u in stage %u.%u failed %u times; most recent failure: %s", index, t->stage,
             t->sattempt, failures, msg ? msg : "(no message)");
  mevent *e = tlo_push_ev(r, EV_FAILED);
  e->ts = k;
  e->text = tlo_xrealloc(NULL, REASON_MAX);
  compose_reason(e->text, full);
  free(full);
}

void tlo_finish_if_drained(tlo_run *r, uint32_t k) {
  mts *t = &r->ts[k];
  if (!t->zombie || t->nrunning != 0 || t->released)
    return;
  /* A task set that succeeded takes its failures to the application level. */
  if (tlo_xon(r) && t->nxf > 0 && !t->failed && t->nsucceeded == t->ntasks)
    tlo_xf_taskset_succeeded(r, k);
  t->xdl = false;
  t->released = true;
  r->tasksets_released++;
  tlo_push_ev(r, EV_RELEASED)->ts = k;
}

void tlo_mark_successful(tlo_run *r, uint32_t k, uint32_t i) {
  mts *t = &r->ts[k];
  mindex *ix = &t->idx[i];
  if (ix->pending)
    tlo_pend_remove(t, i);
  if (ix->spec) /* a copy is not needed any more */
    tlo_spec_remove(t, i);
  ix->done = true;
  ix->failures = 0;
  if (++t->nsucceeded == t->ntasks)
    tlo_make_zombie(r, k);
}

/* The median heap: every first success's run time (Spark's MedianHeap keeps them all; an
 * index resubmitted after its output was lost succeeds for the first time again). */
static void record_duration(mts *t, uint64_t d) {
  if (t->ndur == t->durcap) {
    t->durcap = t->durcap ? 2 * t->durcap : 16;
    t->dur = tlo_xrealloc(t->dur, t->durcap * sizeof *t->dur);
  }
  uint32_t pos = t->ndur++;
  while (pos > 0 && t->dur[pos - 1] > d) {
    t->dur[pos] = t->dur[pos - 1];
    pos--;
  }
  t->dur[pos] = d;
}

/* The middle run time; with an even count the mean of the two middle ones, rounded down. */
uint64_t tlo_median_of(const mts *t) {
  if (t->ndur == 0)
    return 0;
  if (t->ndur % 2)
    return t->dur[t->ndur / 2];
  uint64_t a = t->dur[t->ndur / 2 - 1], b = t->dur[t->ndur / 2];
  return a / 2 + b / 2 + (a % 2 + b % 2) / 2;
}

/* ---------------------------------------------------------------------------------------------
 * Attempts ending and executors lost (one phase or both), and lookups by id, payload and stage.
 * ------------------------------------------------------------------------------------------- */

/* The one way an attempt ends (status update or phase two). The caller has taken it out of the
 * tid index (or unfrozen it) already. */
void tlo_attempt_ended(tlo_run *r, tl_tid tid, const mend *m) {
  matt *a = &r->att[tid - 1];
  uint32_t k = a->ts;
  mts *t = &r->ts[k];
  mindex *ix = &t->idx[a->index];
  t->nrunning--;
  ix->copies--;
  a->live = false;
  tlo_res_unbook(r, a); /* its addresses go back with it, on every path an attempt ends by */
  inflight_remove(r, tid);
  tl_tid sib = a->sibling; /* the other copy of the index, still in flight */
  if (sib != 0) {
    r->att[sib - 1].sibling = 0;
    a->sibling = 0;
  }

  /* Nothing counts in a zombie, for an index already done, from a copy that lost the race, or
   * in a barrier task set (its failure makes it zombie first, as in Spark's handleFailedTask). */
  bool counted = m->kind != TL_END_SUCCESS && m->kind != TL_END_RESULT_TOO_LARGE && m->counts &&
                 !t->zombie && !ix->done && !a->killed_by_other && !t->barrier;
  mevent *e = tlo_push_ev(r, EV_ENDED);
  e->tid = tid;
  e->ts = k;
  e->index = a->index;
  e->attempt = a->attempt;
  e->ex = a->ex;
  e->kind = m->kind;
  e->counts = counted;
  e->text = tlo_dup_text(m->msg);
  e->result = m->result;
  e->result_size = m->result_size;
  e->result_free = m->result_free;
  e->spec = a->spec;
  e->loc = a->loc;
  e->dropped = m->dropped;

  if (m->kind == TL_END_SUCCESS) {
    if (m->output) {
      if (r->nouts == r->outcap) {
        r->outcap = r->outcap ? 2 * r->outcap : 32;
        r->outs = tlo_xrealloc(r->outs, r->outcap * sizeof *r->outs);
      }
      r->outs[r->nouts++] = (mout){k, a->index, a->attempt, tid, a->spec, a->loc, a->ex};
    }
    if (!ix->done) {
      if (t->may_spec)
        record_duration(t, r->now - a->launched_at);
      tlo_mark_successful(r, k, a->index);
    }
    /* The other copy is asked to die; what it reports afterwards counts for nothing. */
    if (sib != 0 && !r->att[sib - 1].killed_by_other) {
      matt *other = &r->att[sib - 1];
      other->killed_by_other = true;
      r->f_lost_races++;
      mevent *kill = tlo_push_ev(r, EV_KILL);
      kill->tid = sib;
      kill->ex = other->ex;
      kill->interrupt = true;
      kill->text = tlo_dup_text("another attempt succeeded");
    }
  } else if (m->kind == TL_END_RESULT_TOO_LARGE) {
    r->f_too_large++;
    tlo_abort_ts(r, k, ABORT_RESULT_SIZE, 0, 0, NULL);
  } else {
    if (counted && tlo_xon(r)) /* recorded before it is counted, as Spark's handleFailedTask */
      tlo_xf_record(r, k, a, m->msg);
    if (m->kind == TL_END_FETCH_FAILED)
      tlo_make_zombie(r, k);
    else if (counted && m->no_retry) { /* retrying cannot help: aborted at once */
      ix->failures++;
      r->f_no_retry_aborts += !t->failed;
      tlo_abort_ts(r, k, ABORT_NOT_RETRIED, a->index, ix->failures, m->msg);
    } else if (counted &&
               ++ix->failures >= (t->maxf != 0 ? t->maxf : r->cfg.max_task_failures)) {
      r->f_own_limit_aborts += t->maxf != 0 && !t->failed;
      tlo_abort_ts(r, k, ABORT_FAILURES, a->index, ix->failures, m->msg);
    }
    if (t->barrier) /* the stage runs again as a whole */
      tlo_make_zombie(r, k);
    if (ix->spec && ix->copies == 0) /* its one copy is gone: a retry, not a copy */
      tlo_spec_remove(t, a->index);
    if (!t->zombie && !ix->done && !ix->pending && ix->copies == 0) {
      tlo_pend_push(t, a->index);
      r->revive_wanted = true;
    }
  }
  tlo_finish_if_drained(r, k);
}

void tlo_push_revive_if_wanted(tlo_run *r) {
  if (r->revive_wanted) {
    r->revive_wanted = false;
    tlo_push_ev(r, EV_REVIVE);
  }
}

void tlo_recovery_maybe_over(tlo_run *r) {
  if (!r->hold)
    return;
  bool work = false;
  for (unsigned sl = 0; sl < NSLOTS; sl++)
    for (uint32_t g = 0; g < r->ngen[sl]; g++)
      if (r->ex[sl][g].state == MX_RECOVERING)
        return;
  r->hold = false;
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released && !r->ts[k].zombie && r->ts[k].npend + r->ts[k].nspecs > 0)
      work = true;
  if (work)
    r->revive_wanted = true;
}

size_t tlo_count_tombstones(const tlo_run *r) {
  size_t n = 0;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++)
      n += r->ex[s][g].state == MX_REMOVED;
  return n;
}

static mexec *oldest_tombstone(tlo_run *r) {
  mexec *best = NULL;
  for (unsigned s = 0; s < NSLOTS; s++)
    for (uint32_t g = 0; g < r->ngen[s]; g++) {
      mexec *x = &r->ex[s][g];
      if (x->state == MX_REMOVED && (best == NULL || x->tomb_seq < best->tomb_seq))
        best = x;
    }
  return best;
}

/* What phase one of a loss and a restore's recovery share: the attempts in the tid index
 * frozen, the executor off its host, its application-level failures dropped, its place no
 * longer alive for locality; the state it goes to is st. */
static void freeze_attempts(tlo_run *r, mexec *x, mx_state st) {
  tl_tid *v;
  size_t n = tlo_inflight_where(r, &v, x, 0, -1);
  for (size_t i = 0; i < n; i++) {
    matt *a = &r->att[v[i] - 1];
    a->frozen = true;
    x->nrunning--;
    if (!a->end_held)
      x->free_cores += r->ts[a->ts].cpus;
    x->nfrozen++;
    r->ts[a->ts].nfrozen++;
  }
  free(v);
  r->host_live[x->host]--;
  x->nappf = 0; /* its application-level failures are dropped when its loss begins */
  x->was_decom = x->state == MX_DECOM;
  x->was_alive = x->state == MX_ALIVE;
  x->state = st;
  tlo_executor_changed(r, x);
  x->was_alive = false;
}

/* Phase one of a loss. A RECOVERING executor's attempts are frozen and it left its host at the
 * restore already: it only changes state (and leaves the recovery timeline). */
static void freeze(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, int exit_code,
                   const char *msg) {
  if (x->state == MX_RECOVERING) {
    x->state = MX_PENDING;
    x->rec_timed = false;
  } else {
    freeze_attempts(r, x, MX_PENDING);
  }
  x->pend_timed = r->cfg.pending_loss_timeout_ns != 0;
  if (x->pend_timed) {
    x->pend_deadline = tlo_add_sat(r->now, r->cfg.pending_loss_timeout_ns);
    x->pend_seq = ++r->seq;
  }
  r->executors_lost++;
  mevent *e = tlo_push_ev(r, EV_LOST);
  e->ex = x;
  e->loss = kind;
  e->app = app;
  e->exit_code = exit_code;
  e->text = tlo_dup_text(msg);
}

/* The map outputs an executor held, lost with it: each done index of an active shuffle-map task
 * set whose output was there is done no more, reported TL_END_RESUBMITTED with the writer's tid,
 * and pending again unless a copy of it still runs. */
static void resubmit_outputs(tlo_run *r, mexec *x) {
  size_t w = 0;
  for (size_t i = 0; i < r->nouts; i++) {
    mout o = r->outs[i];
    if (o.ex != x) {
      r->outs[w++] = o;
      continue;
    }
    mts *t = &r->ts[o.ts];
    mindex *ix = &t->idx[o.index];
    ix->done = false;
    t->nsucceeded--;
    mevent *e = tlo_push_ev(r, EV_ENDED);
    e->tid = o.tid;
    e->ts = o.ts;
    e->index = o.index;
    e->attempt = o.attempt;
    e->ex = x;
    e->kind = TL_END_RESUBMITTED;
    r->f_resubmitted++;
    e->text = tlo_dup_text("Its map output was lost with its executor; the task runs again.");
    e->spec = o.spec;
    e->loc = o.loc;
    if (ix->copies == 0) {
      tlo_pend_push(t, o.index);
      r->revive_wanted = true;
    }
  }
  r->nouts = w;
}

/* Phase two: the map outputs there are lost, every frozen attempt ends, the executor becomes a
 * tombstone (forgotten past max_tombstones), and executor_removed reports the loss's end with
 * the reason it ended with, before revive_offers. */
void tlo_remove_executor(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, int exit_code,
                         const char *msg) {
  bool app_fault = app && !x->was_decom && kind != TL_LOSS_KILLED && kind != TL_LOSS_DECOMMISSIONED;
  resubmit_outputs(r, x);
  tl_tid *v;
  size_t n = tlo_inflight_where(r, &v, x, 1, -1);
  for (size_t i = 0; i < n; i++) {
    matt *a = &r->att[v[i] - 1];
    a->frozen = false;
    x->nfrozen--;
    r->ts[a->ts].nfrozen--;
    r->failed_count++;
    mend m = {TL_END_EXECUTOR_LOST, app_fault && a->running, msg, NULL, 0, NULL, NULL, false,
              false};
    tlo_attempt_ended(r, v[i], &m);
  }
  free(v);
  mevent *e = tlo_push_ev(r, EV_REMOVED);
  e->ex = x;
  e->loss = kind;
  e->app = app;
  e->exit_code = exit_code;
  e->text = tlo_dup_text(msg);
  x->state = MX_REMOVED;
  x->pend_timed = false;
  x->rec_timed = false;
  x->tomb_when = r->now;
  x->tomb_seq = ++r->seq;
  while (tlo_count_tombstones(r) > r->cfg.max_tombstones) {
    mexec *old = oldest_tombstone(r);
    old->state = MX_NONE;
    old->none_checked = false;
  }
  tlo_push_revive_if_wanted(r);
}

/* Both phases, or the one that is due. */
void tlo_lose(tlo_run *r, mexec *x, tl_loss_kind kind, bool app, int exit_code, const char *msg) {
  if (tlo_live_state(x->state) || x->state == MX_RECOVERING) {
    freeze(r, x, kind, app, exit_code, msg);
    tlo_recovery_maybe_over(r);
  }
  if (kind != TL_LOSS_PENDING)
    tlo_remove_executor(r, x, kind, app, exit_code, msg);
  else
    tlo_push_revive_if_wanted(r);
}

/* A restore's recovery transition of an executor that was ALIVE or DECOMMISSIONING: frozen as
 * in phase one of a loss, silently (no event, executors_lost unchanged), with a recovery
 * deadline recovery_timeout_ns from now (none for 0), at the tail of the recovery timeline. */
void tlo_recover(tlo_run *r, mexec *x) {
  freeze_attempts(r, x, MX_RECOVERING);
  x->rec_timed = r->cfg.recovery_timeout_ns != 0;
  if (x->rec_timed) {
    x->rec_deadline = tlo_add_sat(r->now, r->cfg.recovery_timeout_ns);
    x->rec_seq = ++r->seq;
  }
  r->f_recovering++;
}

static int tid_cmp(const void *a, const void *b) {
  tl_tid x = *(const tl_tid *)a, y = *(const tl_tid *)b;
  return x < y ? -1 : x > y;
}

/* A successful reconciliation of RECOVERING x that reported tids[0 .. n) (any order,
 * duplicates): x back on its host (on the host's rack if another executor is live there, else
 * on its own as at registration), ALIVE (DECOMMISSIONING if it
 * was), a heartbeat now; its frozen attempts in launch order: the reported run on, the others
 * end TL_END_EXECUTOR_LOST uncounted; then a kill_task for each reported tid not frozen on x,
 * in increasing order, counted once; one revive_offers if an index became pending. Returns the
 * unknown tids (sorted, distinct; malloc'd) and their number in *nunknown. */
tl_tid *tlo_reconciled(tlo_run *r, mexec *x, const tl_tid *tids, size_t n, size_t *nunknown) {
  return tlo_reconciled_items(r, x, tids, n, NULL, 0, 0, NULL, 0, nunknown);
}

static bool tid_among(const tl_tid *v, size_t n, tl_tid tid) {
  for (size_t i = 0; i < n; i++)
    if (v[i] == tid)
      return true;
  return false;
}

tl_tid *tlo_reconciled_items(tlo_run *r, mexec *x, const tl_tid *tids, size_t n,
                             const tl_tid *bad, size_t nbad, tl_tid ended,
                             const tlo_adopt *adopt, size_t nadopt, size_t *nunknown) {
  tl_tid *sorted = tlo_xrealloc(NULL, (n + 1) * sizeof *sorted);
  if (n > 0)
    memcpy(sorted, tids, n * sizeof *sorted);
  qsort(sorted, n, sizeof *sorted, tid_cmp);
  size_t distinct = 0;
  for (size_t i = 0; i < n; i++)
    if (distinct == 0 || sorted[distinct - 1] != sorted[i])
      sorted[distinct++] = sorted[i];

  /* A host has one rack: one that registered there during the recovery decided it. */
  if (r->host_live[x->host] > 0 && r->host_rack[x->host] != x->rack) {
    x->rack = r->host_rack[x->host];
    r->f_reracks++;
  }
  r->host_live[x->host]++;
  r->host_rack[x->host] = x->rack;
  x->state = x->was_decom ? MX_DECOM : MX_ALIVE;
  x->was_decom = false;
  x->rec_timed = false;
  if (x->state == MX_ALIVE)
    tlo_pl_executor_added(r, x);
  x->was_alive = false;
  tlo_executor_changed(r, x);
  x->hb_when = r->now;
  x->hb_seq = ++r->seq;
  tlo_clear_deadlines(r, TLO_XF_CLEARED_ADD); /* as at registration: a task set may run there */

  tl_tid *frozen;
  size_t nf = tlo_inflight_where(r, &frozen, x, 1, -1);
  for (size_t i = 0; i < nf; i++) {
    matt *a = &r->att[frozen[i] - 1];
    mts *t = &r->ts[a->ts];
    a->frozen = false;
    x->nfrozen--;
    t->nfrozen--;
    if (bsearch(&frozen[i], sorted, distinct, sizeof *sorted, tid_cmp) != NULL &&
        !tid_among(bad, nbad, frozen[i])) {
      x->nrunning++;
      a->end_held = a->end_held || frozen[i] == ended;
      if (!a->end_held)
        x->free_cores -= t->cpus;
    } else {
      r->failed_count++;
      r->reconcile_lost++;
      mend m = {TL_END_EXECUTOR_LOST,
                false,
                "Not reported by the executor when it reconciled.",
                NULL,
                0,
                NULL,
                NULL,
                false,
                false};
      tlo_attempt_ended(r, frozen[i], &m);
    }
  }
  /* The adoptions: launches under the next tids, running. */
  for (size_t j = 0; j < nadopt; j++) {
    mts *t = &r->ts[adopt[j].ts];
    if (adopt[j].tid != (tl_tid)r->natt + 1 || !t->idx[adopt[j].index].pending ||
        (!adopt[j].ended && t->cpus > x->free_cores))
      abort(); /* the caller's plan is wrong: a bug in the test */
    tlo_pend_remove(t, adopt[j].index);
    tlo_launch(r, adopt[j].ts, adopt[j].index, x, false,
               tlo_locality_on(r, t, adopt[j].index, x));
    r->att[r->natt - 1].running = true;
    if (adopt[j].ended) { /* its end comes next: it takes no cores */
      r->att[r->natt - 1].end_held = true;
      x->free_cores += t->cpus;
    }
    r->reconcile_adopted++;
  }
  /* The unknown: what it reported that was not frozen on it (the kept ones are in the tid
   * index on x now, and nothing else of x is) nor adopted. */
  size_t k = 0;
  for (size_t i = 0; i < distinct; i++) {
    matt *a = tlo_indexed(r, sorted[i]);
    bool kept = false;
    for (size_t j = 0; j < nf && !kept; j++)
      kept = frozen[j] == sorted[i] && a != NULL && a->ex == x;
    for (size_t j = 0; j < nadopt && !kept; j++)
      kept = adopt[j].tid == sorted[i];
    if (kept)
      continue;
    sorted[k++] = sorted[i];
    mevent *e = tlo_push_ev(r, EV_KILL);
    e->tid = sorted[i];
    e->ex = x;
    e->interrupt = true;
    e->text = tlo_dup_text("Unknown to the restored driver");
  }
  free(frozen);
  r->reconcile_unknown += k;
  r->reconciled++;
  tlo_recovery_maybe_over(r);
  tlo_push_revive_if_wanted(r);
  *nunknown = k;
  return sorted;
}

mexec *tlo_exec_by_id(tlo_run *r, const char *id) {
  unsigned s, g;
  char tail;
  if (sscanf(id, "e%u.%u%c", &s, &g, &tail) == 2 && s < NSLOTS && g < MAXGEN)
    return &r->ex[s][g];
  if (sscanf(id, "p%u%c", &s, &tail) == 1 && s < NSLOTS)
    return &r->phantom[s];
  return NULL;
}

int tlo_ts_of_payload(const tlo_run *r, const void *payload) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (payload == &r->ts[k])
      return (int)k;
  return -1;
}

/* The unreleased task set of a stage that is not zombie, or -1. */
int tlo_active_of(const tlo_run *r, uint32_t stage) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released && !r->ts[k].zombie && r->ts[k].stage == stage)
      return (int)k;
  return -1;
}

bool tlo_stage_exists(const tlo_run *r, uint32_t stage) {
  for (uint32_t k = 0; k < r->nts; k++)
    if (!r->ts[k].released && r->ts[k].stage == stage)
      return true;
  return false;
}
