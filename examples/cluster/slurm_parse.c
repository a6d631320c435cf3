/* Reading Slurm's answers (slurm_parse.h) and mapping a finished job to a loss reason. The
 * mapping is the table of docs/slurm.md; keep the two together. `squeue --json` is parsed by
 * Jansson; what is done here is bounding what is read from its tree.
 */
#include "slurm_parse.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the UTF-8 sequence at s[0..n) (1 to 4), or 0 where it is none that Jansson takes
 * (RFC 3629, as its utf8_check_first and utf8_check_full): a stray continuation byte, an overlong
 * form, a surrogate, a code point past U+10FFFF, or a sequence cut by the end. */
static size_t utf8_seq_len(const unsigned char *s, size_t n) {
  unsigned char c = s[0];
  size_t k;
  uint32_t cp;
  if (c < 0x80)
    return 1;
  if (c >= 0xC2 && c <= 0xDF) {
    k = 2;
    cp = c & 0x1Fu;
  } else if (c >= 0xE0 && c <= 0xEF) {
    k = 3;
    cp = c & 0x0Fu;
  } else if (c >= 0xF0 && c <= 0xF4) {
    k = 4;
    cp = c & 0x07u;
  } else {
    return 0;
  }
  if (n < k)
    return 0;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80)
      return 0;
    cp = cp << 6 | (s[i] & 0x3Fu);
  }
  if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || cp > 0x10FFFF ||
      (cp >= 0xD800 && cp <= 0xDFFF))
    return 0;
  return k;
}

/* The length of what text[i..len) starts with that Jansson reads as it is: a UTF-8 sequence
 * other than a NUL; 0 for a byte to repair. */
static size_t kept_len(const unsigned char *s, size_t i, size_t len) {
  if (s[i] >= 0x80)
    return utf8_seq_len(s + i, len - i);
  return s[i] != '\0';
}

/* The offset of the first byte of text[0..len) to repair, len if none. Every byte of up to 64
 * MiB passes here, most of them ASCII: those take the short way. */
static size_t first_to_repair(const char *text, size_t len) {
  const unsigned char *s = (const unsigned char *)text;
  size_t i = 0;
  while (i < len) {
    if (s[i] - 1u < 0x7Fu) { /* 0x01 to 0x7F */
      i++;
      continue;
    }
    size_t k = kept_len(s, i, len);
    if (k == 0)
      return i;
    i += k;
  }
  return len;
}

/* A copy of text[0..len) repaired from offset bad on (same length); NULL when it cannot be
 * allocated. Two kinds of byte are repaired, so that Jansson reads the document as a strict
 * reader would:
 *  - A byte that starts no UTF-8 sequence becomes '?'. Jansson refuses a whole document for one
 *    such byte, and squeue lists every job of the cluster: one foreign job named in Latin-1 must
 *    not blind the poll. Outside a string a '?' is still a syntax error.
 *  - A NUL becomes \x01. Jansson 2.14 drops a NUL that follows a number or a literal (it puts
 *    the byte back into a NUL-terminated buffer), reading `[1\0]` as `[1]`; a \x01, like a NUL,
 *    is refused wherever it stands (a control character in a string, a bad token outside). */
static char *repaired_copy(const char *text, size_t len, size_t bad) {
  unsigned char *s = malloc(len);
  if (s == NULL)
    return NULL;
  memcpy(s, text, len);
  size_t i = bad;
  while (i < len) {
    size_t k = kept_len(s, i, len);
    if (k == 0) {
      s[i] = s[i] == '\0' ? 0x01 : '?';
      k = 1;
    }
    i += k;
  }
  return (char *)s;
}

/* A JSON_E* code for Jansson's error. */
static int from_jansson(const json_error_t *err) {
  /* Jansson gives every syntax error one code; the messages of its string lexer
   * (lex_scan_string) tell a bad string from the rest. Should a later Jansson word them
   * otherwise, such a text is still refused, as JSON_ESYNTAX. */
  static const char *const bad_string[] = {"control character", "unexpected newline",
                                           "invalid escape", "invalid Unicode"};
  switch (json_error_code(err)) {
  case json_error_unknown:
    /* Jansson returns NULL with no message only where an allocation failed. */
    return err->text[0] == '\0' ? JSON_ENOMEM : JSON_ESYNTAX;
  case json_error_out_of_memory:
    return JSON_ENOMEM;
  case json_error_stack_overflow:
    return JSON_EDEPTH;
  case json_error_end_of_input_expected:
    return JSON_ETRAILING;
  case json_error_invalid_utf8:
  case json_error_null_character:
  case json_error_null_byte_in_key:
    return JSON_ESTRING;
  case json_error_duplicate_key:
    return JSON_EDUPLICATE;
  case json_error_numeric_overflow:
    return JSON_ERANGE;
  case json_error_invalid_syntax:
    for (size_t i = 0; i < sizeof bad_string / sizeof bad_string[0]; i++)
      if (strncmp(err->text, bad_string[i], strlen(bad_string[i])) == 0)
        return JSON_ESTRING;
    return JSON_ESYNTAX;
  default: /* premature_end_of_input, and codes Jansson's parser does not give */
    return JSON_ESYNTAX;
  }
}

/* Whether no container in v nests deeper than JSON_DEPTH_MAX (v itself at depth), recursing no
 * deeper than that. Jansson's own bound, JSON_PARSER_MAX_DEPTH, is 2,048; Slurm's answers nest
 * 8 deep, and slurm_parse.h promises the tighter bound. */
static bool depth_within(json_t *v, int depth) {
  size_t i;
  json_t *e;
  const char *key;
  if (json_is_array(v)) {
    if (depth >= JSON_DEPTH_MAX)
      return false;
    json_array_foreach(v, i, e) {
      if (!depth_within(e, depth + 1))
        return false;
    }
  } else if (json_is_object(v)) {
    if (depth >= JSON_DEPTH_MAX)
      return false;
    json_object_foreach(v, key, e) {
      if (!depth_within(e, depth + 1))
        return false;
    }
  }
  return true;
}

/* Parses text[0..len) into *root (owned by the caller, json_decref): 0 or a JSON_E* code. Any
 * value is taken as the root (JSON_DECODE_ANY: the caller says what else it wants); a key twice
 * in one object is refused rather than one of its values guessed (JSON_REJECT_DUPLICATES); a
 * \u0000 in a string value is kept (JSON_ALLOW_NUL): copy_string reads it as the string's end. */
static int parse_document(const char *text, size_t len, json_t **root) {
  *root = NULL;
  if (len >= UINT32_MAX)
    return JSON_ETOOBIG;
  if (text == NULL || len == 0)
    return JSON_ESYNTAX; /* as Jansson says of an empty text */
  char *repaired = NULL;
  size_t bad = first_to_repair(text, len);
  if (bad < len) {
    repaired = repaired_copy(text, len, bad);
    if (repaired == NULL)
      return JSON_ENOMEM;
    text = repaired;
  }
  json_error_t err;
  memset(&err, 0, sizeof err); /* json_error_code reads a byte Jansson sets only on error */
  *root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &err);
  free(repaired);
  if (*root == NULL)
    return from_jansson(&err);
  if (!depth_within(*root, 0)) {
    json_decref(*root);
    *root = NULL;
    return JSON_EDEPTH;
  }
  return 0;
}

/* An integer: a JSON number without fraction or exponent (Jansson's integers are int64_t; one
 * beyond it was refused with the document). */
static bool get_int(const json_t *v, int64_t *out) {
  if (!json_is_integer(v))
    return false;
  *out = (int64_t)json_integer_value(v);
  return true;
}

/* Reads an integer that later layouts wrap as {"set": true, "number": N}. */
static bool int_or_number(const json_t *v, int64_t *out) {
  if (json_is_object(v)) {
    const json_t *set = json_object_get(v, "set");
    if (set != NULL && !json_is_true(set))
      return false;
    return get_int(json_object_get(v, "number"), out);
  }
  return get_int(v, out);
}

/* Copies string v into buf, NUL-terminated, truncated to cap - 1 bytes (a \u0000 inside ends it
 * for every reader of buf); buf is left "" if v is not a string. */
static void copy_string(const json_t *v, char *buf, size_t cap) {
  buf[0] = '\0';
  if (!json_is_string(v))
    return;
  size_t n = json_string_length(v);
  if (n > cap - 1)
    n = cap - 1;
  memcpy(buf, json_string_value(v), n);
  buf[n] = '\0';
}

/* A string, or the first string of an array of them (job_state became a list of flags). */
static void string_or_first(const json_t *v, char *buf, size_t cap) {
  if (json_is_array(v))
    v = json_array_get(v, 0);
  copy_string(v, buf, cap);
}

static void read_exit_code(const json_t *v, slurm_job *j) {
  int64_t n;
  if (json_is_number(v)) {
    /* v0.0.38 (22.05): the raw wait status, as waitpid gives it. */
    if (!get_int(v, &n) || n < 0)
      return;
    j->has_exit = true;
    j->exit_status = (int)((n >> 8) & 0xff);
    j->signal = (int)(n & 0x7f);
    return;
  }
  if (!json_is_object(v))
    return;
  /* Later layouts: {"status": ..., "return_code": N or {number}, "signal": {"signal_id": N}}. */
  if (int_or_number(json_object_get(v, "return_code"), &n)) {
    j->has_exit = true;
    j->exit_status = (int)(n & 0xff);
  }
  const json_t *sig = json_object_get(v, "signal");
  if (int_or_number(json_object_get(sig, "signal_id"), &n) && n > 0 && n < 128) {
    j->has_exit = true;
    j->signal = (int)n;
  }
}

int slurm_parse_squeue_json(const char *text, size_t len, void (*job)(void *ud, const slurm_job *j),
                            void *ud) {
  json_t *root;
  int rc = parse_document(text, len, &root);
  if (rc < 0)
    return rc;
  json_t *jobs = json_object_get(root, "jobs");
  if (!json_is_array(jobs)) {
    json_decref(root);
    return JSON_ESYNTAX;
  }
  size_t i;
  json_t *e;
  json_array_foreach(jobs, i, e) {
    int64_t id;
    if (!json_is_object(e) || !int_or_number(json_object_get(e, "job_id"), &id) || id <= 0)
      continue; /* not a job we could ever have started */
    slurm_job j;
    memset(&j, 0, sizeof j);
    j.job_id = (uint64_t)id;
    string_or_first(json_object_get(e, "job_state"), j.state, sizeof j.state);
    string_or_first(json_object_get(e, "state_reason"), j.reason, sizeof j.reason);
    string_or_first(json_object_get(e, "name"), j.name, sizeof j.name);
    read_exit_code(json_object_get(e, "exit_code"), &j);
    job(ud, &j);
  }
  json_decref(root);
  return 0;
}

/* The value of " KEY=" (or KEY= at the start) in line[0..len), up to the next space, copied into
 * buf; false if absent. */
static bool kv(const char *line, size_t len, const char *key, char *buf, size_t cap) {
  size_t kl = strlen(key);
  for (size_t i = 0; i + kl + 1 <= len; i++) {
    if ((i == 0 || line[i - 1] == ' ' || line[i - 1] == '\n') && memcmp(line + i, key, kl) == 0 &&
        line[i + kl] == '=') {
      size_t s = i + kl + 1, e = s;
      while (e < len && line[e] != ' ' && line[e] != '\n')
        e++;
      size_t n = e - s < cap - 1 ? e - s : cap - 1;
      memcpy(buf, line + s, n);
      buf[n] = '\0';
      return true;
    }
  }
  return false;
}

int slurm_parse_scontrol(const char *text, size_t len, slurm_job *j) {
  memset(j, 0, sizeof *j);
  static const char unknown[] = "Invalid job id specified";
  for (size_t i = 0; i + sizeof unknown - 1 <= len; i++)
    if (memcmp(text + i, unknown, sizeof unknown - 1) == 0)
      return 1;
  char v[64];
  char *end;
  if (!kv(text, len, "JobId", v, sizeof v))
    return -1;
  unsigned long long id = strtoull(v, &end, 10);
  if (end == v || *end != '\0' || id == 0)
    return -1;
  j->job_id = id;
  if (!kv(text, len, "JobState", j->state, sizeof j->state))
    return -1;
  (void)kv(text, len, "Reason", j->reason, sizeof j->reason);
  (void)kv(text, len, "JobName", j->name, sizeof j->name);
  if (kv(text, len, "ExitCode", v, sizeof v)) {
    /* STATUS:SIGNAL */
    long st = strtol(v, &end, 10);
    if (end != v && *end == ':') {
      char *sig = end + 1;
      long sg = strtol(sig, &end, 10);
      if (end != sig && *end == '\0' && st >= 0 && st <= 255 && sg >= 0 && sg < 128) {
        j->has_exit = true;
        j->exit_status = (int)st;
        j->signal = (int)sg;
      }
    }
  }
  return 0;
}

bool slurm_state_is_final(const char *state) {
  static const char *const final[] = {"COMPLETED", "FAILED",        "CANCELLED",
                                      "TIMEOUT",   "OUT_OF_MEMORY", "NODE_FAIL",
                                      "PREEMPTED", "BOOT_FAIL",     "DEADLINE"};
  for (size_t i = 0; i < sizeof final / sizeof final[0]; i++)
    if (strcmp(state, final[i]) == 0)
      return true;
  return false;
}

void slurm_end_of(const slurm_job *j, bool requested, launcher_end *end, char *reason_buf,
                  size_t cap) {
  const char *st = j->state;
  end->requested = requested;
  end->exit_code = j->signal ? 128 + j->signal : j->exit_status;
  end->reason = reason_buf;
  if (requested) {
    /* Whatever Slurm says, the driver asked for this end: never the app's. */
    end->kind = TL_LOSS_KILLED;
    end->caused_by_app = false;
    snprintf(reason_buf, cap, "%s (cancelled by the driver)", st);
  } else if (strcmp(st, "COMPLETED") == 0 || strcmp(st, "FAILED") == 0) {
    if (!j->has_exit || (j->exit_status == 0 && j->signal == 0 && strcmp(st, "FAILED") == 0)) {
      /* FAILED with no code: Slurm could not run it at all (a launch failure). */
      end->kind = TL_LOSS_PROCESS_LOST;
      end->caused_by_app = false;
      snprintf(reason_buf, cap, "%s (%s), no exit code", st, j->reason);
    } else {
      end->kind = TL_LOSS_EXITED;
      end->caused_by_app = end->exit_code != 0;
      if (j->signal)
        snprintf(reason_buf, cap, "%s: killed by signal %d", st, j->signal);
      else
        snprintf(reason_buf, cap, "%s: exited %d", st, j->exit_status);
    }
  } else if (strcmp(st, "OUT_OF_MEMORY") == 0) {
    /* The executor's tasks used more memory than the job was given: the app's doing. Its exit
     * code is 137 (SIGKILL, what the OOM killer sends) whatever Slurm records: Slurm marks an
     * OOM end with its own SIG_OOM (253), shown as signal 125 (ExitCode=0:125), which is no
     * signal the executor got. */
    end->kind = TL_LOSS_EXITED;
    end->caused_by_app = true;
    end->exit_code = 128 + 9;
    snprintf(reason_buf, cap, "OUT_OF_MEMORY");
  } else {
    /* CANCELLED by someone else, TIMEOUT (the allocation's time limit, which is the
     * submitter's choice, not a task's fault), NODE_FAIL, PREEMPTED, BOOT_FAIL, DEADLINE: the
     * executor went for a reason outside the app. */
    end->kind = TL_LOSS_PROCESS_LOST;
    end->caused_by_app = false;
    if (strcmp(st, "CANCELLED") == 0)
      snprintf(reason_buf, cap, "CANCELLED (not by the driver)");
    else
      snprintf(reason_buf, cap, "%s", st);
  }
}
