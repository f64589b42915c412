"""Every reference to a design, statistics, style or methods document names a file of the
repository, and a section it names in quotes is a heading of that file (issue 37, item 6).

The references are read from every text file under src/, tests/ (but tests/golden/, which holds
data saved from real runs), bench/ and scripts/, and from README.md and docs/. A path such as
``docs/STATISTICS.md`` must exist; a bare name such as ``DESIGN.md`` is the file of that name in
docs/; a reference to the project's private notes (``../shared/...``) is refused, because
whoever clones teiten does not have them. A section is the quoted text right after the name
("DESIGN.md, 'Japanese text'", or two joined by "and"); ``METHODS.md S4`` names the heading of
study S4. The documents' own pointers back into the code are checked too: every path they give
in backquotes exists, and every test they name as ``file::function`` is defined there.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("src", "tests", "bench", "scripts")
GOLDEN = ROOT / "tests" / "golden"
# This file writes broken references on purpose, to show that the scanner finds them.
THIS = Path(__file__).resolve()
DOCUMENTS = ("DESIGN", "STATISTICS", "STYLE", "METHODS", "SEEDS")

_NAMES = "|".join(DOCUMENTS)
REFERENCE = re.compile(
    rf"(?P<private>(?:\.\./)+shared/[^\s'\"`)]*|(?<![\w.-])/work/shared/[^\s'\"`)]*"
    rf"|(?<![\w.-])shared/(?:{_NAMES})\.md)"
    r"|(?P<path>(?<![\w.-])(?:\.\./)*docs/[\w./-]+\.md)"
    rf"|(?P<bare>(?<![\w./-])(?:{_NAMES})\.md)")
# A quoted title starts with a letter or digit and may wrap over two more lines of a docstring
# or of comments.
_TITLE = r"[A-Za-z0-9][^\"'\n]*(?:\n[ \t#]*[^\"'\n]*){0,2}?"
SECTION = re.compile(
    rf"[ \t]*,?[ \t]*(?:\n[ \t#]*)?(?P<q>[\"'])(?P<first>{_TITLE})(?P=q)"
    rf"(?:[ \t]+and(?:[ \t]+|[ \t]*\n[ \t#]*)(?P<q2>[\"'])(?P<second>{_TITLE})(?P=q2))?")
STUDY = re.compile(r"[ \t]+(S\d{1,2})\b")


@dataclass(frozen=True)
class Reference:
    """One reference as written, and what it names."""

    where: str  # file:line
    written: str
    target: Path | None  # the repository's file; None for the private notes
    sections: tuple[str, ...] = ()


def _title(text: str) -> str:
    return " ".join(re.sub(r"\n[ \t#]*", " ", text).split())


def references(text: str, source: str) -> list[Reference]:
    """Every reference in ``text`` (the contents of ``source``), with the sections it names."""
    found = []
    for m in REFERENCE.finditer(text):
        where = f"{source}:{text.count(chr(10), 0, m.start()) + 1}"
        if m.group("private"):
            found.append(Reference(where, m.group(0), None))
            continue
        if m.group("path"):
            target = ROOT / re.sub(r"^(?:\.\./)+", "", m.group("path"))
        else:
            target = ROOT / "docs" / m.group("bare")
        after = text[m.end():]
        sections: tuple[str, ...] = ()
        if (s := SECTION.match(after)) is not None:
            sections = tuple(_title(t) for t in (s.group("first"), s.group("second")) if t)
        elif target.name == "METHODS.md" and (s := STUDY.match(after)) is not None:
            sections = (f"{s.group(1)}.",)
        found.append(Reference(where, m.group(0), target, sections))
    return found


@functools.cache
def headings(path: Path) -> tuple[str, ...]:
    """The headings of a Markdown file, without their #s, in lower case."""
    return tuple(line.lstrip("#").strip().casefold()
                 for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#"))


def problems(refs: list[Reference]) -> list[str]:
    """What is wrong with ``refs``: a private note, a missing file, a missing section."""
    out = []
    for r in refs:
        if r.target is None:
            out.append(f"{r.where}: {r.written} is the project's private notes, which a clone of "
                       "the repository does not have; cite a file under docs/")
        elif not r.target.is_file():
            out.append(f"{r.where}: {r.written} names {r.target.relative_to(ROOT)}, which does "
                       "not exist")
        else:
            out += [f"{r.where}: {r.written} names the section '{s}', which is no heading of "
                    f"{r.target.relative_to(ROOT)}"
                    for s in r.sections if not any(s.casefold() in h for h in headings(r.target))]
    return out


def _text_files() -> list[Path]:
    files = [p for top in SCANNED for p in sorted((ROOT / top).rglob("*"))
             if p.is_file() and GOLDEN not in p.parents and "__pycache__" not in p.parts
             and p.resolve() != THIS]
    files += [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    out = []
    for p in files:
        data = p.read_bytes()
        if b"\0" in data:
            continue  # not text
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        out.append(p)
    return out


def test_every_document_a_file_cites_exists_with_the_section_it_names() -> None:
    refs = [r for p in _text_files()
            for r in references(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert len(refs) > 20, "the scanner found almost nothing: is REFERENCE still right?"
    assert any(r.sections for r in refs)
    found = problems(refs)
    assert not found, "\n" + "\n".join(found)


def test_the_scanner_reads_each_form_and_reports_what_is_missing() -> None:
    """The scanner itself, on made-up text: a file that does not exist, a section that is no
    heading, the private notes, and the forms of a citation that wrap over lines."""
    text = ("see docs/NOSUCH.md for more\n"
            "# the rule (DESIGN.md, 'A section nobody wrote')\n"
            "as the notes in ../shared/DESIGN.md say\n"
            '"""(docs/STATISTICS.md, "Verdicts" and\n    "Stopping when the answer is good\n'
            '    enough"), with STYLE.md\n    \'Layout\' and METHODS.md S4."""\n'
            "src/teiten/README.md and docs/METHODS.md S99\n")
    refs = references(text, "made-up.py")
    assert [(r.where, r.written, r.sections) for r in refs] == [
        ("made-up.py:1", "docs/NOSUCH.md", ()),
        ("made-up.py:2", "DESIGN.md", ("A section nobody wrote",)),
        ("made-up.py:3", "../shared/DESIGN.md", ()),
        ("made-up.py:4", "docs/STATISTICS.md", ("Verdicts", "Stopping when the answer is good enough")),
        ("made-up.py:6", "STYLE.md", ("Layout",)),
        ("made-up.py:7", "METHODS.md", ("S4.",)),
        ("made-up.py:8", "docs/METHODS.md", ("S99.",)),
    ]
    assert problems(refs) == [
        "made-up.py:1: docs/NOSUCH.md names docs/NOSUCH.md, which does not exist",
        "made-up.py:2: DESIGN.md names the section 'A section nobody wrote', which is no heading "
        "of docs/DESIGN.md",
        "made-up.py:3: ../shared/DESIGN.md is the project's private notes, which a clone of the "
        "repository does not have; cite a file under docs/",
        "made-up.py:8: docs/METHODS.md names the section 'S99.', which is no heading of "
        "docs/METHODS.md",
    ]


# A path of the repository in backquotes in a document (a path of PostgreSQL's source, such as
# src/backend/..., is not one): `src/teiten/run/plan.py`, `tests/unit/test_x.py::test_y`, or
# `::test_y` for a test of the file named last. Paths with a placeholder (<name>, *) are patterns.
POINTER = re.compile(r"`(?P<path>(?:src/teiten|tests|bench|scripts|docs)/[^`\s]*?)?(?:::(?P<function>\w+))?`")


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}


def pointers(text: str, source: str) -> list[str]:
    """What is wrong with the paths and tests a document names: a path that does not exist, a
    test function its file does not define."""
    out: list[str] = []
    last: Path | None = None
    for m in POINTER.finditer(text):
        path, function = m.group("path"), m.group("function")
        if path is None and function is None:
            continue
        where = f"{source}:{text.count(chr(10), 0, m.start()) + 1}"
        if path is not None:
            if any(c in path for c in "<>*{}"):
                last = None
                continue
            last = ROOT / path.rstrip("/")
            if not last.exists():
                out.append(f"{where}: {path} does not exist")
                continue
        if function is not None:
            if last is None or last.suffix != ".py":
                out.append(f"{where}: ::{function} follows no Python file")
            elif function not in _defined(last):
                out.append(f"{where}: {last.relative_to(ROOT)} defines no {function}")
    return out


def test_the_documents_name_paths_and_tests_that_exist() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    assert {"DESIGN.md", "STATISTICS.md", "STYLE.md", "METHODS.md", "SEEDS.md"} <= {p.name for p in docs}
    found = [problem for p in docs
             for problem in pointers(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert not found, "\n".join(found)
    made_up = pointers("`tests/unit/test_plan.py::no_such_test` and `src/teiten/nosuch.py`", "x.md")
    assert made_up == ["x.md:1: tests/unit/test_plan.py defines no no_such_test",
                       "x.md:1: src/teiten/nosuch.py does not exist"]


# docs/SEEDS.md: one row per item of the reports, | n | item | report | status | tests | notes |.
SEED_ROW = re.compile(r"^\| (?P<n>\d+) \| (?P<item>[^|]+?) \| (?P<report>[^|]+?) \| (?P<status>[^|]+?) "
                      r"\| (?P<tests>[^|]*?) \| (?P<notes>[^|]*?) ?\|$")
STATUSES = ("full", "partial", "missing")
NAMED_TEST = re.compile(r"`tests/[^`\s]+\.py::\w+`")


def seeds_problems(text: str, source: str = "docs/SEEDS.md") -> list[str]:
    """What is wrong with the table of the reports' items: a row that does not parse, numbers
    out of order, a status that is none of the three, a row teiten runs (full or partial) that
    names no test, a row short of full without its reason, a count line that does not add up."""
    out: list[str] = []
    counts = dict.fromkeys(STATUSES, 0)
    numbers = []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not re.match(r"\| \d", line):
            continue
        where = f"{source}:{line_no}"
        m = SEED_ROW.match(line)
        if m is None:
            out.append(f"{where}: a row of six cells was expected")
            continue
        numbers.append(int(m["n"]))
        status = m["status"]
        if status not in STATUSES:
            out.append(f"{where}: status {status!r} is none of {', '.join(STATUSES)}")
            continue
        counts[status] += 1
        if status != "missing" and not NAMED_TEST.search(m["tests"]):
            out.append(f"{where}: item {m['n']} is {status} but names no test as `tests/...py::test`")
        if status != "full" and not re.sub(r"<!--.*?-->", "", m["notes"]).strip():
            out.append(f"{where}: item {m['n']} is {status} and does not say why")
    if numbers != list(range(1, len(numbers) + 1)):
        out.append(f"{source}: the items are not numbered 1 to {len(numbers)} in order")
    line = (f"**Count: {counts['full']} items full, {counts['partial']} partial, "
            f"{counts['missing']} missing ({len(numbers)} items).**")
    if line not in text:
        out.append(f"{source}: the count line should read {line}")
    return out


def test_seeds_lists_each_item_with_its_status_its_tests_and_a_true_count() -> None:
    """docs/SEEDS.md (issue 57): every item of the reports with its status and the tests that
    run it (that they exist is test_the_documents_name_paths_and_tests_that_exist's part)."""
    text = (ROOT / "docs" / "SEEDS.md").read_text(encoding="utf-8")
    assert len([ln for ln in text.splitlines() if re.match(r"\| \d", ln)]) >= 50
    assert seeds_problems(text) == []
    made_up = ("| 1 | an item | 2014 §2 | full | — | |\n"
               "| 3 | another | 2016 | partial | `tests/unit/test_plan.py::test_count_is_the_product` | "
               "<!-- issue57-item-2 --> |\n"
               "| 4 | a third | 2020 | done | — | why |\n"
               "| 5 | broken row |\n"
               "**Count: 1 items full, 1 partial, 0 missing (2 items).**\n")
    assert seeds_problems(made_up, "x.md") == [
        "x.md:1: item 1 is full but names no test as `tests/...py::test`",
        "x.md:2: item 3 is partial and does not say why",
        "x.md:3: status 'done' is none of full, partial, missing",
        "x.md:4: a row of six cells was expected",
        "x.md: the items are not numbered 1 to 3 in order",
        "x.md: the count line should read **Count: 1 items full, 1 partial, 0 missing (3 items).**",
    ]
