"""``teiten fetch-source``: the upstream source of a PostgreSQL major, from Debian's source
packages, unpacked for ``teiten install --from-source``.

It unpacks the pristine upstream tarball (``*.orig.tar.*``), not Debian's patched tree: Debian's
patches move pkglibdir to /usr/lib/postgresql/MAJOR/lib, which a build for teiten's cache must
not do. Enabling deb-src (a file /etc/apt/sources.list.d/teiten-src.sources mirroring the deb
entries of debian.sources) needs root; nothing else does.

It takes a major (``15``: the newest release apt can download) or one release of it (``15.18``:
that one, or one line naming the releases apt knows, exit 2). A version apt lists but cannot
download is said with apt's reason and the file it tried (``404  Not Found``, ``Could not
connect to …``), and the next older one is tried; when none can be, the error names each reason
(exit 1). apt is run with the environment it reads besides procs' allow-list: a proxy, and
``APT_CONFIG`` (another configuration, such as a local mirror's).
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
from collections.abc import Callable
from pathlib import Path

from teiten.host import procs
from teiten.installs import archives
from teiten.model.errors import ProcessError, TeitenError, UserError

DEBIAN_SOURCES = Path("/etc/apt/sources.list.d/debian.sources")
TEITEN_SOURCES = Path("/etc/apt/sources.list.d/teiten-src.sources")


def upstream_source(wanted: str, dest: str | Path, *, say: Callable[[str], None]) -> Path:
    """The source directory of PostgreSQL ``wanted`` (a major, ``15``, or a release of it,
    ``15.18``) under ``dest`` (``dest/postgresql-X.Y``, with its tarball beside it), downloaded
    with ``apt-get source`` unless one is there already."""
    asked = re.fullmatch(r"(\d+)(?:\.(\d+))?", wanted)
    if asked is None or int(asked[1]) < 10:
        raise UserError(f"give a PostgreSQL major of 10 or later, such as 15, or a release of "
                        f"one, such as 15.18 (not {wanted!r}); older ones: download "
                        "postgresql-X.Y.tar.bz2 from https://ftp.postgresql.org/pub/source/")
    major, release = asked[1], wanted if asked[2] is not None else None
    target = Path(dest).expanduser().absolute()
    target.mkdir(parents=True, exist_ok=True)
    found = _found(target, major, release)
    if found is not None:
        return found
    if shutil.which("apt-get") is None:
        raise UserError(f"fetching a source needs apt-get (Debian/Ubuntu); elsewhere download "
                        f"postgresql-{major}.N.tar.bz2 from https://ftp.postgresql.org/pub/source/ "
                        "and give it to 'teiten install --from-source'")
    versions = _versions(major)
    if not versions:
        _enable_deb_src(major, say)
        versions = _versions(major)
    if release is not None and versions:
        known = list(dict.fromkeys(_upstream(v) for v in versions))
        versions = [v for v in versions if _upstream(v) == release]
        if not versions:
            raise UserError(f"apt knows no source of PostgreSQL {release}: its postgresql-{major} "
                            f"has {', '.join(known)}; give one of them, or {major} for the newest "
                            "it can download")
    work = target / f".download-{os.getpid()}"
    work.mkdir(mode=0o700)
    try:
        fetched = _download(major, versions, work, say)
        upstream = _upstream(fetched)
        orig = sorted(work.glob(f"postgresql-{major}_{upstream}.orig.tar.*"))
        if not orig:
            raise TeitenError(f"the source package postgresql-{major} {fetched} has no upstream "
                              "tarball (*.orig.tar.*)")
        with tarfile.open(orig[0]) as tar:
            archives.extract_all(tar, work)
        tree = work / f"postgresql-{upstream}"
        if not (tree / "configure").is_file():
            raise TeitenError(f"{orig[0].name} did not unpack into postgresql-{upstream}/")
        tree.rename(target / tree.name)
        orig[0].rename(target / orig[0].name)  # the tarball too: --from-source takes it as well
    finally:
        shutil.rmtree(work, ignore_errors=True)  # safe: made above, 0700, this process's own
    return target / tree.name


def _found(dest: Path, major: str, release: str | None = None) -> Path | None:
    """The newest complete source tree of the major (or the release) already under ``dest``."""
    trees = [d for d in dest.glob(f"postgresql-{release or major + '.*'}") if d.is_dir()
             and not d.is_symlink() and (d / "configure").is_file() and (d / "src" / "backend").is_dir()]
    return max(trees, key=_release) if trees else None


def _upstream(version: str) -> str:
    """The upstream release of a Debian version: 1:15.18-0+deb12u1 -> 15.18."""
    return version.split(":", 1)[-1].rsplit("-", 1)[0]


APT_ENVIRONMENT = ("APT_CONFIG", "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY",
                   "HTTPS_PROXY", "NO_PROXY")


def _apt_env() -> dict[str, str]:
    """procs' allow-listed environment and what apt reads besides: another configuration
    (APT_CONFIG) and a proxy."""
    return procs.build_env({k: os.environ[k] for k in APT_ENVIRONMENT if k in os.environ})


def _apt_reason(stderr: str) -> str:
    """Why ``apt-get source`` downloaded nothing, in one line: the first file it failed to
    fetch, with apt's reason (the HTTP status or the network error) and the URL; else apt's
    last error line."""
    for line in stderr.splitlines():
        failed = re.match(r"E: Failed to fetch (\S+)\s+(.*)", line.strip())
        if failed:
            why = re.sub(r"\s*\[IP: [^]]*\]\s*$", "", failed[2])
            return f"{' '.join(why.split()) or 'failed'} ({failed[1]})"
    errors = [line.strip().removeprefix("E:").strip() for line in stderr.splitlines()
              if line.startswith("E:")]
    return errors[-1] if errors else procs.tail(stderr) or "apt-get source printed no reason"


def _release(tree: Path) -> list[int]:
    """postgresql-15.18 -> [15, 18] (a beta or rc part counts below any number)."""
    return [int(n) if n.isdigit() else -1 for n in tree.name.removeprefix("postgresql-").split(".")]


def _versions(major: str) -> list[str]:
    """The versions of the source package apt knows, newest first."""
    done = procs.run(["apt-cache", "showsrc", f"postgresql-{major}"], timeout=120, check=False,
                     env=_apt_env())
    found = {line.split()[1] for line in done.stdout.splitlines()
             if line.startswith("Version:") and len(line.split()) > 1}
    if not found:
        return []
    order = procs.run(["sort", "-u", "-V", "-r"], input="\n".join(found) + "\n", timeout=30)
    return order.stdout.split()


def _enable_deb_src(major: str, say: Callable[[str], None]) -> None:
    if os.geteuid() != 0:
        raise UserError(f"apt knows no source package postgresql-{major}, and enabling deb-src "
                        "needs root: run this as root once, or add deb-src lines to apt's sources")
    if not DEBIAN_SOURCES.is_file():
        raise UserError(f"apt knows no source package postgresql-{major}, and there is no "
                        f"{DEBIAN_SOURCES} to take the deb-src entries from; add deb-src lines "
                        "to apt's sources")
    say(f"enabling deb-src in {TEITEN_SOURCES}")
    stanzas = [("Types: deb-src" if line.startswith("Types:") else line)
               for line in DEBIAN_SOURCES.read_text().splitlines() if not line.startswith("#")]
    TEITEN_SOURCES.write_text("\n".join(stanzas) + "\n")
    done = procs.run(["apt-get", "update", "-qq"], timeout=900, check=False, env=_apt_env())
    if done.returncode != 0:
        say(f"apt-get update reported errors; trying what it found: {procs.tail(done.stderr)}")


def _download(major: str, versions: list[str], work: Path, say: Callable[[str], None]) -> str:
    """Download the first version whose files the mirror has (newest first: a security suite may
    list a version whose source files its pool lacks) and return it."""
    failures = []
    for i, version in enumerate(versions):
        say(f"downloading the source of postgresql-{major} {version}")
        try:
            done = procs.run(["apt-get", "source", "--download-only", "-qq",
                              f"postgresql-{major}={version}"], cwd=str(work), timeout=1800,
                             what="apt-get source", check=False, env=_apt_env())
        except ProcessError as exc:  # it did not finish in time
            why = str(exc)
        else:
            if done.returncode == 0:
                return version
            why = _apt_reason(done.stderr)
        failures.append(f"{version}: {why}")
        say(f"postgresql-{major} {version} could not be downloaded: {why}"
            + ("; trying an older one" if i + 1 < len(versions) else ""))
        for leftover in work.iterdir():
            leftover.unlink()
    if not versions:
        raise UserError(f"apt knows no source package postgresql-{major}; is {major} a major "
                        "this Debian or Ubuntu release packages?")
    raise TeitenError(f"apt-get source postgresql-{major} could download no version: "
                      + "; ".join(failures))
