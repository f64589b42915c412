"""How much of a store's trial-to-trial noise the host's steal explains (issue 53): for each
store, the correlation of each trial's residual log TPS (its log TPS minus its point's mean)
with the CPU steal of its window (the system monitor's ``cpu_steal``, % of all CPU time), and
the residual SD of all trials against the trials whose steal stayed below 1%, 0.5% and 0.25%
(with the share kept). A strong negative correlation, and an SD that falls when the stolen
trials are left out, say that the noise guard should count steal as foreign load.

    python -m bench.steal /work/ttv/*-run1.db
"""

from __future__ import annotations

import argparse
import math
import sqlite3
from collections import defaultdict

import numpy as np

QUERY = """SELECT t.server, t.workload, t.clients, t.tps,
    (SELECT value FROM metrics m WHERE m.trial_id = t.trial_id AND m.name = 'cpu_steal')
    FROM trials t WHERE t.status = 'ok' AND t.purpose = '' AND t.tps > 0"""


def residuals(path: str) -> list[tuple[float, float]]:
    """(residual log TPS, steal %) of every ok trial of the store that has its steal."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(QUERY).fetchall()
    by: dict[tuple[str, str, int], list[tuple[float, float]]] = defaultdict(list)
    for server, workload, clients, tps, steal in rows:
        if steal is not None:
            by[(server, workload, clients)].append((math.log(tps), float(steal)))
    out = []
    for trials in by.values():
        mean = float(np.mean([lt for lt, _ in trials]))
        out += [(lt - mean, steal) for lt, steal in trials]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stores", nargs="+")
    args = parser.parse_args()
    for path in args.stores:
        found = residuals(path)
        if len(found) < 5:
            continue
        res, steal = np.array([r for r, _ in found]), np.array([s for _, s in found])
        parts = [f"corr {np.corrcoef(res, steal)[0, 1]:+.2f}", f"SD {100 * res.std():.1f}%"]
        for limit in (5.0, 2.0, 1.0, 0.5):
            kept = res[steal <= limit]
            parts.append(f"steal <= {limit}%: SD {100 * kept.std():.1f}% (kept {len(kept) / len(res):.2f})")
        print(f"{path}: n={len(res)} steal mean {steal.mean():.2f}% max {steal.max():.1f}%; "
              + "; ".join(parts))


if __name__ == "__main__":
    main()
