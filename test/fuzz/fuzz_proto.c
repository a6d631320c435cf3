/* The libFuzzer harness of the cluster protocol's decoder (proto.h). An input is a header, then
 * the byte stream:
 *   byte 0: bits 0-3: how many split bytes follow (0: the stream is fed in one piece);
 *           bits 4-5: the decoder's frame maximum, TLC_FRAME_MAX, 16, 64 or 512;
 *   then that many split bytes: the stream is fed in pieces of (byte + 1) bytes, cycling.
 * The stream is decoded twice, in those pieces and in one, and both must yield the same number of
 * frames and end with the same error; every frame accepted must re-encode to exactly its bytes on
 * the stream; an error must be sticky. ASan, UBSan and LeakSanitizer watch the rest.
 */
#include "proto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what, int rc) {
  fprintf(stderr, "cluster proto fuzz: %s (%s)\n", what, tlc_err_name(rc));
  abort();
}

/* What one decoding of the stream ended with. */
typedef struct outcome {
  size_t frames; /* frames yielded */
  int error;     /* the error that ended it, or 0 */
} outcome;

/* Decodes stream[0..n) in pieces of splits[i % nsplits] + 1 bytes (one piece if nsplits is 0),
 * checking each frame against its bytes on the stream. */
static outcome decode(const uint8_t *stream, size_t n, size_t frame_max, const uint8_t *splits,
                      size_t nsplits, tlc_buf *reencoded) {
  outcome out = {0, TLC_OK};
  tlc_decoder d;
  if (tlc_decoder_init(&d, frame_max) != TLC_OK)
    fail("tlc_decoder_init refused a valid maximum", TLC_EINVAL);
  size_t pos = 0, frame_start = 0, piece_no = 0;
  while (pos < n && out.error == TLC_OK) {
    size_t piece = nsplits == 0 ? n - pos : (size_t)splits[piece_no++ % nsplits] + 1;
    if (piece > n - pos)
      piece = n - pos;
    size_t end = pos + piece;
    while (pos < end) {
      size_t used;
      tlc_msg msg;
      int rc = tlc_decoder_feed(&d, stream + pos, end - pos, &used, &msg);
      if (used > end - pos)
        fail("the decoder consumed more than it was given", rc);
      pos += used;
      if (rc != TLC_OK) {
        if (msg.type != TLC_MSG_NONE)
          fail("a message came with an error", rc);
        if (tlc_decoder_feed(&d, stream, n, &used, &msg) != rc || used != 0)
          fail("an error was not sticky", rc);
        out.error = rc;
        break;
      }
      if (msg.type == TLC_MSG_NONE) {
        if (pos != end)
          fail("no frame, yet bytes were left unconsumed", rc);
        continue;
      }
      out.frames++;
      reencoded->len = 0;
      rc = tlc_encode(reencoded, &msg);
      if (rc != TLC_OK)
        fail("an accepted frame does not re-encode", rc);
      if (reencoded->len != pos - frame_start ||
          memcmp(reencoded->data, stream + frame_start, reencoded->len) != 0)
        fail("an accepted frame re-encodes to other bytes", rc);
      frame_start = pos;
    }
  }
  tlc_decoder_fini(&d);
  return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const size_t maxima[4] = {TLC_FRAME_MAX, 16, 64, 512};
  if (size == 0)
    return 0;
  size_t nsplits = data[0] & 0x0f;
  size_t frame_max = maxima[(data[0] >> 4) & 3];
  if (size < 1 + nsplits)
    return 0;
  const uint8_t *splits = data + 1;
  const uint8_t *stream = data + 1 + nsplits;
  size_t n = size - 1 - nsplits;

  tlc_buf buf;
  tlc_buf_init(&buf);
  outcome split = decode(stream, n, frame_max, splits, nsplits, &buf);
  outcome whole = decode(stream, n, frame_max, NULL, 0, &buf);
  tlc_buf_free(&buf);
  if (split.frames != whole.frames || split.error != whole.error)
    fail("split and whole decodings disagree", split.error);
  return 0;
}
