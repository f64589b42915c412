"""The report's "Machine time" part: where the trials' time went, phase by phase, and how
each trial's starting state was made (teiten.analysis.cycle), worded in the report's
language for both the Markdown and the HTML report; its tables' data are
``machine-time.csv`` (per phase) and ``machine-time-run.csv`` (the study's wall time)."""

from __future__ import annotations

from dataclasses import dataclass

from teiten.analysis.cycle import MachineTime
from teiten.report.cells import DataTable
from teiten.report.columns import MACHINE_RUN_COLUMNS, MACHINE_TIME_COLUMNS
from teiten.words.i18n import tr


@dataclass(frozen=True)
class MachineTimeText:
    intro: str
    header: tuple[str, str, str]
    rows: tuple[tuple[str, str, str], ...]  # phase, seconds, share
    starts: str
    run_intro: str | None = None  # the study's wall time, where its runs kept it
    run_rows: tuple[tuple[str, str, str], ...] = ()  # part, seconds, share of the wall
    data: DataTable | None = None  # the rows' figures, the phases by their (English) names
    run_data: DataTable | None = None


def _duration(seconds: float, lang: str) -> str:
    minutes, rest = divmod(round(seconds), 60)
    if minutes == 0:
        return f"{seconds:.1f} s" if lang == "en" else f"{seconds:.1f} 秒"
    return f"{minutes} min {rest:02d} s" if lang == "en" else f"{minutes} 分 {rest:02d} 秒"


def machine_time_text(found: MachineTime, lang: str) -> MachineTimeText:
    """The sentences and the tables of ``found``."""
    phases = found.phases
    total = phases.total
    ratio = phases.overhead()
    shown = [(name, s) for name, s in phases.seconds.items() if s >= 0.05]
    rows = tuple((tr(f"cycle.phase.{name.replace(' ', '_')}", lang), f"{s:.1f}",
                  f"{s / total * 100:.1f}%" if total > 0 else "-") for name, s in shown)
    data = DataTable("machine-time", "", "machine-time", MACHINE_TIME_COLUMNS, tuple(
        (name, round(s, 1), round(s / total * 100, 1) if total > 0 else None) for name, s in shown))
    starts = tr("list.sep", lang).join(tr(f"cycle.data.{key}", lang, n=n)
                                       for key, n in found.starts.items())
    run = found.run
    parts = run.parts(total, found.trials) if run is not None else None
    run_intro: str | None = None
    run_rows: tuple[tuple[str, str, str], ...] = ()
    run_data = None
    if run is not None and parts is not None and run.wall > 0:
        run_intro = tr("machine_time.run", lang, runs=run.runs, wall=_duration(run.wall, lang),
                       window=_duration(phases.window, lang),
                       ratio=f"{run.wall / phases.window:.2f}×" if phases.window > 0 else "-")
        run_rows = tuple((tr(f"machine_time.part.{name.replace(' ', '_')}", lang,
                             n=run.clusters_loaded), f"{s:.1f}", f"{s / run.wall * 100:.1f}%")
                         for name, s in parts.items())
        run_data = DataTable("machine-time-run", "", "machine-time-run", MACHINE_RUN_COLUMNS, tuple(
            (name, round(s, 1), round(s / run.wall * 100, 1)) for name, s in parts.items()))
    return MachineTimeText(
        run_intro=run_intro, run_rows=run_rows, data=data, run_data=run_data,
        intro=tr("machine_time.intro", lang, trials=found.trials, total=_duration(total, lang),
                 window=_duration(phases.window, lang),
                 ratio=f"{ratio:.2f}×" if ratio else "-"),
        header=(tr("machine_time.phase", lang), tr("machine_time.seconds", lang),
                tr("machine_time.share", lang)),
        rows=rows,
        starts=tr("machine_time.starts", lang, starts=starts, restarted=found.restarted,
                  trials=found.trials))
