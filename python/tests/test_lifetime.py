"""Ownership: payloads, results and executor uds stay alive exactly as long as the C contract
needs them, and the binding drops its one reference exactly once.

- A task set's payload: kept alive while the task set exists, handed back once by
  taskset_released (then the binding holds no reference); close() hands back what is left;
  abandon() hands back nothing, and the binding drops its references.
- A FINISHED update's result: passes to task_ended's end.result on success; dropped when the
  library frees it (RESULT_TOO_LARGE) and when the call fails (it stays the caller's).
- An executor's ud: kept while the executor exists (launches, kills and losses carry it).

Each check uses a weakref (alive / freed after gc.collect()) and, where the test holds the
object itself, sys.getrefcount back at its baseline (neither leaked nor released twice).
"""

import gc
import sys
import weakref

import pytest

import taskledger as tl
from conftest import FakeClock, Obj, Recorder, RestoringRecorder, call_code, collected


class Keeper:
    """A handler that keeps nothing; counts what taskset_released / task_ended hand it."""

    def __init__(self):
        self.released = []  # (task set id, id(payload))
        self.results = []   # (tid, end kind, id(result))

    def taskset_released(self, ts, payload):
        self.released.append((ts.id, id(payload)))

    def task_ended(self, task, end):
        self.results.append((task.tid, end.kind, None if end.result is None else id(end.result)))


def refs(obj):
    gc.collect()
    return sys.getrefcount(obj)


@pytest.fixture
def keeper():
    return Keeper()


@pytest.fixture
def ks(keeper):
    s = tl.Scheduler(keeper, clock=FakeClock())
    yield s
    try:
        s.close()
    except tl.TaskledgerError:
        pass


def submit_weak(s, ntasks=1, stage_id=1, **kw):
    """Submits a task set whose payload only the scheduler references: (id, weakref, id())."""
    payload = Obj("payload-%d" % stage_id)
    ref = weakref.ref(payload)
    ident = id(payload)
    ts = s.submit(ntasks, stage_id=stage_id, payload=payload, **kw)
    del payload
    return ts, ref, ident


# ---------------------------------------------------------------------------------------------
# Payloads


def test_payload_alive_until_released_then_freed_once(ks, keeper):
    ks.executor_add("e1", "h1", 2)
    ts, ref, ident = submit_weak(ks, ntasks=2)
    assert not collected(ref)
    launches = ks.resource_offers([("e1", 2)])
    ks.dispatch()
    assert not collected(ref)
    ks.status_update("e1", launches[0].tid, tl.TaskState.FINISHED)
    ks.dispatch()
    assert not collected(ref)  # one task still runs
    del launches[0]
    ks.status_update("e1", launches[0].tid, tl.TaskState.FINISHED)
    del launches
    assert not collected(ref)  # released in the ledger, not yet handed back
    ks.dispatch()
    assert keeper.released == [(ts, ident)]
    assert collected(ref)
    ks.check()


def test_payload_refcount_back_to_baseline(ks, keeper):
    payload = Obj("held")
    baseline = refs(payload)
    ks.executor_add("e1", "h1", 1)
    ks.submit(1, stage_id=1, payload=payload)
    assert refs(payload) > baseline
    (launch,) = ks.resource_offers([("e1", 1)])
    ks.status_update("e1", launch.tid, tl.TaskState.FINISHED)
    del launch
    ks.dispatch()
    assert len(keeper.released) == 1
    assert refs(payload) == baseline


def test_zombie_payload_alive_while_attempts_run(ks, keeper):
    ks.executor_add("e1", "h1", 1)
    ts, ref, _ = submit_weak(ks, stage_id=3)
    (launch,) = ks.resource_offers([("e1", 1)])
    tid = launch.tid
    del launch
    ks.cancel_stage(3)
    ks.dispatch()
    assert ks.taskset_get(ts).zombie
    assert not collected(ref)
    ks.status_update("e1", tid, tl.TaskState.KILLED)
    ks.dispatch()
    assert [r[0] for r in keeper.released] == [ts]
    assert collected(ref)


def test_payload_seen_alive_by_the_events(keeper):
    seen = []

    class H:
        def task_started(self, task):
            seen.append(("started", task.payload.name))

        def task_ended(self, task, end):
            seen.append(("ended", task.payload.name))

        def taskset_released(self, ts, payload):
            seen.append(("released", payload.name))

    s = tl.Scheduler(H(), clock=FakeClock())
    s.executor_add("e1", "h1", 1)
    ts, ref, _ = submit_weak(s, stage_id=5)
    (launch,) = s.resource_offers([("e1", 1)])
    s.status_update("e1", launch.tid, tl.TaskState.FINISHED)
    del launch
    gc.collect()
    s.dispatch()
    assert seen == [("started", "payload-5"), ("ended", "payload-5"), ("released", "payload-5")]
    assert collected(ref)
    s.close()


def test_failed_submit_keeps_no_reference(ks):
    payload = Obj()
    baseline = refs(payload)
    ks.submit(1, stage_id=1)
    assert call_code(ks.submit, 1, stage_id=1, payload=payload) == -4  # EEXIST
    assert call_code(ks.submit, 0, stage_id=2, payload=payload) == -1
    assert refs(payload) == baseline


def test_close_hands_back_unfinished_payloads(keeper):
    s = tl.Scheduler(keeper, clock=FakeClock())
    s.executor_add("e1", "h1", 1)
    t1, r1, i1 = submit_weak(s, stage_id=1)
    t2, r2, i2 = submit_weak(s, stage_id=2)
    s.resource_offers([("e1", 1)])  # one attempt in flight: forgotten by close
    assert not collected(r1) and not collected(r2)
    s.close()
    assert keeper.released == [(t1, i1), (t2, i2)]
    assert collected(r1) and collected(r2)


def test_close_without_taskset_released_still_frees():
    s = tl.Scheduler(object(), clock=FakeClock())
    _, ref, _ = submit_weak(s)
    assert not collected(ref)
    s.close()
    assert collected(ref)


def test_abandon_drops_payloads_without_handing_back(keeper):
    s = tl.Scheduler(keeper, clock=FakeClock())
    s.executor_add("e1", "h1", 1)
    _, r1, _ = submit_weak(s, stage_id=1)
    _, r2, _ = submit_weak(s, stage_id=2)
    s.resource_offers([("e1", 1)])
    s.cancel_stage(2)  # its taskset_released is queued, and discarded by abandon
    assert not collected(r1) and not collected(r2)
    s.abandon()
    assert keeper.released == []
    assert collected(r1) and collected(r2)


def test_abandon_keeps_the_callers_own_reference():
    payload = Obj()
    baseline = refs(payload)
    s = tl.Scheduler(Keeper(), clock=FakeClock())
    s.submit(1, stage_id=1, payload=payload)
    s.abandon()
    assert refs(payload) == baseline
    assert payload.name == ""  # still a sound object


# ---------------------------------------------------------------------------------------------
# Results


def one_launch(s, executor="e1", **submit):
    s.executor_add(executor, "h-" + executor, 4)
    s.submit(1, stage_id=submit.pop("stage_id", 1), **submit)
    (launch,) = s.resource_offers([(executor, 4)])
    s.dispatch()
    return launch.tid


def test_result_alive_until_task_ended_hands_it_over():
    got = []

    class H:
        def task_ended(self, task, end):
            got.append(end.result)

    s = tl.Scheduler(H(), clock=FakeClock())
    tid = one_launch(s)
    result = Obj("result")
    ref = weakref.ref(result)
    s.status_update("e1", tid, tl.TaskState.FINISHED, result=result, result_size=10)
    del result
    assert not collected(ref)  # the queued task_ended holds it
    s.dispatch()
    assert len(got) == 1 and got[0] is ref()
    got.clear()
    assert collected(ref)
    s.close()


def test_result_refcount_back_to_baseline(ks, keeper):
    tid = one_launch(ks)
    result = Obj()
    baseline = refs(result)
    ks.status_update("e1", tid, tl.TaskState.FINISHED, result=result)
    assert refs(result) > baseline
    ks.dispatch()
    assert keeper.results == [(tid, tl.EndKind.SUCCESS, id(result))]
    assert refs(result) == baseline


def test_result_freed_without_a_task_ended_method():
    s = tl.Scheduler(object(), clock=FakeClock())
    tid = one_launch(s)
    result = Obj()
    ref = weakref.ref(result)
    s.status_update("e1", tid, tl.TaskState.FINISHED, result=result)
    del result
    s.dispatch()
    assert collected(ref)
    s.close()


def test_result_too_large_is_freed(keeper):
    ended = []

    class H:
        def task_ended(self, task, end):
            ended.append((end.kind, end.result, end.result_size))

        def taskset_failed(self, ts, reason):
            ended.append(("failed", reason))

    s = tl.Scheduler(H(), clock=FakeClock(), max_result_bytes=100)
    s.executor_add("e1", "h1", 2)
    s.submit(2, stage_id=1)
    launches = s.resource_offers([("e1", 2)])
    small, big = Obj("small"), Obj("big")
    small_ref, big_ref = weakref.ref(small), weakref.ref(big)
    s.status_update("e1", launches[0].tid, tl.TaskState.FINISHED, result=small, result_size=60)
    s.status_update("e1", launches[1].tid, tl.TaskState.FINISHED, result=big, result_size=60)
    del small, big
    s.dispatch()
    assert ended[0] == (tl.EndKind.SUCCESS, small_ref(), 60)
    too_large = [e for e in ended if e[0] == tl.EndKind.RESULT_TOO_LARGE]
    assert len(too_large) == 1 and too_large[0][1] is None
    assert len([e for e in ended if e[0] == "failed"]) == 1
    assert len(ended) == 3
    assert collected(big_ref)
    ended.clear()
    assert collected(small_ref)
    s.check()
    s.close()


@pytest.mark.parametrize("case", ["stale", "owner", "gone", "einval"])
def test_result_of_a_failed_update_stays_the_callers(ks, case):
    tid = one_launch(ks)
    ks.executor_add("e2", "h2", 1)
    result = Obj()
    ref = weakref.ref(result)
    baseline = refs(result)
    if case == "stale":
        code = call_code(ks.status_update, "e1", tid + 100, tl.TaskState.FINISHED, result=result)
        assert code == -5
    elif case == "owner":
        code = call_code(ks.status_update, "e2", tid, tl.TaskState.FINISHED, result=result)
        assert code == -6
    elif case == "gone":
        ks.executor_lost("e2")
        code = call_code(ks.status_update, "e2", tid, tl.TaskState.FINISHED, result=result)
        assert code == -7
    else:
        code = call_code(ks.status_update, "e1", tid, tl.TaskState.RUNNING, result=result)
        assert code == -1
    assert refs(result) == baseline
    del result
    assert collected(ref)
    ks.dispatch()
    ks.check()


def test_batched_results_taken_or_dropped_per_update(ks, keeper):
    ks.executor_add("e1", "h1", 2)
    ks.submit(2, stage_id=1)
    t1, t2 = (launch.tid for launch in ks.resource_offers([("e1", 2)]))
    ks.dispatch()
    results = [Obj("a"), Obj("b"), Obj("c")]
    weak = [weakref.ref(r) for r in results]
    ids = [id(r) for r in results]
    codes = ks.status_updates("e1", [
        (t1, tl.Update(tl.TaskState.FINISHED, result=results[0])),
        (t1, tl.Update(tl.TaskState.FINISHED, result=results[1])),  # stale now
        (t2, tl.Update(tl.TaskState.FINISHED, result=results[2])),
    ])
    assert codes == [0, -5, 0]
    del results
    assert collected(weak[1])  # the refused one: dropped by the binding at once
    assert not collected(weak[0]) and not collected(weak[2])
    ks.dispatch()
    assert keeper.results == [(t1, tl.EndKind.SUCCESS, ids[0]), (t2, tl.EndKind.SUCCESS, ids[2])]
    assert collected(weak[0]) and collected(weak[2])


def test_abandon_frees_undelivered_results():
    s = tl.Scheduler(Keeper(), clock=FakeClock())
    tid = one_launch(s)
    result = Obj()
    ref = weakref.ref(result)
    s.status_update("e1", tid, tl.TaskState.FINISHED, result=result)
    del result
    assert not collected(ref)
    s.abandon()
    assert collected(ref)


def test_close_delivers_queued_results(keeper):
    s = tl.Scheduler(keeper, clock=FakeClock())
    tid = one_launch(s)
    result = Obj()
    ident = id(result)
    ref = weakref.ref(result)
    s.status_update("e1", tid, tl.TaskState.FINISHED, result=result)
    del result
    s.close()
    assert keeper.results == [(tid, tl.EndKind.SUCCESS, ident)]
    assert collected(ref)


# ---------------------------------------------------------------------------------------------
# Executor uds


def add_weak_ud(s, executor_id, cores=1):
    ud = Obj(executor_id)
    ref = weakref.ref(ud)
    s.executor_add(executor_id, "h-" + executor_id, cores, ud=ud)
    del ud
    return ref


def test_ud_alive_while_the_executor_exists():
    rec = Recorder()
    s = tl.Scheduler(rec, clock=FakeClock())
    ref = add_weak_ud(s, "e1")
    s.dispatch()
    assert not collected(ref)
    s.submit(1, stage_id=1)
    (launch,) = s.resource_offers([("e1", 1)])
    assert launch.executor_ud is ref()
    del launch
    s.executor_lost("e1", tl.LossKind.PENDING)
    s.dispatch()
    rec.clear()
    assert not collected(ref)  # pending loss: executor_removed will still carry it
    s.executor_lost("e1", tl.LossKind.EXITED)
    s.dispatch()
    ((eid, ud, _),) = rec.of("executor_removed")
    assert ud is ref()
    del ud
    rec.clear()
    s.check()
    assert collected(ref)  # the last event that names it was delivered
    s.close()


def test_ud_freed_by_close():
    s = tl.Scheduler(Recorder(), clock=FakeClock())
    ref = add_weak_ud(s, "e1")
    s.dispatch()
    s.close()
    assert collected(ref)


def test_ud_freed_by_abandon():
    s = tl.Scheduler(Keeper(), clock=FakeClock())
    ref = add_weak_ud(s, "e1")
    s.abandon()
    assert collected(ref)


def test_ud_of_a_failed_add_is_not_kept(ks):
    ks.executor_add("e1", "h1", 1)
    ud = Obj()
    baseline = refs(ud)
    assert call_code(ks.executor_add, "e1", "h1", 1, ud=ud) == -4
    assert call_code(ks.executor_add, "e2", "h2", 0, ud=ud) == -1
    assert refs(ud) == baseline


def test_restored_payloads_and_uds_are_kept():
    clock = FakeClock()
    s = tl.Scheduler(Keeper(), clock=clock)
    s.executor_add("e1", "h1", 1)
    ts = s.submit(1, stage_id=1)
    s.dispatch()
    image = s.snapshot()
    s.close()
    payload, ud = Obj("p"), Obj("u")
    pref, uref = weakref.ref(payload), weakref.ref(ud)
    rec = RestoringRecorder(payloads={ts: payload}, uds={"e1": ud})
    s2 = tl.Scheduler.restore(image, rec, clock=clock)
    del payload, ud
    rec.payloads.clear()
    rec.uds.clear()
    assert not collected(pref) and not collected(uref)
    assert s2.executor_get("e1").ud is uref()
    s2.executor_reconcile("e1", [])
    (launch,) = s2.resource_offers([("e1", 1)])
    assert launch.payload is pref()
    s2.status_update("e1", launch.tid, tl.TaskState.FINISHED)
    del launch
    s2.dispatch()
    assert [p is not None for _, p in rec.of("taskset_released")] == [True]
    rec.clear()
    assert collected(pref)
    s2.close()
    assert collected(uref)


@pytest.mark.xfail(strict=True, reason="binding bug: Scheduler keeps uds by executor id "
                   "(self._uds), looked up when an event is delivered, so an id forgotten by the "
                   "library (max_tombstones, tombstone_ttl_ns) and registered again before "
                   "dispatch() gives the new ud to the old executor's events, and its "
                   "executor_removed drops the new one")
def test_ud_of_a_reused_executor_id():
    rec = Recorder()
    with tl.Scheduler(rec, clock=FakeClock(), max_tombstones=0) as s:
        old, new = Obj("old"), Obj("new")
        s.executor_add("e1", "h1", 1, ud=old)
        s.executor_lost("e1")
        s.executor_add("e1", "h1", 1, ud=new)  # no tombstone kept: the id is free at once
        s.dispatch()
        assert [args[1] for args in rec.of("executor_lost")] == [old]
        assert [args[1] for args in rec.of("executor_removed")] == [old]
        assert s.executor_get("e1").ud is new
        s.submit(1, stage_id=1)
        (launch,) = s.resource_offers([("e1", 1)])
        assert launch.executor_ud is new


def test_results_of_a_batch_that_raises_before_the_call_are_dropped(ks):
    ks.executor_add("e1", "h1", 2)
    ks.submit(2, stage_id=1)
    t1, t2 = (launch.tid for launch in ks.resource_offers([("e1", 2)]))
    result = Obj()
    ref = weakref.ref(result)
    with pytest.raises(TypeError):
        ks.status_updates("e1", [
            (t1, tl.Update(tl.TaskState.FINISHED, result=result)),
            (t2, tl.Update(tl.TaskState.FAILED, message=5)),  # not a str
        ])
    del result
    assert ks.executor_get("e1").running == 2  # nothing applied
    assert collected(ref)


def test_objects_given_to_a_closed_scheduler_are_not_kept():
    s = tl.Scheduler(Keeper(), clock=FakeClock())
    s.close()
    result, payload = Obj("r"), Obj("p")
    rref, pref = weakref.ref(result), weakref.ref(payload)
    assert call_code(s.status_update, "e1", 1, tl.TaskState.FINISHED, result=result) == -1
    assert call_code(s.submit, 1, stage_id=1, payload=payload) == -1
    del result, payload
    assert collected(rref)
    assert collected(pref)


@pytest.mark.parametrize("cycle", [False, True])
def test_scheduler_collected_while_open_frees_everything(cycle):
    """A Scheduler dropped without close() (even in a cycle with its handler) is freed by the
    garbage collector: nothing is delivered, and what it held is let go."""
    class H(Keeper):
        pass

    h = H()
    s = tl.Scheduler(h, clock=FakeClock())
    if cycle:
        h.scheduler = s
    ud = Obj("ud")
    s.executor_add("e1", "h1", 1, ud=ud)
    ts, pref, _ = submit_weak(s)
    (launch,) = s.resource_offers([("e1", 1)])
    result = Obj("r")
    rref, uref = weakref.ref(result), weakref.ref(ud)
    s.status_update("e1", launch.tid, tl.TaskState.FINISHED, result=result)
    del launch, result, ud
    sref = weakref.ref(s)
    released, results = h.released, h.results
    del s, h  # with cycle, only the garbage collector can free them
    assert collected(sref)
    assert collected(pref) and collected(rref) and collected(uref)
    assert released == [] and results == []
