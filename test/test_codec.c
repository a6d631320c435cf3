/* The project's byte codec (lib/codec.h), which the snapshot, the wire protocol, the driver's
 * state files and the executor share: the exact bytes of every field, a growing writer that grows
 * through the functions it was given and fails for good when they fail, a fixed writer that
 * never writes past its buffer, a reader that never reads past its end and keeps its first fault
 * (a length over its bound before a short input: the wire's ELENGTH before ETRUNCATED), strings
 * copied out, times rebased, and the checksums against their published check values.
 */
#include "harness.h"

#include "codec.h"

/* ---------------------------------------------------------------------------------------------
 * A realloc that counts, and fails when told to.
 * ------------------------------------------------------------------------------------------- */

static int reallocs;     /* calls of counting_realloc */
static int frees;        /* calls of counting_free with a buffer */
static int fail_realloc; /* the call of counting_realloc that fails (counting from 1); 0: none */

static void *counting_realloc(void *p, size_t n) {
  if (++reallocs == fail_realloc)
    return NULL;
  return realloc(p, n);
}

static void counting_free(void *p) {
  frees += p != NULL;
  free(p);
}

static void counting_reset(void) { reallocs = frees = fail_realloc = 0; }

/* ---------------------------------------------------------------------------------------------
 * Integers at a pointer
 * ------------------------------------------------------------------------------------------- */

START_TEST(integers_are_little_endian_and_only_n_bytes_wide) {
  uint8_t b[10];
  memset(b, 0xEE, sizeof b);
  tl__le_put(b + 1, UINT64_C(0x0807060504030201), 8);
  for (int i = 0; i < 8; i++)
    ck_assert_uint_eq(b[1 + i], (unsigned)(i + 1));
  ck_assert_uint_eq(b[0], 0xEE);
  ck_assert_uint_eq(b[9], 0xEE);
  ck_assert_uint_eq(tl__le_get(b + 1, 8), UINT64_C(0x0807060504030201));
  ck_assert_uint_eq(tl__le_get(b + 1, 3), 0x030201);

  memset(b, 0xEE, sizeof b);
  tl__le_put(b, 0xAABBCCDD, 3); /* the low three bytes, nothing after them */
  ck_assert_uint_eq(b[0], 0xDD);
  ck_assert_uint_eq(b[1], 0xCC);
  ck_assert_uint_eq(b[2], 0xBB);
  ck_assert_uint_eq(b[3], 0xEE);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Writers
 * ------------------------------------------------------------------------------------------- */

START_TEST(a_writer_writes_each_field_as_documented) {
  counting_reset();
  tl__wbuf w;
  tl__wbuf_init(&w, counting_realloc, counting_free);
  ck_assert_ptr_null(w.buf); /* nothing allocated before the first write */
  tl__put_u8(&w, 0x01);
  tl__put_u16(&w, 0x0302);
  tl__put_u32(&w, 0x07060504);
  tl__put_u64(&w, UINT64_C(0x0F0E0D0C0B0A0908));
  tl__put_str16(&w, "ab", 2);
  tl__put_str(&w, "xyz", 3);
  tl__put_bytes(&w, "!", 1);
  tl__put_bytes(&w, NULL, 0);
  tl__put_str16(&w, NULL, 0);
  static const uint8_t expect[] = {1, 2, 3,   4,   5, 6, 7, 8, 9,   10,  11,  12,  13, 14, 15,
                                   2, 0, 'a', 'b', 3, 0, 0, 0, 'x', 'y', 'z', '!', 0,  0};
  ck_assert_uint_eq(w.len, sizeof expect);
  ck_assert(memcmp(w.buf, expect, sizeof expect) == 0);
  ck_assert(!w.failed);
  ck_assert_int_eq(reallocs, 1);
  tl__wbuf_free(&w);
  ck_assert_int_eq(frees, 1);
  ck_assert_ptr_null(w.buf);
  ck_assert_uint_eq(w.len, 0);
}
END_TEST

START_TEST(a_growing_writer_doubles_and_keeps_its_bytes) {
  counting_reset();
  tl__wbuf w;
  tl__wbuf_init(&w, counting_realloc, counting_free);
  for (uint32_t i = 0; i < 5000; i++)
    tl__put_u32(&w, i);
  ck_assert(!w.failed);
  ck_assert_uint_eq(w.len, 20000);
  ck_assert_uint_eq(w.cap, 32768); /* 4 KiB, doubled three times */
  ck_assert_int_eq(reallocs, 4);
  for (uint32_t i = 0; i < 5000; i++)
    ck_assert_uint_eq(tl__le_get(w.buf + 4 * i, 4), i);

  /* Reset: the same buffer for the next record, no allocation. */
  uint8_t *buf = w.buf;
  tl__wbuf_reset(&w);
  tl__put_u64(&w, 7);
  ck_assert_ptr_eq(w.buf, buf);
  ck_assert_uint_eq(w.len, 8);
  ck_assert_int_eq(reallocs, 4);
  tl__wbuf_free(&w);
  ck_assert_int_eq(frees, 1);
}
END_TEST

START_TEST(a_writer_that_cannot_grow_fails_for_good) {
  counting_reset();
  tl__wbuf w;
  tl__wbuf_init(&w, counting_realloc, counting_free);
  uint8_t block[4096] = {0};
  tl__put_bytes(&w, block, sizeof block); /* the first 4 KiB */
  ck_assert(!w.failed);
  fail_realloc = 2;
  tl__put_u8(&w, 1); /* needs the second allocation, which fails */
  ck_assert(w.failed);
  ck_assert_uint_eq(w.len, 4096);
  /* Sticky: nothing is written any more, not even what would fit or allocate now. */
  tl__put_bytes(&w, NULL, 0);
  tl__put_u64(&w, 2);
  ck_assert_uint_eq(w.len, 4096);
  ck_assert_int_eq(reallocs, 2);
  ck_assert_uint_eq(tl__put_u32_later(&w), SIZE_MAX);
  w.buf[0] = 0xAB;
  tl__patch_u32(&w, 0, 0); /* a failed writer patches nothing */
  ck_assert_uint_eq(w.buf[0], 0xAB);
  tl__wbuf_free(&w);
  ck_assert_int_eq(frees, 1);
  ck_assert(!w.failed); /* emptied, and usable again */
  tl__put_u8(&w, 9);
  ck_assert(!w.failed);
  ck_assert_uint_eq(w.buf[0], 9);
  tl__wbuf_free(&w);
}
END_TEST

START_TEST(a_fixed_writer_never_writes_past_its_buffer) {
  uint8_t b[12];
  memset(b, 0xEE, sizeof b);
  tl__wbuf w;
  tl__wbuf_init_fixed(&w, b, 10);
  tl__put_u64(&w, UINT64_MAX);
  tl__put_u16(&w, 0x0201);
  ck_assert(!w.failed);
  ck_assert_uint_eq(w.len, 10); /* exactly full */
  tl__put_u8(&w, 0);
  ck_assert(w.failed);
  ck_assert_uint_eq(w.len, 10);
  ck_assert_uint_eq(b[10], 0xEE);
  ck_assert_uint_eq(b[11], 0xEE);

  /* A field that does not fit writes none of its bytes, and the writer stays failed. */
  tl__wbuf_init_fixed(&w, b, 10);
  tl__put_u64(&w, 0);
  tl__put_u32(&w, 0x44332211);
  ck_assert(w.failed);
  ck_assert_uint_eq(w.len, 8);
  ck_assert_uint_eq(b[8], 0x01);
  tl__put_u8(&w, 5);
  ck_assert_uint_eq(w.len, 8);

  /* Freeing a fixed writer leaves the caller's buffer alone. */
  tl__wbuf_free(&w);
  ck_assert_ptr_eq(w.buf, b);
  ck_assert_uint_eq(w.cap, 10);
  ck_assert_uint_eq(w.len, 0);
}
END_TEST

START_TEST(a_length_too_large_for_its_field_fails_the_writer) {
  static char big[UINT16_MAX + 1];
  uint8_t b[UINT16_MAX + 8];
  tl__wbuf w;
  tl__wbuf_init_fixed(&w, b, sizeof b);
  tl__put_str16(&w, big, UINT16_MAX); /* the largest that fits a u16 */
  ck_assert(!w.failed);
  ck_assert_uint_eq(w.len, 2 + UINT16_MAX);
  ck_assert_uint_eq(tl__le_get(b, 2), UINT16_MAX);
  tl__wbuf_init_fixed(&w, b, sizeof b);
  tl__put_str16(&w, big, UINT16_MAX + 1);
  ck_assert(w.failed);
  ck_assert_uint_eq(w.len, 0);
}
END_TEST

START_TEST(reserved_fields_are_patched_in_place) {
  counting_reset();
  tl__wbuf w;
  tl__wbuf_init(&w, counting_realloc, counting_free);
  tl__put_u8(&w, 0xAA);
  size_t count_at = tl__put_u32_later(&w);
  size_t len_at = w.len;
  tl__put_u64(&w, 0);
  tl__put_u8(&w, 0xBB);
  ck_assert_uint_eq(count_at, 1);
  tl__patch_u32(&w, count_at, 0x04030201);
  tl__patch_u64(&w, len_at, UINT64_C(0x1122334455667788));
  tl__patch_u64(&w, w.len - 4, 1); /* not all written: ignored */
  tl__patch_u32(&w, SIZE_MAX, 1);  /* nor past the end */
  static const uint8_t expect[] = {0xAA, 1,    2,    3,    4,    0x88, 0x77,
                                   0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xBB};
  ck_assert_uint_eq(w.len, sizeof expect);
  ck_assert(memcmp(w.buf, expect, sizeof expect) == 0);
  tl__wbuf_free(&w);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Readers
 * ------------------------------------------------------------------------------------------- */

START_TEST(a_reader_reads_back_what_the_writer_wrote) {
  tl__wbuf w;
  tl__wbuf_init(&w, realloc, free);
  tl__put_u8(&w, 200);
  tl__put_u16(&w, 60000);
  tl__put_u32(&w, 4000000000u);
  tl__put_u64(&w, UINT64_MAX - 1);
  tl__put_str16(&w, "exec-1", 6);
  tl__put_str(&w, "host\0x", 6); /* str may hold a NUL */
  tl__put_str16(&w, "", 0);
  tl__put_bytes(&w, "raw", 3);
  ck_assert(!w.failed);

  tl__rbuf r = tl__rbuf_over(w.buf, w.len);
  ck_assert_uint_eq(tl__get_u8(&r), 200);
  ck_assert_uint_eq(tl__get_u16(&r), 60000);
  ck_assert_uint_eq(tl__get_u32(&r), 4000000000u);
  ck_assert_uint_eq(tl__get_u64(&r), UINT64_MAX - 1);
  char id[16];
  size_t len;
  ck_assert(tl__get_cstr16(&r, 1, id, sizeof id, &len));
  ck_assert_str_eq(id, "exec-1");
  ck_assert_uint_eq(len, 6);
  const char *s = tl__get_str(&r, 0, 6, &len);
  ck_assert_uint_eq(len, 6);
  ck_assert(memcmp(s, "host\0x", 6) == 0);
  s = tl__get_str16(&r, 0, 0, &len);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(len, 0);
  ck_assert_uint_eq(tl__rbuf_left(&r), 3);
  const uint8_t *raw = tl__get_bytes(&r, 3);
  ck_assert(memcmp(raw, "raw", 3) == 0);
  ck_assert(tl__rbuf_done(&r));
  ck_assert_uint_eq(r.fault, TL__RFAULT_NONE);
  tl__wbuf_free(&w);
}
END_TEST

START_TEST(a_reader_never_reads_past_its_end_and_stays_bad) {
  static const uint8_t b[] = {1, 2, 3, 4, 5};
  tl__rbuf r = tl__rbuf_over(b, 3);
  ck_assert_uint_eq(tl__get_u32(&r), 0); /* 3 bytes: short */
  ck_assert(r.bad);
  ck_assert_uint_eq(r.fault, TL__RFAULT_SHORT);
  ck_assert_uint_eq(r.at, 0);           /* nothing consumed */
  ck_assert_uint_eq(tl__get_u8(&r), 0); /* a byte is there, but the reader is bad */
  ck_assert_ptr_null(tl__get_bytes(&r, 0));
  ck_assert_uint_eq(r.at, 0);
  ck_assert(!tl__rbuf_done(&r));

  /* Exactly to the end is good; a byte more is not. */
  r = tl__rbuf_over(b, 3);
  ck_assert_uint_eq(tl__get_u16(&r), 0x0201);
  ck_assert_uint_eq(tl__get_u8(&r), 3);
  ck_assert(tl__rbuf_done(&r));
  ck_assert_uint_eq(tl__get_u8(&r), 0);
  ck_assert_uint_eq(r.fault, TL__RFAULT_SHORT);

  /* An empty reader over nothing. */
  r = tl__rbuf_over(NULL, 0);
  ck_assert(tl__rbuf_done(&r));
  ck_assert_uint_eq(tl__get_u64(&r), 0);
  ck_assert(r.bad);
}
END_TEST

START_TEST(a_length_out_of_bounds_is_range_before_a_short_input) {
  /* A u16 length of 300 with 2 bytes after it: over a bound of 255 it is RANGE, as the wire's
   * ELENGTH comes before ETRUNCATED; within a bound of 1000 it is SHORT. */
  static const uint8_t b[] = {0x2C, 0x01, 'a', 'b'};
  size_t len = 99;
  tl__rbuf r = tl__rbuf_over(b, sizeof b);
  ck_assert_ptr_null(tl__get_str16(&r, 1, 255, &len));
  ck_assert_uint_eq(len, 0);
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
  ck_assert_uint_eq(r.at, 2); /* the length was read, no byte after it */
  r = tl__rbuf_over(b, sizeof b);
  ck_assert_ptr_null(tl__get_str16(&r, 1, 1000, &len));
  ck_assert_uint_eq(r.fault, TL__RFAULT_SHORT);

  /* Below its minimum: RANGE too (an empty id). */
  static const uint8_t empty[] = {0, 0, 0, 0};
  r = tl__rbuf_over(empty, sizeof empty);
  ck_assert_ptr_null(tl__get_str(&r, 1, 10, &len));
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
  r = tl__rbuf_over(empty, sizeof empty);
  ck_assert_ptr_nonnull(tl__get_str(&r, 0, 10, &len));
  ck_assert(tl__rbuf_done(&r));

  /* A u32 length is read whole: 2^32 - 1 over a bound of 2^20. */
  static const uint8_t huge[] = {0xFF, 0xFF, 0xFF, 0xFF, 'x'};
  r = tl__rbuf_over(huge, sizeof huge);
  ck_assert_ptr_null(tl__get_str(&r, 0, 1u << 20, &len));
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
}
END_TEST

START_TEST(the_first_fault_is_kept) {
  static const uint8_t b[] = {5, 0, 0, 0, 9};
  tl__rbuf r = tl__rbuf_over(b, sizeof b);
  ck_assert_uint_eq(tl__get_below(&r, 5), 0); /* 5 is not below 5 */
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
  ck_assert_uint_eq(tl__get_u64(&r), 0); /* would be SHORT */
  tl__rbuf_fail(&r, TL__RFAULT_NUL);
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);

  r = tl__rbuf_over(b, sizeof b);
  tl__rbuf_fail(&r, TL__RFAULT_RANGE); /* a caller refusing a value it read */
  ck_assert(r.bad);
  ck_assert_uint_eq(tl__get_u8(&r), 0);
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
}
END_TEST

START_TEST(a_string_copied_out_is_bounded_and_holds_no_nul) {
  static const uint8_t ok[] = {3, 0, 'a', 'b', 'c'};
  static const uint8_t nul[] = {3, 0, 'a', 0, 'c'};
  char dst[4];
  size_t len = 99;
  tl__rbuf r = tl__rbuf_over(ok, sizeof ok);
  ck_assert(tl__get_cstr16(&r, 0, dst, sizeof dst, NULL)); /* len may be NULL */
  ck_assert_str_eq(dst, "abc");

  r = tl__rbuf_over(ok, sizeof ok); /* 3 bytes do not fit 3 + NUL */
  ck_assert(!tl__get_cstr16(&r, 0, dst, 3, &len));
  ck_assert_str_eq(dst, "");
  ck_assert_uint_eq(len, 0);
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);

  r = tl__rbuf_over(nul, sizeof nul);
  ck_assert(!tl__get_cstr16(&r, 0, dst, sizeof dst, &len));
  ck_assert_str_eq(dst, "");
  ck_assert_uint_eq(r.fault, TL__RFAULT_NUL);

  r = tl__rbuf_over(ok, 4); /* the last byte missing */
  ck_assert(!tl__get_cstr16(&r, 0, dst, sizeof dst, &len));
  ck_assert_uint_eq(r.fault, TL__RFAULT_SHORT);

  static const uint8_t ok32[] = {1, 0, 0, 0, 'z'};
  r = tl__rbuf_over(ok32, sizeof ok32);
  ck_assert(!tl__get_cstr(&r, 2, dst, sizeof dst, &len)); /* below its minimum */
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
  r = tl__rbuf_over(ok32, sizeof ok32);
  ck_assert(tl__get_cstr(&r, 1, dst, sizeof dst, &len));
  ck_assert_str_eq(dst, "z");
  ck_assert_uint_eq(len, 1);
}
END_TEST

START_TEST(values_out_of_range_are_refused) {
  static const uint8_t b[] = {1, 2, 3};
  tl__rbuf r = tl__rbuf_over(b, sizeof b);
  ck_assert(tl__get_bool(&r));
  ck_assert_uint_eq(tl__get_enum(&r, 3), 2);
  ck_assert(!r.bad);
  ck_assert_uint_eq(tl__get_enum(&r, 3), 0); /* 3 is not below 3 */
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);

  static const uint8_t two[] = {2};
  r = tl__rbuf_over(two, sizeof two);
  ck_assert(!tl__get_bool(&r));
  ck_assert(r.bad);

  static const uint8_t below[] = {9, 0, 0, 0};
  r = tl__rbuf_over(below, sizeof below);
  ck_assert_uint_eq(tl__get_below(&r, 10), 9);
  ck_assert(tl__rbuf_done(&r));
}
END_TEST

START_TEST(a_count_is_bounded_by_the_bytes_left) {
  /* A count of 2, then 10 bytes: 2 records of 5 fit, 2 of 6 do not. */
  uint8_t b[14] = {2, 0, 0, 0};
  tl__rbuf r = tl__rbuf_over(b, sizeof b);
  ck_assert_uint_eq(tl__get_count(&r, 5), 2);
  ck_assert(!r.bad);
  r = tl__rbuf_over(b, sizeof b);
  ck_assert_uint_eq(tl__get_count(&r, 6), 0);
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
  /* min_bytes 0 counts as 1: a count of 2^32 - 1 over 10 bytes is refused. */
  memset(b, 0xFF, 4);
  r = tl__rbuf_over(b, sizeof b);
  ck_assert_uint_eq(tl__get_count(&r, 0), 0);
  ck_assert_uint_eq(r.fault, TL__RFAULT_RANGE);
  r = tl__rbuf_over(b, 3);
  ck_assert_uint_eq(tl__get_count(&r, 1), 0);
  ck_assert_uint_eq(r.fault, TL__RFAULT_SHORT);
}
END_TEST

/* The time t saved at saved_now, read back at now. */
static uint64_t rebased(uint64_t t, uint64_t saved_now, uint64_t now) {
  uint8_t b[8];
  tl__le_put(b, t, 8);
  tl__rbuf r = tl__rbuf_over(b, sizeof b);
  r.saved_now = saved_now;
  r.now = now;
  uint64_t v = tl__get_time(&r);
  ck_assert(tl__rbuf_done(&r));
  return v;
}

START_TEST(times_are_rebased_to_the_new_clock) {
  ck_assert_uint_eq(rebased(150, 100, 1000), 1050); /* 50 after the snapshot */
  ck_assert_uint_eq(rebased(150, 1000, 100), 0);    /* before the new clock's start */
  ck_assert_uint_eq(rebased(1500, 1000, 100), 600);
  ck_assert_uint_eq(rebased(150, 100, 100), 150);
  ck_assert_uint_eq(rebased(UINT64_MAX, 0, 5), UINT64_MAX); /* never stays never */
  ck_assert_uint_eq(rebased(UINT64_MAX, 5, 0), UINT64_MAX);
  /* Saturates below never. */
  ck_assert_uint_eq(rebased(UINT64_MAX - 10, 0, 10), UINT64_MAX - 1);
  ck_assert_uint_eq(rebased(UINT64_MAX - 10, 0, 9), UINT64_MAX - 1);
  ck_assert_uint_eq(rebased(UINT64_MAX - 10, 0, 8), UINT64_MAX - 2);
  ck_assert_uint_eq(rebased(1, 0, UINT64_MAX), UINT64_MAX - 1);
  ck_assert_uint_eq(rebased(0, 0, UINT64_MAX), UINT64_MAX - 1);
}
END_TEST

/* ---------------------------------------------------------------------------------------------
 * Checksums
 * ------------------------------------------------------------------------------------------- */

START_TEST(the_checksums_match_their_check_values) {
  /* CRC-32C's check value (RFC 3720), whole and in parts, and across the 8-byte steps. */
  ck_assert_uint_eq(tl__crc32c(0, "123456789", 9), 0xE3069283u);
  ck_assert_uint_eq(tl__crc32c(tl__crc32c(0, "1234", 4), "56789", 5), 0xE3069283u);
  ck_assert_uint_eq(tl__crc32c(0, "", 0), 0);
  uint8_t zeros[32] = {0};
  ck_assert_uint_eq(tl__crc32c(0, zeros, sizeof zeros), 0x8A9136AAu); /* RFC 3720 B.4 */

  /* FNV-1a 64's published values, and hashing on from a previous result. */
  ck_assert_uint_eq(tl__fnv1a(TL__FNV1A_INIT, "", 0), UINT64_C(0xcbf29ce484222325));
  ck_assert_uint_eq(tl__fnv1a(TL__FNV1A_INIT, "a", 1), UINT64_C(0xaf63dc4c8601ec8c));
  ck_assert_uint_eq(tl__fnv1a(TL__FNV1A_INIT, "foobar", 6), UINT64_C(0x85944171f73967e8));
  ck_assert_uint_eq(tl__fnv1a(tl__fnv1a(TL__FNV1A_INIT, "foo", 3), "bar", 3),
                    UINT64_C(0x85944171f73967e8));
}
END_TEST

Suite *tl_codec_suite(void) {
  Suite *s = suite_create("codec");
  TCase *tc = tlt_tcase(s, "codec");
  tcase_add_test(tc, integers_are_little_endian_and_only_n_bytes_wide);
  tcase_add_test(tc, a_writer_writes_each_field_as_documented);
  tcase_add_test(tc, a_growing_writer_doubles_and_keeps_its_bytes);
  tcase_add_test(tc, a_writer_that_cannot_grow_fails_for_good);
  tcase_add_test(tc, a_fixed_writer_never_writes_past_its_buffer);
  tcase_add_test(tc, a_length_too_large_for_its_field_fails_the_writer);
  tcase_add_test(tc, reserved_fields_are_patched_in_place);
  tcase_add_test(tc, a_reader_reads_back_what_the_writer_wrote);
  tcase_add_test(tc, a_reader_never_reads_past_its_end_and_stays_bad);
  tcase_add_test(tc, a_length_out_of_bounds_is_range_before_a_short_input);
  tcase_add_test(tc, the_first_fault_is_kept);
  tcase_add_test(tc, a_string_copied_out_is_bounded_and_holds_no_nul);
  tcase_add_test(tc, values_out_of_range_are_refused);
  tcase_add_test(tc, a_count_is_bounded_by_the_bytes_left);
  tcase_add_test(tc, times_are_rebased_to_the_new_clock);
  tcase_add_test(tc, the_checksums_match_their_check_values);
  return s;
}
