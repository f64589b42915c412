"""The rows of the view ``teiten_points`` in the formats of tools that track benchmarks:
Bencher's Metric Format (BMF, JSON) and OpenMetrics text (Prometheus). Pure functions over the
rows as :func:`teiten.store.points.read` gives them (docs/DESIGN.md, "Results others read").

"How much faster" is one figure everywhere: the ratio estimate (the interval's own estimate, in
percent, from which the verdict is read), the view's and the ratio CSV's ``estimate_pct``, BMF's
measure ``ratio_estimate`` and OpenMetrics' ``teiten_ratio_estimate_pct``. The ratio of the
medians stays in OpenMetrics under its own name, ``teiten_ratio_of_medians_pct``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime

from teiten.model.results import PointRow

Row = PointRow

# OpenMetrics: each family's value column in the view, its unit (the suffix of its name, as the
# OpenMetrics specification asks) and its HELP text; a row without a value has no sample.
FAMILIES = (
    ("teiten_tps", "value", "tps", "Median TPS of the server at the point over the repetitions"),
    ("teiten_low_tps", "low", "tps", "Low end of the median TPS's order-statistic interval"),
    ("teiten_high_tps", "high", "tps", "High end of the median TPS's order-statistic interval"),
    ("teiten_ratio_estimate_pct", "estimate_pct", "pct",
     "Ratio estimate: the server's TPS against its baseline's in percent, the interval's own "
     "estimate from which the verdict is read (over 100 is faster)"),
    ("teiten_ratio_low_pct", "low_pct", "pct", "Low end of the ratio estimate's interval"),
    ("teiten_ratio_high_pct", "high_pct", "pct", "High end of the ratio estimate's interval"),
    ("teiten_ratio_of_medians_pct", "ratio_pct", "pct",
     "Ratio of medians: the server's median TPS over its baseline's in percent (not judged)"))
VERDICT = ("teiten_verdict", "",
           "Verdict of a compared server at the point, as the label verdict (faster, slower, "
           "no-difference, cannot-tell); always 1")
# Latency percentiles where the workload measured them: each column of the view, its quantile
# (OpenMetrics' summary teiten_latency_ms) and its measure in BMF (the median over the
# repetitions, in ms).
QUANTILES = (("p50_ms", "0.5", "latency_p50"), ("p90_ms", "0.9", "latency_p90"),
             ("p95_ms", "0.95", "latency_p95"), ("p99_ms", "0.99", "latency_p99"),
             ("p999_ms", "0.999", "latency_p999"))
LATENCY = ("teiten_latency_ms", "ms",
           "Latency percentiles of the server at the point (the label quantile), each the median "
           "over the repetitions of a trial's percentile, where the workload measured them")
# The labels of every sample: together they name one row of the view; testbed_name, beside the
# stable testbed key, says which machine that is in words.
LABELS = ("testbed", "study", "study_id", "workload", "clients", "server", "baseline", "build")
EMULATED = " (emulated)"  # BMF: the name of an emulation's benchmark ends so; OpenMetrics: emulated="true"


def bmf(rows: Sequence[Row]) -> dict[str, dict[str, dict[str, float]]]:
    """Bencher Metric Format: a benchmark per server and point (``STUDY/WORKLOAD/clients=N/
    SERVER``) with the measure ``throughput`` (median TPS and its interval) and, for a server
    compared with a baseline, ``ratio_estimate`` (the report's ratio estimate in percent and its
    interval); where the workload measured latency percentiles, ``latency_p50`` ...
    ``latency_p999`` (ms, the medians over the repetitions). The figures of an emulated server
    (or of a ratio to one) are named ``... (emulated)``: never the series of a measured one."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for r in rows:
        figures = (("throughput", r.value, r.low, r.high),
                   ("ratio_estimate", r.estimate_pct, r.low_pct, r.high_pct))
        measures = {name: _metric(value, low, high) for name, value, low, high in figures
                    if value is not None}
        measures |= {name: _metric(value, None, None) for column, _, name in QUANTILES
                     if (value := getattr(r, column)) is not None}
        if measures:  # an emulation's figures are a benchmark of their own, named so
            out[f"{r.benchmark}/{r.server}" + (EMULATED if r.emulated else "")] = measures
    return out


def _metric(value: float, low: float | None, high: float | None) -> dict[str, float]:
    found = {"value": float(value)}
    if low is not None and high is not None:
        found.update(lower_value=float(low), upper_value=float(high))
    return found


def openmetrics(rows: Sequence[Row], testbeds: Mapping[int, str] | None = None) -> str:
    """OpenMetrics text: one gauge family per figure (TPS and its interval, the ratio estimate
    and its interval, the ratio of medians) and, where the workload measured them, the summary
    ``teiten_latency_ms`` of the latency percentiles (a sample per ``quantile``), each family
    with its HELP and UNIT, a sample per row that
    has the figure, labelled with its testbed (the stable key) and, where ``testbeds`` names
    the study's machine, ``testbed_name``, its study, point, server, baseline and build (and
    ``emulated="true"`` where the figures are an emulation's), stamped with the time its study
    finished; and the verdict of each compared server as ``teiten_verdict{...,
    verdict="slower"} 1``."""
    names = testbeds or {}
    lines = []
    for family, column, unit, help_text in FAMILIES:
        samples = [_sample(family, r, v, names) for r in rows if (v := getattr(r, column)) is not None]
        if samples:
            lines += _head(family, unit, help_text) + samples
    latency = [_sample(LATENCY[0], r, v, names, quantile=q) for r in rows for column, q, _ in QUANTILES
               if (v := getattr(r, column)) is not None]
    if latency:
        lines += _head(*LATENCY, kind="summary") + latency
    verdicts = [_sample("teiten_verdict", r, 1, names, verdict=r.verdict) for r in rows if r.verdict]
    if verdicts:
        lines += _head(*VERDICT) + verdicts
    return "\n".join([*lines, "# EOF"]) + "\n"


def _head(family: str, unit: str, help_text: str, kind: str = "gauge") -> list[str]:
    """A family's metadata: TYPE, UNIT (empty for a figure without one) and HELP."""
    return [f"# TYPE {family} {kind}", f"# UNIT {family} {unit}", f"# HELP {family} {_escaped(help_text)}"]


def _sample(family: str, row: Row, value: float, names: Mapping[int, str], **more: str) -> str:
    labels = {k: v for k in LABELS if (v := getattr(row, k)) is not None}
    if (name := names.get(row.study_id)) is not None:  # beside the key it names
        labels = {"testbed": labels.pop("testbed"), "testbed_name": name, **labels}
    labels |= more
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
