/* tl-driver's allocation file (driver/pools_xml.c): Spark's fairscheduler.xml cases from PoolSuite
 * (the valid file, SPARK-17663's blank and invalid values, the nested pools of "Nested Pool
 * Test" written as nested <pool> elements and run through a real ledger), and hostile files:
 * malformed, not XML, a DTD with entities (billion laughs), entity references, unknown elements
 * and attributes, values twice, bad names, too many pools, too deep, too big, not a file. Every
 * refusal leaves nothing allocated and says why; every ledger step passes tl_check, and the
 * ledger ends drained. ctest runs it as cluster-pools-xml.
 */
#include "pools_xml.h"

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libxml/parser.h>

static size_t warnings;
static void count_warning(void *ud, const char *line) {
  (void)ud;
  ck_assert_ptr_nonnull(strstr(line, "is not a value"));
  warnings++;
}

static pools_xml read_ok(const char *text) {
  pools_xml p;
  char err[256];
  warnings = 0;
  int rc = pools_xml_read_memory(text, strlen(text), &p, err, sizeof err, count_warning, NULL);
  ck_assert_msg(rc == 0, "refused: %s", err);
  return p;
}

/* The file is refused, with a reason that contains want. */
static void refused(const char *text, size_t len, const char *want) {
  pools_xml p;
  char err[256];
  int rc = pools_xml_read_memory(text, len, &p, err, sizeof err, NULL, NULL);
  ck_assert_msg(rc == -1, "accepted: %.80s", text);
  ck_assert_ptr_null(p.pools);
  ck_assert_uint_eq(p.npools, 0);
  ck_assert_msg(strstr(err, want) != NULL, "refused with \"%s\", want \"%s\"", err, want);
}

static void refused_text(const char *text, const char *want) { refused(text, strlen(text), want); }

static const pool_xml *find(const pools_xml *p, const char *name) {
  for (size_t i = 0; i < p->npools; i++)
    if (strcmp(p->pools[i].name, name) == 0)
      return &p->pools[i];
  ck_abort_msg("no pool %s", name);
  return NULL;
}

static void verify(const pools_xml *p, const char *name, uint32_t min_share, uint32_t weight,
                   tl_sched_mode mode) {
  const pool_xml *x = find(p, name);
  ck_assert_msg(x->min_share == min_share && x->weight == weight && x->mode == mode,
                "pool %s: min share %u weight %u mode %d", name, x->min_share, x->weight,
                (int)x->mode);
}

static void check(tl_scheduler *s) {
  char why[256];
  int rc = tl_check(s, why, sizeof why);
  ck_assert_msg(rc == TL_OK, "tl_check: %s", why);
}

static tl_scheduler *fair_ledger(void) {
  tl_config cfg;
  tl_config_init(&cfg);
  cfg.mode = TL_FAIR;
  tl_scheduler *s = NULL;
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_OK);
  check(s);
  return s;
}

/* PoolSuite "Fair Scheduler should build fair scheduler when valid
 * spark.scheduler.allocation.file property is set": the file's pools, applied to a ledger. */
START_TEST(a_valid_file_builds_its_pools) {
  pools_xml p = read_ok("<?xml version=\"1.0\"?>\n"
                        "<allocations>\n"
                        "  <pool name=\"pool1\"><schedulingMode>FIFO</schedulingMode>"
                        "<weight>1</weight><minShare>3</minShare></pool>\n"
                        "  <pool name=\"pool2\"><schedulingMode>FAIR</schedulingMode>"
                        "<weight>2</weight><minShare>4</minShare></pool>\n"
                        "  <pool name=\"pool3\"><schedulingMode>FAIR</schedulingMode>"
                        "<weight>3</weight><minShare>2</minShare></pool>\n"
                        "  <pool name=\"default\"/>\n"
                        "</allocations>\n");
  ck_assert_uint_eq(p.npools, 4);
  ck_assert_uint_eq(p.nested, 0);
  ck_assert_uint_eq(warnings, 0);
  verify(&p, "pool1", 3, 1, TL_FIFO);
  verify(&p, "pool2", 4, 2, TL_FAIR);
  verify(&p, "pool3", 2, 3, TL_FAIR);
  verify(&p, "default", 0, 1, TL_FIFO);
  tl_scheduler *s = fair_ledger();
  char err[256];
  ck_assert_int_eq(pools_xml_apply(&p, s, err, sizeof err), 0);
  check(s);
  tl_pool_status st;
  ck_assert_int_eq(tl_pool_get(s, "pool2", &st), TL_OK);
  ck_assert_int_eq(st.mode, TL_FAIR);
  ck_assert_uint_eq(st.weight, 2);
  ck_assert_uint_eq(st.min_share, 4);
  ck_assert_uint_eq(st.depth, 1);
  tl_stats stats;
  tl_stats_get(s, &stats);
  ck_assert_uint_eq(stats.pools, 4); /* "default" is the ledger's own */
  /* Applied again: the ledger refuses, and says which pool. */
  ck_assert_int_eq(pools_xml_apply(&p, s, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "pool pool1"));
  check(s);
  tl_scheduler_free(s);
  /* A TL_FIFO ledger takes no pool. */
  tl_config cfg;
  tl_config_init(&cfg);
  ck_assert_int_eq(tl_scheduler_new(&cfg, NULL, &s), TL_OK);
  ck_assert_int_eq(pools_xml_apply(&p, s, err, sizeof err), -1);
  check(s);
  tl_scheduler_free(s);
  pools_xml_free(&p);
  ck_assert_ptr_null(p.pools);
}
END_TEST

/* A <pool name="default"> with settings of its own: the ledger's "default" takes them
 * (tl_pool_set), with no pool added, and task sets that name no pool run under them. */
START_TEST(default_takes_the_files_settings) {
  pools_xml p = read_ok("<allocations><pool name=\"default\"><schedulingMode>FAIR"
                        "</schedulingMode><weight>2</weight><minShare>1</minShare></pool>"
                        "<pool name=\"etl\"/></allocations>");
  verify(&p, "default", 1, 2, TL_FAIR);
  tl_scheduler *s = fair_ledger();
  char err[256];
  ck_assert_int_eq(pools_xml_apply(&p, s, err, sizeof err), 0);
  check(s);
  tl_pool_status st;
  ck_assert_int_eq(tl_pool_get(s, "default", &st), TL_OK);
  ck_assert_int_eq(st.mode, TL_FAIR);
  ck_assert_uint_eq(st.weight, 2);
  ck_assert_uint_eq(st.min_share, 1);
  ck_assert_uint_eq(st.depth, 1);
  tl_stats stats;
  tl_stats_get(s, &stats);
  ck_assert_uint_eq(stats.pools, 2); /* "default" and etl */
  tl_scheduler_free(s);
  pools_xml_free(&p);
}
END_TEST

/* PoolSuite SPARK-17663 "FairSchedulableBuilder sets default values for blank or invalid
 * datas": each blank or invalid value takes its default, with a warning; surrounding
 * whitespace is trimmed and the mode's case does not matter. Out-of-range numbers too. */
START_TEST(blank_and_invalid_values_take_their_defaults) {
  pools_xml p = read_ok(
      "<allocations>"
      "<pool name=\"pool_with_invalid_min_share\"><minShare>INVALID_MIN_SHARE</minShare>"
      "<weight>2</weight><schedulingMode>FAIR</schedulingMode></pool>"
      "<pool name=\"pool_with_invalid_weight\"><minShare>1</minShare><weight>INVALID_WEIGHT"
      "</weight><schedulingMode>FAIR</schedulingMode></pool>"
      "<pool name=\"pool_with_invalid_scheduling_mode\"><minShare>3</minShare><weight>2</weight>"
      "<schedulingMode>INVALID_SCHEDULING_MODE</schedulingMode></pool>"
      "<pool name=\"pool_with_non_uppercase_scheduling_mode\"><minShare>2</minShare>"
      "<weight>1</weight><schedulingMode>fair</schedulingMode></pool>"
      "<pool name=\"pool_with_NONE_scheduling_mode\"><minShare>1</minShare><weight>2</weight>"
      "<schedulingMode>NONE</schedulingMode></pool>"
      "<pool name=\"pool_with_whitespace_min_share\"><minShare>  </minShare><weight>2</weight>"
      "<schedulingMode>FAIR</schedulingMode></pool>"
      "<pool name=\"pool_with_whitespace_weight\"><minShare>1</minShare><weight>  </weight>"
      "<schedulingMode>FAIR</schedulingMode></pool>"
      "<pool name=\"pool_with_whitespace_scheduling_mode\"><minShare>3</minShare><weight>2"
      "</weight><schedulingMode>  </schedulingMode></pool>"
      "<pool name=\"pool_with_empty_min_share\"><minShare></minShare><weight>3</weight>"
      "<schedulingMode>FAIR</schedulingMode></pool>"
      "<pool name=\"pool_with_empty_weight\"><minShare>2</minShare><weight></weight>"
      "<schedulingMode>FAIR</schedulingMode></pool>"
      "<pool name=\"pool_with_empty_scheduling_mode\"><minShare>2</minShare><weight>2</weight>"
      "<schedulingMode></schedulingMode></pool>"
      "<pool name=\"pool_with_surrounded_whitespace\"><minShare> 3 </minShare><weight> 2 "
      "</weight><schedulingMode> FAIR </schedulingMode></pool>"
      /* Beyond Spark's cases: numbers that do not fit, signs, zero weight, a long value. */
      "<pool name=\"negative\"><minShare>-1</minShare><weight>+2</weight></pool>"
      "<pool name=\"huge\"><minShare>99999999999999999999</minShare><weight>1000001</weight>"
      "</pool>"
      "<pool name=\"zero_weight\"><weight>0</weight><minShare>1e3</minShare></pool>"
      "<pool name=\"long_value\"><weight>"
      "1111111111111111111111111111111111111111111111111111111111111111111111111111111111"
      "</weight></pool>"
      "<pool name=\"cdata_and_comment\"><weight><![CDATA[4]]><!-- the weight --></weight>"
      "<minShare>1000000</minShare></pool>"
      "</allocations>");
  ck_assert_uint_eq(p.npools, 17);
  verify(&p, "pool_with_invalid_min_share", 0, 2, TL_FAIR);
  verify(&p, "pool_with_invalid_weight", 1, 1, TL_FAIR);
  verify(&p, "pool_with_invalid_scheduling_mode", 3, 2, TL_FIFO);
  verify(&p, "pool_with_non_uppercase_scheduling_mode", 2, 1, TL_FAIR);
  verify(&p, "pool_with_NONE_scheduling_mode", 1, 2, TL_FIFO);
  verify(&p, "pool_with_whitespace_min_share", 0, 2, TL_FAIR);
  verify(&p, "pool_with_whitespace_weight", 1, 1, TL_FAIR);
  verify(&p, "pool_with_whitespace_scheduling_mode", 3, 2, TL_FIFO);
  verify(&p, "pool_with_empty_min_share", 0, 3, TL_FAIR);
  verify(&p, "pool_with_empty_weight", 2, 1, TL_FAIR);
  verify(&p, "pool_with_empty_scheduling_mode", 2, 2, TL_FIFO);
  verify(&p, "pool_with_surrounded_whitespace", 3, 2, TL_FAIR);
  verify(&p, "negative", 0, 1, TL_FIFO);
  verify(&p, "huge", 0, 1, TL_FIFO);
  verify(&p, "zero_weight", 0, 1, TL_FIFO);
  verify(&p, "long_value", 0, 1, TL_FIFO);
  verify(&p, "cdata_and_comment", 1000000, 4, TL_FIFO);
  ck_assert_uint_eq(warnings, 17);
  ck_assert_uint_eq(p.defaults, 17);
  pools_xml_free(&p);
}
END_TEST

static void finish(tl_scheduler *s, const tl_launch *l) {
  tl_update u = {.state = TL_TASK_FINISHED};
  ck_assert_int_eq(tl_status_update(s, l->executor_id, l->tid, &u), TL_OK);
  check(s);
}

/* PoolSuite "Nested Pool Test", its tree written as nested <pool> elements: min shares and
 * weights at both levels decide, and the ledger launches task sets 0, 4, 6, 2 in turn. */
START_TEST(nested_pools_schedule_as_spark_nests_them) {
  pools_xml p = read_ok(
      "<allocations>\n"
      " <pool name=\"0\"><schedulingMode>FAIR</schedulingMode><minShare>3</minShare>\n"
      "  <pool name=\"00\"><schedulingMode>FAIR</schedulingMode><minShare>2</minShare>"
      "<weight>2</weight></pool>\n"
      "  <pool name=\"01\"><schedulingMode>FAIR</schedulingMode><minShare>1</minShare></pool>\n"
      " </pool>\n"
      " <pool name=\"1\"><schedulingMode>FAIR</schedulingMode><minShare>4</minShare>\n"
      "  <pool name=\"10\"><schedulingMode>FAIR</schedulingMode><minShare>2</minShare>"
      "<weight>2</weight></pool>\n"
      "  <pool name=\"11\"><schedulingMode>FAIR</schedulingMode><minShare>2</minShare></pool>\n"
      " </pool>\n"
      "</allocations>\n");
  ck_assert_uint_eq(p.npools, 6);
  ck_assert_uint_eq(p.nested, 4);
  ck_assert_int_eq(find(&p, "01")->parent, (int)(find(&p, "0") - p.pools));
  ck_assert_uint_eq(find(&p, "1")->children, 2);
  tl_scheduler *s = fair_ledger();
  char err[256];
  ck_assert_int_eq(pools_xml_apply(&p, s, err, sizeof err), 0);
  check(s);
  tl_pool_status st;
  ck_assert_int_eq(tl_pool_get(s, "11", &st), TL_OK);
  ck_assert_str_eq(st.parent, "1");
  ck_assert_uint_eq(st.depth, 2);
  tl_executor_desc ex = {.id = "e1", .host = "h1", .cores = 16};
  ck_assert_int_eq(tl_executor_add(s, &ex), TL_OK);
  check(s);
  static const char *const leaf[8] = {"00", "00", "01", "01", "10", "10", "11", "11"};
  for (uint32_t stage = 0; stage < 8; stage++) {
    tl_taskset_desc d = {.stage_id = stage, .ntasks = 5, .pool = leaf[stage]};
    ck_assert_int_eq(tl_submit(s, &d, NULL), TL_OK);
    check(s);
  }
  static const uint32_t want[4] = {0, 4, 6, 2};
  tl_launch l[40];
  tl_offer one = {"e1", 1};
  for (int i = 0; i < 4; i++) {
    size_t n = 0;
    ck_assert_int_eq(tl_resource_offers(s, &one, 1, &l[i], 1, &n), TL_OK);
    check(s);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(l[i].stage_id == want[i], "launch %d: stage %u, want %u", i, l[i].stage_id,
                  want[i]);
  }
  for (int i = 0; i < 4; i++)
    finish(s, &l[i]);
  /* Drained: the 36 tasks left, 16 cores at a time. */
  for (size_t left = 36; left > 0;) {
    tl_offer all = {"e1", 16};
    size_t n = 0;
    ck_assert_int_eq(tl_resource_offers(s, &all, 1, l, 40, &n), TL_OK);
    check(s);
    ck_assert_uint_eq(n, left < 16 ? left : 16);
    for (size_t i = 0; i < n; i++)
      finish(s, &l[i]);
    left -= n;
  }
  tl_stats stats;
  tl_stats_get(s, &stats);
  ck_assert_uint_eq(stats.tasksets_active + stats.tasksets_zombie + stats.attempts_running, 0);
  ck_assert_uint_eq(stats.succeeded, 40);
  tl_scheduler_free(s);
  pools_xml_free(&p);
}
END_TEST

/* The deepest nesting the ledger takes is read; one more level is refused. */
static char *nested_file(int depth) {
  char *text = malloc((size_t)depth * 40 + 64);
  ck_assert_ptr_nonnull(text);
  size_t n = (size_t)sprintf(text, "<allocations>");
  for (int i = 0; i < depth; i++)
    n += (size_t)sprintf(text + n, "<pool name=\"p%d\">", i);
  for (int i = 0; i < depth; i++)
    n += (size_t)sprintf(text + n, "</pool>");
  sprintf(text + n, "</allocations>");
  return text;
}

START_TEST(pools_nest_as_deep_as_the_ledger_allows) {
  char *text = nested_file(POOLS_XML_DEPTH_MAX);
  pools_xml p = read_ok(text);
  free(text);
  ck_assert_uint_eq(p.npools, POOLS_XML_DEPTH_MAX);
  tl_scheduler *s = fair_ledger();
  char err[256];
  ck_assert_int_eq(pools_xml_apply(&p, s, err, sizeof err), 0);
  check(s);
  tl_pool_status st;
  ck_assert_int_eq(tl_pool_get(s, "p7", &st), TL_OK);
  ck_assert_uint_eq(st.depth, TL_POOL_DEPTH_MAX);
  tl_scheduler_free(s);
  pools_xml_free(&p);
  text = nested_file(POOLS_XML_DEPTH_MAX + 1);
  refused_text(text, "nested deeper than 8");
  free(text);
  text = nested_file(5000); /* libxml2's own depth limit, or ours, whichever comes first */
  refused_text(text, "");
  free(text);
}
END_TEST

START_TEST(hostile_files_are_refused) {
  refused_text("", "line");
  refused_text("not xml at all", "line 1");
  refused_text("<allocations><pool name=\"a\"></allocations>", "line 1");
  refused_text("<allocations>", "line 1");
  refused_text("<other/>", "root element is not <allocations>");
  refused_text("<allocations x=\"1\"/>", "takes no attribute");
  refused_text("<a:allocations xmlns:a=\"urn:x\"/>", "root element");
  /* A DTD, entities: billion laughs and external entities never reach libxml2. */
  refused_text("<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n <!ENTITY lol \"lol\">\n"
               " <!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">\n]>\n"
               "<allocations><pool name=\"&lol2;\"/></allocations>",
               "DOCTYPE or ENTITY");
  refused_text("<!DOCTYPE allocations SYSTEM \"http://example.invalid/x.dtd\"><allocations/>",
               "DOCTYPE or ENTITY");
  refused_text("<!DOCTYPE a [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><allocations>&x;"
               "</allocations>",
               "DOCTYPE or ENTITY");
  refused_text("<allocations>&undeclared;</allocations>", "line 1");
  /* Character references and the five predefined entities are text, not entities: read. */
  pools_xml q = read_ok("<allocations><pool name=\"a\"><weight>&#50;</weight><minShare>&amp;"
                        "</minShare></pool></allocations>");
  verify(&q, "a", 0, 2, TL_FIFO);
  ck_assert_uint_eq(warnings, 1); /* "&" is not a min share */
  pools_xml_free(&q);
  /* Elements, attributes and text where they do not belong. */
  refused_text("<allocations><queue name=\"a\"/></allocations>", "unknown element <queue>");
  refused_text("<allocations><weight>1</weight></allocations>", "unknown element <weight>");
  refused_text("<allocations><pool name=\"a\"><minshare>1</minshare></pool></allocations>",
               "unknown element <minshare>");
  refused_text("<allocations><pool name=\"a\" weight=\"2\"/></allocations>", "unknown attribute");
  refused_text("<allocations><pool name=\"a\"><weight unit=\"x\">1</weight></pool></allocations>",
               "takes no attribute");
  refused_text("<allocations><pool name=\"a\"><weight><b>1</b></weight></pool></allocations>",
               "other than text");
  refused_text("<allocations><pool name=\"a\"><weight>1</weight><weight>2</weight></pool>"
               "</allocations>",
               "<weight> twice");
  refused_text("<allocations>text<pool name=\"a\"/></allocations>", "text outside a value");
  refused_text("<allocations><?pi x?></allocations>", "XML node of type");
  refused_text("<allocations><x:pool xmlns:x=\"urn:x\" name=\"a\"/></allocations>",
               "unknown element");
  /* Names. */
  refused_text("<allocations><pool/></allocations>", "without a name");
  refused_text("<allocations><pool name=\"\"/></allocations>", "printable ASCII");
  refused_text("<allocations><pool name=\"a b\"/></allocations>", "printable ASCII");
  refused_text("<allocations><pool name=\"a,b\"/></allocations>", "printable ASCII");
  refused_text("<allocations><pool name=\"caf\xc3\xa9\"/></allocations>", "printable ASCII");
  refused_text("<allocations><pool name=\"a\"/><pool name=\"a\"/></allocations>",
               "pool a named twice");
  refused_text("<allocations><pool name=\"a\"><pool name=\"a\"/></pool></allocations>",
               "named twice");
  char name[POOLS_XML_NAME_MAX + 2];
  memset(name, 'n', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  char text[512];
  snprintf(text, sizeof text, "<allocations><pool name=\"%s\"/></allocations>", name);
  refused_text(text, "printable ASCII");
  name[POOLS_XML_NAME_MAX] = '\0'; /* the longest name is read */
  snprintf(text, sizeof text, "<allocations><pool name=\"%s\"/></allocations>", name);
  pools_xml p = read_ok(text);
  ck_assert_uint_eq(strlen(p.pools[0].name), POOLS_XML_NAME_MAX);
  pools_xml_free(&p);
  /* "default" is the ledger's own: at the top, childless (its settings: default_takes_...). */
  refused_text("<allocations><pool name=\"a\"><pool name=\"default\"/></pool></allocations>",
               "pool default is the ledger's own");
  refused_text("<allocations><pool name=\"default\"><pool name=\"b\"/></pool></allocations>",
               "pool default is the ledger's own");
}
END_TEST

/* Counts and sizes: POOLS_XML_POOLS_MAX pools are read, one more is refused; a file of more
 * than POOLS_XML_FILE_MAX bytes is refused from memory and from disk; a path that is not a
 * regular file, or not there, is refused. */
START_TEST(counts_and_sizes_are_bounded) {
  size_t cap = (POOLS_XML_POOLS_MAX + 2) * 32 + 64;
  char *text = malloc(cap);
  ck_assert_ptr_nonnull(text);
  for (int extra = 0; extra < 2; extra++) {
    size_t n = (size_t)sprintf(text, "<allocations>");
    for (int i = 0; i < POOLS_XML_POOLS_MAX + extra; i++)
      n += (size_t)sprintf(text + n, "<pool name=\"p%d\"/>", i);
    sprintf(text + n, "</allocations>");
    if (extra == 0) {
      pools_xml p = read_ok(text);
      ck_assert_uint_eq(p.npools, POOLS_XML_POOLS_MAX);
      pools_xml_free(&p);
    } else {
      refused_text(text, "more than 256 pools");
    }
  }
  free(text);
  /* Comments make a file long without making it deep: one byte over the limit. */
  size_t big = POOLS_XML_FILE_MAX + 1;
  char *huge = malloc(big + 1);
  ck_assert_ptr_nonnull(huge);
  memset(huge, ' ', big);
  memcpy(huge, "<allocations><!--", 17);
  memcpy(huge + big - 17, "--></allocations>", 17);
  huge[big] = '\0';
  refused(huge, big, "over 1048576 bytes");
  char path[] = "/tmp/tl-pools-xml-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, huge, big), (ssize_t)big);
  close(fd);
  pools_xml p;
  char err[256];
  ck_assert_int_eq(pools_xml_read_file(path, &p, err, sizeof err, NULL, NULL), -1);
  ck_assert_ptr_nonnull(strstr(err, "over 1048576 bytes"));
  /* The same file at the limit, less its spaces' excess: read. */
  fd = open(path, O_WRONLY | O_TRUNC);
  ck_assert_int_ge(fd, 0);
  memcpy(huge + big - 18, "--></allocations>", 17);
  ck_assert_int_eq(write(fd, huge, big - 1), (ssize_t)(big - 1));
  close(fd);
  ck_assert_int_eq(pools_xml_read_file(path, &p, err, sizeof err, NULL, NULL), 0);
  ck_assert_uint_eq(p.npools, 0);
  pools_xml_free(&p);
  unlink(path);
  free(huge);
  ck_assert_int_eq(pools_xml_read_file(path, &p, err, sizeof err, NULL, NULL), -1);
  ck_assert_ptr_nonnull(strstr(err, "No such file"));
  ck_assert_int_eq(pools_xml_read_file("/tmp", &p, err, sizeof err, NULL, NULL), -1);
  ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
}
END_TEST

START_TEST(names_for_the_job_option) {
  ck_assert(pools_xml_name_ok("etl", 3));
  ck_assert(pools_xml_name_ok("a.b-c_d/e", 9));
  ck_assert(!pools_xml_name_ok("", 0));
  ck_assert(!pools_xml_name_ok("a b", 3));
  ck_assert(!pools_xml_name_ok("a,b", 3));
  ck_assert(!pools_xml_name_ok("a\tb", 3));
  ck_assert(!pools_xml_name_ok("\x7f", 1));
  char name[POOLS_XML_NAME_MAX + 1];
  memset(name, 'x', sizeof name);
  ck_assert(pools_xml_name_ok(name, POOLS_XML_NAME_MAX));
  ck_assert(!pools_xml_name_ok(name, POOLS_XML_NAME_MAX + 1));
}
END_TEST

int main(void) {
  Suite *s = suite_create("pools_xml");
  TCase *tc = tcase_create("pools_xml");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, a_valid_file_builds_its_pools);
  tcase_add_test(tc, blank_and_invalid_values_take_their_defaults);
  tcase_add_test(tc, default_takes_the_files_settings);
  tcase_add_test(tc, nested_pools_schedule_as_spark_nests_them);
  tcase_add_test(tc, pools_nest_as_deep_as_the_ledger_allows);
  tcase_add_test(tc, hostile_files_are_refused);
  tcase_add_test(tc, counts_and_sizes_are_bounded);
  tcase_add_test(tc, names_for_the_job_option);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  xmlCleanupParser();
  return failed == 0 ? 0 : 1;
}
