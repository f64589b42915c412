"""Who calls the hot function (issue 57, item 5): as the IPA paper (METHODS S4) read oprofile's
call graph of s_lock and found it called from LWLockAcquire in ReadBuffer, the scale-up
report names the chains of callers of the hottest function of a profile, with their share of
its own samples, beside the ranked self time; in the sentence under the scale-up table (en and
ja) and in the ``hot_callers`` column of ``<stem>-scaleup.csv``.

The store is the real scale-up store of tests/golden/report-stores (pg18 on 1 and 2 cores,
each profiled at 2 clients), copied, with each profile's folded stacks replaced by stacks
whose counts the test knows."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from teiten.analysis.callers import callers
from teiten.model.details import PROFILE
from teiten.report.build import write_study_report
from teiten.store import Store

STORE = Path(__file__).resolve().parent.parent / "golden" / "report-stores" / "scaleup.db"
ROOT = "postgres;main;PostmasterMain;ServerLoop;BackendMain;PostgresMain;exec_simple_query"
# The 2006 paper's picture: s_lock is the hottest function (self), most of it under
# LWLockAcquire in ReadBuffer_common; some under LWLockAcquire from elsewhere, some spinning in
# LWLockRelease; and a stack where s_lock is not the leaf, which is not its self time.
FOLDED = "\n".join([
    f"{ROOT};PortalRun;ExecScan;index_getnext;ReadBuffer;ReadBuffer_common;LWLockAcquire;s_lock 60",
    f"{ROOT};PortalRun;ExecScan;heap_getnext;ReadBuffer;ReadBuffer_common;LWLockAcquire;s_lock 15",
    f"{ROOT};CommitTransaction;ProcArrayEndTransaction;LWLockAcquire;s_lock 15",
    f"{ROOT};PortalRun;ExecScan;ReleaseBuffer;LWLockRelease;s_lock 10",
    f"{ROOT};PortalRun;ExecScan;ReleaseBuffer;LWLockRelease;s_lock;perform_spin_delay 5",
    f"{ROOT};PortalRun;hash_search_with_hash_value 40",
    f"{ROOT};pq_getbyte;secure_read 30",
])


def test_the_chains_and_their_shares() -> None:
    assert callers(FOLDED, "s_lock") == (
        (("LWLockAcquire", "ReadBuffer_common"), 0.75),
        (("LWLockAcquire", "ProcArrayEndTransaction"), 0.15),
        (("LWLockRelease", "ReleaseBuffer"), 0.10))
    assert callers(FOLDED, "s_lock", depth=1, top=1) == ((("LWLockAcquire",), 0.90),)
    assert callers("s_lock 3\nbad line\n", "s_lock") == (((), 1.0),)  # a stack of one frame
    assert callers(FOLDED, "absent") == ()


def _store(tmp: Path) -> Path:
    """A copy of the scale-up store whose two profiles hold the known stacks."""
    copy = tmp / "scaleup.db"
    shutil.copyfile(STORE, copy)  # never open the golden file itself
    store = Store.open(copy)
    try:
        (study,) = [int(r.id) for r in store.studies()]
        profiles = store.details_of_kind(study, PROFILE.name)
        assert len(profiles) == 2
        with store.transaction() as conn:
            for trial_id, body in profiles.items():
                conn.execute("UPDATE details SET body = ? WHERE study_id = ? AND trial_id = ? AND kind = ?",
                             (json.dumps({**body, "folded": FOLDED}), study, trial_id, PROFILE.name))
    finally:
        store.close()
    return copy


@pytest.mark.parametrize(("lang", "sentence"), [
    ("en", "*Who calls s\\_lock at 2 cores, by share of its own samples: s\\_lock ← LWLockAcquire ← "
           "ReadBuffer\\_common 75%, s\\_lock ← LWLockAcquire ← ProcArrayEndTransaction 15%, s\\_lock ← "
           "LWLockRelease ← ReleaseBuffer 10%.*"),
    ("ja", "*2 コアで s\\_lock を呼ぶ経路（その関数自身のサンプルに占める割合）: s\\_lock ← LWLockAcquire ← "
           "ReadBuffer\\_common 75%、s\\_lock ← LWLockAcquire ← ProcArrayEndTransaction 15%、s\\_lock ← "
           "LWLockRelease ← ReleaseBuffer 10%。*"),
])
def test_the_report_names_the_callers(lang: str, sentence: str, tmp_path: Path) -> None:
    store = Store.open(_store(tmp_path))
    try:
        write_study_report(store, int(store.studies()[0].id), tmp_path / "out", lang=lang)
    finally:
        store.close()
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert sentence in md.splitlines()
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert sentence.strip("*").replace("\\_", "_") in html
    with (tmp_path / "out" / "tables" / "select-only-scaleup.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # s_lock: 100 of the 175 samples at the top of a stack
    assert [(r["cores"], r["hot_functions"].split(";")[0], r["hot_callers"]) for r in rows] == [
        (cores, "s_lock=57.1", "s_lock<-LWLockAcquire<-ReadBuffer_common=75.0; "
                               "s_lock<-LWLockAcquire<-ProcArrayEndTransaction=15.0; "
                               "s_lock<-LWLockRelease<-ReleaseBuffer=10.0") for cores in ("1", "2")]
