"""Map every failure to a gRPC status with rich details, in one place.

Bad input of any kind becomes ``INVALID_ARGUMENT`` with a ``google.rpc.BadRequest`` field
violation and a ``google.rpc.ErrorInfo`` reason; an unknown built-in variant becomes
``NOT_FOUND``. :func:`status_for` is the one helper; :class:`BadInput` lets the servicer tag a
core exception with the request field it came from.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from core_ext.errors import (
    CardError,
    DeadlineExceeded,
    IllegalPlay,
    InvalidPlay,
    RuleViolation,
    ShuangkouError,
    VariantError,
)
from core_ext.replay import ReplayError

__all__ = ["BadInput", "UnknownVariant", "Failure", "field_scope",
           "status_for", "failure_for", "DOMAIN"]

DOMAIN = "shuangkou.v1"


class UnknownVariant(VariantError):
    """A request names a built-in variant id that does not exist (NOT_FOUND)."""


class BadInput(ShuangkouError):
    """Bad input detected by the service itself (limits, malformed requests)."""


# Exception class -> (status code, ErrorInfo reason). Looked up along the MRO, so the most
# specific class wins; anything not listed is a server bug (INTERNAL).
_TABLE: dict[type[BaseException], tuple[grpc.StatusCode, str]] = {
    UnknownVariant: (grpc.StatusCode.NOT_FOUND, "UNKNOWN_VARIANT"),
    RuleViolation: (grpc.StatusCode.FAILED_PRECONDITION, "RULE_VIOLATION"),
    DeadlineExceeded: (grpc.StatusCode.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"),
    VariantError: (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_VARIANT"),
    CardError: (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_CARDS"),
    InvalidPlay: (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PLAY"),
    ReplayError: (grpc.StatusCode.INVALID_ARGUMENT, "INVALID_REPLAY"),
    IllegalPlay: (grpc.StatusCode.INVALID_ARGUMENT, "ILLEGAL_PLAY"),
    BadInput: (grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST"),
    ShuangkouError: (grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST"),
}


@dataclass(frozen=True)
class Failure:
    """The status an exception maps to, before it is put on the wire."""

    code: grpc.StatusCode
    reason: str
    message: str
    field: str
    type: str


def _lookup(exc: BaseException) -> tuple[grpc.StatusCode, str] | None:
    for cls in type(exc).__mro__:
        if cls in _TABLE:
            return _TABLE[cls]
    return None


def core_field(exc: BaseException) -> str | None:
    """The field an exception names; a replay error's action index refines ``actions``."""
    field = getattr(exc, "field", None)
    action = getattr(exc, "action", None)
    if action is not None and field in (None, "actions"):
        return f"actions[{action}]"
    return field


def failure_for(exc: BaseException) -> Failure | None:
    """The mapped failure for an exception, or None when it is not a known input error."""
    found = _lookup(exc)
    if found is None:
        return None
    code, reason = found
    if isinstance(exc, RuleViolation):   # the precise rule: NOT_YOUR_TURN, DOES_NOT_BEAT ...
        reason = exc.reason
    field = core_field(exc) or ""
    return Failure(code, reason, str(exc), field, type(exc).__name__)


def status_for(exc: BaseException) -> grpc.Status | None:
    """A ``grpc.Status`` with BadRequest + ErrorInfo details, or None for unknown exceptions."""
    failure = failure_for(exc)
    if failure is None:
        return None
    details = []
    if failure.code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND):
        bad = error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(
                field=failure.field, description=failure.message, reason=failure.reason)])
        details.append(bad)
    details.append(error_details_pb2.ErrorInfo(
        reason=failure.reason, domain=DOMAIN, metadata={"exception": failure.type}))
    packed = []
    for detail in details:
        any_detail = any_pb2.Any()
        any_detail.Pack(detail)
        packed.append(any_detail)
    status = status_pb2.Status(code=getattr(code_pb2, failure.code.name),
                               message=failure.message, details=packed)
    return rpc_status.to_status(status)


def _join(where: str, inner: str | None) -> str:
    if not inner:
        return where
    return f"{where}{inner}" if inner.startswith("[") else f"{where}.{inner}"


@contextmanager
def field_scope(where: str, nested: bool = False) -> Iterator[None]:
    """Tag core errors raised inside with the request field ``where``.

    ``nested``: ``where`` is a document or message (a custom variant, a replay), and the core's
    own ``field`` is a path inside it, appended to ``where``; otherwise ``where`` replaces it.
    An ``UnknownVariant`` keeps its class (NOT_FOUND).
    """
    try:
        yield
    except ShuangkouError as exc:
        if getattr(exc, "_scoped", False):
            raise
        field = _join(where, core_field(exc)) if nested else where
        exc.field = field
        exc._scoped = True  # type: ignore[attr-defined]  # outer scopes keep the inner path
        raise
