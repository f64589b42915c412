"""Where a study's server runs when it is not a cluster on this machine. Each place is a model of
its own, holding the study file's key that puts a server there (``ssh``, ``docker``, ``vm``,
``external``) and the rule of what cannot go with it; :class:`~teiten.spec.servers.ServerSpec`
is made of them, one base class each (a new place is a module with its model, and that base).
The server kinds of ``teiten.servers.kinds`` are the other half: what teiten does there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from teiten.spec.base import Model

LOCAL_ONLY = ("'{key}' cannot be combined with '{place}' in this version of teiten: use a cluster on "
              "this machine for it")


@dataclass(frozen=True)
class Place:
    """A place a server can run: its key, and what only a cluster on this machine can have."""

    key: str  # the study file's key that puts a server there
    local_only: tuple[str, ...]  # keys refused with it; "initdb.waldir" names a key inside one
    needs_install: bool = True  # its server names an install ('external' servers do not)
    refusal: str = LOCAL_ONLY  # the line for a refused key ({key}, {place})


class PlaceModel(Model):
    """The study file's key of one place (a base class of ServerSpec), with its rule."""

    PLACE: ClassVar[Place]


def places_of(model: type) -> tuple[Place, ...]:
    """The places whose models ``model`` is made of, in the order of its keys (its base classes
    from the last to the first)."""
    return tuple(vars(cls)["PLACE"] for cls in reversed(model.__mro__) if "PLACE" in vars(cls))
