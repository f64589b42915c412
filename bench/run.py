"""``make bench`` (python -m bench.run): every benchmark of teiten itself, with its figures.

Each one also runs alone: python -m bench.overhead, bench.snapshot, bench.orchestration,
bench.monitors, bench.report_size, bench.tpcc, bench.iot_load, bench.interval_coverage,
bench.noise_guard, bench.guard_calibration, bench.stopping_coverage, bench.cores, bench.percentiles,
bench.cli_imports, bench.ccache_builds,
bench.git_builds, bench.aa_installs.
"""

from __future__ import annotations

from bench import (
    aa_installs,
    ccache_builds,
    cli_imports,
    cores,
    git_builds,
    guard_calibration,
    interval_coverage,
    iot_load,
    monitors,
    noise_guard,
    orchestration,
    overhead,
    percentiles,
    report_size,
    snapshot,
    stopping_coverage,
    tpcc,
)

if __name__ == "__main__":
    print("== the command line: how fast --help answers, and what it imports ==", flush=True)
    cli_imports.main()
    print("== harness overhead ==", flush=True)
    overhead.main()
    print("== snapshot restore ==", flush=True)
    snapshot.main()
    print("== orchestration ==", flush=True)
    orchestration.main()
    print("== cores: what one more core buys on this machine ==", flush=True)
    cores.main([])
    print("== monitor overhead ==", flush=True)
    monitors.main()
    print("== report size ==", flush=True)
    report_size.main()
    print("== tpcc: load rate, NOPM/TPM, client cost ==", flush=True)
    tpcc.main()
    print("== iot: the generator's load rate against a plain INSERT ... SELECT ==", flush=True)
    iot_load.main()
    print("== interval coverage: each interval against the level it states ==", flush=True)
    interval_coverage.main()
    print("== repetitions: auto: the printed intervals' coverage after stopping on width ==",
          flush=True)
    stopping_coverage.main([])
    print("== noise guard: its cost (TPS on/off) and what it catches ==", flush=True)
    noise_guard.main()
    print("== noise guard: which foreign load shifts a trial, and which the rule throws away ==",
          flush=True)
    guard_calibration.main()
    print("== latency percentiles: the transaction log's cost, and reading 10 M transactions ==",
          flush=True)
    percentiles.main()
    print("== ccache: a source build cold, and another checkout warm ==", flush=True)
    ccache_builds.main()
    print("== builds from git: a commit cold, its neighbours warm, and asked again ==", flush=True)
    git_builds.main()
    print("== A/A floor of builds: copies of one install measured as builds ==", flush=True)
    aa_installs.main([])
