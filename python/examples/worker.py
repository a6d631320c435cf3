#!/usr/bin/env python3
"""A worker process of the map/reduce example (mapreduce.py starts it; not run by hand).

It speaks line-delimited JSON: requests on stdin, replies on stdout, one object per line.

    driver -> worker   {"type": "launch", "tid": 7, "stage": 0, "index": 3, "task": {...}}
                       {"type": "shutdown"}
    worker -> driver   {"type": "register", "executor_id": "w-1", "host": "...", "cores": 1}
                       {"type": "heartbeat"}
                       {"type": "status", "tid": 7, "state": "RUNNING"}
                       {"type": "status", "tid": 7, "state": "FINISHED", "result": ...}
                       {"type": "status", "tid": 7, "state": "FAILED", "failure": "...",
                        "message": "..."}

A map task counts the words of its chunk of text and writes one file per reduce partition
under the worker's own shuffle directory (its "local disk": the driver treats the directory as
gone with the worker). A reduce task reads its partition of every map output and returns the
summed counts to the driver. The worker runs one task at a time (it registers one core); a
thread sends heartbeats meanwhile, so a long task does not look like a dead worker.
"""

import json
import os
import socket
import sys
import threading
import time
import zlib
from collections import Counter

_out_lock = threading.Lock()


def send(msg):
    line = json.dumps(msg, separators=(",", ":")) + "\n"
    with _out_lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def partition_of(word, nreduce):
    """The reduce partition of a word: a hash that is the same in every process."""
    return zlib.crc32(word.encode()) % nreduce


def run_map(tid, task, shuffle_dir):
    counts = Counter(task["text"].split())
    parts = [dict() for _ in range(task["nreduce"])]
    for word, n in counts.items():
        parts[partition_of(word, task["nreduce"])][word] = n
    files = []
    for r, part in enumerate(parts):
        # The tid in the name keeps a rerun of the same map index from overwriting a file
        # another reduce task may be reading.
        path = os.path.join(shuffle_dir, "map%d-t%d-r%d.json" % (task["map"], tid, r))
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(part, f)
        os.replace(tmp, path)
        files.append(path)
    return {"files": files, "words": sum(counts.values())}


class FetchFailed(Exception):
    pass


def run_reduce(task):
    total = Counter()
    for path in task["inputs"]:
        try:
            with open(path) as f:
                total.update(json.load(f))
        except FileNotFoundError:
            raise FetchFailed(path)
    return dict(total)


def heartbeats(interval):
    while True:
        send({"type": "heartbeat"})
        time.sleep(interval)


def main():
    executor_id, shuffle_dir, hb_interval, task_ms = (
        sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    os.makedirs(shuffle_dir, exist_ok=True)
    send({"type": "register", "executor_id": executor_id, "host": socket.gethostname(),
          "cores": 1, "pid": os.getpid()})
    threading.Thread(target=heartbeats, args=(hb_interval,), daemon=True).start()
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "shutdown":
            break
        tid = msg["tid"]
        send({"type": "status", "tid": tid, "state": "RUNNING"})
        time.sleep(task_ms / 1000.0)  # stands for real work, so that tasks overlap the kill
        try:
            if msg["stage"] == 0:
                result = run_map(tid, msg["task"], shuffle_dir)
            else:
                result = run_reduce(msg["task"])
        except FetchFailed as e:
            send({"type": "status", "tid": tid, "state": "FAILED", "failure": "FETCH_FAILED",
                  "message": "missing map output %s" % e})
            continue
        except Exception as e:  # the task's own failure: the ledger retries it elsewhere
            send({"type": "status", "tid": tid, "state": "FAILED", "failure": "EXCEPTION",
                  "message": repr(e)})
            continue
        send({"type": "status", "tid": tid, "state": "FINISHED", "result": result})


if __name__ == "__main__":
    main()
