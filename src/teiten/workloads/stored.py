"""A workload as the store keeps it (:meth:`teiten.workloads.base.Workload.to_json`), read back
typed (:mod:`teiten.drivers.records`): by :func:`teiten.workloads.about` for its words and by
:func:`teiten.workloads.from_json` to make the workload again.

A key the record does not name is left out; one it names and the store lacks (or holds as null)
takes its default, so an older store, or a workload teiten does not know, reads as what it
recorded. A body of another shape raises ValueError, in one line naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from teiten.drivers import records


@dataclass(frozen=True)
class StoredWorkload:
    """The fields of a stored workload: ``scripts`` as (pgbench selector, weight) pairs, where a
    selector is ``builtin:NAME`` or the path a script had when the study ran; ``app`` and
    ``suite`` name an application's or a suite's, ``kind`` any other kind (None: known by the
    fields before it); ``options`` as stored (an axis as a list)."""

    key: str | None = None
    scripts: tuple[tuple[str, int], ...] = ()
    scale: int | None = None
    fillfactor: int | None = None
    modifies_data: bool | None = None
    description: str = ""
    app: str | None = None
    options: dict[str, object] = field(default_factory=dict)
    suite: str | None = None
    digest: str | None = None
    kind: str | None = None

    @classmethod
    def of(cls, body: Mapping[str, object]) -> StoredWorkload:
        return records.read(cls, {k: v for k, v in body.items() if v is not None}, "a stored workload")

    @property
    def named(self) -> str | None:
        """The kind the workload names itself by: its application, suite or kind."""
        return self.app or self.suite or self.kind
