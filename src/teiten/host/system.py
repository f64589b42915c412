"""What teiten needs from the operating system, in one list: ``teiten system check`` reads it,
``teiten system setup`` installs from it, and ``make demo``, ``make test`` and ``make system``
call those, so that what is checked and what is installed cannot drift apart.

teiten brings its own PostgreSQL (from PyPI, Maven Central or npm); what it needs from the
system depends on what it is for:

- ``run``: a study, such as ``make demo``'s: ps, and as root setfacl (the server account must
  traverse to a TEITEN_HOME under /root) and an unprivileged account to run PostgreSQL as;
  perf for the study's profile and inferno for its flame graphs, without which the report says
  they are missing.
- ``flamegraphs``: inferno, built with Rust's cargo into teiten's virtualenv (make's or pipx's).
- ``build``: ``teiten install --from-source`` and ``--from-git``: a C toolchain and
  PostgreSQL's build dependencies (bison and flex too: a tree from git lacks the generated
  parsers and scanners, and so does every release tarball from PostgreSQL 17 on; only those
  of 16 and older carry them), and ccache so that builds of nearby commits reuse each other's
  objects.
- ``test``: the test suite: all of the above and what the tests start (sshd, Pgpool-II,
  network namespaces, a browser, XFS, the system PostgreSQL's extensions).

Package names are Debian's (Ubuntu's are the same except perf's: linux-tools-generic).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from teiten.host import paths, procs
from teiten.model.errors import UserError

PURPOSES = ("run", "flamegraphs", "build", "test")
INFERNO_VERSION = "0.12.8"
SYSTEM_PG15 = "/usr/lib/postgresql/15/bin/postgres"


def program(name: str) -> str | None:
    """A program from PATH, or from the bin directory of teiten's own Python (a virtualenv or
    pipx's, where inferno is installed)."""
    return shutil.which(name) or shutil.which(name, path=os.path.dirname(sys.executable))


@dataclass(frozen=True)
class Need:
    """One thing from the system: a Debian package (or inferno, built with cargo), how to see
    that it is here, what it is for and what is lost without it."""

    package: str
    finds: tuple[str, ...]   # programs on PATH, or absolute paths; all must be there
    gives: str
    without: str
    wanted: frozenset[str]   # the purposes it serves
    required: frozenset[str] = frozenset()  # the purposes that cannot work without it

    def present(self) -> bool:
        return all(os.path.exists(f) if f.startswith("/") else program(f) is not None
                   for f in self.finds)

    @property
    def cargo(self) -> bool:
        return self.package == "inferno"


def _need(package: str, finds: str, gives: str, without: str, wanted: str,
          required: str = "") -> Need:
    return Need(package, tuple(finds.split()), gives, without, frozenset(wanted.split()),
                frozenset(required.split()))


NEEDS: tuple[Need, ...] = (
    _need("procps", "ps", "ps: what a killed run left behind", "no cleanup after a killed run",
          "run build test", "run test"),
    _need("acl", "setfacl", "setfacl: lets the server account reach a TEITEN_HOME under /root",
          "no TEITEN_HOME under /root when run as root", "run test", "run test"),
    _need("linux-perf", "perf", "perf: the profile a study takes of its largest difference",
          "no profiles or flame graphs", "run test", "test"),
    _need("inferno", "inferno-collapse-perf inferno-flamegraph inferno-diff-folded",
          "inferno: flame graphs of the profiles (built with Rust's cargo, about a minute)",
          "no flame graphs", "run flamegraphs test", "flamegraphs test"),
    _need("gcc", "gcc", "a C compiler", "no source builds", "build test", "build test"),
    _need("make", "make", "make", "no source builds", "build test", "build test"),
    _need("pkg-config", "pkg-config", "pkg-config", "no source builds", "build test", "build test"),
    _need("libreadline-dev", "/usr/include/readline/readline.h", "readline's headers",
          "no source builds", "build test", "build test"),
    _need("zlib1g-dev", "/usr/include/zlib.h", "zlib's headers", "no source builds",
          "build test", "build test"),
    _need("libicu-dev", "/usr/include/unicode", "ICU's headers", "no source builds",
          "build test", "build test"),
    # Required: every tree from git and every release from 17 on generates them (only the
    # tarballs of 16 and older carry them), so most builds need both.
    _need("bison", "bison", "bison: the parsers of a tree from git and of PostgreSQL 17 and later",
          "no builds from git, nor of PostgreSQL 17 or later (only tarballs of 16 and older carry "
          "the parsers)", "build test", "build test"),
    _need("flex", "flex", "flex: the scanners of a tree from git and of PostgreSQL 17 and later",
          "no builds from git, nor of PostgreSQL 17 or later (only tarballs of 16 and older carry "
          "the scanners)", "build test", "build test"),
    _need("ccache", "/usr/lib/ccache/gcc", "ccache: builds of nearby commits reuse objects",
          "every source build compiles everything", "build test", "test"),
    _need("util-linux", "fincore nsenter", "fincore (cold-cache residency), nsenter",
          "no cold-cache residency or network namespaces", "test", "test"),
    _need("iproute2", "ip", "ip: network namespaces (S5)", "no network namespaces", "test", "test"),
    _need("openssh-client", "ssh", "ssh: servers and load clients over ssh",
          "no servers over ssh", "test", "test"),
    _need("openssh-server", "/usr/sbin/sshd", "sshd: the tests start their own on loopback",
          "no ssh tests", "test", "test"),
    _need("pgpool2", "/usr/sbin/pgpool", "Pgpool-II: replication scale-out (S7)",
          "no replication scale-out", "test", "test"),
    _need("docker.io", "docker /usr/sbin/dockerd", "Docker's engine and CLI: docker servers (the "
          "tests start an engine of their own)", "no docker servers", "test", "test"),
    _need("qemu-system-x86", "qemu-system-x86_64", "qemu: VM servers (S5: a guest of the study's "
          "own install)", "no VM servers", "test", "test"),
    _need("qemu-utils", "qemu-img", "qemu-img: each VM guest's disk of its own", "no VM servers",
          "test", "test"),
    _need("mmdebstrap", "mmdebstrap", "mmdebstrap: a VM guest's Debian root file system",
          "no VM servers", "test", "test"),
    _need("e2fsprogs", "mkfs.ext4", "mkfs.ext4: a VM guest's disk image", "no VM servers",
          "test", "test"),
    _need("xfsprogs", "/usr/sbin/mkfs.xfs", "mkfs.xfs: restores by reflink clone",
          "no reflink-clone restore tests", "test", "test"),
    _need("stress-ng", "stress-ng", "stress-ng: a busy machine beside the suite, by hand",
          "no busy-machine check of the suite", "test"),
    _need("pipx", "pipx", "pipx: the README's pipx route, tested as an ordinary user",
          "no test of the pipx route", "test", "test"),
    _need("chromium", "chromium", "chromium: the report checked in a real browser",
          "no browser check of the report", "test", "test"),
    _need("zsh", "zsh", "zsh: the zsh completion script tried in a real zsh", "no check of the zsh "
          "completion", "test", "test"),
    _need("fonts-noto-cjk", "/usr/share/fonts/opentype/noto",
          "CJK fonts: the Japanese report in the browser", "no Japanese in the browser check",
          "test", "test"),
    _need("postgresql-15-pg-wait-sampling", "/usr/lib/postgresql/15/lib/pg_wait_sampling.so",
          "pg_wait_sampling on the system's PostgreSQL 15", "no pg_wait_sampling", "test", "test"),
    _need("postgresql-15-rum", "/usr/share/postgresql/15/extension/rum.control",
          "RUM on the system's PostgreSQL 15", "no RUM in the full-text study", "test", "test"),
    _need("sysbench", "sysbench", "sysbench: the sysbench workload", "no sysbench tests", "run test", "test"),
)


def applies(need: Need) -> bool:
    """Whether a need concerns this machine and user at all."""
    if need.package == "acl":
        return os.geteuid() == 0
    if need.package.startswith("postgresql-15-"):
        return os.path.exists(SYSTEM_PG15)
    if need.package in ("chromium", "fonts-noto-cjk"):
        return not os.environ.get("TEITEN_NO_BROWSER")
    return True


@dataclass(frozen=True)
class Found:
    need: Need
    here: bool
    required: bool


def check(purposes: Iterable[str]) -> list[Found]:
    """Every need of the purposes that concerns this machine, and whether it is here."""
    wanted = _purposes(purposes)
    return [Found(n, n.present(), bool(n.required & wanted)) for n in NEEDS
            if n.wanted & wanted and applies(n)]


def _purposes(purposes: Iterable[str]) -> set[str]:
    chosen = set(purposes) or {"run"}
    unknown = chosen - set(PURPOSES)
    if unknown:
        raise UserError(f"no purpose {', '.join(sorted(unknown))}; give {', '.join(PURPOSES)}")
    return set(PURPOSES) if "test" in chosen else chosen


# The unprivileged accounts teiten runs programs as when it is root: the variable that names
# each, its default, and what it is for.
ACCOUNTS = (("TEITEN_SERVER_USER", "postgres", "PostgreSQL refuses to run as root: it runs as this account",
             "no study as root"),
            ("TEITEN_CLIENT_USER", "teiten-client", "the pgbench of an external or ssh server, whose "
             "password the server account must not read", "no external or ssh server as root"))


def accounts() -> list[tuple[str, bool, str, str]]:
    """As root: each account teiten runs programs as, whether it exists, what it is for and
    what is lost without it; else nothing."""
    if os.geteuid() != 0:
        return []
    import pwd  # late: the account database, for root only

    found = []
    for variable, default, purpose, without in ACCOUNTS:
        name = os.environ.get(variable, default)
        try:
            pwd.getpwnam(name)
        except KeyError:
            found.append((name, False, purpose, without))
        else:
            found.append((name, True, purpose, without))
    return found


def account_missing() -> str | None:
    """The first account teiten runs programs as that does not exist, when it runs as root;
    else None."""
    return next((name for name, here, *_ in accounts() if not here), None)


def inferno_hint() -> str:
    """How to get flame graphs where inferno is missing."""
    if program("cargo") is None:
        return ("flame graphs need inferno: install Rust's cargo (https://rustup.rs, or apt-get "
                "install cargo), then run 'teiten system setup --for flamegraphs' or 'cargo "
                f"install --locked --version {INFERNO_VERSION} inferno'")
    return ("flame graphs need inferno: 'teiten system setup --for flamegraphs' builds it with "
            "cargo (about a minute)")


def setup(purposes: Iterable[str], say: Callable[[str], None] = print) -> list[str]:
    """Install what the purposes want and this machine lacks: Debian packages with apt-get,
    the accounts to run PostgreSQL and password-carrying clients as (root only), inferno with
    cargo (when cargo is here and the tests want it). Not root: installs nothing and says what
    is missing and the command that installs it. Returns the packages it installed."""
    found = check(purposes)
    lacking = [f.need for f in found if not f.here]
    packages = [n.package for n in lacking if not n.cargo]
    installed: list[str] = []
    if packages and os.geteuid() != 0:
        say("teiten system: not root, so nothing was installed; missing: "
            + ", ".join(f"{n.package} ({n.without})" for n in lacking if not n.cargo))
        say(f"teiten system: to install them, run: sudo apt-get install -y {' '.join(packages)}")
    elif packages:
        if shutil.which("apt-get") is None:
            raise UserError(f"this machine has no apt-get: install {', '.join(packages)} with its "
                            "package manager")
        say("teiten system: installing " + "; ".join(f"{n.package} ({n.gives})"
                                                     for n in lacking if not n.cargo))
        _apt_install(packages)
        installed += packages
    for name, here, purpose, _ in accounts():
        if not here:
            say(f"teiten system: creating the unprivileged account '{name}' ({purpose})")
            procs.run(["useradd", "--system", "--user-group", "--home-dir", "/nonexistent",
                       "--shell", "/usr/sbin/nologin", name], timeout=60, what="useradd")
    inferno = next((n for n in lacking if n.cargo), None)
    if inferno is not None:
        if _purposes(purposes) & {"flamegraphs", "test"} and sys.prefix != sys.base_prefix \
                and (_inferno_built() or program("cargo") is not None):  # a venv's, never /usr
            _install_inferno(say)
            installed.append("inferno")
        else:
            say(f"teiten system: {inferno_hint()}")
    return installed


POLICY = Path("/usr/sbin/policy-rc.d")


def _apt_install(packages: list[str]) -> None:
    """apt-get install, without starting the services it installs (sshd, pgpool2, docker):
    a policy-rc.d that answers 101 while it runs, where the machine has none."""
    env = procs.build_env({"DEBIAN_FRONTEND": "noninteractive", **_passed(os.environ)})
    made = False
    try:
        fd = os.open(POLICY, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755)
    except FileExistsError:
        pass
    else:
        made = True
        with os.fdopen(fd, "w") as f:
            f.write("#!/bin/sh\nexit 101\n")
    try:
        procs.run(["apt-get", "update", "-qq"], env=env, timeout=900, what="apt-get update")
        procs.run(["apt-get", "install", "-y", "-qq", *packages], env=env, timeout=3600,
                  what="apt-get install")
    finally:
        if made:
            POLICY.unlink()


def inferno_cache() -> Path:
    """Where inferno is built once, for every virtualenv of this user (a fresh clone's too)."""
    return paths.home() / "tools" / f"inferno-{INFERNO_VERSION}"


def _inferno_built() -> bool:
    need = next(n for n in NEEDS if n.cargo)
    return all((inferno_cache() / "bin" / tool).is_file() for tool in need.finds)


def _install_inferno(say: Callable[[str], None]) -> None:
    """inferno's programs into teiten's virtualenv (make's, or pipx's), from the build in
    :func:`inferno_cache`, which cargo makes first when it is not there."""
    built, venv = inferno_cache(), Path(sys.prefix) / "bin"
    if not _inferno_built():
        cargo = program("cargo")
        assert cargo is not None
        say(f"teiten system: building inferno {INFERNO_VERSION} with cargo into {built} "
            "(about a minute, once)")
        built.mkdir(parents=True, exist_ok=True)
        procs.run([cargo, "install", "--quiet", "--locked", "--version", INFERNO_VERSION,
                   "--root", str(built), "inferno"], env=procs.build_env(_passed(os.environ)),
                  timeout=1800, what="cargo install inferno")
    say(f"teiten system: inferno {INFERNO_VERSION} from {built} into {venv}")
    for program_file in sorted((built / "bin").glob("inferno-*")):
        shutil.copy2(program_file, venv / program_file.name)


PASSED = ("CARGO_HOME", "RUSTUP_HOME", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY",
          "HTTPS_PROXY", "NO_PROXY")


def _passed(environ: Mapping[str, str]) -> dict[str, str]:
    """What apt-get and cargo read from the environment beyond procs' allow-list: cargo's homes
    and a company's proxy."""
    return {k: environ[k] for k in PASSED if k in environ}
