/* Authentication: the shared token (made, read or checked at the start), its comparison with a
 * REGISTER's, and the back-off of addresses that send wrong tokens. */

#include <sys/socket.h>
#include <netinet/in.h>

#include "driver.h"

/* Compares the whole of both tokens whatever they hold: the time taken depends only on the
 * length of the expected token. */
bool token_matches(const char *expected, tlc_view got) {
  size_t n = strlen(expected);
  unsigned diff = got.len != n;
  for (size_t i = 0; i < n; i++)
    diff |= (unsigned)(uint8_t)expected[i] ^ (unsigned)(i < got.len ? got.ptr[i] : 0);
  return diff == 0;
}

/* ---------------------------------------------------------------------------------------------
 * Failed authentications are slowed, by address.
 *
 * The first AUTH_FREE_FAILURES wrong tokens from an address cost it nothing more than their
 * connections; after that each one makes the address wait, exponentially: AUTH_WAIT_FIRST_MS,
 * then twice that, up to AUTH_WAIT_MAX_MS. While it waits, every connection from it is closed as
 * soon as it is accepted, before a byte is read. So one address makes at most about one guess a
 * minute once the back-off is at its cap: a 4-digit token (10,000 guesses) takes about a week,
 * a 16-byte one never falls. An address with no failure for AUTH_FORGET_MS starts afresh. At
 * most AUTH_TRACKED_MAX addresses are remembered (the one whose last failure is oldest makes
 * room for a new one), so the table's memory is bounded whatever the attacker's addresses. An
 * IPv6 address counts by its /64: one host may hold the whole prefix. The price: a real
 * executor behind an address that is waiting is refused too until the wait ends (docs/cluster.md
 * says so); an executor started by the launcher then exits and is reported lost.
 * ------------------------------------------------------------------------------------------- */

/* The key of a peer address: IPv4 as an IPv4-mapped IPv6 address, IPv6 by its first 64 bits. */
void auth_key(const struct sockaddr_storage *sa, uint8_t key[16]) {
  memset(key, 0, 16);
  if (sa->ss_family == AF_INET) {
    key[10] = key[11] = 0xff;
    memcpy(key + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
  } else if (sa->ss_family == AF_INET6) {
    const uint8_t *a = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (!memcmp(a, mapped, 12)) /* an IPv4 peer on a dual-stack socket */
      memcpy(key, a, 16);
    else
      memcpy(key, a, 8);
  }
}

/* The address's record, or NULL; a stale one is forgotten. */
auth_rec *auth_find(driver *d, const uint8_t key[16], uint64_t now) {
  auth_rec *a = NULL;
  HASH_FIND(hh, d->auth.addrs, key, 16, a);
  if (a && now - a->last_ns > (uint64_t)AUTH_FORGET_MS * 1000000u && now >= a->wait_until) {
    HASH_DEL(d->auth.addrs, a);
    free(a);
    d->auth.nauth--;
    a = NULL;
  }
  return a;
}

/* A wrong token from c's address: counted, logged (rate-limited, whatever --quiet says) with the
 * address, and the address made to wait once it has had its free failures. */
void auth_failed(driver *d, conn *c) {
  uint64_t now = uv_hrtime();
  d->auth.auth_failures++;
  auth_rec *a = auth_find(d, c->addr_key, now);
  if (!a) {
    if (d->auth.nauth == AUTH_TRACKED_MAX) { /* room: the stalest address goes */
      auth_rec *stalest = d->auth.addrs, *it, *tmp;
      HASH_ITER(hh, d->auth.addrs, it, tmp) {
        if (it->last_ns < stalest->last_ns)
          stalest = it;
      }
      HASH_DEL(d->auth.addrs, stalest);
      free(stalest);
      d->auth.nauth--;
    }
    a = calloc(1, sizeof *a);
    if (!a)
      die_oom();
    memcpy(a->key, c->addr_key, 16);
    HASH_ADD(hh, d->auth.addrs, key, 16, a);
    d->auth.nauth++;
    d->auth.auth_addresses++;
  }
  a->failures++;
  a->last_ns = now;
  uint64_t wait_ms = 0;
  if (a->failures > AUTH_FREE_FAILURES) {
    uint32_t doublings = a->failures - AUTH_FREE_FAILURES - 1;
    wait_ms = doublings >= 6 ? AUTH_WAIT_MAX_MS : (uint64_t)AUTH_WAIT_FIRST_MS << doublings;
    if (wait_ms > AUTH_WAIT_MAX_MS)
      wait_ms = AUTH_WAIT_MAX_MS;
    a->wait_until = now + wait_ms * 1000000u;
  }
  if (edge_log_ok(&d->log.auth, "wrong-token lines"))
    fprintf(stderr,
            "tl-driver: REGISTER from %s with a wrong token: failure %" PRIu32
            " from that address; it waits %" PRIu64 " ms\n",
            c->peer, a->failures, wait_ms);
}

/* Reads a token file into buf (len bytes, NUL included): its first line, without the line end
 * (check_token then wants TOKEN_MIN bytes of it). Exits with status 2 when it cannot be read or
 * is too long. */
static void read_token_file(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "tl-driver: cannot open the token file %s\n", path);
    exit(2);
  }
  size_t n = fread(buf, 1, len, f);
  fclose(f);
  size_t end = 0;
  while (end < n && buf[end] != '\n' && buf[end] != '\r')
    end++;
  if (end == len) {
    fprintf(stderr, "tl-driver: the token file %s is longer than %zu bytes\n", path, len - 1);
    exit(2);
  }
  buf[end] = '\0';
}

/* A token given by the user must be at least TOKEN_MIN bytes, from every source: an empty one
 * would turn authentication off and a short one falls to guessing. Exits with status 2. */
static void check_token(const char *token, const char *source) {
  size_t n = strlen(token);
  if (n >= TOKEN_MIN)
    return;
  fprintf(stderr,
          "tl-driver: the token from %s is %zu bytes: at least %d are needed; make one with\n"
          "  head -c 32 /dev/urandom | base64\n",
          source, n, TOKEN_MIN);
  exit(2);
}

/* The token: from --token-file, else TL_CLUSTER_TOKEN (set, even empty, it is the token), else
 * TOKEN_BYTES from /dev/urandom, hex-encoded; put in the environment the executors inherit
 * (never on their command line, where ps would show it). */
void make_token(driver *d, const char *token_file) {
  if (token_file) {
    read_token_file(token_file, d->auth.token, sizeof d->auth.token);
    check_token(d->auth.token, "--token-file");
    if (setenv("TL_CLUSTER_TOKEN", d->auth.token, 1) != 0)
      die_oom();
    return;
  }
  const char *env = getenv("TL_CLUSTER_TOKEN");
  if (env) {
    if (strlen(env) > 2 * TOKEN_BYTES) {
      fprintf(stderr, "tl-driver: TL_CLUSTER_TOKEN is longer than %d bytes\n", 2 * TOKEN_BYTES);
      exit(2);
    }
    check_token(env, "TL_CLUSTER_TOKEN");
    strcpy(d->auth.token, env);
    return;
  }
  uint8_t raw[TOKEN_BYTES];
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(raw, 1, sizeof raw, f) != sizeof raw) {
    fprintf(stderr, "tl-driver: cannot read /dev/urandom\n");
    exit(1);
  }
  fclose(f);
  for (size_t i = 0; i < TOKEN_BYTES; i++)
    snprintf(d->auth.token + 2 * i, 3, "%02x", raw[i]);
  if (setenv("TL_CLUSTER_TOKEN", d->auth.token, 1) != 0)
    die_oom();
}

void auth_free(driver *d) {
  auth_rec *ar, *ar_tmp;
  HASH_ITER(hh, d->auth.addrs, ar, ar_tmp) {
    HASH_DEL(d->auth.addrs, ar);
    free(ar);
  }
}
