"""Everything checked before anything is created: the study, its scripts, its installs,
its settings. A failure here is bad input (exit status 2) and leaves nothing behind."""

from __future__ import annotations

import difflib
import re
import shutil
from dataclasses import dataclass, replace

from teiten import cpus, installs, netns, procs
from teiten.errors import ProcessError, UserError
from teiten.installs import Install, Resolution
from teiten.probe import parse_conninfo
from teiten.servers import docker, pgpool
from teiten.spec import LoadedStudy
from teiten.workloads import Workload, statements
from teiten.workloads import resolve as resolve_workloads


@dataclass(frozen=True)
class CheckedStudy:
    loaded: LoadedStudy
    workloads: list[Workload]
    installs: dict[str, Resolution]   # server name -> its install (local servers)
    client: Resolution                # whose pgbench drives external servers
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
    _check_suites(loaded, workloads)
    _check_topologies(loaded, workloads)
    for i, server in study.server_matrix():
        if server.external is not None:
            try:
                parse_conninfo(server.external)
            except UserError as exc:
                raise loaded.error(("servers", i, "external"), str(exc)) from None
            continue
        if server.ssh is not None or server.docker is not None:
            continue  # its PostgreSQL is on that host, or in the image
        assert server.install is not None
        try:
            resolved[server.name] = installs.resolve(server.install, installed=found)
        except UserError as exc:
            raise loaded.error(("servers", i, "install"), str(exc)) from None
        inst = resolved[server.name].install
        if inst is not None and server.settings:
            _check_settings(loaded, i, inst, list(server.settings))
    client = next(iter(resolved.values()), None)
    if client is None:
        with_pgbench = [inst for inst in found if inst.has("pgbench")]
        if with_pgbench:
            client = Resolution(str(with_pgbench[0].major), install=with_pgbench[0])
        else:
            client = installs.resolve("18")
    return CheckedStudy(loaded, workloads, resolved, client, omitted)


def without_missing_optionals(loaded: LoadedStudy, found: list[Install]
                               ) -> tuple[LoadedStudy, tuple[tuple[str, str], ...]]:
    """The study without its optional servers whose install cannot be had here."""
    kept, omitted = [], []
    for i, server in enumerate(loaded.study.servers):
        if server.docker is not None:
            problem = docker.engine_problem(server.name)
            if problem and not server.optional:
                raise loaded.error(("servers", i, "docker"), problem + " (or mark it "
                                   "optional: true to run the study without it)")
            if problem:
                omitted.append((server.name, problem))
                continue
        elif server.optional and server.install is not None and server.ssh is None:
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
    return replace(loaded, study=loaded.study.model_copy(update={"servers": kept})), tuple(omitted)


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
                _check_settings(checked.loaded, index, res.install, list(server.settings))
        done[server.name] = res
    client = checked.client
    if client.install is None and not done:
        client = Resolution(client.ref, install=installs.materialise(client))
    return CheckedStudy(checked.loaded, checked.workloads, done, client, checked.omitted)


def _check_topologies(loaded: LoadedStudy, workloads: list[Workload]) -> None:
    """What replicas, Pgpool-II, network namespaces, ssh and several load clients need: the
    programs here, and pgbench workloads (the other kinds drive one server directly)."""
    study = loaded.study
    many = study.load_clients is not None and (len(study.load_clients) > 1
                                               or study.load_clients[0].ssh is not None)
    for i, server in study.server_matrix():
        kinds = [k for k, on in (("replicas", server.replicas > 0), ("pgpool", server.pgpool),
                                 ("ssh", server.ssh is not None),
                                 ("docker", server.docker is not None)) if on]
        if many:
            kinds.append("load_clients")
        for w in workloads:
            if kinds and (w.app is not None or w.suite is not None):
                where = ("load_clients",) if kinds[0] == "load_clients" else ("servers", i, kinds[0])
                raise loaded.error(where, f"the {w.key} workload drives one server directly; "
                                   f"'{kinds[0]}' (server {server.name}) works with pgbench "
                                   "workloads only in this version of teiten")
        problem = None
        if server.pgpool and server.ssh is None:  # on an ssh host: looked for there
            problem = pgpool.available()
            key = "pgpool"
        if server.network == "netns" and problem is None:
            problem = netns.available()
            key = "network"
        if (server.ssh is not None or many) and problem is None and shutil.which("ssh") is None:
            problem, key = "the ssh client is missing here: apt-get install openssh-client", "ssh"
        if problem:
            raise loaded.error(("servers", i, key), f"server {server.name}: {problem}")


def _check_suites(loaded: LoadedStudy, workloads: list[Workload]) -> None:
    """Measured-statement workloads on servers that cannot give what they need: a cold cache
    needs a server teiten restarts; Japanese text needs a UTF-8 locale."""
    for w_index, w in enumerate(workloads):
        if w.suite is None:
            continue
        found = statements.suite(w.suite)
        for i, server in loaded.study.server_matrix():
            if server.external is not None and not server.allow_init:
                raise loaded.error(("servers", i, "allow_init"),
                                   f"the {w.suite} workload creates its own tables and indexes; "
                                   f"on the external server {server.name} it needs allow_init: "
                                   "true (teiten then works in a database of its own)")
            if server.external is not None and "cold" in w.option("cache"):
                raise loaded.error(("workloads", w_index, "cache"),
                                   f"cache: cold needs a server that teiten restarts, and "
                                   f"{server.name} is external; use cache: [warm] there")
            locale = server.initdb.locale or ""
            utf8 = (re.search(r"utf-?8", locale, re.IGNORECASE)
                    and server.initdb.encoding.upper().replace("-", "") == "UTF8")
            if found.needs_utf8 and server.external is None and not utf8:
                raise loaded.error(("servers", i, "initdb"),
                                   f"the {w.suite} workload needs a UTF-8 locale, and "
                                   f"{server.name} has {locale or 'the C locale (--no-locale)'} "
                                   f"and encoding {server.initdb.encoding}, "
                                   "under which pg_trgm extracts no trigrams from Japanese; "
                                   "give it initdb: {locale: C.UTF-8, encoding: UTF8}")


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


def known_settings(install: Install) -> set[str]:
    """The configuration parameters this postgres binary knows (postgres --describe-config)."""
    try:
        done = procs.run([str(install.binary("postgres")), "--describe-config"], timeout=30)
    except ProcessError:
        return set()
    return {line.split("\t", 1)[0] for line in done.stdout.splitlines() if line}


def _check_settings(loaded: LoadedStudy, index: int, install: Install, names: list[str]) -> None:
    known = known_settings(install)
    if not known:
        return
    for name in names:
        # Extension settings (prefix.name) are only known once the library is loaded.
        if name not in known and "." not in name:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise loaded.error(("servers", index, "settings", name),
                               f"PostgreSQL {install.version} has no setting '{name}'{hint}")
