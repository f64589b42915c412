"""`teiten installs` lists teiten's cache while another teiten (or a test's stand-in) removes an
install from it: an install whose record is gone between the listing of the directory and its
reading is left out, never a traceback (the full suite caught `teiten run` failing with
"No such file or directory: .../installs/src-taken-…/teiten-install.json" as a fixture beside it
removed its stand-in install). A dangling link is what such a record looks like mid-removal; a
record cut short (not JSON) is left out the same way."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import run_cli

from teiten.host import paths
from teiten.installs.manifest import METADATA


def test_an_install_whose_record_is_gone_or_broken_is_left_out(tmp_path: Path) -> None:
    home = tmp_path / "home"
    installs = home / "installs"
    installs.mkdir(parents=True)
    gone = paths.make_owned(installs / "src-gone", "a test's install removed mid-listing")
    os.symlink(gone / "removed.json", gone / METADATA)
    cut = paths.make_owned(installs / "src-cut", "a test's install with a record cut short")
    (cut / METADATA).write_text('{"origin": "source", "na')
    done = run_cli("installs", env={"TEITEN_HOME": str(home)})
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "src-gone" not in done.stdout and "src-cut" not in done.stdout
