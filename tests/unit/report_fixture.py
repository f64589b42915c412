"""A hand-built ReportData for the report tests, its statistics filled in by the real
analysis functions (teiten.analysis.compare), so the tests see what a real study gives.

Two workloads on pg17 (the baseline) and pg18 at 1, 2 and 4 clients:

- pgecons-read, 3 repetitions per point: too few for the Mann-Whitney test to reach 5%,
  so every ratio is "?" (needs 4). pg18 has no successful repetition at 2 clients (3
  failed).
- pgecons-update, 4 repetitions: pg18 is significantly faster at 2 clients (no overlap),
  not significantly different at 1, significantly slower at 4. A third server whose
  user-chosen name carries markup proves every renderer escapes it. It also carries
  monitor data (activity) for pg17 at 1, 2 and 4 clients and for pg18 at 1 and 4 (none at
  2), flame graphs for pg18 and the third server, and a 性能低下率 table of pg18 against
  pg17.

Three per-second series (one of them of the markup-named server, failed, empty).
"""

from __future__ import annotations

from dataclasses import replace

from teiten.analysis import compare
from teiten.analysis.model import (
    Activity,
    Notice,
    Point,
    ReportData,
    ServerInfo,
    ServerSeries,
    TrialSeries,
    WorkloadSection,
)

EVIL = 'dev<script>&"x'
CLIENTS = (1, 2, 4)
WORKLOADS = ("pgecons-read", "pgecons-update")

# server -> workload -> per client count: (TPS of every successful repetition, median
# latency in ms, failed repetitions)
MEASURED: dict[str, dict[str, list[tuple[tuple[float, ...], float | None, int]]]] = {
    "pg17": {
        "pgecons-read": [((999.0, 1000.0, 1002.0), 1.0, 0), ((1799.0, 1800.0, 1802.0), 1.111, 0),
                         ((3199.0, 3200.0, 3202.0), 1.25, 0)],
        "pgecons-update": [((494.0, 498.0, 500.0, 500.0, 503.0, 506.0), 2.0, 0),
                           ((891.0, 895.0, 899.0, 901.0, 905.0, 909.0), 2.222, 0),
                           ((1486.0, 1490.0, 1498.0, 1502.0, 1510.0, 1514.0), 2.667, 1)],
    },
    "pg18": {
        "pgecons-read": [((1049.0, 1050.0, 1052.0), 0.952, 0), ((), None, 3),
                         ((3099.0, 3100.0, 3102.0), 1.29, 0)],
        "pgecons-update": [((493.0, 496.0, 504.0, 506.0, 515.0, 518.0), 1.98, 0),
                           ((981.0, 985.0, 989.0, 991.0, 995.0, 999.0), 2.02, 0),
                           ((1456.0, 1460.0, 1468.0, 1472.0, 1480.0, 1484.0), 2.721, 0)],
    },
    EVIL: {
        "pgecons-update": [((391.0, 395.0, 399.0, 401.0, 405.0, 409.0), 2.5, 0),
                           ((691.0, 695.0, 699.0, 701.0, 705.0, 709.0), 2.857, 0),
                           ((1391.0, 1395.0, 1399.0, 1401.0, 1405.0, 1409.0), 2.857, 0)],
    },
}

CPU_KEYS = ("user", "sys", "iowait", "steal", "irq", "idle")

# server -> [(clients, cpu parts in CPU_KEYS order, waits, (data, wal) %util, checkpoints,
# autovacuum)], for pgecons-update only. pg17's waits at 2 and 4 clients sum to 0.95 and
# 0.9 (the rest is "other"); its CPU at 4 clients sums to 99.9, not 100.
ACTIVITY: dict[str, list[tuple[int, tuple[float, ...], dict[str, float], tuple[float, float],
                               int, int]]] = {
    "pg17": [
        (1, (40.0, 10.0, 5.0, 0.0, 1.0, 44.0),
         {"CPU:CPU": 0.5, "IO:WalSync": 0.3, "Lock:transactionid": 0.2}, (12.5, 30.4), 0, 1),
        (2, (55.5, 14.25, 7.75, 0.5, 2.0, 20.0),
         {"IO:WalSync": 0.45, "CPU:CPU": 0.35, "LWLock:WALWrite": 0.1, "Lock:transactionid": 0.05},
         (20.0, 41.0), 0, 0),
        (4, (61.3, 20.2, 9.9, 0.3, 1.4, 6.8),
         {"Lock:transactionid": 0.4, "CPU:CPU": 0.3, "IO:WalSync": 0.2}, (33.3, 60.1), 0, 0),
    ],
    "pg18": [
        (1, (41.5, 9.5, 4.0, 0.0, 1.0, 44.0), {"CPU:CPU": 0.6, "IO:WalSync": 0.4},
         (11.0, 29.9), 0, 0),
        (4, (64.0, 18.0, 8.0, 0.0, 2.0, 8.0),
         {"CPU:CPU": 0.45, "Lock:transactionid": 0.3, "IO:WalSync": 0.25}, (70.0, 85.5), 1, 0),
    ],
}
PROFILES = {
    "pg18": ((4, "profiles/pgecons-update-pg18-4.svg"),),
    EVIL: ((1, 'javascript:alert("x")'),),
}

SERIES = (
    TrialSeries("t-read-1", "pg17", "pgecons-read", 1, 1, "ok",
                (120.0, 640.0, 980.0, 1000.0, 1004.0, 998.0, 1001.0, 1003.0),
                (8.1, 1.6, 1.02, 1.0, 0.99, 1.0, None, 1.0), 2, 0, 0.4),
    TrialSeries("t-update-4", "pg18", "pgecons-update", 4, 2, "ok",
                (1400.0, 1480.0, 1470.0, 600.0, 1475.0, 1469.0),
                (2.9, 2.7, 2.72, 6.6, 2.71, 2.72), 0, 1, -3.25),
    TrialSeries("t-evil", EVIL, "pgecons-update", 2, 1, "failed", (), (), 0, 0, 0.0),
)


def _activity(name: str, workload: str) -> tuple[Activity, ...]:
    if workload != "pgecons-update":
        return ()
    return tuple(
        Activity(clients, dict(zip(CPU_KEYS, cpu, strict=True)), waits,
                 {"data": util[0], "wal": util[1]}, checkpoints, autovacuum)
        for clients, cpu, waits, util, checkpoints, autovacuum in ACTIVITY.get(name, [])
    )


def _median(values: tuple[float, ...]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def _plain(name: str, workload: str) -> list[Point]:
    base = MEASURED["pg17"][workload]
    points = []
    for clients, (values, lat, failed), (base_values, _, _) in zip(
            CLIENTS, MEASURED[name][workload], base, strict=True):
        tps, base_tps = _median(values), _median(base_values)
        ratio = None if tps is None or base_tps is None else tps / base_tps
        lats = () if lat is None else (round(lat * 0.98, 3), lat, round(lat * 1.03, 3))
        points.append(Point(clients, tps, lat, values, len(values), failed, ratio,
                            latency_values=lats))
    return points


def _mean_diff(mine: list[float | None], base: list[float | None]) -> float | None:
    diffs = [(m / b - 1) * 100 for m, b in zip(mine, base, strict=True) if m and b]
    return sum(diffs) / len(diffs) if diffs else None


def _section(workload: str) -> WorkloadSection:
    names = [s for s in MEASURED if workload in MEASURED[s]]
    base_points = _plain("pg17", workload)
    series = []
    for i, name in enumerate(names):
        plain = _plain(name, workload)
        points = tuple(compare.with_statistics(p, b, is_baseline=i == 0)
                       for p, b in zip(plain, base_points, strict=True))
        is_base = i == 0
        s = ServerSeries(
            server=name, version="17.5" if is_base else "18.1", points=points,
            mean_tps_diff_pct=None if is_base else _mean_diff(
                [p.tps_median for p in plain], [p.tps_median for p in base_points]),
            mean_latency_diff_pct=None if is_base else _mean_diff(
                [p.latency_ms_median for p in plain], [p.latency_ms_median for p in base_points]),
            activity=_activity(name, workload),
            profiles=PROFILES.get(name, ()) if workload == "pgecons-update" else ())
        series.append(replace(s, saturation=compare.saturation_of(s)))
    section = WorkloadSection(workload=workload, description=f"{workload} from the PGECons WG1 report",
                              baseline="pg17", clients=CLIENTS, servers=tuple(series))
    return section


def _with_degradation(section: WorkloadSection) -> WorkloadSection:
    """The update workload's S5 table of pg18 against pg17, made as the report makes it: after
    the family's verdicts (teiten.report.build)."""
    if section.workload != "pgecons-update":
        return section
    return replace(section, degradations=(compare.degradation(section, "pg17", "pg18"),))


def report_data(lang: str = "en") -> ReportData:
    servers = tuple(
        ServerInfo(name=s, kind="local", version="17.5" if s == "pg17" else "18.1",
                   origin="pgdg apt", bindir=f"/usr/lib/postgresql/{s}/bin",
                   data_checksums=s != "pg17",
                   settings={"shared_buffers": "128MB", "work_mem": "1GB"})
        for s in MEASURED
    )
    return ReportData(
        study="s1-read <test>",
        description="PG 17 vs 18",
        generated_at="2026-05-09T12:00:00+00:00",
        store_path="/tmp/store.sqlite",
        duration_s=3.0,
        repetitions=3,
        scale=1,
        order="random",
        seed=42,
        fingerprint={"cpu": "Test CPU", "cores": 8, "disks": [{"dev": "nvme0n1", "rot": False}]},
        servers=servers,
        sections=tuple(_with_degradation(sec) for sec in
                       compare.with_family(tuple(_section(w) for w in WORKLOADS))),
        status_counts={"planned": 0, "running": 0, "ok": 52, "failed": 4, "skipped": 0},
        warnings=(Notice("trial-failed", {"trial": "t1", "server": "pg18", "workload":
                                          "pgecons-read", "clients": 2, "repetition": 3,
                                          "error": "3 of 3 repetitions failed"}),
                  Notice("trial-skipped", {"trial": "t2", "server": "<b>x</b>", "workload": "w",
                                           "clients": 1, "repetition": 1, "error": "e"})),
        lang=lang,
        series=SERIES,
    )
