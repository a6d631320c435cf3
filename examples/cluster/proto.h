/* The wire protocol of the cluster example (docs/cluster.md): length-prefixed binary frames
 * between the driver and its executors, an encoder into a growable buffer and an incremental
 * decoder for a byte stream. It does no I/O and knows nothing of sockets or of the ledger.
 */
#ifndef TLC_PROTO_H
#define TLC_PROTO_H

#include <stddef.h>
#include <stdint.h>

/* No function blocks or keeps global state. A buffer or a decoder is used by one thread at a
 * time (one per connection); different ones may be used on different threads at once. */

/* ---------------------------------------------------------------------------------------------
 * Constants
 * ------------------------------------------------------------------------------------------- */

/* Version 3: REGISTER carries the executor's resource profile and resources (named, with their
 * addresses), LAUNCH items the addresses each attempt holds. Version 2: LAUNCH items carry flags
 * (speculative), RECONCILE names what each attempt is and may span several frames, KILL names
 * many tids, and the driver sends EPOCH (docs/cluster.md). A frame of any other version is
 * refused (EVERSION): executors and drivers are upgraded together. */
#define TLC_PROTO_VERSION 3

/* The largest frame, counted after its 4-byte length prefix (version, type and body). Both ends
 * use it; a decoder may be given a smaller one. */
#define TLC_FRAME_MAX (1u << 20)

/* Bounds of the fields, in bytes. Strings are UTF-8 or anything else but never hold a NUL byte;
 * byte fields hold anything. */
#define TLC_ID_MAX 255       /* executor id, 1..255: one less than TL_ID_MAX, its NUL */
#define TLC_HOST_MAX 255     /* host, 1..255: one less than TL_HOST_MAX */
#define TLC_TOKEN_MAX 256    /* auth token, 0..256 */
#define TLC_KIND_MAX 64      /* a launched task's kind and arguments ("sleep:5"), 1..64 */
#define TLC_RESULT_MAX 65536 /* a task's result, 0..65536 */
#define TLC_TEXT_MAX 1024    /* a status message or a kill or stop reason, 0..1024 */
#define TLC_CORES_MAX 4096   /* a registration's cores, 1..4096 */

/* Resources (docs/cluster.md "Resources"), the library's bounds (include/taskledger.h) less the
 * NUL: a resource name is 1..TLC_RESOURCE_NAME_MAX bytes of [A-Za-z0-9_.-], an address
 * 1..TLC_ADDRESS_MAX bytes of printable ASCII but space, ',', '"' and '\\'. A REGISTER declares at
 * most TLC_RESOURCES_MAX resources, each of 1..TLC_RESOURCE_ADDRESSES_MAX addresses, and at most
 * TLC_REGISTER_ADDRESSES_MAX addresses in all (the wire's own bound, so that the largest REGISTER
 * stays small: it is read before its token is checked). A LAUNCH item names at most
 * TLC_GRANTS_MAX addresses, each with a share 1..TLC_SHARE_MAX (1: the whole address; k: 1/k). */
#define TLC_RESOURCE_NAME_MAX 63        /* TL_RESOURCE_NAME_MAX - 1 */
#define TLC_ADDRESS_MAX 63              /* TL_ADDRESS_MAX - 1 */
#define TLC_RESOURCES_MAX 16            /* TL_RESOURCES_MAX */
#define TLC_RESOURCE_ADDRESSES_MAX 1024 /* TL_RESOURCE_ADDRESSES_MAX */
#define TLC_REGISTER_ADDRESSES_MAX 1024 /* addresses of every resource of one REGISTER */
#define TLC_GRANTS_MAX 16               /* TL_TASK_GRANTS_MAX */
#define TLC_SHARE_MAX 32                /* TL_SHARE_MAX */

/* The largest REGISTER frame after its length prefix: version, type, the id, the host, the cores,
 * the token, the profile and the resources, each at its maximum (about 68 KiB, nearly all of it
 * the addresses). A driver decodes a connection's frames with this maximum until its REGISTER is
 * accepted (tlc_decoder_set_frame_max then raises it), so that a peer that has not authenticated
 * can make it hold no more than this many bytes. */
#define TLC_REGISTER_FRAME_MAX                                                                     \
  (2 + 2 + TLC_ID_MAX + 2 + TLC_HOST_MAX + 4 + 4 + TLC_TOKEN_MAX + 4 + 1 +                         \
   TLC_RESOURCES_MAX * (2 + TLC_RESOURCE_NAME_MAX + 2) +                                           \
   TLC_REGISTER_ADDRESSES_MAX * (2 + TLC_ADDRESS_MAX))

/* ---------------------------------------------------------------------------------------------
 * Errors
 * ------------------------------------------------------------------------------------------- */

/* Every error a decoder or an encoder returns. The decoder's errors from ETOOBIG on mean that
 * the peer broke the protocol: the connection is to be logged and closed. The encoder answers
 * the same code for the same fault in the message it is given. */
#define TLC_ERRNO_MAP(XX)                                                                          \
  XX(EINVAL, -1, "An argument is invalid (a NULL pointer, a frame maximum out of range).")         \
  XX(ENOMEM, -2, "Out of memory; nothing was changed.")                                            \
  XX(ETOOBIG, -3, "The frame is longer than the maximum.")                                         \
  XX(ESHORT, -4, "The frame's length is below the 2 bytes of its version and type.")               \
  XX(EVERSION, -5, "The frame's version is not TLC_PROTO_VERSION.")                                \
  XX(ETYPE, -6, "The message type is unknown.")                                                    \
  XX(ETRUNCATED, -7, "The frame ends inside the message.")                                         \
  XX(ETRAILING, -8, "The frame has bytes after the end of the message.")                           \
  XX(ECOUNT, -9, "A batch's count is zero (a RECONCILE's may be), or more than its frame holds.")  \
  XX(ELENGTH, -10, "A string or byte field's length is outside its bounds (an empty id...).")      \
  XX(ENUL, -11, "A string holds a NUL byte.")                                                      \
  XX(ECORES, -12, "A registration offers zero cores, or more than TLC_CORES_MAX.")                 \
  XX(ESTATE, -13, "A status update's task state is not one of tlc_task_state.")                    \
  XX(EFLAG, -14, "A flag byte has a bit its field does not define.")                               \
  XX(ERESOURCE, -15,                                                                               \
     "A resource field is out of bounds: a count over its limit (or 0 addresses), a name or an "   \
     "address with a byte outside its character set, a share of 0 or above TLC_SHARE_MAX.")

typedef enum tlc_errno {
  TLC_OK = 0,
#define TLC__ERRNO_ENUM(name, value, sentence) TLC_##name = (value),
  TLC_ERRNO_MAP(TLC__ERRNO_ENUM)
#undef TLC__ERRNO_ENUM
} tlc_errno;

/* The code's name without the prefix ("ETOOBIG"; "OK" for 0; "UNKNOWN" for other values).
 * Never NULL; static. */
const char *tlc_err_name(int err);

/* A sentence describing the code; never NULL; static. */
const char *tlc_strerror(int err);

/* ---------------------------------------------------------------------------------------------
 * Messages
 * ------------------------------------------------------------------------------------------- */

/* A string or byte field: a pointer and a length, never NUL-terminated. In a decoded message it
 * points into the decoder's frame buffer (see tlc_decoder_feed for how long it stays valid); in
 * a message to encode, into the caller's memory. ptr may be NULL only when len is 0. */
typedef struct tlc_view {
  const uint8_t *ptr; /* the first byte */
  size_t len;         /* how many */
} tlc_view;

/* A view of a NUL-terminated C string (NULL gives the empty view). */
tlc_view tlc_str(const char *s);

/* The message types, as their type byte on the wire. */
typedef enum tlc_msg_type {
  TLC_MSG_NONE = 0,           /* not a message: the decoder needs more bytes */
  TLC_MSG_REGISTER = 1,       /* executor to driver, first frame of a connection */
  TLC_MSG_HEARTBEAT = 2,      /* executor to driver, periodically */
  TLC_MSG_TASKSET_BINARY = 3, /* driver to executor, once per task set before its launches */
  TLC_MSG_LAUNCH = 4,         /* driver to executor */
  TLC_MSG_STATUS = 5,         /* executor to driver */
  TLC_MSG_KILL = 6,           /* driver to executor */
  TLC_MSG_STOP = 7,           /* driver to executor: finish and exit */
  TLC_MSG_FORGET = 8,         /* driver to executor: a task set ended, drop its binary */
  TLC_MSG_RECONCILE = 9,      /* executor to driver, right after REGISTER on a reconnection */
  TLC_MSG_SYNCED = 10,        /* driver to executor: its STATUS frames so far are durable */
  TLC_MSG_EPOCH = 11          /* driver to executor: its first frame after accepting a token */
} tlc_msg_type;

/* "REGISTER", ...; "NONE" for 0 and "UNKNOWN" for other values. Never NULL; static. */
const char *tlc_msg_type_name(int type);

/* A task's state in a status update, as its byte on the wire. */
typedef enum tlc_task_state {
  TLC_TASK_RUNNING = 1,
  TLC_TASK_FINISHED = 2,
  TLC_TASK_FAILED = 3,
  TLC_TASK_KILLED = 4
} tlc_task_state;

/* One resource a REGISTER declares: its name and its addresses, in the executor's order. The
 * codec checks bounds and character sets; distinct names and addresses are the ledger's rule
 * (tl_executor_add refuses duplicates), not the codec's. */
typedef struct tlc_resource {
  tlc_view name;             /* 1..TLC_RESOURCE_NAME_MAX bytes of [A-Za-z0-9_.-] */
  size_t naddresses;         /* 1..TLC_RESOURCE_ADDRESSES_MAX */
  const tlc_view *addresses; /* naddresses of them, each 1..TLC_ADDRESS_MAX bytes */
} tlc_resource;

typedef struct tlc_register {
  tlc_view executor_id;          /* 1..TLC_ID_MAX bytes, no NUL */
  tlc_view host;                 /* 1..TLC_HOST_MAX bytes, no NUL */
  uint32_t cores;                /* 1..TLC_CORES_MAX */
  tlc_view token;                /* 0..TLC_TOKEN_MAX bytes, any */
  uint32_t profile;              /* its resource profile (0: the default) */
  size_t nresources;             /* 0..TLC_RESOURCES_MAX */
  const tlc_resource *resources; /* nresources of them (NULL when none), at most
                                    TLC_REGISTER_ADDRESSES_MAX addresses in all */
} tlc_register;

typedef struct tlc_heartbeat {
  uint64_t seq;      /* counts the executor's heartbeats from 0; the driver does not use it */
  uint64_t binaries; /* task binaries the executor has materialised since it started (a running
                        total, so a lost heartbeat loses nothing) */
} tlc_heartbeat;

typedef struct tlc_taskset_binary {
  uint64_t taskset_id; /* the ledger's task set id; the executor caches the binary under it */
  tlc_view payload;    /* the task binary, any bytes, bounded only by the frame */
} tlc_taskset_binary;

/* A LAUNCH item's flags: bit 0 is TLC_LAUNCH_SPECULATIVE, every other bit 0 (else EFLAG). */
#define TLC_LAUNCH_SPECULATIVE 1u /* a speculative copy of a slow task (tl_launch.speculative) */
#define TLC_LAUNCH_FLAGS TLC_LAUNCH_SPECULATIVE

/* One address a launched attempt holds, by name: the resource and the address as the executor
 * declared them in its REGISTER, and how much of it. */
typedef struct tlc_grant {
  tlc_view name;    /* 1..TLC_RESOURCE_NAME_MAX bytes of [A-Za-z0-9_.-] */
  tlc_view address; /* 1..TLC_ADDRESS_MAX bytes */
  uint8_t share;    /* 1: the whole address; k in 2..TLC_SHARE_MAX: 1/k of it */
} tlc_grant;

typedef struct tlc_launch_item {
  uint64_t tid;            /* the attempt's tid */
  uint64_t taskset_id;     /* whose binary it runs (sent before, by TASKSET_BINARY) */
  uint32_t index;          /* the task's index in its task set */
  uint32_t attempt;        /* the attempt number of that index */
  uint8_t flags;           /* TLC_LAUNCH_* bits */
  tlc_view kind;           /* 1..TLC_KIND_MAX bytes, no NUL: "noop", "sleep:5", "spin:100", ... */
  size_t ngrants;          /* 0..TLC_GRANTS_MAX */
  const tlc_grant *grants; /* ngrants of them (NULL when none) */
} tlc_launch_item;

typedef struct tlc_launch {
  size_t count;                 /* >= 1 */
  const tlc_launch_item *items; /* count of them */
} tlc_launch;

typedef struct tlc_status_item {
  uint64_t tid;    /* the attempt's tid */
  uint8_t state;   /* a tlc_task_state */
  tlc_view result; /* 0..TLC_RESULT_MAX bytes, any */
  tlc_view text;   /* 0..TLC_TEXT_MAX bytes, no NUL: why it failed, or empty */
} tlc_status_item;

typedef struct tlc_status {
  size_t count;                 /* >= 1 */
  const tlc_status_item *items; /* count of them */
} tlc_status;

/* KILL names one or more attempts, all with the same interrupt flag and reason. A sender splits
 * more than TLC_KILL_FRAME_TIDS over several frames (that many always fit, whatever the reason;
 * with a shorter reason the frame holds more, and the encoder answers ETOOBIG past the frame). */
#define TLC_KILL_FRAME_TIDS ((TLC_FRAME_MAX - 2 - 1 - 2 - TLC_TEXT_MAX - 4) / 8)
typedef struct tlc_kill {
  uint8_t interrupt;    /* 0 or 1: whether a running task may be interrupted */
  tlc_view reason;      /* 0..TLC_TEXT_MAX bytes, no NUL */
  size_t count;         /* >= 1 */
  const uint64_t *tids; /* count of them: the attempts to kill */
} tlc_kill;

typedef struct tlc_stop {
  tlc_view reason; /* 0..TLC_TEXT_MAX bytes, no NUL */
} tlc_stop;

typedef struct tlc_forget {
  uint64_t taskset_id; /* the task set whose binary is no longer needed */
} tlc_forget;

/* An executor that reconnects (after its driver's connection dropped) names every attempt it
 * runs or queues, and every attempt whose end it holds unacknowledged (not yet covered by a
 * SYNCED), each once, in any order: a reconciliation. It may span several RECONCILE frames, each
 * with more = 1 but the last (more = 0); the frames of one reconciliation name at most
 * TLC_RECONCILE_ITEMS_MAX attempts in all (the driver counts them across the frames and refuses
 * more), one frame at most TLC_RECONCILE_FRAME_ITEMS. A frame's count may be 0. */
#define TLC_RECONCILE_ITEMS_MAX 131072 /* attempts one executor may name in a reconciliation */
#define TLC_RECONCILE_ITEM_BYTES (8 + 8 + 4 + 4 + 1) /* an item on the wire */
#define TLC_RECONCILE_FRAME_ITEMS ((TLC_FRAME_MAX - 2 - 1 - 4) / TLC_RECONCILE_ITEM_BYTES)

/* A RECONCILE item's flags: bits 0 and 1 as below, every other bit 0 (else EFLAG). */
#define TLC_RECONCILE_SPECULATIVE 1u /* launched as a speculative copy (its LAUNCH said so) */
/* The executor holds the attempt's end, unacknowledged: the end comes after the reconciliation,
 * as STATUS. */
#define TLC_RECONCILE_ENDED 2u
#define TLC_RECONCILE_FLAGS (TLC_RECONCILE_SPECULATIVE | TLC_RECONCILE_ENDED)

typedef struct tlc_reconcile_item {
  uint64_t tid;        /* the attempt's tid; 0 is not a tid, but the codec passes it on: the
                          driver refuses it */
  uint64_t taskset_id; /* its task set, index and attempt number, as its LAUNCH gave them */
  uint32_t index;
  uint32_t attempt;
  uint8_t flags; /* TLC_RECONCILE_* bits */
} tlc_reconcile_item;

typedef struct tlc_reconcile {
  uint8_t more;                    /* 0 or 1: another RECONCILE frame of this reconciliation
                                      follows */
  size_t count;                    /* 0..TLC_RECONCILE_FRAME_ITEMS */
  const tlc_reconcile_item *items; /* count of them (NULL when count is 0) */
} tlc_reconcile;

/* The driver has made durable what the first `frames` STATUS frames it read on this connection
 * carried (counting from 1 on each connection): the executor may drop the ends it sent in
 * them. frames is never more than the STATUS frames the executor sent on the connection. */
typedef struct tlc_synced {
  uint64_t frames;
} tlc_synced;

/* The driver's epoch (tl_epoch: 1 for a new run, higher after each restart from a record): the
 * first frame a driver sends on a connection whose token it accepted, before any other. An
 * executor keeps the highest epoch it has seen and refuses a driver with a lower one
 * (docs/cluster.md "Fencing"). */
typedef struct tlc_epoch {
  uint64_t epoch;
} tlc_epoch;

/* One message: type says which member of the union holds it. */
typedef struct tlc_msg {
  tlc_msg_type type; /* TLC_MSG_NONE when tlc_decoder_feed yielded no message */
  union {
    tlc_register reg;
    tlc_heartbeat heartbeat;
    tlc_taskset_binary binary;
    tlc_launch launch;
    tlc_status status;
    tlc_kill kill;
    tlc_stop stop;
    tlc_forget forget;
    tlc_reconcile reconcile;
    tlc_synced synced;
    tlc_epoch epoch;
  } u;
} tlc_msg;

/* ---------------------------------------------------------------------------------------------
 * Encoder
 * ------------------------------------------------------------------------------------------- */

/* A growable byte buffer the encoder appends frames to. Zero-initialised (or tlc_buf_init) it is
 * empty and holds no memory. The caller may read data[0..len), and set len to 0 (or less) once
 * it has sent a prefix, to reuse the memory; cap is the encoder's. */
typedef struct tlc_buf {
  uint8_t *data; /* NULL until the first frame; owned by the buffer until tlc_buf_free */
  size_t len;    /* bytes held */
  size_t cap;    /* bytes allocated */
} tlc_buf;

void tlc_buf_init(tlc_buf *buf);

/* Frees the memory; the buffer is empty again and may be reused. */
void tlc_buf_free(tlc_buf *buf);

/* Appends msg as one frame. It validates the whole message first, against the bounds above and
 * a frame of at most TLC_FRAME_MAX, with the code the decoder would give for that fault
 * (ELENGTH, ENUL, ECORES, ESTATE, EFLAG, ECOUNT for an empty batch, ETOOBIG, ETYPE; EINVAL for
 * a NULL argument or a NULL view with a length), then grows the buffer (ENOMEM) and writes. On
 * any error the buffer is unchanged. The message's views are only read. */
int tlc_encode(tlc_buf *buf, const tlc_msg *msg);

/* ---------------------------------------------------------------------------------------------
 * Decoder
 * ------------------------------------------------------------------------------------------- */

/* An incremental decoder for one connection's byte stream. Its fields are private. It allocates
 * a frame buffer as a frame's bytes arrive (doubling, never beyond the frame's announced length,
 * itself at most frame_max), so that what it holds follows the bytes a peer has sent, not the
 * length it announced; and, for batches, an item array no larger than what that frame can
 * describe. */
typedef struct tlc_decoder {
  size_t frame_max;   /* the largest length prefix accepted */
  uint8_t prefix[4];  /* the length prefix as it arrives */
  size_t prefix_have; /* 0..4: bytes of the prefix received */
  size_t frame_len;   /* the length prefix's value, once prefix_have is 4 */
  uint8_t *frame;     /* frame_len bytes as they arrive: version, type, body */
  size_t frame_have;  /* bytes of the frame received */
  size_t frame_cap;   /* bytes allocated at frame */
  void *items;        /* the item array of the last batch decoded (a REGISTER's resources) */
  size_t items_cap;   /* bytes allocated at items */
  void *extra;        /* the last LAUNCH's grants, or the last REGISTER's addresses */
  size_t extra_cap;   /* bytes allocated at extra */
  int error;          /* 0, or the error that ended the stream: every later call returns it */
} tlc_decoder;

/* Prepares d for a new stream whose frames are at most frame_max bytes after their length prefix
 * (TLC_FRAME_MAX normally; tests use less): EINVAL unless 2 <= frame_max <= TLC_FRAME_MAX. It
 * allocates nothing. */
int tlc_decoder_init(tlc_decoder *d, size_t frame_max);

/* Changes the largest length prefix accepted from the next one checked on: a frame whose prefix
 * is complete already keeps the maximum it was checked against. A driver decodes with
 * TLC_REGISTER_FRAME_MAX until REGISTER is accepted, then raises it to TLC_FRAME_MAX. EINVAL
 * (nothing changed) unless 2 <= frame_max <= TLC_FRAME_MAX. */
int tlc_decoder_set_frame_max(tlc_decoder *d, size_t frame_max);

/* Frees what d holds. The views of the last message decoded die with it. */
void tlc_decoder_fini(tlc_decoder *d);

/* Feeds the next len bytes of the stream (any split of it: a byte at a time works). It consumes
 * bytes up to the end of the first frame that completes, decodes that frame into *msg, sets
 * *used to the bytes it consumed, and returns 0; the caller feeds the rest (data + *used) in
 * another call. When no frame completes, it consumes every byte, sets msg->type to
 * TLC_MSG_NONE and returns 0.
 *
 * A decoded message's views and item arrays point into d: they stay valid until the next call
 * of tlc_decoder_feed or tlc_decoder_fini on d. Copy what must live longer.
 *
 * On a malformed frame it returns the error naming the first fault it met (ETOOBIG, ESHORT,
 * EVERSION and ETYPE as soon as the prefix or those bytes arrive, before the rest of the frame;
 * a body's faults in the order of its fields, a length over its bound before a frame too short
 * for it), msg->type is TLC_MSG_NONE, and every later call returns the same error: the stream
 * cannot be resynchronised, so the connection must be closed. ENOMEM is sticky too. It never
 * reads data past len. */
int tlc_decoder_feed(tlc_decoder *d, const uint8_t *data, size_t len, size_t *used, tlc_msg *msg);

#endif /* TLC_PROTO_H */
