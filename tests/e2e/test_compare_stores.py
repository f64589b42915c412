"""`teiten compare` of two stores that each hold a study 1 of the same name, as the same study
file run on two machines gives (issue 54, item 3): the studies share no block, so a ratio
between them is the unpaired one, and is the same as when the two studies lie in one store
(`teiten store copy`). Before, the block key (study id, study name, repetition) collided
across the stores and the report paired trials of two machines as if run in one block; and
the trials' ids (which depend only on the study's name, the point and the block) collided
too, so that one store's trials showed the other's per-second series.

The stores are tests/truestores.py's: real SQLite stores of the quick study's plan, every
trial's TPS drawn from a known law (no PostgreSQL run).
"""

from __future__ import annotations

import csv
import html
import re
import sqlite3
from pathlib import Path

from tests.conftest import run_cli
from tests.truestores import Truth, build

WORKLOAD = "pgecons-read"
CROSS = ("truth (2)/pg17", "truth (2)/pg18")  # against the baseline truth (1)/pg17
UNPAIRED_EN = "Hodges–Lehmann interval of the two sets of repetitions"
PAIRED_EN = "signed-rank interval of the ratios within each block"
SECONDS = 5  # the per-second series stored for the second store's trials only


def _truth(seed: int) -> Truth:
    return Truth(blocks=8, cv=0.01, seed=seed, clients=(1,), workloads=(WORKLOAD,))


def _stores(tmp_path: Path) -> tuple[Path, Path]:
    """Two machines' stores of the same study file: both study 1, both named "truth"; another
    start (else `teiten compare` refuses them as one study and its copy), and a per-second
    series for the second one's trials."""
    a = build(tmp_path / "machine-a.db", _truth(1))
    b = build(tmp_path / "machine-b.db", _truth(2))
    with sqlite3.connect(a) as ca, sqlite3.connect(b) as cb:
        assert ca.execute("SELECT id, name FROM studies").fetchall() == [(1, "truth")]
        assert cb.execute("SELECT id, name FROM studies").fetchall() == [(1, "truth")]
        ids_a = {r[0] for r in ca.execute("SELECT trial_id FROM trials")}
        ids_b = {r[0] for r in cb.execute("SELECT trial_id FROM trials")}
        assert ids_a == ids_b  # the same study file, the same trial ids
        cb.execute("UPDATE studies SET created_at = '2026-11-27T00:00:00+00:00'")
        cb.executemany("INSERT INTO progress VALUES (1, ?, ?, 1000, 1.0, NULL, NULL)",
                       [(t, s) for t in ids_b for s in range(1, SECONDS + 1)])
    ca.close()
    cb.close()
    return a, b


def _compare(out: Path, lang: str, *args: str) -> tuple[dict[str, dict[str, str]], str, str]:
    """The ratio CSV's rows by server, report.md and report.html (unescaped)."""
    run_cli("compare", *args, "--out", str(out), "--lang", lang, check=True)
    with (out / "tables" / f"{WORKLOAD}-ratio.csv").open(encoding="utf-8", newline="") as fh:
        rows = {r["server"]: r for r in csv.DictReader(fh)}
    return (rows, (out / "report.md").read_text(encoding="utf-8"),
            html.unescape((out / "report.html").read_text(encoding="utf-8")))


def _hover(page: str, server: str) -> str:
    """The hover text of a server's ratio cell at 1 client."""
    slug = re.sub(r"[^a-z0-9]", lambda m: f"_{ord(m[0]):x}_", server)
    m = re.search(rf'<td id="ratio--pgecons_2d_read--{re.escape(slug)}--1"[^>]* title="([^"]*)"',
                  page)
    assert m, server
    return m[1]


def _interval(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row[k] for k in ("estimate_pct", "ratio_ci_low_pct", "ratio_ci_high_pct",
                                  "ratio_ci_level_pct", "ratio_ci_method", "verdict"))


def test_two_stores_each_with_study_1_share_no_block(tmp_path: Path) -> None:
    a, b = _stores(tmp_path)
    rows, md, page = _compare(tmp_path / "en", "en", "--store", str(a), "--store", str(b))
    for server in CROSS:
        row = rows[server]
        assert row["ratio_ci_method"] == row["estimate_method"] == "hodges-lehmann", row
        said = _hover(page, server)
        assert UNPAIRED_EN in said and PAIRED_EN not in said, said
        assert (f"the {row['ratio_ci_level_pct']}% interval {row['ratio_ci_low_pct']}–"
                f"{row['ratio_ci_high_pct']}% ({UNPAIRED_EN})") in said, said
    # A study's own blocks still pair: pg18 against pg17 of the first machine.
    assert rows["truth (1)/pg18"]["ratio_ci_method"] == "signed-rank"
    assert PAIRED_EN in _hover(page, "truth (1)/pg18")
    legend = " ".join(md.replace("\\", "").split())
    assert ("Ratios: Hodges–Lehmann interval of the two sets of repetitions (the servers share "
            "no repetition set).") in legend
    # Each machine's trials keep their own per-second series: the first stored none.
    seconds = {}
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 11 and cells[1].startswith("truth (") and cells[2] == WORKLOAD:
            seconds.setdefault(cells[0], set()).add((cells[1].split("/")[0], cells[7]))
    assert len(seconds) == 2 * 2 * 8  # two stores × two servers × eight blocks, each its own id
    assert {s for found in seconds.values() for s in found} == {
        ("truth (1)", "0"), ("truth (2)", str(SECONDS))}, seconds

    # The same two studies in one store: the same intervals, to the digit.
    one = tmp_path / "one.db"
    for store in (a, b):
        run_cli("store", "copy", str(store), str(one), check=True)
    alone, _, _ = _compare(tmp_path / "one", "en", "--store", str(one), "--studies", "1,2")
    assert {s: _interval(r) for s, r in alone.items()} == {s: _interval(r) for s, r in rows.items()}

    # In Japanese: the same method named.
    ja_rows, ja_md, ja_page = _compare(tmp_path / "ja", "ja", "--store", str(a), "--store", str(b))
    for server in CROSS:
        said = _hover(ja_page, server)
        assert "2 組の繰り返しに対する Hodges–Lehmann の信頼区間" in said, said
        assert "ブロックごとの比に対する符号付き順位による信頼区間" not in said, said
        assert _interval(ja_rows[server]) == _interval(rows[server])
    assert ("基準比: 2 組の繰り返しに対する Hodges–Lehmann の信頼区間（共通の繰り返しセットなし）。"
            in " ".join(ja_md.replace("\\", "").split()))
