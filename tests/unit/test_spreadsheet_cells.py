"""CSV cells safe to open in a spreadsheet (issue 34): text that a spreadsheet would evaluate
as a formula gets a leading ', numbers stay numbers, in the report's tables and in
``teiten results --format csv`` alike."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from types import SimpleNamespace
from typing import Any, cast

import pytest

from teiten.analysis.differences import differences
from teiten.analysis.model import ReportData
from teiten.cli.output import as_csv
from teiten.model.results import ServerRecord
from teiten.report.exports import DataTable, csv_text, differences_table
from teiten.report.spreadsheet import cell

LINK = '=HYPERLINK("http://x","y")'


@pytest.mark.parametrize("text", [LINK, "+1", "-cmd", "@SUM(A1)", "\tfoo", "\rfoo"])
def test_text_a_spreadsheet_would_evaluate_is_neutralised(text: str) -> None:
    assert cell(text) == "'" + text


@pytest.mark.parametrize("value", [-3.5, -2, 0, 1462.79, Decimal("-3.2"), True])
def test_numbers_stay_numbers(value: Any) -> None:
    assert cell(value) is value


@pytest.mark.parametrize("text", ["pg17", "select-only", "", "3 failed", "a=b", "x-1", "—", "'quoted"])
def test_other_text_is_unchanged(text: str) -> None:
    assert cell(text) == text


def test_none_is_an_empty_cell() -> None:
    assert cell(None) == ""


def _read(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def test_both_writers_neutralise_text_and_keep_numbers() -> None:
    columns = ("server", "error", "tps", "rate_pct", "n")
    row = ("pg17", LINK, None, -3.5, -2)
    table = DataTable("t", "w", "tps", columns, (row,))
    want = [list(columns), ["pg17", "'" + LINK, "", "-3.5", "-2"]]
    assert _read(csv_text(table)) == want
    assert _read(as_csv([dict(zip(columns, row, strict=True))], columns)) == want


def _server(name: str, settings: dict[str, str]) -> ServerRecord:
    description = {
        "version": "17.11", "data_checksums": False, "origin": "pypi",
        "pg_config": {"CONFIGURE": "", "CFLAGS": "-O2", "CC": "gcc"},
        "cluster": {"encoding": "UTF8", "collate": "C", "ctype": "C"},
        "defaults": {}, "pgbench": "17.11",
        "settings": {k: {"setting": v, "unit": None, "source": "configuration file"}
                     for k, v in settings.items()},
    }
    return ServerRecord(name, 0, "local", {"name": name, "install": "17", "settings": settings},
                        description)


def test_a_setting_value_reaches_the_differences_csv_neutralised() -> None:
    """A study's setting value is user text: in tables/differences.csv it is shown, not run."""
    servers = [_server("a", {}), _server("b", {"cluster_name": LINK})]
    data = cast(ReportData, SimpleNamespace(differences=differences(servers), servers=servers,
                                            lang="en"))
    rows = list(csv.DictReader(io.StringIO(csv_text(differences_table(data)))))
    assert rows == [{"what": "cluster_name", "a": "—", "b": "'" + LINK, "cause": "declared"}]
