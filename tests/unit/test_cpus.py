"""CPU lists, the choice of CPUs, the cores axis of a study and core families in reports."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from teiten.analysis.scaleups import core_families
from teiten.host import cpus
from teiten.model.errors import UserError
from teiten.model.results import Point as At
from teiten.model.results import ServerRecord
from teiten.report.build import write_compare_report
from teiten.spec import load_text
from teiten.store import Store


@pytest.mark.parametrize(("text", "expected"), [
    ("0", [0]), ("0-3", [0, 1, 2, 3]), ("3,1,2", [1, 2, 3]), ("0-1, 4-5", [0, 1, 4, 5]),
    ("2,2", [2]),
])
def test_cpu_lists(text: str, expected: list[int]) -> None:
    assert cpus.parse_list(text) == expected
    assert cpus.parse_list(cpus.format_list(expected)) == expected


@pytest.mark.parametrize("text", ["", "a", "3-1", "1-", "-1"])
def test_bad_cpu_lists(text: str) -> None:
    with pytest.raises(ValueError, match="CPU list|backwards"):
        cpus.parse_list(text)


def test_format_list_compresses_runs() -> None:
    assert cpus.format_list([5, 0, 1, 2, 7, 8]) == "0-2,5,7-8"


def test_choose_prefers_physical_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 2-core, 4-thread machine numbered like Intel's: 0/2 and 1/3 are siblings.
    ranks = {0: (0, 0, 0), 1: (0, 0, 1), 2: (1, 0, 0), 3: (1, 0, 1)}
    monkeypatch.setattr(cpus, "_sibling_rank", lambda c: ranks[c])
    assert cpus.choose(2, [0, 1, 2, 3]) == [0, 1]
    assert cpus.choose(3, [0, 1, 2, 3]) == [0, 1, 2]
    with pytest.raises(UserError, match="5 cores asked, but teiten may use only 4 CPUs here"):
        cpus.choose(5, [0, 1, 2, 3])


def test_client_cpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpus, "available", lambda: [0, 1, 2, 3])
    assert cpus.client_cpus("any", [0]) is None
    assert cpus.client_cpus("same", [0, 1]) == [0, 1]
    assert cpus.client_cpus("others", [0, 1]) == [2, 3]
    assert cpus.client_cpus("3", [0]) == [3]
    with pytest.raises(UserError, match="leaves no CPU for pgbench"):
        cpus.client_cpus("others", [0, 1, 2, 3])
    with pytest.raises(UserError, match="CPU 7 is not one teiten may use"):
        cpus.client_cpus("7", [0])


STUDY = """
study: axis
servers:
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18", settings: {work_mem: 64MB}}
  - {name: far, external: "host=db.example port=5432"}
workloads: [select-only]
cores: [1, 2, 4]
"""


def test_cores_axis_multiplies_local_servers() -> None:
    study = load_text(STUDY, "<test>").study
    matrix = study.server_matrix()
    assert [(i, s.name, s.cores) for i, s in matrix] == [
        (0, "pg17-1core", 1), (0, "pg17-2cores", 2), (0, "pg17-4cores", 4),
        (1, "pg18-1core", 1), (1, "pg18-2cores", 2), (1, "pg18-4cores", 4),
        (2, "far", None)]
    assert matrix[4][1].settings == {"work_mem": "64MB"}


def test_core_families_group_servers_alike_but_for_cpus() -> None:
    def row(name: str, install: str, cores: int | None, **extra: object) -> ServerRecord:
        spec: dict[str, object] = {"name": name, "install": install, "cores": cores, **extra}
        if cores:
            spec["placement"] = {"cpus": cpus.format_list(range(cores)), "cores": cores,
                                 "client_cpus": "any"}
        return ServerRecord(name, 0, "local", spec)

    rows = [row("pg18-2cores", "18", 2), row("pg18-1core", "18", 1), row("pg17-1core", "17", 1),
            row("pg17-2cores", "17", 2), row("plain", "17", None),
            row("odd-1core", "17", 1, settings={"work_mem": "1GB"})]
    families = core_families(rows)
    assert [(f.family, f.servers) for f in families] == [
        ("pg18", ((1, "pg18-1core"), (2, "pg18-2cores"))),
        ("pg17", ((1, "pg17-1core"), (2, "pg17-2cores")))]


def test_hot_functions_count_the_leaf_frames() -> None:
    from teiten.host.flamegraphs import hot_functions

    folded = ("postgres;main;PostgresMain;exec_simple_query;_bt_compare 30\n"
              "postgres;main;PostgresMain;LWLockAcquire;s_lock 50\n"
              "postgres;main;PostgresMain;_bt_compare 20\n"
              "garbage line\n")
    assert hot_functions(folded) == [("_bt_compare", 0.5), ("s_lock", 0.5)]
    assert hot_functions("") == []


def test_unnamed_frames_are_counted_through_the_stack_and_at_its_top() -> None:
    from teiten.host.flamegraphs import unnamed_shares

    folded = ("postgres;main;PostgresMain;[postgres];[postgres];secure_write 30\n"
              "postgres;main;PostgresMain;ExecAgg;[postgres] 10\n"
              "postgres;main;PostgresMain;ExecAgg;[unknown] 10\n"  # JIT code: not the build's
              "postgres;main;PostgresMain;_bt_compare 50\n")
    assert unnamed_shares(folded) == (0.4, 0.1)
    assert unnamed_shares("") == (0.0, 0.0)


def test_scaleup_finds_where_cores_stop_helping() -> None:
    from teiten.analysis.model import Activity, CoreScaling, Point, ServerSeries, WorkloadSection
    from teiten.analysis.scaleups import scaleup

    def series(name: str, tps: dict[int, float], idle: float) -> ServerSeries:
        pts = tuple(Point(clients=c, tps_median=t, latency_ms_median=1.0, tps_values=(t,), n_ok=1,
                          n_failed=0, ratio=None) for c, t in tps.items())
        act = tuple(Activity(clients=c, cpu={"idle": 50.0}, waits={"LWLock:BufferMapping": 0.6, "CPU:CPU": 0.4},
                             device_util={}, checkpoints=0, autovacuum=0, server_cpu_idle=idle)
                    for c in tps)
        return ServerSeries(name, "18", pts, None, None, activity=act)

    sec = WorkloadSection("w", "", "a-1core", (1, 8), (
        series("a-1core", {1: 100.0, 8: 180.0}, 1.0),
        series("a-2cores", {1: 100.0, 8: 350.0}, 2.0),
        series("a-4cores", {1: 100.0, 8: 360.0}, 30.0)))
    fam = CoreScaling("a", ((1, "a-1core"), (2, "a-2cores"), (4, "a-4cores")))
    hot = {At("a-4cores", "w", 8): [("s_lock", 0.4)], At("a-4cores", "w", 1): [("x", 1.0)]}
    sc = scaleup(sec, fam, hot)
    assert [(r.cores, r.peak_clients, r.peak_tps) for r in sc.rows] == [
        (1, 8, 180.0), (2, 8, 350.0), (4, 8, 360.0)]
    assert sc.rows[1].gain_pct == pytest.approx(94.44, abs=0.01)
    assert sc.best_cores == 4 and sc.knee_cores == 2
    assert sc.rows[2].cpu_idle == 30.0  # the server's own CPUs, not the machine's
    assert sc.rows[2].hot == (("s_lock", 0.4),) and sc.rows[2].hot_clients == 8
    assert sc.rows[0].waits[0] == ("LWLock:BufferMapping", 0.6)


def test_scaleup_gains_carry_their_intervals_and_colour_only_what_they_can_tell() -> None:
    """Each peak with its order-statistic interval, each gain with the interval of the ratio
    of the two peaks by block at the table's family level (two gains and the largest count
    against the best: 1 - 0.05/3); a gain marked and coloured by the verdict read from that
    interval, and the drop beyond the best core count said as cannot tell when it cannot."""
    from teiten.analysis import intervals
    from teiten.analysis.model import CoreScaling, Point, ServerSeries, WorkloadSection
    from teiten.analysis.scaleups import scaleup
    from teiten.report.scaleup_tables import scaleup_table
    from teiten.words.context import Context

    blocks = tuple(str(b) for b in range(1, 9))
    noise = (1.00, 1.03, 0.97, 1.02, 0.99, 1.01, 0.98, 1.04)

    def series(name: str, level: float, wobble: tuple[float, ...]) -> ServerSeries:
        values = tuple(level * n * w for n, w in zip(noise, wobble, strict=True))
        ci = intervals.median_interval(values)
        assert ci is not None
        point = Point(clients=8, tps_median=ci.value, latency_ms_median=1.0, tps_values=values,
                      n_ok=8, n_failed=0, ratio=None, tps_ci=(ci.low, ci.high),
                      tps_ci_level=ci.confidence, tps_blocks=blocks)
        return ServerSeries(name, "18", (point,), None, None)

    flat = (1.0,) * 8
    sec = WorkloadSection("w", "", "a-1core", (8,), (
        series("a-1core", 100.0, flat),
        series("a-2cores", 190.0, flat),  # a sure gain: every block ~1.9x
        series("a-4cores", 188.0, (1.05, 0.95, 1.04, 0.96, 1.03, 0.97, 1.02, 0.98))))
    sc = scaleup(sec, CoreScaling("a", ((1, "a-1core"), (2, "a-2cores"), (4, "a-4cores"))), {})
    one, two, four = sc.rows
    assert one.gain_ci is None and one.peak_ci is not None and one.peak_level == pytest.approx(0.9922, abs=1e-4)
    expected = intervals.ratio_interval(sec.servers[1].points[0].tps_values,
                                        sec.servers[0].points[0].tps_values, confidence=1 - 0.05 / 3,
                                        blocks=blocks, baseline_blocks=blocks)
    assert expected is not None and expected.method == intervals.SIGNED_RANK
    assert two.gain_ci == pytest.approx(((expected.low - 1) * 100, (expected.high - 1) * 100))
    assert two.gain_level == expected.confidence and two.gain_ci[0] > 80
    assert four.gain_ci is not None and four.gain_ci[0] < 0 < four.gain_ci[1]
    assert sc.best_cores == 2 and sc.beyond_ci is not None and sc.beyond_ci[0] < 0 < sc.beyond_ci[1]

    table = scaleup_table(sc, Context())
    gains = {label: cells[2] for label, cells in table.rows}
    assert (gains["2"].marker, gains["2"].tone) == ("▲", "better sig")
    assert (gains["4"].marker, gains["4"].tone) == ("?", "") and gains["1"].tone == "missing"
    assert gains["2"].ci.startswith("[") and gains["2"].ci.endswith("%]")
    assert all(cells[0].tone == "" for _, cells in table.rows)  # the best peak is no verdict
    [beyond] = [n for n in table.notes if n.startswith("At 4 cores")]
    assert beyond.endswith("the repetitions cannot tell whether it is lower.")
    assert any("This table's 3 ratios are one family: each interval is at 98.34%" in n for n in table.notes)


def test_a_compare_of_one_cores_study_run_twice_keeps_a_family_for_each(tmp_path: Path) -> None:
    """The same S2 study run twice, each in a store of its own, compared: each run's scale-up
    table of its own, the gain over fewer cores within that run (the two runs' servers, alike in
    all but the study, were one family of core counts 1, 1, 2, 2, each row's "gain over fewer
    cores" taken from the row above it, the other run's)."""
    golden = Path(__file__).resolve().parents[1] / "golden" / "report-stores" / "cores.db"
    stores = []
    for name in ("2025.db", "2026.db"):
        shutil.copyfile(golden, tmp_path / name)  # opening a store may migrate it
        stores.append(Store.open(tmp_path / name))
    try:
        write_compare_report([(s, 1) for s in stores], tmp_path / "cmp")
    finally:
        for s in stores:
            s.close()
    text = (tmp_path / "cmp" / "report.md").read_text(encoding="utf-8")
    headings = [ln for ln in text.splitlines() if ln.startswith("### Scale-up with cores")]
    assert headings == [
        "### Scale-up with cores (s2-cores-small (1)/pg18): where TPS stops rising, and why",
        "### Scale-up with cores (s2-cores-small (2)/pg18): where TPS stops rising, and why"], headings
    for table in text.split("### Scale-up with cores")[1:]:
        cores = [row.split("|")[1].strip() for row in table.split("\n\n", 2)[1].splitlines()[2:]]
        assert cores == ["1", "2"], table[:600]
