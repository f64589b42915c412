"""The en/ja message catalogue (teiten.messages): complete, consistent, and checked on load."""

from __future__ import annotations

import ast
import string
from pathlib import Path

import pytest
import yaml

from teiten import messages
from teiten.analysis.model import Notice
from teiten.messages import CatalogueError
from teiten.words import i18n


def _fields(template: str) -> set[str]:
    return {field for _, field, _, _ in string.Formatter().parse(template) if field is not None}


def test_every_text_has_english_and_japanese_with_the_same_fields() -> None:
    texts = messages.texts()
    assert len(texts) > 250
    for key, entry in texts.items():
        assert set(entry) == {"en", "ja"}, key
        assert entry["en"] and entry["ja"], key
        assert _fields(entry["en"]) == _fields(entry["ja"]), key


def test_every_notice_has_english_and_japanese_with_the_same_fields() -> None:
    def fields(template: str) -> set[str]:  # {clients_words} is worded from {clients}
        return {"clients" if f == "clients_words" else f for f in _fields(template)}

    for key, entry in messages.notices().items():
        assert set(entry) == {"en", "ja"}, key
        assert fields(entry["en"]) == fields(entry["ja"]), key


def test_tr_renders_both_languages() -> None:
    assert messages.tr("warnings.more", "en", n=3) == "3 more warnings"
    assert messages.tr("warnings.more", "ja", n=3) == "ほか 3 件の注意事項"
    assert messages.tr("degradation", "ja", a="16", b="17") == "性能低下率: 16 に対する 17"
    assert messages.tr("on", "ja") == "有効"  # a YAML boolean word, kept as text
    assert messages.tr("study") == "Study"
    assert messages.tr("study", "fr") == "Study"  # an unknown language is English
    with pytest.raises(KeyError):
        messages.tr("no.such.key", "en")


def test_the_language_helpers() -> None:
    assert messages.lang_of("ja") == "ja" and messages.lang_of("de") == "en"
    assert messages.clients_phrase([1], "en") == "1 client"
    assert messages.clients_phrase([1, 2, 4], "en") == "1, 2, 4 clients"
    assert messages.clients_phrase([1, 2], "ja") == "クライアント数 1、2"
    assert messages.status_name("ok", "ja") == "成功"
    assert messages.status_name("odd", "ja") == "odd"
    assert messages.workload_heading("select-update", "ja") == "更新系: select-update"
    assert messages.workload_heading("pgbench-read", "ja") == "参照系: pgbench-read"
    assert messages.workload_heading("tpcb", "en") == "Workload: tpcb"


def test_the_report_module_re_exports_the_helpers_and_words_notices() -> None:
    for name in ("LANGS", "tr", "lang_of", "join", "clients_phrase", "status_name", "word", "workload_heading"):
        assert getattr(i18n, name) is getattr(messages, name)
    notice = Notice("high-noise", {"server": "pg17", "workload": "tpcb", "clients": 4, "cv_pct": 7})
    assert i18n.notice_text(notice, "en") == "pg17, tpcb, 4 clients: the repetitions vary by 7% " \
                                             "(coefficient of variation)."
    assert i18n.notice_text(notice, "ja") == "pg17, tpcb, クライアント数 4: 繰り返し間の変動係数が 7% です。"
    assert i18n.notice_text(Notice("high-noise", {"server": "pg17"}), "ja").startswith("pg17, ?, ?")
    assert i18n.notice_text(Notice("new-kind", {"x": 1})) == "new-kind: {'x': 1}"


def test_the_catalogue_is_read_only() -> None:
    with pytest.raises(TypeError):
        messages.texts()["study"] = {"en": "x", "ja": "x"}  # type: ignore[index]


@pytest.mark.parametrize(("data", "complaint"), [
    ({"a": {"en": "A"}}, "needs exactly the languages en, ja, found ['en']"),
    ({"a": {"en": "A", "ja": "あ", "jp": "あ"}}, "found ['en', 'ja', 'jp']"),
    ({"a": "A"}, "found str"),
    ({True: {"en": "on", "ja": "有効"}}, "key True is a bool, not text; quote it"),
    ({"a": {"en": "{n} items", "ja": "{count} 件"}}, "{n} only in en, {count} only in ja"),
    ({"a": {"en": "{n} items", "ja": "件"}}, "{n} only in en, nothing only in ja"),
    ({"a": {"en": "{n items", "ja": "{n} 件"}}, "not a valid str.format template"),
    ({"a": {"en": "A", "ja": 1}}, "the ja text is a int, not text"),
    (None, "expected a mapping"),
])
def test_a_malformed_catalogue_is_refused_with_the_key_named(data: object, complaint: str) -> None:
    with pytest.raises(CatalogueError, match="texts.yaml") as raised:
        messages._check(data, "texts.yaml", {})
    assert complaint in str(raised.value)


def test_a_key_written_twice_is_refused() -> None:
    text = "a:\n  en: \"A\"\n  ja: \"あ\"\nb:\n  en: \"B\"\n  ja: \"い\"\na:\n  en: \"C\"\n  ja: \"う\"\n"
    with pytest.raises(CatalogueError, match="line 7: key 'a' is written twice"):
        yaml.load(text, Loader=messages._UniqueKeyLoader)
    assert yaml.load("a: 1\nb: 2\n", Loader=messages._UniqueKeyLoader) == {"a": 1, "b": 2}


def test_the_package_imports_nothing_of_teiten() -> None:
    source = Path(messages.__file__).read_text(encoding="utf-8")
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
    assert not {name for name in imported if name == "teiten" or name.startswith("teiten.")}


def test_a_stored_reason_is_worded_again_in_the_reports_language() -> None:
    """teiten stores a disturbed trial's reason in English (as the CLI says it); a report
    reads it back through the English text and words it in Japanese. PostgreSQL's and
    pgbench's own messages stay as they are."""
    from teiten.host.guard import Consumer, ForeignLoad, Rule, disturbance
    from teiten.words.i18n import notice_text

    found = ForeignLoad(3.0, 1.02, (Consumer(25949, "pytest", 0.9), Consumer(19690, "bash", 0.1)))
    stored = disturbance(found, Rule())
    assert stored == ("processes outside the trial used 0.34 CPUs over its 3 s window (the noise "
                      "guard's limit is 0.25): pytest (pid 25949) 0.3 CPUs")  # an idle bash is not named
    assert messages.reason(stored, "ja") == ("試行外のプロセスが 3 秒の測定区間に平均 0.34 CPU を使いました"
                                             "（ノイズガードの上限は 0.25）: pytest (pid 25949) 0.3 CPUs")
    assert messages.reason(stored, "en") == stored
    # With a spare fraction the reason says what the trial left idle: 2 CPUs less its own 1.1 is
    # 0.9, half of it 0.45, and 0.34 is below: not disturbed. Beside a saturating trial the
    # limit itself rules.
    assert disturbance(ForeignLoad(3.0, 1.02, own_cpu_s=3.3, capacity=2), Rule(0.25, 0.5)) is None
    relative = disturbance(ForeignLoad(3.0, 1.02, (Consumer(7, "stress-ng", 1.0),), own_cpu_s=5.0,
                                       capacity=2), Rule(0.25, 0.5))
    assert relative == ("processes outside the trial used 0.34 CPUs over its 3 s window, more than "
                        "the 0.25 the noise guard allows beside it (0.5 of the CPUs it left idle: 2 "
                        "less the 1.67 it kept busy, and at least 0.25): stress-ng (pid 7) 0.3 CPUs")
    assert messages.reason(relative, "ja") == (
        "試行外のプロセスが 3 秒の測定区間に平均 0.34 CPU を使い、ノイズガードが許す 0.25 CPU を超えました"
        "（試行が使わなかった CPU、すなわち 2 から試行自身の 1.67 を引いた分の 0.5 倍、ただし最低 0.25）: "
        "stress-ng (pid 7) 0.3 CPUs")
    assert messages.reason("FATAL:  the database system is shutting down", "ja") == \
        "FATAL:  the database system is shutting down"
    notice = Notice("trial-disturbed", {"trial": "t1", "server": "pg18", "workload": "w", "clients": 2,
                                        "repetition": 5, "repeat": "t1.2", "error": stored})
    assert "試行外のプロセスが 3 秒" in notice_text(notice, "ja") and "outside" not in notice_text(notice, "ja")
