/* The journal replayer: parses each line of a call journal (docs/journal.md) and makes the same
 * call on a fresh scheduler whose clock is set to the journaled time, so the ledger goes through
 * the same transitions in the same order. Payloads and results, which a journal cannot hold,
 * are stand-ins made here and handed back as the ledger says.
 *
 * Calls made from inside callbacks in the original run appear in the journal where they took
 * the lock, so replaying lines one after another from the top reproduces the original order.
 */
#include "replay.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct token {
  char *text; /* NUL-terminated, escapes decoded; NULL for "-" */
  bool quoted;
} token;

typedef struct payload {
  size_t sub; /* index in replayer.subs */
} payload;

typedef struct submission {
  tl_taskset_id id;
  bool released;
} submission;

typedef struct replayer {
  tl_scheduler *s;
  uint64_t now; /* what the clock says: the time of the line being replayed */
  submission *subs;
  size_t nsubs, capsubs;
  tlr_report *report;
  FILE *trace;
  bool out_of_memory; /* a stand-in could not be allocated */
} replayer;

/* ---------------------------------------------------------------------------------------------
 * Callbacks: hand back what the ledger hands back
 * ------------------------------------------------------------------------------------------- */

static uint64_t replay_clock(void *ud) { return ((replayer *)ud)->now; }

static void result_free(void *result) { free(result); }

static void on_task_ended(void *ud, const tl_task_info *task, const tl_task_end *end) {
  (void)ud;
  (void)task;
  if (end->result != NULL && end->result_free != NULL)
    end->result_free(end->result);
}

static void on_released(void *ud, const tl_taskset_info *ts, void *p) {
  replayer *r = ud;
  (void)ts;
  payload *pl = p;
  if (pl != NULL && pl->sub < r->nsubs)
    r->subs[pl->sub].released = true;
  r->report->released++;
  free(pl);
}

/* The losses the calls make: the journal holds the calls, and the events follow from them. */
static void on_lost(void *ud, const char *id, void *executor_ud, const tl_loss_reason *reason) {
  (void)id;
  (void)executor_ud;
  (void)reason;
  ((replayer *)ud)->report->lost++;
}

static void on_removed(void *ud, const char *id, void *executor_ud, const tl_loss_reason *reason) {
  (void)id;
  (void)executor_ud;
  (void)reason;
  ((replayer *)ud)->report->removed++;
}

static void on_unschedulable(void *ud, const tl_taskset_info *ts, const char *reason) {
  (void)ts;
  (void)reason;
  ((replayer *)ud)->report->unschedulable++;
}

static void on_schedulable(void *ud, const tl_taskset_info *ts) {
  (void)ts;
  ((replayer *)ud)->report->schedulable++;
}

static void on_demand(void *ud, const tl_demand *demand) {
  tlr_report *rep = ((replayer *)ud)->report;
  rep->demand_events++;
  rep->last_demand = *demand;
}

/* ---------------------------------------------------------------------------------------------
 * Parsing
 * ------------------------------------------------------------------------------------------- */

static int hex(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Splits a line into tokens in place. Returns the count, or -1 on a malformed string. */
static int tokenize(char *line, token *tok, int max) {
  int n = 0;
  char *p = line;
  for (;;) {
    while (*p == ' ')
      p++;
    if (*p == '\0')
      return n;
    if (n == max)
      return -1;
    if (*p == '"') {
      char *out = ++p, *start = out;
      for (;;) {
        if (*p == '\0')
          return -1;
        if (*p == '"')
          break;
        if (*p == '\\') {
          p++;
          if (*p == 'x') {
            int hi = hex(p[1]), lo = hi < 0 ? -1 : hex(p[2]);
            if (lo < 0 || (hi == 0 && lo == 0))
              return -1;
            *out++ = (char)(hi * 16 + lo);
            p += 3;
          } else if (*p == '"' || *p == '\\') {
            *out++ = *p++;
          } else {
            return -1;
          }
        } else {
          *out++ = *p++;
        }
      }
      p++;
      if (*p != ' ' && *p != '\0')
        return -1;
      if (*p == ' ')
        p++;
      *out = '\0';
      tok[n].text = start;
      tok[n].quoted = true;
    } else {
      char *start = p;
      while (*p != ' ' && *p != '\0')
        p++;
      if (*p == ' ')
        *p++ = '\0';
      tok[n].text = strcmp(start, "-") == 0 ? NULL : start;
      tok[n].quoted = false;
    }
    n++;
  }
}

static bool parse_u64(const char *text, uint64_t *out) {
  if (text == NULL || *text < '0' || *text > '9')
    return false;
  char *end;
  unsigned long long v = strtoull(text, &end, 10);
  if (*end != '\0')
    return false;
  *out = v;
  return true;
}

static bool parse_i64(const char *text, int64_t *out) {
  if (text == NULL)
    return false;
  char *end;
  long long v = strtoll(text, &end, 10);
  if (*end != '\0' || end == text)
    return false;
  *out = v;
  return true;
}

/* A "key=value" token with a number. */
static bool key_u64(const token *t, const char *key, uint64_t *out) {
  size_t n = strlen(key);
  if (t->quoted || t->text == NULL || strncmp(t->text, key, n) != 0 || t->text[n] != '=')
    return false;
  return parse_u64(t->text + n + 1, out);
}

static bool key_u32(const token *t, const char *key, uint32_t *out) {
  uint64_t v;
  if (!key_u64(t, key, &v) || v > UINT32_MAX)
    return false;
  *out = (uint32_t)v;
  return true;
}

static bool key_i64(const token *t, const char *key, int64_t *out) {
  size_t n = strlen(key);
  if (t->quoted || t->text == NULL || strncmp(t->text, key, n) != 0 || t->text[n] != '=')
    return false;
  return parse_i64(t->text + n + 1, out);
}

static bool key_double(const token *t, const char *key, double *out) {
  size_t n = strlen(key);
  if (t->quoted || t->text == NULL || strncmp(t->text, key, n) != 0 || t->text[n] != '=')
    return false;
  char *end;
  double v = strtod(t->text + n + 1, &end);
  if (*end != '\0' || end == t->text + n + 1)
    return false;
  *out = v;
  return true;
}

/* A string argument: quoted, or "-" for NULL. */
static bool str_arg(const token *t, const char **out) {
  if (!t->quoted && t->text != NULL)
    return false;
  *out = t->text;
  return true;
}

static int name_index(const char *text, const char *const *names, int n) {
  for (int i = 0; text != NULL && i < n; i++)
    if (strcmp(text, names[i]) == 0)
      return i;
  return -1;
}

/* The names the journal writes, from the public header's maps (values 0, 1, ... in order). */
#define NAME_STRING(name, value) #name,
static const char *const loss_names[] = {TL_LOSS_KIND_MAP(NAME_STRING)};
static const char *const state_names[] = {TL_TASK_STATE_MAP(NAME_STRING)};
static const char *const end_names[] = {TL_END_KIND_MAP(NAME_STRING)};
#undef NAME_STRING
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static bool parse_err(const char *text, int *out) {
  for (int err = TL_OK; err >= TL_ECORRUPT; err--) {
    if (text != NULL && strcmp(text, tl_err_name(err)) == 0) {
      *out = err;
      return true;
    }
  }
  return false;
}

/* ---------------------------------------------------------------------------------------------
 * The replay
 * ------------------------------------------------------------------------------------------- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int
stop(replayer *r, int verdict, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(r->report->why, sizeof r->report->why, fmt, ap);
  va_end(ap);
  r->report->bad_line = r->report->lines;
  return verdict;
}

static int start_scheduler(replayer *r, token *tok, int n) {
  tl_config cfg;
  tl_config_init(&cfg);
  uint64_t start = 0;
  for (int i = 1; i < n; i++) {
    uint64_t v;
    if (key_u32(&tok[i], "cpus_per_task", &cfg.cpus_per_task) ||
        key_u32(&tok[i], "max_task_failures", &cfg.max_task_failures) ||
        key_u64(&tok[i], "heartbeat_timeout_ns", &cfg.heartbeat_timeout_ns) ||
        key_u64(&tok[i], "pending_loss_timeout_ns", &cfg.pending_loss_timeout_ns) ||
        key_u32(&tok[i], "max_tombstones", &cfg.max_tombstones) ||
        key_u64(&tok[i], "tombstone_ttl_ns", &cfg.tombstone_ttl_ns) ||
        key_u64(&tok[i], "max_result_bytes", &cfg.max_result_bytes))
      continue;
    if (key_u64(&tok[i], "start", &v)) {
      start = v;
      continue;
    }
    if (key_u64(&tok[i], "speculation", &v)) {
      cfg.speculation = v != 0;
      continue;
    }
    if (key_u64(&tok[i], "exclude_on_failure", &v)) {
      cfg.exclude_on_failure = v != 0;
      continue;
    }
    if (key_u64(&tok[i], "pool_auto_create", &v)) {
      cfg.pool_auto_create = v != 0;
      continue;
    }
    if (key_u64(&tok[i], "offer_shuffle", &v)) { /* offer shuffle: the seed follows */
      cfg.offer_shuffle = v != 0;
      continue;
    }
    if (key_u64(&tok[i], "offer_shuffle_seed", &cfg.offer_shuffle_seed))
      continue;
    if (key_u32(&tok[i], "exclude_max_task_attempts_per_executor",
                &cfg.exclude_max_task_attempts_per_executor) ||
        key_u32(&tok[i], "exclude_max_task_attempts_per_node",
                &cfg.exclude_max_task_attempts_per_node) ||
        key_u32(&tok[i], "exclude_stage_max_failed_tasks_per_executor",
                &cfg.exclude_stage_max_failed_tasks_per_executor) ||
        key_u32(&tok[i], "exclude_stage_max_failed_executors_per_node",
                &cfg.exclude_stage_max_failed_executors_per_node) ||
        key_u32(&tok[i], "exclude_app_max_failed_tasks_per_executor",
                &cfg.exclude_app_max_failed_tasks_per_executor) ||
        key_u32(&tok[i], "exclude_app_max_failed_executors_per_node",
                &cfg.exclude_app_max_failed_executors_per_node) ||
        key_u64(&tok[i], "exclude_timeout_ns", &cfg.exclude_timeout_ns) ||
        key_u64(&tok[i], "unschedulable_timeout_ns", &cfg.unschedulable_timeout_ns))
      continue;
    if (key_u64(&tok[i], "speculation_interval_ns", &cfg.speculation_interval_ns) ||
        key_u64(&tok[i], "speculation_min_runtime_ns", &cfg.speculation_min_runtime_ns) ||
        key_u64(&tok[i], "speculation_task_duration_threshold_ns",
                &cfg.speculation_task_duration_threshold_ns) ||
        key_u64(&tok[i], "decommission_kill_interval_ns", &cfg.decommission_kill_interval_ns) ||
        key_u64(&tok[i], "locality_wait_ns", &cfg.locality_wait_ns) ||
        key_u64(&tok[i], "locality_wait_process_ns", &cfg.locality_wait_process_ns) ||
        key_u64(&tok[i], "locality_wait_node_ns", &cfg.locality_wait_node_ns) ||
        key_u64(&tok[i], "locality_wait_rack_ns", &cfg.locality_wait_rack_ns) ||
        key_double(&tok[i], "speculation_multiplier", &cfg.speculation_multiplier) ||
        key_double(&tok[i], "speculation_quantile", &cfg.speculation_quantile))
      continue;
    /* Who delivered the events does not change what the calls did: replayed inline. */
    if (!tok[i].quoted && tok[i].text != NULL && strncmp(tok[i].text, "delivery=", 9) == 0) {
      if (strcmp(tok[i].text + 9, "INLINE") != 0 && strcmp(tok[i].text + 9, "DEFERRED") != 0)
        return stop(r, TLR_BAD_INPUT, "unknown delivery %s", tok[i].text + 9);
      continue;
    }
    if (!tok[i].quoted && tok[i].text != NULL && strncmp(tok[i].text, "mode=", 5) == 0) {
      if (strcmp(tok[i].text + 5, "FIFO") == 0)
        cfg.mode = TL_FIFO;
      else if (strcmp(tok[i].text + 5, "FAIR") == 0)
        cfg.mode = TL_FAIR;
      else
        return stop(r, TLR_BAD_INPUT, "unknown scheduling mode %s", tok[i].text + 5);
      continue;
    }
    /* Keys this version does not know: a later journal version would have a new header. */
    return stop(r, TLR_BAD_INPUT, "unknown config field %s", tok[i].text ? tok[i].text : "-");
  }
  r->now = start;
  cfg.clock = replay_clock;
  cfg.clock_ud = r;
  tl_callbacks cb = {0};
  cb.ud = r;
  cb.task_ended = on_task_ended;
  cb.taskset_released = on_released;
  cb.executor_lost = on_lost;
  cb.executor_removed = on_removed;
  cb.taskset_unschedulable = on_unschedulable;
  cb.taskset_schedulable = on_schedulable;
  cb.demand_changed = on_demand;
  int err = tl_scheduler_new(&cfg, &cb, &r->s);
  if (err != TL_OK)
    return stop(r, err == TL_ENOMEM ? TLR_NO_MEMORY : TLR_BAD_INPUT,
                "tl_scheduler_new with this config: %s", tl_err_name(err));
  return TLR_OK;
}

static int bad(replayer *r, const char *op) {
  return stop(r, TLR_BAD_INPUT, "cannot parse the arguments of %s", op);
}

/* A token that is exactly text (unquoted). */
static bool is_word(const token *t, const char *text) {
  return !t->quoted && t->text != NULL && strcmp(t->text, text) == 0;
}

/* What a declaration or request journaled as `KEY=malformed` stands for: one the library
 * refuses with TL_ERESOURCE (a resource of no addresses; a request of amount 0). */
static const tl_resource malformed_resource = {"malformed", NULL, 0};
static const tl_resource_request malformed_request = {"malformed", 0, 0};

/* An add line's resources, from a[*k] on: "resources=R" then per resource "NAME" addresses=K
 * and K strings, or "resources=malformed". Every count is bounded by the tokens that remain
 * (a line cannot make the replayer allocate beyond its own size). The arrays are the caller's
 * to free (*res and *addr, NULL when none). */
static bool parse_resources(const token *a, int na, int *k, tl_executor_desc *d, tl_resource **res,
                            const char ***addr) {
  *res = NULL;
  *addr = NULL;
  if (*k >= na)
    return true;
  if (is_word(&a[*k], "resources=malformed")) {
    d->resources = &malformed_resource;
    d->nresources = 1;
    (*k)++;
    return true;
  }
  uint32_t n;
  if (!key_u32(&a[*k], "resources", &n) || n == 0 || n > (uint32_t)(na - *k - 1) / 2)
    return false;
  (*k)++;
  /* Every address is a token: na bounds them all. */
  if ((*res = calloc(n, sizeof **res)) == NULL ||
      (*addr = calloc((size_t)na, sizeof **addr)) == NULL)
    return false;
  size_t used = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t count;
    if (*k + 2 > na || !a[*k].quoted || !key_u32(&a[*k + 1], "addresses", &count) ||
        count > (uint32_t)(na - *k - 2))
      return false;
    (*res)[i].name = a[*k].text;
    *k += 2;
    (*res)[i].addresses = *addr + used;
    (*res)[i].naddresses = count;
    for (uint32_t j = 0; j < count; j++, (*k)++) {
      if (!a[*k].quoted)
        return false;
      (*addr)[used++] = a[*k].text;
    }
  }
  d->resources = *res;
  d->nresources = n;
  return true;
}

/* A submit line's profile and requests, from a[*k] on: optional "profile=P", then optional
 * "requests=R" and per request "NAME" amount=A share=S, or "requests=malformed". */
static bool parse_requests(const token *a, int na, int *k, tl_taskset_desc *d,
                           tl_resource_request **req) {
  *req = NULL;
  if (*k < na && key_u32(&a[*k], "profile", &d->profile))
    (*k)++;
  if (*k >= na)
    return true;
  if (is_word(&a[*k], "requests=malformed")) {
    d->resources = &malformed_request;
    d->nresources = 1;
    (*k)++;
    return true;
  }
  uint32_t n;
  if (!key_u32(&a[*k], "requests", &n))
    return true; /* none: what follows are preferences */
  if (n == 0 || n > (uint32_t)(na - *k - 1) / 3)
    return false;
  (*k)++;
  if ((*req = calloc(n, sizeof **req)) == NULL)
    return false;
  for (uint32_t i = 0; i < n; i++, *k += 3) {
    if (!a[*k].quoted || !key_u32(&a[*k + 1], "amount", &(*req)[i].amount) ||
        !key_u32(&a[*k + 2], "share", &(*req)[i].share))
      return false;
    (*req)[i].name = a[*k].text;
  }
  d->resources = *req;
  d->nresources = n;
  return true;
}

/* An offer round, plain (tl_resource_offers) or with grants (tl_resource_offers_grants: gcap
 * given): the offers from a[first], the call, and whether its launches, first tid and grants
 * are the journal's. */
static int offer_round(replayer *r, const char *op, token *a, int na, int first, bool with_grants,
                       uint64_t cap, uint64_t gcap, token *extra, int nextra, int *err,
                       bool *matches) {
  uint64_t n;
  if (na < first + 1 || !key_u64(&a[first], "n", &n) || (uint64_t)(na - first - 1) != 2 * n)
    return bad(r, op);
  uint64_t want_launched = 0, want_tid = 0, want_grants = 0;
  bool have = (nextra == 2 || nextra == 3) && key_u64(&extra[0], "launched", &want_launched) &&
              key_u64(&extra[1], "tid", &want_tid);
  bool have_grants = nextra == 3 && key_u64(&extra[2], "grants", &want_grants);
  if (nextra == 3 && !have_grants)
    have = false;
  /* The call's own room when it is no larger than 65,536 launches: a round reserves for as many
   * launches as its room allows, so the ledger's tables are sized as they were. Beyond that, room
   * for one launch more than the journal says (so that launching more is seen), which is all a
   * journal needs to prove. A launch holds at most TL_TASK_GRANTS_MAX grants, so room for that
   * many is gcap's whole effect. */
  size_t room = cap <= 65536 || cap < want_launched + 1 ? (size_t)cap : (size_t)want_launched + 1;
  size_t groom = 0;
  if (with_grants)
    groom = room <= SIZE_MAX / TL_TASK_GRANTS_MAX && gcap > (uint64_t)room * TL_TASK_GRANTS_MAX
                ? room * TL_TASK_GRANTS_MAX
                : (size_t)gcap;
  tl_offer *offers = calloc(n ? n : 1, sizeof *offers);
  tl_launch *out = calloc(room ? room : 1, sizeof *out);
  tl_grant *grants = with_grants ? calloc(groom ? groom : 1, sizeof *grants) : NULL;
  if (offers == NULL || out == NULL || (with_grants && grants == NULL)) {
    free(offers);
    free(out);
    free(grants);
    return stop(r, TLR_NO_MEMORY, "out of memory");
  }
  for (uint64_t i = 0; i < n; i++) {
    uint64_t cores;
    token *t = &a[first + 1 + 2 * i];
    if (!str_arg(&t[0], &offers[i].executor_id) || !parse_u64(t[1].text, &cores) ||
        cores > UINT32_MAX) {
      free(offers);
      free(out);
      free(grants);
      return bad(r, op);
    }
    offers[i].cores = (uint32_t)cores;
  }
  size_t nout = 0, ngrants = 0;
  if (with_grants)
    *err = tl_resource_offers_grants(r->s, offers, (size_t)n, out, room, &nout, grants, groom,
                                     &ngrants);
  else
    *err = tl_resource_offers(r->s, offers, (size_t)n, out, room, &nout);
  if (*err == TL_OK) {
    size_t held = 0;
    for (size_t i = 0; i < nout; i++)
      held += out[i].ngrants;
    *matches = have && nout == want_launched && (nout == 0 || out[0].tid == want_tid) &&
               (!have_grants || held == want_grants) && (!with_grants || held == ngrants);
  }
  free(offers);
  free(out);
  free(grants);
  return TLR_OK;
}

/* Makes the call of one journal line. args: the tokens between the op and "="; extra: the
 * tokens after the result. Sets *err to what the call returned, and *matches to whether the
 * call's extra results (task set id, launches) agree with the journal. */
static int call(replayer *r, const char *op, token *a, int na, token *extra, int nextra, int *err,
                bool *matches) {
  tl_scheduler *s = r->s;
  *matches = true;
  if (strcmp(op, "add") == 0) {
    tl_executor_desc d = {0};
    if (na < 4 || !str_arg(&a[0], &d.id) || !str_arg(&a[1], &d.host) || !str_arg(&a[2], &d.rack) ||
        !key_u32(&a[3], "cores", &d.cores))
      return bad(r, op);
    /* Version 2: profile=P, then the resources. */
    int k = 4;
    if (k < na && key_u32(&a[k], "profile", &d.profile))
      k++;
    tl_resource *res;
    const char **addr;
    bool ok = parse_resources(a, na, &k, &d, &res, &addr) && k == na;
    if (ok)
      *err = tl_executor_add(s, &d);
    free(res);
    free(addr);
    if (!ok)
      return bad(r, op);
  } else if (strcmp(op, "lost") == 0) {
    const char *id;
    tl_loss_reason reason;
    uint64_t app;
    int64_t exit_code;
    int kind = na == 5 ? name_index(a[1].text, loss_names, COUNT(loss_names)) : -1;
    if (kind < 0 || !str_arg(&a[0], &id) || !key_u64(&a[2], "app", &app) ||
        !key_i64(&a[3], "exit", &exit_code) || !str_arg(&a[4], &reason.message))
      return bad(r, op);
    reason.kind = (tl_loss_kind)kind;
    reason.caused_by_app = app != 0;
    reason.exit_code = (int)exit_code;
    *err = tl_executor_lost(s, id, &reason);
  } else if (strcmp(op, "heartbeat") == 0) {
    const char *id;
    if (na != 1 || !str_arg(&a[0], &id))
      return bad(r, op);
    *err = tl_executor_heartbeat(s, id);
  } else if (strcmp(op, "decommission") == 0) {
    const char *id, *msg;
    if (na != 2 || !str_arg(&a[0], &id) || !str_arg(&a[1], &msg))
      return bad(r, op);
    *err = tl_executor_decommission(s, id, msg);
  } else if (strcmp(op, "submit") == 0) {
    tl_taskset_desc d = {0};
    uint64_t shuffle_map, barrier;
    if (na < 8 || !str_arg(&a[7], &d.pool) || !key_u32(&a[0], "stage", &d.stage_id) ||
        !key_u32(&a[1], "attempt", &d.stage_attempt) || !key_u32(&a[2], "priority", &d.priority) ||
        !key_u32(&a[3], "ntasks", &d.ntasks) || !key_u32(&a[4], "cpus", &d.cpus_per_task) ||
        !key_u64(&a[5], "shuffle_map", &shuffle_map) || !key_u64(&a[6], "barrier", &barrier))
      return bad(r, op);
    d.shuffle_map = shuffle_map != 0;
    d.barrier = barrier != 0;
    /* Version 2: profile=P and the requests. */
    int first = 8;
    tl_resource_request *req;
    if (!parse_requests(a, na, &first, &d, &req)) {
      free(req);
      return bad(r, op);
    }
    /* Version 3: max_failures=N, then tags=N and N strings (at most TL_TAGS_MAX: a line with
     * more was refused before it was journaled). */
    if (first < na && key_u32(&a[first], "max_failures", &d.max_task_failures))
      first++;
    const char *tags[TL_TAGS_MAX];
    if (first < na && key_u32(&a[first], "tags", &d.ntags)) {
      first++;
      if (d.ntags == 0 || d.ntags > TL_TAGS_MAX || d.ntags > (uint32_t)(na - first)) {
        free(req);
        return bad(r, op);
      }
      for (uint32_t i = 0; i < d.ntags; i++, first++)
        if (!a[first].quoted || !str_arg(&a[first], &tags[i])) {
          free(req);
          return bad(r, op);
        }
      d.tags = tags;
    }
    /* Version 3, hard placement: spread=N, allow_executors=N and allow_hosts=N with their N
     * strings (at most TL_PLACE_MAX: a line with more was refused before it was journaled). */
    uint32_t spread = 0;
    if (first < na && key_u32(&a[first], "spread", &spread)) {
      first++;
      d.spread = (tl_spread)spread;
    }
    const char *allowed[2][TL_PLACE_MAX];
    static const char *const allow_keys[2] = {"allow_executors", "allow_hosts"};
    for (int k = 0; k < 2; k++) {
      uint32_t n;
      if (first >= na || !key_u32(&a[first], allow_keys[k], &n))
        continue;
      first++;
      if (n == 0 || n > TL_PLACE_MAX || n > (uint32_t)(na - first)) {
        free(req);
        return bad(r, op);
      }
      for (uint32_t i = 0; i < n; i++, first++)
        if (!a[first].quoted || !str_arg(&a[first], &allowed[k][i])) {
          free(req);
          return bad(r, op);
        }
      if (k == 0) {
        d.allowed_executors = allowed[0];
        d.nallowed_executors = n;
      } else {
        d.allowed_hosts = allowed[1];
        d.nallowed_hosts = n;
      }
    }
    /* Preferences: "task=I prefs=N" then N pairs of strings (host, executor or -). */
    tl_task_desc *tasks = NULL;
    tl_location *locs = NULL;
    if (na > first) {
      size_t nlocs = (size_t)(na - first) / 2;
      tasks = d.ntasks > 0 ? calloc(d.ntasks, sizeof *tasks) : NULL;
      locs = calloc(nlocs > 0 ? nlocs : 1, sizeof *locs);
      if (tasks == NULL || locs == NULL) {
        free(tasks);
        free(locs);
        free(req);
        return stop(r, TLR_NO_MEMORY, "out of memory");
      }
      size_t used = 0;
      for (int k = first; k < na;) {
        uint32_t index, n;
        if (k + 2 > na || !key_u32(&a[k], "task", &index) || !key_u32(&a[k + 1], "prefs", &n) ||
            index >= d.ntasks || n == 0 || (size_t)(na - k - 2) / 2 < n) {
          free(tasks);
          free(locs);
          free(req);
          return bad(r, op);
        }
        k += 2;
        tasks[index].prefs = &locs[used];
        tasks[index].nprefs = n;
        for (uint32_t j = 0; j < n; j++, k += 2, used++)
          if (!str_arg(&a[k], &locs[used].host) || !str_arg(&a[k + 1], &locs[used].executor_id)) {
            free(tasks);
            free(locs);
            free(req);
            return bad(r, op);
          }
      }
      d.tasks = tasks;
    }
    if (r->nsubs == r->capsubs) {
      size_t cap = r->capsubs ? 2 * r->capsubs : 16;
      submission *subs = realloc(r->subs, cap * sizeof *subs);
      if (subs == NULL) {
        free(tasks);
        free(locs);
        free(req);
        return stop(r, TLR_NO_MEMORY, "out of memory");
      }
      r->subs = subs;
      r->capsubs = cap;
    }
    payload *pl = malloc(sizeof *pl);
    if (pl == NULL) {
      free(tasks);
      free(locs);
      free(req);
      return stop(r, TLR_NO_MEMORY, "out of memory");
    }
    pl->sub = r->nsubs;
    d.payload = pl;
    tl_taskset_id id = 0;
    *err = tl_submit(s, &d, &id);
    free(tasks);
    free(locs);
    free(req);
    if (*err != TL_OK) {
      free(pl);
    } else {
      r->subs[r->nsubs].id = id;
      r->subs[r->nsubs].released = false;
      r->nsubs++;
      r->report->submitted++;
      uint64_t want;
      *matches = nextra == 1 && key_u64(&extra[0], "ts", &want) && want == id;
    }
  } else if (strcmp(op, "pool_add") == 0 || strcmp(op, "pool_set") == 0) { /* set: after 0.2.0 */
    const char *name;
    uint32_t weight, min_share;
    const char *mode = na == 4 ? a[1].text : NULL;
    if (mode == NULL || a[1].quoted || (strcmp(mode, "FIFO") != 0 && strcmp(mode, "FAIR") != 0) ||
        !str_arg(&a[0], &name) || !key_u32(&a[2], "weight", &weight) ||
        !key_u32(&a[3], "min_share", &min_share))
      return bad(r, op);
    tl_sched_mode m = strcmp(mode, "FAIR") == 0 ? TL_FAIR : TL_FIFO;
    *err = strcmp(op, "pool_add") == 0 ? tl_pool_add(s, name, m, weight, min_share)
                                       : tl_pool_set(s, name, m, weight, min_share);
  } else if (strcmp(op, "pool_add_child") == 0) {
    const char *parent, *name;
    uint32_t weight, min_share;
    const char *mode = na == 5 ? a[2].text : NULL;
    if (mode == NULL || a[2].quoted || (strcmp(mode, "FIFO") != 0 && strcmp(mode, "FAIR") != 0) ||
        !str_arg(&a[0], &parent) || !str_arg(&a[1], &name) || !key_u32(&a[3], "weight", &weight) ||
        !key_u32(&a[4], "min_share", &min_share))
      return bad(r, op);
    *err = tl_pool_add_child(s, parent, name, strcmp(mode, "FAIR") == 0 ? TL_FAIR : TL_FIFO, weight,
                             min_share);
  } else if (strcmp(op, "kill_task") == 0) {
    uint64_t tid, interrupt;
    const char *reason;
    if (na != 3 || !key_u64(&a[0], "tid", &tid) || !key_u64(&a[1], "interrupt", &interrupt) ||
        !str_arg(&a[2], &reason))
      return bad(r, op);
    *err = tl_kill_task(s, tid, interrupt != 0, reason);
  } else if (strcmp(op, "kill_stage") == 0) {
    uint32_t stage;
    uint64_t interrupt;
    const char *reason;
    if (na != 3 || !key_u32(&a[0], "stage", &stage) || !key_u64(&a[1], "interrupt", &interrupt) ||
        !str_arg(&a[2], &reason))
      return bad(r, op);
    *err = tl_kill_stage(s, stage, interrupt != 0, reason);
  } else if (strcmp(op, "cancel_stage") == 0) {
    uint32_t stage;
    const char *reason;
    if (na != 2 || !key_u32(&a[0], "stage", &stage) || !str_arg(&a[1], &reason))
      return bad(r, op);
    *err = tl_cancel_stage(s, stage, reason);
  } else if (strcmp(op, "cancel_tag") == 0 || strcmp(op, "kill_tag") == 0) {
    const char *tag, *reason;
    uint64_t interrupt, want;
    if (na != 3 || !a[0].quoted || !str_arg(&a[0], &tag) ||
        !key_u64(&a[1], "interrupt", &interrupt) || !str_arg(&a[2], &reason))
      return bad(r, op);
    size_t n = 0;
    *err = op[0] == 'c' ? tl_cancel_tag(s, tag, interrupt != 0, reason, &n)
                        : tl_kill_tag(s, tag, interrupt != 0, reason, &n);
    if (*err == TL_OK)
      *matches = nextra == 1 && key_u64(&extra[0], "tasksets", &want) && want == n;
  } else if (strcmp(op, "partition_completed") == 0) {
    uint32_t stage, index;
    if (na != 2 || !key_u32(&a[0], "stage", &stage) || !key_u32(&a[1], "index", &index))
      return bad(r, op);
    *err = tl_partition_completed(s, stage, index);
  } else if (strcmp(op, "offers") == 0) {
    uint64_t cap;
    if (na < 1 || !key_u64(&a[0], "cap", &cap))
      return bad(r, op);
    return offer_round(r, op, a, na, 1, false, cap, 0, extra, nextra, err, matches);
  } else if (strcmp(op, "offers_grants") == 0) {
    uint64_t cap, gcap;
    if (na < 2 || !key_u64(&a[0], "cap", &cap) || !key_u64(&a[1], "gcap", &gcap))
      return bad(r, op);
    return offer_round(r, op, a, na, 2, true, cap, gcap, extra, nextra, err, matches);
  } else if (strcmp(op, "update") == 0) {
    const char *id, *msg;
    uint64_t tid, has_result, size;
    uint64_t no_retry = 0;
    int state = na == 7 || na == 8 ? name_index(a[2].text, state_names, COUNT(state_names)) : -1;
    if (state < 0 || !str_arg(&a[0], &id) || !key_u64(&a[1], "tid", &tid) ||
        !str_arg(&a[4], &msg) || !key_u64(&a[5], "result", &has_result) ||
        !key_u64(&a[6], "size", &size) || (na == 8 && !key_u64(&a[7], "no_retry", &no_retry)))
      return bad(r, op);
    tl_update u = {0};
    u.no_retry = no_retry != 0; /* version 3 */
    u.state = (tl_task_state)state;
    if (u.state == TL_TASK_FAILED) {
      int kind = name_index(a[3].text, end_names, COUNT(end_names));
      if (kind < 0)
        return bad(r, op);
      u.failure = (tl_end_kind)kind;
    }
    u.message = msg;
    u.result_size = (size_t)size;
    if (has_result) {
      if ((u.result = malloc(1)) == NULL)
        return stop(r, TLR_NO_MEMORY, "out of memory");
      u.result_free = result_free;
    }
    *err = tl_status_update(s, id, tid, &u);
    if (*err != TL_OK)
      free(u.result); /* on error the result stays the caller's */
  } else if (strcmp(op, "tick") == 0) {
    if (na != 0)
      return bad(r, op);
    (void)tl_tick(s);
    *err = TL_OK;
  } else if (strcmp(op, "restore") == 0 || strcmp(op, "reconcile") == 0 ||
             strcmp(op, "reconcile_items") == 0) {
    return stop(r, TLR_BAD_INPUT,
                "%s: the journal of a restored scheduler does not replay (its state came from a "
                "snapshot, which the journal does not hold)",
                op);
  } else {
    return stop(r, TLR_BAD_INPUT, "unknown call %s", op);
  }
  return TLR_OK;
}

/* The end of the replay: is anything retained? */
static int finish(replayer *r) {
  tlr_report *rep = r->report;
  tl_stats_get(r->s, &rep->final);
  rep->drained = rep->final.tasksets_active + rep->final.tasksets_zombie == 0 &&
                 rep->final.attempts_running + rep->final.attempts_frozen == 0;
  int verdict = TLR_OK;
  if (!rep->drained) {
    size_t used = (size_t)snprintf(rep->why, sizeof rep->why,
                                   "not drained: %zu task sets active, %zu zombie, %zu attempts "
                                   "running, %zu frozen\n",
                                   rep->final.tasksets_active, rep->final.tasksets_zombie,
                                   rep->final.attempts_running, rep->final.attempts_frozen);
    for (size_t i = 0; i < r->nsubs && used < sizeof rep->why - 1; i++) {
      if (r->subs[i].released)
        continue;
      tl_explain_taskset(r->s, r->subs[i].id, rep->why + used, sizeof rep->why - used);
      used += strlen(rep->why + used);
    }
    verdict = TLR_NOT_DRAINED;
  }
  tl_scheduler_free(r->s);
  r->s = NULL;
  return verdict;
}

static int replay_tokens(replayer *r, char *line, token *tok, int max, bool *done);

static int replay_line(replayer *r, char *line, bool *seen_header, bool *done) {
  size_t len = strlen(line);
  while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
    line[--len] = '\0';
  if (len == 0)
    return TLR_OK;
  if (!*seen_header) {
    if (strcmp(line, "# taskledger journal v1") != 0 &&
        strcmp(line, "# taskledger journal v2") != 0 &&
        strcmp(line, "# taskledger journal v3") != 0)
      return stop(r, TLR_BAD_INPUT,
                  "not a taskledger journal of version 1 to 3 (first line: %.60s)", line);
    *seen_header = true;
    return TLR_OK;
  }
  if (line[0] == '#')
    return TLR_OK;
  size_t max = 1; /* a token per space at the most */
  for (const char *p = line; *p != '\0'; p++)
    max += *p == ' ';
  if (max > INT32_MAX)
    return stop(r, TLR_BAD_INPUT, "line too long");
  token *tok = malloc(max * sizeof *tok);
  if (tok == NULL)
    return stop(r, TLR_NO_MEMORY, "out of memory");
  int verdict = replay_tokens(r, line, tok, (int)max, done);
  free(tok);
  return verdict;
}

static int replay_tokens(replayer *r, char *line, token *tok, int max, bool *done) {
  int n = tokenize(line, tok, max);
  if (n <= 0)
    return stop(r, TLR_BAD_INPUT, "malformed line");
  if (tok[0].text != NULL && strcmp(tok[0].text, "config") == 0) {
    if (r->s != NULL)
      return stop(r, TLR_BAD_INPUT, "a second config line");
    return start_scheduler(r, tok, n);
  }
  uint64_t t;
  if (tok[0].quoted || tok[0].text == NULL || tok[0].text[0] != '@' ||
      !parse_u64(tok[0].text + 1, &t) || n < 4)
    return stop(r, TLR_BAD_INPUT, "malformed line");
  if (r->s == NULL)
    return stop(r, TLR_BAD_INPUT, "a call before the config line");
  int eq = -1;
  for (int i = 2; i < n; i++)
    if (!tok[i].quoted && tok[i].text != NULL && strcmp(tok[i].text, "=") == 0)
      eq = i; /* the last "=": strings are quoted, so it is the result's */
  int want;
  if (eq < 0 || eq + 1 >= n || !parse_err(tok[eq + 1].text, &want))
    return stop(r, TLR_BAD_INPUT, "no result on the line");
  const char *op = tok[1].text != NULL ? tok[1].text : "-";
  r->now = t;

  if (strcmp(op, "free") == 0) {
    *done = true;
    return finish(r);
  }
  if (want == TL_ENOMEM) { /* it changed nothing when it was journaled */
    r->report->skipped++;
    return TLR_OK;
  }
  int got = TL_OK;
  bool matches = true;
  int verdict = call(r, op, tok + 2, eq - 2, tok + eq + 2, n - eq - 2, &got, &matches);
  if (verdict != TLR_OK)
    return verdict;
  r->report->calls++;
  if (r->trace != NULL)
    fprintf(r->trace, "%zu: %s -> %s%s\n", r->report->lines, op, tl_err_name(got),
            matches ? "" : " (results differ)");
  if (got == TL_ENOMEM)
    return stop(r, TLR_NO_MEMORY, "%s ran out of memory in the replay", op);
  if (got != want)
    return stop(r, TLR_BROKEN, "diverged: %s returned %s, the journal says %s", op,
                tl_err_name(got), tl_err_name(want));
  if (!matches)
    return stop(r, TLR_BROKEN, "diverged: %s's results differ from the journal's", op);
  char why[512];
  if (tl_check(r->s, why, sizeof why) != TL_OK)
    return stop(r, TLR_BROKEN, "invariant broken after %s: %s", op, why);
  return TLR_OK;
}

int tlr_replay(FILE *in, const tlr_options *options, tlr_report *report) {
  memset(report, 0, sizeof *report);
  replayer r = {0};
  r.report = report;
  r.trace = options != NULL ? options->trace : NULL;
  char *line = NULL;
  size_t cap = 0;
  bool seen_header = false, done = false;
  int verdict = TLR_OK;
  while (verdict == TLR_OK && !done && getline(&line, &cap, in) >= 0) {
    report->lines++;
    verdict = replay_line(&r, line, &seen_header, &done);
  }
  free(line);
  if (verdict == TLR_OK && !done) {
    if (r.s == NULL)
      verdict = stop(&r, TLR_BAD_INPUT, "no config line");
    else
      verdict = finish(&r);
  }
  if (r.s != NULL) /* stopped early: free what is left (its payloads come back) */
    tl_scheduler_free(r.s);
  free(r.subs);
  return verdict;
}

int tlr_replay_text(const char *text, const tlr_options *options, tlr_report *report) {
  if (text[0] == '\0') {
    memset(report, 0, sizeof *report);
    snprintf(report->why, sizeof report->why, "empty journal");
    return TLR_BAD_INPUT;
  }
  FILE *in = fmemopen((void *)text, strlen(text), "r");
  if (in == NULL) {
    memset(report, 0, sizeof *report);
    return TLR_NO_MEMORY;
  }
  int verdict = tlr_replay(in, options, report);
  fclose(in);
  return verdict;
}
