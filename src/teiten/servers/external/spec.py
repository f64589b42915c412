"""The study file's ``external`` key of a server: a server teiten does not control, reached by
its connection string (teiten.servers.external.server)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from teiten.spec.place import Place, PlaceModel


class ExternalPlace(PlaceModel):
    """A server that teiten neither makes nor configures."""

    PLACE: ClassVar[Place] = Place(
        "external", ("settings", "initdb", "profile", "cores", "cpus", "tablespace", "directory",
                     "replicas", "pgpool", "snapshot_hook", "limits", "delay"),
        needs_install=False,
        refusal="'{key}' needs a local cluster: teiten does not change the settings of an "
        "external server")

    external: str | None = Field(
        None, description="connection string of a server teiten does not control")
    allow_init: bool = Field(
        False, description="external only: let teiten create a database there and load data")

    @model_validator(mode="after")
    def _init_of_external(self) -> ExternalPlace:
        if self.allow_init and self.external is None:
            raise ValueError("'allow_init' applies to external servers only")
        return self
