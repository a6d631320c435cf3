/* Tests of the SVG writer (svg.c, docs/sim-svg.md): synthetic records, among them the
 * SPARK-18553 shape, written to files and read back: well-formed XML (a small checker here;
 * test/sim/wellformed_svg.sh also runs xmllint on the same files), the elements a reader needs,
 * escaping of hostile text, the empty record and the size of a large run.
 *
 *   tl-sim-svg-tests [DIR]    writes its SVGs into DIR (default "."), exits 0 when every check
 *                             passed, 1 otherwise. */
#include "record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MS 1000000ull    /* a millisecond in virtual nanoseconds */
#define SIZE_CAP 4000000 /* "a few MB": what a 100,000-attempt run may weigh at most */

static int failures;
static const char *dir = ".";

static void fail(const char *test, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "FAIL %s: ", test);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  failures++;
}

#define CHECK(test, cond, ...)                                                                     \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      fail(test, __VA_ARGS__);                                                                     \
  } while (0)

/* Appends that cannot fail here: out of memory ends the test program. */
static void must(int rc) {
  if (rc != 0) {
    fprintf(stderr, "out of memory building a record\n");
    exit(1);
  }
}

static uint32_t add_exec(sim_record *r, const char *id, const char *host, uint32_t cores,
                         uint64_t joined) {
  uint32_t i;
  must(sim_record_exec(r, id, host, "rack-1", cores, joined, &i));
  must(sim_record_mark(r, joined, i, SIM_MARK_JOINED, "registered"));
  return i;
}

static void add_slice(sim_record *r, uint32_t exec, uint32_t core, uint64_t start, uint64_t end,
                      uint32_t stage, uint32_t index, sim_outcome outcome) {
  static uint64_t tid;
  sim_slice s = {.exec = exec,
                 .core = core,
                 .start_ns = start,
                 .end_ns = end,
                 .tid = ++tid,
                 .stage_id = stage,
                 .index = index,
                 .outcome = (uint8_t)outcome};
  must(sim_record_slice(r, &s));
}

static void add_sample(sim_record *r, uint64_t t, uint32_t running, uint32_t frozen,
                       uint32_t active, uint32_t zombie, uint32_t alive, uint32_t pending_loss,
                       uint32_t pending) {
  sim_sample s = {t, running, frozen, active, zombie, alive, pending_loss, pending};
  must(sim_record_sample(r, &s));
}

/* SPARK-18553: two executors of 4 cores. Stage 0.0 succeeds; stage 1.0 runs on all 8 cores
 * when exec-1 is lost (first the pending phase, its attempts frozen, then the real reason);
 * the stage fails, its task set becomes a zombie whose 4 attempts on exec-2 keep running and
 * drain: the zombie count goes back to 0 and the task set is released. With `leak`, the shape
 * of the bug instead: the zombie is never cleaned up. */
static void spark18553(sim_record *r, int leak) {
  sim_record_init(r);
  uint32_t e[2] = {add_exec(r, "exec-1", "host-1", 4, 0), add_exec(r, "exec-2", "host-2", 4, 0)};
  must(sim_record_mark(r, 0, SIM_NO_EXEC, SIM_MARK_STAGE_SUBMITTED, "stage 0.0 (8 tasks)"));
  add_sample(r, 0, 8, 0, 1, 0, 2, 0, 0);
  uint32_t running = 8;
  for (uint32_t k = 0; k < 8; k++) {
    uint64_t end = (600 + 50 * k) * MS;
    add_slice(r, e[k / 4], k % 4, 0, end, 0, k, SIM_OUT_SUCCESS);
    running--;
    add_sample(r, end, running, 0, running ? 1 : 0, 0, 2, 0, 0);
  }
  must(sim_record_mark(r, 950 * MS, SIM_NO_EXEC, SIM_MARK_TASKSET_RELEASED, "stage 0.0"));
  must(sim_record_mark(r, 1000 * MS, SIM_NO_EXEC, SIM_MARK_STAGE_SUBMITTED, "stage 1.0 (8 tasks)"));
  add_sample(r, 1000 * MS, 8, 0, 1, 0, 2, 0, 0);
  must(sim_record_mark(r, 2000 * MS, e[0], SIM_MARK_LOST_PENDING,
                       "connection closed; reason pending"));
  add_sample(r, 2000 * MS, 4, 4, 1, 0, 2, 1, 0);
  must(sim_record_mark(r, 2500 * MS, e[0], SIM_MARK_LOST, "exited 137, killed for memory"));
  for (uint32_t k = 0; k < 4; k++)
    add_slice(r, e[0], k, 1000 * MS, 2500 * MS, 1, k, SIM_OUT_LOST);
  sim_record_exec_gone(r, e[0], 2500 * MS);
  must(sim_record_mark(r, 2500 * MS, SIM_NO_EXEC, SIM_MARK_STAGE_FAILED,
                       "stage 1.0: task 0 failed 1 time (max_task_failures 1): exec-1 lost"));
  must(sim_record_mark(r, 2500 * MS, SIM_NO_EXEC, SIM_MARK_JOB_DONE, "job 0 failed"));
  add_sample(r, 2500 * MS, 4, 0, 0, 1, 1, 0, 0);
  static const uint64_t ends[4] = {3100, 3600, 4200, 4800};
  for (uint32_t k = 0; k < 4; k++) {
    add_slice(r, e[1], k, 1000 * MS, ends[k] * MS, 1, 4 + k, SIM_OUT_ZOMBIE);
    add_sample(r, ends[k] * MS, 3 - k, 0, 0, leak || k < 3 ? 1 : 0, 1, 0, 0);
  }
  if (!leak)
    must(sim_record_mark(r, 4800 * MS, SIM_NO_EXEC, SIM_MARK_TASKSET_RELEASED,
                         "stage 1.0: its last zombie attempt ended"));
  sim_record_finish(r, 5500 * MS);
}

/* Hostile text everywhere a string reaches the picture, every outcome and every mark kind. */
static const char *const hostile_ids[] = {"<&\"'>", "exec-\"2\"&<b>", "bad-\xff\xfe-utf8",
                                          "ctl-\x01\x1f-end", "\xc3\xa9t\xc3\xa9-\xe2\x9c\x93"};
static const char *const hostile_escaped[] = {"&lt;&amp;&quot;&apos;&gt;",
                                              "exec-&quot;2&quot;&amp;&lt;b&gt;", "bad-?\?-utf8",
                                              "ctl-?\?-end", "\xc3\xa9t\xc3\xa9-\xe2\x9c\x93"};
#define NHOSTILE 5

static void hostile(sim_record *r) {
  sim_record_init(r);
  for (uint32_t i = 0; i < NHOSTILE; i++)
    add_exec(r, hostile_ids[i], "<host>&", 2, i * 10 * MS);
  for (uint32_t o = 0; o < SIM_OUT_COUNT; o++)
    add_slice(r, o % NHOSTILE, o % 2, (100 + 50 * o) * MS, (140 + 50 * o) * MS, 3, o,
              (sim_outcome)o);
  for (uint32_t k = 1; k < SIM_MARK_COUNT; k++)
    must(sim_record_mark(r, (300 + 40 * k) * MS,
                         k <= SIM_MARK_DECOMMISSION ? k % NHOSTILE : SIM_NO_EXEC, (sim_mark_kind)k,
                         "<script>alert('x&y')</script> \"]]>\x02"));
  sim_record_exec_gone(r, 1, 400 * MS);
  add_sample(r, 0, 0, 0, 1, 0, 5, 0, 3);
  add_sample(r, 500 * MS, 2, 1, 1, 1, 4, 1, 0);
  add_sample(r, 900 * MS, 0, 0, 0, 0, 4, 0, 0);
  sim_record_finish(r, 1000 * MS);
}

/* A large run: 16 executors of 8 cores, 100,000 attempts, 150,000 samples, one loss. */
static void large(sim_record *r) {
  sim_record_init(r);
  uint64_t now[128] = {0};
  uint32_t rnd = 12345;
  for (uint32_t i = 0; i < 16; i++) {
    char id[32];
    snprintf(id, sizeof id, "exec-%u", i);
    add_exec(r, id, "host", 8, 0);
  }
  for (uint32_t i = 0; i < 100000; i++) {
    uint32_t row = i % 128;
    rnd = rnd * 1103515245u + 12345u;
    uint64_t len = (1 + (rnd >> 16) % 20) * MS, gap = ((rnd >> 8) % 3) * MS;
    uint32_t pick = (rnd >> 20) % 100;
    sim_outcome o = pick < 2 ? SIM_OUT_FAILED : pick < 3 ? SIM_OUT_KILLED : SIM_OUT_SUCCESS;
    add_slice(r, row / 8, row % 8, now[row] + gap, now[row] + gap + len, i / 5000, i, o);
    now[row] += gap + len;
  }
  must(sim_record_mark(r, 4000 * MS, 3, SIM_MARK_HEARTBEAT_TIMEOUT, "silent for 10 s"));
  for (uint32_t i = 0; i < 150000; i++)
    add_sample(r, (uint64_t)i * 60000, (i * 7) % 128, 0, 1 + i % 3, (i / 50000) % 2, 16, 0,
               100000 - i / 2);
  add_sample(r, 9000 * MS, 0, 0, 0, 0, 16, 0, 0);
  sim_record_finish(r, 9500 * MS);
}

/* 100 executors of 2 cores; only executor 90 is lost, so it must be among the lanes drawn. */
static void many(sim_record *r) {
  sim_record_init(r);
  for (uint32_t i = 0; i < 100; i++) {
    char id[32];
    snprintf(id, sizeof id, "exec-%u", i);
    add_exec(r, id, "host", 2, i * MS);
    add_slice(r, i, i % 2, 200 * MS, 300 * MS, 0, i, SIM_OUT_SUCCESS);
  }
  must(sim_record_mark(r, 250 * MS, 90, SIM_MARK_DECOMMISSION, "scaled down"));
  add_sample(r, 0, 100, 0, 1, 0, 100, 0, 0);
  add_sample(r, 300 * MS, 0, 0, 0, 0, 100, 0, 0);
  sim_record_finish(r, 400 * MS);
}

/* ---- Reading back ------------------------------------------------------------------ */

/* Writes r to DIR/name.svg and returns the file's bytes (malloc'd, NUL-terminated), or NULL. */
static char *write_read(const char *test, const sim_record *r, const char *name, size_t *size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.svg", dir, name);
  FILE *f = fopen(path, "w");
  if (!f) {
    fail(test, "cannot create %s: %s", path, strerror(errno));
    return NULL;
  }
  int rc = sim_svg_write(r, f);
  if (fclose(f) != 0 || rc != 0) {
    fail(test, "sim_svg_write failed: %s", strerror(errno));
    return NULL;
  }
  f = fopen(path, "rb");
  if (!f) {
    fail(test, "cannot read %s back", path);
    return NULL;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *doc = malloc((size_t)n + 1);
  if (!doc || fread(doc, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(doc);
    fail(test, "cannot read %s back", path);
    return NULL;
  }
  fclose(f);
  doc[n] = '\0';
  *size = (size_t)n;
  if (strlen(doc) != (size_t)n)
    fail(test, "%s holds a NUL byte", name);
  return doc;
}

static size_t count(const char *doc, const char *needle) {
  size_t n = 0, len = strlen(needle);
  for (const char *p = strstr(doc, needle); p; p = strstr(p + len, needle))
    n++;
  return n;
}

/* ---- A small XML well-formedness checker ---------------------------------------------
 * Enough for what svg.c writes: a prolog, elements, attributes in either quotes, comments,
 * character data and references; checks names and nesting, duplicate attributes, a single
 * root, the five entities and numeric references, UTF-8 and the characters XML forbids. */

static int name_start(int c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == ':';
}
static int name_char(int c) {
  return name_start(c) || (c >= '0' && c <= '9') || c == '-' || c == '.';
}

static const char *xml_name(const char *p) {
  if (!name_start((unsigned char)*p))
    return NULL;
  while (name_char((unsigned char)*p))
    p++;
  return p;
}

static const char *xml_ref(const char *p) { /* p at '&': past the ';', or NULL */
  static const char *const named[] = {"amp;", "lt;", "gt;", "quot;", "apos;"};
  p++;
  for (int i = 0; i < 5; i++)
    if (strncmp(p, named[i], strlen(named[i])) == 0)
      return p + strlen(named[i]);
  if (*p++ != '#')
    return NULL;
  int hex = *p == 'x', digits = 0;
  p += hex;
  while ((hex && strchr("0123456789abcdefABCDEF", *p) && *p) || (!hex && *p >= '0' && *p <= '9'))
    p++, digits++;
  return digits && *p == ';' ? p + 1 : NULL;
}

static int xml_chars_ok(const unsigned char *p) { /* UTF-8 and no forbidden controls */
  while (*p) {
    if (*p < 0x20 && *p != '\t' && *p != '\n' && *p != '\r')
      return 0;
    if (*p < 0x80) {
      p++;
      continue;
    }
    int len = *p >= 0xF0 && *p <= 0xF4 ? 4 : *p >= 0xE0 ? 3 : *p >= 0xC2 && *p <= 0xDF ? 2 : 0;
    if (!len || *p > 0xF4)
      return 0;
    for (int k = 1; k < len; k++)
      if ((p[k] & 0xC0) != 0x80)
        return 0;
    p += len;
  }
  return 1;
}

/* NULL when doc is well-formed, else what is wrong (and where, in *at). */
static const char *xml_check(const char *doc, size_t *at) {
  const char *stack[256];
  size_t stack_len[256], depth = 0;
  int roots = 0;
  const char *p = doc;
  if (!xml_chars_ok((const unsigned char *)doc))
    return *at = 0, "bytes that are not XML characters";
  if (strncmp(p, "<?xml ", 6) == 0) {
    p = strstr(p, "?>");
    if (!p)
      return *at = 0, "unterminated prolog";
    p += 2;
  }
  while (*p) {
    *at = (size_t)(p - doc);
    if (*p == '&') {
      if (!depth || !(p = xml_ref(p)))
        return "bad reference or text outside the root";
      continue;
    }
    if (*p != '<') {
      if (!depth && *p != ' ' && *p != '\n' && *p != '\t' && *p != '\r')
        return "text outside the root";
      p++;
      continue;
    }
    if (strncmp(p, "<!--", 4) == 0) {
      p = strstr(p + 4, "-->");
      if (!p)
        return "unterminated comment";
      p += 3;
      continue;
    }
    if (p[1] == '/') {
      const char *name = p + 2, *end = xml_name(name);
      if (!end || !depth)
        return "bad end tag";
      depth--;
      if ((size_t)(end - name) != stack_len[depth] || strncmp(name, stack[depth], stack_len[depth]))
        return "end tag does not match";
      while (*end == ' ' || *end == '\n')
        end++;
      if (*end != '>')
        return "bad end tag";
      p = end + 1;
      continue;
    }
    const char *name = p + 1, *q = xml_name(name);
    if (!q)
      return "bad element name";
    if (!depth && roots++)
      return "a second root";
    const char *attrs[64];
    size_t attr_len[64], nattrs = 0;
    for (;;) {
      int ws = 0;
      while (*q == ' ' || *q == '\n' || *q == '\t' || *q == '\r')
        q++, ws = 1;
      if (*q == '>' || (q[0] == '/' && q[1] == '>'))
        break;
      const char *an = q;
      if (!ws || !(q = xml_name(an)))
        return "bad attribute";
      for (size_t k = 0; k < nattrs; k++)
        if (attr_len[k] == (size_t)(q - an) && strncmp(attrs[k], an, attr_len[k]) == 0)
          return "duplicate attribute";
      if (nattrs < 64) {
        attrs[nattrs] = an;
        attr_len[nattrs++] = (size_t)(q - an);
      }
      if (*q++ != '=' || (*q != '"' && *q != '\''))
        return "attribute without a quoted value";
      char quote = *q++;
      while (*q != quote) {
        if (!*q || *q == '<')
          return "bad attribute value";
        if (*q == '&') {
          if (!(q = xml_ref(q)))
            return "bad reference in an attribute";
        } else {
          q++;
        }
      }
      q++;
    }
    if (*q == '>') {
      if (depth == 256)
        return "too deep";
      stack[depth] = name;
      stack_len[depth++] = (size_t)(xml_name(name) - name);
      p = q + 1;
    } else {
      p = q + 2;
    }
  }
  if (depth)
    return "unclosed element";
  if (roots != 1)
    return "no root";
  return NULL;
}

static void check_xml(const char *test, const char *doc) {
  size_t at = 0;
  const char *why = xml_check(doc, &at);
  if (why)
    fail(test, "not well-formed XML at byte %zu: %s: \"%.60s\"", at, why, doc + at);
  CHECK(test, strstr(doc, "<svg xmlns=\"http://www.w3.org/2000/svg\"") != NULL, "no svg root");
  CHECK(test,
        !strstr(doc, "<script") && !strstr(doc, "<image") && !strstr(doc, "<style") &&
            !strstr(doc, "href=") && !strstr(doc, "@import"),
        "something external or a script");
}

/* The checker itself must refuse what is not XML, or its verdicts on the SVGs mean nothing. */
static void test_checker(void) {
  static const char *const bad[] = {"<a><b></a></b>", "<a>x &nbsp; y</a>",
                                    "<a x=\"<\"/>",   "<a x=\"1\" x=\"2\"/>",
                                    "<a/><b/>",       "<a>",
                                    "<a x=1/>",       "<a>\x01</a>",
                                    "<a>\xff</a>",    "text<a/>",
                                    "<a>&amp</a>",    "<a x=\"&\"/>"};
  size_t at;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    CHECK("checker", xml_check(bad[i], &at) != NULL, "accepted %s", bad[i]);
  CHECK("checker",
        xml_check("<?xml version=\"1.0\"?>\n<a x='&lt;'><b/>t&#38;&#x26;<!-- c --></a>\n", &at) ==
            NULL,
        "refused well-formed XML");
}

/* The value of attribute `attr` in the element whose id is `id`, or NULL. */
static const char *attr_of(const char *doc, const char *id, const char *attr, char *buf, size_t n) {
  char needle[128];
  snprintf(needle, sizeof needle, "id=\"%s\"", id);
  const char *el = strstr(doc, needle);
  if (!el)
    return NULL;
  const char *end = strchr(el, '>');
  snprintf(needle, sizeof needle, " %s=\"", attr);
  const char *a = strstr(el, needle);
  if (!a || a > end)
    return NULL;
  a += strlen(needle);
  const char *q = strchr(a, '"');
  size_t len = (size_t)(q - a) < n - 1 ? (size_t)(q - a) : n - 1;
  memcpy(buf, a, len);
  buf[len] = '\0';
  return buf;
}

/* The y of the last point of the polyline with this id; -1 when there is none. */
static double last_point_y(const char *doc, const char *id) {
  static char points[1 << 22];
  if (!attr_of(doc, id, "points", points, sizeof points))
    return -1;
  size_t n = strlen(points);
  while (n && points[n - 1] == ' ')
    points[--n] = '\0';
  const char *comma = strrchr(points, ',');
  return comma ? strtod(comma + 1, NULL) : -1;
}

/* Legend entries for exactly the outcomes used; a lane per executor, labelled with its id. */
static void check_legend_and_lanes(const char *test, const char *doc, const sim_record *r,
                                   const char *const *escaped_ids) {
  char needle[6 * SIM_NAME_MAX + 64]; /* a lane label: an id, escaped (up to 6 bytes a byte) */
  for (int o = 0; o < SIM_OUT_COUNT; o++) {
    size_t used = 0;
    for (size_t i = 0; i < r->nslices; i++)
      used += r->slices[i].outcome == o;
    snprintf(needle, sizeof needle, "id=\"legend-outcome-%d\"", o);
    CHECK(test, count(doc, needle) == (used ? 1u : 0u),
          "legend for outcome %s: %zu entries, %zu used", sim_outcome_name((sim_outcome)o),
          count(doc, needle), used);
  }
  CHECK(test, count(doc, "<g id=\"lane-") == r->nexecs, "%zu lanes for %zu executors",
        count(doc, "<g id=\"lane-"), r->nexecs);
  for (size_t i = 0; i < r->nexecs; i++) {
    snprintf(needle, sizeof needle, "font-weight=\"bold\">%s</text>",
             escaped_ids ? escaped_ids[i] : r->execs[i].id);
    CHECK(test, count(doc, needle) == 1, "no lane label %s", needle);
  }
}

/* One marker on a lane per loss mark of each kind. */
static void check_loss_marks(const char *test, const char *doc, const sim_record *r) {
  char needle[64];
  for (unsigned k = SIM_MARK_LOST_PENDING; k <= SIM_MARK_DECOMMISSION; k++) {
    size_t want = 0;
    for (size_t i = 0; i < r->nmarks; i++)
      want += r->marks[i].kind == k && r->marks[i].exec != SIM_NO_EXEC;
    snprintf(needle, sizeof needle, "<g data-mark=\"%u\"><title>", k);
    CHECK(test, count(doc, needle) == want, "%zu markers of %s, %zu marks", count(doc, needle),
          sim_mark_name((sim_mark_kind)k), want);
  }
}

/* ---- The tests ----------------------------------------------------------------------- */

static void test_spark18553(void) {
  const char *t = "spark18553";
  sim_record r;
  spark18553(&r, 0);
  size_t size;
  char *doc = write_read(t, &r, t, &size);
  if (doc) {
    check_xml(t, doc);
    check_legend_and_lanes(t, doc, &r, NULL);
    check_loss_marks(t, doc, &r);
    char buf[64];
    CHECK(t,
          attr_of(doc, "series-tasksets-zombie", "data-last", buf, sizeof buf) &&
              strcmp(buf, "0") == 0,
          "the zombie series does not end at 0");
    CHECK(t,
          attr_of(doc, "series-tasksets-zombie", "data-peak", buf, sizeof buf) &&
              strcmp(buf, "1") == 0,
          "the zombie series does not peak at 1");
    double y0 =
        attr_of(doc, "series-tasksets-zombie", "data-y0", buf, sizeof buf) ? strtod(buf, NULL) : -2;
    CHECK(t, last_point_y(doc, "series-tasksets-zombie") == y0,
          "the zombie line's last point is at y %.1f, its zero at %.1f",
          last_point_y(doc, "series-tasksets-zombie"), y0);
    CHECK(t, strstr(doc, "drained: all back to 0") != NULL, "no drained verdict");
    CHECK(t, strstr(doc, ">5 s</text>") && strstr(doc, ">0 s</text>"), "no ticks in seconds");
    CHECK(t, count(doc, "<rect x=") >= r.nslices, "not every attempt drawn");
    CHECK(t, strstr(doc, "exited 137, killed for memory") != NULL, "no tooltip for the loss");
    CHECK(t, count(doc, "stroke-dasharray=\"4 3\"") == 3, "no guides at the failure and releases");
    CHECK(t, size < 200000, "%zu bytes", size);
  }
  free(doc);
  sim_record_free(&r);
}

static void test_leak(void) {
  const char *t = "leak";
  sim_record r;
  spark18553(&r, 1);
  size_t size;
  char *doc = write_read(t, &r, t, &size);
  char buf[64];
  if (doc) {
    check_xml(t, doc);
    CHECK(t, strstr(doc, "NOT drained at the end") != NULL, "no failed verdict");
    CHECK(t,
          attr_of(doc, "series-tasksets-zombie", "data-last", buf, sizeof buf) &&
              strcmp(buf, "1") == 0,
          "the zombie series does not end at 1");
    CHECK(t, strstr(doc, "task sets zombie: 1 (1)") != NULL, "no final count");
  }
  free(doc);
  sim_record_free(&r);
}

static void test_hostile(void) {
  const char *t = "hostile";
  sim_record r;
  hostile(&r);
  size_t size;
  char *doc = write_read(t, &r, t, &size);
  if (doc) {
    check_xml(t, doc);
    check_legend_and_lanes(t, doc, &r, hostile_escaped);
    check_loss_marks(t, doc, &r);
    CHECK(t,
          !strstr(doc, "<&") && !strstr(doc, "<script") && !strstr(doc, "<b>") &&
              !strstr(doc, "]]>"),
          "raw hostile text");
    CHECK(t,
          count(doc, "&lt;script&gt;alert(&apos;x&amp;y&apos;)&lt;/script&gt; &quot;]]&gt;?") ==
              SIM_MARK_COUNT - 1,
          "mark texts not escaped");
    CHECK(t, count(doc, "&lt;host&gt;&amp;") >= NHOSTILE, "hosts not escaped");
    for (int k = 1; k < SIM_MARK_COUNT; k++) {
      char needle[64];
      snprintf(needle, sizeof needle, "id=\"legend-mark-%d\"", k);
      CHECK(t, strstr(doc, needle) != NULL, "no legend for %s", sim_mark_name((sim_mark_kind)k));
    }
  }
  free(doc);
  sim_record_free(&r);
}

static void test_empty(void) {
  const char *t = "empty";
  sim_record r;
  sim_record_init(&r);
  size_t size;
  char *doc = write_read(t, &r, t, &size);
  if (doc) {
    check_xml(t, doc);
    CHECK(t, strstr(doc, "nothing to draw") != NULL, "does not say there is nothing");
  }
  free(doc);

  /* Samples but no executors; executors but no samples. */
  add_sample(&r, 0, 1, 0, 1, 0, 0, 0, 0);
  add_sample(&r, 10, 0, 0, 0, 0, 0, 0, 0);
  doc = write_read("samples-only", &r, "samples-only", &size);
  if (doc) {
    check_xml("samples-only", doc);
    CHECK("samples-only", strstr(doc, "no executors") != NULL, "does not say: no executors");
    CHECK("samples-only", strstr(doc, ">10 ns</text>") != NULL, "no ticks in ns");
  }
  free(doc);
  sim_record_free(&r);
  add_exec(&r, "exec-1", "host-1", 0, 5 * MS);
  doc = write_read("execs-only", &r, "execs-only", &size);
  if (doc) {
    check_xml("execs-only", doc);
    CHECK("execs-only", strstr(doc, "no samples") != NULL, "does not say: no samples");
    CHECK("execs-only", count(doc, "<g id=\"lane-") == 1, "no lane");
  }
  free(doc);
  sim_record_free(&r);
}

static void test_large(void) {
  const char *t = "large";
  sim_record r;
  large(&r);
  size_t size;
  char *doc = write_read(t, &r, t, &size);
  if (doc) {
    check_xml(t, doc);
    CHECK(t, size < SIZE_CAP, "%zu bytes, over %d", size, SIZE_CAP);
    CHECK(t, strstr(doc, "Summary: 100000 attempts") != NULL, "no summary note");
    CHECK(t, strstr(doc, "id=\"summary-0-0\"") && strstr(doc, "id=\"summary-1-"),
          "no summary paths for success and failure");
    CHECK(t, count(doc, "<title>tid ") == 0, "per-attempt tooltips in a summary");
    CHECK(t, count(doc, "<g id=\"lane-") == 16, "not 16 lanes");
    CHECK(t, strstr(doc, ">8 s</text>") != NULL, "no ticks in seconds");
    check_loss_marks(t, doc, &r);
    printf("large: %zu attempts, %zu samples: %zu bytes\n", r.nslices, r.nsamples, size);
  }
  free(doc);
  sim_record_free(&r);
}

static void test_many(void) {
  const char *t = "many";
  sim_record r;
  many(&r);
  size_t size;
  char *doc = write_read(t, &r, t, &size);
  if (doc) {
    check_xml(t, doc);
    CHECK(t, strstr(doc, "Showing 64 of 100 executors") != NULL, "no cap note");
    CHECK(t, count(doc, "<g id=\"lane-") == 64, "%zu lanes", count(doc, "<g id=\"lane-"));
    CHECK(t, strstr(doc, "<g id=\"lane-90\">") != NULL, "the lost executor not drawn");
    CHECK(t, strstr(doc, "<g id=\"lane-64\">") == NULL, "executor 64 drawn");
    CHECK(t, strstr(doc, "36 attempts not drawn") != NULL, "no count of hidden attempts");
    CHECK(t, count(doc, "<g data-mark=\"5\">") == 1, "no decommissioning marker");
  }
  free(doc);
  sim_record_free(&r);
}

/* Attempts that held addresses beyond cores (tl-sim's --gpu-executors): a GPU executor of 4
 * cores and 2 gpus, one attempt holding both whole, then four sharing gpu 1 a quarter each; a
 * CPU attempt beside them; and an executor whose resource name and addresses are hostile. Each
 * attempt's tooltip names what it held, the lanes say what their executors declared, and every
 * text is escaped. */
static void test_gpu(void) {
  const char *t = "gpu";
  sim_record r;
  sim_record_init(&r);
  uint32_t g = add_exec(&r, "exec-1", "host-1", 4, 0);
  uint32_t c = add_exec(&r, "exec-2", "host-1", 4, 0);
  uint32_t h = add_exec(&r, "exec-3", "host-2", 2, 0);
  sim_record_exec_resource(&r, g, "gpu", 2);
  sim_record_exec_resource(&r, h, "g<&>\"", 3);
  sim_slice s = {.exec = g,
                 .core = 0,
                 .start_ns = 0,
                 .end_ns = 2000 * MS,
                 .tid = 1,
                 .resource = "gpu",
                 .addresses = "0,1"};
  must(sim_record_slice(&r, &s));
  for (uint32_t i = 0; i < 4; i++) {
    sim_slice q = {.exec = g,
                   .core = i,
                   .start_ns = 2500 * MS,
                   .end_ns = 4000 * MS,
                   .tid = 2 + i,
                   .index = i,
                   .share = 4,
                   .resource = "gpu",
                   .addresses = "1"};
    must(sim_record_slice(&r, &q));
  }
  add_slice(&r, c, 0, 0, 3000 * MS, 1, 0, SIM_OUT_SUCCESS);
  sim_slice x = {.exec = h,
                 .core = 1,
                 .start_ns = 1000 * MS,
                 .end_ns = 3000 * MS,
                 .tid = 9,
                 .outcome = SIM_OUT_LOST,
                 .resource = "g<&>\"",
                 .addresses = "0,<1>&'"};
  must(sim_record_slice(&r, &x));
  add_sample(&r, 0, 1, 0, 1, 0, 3, 0, 0);
  add_sample(&r, 4000 * MS, 0, 0, 0, 0, 3, 0, 0);
  sim_record_finish(&r, 4000 * MS);
  size_t size;
  char *doc = write_read(t, &r, t, &size);
  if (doc) {
    check_xml(t, doc);
    CHECK(t, count(doc, " on exec-1 core 0, gpu 0,1</title>") == 1, "no tooltip for gpu 0,1");
    CHECK(t, count(doc, ", gpu 1 (1/4)</title>") == 4, "%zu tooltips for the quarter shares",
          count(doc, ", gpu 1 (1/4)</title>"));
    CHECK(t, count(doc, " on exec-2 core 0</title>") == 1, "the CPU attempt names a resource");
    CHECK(t, strstr(doc, "exec-1 on host-1, rack-1: 4 cores, 2 gpu, from") != NULL,
          "the GPU lane's tooltip does not say its gpus");
    CHECK(t, strstr(doc, "exec-2 on host-1, rack-1: 4 cores, from") != NULL,
          "the CPU lane's tooltip is not as before");
    CHECK(t, strstr(doc, "(4 cores, 2 gpu)</text>") != NULL, "the GPU lane's label");
    CHECK(t, strstr(doc, ", g&lt;&amp;&gt;&quot; 0,&lt;1&gt;&amp;&apos;</title>") != NULL,
          "the hostile resource not escaped in the attempt's tooltip");
    CHECK(t, strstr(doc, "2 cores, 3 g&lt;&amp;&gt;&quot;, from") != NULL,
          "the hostile resource not escaped in the lane's tooltip");
    CHECK(t, !strstr(doc, "g<&>"), "raw hostile text");
  }
  free(doc);
  sim_record_free(&r);
}

static void test_write_error(void) {
  sim_record r;
  spark18553(&r, 0);
  FILE *f = fopen("/dev/null", "r"); /* writes to it fail */
  if (f) {
    CHECK("write-error", sim_svg_write(&r, f) == -1, "a failed write returned 0");
    fclose(f);
  }
  sim_record_free(&r);
}

int main(int argc, char **argv) {
  if (argc > 1)
    dir = argv[1];
  test_checker();
  test_spark18553();
  test_leak();
  test_hostile();
  test_empty();
  test_large();
  test_many();
  test_gpu();
  test_write_error();
  if (failures) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("all SVG checks passed; files in %s\n", dir);
  return 0;
}
