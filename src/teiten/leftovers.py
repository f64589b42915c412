"""What a killed run leaves behind, found and removed by ``teiten resume``: running
postmasters and Pgpool-IIs, socket, WAL and tablespace directories, cgroups, network
namespaces, containers, and the clusters on ssh hosts. Only what teiten marked as its own
is removed."""

from __future__ import annotations

import json
from pathlib import Path

import psutil

from teiten import cpus, netns, paths, remote
from teiten.servers import docker, ssh
from teiten.servers.cluster import processes_in
from teiten.servers.topology import kill_leftover_pgpool
from teiten.store import Store


def clean(store: Store, study_id: int) -> list[str]:
    """Stop servers that a killed run left behind and remove its working directories,
    here and on the study's ssh hosts."""
    notes = []
    specs = [json.loads(r["spec_json"]) for r in store.servers(study_id)]
    has_docker = any(spec.get("docker") for spec in specs)
    for workdir in store.workdirs(study_id):
        if workdir.exists():
            for pid_file in sorted(workdir.glob("*/pgpool*/pgpool.pid")):
                notes += kill_leftover_pgpool(pid_file)
            for data_dir in sorted([*workdir.glob("*/data"), *workdir.glob("*/node*/data")]):
                outside = _outside_dirs(data_dir)
                for proc in processes_in(data_dir):
                    try:
                        proc.kill()
                        notes.append(f"killed leftover server process {proc.pid} in {data_dir}")
                    except psutil.NoSuchProcess:
                        continue
                psutil.wait_procs(processes_in(data_dir), timeout=10)
                for owned in outside:
                    if paths.remove_owned(owned):
                        notes.append(f"removed {owned}")
            for sock in _socket_dirs(workdir):
                paths.remove_owned(sock)
            if paths.remove_owned(workdir):
                notes.append(f"removed {workdir}")
            notes += [f"removed cgroup {g}" for g in cpus.remove_stale(workdir.name + "-")]
            notes += [f"removed network namespace {n}" for n in netns.remove_stale(workdir.name + "-")]
            if has_docker:
                notes += [f"removed {d}" for d in docker.remove_stale(workdir.name)]
        for spec in specs:
            if spec.get("ssh"):
                notes += ssh.remove_leftovers(spec["name"], spec["ssh"], spec.get("ssh_config"),
                                              workdir.name)
        store.forget_workdir(study_id, workdir)
    return notes + remote.remove_stale()


def _outside_dirs(data_dir: Path) -> list[Path]:
    """The WAL and tablespace directories of a cluster that live outside its data directory:
    teiten made each in a marked directory of its own, the parent of the link's target."""
    links = [data_dir / "pg_wal", data_dir / "pg_xlog", *sorted((data_dir / "pg_tblspc").glob("*"))]
    found = [link.resolve().parent for link in links if link.is_symlink()]
    if data_dir.parent.is_symlink():  # a cluster in the server's 'directory'
        found.append(data_dir.parent.resolve())
    return found


def _socket_dirs(workdir: Path) -> list[Path]:
    found = []
    for conf in workdir.glob("*/data/teiten-runtime.conf"):
        for line in conf.read_text().splitlines():
            if line.startswith("unix_socket_directories"):
                found.append(Path(line.split("=", 1)[1].strip().strip("'")))
    return found
