/* The text writer (tl__text, internal.h): the one way the library writes text into a buffer of
 * a known size, or measures it. The journal measures each line and then writes it into the
 * allocation made for it; tl_explain_taskset and tl_metrics_text write into the caller's buffer,
 * cut to its size, and say how much was needed. Nothing here allocates or takes a lock. The
 * plain writes (tl__text_put, tl__text_str) are inline in internal.h.
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>

void tl__text_printf(tl__text *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n;
  if (t->buf != NULL && t->len < t->cap)
    n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap); /* what fits, and a NUL */
  else
    n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n >= 0)
    t->len += (size_t)n;
  else if (t->len < t->cap) /* a format error: as if the text did not fit */
    t->len = t->cap;
}

void tl__text_end(tl__text *t) {
  if (t->buf == NULL || t->cap == 0)
    return;
  if (t->len < t->cap)
    t->buf[t->len] = '\0';
  else if (t->cap >= 5)
    memcpy(t->buf + t->cap - 5, "...\n", 5);
  else
    t->buf[t->cap - 1] = '\0';
}
