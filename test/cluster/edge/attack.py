#!/usr/bin/env python3
"""attack.py: a hostile client of tl-driver, for the edge tests (docs/cluster.md).

It speaks the cluster wire protocol (examples/cluster/proto.h): a frame is a 4-byte
little-endian length counting the bytes after it, then version 3, a type byte and the body;
integers are little-endian, a string is a u16 length and its bytes, a byte field a u32 length
and its bytes. REGISTER (type 1) is: string executor id, string host, u32 cores, bytes token.

    attack.py [--host H] --port P [--source A] [--deadline-s S] MODE [options]

--host is the address to connect to (default 127.0.0.1; ::1 and other IPv6 addresses work
too), and the only one it ever connects to. --source binds every connection to that local
address first (127.0.0.2: an attacker with an address of its own; exit 2 when it cannot be
bound). --port, --source and --deadline-s (default 60) may also be given after MODE; --host
after `register` is the REGISTER's host field, not the address.

Every mode is bounded in time (--deadline-s overall, and its own limits) and in count, stops
by itself and prints exactly one result line at the end, `MODE: key=value ...`, on stdout.
Exit status: 0 when it ran, whatever the driver did; 2 for bad usage; 1 for an unexpected
local error (a message or a traceback on stderr, no result line), `register` failing to
connect included (the other modes count failed connects instead). At start it raises its
RLIMIT_NOFILE soft limit to the hard limit, so that it can hold 1000 connections and more.

Modes:

  preauth --conns N [--announce BYTES] [--send BYTES] [--hold-s S]
      Opens N connections at once (non-blocking, one selector), on each sends a length
      prefix announcing BYTES (default 1048576, TLC_FRAME_MAX) and then the first SEND bytes
      (default 100, at most BYTES) of a REGISTER frame: version 3, type 1, the id
      "preauth-attacker", a 255-byte host, cores 1, a 256-byte token of "T"s, then "P"
      padding; no valid token.
      Then holds every connection S seconds (default 5), reading and discarding (it ends
      sooner once the driver closed them all). Connects that take over 10 s fail.
      preauth: opened=N connect_failed=K closed_by_peer=C open_at_end=M
      (closed_by_peer: connections that got EOF or a reset after connecting; connect_failed
      also counts sockets it could not create, EMFILE.)

  flood [--seconds S] [--parallel K] [--burst B] [--ready-file PATH]
      K threads (default 4) open and close connections as fast as they can for at most S
      seconds (default 10); each connection sends the first 12 bytes of a REGISTER frame (no
      garbage) and closes. Stops early once every connect has been refused (ECONNREFUSED)
      for 0.5 s in a row: the listener is closed. With --burst B each thread opens B
      non-blocking connections at once, sends the same bytes on those that connected and
      closes them all, so that the driver always has connections queued (as from many hosts).
      --ready-file PATH is created at the first connection made.
      flood: connections=N refused=R seconds=T first_refused_after_s=X
             first_refused_epoch_ms=Y errors=E
      (X and Y, the same moment as milliseconds since the Unix epoch, are -1 when nothing was
      refused; E counts other connect or send errors.)

  register --id ID --host HOST --cores C [--token-env | --token T]
           [--then close|hold|launch|status|heartbeat|reconcile] [--delay-s D] [--tids N]
           [--hold-s S] [--binaries B]
      Connects and sends one REGISTER. ID, HOST and T are decoded as Python escapes
      ('ev\\x1b[31mil\\nforged' gives an ESC and a newline), so any bytes can be sent; their
      bounds are not checked here. C is decimal or 0x hex, 0..0xFFFFFFFF. --token-env takes
      the token from TL_CLUSTER_TOKEN; with neither option the token is empty. Then:
        close   closes at once;
        hold    (default) reads S seconds (default 2) or until the driver closes;
        launch  sends a LAUNCH (type 4: count 1, tid 1, task set 1, index 0, attempt 0,
                kind "noop"), a driver's message, then reads as for hold;
        status  sends a STATUS (type 5: count 1, tid 1, state 2 FINISHED, no result, no
                text), then reads as for hold;
        heartbeat  sends a HEARTBEAT (type 2: seq 0, binaries B, default 2^64-1: a lie),
                then reads as for hold;
        reconcile  sends a RECONCILE (type 9, reconcile_frame) naming N tids (--tids,
                default 0: none), 1 to N, then a STATUS as for status, then reads as for hold.
      With --delay-s D it first reads D seconds (counting frames, sending nothing: no
      HEARTBEAT, so a short --heartbeat-timeout-ms loses it meanwhile) before what --then
      sends.
      register: closed_by_peer=0|1 after_ms=T frames=TYPE:COUNT,...
      (after_ms: from the frames after REGISTER sent (the REGISTER itself without them) to
      the driver's close, or to the end of the wait;
      frames: frames received by type name, TASKSET_BINARY, LAUNCH, KILL, STOP, FORGET, ...;
      "none" when none came.)

  guess [--seconds S] [--digits D] [--wait-ms W]
      Guesses a D-digit token (default 4: "0000", "0001", ... in order) for at most S seconds
      (default 10), one connection per guess, one at a time: connect, REGISTER id "guess-N",
      host "attacker", cores 1, token the guess, then wait up to W ms (default 300). A
      connection the driver closes (before or after the REGISTER) is a wrong guess answered;
      one still open after W ms, or one the driver sends a frame on, was accepted: found, and
      it stops. A failed connect is counted and the same guess is tried again; it stops when
      connects were refused for 0.5 s in a row.
      guess: attempts=N connect_failed=F found=GUESS|none seconds=T rate_per_s=R

  flood-reconcile --id ID --host HOST --cores C [--tids N] [--synced] [--frames K]
                  [--rss-pid PID] [--hold-s S]
      An executor that never reads: connects with a small receive buffer (64 KiB), sends
      REGISTER with the real token (TL_CLUSTER_TOKEN), then K RECONCILE frames (default 64)
      of N items each (default RECONCILE_MAX: one whole frame), each saying more follows, as
      fast as the driver takes them, never reading a byte: a driver that does not hold it as
      recovering answers each with KILLs for its tids, which it cannot send, and closes it
      past TLC_RECONCILE_ITEMS_MAX. With --synced, K batches of 20,000 pairs of a STATUS (an
      unknown tid) and a HEARTBEAT instead, each pair answered with a SYNCED by a driver
      without --state-dir. Stops sending when the driver
      closed the connection (a reset or EPIPE), when a send has been blocked for 5 s, or at
      the deadline; then waits up to S seconds (default 5) for the close, still not reading.
      With --rss-pid it reads VmRSS of PID (/proc/PID/status) after each frame and every
      50 ms while it waits.
      flood-reconcile: sent=K closed_by_peer=0|1 after_ms=T [rss_kb_first=A rss_kb_max=M]
      (after_ms: from REGISTER to the close, or to the end; rss_kb_first: the sample after
      the first frame; -1 when none could be read.)

  cycles --count N [--id-prefix P] [--cores C] [--rss-pid PID --rss-every K]
      N times, one after the other, as fast as it can: connect, REGISTER with the real token
      (TL_CLUSTER_TOKEN) as id P-I (default prefix "cycle", escapes decoded; I from 1), host
      "cycler", C cores (default 1), and close at once; a failed connect is counted (it stops
      once connects were refused for 0.5 s in a row). With --rss-pid, every K cycles (default
      100) it reads VmRSS of PID from /proc/PID/status.
      cycles: done=N connect_failed=F seconds=T [rss_kb_first=A rss_kb_last=B rss_kb_max=C]
      (the rss keys only with --rss-pid; first is the sample after the first K cycles; -1 when
      no sample could be read.)

  hold --conns N [--hold-s S]
      Opens N connections that send nothing and holds them S seconds (default 5), as
      preauth does.
      hold: opened=N connect_failed=K closed_by_peer=C

  http-idle --conns N --hold-s S
      Keeps N idle TCP connections (nothing sent) open to the port for S seconds, opening a
      new one whenever the server closes one (10 ms later).
      http-idle: opened=O closed_by_peer=C reopened=R connect_failed=F
      (opened counts every connect that succeeded, reopened those that replaced a closed one.)

  scrape --count N --interval-ms I [--path /metrics]
      Sends `GET PATH HTTP/1.1` (Host: x, Connection: close) N times, starting I ms apart, each
      with a 2 s timeout; counts the answers with status 200 and a non-empty body.
      scrape: ok=K of=N max_ms=M
      (max_ms: the slowest request, answered or not.)

http-idle and scrape may run at the same time, from two processes.
"""

import argparse
import codecs
import errno
import os
import resource
import select
import selectors
import socket
import struct
import sys
import threading
import time

PROTO_VERSION = 3
FRAME_MAX = 1 << 20
MSG_REGISTER, MSG_HEARTBEAT, MSG_TASKSET_BINARY, MSG_LAUNCH = 1, 2, 3, 4
MSG_STATUS, MSG_KILL, MSG_STOP, MSG_FORGET = 5, 6, 7, 8
MSG_RECONCILE, MSG_SYNCED, MSG_EPOCH = 9, 10, 11
MSG_NAMES = {1: "REGISTER", 2: "HEARTBEAT", 3: "TASKSET_BINARY", 4: "LAUNCH", 5: "STATUS",
             6: "KILL", 7: "STOP", 8: "FORGET", 9: "RECONCILE", 10: "SYNCED", 11: "EPOCH"}

CONNECT_TIMEOUT_S = 10.0  # a connect not done by then failed (SYN retries take 1 s, 3 s, ...)
REFUSED_STOP_S = 0.5      # refused for this long in a row: the listener is closed
READ_CHUNK = 65536
CLOSED_ERRNOS = (errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED, errno.ENOTCONN)


class UsageError(Exception):
    """A bad argument found after parsing: exit 2."""


class LocalError(Exception):
    """A failure that leaves nothing to report (register could not connect): exit 1."""


# ---------------------------------------------------------------------------------------------
# Wire encoding
# ---------------------------------------------------------------------------------------------

def enc_string(b):
    """A string field: u16 length, bytes."""
    return struct.pack("<H", len(b)) + b


def enc_bytes(b):
    """A byte field: u32 length, bytes."""
    return struct.pack("<I", len(b)) + b


def frame(mtype, body):
    """One whole frame: length prefix, version, type, body."""
    return struct.pack("<IBB", 2 + len(body), PROTO_VERSION, mtype) + body


def register_frame(exec_id, host, cores, token):
    return frame(MSG_REGISTER, enc_string(exec_id) + enc_string(host) +
                 struct.pack("<I", cores) + enc_bytes(token) +
                 struct.pack("<IB", 0, 0))  # profile 0, no resources


def launch_frame():
    """A LAUNCH of one noop task, which only the driver may send."""
    item = struct.pack("<QQIIB", 1, 1, 0, 0, 0) + enc_string(b"noop") + b"\0"  # no grants
    return frame(MSG_LAUNCH, struct.pack("<I", 1) + item)


def status_frame(tid=1, state=2):
    """A STATUS with one update: tid, state, empty result, empty text."""
    item = struct.pack("<QB", tid, state) + enc_bytes(b"") + enc_string(b"")
    return frame(MSG_STATUS, struct.pack("<I", 1) + item)


RECONCILE_ITEM = struct.Struct("<QQIIB")  # tid, task set, index, attempt, flags
RECONCILE_MAX = (FRAME_MAX - 2 - 1 - 4) // RECONCILE_ITEM.size  # TLC_RECONCILE_FRAME_ITEMS


def reconcile_frame(tids, more=0):
    """A RECONCILE frame (protocol 2): more u8 (1: another frame of the reconciliation
    follows), count u32, then per attempt tid u64, task set u64, index u32, attempt u32, flags
    u8 (1 speculative, 2 ended). tids: ints (each an attempt of task set 0, index 0, attempt 0,
    no flags) or (tid, task set, index, attempt, flags) tuples; at most RECONCILE_MAX fit a
    frame. The one place that knows RECONCILE's body."""
    body = b"".join(RECONCILE_ITEM.pack(*(t if isinstance(t, tuple) else (t, 0, 0, 0, 0)))
                    for t in tids)
    return frame(MSG_RECONCILE, struct.pack("<BI", more, len(tids)) + body)


def reconcile_frames(items):
    """A whole reconciliation: items (as reconcile_frame's tids) in frames of RECONCILE_MAX,
    each but the last with more = 1; one frame of count 0 for none. A driver takes at most
    131,072 items (TLC_RECONCILE_ITEMS_MAX) in one reconciliation, one a connection."""
    out = []
    for at in range(0, max(len(items), 1), RECONCILE_MAX):
        chunk = items[at:at + RECONCILE_MAX]
        out.append(reconcile_frame(chunk, 1 if at + RECONCILE_MAX < len(items) else 0))
    return b"".join(out)


def preauth_payload(announce, send):
    """A length prefix announcing `announce` bytes, then the first `send` of a REGISTER. One
    payload serves every connection (shared, not copied: --send may be 1 MiB)."""
    host = b"attacker-host.".ljust(255, b"h")
    body = (bytes([PROTO_VERSION, MSG_REGISTER]) + enc_string(b"preauth-attacker") +
            enc_string(host) + struct.pack("<I", 1) + enc_bytes(b"T" * 256))
    send = min(send, announce)
    if len(body) < send:
        body += b"P" * (send - len(body))
    return struct.pack("<I", announce) + body[:send]


class FrameCounter:
    """Counts the frames of a received byte stream by type name (incremental)."""

    def __init__(self):
        self.buf = bytearray()
        self.counts = {}
        self.broken = False  # a length or version no driver sends: stop parsing

    def feed(self, data):
        if self.broken:
            return
        self.buf += data
        while len(self.buf) >= 4:
            (n,) = struct.unpack_from("<I", self.buf)
            if n < 2 or n > FRAME_MAX:
                self._count("BAD")
                self.broken = True
                return
            if len(self.buf) < 4 + n:
                return
            version, mtype = self.buf[4], self.buf[5]
            self._count(MSG_NAMES.get(mtype, "UNKNOWN") if version == PROTO_VERSION else "BAD")
            del self.buf[:4 + n]

    def _count(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1

    def total(self):
        return sum(self.counts.values())

    def text(self):
        if not self.counts:
            return "none"
        return ",".join("%s:%d" % kv for kv in sorted(self.counts.items()))


# ---------------------------------------------------------------------------------------------
# Sockets
# ---------------------------------------------------------------------------------------------

def resolve(host, port, source=None):
    """The one address every connection goes to, and the local one they are bound to (None:
    the kernel's choice): (family, sockaddr, source sockaddr)."""
    try:
        infos = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    except socket.gaierror as e:
        raise UsageError("cannot resolve --host %s: %s" % (host, e))
    family, _, _, _, sockaddr = infos[0]
    if source is None:
        return family, sockaddr, None
    try:
        src = socket.getaddrinfo(source, 0, family, socket.SOCK_STREAM)[0][4]
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind(src)
    except OSError as e:
        raise UsageError("--source %s cannot be used towards %s: %s" % (source, host, e))
    return family, sockaddr, src


def new_socket(addr):
    """A TCP socket of addr's family, bound to the source address when there is one."""
    family, _, src = addr
    s = socket.socket(family, socket.SOCK_STREAM)
    if src is not None:
        try:  # the port is chosen at connect, as without a bind: no early port exhaustion
            s.setsockopt(socket.IPPROTO_IP, getattr(socket, "IP_BIND_ADDRESS_NO_PORT", 24), 1)
        except OSError:
            pass
        try:
            s.bind(src)
        except OSError:
            s.close()
            raise
    return s


def raise_nofile():
    """Soft RLIMIT_NOFILE up to the hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass


def connect_blocking(addr, timeout):
    """A connected blocking socket, or OSError (ECONNREFUSED, ETIMEDOUT, ...)."""
    s = new_socket(addr)
    sockaddr = addr[1]
    try:
        s.settimeout(timeout)
        s.connect(sockaddr)
    except socket.timeout:
        s.close()
        raise OSError(errno.ETIMEDOUT, "connect timed out")
    except OSError:
        s.close()
        raise
    return s


def send_all(s, data):
    """Sends data; False when the peer had closed (EPIPE, reset)."""
    try:
        s.sendall(data)
        return True
    except OSError as e:
        if e.errno in CLOSED_ERRNOS:
            return False
        raise


def wait_close(s, seconds, counter=None, stop_on_frame=False):
    """Reads up to `seconds`: (closed_by_peer, elapsed_s). Frames go to counter."""
    t0 = time.monotonic()
    end = t0 + max(0.0, seconds)
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return False, time.monotonic() - t0
        s.settimeout(left)
        try:
            data = s.recv(READ_CHUNK)
        except socket.timeout:
            return False, time.monotonic() - t0
        except OSError as e:
            if e.errno in CLOSED_ERRNOS:
                return True, time.monotonic() - t0
            raise
        if not data:
            return True, time.monotonic() - t0
        if counter is not None:
            counter.feed(data)
            if stop_on_frame and counter.total() > 0:
                return False, time.monotonic() - t0


def close_quietly(s):
    try:
        s.close()
    except OSError:
        pass


LINGER_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close sends RST, no TIME_WAIT


def reset_quietly(s):
    """Closes with a reset: a flood of closes leaves no TIME_WAIT behind to use up the
    loopback's ephemeral ports (which would make later connections to the driver fail)."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, LINGER_RESET)
    except OSError:
        pass
    close_quietly(s)


class Conn:
    """One non-blocking connection of a selector pool."""
    __slots__ = ("sock", "out", "state", "slot")

    def __init__(self, sock, out, slot=0):
        self.sock = sock
        self.out = memoryview(out)  # bytes still to send (slices of it copy nothing)
        self.state = "connecting"
        self.slot = slot


def start_connect(sel, addr, out, slot=0):
    """Starts a non-blocking connect: a Conn registered for EVENT_WRITE, or OSError."""
    s = new_socket(addr)
    s.setblocking(False)
    rc = s.connect_ex(addr[1])
    if rc not in (0, errno.EINPROGRESS, errno.EAGAIN, errno.EWOULDBLOCK):
        s.close()
        raise OSError(rc, os.strerror(rc))
    c = Conn(s, out, slot)
    sel.register(s, selectors.EVENT_WRITE, c)
    return c


def pool_event(sel, c, events, stats):
    """Handles one selector event of c; returns the new state: open, failed or closed."""
    s = c.sock
    if c.state == "connecting":
        err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err != 0:
            sel.unregister(s)
            s.close()
            c.state = "failed"
            return c.state
        c.state = "open"
        stats["opened"] += 1
        events = selectors.EVENT_WRITE if c.out else 0
    if events & selectors.EVENT_READ:
        try:
            data = s.recv(READ_CHUNK)
        except (BlockingIOError, InterruptedError):
            data = None
        except OSError as e:
            if e.errno not in CLOSED_ERRNOS:
                raise
            data = b""
        if data == b"":
            return pool_close(sel, c, stats)
    if c.out and events & selectors.EVENT_WRITE:
        try:
            n = s.send(c.out)
            c.out = c.out[n:]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError as e:
            if e.errno not in CLOSED_ERRNOS:
                raise
            return pool_close(sel, c, stats)
    sel.modify(s, selectors.EVENT_READ | (selectors.EVENT_WRITE if c.out else 0), c)
    return c.state


def pool_close(sel, c, stats):
    """The peer closed c: counted, unregistered, closed."""
    stats["closed_by_peer"] += 1
    sel.unregister(c.sock)
    close_quietly(c.sock)
    c.state = "closed"
    return c.state


def mass_hold(addr, n, payload, hold_s, deadline):
    """Opens n connections at once, sends payload(i) on each, holds them hold_s seconds.

    Returns opened, connect_failed, closed_by_peer, open_at_end."""
    sel = selectors.DefaultSelector()
    stats = {"opened": 0, "connect_failed": 0, "closed_by_peer": 0}
    conns = []
    for i in range(n):
        try:
            conns.append(start_connect(sel, addr, payload(i) if payload else b""))
        except OSError:
            stats["connect_failed"] += 1
    # Connect phase: until every connect resolved, CONNECT_TIMEOUT_S, or the deadline.
    connecting = len(conns)
    end = min(deadline, time.monotonic() + CONNECT_TIMEOUT_S)
    while connecting > 0 and time.monotonic() < end:
        for key, ev in sel.select(max(0.0, min(0.2, end - time.monotonic()))):
            c = key.data
            was = c.state
            now = pool_event(sel, c, ev, stats)
            if was == "connecting" and now != "connecting":
                connecting -= 1
                if now == "failed":
                    stats["connect_failed"] += 1
    for c in conns:
        if c.state == "connecting":  # timed out
            sel.unregister(c.sock)
            close_quietly(c.sock)
            c.state = "failed"
            stats["connect_failed"] += 1
    # Hold phase.
    end = min(deadline, time.monotonic() + hold_s)
    while time.monotonic() < end and any(c.state == "open" for c in conns):
        for key, ev in sel.select(max(0.0, min(0.2, end - time.monotonic()))):
            pool_event(sel, key.data, ev, stats)
    open_at_end = 0
    for c in conns:
        if c.state == "open":
            open_at_end += 1
            sel.unregister(c.sock)
            close_quietly(c.sock)
    sel.close()
    stats["open_at_end"] = open_at_end
    return stats


def result(mode, pairs):
    """The one result line."""
    print("%s: %s" % (mode, " ".join("%s=%s" % kv for kv in pairs)), flush=True)


def fmt_s(x):
    return "%.3f" % x


# ---------------------------------------------------------------------------------------------
# Modes
# ---------------------------------------------------------------------------------------------

def mode_preauth(a, addr, deadline):
    """N unauthenticated connections, each with a large frame announced and barely begun."""
    payload = preauth_payload(a.announce, a.send)
    st = mass_hold(addr, a.conns, lambda i: payload, a.hold_s, deadline)
    result("preauth", [("opened", st["opened"]), ("connect_failed", st["connect_failed"]),
                       ("closed_by_peer", st["closed_by_peer"]),
                       ("open_at_end", st["open_at_end"])])


def mode_hold(a, addr, deadline):
    """N connections that send nothing."""
    st = mass_hold(addr, a.conns, None, a.hold_s, deadline)
    result("hold", [("opened", st["opened"]), ("connect_failed", st["connect_failed"]),
                    ("closed_by_peer", st["closed_by_peer"])])


def mode_flood(a, addr, deadline):
    """Connect/close as fast as possible from K threads."""
    t0 = time.monotonic()
    end = min(deadline, t0 + a.seconds)
    # The start of a REGISTER frame: length, version, type, the id's length and 4 of its bytes.
    partial = register_frame(b"flood-0000", b"flooder", 1, b"")[:12]
    lock = threading.Lock()
    st = {"connections": 0, "refused": 0, "errors": 0, "first_refused": -1.0,
          "streak_start": None}
    kinds = {}  # errno name of each other error, told on stderr
    stop = threading.Event()

    def note_connected():
        # Under the lock: one more connection; the first creates --ready-file.
        st["connections"] += 1
        st["streak_start"] = None
        if st["connections"] == 1 and a.ready_file:
            with open(a.ready_file, "w") as f:
                f.write("connected\n")

    def note_refused(now):
        st["refused"] += 1
        if st["first_refused"] < 0:
            st["first_refused"] = now - t0
            st["first_refused_epoch"] = time.time()
        if st["streak_start"] is None:
            st["streak_start"] = now
        elif now - st["streak_start"] >= REFUSED_STOP_S:
            stop.set()

    def burst_worker():
        # --burst B: B non-blocking connects at once, the partial frame on each that connected,
        # then all closed: the driver always has connections queued, as from many hosts.
        while not stop.is_set() and time.monotonic() < end:
            socks = []
            for _ in range(a.burst):
                try:
                    s = new_socket(addr)
                except OSError:
                    with lock:
                        st["errors"] += 1
                    continue
                s.setblocking(False)
                rc = s.connect_ex(addr[1])
                if rc in (0, errno.EINPROGRESS):
                    socks.append(s)
                    continue
                with lock:
                    if rc == errno.ECONNREFUSED:
                        note_refused(time.monotonic())
                    else:
                        st["errors"] += 1
                close_quietly(s)
            writable = select.select([], socks, [], 0.05)[1] if socks else []
            for s in writable:
                err = s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                with lock:
                    if err == 0:
                        note_connected()
                    elif err == errno.ECONNREFUSED:
                        note_refused(time.monotonic())
                    else:
                        st["errors"] += 1
                if err == 0:
                    try:
                        s.send(partial)
                    except OSError:
                        pass
            for s in socks:
                reset_quietly(s)
            if not socks:
                time.sleep(0.001)

    def worker():
        while not stop.is_set() and time.monotonic() < end:
            try:
                s = connect_blocking(addr, min(2.0, max(0.01, end - time.monotonic())))
            except OSError as e:
                now = time.monotonic()
                if now >= end and e.errno == errno.ETIMEDOUT:
                    break  # cut short by the end of the run, not the driver's doing
                with lock:
                    if e.errno == errno.ECONNREFUSED:
                        note_refused(now)
                    else:
                        st["errors"] += 1
                        name = errno.errorcode.get(e.errno, str(e.errno))
                        kinds[name] = kinds.get(name, 0) + 1
                if e.errno != errno.ECONNREFUSED:
                    time.sleep(0.001)  # EADDRNOTAVAIL and the like: do not spin
                continue
            with lock:
                note_connected()
            try:
                send_all(s, partial)  # False: the driver closed it first; still a connection
            except OSError as e:
                with lock:
                    st["errors"] += 1
                    name = "send " + errno.errorcode.get(e.errno, str(e.errno))
                    kinds[name] = kinds.get(name, 0) + 1
            reset_quietly(s)

    target = burst_worker if a.burst > 1 else worker
    threads = [threading.Thread(target=target, daemon=True) for _ in range(max(1, a.parallel))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(max(0.0, end - time.monotonic()) + 3.0)
    stop.set()
    seconds = time.monotonic() - t0
    with lock:
        if kinds:
            told = ", ".join("%s %d" % kv for kv in sorted(kinds.items()))
            print("flood: other errors: %s" % told, file=sys.stderr)
        first = st["first_refused"]
        result("flood", [("connections", st["connections"]), ("refused", st["refused"]),
                         ("seconds", fmt_s(seconds)),
                         ("first_refused_after_s", fmt_s(first) if first >= 0 else "-1"),
                         ("first_refused_epoch_ms",
                          "%d" % round(st["first_refused_epoch"] * 1000) if first >= 0 else "-1"),
                         ("errors", st["errors"])])


def mode_register(a, addr, deadline):
    """One REGISTER with the given fields, then close, hold, a LAUNCH or a STATUS."""
    exec_id = unescape(a.id, "--id")
    host = unescape(a.host_name, "--host")
    cores = parse_u32(a.cores, "--cores")
    if a.token_env:
        token = env_token()
    elif a.token is not None:
        token = unescape(a.token, "--token")
    else:
        token = b""
    if len(exec_id) > 0xFFFF or len(host) > 0xFFFF:
        raise UsageError("--id and --host must be at most 65535 bytes")
    counter = FrameCounter()
    try:
        s = connect_blocking(addr, min(CONNECT_TIMEOUT_S, max(0.01, deadline - time.monotonic())))
    except OSError as e:
        raise LocalError("register: cannot connect: %s" % e)
    data = b""
    if a.then == "launch":
        data = launch_frame()
    elif a.then == "status":
        data = status_frame(1, 2)
    elif a.then == "heartbeat":
        data = frame(MSG_HEARTBEAT, struct.pack("<QQ", 0, a.binaries))
    elif a.then == "reconcile":
        if not 0 <= a.tids <= RECONCILE_MAX:
            raise UsageError("--tids must be 0..%d" % RECONCILE_MAX)
        data = reconcile_frame(range(1, a.tids + 1)) + status_frame(1, 2)
    if a.delay_s > 0:  # REGISTER alone first, then a silence
        closed = not send_all(s, register_frame(exec_id, host, cores, token))
        if not closed:
            closed, _ = wait_close(s, min(a.delay_s, max(0.0, deadline - time.monotonic())),
                                   counter)
    else:
        data = register_frame(exec_id, host, cores, token) + data
        closed = False
    t0 = time.monotonic()
    if closed:
        pass
    elif not send_all(s, data):
        closed = True
    elif a.then != "close":
        closed, _ = wait_close(s, min(a.hold_s, max(0.0, deadline - time.monotonic())), counter)
    after_ms = int((time.monotonic() - t0) * 1000)
    close_quietly(s)
    result("register", [("closed_by_peer", int(closed)), ("after_ms", after_ms),
                        ("frames", counter.text())])


def mode_guess(a, addr, deadline):
    """Sequential token guesses, one connection each."""
    t0 = time.monotonic()
    end = min(deadline, t0 + a.seconds)
    attempts = connect_failed = 0
    found = "none"
    refused_since = None
    guess = 0
    while guess < 10 ** a.digits and time.monotonic() < end:
        g = b"%0*d" % (a.digits, guess)
        try:
            s = connect_blocking(addr, min(2.0, max(0.01, end - time.monotonic())))
        except OSError as e:
            connect_failed += 1
            now = time.monotonic()
            if e.errno == errno.ECONNREFUSED:
                refused_since = refused_since or now
                if now - refused_since >= REFUSED_STOP_S:
                    break
            time.sleep(0.001)
            continue  # the same guess again
        refused_since = None
        attempts += 1
        guess += 1
        counter = FrameCounter()
        try:
            closed = not send_all(s, register_frame(b"guess-%d" % (guess - 1), b"attacker", 1, g))
            if not closed:
                closed, _ = wait_close(s, a.wait_ms / 1000.0, counter, stop_on_frame=True)
        finally:
            close_quietly(s)
        if not closed:  # still open, or a frame came: the driver took it
            found = g.decode()
            break
    seconds = time.monotonic() - t0
    rate = attempts / seconds if seconds > 0 else 0.0
    result("guess", [("attempts", attempts), ("connect_failed", connect_failed),
                     ("found", found), ("seconds", fmt_s(seconds)),
                     ("rate_per_s", "%.1f" % rate)])


def read_rss_kb(pid):
    """VmRSS of pid in kB, or -1."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return -1


TCP_ESTABLISHED = 1  # tcpi_state of Linux's struct tcp_info


def tcp_state(s):
    """The socket's TCP state (the first byte of TCP_INFO): 1 while established."""
    return s.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)[0]


def mode_flood_reconcile(a, addr, deadline):
    """REGISTER, then RECONCILE frames as fast as the driver reads them, never reading."""
    token = env_token()
    exec_id = unescape(a.id, "--id")
    host = unescape(a.host_name, "--host")
    cores = parse_u32(a.cores, "--cores")
    if not 0 <= a.tids <= RECONCILE_MAX:
        raise UsageError("--tids must be 0..%d" % RECONCILE_MAX)
    s = new_socket(addr)
    # A small receive buffer: what the driver answers stays on its side sooner.
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    if a.synced:
        # Small segments: with loopback's 64 KiB MTU, the driver's receive window opens only
        # by two segments (tcp_cleanup_rbuf), more than its default buffer frees, so the
        # flood would crawl at the zero-window probes' pace, both ways blocked.
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1400)
    try:
        s.settimeout(min(CONNECT_TIMEOUT_S, max(0.01, deadline - time.monotonic())))
        s.connect(addr[1])
    except OSError as e:
        close_quietly(s)
        raise LocalError("flood-reconcile: cannot connect: %s" % e)
    if a.synced:
        # Each pair (a STATUS of a tid the driver does not hold, then a HEARTBEAT) makes a
        # driver without --state-dir answer with a SYNCED frame: 49 bytes in, 14 out.
        pair = status_frame(tid=(1 << 63) + 1, state=2) + frame(MSG_HEARTBEAT,
                                                                 struct.pack("<QQ", 0, 0))
        rec = pair * 20000
    else:
        rec = reconcile_frame(range(1, a.tids + 1), 1)  # "more": one long reconciliation
    samples = []

    def sample():
        if a.rss_pid is not None:
            rss = read_rss_kb(a.rss_pid)
            if rss >= 0:
                samples.append(rss)

    t0 = time.monotonic()
    closed = False
    sent = 0
    s.settimeout(5.0)  # a send blocked this long: the driver no longer reads
    try:
        s.sendall(register_frame(exec_id, host, cores, token))
        while sent < a.frames and time.monotonic() < deadline:
            s.sendall(rec)
            sent += 1
            sample()
    except socket.timeout:
        pass
    except OSError as e:
        if e.errno not in CLOSED_ERRNOS:
            raise
        closed = True
    # The close, still reading nothing: the kernel's TCP state says it (a FIN: CLOSE_WAIT; a
    # reset: CLOSE), whatever waits unread in the receive buffer.
    end = min(deadline, time.monotonic() + a.hold_s)
    while not closed and time.monotonic() < end:
        sample()
        closed = tcp_state(s) != TCP_ESTABLISHED
        if not closed:
            time.sleep(0.05)
    after_ms = int((time.monotonic() - t0) * 1000)
    close_quietly(s)
    pairs = [("sent", sent), ("closed_by_peer", int(closed)), ("after_ms", after_ms)]
    if a.rss_pid is not None:
        pairs += [("rss_kb_first", samples[0] if samples else -1),
                  ("rss_kb_max", max(samples) if samples else -1)]
    result("flood-reconcile", pairs)


def mode_cycles(a, addr, deadline):
    """Register and close, N times, with the real token."""
    token = env_token()
    prefix = unescape(a.id_prefix, "--id-prefix")
    t0 = time.monotonic()
    done = connect_failed = 0
    samples = []
    refused_since = None
    for i in range(1, a.count + 1):
        if time.monotonic() >= deadline:
            break
        try:
            s = connect_blocking(addr, min(2.0, max(0.01, deadline - time.monotonic())))
        except OSError as e:
            connect_failed += 1
            if e.errno == errno.ECONNREFUSED:  # the listener closed: stop after 0.5 s of it
                refused_since = refused_since or time.monotonic()
                if time.monotonic() - refused_since >= REFUSED_STOP_S:
                    break
        else:
            refused_since = None
            send_all(s, register_frame(prefix + b"-%d" % i, b"cycler", a.cores, token))
            close_quietly(s)
            done += 1
        if a.rss_pid is not None and i % a.rss_every == 0:
            rss = read_rss_kb(a.rss_pid)
            if rss >= 0:
                samples.append(rss)
    pairs = [("done", done), ("connect_failed", connect_failed),
             ("seconds", fmt_s(time.monotonic() - t0))]
    if a.rss_pid is not None:
        if not samples:
            samples = [-1]
        pairs += [("rss_kb_first", samples[0]), ("rss_kb_last", samples[-1]),
                  ("rss_kb_max", max(samples))]
    result("cycles", pairs)


def mode_http_idle(a, addr, deadline):
    """N idle connections kept open for S seconds, each closed one replaced."""
    reopen_delay = 0.010
    sel = selectors.DefaultSelector()
    stats = {"opened": 0, "closed_by_peer": 0}
    reopened = connect_failed = 0
    end = min(deadline, time.monotonic() + a.hold_s)
    slots = [None] * a.conns  # the slot's Conn, or None
    due = [0.0] * a.conns     # when an empty slot connects again
    replacing = [False] * a.conns
    while time.monotonic() < end:
        now = time.monotonic()
        for i in range(a.conns):
            if slots[i] is None and now >= due[i]:
                try:
                    slots[i] = start_connect(sel, addr, b"", i)
                except OSError:
                    connect_failed += 1
                    due[i] = now + reopen_delay
        timeout = max(0.0, min(0.05, end - time.monotonic()))
        for key, ev in (sel.select(timeout) if sel.get_map() else []):
            c = key.data
            was = c.state
            state = pool_event(sel, c, ev, stats)
            if was == "connecting" and state == "open" and replacing[c.slot]:
                reopened += 1
            if state in ("failed", "closed"):
                if state == "failed":
                    connect_failed += 1
                slots[c.slot] = None
                due[c.slot] = time.monotonic() + reopen_delay
                replacing[c.slot] = replacing[c.slot] or state == "closed"
        if not sel.get_map():
            time.sleep(min(reopen_delay, max(0.0, end - time.monotonic())))
    for c in slots:
        if c is not None:
            sel.unregister(c.sock)
            close_quietly(c.sock)
    sel.close()
    result("http-idle", [("opened", stats["opened"]), ("closed_by_peer", stats["closed_by_peer"]),
                         ("reopened", reopened), ("connect_failed", connect_failed)])


def http_complete(resp):
    """Whether resp holds a whole response: its head and Content-Length bytes of body."""
    head, sep, body = resp.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                return len(body) >= int(value.strip())
            except ValueError:
                return False
    return False  # no length: it ends when the server closes


def http_get(addr, path, timeout):
    """One GET: True for status 200 with a non-empty body, within timeout."""
    t_end = time.monotonic() + timeout
    try:
        s = connect_blocking(addr, timeout)
    except OSError:
        return False
    resp = b""
    try:
        s.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path)
        while not http_complete(resp):
            left = t_end - time.monotonic()
            if left <= 0:
                return False
            s.settimeout(left)
            data = s.recv(READ_CHUNK)
            if not data:
                break
            resp += data
    except OSError:  # a timeout or a reset: only a whole response counts
        if not http_complete(resp):
            return False
    finally:
        close_quietly(s)
    head, sep, body = resp.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    return bool(sep) and len(status) >= 2 and status[1] == b"200" and len(body) > 0


def mode_scrape(a, addr, deadline):
    """N scrapes, I ms apart, each within 2 s."""
    path = a.path.encode()
    t0 = time.monotonic()
    ok = max_ms = 0
    for i in range(a.count):
        start = t0 + i * a.interval_ms / 1000.0
        now = time.monotonic()
        if start > now:
            time.sleep(start - now)
        if time.monotonic() >= deadline:
            break
        t = time.monotonic()
        ok += http_get(addr, path, min(2.0, max(0.01, deadline - t)))
        max_ms = max(max_ms, int((time.monotonic() - t) * 1000))
    result("scrape", [("ok", ok), ("of", a.count), ("max_ms", max_ms)])


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------

def unescape(text, what):
    """Python backslash escapes (\\n, \\xNN, \\\\, ...) decoded to bytes."""
    try:
        return codecs.escape_decode(text.encode("utf-8", "surrogateescape"))[0]
    except ValueError as e:
        raise UsageError("%s: bad escape: %s" % (what, e))


def parse_u32(text, what):
    """Decimal or 0x hex, 0..0xFFFFFFFF."""
    try:
        v = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        raise UsageError("%s: not a number: %s" % (what, text))
    if not 0 <= v <= 0xFFFFFFFF:
        raise UsageError("%s: out of 0..0xFFFFFFFF: %s" % (what, text))
    return v


def parse_u64(text):
    """Decimal or 0x hex, 0..2^64-1 (an argparse type)."""
    try:
        v = int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError("not a number: %s" % text)
    if not 0 <= v < 1 << 64:
        raise argparse.ArgumentTypeError("out of 0..2^64-1: %s" % text)
    return v


def env_token():
    tok = os.environ.get("TL_CLUSTER_TOKEN")
    if tok is None:
        raise UsageError("TL_CLUSTER_TOKEN is not set")
    return tok.encode("utf-8", "surrogateescape")


def positive_int(text):
    v = int(text, 0)
    if v < 1:
        raise argparse.ArgumentTypeError("must be at least 1: %s" % text)
    return v


def non_negative_float(text):
    v = float(text)
    if not v >= 0:
        raise argparse.ArgumentTypeError("must be at least 0: %s" % text)
    return v


def build_parser():
    # The common options are accepted before MODE and after it; after it they must not reset
    # what was given before (SUPPRESS: only set when given).
    def add_common(p, suppress, with_host=True):
        d = (lambda v: argparse.SUPPRESS) if suppress else (lambda v: v)
        if with_host:
            p.add_argument("--host", default=d("127.0.0.1"),
                           help="address to connect to (default 127.0.0.1; ::1 works)")
        p.add_argument("--port", type=int, default=d(None), help="the driver's port")
        p.add_argument("--source", default=d(None),
                       help="local address to connect from (127.0.0.2: another address)")
        p.add_argument("--deadline-s", type=non_negative_float, default=d(60.0),
                       help="overall time limit in seconds (default 60)")

    top = argparse.ArgumentParser(
        prog="attack.py", allow_abbrev=False,
        description="A hostile client of tl-driver for the edge tests.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Modes: preauth, flood, register, flood-reconcile, guess, cycles, hold, "
               "http-idle, scrape "
               "(see the file's docstring).")
    add_common(top, False)
    sub = top.add_subparsers(dest="mode", metavar="MODE")
    sub.required = True
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_common(common, True)
    # After `register`, --host is the REGISTER's host field (dest host_name), not the address.
    common_nohost = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    add_common(common_nohost, True, with_host=False)

    p = sub.add_parser("preauth", parents=[common], help="many connections, frames begun")
    p.add_argument("--conns", type=positive_int, required=True)
    p.add_argument("--announce", type=lambda t: parse_u32(t, "--announce"), default=FRAME_MAX)
    p.add_argument("--send", type=lambda t: parse_u32(t, "--send"), default=100)
    p.add_argument("--hold-s", type=non_negative_float, default=5.0)

    p = sub.add_parser("flood", parents=[common], help="connect and close, fast")
    p.add_argument("--seconds", type=non_negative_float, default=10.0)
    p.add_argument("--parallel", type=positive_int, default=4)
    p.add_argument("--ready-file", default=None,
                   help="created once the first connection is made (a test waits for it)")
    p.add_argument("--burst", type=positive_int, default=1,
                   help="connections each thread opens at once, non-blocking (default 1)")

    p = sub.add_parser("register", parents=[common_nohost], help="one REGISTER, then something")
    p.add_argument("--id", required=True, help="the executor id (Python escapes decoded)")
    p.add_argument("--host", dest="host_name", required=True,
                   help="the REGISTER's host field (escapes decoded); the address to connect "
                        "to is the --host before MODE")
    p.add_argument("--cores", required=True)
    tok = p.add_mutually_exclusive_group()
    tok.add_argument("--token-env", action="store_true")
    tok.add_argument("--token")
    p.add_argument("--then", choices=("close", "hold", "launch", "status", "heartbeat",
                                      "reconcile"), default="hold")
    p.add_argument("--delay-s", type=non_negative_float, default=0.0,
                   help="read this long after REGISTER before what --then sends")
    p.add_argument("--tids", type=int, default=0, help="the RECONCILE's tids (--then reconcile)")
    p.add_argument("--hold-s", type=non_negative_float, default=2.0)
    p.add_argument("--binaries", type=parse_u64, default=(1 << 64) - 1,
                   help="the HEARTBEAT's binaries count (--then heartbeat; default 2^64-1)")

    p = sub.add_parser("flood-reconcile", parents=[common_nohost],
                       help="RECONCILE frames without ever reading")
    p.add_argument("--id", required=True, help="the executor id (Python escapes decoded)")
    p.add_argument("--host", dest="host_name", required=True, help="the REGISTER's host field")
    p.add_argument("--cores", required=True)
    p.add_argument("--tids", type=int, default=RECONCILE_MAX)
    p.add_argument("--synced", action="store_true",
                   help="send STATUS and HEARTBEAT pairs (20,000 a batch) instead of RECONCILE")
    p.add_argument("--frames", type=positive_int, default=64)
    p.add_argument("--rss-pid", type=positive_int)
    p.add_argument("--hold-s", type=non_negative_float, default=5.0)

    p = sub.add_parser("guess", parents=[common], help="guess a numeric token")
    p.add_argument("--seconds", type=non_negative_float, default=10.0)
    p.add_argument("--digits", type=positive_int, default=4)
    p.add_argument("--wait-ms", type=positive_int, default=300)

    p = sub.add_parser("cycles", parents=[common], help="register and close, N times")
    p.add_argument("--count", type=positive_int, required=True)
    p.add_argument("--id-prefix", default="cycle")
    p.add_argument("--cores", type=lambda t: parse_u32(t, "--cores"), default=1)
    p.add_argument("--rss-pid", type=positive_int)
    p.add_argument("--rss-every", type=positive_int, default=100)

    p = sub.add_parser("hold", parents=[common], help="many silent connections")
    p.add_argument("--conns", type=positive_int, required=True)
    p.add_argument("--hold-s", type=non_negative_float, default=5.0)

    p = sub.add_parser("http-idle", parents=[common], help="idle connections to an HTTP port")
    p.add_argument("--conns", type=positive_int, required=True)
    p.add_argument("--hold-s", type=non_negative_float, required=True)

    p = sub.add_parser("scrape", parents=[common], help="GET the metrics N times")
    p.add_argument("--count", type=positive_int, required=True)
    p.add_argument("--interval-ms", type=non_negative_float, required=True)
    p.add_argument("--path", default="/metrics")
    return top


MODES = {"preauth": mode_preauth, "flood": mode_flood, "register": mode_register,
         "flood-reconcile": mode_flood_reconcile,
         "guess": mode_guess, "cycles": mode_cycles, "hold": mode_hold,
         "http-idle": mode_http_idle, "scrape": mode_scrape}


def main(argv):
    parser = build_parser()
    a = parser.parse_args(argv)
    try:
        if a.port is None or not 0 < a.port < 65536:
            raise UsageError("--port P (1..65535) is required")
        deadline = time.monotonic() + a.deadline_s
        raise_nofile()
        addr = resolve(a.host, a.port, a.source)
        MODES[a.mode](a, addr, deadline)
    except UsageError as e:
        parser.print_usage(sys.stderr)
        print("attack.py: error: %s" % e, file=sys.stderr)
        return 2
    except LocalError as e:
        print("attack.py: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(1)
    except SystemExit:
        raise
    except Exception:  # an unexpected local error: no result line
        import traceback
        traceback.print_exc()
        sys.exit(1)
