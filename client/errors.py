"""A failed call as an exception carrying what the server said (docs/api.md "Errors").

The server fails a call with a status code, a one-line message and, in the
``grpc-status-details-bin`` trailer, a ``google.rpc.Status`` whose details are a
``google.rpc.ErrorInfo`` (the machine ``reason``, ``metadata["action"]`` for a replay) and,
for bad input, a ``google.rpc.BadRequest`` naming the request field
(``shuangkou.service.errors`` writes them). :func:`decode_status` reads such a Status back,
whether it came as a trailer or in band (a ScoreReplays error, a BatchClassify item);
:func:`error_of` turns a failed call into :class:`ServiceError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, cast

import grpc
from google.rpc import error_details_pb2, status_pb2

if TYPE_CHECKING:
    from google.protobuf.descriptor import Descriptor

__all__ = ["InBand", "decode_status", "ServiceError", "Rejected", "error_of", "REJECTED_CODES"]

#: the codes of a request the server refused as such: bad input (INVALID_ARGUMENT), an
#: unknown rule set (NOT_FOUND), an action the round's state forbids or a state that is not
#: the one the precondition names (FAILED_PRECONDITION). Sent again, it is refused again.
REJECTED_CODES = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                            grpc.StatusCode.FAILED_PRECONDITION})
_DETAILS_KEY = "grpc-status-details-bin"


@dataclass(frozen=True)
class InBand:
    """A decoded ``google.rpc.Status`` (a failed call's trailer, a ScoreReplays error, a
    batch item)."""

    code: grpc.StatusCode
    reason: str          # ErrorInfo.reason (the code's name when the server sent none)
    message: str
    field: str           # the request field at fault ("" when not named)
    detail: str          # the sentence without a replay's "action N: " prefix
    action: int | None   # a replay's offending action (0-based)


def decode_status(status: status_pb2.Status) -> InBand:
    """Read back what the server's ``status_proto`` wrote."""
    code = next((c for c in grpc.StatusCode if c.value[0] == status.code),
                grpc.StatusCode.UNKNOWN)
    reason, field, detail, action = code.name, "", status.message, None
    for packed in status.details:
        # types-protobuf types a message's DESCRIPTOR wider than what Any.Is accepts.
        if packed.Is(cast("Descriptor", error_details_pb2.ErrorInfo.DESCRIPTOR)):
            info = error_details_pb2.ErrorInfo()
            packed.Unpack(info)
            reason = info.reason
            if info.metadata.get("action", "").isdigit():
                action = int(info.metadata["action"])
        elif packed.Is(cast("Descriptor", error_details_pb2.BadRequest.DESCRIPTOR)):
            bad = error_details_pb2.BadRequest()
            packed.Unpack(bad)
            if bad.field_violations:
                field = bad.field_violations[0].field
                detail = bad.field_violations[0].description or status.message
    return InBand(code, reason, status.message, field, detail, action)


class ServiceError(Exception):
    """A call that failed: ``code`` (a ``grpc.StatusCode``), ``message`` (the server's
    one line), ``reason`` (``google.rpc.ErrorInfo.reason``: INVALID_PLAY, NOT_YOUR_TURN …,
    else the code's name), ``field`` (the request field at fault, or ""), ``detail`` and
    ``action`` (a replay's offending action). ``str()`` is one line for a log or a user."""

    def __init__(self, status: InBand) -> None:
        super().__init__(status.message or status.code.name)
        self.status = status

    @property
    def code(self) -> grpc.StatusCode:
        return self.status.code

    @property
    def message(self) -> str:
        return self.status.message

    @property
    def reason(self) -> str:
        return self.status.reason

    @property
    def field(self) -> str:
        return self.status.field

    @property
    def detail(self) -> str:
        return self.status.detail

    @property
    def action(self) -> int | None:
        return self.status.action

    def __str__(self) -> str:
        where = f", field {self.field}" if self.field else ""
        return f"{self.code.name}: {self.message or self.code.name} [{self.reason}{where}]"


class Rejected(ServiceError):
    """The server refused the request itself (:data:`REJECTED_CODES`): the input, the rule
    set or the round's state is at fault, and sending it again gets the same answer."""


class _FailedCall(Protocol):
    """What grpc's and grpc.aio's failed calls both have (typeshed's ``RpcError`` has none)."""

    def code(self) -> grpc.StatusCode: ...

    def details(self) -> str | None: ...

    def trailing_metadata(self) -> Any: ...


def _trailer(metadata: Iterable[tuple[str, str | bytes]] | None) -> bytes | None:
    for key, value in metadata or ():
        if key == _DETAILS_KEY and isinstance(value, bytes):
            return value
    return None


def error_of(exc: grpc.RpcError) -> ServiceError:
    """The :class:`ServiceError` (or :class:`Rejected`) of a failed call, sync or asyncio.
    Without a details trailer (a status grpc itself produced: UNAVAILABLE, DEADLINE_EXCEEDED)
    the reason is the code's name."""
    call = cast(_FailedCall, exc)
    code, message = call.code(), call.details() or ""
    status = None
    data = _trailer(call.trailing_metadata())
    if data is not None:
        decoded = status_pb2.Status.FromString(data)
        # A trailer that disagrees with the call's own status is not this call's story.
        if decoded.code == code.value[0]:
            status = decode_status(decoded)
    if status is None:
        status = InBand(code, code.name, message, "", message, None)
    return (Rejected if code in REJECTED_CODES else ServiceError)(status)
