"""The fleet's logic apart from Buildbot's wiring (master.cfg imports it from beside itself):
its settings, each build's install name, which build is the previous one, the study file each
commit runs, and the study the gate judges. Plain Python and PyYAML (which Buildbot brings).

Never a password: the store's comes from each worker's environment (libpq's PGPASSWORD or
PGPASSFILE), the workers' own from a file beside master.cfg that the administrator makes.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
TESTBED = re.compile(r"^[A-Za-z0-9._-]{1,64}$")  # a worker's name is its testbed's
OVERRIDES = (("TEITEN_FLEET_REPOSITORY", "repository", str), ("TEITEN_FLEET_BRANCH", "branch", str),
             ("TEITEN_FLEET_POLL_INTERVAL", "poll_interval", int))
PREVIOUS, NEW = "previous", "new"  # the study's two servers: the gate's baseline and candidate


class SettingsError(ValueError):
    """A settings file the fleet cannot run with (Buildbot shows it as a configuration error)."""


def load(env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """fleet.yaml beside this file (or TEITEN_FLEET_SETTINGS), with the environment's overrides."""
    path = Path(env.get("TEITEN_FLEET_SETTINGS") or HERE / "fleet.yaml")
    settings = yaml.safe_load(path.read_text())
    for var, key, kind in OVERRIDES:
        if env.get(var):
            settings[key] = kind(env[var])
    for key in ("repository", "branch", "poll_interval", "workers", "store", "study"):
        if not settings.get(key):
            raise SettingsError(f"{path}: give {key}")
    for name in settings["workers"]:
        if not TESTBED.match(str(name)):
            raise SettingsError(f"{path}: worker {name!r} cannot name a testbed (1-64 letters, "
                                "digits, '.', '_' and '-')")
    settings.setdefault("teiten", ["teiten"])
    settings.setdefault("port", "tcp:9989")
    settings["install"] = {"name_prefix": "fleet", "configure": "", "jobs": None,
                           **(settings.get("install") or {})}
    settings["study"] = {"name": "fleet", **settings["study"]}
    return settings


def worker_passwords(names: list[str], env: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Each worker's password from worker-passwords beside master.cfg (``NAME PASSWORD`` lines;
    or the file TEITEN_FLEET_WORKER_PASSWORDS names)."""
    path = Path(env.get("TEITEN_FLEET_WORKER_PASSWORDS") or HERE / "worker-passwords")
    given = dict(line.split(None, 1) for line in path.read_text().splitlines()
                 if line.strip() and not line.startswith("#"))
    lacking = [n for n in names if n not in given]
    if lacking:
        raise SettingsError(f"{path}: no password for worker {', '.join(lacking)}")
    return {n: given[n].strip() for n in names}


def install_name(settings: Mapping[str, Any], commit: str) -> str:
    """The install of a commit on every worker: PREFIX-HASH12."""
    return f"{settings['install']['name_prefix']}-{commit[:12]}"


def install_argv(settings: Mapping[str, Any], repo: str, commit: str) -> list[str]:
    opts = settings["install"]
    return [*settings["teiten"], "install", "--from-git", repo, "--commit", commit,
            "--name", install_name(settings, commit),
            *([f"--configure={opts['configure']}"] if opts["configure"] else []),
            *(["--jobs", str(opts["jobs"])] if opts["jobs"] else [])]


def parent(rc: int, stdout: str, stderr: str) -> dict[str, str]:
    """``git rev-parse --verify --quiet REV^1``: the first parent, or "" for a root commit."""
    return {"parent": stdout.strip() if rc == 0 else ""}


def installed(rc: int, stdout: str, stderr: str) -> dict[str, list[str]]:
    """``teiten installs --format json``: the names of the worker's builds from git."""
    return {"installed": sorted(str(i["name"]) for i in json.loads(stdout or "[]")
                                if i.get("origin") == "source" and i.get("commit"))}


def previous(settings: Mapping[str, Any], props: Mapping[str, Any]) -> tuple[str | None, str]:
    """The install of the commit's first parent on this worker, and why there is none."""
    first = props.get("parent") or ""
    if not first:
        return None, "no previous build: the commit has no parent"
    name = install_name(settings, first)
    if name not in (props.get("installed") or []):
        return None, f"no previous build: its parent {first[:12]} was not built on this worker"
    return name, ""


def study_text(settings: Mapping[str, Any], previous_install: str | None, new_install: str) -> str:
    """The study file of one commit: the previous build and the new one (paired, in blocks),
    or the new one alone when there is no previous build."""
    study = dict(settings["study"])
    servers = ([{"name": PREVIOUS, "install": previous_install}] if previous_install else [])
    servers.append({"name": NEW, "install": new_install})
    text = {"study": study.pop("name"), "servers": servers, **study}
    return yaml.safe_dump(text, sort_keys=False)


def latest_studies(name: str):  # noqa: ANN201 (an extract_fn for SetPropertyFromCommand)
    """``teiten studies --format json``: each testbed's latest finished study named ``name``."""
    def extract(rc: int, stdout: str, stderr: str) -> dict[str, dict[str, int]]:
        latest: dict[str, int] = {}
        for row in json.loads(stdout or "[]"):
            if row["name"] == name and row["state"] == "finished":
                latest[row["testbed"]] = max(latest.get(row["testbed"], 0), int(row["study_id"]))
        return {"studies": latest}
    return extract
