"""``python -m build`` makes a wheel and an sdist that ``twine check`` accepts, with the LICENSE
inside and teiten's version (the release and the commit) in both, also in a wheel built from the
sdist; the wheel, unpacked alone, runs ``teiten --version`` and lists the built-in studies from its
package data (issue 56's last "Done when").

The build runs in a copy of the checkout's files (git ls-files, as they are in the working tree)
with a .git holding only HEAD's commit, so that nothing is written into the checkout, and without
build isolation (the test extras carry setuptools), so that nothing is downloaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
from tests.conftest import ROOT

import teiten
from teiten import checkout_commit

pytestmark = pytest.mark.slow


def _copy_checkout(dest: Path) -> None:
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    commit = checkout_commit(str(ROOT / "src" / "teiten"))
    if commit:  # the copy is of this commit (with what the working tree changed)
        (dest / ".git").mkdir()
        (dest / ".git" / "HEAD").write_text(commit + "\n")


def _build(source: Path, out: Path, *only: str) -> list[Path]:
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", *only, "--outdir", str(out),
                           str(source)], capture_output=True, text=True, cwd=source)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return sorted(out.iterdir())


def test_build_makes_a_wheel_and_sdist_twine_accepts_with_the_license_and_version(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the copy needs git ls-files")  # CI and make test run in one
    source = tmp_path / "checkout"
    _copy_checkout(source)
    made = _build(source, tmp_path / "dist", "--sdist", "--wheel")
    version = teiten.__version__
    wheel, sdist = (next(p for p in made if p.name.endswith(end)) for end in (".whl", ".tar.gz"))
    assert wheel.name == f"teiten-{version}-py3-none-any.whl"
    assert sdist.name == f"teiten-{version}.tar.gz"
    twine = shutil.which("twine", path=os.path.dirname(sys.executable)) or "twine"
    checked = subprocess.run([twine, "check", "--strict", str(wheel), str(sdist)], capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2, checked.stdout
    license_text = (ROOT / "LICENSE").read_text()
    assert "PostgreSQL" in license_text
    with zipfile.ZipFile(wheel) as whl:
        assert whl.read(f"teiten-{version}.dist-info/licenses/LICENSE").decode() == license_text
        metadata = whl.read(f"teiten-{version}.dist-info/METADATA").decode()
        names = whl.namelist()
    assert f"Version: {version}\n" in metadata and "License-Expression: PostgreSQL\n" in metadata
    assert "License-File: LICENSE\n" in metadata
    assert "teiten/studies/s1-read.yaml" in names and "teiten/messages/texts.yaml" in names
    with tarfile.open(sdist) as tar:
        member = tar.extractfile(f"teiten-{version}/LICENSE")
        assert member is not None and member.read().decode() == license_text
        for entry in tar.getmembers():  # Python 3.11.2's tarfile has no extraction filter
            assert entry.name.split("/")[0] == f"teiten-{version}" and ".." not in entry.name.split("/")
            assert entry.isfile() or entry.isdir(), entry.name
        tar.extractall(tmp_path / "unpacked")

    # A wheel built from the sdist (no .git there) carries the same version, read from PKG-INFO.
    again = _build(tmp_path / "unpacked" / f"teiten-{version}", tmp_path / "dist2", "--wheel")
    assert [p.name for p in again] == [wheel.name]

    # The wheel alone (unpacked, ahead of the checkout's editable install) answers from its own files.
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as whl:
        whl.extractall(site)
    env = {**os.environ, "PYTHONPATH": str(site)}
    shown = subprocess.run([sys.executable, "-c", "import teiten, sys; print(teiten.__file__); "
                            "sys.argv = ['teiten', '--version']; from teiten.cli.main import main; main()"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    where, printed = shown.stdout.splitlines()
    assert where.startswith(str(site)), where
    assert printed == f"teiten {version}"
    listed = subprocess.run([sys.executable, "-m", "teiten", "study", "list"], capture_output=True, text=True,
                            env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "s1-read" in listed.stdout
