"""What the report says of the servers is what the study file said (issue 54, item 13): a key
the file did not write (a guest's boot_timeout, filled in by the model) is teiten's default, not
"declared by the study"; a guest's CPUs are its vCPUs, not "all (not confined)"; a size is
written as the file writes it (1GB), not as a list of bytes. A store of a host, a guest of
1 vCPU and 1GB (described as a run describes it) and a cluster held to 1GB of memory, saved as
a run saves it, read by `teiten report` in en and ja."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.truestores import build_study

from teiten.analysis.model import ServerInfo
from teiten.report.tables import server_rows
from teiten.servers import kinds

STUDY = """study: vm-truth
servers:
  - {name: host, install: "18"}
  - {name: guest, install: "18", vm: {vcpus: 1, memory: 1GB}}
  - {name: small, install: "18", limits: {memory: 1GB}}
workloads:
  - pgecons-read
scale: 1
clients: [1]
duration: 1s
repetitions: 3
seed: 1
"""
# What the guest's server said of itself when it ran (servers/vm/server.py, VmHost.describe).
GUEST = {"host": {"vm": {"accelerator": "kvm", "emulated": False, "vcpus": 1,
                         "memory_bytes": 1 << 30, "pinned_cpus": "1",
                         "network": "qemu user-mode, loopback port forwards"}}}

SAID = {
    "en": [
        "The study compares limits.memory (— / — / 1GB); vm.memory (— / 1GB / —); vm.vcpus "
        "(— / 1 / —): what its file sets differently between the servers.",
        "| limits.memory | — | — | 1GB | declared by the study |",
        "| vm.memory | — | 1GB | — | declared by the study |",
        "| vm.vcpus | — | 1 | — | declared by the study |",
        "| vm.accelerator | — | kvm | — | teiten's default (the study file does not set it) |",
        "| vm.boot\\_timeout | — | 300.0 | — | teiten's default (the study file does not set it) |",
        "| CPUs | 1 vCPU (guest), pinned to CPU 1 of this machine |",
    ],
    "ja": [
        "比較する要因 (試験ファイルがサーバごとに変えたもの): limits.memory (— / — / 1GB); "
        "vm.memory (— / 1GB / —); vm.vcpus (— / 1 / —)",
        "| limits.memory | — | — | 1GB | 試験で指定 |",
        "| vm.accelerator | — | kvm | — | teiten の既定値（試験ファイルでは指定なし） |",
        "| vm.boot\\_timeout | — | 300.0 | — | teiten の既定値（試験ファイルでは指定なし） |",
        "| CPU | 1 vCPU（ゲスト）、このマシンの CPU 1 に固定 |",
    ],
}


def test_the_report_says_what_the_study_file_wrote(tmp_path: Path) -> None:
    store = build_study(tmp_path / "s.db", STUDY, lambda t: 100.0 + t.repetition,
                        descriptions={"guest": GUEST})
    for lang, lines in SAID.items():
        done = run_cli("report", "--store", str(store), "--out", str(tmp_path / lang), "--lang", lang)
        assert done.returncode == 0, done.stderr
        report = (tmp_path / lang / "report.md").read_text()
        for line in lines:
            assert line in report.splitlines(), (line, report)
        guest = report.split("### guest", 1)[1].split("### ", 1)[0]
        assert "not confined" not in guest and "制限なし" not in guest
        assert "boot_timeout (" not in report and "1073741824" not in report


def _cpus(kind: str, spec: dict[str, object], description: dict[str, object], lang: str) -> str:
    said = kinds.stored(kind, spec).cpus(spec, description)
    info = ServerInfo(name="g", kind=kind, version="18.1", origin="pypi", bindir="/x", data_checksums=None,
                      cpus_said=(said[0], tuple(sorted(said[1].items()))) if said else None)
    return dict(server_rows(info, lang))[{"en": "CPUs", "ja": "CPU"}[lang]]


def test_a_guests_cpus_are_its_vcpus_before_and_after_it_ran() -> None:
    two = {"name": "g", "install": "18", "vm": {"vcpus": 2, "memory": 1 << 30, "cpus": None}}
    # Not yet described (the study has not run it): its vCPUs, and no pinning to name.
    assert _cpus("vm", two, {}, "en") == "2 vCPUs (guest)"
    assert _cpus("vm", two, {}, "ja") == "2 vCPU（ゲスト）"
    ran = {"host": {"vm": {"pinned_cpus": "2-3"}}}
    assert _cpus("vm", two, ran, "en") == "2 vCPUs (guest), pinned to CPUs 2-3 of this machine"
    assert _cpus("vm", two, ran, "ja") == "2 vCPU（ゲスト）、このマシンの CPU 2-3 に固定"
    # The CPUs the study file chose, before the run.
    chosen = {**two, "vm": {"vcpus": 1, "memory": 1 << 30, "cpus": "3"}}
    assert _cpus("vm", chosen, {}, "en") == "1 vCPU (guest), pinned to CPU 3 of this machine"
    # A cluster of this machine keeps its words.
    assert _cpus("local", {"name": "h", "install": "18"}, {}, "en") == "all (not confined)"
