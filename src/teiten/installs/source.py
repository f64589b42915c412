"""Building PostgreSQL from source into teiten's cache (``teiten install --from-source``, and
``--from-git`` for a commit of a git repository).

The source is a PostgreSQL source directory, a release tarball, or a commit (its tree exported
by ``git archive``: installs/source_git.py). teiten never writes into
a source directory: it configures a VPATH build in ``$TEITEN_HOME/builds/<key>/build``,
installs into a staging directory beside it (``make install DESTDIR=...``) and renames the
result to ``$TEITEN_HOME/installs/src-<name>`` only when every step succeeded, so a failed
or interrupted build leaves nothing half-made among the installs. The output of the last
build of a key stays in ``builds/<key>/build.log``; the rest of ``builds/<key>`` goes.

The key is a sha256 over what decides the binaries: the source digest, the configure
arguments (CFLAGS and CPPFLAGS included), the preset, and the compiler's version; for a commit
of a git repository (``teiten install --from-git``), its hash too. A build
whose key is installed already is reused instead of compiled again. What decides a build and
its key: installs/source_key.py; the workspace and the checks of the result:
installs/source_workspace.py.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from teiten.host import paths, privileges, procs
from teiten.installs import ccache, discover, manifest, source_git, source_key, source_workspace
from teiten.installs.model import Install
from teiten.installs.releases import Release
from teiten.installs.source_key import PRESETS, Preset
from teiten.installs.source_workspace import Workspace, iso
from teiten.model.errors import InstallError, UserError

log = logging.getLogger(__name__)

CONFIGURE_TIMEOUT = 600
MAKE_TIMEOUT = 3600
INSTALL_TIMEOUT = 600


Progress = Callable[[str], None]


@dataclass(frozen=True)
class Source:
    """What a build compiles: a source directory, a tarball, or a commit of a git repository."""

    path: Path  # the directory, the tarball, or the repository
    kind: str  # "directory", "tarball" or "git"
    digest: str
    digest_method: str
    commit: source_git.Commit | None = None


def build(
    source: str,
    *,
    ref: str | None = None,
    configure: str = "",
    cflags: str = "",
    name: str | None = None,
    preset: str | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    force: bool = False,
) -> Install:
    """Build and install PostgreSQL (server and contrib) from ``source``; return the Install.

    ``source`` is a source directory (with ``configure`` and ``src/backend``) or a tarball;
    with ``ref``, a git repository, of which the commit ``ref`` names is built (``teiten
    install --from-git REPO --commit REF``). ``configure`` holds extra configure arguments in
    shell syntax (split with shlex; VAR=value assignments allowed), ``cflags`` replaces
    configure's default CFLAGS (-O2 ...), and ``preset`` is one of :data:`PRESETS`. The install
    is named ``name``, by default ``<version>-<preset or "custom">-<key[:8]>`` (e.g.
    ``15.18-lwlock-stats-1a2b3c4d``), and lives in ``$TEITEN_HOME/installs/src-<name>``.
    ``progress`` receives one line per step. A build of the same key is reused, unless
    ``force``: then it is built again, and replaces the install of that name (a damaged one).

    A commit's tree is exported into the build's workspace (installs/source_git.py; the
    repository is only read). The key adds the commit's hash to what it hashes, the tree's hash
    being the source digest: two commits are two installs, even when their trees compile the
    same. A commit's default name is ``<version>-g<commit[:12]>``, then ``-<preset>`` with a
    preset, then ``-<key[:8]>`` when ``configure`` or ``cflags`` are given (two flag sets of one
    commit).

    ``teiten-install.json`` records: origin "source", name, version, key; the source (path,
    kind, digest and how it was taken); for a commit, "git" (repo, ref as given, commit,
    subject, committed_at, position on the first-parent line, tree); preset; the configure
    command line as run; CFLAGS and CPPFLAGS; make variables; every command run; compiler path
    and ``--version`` line; whether ccache served and its hits and misses; ``pg_config
    --configure/--cflags/--cppflags`` of the result; checks made on the result; the build log;
    start and end times.

    Raises :class:`UserError` for a bad source, commit, name, preset or flags, for a name taken
    by a build with another key, and when configure or make fails (with the log's tail and path).
    """
    chosen, env = _check(name, preset, jobs)
    if ref is not None:
        args = source_key.configure_args(configure, cflags, chosen)
        commit = source_git.resolve(source, ref)
        src = Source(commit.repo, "git", commit.tree, "git tree hash of the commit", commit)
    else:
        path, kind = source_key.inspect_source(source)
        # root reads it (the digest, the copy or the unpacking): no other account may change it
        paths.refuse_replaceable(path, f"the source {path}")
        args = source_key.configure_args(configure, cflags, chosen)
        src = Source(path, kind, *source_key.digest(path, kind))
    return _build(src, args, chosen, env, name=name, preset=preset, jobs=jobs,
                  progress=progress, force=force, flagged=bool(configure or cflags))


def _check(name: str | None, preset: str | None, jobs: int | None) -> tuple[Preset, dict[str, str]]:
    """The preset chosen and the build's environment, once the options are checked."""
    if preset is not None and preset not in PRESETS:
        raise UserError(f"unknown preset '{preset}'; presets are "
                        + ", ".join(f"{k} ({p.summary})" for k, p in PRESETS.items()))
    if name is not None:
        source_key.check_name(name)
    if jobs is not None and jobs < 1:
        raise UserError(f"--jobs {jobs}: give a positive number of parallel make jobs")
    env = procs.build_env({"LC_ALL": "C"})  # English messages in the log, whatever the locale
    if shutil.which("make", path=env["PATH"]) is None:
        raise UserError("cannot build PostgreSQL: 'make' is not installed; install the build "
                        "tools (as root: teiten system setup --for build, or apt-get install gcc "
                        "make libreadline-dev zlib1g-dev pkg-config libicu-dev bison flex)")
    return PRESETS[preset] if preset else Preset(""), env


def _build(src: Source, args: list[str], chosen: Preset, env: dict[str, str], *,
           name: str | None, preset: str | None, jobs: int | None, progress: Progress | None,
           force: bool, flagged: bool = False) -> Install:
    say = progress or (lambda line: None)
    path, kind, commit = src.path, src.kind, src.commit
    compiler = source_key.compiler(args, env)
    key = source_key.build_key(src.digest, args, preset, compiler.version,
                               commit.commit if commit else None)

    reuse = None if force else _reusable(key, name)
    if reuse is not None:
        say(f"reusing the cached build '{reuse.name}' (same source, flags and compiler): "
            f"{reuse.bindir}")
        return reuse

    work = Workspace(paths.home() / "builds" / key, f"{path} ({key})")  # waits for a twin build
    reuse = None if force else _reusable(key, name)
    if reuse is not None:
        work.release()
        say(f"reusing the build '{reuse.name}' that another teiten just finished: {reuse.bindir}")
        return reuse
    work.begin()
    started = time.time()
    taken: Path | None = None  # root's copy of the staged install
    try:
        if commit is not None:
            say(f"exporting commit {commit.commit[:12]} ({commit.subject}) of {path}")
            srcdir = work.unpack_commit(commit)
        elif kind == "tarball":
            say(f"unpacking {path}")
            srcdir = work.unpack(path)
        else:
            say(f"copying {path} into the build's workspace")
            srcdir = work.copy(path, f"postgresql-{source_key.version_of(path, str(path))}")
        version = source_key.version_of(srcdir, str(path))
        source_key.check_generators(srcdir, version, args, env, f"commit {commit.commit[:12]} of "
                                    f"{path}" if commit else str(path))
        cache = ccache.build_env(env["PATH"], srcdir, work.build, work.build / "ccache.log",
                                 owner=work.account)
        env.update(cache)
        if cache:
            say(f"compiler cache: ccache ({cache['PATH'].split(':', 1)[0]}; TEITEN_CCACHE=off "
                "turns it off)")
        name = name or _default_name(version, preset, key, commit, flagged)
        target = paths.installs_dir() / f"src-{name}"
        if target.exists() and not force:  # only a default name gets here (a key or a commit)
            raise UserError(f"{target} exists but holds no build of key {key} (made by another "
                            "compiler, say); remove it, or give --force to build it in its place")
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
            var = source_key.vectorize_variable(srcdir)
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

        source_workspace.check_layout(work.stage, staged)
        # From here on, root's copy of what the build account staged (no other account's
        # file is installed, run as root or given to a server)
        taken = target.with_name(f".{target.name}.{os.getpid()}")
        paths.remove_owned(taken)  # left by a build that was killed here
        target.parent.mkdir(parents=True, exist_ok=True)
        source_workspace.take(staged, taken, f"PostgreSQL {version} built from {path}")
        staged = taken
        pg_config = source_workspace.PgConfig.of(staged, env)
        checks = source_workspace.check_result(staged, chosen, pg_config, work.log_path,
                                               Release.of(version))
        counted = ccache.counts(work.build / "ccache.log") if cache else None
        finished = time.time()
        meta = {
            "origin": "source", "name": name, "version": version, "key": key,
            "source": {"path": str(path), "kind": kind, "digest": src.digest,
                       "digest_method": src.digest_method},
            **({"git": commit.to_json()} if commit else {}),
            "preset": preset,
            "configure": {"argv": prefix_args, "line": shlex.join(prefix_args)},
            "cflags": source_key.assigned(args, "CFLAGS"),
            "cppflags": source_key.assigned(args, "CPPFLAGS"),
            "make_variables": {"scope": "src/backend/storage/page (checksum.o)", **make_vars}
            if make_vars else {},
            "commands": work.commands,
            "compiler": compiler.to_json(),
            "ccache": bool(cache),
            **({"ccache_counts": counted.to_json()} if counted else {}),
            "pg_config": pg_config.to_json(),
            "checks": checks,
            "build_log": str(work.log_path),
            "started_at": iso(started), "finished_at": iso(finished),
            "build_seconds": round(finished - started, 1),
        }
        (staged / discover.METADATA).write_text(json.dumps(meta, indent=2) + "\n")
        paths.mark_owned(staged, f"PostgreSQL {version} built from {path}")
        source_workspace.open_to_all(staged)
        manifest.write(staged)  # last: what the install holds from here on
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            if force:
                paths.remove_owned(target)
            staged.rename(target)
        except OSError as exc:
            raise InstallError(f"cannot move the finished build to {target}: {exc}") from exc
        say(f"built in {finished - started:.0f} s" + (f" (ccache: {counted.hits} hits, "
                                                     f"{counted.misses} misses)" if counted else ""))
    finally:
        work.close()
        if taken is not None and os.path.lexists(taken):  # a build that failed after the copy
            paths.remove_owned(taken)
    _make_reachable(target)
    found = discover.probe_bindir(target / "bin", "source", name)
    if found is None:
        raise InstallError(f"built {target} but {target}/bin/postgres does not run; see "
                           f"{work.log_path}")
    return found


def _default_name(version: str, preset: str | None, key: str, commit: source_git.Commit | None,
                  flagged: bool) -> str:
    if commit is None:
        return f"{version}-{preset or 'custom'}-{key[:8]}"
    return "-".join([f"{version}-g{commit.commit[:12]}", *([preset] if preset else []),
                     *([key[:8]] if flagged else [])])


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
        found = discover.probe_bindir(directory / "bin", "source", str(info.get("name")))
        if found is not None and found.damage is not None:
            raise UserError(found.damage)
        if found is not None:
            return found
        log.warning("the cached build %s does not run; building it again", directory)
        paths.remove_owned(directory)
    return None


def _make_reachable(target: Path) -> None:
    try:
        privileges.ensure_reachable(target / "bin")
    except UserError as exc:  # the build is fine; running it as root will say this again
        log.warning("%s", exc)
