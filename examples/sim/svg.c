/* A tl-sim run's record as one self-contained SVG (docs/sim-svg.md): on top, the ledger's map
 * sizes over virtual time in two panels (the second holds what must drain to zero: zombie task
 * sets, frozen attempts, executors pending loss); below, one lane per executor with a row per
 * core, each attempt a rectangle coloured by its outcome, and the losses marked on their lanes.
 * Everything is inline (no script, font, image or style sheet) and every text is escaped.
 *
 * Scaling rules, so that the file stays a few MB:
 * - Up to DETAIL_MAX_SLICES attempts, each is its own <rect> with a tooltip. Beyond that, each
 *   row is summarised per pixel column: the column takes the colour of the outcome that held it
 *   longest (any outcome but success counting SUMMARY_WEIGHT times, so that failures and losses
 *   stay visible), its opacity says how busy the row was in it (three levels), and equal
 *   neighbouring columns merge into one path segment; one <path> per colour and level.
 * - At most MAX_LANES executors and MAX_ROWS rows are drawn, MAX_LANE_ROWS per executor; the
 *   executors with a loss mark are chosen first, then the others in the order they joined. The
 *   picture says what it left out.
 * - Step lines with more than two samples per pixel column are drawn per column (the level
 *   entering it, its minimum, maximum and last value), which keeps every peak and the last value.
 * - Marks of one kind on one lane that fall in the same pixel column are drawn once, the tooltip
 *   saying how many there were. */
#include "record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define SVG_W 1300              /* the picture's width, px */
#define PLOT_X 170              /* the plot area's left edge: lane labels and y axes left of it */
#define PLOT_W 900              /* the plot area's width, px: also the summary's columns */
#define PANEL_A_H 110           /* the sizes panel's height */
#define PANEL_B_H 80            /* the must-drain panel's height */
#define LANE_GAP 6              /* between two executors' lanes */
#define LANES_H 560             /* the height the lanes aim at, rows permitting */
#define DETAIL_MAX_SLICES 20000 /* more attempts than this: per-column summaries */
#define SUMMARY_WEIGHT 3        /* how much more a column counts a non-success outcome */
#define MAX_LANES 64            /* executors drawn at most */
#define MAX_ROWS 256            /* rows (cores) drawn at most, all lanes together */
#define MAX_LANE_ROWS 64        /* rows drawn at most for one executor */
#define MAX_GUIDES 20           /* vertical guides for stage failures and releases, of each kind */
#define LABEL_CHARS 22          /* a lane label's length; the tooltip has the whole id */
#define CHAR_W 6.4              /* the estimated width of a character at font-size 11 */

/* Colours (Okabe and Ito's palette, told apart by colour-blind readers). */
static const char *const outcome_colour[SIM_OUT_COUNT] = {
    "#009E73", /* success */
    "#D55E00", /* failed */
    "#E69F00", /* fetch failed */
    "#9A9A9A", /* killed */
    "#1A1A1A", /* lost */
    "#B0307A", /* zombie success */
};

/* The step lines: which panel, how drawn; series_value reads each from a sample. */
typedef struct series {
  const char *id;     /* its element is "series-<id>" */
  const char *label;  /* the legend's text */
  const char *colour; /* its stroke */
  double width;       /* its stroke's width */
  int panel;          /* 0: the sizes panel, 1: the must-drain panel */
} series;

enum { S_RUNNING, S_ACTIVE, S_FROZEN, S_PENDING_LOSS, S_ZOMBIE, S_COUNT };

static const series all_series[S_COUNT] = {
    {"attempts-running", "attempts running", "#0072B2", 1.6, 0},
    {"tasksets-active", "task sets active", "#009E73", 1.6, 0},
    {"attempts-frozen", "attempts frozen", "#56B4E9", 2.0, 1},
    {"executors-pending-loss", "executors pending loss", "#E69F00", 2.0, 1},
    {"tasksets-zombie", "task sets zombie", "#B0307A", 3.0, 1},
};

static uint32_t series_value(const sim_sample *s, int which) {
  switch (which) {
  case S_RUNNING:
    return s->attempts_running;
  case S_ACTIVE:
    return s->tasksets_active;
  case S_FROZEN:
    return s->attempts_frozen;
  case S_PENDING_LOSS:
    return s->executors_pending_loss;
  default:
    return s->tasksets_zombie;
  }
}

/* A growable string, for the summary's paths (built for all rows before they are written). */
typedef struct sbuf {
  char *p;    /* NULL until the first append */
  size_t n;   /* bytes used, the NUL not counted */
  size_t cap; /* bytes allocated */
} sbuf;

static int sbuf_printf(sbuf *b, const char *fmt, ...) {
  for (;;) {
    size_t room = b->cap - b->n;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p ? b->p + b->n : NULL, room, fmt, ap);
    va_end(ap);
    if (k < 0)
      return -1;
    if ((size_t)k < room) {
      b->n += (size_t)k;
      return 0;
    }
    size_t cap = b->cap ? 2 * b->cap : 4096;
    while (cap < b->n + (size_t)k + 1)
      cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
      return -1;
    b->p = p;
    b->cap = cap;
  }
}

/* Everything the layout decides before the first byte is written. */
typedef struct svg {
  FILE *f;
  const sim_record *r;
  uint64_t t_end;                  /* the time at the plot's right edge, > 0 */
  uint64_t tick;                   /* the time between two ticks of the time axis */
  int32_t *lane_of;                /* per executor: its lane's ordinal, or -1 when not drawn */
  uint32_t *row_base;              /* per executor: its first row's index among the drawn rows */
  uint32_t *lane_rows;             /* per executor: its rows drawn (0 when not drawn) */
  int *row_y;                      /* per drawn row: its top */
  size_t nlanes;                   /* executors drawn */
  size_t nrows;                    /* rows drawn, all lanes */
  int rh;                          /* a row's height */
  int rows_cut;                    /* 1: some executor had more cores than MAX_LANE_ROWS */
  size_t slices_hidden;            /* attempts on rows not drawn */
  int summary;                     /* 1: per-column summaries instead of one rect per attempt */
  size_t outcome_n[SIM_OUT_COUNT]; /* attempts of each outcome */
  size_t mark_n[SIM_MARK_COUNT];   /* marks of each kind that are drawn */
  size_t strip_marks;              /* marks drawn on the stages-and-jobs strip */
  uint32_t peak[S_COUNT];          /* each series' largest value */
  int y_a, y_b;                    /* the panels' tops */
  int y_strip;                     /* the strip's top (no strip: unused) */
  int y_legend;                    /* the legend's first line */
  int legend_lines;                /* its lines */
  int y_lanes;                     /* the first lane's top */
  int y_lanes_end;                 /* below the last lane */
  int height;                      /* the picture's height */
} svg;

/* ---- Text ---------------------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at p (n bytes left) that XML allows, or 0. */
static size_t utf8_len(const unsigned char *p, size_t n) {
  unsigned c = p[0];
  unsigned lo = 0x80, hi = 0xBF;
  size_t len;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    lo = c == 0xE0 ? 0xA0 : lo; /* no overlong forms */
    hi = c == 0xED ? 0x9F : hi; /* no surrogates */
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    lo = c == 0xF0 ? 0x90 : lo;
    hi = c == 0xF4 ? 0x8F : hi; /* nothing above U+10FFFF */
  } else {
    return 0;
  }
  if (len > n || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t k = 2; k < len; k++)
    if (p[k] < 0x80 || p[k] > 0xBF)
      return 0;
  if (c == 0xEF && p[1] == 0xBF && p[2] >= 0xBE) /* U+FFFE and U+FFFF are not characters */
    return 0;
  return len;
}

/* Writes s as XML text or attribute value, at most max_chars characters (then "..."): the five
 * special characters as entities; bytes that are not UTF-8, and the control characters XML 1.0
 * forbids, as '?'. */
static void put_text_cut(FILE *f, const char *s, size_t max_chars) {
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s), chars = 0;
  for (size_t i = 0; i < n; chars++) {
    if (chars == max_chars) {
      fputs("...", f);
      return;
    }
    unsigned c = p[i];
    if (c >= 0x80) {
      size_t len = utf8_len(p + i, n - i);
      if (len == 0) {
        fputc('?', f);
        i++;
      } else {
        fwrite(p + i, 1, len, f);
        i += len;
      }
      continue;
    }
    switch (c) {
    case '&':
      fputs("&amp;", f);
      break;
    case '<':
      fputs("&lt;", f);
      break;
    case '>':
      fputs("&gt;", f);
      break;
    case '"':
      fputs("&quot;", f);
      break;
    case '\'':
      fputs("&apos;", f);
      break;
    default:
      fputc(c < 0x20 && c != '\t' && c != '\n' && c != '\r' ? '?' : (int)c, f);
    }
    i++;
  }
}

static void put_text(FILE *f, const char *s) { put_text_cut(f, s, SIZE_MAX); }

/* A moment for a title or tooltip, to the microsecond at most: "250 ns", "1.5 ms", "3.25 s". */
static void fmt_time(char *buf, size_t n, uint64_t t) {
  const char *unit = "s";
  double v = (double)t / 1e9;
  if (t < 1000) {
    snprintf(buf, n, "%" PRIu64 " ns", t);
    return;
  }
  if (t < 1000000) {
    unit = "\xc2\xb5s";
    v = (double)t / 1e3;
  } else if (t < 1000000000) {
    unit = "ms";
    v = (double)t / 1e6;
  }
  int len = snprintf(buf, n, "%.3f", v);
  while (len > 0 && (size_t)len < n && buf[len - 1] == '0')
    buf[--len] = '\0';
  if (len > 0 && (size_t)len < n && buf[len - 1] == '.')
    buf[--len] = '\0';
  snprintf(buf + len, n - (size_t)len, " %s", unit);
}

/* A tick's label, in the largest unit that divides the step: "500 ms", "2 s", "5 min". */
static void fmt_tick(char *buf, size_t n, uint64_t t, uint64_t step) {
  static const struct {
    uint64_t ns;
    const char *name;
  } units[] = {{3600000000000ull, "h"}, {60000000000ull, "min"}, {1000000000, "s"},
               {1000000, "ms"},         {1000, "\xc2\xb5s"},     {1, "ns"}};
  size_t u = 0;
  while (units[u].ns > 1 && step % units[u].ns != 0)
    u++;
  if (t % units[u].ns == 0)
    snprintf(buf, n, "%" PRIu64 " %s", t / units[u].ns, units[u].name);
  else
    snprintf(buf, n, "%.1f %s", (double)t / (double)units[u].ns, units[u].name);
}

/* The smallest of 1, 2, 5 times a power of ten that is >= x (>= 1). */
static uint64_t nice_step(uint64_t x) {
  uint64_t p = 1;
  for (;;) {
    if (p >= x)
      return p;
    if (2 * p >= x)
      return 2 * p;
    if (5 * p >= x)
      return 5 * p;
    if (p > UINT64_MAX / 100)
      return p * 10;
    p *= 10;
  }
}

/* The time between ticks for a run of t_end: about eight ticks; whole minutes and hours once
 * the run is long. */
static uint64_t time_step(uint64_t t_end) {
  static const uint64_t long_steps_s[] = {60,   120,  300,   600,   1200,  1800,
                                          3600, 7200, 10800, 21600, 43200, 86400};
  uint64_t raw = t_end / 8 + 1;
  if (raw <= 50000000000ull) /* up to 50 s */
    return nice_step(raw);
  for (size_t i = 0; i < sizeof long_steps_s / sizeof long_steps_s[0]; i++)
    if (long_steps_s[i] * 1000000000ull >= raw)
      return long_steps_s[i] * 1000000000ull;
  return nice_step(raw);
}

/* ---- Layout ------------------------------------------------------------------------- */

static double xt(const svg *s, uint64_t t) {
  if (t > s->t_end)
    t = s->t_end;
  return PLOT_X + (double)t / (double)s->t_end * PLOT_W;
}

static int is_lane_kind(unsigned kind) {
  return kind <= SIM_MARK_DECOMMISSION; /* joined and the losses: drawn on the lane */
}

static int is_loss_kind(unsigned kind) {
  return kind >= SIM_MARK_LOST_PENDING && kind <= SIM_MARK_DECOMMISSION;
}

/* Where a mark is drawn: its lane's ordinal, nlanes for the strip, or -1 (not drawn). */
static long mark_target(const svg *s, const sim_mark *m) {
  if (!is_lane_kind(m->kind) || m->exec >= s->r->nexecs)
    return m->kind < SIM_MARK_COUNT ? (long)s->nlanes : -1;
  return s->lane_of[m->exec] < 0 ? -1 : s->lane_of[m->exec];
}

/* The legend's items; measure only (f NULL) or draw, from y; returns its lines. */
static int legend(const svg *s, FILE *f, int y);

/* Chooses the lanes and every vertical position. Returns -1 when out of memory. */
static int plan(svg *s) {
  const sim_record *r = s->r;
  uint64_t t = r->end_ns;
  for (size_t i = 0; i < r->nexecs; i++) {
    t = r->execs[i].joined_ns > t ? r->execs[i].joined_ns : t;
    if (r->execs[i].gone_ns != SIM_NEVER && r->execs[i].gone_ns > t)
      t = r->execs[i].gone_ns;
  }
  for (size_t i = 0; i < r->nslices; i++)
    t = r->slices[i].end_ns > t ? r->slices[i].end_ns : t;
  for (size_t i = 0; i < r->nmarks; i++)
    t = r->marks[i].t_ns > t ? r->marks[i].t_ns : t;
  for (size_t i = 0; i < r->nsamples; i++)
    t = r->samples[i].t_ns > t ? r->samples[i].t_ns : t;
  s->t_end = t ? t : 1;
  s->tick = time_step(s->t_end);

  size_t ne = r->nexecs ? r->nexecs : 1;
  s->lane_of = malloc(ne * sizeof *s->lane_of);
  s->row_base = calloc(ne, sizeof *s->row_base);
  s->lane_rows = calloc(ne, sizeof *s->lane_rows);
  s->row_y = malloc(MAX_ROWS * sizeof *s->row_y);
  unsigned char *lossy = calloc(ne, 1);
  if (!s->lane_of || !s->row_base || !s->lane_rows || !s->row_y || !lossy) {
    free(lossy);
    return -1;
  }

  /* The lanes: executors with a loss first, then the others, while the caps allow; drawn in
   * the order they joined. */
  for (size_t i = 0; i < r->nmarks; i++)
    if (is_loss_kind(r->marks[i].kind) && r->marks[i].exec < r->nexecs)
      lossy[r->marks[i].exec] = 1;
  for (size_t i = 0; i < r->nexecs; i++)
    s->lane_of[i] = -1;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < r->nexecs && s->nlanes < MAX_LANES; i++) {
      if (s->lane_rows[i] || lossy[i] != (pass == 0))
        continue;
      uint32_t rows = r->execs[i].cores ? r->execs[i].cores : 1;
      if (rows > MAX_LANE_ROWS) {
        rows = MAX_LANE_ROWS;
        s->rows_cut = 1;
      }
      if (s->nrows + rows > MAX_ROWS)
        continue;
      s->lane_rows[i] = rows;
      s->nrows += rows;
      s->nlanes++;
    }
  }
  free(lossy);
  size_t lane = 0, row = 0;
  for (size_t i = 0; i < r->nexecs; i++) {
    if (!s->lane_rows[i])
      continue;
    s->lane_of[i] = (int32_t)lane++;
    s->row_base[i] = (uint32_t)row;
    row += s->lane_rows[i];
  }
  s->rh = s->nrows ? (int)(LANES_H / s->nrows) : 14;
  s->rh = s->rh < 3 ? 3 : s->rh > 14 ? 14 : s->rh;

  for (size_t i = 0; i < r->nslices; i++) {
    const sim_slice *sl = &r->slices[i];
    if (sl->outcome < SIM_OUT_COUNT)
      s->outcome_n[sl->outcome]++;
    if (sl->exec >= r->nexecs || sl->core >= s->lane_rows[sl->exec])
      s->slices_hidden++;
  }
  s->summary = r->nslices > DETAIL_MAX_SLICES;
  for (size_t i = 0; i < r->nmarks; i++) {
    long target = mark_target(s, &r->marks[i]);
    if (target < 0)
      continue;
    s->mark_n[r->marks[i].kind]++;
    if ((size_t)target == s->nlanes)
      s->strip_marks++;
  }
  for (size_t i = 0; i < r->nsamples; i++)
    for (int k = 0; k < S_COUNT; k++) {
      uint32_t v = series_value(&r->samples[i], k);
      s->peak[k] = v > s->peak[k] ? v : s->peak[k];
    }

  /* Vertical positions, top to bottom. */
  int y = 64;
  s->y_a = y + 22;
  y = s->y_a + PANEL_A_H + 12;
  s->y_b = y + 22;
  y = s->y_b + PANEL_B_H + 24; /* the tick labels */
  if (s->strip_marks) {
    s->y_strip = y;
    y += 22;
  }
  s->y_legend = y + 6;
  s->legend_lines = legend(s, NULL, 0);
  y = s->y_legend + 18 * s->legend_lines + 8;
  s->y_lanes = y;
  for (size_t i = 0; i < r->nexecs; i++) {
    if (!s->lane_rows[i])
      continue;
    for (uint32_t c = 0; c < s->lane_rows[i]; c++)
      s->row_y[s->row_base[i] + c] = y + (int)c * s->rh;
    y += (int)s->lane_rows[i] * s->rh + LANE_GAP;
  }
  if (!s->nlanes)
    y += 30; /* "no executors" */
  s->y_lanes_end = y;
  s->height = y + 24; /* the tick labels */
  return 0;
}

/* ---- Pieces ------------------------------------------------------------------------- */

/* A mark's symbol centred on (x, y): a distinct shape per kind. */
static void put_symbol(FILE *f, unsigned kind, double x, double y) {
  const char *w = "stroke=\"#fff\" stroke-width=\"0.8\"";
  switch (kind) {
  case SIM_MARK_JOINED: /* a small triangle pointing right */
    fprintf(f, "<path d=\"M%.1f %.1fl7 4.5l-7 4.5z\" fill=\"#009E73\" %s/>", x - 3, y - 4.5, w);
    break;
  case SIM_MARK_LOST_PENDING: /* a hollow circle: the reason is not known yet */
    fprintf(f,
            "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#fff\" stroke=\"#E69F00\" "
            "stroke-width=\"2.2\"/>",
            x, y);
    break;
  case SIM_MARK_LOST: /* a cross */
    fprintf(f, "<path d=\"M%.1f %.1fl9 9m0 -9l-9 9\" stroke=\"#C00000\" stroke-width=\"3\"/>",
            x - 4.5, y - 4.5);
    break;
  case SIM_MARK_HEARTBEAT_TIMEOUT: /* a diamond */
    fprintf(f, "<path d=\"M%.1f %.1fl5.5 5.5l-5.5 5.5l-5.5 -5.5z\" fill=\"#7B2FBE\" %s/>", x,
            y - 5.5, w);
    break;
  case SIM_MARK_PENDING_TIMEOUT: /* a triangle pointing down */
    fprintf(f, "<path d=\"M%.1f %.1fh10l-5 9z\" fill=\"#A05A00\" %s/>", x - 5, y - 4.5, w);
    break;
  case SIM_MARK_DECOMMISSION: /* a square */
    fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"8\" height=\"8\" fill=\"#555\" %s/>", x - 4,
            y - 4, w);
    break;
  case SIM_MARK_STAGE_SUBMITTED: /* a triangle pointing up */
    fprintf(f, "<path d=\"M%.1f %.1fl4.5 8h-9z\" fill=\"#0072B2\" %s/>", x, y - 4, w);
    break;
  case SIM_MARK_STAGE_FAILED: /* a large red triangle */
    fprintf(f, "<path d=\"M%.1f %.1fl6 10h-12z\" fill=\"#C00000\" %s/>", x, y - 5, w);
    break;
  case SIM_MARK_STAGE_RESUBMITTED: /* an orange circle */
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#E69F00\" %s/>", x, y, w);
    break;
  case SIM_MARK_TASKSET_RELEASED: /* a hollow diamond */
    fprintf(f,
            "<path d=\"M%.1f %.1fl5 5l-5 5l-5 -5z\" fill=\"#fff\" stroke=\"#B0307A\" "
            "stroke-width=\"2\"/>",
            x, y - 5);
    break;
  default: /* job done: a flag */
    fprintf(f,
            "<path d=\"M%.1f %.1fv11M%.1f %.1fh7l-2 3l2 3h-7z\" stroke=\"#1A1A1A\" "
            "stroke-width=\"1.4\" fill=\"#1A1A1A\"/>",
            x, y - 5.5, x, y - 5.5);
    break;
  }
}

/* One legend item at (x, y): a swatch, then the label; returns its width. */
static double legend_item(FILE *f, double x, int y, int outcome, int kind, const char *label) {
  if (f) {
    if (outcome >= 0) {
      fprintf(f,
              "<g id=\"legend-outcome-%d\"><rect x=\"%.1f\" y=\"%d\" width=\"14\" "
              "height=\"10\" fill=\"%s\"/>",
              outcome, x, y - 9, outcome_colour[outcome]);
    } else {
      fprintf(f, "<g id=\"legend-mark-%d\">", kind);
      put_symbol(f, (unsigned)kind, x + 7, y - 4);
    }
    fprintf(f, "<text x=\"%.1f\" y=\"%d\">", x + 19, y);
    put_text(f, label);
    fputs("</text></g>\n", f);
  }
  return 19 + CHAR_W * (double)strlen(label) + 16;
}

static int legend(const svg *s, FILE *f, int y) {
  int lines = 0;
  for (int part = 0; part < 2; part++) {
    double x = PLOT_X;
    int any = 0;
    for (int i = 0; i < (part ? SIM_MARK_COUNT : SIM_OUT_COUNT); i++) {
      const char *label = part ? sim_mark_name((sim_mark_kind)i) : sim_outcome_name(i);
      if (!(part ? s->mark_n[i] : s->outcome_n[i]))
        continue;
      if (!any) {
        if (f)
          fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">%s</text>\n",
                  PLOT_X - 10, y + 18 * lines, part ? "marks" : "attempts");
        any = 1;
        lines++;
      }
      double w = legend_item(NULL, 0, 0, 0, 0, label);
      if (x + w > SVG_W - 10 && x > PLOT_X) {
        x = PLOT_X;
        lines++;
      }
      legend_item(f, x, y + 18 * (lines - 1), part ? -1 : i, i, label);
      x += w;
    }
  }
  return lines;
}

/* The time axis's grid lines from y0 to y1 and, when label_y > 0, its labels there. */
static void time_grid(const svg *s, int y0, int y1, int label_y) {
  FILE *f = s->f;
  char buf[48];
  for (uint64_t t = 0; t <= s->t_end; t += s->tick) {
    double x = xt(s, t);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e4e4e4\"/>\n", x, y0, x,
            y1);
    if (label_y > 0) {
      fmt_tick(buf, sizeof buf, t, s->tick);
      fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" fill=\"#444\">%s</text>\n", x,
              label_y, buf);
    }
    if (t > UINT64_MAX - s->tick)
      break;
  }
}

/* One step line, y = y0 - value * scale; with `area`, the area under it instead. */
static void step_line(const svg *s, int which, int y0, double scale, int area) {
  const sim_record *r = s->r;
  FILE *f = s->f;
  const series *se = &all_series[which];
  uint32_t last = series_value(&r->samples[r->nsamples - 1], which);
  double px = -1, py = -1;
  if (area) {
    fprintf(f, "<polygon id=\"area-%s\" fill=\"%s\" fill-opacity=\"0.16\" points=\"%.1f,%d ",
            se->id, se->colour, xt(s, r->samples[0].t_ns), y0);
  } else {
    fprintf(f,
            "<polyline id=\"series-%s\" data-last=\"%" PRIu32 "\" data-peak=\"%" PRIu32
            "\" data-y0=\"%d\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
            "stroke-linejoin=\"round\" points=\"",
            se->id, last, s->peak[which], y0, se->colour, se->width);
  }
#define POINT(X, V)                                                                                \
  do {                                                                                             \
    double x_ = (X), y_ = y0 - (double)(V)*scale;                                                  \
    if (x_ != px || y_ != py)                                                                      \
      fprintf(f, "%.1f,%.1f ", x_, y_);                                                            \
    px = x_;                                                                                       \
    py = y_;                                                                                       \
  } while (0)
  int per_column = r->nsamples > 2 * PLOT_W;
  uint32_t prev = series_value(&r->samples[0], which);
  POINT(xt(s, r->samples[0].t_ns), prev);
  for (size_t i = 1; i < r->nsamples;) {
    uint32_t v = series_value(&r->samples[i], which);
    double x = xt(s, r->samples[i].t_ns);
    if (!per_column) {
      POINT(x, prev);
      POINT(x, v);
      prev = v;
      i++;
      continue;
    }
    /* The samples in this pixel column: the level entering it, its extremes, its last. */
    int col = (int)(x - PLOT_X);
    uint32_t lo = v, hi = v;
    size_t j = i;
    for (; j < r->nsamples && (int)(xt(s, r->samples[j].t_ns) - PLOT_X) == col; j++) {
      v = series_value(&r->samples[j], which);
      lo = v < lo ? v : lo;
      hi = v > hi ? v : hi;
    }
    POINT(x, prev);
    POINT(x, lo);
    POINT(x, hi);
    POINT(x, v);
    prev = v;
    i = j;
  }
  POINT(xt(s, s->t_end), prev);
#undef POINT
  if (area)
    fprintf(f, "%.1f,%d", xt(s, s->t_end), y0);
  fputs("\"/>\n", f);
}

/* A count axis: about four integer ticks up to ymax; returns ymax (the top's value). */
static uint32_t count_axis(const svg *s, int y_top, int h, uint32_t peak, uint32_t min_top) {
  FILE *f = s->f;
  uint32_t top = peak > min_top ? peak : min_top;
  uint32_t step = (uint32_t)nice_step((top + 3) / 4);
  top = (top + step - 1) / step * step;
  for (uint32_t v = 0; v <= top; v += step) {
    double y = y_top + h - (double)v * h / top;
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>\n"
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"#444\">%" PRIu32 "</text>\n",
            PLOT_X - 4, y, PLOT_X + PLOT_W, y, v ? "#e4e4e4" : "#888", PLOT_X - 7, y + 4, v);
    if (v > UINT32_MAX - step)
      break;
  }
  fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#888\"/>\n", PLOT_X, y_top,
          PLOT_X, y_top + h);
  return top;
}

/* A panel's header: its title, then a swatch and label per series in it. */
static void panel_header(const svg *s, int y, int panel, const char *title) {
  FILE *f = s->f;
  fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">%s</text>\n", PLOT_X, y, title);
  double x = PLOT_X + CHAR_W * 1.08 * (double)strlen(title) + 18;
  for (int k = 0; k < S_COUNT; k++) {
    const series *se = &all_series[k];
    if (se->panel != panel)
      continue;
    fprintf(f,
            "<g id=\"legend-series-%s\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
            "stroke=\"%s\" stroke-width=\"%.1f\"/><text x=\"%.1f\" y=\"%d\">%s</text></g>\n",
            se->id, x, y - 4, x + 18, y - 4, se->colour, se->width + 0.6, x + 23, y, se->label);
    x += 23 + CHAR_W * (double)strlen(se->label) + 18;
  }
}

static void panels(const svg *s) {
  const sim_record *r = s->r;
  FILE *f = s->f;
  panel_header(s, s->y_a - 8, 0, "Ledger sizes");
  panel_header(s, s->y_b - 8, 1, "Must drain to 0");
  time_grid(s, s->y_a, s->y_a + PANEL_A_H, 0);
  time_grid(s, s->y_b, s->y_b + PANEL_B_H, s->y_b + PANEL_B_H + 15);
  uint32_t peak_a = s->peak[S_RUNNING] > s->peak[S_ACTIVE] ? s->peak[S_RUNNING] : s->peak[S_ACTIVE];
  uint32_t peak_b = 0;
  for (int k = S_FROZEN; k < S_COUNT; k++)
    peak_b = s->peak[k] > peak_b ? s->peak[k] : peak_b;
  uint32_t top_a = count_axis(s, s->y_a, PANEL_A_H, peak_a, 4);
  uint32_t top_b = count_axis(s, s->y_b, PANEL_B_H, peak_b, 2);
  if (!r->nsamples) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#888\">no samples of the ledger's sizes</text>\n",
            PLOT_X + 10, s->y_a + PANEL_A_H / 2);
    return;
  }
  for (int k = 0; k < S_COUNT; k++) { /* the zombie line last: on top */
    int y0 = all_series[k].panel ? s->y_b + PANEL_B_H : s->y_a + PANEL_A_H;
    double scale = all_series[k].panel ? (double)PANEL_B_H / top_b : (double)PANEL_A_H / top_a;
    if (k == S_ZOMBIE) /* shaded: the leak's shape, seen at a glance */
      step_line(s, k, y0, scale, 1);
    step_line(s, k, y0, scale, 0);
  }

  /* A label on the zombie line where it first peaks, so the rise and drain are named. */
  if (s->peak[S_ZOMBIE]) {
    size_t i = 0;
    while (r->samples[i].tasksets_zombie != s->peak[S_ZOMBIE])
      i++;
    fprintf(f,
            "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" font-weight=\"bold\">%" PRIu32
            " zombie task set%s</text>\n",
            xt(s, r->samples[i].t_ns) + 5,
            s->y_b + PANEL_B_H - (double)s->peak[S_ZOMBIE] * PANEL_B_H / top_b - 5,
            all_series[S_ZOMBIE].colour, s->peak[S_ZOMBIE], s->peak[S_ZOMBIE] > 1 ? "s" : "");
  }

  /* Right of the must-drain panel: each series' last value and peak, and the verdict. */
  const sim_sample *last = &r->samples[r->nsamples - 1];
  int drained = 1, y = s->y_b + 10;
  fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">at the end (peak):</text>\n",
          PLOT_X + PLOT_W + 10, y);
  for (int k = S_COUNT - 1; k >= S_FROZEN; k--) {
    uint32_t v = series_value(last, k);
    drained &= v == 0;
    y += 15;
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"%s\"%s>%s: %" PRIu32 " (%" PRIu32 ")</text>\n",
            PLOT_X + PLOT_W + 10, y, all_series[k].colour, v ? " font-weight=\"bold\"" : "",
            all_series[k].label, v, s->peak[k]);
  }
  fprintf(f,
          "<text id=\"verdict\" x=\"%d\" y=\"%d\" font-size=\"13\" font-weight=\"bold\" "
          "fill=\"%s\">%s</text>\n",
          PLOT_X + PLOT_W + 10, y + 22, drained ? "#007A4D" : "#C00000",
          drained ? "drained: all back to 0" : "NOT drained at the end");
}

/* Vertical guides across panels and lanes at the first stage failures and releases. */
static void guides(const svg *s) {
  const sim_record *r = s->r;
  size_t failed = 0, released = 0;
  for (size_t i = 0; i < r->nmarks; i++) {
    const sim_mark *m = &r->marks[i];
    const char *colour;
    if (m->kind == SIM_MARK_STAGE_FAILED && failed < MAX_GUIDES) {
      failed++;
      colour = "#C00000";
    } else if (m->kind == SIM_MARK_TASKSET_RELEASED && released < MAX_GUIDES) {
      released++;
      colour = "#B0307A";
    } else {
      continue;
    }
    double x = xt(s, m->t_ns);
    fprintf(s->f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1\" "
            "stroke-dasharray=\"4 3\" stroke-opacity=\"0.7\"/>\n",
            x, s->y_a, x, s->y_lanes_end, colour);
  }
}

/* The lanes' backgrounds: the executor's lifetime shaded, its id on the left. */
static void lanes(const svg *s) {
  const sim_record *r = s->r;
  FILE *f = s->f;
  if (!s->nlanes) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#888\">no executors</text>\n", PLOT_X + 10,
            s->y_lanes + 18);
    return;
  }
  char a[48], b[48];
  for (size_t i = 0; i < r->nexecs; i++) {
    if (!s->lane_rows[i])
      continue;
    const sim_exec *e = &r->execs[i];
    int y = s->row_y[s->row_base[i]], h = (int)s->lane_rows[i] * s->rh;
    uint64_t gone = e->gone_ns == SIM_NEVER ? s->t_end : e->gone_ns;
    double x0 = xt(s, e->joined_ns), x1 = xt(s, gone);
    fmt_time(a, sizeof a, e->joined_ns);
    if (e->gone_ns == SIM_NEVER)
      snprintf(b, sizeof b, "the end");
    else
      fmt_time(b, sizeof b, e->gone_ns);
    fprintf(f, "<g id=\"lane-%zu\"><title>", i);
    put_text(f, e->id);
    fputs(" on ", f);
    put_text(f, e->host);
    if (e->rack[0]) {
      fputs(", ", f);
      put_text(f, e->rack);
    }
    fprintf(f, ": %" PRIu32 " cores, ", e->cores);
    if (e->resource[0] && e->naddresses) {
      fprintf(f, "%" PRIu32 " ", e->naddresses);
      put_text(f, e->resource);
      fputs(", ", f);
    }
    fprintf(f, "from %s to %s</title>\n", a, b);
    fprintf(f,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f6f6f6\"/>"
            "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#dde6f0\"/>\n",
            PLOT_X, y, PLOT_W, h, x0, y, x1 - x0 < 0.5 ? 0.5 : x1 - x0, h);
    if (e->gone_ns != SIM_NEVER)
      fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#555\"/>\n", x1, y, x1,
              y + h);
    int two_lines = h >= 26;
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" font-weight=\"bold\">", PLOT_X - 8,
            y + h / 2 + (two_lines ? -2 : 4));
    put_text_cut(f, e->id, LABEL_CHARS);
    fputs("</text>", f);
    if (two_lines) {
      fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#666\" font-size=\"10\">",
              PLOT_X - 8, y + h / 2 + 10);
      put_text_cut(f, e->host, LABEL_CHARS);
      fprintf(f, " (%" PRIu32 " cores", e->cores);
      if (e->resource[0] && e->naddresses) {
        fprintf(f, ", %" PRIu32 " ", e->naddresses);
        put_text_cut(f, e->resource, LABEL_CHARS);
      }
      fputs(")</text>", f);
    }
    fputs("</g>\n", f);
  }
}

/* One row of a slice, or -1 when its row is not drawn. */
static long slice_row(const svg *s, const sim_slice *sl) {
  if (sl->exec >= s->r->nexecs || sl->core >= s->lane_rows[sl->exec])
    return -1;
  return (long)s->row_base[sl->exec] + sl->core;
}

/* Detail: one rect per attempt, with a tooltip, grouped by outcome. */
static void slices_detail(const svg *s) {
  const sim_record *r = s->r;
  FILE *f = s->f;
  char a[48], b[48];
  for (int o = 0; o < SIM_OUT_COUNT; o++) {
    if (!s->outcome_n[o])
      continue;
    fprintf(f, "<g id=\"slices-%d\" fill=\"%s\">\n", o, outcome_colour[o]);
    for (size_t i = 0; i < r->nslices; i++) {
      const sim_slice *sl = &r->slices[i];
      long row = slice_row(s, sl);
      if (sl->outcome != o || row < 0)
        continue;
      uint64_t end = sl->end_ns > sl->start_ns ? sl->end_ns : sl->start_ns;
      double x0 = xt(s, sl->start_ns), x1 = xt(s, end);
      fmt_time(a, sizeof a, sl->start_ns);
      fmt_time(b, sizeof b, end);
      fprintf(f,
              "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\"><title>tid %" PRIu64
              ", job %" PRIu32 ", stage %" PRIu32 ".%" PRIu32 ", task %" PRIu32 ".%" PRIu32
              "%s: %s, %s to %s on ",
              x0, s->row_y[row] + (s->rh > 4 ? 1 : 0), x1 - x0 < 0.6 ? 0.6 : x1 - x0,
              s->rh > 4 ? s->rh - 1 : s->rh, sl->tid, sl->job, sl->stage_id, sl->stage_attempt,
              sl->index, sl->attempt, sl->speculative ? " (speculative)" : "",
              sim_outcome_name((sim_outcome)o), a, b);
      put_text(f, r->execs[sl->exec].id);
      fprintf(f, " core %" PRIu32, sl->core);
      if (sl->resource[0]) { /* the addresses it held: ", gpu 0,2" or ", gpu 1 (1/4)" */
        fputs(", ", f);
        put_text(f, sl->resource);
        fputc(' ', f);
        put_text(f, sl->addresses);
        if (sl->share > 1)
          fprintf(f, " (1/%u)", (unsigned)sl->share);
      }
      fputs("</title></rect>\n", f);
    }
    fputs("</g>\n", f);
  }
}

/* Summary: per row and pixel column, the outcome that held the column longest (weighted) at an
 * opacity for how busy the row was in it; equal neighbours merged; one path per colour and
 * opacity. Returns -1 when out of memory. */
static int slices_summary(const svg *s) {
  static const double opacity[3] = {1.0, 0.6, 0.3};
  const sim_record *r = s->r;
  FILE *f = s->f;
  int rc = -1;
  size_t *first = calloc(s->nrows + 1, sizeof *first); /* row i: order[first[i]..first[i+1]) */
  size_t *order = malloc((r->nslices ? r->nslices : 1) * sizeof *order);
  double(*cov)[SIM_OUT_COUNT] = malloc(PLOT_W * sizeof *cov);
  sbuf paths[SIM_OUT_COUNT][3];
  memset(paths, 0, sizeof paths);
  if (!first || !order || !cov)
    goto out;

  /* Group the slices by row (a counting sort). */
  for (size_t i = 0; i < r->nslices; i++) {
    long row = slice_row(s, &r->slices[i]);
    if (row >= 0)
      first[row + 1]++;
  }
  for (size_t i = 0; i < s->nrows; i++)
    first[i + 1] += first[i];
  size_t *fill = calloc(s->nrows ? s->nrows : 1, sizeof *fill);
  if (!fill)
    goto out;
  for (size_t i = 0; i < r->nslices; i++) {
    long row = slice_row(s, &r->slices[i]);
    if (row >= 0)
      order[first[row] + fill[row]++] = i;
  }
  free(fill);

  double cw = (double)s->t_end / PLOT_W; /* a column's time, ns */
  for (size_t row = 0; row < s->nrows; row++) {
    memset(cov, 0, PLOT_W * sizeof *cov);
    for (size_t k = first[row]; k < first[row + 1]; k++) {
      const sim_slice *sl = &r->slices[order[k]];
      if (sl->outcome >= SIM_OUT_COUNT || sl->end_ns <= sl->start_ns)
        continue;
      double a = (double)sl->start_ns, b = (double)sl->end_ns;
      b = b > (double)s->t_end ? (double)s->t_end : b;
      int c0 = (int)(a / cw), c1 = (int)(b / cw);
      c1 = c1 >= PLOT_W ? PLOT_W - 1 : c1;
      for (int c = c0; c <= c1; c++) {
        double lo = c * cw > a ? c * cw : a, hi = (c + 1) * cw < b ? (c + 1) * cw : b;
        if (hi > lo)
          cov[c][sl->outcome] += hi - lo;
      }
    }
    int run_start = 0, run_o = -1, run_l = 0;
    for (int c = 0; c <= PLOT_W; c++) {
      int o = -1, l = 0;
      if (c < PLOT_W) {
        double total = 0, best = 0;
        for (int k = 0; k < SIM_OUT_COUNT; k++) {
          double w = cov[c][k] * (k == SIM_OUT_SUCCESS ? 1 : SUMMARY_WEIGHT);
          total += cov[c][k];
          if (cov[c][k] > 0 && w >= best) {
            best = w;
            o = k;
          }
        }
        double busy = total / cw;
        if (busy < 0.1)
          o = -1;
        l = busy >= 0.75 ? 0 : busy >= 0.4 ? 1 : 2;
      }
      if (o == run_o && (o < 0 || l == run_l))
        continue;
      if (run_o >= 0 && sbuf_printf(&paths[run_o][run_l], "M%d %dh%dv%dh-%dz", PLOT_X + run_start,
                                    s->row_y[row] + (s->rh > 4 ? 1 : 0), c - run_start,
                                    s->rh > 4 ? s->rh - 1 : s->rh, c - run_start) < 0)
        goto out;
      run_start = c;
      run_o = o;
      run_l = l;
    }
  }
  for (int o = 0; o < SIM_OUT_COUNT; o++)
    for (int l = 0; l < 3; l++)
      if (paths[o][l].n)
        fprintf(f, "<path id=\"summary-%d-%d\" fill=\"%s\" fill-opacity=\"%.1f\" d=\"%s\"/>\n", o,
                l, outcome_colour[o], opacity[l], paths[o][l].p);
  rc = 0;
out:
  for (int o = 0; o < SIM_OUT_COUNT; o++)
    for (int l = 0; l < 3; l++)
      free(paths[o][l].p);
  free(cov);
  free(order);
  free(first);
  return rc;
}

/* One drawn mark (perhaps standing for `count` in one pixel column) with its tooltip. */
static void put_mark(const svg *s, const sim_mark *m, size_t count, long target) {
  FILE *f = s->f;
  const sim_record *r = s->r;
  char t[48];
  double x = xt(s, m->t_ns), y;
  fmt_time(t, sizeof t, m->t_ns);
  fprintf(f, "<g data-mark=\"%u\"%s><title>", (unsigned)m->kind,
          (size_t)target == s->nlanes ? " data-strip=\"1\"" : "");
  if (m->exec < r->nexecs) {
    put_text(f, r->execs[m->exec].id);
    fputs(": ", f);
  }
  fprintf(f, "%s at %s", sim_mark_name((sim_mark_kind)m->kind), t);
  if (m->text[0]) {
    fputs(": ", f);
    put_text(f, m->text);
  }
  if (count > 1)
    fprintf(f, " (and %zu more in this pixel)", count - 1);
  fputs("</title>", f);
  if ((size_t)target == s->nlanes) {
    y = s->y_strip + 10;
  } else {
    size_t e = m->exec;
    int top = s->row_y[s->row_base[e]], h = (int)s->lane_rows[e] * s->rh;
    y = top + (h < 12 ? h / 2.0 : 6);
    if (m->kind != SIM_MARK_JOINED)
      fprintf(f,
              "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\" "
              "stroke-width=\"1.2\" stroke-dasharray=\"3 2\"/>",
              x, top, x, top + h);
  }
  put_symbol(f, m->kind, x, y);
  fputs("</g>\n", f);
}

/* The marks, one per kind, lane and pixel column. Returns -1 when out of memory. */
static int marks(const svg *s) {
  typedef struct group {
    long col;     /* its pixel column; -1: none open */
    size_t first; /* the mark drawn */
    size_t count; /* the marks it stands for */
  } group;
  const sim_record *r = s->r;
  size_t ngroups = (s->nlanes + 1) * SIM_MARK_COUNT;
  group *g = malloc(ngroups * sizeof *g);
  if (!g)
    return -1;
  for (size_t i = 0; i < ngroups; i++)
    g[i].col = -1;
  if (s->strip_marks)
    fprintf(s->f,
            "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#555\">stages and jobs</text>\n"
            "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ccc\"/>\n",
            PLOT_X - 10, s->y_strip + 14, PLOT_X, s->y_strip + 10, PLOT_X + PLOT_W,
            s->y_strip + 10);
  for (size_t i = 0; i < r->nmarks; i++) {
    const sim_mark *m = &r->marks[i];
    long target = mark_target(s, m);
    if (target < 0)
      continue;
    group *gr = &g[(size_t)target * SIM_MARK_COUNT + m->kind];
    long col = (long)(xt(s, m->t_ns) - PLOT_X);
    if (gr->col == col) {
      gr->count++;
      continue;
    }
    if (gr->col >= 0)
      put_mark(s, &r->marks[gr->first], gr->count, target);
    gr->col = col;
    gr->first = i;
    gr->count = 1;
  }
  for (size_t i = 0; i < ngroups; i++)
    if (g[i].col >= 0)
      put_mark(s, &r->marks[g[i].first], g[i].count, (long)(i / SIM_MARK_COUNT));
  free(g);
  return 0;
}

/* The notes under the title: what the picture shows and what it left out. */
static void notes(const svg *s, int y) {
  const sim_record *r = s->r;
  FILE *f = s->f;
  fprintf(f, "<text x=\"%d\" y=\"%d\" fill=\"#555\">", PLOT_X, y);
  if (s->summary)
    fprintf(f,
            "Summary: %zu attempts, drawn per pixel column (the colour of the outcome that held "
            "it longest, failures weighted x%d; lighter: busy less of the column)",
            r->nslices, SUMMARY_WEIGHT);
  else
    fprintf(f, "Every attempt drawn (%zu); hover for details", r->nslices);
  fputs("</text>\n", f);
  if (s->nlanes < r->nexecs || s->rows_cut || s->slices_hidden) {
    fprintf(f, "<text id=\"cap\" x=\"%d\" y=\"%d\" fill=\"#C00000\">", PLOT_X, y + 15);
    if (s->nlanes < r->nexecs)
      fprintf(f,
              "Showing %zu of %zu executors (those with a loss first, then in order of "
              "joining). ",
              s->nlanes, r->nexecs);
    if (s->rows_cut)
      fprintf(f, "At most %d cores per executor drawn. ", MAX_LANE_ROWS);
    if (s->slices_hidden)
      fprintf(f, "%zu attempts not drawn.", s->slices_hidden);
    fputs("</text>\n", f);
  }
}

static void put_empty(FILE *f) {
  fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"480\" height=\"80\" "
        "viewBox=\"0 0 480 80\" font-family=\"sans-serif\" font-size=\"14\">\n"
        "<rect width=\"480\" height=\"80\" fill=\"#fff\" stroke=\"#888\"/>\n"
        "<text id=\"empty\" x=\"240\" y=\"45\" text-anchor=\"middle\" fill=\"#444\">tl-sim: "
        "nothing to draw (no executors, no samples, no marks)</text>\n"
        "</svg>\n",
        f);
}

int sim_svg_write(const sim_record *r, FILE *f) {
  svg s;
  memset(&s, 0, sizeof s);
  s.f = f;
  s.r = r;
  int rc = 0;
  if (r->nexecs == 0 && r->nsamples == 0 && r->nmarks == 0) {
    put_empty(f);
    goto flush;
  }
  if (plan(&s) < 0)
    goto oom;

  char end[48];
  fmt_time(end, sizeof end, r->end_ns ? r->end_ns : s.t_end);
  fprintf(f,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"11\">\n"
          "<rect width=\"%d\" height=\"%d\" fill=\"#fff\"/>\n"
          "<text x=\"%d\" y=\"24\" font-size=\"16\" font-weight=\"bold\">tl-sim run: %zu "
          "executor%s, %zu attempt%s, %s of virtual time</text>\n",
          SVG_W, s.height, SVG_W, s.height, SVG_W, s.height, PLOT_X, r->nexecs,
          r->nexecs == 1 ? "" : "s", r->nslices, r->nslices == 1 ? "" : "s", end);
  notes(&s, 42);
  panels(&s);
  guides(&s);
  legend(&s, f, s.y_legend + 10);
  lanes(&s);
  if (s.nlanes) {
    time_grid(&s, s.y_lanes - 2, s.y_lanes_end - LANE_GAP + 2, s.y_lanes_end + 12);
    if (!s.summary)
      slices_detail(&s);
    else if (slices_summary(&s) < 0)
      goto oom;
  }
  if (marks(&s) < 0)
    goto oom;
  fputs("</svg>\n", f);
  goto flush;
oom:
  errno = ENOMEM;
  rc = -1;
flush:
  free(s.lane_of);
  free(s.row_base);
  free(s.lane_rows);
  free(s.row_y);
  if (fflush(f) != 0 || ferror(f))
    rc = -1;
  return rc;
}
