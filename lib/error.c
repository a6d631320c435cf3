/* The error table: TL_ERRNO_MAP in taskledger.h generates the codes, their names and their
 * sentences, so the three can never disagree. Also the version functions. */
#include "internal.h"

const char *tl_err_name(int err) {
  switch (err) {
  case TL_OK:
    return "OK";
#define TL__NAME_CASE(name, value, sentence)                                                       \
  case TL_##name:                                                                                  \
    return #name;
    TL_ERRNO_MAP(TL__NAME_CASE)
#undef TL__NAME_CASE
  default:
    return "UNKNOWN";
  }
}

const char *tl_strerror(int err) {
  switch (err) {
  case TL_OK:
    return "Success.";
#define TL__SENTENCE_CASE(name, value, sentence)                                                   \
  case TL_##name:                                                                                  \
    return sentence;
    TL_ERRNO_MAP(TL__SENTENCE_CASE)
#undef TL__SENTENCE_CASE
  default:
    return "Unknown error.";
  }
}

#define TL__STR(x) #x
#define TL__XSTR(x) TL__STR(x)

unsigned int tl_version(void) { return TL_VERSION_HEX; }

const char *tl_version_string(void) {
  return TL__XSTR(TL_VERSION_MAJOR) "." TL__XSTR(TL_VERSION_MINOR) "." TL__XSTR(TL_VERSION_PATCH);
}
