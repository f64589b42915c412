"""The results store (SQLite by default): it writes and reads the model of teiten.model.results."""

from teiten.store.db import Store
from teiten.store.rows import result_rows

__all__ = ["Store", "result_rows"]
