"""The binding's plain types: enums, exceptions and the small records calls return.

Every value mirrors taskledger.h; the enums take their values from the compiled library, so they
cannot drift from the C ones.
"""

from collections import namedtuple
from enum import IntEnum
from typing import Any, Dict, NamedTuple, Optional, Tuple, Type

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

    __module__ = "taskledger"
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
# Records are named tuples: immutable values, compared and hashed by value, with the C struct's
# field names; and cheap to build (a launch and each task event make one per task).


class Offer(NamedTuple):
    """Free cores an executor offers to resource_offers()."""
    executor_id: str
    cores: int


class Location(NamedTuple):
    """A preferred location of a task: a host, or one executor on it."""
    host: str
    executor_id: Optional[str] = None


class ResourceRequest(NamedTuple):
    """What each task of a task set needs of one resource: ``amount`` whole addresses, or with
    ``share`` k (2 to SHARE_MAX) a 1/k share of one address."""
    name: str
    amount: int = 1
    share: int = 0


class Update(NamedTuple):
    """One status update, for status_updates(). ``result`` (FINISHED only) is any object; it
    reaches task_ended as ``end.result``."""
    state: int = TaskState.RUNNING
    failure: int = EndKind.EXCEPTION
    message: Optional[str] = None
    result: Any = None
    result_size: int = 0
    no_retry: bool = False


class Grant(NamedTuple):
    """One address an attempt holds: indices into its executor's declaration (``resource`` in
    executor_resources(), ``address`` in executor_addresses()) and its ``share`` (1: the whole
    address; k: 1/k of it). Scheduler.grant_addresses() gives the names."""
    resource: int
    address: int
    share: int


class Launch(NamedTuple):
    """One attempt resource_offers() launched: run task ``index`` of task set ``taskset`` on
    ``executor_id`` (``offer`` is the index of its offer in the call's list). ``grants``: the
    addresses of the executor's resources it holds (empty without resources)."""
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
    grants: Tuple[Grant, ...] = ()


class TaskInfo(NamedTuple):
    """One attempt, as task_started and task_ended see it (``grants``: the addresses it holds)."""
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
    grants: Tuple[Grant, ...] = ()


class TaskEnd(NamedTuple):
    """How an attempt ended. With EndKind.SUCCESS, ``result`` is the object its FINISHED update
    gave (now the callee's)."""
    kind: int
    counts_toward_failures: bool
    message: Optional[str]
    result: Any
    result_size: int


class TasksetInfo(NamedTuple):
    """One task set, as events name it."""
    id: int
    stage_id: int
    stage_attempt: int
    ntasks: int


class LossReason(NamedTuple):
    """Why an executor was lost."""
    kind: int
    caused_by_app: bool
    exit_code: int
    message: Optional[str]


class ReconcileItem(NamedTuple):
    """One attempt a recovering executor reports (executor_reconcile_items)."""
    tid: int
    taskset: int
    index: int
    attempt: int
    speculative: bool = False
    ended: bool = False


def _struct_record(cname: str, pyname: str, doc: str) -> Any:
    """A named tuple with the fields of a C struct, in its order."""
    cls = namedtuple(pyname, [f for f, _ in ffi.typeof(cname).fields])  # type: ignore[misc]
    cls.__doc__ = doc
    cls.__module__ = __name__
    cls._ctype = cname  # the struct the binding converts it from
    return cls


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

