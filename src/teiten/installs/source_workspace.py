"""``$TEITEN_HOME/builds/<key>``: where a source build runs (installs/source.py), and the
checks on what it installed.

The workspace holds the build log (locked while building, so two teitens never build one
key at once), the unpacked tarball, the VPATH build directory and the staging directory of
``make install DESTDIR=...``. Every step appends its output to the log; a failed step is a
UserError with the log's tail. Closing removes all but the log.

As root, the build runs as the build account (the server account,
:func:`teiten.host.privileges.server_account`): root unpacks or copies the source, hands the
source, build and staging directories to that account, and runs configure, make and ``make
install DESTDIR=...`` as it, so that what a source tree's configure or Makefile does runs
with that account's rights only. The staged install is then copied by root (:func:`take`)
into a directory of root's, through descriptors, never following a link the account made:
root's copy has root's owner and modes no other account can write, and its manifest is
written from that copy.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shlex
import shutil
import stat
import tarfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from teiten.host import paths, privileges, procs, safefs
from teiten.installs import archives, source_git
from teiten.installs.releases import Release
from teiten.installs.source_git import Commit
from teiten.installs.source_key import Preset
from teiten.model.errors import InstallError, ProcessError, UserError

log = logging.getLogger(__name__)

EXPORTED = "commit.tar"  # a commit's tree, while it is unpacked (--from-git)


class Workspace:
    """``builds/<key>``: the log (locked while building), source, build and staging dirs. A
    second teiten that builds the same key waits for the first, then looks again for its
    finished build before it starts one (:meth:`begin`)."""

    def __init__(self, root: Path, purpose: str):
        if root.exists() and not paths.is_owned(root):
            raise UserError(f"{root} exists but teiten did not create it; move it away")
        if not root.exists():
            paths.make_owned(root, f"build of PostgreSQL {purpose}")
        self.root, self.purpose = root, purpose
        self.log_path = root / "build.log"
        self.log: IO[str] = self.log_path.open("a")
        try:
            fcntl.flock(self.log, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another teiten builds the same: its build may serve us
            log.warning("waiting for another teiten that builds the same source and flags in "
                        "%s", root)
            fcntl.flock(self.log, fcntl.LOCK_EX)
        self.commands: list[dict[str, object]] = []
        self.src, self.build, self.stage = root / "src", root / "build", root / "stage"
        self.account = privileges.server_account()  # who builds: None when teiten is not root

    def begin(self) -> None:
        """Start a build here: a fresh log, and empty build and staging directories."""
        self.log.truncate(0)
        for sub in (self.src, self.build, self.stage):
            paths.remove_owned(sub)  # an earlier build that was killed before cleaning up
        paths.make_owned(self.build, f"VPATH build dir of {self.purpose}")
        paths.make_owned(self.stage, f"DESTDIR of {self.purpose}")
        if self.account is not None:
            privileges.ensure_reachable(self.build)
            safefs.give(self.build)
            safefs.give(self.stage)

    def hand_over(self) -> None:
        """Give what root just unpacked or copied into ``src`` to the build account: every
        entry below it, links themselves (never followed), each directory after what it
        holds; ``src`` itself and teiten's marker there stay root's."""
        if self.account is None:
            return
        uid, gid = self.account.uid, self.account.gid
        for directory, dirs, files in os.walk(self.src, topdown=False):
            for name in dirs + files:
                if directory != str(self.src) or name != paths.MARKER:
                    os.chown(os.path.join(directory, name), uid, gid, follow_symlinks=False)
        privileges.ensure_reachable(self.src)

    def release(self) -> None:
        """Leave the workspace as it is (another teiten's finished build serves): unlock it."""
        self.log.close()

    def unpack(self, tarball: Path) -> Path:
        paths.make_owned(self.src, f"unpacked {tarball}")
        try:
            with tarfile.open(tarball) as tar:
                archives.extract_all(tar, self.src)
        except (tarfile.TarError, OSError) as exc:
            raise UserError(f"cannot unpack {tarball}: {exc}") from None
        tops = [p for p in self.src.iterdir() if p.name != paths.MARKER]
        if len(tops) != 1 or not (tops[0] / "configure").is_file() or \
                not (tops[0] / "src" / "backend").is_dir():
            raise UserError(f"{tarball} does not hold a PostgreSQL source tree (one top "
                            "directory with configure and src/backend)")
        self.hand_over()
        return tops[0]

    def unpack_commit(self, commit: Commit) -> Path:
        """A commit's tree exported (``git archive``) and unpacked as ``src/postgresql-<version>``,
        where a tarball unpacks (so the compiler cache hits across commits); the archive goes."""
        tarball = self.root / EXPORTED
        tarball.unlink(missing_ok=True)  # left by a build that was killed
        try:
            source_git.export(commit, tarball)
            return self.unpack(tarball)
        finally:
            tarball.unlink(missing_ok=True)

    def copy(self, source: Path, name: str) -> Path:
        """A source directory copied into the workspace as ``src/NAME``, as a tarball is
        unpacked there: every checkout then compiles at the same path relative to its build
        directory, so the compiler cache hits across checkouts (a link would not do:
        PostgreSQL's prep_buildtree runs find, which does not enter a linked directory), and
        the build does not see edits made to the checkout while it runs. Links are copied as
        links, never followed; .git and anything but files, directories and links are left."""
        paths.make_owned(self.src, f"copy of {source}")
        seen = Path(os.path.realpath(self.src)) / name

        def left_out(directory: str, names: list[str]) -> set[str]:
            return {n for n in names if n == ".git" or not _plain(os.path.join(directory, n))}

        shutil.copytree(source, seen, symlinks=True, ignore=left_out)
        self.hand_over()
        return seen

    def step(self, what: str, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
             config_log: Path | None = None) -> None:
        """Run one build step with its output appended to the log; UserError if it fails."""
        self.commands.append({"step": what, "argv": argv})
        self.log.write(f"\n### {what}: {shlex.join(argv)}\n### in {cwd}, {iso(time.time())}\n")
        env = procs.for_account(env, self.account)  # its own HOME and USER, not root's
        try:
            procs.run(argv, timeout=timeout, env=env, cwd=str(cwd), what=what, log=self.log,
                      run_as=self.account)
        except ProcessError as exc:
            self.log.flush()
            detail = _log_tail(self.log_path)
            if config_log is not None and config_log.is_file():
                # config.log has the compiler's own words; it goes away with the build dir.
                self.log.write(f"\n### {config_log}\n{config_log.read_text(errors='replace')}")
            status = f"exit status {exc.returncode}" if exc.returncode is not None else str(exc)
            raise UserError(f"{what} failed ({status}): {detail}; full log: {self.log_path}") \
                from None

    def close(self) -> None:
        """Remove the source, build and staging dirs (whatever happened); keep the log,
        unless no build step ran (a tarball that holds no source): then remove it all."""
        (self.root / EXPORTED).unlink(missing_ok=True)
        for sub in (self.src, self.build, self.stage):
            try:
                paths.remove_owned(sub)
            except OSError as exc:
                log.warning("could not remove %s: %s", sub, exc)
        self.log.close()  # releases the lock
        if not self.commands:
            paths.remove_owned(self.root)


def _plain(path: str) -> bool:
    """A regular file, a directory or a link (not a fifo, socket or device)."""
    mode = os.lstat(path).st_mode
    return stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)


def remove_stale() -> list[str]:
    """Remove the source, build and staging directories of source builds that were killed
    (their workspace's log is locked by no teiten); each workspace keeps its build.log. One
    line for each workspace cleaned."""
    notes = []
    for root in sorted((paths.home() / "builds").glob("*/")):
        subs = [root / sub for sub in ("src", "build", "stage") if (root / sub).is_dir()]
        if not paths.is_owned(root) or not subs or not (root / "build.log").is_file():
            continue
        with (root / "build.log").open("a") as held:
            try:
                fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a build is running there
                continue
            try:
                (root / EXPORTED).unlink(missing_ok=True)
                if [sub for sub in subs if paths.remove_owned(sub)]:
                    notes.append(f"removed the build directories of {root}, left by a source "
                                 "build that was interrupted (its build.log is kept)")
            except OSError as exc:
                log.warning("could not remove the build directories of %s: %s", root, exc)
    return notes


def _log_tail(path: Path, lines: int = 6, width: int = 300) -> str:
    """The last lines of a build log on one line, led by the first compiler error if any
    (with make -j, the error is often far above make's closing lines)."""
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - 256 * 1024))
        text = f.read().decode("utf-8", "replace")
    kept = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("### ")]
    last = kept[-lines:]
    first_error = next((ln for ln in kept if re.search(r"\berror:", ln)), None)
    if first_error is not None and first_error not in last:
        last = [first_error, "...", *last]
    return procs.tail("\n".join(ln if len(ln) <= width else ln[:width] + "..." for ln in last),
                      lines=len(last))


def check_layout(stage: Path, staged: Path) -> None:
    """Everything ``make install`` wrote must be under the prefix."""
    if not staged.is_dir():
        raise InstallError(f"make install put nothing in {staged}")
    level, strays = stage, []
    for part in staged.relative_to(stage).parts:
        strays += [p for p in level.iterdir() if p.name not in (part, paths.MARKER)]
        level = level / part
    if strays:
        where = "/" + str(strays[0].relative_to(stage))
        raise UserError(f"make install wrote outside the prefix (to {where}): this source is "
                        "patched for a distribution package (Debian's per-version-dirs patch "
                        "does this); build the upstream tarball instead ('teiten fetch-source "
                        "MAJOR DIR' fetches it)")


@dataclass(frozen=True)
class PgConfig:
    """What ``pg_config`` of the staged install says of how it was built (the install's
    metadata keeps it as ``pg_config``, key for key)."""

    configure: str
    cflags: str
    cppflags: str

    @classmethod
    def of(cls, staged: Path, env: dict[str, str]) -> PgConfig:
        return cls(*(pg_config(staged, opt, env) for opt in ("configure", "cflags", "cppflags")))

    def to_json(self) -> dict[str, str]:
        return asdict(self)


def pg_config(staged: Path, option: str, env: dict[str, str]) -> str:
    """``pg_config --<option>`` of the staged install, run as the build account."""
    account = privileges.server_account()
    done = procs.run([str(staged / "bin" / "pg_config"), f"--{option}"], timeout=30,
                     env=procs.for_account(env, account), run_as=account)
    return done.stdout.strip()


def take(staged: Path, dest: Path, purpose: str) -> None:
    """Copy the install the build account staged in ``staged`` to ``dest`` (new; its parent
    root's), as root's own: directories 755, files 755 or 644 by their owner's execute bit
    (no setuid, no write for others), links as links; anything else, or a file linked from
    elsewhere (a hard link to a file that is not the account's), is refused. Through
    descriptors: no link the account planted is followed."""
    with safefs.Dir.open(staged) as source, safefs.Dir.open(dest.parent) as parent:
        os.mkdir(dest.name, 0o755, dir_fd=parent.fd)
        with parent.child(dest.name) as out:
            out.write_text(paths.MARKER, json.dumps({"purpose": purpose}) + "\n", mode=0o644,
                           give=False)  # teiten's from the start: removed if the build fails
            _take(source, out, Path(dest.name))


def _take(src: safefs.Dir, dst: safefs.Dir, rel: Path) -> None:
    os.fchmod(dst.fd, 0o755)
    with os.scandir(src.fd) as entries:
        found = sorted((entry.name, entry.stat(follow_symlinks=False)) for entry in entries)
    for name, st in found:
        if name == paths.MARKER:
            continue
        if stat.S_ISDIR(st.st_mode):
            os.mkdir(name, 0o755, dir_fd=dst.fd)
            with src.child(name) as below, dst.child(name) as sub:
                _take(below, sub, rel / name)
        elif stat.S_ISLNK(st.st_mode):
            os.symlink(os.readlink(name, dir_fd=src.fd), name, dir_fd=dst.fd)
        elif stat.S_ISREG(st.st_mode):
            _take_file(src, dst, name, 0o755 if st.st_mode & stat.S_IXUSR else 0o644)
        else:
            raise InstallError(f"make install made {rel / name}, which is not a file, directory "
                               "or link; teiten does not install it")


def _take_file(src: safefs.Dir, dst: safefs.Dir, name: str, mode: int) -> None:
    source = src.open_file(name)
    try:
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                      0o600, dir_fd=dst.fd)
        try:
            size, sent = os.fstat(source).st_size, 0
            while sent < size:
                step = os.sendfile(out, source, sent, size - sent)
                if step == 0:
                    break
                sent += step
            os.fchmod(out, mode)
        finally:
            os.close(out)
    finally:
        os.close(source)


def check_result(staged: Path, preset: Preset, pg_config: PgConfig,
                  log_path: Path, release: Release) -> dict[str, object]:
    """What teiten needs from the build, and that the preset took effect. pg_prewarm came in
    9.4 (contrib): a build of 9.3 has none, and its trials read the relations instead."""
    missing = [p for p in ("postgres", "pg_ctl", "initdb", "pgbench", "psql")
               if not (staged / "bin" / p).is_file()]
    if release.pg_prewarm and not any(staged.glob("lib/**/pg_prewarm.so")):
        missing.append("pg_prewarm.so (contrib)")
    if missing:
        raise InstallError(f"the build lacks {', '.join(missing)}; see {log_path}")
    checks: dict[str, object] = {"programs": "postgres, pg_ctl, initdb, pgbench, psql"
                                 + (", pg_prewarm" if release.pg_prewarm else "")}
    for flag in preset.cppflags.split():
        if flag not in pg_config.cppflags.split():
            raise InstallError(f"pg_config --cppflags lacks {flag}: {pg_config.cppflags}")
        checks[f"pg_config --cppflags has {flag}"] = True
    if not preset.vectorize_checksums:
        compiles = [ln for ln in log_path.read_text(errors="replace").splitlines()
                    if re.search(r"-o checksum\.o\s", ln) and "checksum.c" in ln]
        if not compiles:
            raise InstallError(f"found no compile of checksum.o in {log_path}")
        if any("-ftree-vectorize" in ln for ln in compiles):
            raise InstallError(f"checksum.o was compiled with -ftree-vectorize; see {log_path}")
        checks["checksum.o compiled without -ftree-vectorize (build log)"] = True
    return checks


def open_to_all(root: Path) -> None:
    """a+rX: the server account (teiten as root) must read and run everything installed."""
    for directory, dirs, files in os.walk(root):
        for p in [directory, *(os.path.join(directory, n) for n in dirs + files)]:
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode):
                continue
            add = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
            if stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_IXUSR:
                add |= stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
            if st.st_mode & add != add:
                safefs.chmod(p, stat.S_IMODE(st.st_mode) | add)


def iso(t: float) -> str:
    """``t`` as local ISO 8601 time with its UTC offset, as build records write it."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))
