/* The checking kit: the one violation formatter every module's check uses, and the visit and
 * reference count of shared strings (checker.h). Runs under the scheduler's lock, inside tl_check,
 * and changes nothing but the strings' visit stamps.
 */
#include "checker.h"

#include <stdarg.h>
#include <stdio.h>

int tl__check_violated(tl__checker *c, const char *fmt, ...) {
  if (c->why != NULL && c->len > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, c->len, fmt, ap);
    va_end(ap);
  }
  return TL_ECORRUPT;
}

void tl__check_visit_str(tl__checker *c, tl__str *str, const char *holder) {
  (void)holder;
  if (str == NULL)
    return;
  if (str->mark != c->s->check_epoch) {
    str->mark = c->s->check_epoch;
    str->seen = 0;
    tl__check_account(c, tl__str_size(str));
  }
  str->seen++;
}

void tl__check_str_refs(tl__checker *c, tl__str *str, const char *holder) {
  if (c->failed || str == NULL || str->seen == str->refs)
    return;
  c->failed = true;
  tl__check_violated(c, "string \"%.40s\" held by %s has %u references, %u holders", str->text,
                     holder, str->refs, str->seen);
}
