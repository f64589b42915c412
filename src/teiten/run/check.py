"""Everything checked before anything is created: the study, its scripts, its installs,
its settings. A failure here is bad input (exit status 2) and leaves nothing behind."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from teiten import installs
from teiten.host import client_account, cpus, paths, privileges, procs
from teiten.installs import Install, Resolution
from teiten.installs.model import version_key
from teiten.installs.releases import PGBENCH_OPTIONS_SINCE, Release
from teiten.model.errors import ProcessError, UserError
from teiten.servers import kinds, pg_settings, profiles
from teiten.servers.replication import basebackup_choice
from teiten.spec import LoadedStudy, ServerSpec
from teiten.workloads import Workload, statements
from teiten.workloads import resolve as resolve_workloads


@dataclass(frozen=True)
class CheckedStudy:
    loaded: LoadedStudy
    workloads: list[Workload]
    installs: dict[str, Resolution]   # server name -> its install (local servers)
    client: Resolution                # whose pgbench drives every server
    omitted: tuple[tuple[str, str], ...] = ()  # optional servers left out: (name, why)


def check(loaded: LoadedStudy) -> CheckedStudy:
    """Validate what the schema cannot: workloads, scripts, installs, settings names."""
    study = loaded.study
    workloads = resolve_workloads(loaded)
    found = installs.find_all()
    resolved: dict[str, Resolution] = {}
    loaded, omitted = without_missing_optionals(loaded, found)
    study = loaded.study
    _check_cpus(loaded)
    _check_directories(loaded)
    _check_hooks(loaded)
    _check_trusted_files(loaded, workloads)
    _check_suites(loaded, workloads)
    _check_topologies(loaded, workloads)
    for i, server in study.server_matrix():
        if not kinds.of(server).install_here:
            continue  # its PostgreSQL is on that host, in the image, or not teiten's
        assert server.install is not None
        try:
            resolved[server.name] = installs.resolve(server.install, installed=found)
        except UserError as exc:
            raise loaded.error(("servers", i, "install"), str(exc)) from None
        inst = resolved[server.name].install
        if inst is not None and server.settings:
            _check_settings(loaded, i, inst, dict(server.settings))
    client = _client(loaded, resolved, found)
    _check_installs_trusted(loaded, resolved, client)
    for i, server in study.server_matrix():
        if server.name in resolved:
            _check_standbys(loaded, i, server, resolved[server.name], client)
    _check_pgbench_options(loaded, workloads, client)
    _check_scripts(loaded, workloads, [client.install] if client.install is not None else [])
    for index, w in enumerate(workloads):
        w.check(loaded, index)  # what a kind of workload needs beyond what is checked above
    if any(kinds.of(server).password for _, server in study.server_matrix()):
        privileges.client_account()  # as root, the account their clients run as is here
    _check_external_servers(loaded)  # last: the one check that reaches another machine
    return CheckedStudy(loaded, workloads, resolved, client, omitted)


def _check_external_servers(loaded: LoadedStudy) -> None:
    """Every external server answers: teiten connects to each once, as its first trial
    would, before anything is stored (issue 54, item 15: one that did not answer made a store,
    failed every trial and wrote a report of nothing). Refused with the server's line, its name
    and libpq's reason (the kind's ``unanswered``: teiten.servers.external.server.connect_error). An
    optional one is not asked: its trials fail as they did, and the study runs the others."""
    for i, server in loaded.study.server_matrix():
        kind = kinds.of(server)
        if server.optional or kind.controlled:
            continue
        said = kind.unanswered(server, loaded.secrets)
        if said is not None:
            raise loaded.error(("servers", i, *filter(None, [kind.field])), said)


# The programs of an install that teiten runs, and where what they load lies.
_PROGRAMS = ("postgres", "pg_ctl", "initdb", "pgbench", "pg_basebackup", "pg_config", "psql")


def _check_installs_trusted(loaded: LoadedStudy, resolved: dict[str, Resolution],
                            client: Resolution) -> None:
    """Every install the study runs: its bin directory, the programs teiten runs from it, and
    its lib directory with the libraries there, changeable by no other account (teiten runs
    them as root, or hands them to the server account). What a manifest covers beyond that
    (an install teiten made) is checked by installs.verify_files."""
    uses: list[tuple[tuple[str | int, ...], Resolution]] = [
        (("servers", i, "install"), resolved[s.name]) for i, s in loaded.study.server_matrix()
        if s.name in resolved]
    uses.append((("pgbench",), client))
    seen: set[Path] = set()
    for where, res in uses:
        if res.install is None or res.install.bindir in seen:
            continue
        bindir = res.install.bindir
        seen.add(bindir)
        lib = bindir.parent / "lib"
        candidates = [bindir, *(bindir / p for p in _PROGRAMS)]
        if lib.is_dir():
            candidates += [lib, *sorted(p for p in lib.iterdir() if p.is_file())]
        for path in candidates:
            if not os.path.lexists(path):
                continue
            try:
                paths.refuse_replaceable(path, f"the install {res.describe()}")
            except UserError as exc:
                raise loaded.error(where, str(exc)) from None


def _check_standbys(loaded: LoadedStudy, index: int, server: ServerSpec, res: Resolution,
                    client: Resolution) -> None:
    """Streaming standbys need 9.6 or later (slots reserved at once, the settings teiten
    writes), and a pg_basebackup: the server's own (10 or later), else the client install's
    (10 or later, of its major or newer: pg_basebackup backs up older servers). Maven's and npm's builds
    have none, so a study of them takes the client's; where neither has one, it is refused
    here rather than failing at its first trial."""
    if not server.replicas or server.replication == "native":
        return
    where = ("servers", index, "replicas")
    if not Release.of(res.version).streaming_standbys:
        raise loaded.error(where, f"servers[{index}].replicas: streaming standbys need PostgreSQL "
                           f"9.6 or later, not {res.version}; use replication: native")
    candidates = [(r, _release(r.version)[0]) for r in (res, client) if r.has("pg_basebackup")]
    if basebackup_choice(_release(res.version)[0], candidates) is None:
        raise loaded.error(where, f"servers[{index}].replicas: streaming standbys are made with a "
                           "pg_basebackup of 10 or later and of the server's major or newer, "
                           "which neither "
                           f"PostgreSQL {res.describe()} nor the study's pgbench install "
                           f"{client.describe()} has; name a newer install that has it (PyPI's, "
                           "the system's) in 'pgbench:'")


def _release(version: str) -> tuple[int, ...]:
    """(9, 6) for "9.6.24", (17,) for "17.11": the major as a comparable tuple."""
    nums = tuple(int(n) for n in re.findall(r"\d+", version))
    return nums[:2] if nums and nums[0] < 10 else nums[:1]


def _client(loaded: LoadedStudy, resolved: dict[str, Resolution], found: list[Install]) -> Resolution:
    """The install whose pgbench drives every server of the study, so that the client is no
    difference between them: the study's ``pgbench``, else the newest of its own installs that
    has pgbench (a PyPI wheel has; Maven's and npm's builds have none), else the newest here, else
    the newest from PyPI."""
    if loaded.study.pgbench is not None:
        try:
            chosen = installs.resolve(loaded.study.pgbench, installed=found)
        except UserError as exc:
            raise loaded.error(("pgbench",), f"pgbench: {exc}") from None
        if not chosen.has("pgbench"):
            raise loaded.error(("pgbench",), f"pgbench: {chosen.describe()} has no pgbench; name "
                               "an install that has one (see 'teiten installs')")
        return chosen
    own = [r for r in resolved.values() if r.has("pgbench")]
    if own:
        return max(own, key=lambda r: version_key(r.version))
    here = [inst for inst in found if inst.has("pgbench") and inst.origin != "source"]
    if here:
        return Resolution(here[0].series, install=installs.intact(here[0]))
    return installs.resolve("pypi:18")


def without_missing_optionals(loaded: LoadedStudy, found: list[Install]
                               ) -> tuple[LoadedStudy, tuple[tuple[str, str], ...]]:
    """The study without its optional servers whose install cannot be had here."""
    kept, omitted = [], []
    for i, server in enumerate(loaded.study.servers):
        kind = kinds.of(server)
        if problem := kind.unavailable(server):
            if not server.optional:
                raise loaded.error(("servers", i, kind.field or "install"), problem + " (or mark "
                                   "it optional: true to run the study without it)")
            omitted.append((server.name, problem))
            continue
        if server.optional and server.install is not None and kind.install_here:
            try:
                installs.resolve(server.install, installed=found)
            except UserError as exc:
                omitted.append((server.name, str(exc)))
                continue
        kept.append(server)
    if not omitted:
        return loaded, ()
    if not kept:
        raise loaded.error(("servers",), f"every server is optional and none has its install "
                           f"here: {omitted[0][1]}")
    gone = {name for name, _ in omitted}
    groups = [g for g in loaded.study.tenants or [] if not gone & set(g)]
    omitted += [("+".join(g), f"tenants group without {', '.join(sorted(gone & set(g)))}")
                for g in loaded.study.tenants or [] if gone & set(g)]
    update: dict[str, object] = {"servers": kept}
    if loaded.study.tenants is not None:
        update["tenants"] = groups or None
    return replace(loaded, study=loaded.study.model_copy(update=update)), tuple(omitted)


def materialise(checked: CheckedStudy) -> CheckedStudy:
    """Install what the study needs (downloads into the cache only), and check the settings
    of installs that were not here when the study was first checked."""
    done: dict[str, Resolution] = {}
    for index, server in checked.loaded.study.server_matrix():
        res = checked.installs.get(server.name)
        if res is None:
            continue
        if res.install is None:
            res = Resolution(res.ref, install=installs.materialise(res))
            if server.settings:
                assert res.install is not None
                _check_settings(checked.loaded, index, res.install, dict(server.settings))
        done[server.name] = res
    client = checked.client
    if client.install is None:
        client = Resolution(client.ref, install=installs.materialise(client))
    loaded, omitted = checked.loaded, checked.omitted
    if any(res.install is None for res in checked.installs.values()):
        # A kind may judge a server only with its install here (a VM guest's accelerator is
        # tried by booting an image of it): ask again now that the downloads are in.
        loaded, more = without_missing_optionals(loaded, installs.find_all())
        omitted += more
        kept = {server.name for _, server in loaded.study.server_matrix()}
        done = {name: res for name, res in done.items() if name in kept}
    return CheckedStudy(loaded, checked.workloads, done, client, omitted)


def _check_topologies(loaded: LoadedStudy, workloads: list[Workload]) -> None:
    """What replicas, Pgpool-II, network namespaces, ssh and several load clients need: the
    programs here, and pgbench workloads (the others drive one server directly)."""
    study = loaded.study
    many = study.load_clients is not None and (len(study.load_clients) > 1
                                               or study.load_clients[0].ssh is not None)
    for w in workloads:
        if study.tenants and (w.drives_one_server or w.pgbench_option("percentiles")):
            what = "percentiles come from one pgbench's transaction log" \
                if w.pgbench_option("percentiles") else f"the {w.key} workload drives one server"
            raise loaded.error(("tenants",), f"{what}, and 'tenants' loads several servers at "
                               "once with pgbench workloads only; give it in a study of its own")
    for i, server in study.server_matrix():
        kind = kinds.of(server)
        which = [k for k, on in (("replicas", server.replicas > 0), ("pgpool", server.pgpool),
                                 (kind.field or "", not kind.loads_by_sql)) if on]
        if many:
            which.append("load_clients")
        for w_index, w in enumerate(workloads):
            several = [k for k in which if k in ("replicas", "pgpool")] or \
                (["load_clients"] if study.load_clients is not None else [])
            if several and w.pgbench_option("percentiles"):
                raise loaded.error(("workloads", w_index, "percentiles"),
                                   f"percentiles come from one pgbench's transaction log, and "
                                   f"'{several[0]}' (server {server.name}) runs several at once; "
                                   "remove 'percentiles' (or the several pgbench) in this "
                                   "version of teiten")
            if which and w.drives_one_server:
                where = ("load_clients",) if which[0] == "load_clients" else ("servers", i, which[0])
                raise loaded.error(where, f"the {w.key} workload drives one server directly; "
                                   f"'{which[0]}' (server {server.name}) works with pgbench "
                                   "workloads only in this version of teiten")
        if found := kind.problem(server):
            raise loaded.error(("servers", i, found.key), found.message)
        if many and shutil.which("ssh") is None:
            raise loaded.error(("load_clients",), "the ssh client is missing here: apt-get install "
                               "openssh-client")


def _check_suites(loaded: LoadedStudy, workloads: list[Workload]) -> None:
    """Measured-statement workloads on servers that cannot give what they need: a cold cache
    needs a server teiten restarts; Japanese text needs a UTF-8 locale."""
    for w_index, w in enumerate(workloads):
        if w.suite is None:
            continue
        found = statements.suite(w.suite)
        if lacking := found.missing(found.read(dict(w.options))):
            raise loaded.error(("workloads", w_index), lacking)
        for i, server in loaded.study.server_matrix():
            kind = kinds.of(server)
            controlled = kind.controlled
            if not kind.may_create(server):
                raise loaded.error(("servers", i, "allow_init"),
                                   f"the {w.suite} workload creates its own tables and indexes; "
                                   f"on the external server {server.name} it needs allow_init: "
                                   "true (teiten then works in a database of its own)")
            if not controlled and "cold" in w.option("cache"):
                raise loaded.error(("workloads", w_index, "cache"),
                                   f"cache: cold needs a server that teiten restarts, and "
                                   f"{server.name} is {kind.name}; use cache: [warm] there")
            locale = server.initdb.locale or ""
            utf8 = (re.search(r"utf-?8", locale, re.IGNORECASE)
                    and server.initdb.encoding.upper().replace("-", "") == "UTF8")
            if found.needs_utf8 and controlled and not utf8:
                raise loaded.error(("servers", i, "initdb"),
                                   f"the {w.suite} workload needs a UTF-8 locale, and "
                                   f"{server.name} has {locale or 'the C locale (--no-locale)'} "
                                   f"and encoding {server.initdb.encoding}, "
                                   "under which pg_trgm extracts no trigrams from Japanese; "
                                   "give it initdb: {locale: C.UTF-8, encoding: UTF8}")


def _check_pgbench_options(loaded: LoadedStudy, workloads: list[Workload],
                           client: Resolution) -> None:
    """An option the study's pgbench does not have is refused here, not by every trial."""
    release = Release.of(client.version)
    for index, w in enumerate(workloads):
        for option, since in PGBENCH_OPTIONS_SINCE.items():
            if w.pgbench_option(option) is not None and release < since:
                raise loaded.error(("workloads", index, option),
                                   f"workloads[{index}].{option}: pgbench {since} or later has it, "
                                   f"and the study's pgbench is {client.describe()}; name a newer "
                                   "install in 'pgbench:', or remove it")


def _check_scripts(loaded: LoadedStudy, workloads: list[Workload], drivers: list[Install]) -> None:
    """Every pgbench script of the study parses with each pgbench that will run it (those here
    already): pgbench reads its scripts before it connects, so a run against a socket that
    does not exist fails for the script if the script is wrong, and for the connection if not."""
    pgbenches = {str(inst.binary("pgbench")): inst for inst in drivers if inst.has("pgbench")}
    for index, w in enumerate(workloads):
        if w.app is not None or w.suite is not None or all(
                selector.startswith("builtin:") for selector, _ in w.scripts):
            continue
        for binary, inst in pgbenches.items():
            try:
                done = client_account.run([binary, "-n", *w.script_args(), "-h",
                                           "/nonexistent/teiten-check", "-p", "1", "-t", "1",
                                           "teiten_check"], timeout=30, check=False,
                                          what="pgbench (the study's scripts)")
            except ProcessError:
                continue  # no verdict: the trial will say
            said = [line.removeprefix("pgbench: error: ") for line in done.stderr.splitlines()
                    if line.strip() and not line.startswith("pgbench: setting random seed")]
            if done.returncode != 0 and said and "connection" not in said[0]:
                raise loaded.error(("workloads", index),
                                   f"workloads[{index}] ({w.key}): pgbench {inst.version} refuses "
                                   f"its script: {said[0]}")


def _check_directories(loaded: LoadedStudy) -> None:
    """The directories a local server puts its cluster, WAL or tablespace in (a VM guest's: the
    file of its WAL disk): each must be an existing directory that teiten can make its own
    subdirectory in (tried with one that is removed at once), so that no trial fails later for it."""
    for i, server in loaded.study.server_matrix():
        kind = kinds.of(server)
        if not kind.runs_here and not kind.waldir_here:
            continue
        for loc, given in ((("directory",), server.directory), (("initdb", "waldir"), server.initdb.waldir),
                           (("tablespace",), server.tablespace)):
            if not given or not kind.runs_here and loc != ("initdb", "waldir"):
                continue
            where = ("servers", i, *loc)
            label = f"servers[{i}].{'.'.join(loc)}"
            path = Path(given).expanduser().absolute()
            if not path.exists():
                raise loaded.error(where, f"{label}: {path} does not exist; create it (mkdir -p "
                                   f"{path}) or give another directory")
            if not path.is_dir():
                raise loaded.error(where, f"{label}: {path} is not a directory; give a directory "
                                   "(teiten makes a subdirectory of its own there)")
            try:
                paths.refuse_replaceable(path, label)
            except UserError as exc:
                raise loaded.error(where, str(exc)) from None
            try:
                Path(tempfile.mkdtemp(prefix=".teiten-check-", dir=path)).rmdir()
            except OSError as exc:
                raise loaded.error(where, f"{label}: teiten cannot make a directory in {path} "
                                   f"({exc.strerror}); give a directory it can write") from None


def _check_hooks(loaded: LoadedStudy) -> None:
    """A snapshot hook must be a file teiten can execute, and that no other account can
    change: teiten runs it as itself (root, which a file-system snapshot may need)."""
    for i, server in loaded.study.server_matrix():
        if not server.snapshot_hook:
            continue
        path = Path(server.snapshot_hook).expanduser().absolute()
        where = ("servers", i, "snapshot_hook")
        if not path.is_file() or not os.access(path, os.X_OK):
            why = "is not executable (chmod +x it)" if path.is_file() else "is not a file"
            raise loaded.error(where, f"servers[{i}].snapshot_hook: {path} {why}; give the "
                               "program that saves and restores the data directory")
        try:
            paths.refuse_replaceable(path, f"servers[{i}].snapshot_hook {path}")
        except UserError as exc:
            raise loaded.error(where, str(exc)) from None


def _check_trusted_files(loaded: LoadedStudy, workloads: list[Workload]) -> None:
    """The scripts and corpus files of the study's workloads: files that no other account can
    change (teiten reads them, and copies the scripts for its clients, as root)."""
    for index, w in enumerate(workloads):
        given = [selector for selector, _ in w.scripts if not selector.startswith("builtin:")]
        corpus = dict(w.options).get("corpus")
        if corpus:
            given.append(str(corpus))
        for name in given:
            try:
                paths.refuse_replaceable(Path(name), f"workloads[{index}] ({w.key}): {name}")
            except UserError as exc:
                raise loaded.error(("workloads", index), str(exc)) from None


def _check_cpus(loaded: LoadedStudy) -> None:
    """Core counts and CPU lists must fit the CPUs teiten may use here."""
    study = loaded.study
    confined: list[list[int]] = []
    for i, server in study.server_matrix():
        if server.cores is None and server.cpus is None:
            continue
        key = "cpus" if server.cpus is not None else "cores"
        where = ("cores",) if study.cores is not None else ("servers", i, key)
        try:
            if server.cpus is not None:
                wanted = cpus.parse_list(server.cpus)
                outside = [c for c in wanted if c not in cpus.available()]
                if outside:
                    raise UserError(f"CPU {cpus.format_list(outside)} is not one teiten may use "
                                    f"here ({cpus.format_list(cpus.available())})")
                confined.append(wanted)
            else:
                assert server.cores is not None
                confined.append(cpus.choose(server.cores))
        except UserError as exc:
            label = "cores" if study.cores is not None else f"servers[{i}]"
            raise loaded.error(where, f"{label}: {exc}") from None
    if study.client_cpus in ("same", "others") and not confined:
        raise loaded.error(("client_cpus",), f"client_cpus: {study.client_cpus} needs servers "
                           "confined with 'cores' or 'cpus'; without them write any or a CPU list")
    try:
        for server_cpus in confined or [[]]:
            cpus.client_cpus(study.client_cpus, server_cpus)
    except UserError as exc:
        raise loaded.error(("client_cpus",), str(exc)) from None


def _check_settings(loaded: LoadedStudy, index: int, install: Install,
                    settings: Mapping[str, object]) -> None:
    """Every setting's name is one this postgres has and a configuration file can carry (its
    pg_settings, read once per install: teiten.servers.pg_settings), and its value one it
    accepts."""
    known = pg_settings.catalogue(install)
    if known is None:
        return
    for name in settings:
        # Extension settings (prefix.name) are only known once the library is loaded.
        if "." not in name and (why := known.refusal(name)) is not None:
            raise loaded.error(("servers", index, "settings", name), why)
    if (refused := refused_setting(install, settings)) is not None:
        name, why = refused
        raise loaded.error(("servers", index, "settings", name),
                           f"PostgreSQL {install.version} refuses settings.{name}: {why}")


# What postgres says of a value it refuses, from its command line, before it looks for a data
# directory: 'invalid value for parameter "x": "banana"', 'parameter "x" requires a Boolean
# value', '-1 is outside the valid range for parameter "x" (0 .. 100)'.
_REFUSED = re.compile(r'(?:FATAL|ERROR):\s+(.*parameter "([^"]+)".*)')


def refused_setting(install: Install, settings: Mapping[str, object]) -> tuple[str, str] | None:
    """(name, postgres's own words) of the first value ``install``'s postgres refuses, or None.

    Method: ``postgres -C`` with every setting on its command line and a data directory that
    does not exist. postgres parses and checks command-line values before it looks for the data
    directory, so a refused value fails there with its reason, and an accepted set fails only
    for the directory. Run as the servers' account (postgres refuses root)."""
    argv = [str(install.binary("postgres")), "-D", "/nonexistent/teiten-settings-check",
            "-C", next(iter(settings))]
    for name, value in settings.items():
        argv += ["-c", f"{name}={profiles.conf_value(value)}"]
    try:
        done = procs.run(argv, timeout=30, check=False, run_as=privileges.server_account(),
                         what="postgres -C (the settings' values)")
    except ProcessError:
        return None  # no verdict (it hung): the trial's start will say
    found = _REFUSED.search(done.stderr)
    if done.returncode == 0 or found is None:
        return None
    hint = re.search(r"HINT:\s+(.*)", done.stderr)
    return found.group(2), found.group(1) + (f" ({hint.group(1).rstrip('.')})" if hint else "")
