"""A study enters the store: its spec, the installs it resolved and its whole plan, saved in
one transaction before any trial runs (:func:`create`); and on resume, the very installs it
resolved then (:func:`install_for`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, replace
from pathlib import Path

import teiten
from teiten import installs, workloads
from teiten.host import cpus, fingerprint, paths
from teiten.installs import Install, Resolution, discover
from teiten.model.errors import UserError
from teiten.model.results import now
from teiten.model.studyrecord import Placement, Resolved
from teiten.run.check import CheckedStudy
from teiten.run.plan import plan
from teiten.servers import kinds
from teiten.spec import ServerSpec
from teiten.store import Store
from teiten.store.address import StoreAddress


def create(checked: CheckedStudy, address: StoreAddress, source: str) -> tuple[Store, int]:
    """Save the study and its whole plan in the store, before any trial runs."""
    loaded = checked.loaded
    study = loaded.study
    trials = plan(study, workloads.variants(study))
    servers = []
    for _, s in study.server_matrix():
        placed: dict[str, object] = {}
        if s.cores is not None or s.cpus is not None:
            chosen = cpus.parse_list(s.cpus) if s.cpus else cpus.choose(s.cores or 0)
            pinned = cpus.client_cpus(study.client_cpus, chosen)
            placed = {"placement": asdict(Placement(cpus.format_list(chosen), len(chosen),
                                                    cpus.format_list(pinned) if pinned else "any"))}
        res = checked.installs.get(s.name)
        resolved = {"resolved": _resolved(res)} if res is not None else {}
        servers.append((s.name, kinds.of(s).name, json.dumps({**server_spec(s), **placed, **resolved})))
    client = checked.client
    spec_json = json.dumps({"study": study.model_dump(mode="json"),
                            # The one pgbench that drives every server (resume takes the same).
                            "pgbench": {"ref": client.ref, "version": client.version,
                                        "bindir": str(client.install.bindir) if client.install else None},
                            "workloads": [w.to_json() for w in checked.workloads],
                            "omitted": [{"server": n, "reason": r} for n, r in checked.omitted]})
    store = Store.open(address, create=True)
    study_id = store.create_study(
        name=study.study, source=source, spec_yaml=loaded.text, spec_json=spec_json,
        seed=study.seed, created_at=now(), fingerprint=fingerprint.machine(paths.home()),
        teiten_version=teiten.__version__, servers=servers, trials=trials)
    return store, study_id


def _resolved(res: Resolution) -> dict[str, object]:
    """A server's resolved install as the store keeps it (studyrecord.Resolved, in its order):
    ``build`` only for a source build."""
    built = build_of(res.install)
    return {"ref": res.ref, "version": res.version, "origin": res.origin,
            "bindir": str(res.install.bindir) if res.install else None,
            **({"build": built} if built is not None else {})}


def server_spec(server: ServerSpec) -> dict[str, object]:
    """A server's entry as the store keeps it: every field, defaults included, and under
    ``written`` the dotted keys the study file set (or the study's axes of cores and limits set
    for it): what the report alone calls declared by the study, where a default the model
    filled in (a guest's boot_timeout) is not."""
    return {**server.model_dump(mode="json"),
            "written": sorted(_leaves(server.model_dump(mode="json", exclude_unset=True)))}


def _leaves(value: Mapping[str, object], prefix: str = "") -> list[str]:
    out = []
    for key, v in value.items():
        out += _leaves(v, f"{prefix}{key}.") if isinstance(v, dict) and v else [f"{prefix}{key}"]
    return out


def build_of(install: Install | None) -> dict[str, object] | None:
    """The identity of a source build, as its teiten-install.json says: {"key": its build key,
    "git": {repo, ref, commit, subject, committed_at, position, tree}} ("git" only for a
    build of a commit, ``teiten install --from-git``); None for any other install."""
    if install is None or install.origin != "source":
        return None
    info = discover.read_metadata(install.bindir.parent) or {}
    key, git = info.get("key"), info.get("git")
    if not key:
        return None
    return {"key": key, **({"git": git} if isinstance(git, dict) else {})}


def install_for(name: str, install: str | None, resolved: Resolved | None) -> Install:
    """The install a stored server (``name``, its study file's ``install`` and the install it
    ``resolved``) or the study's pgbench used; on resume, the very same bindir."""
    if resolved is not None and resolved.bindir:
        res = installs.resolve(resolved.bindir)
        if res.version != resolved.version:
            raise UserError(f"server {name}: {resolved.bindir} is now "
                            f"PostgreSQL {res.version}, the study ran {resolved.version}")
        found = installs.materialise(res)
        # Reached by its path, it keeps the origin it was resolved from (a store from before
        # origins were recorded: the one teiten's cache wrote with it).
        bindir = Path(resolved.bindir)
        origin = resolved.origin or (discover.read_metadata(bindir.parent) or {}).get("origin")
        return replace(found, origin=str(origin)) if origin else found
    ref = (resolved.version if resolved is not None else None) or install
    if ref is None:
        raise UserError(f"server {name}: its study records no install to run it with")
    return installs.materialise(installs.resolve(ref))
