"""teiten: PostgreSQL performance evaluation after the PGECons WG1 method.

``__version__`` is the release with the commit it was made from: ``0.1.0+g<12 hex digits>``.
Run from a git checkout, the commit is the checkout's HEAD, read from its ``.git`` files (git
itself is not run); from an unpacked sdist (a wheel being built from it), the version its
``PKG-INFO`` recorded when the sdist was made in a checkout; installed from a wheel, the version
the wheel was built with, which pyproject.toml takes from here at build time. Outside all three,
the release alone. ``--version``,
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


def sdist_version(package: str) -> str | None:
    """The version an unpacked sdist whose ``src/`` holds ``package`` recorded in its
    ``PKG-INFO``, or None where ``package`` is in no sdist (or the sdist is of another release)."""
    if os.path.basename(os.path.dirname(package)) != "src":
        return None
    text = _read(os.path.join(os.path.dirname(os.path.dirname(package)), "PKG-INFO")) or ""
    for line in text.splitlines():
        if line.startswith("Version: "):
            found = line[len("Version: "):].strip()
            return found if found == RELEASE or found.startswith(f"{RELEASE}+g") else None
        if not line:  # the headers end at the first empty line
            break
    return None


def _version() -> str:
    package = os.path.dirname(os.path.abspath(__file__))
    commit = checkout_commit(package)
    if commit:
        return f"{RELEASE}+g{commit[:12]}"
    recorded = sdist_version(package)
    if recorded:
        return recorded
    try:
        from importlib.metadata import PackageNotFoundError, version  # late: only an install asks

        return version("teiten")
    except PackageNotFoundError:
        return RELEASE


__version__ = _version()
