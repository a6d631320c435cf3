/* tl-replay: replays a taskledger call journal into a fresh scheduler, checks every invariant
 * after every call, and reports the first line after which an invariant breaks or a call does
 * not return what it returned in the original run, or, at the end, what did not drain.
 *
 *   tl-replay [--trace] FILE      (FILE "-" reads standard input)
 *
 * Exit status: 0 clean and drained, 1 broken or diverged, 2 not a journal (or unreadable),
 * 3 not drained, 4 out of memory.
 */
#include "replay.h"

#include <stdlib.h>
#include <string.h>

static int usage(void) {
  fprintf(stderr, "usage: tl-replay [--trace] FILE|-\n");
  return TLR_BAD_INPUT;
}

int main(int argc, char **argv) {
  tlr_options options = {NULL};
  const char *path = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--trace") == 0)
      options.trace = stdout;
    else if (path == NULL)
      path = argv[i];
    else
      return usage();
  }
  if (path == NULL)
    return usage();
  FILE *in = strcmp(path, "-") == 0 ? stdin : fopen(path, "r");
  if (in == NULL) {
    perror(path);
    return TLR_BAD_INPUT;
  }
  tlr_report report;
  int verdict = tlr_replay(in, &options, &report);
  if (in != stdin)
    fclose(in);

  printf("%zu lines, %zu calls replayed, %zu skipped (TL_ENOMEM when journaled); %u task sets "
         "submitted, %u released; %u executor losses begun, %u ended\n",
         report.lines, report.calls, report.skipped, report.submitted, report.released, report.lost,
         report.removed);
  switch (verdict) {
  case TLR_OK:
    printf("tl_check clean after every call; drained\n");
    break;
  case TLR_NOT_DRAINED:
    printf("tl_check clean after every call; %s", report.why);
    break;
  default:
    printf("line %zu: %s\n", report.bad_line, report.why);
    break;
  }
  return verdict;
}
