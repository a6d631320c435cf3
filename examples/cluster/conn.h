/* The write path of a cluster connection, shared by tl-driver and tl-executor: the frames
 * encoded into a tlc_buf go to the kernel at once when it takes them (one write syscall, nothing
 * left for the loop to do), else to one uv_write whose request owns their bytes, freed when the
 * write completes. Everything here runs on the loop's thread.
 */
#ifndef TLC_CONN_H
#define TLC_CONN_H

#include <uv.h>

#include "proto.h"

/* Called once a write completes: data as given to conn_write, status as uv_write_cb's (0, or a
 * negative libuv error: UV_ECANCELED when the stream was closed before the bytes went out). The
 * bytes are already freed. */
typedef void (*conn_written_cb)(void *data, int status);

/* conn_write's answer when the kernel took every byte at once: written is not called. */
#define CONN_SENT 1

/* The most memory out keeps for the next frames once its bytes went out (64 KiB): a larger
 * buffer is freed. */
#define CONN_KEEP_MAX 65536

/* Sends out's bytes on stream and leaves out empty. The kernel is offered them at once
 * (uv_try_write, unless earlier writes still wait in libuv's queue): when it takes them all,
 * conn_write returns CONN_SENT, written is never called, and out keeps its memory for the next
 * frames (up to CONN_KEEP_MAX). Otherwise what it did not take goes to one uv_write that owns
 * the memory from then on and frees it when it completes, then calls written(data, status); the
 * answer is then 0. Does nothing, and returns 0, when out holds no bytes. Errors: UV_ENOMEM when
 * the request cannot be allocated, out holding the bytes the kernel did not take (uv_write of
 * one buffer allocates nothing, so this is the only UV_ENOMEM); or the write's error
 * (uv_try_write's or uv_write's), with the bytes dropped and written never to be called. It
 * never blocks and may be called from inside any libuv callback on the loop's thread. */
int conn_write(uv_stream_t *stream, tlc_buf *out, conn_written_cb written, void *data);

/* The bytes a connection holds that its peer has not taken: those encoded in out and not yet
 * handed to conn_write, and those libuv holds in its write queue (handed to uv_write, not yet
 * taken by the kernel: the peer does not read, or not as fast). The kernel's socket buffer is
 * not counted (it is not the process's memory). What a peer that never reads makes the
 * process hold; tl-driver bounds it (--max-unsent-bytes). */
size_t conn_unsent(const uv_stream_t *stream, const tlc_buf *out);

#endif
