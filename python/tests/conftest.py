"""Shared fixtures and helpers of the binding's tests.

Run in-tree (after building with CMake) as docs/python.md says, e.g.
    PYTHONPATH=build/python LD_LIBRARY_PATH=build /usr/bin/python3 -m pytest python/tests

The helpers below are plain functions; the test modules import them with
``from conftest import ...`` (pytest puts this directory on sys.path).
"""

import dataclasses
import gc
import threading

import pytest

import taskledger as tl

# Every event a handler may receive (docs: the binding's handler methods).
EVENTS = (
    "task_started",
    "task_ended",
    "taskset_failed",
    "taskset_released",
    "executor_added",
    "executor_lost",
    "speculative_task_submitted",
    "revive_offers",
    "kill_task",
    "executor_removed",
    "taskset_unschedulable",
    "taskset_schedulable",
    "demand_changed",
)


class FakeClock:
    """A monotonic clock in nanoseconds that moves only when a test moves it."""

    def __init__(self, start=1_000_000):
        self.now = start

    def __call__(self):
        return self.now

    def advance(self, ns):
        self.now += ns
        return self.now


class Recorder:
    """A handler that logs every event as (name, args, thread id), in delivery order.

    It keeps references to what the events carry (payloads, results, uds): tests that watch
    an object's lifetime call clear() to drop them.
    """

    def __init__(self):
        self.log = []

    def clear(self):
        self.log.clear()

    def names(self, skip=("demand_changed",)):
        return [name for name, _, _ in self.log if name not in skip]

    def of(self, name):
        return [args for n, args, _ in self.log if n == name]

    def threads(self):
        return {tid for _, _, tid in self.log}


def _make_method(event):
    def method(self, *args):
        self.log.append((event, args, threading.get_ident()))

    method.__name__ = event
    return method


for _event in EVENTS:
    setattr(Recorder, _event, _make_method(_event))
del _event


class RestoringRecorder(Recorder):
    """A Recorder with the restore resolvers: payloads by task set id, uds by executor id.

    A task set id missing from payloads raises LookupError (the payload cannot be had)."""

    def __init__(self, payloads=None, uds=None):
        super().__init__()
        self.payloads = dict(payloads or {})
        self.uds = dict(uds or {})
        self.asked_tasksets = []
        self.asked_executors = []

    def taskset_restored(self, ts):
        self.asked_tasksets.append(ts.id)
        if ts.id not in self.payloads:
            raise LookupError(ts.id)
        return self.payloads[ts.id]

    def executor_restored(self, executor_id, host):
        self.asked_executors.append((executor_id, host))
        return self.uds.get(executor_id)


class Obj:
    """A payload / result / ud that a weakref can watch."""

    def __init__(self, name=""):
        self.name = name

    def __repr__(self):
        return "Obj(%r)" % (self.name,)


def record_fields(obj):
    """A record object as a dict (frozen dataclasses with __slots__, or plain __slots__)."""
    if dataclasses.is_dataclass(obj):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    slots = []
    for klass in type(obj).__mro__:
        slots.extend(getattr(klass, "__slots__", ()))
    if slots:
        return {name: getattr(obj, name) for name in slots if hasattr(obj, name)}
    return dict(vars(obj))


def stats_dict(s, ignore=()):
    d = record_fields(s.stats())
    for name in ignore:
        d.pop(name)
    return d


def call_code(fn, *args, **kwargs):
    """Calls fn and returns 0, or the TL_E* code of the TaskledgerError it raised.

    The exception (and its traceback's frames, which hold the call's arguments) is dropped
    before this returns, so lifetime tests can watch what the call was given."""
    try:
        fn(*args, **kwargs)
    except tl.TaskledgerError as e:
        return e.code
    return 0


def collected(ref):
    """True when the weakly referenced object is gone after a full collection."""
    gc.collect()
    return ref() is None


def launch_all(s, offers):
    """resource_offers, then dispatch: the launches."""
    launches = s.resource_offers(offers)
    s.dispatch()
    s.check()
    return launches


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def rec():
    return Recorder()


@pytest.fixture
def sched(rec, clock):
    """A scheduler with the recording handler and the fake clock, closed after the test."""
    s = tl.Scheduler(rec, clock=clock)
    yield s
    try:
        s.close()
    except tl.TaskledgerError:
        pass  # closed by the test already
