"""Servers teiten does not control, reached by the connection string the study gives
(servers/external.py)."""

from __future__ import annotations

from teiten.host.probe import parse_conninfo
from teiten.model.errors import ServerError, UserError
from teiten.servers.base import Server
from teiten.servers.external import ExternalServer, ask
from teiten.servers.kind import Kind, Problem, Request
from teiten.spec import ServerSpec


class External(Kind):
    name = "external"
    field = "external"
    password = True  # a client carries it: run as the client account
    controlled = False
    loads_by_sql = True
    origin = "external"

    def build(self, request: Request) -> Server:
        spec = request.spec
        assert spec.external is not None
        password = request.secrets.password(spec.external) if request.secrets else None
        return ExternalServer(spec, request.install, password=password)

    def unanswered(self, spec: ServerSpec, password: str | None) -> str | None:
        try:
            ask(spec, password)
        except ServerError as exc:
            return str(exc)
        return None

    def problem(self, spec: ServerSpec) -> Problem | None:
        assert spec.external is not None
        try:
            parse_conninfo(spec.external)
        except UserError as exc:
            return Problem("external", str(exc))
        return None


KIND = External()
