"""One study run through the real ``teiten run`` for an end-to-end module: the study file
written into a fresh work directory, the clusters on the machine before and after, and what
the store kept, read back with plain SQL (not teiten's own reader)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable
from typing import Any

from tests.conftest import TEST_HOME, clusters_snapshot, run_cli


def by_server(row: sqlite3.Row) -> Any:
    return row["server"]


def run_study(study: str, text: str, *, work: str, key: Callable[[sqlite3.Row], Any] = by_server,
              lang: str | None = None, timeout: float = 900) -> dict[str, Any]:
    """Run ``text`` (a study named ``study``) into TEST_HOME/work/``work``; the trials are keyed
    by ``key`` of their row. The report's markdown is read only when the run succeeded."""
    where = TEST_HOME / "work" / work
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    (where / "s.yaml").write_text(text)
    before = clusters_snapshot(study)
    extra = ("--lang", lang) if lang else ()
    done = run_cli("run", str(where / "s.yaml"), "--store", str(where / "r.db"),
                   "--report", str(where / "report"), *extra, timeout=timeout)
    conn = sqlite3.connect(where / "r.db")
    conn.row_factory = sqlite3.Row
    try:
        found = {
            "trials": {key(r): dict(r) for r in conn.execute("SELECT * FROM trials")},
            "details": {(r["trial_id"], r["kind"]): json.loads(r["body"])
                        for r in conn.execute("SELECT * FROM details")},
            "metrics": {(r["trial_id"], r["name"]): r["value"]
                        for r in conn.execute("SELECT * FROM metrics")},
            "spec": json.loads(conn.execute("SELECT spec_json FROM studies").fetchone()[0]),
            "versions": {r["name"]: json.loads(r["description"] or "{}").get("version")
                         for r in conn.execute("SELECT name, description FROM servers")},
        }
    except (sqlite3.Error, TypeError) as e:
        raise AssertionError(f"the store of a run that exited {done.returncode} cannot be read "
                             f"({e}):\n{done.stderr}") from None
    finally:
        conn.close()
    report = where / "report" / "report.md"
    return {**found, "run": done, "work": where, "store": where / "r.db", "before": before,
            "after": clusters_snapshot(study),
            "md": report.read_text() if done.returncode == 0 and report.exists() else ""}
