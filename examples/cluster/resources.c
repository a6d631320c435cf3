/* tl-executor's resources (resources.h, docs/cluster.md "Resources"): declarations from flags
 * and discovery scripts, each bounded and checked as the library and the wire want them; the
 * grants of launched tasks checked and booked; the environment of a task's process.
 */
#define _POSIX_C_SOURCE 200809L
#include "resources.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

_Static_assert(RES_SHARE_UNIT % 27 == 0 && RES_SHARE_UNIT % 32 == 0 && RES_SHARE_UNIT % 31 == 0,
               "a share 1/k of every k up to TLC_SHARE_MAX is a whole number of units");

static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

/* ---------------------------------------------------------------------------------------------
 * Names and addresses: the library's bounds and character sets (include/taskledger.h)
 * ------------------------------------------------------------------------------------------- */

static bool name_ok(const char *s, size_t len) {
  if (len == 0 || len > TLC_RESOURCE_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-'))
      return false;
  }
  return true;
}

static bool address_ok(const char *s, size_t len) {
  if (len == 0 || len > TLC_ADDRESS_MAX)
    return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= ' ' || c > '~' || c == ',' || c == '"' || c == '\\')
      return false;
  }
  return true;
}

/* The environment variable's name part: upper-cased, anything outside [A-Z0-9_] as '_'. */
static void env_name(const char *name, char *out) {
  size_t i = 0;
  for (; name[i]; i++) {
    char c = name[i];
    if (c >= 'a' && c <= 'z')
      c = (char)(c - 'a' + 'A');
    out[i] = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ? c : '_';
  }
  out[i] = '\0';
}

/* Adds a resource of name[0 .. nlen) and naddr addresses (each addr[i][0 .. alen[i])), all
 * checked before anything is changed. */
static int add_resource(res_set *s, const char *name, size_t nlen, const char *const *addr,
                        const size_t *alen, size_t naddr, char *err, size_t errlen) {
  if (!name_ok(name, nlen))
    return fail(err, errlen, "resource name '%.*s': 1 to %d bytes of [A-Za-z0-9_.-] are allowed",
                (int)(nlen > 80 ? 80 : nlen), name, TLC_RESOURCE_NAME_MAX);
  if (s->n == TLC_RESOURCES_MAX)
    return fail(err, errlen, "more than %d resources", TLC_RESOURCES_MAX);
  char key[TLC_RESOURCE_NAME_MAX + 1], other[TLC_RESOURCE_NAME_MAX + 1];
  memcpy(key, name, nlen);
  key[nlen] = '\0';
  env_name(key, key);
  for (size_t i = 0; i < s->n; i++) {
    env_name(s->list[i].name, other);
    if (strcmp(key, other) == 0)
      return fail(err, errlen, "resource '%.*s' is declared twice (its variable TL_RESOURCE_%s)",
                  (int)nlen, name, key);
  }
  if (naddr == 0 || naddr > TLC_RESOURCE_ADDRESSES_MAX)
    return fail(err, errlen, "resource '%.*s': 1 to %d addresses are allowed, not %zu", (int)nlen,
                name, TLC_RESOURCE_ADDRESSES_MAX, naddr);
  if (naddr > TLC_REGISTER_ADDRESSES_MAX - s->naddresses)
    return fail(err, errlen, "more than %d addresses in all", TLC_REGISTER_ADDRESSES_MAX);
  for (size_t i = 0; i < naddr; i++) {
    if (!address_ok(addr[i], alen[i]))
      return fail(err, errlen,
                  "resource '%.*s': address '%.*s': 1 to %d bytes of printable ASCII but space, "
                  "',', '\"' and '\\' are allowed",
                  (int)nlen, name, (int)(alen[i] > 80 ? 80 : alen[i]), addr[i], TLC_ADDRESS_MAX);
    for (size_t j = 0; j < i; j++)
      if (alen[j] == alen[i] && memcmp(addr[j], addr[i], alen[i]) == 0)
        return fail(err, errlen, "resource '%.*s': address '%.*s' is declared twice", (int)nlen,
                    name, (int)alen[i], addr[i]);
  }
  res_resource *r = &s->list[s->n];
  r->addresses = calloc(naddr, sizeof *r->addresses);
  r->use = calloc(naddr, sizeof *r->use);
  if (!r->addresses || !r->use)
    goto oom;
  for (size_t i = 0; i < naddr; i++) {
    r->addresses[i] = malloc(alen[i] + 1);
    if (!r->addresses[i])
      goto oom;
    memcpy(r->addresses[i], addr[i], alen[i]);
    r->addresses[i][alen[i]] = '\0';
  }
  memcpy(r->name, name, nlen);
  r->name[nlen] = '\0';
  r->naddresses = (uint32_t)naddr;
  s->naddresses += naddr;
  s->n++;
  return 0;
oom:
  if (r->addresses)
    for (size_t i = 0; i < naddr; i++)
      free(r->addresses[i]);
  free(r->addresses);
  free(r->use);
  memset(r, 0, sizeof *r);
  return fail(err, errlen, "out of memory");
}

int res_add_flag(res_set *s, const char *spec, char *err, size_t errlen) {
  const char *eq = strchr(spec, '=');
  if (!eq)
    return fail(err, errlen, "--resource '%.80s': NAME=ADDR[,ADDR]... is expected", spec);
  static const char *addr[TLC_RESOURCE_ADDRESSES_MAX + 1];
  static size_t alen[TLC_RESOURCE_ADDRESSES_MAX + 1];
  size_t n = 0;
  const char *p = eq + 1;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (n == TLC_RESOURCE_ADDRESSES_MAX + 1) /* one more than allowed: refused below */
      break;
    addr[n] = p;
    alen[n++] = len;
    if (!comma)
      break;
    p = comma + 1;
  }
  return add_resource(s, spec, (size_t)(eq - spec), addr, alen, n, err, errlen);
}

/* ---------------------------------------------------------------------------------------------
 * Discovery scripts
 * ------------------------------------------------------------------------------------------- */

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs the script, its output into buf (at most cap bytes, *len of them). 0 or -1 with err. */
static int run_script(const char *script, uint64_t timeout_ms, char *buf, size_t cap, size_t *len,
                      char *err, size_t errlen) {
  int fds[2];
  if (pipe(fds) != 0)
    return fail(err, errlen, "discovery script %s: pipe: %s", script, strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return fail(err, errlen, "discovery script %s: fork: %s", script, strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0); /* its own group: a kill takes its children too */
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
      dup2(null, 0);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execl(script, script, (char *)NULL);
    fprintf(stderr, "tl-executor: discovery script %s: %s\n", script, strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  uint64_t deadline = now_ms() + timeout_ms;
  const char *why = NULL;
  *len = 0;
  for (;;) {
    uint64_t now = now_ms();
    if (now >= deadline) {
      why = "ran longer than its limit";
      break;
    }
    struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
    int rc = poll(&pfd, 1, (int)(deadline - now));
    if (rc < 0 && errno == EINTR)
      continue;
    if (rc < 0) {
      why = "poll failed";
      break;
    }
    if (rc == 0)
      continue; /* the deadline, checked above */
    char chunk[4096];
    ssize_t got = read(fds[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      break; /* end of its output */
    if ((size_t)got > cap - *len) {
      why = "wrote more than its limit";
      break;
    }
    memcpy(buf + *len, chunk, (size_t)got);
    *len += (size_t)got;
  }
  close(fds[0]);
  if (why)
    kill(-pid, SIGKILL); /* the script and whatever it started */
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (why)
    return fail(err, errlen, "discovery script %s %s (%d bytes, %" PRIu64 " ms): killed", script,
                why, RES_SCRIPT_OUTPUT_MAX, timeout_ms);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return fail(err, errlen, "discovery script %s failed (%s %d)", script,
                WIFEXITED(status) ? "exit status" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
  return 0;
}

int res_discover(res_set *s, const char *script, uint64_t timeout_ms, char *err, size_t errlen) {
  static char out[RES_SCRIPT_OUTPUT_MAX];
  size_t len = 0;
  if (run_script(script, timeout_ms, out, sizeof out, &len, err, errlen) != 0)
    return -1;
  json_error_t jerr;
  json_t *root = json_loadb(out, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return fail(err, errlen, "discovery script %s: its output is not JSON: %s (line %d)", script,
                jerr.text, jerr.line);
  int rc = -1;
  json_t *name = json_object_get(root, "name");
  json_t *addresses = json_object_get(root, "addresses");
  if (!json_is_object(root) || !json_is_string(name) || !json_is_array(addresses)) {
    fail(err, errlen,
         "discovery script %s: one object {\"name\": \"...\", \"addresses\": [\"...\", ...]} "
         "is expected",
         script);
    goto out;
  }
  size_t n = json_array_size(addresses);
  if (n == 0 || n > TLC_RESOURCE_ADDRESSES_MAX) {
    fail(err, errlen, "discovery script %s: 1 to %d addresses are allowed, not %zu", script,
         TLC_RESOURCE_ADDRESSES_MAX, n);
    goto out;
  }
  static const char *addr[TLC_RESOURCE_ADDRESSES_MAX];
  static size_t alen[TLC_RESOURCE_ADDRESSES_MAX];
  for (size_t i = 0; i < n; i++) {
    json_t *a = json_array_get(addresses, i);
    if (!json_is_string(a)) {
      fail(err, errlen, "discovery script %s: address %zu is not a string", script, i);
      goto out;
    }
    addr[i] = json_string_value(a);
    alen[i] = json_string_length(a); /* a NUL inside fails the character set */
  }
  char inner[512];
  if (add_resource(s, json_string_value(name), json_string_length(name), addr, alen, n, inner,
                   sizeof inner) != 0) {
    fail(err, errlen, "discovery script %s: %s", script, inner);
    goto out;
  }
  rc = 0;
out:
  json_decref(root);
  return rc;
}

/* ---------------------------------------------------------------------------------------------
 * REGISTER, grants, environment
 * ------------------------------------------------------------------------------------------- */

const tlc_resource *res_wire(res_set *s) {
  size_t at = 0;
  for (size_t i = 0; i < s->n; i++) {
    const res_resource *r = &s->list[i];
    for (uint32_t a = 0; a < r->naddresses; a++)
      s->wire_addresses[at + a] = tlc_str(r->addresses[a]);
    s->wire[i] = (tlc_resource){tlc_str(r->name), r->naddresses, s->wire_addresses + at};
    at += r->naddresses;
  }
  return s->n > 0 ? s->wire : NULL;
}

static bool view_is(tlc_view v, const char *s) {
  return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

bool res_resolve(const res_set *s, const tlc_grant *g, size_t n, res_grant *out, char *err,
                 size_t errlen) {
  for (size_t i = 0; i < n; i++) {
    size_t r = 0;
    while (r < s->n && !view_is(g[i].name, s->list[r].name))
      r++;
    uint32_t a = 0;
    while (r < s->n && a < s->list[r].naddresses && !view_is(g[i].address, s->list[r].addresses[a]))
      a++;
    if (r == s->n || a == s->list[r].naddresses) {
      fail(err, errlen, "granted %.*s %.*s, which it did not declare", (int)g[i].name.len,
           (const char *)g[i].name.ptr, (int)g[i].address.len, (const char *)g[i].address.ptr);
      return false;
    }
    for (size_t j = 0; j < i; j++)
      if (out[j].resource == r && out[j].address == a) {
        fail(err, errlen, "granted %s %s twice", s->list[r].name, s->list[r].addresses[a]);
        return false;
      }
    out[i] = (res_grant){(uint16_t)r, (uint16_t)a, g[i].share};
  }
  return true;
}

static uint64_t units(uint8_t share) { return RES_SHARE_UNIT / (share > 1 ? share : 1); }

bool res_fits(const res_set *s, const res_grant *g, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint64_t use = s->list[g[i].resource].use[g[i].address];
    /* A whole address: nobody holds any of it. A share: what is left covers it. */
    if (use > RES_SHARE_UNIT - units(g[i].share))
      return false;
  }
  return true;
}

bool res_take(res_set *s, const res_grant *g, size_t n) {
  if (!res_fits(s, g, n))
    return false;
  for (size_t i = 0; i < n; i++)
    s->list[g[i].resource].use[g[i].address] += units(g[i].share);
  return true;
}

void res_give(res_set *s, const res_grant *g, size_t n) {
  for (size_t i = 0; i < n; i++)
    s->list[g[i].resource].use[g[i].address] -= units(g[i].share);
}

#define ENV_PREFIX "TL_RESOURCE_"
#define CUDA "CUDA_VISIBLE_DEVICES"

static bool has_gpu(const res_set *s) {
  for (size_t i = 0; i < s->n; i++)
    if (strcmp(s->list[i].name, "gpu") == 0)
      return true;
  return false;
}

/* Writes VAR=addresses of resource r the task holds into p; returns the byte after its NUL. */
static char *put_var(char *p, const char *var, const res_set *s, size_t r, const res_grant *g,
                     size_t n) {
  p += sprintf(p, "%s=", var);
  bool first = true;
  for (size_t i = 0; i < n; i++)
    if (g[i].resource == r) {
      p += sprintf(p, "%s%s", first ? "" : ",", s->list[r].addresses[g[i].address]);
      first = false;
    }
  return p + 1;
}

char **res_env(const res_set *s, const res_grant *g, size_t n, char *const *envp,
               const char *const *extra, size_t nextra) {
  bool gpu = has_gpu(s);
  size_t nvars = 0, bytes = 0;
  for (char *const *e = envp; e && *e; e++) {
    if (strncmp(*e, ENV_PREFIX, strlen(ENV_PREFIX)) == 0 ||
        (gpu && strncmp(*e, CUDA "=", strlen(CUDA) + 1) == 0))
      continue;
    nvars++;
  }
  size_t nres = s->n + (gpu ? 1 : 0);
  /* Each variable of a resource: its name, '=', every address and a comma, the NUL. */
  for (size_t i = 0; i < nextra; i++)
    bytes += strlen(extra[i]) + 1;
  for (size_t r = 0; r < s->n; r++) {
    size_t held = 0;
    for (size_t i = 0; i < n; i++)
      if (g[i].resource == r)
        held += strlen(s->list[r].addresses[g[i].address]) + 1;
    bytes += (sizeof ENV_PREFIX + sizeof CUDA + TLC_RESOURCE_NAME_MAX + 2 + held) *
             (strcmp(s->list[r].name, "gpu") == 0 ? 2 : 1);
  }
  size_t slots = nvars + nextra + nres + 1;
  char **env = malloc(slots * sizeof *env + bytes);
  if (!env)
    return NULL;
  char *p = (char *)(env + slots);
  size_t k = 0;
  for (char *const *e = envp; e && *e; e++) {
    if (strncmp(*e, ENV_PREFIX, strlen(ENV_PREFIX)) == 0 ||
        (gpu && strncmp(*e, CUDA "=", strlen(CUDA) + 1) == 0))
      continue;
    env[k++] = *e; /* the caller's strings, as they are: not copied */
  }
  for (size_t i = 0; i < nextra; i++) {
    env[k++] = p;
    p = stpcpy(p, extra[i]) + 1;
  }
  for (size_t r = 0; r < s->n; r++) {
    char var[sizeof ENV_PREFIX + TLC_RESOURCE_NAME_MAX];
    memcpy(var, ENV_PREFIX, strlen(ENV_PREFIX));
    env_name(s->list[r].name, var + strlen(ENV_PREFIX));
    env[k++] = p;
    p = put_var(p, var, s, r, g, n);
    if (strcmp(s->list[r].name, "gpu") == 0) {
      env[k++] = p;
      p = put_var(p, CUDA, s, r, g, n);
    }
  }
  env[k] = NULL;
  return env;
}

void res_free(res_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    for (uint32_t a = 0; a < s->list[i].naddresses; a++)
      free(s->list[i].addresses[a]);
    free(s->list[i].addresses);
    free(s->list[i].use);
  }
  memset(s, 0, sizeof *s);
}
