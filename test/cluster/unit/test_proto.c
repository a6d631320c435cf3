/* The cluster protocol's codec (proto.h): every message round-trips through the decoder however
 * the stream is split, every malformed frame is refused with the error that names its fault,
 * and the encoder refuses what the decoder would. ctest runs it as cluster-proto; CK_FORK=no
 * runs it in-process (for valgrind or a debugger).
 */
#include "proto.h"

#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------------- */

static int view_equal(tlc_view a, tlc_view b) {
  return a.len == b.len && (a.len == 0 || memcmp(a.ptr, b.ptr, a.len) == 0);
}

static int msg_equal(const tlc_msg *a, const tlc_msg *b) {
  if (a->type != b->type)
    return 0;
  switch (a->type) {
  case TLC_MSG_REGISTER:
    if (!view_equal(a->u.reg.executor_id, b->u.reg.executor_id) ||
        !view_equal(a->u.reg.host, b->u.reg.host) || a->u.reg.cores != b->u.reg.cores ||
        !view_equal(a->u.reg.token, b->u.reg.token) || a->u.reg.profile != b->u.reg.profile ||
        a->u.reg.nresources != b->u.reg.nresources)
      return 0;
    for (size_t i = 0; i < a->u.reg.nresources; i++) {
      const tlc_resource *x = &a->u.reg.resources[i], *y = &b->u.reg.resources[i];
      if (!view_equal(x->name, y->name) || x->naddresses != y->naddresses)
        return 0;
      for (size_t k = 0; k < x->naddresses; k++)
        if (!view_equal(x->addresses[k], y->addresses[k]))
          return 0;
    }
    return 1;
  case TLC_MSG_HEARTBEAT:
    return a->u.heartbeat.seq == b->u.heartbeat.seq &&
           a->u.heartbeat.binaries == b->u.heartbeat.binaries;
  case TLC_MSG_TASKSET_BINARY:
    return a->u.binary.taskset_id == b->u.binary.taskset_id &&
           view_equal(a->u.binary.payload, b->u.binary.payload);
  case TLC_MSG_LAUNCH:
    if (a->u.launch.count != b->u.launch.count)
      return 0;
    for (size_t i = 0; i < a->u.launch.count; i++) {
      const tlc_launch_item *x = &a->u.launch.items[i], *y = &b->u.launch.items[i];
      if (x->tid != y->tid || x->taskset_id != y->taskset_id || x->index != y->index ||
          x->attempt != y->attempt || x->flags != y->flags || !view_equal(x->kind, y->kind) ||
          x->ngrants != y->ngrants)
        return 0;
      for (size_t g = 0; g < x->ngrants; g++)
        if (!view_equal(x->grants[g].name, y->grants[g].name) ||
            !view_equal(x->grants[g].address, y->grants[g].address) ||
            x->grants[g].share != y->grants[g].share)
          return 0;
    }
    return 1;
  case TLC_MSG_STATUS:
    if (a->u.status.count != b->u.status.count)
      return 0;
    for (size_t i = 0; i < a->u.status.count; i++) {
      const tlc_status_item *x = &a->u.status.items[i], *y = &b->u.status.items[i];
      if (x->tid != y->tid || x->state != y->state || !view_equal(x->result, y->result) ||
          !view_equal(x->text, y->text))
        return 0;
    }
    return 1;
  case TLC_MSG_KILL:
    if (a->u.kill.interrupt != b->u.kill.interrupt ||
        !view_equal(a->u.kill.reason, b->u.kill.reason) || a->u.kill.count != b->u.kill.count)
      return 0;
    for (size_t i = 0; i < a->u.kill.count; i++)
      if (a->u.kill.tids[i] != b->u.kill.tids[i])
        return 0;
    return 1;
  case TLC_MSG_STOP:
    return view_equal(a->u.stop.reason, b->u.stop.reason);
  case TLC_MSG_FORGET:
    return a->u.forget.taskset_id == b->u.forget.taskset_id;
  case TLC_MSG_RECONCILE:
    if (a->u.reconcile.more != b->u.reconcile.more || a->u.reconcile.count != b->u.reconcile.count)
      return 0;
    for (size_t i = 0; i < a->u.reconcile.count; i++) {
      const tlc_reconcile_item *x = &a->u.reconcile.items[i], *y = &b->u.reconcile.items[i];
      if (x->tid != y->tid || x->taskset_id != y->taskset_id || x->index != y->index ||
          x->attempt != y->attempt || x->flags != y->flags)
        return 0;
    }
    return 1;
  case TLC_MSG_SYNCED:
    return a->u.synced.frames == b->u.synced.frames;
  case TLC_MSG_EPOCH:
    return a->u.epoch.epoch == b->u.epoch.epoch;
  default:
    return 0;
  }
}

/* xorshift64: the random splits are the same on every run. */
static uint64_t next_random(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *state = x;
}

/* How a stream is cut into the pieces fed to the decoder. */
enum { WHOLE = 0, BYTE_BY_BYTE = 1, RANDOM_FIRST_SEED = 2, RANDOM_SEEDS = 20 };

/* Decodes stream[0..n) with a decoder of frame_max, fed as split says, comparing the k-th
 * message yielded with expect[k]. Returns the decoder's error (0 when every byte decoded) and
 * the number of messages yielded in *yielded. */
static int decode_stream(const uint8_t *stream, size_t n, size_t frame_max, unsigned split,
                         const tlc_msg *expect, size_t nexpect, size_t *yielded) {
  tlc_decoder d;
  ck_assert_int_eq(tlc_decoder_init(&d, frame_max), TLC_OK);
  uint64_t seed = 0x9e3779b97f4a7c15u * (split + 1);
  size_t pos = 0;
  int rc = TLC_OK;
  *yielded = 0;
  while (pos < n) {
    size_t piece = n - pos;
    if (split == BYTE_BY_BYTE)
      piece = 1;
    else if (split != WHOLE)
      piece = 1 + next_random(&seed) % (next_random(&seed) % 2 ? 7 : 300);
    if (piece > n - pos)
      piece = n - pos;
    /* Feed the piece until the decoder has consumed all of it. The checks made per call abort
     * only on failure: a passing ck_assert records its line, which costs more than the decoding
     * (minutes under valgrind). */
    size_t off = 0;
    do {
      size_t used;
      tlc_msg m;
      rc = tlc_decoder_feed(&d, stream + pos + off, piece - off, &used, &m);
      if (used > piece - off)
        ck_abort_msg("consumed %zu of %zu bytes", used, piece - off);
      off += used;
      if (rc != TLC_OK) {
        ck_assert_int_eq(m.type, TLC_MSG_NONE);
        /* The error is sticky, and consumes nothing. */
        ck_assert_int_eq(tlc_decoder_feed(&d, stream, n, &used, &m), rc);
        ck_assert_uint_eq(used, 0);
        tlc_decoder_fini(&d);
        return rc;
      }
      if (m.type != TLC_MSG_NONE) {
        if (*yielded >= nexpect || !msg_equal(&m, &expect[*yielded]))
          ck_abort_msg("message %zu (%s) unexpected or different", *yielded,
                       tlc_msg_type_name(m.type));
        (*yielded)++;
      } else if (off != piece) {
        ck_abort_msg("no frame completed, yet %zu bytes were left", piece - off);
      }
    } while (off < piece);
    pos += piece;
  }
  tlc_decoder_fini(&d);
  return rc;
}

/* Every split of the stream decodes to expect[0..nexpect), exactly. */
static void assert_decodes(const uint8_t *stream, size_t n, size_t frame_max, const tlc_msg *expect,
                           size_t nexpect) {
  for (unsigned split = WHOLE; split < RANDOM_FIRST_SEED + RANDOM_SEEDS; split++) {
    size_t yielded;
    int rc = decode_stream(stream, n, frame_max, split, expect, nexpect, &yielded);
    ck_assert_msg(rc == TLC_OK, "split %u: %s", split, tlc_err_name(rc));
    ck_assert_uint_eq(yielded, nexpect);
  }
}

/* Every split of the stream is refused with err, after yielding nothing. */
static void assert_refused(const uint8_t *stream, size_t n, size_t frame_max, int err) {
  for (unsigned split = WHOLE; split < RANDOM_FIRST_SEED + RANDOM_SEEDS; split++) {
    size_t yielded;
    int rc = decode_stream(stream, n, frame_max, split, NULL, 0, &yielded);
    ck_assert_msg(rc == err, "split %u: %s, expected %s", split, tlc_err_name(rc),
                  tlc_err_name(err));
  }
}

static tlc_view bytes_view(const void *p, size_t len) {
  tlc_view v = {p, len};
  return v;
}

/* A view of len copies of c (len at most TLC_RESULT_MAX + 1), in a buffer only ever filled with
 * c, so that every view made by filled stays what it was made. */
static tlc_view filled(uint8_t c, size_t len) {
  static uint8_t pool[256][TLC_RESULT_MAX + 1];
  if (len > sizeof pool[c])
    abort(); /* a test asked for more than any bound; not ck_assert: --write-corpus calls this */
  memset(pool[c], c, len);
  return bytes_view(pool[c], len);
}

/* Room for a payload over the largest frame. */
static uint8_t big_payload[TLC_FRAME_MAX + 1];

/* ---------------------------------------------------------------------------------------------
 * Hand-made frames, for what the encoder refuses to write
 * ------------------------------------------------------------------------------------------- */

typedef struct raw {
  uint8_t b[4 * TLC_RESULT_MAX]; /* the frame, its length prefix first */
  size_t n;                      /* bytes written */
} raw;

static void raw_u8(raw *r, uint8_t v) { r->b[r->n++] = v; }
static void raw_u16(raw *r, uint16_t v) {
  raw_u8(r, (uint8_t)v);
  raw_u8(r, (uint8_t)(v >> 8));
}
static void raw_u32(raw *r, uint32_t v) {
  for (int i = 0; i < 4; i++)
    raw_u8(r, (uint8_t)(v >> (8 * i)));
}
static void raw_u64(raw *r, uint64_t v) {
  for (int i = 0; i < 8; i++)
    raw_u8(r, (uint8_t)(v >> (8 * i)));
}
static void raw_fill(raw *r, uint8_t c, size_t len) {
  memset(r->b + r->n, c, len);
  r->n += len;
}
static void raw_str(raw *r, const char *s) {
  raw_u16(r, (uint16_t)strlen(s));
  memcpy(r->b + r->n, s, strlen(s));
  r->n += strlen(s);
}

/* Starts a frame: a placeholder prefix, then version and type. */
static raw *raw_begin(uint8_t version, uint8_t type) {
  static raw r;
  r.n = 0;
  raw_u32(&r, 0);
  raw_u8(&r, version);
  raw_u8(&r, type);
  return &r;
}

/* Writes the length prefix for what follows it. */
static raw *raw_end(raw *r) {
  uint32_t len = (uint32_t)(r->n - 4);
  for (int i = 0; i < 4; i++)
    r->b[i] = (uint8_t)(len >> (8 * i));
  return r;
}

static void assert_raw_refused(raw *r, int err) {
  raw_end(r);
  assert_refused(r->b, r->n, TLC_FRAME_MAX, err);
}

/* ---------------------------------------------------------------------------------------------
 * Sample messages
 * ------------------------------------------------------------------------------------------- */

static const tlc_grant launch_grants[] = {
    {{(const uint8_t *)"gpu", 3}, {(const uint8_t *)"0", 1}, 1},
    {{(const uint8_t *)"A-z_0.9", 7}, {(const uint8_t *)"GPU-1f3a!~", 10}, TLC_SHARE_MAX},
};

static const tlc_launch_item launch_items[] = {
    {1, 7, 0, 0, 0, {(const uint8_t *)"noop", 4}, 0, NULL},
    {UINT64_MAX,
     UINT64_MAX,
     UINT32_MAX,
     UINT32_MAX,
     TLC_LAUNCH_SPECULATIVE,
     {(const uint8_t *)"sleep:5", 7},
     0,
     NULL},
    {0x0102030405060708u, 9, 3, 1, 0, {(const uint8_t *)"spin:100", 8}, 2, launch_grants},
};

static const tlc_reconcile_item reconcile_items[] = {
    {7, 1, 0, 0, 0},
    {1, 2, 3, 4, TLC_RECONCILE_SPECULATIVE},
    {UINT64_MAX, UINT64_MAX, UINT32_MAX, UINT32_MAX, TLC_RECONCILE_FLAGS},
    {0x0102030405060708u, 9, 5, 1, TLC_RECONCILE_ENDED},
};

static const tlc_status_item status_items[] = {
    {1, TLC_TASK_RUNNING, {NULL, 0}, {NULL, 0}},
    {2, TLC_TASK_FINISHED, {(const uint8_t *)"\0\1\2\377", 4}, {NULL, 0}},
    {3, TLC_TASK_FAILED, {NULL, 0}, {(const uint8_t *)"crash: exit 3", 13}},
    {UINT64_MAX, TLC_TASK_KILLED, {(const uint8_t *)"r", 1}, {(const uint8_t *)"killed", 6}},
};

/* At least one message of each type, and each bound at its edges. */
static size_t sample_messages(tlc_msg *out) {
  size_t n = 0;
  static const uint8_t token[] = {0, 1, 2, 0xff, 0, 'x'};
  static const uint8_t payload[] = "a task binary\0with a NUL";
  out[n++] = (tlc_msg){.type = TLC_MSG_REGISTER,
                       .u.reg = {tlc_str("exec-1"), tlc_str("host-1"), 4,
                                 bytes_view(token, sizeof token), 0, 0, NULL}};
  out[n++] =
      (tlc_msg){.type = TLC_MSG_REGISTER,
                .u.reg = {filled('i', 1), filled('h', 1), TLC_CORES_MAX, {NULL, 0}, 0, 0, NULL}};
  out[n++] = (tlc_msg){.type = TLC_MSG_REGISTER,
                       .u.reg = {filled('i', TLC_ID_MAX), filled('h', TLC_HOST_MAX), 1,
                                 filled(0, TLC_TOKEN_MAX), 0, 0, NULL}};
  static const tlc_view gpus[] = {{(const uint8_t *)"0", 1}, {(const uint8_t *)"1", 1}};
  static const tlc_view fpgas[] = {{(const uint8_t *)"GPU-1f3a!~", 10}};
  static const tlc_resource resources[] = {{{(const uint8_t *)"gpu", 3}, 2, gpus},
                                           {{(const uint8_t *)"A-z_0.9", 7}, 1, fpgas}};
  out[n++] = (tlc_msg){.type = TLC_MSG_REGISTER,
                       .u.reg = {.executor_id = tlc_str("exec-2"),
                                 .host = tlc_str("host-2"),
                                 .cores = 8,
                                 .profile = UINT32_MAX,
                                 .nresources = 2,
                                 .resources = resources}};
  out[n++] = (tlc_msg){.type = TLC_MSG_HEARTBEAT, .u.heartbeat = {0, 0}};
  out[n++] = (tlc_msg){.type = TLC_MSG_HEARTBEAT, .u.heartbeat = {UINT64_MAX, 0x8000000000000001u}};
  out[n++] = (tlc_msg){.type = TLC_MSG_TASKSET_BINARY,
                       .u.binary = {42, bytes_view(payload, sizeof payload)}};
  out[n++] = (tlc_msg){.type = TLC_MSG_TASKSET_BINARY, .u.binary = {UINT64_MAX, {NULL, 0}}};
  out[n++] = (tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {1, launch_items}};
  out[n++] = (tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {3, launch_items}};
  out[n++] = (tlc_msg){.type = TLC_MSG_STATUS, .u.status = {4, status_items}};
  out[n++] = (tlc_msg){.type = TLC_MSG_STATUS, .u.status = {1, status_items + 1}};
  static const uint64_t tids[] = {7, 1, UINT64_MAX, 0x0102030405060708u};
  out[n++] = (tlc_msg){.type = TLC_MSG_KILL, .u.kill = {1, tlc_str("stage cancelled"), 1, tids}};
  out[n++] = (tlc_msg){.type = TLC_MSG_KILL, .u.kill = {0, {NULL, 0}, 4, tids}};
  out[n++] = (tlc_msg){.type = TLC_MSG_STOP, .u.stop = {tlc_str("driver exiting")}};
  out[n++] = (tlc_msg){.type = TLC_MSG_STOP, .u.stop = {filled('r', TLC_TEXT_MAX)}};
  out[n++] = (tlc_msg){.type = TLC_MSG_FORGET, .u.forget = {42}};
  out[n++] = (tlc_msg){.type = TLC_MSG_FORGET, .u.forget = {UINT64_MAX}};
  out[n++] = (tlc_msg){.type = TLC_MSG_RECONCILE, .u.reconcile = {0, 0, NULL}};
  out[n++] = (tlc_msg){.type = TLC_MSG_RECONCILE, .u.reconcile = {1, 4, reconcile_items}};
  out[n++] = (tlc_msg){.type = TLC_MSG_RECONCILE, .u.reconcile = {0, 1, reconcile_items + 2}};
  out[n++] = (tlc_msg){.type = TLC_MSG_SYNCED, .u.synced = {0}};
  out[n++] = (tlc_msg){.type = TLC_MSG_SYNCED, .u.synced = {UINT64_MAX}};
  out[n++] = (tlc_msg){.type = TLC_MSG_EPOCH, .u.epoch = {1}};
  out[n++] = (tlc_msg){.type = TLC_MSG_EPOCH, .u.epoch = {UINT64_MAX}};
  return n;
}

/* ---------------------------------------------------------------------------------------------
 * Round trips
 * ------------------------------------------------------------------------------------------- */

START_TEST(every_message_round_trips_in_any_split) {
  tlc_msg msgs[32];
  size_t n = sample_messages(msgs);
  for (size_t i = 0; i < n; i++) {
    tlc_buf buf;
    tlc_buf_init(&buf);
    ck_assert_int_eq(tlc_encode(&buf, &msgs[i]), TLC_OK);
    assert_decodes(buf.data, buf.len, TLC_FRAME_MAX, &msgs[i], 1);
    tlc_buf_free(&buf);
  }
}
END_TEST

START_TEST(big_batches_and_bounds_round_trip) {
  enum { N = 2000 };
  static tlc_launch_item launches[N];
  static tlc_status_item updates[N];
  for (size_t i = 0; i < N; i++) {
    launches[i] = (tlc_launch_item){
        i + 1, 3, (uint32_t)i, 0, (uint8_t)(i % 2), filled('k', 1 + i % TLC_KIND_MAX), 0, NULL};
    updates[i] =
        (tlc_status_item){i + 1, (uint8_t)(1 + i % 4), filled('r', i % 17), filled('t', i % 5)};
  }
  tlc_msg big[] = {
      {.type = TLC_MSG_LAUNCH, .u.launch = {N, launches}},
      {.type = TLC_MSG_STATUS, .u.status = {N, updates}},
      {.type = TLC_MSG_STATUS,
       .u.status = {1, &(tlc_status_item){9, TLC_TASK_FINISHED, filled(7, TLC_RESULT_MAX),
                                          filled('m', TLC_TEXT_MAX)}}},
  };
  tlc_buf buf;
  tlc_buf_init(&buf);
  for (size_t i = 0; i < 3; i++)
    ck_assert_int_eq(tlc_encode(&buf, &big[i]), TLC_OK);
  assert_decodes(buf.data, buf.len, TLC_FRAME_MAX, big, 3);
  tlc_buf_free(&buf);
  /* The most items one RECONCILE frame holds: its frame is within an item of the maximum; the
   * most tids one KILL holds with the longest reason, and with none. */
  tlc_reconcile_item *items = malloc(TLC_RECONCILE_FRAME_ITEMS * sizeof *items);
  ck_assert_ptr_nonnull(items);
  for (size_t i = 0; i < TLC_RECONCILE_FRAME_ITEMS; i++)
    items[i] =
        (tlc_reconcile_item){3 * i + 1, i / 7, (uint32_t)i, (uint32_t)(i % 5), (uint8_t)(i % 4)};
  tlc_msg most = {.type = TLC_MSG_RECONCILE, .u.reconcile = {1, TLC_RECONCILE_FRAME_ITEMS, items}};
  tlc_buf_init(&buf);
  ck_assert_int_eq(tlc_encode(&buf, &most), TLC_OK);
  ck_assert_uint_gt(buf.len - 4, TLC_FRAME_MAX - TLC_RECONCILE_ITEM_BYTES);
  assert_decodes(buf.data, buf.len, TLC_FRAME_MAX, &most, 1);
  buf.len = 0;
  uint64_t *tids = malloc(TLC_FRAME_MAX / 8 * sizeof *tids);
  ck_assert_ptr_nonnull(tids);
  for (size_t i = 0; i < TLC_FRAME_MAX / 8; i++)
    tids[i] = 5 * i + 2;
  tlc_msg kills[] = {
      {.type = TLC_MSG_KILL, .u.kill = {1, filled('w', TLC_TEXT_MAX), TLC_KILL_FRAME_TIDS, tids}},
      {.type = TLC_MSG_KILL, .u.kill = {0, {NULL, 0}, (TLC_FRAME_MAX - 2 - 1 - 2 - 4) / 8, tids}},
  };
  ck_assert_int_eq(tlc_encode(&buf, &kills[0]), TLC_OK);
  ck_assert_uint_gt(buf.len - 4, TLC_FRAME_MAX - 8);
  size_t first = buf.len;
  ck_assert_int_eq(tlc_encode(&buf, &kills[1]), TLC_OK);
  ck_assert_uint_gt(buf.len - first - 4, TLC_FRAME_MAX - 8);
  assert_decodes(buf.data, buf.len, TLC_FRAME_MAX, kills, 2);
  /* One more tid than each holds: the encoder refuses it, the buffer unchanged. */
  size_t before = buf.len;
  kills[0].u.kill.count++;
  kills[1].u.kill.count++;
  ck_assert_int_eq(tlc_encode(&buf, &kills[0]), TLC_ETOOBIG);
  ck_assert_int_eq(tlc_encode(&buf, &kills[1]), TLC_ETOOBIG);
  kills[1].u.kill.count = TLC_FRAME_MAX / 8 + 1;
  ck_assert_int_eq(tlc_encode(&buf, &kills[1]), TLC_ETOOBIG);
  ck_assert_uint_eq(buf.len, before);
  tlc_buf_free(&buf);
  free(tids);
  free(items);
}
END_TEST

START_TEST(frames_back_to_back_decode_in_order) {
  tlc_msg msgs[32];
  size_t n = sample_messages(msgs);
  tlc_buf buf;
  tlc_buf_init(&buf);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(tlc_encode(&buf, &msgs[i]), TLC_OK);
  assert_decodes(buf.data, buf.len, TLC_FRAME_MAX, msgs, n);

  /* A decoder reused across frames, its buffers grown by a big one, still decodes small ones. */
  tlc_msg twice[64];
  memcpy(twice, msgs, n * sizeof *msgs);
  memcpy(twice + n, msgs, n * sizeof *msgs);
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(tlc_encode(&buf, &msgs[i]), TLC_OK);
  assert_decodes(buf.data, buf.len, TLC_FRAME_MAX, twice, 2 * n);
  tlc_buf_free(&buf);
}
END_TEST

START_TEST(the_decoder_stops_at_the_end_of_a_frame) {
  tlc_msg hb = {.type = TLC_MSG_HEARTBEAT, .u.heartbeat = {1, 2}};
  tlc_buf buf;
  tlc_buf_init(&buf);
  ck_assert_int_eq(tlc_encode(&buf, &hb), TLC_OK);
  size_t one = buf.len;
  ck_assert_uint_eq(one, 4 + 2 + 16);
  ck_assert_int_eq(tlc_encode(&buf, &hb), TLC_OK);
  tlc_decoder d;
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_FRAME_MAX), TLC_OK);
  size_t used;
  tlc_msg m;
  /* Two frames given at once: the first call takes exactly the first. */
  ck_assert_int_eq(tlc_decoder_feed(&d, buf.data, buf.len, &used, &m), TLC_OK);
  ck_assert_uint_eq(used, one);
  ck_assert(msg_equal(&m, &hb));
  ck_assert_int_eq(tlc_decoder_feed(&d, buf.data + used, buf.len - used, &used, &m), TLC_OK);
  ck_assert_uint_eq(used, one);
  ck_assert(msg_equal(&m, &hb));
  /* Nothing to feed: nothing yielded. */
  ck_assert_int_eq(tlc_decoder_feed(&d, NULL, 0, &used, &m), TLC_OK);
  ck_assert_uint_eq(used, 0);
  ck_assert_int_eq(m.type, TLC_MSG_NONE);
  tlc_decoder_fini(&d);
  tlc_buf_free(&buf);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The maximum frame
 * ------------------------------------------------------------------------------------------- */

START_TEST(a_frame_of_exactly_the_maximum_is_accepted) {
  /* A small maximum: a binary whose frame is exactly 100 bytes passes, 101 does not. */
  enum { SMALL = 100, BINARY_HEAD = 2 + 8 + 4 };
  tlc_msg exact = {.type = TLC_MSG_TASKSET_BINARY,
                   .u.binary = {1, filled('p', SMALL - BINARY_HEAD)}};
  tlc_buf buf;
  tlc_buf_init(&buf);
  ck_assert_int_eq(tlc_encode(&buf, &exact), TLC_OK);
  ck_assert_uint_eq(buf.len, 4 + SMALL);
  assert_decodes(buf.data, buf.len, SMALL, &exact, 1);
  buf.len = 0;
  tlc_msg over = {.type = TLC_MSG_TASKSET_BINARY,
                  .u.binary = {1, filled('p', SMALL - BINARY_HEAD + 1)}};
  ck_assert_int_eq(tlc_encode(&buf, &over), TLC_OK);
  assert_refused(buf.data, buf.len, SMALL, TLC_ETOOBIG);
  /* The refusal comes with the length prefix, before a byte of the frame. */
  tlc_decoder d;
  ck_assert_int_eq(tlc_decoder_init(&d, SMALL), TLC_OK);
  size_t used;
  tlc_msg m;
  ck_assert_int_eq(tlc_decoder_feed(&d, buf.data, 4, &used, &m), TLC_ETOOBIG);
  ck_assert_uint_eq(used, 4);
  tlc_decoder_fini(&d);

  /* TLC_FRAME_MAX itself, on both sides. */
  memset(big_payload, 0xab, sizeof big_payload);
  buf.len = 0;
  tlc_msg max = {.type = TLC_MSG_TASKSET_BINARY,
                 .u.binary = {2, bytes_view(big_payload, TLC_FRAME_MAX - BINARY_HEAD)}};
  ck_assert_int_eq(tlc_encode(&buf, &max), TLC_OK);
  ck_assert_uint_eq(buf.len, 4 + TLC_FRAME_MAX);
  size_t yielded;
  ck_assert_int_eq(decode_stream(buf.data, buf.len, TLC_FRAME_MAX, WHOLE, &max, 1, &yielded),
                   TLC_OK);
  ck_assert_uint_eq(yielded, 1);
  ck_assert_int_eq(
      decode_stream(buf.data, buf.len, TLC_FRAME_MAX, RANDOM_FIRST_SEED, &max, 1, &yielded),
      TLC_OK);
  ck_assert_uint_eq(yielded, 1);
  size_t before = buf.len;
  max.u.binary.payload.len++;
  ck_assert_int_eq(tlc_encode(&buf, &max), TLC_ETOOBIG);
  ck_assert_uint_eq(buf.len, before);
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_TASKSET_BINARY);
  raw_end(r);
  r->b[0] = (TLC_FRAME_MAX + 1) & 0xff; /* a prefix of TLC_FRAME_MAX + 1 */
  r->b[1] = ((TLC_FRAME_MAX + 1) >> 8) & 0xff;
  r->b[2] = ((TLC_FRAME_MAX + 1) >> 16) & 0xff;
  r->b[3] = 0;
  assert_refused(r->b, r->n, TLC_FRAME_MAX, TLC_ETOOBIG);
  tlc_buf_free(&buf);
}
END_TEST

/* The largest REGISTER fits TLC_REGISTER_FRAME_MAX exactly; a decoder limited to it refuses a
 * larger announced length with the prefix, and tlc_decoder_set_frame_max raises the limit for
 * the frames after REGISTER. */
START_TEST(the_register_frame_maximum_and_raising_it) {
  /* Every resource and address at its longest, the addresses spread over the resources. */
  static tlc_resource res[TLC_RESOURCES_MAX];
  static tlc_view addrs[TLC_REGISTER_ADDRESSES_MAX];
  for (size_t i = 0; i < TLC_REGISTER_ADDRESSES_MAX; i++)
    addrs[i] = filled('a', TLC_ADDRESS_MAX);
  for (size_t i = 0; i < TLC_RESOURCES_MAX; i++)
    res[i] = (tlc_resource){filled('n', TLC_RESOURCE_NAME_MAX),
                            TLC_REGISTER_ADDRESSES_MAX / TLC_RESOURCES_MAX,
                            addrs + i * (TLC_REGISTER_ADDRESSES_MAX / TLC_RESOURCES_MAX)};
  tlc_msg reg = {.type = TLC_MSG_REGISTER,
                 .u.reg = {filled('i', TLC_ID_MAX), filled('h', TLC_HOST_MAX), TLC_CORES_MAX,
                           filled('t', TLC_TOKEN_MAX), UINT32_MAX, TLC_RESOURCES_MAX, res}};
  tlc_buf buf;
  tlc_buf_init(&buf);
  ck_assert_int_eq(tlc_encode(&buf, &reg), TLC_OK);
  ck_assert_uint_eq(buf.len, 4 + TLC_REGISTER_FRAME_MAX);
  assert_decodes(buf.data, buf.len, TLC_REGISTER_FRAME_MAX, &reg, 1);
  /* A STATUS a byte over the maximum: refused with its prefix, before a byte of its body. */
  tlc_decoder d;
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_REGISTER_FRAME_MAX), TLC_OK);
  size_t used;
  tlc_msg m;
  uint8_t prefix[4] = {(TLC_REGISTER_FRAME_MAX + 1) & 0xff,
                       ((TLC_REGISTER_FRAME_MAX + 1) >> 8) & 0xff,
                       (TLC_REGISTER_FRAME_MAX + 1) >> 16, 0};
  ck_assert_int_eq(tlc_decoder_feed(&d, prefix, 4, &used, &m), TLC_ETOOBIG);
  ck_assert_uint_eq(used, 4);
  tlc_decoder_fini(&d);
  /* REGISTER under the small maximum, then the maximum raised: a 1 MiB binary passes. */
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_REGISTER_FRAME_MAX), TLC_OK);
  ck_assert_int_eq(tlc_decoder_feed(&d, buf.data, buf.len, &used, &m), TLC_OK);
  ck_assert_int_eq(m.type, TLC_MSG_REGISTER);
  ck_assert_int_eq(tlc_decoder_set_frame_max(&d, 1), TLC_EINVAL);
  ck_assert_int_eq(tlc_decoder_set_frame_max(&d, TLC_FRAME_MAX + 1), TLC_EINVAL);
  ck_assert_int_eq(tlc_decoder_set_frame_max(NULL, TLC_FRAME_MAX), TLC_EINVAL);
  ck_assert_int_eq(tlc_decoder_set_frame_max(&d, TLC_FRAME_MAX), TLC_OK);
  enum { BINARY_HEAD = 2 + 8 + 4 };
  memset(big_payload, 0x5a, sizeof big_payload);
  tlc_msg bin = {.type = TLC_MSG_TASKSET_BINARY,
                 .u.binary = {7, bytes_view(big_payload, TLC_FRAME_MAX - BINARY_HEAD)}};
  buf.len = 0;
  ck_assert_int_eq(tlc_encode(&buf, &bin), TLC_OK);
  ck_assert_int_eq(tlc_decoder_feed(&d, buf.data, buf.len, &used, &m), TLC_OK);
  ck_assert_uint_eq(used, buf.len);
  ck_assert(msg_equal(&m, &bin));
  tlc_decoder_fini(&d);
  tlc_buf_free(&buf);
}
END_TEST

/* A peer that announces the largest frame and sends a few bytes of it makes the decoder hold
 * about what it sent, not what it announced; as the bytes come the buffer grows, never past the
 * frame's length. */
START_TEST(the_frame_buffer_follows_the_bytes_received) {
  tlc_decoder d;
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_FRAME_MAX), TLC_OK);
  uint8_t head[4 + 2 + 8 + 4] = {
      0, 0, 0x10, 0, TLC_PROTO_VERSION, TLC_MSG_TASKSET_BINARY}; /* 1 MiB announced */
  uint32_t payload = TLC_FRAME_MAX - (2 + 8 + 4);
  for (int i = 0; i < 4; i++)
    head[4 + 2 + 8 + i] = (uint8_t)(payload >> (8 * i));
  size_t used;
  tlc_msg m;
  ck_assert_int_eq(tlc_decoder_feed(&d, head, sizeof head, &used, &m), TLC_OK);
  ck_assert_int_eq(m.type, TLC_MSG_NONE);
  ck_assert_uint_le(d.frame_cap, 1024);
  memset(big_payload, 0x11, sizeof big_payload);
  size_t sent = 0, chunk = 4096;
  while (sent + chunk < payload) {
    ck_assert_int_eq(tlc_decoder_feed(&d, big_payload, chunk, &used, &m), TLC_OK);
    ck_assert_int_eq(m.type, TLC_MSG_NONE);
    sent += chunk;
    ck_assert_uint_le(d.frame_cap, 2 * (2 + 8 + 4 + sent) + 1024);
    ck_assert_uint_le(d.frame_cap, TLC_FRAME_MAX);
  }
  ck_assert_int_eq(tlc_decoder_feed(&d, big_payload, payload - sent, &used, &m), TLC_OK);
  ck_assert_int_eq(m.type, TLC_MSG_TASKSET_BINARY);
  ck_assert_uint_eq(m.u.binary.payload.len, payload);
  ck_assert_uint_eq(d.frame_cap, TLC_FRAME_MAX);
  tlc_decoder_fini(&d);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Malformed frames
 * ------------------------------------------------------------------------------------------- */

START_TEST(malformed_frame_heads_are_refused) {
  raw *r;
  r = raw_begin(TLC_PROTO_VERSION, 0);
  r->n = 4; /* a length of 0: not even a version */
  assert_raw_refused(r, TLC_ESHORT);
  r = raw_begin(TLC_PROTO_VERSION, 0);
  r->n = 5; /* a version and no type */
  assert_raw_refused(r, TLC_ESHORT);
  r = raw_begin(0xff, 0xff);
  raw_end(r);
  r->b[3] = 0x80; /* a length with its top bit set */
  assert_refused(r->b, r->n, TLC_FRAME_MAX, TLC_ETOOBIG);
  assert_raw_refused(raw_begin(0, TLC_MSG_STOP), TLC_EVERSION);
  /* Version 1, the protocol before RECONCILE v2 and EPOCH, and version 2, before resources, are
   * refused as any other. */
  ck_assert_int_eq(TLC_PROTO_VERSION, 3);
  assert_raw_refused(raw_begin(1, TLC_MSG_STOP), TLC_EVERSION);
  assert_raw_refused(raw_begin(1, TLC_MSG_RECONCILE), TLC_EVERSION);
  assert_raw_refused(raw_begin(2, TLC_MSG_REGISTER), TLC_EVERSION);
  assert_raw_refused(raw_begin(2, TLC_MSG_LAUNCH), TLC_EVERSION);
  assert_raw_refused(raw_begin(4, TLC_MSG_STOP), TLC_EVERSION);
  assert_raw_refused(raw_begin(TLC_PROTO_VERSION, 0), TLC_ETYPE);
  assert_raw_refused(raw_begin(TLC_PROTO_VERSION, 12), TLC_ETYPE);
  assert_raw_refused(raw_begin(TLC_PROTO_VERSION, 0xff), TLC_ETYPE);

  /* The version and the type are judged as soon as they arrive: a peer announcing a 1 MiB frame
   * of garbage is refused after 5 or 6 bytes. */
  uint8_t head[] = {0, 0, 0x10, 0, TLC_PROTO_VERSION, 99};
  tlc_decoder d;
  size_t used;
  tlc_msg m;
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_FRAME_MAX), TLC_OK);
  ck_assert_int_eq(tlc_decoder_feed(&d, head, 5, &used, &m), TLC_OK);
  ck_assert_int_eq(tlc_decoder_feed(&d, head + 5, 1, &used, &m), TLC_ETYPE);
  tlc_decoder_fini(&d);
  head[4] = 7;
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_FRAME_MAX), TLC_OK);
  ck_assert_int_eq(tlc_decoder_feed(&d, head, 5, &used, &m), TLC_EVERSION);
  ck_assert_uint_eq(used, 5);
  tlc_decoder_fini(&d);
}
END_TEST

START_TEST(short_and_trailing_bodies_are_refused) {
  raw *r;
  /* Each message with its body one byte short, and one byte long. */
  tlc_msg msgs[32];
  size_t n = sample_messages(msgs);
  for (size_t i = 0; i < n; i++) {
    tlc_buf buf;
    tlc_buf_init(&buf);
    ck_assert_int_eq(tlc_encode(&buf, &msgs[i]), TLC_OK);
    ck_assert_int_eq(tlc_encode(&buf, &msgs[i]), TLC_OK); /* room for one more byte */
    size_t len = buf.len / 2;
    uint32_t body = (uint32_t)(len - 4);
    buf.data[0] = (uint8_t)(body - 1);
    buf.data[1] = (uint8_t)((body - 1) >> 8);
    buf.data[2] = (uint8_t)((body - 1) >> 16);
    /* A RECONCILE's items and a KILL's tids are of one size: a byte short, the count is more
     * than the frame holds. */
    bool counted = (msgs[i].type == TLC_MSG_RECONCILE && msgs[i].u.reconcile.count > 0) ||
                   msgs[i].type == TLC_MSG_KILL;
    assert_refused(buf.data, len - 1, TLC_FRAME_MAX, counted ? TLC_ECOUNT : TLC_ETRUNCATED);
    buf.data[0] = (uint8_t)(body + 1);
    buf.data[1] = (uint8_t)((body + 1) >> 8);
    buf.data[2] = (uint8_t)((body + 1) >> 16);
    assert_refused(buf.data, len + 1, TLC_FRAME_MAX, TLC_ETRAILING);
    tlc_buf_free(&buf);
  }
  /* Empty bodies. */
  for (uint8_t type = TLC_MSG_REGISTER; type <= TLC_MSG_EPOCH; type++)
    assert_raw_refused(raw_begin(TLC_PROTO_VERSION, type), TLC_ETRUNCATED);
  /* A RECONCILE whose count is cut; one that announces more items than its frame holds (a
   * count of 2^32 - 1 in a 7-byte frame: refused before anything is allocated for it); one
   * whose last item is cut short of the count it announced; a more flag of 2; an item with a
   * flag bit no item defines. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_RECONCILE);
  raw_fill(r, 0, 4);
  assert_raw_refused(r, TLC_ETRUNCATED);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_RECONCILE);
  raw_u8(r, 0);
  raw_u32(r, UINT32_MAX);
  assert_raw_refused(r, TLC_ECOUNT);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_RECONCILE);
  raw_u8(r, 1);
  raw_u32(r, 2);
  raw_fill(r, 3, 2 * TLC_RECONCILE_ITEM_BYTES - 1);
  assert_raw_refused(r, TLC_ECOUNT);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_RECONCILE);
  raw_u8(r, 2);
  raw_u32(r, 0);
  assert_raw_refused(r, TLC_EFLAG);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_RECONCILE);
  raw_u8(r, 0);
  raw_u32(r, 1);
  raw_u64(r, 1);
  raw_u64(r, 2);
  raw_u32(r, 3);
  raw_u32(r, 4);
  raw_u8(r, TLC_RECONCILE_FLAGS + 1);
  assert_raw_refused(r, TLC_EFLAG);
  /* A KILL of no tid; one whose count is more than its frame holds. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_KILL);
  raw_u8(r, 1);
  raw_str(r, "");
  raw_u32(r, 0);
  assert_raw_refused(r, TLC_ECOUNT);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_KILL);
  raw_u8(r, 1);
  raw_str(r, "why");
  raw_u32(r, UINT32_MAX);
  raw_u64(r, 9);
  assert_raw_refused(r, TLC_ECOUNT);
  /* An EPOCH one byte short, and one byte long. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_EPOCH);
  raw_fill(r, 1, 7);
  assert_raw_refused(r, TLC_ETRUNCATED);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_EPOCH);
  raw_fill(r, 1, 9);
  assert_raw_refused(r, TLC_ETRAILING);
  /* A SYNCED one byte short. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_SYNCED);
  raw_fill(r, 1, 7);
  assert_raw_refused(r, TLC_ETRUNCATED);
  /* A FORGET one byte short of its task set id. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_FORGET);
  raw_fill(r, 1, 7);
  assert_raw_refused(r, TLC_ETRUNCATED);
  /* A string whose length runs past the frame. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_STOP);
  raw_u16(r, 10);
  raw_fill(r, 'x', 9);
  assert_raw_refused(r, TLC_ETRUNCATED);
  /* A batch whose second item is cut. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_LAUNCH);
  raw_u32(r, 2);
  for (int i = 0; i < 2; i++) {
    raw_u64(r, 1);
    raw_u64(r, 2);
    raw_u32(r, 3);
    raw_u32(r, 4);
    raw_u8(r, 0);
    raw_str(r, i == 0 ? "noop" : "sleep:5000000000");
    raw_u8(r, 0);
  }
  r->n -= 3;
  assert_raw_refused(r, TLC_ETRUNCATED);
}
END_TEST

/* A REGISTER frame with the given fields, as the encoder would write them if it agreed. */
static void assert_register_refused(size_t id_len, uint8_t id_byte, size_t host_len,
                                    uint8_t host_byte, uint32_t cores, size_t token_len, int err) {
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_REGISTER);
  raw_u16(r, (uint16_t)id_len);
  raw_fill(r, id_byte, id_len);
  raw_u16(r, (uint16_t)host_len);
  raw_fill(r, host_byte, host_len);
  raw_u32(r, cores);
  raw_u32(r, (uint32_t)token_len);
  raw_fill(r, 't', token_len);
  raw_u32(r, 0); /* profile */
  raw_u8(r, 0);  /* no resources */
  assert_raw_refused(r, err);
}

START_TEST(register_fields_out_of_bounds_are_refused) {
  assert_register_refused(0, 'i', 4, 'h', 1, 0, TLC_ELENGTH); /* empty id */
  assert_register_refused(TLC_ID_MAX + 1, 'i', 4, 'h', 1, 0, TLC_ELENGTH);
  assert_register_refused(4, 'i', 0, 'h', 1, 0, TLC_ELENGTH); /* empty host */
  assert_register_refused(4, 'i', TLC_HOST_MAX + 1, 'h', 1, 0, TLC_ELENGTH);
  assert_register_refused(4, 'i', 4, 'h', 1, TLC_TOKEN_MAX + 1, TLC_ELENGTH);
  assert_register_refused(4, 'i', 4, 'h', 0, 0, TLC_ECORES);
  assert_register_refused(4, 'i', 4, 'h', TLC_CORES_MAX + 1, 0, TLC_ECORES);
  assert_register_refused(4, 'i', 4, 'h', 0xffffffff, 0, TLC_ECORES);
  assert_register_refused(4, 0, 4, 'h', 1, 0, TLC_ENUL); /* "\0\0\0\0" */
  assert_register_refused(4, 'i', 4, 0, 1, 0, TLC_ENUL);
  /* A NUL inside an id: "a\0b" must not pass for "a". */
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_REGISTER);
  raw_u16(r, 3);
  raw_u8(r, 'a');
  raw_u8(r, 0);
  raw_u8(r, 'b');
  raw_str(r, "h");
  raw_u32(r, 1);
  raw_u32(r, 0);
  assert_raw_refused(r, TLC_ENUL);
  /* A length over its bound is named as such even when the frame ends before it. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_REGISTER);
  raw_u16(r, 0xffff);
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_REGISTER);
  raw_str(r, "i");
  raw_str(r, "h");
  raw_u32(r, 1);
  raw_u32(r, 0xffffffff);
  assert_raw_refused(r, TLC_ELENGTH);
}
END_TEST

/* A LAUNCH frame of one item with the given kind. */
static void assert_launch_refused(uint8_t flags, size_t kind_len, uint8_t kind_byte, int err) {
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_LAUNCH);
  raw_u32(r, 1);
  raw_u64(r, 1);
  raw_u64(r, 1);
  raw_u32(r, 0);
  raw_u32(r, 0);
  raw_u8(r, flags);
  raw_u16(r, (uint16_t)kind_len);
  raw_fill(r, kind_byte, kind_len);
  raw_u8(r, 0); /* no grants */
  assert_raw_refused(r, err);
}

/* A STATUS frame of one update with the given fields. */
static void assert_status_refused(uint8_t state, size_t result_len, size_t text_len,
                                  uint8_t text_byte, int err) {
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_STATUS);
  raw_u32(r, 1);
  raw_u64(r, 1);
  raw_u8(r, state);
  raw_u32(r, (uint32_t)result_len);
  raw_fill(r, 'r', result_len);
  raw_u16(r, (uint16_t)text_len);
  raw_fill(r, text_byte, text_len);
  assert_raw_refused(r, err);
}

START_TEST(batch_fields_out_of_bounds_are_refused) {
  assert_launch_refused(0, 0, 'k', TLC_ELENGTH);
  assert_launch_refused(0, TLC_KIND_MAX + 1, 'k', TLC_ELENGTH);
  assert_launch_refused(0, 3, 0, TLC_ENUL);
  assert_launch_refused(2, 4, 'k', TLC_EFLAG); /* a flag bit LAUNCH does not define */
  assert_launch_refused(0x81, 4, 'k', TLC_EFLAG);
  assert_status_refused(0, 0, 0, 'm', TLC_ESTATE);
  assert_status_refused(TLC_TASK_KILLED + 1, 0, 0, 'm', TLC_ESTATE);
  assert_status_refused(0xff, 0, 0, 'm', TLC_ESTATE);
  assert_status_refused(TLC_TASK_FINISHED, TLC_RESULT_MAX + 1, 0, 'm', TLC_ELENGTH);
  assert_status_refused(TLC_TASK_FAILED, 0, TLC_TEXT_MAX + 1, 'm', TLC_ELENGTH);
  assert_status_refused(TLC_TASK_FAILED, 0, 2, 0, TLC_ENUL);

  /* Counts: zero, more than the frame could hold, and the largest a u32 says. */
  raw *r;
  for (uint8_t type = TLC_MSG_LAUNCH; type <= TLC_MSG_STATUS; type++) {
    r = raw_begin(TLC_PROTO_VERSION, type);
    raw_u32(r, 0);
    assert_raw_refused(r, TLC_ECOUNT);
    r = raw_begin(TLC_PROTO_VERSION, type);
    raw_u32(r, 0xffffffff);
    raw_fill(r, 0, 64);
    assert_raw_refused(r, TLC_ECOUNT);
  }
  /* Two launches need at least 56 bytes: 55 are refused before anything is parsed. */
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_LAUNCH);
  raw_u32(r, 2);
  raw_fill(r, 0, 55);
  assert_raw_refused(r, TLC_ECOUNT);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_STATUS);
  raw_u32(r, 3);
  raw_fill(r, 0, 3 * 15 - 1);
  assert_raw_refused(r, TLC_ECOUNT);
}
END_TEST

START_TEST(kill_and_stop_fields_out_of_bounds_are_refused) {
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_KILL);
  raw_u8(r, 2);
  raw_str(r, "");
  raw_u32(r, 1);
  raw_u64(r, 1);
  assert_raw_refused(r, TLC_EFLAG);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_KILL);
  raw_u8(r, 1);
  raw_u16(r, TLC_TEXT_MAX + 1);
  raw_fill(r, 'x', TLC_TEXT_MAX + 1);
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_STOP);
  raw_u16(r, TLC_TEXT_MAX + 1);
  raw_fill(r, 'x', TLC_TEXT_MAX + 1);
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_STOP);
  raw_u16(r, 1);
  raw_u8(r, 0);
  assert_raw_refused(r, TLC_ENUL);
}
END_TEST

START_TEST(an_error_after_good_frames_keeps_them) {
  /* Two good frames, then garbage: both are yielded, then the stream ends with the error. */
  tlc_msg msgs[2] = {{.type = TLC_MSG_HEARTBEAT, .u.heartbeat = {1, 0}},
                     {.type = TLC_MSG_STOP, .u.stop = {tlc_str("bye")}}};
  tlc_buf buf;
  tlc_buf_init(&buf);
  ck_assert_int_eq(tlc_encode(&buf, &msgs[0]), TLC_OK);
  ck_assert_int_eq(tlc_encode(&buf, &msgs[1]), TLC_OK);
  size_t good = buf.len;
  ck_assert_int_eq(tlc_encode(&buf, &msgs[0]), TLC_OK);
  buf.data[good + 4] = 1; /* its version: the protocol before this one */
  for (unsigned split = WHOLE; split < RANDOM_FIRST_SEED + RANDOM_SEEDS; split++) {
    size_t yielded;
    ck_assert_int_eq(decode_stream(buf.data, buf.len, TLC_FRAME_MAX, split, msgs, 2, &yielded),
                     TLC_EVERSION);
    ck_assert_uint_eq(yielded, 2);
  }
  tlc_buf_free(&buf);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * The encoder's refusals, and the API's arguments
 * ------------------------------------------------------------------------------------------- */

static void assert_encode_refused(const tlc_msg *msg, int err) {
  tlc_buf buf;
  tlc_buf_init(&buf);
  tlc_msg hb = {.type = TLC_MSG_HEARTBEAT, .u.heartbeat = {3, 4}};
  ck_assert_int_eq(tlc_encode(&buf, &hb), TLC_OK);
  uint8_t before[64];
  size_t len = buf.len;
  memcpy(before, buf.data, len);
  int rc = tlc_encode(&buf, msg);
  ck_assert_msg(rc == err, "%s, expected %s", tlc_err_name(rc), tlc_err_name(err));
  ck_assert_uint_eq(buf.len, len); /* unchanged */
  ck_assert_int_eq(memcmp(buf.data, before, len), 0);
  tlc_buf_free(&buf);
}

START_TEST(the_encoder_refuses_what_the_decoder_would) {
  tlc_view id = tlc_str("e"), host = tlc_str("h");
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER, .u.reg = {{NULL, 0}, host, 1, {NULL, 0}, 0, 0, NULL}},
      TLC_ELENGTH);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER,
                 .u.reg = {filled('i', TLC_ID_MAX + 1), host, 1, {NULL, 0}, 0, 0, NULL}},
      TLC_ELENGTH);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER, .u.reg = {id, {NULL, 0}, 1, {NULL, 0}, 0, 0, NULL}},
      TLC_ELENGTH);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER,
                 .u.reg = {id, filled('h', TLC_HOST_MAX + 1), 1, {NULL, 0}, 0, 0, NULL}},
      TLC_ELENGTH);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER,
                 .u.reg = {id, host, 1, filled('t', TLC_TOKEN_MAX + 1), 0, 0, NULL}},
      TLC_ELENGTH);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER, .u.reg = {id, host, 0, {NULL, 0}, 0, 0, NULL}},
      TLC_ECORES);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_REGISTER,
                                   .u.reg = {id, host, TLC_CORES_MAX + 1, {NULL, 0}, 0, 0, NULL}},
                        TLC_ECORES);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER,
                 .u.reg = {bytes_view("a\0b", 3), host, 1, {NULL, 0}, 0, 0, NULL}},
      TLC_ENUL);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_REGISTER, .u.reg = {{NULL, 3}, host, 1, {NULL, 0}, 0, 0, NULL}},
      TLC_EINVAL);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_TASKSET_BINARY,
                                   .u.binary = {1, bytes_view(big_payload, TLC_FRAME_MAX)}},
                        TLC_ETOOBIG);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_TASKSET_BINARY, .u.binary = {1, {NULL, 1}}},
                        TLC_EINVAL);

  tlc_launch_item li = {1, 1, 0, 0, 2, tlc_str("noop"), 0, NULL};
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {1, &li}}, TLC_EFLAG);
  li.flags = TLC_LAUNCH_SPECULATIVE;
  li.kind = (tlc_view){NULL, 0};
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {0, launch_items}},
                        TLC_ECOUNT);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {1, NULL}}, TLC_EINVAL);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {1, &li}}, TLC_ELENGTH);
  li.kind = filled('k', TLC_KIND_MAX + 1);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {1, &li}}, TLC_ELENGTH);
  li.kind = bytes_view("no\0p", 4);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {1, &li}}, TLC_ENUL);
  /* A batch too big for one frame: the sender splits it. */
  static tlc_launch_item many[TLC_FRAME_MAX / 27];
  for (size_t i = 0; i < sizeof many / sizeof many[0]; i++)
    many[i] = launch_items[0];
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_LAUNCH, .u.launch = {sizeof many / sizeof many[0], many}},
      TLC_ETOOBIG);

  tlc_status_item si = {1, 0, {NULL, 0}, {NULL, 0}};
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STATUS, .u.status = {0, status_items}},
                        TLC_ECOUNT);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STATUS, .u.status = {1, NULL}}, TLC_EINVAL);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STATUS, .u.status = {1, &si}}, TLC_ESTATE);
  si.state = TLC_TASK_KILLED + 1;
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STATUS, .u.status = {1, &si}}, TLC_ESTATE);
  si.state = TLC_TASK_FINISHED;
  si.result = filled('r', TLC_RESULT_MAX + 1);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STATUS, .u.status = {1, &si}}, TLC_ELENGTH);
  si.result = (tlc_view){NULL, 0};
  si.text = filled('m', TLC_TEXT_MAX + 1);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STATUS, .u.status = {1, &si}}, TLC_ELENGTH);
  si.text = bytes_view("\0", 1);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STATUS, .u.status = {1, &si}}, TLC_ENUL);

  static const uint64_t one_tid = 1;
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_KILL, .u.kill = {2, {NULL, 0}, 1, &one_tid}},
                        TLC_EFLAG);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_KILL, .u.kill = {0, filled('x', TLC_TEXT_MAX + 1), 1, &one_tid}},
      TLC_ELENGTH);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_KILL, .u.kill = {0, {NULL, 0}, 0, &one_tid}},
                        TLC_ECOUNT);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_KILL, .u.kill = {0, {NULL, 0}, 1, NULL}},
                        TLC_EINVAL);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STOP, .u.stop = {filled('x', TLC_TEXT_MAX + 1)}},
                        TLC_ELENGTH);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_STOP, .u.stop = {bytes_view("a\0", 2)}},
                        TLC_ENUL);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_NONE}, TLC_ETYPE);
  assert_encode_refused(&(tlc_msg){.type = (tlc_msg_type)12}, TLC_ETYPE);
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_RECONCILE, .u.reconcile = {0, 1, NULL}},
                        TLC_EINVAL);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_RECONCILE,
                 .u.reconcile = {0, TLC_RECONCILE_FRAME_ITEMS + 1, reconcile_items}},
      TLC_ETOOBIG);
  assert_encode_refused(
      &(tlc_msg){.type = TLC_MSG_RECONCILE, .u.reconcile = {2, 1, reconcile_items}}, TLC_EFLAG);
  tlc_reconcile_item bad = reconcile_items[0];
  bad.flags = 4;
  assert_encode_refused(&(tlc_msg){.type = TLC_MSG_RECONCILE, .u.reconcile = {0, 1, &bad}},
                        TLC_EFLAG);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Resources: REGISTER's declarations and LAUNCH's grants
 * ------------------------------------------------------------------------------------------- */

/* A REGISTER frame up to its resource count, every field good. */
static raw *raw_register(uint8_t nresources) {
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_REGISTER);
  raw_str(r, "exec-1");
  raw_str(r, "host-1");
  raw_u32(r, 4);
  raw_u32(r, 0); /* token */
  raw_u32(r, 1); /* profile */
  raw_u8(r, nresources);
  return r;
}

/* One resource of n addresses, each the string addr. */
static void raw_resource(raw *r, const char *name, uint16_t n, const char *addr) {
  raw_str(r, name);
  raw_u16(r, n);
  for (uint16_t i = 0; i < n; i++)
    raw_str(r, addr);
}

/* A LAUNCH of one item, up to its grant count. */
static raw *raw_launch(uint8_t ngrants) {
  raw *r = raw_begin(TLC_PROTO_VERSION, TLC_MSG_LAUNCH);
  raw_u32(r, 1);
  raw_u64(r, 1);
  raw_u64(r, 1);
  raw_u32(r, 0);
  raw_u32(r, 0);
  raw_u8(r, 0);
  raw_str(r, "noop");
  raw_u8(r, ngrants);
  return r;
}

static void raw_grant(raw *r, const char *name, const char *addr, uint8_t share) {
  raw_str(r, name);
  raw_str(r, addr);
  raw_u8(r, share);
}

START_TEST(resource_fields_out_of_bounds_are_refused) {
  /* A REGISTER's resources: count, name, addresses, each at and past its bound. */
  raw *r = raw_register(TLC_RESOURCES_MAX + 1);
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_register(0xff);
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_register(1);
  raw_resource(r, "", 1, "0");
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_register(1);
  raw_u16(r, TLC_RESOURCE_NAME_MAX + 1);
  raw_fill(r, 'n', TLC_RESOURCE_NAME_MAX + 1);
  raw_u16(r, 1);
  raw_str(r, "0");
  assert_raw_refused(r, TLC_ELENGTH);
  const char *bad_names[] = {"g/pu", "gpu ", "g,pu", "gp\x7f", "g\xc3\xa9"};
  for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
    r = raw_register(1);
    raw_resource(r, bad_names[i], 1, "0");
    assert_raw_refused(r, TLC_ERESOURCE);
  }
  r = raw_register(1);
  raw_resource(r, "gpu", 0, "0");
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_register(1);
  raw_resource(r, "gpu", TLC_RESOURCE_ADDRESSES_MAX + 1, "0");
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_register(1);
  raw_resource(r, "gpu", 0xffff, "0"); /* over the bound before the frame's end */
  assert_raw_refused(r, TLC_ERESOURCE);
  /* Two resources of 1,000 and 25 addresses: 1,025 in all. */
  r = raw_register(2);
  raw_resource(r, "gpu", 1000, "0");
  raw_resource(r, "fpga", 25, "0");
  assert_raw_refused(r, TLC_ERESOURCE);
  /* 1,000 addresses announced, 3 sent: the frame ends first. */
  r = raw_register(1);
  raw_resource(r, "gpu", 3, "0");
  r->b[r->n - 3 * 3 - 2] = 1000 & 0xff;
  r->b[r->n - 3 * 3 - 1] = 1000 >> 8;
  assert_raw_refused(r, TLC_ETRUNCATED);
  const char *bad_addresses[] = {"0,1", "0 1", "\"0", "0\\", "\x7f", "\x01", "\xff"};
  for (size_t i = 0; i < sizeof bad_addresses / sizeof *bad_addresses; i++) {
    r = raw_register(1);
    raw_resource(r, "gpu", 1, bad_addresses[i]);
    assert_raw_refused(r, TLC_ERESOURCE);
  }
  r = raw_register(1);
  raw_resource(r, "gpu", 1, "");
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_register(1);
  raw_str(r, "gpu");
  raw_u16(r, 1);
  raw_u16(r, TLC_ADDRESS_MAX + 1);
  raw_fill(r, 'a', TLC_ADDRESS_MAX + 1);
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_register(1);
  raw_str(r, "gpu");
  raw_u16(r, 1);
  raw_u16(r, 2);
  raw_u8(r, '0');
  raw_u8(r, 0);
  assert_raw_refused(r, TLC_ENUL);
  /* A REGISTER cut before its profile, and one with a byte after its resources. */
  r = raw_register(0);
  r->n -= 3;
  assert_raw_refused(r, TLC_ETRUNCATED);
  r = raw_register(1);
  raw_resource(r, "gpu", 2, "0");
  raw_u8(r, 0);
  assert_raw_refused(r, TLC_ETRAILING);
  /* The bounds themselves pass: 16 resources, 1,024 addresses in all, the printable extremes. */
  r = raw_register(TLC_RESOURCES_MAX);
  for (int i = 0; i < TLC_RESOURCES_MAX; i++)
    raw_resource(r, i == 0 ? "azAZ09_.-" : "gpu", TLC_REGISTER_ADDRESSES_MAX / TLC_RESOURCES_MAX,
                 "!~#'[");
  raw_end(r);
  tlc_decoder d;
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_REGISTER_FRAME_MAX), TLC_OK);
  size_t used;
  tlc_msg m;
  ck_assert_int_eq(tlc_decoder_feed(&d, r->b, r->n, &used, &m), TLC_OK);
  ck_assert_int_eq(m.type, TLC_MSG_REGISTER);
  ck_assert_uint_eq(m.u.reg.profile, 1);
  ck_assert_uint_eq(m.u.reg.nresources, TLC_RESOURCES_MAX);
  ck_assert_uint_eq(m.u.reg.resources[15].naddresses, 64);
  ck_assert(view_equal(m.u.reg.resources[15].addresses[63], tlc_str("!~#'[")));
  tlc_decoder_fini(&d);

  /* A LAUNCH's grants: count, name, address, share. */
  r = raw_launch(TLC_GRANTS_MAX + 1);
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_launch(1);
  raw_grant(r, "gpu", "0", 0);
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_launch(1);
  raw_grant(r, "gpu", "0", TLC_SHARE_MAX + 1);
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_launch(1);
  raw_grant(r, "g:pu", "0", 1);
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_launch(1);
  raw_grant(r, "gpu", "0,1", 1);
  assert_raw_refused(r, TLC_ERESOURCE);
  r = raw_launch(1);
  raw_grant(r, "", "0", 1);
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_launch(1);
  raw_grant(r, "gpu", "", 1);
  assert_raw_refused(r, TLC_ELENGTH);
  r = raw_launch(TLC_GRANTS_MAX); /* 16 announced, 2 sent */
  raw_grant(r, "gpu", "0", 1);
  raw_grant(r, "gpu", "1", 1);
  assert_raw_refused(r, TLC_ETRUNCATED);
  r = raw_launch(2);
  raw_grant(r, "gpu", "0", 1);
  raw_grant(r, "gpu", "1", TLC_SHARE_MAX);
  raw_end(r);
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_FRAME_MAX), TLC_OK);
  ck_assert_int_eq(tlc_decoder_feed(&d, r->b, r->n, &used, &m), TLC_OK);
  ck_assert_int_eq(m.type, TLC_MSG_LAUNCH);
  ck_assert_uint_eq(m.u.launch.items[0].ngrants, 2);
  ck_assert_uint_eq(m.u.launch.items[0].grants[1].share, TLC_SHARE_MAX);
  ck_assert(view_equal(m.u.launch.items[0].grants[1].address, tlc_str("1")));
  tlc_decoder_fini(&d);

  /* The encoder refuses the same. */
  tlc_view one = tlc_str("0");
  tlc_resource res = {tlc_str("gpu"), 1, &one};
  tlc_msg reg = {.type = TLC_MSG_REGISTER,
                 .u.reg = {.executor_id = tlc_str("e"),
                           .host = tlc_str("h"),
                           .cores = 1,
                           .nresources = 1,
                           .resources = &res}};
  reg.u.reg.nresources = TLC_RESOURCES_MAX + 1;
  assert_encode_refused(&reg, TLC_ERESOURCE);
  reg.u.reg.nresources = 1;
  reg.u.reg.resources = NULL;
  assert_encode_refused(&reg, TLC_EINVAL);
  reg.u.reg.resources = &res;
  res.name = tlc_str("g pu");
  assert_encode_refused(&reg, TLC_ERESOURCE);
  res.name = filled('n', TLC_RESOURCE_NAME_MAX + 1);
  assert_encode_refused(&reg, TLC_ELENGTH);
  res.name = tlc_str("gpu");
  res.naddresses = 0;
  assert_encode_refused(&reg, TLC_ERESOURCE);
  res.naddresses = TLC_RESOURCE_ADDRESSES_MAX + 1;
  assert_encode_refused(&reg, TLC_ERESOURCE);
  res.naddresses = 1;
  one = tlc_str("0,1");
  assert_encode_refused(&reg, TLC_ERESOURCE);
  one = filled('a', TLC_ADDRESS_MAX + 1);
  assert_encode_refused(&reg, TLC_ELENGTH);
  tlc_grant g = {tlc_str("gpu"), tlc_str("0"), 0};
  tlc_launch_item li = {1, 1, 0, 0, 0, tlc_str("noop"), 1, &g};
  tlc_msg launch = {.type = TLC_MSG_LAUNCH, .u.launch = {1, &li}};
  assert_encode_refused(&launch, TLC_ERESOURCE);
  g.share = TLC_SHARE_MAX + 1;
  assert_encode_refused(&launch, TLC_ERESOURCE);
  g.share = 1;
  g.address = tlc_str("a\"b");
  assert_encode_refused(&launch, TLC_ERESOURCE);
  g.address = tlc_str("0");
  li.ngrants = TLC_GRANTS_MAX + 1;
  assert_encode_refused(&launch, TLC_ERESOURCE);
  li.ngrants = 1;
  li.grants = NULL;
  assert_encode_refused(&launch, TLC_EINVAL);
}
END_TEST

START_TEST(arguments_and_names) {
  tlc_decoder d;
  ck_assert_int_eq(tlc_decoder_init(&d, 1), TLC_EINVAL);
  ck_assert_int_eq(tlc_decoder_init(&d, TLC_FRAME_MAX + 1), TLC_EINVAL);
  ck_assert_int_eq(tlc_decoder_init(NULL, 64), TLC_EINVAL);
  ck_assert_int_eq(tlc_decoder_init(&d, 2), TLC_OK);
  size_t used;
  tlc_msg m;
  ck_assert_int_eq(tlc_decoder_feed(&d, NULL, 1, &used, &m), TLC_EINVAL);
  ck_assert_int_eq(tlc_decoder_feed(&d, (const uint8_t *)"", 0, NULL, &m), TLC_EINVAL);
  tlc_decoder_fini(&d);
  ck_assert_int_eq(tlc_encode(NULL, &m), TLC_EINVAL);

  ck_assert_str_eq(tlc_err_name(TLC_OK), "OK");
  ck_assert_str_eq(tlc_err_name(TLC_ETOOBIG), "ETOOBIG");
  ck_assert_str_eq(tlc_err_name(TLC_EFLAG), "EFLAG");
  ck_assert_str_eq(tlc_err_name(-99), "UNKNOWN");
  ck_assert_str_eq(tlc_err_name(TLC_ERESOURCE), "ERESOURCE");
  for (int err = TLC_EINVAL; err >= TLC_ERESOURCE; err--) {
    ck_assert_str_ne(tlc_err_name(err), "UNKNOWN");
    ck_assert_str_ne(tlc_strerror(err), "Unknown error.");
  }
  ck_assert_str_eq(tlc_strerror(1), "Unknown error.");
  ck_assert_str_eq(tlc_msg_type_name(TLC_MSG_NONE), "NONE");
  ck_assert_str_eq(tlc_msg_type_name(TLC_MSG_TASKSET_BINARY), "TASKSET_BINARY");
  ck_assert_str_eq(tlc_msg_type_name(TLC_MSG_STOP), "STOP");
  ck_assert_str_eq(tlc_msg_type_name(TLC_MSG_FORGET), "FORGET");
  ck_assert_str_eq(tlc_msg_type_name(TLC_MSG_RECONCILE), "RECONCILE");
  ck_assert_str_eq(tlc_msg_type_name(TLC_MSG_SYNCED), "SYNCED");
  ck_assert_str_eq(tlc_msg_type_name(TLC_MSG_EPOCH), "EPOCH");
  ck_assert_str_eq(tlc_msg_type_name(12), "UNKNOWN");
  ck_assert_uint_eq(tlc_str(NULL).len, 0);
}
END_TEST

static Suite *proto_suite(void) {
  Suite *s = suite_create("cluster-proto");
  TCase *tc = tcase_create("codec");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, every_message_round_trips_in_any_split);
  tcase_add_test(tc, big_batches_and_bounds_round_trip);
  tcase_add_test(tc, frames_back_to_back_decode_in_order);
  tcase_add_test(tc, the_decoder_stops_at_the_end_of_a_frame);
  tcase_add_test(tc, a_frame_of_exactly_the_maximum_is_accepted);
  tcase_add_test(tc, the_register_frame_maximum_and_raising_it);
  tcase_add_test(tc, the_frame_buffer_follows_the_bytes_received);
  tcase_add_test(tc, malformed_frame_heads_are_refused);
  tcase_add_test(tc, short_and_trailing_bodies_are_refused);
  tcase_add_test(tc, register_fields_out_of_bounds_are_refused);
  tcase_add_test(tc, batch_fields_out_of_bounds_are_refused);
  tcase_add_test(tc, kill_and_stop_fields_out_of_bounds_are_refused);
  tcase_add_test(tc, an_error_after_good_frames_keeps_them);
  tcase_add_test(tc, the_encoder_refuses_what_the_decoder_would);
  tcase_add_test(tc, resource_fields_out_of_bounds_are_refused);
  tcase_add_test(tc, arguments_and_names);
  suite_add_tcase(s, tc);
  return s;
}

/* Writes one fuzzing input: the harness's header byte (bits 0-3: split bytes, 4-5: maximum),
 * the split bytes, then the stream. */
static int write_input(const char *dir, const char *name, uint8_t header, const uint8_t *splits,
                       const tlc_buf *stream) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  fputc(header, f);
  fwrite(splits, 1, header & 0x0f, f);
  fwrite(stream->data, 1, stream->len, f);
  return fclose(f) == 0 ? 0 : -1;
}

/* The fuzzer's seed corpus (test/fuzz/proto-corpus): each sample message alone, fed
 * whole; all of them back to back, fed in small pieces; and, for a decoder of 64 bytes, a
 * heartbeat then a frame over that maximum. */
static int write_corpus(const char *dir) {
  tlc_msg msgs[32];
  size_t n = sample_messages(msgs);
  tlc_buf all, one;
  tlc_buf_init(&all);
  tlc_buf_init(&one);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    char name[64];
    snprintf(name, sizeof name, "%02zu-%s", i, tlc_msg_type_name(msgs[i].type));
    one.len = 0;
    if (tlc_encode(&one, &msgs[i]) != TLC_OK || tlc_encode(&all, &msgs[i]) != TLC_OK)
      rc = -1;
    else
      rc = write_input(dir, name, 0x00, NULL, &one);
  }
  static const uint8_t splits[] = {0, 6, 40};
  if (rc == 0)
    rc = write_input(dir, "all-in-pieces", 0x03, splits, &all);
  one.len = 0;
  if (rc == 0 && (tlc_encode(&one, &msgs[3]) != TLC_OK || tlc_encode(&one, &msgs[2]) != TLC_OK))
    rc = -1;
  if (rc == 0)
    rc = write_input(dir, "over-a-small-maximum", 0x20, NULL, &one);
  tlc_buf_free(&all);
  tlc_buf_free(&one);
  return rc;
}

/* tl-cluster-proto-tests runs the suite; tl-cluster-proto-tests --write-corpus DIR writes the
 * fuzzer's seed corpus there instead. */
int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-corpus") == 0)
    return write_corpus(argv[2]) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
  if (argc != 1) {
    fprintf(stderr, "usage: %s [--write-corpus DIR]\n", argv[0]);
    return 2;
  }
  SRunner *runner = srunner_create(proto_suite());
  srunner_run_all(runner, CK_ENV);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
