/* tl-executor's resources (docs/cluster.md "Resources"): what it declares in REGISTER, from
 * --resource NAME=ADDR,... and --resource-discovery SCRIPT (Spark's discovery-script contract),
 * the addresses each launched task holds, checked against what it declared and against what its
 * other running tasks hold, and the environment a task's process gets for them. No I/O but the
 * discovery script's; no global state.
 */
#ifndef TLC_RESOURCES_H
#define TLC_RESOURCES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* A discovery script's bounds: its standard output is at most RES_SCRIPT_OUTPUT_MAX bytes (more
 * is an error, the script killed), and it must exit within a time limit, RES_SCRIPT_TIMEOUT_MS
 * unless tl-executor --discovery-timeout-ms says otherwise (else it is killed, SIGKILL, and that
 * is an error). */
#define RES_SCRIPT_OUTPUT_MAX 65536
#define RES_SCRIPT_TIMEOUT_MS 10000

/* A task's use of an address is counted in RES_SHARE_UNIT per whole address (the least common
 * multiple of 1..TLC_SHARE_MAX, as the library's TL_SHARE_UNIT), so that every share is exact. */
#define RES_SHARE_UNIT UINT64_C(144403552893600)

/* One resource the executor declares. */
typedef struct res_resource {
  char name[TLC_RESOURCE_NAME_MAX + 1]; /* NUL-terminated */
  char **addresses;                     /* naddresses NUL-terminated strings, owned */
  uint32_t naddresses;                  /* 1..TLC_RESOURCE_ADDRESSES_MAX */
  uint64_t *use;                        /* per address: what the running tasks hold, in
                                           RES_SHARE_UNITs (at most one unit) */
} res_resource;

/* Every resource it declares, and their wire form for REGISTER. */
typedef struct res_set {
  res_resource list[TLC_RESOURCES_MAX]; /* n of them, in declaration order */
  size_t n;
  size_t naddresses;                    /* over every resource: at most
                                           TLC_REGISTER_ADDRESSES_MAX */
  tlc_resource wire[TLC_RESOURCES_MAX]; /* res_wire's, pointing into list */
  tlc_view wire_addresses[TLC_REGISTER_ADDRESSES_MAX];
} res_set;

/* One address a task holds: indices into the set, and its share (1: the whole address). */
typedef struct res_grant {
  uint16_t resource;
  uint16_t address;
  uint8_t share;
} res_grant;

/* Adds the resource of a --resource NAME=ADDR,ADDR,... flag. 0, or -1 with a sentence in err
 * (errlen bytes) and the set unchanged: a name or address out of its bounds or character set,
 * too many resources or addresses, a name declared already (or one whose environment variable,
 * TL_RESOURCE_<NAME>, another's would be), two equal addresses. */
int res_add_flag(res_set *s, const char *spec, char *err, size_t errlen);

/* Runs a discovery script (no arguments, standard input /dev/null, standard error inherited),
 * reads its standard output, at most RES_SCRIPT_OUTPUT_MAX bytes within timeout_ms,
 * and adds the resource of the one JSON object it prints: {"name": "gpu", "addresses": ["0",
 * "1"]} (other members are ignored). 0, or -1 with a sentence in err and the set unchanged: the
 * script could not run, exited other than 0, wrote too much, took too long, printed no such
 * object, or a resource res_add_flag would refuse. */
int res_discover(res_set *s, const char *script, uint64_t timeout_ms, char *err, size_t errlen);

/* The set as REGISTER carries it: s->wire[0 .. s->n), valid while the set is. */
const tlc_resource *res_wire(res_set *s);

/* Maps a LAUNCH item's grants to the set's indices in out[0 .. n). False, with a sentence in
 * err, when one names a resource or an address the executor did not declare, or one address
 * twice. */
bool res_resolve(const res_set *s, const tlc_grant *g, size_t n, res_grant *out, char *err,
                 size_t errlen);

/* Books a starting task's grants: false (nothing booked) when one would take an address beyond
 * its whole, a whole address another running task holds any share of, or 1/k when less is left:
 * the driver granted what the executor's running tasks hold. */
bool res_take(res_set *s, const res_grant *g, size_t n);

/* Whether res_take would book them now. */
bool res_fits(const res_set *s, const res_grant *g, size_t n);

/* Gives back what res_take booked. */
void res_give(res_set *s, const res_grant *g, size_t n);

/* The environment of a task's process: every variable of envp but those it sets (TL_RESOURCE_*,
 * CUDA_VISIBLE_DEVICES when the set declares `gpu`), then extra[0 .. nextra) ("NAME=value"),
 * then, per declared resource, TL_RESOURCE_<NAME> (upper-cased, a byte outside [A-Z0-9_] as
 * '_') = the addresses the task holds, comma-separated in grant order (empty when none), and
 * CUDA_VISIBLE_DEVICES likewise for `gpu`. A NULL-terminated array whose strings are in the same
 * allocation: free() it once. NULL when out of memory. */
char **res_env(const res_set *s, const res_grant *g, size_t n, char *const *envp,
               const char *const *extra, size_t nextra);

/* Frees what the set holds; it is empty again. */
void res_free(res_set *s);

#endif /* TLC_RESOURCES_H */
