/* Spark's fairscheduler.xml for tl-driver (pools_xml.h; docs/cluster.md "Pools").
 *
 * The format is Spark's:
 *
 *   <allocations>
 *     <pool name="etl"><schedulingMode>FAIR</schedulingMode><weight>2</weight>
 *       <minShare>1</minShare></pool>
 *   </allocations>
 *
 * and, as an extension, a <pool> inside a <pool> is its child (Spark finds every <pool> at any
 * depth and puts them all under its root). Values follow Spark's FairSchedulableBuilder
 * (SPARK-17663): trimmed, the mode upper-cased; one that is blank or not a value (a mode other
 * than FIFO or FAIR, a number that does not parse or is out of range) takes its default with a
 * warning. Everything else that is not as above refuses the whole file: an element or attribute
 * tl-driver does not know (Spark would ignore it; a misspelt <minshare> would then silently not
 * apply), a value element twice, text between elements, a pool without a valid name or with a
 * name used before, more than POOLS_XML_POOLS_MAX pools, pools deeper than POOLS_XML_DEPTH_MAX,
 * a file over POOLS_XML_FILE_MAX bytes, anything libxml2 does not parse.
 *
 * libxml2 reads the bytes with XML_PARSE_NONET (no network) and neither XML_PARSE_NOENT (no
 * entity substitution) nor XML_PARSE_DTDLOAD (no external DTD) nor XML_PARSE_HUGE (its own
 * limits on depth and sizes stay on); a file that holds a DOCTYPE or an ENTITY declaration is
 * refused before libxml2 sees it, and an entity reference that reaches the tree is refused too,
 * so no entity is ever expanded.
 */
#include "pools_xml.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libxml/parser.h>
#include <libxml/tree.h>

typedef struct reader {
  pools_xml *out;
  size_t cap; /* room in out->pools */
  char *err;
  size_t errcap;
  pools_xml_warn_fn *warn;
  void *ud;
} reader;

static int fail(reader *r, const xmlNode *at, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (at != NULL)
    snprintf(r->err, r->errcap, "line %ld: %s", (long)xmlGetLineNo(at), what);
  else
    snprintf(r->err, r->errcap, "%s", what);
  return -1;
}

bool pools_xml_name_ok(const char *name, size_t len) {
  if (len == 0 || len > POOLS_XML_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++)
    if (name[i] <= 0x20 || name[i] >= 0x7f || name[i] == ',')
      return false;
  return true;
}

static bool is_blank(const xmlChar *s) {
  for (; s != NULL && *s; s++)
    if (*s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
      return false;
  return true;
}

static bool named(const xmlNode *n, const char *name) {
  return n->ns == NULL && strcmp((const char *)n->name, name) == 0;
}

/* A value element's text, trimmed, into buf (POOLS_XML_VALUE_MAX + 1 bytes): 0, 1 when it is
 * longer than that (not a value), -1 when the element holds anything but text and comments. */
static int value_text(reader *r, const xmlNode *el, char *buf) {
  size_t n = 0;
  bool too_long = false;
  if (el->properties != NULL)
    return fail(r, el, "<%s> takes no attribute", (const char *)el->name);
  for (const xmlNode *c = el->children; c != NULL; c = c->next) {
    if (c->type == XML_COMMENT_NODE)
      continue;
    if (c->type != XML_TEXT_NODE && c->type != XML_CDATA_SECTION_NODE)
      return fail(r, c, "<%s> holds something other than text", (const char *)el->name);
    size_t len = c->content != NULL ? strlen((const char *)c->content) : 0;
    if (too_long || n + len > POOLS_XML_VALUE_MAX) {
      too_long = true;
      continue;
    }
    memcpy(buf + n, c->content, len);
    n += len;
  }
  buf[n] = '\0';
  if (too_long)
    return 1;
  size_t start = 0;
  while (start < n && isspace((unsigned char)buf[start]))
    start++;
  while (n > start && isspace((unsigned char)buf[n - 1]))
    n--;
  memmove(buf, buf + start, n - start);
  buf[n - start] = '\0';
  return 0;
}

/* Decimal digits only, at most max. */
static bool parse_number(const char *s, uint32_t min, uint32_t max, uint32_t *out) {
  if (*s == '\0' || strlen(s) > 10)
    return false;
  uint64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return false;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (v < min || v > max)
    return false;
  *out = (uint32_t)v;
  return true;
}

static void warn(reader *r, const xmlNode *at, const char *pool, const char *field,
                 const char *text, const char *dflt) {
  r->out->defaults++;
  if (r->warn == NULL)
    return;
  char line[POOLS_XML_NAME_MAX + POOLS_XML_VALUE_MAX + 160];
  snprintf(line, sizeof line, "line %ld: pool %s: %s \"%s\" is not a value; %s instead",
           (long)xmlGetLineNo(at), pool, field, text, dflt);
  r->warn(r->ud, line);
}

/* One value element of pool p. */
static int pool_value(reader *r, const xmlNode *el, pool_xml *p) {
  char text[POOLS_XML_VALUE_MAX + 1];
  int rc = value_text(r, el, text);
  if (rc < 0)
    return rc;
  if (rc == 1)
    snprintf(text, sizeof text, "(over %d bytes)", POOLS_XML_VALUE_MAX);
  if (named(el, "schedulingMode")) {
    char up[POOLS_XML_VALUE_MAX + 1];
    size_t i = 0;
    for (; text[i]; i++)
      up[i] = (char)toupper((unsigned char)text[i]);
    up[i] = '\0';
    if (rc == 0 && strcmp(up, "FAIR") == 0) {
      p->mode = TL_FAIR;
    } else if (rc == 0 && strcmp(up, "FIFO") == 0) {
      p->mode = TL_FIFO;
    } else {
      p->mode = TL_FIFO;
      warn(r, el, p->name, "schedulingMode", text, "FIFO");
    }
  } else if (named(el, "weight")) {
    if (rc != 0 || !parse_number(text, 1, POOLS_XML_WEIGHT_MAX, &p->weight)) {
      p->weight = 1;
      warn(r, el, p->name, "weight", text, "1");
    }
  } else {
    if (rc != 0 || !parse_number(text, 0, POOLS_XML_MIN_SHARE_MAX, &p->min_share)) {
      p->min_share = 0;
      warn(r, el, p->name, "minShare", text, "0");
    }
  }
  return 0;
}

static int pool_element(reader *r, const xmlNode *el, int parent, int depth);

/* The children of <allocations> (parent -1) or of a <pool>: <pool> elements, and in a pool its
 * value elements, each at most once; comments; blank text. */
static int children_of(reader *r, const xmlNode *el, int parent, int depth) {
  unsigned seen = 0; /* bit 0 schedulingMode, 1 weight, 2 minShare */
  for (const xmlNode *c = el->children; c != NULL; c = c->next) {
    switch (c->type) {
    case XML_COMMENT_NODE:
      continue;
    case XML_TEXT_NODE:
      if (!is_blank(c->content))
        return fail(r, c, "text outside a value");
      continue;
    case XML_ELEMENT_NODE:
      break;
    case XML_ENTITY_REF_NODE:
      return fail(r, c, "an entity reference (no entity is expanded)");
    default:
      return fail(r, c, "an XML node of type %d where a <pool> or a value belongs", (int)c->type);
    }
    if (named(c, "pool")) {
      if (pool_element(r, c, parent, depth + 1) < 0)
        return -1;
      continue;
    }
    unsigned bit = named(c, "schedulingMode") ? 1u
                   : named(c, "weight")       ? 2u
                   : named(c, "minShare")     ? 4u
                                              : 0u;
    if (parent < 0 || bit == 0)
      return fail(r, c, "unknown element <%s>%s", (const char *)c->name,
                  parent < 0 ? " in <allocations>" : " in a <pool>");
    if (seen & bit)
      return fail(r, c, "<%s> twice in pool %s", (const char *)c->name, r->out->pools[parent].name);
    seen |= bit;
    if (pool_value(r, c, &r->out->pools[parent]) < 0)
      return -1;
  }
  return 0;
}

static int pool_element(reader *r, const xmlNode *el, int parent, int depth) {
  if (depth > POOLS_XML_DEPTH_MAX)
    return fail(r, el, "pools nested deeper than %d", POOLS_XML_DEPTH_MAX);
  if (r->out->npools == POOLS_XML_POOLS_MAX)
    return fail(r, el, "more than %d pools", POOLS_XML_POOLS_MAX);
  const xmlChar *name = NULL;
  for (const xmlAttr *a = el->properties; a != NULL; a = a->next) {
    if (a->ns != NULL || strcmp((const char *)a->name, "name") != 0)
      return fail(r, el, "unknown attribute %s of a <pool>", (const char *)a->name);
    const xmlNode *v = a->children;
    if (v == NULL || v->next != NULL || v->type != XML_TEXT_NODE)
      return fail(r, el, "a <pool>'s name is not plain text");
    name = v->content;
  }
  if (name == NULL)
    return fail(r, el, "a <pool> without a name");
  size_t len = strlen((const char *)name);
  if (!pools_xml_name_ok((const char *)name, len))
    return fail(r, el, "a pool's name must be 1 to %d bytes of printable ASCII, no space or comma",
                POOLS_XML_NAME_MAX);
  for (size_t i = 0; i < r->out->npools; i++)
    if (strcmp(r->out->pools[i].name, (const char *)name) == 0)
      return fail(r, el, "pool %s named twice", (const char *)name);
  if (r->out->npools == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 8;
    pool_xml *more = realloc(r->out->pools, cap * sizeof *more);
    if (more == NULL)
      return fail(r, el, "out of memory");
    r->out->pools = more;
    r->cap = cap;
  }
  int me = (int)r->out->npools++;
  pool_xml *p = &r->out->pools[me];
  memset(p, 0, sizeof *p);
  memcpy(p->name, name, len + 1);
  p->parent = parent;
  p->mode = TL_FIFO;
  p->weight = 1;
  if (parent >= 0) {
    r->out->pools[parent].children++;
    r->out->nested++;
  }
  if (children_of(r, el, me, depth) < 0)
    return -1;
  p = &r->out->pools[me]; /* the array may have moved */
  /* "default" takes the task sets that name no pool: the ledger keeps it at the top, a leaf. Its
   * settings are the file's to give (pools_xml_apply: tl_pool_set). */
  if (strcmp(p->name, "default") == 0 && (parent >= 0 || p->children > 0))
    return fail(r, el, "pool default is the ledger's own: top level, no children");
  return 0;
}

/* Refuses a DOCTYPE or an ENTITY declaration anywhere in the bytes (comments included): with
 * neither, there is no DTD and no entity for libxml2 to read. */
static bool declares(const char *buf, size_t len, const char *what) {
  size_t n = strlen(what);
  for (size_t i = 0; i + n <= len; i++)
    if (buf[i] == '<' && memcmp(buf + i, what, n) == 0)
      return true;
  return false;
}

int pools_xml_read_memory(const char *buf, size_t len, pools_xml *out, char *err, size_t cap,
                          pools_xml_warn_fn *warn_fn, void *ud) {
  memset(out, 0, sizeof *out);
  reader r = {out, 0, err, cap, warn_fn, ud};
  if (cap > 0)
    err[0] = '\0';
  if (len > POOLS_XML_FILE_MAX)
    return fail(&r, NULL, "over %u bytes", POOLS_XML_FILE_MAX);
  if (declares(buf, len, "<!DOCTYPE") || declares(buf, len, "<!ENTITY"))
    return fail(&r, NULL, "a DOCTYPE or ENTITY declaration (no DTD and no entity is read)");
  xmlParserCtxtPtr ctxt = xmlNewParserCtxt();
  if (ctxt == NULL)
    return fail(&r, NULL, "out of memory");
  xmlDocPtr doc = xmlCtxtReadMemory(ctxt, buf, (int)len, NULL, NULL,
                                    XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  int rc = 0;
  if (doc == NULL) {
    const xmlError *e = xmlCtxtGetLastError(ctxt);
    char msg[160] = "not XML";
    if (e != NULL && e->message != NULL) {
      snprintf(msg, sizeof msg, "%s", e->message);
      size_t m = strlen(msg);
      while (m > 0 && (msg[m - 1] == '\n' || msg[m - 1] == ' '))
        msg[--m] = '\0';
    }
    rc = fail(&r, NULL, "line %d: %s", e != NULL ? e->line : 0, msg);
  } else if (doc->intSubset != NULL || doc->extSubset != NULL) {
    rc = fail(&r, NULL, "a DTD (no DTD and no entity is read)");
  } else {
    const xmlNode *root = xmlDocGetRootElement(doc);
    if (root == NULL || !named(root, "allocations"))
      rc = fail(&r, root, "the root element is not <allocations>");
    else if (root->properties != NULL)
      rc = fail(&r, root, "<allocations> takes no attribute");
    else
      rc = children_of(&r, root, -1, 0);
  }
  if (doc != NULL)
    xmlFreeDoc(doc);
  xmlFreeParserCtxt(ctxt);
  if (rc < 0) {
    pools_xml_free(out);
    return -1;
  }
  return 0;
}

int pools_xml_read_file(const char *path, pools_xml *out, char *err, size_t cap,
                        pools_xml_warn_fn *warn_fn, void *ud) {
  memset(out, 0, sizeof *out);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, cap, "%s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    snprintf(err, cap, "not a regular file");
    close(fd);
    return -1;
  }
  char *buf = malloc(POOLS_XML_FILE_MAX + 1);
  if (buf == NULL) {
    close(fd);
    snprintf(err, cap, "out of memory");
    return -1;
  }
  size_t n = 0;
  for (;;) { /* one byte past the limit tells a file that is too long */
    ssize_t got = read(fd, buf + n, POOLS_XML_FILE_MAX + 1 - n);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      snprintf(err, cap, "%s", strerror(errno));
      free(buf);
      close(fd);
      return -1;
    }
    if (got == 0 || (n += (size_t)got) == POOLS_XML_FILE_MAX + 1)
      break;
  }
  close(fd);
  int rc = pools_xml_read_memory(buf, n, out, err, cap, warn_fn, ud);
  free(buf);
  return rc;
}

void pools_xml_free(pools_xml *p) {
  free(p->pools);
  memset(p, 0, sizeof *p);
}

int pools_xml_apply(const pools_xml *p, tl_scheduler *s, char *err, size_t cap) {
  for (size_t i = 0; i < p->npools; i++) {
    const pool_xml *x = &p->pools[i];
    const char *parent = x->parent >= 0 ? p->pools[x->parent].name : NULL;
    /* "default" is the ledger's own, at the top level: it takes the file's settings. */
    int rc = strcmp(x->name, "default") == 0
                 ? tl_pool_set(s, x->name, x->mode, x->weight, x->min_share)
                 : tl_pool_add_child(s, parent, x->name, x->mode, x->weight, x->min_share);
    if (rc < 0) {
      snprintf(err, cap, "pool %s: %s", x->name, tl_strerror(rc));
      return -1;
    }
  }
  return 0;
}
