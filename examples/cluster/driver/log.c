/* tl-driver's log lines and the helpers every other file of the driver uses: the --quiet-aware
 * log, the escaping of names that came from the wire, the edge's rate-limited lines, and the
 * exit on out-of-memory. */

#include <stdarg.h>

#include "driver.h"

void die_oom(void) {
  fprintf(stderr, "tl-driver: out of memory\n");
  exit(1);
}

void logf_(driver *d, const char *fmt, ...) {
  if (d->log.quiet)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("tl-driver: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Names are data: an executor id or a host came from the wire and may hold any byte but NUL.
 * Printed, it is escaped so that no control byte or escape sequence reaches a terminal or the
 * summary: printable ASCII stays as it is, a backslash becomes "\\", every other byte "\xNN".
 * Returns buf (ESC_MAX bytes), which holds all of s that fits. */
const char *esc(char *buf, const char *s) {
  static const char hex[] = "0123456789abcdef";
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 <= ESC_MAX; p++) {
    if (*p == '\\') {
      buf[n++] = '\\';
      buf[n++] = '\\';
    } else if (*p >= 0x20 && *p < 0x7f) {
      buf[n++] = (char)*p;
    } else {
      buf[n++] = '\\';
      buf[n++] = 'x';
      buf[n++] = hex[*p >> 4];
      buf[n++] = hex[*p & 15];
    }
  }
  buf[n] = '\0';
  return buf;
}

/* Whether a line of kind r may be printed now (EDGE_LOG_PER_S a second); when a new second
 * begins after lines were held back, says how many first. */
bool edge_log_ok(ratelog *r, const char *what) {
  uint64_t second = uv_hrtime() / 1000000000u;
  if (second != r->window) {
    if (r->suppressed > 0)
      fprintf(stderr, "tl-driver: %" PRIu64 " more %s not logged (at most %d lines a second)\n",
              r->suppressed, what, EDGE_LOG_PER_S);
    r->window = second;
    r->in_window = 0;
    r->suppressed = 0;
  }
  if (r->in_window < EDGE_LOG_PER_S) {
    r->in_window++;
    return true;
  }
  r->suppressed++;
  r->total_suppressed++;
  return false;
}

void copy_text(char *dst, size_t len, const char *src) { snprintf(dst, len, "%s", src ? src : ""); }
