"""File operations on paths the server account can write, for teiten run as root.

teiten runs as root and starts PostgreSQL as the server account (``postgres``). Whoever can
act as that account (or write a workload's SQL, which pgbench runs as the superuser) can
replace anything in a directory it can write between two of root's steps: a link planted at
``teiten-runtime.conf`` would have root overwrite the link's target and hand it over. So root
never gives the kernel such a path as a string. It walks from ``/`` one name at a time with
directory descriptors (``openat``), follows a symbolic link only where the server account
cannot have made it (in a directory it cannot write), and does the last step relative to the
directory it holds, refusing links (``O_NOFOLLOW``) and checking the kind of what it opened.
A file teiten writes there is a new file, created exclusively, handed to the account through
its descriptor and renamed into place (a rename replaces a planted link, never its target).

When teiten is not root the server runs as the same account: there is no boundary, links
are followed as usual, and these operations are the plain ones. This module is the only
one in ``servers/``, ``monitors/``, ``leftovers``, ``paths`` and ``oscache`` that writes,
chowns, chmods, removes or opens such paths (a test reads the code for it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from teiten.host import privileges
from teiten.host.procs import RunAs
from teiten.model.errors import ServerError

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_MAX_LINKS = 40
READ_LIMIT = 64 << 20  # a server log larger than this is read from its end


class UnsafePath(ServerError):
    """A path that the server account could have turned against root (a planted link)."""


def _account_ids() -> tuple[int, set[int]] | None:
    account = privileges.server_account()
    if account is None:
        return None
    return account.uid, set(os.getgrouplist(account.name, account.gid))


def server_controls(dir_st: os.stat_result, entry_st: os.stat_result | None = None) -> bool:
    """Whether the server account can replace an entry of the directory ``dir_st`` (the
    entry ``entry_st``, when known): it owns the directory, or may write it and the
    directory is not sticky (``/tmp``) or the entry is the account's."""
    ids = _account_ids()
    if ids is None:
        return False
    uid, groups = ids
    if dir_st.st_uid == uid:
        return True
    mode = dir_st.st_mode
    writable = bool(mode & stat.S_IWOTH) or (dir_st.st_gid in groups and bool(mode & stat.S_IWGRP))
    if not writable:
        return False
    if mode & stat.S_ISVTX:
        return entry_st is None or entry_st.st_uid == uid
    return True


class Dir:
    """A directory held open by descriptor, reached without following a link the server
    account could have made. Use as a context manager, or close it."""

    def __init__(self, fd: int, path: Path):
        self.fd = fd
        self.path = path
        self.st = os.fstat(fd)

    def __enter__(self) -> Dir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    # -- reaching things ---------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str) -> Dir:
        """Open the directory ``path`` (absolute, or made so)."""
        fd, where = _walk(Path(os.path.abspath(path)))
        return cls(fd, where)

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(_name(name), dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def controls(self, name: str) -> bool:
        """Whether the server account can replace ``name`` here."""
        return server_controls(self.st, self.lstat(name))

    def child(self, name: str) -> Dir:
        """The subdirectory ``name``; a link there is refused."""
        try:
            fd = os.open(_name(name), _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=self.fd)
        except OSError as exc:
            raise _refusal(self.path / name, exc) from exc
        return Dir(fd, self.path / name)

    def names(self) -> list[str]:
        return sorted(os.listdir(self.fd))

    def open_file(self, name: str, flags: int = os.O_RDONLY) -> int:
        """A descriptor of the regular file ``name``, opened without following a link and
        without blocking on a FIFO; anything else is refused."""
        try:
            fd = os.open(_name(name), flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                         dir_fd=self.fd)
        except OSError as exc:
            raise _refusal(self.path / name, exc) from exc
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or (st.st_nlink > 1 and self.controls(name)
                                             and not _is_account(st.st_uid)):
            os.close(fd)
            raise UnsafePath(f"{self.path / name} is not a regular file of its own (it may have "
                             "been planted by the server account); teiten does not open it")
        os.set_blocking(fd, True)
        return fd

    # -- reading -------------------------------------------------------------------------

    def read_bytes(self, name: str, *, limit: int = READ_LIMIT) -> bytes:
        """The file ``name``; of a file larger than ``limit``, its last ``limit`` bytes."""
        fd = self.open_file(name)
        try:
            size = os.fstat(fd).st_size
            if size > limit:
                os.lseek(fd, size - limit, os.SEEK_SET)
            chunks, got = [], 0
            while got < limit and (chunk := os.read(fd, min(1 << 20, limit - got))):
                chunks.append(chunk)
                got += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def read_text(self, name: str, *, limit: int = READ_LIMIT) -> str:
        return self.read_bytes(name, limit=limit).decode(errors="replace")

    # -- writing -------------------------------------------------------------------------

    def write_text(self, name: str, text: str, *, mode: int = 0o600, give: bool = True) -> None:
        """Replace ``name`` with a new file holding ``text``: written under a fresh name,
        handed to the server account (``give``) and renamed into place, so that a link
        planted at ``name`` is replaced, never followed."""
        tmp = f".teiten-{secrets.token_hex(6)}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     mode, dir_fd=self.fd)
        try:
            try:
                os.fchmod(fd, mode)  # open's mode is filtered by the umask
                if give:
                    _give_fd(fd)
                data = text.encode("utf-8", errors="surrogateescape")
                while data:
                    data = data[os.write(fd, data):]
            finally:
                os.close(fd)
            os.rename(tmp, _name(name), src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise

    def append_text(self, name: str, text: str) -> None:
        """``name`` with ``text`` added at its end, written as :meth:`write_text` does."""
        fd = self.open_file(name)
        try:
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > READ_LIMIT:
            raise UnsafePath(f"{self.path / name} is {size} bytes: not a file teiten appends to")
        old = self.read_bytes(name).decode("utf-8", errors="surrogateescape")
        self.write_text(name, old + text, mode=stat.S_IMODE(self._mode(name)) & 0o777)

    def _mode(self, name: str) -> int:
        st = self.lstat(name)
        return st.st_mode if st is not None and stat.S_ISREG(st.st_mode) else 0o600

    def make_dir(self, name: str, *, mode: int = 0o700, give: bool = True,
                 exist_ok: bool = False) -> Dir:
        """Create the subdirectory ``name`` and hand it to the server account (``give``);
        returns it open. With ``exist_ok`` an existing directory (never a link) is taken."""
        try:
            os.mkdir(_name(name), mode, dir_fd=self.fd)
        except FileExistsError:
            if not exist_ok:
                raise
            return self.child(name)  # someone's already: never chmod or chown it
        sub = self.child(name)
        try:
            # The one just made is ours: another account that swapped its own in between the
            # mkdir and the open (it can write here) is refused, never chmodded or given.
            if os.fstat(sub.fd).st_uid != os.geteuid():
                raise UnsafePath(f"{self.path / name} was replaced by another account's directory "
                                 "as teiten made it; teiten does not take it")
            os.fchmod(sub.fd, mode)
            if give:
                _give_fd(sub.fd)
        except BaseException:
            sub.close()
            raise
        sub.st = os.fstat(sub.fd)
        return sub

    def make_dirs(self, relative: str, **kwargs: object) -> Dir:
        """:meth:`make_dir` for each name of ``relative`` (``a/b/c``), existing ones taken."""
        current = Dir(os.dup(self.fd), self.path)
        for name in Path(relative).parts:
            nxt = current.make_dir(name, exist_ok=True, **kwargs)  # type: ignore[arg-type]
            current.close()
            current = nxt
        return current

    # -- removing ------------------------------------------------------------------------

    def remove(self, name: str, *, only: Callable[[Dir], bool] | None = None) -> bool:
        """Remove ``name`` (a file, a link or a whole tree) without following any link.
        ``only``: a directory is removed only when this says yes of it, opened (the very
        directory then removed). Whatever the server account swaps in meanwhile is removed
        as found, never followed. Returns whether something was removed."""
        for _attempt in range(5):
            st = self.lstat(name)
            if st is None:
                return False
            if not stat.S_ISDIR(st.st_mode):
                if only is not None:
                    return False
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(_name(name), dir_fd=self.fd)
                return True
            try:
                sub = self.child(name)
            except (UnsafePath, FileNotFoundError):
                continue  # replaced since the look: look again
            with sub:
                if not os.path.samestat(sub.st, st):
                    continue
                if only is not None and not only(sub):
                    return False
                only = None  # this very directory was the one asked about
                sub.clear()
            now = self.lstat(name)
            if now is None or not os.path.samestat(now, st):
                return True
            try:
                os.rmdir(_name(name), dir_fd=self.fd)
                return True
            except OSError as exc:  # the server account may add files as fast as we remove
                if exc.errno != errno.ENOTEMPTY:
                    raise
        raise UnsafePath(f"{self.path / name} kept changing while teiten removed it")

    def clear(self) -> None:
        """Remove everything in this directory (not the directory)."""
        for name in os.listdir(self.fd):
            self.remove(name)

    def walk(self) -> Iterator[tuple[str, list[str], list[str], int]]:
        """``os.fwalk`` of this directory: (relative dir, subdirectories, files, dir fd),
        never following a link."""
        for top, dirs, files, fd in os.fwalk(".", dir_fd=self.fd, follow_symlinks=False):
            yield os.path.normpath(top), dirs, files, fd


def _name(name: str) -> str:
    """A single name in a directory: no separators, not '.' or '..'."""
    if not name or "/" in name or name in (".", ".."):
        raise ValueError(f"not a single name: {name!r}")
    return name


def _is_account(uid: int) -> bool:
    ids = _account_ids()
    return ids is not None and ids[0] == uid


def _give_fd(fd: int, to: RunAs | None = None) -> None:
    account = to or privileges.server_account()
    if account is not None:
        os.fchown(fd, account.uid, account.gid)


def _refusal(path: Path, exc: OSError) -> Exception:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return UnsafePath(f"{path} is a link or not what teiten made there (it may have been "
                          "planted by the server account); teiten does not follow it")
    return exc


def _walk(path: Path) -> tuple[int, Path]:
    """A descriptor of the directory ``path``, reached from ``/`` one name at a time. A link
    is followed (by its text, walked the same way) only where the server account cannot have
    made it; elsewhere it is refused."""
    todo = list(path.parts[1:])
    done = Path("/")
    fd = os.open("/", _DIR_FLAGS)
    links = 0
    try:
        while todo:
            name = todo.pop(0)
            if name in ("", "."):
                continue
            if name == "..":  # the real parent of where the walk is: no link is involved
                parent = os.open("..", _DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd, done = parent, done.parent
                continue
            dir_st = os.fstat(fd)
            try:
                entry = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                raise FileNotFoundError(2, "No such file or directory", str(done / name)) from None
            if stat.S_ISLNK(entry.st_mode):
                if server_controls(dir_st, entry):
                    raise UnsafePath(f"{done / name} is a link in a directory the server account "
                                     "can write (it may have been planted); teiten does not "
                                     "follow it")
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(40, "Too many levels of symbolic links", str(path))
                target = os.readlink(name, dir_fd=fd)
                if target.startswith("/"):
                    os.close(fd)
                    fd, done = os.open("/", _DIR_FLAGS), Path("/")
                todo = list(Path(target).parts[1 if target.startswith("/") else 0:]) + todo
                continue
            if not stat.S_ISDIR(entry.st_mode):
                raise NotADirectoryError(20, "Not a directory", str(done / name))
            try:
                nxt = os.open(name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                raise _refusal(done / name, exc) from exc
            os.close(fd)
            fd, done = nxt, done / name
    except BaseException:
        os.close(fd)
        raise
    return fd, done


def parent_and_name(path: Path | str) -> tuple[Dir, str]:
    """The directory holding ``path``, open, and the last name of ``path``."""
    absolute = Path(os.path.abspath(path))
    return Dir.open(absolute.parent), absolute.name


# -- the same by path, for one operation -----------------------------------------------------

def write_text(path: Path, text: str, *, mode: int = 0o600, give: bool = True) -> None:
    directory, name = parent_and_name(path)
    with directory:
        directory.write_text(name, text, mode=mode, give=give)


def append_text(path: Path, text: str) -> None:
    directory, name = parent_and_name(path)
    with directory:
        directory.append_text(name, text)


def chmod(path: Path | str, mode: int) -> None:
    """``chmod`` of the file or directory ``path`` itself, through a descriptor opened without
    following a link at its name (a link there is refused, never followed to what it names)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise _refusal(Path(path), exc) from exc
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def append_file(path: Path | str, text: str) -> None:
    """Add ``text`` at the end of the file ``path`` (made 0644 when missing) in place, its inode
    kept (a CI's step summary is read by its path after the step), never through a link at its
    name and never into a FIFO or device. The caller has refused a path another account could
    change (teiten.host.paths.refuse_replaceable), so that its links, resolved here, are root's or
    the user's own."""
    directory, name = parent_and_name(os.path.realpath(path))
    with directory:
        try:
            fd = os.open(_name(name), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                         | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=directory.fd)
        except OSError as exc:
            raise _refusal(directory.path / name, exc) from exc
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise UnsafePath(f"{path} is not a regular file; teiten appends only to one")
            data = text.encode("utf-8", errors="surrogateescape")
            while data:
                data = data[os.write(fd, data):]
        finally:
            os.close(fd)


def read_text(path: Path, *, limit: int = READ_LIMIT) -> str:
    directory, name = parent_and_name(path)
    with directory:
        return directory.read_text(name, limit=limit)


def make_dir(path: Path, *, mode: int = 0o700, give: bool = True, exist_ok: bool = False) -> None:
    directory, name = parent_and_name(path)
    with directory, directory.make_dir(name, mode=mode, give=give, exist_ok=exist_ok):
        pass


def remove(path: Path) -> bool:
    """Remove the file, link or tree at ``path``; False when there was nothing."""
    try:
        directory, name = parent_and_name(path)
    except FileNotFoundError:
        return False
    with directory:
        return directory.remove(name)


def exists(path: Path) -> bool:
    """Whether ``path`` names something, reached as every operation here reaches it."""
    try:
        directory, name = parent_and_name(path)
    except (FileNotFoundError, NotADirectoryError, PermissionError, UnsafePath):
        return False
    with directory:
        return directory.lstat(name) is not None


def give(path: Path, to: RunAs | None = None) -> None:
    """Hand the directory ``path`` (which teiten just created) to the server account (or to
    the account ``to``)."""
    with Dir.open(path) as directory:
        _give_fd(directory.fd, to)


def read_files(path: Path, *, first: str | None = None) -> str:
    """Every regular file of the directory ``path``, ``first`` first, then by name; what is
    not a regular file of its own (a planted link, a FIFO) is left out. Empty when there is
    no such directory."""
    try:
        directory = Dir.open(path)
    except (FileNotFoundError, NotADirectoryError):
        return ""
    out, left = [], READ_LIMIT  # one budget for the whole directory
    with directory:
        for name in sorted(directory.names(), key=lambda n: (n != first, n)):
            st = directory.lstat(name)
            if st is None or not stat.S_ISREG(st.st_mode) or left <= 0:
                continue
            with contextlib.suppress(UnsafePath, FileNotFoundError):
                out.append(directory.read_text(name, limit=left))
                left -= len(out[-1])
    return "".join(out)


def server_can_replace(path: Path | str) -> Path | None:
    """The first directory on the way to ``path`` (itself included, as far as it exists)
    that the server account could replace or fill with its own, or None. teiten makes its
    directories only where this is None: below such a place, what teiten made could be
    swapped for the account's between two of root's steps."""
    if _account_ids() is None:
        return None
    current = Path("/")
    for name in Path(os.path.abspath(path)).parts[1:]:
        try:
            dir_st = os.stat(current)
            entry = os.stat(current / name, follow_symlinks=False)
        except OSError:
            return None
        if server_controls(dir_st, entry):
            return current / name
        if stat.S_ISLNK(entry.st_mode):
            return server_can_replace(os.path.realpath(current / name))
        current = current / name
    try:  # what teiten makes in the last one is root's: replaceable only where not sticky
        last = os.stat(current)
    except OSError:
        return None
    return current if server_controls(last) and not last.st_mode & stat.S_ISVTX else None
