"""Where pgbench runs against where its backend runs, and what it does to a trial's noise
(python -m bench.client_placement; as root, which runs PostgreSQL as the server account).

One PostgreSQL cluster (``--major``, default 17) of pgbench scale 10, select-only at 1 client for
``--seconds`` s, ``--runs`` times per placement, restarted (and its table prewarmed) before every
run, the placements interleaved in turn:

- ``free``: the scheduler places the server and pgbench;
- ``apart``: the server on CPU 0, pgbench on CPU 1 (taskset);
- ``together``: both on CPU 0;
- ``fixed-layout``: both on CPU 0, the server started without address-space randomisation
  (``setarch -R``), to see whether the noise from start to start is the programs' layout
  (``--only together,fixed-layout``; it was not: docs/STATISTICS.md).

``--update`` runs pgbench's simple-update (its data then grows from run to run) instead of
select-only.

Printed: each placement's mean TPS and the coefficient of variation of its runs. On the 2-CPU
guest this was written on, together ran at 32,283 TPS with a CV of 1.5% and free at 10,014 with
5.7% (docs/STATISTICS.md, "Designing the trial against the noise"): a wakeup across the guest's
CPUs costs two thirds of a transaction, and whether the pair stays together varies from start
to start. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import pwd
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from bench.common import install

PLACEMENTS = {"free": ([], []), "apart": (["taskset", "-c", "0"], ["taskset", "-c", "1"]),
              "together": (["taskset", "-c", "0"], ["taskset", "-c", "0"]),
              "fixed-layout": (["taskset", "-c", "0", "setarch", os.uname().machine, "-R"],
                               ["taskset", "-c", "0"])}
PORT = "5497"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--major", default="17")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--only", default="free,apart,together", help="the placements, by name")
    parser.add_argument("--update", action="store_true", help="simple-update instead of select-only")
    args = parser.parse_args(argv)
    unknown = [n for n in args.only.split(",") if n not in PLACEMENTS]
    if unknown:
        parser.error(f"--only: no placement {', '.join(unknown)}; there are {', '.join(PLACEMENTS)}")
    chosen = {name: PLACEMENTS[name] for name in args.only.split(",")}
    if os.cpu_count() is None or (os.cpu_count() or 0) < 2:
        raise SystemExit("this machine has one CPU: nothing to place apart")
    bindir = install(args.major).bindir
    account = pwd.getpwnam("postgres") if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())

    def run(argv: list[str], given: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, user=account.pw_uid, group=account.pw_gid, capture_output=True,
                              text=True, check=True, input=given)

    with tempfile.TemporaryDirectory(prefix="bench-placement-") as tmp:
        os.chown(tmp, account.pw_uid, account.pw_gid)
        data, sock = Path(tmp) / "data", tmp
        run([str(bindir / "initdb"), "-D", str(data), "-A", "trust"])
        # The data directory is the server account's: it appends the settings itself, so that
        # root never writes through a path another account can change.
        run(["tee", "-a", str(data / "postgresql.conf")],
            f"port={PORT}\nunix_socket_directories='{sock}'\nshared_buffers=512MB\n")
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-w", "-l", f"{tmp}/log"]
        conn = ["-h", sock, "-p", PORT, "postgres"]
        run([*pg_ctl, "start"])
        try:
            run([str(bindir / "pgbench"), "-i", "-s", "10", "-q", *conn])
            run([str(bindir / "psql"), "-qc", "CREATE EXTENSION pg_prewarm", *conn])
        finally:
            run([*pg_ctl, "stop", "-m", "fast"])
        tps: dict[str, list[float]] = {p: [] for p in chosen}
        for i in range(args.runs):
            for name in (list(chosen) if i % 2 == 0 else list(chosen)[::-1]):
                server, client = chosen[name]
                run([*server, *pg_ctl, "start"])
                try:
                    run([str(bindir / "psql"), "-qc", "SELECT pg_prewarm('pgbench_accounts'), "
                         "pg_prewarm('pgbench_accounts_pkey')", *conn])
                    out = run([*client, str(bindir / "pgbench"), "-N" if args.update else "-S", "-c1", "-T",
                               str(args.seconds), *conn]).stdout
                finally:
                    run([*pg_ctl, "stop", "-m", "fast"])
                found = re.search(r"tps = ([\d.]+)", out)
                assert found, out
                tps[name].append(float(found.group(1)))
    for name, values in tps.items():
        mean = statistics.mean(values)
        print(f"{name:>8}: {mean:8.0f} TPS, CV {100 * statistics.stdev(values) / mean:4.1f}% "
              f"over {len(values)} runs ({' '.join(f'{v:.0f}' for v in values)})")


if __name__ == "__main__":
    main()
