"""Callbacks: when (only in dispatch), where (the dispatching thread) and in what order.

The order is the C contract's (include/taskledger.h, tl_callbacks and tl_executor_lost): events
are delivered exactly once, one at a time, in the order they were made, and demand_changed is
the last event of the call that made it.
"""

import threading

import pytest

import taskledger as tl
from conftest import FakeClock, Obj, Recorder, RestoringRecorder, launch_all


def run_in_thread(fn):
    out = {}

    def body():
        out["ident"] = threading.get_ident()
        out["value"] = fn()

    t = threading.Thread(target=body)
    t.start()
    t.join()
    return out["ident"], out["value"]


def test_callbacks_run_only_in_dispatch(sched, rec):
    sched.executor_add("e1", "h1", 2)
    ts = sched.submit(2, stage_id=1)
    launches = sched.resource_offers([("e1", 2)])
    sched.status_update("e1", launches[0].tid, tl.TaskState.FINISHED)
    sched.tick()
    assert rec.log == []
    queued = sched.stats().events_queued
    assert queued > 0
    delivered = sched.dispatch()
    assert delivered == len(rec.log) == queued
    assert rec.names() == ["executor_added", "revive_offers", "task_started", "task_started",
                           "task_ended"]
    assert sched.dispatch() == 0
    assert sched.stats().events_queued == 0
    assert ts == rec.of("task_ended")[0][0].taskset


def test_callbacks_run_on_the_dispatching_thread(sched, rec):
    sched.executor_add("e1", "h1", 1)
    sched.submit(1, stage_id=1)
    sched.resource_offers([("e1", 1)])
    ident, delivered = run_in_thread(sched.dispatch)
    assert delivered == len(rec.log) > 0
    assert ident != threading.get_ident()
    assert rec.threads() == {ident}
    # and back on this thread for the next batch
    sched.executor_add("e2", "h2", 1)
    sched.dispatch()
    assert rec.log[-1][2] == threading.get_ident()


def test_calls_from_another_thread_deliver_nothing_there(sched, rec):
    def calls():
        sched.executor_add("e1", "h1", 1)
        sched.submit(1, stage_id=1)
        return len(rec.log)

    _, seen_there = run_in_thread(calls)
    assert seen_there == 0 and rec.log == []
    sched.dispatch()
    assert rec.names() == ["executor_added", "revive_offers"]
    assert rec.threads() == {threading.get_ident()}


def test_task_ended_before_taskset_released(sched, rec):
    payload = Obj("p")
    sched.executor_add("e1", "h1", 1)
    ts = sched.submit(1, stage_id=1, payload=payload)
    (launch,) = launch_all(sched, [("e1", 1)])
    rec.clear()
    sched.status_update("e1", launch.tid, tl.TaskState.FINISHED)
    sched.dispatch()
    assert rec.names() == ["task_ended", "taskset_released"]
    (info, got) = rec.of("taskset_released")[0]
    assert isinstance(info, tl.TasksetInfo)
    assert (info.id, info.stage_id, info.stage_attempt, info.ntasks) == (ts, 1, 0, 1)
    assert got is payload
    # demand_changed, when made, is the last event of the call
    names = [n for n, _, _ in rec.log]
    assert "demand_changed" in names and names[-1] == "demand_changed"


def test_one_phase_loss_order(sched, rec):
    ud = Obj("ud")
    sched.executor_add("e1", "h1", 2, ud=ud)
    sched.submit(2, stage_id=1)
    launches = launch_all(sched, [("e1", 2)])
    rec.clear()
    sched.executor_lost("e1", tl.LossKind.PROCESS_LOST)
    sched.dispatch()
    assert rec.names() == ["executor_lost", "task_ended", "task_ended", "executor_removed",
                           "revive_offers"]
    ended = [(t.tid, e.kind) for t, e in rec.of("task_ended")]
    assert ended == [(launch.tid, tl.EndKind.EXECUTOR_LOST) for launch in launches]
    assert [t.executor_ud for t, _ in rec.of("task_ended")] == [ud, ud]
    names = [n for n, _, _ in rec.log]
    assert names[-1] == "demand_changed"
    sched.check()


def test_two_phase_loss_order(sched, rec):
    sched.executor_add("e1", "h1", 1)
    sched.submit(1, stage_id=1)
    (launch,) = launch_all(sched, [("e1", 1)])
    rec.clear()
    sched.executor_lost("e1", tl.LossKind.PENDING)
    sched.dispatch()
    assert rec.names() == ["executor_lost"]
    rec.clear()
    sched.executor_lost("e1", tl.LossKind.KILLED)
    sched.dispatch()
    assert rec.names() == ["task_ended", "executor_removed", "revive_offers"]
    ((_, _, reason),) = rec.of("executor_removed")
    assert reason.kind == tl.LossKind.KILLED


def test_resubmitted_ends_come_first(sched, rec):
    sched.executor_add("e1", "h1", 3)
    ts = sched.submit(3, stage_id=1, shuffle_map=True)
    launches = launch_all(sched, [("e1", 3)])
    # complete index 2 then index 0; index 1 stays running
    by_index = {launch.index: launch.tid for launch in launches}
    sched.status_update("e1", by_index[2], tl.TaskState.FINISHED)
    sched.status_update("e1", by_index[0], tl.TaskState.FINISHED)
    sched.dispatch()
    rec.clear()
    sched.executor_lost("e1", tl.LossKind.EXITED)
    sched.dispatch()
    ends = [(t.tid, e.kind) for t, e in rec.of("task_ended")]
    assert ends == [
        (by_index[2], tl.EndKind.RESUBMITTED),
        (by_index[0], tl.EndKind.RESUBMITTED),
        (by_index[1], tl.EndKind.EXECUTOR_LOST),
    ]
    assert rec.names()[-2:] == ["executor_removed", "revive_offers"]
    assert sched.taskset_get(ts).pending == 3
    sched.check()


def test_cancel_makes_failed_then_released(sched, rec):
    payload = Obj()
    ts = sched.submit(1, stage_id=4, payload=payload)
    sched.dispatch()
    rec.clear()
    sched.cancel_stage(4)
    sched.dispatch()
    assert rec.names() == ["taskset_failed", "taskset_released"]
    assert rec.of("taskset_released")[0][0].id == ts
    assert rec.of("taskset_released")[0][1] is payload


def test_reconcile_order_ends_then_kills(rec):
    clock = FakeClock()
    s = tl.Scheduler(rec, clock=clock)
    s.executor_add("e1", "h1", 2)
    ts = s.submit(2, stage_id=1)
    launches = launch_all(s, [("e1", 2)])
    image = s.snapshot()
    s.abandon()
    rec2 = RestoringRecorder(payloads={ts: Obj()})
    with tl.Scheduler.restore(image, rec2, clock=clock) as s2:
        s2.dispatch()
        rec2.clear()
        assert s2.executor_reconcile("e1", [launches[1].tid, 500, 400]) == [400, 500]
        s2.dispatch()
        assert rec2.names() == ["task_ended", "kill_task", "kill_task", "revive_offers"]
        assert [k[0] for k in rec2.of("kill_task")] == [400, 500]
        assert rec2.of("task_ended")[0][0].tid == launches[0].tid


def test_events_ready_once_per_wakeup(clock):
    calls = []
    rec = Recorder()
    s = tl.Scheduler(rec, clock=clock, events_ready=lambda: calls.append(threading.get_ident()))
    try:
        assert calls == []
        s.executor_add("e1", "h1", 1)
        s.executor_add("e2", "h2", 1)
        s.submit(1, stage_id=1)
        assert calls == [threading.get_ident()]
        s.dispatch()
        assert len(calls) == 1
        s.executor_heartbeat("e1")  # queues nothing: no wake-up
        assert len(calls) == 1
        # the next event, from another thread, wakes again, on that thread
        ident, _ = run_in_thread(lambda: s.executor_add("e3", "h3", 1))
        assert calls[1:] == [ident]
        s.executor_add("e4", "h4", 1)
        assert len(calls) == 2
        s.dispatch()
        assert rec.of("executor_added")[-2:] == [("e3", "h3"), ("e4", "h4")]
    finally:
        s.close()


def test_handler_exception_reraised_after_the_batch(clock):
    first = KeyError("first")
    second = RuntimeError("second")
    raised = []

    class H(Recorder):
        def executor_added(self, executor_id, host):
            super().executor_added(executor_id, host)
            if executor_id == "bad1":
                raised.append(first)
                raise first
            if executor_id == "bad2":
                raised.append(second)
                raise second

    rec = H()
    with tl.Scheduler(rec, clock=clock) as s:
        for eid in ("e1", "bad1", "e2", "bad2", "e3"):
            s.executor_add(eid, "h-" + eid, 1)
        with pytest.raises(KeyError) as info:
            s.dispatch()
        assert info.value is first
        assert raised == [first, second]
        assert [args[0] for args in rec.of("executor_added")] == ["e1", "bad1", "e2", "bad2",
                                                                   "e3"]
        assert s.stats().events_queued == 0
        # the scheduler is fine afterwards; nothing is delivered twice
        assert s.dispatch() == 0
        s.submit(1, stage_id=1)
        assert s.dispatch() >= 1
        assert rec.names()[-1] == "revive_offers"
        assert len(rec.of("executor_added")) == 5
        s.check()


def test_handler_may_call_the_scheduler(clock):
    seen = {}

    class H(Recorder):
        def executor_added(self, executor_id, host):
            super().executor_added(executor_id, host)
            seen["submit"] = s.submit(1, stage_id=7)
            seen["launches"] = s.resource_offers([(executor_id, 1)])
            seen["stats"] = s.stats().attempts_running
            for call in (s.dispatch, s.snapshot):
                try:
                    call()
                except tl.TaskledgerError as e:
                    seen[call.__name__] = type(e)

    h = H()
    s = tl.Scheduler(h, clock=clock)
    try:
        s.executor_add("e1", "h1", 1)
        assert s.dispatch() == 1
        assert h.names() == ["executor_added"]  # what the handler's calls made waits
        assert seen["dispatch"] is tl.EBUSY and seen["snapshot"] is tl.EBUSY
        assert len(seen["launches"]) == 1 and seen["stats"] == 1
        s.dispatch()
        assert h.names() == ["executor_added", "revive_offers", "task_started"]
        assert h.of("task_started")[0][0].taskset == seen["submit"]
        s.check()
    finally:
        s.close()


def test_handler_with_some_methods_only(clock):
    class OnlyEnds:
        def __init__(self):
            self.ended = []

        def task_ended(self, task, end):
            self.ended.append((task.tid, end.kind, end.result))

    h = OnlyEnds()
    with tl.Scheduler(h, clock=clock) as s:
        s.executor_add("e1", "h1", 2)
        payload = Obj()
        s.submit(2, stage_id=1, payload=payload)
        launches = s.resource_offers([("e1", 2)])
        result = Obj("r")
        s.status_update("e1", launches[0].tid, tl.TaskState.FINISHED, result=result)
        s.executor_lost("e1")
        s.dispatch()
        assert h.ended == [
            (launches[0].tid, tl.EndKind.SUCCESS, result),
            (launches[1].tid, tl.EndKind.EXECUTOR_LOST, None),
        ]
        assert s.stats().events_queued == 0
        s.check()


def test_plain_object_without_any_method(clock):
    with tl.Scheduler(object(), clock=clock) as s:
        s.executor_add("e1", "h1", 1)
        s.submit(1, stage_id=1)
        (launch,) = s.resource_offers([("e1", 1)])
        s.status_update("e1", launch.tid, tl.TaskState.FINISHED)
        s.dispatch()
        assert s.stats().tasksets_released == 1
        s.check()


def test_journal_lines_come_with_dispatch(clock):
    lines = []
    rec = Recorder()
    with tl.Scheduler(rec, clock=clock, journal=lines.append) as s:
        s.executor_add("e1", "h1", 1)
        with pytest.raises(tl.EEXIST):
            s.executor_add("e1", "h1", 1)  # failed calls are journaled too
        assert all(isinstance(line, str) for line in lines)
        before = len(lines)
        assert not any("e1" in line for line in lines)  # not written before dispatch
        s.dispatch()
        added = lines[before:]
        assert len(added) >= 2
        assert all("\n" not in line for line in lines)
        assert sum("e1" in line for line in added) == 2


def test_demand_changed_carries_the_totals(sched, rec):
    sched.executor_add("e1", "h1", 1)
    sched.submit(3, stage_id=1)
    sched.resource_offers([("e1", 1)])
    sched.dispatch()
    (demand,) = rec.of("demand_changed")[-1]
    assert isinstance(demand, tl.Demand)
    stats = sched.stats()
    assert (demand.tasks_pending, demand.attempts_running, demand.tasksets_active) == (
        stats.tasks_pending, stats.attempts_running, stats.tasksets_active)
    assert (demand.tasks_pending, demand.attempts_running) == (2, 1)
    assert demand.unschedulable_tasksets == 0


def test_speculation_events(rec):
    clock = FakeClock()
    with tl.Scheduler(rec, clock=clock, speculation=True, speculation_quantile=0.5,
                      speculation_multiplier=1.5, speculation_min_runtime_ns=0,
                      speculation_interval_ns=10) as s:
        s.executor_add("e1", "h1", 4)
        s.executor_add("e2", "h2", 4)
        ts = s.submit(4, stage_id=1)
        launches = s.resource_offers([("e1", 4)])
        for launch in launches:
            s.status_update("e1", launch.tid)
        clock.advance(100)
        for launch in launches[:3]:
            s.status_update("e1", launch.tid, tl.TaskState.FINISHED)
        s.dispatch()
        rec.clear()
        clock.advance(1_000)  # the last task now runs far past the others' median
        s.tick()
        assert rec.log == []  # deferred: the tick's events wait for dispatch
        s.dispatch()
        assert rec.names() == ["speculative_task_submitted", "revive_offers"]
        ((info, index),) = rec.of("speculative_task_submitted")
        assert (info.id, index) == (ts, launches[3].index)
        assert s.stats().tasks_speculatable == 1
        (copy,) = s.resource_offers([("e2", 4)])
        assert copy.speculative and copy.index == launches[3].index and copy.attempt == 1
        s.dispatch()
        rec.clear()
        s.status_update("e2", copy.tid, tl.TaskState.FINISHED)
        s.dispatch()
        # the copy won: its end, then the original is asked to stop
        assert rec.names() == ["task_ended", "kill_task"]
        assert rec.of("task_ended")[0][0].speculative
        (kill,) = rec.of("kill_task")
        assert (kill[0], kill[1], kill[3]) == (launches[3].tid, "e1", True)
        s.check()


def test_unschedulable_then_schedulable(sched, rec):
    sched.executor_add("e1", "h1", 4)
    ts = sched.submit(1, stage_id=1, allowed_executors=("eX",))
    assert sched.resource_offers([("e1", 4)]) == []
    sched.dispatch()
    ((info, reason),) = rec.of("taskset_unschedulable")
    assert info.id == ts and isinstance(reason, str) and reason
    assert sched.taskset_get(ts).unplaceable
    assert sched.stats().tasksets_unschedulable == 1
    rec.clear()
    sched.executor_add("eX", "h2", 1)
    sched.dispatch()
    assert sorted(rec.names()) == ["executor_added", "taskset_schedulable"]
    assert [i.id for (i,) in rec.of("taskset_schedulable")] == [ts]
    (launch,) = sched.resource_offers([("e1", 4), ("eX", 1)])
    assert launch.executor_id == "eX"
    sched.check()


def test_dispatch_snapshot_and_abandon_from_a_callback_are_ebusy(clock):
    seen = []

    class H:
        def executor_added(self, executor_id, host):
            for call in (s.dispatch_snapshot, s.abandon):
                try:
                    call()
                except tl.TaskledgerError as e:
                    seen.append((call.__name__, type(e)))

    s = tl.Scheduler(H(), clock=clock)
    try:
        s.executor_add("e1", "h1", 1)
        s.dispatch()
        assert seen == [("dispatch_snapshot", tl.EBUSY), ("abandon", tl.EBUSY)]
        assert s.executor_get("e1").state == tl.ExecutorState.ALIVE
        s.check()
    finally:
        s.close()


def test_worker_threads_report_and_one_thread_delivers(rec):
    """Executors report from their own threads; every event reaches the handler on the one
    thread that dispatches, woken by events_ready."""
    wake = threading.Event()
    clock = FakeClock()
    s = tl.Scheduler(rec, clock=clock, events_ready=wake.set)
    try:
        nexec, per = 4, 25
        for i in range(nexec):
            s.executor_add("e%d" % i, "h%d" % i, per)
        ts = s.submit(nexec * per, stage_id=1)
        launches = s.resource_offers([("e%d" % i, per) for i in range(nexec)])
        assert len(launches) == nexec * per
        mine = {}
        for launch in launches:
            mine.setdefault(launch.executor_id, []).append(launch.tid)
        errors = []

        def worker(eid):
            try:
                for tid in mine[eid]:
                    s.status_update(eid, tid)
                    s.status_update(eid, tid, tl.TaskState.FINISHED, result=(eid, tid))
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(eid,)) for eid in sorted(mine)]
        for t in threads:
            t.start()
        delivered = 0
        while any(t.is_alive() for t in threads) or wake.is_set():
            if wake.wait(0.01):
                wake.clear()
                delivered += s.dispatch()
        for t in threads:
            t.join()
        delivered += s.dispatch()
        assert errors == []
        assert delivered > 0
        ends = rec.of("task_ended")
        assert sorted(t.tid for t, _ in ends) == sorted(launch.tid for launch in launches)
        assert all(end.result == (t.executor_id, t.tid) for t, end in ends)
        assert [info.id for info, _ in rec.of("taskset_released")] == [ts]
        assert rec.threads() == {threading.get_ident()}
        s.check()
    finally:
        s.close()


def test_clock_exception_reaches_dispatch(rec):
    clock = FakeClock()
    broken = []

    def flaky_clock():
        if broken:
            raise broken.pop()
        return clock()

    with tl.Scheduler(rec, clock=flaky_clock, heartbeat_timeout_ns=1_000) as s:
        s.executor_add("e1", "h1", 1)
        s.dispatch()
        error = ZeroDivisionError("clock broke")
        broken.append(error)
        clock.advance(5_000)
        s.executor_heartbeat("e1")  # goes on, at the clock's last answer
        with pytest.raises(ZeroDivisionError) as info:
            s.dispatch()
        assert info.value is error
        assert s.dispatch() == 0  # raised once
        s.tick()  # the clock works again: the heartbeat (at the old time) has expired
        s.dispatch()
        assert [r.kind for _, _, r in rec.of("executor_removed")] == [
            tl.LossKind.HEARTBEAT_TIMEOUT]
        s.check()


def test_events_ready_and_journal_exceptions_reach_dispatch(rec, clock):
    wakeups, lines = [], []

    def events_ready():
        wakeups.append(1)
        if len(wakeups) == 1:
            raise KeyError("wake")

    def journal(line):
        lines.append(line)
        if ' heartbeat "e1"' in line:
            raise RuntimeError("journal")

    with tl.Scheduler(rec, clock=clock, events_ready=events_ready, journal=journal) as s:
        s.executor_add("e1", "h1", 1)  # events_ready raises: the call goes on
        assert s.executor_get("e1").state == tl.ExecutorState.ALIVE
        with pytest.raises(KeyError):
            s.dispatch()
        assert rec.names() == ["executor_added"]  # the batch was delivered all the same
        s.executor_heartbeat("e1")
        s.executor_add("e2", "h2", 1)
        with pytest.raises(RuntimeError):
            s.dispatch()
        assert rec.names() == ["executor_added", "executor_added"]
        assert sum(' heartbeat "e1"' in line for line in lines) == 1
        assert s.dispatch() == 0
        s.check()
