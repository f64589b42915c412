"""The kinds of server (:data:`KINDS`), and the questions the rest of teiten asks of them.

A kind of server is one folder, ``teiten/servers/KEY/``: its study-file key (``spec.py``), what
teiten does there (``kind.py``, which exports its ``KIND``), its servers, images and words
(``texts.yaml``). It is registered once, by its key in ``teiten.spec.servers.PLACE_KINDS``, as
the workloads' kinds are found (teiten.workloads). A cluster on this machine is
``teiten/servers/local/``, the default."""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence

from teiten.servers.base import Server
from teiten.servers.kind import Kind, Problem, Request
from teiten.servers.local import kind as local
from teiten.servers.tenants import TenantsServer
from teiten.spec import ServerSpec
from teiten.spec.servers import PLACE_KEYS


def _kind(key: str) -> Kind:
    found = importlib.import_module(f"teiten.servers.{key}.kind").KIND
    assert isinstance(found, Kind) and found.field == key, f"teiten.servers.{key}.kind.KIND"
    return found


# One kind per place a study's server can run, in the order the study files ask them, and the
# default (a cluster on this machine).
KINDS: tuple[Kind, ...] = (*(_kind(key) for key in PLACE_KEYS), local.KIND)


def of(spec: ServerSpec) -> Kind:
    """The kind of the study's server ``spec``."""
    return next(k for k in KINDS if k.selects(spec))


def stored(name: str, spec: Mapping[str, object]) -> Kind:
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


def leftovers(specs: Sequence[Mapping[str, object]], run: str) -> list[str]:
    """What the killed run ``run`` left of the study's servers outside its directory, removed."""
    notes: list[str] = []
    for kind in KINDS:
        mine = [s for s in specs if next(k for k in KINDS if k.selects_stored(s)) is kind]
        if mine:
            notes += kind.remove_leftovers(mine, run)
    return notes


__all__ = ["KINDS", "Kind", "Problem", "Request", "build", "group", "leftovers", "of", "stored"]
