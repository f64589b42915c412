"""repetitions: auto adds blocks of the undecided points only (issue 33, item 6; docs/DESIGN.md
"Blocks"): after the floor, a ratio already known within ±target is not measured again, the one
still wide is, with its reference server's point; the decision says how many ratios and trials
the block holds, and the report's interval of each ratio pairs the blocks both points share.
A real SQLite store of a built-in-shaped study, trials finished with TPS of a known law."""

from __future__ import annotations

import math
import random
from pathlib import Path

from tests.conftest import run_cli
from tests.truestores import Truth, build

from teiten.analysis import stopping
from teiten.model.results import LoadFigures, TrialResult
from teiten.run import blocks
from teiten.spec import Study, load_text
from teiten.store import Store

AUTO = "{floor: 8, ceiling: 12, target_pct: 3, budget: 1h}"


def _study(store: Store, study_id: int) -> Study:
    stored = store.study_results(study_id)
    return load_text(stored.spec_yaml, stored.source).study


def test_a_later_block_holds_only_the_ratios_not_yet_known(tmp_path: Path) -> None:
    # 1 client: pg18 is 10% faster with 0.2% noise (known at once); 2 clients: 15% noise.
    truth = Truth(blocks=8, cv=0.002, ratio={("pgecons-read", 1): 1.1}, clients=(1, 2),
                  workloads=("pgecons-read",), cv_at={("pgecons-read", 2): 0.15}, auto=AUTO)
    path = build(tmp_path / "auto.db", truth)
    store = Store.open(path)
    notes: list[str] = []
    try:
        (study_id,) = [s.id for s in store.studies()]
        added = blocks.next_block(store, study_id, _study(store, study_id), notes.append)
        decisions = store.study_results(study_id).spec["auto_decisions"]
    finally:
        store.close()
    assert sorted((t.server, t.clients, t.repetition) for t in added) == [
        ("pg17", 2, 9), ("pg18", 2, 9)]
    assert decisions[-1]["decision"] == "add" and decisions[-1]["trials"] == 2
    assert "one more block of the 1 ratio(s) not yet decided (2 trials)" in notes[-1], notes
    assert "pg18 / pg17, pgecons-read, 2 clients" in notes[-1]


def test_the_report_says_the_later_blocks_held_only_the_undecided_ratios(tmp_path: Path) -> None:
    truth = Truth(blocks=8, cv=0.002, ratio={("pgecons-read", 1): 1.1}, clients=(1, 2),
                  workloads=("pgecons-read",), cv_at={("pgecons-read", 2): 0.15}, auto=AUTO)
    path = build(tmp_path / "auto.db", truth)
    rng = random.Random(3)
    store = Store.open(path)
    try:
        (study_id,) = [s.id for s in store.studies()]
        store.set_study_state(study_id, "running", "2026-11-26T00:03:00+00:00")
        while added := blocks.next_block(store, study_id, _study(store, study_id), lambda _: None):
            for t in added:  # the noisy point stays noisy: blocks go on to the ceiling
                tps = 2000 * math.exp(rng.gauss(0, 0.15))
                store.finish_trial(study_id, TrialResult(t.trial_id, "ok", "2026-11-26T00:04:00+00:00",
                                                         figures=_figures(tps)))
        store.set_study_state(study_id, "finished", "2026-11-26T00:05:00+00:00")
        reps = {(t.planned.server, t.planned.clients): t.planned.repetition
                for t in store.study_results(study_id).trials}
        last = store.study_results(study_id).spec["auto_decisions"][-1]
    finally:
        store.close()
    assert reps == {("pg17", 1): 8, ("pg18", 1): 8, ("pg17", 2): 12, ("pg18", 2): 12}
    # What more blocks would cost, from the width reached (15% noise: many more than 12)
    more, minutes = last["more_blocks"], max(1, round(last["more_s"] / 60))
    assert last["decision"] == "ceiling" and more > 12, last
    for lang, said in (("en", "| Repetitions | 12 blocks (repetitions: auto, floor 8, ceiling 12): "
                              "stopped at the ceiling before every ratio was known within ±3%; the "
                              "blocks after the first 8 held only the ratios not yet known, each "
                              f"with its reference server; about {more} more blocks (about {minutes} "
                              "min of trials) would decide the ratios still open, if the noise "
                              "stays as it was |"),
                       ("ja", "。最初の 8 ブロックより後のブロックでは、まだ判明していない比と"
                              "その基準サーバだけを測定。ノイズが今までと同じなら、未判定の比の"
                              f"判定にはあと約 {more} ブロック (試行で約 {minutes} 分) が必要 |")):
        done = run_cli("report", "--store", str(path), "--out", str(tmp_path / lang), "--lang", lang)
        assert done.returncode == 0, done.stderr
        assert said in (tmp_path / lang / "report.md").read_text()


def _figures(tps: float) -> LoadFigures:
    return LoadFigures(tps=tps, transactions=int(tps), failed_transactions=0, duration_s=1.0,
                       latency_ms_avg=1.0, latency_ms_stddev=None, initial_connection_ms=None,
                       pgbench_version="18.1")


def test_every_ratio_known_adds_no_block(tmp_path: Path) -> None:
    truth = Truth(blocks=8, cv=0.002, clients=(1, 2), workloads=("pgecons-read",), auto=AUTO)
    store = Store.open(build(tmp_path / "known.db", truth))
    notes: list[str] = []
    try:
        (study_id,) = [s.id for s in store.studies()]
        added = blocks.next_block(store, study_id, _study(store, study_id), notes.append)
    finally:
        store.close()
    assert added == [] and "every ratio is known within ±3%" in notes[-1]


def test_what_more_blocks_would_cost_is_projected_from_the_width_reached() -> None:
    """A ratio's interval narrows as 1/sqrt(blocks): the blocks that would bring it beyond or
    within the ±5% margin, or within ±target, whichever is nearer."""
    point = ()

    def width(pct: float | None, centre: float | None) -> stopping.Width:
        return stopping.Width(pct, "here", point, centre=centre)

    # 8% faster, ±10% after 10 blocks: beyond 105% once within ±2.78% (3/108): 130 blocks
    assert stopping.blocks_to_decide(width(10, 1.08), 10, target_pct=1, margin_pct=5) == 130
    # equal, ±10%: within the band once within ±5%: 40 blocks
    assert stopping.blocks_to_decide(width(10, 1.0), 10, target_pct=1, margin_pct=5) == 40
    # on the margin's edge: only the width rule (±3%) decides it: 10 (10/3)^2 -> 112
    assert stopping.blocks_to_decide(width(10, 1.05), 10, target_pct=3, margin_pct=5) == 112
    # already narrow enough: no more; no interval yet: no projection
    assert stopping.blocks_to_decide(width(0.5, 1.2), 10, target_pct=1, margin_pct=5) == 10
    assert stopping.blocks_to_decide(width(None, None), 10, target_pct=1, margin_pct=5) is None


def test_a_study_decided_at_the_floor_says_so_in_en_and_ja(tmp_path: Path) -> None:
    """Servers 40% apart with 6% noise: at the floor every ratio lies beyond the ±5% margin,
    so the study stops 'decided'; the progress line and the report's Study table say it, in
    en and ja (the sentences of issue 53, item 3)."""
    truth = Truth(blocks=8, cv=0.06, ratio={("pgecons-read", 1): 1.4, ("pgecons-read", 2): 1.4},
                  clients=(1, 2), workloads=("pgecons-read",), auto=AUTO)
    path = build(tmp_path / "decided.db", truth)
    store = Store.open(path)
    notes: list[str] = []
    try:
        (study_id,) = [s.id for s in store.studies()]
        assert blocks.next_block(store, study_id, _study(store, study_id), notes.append) == []
        last = store.study_results(study_id).spec["auto_decisions"][-1]
        store.set_study_state(study_id, "finished", "2026-11-26T00:05:00+00:00")
    finally:
        store.close()
    assert (last["decision"], last["settled"], last["trials"]) == ("decided", 2, 0), last
    assert notes[-1].startswith("after 8 blocks every ratio is decided: 2 beyond or within the "
                                "±5% margin, the rest known within ±3% (the widest: ±"), notes
    rows = {"en": "| Repetitions | 8 blocks (repetitions: auto, floor 8, ceiling 12): every ratio "
                  "decided, beyond or within the ±5% margin or known within ±3% |",
            "ja": "8 ブロック (repetitions: auto、下限 8、上限 12): すべての比が判定済み (±5% の"
                  "範囲の外か内、または ±3% 以内) |"}
    for lang, said in rows.items():
        done = run_cli("report", "--store", str(path), "--out", str(tmp_path / lang), "--lang", lang)
        assert done.returncode == 0, done.stderr
        assert said in (tmp_path / lang / "report.md").read_text(), lang
