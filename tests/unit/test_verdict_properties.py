"""A property of the verdicts, checked on 1,000 seeded random stores: what the report prints for a
ratio is one thing. The marker of every ratio cell is exactly what the cell's own printed interval
says; the printed estimate lies inside that interval; the answer line says the same as the cell, in
the same digits; and the Japanese report puts the same marker in every cell.

Each store is built in memory as ``teiten report`` reads it (a :class:`StudyResults` of hand-made
trials, through :func:`teiten.analysis.summary.report_data` and the real renderers): 2-4 servers
(the first is the baseline), 1-2 workloads, 1-3 client counts, 3-20 blocks, each block one trial of
every point. The truth behind the TPS is drawn so that every verdict occurs: a true ratio per point
from {1.0, 1.02, 0.97, 1.1, 0.9, 1.3} times a small jitter, a noise CV from {0.5%, 1%, 3%, 10%,
30%}, a drift per block that all servers share, some trials disturbed (sometimes repeated in their
block, sometimes every trial of a point, so that no ratio exists there) or failed, and a margin that
is sometimes not 5%. The checks read only the printed text, except where the printed level alone
cannot say whether the family's level is reached (see :func:`_expected`).
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal

from teiten.analysis import summary
from teiten.analysis import verdicts as v
from teiten.analysis.inputs import ReportOptions, StudyData
from teiten.analysis.model import Point, ReportData
from teiten.features import FEATURES
from teiten.model.results import LoadFigures, PlannedTrial, ServerRecord, StudyResults, TrialRecord
from teiten.report.tables import ratio_cell
from teiten.words.answer import answer_lines
from teiten.words.context import Context

STORES = 1000
SERVERS = (("pg17", "17.7"), ("pg18", "18.1"), ("pg18-patched", "18.1"), ("pg19", "19devel"))
WORKLOADS = ("pgecons-read", "pgecons-update")
CLIENTS = (1, 2, 4, 8)
RATIOS = (1.0, 1.02, 0.97, 1.1, 0.9, 1.3)
CVS = (0.005, 0.01, 0.03, 0.1, 0.3)
MARGINS = (5.0, 5.0, 5.0, 2.0, 2.5, 3.0, 10.0)
DISTURBED = "foreign load: stress-ng used 1.9 CPUs"
FAILED = "pgbench exited with status 2: connection to server lost"
MARKS = {v.FASTER: "▲", v.SLOWER: "▼", v.SAME: "≈", v.UNSURE: "?"}

# 110.2% [108.7–112.2, 99.3%] ▲ (1 failed); — ? where there is no ratio; 103.2% ? with no interval.
CELL = re.compile(r"(?P<value>—|\d+\.\d%)(?: \[(?P<low>\d+\.\d)–(?P<high>\d+\.\d), (?P<level>\d+(?:\.\d)?)%\])?"
                  r" (?P<marker>[▲▼≈?])(?: (?P<failed>\(\d+ failed\)|（\d+ 件失敗）))?")
CLIENTS_EN = re.compile(r"(?P<list>\d+(?:, \d+)*) (?P<noun>clients?)")
FASTER_SLOWER = re.compile(r"(?P<diff>\d+\.\d)% (?P<word>faster|slower) at (?P<clients>.+?) "
                           r"\(ratio to baseline (?P<ratio>\d+\.\d)%, (?P<conf>\d+(?:\.\d)?)% CI "
                           r"(?P<low>\d+\.\d)–(?P<high>\d+\.\d)%\)")
SAME = re.compile(r"no difference within ±(?P<margin>[\d.]+)% at (?P<clients>.+?) \(every interval within "
                  r"(?P<low>\d+\.\d)–(?P<high>\d+\.\d)%, (?P<conf>.+)% CI\)")
CANNOT = re.compile(r"cannot tell at (?P<clients>.+?): (?P<why>.+)")
SPAN = re.compile(r"the intervals span (?P<low>\d+\.\d)–(?P<high>\d+\.\d)% at ")


# --- the stores --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Store:
    """One random store and what its generator knows: the margin it was given and, per (server,
    workload, clients), how many of its trials succeeded."""

    seed: int
    study: StudyResults
    margin_pct: float
    ok: dict[tuple[str, str, int], int]


def _figures(tps: float, clients: int) -> LoadFigures:
    return LoadFigures(tps=tps, transactions=int(tps), failed_transactions=0, duration_s=1.0,
                       latency_ms_avg=1000 * clients / tps, latency_ms_stddev=None,
                       initial_connection_ms=None, pgbench_version="18.1")


def random_store(seed: int) -> Store:
    """A finished study drawn from ``random.Random(seed)``: TPS of server s at a point in block r
    is 1000 · clients · drift_r · ratio_s · log-normal noise; the baseline's ratio is 1."""
    rng = random.Random(seed)
    servers = SERVERS[:rng.randint(2, 4)]
    chosen = rng.sample(WORKLOADS, rng.randint(1, 2))
    workloads = tuple(w for w in WORKLOADS if w in chosen)
    clients = tuple(sorted(rng.sample(CLIENTS, rng.randint(1, 3))))
    blocks = rng.randint(3, 20)
    margin = rng.choice(MARGINS)
    cv = rng.choice(CVS)
    sigma = math.sqrt(math.log(1 + cv**2))
    p_disturbed = rng.choice((0.0, 0.0, 0.05, 0.15))
    p_failed = rng.choice((0.0, 0.0, 0.03))
    points = [(s, w, c) for s, _ in servers for w in workloads for c in clients]
    ratio = {(s, w, c): 1.0 if s == servers[0][0] else rng.choice(RATIOS) * math.exp(rng.gauss(0, 0.003))
             for s, w, c in points}
    # Sometimes every trial of a point is disturbed: no ratio there (for every server, when the
    # point is the baseline's).
    gone = set(rng.sample(points, rng.randint(1, 2))) if rng.random() < 0.35 else set()
    drift = {r: math.exp(rng.gauss(0, 0.05)) for r in range(1, blocks + 1)}
    trials: list[TrialRecord] = []
    ok: Counter[tuple[str, str, int]] = Counter()
    order = 0
    for r in range(1, blocks + 1):
        for s, w, c in rng.sample(points, len(points)):  # each block in its own random order
            order += 1
            tid = f"t{order}"
            planned = PlannedTrial(tid, order, s, w, c, 1, r, 1.0)
            tps = 1000 * c * drift[r] * ratio[(s, w, c)] * math.exp(rng.gauss(-sigma**2 / 2, sigma))
            if (s, w, c) in gone or rng.random() < p_disturbed:
                trials.append(TrialRecord(planned, 1, "s", "disturbed", error=DISTURBED,
                                          figures=_figures(tps, c)))
                if (s, w, c) in gone or rng.random() < 0.5:
                    continue
                # The noise guard repeated it in its block: a new draw of the same point.
                order += 1
                planned = PlannedTrial(f"{tid}.2", order, s, w, c, 1, r, 1.0, repeat_of=tid)
                tps = 1000 * c * drift[r] * ratio[(s, w, c)] * math.exp(rng.gauss(-sigma**2 / 2, sigma))
            if rng.random() < p_failed:
                trials.append(TrialRecord(planned, 1, "s", "failed", error=FAILED))
                continue
            trials.append(TrialRecord(planned, 1, "s", "ok", figures=_figures(tps, c)))
            ok[(s, w, c)] += 1
    study = {"clients": list(clients), "repetitions": blocks, "duration": 1, "scale": 1,
             "order": "random", "seed": seed}
    if margin != v.MARGIN_PCT or rng.random() < 0.5:
        study["margin_pct"] = margin
    spec = {"study": study, "workloads": [{"key": w} for w in workloads]}
    records = tuple(ServerRecord(name, i, "local", {}, {"version": version})
                    for i, (name, version) in enumerate(servers))
    results = StudyResults(1, "s", "s.yaml", "", spec, seed, "finished", "2026-11-26T00:00:00+00:00",
                           "2026-11-26T01:00:00+00:00", {}, "test", records, tuple(trials))
    return Store(seed, results, margin, dict(ok))


def report(store: Store, lang: str = "en") -> ReportData:
    """The report's data, as ``teiten report`` builds it."""
    return summary.report_data(StudyData(store.study, features=FEATURES),
                               ReportOptions("/tmp/s.db", "2026-11-26", lang=lang))


# --- reading what is printed ---------------------------------------------------------------------


@dataclass(frozen=True)
class Printed:
    """A ratio cell as printed: its estimate, interval bounds and level (as printed digits), marker."""

    text: str
    value: str | None
    low: str | None
    high: str | None
    level: str | None
    marker: str


def read_cell(text: str) -> Printed:
    found = CELL.fullmatch(text)
    assert found, f"unreadable ratio cell {text!r}"
    value = found["value"]
    return Printed(text, None if value == "—" else value.removesuffix("%"), found["low"], found["high"],
                   found["level"], found["marker"])


def printed_level(level: float) -> Decimal:
    """A level as the report prints it: in percent, rounded down to 0.1 (99.72% → 99.7)."""
    return Decimal(math.floor(level * 1000 + 1e-6)) / 10


def _expected(cell: Printed, point: Point, family: float, margin: Decimal) -> tuple[str, str]:
    """The marker (and the reason, for "?") the printed cell calls for: ≈ where the interval lies
    inside [100 − m, 100 + m], even where it also excludes 100% (the margin says what difference
    does not matter: :mod:`teiten.analysis.verdicts`); else ▲ where it lies wholly above 100%, ▼
    wholly below; else ?.

    Whether the interval reaches the family's level is read from the printed level where it can
    be: both levels are printed rounded down to 0.1%, so a printed level below the family's
    printed one has not reached it and one above it has. Where the two print alike (99.7% against
    a family level of 99.72%), the digits cannot say, and the level the model computed decides.
    """
    if cell.value is None:
        return "?", v.NO_RATIO
    if cell.low is None or cell.high is None or cell.level is None:
        return "?", v.NO_INTERVAL
    level, needed = Decimal(cell.level), printed_level(family)
    if level < needed:
        return "?", v.SHORT
    if level == needed:
        assert point.ratio_ci_level is not None
        if point.ratio_ci_level < family - 1e-9:
            return "?", v.SHORT
    low, high = Decimal(cell.low), Decimal(cell.high)
    if 100 - margin <= low and high <= 100 + margin:
        return "≈", ""
    if low > 100:
        return "▲", ""
    if high < 100:
        return "▼", ""
    return "?", v.WIDE


def _clients(text: str) -> list[int]:
    """``1 client`` / ``1, 2 clients`` (:func:`teiten.messages.clients_phrase`) as client counts."""
    found = CLIENTS_EN.fullmatch(text)
    assert found, f"unreadable client counts {text!r}"
    counts = [int(c) for c in found["list"].split(", ")]
    assert (found["noun"] == "client") == (counts == [1]), text
    return counts


@dataclass(frozen=True)
class Part:
    """One part of an answer line: its kind (faster, slower, no-difference or cannot-tell), the
    client counts it names and what it prints."""

    kind: str
    clients: tuple[int, ...]
    text: str
    fields: dict[str, str]


def read_answer(line: str, workload: str, server: str, baseline: str) -> list[Part]:
    prefix = f"{workload}: {server} against {baseline}: "
    assert line.startswith(prefix) and line.endswith("."), line
    parts = []
    for text in line[len(prefix):-1].split("; "):
        if found := FASTER_SLOWER.fullmatch(text):
            kind = v.FASTER if found["word"] == "faster" else v.SLOWER
        elif found := SAME.fullmatch(text):
            kind = v.SAME
        elif found := CANNOT.fullmatch(text):
            kind = v.UNSURE
        else:
            raise AssertionError(f"unreadable part {text!r} of {line!r}")
        parts.append(Part(kind, tuple(_clients(found["clients"])), text, found.groupdict()))
    return parts


def _why(text: str) -> str:
    """The reason a cannot-tell part gives, from its words."""
    if "short of the" in text:
        return v.SHORT
    if "neither wholly above or below 100%" in text:
        return v.WIDE
    if "one block gives no interval" in text:
        return v.NO_INTERVAL
    if "no ratio" in text:
        return v.NO_RATIO
    raise AssertionError(f"a cannot-tell part without a reason: {text!r}")


# --- the property ------------------------------------------------------------------------------


def check_store(store: Store, counts: Counter[str]) -> None:
    """Every non-baseline point of ``store``: the cell, the answer line and the Japanese cell agree
    with the printed interval. Adds each point's verdict (and reason) to ``counts``."""
    data = report(store)
    ja = report(store, "ja")
    ctx, ctx_ja = Context.of(data), Context.of(ja)
    margin = Decimal(str(store.margin_pct))
    # The family: every non-baseline point where both it and the baseline have a successful trial.
    base = store.study.servers[0].name
    m = sum(1 for (s, w, c), n in store.ok.items() if s != base and n and store.ok.get((base, w, c)))
    family = v.family_level(m)
    lines = {line.split(" against ")[0]: line for line in answer_lines(data)}
    for sec, sec_ja in zip(data.sections, ja.sections, strict=True):
        for series, series_ja in zip(sec.servers, sec_ja.servers, strict=True):
            if series.server == sec.baseline:
                continue
            line = lines.pop(f"{sec.workload}: {series.server}")
            parts = read_answer(line, sec.workload, series.server, sec.baseline)
            named = Counter(c for part in parts for c in part.clients)
            assert named == Counter(sec.clients), f"each client count once: {line!r}"
            for point in series.points:
                c = point.clients
                cell = read_cell(ratio_cell(sec, series, c, ctx).text)
                where = f"seed {store.seed}, {sec.workload}, {series.server}, clients={c}: {cell.text!r}"
                counts[point.verdict] += 1
                counts[f"{point.verdict}:{point.reason}"] += 1
                # Where the printed level equals the family's printed one, the model's level decided.
                counts["level printed as the family's"] += cell.level is not None and \
                    Decimal(cell.level) == printed_level(family)
                has_ratio = bool(store.ok.get((series.server, sec.workload, c)) and
                                 store.ok.get((base, sec.workload, c)))
                assert (cell.value is not None) == has_ratio, where
                if has_ratio:
                    assert point.comparisons == m, where

                # 1. The printed estimate lies within the printed interval.
                if cell.low is not None and cell.high is not None and cell.value is not None:
                    assert Decimal(cell.low) <= Decimal(cell.value) <= Decimal(cell.high), where

                # 2. The marker is what the printed interval says.
                marker, reason = _expected(cell, point, family, margin)
                assert cell.marker == marker, f"{where}: expected {marker} ({reason}), m={m}"
                assert (MARKS[point.verdict], point.reason) == (marker, reason), where
                counts["≈ excluding 100%"] += marker == "≈" and cell.low is not None and \
                    cell.high is not None and (Decimal(cell.low) > 100 or Decimal(cell.high) < 100)

                # 3. The answer line says the same, in the same digits.
                (part,) = [p for p in parts if c in p.clients]
                said = f"{where}; answer: {line!r}"
                assert part.kind == {"▲": v.FASTER, "▼": v.SLOWER, "≈": v.SAME, "?": v.UNSURE}[marker], said
                if part.kind in (v.FASTER, v.SLOWER):
                    assert part.clients == (c,), said
                    f = part.fields
                    assert (f["ratio"], f["low"], f["high"], f["conf"]) == (
                        cell.value, cell.low, cell.high, cell.level), said
                    assert Decimal(f["diff"]) == abs(Decimal(f["ratio"]) - 100), said
                    assert (Decimal(f["ratio"]) > 100) == (part.kind == v.FASTER), said
                elif part.kind == v.SAME:
                    f = part.fields
                    assert f["margin"] == f"{store.margin_pct:g}", said
                    assert cell.level is not None and cell.level in f["conf"].split(", "), said
                    assert cell.low is not None and cell.high is not None
                    assert 100 - margin <= Decimal(f["low"]) <= Decimal(cell.low), said
                    assert Decimal(cell.high) <= Decimal(f["high"]) <= 100 + margin, said
                else:
                    assert _why(part.text) == reason, said
                    if (span := SPAN.search(part.text)) and cell.low is not None and cell.high is not None:
                        assert Decimal(span["low"]) <= Decimal(cell.low), said
                        assert Decimal(cell.high) <= Decimal(span["high"]), said

                # 4. The Japanese report: the same figures and marker.
                cell_ja = read_cell(ratio_cell(sec_ja, series_ja, c, ctx_ja).text)
                assert (cell_ja.value, cell_ja.low, cell_ja.high, cell_ja.level, cell_ja.marker) == (
                    cell.value, cell.low, cell.high, cell.level, cell.marker), f"{where}; ja: {cell_ja.text!r}"
    assert not lines, f"seed {store.seed}: answer lines for no series: {lines}"


def test_every_printed_verdict_is_read_from_its_printed_interval() -> None:
    """1,000 random stores: each ratio cell's marker is exactly what its printed interval says
    (▲ above 100%, ▼ below, ≈ inside ±m%, ? otherwise or below the family's level), its estimate
    lies inside it, the answer line says the same in the same digits, and the Japanese report puts
    the same marker in the cell. Every verdict, and each reason to be unsure the stores can give,
    occurs often enough that the property is not met by never being tested."""
    counts: Counter[str] = Counter()
    failures: list[str] = []
    for seed in range(STORES):
        try:
            check_store(random_store(seed), counts)
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} stores fail; the first:\n" + "\n".join(failures[:5])
    print(dict(sorted(counts.items())))
    for key in (v.FASTER, v.SLOWER, v.SAME, v.UNSURE,
                f"{v.UNSURE}:{v.NO_RATIO}", f"{v.UNSURE}:{v.SHORT}", f"{v.UNSURE}:{v.WIDE}",
                "≈ excluding 100%"):
        assert counts[key] >= 20, f"{key} occurred {counts[key]} times: {dict(counts)}"

