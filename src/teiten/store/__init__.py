"""The results store (SQLite by default)."""

from teiten.store.db import PlannedTrial, Store, result_rows

__all__ = ["PlannedTrial", "Store", "result_rows"]
