"""What a kind of server is, as the rest of teiten sees it: where PostgreSQL runs (this
machine, an ssh host, a container engine, a server teiten does not control), what it needs
here, how a study's server of that kind is built, and what a killed run leaves of it.

Each kind is one :class:`Kind` in a module of ``teiten.servers.kinds``, registered in that
package's ``KINDS``; what runs there (one server, a replicated topology, a Pgpool-II in front)
is the kind's own choice when it builds. The runner, the checks, the plan and the report ask
a kind what it can do (its attributes and methods here, whose defaults say "not this kind"),
never which kind it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from teiten.installs import Install
from teiten.servers import profiles
from teiten.servers.base import Server
from teiten.spec import ServerSpec
from teiten.spec.secrets import Secrets
from teiten.spec.servers import PLACE_KEYS


@dataclass(frozen=True)
class Request:
    """What the runner knows when it builds a server of the study."""

    spec: ServerSpec
    install: Install  # its own binaries when its 'install' names them here, else the client's
    run_dir: Path
    sizing: profiles.Sizing
    connect: str = "socket"
    cpus: list[int] | None = None  # the CPUs a server here is confined to
    max_clients: int = 1  # the most clients one Pgpool-II serves at once
    secrets: Secrets | None = None  # the study file's passwords (in memory only)
    client: Install | None = None  # whose pgbench loads a server here (default: its own)


@dataclass(frozen=True)
class Problem:
    """Why a server of the study cannot run here: the study file's key to point at, the line."""

    key: str
    message: str


class Kind:
    """A place where a study's server runs. The defaults are those of a server that teiten
    makes and controls somewhere else than this machine, with PostgreSQL found there."""

    name: str = ""  # as the store keeps it and the Servers table shows it
    field: str | None = None  # the study file's key that puts a server there (None: the default)
    runs_here: bool = False  # the server's own binaries run on this machine
    install_here: bool = False  # its 'install' names PostgreSQL on this machine
    waldir_here: bool = False  # its 'initdb.waldir' is a directory on this machine (a VM's WAL disk)
    controlled: bool = True  # teiten makes, restarts and configures it
    loads_by_sql: bool = False  # app and measured-statement workloads can run on it
    origin: str | None = None  # where its PostgreSQL came from, when its description says nothing
    password: bool = False  # its clients may carry a password (run as the client account)

    def selects(self, spec: ServerSpec) -> bool:
        """Whether the study's server ``spec`` is of this kind."""
        return spec.place() == self.field

    def selects_stored(self, spec: Mapping[str, object]) -> bool:
        """The same, of a server as the store keeps its spec."""
        return next((k for k in PLACE_KEYS if spec.get(k) is not None), None) == self.field

    def build(self, request: Request) -> Server:
        raise NotImplementedError

    def problem(self, spec: ServerSpec) -> Problem | None:
        """What this machine lacks for the server, or a value of it that cannot be used."""
        return None

    def unavailable(self, spec: ServerSpec) -> str | None:
        """Why the server cannot run at all now (an optional one is then left out), or None."""
        return None

    def unanswered(self, spec: ServerSpec, secrets: Secrets | None) -> str | None:
        """Why a server teiten does not start does not answer it now, in one line (asked
        before anything is stored), or None; ``secrets`` are the study file's, from memory."""
        return None

    def may_create(self, spec: ServerSpec) -> bool:
        """Whether teiten may create its own tables and indexes on the server (a workload
        that loads its data by SQL needs it)."""
        return True

    def image_to_build(self, spec: ServerSpec, install: Install | None) -> tuple[str, float] | None:
        """What a run must build before the server's first trial, when this machine has not
        built it yet (a Docker image, a VM guest of its install), and about how many seconds
        that takes; None when there is nothing to build."""
        return None

    def check_install(self, install: Install, *, pgbench: bool) -> None:
        """Fail early when the install lacks what the kind runs here."""

    def notices(self, server: str, description: Mapping[str, object]) -> list[tuple[str, dict[str, str]]]:
        """What the report must say of the stored server ``server`` with ``description``:
        notices (key, fields) of the kind's own ``notices.yaml`` (in its folder)."""
        return []

    def emulated(self, description: Mapping[str, object]) -> bool:
        """Whether the figures of a stored server of this kind are an emulation's (a VM guest
        under qemu's tcg): a functional stand-in, which the report marks wherever they are
        printed or exported (issue 54, item 7)."""
        return False

    def facts(self, description: Mapping[str, object]) -> list[tuple[str, str, dict[str, str]]]:
        """Rows the Servers table gives a stored server of this kind, from its description:
        (label key, value key, fields) of the kind's own ``texts.yaml`` (in its folder); the
        fields fill both texts."""
        return []

    def cpus(self, spec: Mapping[str, object],
             description: Mapping[str, object]) -> tuple[str, dict[str, str]] | None:
        """The Servers table's CPUs of a stored server of this kind, where they are not this
        machine's (a guest's vCPUs): (value key of the kind's own ``texts.yaml`` (in its folder), its
        fields); None: the CPUs of this machine it was confined to, or all of them."""
        return None

    def remove_leftovers(self, specs: Sequence[Mapping[str, object]], run: str) -> list[str]:
        """Stop and remove what the killed run ``run`` left of this kind's servers ``specs``
        outside the run's directory (that directory is cleaned for every kind)."""
        return []
