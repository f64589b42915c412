"""The report's words, in English and Japanese, from the message catalogue.

The catalogue itself is data, in :mod:`teiten.messages` (``texts.yaml``, ``notices.yaml``),
where the CLI can use it too; this module re-exports its language helpers for the renderers,
and words a study's :class:`Notice`, a type the catalogue package does not import.
"""

from __future__ import annotations

from collections.abc import Sequence

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
from teiten.workloads.statements import reworded

__all__ = ["LANGS", "clients_phrase", "join", "lang_of", "notice_text", "status_name", "tr",
           "word", "workload_heading"]


def notice_text(notice: Notice, lang: str = "en") -> str:
    """A notice worded in ``lang`` (English when the key or language is unknown)."""
    texts = notices().get(notice.key)
    if texts is None:
        return f"{notice.key}: {notice.params}"
    english = texts["en"]  # every notice has each language (teiten.messages checks)
    template = texts.get(lang) or english
    params = dict(notice.params)
    # A parameter worded in each language (teiten.analysis.noise.busy_notice: who_ja).
    params.update({k[:-len(lang) - 1]: v for k, v in notice.params.items() if k.endswith(f"_{lang}")})
    error = params.get("error")
    if isinstance(error, str):  # a reason teiten stored in English
        params["error"] = reason(reworded(error, lang), lang)
    clients = params.get("clients")
    if isinstance(clients, int):  # "1 client", "4 clients"
        params["clients_words"] = clients_phrase([clients], "en")
    try:
        return template.format(**params)
    except (KeyError, IndexError):
        return english.format_map(_Missing(params))


class _Missing(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "?"


# A cause is a notice's key (the figures in the text of a disturbed trial's differ from trial
# to trial), and a failed or skipped trial's error too; at most this many trial ids are listed.
_ALIKE_SHOWN = 8


def warning_lines(warnings: Sequence[Notice], lang: str = "en") -> list[str]:
    """The warnings of single trials grouped by cause, in the order each cause first appears:
    the first notice of a cause in full, then how many more of its kind there are and which
    trials (278 disturbed trials are one line, not 278). A point's warnings and the study's
    stay one line each."""
    groups: dict[tuple[object, ...], list[Notice]] = {}
    for i, notice in enumerate(warnings):
        if "trial" not in notice.params:  # a point's or the study's: each says where
            groups[(i,)] = [notice]
            continue
        error = notice.params.get("error") if notice.key in ("trial-failed", "trial-skipped") else None
        groups.setdefault((notice.key, error), []).append(notice)
    lines = []
    for first, *rest in groups.values():
        text = notice_text(first, lang)
        if rest:
            trials = [str(n.params["trial"]) for n in rest]
            which = ", ".join(trials[:_ALIKE_SHOWN]) + (", …" if len(trials) > _ALIKE_SHOWN else "")
            text += " " + tr("warnings.alike", lang, n=len(rest), which=which)
        lines.append(text)
    return lines
