"""The API over HTTP beside gRPC: the Connect protocol (JSON or binary over HTTP/1.1, what
``curl`` sends) and gRPC-Web (browsers), from the same servicers on a port of their own.

The protocols are connectrpc's: the WSGI application of each service is generated from the
protos (``shuangkou.v1.*_connect``, protoc-gen-connectrpc), served in this process by
waitress (docs/decisions.md "HTTP"). What is ours is the seam, so that an HTTP call is the
gRPC call it stands for:

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
  requests by protocol; :class:`HttpServer` runs waitress and drains on shutdown.
"""

from __future__ import annotations

import functools
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment
    from connectrpc.request import RequestContext
    from protobuf import Registry

    from .config import Config
    from .interceptor import MetricsInterceptor
    from .metrics import Metrics

__all__ = ["CallContext", "HttpApp", "HttpServer", "create_http_server", "connect_error",
           "schema", "PROTOCOLS"]

log = logging.getLogger(__name__)
#: The ``protocol`` label of ``shuangkou_http_requests_total``.
PROTOCOLS = ("connect", "grpc_web", "grpc", "other")
_CONNECT_CODES: dict[grpc.StatusCode, Code] = {
    c: Code[c.name.replace("CANCELLED", "CANCELED")] for c in grpc.StatusCode
    if c is not grpc.StatusCode.OK}
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
    return ConnectError(_CONNECT_CODES.get(status.code, Code.UNKNOWN), status.details or "",
                        details)


class CallContext:
    """What the servicers and the interceptor use of a ``grpc.ServicerContext``, over a
    Connect request: the deadline, the status set so far, aborts (as ``ConnectError``)."""

    __slots__ = ("_ctx", "_code")

    def __init__(self, ctx: RequestContext[Any, Any]) -> None:
        self._ctx = ctx
        self._code: grpc.StatusCode | None = None

    def time_remaining(self) -> float | None:
        left = self._ctx.timeout_ms
        return None if left is None else max(0.0, left / 1000)

    def is_active(self) -> bool:
        """Until the deadline (an HTTP/1.1 server cannot see a client that hung up)."""
        left = self._ctx.timeout_ms
        return left is None or left > 0

    def code(self) -> grpc.StatusCode | None:
        return self._code

    def abort(self, code: grpc.StatusCode, details: str) -> NoReturn:
        self._code = code
        raise ConnectError(_CONNECT_CODES.get(code, Code.UNKNOWN), details)

    def abort_with_status(self, status: grpc.Status) -> NoReturn:
        self._code = status.code
        raise connect_error(status)

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return tuple(self._ctx.request_headers.items())

    def peer(self) -> str:
        return self._ctx.client_address or ""


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
            from .errors import bounded

            why = bounded(str(exc).replace("\n", " "), 200) if isinstance(
                exc, (ValueError, TypeError)) else type(exc).__name__
            return RejectedMessage("undecodable",
                                   f"request is not a valid {name} in JSON: {why}")
        return decode(binary)


# ----------------------------------------------------------------------------- the application

def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _Capture:
    """Stands for a grpc.Server to the generated registration: keeps its method handlers."""

    def __init__(self) -> None:
        self.handlers: dict[str, Any] = {}

    def add_generic_rpc_handlers(self, handlers: Any) -> None:
        pass

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        self.service, self.handlers = service, handlers


def _endpoints(servicer: Any, register: Callable[[Any, Any], None],
               interceptor: MetricsInterceptor) -> Any:
    """The snake_case object a generated WSGI application calls: each method the servicer's
    gRPC handler, without serializers (the Connect codec encodes), through the interceptor."""
    capture = _Capture()
    register(servicer, capture)
    methods = {}
    for name, handler in capture.handlers.items():
        wrapped = interceptor.wrap(f"/{capture.service}/{name}", handler._replace(
            request_deserializer=None, response_serializer=None))
        behaviour: Any = (wrapped.unary_unary or wrapped.unary_stream or wrapped.stream_unary
                          or wrapped.stream_stream)
        streaming = wrapped.response_streaming
        reply = message_factory.GetMessageClass(descriptor_pool.Default().FindMethodByName(
            f"{capture.service}.{name}").output_type)
        methods[_snake(name)] = _call_stream(behaviour) if streaming else _call(behaviour,
                                                                                 reply)
    return type("Endpoints", (), {k: staticmethod(v) for k, v in methods.items()})()


def _call(behaviour: Callable[[Any, Any], Any], reply: type[Any]) -> Callable[[Any, Any], Any]:
    def call(request: Any, ctx: RequestContext[Any, Any]) -> Any:
        context = CallContext(ctx)
        response = behaviour(request, context)
        if not context.is_active():      # as gRPC: an answer after the deadline is not sent
            raise ConnectError(Code.DEADLINE_EXCEEDED, "the deadline passed")
        # a servicer may answer with the reply's bytes (BatchClassify): the codec wants the
        # message
        return reply.FromString(response) if type(response) is bytes else response
    return call


def _call_stream(behaviour: Callable[[Any, Any], Iterator[Any]]
                 ) -> Callable[[Any, Any], Iterator[Any]]:
    def call(requests: Any, ctx: RequestContext[Any, Any]) -> Iterator[Any]:
        return behaviour(requests, CallContext(ctx))
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


#: What a browser page may send and read (Connect and gRPC-Web, connectrpc.com "CORS").
_ALLOW_HEADERS = ("content-type", "connect-protocol-version", "connect-timeout-ms",
                  "grpc-timeout", "x-grpc-web", "x-user-agent", "connect-content-encoding",
                  "connect-accept-encoding", "grpc-accept-encoding", "grpc-encoding")
_EXPOSE_HEADERS = "Grpc-Status, Grpc-Message, Grpc-Status-Details-Bin, Content-Encoding"


class _Tracked:
    """A response body that counts as in flight until the server closes it."""

    __slots__ = ("_body", "_done")

    def __init__(self, body: Iterable[bytes], done: Callable[[], None]) -> None:
        self._body, self._done = body, done

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
                 cors_origins: Sequence[str] = ()) -> None:
        self._apps: dict[str, WSGIApplication] = {app.path: app for app in apps}
        self._requests = {p: metrics.http_requests.labels(p) for p in PROTOCOLS}
        self._any_origin = "*" in cors_origins
        self._origins = frozenset(cors_origins)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self.in_flight = 0

    def _cors(self, environ: WSGIEnvironment) -> list[tuple[str, str]]:
        origin = environ.get("HTTP_ORIGIN")
        if not origin or not (self._any_origin or origin in self._origins):
            return []
        return [("Access-Control-Allow-Origin", origin), ("Vary", "Origin"),
                ("Access-Control-Expose-Headers", _EXPOSE_HEADERS)]

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse
                 ) -> Iterable[bytes]:
        cors = self._cors(environ)
        if environ["REQUEST_METHOD"] == "OPTIONS":
            return self._preflight(environ, cors, start_response)
        path = environ.get("PATH_INFO", "")
        app = self._apps.get(path[:path.rfind("/")]) if path.count("/") == 2 else None
        if app is None:
            start_response("404 Not Found", [("Content-Type", "text/plain"), *cors])
            return [b"no such method: POST /shuangkou.v1.<Service>/<Method>\n"]
        self._requests[_protocol(environ.get("CONTENT_TYPE", ""))].inc()

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            return start_response(status, headers + cors, exc_info)

        with self._lock:
            self.in_flight += 1
        try:
            body = app(environ, start)
        except BaseException:
            self._done()
            raise
        return _Tracked(body, self._done)

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
        if not cors:
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"origin not allowed (setting http_cors_origins)\n"]
        asked = [h.strip().lower() for h in
                 environ.get("HTTP_ACCESS_CONTROL_REQUEST_HEADERS", "").split(",") if h.strip()]
        start_response("204 No Content", [
            *cors, ("Access-Control-Allow-Methods", "POST, GET"),
            ("Access-Control-Allow-Headers", ", ".join(h for h in asked if h in _ALLOW_HEADERS)),
            ("Access-Control-Max-Age", "7200")])
        return []


# ----------------------------------------------------------------------------- the server

@dataclass(frozen=True)
class HttpServer:
    """waitress serving an :class:`HttpApp` on its own thread."""

    app: HttpApp
    port: int
    _server: Any
    _thread: threading.Thread

    def start(self) -> None:
        self._thread.start()

    def drain(self, grace: float) -> None:
        """Stop accepting connections, let requests in flight finish (up to ``grace``
        seconds), then close every connection and stop the threads."""
        self._server.trigger.pull_trigger(lambda: setattr(self._server, "accepting", False))
        if not self.app.wait_idle(grace):
            log.warning("HTTP: %d request(s) still in flight after %gs", self.app.in_flight,
                        grace)
        self.stop()

    def stop(self) -> None:
        from waitress import wasyncore

        server = self._server
        server.task_dispatcher.shutdown(cancel_pending=True, timeout=1)
        if self._thread.is_alive():
            server.trigger.pull_trigger(lambda: wasyncore.close_all(server._map))
            self._thread.join(5)
        else:
            wasyncore.close_all(server._map)


def _bind(config: Config) -> socket.socket:
    host = config.http_host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if config.reuse_port or config.workers > 1:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, config.http_port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {config.http_address}: {exc.strerror} (setting "
                      "http_port, flag --http-port; --no-http disables HTTP)") from None
    return sock


def create_http_server(config: Config, servicers: Mapping[str, Any],
                       interceptor: MetricsInterceptor, metrics: Metrics) -> HttpServer:
    """The HTTP port of ``config`` serving ``servicers`` (``{"shuangkou": ..., "rounds":
    ...}``, the instances gRPC serves) through ``interceptor``; bound, not yet started."""
    from waitress.server import create_server

    admission = interceptor.admission
    codecs = [_Codec(admission, json=False), _Codec(admission, json=True)]
    # connectrpc refuses a message over twice the limit itself (as gRPC's transport does);
    # below that the codec measures it, so that the refusal is counted.
    read_max = min(2 * config.max_message_bytes, config.http_max_request_bytes)
    apps = [
        service_connect.ShuangkouServiceWSGIApplication(
            _endpoints(servicers["shuangkou"],
                       service_pb2_grpc.add_ShuangkouServiceServicer_to_server, interceptor),
            read_max_bytes=read_max, codecs=codecs),
        rounds_connect.RoundServiceWSGIApplication(
            _endpoints(servicers["rounds"], rounds_pb2_grpc.add_RoundServiceServicer_to_server,
                       interceptor),
            read_max_bytes=read_max, codecs=codecs),
    ]
    app = HttpApp(apps, metrics, config.http_cors_origins)
    sock = _bind(config)
    server = create_server(
        app, sockets=[sock], threads=config.threads, ident="shuangkou",
        max_request_body_size=config.http_max_request_bytes,
        channel_timeout=int(config.max_connection_idle or 300), connection_limit=1000,
        expose_tracebacks=False, clear_untrusted_proxy_headers=True)
    thread = threading.Thread(target=server.run, name="http", daemon=True)
    return HttpServer(app, sock.getsockname()[1], server, thread)
