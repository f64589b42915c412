"""Bisect at a 10% margin (issue 53 item 4): can `teiten bisect` name a commit about 12% slower
when the study's margin is 10%, on this machine, and how long does it take?

It makes a git repository of a real PostgreSQL 15 tree (the test suite's source, fetched by
`teiten fetch-source 15`) whose history is: the tree, a harmless commit, ONE commit that spins
``--spin-us`` microseconds before every simple query (150 us slows pgecons-read's 1-client
transactions at scale 1 by about 12% on a 2-CPU machine; the first study measures the real
figure), and two more harmless commits. Then it runs `teiten bisect` over it with the study
below (margin 10%, repetitions: auto), and prints which commit it named, whether that is the
spinning one, the good-against-bad ratio it measured, the builds, studies and minutes it took.
Each run is appended to bench/results/bisect_margin.jsonl.

    python -m bench.bisect_margin [--spin-us 150] [--home /var/cache/teiten-test/home]

``--home`` is the TEITEN_HOME of the builds: the test suite's keeps a warm compiler cache
(a build then takes about 90 s on 2 CPUs instead of 210 s). Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from tests import gitrepo

from bench.common import ROOT

RESULTS = ROOT / "bench" / "results" / "bisect_margin.jsonl"
STUDY = """\
study: bisect-margin
servers:
  - {name: any, install: "15", settings: {max_connections: 20}}
workloads: [pgecons-read]
scale: 1
clients: [1]
duration: 2s
repetitions: auto
auto_repetitions: {floor: 8, ceiling: 20}
order: pairs
margin_pct: 10
"""


def _spin(us: int) -> str:
    return (f"\t/* teiten bench: a busy loop of {us} microseconds before every simple query */\n"
            f"\t{{\n\t\tTimestampTz spin_until = GetCurrentTimestamp() + {us};\n\n"
            "\t\twhile (GetCurrentTimestamp() < spin_until)\n\t\t\t;\n\t}\n\n")


def make_repo(source: Path, repo: Path, spin_us: int) -> list[tuple[str, bool]]:
    """The history above at ``repo`` (made anew): (hash, spins) per commit, oldest first."""
    shutil.rmtree(repo, ignore_errors=True)
    shutil.copytree(source, repo, symlinks=True)
    gitrepo.git(repo, "init", "--quiet", "--initial-branch=main")
    made = [(gitrepo.commit(repo, "Import PostgreSQL", 0), False)]
    changes = [(s, f, e, False) for s, f, e, bad in gitrepo.CHANGES if not bad]
    spin = (f"Spin {spin_us} microseconds before every simple query", "src/backend/tcop/postgres.c",
            gitrepo._insert_before("\tTRACE_POSTGRESQL_QUERY_START(query_string);\n", _spin(spin_us),
                                   after="exec_simple_query(const char *query_string)\n{"), True)
    for n, (subject, file, edit, bad) in enumerate([changes[0], spin, *changes[1:]], start=1):
        path = repo / file
        path.write_text(edit(path.read_text()))
        made.append((gitrepo.commit(repo, subject, n), bad))
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spin-us", type=int, default=150)
    parser.add_argument("--home", default="/var/cache/teiten-test/home")  # the suite's: a warm ccache
    parser.add_argument("--work", default="/var/tmp/teiten-bisect-margin")
    args = parser.parse_args()
    home, work = Path(args.home), Path(args.work)
    source = next(iter(sorted((home / "src").glob("postgresql-15.*"))), None)
    if source is None:
        sys.exit(f"no PostgreSQL 15 source under {home}/src: run 'teiten fetch-source 15 {home}/src'")
    work.mkdir(parents=True, exist_ok=True)
    work.chmod(0o755)
    commits = make_repo(source, work / f"repo-{args.spin_us}", args.spin_us)
    spinning = next(h for h, bad in commits if bad)
    (work / "s.yaml").write_text(STUDY)
    store = work / f"b-{int(time.time())}.db"
    env = dict(os.environ, TEITEN_HOME=str(home), PYTHONPATH=str(ROOT / "src"))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "teiten", "bisect", str(work / "s.yaml"), "--repo",
                           str(work / f"repo-{args.spin_us}"), "--good", commits[0][0], "--bad", "main",
                           "--configure=--without-icu", "--store", str(store)],
                          env=env, text=True, capture_output=True)
    minutes = (time.monotonic() - started) / 60
    named = re.findall(r'The first bad commit is ([0-9a-f]{7,40}) "', done.stdout)
    with sqlite3.connect(store) as conn:
        studies = conn.execute("SELECT count(*) FROM studies").fetchone()[0]
        trials = conn.execute("SELECT count(*) FROM trials WHERE status='ok'").fetchone()[0]
        first = conn.execute("SELECT estimate_pct, low_pct, high_pct, verdict FROM point_summaries "
                             "WHERE study_id = (SELECT min(id) FROM studies) AND estimate_pct IS NOT NULL"
                             ).fetchall()
    row = {"at": datetime.now(UTC).isoformat(timespec="minutes"), "spin_us": args.spin_us,
           "exit": done.returncode, "minutes": round(minutes, 1), "studies": studies,
           "trials": trials, "first_study": first, "spinning": spinning,
           "named": named[-1] if named else None,
           "right": bool(named) and spinning.startswith(named[-1][:12]),
           "last_lines": done.stdout.strip().splitlines()[-4:]}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    with RESULTS.open("a") as f:
        f.write(json.dumps(row) + "\n")
    print(done.stdout)
    print(done.stderr[-2000:], file=sys.stderr)
    print(json.dumps(row, indent=2))


if __name__ == "__main__":
    main()
