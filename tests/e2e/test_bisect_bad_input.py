"""`teiten bisect` refuses a study whose first server runs anywhere but this machine, for every
kind that does (issue 55: the refusal listed external, ssh and docker by hand and let a VM
guest through), with one line and exit 2, before it reads the repository."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import run_cli

STUDY = """\
study: elsewhere
servers:
  - {{name: first, {where}}}
  - {{name: second, install: "18"}}
workloads: [pgecons-read]
clients: [1]
duration: 1s
"""


@pytest.mark.parametrize(("where", "key"), [
    ('install: "18", vm: {vcpus: 1, memory: 2GB}', "vm"),
    ('install: "18", docker: {volume: container, network: host}', "docker"),
    ('install: "18", ssh: bench@db1.example', "ssh"),
    ('external: "host=db.example dbname=bench"', "external"),
])
def test_a_first_server_elsewhere_is_refused_in_one_line(tmp_path: Path, where: str, key: str) -> None:
    (tmp_path / "s.yaml").write_text(STUDY.format(where=where))
    done = run_cli("bisect", str(tmp_path / "s.yaml"), "--repo", str(tmp_path / "no-repo"),
                   "--good", "HEAD~1", "--bad", "HEAD", "--store", str(tmp_path / "b.db"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"teiten: error: teiten bisect: the first server of study elsewhere (first) runs elsewhere ({key}); "
        "bisect builds commits on this machine: give a study whose first server runs here"]
    assert not (tmp_path / "b.db").exists()
