/* The name tables: TL_ERRNO_MAP in taskledger.h generates the codes, their names and their
 * sentences, so the three can never disagree; the enums' maps (TL_END_KIND_MAP and the others)
 * generate each enum and its names the same way. Also the version functions. */
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

#define TL__NAME_FN(fn, type, map, prefix)                                                         \
  const char *fn(type value) {                                                                     \
    switch ((int)value) { map(TL__ENUM_NAME_CASE_##prefix) default : return "UNKNOWN"; }           \
  }

#define TL__ENUM_NAME_CASE_END(name, value)                                                        \
  case TL_END_##name:                                                                              \
    return #name;
#define TL__ENUM_NAME_CASE_LOSS(name, value)                                                       \
  case TL_LOSS_##name:                                                                             \
    return #name;
#define TL__ENUM_NAME_CASE_LOC(name, value)                                                        \
  case TL_##name:                                                                                  \
    return #name;
#define TL__ENUM_NAME_CASE_TASK(name, value)                                                       \
  case TL_TASK_##name:                                                                             \
    return #name;
#define TL__ENUM_NAME_CASE_EXECUTOR(name, value)                                                   \
  case TL_EXECUTOR_##name:                                                                         \
    return #name;

TL__NAME_FN(tl_end_kind_name, tl_end_kind, TL_END_KIND_MAP, END)
TL__NAME_FN(tl_loss_kind_name, tl_loss_kind, TL_LOSS_KIND_MAP, LOSS)
TL__NAME_FN(tl_locality_name, tl_locality, TL_LOCALITY_MAP, LOC)
TL__NAME_FN(tl_task_state_name, tl_task_state, TL_TASK_STATE_MAP, TASK)
TL__NAME_FN(tl_executor_state_name, tl_executor_state, TL_EXECUTOR_STATE_MAP, EXECUTOR)

#define TL__STR(x) #x
#define TL__XSTR(x) TL__STR(x)

unsigned int tl_version(void) { return TL_VERSION_HEX; }

const char *tl_version_string(void) {
  return TL__XSTR(TL_VERSION_MAJOR) "." TL__XSTR(TL_VERSION_MINOR) "." TL__XSTR(TL_VERSION_PATCH);
}
