"""What decides a source build (``teiten install --from-source``), checked before anything
is built: the source (a directory or a tarball) and its digest, the install's name, the
presets, the configure arguments with CFLAGS and CPPFLAGS, the compiler, and the key over them.

The key is a sha256 over what decides the binaries: the source digest, the configure
arguments (CFLAGS and CPPFLAGS included), the preset, and the compiler's version. A build
whose key is installed already is reused instead of compiled again (installs/source.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import stat
from dataclasses import asdict, dataclass
from pathlib import Path

from teiten.host import privileges, procs, safefs
from teiten.model.errors import ProcessError, UserError

TARBALL_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
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


def check_name(name: str) -> None:
    """UserError unless ``name`` can name an install (and does not look like a version)."""
    if not _NAME.match(name):
        raise UserError(f"--name '{name}': use letters, digits, '.', '_', '+' and '-' (at most "
                        "64, starting with a letter or digit)")
    if re.fullmatch(r"\d+(\.\d+)?", name):
        raise UserError(f"--name '{name}' looks like a version, which studies use to mean any "
                        "install of that version; choose a name such as pg15-lwlock")


def inspect_source(source: str) -> tuple[Path, str]:
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


def configure_args(configure: str, cflags: str, preset: Preset) -> list[str]:
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
        if assigned(args, "CFLAGS") is not None:
            raise UserError("CFLAGS given twice (--cflags and CFLAGS= in --configure); keep one")
        args.append(f"CFLAGS={cflags}")
    if preset.cppflags:
        user = assigned(args, "CPPFLAGS")
        args = [a for a in args if not a.startswith("CPPFLAGS=")]
        args.append(f"CPPFLAGS={user} {preset.cppflags}" if user else f"CPPFLAGS={preset.cppflags}")
    return args


def assigned(args: list[str], var: str) -> str | None:
    """The value of a ``VAR=value`` configure argument, or None."""
    for arg in args:
        m = _ASSIGNMENT.match(arg)
        if m and m.group(1) == var:
            return m.group(2)
    return None


@dataclass(frozen=True)
class Compiler:
    """The C compiler of a build: its command, where PATH finds it (None: nowhere), and its
    version line (or why it does not run). The install's metadata keeps it as ``compiler``."""

    command: str
    path: str | None
    version: str

    def to_json(self) -> dict[str, str | None]:
        return asdict(self)


def compiler(args: list[str], env: dict[str, str]) -> Compiler:
    """The C compiler configure will use (CC=..., else gcc, else cc) and its version line.

    A compiler that does not run is recorded as such; configure then fails and says why.
    """
    command = assigned(args, "CC") or ("gcc" if shutil.which("gcc", path=env["PATH"]) else "cc")
    argv = shlex.split(command) or ["cc"]
    where = shutil.which(argv[0], path=env["PATH"])
    try:
        account = privileges.server_account()  # as the build account, which runs it next
        done = procs.run([*argv, "--version"], timeout=30, what=f"{command} --version",
                         env=procs.for_account(env, account), run_as=account)
        version = (done.stdout.strip().splitlines() or ["?"])[0]
    except ProcessError as exc:
        version = f"unavailable: {exc}"
    return Compiler(command, where, version)


def digest(path: Path, kind: str) -> tuple[str, str]:
    """The digest of the source and how it was taken."""
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


def build_key(digest: str, args: list[str], preset: str | None, compiler_version: str | None,
              commit: str | None = None) -> str:
    """sha256 over what decides the binaries: source digest, configure arguments, preset,
    compiler; and the commit of a build from git (its identity: two commits are two installs,
    even when their trees compile the same). Without a commit, the keys of earlier teitens."""
    what: dict[str, object] = {"source": digest, "configure": args, "preset": preset,
                               "compiler": compiler_version}
    if commit is not None:
        what["commit"] = commit
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()


def version_of(srcdir: Path, source: str) -> str:
    """The PACKAGE_VERSION that ``configure`` in ``srcdir`` names (e.g. 15.18)."""
    m = _VERSION.search(safefs.read_text(srcdir / "configure"))  # the build account's tree
    if not m:
        raise UserError(f"{source} is not a PostgreSQL source tree (its configure names no "
                        "PACKAGE_VERSION)")
    return m.group(1)


# What bison and flex generate (a release tarball of PostgreSQL 16 or older carries it; a tree
# from git, and any tree of 17 or later, builds it): the program, configure's variable that names
# another, and the backend's file it makes.
GENERATORS = (("bison", "BISON", "parser", "gram.c"), ("flex", "FLEX", "scanner", "scan.c"))
SETUP = "as root: 'teiten system setup --for build', or apt-get install"


def check_generators(srcdir: Path, version: str, args: list[str], env: dict[str, str],
                     what: str) -> None:
    """Refuse, before configure, to build a tree without bison or flex where it needs them:
    PostgreSQL 17 and later always do; an older tree where its generated parser or scanner is
    missing (a tree from git). configure before 17 only warns, and make fails minutes later."""
    major = int(m.group(1)) if (m := re.match(r"(\d+)", version)) else 0
    parser = srcdir / "src" / "backend" / "parser"
    lacking = [(tool, part, made) for tool, var, part, made in GENERATORS
               if (major >= 17 or not os.path.isfile(parser / made)) and not assigned(args, var)
               and shutil.which(tool, path=env.get("PATH")) is None]
    if not lacking:
        return
    tools = " and ".join(tool for tool, _, _ in lacking)
    if major >= 17:
        why = f"PostgreSQL {version} generates its parser and scanner with bison and flex"
    else:
        why = (f"its tree has no generated {' or '.join(part for _, part, _ in lacking)} ("
               + ", ".join(f"src/backend/parser/{made}" for _, _, made in lacking)
               + ": a tree from git has none), which bison and flex generate")
    raise UserError(f"cannot build {what}: {why}, and {tools} {'is' if len(lacking) == 1 else 'are'} "
                    f"not installed; install {tools} ({SETUP} "
                    f"{' '.join(tool for tool, _, _ in lacking)})")


def vectorize_variable(srcdir: Path) -> str:
    """CFLAGS_VECTORIZE (PostgreSQL 12 and later) or CFLAGS_VECTOR (before)."""
    text = safefs.read_text(srcdir / "src" / "Makefile.global.in")
    for var in ("CFLAGS_VECTORIZE", "CFLAGS_VECTOR"):
        if re.search(rf"^{var}\s*=", text, re.MULTILINE):
            return var
    raise UserError("preset no-vector-checksums: this source has neither CFLAGS_VECTORIZE nor "
                    "CFLAGS_VECTOR in src/Makefile.global.in")

