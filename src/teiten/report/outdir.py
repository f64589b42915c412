"""The directory a report is written into: a new or empty one, or one teiten wrote a report
into before. A directory of the user's files is refused, for a report's files would replace
theirs of the same names (report.md, tables/...), unless they say so (``--overwrite``).

teiten marks a report directory it writes with its marker file (:data:`teiten.paths.MARKER`),
so that the next report into it needs no option (``make demo`` writes demo/report each time).
"""

from __future__ import annotations

from pathlib import Path

from teiten import paths
from teiten.errors import UserError

PURPOSE = "report"
# Everything a report is made of (a directory of these alone holds nothing of the user's), and
# what its report.html says in its head: a report of a teiten from before the marker.
REPORT_NAMES = frozenset({"report.md", "report.html", "tables.json", "tables", "charts",
                          "flamegraphs"})
GENERATOR = b'<meta name="generator" content="teiten '


def written_before(out_dir: Path) -> bool:
    """Whether teiten wrote a report into ``out_dir``: it carries teiten's marker, or it holds
    a report alone, whose report.html names teiten as its generator."""
    if paths.is_owned(out_dir):
        return True
    if not {p.name for p in out_dir.iterdir()} <= REPORT_NAMES:
        return False
    page = out_dir / "report.html"
    if page.is_symlink() or not page.is_file():
        return False
    with page.open("rb") as fh:
        return GENERATOR in fh.read(4096)


def _ours(out_dir: Path) -> bool:
    """A directory that is missing, empty, or teiten's report directory."""
    return not out_dir.is_dir() or not any(out_dir.iterdir()) or written_before(out_dir)


def check(out_dir: Path, *, overwrite: bool, option: str = "--out") -> None:
    """Refuse ``out_dir`` when it holds files and teiten wrote no report there, unless
    ``overwrite``. Writes nothing: a run checks its report directory before its trials."""
    if overwrite or _ours(out_dir):
        return
    raise UserError(f"{option} {out_dir}: the directory holds files teiten did not write, which "
                    "a report's files of the same names would replace; give a new or empty "
                    "directory, or add --overwrite to write the report there anyway")


def claim(out_dir: Path, *, overwrite: bool, option: str = "--out") -> None:
    """:func:`check` ``out_dir``, then make it when missing and mark it as teiten's report
    directory; one that only ``overwrite`` let through stays unmarked (it is the user's)."""
    check(out_dir, overwrite=overwrite, option=option)
    ours = _ours(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if ours and not paths.is_owned(out_dir):
        paths.mark_owned(out_dir, PURPOSE)
