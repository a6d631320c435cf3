/* The run's durable record (--state-dir): written with state.c, held launches and releases
 * released when a record holds them, the tid reservation, and the record read back by a
 * restarted driver (recovery.c). */

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "driver.h"

static void on_commit(uv_idle_t *idle);

/* ---------------------------------------------------------------------------------------------
 * Failover (--state-dir; docs/cluster.md "Driver failover"): the run's record, written with
 * state.c, and the recovery of a run from it.
 *
 * The record's body, every integer little-endian, every string a u16 length and its bytes:
 *   u32 STATE_BODY_VERSION; the token; u32 the port; u64 ns offering so far;
 *   u32 jobs, and for each: u32 stages, u32 current, u8 failed, u8 done, and for each stage:
 *     the kind, u32 ntasks, u64 taskset, u32 succeeded, failed attempts, counted failures,
 *     killed, finished as zombies, u8 failed, u8 released;
 *   u32 executors started (exec_rec), and for each: the id, u8 started, ended, released,
 *     fault_killed, injected, forced, caused_by_app, requested, kind, i32 exit code, the reason
 *     and the source;
 *   u64 counters (STATE_COUNTERS below);
 *   u64 the ledger's snapshot length, then tl_snapshot's bytes (docs/snapshot.md).
 * The record and the ledger are taken at one moment of the loop, between two calls: what the
 * jobs counted is exactly what the ledger holds.
 * ------------------------------------------------------------------------------------------- */

#define STATE_COUNTERS(XX)                                                                         \
  XX(scaling, started)                                                                             \
  XX(conns, registered)                                                                            \
  XX(conns, registered_cores)                                                                      \
  XX(offers, launched)                                                                             \
  XX(offers, retries)                                                                              \
  XX(faults, tasks_finished)                                                                       \
  XX(link, kills_sent)                                                                             \
  XX(offers, binaries_sent)                                                                        \
  XX(link, forgets_sent)                                                                           \
  XX(losses, executors_lost)                                                                       \
  XX(losses, executors_released)                                                                   \
  XX(conns, refused_updates)                                                                       \
  XX(conns, frames_in)                                                                             \
  XX(link, frames_out)                                                                             \
  XX(scaling, most_active)

typedef struct wbuf {
  uint8_t *p;
  size_t len, cap;
} wbuf;

static void w_bytes(wbuf *w, const void *src, size_t n) {
  if (w->len + n > w->cap) {
    size_t cap = w->cap ? w->cap : 4096;
    while (cap < w->len + n)
      cap *= 2;
    uint8_t *p = realloc(w->p, cap);
    if (!p)
      die_oom();
    w->p = p;
    w->cap = cap;
  }
  memcpy(w->p + w->len, src, n);
  w->len += n;
}

static void w_le(wbuf *w, uint64_t v, int n) {
  uint8_t b[8];
  state_put_le(b, v, n);
  w_bytes(w, b, (size_t)n);
}

static void w_str(wbuf *w, const char *s) {
  size_t n = strlen(s);
  w_le(w, n, 2);
  w_bytes(w, s, n);
}

typedef struct rbuf {
  const uint8_t *p;
  size_t len, at;
  bool bad; /* read past the end, or a field out of its bounds */
} rbuf;

static uint64_t r_le(rbuf *r, int n) {
  if (r->bad || r->len - r->at < (size_t)n) {
    r->bad = true;
    return 0;
  }
  uint64_t v = state_get_le(r->p + r->at, n);
  r->at += (size_t)n;
  return v;
}

/* A string into dst[0..cap): longer ones, or ones holding a NUL, make the record bad. */
static void r_str(rbuf *r, char *dst, size_t cap) {
  size_t n = (size_t)r_le(r, 2);
  if (r->bad || n >= cap || r->len - r->at < n || memchr(r->p + r->at, 0, n)) {
    r->bad = true;
    dst[0] = '\0';
    return;
  }
  memcpy(dst, r->p + r->at, n);
  dst[n] = '\0';
  r->at += n;
}

static int snapshot_to_wbuf(void *ud, const void *buf, size_t n) {
  w_bytes(ud, buf, n);
  return 0;
}

/* The record's body into w: TL_OK, or tl_snapshot's error (TL_EBUSY: events undelivered). */
static int encode_state(driver *d, wbuf *w) {
  w->len = 0;
  w_le(w, STATE_BODY_VERSION, 4);
  w_str(w, d->auth.token);
  w_le(w, (uint64_t)d->edge.port, 4);
  w_le(w, d->phase.offering ? d->record.recovered_elapsed + (uv_hrtime() - d->phase.start_ns) : 0,
       8);
  w_le(w, d->jobs.njobs, 4);
  for (size_t i = 0; i < d->jobs.njobs; i++) {
    const job *j = &d->jobs.list[i];
    w_le(w, j->nstages, 4);
    w_le(w, j->current, 4);
    w_le(w, j->failed, 1);
    w_le(w, j->done, 1);
    for (uint32_t k = 0; k < j->nstages; k++) {
      const stage *st = &j->stages[k];
      w_str(w, st->kind);
      w_le(w, st->ntasks, 4);
      w_le(w, st->taskset, 8);
      w_le(w, st->succeeded, 4);
      w_le(w, st->failed_attempts, 4);
      w_le(w, st->counted_failures, 4);
      w_le(w, st->killed, 4);
      w_le(w, st->zombie_finished, 4);
      w_le(w, st->failed, 1);
      w_le(w, st->released, 1);
    }
  }
  w_le(w, d->scaling.nexecs, 4);
  for (uint32_t i = 0; i < d->scaling.nexecs; i++) {
    exec_rec *e = &d->scaling.execs[i];
    w_str(w, e->id);
    /* An adopted executor is still running as far as the run knows: started, its end not in. */
    w_le(w, e->started || e->adopted, 1);
    w_le(w, e->ended, 1);
    w_le(w, e->released, 1);
    w_le(w, e->fault_killed, 1);
    w_le(w, e->injected, 1);
    w_le(w, e->forced, 1);
    w_le(w, e->caused_by_app, 1);
    w_le(w, e->requested, 1);
    w_le(w, (uint64_t)e->kind, 1);
    w_le(w, (uint32_t)e->exit_code, 4);
    w_str(w, e->reason);
    w_str(w, e->source);
    char h[LAUNCHER_HANDLE_MAX];
    if (e->started && !e->ended && d->run.launcher && d->run.ops->handle &&
        d->run.ops->handle(d->run.launcher, e->id, h, sizeof h) > 0)
      copy_text(e->handle, sizeof e->handle, h);
    w_str(w, e->handle);
  }
#define PUT_COUNTER(g, f) w_le(w, d->g.f, 8);
  STATE_COUNTERS(PUT_COUNTER)
#undef PUT_COUNTER
  size_t at = w->len;
  w_le(w, 0, 8);
  int rc = tl_snapshot(d->run.s, snapshot_to_wbuf, w);
  if (rc != TL_OK)
    return rc;
  uint64_t n = w->len - at - 8;
  for (int i = 0; i < 8; i++)
    w->p[at + (size_t)i] = (uint8_t)(n >> (8 * i));
  return TL_OK;
}

/* Writes the record (the last body again when fresh is false, for a tid reservation), then
 * tells every connection how many of its STATUS frames it holds durably (SYNCED): their ends
 * need not be kept by the executor any more. Returns 0, or -1 (logged; the last record
 * stays). */
int write_state(driver *d, bool fresh) {
  if (!d->record.state_dir)
    return 0;
  uint64_t t0 = uv_hrtime();
  if (fresh) {
    /* Into the spare buffer: the last good body stays for reservations until this one is. */
    wbuf w = {d->record.state_spare, 0, d->record.state_spare_cap};
    int rc = encode_state(d, &w);
    d->record.state_spare = w.p;
    d->record.state_spare_cap = w.cap;
    if (rc != TL_OK) {
      if (rc == TL_EBUSY) {
        d->record.state_busy++;
      } else {
        fprintf(stderr, "tl-driver: tl_snapshot: %s\n", tl_err_name(rc));
        d->record.state_failed++;
      }
      return -1;
    }
    uint8_t *p = d->record.state_body;
    size_t cap = d->record.state_cap;
    d->record.state_body = d->record.state_spare;
    d->record.state_cap = d->record.state_spare_cap;
    d->record.state_len = w.len;
    d->record.state_spare = p;
    d->record.state_spare_cap = cap;
  } else if (d->record.state_len == 0) {
    return -1;
  } else {
    d->record.state_reserves++;
  }
  /* Every tid launched so far, and a block beyond it, may be sent before the next write. */
  uint64_t reserve =
      (d->record.tid_max > d->record.tid_reserved ? d->record.tid_max : d->record.tid_reserved) +
      TID_BLOCK;
  char why[512];
  if (state_write(d->record.state_dir, reserve, d->record.state_body, d->record.state_len, why,
                  sizeof why) != 0) {
    fprintf(stderr, "tl-driver: writing the state: %s\n", why);
    d->record.state_failed++;
    return -1;
  }
  d->record.tid_reserved = reserve;
  d->record.state_writes++;
  d->record.state_ns += uv_hrtime() - t0;
  if (fresh)
    for (conn *c = d->link.list; c; c = c->next)
      if (c->registered && !c->closing && !c->recovering && c->status_frames > c->synced) {
        tlc_msg m = {.type = TLC_MSG_SYNCED, .u.synced = {c->status_frames}};
        encode(c, &m);
        send_out(c);
        c->synced = c->status_frames;
        d->record.synced_sent++;
      }
  if (fresh)
    release_held(d);
  return 0;
}

/* With --state-dir (unless --launch-before-record), c's frames, those encoded so far and those
 * after them, wait for the next record, which on_commit writes at the next turn of the loop, so
 * that what is held in one turn shares one write. Returns whether they wait. */
bool hold_for_record(driver *d, conn *c) {
  if (!d->record.state_dir || d->record.launch_early)
    return false;
  c->held = true;
  if (!d->record.commit_due) {
    d->record.commit_due = true;
    d->record.commit_since = uv_hrtime();
    uv_idle_start(&d->record.commit, on_commit);
  }
  return true;
}

/* A LAUNCH goes out only once a record holds its attempt: then a crash can lose no launch that
 * an executor got (it is in the record the restart reads, and the executor names it when it
 * reconciles), and a launch the crash kept from going out is offered again. offer() calls this
 * for the n launches it just encoded into c's frames. */
void hold_launches(driver *d, conn *c, size_t n) {
  if (n > 0 && hold_for_record(d, c))
    d->record.held_now += n;
}

/* A record holds every launch encoded so far (or none could be written, or the run ends): the
 * held frames go out. */
void release_held(driver *d) {
  if (!d->record.commit_due)
    return;
  d->record.commit_due = false;
  uv_idle_stop(&d->record.commit);
  if (d->record.held_now > 0) { /* a turn that held only a release's STOP is not a launches' wait */
    uint64_t waited = uv_hrtime() - d->record.commit_since;
    d->record.held_ns += waited;
    d->record.held_max_ns = waited > d->record.held_max_ns ? waited : d->record.held_max_ns;
    d->record.held_rounds++;
    d->record.held_launches += d->record.held_now;
    d->record.held_now = 0;
  }
  for (conn *c = d->link.list; c; c = c->next)
    if (c->held) {
      c->held = false;
      send_out(c);
    }
}

/* The loop turned with launches held: the record that holds them. A write put off for
 * undelivered events is tried at the next turn; one that failed (logged, counted) sends them
 * anyway, as --launch-before-record would: a crash before the next record reruns them, and the
 * tid reservation (reserve_tids) still keeps their tids from being given again. */
static void on_commit(uv_idle_t *idle) {
  driver *d = idle->data;
  uint64_t busy = d->record.state_busy;
  if (write_state(d, true) == 0 || d->record.state_busy > busy)
    return;
  d->record.unrecorded += d->record.held_now;
  logf_(d, "no record holds %" PRIu64 " launches: sending them anyway", d->record.held_now);
  release_held(d);
}

void on_state_timer(uv_timer_t *t) {
  driver *d = t->data;
  if (d->phase.stopping || d->phase.closed)
    return;
  uint64_t busy = d->record.state_busy;
  if (write_state(d, true) != 0 && d->record.state_busy > busy) /* undelivered events: soon again */
    uv_timer_start(&d->record.state_timer, on_state_timer, 1, d->record.snapshot_ms);
}

/* A stage boundary (from a callback, where a snapshot is refused): the record is written at the
 * next turn of the loop. */
void state_due(driver *d) {
  if (d->record.state_dir && !d->phase.stopping && !d->phase.closed)
    uv_timer_start(&d->record.state_timer, on_state_timer, 0, d->record.snapshot_ms);
}

/* Launches up to tid max are about to be sent: past the reservation, a record reserves more
 * first (the last one's body again when no fresh one can be had), so that a restored driver
 * never gives a tid an executor may hold. Exits when neither can be written: sending would
 * break the promise. */
void reserve_tids(driver *d, uint64_t max) {
  if (max > d->record.tid_max)
    d->record.tid_max = max;
  if (!d->record.state_dir || max <= d->record.tid_reserved)
    return;
  if (write_state(d, true) != 0 && write_state(d, false) != 0) {
    fprintf(stderr, "tl-driver: cannot reserve tids in %s/state: giving up\n", d->record.state_dir);
    exit(1);
  }
}

/* Reads the run's part of a record into d, checking it against the command line's jobs.
 * Returns 0 with the snapshot's bytes in *snap, or 1 (the message printed). */
int read_state_body(driver *d, const state_record *rec, const uint8_t **snap, size_t *snap_len) {
  rbuf r = {rec->body, rec->len, 0, false};
  const char *bad = NULL;
  char token[sizeof d->auth.token];
  if (r_le(&r, 4) != STATE_BODY_VERSION)
    bad = "its body is of another version";
  r_str(&r, token, sizeof token);
  uint64_t port = r_le(&r, 4);
  uint64_t elapsed = r_le(&r, 8);
  if (!bad && (r.bad || port == 0 || port > 65535 || strlen(token) < TOKEN_MIN))
    bad = "its token or port is bad";
  if (!bad && r_le(&r, 4) != d->jobs.njobs)
    bad = "its jobs differ from the command line's";
  for (size_t i = 0; i < d->jobs.njobs && !bad; i++) {
    job *j = &d->jobs.list[i];
    if (r_le(&r, 4) != j->nstages) {
      bad = "its jobs differ from the command line's";
      break;
    }
    j->current = (uint32_t)r_le(&r, 4);
    j->failed = r_le(&r, 1) != 0;
    j->done = r_le(&r, 1) != 0;
    if (j->current >= j->nstages)
      r.bad = true;
    for (uint32_t k = 0; k < j->nstages && !bad; k++) {
      stage *st = &j->stages[k];
      char kind[TLC_KIND_MAX + 1];
      r_str(&r, kind, sizeof kind);
      if (strcmp(kind, st->kind) != 0 || r_le(&r, 4) != st->ntasks)
        bad = "its jobs differ from the command line's";
      st->taskset = r_le(&r, 8);
      st->succeeded = (uint32_t)r_le(&r, 4);
      st->failed_attempts = (uint32_t)r_le(&r, 4);
      st->counted_failures = (uint32_t)r_le(&r, 4);
      st->killed = (uint32_t)r_le(&r, 4);
      st->zombie_finished = (uint32_t)r_le(&r, 4);
      st->failed = r_le(&r, 1) != 0;
      st->released = r_le(&r, 1) != 0;
      if (st->succeeded > st->ntasks)
        r.bad = true;
    }
  }
  uint64_t nexecs = bad ? 0 : r_le(&r, 4);
  if (nexecs > MAX_STARTED)
    r.bad = true;
  for (uint32_t i = 0; i < nexecs && !r.bad && !bad; i++) {
    exec_rec *e = &d->scaling.execs[i];
    r_str(&r, e->id, sizeof e->id);
    bool started = r_le(&r, 1) != 0;
    e->ended = r_le(&r, 1) != 0;
    e->released = r_le(&r, 1) != 0;
    e->fault_killed = r_le(&r, 1) != 0;
    e->injected = r_le(&r, 1) != 0;
    e->forced = r_le(&r, 1) != 0;
    e->caused_by_app = r_le(&r, 1) != 0;
    e->requested = r_le(&r, 1) != 0;
    uint64_t kind = r_le(&r, 1);
    e->exit_code = (int)(int32_t)(uint32_t)r_le(&r, 4);
    r_str(&r, e->reason, sizeof e->reason);
    r_str(&r, e->source, sizeof e->source);
    r_str(&r, e->handle, sizeof e->handle);
    if (kind >= LOSS_KINDS)
      r.bad = true;
    e->kind = (tl_loss_kind)kind;
    /* Still running when the driver died: this process did not start it, so its launcher
     * will not report its end; the connection and the pending-loss timeout will. */
    e->started = started && e->ended;
    e->adopted = started && !e->ended;
  }
#define GET_COUNTER(g, f) d->g.f = (__typeof__(d->g.f))r_le(&r, 8);
  if (!bad)
    STATE_COUNTERS(GET_COUNTER)
#undef GET_COUNTER
  uint64_t n = bad ? 0 : r_le(&r, 8);
  if (!bad && !r.bad && n != r.len - r.at)
    r.bad = true;
  if (!bad && r.bad)
    bad = "its body does not parse";
  if (bad) {
    fprintf(stderr, "tl-driver: the state in %s cannot be recovered: %s\n", d->record.state_dir,
            bad);
    return 1;
  }
  d->scaling.nexecs = (uint32_t)nexecs;
  d->scaling.released = 0;
  for (uint32_t i = 0; i < d->scaling.nexecs; i++)
    d->scaling.released += d->scaling.execs[i].released;
  strcpy(d->auth.token, token);
  if (setenv("TL_CLUSTER_TOKEN", d->auth.token, 1) != 0)
    die_oom();
  d->edge.port = (int)port;
  /* Offers go on at once: the executors that registered before the crash come back by
   * themselves, and one that never registered may register now. */
  phase_offer(d);
  d->record.recovered_elapsed = elapsed;
  *snap = r.p + r.at;
  *snap_len = (size_t)n;
  return 0;
}

/* A run that ended (well or not, but not by a crash) leaves no record to recover. */
void remove_state(driver *d) {
  if (!d->record.state_dir)
    return;
  char path[4096];
  static const char *const names[] = {"state", "state.prev", "state.tmp", "state.prev.tmp"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    snprintf(path, sizeof path, "%s/%s", d->record.state_dir, names[i]);
    if (unlink(path) != 0 && errno != ENOENT)
      fprintf(stderr, "tl-driver: unlink %s: %s\n", path, strerror(errno));
  }
}

void record_configure(driver *d, const driver_opts *o) {
  d->record.state_dir = o->state_dir;
  d->record.snapshot_ms = o->snapshot_ms;
  d->record.launch_early = o->launch_early;
}

void record_init(driver *d) {
  uv_idle_init(d->run.loop, &d->record.commit);
  d->record.commit.data = d;
  uv_timer_init(d->run.loop, &d->record.state_timer);
  d->record.state_timer.data = d;
}

void record_close(driver *d, uv_close_cb on_closed) {
  uv_close((uv_handle_t *)&d->record.state_timer, on_closed);
  uv_close((uv_handle_t *)&d->record.commit, on_closed);
}

void record_free(driver *d) {
  free(d->record.state_body);
  free(d->record.state_spare);
}

/* A restored run: no tid up to floor - 1 may be given again, and none was launched above it. */
void record_restored(driver *d, uint64_t floor) {
  d->record.tid_reserved = floor - 1;
  d->record.tid_max = d->record.tid_reserved;
}
