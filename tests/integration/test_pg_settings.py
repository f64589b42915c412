"""Setting names are checked against the install's own pg_settings (issue 34): the settings
``postgres --describe-config`` leaves out are accepted where a configuration file can carry
them, and refused with a line that says why where it cannot; the list is read once per
install."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.conftest import run_cli, scratch_database

from teiten.host import paths
from teiten.installs import Install
from teiten.servers import pg_settings

# Flagged GUC_DISALLOW_IN_FILE in PostgreSQL 17's guc_tables.c and listed by pg_settings: a
# configuration file cannot carry them, though their context is not 'internal'.
NOT_IN_FILE_17 = {"config_file", "transaction_isolation", "transaction_read_only",
                  "transaction_deferrable"}


@dataclass(frozen=True)
class Listed:
    """What a running server of the install says of its settings, and what describe-config says."""

    rows: dict[str, tuple[str, str]]  # name -> (context, reset_val), from pg_settings
    described: set[str]

    @property
    def missed(self) -> list[str]:
        """The settings of pg_settings that describe-config leaves out."""
        return sorted(n for n in self.rows if n not in self.described)


@pytest.fixture(scope="module")
def listed17(pg17: Install) -> Listed:
    with scratch_database(pg17) as db, db.cluster.connect() as conn:  # type: ignore[attr-defined]
        rows = {name: (context, reset) for name, context, reset in conn.execute(
            "SELECT name, context, reset_val FROM pg_settings")}
    done = subprocess.run([str(pg17.binary("postgres")), "--describe-config"], text=True,
                          capture_output=True, timeout=30, check=True)
    return Listed(rows, {line.split("\t", 1)[0] for line in done.stdout.splitlines() if line})


def test_every_setting_describe_config_missed_is_judged_by_what_a_file_can_carry(
        pg17: Install, listed17: Listed) -> None:
    missed = listed17.missed
    print(f"{len(missed)} settings of {pg17.version} that describe-config leaves out: {missed}")
    assert {"jit_expressions", "application_name", "server_version"} <= set(missed)
    known = pg_settings.catalogue(pg17)
    assert known is not None
    head = f"PostgreSQL {pg17.version} cannot take '"
    for name in missed:
        context, _ = listed17.rows[name]
        said = known.refusal(name)
        if context == "internal":
            assert said == (f"{head}{name}' from a configuration file: it is read-only (compiled "
                            "in, or fixed by initdb or at start); remove it from settings"), name
        elif name in NOT_IN_FILE_17:
            assert said is not None and said.startswith(
                f"{head}{name}' from a configuration file (it is set per session or transaction, "
                "or on the server's command line); "), name
        else:
            assert said is None, said
    # Every setting describe-config lists is one a configuration file carries.
    assert [n for n in listed17.described if known.refusal(n) is not None] == []


def test_plan_accepts_every_setting_a_file_can_carry_that_describe_config_missed(
        pg17: Install, listed17: Listed, workdir: Path) -> None:
    """Through the real command: each with the value a fresh cluster has (postgres -C checks
    the values too)."""
    carried = {n: listed17.rows[n][1] for n in listed17.missed
               if listed17.rows[n][0] != "internal" and n not in NOT_IN_FILE_17}
    assert len(carried) >= 25, carried
    settings = "".join(f"      {name}: {json.dumps(value)}\n" for name, value in carried.items())
    study = workdir / "study.yaml"
    study.write_text(f"study: missed\nservers:\n  - name: a\n    install: \"17\"\n    settings:\n"
                     f"{settings}workloads:\n  - pgecons-read\n")
    done = run_cli("plan", str(study), timeout=180)
    assert done.returncode == 0, done.stderr
    assert "error" not in done.stderr


@pytest.mark.parametrize("version", ["pg96", "pg18"])
def test_the_oldest_and_newest_majors_are_listed_too(version: str,
                                                     request: pytest.FixtureRequest) -> None:
    install: Install = request.getfixturevalue(version)
    known = pg_settings.catalogue(install)
    assert known is not None and len(known.settings) > 250
    assert known.refusal("application_name") is None
    assert known.refusal("DateStyle") is None and known.refusal("datestyle") is None
    head = f"PostgreSQL {install.version} cannot take '"
    assert (known.refusal("server_version") or "").startswith(f"{head}server_version' from a "
                                                              "configuration file: it is read-only")
    assert known.refusal("transaction_isolation") == (
        f"{head}transaction_isolation' from a configuration file (it is set per session or "
        "transaction, or on the server's command line); set 'default_transaction_isolation' "
        "instead")
    setting = known.get("default_transaction_isolation")
    assert setting is not None and setting.vartype == "enum" and setting.in_file
    assert "serializable" in setting.enumvals
    assert known.refusal("no_such_setting") == f"PostgreSQL {install.version} has no setting " \
                                               "'no_such_setting'"


def test_the_list_is_read_once_per_install_and_leaves_no_cluster(
        pg17: Install, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first look makes a throwaway cluster and keeps what it read in teiten's cache; the
    next (another teiten process: the memo emptied) reads the file and makes none."""
    monkeypatch.setenv("TEITEN_HOME", str(workdir / "home"))
    monkeypatch.setattr(pg_settings, "_memo", {})
    cache = pg_settings.cache_path(pg17)
    assert cache.is_relative_to(workdir / "home" / "settings") and not cache.exists()
    started = time.monotonic()
    first = pg_settings.catalogue(pg17)
    print(f"listing the settings of PostgreSQL {pg17.version} took {time.monotonic() - started:.2f} s")
    assert first is not None and cache.is_file()
    assert [p.name for p in paths.clusters_dir().iterdir()] == [], "the throwaway cluster is left"

    def no_cluster(install: Install) -> pg_settings.Catalogue:
        raise AssertionError(f"a cluster of {install.version} was made again")

    monkeypatch.setattr(pg_settings, "_memo", {})
    monkeypatch.setattr(pg_settings, "build", no_cluster)
    assert pg_settings.catalogue(pg17) == first
