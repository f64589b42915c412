"""The conventions a study file's tools expect (issue 38, item 5): every built-in study validates
against the JSON Schema that `teiten schema` prints, checked by an independent validator (the
jsonschema package, Draft 2020-12); a `$schema:` key is accepted; and `teiten schema | head -1`
ends quietly, however the reader closes the pipe."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import jsonschema
import pytest
import yaml
from tests.conftest import ROOT, run_cli

from teiten import studies
from teiten.spec import load_text


@pytest.fixture(scope="module")
def schema() -> dict[str, object]:
    done = run_cli("schema")
    assert done.returncode == 0, done.stderr
    printed: dict[str, object] = json.loads(done.stdout)
    jsonschema.Draft202012Validator.check_schema(printed)
    return printed


@pytest.mark.parametrize("name", studies.names())
def test_every_built_in_study_validates_against_the_printed_schema(schema: dict[str, object],
                                                                   name: str) -> None:
    data = yaml.safe_load(studies.path_of(name).read_text())
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in jsonschema.Draft202012Validator(schema).iter_errors(data)]
    assert not errors, errors


def test_the_schema_still_refuses_what_the_loader_refuses(schema: dict[str, object]) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    good = {"study": "s", "servers": [{"name": "a", "install": 17}], "workloads": ["select-only"],
            "duration": "5s", "auto_repetitions": {"budget": "8min"}, "$schema": "teiten.json"}
    assert not list(validator.iter_errors(good))
    for bad in ({**good, "duration": "soon"}, {**good, "duration": 0}, {**good, "colour": "red"},
                {**good, "auto_repetitions": {"budget": -1}}):
        assert list(validator.iter_errors(bad)), bad


def test_a_schema_key_is_accepted_and_not_the_studys() -> None:
    text = ('$schema: "./teiten.schema.json"\nstudy: s\nservers: [{name: a, install: "17"}]\n'
            "workloads: [select-only]\nduration: 5s\n")
    loaded = load_text(text, "<test>")
    assert loaded.study.study == "s" and loaded.study.duration == 5.0
    with pytest.raises(Exception, match="schema"):
        load_text(text.replace('"./teiten.schema.json"', "[not, a, string]"), "<test>")


def test_a_closed_pipe_ends_the_schema_quietly() -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    for _ in range(20):
        proc = subprocess.Popen([sys.executable, "-m", "teiten", "schema"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        assert proc.stdout.readline().strip() == b"{"  # what head -1 reads, then it goes away
        proc.stdout.close()
        errors = proc.stderr.read()
        code = proc.wait(timeout=60)
        assert errors == b"" and code in (0, 141), (code, errors)
