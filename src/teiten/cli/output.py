"""Formatting for the terminal: tables, JSON, CSV, and the progress line."""

from __future__ import annotations

import csv
import io
import json
import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import TextIO

from teiten.cli import interrupts
from teiten.cli.terminal import visible
from teiten.report.spreadsheet import cell
from teiten.run.runner import Event


def table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    """A plain aligned text table; a cell's newlines are shown, so a row stays a line."""
    def cell(v: object) -> str:
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


def described(rows: Sequence[tuple[str, str]], width: int | None = None) -> str:
    """Names, each with a text beside it wrapped to fit ``width`` (default: COLUMNS, else the
    terminal's width, else 80 as in a pipe); a name is never cut. Where a text would have fewer
    than 24 columns, it goes under its name, indented."""
    width = width or shutil.get_terminal_size().columns
    indent = max([20, *(len(name) for name, _ in rows)]) + 1
    lines = []
    for name, text in rows:
        if width - indent >= 24:
            wrapped = textwrap.wrap(text, width - indent, break_on_hyphens=False) or [""]
            lines.append(f"{name:{indent - 1}s} {wrapped[0]}".rstrip())
            lines += [" " * indent + more for more in wrapped[1:]]
        else:
            lines.append(name)
            lines += textwrap.wrap(text, max(width - 4, 16), initial_indent="    ",
                                   subsequent_indent="    ", break_on_hyphens=False)
    return "\n".join(lines)


def as_json(rows: object) -> str:
    return json.dumps(rows, indent=2, ensure_ascii=False)


def as_csv(rows: Sequence[dict[str, object]], columns: Sequence[str]) -> str:
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
