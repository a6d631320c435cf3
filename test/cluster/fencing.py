#!/usr/bin/env python3
"""fencing.py: tl-executor against a fake driver (docs/cluster.md "Fencing"; ctest
cluster-fencing, label failover).

    fencing.py DIR      DIR holds tl-executor

The fake driver listens on loopback and plays three drivers to one executor in turn:

 1. epoch 5: sends EPOCH 5, the binary of task set 9 and a speculative LAUNCH of tid 77 (index
    3, attempt 1, `sleep:60000`), reads the RUNNING update, then closes the connection as a
    driver that died would;
 2. epoch 4, a driver thought dead: the executor reconnects with REGISTER and RECONCILE, whose
    items must name tid 77 with its task set, index, attempt and the speculative flag in one
    frame with more = 0; the driver sends EPOCH 4, then a LAUNCH of a `crash` task and STOP.
    The executor must close the connection without acting on either (it neither exits nor
    crashes) and reconnect;
 3. epoch 6: EPOCH 6, then a KILL of tid 77: the executor reports it KILLED; then STOP, after
    which the executor exits 0, saying it refused one driver of an older epoch and that its
    driver's epoch is 6.

A second executor is sent a LAUNCH before any EPOCH: it must exit 1, naming the fault, without
running it. A third is sent 65,537 launches of `sleep` on its 2 cores: one more than it may run
and queue (HELD_MAX), so it exits 1, naming it. Exit status: 0 when all of that held; 77 without python3 (ctest's skip code, for
the caller); 1 otherwise. No process is left behind.
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

VERSION = 3
REGISTER, HEARTBEAT, BINARY, LAUNCH, STATUS, KILL, STOP = 1, 2, 3, 4, 5, 6, 7
RECONCILE, EPOCH = 9, 11
TIMEOUT_S = 10


def fail(why):
    print("fencing.py: FAILED: " + why, file=sys.stderr)
    sys.exit(1)


def frame(mtype, body):
    return struct.pack("<IBB", 2 + len(body), VERSION, mtype) + body


def string(b):
    return struct.pack("<H", len(b)) + b


def launch(tid, taskset, index, attempt, flags, kind):
    item = struct.pack("<QQIIB", tid, taskset, index, attempt, flags) + string(kind) + b"\0"
    return frame(LAUNCH, struct.pack("<I", 1) + item)


class Peer:
    """One accepted connection: frames read with a deadline."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        sock.settimeout(TIMEOUT_S)

    def frame(self):
        """The next frame as (type, body); None at EOF."""
        while True:
            if len(self.buf) >= 4:
                n = struct.unpack_from("<I", self.buf)[0]
                if len(self.buf) >= 4 + n:
                    version, mtype = self.buf[4], self.buf[5]
                    body = self.buf[6:4 + n]
                    self.buf = self.buf[4 + n:]
                    if version != VERSION:
                        fail("a frame of version %d" % version)
                    return mtype, body
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                data = b""
            if not data:
                return None
            self.buf += data

    def expect(self, mtype, what):
        """The next frame that is not a HEARTBEAT: it must be of mtype."""
        while True:
            f = self.frame()
            if f is None:
                fail("EOF while waiting for " + what)
            if f[0] != HEARTBEAT:
                break
        if f[0] != mtype:
            fail("got type %d while waiting for %s" % (f[0], what))
        return f[1]

    def send(self, data):
        self.sock.sendall(data)

    def close(self):
        self.sock.close()


def accept(server, what):
    server.settimeout(TIMEOUT_S)
    try:
        sock, _ = server.accept()
    except socket.timeout:
        fail("no connection for " + what)
    return Peer(sock)


def start_executor(exe, port, exec_id, token_file, errf):
    return subprocess.Popen([exe, "--port", str(port), "--id", exec_id, "--cores", "2",
                             "--heartbeat-ms", "100", "--reconnect-s", "10", "--token-file",
                             token_file], stderr=errf)


def main():
    exe = os.path.join(sys.argv[1], "tl-executor")
    tmp = tempfile.mkdtemp()
    token_file = os.path.join(tmp, "token")
    with open(token_file, "w") as f:
        f.write("fencing-test-token-%d\n" % os.getpid())
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    procs = []
    try:
        err_path = os.path.join(tmp, "ex-err")
        with open(err_path, "wb") as errf:
            ex = start_executor(exe, port, "fenced", token_file, errf)
        procs.append(ex)

        # 1. The driver of epoch 5 launches tid 77, then dies.
        p = accept(server, "the first connection")
        p.expect(REGISTER, "REGISTER")
        p.send(frame(EPOCH, struct.pack("<Q", 5)) +
               frame(BINARY, struct.pack("<Q", 9) + struct.pack("<I", 3) + b"bin") +
               launch(77, 9, 3, 1, 1, b"sleep:60000"))
        body = p.expect(STATUS, "the RUNNING update of tid 77")
        count, tid, state = struct.unpack_from("<IQB", body)
        if (count, tid, state) != (1, 77, 1):
            fail("STATUS %r instead of tid 77 RUNNING" % ((count, tid, state),))
        p.close()

        # 2. A driver of epoch 4: its RECONCILE names tid 77 as it was launched; the driver's
        # LAUNCH and STOP after EPOCH 4 must not be acted on, the connection must close.
        p = accept(server, "the reconnection to the driver of epoch 4")
        p.expect(REGISTER, "REGISTER")
        body = p.expect(RECONCILE, "RECONCILE")
        more, n = struct.unpack_from("<BI", body)
        if (more, n) != (0, 1) or len(body) != 5 + 25:
            fail("RECONCILE more %d count %d (%d bytes), expected one item, no more" %
                 (more, n, len(body)))
        item = struct.unpack_from("<QQIIB", body, 5)
        if item != (77, 9, 3, 1, 1):
            fail("RECONCILE item %r, expected (77, 9, 3, 1, speculative)" % (item,))
        p.send(frame(EPOCH, struct.pack("<Q", 4)) + launch(78, 9, 4, 0, 0, b"crash") +
               frame(STOP, string(b"from the past")))
        t0 = time.monotonic()
        while p.frame() is not None:  # whatever was sent before the refusal; then EOF
            pass
        if time.monotonic() - t0 > 5:
            fail("the executor did not close the connection of the older driver")
        p.close()
        if ex.poll() is not None:
            fail("the executor exited (status %d) on a driver of an older epoch" % ex.returncode)

        # 3. A driver of epoch 6: it is obeyed.
        p = accept(server, "the reconnection to the driver of epoch 6")
        p.expect(REGISTER, "REGISTER")
        p.expect(RECONCILE, "RECONCILE")
        p.send(frame(EPOCH, struct.pack("<Q", 6)) +
               frame(KILL, struct.pack("<B", 1) + string(b"newer") + struct.pack("<IQ", 1, 77)))
        while True:
            body = p.expect(STATUS, "tid 77 KILLED")
            count, tid, state = struct.unpack_from("<IQB", body)
            if tid == 77 and state == 4:
                break
        p.send(frame(STOP, string(b"done")))
        try:
            rc = ex.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            fail("the executor did not exit after STOP")
        p.close()
        err = open(err_path, "rb").read().decode("utf-8", "replace")
        if rc != 0:
            fail("the executor exited with status %d:\n%s" % (rc, err))
        for want in ["refused a driver of epoch 4: epoch 5 was seen (1 refused)",
                     "driver epoch 6; 1 drivers of an older epoch refused"]:
            if want not in err:
                fail("the executor's stderr lacks %r:\n%s" % (want, err))
        if "crashes the process" in err:
            fail("the older driver's LAUNCH ran")

        # A LAUNCH before EPOCH: exit 1, nothing run.
        err_path = os.path.join(tmp, "ex2-err")
        with open(err_path, "wb") as errf:
            ex = start_executor(exe, port, "unfenced", token_file, errf)
        procs.append(ex)
        p = accept(server, "the second executor")
        p.expect(REGISTER, "REGISTER")
        p.send(frame(BINARY, struct.pack("<Q", 9) + struct.pack("<I", 0)) +
               launch(5, 9, 0, 0, 0, b"crash"))
        try:
            rc = ex.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            fail("the executor did not exit on a frame before EPOCH")
        p.close()
        err = open(err_path, "rb").read().decode("utf-8", "replace")
        if rc != 1 or "TASKSET_BINARY from the driver before its EPOCH" not in err:
            fail("a frame before EPOCH: status %d:\n%s" % (rc, err))
        # More launches than an executor may run and queue (HELD_MAX, 65,536): exit 1, since no
        # RECONCILE could name them all.
        err_path = os.path.join(tmp, "ex3-err")
        with open(err_path, "wb") as errf:
            ex = start_executor(exe, port, "overloaded", token_file, errf)
        procs.append(ex)
        p = accept(server, "the third executor")
        p.expect(REGISTER, "REGISTER")
        item = struct.Struct("<QQIIB")
        kind = string(b"sleep:60000") + b"\0"  # no grants
        frames = [frame(EPOCH, struct.pack("<Q", 1)),
                  frame(BINARY, struct.pack("<Q", 9) + struct.pack("<I", 0))]
        tid = 1
        for count in (20000, 20000, 20000, 5537):  # 65,537 in all
            body = b"".join(item.pack(tid + i, 9, tid + i, 0, 0) + kind for i in range(count))
            frames.append(frame(LAUNCH, struct.pack("<I", count) + body))
            tid += count
        try:
            p.send(b"".join(frames))
        except OSError:
            pass  # it may close before reading everything
        try:
            rc = ex.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            fail("the executor took more launches than it may hold")
        p.close()
        err = open(err_path, "rb").read().decode("utf-8", "replace")
        if rc != 1 or "the driver launched more than 65536 tasks at once" not in err:
            fail("65,537 launches: status %d:\n%s" % (rc, err))
        print("fencing.py: an executor that saw epoch 5 refused a driver of epoch 4 and obeyed "
              "one of epoch 6; a frame before EPOCH made one exit 1; 65,537 launches another")
        return 0
    finally:
        for pr in procs:
            if pr.poll() is None:
                pr.kill()
                pr.wait()
        server.close()


if __name__ == "__main__":
    sys.exit(main())
