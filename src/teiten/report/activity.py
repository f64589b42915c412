"""A workload's system and database activity: what the monitors saw beside each number.

Two 100%-stacked bar charts (CPU breakdown and wait events, one bar per client count and
server, servers side by side within a client count so versions compare at the same load),
the device-utilisation table with the checkpoints and autovacuum runs that fell inside the
measured window, and the links to flame graphs. Both reports (Markdown and HTML) take their
words and numbers from here (the words from the catalogue, :mod:`teiten.words.i18n`);
like :mod:`teiten.report.svg`, the charts (drawn by :mod:`teiten.report.bars`) are
deterministic, self-contained SVG with a ``<title>`` carrying the exact value on every
segment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from urllib.parse import quote

from teiten.analysis.model import Activity, ServerSeries, WorkloadSection
from teiten.report.bars import Bar, Segment, format_percent, stacked_bars
from teiten.report.cells import DataTable, Value, file_stem
from teiten.report.columns import CPU_COLUMNS, DEVICE_COLUMNS, WAIT_COLUMNS
from teiten.words.i18n import clients_phrase, tr

# The English headings, for callers that name them.
ACTIVITY_HEADING = tr("activity")
CPU_HEADING = tr("activity.cpu")
WAITS_HEADING = tr("activity.waits")
PROFILES_HEADING = tr("activity.profiles")
WINDOW_HEADING = tr("activity.window")
WINDOW_NOTE = tr("activity.window_note")

# Okabe–Ito colours in a fixed role each, so one colour means one thing in every report;
# idle is a light grey so the busy part of a bar stands out.
CPU_PARTS = ("user", "sys", "iowait", "steal", "irq", "idle")
CPU_COLOURS = {
    "user": "#0072B2",    # blue
    "sys": "#D55E00",     # vermillion
    "iowait": "#E69F00",  # orange
    "steal": "#CC79A7",   # reddish purple
    "irq": "#009E73",     # bluish green
    "idle": "#E3E3E3",    # light grey
}
CPU_EVENT = "CPU:CPU"
CPU_EVENT_COLOUR = "#0072B2"  # the blue of CPU user time
# For the other wait events, in order of their total share: the rest of Okabe–Ito (no
# black: it hides the segment labels), then Paul Tol's "muted" scheme, also safe for the
# common colour blindnesses. Events beyond these fold into "other", so no colour repeats.
WAIT_PALETTE = (
    "#D55E00", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#F0E442",
    "#882255", "#44AA99", "#332288", "#999933", "#DDCC77",
)
OTHER = "other"
OTHER_COLOUR = "#A8A8A8"
FALLBACK_COLOUR = "#777777"  # a CPU part the palette does not know
DEVICE_NAMES = {"data": "data", "wal": "WAL"}

# Shares below this (0.05%) print as 0.0%: no "other" segment for float dust.
MIN_SHARE = 0.0005


@dataclass(frozen=True)
class DeviceTable:
    """%util per client count: one column per (server, device), then what broke the window."""

    servers: tuple[str, ...]
    devices: tuple[str, ...]  # display names, in column order within each server
    rows: tuple[tuple[int, tuple[str, ...], str], ...]  # clients, cells, violations ("" if none)
    data: tuple[DataTable, ...] = ()  # <stem>-devices, where the table is shown

    @property
    def has_violations(self) -> bool:
        return any(v for _, _, v in self.rows)

    @property
    def shown(self) -> bool:
        """Whether the report shows it as a table (else it says that no device was watched)."""
        return bool(self.devices or self.has_violations)


def has_activity(section: WorkloadSection) -> bool:
    """Whether any server of the section carries monitor data or flame graphs."""
    return any(s.activity or s.profiles or s.profile_diffs for s in section.servers)


def clients_text(clients: int, lang: str = "en") -> str:
    return clients_phrase([clients], lang)


def cpu_bars(section: WorkloadSection, lang: str = "en") -> str:
    """The CPU breakdown as 100%-stacked bars: user, sys, iowait, steal, irq, idle.

    Widths are each part's share of the bar's total (the monitors' parts sum to about,
    not exactly, 100); the hover text gives the percentage as measured.
    """
    def segments(a: Activity) -> tuple[Segment, ...] | None:
        cpu = a.server_cpu or a.cpu  # a confined server: its own CPUs
        names = [p for p in CPU_PARTS if p in cpu] + sorted(set(cpu) - set(CPU_PARTS))
        parts = tuple(Segment(p, cpu[p], CPU_COLOURS.get(p, FALLBACK_COLOUR)) for p in names)
        return parts if sum(s.percent for s in parts) > 0 else None

    def host_segments(a: Activity) -> tuple[Segment, ...] | None:
        return segments(Activity(a.clients, a.host_cpu, {}, {}, 0, 0))

    legend = [(p, CPU_COLOURS[p]) for p in CPU_PARTS]
    hosts = any(a.host_cpu for s in section.servers for a in s.activity)
    confined = any(a.server_cpu for s in section.servers for a in s.activity)
    caption = tr("activity.cpu_caption", lang) + (
        " " + tr("activity.cpu_hosts", lang) if hosts else "") + (
        " " + tr("activity.cpu_confined", lang) if confined else "")
    return stacked_bars(
        f"{section.workload}: {tr('activity.cpu', lang)}", legend,
        _rows(section, segments, lang, host=host_segments if hosts else None),
        caption=caption, nothing=tr("activity.nothing", lang),
        no_data=tr("chart.no_data", lang),
    )


def wait_colours(section: WorkloadSection) -> dict[str, str]:
    """A colour per wait event of the section, the same in every bar.

    CPU:CPU is always :data:`CPU_EVENT_COLOUR`; the other events take
    :data:`WAIT_PALETTE` in order of their total share over all bars (ties by name).
    Events past the palette's end get no colour and count as "other".
    """
    totals: dict[str, float] = {}
    for s in section.servers:
        for a in s.activity:
            for event, share in a.waits.items():
                totals[event] = totals.get(event, 0.0) + share
    ranked = sorted((e for e in totals if e != CPU_EVENT), key=lambda e: (-totals[e], e))
    colours = {CPU_EVENT: CPU_EVENT_COLOUR} if CPU_EVENT in totals else {}
    colours.update(zip(ranked, WAIT_PALETTE, strict=False))
    return colours


def wait_bars(section: WorkloadSection, lang: str = "en") -> str:
    """The wait events as 100%-stacked bars of their share of the samples.

    Segments keep one order in every bar (CPU:CPU first, then by total share), so the
    same event sits in the same place; what a server's top list leaves out is "other".
    """
    colours = wait_colours(section)
    order = list(colours)
    other = tr("activity.other", lang)

    def segments(a: Activity) -> tuple[Segment, ...] | None:
        if not a.waits:
            return None
        parts = [Segment(e, a.waits[e] * 100, colours[e]) for e in order if e in a.waits]
        folded = {e: v for e, v in a.waits.items() if e not in colours}
        rest = 1.0 - sum(a.waits.values()) + sum(folded.values())
        if rest >= MIN_SHARE:
            note = tr("activity.other_note", lang)
            if folded:
                note += "; " + tr("activity.includes", lang, events=", ".join(
                    f"{e} {format_percent(v * 100)}" for e, v in sorted(folded.items())))
            parts.append(Segment(other, rest * 100, OTHER_COLOUR, note))
        return tuple(parts)

    rows = _rows(section, segments, lang)
    used = {seg.name for _, bars in rows for _, segs in bars for seg in segs or ()}
    legend = [(e, colours[e]) for e in order if e in used]
    if other in used:
        legend.append((other, OTHER_COLOUR))
    return stacked_bars(
        f"{section.workload}: {tr('activity.waits', lang)}", legend, rows,
        caption=tr("activity.waits_caption", lang), nothing=tr("activity.nothing", lang),
        no_data=tr("chart.no_data", lang),
    )


def device_table(section: WorkloadSection, lang: str = "en", stem: str = "") -> DeviceTable:
    """%util of each device per client count and server (servers with any activity), and its
    data, ``<stem>-devices``: a row per server, client count and device."""
    servers = _activity_servers(section)
    keys = {k for s in servers for a in s.activity for k in a.device_util}
    devices = [k for k in DEVICE_NAMES if k in keys] + sorted(keys - set(DEVICE_NAMES))
    rows = []
    data: list[tuple[Value, ...]] = []
    for clients in _activity_clients(section):
        cells: list[str] = []
        violations: list[str] = []
        for s in servers:
            a = _at(s, clients)
            for device in devices:
                value = None if a is None else a.device_util.get(device)
                cells.append("—" if value is None else format_percent(value))
            text = "" if a is None else violation_text(a, lang)
            if text:
                violations.append(f"{s.server}: {text}")
            if a is not None:
                util = {d: round(a.device_util[d], 1) for d in devices if d in a.device_util}
                data += [(section.workload, s.server, clients, d, util.get(d), a.checkpoints, a.autovacuum)
                         for d in devices] or [(section.workload, s.server, clients, None, None,
                                                a.checkpoints, a.autovacuum)]
        rows.append((clients, tuple(cells), "; ".join(violations)))
    table = DeviceTable(
        servers=tuple(s.server for s in servers),
        devices=tuple(DEVICE_NAMES.get(d, d) for d in devices),
        rows=tuple(rows),
    )
    name = f"{stem or file_stem(section.workload)}-devices"
    return replace(table, data=(DataTable(name, section.workload, "devices", DEVICE_COLUMNS, tuple(data)),)
                   if table.shown else ())


def chart_data(section: WorkloadSection, stem: str = "") -> tuple[DataTable, ...]:
    """The figures of the CPU and wait-event charts: ``<stem>-cpu`` and ``<stem>-waits``, a
    row per server with activity and client count (and CPUs measured, or wait event)."""
    w = section.workload
    cpu: list[tuple[Value, ...]] = []
    waits: list[tuple[Value, ...]] = []
    for s in _activity_servers(section):
        for a in sorted(s.activity, key=lambda a: a.clients):
            for cpus, parts in (("machine", a.cpu), ("server", a.server_cpu), ("host", a.host_cpu)):
                if parts:
                    cpu.append((w, s.server, a.clients, cpus,
                                *(round(parts[p], 1) if p in parts else None for p in CPU_PARTS)))
            waits += [(w, s.server, a.clients, event, round(share * 100, 1))
                      for event, share in a.waits.items()]
    name = stem or file_stem(w)
    return (DataTable(f"{name}-cpu", w, "cpu", CPU_COLUMNS, tuple(cpu)),
            DataTable(f"{name}-waits", w, "waits", WAIT_COLUMNS, tuple(waits)))


def device_heading(table: DeviceTable, lang: str = "en") -> str:
    """The table's heading: device utilisation where it has devices (local servers), else
    only what fell inside the measured window (an external server's table)."""
    return tr("activity.device" if table.devices else "activity.window", lang)


def violation_text(a: Activity, lang: str = "en") -> str:
    """``1 checkpoint, autovacuum in 2 trials``; empty when the window was clean."""
    parts = []
    if a.checkpoints:
        key = "activity.checkpoints" if a.checkpoints == 1 else "activity.checkpoints_many"
        parts.append(tr(key, lang, n=a.checkpoints))
    if a.autovacuum:
        key = "activity.autovacuum" if a.autovacuum == 1 else "activity.autovacuum_many"
        parts.append(tr(key, lang, n=a.autovacuum))
    return tr("list.sep", lang).join(parts)


# Below this share of samples through unnamed frames, a profile is not flagged.
UNNAMED_FLAG = 0.01


def profiles_note(section: WorkloadSection, lang: str = "en") -> str:
    """Where the flame graphs come from, when they were taken after the blocks; and which
    profiles have frames perf could not name (a build without symbols for them), and why."""
    notes = []
    if section.profiled_after:
        notes.append(tr("activity.profiles.after", lang, clients=", ".join(
            clients_text(c, lang) for c in section.profiled_after)))
    unnamed = [tr("activity.unnamed.one", lang, who=f"{s.server} · {clients_text(c, lang)}",
                  through=f"{through * 100:.0f}", top=f"{top * 100:.0f}")
               for s in section.servers for c, through, top in s.profile_unnamed
               if through >= UNNAMED_FLAG]
    if unnamed:
        notes.append(tr("activity.unnamed", lang, who=tr("list.sep", lang).join(unnamed)))
    return " ".join(notes)


def profile_links(section: WorkloadSection, lang: str = "en") -> list[tuple[str, str]]:
    """``("pg18 · 4 clients: flame graph", href)`` per flame graph, href percent-encoded.

    Encoding keeps the path relative (a ``:`` cannot make it a ``javascript:`` URL).
    """
    links = [
        (tr("activity.flamegraph", lang, who=f"{s.server} · {clients_text(clients, lang)}"),
         quote(path, safe="/"))
        for s in section.servers
        for clients, path in sorted(s.profiles)
    ]
    links += [
        (tr("activity.diffgraph", lang, server=s.server, baseline=section.baseline,
            clients=clients_text(clients, lang)), quote(path, safe="/"))
        for s in section.servers
        for clients, path in sorted(s.profile_diffs)
    ]
    links += [
        (tr("activity.changegraph", lang, before=c.before, after=c.after,
            clients=clients_text(c.graph_clients or c.clients, lang)), quote(c.graph, safe="/"))
        for c in (section.history.changes if section.history else ()) if c.graph
    ]
    return links


def _activity_servers(section: WorkloadSection) -> list[ServerSeries]:
    return [s for s in section.servers if s.activity]


def _activity_clients(section: WorkloadSection) -> list[int]:
    seen = {a.clients for s in section.servers for a in s.activity}
    return [c for c in section.clients if c in seen] + sorted(seen - set(section.clients))


def _at(series: ServerSeries, clients: int) -> Activity | None:
    return next((a for a in series.activity if a.clients == clients), None)


def _rows(section: WorkloadSection, segments: Callable[[Activity], tuple[Segment, ...] | None],
          lang: str, *, host: Callable[[Activity], tuple[Segment, ...] | None] | None = None
          ) -> list[tuple[str, list[Bar]]]:
    """One group per client count with activity; a bar per server that has any. With
    ``host``, a server on another machine gets two: this machine (the client) and its host."""
    servers = _activity_servers(section)
    rows = []
    for clients in _activity_clients(section):
        bars: list[Bar] = []
        for s in servers:
            a = _at(s, clients)
            if host is not None and a is not None and a.host_cpu:
                bars.append((tr("activity.client_bar", lang, server=s.server), segments(a)))
                bars.append((tr("activity.host_bar", lang, server=s.server), host(a)))
            else:
                bars.append((s.server, None if a is None else segments(a)))
        rows.append((clients_text(clients, lang), bars))
    return rows


