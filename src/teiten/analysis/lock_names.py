"""The names of the LWLocks that 9.4, 9.5 and 9.6 print as a number in tranche ``main``.

From 10 on, every built-in lock has a tranche of its own, so LWLOCK_STATS names it; before,
the individual locks were places in MainLWLockArray, followed (9.4, 9.5) by the partitions of
the buffer mapping table, the lock manager and the predicate lock manager, and the report
showed "main 4" where the 2014 report wrote ProcArrayLock. The places, read in each version's
src/include/storage/lwlock.h (9.4, 9.5) and src/backend/storage/lmgr/lwlocknames.txt (9.6):
locks were only ever added at the end, 9.5 freed place 0 (BufFreelistLock), and 9.6 gave the
three partitioned tables tranches of their own (named by LWLOCK_STATS, not here).
"""

from __future__ import annotations

import re

# Places 1 to 37, the same in 9.4, 9.5 and 9.6.
_COMMON = (
    "ShmemIndexLock", "OidGenLock", "XidGenLock", "ProcArrayLock", "SInvalReadLock",
    "SInvalWriteLock", "WALBufMappingLock", "WALWriteLock", "ControlFileLock", "CheckpointLock",
    "CLogControlLock", "SubtransControlLock", "MultiXactGenLock", "MultiXactOffsetControlLock",
    "MultiXactMemberControlLock", "RelCacheInitLock", "CheckpointerCommLock", "TwoPhaseStateLock",
    "TablespaceCreateLock", "BtreeVacuumLock", "AddinShmemInitLock", "AutovacuumLock",
    "AutovacuumScheduleLock", "SyncScanLock", "RelationMappingLock", "AsyncCtlLock",
    "AsyncQueueLock", "SerializableXactHashLock", "SerializableFinishedListLock",
    "SerializablePredicateLockListLock", "OldSerXidLock", "SyncRepLock", "BackgroundWorkerLock",
    "DynamicSharedMemoryControlLock", "AutoFileLock", "ReplicationSlotAllocationLock",
    "ReplicationSlotControlLock")
_ADDED_95 = ("CommitTsControlLock", "CommitTsLock", "ReplicationOriginLock", "MultiXactTruncationLock")

# series -> (the individual locks by place (None: unused), whether the partitions follow them)
INDIVIDUAL: dict[str, tuple[tuple[str | None, ...], bool]] = {
    "9.4": (("BufFreelistLock", *_COMMON), True),
    "9.5": ((None, *_COMMON, *_ADDED_95), True),
    "9.6": ((None, *_COMMON, *_ADDED_95, "OldSnapshotTimeMapLock"), False),
}
# The partitioned tables after the individual locks (9.4, 9.5): name and partitions.
PARTITIONS = (("BufferMapping", 128), ("LockManager", 16), ("PredicateLockManager", 16))
_MAIN = re.compile(r"^main (\d+)$")


def series_of(version: str) -> str | None:
    """"9.5" for 9.5.25 or 9.5beta1; None for 10 and later (and anything else)."""
    m = re.match(r"^9\.(\d+)", version)
    return f"9.{m[1]}" if m else None


def lock_name(lock: str, version: str) -> str:
    """``lock`` as the report shows it: "ProcArrayLock (main 4)" for a 9.4-9.6 server, the
    partitions of a table as one lock ("BufferMapping (main 38-165)"); anything else as it is."""
    m = _MAIN.match(lock)
    known = INDIVIDUAL.get(series_of(version) or "")
    if m is None or known is None:
        return lock
    place, (names, partitioned) = int(m[1]), known
    if place < len(names):
        name = names[place]
        return f"{name} ({lock})" if name else lock
    first = len(names)
    for name, count in PARTITIONS if partitioned else ():
        if place < first + count:
            return f"{name} (main {first}-{first + count - 1})"
        first += count
    return lock  # an add-in's lock
