/* Executors: registration and its validation, hosts and racks, heartbeats, decommissioning,
 * tombstones (their bound and their time to live) and tl_executor_get, with every documented
 * error answered without changing anything.
 */
#include "harness.h"

#include <string.h>

/* A string of n copies of c (n < cap). */
static const char *repeat(char *buf, size_t cap, char c, size_t n) {
  ck_assert_uint_lt(n, cap);
  memset(buf, c, n);
  buf[n] = '\0';
  return buf;
}

static int add(tlt_env *e, const char *id, const char *host, const char *rack, uint32_t cores) {
  tl_executor_desc d = {.id = id, .host = host, .rack = rack, .cores = cores};
  return tl_executor_add(e->s, &d);
}

START_TEST(add_registers_an_alive_executor) {
  tlt_env *e = tlt_new(NULL);
  size_t mark = tlt_mark(e);
  tlt_add(e, "e1", "h1", "r1", 4);
  ck_assert_str_eq(tlt_seq_all(e, mark), "added e1 host=h1");
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_alive, 1);
  ck_assert_uint_eq(st.executors_decommissioning, 0);
  ck_assert_uint_eq(st.executors_pending_loss, 0);
  ck_assert_uint_eq(st.hosts, 1);
  ck_assert_uint_eq(st.racks, 1);
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_int_eq(ex.state, TL_EXECUTOR_ALIVE);
  ck_assert_uint_eq(ex.cores, 4);
  ck_assert_uint_eq(ex.free_cores, 4);
  ck_assert_uint_eq(ex.running, 0);
  ck_assert_uint_eq(ex.frozen, 0);
  ck_assert_str_eq(ex.host, "h1");
  tlt_end(e);
}
END_TEST

START_TEST(add_copies_the_strings) {
  tlt_env *e = tlt_new(NULL);
  char id[16] = "exec-a", host[16] = "host-a", rack[16] = "rack-a";
  tlt_add(e, id, host, rack, 2);
  strcpy(id, "XXXXXX");
  strcpy(host, "YYYYYY");
  strcpy(rack, "ZZZZZZ");
  tl_executor_status ex = tlt_ex(e, "exec-a");
  ck_assert_str_eq(ex.host, "host-a");
  /* The rack was copied too: a second executor of host-a must name rack-a. */
  TLT_ERR(e, TL_EINVAL, add(e, "exec-b", "host-a", "ZZZZZZ", 1));
  tlt_add(e, "exec-b", "host-a", "rack-a", 1);
  ck_assert_uint_eq(tlt_stats(e).hosts, 1);
  ck_assert_uint_eq(tlt_stats(e).racks, 1);
  tlt_end(e);
}
END_TEST

START_TEST(add_rejects_bad_descriptors) {
  tlt_env *e = tlt_new(NULL);
  char id256[300], host256[300], id255[300], host255[300];
  repeat(id256, sizeof id256, 'i', 256);
  repeat(host256, sizeof host256, 'h', 256);
  repeat(id255, sizeof id255, 'j', 255);
  repeat(host255, sizeof host255, 'g', 255);
  tl_executor_desc d = {.id = "e1", .host = "h1", .rack = NULL, .cores = 1};
  TLT_ERR(e, TL_EINVAL, tl_executor_add(NULL, &d));
  TLT_ERR(e, TL_EINVAL, tl_executor_add(e->s, NULL));
  TLT_ERR(e, TL_EINVAL, add(e, NULL, "h1", NULL, 1));
  TLT_ERR(e, TL_EINVAL, add(e, "", "h1", NULL, 1));
  TLT_ERR(e, TL_EINVAL, add(e, id256, "h1", NULL, 1));
  TLT_ERR(e, TL_EINVAL, add(e, "e1", NULL, NULL, 1));
  TLT_ERR(e, TL_EINVAL, add(e, "e1", "", NULL, 1));
  TLT_ERR(e, TL_EINVAL, add(e, "e1", host256, NULL, 1));
  TLT_ERR(e, TL_EINVAL, add(e, "e1", "h1", "", 1));
  TLT_ERR(e, TL_EINVAL, add(e, "e1", "h1", host256, 1));
  TLT_ERR(e, TL_EINVAL, add(e, "e1", "h1", NULL, 0));
  /* The longest valid lengths are accepted. */
  tlt_add(e, id255, host255, host255, 1);
  tl_executor_status ex = tlt_ex(e, id255);
  ck_assert_str_eq(ex.host, host255);
  TLT_ERR(e, TL_EINVAL, tl_executor_get(e->s, id256, &ex));
  tlt_end(e);
}
END_TEST

START_TEST(add_of_a_known_id_is_eexist_in_every_live_state) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "alive", "h1", NULL, 1);
  tlt_add(e, "decom", "h1", NULL, 1);
  tlt_add(e, "pending", "h2", NULL, 1);
  TLT_OK(e, tl_executor_decommission(e->s, "decom", NULL));
  tlt_lose(e, "pending", TL_LOSS_PENDING, false);
  TLT_ERR(e, TL_EEXIST, add(e, "alive", "h1", NULL, 1));
  TLT_ERR(e, TL_EEXIST, add(e, "alive", "elsewhere", NULL, 8));
  TLT_ERR(e, TL_EEXIST, add(e, "decom", "h1", NULL, 1));
  TLT_ERR(e, TL_EEXIST, add(e, "pending", "h2", NULL, 1));
  tlt_end(e);
}
END_TEST

START_TEST(add_of_a_tombstoned_id_is_egone) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
  TLT_ERR(e, TL_EGONE, add(e, "e1", "h1", NULL, 1));
  /* A restarted executor takes a new id. */
  tlt_add(e, "e1-restarted", "h1", NULL, 1);
  tlt_end(e);
}
END_TEST

/* "Errors, the first that applies": EINVAL (bad descriptor), EEXIST, EGONE, then EINVAL for a
 * rack different from the host's. */
START_TEST(add_errors_come_in_the_documented_order) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "known", "h1", "r1", 1);
  tlt_add(e, "gone", "h1", "r1", 1);
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  /* A bad descriptor wins over a known or tombstoned id. */
  TLT_ERR(e, TL_EINVAL, add(e, "known", "h1", "r1", 0));
  TLT_ERR(e, TL_EINVAL, add(e, "gone", "", "r1", 1));
  /* A known id wins over a rack conflict; so does a tombstoned one. */
  TLT_ERR(e, TL_EEXIST, add(e, "known", "h1", "r2", 1));
  TLT_ERR(e, TL_EGONE, add(e, "gone", "h1", "r2", 1));
  TLT_ERR(e, TL_EINVAL, add(e, "new", "h1", "r2", 1));
  tlt_end(e);
}
END_TEST

START_TEST(add_requires_the_rack_of_the_host) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", "r1", 1);
  TLT_ERR(e, TL_EINVAL, add(e, "e2", "h1", "r2", 1));
  TLT_ERR(e, TL_EINVAL, add(e, "e2", "h1", NULL, 1));
  tlt_add(e, "e2", "h1", "r1", 1);
  tlt_add(e, "e3", "h2", NULL, 1);
  TLT_ERR(e, TL_EINVAL, add(e, "e4", "h2", "r1", 1));
  tlt_add(e, "e4", "h2", NULL, 1);
  ck_assert_uint_eq(tlt_stats(e).hosts, 2);
  ck_assert_uint_eq(tlt_stats(e).racks, 1);
  /* Once a host has no live executor it is forgotten, and may come back in another rack. */
  tlt_lose(e, "e1", TL_LOSS_KILLED, false);
  tlt_lose(e, "e2", TL_LOSS_KILLED, false);
  ck_assert_uint_eq(tlt_stats(e).hosts, 1);
  ck_assert_uint_eq(tlt_stats(e).racks, 0);
  tlt_add(e, "e5", "h1", "r2", 1);
  ck_assert_uint_eq(tlt_stats(e).hosts, 2);
  ck_assert_uint_eq(tlt_stats(e).racks, 1);
  tlt_end(e);
}
END_TEST

START_TEST(hosts_and_racks_are_counted_and_freed_when_empty) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "a1", "ha", "r1", 1);
  tlt_add(e, "a2", "ha", "r1", 1);
  tlt_add(e, "b1", "hb", "r1", 1);
  tlt_add(e, "c1", "hc", "r2", 1);
  tlt_add(e, "d1", "hd", NULL, 1);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.executors_alive, 5);
  ck_assert_uint_eq(st.hosts, 4);
  ck_assert_uint_eq(st.racks, 2);
  /* A pending-loss executor is on no host list. */
  tlt_lose(e, "a1", TL_LOSS_PENDING, false);
  ck_assert_uint_eq(tlt_stats(e).hosts, 4);
  tlt_lose(e, "a2", TL_LOSS_PENDING, false);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.hosts, 3);
  ck_assert_uint_eq(st.racks, 2);
  ck_assert_uint_eq(st.executors_pending_loss, 2);
  ck_assert_uint_eq(st.executors_alive, 3);
  tlt_lose(e, "b1", TL_LOSS_KILLED, false);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.hosts, 2);
  ck_assert_uint_eq(st.racks, 1);
  tlt_lose(e, "c1", TL_LOSS_KILLED, false);
  st = tlt_stats(e);
  ck_assert_uint_eq(st.hosts, 1);
  ck_assert_uint_eq(st.racks, 0);
  /* A decommissioning executor still counts for its host. */
  TLT_OK(e, tl_executor_decommission(e->s, "d1", "drain"));
  st = tlt_stats(e);
  ck_assert_uint_eq(st.hosts, 1);
  ck_assert_uint_eq(st.executors_alive, 0);
  ck_assert_uint_eq(st.executors_decommissioning, 1);
  tlt_end(e);
}
END_TEST

START_TEST(heartbeat_answers_every_documented_error) {
  tlt_env *e = tlt_new(NULL);
  char id256[300];
  repeat(id256, sizeof id256, 'x', 256);
  tlt_add(e, "alive", "h1", NULL, 1);
  tlt_add(e, "decom", "h1", NULL, 1);
  tlt_add(e, "pending", "h1", NULL, 1);
  tlt_add(e, "gone", "h1", NULL, 1);
  TLT_OK(e, tl_executor_decommission(e->s, "decom", NULL));
  tlt_lose(e, "pending", TL_LOSS_PENDING, false);
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  TLT_OK(e, tl_executor_heartbeat(e->s, "alive"));
  TLT_OK(e, tl_executor_heartbeat(e->s, "decom"));
  TLT_ERR(e, TL_EINVAL, tl_executor_heartbeat(NULL, "alive"));
  TLT_ERR(e, TL_EINVAL, tl_executor_heartbeat(e->s, NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_heartbeat(e->s, ""));
  TLT_ERR(e, TL_EINVAL, tl_executor_heartbeat(e->s, id256));
  TLT_ERR(e, TL_ENOENT, tl_executor_heartbeat(e->s, "never"));
  TLT_ERR(e, TL_EGONE, tl_executor_heartbeat(e->s, "gone"));
  TLT_ERR(e, TL_ESTATE, tl_executor_heartbeat(e->s, "pending"));
  ck_assert_int_eq(tlt_ex(e, "pending").state, TL_EXECUTOR_PENDING_LOSS);
  tlt_end(e);
}
END_TEST

START_TEST(executor_lost_answers_every_documented_error) {
  tlt_env *e = tlt_new(NULL);
  char id256[300];
  repeat(id256, sizeof id256, 'x', 256);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "gone", "h1", NULL, 1);
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  tl_loss_reason ok = {.kind = TL_LOSS_EXITED};
  tl_loss_reason bad = {.kind = (tl_loss_kind)7};
  tl_loss_reason worse = {.kind = (tl_loss_kind)99};
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(NULL, "e1", &ok));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, NULL, &ok));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "e1", NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "", &ok));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, id256, &ok));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "e1", &bad));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, "e1", &worse));
  TLT_ERR(e, TL_ENOENT, tl_executor_lost(e->s, "never", &ok));
  TLT_ERR(e, TL_EGONE, tl_executor_lost(e->s, "gone", &ok));
  ck_assert_int_eq(tlt_ex(e, "e1").state, TL_EXECUTOR_ALIVE);
  tlt_end(e);
}
END_TEST

START_TEST(executor_get_answers_every_documented_error) {
  tlt_env *e = tlt_new(NULL);
  char id256[300];
  repeat(id256, sizeof id256, 'x', 256);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "gone", "h1", NULL, 1);
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  tl_executor_status ex;
  TLT_ERR(e, TL_EINVAL, tl_executor_get(NULL, "e1", &ex));
  TLT_ERR(e, TL_EINVAL, tl_executor_get(e->s, NULL, &ex));
  TLT_ERR(e, TL_EINVAL, tl_executor_get(e->s, "e1", NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_get(e->s, "", &ex));
  TLT_ERR(e, TL_EINVAL, tl_executor_get(e->s, id256, &ex));
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "never", &ex));
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "gone", &ex));
  tlt_end(e);
}
END_TEST

START_TEST(decommission_stops_launches_and_keeps_attempts_running) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 4);
  tlt_add(e, "e2", "h2", NULL, 4);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 6);
  tl_launch l[8];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 8), 2);
  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_executor_decommission(e->s, "e1", "spot instance reclaimed"));
  ck_assert_str_eq(tlt_seq(e, mark), "");
  tl_executor_status ex = tlt_ex(e, "e1");
  ck_assert_int_eq(ex.state, TL_EXECUTOR_DECOMMISSIONING);
  ck_assert_uint_eq(ex.running, 2);
  ck_assert_uint_eq(ex.free_cores, 2);
  /* Offers naming it launch nothing and are counted as rejected. */
  tl_stats before = tlt_stats(e);
  ck_assert_uint_eq(tlt_offer(e, "e1", 4, l + 2, 4), 0);
  tl_stats after = tlt_stats(e);
  ck_assert_uint_eq(after.rejected_offers, before.rejected_offers + 1);
  ck_assert_uint_eq(after.launched, before.launched);
  /* Its attempts run on and report. */
  tlt_run(e, "e1", l[0].tid);
  tlt_succeed(e, "e1", l[0].tid);
  tlt_fail(e, "e1", l[1].tid, TL_END_EXCEPTION);
  ck_assert_uint_eq(tlt_ex(e, "e1").running, 0);
  ck_assert_uint_eq(tlt_ts(e, ts).pending, 5);
  /* Work goes elsewhere. */
  ck_assert_uint_eq(tlt_offer(e, "e2", 4, l, 8), 4);
  for (int i = 0; i < 4; i++)
    ck_assert_str_eq(l[i].executor_id, "e2");
  tlt_end(e);
}
END_TEST

START_TEST(decommission_is_idempotent_and_answers_every_documented_error) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "pending", "h1", NULL, 1);
  tlt_add(e, "gone", "h1", NULL, 1);
  tlt_lose(e, "pending", TL_LOSS_PENDING, false);
  tlt_lose(e, "gone", TL_LOSS_EXITED, false);
  TLT_OK(e, tl_executor_decommission(e->s, "e1", NULL));
  /* Again: TL_OK and nothing changes. */
  TLT_ERR(e, TL_OK, tl_executor_decommission(e->s, "e1", "again"));
  TLT_ERR(e, TL_EINVAL, tl_executor_decommission(NULL, "e1", NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_decommission(e->s, NULL, NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_decommission(e->s, "", NULL));
  TLT_ERR(e, TL_ENOENT, tl_executor_decommission(e->s, "never", NULL));
  TLT_ERR(e, TL_EGONE, tl_executor_decommission(e->s, "gone", NULL));
  TLT_ERR(e, TL_ESTATE, tl_executor_decommission(e->s, "pending", NULL));
  tlt_end(e);
}
END_TEST

START_TEST(decommissioned_executor_loss_never_counts) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 2);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 2);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e1", 2, l, 2), 2);
  tlt_run(e, "e1", l[0].tid);
  tlt_run(e, "e1", l[1].tid);
  TLT_OK(e, tl_executor_decommission(e->s, "e1", NULL));
  size_t mark = tlt_mark(e);
  /* Even an app-caused exit of a decommissioning executor does not count. */
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_ENDED), 2);
  for (size_t i = 0; i < 2; i++) {
    const tlt_event *ev = tlt_nth(e, mark, TLT_EV_ENDED, i);
    ck_assert_int_eq(ev->end_kind, TL_END_EXECUTOR_LOST);
    ck_assert(!ev->counts);
  }
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_FAILED), 0);
  tl_taskset_status st = tlt_ts(e, ts);
  ck_assert(!st.zombie);
  ck_assert(!st.failed);
  ck_assert_uint_eq(st.pending, 2);
  tlt_end(e);
}
END_TEST

START_TEST(decommissioned_then_pending_loss_does_not_count) {
  tl_config cfg = tlt_config();
  cfg.max_task_failures = 1;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tl_taskset_id ts = tlt_submit(e, 0, 0, 0, 1);
  tl_launch l[1];
  ck_assert_uint_eq(tlt_offer(e, "e1", 1, l, 1), 1);
  tlt_run(e, "e1", l[0].tid);
  TLT_OK(e, tl_executor_decommission(e->s, "e1", NULL));
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  ck_assert_str_eq(tlt_seq(e, mark), "ended tid=1 kind=EXECUTOR_LOST counts=0");
  ck_assert(!tlt_ts(e, ts).failed);
  tlt_end(e);
}
END_TEST

START_TEST(tombstones_are_bounded_and_the_oldest_goes_first) {
  tl_config cfg = tlt_config();
  cfg.max_tombstones = 2;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h1", NULL, 1);
  tlt_add(e, "e3", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  e->now += TLT_SEC;
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  e->now += TLT_SEC;
  ck_assert_uint_eq(tlt_stats(e).tombstones, 2);
  tlt_lose(e, "e3", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 2);
  tl_executor_status ex;
  /* e1 was evicted: it is never-known again. */
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "e1", &ex));
  TLT_ERR(e, TL_ENOENT, tl_executor_heartbeat(e->s, "e1"));
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e2", &ex));
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e3", &ex));
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_end(e);
}
END_TEST

START_TEST(tombstones_expire_after_their_ttl) {
  tl_config cfg = tlt_config();
  cfg.tombstone_ttl_ns = 60 * TLT_SEC;
  cfg.heartbeat_timeout_ns = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  tlt_advance_tick(e, 30 * TLT_SEC);
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 2);
  /* Just before e1's TTL: both remembered. */
  uint64_t next = tlt_advance_tick(e, 30 * TLT_SEC - 1);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 2);
  ck_assert_uint_le(next, 2);
  next = tlt_advance_tick(e, 2);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
  tl_executor_status ex;
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "e1", &ex));
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e2", &ex));
  /* e2 goes 30 s after e1. */
  ck_assert_msg(next >= 30 * TLT_SEC - 2 && next <= 30 * TLT_SEC, "next deadline in %ju ns",
                (uintmax_t)next);
  next = tlt_advance_tick(e, 30 * TLT_SEC);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 0);
  ck_assert_uint_eq(next, TL_TICK_NEVER);
  tlt_end(e);
}
END_TEST

START_TEST(tombstones_with_ttl_zero_stay_until_evicted) {
  tl_config cfg = tlt_config();
  cfg.tombstone_ttl_ns = 0;
  cfg.max_tombstones = 2;
  cfg.heartbeat_timeout_ns = 0;
  tlt_alloc_install();
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  ck_assert_uint_eq(tlt_advance_tick(e, 1000000 * TLT_SEC), TL_TICK_NEVER);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 1);
  tl_executor_status ex;
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, "e1", &ex));
  tlt_add(e, "e2", "h1", NULL, 1);
  tlt_add(e, "e3", "h1", NULL, 1);
  tlt_end(e); /* the drain makes two more tombstones; e1 is evicted */
  ck_assert_uint_eq(tlt_alloc_live_blocks(), 0);
  tlt_alloc_restore();
}
END_TEST

START_TEST(max_tombstones_zero_forgets_removed_executors) {
  tl_config cfg = tlt_config();
  cfg.max_tombstones = 0;
  tlt_env *e = tlt_new(&cfg);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_lose(e, "e1", TL_LOSS_EXITED, false);
  tl_stats st = tlt_stats(e);
  ck_assert_uint_eq(st.tombstones, 0);
  ck_assert_uint_eq(st.executors_lost, 1);
  ck_assert_uint_eq(st.mem_live_bytes, e->base_bytes);
  tl_executor_status ex;
  TLT_ERR(e, TL_ENOENT, tl_executor_get(e->s, "e1", &ex));
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_end(e);
}
END_TEST

START_TEST(executor_lost_event_is_made_once_per_executor) {
  tlt_env *e = tlt_new(NULL);
  tlt_add(e, "e1", "h1", NULL, 1);
  tlt_add(e, "e2", "h1", NULL, 1);
  size_t mark = tlt_mark(e);
  tlt_lose(e, "e1", TL_LOSS_PENDING, false);
  TLT_ERR(e, TL_OK, tl_executor_lost(e->s, "e1", &(tl_loss_reason){.kind = TL_LOSS_PENDING}));
  tlt_lose(e, "e1", TL_LOSS_EXITED, true);
  tlt_lose(e, "e2", TL_LOSS_PROCESS_LOST, true);
  TLT_ERR(e, TL_EGONE, tl_executor_lost(e->s, "e2", &(tl_loss_reason){.kind = TL_LOSS_EXITED}));
  ck_assert_str_eq(tlt_seq(e, mark), "lost e1 kind=PENDING\nlost e2 kind=PROCESS_LOST");
  const tlt_event *ev = tlt_last(e, TLT_EV_LOST);
  ck_assert(ev->loss.caused_by_app);
  ck_assert(ev->has_text);
  ck_assert_str_eq(ev->text, "test loss");
  ck_assert_uint_eq(tlt_stats(e).executors_lost, 2);
  ck_assert_uint_eq(tlt_stats(e).tombstones, 2);
  tlt_end(e);
}
END_TEST

/* tl_executor_list: every executor but tombstones, in registration order, with its state,
 * cores, attempts and user data; the count whatever cap is. */
START_TEST(executor_list_lists_the_live_and_pending_ones_and_counts_past_cap) {
  tlt_env *e = tlt_new(NULL);
  int uds[4];
  const char *ids[4] = {"e1", "e2", "e3", "e4"};
  for (int i = 0; i < 4; i++) {
    tl_executor_desc d = {.id = ids[i], .host = i < 2 ? "h1" : "h2", .cores = 2, .ud = &uds[i]};
    TLT_OK(e, tl_executor_add(e->s, &d));
  }
  tlt_submit(e, 0, 0, 0, 4);
  tl_launch l[2];
  ck_assert_uint_eq(tlt_offer(e, "e2", 2, l, 2), 2);
  TLT_OK(e, tl_executor_decommission(e->s, "e3", NULL));
  tlt_lose(e, "e4", TL_LOSS_EXITED, false); /* a tombstone: not listed */
  tlt_lose(e, "e2", TL_LOSS_PENDING, false);
  size_t n = 99;
  TLT_OK(e, tl_executor_list(e->s, NULL, 0, &n));
  ck_assert_uint_eq(n, 3);
  tl_executor_info info[4];
  memset(info, 0xab, sizeof info);
  TLT_OK(e, tl_executor_list(e->s, info, 2, &n));
  ck_assert_uint_eq(n, 3);
  ck_assert_str_eq(info[0].id, "e1");
  ck_assert_str_eq(info[0].host, "h1");
  ck_assert_int_eq(info[0].state, TL_EXECUTOR_ALIVE);
  ck_assert_uint_eq(info[0].cores, 2);
  ck_assert_uint_eq(info[0].free_cores, 2);
  ck_assert_ptr_eq(info[0].ud, &uds[0]);
  ck_assert_str_eq(info[1].id, "e2");
  ck_assert_int_eq(info[1].state, TL_EXECUTOR_PENDING_LOSS);
  ck_assert_uint_eq(info[1].frozen, 2);
  ck_assert_uint_eq(info[1].running, 0);
  ck_assert_ptr_eq(info[1].ud, &uds[1]);
  ck_assert_uint_eq(info[2].cores, 0xabababab); /* past cap: untouched */
  TLT_OK(e, tl_executor_list(e->s, info, 4, &n));
  ck_assert_uint_eq(n, 3);
  ck_assert_str_eq(info[2].id, "e3");
  ck_assert_str_eq(info[2].host, "h2");
  ck_assert_int_eq(info[2].state, TL_EXECUTOR_DECOMMISSIONING);
  ck_assert_ptr_eq(info[2].ud, &uds[2]);
  tl_executor_status st;
  TLT_OK(e, tl_executor_get(e->s, "e3", &st));
  ck_assert_ptr_eq(st.ud, &uds[2]);
  ck_assert_int_eq(tl_executor_list(NULL, info, 4, &n), TL_EINVAL);
  ck_assert_int_eq(tl_executor_list(e->s, info, 4, NULL), TL_EINVAL);
  ck_assert_int_eq(tl_executor_list(e->s, NULL, 1, &n), TL_EINVAL);
  tlt_lose(e, "e2", TL_LOSS_EXITED, false);
  tlt_lose(e, "e1", TL_LOSS_KILLED, false);
  tlt_lose(e, "e3", TL_LOSS_DECOMMISSIONED, false);
  TLT_OK(e, tl_executor_list(e->s, info, 4, &n));
  ck_assert_uint_eq(n, 0);
  TLT_OK(e, tl_cancel_stage(e->s, 0, "done"));
  tlt_end(e);
}
END_TEST

/* Executor ids of 1 to 255 bytes (TL_ID_MAX - 1) work wherever ids go: registration,
 * preferences, offers and launches, status updates single and batched, heartbeats,
 * decommissioning, kills, both loss phases, tl_executor_get and tl_executor_list, and the texts
 * of tl_explain_taskset (exclusion's part included); a 256-byte id is refused with TL_EINVAL by
 * every call that takes one, changing nothing. */
START_TEST(ids_of_255_bytes_work_everywhere_and_256_are_refused) {
  tl_config cfg = tlt_config();
  cfg.exclude_on_failure = true;
  cfg.max_task_failures = 4;
  tlt_env *e = tlt_new(&cfg);
  char id[300], other[300], too_long[300], host[300];
  for (size_t i = 0; i < 255; i++)
    id[i] = (char)('a' + i % 26);
  id[255] = '\0';
  memcpy(other, id, 256);
  other[254] = '#'; /* differs from id in its last bytes only */
  repeat(too_long, sizeof too_long, 'z', 256);
  repeat(host, sizeof host, 'h', 255);
  tlt_add(e, id, host, NULL, 4);
  tlt_add(e, other, host, NULL, 4);
  ck_assert_uint_eq(tlt_stats(e).executors_alive, 2);

  /* Index 0 prefers id, index 1 other: each launches PROCESS_LOCAL on its own. */
  const tl_location p0[] = {{host, id}}, p1[] = {{host, other}};
  tl_task_desc tasks[3] = {{p0, 1}, {p1, 1}, {NULL, 0}};
  tl_taskset_desc d = {.stage_id = 0, .ntasks = 3, .tasks = tasks};
  tl_taskset_id ts = tlt_submit_desc(e, &d);
  tl_offer o[2] = {{other, 1}, {id, 2}};
  tl_launch l[3];
  ck_assert_uint_eq(tlt_offers(e, o, 2, l, 3), 3);
  ck_assert_uint_eq(l[0].index, 1);
  ck_assert_ptr_eq(l[0].executor_id, other);
  ck_assert_int_eq(l[0].locality, TL_PROCESS_LOCAL);
  ck_assert_uint_eq(l[1].index, 0);
  ck_assert_ptr_eq(l[1].executor_id, id);
  ck_assert_int_eq(l[1].locality, TL_PROCESS_LOCAL);
  ck_assert_ptr_eq(l[2].executor_id, id);
  const tlt_event *started = tlt_last(e, TLT_EV_STARTED);
  ck_assert_str_eq(started->executor, id);

  tlt_run(e, id, l[1].tid);
  tl_tid tids[2] = {l[1].tid, l[2].tid};
  tl_update ups[2] = {{.state = TL_TASK_RUNNING}, {.state = TL_TASK_RUNNING}};
  int results[2];
  TLT_OK(e, tl_status_updates(e->s, id, tids, ups, 2, results));
  ck_assert_int_eq(results[0], TL_OK);
  ck_assert_int_eq(results[1], TL_OK);
  TLT_OK(e, tl_executor_heartbeat(e->s, id));
  tlt_fail(e, id, l[2].tid, TL_END_EXCEPTION); /* a counted failure: exclusion records id */

  tl_executor_status st = tlt_ex(e, id);
  ck_assert_uint_eq(st.running, 1);
  ck_assert_str_eq(st.host, host);
  tl_executor_info info[2];
  size_t n = 0;
  TLT_OK(e, tl_executor_list(e->s, info, 2, &n));
  ck_assert_uint_eq(n, 2);
  ck_assert_str_eq(info[0].id, id);
  ck_assert_str_eq(info[1].id, other);

  /* The explanation names the executors in full, in its attempt and its exclusion lines. */
  static char text[8192];
  TLT_OK(e, tl_explain_taskset(e->s, ts, text, sizeof text));
  char want[700];
  snprintf(want, sizeof want, " on executor %s on %s (", id, host);
  ck_assert_msg(strstr(text, want) != NULL, "no attempt line on the long id: %s", text);
  snprintf(want, sizeof want, "  executor %s on %s: 1 indices failed", id, host);
  ck_assert_msg(strstr(text, want) != NULL, "no exclusion line of the long id: %s", text);
  ck_assert_ptr_null(strstr(text, "...\n"));

  size_t mark = tlt_mark(e);
  TLT_OK(e, tl_kill_task(e->s, l[1].tid, false, "by id"));
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_KILL, 0)->executor, id);
  TLT_OK(e, tl_executor_decommission(e->s, other, "drain"));

  /* 256 bytes: refused by every call that takes an id, nothing changed. */
  tl_update running = {.state = TL_TASK_RUNNING};
  tl_loss_reason pending = {.kind = TL_LOSS_PENDING};
  tl_offer bad_offer = {too_long, 1};
  const tl_location bad_pref[] = {{host, too_long}};
  tl_task_desc bad_task[1] = {{bad_pref, 1}};
  tl_taskset_desc bad_ts = {.stage_id = 9, .ntasks = 1, .tasks = bad_task};
  TLT_ERR(e, TL_EINVAL, add(e, too_long, "h1", NULL, 1));
  TLT_ERR(e, TL_EINVAL, tl_resource_offers(e->s, &bad_offer, 1, l, 1, &n));
  TLT_ERR(e, TL_EINVAL, tl_status_update(e->s, too_long, l[1].tid, &running));
  TLT_ERR(e, TL_EINVAL, tl_status_updates(e->s, too_long, tids, ups, 1, results));
  TLT_ERR(e, TL_EINVAL, tl_executor_heartbeat(e->s, too_long));
  TLT_ERR(e, TL_EINVAL, tl_executor_decommission(e->s, too_long, NULL));
  TLT_ERR(e, TL_EINVAL, tl_executor_lost(e->s, too_long, &pending));
  TLT_ERR(e, TL_EINVAL, tl_executor_get(e->s, too_long, &st));
  TLT_ERR(e, TL_EINVAL, tl_submit(e->s, &bad_ts, NULL));

  /* Both loss phases: executor_lost once, at the first; the frozen attempt ends at the second. */
  mark = tlt_mark(e);
  tlt_lose(e, id, TL_LOSS_PENDING, false);
  ck_assert_str_eq(tlt_nth(e, mark, TLT_EV_LOST, 0)->executor, id);
  ck_assert_int_eq(tlt_ex(e, id).state, TL_EXECUTOR_PENDING_LOSS);
  tlt_lose(e, id, TL_LOSS_EXITED, true);
  ck_assert_uint_eq(tlt_count(e, mark, TLT_EV_LOST), 1);
  const tlt_event *ended = tlt_ended_of(e, l[1].tid);
  ck_assert_int_eq(ended->end_kind, TL_END_EXECUTOR_LOST);
  ck_assert_str_eq(ended->executor, id);
  TLT_ERR(e, TL_EGONE, tl_executor_get(e->s, id, &st));
  TLT_ERR(e, TL_EGONE, add(e, id, host, NULL, 1)); /* its tombstone keeps the whole id */
  tlt_add(e, too_long + 1, host, NULL, 1);         /* 255 bytes of z: another id */
  TLT_OK(e, tl_cancel_stage(e->s, 0, "done"));
  tlt_end(e);
}
END_TEST

Suite *tl_executors_suite(void) {
  Suite *s = suite_create("executors");
  TCase *tc = tlt_tcase(s, "registration");
  tcase_add_test(tc, add_registers_an_alive_executor);
  tcase_add_test(tc, add_copies_the_strings);
  tcase_add_test(tc, add_rejects_bad_descriptors);
  tcase_add_test(tc, add_of_a_known_id_is_eexist_in_every_live_state);
  tcase_add_test(tc, add_of_a_tombstoned_id_is_egone);
  tcase_add_test(tc, add_requires_the_rack_of_the_host);
  tcase_add_test(tc, add_errors_come_in_the_documented_order);
  tcase_add_test(tc, hosts_and_racks_are_counted_and_freed_when_empty);
  tc = tlt_tcase(s, "errors");
  tcase_add_test(tc, heartbeat_answers_every_documented_error);
  tcase_add_test(tc, executor_lost_answers_every_documented_error);
  tcase_add_test(tc, executor_get_answers_every_documented_error);
  tc = tlt_tcase(s, "decommission");
  tcase_add_test(tc, decommission_stops_launches_and_keeps_attempts_running);
  tcase_add_test(tc, decommission_is_idempotent_and_answers_every_documented_error);
  tcase_add_test(tc, decommissioned_executor_loss_never_counts);
  tcase_add_test(tc, decommissioned_then_pending_loss_does_not_count);
  tc = tlt_tcase(s, "tombstones");
  tcase_add_test(tc, tombstones_are_bounded_and_the_oldest_goes_first);
  tcase_add_test(tc, tombstones_expire_after_their_ttl);
  tcase_add_test(tc, tombstones_with_ttl_zero_stay_until_evicted);
  tcase_add_test(tc, max_tombstones_zero_forgets_removed_executors);
  tcase_add_test(tc, executor_lost_event_is_made_once_per_executor);
  tcase_add_test(tc, executor_list_lists_the_live_and_pending_ones_and_counts_past_cap);
  tc = tlt_tcase(s, "long ids");
  tcase_add_test(tc, ids_of_255_bytes_work_everywhere_and_256_are_refused);
  return s;
}
