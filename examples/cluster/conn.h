/* The write path of a cluster connection, shared by tl-driver and tl-executor: the frames
 * encoded into a tlc_buf go to one uv_write whose request owns their bytes, freed when the write
 * completes, or first to the kernel at once (conn_send). Everything here runs on the loop's
 * thread.
 */
#ifndef TLC_CONN_H
#define TLC_CONN_H

#include <uv.h>

#include "proto.h"

/* conn_send keeps an emptied buffer's memory for the next frames up to this many bytes. */
#define CONN_KEEP_MAX 65536

/* Called once a write completes: data as given to conn_write, status as uv_write_cb's (0, or a
 * negative libuv error: UV_ECANCELED when the stream was closed before the bytes went out). The
 * bytes are already freed. */
typedef void (*conn_written_cb)(void *data, int status);

/* Hands out's bytes to one uv_write on stream and leaves out empty: from here the write owns the
 * memory and frees it when it completes, then calls written(data, status). Does nothing, and
 * returns 0, when out holds no bytes. Returns 0 when the write was queued; UV_ENOMEM when its
 * request cannot be allocated, having changed nothing (out keeps its bytes; uv_write of one
 * buffer allocates nothing, so this is the only UV_ENOMEM); or uv_write's error, with the bytes
 * freed and written never to be called. It never blocks and may be called from inside any libuv
 * callback on the loop's thread. */
int conn_write(uv_stream_t *stream, tlc_buf *out, conn_written_cb written, void *data);

/* As conn_write, but the kernel is offered the bytes at once first (uv_try_write, one write(2)),
 * unless libuv still queues earlier ones: what it takes is done with, and only the rest, if any
 * (all of it when the write failed: uv_write then reports the error as it always does), goes to
 * conn_write. A buffer written whole keeps its memory (up to CONN_KEEP_MAX bytes) for
 * the next frames. So written is called only when a uv_write was queued for a rest: a caller
 * that must know when its bytes are out (an exit after them) uses conn_write. What this saves,
 * for a write the kernel takes whole (the usual case on an idle connection): libuv's write
 * request, its completion in the next turn of the loop (an extra epoll_wait of timeout 0) and
 * the epoll_ctl that re-arms the descriptor after it (docs/performance.md "The wire's own
 * floor"). Returns what conn_write returns (0 when the bytes were written or queued; on
 * UV_ENOMEM out holds what the kernel did not take), and 0 when nothing was left for it. */
int conn_send(uv_stream_t *stream, tlc_buf *out, conn_written_cb written, void *data);

/* The bytes a connection holds that its peer has not taken: those encoded in out and not yet
 * handed to conn_write, and those libuv holds in its write queue (handed to uv_write, not yet
 * taken by the kernel: the peer does not read, or not as fast). The kernel's socket buffer is
 * not counted (it is not the process's memory). What a peer that never reads makes the
 * process hold; tl-driver bounds it (--max-unsent-bytes). */
size_t conn_unsent(const uv_stream_t *stream, const tlc_buf *out);

#endif
