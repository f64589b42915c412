"""The docker kind end to end on a real engine (issue 36 item 1; METHODS S5, 2014): a small
``s5-docker`` (the built-in's five servers: the host and the four containers, {container file
system, host directory} x {host network, bridge}) on an image teiten builds from the study's
own PostgreSQL 18, run by the real CLI inside the network namespace of the test's own dockerd
(tests/dockerd.py). No trial fails; the Servers table names the image teiten built and the
engine's storage driver, in en and ja; "How the servers differ" lists the container's file
system and network and what teiten sets because a server runs in a container, and no
install, build, version or setting; nothing is left in the engine or in the clusters.

The update workload runs too (issue 54 item 1): its second repetition restores a host
directory's cluster as root, giving the files to this machine's server account, which the
image's ``postgres`` must be (it was uid 1000 against the host's 101: "could not open file
pg_control: Permission denied" from the second repetition on, which the read workload, never
restored, did not show).

The image is built before the run, outside the namespace: mmdebstrap reaches the Debian
mirror, which the namespace (loopback only) cannot. The run then finds it in the engine, as a
second study of the same install does."""

from __future__ import annotations

import csv
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests import dockerd
from tests.conftest import TEST_CACHE, TEST_HOME, clusters_snapshot, run_cli

from teiten.host import privileges, procs
from teiten.servers.docker import image as docker_image

pytestmark = [pytest.mark.slow, pytest.mark.requires(dockerd.why_not())]

BUILTIN = Path(__file__).resolve().parents[2] / "src/teiten/studies/s5-docker.yaml"
CONTAINERS = ("container-fs-host-net", "container-fs-bridge", "host-fs-host-net", "host-fs-bridge")


@pytest.fixture(scope="module")
def engine() -> Iterator[dockerd.Engine]:
    with dockerd.engine(TEST_CACHE) as made:
        yield made


@pytest.fixture(scope="module")
def finished(engine: dockerd.Engine, pg18: Any) -> dict[str, Any]:  # noqa: ANN401
    work = TEST_HOME / "work" / "e2e-docker"
    procs.run(["rm", "-rf", str(work)], timeout=120)
    work.mkdir(parents=True)
    study = yaml.safe_load(BUILTIN.read_text())
    study.update(study="docker-e2e", workloads=["pgecons-read", {"name": "pgecons-update", "fillfactor": 80}],
                 scale=1, clients=[1],
                 duration="2s", repetitions=2, noise_guard={"enabled": False})
    (work / "s.yaml").write_text(yaml.safe_dump(study, sort_keys=False))
    built = docker_image.build(pg18, ["docker"], procs.build_env(engine.env))
    before = clusters_snapshot("docker-e2e")
    done = run_cli("run", str(work / "s.yaml"), "--store", str(work / "r.db"), "--report",
                   str(work / "report"), env=engine.env, prefix=engine.enter, timeout=900)
    ja = run_cli("report", "--store", str(work / "r.db"), "--out", str(work / "report-ja"),
                 "--lang", "ja")
    with closing(sqlite3.connect(work / "r.db")) as conn:
        conn.row_factory = sqlite3.Row
        trials = [dict(r) for r in conn.execute(
            "SELECT status, server, workload, repetition, error FROM trials ORDER BY order_index")]
    return {"work": work, "run": done, "ja": ja, "trials": trials, "built": built,
            "before": before, "after": clusters_snapshot("docker-e2e"),
            "containers": engine.docker("ps", "--all", "--quiet").stdout.split(),
            "owned": engine.docker("images", "--quiet", "--filter", "label=teiten.owned").stdout.split(),
            "driver": engine.docker("info", "--format", "{{.Driver}}").stdout.strip(),
            "engine_version": engine.docker("version", "--format", "{{.Server.Version}}").stdout.strip()}


def test_every_trial_of_the_five_servers_is_ok(finished: dict[str, Any]) -> None:
    assert finished["run"].returncode == 0, finished["run"].stderr
    assert "Traceback" not in finished["run"].stderr
    by_server: dict[str, list[str]] = {}
    for t in finished["trials"]:
        by_server.setdefault(t["server"], []).append(t["status"])
    assert by_server == {s: ["ok"] * 4 for s in ("host", *CONTAINERS)}, \
        [t for t in finished["trials"] if t["status"] != "ok"]
    # The second repetition of the update workload ran on a restored cluster in every container.
    assert {(t["server"], t["repetition"]) for t in finished["trials"]
            if t["workload"] == "pgecons-update"} == {(s, r) for s in ("host", *CONTAINERS) for r in (1, 2)}


def test_the_images_postgres_is_the_server_account(finished: dict[str, Any],
                                                    engine: dockerd.Engine) -> None:
    """The files a restore gives the host's server account are the container server's own."""
    account = privileges.server_account()
    assert account is not None  # the image is built as root, where the account exists
    said = engine.docker("run", "--rm", "--network", "none", "--entrypoint", "id",
                         finished["built"].tag, "postgres")
    assert said.returncode == 0, said.stderr
    assert said.stdout.startswith(f"uid={account.uid}(postgres) gid={account.gid}(postgres)"), said.stdout


def test_the_servers_table_names_the_image_built_from_the_install_and_the_storage_driver(
        finished: dict[str, Any]) -> None:
    built, driver, version = finished["built"], finished["driver"], finished["engine_version"]
    assert built.tag.startswith("teiten-install/pypi-18.") and driver
    short = built.image_id.removeprefix("sha256:")[:12]
    md = (finished["work"] / "report" / "report.md").read_text()
    assert md.count(f"| Container | image {built.tag} ({short}), built by teiten from this install; "
                    f"storage driver {driver}, Docker engine {version} |") == len(CONTAINERS)
    ja = (finished["work"] / "report-ja" / "report.md").read_text()
    assert ja.count(f"| コンテナ | イメージ {built.tag}（{short}）: teiten がこのインストールから作成; "
                    f"ストレージドライバ {driver}、Docker エンジン {version} |") == len(CONTAINERS)
    # each server's real kind, in the store and in the Servers table
    assert [line for line in md.splitlines() if line.startswith("| Kind |")] == [
        "| Kind | local (a cluster teiten makes on this machine) |",
        *["| Kind | docker (a container on this machine's Docker engine) |"] * len(CONTAINERS)]
    with closing(sqlite3.connect(finished["work"] / "r.db")) as conn:
        kinds = [k for (k,) in conn.execute("SELECT kind FROM servers ORDER BY position")]
    assert kinds == ["local", *["docker"] * len(CONTAINERS)]


def test_only_the_container_its_file_system_and_its_network_differ(finished: dict[str, Any]) -> None:
    with open(finished["work"] / "report" / "tables" / "differences.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert {r["what"]: r["cause"] for r in rows} == {
        "docker.network": "declared", "docker.volume": "declared",
        "listen_addresses": "place", "logging_collector": "place"}, rows
    by = {r["what"]: r for r in rows}
    assert [by["docker.volume"][s] for s in ("host", *CONTAINERS)] == [
        "—", "container", "container", "host", "host"]
    assert [by["docker.network"][s] for s in ("host", *CONTAINERS)] == [
        "—", "host", "bridge", "host", "bridge"]
    # the bridge's containers listen on their own address; the rest on loopback, as the host
    assert [by["listen_addresses"][s] for s in ("host", *CONTAINERS)] == [
        "127.0.0.1", "127.0.0.1", "*", "127.0.0.1", "*"]
    md = (finished["work"] / "report" / "report.md").read_text()
    assert ("| logging\\_collector | on | off | off | off | off | how teiten runs a server where it "
            "is (a container logs to the engine, and on a bridge it listens on its own address) |") in md


def test_nothing_is_left_in_the_engine_or_in_the_clusters(finished: dict[str, Any]) -> None:
    assert finished["containers"] == []
    assert finished["owned"] == []  # the loaded images a run commits are removed with it
    assert finished["after"] == finished["before"]


def test_a_second_build_finds_the_image_in_the_engine(finished: dict[str, Any],
                                                       engine: dockerd.Engine, pg18: Any) -> None:  # noqa: ANN401
    again = docker_image.build(pg18, ["docker"], procs.build_env(engine.env))
    assert again.tag == finished["built"].tag and again.image_id == finished["built"].image_id
    assert again.seconds == 0.0
