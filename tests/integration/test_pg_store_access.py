"""A PostgreSQL store whose role may not create teiten's schema (issue 21): one line that says
what to grant, exit 2, nothing made in the database; a database without a store is named as
such when it is read."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli, scratch_database

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
