#!/usr/bin/env python3
"""A small cluster runtime in Python on taskledger: a word count as a two-stage map/reduce.

The driver is one asyncio loop. Its workers are separate processes (worker.py) that talk
line-delimited JSON over their stdin/stdout. taskledger keeps the books: which executors are
alive, which task runs where, what must run again when a worker goes away. The driver keeps
the rest: the job's DAG (run the reduce stage once every map output exists), where the map
outputs are, and the pipes.

    /usr/bin/python3 mapreduce.py                  # 4 workers, 12 maps, 4 reduces; a worker
                                                   # is killed while the maps run
    /usr/bin/python3 mapreduce.py --kill-during reduce   # ... while the reduces run
    /usr/bin/python3 mapreduce.py --no-kill        # the same job, nobody killed

How the pieces meet (the pattern any runtime on taskledger follows):

  * The Scheduler delivers events only when the driver calls s.dispatch(), on the driver's own
    thread. events_ready tells the loop that events wait; the loop then dispatches and makes
    an offer round (s.resource_offers) over the live workers' cores. Each launch is sent to its
    worker as a JSON line.
  * Workers register (s.executor_add), send heartbeats (s.executor_heartbeat) and report their
    tasks (s.status_update: RUNNING, then FINISHED with the result object, or FAILED).
  * A timer calls s.tick(): that is how a worker that has gone silent is found. Its loss ends
    the attempts it was running (task_ended, EndKind.EXECUTOR_LOST) and, while the map stage
    is still active, the map outputs it held (EndKind.RESUBMITTED); the ledger puts those
    indices back to pending and the next offer rounds run them on other workers.
  * Once the map stage is over, the ledger no longer answers for its outputs: the DAG does.
    A worker lost then takes map outputs the reduce stage needs, so the driver submits a new
    attempt of the map stage for those (s.partition_completed marks the rest done), and a
    reduce task that could not read its input fails with EndKind.FETCH_FAILED, which makes
    its task set zombie; a new attempt of the reduce stage runs what is left (as Spark's
    DAGScheduler does).

One worker is killed mid-job with SIGKILL, and the driver also stops reading its pipe, as if
the whole machine had dropped off the network: no exit message, no end-of-file. Only the
heartbeat timeout reveals it. (A real runtime would also report a worker whose pipe or socket
closes at once, LossKind.PROCESS_LOST; this driver does so for any other worker that exits.)
"""

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter

import taskledger as tl

HERE = os.path.dirname(os.path.abspath(__file__))
STAGE_NAMES = ("map", "reduce")


def make_text(seed, nwords):
    """Some text to count: words of a made-up language, a few of them very common."""
    rng = random.Random(seed)
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zu", "pe"]
    vocab = sorted({"".join(rng.choice(syllables) for _ in range(rng.randint(1, 3)))
                    for _ in range(600)})
    weights = [1.0 / (rank + 1) for rank in range(len(vocab))]
    return " ".join(rng.choices(vocab, weights, k=nwords))


class Stage:
    """A task set's payload: how to build the message for task `index` of the stage.

    taskledger keeps the payload alive while the task set lives, hands it to every launch
    (Launch.payload) and task event (TaskInfo.payload), and gives it back once, by
    taskset_released."""

    def __init__(self, stage_id, ntasks, make_task):
        self.stage_id = stage_id
        self.ntasks = ntasks
        self.make_task = make_task
        self.released = False


class Worker:
    """The driver's side of one worker process."""

    def __init__(self, executor_id, proc):
        self.executor_id = executor_id
        self.proc = proc
        self.registered = False
        self.lost = False          # the ledger declared it lost (executor_lost event)
        self.cut = False           # killed by this example, its pipe no longer read
        self.reader = None         # the task reading its stdout
        self.maps_done = set()     # map indices whose output it holds


class Driver:
    """The job's driver: its DAG, the ledger's handler, the offer loop and the pipes."""

    def __init__(self, args, text):
        self.args = args
        self.loop = asyncio.get_running_loop()
        self.wakeup = asyncio.Event()
        self.done = self.loop.create_future()  # the job's end, or the first error
        self.workers = {}
        self.map_outputs = {}      # map index -> executor id, for the outputs that exist
        self.map_files = {}        # map index -> [file per reduce partition], where last written
        self.reduce_results = {}   # reduce index -> {word: count}
        self.attempts = [-1, -1]   # the latest attempt of each stage
        self.live = [False, False]  # whether that attempt still has indices to run
        self.stages = []
        self.ends = Counter()      # EndKind name -> how many attempts ended so
        self.stale_updates = 0
        self.victim = None
        self.kill_time = None
        self.loss_time = None
        self.shutting_down = False
        self.shuffle_root = tempfile.mkdtemp(prefix="tl-mapreduce-")
        chunks = self.split(text.split(), args.partitions)
        self.chunks = [" ".join(c) for c in chunks]
        # handler=self: each method below named after an event (task_ended, ...) receives it.
        self.s = tl.Scheduler(
            self,
            events_ready=lambda: self.loop.call_soon_threadsafe(self.wakeup.set),
            heartbeat_timeout_ns=int(args.heartbeat_timeout * 1e9),
        )

    @staticmethod
    def split(words, n):
        size = (len(words) + n - 1) // n
        return [words[i * size:(i + 1) * size] for i in range(n)]

    # ---- the job's DAG ---------------------------------------------------------------------

    def submit_stage(self, stage_id):
        """Submit a new attempt of a stage; the indices already done count as done there.

        The first attempt of each stage runs every task. A later one (the map stage after a
        worker took map outputs with it once the stage was over, the reduce stage after a
        reduce task could not fetch them) runs only what is missing."""
        n = self.args.partitions if stage_id == 0 else self.args.reducers
        if stage_id == 0:
            nreduce = self.args.reducers
            stage = Stage(0, n, lambda m: {"map": m, "nreduce": nreduce, "text": self.chunks[m]})
            done = self.map_outputs
        else:
            # Reduce task r reads partition r of every map output, from where it was last
            # written (if that worker is gone, the read fails and says so: FETCH_FAILED).
            stage = Stage(1, n, lambda r: {"inputs": [self.map_files[m][r] for m in range(
                self.args.partitions)]})
            done = self.reduce_results
        self.stages.append(stage)
        self.attempts[stage_id] += 1
        self.live[stage_id] = True
        # shuffle_map: a map output lives on the worker that wrote it, so the ledger itself
        # reruns a finished map task whose worker is lost while the stage is active.
        self.s.submit(n, stage_id=stage_id, stage_attempt=self.attempts[stage_id],
                      shuffle_map=(stage_id == 0), payload=stage)
        for index in done:
            self.s.partition_completed(stage_id, index)
        if self.attempts[stage_id] > 0:
            self.log("stage %d attempt %d submitted for %s" % (
                stage_id, self.attempts[stage_id], sorted(set(range(n)) - set(done))))

    def stage_progress(self):
        """The DAG: the reduce stage runs once every map output exists."""
        if len(self.reduce_results) == self.args.reducers:
            return  # the job has its answer
        if len(self.map_outputs) == self.args.partitions:
            self.live[0] = False
            if not self.live[1]:
                self.submit_stage(1)
        elif not self.live[0]:
            self.submit_stage(0)

    def check_done(self):
        if (len(self.reduce_results) == self.args.reducers
                and all(st.released for st in self.stages) and not self.done.done()):
            self.final_map_outputs = dict(self.map_outputs)  # where the job found them
            self.done.set_result(None)

    def fail(self, why):
        if not self.done.done():
            self.done.set_exception(RuntimeError(why))

    # ---- the ledger's events: delivered by self.s.dispatch(), on the loop's thread ---------

    def task_ended(self, task, end):
        self.ends[end.kind.name] += 1
        if end.kind == tl.EndKind.SUCCESS:
            if task.stage_id == 0:
                self.map_outputs[task.index] = task.executor_id
                self.map_files[task.index] = end.result["files"]
                self.workers[task.executor_id].maps_done.add(task.index)
            else:
                self.reduce_results[task.index] = end.result
                if task.stage_attempt != self.attempts[1]:
                    # A result from an older attempt: the current one need not run it.
                    self.s.partition_completed(1, task.index)
                self.check_done()
            self.stage_progress()
        elif end.kind == tl.EndKind.RESUBMITTED:
            # The output of this finished map task was on the lost worker: the ledger made
            # the index pending again (the map stage is still active), and it runs elsewhere.
            self.map_outputs.pop(task.index, None)
            self.log("map %d: its output was on %s, resubmitted" % (task.index, task.executor_id))
        elif end.kind == tl.EndKind.EXECUTOR_LOST:
            self.log("stage %d task %d: attempt %d lost with %s, pending again"
                     % (task.stage_id, task.index, task.attempt, task.executor_id))
        elif end.kind == tl.EndKind.FETCH_FAILED:
            # A map output it needs is gone. The ledger made this reduce attempt zombie: it
            # launches nothing more. The DAG runs the missing map tasks (executor_lost below
            # has started that) and then a new attempt of the reduce stage.
            self.log("reduce %d could not fetch its input (%s)" % (task.index, end.message))
            if task.stage_attempt == self.attempts[1]:
                self.live[1] = False
                self.stage_progress()
        else:
            self.log("stage %d task %d failed (%s: %s), the ledger retries it"
                     % (task.stage_id, task.index, end.kind.name, end.message))

    def taskset_failed(self, ts, reason):
        self.fail("stage %d aborted: %s" % (ts.stage_id, reason))

    def taskset_released(self, ts, payload):
        payload.released = True
        self.check_done()

    def executor_added(self, executor_id, host):
        self.log("%s registered (%s)" % (executor_id, host))

    def executor_lost(self, executor_id, ud, reason):
        worker = ud
        worker.lost = True
        if reason.kind == tl.LossKind.HEARTBEAT_TIMEOUT:
            self.loss_time = time.monotonic()
            self.log("%s lost: %s, %.2f s after it was killed" % (
                executor_id, reason.kind.name, self.loss_time - (self.kill_time or 0)))
        # Its map outputs are gone. While the map stage runs, the ledger reruns them itself
        # (task_ended, RESUBMITTED); once it is over, the DAG must run them again.
        gone = sorted(m for m, ex in self.map_outputs.items() if ex == executor_id)
        for m in gone:
            del self.map_outputs[m]
        if gone and not self.live[0] and not self.shutting_down:
            self.log("map outputs %s were on %s after the map stage: it runs again for them"
                     % (gone, executor_id))
            self.stage_progress()
        # Its disk goes with it: the map outputs there are gone for good.
        shutil.rmtree(os.path.join(self.shuffle_root, executor_id), ignore_errors=True)
        if worker.proc.returncode is None and not self.shutting_down:
            worker.proc.kill()  # in case it was only hung: it must not come back

    # ---- the loop ----------------------------------------------------------------------------

    async def pump(self):
        """Deliver events, then offer every live worker's core; again whenever woken."""
        try:
            while not self.done.done():
                await self.wakeup.wait()
                self.wakeup.clear()
                self.s.dispatch()
                offers = [(w.executor_id, 1) for w in self.workers.values()
                          if w.registered and not w.lost]
                for launch in self.s.resource_offers(offers):
                    self.send_launch(launch)
        except Exception as e:
            self.fail("driver loop: %r" % e)

    async def ticker(self):
        """Run the ledger's timers (heartbeat expiry among them) when they are due."""
        while not self.done.done():
            due_ns = self.s.tick()
            await asyncio.sleep(min(due_ns / 1e9, 0.1))

    def send_launch(self, launch):
        worker = launch.executor_ud
        stage = launch.payload
        msg = {"type": "launch", "tid": launch.tid, "stage": launch.stage_id,
               "index": launch.index, "task": stage.make_task(launch.index)}
        self.write(worker, msg)
        if (self.args.kill_during is not None and self.victim is None
                and STAGE_NAMES[launch.stage_id] == self.args.kill_during
                and len(worker.maps_done) >= self.args.kill_after):
            self.kill(worker, launch)

    def kill(self, worker, launch):
        """Make `worker` vanish: SIGKILL it and stop reading its pipe."""
        self.victim = worker
        self.victim_maps = sorted(worker.maps_done)
        self.victim_task = "%s %d" % (STAGE_NAMES[launch.stage_id], launch.index)
        os.kill(worker.proc.pid, signal.SIGKILL)
        worker.reader.cancel()
        worker.cut = True
        self.kill_time = time.monotonic()
        self.log("killed %s (pid %d): it holds map outputs %s and runs %s"
                 % (worker.executor_id, worker.proc.pid, self.victim_maps, self.victim_task))

    def write(self, worker, msg):
        if worker.cut or worker.proc.stdin.is_closing():
            return  # the wire is down: the ledger will find out from the missing heartbeats
        worker.proc.stdin.write((json.dumps(msg, separators=(",", ":")) + "\n").encode())

    async def read_worker(self, worker):
        while True:
            line = await worker.proc.stdout.readline()
            if not line:
                break
            try:
                self.on_message(worker, json.loads(line), len(line))
            except Exception as e:
                self.fail("message from %s: %r" % (worker.executor_id, e))
                return
        if not self.shutting_down:
            # It exited, or closed its pipe: no need to wait for the heartbeat timeout.
            self.lose(worker, tl.LossKind.PROCESS_LOST, "worker exited")

    def lose(self, worker, kind, message):
        """Tell the ledger a worker is gone (unless it has found out already)."""
        if worker.registered and not worker.lost:
            try:
                self.s.executor_lost(worker.executor_id, kind, message=message)
            except tl.EGONE:
                pass  # lost by a tick whose executor_lost event is not delivered yet

    def on_message(self, worker, msg, size):
        kind = msg["type"]
        if kind == "register":
            self.s.executor_add(worker.executor_id, msg["host"], msg["cores"], ud=worker)
            worker.registered = True
        elif kind == "heartbeat":
            try:
                self.s.executor_heartbeat(worker.executor_id)
            except (tl.EGONE, tl.ESTATE):
                # Lost already (maybe by a tick whose executor_lost event waits for the next
                # dispatch): a heartbeat does not undo a loss.
                pass
        elif kind == "status":
            state = tl.TaskState[msg["state"]]
            extra = {}
            if state == tl.TaskState.FINISHED:
                extra = {"result": msg["result"], "result_size": size}
            elif state == tl.TaskState.FAILED:
                extra = {"failure": tl.EndKind[msg["failure"]], "message": msg.get("message")}
            try:
                self.s.status_update(worker.executor_id, msg["tid"], state, **extra)
            except (tl.ESTALE, tl.EOWNER, tl.EGONE):
                # An update for an attempt the ledger has already ended, or from a worker it
                # has already declared lost: refused, nothing changed.
                self.stale_updates += 1

    def log(self, text):
        if self.args.verbose:
            print("  [%6.3f] %s" % (time.monotonic() - self.t0, text), flush=True)

    async def run(self):
        self.t0 = time.monotonic()
        hb_interval = self.args.heartbeat_timeout / 5
        for i in range(self.args.workers):
            executor_id = "w-%d" % i
            proc = await asyncio.create_subprocess_exec(
                sys.executable, os.path.join(HERE, "worker.py"), executor_id,
                os.path.join(self.shuffle_root, executor_id), str(hb_interval),
                str(self.args.task_ms),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                limit=1 << 24)
            worker = Worker(executor_id, proc)
            self.workers[executor_id] = worker
            worker.reader = asyncio.ensure_future(self.read_worker(worker))
        pump = asyncio.ensure_future(self.pump())
        ticker = asyncio.ensure_future(self.ticker())
        self.submit_stage(0)
        self.wakeup.set()
        try:
            await asyncio.wait_for(asyncio.shield(self.done), self.args.timeout)
        finally:
            await self.shutdown(pump, ticker)

    async def shutdown(self, *tasks):
        self.shutting_down = True
        if not self.done.done():
            self.done.cancel()  # timed out
        self.wakeup.set()
        for t in tasks:
            t.cancel()
        for w in self.workers.values():
            self.write(w, {"type": "shutdown"})
            self.lose(w, tl.LossKind.EXITED, "job done")
            if w.proc.stdin and not w.proc.stdin.is_closing():
                w.proc.stdin.close()
        self.s.dispatch()
        for w in self.workers.values():
            try:
                await asyncio.wait_for(w.proc.wait(), 5)
            except asyncio.TimeoutError:
                w.proc.kill()
                await w.proc.wait()
            if w.reader:
                w.reader.cancel()
        shutil.rmtree(self.shuffle_root, ignore_errors=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=4, help="worker processes (default 4)")
    p.add_argument("--partitions", type=int, default=12, help="map tasks (default 12)")
    p.add_argument("--reducers", type=int, default=4, help="reduce tasks (default 4)")
    p.add_argument("--words", type=int, default=60000, help="words of text (default 60000)")
    p.add_argument("--seed", type=int, default=1, help="seed of the text (default 1)")
    p.add_argument("--kill-during", choices=STAGE_NAMES, default="map",
                   help="the stage during which a worker is killed (default map)")
    p.add_argument("--no-kill", dest="kill_during", action="store_const", const=None,
                   help="kill no worker")
    p.add_argument("--kill-after", type=int, default=2,
                   help="the victim is the first worker sent a task of that stage while it "
                        "holds this many map outputs (default 2)")
    p.add_argument("--task-ms", type=float, default=40,
                   help="extra time each task takes, in ms (default 40)")
    p.add_argument("--heartbeat-timeout", type=float, default=1.0,
                   help="seconds of silence before a worker is lost (default 1)")
    p.add_argument("--timeout", type=float, default=60, help="give up after this many seconds")
    p.add_argument("-v", "--verbose", action="store_true", help="log what happens")
    args = p.parse_args(argv)
    if args.workers < 2 and args.kill_during is not None:
        p.error("killing a worker needs at least 2 workers")

    text = make_text(args.seed, args.words)
    expected = Counter(text.split())

    async def go():
        driver = Driver(args, text)
        try:
            await driver.run()
        finally:
            # Whatever happened, the ledger must be consistent and, once the job is over, empty.
            driver.s.check()
            stats = driver.s.stats()
            driver.s.close()
        return driver, stats

    t0 = time.monotonic()
    try:
        driver, stats = asyncio.run(go())
    except (Exception, asyncio.TimeoutError) as e:
        print("FAILED: %s" % (str(e) or "timed out after %g s" % args.timeout), file=sys.stderr)
        return 1
    elapsed = time.monotonic() - t0

    counted = Counter()
    for part in driver.reduce_results.values():
        counted.update(part)
    problems = []
    if counted != expected:
        problems.append("word counts differ from a direct count")
    drained = (stats.tasksets_active == 0 and stats.tasksets_zombie == 0
               and stats.attempts_running == 0 and stats.tasks_pending == 0
               and stats.executors_alive == 0)
    if not drained:
        problems.append("the ledger is not drained")

    print("word count: %d words, %d distinct, %d map and %d reduce tasks on %d workers: %s"
          % (sum(expected.values()), len(expected), args.partitions, args.reducers,
             args.workers, "matches a direct count" if counted == expected else "MISMATCH"))
    if driver.victim is not None:
        v = driver.victim.executor_id
        lost = driver.ends["EXECUTOR_LOST"]
        resubmitted = driver.ends["RESUBMITTED"]
        moved = all(ex != v for ex in getattr(driver, "final_map_outputs", {v: v}).values())
        print("killed %s while it ran %s and held map outputs %s; lost by heartbeat "
              "timeout after %.2f s" % (v, driver.victim_task, driver.victim_maps,
                                        (driver.loss_time or 0) - driver.kill_time))
        print("rerun: %d attempt(s) ended EXECUTOR_LOST, %d map output(s) RESUBMITTED, "
              "%d FETCH_FAILED; map stage ran %d time(s), reduce stage %d; all ran again on "
              "other workers" % (lost, resubmitted, driver.ends["FETCH_FAILED"],
                                 driver.attempts[0] + 1, driver.attempts[1] + 1))
        if args.kill_during == "map":
            rerun = resubmitted >= len(driver.victim_maps)   # by the ledger
        else:
            rerun = driver.attempts[0] >= 1                   # by the DAG
        if driver.loss_time is None or lost < 1 or not rerun or not moved:
            problems.append("the killed worker's tasks did not all run again elsewhere")
    elif args.kill_during is not None:
        problems.append("no worker was killed: no worker held %d map outputs when sent a %s "
                        "task (more --partitions, or a smaller --kill-after)"
                        % (args.kill_after, args.kill_during))
    else:
        print("rerun: none (no worker killed)")
    print("ledger %s: %d task sets, %d running attempts, %d pending tasks, %d live executors; "
          "%d launched, %d succeeded; check ok; closed"
          % ("drained" if drained else "NOT DRAINED", stats.tasksets_active + stats.tasksets_zombie,
             stats.attempts_running, stats.tasks_pending, stats.executors_alive, stats.launched,
             stats.succeeded))
    if driver.stale_updates:
        print("%d late status update(s) refused by the ledger" % driver.stale_updates)
    print("%.2f s" % elapsed)
    for pr in problems:
        print("FAILED: " + pr, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
