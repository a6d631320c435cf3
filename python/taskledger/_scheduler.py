"""Scheduler: one tl_scheduler, driven from Python, its events delivered by dispatch()."""

import weakref
from typing import (Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple, Union)

from ._taskledger import ffi, lib
from ._types import (EINVAL, ENOENT, AddressInfo, Demand, EndKind, ExecutorInfo, ExecutorState,
                     ExecutorStatus, Grant, Launch, Locality, Location, LossKind, LossReason,
                     Offer, PoolStatus, ReconcileItem, ResourceInfo, ResourceRequest, SchedMode,
                     Spread, Stats, TaskEnd, TaskInfo, TaskState, TasksetInfo, TasksetStatus,
                     Update, raise_for)

# Config fields the binding owns: the rest are Scheduler(**config) keyword arguments.
_OWN_CONFIG = {"clock", "clock_ud", "journal", "journal_ud", "delivery", "events_ready",
               "events_ready_ud"}
CONFIG_FIELDS: Tuple[str, ...] = tuple(
    f for f, _ in ffi.typeof("tl_config").fields if f not in _OWN_CONFIG)

# Events: the tl_callbacks member each handler method name fills.
EVENTS: Tuple[str, ...] = ("task_started", "task_ended", "taskset_failed", "taskset_released",
                           "executor_added", "executor_lost", "speculative_task_submitted",
                           "revive_offers", "kill_task", "executor_removed",
                           "taskset_unschedulable", "taskset_schedulable", "demand_changed")
RESOLVERS: Tuple[str, ...] = ("taskset_restored", "executor_restored")
# Made whether the handler wants them or not: they hand objects back to Python.
_ALWAYS = ("task_ended", "taskset_released", "executor_removed")

_NULL = ffi.NULL
_string = ffi.string
_from_handle = ffi.from_handle
_ENUM_FIELDS = {"state": ExecutorState, "mode": SchedMode, "locality": Locality,
                "spread": Spread}
_LOCALITY = tuple(Locality(i) for i in range(len(Locality)))
_END_KIND = tuple(EndKind(i) for i in range(len(EndKind)))
_CHUNK = 1 << 16


def _cstr(s: Optional[str], keep: List[Any]) -> Any:
    """A char * for s (NULL for None), kept alive by keep until the call returns."""
    if s is None:
        return _NULL
    b = ffi.new("char[]", _enc(s))
    keep.append(b)
    return b


def _enc(s: Optional[str]) -> Any:
    """A required string argument: bytes for the call, NULL for None (the library's EINVAL)."""
    if s is None:
        return _NULL
    if not isinstance(s, str):
        raise TypeError("expected str, got %s" % type(s).__name__)
    if "\0" in s:
        raise EINVAL("a string holds a NUL character: %r" % s)
    return s.encode()


def _none(p: Any) -> None:
    return None


def _str(p: Any) -> Optional[str]:
    return None if p == _NULL else _string(p).decode(errors="replace")


def _taskset_info(ts: Any) -> TasksetInfo:
    return TasksetInfo(ts.id, ts.stage_id, ts.stage_attempt, ts.ntasks)


def _loss(r: Any) -> LossReason:
    return LossReason(LossKind(r.kind), bool(r.caused_by_app), r.exit_code, _str(r.message))


class _HandleTable:
    """Python objects the library holds as void *: each alive until taken back exactly once."""

    __slots__ = ("_held",)

    def __init__(self) -> None:
        self._held: Dict[int, Any] = {}

    def put(self, obj: Any) -> Any:
        h = ffi.new_handle(obj)
        self._held[int(ffi.cast("uintptr_t", h))] = h
        return h

    def take(self, p: Any) -> Any:
        """The object behind p, no longer held (None for NULL or a pointer not held)."""
        if p == _NULL:
            return None
        h = self._held.pop(int(ffi.cast("uintptr_t", p)), None)
        return None if h is None else _from_handle(h)

    def peek(self, p: Any) -> Any:
        return None if p == _NULL else _from_handle(p)

    def clear(self) -> None:
        self._held.clear()

    def __len__(self) -> int:
        return len(self._held)


# Results in flight, of every scheduler: result_free has no ud, and a handle's address is unique
# while it lives. The library hands each result over (task_ended) or frees it (result_free),
# exactly once, even when a scheduler is freed or abandoned.
_RESULTS = _HandleTable()


class Scheduler:
    """A task scheduler: the ledger of executors, task sets and running attempts (tl_scheduler).

    Every call is thread-safe and validated before it changes anything: an exception (a
    TaskledgerError subclass named after the TL_E* code) means nothing changed. Delivery is always
    deferred: a call queues its events and returns; ``dispatch()`` delivers them, in order, to the
    handler's methods, on the thread that calls it, never while the library's lock is held.

    ``handler`` is any object; each event (see ``EVENTS``) that it has as an attribute when the
    Scheduler is made is called with the event's arguments (the others are not delivered, and
    the library does not even make those it can leave out). ``clock`` is a callable returning monotonic nanoseconds (None: the
    library's), ``journal`` a callable taking each journal line (docs/journal.md),
    ``events_ready`` a callable run when events wait and no wake-up is pending (from whatever
    thread made them). The other keyword arguments are tl_config's fields by name (``CONFIG_FIELDS``:
    times in nanoseconds); an unknown name is a TypeError, a value out of range EINVAL.

    Ownership: a task set's ``payload`` is kept alive by the Scheduler until ``taskset_released``
    hands it back, exactly once; a FINISHED update's ``result`` until ``task_ended`` hands it over
    (or the library drops it: RESULT_TOO_LARGE, close, abandon); an executor's ``ud`` until its
    ``executor_removed`` (or close). Close the scheduler with ``close()`` or a ``with`` block; one
    collected while open is freed without delivering anything.
    """

    def __init__(self, handler: Any = None, *, clock: Optional[Callable[[], int]] = None,
                 journal: Optional[Callable[[str], None]] = None,
                 events_ready: Optional[Callable[[], None]] = None, **config: Any) -> None:
        self._prepare(handler, clock, journal, events_ready, config)
        out = ffi.new("tl_scheduler **")
        raise_for(lib.tl_scheduler_new(self._cfg, self._cb, out), "tl_scheduler_new")
        self._s = out[0]

    @classmethod
    def restore(cls, image: bytes, handler: Any = None, *,
                clock: Optional[Callable[[], int]] = None,
                journal: Optional[Callable[[str], None]] = None,
                events_ready: Optional[Callable[[], None]] = None,
                **config: Any) -> "Scheduler":
        """A scheduler from a snapshot image (tl_scheduler_restore). Before it returns it asks
        ``handler.taskset_restored(ts)`` for each task set's payload (raise LookupError when it
        cannot be had: that task set is aborted) and ``handler.executor_restored(id, host)`` for
        each executor's ud. The config must match the image's (ECONFIG otherwise)."""
        self = cls.__new__(cls)
        self._prepare(handler, clock, journal, events_ready, config)
        for name in RESOLVERS:
            if callable(getattr(handler, name, None)):
                setattr(self._cb, name, getattr(lib, "_tl_py_" + name))
        view = memoryview(bytes(image))
        reader = [view, 0]
        rh = ffi.new_handle(reader)
        out = ffi.new("tl_scheduler **")
        try:
            rc = lib.tl_scheduler_restore(self._cfg, self._cb, lib._tl_py_read, rh, out)
            if rc == 0 and self._errors:
                lib.tl_scheduler_abandon(out[0])  # a resolver raised: drop what was made
            self._raise_pending()
            raise_for(rc, "tl_scheduler_restore")
        except BaseException:
            self._forget()
            raise
        self._s = out[0]
        self._resources = bool(self.resource_totals())
        return self

    def _prepare(self, handler: Any, clock: Any, journal: Any, events_ready: Any,
                 config: Dict[str, Any]) -> None:
        self._s = _NULL
        self._handler = handler
        self._clock = clock
        self._journal = journal
        self._events_ready = events_ready
        self._payloads = _HandleTable()
        self._results = _RESULTS
        self._uds = _HandleTable()  # executor uds, by the handle the library holds
        self._errors: List[BaseException] = []
        self._silent = False
        self._last_now = 0
        self._resources = False  # an executor declared resources: offers give grants
        # The library holds a handle to a weak reference: no cycle keeps the Scheduler alive.
        self._self_handle = ffi.new_handle(weakref.ref(self))
        cfg = ffi.new("tl_config *")
        lib.tl_config_init(cfg)
        for name, value in config.items():
            if name not in CONFIG_FIELDS:
                raise TypeError("Scheduler() got an unexpected keyword argument %r" % name)
            try:
                setattr(cfg, name, value)
            except OverflowError as e:
                raise EINVAL("%s=%r: %s" % (name, value, e)) from None
        cfg.delivery = lib.TL_DELIVER_DEFERRED
        if clock is not None:
            cfg.clock = lib._tl_py_clock
            cfg.clock_ud = self._self_handle
        if journal is not None:
            cfg.journal = lib._tl_py_journal
            cfg.journal_ud = self._self_handle
        if events_ready is not None:
            cfg.events_ready = lib._tl_py_events_ready
            cfg.events_ready_ud = self._self_handle
        cb = ffi.new("tl_callbacks *")
        cb.ud = self._self_handle
        for name in EVENTS:
            if name in _ALWAYS or callable(getattr(handler, name, None)):
                setattr(cb, name, getattr(lib, "_tl_py_" + name))
        self._cfg = cfg
        self._cb = cb

    # --- life ------------------------------------------------------------------------------

    def _live(self) -> Any:
        s = self._s
        if s == _NULL:
            raise EINVAL("the scheduler is closed")
        return s

    def close(self) -> None:
        """Frees the scheduler (tl_scheduler_free): delivers what is queued, then hands back every
        task set still held (taskset_released). EBUSY from inside a callback. Closing twice does
        nothing."""
        if self._s == _NULL:
            return
        raise_for(lib.tl_scheduler_free(self._s), "tl_scheduler_free")
        self._s = _NULL
        self._forget()
        self._raise_pending()

    def abandon(self) -> None:
        """Drops the scheduler as its process's death would (tl_scheduler_abandon): nothing is
        delivered, no payload handed back; the binding lets go of every object it held."""
        raise_for(lib.tl_scheduler_abandon(self._live()), "tl_scheduler_abandon")
        self._s = _NULL
        self._forget()

    def _forget(self) -> None:
        # Results need no clearing: the library hands each over or frees it (result_free).
        self._payloads.clear()
        self._uds.clear()

    @property
    def closed(self) -> bool:
        """Whether close() or abandon() ran."""
        return self._s == _NULL

    def __enter__(self) -> "Scheduler":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        s = getattr(self, "_s", _NULL)
        if s != _NULL:
            self._silent = True
            self._s = _NULL
            lib.tl_scheduler_free(s)

    @property
    def epoch(self) -> int:
        """The scheduler's epoch, for fencing (tl_epoch)."""
        return lib.tl_epoch(self._live())

    # --- delivery --------------------------------------------------------------------------

    def dispatch(self) -> int:
        """Delivers every queued event on this thread (tl_dispatch) and returns how many. If a
        handler method raised, the rest is still delivered and the first exception is raised
        here. EBUSY from inside a callback."""
        n = lib.tl_dispatch(self._live())
        if self._errors:
            self._raise_pending()
        if n < 0:
            raise_for(n, "tl_dispatch")
        return n

    def _raise_pending(self) -> None:
        if self._errors:
            e = self._errors[0]
            self._errors = []
            raise e

    # --- executors -------------------------------------------------------------------------

    def executor_add(self, executor_id: str, host: str, cores: int, *, rack: Optional[str] = None,
                     ud: Any = None, profile: int = 0,
                     resources: Optional[Dict[str, Sequence[str]]] = None) -> None:
        """Registers an executor (ALIVE). ``ud`` is any object, given back with its events and
        launches. ``resources`` maps a resource name to its addresses. EEXIST, EGONE (a removed
        id), ERESOURCE, EINVAL."""
        keep: List[Any] = []
        d = ffi.new("tl_executor_desc *")
        d.id = _cstr(executor_id, keep)
        d.host = _cstr(host, keep)
        d.rack = _cstr(rack, keep)
        d.cores = cores
        d.profile = profile
        if resources:
            res = ffi.new("tl_resource[]", len(resources))
            for i, (name, addresses) in enumerate(resources.items()):
                addresses = list(addresses)
                arr = ffi.new("char *[]", [_cstr(a, keep) for a in addresses])
                keep.append(arr)
                res[i].name = _cstr(name, keep)
                res[i].addresses = arr
                res[i].naddresses = len(addresses)
            keep.append(res)
            d.resources = res
            d.nresources = len(resources)
            self._resources = True
        live = self._live()
        if ud is not None:
            d.ud = self._uds.put(ud)
        rc = lib.tl_executor_add(live, d)
        if rc:
            self._uds.take(d.ud)
            raise_for(rc, "tl_executor_add")

    def executor_lost(self, executor_id: str, kind: int = LossKind.EXITED, *,
                      caused_by_app: bool = False, exit_code: int = 0,
                      message: Optional[str] = None) -> None:
        """Reports an executor lost. ``kind=LossKind.PENDING`` is the first phase of a two-phase
        loss (its attempts frozen until a real reason, or pending_loss_timeout_ns); any other kind
        completes the loss. ENOENT, EGONE, EINVAL."""
        keep: List[Any] = []
        r = ffi.new("tl_loss_reason *")
        r.kind = kind
        r.caused_by_app = caused_by_app
        r.exit_code = exit_code
        r.message = _cstr(message, keep)
        raise_for(lib.tl_executor_lost(self._live(), _enc(executor_id), r), "tl_executor_lost")

    def executor_heartbeat(self, executor_id: str) -> None:
        """Records a heartbeat now. ENOENT, EGONE, ESTATE (pending loss)."""
        raise_for(lib.tl_executor_heartbeat(self._live(), _enc(executor_id)),
                  "tl_executor_heartbeat")

    def executor_decommission(self, executor_id: str, message: Optional[str] = None) -> None:
        """Decommissions an executor: its attempts run on, nothing new launches there."""
        keep: List[Any] = []
        raise_for(lib.tl_executor_decommission(self._live(), _enc(executor_id),
                                               _cstr(message, keep)), "tl_executor_decommission")

    def executor_get(self, executor_id: str) -> ExecutorStatus:
        """What the ledger holds for one executor. ENOENT, EGONE."""
        out = ffi.new("tl_executor_status *")
        raise_for(lib.tl_executor_get(self._live(), _enc(executor_id), out), "tl_executor_get")
        return _convert(ExecutorStatus, out)._replace(ud=self._uds.peek(out.ud))

    def executors(self) -> List[ExecutorInfo]:
        """Every executor but tombstones, in registration order."""
        def convert(e: Any) -> ExecutorInfo:
            return _convert(ExecutorInfo, e)._replace(ud=self._uds.peek(e.ud))
        return self._list("tl_executor_info", lib.tl_executor_list, convert=convert)

    def executor_frozen(self, executor_id: str) -> List[int]:
        """The tids frozen on an executor (pending loss or recovering), in launch order."""
        return self._list("tl_tid", lib.tl_executor_frozen, _enc(executor_id))

    def executor_reconcile(self, executor_id: str, running: Iterable[int]) -> List[int]:
        """A RECOVERING executor reports the attempts it has (tl_executor_reconcile); returns
        the tids the ledger does not hold there (each gets a kill_task event)."""
        tids = list(running)
        arr = ffi.new("tl_tid[]", tids) if tids else _NULL
        cap = len(tids)
        unknown = ffi.new("tl_tid[]", max(cap, 1))
        n = ffi.new("size_t *")
        raise_for(lib.tl_executor_reconcile(self._live(), _enc(executor_id), arr, len(tids),
                                            unknown, cap, n), "tl_executor_reconcile")
        return list(unknown[0:n[0]])

    # --- task sets -------------------------------------------------------------------------

    def submit(self, ntasks: int, *, stage_id: int, stage_attempt: int = 0, priority: int = 0,
               cpus_per_task: int = 0, payload: Any = None, shuffle_map: bool = False,
               barrier: bool = False, pool: Optional[str] = None,
               prefs: Optional[Sequence[Sequence[Union[Location, Tuple[str, Optional[str]], str]]]]
               = None, profile: int = 0,
               resources: Optional[Sequence[Union[ResourceRequest, Tuple[Any, ...]]]] = None,
               max_task_failures: int = 0, tags: Sequence[str] = (),
               allowed_executors: Sequence[str] = (), allowed_hosts: Sequence[str] = (),
               spread: int = Spread.NONE) -> int:
        """Submits a task set of ``ntasks`` tasks and returns its id. ``payload`` (any object) is
        held until taskset_released hands it back. ``prefs``: None, or one list per task of its
        preferred locations (Location, (host, executor_id) or a host). EINVAL, ERESOURCE, ENOENT
        (no such pool), EEXIST (that stage attempt is live), ESTATE; on error the payload is not
        held."""
        sched = self._live()
        keep: List[Any] = []
        d = ffi.new("tl_taskset_desc *")
        d.stage_id = stage_id
        d.stage_attempt = stage_attempt
        d.priority = priority
        d.ntasks = ntasks
        d.cpus_per_task = cpus_per_task
        d.shuffle_map = shuffle_map
        d.barrier = barrier
        d.pool = _cstr(pool, keep)
        d.profile = profile
        d.max_task_failures = max_task_failures
        d.spread = spread
        if prefs is not None:
            prefs = list(prefs)
            tasks = ffi.new("tl_task_desc[]", max(len(prefs), 1))
            keep.append(tasks)
            for i, plist in enumerate(prefs):
                plist = [p if isinstance(p, Location) else
                         Location(p) if isinstance(p, str) else Location(*p) for p in plist]
                if plist:
                    locs = ffi.new("tl_location[]", len(plist))
                    keep.append(locs)
                    for j, p in enumerate(plist):
                        locs[j].host = _cstr(p.host, keep)
                        locs[j].executor_id = _cstr(p.executor_id, keep)
                    tasks[i].prefs = locs
                    tasks[i].nprefs = len(plist)
            if len(prefs) != ntasks:
                raise EINVAL("prefs has %d entries for %d tasks" % (len(prefs), ntasks))
            d.tasks = tasks
        if resources:
            reqs = [r if isinstance(r, ResourceRequest) else ResourceRequest(*r) for r in resources]
            arr = ffi.new("tl_resource_request[]", len(reqs))
            keep.append(arr)
            for i, r in enumerate(reqs):
                arr[i].name = _cstr(r.name, keep)
                arr[i].amount = r.amount
                arr[i].share = r.share
            d.resources = arr
            d.nresources = len(reqs)
        for field, names in (("tags", tags), ("allowed_executors", allowed_executors),
                             ("allowed_hosts", allowed_hosts)):
            names = list(names)
            if names:
                arr = ffi.new("char *[]", [_cstr(x, keep) for x in names])
                keep.append(arr)
                setattr(d, field, arr)
                setattr(d, "n" + field, len(names))
        if payload is not None:
            d.payload = self._payloads.put(payload)
        out = ffi.new("tl_taskset_id *")
        rc = lib.tl_submit(sched, d, out)
        if rc:
            self._payloads.take(d.payload)
            raise_for(rc, "tl_submit")
        return out[0]

    def pool_add(self, name: str, mode: int = SchedMode.FIFO, weight: int = 1,
                 min_share: int = 0, *, parent: Optional[str] = None) -> None:
        """Adds a pool (TL_FAIR schedulers), at the top or inside ``parent``."""
        keep: List[Any] = []
        if parent is None:
            rc = lib.tl_pool_add(self._live(), _cstr(name, keep), mode, weight, min_share)
        else:
            rc = lib.tl_pool_add_child(self._live(), _cstr(parent, keep), _cstr(name, keep), mode,
                                       weight, min_share)
        raise_for(rc, "tl_pool_add")

    def pool_set(self, name: str, mode: int, weight: int, min_share: int) -> None:
        """Changes an existing pool's mode, weight and min share."""
        keep: List[Any] = []
        raise_for(lib.tl_pool_set(self._live(), _cstr(name, keep), mode, weight, min_share),
                  "tl_pool_set")

    def pool_get(self, name: str) -> PoolStatus:
        """One pool's state. ENOENT."""
        out = ffi.new("tl_pool_status *")
        raise_for(lib.tl_pool_get(self._live(), _enc(name), out), "tl_pool_get")
        return _convert(PoolStatus, out)

    def taskset_get(self, taskset_id: int) -> TasksetStatus:
        """What the ledger holds for one task set. ENOENT once released."""
        out = ffi.new("tl_taskset_status *")
        raise_for(lib.tl_taskset_get(self._live(), taskset_id, out), "tl_taskset_get")
        return _convert(TasksetStatus, out)

    def tasksets(self) -> List[TasksetStatus]:
        """Every task set the ledger holds, in submission order."""
        return self._list("tl_taskset_status", lib.tl_taskset_list,
                          convert=lambda t: _convert(TasksetStatus, t))

    def taskset_tags(self, taskset_id: int) -> List[str]:
        """A task set's tags, in the order submitted."""
        return self._list("tl_tag_info", lib.tl_taskset_tags, taskset_id,
                          convert=lambda t: _string(t.tag).decode())

    def kill_task(self, tid: int, interrupt: bool = False, reason: Optional[str] = None) -> None:
        """Asks for one attempt to be killed (event kill_task). ESTALE."""
        keep: List[Any] = []
        raise_for(lib.tl_kill_task(self._live(), tid, interrupt, _cstr(reason, keep)),
                  "tl_kill_task")

    def kill_stage(self, stage_id: int, interrupt: bool = False,
                   reason: Optional[str] = None) -> None:
        """Asks for every running attempt of a stage to be killed."""
        keep: List[Any] = []
        raise_for(lib.tl_kill_stage(self._live(), stage_id, interrupt, _cstr(reason, keep)),
                  "tl_kill_stage")

    def cancel_stage(self, stage_id: int, reason: Optional[str] = None) -> None:
        """Cancels a stage: kills its running attempts and aborts its active attempt."""
        keep: List[Any] = []
        raise_for(lib.tl_cancel_stage(self._live(), stage_id, _cstr(reason, keep)),
                  "tl_cancel_stage")

    def cancel_tag(self, tag: str, interrupt: bool = False, reason: Optional[str] = None) -> int:
        """Cancels every task set carrying tag; returns how many."""
        keep: List[Any] = []
        n = ffi.new("size_t *")
        raise_for(lib.tl_cancel_tag(self._live(), _cstr(tag, keep), interrupt,
                                    _cstr(reason, keep), n), "tl_cancel_tag")
        return n[0]

    def kill_tag(self, tag: str, interrupt: bool = False, reason: Optional[str] = None) -> int:
        """Asks for every running attempt of every task set carrying tag to be killed; returns
        how many task sets carry it."""
        keep: List[Any] = []
        n = ffi.new("size_t *")
        raise_for(lib.tl_kill_tag(self._live(), _cstr(tag, keep), interrupt,
                                  _cstr(reason, keep), n), "tl_kill_tag")
        return n[0]

    def partition_completed(self, stage_id: int, index: int) -> None:
        """Tells a stage's active attempt that index's result landed from another attempt."""
        raise_for(lib.tl_partition_completed(self._live(), stage_id, index),
                  "tl_partition_completed")

    def taskset_placement(self, taskset_id: int) -> List[Tuple[bool, str]]:
        """A task set's hard placement: (is_host, name) pairs, its allowed executors first, then
        its allowed hosts, each in the order submitted. ENOENT once released."""
        return self._list("tl_place_info", lib.tl_taskset_placement, taskset_id,
                          convert=lambda p: (bool(p.host), _string(p.name).decode()))

    # --- resources -------------------------------------------------------------------------

    def _list(self, ctype: str, fn: Any, *args: Any, convert: Any = None) -> List[Any]:
        """The entries a cap/count listing call gives, asked for again while they do not fit,
        each converted while the array that holds them lives (struct entries point into it)."""
        s = self._live()
        n = ffi.new("size_t *")
        cap = 16
        while True:
            out = ffi.new(ctype + "[]", cap)
            rc = fn(s, *args, out, cap, n)
            if rc:
                raise_for(rc, fn.__name__)
            if n[0] <= cap:
                if convert is None:
                    return list(out[0:n[0]])
                return [convert(out[i]) for i in range(n[0])]
            cap = n[0]

    def executor_resources(self, executor_id: str) -> List[ResourceInfo]:
        """The resources an executor declared, in declaration order. ENOENT, EGONE."""
        return self._list("tl_resource_info", lib.tl_executor_resources, _enc(executor_id),
                          convert=lambda r: _convert(ResourceInfo, r))

    def executor_addresses(self, executor_id: str, resource: int) -> List[AddressInfo]:
        """The addresses of an executor's resource (its index in executor_resources())."""
        return self._list("tl_address_info", lib.tl_executor_addresses, _enc(executor_id),
                          resource, convert=lambda a: _convert(AddressInfo, a))

    def resource_totals(self) -> List[ResourceInfo]:
        """Every resource name some executor declares, summed over the executors."""
        return self._list("tl_resource_info", lib.tl_resource_totals,
                          convert=lambda r: _convert(ResourceInfo, r))

    def attempt_grants(self, tid: int) -> List[Grant]:
        """The addresses a running (or frozen) attempt holds. ESTALE."""
        return self._list("tl_grant", lib.tl_attempt_grants, tid,
                          convert=lambda g: Grant(g.resource, g.address, g.share))

    def grant_addresses(self, executor_id: str,
                        grants: Iterable[Grant]) -> Dict[str, List[str]]:
        """The addresses grants name (a launch's or a task's), by resource name, as the executor
        declared them: {"gpu": ["1"]}, what a runtime puts in CUDA_VISIBLE_DEVICES. ENOENT,
        EGONE; ENOENT also for a grant the executor's declaration does not hold."""
        grants = list(grants)
        if not grants:
            return {}
        declared = self.executor_resources(executor_id)
        addresses: Dict[int, List[AddressInfo]] = {}
        names: Dict[str, List[str]] = {}
        for g in grants:
            if g.resource not in addresses:
                addresses[g.resource] = self.executor_addresses(executor_id, g.resource)
            if g.address >= len(addresses[g.resource]):
                raise ENOENT("grant_addresses: %s holds no address %d of resource %d"
                             % (executor_id, g.address, g.resource))
            names.setdefault(declared[g.resource].name, []).append(
                addresses[g.resource][g.address].address)
        return names

    def executor_reconcile_items(self, executor_id: str,
                                 items: Iterable[ReconcileItem]) -> List[int]:
        """tl_executor_reconcile with what each attempt is: a reported attempt the ledger does not
        hold may be adopted (docs/snapshot.md "Adoption"). Returns the unknown tids."""
        s = self._live()
        eid = _enc(executor_id)
        items = list(items)
        arr = ffi.new("tl_reconcile_item[]", max(len(items), 1))
        for i, it in enumerate(items):
            arr[i].tid = it.tid
            arr[i].taskset = it.taskset
            arr[i].index = it.index
            arr[i].attempt = it.attempt
            arr[i].speculative = it.speculative
            arr[i].ended = it.ended
        cap = len(items)
        unknown = ffi.new("tl_tid[]", max(cap, 1))
        n = ffi.new("size_t *")
        raise_for(lib.tl_executor_reconcile_items(s, eid, arr, len(items), unknown, cap, n),
                  "tl_executor_reconcile_items")
        return list(unknown[0:n[0]])

    # --- offers ----------------------------------------------------------------------------

    def resource_offers(self, offers: Sequence[Union[Offer, Tuple[str, int]]],
                        cap: Optional[int] = None) -> List[Launch]:
        """Fills the offers' free cores with pending tasks and returns the launches, each naming
        the executor to run it on. ``cap`` bounds the launches (default: the cores offered, at
        most 65,536; the tasks a round leaves for want of room wait for the next round)."""
        s = self._live()
        offers = list(offers)
        n = len(offers)
        arr = ffi.new("tl_offer[]", max(n, 1))
        keep = []
        ids = []
        cores = 0
        for i, o in enumerate(offers):
            eid, c = (o.executor_id, o.cores) if isinstance(o, Offer) else o
            b = ffi.new("char[]", _enc(eid))
            keep.append(b)
            ids.append(eid)
            arr[i].executor_id = b
            arr[i].cores = c
            cores += c
        if cap is None:
            cap = min(cores, _CHUNK)
        out = ffi.new("tl_launch[]", max(cap, 1))
        nout = ffi.new("size_t *")
        if self._resources:
            # Executors declare resources: the launches' grants come with them.
            gcap = min(cap * lib.TL_TASK_GRANTS_MAX, _CHUNK)
            grants = ffi.new("tl_grant[]", max(gcap, 1))
            ngrants = ffi.new("size_t *")
            raise_for(lib.tl_resource_offers_grants(s, arr, n, out, cap, nout, grants, gcap,
                                                    ngrants), "tl_resource_offers_grants")
        else:
            raise_for(lib.tl_resource_offers(s, arr, n, out, cap, nout), "tl_resource_offers")
        ud = self._uds.peek if self._uds else _none
        payload = self._payloads.peek if self._payloads else _none
        loc = _LOCALITY
        launches = []
        for i in range(nout[0]):
            l = out[i]
            launches.append(Launch(l.tid, l.taskset, l.stage_id, l.stage_attempt, l.index,
                                   l.attempt, l.cpus, loc[l.locality], l.offer, ids[l.offer],
                                   ud(l.executor_ud), l.speculative, payload(l.payload),
                                   _grants(l.grants, l.ngrants) if l.ngrants else ()))
        return launches

    # --- status updates --------------------------------------------------------------------

    def _fill_update(self, u: Any, state: int, failure: int, message: Optional[str], result: Any,
                     result_size: int, no_retry: bool, keep: List[Any]) -> None:
        u.state = state
        u.failure = failure
        u.message = _cstr(message, keep)
        u.result_size = result_size
        u.no_retry = no_retry
        if result is not None:
            u.result = self._results.put(result)
            u.result_free = lib._tl_py_result_free

    def status_update(self, executor_id: str, tid: int, state: int = TaskState.RUNNING, *,
                      failure: int = EndKind.EXCEPTION, message: Optional[str] = None,
                      result: Any = None, result_size: int = 0, no_retry: bool = False) -> None:
        """An executor reports one attempt. ``result`` (FINISHED) is any object, handed over by
        task_ended. ESTALE (unknown, ended or frozen tid), EOWNER (another executor's), EGONE,
        ENOENT, EINVAL; on error the result is dropped."""
        s = self._live()
        eid = _enc(executor_id)
        keep: List[Any] = []
        u = ffi.new("tl_update *")
        self._fill_update(u, state, failure, message, result, result_size, no_retry, keep)
        rc = lib.tl_status_update(s, eid, tid, u)
        if rc:
            self._results.take(u.result)
            raise_for(rc, "tl_status_update")

    def status_updates(self, executor_id: str,
                       updates: Iterable[Tuple[int, Union[Update, int]]]) -> List[int]:
        """Several updates of one executor under one lock (tl_status_updates): pairs of (tid,
        Update) or (tid, TaskState). Returns each update's code (0, or a negative TL_E* code:
        ``error_class(code)``); raises only when the call as a whole fails (then none applied)."""
        s = self._live()
        eid = _enc(executor_id)
        updates = list(updates)
        n = len(updates)
        if n == 0:
            return []
        tids = ffi.new("tl_tid[]", n)
        arr = ffi.new("tl_update[]", n)
        results = ffi.new("int[]", n)
        keep: List[Any] = []
        fill = self._fill_update
        try:
            for i, (tid, u) in enumerate(updates):
                tids[i] = tid
                if isinstance(u, Update):
                    fill(arr[i], u.state, u.failure, u.message, u.result, u.result_size,
                         u.no_retry, keep)
                else:
                    arr[i].state = u
        except BaseException:
            for i in range(n):  # a bad entry: the results put before it are not kept
                self._results.take(arr[i].result)
            raise
        rc = lib.tl_status_updates(s, eid, tids, arr, n, results)
        if rc:
            for i in range(n):
                self._results.take(arr[i].result)
            raise_for(rc, "tl_status_updates")
        codes = list(results[0:n])
        for i, c in enumerate(codes):
            if c and arr[i].result != _NULL:
                self._results.take(arr[i].result)
        return codes

    # --- time, inspection ------------------------------------------------------------------

    def tick(self) -> int:
        """Runs what is due at the clock's now (heartbeat expiry, pending-loss and recovery
        timeouts, speculation, locality waits, unschedulable aborts) and returns the nanoseconds
        until the next deadline: 0 if something is due again already, TICK_NEVER if nothing ever
        will be. Its events wait for dispatch(); tick again after it (the answer does not take
        in what they do)."""
        return lib.tl_tick(self._live())

    def stats(self) -> Stats:
        """Every counter and gauge of the ledger, one consistent snapshot."""
        out = ffi.new("tl_stats *")
        lib.tl_stats_get(self._live(), out)
        return _convert(Stats, out)

    def check(self) -> None:
        """Verifies every invariant of the ledger; raises ECORRUPT naming the first broken."""
        why = ffi.new("char[]", 512)
        rc = lib.tl_check(self._live(), why, 512)
        raise_for(rc, "tl_check: " + _string(why).decode(errors="replace") if rc else None)

    def explain(self, taskset_id: int) -> str:
        """Why a task set is still alive, as text (tl_explain_taskset). ENOENT once released."""
        size = 4096
        while True:
            buf = ffi.new("char[]", size)
            rc = lib.tl_explain_taskset(self._live(), taskset_id, buf, size)
            if rc < 0:
                raise_for(rc, "tl_explain_taskset")
            text = _string(buf)
            if len(text) < size - 1:  # TL_OK says nothing of the length: grow while it fills
                return text.decode(errors="replace")
            size *= 2

    def metrics_text(self) -> str:
        """Every tl_stats field as Prometheus text."""
        needed = ffi.new("size_t *")
        size = 8192
        while True:
            buf = ffi.new("char[]", size)
            raise_for(lib.tl_metrics_text(self._live(), buf, size, needed), "tl_metrics_text")
            if needed[0] < size:  # it fit; else a buffer of needed + 1 holds it (values grow)
                return _string(buf).decode()
            size = needed[0] + 1

    # --- snapshot --------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        """One consistent image of the ledger (tl_snapshot). EBUSY while events wait: call
        dispatch() first, or use dispatch_snapshot()."""
        return self._image(lib.tl_snapshot, "tl_snapshot")

    def dispatch_snapshot(self) -> bytes:
        """Delivers the events queued (as dispatch() would), then returns the image of the ledger
        as it was when they were taken (tl_dispatch_snapshot)."""
        return self._image(lib.tl_dispatch_snapshot, "tl_dispatch_snapshot")

    def _image(self, fn: Any, what: str) -> bytes:
        chunks: List[bytes] = []
        h = ffi.new_handle(chunks)
        rc = fn(self._live(), lib._tl_py_write, h)
        self._raise_pending()
        raise_for(rc, what)
        return b"".join(chunks)


def _overflow_is_einval(fn: Callable[..., Any]) -> Callable[..., Any]:
    """An integer argument that does not fit its C type is EINVAL, as a C caller's out-of-range
    value is (cffi raises OverflowError while the arguments are converted, before any call)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except OverflowError as e:
            raise EINVAL("%s: %s" % (fn.__name__, e)) from None

    call.__name__ = fn.__name__
    call.__qualname__ = fn.__qualname__
    call.__doc__ = fn.__doc__
    call.__wrapped__ = fn  # type: ignore[attr-defined]
    return call


for _name, _fn in list(vars(Scheduler).items()):
    if callable(_fn) and not _name.startswith("_") and _name != "restore":
        setattr(Scheduler, _name, _overflow_is_einval(_fn))


def _converter(cls: Any) -> List[Tuple[str, Any]]:
    conv = []
    for name, field in ffi.typeof(cls._ctype).fields:
        t = field.type
        if t.kind == "array" and t.item.cname == "char":
            conv.append((name, lambda v: _string(v).decode(errors="replace")))
        elif t.kind == "struct" and t.cname in ("tl_taskset_info", "struct tl_taskset_info"):
            conv.append((name, _taskset_info))
        elif name in _ENUM_FIELDS:
            conv.append((name, _ENUM_FIELDS[name]))
        elif t.kind == "pointer":
            conv.append((name, lambda v: None))  # uds: the binding fills them in
        elif t.kind == "primitive" and t.cname == "_Bool":
            conv.append((name, bool))
        else:
            conv.append((name, None))
    return conv


_CONVERTERS: Dict[Any, List[Tuple[str, Any]]] = {}


def _convert(cls: Any, c: Any) -> Any:
    conv = _CONVERTERS.get(cls)
    if conv is None:
        conv = _CONVERTERS[cls] = _converter(cls)
    return cls(*[f(getattr(c, n)) if f else getattr(c, n) for n, f in conv])


# --- the library's callbacks ----------------------------------------------------------------

def _sched(ud: Any) -> Optional[Scheduler]:
    return _from_handle(ud)()


def _deliver(s: Scheduler, name: str, *args: Any) -> None:
    if s._silent:
        return
    fn = getattr(s._handler, name, None)
    if fn is None:
        return
    try:
        fn(*args)
    except BaseException as e:  # delivered after the batch, from dispatch()
        s._errors.append(e)


def _grants(p: Any, n: int) -> Tuple[Grant, ...]:
    return tuple(Grant(g.resource, g.address, g.share) for g in p[0:n]) if n else ()


def _task_info(s: Scheduler, t: Any) -> TaskInfo:
    eid = _string(t.executor_id).decode()
    return TaskInfo(t.tid, t.taskset, t.stage_id, t.stage_attempt, t.index, t.attempt, eid,
                    _string(t.host).decode(), _LOCALITY[t.locality], t.speculative,
                    s._payloads.peek(t.payload) if s._payloads else None,
                    s._uds.peek(t.executor_ud) if s._uds else None,
                    _grants(t.grants, t.ngrants) if t.ngrants else ())


@ffi.def_extern()
def _tl_py_task_started(ud, task):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "task_started", _task_info(s, task))


@ffi.def_extern()
def _tl_py_task_ended(ud, task, end):  # type: ignore[no-untyped-def]
    result = _RESULTS.take(end.result)  # None for NULL
    s = _sched(ud)
    if s is None or s._silent or s._handler is None or not hasattr(s._handler, "task_ended"):
        return
    _deliver(s, "task_ended", _task_info(s, task),
             TaskEnd(_END_KIND[end.kind], end.counts_toward_failures, _str(end.message), result,
                     end.result_size))


@ffi.def_extern()
def _tl_py_taskset_failed(ud, ts, reason):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "taskset_failed", _taskset_info(ts), _str(reason))


@ffi.def_extern()
def _tl_py_taskset_released(ud, ts, payload):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        obj = s._payloads.take(payload)
        _deliver(s, "taskset_released", _taskset_info(ts), obj)


@ffi.def_extern()
def _tl_py_executor_added(ud, executor_id, host):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "executor_added", _string(executor_id).decode(), _string(host).decode())


@ffi.def_extern()
def _tl_py_executor_lost(ud, executor_id, executor_ud, reason):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        eid = _string(executor_id).decode()
        _deliver(s, "executor_lost", eid, s._uds.peek(executor_ud), _loss(reason))


@ffi.def_extern()
def _tl_py_speculative_task_submitted(ud, ts, index):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "speculative_task_submitted", _taskset_info(ts), index)


@ffi.def_extern()
def _tl_py_revive_offers(ud):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "revive_offers")


@ffi.def_extern()
def _tl_py_kill_task(ud, tid, executor_id, executor_ud, interrupt,
                     reason):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        eid = _string(executor_id).decode()
        _deliver(s, "kill_task", tid, eid, s._uds.peek(executor_ud), bool(interrupt), _str(reason))


@ffi.def_extern()
def _tl_py_executor_removed(ud, executor_id, executor_ud, reason):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        eid = _string(executor_id).decode()
        obj = s._uds.take(executor_ud)
        _deliver(s, "executor_removed", eid, obj, _loss(reason))


@ffi.def_extern()
def _tl_py_taskset_unschedulable(ud, ts, reason):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "taskset_unschedulable", _taskset_info(ts), _str(reason))


@ffi.def_extern()
def _tl_py_taskset_schedulable(ud, ts):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "taskset_schedulable", _taskset_info(ts))


@ffi.def_extern()
def _tl_py_demand_changed(ud, demand):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        _deliver(s, "demand_changed", Demand(demand.tasks_pending, demand.tasks_speculatable,
                                             demand.attempts_running, demand.tasksets_active,
                                             demand.unschedulable_tasksets))


@ffi.def_extern()
def _tl_py_taskset_restored(ud, ts, payload):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is None:
        return False
    try:
        obj = s._handler.taskset_restored(_taskset_info(ts))
    except LookupError:
        return False
    except BaseException as e:
        s._errors.append(e)
        return False
    payload[0] = s._payloads.put(obj) if obj is not None else _NULL
    return True


@ffi.def_extern()
def _tl_py_executor_restored(ud, executor_id, host):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        eid = _string(executor_id).decode()
        try:
            obj = s._handler.executor_restored(eid, _string(host).decode())
        except BaseException as e:
            s._errors.append(e)
            return _NULL
        if obj is not None:
            return s._uds.put(obj)
    return _NULL


@ffi.def_extern()
def _tl_py_clock(ud):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is None:
        return 0
    try:
        now = s._clock()
        s._last_now = now
        return now
    except BaseException as e:  # raised by the next dispatch(); time stands still meanwhile
        s._errors.append(e)
        return s._last_now


@ffi.def_extern()
def _tl_py_journal(ud, line):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None and not s._silent:
        try:
            s._journal(_string(line).decode())
        except BaseException as e:
            s._errors.append(e)


@ffi.def_extern()
def _tl_py_events_ready(ud):  # type: ignore[no-untyped-def]
    s = _sched(ud)
    if s is not None:
        try:
            s._events_ready()
        except BaseException as e:  # raised by the next dispatch()
            s._errors.append(e)


@ffi.def_extern()
def _tl_py_result_free(result):  # type: ignore[no-untyped-def]
    _RESULTS.take(result)


@ffi.def_extern()
def _tl_py_write(ud, buf, n):  # type: ignore[no-untyped-def]
    _from_handle(ud).append(ffi.buffer(buf, n)[:])
    return 0


@ffi.def_extern()
def _tl_py_read(ud, buf, n):  # type: ignore[no-untyped-def]
    reader = _from_handle(ud)
    view, pos = reader
    chunk = view[pos:pos + n]
    ffi.memmove(buf, chunk, len(chunk))
    reader[1] = pos + len(chunk)
    return len(chunk)
