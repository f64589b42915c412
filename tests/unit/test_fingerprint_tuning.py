"""What decides how noisy a machine is, recorded beside its identity (issue 38, item 5): the
CPU frequency governor, turbo boost, SMT, transparent huge pages, ASLR and virtualisation, read
from /sys and /proc as pyperf's 'system show' reads them; the report warns about the three that
make figures noisier, in en and ja; a change is said as the software's is, never a new machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from teiten.analysis.noise import tuning_notices
from teiten.host import fingerprint
from teiten.words.i18n import notice_text


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")
    return root


def test_a_tuned_for_speed_laptop_and_a_virtual_machine(tmp_path: Path) -> None:
    laptop = _tree(tmp_path / "laptop", {
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave",
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "performance",
        "sys/devices/system/cpu/intel_pstate/no_turbo": "0",
        "sys/devices/system/cpu/smt/control": "on",
        "sys/kernel/mm/transparent_hugepage/enabled": "[always] madvise never",
        "proc/sys/kernel/randomize_va_space": "0",
        "proc/cpuinfo": "processor\t: 0\nflags\t\t: fpu vme sse2",
    })
    assert fingerprint.tuning(laptop) == {
        "cpu_governor": "performance, powersave", "turbo": "on", "smt": "on", "thp": "always",
        "aslr": "off (0)", "virtualization": "none"}
    vm = _tree(tmp_path / "vm", {
        "sys/devices/system/cpu/cpufreq/boost": "0",
        "sys/devices/system/cpu/smt/control": "notsupported",
        "sys/kernel/mm/transparent_hugepage/enabled": "always [madvise] never",
        "proc/sys/kernel/randomize_va_space": "2",
        "proc/cpuinfo": "flags\t\t: fpu sse2 hypervisor lahf_lm",
        "sys/class/dmi/id/sys_vendor": "QEMU",
        "sys/class/dmi/id/product_name": "Standard PC (Q35 + ICH9, 2009)",
    })
    assert fingerprint.tuning(vm) == {
        "cpu_governor": "not exposed", "turbo": "off", "smt": "not supported", "thp": "madvise",
        "aslr": "full (2)", "virtualization": "virtual machine (QEMU Standard PC (Q35 + ICH9, 2009))"}
    assert set(fingerprint.tuning(tmp_path / "nothing").values()) == {"not exposed", "none"}


def test_this_machine_is_read_as_the_kernel_says() -> None:
    found = fingerprint.machine(Path("/"))
    assert set(fingerprint.TUNING) <= set(found)
    aslr = Path("/proc/sys/kernel/randomize_va_space").read_text().strip()
    assert found["aslr"].endswith(f"({aslr})")
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if thp.exists():
        assert f"[{found['thp']}]" in thp.read_text()


@pytest.mark.parametrize("lang", ["en", "ja"])
def test_the_report_warns_about_what_makes_figures_noisier(lang: str) -> None:
    noisy = {"cpu_governor": "schedutil", "turbo": "on", "thp": "always", "smt": "on",
             "aslr": "full (2)", "virtualization": "virtual machine"}
    texts = [notice_text(n, lang) for n in tuning_notices(noisy)]
    assert texts == {
        "en": ["The CPU frequency governor was schedutil, not performance: the CPUs' speed followed "
               "the load, so figures vary more between trials and runs (set it with cpupower "
               "frequency-set -g performance).",
               "Turbo boost was on: the CPUs' speed depended on their temperature and on how many "
               "were busy, so figures vary more between trials and runs.",
               "Transparent huge pages were always on: the kernel's compaction of memory can stall "
               "a trial at any time (madvise or never avoids it)."],
        "ja": ["CPU 周波数ガバナーが performance ではなく schedutil でした。CPU の速度が負荷に応じて変わる"
               "ため、試行間・実行間の測定値のばらつきが大きくなります (cpupower frequency-set -g "
               "performance で設定できます)。",
               "ターボブーストが有効でした。CPU の速度が温度と稼働中の CPU 数に左右されるため、試行間・"
               "実行間の測定値のばらつきが大きくなります。",
               "透過的ヒュージページが常時有効 (always) でした。カーネルのメモリ圧縮がいつでも試行を止める"
               "ことがあります (madvise または never で回避できます)。"]}[lang]
    quiet = {"cpu_governor": "performance", "turbo": "off", "thp": "madvise"}
    assert tuning_notices(quiet) == []
    assert tuning_notices({"cpu_governor": "not exposed", "turbo": "not exposed"}) == []
    assert tuning_notices({}) == [], "a store from before the tuning was recorded"


def test_a_change_of_tuning_is_said_like_the_software_and_is_not_another_machine() -> None:
    before = {"cpu_model": "x", "cpu_logical": 2, "memory_bytes": 1, "arch": "x86_64",
              "kernel": "6.1", "os": "Debian 12", "turbo": "on", "thp": "always"}
    after = {**before, "turbo": "off", "thp": "madvise"}
    assert fingerprint.differences(before, after) == []
    assert fingerprint.software_changes(before, after) == ["turbo on → off", "thp always → madvise"]
    old = {k: v for k, v in before.items() if k not in fingerprint.TUNING}
    assert fingerprint.software_changes(old, after) == [], "an older store has no tuning"
