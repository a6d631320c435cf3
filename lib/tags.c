/* A task set's tags (Spark's job tags and job groups): checked at submit, copied into one block
 * that the task set holds until it is released, matched by tl_cancel_tag and tl_kill_tag, saved
 * and restored with the task set. A tag is 1 to TL_TAG_MAX - 1 bytes of printable ASCII but ',',
 * '"' and '\\' (Spark forbids the comma; the quote and the backslash would need escaping
 * wherever a tag is written out); a task set holds at most TL_TAGS_MAX distinct tags.
 */
#include "internal.h"

size_t tl__tag_len(const char *tag) {
  if (tag == NULL)
    return 0;
  size_t n = 0;
  for (const unsigned char *p = (const unsigned char *)tag; *p != '\0'; p++, n++) {
    if (n + 1 >= TL_TAG_MAX || *p <= 0x20 || *p >= 0x7f || *p == ',' || *p == '"' || *p == '\\')
      return 0;
  }
  return n;
}

int tl__tags_valid(const char *const *tags, uint32_t n) {
  if (n > TL_TAGS_MAX || (tags == NULL && n > 0))
    return TL_EINVAL;
  for (uint32_t i = 0; i < n; i++) {
    if (tl__tag_len(tags[i]) == 0)
      return TL_EINVAL;
    for (uint32_t k = 0; k < i; k++)
      if (strcmp(tags[k], tags[i]) == 0)
        return TL_EINVAL;
  }
  return TL_OK;
}

int tl__tags_new(struct tl_scheduler *s, const char *const *tags, uint32_t n, tl__tags **out) {
  *out = NULL;
  if (n == 0)
    return TL_OK;
  size_t bytes = 0;
  for (uint32_t i = 0; i < n; i++)
    bytes += strlen(tags[i]) + 1;
  tl__tags *t = tl__malloc(s, sizeof *t + bytes);
  if (t == NULL)
    return TL_ENOMEM;
  t->n = n;
  t->bytes = (uint32_t)bytes;
  char *p = t->text;
  for (uint32_t i = 0; i < n; i++) {
    size_t len = strlen(tags[i]) + 1;
    memcpy(p, tags[i], len);
    p += len;
  }
  *out = t;
  return TL_OK;
}

void tl__tags_free(struct tl_scheduler *s, tl__tags *t) {
  if (t != NULL)
    tl__free(s, t, tl__tags_size(t));
}

const char *tl__tags_next(const tl__tags *t, const char *prev) {
  if (t == NULL)
    return NULL;
  if (prev == NULL)
    return t->text;
  const char *next = prev + strlen(prev) + 1;
  return next < t->text + t->bytes ? next : NULL;
}

bool tl__tags_has(const tl__tags *t, const char *tag, size_t len) {
  for (const char *p = tl__tags_next(t, NULL); p != NULL; p = tl__tags_next(t, p))
    if (strncmp(p, tag, len) == 0 && p[len] == '\0')
      return true;
  return false;
}

void tl__tags_save(tl__wbuf *w, const tl__tags *t) {
  tl__put_u32(w, t != NULL ? t->n : 0);
  for (const char *p = tl__tags_next(t, NULL); p != NULL; p = tl__tags_next(t, p))
    tl__put_str(w, p, strlen(p));
}

int tl__tags_restore(struct tl_scheduler *s, tl__rbuf *r, tl__tags **out) {
  *out = NULL;
  uint32_t n = tl__get_count(r, 5);
  if (r->bad || n > TL_TAGS_MAX)
    return TL_ESNAPSHOT;
  char text[TL_TAGS_MAX][TL_TAG_MAX];
  const char *tags[TL_TAGS_MAX];
  for (uint32_t i = 0; i < n; i++) {
    if (!tl__get_cstr(r, 1, text[i], sizeof text[i], NULL))
      return TL_ESNAPSHOT;
    tags[i] = text[i];
  }
  if (tl__tags_valid(tags, n) != TL_OK)
    return TL_ESNAPSHOT;
  return tl__tags_new(s, tags, n, out);
}
