"""The kinds of server (:data:`KINDS`), and the questions the rest of teiten asks of them.

A place a server can run is registered once, where the study files learn its key (a base class
of :class:`~teiten.spec.servers.ServerSpec`, whose keys are ``teiten.spec.servers.PLACE_KEYS``);
its kind is the module of this package of that name, which exports its ``KIND``, as the
workloads' kinds are found (teiten.workloads). A cluster on this machine is :mod:`.local`."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any

from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.kinds import local
from teiten.servers.tenants import TenantsServer
from teiten.spec import ServerSpec
from teiten.spec.servers import PLACE_KEYS


def _kind(key: str) -> Kind:
    found = importlib.import_module(f"{__name__}.{key}").KIND
    assert isinstance(found, Kind) and found.field == key, f"{__name__}.{key}.KIND"
    return found


# One kind per place a study's server can run, in the order the study files ask them, and the
# default (a cluster on this machine).
KINDS: tuple[Kind, ...] = (*(_kind(key) for key in PLACE_KEYS), local.KIND)


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
