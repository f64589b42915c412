"""``teiten timeline``: one study's history on one testbed across builds (teiten.analysis.timeline),
as text for a terminal or CI log, and as ``timeline.md`` and ``timeline.html`` (the report's
style sheet, one chart per workload), in English or Japanese."""

from __future__ import annotations

import html
from pathlib import Path

from teiten import __version__
from teiten.analysis.timeline import FIRST_PARENT, Build, Change, Timeline
from teiten.report import outdir
from teiten.report.html import stylesheet
from teiten.report.svg import Line, line_chart
from teiten.words import formats as f
from teiten.words.i18n import clients_phrase, lang_of, tr


def _build(b: Build) -> str:
    return f"{b.label} ({b.subject})" if b.subject else b.label


def heading(t: Timeline, lang: str) -> str:
    return tr("timeline.title", lang, study=t.study, testbed=t.testbed)


def level(t: Timeline, lang: str) -> str:
    """The level of each series' test ("at or below 0.00833"), and where there are several
    series, that it is the timeline's alpha divided over them."""
    p = f"{t.series_alpha:.3g}"
    if t.tested <= 1:
        return tr("timeline.level.one", lang, p=p)
    return tr("timeline.level", lang, p=p, alpha=f"{t.alpha * 100:g}", tested=t.tested)


def lead(t: Timeline, lang: str) -> str:
    order = tr("timeline.order.first-parent" if t.order == FIRST_PARENT else "timeline.order.version", lang)
    return tr("timeline.lead", lang, builds=len(t.builds), studies=t.studies, order=order,
              level=level(t, lang), alpha=f"{t.alpha * 100:g}")


def change_line(workload: str, c: Change, lang: str) -> str:
    return tr("timeline.change", lang, workload=workload, clients=clients_phrase([c.clients], lang),
              before=_build(c.before), after=_build(c.after), ratio=f.format_ratio(c.ratio),
              ci=f.bracketed(None if c.ci is None else (c.ci[0] * 100, c.ci[1] * 100), c.level),
              p=f"{c.p:.3f}")


def changes(t: Timeline, lang: str) -> list[str]:
    """One sentence per change point, or the one that says there is none."""
    found = [change_line(w, c, lang) for w, c in t.changes]
    return found or [tr("timeline.none", lang, level=level(t, lang))]


def rows(t: Timeline, workload: str, lang: str) -> tuple[list[str], list[list[str]]]:
    """The table of one workload: a row per build (the timeline's order), the median TPS and
    the number of ok repetitions at each client count."""
    lines = [ln for ln in t.lines if ln.workload == workload]
    head = [tr("timeline.build", lang), tr("timeline.subject", lang),
            *(f"{clients_phrase([ln.clients], lang)}: {tr('axis.tps', lang)} (n)" for ln in lines)]
    body = []
    for i, b in enumerate(t.builds):
        cells = [f"{f.format_tps(ln.medians[i])} ({len(ln.values[i])})" if ln.values[i] else f.MISSING
                 for ln in lines]
        body.append([b.label, b.subject or b.version or "", *cells])
    return head, body


def workloads(t: Timeline) -> list[str]:
    return list(dict.fromkeys(ln.workload for ln in t.lines))


def text(t: Timeline, lang: str) -> str:
    out = [heading(t, lang), lead(t, lang), ""]
    for w in workloads(t):
        head, body = rows(t, w, lang)
        widths = [max(len(r[i]) for r in (head, *body)) for i in range(len(head))]
        out += [w, *("  " + "  ".join(c.ljust(n) for c, n in zip(r, widths, strict=True)).rstrip()
                     for r in (head, *body)), ""]
    out += [tr("timeline.changes", lang), *(f"  {line}" for line in changes(t, lang))]
    return "\n".join(out) + "\n"


def markdown(t: Timeline, lang: str) -> str:
    out = [f"# {heading(t, lang)}", "", lead(t, lang), "", f"## {tr('timeline.changes', lang)}", ""]
    out += [f"- {line}" for line in changes(t, lang)]
    for w in workloads(t):
        head, body = rows(t, w, lang)
        out += ["", f"## {w}", "", "| " + " | ".join(head) + " |",
                "|" + "---|" * 2 + "---:|" * (len(head) - 2)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in body]
    return "\n".join(out) + "\n"


def chart(t: Timeline, workload: str, lang: str) -> str:
    """Median TPS per build, one line per client count, the builds named along the x axis."""
    labels = {float(i + 1): b.label for i, b in enumerate(t.builds)}
    lines = []
    for j, ln in enumerate(x for x in t.lines if x.workload == workload):
        hover = {float(i + 1): f"{_build(t.builds[i])} · {clients_phrase([ln.clients], lang)} · "
                 f"{f.format_tps(m)} TPS" for i, m in enumerate(ln.medians) if m is not None}
        lines.append(Line(clients_phrase([ln.clients], lang),
                          [(float(i + 1), m) for i, m in enumerate(ln.medians)], hover=hover, colour=j))
    return line_chart(f"{workload}: {tr('timeline.chart', lang)}", tr("timeline.build", lang),
                      tr("axis.tps", lang), lines, x_labels=labels, no_data=tr("chart.no_data", lang))


def page(t: Timeline, lang: str, generated_at: str) -> str:
    e = html.escape
    lang = lang_of(lang)
    out = ["<!DOCTYPE html>", f'<html lang="{lang}">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f'<meta name="generator" content="teiten {e(__version__)}">',
           f"<title>{e(heading(t, lang))}</title>", f"<style>\n{stylesheet()}</style>", "</head>",
           "<body>", "<main>", f"<h1>{e(heading(t, lang))}</h1>", f'<p class="lead">{e(lead(t, lang))}</p>',
           f"<h2>{e(tr('timeline.changes', lang))}</h2>", '<ul class="answer">',
           *(f"<li>{e(line)}</li>" for line in changes(t, lang)), "</ul>"]
    for w in workloads(t):
        head, body = rows(t, w, lang)
        out += [f"<h2>{e(w)}</h2>", f"<figure>{chart(t, w, lang)}</figure>",
                '<table class="data timeline">', "<thead><tr>",
                *(f'<th scope="col">{e(h)}</th>' for h in head), "</tr></thead>", "<tbody>"]
        out += ["<tr>" + f'<th scope="row">{e(r[0])}</th>' + "".join(f"<td>{e(c)}</td>" for c in r[1:])
                + "</tr>" for r in body]
        out += ["</tbody>", "</table>"]
    out += [f"<footer>{e(tr('footer.at', lang, version=__version__, at=generated_at))}</footer>",
            "</main>", "</body>", "</html>", ""]
    return "\n".join(out)


def write(t: Timeline, out_dir: Path | outdir.Writer, lang: str, generated_at: str
          ) -> dict[str, Path]:
    """timeline.md and timeline.html in ``out_dir`` (claimed by the caller:
    :func:`teiten.report.outdir.claim`), through :class:`teiten.report.outdir.Writer`."""
    with outdir.opened(out_dir) as out:
        return {"md": out.write_text("timeline.md", markdown(t, lang)),
                "html": out.write_text("timeline.html", page(t, lang, generated_at))}

