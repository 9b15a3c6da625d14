"""The WSGI application of the HTTP port: a request routed to its service's Connect
application (connectrpc's, generated from the protos) by path, counted by protocol and while
in flight, with HTTP's conventions on every answer (:mod:`~shuangkou.service.http.conventions`)
and the calls whose form the port does not take refused before connectrpc reads them
(:mod:`~shuangkou.service.http.refusals`). A Connect GET (``?encoding=json&message=...``)
reaches the methods the protos mark ``idempotency_level = NO_SIDE_EFFECTS`` (connectrpc's,
from the generated code).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import grpc

from .conventions import BARE, Cors, explained, no_route, policy
from .refusals import form_refusal

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

    from ..metrics import Metrics
    from .refusals import Refusals

__all__ = ["HttpApp", "Tracked", "PROTOCOLS", "protocol"]

#: The ``protocol`` label of ``shuangkou_http_requests_total``.
PROTOCOLS = ("connect", "grpc_web", "grpc", "other")


def protocol(content_type: str) -> str:
    """The protocol a POST speaks, by its content type (one of :data:`PROTOCOLS`)."""
    if content_type.startswith("application/grpc-web"):
        return "grpc_web"
    if content_type.startswith("application/grpc"):
        return "grpc"
    if content_type.startswith(("application/json", "application/proto",
                                "application/connect+")):
        return "connect"
    return "other"


class Tracked:
    """A response body that counts as in flight until the server closes it."""

    __slots__ = ("_body", "_done")

    def __init__(self, body: Iterable[bytes], done: Callable[[], None]) -> None:
        self._body, self._done = body, done

    @property
    def listed(self) -> Iterable[bytes]:
        """The body as the application gave it (a list: the whole answer at once)."""
        return self._body

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            self._done()


class HttpApp:
    """The WSGI application of the HTTP port: each service's Connect application by path,
    CORS for ``cors_origins``, and the count of requests and of those in flight."""

    def __init__(self, apps: Sequence[Any], metrics: Metrics,
                 cors_origins: Sequence[str] = (), refusals: Refusals | None = None) -> None:
        self._apps: dict[str, WSGIApplication] = {app.path: app for app in apps}
        self._refusals = refusals
        self._requests = {p: metrics.http_requests.labels(p) for p in PROTOCOLS}
        self._cors = Cors(cors_origins)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self.in_flight = 0

    def cors(self, origin: str | None) -> list[tuple[str, str]]:
        """The CORS headers of an answer to a request from ``origin``."""
        return self._cors.headers(origin)

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse
                 ) -> Iterable[bytes]:
        cors = self.cors(environ.get("HTTP_ORIGIN"))
        method = environ["REQUEST_METHOD"]
        if method == "OPTIONS":
            return _answer(start_response, *self._cors.preflight(environ, cors))
        path = environ.get("PATH_INFO", "")
        content_type = environ.get("CONTENT_TYPE", "")
        app = self._apps.get(path[:path.rfind("/")]) if path.count("/") == 2 else None
        if app is None:
            return _refuse(start_response, cors, *no_route(path, content_type))
        # a Connect GET names no content type: its encoding is in the query
        spoken = "connect" if method == "GET" else protocol(content_type)
        self._requests[spoken].inc()
        refusal = form_refusal(environ, spoken)
        if refusal is not None:
            self._refused(path)
            return _refuse(start_response, cors, *refusal)
        bare: list[tuple[str, list[tuple[str, str]]]] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if status[:3] in BARE and not any(k.lower() == "content-type" for k, _ in headers):
                bare.append((status, headers))    # connectrpc's empty 404/405/415: below
                return _discard
            return start_response(status, [*headers, *cors, *policy(method, path, status)],
                                  exc_info)

        with self._lock:
            self.in_flight += 1
        try:
            body = app(environ, start)
        except BaseException:
            self._done()
            raise
        if bare:
            getattr(body, "close", lambda: None)()
            self._done()
            if bare[0][0].startswith("415"):     # a content type or encoding: the client's
                self._refused(path)
            return _refuse(start_response, cors, *explained(environ, *bare[0]))
        return Tracked(body, self._done)

    def _refused(self, path: str) -> None:
        """A call of ``path`` refused here for its form (INVALID_ARGUMENT), counted."""
        if self._refusals is not None:
            self._refusals.count(path, grpc.StatusCode.INVALID_ARGUMENT, "malformed")

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1
            if self.in_flight == 0:
                self._idle.notify_all()

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no request is in flight (or ``timeout``); whether none is."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.in_flight and (left := deadline - time.monotonic()) > 0:
                self._idle.wait(left)
            return self.in_flight == 0


def _discard(data: bytes) -> None:
    """The WSGI ``write`` of an answer replaced by
    :func:`~shuangkou.service.http.conventions.explained`."""


def _answer(start_response: StartResponse, status: str, headers: list[tuple[str, str]],
            body: bytes) -> list[bytes]:
    start_response(status, headers)
    return [body]


def _refuse(start_response: StartResponse, cors: list[tuple[str, str]], status: str,
            headers: list[tuple[str, str]], body: bytes) -> list[bytes]:
    return _answer(start_response, status, [*headers, *cors], body)
