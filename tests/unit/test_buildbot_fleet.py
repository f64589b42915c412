"""The fleet's logic of docs/buildbot/fleet.py without Buildbot (tests/e2e/test_buildbot.py runs
it under a real master): the settings and their overrides, which build is the previous one and
why there is none, the study file of a commit, and the study the gate judges."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from teiten import spec

FLEET = Path(__file__).resolve().parents[2] / "docs" / "buildbot" / "fleet.py"
A, B = "a" * 40, "b" * 40


def _fleet() -> ModuleType:
    found = importlib.util.spec_from_file_location("fleet", FLEET)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


fleet = _fleet()


def _settings(**env: str) -> dict:
    return fleet.load({"TEITEN_FLEET_SETTINGS": str(FLEET.parent / "fleet.yaml"), **env})


def test_the_shipped_settings_load_and_the_environment_overrides_them() -> None:
    shipped = _settings()
    assert shipped["branch"] == "master" and shipped["poll_interval"] == 300
    assert shipped["workers"] == ["ci-box-1", "ci-box-2"]
    got = _settings(TEITEN_FLEET_REPOSITORY="/srv/pg.git", TEITEN_FLEET_BRANCH="main",
                    TEITEN_FLEET_POLL_INTERVAL="10")
    assert (got["repository"], got["branch"], got["poll_interval"]) == ("/srv/pg.git", "main", 10)


def test_a_worker_that_cannot_name_a_testbed_is_refused(tmp_path: Path) -> None:
    settings = yaml.safe_load((FLEET.parent / "fleet.yaml").read_text())
    settings["workers"] = ["ci box"]
    (tmp_path / "f.yaml").write_text(yaml.safe_dump(settings))
    with pytest.raises(fleet.SettingsError, match="worker 'ci box' cannot name a testbed"):
        fleet.load({"TEITEN_FLEET_SETTINGS": str(tmp_path / "f.yaml")})


def test_worker_passwords_come_from_their_file(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text("# name password\nci-box-1 s3cret\n")
    env = {"TEITEN_FLEET_WORKER_PASSWORDS": str(tmp_path / "pw")}
    assert fleet.worker_passwords(["ci-box-1"], env) == {"ci-box-1": "s3cret"}
    with pytest.raises(fleet.SettingsError, match="no password for worker ci-box-2"):
        fleet.worker_passwords(["ci-box-1", "ci-box-2"], env)


def test_the_previous_build_is_the_first_parents_install_on_this_worker() -> None:
    settings = _settings()
    assert fleet.parent(0, f"{A}\n", "") == {"parent": A}
    assert fleet.parent(1, "", "") == {"parent": ""}  # a root commit: rev-parse REV^1 fails
    assert fleet.previous(settings, {"parent": "", "installed": []}) == (
        None, "no previous build: the commit has no parent")
    assert fleet.previous(settings, {"parent": A, "installed": [f"fleet-{B[:12]}"]}) == (
        None, f"no previous build: its parent {A[:12]} was not built on this worker")
    installs = json.dumps([{"origin": "pypi", "name": None},
                           {"origin": "source", "name": "pg15-lwlock", "commit": None},
                           {"origin": "source", "name": f"fleet-{A[:12]}", "commit": A}])
    found = fleet.installed(0, installs, "")
    assert found == {"installed": [f"fleet-{A[:12]}"]}
    assert fleet.previous(settings, {"parent": A, **found}) == (f"fleet-{A[:12]}", "")


def test_a_commits_study_pairs_the_previous_build_with_the_new_one() -> None:
    settings = _settings()
    argv = fleet.install_argv(settings, "../repo", B)
    assert argv == ["teiten", "install", "--from-git", "../repo", "--commit", B,
                    "--name", f"fleet-{B[:12]}"]
    for previous in (f"fleet-{A[:12]}", None):
        text = fleet.study_text(settings, previous, f"fleet-{B[:12]}")
        loaded = spec.load_text(text, "<fleet>")  # a study file teiten takes
        names = [s.name for s in loaded.study.servers]
        assert names == (["previous", "new"] if previous else ["new"])
        assert yaml.safe_load(text)["study"] == "fleet"


def test_the_gate_judges_this_testbeds_latest_finished_study() -> None:
    rows = [{"study_id": 1, "name": "fleet", "state": "finished", "testbed": "ci-box-1"},
            {"study_id": 2, "name": "fleet", "state": "finished", "testbed": "ci-box-2"},
            {"study_id": 3, "name": "fleet", "state": "finished", "testbed": "ci-box-1"},
            {"study_id": 4, "name": "fleet", "state": "running", "testbed": "ci-box-1"},
            {"study_id": 5, "name": "other", "state": "finished", "testbed": "ci-box-1"}]
    assert fleet.latest_studies("fleet")(0, json.dumps(rows), "") == {
        "studies": {"ci-box-1": 3, "ci-box-2": 2}}
