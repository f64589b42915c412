"""Traversal granted to two accounts and taken back (issue 52): as root, the server account and
the client account (teiten-client: the pgbench of a server with a password) are each granted
traversal of a directory that blocks them (setfacl, the real ACLs of a real directory), reach
what lies below, and after privileges.withdraw the directory's ACL is what it was: no entry
left where there was none, an entry that was there before given back its own permissions."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.requirements import missing

from teiten.host import privileges
from teiten.host.procs import RunAs


def _accounts() -> tuple[RunAs, RunAs]:
    if os.geteuid() != 0:
        pytest.skip("grants are made only by root")
    if shutil.which("setfacl") is None or shutil.which("getfacl") is None:
        missing("no setfacl/getfacl (the acl package)")
    server, client = privileges.server_account(), privileges.client_account()
    assert server is not None and client is not None
    return server, client


def _acl(path: Path) -> list[str]:
    return subprocess.run(["getfacl", "-cp", str(path)], capture_output=True, text=True,
                          check=True, timeout=30).stdout.split()


def _reaches(account: RunAs, path: Path) -> bool:
    return subprocess.run(["ls", str(path)], user=account.uid, group=account.gid, extra_groups=[],
                          capture_output=True, timeout=30).returncode == 0


def test_two_accounts_granted_traversal_and_the_acl_given_back(tmp_path: Path) -> None:
    server, client = _accounts()
    closed = tmp_path / "closed"  # root's 0700, as /root is
    inner = closed / "inner"
    inner.mkdir(parents=True)
    closed.chmod(0o700)
    inner.chmod(0o755)
    tmp_path.chmod(0o755)
    before = _acl(closed)
    assert not _reaches(server, inner) and not _reaches(client, inner)
    privileges.ensure_reachable(inner / "pgbench", server)
    privileges.ensure_reachable(inner / "pgbench", client)
    assert _reaches(server, inner) and _reaches(client, inner)
    granted = _acl(closed)
    assert f"user:{server.name}:--x" in granted and f"user:{client.name}:--x" in granted, granted
    privileges.withdraw()
    assert _acl(closed) == before
    assert not _reaches(server, inner) and not _reaches(client, inner)


def test_an_entry_there_before_gets_its_own_permissions_back(tmp_path: Path) -> None:
    server, client = _accounts()
    closed = tmp_path / "closed"
    inner = closed / "inner"
    inner.mkdir(parents=True)
    closed.chmod(0o700)
    inner.chmod(0o755)
    tmp_path.chmod(0o755)
    subprocess.run(["setfacl", "-m", f"u:{client.name}:r--", str(closed)], check=True, timeout=30)
    before = _acl(closed)
    privileges.ensure_reachable(inner, client)
    privileges.ensure_reachable(inner, server)
    assert f"user:{client.name}:r-x" in _acl(closed)
    privileges.withdraw()
    assert _acl(closed) == before, (before, _acl(closed))
