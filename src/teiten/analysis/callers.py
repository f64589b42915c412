"""Who calls the hottest function of a profile (METHODS S4: the IPA paper read oprofile's call
graph of its hottest function, s_lock, and found it called from LWLockAcquire in ReadBuffer:
the buffer-mapping lock). From folded stacks, the chains of callers under the samples in which
the function itself was running (its self time, as :func:`teiten.host.flamegraphs.hot_functions`
ranks it), each with its share of those samples.

The choice is this module's: a chain is the CALLER_DEPTH frames nearest the function (the
paper's two: LWLockAcquire, then ReadBuffer), and the TOP_CHAINS chains with the most samples
are kept, the ties by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from teiten.host.flamegraphs import samples
from teiten.model.details import ProfileDetails
from teiten.model.results import Point, TrialRecord

CALLER_DEPTH = 2
TOP_CHAINS = 3

Chain = tuple[str, ...]  # the callers, nearest first: ("LWLockAcquire", "ReadBuffer")
# Per profiled point: the hottest function and the chains of its callers with their share of
# its own samples.
Callers = Mapping[Point, tuple[str, tuple[tuple[Chain, float], ...]]]


def callers(folded: str, function: str, *, depth: int = CALLER_DEPTH,
            top: int = TOP_CHAINS) -> tuple[tuple[Chain, float], ...]:
    """The chains of callers of ``function`` where it is the leaf of a stack (its self time):
    the ``depth`` frames under it, nearest first, with their share of its samples; the ``top``
    chains with the most samples. A stack with fewer frames under it gives a shorter chain
    (an empty one when the function is the stack's only frame)."""
    counts: dict[Chain, int] = {}
    total = 0
    for frames, n in samples(folded):
        if frames[-1] != function:
            continue
        chain = tuple(reversed(frames[max(0, len(frames) - 1 - depth):-1]))
        counts[chain] = counts.get(chain, 0) + n
        total += n
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return tuple((chain, n / total) for chain, n in ranked) if total else ()


def hot_callers(trials: Sequence[TrialRecord], profiles: Mapping[str, ProfileDetails],
                hot: Mapping[Point, Sequence[tuple[str, float]]]) -> Callers:
    """Of every profiled point, its hottest function (``hot``'s first) and who calls it, from
    the same profile ``hot`` was ranked from (a point's last)."""
    out: dict[Point, tuple[str, tuple[tuple[Chain, float], ...]]] = {}
    for t in trials:
        prof = profiles.get(t.trial_id)
        if prof and prof.folded and hot.get(t.point):
            function = hot[t.point][0][0]
            out[t.point] = (function, callers(prof.folded, function))
    return out
