"""What a write-IOPS limit does to a server (python -m bench.limits; issue 36, item 3).

First a study measures the server unthrottled (pgecons-update, 1 client, where every commit
waits for its WAL write); then one study sweeps ``limits: {write_iops: [¼, ½, 1] × that rate}``
(blocks, random order). It prints, per limit, the write IOPS the server's cgroup counted in the
measured windows (median and largest over the blocks) against the limit, its % of the limit,
and the update TPS. Expected: counted IOPS at most 1.05 × the limit, TPS not falling as the limit
rises. Run it as root on a quiet machine; about 4 minutes.

    python -m bench.limits [--duration 10s] [--blocks 3] [--major 18]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from contextlib import closing
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(study: str, where: Path) -> list[sqlite3.Row]:
    (where / "s.yaml").write_text(study)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-m", "teiten", "run", str(where / "s.yaml"), "--store",
                           str(where / "r.db"), "--no-report"], env=env, text=True,
                          capture_output=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"teiten run exited {done.returncode}:\n{done.stderr[-2000:]}")
    with closing(sqlite3.connect(where / "r.db")) as conn:
        conn.row_factory = sqlite3.Row
        return list(conn.execute(
            "SELECT t.server, t.tps, m1.value AS wiops, d.body AS held FROM trials t "
            "LEFT JOIN metrics m1 ON m1.trial_id = t.trial_id AND m1.name = 'limit_write_iops' "
            "LEFT JOIN details d ON d.trial_id = t.trial_id AND d.kind = 'limits' "
            "WHERE t.status = 'ok'"))


def study(name: str, servers: str, duration: str, blocks: int) -> str:
    return (f"study: {name}\nservers:\n{servers}workloads: [pgecons-update]\nscale: 10\n"
            f"clients: [1]\nduration: {duration}\nrepetitions: {blocks}\nseed: 5\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", default="10s")
    parser.add_argument("--blocks", type=int, default=3)
    parser.add_argument("--major", default="18")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="teiten-bench-limits-", dir="/var/tmp") as tmp:
        base = Path(tmp)
        os.chmod(base, 0o755)
        (base / "free").mkdir()
        free = run(study("limits-free", f'  - {{name: free, install: "{args.major}"}}\n',
                         args.duration, args.blocks), base / "free")
        tps = statistics.median(r["tps"] for r in free)
        # What the server writes unthrottled: its cgroup is not there, so the device's own rate
        # is what one transaction per commit implies; measured through a limit far above it.
        (base / "probe").mkdir()
        probe = run(study("limits-probe", f'  - {{name: high, install: "{args.major}", '
                          "limits: {write_iops: 1000000}}\n", args.duration, args.blocks),
                    base / "probe")
        rate = statistics.median(r["wiops"] for r in probe)
        print(f"unthrottled: {tps:.0f} TPS, {rate:.0f} write IOPS counted by the server's cgroup "
              f"({json.loads(probe[0]['held'])['counted']})")
        limits = sorted({max(1, round(rate * f)) for f in (0.25, 0.5, 1.0)})
        (base / "sweep").mkdir()
        rows = run(study("limits-sweep", f'  - {{name: held, install: "{args.major}", limits: '
                         f"{{write_iops: [{', '.join(map(str, limits))}]}}}}\n", args.duration,
                         args.blocks), base / "sweep")
        print(f"{'limit':>8} {'counted (median, max)':>24} {'% of limit':>11} {'TPS':>8}")
        last = 0.0
        for limit in limits:
            mine = [r for r in rows if r["server"] == f"held-write_iops-{limit}"]
            counted = [r["wiops"] for r in mine]
            med, top = statistics.median(counted), max(counted)
            t = statistics.median(r["tps"] for r in mine)
            flag = "" if top <= 1.05 * limit else "  ABOVE 1.05 x the limit"
            flag += "" if t >= last else "  TPS FELL as the limit rose"
            last = t
            print(f"{limit:>8} {med:>11.1f} {top:>11.1f} {100 * med / limit:>10.1f}% {t:>8.1f}{flag}")


if __name__ == "__main__":
    main()
