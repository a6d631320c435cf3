/* The libFuzzer harness: each input is a whole program for the operation layer (ops.h: header
 * bytes, then operations), run on a fresh scheduler against the reference model and drained at the
 * end. A disagreement, a failed tl_check, a leak or a crash aborts with the model's message.
 * Inputs whose resource bytes follow the header (ops.h, TLO_RESOURCE_MARK) run with resources:
 * the corpus's res-seed-* files start the fuzzer there. Inputs whose speculation bytes follow
 * (TLO_SPEC_MARK) set the duration threshold and the decommission kill interval: spec-seed-*.
 */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tlo_outcome out;
  tlo_run_bytes(data, size, NULL, &out);
  if (!out.ok) {
    fprintf(stderr, "taskledger fuzz: op %zu of %zu: %s\n", out.failed_op, out.ops, out.message);
    abort();
  }
  return 0;
}
