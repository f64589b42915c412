"""Study files: the models, YAML loading with line numbers, validation, JSON Schema.

- :mod:`~teiten.spec.base`: what every model shares (closed frozen models, names, durations);
- :mod:`~teiten.spec.servers`: the servers compared and the machines that run pgbench;
- :mod:`~teiten.spec.workloads`: one options model per kind of workload, chosen from the raw
  entry;
- :mod:`~teiten.spec.study`: the study and its matrix;
- :mod:`~teiten.spec.load`: YAML to a validated study, every rejection one line;
- :mod:`~teiten.spec.secrets`: passwords taken out of connection strings, kept in memory only;
- :mod:`~teiten.spec.schema`: the JSON Schema of study files.
"""

from __future__ import annotations

from teiten.spec.base import NAME, parse_duration
from teiten.spec.load import LoadedStudy, load_file, load_text
from teiten.spec.schema import json_schema
from teiten.spec.servers import InitdbOptions, LoadClientSpec, ServerSpec
from teiten.spec.study import NoiseGuardSpec, ProfilePoint, ProfileSpec, Study
from teiten.spec.workloads import (
    BUILTIN_WORKLOADS,
    AccesslogSpec,
    AppSpec,
    BookstoreSpec,
    FreezeSpec,
    FulltextSpec,
    IotSpec,
    PgbenchSpec,
    ScriptRef,
    ScriptSpec,
    SuiteSpec,
    TpccSpec,
    WorkloadSpec,
)

__all__ = [
    "BUILTIN_WORKLOADS", "NAME", "AccesslogSpec", "AppSpec", "BookstoreSpec",
    "FreezeSpec", "FulltextSpec", "InitdbOptions", "IotSpec", "LoadClientSpec", "LoadedStudy",
    "NoiseGuardSpec", "PgbenchSpec", "ProfilePoint", "ProfileSpec", "ScriptRef", "ScriptSpec",
    "ServerSpec", "Study", "SuiteSpec", "TpccSpec", "WorkloadSpec", "json_schema", "load_file", "load_text",
    "parse_duration",
]
