/* sim_trace_write: a tl-sim run's record as Chrome Trace Event JSON (the "JSON Object Format"),
 * which Perfetto (ui.perfetto.dev) and chrome://tracing open. One process per executor (pid =
 * its index + 1) with one thread per core (tid = the core), a complete event per attempt
 * coloured by its outcome (its args name the addresses it held beyond cores, "gpu": "0,2"; a
 * GPU executor's process is labelled "gpu x4"), instant events for marks, and counters for the
 * ledger's sizes on a "ledger" process (pid 0), which also carries the marks about no
 * executor. */
#include "record.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>

/* Colours from the trace viewer's reserved palette ("cname"), by sim_outcome. */
static const char *const outcome_cname[SIM_OUT_COUNT] = {
    "good",     /* success */
    "bad",      /* failed */
    "terrible", /* fetch failed */
    "grey",     /* killed */
    "black",    /* lost */
    "olive",    /* zombie success */
};

/* Writes s as a JSON string, quotes included. */
static void json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"':
      fputs("\\\"", f);
      break;
    case '\\':
      fputs("\\\\", f);
      break;
    case '\n':
      fputs("\\n", f);
      break;
    case '\r':
      fputs("\\r", f);
      break;
    case '\t':
      fputs("\\t", f);
      break;
    default:
      if (*p < 0x20 || *p == 0x7f)
        fprintf(f, "\\u%04x", *p);
      else
        fputc(*p, f);
    }
  }
  fputc('"', f);
}

/* Microseconds, the format's unit, with the nanoseconds kept as three decimals. */
static void json_us(FILE *f, uint64_t ns) {
  fprintf(f, "%" PRIu64 ".%03" PRIu64, ns / 1000, ns % 1000);
}

int sim_trace_write(const sim_record *r, FILE *f) {
  const char *sep = "\n";
  fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"generator\":\"tl-sim\"},\"traceEvents\":[",
        f);
  /* The ledger's process: counters and marks about no executor. */
  fprintf(f,
          "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
          "\"args\":{\"name\":\"ledger\"}}",
          sep);
  sep = ",\n";
  fprintf(f,
          "%s{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
          "\"args\":{\"sort_index\":0}}",
          sep);
  fprintf(f,
          "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
          "\"args\":{\"name\":\"DAG layer\"}}",
          sep);
  for (size_t i = 0; i < r->nexecs; i++) {
    const sim_exec *e = &r->execs[i];
    char name[3 * SIM_NAME_MAX + 8];
    if (e->rack[0])
      snprintf(name, sizeof name, "%s (%s, %s)", e->id, e->host, e->rack);
    else
      snprintf(name, sizeof name, "%s (%s)", e->id, e->host);
    fprintf(f,
            "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%zu,\"tid\":0,\"args\":{\"name\":",
            sep, i + 1);
    json_string(f, name);
    fputs("}}", f);
    fprintf(f,
            "%s{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%zu,\"tid\":0,"
            "\"args\":{\"sort_index\":%zu}}",
            sep, i + 1, i + 1);
    if (e->resource[0] && e->naddresses) {
      /* Perfetto shows a process's labels beside its name: "gpu x4". */
      char label[SIM_RES_NAME_MAX + 16];
      snprintf(label, sizeof label, "%s x%" PRIu32, e->resource, e->naddresses);
      fprintf(f,
              "%s{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":%zu,\"tid\":0,"
              "\"args\":{\"labels\":",
              sep, i + 1);
      json_string(f, label);
      fputs("}}", f);
    }
    for (uint32_t c = 0; c < e->cores; c++)
      fprintf(f,
              "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%zu,\"tid\":%" PRIu32
              ",\"args\":{\"name\":\"core %" PRIu32 "\"}}",
              sep, i + 1, c, c);
  }
  for (size_t i = 0; i < r->nslices; i++) {
    const sim_slice *s = &r->slices[i];
    unsigned o = s->outcome < SIM_OUT_COUNT ? s->outcome : SIM_OUT_FAILED;
    fprintf(f,
            "%s{\"name\":\"stage %" PRIu32 ".%" PRIu32 " task %" PRIu32 "\",\"cat\":\"%s\","
            "\"ph\":\"X\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":",
            sep, s->stage_id, s->stage_attempt, s->index, sim_outcome_name((sim_outcome)o),
            s->exec + 1, s->core);
    json_us(f, s->start_ns);
    fputs(",\"dur\":", f);
    json_us(f, s->end_ns - s->start_ns);
    fprintf(f,
            ",\"cname\":\"%s\",\"args\":{\"outcome\":\"%s\",\"tid\":%" PRIu64 ",\"job\":%" PRIu32
            ",\"stage\":%" PRIu32 ",\"stage_attempt\":%" PRIu32 ",\"index\":%" PRIu32
            ",\"attempt\":%" PRIu32 ",\"speculative\":%s",
            outcome_cname[o], sim_outcome_name((sim_outcome)o), s->tid, s->job, s->stage_id,
            s->stage_attempt, s->index, s->attempt, s->speculative ? "true" : "false");
    if (s->resource[0]) {
      /* The addresses it held beyond cores: "gpu":"0,2", and "gpu_share":"1/4" for a share. */
      char key[SIM_RES_NAME_MAX + 8];
      fputc(',', f);
      json_string(f, s->resource);
      fputc(':', f);
      json_string(f, s->addresses);
      if (s->share > 1) {
        snprintf(key, sizeof key, "%s_share", s->resource);
        fputc(',', f);
        json_string(f, key);
        fprintf(f, ":\"1/%u\"", (unsigned)s->share);
      }
    }
    fputs("}}", f);
  }
  for (size_t i = 0; i < r->nmarks; i++) {
    const sim_mark *mk = &r->marks[i];
    bool global = mk->exec == SIM_NO_EXEC || mk->exec >= r->nexecs;
    fprintf(f, "%s{\"name\":", sep);
    json_string(f, sim_mark_name((sim_mark_kind)mk->kind));
    fprintf(f, ",\"cat\":\"mark\",\"ph\":\"i\",\"s\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":0,\"ts\":",
            global ? "g" : "p", global ? 0 : mk->exec + 1);
    json_us(f, mk->t_ns);
    fputs(",\"args\":{\"text\":", f);
    json_string(f, mk->text);
    fputs("}}", f);
  }
  for (size_t i = 0; i < r->nsamples; i++) {
    const sim_sample *s = &r->samples[i];
    fprintf(f, "%s{\"name\":\"attempts\",\"ph\":\"C\",\"pid\":0,\"tid\":0,\"ts\":", sep);
    json_us(f, s->t_ns);
    fprintf(f, ",\"args\":{\"running\":%" PRIu32 ",\"frozen\":%" PRIu32 "}}", s->attempts_running,
            s->attempts_frozen);
    fprintf(f, "%s{\"name\":\"task sets\",\"ph\":\"C\",\"pid\":0,\"tid\":0,\"ts\":", sep);
    json_us(f, s->t_ns);
    fprintf(f, ",\"args\":{\"active\":%" PRIu32 ",\"zombie\":%" PRIu32 "}}", s->tasksets_active,
            s->tasksets_zombie);
    fprintf(f, "%s{\"name\":\"executors\",\"ph\":\"C\",\"pid\":0,\"tid\":0,\"ts\":", sep);
    json_us(f, s->t_ns);
    fprintf(f, ",\"args\":{\"alive\":%" PRIu32 ",\"pending_loss\":%" PRIu32 "}}",
            s->executors_alive, s->executors_pending_loss);
    fprintf(f, "%s{\"name\":\"tasks pending\",\"ph\":\"C\",\"pid\":0,\"tid\":0,\"ts\":", sep);
    json_us(f, s->t_ns);
    fprintf(f, ",\"args\":{\"pending\":%" PRIu32 "}}", s->tasks_pending);
  }
  fputs("\n]}\n", f);
  if (ferror(f)) {
    if (errno == 0)
      errno = EIO;
    return -1;
  }
  return 0;
}
