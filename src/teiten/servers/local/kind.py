"""The default kind: clusters teiten makes on this machine, alone or as a primary with
standbys and Pgpool-II (servers/local/server.py, servers/local/topology.py)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import replace

from teiten.host import cgroups, netns
from teiten.installs import Install
from teiten.model.errors import ServerError
from teiten.servers import pgpool
from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.local.server import LocalServer
from teiten.servers.local.topology import TopologyServer
from teiten.spec import ServerSpec


class Local(Kind):
    name = "local"
    runs_here = True
    install_here = True
    loads_by_sql = True

    def build(self, request: Request) -> Server:
        spec = request.spec
        sizing = request.sizing
        if spec.limits is not None and spec.limits.memory:  # sized for the memory it may use
            sizing = replace(sizing, ram_bytes=min(sizing.ram_bytes, spec.limits.memory[0]))
        if spec.replicas or spec.pgpool:
            return TopologyServer(spec, request.install, request.run_dir, sizing,
                                  connect=request.connect, cpus=request.cpus,
                                  max_clients=request.max_clients, client=request.client)
        return LocalServer(spec, request.install, request.run_dir, sizing,
                           connect=request.connect, cpus=request.cpus, client=request.client)

    def problem(self, spec: ServerSpec) -> Problem | None:
        if spec.pgpool and (found := pgpool.available()):
            return Problem("pgpool", f"server {spec.name}: {found}")
        if spec.network == "netns" and (found := netns.available()):
            return Problem("network", f"server {spec.name}: {found}")
        if spec.limits is not None:
            given = spec.limits.given()
            wanted = cgroups.Limits(memory_bytes=1 if "memory" in given else None,
                                    io=[cgroups.IoLimit("0:0")] if set(given) - {"memory"} else [])
            if cgroups.mechanism(wanted) is None:
                return Problem("limits", f"server {spec.name}: 'limits' need a cgroup of their "
                               "own, which teiten makes only as root, with the memory and blkio "
                               "(v1) or io (v2) controllers, and TEITEN_CGROUPS not off; run as "
                               "root or remove 'limits'")
        return None

    def check_install(self, install: Install, *, pgbench: bool) -> None:
        """An install lacks what local clusters need (and pgbench, when it is the one that
        drives its server: a study from before one pgbench drove them all)."""
        needed = ("initdb", "pg_ctl", "postgres", *(("pgbench",) if pgbench else ()))
        missing = [p for p in needed if not install.has(p)]
        if missing:
            raise ServerError(f"PostgreSQL {install.version} in {install.bindir} lacks "
                              f"{', '.join(missing)}")
        if shutil.which("cp") is None:
            raise ServerError("the 'cp' program is missing; snapshots need GNU cp")

    def remove_leftovers(self, specs: Sequence[Mapping[str, object]], run: str) -> list[str]:
        return []  # all of it is in the run's directory, or noted there


KIND = Local()
__all__ = ["KIND"]
