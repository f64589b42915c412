"""A PostgreSQL store as a team shares one, for tests: a real cluster the test starts (not one
being benchmarked), with an empty database teiten_store owned by a role bench whose password
is required over TCP on 127.0.0.1 (scram-sha-256); libpq gives teiten the password."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import scratch_database

from teiten.servers.cluster import Cluster

SECRET = "Store-Secret-7q"


@contextmanager
def serve(install) -> Iterator[Cluster]:  # noqa: ANN001
    """The running store cluster of ``install``, stopped and removed afterwards."""
    with scratch_database(install) as scratch:
        cluster = scratch.cluster
        assert isinstance(cluster, Cluster)
        with cluster.connect() as conn:
            conn.execute("CREATE DATABASE teiten_store")
            conn.execute(f"CREATE ROLE bench LOGIN PASSWORD '{SECRET}'")
            conn.execute("ALTER DATABASE teiten_store OWNER TO bench")
        hba = cluster.data / "pg_hba.conf"
        hba.write_text("host all bench 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        with cluster.connect() as conn:
            conn.execute("SELECT pg_reload_conf()")
        yield cluster


def url(cluster: Cluster) -> str:
    return f"postgresql://bench@127.0.0.1:{cluster.port}/teiten_store"


def passfile(cluster: Cluster, path: Path) -> Path:
    """A libpq passfile (mode 0600) that gives the store's password."""
    path.write_text(f"127.0.0.1:{cluster.port}:teiten_store:bench:{SECRET}\n")
    path.chmod(0o600)
    return path
