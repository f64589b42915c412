"""A study as the store's ``studies`` table lists it: its columns, typed, its JSON ones as the
text the store keeps (``spec`` and ``machine`` parse them). What lists, picks, gates or copies
studies reads these; what analyses one reads :class:`teiten.model.results.StudyResults`."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from teiten.model.studyrecord import StudyRecord


@dataclass(frozen=True)
class StudyRow:
    id: int
    name: str
    source: str           # the study file's path, or builtin:NAME
    spec_yaml: str
    spec_json: str
    seed: int
    state: str            # running | finished | interrupted
    created_at: str
    finished_at: str | None
    fingerprint: str      # JSON: the machine and its software
    teiten_version: str
    run_dir: str | None   # where its clusters live while it runs

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> StudyRow:
        """The row as either store's driver gives it (a mapping of its columns)."""
        return cls(**{f.name: row[f.name] for f in fields(cls)})

    @property
    def finished(self) -> bool:
        return self.state == "finished"

    @property
    def spec(self) -> dict[str, object]:
        found: dict[str, object] = json.loads(self.spec_json)
        return found

    @property
    def record(self) -> StudyRecord:
        """The stored spec as a typed record."""
        return StudyRecord.from_json(self.spec)

    @property
    def machine(self) -> dict[str, object]:
        """The fingerprint of the machine it ran on."""
        found: dict[str, object] = json.loads(self.fingerprint)
        return found

    def columns(self) -> dict[str, object]:
        """Its columns by name, as they are stored."""
        return asdict(self)
