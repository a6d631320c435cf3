/* The cluster example's frame codec (proto.h, docs/cluster.md). Its fields are written and read
 * with the project's byte codec (lib/codec.h): little-endian, a byte at a time, so the code
 * depends on neither the host's byte order nor its alignment; every length read from the wire
 * is checked against its bound and against the bytes left before it is used.
 */
#include "proto.h"

#include <stdlib.h>
#include <string.h>

#include "codec.h"

/* Bytes of a frame before its body: the length prefix, then the version and type bytes. */
#define PREFIX_BYTES 4
#define HEAD_BYTES 2

/* The smallest wire size of a batch item, to refuse a count the frame cannot hold before
 * allocating for it: every fixed field and every length, with empty strings. (A launch's kind
 * must not be empty, but an item that sends one is refused as ELENGTH, not as a bad count.) */
#define LAUNCH_ITEM_MIN (8 + 8 + 4 + 4 + 1 + 2 + 1)
#define GRANT_MIN (2 + 1 + 2 + 1 + 1) /* a grant of a 1-byte name and a 1-byte address */
#define ADDRESS_MIN (2 + 1)           /* an address of 1 byte */
#define STATUS_ITEM_MIN (8 + 1 + 4 + 2)

/* ---------------------------------------------------------------------------------------------
 * Names
 * ------------------------------------------------------------------------------------------- */

const char *tlc_err_name(int err) {
  switch (err) {
  case TLC_OK:
    return "OK";
#define TLC__NAME_CASE(name, value, sentence)                                                      \
  case TLC_##name:                                                                                 \
    return #name;
    TLC_ERRNO_MAP(TLC__NAME_CASE)
#undef TLC__NAME_CASE
  default:
    return "UNKNOWN";
  }
}

const char *tlc_strerror(int err) {
  switch (err) {
  case TLC_OK:
    return "Success.";
#define TLC__SENTENCE_CASE(name, value, sentence)                                                  \
  case TLC_##name:                                                                                 \
    return sentence;
    TLC_ERRNO_MAP(TLC__SENTENCE_CASE)
#undef TLC__SENTENCE_CASE
  default:
    return "Unknown error.";
  }
}

const char *tlc_msg_type_name(int type) {
  switch (type) {
  case TLC_MSG_NONE:
    return "NONE";
  case TLC_MSG_REGISTER:
    return "REGISTER";
  case TLC_MSG_HEARTBEAT:
    return "HEARTBEAT";
  case TLC_MSG_TASKSET_BINARY:
    return "TASKSET_BINARY";
  case TLC_MSG_LAUNCH:
    return "LAUNCH";
  case TLC_MSG_STATUS:
    return "STATUS";
  case TLC_MSG_KILL:
    return "KILL";
  case TLC_MSG_STOP:
    return "STOP";
  case TLC_MSG_FORGET:
    return "FORGET";
  case TLC_MSG_RECONCILE:
    return "RECONCILE";
  case TLC_MSG_SYNCED:
    return "SYNCED";
  case TLC_MSG_EPOCH:
    return "EPOCH";
  default:
    return "UNKNOWN";
  }
}

tlc_view tlc_str(const char *s) {
  tlc_view v = {(const uint8_t *)s, s == NULL ? 0 : strlen(s)};
  return v;
}

/* ---------------------------------------------------------------------------------------------
 * Field rules, shared by the encoder and the decoder so that both refuse the same messages
 * ------------------------------------------------------------------------------------------- */

/* A string field: min..max bytes, none of them NUL. */
static int check_string(tlc_view v, size_t min, size_t max) {
  if (v.len < min || v.len > max)
    return TLC_ELENGTH;
  if (v.len > 0 && memchr(v.ptr, 0, v.len) != NULL)
    return TLC_ENUL;
  return TLC_OK;
}

static int check_state(uint8_t state) {
  return state >= TLC_TASK_RUNNING && state <= TLC_TASK_KILLED ? TLC_OK : TLC_ESTATE;
}

static int check_flag(uint8_t flag) { return flag <= 1 ? TLC_OK : TLC_EFLAG; }

/* A flags byte: no bit outside those its field defines. */
static int check_flags(uint8_t flags, unsigned defined) {
  return (flags & ~defined) == 0 ? TLC_OK : TLC_EFLAG;
}

/* A resource name: [A-Za-z0-9_.-] only (the library's rule, include/taskledger.h). */
static int check_name(tlc_view v) {
  for (size_t i = 0; i < v.len; i++) {
    uint8_t c = v.ptr[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '.' || c == '-'))
      return TLC_ERESOURCE;
  }
  return TLC_OK;
}

/* An address: printable ASCII but space, ',', '"' and '\\' (so that a comma-separated list of
 * them, CUDA_VISIBLE_DEVICES, is unambiguous). */
static int check_address(tlc_view v) {
  for (size_t i = 0; i < v.len; i++) {
    uint8_t c = v.ptr[i];
    if (c <= ' ' || c > '~' || c == ',' || c == '"' || c == '\\')
      return TLC_ERESOURCE;
  }
  return TLC_OK;
}

static int check_resource_name(tlc_view v) {
  int rc = check_string(v, 1, TLC_RESOURCE_NAME_MAX);
  return rc ? rc : check_name(v);
}

static int check_resource_address(tlc_view v) {
  int rc = check_string(v, 1, TLC_ADDRESS_MAX);
  return rc ? rc : check_address(v);
}

static int check_share(uint8_t share) {
  return share >= 1 && share <= TLC_SHARE_MAX ? TLC_OK : TLC_ERESOURCE;
}

/* ---------------------------------------------------------------------------------------------
 * Encoder
 * ------------------------------------------------------------------------------------------- */

void tlc_buf_init(tlc_buf *buf) { memset(buf, 0, sizeof *buf); }

void tlc_buf_free(tlc_buf *buf) {
  free(buf->data);
  tlc_buf_init(buf);
}

/* A view the encoder may read: a NULL pointer only with no bytes. */
static int check_view(tlc_view v) { return v.ptr == NULL && v.len > 0 ? TLC_EINVAL : TLC_OK; }

/* Adds a field's bytes to a frame's size, refusing a frame over TLC_FRAME_MAX. Every field is
 * bounded far below SIZE_MAX - TLC_FRAME_MAX except a payload, which is checked first, so the
 * sum cannot overflow. */
static int add_size(size_t *size, size_t bytes) {
  if (bytes > TLC_FRAME_MAX || *size + bytes > TLC_FRAME_MAX)
    return TLC_ETOOBIG;
  *size += bytes;
  return TLC_OK;
}

/* Validates msg and computes its frame's size after the length prefix. */
static int measure(const tlc_msg *msg, size_t *size) {
  int rc;
  *size = HEAD_BYTES;
  switch (msg->type) {
  case TLC_MSG_REGISTER: {
    const tlc_register *m = &msg->u.reg;
    if ((rc = check_view(m->executor_id)) || (rc = check_view(m->host)) ||
        (rc = check_view(m->token)))
      return rc;
    if ((rc = check_string(m->executor_id, 1, TLC_ID_MAX)) ||
        (rc = check_string(m->host, 1, TLC_HOST_MAX)))
      return rc;
    if (m->cores == 0 || m->cores > TLC_CORES_MAX)
      return TLC_ECORES;
    if (m->token.len > TLC_TOKEN_MAX)
      return TLC_ELENGTH;
    if ((rc = add_size(size,
                       2 + m->executor_id.len + 2 + m->host.len + 4 + 4 + m->token.len + 4 + 1)))
      return rc;
    if (m->nresources > TLC_RESOURCES_MAX)
      return TLC_ERESOURCE;
    if (m->nresources > 0 && m->resources == NULL)
      return TLC_EINVAL;
    size_t all = 0;
    for (size_t i = 0; i < m->nresources; i++) {
      const tlc_resource *res = &m->resources[i];
      if ((rc = check_view(res->name)) || (rc = check_resource_name(res->name)))
        return rc;
      if (res->naddresses == 0 || res->naddresses > TLC_RESOURCE_ADDRESSES_MAX ||
          res->naddresses > TLC_REGISTER_ADDRESSES_MAX - all)
        return TLC_ERESOURCE;
      if (res->addresses == NULL)
        return TLC_EINVAL;
      all += res->naddresses;
      if ((rc = add_size(size, 2 + res->name.len + 2)))
        return rc;
      for (size_t a = 0; a < res->naddresses; a++)
        if ((rc = check_view(res->addresses[a])) ||
            (rc = check_resource_address(res->addresses[a])) ||
            (rc = add_size(size, 2 + res->addresses[a].len)))
          return rc;
    }
    return TLC_OK;
  }
  case TLC_MSG_HEARTBEAT:
    return add_size(size, 8 + 8);
  case TLC_MSG_TASKSET_BINARY:
    if ((rc = check_view(msg->u.binary.payload)))
      return rc;
    return add_size(size, 8 + 4 + msg->u.binary.payload.len);
  case TLC_MSG_LAUNCH: {
    const tlc_launch *m = &msg->u.launch;
    if (m->count == 0)
      return TLC_ECOUNT;
    if (m->items == NULL)
      return TLC_EINVAL;
    if ((rc = add_size(size, 4)))
      return rc;
    for (size_t i = 0; i < m->count; i++) {
      const tlc_launch_item *it = &m->items[i];
      if ((rc = check_flags(it->flags, TLC_LAUNCH_FLAGS)) || (rc = check_view(it->kind)) ||
          (rc = check_string(it->kind, 1, TLC_KIND_MAX)) ||
          (rc = add_size(size, 8 + 8 + 4 + 4 + 1 + 2 + it->kind.len + 1)))
        return rc;
      if (it->ngrants > TLC_GRANTS_MAX)
        return TLC_ERESOURCE;
      if (it->ngrants > 0 && it->grants == NULL)
        return TLC_EINVAL;
      for (size_t g = 0; g < it->ngrants; g++) {
        const tlc_grant *gr = &it->grants[g];
        if ((rc = check_view(gr->name)) || (rc = check_view(gr->address)) ||
            (rc = check_resource_name(gr->name)) || (rc = check_resource_address(gr->address)) ||
            (rc = check_share(gr->share)) ||
            (rc = add_size(size, 2 + gr->name.len + 2 + gr->address.len + 1)))
          return rc;
      }
    }
    return TLC_OK;
  }
  case TLC_MSG_STATUS: {
    const tlc_status *m = &msg->u.status;
    if (m->count == 0)
      return TLC_ECOUNT;
    if (m->items == NULL)
      return TLC_EINVAL;
    if ((rc = add_size(size, 4)))
      return rc;
    for (size_t i = 0; i < m->count; i++) {
      const tlc_status_item *it = &m->items[i];
      if ((rc = check_view(it->result)) || (rc = check_view(it->text)) ||
          (rc = check_state(it->state)))
        return rc;
      if (it->result.len > TLC_RESULT_MAX)
        return TLC_ELENGTH;
      if ((rc = check_string(it->text, 0, TLC_TEXT_MAX)) ||
          (rc = add_size(size, 8 + 1 + 4 + it->result.len + 2 + it->text.len)))
        return rc;
    }
    return TLC_OK;
  }
  case TLC_MSG_KILL: {
    const tlc_kill *m = &msg->u.kill;
    if ((rc = check_flag(m->interrupt)) || (rc = check_view(m->reason)) ||
        (rc = check_string(m->reason, 0, TLC_TEXT_MAX)))
      return rc;
    if (m->count == 0)
      return TLC_ECOUNT;
    if (m->tids == NULL)
      return TLC_EINVAL;
    if (m->count > TLC_FRAME_MAX / 8)
      return TLC_ETOOBIG;
    return add_size(size, 1 + 2 + m->reason.len + 4 + 8 * m->count);
  }
  case TLC_MSG_STOP:
    if ((rc = check_view(msg->u.stop.reason)) ||
        (rc = check_string(msg->u.stop.reason, 0, TLC_TEXT_MAX)))
      return rc;
    return add_size(size, 2 + msg->u.stop.reason.len);
  case TLC_MSG_FORGET:
    return add_size(size, 8);
  case TLC_MSG_RECONCILE: {
    const tlc_reconcile *m = &msg->u.reconcile;
    if ((rc = check_flag(m->more)))
      return rc;
    if (m->count > 0 && m->items == NULL)
      return TLC_EINVAL;
    if (m->count > TLC_RECONCILE_FRAME_ITEMS)
      return TLC_ETOOBIG;
    for (size_t i = 0; i < m->count; i++)
      if ((rc = check_flags(m->items[i].flags, TLC_RECONCILE_FLAGS)))
        return rc;
    return add_size(size, 1 + 4 + TLC_RECONCILE_ITEM_BYTES * m->count);
  }
  case TLC_MSG_SYNCED:
  case TLC_MSG_EPOCH:
    return add_size(size, 8);
  default:
    return TLC_ETYPE;
  }
}

/* Strings carry a 16-bit length, byte fields a 32-bit one; measure() bounded both. */
static void put_string(tl__wbuf *w, tlc_view v) { tl__put_str16(w, v.ptr, v.len); }
static void put_bytes(tl__wbuf *w, tlc_view v) { tl__put_str(w, v.ptr, v.len); }

int tlc_encode(tlc_buf *buf, const tlc_msg *msg) {
  if (buf == NULL || msg == NULL)
    return TLC_EINVAL;
  size_t size;
  int rc = measure(msg, &size);
  if (rc != TLC_OK)
    return rc;
  size_t need = PREFIX_BYTES + size;
  if (buf->cap - buf->len < need) {
    size_t cap = buf->cap > 0 ? buf->cap : 256;
    while (cap - buf->len < need)
      cap *= 2; /* buf->len + need is far below SIZE_MAX / 2: no overflow */
    uint8_t *grown = realloc(buf->data, cap);
    if (grown == NULL)
      return TLC_ENOMEM;
    buf->data = grown;
    buf->cap = cap;
  }

  /* measure() sized the frame, so the writer fills exactly the room made for it. */
  tl__wbuf w;
  tl__wbuf_init_fixed(&w, buf->data + buf->len, need);
  tl__put_u32(&w, (uint32_t)size);
  tl__put_u8(&w, TLC_PROTO_VERSION);
  tl__put_u8(&w, (uint8_t)msg->type);
  switch (msg->type) {
  case TLC_MSG_REGISTER:
    put_string(&w, msg->u.reg.executor_id);
    put_string(&w, msg->u.reg.host);
    tl__put_u32(&w, msg->u.reg.cores);
    put_bytes(&w, msg->u.reg.token);
    tl__put_u32(&w, msg->u.reg.profile);
    tl__put_u8(&w, (uint8_t)msg->u.reg.nresources);
    for (size_t i = 0; i < msg->u.reg.nresources; i++) {
      const tlc_resource *res = &msg->u.reg.resources[i];
      put_string(&w, res->name);
      tl__put_u16(&w, (uint16_t)res->naddresses);
      for (size_t a = 0; a < res->naddresses; a++)
        put_string(&w, res->addresses[a]);
    }
    break;
  case TLC_MSG_HEARTBEAT:
    tl__put_u64(&w, msg->u.heartbeat.seq);
    tl__put_u64(&w, msg->u.heartbeat.binaries);
    break;
  case TLC_MSG_TASKSET_BINARY:
    tl__put_u64(&w, msg->u.binary.taskset_id);
    put_bytes(&w, msg->u.binary.payload);
    break;
  case TLC_MSG_LAUNCH:
    tl__put_u32(&w, (uint32_t)msg->u.launch.count);
    for (size_t i = 0; i < msg->u.launch.count; i++) {
      const tlc_launch_item *it = &msg->u.launch.items[i];
      tl__put_u64(&w, it->tid);
      tl__put_u64(&w, it->taskset_id);
      tl__put_u32(&w, it->index);
      tl__put_u32(&w, it->attempt);
      tl__put_u8(&w, it->flags);
      put_string(&w, it->kind);
      tl__put_u8(&w, (uint8_t)it->ngrants);
      for (size_t g = 0; g < it->ngrants; g++) {
        put_string(&w, it->grants[g].name);
        put_string(&w, it->grants[g].address);
        tl__put_u8(&w, it->grants[g].share);
      }
    }
    break;
  case TLC_MSG_STATUS:
    tl__put_u32(&w, (uint32_t)msg->u.status.count);
    for (size_t i = 0; i < msg->u.status.count; i++) {
      const tlc_status_item *it = &msg->u.status.items[i];
      tl__put_u64(&w, it->tid);
      tl__put_u8(&w, it->state);
      put_bytes(&w, it->result);
      put_string(&w, it->text);
    }
    break;
  case TLC_MSG_KILL:
    tl__put_u8(&w, msg->u.kill.interrupt);
    put_string(&w, msg->u.kill.reason);
    tl__put_u32(&w, (uint32_t)msg->u.kill.count);
    for (size_t i = 0; i < msg->u.kill.count; i++)
      tl__put_u64(&w, msg->u.kill.tids[i]);
    break;
  case TLC_MSG_STOP:
    put_string(&w, msg->u.stop.reason);
    break;
  case TLC_MSG_RECONCILE:
    tl__put_u8(&w, msg->u.reconcile.more);
    tl__put_u32(&w, (uint32_t)msg->u.reconcile.count);
    for (size_t i = 0; i < msg->u.reconcile.count; i++) {
      const tlc_reconcile_item *it = &msg->u.reconcile.items[i];
      tl__put_u64(&w, it->tid);
      tl__put_u64(&w, it->taskset_id);
      tl__put_u32(&w, it->index);
      tl__put_u32(&w, it->attempt);
      tl__put_u8(&w, it->flags);
    }
    break;
  case TLC_MSG_SYNCED:
    tl__put_u64(&w, msg->u.synced.frames);
    break;
  case TLC_MSG_EPOCH:
    tl__put_u64(&w, msg->u.epoch.epoch);
    break;
  default: /* TLC_MSG_FORGET: measure() refused every other type */
    tl__put_u64(&w, msg->u.forget.taskset_id);
    break;
  }
  if (w.failed || w.len != need)
    return TLC_EINVAL; /* never: measure() and the writes above disagree */
  buf->len += need;
  return TLC_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Body parser
 * ------------------------------------------------------------------------------------------- */

/* The body is read with the codec's reader over the complete frame: every getter checks the
 * bytes left first, and the reader keeps the first fault, which these helpers return as the
 * protocol's error the moment it happens, so a body's faults come in the order of its fields. */

/* The reader's first fault as the protocol's error: a field past the end of the frame is
 * ETRUNCATED, a string or byte field's length outside its bounds ELENGTH (the codec checks a
 * length against its bounds before it looks for the bytes). */
static int fault(const tl__rbuf *r) {
  switch (r->fault) {
  case TL__RFAULT_NONE:
    return TLC_OK;
  case TL__RFAULT_RANGE:
    return TLC_ELENGTH;
  case TL__RFAULT_NUL:
    return TLC_ENUL;
  default:
    return TLC_ETRUNCATED;
  }
}

static int get_u8(tl__rbuf *r, uint8_t *v) {
  *v = tl__get_u8(r);
  return r->bad ? fault(r) : TLC_OK;
}

static int get_u16(tl__rbuf *r, uint16_t *v) {
  *v = tl__get_u16(r);
  return r->bad ? fault(r) : TLC_OK;
}

static int get_u32(tl__rbuf *r, uint32_t *v) {
  *v = tl__get_u32(r);
  return r->bad ? fault(r) : TLC_OK;
}

static int get_u64(tl__rbuf *r, uint64_t *v) {
  *v = tl__get_u64(r);
  return r->bad ? fault(r) : TLC_OK;
}

/* A string: a length over its bound is ELENGTH even when the frame is also too short for it. */
static int get_string(tl__rbuf *r, size_t min, size_t max, tlc_view *v) {
  v->ptr = (const uint8_t *)tl__get_str16(r, min, max, &v->len);
  return r->bad ? fault(r) : check_string(*v, min, max);
}

static int get_bytes(tl__rbuf *r, size_t max, tlc_view *v) {
  v->ptr = (const uint8_t *)tl__get_str(r, 0, max, &v->len);
  return r->bad ? fault(r) : TLC_OK;
}

/* A batch's count: at least one item, and no more than the bytes left could hold at the
 * smallest item size, so the item array allocated for it is bounded by the frame. */
static int get_count(tl__rbuf *r, size_t item_min, size_t *count) {
  uint32_t n;
  int rc;
  if ((rc = get_u32(r, &n)))
    return rc;
  if (n == 0 || n > tl__rbuf_left(r) / item_min)
    return TLC_ECOUNT;
  *count = n;
  return TLC_OK;
}

/* Makes room for bytes at *buf, of *cap allocated; its capacity only grows, up to what the
 * largest frame could describe. */
static int reserve(void **buf, size_t *cap, size_t bytes) {
  if (*cap >= bytes)
    return TLC_OK;
  void *grown = realloc(*buf, bytes);
  if (grown == NULL)
    return TLC_ENOMEM;
  *buf = grown;
  *cap = bytes;
  return TLC_OK;
}

/* Room for the batch's items in d->items. */
static int reserve_items(tlc_decoder *d, size_t bytes) {
  return reserve(&d->items, &d->items_cap, bytes);
}

/* Room for a LAUNCH's grants or a REGISTER's addresses in d->extra. */
static int reserve_extra(tlc_decoder *d, size_t bytes) {
  return reserve(&d->extra, &d->extra_cap, bytes);
}

/* A REGISTER's profile and resources, after its token. Room is made for the resources its count
 * names (at most TLC_RESOURCES_MAX) and for as many addresses as the bytes left could hold
 * (at most TLC_REGISTER_ADDRESSES_MAX), before any is read. */
static int parse_resources(tlc_decoder *d, tl__rbuf *r, tlc_register *m) {
  uint8_t n;
  int rc;
  m->nresources = 0;
  m->resources = NULL;
  if ((rc = get_u32(r, &m->profile)) || (rc = get_u8(r, &n)))
    return rc;
  if (n > TLC_RESOURCES_MAX)
    return TLC_ERESOURCE;
  if (n == 0)
    return TLC_OK;
  size_t room = tl__rbuf_left(r) / ADDRESS_MIN;
  if (room > TLC_REGISTER_ADDRESSES_MAX)
    room = TLC_REGISTER_ADDRESSES_MAX;
  if ((rc = reserve_items(d, n * sizeof(tlc_resource))) ||
      (rc = reserve_extra(d, (room > 0 ? room : 1) * sizeof(tlc_view))))
    return rc;
  tlc_resource *res = d->items;
  tlc_view *addresses = d->extra;
  size_t all = 0;
  for (size_t i = 0; i < n; i++) {
    uint16_t na;
    if ((rc = get_string(r, 1, TLC_RESOURCE_NAME_MAX, &res[i].name)) ||
        (rc = check_name(res[i].name)) || (rc = get_u16(r, &na)))
      return rc;
    if (na == 0 || na > TLC_RESOURCE_ADDRESSES_MAX || na > TLC_REGISTER_ADDRESSES_MAX - all)
      return TLC_ERESOURCE;
    if (na > room - all) /* the frame cannot hold them: its end comes first */
      return TLC_ETRUNCATED;
    res[i].naddresses = na;
    res[i].addresses = addresses + all;
    for (size_t a = 0; a < na; a++)
      if ((rc = get_string(r, 1, TLC_ADDRESS_MAX, &addresses[all + a])) ||
          (rc = check_address(addresses[all + a])))
        return rc;
    all += na;
  }
  m->nresources = n;
  m->resources = res;
  return TLC_OK;
}

static int parse_body(tlc_decoder *d, uint8_t type, tl__rbuf *r, tlc_msg *msg) {
  int rc = TLC_OK;
  switch (type) {
  case TLC_MSG_REGISTER: {
    tlc_register *m = &msg->u.reg;
    if ((rc = get_string(r, 1, TLC_ID_MAX, &m->executor_id)) ||
        (rc = get_string(r, 1, TLC_HOST_MAX, &m->host)) || (rc = get_u32(r, &m->cores)))
      return rc;
    if (m->cores == 0 || m->cores > TLC_CORES_MAX)
      return TLC_ECORES;
    if ((rc = get_bytes(r, TLC_TOKEN_MAX, &m->token)))
      return rc;
    return parse_resources(d, r, m);
  }
  case TLC_MSG_HEARTBEAT:
    if ((rc = get_u64(r, &msg->u.heartbeat.seq)))
      return rc;
    return get_u64(r, &msg->u.heartbeat.binaries);
  case TLC_MSG_TASKSET_BINARY:
    if ((rc = get_u64(r, &msg->u.binary.taskset_id)))
      return rc;
    return get_bytes(r, TLC_FRAME_MAX, &msg->u.binary.payload);
  case TLC_MSG_LAUNCH: {
    size_t count;
    if ((rc = get_count(r, LAUNCH_ITEM_MIN, &count)) ||
        (rc = reserve_items(d, count * sizeof(tlc_launch_item))))
      return rc;
    tlc_launch_item *items = d->items;
    /* Grants: as many as the frame could hold, at most TLC_GRANTS_MAX per item. */
    size_t room = tl__rbuf_left(r) / GRANT_MIN;
    if (room > count * TLC_GRANTS_MAX)
      room = count * TLC_GRANTS_MAX;
    if (room > 0 && (rc = reserve_extra(d, room * sizeof(tlc_grant))))
      return rc;
    tlc_grant *grants = d->extra;
    size_t used = 0;
    for (size_t i = 0; i < count; i++) {
      tlc_launch_item *it = &items[i];
      uint8_t ng;
      if ((rc = get_u64(r, &it->tid)) || (rc = get_u64(r, &it->taskset_id)) ||
          (rc = get_u32(r, &it->index)) || (rc = get_u32(r, &it->attempt)) ||
          (rc = get_u8(r, &it->flags)) || (rc = check_flags(it->flags, TLC_LAUNCH_FLAGS)) ||
          (rc = get_string(r, 1, TLC_KIND_MAX, &it->kind)) || (rc = get_u8(r, &ng)))
        return rc;
      if (ng > TLC_GRANTS_MAX)
        return TLC_ERESOURCE;
      if (ng > room - used) /* the frame cannot hold them: its end comes first */
        return TLC_ETRUNCATED;
      it->ngrants = ng;
      it->grants = ng > 0 ? grants + used : NULL;
      for (size_t g = 0; g < ng; g++) {
        tlc_grant *gr = &grants[used + g];
        if ((rc = get_string(r, 1, TLC_RESOURCE_NAME_MAX, &gr->name)) ||
            (rc = check_name(gr->name)) || (rc = get_string(r, 1, TLC_ADDRESS_MAX, &gr->address)) ||
            (rc = check_address(gr->address)) || (rc = get_u8(r, &gr->share)) ||
            (rc = check_share(gr->share)))
          return rc;
      }
      used += ng;
    }
    msg->u.launch.count = count;
    msg->u.launch.items = items;
    return TLC_OK;
  }
  case TLC_MSG_STATUS: {
    size_t count;
    if ((rc = get_count(r, STATUS_ITEM_MIN, &count)) ||
        (rc = reserve_items(d, count * sizeof(tlc_status_item))))
      return rc;
    tlc_status_item *items = d->items;
    for (size_t i = 0; i < count; i++) {
      tlc_status_item *it = &items[i];
      if ((rc = get_u64(r, &it->tid)) || (rc = get_u8(r, &it->state)) ||
          (rc = check_state(it->state)) || (rc = get_bytes(r, TLC_RESULT_MAX, &it->result)) ||
          (rc = get_string(r, 0, TLC_TEXT_MAX, &it->text)))
        return rc;
    }
    msg->u.status.count = count;
    msg->u.status.items = items;
    return TLC_OK;
  }
  case TLC_MSG_KILL: {
    tlc_kill *m = &msg->u.kill;
    size_t count;
    if ((rc = get_u8(r, &m->interrupt)) || (rc = check_flag(m->interrupt)) ||
        (rc = get_string(r, 0, TLC_TEXT_MAX, &m->reason)) || (rc = get_count(r, 8, &count)) ||
        (rc = reserve_items(d, count * sizeof(uint64_t))))
      return rc;
    uint64_t *tids = d->items;
    for (size_t i = 0; i < count; i++)
      if ((rc = get_u64(r, &tids[i])))
        return rc;
    m->count = count;
    m->tids = tids;
    return TLC_OK;
  }
  case TLC_MSG_STOP:
    return get_string(r, 0, TLC_TEXT_MAX, &msg->u.stop.reason);
  case TLC_MSG_FORGET:
    return get_u64(r, &msg->u.forget.taskset_id);
  case TLC_MSG_RECONCILE: {
    tlc_reconcile *m = &msg->u.reconcile;
    uint32_t n;
    if ((rc = get_u8(r, &m->more)) || (rc = check_flag(m->more)) || (rc = get_u32(r, &n)))
      return rc;
    /* 0 is allowed; more than the frame holds is not (so never over TLC_RECONCILE_FRAME_ITEMS) */
    if (n > tl__rbuf_left(r) / TLC_RECONCILE_ITEM_BYTES)
      return TLC_ECOUNT;
    if (n > 0 && (rc = reserve_items(d, n * sizeof(tlc_reconcile_item))))
      return rc;
    tlc_reconcile_item *items = n > 0 ? d->items : NULL;
    for (size_t i = 0; i < n; i++) {
      tlc_reconcile_item *it = &items[i];
      if ((rc = get_u64(r, &it->tid)) || (rc = get_u64(r, &it->taskset_id)) ||
          (rc = get_u32(r, &it->index)) || (rc = get_u32(r, &it->attempt)) ||
          (rc = get_u8(r, &it->flags)) || (rc = check_flags(it->flags, TLC_RECONCILE_FLAGS)))
        return rc;
    }
    m->count = n;
    m->items = items;
    return TLC_OK;
  }
  case TLC_MSG_SYNCED:
    return get_u64(r, &msg->u.synced.frames);
  case TLC_MSG_EPOCH:
    return get_u64(r, &msg->u.epoch.epoch);
  default: /* tlc_decoder_feed refused other types when the type byte arrived */
    return TLC_ETYPE;
  }
}

/* ---------------------------------------------------------------------------------------------
 * Decoder
 * ------------------------------------------------------------------------------------------- */

int tlc_decoder_init(tlc_decoder *d, size_t frame_max) {
  if (d == NULL || frame_max < HEAD_BYTES || frame_max > TLC_FRAME_MAX)
    return TLC_EINVAL;
  memset(d, 0, sizeof *d);
  d->frame_max = frame_max;
  return TLC_OK;
}

int tlc_decoder_set_frame_max(tlc_decoder *d, size_t frame_max) {
  if (d == NULL || frame_max < HEAD_BYTES || frame_max > TLC_FRAME_MAX)
    return TLC_EINVAL;
  d->frame_max = frame_max;
  return TLC_OK;
}

void tlc_decoder_fini(tlc_decoder *d) {
  free(d->frame);
  free(d->items);
  free(d->extra);
  memset(d, 0, sizeof *d);
}

/* Ends the stream with err: every later call answers it. */
static int fail(tlc_decoder *d, int err) {
  d->error = err;
  return err;
}

static int known_type(uint8_t type) { return type >= TLC_MSG_REGISTER && type <= TLC_MSG_EPOCH; }

/* The length prefix is complete: check it. Room for the frame is made as its bytes come
 * (reserve_frame), not here: a peer that announces a large frame and sends little costs little. */
static int start_frame(tlc_decoder *d) {
  uint32_t len = (uint32_t)tl__le_get(d->prefix, PREFIX_BYTES);
  if (len > d->frame_max)
    return TLC_ETOOBIG;
  if (len < HEAD_BYTES)
    return TLC_ESHORT;
  d->frame_len = len;
  d->frame_have = 0;
  return TLC_OK;
}

/* The smallest frame buffer allocated: most frames fit, and a REGISTER always does. */
#define FRAME_CAP_MIN 1024

/* Makes room for need bytes of the current frame (need <= frame_len): the buffer doubles, from
 * FRAME_CAP_MIN, up to the frame's length, so that it holds at most twice the bytes received. */
static int reserve_frame(tlc_decoder *d, size_t need) {
  if (d->frame_cap >= need)
    return TLC_OK;
  size_t cap = d->frame_cap > 0 ? d->frame_cap : FRAME_CAP_MIN;
  while (cap < need)
    cap *= 2; /* need <= TLC_FRAME_MAX: no overflow */
  if (cap > d->frame_len)
    cap = d->frame_len;
  uint8_t *grown = realloc(d->frame, cap);
  if (grown == NULL)
    return TLC_ENOMEM;
  d->frame = grown;
  d->frame_cap = cap;
  return TLC_OK;
}

int tlc_decoder_feed(tlc_decoder *d, const uint8_t *data, size_t len, size_t *used, tlc_msg *msg) {
  if (d == NULL || (data == NULL && len > 0) || used == NULL || msg == NULL)
    return TLC_EINVAL;
  msg->type = TLC_MSG_NONE;
  *used = 0;
  if (d->error != TLC_OK)
    return d->error;

  size_t pos = 0;
  while (pos < len) {
    if (d->prefix_have < PREFIX_BYTES) {
      d->prefix[d->prefix_have++] = data[pos++];
      if (d->prefix_have == PREFIX_BYTES) {
        int rc = start_frame(d);
        if (rc != TLC_OK) {
          *used = pos;
          return fail(d, rc);
        }
      }
      continue;
    }
    size_t take = d->frame_len - d->frame_have;
    if (take > len - pos)
      take = len - pos;
    size_t before = d->frame_have;
    int grown = reserve_frame(d, before + take);
    if (grown != TLC_OK) {
      *used = pos;
      return fail(d, grown);
    }
    memcpy(d->frame + before, data + pos, take);
    d->frame_have += take;
    pos += take;
    /* Refuse a wrong version or type as soon as its byte is here, not a megabyte later. */
    if (before == 0 && d->frame[0] != TLC_PROTO_VERSION) {
      *used = pos;
      return fail(d, TLC_EVERSION);
    }
    if (before <= 1 && d->frame_have >= 2 && !known_type(d->frame[1])) {
      *used = pos;
      return fail(d, TLC_ETYPE);
    }
    if (d->frame_have < d->frame_len)
      continue;

    /* A whole frame: parse it, and start the next one on the next call. */
    *used = pos;
    d->prefix_have = 0;
    tl__rbuf r = tl__rbuf_over(d->frame + HEAD_BYTES, d->frame_len - HEAD_BYTES);
    int rc = parse_body(d, d->frame[1], &r, msg);
    if (rc == TLC_OK && tl__rbuf_left(&r) != 0)
      rc = TLC_ETRAILING;
    if (rc != TLC_OK) {
      msg->type = TLC_MSG_NONE;
      return fail(d, rc);
    }
    msg->type = (tlc_msg_type)d->frame[1];
    return TLC_OK;
  }
  *used = pos;
  return TLC_OK;
}
