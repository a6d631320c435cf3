"""The binding's plain types: enums, exceptions and the small records calls return.

Every value mirrors taskledger.h; the enums take their values from the compiled library, so they
cannot drift from the C ones.
"""

from enum import IntEnum
from typing import Any, Dict, Optional, Tuple, Type

from ._taskledger import ffi, lib


def _enum(name: str, prefix: str, members: Tuple[str, ...], doc: str) -> Any:
    e = IntEnum(name, [(m, getattr(lib, prefix + m)) for m in members], module=__name__)
    e.__doc__ = doc
    return e


Locality = _enum("Locality", "TL_", ("PROCESS_LOCAL", "NODE_LOCAL", "NO_PREF", "RACK_LOCAL", "ANY"),
                 "Locality of a launch, best first (Spark's TaskLocality).")
EndKind = _enum("EndKind", "TL_END_", ("SUCCESS", "EXCEPTION", "FETCH_FAILED", "KILLED",
                                       "COMMIT_DENIED", "RESULT_LOST", "EXECUTOR_LOST",
                                       "RESUBMITTED", "RESULT_TOO_LARGE"),
                "How an attempt ended (task_ended), or the failure a FAILED update names.")
TaskState = _enum("TaskState", "TL_TASK_", ("RUNNING", "FINISHED", "FAILED", "KILLED"),
                  "The state a status update reports.")
LossKind = _enum("LossKind", "TL_LOSS_", ("PENDING", "EXITED", "PROCESS_LOST",
                                          "HEARTBEAT_TIMEOUT", "KILLED", "DECOMMISSIONED",
                                          "PENDING_TIMEOUT", "RECOVERY_TIMEOUT"),
                 "Why an executor was lost; PENDING is the first phase of a two-phase loss.")
ExecutorState = _enum("ExecutorState", "TL_EXECUTOR_", ("ALIVE", "DECOMMISSIONING",
                                                        "PENDING_LOSS", "REMOVED", "RECOVERING"),
                      "An executor's state in the ledger.")
SchedMode = _enum("SchedMode", "TL_", ("FIFO", "FAIR"),
                  "How a scheduler or a pool orders what it schedules.")
Spread = _enum("Spread", "TL_SPREAD_", ("NONE", "HOST", "EXECUTOR"),
               "Anti-affinity of a task set: at most one running attempt per host or executor.")

#: tick()'s answer when nothing is ever due.
TICK_NEVER: int = lib.TL_TICK_NEVER


# --- Errors ----------------------------------------------------------------------------------

class TaskledgerError(Exception):
    """An error code of the C library. ``code`` is the negative TL_E* value, ``name`` its name
    without the prefix ("EINVAL"); the message is tl_strerror's sentence, with the detail the
    call adds (the function, and for ECORRUPT the violated invariant)."""

    code: int = 0
    name: str = "UNKNOWN"

    def __init__(self, detail: Optional[str] = None) -> None:
        sentence = ffi.string(lib.tl_strerror(self.code)).decode()
        super().__init__("%s: %s" % (detail, sentence) if detail else sentence)
        self.detail = detail


_ERRORS: Dict[int, Type[TaskledgerError]] = {}
_BASES: Dict[str, Tuple[type, ...]] = {"EINVAL": (ValueError,), "ENOMEM": (MemoryError,),
                                       "ENOENT": (LookupError,), "EIO": (OSError,)}
_CODES = ("EINVAL", "ENOMEM", "ENOENT", "EEXIST", "ESTALE", "EOWNER", "EGONE", "ESTATE", "EBUSY",
          "ECORRUPT", "EIO", "ESNAPSHOT", "EVERSION", "ECONFIG", "ERESOURCE")

for _name in _CODES:
    _code = getattr(lib, "TL_" + _name)
    _cls = type(_name, (TaskledgerError,) + _BASES.get(_name, ()),
                {"code": _code, "name": _name, "__module__": "taskledger",
                 "__doc__": "TL_%s: %s" % (_name, ffi.string(lib.tl_strerror(_code)).decode())})
    _ERRORS[_code] = _cls
    globals()[_name] = _cls


def error_class(code: int) -> Type[TaskledgerError]:
    """The exception class of a negative TL_E* code (TaskledgerError for an unknown one)."""
    return _ERRORS.get(code, TaskledgerError)


def raise_for(code: int, detail: Optional[str] = None) -> None:
    """Raises the exception of code, unless it is 0 (TL_OK)."""
    if code:
        raise _ERRORS.get(code, TaskledgerError)(detail)


# --- Records ---------------------------------------------------------------------------------

class _Record:
    """A small value: attributes named after the C struct's fields, compared by value. Each
    subclass gets an __init__ written for its fields (as dataclasses do), so that building one
    costs what assigning its fields costs: launches and task events make one per task."""

    __slots__: Tuple[str, ...] = ()
    _defaults: Dict[str, Any] = {}

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        names = cls.__slots__
        params = ", ".join("%s=_d[%r]" % (n, n) if n in cls._defaults else
                           "%s=None" % n if any(m in cls._defaults for m in names[:i]) else n
                           for i, n in enumerate(names))
        body = "".join("\n    self.%s = %s" % (n, n) for n in names) or "\n    pass"
        ns: Dict[str, Any] = {}
        exec("def __init__(self, %s):%s" % (params, body), {"_d": cls._defaults}, ns)
        cls.__init__ = ns["__init__"]  # type: ignore[misc]

    def _asdict(self) -> Dict[str, Any]:
        return {n: getattr(self, n) for n in self.__slots__}

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.__slots__ if n not in ("payload", "ud",
                                                                               "executor_ud",
                                                                               "result")))

    def __repr__(self) -> str:
        return "%s(%s)" % (type(self).__name__,
                           ", ".join("%s=%r" % (n, getattr(self, n)) for n in self.__slots__))


class Offer(_Record):
    """Free cores an executor offers to resource_offers()."""
    __slots__ = ("executor_id", "cores")
    executor_id: str
    cores: int


class Location(_Record):
    """A preferred location of a task: a host, or one executor on it."""
    __slots__ = ("host", "executor_id")
    _defaults = {"executor_id": None}
    host: str
    executor_id: Optional[str]


class ResourceRequest(_Record):
    """What each task of a task set needs of one resource: ``amount`` whole addresses, or with
    ``share`` k (2 to SHARE_MAX) a 1/k share of one address."""
    __slots__ = ("name", "amount", "share")
    _defaults = {"amount": 1, "share": 0}
    name: str
    amount: int
    share: int


class Update(_Record):
    """One status update, for status_updates(). ``result`` (FINISHED only) is any object; it
    reaches task_ended as ``end.result``."""
    __slots__ = ("state", "failure", "message", "result", "result_size", "no_retry")
    _defaults = {"state": TaskState.RUNNING, "failure": EndKind.EXCEPTION, "result_size": 0,
                 "no_retry": False}
    state: int
    failure: int
    message: Optional[str]
    result: Any
    result_size: int
    no_retry: bool


class Launch(_Record):
    """One attempt resource_offers() launched: run task ``index`` of task set ``taskset`` on
    ``executor_id`` (``offer`` is the index of its offer in the call's list)."""
    __slots__ = ("tid", "taskset", "stage_id", "stage_attempt", "index", "attempt", "cpus",
                 "locality", "offer", "executor_id", "executor_ud", "speculative", "payload")
    tid: int
    taskset: int
    stage_id: int
    stage_attempt: int
    index: int
    attempt: int
    cpus: int
    locality: int
    offer: int
    executor_id: str
    executor_ud: Any
    speculative: bool
    payload: Any


class TaskInfo(_Record):
    """One attempt, as task_started and task_ended see it."""
    __slots__ = ("tid", "taskset", "stage_id", "stage_attempt", "index", "attempt",
                 "executor_id", "host", "locality", "speculative", "payload", "executor_ud")
    tid: int
    taskset: int
    stage_id: int
    stage_attempt: int
    index: int
    attempt: int
    executor_id: str
    host: str
    locality: int
    speculative: bool
    payload: Any
    executor_ud: Any


class TaskEnd(_Record):
    """How an attempt ended. With EndKind.SUCCESS, ``result`` is the object its FINISHED update
    gave (now the callee's)."""
    __slots__ = ("kind", "counts_toward_failures", "message", "result", "result_size")
    kind: int
    counts_toward_failures: bool
    message: Optional[str]
    result: Any
    result_size: int


class TasksetInfo(_Record):
    """One task set, as events name it."""
    __slots__ = ("id", "stage_id", "stage_attempt", "ntasks")
    id: int
    stage_id: int
    stage_attempt: int
    ntasks: int


class LossReason(_Record):
    """Why an executor was lost."""
    __slots__ = ("kind", "caused_by_app", "exit_code", "message")
    kind: int
    caused_by_app: bool
    exit_code: int
    message: Optional[str]


def _struct_record(cname: str, pyname: str, doc: str, skip: Tuple[str, ...] = ()) -> Any:
    fields = tuple(f for f, _ in ffi.typeof(cname).fields if f not in skip)
    return type(pyname, (_Record,), {"__slots__": fields, "__doc__": doc, "__module__": __name__})


Demand = _struct_record("tl_demand", "Demand",
                        "What demand_changed carries: the totals dynamic allocation sizes by.")
Stats = _struct_record("tl_stats", "Stats",
                       "tl_stats: every counter and gauge of the ledger (see taskledger.h).")
ExecutorStatus = _struct_record("tl_executor_status", "ExecutorStatus",
                                "What the ledger holds for one executor (executor_get).")
ExecutorInfo = _struct_record("tl_executor_info", "ExecutorInfo",
                              "One executor as executors() lists it.")
PoolStatus = _struct_record("tl_pool_status", "PoolStatus", "One pool (pool_get).")
TasksetStatus = _struct_record("tl_taskset_status", "TasksetStatus",
                               "What the ledger holds for one task set (taskset_get); ``info`` "
                               "is its TasksetInfo.")
ResourceInfo = _struct_record("tl_resource_info", "ResourceInfo",
                              "One resource of one executor (executor_resources), or summed over "
                              "every executor (resource_totals); used counts SHARE_UNIT per "
                              "whole address.")
AddressInfo = _struct_record("tl_address_info", "AddressInfo",
                             "One address of an executor's resource (executor_addresses).")
Grant = _struct_record("tl_grant", "Grant",
                       "One address an attempt holds: indices into its executor's declaration "
                       "(resource, address) and its share (1: whole).")


class ReconcileItem(_Record):
    """One attempt a recovering executor reports (executor_reconcile_items)."""
    __slots__ = ("tid", "taskset", "index", "attempt", "speculative", "ended")
    _defaults = {"speculative": False, "ended": False}
    tid: int
    taskset: int
    index: int
    attempt: int
    speculative: bool
    ended: bool
