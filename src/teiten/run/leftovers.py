"""What a killed run leaves behind, found and removed by ``teiten resume``: running
postmasters and Pgpool-IIs, socket, WAL and tablespace directories, cgroups, network
namespaces, containers, and the clusters on ssh hosts. Only what teiten marked as its own
is removed."""

from __future__ import annotations

from pathlib import Path

import psutil

from teiten.host import cpus, netns, paths, remote, safefs
from teiten.model.errors import TeitenError
from teiten.servers import kinds
from teiten.servers.cluster import processes_in
from teiten.servers.local.topology import kill_leftover_pgpool
from teiten.store import Store


def clean(store: Store, study_id: int) -> list[str]:
    """Stop servers that a killed run left behind and remove its working directories,
    here and on the study's ssh hosts. What is removed outside a working directory is what
    teiten noted there when it made it (:func:`teiten.host.paths.remember`), never what the
    server's own files name; nothing is followed through a link the server could plant."""
    notes = []
    specs = [dict(r.spec) for r in store.servers(study_id)]
    for workdir in store.workdirs(study_id):
        if safefs.exists(workdir):
            try:
                notes += _clean_here(workdir)
            except (TeitenError, OSError, RecursionError) as exc:
                notes.append(f"could not clean {workdir} completely: {exc}")
            notes += [f"removed cgroup {g}" for g in cpus.remove_stale(workdir.name + "-")]
            notes += [f"removed network namespace {n}" for n in netns.remove_stale(workdir.name + "-")]
        notes += kinds.leftovers(specs, workdir.name)
        store.forget_workdir(study_id, workdir)
    return notes + remote.remove_stale()


def _clean_here(workdir: Path) -> list[str]:
    notes = []
    # safe: the run's directory is teiten's, and so are the cluster roots looked into
    entries = [p for p in sorted(workdir.iterdir()) if not p.name.startswith(".")]
    roots = [p for p in entries if p.is_dir() and safefs.server_can_replace(p) is None]
    notes += [f"left {p}: the server account could replace it (a run directory from before the root boundary)"
              for p in entries if p.is_dir() and p not in roots]
    # safe: cluster roots that the server account cannot replace (checked above)
    nodes = [n for root in roots for n in sorted(root.glob("node*"))]
    instances = [i for root in roots for i in sorted(root.glob("pgpool*"))]
    for instance in instances:
        notes += kill_leftover_pgpool(instance)
    for data_dir in [d / "data" for d in roots + nodes]:
        if not data_dir.is_dir() or data_dir.is_symlink():
            continue
        for proc in processes_in(data_dir):
            try:
                proc.kill()
                notes.append(f"killed leftover server process {proc.pid} in {data_dir}")
            except psutil.NoSuchProcess:
                continue
        psutil.wait_procs(processes_in(data_dir), timeout=10)
    made = [m for d in [workdir, *roots, *nodes, *instances] for m in paths.remembered(d)]
    for path in made:
        if paths.remove_owned(path):
            notes.append(f"removed {path}")
    if paths.remove_owned(workdir):
        notes.append(f"removed {workdir}")
    return notes
