/* The JSON reader of json_reader.h: a recursive-descent checker that records one token per
 * value. Recursion is bounded by JSON_DEPTH_MAX; every byte is looked at once while parsing.
 */
#include "json_reader.h"

#include <stdlib.h>
#include <string.h>

typedef struct parser {
  json_doc *doc; /* where tokens go */
  const char *p; /* the text */
  size_t len;    /* its length */
  size_t pos;    /* the next byte to read */
} parser;

static void skip_ws(parser *ps) {
  while (ps->pos < ps->len) {
    char c = ps->p[ps->pos];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
      break;
    ps->pos++;
  }
}

/* Appends a token; its index, or JSON_NONE when the array cannot grow. */
static size_t push(parser *ps, json_type type, size_t start) {
  json_doc *d = ps->doc;
  if (d->ntok == d->cap) {
    size_t cap = d->cap ? d->cap * 2 : 64;
    json_token *t = realloc(d->tok, cap * sizeof *t);
    if (t == NULL)
      return JSON_NONE;
    d->tok = t;
    d->cap = cap;
  }
  json_token *t = &d->tok[d->ntok];
  t->type = type;
  t->start = (uint32_t)start;
  t->end = (uint32_t)start;
  t->count = 0;
  t->next = 0;
  return d->ntok++;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Four hex digits at s (bounds checked by the caller): the code unit, or -1. */
static long hex4(const char *s) {
  long v = 0;
  for (int i = 0; i < 4; i++) {
    int h = hexval(s[i]);
    if (h < 0)
      return -1;
    v = v * 16 + h;
  }
  return v;
}

/* At the opening quote. Checks the string (escapes, surrogate pairs, no control characters). */
static int parse_string(parser *ps) {
  size_t i = push(ps, JSON_STRING, ps->pos + 1);
  if (i == JSON_NONE)
    return JSON_ENOMEM;
  ps->pos++;
  while (ps->pos < ps->len) {
    unsigned char c = (unsigned char)ps->p[ps->pos];
    if (c == '"') {
      ps->doc->tok[i].end = (uint32_t)ps->pos;
      ps->doc->tok[i].next = (uint32_t)(i + 1);
      ps->pos++;
      return 0;
    }
    if (c < 0x20)
      return JSON_ESTRING;
    if (c != '\\') {
      ps->pos++;
      continue;
    }
    if (ps->pos + 1 >= ps->len)
      return JSON_ESTRING;
    char e = ps->p[ps->pos + 1];
    if (strchr("\"\\/bfnrt", e) != NULL && e != '\0') {
      ps->pos += 2;
      continue;
    }
    if (e != 'u' || ps->pos + 6 > ps->len)
      return JSON_ESTRING;
    long u = hex4(ps->p + ps->pos + 2);
    if (u < 0)
      return JSON_ESTRING;
    ps->pos += 6;
    if (u >= 0xDC00 && u <= 0xDFFF)
      return JSON_ESTRING; /* a low surrogate alone */
    if (u >= 0xD800 && u <= 0xDBFF) {
      if (ps->pos + 6 > ps->len || ps->p[ps->pos] != '\\' || ps->p[ps->pos + 1] != 'u')
        return JSON_ESTRING;
      long lo = hex4(ps->p + ps->pos + 2);
      if (lo < 0xDC00 || lo > 0xDFFF)
        return JSON_ESTRING;
      ps->pos += 6;
    }
  }
  return JSON_ESYNTAX; /* no closing quote */
}

static int parse_number(parser *ps) {
  size_t start = ps->pos, n = ps->len;
  const char *s = ps->p;
  size_t q = start;
  if (q < n && s[q] == '-')
    q++;
  if (q < n && s[q] == '0') {
    q++;
  } else if (q < n && s[q] >= '1' && s[q] <= '9') {
    while (q < n && s[q] >= '0' && s[q] <= '9')
      q++;
  } else {
    return JSON_ESYNTAX;
  }
  if (q < n && s[q] == '.') {
    q++;
    if (q >= n || s[q] < '0' || s[q] > '9')
      return JSON_ESYNTAX;
    while (q < n && s[q] >= '0' && s[q] <= '9')
      q++;
  }
  if (q < n && (s[q] == 'e' || s[q] == 'E')) {
    q++;
    if (q < n && (s[q] == '+' || s[q] == '-'))
      q++;
    if (q >= n || s[q] < '0' || s[q] > '9')
      return JSON_ESYNTAX;
    while (q < n && s[q] >= '0' && s[q] <= '9')
      q++;
  }
  size_t i = push(ps, JSON_NUMBER, start);
  if (i == JSON_NONE)
    return JSON_ENOMEM;
  ps->doc->tok[i].end = (uint32_t)q;
  ps->doc->tok[i].next = (uint32_t)(i + 1);
  ps->pos = q;
  return 0;
}

static int parse_literal(parser *ps, const char *word, json_type type) {
  size_t wl = strlen(word);
  if (ps->len - ps->pos < wl || memcmp(ps->p + ps->pos, word, wl) != 0)
    return JSON_ESYNTAX;
  size_t i = push(ps, type, ps->pos);
  if (i == JSON_NONE)
    return JSON_ENOMEM;
  ps->pos += wl;
  ps->doc->tok[i].end = (uint32_t)ps->pos;
  ps->doc->tok[i].next = (uint32_t)(i + 1);
  return 0;
}

static int parse_value(parser *ps, int depth);

/* At '[' or '{'. */
static int parse_container(parser *ps, int depth) {
  bool object = ps->p[ps->pos] == '{';
  char close = object ? '}' : ']';
  if (depth >= JSON_DEPTH_MAX)
    return JSON_EDEPTH;
  size_t i = push(ps, object ? JSON_OBJECT : JSON_ARRAY, ps->pos);
  if (i == JSON_NONE)
    return JSON_ENOMEM;
  ps->pos++;
  skip_ws(ps);
  uint32_t count = 0;
  if (ps->pos < ps->len && ps->p[ps->pos] == close) {
    ps->pos++;
  } else {
    for (;;) {
      int rc;
      skip_ws(ps);
      if (object) {
        if (ps->pos >= ps->len || ps->p[ps->pos] != '"')
          return JSON_ESYNTAX;
        if ((rc = parse_string(ps)) < 0)
          return rc;
        skip_ws(ps);
        if (ps->pos >= ps->len || ps->p[ps->pos] != ':')
          return JSON_ESYNTAX;
        ps->pos++;
      }
      if ((rc = parse_value(ps, depth + 1)) < 0)
        return rc;
      count++;
      skip_ws(ps);
      if (ps->pos >= ps->len)
        return JSON_ESYNTAX;
      char c = ps->p[ps->pos++];
      if (c == close)
        break;
      if (c != ',')
        return JSON_ESYNTAX;
    }
  }
  json_token *t = &ps->doc->tok[i];
  t->end = (uint32_t)ps->pos;
  t->count = count;
  t->next = (uint32_t)ps->doc->ntok;
  return 0;
}

static int parse_value(parser *ps, int depth) {
  skip_ws(ps);
  if (ps->pos >= ps->len)
    return JSON_ESYNTAX;
  switch (ps->p[ps->pos]) {
  case '{':
  case '[':
    return parse_container(ps, depth);
  case '"':
    return parse_string(ps);
  case 't':
    return parse_literal(ps, "true", JSON_TRUE);
  case 'f':
    return parse_literal(ps, "false", JSON_FALSE);
  case 'n':
    return parse_literal(ps, "null", JSON_NULL);
  default:
    return parse_number(ps);
  }
}

int json_parse(json_doc *doc, const char *text, size_t len) {
  memset(doc, 0, sizeof *doc);
  if (len >= UINT32_MAX)
    return JSON_ETOOBIG;
  parser ps = {doc, text, len, 0};
  int rc = parse_value(&ps, 0);
  if (rc == 0) {
    skip_ws(&ps);
    if (ps.pos != len)
      rc = JSON_ETRAILING;
  }
  if (rc < 0) {
    json_free(doc);
    return rc;
  }
  doc->text = text;
  return 0;
}

void json_free(json_doc *doc) {
  free(doc->tok);
  memset(doc, 0, sizeof *doc);
}

const char *json_strerror(int err) {
  switch (err) {
  case 0:
    return "no error";
  case JSON_ENOMEM:
    return "out of memory";
  case JSON_ESYNTAX:
    return "syntax error";
  case JSON_EDEPTH:
    return "nested too deep";
  case JSON_ETRAILING:
    return "trailing characters after the value";
  case JSON_ESTRING:
    return "bad string (control character or escape)";
  case JSON_ETOOBIG:
    return "text too big";
  default:
    return "unknown error";
  }
}

size_t json_first(const json_doc *doc, size_t i) {
  if (i >= doc->ntok)
    return JSON_NONE;
  const json_token *t = &doc->tok[i];
  if ((t->type != JSON_ARRAY && t->type != JSON_OBJECT) || t->count == 0)
    return JSON_NONE;
  return i + 1;
}

size_t json_next(const json_doc *doc, size_t c, size_t e) {
  if (c >= doc->ntok || e >= doc->ntok || e <= c)
    return JSON_NONE;
  size_t after = doc->tok[e].next;
  if (doc->tok[c].type == JSON_OBJECT)
    after = doc->tok[e + 1].next; /* skip the member's value */
  return after < doc->tok[c].next ? after : JSON_NONE;
}

size_t json_get(const json_doc *doc, size_t obj, const char *key) {
  if (obj >= doc->ntok || doc->tok[obj].type != JSON_OBJECT)
    return JSON_NONE;
  for (size_t k = json_first(doc, obj); k != JSON_NONE; k = json_next(doc, obj, k))
    if (json_streq(doc, k, key))
      return k + 1;
  return JSON_NONE;
}

bool json_int(const json_doc *doc, size_t i, int64_t *out) {
  if (i >= doc->ntok || doc->tok[i].type != JSON_NUMBER)
    return false;
  const char *s = doc->text + doc->tok[i].start, *end = doc->text + doc->tok[i].end;
  bool neg = false;
  if (*s == '-') {
    neg = true;
    s++;
  }
  uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  for (; s < end; s++) {
    if (*s < '0' || *s > '9')
      return false; /* a fraction or an exponent */
    unsigned d = (unsigned)(*s - '0');
    if (v > (limit - d) / 10)
      return false;
    v = v * 10 + d;
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return true;
}

/* Writes code point cp as UTF-8 at buf[*n] (as far as cap allows) and advances *n by its length. */
static void put_utf8(char *buf, size_t cap, size_t *n, unsigned long cp) {
  char b[4];
  size_t k;
  if (cp < 0x80) {
    b[0] = (char)cp;
    k = 1;
  } else if (cp < 0x800) {
    b[0] = (char)(0xC0 | (cp >> 6));
    b[1] = (char)(0x80 | (cp & 0x3F));
    k = 2;
  } else if (cp < 0x10000) {
    b[0] = (char)(0xE0 | (cp >> 12));
    b[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    b[2] = (char)(0x80 | (cp & 0x3F));
    k = 3;
  } else {
    b[0] = (char)(0xF0 | (cp >> 18));
    b[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    b[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    b[3] = (char)(0x80 | (cp & 0x3F));
    k = 4;
  }
  for (size_t j = 0; j < k; j++, (*n)++)
    if (cap > 0 && *n < cap - 1)
      buf[*n] = b[j];
}

long json_string(const json_doc *doc, size_t i, char *buf, size_t cap) {
  if (i >= doc->ntok || doc->tok[i].type != JSON_STRING)
    return -1;
  const char *s = doc->text + doc->tok[i].start, *end = doc->text + doc->tok[i].end;
  size_t n = 0;
  while (s < end) {
    unsigned long cp;
    if (*s != '\\') {
      if (cap > 0 && n < cap - 1)
        buf[n] = *s;
      n++;
      s++;
      continue;
    }
    /* The parser checked every escape, so these reads stay inside the string. */
    char e = s[1];
    s += 2;
    switch (e) {
    case 'b':
      cp = '\b';
      break;
    case 'f':
      cp = '\f';
      break;
    case 'n':
      cp = '\n';
      break;
    case 'r':
      cp = '\r';
      break;
    case 't':
      cp = '\t';
      break;
    case 'u':
      cp = (unsigned long)hex4(s);
      s += 4;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        unsigned long lo = (unsigned long)hex4(s + 2);
        s += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      }
      break;
    default: /* " \ / */
      cp = (unsigned char)e;
      break;
    }
    put_utf8(buf, cap, &n, cp);
  }
  if (cap > 0)
    buf[n < cap ? n : cap - 1] = '\0';
  return (long)n;
}

bool json_streq(const json_doc *doc, size_t i, const char *s) {
  if (i >= doc->ntok || doc->tok[i].type != JSON_STRING)
    return false;
  size_t want = strlen(s);
  const json_token *t = &doc->tok[i];
  /* Fast path: no escape in the token, compare the bytes. */
  if (memchr(doc->text + t->start, '\\', t->end - t->start) == NULL)
    return t->end - t->start == want && memcmp(doc->text + t->start, s, want) == 0;
  char small[256];
  long n = json_string(doc, i, small, sizeof small);
  return n >= 0 && (size_t)n == want && want < sizeof small && memcmp(small, s, want) == 0;
}
