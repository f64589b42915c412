"""Servers teiten does not control, reached by the connection string the study gives
(servers/external/server.py)."""

from __future__ import annotations

from teiten.host.probe import parse_conninfo
from teiten.model.errors import ServerError, UserError
from teiten.servers.base import Server
from teiten.servers.external.server import ExternalServer, ask
from teiten.servers.external.spec import ExternalPlace
from teiten.servers.kind import Kind, Problem, Request
from teiten.spec import ServerSpec
from teiten.spec.secrets import Secrets


class External(Kind):
    name = "external"
    field = "external"
    password = True  # a client carries it: run as the client account
    controlled = False
    loads_by_sql = True
    origin = "external"

    def build(self, request: Request) -> Server:
        return ExternalServer(request.spec, request.install, password=_password(request.spec, request.secrets))

    def unanswered(self, spec: ServerSpec, secrets: Secrets | None) -> str | None:
        try:
            ask(spec, _password(spec, secrets))
        except ServerError as exc:
            return str(exc)
        return None

    def may_create(self, spec: ServerSpec) -> bool:
        return ExternalPlace.on(spec).allow_init

    def problem(self, spec: ServerSpec) -> Problem | None:
        conninfo = ExternalPlace.on(spec).external
        assert conninfo is not None
        try:
            parse_conninfo(conninfo)
        except UserError as exc:
            return Problem("external", str(exc))
        return None


def _password(spec: ServerSpec, secrets: Secrets | None) -> str | None:
    """The study file's password for the server's connection string, from memory."""
    conninfo = ExternalPlace.on(spec).external
    assert conninfo is not None
    return secrets.password(conninfo) if secrets else None


KIND = External()
