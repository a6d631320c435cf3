/* A small, strict JSON reader for what tl-driver reads from Slurm (squeue --json): the text is
 * checked against RFC 8259 in full and cut into a flat array of tokens, one per value, in
 * document order, which the caller walks with json_get / json_next and reads with json_int /
 * json_string. No dependency, no allocation but the token array, bounded depth.
 */
#ifndef TLC_JSON_READER_H
#define TLC_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_DEPTH_MAX 64      /* nesting deeper than this is refused (JSON_EDEPTH) */
#define JSON_NONE ((size_t)-1) /* "no such token": a missing member, the end of a container */

/* Errors: negative, as everywhere in taskledger. */
#define JSON_ENOMEM (-1)    /* the token array could not grow */
#define JSON_ESYNTAX (-2)   /* not JSON: a bad character, a missing comma or colon, ... */
#define JSON_EDEPTH (-3)    /* nesting deeper than JSON_DEPTH_MAX */
#define JSON_ETRAILING (-4) /* something other than white space after the value */
#define JSON_ESTRING (-5)   /* a control character or a bad escape in a string */
#define JSON_ETOOBIG (-6)   /* a text of 2^32 bytes or more */

typedef enum json_type {
  JSON_NULL,
  JSON_FALSE,
  JSON_TRUE,
  JSON_NUMBER,
  JSON_STRING,
  JSON_ARRAY,
  JSON_OBJECT
} json_type;

typedef struct json_token {
  json_type type; /* what the value is */
  uint32_t start; /* its first byte in the text (a string's: after the opening quote) */
  uint32_t end;   /* one past its last byte (a string's: the closing quote) */
  uint32_t count; /* arrays: elements; objects: members (a member is a key token, then its
                     value's tokens); 0 for the others */
  uint32_t next;  /* the token after this value and everything inside it */
} json_token;

typedef struct json_doc {
  const char *text; /* the parsed text: borrowed, must outlive the doc */
  json_token *tok;  /* tok[0] is the root value; owned, freed by json_free */
  size_t ntok;      /* tokens in tok */
  size_t cap;       /* tokens allocated */
} json_doc;

/* Parses text[0..len) (no NUL needed). 0, or a JSON_E* code with doc left empty. Never blocks. */
int json_parse(json_doc *doc, const char *text, size_t len);
void json_free(json_doc *doc);
const char *json_strerror(int err);

/* The value of member key of object token obj, JSON_NONE if obj is not an object or has no such
 * member (the first one if there are several). */
size_t json_get(const json_doc *doc, size_t obj, const char *key);
/* The first element (array) or first member's key (object) of token i, or JSON_NONE. */
size_t json_first(const json_doc *doc, size_t i);
/* The element after element e of container c, JSON_NONE at the end. For objects, pass and get a
 * key token: the member's value is key + 1. */
size_t json_next(const json_doc *doc, size_t c, size_t e);
/* A number token without fraction or exponent that fits int64_t: true and *out. */
bool json_int(const json_doc *doc, size_t i, int64_t *out);
/* A string token decoded (escapes, \u with surrogate pairs to UTF-8) into buf, NUL-terminated,
 * truncated to cap - 1 bytes: its full decoded length, or -1 if i is not a string. */
long json_string(const json_doc *doc, size_t i, char *buf, size_t cap);
/* Whether token i is a string equal (decoded) to s. */
bool json_streq(const json_doc *doc, size_t i, const char *s);

#endif
