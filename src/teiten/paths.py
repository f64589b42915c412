"""Where teiten keeps things, and the marker that says a directory is teiten's own.

teiten removes only directories that carry its marker file: nothing a user made is ever
deleted, even when a study file points somewhere unexpected.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from pathlib import Path

from teiten.errors import UserError

log = logging.getLogger(__name__)

MARKER = ".teiten-owned"


def home() -> Path:
    """``$TEITEN_HOME``, default ``~/.cache/teiten``: installs, clusters and snapshots."""
    env = os.environ.get("TEITEN_HOME")
    return Path(env).expanduser().absolute() if env else Path.home() / ".cache" / "teiten"


def installs_dir() -> Path:
    return home() / "installs"


def downloads_dir() -> Path:
    return home() / "downloads"


def clusters_dir() -> Path:
    return home() / "clusters"


def make_owned(path: Path, purpose: str, *, mode: int = 0o755) -> Path:
    """Create ``path`` (which must not exist yet) and mark it as teiten's own."""
    if path.exists():
        raise UserError(f"{path} already exists; teiten only creates new directories there")
    path.mkdir(parents=True, mode=mode)
    path.chmod(mode)  # mkdir's mode is filtered by the umask
    mark_owned(path, purpose)
    return path


def mark_owned(path: Path, purpose: str) -> None:
    info = {"purpose": purpose, "pid": os.getpid(), "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
    (path / MARKER).write_text(json.dumps(info) + "\n")


def is_owned(path: Path) -> bool:
    return (path / MARKER).is_file()


def remove_owned(path: Path) -> bool:
    """Remove ``path`` only if it carries teiten's marker. Returns whether it was removed."""
    if not path.exists():
        return False
    if not is_owned(path):
        log.warning("not removing %s: it has no %s marker, so teiten did not create it", path, MARKER)
        return False
    shutil.rmtree(path)
    return True
