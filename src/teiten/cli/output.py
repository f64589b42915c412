"""Formatting for the terminal: tables, JSON, CSV, and the progress line."""

from __future__ import annotations

import contextlib
import csv
import io
import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from teiten.cli import interrupts
from teiten.report.spreadsheet import cell
from teiten.runner import Event

# Every C0 control but newline and tab, DEL and the C1 controls, shown as \\xNN.
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (9, 10)}


def visible(text: str, *, lines: bool = True) -> str:
    """``text`` with its control characters shown rather than obeyed (newlines too, unless
    ``lines``)."""
    shown = text.translate(_CONTROLS)
    return shown if lines else shown.replace("\n", "\\n")


class _Visible:
    """A text stream that shows the control characters written to it (see :func:`visible`)."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        self.stream.write(visible(text))
        return len(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


@contextlib.contextmanager
def visible_streams() -> Iterator[None]:
    """stdout and stderr as :class:`_Visible` streams, for the time of the block."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, _Visible):
        sys.stdout = _Visible(sys.stdout)
    if not isinstance(sys.stderr, _Visible):
        sys.stderr = _Visible(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def table(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """A plain aligned text table; a cell's newlines are shown, so a row stays a line."""
    def cell(v: Any) -> str:
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
        return visible(str(v), lines=False)
    cells = [[cell(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip()
              for row in cells]
    return "\n".join(lines)


def as_json(rows: Any) -> str:
    return json.dumps(rows, indent=2, ensure_ascii=False)


def as_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """CSV of ``columns`` of ``rows``, its text cells safe to open in a spreadsheet
    (:mod:`teiten.report.spreadsheet`)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([cell(c) for c in columns])
    writer.writerows([[cell(r.get(c)) for c in columns] for r in rows])
    return buf.getvalue()


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class Progress:
    """One line per trial on stderr, with a bar, the elapsed time and an ETA."""

    def __init__(self, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.eta: tuple[float, float] | None = None

    def __call__(self, event: Event) -> None:
        if event.kind == "note":
            print(f"teiten: {event.message}", file=self.stream, flush=True)
            return
        t = event.trial
        assert t is not None, event.kind
        point = t.variant if t.variant else f"clients={t.clients}"
        label = f"{t.server} {t.workload} {point} " + ("profile" if t.purpose else f"rep={t.repetition}")
        done = event.index if event.kind == "trial-end" else event.index - 1
        width = 20
        filled = int(width * done / event.total) if event.total else width
        bar = "#" * filled + "." * (width - filled)
        head = f"[{bar}] {event.index:>{len(str(event.total))}}/{event.total}"
        if event.kind == "trial-start":
            interrupts.doing(f"trial {event.index} of {event.total} ({label})")
            self.eta = event.eta
            eta = "" if event.eta is None else f" ETA {_clock(event.eta[0])}" + (
                f" (up to {_clock(event.eta[1])} if more blocks are needed)"
                if event.eta[1] > event.eta[0] + 1 else "")
            print(f"{head} {label} ...{eta}", file=self.stream, flush=True)
        else:
            print(f"{head} {label}: {event.status} {event.message} "
                  f"(elapsed {_clock(event.elapsed)})", file=self.stream, flush=True)
