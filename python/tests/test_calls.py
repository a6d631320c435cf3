"""Every Scheduler call: its success path and each TL_E* error it can raise.

The C contract (include/taskledger.h): arguments are checked before anything changes, so an
error leaves the scheduler as it was (apart from the counters a comment names: stale_updates,
rejected_updates) and makes no event. refused() checks that for every error below.
"""

import pytest

import taskledger as tl
from conftest import (
    FakeClock,
    Obj,
    Recorder,
    RestoringRecorder,
    launch_all,
    record_fields,
    stats_dict,
)

CODES = {
    "EINVAL": -1,
    "ENOMEM": -2,
    "ENOENT": -3,
    "EEXIST": -4,
    "ESTALE": -5,
    "EOWNER": -6,
    "EGONE": -7,
    "ESTATE": -8,
    "EBUSY": -9,
    "ECORRUPT": -10,
    "EIO": -11,
    "ESNAPSHOT": -12,
    "EVERSION": -13,
    "ECONFIG": -14,
    "ERESOURCE": -15,
}


def refused(s, exc, fn, *args, counters=(), **kwargs):
    """fn(*args, **kwargs) raises exc and changes nothing but the named counters."""
    s.dispatch()
    before = stats_dict(s, ignore=counters)
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert type(info.value) is exc
    assert info.value.code == CODES[exc.__name__]
    assert info.value.name == exc.__name__
    after = stats_dict(s, ignore=counters)
    assert after == before
    assert after["events_queued"] == 0  # no event for a refused call
    s.check()
    return info.value


def one_running(s, rec, ntasks=1, cores=4, executor="e1", **submit):
    """An executor and a task set with its tasks launched there: (task set id, launches)."""
    s.executor_add(executor, "h-" + executor, cores, ud=Obj(executor))
    ts = s.submit(ntasks, stage_id=submit.pop("stage_id", 1), **submit)
    launches = launch_all(s, [(executor, cores)])
    rec.clear()
    return ts, launches


# ---------------------------------------------------------------------------------------------
# Errors, enums, constants


def test_error_classes_one_per_code():
    for name, code in CODES.items():
        cls = getattr(tl, name)
        assert issubclass(cls, tl.TaskledgerError)
        assert issubclass(cls, Exception)
        assert tl.error_class(code) is cls
    assert issubclass(tl.EINVAL, ValueError)
    assert issubclass(tl.ENOMEM, MemoryError)
    assert issubclass(tl.ENOENT, LookupError)
    assert issubclass(tl.EIO, OSError)
    assert not issubclass(tl.ENOENT, ValueError)
    assert len({getattr(tl, n) for n in CODES}) == len(CODES)


def test_error_instance_code_name_and_text(sched):
    with pytest.raises(tl.TaskledgerError) as info:
        sched.executor_heartbeat("nobody")
    e = info.value
    assert isinstance(e, tl.ENOENT)
    assert e.code == -3
    assert e.name == "ENOENT"
    assert "No such executor, task set or stage is known." in str(e)


def test_einval_is_a_value_error(sched):
    with pytest.raises(ValueError):
        sched.executor_add("e1", "h1", 0)


def test_enum_values():
    assert [int(x) for x in tl.Locality] == [0, 1, 2, 3, 4]
    assert tl.Locality.PROCESS_LOCAL == 0 and tl.Locality.RACK_LOCAL == 3
    assert tl.Locality.ANY == 4
    assert tl.EndKind.SUCCESS == 0 and tl.EndKind.FETCH_FAILED == 2
    assert tl.EndKind.EXECUTOR_LOST == 6 and tl.EndKind.RESULT_TOO_LARGE == 8
    assert len(tl.EndKind) == 9
    assert [int(x) for x in tl.TaskState] == [0, 1, 2, 3]
    assert tl.TaskState.FINISHED == 1 and tl.TaskState.KILLED == 3
    assert tl.LossKind.PENDING == 0 and tl.LossKind.EXITED == 1
    assert tl.LossKind.HEARTBEAT_TIMEOUT == 3 and tl.LossKind.RECOVERY_TIMEOUT == 7
    assert len(tl.LossKind) == 8
    assert tl.ExecutorState.ALIVE == 0 and tl.ExecutorState.PENDING_LOSS == 2
    assert tl.ExecutorState.REMOVED == 3 and tl.ExecutorState.RECOVERING == 4
    assert tl.SchedMode.FIFO == 0 and tl.SchedMode.FAIR == 1
    assert tl.Spread.NONE == 0 and tl.Spread.HOST == 1 and tl.Spread.EXECUTOR == 2


def test_constants():
    assert tl.TICK_NEVER == 2**64 - 1
    assert tl.WAIT_INHERIT == 2**64 - 1
    assert tl.ID_MAX == 256 and tl.HOST_MAX == 256
    assert tl.TAG_MAX == 128 and tl.TAGS_MAX == 16
    assert tl.PLACE_MAX == 64
    assert tl.RESOURCES_MAX == 16 and tl.SHARE_MAX == 32
    assert tl.SHARE_UNIT == 144403552893600
    assert tl.POOL_DEPTH_MAX == 8


def test_records_are_values():
    a, b = tl.Offer("e1", 2), tl.Offer(executor_id="e1", cores=2)
    assert a == b and hash(a) == hash(b) and a != tl.Offer("e1", 3)
    assert (a.executor_id, a.cores) == ("e1", 2)
    assert tl.Location("h1") == tl.Location("h1", None)
    r = tl.ResourceRequest("gpu")
    assert (r.name, r.amount, r.share) == ("gpu", 1, 0)
    u = tl.Update()
    assert (u.state, u.failure, u.message, u.result, u.result_size, u.no_retry) == (
        tl.TaskState.RUNNING, tl.EndKind.EXCEPTION, None, None, 0, False)
    assert tl.TasksetInfo(1, 2, 3, 4) == tl.TasksetInfo(1, 2, 3, 4)
    with pytest.raises(TypeError):
        tl.Offer("e1", 2, nonsense=1)


def test_records_are_frozen_and_checked():
    o = tl.Offer("e1", 2)
    with pytest.raises(AttributeError):  # dataclasses.FrozenInstanceError is one
        o.cores = 5
    assert o == tl.Offer("e1", 2)
    with pytest.raises(AttributeError):
        del o.cores
    with pytest.raises(TypeError):
        tl.Offer("e1", 2, 3)


# ---------------------------------------------------------------------------------------------
# Construction and configuration


def test_config_kwargs_accepted(clock):
    with tl.Scheduler(
        Recorder(),
        clock=clock,
        mode=tl.SchedMode.FAIR,
        cpus_per_task=2,
        max_task_failures=7,
        heartbeat_timeout_ns=5_000,
        pending_loss_timeout_ns=0,
        max_result_bytes=1 << 20,
        offer_shuffle=True,
        offer_shuffle_seed=42,
        pool_auto_create=True,
    ) as s:
        s.executor_add("e1", "h1", 4)
        ts = s.submit(1, stage_id=1, pool="auto")
        st = s.taskset_get(ts)
        assert st.cpus_per_task == 2
        assert st.max_task_failures == 7
        assert s.pool_get("auto").tasksets == 1  # FAIR mode and pool_auto_create took effect
        (launch,) = s.resource_offers([("e1", 4)])
        assert launch.cpus == 2
        s.check()


@pytest.mark.parametrize(
    "config",
    [
        {"cpus_per_task": 0},
        {"max_task_failures": 0},
        {"max_task_failures": 65536},
        {"offer_shuffle_seed": 3},  # needs offer_shuffle
        {"speculation_task_duration_threshold_ns": 10},  # needs speculation
        {"exclude_on_failure": True, "exclude_max_task_attempts_per_node": 4},  # >= max failures
    ],
)
def test_config_out_of_range_is_einval(config):
    with pytest.raises(tl.EINVAL):
        tl.Scheduler(Recorder(), **config)


def test_config_unknown_name_is_type_error():
    with pytest.raises(TypeError):
        tl.Scheduler(Recorder(), no_such_field=1)
    with pytest.raises(TypeError):
        tl.Scheduler(Recorder(), delivery=0)  # always deferred: not a config kwarg


def test_handler_none_and_default_clock():
    s = tl.Scheduler()
    s.executor_add("e1", "h1", 2)
    s.submit(2, stage_id=1)
    assert len(s.resource_offers([("e1", 2)])) == 2
    s.dispatch()
    assert s.stats().events_queued == 0
    assert s.stats().attempts_running == 2
    s.check()
    s.close()


def test_epoch_close_and_context_manager(clock):
    s = tl.Scheduler(Recorder(), clock=clock)
    assert s.epoch == 1
    s.close()
    with pytest.raises(tl.EINVAL):
        s.executor_add("e1", "h1", 1)
    with pytest.raises(tl.EINVAL):
        s.stats()
    with pytest.raises(tl.EINVAL):
        s.dispatch()

    with tl.Scheduler(Recorder(), clock=clock) as s2:
        s2.executor_add("e1", "h1", 1)
    with pytest.raises(tl.EINVAL):
        s2.executor_get("e1")


def test_close_from_a_callback_is_ebusy(clock):
    seen = []

    class H:
        def executor_added(self, executor_id, host):
            try:
                s.close()
            except tl.TaskledgerError as e:
                seen.append(type(e))

    s = tl.Scheduler(H(), clock=clock)
    s.executor_add("e1", "h1", 1)
    s.dispatch()
    assert seen == [tl.EBUSY]
    s.executor_get("e1")  # still open
    s.close()


def test_argument_conversions(sched):
    """A wrong type is a TypeError; an integer outside its C type, or a string holding a NUL,
    is EINVAL; none reaches the ledger."""
    sched.executor_add("e1", "h1", 1)
    sched.submit(1, stage_id=1)
    refused(sched, tl.EINVAL, sched.executor_add, "e\x00x", "h2", 1)
    refused(sched, tl.EINVAL, sched.executor_add, "e2", "h2", -1)
    refused(sched, tl.EINVAL, sched.executor_add, "e2", "h2", 2**32)
    refused(sched, tl.EINVAL, sched.submit, 2**32, stage_id=2)
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=-1)
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2, tags=("a\x00b",))
    refused(sched, tl.EINVAL, sched.status_update, "e1", -1)
    refused(sched, tl.EINVAL, sched.kill_task, 2**64)
    refused(sched, tl.EINVAL, sched.executor_heartbeat, "e1\x00")
    for call in (lambda: sched.executor_add(5, "h2", 1),
                 lambda: sched.executor_add("e2", b"h2", 1),
                 lambda: sched.submit(1, stage_id=2, tags=(5,)),
                 lambda: sched.resource_offers([(None, 1)])):
        before = stats_dict(sched)
        with pytest.raises(TypeError):
            call()
        assert stats_dict(sched) == before
    with pytest.raises(tl.EINVAL):
        tl.Scheduler(Recorder(), cpus_per_task=-1)
    with pytest.raises(tl.EINVAL):
        tl.Scheduler(Recorder(), heartbeat_timeout_ns=2**64)
    sched.check()


# ---------------------------------------------------------------------------------------------
# Executors


def test_executor_add_get_list(sched, rec):
    ud = Obj("u1")
    sched.executor_add("e1", "h1", 4, rack="r1", ud=ud)
    sched.executor_add("e2", "h2", 2)
    sched.dispatch()
    assert rec.of("executor_added") == [("e1", "h1"), ("e2", "h2")]
    st = sched.executor_get("e1")
    assert st.state == tl.ExecutorState.ALIVE
    assert isinstance(st.state, tl.ExecutorState)
    assert (st.cores, st.free_cores, st.running, st.frozen) == (4, 4, 0, 0)
    assert st.host == "h1" and st.ud is ud and st.profile == 0 and st.nresources == 0
    infos = sched.executors()
    assert [i.id for i in infos] == ["e1", "e2"]
    assert infos[0].ud is ud and infos[1].ud is None
    assert infos[1].host == "h2" and infos[1].cores == 2
    stats = sched.stats()
    assert stats.executors_alive == 2 and stats.hosts == 2 and stats.racks == 1
    sched.check()


def test_executor_add_resources_and_profile(sched):
    sched.executor_add("g1", "h1", 4, profile=3, resources={"gpu": ["0", "1"], "fpga": ["a"]})
    st = sched.executor_get("g1")
    assert st.profile == 3 and st.nresources == 2
    ts = sched.submit(
        2, stage_id=1, profile=3, resources=[tl.ResourceRequest("gpu", 1), ("fpga", 1, 2)]
    )
    launches = sched.resource_offers([("g1", 4)])
    assert [launch.taskset for launch in launches] == [ts, ts]
    sched.check()


def test_executor_add_errors(sched):
    sched.executor_add("e1", "h1", 4, rack="r1")
    refused(sched, tl.EEXIST, sched.executor_add, "e1", "h9", 1)
    refused(sched, tl.EINVAL, sched.executor_add, "e2", "h2", 0)
    refused(sched, tl.EINVAL, sched.executor_add, "", "h2", 1)
    refused(sched, tl.EINVAL, sched.executor_add, "x" * tl.ID_MAX, "h2", 1)
    refused(sched, tl.EINVAL, sched.executor_add, "e2", "", 1)
    refused(sched, tl.EINVAL, sched.executor_add, "e2", "h1", 1, rack="r2")  # h1 is in r1
    refused(sched, tl.ERESOURCE, sched.executor_add, "e2", "h2", 1, resources={"g pu": ["0"]})
    refused(sched, tl.ERESOURCE, sched.executor_add, "e2", "h2", 1, resources={"gpu": []})
    refused(sched, tl.ERESOURCE, sched.executor_add, "e2", "h2", 1, resources={"gpu": ["0", "0"]})
    # ERESOURCE comes before EEXIST ("the first that applies")
    refused(sched, tl.ERESOURCE, sched.executor_add, "e1", "h1", 1, resources={"gpu": []})
    with pytest.raises(TypeError):
        sched.executor_add("e2", "h2", "four")
    sched.executor_add("x" * (tl.ID_MAX - 1), "h2", 1)  # the longest id is fine
    sched.check()


def test_readding_a_removed_id_is_egone(sched):
    sched.executor_add("e1", "h1", 1)
    sched.executor_lost("e1")
    sched.dispatch()
    refused(sched, tl.EGONE, sched.executor_add, "e1", "h1", 1)
    refused(sched, tl.EGONE, sched.executor_get, "e1")
    refused(sched, tl.EGONE, sched.executor_heartbeat, "e1")
    refused(sched, tl.EGONE, sched.executor_decommission, "e1")
    refused(sched, tl.EGONE, sched.executor_lost, "e1")
    refused(sched, tl.EGONE, sched.executor_frozen, "e1")
    refused(sched, tl.EGONE, sched.status_update, "e1", 1)
    refused(sched, tl.EGONE, sched.status_updates, "e1", [(1, tl.TaskState.RUNNING)])
    assert sched.stats().tombstones == 1
    assert sched.executors() == []


def test_unknown_executor_is_enoent(sched):
    for call in (
        sched.executor_get,
        sched.executor_heartbeat,
        sched.executor_decommission,
        sched.executor_lost,
        sched.executor_frozen,
    ):
        refused(sched, tl.ENOENT, call, "ghost")
    refused(sched, tl.ENOENT, sched.executor_reconcile, "ghost", [])
    refused(sched, tl.ENOENT, sched.status_update, "ghost", 1)
    refused(sched, tl.ENOENT, sched.status_updates, "ghost", [(1, tl.TaskState.RUNNING)])
    refused(sched, tl.EINVAL, sched.executor_get, "")


def test_heartbeat(sched):
    sched.executor_add("e1", "h1", 1)
    sched.executor_heartbeat("e1")
    sched.check()


def test_heartbeat_timeout_via_tick(rec):
    clock = FakeClock()
    with tl.Scheduler(rec, clock=clock, heartbeat_timeout_ns=1_000) as s:
        assert s.tick() == tl.TICK_NEVER  # nothing to wait for yet
        s.executor_add("e1", "h1", 1)
        s.executor_add("e2", "h2", 1)
        s.dispatch()
        assert s.tick() == 1_000
        clock.advance(600)
        s.executor_heartbeat("e2")  # e2 now expires at 1_600
        assert s.tick() == 400
        clock.advance(400)
        rec.clear()
        next_deadline = s.tick()
        s.dispatch()
        s.check()
        lost = rec.of("executor_lost")
        assert [(e, r.kind, r.caused_by_app) for e, _, r in lost] == [
            ("e1", tl.LossKind.HEARTBEAT_TIMEOUT, True)
        ]
        assert [(e, r.kind) for e, _, r in rec.of("executor_removed")] == [
            ("e1", tl.LossKind.HEARTBEAT_TIMEOUT)
        ]
        assert rec.names().index("executor_lost") < rec.names().index("executor_removed")
        assert 0 < next_deadline <= 600
        assert s.executor_get("e2").state == tl.ExecutorState.ALIVE
        with pytest.raises(tl.EGONE):
            s.executor_get("e1")


def test_decommission(sched, rec):
    ts, (launch,) = one_running(sched, rec, ntasks=1)
    sched.executor_decommission("e1", "draining")
    assert sched.executor_get("e1").state == tl.ExecutorState.DECOMMISSIONING
    sched.executor_decommission("e1")  # again: TL_OK, nothing changes
    assert sched.stats().executors_decommissioning == 1
    sched.submit(1, stage_id=2)
    rejected = sched.stats().rejected_offers
    assert sched.resource_offers([("e1", 4)]) == []
    assert sched.stats().rejected_offers == rejected + 1
    # its attempt runs on and ends as usual
    sched.status_update("e1", launch.tid, tl.TaskState.FINISHED)
    sched.dispatch()
    assert [end.kind for _, end in rec.of("task_ended")] == [tl.EndKind.SUCCESS]
    assert sched.stats().executors_decommissioning == 1
    sched.check()


def test_decommission_message_in_explain(sched, rec):
    ts, (launch,) = one_running(sched, rec, ntasks=1)
    sched.executor_decommission("e1", "going away soon")
    text = sched.explain(ts)
    assert "e1" in text
    assert "going away soon" in text


# ---------------------------------------------------------------------------------------------
# Losses


def test_one_phase_loss(sched, rec):
    ud = Obj("ud")
    sched.executor_add("e1", "h1", 2, ud=ud)
    sched.submit(2, stage_id=1)
    launches = launch_all(sched, [("e1", 2)])
    rec.clear()
    sched.executor_lost("e1", tl.LossKind.EXITED, caused_by_app=True, exit_code=3, message="oom")
    sched.dispatch()
    sched.check()
    ((eid, eud, reason),) = rec.of("executor_lost")
    assert (eid, eud) == ("e1", ud)
    assert isinstance(reason, tl.LossReason)
    assert (reason.kind, reason.caused_by_app, reason.exit_code, reason.message) == (
        tl.LossKind.EXITED, True, 3, "oom")
    ends = rec.of("task_ended")
    assert [t.tid for t, _ in ends] == [launch.tid for launch in launches]
    assert all(e.kind == tl.EndKind.EXECUTOR_LOST for _, e in ends)
    assert all(e.message == "oom" for _, e in ends)
    ((rid, rud, rreason),) = rec.of("executor_removed")
    assert (rid, rud, rreason.kind, rreason.exit_code) == ("e1", ud, tl.LossKind.EXITED, 3)
    stats = sched.stats()
    assert stats.attempts_running == 0 and stats.tasks_pending == 2
    assert stats.executors_lost == 1 and stats.tombstones == 1


def test_two_phase_loss(sched, rec):
    ts, launches = one_running(sched, rec, ntasks=2)
    tids = [launch.tid for launch in launches]
    sched.executor_lost("e1", tl.LossKind.PENDING)
    sched.dispatch()
    sched.check()
    assert [r.kind for _, _, r in rec.of("executor_lost")] == [tl.LossKind.PENDING]
    assert rec.of("task_ended") == [] and rec.of("executor_removed") == []
    st = sched.executor_get("e1")
    assert st.state == tl.ExecutorState.PENDING_LOSS
    assert (st.running, st.frozen) == (0, 2)
    assert sched.executor_frozen("e1") == tids
    stats = sched.stats()
    assert (stats.attempts_running, stats.attempts_frozen, stats.executors_pending_loss) == (0, 2, 1)
    assert sched.taskset_get(ts).frozen == 2
    # frozen attempts: their updates are stale, a heartbeat or decommission does not undo it
    refused(sched, tl.ESTALE, sched.status_update, "e1", tids[0], tl.TaskState.FINISHED,
            counters=("stale_updates",))
    refused(sched, tl.ESTATE, sched.executor_heartbeat, "e1")
    refused(sched, tl.ESTATE, sched.executor_decommission, "e1")
    refused(sched, tl.ESTALE, sched.kill_task, tids[0])
    sched.kill_stage(1)  # frozen attempts are left to the loss: no kill_task
    assert [i.state for i in sched.executors()] == [tl.ExecutorState.PENDING_LOSS]
    assert sched.dispatch() == 0
    # PENDING again: TL_OK, nothing changes
    before = stats_dict(sched)
    sched.executor_lost("e1", tl.LossKind.PENDING)
    assert sched.dispatch() == 0
    assert stats_dict(sched) == before
    # the second phase
    rec.clear()
    sched.executor_lost("e1", tl.LossKind.PROCESS_LOST, message="gone")
    sched.dispatch()
    sched.check()
    names = rec.names()
    assert "executor_lost" not in names  # reported once, at the first phase
    assert names == ["task_ended", "task_ended", "executor_removed", "revive_offers"]
    assert [t.tid for t, _ in rec.of("task_ended")] == tids
    assert all(e.kind == tl.EndKind.EXECUTOR_LOST for _, e in rec.of("task_ended"))
    assert [r.kind for _, _, r in rec.of("executor_removed")] == [tl.LossKind.PROCESS_LOST]
    stats = sched.stats()
    assert (stats.attempts_frozen, stats.executors_pending_loss, stats.tombstones) == (0, 0, 1)


def test_pending_loss_timeout_via_tick(rec):
    clock = FakeClock()
    with tl.Scheduler(rec, clock=clock, pending_loss_timeout_ns=5_000,
                      heartbeat_timeout_ns=0) as s:
        s.executor_add("e1", "h1", 1)
        s.executor_lost("e1", tl.LossKind.PENDING)
        s.dispatch()
        assert s.tick() == 5_000
        clock.advance(4_999)
        assert s.tick() == 1
        assert s.executor_get("e1").state == tl.ExecutorState.PENDING_LOSS
        rec.clear()
        clock.advance(1)
        assert s.tick() > 0  # nothing due again at once
        s.dispatch()
        s.check()
        ((eid, _, reason),) = rec.of("executor_removed")
        assert eid == "e1"
        assert reason.kind == tl.LossKind.PENDING_TIMEOUT and reason.caused_by_app
        assert rec.of("executor_lost") == []
        assert s.stats().pending_loss_timeouts == 1


def test_executor_lost_bad_kind(sched):
    sched.executor_add("e1", "h1", 1)
    with pytest.raises(ValueError):  # tl.EINVAL from C, or the enum's ValueError
        sched.executor_lost("e1", 99)
    assert sched.executor_get("e1").state == tl.ExecutorState.ALIVE
    sched.check()


def test_executor_frozen_errors(sched):
    sched.executor_add("e1", "h1", 1)
    assert sched.executor_frozen("e1") == []
    refused(sched, tl.ENOENT, sched.executor_frozen, "nope")
    refused(sched, tl.EINVAL, sched.executor_frozen, "")


# ---------------------------------------------------------------------------------------------
# Task sets and pools


def test_submit_and_inspect(sched, rec):
    payload = Obj("p")
    ts = sched.submit(3, stage_id=7, stage_attempt=1, priority=2, cpus_per_task=2,
                      payload=payload, tags=("job-1", "grp"), max_task_failures=9)
    assert isinstance(ts, int) and ts == 1
    sched.dispatch()
    assert rec.names() == ["revive_offers"]
    st = sched.taskset_get(ts)
    assert st.pending == 3 and st.running == 0 and st.succeeded == 0
    assert not st.zombie and not st.failed
    assert st.cpus_per_task == 2 and st.max_task_failures == 9 and st.ntags == 2
    assert sched.taskset_tags(ts) == ["job-1", "grp"]
    assert [x.ntags for x in sched.tasksets()] == [2]
    ts2 = sched.submit(1, stage_id=8)
    assert ts2 == ts + 1
    assert [x.pending for x in sched.tasksets()] == [3, 1]
    stats = sched.stats()
    assert stats.tasksets_active == 2 and stats.tasks_pending == 4
    sched.check()


def test_taskset_status_info_outlives_the_call(sched):
    ts = sched.submit(3, stage_id=7, stage_attempt=1)
    ts2 = sched.submit(1, stage_id=8)
    st = sched.taskset_get(ts)
    listed = sched.tasksets()
    churn = [sched.stats() for _ in range(50)]  # reuse the freed buffers
    del churn
    assert isinstance(st.info, tl.TasksetInfo)
    assert (st.info.id, st.info.stage_id, st.info.stage_attempt, st.info.ntasks) == (ts, 7, 1, 3)
    assert [x.info for x in listed] == [tl.TasksetInfo(ts, 7, 1, 3), tl.TasksetInfo(ts2, 8, 0, 1)]


def test_submit_prefs_locality(sched):
    sched.executor_add("e1", "h1", 1)
    sched.executor_add("e2", "h2", 1)
    ts = sched.submit(2, stage_id=1,
                      prefs=[[tl.Location("h2", "e2")], [("h1", None)]])
    launches = sched.resource_offers([("e1", 1), ("e2", 1)])
    assert {launch.taskset for launch in launches} == {ts}
    by_index = {launch.index: launch for launch in launches}
    assert by_index[0].executor_id == "e2"
    assert by_index[0].locality == tl.Locality.PROCESS_LOCAL
    assert by_index[1].executor_id == "e1"
    assert by_index[1].locality == tl.Locality.NODE_LOCAL
    assert sched.stats().places >= 2
    sched.check()


def test_submit_errors(sched):
    sched.submit(1, stage_id=1)
    refused(sched, tl.EEXIST, sched.submit, 1, stage_id=1)
    refused(sched, tl.EINVAL, sched.submit, 0, stage_id=2)
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2, max_task_failures=65536)
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2, tags=("bad tag",))
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2, tags=("t", "t"))
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2,
            tags=tuple("t%d" % i for i in range(tl.TAGS_MAX + 1)))
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2, barrier=True, allowed_hosts=("h1",))
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2, allowed_executors=("e1", "e1"))
    refused(sched, tl.EINVAL, sched.submit, 1, stage_id=2, prefs=[[("", None)]])
    refused(sched, tl.ERESOURCE, sched.submit, 1, stage_id=2, resources=[("gpu", 0)])
    refused(sched, tl.ERESOURCE, sched.submit, 1, stage_id=2, resources=[("gpu", 2, 4)])
    refused(sched, tl.ERESOURCE, sched.submit, 1, stage_id=2, resources=[("gpu", 1), ("gpu", 1)])
    refused(sched, tl.ERESOURCE, sched.submit, 1, stage_id=2, resources=[("g pu", 1)])
    # ERESOURCE is checked before EEXIST
    refused(sched, tl.ERESOURCE, sched.submit, 1, stage_id=1, resources=[("gpu", 0)])
    assert len(sched.tasksets()) == 1


def test_submit_older_attempt_becomes_zombie(sched, rec):
    old_payload, new_payload = Obj("old"), Obj("new")
    old = sched.submit(1, stage_id=1, payload=old_payload)
    new = sched.submit(1, stage_id=1, stage_attempt=1, payload=new_payload)
    sched.dispatch()
    sched.check()
    # the old attempt had nothing running: released at once
    ((info, payload),) = rec.of("taskset_released")
    assert info.id == old and payload is old_payload
    refused(sched, tl.ENOENT, sched.taskset_get, old)
    assert not sched.taskset_get(new).zombie


def test_pools_fair(clock):
    with tl.Scheduler(Recorder(), clock=clock, mode=tl.SchedMode.FAIR) as s:
        s.pool_add("prod", tl.SchedMode.FAIR, 3, 2)
        p = s.pool_get("prod")
        assert (p.mode, p.weight, p.min_share, p.running, p.tasksets) == (
            tl.SchedMode.FAIR, 3, 2, 0, 0)
        assert (p.depth, p.children, p.parent) == (1, 0, "")
        s.pool_add("etl", parent="prod")
        child = s.pool_get("etl")
        assert (child.depth, child.parent, child.mode, child.weight) == (2, "prod", 
                                                                          tl.SchedMode.FIFO, 1)
        assert s.pool_get("prod").children == 1
        s.pool_set("etl", tl.SchedMode.FAIR, 5, 1)
        child = s.pool_get("etl")
        assert (child.mode, child.weight, child.min_share) == (tl.SchedMode.FAIR, 5, 1)
        s.submit(1, stage_id=1, pool="etl")
        assert s.pool_get("etl").tasksets == 1
        assert s.stats().pools == 3
        refused(s, tl.EEXIST, s.pool_add, "prod")
        refused(s, tl.EINVAL, s.pool_add, "w0", tl.SchedMode.FIFO, 0)
        refused(s, tl.EINVAL, s.pool_add, "")
        refused(s, tl.ENOENT, s.pool_add, "x", parent="nope")
        refused(s, tl.ESTATE, s.pool_add, "x", parent="default")
        refused(s, tl.ESTATE, s.pool_add, "x", parent="etl")  # etl holds a task set
        refused(s, tl.ENOENT, s.pool_set, "nope", tl.SchedMode.FIFO, 1, 0)
        refused(s, tl.EINVAL, s.pool_set, "prod", tl.SchedMode.FIFO, 0, 0)
        refused(s, tl.ENOENT, s.pool_get, "nope")
        refused(s, tl.ENOENT, s.submit, 1, stage_id=2, pool="nope")
        refused(s, tl.ESTATE, s.submit, 1, stage_id=2, pool="prod")  # holds child pools
        s.check()


def test_pools_fifo_scheduler(sched):
    refused(sched, tl.ESTATE, sched.pool_add, "p")
    refused(sched, tl.ESTATE, sched.pool_set, "default", tl.SchedMode.FIFO, 1, 0)
    d = sched.pool_get("default")
    assert d.mode == tl.SchedMode.FIFO and d.weight == 1


def test_taskset_queries_after_release(sched, rec):
    ts, (launch,) = one_running(sched, rec, ntasks=1, tags=("t",))
    sched.status_update("e1", launch.tid, tl.TaskState.FINISHED)
    sched.dispatch()
    refused(sched, tl.ENOENT, sched.taskset_get, ts)
    refused(sched, tl.ENOENT, sched.taskset_tags, ts)
    refused(sched, tl.ENOENT, sched.explain, ts)
    assert sched.tasksets() == []
    assert sched.stats().tasksets_released == 1


# ---------------------------------------------------------------------------------------------
# Offers


def test_resource_offers_launch_fields(sched, rec):
    ud = Obj("e1-ud")
    payload = Obj("payload")
    sched.executor_add("e1", "h1", 2, ud=ud)
    sched.executor_add("e2", "h2", 1)
    ts = sched.submit(3, stage_id=4, stage_attempt=2, payload=payload)
    sched.dispatch()
    rec.clear()
    offers = [tl.Offer("e2", 1), ("e1", 2)]
    offer_ids = ["e2", "e1"]
    launches = sched.resource_offers(offers)
    assert len(launches) == 3
    assert [launch.tid for launch in launches] == sorted(launch.tid for launch in launches)
    for launch in launches:
        assert isinstance(launch, tl.Launch)
        assert launch.taskset == ts and launch.stage_id == 4 and launch.stage_attempt == 2
        assert launch.attempt == 0 and launch.cpus == 1 and not launch.speculative
        assert launch.locality == tl.Locality.NO_PREF
        assert launch.payload is payload
        assert offer_ids[launch.offer] == launch.executor_id
        assert launch.executor_ud is (ud if launch.executor_id == "e1" else None)
    assert sorted(launch.index for launch in launches) == [0, 1, 2]
    assert sorted(launch.executor_id for launch in launches) == ["e1", "e1", "e2"]
    sched.dispatch()
    started = rec.of("task_started")
    assert [t.tid for (t,) in started] == [launch.tid for launch in launches]
    t = started[0][0]
    assert isinstance(t, tl.TaskInfo) and t.payload is payload and t.taskset == ts
    assert sched.stats().attempts_running == 3 and sched.stats().launched == 3
    assert sched.executor_get("e1").free_cores == 0
    sched.check()


def test_resource_offers_cap_and_empty(sched):
    sched.executor_add("e1", "h1", 4)
    sched.submit(4, stage_id=1)
    assert sched.resource_offers([]) == []
    assert len(sched.resource_offers([("e1", 4)], cap=1)) == 1
    assert sched.stats().tasks_pending == 3
    assert len(sched.resource_offers([("e1", 4)])) == 3
    sched.check()


def test_resource_offers_rejected_and_errors(sched):
    sched.executor_add("e1", "h1", 1)
    sched.submit(1, stage_id=1)
    assert sched.resource_offers([("ghost", 4)]) == []
    assert sched.stats().rejected_offers == 1
    refused(sched, tl.EINVAL, sched.resource_offers, [("", 1)])
    refused(sched, tl.EINVAL, sched.resource_offers, [("e1", 1), ("x" * tl.ID_MAX, 1)])
    assert sched.stats().tasks_pending == 1


# ---------------------------------------------------------------------------------------------
# Status updates


def test_status_update_running_and_finished(sched, rec):
    ts, (launch,) = one_running(sched, rec, ntasks=1)
    result = Obj("result")
    sched.status_update("e1", launch.tid)  # RUNNING
    sched.status_update("e1", launch.tid, tl.TaskState.FINISHED, result=result, result_size=7)
    sched.dispatch()
    sched.check()
    ((task, end),) = rec.of("task_ended")
    assert isinstance(end, tl.TaskEnd)
    assert task.tid == launch.tid and task.executor_id == "e1" and task.host == "h-e1"
    assert end.kind == tl.EndKind.SUCCESS and end.result is result and end.result_size == 7
    assert not end.counts_toward_failures
    assert rec.names() == ["task_ended", "taskset_released"]
    assert sched.stats().succeeded == 1


def test_status_update_failure_retries(sched, rec):
    ts, (launch,) = one_running(sched, rec, ntasks=1)
    sched.status_update("e1", launch.tid, tl.TaskState.FAILED, failure=tl.EndKind.EXCEPTION,
                        message="boom")
    sched.dispatch()
    ((task, end),) = rec.of("task_ended")
    assert end.kind == tl.EndKind.EXCEPTION and end.counts_toward_failures
    assert end.message == "boom" and end.result is None
    assert "revive_offers" in rec.names()
    assert sched.taskset_get(ts).pending == 1
    (again,) = sched.resource_offers([("e1", 4)])
    assert again.index == launch.index and again.attempt == 1 and again.tid > launch.tid
    sched.check()


def test_status_update_no_retry_aborts(sched, rec):
    ts, launch = one_running(sched, rec, ntasks=2)
    sched.status_update("e1", launch[0].tid, tl.TaskState.FAILED, message="exists",
                        no_retry=True)
    sched.dispatch()
    ((info, reason),) = rec.of("taskset_failed")
    assert info.id == ts and "exists" in reason
    assert sched.taskset_get(ts).zombie and sched.taskset_get(ts).failed
    sched.check()


def test_status_update_errors(sched, rec):
    ts, launches = one_running(sched, rec, ntasks=2, cores=2)
    sched.executor_add("e2", "h2", 1)
    sched.dispatch()
    tid = launches[0].tid
    refused(sched, tl.ESTALE, sched.status_update, "e1", 9999, counters=("stale_updates",))
    assert sched.stats().stale_updates == 1
    refused(sched, tl.EOWNER, sched.status_update, "e2", tid, counters=("rejected_updates",))
    assert sched.stats().rejected_updates == 1
    refused(sched, tl.ENOENT, sched.status_update, "ghost", tid)
    refused(sched, tl.EINVAL, sched.status_update, "e1", tid, tl.TaskState.RUNNING, result=Obj())
    refused(sched, tl.EINVAL, sched.status_update, "e1", tid, tl.TaskState.FAILED,
            failure=tl.EndKind.EXECUTOR_LOST)
    refused(sched, tl.EINVAL, sched.status_update, "e1", tid, tl.TaskState.FAILED,
            failure=tl.EndKind.KILLED, no_retry=True)
    # an ended tid is stale
    sched.status_update("e1", tid, tl.TaskState.KILLED)
    sched.dispatch()
    refused(sched, tl.ESTALE, sched.status_update, "e1", tid, tl.TaskState.FINISHED,
            counters=("stale_updates",))
    assert sched.stats().killed == 1


def test_status_updates_batch_codes(sched, rec):
    ts, launches = one_running(sched, rec, ntasks=3)
    t1, t2, t3 = (launch.tid for launch in launches)
    result = Obj("r1")
    codes = sched.status_updates("e1", [
        (t1, tl.Update(tl.TaskState.FINISHED, result=result, result_size=1)),
        (t2, tl.TaskState.RUNNING),
        (9999, tl.TaskState.FINISHED),
        (t1, tl.TaskState.FINISHED),  # ended by the first update
        (t3, tl.Update(state=tl.TaskState.FAILED, failure=tl.EndKind.COMMIT_DENIED)),
    ])
    assert codes == [0, 0, -5, -5, 0]
    assert tl.error_class(codes[2]) is tl.ESTALE
    sched.dispatch()
    sched.check()
    ends = rec.of("task_ended")
    assert [(t.tid, e.kind) for t, e in ends] == [
        (t1, tl.EndKind.SUCCESS), (t3, tl.EndKind.COMMIT_DENIED)]
    assert ends[0][1].result is result
    assert sched.stats().stale_updates == 2
    assert sched.status_updates("e1", []) == []


def test_status_updates_batch_eowner_per_update(sched, rec):
    ts, (launch,) = one_running(sched, rec, ntasks=1)
    sched.executor_add("e2", "h2", 1)
    assert sched.status_updates("e2", [(launch.tid, tl.TaskState.RUNNING)]) == [-6]
    assert sched.stats().rejected_updates == 1


def test_status_updates_whole_batch_errors(sched, rec):
    ts, launches = one_running(sched, rec, ntasks=2)
    t1, t2 = (launch.tid for launch in launches)
    # one update C refuses with TL_EINVAL: nothing of the batch applies
    refused(sched, tl.EINVAL, sched.status_updates, "e1", [
        (t1, tl.TaskState.FINISHED),
        (t2, tl.Update(tl.TaskState.RUNNING, result=Obj())),
    ])
    assert sched.executor_get("e1").running == 2
    refused(sched, tl.ENOENT, sched.status_updates, "ghost", [(t1, tl.TaskState.RUNNING)])


# ---------------------------------------------------------------------------------------------
# Kills and cancels


def test_kill_task(sched, rec):
    ts, (launch,) = one_running(sched, rec, ntasks=1)
    sched.kill_task(launch.tid, interrupt=True, reason="speculation lost")
    sched.dispatch()
    ((tid, eid, eud, interrupt, reason),) = rec.of("kill_task")
    assert (tid, eid, interrupt, reason) == (launch.tid, "e1", True, "speculation lost")
    assert eud is launch.executor_ud and eud.name == "e1"
    assert sched.stats().attempts_running == 1  # runs until the executor says KILLED
    sched.kill_task(launch.tid)
    sched.dispatch()
    assert rec.of("kill_task")[1][3:] == (False, None)
    refused(sched, tl.ESTALE, sched.kill_task, 12345)
    sched.check()


def test_kill_stage(sched, rec):
    ts, launches = one_running(sched, rec, ntasks=3, stage_id=5)
    sched.kill_stage(5, reason="retry")
    sched.dispatch()
    kills = rec.of("kill_task")
    assert sorted(k[0] for k in kills) == sorted(launch.tid for launch in launches)
    assert all(k[4] == "retry" for k in kills)
    assert not sched.taskset_get(ts).zombie
    refused(sched, tl.ENOENT, sched.kill_stage, 6)
    sched.check()


def test_cancel_stage(sched, rec):
    payload = Obj("p")
    ts, launches = one_running(sched, rec, ntasks=2, stage_id=3, payload=payload)
    sched.cancel_stage(3, reason="user")
    sched.dispatch()
    ((info, reason),) = rec.of("taskset_failed")
    assert info.id == ts and "Stage 3 cancelled" in reason and "user" in reason
    assert len(rec.of("kill_task")) == 2
    st = sched.taskset_get(ts)
    assert st.zombie and st.failed and st.running == 2
    rec.clear()
    for launch in launches:
        sched.status_update("e1", launch.tid, tl.TaskState.KILLED)
    sched.dispatch()
    assert rec.names() == ["task_ended", "task_ended", "taskset_released"]
    assert rec.of("taskset_released")[0][1] is payload
    refused(sched, tl.ENOENT, sched.cancel_stage, 3)
    sched.check()


def test_cancel_tag_and_kill_tag(sched, rec):
    sched.executor_add("e1", "h1", 8)
    a = sched.submit(1, stage_id=1, tags=("job-a",))
    b = sched.submit(1, stage_id=2, tags=("job-a", "x"))
    c = sched.submit(1, stage_id=3, tags=("job-c",))
    launches = launch_all(sched, [("e1", 8)])
    assert len(launches) == 3
    rec.clear()
    assert sched.kill_tag("job-c", interrupt=True, reason="r") == 1
    sched.dispatch()
    assert [k[0] for k in rec.of("kill_task")] == [l.tid for l in launches if l.taskset == c]
    assert sched.kill_tag("nothing") == 0
    rec.clear()
    assert sched.cancel_tag("job-a", reason="why") == 2
    sched.dispatch()
    failed = rec.of("taskset_failed")
    assert [info.id for info, _ in failed] == [a, b]
    assert all("job tag job-a" in reason and "why" in reason for _, reason in failed)
    assert sched.cancel_tag("nothing") == 0
    refused(sched, tl.EINVAL, sched.cancel_tag, "bad tag")
    refused(sched, tl.EINVAL, sched.kill_tag, "")
    sched.check()


def test_partition_completed(sched, rec):
    ts = sched.submit(2, stage_id=9)
    sched.partition_completed(9, 1)
    st = sched.taskset_get(ts)
    assert (st.succeeded, st.pending) == (1, 1)
    sched.partition_completed(9, 1)  # already done: TL_OK, nothing changes
    assert sched.taskset_get(ts).succeeded == 1
    refused(sched, tl.EINVAL, sched.partition_completed, 9, 2)
    refused(sched, tl.ENOENT, sched.partition_completed, 10, 0)
    sched.partition_completed(9, 0)
    sched.dispatch()
    assert [info.id for info, _ in rec.of("taskset_released")] == [ts]
    sched.check()


# ---------------------------------------------------------------------------------------------
# Inspection


def test_stats_fields(sched):
    stats = sched.stats()
    fields = record_fields(stats)
    for name in ("executors_alive", "attempts_running", "attempts_frozen", "events_queued",
                 "mem_live_bytes", "launched", "stale_updates", "tasksets_released",
                 "reconcile_adopted", "tasksets_unplaceable", "pools"):
        assert name in fields
    assert stats.pools == 1 and stats.launched == 0 and stats.mem_live_bytes > 0


def test_check_passes_and_metrics_text(sched, rec):
    one_running(sched, rec, ntasks=2)
    assert sched.check() is None
    text = sched.metrics_text()
    assert isinstance(text, str) and text.endswith("\n")
    assert "taskledger_attempts_running 2\n" in text
    assert "# TYPE taskledger_launched_total counter" in text
    assert "taskledger_launched_total 2\n" in text


def test_explain(sched, rec):
    ts, launches = one_running(sched, rec, ntasks=2)
    text = sched.explain(ts)
    assert isinstance(text, str)
    for launch in launches:
        assert str(launch.tid) in text
    refused(sched, tl.ENOENT, sched.explain, 777)


def test_explain_long_text_is_whole(sched):
    sched.executor_add("big", "h1", 200)
    ts = sched.submit(150, stage_id=1)
    launches = sched.resource_offers([("big", 200)])
    text = sched.explain(ts)
    assert not text.endswith("...\n")
    missing = [launch.tid for launch in launches if "tid %d " % launch.tid not in text]
    assert missing == []


def test_tick_default_heartbeat_deadline(sched):
    sched.executor_add("e1", "h1", 1)
    assert sched.tick() == 120_000_000_000  # the default heartbeat timeout


# ---------------------------------------------------------------------------------------------
# Snapshot, restore, reconcile


def test_snapshot_ebusy_with_undelivered_events(sched):
    sched.executor_add("e1", "h1", 1)
    assert sched.stats().events_queued > 0
    refused_stats = sched.stats()
    with pytest.raises(tl.EBUSY):
        sched.snapshot()
    assert sched.stats() == refused_stats
    sched.dispatch()
    image = sched.snapshot()
    assert isinstance(image, bytes) and len(image) > 0
    assert sched.snapshot() == image  # nothing changed in between


def test_dispatch_snapshot_delivers_first(sched, rec):
    sched.executor_add("e1", "h1", 1)
    image = sched.dispatch_snapshot()
    assert rec.names() == ["executor_added"]
    assert sched.stats().events_queued == 0
    assert image == sched.snapshot()


def test_snapshot_restore_reconcile(rec):
    clock = FakeClock()
    payload, ud = Obj("payload"), Obj("ud")
    s = tl.Scheduler(rec, clock=clock)
    s.executor_add("e1", "h1", 2, ud=ud)
    ts = s.submit(3, stage_id=1, payload=payload)
    launches = launch_all(s, [("e1", 2)])
    assert len(launches) == 2
    image = s.snapshot()
    s.abandon()

    rec2 = RestoringRecorder(payloads={ts: payload}, uds={"e1": ud})
    s2 = tl.Scheduler.restore(image, rec2, clock=clock)
    try:
        assert rec2.asked_tasksets == [ts]
        assert rec2.asked_executors == [("e1", "h1")]
        assert s2.epoch == 2
        st = s2.executor_get("e1")
        assert st.state == tl.ExecutorState.RECOVERING and st.ud is ud
        assert st.frozen == 2 and s2.stats().executors_recovering == 1
        assert s2.executor_frozen("e1") == [launch.tid for launch in launches]
        assert s2.resource_offers([("e1", 2)]) == []  # recovering: nothing launches
        refused(s2, tl.ESTALE, s2.status_update, "e1", launches[0].tid,
                counters=("stale_updates",))
        # reconcile: keeps the first, the second was not reported, 999 is unknown
        unknown = s2.executor_reconcile("e1", [launches[0].tid, 999])
        assert unknown == [999]
        s2.dispatch()
        s2.check()
        ends = rec2.of("task_ended")
        assert [(t.tid, e.kind, e.counts_toward_failures) for t, e in ends] == [
            (launches[1].tid, tl.EndKind.EXECUTOR_LOST, False)]
        kills = rec2.of("kill_task")
        assert [(k[0], k[1], k[2], k[3]) for k in kills] == [(999, "e1", ud, True)]
        assert s2.executor_get("e1").state == tl.ExecutorState.ALIVE
        assert s2.stats().reconciled == 1 and s2.stats().reconcile_unknown == 1
        refused(s2, tl.ESTATE, s2.executor_reconcile, "e1", [])
        s2.status_update("e1", launches[0].tid, tl.TaskState.FINISHED)
        rest = launch_all(s2, [("e1", 2)])
        for launch in rest:
            assert launch.payload is payload and launch.executor_ud is ud
            s2.status_update("e1", launch.tid, tl.TaskState.FINISHED)
        s2.dispatch()
        assert [p for _, p in rec2.of("taskset_released")] == [payload]
        s2.check()
    finally:
        s2.close()


def test_restore_payload_lookup_error_aborts(rec):
    clock = FakeClock()
    s = tl.Scheduler(rec, clock=clock)
    ts = s.submit(1, stage_id=1, payload=Obj())
    s.dispatch()
    image = s.snapshot()
    s.close()
    rec2 = RestoringRecorder()  # knows no payload: LookupError
    with tl.Scheduler.restore(image, rec2, clock=clock) as s2:
        s2.dispatch()
        ((info, reason),) = rec2.of("taskset_failed")
        assert info.id == ts and "Payload not restored" in reason
        ((info, payload),) = rec2.of("taskset_released")
        assert info.id == ts and payload is None
        s2.check()


def test_restore_errors(clock):
    with pytest.raises(tl.ESNAPSHOT):
        tl.Scheduler.restore(b"this is not a snapshot image at all" * 4, Recorder(), clock=clock)
    with pytest.raises(tl.ESNAPSHOT):
        tl.Scheduler.restore(b"", Recorder(), clock=clock)
    s = tl.Scheduler(Recorder(), clock=clock, max_task_failures=4)
    s.executor_add("e1", "h1", 1)
    s.dispatch()
    image = s.snapshot()
    s.close()
    with pytest.raises(tl.ESNAPSHOT):
        tl.Scheduler.restore(image[: len(image) // 2], Recorder(), clock=clock)
    corrupt = bytearray(image)
    corrupt[len(corrupt) // 2] ^= 0xFF
    with pytest.raises((tl.ESNAPSHOT, tl.EVERSION)):
        tl.Scheduler.restore(bytes(corrupt), Recorder(), clock=clock)
    with pytest.raises(tl.ECONFIG):
        tl.Scheduler.restore(image, Recorder(), clock=clock, max_task_failures=5)
    with pytest.raises(tl.EINVAL):
        tl.Scheduler.restore(image, Recorder(), clock=clock, cpus_per_task=0)
    with pytest.raises(TypeError):
        tl.Scheduler.restore(image, Recorder(), clock=clock, bogus=1)
    # the intact image still restores, under a floor epoch
    with tl.Scheduler.restore(image, Recorder(), clock=clock, restore_epoch_floor=10) as s2:
        assert s2.epoch == 10
        s2.check()


def test_reconcile_errors(sched):
    sched.executor_add("e1", "h1", 1)
    refused(sched, tl.ESTATE, sched.executor_reconcile, "e1", [])
    refused(sched, tl.EINVAL, sched.executor_reconcile, "e1", [0])
    refused(sched, tl.EINVAL, sched.executor_reconcile, "", [])
    refused(sched, tl.ENOENT, sched.executor_reconcile, "ghost", [1])


# ---------------------------------------------------------------------------------------------
# Close and abandon


def test_close_releases_in_submission_order(clock):
    rec = Recorder()
    s = tl.Scheduler(rec, clock=clock)
    p1, p2 = Obj("1"), Obj("2")
    s.executor_add("e1", "h1", 1)
    t1 = s.submit(1, stage_id=1, payload=p1)
    t2 = s.submit(1, stage_id=2, payload=p2)
    s.resource_offers([("e1", 1)])
    s.close()
    # the queued events first (as dispatch would), then one taskset_released per task set
    names = rec.names()
    assert names[-2:] == ["taskset_released", "taskset_released"]
    assert "task_started" in names and names.index("task_started") < names.index(
        "taskset_released")
    assert [(i.id, p) for i, p in rec.of("taskset_released")] == [(t1, p1), (t2, p2)]
    assert "task_ended" not in names


def test_abandon_makes_no_callback(clock):
    rec = Recorder()
    s = tl.Scheduler(rec, clock=clock)
    s.executor_add("e1", "h1", 1)
    s.submit(1, stage_id=1, payload=Obj())
    s.abandon()
    assert rec.log == []
    with pytest.raises(tl.EINVAL):
        s.stats()
