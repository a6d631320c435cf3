"""Resources, hard placement and adoption: the calls that list a scheduler's detail."""

import pytest

import taskledger as tl


def drained(s):
    st = s.stats()
    assert (st.tasksets_active, st.tasksets_zombie, st.attempts_running) == (0, 0, 0)


def test_resources_are_listed_and_held_by_launches():
    with tl.Scheduler() as s:
        s.executor_add("e", "h", 4, resources={"gpu": ["0", "1"], "fpga": ["x"]})
        s.check()
        assert [r.name for r in s.executor_resources("e")] == ["gpu", "fpga"]
        assert [a.address for a in s.executor_addresses("e", 0)] == ["0", "1"]
        ts = s.submit(3, stage_id=0, resources=[tl.ResourceRequest("gpu", 1)])
        launches = s.resource_offers([("e", 4)])
        s.check()
        assert len(launches) == 2  # two addresses of gpu, one a task
        grants = [s.attempt_grants(l.tid) for l in launches]
        assert sorted(g[0].address for g in grants) == [0, 1]
        assert all(g[0].share == 1 and g[0].resource == 0 for g in grants)
        gpu = s.resource_totals()[0]
        assert (gpu.name, gpu.addresses, gpu.free, gpu.used) == ("gpu", 2, 0, 2 * tl.SHARE_UNIT)
        with pytest.raises(tl.ENOENT):
            s.executor_addresses("e", 2)
        with pytest.raises(tl.ENOENT):
            s.executor_resources("nobody")
        for l in launches:
            s.status_update("e", l.tid, tl.TaskState.FINISHED)
        with pytest.raises(tl.ESTALE):
            s.attempt_grants(launches[0].tid)
        s.cancel_stage(0)
        s.dispatch()
        s.check()
        assert s.resource_totals()[0].free == 2
        drained(s)
        assert ts == 1


def test_a_malformed_resource_is_eresource_and_changes_nothing():
    with tl.Scheduler() as s:
        before = s.stats()
        with pytest.raises(tl.ERESOURCE):
            s.executor_add("e", "h", 4, resources={"gpu": ["0", "0"]})
        with pytest.raises(tl.ERESOURCE):
            s.submit(1, stage_id=0, resources=[("gpu", 0)])
        assert s.stats() == before
        s.check()


def test_placement_is_listed_in_submission_order():
    with tl.Scheduler() as s:
        s.executor_add("e1", "h1", 2)
        ts = s.submit(2, stage_id=0, allowed_executors=["e2", "e1"], allowed_hosts=["h9"],
                      spread=tl.Spread.HOST)
        assert s.taskset_placement(ts) == [(False, "e2"), (False, "e1"), (True, "h9")]
        st = s.taskset_get(ts)
        assert (st.nallowed_executors, st.nallowed_hosts, st.spread) == (2, 1, tl.Spread.HOST)
        launches = s.resource_offers([("e1", 2)])
        assert len(launches) == 1  # one a host
        s.check()
        with pytest.raises(tl.EINVAL):
            s.submit(1, stage_id=1, barrier=True, allowed_hosts=["h1"])
        s.status_update("e1", launches[0].tid, tl.TaskState.FINISHED)
        s.cancel_stage(0)
        s.dispatch()
        with pytest.raises(tl.ENOENT):
            s.taskset_placement(ts)
        drained(s)


def test_reconcile_items_adopts_an_attempt_launched_after_the_image():
    payloads = {}

    class Handler:
        def taskset_restored(self, ts):
            return payloads[ts.id]

        def taskset_released(self, ts, payload):
            payloads.pop(ts.id)

    s = tl.Scheduler(Handler())
    s.executor_add("e", "h", 2)
    ts = s.submit(2, stage_id=0, payload="p")
    payloads[ts] = "p"
    s.dispatch()
    image = s.snapshot()
    launches = s.resource_offers([("e", 2)])  # after the image: the restore does not know them
    s.abandon()
    r = tl.Scheduler.restore(image, Handler(), restore_tid_floor=launches[-1].tid + 1)
    assert r.executor_get("e").state == tl.ExecutorState.RECOVERING
    items = [tl.ReconcileItem(l.tid, l.taskset, l.index, l.attempt) for l in launches]
    items.append(tl.ReconcileItem(999, ts, 0, 0))
    assert r.executor_reconcile_items("e", items) == [999]
    r.check()
    assert r.stats().reconcile_adopted == 2 and r.stats().attempts_running == 2
    for l in launches:
        r.status_update("e", l.tid, tl.TaskState.FINISHED)
    r.dispatch()
    r.check()
    drained(r)
    assert payloads == {}
    r.close()


def test_statuses_are_plain_python_values():
    with tl.Scheduler() as s:
        ts = s.submit(2, stage_id=3, stage_attempt=1)
        st = s.taskset_get(ts)
        assert st.info == tl.TasksetInfo(ts, 3, 1, 2)
        assert s.tasksets() == [st]
        assert isinstance(st.zombie, bool) and st.locality is tl.Locality.NO_PREF
        s.cancel_stage(3)
        s.dispatch()
        s.check()
        assert s.stats().tasksets_active == 0


def test_launches_and_task_events_carry_their_grants():
    started = []

    class Handler:
        def task_started(self, task):
            started.append(task)

    with tl.Scheduler(Handler()) as s:
        s.executor_add("e", "h", 8, resources={"gpu": ["g0", "g1", "g2"], "nic": ["n0"]})
        s.executor_add("plain", "h2", 8)
        s.submit(2, stage_id=0, resources=[("gpu", 1), ("nic", 1, 2)])
        s.submit(1, stage_id=1)
        launches = s.resource_offers([("e", 8), ("plain", 8)])
        s.check()
        assert len(launches) == 3
        with_gpu = [l for l in launches if l.stage_id == 0]
        assert len(with_gpu) == 2
        for l in with_gpu:
            assert l.grants == tuple(s.attempt_grants(l.tid))
            assert [(g.resource, g.share) for g in l.grants] == [(0, 1), (1, 2)]
        # Whole GPUs go one a task; the NIC is shared, 1/2 each.
        named = [s.grant_addresses(l.executor_id, l.grants) for l in with_gpu]
        assert sorted(n["gpu"][0] for n in named) == ["g0", "g1"]
        assert all(n["nic"] == ["n0"] for n in named)
        plain = [l for l in launches if l.stage_id == 1]
        assert plain[0].grants == () and s.grant_addresses(plain[0].executor_id, ()) == {}
        s.dispatch()
        assert {t.tid: t.grants for t in started} == {l.tid: l.grants for l in launches}
        with pytest.raises(tl.ENOENT):
            s.grant_addresses("e", [tl.Grant(0, 7, 1)])
        with pytest.raises(tl.ENOENT):
            s.grant_addresses("e", [tl.Grant(5, 0, 1)])
        for l in launches:
            s.status_update(l.executor_id, l.tid, tl.TaskState.FINISHED)
        s.dispatch()
        s.check()
        drained(s)
