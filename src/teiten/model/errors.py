"""The one error tree of teiten.

Only the CLI turns these into messages and exit codes: :class:`UserError` and its
subclasses mean bad input (exit 2); :class:`MachineBusy` a study stopped because the machine
stayed busy (exit 3); every other :class:`TeitenError` is a failure at run time (exit 1).
Messages say what failed, what was checked, and how to fix it, on one line.
"""

from __future__ import annotations


class TeitenError(Exception):
    """Base of every error teiten raises on purpose."""

    exit_code = 1


class UserError(TeitenError):
    """The user asked for something impossible or malformed (exit status 2)."""

    exit_code = 2


class SpecError(UserError):
    """A study file is invalid. Carries the file and line when known."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None):
        self.path = path
        self.line = line
        self.bare = message  # without the file and line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)


class InstallError(TeitenError):
    """PostgreSQL binaries could not be found, downloaded or unpacked."""


class ServerError(TeitenError):
    """A PostgreSQL server could not be created, started, reached or stopped."""


class ProcessError(TeitenError):
    """A subprocess failed or timed out. Carries the command, exit status and stderr tail."""

    def __init__(
        self,
        message: str,
        *,
        argv: list[str] | None = None,
        returncode: int | None = None,
        stderr_tail: str = "",
    ):
        self.argv = argv or []
        self.returncode = returncode
        self.stderr_tail = stderr_tail
        super().__init__(message)


class MachineBusy(TeitenError):
    """The machine stayed busy with other load: the study stopped, left interrupted for resume
    (exit status 3)."""

    exit_code = 3


class StoreError(TeitenError):
    """The results store is unreadable, of an unknown version, or inconsistent."""


class StoreFull(StoreError):
    """The store's disk is full: what was committed is safe, the run cannot go on (exit 1)."""


class StoreUnreachable(StoreError):
    """The connection to a PostgreSQL store was lost mid-run: what was committed is safe, the
    run cannot go on (exit 1)."""


class UnusableStore(StoreError, UserError):
    """The path given as a store is no teiten store: a directory, a text file, another
    program's SQLite file, a file SQLite cannot read (bad input: exit 2)."""

    exit_code = 2


class StoreVersionError(StoreError, UserError):
    """The store was written by a newer teiten (bad input: exit 2)."""

    exit_code = 2


class TrialFailed(TeitenError):
    """One trial failed; the runner records the reason and goes on."""


class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM) while a study ran: its store, which 'teiten resume' finishes. A
    plain KeyboardInterrupt means nothing was started (e.g. while waiting for the machine)."""

    def __init__(self, store: str):
        super().__init__(store)
        self.store = store
