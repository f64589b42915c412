"""A VM guest's network: qemu's user-mode network against a tap device on a bridge (issue 57,
item 9; python -m bench.vm_network, as root, which builds and boots the guests).

Two guests of the same image (PostgreSQL ``--major``, default 17, built by
teiten.servers.vm.image: cached under TEITEN_HOME/vm) run at once, ``accelerator`` tcg unless
``--accel kvm``, each with 1 vCPU pinned to this machine's last CPU: one on ``user`` (pgbench
reaches it through a loopback port forward of qemu's user-mode network), one on ``tap`` (a
tap device on a bridge in a network namespace teiten makes; pgbench reaches the guest's own
address). Each guest runs its own cluster (initdb in the guest, trust for this machine's
address, pgbench scale 1). Then, ``--runs`` times, the two networks in turn (which goes first
alternates), pgbench from this machine at 1 client for ``--seconds`` s:

- ``round trip``: a script of ``SELECT 1`` (no table: the network, the protocol and the
  backend's loop; pgbench's latency average is one round trip);
- ``select-only``: pgbench -S (the read transaction), its TPS and latency.

Printed: each run, then per network the median of each figure and the ratio of tap to user.
Under tcg the guest is emulated: the figures show what the user-mode network costs on top of
an emulated guest, never how fast a VM is. Nothing is asserted.

On the 2-CPU machine this was written on (no hardware KVM: tcg), two runs
(bench/results/vm_network-2026-12-07.txt). Quiet (load average about 1.3), 6 runs of 5 s: the
SELECT 1 round trip had a median of 0.539 ms through user-mode and 0.522 ms on the tap
(tap/user 0.968), select-only 1,041 and 1,047 TPS (1.005). Shared with other work (load
average 8 to 10), 3 runs: 2.04 and 2.19 ms (1.07), 227 and 245 TPS (1.08), the runs of one
network ranging more widely than the networks differ. Under emulation the guest's own CPU
hides most of what qemu's copying adds (about 3% of a round trip here); what the tap removes
from a VM's figures is to be measured with -accel kvm, where a guest boots.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import tempfile
from contextlib import ExitStack
from pathlib import Path

from bench.common import install
from teiten.installs import Install
from teiten.servers.vm import image as vm_image
from teiten.servers.vm import qemu as vm_qemu

NETWORKS = ("user", "tap")
PORT = 5432
DATA = "data"  # in the guest account's home


def start_cluster(guest: vm_qemu.Guest, inst: Install) -> tuple[str, int]:
    """A cluster in the guest, listening on every address and trusting this machine's; where
    this machine reaches it."""
    guest.run([str(inst.binary("initdb")), "-D", DATA, "-A", "trust", "-U", "postgres", "--no-sync"],
              timeout=600)
    guest.run(["sh", "-c", f"echo 'host all all 0.0.0.0/0 trust' >> {DATA}/pg_hba.conf"])
    guest.run([str(inst.binary("pg_ctl")), "-D", DATA, "-w", "-t", "300", "-l", "server.log",
               "-o", f"-c listen_addresses='*' -c port={PORT} -c unix_socket_directories=/tmp",
               "start"], timeout=360)
    if guest.address is not None:
        return guest.address, PORT
    return "127.0.0.1", guest.forward(PORT)


def pgbench(inst: Install, where: tuple[str, int], *args: str, timeout: float = 600) -> str:
    host, port = where
    done = subprocess.run([str(inst.binary("pgbench")), "-h", host, "-p", str(port), "-U", "postgres",
                           *args, "postgres"], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"pgbench {' '.join(args)} against {host}:{port} failed: {done.stderr.strip()}")
    return done.stdout


def figures(output: str) -> tuple[float, float]:
    """pgbench's TPS (without the initial connection) and latency average (ms)."""
    tps = re.search(r"^tps = ([\d.]+)", output, re.M)
    latency = re.search(r"^latency average = ([\d.]+) ms", output, re.M)
    if tps is None or latency is None:
        raise SystemExit(f"pgbench printed no tps or latency: {output[-400:]}")
    return float(tps.group(1)), float(latency.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--major", default="17")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--accel", default="tcg", choices=vm_qemu.ACCELERATORS)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        raise SystemExit("run as root: the guests' image, the tap network and qemu need it")
    inst = install(args.major)
    image = vm_image.build(inst)
    cpu = max(os.sched_getaffinity(0))
    results: dict[str, dict[str, list[float]]] = {n: {"rtt_ms": [], "select_tps": [], "select_ms": []}
                                                   for n in NETWORKS}
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "select1.sql"
        script.write_text("SELECT 1;\n")
        os.chmod(tmp, 0o755)
        where = {}
        for network in NETWORKS:
            guest = vm_qemu.boot(image, name=f"bench-{network}-{os.getpid()}", accel=args.accel,
                                 memory_mb=1024, deadline=600, pin=[[cpu]], network=network)
            stack.callback(guest.stop)
            where[network] = start_cluster(guest, inst)
            pgbench(inst, where[network], "-i", "-s", "1", "-q")
            print(f"{network}: guest {guest.name} reached at {where[network][0]}:{where[network][1]}",
                  flush=True)
        for run in range(args.runs):
            for network in NETWORKS if run % 2 == 0 else NETWORKS[::-1]:
                _tps, rtt = figures(pgbench(inst, where[network], "-n", "-c", "1", "-T", str(args.seconds),
                                            "-f", str(script)))
                tps, latency = figures(pgbench(inst, where[network], "-n", "-S", "-c", "1",
                                               "-T", str(args.seconds)))
                for key, value in (("rtt_ms", rtt), ("select_tps", tps), ("select_ms", latency)):
                    results[network][key].append(value)
                print(f"  run {run + 1} {network:4}: SELECT 1 round trip {rtt:.3f} ms; "
                      f"select-only {tps:.1f} tps, {latency:.3f} ms", flush=True)
    med = {n: {k: statistics.median(v) for k, v in r.items()} for n, r in results.items()}
    emulated = " (emulated: not a measurement of a VM)" if args.accel == "tcg" else ""
    print(f"medians over {args.runs} runs of {args.seconds} s, 1 client, -accel {args.accel}{emulated}:")
    for network in NETWORKS:
        m = med[network]
        print(f"  {network:4}: round trip {m['rtt_ms']:.3f} ms; select-only {m['select_tps']:.1f} tps, "
              f"{m['select_ms']:.3f} ms")
    print(f"  tap/user: round trip {med['tap']['rtt_ms'] / med['user']['rtt_ms']:.3f}, "
          f"select-only TPS {med['tap']['select_tps'] / med['user']['select_tps']:.3f}")


if __name__ == "__main__":
    main()
