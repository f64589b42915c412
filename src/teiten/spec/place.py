"""Where a study's server runs when it is not a cluster on this machine. Each place is a model of
its own, holding the study file's key that puts a server there (``ssh``, ``docker``, ``vm``,
``external``) and the rule of what cannot go with it; :class:`~teiten.spec.servers.ServerSpec`
is made of them, one base class each. Each lives in the folder of its kind of server
(``teiten/servers/KEY/spec.py``), beside what teiten does there (its ``kind.py``, registered in
``teiten.servers.kinds``); a new place is that folder and its key in
``teiten.spec.servers.PLACE_KINDS``."""

from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Self

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

    @classmethod
    def on(cls, spec: object) -> Self:
        """``spec`` (a ServerSpec, which every place's model is a base of) read as this place's
        model: what the place's own code reads its key through."""
        assert isinstance(spec, cls), f"{type(spec).__name__} is not made of {cls.__name__}"
        return spec


def place_models(keys: Iterable[str]) -> tuple[type[PlaceModel], ...]:
    """The model of each place ``keys`` names: the PlaceModel of ``teiten/servers/KEY/spec.py``
    whose place has that key. A kind's spec.py stands with the study files (rank 1 of the import
    graph): it imports nothing above them, and its folder's __init__.py imports nothing."""
    found = []
    for key in keys:
        module = importlib.import_module(f"teiten.servers.{key}.spec")
        found.append(next(cls for cls in vars(module).values()
                          if isinstance(cls, type) and issubclass(cls, PlaceModel)
                          and "PLACE" in vars(cls) and cls.PLACE.key == key))
    return tuple(found)


def places_of(model: type) -> tuple[Place, ...]:
    """The places whose models ``model`` is made of, in the order of its keys (its base classes
    from the last to the first)."""
    return tuple(cls.PLACE for cls in reversed(model.__mro__)
                 if issubclass(cls, PlaceModel) and "PLACE" in vars(cls))
