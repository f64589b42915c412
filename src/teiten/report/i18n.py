"""The one catalogue of the report's words, in English and Japanese.

Japanese follows the vocabulary of the PGECons WG1 reports: 参照系 (read side),
更新系 (update side), クライアント数 (clients), 前バージョン比 (ratio to the previous
version), 中央値 (median), 性能低下率 (degradation rate).
"""

from __future__ import annotations

from teiten.report.model import Notice

LANGS = ("en", "ja")

NOTICES: dict[str, dict[str, str]] = {
    "unfinished": {
        "en": "The study is not finished: {planned} trials still to run; 'teiten resume' "
              "completes it.",
        "ja": "試験は完了していません: 未実行の試行が {planned} 件あります（'teiten resume' で再開）。"},
    "trial-failed": {
        "en": "Trial {trial} ({server}, {workload}, {clients} clients, repetition "
              "{repetition}) failed: {error}",
        "ja": "試行 {trial}（{server}, {workload}, クライアント数 {clients}, {repetition} 回目）が"
              "失敗しました: {error}"},
    "trial-skipped": {
        "en": "Trial {trial} ({server}, {workload}, {clients} clients, repetition "
              "{repetition}) was skipped: {error}",
        "ja": "試行 {trial}（{server}, {workload}, クライアント数 {clients}, {repetition} 回目）は"
              "実行されませんでした: {error}"},
    "checkpoint-in-window": {
        "en": "Trial {trial} ({server}, {workload}, {clients} clients): {count} checkpoint(s) "
              "inside the measured window; the method requires none.",
        "ja": "試行 {trial}（{server}, {workload}, クライアント数 {clients}）: 測定区間内に"
              "チェックポイントが {count} 回発生しました（手順上は 0 回であるべき）。"},
    "autovacuum-in-window": {
        "en": "Trial {trial} ({server}, {workload}, {clients} clients): autovacuum ran inside "
              "the measured window; the method requires none.",
        "ja": "試行 {trial}（{server}, {workload}, クライアント数 {clients}）: 測定区間内に"
              "自動バキュームが実行されました。"},
    "too-few-repetitions": {
        "en": "{repetitions} repetitions are too few to test differences at the 5% level; "
              "{needed} per server are needed.",
        "ja": "繰り返し {repetitions} 回では 5% 水準の有意差検定ができません（各サーバ {needed} "
              "回以上が必要）。"},
    "high-noise": {
        "en": "{server}, {workload}, {clients} clients: the repetitions vary by {cv_pct}% "
              "(coefficient of variation).",
        "ja": "{server}, {workload}, クライアント数 {clients}: 繰り返し間の変動係数が "
              "{cv_pct}% です。"},
    "unstable-series": {
        "en": "Trial {trial} ({server}, {workload}, {clients} clients): unstable per-second "
              "throughput ({stalls} stalls, drift {drift_pct_per_min}% per minute).",
        "ja": "試行 {trial}（{server}, {workload}, クライアント数 {clients}）: 秒ごとのスループットが"
              "不安定です（停滞 {stalls} 回, 1 分あたり {drift_pct_per_min}% の変化）。"},
    "rampup-excluded": {
        "en": "Ramp-up excluded: TPS is the mean of the per-second series from the steady "
              "state on ({trials} trials had ramp-up seconds).",
        "ja": "立ち上がり区間を除外: TPS は定常状態以降の秒ごとの値の平均です（立ち上がり区間が"
              "あった試行 {trials} 件）。"},
    "mixed-fingerprints": {
        "en": "The results come from machines that differ in {fields}; compare with care.",
        "ja": "結果は {fields} の異なるマシンで測定されています。比較には注意が必要です。"},
}


def notice_text(notice: Notice, lang: str = "en") -> str:
    """A notice worded in ``lang`` (English when the key or language is unknown)."""
    texts = NOTICES.get(notice.key)
    if texts is None:
        return f"{notice.key}: {notice.params}"
    template = texts.get(lang) or texts["en"]
    try:
        return template.format(**notice.params)
    except (KeyError, IndexError):
        return texts["en"].format_map(_Missing(notice.params))


class _Missing(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "?"
