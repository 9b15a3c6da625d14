"""Every failure's wire form, built in one place: unary aborts, the interceptor's refusals
and in-band ``google.rpc.Status``.
(Reading one back is the client's: :func:`decode_status` is
:func:`shuangkou.client.errors.decode_status`, re-exported here.)

A core error becomes a ``google.rpc.Status`` whose ``code`` follows the exception class
(bad input ``INVALID_ARGUMENT``, an unknown variant ``NOT_FOUND``, a state that forbids an
action or fails the caller's precondition ``FAILED_PRECONDITION``) and whose details are
(docs/api.md "Errors"):

* ``google.rpc.ErrorInfo``: ``reason`` = the core error's machine ``.reason``
  (INVALID_CARDS, INVALID_PLAY, INVALID_REPLAY, UNKNOWN_VARIANT, NOT_YOUR_TURN ...),
  ``domain`` = ``shuangkou.v1``, ``metadata["action"]`` = a replay's offending action index,
  ``metadata["setting"]`` and ``["limit"]`` = the server setting a call's cost ran into
  (:class:`OverCap`, :class:`Refused`);
* ``google.rpc.BadRequest`` (INVALID_ARGUMENT and NOT_FOUND): one field violation naming the
  request field; its ``description`` is the sentence without the "action N: " prefix.

Texts are bounded (:data:`MAX_MESSAGE_CHARS`, :data:`MAX_FIELD_CHARS`): an error never copies
unbounded input back. Anything that is not a known input error is a server bug: logged, and
``INTERNAL`` without the exception text. grpc's own aborts pass through :func:`rpc` untouched.

The server's own limits on expensive work (the lane, service/lane.py, and the caps on one
call's cost) refuse through two classes: :class:`OverCap` (``INVALID_ARGUMENT``: the request
asks for more than a setting allows any call, so the same request is refused every time)
and :class:`Refused` (``RESOURCE_EXHAUSTED``: the lane is full now, or the call ran into a
cap on its time).

What admission control refuses before a servicer runs (:mod:`shuangkou.service.admission`)
ends through :func:`refuse`: a plain status, ``INVALID_ARGUMENT`` for a request that does
not decode and ``RESOURCE_EXHAUSTED`` for one, or a reply, over the size limit and for a
stream over the cap.

Over HTTP (:mod:`shuangkou.service.http`) a method's failure is the same ``grpc.Status``:
the Connect seam hands it to connectrpc as it is, its code by :func:`connect_code`, its
message and detail bytes unchanged. Every error the HTTP port answers itself, before or
instead of a method — a path, HTTP method or content type it does not take, a body too
large, a request it cannot parse or that arrives too slowly, a connection past the cap —
is built by :func:`http_error` (Connect's JSON error, :func:`connect_error_json`, or a
gRPC-Web trailers-only answer), or by :func:`raw_http_error` when it is written to a
connection before any request is parsed; the port's modules only say why.
"""

from __future__ import annotations

import functools
import logging
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal, NoReturn, Protocol, TypeVar, cast

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from shuangkou.client.errors import InBand, decode_status
from shuangkou.core.documents import bounded as _bounded
from shuangkou.core.errors import (
    CardError,
    DeadlineExceeded,
    IllegalPlay,
    InvalidPlay,
    RuleViolation,
    ShuangkouError,
    VariantError,
)
from shuangkou.core.replay import ReplayError

__all__ = ["BadInput", "UnknownVariant", "StateMismatch", "RequestEnded", "OverCap", "Refused",
           "Failure",
           "field_scope",
           "failure_for", "status_proto", "wire_status", "item_status", "rpc", "refuse",
           "ended",
           "still_wanted", "status_code", "bounded", "status_for", "decode_status", "InBand",
           "connect_error_json", "connect_code", "grpc_code", "http_error", "raw_http_error",
           "RETRY_AFTER",
           "DOMAIN", "MAX_MESSAGE_CHARS", "MAX_FIELD_CHARS", "COMPACT_MESSAGE_CHARS",
           "INTERNAL_MESSAGE"]

log = logging.getLogger(__name__)
DOMAIN = "shuangkou.v1"
MAX_MESSAGE_CHARS = 300   # UTF-8 bytes of Status.message / FieldViolation.description
MAX_FIELD_CHARS = 100     # FieldViolation.field (a path such as replay.actions[12].cards)
COMPACT_MESSAGE_CHARS = 160   # a batch item's message (its description is left empty)
INTERNAL_MESSAGE = "internal error; see the server log"
F = TypeVar("F", bound=Callable[..., Any])


class UnknownVariant(VariantError):
    """A request names a variant id that does not exist (NOT_FOUND)."""

    reason = "UNKNOWN_VARIANT"


class BadInput(ShuangkouError):
    """Bad input detected by the service itself (limits, malformed requests)."""


class StateMismatch(ShuangkouError):
    """A round state that is not the one the caller's precondition names
    (FAILED_PRECONDITION): ``OTHER_ROUND`` (another round's state) or ``STALE_STATE`` (this
    round's, at another action count). A seal cannot tell either apart from the right state."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message, "precondition")
        self.reason = reason


class OverCap(BadInput):
    """A request that asks for more than a server setting allows one call (reason
    ``OVER_CAP``; ``field`` the request field that asks it): the setting and its value go
    in ``ErrorInfo.metadata`` (``setting``, ``limit``) as well as in the message."""

    reason = "OVER_CAP"

    def __init__(self, message: str, field: str, setting: str, limit: float) -> None:
        super().__init__(message, field)
        self.metadata = _cap(setting, limit)


class Refused(ShuangkouError):
    """A call the server declines, or ends, for a limit of its own rather than of the
    request (RESOURCE_EXHAUSTED): ``LANE_FULL`` (the lane for searches and reviews holds
    its bound: retry with backoff) or ``CAP_REACHED`` (the call ran to a cap on its time).
    The setting and its value go in ``ErrorInfo.metadata`` as :class:`OverCap`'s do."""

    def __init__(self, message: str, reason: str, setting: str, limit: float) -> None:
        super().__init__(message)
        self.reason = reason
        self.metadata = _cap(setting, limit)


def _cap(setting: str, limit: float) -> tuple[tuple[str, str], ...]:
    """ErrorInfo.metadata naming a server setting and its value (an int as written)."""
    return (("setting", setting), ("limit", str(limit) if isinstance(limit, int)
                                   else f"{limit:g}"))


class RequestEnded(ShuangkouError):
    """The client cancelled or the deadline passed while the work was under way."""

    def __init__(self, code: grpc.StatusCode) -> None:
        super().__init__("the request ended before the work finished")
        self.code = code
        self.reason = code.name


# Exception class -> status code, looked up along the MRO (the most specific class wins);
# anything not listed is a server bug (INTERNAL).
_CODES: dict[type[BaseException], grpc.StatusCode] = {
    UnknownVariant: grpc.StatusCode.NOT_FOUND,
    StateMismatch: grpc.StatusCode.FAILED_PRECONDITION,
    RuleViolation: grpc.StatusCode.FAILED_PRECONDITION,
    DeadlineExceeded: grpc.StatusCode.DEADLINE_EXCEEDED,
    Refused: grpc.StatusCode.RESOURCE_EXHAUSTED,
    VariantError: grpc.StatusCode.INVALID_ARGUMENT,
    CardError: grpc.StatusCode.INVALID_ARGUMENT,
    InvalidPlay: grpc.StatusCode.INVALID_ARGUMENT,
    ReplayError: grpc.StatusCode.INVALID_ARGUMENT,
    IllegalPlay: grpc.StatusCode.INVALID_ARGUMENT,
    ShuangkouError: grpc.StatusCode.INVALID_ARGUMENT,
}
_WITH_FIELD = (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND)


def bounded(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (the core's
    :func:`~shuangkou.core.documents.bounded`, by default to the wire's message bound)."""
    return _bounded(text, limit)


@dataclass(frozen=True)
class Failure:
    """What an exception maps to, before it is put on the wire (texts already bounded)."""

    code: grpc.StatusCode
    reason: str
    message: str
    field: str
    detail: str          # the message without a replay's "action N: " prefix
    action: int | None   # a replay's offending action (0-based)
    metadata: tuple[tuple[str, str], ...] = ()   # ErrorInfo.metadata beside the action


def _code(exc: BaseException) -> grpc.StatusCode | None:
    if isinstance(exc, RequestEnded):
        return exc.code
    for cls in type(exc).__mro__:
        if cls in _CODES:
            return _CODES[cls]
    return None


def core_field(exc: BaseException) -> str | None:
    """The field an exception names; a replay error's action index refines ``actions``."""
    field = getattr(exc, "field", None)
    action = getattr(exc, "action", None)
    if action is not None and field in (None, "actions"):
        return f"actions[{action}]"
    return field


def failure_for(exc: BaseException) -> Failure | None:
    """The mapped failure of an exception, or None when it is not a known input error."""
    code = _code(exc)
    if code is None:
        return None
    action = getattr(exc, "action", None)
    message = bounded(str(exc))
    detail = getattr(exc, "detail", None)
    return Failure(code, str(getattr(exc, "reason", "BAD_REQUEST")), message,
                   bounded(core_field(exc) or "", MAX_FIELD_CHARS),
                   bounded(detail) if isinstance(detail, str) else message,
                   action if isinstance(action, int) else None,
                   tuple(getattr(exc, "metadata", None) or ()))


def _pack(detail: Any) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(detail)
    return packed


def status_proto(exc: BaseException, *, compact: bool = False) -> status_pb2.Status:
    """The ``google.rpc.Status`` of any exception (in-band errors and unary aborts alike);
    an unknown exception is logged and becomes INTERNAL without its text.

    ``compact`` (BatchClassify items, many per reply): the message is cut to
    :data:`COMPACT_MESSAGE_CHARS` and the field violation carries no description."""
    failure = failure_for(exc)
    if failure is None:
        log.error("unexpected error", exc_info=exc)
        return status_pb2.Status(code=code_pb2.INTERNAL, message=INTERNAL_MESSAGE)
    metadata = dict(failure.metadata)
    if failure.action is not None:
        metadata["action"] = str(failure.action)
    details = [_pack(error_details_pb2.ErrorInfo(reason=failure.reason, domain=DOMAIN,
                                                 metadata=metadata))]
    if failure.code in _WITH_FIELD:
        details.append(_pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(
                field=failure.field, description="" if compact else failure.detail,
                reason=failure.reason)])))
    message = bounded(failure.message, COMPACT_MESSAGE_CHARS) if compact else failure.message
    return status_pb2.Status(code=getattr(code_pb2, failure.code.name), message=message,
                             details=details)


# Statuses built once per distinct failure: refusing plays (a hostile client sends them by
# the thousand, a batch repeats a handful of reasons) then costs about what answering them
# does. The key holds everything failure_for reads of an exception; bounded (emptied when
# full); an unknown error is never kept (it is logged on every call).
_statuses: dict[tuple[Any, ...], Any] = {}


def _kept(exc: BaseException, form: str, build: Callable[[BaseException], Any]) -> Any:
    key = (form, type(exc), str(exc), getattr(exc, "field", None),
           getattr(exc, "action", None), getattr(exc, "detail", None),
           getattr(exc, "reason", None), getattr(exc, "code", None),
           getattr(exc, "metadata", None))
    try:
        status = _statuses.get(key)
    except TypeError:               # an unhashable attribute: not kept
        return build(exc)
    if status is None:
        status = build(exc)
        if failure_for(exc) is not None:
            if len(_statuses) >= 4096:
                _statuses.clear()
            _statuses[key] = status
    return status


def wire_status(exc: BaseException) -> grpc.Status:
    """The ``grpc.Status`` a unary call fails with (code, message, details trailer)."""
    status: grpc.Status = _kept(exc, "wire", lambda e: rpc_status.to_status(status_proto(e)))
    return status


def item_status(exc: BaseException) -> bytes:
    """The encoded compact ``google.rpc.Status`` of a batch item (BatchClassify)."""
    data: bytes = _kept(exc, "item",
                        lambda e: status_proto(e, compact=True).SerializeToString())
    return data


def ended(context: grpc.ServicerContext) -> RequestEnded | None:
    """Why the call is over (deadline passed or client cancelled), or None while it is live."""
    if context.is_active():
        return None
    remaining = context.time_remaining()
    return RequestEnded(grpc.StatusCode.DEADLINE_EXCEEDED if remaining is not None
                        and remaining <= 0 else grpc.StatusCode.CANCELLED)


def still_wanted(context: grpc.ServicerContext) -> None:
    """Stop between stages of long work once the client gave up or the deadline passed."""
    stop = ended(context)
    if stop is not None:
        raise stop


class _StatusContext(Protocol):
    """``ServicerContext.code()``: grpcio has it (experimental since 1.38), typeshed does not."""

    def code(self) -> grpc.StatusCode | None: ...


def status_code(context: grpc.ServicerContext) -> grpc.StatusCode | None:
    """The status code the call's handler has set so far: None when it has set none (and
    for in-process test contexts without ``code()``)."""
    code = getattr(context, "code", None)
    return cast(_StatusContext, context).code() if callable(code) else None


def _aborted(context: grpc.ServicerContext) -> bool:
    """Whether grpc's own abort already set the call's status (its exception is then on its
    way out)."""
    return status_code(context) is not None


def rpc(method: F) -> F:
    """Fail a unary RPC with the status of whatever it raised (the one wrapper that does).

    An abort grpc already performed (``context.abort``: the status is set) passes through
    untouched; a failure after the client went away is reported as the cancellation or
    deadline it was, not as a server error.
    """
    @functools.wraps(method)
    def wrapper(self: Any, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return method(self, request, context)
        except Exception as exc:  # noqa: BLE001 - every failure gets a status
            if _aborted(context):
                raise
            stop = ended(context)
            if stop is not None and _code(exc) is None:
                exc = stop
            context.abort_with_status(wire_status(exc))
    return wrapper  # type: ignore[return-value]


def refuse(context: grpc.ServicerContext, reason: str, detail: str) -> NoReturn:
    """End a call that admission control refused (``reason`` one of
    :data:`shuangkou.service.admission.REJECT_REASONS`) with ``detail`` as its message."""
    context.abort(grpc.StatusCode.INVALID_ARGUMENT if reason == "undecodable"
                  else grpc.StatusCode.RESOURCE_EXHAUSTED, detail)


def _join(where: str, inner: str | None) -> str:
    if not inner:
        return where
    return f"{where}{inner}" if inner.startswith("[") else f"{where}.{inner}"


class field_scope:
    """Tag core errors raised inside with the request field ``where`` (a context manager).

    ``nested``: ``where`` is a document or message (a custom variant, a replay), and the core's
    own ``field`` is a path inside it, appended to ``where``; otherwise ``where`` replaces it.
    An ``UnknownVariant`` keeps its class (NOT_FOUND). A class, not a generator: it wraps
    every state load of the round RPCs, where a generator's set-up cost shows.
    """

    __slots__ = ("where", "nested")

    def __init__(self, where: str, nested: bool = False) -> None:
        self.where, self.nested = where, nested

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: Any) -> Literal[False]:
        if isinstance(exc, ShuangkouError):
            scoped(exc, self.where, self.nested)
        return False      # the error goes on, tagged


def scoped(exc: ShuangkouError, where: str, nested: bool = False) -> ShuangkouError:
    """``exc`` tagged with the request field ``where`` as :class:`field_scope` tags it
    (the innermost scope's tag stands); for compiled callers, which catch it themselves."""
    if not getattr(exc, "_scoped", False):
        exc.field = _join(where, core_field(exc)) if nested else where
        exc._scoped = True  # type: ignore[attr-defined]  # outer scopes keep the inner path
    return exc


def status_for(exc: BaseException) -> grpc.Status | None:
    """The wire status of a known input error, or None for a server bug (which
    :func:`status_proto` turns into INTERNAL)."""
    return None if failure_for(exc) is None else wire_status(exc)


# ----------------------------------------------------------------------------- over HTTP

def connect_code(code: grpc.StatusCode) -> str:
    """A gRPC status code's name in Connect (connectrpc.com/docs/protocol, "Error codes"):
    the code in lower case, ``canceled`` spelt as Connect spells it (``unknown`` for OK,
    which no error has)."""
    return _CONNECT_NAMES.get(code, "unknown")


def grpc_code(connect: str) -> grpc.StatusCode:
    """The gRPC status code of a Connect code name (:func:`connect_code` read back)."""
    return _GRPC_CODES.get(connect, grpc.StatusCode.UNKNOWN)


_CONNECT_NAMES: dict[grpc.StatusCode, str] = {
    c: c.name.lower().replace("cancelled", "canceled") for c in grpc.StatusCode
    if c is not grpc.StatusCode.OK}
_GRPC_CODES = {name: code for code, name in _CONNECT_NAMES.items()}
#: The header of an answer refused because the server is overloaded: retry in a second.
RETRY_AFTER = ("Retry-After", "1")
#: Reason phrases outside http.HTTPStatus.
_REASONS = {499: "Client Closed Request"}


def connect_error_json(code: str, message: str, *, end_of_stream: bool = False) -> bytes:
    """The body of an error the HTTP port answers itself: Connect's JSON error
    ``{"code", "message"}`` (``code`` its lower-case name), or a Connect stream's end message
    ``{"error": {...}}``, written as connectrpc writes a method's (``json.dumps``, the text
    as UTF-8), so that every error body of the port reads alike."""
    import json

    error = {"code": code, "message": message}
    return json.dumps({"error": error} if end_of_stream else error,
                      ensure_ascii=False).encode()


def http_error(content_type: str, status: int, code: grpc.StatusCode, message: str,
               headers: Sequence[tuple[str, str]] = (), *, in_band: bool = False
               ) -> tuple[str, list[tuple[str, str]], bytes]:
    """An error the HTTP port answers itself (no handler ran), in the request's protocol
    (docs/api.md "Over HTTP", the port's own errors): ``(status line, headers, body)``.

    Connect (and anything else): the HTTP ``status`` and Connect's JSON error body
    ``{"code", "message"}`` (connectrpc.com/docs/protocol, a unary error; written as a
    method's are, :func:`connect_error_json`), so that no answer of this port is an empty
    page. gRPC-Web: a trailers-only answer, HTTP 200 with ``grpc-status`` and
    ``grpc-message`` (what its clients read). A Connect streaming request refused
    ``in_band`` (its route was found: an envelope or body it cannot take) gets its
    end-of-stream message, as the protocol ends a stream. Never cached: a 404 or 405 is
    cacheable by default (RFC 9111 4.2.2), and each of these is about one request."""
    common = [("Cache-Control", "no-store"), *headers]
    if content_type.startswith("application/grpc-web"):
        return "200 OK", [("Content-Type", content_type.split(";")[0]),
                          ("Grpc-Status", str(code.value[0])),
                          ("Grpc-Message", urllib.parse.quote(message, safe="")), *common], b""
    if in_band and content_type.startswith("application/connect+"):
        end = connect_error_json(connect_code(code), message, end_of_stream=True)
        return "200 OK", [("Content-Type", content_type.split(";")[0]), *common], (
            b"\x02" + len(end).to_bytes(4, "big") + end)
    return (f"{status} {_REASONS.get(status) or HTTPStatus(status).phrase}",
            [("Content-Type", "application/json"), *common],
            connect_error_json(connect_code(code), message))


def raw_http_error(status: int, code: grpc.StatusCode, message: str,
                   headers: Sequence[tuple[str, str]] = ()) -> bytes:
    """:func:`http_error` as the bytes of a whole HTTP/1.1 response that closes the
    connection: for what the edge writes to a connection before any request is parsed."""
    line, fields, body = http_error("", status, code, message, headers)
    head = "".join(f"{k}: {v}\r\n" for k, v in [
        *fields, ("Connection", "close"), ("Content-Length", str(len(body)))])
    return f"HTTP/1.1 {line}\r\n{head}\r\n".encode("latin-1") + body
