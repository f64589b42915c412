"""The compiler cache of source builds (issue 38, item 4): the environment teiten gives a
build sends the compiler through ccache's links, and the same file compiled in another build
directory of another checkout is a hit. Real gcc and ccache, in a cache of the test's own; the
figures of whole PostgreSQL builds, cold and warm, are bench/ccache_builds.py's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.requirements import missing

from teiten.host import procs
from teiten.installs import ccache

SOURCE = "#include <stdio.h>\nint answer(void) { return 42; }\n"


def _stats(env: dict[str, str]) -> dict[str, int]:
    done = subprocess.run(["ccache", "--print-stats"], env=env, text=True, capture_output=True,
                          check=True)
    return {k: int(v) for k, v in (line.split("\t")[:2] for line in done.stdout.splitlines()
                                   if "\t" in line and line.split("\t")[1].isdigit())}


def test_another_checkout_in_another_build_directory_hits_the_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if ccache.links() is None:
        missing("ccache is not installed (make system installs it)")
    monkeypatch.setenv("CCACHE_DIR", str(tmp_path / "cache"))
    hits, logged = [], []
    for checkout in ("one", "two"):
        source, build = tmp_path / checkout / "src", tmp_path / checkout / "build"
        source.mkdir(parents=True)
        build.mkdir()
        (source / "answer.c").write_text(SOURCE)
        env = procs.build_env({"LC_ALL": "C"})
        env.update(ccache.build_env(env["PATH"], source, build, build / "ccache.log"))
        assert env["PATH"].split(":")[0] == str(ccache.links())
        assert env["CCACHE_BASEDIR"] == str(tmp_path / checkout) and env["CCACHE_NOHASHDIR"] == "1"
        subprocess.run(["gcc", "-O2", "-c", str(source / "answer.c"), "-o", "answer.o"], cwd=build,
                       env=env, check=True)
        assert (build / "answer.o").is_file()
        stats = _stats(env)
        hits.append(stats.get("direct_cache_hit", 0) + stats.get("preprocessed_cache_hit", 0))
        logged.append(ccache.counts(build / "ccache.log"))  # what a build records of itself
    assert hits == [0, 1], hits
    assert logged == [ccache.Counts(hits=0, misses=1), ccache.Counts(hits=1, misses=0)], logged
    assert ccache.counts(tmp_path / "none.log") == ccache.Counts(hits=0, misses=0)


def test_teiten_ccache_off_turns_it_off(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TEITEN_CCACHE", "off")
    assert ccache.links() is None
    assert ccache.build_env(os.environ.get("PATH", ""), tmp_path, tmp_path) == {}
