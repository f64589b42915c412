"""The rows of the view ``teiten_points`` in the formats of tools that track benchmarks:
Bencher's Metric Format (BMF, JSON) and OpenMetrics text (Prometheus). Pure functions over the
rows as :func:`teiten.store.points.read` gives them (docs/DESIGN.md, "Results others read").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import datetime

from teiten.model.results import PointRow

Row = PointRow

# OpenMetrics: each family's value column in the view; a row without a value has no sample.
FAMILIES = (("teiten_tps", "value"), ("teiten_tps_low", "low"), ("teiten_tps_high", "high"),
            ("teiten_ratio_estimate_pct", "estimate_pct"), ("teiten_ratio_pct", "ratio_pct"),
            ("teiten_ratio_low_pct", "low_pct"), ("teiten_ratio_high_pct", "high_pct"))
# The labels of every sample: together they name one row of the view.
LABELS = ("testbed", "study", "study_id", "workload", "clients", "server", "baseline", "build")
EMULATED = " (emulated)"  # BMF: the name of an emulation's benchmark ends so; OpenMetrics: emulated="true"


def bmf(rows: Sequence[Row]) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format: a benchmark per server and point (``STUDY/WORKLOAD/clients=N/
    SERVER``) with the measure ``throughput`` (median TPS and its interval) and, for a server
    compared with a baseline, ``ratio`` (the report's ratio in percent and its interval). The
    figures of an emulated server (or of a ratio to one) are named ``... (emulated)``: never the
    series of a measured one."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in rows:
        shown = r.estimate_pct if r.estimate_pct is not None else r.ratio_pct
        figures = (("throughput", r.value, r.low, r.high), ("ratio", shown, r.low_pct, r.high_pct))
        measures = {name: _metric(value, low, high) for name, value, low, high in figures
                    if value is not None}
        if measures:  # an emulation's figures are a benchmark of their own, named so
            out[f"{r.benchmark}/{r.server}" + (EMULATED if r.emulated else "")] = measures
    return out


def _metric(value: float, low: float | None, high: float | None) -> dict[str, float]:
    found = {"value": float(value)}
    if low is not None and high is not None:
        found.update(lower_value=float(low), upper_value=float(high))
    return found


def openmetrics(rows: Sequence[Row]) -> str:
    """OpenMetrics text: one gauge family per figure (TPS and its interval, the ratio and its
    interval), a sample per row that has the figure, labelled with its testbed, study, point,
    server, baseline and build (and ``emulated="true"`` where the figures are an emulation's),
    stamped with the time its study finished; and the verdict of each compared server as
    ``teiten_verdict{..., verdict="slower"} 1``."""
    lines = []
    for family, column in FAMILIES:
        samples = [_sample(family, r, v) for r in rows if (v := getattr(r, column)) is not None]
        if samples:
            lines += [f"# TYPE {family} gauge", *samples]
    verdicts = [_sample("teiten_verdict", r, 1, verdict=r.verdict) for r in rows if r.verdict]
    if verdicts:
        lines += ["# TYPE teiten_verdict gauge", *verdicts]
    return "\n".join([*lines, "# EOF"]) + "\n"


def _sample(family: str, row: Row, value: float, **more: str) -> str:
    labels = {k: v for k in LABELS if (v := getattr(row, k)) is not None} | more
    if row.emulated:  # a sample of an emulation's figures (issue 54, item 7)
        labels["emulated"] = "true"
    text = ",".join(f'{k}="{_escaped(str(v))}"' for k, v in labels.items())
    when = datetime.fromisoformat(row.time).timestamp()
    return f"{family}{{{text}}} {_number(value)} {_number(when)}"


def _escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _number(value: float) -> str:
    value = float(value)
    return str(int(value)) if value.is_integer() and math.isfinite(value) else repr(value)
