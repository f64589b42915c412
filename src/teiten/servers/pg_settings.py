"""The settings an install's PostgreSQL has, read from its pg_settings once and kept per install.

``postgres --describe-config`` leaves out every setting flagged NOT_IN_SAMPLE, NO_SHOW_ALL or
DISALLOW_IN_FILE (help_config.c), so a check against it refused real settings such as
``application_name`` and ``jit_expressions`` (50 of 17.11's). pg_settings lists them, and needs
a server: a throwaway cluster (initdb, then postgres in single-user mode, which reads statements
from stdin and opens no port or socket), removed at once. What it says is kept in
``$TEITEN_HOME/settings``, a directory of teiten's that the server account cannot write, one file
per install (its postgres binary's path, size and time), so that it is paid once per install
(about a second, initdb most of it).

A configuration file cannot carry two kinds of setting: those of context ``internal``
(compiled in, fixed by initdb, or computed at start: server_version, block_size,
data_checksums) and those flagged DISALLOW_IN_FILE (transaction_isolation, config_file).
pg_settings shows no flags, but ALTER SYSTEM refuses both kinds with 'parameter "x" cannot be
changed' (every version since 9.4) and nothing else that describe-config hides, so each
setting describe-config leaves out is tried with ALTER SYSTEM RESET in the throwaway cluster.
ALTER SYSTEM also refuses data_directory and allow_alter_system (DISALLOW_IN_AUTO_FILE), which
a configuration file can carry; describe-config lists them, so they are never tried.

ALTER SYSTEM came in 9.4 (teiten.installs.releases). For a 9.3 install nothing is tried: of the
settings describe-config leaves out, those guc.c flags DISALLOW_IN_FILE and pg_settings shows
(the transaction's isolation, read-only and deferrable states, and config_file) are refused by
name, as ALTER SYSTEM refuses them in every later release.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import os
import re
import tempfile
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import TypeAdapter

from teiten.host import paths, privileges, procs
from teiten.installs import Install
from teiten.model.errors import ProcessError, ServerError
from teiten.servers.cluster import Cluster
from teiten.spec import InitdbOptions

log = logging.getLogger(__name__)

FORMAT = 1  # of the cache files: a file of another format is built again
_MARK = "teiten-setting"  # begins each row of ours in single-user mode's output
_QUERY = (f"COPY (SELECT '{_MARK}', name, context, vartype, unit, min_val, max_val, "
          "array_to_string(enumvals, ',') FROM pg_settings) TO STDOUT")
_CANNOT = re.compile(r'ERROR:\s+parameter "([^"]+)" cannot be changed')
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What a configuration file cannot carry in 9.3 of the settings pg_settings shows (guc.c's
# GUC_DISALLOW_IN_FILE), for a release without ALTER SYSTEM to try them with.
_NOT_IN_FILE_93 = frozenset({"transaction_isolation", "transaction_read_only",
                             "transaction_deferrable", "config_file"})


@dataclass(frozen=True)
class Setting:
    """One row of pg_settings, and whether a configuration file can carry it."""

    name: str
    context: str  # internal, postmaster, sighup, superuser-backend, backend, superuser, user
    vartype: str  # bool, integer, real, string, enum
    unit: str | None
    min_val: str | None
    max_val: str | None
    enumvals: tuple[str, ...]
    in_file: bool

    @property
    def read_only(self) -> bool:
        """Compiled in, fixed by initdb, or computed at start (context 'internal')."""
        return self.context == "internal"


@dataclass(frozen=True)
class Catalogue:
    """Every setting of one install's PostgreSQL."""

    version: str
    settings: Mapping[str, Setting]  # by name in lower case: PostgreSQL ignores the case

    def get(self, name: str) -> Setting | None:
        return self.settings.get(name.lower())

    def refusal(self, name: str) -> str | None:
        """Why a study cannot give the setting ``name`` (one line), or None when a
        configuration file can carry it. The names of extensions' settings (``prefix.name``)
        are known only once their library is loaded: the caller lets them through."""
        found = self.get(name)
        head = f"PostgreSQL {self.version}"
        if found is None:
            carried = sorted(s.name for s in self.settings.values() if s.in_file)
            close = difflib.get_close_matches(name, carried, n=1)
            return f"{head} has no setting '{name}'" + (f"; did you mean '{close[0]}'?" if close else "")
        if found.read_only:
            return (f"{head} cannot take '{found.name}' from a configuration file: it is read-only "
                    "(compiled in, or fixed by initdb or at start); remove it from settings")
        if not found.in_file:
            default = self.get(f"default_{found.name}")
            fix = f"set '{default.name}' instead" if default is not None and default.in_file \
                else "remove it from settings"
            return (f"{head} cannot take '{found.name}' from a configuration file (it is set per "
                    f"session or transaction, or on the server's command line); {fix}")
        return None


_memo: dict[Path, Catalogue] = {}


def catalogue(install: Install) -> Catalogue | None:
    """The settings of ``install``'s postgres: from teiten's cache, else read from a throwaway
    cluster and kept there. None (logged) when no cluster of it could be made: no verdict,
    the trial's start will say."""
    path = cache_path(install)
    if path in _memo:
        return _memo[path]
    found = _read(path, install.version)
    if found is None:
        try:
            found = build(install)
        except (ProcessError, ServerError) as exc:
            log.warning("cannot list the settings of PostgreSQL %s: %s", install.version, exc)
            return None
        try:
            _write(path, found)
        except OSError as exc:  # no cache: read again next time, and the check goes on
            log.warning("cannot keep the settings of PostgreSQL %s in %s: %s", install.version,
                        path, exc)
    _memo[path] = found
    return found


def cache_path(install: Install) -> Path:
    """The cache file of ``install``: named by its version and its postgres binary's real
    path, size and modification time (a rebuilt or replaced binary is read again)."""
    binary = install.binary("postgres").resolve()
    st = binary.stat()
    key = hashlib.sha256(f"{binary}\0{st.st_size}\0{st.st_mtime_ns}".encode()).hexdigest()[:16]
    return paths.home() / "settings" / f"{install.version}-{key}.json"


def build(install: Install) -> Catalogue:
    """Read pg_settings in a throwaway cluster of ``install`` (removed before returning), and
    try each setting that describe-config hides with ALTER SYSTEM (see the module's doc)."""
    shown = _described(install)
    root = paths.make_owned(paths.clusters_dir() / f"settings-{install.version}-{uuid.uuid4().hex[:8]}",
                            f"throwaway cluster that lists the settings of PostgreSQL {install.version}")
    try:
        cluster = Cluster(install, root)
        cluster.initdb(InitdbOptions.model_validate({}))  # --no-locale -E UTF8
        rows = _rows(_single_user(cluster, [_QUERY]).stdout)
        if not rows:
            raise ServerError(f"PostgreSQL {install.version} in single-user mode listed no settings")
        # Names of the install's own pg_settings, checked to be plain words: PostgreSQL looks
        # settings up ignoring case, so the bare name is the setting.
        hidden = [name for name in rows if name.lower() not in shown and _PLAIN_NAME.fullmatch(name)]
        if install.release.alter_system:
            said = _single_user(cluster, [f"ALTER SYSTEM RESET {name}" for name in hidden]).stderr
            refused = {m.group(1).lower() for m in _CANNOT.finditer(said)}
        else:
            refused = {name.lower() for name in hidden} & _NOT_IN_FILE_93
    finally:
        paths.remove_owned(root)
    settings = {name.lower(): Setting(name, *fields, in_file=name.lower() not in refused)
                for name, fields in rows.items()}
    return Catalogue(install.version, settings)


def _described(install: Install) -> set[str]:
    """The settings ``postgres --describe-config`` lists, in lower case."""
    account = privileges.server_account()
    done = procs.run([str(install.binary("postgres")), "--describe-config"], timeout=30,
                     run_as=account, env=procs.build_env({"LC_ALL": "C"}, run_as=account),
                     what="postgres --describe-config")
    return {line.split("\t", 1)[0].lower() for line in done.stdout.splitlines() if line}


def _single_user(cluster: Cluster, statements: Iterable[str]) -> procs.Completed:
    """Run ``statements`` (one a line) in single-user mode: errors go to stderr, and it goes
    on to the next statement."""
    account = cluster.account
    return procs.run([str(cluster.install.binary("postgres")), "--single", "-D", str(cluster.data),
                      "postgres"], input="".join(f"{s}\n" for s in statements), timeout=120,
                     run_as=account, cwd=str(cluster.root),
                     env=procs.build_env({"LC_ALL": "C"}, run_as=account),
                     what=f"postgres {cluster.install.version} --single (its settings)")


_Row = tuple[str, str, str | None, str | None, str | None, tuple[str, ...]]


def _rows(stdout: str) -> dict[str, _Row]:
    """name -> (context, vartype, unit, min_val, max_val, enumvals) from the COPY's rows
    (text format: \\N is NULL). Single-user mode prints its 'backend> ' prompt before the
    first row, hence the mark each row begins with."""
    rows: dict[str, _Row] = {}
    for line in stdout.splitlines():
        _, mark, row = line.partition(_MARK + "\t")
        fields = row.split("\t")
        if not mark or len(fields) != 7 or r"\N" in fields[:3]:
            continue
        name, context, vartype, *rest = fields
        unit, low, high, enumvals = (None if f == r"\N" else f for f in rest)
        rows[name] = (context, vartype, unit, low, high, tuple(enumvals.split(",")) if enumvals else ())
    return rows


def _read(path: Path, version: str) -> Catalogue | None:
    try:
        # safe: teiten's cache of settings, in its home
        data = json.loads(path.read_text())
        if data.get("format") != FORMAT:
            return None
        settings = {s.name.lower(): s for s in _CACHED.validate_python(data).settings}
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.info("reading the settings of PostgreSQL %s again: %s is unreadable (%s)",
                 version, path, exc)
        return None
    return Catalogue(version, settings)


@dataclass(frozen=True)
class _Cached:
    """A cache file as :func:`_write` keeps it (its ``format`` checked before it is read)."""

    version: str
    settings: tuple[Setting, ...]


_CACHED = TypeAdapter(_Cached)


def _write(path: Path, found: Catalogue) -> None:
    """Keep ``found`` in ``path``, whole or not at all (a rename), so that two teitens that
    list the same install at once each leave a whole file."""
    # safe: teiten's cache of settings, in its home
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"format": FORMAT, "version": found.version,
            "settings": [asdict(s) for s in sorted(found.settings.values(), key=lambda s: s.name)]}
    fd, tmp = tempfile.mkstemp(prefix=".settings-", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.chmod(tmp, 0o644)  # safe: teiten's cache of settings, in its home
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)  # safe: the same
        raise
