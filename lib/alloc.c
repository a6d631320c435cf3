/* The replaceable allocator and per-scheduler accounting. Every byte the library holds is
 * allocated here and counted in its scheduler's mem_bytes/mem_blocks, so tests can prove that a
 * drained scheduler holds exactly what an empty one does.
 *
 * Lock: the function pointers are process-wide; they change only under allocator_lock and only
 * while no scheduler exists, and a scheduler is counted (under the same lock) before its first
 * allocation, so they never change while anything allocated with them is alive. The
 * per-scheduler counters are protected by that scheduler's lock (allocations happen under it,
 * or before the scheduler is shared).
 */
#include "internal.h"

#include <stdlib.h>

static struct {
  void *(*malloc_fn)(size_t);
  void *(*realloc_fn)(void *, size_t);
  void *(*calloc_fn)(size_t, size_t);
  void (*free_fn)(void *);
} allocator = {malloc, realloc, calloc, free};

static uv_once_t allocator_once = UV_ONCE_INIT;
static uv_mutex_t allocator_lock;
static long live_schedulers; /* protected by allocator_lock */

static void allocator_lock_init(void) {
  if (uv_mutex_init(&allocator_lock) != 0)
    abort();
}

int tl_replace_allocator(void *(*malloc_fn)(size_t), void *(*realloc_fn)(void *, size_t),
                         void *(*calloc_fn)(size_t, size_t), void (*free_fn)(void *)) {
  if (malloc_fn == NULL || realloc_fn == NULL || calloc_fn == NULL || free_fn == NULL)
    return TL_EINVAL;
  uv_once(&allocator_once, allocator_lock_init);
  uv_mutex_lock(&allocator_lock);
  int err = TL_EBUSY;
  if (live_schedulers == 0) {
    allocator.malloc_fn = malloc_fn;
    allocator.realloc_fn = realloc_fn;
    allocator.calloc_fn = calloc_fn;
    allocator.free_fn = free_fn;
    err = TL_OK;
  }
  uv_mutex_unlock(&allocator_lock);
  return err;
}

void tl__schedulers_inc(void) {
  uv_once(&allocator_once, allocator_lock_init);
  uv_mutex_lock(&allocator_lock);
  live_schedulers++;
  uv_mutex_unlock(&allocator_lock);
}

void tl__schedulers_dec(void) {
  uv_mutex_lock(&allocator_lock);
  live_schedulers--;
  uv_mutex_unlock(&allocator_lock);
}

void *tl__raw_calloc(size_t n, size_t size) { return allocator.calloc_fn(n, size); }
void *tl__raw_realloc(void *p, size_t size) { return allocator.realloc_fn(p, size); }
void tl__raw_free(void *p) { allocator.free_fn(p); }

void *tl__malloc(struct tl_scheduler *s, size_t size) {
  void *p = allocator.malloc_fn(size);
  if (p != NULL) {
    s->mem_bytes += size;
    s->mem_blocks++;
  }
  return p;
}

void *tl__calloc(struct tl_scheduler *s, size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size)
    return NULL;
  void *p = allocator.calloc_fn(n, size);
  if (p != NULL) {
    s->mem_bytes += n * size;
    s->mem_blocks++;
  }
  return p;
}

/* Like realloc, but p must not be NULL and new_size not 0; on failure p is untouched. */
void *tl__realloc(struct tl_scheduler *s, void *p, size_t old_size, size_t new_size) {
  void *q = allocator.realloc_fn(p, new_size);
  if (q != NULL)
    s->mem_bytes = s->mem_bytes - old_size + new_size;
  return q;
}

void tl__free(struct tl_scheduler *s, void *p, size_t size) {
  if (p == NULL)
    return;
  s->mem_bytes -= size;
  s->mem_blocks--;
  allocator.free_fn(p);
}

tl__str *tl__str_alloc(struct tl_scheduler *s, size_t len) {
  if (len > UINT32_MAX - 1)
    return NULL;
  tl__str *str = tl__malloc(s, sizeof(tl__str) + len + 1);
  if (str == NULL)
    return NULL;
  str->refs = 1;
  str->len = (uint32_t)len;
  str->mark = 0;
  str->seen = 0;
  str->text[len] = '\0';
  return str;
}

tl__str *tl__str_new(struct tl_scheduler *s, const char *text, size_t len) {
  tl__str *str = tl__str_alloc(s, len);
  if (str != NULL)
    memcpy(str->text, text, len);
  return str;
}

tl__str *tl__str_dup(struct tl_scheduler *s, const char *text, int *err) {
  *err = TL_OK;
  if (text == NULL)
    return NULL;
  tl__str *str = tl__str_new(s, text, strlen(text));
  if (str == NULL)
    *err = TL_ENOMEM;
  return str;
}

void tl__str_free(struct tl_scheduler *s, tl__str *str) { tl__free(s, str, tl__str_size(str)); }

size_t tl__name_len(const char *name, size_t max) {
  if (name == NULL)
    return 0;
  size_t n = strnlen(name, max);
  return n == max ? 0 : n;
}
