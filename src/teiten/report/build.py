"""Building a study's report from the store."""

from __future__ import annotations

from pathlib import Path

from teiten.analysis.summary import report_data
from teiten.report import write_report
from teiten.runner import now
from teiten.store import Store


def write_study_report(store: Store, study_id: int, out_dir: Path) -> dict[str, Path]:
    """Write report.md and report.html for one study of ``store`` into ``out_dir``."""
    data = report_data(dict(store.study(study_id)), [dict(r) for r in store.servers(study_id)],
                       [dict(r) for r in store.trials(study_id)],
                       store_path=str(store.path.absolute()), generated_at=now())
    return write_report(data, out_dir)
