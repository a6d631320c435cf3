/* tl-driver's pools from a Spark allocation file (--fair-scheduler-xml, docs/cluster.md "Pools"):
 * fairscheduler.xml read with libxml2, every field bounded, then added to a TL_FAIR ledger with
 * tl_pool_add_child. The file is the operator's, but it is read as if it were hostile: no DTD,
 * no entity, no network, nothing unbounded. This file knows no driver, no connection and no
 * loop (layer 0, base): it is also built alone into its unit test.
 */
#ifndef TLC_POOLS_XML_H
#define TLC_POOLS_XML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "taskledger.h"

/* The limits (docs/cluster.md "Pools" lists them with what a file beyond each gets). */
#define POOLS_XML_FILE_MAX (1u << 20)         /* bytes of the file */
#define POOLS_XML_POOLS_MAX 256               /* <pool> elements */
#define POOLS_XML_NAME_MAX 128                /* bytes of a pool's name */
#define POOLS_XML_DEPTH_MAX TL_POOL_DEPTH_MAX /* <pool> inside <pool>: the ledger's own bound */
#define POOLS_XML_VALUE_MAX 64                /* bytes of a value's text (more: not a value) */
#define POOLS_XML_WEIGHT_MAX 1000000u         /* a weight is 1 to this */
#define POOLS_XML_MIN_SHARE_MAX 1000000u      /* a min share is 0 to this */

/* One <pool>, in document order: a parent comes before its children. */
typedef struct pool_xml {
  char name[POOLS_XML_NAME_MAX + 1];
  int parent;         /* index of its parent in pools_xml.pools; -1 at the top level */
  tl_sched_mode mode; /* <schedulingMode>; TL_FIFO when absent or not FIFO or FAIR */
  uint32_t weight;    /* <weight>; 1 when absent or out of range */
  uint32_t min_share; /* <minShare>; 0 when absent or out of range */
  uint32_t children;  /* <pool> elements directly inside it */
} pool_xml;

typedef struct pools_xml {
  pool_xml *pools; /* npools of them (malloc'd); NULL when none */
  size_t npools;
  size_t nested;   /* of which inside another */
  size_t defaults; /* values that were not values, replaced by their defaults (Spark's way) */
} pools_xml;

/* Called once per value replaced by its default, with a line that says which (no newline). */
typedef void pools_xml_warn_fn(void *ud, const char *line);

/* Reads an allocation file from memory: 0 with *out filled (pools_xml_free frees it), or -1
 * with *out empty and a line in err (cap bytes, NUL-terminated) saying what was wrong. warn may
 * be NULL. */
int pools_xml_read_memory(const char *buf, size_t len, pools_xml *out, char *err, size_t cap,
                          pools_xml_warn_fn *warn, void *ud);
/* The same from a file: at most POOLS_XML_FILE_MAX bytes, a regular file. */
int pools_xml_read_file(const char *path, pools_xml *out, char *err, size_t cap,
                        pools_xml_warn_fn *warn, void *ud);
void pools_xml_free(pools_xml *p);

/* Adds the pools to s (a TL_FAIR ledger), parents first. A pool named "default" is the ledger's
 * own (the reader accepts it only at the top level, childless): it is not added but given the
 * file's settings (tl_pool_set). 0, or -1 with err saying which pool the ledger refused and
 * why. */
int pools_xml_apply(const pools_xml *p, tl_scheduler *s, char *err, size_t cap);

/* A pool name as the file and --job's %POOL take it: 1 to POOLS_XML_NAME_MAX bytes of printable
 * ASCII, no space and no comma. */
bool pools_xml_name_ok(const char *name, size_t len);

#endif
