"""taskledger for Python: the task-scheduling core of a cluster runtime, as a C library.

A driver creates a :class:`Scheduler`, registers executors, submits task sets, offers the
executors' free cores (``resource_offers`` returns which task runs where), reports status updates
and losses, and calls ``dispatch()`` to receive the events (task ended, task set released,
executor lost, ...) as calls of its handler's methods, on its own thread. The ledger keeps every
running task's bookkeeping so that nothing is left behind; ``check()`` verifies it.

See docs/python.md in the taskledger sources, and taskledger.h for each call's contract.
"""

from ._taskledger import ffi as _ffi, lib as _lib
from ._types import (EBUSY, ECONFIG, ECORRUPT, EEXIST, EGONE, EINVAL, EIO, ENOENT, ENOMEM,
                     EOWNER, ERESOURCE, ESNAPSHOT, ESTALE, ESTATE, EVERSION, TICK_NEVER,
                     AddressInfo, Demand, EndKind, ExecutorInfo, ExecutorState, ExecutorStatus,
                     Grant, Launch, Locality, Location, LossKind, LossReason, Offer, PoolStatus,
                     ReconcileItem, ResourceInfo, ResourceRequest, SchedMode, Spread, Stats,
                     TaskEnd, TaskInfo, TaskState, TaskledgerError, TasksetInfo, TasksetStatus,
                     Update, error_class)
from ._scheduler import CONFIG_FIELDS, EVENTS, RESOLVERS, Scheduler

__version__ = _ffi.string(_lib.tl_version_string()).decode()


def _constants() -> dict:
    """The header's integer constants without their TL_ prefix (ID_MAX, TAGS_MAX, ...)."""
    names = ("ID_MAX", "HOST_MAX", "RESOURCE_NAME_MAX", "ADDRESS_MAX", "RESOURCES_MAX",
             "RESOURCE_ADDRESSES_MAX", "SHARE_MAX", "TASK_GRANTS_MAX", "SHARE_UNIT", "TAG_MAX",
             "TAGS_MAX", "PLACE_MAX", "POOL_DEPTH_MAX", "WAIT_INHERIT", "VERSION_MAJOR",
             "VERSION_MINOR", "VERSION_PATCH", "VERSION_HEX")
    return {n: getattr(_lib, "TL_" + n) for n in names}


globals().update(_constants())

__all__ = [
    "Scheduler", "CONFIG_FIELDS", "EVENTS", "RESOLVERS", "TICK_NEVER", "error_class",
    "TaskledgerError", "EINVAL", "ENOMEM", "ENOENT", "EEXIST", "ESTALE", "EOWNER", "EGONE",
    "ESTATE", "EBUSY", "ECORRUPT", "EIO", "ESNAPSHOT", "EVERSION", "ECONFIG", "ERESOURCE",
    "Locality", "EndKind", "TaskState", "LossKind", "ExecutorState", "SchedMode", "Spread",
    "Offer", "Location", "ResourceRequest", "Update", "Launch", "TaskInfo", "TaskEnd",
    "TasksetInfo", "LossReason", "Demand", "Stats", "ExecutorStatus", "ExecutorInfo",
    "PoolStatus", "TasksetStatus", "ResourceInfo", "AddressInfo", "Grant", "ReconcileItem",
] + list(_constants())
