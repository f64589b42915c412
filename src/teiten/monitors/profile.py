"""Profiles of the server during the measured window: ``perf record`` of the postmaster
and every process it forks, folded stacks, and flame graphs (METHODS S1 2021: where two
versions differ most, a FlameGraph of each explains why).

Flame graphs are drawn by inferno (the maintained Rust port of Brendan Gregg's
FlameGraph scripts: inferno-collapse-perf, inferno-flamegraph, inferno-diff-folded);
`make` installs it into the virtualenv with cargo. On a virtual machine hardware events
are usually "not supported": teiten then samples the software cpu-clock event. When
neither perf nor inferno is usable, the trial says so in its notes, never silently.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

from teiten.host import procs, system
from teiten.host.flamegraphs import flamegraph, tool
from teiten.host.waiting import wait_until
from teiten.model.details import PROFILE, ProfileDetails
from teiten.model.errors import ProcessError, TeitenError
from teiten.model.results import Evidence
from teiten.monitors.base import Ended, Monitor, MonitorKind, Window
from teiten.spec.study import ProfileSpec

FREQUENCY = 99  # Hz: not a multiple of common timer frequencies (Brendan Gregg's advice)


class ProfileUnavailable(TeitenError):
    """perf cannot profile here; the message says why and what would fix it."""


@cache
def perf_event(wanted: str = "auto") -> str:
    """The perf event to sample: hardware cycles where supported, else cpu-clock."""
    perf = tool("perf")
    if perf is None:
        raise ProfileUnavailable("perf is not installed (Debian: apt-get install linux-perf)")
    if wanted != "auto":
        return wanted
    try:
        done = procs.run([perf, "stat", "-e", "cycles", "true"], timeout=30, check=False)
    except ProcessError as exc:
        raise ProfileUnavailable(f"perf does not run: {exc}") from exc
    supported = done.returncode == 0 and "not supported" not in done.stderr \
        and "<not counted>" not in done.stderr
    return "cycles" if supported else "cpu-clock"


class Profiler:
    """``perf record --call-graph dwarf -p POSTMASTER``: child processes forked after the
    start (the backends of the benchmark's clients) are followed."""

    def __init__(self, pid: int, *, title: str, event: str = "auto", frequency: int = FREQUENCY):
        self.pid = pid
        self.title = title
        self.event = perf_event(event)
        self.frequency = frequency
        # safe: a private directory of root's (0700) for perf's files
        self.dir = Path(tempfile.mkdtemp(prefix="teiten-perf-"))
        self.data = self.dir / "perf.data"
        self._perf: procs.Background | None = None

    def start(self, *, timeout: float = 30) -> None:
        """Start perf and return once it is attached and sampling.

        perf follows only the children forked *after* it attached, and pgbench's clients
        connect (fork their backends) at once: so perf starts disabled, and teiten enables
        it through perf's control FIFO and waits for the acknowledgement.
        """
        perf = tool("perf")
        assert perf is not None
        ctl, ack = self.dir / "ctl", self.dir / "ack"
        # safe: perf's FIFOs in root's private directory
        os.mkfifo(ctl)
        os.mkfifo(ack)
        # PostgreSQL is built without frame pointers: unwind with DWARF.
        self._perf = procs.spawn([perf, "record", "-e", self.event, "-F", str(self.frequency),
                                  "--call-graph", "dwarf,16384", "-p", str(self.pid),
                                  "-D", "-1", "--control", f"fifo:{ctl},{ack}",
                                  "-o", str(self.data)], what="perf record")
        perf_proc = self._perf

        def open_ctl() -> int | None:
            if not perf_proc.alive():
                raise ProfileUnavailable(
                    f"perf record ended at once: {procs.tail(perf_proc.stop().stderr)}")
            try:  # ENXIO until perf has opened its end of the FIFO
                # safe: perf's FIFO in root's private directory
                return os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:
                return None

        fd = wait_until(open_ctl, timeout=timeout, what="perf to open its control FIFO",
                        error=ProfileUnavailable)
        # safe: perf's FIFO in root's private directory
        ack_fd = os.open(ack, os.O_RDONLY | os.O_NONBLOCK)
        try:
            os.write(fd, b"enable\n")
            reply = b""

            def acked() -> bool:
                nonlocal reply
                with contextlib.suppress(BlockingIOError):
                    reply += os.read(ack_fd, 64)
                return b"ack" in reply

            wait_until(acked, timeout=timeout, what="perf to start sampling",
                       error=ProfileUnavailable)
        finally:
            os.close(fd)
            os.close(ack_fd)

    def stop(self) -> ProfileDetails:
        assert self._perf is not None
        try:
            done = self._perf.stop()
            if not self.data.is_file():
                raise ProfileUnavailable(f"perf record wrote nothing: {procs.tail(done.stderr)}")
            return self._fold()
        finally:
            # safe: root's private directory
            shutil.rmtree(self.dir, ignore_errors=True)

    def _fold(self) -> ProfileDetails:
        perf = tool("perf")
        assert perf is not None
        # --no-inline: perf would ask binutils' addr2line for inlined frames, slowly, and fail
        # where binutils is not installed (a minimal Debian); flame graphs do not show them.
        script = procs.run([perf, "script", "--no-inline", "-i", str(self.data)], timeout=600,
                           what="perf script")
        collapse = tool("inferno-collapse-perf")
        if collapse is None:
            return ProfileDetails(self.event, self.frequency, script.stdout.count("\n\n"), "",
                           notes=(f"no folded stacks or flame graph: {system.inferno_hint()}",))
        folded = procs.run([collapse], input=script.stdout, timeout=600, what="collapse").stdout
        # perf script prints one block per sample, separated by blank lines.
        samples = sum(1 for block in script.stdout.split("\n\n") if block.strip())
        return ProfileDetails(self.event, self.frequency, samples, folded,
                       svg=flamegraph(folded, title=self.title))


def start_profile(pid: int | None, event: str, frequency: int, notes: list[str], *,
          title: str) -> Profiler | None:
    """A started profiler of the postmaster ``pid`` and its children, or None with a note
    that says why not (the server does not run here, perf cannot be used)."""
    if pid is None:
        notes.append("profile requested, but the server does not run on this machine")
        return None
    try:
        profiler = Profiler(pid, title=title, event=event, frequency=frequency)
        profiler.start()
    except (TeitenError, OSError) as exc:
        notes.append(f"profile requested, but it cannot be taken: {exc}")
        return None
    notes.append(f"profiled with perf ({profiler.event} at {profiler.frequency} Hz)")
    return profiler


def stop_profile(profiler: Profiler | None, notes: list[str]) -> ProfileDetails | None:
    """The profile of a started profiler (None, with a note, when it failed)."""
    if profiler is None:
        return None
    try:
        profile = profiler.stop()
    except (TeitenError, OSError) as exc:
        notes.append(f"the profile failed: {exc}")
        return None
    notes.extend(profile.notes)
    return profile


class ProfileWatch(Monitor):
    """A perf profile of the server over the window of a trial the study asks to profile: its
    details ``profile``; why none could be taken, in the trial's notes."""

    def __init__(self, window: Window, wanted: ProfileSpec):
        self.window, self.wanted = window, wanted
        self.profiler: Profiler | None = None
        self.profile: ProfileDetails | None = None

    def start(self) -> None:
        t = self.window.trial
        self.profiler = start_profile(self.window.server.server_pid(), self.wanted.event,
                                      self.wanted.frequency, self.window.notes,
                                      title=f"{t.server} · {t.workload} · {t.clients} clients")

    def stop(self) -> None:
        self.profile = stop_profile(self.profiler, self.window.notes)

    def contribute(self, evidence: Evidence, ended: Ended) -> None:
        if self.profile is not None:
            PROFILE.put(evidence.details, self.profile)


def _profile(window: Window) -> ProfileWatch | None:
    wanted, t = window.profile, window.trial
    if wanted is None or not wanted.wants(t.server, t.workload, t.clients, t.repetition, t.purpose):
        return None
    return ProfileWatch(window, wanted)


# Outermost: perf takes a while to attach, and must not be in any other monitor's window.
KIND = MonitorKind("profile", _profile, layer=0)
