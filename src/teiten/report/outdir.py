"""The directory a report is written into: a new or empty one, or one teiten wrote a report
into before. A directory of the user's files is refused, for a report's files would replace
theirs of the same names (report.md, tables/...), unless they say so (``--overwrite``).

teiten marks a report directory it writes with its marker file (:data:`teiten.host.paths.MARKER`),
so that the next report into it needs no option (``make demo`` writes demo/report each time).

teiten often runs as root, beside an account (``postgres``) that anyone who can run SQL as
the superuser can act as. A report directory is therefore one teiten makes, or one that
belongs to root or the invoking user and that no other account can write (whatever
``--overwrite`` says: it lets teiten replace the user's files, never write where another
account could have planted a link). Every file of the report, and its subdirectories, are
written through the directory's descriptor (:class:`Writer`, :mod:`teiten.host.safefs`): each file
new, created exclusively and renamed into place, so that a link found at its name is
replaced, never followed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from teiten.host import paths, safefs, trust
from teiten.model.errors import UserError

PURPOSE = "report"
# Everything a report is made of (a directory of these alone holds nothing of the user's), and
# what its report.html says in its head: a report of a teiten from before the marker.
REPORT_NAMES = frozenset({"report.md", "report.html", "tables.json", "tables", "charts",
                          "flamegraphs"})
GENERATOR = b'<meta name="generator" content="teiten '
FILE_MODE = 0o644
DIR_MODE = 0o755


def refuse_foreign(st: os.stat_result, path: Path, option: str = "--out") -> None:
    """Refuse the directory ``path`` (``st``, of its open descriptor) when another account
    owns it, or (for root, or a directory of root's) when its group or every account may
    write it: another account could plant links there while the report is written. A user's
    own directory is theirs, as before, whatever its mode."""
    me = os.geteuid()
    fix = "give a new directory, or one you own that no other account can write"
    if st.st_uid not in (0, me):
        raise UserError(f"{option} {path}: the directory belongs to {trust.owner_name(st.st_uid)}, not to "
                        f"{trust.owner_name(me)}, so that account could change what teiten writes there; "
                        f"{fix}")
    if (me == 0 or st.st_uid != me) and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        who = "every account" if st.st_mode & stat.S_IWOTH else f"the group of gid {st.st_gid}"
        raise UserError(f"{option} {path}: the directory can be written by {who} (mode "
                        f"{stat.S_IMODE(st.st_mode):o}), which could change what teiten writes "
                        f"there; {fix} (chmod go-w {path})")


def _unusable(path: Path, option: str, exc: BaseException) -> UserError:
    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return UserError(f"{option} {path}: {why}; give a new directory, or one you own")


def _open(out_dir: Path, option: str) -> tuple[safefs.Dir, bool]:
    """``out_dir`` open, made when missing (with its missing parents, each through the
    descriptor of the one above it), and whether teiten made it."""
    absolute = Path(os.path.abspath(out_dir))
    try:
        try:
            return safefs.Dir.open(absolute), False
        except FileNotFoundError:
            pass
        missing = [absolute.name]
        base = absolute.parent
        while True:
            try:
                current = safefs.Dir.open(base)
                break
            except FileNotFoundError:
                if base == base.parent:
                    raise
                missing.insert(0, base.name)
                base = base.parent
        try:
            for name in missing[:-1]:
                nxt = current.make_dir(name, mode=DIR_MODE, give=False, exist_ok=True)
                current.close()
                current = nxt
            try:
                return current.make_dir(missing[-1], mode=DIR_MODE, give=False), True
            except FileExistsError:  # made meanwhile: taken as found (never a link), then checked
                return current.child(missing[-1]), False
        finally:
            current.close()
    except (OSError, safefs.UnsafePath) as exc:
        raise _unusable(out_dir, option, exc) from None


def _marked(directory: safefs.Dir) -> bool:
    st = directory.lstat(paths.MARKER)
    return st is not None and stat.S_ISREG(st.st_mode)


def _written_before(directory: safefs.Dir) -> bool:
    """Whether teiten wrote a report into ``directory``: it carries teiten's marker, or it
    holds a report alone, whose report.html names teiten as its generator."""
    if _marked(directory):
        return True
    if not set(directory.names()) <= REPORT_NAMES:
        return False
    try:  # a regular file only: no link followed, no FIFO waited on
        fd = directory.open_file("report.html")
    except (OSError, safefs.UnsafePath):
        return False
    try:
        return GENERATOR in os.read(fd, 4096)
    finally:
        os.close(fd)


def _ours(directory: safefs.Dir) -> bool:
    """A directory that is empty, or teiten's report directory."""
    return not directory.names() or _written_before(directory)


def _holds_files(out_dir: Path, option: str) -> UserError:
    return UserError(f"{option} {out_dir}: the directory holds files teiten did not write, which "
                     "a report's files of the same names would replace; give a new or empty "
                     "directory, or add --overwrite to write the report there anyway")


def check(out_dir: Path, *, overwrite: bool, option: str = "--out") -> None:
    """Refuse ``out_dir`` when another account could change it (:func:`refuse_foreign`), or
    when it holds files and teiten wrote no report there, unless ``overwrite``. Writes
    nothing: a run checks its report directory before its trials."""
    try:
        directory = safefs.Dir.open(Path(os.path.abspath(out_dir)))
    except FileNotFoundError:
        why = paths.cannot_make(out_dir)  # else teiten makes it
        if why is not None:
            raise UserError(f"{option} {out_dir}: cannot make the directory: {why}; give a "
                            "directory you can write") from None
        return
    except (OSError, safefs.UnsafePath) as exc:
        raise _unusable(out_dir, option, exc) from None
    with directory:
        refuse_foreign(directory.st, out_dir, option)
        absolute = Path(os.path.abspath(out_dir))
        if not os.access(absolute, os.W_OK | os.X_OK):
            raise UserError(f"{option} {out_dir}: the directory {paths.unwritable(absolute)}; "
                            "give a directory you can write")
        if not overwrite and not _ours(directory):
            raise _holds_files(out_dir, option)


def claim(out_dir: Path, *, overwrite: bool, option: str = "--out") -> Writer:
    """:func:`check` ``out_dir``, make it when missing and mark it as teiten's report
    directory (one that only ``overwrite`` let through stays unmarked: it is the user's);
    returns it open, for the report's files. Close it (or use it as a context manager)."""
    directory, made = _open(out_dir, option)
    try:
        # Made or found: the very directory opened is checked (another account could have
        # put its own at the name between teiten's mkdir and its open).
        refuse_foreign(directory.st, out_dir, option)
        ours = made or _ours(directory)
        if not ours and not overwrite:
            raise _holds_files(out_dir, option)
        if ours and not _marked(directory):
            try:
                directory.write_text(paths.MARKER, paths._marker_text(PURPOSE), mode=FILE_MODE,
                                     give=False)
            except PermissionError as exc:
                raise _unusable(out_dir, option, exc) from None
    except BaseException:
        directory.close()
        raise
    return Writer(out_dir, directory, option=option)


class Writer:
    """A report directory held open by its descriptor, and its subdirectories (``tables``,
    ``charts``, ``flamegraphs``): every file of a report is written through it. Given a
    path alone (a report written by the library, not the CLI), the directory is opened (made
    when missing, checked as :func:`refuse_foreign` says) at the first file."""

    def __init__(self, path: Path, directory: safefs.Dir | None = None, *,
                 option: str = "--out"):
        self.path = path
        self.option = option
        self._dir = directory
        self._subs: dict[str, safefs.Dir] = {}

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for sub in self._subs.values():
            sub.close()
        self._subs.clear()
        if self._dir is not None:
            self._dir.close()
            self._dir = None

    def _top(self) -> safefs.Dir:
        if self._dir is None:
            directory, _ = _open(self.path, self.option)
            try:
                refuse_foreign(directory.st, self.path, self.option)
            except BaseException:
                directory.close()
                raise
            self._dir = directory
        return self._dir

    def sub(self, name: str) -> safefs.Dir:
        """The subdirectory ``name``, made when missing; one that is a link, or that another
        account could change, is refused."""
        if name not in self._subs:
            where = self.path / name
            try:
                found = self._top().make_dir(name, mode=DIR_MODE, give=False, exist_ok=True)
            except (OSError, safefs.UnsafePath) as exc:
                raise _unusable(where, self.option, exc) from None
            try:
                refuse_foreign(found.st, where, self.option)
            except BaseException:
                found.close()
                raise
            self._subs[name] = found
        return self._subs[name]

    def write_text(self, relative: str, text: str) -> Path:
        """Write ``text`` (UTF-8) at ``relative`` (``report.md``, ``tables/x.csv``): a new
        file renamed into place. Returns its path."""
        *under, name = relative.split("/")
        if len(under) > 1:
            raise ValueError(f"a report file is at most one directory deep: {relative!r}")
        directory = self.sub(under[0]) if under else self._top()
        try:
            directory.write_text(name, text, mode=FILE_MODE, give=False)
        except PermissionError as exc:  # a directory of root's, written by a user
            raise _unusable(directory.path, self.option, exc) from None
        return self.path / relative


@contextlib.contextmanager
def opened(out: Path | Writer) -> Iterator[Writer]:
    """``out`` as a :class:`Writer`: itself (left open for its owner), or a new one over the
    path, closed at the end."""
    if isinstance(out, Writer):
        yield out
        return
    with Writer(out) as writer:
        yield writer
