"""The report's words, in English and Japanese, from the message catalogue.

The catalogue itself is data, in :mod:`teiten.messages` (``texts.yaml``, ``notices.yaml``),
where the CLI can use it too; this module re-exports its language helpers for the renderers,
and words a study's :class:`Notice`, a type the catalogue package does not import.
"""

from __future__ import annotations

from teiten.analysis.model import Notice
from teiten.messages import (
    LANGS,
    clients_phrase,
    join,
    lang_of,
    notices,
    reason,
    status_name,
    tr,
    word,
    workload_heading,
)
from teiten.workloads.fulltext.missing import reworded

__all__ = ["LANGS", "clients_phrase", "join", "lang_of", "notice_text", "status_name", "tr",
           "word", "workload_heading"]


def notice_text(notice: Notice, lang: str = "en") -> str:
    """A notice worded in ``lang`` (English when the key or language is unknown)."""
    texts = notices().get(notice.key)
    if texts is None:
        return f"{notice.key}: {notice.params}"
    template = texts.get(lang) or texts["en"]
    params = dict(notice.params)
    error = params.get("error")
    if isinstance(error, str):  # a reason teiten stored in English
        params["error"] = reason(reworded(error, lang), lang)
    clients = params.get("clients")
    if isinstance(clients, int):  # "1 client", "4 clients"
        params["clients_words"] = clients_phrase([clients], "en")
    try:
        return template.format(**params)
    except (KeyError, IndexError):
        return texts["en"].format_map(_Missing(params))


class _Missing(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "?"
