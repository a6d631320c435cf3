/* libFuzzer harness for tl_scheduler_restore (docs/snapshot.md): the input is an image. Unless
 * its first byte is odd, the harness first makes its header right (magic, version: 4 with the
 * first byte's bit 3, else 3 with its bit 2, else 2 with its bit 1, else 1, flags, this
 * config's fingerprint, the body's length and both CRC-32C checksums), so that mutations reach
 * the validation of the records instead of dying at a checksum. A restore must refuse with
 * TL_ESNAPSHOT / TL_EVERSION / TL_ECONFIG (nothing created, no callback) or give a scheduler that
 * passes tl_check after every step of a drain: every executor lost, a tick far in the future,
 * then tl_scheduler_free, with ASan and UBSan watching and LeakSanitizer at exit.
 *
 *   tl-fuzz-snapshot -runs=0 test/fuzz/snapshot-corpus     the corpus once (ctest
 *                                                          fuzz-snapshot-corpus)
 *
 * The seed images (a zero byte, then a version 1 image; v2-*: a byte 2, then a version 2 one;
 * v3-*: a byte 4, then a version 3 one; v4-*: a byte 8, then a version 4 one) are snapshots of
 * schedulers with fuzz_config's settings:
 * empty; executors on hosts and racks with a FAIR pool, a shuffle-map task set with preferred
 * locations and another running; then with successes, counted failures, a decommission and a
 * pending loss; then with a tombstone. v3-resources: GPU and FPGA executors (one of profile 1,
 * one with none), task sets asking for whole GPUs, quarters with the FPGA, halves in profile 1
 * and nothing, attempts running and frozen by a pending loss with their grants.
 * v4-decommission: three executors, one decommissioning and one pending loss after it was
 * decommissioning (their decommission times), a task set past its quantile with an attempt on
 * the decommissioning executor that its kill would cut short, and a one-task set, so that the
 * checks before the drain reach the decommission kill rule and the duration threshold.
 * v4-nested-pools: pools three deep (FAIR and FIFO, one changed by tl_pool_set) with task sets
 * queued and running in leaf pools over two executors.
 * v4-placement: four executors on three hosts, task sets with hard placement (a spread per host
 * over two allowed hosts, a spread per executor over "e4" and "ghost", and one allowed only on
 * "ghost"), three attempts running and one frozen by a pending loss (docs/api.md "Hard
 * placement").
 * v4-shuffle: with the offer shuffle on, after shuffled rounds over three executors: the image
 * ends with its SHUF section (the sequence's position), which the restore takes.
 * The v4-* seeds are made by tl-snapshot-seeds (snapshot_seeds.c, in the plain test build) with
 * this tree's library and this harness's config (fuzz_config.h, shared): after a change of the
 * format, `build/test/tl-snapshot-seeds test/fuzz/snapshot-corpus` makes them again, and ctest
 * snapshot-seeds-corpus fails until it has (docs/testing.md).
 */
#include "fuzz_config.h" /* fuzz_config, fuzz_clock, fuzz_now */
#include "taskledger.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned callbacks_made;
static void on_failed(void *ud, const tl_taskset_info *ts, const char *reason) {
  (void)ud;
  (void)ts;
  (void)reason;
  callbacks_made++;
}
static void on_released(void *ud, const tl_taskset_info *ts, void *payload) {
  (void)ud;
  (void)ts;
  (void)payload;
  callbacks_made++;
}
static void on_ended(void *ud, const tl_task_info *t, const tl_task_end *e) {
  (void)ud;
  (void)t;
  if (e->result != NULL && e->result_free != NULL)
    e->result_free(e->result);
  callbacks_made++;
}
static unsigned resolved;
static bool on_restored(void *ud, const tl_taskset_info *ts, void **payload) {
  (void)ud;
  resolved++;
  *payload = NULL;
  return ts->id % 7 != 3; /* now and then a payload that cannot be had */
}

static tl_callbacks fuzz_callbacks(void) {
  tl_callbacks cb = {0};
  cb.task_ended = on_ended;
  cb.taskset_failed = on_failed;
  cb.taskset_released = on_released;
  cb.taskset_restored = on_restored;
  return cb;
}

static void check(tl_scheduler *s, const char *after) {
  char why[256];
  if (tl_check(s, why, sizeof why) != TL_OK) {
    fprintf(stderr, "tl_check after %s: %s\n", after, why);
    abort();
  }
}

static uint32_t crc32c(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  while (n-- != 0) {
    c ^= *p++;
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return ~c;
}

static void put_le(uint8_t *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* The fingerprint of fuzz_config, read off an empty scheduler's image. */
static uint64_t fingerprint(void) {
  static uint64_t fp;
  static int have;
  if (have)
    return fp;
  tl_config cfg = fuzz_config();
  tl_scheduler *s;
  buf b = {NULL, 0, 0, 0};
  if (tl_scheduler_new(&cfg, NULL, &s) != TL_OK || tl_snapshot(s, buf_write, &b) != TL_OK)
    abort();
  tl_scheduler_free(s);
  for (int i = 0; i < 8; i++)
    fp |= (uint64_t)b.p[16 + i] << (8 * i);
  free(b.p);
  have = 1;
  return fp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  bool raw = (data[0] & 1) != 0;
  buf b = {malloc(size - 1 + 1), size - 1, size - 1, 0};
  if (b.p == NULL)
    abort();
  memcpy(b.p, data + 1, size - 1);
  if (!raw && b.n >= 40) {
    memcpy(b.p, "TLSNAP\r\n", 8);
    /* The corpus's older images are version 1, v2-* version 2, v3-* version 3; bit 3 makes
     * version 4 (v4-*: retry policy and tags, decommission times, nested pools). */
    put_le(b.p + 8,
           (data[0] & 8) != 0   ? 4
           : (data[0] & 4) != 0 ? 3
           : (data[0] & 2) != 0 ? 2
                                : 1,
           4);
    put_le(b.p + 12, 0, 4);
    put_le(b.p + 16, fingerprint(), 8);
    put_le(b.p + 24, b.n - 40, 8);
    put_le(b.p + 32, crc32c(b.p + 40, b.n - 40), 4);
    put_le(b.p + 36, crc32c(b.p, 36), 4);
  }
  fuzz_now = 1000000000ull;
  tl_config cfg = fuzz_config();
  tl_callbacks cb = fuzz_callbacks();
  tl_scheduler *s = (tl_scheduler *)&b;
  callbacks_made = resolved = 0;
  int rc = tl_scheduler_restore(&cfg, &cb, buf_read, &b, &s);
  free(b.p);
  if (rc != TL_OK) {
    if (s != NULL || callbacks_made != 0 || resolved != 0 ||
        (rc != TL_ESNAPSHOT && rc != TL_EVERSION && rc != TL_ECONFIG && rc != TL_ENOMEM)) {
      fprintf(stderr, "restore refused with %s but left something behind\n", tl_err_name(rc));
      abort();
    }
    return 0;
  }
  check(s, "the restore");
  size_t n = 0;
  if (tl_executor_list(s, NULL, 0, &n) != TL_OK)
    abort();
  tl_executor_info *list = calloc(n + 1, sizeof *list);
  if (list == NULL || tl_executor_list(s, list, n, &n) != TL_OK)
    abort();
  /* Every restored executor reconciles with what the image holds frozen on it, and checks at
   * once and a minute later speculate what the image's run times, thresholds and decommissions
   * say. */
  for (size_t i = 0; i < n; i++) {
    if (list[i].state != TL_EXECUTOR_RECOVERING)
      continue;
    size_t nfrozen = 0, nunknown = 0;
    if (tl_executor_frozen(s, list[i].id, NULL, 0, &nfrozen) != TL_OK)
      abort();
    tl_tid *tids = calloc(nfrozen + 1, sizeof *tids);
    if (tids == NULL || tl_executor_frozen(s, list[i].id, tids, nfrozen, &nfrozen) != TL_OK)
      abort();
    int err = tl_executor_reconcile(s, list[i].id, tids, nfrozen, NULL, 0, &nunknown);
    free(tids);
    if (err != TL_OK || nunknown != 0)
      abort();
    check(s, "a reconciliation");
  }
  fuzz_now += 1000000ull; /* a check at once: the kill rule's moment */
  (void)tl_tick(s);
  check(s, "a speculation check");
  fuzz_now += 61ull * 1000000000ull; /* past the threshold, within heartbeats */
  (void)tl_tick(s);
  check(s, "a later speculation check");
  /* Drive it to empty: lose every executor, then let every deadline pass. */
  for (size_t i = 0; i < n; i++) {
    tl_loss_reason why = {TL_LOSS_KILLED, false, 0, "fuzz drain"};
    int err = tl_executor_lost(s, list[i].id, &why);
    if (err != TL_OK && err != TL_EGONE)
      abort();
    check(s, "a loss");
  }
  free(list);
  fuzz_now += 1ull << 50;
  (void)tl_tick(s);
  check(s, "the tick");
  tl_stats st;
  tl_stats_get(s, &st);
  if (st.attempts_running != 0 || st.attempts_frozen != 0 || st.tasksets_zombie != 0) {
    fprintf(stderr, "the drain left %zu running, %zu frozen, %zu zombie\n", st.attempts_running,
            st.attempts_frozen, st.tasksets_zombie);
    abort();
  }
  if (tl_scheduler_free(s) != TL_OK)
    abort();
  return 0;
}
