"""The API over HTTP beside gRPC: the Connect protocol (JSON or binary over HTTP/1.1, what
``curl`` sends) and gRPC-Web (browsers), from the same servicers on a port of their own.

The protocols are connectrpc's: the WSGI application of each service is generated from the
protos (``shuangkou.v1.*_connect``, protoc-gen-connectrpc), served in this process by
uvicorn (docs/decisions.md "HTTP edge") through a small ASGI bridge. What is ours is the
seam, so that an HTTP call is the gRPC call it stands for:

* every method is the gRPC method handler of the same servicer instance, wrapped by the same
  :class:`~shuangkou.service.interceptor.MetricsInterceptor` (one stream cap for both ports, the
  ``grpc_server_*`` series labelled alike, the same admission: a request or reply over
  ``max_message_bytes`` or one that does not decode is refused and counted as on gRPC);
* :class:`CallContext` gives that handler the face of a ``grpc.ServicerContext`` over the
  Connect request (its deadline, from ``connect-timeout-ms`` or ``grpc-timeout``); an abort
  becomes a ``ConnectError`` carrying the very ``google.rpc.Status`` of gRPC — its code,
  message and detail bytes (gRPC-Web: the ``grpc-status-details-bin`` trailer as on gRPC;
  Connect JSON: ``details[].value``, with ``details[].debug`` the detail as JSON);
* :class:`HttpApp` routes by service, answers CORS for the configured origins and counts
  requests by protocol; a Connect GET (``?encoding=json&message=...``) reaches the methods
  the protos mark ``idempotency_level = NO_SIDE_EFFECTS`` (connectrpc's, from the
  generated code) and is answered with a Cache-Control (:func:`_policy`);
* every error the port answers itself — a path or method it does not have, an HTTP method
  or content type a method does not take (connectrpc's are empty), a body too large, a
  request it cannot parse or that arrives too slowly, a connection past the cap — has a
  body: Connect's JSON error, or a gRPC-Web trailers-only answer, rendered where every wire
  failure is (:func:`shuangkou.service.errors.http_error`);
* :class:`_Bridge` runs each call on gRPC's handler threads (one queue bound for both ports:
  past ``max_queued_calls`` waiting calls a call is refused RESOURCE_EXHAUSTED, HTTP 429,
  counted as gRPC's), gives a call without a deadline the server's ``default_deadline``,
  and marks a call whose client hung up as no longer active (it ends CANCELLED);
* :class:`EdgeServer` is uvicorn with the limits of the open internet (:class:`EdgeLimits`:
  a head's bytes and fields, 431 as they arrive; head and body read timeouts, a keep-alive
  idle timeout; a connection cap at which the connection waiting longest for a request
  makes room (:class:`_Waiting`), 503 when none waits), each counted; an ``Upgrade`` offer
  is declined and the request served; an answer given before its request was read whole
  lingers. :class:`BodyLimits` bounds each method's body (413 before it is read, or as it
  arrives), and :class:`_Refusals` counts every call the port refuses before its method
  runs, as gRPC counts admission's. The lines a client can cause are bounded
  (:data:`CLIENT_LOGGERS`, :func:`shuangkou.service.logs.bound_lines`);
* :class:`Readiness` takes the service's gRPC health to NOT_SERVING while the HTTP server
  does not answer its own probe (:meth:`EdgeServer.answers`: ``/healthz`` through a loopback
  socket of its own, so a flood of the port never moves it); ``/healthz`` and ``/readyz``
  (:func:`probe`) answer load balancers that do not speak gRPC health, from the event
  loop. ``/metrics`` rides on the same server (:mod:`shuangkou.service.exposition`);
* with ``access_log`` set, :class:`_Bridge` writes one access line per request (what was
  received and sent, the HTTP status, and the gRPC code the interceptor noted through
  :meth:`CallContext.ended_with`); the call's trace span is the interceptor's, its parent
  read from the headers (:meth:`CallContext.invocation_metadata`), its protocol from
  :attr:`CallContext.protocol`.
"""

from __future__ import annotations

import asyncio
import functools
import io
import logging
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, cast

import grpc
import orjson
from connectrpc.code import Code
from connectrpc.errors import ConnectError, ErrorDetail
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.rpc import error_details_pb2, status_pb2

from shuangkou.v1 import (
    rounds_connect,
    rounds_pb2,
    rounds_pb2_grpc,
    service_connect,
    service_pb2,
    service_pb2_grpc,
)

from .admission import Admission, RejectedMessage
from .api.shuangkou import Collect
from .errors import RETRY_AFTER, bounded, connect_code, grpc_code, http_error, raw_http_error
from .metrics import RPC_TYPES

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from connectrpc.request import RequestContext
    from protobuf import Registry

    from .config import Config
    from .interceptor import MetricsInterceptor
    from .logs import AccessLog
    from .metrics import Metrics

__all__ = ["CallContext", "HttpApp", "HttpServer", "create_http_server", "connect_error",
           "schema", "PROTOCOLS", "EdgeLimits", "EdgeServer", "Readiness", "listening_socket",
           "probe", "PROBES", "BodyLimits", "UNREAD",
           "UNREAD_REASONS", "CLIENT_LOGGERS"]

log = logging.getLogger(__name__)
#: The ``protocol`` label of ``shuangkou_http_requests_total``.
PROTOCOLS = ("connect", "grpc_web", "grpc", "other")
_DETAILS_KEY = "grpc-status-details-bin"


# ----------------------------------------------------------------------------- errors

@functools.cache
def schema() -> Registry:
    """Every message of shuangkou.v1 (and the google.rpc details) as the native protobuf-py
    runtime that connectrpc ships knows them: its JSON is ~30x faster than
    ``google.protobuf.json_format`` and writes the same proto3 JSON (tests/test_http.py holds
    it to json_format), and it renders error details readable (Connect's ``debug``). Built
    from the generated modules' descriptors; those omit the JSON field names, which are
    filled in here (lowerCamelCase, as protoc does)."""
    from protobuf.wkt import FileDescriptorSet

    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}

    def add(file: Any) -> None:
        if file.name not in files:
            for dependency in file.dependencies:
                add(dependency)
            files[file.name] = descriptor_pb2.FileDescriptorProto()
            file.CopyToProto(files[file.name])

    def name_fields(messages: Iterable[descriptor_pb2.DescriptorProto]) -> None:
        for message in messages:
            for f in message.field:
                f.json_name = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), f.name)
            name_fields(message.nested_type)

    for module in (service_pb2, rounds_pb2, error_details_pb2):
        add(module.DESCRIPTOR)
    fds = descriptor_pb2.FileDescriptorSet()
    for proto in files.values():
        name_fields(proto.message_type)
        fds.file.add().CopyFrom(proto)
    return FileDescriptorSet.from_binary(fds.SerializeToString()).to_registry()


class _Detail(ErrorDetail):
    """A status detail as sent (its bytes unchanged), readable through the detail types."""

    def value(self, desc_or_registry: Any = None) -> Any:
        return super().value(desc_or_registry or schema())


def connect_error(status: grpc.Status) -> ConnectError:
    """The ``ConnectError`` of a gRPC status built by :mod:`shuangkou.service.errors`: the
    same code and message, and the ``google.rpc.Status`` details as they are."""
    from protobuf.wkt import Any as AnyMessage

    details: list[ErrorDetail] = []
    for key, value in status.trailing_metadata or ():
        if key == _DETAILS_KEY:
            details = [_Detail(AnyMessage(type_url=d.type_url, value=d.value))
                       for d in status_pb2.Status.FromString(cast(bytes, value)).details]
    return ConnectError(Code(connect_code(status.code)), status.details or "", details)


class CallContext:
    """What the servicers and the interceptor use of a ``grpc.ServicerContext``, over a
    Connect request: the deadline, the status set so far, aborts (as ``ConnectError``)."""

    __slots__ = ("_ctx", "_code", "_call", "_deadline")

    def __init__(self, ctx: RequestContext[Any, Any]) -> None:
        self._ctx = ctx
        self._code: grpc.StatusCode | None = None
        # The server's side of the call (none for a context made outside the HTTP server):
        # whether the client is gone, and the default deadline of a call that set none.
        self._call: _Call | None = getattr(_current, "call", None)
        self._deadline = (self._call.deadline if self._call is not None
                          and ctx.timeout_ms is None else None)
        if self._call is not None:      # the method runs: its refusals are the interceptor's
            self._call.reached = True

    @property
    def overloaded(self) -> bool:
        """Whether admission refused this call as overloaded before it was queued."""
        return self._call is not None and self._call.overloaded

    def time_remaining(self) -> float | None:
        left = self._ctx.timeout_ms
        if left is not None:
            return max(0.0, left / 1000)
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def is_active(self) -> bool:
        """Until the deadline, or until the client hangs up."""
        if self._call is not None and self._call.hung_up():
            return False
        left = self.time_remaining()
        return left is None or left > 0

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self._code = code
        raise ConnectError(Code(connect_code(code)), details)

    def abort_with_status(self, status: grpc.Status) -> NoReturn:
        self._code = status.code
        raise connect_error(status)

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._ctx.request_headers.items())

    def peer(self) -> str:
        return self._ctx.client_address or ""

    # --- for the access line and the trace span (issue 36)

    @property
    def protocol(self) -> str:
        """``grpc-web`` or ``connect`` (JSON or binary, POST or GET): the span's protocol."""
        content_type = self._ctx.request_headers.get("content-type", "")
        return "grpc-web" if content_type.startswith("application/grpc-web") else "connect"

    def ended_with(self, code: str, trace_id: str = "") -> None:
        """The gRPC code the call ended with (and its trace), for the request's access
        line (:class:`_Bridge`)."""
        if self._call is not None:
            self._call.code, self._call.trace_id = code, trace_id


# ----------------------------------------------------------------------------- codecs

class _Codec:
    """connectrpc's codec protocol, decoding through the server's admission: a request over
    ``max_message_bytes`` or one that does not decode becomes a :class:`RejectedMessage`,
    which the interceptor counts and refuses as it does on gRPC (a ScoreReplays stream
    answers it in-band). JSON is proto3 JSON, read and written by the native runtime of
    :func:`schema` (orjson parses the text first: it bounds nesting at 1,024 levels and
    refuses lone surrogates); a field the message does not have is an error, not ignored."""

    def __init__(self, admission: Admission, json: bool) -> None:
        self._admission, self._json = admission, json
        self._decoders: dict[type[Any], Callable[[bytes], Any]] = {}
        self._native: dict[str, Any] = {}

    def name(self) -> str:
        return "json" if self._json else "proto"

    def _native_type(self, message_class: Any) -> Any:
        name = message_class.DESCRIPTOR.full_name
        native = self._native.get(name)
        if native is None:
            desc = schema().message(name)
            if desc is None:
                raise TypeError(f"{name} is not a message of shuangkou.v1")
            native = self._native[name] = desc.type
        return native

    def encode(self, message: Any) -> bytes:
        data = cast(bytes, message.SerializeToString())
        if not self._json:
            return data
        native = self._native_type(type(message)).from_binary(data)
        return cast(str, native.to_json(registry=schema())).encode()

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        decode = self._decoders.get(message_class)
        if decode is None:
            decode = self._decoders[message_class] = self._admission.decoder(
                message_class.FromString)
        if not self._json:
            return decode(bytes(data))
        from protobuf import message_from_json_value

        name = message_class.DESCRIPTOR.name
        try:
            value = orjson.loads(data)
            if not isinstance(value, dict):
                raise ValueError("a request is one JSON object")
            native = message_from_json_value(self._native_type(message_class), value,
                                             registry=schema())
            binary = native.to_binary()
        except Exception as exc:  # noqa: BLE001 - any decode failure is the caller's
            return RejectedMessage("undecodable",
                                   f"request is not a valid {name} in JSON: {_why(exc, data)}")
        return decode(binary)


def _why(exc: Exception, data: bytes | bytearray) -> str:
    """What is wrong with a JSON request, in the client's terms: orjson calls invalid UTF-8
    "surrogates not allowed", and a document nested deeper than a message (under orjson's
    1,024 levels) exhausts the converter's recursion instead."""
    if isinstance(exc, RecursionError):
        return ("nested too deeply (no message of this API nests past a few levels; JSON "
                "is read to 1,024)")
    try:
        bytes(data).decode()
    except UnicodeDecodeError as bad:
        return f"not UTF-8 (byte {bad.start:,}: 0x{data[bad.start]:02x})"
    if isinstance(exc, (ValueError, TypeError)):
        return bounded(str(exc).replace("\n", " "), 200)
    return type(exc).__name__


# ----------------------------------------------------------------------------- the application

def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _endpoints(servicer: Any, register: Callable[[Any, Any], None],
               interceptor: MetricsInterceptor) -> Any:
    """The snake_case object a generated WSGI application calls: each method the servicer's
    gRPC handler, without serializers (the Connect codec encodes), through the interceptor."""
    collected = Collect()
    register(servicer, collected)
    methods = {}
    for name, handler in collected.handlers.items():
        wrapped, refusing = interceptor.wrap_both(f"/{collected.service}/{name}",
                                                  handler._replace(request_deserializer=None,
                                                                   response_serializer=None))
        behaviour: Any = _behaviour(wrapped)
        if refusing is not None:
            behaviour = _or_refused(behaviour, _behaviour(refusing))
        streaming = wrapped.response_streaming
        reply = message_factory.GetMessageClass(descriptor_pool.Default().FindMethodByName(
            f"{collected.service}.{name}").output_type)
        methods[_snake(name)] = _call_stream(behaviour) if streaming else _call(behaviour,
                                                                                 reply)
    return type("Endpoints", (), {k: staticmethod(v) for k, v in methods.items()})()


def _behaviour(handler: Any) -> Any:
    return (handler.unary_unary or handler.unary_stream or handler.stream_unary
            or handler.stream_stream)


def _or_refused(behaviour: Callable[[Any, Any], Any], refusal: Callable[[Any, Any], Any]
                ) -> Callable[[Any, Any], Any]:
    """``behaviour``, or the interceptor's overload refusal (counted as on gRPC) for a call
    that admission refused before it was queued (:class:`_Bridge`)."""
    def call(request: Any, context: CallContext) -> Any:
        return (refusal if context.overloaded else behaviour)(request, context)
    return call


def _requests(requests: Any, context: CallContext) -> Any:
    """A request message, or a request stream whose read errors (a truncated envelope, a
    bad flag) end the call with the code the client is sent, not as a handler failure
    (UNKNOWN in the metrics)."""
    if not isinstance(requests, Iterator):
        return requests

    def read() -> Iterator[Any]:
        try:
            yield from requests
        except ConnectError as exc:
            context._code = grpc_code(exc.code.value)
            raise
    return read()


def _call(behaviour: Callable[[Any, Any], Any], reply: type[Any]) -> Callable[[Any, Any], Any]:
    def call(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        context = CallContext(ctx)
        response = behaviour(_requests(request, context), context)
        if not context.is_active():      # as gRPC: an answer after the deadline is not sent
            raise ConnectError(Code.DEADLINE_EXCEEDED, "the deadline passed")
        # a servicer may answer with the reply's bytes (BatchClassify): the codec wants the
        # message
        return reply.FromString(response) if type(response) is bytes else response
    return call


def _call_stream(behaviour: Callable[[Any, Any], Iterator[Any]]
                 ) -> Callable[[Any, Any], Iterator[Any]]:
    def call(requests: Any, ctx: RequestContext[Any, Any]) -> Iterator[Any]:
        context = CallContext(ctx)
        return behaviour(_requests(requests, context), context)
    return call


def _protocol(content_type: str) -> str:
    if content_type.startswith("application/grpc-web"):
        return "grpc_web"
    if content_type.startswith("application/grpc"):
        return "grpc"
    if content_type.startswith(("application/json", "application/proto",
                                "application/connect+")):
        return "connect"
    return "other"


#: The paths a Connect GET may call: the methods the protos mark side-effect free.
_GETTABLE = frozenset(
    f"/{service.full_name}/{method.name}" for file in (service_pb2, rounds_pb2)
    for service in file.DESCRIPTOR.services_by_name.values() for method in service.methods
    if method.GetOptions().idempotency_level == descriptor_pb2.MethodOptions.NO_SIDE_EFFECTS)
#: What a browser page may send and read (Connect and gRPC-Web, connectrpc.com "CORS").
_ALLOW_HEADERS = ("content-type", "connect-protocol-version", "connect-timeout-ms",
                  "grpc-timeout", "x-grpc-web", "x-user-agent", "connect-content-encoding",
                  "connect-accept-encoding", "grpc-accept-encoding", "grpc-encoding")
_EXPOSE_HEADERS = "Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, Content-Encoding"
_VARY = ("Vary", "Origin")
_ACCEPT_POST = ("application/json, application/proto, application/connect+json, "
                "application/connect+proto, application/grpc-web, application/grpc-web+proto")
_UNCOMPRESSED = "a message flagged compressed, but the request names no encoding"


class _Peeked:
    """A request body whose first byte was read to be looked at, given back first."""

    __slots__ = ("_first", "_body")

    def __init__(self, first: bytes, body: Any) -> None:
        self._first, self._body = first, body

    def read(self, size: int = -1) -> bytes:
        first, self._first = self._first, b""
        if not first or size == 1:
            return first or cast(bytes, self._body.read(size))
        return first + cast(bytes, self._body.read(size - 1 if size > 0 else size))


def _compressed_without_encoding(environ: WSGIEnvironment, content_type: str) -> bool:
    """Whether an enveloped request (gRPC-Web, Connect streaming) flags its first message
    compressed while naming no encoding: connectrpc would answer INTERNAL, a server fault,
    for what is the client's. Only the first byte is read (and given back)."""
    if content_type.startswith("application/grpc-web"):
        encoding = environ.get("HTTP_GRPC_ENCODING", "identity")
    elif content_type.startswith("application/connect+"):
        encoding = environ.get("HTTP_CONNECT_CONTENT_ENCODING", "identity")
    else:
        return False
    if encoding != "identity":
        return False
    body = environ["wsgi.input"]
    first = body.read(1)
    environ["wsgi.input"] = _Peeked(first, body)
    return bool(first) and bool(first[0] & 1)


class _Tracked:
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
                 cors_origins: Sequence[str] = (), refusals: _Refusals | None = None) -> None:
        self._apps: dict[str, WSGIApplication] = {app.path: app for app in apps}
        self._refusals = refusals
        self._requests = {p: metrics.http_requests.labels(p) for p in PROTOCOLS}
        self._any_origin = "*" in cors_origins
        self._origins = frozenset(cors_origins)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self.in_flight = 0

    def _cors(self, environ: WSGIEnvironment) -> list[tuple[str, str]]:
        return self.cors(environ.get("HTTP_ORIGIN"))

    def cors(self, origin: str | None) -> list[tuple[str, str]]:
        """The CORS headers of an answer to a request from ``origin``."""
        # Every answer varies by Origin (a cache must not hand one origin's answer to
        # another), whether or not this one is allowed.
        if not origin or not (self._any_origin or origin in self._origins):
            return [_VARY]
        return [("Access-Control-Allow-Origin", origin), _VARY,
                ("Access-Control-Expose-Headers", _EXPOSE_HEADERS)]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse
                 ) -> Iterable[bytes]:
        cors = self._cors(environ)
        method = environ["REQUEST_METHOD"]
        if method == "OPTIONS":
            return self._preflight(environ, cors, start_response)
        path = environ.get("PATH_INFO", "")
        content_type = environ.get("CONTENT_TYPE", "")
        app = self._apps.get(path[:path.rfind("/")]) if path.count("/") == 2 else None
        if app is None:
            return _refuse(start_response, cors, *_no_route(path, content_type))
        # a Connect GET names no content type: its encoding is in the query
        protocol = "connect" if method == "GET" else _protocol(content_type)
        self._requests[protocol].inc()
        if protocol == "grpc":
            # gRPC needs HTTP/2 and trailers, which this port does not speak: the client
            # is told so (the gRPC spec's 415, invalid_argument as for any content type the
            # port does not read), not answered by a failing handler.
            self._refused(path)
            return _refuse(start_response, cors, *http_error(
                content_type, 415, grpc.StatusCode.INVALID_ARGUMENT, "application/grpc needs HTTP/2: "
                "call the gRPC port; this port speaks Connect and gRPC-Web",
                [("Accept-Post", _ACCEPT_POST)]))
        bad_deadline = _bad_deadline(environ, content_type)
        if bad_deadline is not None:
            self._refused(path)
            return _refuse(start_response, cors, *http_error(
                content_type, 400, grpc.StatusCode.INVALID_ARGUMENT, bad_deadline, in_band=True))
        if _compressed_without_encoding(environ, content_type):
            self._refused(path)
            return _refuse(start_response, cors, *http_error(
                content_type, 400, grpc.StatusCode.INVALID_ARGUMENT, _UNCOMPRESSED, in_band=True))
        bare: list[tuple[str, list[tuple[str, str]]]] = []

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            if status[:3] in _BARE and not any(k.lower() == "content-type" for k, _ in headers):
                bare.append((status, headers))    # connectrpc's empty 404/405/415: below
                return _discard
            return start_response(status, [*headers, *cors, *_policy(method, path, status)],
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
            return _refuse(start_response, cors, *_explained(environ, *bare[0]))
        return _Tracked(body, self._done)

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

    @staticmethod
    def _preflight(environ: WSGIEnvironment, cors: list[tuple[str, str]],
                   start_response: StartResponse) -> Iterable[bytes]:
        if len(cors) < 2:                    # Vary alone: the origin is not allowed
            return _refuse(start_response, cors, *http_error(
                "", 403, grpc.StatusCode.PERMISSION_DENIED,
                "origin not allowed (setting http_cors_origins)"))
        asked = [h.strip().lower() for h in
                 environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS", "").split(",") if h.strip()]
        # GET only where it is true: the side-effect-free methods (the others answer it 405)
        methods = "GET, POST" if environ.get("PATH_INFO", "") in _GETTABLE else "POST"
        start_response("204 No Content", [
            *cors, ("Access-Control-Allow-Methods", methods),
            ("Access-Control-Allow-Headers", ", ".join(h for h in asked if h in _ALLOW_HEADERS)),
            ("Access-Control-Max-Age", "7200")])
        return []


# ----------------------------------------------------------------------------- HTTP's conventions

#: The statuses connectrpc answers with an empty body (its HTTPError): given one here.
_BARE = ("404", "405", "415")
#: Cache-Control of a Connect GET's answer, by method (docs/decisions.md "HTTP's
#: conventions"): a rules query or a variant is a pure function of the request and of the
#: server's rule sets, which change only with a deployment (house variants), so a few
#: minutes; server info describes the process that answers, so a cache must ask each time.
_CACHE_CONTROL = {"GetServerInfo": "no-cache"}
_CACHE_DEFAULT = "public, max-age=300"


def _discard(data: bytes) -> None:
    """The WSGI ``write`` of an answer replaced by :func:`_explained`."""


def _refuse(start_response: StartResponse, cors: list[tuple[str, str]], status: str,
            headers: list[tuple[str, str]], body: bytes) -> list[bytes]:
    start_response(status, [*headers, *cors])
    return [body]


def _policy(method: str, path: str, status: str) -> list[tuple[str, str]]:
    """The headers HTTP's conventions add to a handler's answer: Cache-Control for a Connect
    GET (its answer is cacheable; an error is not), and Retry-After for a call refused
    because the server is overloaded (HTTP 429; a request too large is refused 429 too,
    and retrying it would not help)."""
    if status.startswith("429"):
        call = getattr(_current, "call", None)
        return [RETRY_AFTER] if call is not None and call.overloaded else []
    if method != "GET":
        return []
    if not status.startswith("200"):
        return [("Cache-Control", "no-store")]
    return [("Cache-Control", _CACHE_CONTROL.get(path[path.rfind("/") + 1:], _CACHE_DEFAULT))]


_METHOD_PATH = re.compile(r"/[A-Za-z_][\w.]*\.[A-Za-z_]\w*/[A-Za-z_]\w*")
_SERVICES = ("shuangkou.v1.ShuangkouService", "shuangkou.v1.RoundService")


def _no_route(path: str, content_type: str) -> tuple[str, list[tuple[str, str]], bytes]:
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


def _explained(environ: WSGIEnvironment, status: str, headers: list[tuple[str, str]]
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
                      f"this port reads ({dict(kept).get('Accept-Post', _ACCEPT_POST)}); with "
                      "curl, add -H 'Content-Type: application/json'", kept)


# ----------------------------------------------------------------------------- refusals

#: Every method of the port by path: its ``grpc_type`` label, and whether its request is a
#: stream.
_METHODS: dict[str, tuple[str, bool]] = {
    f"/{service.full_name}/{method.name}": (
        RPC_TYPES[(method.client_streaming, method.server_streaming)], method.client_streaming)
    for file in (service_pb2, rounds_pb2) for service in file.DESCRIPTOR.services_by_name.values()
    for method in service.methods}


@dataclass(frozen=True)
class BodyLimits:
    """The largest request body each path of the port takes: ``max_request_bytes`` for a
    method whose request is a stream (ScoreReplays); for any other — one message — twice
    ``max_message_bytes``, as gRPC's transport admits, so that the codec's refusal of a
    message over the limit (its JSON may be longer than its binary form) is counted as on
    gRPC; a path that is no method, the same. :class:`_Bridge` refuses a body over it
    (413) before reading it, or as it arrives."""

    max_message_bytes: int
    max_request_bytes: int

    def __call__(self, path: str) -> tuple[int, str]:
        """The limit of ``path``'s body in bytes, and the setting it comes from."""
        method = _METHODS.get(path)
        if (method is not None and method[1]) or \
                self.max_request_bytes <= 2 * self.max_message_bytes:
            return self.max_request_bytes, "http_max_request_bytes"
        return 2 * self.max_message_bytes, "twice max_message_bytes"


class _Refusals:
    """The calls the HTTP port refuses before their method runs, counted as gRPC counts the
    refusals of admission (:meth:`MetricsInterceptor.count_refused`): reason ``too_large``
    (RESOURCE_EXHAUSTED) for a body over its method's limit (:class:`_Bridge`) or a message
    over ``read_max_bytes`` once decompressed, ``malformed`` (INVALID_ARGUMENT) for the rest
    — a deadline header or a content type the port does not read, a message flagged
    compressed without an encoding (:class:`HttpApp`), and what connectrpc refuses before it
    calls the method: an envelope that runs past the body, two messages (or none) on a
    one-request call, a client's frame flagged as trailers. (connectrpc calls some of these
    UNIMPLEMENTED or INTERNAL; each is the client's mistake, and they are answered
    INVALID_ARGUMENT.) A path that is no method (404) or an HTTP method the RPC does not
    take (405) is answered, not counted: gRPC counts no call it cannot route either.

    It is connectrpc's metadata interceptor for the last group: it starts before a request
    is read, and its end hears of an error raised before the method was called
    (:attr:`_Call.reached`)."""

    def __init__(self, interceptor: MetricsInterceptor) -> None:
        self._interceptor = interceptor

    def count(self, path: str, code: grpc.StatusCode, reason: str,
              seconds: float = 0.0) -> None:
        method = _METHODS.get(path)
        if method is not None:
            self._interceptor.count_refused(path, method[0], code, reason, seconds)

    # --- connectrpc's MetadataInterceptorSync

    def on_start_sync(self, ctx: RequestContext[Any, Any]) -> float:
        return time.perf_counter()

    def on_end_sync(self, t0: float, ctx: RequestContext[Any, Any],
                    error: Exception | None) -> None:
        call: _Call | None = getattr(_current, "call", None)
        if error is None or call is None or call.reached or not isinstance(error, ConnectError):
            return
        too_large = error.code is Code.RESOURCE_EXHAUSTED
        code = grpc.StatusCode.RESOURCE_EXHAUSTED if too_large \
            else grpc.StatusCode.INVALID_ARGUMENT
        self.count(f"/{ctx.method.service_name}/{ctx.method.name}", code,
                   "too_large" if too_large else "malformed", time.perf_counter() - t0)
        call.code = code.name                  # for the access line
        if error.code not in (Code.RESOURCE_EXHAUSTED, Code.INVALID_ARGUMENT):
            raise ConnectError(Code.INVALID_ARGUMENT, error.message) from error


def _bad_deadline(environ: WSGIEnvironment, content_type: str) -> str | None:
    """Why the request's deadline header is not one its protocol allows (Connect: 1 to 10
    digits of milliseconds; gRPC-Web: 1 to 8 digits and a unit, H M S m u or n), or None.
    Read here, before connectrpc reads it, so that the refusal is counted."""
    if content_type.startswith("application/grpc-web"):
        value = environ.get("HTTP_GRPC_TIMEOUT")
        if value is None or (1 <= len(value) - 1 <= 8 and value[:-1].isascii()
                             and value[:-1].isdigit() and value[-1] in "HMSmun"):
            return None
        return (f"grpc-timeout {bounded(value, 20)!r} is not a deadline: 1 to 8 digits and a "
                "unit (H, M, S, m, u, n)")
    value = environ.get("HTTP_CONNECT_TIMEOUT_MS")
    if not value or (len(value) <= 10 and value.isascii() and value.isdigit()):
        return None
    return (f"Connect-Timeout-Ms {bounded(value, 20)!r} is not a deadline: 1 to 10 digits of "
            "milliseconds")


# ----------------------------------------------------------------------------- the server

class _Call:
    """One HTTP call as the pool thread running it sees it (:data:`_current`, read by
    :class:`CallContext`): the server's default deadline, whether admission refused it as
    overloaded, and whether its client hung up."""

    __slots__ = ("deadline", "overloaded", "gone", "_peer", "code", "trace_id", "reached")

    def __init__(self, deadline: float | None, overloaded: bool,
                 peer: socket.socket | None = None) -> None:
        self.deadline, self.overloaded, self.gone = deadline, overloaded, False
        self._peer = peer
        self.code = self.trace_id = ""      # as the interceptor saw the call end
        self.reached = False                # whether the method ran (:class:`_Refusals`)

    def hung_up(self) -> bool:
        """Whether the client is gone: as the event loop saw it, or as the connection says
        now. The search asks between deals; while its threads hold the GIL the event loop
        can learn of a hang-up seconds late, so the call's thread looks at the connection
        itself (a peek at a duplicate of its socket: end of file is a hang-up)."""
        if self.gone or self._peer is None:
            return self.gone
        try:
            self.gone = not self._peer.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.gone = True
        return self.gone

    def close(self) -> None:
        if self._peer is not None:
            self._peer.close()


_current = threading.local()
_BUSY = raw_http_error(503, grpc.StatusCode.UNAVAILABLE, "the server holds its limit of connections "
                       "(http_max_connections); retry", [RETRY_AFTER])
_MALFORMED = raw_http_error(400, grpc.StatusCode.INVALID_ARGUMENT, "not an HTTP/1.1 request this port "
                            "can read")
_SLOW = raw_http_error(408, grpc.StatusCode.DEADLINE_EXCEEDED, "the request did not arrive in time "
                       "(http_header_timeout, http_body_timeout); retry")
_GONE = b"(the client hung up)"          # what _Bridge._body reads of a client gone
#: Chunks of an answer held before it is streamed: a unary gRPC-Web answer is two (the
#: message, the trailers) and goes whole.
_HELD_CHUNKS = 4
#: The method labels of a request refused before its method was read (a head too large, a
#: request the parser cannot read), in ``shuangkou_requests_rejected_total``; its reasons.
UNREAD = ("unknown", "unknown", "unknown")
UNREAD_REASONS = ("head_too_large", "malformed")
#: The loggers whose lines a client can cause (the edge's own, uvicorn's, asyncio's about a
#: peer gone), and how many lines a second of each kind they may write.
CLIENT_LOGGERS = ("uvicorn.error", "asyncio", __name__)
CLIENT_LINES_PER_SECOND = 10


@dataclass(frozen=True)
class EdgeLimits:
    """What one HTTP port allows a connection, and where it counts what it cut short
    (``metrics`` None: not counted, the ``--workers`` supervisor's ``/metrics``)."""

    header_timeout: float
    body_timeout: float
    keepalive_timeout: float
    max_connections: int
    metrics: Metrics | None = None
    port: str = "api"
    max_head_bytes: int = 64 * 1024
    max_headers: int = 100

    @classmethod
    def of(cls, config: Config, metrics: Metrics | None = None, port: str = "api"
           ) -> EdgeLimits:
        return cls(config.http_header_timeout, config.http_body_timeout,
                   config.http_keepalive_timeout, config.http_max_connections, metrics, port,
                   config.http_max_head_bytes, config.http_max_headers)


class _Waiting:
    """The connections of one port that wait for a request — idle before their first byte
    or between two requests, or still sending a head — the one waiting longest first. While
    the connection cap is full, a new connection closes the oldest of them (as nginx reuses
    its idle connections) instead of being refused: a client that opens and holds
    connections as fast as it can then only ever closes its own, and another client's
    connection, which sends its request at once, is served."""

    __slots__ = ("_since",)

    def __init__(self) -> None:
        self._since: OrderedDict[Any, None] = OrderedDict()    # the oldest first

    def add(self, connection: Any, *, first: bool = False) -> None:
        """``connection`` waits from now on (``first``: it is the first to make room)."""
        self._since[connection] = None
        self._since.move_to_end(connection, last=not first)

    def remove(self, connection: Any) -> None:
        self._since.pop(connection, None)

    def oldest(self) -> Any:
        return next(iter(self._since), None)


class _HeadTooLarge(Exception):
    """Raised from a parser callback: the head has more header fields than allowed."""


def _without_upgrade(method: bytes, url: bytes, version: str,
                     headers: Sequence[tuple[bytes, bytes]]) -> bytes:
    """A request head as it was sent, less its offer to change protocols (``Upgrade``,
    ``HTTP2-Settings`` and their ``Connection`` tokens): what the edge parses again to serve
    an ``Upgrade: h2c`` request (``curl --http2`` on plaintext) as HTTP/1.1, as RFC 9110
    7.8 lets a server do."""
    hop = (b"upgrade", b"http2-settings")
    lines = [b"%s %s HTTP/%s\r\n" % (method, url, version.encode("ascii"))]
    for name, value in headers:
        if name in hop:
            continue
        if name == b"connection":
            value = b", ".join(t for t in (v.strip() for v in value.split(b","))
                               if t and t.lower() not in hop)
            if not value:
                continue
        lines.append(b"%s: %s\r\n" % (name, value))
    return b"".join([*lines, b"\r\n"])


def _protocol_class(limits: EdgeLimits,
                    probe: tuple[str, int] | None = None) -> type[Any]:
    """uvicorn's httptools protocol with what it lacks for the open internet: limits on a
    request's head (its bytes and header fields, 431 as they arrive) and deadlines for it
    (from the connection's first byte, or its opening) and its body; a cap on open
    connections, the oldest waiting connection closed to make room (:class:`_Waiting`), a
    503 when none waits; an ``Upgrade`` offer ignored (the request served over HTTP/1.1);
    every connection, refusal, eviction and timeout counted. Connections to the address
    ``probe`` (the process's own readiness probe, :meth:`EdgeServer.answers`) are neither
    capped, closed to make room, nor counted."""
    import httptools
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    m = limits.metrics
    accepted = m.http_connections.labels(limits.port) if m else None
    opened = m.http_open.labels(limits.port) if m else None
    refused = m.http_refused.labels(limits.port) if m else None
    evicted = m.http_evicted.labels(limits.port) if m else None
    unread = {reason: m.rejected.labels(*UNREAD, reason) for reason in UNREAD_REASONS} \
        if m else {}
    timeouts = {phase: m.http_timeouts.labels(limits.port, phase)
                for phase in ("header", "body", "idle")} if m else {}
    waiting = _Waiting()
    head_limit, field_limit = limits.max_head_bytes, limits.max_headers
    too_large = raw_http_error(
        431, grpc.StatusCode.RESOURCE_EXHAUSTED, f"the request head is over the limit of "
        f"{head_limit:,} bytes (http_max_head_bytes) or {field_limit} header fields "
        "(http_max_headers)")

    class EdgeProtocol(HttpToolsProtocol):
        _timer: asyncio.TimerHandle | None = None
        _counted = False
        _bytes = False
        _probe = False
        #: Bytes of the request head being read (None: a body, or a request in flight).
        _head: int | None = 0
        _fields = 0
        _upgrade = False
        _lingering = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            sockname = transport.get_extra_info("sockname")
            self._probe = probe is not None and bool(sockname) and tuple(sockname[:2]) == probe
            if self._probe:
                self._arm("header", limits.header_timeout)
                return
            if accepted is not None:
                accepted.inc()
            if len(self.connections) > limits.max_connections:
                oldest = waiting.oldest()
                if oldest is None:
                    if refused is not None:
                        refused.inc()
                    transport.write(_BUSY)
                    transport.close()
                    return
                oldest.make_room()
            self._counted = True
            if opened is not None:
                opened.inc()
            self._arm("header", limits.header_timeout)
            # Waiting (and so the first to go when room is needed) once the loop has read
            # from it: a connection accepted in a burst has its request read first.
            self.loop.call_soon(self.loop.call_soon, self._settled)

        def _settled(self) -> None:
            if not self.transport.is_closing() and (
                    self.cycle is None or self.cycle.response_complete) and not self.pipeline:
                waiting.add(self)

        def make_room(self) -> None:
            """Closed for a new connection while the cap is full (a head half sent is
            told to retry)."""
            waiting.remove(self)
            if self.transport.is_closing():     # already going (a timeout): its room
                return
            if evicted is not None:
                evicted.inc()
            if self._head and not self._lingering:
                self.transport.write(_BUSY)
            self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            waiting.remove(self)
            if self._counted and opened is not None:
                opened.dec()
            self._counted = False
            super().connection_lost(exc)

        # ------------------------------------------------------------------ reading

        def data_received(self, data: bytes) -> None:
            if self._lingering:                 # answered: what still comes is dropped
                return
            self._bytes = True
            self._unset_keepalive_if_required()
            views = [memoryview(data)]          # what is left to read, the next last
            while views:
                rest = views.pop()
                while rest:
                    if self._head is None:      # a body: as it comes
                        piece = rest
                    else:       # a head: no more than up to the limit
                        piece = rest[:head_limit - self._head]
                        self._head += len(piece)
                    rest = rest[len(piece):]
                    after = self._feed(piece)
                    if after is None:           # refused: the connection is closing
                        return
                    if self._head is not None and self._head >= head_limit:   # unfinished
                        self._refuse("head_too_large", too_large)
                        return
                    if after:     # an upgrade declined: what followed its head, then the rest
                        views.append(rest)
                        rest = after

        def _feed(self, piece: memoryview) -> memoryview | None:
            """``piece`` to the parser; what it left unread (what followed a head that
            offered another protocol, the offer declined), or None when the request was
            refused."""
            try:
                self.parser.feed_data(piece)
            except httptools.HttpParserUpgrade as upgrade:
                if not self._decline_upgrade():
                    return None
                return piece[upgrade.args[0]:]
            except httptools.HttpParserError as exc:
                cause = exc.__context__ if isinstance(
                    exc, httptools.HttpParserCallbackError) else None
                if isinstance(cause, _HeadTooLarge):
                    self._refuse("head_too_large", too_large)
                    return None
                if cause is None or isinstance(cause, httptools.HttpParserError):
                    log.warning("HTTP %s: a request this port cannot read (%s); answered 400",
                                _client(self.client), cause or exc)
                else:                           # ours, not the client's
                    log.error("HTTP %s: reading a request failed; answered 400",
                              _client(self.client), exc_info=cause)
                self._refuse("malformed", _MALFORMED)
                return None
            return piece[:0]

        def _decline_upgrade(self) -> bool:
            """The head just read offered another protocol (llhttp stops there and would
            take the rest for that protocol): read again without the offer, by a parser of
            its own, so that its body and any request after it are HTTP/1.1's. False when
            it was refused instead (a CONNECT: a tunnel, not a request of this port)."""
            self._upgrade = False
            method = self.parser.get_method()
            if method == b"CONNECT":
                log.warning("HTTP %s: a CONNECT request; answered 400", _client(self.client))
                self._refuse("malformed", _MALFORMED)
                return False
            head = _without_upgrade(method, self.url, self.parser.get_http_version(),
                                    self.headers)
            self.parser = httptools.HttpRequestParser(self)
            self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
            self._head = 0      # the head counted already: its shorter copy is not again
            return self._feed(memoryview(head)) is not None

        def _refuse(self, reason: str, response: bytes) -> None:
            if reason in unread:
                unread[reason].inc()
            self.transport.write(response)
            if reason == "head_too_large":      # a client still sending: let it read this
                self.linger()
            else:
                self.transport.close()

        def linger(self) -> None:
            """Close once the client has read the answer: for an answer given before its
            request was read whole (a head or body over its limit), to a client that is
            likely still sending. Closing at once, with its bytes unread, would reset the
            connection, and the client would see the reset rather than the answer; so the
            edge says it is done (a FIN), drops what still arrives, and closes when the
            client does or ``http_header_timeout`` after the answer (as nginx's lingering
            close). Until then the connection is the first to make room."""
            self._disarm()
            self._unset_keepalive_if_required()
            self._lingering = True
            if self.flow is not None:
                self.flow.resume_reading()
            if self.transport.can_write_eof():
                self.transport.write_eof()
            self._timer = self.loop.call_later(limits.header_timeout, self.transport.close)
            if not self._probe:
                waiting.add(self, first=True)

        def close_after_answer(self) -> None:
            """uvicorn's close after an answer (:class:`_Answering`)."""
            if self.cycle is not None and self.cycle.more_body and not self._lingering \
                    and not self.transport.is_closing():
                self.linger()
            else:
                self.transport.close()

        # ------------------------------------------------------------------ the parser's

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self._fields = 0
            # for _Bridge's _peer (an extension key of ours, beside the ASGI ones)
            cast(dict[str, Any], self.scope)["shuangkou.transport"] = self.transport
            if self._timer is None:            # a kept-alive connection's next request
                self._arm("header", limits.header_timeout)

        def on_header(self, name: bytes, value: bytes) -> None:
            self._fields += 1
            if self._fields > field_limit:
                raise _HeadTooLarge
            super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._head = None
            if self.parser.should_upgrade():   # read again without the offer: above
                self._upgrade = True
                return
            waiting.remove(self)
            super().on_headers_complete()
            if self.cycle is not None:
                # its close lingers when the request was not read whole: linger()
                self.cycle.transport = cast(asyncio.Transport, _Answering(self))
            self._arm("body", limits.body_timeout)

        def on_message_complete(self) -> None:
            if self._upgrade:
                return
            super().on_message_complete()
            self._disarm()
            # What follows is the next request's head. (Bytes of it that came in the read
            # that ended this request are not counted: a head pipelined behind a body may
            # pass the limit by one read, 256 KiB, before it is refused.)
            self._head = 0

        def on_response_complete(self) -> None:
            if self._lingering:                 # the connection's last answer
                return
            idle = not self.pipeline
            super().on_response_complete()
            if idle and not self.transport.is_closing() and not self._probe:
                waiting.add(self)

        def timeout_keep_alive_handler(self) -> None:
            if not self.transport.is_closing() and "idle" in timeouts:
                timeouts["idle"].inc()
            super().timeout_keep_alive_handler()

        def _arm(self, phase: str, seconds: float) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expired, phase)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self, phase: str) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            # A connection that never sent a byte was idle, not slow.
            phase = phase if self._bytes else "idle"
            if phase in timeouts:
                timeouts[phase].inc()
            if self._bytes and (self.cycle is None or self.cycle.response_complete
                                or not self.cycle.response_started):
                self.transport.write(_SLOW)
            self.transport.close()

    return EdgeProtocol


class _Answering:
    """The transport of one request as uvicorn's answer sees it (its writes go through),
    whose close is the protocol's :meth:`close_after_answer`: an answer given before the
    request was read whole lingers rather than resetting the connection."""

    __slots__ = ("_protocol",)

    def __init__(self, protocol: Any) -> None:
        self._protocol = protocol

    def write(self, data: bytes) -> None:
        self._protocol.transport.write(data)

    def is_closing(self) -> bool:
        return bool(self._protocol.transport.is_closing())

    def close(self) -> None:
        self._protocol.close_after_answer()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._protocol.transport, name)


def _client(address: tuple[str, int] | None) -> str:
    return f"{address[0]}:{address[1]}" if address else "-"


class EdgeServer:
    """uvicorn serving an ASGI application on a bound socket, from a thread (and event
    loop) of its own, with the limits of :class:`EdgeLimits`; with ``probe`` (a loopback
    socket of its own), also there for :meth:`answers`."""

    def __init__(self, app: Any, sock: socket.socket, limits: EdgeLimits, *,
                 grace: float = 5.0, name: str = "http",
                 probe: socket.socket | None = None) -> None:
        import uvicorn

        from .logs import bound_lines

        self.port: int = sock.getsockname()[1]
        self.app, self.limits = app, limits
        self._sock, self._probe = sock, probe
        self._probe_address: tuple[str, int] | None = (
            tuple(probe.getsockname()[:2]) if probe is not None else None)
        config = uvicorn.Config(
            app, http=_protocol_class(limits, self._probe_address), loop="asyncio",
            lifespan="off",
            interface="asgi3", ws="none", log_config=None, log_level=None, access_log=False,
            server_header=False, proxy_headers=False, timeout_keep_alive=max(1, round(limits.keepalive_timeout)),
            timeout_graceful_shutdown=max(1, round(grace)), backlog=2048,
            h11_max_incomplete_event_size=64 * 1024)
        self._server = uvicorn.Server(config)
        # uvicorn's start-up and shutdown lines ("Started server process ...") say nothing
        # the service's own log line does not; its warnings and errors stay, bounded with
        # every other line a client can cause.
        quiet = logging.getLogger("uvicorn.error")
        if quiet.level == logging.NOTSET:
            quiet.setLevel(logging.WARNING)
        metrics = limits.metrics
        bound_lines(CLIENT_LOGGERS, CLIENT_LINES_PER_SECOND,
                    metrics.log_dropped.labels if metrics is not None else None)
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        sockets = [self._sock] if self._probe is None else [self._sock, self._probe]
        asyncio.run(self._server.serve(sockets=sockets))

    def start(self) -> None:
        """Serve; returns once the socket listens (or the server failed)."""
        self._thread.start()
        deadline = time.monotonic() + 10
        while (not self._server.started and self._thread.is_alive()
               and time.monotonic() < deadline):
            time.sleep(0.005)

    def answers(self, timeout: float = 1.0) -> bool:
        """Whether the server answers: it still listens on its port, and a request to its
        probe socket (loopback, of this process alone) is answered within ``timeout``.
        Through a socket of its own, the probe never queues behind the connections of the
        port: a client flooding the port does not make the server look broken, one whose
        event loop is stuck or whose listener closed does."""
        import http.client

        if self._probe_address is None or not self.listening:
            return False
        conn = http.client.HTTPConnection(*self._probe_address, timeout=timeout)
        try:
            conn.request("GET", "/healthz")     # not /readyz: that answers from readiness
            return conn.getresponse().status == 200
        except (OSError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    @property
    def listening(self) -> bool:
        """Whether the server accepts connections on its port."""
        servers = getattr(self._server, "servers", [])
        return (self._server.started and not self._server.should_exit
                and any(s.is_serving() for s in servers))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, let calls in flight finish (uvicorn's graceful shutdown), close."""
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(timeout)
        else:
            self._sock.close()
            if self._probe is not None:
                self._probe.close()


def listening_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A bound TCP socket (``host`` an IPv4 or IPv6 address, brackets allowed); OSError."""
    host = host.strip("[]")
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on connections of a socket that says
    # so, and without it a reply written in two parts waits out the client's delayed ACK
    # (40 ms a call on Linux).
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM,
                         socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


class _Bridge:
    """The ASGI face of an :class:`HttpApp`: reads the body on the event loop (bounded by
    its method's limit, ``limits``: refused 413 before it is read when its Content-Length
    is over it, or as it arrives, and counted in ``refusals``), runs the call on the handler
    threads gRPC uses — or, when admission finds ``max_queued_calls`` calls already waiting,
    refuses it at once from a thread of its own, as gRPC's are (RESOURCE_EXHAUSTED, HTTP
    429, counted) — and watches for the client hanging up meanwhile (the call's context
    then reports it gone)."""

    def __init__(self, app: HttpApp, pool: Executor, admission: Admission,
                 limits: BodyLimits, default_deadline: float, metrics: Metrics,
                 health: Callable[[], Mapping[str, str]] | None = None,
                 access: AccessLog | None = None, refusals: _Refusals | None = None) -> None:
        self._app, self._pool, self._admission = app, pool, admission
        self._limits, self._default = limits, default_deadline
        self._disconnects = metrics.http_disconnects
        self._health = health
        self._access = access
        self._refusals = refusals

    async def __call__(self, scope: dict[str, Any], receive: Callable[[], Any],
                       send: Callable[[Any], Any]) -> None:
        if scope["type"] != "http":
            return
        # Probes on the event loop (they answer while every thread works), with no access
        # line, as gRPC health checks get none.
        if scope["path"] in PROBES:
            await _answer(send, *probe(scope["path"], scope["method"], self._health))
            return
        if self._access is None:
            await self._serve(scope, receive, send)
            return
        # --- the access-log hook (issue 36): the request served, what went each way seen
        seen = _Seen(receive, send)
        t0 = time.perf_counter()
        try:
            await self._serve(scope, seen.receive, seen.send)
        finally:
            seen.log(self._access, scope, time.perf_counter() - t0)

    async def _serve(self, scope: dict[str, Any], receive: Callable[[], Any],
                     send: Callable[[Any], Any]) -> None:
        t0 = time.perf_counter()
        limit, setting = self._limits(scope["path"])
        body = await self._body(scope, receive, limit)
        if body is _GONE:                        # hung up before its body was in
            self._disconnects.inc()
            return
        if body is None:
            if self._refusals is not None:
                self._refusals.count(scope["path"], grpc.StatusCode.RESOURCE_EXHAUSTED,
                                     "too_large", time.perf_counter() - t0)
            await self._refuse(scope, send, 413, grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"request body over the limit of {limit:,} bytes ({setting})")
            return
        loop = asyncio.get_running_loop()
        overloaded = self._admission.overloaded()
        call = _Call(time.monotonic() + self._default if self._default else None, overloaded,
                     _peer(scope))
        scope["shuangkou.call"] = call         # for the access line (_Seen)
        watch = loop.create_task(_watch(receive, call))
        started = False

        async def sending(message: Any) -> None:
            nonlocal started
            started = True
            await send(message)
        try:      # the watch and the duplicate socket last as long as the answer does
            await self._answer(scope, body, call, loop, sending)
        except Exception:
            if started:
                raise
            # uvicorn's own answer would be a bare "Internal Server Error" page
            log.exception("HTTP %s %s failed", scope["method"], bounded(scope["path"], 256))
            await self._refuse(scope, send, 500, grpc.StatusCode.INTERNAL,
                               "the server failed this call (its log says why)")
        finally:
            watch.cancel()
            call.close()

    async def _refuse(self, scope: dict[str, Any], send: Callable[[Any], Any], status: int,
                      code: grpc.StatusCode, message: str) -> None:
        """:func:`http_error` from the event loop (the request not read whole, or the
        application failed): in the request's protocol, with its CORS headers, and the
        connection closed after it."""
        headers = dict(scope["headers"])
        origin = headers.get(b"origin")
        line, fields, body = http_error(
            headers.get(b"content-type", b"").decode("latin-1"), status, code, message,
            self._app.cors(origin.decode("latin-1") if origin else None), in_band=True)
        await _answer(send, int(line[:3]), [
            *((k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in fields),
            (b"connection", b"close")], body)

    async def _answer(self, scope: dict[str, Any], body: bytes, call: _Call,
                      loop: asyncio.AbstractEventLoop, send: Callable[[Any], Any]) -> None:
        stream: asyncio.Queue[Any] = asyncio.Queue()
        run = loop.run_in_executor(
            self._admission.refusals if call.overloaded else self._pool, self._run,
            _environ(scope, body), call, loop, stream)
        first = loop.create_task(stream.get())
        await asyncio.wait((run, first), return_when=asyncio.FIRST_COMPLETED)
        whole = not first.done()
        if whole:                        # the whole answer at once: a unary call
            first.cancel()
            status, headers, chunks = await run
        else:                            # a long stream: its head, then chunks as they come
            status, headers, chunks = first.result()
        if call.gone:
            self._disconnects.inc()
            # The server may not know yet (the call's thread saw it first): an answer that
            # goes nowhere, rather than uvicorn's error line for an application that gave none.
            await _answer(send, 499, [(b"connection", b"close")], b"")
            await run
            return
        raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers]
        if whole:
            data = b"".join(chunks)
            if not any(k == b"content-length" for k, _ in raw):
                raw.append((b"content-length", str(len(data)).encode()))
            await _answer(send, int(status[:3]), raw, data)
            return
        await send({"type": "http.response.start", "status": int(status[:3]), "headers": raw})
        for chunk in chunks:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        while (chunk := await stream.get()) is not None:
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b""})
        await run

    @staticmethod
    async def _body(scope: dict[str, Any], receive: Callable[[], Any],
                    limit: int) -> bytes | None:
        """The request body; None when it is over ``limit``: as its Content-Length says,
        before it is read (uvicorn holds no more than its 64 KiB high-water mark and one
        read of it, and a client that waits for ``100 Continue`` sends nothing), or as it
        arrives."""
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                return None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return _GONE
            part = message.get("body", b"")
            if len(body) + len(part) > limit:
                return None
            body += part
            if not message.get("more_body"):
                return bytes(body)

    def _run(self, environ: dict[str, Any], call: _Call, loop: asyncio.AbstractEventLoop,
             stream: asyncio.Queue[Any]) -> tuple[str, list[tuple[str, str]], list[bytes]]:
        """On a handler thread: the WSGI call, its answer returned whole (a unary call's: a
        list, or a gRPC-Web generator of two frames). A longer stream (ScoreReplays) is not
        held: its head and first chunks go to ``stream``, then each chunk as it comes, then
        None."""
        if call.gone:         # hung up while the call waited for a thread: nothing to run
            return "499 Client Closed Request", [], []
        _current.call = call
        head: list[Any] = []

        def start_response(status: str, headers: list[tuple[str, str]],
                           exc_info: Any = None) -> Any:
            head[:] = [status, headers]
        body: Any = ()
        try:
            body = self._app(environ, cast("StartResponse", start_response))
            listed = body.listed if isinstance(body, _Tracked) else body
            if isinstance(listed, list):
                return head[0], head[1], list(listed)
            chunks, held = iter(body), []
            for chunk in chunks:
                held.append(chunk)
                if len(held) == _HELD_CHUNKS:
                    break
            else:
                return head[0], head[1], held
            loop.call_soon_threadsafe(stream.put_nowait, (head[0], head[1], held))
            try:
                for chunk in chunks:
                    if chunk:
                        loop.call_soon_threadsafe(stream.put_nowait, chunk)
            finally:
                loop.call_soon_threadsafe(stream.put_nowait, None)
            return head[0], head[1], []
        finally:
            getattr(body, "close", lambda: None)()
            _current.call = None


#: The access line's protocol by :func:`_protocol`'s metric label.
_ACCESS_PROTOCOLS = {"connect": "connect", "grpc_web": "grpc-web", "grpc": "grpc",
                     "other": "http"}


class _Seen:
    """An HTTP request's receive and send, watched for the access line: the body bytes each
    way and the status."""

    __slots__ = ("_receive", "_send", "received", "sent", "status")

    def __init__(self, receive: Callable[[], Any], send: Callable[[Any], Any]) -> None:
        self._receive, self._send = receive, send
        self.received = self.sent = self.status = 0

    async def receive(self) -> Any:
        message = await self._receive()
        self.received += len(message.get("body", b""))
        return message

    async def send(self, message: Any) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        else:
            self.sent += len(message.get("body", b""))
        await self._send(message)

    def log(self, access: AccessLog, scope: dict[str, Any], seconds: float) -> None:
        headers = dict(scope["headers"])
        protocol = _ACCESS_PROTOCOLS[_protocol(headers.get(b"content-type", b"").decode(
            "latin-1"))]
        if protocol == "http" and scope["method"] == "GET" and b"connect=v1" in scope.get(
                "query_string", b""):
            protocol = "connect"           # a Connect GET: the message is in the query
        call: _Call | None = scope.get("shuangkou.call")
        code = call.code if call is not None else ""
        client = scope.get("client") or ("", 0)
        access.call(bounded(scope["path"], 256), protocol, code, seconds,
                    f"{client[0]}:{client[1]}" if client[0] else "", self.received, self.sent,
                    failed=code != "OK" if code else self.status >= 400,
                    trace_id=call.trace_id if call is not None else "",
                    http_method=scope["method"], status=self.status)


def _peer(scope: dict[str, Any]) -> socket.socket | None:
    """A duplicate of the call's connection (:class:`EdgeProtocol` puts its transport in the
    scope), for :meth:`_Call.hung_up`; None under another server."""
    transport = scope.get("shuangkou.transport")
    raw = transport.get_extra_info("socket") if transport is not None else None
    if raw is None:
        return None
    try:
        return socket.socket(fileno=os.dup(raw.fileno()))
    except OSError:
        return None


async def _watch(receive: Callable[[], Any], call: _Call) -> None:
    """Mark ``call`` gone when its client hangs up before the answer (uvicorn reports a
    disconnect to a receive() pending after the body)."""
    message = await receive()
    if message["type"] == "http.disconnect":
        call.gone = True


async def _answer(send: Callable[[Any], Any], status: int, headers: list[tuple[bytes, bytes]],
                  body: bytes) -> None:
    if not any(k == b"content-length" for k, _ in headers):
        headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _environ(scope: dict[str, Any], body: bytes) -> dict[str, Any]:
    """The WSGI environ of an ASGI request (PEP 3333: header values as latin-1 text)."""
    client = scope.get("client") or ("", 0)
    server = scope.get("server") or ("", 0)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": scope["method"], "SCRIPT_NAME": "", "PATH_INFO": scope["path"],
        "QUERY_STRING": scope.get("query_string", b"").decode("latin-1"),
        "SERVER_PROTOCOL": f"HTTP/{scope.get('http_version', '1.1')}",
        "SERVER_NAME": server[0], "SERVER_PORT": str(server[1]),
        "REMOTE_ADDR": client[0], "REMOTE_PORT": str(client[1]),
        "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
        "wsgi.url_scheme": scope.get("scheme", "http"), "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0), "wsgi.multithread": True, "wsgi.multiprocess": False,
        "wsgi.run_once": False}
    for name, value in scope["headers"]:
        key = name.decode("latin-1").upper().replace("-", "_")
        if key == "CONTENT_LENGTH":
            continue
        if key != "CONTENT_TYPE":
            key = "HTTP_" + key
        text = value.decode("latin-1")
        environ[key] = f"{environ[key]},{text}" if key in environ else text
    return environ


@dataclass(frozen=True)
class HttpServer:
    """The HTTP port: an :class:`HttpApp` behind :class:`_Bridge`, served by uvicorn."""

    app: HttpApp
    edge: EdgeServer

    @property
    def port(self) -> int:
        return self.edge.port

    def start(self) -> None:
        self.edge.start()

    def answers(self) -> bool:
        """Whether the port answers (:meth:`EdgeServer.answers`): what readiness follows."""
        return self.edge.answers()

    def drain(self, grace: float) -> None:
        """Stop accepting connections, let requests in flight finish (up to ``grace``
        seconds), then close every connection."""
        self.edge._server.should_exit = True
        if not self.app.wait_idle(grace):
            log.warning("HTTP: %d request(s) still in flight after %gs", self.app.in_flight,
                        grace)
        self.stop()

    def stop(self) -> None:
        self.edge.stop()


def create_http_server(config: Config, servicers: Mapping[str, Any],
                       interceptor: MetricsInterceptor, metrics: Metrics,
                       pool: Executor | None = None, *,
                       health: Callable[[], Mapping[str, str]] | None = None) -> HttpServer:
    """The HTTP port of ``config`` serving ``servicers`` (``{"shuangkou": ..., "rounds":
    ...}``, the instances gRPC serves) through ``interceptor``, on ``pool`` (gRPC's handler
    threads, so that one queue bound holds for both ports; its own when None); bound, not
    yet started. ``health``: the gRPC health statuses by service, for ``/readyz``
    (:func:`shuangkou.service.server.health_statuses`)."""
    admission = interceptor.admission
    codecs = [_Codec(admission, json=False), _Codec(admission, json=True)]
    # connectrpc refuses a message over twice the limit itself (as gRPC's transport does);
    # below that the codec measures it, so that the refusal is counted.
    read_max = min(2 * config.max_message_bytes, config.http_max_request_bytes)
    refusals = _Refusals(interceptor)
    apps = [
        service_connect.ShuangkouServiceWSGIApplication(
            _endpoints(servicers["shuangkou"],
                       service_pb2_grpc.add_ShuangkouServiceServicer_to_server, interceptor),
            interceptors=[refusals], read_max_bytes=read_max, codecs=codecs),
        rounds_connect.RoundServiceWSGIApplication(
            _endpoints(servicers["rounds"], rounds_pb2_grpc.add_RoundServiceServicer_to_server,
                       interceptor),
            interceptors=[refusals], read_max_bytes=read_max, codecs=codecs),
    ]
    app = HttpApp(apps, metrics, config.http_cors_origins, refusals)
    if pool is None:
        pool = admission.pool or futures.ThreadPoolExecutor(config.threads,
                                                            thread_name_prefix="http")
    bridge = _Bridge(app, pool, admission,
                     BodyLimits(config.max_message_bytes, config.http_max_request_bytes),
                     config.default_deadline, metrics, health, interceptor.access, refusals)
    try:
        sock = listening_socket(config.http_host, config.http_port,
                                reuse_port=config.shares_ports)
    except OSError as exc:
        raise OSError(f"cannot listen on {config.http_address}: {exc.strerror} (setting "
                      "http_port, flag --http-port; --no-http disables HTTP)") from None
    # the readiness probe's own way in (EdgeServer.answers), on loopback
    try:
        probe = listening_socket("127.0.0.1", 0)
    except OSError:                             # a host without IPv4
        probe = listening_socket("::1", 0)
    return HttpServer(app, EdgeServer(bridge, sock, EdgeLimits.of(config, metrics),
                                      grace=config.grace, probe=probe))


# ----------------------------------------------------------------------------- health over HTTP

#: The probes of the HTTP port (docs/operations.md "Health over HTTP"), for load balancers
#: and orchestrators that do not speak gRPC health.
PROBES = ("/healthz", "/readyz")
_PROBE_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]


def probe(path: str, method: str, health: Callable[[], Mapping[str, str]] | None
          ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """The answer to a probe: ``/healthz`` (liveness) 200 whenever the process answers;
    ``/readyz`` 200 when every service's gRPC health (``health()``, the statuses by service
    name, ``""`` the server as a whole) is SERVING, else 503 — the state gRPC health
    clients see, NOT_SERVING while draining or while the HTTP server does not answer its
    own probe (:class:`Readiness`). Without ``health`` (an embedder's server) ready is live.
    Not counted in ``shuangkou_http_requests_total``, which counts API calls by protocol."""
    if method not in ("GET", "HEAD"):
        line, fields, body = http_error("", 405, grpc.StatusCode.UNIMPLEMENTED,
                                        f"{path} answers GET (or HEAD)", [("Allow", "GET, HEAD")])
        return int(line[:3]), [(k.lower().encode(), v.encode()) for k, v in fields], body
    if path == "/healthz" or health is None:
        return 200, _PROBE_HEADERS, b'{"status":"SERVING"}'
    services = dict(health())
    ready = bool(services) and all(s == "SERVING" for s in services.values())
    return (200 if ready else 503), _PROBE_HEADERS, orjson.dumps(
        {"status": "SERVING" if ready else "NOT_SERVING", "services": services})


# ----------------------------------------------------------------------------- readiness

class Readiness:
    """Asks ``answers`` (:meth:`HttpServer.answers`) every ``interval`` seconds;
    ``on_change(ready)`` when the answer changes, so that a pod whose HTTP server is broken
    — its event loop stuck, its listener closed — leaves the load balancer, while one that a
    client floods stays in it (the question goes through a loopback socket of the server's
    own, never through the port's queue of connections)."""

    def __init__(self, answers: Callable[[], bool], on_change: Callable[[bool], None],
                 metrics: Metrics | None = None, interval: float = 2.0) -> None:
        self.probe, self._on_change, self._interval = answers, on_change, interval
        self._gauge = metrics.http_ready if metrics else None
        self._stop = threading.Event()
        self.ready = True
        if self._gauge is not None:
            self._gauge.set(1)
        self._thread = threading.Thread(target=self._loop, name="http-ready", daemon=True)

    def start(self) -> Readiness:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            ready = self.probe()
            if ready != self.ready and not self._stop.is_set():
                self.ready = ready
                if self._gauge is not None:
                    self._gauge.set(int(ready))
                log.warning("HTTP server %s: the service is %s", "answers again" if ready
                            else "does not answer its loopback probe within 1 s",
                            "SERVING" if ready else "NOT_SERVING")
                self._on_change(ready)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
