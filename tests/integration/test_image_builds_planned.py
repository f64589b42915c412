"""`teiten plan` counts the image a run must build first (issue 54 item 8: 12 s planned against
383 s run with a VM server, 85 s against 430 s with Docker, and 4.5 minutes of silence while the
image was built): a VM guest this machine has not built is named in the estimate with its
minutes, a guest in the cache is not; and a long build says that it begins, how long it has
taken every minute, and when it is done. The real CLI with a fresh TEITEN_HOME (no guest built)
and the suite's PostgreSQL 17 install."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.conftest import ROOT
from tests.requirements import missing

from teiten import installs
from teiten.host import waiting
from teiten.installs import Install
from teiten.run import estimate
from teiten.servers import rootfs
from teiten.servers.vm import image as vm_image
from teiten.spec import load_text

STUDY = """
study: vm-plan
servers:
  - {{name: guest, install: "{bindir}", vm: {{memory: 1GB, accelerator: tcg}}}}
workloads: [select-only]
scale: 1
clients: [1]
duration: 1s
repetitions: 2
"""


def _plan(study: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"))
    return subprocess.run([sys.executable, "-m", "teiten", "plan", str(study)], env=env, text=True,
                          capture_output=True, timeout=300)


def _estimate(stderr: str) -> str:
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("teiten: note: estimate:")]
    return line


def test_plan_counts_a_vm_guest_not_built_and_not_one_in_the_cache(pg17: Install,
                                                                   tmp_path: Path) -> None:
    if shutil.which("qemu-system-x86_64") is None or shutil.which("mmdebstrap") is None:
        missing("qemu and mmdebstrap (make system installs them)")
    home = tmp_path / "home"
    home.mkdir(mode=0o755)
    tmp_path.chmod(0o755)
    study = tmp_path / "vm.yaml"
    study.write_text(STUDY.format(bindir=pg17.bindir))
    first = _plan(study, home)
    assert first.returncode == 0, first.stderr
    line = _estimate(first.stderr)
    assert vm_image.BUILD_S == 370.0
    assert f"6 min 10 s building the VM guest of {pg17.bindir} (the first time only)" in line, line
    # A finished guest of that install in the cache (its record, as a build leaves it): the
    # estimate no longer counts one.
    given = installs.resolve(str(pg17.bindir)).install  # as the study gives it: by its path
    assert given is not None
    built = home / "vm" / vm_image._name(given, rootfs.install_dirs(given))
    built.mkdir(parents=True)
    (built / vm_image.DONE).write_text(json.dumps({
        "recipe": vm_image.RECIPE, "host_key": "ssh-ed25519 AAAA", "packages": [],
        "install_dirs": [str(pg17.bindir.parent)], "seconds": 200.0}))
    again = _plan(study, home)
    assert again.returncode == 0, again.stderr
    assert "building" not in _estimate(again.stderr), again.stderr


def test_a_long_step_says_it_begins_how_long_it_has_taken_and_that_it_is_done(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="teiten.progress")
    with waiting.telling("building the VM guest of /x/bin", 370.0, every_s=0.1):
        time.sleep(0.35)
    said = [r.getMessage() for r in caplog.records if r.name == "teiten.progress"]
    assert said[0] == "building the VM guest of /x/bin (the first time only; about 6 min 10 s)..."
    assert said[-1] == "building the VM guest of /x/bin: done in 0 s"
    ticks = said[1:-1]
    assert len(ticks) >= 2 and all(t == "building the VM guest of /x/bin: 0 s so far" for t in ticks), said


def test_a_docker_server_counts_its_image_unless_the_engine_has_it(
        pg17: Install, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine that does not answer (a socket nobody listens on) cannot say it has the image:
    the build is counted; an image named by the study is pulled, never built."""
    if shutil.which("docker") is None:
        missing("the docker CLI (make system installs docker.io)")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nobody.sock")
    loaded = load_text("study: d\nservers:\n  - {name: c, install: '17', docker: {}}\n"
                       "  - {name: n, install: '17', docker: {image: 'postgres:17'}}\n"
                       "workloads: [select-only]\nscale: 1\nclients: [1]\nduration: 1s\n"
                       "repetitions: 1\n", "d")
    found = estimate.images(loaded.study, {"c": pg17, "n": pg17})
    assert found == ((f"the Docker image of {pg17.bindir}", 345.0),)
