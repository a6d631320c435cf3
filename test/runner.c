/* The one test runner: `tl-tests SUITE` runs that Check suite, `tl-tests` runs them all.
 * It exits non-zero when a test fails or the suite name is unknown. CK_FORK=no runs the tests
 * in-process for a debugger; CK_RUN_CASE / CK_RUN_SUITE narrow a run further. Its table comes
 * from TLT_SUITES of test/CMakeLists.txt (suites.h): a suite is added there.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
  const char *name;     /* the name ctest passes */
  Suite *(*make)(void); /* its constructor */
} suites[] = {
#define TLT_SUITE_ENTRY(suite) {#suite, tl_##suite##_suite},
    TLT_SUITE_LIST(TLT_SUITE_ENTRY)
#undef TLT_SUITE_ENTRY
};

int main(int argc, char **argv) {
  if (argc > 2) {
    fprintf(stderr, "usage: %s [suite]\n", argv[0]);
    return 2;
  }
  SRunner *runner = NULL;
  for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
    if (argc == 2 && strcmp(argv[1], suites[i].name) != 0)
      continue;
    Suite *suite = suites[i].make();
    if (runner == NULL)
      runner = srunner_create(suite);
    else
      srunner_add_suite(runner, suite);
  }
  if (runner == NULL) {
    fprintf(stderr, "%s: no suite named \"%s\"; suites:", argv[0], argv[1]);
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++)
      fprintf(stderr, " %s", suites[i].name);
    fprintf(stderr, "\n");
    return 2;
  }
  srunner_run_all(runner, CK_ENV);
  int failed = srunner_ntests_failed(runner);
  srunner_free(runner);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
