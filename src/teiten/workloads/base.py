"""The workload of a trial as the runner, the servers and the drivers see it.

:class:`Workload` is a pgbench workload (built-in scripts or the user's); the application
workloads (:mod:`teiten.workloads.apps`) and the measured-statement suites
(:mod:`teiten.workloads.statements`) are subclasses that load their data by SQL. This module
imports neither, so both build on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from teiten.servers.profiles import pgbench_data_bytes


@dataclass(frozen=True)
class Workload:
    """A resolved workload of a study. ``scripts`` holds (pgbench selector, weight) pairs,
    where a selector is ``builtin:NAME`` or an absolute script path."""

    key: str
    scripts: tuple[tuple[str, int], ...]
    scale: int
    fillfactor: int | None
    modifies_data: bool
    description: str
    app: str | None = None  # "tpcc" | "bookstore": loaded by SQL, measured by teiten.workloads.apps
    options: tuple[tuple[str, Any], ...] = ()  # the app's options, every default filled in
    suite: str | None = None  # a measured-statement workload (teiten.workloads.statements)

    def option(self, name: str) -> Any:
        return dict(self.options)[name]

    def data_bytes(self) -> int:
        """The size of the loaded data, roughly: sizes shared_buffers."""
        return pgbench_data_bytes(self.scale, self.fillfactor)

    # -- what a server needs of the workload (teiten.servers.base.DataSet) --------------------

    @property
    def sql_loaded(self) -> bool:
        """Whether the data is loaded by the workload's own SQL (load_sql), not pgbench -i."""
        return self.app is not None or self.suite is not None

    def load_sql(self, conninfo: str, *, jobs: int) -> dict[str, float]:
        """Fill the empty database by SQL over ``jobs`` connections; seconds per step."""
        raise NotImplementedError(f"the {self.key} workload is loaded with pgbench -i")

    def server_settings(self) -> dict[str, str]:
        """Settings the workload needs of the server (the study's own settings win)."""
        return {}

    def present_table(self) -> tuple[str, str]:
        """A table that exists once the data is loaded, and how the data is loaded."""
        return "pgbench_accounts", "pgbench -i"

    def digest(self) -> str | None:
        """What the workload's SQL and scripts are, for those teiten ships: a study is
        resumed only with the same ones."""
        return None

    @property
    def database(self) -> str:
        return "teiten_" + re.sub(r"[^a-z0-9_]", "_", self.key.lower())

    def init_args(self) -> list[str]:
        """pgbench arguments that initialise the data (server-side generation is faster)."""
        args = ["-i", "-s", str(self.scale), "-I", "dtGvp"]
        if self.fillfactor is not None:
            args += ["-F", str(self.fillfactor)]
        return args

    def script_args(self) -> list[str]:
        args: list[str] = []
        for selector, weight in self.scripts:
            if selector.startswith("builtin:"):
                args += ["-b", f"{selector.removeprefix('builtin:')}@{weight}"]
            else:
                args += ["-f", f"{selector}@{weight}"]
        return args

    def to_json(self) -> dict[str, object]:
        digest = self.digest()
        return {"key": self.key, "scripts": [list(s) for s in self.scripts], "scale": self.scale,
                "fillfactor": self.fillfactor, "modifies_data": self.modifies_data,
                "description": self.description, "app": self.app, "options": dict(self.options),
                **({"suite": self.suite} if self.suite else {}),
                **({"digest": digest} if digest is not None else {})}
