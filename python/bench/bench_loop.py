#!/usr/bin/env python3
"""Tasks per second of a Python scheduling loop on taskledger, against Dask's scheduler.

The taskledger loop is the shape of python/examples/mapreduce.py's driver without the
processes: executors are only ids, tasks are noops. Each round offers every executor all its
cores (s.resource_offers), reports FINISHED for every launch in one batch per executor
(s.status_updates), and delivers the events (s.dispatch()), until every task is done. The
tasks come in several task sets, submitted up front.

Dask runs the same number of noop tasks on in-process workers (Client(processes=False)),
submitted with client.map(pure=False) and waited for; its scheduler does the same job there
(placing tasks, tracking their state, releasing them), in Python.

The figures interleave: taskledger, Dask, taskledger with every callback set, then again, so
that a noisy machine's moods spread over all three. Each figure is the median of --repeats
runs, with its range.

    /usr/bin/python3 bench_loop.py                      # the figure of docs/performance.md
    /usr/bin/python3 bench_loop.py --no-dask --tasks 2000 --repeats 1   # a quick check
"""

import argparse
import gc
import logging
import statistics
import sys
import time

import taskledger as tl


class EveryCallback:
    """A handler with a method for every event: the shape a runtime usually runs."""

    def __init__(self):
        self.events = 0

    def task_started(self, task):
        self.events += 1

    def task_ended(self, task, end):
        self.events += 1

    def taskset_failed(self, ts, reason):
        self.events += 1

    def taskset_released(self, ts, payload):
        self.events += 1

    def executor_added(self, executor_id, host):
        self.events += 1

    def executor_lost(self, executor_id, ud, reason):
        self.events += 1

    def speculative_task_submitted(self, ts, index):
        self.events += 1

    def revive_offers(self):
        self.events += 1

    def kill_task(self, tid, executor_id, ud, interrupt, reason):
        self.events += 1

    def executor_removed(self, executor_id, ud, reason):
        self.events += 1

    def taskset_unschedulable(self, ts, reason):
        self.events += 1

    def taskset_schedulable(self, ts):
        self.events += 1

    def demand_changed(self, demand):
        self.events += 1


def ledger_loop(ntasks, executors, cores, tasksets, handler=None):
    """Runs ntasks noop tasks through a scheduling loop; returns tasks per second."""
    s = tl.Scheduler(handler)
    ids = ["exec-%d" % i for i in range(executors)]
    for i, executor_id in enumerate(ids):
        s.executor_add(executor_id, "host-%d" % (i % 4), cores)
    s.dispatch()
    offers = [tl.Offer(executor_id, cores) for executor_id in ids]
    sizes = [ntasks // tasksets + (1 if k < ntasks % tasksets else 0) for k in range(tasksets)]
    finished = tl.TaskState.FINISHED
    done = 0

    t0 = time.perf_counter()
    for k, n in enumerate(sizes):
        if n:
            s.submit(n, stage_id=k, payload=k)
    while done < ntasks:
        launches = s.resource_offers(offers)
        if not launches:
            raise RuntimeError("a round launched nothing with %d tasks left" % (ntasks - done))
        batches = {}
        for launch in launches:
            batches.setdefault(launch.executor_id, []).append((launch.tid, finished))
        for executor_id, updates in batches.items():
            codes = s.status_updates(executor_id, updates)
            if any(codes):
                raise RuntimeError("status_updates answered %r" % codes)
        done += len(launches)
        s.dispatch()
    elapsed = time.perf_counter() - t0

    s.check()
    st = s.stats()
    if st.tasksets_active or st.tasksets_zombie or st.attempts_running or st.succeeded != ntasks:
        raise RuntimeError("the ledger is not drained: %r" % (st,))
    s.close()
    return ntasks / elapsed


def noop(x):
    return x


class DaskBench:
    def __init__(self, workers, threads):
        # Imported here so that --no-dask needs no Dask.
        from dask.distributed import Client, wait
        for name in ("distributed", "tornado", "asyncio"):
            logging.getLogger(name).setLevel(logging.ERROR)
        self.wait = wait
        self.client = Client(processes=False, n_workers=workers, threads_per_worker=threads,
                             dashboard_address=None)

    def run(self, ntasks):
        t0 = time.perf_counter()
        futures = self.client.map(noop, range(ntasks), pure=False)
        self.wait(futures)
        elapsed = time.perf_counter() - t0
        del futures
        # Let the scheduler forget those tasks before the next run starts its clock.
        deadline = time.monotonic() + 30
        while (self.client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))
               and time.monotonic() < deadline):
            time.sleep(0.05)
        return ntasks / elapsed

    def close(self):
        self.client.close()


def summary(name, values):
    med = statistics.median(values)
    print("%-32s %10.0f tasks/s  (median of %d; range %.0f-%.0f)"
          % (name, med, len(values), min(values), max(values)), flush=True)
    return med


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", type=int, default=100000, help="tasks per taskledger run")
    p.add_argument("--dask-tasks", type=int, default=5000, help="tasks per Dask run")
    p.add_argument("--tasksets", type=int, default=10, help="task sets per taskledger run")
    p.add_argument("--executors", type=int, default=4, help="executors (Dask: workers)")
    p.add_argument("--cores", type=int, default=8,
                   help="cores per executor (Dask: threads per worker)")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds")
    p.add_argument("--no-dask", action="store_true", help="measure taskledger only")
    args = p.parse_args(argv)

    dask = None if args.no_dask else DaskBench(args.executors, args.cores)
    bare, every, dsk = [], [], []
    print("%d executors x %d cores; taskledger %d tasks in %d task sets per run%s"
          % (args.executors, args.cores, args.tasks, args.tasksets,
             "" if dask is None else "; Dask %d tasks per run" % args.dask_tasks), flush=True)
    try:
        if dask is not None:
            dask.run(min(args.dask_tasks, 500))  # warm-up: first-use costs out of the figure
        ledger_loop(min(args.tasks, 2000), args.executors, args.cores, args.tasksets)
        for r in range(args.repeats):
            gc.collect()
            bare.append(ledger_loop(args.tasks, args.executors, args.cores, args.tasksets))
            if dask is not None:
                gc.collect()
                dsk.append(dask.run(args.dask_tasks))
            gc.collect()
            every.append(ledger_loop(args.tasks, args.executors, args.cores, args.tasksets,
                                     EveryCallback()))
            print("round %d: taskledger %.0f, %staskledger every callback %.0f tasks/s"
                  % (r + 1, bare[-1], "" if dask is None else "Dask %.0f, " % dsk[-1],
                     every[-1]), flush=True)
    finally:
        if dask is not None:
            dask.close()

    m_bare = summary("taskledger loop", bare)
    m_every = summary("taskledger loop, every callback", every)
    if dask is not None:
        m_dask = summary("Dask scheduler", dsk)
        ratios = [b / d for b, d in zip(bare, dsk)]
        ratios_every = [e / d for e, d in zip(every, dsk)]
        print("ratio taskledger / Dask: %.1fx (medians); per round %.1f-%.1f"
              % (m_bare / m_dask, min(ratios), max(ratios)))
        print("ratio taskledger every callback / Dask: %.1fx (medians); per round %.1f-%.1f"
              % (m_every / m_dask, min(ratios_every), max(ratios_every)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
