"""The tpcc workload: load rate, throughput and pgbench's own CPU per transaction.

- Load rate: warehouses per minute (the SQL files, the set-based loaders on as many
  connections as there are CPUs, the keys, VACUUM ANALYZE) at 2 and 10 warehouses, and the
  size it makes (against the estimate that sizes shared_buffers).
- Throughput: NOPM and TPM at 2 warehouses, 4 clients, 60 s measured after a 5 s ramp-up,
  measured exactly as ``teiten run`` does (:class:`teiten.workloads.apps.AppTrial`).
- Client cost: pgbench's user + system CPU per transaction, from the resource usage of
  the finished child process.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from bench.common import install, local_server
from teiten.drivers import pgbench
from teiten.host import client_account, paths
from teiten.spec import load_text
from teiten.workloads import Workload, apps, resolve

STUDY = """
study: bench
servers: [{{name: pg, install: "18"}}]
workloads: [{{name: tpcc, warehouses: {warehouses}, rampup: {rampup}}}]
"""


def tpcc(warehouses: int, rampup: float = 5) -> Workload:
    [w] = resolve(load_text(STUDY.format(warehouses=warehouses, rampup=rampup), "bench.yaml"))
    return w


def load_rate(major: str, warehouses: int) -> float:
    w = tpcc(warehouses)
    with local_server(install(major), w, max_clients=4) as server:
        t0 = time.monotonic()
        server.prepare(w)
        whole = time.monotonic() - t0
        took = server.loads[w.key]
        cluster = server.slots[w.key].cluster
        cluster.start(cluster.root / "logs" / "size")
        with cluster.connect(w.database) as conn:
            row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        cluster.stop()
    size = int(row[0]) if row else 0
    load = sum(took.values())
    steps = ", ".join(f"{k.removesuffix('_s')} {v:.1f} s" for k, v in took.items())
    print(f"  {warehouses} warehouses: loaded in {load:.1f} s ({steps}); prepare with initdb and "
          f"snapshot {whole:.1f} s; {size / 2**20:.0f} MB (estimate {w.data_bytes() / 2**20:.0f} MB)",
          flush=True)
    return warehouses / (load / 60)


def throughput(major: str, *, clients: int, seconds: float, rounds: int) -> list[dict[str, float]]:
    w = tpcc(2)
    out = []
    with local_server(install(major), w, max_clients=clients) as server:
        server.prepare(w)
        for i in range(rounds):
            endpoint = server.begin_trial(w, f"bench-{i}", prewarm=True)
            log_dir = paths.make_owned(server.run_dir / f"log-{i}", "benchmark pgbench log")
            client_account.hand_over(log_dir)  # pgbench writes it as the client account
            try:
                app = apps.AppTrial(w, endpoint.conninfo(), trial_id=f"bench-{i}", duration_s=seconds,
                                    clients=clients, log_dir=log_dir)
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                app.start()
                run = pgbench.run(server.install, endpoint, w, clients=clients, threads=max(1, clients // 2),
                                  duration_s=app.total_s, extra=app.pgbench_args())
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                _, d, error = app.finish(run.output)
            finally:
                paths.remove_owned(log_dir)
                server.end_trial()
            if error:
                raise SystemExit(f"round {i + 1} failed: {error}")
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            us_per_tx = cpu / run.output.transactions * 1e6
            out.append({"nopm": d.nopm or 0.0, "tpm": d.tpm or 0.0, "tps": d.tps or 0.0,
                        "client_us": us_per_tx})
            print(f"  round {i + 1}: NOPM {d.nopm or 0:,.0f}, TPM {d.tpm or 0:,.0f} (pgbench's count "
                  f"{d.tpm_pgbench or 0:,.0f}), {d.tps or 0:.0f} tps, pgbench CPU {us_per_tx:.1f} us per "
                  "transaction", flush=True)
    return out


def main(major: str = "18", seconds: float = 60, rounds: int = 3, clients: int = 4) -> None:
    rates = {n: load_rate(major, n) for n in (2, 10)}
    for n, rate in rates.items():
        print(f"load rate at {n} warehouses: {rate:.1f} warehouses per minute")
    runs = throughput(major, clients=clients, seconds=seconds, rounds=rounds)
    for key, label in (("nopm", "NOPM"), ("tpm", "TPM"), ("client_us", "pgbench CPU us per transaction")):
        values = [r[key] for r in runs]
        print(f"{label} at 2 warehouses, {clients} clients, {seconds:g} s: median "
              f"{statistics.median(values):,.1f} (min {min(values):,.1f}, max {max(values):,.1f}, "
              f"n={len(values)})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--major", default="18")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=4)
    a = parser.parse_args()
    main(a.major, a.seconds, a.rounds, a.clients)
