/* The operations' byte codec (tlo_encode_op, tlo_decode_op, tlo_op_describe): the fields each
 * kind encodes and what they mean; and the encoder of the program a run makes.
 */
#include "ops_internal.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------------
 * The codec.
 * ------------------------------------------------------------------------------------------- */

enum { F_EXEC, F_TID, F_STAGE, F_A, F_B, F_C, F_D, F_FLAGS, F_MSG, F_OFFERS, F_UPDATES, F_END };

/* The fields each kind encodes, in order; reent and re_arg follow every operation. What they
 * mean (each taken modulo its domain when the operation runs):
 *   ADD       exec: slot (and, without fresh, which old id to register again); a: host h0-h3;
 *             b: rack (0 the host's usual one, 1 r0, 2 r1, 3 none, 4 "" = invalid); c: cores
 *             {0 = invalid, 1, 2, 3, 4, 2, 4, 64}; flags bit 0: a fresh id "e<slot>.<next>".
 *   LOSE      exec; a: loss kind 0-6, 7 = invalid; flags bit 0: caused_by_app; c: exit code;
 *             msg.
 *   HEARTBEAT, DECOMMISSION (msg), INSPECT (a: task set, from the newest back, 15 = unknown;
 *             b: explain buffer {1, 8, 64, 4096}): exec.
 *   SUBMIT    stage; a: stage attempt (0 = the next fresh one, k = k - 1); b: priority 0-3;
 *             c: ntasks 0-12 (0 invalid); flags bits 0-1: cpus per task 0-2 (0 = the
 *             config's; 3 is 0), bit 2: shuffle_map, bit 3: barrier; d: pool (tlo_pool_names:
 *             0 NULL, 1 "default", 2-4 "a"-"c", 5 255 bytes, 6 "" and 7 256 bytes invalid).
 *   POOL_ADD  d: name (tlo_pool_names); a: bits 0-1 mode (0 FIFO, 1 FAIR, 2 invalid; 3 is 0),
 *             bits 2-7 parent modulo 9 (0: tl_pool_add; k: tl_pool_add_child in
 *             tlo_pool_names[k - 1], NULL for the top level); b: weight {0 = invalid, 1, 2, 5};
 *             c: min share {0, 1, 2, 4}.
 *   KILL_TASK tid; flags bit 0: interrupt; msg.  KILL_STAGE, CANCEL_STAGE: stage (6 = 99),
 *             flags, msg.  PARTITION: stage, a: index 0-13.
 *   OFFER     noffers, then exec and cores (0-4) of each; a: cap 0-16; flags bit 0: one more
 *             offer with an empty id (invalid).
 *   UPDATE    tid; flags bit 0: from exec rather than the tid's own executor; a: state (4 =
 *             invalid); b: failure kind 0-7 (0, 6, 7 invalid in an update); c: result (0 none,
 *             1 with result_free, 2 without, 3 of size 0); d: result_size (result_sizes: 0
 *             the mode's own, else 0, 1, 7, 13, 40, 1000, SIZE_MAX); msg.
 *   CLOCK     a: step (see clock_steps).  HEARTBEAT_ALL, OFFER_ALL, TICK: nothing.
 *   UPDATES   exec: the batch's executor; flags bit 0: results NULL, bit 1: tids (bit 2 clear)
 *             or updates (bit 2 set) NULL, bit 3: the executor id "" (both invalid with n > 0,
 *             the id always); nupd: n, modulo TLO_MAX_BATCH + 1; then three bytes per update:
 *             upd_tid (0-127 one of the executor's attempts in the tid index, 128-143 the tid
 *             of an earlier update of the batch, 144-159 a frozen attempt, 160-191 an attempt
 *             of another executor in the tid index, 192-255 as an attempt reference's 192-255:
 *             any launched, never launched), upd_how (bits 0-2: state modulo 5, 4 invalid;
 *             bits 3-5: failure kind as UPDATE's b; bits 6-7: msg), upd_res (bits 0-1: result
 *             as UPDATE's c; bits 2-4: result_size as UPDATE's d). Added after the others, so
 *             the bytes of every program written before it mean what they meant.
 *   SNAPSHOT  a failover (tlo_do_snapshot_restore): the clock brought up to the scheduler's
 *             time, tl_snapshot, tl_scheduler_free, tl_scheduler_restore. flags: refusals tried
 *             first (bit 0 a failing writer, bit 1 tl_snapshot's TL_EINVALs, bit 2 a failing
 *             reader, bit 3 the image cut at c/256 of its length, bit 4 another config, bit 5
 *             another version); a, b, c seed the payloads withheld (one task set in ten, in
 *             three restores of four), b the reader's chunk size.
 *   RECONCILE exec; the report (resolve_report): a % 4 which frozen attempts (all, none, each
 *             with even odds), b % 8 - 3 unknown tids, d bit 0 a duplicate, a, b, d seed the
 *             choices and the order; c: ucap, modulo the report's length + 3; flags bits 0-3:
 *             running NULL, unknown NULL, nunknown NULL, the id "", bit 4: a tid 0.
 *   SNAPSHOT and RECONCILE came after UPDATES (kinds 18, 19, the kind byte modulo 20): the
 *   programs written before, whose kind bytes are below 18, decode as they did. */
static const uint8_t tlo_fields[TLO_NKINDS][10] = {
    [TLO_ADD] = {F_EXEC, F_A, F_B, F_C, F_FLAGS, F_END},
    [TLO_LOSE] = {F_EXEC, F_A, F_FLAGS, F_C, F_MSG, F_END},
    [TLO_HEARTBEAT] = {F_EXEC, F_END},
    [TLO_HEARTBEAT_ALL] = {F_END},
    [TLO_DECOMMISSION] = {F_EXEC, F_MSG, F_END},
    [TLO_SUBMIT] = {F_STAGE, F_A, F_B, F_C, F_FLAGS, F_D, F_END},
    [TLO_KILL_TASK] = {F_TID, F_FLAGS, F_MSG, F_END},
    [TLO_KILL_STAGE] = {F_STAGE, F_FLAGS, F_MSG, F_END},
    [TLO_CANCEL_STAGE] = {F_STAGE, F_MSG, F_END},
    [TLO_PARTITION] = {F_STAGE, F_A, F_END},
    [TLO_OFFER] = {F_OFFERS, F_A, F_FLAGS, F_END},
    [TLO_OFFER_ALL] = {F_END},
    [TLO_UPDATE] = {F_TID, F_FLAGS, F_EXEC, F_A, F_B, F_C, F_MSG, F_D, F_END},
    [TLO_CLOCK] = {F_A, F_END},
    [TLO_TICK] = {F_END},
    [TLO_INSPECT] = {F_EXEC, F_A, F_B, F_END},
    [TLO_POOL_ADD] = {F_D, F_A, F_B, F_C, F_END},
    [TLO_UPDATES] = {F_EXEC, F_FLAGS, F_UPDATES, F_END},
    [TLO_SNAPSHOT] = {F_A, F_B, F_C, F_FLAGS, F_END},
    [TLO_RECONCILE] = {F_EXEC, F_A, F_B, F_C, F_D, F_FLAGS, F_END},
};

static uint8_t *field_of(tlo_op *op, int f) {
  switch (f) {
  case F_EXEC:
    return &op->exec;
  case F_TID:
    return &op->tid;
  case F_STAGE:
    return &op->stage;
  case F_A:
    return &op->a;
  case F_B:
    return &op->b;
  case F_C:
    return &op->c;
  case F_D:
    return &op->d;
  case F_FLAGS:
    return &op->flags;
  default:
    return &op->msg;
  }
}

size_t tlo_encode_op(const tlo_op *op, uint8_t *buf, size_t cap) {
  uint8_t tmp[64];
  size_t n = 0;
  tlo_op copy = *op;
  unsigned kind = op->kind % TLO_NKINDS;
  tmp[n++] = op->kind;
  for (const uint8_t *f = tlo_fields[kind]; *f != F_END; f++) {
    if (*f == F_OFFERS) {
      tmp[n++] = op->noffers;
      for (unsigned i = 0; i < op->noffers % (TLO_MAX_OFFERS + 1u); i++) {
        tmp[n++] = op->offer_exec[i];
        tmp[n++] = op->offer_cores[i];
      }
    } else if (*f == F_UPDATES) {
      tmp[n++] = op->nupd;
      for (unsigned i = 0; i < op->nupd % (TLO_MAX_BATCH + 1u); i++) {
        tmp[n++] = op->upd_tid[i];
        tmp[n++] = op->upd_how[i];
        tmp[n++] = op->upd_res[i];
      }
    } else {
      tmp[n++] = *field_of(&copy, *f);
    }
  }
  tmp[n++] = op->reent;
  tmp[n++] = op->re_arg;
  if (n <= cap)
    memcpy(buf, tmp, n);
  return n;
}

size_t tlo_decode_op(const uint8_t *data, size_t size, tlo_op *op) {
  size_t n = 0;
  memset(op, 0, sizeof *op);
  if (size < 1)
    return 0;
  op->kind = data[n++];
  unsigned kind = op->kind % TLO_NKINDS;
  for (const uint8_t *f = tlo_fields[kind]; *f != F_END; f++) {
    if (*f == F_OFFERS) {
      if (n >= size)
        return 0;
      op->noffers = data[n++];
      for (unsigned i = 0; i < op->noffers % (TLO_MAX_OFFERS + 1u); i++) {
        if (n + 2 > size)
          return 0;
        op->offer_exec[i] = data[n++];
        op->offer_cores[i] = data[n++];
      }
    } else if (*f == F_UPDATES) {
      if (n >= size)
        return 0;
      op->nupd = data[n++];
      for (unsigned i = 0; i < op->nupd % (TLO_MAX_BATCH + 1u); i++) {
        if (n + 3 > size)
          return 0;
        op->upd_tid[i] = data[n++];
        op->upd_how[i] = data[n++];
        op->upd_res[i] = data[n++];
      }
    } else {
      if (n >= size)
        return 0;
      *field_of(op, *f) = data[n++];
    }
  }
  if (n + 2 > size)
    return 0;
  op->reent = data[n++];
  op->re_arg = data[n++];
  return n;
}

void tlo_op_describe(const tlo_op *op, char *buf, size_t len) {
  static const char *const names[TLO_NKINDS] = {
      "add",     "lose",      "heartbeat",  "heartbeat_all", "decommission",
      "submit",  "kill_task", "kill_stage", "cancel_stage",  "partition",
      "offer",   "offer_all", "update",     "clock",         "tick",
      "inspect", "pool_add",  "updates",    "snapshot",      "reconcile"};
  char batch[24] = "";
  if (op->kind % TLO_NKINDS == TLO_UPDATES)
    snprintf(batch, sizeof batch, " updates=%u", op->nupd % (TLO_MAX_BATCH + 1u));
  snprintf(buf, len,
           "%s exec=%u tid=%u stage=%u a=%u b=%u c=%u d=%u flags=%u msg=%u offers=%u%s reent=%#x",
           names[op->kind % TLO_NKINDS], op->exec, op->tid, op->stage, op->a, op->b, op->c, op->d,
           op->flags, op->msg, op->noffers % (TLO_MAX_OFFERS + 1u), batch, op->reent);
}

void tlo_emit(tlo_run *r, const uint8_t *bytes, size_t n) {
  if (r->opt.encoded != NULL && r->enc_len + n <= r->opt.encoded_cap)
    memcpy(r->opt.encoded + r->enc_len, bytes, n);
  r->enc_len += n;
}
