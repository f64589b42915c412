"""Building PostgreSQL from source into teiten's cache (``teiten install --from-source``).

The source is a PostgreSQL source directory or a release tarball. teiten never writes into
a source directory: it configures a VPATH build in ``$TEITEN_HOME/builds/<key>/build``,
installs into a staging directory beside it (``make install DESTDIR=...``) and renames the
result to ``$TEITEN_HOME/installs/src-<name>`` only when every step succeeded, so a failed
or interrupted build leaves nothing half-made among the installs. The output of the last
build of a key stays in ``builds/<key>/build.log``; the rest of ``builds/<key>`` goes.

The key is a sha256 over what decides the binaries: the source digest, the configure
arguments (CFLAGS and CPPFLAGS included), the preset, and the compiler's version. A build
whose key is installed already is reused instead of compiled again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import re
import shlex
import shutil
import stat
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from teiten import paths, privileges, procs
from teiten.errors import InstallError, ProcessError, UserError
from teiten.installs import discover
from teiten.installs.model import Install

log = logging.getLogger(__name__)

TARBALL_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
CONFIGURE_TIMEOUT = 600
MAKE_TIMEOUT = 3600
INSTALL_TIMEOUT = 600
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")
_ASSIGNMENT = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$", re.DOTALL)
_VERSION = re.compile(r"^PACKAGE_VERSION='([^']+)'", re.MULTILINE)


@dataclass(frozen=True)
class Preset:
    """A named build variant: extra CPPFLAGS, or checksum.o compiled without vectorisation."""

    summary: str
    cppflags: str = ""
    vectorize_checksums: bool = True


PRESETS = {
    "lwlock-stats": Preset("per-LWLock contention counts, written at backend exit",
                           cppflags="-DLWLOCK_STATS"),
    "no-vector-checksums": Preset("data-checksum code (checksum.o) compiled without "
                                  "-ftree-vectorize", vectorize_checksums=False),
}

Progress = Callable[[str], None]


def build(
    source: str,
    *,
    configure: str = "",
    cflags: str = "",
    name: str | None = None,
    preset: str | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
) -> Install:
    """Build and install PostgreSQL (server and contrib) from ``source``; return the Install.

    ``source`` is a source directory (with ``configure`` and ``src/backend``) or a tarball.
    ``configure`` holds extra configure arguments in shell syntax (split with shlex; VAR=value
    assignments allowed), ``cflags`` replaces configure's default CFLAGS (-O2 ...), and
    ``preset`` is one of :data:`PRESETS`. The install is named ``name``, by default
    ``<version>-<preset or "custom">-<key[:8]>`` (e.g. ``15.18-lwlock-stats-1a2b3c4d``), and
    lives in ``$TEITEN_HOME/installs/src-<name>``. ``progress`` receives one line per step.

    ``teiten-install.json`` records: origin "source", name, version, key; the source (path,
    kind, digest and how it was taken); preset; the configure command line as run; CFLAGS
    and CPPFLAGS; make variables; every command run; compiler path and ``--version`` line;
    ``pg_config --configure/--cflags/--cppflags`` of the result; checks made on the result;
    the build log; start and end times.

    Raises :class:`UserError` for a bad source, name, preset or flags, for a name taken by a
    build with another key, and when configure or make fails (with the log's tail and path).
    """
    say = progress or (lambda line: None)
    if preset is not None and preset not in PRESETS:
        raise UserError(f"unknown preset '{preset}'; presets are "
                        + ", ".join(f"{k} ({p.summary})" for k, p in PRESETS.items()))
    chosen = PRESETS[preset] if preset else Preset("")
    if name is not None:
        _check_name(name)
    if jobs is not None and jobs < 1:
        raise UserError(f"--jobs {jobs}: give a positive number of parallel make jobs")
    env = procs.build_env({"LC_ALL": "C"})  # English messages in the log, whatever the locale
    if shutil.which("make", path=env["PATH"]) is None:
        raise UserError("cannot build PostgreSQL: 'make' is not installed; install the build "
                        "tools (as root: make system, or apt-get install gcc make "
                        "libreadline-dev zlib1g-dev pkg-config libicu-dev)")
    path, kind = _inspect(source)
    args = _configure_args(configure, cflags, chosen)
    compiler = _compiler(args, env)
    digest, digest_method = _digest(path, kind)
    key = _key(digest, args, preset, compiler["version"])

    reuse = _reusable(key, name)
    if reuse is not None:
        say(f"reusing the cached build '{reuse.name}' (same source, flags and compiler): "
            f"{reuse.bindir}")
        return reuse

    work = _Workspace(paths.home() / "builds" / key, f"{path} ({key})")
    started = time.time()
    try:
        if kind == "tarball":
            say(f"unpacking {path}")
            srcdir = work.unpack(path)
        else:
            srcdir = path
        version = _version_of(srcdir, source)
        name = name or f"{version}-{preset or 'custom'}-{key[:8]}"
        target = paths.installs_dir() / f"src-{name}"
        if target.exists():  # only a default name can get here: it carries the key
            raise UserError(f"{target} exists but holds no build of key {key}; remove it")
        prefix_args = [str(srcdir / "configure"), f"--prefix={target}", *args]
        make_vars: dict[str, str] = {}
        staged = work.stage / target.relative_to("/")

        say(f"configure (log: {work.log_path})")
        work.step("configure", prefix_args, cwd=work.build, env=env, timeout=CONFIGURE_TIMEOUT,
                  config_log=work.build / "config.log")
        make = ["make", "-j", str(jobs or len(os.sched_getaffinity(0)))]
        if not chosen.vectorize_checksums:
            # Only checksum.o: the same variable also vectorises numeric.o, which a study of
            # checksum cost must leave alone. Built first, so the main make finds it done.
            var = _vectorize_variable(srcdir)
            make_vars = {var: ""}
            say(f"make checksum.o with {var}= (no -ftree-vectorize)")
            work.step("make generated-headers", ["make", "-C", "src/backend", "generated-headers"],
                      cwd=work.build, env=env, timeout=MAKE_TIMEOUT)
            work.step("make checksum.o", ["make", "-C", "src/backend/storage/page", "checksum.o",
                                          f"{var}="], cwd=work.build, env=env, timeout=MAKE_TIMEOUT)
        say(f"{shlex.join(make)}")
        work.step("make", make, cwd=work.build, env=env, timeout=MAKE_TIMEOUT)
        say(f"{shlex.join(make)} -C contrib")
        work.step("make -C contrib", [*make, "-C", "contrib"], cwd=work.build, env=env,
                  timeout=MAKE_TIMEOUT)
        say("make install (server and contrib)")
        destdir = f"DESTDIR={work.stage}"
        work.step("make install", ["make", "install", destdir], cwd=work.build, env=env,
                  timeout=INSTALL_TIMEOUT)
        work.step("make -C contrib install", ["make", "-C", "contrib", "install", destdir],
                  cwd=work.build, env=env, timeout=INSTALL_TIMEOUT)

        _check_layout(work.stage, staged)
        pg_config = {opt: _pg_config(staged, opt, env) for opt in ("configure", "cflags", "cppflags")}
        checks = _check_result(staged, chosen, pg_config, work.log_path)
        finished = time.time()
        meta = {
            "origin": "source", "name": name, "version": version, "key": key,
            "source": {"path": str(path), "kind": kind, "digest": digest,
                       "digest_method": digest_method},
            "preset": preset,
            "configure": {"argv": prefix_args, "line": shlex.join(prefix_args)},
            "cflags": _assigned(args, "CFLAGS"), "cppflags": _assigned(args, "CPPFLAGS"),
            "make_variables": {"scope": "src/backend/storage/page (checksum.o)", **make_vars}
            if make_vars else {},
            "commands": work.commands,
            "compiler": compiler,
            "pg_config": pg_config,
            "checks": checks,
            "build_log": str(work.log_path),
            "started_at": _iso(started), "finished_at": _iso(finished),
            "build_seconds": round(finished - started, 1),
        }
        (staged / discover.METADATA).write_text(json.dumps(meta, indent=2) + "\n")
        paths.mark_owned(staged, f"PostgreSQL {version} built from {path}")
        _open_to_all(staged)
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            staged.rename(target)
        except OSError as exc:
            raise InstallError(f"cannot move the finished build to {target}: {exc}") from exc
        say(f"built in {finished - started:.0f} s")
    finally:
        work.close()
    _make_reachable(target)
    found = discover._probe(target / "bin", "source", name)
    if found is None:
        raise InstallError(f"built {target} but {target}/bin/postgres does not run; see "
                           f"{work.log_path}")
    return found


# --------------------------------------------------------------------------- the input


def _check_name(name: str) -> None:
    if not _NAME.match(name):
        raise UserError(f"--name '{name}': use letters, digits, '.', '_', '+' and '-' (at most "
                        "64, starting with a letter or digit)")
    if re.fullmatch(r"\d+(\.\d+)?", name):
        raise UserError(f"--name '{name}' looks like a version, which studies use to mean any "
                        "install of that version; choose a name such as pg15-lwlock")


def _inspect(source: str) -> tuple[Path, str]:
    """The absolute path of ``source`` and its kind, "directory" or "tarball"."""
    path = Path(source).expanduser().absolute()
    if not path.exists():
        raise UserError(f"no such PostgreSQL source: {path}; give a source directory or a "
                        "tarball (.tar.gz, .tgz, .tar.bz2, .tar.xz)")
    if path.is_file():
        if not path.name.endswith(TARBALL_SUFFIXES):
            raise UserError(f"{path} is neither a PostgreSQL source directory nor a tarball "
                            "(.tar.gz, .tgz, .tar.bz2, .tar.xz)")
        return path, "tarball"
    if not (path / "configure").is_file() or not (path / "src" / "backend").is_dir():
        raise UserError(f"{path} is not a PostgreSQL source tree (it has no configure and "
                        "src/backend); give the top directory of the source, or a tarball")
    configured = [f for f in ("config.status", "GNUmakefile", "src/include/pg_config.h")
                  if (path / f).exists()]
    if configured:
        raise UserError(f"{path} was configured in place (it has {configured[0]}), so it cannot "
                        "be built in a separate directory; run 'make distclean' there, or give "
                        "a release tarball")
    return path, "directory"


def _configure_args(configure: str, cflags: str, preset: Preset) -> list[str]:
    """The configure arguments (without --prefix) with CFLAGS and the preset's CPPFLAGS."""
    try:
        args = shlex.split(configure)
    except ValueError as exc:
        raise UserError(f"--configure {configure!r}: {exc}") from None
    for arg in args:
        if arg.split("=", 1)[0] in ("--prefix", "--exec-prefix", "--srcdir"):
            raise UserError(f"--configure: teiten chooses {arg.split('=', 1)[0]} itself (the "
                            "install goes to $TEITEN_HOME/installs/src-NAME); leave it out")
    if cflags:
        if _assigned(args, "CFLAGS") is not None:
            raise UserError("CFLAGS given twice (--cflags and CFLAGS= in --configure); keep one")
        args.append(f"CFLAGS={cflags}")
    if preset.cppflags:
        user = _assigned(args, "CPPFLAGS")
        args = [a for a in args if not a.startswith("CPPFLAGS=")]
        args.append(f"CPPFLAGS={user} {preset.cppflags}" if user else f"CPPFLAGS={preset.cppflags}")
    return args


def _assigned(args: list[str], var: str) -> str | None:
    """The value of a ``VAR=value`` configure argument, or None."""
    for arg in args:
        m = _ASSIGNMENT.match(arg)
        if m and m.group(1) == var:
            return m.group(2)
    return None


def _compiler(args: list[str], env: dict[str, str]) -> dict[str, str | None]:
    """The C compiler configure will use (CC=..., else gcc, else cc) and its version line.

    A compiler that does not run is recorded as such; configure then fails and says why.
    """
    command = _assigned(args, "CC") or ("gcc" if shutil.which("gcc", path=env["PATH"]) else "cc")
    argv = shlex.split(command) or ["cc"]
    where = shutil.which(argv[0], path=env["PATH"])
    try:
        done = procs.run([*argv, "--version"], timeout=30, env=env, what=f"{command} --version")
        version = (done.stdout.strip().splitlines() or ["?"])[0]
    except ProcessError as exc:
        version = f"unavailable: {exc}"
    return {"command": command, "path": where, "version": version}


def _digest(path: Path, kind: str) -> tuple[str, str]:
    if kind == "tarball":
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest(), "sha256 of the tarball"
    return directory_digest(path), "sha256 over relative path, size and mtime of every file"


def directory_digest(root: Path) -> str:
    """sha256 over the relative path, size and mtime (ns) of every file under ``root``.

    Reads metadata only (a PostgreSQL tree of ~6000 files takes well under a second), so
    touching a file changes the digest even when its content did not.
    """
    h = hashlib.sha256()
    stack = [root]
    entries: list[str] = []
    while stack:
        directory = stack.pop()
        with os.scandir(directory) as it:
            for entry in it:
                st = entry.stat(follow_symlinks=False)
                rel = os.path.relpath(entry.path, root)
                if stat.S_ISDIR(st.st_mode):
                    stack.append(Path(entry.path))
                elif stat.S_ISLNK(st.st_mode):
                    entries.append(f"{rel}\0link\0{os.readlink(entry.path)}")
                else:
                    entries.append(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}")
    for line in sorted(entries):
        h.update(line.encode("utf-8", "surrogateescape") + b"\n")
    return h.hexdigest()


def _key(digest: str, args: list[str], preset: str | None, compiler_version: str | None) -> str:
    what = {"source": digest, "configure": args, "preset": preset, "compiler": compiler_version}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def _version_of(srcdir: Path, source: str) -> str:
    m = _VERSION.search((srcdir / "configure").read_text(errors="replace"))
    if not m:
        raise UserError(f"{source} is not a PostgreSQL source tree (its configure names no "
                        "PACKAGE_VERSION)")
    return m.group(1)


def _vectorize_variable(srcdir: Path) -> str:
    """CFLAGS_VECTORIZE (PostgreSQL 12 and later) or CFLAGS_VECTOR (before)."""
    text = (srcdir / "src" / "Makefile.global.in").read_text(errors="replace")
    for var in ("CFLAGS_VECTORIZE", "CFLAGS_VECTOR"):
        if re.search(rf"^{var}\s*=", text, re.MULTILINE):
            return var
    raise UserError("preset no-vector-checksums: this source has neither CFLAGS_VECTORIZE nor "
                    "CFLAGS_VECTOR in src/Makefile.global.in")


# --------------------------------------------------------------------------- the cache


def _cached_sources() -> list[tuple[Path, dict[str, object]]]:
    found = []
    for meta in sorted(paths.installs_dir().glob(f"src-*/{discover.METADATA}")):
        try:
            info = json.loads(meta.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            log.warning("ignoring %s: %s", meta, exc)
            continue
        if isinstance(info, dict) and info.get("origin") == "source":
            found.append((meta.parent, info))
    return found


def _reusable(key: str, name: str | None) -> Install | None:
    """The cached install of ``key`` to reuse (under ``name`` when given), or None.

    Raises :class:`UserError` when ``name`` is taken by a build with another key.
    """
    if name is not None:
        target = paths.installs_dir() / f"src-{name}"
        if not target.exists():
            return None
        info = discover.read_metadata(target)
        if info is None or info.get("key") != key:
            raise UserError(f"the name '{name}' is taken by a build of other source or flags "
                            f"({target}); choose another --name")
        candidates = [(target, info)]
    else:
        candidates = [(d, i) for d, i in _cached_sources() if i.get("key") == key]
    for directory, info in candidates:
        found = discover._probe(directory / "bin", "source", str(info.get("name")))
        if found is not None:
            return found
        log.warning("the cached build %s does not run; building it again", directory)
        paths.remove_owned(directory)
    return None


# --------------------------------------------------------------------------- building


class _Workspace:
    """``builds/<key>``: the log (locked while building), source, build and staging dirs."""

    def __init__(self, root: Path, purpose: str):
        if root.exists() and not paths.is_owned(root):
            raise UserError(f"{root} exists but teiten did not create it; move it away")
        if not root.exists():
            paths.make_owned(root, f"build of PostgreSQL {purpose}")
        self.root = root
        self.log_path = root / "build.log"
        self.log: IO[str] = self.log_path.open("a")
        try:
            fcntl.flock(self.log, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.log.close()
            raise UserError(f"another teiten is building the same source and flags in {root}; "
                            "wait for it, then run this again to reuse its build") from None
        self.log.truncate(0)
        self.commands: list[dict[str, object]] = []
        self.src, self.build, self.stage = root / "src", root / "build", root / "stage"
        for sub in (self.src, self.build, self.stage):
            paths.remove_owned(sub)  # an earlier build that was killed before cleaning up
        paths.make_owned(self.build, f"VPATH build dir of {purpose}")
        paths.make_owned(self.stage, f"DESTDIR of {purpose}")

    def unpack(self, tarball: Path) -> Path:
        paths.make_owned(self.src, f"unpacked {tarball}")
        try:
            with tarfile.open(tarball) as tar:
                tar.extractall(self.src, filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise UserError(f"cannot unpack {tarball}: {exc}") from None
        tops = [p for p in self.src.iterdir() if p.name != paths.MARKER]
        if len(tops) != 1 or not (tops[0] / "configure").is_file() or \
                not (tops[0] / "src" / "backend").is_dir():
            raise UserError(f"{tarball} does not hold a PostgreSQL source tree (one top "
                            "directory with configure and src/backend)")
        return tops[0]

    def step(self, what: str, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float,
             config_log: Path | None = None) -> None:
        """Run one build step with its output appended to the log; UserError if it fails."""
        self.commands.append({"step": what, "argv": argv})
        self.log.write(f"\n### {what}: {shlex.join(argv)}\n### in {cwd}, {_iso(time.time())}\n")
        try:
            procs.run(argv, timeout=timeout, env=env, cwd=str(cwd), what=what, log=self.log)
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
        for sub in (self.src, self.build, self.stage):
            try:
                paths.remove_owned(sub)
            except OSError as exc:
                log.warning("could not remove %s: %s", sub, exc)
        self.log.close()  # releases the lock
        if not self.commands:
            paths.remove_owned(self.root)


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


def _check_layout(stage: Path, staged: Path) -> None:
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
                        "does this); build the upstream tarball instead (scripts/fetch-pg-source.sh)")


def _pg_config(staged: Path, option: str, env: dict[str, str]) -> str:
    done = procs.run([str(staged / "bin" / "pg_config"), f"--{option}"], timeout=30, env=env)
    return done.stdout.strip()


def _check_result(staged: Path, preset: Preset, pg_config: dict[str, str],
                  log_path: Path) -> dict[str, object]:
    """What teiten needs from the build, and that the preset took effect."""
    missing = [p for p in ("postgres", "pg_ctl", "initdb", "pgbench", "psql")
               if not (staged / "bin" / p).is_file()]
    if not any(staged.glob("lib/**/pg_prewarm.so")):
        missing.append("pg_prewarm.so (contrib)")
    if missing:
        raise InstallError(f"the build lacks {', '.join(missing)}; see {log_path}")
    checks: dict[str, object] = {"programs": "postgres, pg_ctl, initdb, pgbench, psql, pg_prewarm"}
    for flag in preset.cppflags.split():
        if flag not in pg_config["cppflags"].split():
            raise InstallError(f"pg_config --cppflags lacks {flag}: {pg_config['cppflags']}")
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


def _open_to_all(root: Path) -> None:
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
                os.chmod(p, st.st_mode | add)


def _make_reachable(target: Path) -> None:
    try:
        privileges.ensure_reachable(target / "bin")
    except UserError as exc:  # the build is fine; running it as root will say this again
        log.warning("%s", exc)


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(t))
