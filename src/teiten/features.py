"""The features teiten has, as analysis asks of them (:class:`teiten.analysis.inputs.Features`):
the kinds of server (``teiten.servers.kinds``), the workloads' words (``teiten.workloads.about``),
the measured-statement suites and the applications. Analysis imports none of them: whoever
reads a study for its report gives it :data:`FEATURES` (``teiten.analysis.gather.study_data``),
and a test may give it others."""

from __future__ import annotations

from collections.abc import Mapping

from teiten.analysis.inputs import Features, KindFacts, SuiteFacts
from teiten.servers import kinds
from teiten.workloads import about, statements
from teiten.workloads.apps import APPS


class _Registered:
    """Each question answered by the registry of the feature it is about."""

    def server_kind(self, kind: str, spec: Mapping[str, object]) -> KindFacts:
        return kinds.stored(kind, spec)

    def about(self, workload: Mapping[str, object], lang: str) -> str:
        return about(workload, lang)

    def suite(self, name: str) -> SuiteFacts:
        return statements.suite(name)

    def variants(self, suite: str, options: dict[str, object]) -> list[str]:
        return statements.variants(suite, options)

    def app_capacity(self, app: str) -> bool:
        return APPS[app].capacity


FEATURES: Features = _Registered()
