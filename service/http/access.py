"""The HTTP side of the access log (``access_log``, :class:`~shuangkou.service.logs.AccessLog`):
one line per request the bridge serves — what was received and sent, the HTTP status, and the
gRPC code the interceptor noted through :meth:`CallContext.ended_with
<shuangkou.service.http.seam.CallContext.ended_with>` (the call's trace span is the
interceptor's, its parent read from the headers). Probes write none, as gRPC health checks
get none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import bounded
from .app import protocol

if TYPE_CHECKING:
    from ..logs import AccessLog
    from .seam import Call

__all__ = ["Seen"]

#: The access line's protocol by :func:`~shuangkou.service.http.app.protocol`'s metric label.
_ACCESS_PROTOCOLS = {"connect": "connect", "grpc_web": "grpc-web", "grpc": "grpc",
                     "other": "http"}


class Seen:
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
        spoken = _ACCESS_PROTOCOLS[protocol(headers.get(b"content-type", b"").decode(
            "latin-1"))]
        if spoken == "http" and scope["method"] == "GET" and b"connect=v1" in scope.get(
                "query_string", b""):
            spoken = "connect"             # a Connect GET: the message is in the query
        call: Call | None = scope.get("shuangkou.call")
        code = call.code if call is not None else ""
        client = scope.get("client") or ("", 0)
        access.call(bounded(scope["path"], 256), spoken, code, seconds,
                    f"{client[0]}:{client[1]}" if client[0] else "", self.received, self.sent,
                    failed=code != "OK" if code else self.status >= 400,
                    trace_id=call.trace_id if call is not None else "",
                    http_method=scope["method"], status=self.status)
