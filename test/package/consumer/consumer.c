/* A tiny program built against an installed taskledger by test/package: it creates and frees a
 * scheduler and prints the library's version, so that linking, loading and the header all get
 * exercised from outside the source tree. */
#include <taskledger.h>

#include <stdio.h>

int main(void) {
  tl_scheduler *s = NULL;
  char why[256] = "";
  int rc = tl_scheduler_new(NULL, NULL, &s);
  if (rc != TL_OK) {
    fprintf(stderr, "tl_scheduler_new: %s\n", tl_err_name(rc));
    return 1;
  }
  rc = tl_check(s, why, sizeof why);
  if (rc != TL_OK) {
    fprintf(stderr, "tl_check: %s: %s\n", tl_err_name(rc), why);
    return 1;
  }
  rc = tl_scheduler_free(s);
  if (rc != TL_OK) {
    fprintf(stderr, "tl_scheduler_free: %s\n", tl_err_name(rc));
    return 1;
  }
  if (tl_version() != TL_VERSION_HEX) {
    fprintf(stderr, "header says %#x, library says %#x\n", (unsigned)TL_VERSION_HEX, tl_version());
    return 1;
  }
  printf("taskledger %s\n", tl_version_string());
  return 0;
}
