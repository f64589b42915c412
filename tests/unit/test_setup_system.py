"""'make system' as an ordinary user (issue 22): it installs nothing, and says what is missing
and the one command that installs it. The real script, run by a real unprivileged account
(nobody, when the tests run as root) on a PATH that lacks the tools."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_as_an_ordinary_user_it_names_what_is_missing_and_the_sudo_command() -> None:
    # id and awk only: every tool the script looks for is missing. In /tmp, where the
    # unprivileged account can reach it (pytest's own temporary directories are root's, 0700).
    with tempfile.TemporaryDirectory(prefix="teiten-bare-bin-") as tmp:
        bare = Path(tmp)
        bare.chmod(0o755)
        for tool in ("id", "awk"):
            (bare / tool).symlink_to(f"/usr/bin/{tool}")
        done = _run_as_user(bare)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout
    said = lines[0].removeprefix("setup-system: not root, so nothing was installed; missing: ")
    assert said != lines[0]
    # what each one costs, where it matters to the demo
    assert "linux-perf (no flame graphs)" in said and "chromium (no browser check of the report)" in said
    command = "setup-system: to install them, run: sudo apt-get install -y "
    assert lines[1].startswith(command)
    packages = lines[1].removeprefix(command).split()
    assert "linux-perf" in packages and "acl" in packages
    assert len(packages) == len(set(packages))  # each package once
    assert all(p in said for p in packages)


def _run_as_user(bare: Path) -> subprocess.CompletedProcess[str]:
    script = ROOT / "scripts" / "setup-system.sh"
    command = f"PATH={bare} TEITEN_NO_BROWSER= /bin/bash {script}"
    argv = ["su", "-s", "/bin/bash", "nobody", "-c", command] if os.geteuid() == 0 else \
        ["/bin/bash", "-c", command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)
