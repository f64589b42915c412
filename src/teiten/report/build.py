"""Building a study's report from the store."""

from __future__ import annotations

from pathlib import Path

from teiten.analysis.summary import report_data
from teiten.report import write_report
from teiten.runner import now
from teiten.store import Store


def write_study_report(store: Store, study_id: int, out_dir: Path) -> dict[str, Path]:
    """Write report.md and report.html for one study of ``store`` into ``out_dir``."""
    trials = [dict(r) for r in store.trials(study_id)]
    evidence = {t["trial_id"]: (store.metrics(study_id, t["trial_id"]),
                                [(w["wait_event_type"], w["wait_event"], w["samples"])
                                 for w in store.waits(study_id, t["trial_id"])])
                for t in trials}
    data = report_data(dict(store.study(study_id)), [dict(r) for r in store.servers(study_id)],
                       trials, store_path=str(store.path.absolute()), generated_at=now(),
                       evidence=evidence)
    return write_report(data, out_dir)
