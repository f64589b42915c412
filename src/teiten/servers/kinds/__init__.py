"""The kinds of server, registered in one place (:data:`KINDS`), and the questions the rest of
teiten asks of them. A new kind is a module of this package with its :class:`~teiten.servers.kind.Kind`,
and one line here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.kinds import docker, external, local, ssh, vm
from teiten.servers.tenants import TenantsServer
from teiten.spec import ServerSpec

# One kind per place a study's server can run (teiten.spec.servers.PLACES), and the default
# (a cluster on this machine).
KINDS: tuple[Kind, ...] = (external.KIND, ssh.KIND, docker.KIND, vm.KIND, local.KIND)


def of(spec: ServerSpec) -> Kind:
    """The kind of the study's server ``spec``."""
    return next(k for k in KINDS if k.selects(spec))


def stored(name: str, spec: Mapping[str, Any]) -> Kind:
    """The kind of a server as the store keeps it: the kind it recorded (store step 7 named
    the real kind of every server of an older store, where each was 'local' or 'external');
    a name this teiten does not know, by the key of its spec that put it there."""
    found = next((k for k in KINDS if k.name == name), None)
    return found if found is not None else next(k for k in KINDS if k.selects_stored(spec))


def build(request: Request) -> Server:
    """The server the request's spec describes."""
    return of(request.spec).build(request)


def group(name: str, members: Sequence[Server]) -> Server:
    """The study's servers ``members`` loaded at once, as one server (``tenants``)."""
    return TenantsServer(name, members)


def leftovers(specs: Sequence[Mapping[str, Any]], run: str) -> list[str]:
    """What the killed run ``run`` left of the study's servers outside its directory, removed."""
    notes: list[str] = []
    for kind in KINDS:
        mine = [s for s in specs if next(k for k in KINDS if k.selects_stored(s)) is kind]
        if mine:
            notes += kind.remove_leftovers(mine, run)
    return notes


__all__ = ["KINDS", "Kind", "Problem", "Request", "build", "group", "leftovers", "of", "stored"]
