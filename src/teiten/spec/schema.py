"""The JSON Schema of study files (``teiten schema``), for editors and other tools."""

from __future__ import annotations

import json

from teiten.spec.base import json_object
from teiten.spec.study import Study
from teiten.spec.workloads import BUILTIN_WORKLOADS


def json_schema() -> str:
    """The JSON Schema of study files: each workload entry is one of the workloads' own
    options models (``oneOf``), or a built-in workload's bare name."""
    schema = Study.model_json_schema()
    props = json_object(schema, "properties")
    workloads = json_object(props, "workloads")
    # What the loader accepts beyond the models' own types: workloads as bare names, a major
    # given as a number, and $schema (durations as text are the models' own: PositiveSeconds).
    props["$schema"] = {"type": "string", "description": "where an editor finds this schema"}
    workloads["items"] = {"anyOf": [{"type": "string", "enum": list(BUILTIN_WORKLOADS)},
                                    workloads["items"]]}
    install = json_object(schema, "$defs", "ServerSpec", "properties", "install")
    install["anyOf"] = [{"type": "string"}, {"type": "integer"}, {"type": "null"}]
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "teiten study"
    return json.dumps(schema, indent=2)
