"""A PostgreSQL store whose role may not create teiten's schema (issue 21), or may not use the
schema of a store that exists (issue 34): one line that says what to grant, exit 2, nothing made
or changed in the database; a database without a store is named as such when it is read."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import run_cli, scratch_database

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "report-stores"

STUDY = """
study: pgstore-access
servers: [{name: pg18, install: "18"}]
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
"""


def test_a_role_that_may_not_create_the_schema_is_told_what_to_grant(
        pg18, workdir: Path) -> None:  # noqa: ANN001
    with scratch_database(pg18) as scratch:
        cluster = scratch.cluster
        with cluster.connect() as conn:  # type: ignore[attr-defined]
            conn.execute("CREATE ROLE reader LOGIN")
        url = f"postgresql://reader@127.0.0.1:{cluster.port}/teiten_scratch"  # type: ignore[attr-defined]
        read = run_cli("studies", "--store", url)
        assert read.returncode == 2, read.stderr
        assert read.stderr.strip() == (f"teiten: error: no teiten store in {url} (its schema "
                                       "teiten has none); give the --store that 'teiten run' "
                                       "wrote")
        (workdir / "s.yaml").write_text(STUDY)
        done = run_cli("run", str(workdir / "s.yaml"), "--store", url, "--no-report")
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stderr.strip().splitlines()[-1] == (
            f"teiten: error: the store {url} refused: permission denied for database "
            "teiten_scratch; give a role that may create the schema teiten and its tables there "
            "(GRANT CREATE ON DATABASE ...), or another database"), done.stderr
        with cluster.connect("teiten_scratch") as conn:  # type: ignore[attr-defined]
            assert conn.execute("SELECT count(*) FROM pg_namespace WHERE nspname = 'teiten'"
                                ).fetchone()[0] == 0, "nothing made"


def test_a_role_without_usage_on_the_schema_is_told_what_to_grant(pg18, workdir: Path) -> None:  # noqa: ANN001
    """The store exists, but the role may not use its schema: PostgreSQL's search path skips
    the schema, which would read as 'relation "meta" does not exist' (exit 1)."""
    quick = workdir / "quick.db"
    shutil.copyfile(GOLDEN / "quick.db", quick)
    with scratch_database(pg18) as scratch:
        cluster = scratch.cluster
        port = cluster.port  # type: ignore[attr-defined]
        run_cli("store", "copy", str(quick), f"postgresql://postgres@127.0.0.1:{port}/teiten_scratch",
                check=True)
        with cluster.connect() as conn:  # type: ignore[attr-defined]
            conn.execute("CREATE ROLE reader LOGIN")
        url = f"postgresql://reader@127.0.0.1:{port}/teiten_scratch"
        (workdir / "s.yaml").write_text(STUDY)
        for args in (("studies", "--store", url), ("results", "--store", url),
                     ("run", str(workdir / "s.yaml"), "--store", url, "--no-report")):
            done = run_cli(*args)
            assert "Traceback" not in done.stderr, done.stderr
            assert done.returncode == 2, (args, done.stderr)
            assert done.stderr == (
                f"teiten: error: the role reader may not use the schema teiten of the store {url} "
                "(it lacks the USAGE privilege on it); grant it with GRANT USAGE ON SCHEMA teiten "
                "TO reader, or give another role\n"), done.stderr
        with cluster.connect("teiten_scratch") as conn:  # type: ignore[attr-defined]
            assert conn.execute("SELECT count(*) FROM teiten.studies").fetchone()[0] == 1, \
                "the store is as it was"
