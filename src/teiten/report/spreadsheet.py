"""CSV cells that a spreadsheet shows as they are, for every CSV teiten writes (the report's
tables and ``teiten results --format csv``).

A spreadsheet evaluates a cell that begins with ``=``, ``+``, ``-`` or ``@`` (and, in some,
with a tab or a carriage return) as a formula: ``=HYPERLINK(...)`` in a setting value or a
file name would become a live link or command. Following OWASP's guidance on CSV injection,
such a text cell gets a leading ``'``, which the spreadsheet shows as text. Numbers stay
numbers (a negative rate is ``-3.2``, not text), and JSON exports keep the raw values.
"""

from __future__ import annotations

from numbers import Number

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: object) -> Number | str:
    """A value as a CSV cell: None is empty, a number is left as it is, and text that a
    spreadsheet would evaluate is prefixed with ``'``."""
    if value is None:
        return ""
    if isinstance(value, Number):  # int, float, Decimal (a PostgreSQL store's numeric)
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
