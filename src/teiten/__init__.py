"""teiten: PostgreSQL performance evaluation after the PGECons WG1 method.

``__version__`` is the release with the commit it was made from: ``0.1.0+g<12 hex digits>``.
Run from a git checkout, the commit is the checkout's HEAD, read from its ``.git`` files (git
itself is not run); installed from a wheel, it is the version the wheel was built with, which
pyproject.toml takes from here at build time. Outside both, the release alone. ``--version``,
every study (its ``teiten_version``), its machine fingerprint and every report record it.
"""

import os
import re

RELEASE = "0.1.0"
_HASH = re.compile(r"[0-9a-f]{40}")
_MOST = 1 << 20  # a packed-refs file read in full; anything larger is not a checkout's


def _read(path: str) -> str | None:
    """A small file's text, not through a link; None where it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(_MOST).decode("utf-8", "replace")


def checkout_commit(package: str) -> str | None:
    """The commit of the git checkout whose ``src/`` holds ``package`` (a directory), or None
    where it is in none: HEAD, its branch's ref (loose or packed), a worktree's common dir."""
    root = os.path.dirname(os.path.dirname(package))
    if os.path.basename(os.path.dirname(package)) != "src":
        return None
    gitdir = os.path.join(root, ".git")
    if os.path.isfile(gitdir):  # a worktree: "gitdir: PATH"
        text = _read(gitdir) or ""
        if not text.startswith("gitdir: "):
            return None
        gitdir = os.path.join(root, text[len("gitdir: "):].strip())
    head = (_read(os.path.join(gitdir, "HEAD")) or "").strip()
    if _HASH.fullmatch(head):
        return head
    if not head.startswith("ref: refs/"):
        return None
    ref = head[len("ref: "):]
    common = (_read(os.path.join(gitdir, "commondir")) or "").strip()
    places = [gitdir] + ([os.path.join(gitdir, common)] if common else [])
    for place in places:
        found = (_read(os.path.join(place, *ref.split("/"))) or "").strip()
        if _HASH.fullmatch(found):
            return found
    for place in places:
        for line in (_read(os.path.join(place, "packed-refs")) or "").splitlines():
            commit, _, name = line.partition(" ")
            if name == ref and _HASH.fullmatch(commit):
                return commit
    return None


def _version() -> str:
    commit = checkout_commit(os.path.dirname(os.path.abspath(__file__)))
    if commit:
        return f"{RELEASE}+g{commit[:12]}"
    try:
        from importlib.metadata import PackageNotFoundError, version  # late: only an install asks

        return version("teiten")
    except PackageNotFoundError:
        return RELEASE


__version__ = _version()
