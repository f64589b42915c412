"""Summarise the output of ``EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)``.

Pure functions, no I/O. :func:`summarise` takes the JSON text or the object psycopg decodes
it into (a list holding one object with "Plan", "Planning Time", "Execution Time" and, as
the case may be, "Planning", "Triggers", "JIT", "Settings") and returns a :class:`PlanSummary`.
Anything else raises ValueError with a one-line message saying what was expected.

The plan shape is one line of node labels in tree order:

* a label is the node type as text EXPLAIN names it: ``Parallel`` for parallel-aware
  nodes, ``Partial``/``Finalize`` and GroupAggregate/HashAggregate/MixedAggregate for
  aggregates, the join type for joins (``Nested Loop Left Join``, ``Hash Anti Join``);
  then ``using INDEX on RELATION`` for index scans, ``on INDEX`` for bitmap index scans,
  ``on RELATION`` (or ``on FUNCTION``) for other scans; ``[N workers]`` (planned) on
  Gather and Gather Merge; ``[N subplans removed]`` on Append and Merge Append;
* ``A > B``: B is the only child of A; ``A > (B + C)``: B and C are its children, in
  the order EXPLAIN lists them (InitPlans, the outer then the inner side or the members
  of an Append, SubPlans);
* an Append or Merge Append with more than 3 children lists them counted by their shape
  without names: ``Parallel Append > (10 x Parallel Seq Scan)``.

For example ``Finalize Aggregate > Gather [2 workers] > Partial Aggregate > Parallel Seq
Scan on access_log`` or ``Aggregate > Bitmap Heap Scan on t > Bitmap Index Scan on t_idx``.

What the figures mean, checked on real plans of 15.18, 17.11 and 18.6 (goldens and the
way they were made in tests/golden/explain/) and on explain.c of 15.18 and of master
(2025):

* Buffer counts of a node include those of the nodes below it, so the top node's are
  the execution's (planning's are apart, under "Planning"). Parallel workers' are
  included in every version: Gather adds them when it shuts its workers down
  (ExecShutdownNode), so the top node of ``parallel-agg`` shows all 5000 pages of the
  table in 15, 17 and 18 alike, and in ``sort-temp`` the temp blocks of the top Gather
  Merge are those of the Sort below it, summed over leader and workers.
* "Actual Rows", "Rows Removed by Filter" and "Rows Removed by Index Recheck" are per-loop
  averages (the counter divided by "Actual Loops"). For a node under Gather the leader's
  node holds the leader's and the workers' counters added together, and the loops are
  theirs too: in ``parallel-agg`` the Parallel Seq Scan removes 60000 rows per loop in 3
  loops, the 180000 the serial plan removes in one. Totals here are average x loops,
  per node. The removed-rows averages are printed rounded to an integer in every
  version, so totals can be off: in ``nestloop-filter`` the index scan removes 45 rows in
  50 loops and prints 1, a total of 50; in 18's ``partition-unpruned`` the 20000 rows
  removed from one partition in 3 loops print as 6667, a total of 20001.
* 18 prints "Actual Rows" with two decimals (``1.00``, ``6666.67``; 15 and 17 print a
  rounded integer: 0 where 18 says 0.10). 18 also adds "Disabled" and "Index Searches",
  and EXPLAIN ANALYZE includes BUFFERS by default (``pg18-analyze-only`` has buffer
  counts, ``pg17-analyze-only`` has none).
* "Exact/Lossy Heap Blocks" are totals over all loops, not averages. Under a Parallel Bitmap Heap Scan
  they are the leader's only: up to 17 the workers' pages are lost (``bitmap-parallel``
  shows 1235 and 1309 of the 3750 pages scanned in 15 and 17); 18 adds each worker's
  counts in the node's "Workers" list (1245 + 1590 + 915 = 3750), which are added here.
* "Subplans Removed" is on every Append and Merge Append (0 when nothing was pruned) and
  counts the members pruned when the executor started, e.g. for a generic plan of a
  prepared statement (``partition-run-pruned``: 9 of 10). Plan-time pruning leaves no
  trace, and when it leaves one partition the planner drops the Append and scans that
  partition directly (``partition-plan-pruned``): then ``partitions_scanned`` is 0 and
  only the shape names the partition.
* Between 15 and 17 these goldens differ in nothing but the measured values.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field

# Aggregate "Strategy" -> the name text EXPLAIN uses ("Plain" stays "Aggregate").
_AGGREGATE_NAMES = {"Sorted": "GroupAggregate", "Hashed": "HashAggregate", "Mixed": "MixedAggregate"}
_APPENDS = ("Append", "Merge Append")
_GATHERS = ("Gather", "Gather Merge")
# An Append with more members than this lists them counted (partitions, mostly).
_MAX_LISTED = 3
_EXPECTED = "expected EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) output"
_NO_ANALYZE = "EXPLAIN without ANALYZE?"
_NO_BUFFERS = "BUFFERS is off by default before 18"
_NO_SUMMARY = "SUMMARY off?"

JsonObject = Mapping[str, object]  # one object of EXPLAIN's JSON, as decoded


@dataclass(frozen=True)
class Node:
    """One plan node: its type and its children, checked when read (tree order, so the first
    malformed node is the one named); its other fields are read by name when used, most of
    them being on some node types only."""

    kind: str  # "Node Type"
    children: tuple[Node, ...]  # "Plans", in the order EXPLAIN lists them
    fields: JsonObject

    @classmethod
    def read(cls, obj: JsonObject) -> Node:
        kind = obj.get("Node Type")
        if not isinstance(kind, str):
            raise ValueError(f'{_EXPECTED}: a plan node has no "Node Type"')
        return cls(kind, tuple(cls.read(p) for p in _objects(obj, "Plans", kind)), obj)

    def number(self, key: str) -> float:
        """The number under ``key``, 0 when absent."""
        return _number(self.fields, key)

    def text(self, key: str) -> str | None:
        """The text under ``key`` (None when absent)."""
        value = self.fields.get(key)
        return value if isinstance(value, str) else None

    @property
    def relation(self) -> str | None:
        """The relation a scan reads ("Relation Name")."""
        return self.text("Relation Name")

    @property
    def parallel_aware(self) -> bool:
        return self.fields.get("Parallel Aware") is True

    @property
    def workers(self) -> list[JsonObject]:
        """The node's "Workers" (18: each parallel worker's own counters)."""
        return _objects(self.fields, "Workers", self.kind)

    def walk(self) -> Iterator[Node]:
        """This node and every node below it, in tree order."""
        yield self
        for child in self.children:
            yield from child.walk()


def _objects(obj: JsonObject, key: str, kind: str) -> list[JsonObject]:
    """The list of objects under ``key`` of a ``kind`` node ([] when absent)."""
    found = obj.get(key, [])
    if not isinstance(found, list) or not all(isinstance(o, dict) for o in found):
        raise ValueError(f'{_EXPECTED}: "{key}" of a {kind} node is not a list of objects')
    return [o for o in found if isinstance(o, dict)]


@dataclass(frozen=True)
class PlanSummary:
    """The figures of one EXPLAIN ANALYZE run that a benchmark reports."""

    shape: str
    nodes: int
    rows: int  # rows the statement returned (top node)
    planning_ms: float
    execution_ms: float
    shared_hit: int  # top node, i.e. the whole execution, workers included
    shared_read: int
    temp_read: int
    temp_written: int
    rows_removed_by_filter: int  # summed over nodes, average x loops
    rows_removed_by_index_recheck: int
    heap_blocks_exact: int  # summed over bitmap heap scans (and their workers in 18)
    heap_blocks_lossy: int
    workers_planned: int  # summed over Gather and Gather Merge
    workers_launched: int
    partitions_scanned: int  # distinct relations scanned below Append / Merge Append
    subplans_removed: int  # members pruned at executor startup
    # Per relation: the loops of the nodes that scan it, added up: under a Gather each
    # process that ran the scan (the leader and each launched worker) counts once, and the
    # inner of a nested loop once per outer row. And the relations whose scan was
    # parallel-aware: its processes divided its pages between them (a parallel join's side
    # that every process reads whole, as under a non-parallel Hash, is not among them).
    scans: dict[str, int] = field(default_factory=dict)
    divided: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def summarise(text_or_obj: object) -> PlanSummary:
    """The summary of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) output, as text or decoded."""
    result, plan = _result(_decode(text_or_obj) if isinstance(text_or_obj, str) else text_or_obj)
    top = Node.read(plan)
    all_nodes = list(top.walk())
    return PlanSummary(
        shape=shape(top),
        nodes=len(all_nodes),
        rows=round(_required(top.fields, "Actual Rows", _NO_ANALYZE) * top.number("Actual Loops")),
        planning_ms=_required(result, "Planning Time", _NO_SUMMARY),
        execution_ms=_required(result, "Execution Time", _NO_SUMMARY),
        shared_hit=int(_required(top.fields, "Shared Hit Blocks", _NO_BUFFERS)),
        shared_read=int(_required(top.fields, "Shared Read Blocks", _NO_BUFFERS)),
        temp_read=int(_required(top.fields, "Temp Read Blocks", _NO_BUFFERS)),
        temp_written=int(_required(top.fields, "Temp Written Blocks", _NO_BUFFERS)),
        rows_removed_by_filter=sum(_loop_total(n, "Rows Removed by Filter") for n in all_nodes),
        rows_removed_by_index_recheck=sum(_loop_total(n, "Rows Removed by Index Recheck") for n in all_nodes),
        heap_blocks_exact=sum(_with_workers(n, "Exact Heap Blocks") for n in all_nodes),
        heap_blocks_lossy=sum(_with_workers(n, "Lossy Heap Blocks") for n in all_nodes),
        # Only Gather and Gather Merge have these two, only Append and Merge Append the last.
        workers_planned=_sum(all_nodes, "Workers Planned"),
        workers_launched=_sum(all_nodes, "Workers Launched"),
        partitions_scanned=_partitions_scanned(all_nodes),
        subplans_removed=_sum(all_nodes, "Subplans Removed"),
        scans=_scans(all_nodes),
        divided=sorted({n.relation for n in all_nodes if n.relation is not None and n.parallel_aware}),
    )


def _scans(all_nodes: list[Node]) -> dict[str, int]:
    """Relation -> the loops of the nodes that scan it, added up."""
    out: dict[str, int] = {}
    for node in all_nodes:
        if node.relation is not None:
            out[node.relation] = out.get(node.relation, 0) + int(node.number("Actual Loops"))
    return out


def shape(node: Node, named: bool = True) -> str:
    """The one-line shape of the plan below ``node`` (see the module docstring)."""
    label = _label(node, named)
    children = node.children
    if not children:
        return label
    if node.kind in _APPENDS and len(children) > _MAX_LISTED:
        # Counter keeps first-seen order, so members are listed in plan order.
        counts = Counter(shape(child, named=False) for child in children)
        return f"{label} > ({' + '.join(f'{n} x {s}' for s, n in counts.items())})"
    parts = [shape(child, named) for child in children]
    return f"{label} > {parts[0]}" if len(parts) == 1 else f"{label} > ({' + '.join(parts)})"


def _decode(text: str) -> object:
    try:
        found: object = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{_EXPECTED}, got text that is not JSON ({exc.msg} at char {exc.pos})") from None
    return found


def _result(obj: object) -> tuple[JsonObject, JsonObject]:
    """The one result object of the top-level list, and the "Plan" object in it."""
    if not isinstance(obj, list) or len(obj) != 1:
        got = f"a list of {len(obj)}" if isinstance(obj, list) else type(obj).__name__
        raise ValueError(f"{_EXPECTED}: a JSON list holding one result, got {got}")
    result = obj[0]
    plan = result.get("Plan") if isinstance(result, dict) else None
    if not isinstance(plan, dict):
        raise ValueError(f'{_EXPECTED}: the result has no "Plan" object')
    return result, plan


def _number(obj: JsonObject, key: str) -> float:
    """The number under ``key``, 0 when absent (most keys exist on some node types only)."""
    value = obj.get(key, 0)
    # bool is an int to Python, not to EXPLAIN.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f'{_EXPECTED}: "{key}" is not a number')
    return value


def _required(obj: JsonObject, key: str, hint: str) -> float:
    if key not in obj:
        raise ValueError(f'{_EXPECTED}: no "{key}" ({hint})')
    return _number(obj, key)


def _label(node: Node, named: bool) -> str:
    kind = node.kind
    if kind == "Aggregate":
        kind = _AGGREGATE_NAMES.get(node.text("Strategy") or "", kind)
        if (mode := node.text("Partial Mode")) in ("Partial", "Finalize"):
            kind = f"{mode} {kind}"
    join = node.text("Join Type") or "Inner"
    if join != "Inner":
        # "Hash Join" + Left -> "Hash Left Join", "Nested Loop" + Left -> "Nested Loop Left Join".
        kind = f"{kind.removesuffix(' Join')} {join} Join"
    if node.parallel_aware:
        kind = f"Parallel {kind}"
    if named:
        kind += _target(node)
    if node.kind in _GATHERS:
        kind += f" [{int(node.number('Workers Planned'))} workers]"
    if node.kind in _APPENDS and node.number("Subplans Removed"):
        kind += f" [{int(node.number('Subplans Removed'))} subplans removed]"
    return kind


def _target(node: Node) -> str:
    index = node.text("Index Name")
    relation = node.relation or node.text("Function Name")
    if index and relation:
        return f" using {index} on {relation}"
    # A Bitmap Index Scan names only its index.
    name = index or relation
    return f" on {name}" if name else ""


def _sum(all_nodes: list[Node], key: str) -> int:
    return int(sum(n.number(key) for n in all_nodes))


def _loop_total(node: Node, key: str) -> int:
    # EXPLAIN prints the counter divided by the loops, rounded to an integer.
    return round(node.number(key) * node.number("Actual Loops"))


def _with_workers(node: Node, key: str) -> int:
    """A total counter of the node plus, in 18, the same counter of each of its workers."""
    workers = node.workers
    return int(node.number(key) + sum(_number(w, key) for w in workers))


def _partitions_scanned(all_nodes: list[Node]) -> int:
    """Distinct relations scanned below the members of Appends (not in their InitPlans)."""
    relations = {
        below.relation
        for node in all_nodes
        if node.kind in _APPENDS
        for member in node.children
        if member.text("Parent Relationship") == "Member"
        for below in member.walk()
        if below.relation is not None
    }
    return len(relations)
