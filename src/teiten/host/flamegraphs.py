"""Folded stacks and flame graphs: what perf's profile of a server becomes, and what the report
reads from it. Stacks are folded as Brendan Gregg's FlameGraph scripts fold them ("frame;frame;
leaf count" per line); inferno (the maintained Rust port of those scripts: inferno-flamegraph,
inferno-diff-folded) draws them, found on PATH or where ``teiten system setup --for
flamegraphs`` built it. The profile monitor (teiten.monitors.profile) takes the stacks and says
in a trial's notes whether it was asked to and what went wrong, with the words below; the
report reads stacks and notes through this module, not through the monitor.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from teiten.host import procs, system


def tool(name: str) -> str | None:
    """A program from PATH, or from the bin directory of teiten's own Python (where
    `teiten system setup --for flamegraphs` installs inferno). ``$TEITEN_PERF`` names perf itself."""
    if name == "perf" and os.environ.get("TEITEN_PERF"):
        return shutil.which(os.environ["TEITEN_PERF"])
    return system.program(name)


def flamegraph(folded: str, *, title: str) -> str | None:
    """An interactive SVG flame graph of folded stacks (inferno-flamegraph)."""
    draw = tool("inferno-flamegraph")
    if draw is None or not folded.strip():
        return None
    return procs.run([draw, "--title", title, "--hash"], input=folded, timeout=300,
                     what="inferno-flamegraph").stdout


def diff_flamegraph(before: str, after: str, *, title: str) -> str | None:
    """A differential flame graph: the shape of ``after``, coloured by the change from
    ``before`` (red grew, blue shrank), as inferno-diff-folded draws it."""
    diff, draw = tool("inferno-diff-folded"), tool("inferno-flamegraph")
    if diff is None or draw is None or not before.strip() or not after.strip():
        return None
    with tempfile.TemporaryDirectory(prefix="teiten-diff-") as tmp:
        a, b = Path(tmp) / "before.folded", Path(tmp) / "after.folded"
        # safe: root's private directory
        a.write_text(before)
        b.write_text(after)
        # -n normalises the sample counts, so that profiles of different lengths compare.
        folded = procs.run([diff, "-n", str(a), str(b)], timeout=300, what="diff-folded").stdout
    return procs.run([draw, "--title", title], input=folded, timeout=300,
                     what="inferno-flamegraph").stdout


def samples(folded: str) -> Iterator[tuple[list[str], int]]:
    """Each stack of folded stacks, its frames root first, with its sample count; lines that
    are not "frame;frame;leaf count" are skipped."""
    for line in folded.splitlines():
        stack, _, number = line.rpartition(" ")
        if stack and number.isdigit():
            yield stack.split(";"), int(number)


def hot_functions(folded: str, *, top: int = 10) -> list[tuple[str, float]]:
    """The functions with the most samples at the top of the stack (self time), with their
    share of all samples, from folded stacks ("frame;frame;leaf count" per line)."""
    counts: dict[str, int] = {}
    total = 0
    for line in folded.splitlines():
        stack, _, number = line.rpartition(" ")
        if not stack or not number.isdigit():
            continue
        leaf = stack.rsplit(";", 1)[-1]
        counts[leaf] = counts.get(leaf, 0) + int(number)
        total += int(number)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    return [(name, n / total) for name, n in ranked] if total else []


def unnamed_shares(folded: str, binary: str = "postgres") -> tuple[float, float]:
    """The share of the samples whose stack passes through a function of the server that perf
    could not name (a frame written ``[postgres]``, after the binary: a build stripped of its
    static functions' symbols), and the share whose top frame is one (self time there).
    Other unnamed frames (``[unknown]`` kernel addresses, JIT code) are not the build's, and
    not counted."""
    unnamed = f"[{binary}]"
    total = through = top = 0
    for line in folded.splitlines():
        stack, _, number = line.rpartition(" ")
        if not stack or not number.isdigit():
            continue
        n = int(number)
        total += n
        frames = stack.split(";")
        if unnamed in frames:
            through += n
            top += n if frames[-1] == unnamed else 0
    return (through / total, top / total) if total else (0.0, 0.0)


# How the profile monitor's notes begin: asked for a profile, and why it gave no stacks.
ASKED = ("profile requested", "profiled with")
TROUBLE = ("profile requested, but", "the profile failed:", "no folded stacks")


def asked(notes: list[str]) -> bool:
    """Whether a trial's notes say it was to be profiled."""
    return any(n.startswith(ASKED) for n in notes)


def trouble(notes: list[str]) -> str | None:
    """The note that says why a trial's profile gave no folded stacks, if one does."""
    return next((n for n in notes if n.startswith(TROUBLE)), None)
