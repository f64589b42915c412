"""The results store (SQLite by default)."""

from teiten.store.db import Evidence, PlannedTrial, Store, result_rows

__all__ = ["Evidence", "PlannedTrial", "Store", "result_rows"]
