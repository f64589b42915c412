"""teiten: PostgreSQL performance evaluation after the PGECons WG1 method."""

__version__ = "0.1.0"
