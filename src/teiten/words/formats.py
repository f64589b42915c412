"""How the reports print numbers: one function per kind of figure, shared by the tables,
the findings, the charts' hover text and the CSV/JSON exports, so that a number reads the
same wherever it appears.

TPS has 1 decimal, latency (ms) 3, percentages 1; a missing figure is an em dash. The
``round_*`` functions give the same figures as numbers (for CSV and JSON): Python's
``round`` and ``format`` both round the exact binary value, so ``f"{round(x, 1):.1f}"``
is always ``f"{x:.1f}"``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal

from teiten.analysis import verdicts
from teiten.analysis.model import Point

MISSING = "—"
DASH = "–"  # between the bounds of an interval

TPS_DECIMALS = 1
LATENCY_DECIMALS = 3
PCT_DECIMALS = verdicts.PRINTED_PCT_DECIMALS  # the digits verdicts are read from


def format_tps(value: float | None) -> str:
    return MISSING if value is None else f"{value:.{TPS_DECIMALS}f}"


def format_latency(value: float | None) -> str:
    return MISSING if value is None else f"{value:.{LATENCY_DECIMALS}f}"


def format_pct(value: float | None) -> str:
    """A figure already in percent: ``4.2%``."""
    return MISSING if value is None else f"{value:.{PCT_DECIMALS}f}%"


def pct_number(ratio: float) -> str:
    """A ratio as a percentage without the sign: ``0.983`` → ``98.3``."""
    return f"{ratio * 100:.{PCT_DECIMALS}f}"


def format_bytes(value: float | None) -> str:
    if value is None:
        return MISSING
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if value >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:,.0f} B"


def format_ratio(ratio: float | None) -> str:
    """``0.983`` → ``98.3%``."""
    return MISSING if ratio is None else f"{pct_number(ratio)}%"


def format_diff(pct: float | None) -> str:
    """A mean difference already in percent: ``+2.3%``."""
    return MISSING if pct is None else f"{pct:+.{PCT_DECIMALS}f}%"


def interval(low: float, high: float, *, decimals: int = 1) -> str:
    """``101.2–105.0``: the bounds of an interval, with ``decimals`` decimals."""
    return f"{low:.{decimals}f}{DASH}{high:.{decimals}f}"


def level_pct(level: float | None) -> float | None:
    """The confidence level an interval reaches, in percent, rounded *down* to 0.1 so that the
    label never promises more than the interval gives: 0.96875 → 96.8, 0.75 → 75.0."""
    return None if level is None else math.floor(level * 1000 + 1e-6) / 10


def format_level(level: float | None) -> str:
    """``75``, ``87.5``, ``96.8``: :func:`level_pct` without a trailing ``.0``; ``—`` when none."""
    pct = level_pct(level)
    return MISSING if pct is None else f"{pct:.1f}".removesuffix(".0")


def tps_ci_text(point: Point) -> str:
    """``[1049.0–1052.0, 75%]``, the interval of a median TPS and the confidence level it
    reaches, as the TPS table prints it; empty without an interval."""
    return bracketed(point.tps_ci, point.tps_ci_level, decimals=TPS_DECIMALS)


def bracketed(bounds: tuple[float, float] | None, level: float | None, *, decimals: int = 1) -> str:
    """``[8.1–15.0, 96.8%]``: an interval and the level it reaches, as the cells print it;
    empty without an interval."""
    if bounds is None:
        return ""
    return f"[{interval(*bounds, decimals=decimals)}, {format_level(level)}%]"


def ratio_ci_bounds(point: Point) -> str:
    """``101.2–105.0``: the ratio's CI in percent, as the ratio cell prints it."""
    if point.ratio_ci is None:
        return ""
    low, high = point.ratio_ci
    return f"{pct_number(low)}{DASH}{pct_number(high)}"


def ratio_ci_text(point: Point) -> str:
    """``[101.2–105.0, 90%]``: the ratio's interval in percent and the level it reaches."""
    bounds = ratio_ci_bounds(point)
    return f"[{bounds}, {format_level(point.ratio_ci_level)}%]" if bounds else ""


def diff_from_ratio(ratio_text: str) -> str:
    """The distance from 100% of a printed ratio, in its own decimals: ``"103.1"`` → ``"3.1"``.

    Computed on the printed digits (exact decimal arithmetic), so a finding's "3.1% faster"
    always agrees with the "103.1%" of the cell it points to.
    """
    return str(abs(Decimal(ratio_text) - 100))


def format_p(p: float | None) -> str:
    """``0.029``; ``<0.001`` below that; ``—`` when no test ran."""
    if p is None:
        return MISSING
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def format_cv(cv: float | None) -> str:
    return MISSING if cv is None else format_pct(cv * 100)


def format_values(values: Sequence[float], decimals: int) -> str:
    return ", ".join(f"{v:.{decimals}f}" for v in values)


def format_alpha(alpha: float) -> str:
    return f"{alpha:g}"


def format_confidence(confidence: float) -> str:
    """``0.95`` → ``95``."""
    return f"{confidence * 100:g}"


def format_seconds(seconds: float) -> str:
    return f"{seconds:g} s"


def round_or_none(value: float | None, decimals: int) -> float | None:
    return None if value is None else round(value, decimals)


def pct_or_none(ratio: float | None) -> float | None:
    """A ratio as a percentage rounded as printed (``0.9834`` → ``98.3``)."""
    return None if ratio is None else round(ratio * 100, PCT_DECIMALS)
