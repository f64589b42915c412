"""Why a full-text method cannot run on a server: its extension is missing, and how to get
it. The store keeps the reason in English, as the CLI says it; a report words it again in
its own language from the extension and major it names."""

from __future__ import annotations

import re

from teiten.messages import texts, tr

_MISSING = re.compile(r"^(?:not installed: )?(\w+) is not installed on this server \(PostgreSQL (\d+)\): ")


def missing_text(extension: str, major: int, lang: str = "en") -> str:
    """Why a method cannot run here, and how to get its extension (fulltext.how.*)."""
    return tr("fulltext.missing", lang, extension=extension, major=major,
              how=tr(f"fulltext.how.{extension}", lang, major=major))


def reworded(reason: str, lang: str) -> str:
    """A stored reason in ``lang`` when it is a missing extension's; others as they are."""
    found = _MISSING.match(reason)
    if found is None or f"fulltext.how.{found[1]}" not in texts():
        return reason
    return missing_text(found[1], int(found[2]), lang)
