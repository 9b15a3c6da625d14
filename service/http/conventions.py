"""HTTP's conventions on the port's answers, where connectrpc leaves them to the server:

* CORS (:class:`Cors`): the headers of an answer to a page of an allowed origin, the
  preflight (GET allowed only where it is true: the side-effect-free methods), and
  ``Vary: Origin`` on every answer;
* caching and retrying (:func:`policy`): Cache-Control for a Connect GET's answer (by method,
  docs/decisions.md "HTTP's conventions"), Retry-After for a call refused as overloaded;
* error bodies that say what to send instead (:func:`no_route`, :func:`explained`): for a
  path that names no service, and for connectrpc's empty 404, 405 and 415. Their words are
  chosen here; every body is rendered by :func:`shuangkou.service.errors.http_error`.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Sequence
from typing import TYPE_CHECKING

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool

from shuangkou.v1 import rounds_pb2, service_pb2

from ..errors import RETRY_AFTER, bounded, http_error
from .seam import current

if TYPE_CHECKING:
    from _typeshed.wsgi import WSGIEnvironment

__all__ = ["Cors", "policy", "no_route", "explained", "BARE", "ACCEPT_POST", "GETTABLE"]

#: The paths a Connect GET may call: the methods the protos mark side-effect free.
GETTABLE = frozenset(
    f"/{service.full_name}/{method.name}" for file in (service_pb2, rounds_pb2)
    for service in file.DESCRIPTOR.services_by_name.values() for method in service.methods
    if method.GetOptions().idempotency_level == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS)
#: What a method's POST may carry: Connect (unary and streaming) and gRPC-Web.
ACCEPT_POST = ("application/json, application/proto, application/connect+json, "
               "application/connect+proto, application/grpc-web, application/grpc-web+proto")
#: The statuses connectrpc answers with an empty body (its HTTPError): given one here.
BARE = ("404", "405", "415")


# ----------------------------------------------------------------------------- CORS

#: What a browser page may send and read (Connect and gRPC-Web, connectrpc.com "CORS").
_ALLOW_HEADERS = ("content-type", "connect-protocol-version", "connect-timeout-ms",
                  "grpc-timeout", "x-grpc-web", "x-user-agent", "connect-content-encoding",
                  "connect-accept-encoding", "grpc-accept-encoding", "grpc-encoding")
_EXPOSE_HEADERS = "Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, Content-Encoding"
_VARY = ("Vary", "Origin")


class Cors:
    """CORS for the origins of ``http_cors_origins`` (``*``: any)."""

    __slots__ = ("_any_origin", "_origins")

    def __init__(self, origins: Sequence[str]) -> None:
        self._any_origin = "*" in origins
        self._origins = frozenset(origins)

    def headers(self, origin: str | None) -> list[tuple[str, str]]:
        """The CORS headers of an answer to a request from ``origin``."""
        # Every answer varies by Origin (a cache must not hand one origin's answer to
        # another), whether or not this one is allowed.
        if not origin or not (self._any_origin or origin in self._origins):
            return [_VARY]
        return [("Access-Control-Allow-Origin", origin), _VARY,
                ("Access-Control-Expose-Headers", _EXPOSE_HEADERS)]

    @staticmethod
    def preflight(environ: WSGIEnvironment, cors: list[tuple[str, str]]
                  ) -> tuple[str, list[tuple[str, str]], bytes]:
        """The answer to an OPTIONS request whose answer's CORS headers are ``cors``: 204
        with what the page may send, or 403 for an origin not allowed."""
        if len(cors) < 2:                    # Vary alone: the origin is not allowed
            status, headers, body = http_error("", 403, grpc.StatusCode.PERMISSION_DENIED,
                                               "origin not allowed (setting http_cors_origins)")
            return status, [*headers, *cors], body
        asked = [h.strip().lower() for h in
                 environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS", "").split(",") if h.strip()]
        # GET only where it is true: the side-effect-free methods (the others answer it 405)
        methods = "GET, POST" if environ.get("PATH_INFO", "") in GETTABLE else "POST"
        return "204 No Content", [
            *cors, ("Access-Control-Allow-Methods", methods),
            ("Access-Control-Allow-Headers", ", ".join(h for h in asked if h in _ALLOW_HEADERS)),
            ("Access-Control-Max-Age", "7200")], b""


# ----------------------------------------------------------------------------- caching, retrying

#: Cache-Control of a Connect GET's answer, by method (docs/decisions.md "HTTP's
#: conventions"): a rules query or a variant is a pure function of the request and of the
#: server's rule sets, which change only with a deployment (house variants), so a few
#: minutes; server info describes the process that answers, so a cache must ask each time.
_CACHE_CONTROL = {"GetServerInfo": "no-cache"}
_CACHE_DEFAULT = "public, max-age=300"


def policy(method: str, path: str, status: str) -> list[tuple[str, str]]:
    """The headers HTTP's conventions add to a handler's answer: Cache-Control for a Connect
    GET (its answer is cacheable; an error is not), and Retry-After for a call refused
    because the server is overloaded (HTTP 429; a request too large is refused 429 too,
    and retrying it would not help)."""
    if status.startswith("429"):
        call = getattr(current, "call", None)
        return [RETRY_AFTER] if call is not None and call.overloaded else []
    if method != "GET":
        return []
    if not status.startswith("200"):
        return [("Cache-Control", "no-store")]
    return [("Cache-Control", _CACHE_CONTROL.get(path[path.rfind("/") + 1:], _CACHE_DEFAULT))]


# ----------------------------------------------------------------------------- error bodies

_METHOD_PATH = re.compile(r"/[A-Za-z_][\w.]*\.[A-Za-z_]\w*/[A-Za-z_]\w*")
_SERVICES = ("shuangkou.v1.ShuangkouService", "shuangkou.v1.RoundService")


def no_route(path: str, content_type: str) -> tuple[str, list[tuple[str, str]], bytes]:
    """404 for a path that names no service of this port: UNIMPLEMENTED for what has the
    shape of a method (as on gRPC, and what a Connect client reads from a bare 404),
    NOT_FOUND for any other page."""
    if _METHOD_PATH.fullmatch(path):
        service = bounded(path[1:path.rfind("/")], 80)
        return http_error(content_type, 404, grpc.StatusCode.UNIMPLEMENTED,
                          f"no service {service!r} here: the services are "
                          f"{' and '.join(_SERVICES)} (POST /<service>/<method>)")
    return http_error(content_type, 404, grpc.StatusCode.NOT_FOUND,
                      f"no page {bounded(path, 120)!r}: the API is POST "
                      "/shuangkou.v1.<Service>/<Method> (docs/api.md); probes: GET /healthz, "
                      "GET /readyz")


def explained(environ: WSGIEnvironment, status: str, headers: list[tuple[str, str]]
              ) -> tuple[str, list[tuple[str, str]], bytes]:
    """connectrpc's empty 404 (no such method in a service), 405 (an HTTP method the RPC
    does not take) or 415 (a content type or GET encoding it does not read), with a body
    that says what to send instead; its Allow and Accept-Post headers are kept."""
    path, method = environ.get("PATH_INFO", ""), environ["REQUEST_METHOD"]
    content_type = environ.get("CONTENT_TYPE", "")
    service, name = path[1:].split("/")
    kept = [(k.title(), v) for k, v in headers if k.lower() in ("allow", "accept-post")]
    if status.startswith("404"):
        methods = [m.name for m in
                   descriptor_pool.Default().FindServiceByName(service).methods]
        return http_error(content_type, 404, grpc.StatusCode.UNIMPLEMENTED,
                          f"{service} has no method {bounded(name, 80)!r}; its methods: "
                          f"{', '.join(methods)}")
    if status.startswith("405"):
        allow = dict(kept).get("Allow", "POST")
        why = (" (Connect GET serves the side-effect-free methods only: docs/api.md "
               '"HTTP GET")' if method == "GET" else "")
        return http_error(content_type, 405, grpc.StatusCode.UNIMPLEMENTED,
                          f"{bounded(method, 20)} is not allowed for {name}: use {allow}{why}",
                          kept)
    if method == "GET":
        query = urllib.parse.parse_qs(environ.get("QUERY_STRING", ""))
        encoding = query.get("encoding", [""])[0]
        return http_error(content_type, 415, grpc.StatusCode.INVALID_ARGUMENT,
                          f"GET encoding {bounded(encoding, 40)!r} is not one this port "
                          "reads: use encoding=json or encoding=proto", kept)
    return http_error(content_type, 415, grpc.StatusCode.INVALID_ARGUMENT,
                      f"content type {bounded(content_type, 80) or '(none)'!r} is not one "
                      f"this port reads ({dict(kept).get('Accept-Post', ACCEPT_POST)}); with "
                      "curl, add -H 'Content-Type: application/json'", kept)
