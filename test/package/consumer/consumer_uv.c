/* A tiny program built against an installed taskledger by test/package, through the libuv
 * driver's header: it attaches a driver to a scheduler on a loop, stops it, runs the loop until
 * the driver is closed, closes the loop and prints the library's version. */
/* uv.h needs POSIX types (pthread_rwlock_t) that a strict -std=c99 build hides: libuv's own
 * requirement, as for any program that includes uv.h that way. */
#define _POSIX_C_SOURCE 200809L

#include <taskledger-uv.h>

#include <stdio.h>

static void on_closed(void *ud) { *(int *)ud += 1; }

int main(void) {
  uv_loop_t loop;
  tl_scheduler *s = NULL;
  tl_uv *driver = NULL;
  int closed = 0;
  if (uv_loop_init(&loop) != 0 || tl_scheduler_new(NULL, NULL, &s) != TL_OK) {
    fprintf(stderr, "setup failed\n");
    return 1;
  }
  int rc = tl_uv_start(s, &loop, &driver);
  if (rc != TL_OK) {
    fprintf(stderr, "tl_uv_start: %s\n", tl_err_name(rc));
    return 1;
  }
  rc = tl_uv_stop(driver, on_closed, &closed);
  if (rc != TL_OK) {
    fprintf(stderr, "tl_uv_stop: %s\n", tl_err_name(rc));
    return 1;
  }
  uv_run(&loop, UV_RUN_DEFAULT);
  if (closed != 1 || uv_loop_close(&loop) != 0) {
    fprintf(stderr, "the driver did not close (%d close callbacks)\n", closed);
    return 1;
  }
  rc = tl_scheduler_free(s);
  if (rc != TL_OK) {
    fprintf(stderr, "tl_scheduler_free: %s\n", tl_err_name(rc));
    return 1;
  }
  printf("taskledger %s\n", tl_version_string());
  return 0;
}
