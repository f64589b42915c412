"""METHODS S3's three builds, built and run (issue 57, item 8): the PostgreSQL 15 source with its
default flags, and again with the data-checksum code (checksum.o) compiled without the vectorising
flags (the no-vector-checksums preset); the study s3-checksums at its smallest (scale 1, one
client, 1 s trials) runs no checksums and checksums on the plain build and checksums on the
no-vector one. Built through ccache into the suite's cache, so that only a cold cache pays for it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from tests.conftest import ROOT, SourceBuild, run_cli

pytestmark = pytest.mark.slow


def _checksum_compile(build: SourceBuild) -> str:
    """The compiler's line for checksum.c in the build's log (make prints each command)."""
    manifest = json.loads((build.bindir.parent / "teiten-install.json").read_text())
    log = Path(manifest["build_log"])
    lines = [ln for ln in log.read_text(errors="replace").splitlines()
             if re.search(r"\s-c\b.*\bchecksum\.c\b", ln)]
    assert len(lines) >= 1, f"no compile of checksum.c in {log}"
    return lines[-1]


def test_s3_three_builds_run_the_checksum_study(plain_build: SourceBuild, novector_build: SourceBuild,
                                               workdir: Path) -> None:
    plain, novector = _checksum_compile(plain_build), _checksum_compile(novector_build)
    assert "-ftree-vectorize" in plain, plain  # PostgreSQL 12 and later: CFLAGS_VECTORIZE
    assert "-ftree-vectorize" not in novector, novector
    manifest = json.loads((novector_build.bindir.parent / "teiten-install.json").read_text())
    assert manifest["preset"] == "no-vector-checksums"
    assert manifest["make_variables"] == {"CFLAGS_VECTORIZE": "",
                                          "scope": "src/backend/storage/page (checksum.o)"}

    study = yaml.safe_load((ROOT / "src" / "teiten" / "studies" / "s3-checksums.yaml").read_text())
    for server in study["servers"]:  # the built-in study's servers, on this source's two builds
        server["install"] = novector_build.name if server["name"] == "checksums-no-vector" else plain_build.name
    study.update(scale=1, clients=[1], duration="1s", repetitions=1)
    (workdir / "s3.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    store = workdir / "s3.db"
    done = run_cli("run", str(workdir / "s3.yaml"), "--store", str(store), "--report", str(workdir / "rep"))
    assert done.returncode == 0, done.stderr
    assert "left out" not in done.stdout + done.stderr  # the third server ran
    rows = json.loads(run_cli("results", "--store", str(store), "--format", "json").stdout)
    assert sorted((r["server"], r["status"]) for r in rows) == [
        ("checksums", "ok"), ("checksums-no-vector", "ok"), ("no-checksums", "ok")]
    report = (workdir / "rep" / "report.md").read_text()
    recorded = dict(re.findall(r"^### (\S+)\n\n(?:\|.*\n)*?\| Data checksums \| (\w+) \|", report, re.M))
    assert recorded == {"no-checksums": "off", "checksums": "on", "checksums-no-vector": "on"}
    assert "pg15-no-vector-checksums" in report
