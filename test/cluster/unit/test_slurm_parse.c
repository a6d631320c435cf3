/* The slurm launcher's reading (slurm_parse.c, on Jansson) of the recorded answers of a real
 * Slurm 22.05 (test/cluster/slurm/data/: squeue --json and scontrol show job -o of jobs that exited
 * 3, were killed by a signal, completed, were cancelled, timed out, were pending, running, and
 * ended NODE_FAIL), of the later layout, of every truncation of a real answer, and of hostile
 * documents (malformed JSON, deep nesting, bytes that are not UTF-8, NULs, duplicate keys, wrong
 * types, numbers out of range); and the mapping of each final state to a loss reason
 * (docs/slurm.md's table).
 */
#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "launcher.h"
#include "slurm_parse.h"

#ifndef TL_SLURM_DATA_DIR
#error "TL_SLURM_DATA_DIR must name test/cluster/slurm/data"
#endif

static char *read_sample(const char *name, size_t *len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", TL_SLURM_DATA_DIR, name);
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  ck_assert_ptr_nonnull(buf);
  ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = '\0';
  fclose(f);
  *len = (size_t)n;
  return buf;
}

/* ------------------------------------------------------------------------------------------- */

typedef struct collected {
  slurm_job jobs[32];
  int n;
} collected;

static void collect(void *ud, const slurm_job *j) {
  collected *c = ud;
  ck_assert_int_lt(c->n, 32);
  c->jobs[c->n++] = *j;
}

static const slurm_job *job_by_id(const collected *c, uint64_t id) {
  for (int i = 0; i < c->n; i++)
    if (c->jobs[i].job_id == id)
      return &c->jobs[i];
  return NULL;
}

static void assert_job(const collected *c, uint64_t id, const char *state, const char *reason,
                       int status, int sig) {
  const slurm_job *j = job_by_id(c, id);
  ck_assert_msg(j != NULL, "job %d not found", (int)id);
  ck_assert_str_eq(j->state, state);
  ck_assert_str_eq(j->reason, reason);
  ck_assert(j->has_exit);
  ck_assert_int_eq(j->exit_status, status);
  ck_assert_int_eq(j->signal, sig);
}

/* One document, given with its length (it may hold NULs): its code, the jobs in *c. */
#define PARSE(c, lit) slurm_parse_squeue_json((lit), sizeof(lit) - 1, collect, (c))

/* The NUL-terminated answer text is refused with err, and no job of it is reported. */
static void assert_refused(const char *text, int err) {
  collected c = {0};
  int rc = slurm_parse_squeue_json(text, strlen(text), collect, &c);
  ck_assert_msg(rc == err, "%s: %d, expected %d", text, rc, err);
  ck_assert_int_eq(c.n, 0);
}

/* Values of every JSON type where the reader wants one: escapes and surrogate pairs decoded,
 * strings cut to their fields, integers to int64_t, and each wrong type read as absent. */
START_TEST(squeue_values) {
  collected c = {0};
  ck_assert_int_eq(
      PARSE(&c, " {\"jobs\": [{\"job_id\": 1, \"name\": \"x\\n\\u00e9\\ud83d\\ude00\\/\\\"\","
                " \"job_state\": \"R\\u0055NNING\", \"state_reason\": [], \"exit_code\": 768},"
                " {\"\\u006aob_id\": 9223372036854775807, \"job_state\": [7, \"FAILED\"],"
                " \"exit_code\": 9223372036854775807},"
                " {\"job_id\": 3, \"name\": \"0123456789012345678901234567890123456789012345678901"
                "2345678901\\u00e9\", \"job_state\": [\"PENDING\", \"X\"], \"state_reason\": 5},"
                " {\"job_id\": 4, \"exit_code\": -1, \"name\": null, \"job_state\": {}},"
                " {\"job_id\": 5, \"exit_code\": 3.5}, {\"job_id\": 6, \"exit_code\": \"3\"},"
                " {\"job_id\": 7, \"exit_code\": 9}, {\"job_id\": 8, \"exit_code\": [768]}] } "),
      0);
  ck_assert_int_eq(c.n, 8);
  ck_assert_uint_eq(c.jobs[0].job_id, 1);
  ck_assert_str_eq(c.jobs[0].name, "x\n\xc3\xa9\xf0\x9f\x98\x80/\"");
  ck_assert_str_eq(c.jobs[0].state, "RUNNING");
  ck_assert_str_eq(c.jobs[0].reason, ""); /* an empty list */
  ck_assert(c.jobs[0].has_exit && c.jobs[0].exit_status == 3 && c.jobs[0].signal == 0);
  /* An escaped key, the largest id, the first element of a list that is not a string. */
  ck_assert_uint_eq(c.jobs[1].job_id, (uint64_t)INT64_MAX);
  ck_assert_str_eq(c.jobs[1].state, "");
  ck_assert(c.jobs[1].has_exit && c.jobs[1].exit_status == 255 && c.jobs[1].signal == 127);
  /* 63 bytes kept of a longer name (62 + 2), cutting a two-byte character in half. */
  ck_assert_uint_eq(strlen(c.jobs[2].name), sizeof c.jobs[2].name - 1);
  ck_assert_int_eq(memcmp(c.jobs[2].name + 60, "01\xc3", 4), 0);
  ck_assert_str_eq(c.jobs[2].state, "PENDING");
  ck_assert_str_eq(c.jobs[2].reason, "");
  ck_assert(!c.jobs[2].has_exit);
  ck_assert(!c.jobs[3].has_exit);
  ck_assert_str_eq(c.jobs[3].name, "");
  ck_assert_str_eq(c.jobs[3].state, "");
  ck_assert(!c.jobs[4].has_exit); /* 3.5: not an integer */
  ck_assert(!c.jobs[5].has_exit); /* a string */
  ck_assert(c.jobs[6].has_exit && c.jobs[6].exit_status == 0 && c.jobs[6].signal == 9);
  ck_assert(!c.jobs[7].has_exit);

  /* job_id: only a positive integer, bare or {"set": true or absent, "number": N}. */
  c.n = 0;
  ck_assert_int_eq(
      PARSE(&c,
            "{\"jobs\": [{\"job_id\": \"10\"}, {\"job_id\": 11.0}, {\"job_id\": 1e1},"
            " {\"job_id\": true}, {\"job_id\": null}, {\"job_id\": [12]}, {\"job_id\": -13},"
            " {\"job_id\": -9223372036854775808}, {\"job_id\": {\"set\": false, \"number\": 14}},"
            " {\"job_id\": {\"set\": \"true\", \"number\": 15}}, {\"job_id\": {\"set\": true}},"
            " {\"job_id\": {\"set\": true, \"number\": \"16\"}}, {\"job_id\": {}},"
            " {\"job_id\": {\"set\": true, \"number\": 17}}, {\"job_id\": {\"number\": 18}},"
            " {\"job_id\": {\"set\": true, \"number\": {\"set\": true, \"number\": 19}}},"
            " [], \"job\", null, 20]}"),
      0);
  ck_assert_int_eq(c.n, 2);
  ck_assert_uint_eq(c.jobs[0].job_id, 17);
  ck_assert_uint_eq(c.jobs[1].job_id, 18);

  /* exit_code objects: return_code and signal_id bare or wrapped, each in its range. */
  c.n = 0;
  ck_assert_int_eq(
      PARSE(&c, "{\"jobs\": [{\"job_id\": 1, \"exit_code\": {\"return_code\": 300}},"
                " {\"job_id\": 2, \"exit_code\": {\"signal\": {\"signal_id\": 0}}},"
                " {\"job_id\": 3, \"exit_code\": {\"signal\": {\"signal_id\": 128}}},"
                " {\"job_id\": 4, \"exit_code\": {\"signal\": 9}},"
                " {\"job_id\": 5, \"exit_code\": {\"return_code\": {\"set\": false, \"number\": 3},"
                " \"signal\": {\"signal_id\": {\"set\": true, \"number\": 6}}}},"
                " {\"job_id\": 6, \"exit_code\": {\"return_code\": -2}},"
                " {\"job_id\": 7, \"exit_code\": {}}, {\"job_id\": 8, \"exit_code\": null}]}"),
      0);
  ck_assert_int_eq(c.n, 8);
  ck_assert(c.jobs[0].has_exit && c.jobs[0].exit_status == 44); /* 300 & 0xff */
  ck_assert(!c.jobs[1].has_exit && !c.jobs[2].has_exit && !c.jobs[3].has_exit);
  ck_assert(c.jobs[4].has_exit && c.jobs[4].exit_status == 0 && c.jobs[4].signal == 6);
  ck_assert(c.jobs[5].has_exit && c.jobs[5].exit_status == 254);
  ck_assert(!c.jobs[6].has_exit && !c.jobs[7].has_exit);
}
END_TEST

/* Each malformed document is refused whole, with no job reported, with the kind of error. */
START_TEST(squeue_malformed) {
  static const struct {
    const char *text;
    int err;
  } bad[] = {{"", JSON_ESYNTAX},
             {" ", JSON_ESYNTAX},
             {"{", JSON_ESYNTAX},
             {"[1,]", JSON_ESYNTAX},
             {"[1 2]", JSON_ESYNTAX},
             {"{\"a\" 1}", JSON_ESYNTAX},
             {"{\"a\":}", JSON_ESYNTAX},
             {"{a:1}", JSON_ESYNTAX},
             {"{\"a\":1,}", JSON_ESYNTAX},
             {"{\"jobs\":[],}", JSON_ESYNTAX},
             {"{'jobs':[]}", JSON_ESYNTAX},
             {"{\"jobs\":[{\"job_id\":1}]", JSON_ESYNTAX},
             {"01", JSON_ESYNTAX}, /* one bad number to Jansson, not 0 and a trailing 1 */
             {"{\"jobs\":[{\"job_id\":01}]}", JSON_ESYNTAX},
             {"1.", JSON_ESYNTAX},
             {"-", JSON_ESYNTAX},
             {"1e", JSON_ESYNTAX},
             {"+1", JSON_ESYNTAX},
             {".5", JSON_ESYNTAX},
             {"tru", JSON_ESYNTAX},
             {"nul", JSON_ESYNTAX},
             {"NaN", JSON_ESYNTAX},
             {"{\"jobs\":[{\"job_id\":Infinity}]}", JSON_ESYNTAX},
             {"1 2", JSON_ETRAILING},
             {"{} x", JSON_ETRAILING},
             {"{\"jobs\":[]} {\"jobs\":[]}", JSON_ETRAILING},
             {"\"abc", JSON_ESYNTAX},
             {"\"\\x\"", JSON_ESTRING},
             {"\"\x01\"", JSON_ESTRING},
             {"\"a\nb\"", JSON_ESTRING},
             {"\"\\u12\"", JSON_ESTRING},
             {"\"\\ud800\"", JSON_ESTRING},
             {"\"\\udc00\"", JSON_ESTRING},
             {"\"\\ud800\\u0041\"", JSON_ESTRING},
             {"\"\\", JSON_ESTRING},
             {"{\"jobs\":[{\"job_id\":1,\"name\":\"\\q\"}]}", JSON_ESTRING},
             {"[\"a\"", JSON_ESYNTAX},
             /* Valid JSON that is no squeue answer. */
             {"[]", JSON_ESYNTAX},
             {"7", JSON_ESYNTAX},
             {"\"jobs\"", JSON_ESYNTAX},
             {"null", JSON_ESYNTAX},
             {"{\"errors\": []}", JSON_ESYNTAX},
             {"{\"jobs\": {}}", JSON_ESYNTAX},
             {"{\"jobs\": null}", JSON_ESYNTAX},
             {"{\"jobs\": \"[]\"}", JSON_ESYNTAX},
             {"{\"meta\": {\"jobs\": []}}", JSON_ESYNTAX}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_refused(bad[i].text, bad[i].err);
  collected c = {0};
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": []}"), 0);
  ck_assert_int_eq(PARSE(&c, "\t\r\n{\"jobs\":[]}\n"), 0);
  ck_assert_int_eq(slurm_parse_squeue_json(NULL, 0, collect, &c), JSON_ESYNTAX);
  /* Refused on its length alone, before a byte is read. */
  ck_assert_int_eq(slurm_parse_squeue_json("{}", (size_t)UINT32_MAX, collect, &c), JSON_ETOOBIG);
  ck_assert_int_eq(c.n, 0);
}
END_TEST

/* Nesting to JSON_DEPTH_MAX is read, deeper is refused (JSON_EDEPTH), whether the document is
 * otherwise well formed or not: below Jansson's own bound (2,048 values deep) after it parsed,
 * past it while it parses, so that nothing recurses without bound. A document cut short before
 * Jansson's bound is refused for that (JSON_ESYNTAX), as it is met first. */
START_TEST(squeue_depth) {
  static const char pre[] = "{\"jobs\":[{\"job_id\":1,\"x\":", post[] = "}]}";
  enum { deepest = 100000 };
  char *t = malloc(sizeof pre + sizeof post + 2 * deepest);
  ck_assert_ptr_nonnull(t);
  /* The document, "jobs" and the job are 3 levels: x's innermost array is at depth 2 + arrays;
   * to Jansson, which counts from 1 and counts scalars too, at 3 + arrays. */
  const int arrays[] = {JSON_DEPTH_MAX - 3, JSON_DEPTH_MAX - 2, 2045, 2046, deepest};
  for (size_t d = 0; d < sizeof arrays / sizeof arrays[0]; d++) {
    for (int closed = 0; closed <= 1; closed++) {
      size_t n = 0;
      memcpy(t + n, pre, sizeof pre - 1);
      n += sizeof pre - 1;
      memset(t + n, '[', (size_t)arrays[d]);
      n += (size_t)arrays[d];
      if (closed) {
        memset(t + n, ']', (size_t)arrays[d]);
        n += (size_t)arrays[d];
        memcpy(t + n, post, sizeof post - 1);
        n += sizeof post - 1;
      }
      int want;
      if (arrays[d] > 2045)
        want = JSON_EDEPTH; /* Jansson's bound, met while parsing */
      else if (!closed)
        want = JSON_ESYNTAX;
      else
        want = arrays[d] <= JSON_DEPTH_MAX - 3 ? 0 : JSON_EDEPTH;
      collected c = {0};
      int rc = slurm_parse_squeue_json(t, n, collect, &c);
      ck_assert_msg(rc == want, "%d arrays, %s: %d, expected %d", arrays[d],
                    closed ? "closed" : "cut", rc, want);
      ck_assert_int_eq(c.n, rc == 0 ? 1 : 0);
    }
  }
  free(t);
}
END_TEST

/* Bytes a C string or UTF-8 does not allow. A byte that is not UTF-8 (a stray continuation, an
 * overlong form, a surrogate, past U+10FFFF, a sequence cut short) reads as '?' in a string (a
 * foreign job named in Latin-1 must not hide the others), and is a syntax error outside one. A
 * raw NUL is refused wherever it stands, as any control character; a \u0000 ends a field, and
 * is refused in a key. */
START_TEST(squeue_hostile_bytes) {
  collected c = {0};
  ck_assert_int_eq(PARSE(&c,
                         "{\"jobs\": [{\"job_id\": 1, \"name\": \"\xff\xfe.\xc0\xaf.\xed\xa0\x80."
                         "\xf4\x90\x80\x80.\xe2\x82\", \"job_state\": \"RUNNING\"},"
                         " {\"job_id\": 2, \"name\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\","
                         " \"state_reason\": \"a\\u0000b\", \"job_state\": \"FAILED\"},"
                         " {\"job_id\": 3, \"name\": \"\x80\"}]}"),
                   0);
  ck_assert_int_eq(c.n, 3);
  ck_assert_str_eq(c.jobs[0].name, "??.??.???.????.??" /* no "?" "?-": a trigraph */);
  ck_assert_str_eq(c.jobs[0].state, "RUNNING");
  ck_assert_str_eq(c.jobs[1].name, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  ck_assert_str_eq(c.jobs[1].reason, "a");
  ck_assert_str_eq(c.jobs[1].state, "FAILED");
  ck_assert_str_eq(c.jobs[2].name, "?");
  /* After the value, a sequence cut by the end of the text or a whole one. */
  c.n = 0;
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": []}\xe2\x82"), JSON_ETRAILING);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": []}\xc3\xa9"), JSON_ETRAILING);
  ck_assert_int_eq(PARSE(&c, "\xff{\"jobs\": []}"), JSON_ESYNTAX);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1\xff}]}"), JSON_ESYNTAX);
  ck_assert_int_eq(PARSE(&c, "\xef\xbb\xbf{\"jobs\": []}"), JSON_ESYNTAX); /* a BOM: not JSON */
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1, \"name\": \"a\0b\"}]}"), JSON_ESTRING);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1}]}\0"), JSON_ETRAILING);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1}\0]}"), JSON_ESYNTAX);
  /* Jansson 2.14 alone would drop these NULs, after a number or a literal, and read the rest. */
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1\0}]}"), JSON_ESYNTAX);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1, \"x\": true\0}]}"), JSON_ESYNTAX);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1, \"x\": null\0\0}]}"), JSON_ESYNTAX);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1, \"x\": 2.5e1\0}]}"), JSON_ESYNTAX);
  ck_assert_int_eq(PARSE(&c, "\0{\"jobs\": []}"), JSON_ESYNTAX);
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1, \"job_\\u0000id\": 2}]}"), JSON_ESTRING);
  ck_assert_int_eq(c.n, 0);
}
END_TEST

/* A key twice in one object, as written or once escaped, is refused: which value Slurm meant
 * cannot be known, and readers disagree (the first, the last). */
START_TEST(squeue_duplicate_keys) {
  static const char *const dup[] = {
      "{\"jobs\": [{\"job_id\": 1, \"job_id\": 2}]}",
      "{\"jobs\": [{\"job_id\": 1, \"job_state\": \"RUNNING\", \"job_state\": \"FAILED\"}]}",
      "{\"jobs\": [{\"job_id\": 1, \"\\u006aob_id\": 2}]}",
      "{\"jobs\": [], \"jobs\": [{\"job_id\": 1}]}",
      "{\"jobs\": [{\"job_id\": 1, \"exit_code\": {\"return_code\": 0, \"return_code\": 1}}]}",
      "{\"meta\": {\"a\": 1, \"a\": 1}, \"jobs\": [{\"job_id\": 1}]}"};
  for (size_t i = 0; i < sizeof dup / sizeof dup[0]; i++)
    assert_refused(dup[i], JSON_EDUPLICATE);
  /* The same key in different objects is no duplicate. */
  collected c = {0};
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 1}, {\"job_id\": 2}]}"), 0);
  ck_assert_int_eq(c.n, 2);
}
END_TEST

/* int64_t holds every integer Slurm writes (its data_t is int64_t), so one beyond it, or a number
 * beyond a double, is refused with the document; a tiny one reads as 0. */
START_TEST(squeue_huge_numbers) {
  static const char *const huge[] = {
      "{\"jobs\": [{\"job_id\": 9223372036854775808}]}",
      "{\"jobs\": [{\"job_id\": -9223372036854775809}]}",
      "{\"jobs\": [{\"job_id\": 1, \"exit_code\": 18446744073709551616}]}",
      "{\"jobs\": [{\"job_id\": 1, \"x\": 1000000000000000000000000000000000000000000}]}",
      "{\"jobs\": [{\"job_id\": 1, \"x\": 1e400}]}",
      "{\"jobs\": [{\"job_id\": 1, \"x\": -1.5e309}]}"};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++)
    assert_refused(huge[i], JSON_ERANGE);
  collected c = {0};
  ck_assert_int_eq(PARSE(&c, "{\"jobs\": [{\"job_id\": 9223372036854775807, \"x\": 1e-400,"
                             " \"y\": -0, \"z\": 1.7976931348623157e308},"
                             " {\"job_id\": 1e3}, {\"job_id\": 2, \"exit_code\": -0}]}"),
                   0);
  ck_assert_int_eq(c.n, 2);
  ck_assert_uint_eq(c.jobs[0].job_id, (uint64_t)INT64_MAX);
  ck_assert(c.jobs[1].has_exit && c.jobs[1].exit_status == 0 && c.jobs[1].signal == 0);
}
END_TEST

/* Jansson's allocations, counted; the next one fails when alloc_budget reaches 0. */
static long alloc_budget = -1; /* allocations left before one fails; -1: none fails */
static long alloc_live;        /* blocks Jansson holds */

static void *counting_malloc(size_t n) {
  if (alloc_budget == 0)
    return NULL;
  if (alloc_budget > 0)
    alloc_budget--;
  void *p = malloc(n);
  if (p != NULL)
    alloc_live++;
  return p;
}

static void counting_free(void *p) {
  if (p != NULL)
    alloc_live--;
  free(p);
}

/* Every allocation Jansson makes for a document, failed in turn: each failure is an error with
 * no job reported and nothing left allocated, until the budget suffices and the jobs are read.
 * A document of both layouts, small enough to be parsed once per allocation under valgrind. */
START_TEST(squeue_out_of_memory) {
  static const char t[] =
      "{\"meta\": {\"plugin\": {\"type\": \"openapi\\/v0.0.38\"}}, \"errors\": [], \"jobs\": ["
      "{\"job_id\": 1, \"job_state\": \"FAILED\", \"state_reason\": \"NonZeroExitCode\", "
      "\"name\": \"tl-exec-exec-1\", \"exit_code\": 768, \"flags\": [\"TRES_STR_CALC\"], "
      "\"billable_tres\": 1.0, \"array_task_id\": null, \"batch_flag\": true}, "
      "{\"job_id\": {\"set\": true, \"number\": 2}, \"job_state\": [\"CANCELLED\"], "
      "\"exit_code\": {\"status\": [\"SIGNALED\"], \"return_code\": {\"set\": true, \"number\": "
      "0}, "
      "\"signal\": {\"signal_id\": {\"set\": true, \"number\": 9}, \"name\": \"KILL\"}}}]}";
  json_set_alloc_funcs(counting_malloc, counting_free);
  long failures = 0;
  for (long budget = 0;; budget++) {
    collected c = {0};
    alloc_budget = budget;
    alloc_live = 0;
    int rc = slurm_parse_squeue_json(t, sizeof t - 1, collect, &c);
    ck_assert_msg(alloc_live == 0, "budget %ld: %ld blocks left", budget, alloc_live);
    if (rc == 0) {
      ck_assert_int_eq(c.n, 2);
      ck_assert_int_eq(c.jobs[1].signal, 9);
      break;
    }
    /* Jansson reports a string it could not allocate as a bad token: JSON_ESYNTAX. */
    ck_assert_msg(rc == JSON_ENOMEM || rc == JSON_ESYNTAX, "budget %ld: %d", budget, rc);
    ck_assert_int_eq(c.n, 0);
    failures++;
  }
  alloc_budget = -1;
  json_set_alloc_funcs(malloc, free);
  ck_assert_int_gt(failures, 50);
}
END_TEST

/* ------------------------------------------------------------------------------------------- */

/* squeue --json of Slurm 22.05.8 while jobs 7 (pending) and 8, 9 (running) had not ended. */
START_TEST(squeue_running) {
  size_t len;
  char *t = read_sample("squeue-running.json", &len);
  collected c = {0};
  ck_assert_int_eq(slurm_parse_squeue_json(t, len, collect, &c), 0);
  ck_assert_int_eq(c.n, 9);
  assert_job(&c, 1, "FAILED", "NonZeroExitCode", 3, 0);   /* exit 3 */
  assert_job(&c, 2, "CANCELLED", "None", 0, 15);          /* scancel --signal=KILL */
  assert_job(&c, 4, "COMPLETED", "None", 0, 0);           /* true */
  assert_job(&c, 5, "FAILED", "JobLaunchFailure", 0, 11); /* kill -SEGV $$ */
  assert_job(&c, 6, "TIMEOUT", "TimeLimit", 0, 15);       /* --time=1 */
  assert_job(&c, 7, "PENDING", "BeginTime", 0, 0);        /* --begin=now+3600 */
  assert_job(&c, 8, "RUNNING", "None", 0, 0);
  ck_assert_str_eq(job_by_id(&c, 1)->name, "t-exit3");
  ck_assert(!slurm_state_is_final("PENDING"));
  ck_assert(!slurm_state_is_final("RUNNING"));
  ck_assert(!slurm_state_is_final("COMPLETING"));
  ck_assert(!slurm_state_is_final(""));
  free(t);
}
END_TEST

START_TEST(squeue_final) {
  size_t len;
  char *t = read_sample("squeue-final.json", &len);
  collected c = {0};
  ck_assert_int_eq(slurm_parse_squeue_json(t, len, collect, &c), 0);
  ck_assert_int_eq(c.n, 10);
  assert_job(&c, 8, "CANCELLED", "None", 0, 15);
  assert_job(&c, 10, "NODE_FAIL", "NodeDown", 0, 15); /* scontrol update state=down */
  for (int i = 0; i < c.n; i++)
    ck_assert_msg(slurm_state_is_final(c.jobs[i].state), "job %d: %s", (int)c.jobs[i].job_id,
                  c.jobs[i].state);
  free(t);
}
END_TEST

/* Every prefix of a real answer is refused whole: no job is reported from a cut document. */
START_TEST(squeue_truncated) {
  size_t len;
  char *t = read_sample("squeue-running.json", &len);
  for (size_t cut = 0; cut < len; cut += 37) {
    collected c = {0};
    ck_assert_int_lt(slurm_parse_squeue_json(t, cut, collect, &c), 0);
    ck_assert_int_eq(c.n, 0);
  }
  free(t);
}
END_TEST

/* Slurm 23.02 and later (OpenAPI v0.0.39+): job_state a list of flags, exit_code an object.
 * Written by hand after that layout, not recorded here. Also: no jobs array, odd entries. */
START_TEST(squeue_later_layout) {
  const char *t =
      "{\"jobs\": [{\"job_id\": 41, \"job_state\": [\"FAILED\"], \"state_reason\": "
      "\"NonZeroExitCode\", \"exit_code\": {\"status\": [\"EXIT\"], \"return_code\": {\"set\": "
      "true, \"infinite\": false, \"number\": 3}, \"signal\": {\"signal_id\": {\"set\": false, "
      "\"number\": 0}}}}, {\"job_id\": 42, \"job_state\": [\"CANCELLED\"], \"exit_code\": "
      "{\"return_code\": 0, \"signal\": {\"signal_id\": 9, \"name\": \"KILL\"}}}, "
      "{\"job_id\": 0}, {\"name\": \"no id\"}, 7]}";
  collected c = {0};
  ck_assert_int_eq(slurm_parse_squeue_json(t, strlen(t), collect, &c), 0);
  ck_assert_int_eq(c.n, 2);
  assert_job(&c, 41, "FAILED", "NonZeroExitCode", 3, 0);
  assert_job(&c, 42, "CANCELLED", "", 0, 9);
  ck_assert_int_eq(slurm_parse_squeue_json("{\"errors\": []}", 14, collect, &c), JSON_ESYNTAX);
  ck_assert_int_eq(slurm_parse_squeue_json("{\"jobs\": {}}", 12, collect, &c), JSON_ESYNTAX);
}
END_TEST

static void scontrol_sample(const char *name, int want_rc, const char *state, const char *reason,
                            int status, int sig) {
  size_t len;
  char *t = read_sample(name, &len);
  slurm_job j;
  ck_assert_int_eq(slurm_parse_scontrol(t, len, &j), want_rc);
  if (want_rc == 0) {
    ck_assert_str_eq(j.state, state);
    ck_assert_str_eq(j.reason, reason);
    ck_assert(j.has_exit);
    ck_assert_int_eq(j.exit_status, status);
    ck_assert_int_eq(j.signal, sig);
    ck_assert_uint_gt(j.job_id, 0);
  }
  free(t);
}

START_TEST(scontrol_samples) {
  scontrol_sample("scontrol-failed-exit3.txt", 0, "FAILED", "NonZeroExitCode", 3, 0);
  scontrol_sample("scontrol-cancelled-kill.txt", 0, "CANCELLED", "None", 0, 15);
  scontrol_sample("scontrol-completed.txt", 0, "COMPLETED", "None", 0, 0);
  scontrol_sample("scontrol-failed-signal.txt", 0, "FAILED", "JobLaunchFailure", 0, 11);
  scontrol_sample("scontrol-timeout.txt", 0, "TIMEOUT", "TimeLimit", 0, 15);
  scontrol_sample("scontrol-pending.txt", 0, "PENDING", "BeginTime", 0, 0);
  scontrol_sample("scontrol-running.txt", 0, "RUNNING", "None", 0, 0);
  scontrol_sample("scontrol-node-fail.txt", 0, "NODE_FAIL", "NodeDown", 0, 15);
  scontrol_sample("scontrol-unknown.txt", 1, NULL, NULL, 0, 0);
  slurm_job j;
  ck_assert_int_eq(slurm_parse_scontrol("", 0, &j), -1);
  ck_assert_int_eq(slurm_parse_scontrol("JobId=x JobState=RUNNING", 24, &j), -1);
  ck_assert_int_eq(slurm_parse_scontrol("JobId=4 Reason=None", 19, &j), -1);
  /* A key must start a field: "MyJobState=" is not "JobState=". */
  const char *t = "JobId=5 MyJobState=RUNNING JobState=FAILED ExitCode=2:0";
  ck_assert_int_eq(slurm_parse_scontrol(t, strlen(t), &j), 0);
  ck_assert_str_eq(j.state, "FAILED");
  ck_assert_int_eq(j.exit_status, 2);
}
END_TEST

/* docs/slurm.md's table. */
START_TEST(end_mapping) {
  static const struct {
    const char *state;
    int status, sig;
    tl_loss_kind kind;
    bool app;
    int exit_code;
    const char *reason;
  } rows[] = {
      {"COMPLETED", 0, 0, TL_LOSS_EXITED, false, 0, "COMPLETED: exited 0"},
      {"FAILED", 3, 0, TL_LOSS_EXITED, true, 3, "FAILED: exited 3"},
      {"FAILED", 1, 0, TL_LOSS_EXITED, true, 1, "FAILED: exited 1"},
      {"FAILED", 0, 11, TL_LOSS_EXITED, true, 139, "FAILED: killed by signal 11"},
      {"FAILED", 0, 0, TL_LOSS_PROCESS_LOST, false, 0, "FAILED (x), no exit code"},
      {"CANCELLED", 0, 15, TL_LOSS_PROCESS_LOST, false, 143, "CANCELLED (not by the driver)"},
      {"OUT_OF_MEMORY", 0, 0, TL_LOSS_EXITED, true, 137, "OUT_OF_MEMORY"},
      /* Slurm's own OOM mark (SIG_OOM 253 as a wait status: ExitCode=0:125) is not a signal. */
      {"OUT_OF_MEMORY", 0, 125, TL_LOSS_EXITED, true, 137, "OUT_OF_MEMORY"},
      {"TIMEOUT", 0, 15, TL_LOSS_PROCESS_LOST, false, 143, "TIMEOUT"},
      {"NODE_FAIL", 0, 15, TL_LOSS_PROCESS_LOST, false, 143, "NODE_FAIL"},
      {"PREEMPTED", 0, 15, TL_LOSS_PROCESS_LOST, false, 143, "PREEMPTED"},
      {"BOOT_FAIL", 0, 0, TL_LOSS_PROCESS_LOST, false, 0, "BOOT_FAIL"},
      {"DEADLINE", 0, 0, TL_LOSS_PROCESS_LOST, false, 0, "DEADLINE"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    slurm_job j = {
        .job_id = 1, .has_exit = true, .exit_status = rows[i].status, .signal = rows[i].sig};
    snprintf(j.state, sizeof j.state, "%s", rows[i].state);
    snprintf(j.reason, sizeof j.reason, "x");
    ck_assert(slurm_state_is_final(j.state));
    char reason[160];
    launcher_end end = {0};
    slurm_end_of(&j, false, &end, reason, sizeof reason);
    ck_assert_msg(end.kind == rows[i].kind, "%s", rows[i].state);
    ck_assert_msg(end.caused_by_app == rows[i].app, "%s", rows[i].state);
    ck_assert_int_eq(end.exit_code, rows[i].exit_code);
    ck_assert_str_eq(end.reason, rows[i].reason);
    ck_assert(!end.requested);
    /* Whatever the state, a cancel the driver asked for is a requested kill, not the app's. */
    slurm_end_of(&j, true, &end, reason, sizeof reason);
    ck_assert_int_eq(end.kind, TL_LOSS_KILLED);
    ck_assert(!end.caused_by_app && end.requested);
    ck_assert_ptr_nonnull(strstr(end.reason, "cancelled by the driver"));
  }
}
END_TEST

/* ------------------------------------------------------------------------------------------- */

/* The launcher itself, with a fake Slurm on PATH (shell scripts in a temporary directory). */

static int fake_ends;         /* on_end calls */
static launcher_end fake_end; /* the last end, its strings copied below */
static char fake_reason[160]; /* its reason */
static char fake_source[32];  /* its source */

static void fake_on_end(void *ud, const launcher_end *e) {
  (void)ud;
  fake_ends++;
  fake_end = *e;
  snprintf(fake_reason, sizeof fake_reason, "%s", e->reason);
  snprintf(fake_source, sizeof fake_source, "%s", e->source);
}

static void fake_closed(void *ud) { *(bool *)ud = true; }

static void write_script(const char *dir, const char *name, const char *body) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fprintf(f, "#!/bin/sh\n%s", body);
  fclose(f);
  ck_assert_int_eq(chmod(path, 0755), 0);
}

/* An squeue that is a wrapper script whose child writes past the launcher's 64 MiB bound: the
 * script is killed, the child keeps the pipe open. The poll must still end (and fall back to
 * scontrol, which gives the end), and close must still complete with no handle left. */
START_TEST(launcher_killed_wrapper) {
  char dir[] = "/tmp/tl-slurm-fake-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  write_script(dir, "sbatch", "echo 77\n");
  write_script(dir, "squeue", "yes 0123456789abcdef | head -c 80000000\n");
  write_script(dir, "scontrol",
               "echo 'JobId=77 JobName=tl-exec-exec-1 JobState=COMPLETED Reason=None "
               "ExitCode=0:0'\n");
  char *old_path = strdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
  char path[512];
  snprintf(path, sizeof path, "%s:/usr/bin:/bin", dir);
  setenv("PATH", path, 1);

  uv_loop_t loop;
  ck_assert_int_eq(uv_loop_init(&loop), 0);
  launcher_config cfg = {.loop = &loop,
                         .executor_path = "/bin/true",
                         .connect_host = "127.0.0.1",
                         .port = 1,
                         .cores = 1,
                         .poll_ms = 50,
                         .on_end = fake_on_end};
  void *l;
  fake_ends = 0;
  ck_assert_int_eq(launcher_slurm_ops.create(&cfg, &l), 0);
  ck_assert_int_eq(launcher_slurm_ops.start(l, "exec-1"), 0);
  uint64_t t0 = uv_now(&loop);
  while (fake_ends == 0 && uv_now(&loop) - t0 < 20000)
    uv_run(&loop, UV_RUN_ONCE);
  bool closed = false;
  if (fake_ends == 1)
    launcher_slurm_ops.close(l, fake_closed, &closed);
  t0 = uv_now(&loop);
  while (!closed && fake_ends == 1 && uv_now(&loop) - t0 < 20000)
    uv_run(&loop, UV_RUN_ONCE);

  setenv("PATH", old_path, 1);
  free(old_path);
  const char *names[] = {"sbatch", "squeue", "scontrol"};
  for (size_t i = 0; i < 3; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
  ck_assert_msg(fake_ends == 1, "no end within 20 s: the squeue poll never finished");
  ck_assert_int_eq(fake_end.kind, TL_LOSS_EXITED);
  ck_assert_int_eq(fake_end.exit_code, 0);
  ck_assert_str_eq(fake_reason, "COMPLETED: exited 0");
  ck_assert_str_eq(fake_source, "scontrol show job");
  ck_assert_msg(closed, "close did not complete within 20 s");
  ck_assert_int_eq(uv_loop_close(&loop), 0);
}
END_TEST

static Suite *slurm_parse_suite(void) {
  Suite *s = suite_create("slurm_parse");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, squeue_values);
  tcase_add_test(tc, squeue_malformed);
  tcase_add_test(tc, squeue_depth);
  tcase_add_test(tc, squeue_hostile_bytes);
  tcase_add_test(tc, squeue_duplicate_keys);
  tcase_add_test(tc, squeue_huge_numbers);
  tcase_add_test(tc, squeue_out_of_memory);
  tcase_add_test(tc, squeue_running);
  tcase_add_test(tc, squeue_final);
  tcase_add_test(tc, squeue_truncated);
  tcase_add_test(tc, squeue_later_layout);
  tcase_add_test(tc, scontrol_samples);
  tcase_add_test(tc, end_mapping);
  suite_add_tcase(s, tc);
  tc = tcase_create("launcher");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, launcher_killed_wrapper);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(slurm_parse_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
