"""The blocking clients: :class:`ShuangkouClient` (rules questions, scoring, variants) and
:class:`RoundClient` (live rounds), the method table's rows (:mod:`~shuangkou.client.methods`)
on a ``grpc.Channel``. Each method takes the request message of its RPC and returns the
response message; ``timeout`` (seconds) replaces the method's default deadline
(:data:`~shuangkou.client.methods.DEADLINES`), ``metadata`` is sent with the call. A failed
call raises :class:`~shuangkou.client.errors.ServiceError`.

Both clients can share one channel (``RoundClient(channel=rules.channel)``); a client that
opened its channel closes it in :meth:`close` (or at the end of a ``with`` block).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Self

import grpc
from google.protobuf.message import Message

from . import channels
from .errors import error_of
from .methods import Metadata, RoundMethods, ShuangkouMethods

__all__ = ["ShuangkouClient", "RoundClient", "Metadata"]


class _Client:
    """A blocking client of one service: the channel, and how each row of its table is
    called on it (:class:`~shuangkou.client.methods.Blocking`)."""

    def __init__(self, target: str | None = None, *, channel: grpc.Channel | None = None,
                 credentials: grpc.ChannelCredentials | None = None,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        self._owned = channel is None        # closed by close() only if opened here
        self.channel = channel if channel is not None else channels.channel(
            channels.required(target),
            credentials=credentials, options=options)

    def close(self) -> None:
        """Close the channel if this client opened it."""
        if self._owned:
            self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _unary(self, stub: Any, deadline: float, request: Message, timeout: float | None,
               metadata: Metadata | None) -> Message:
        try:
            answer: Message = stub(request, timeout=deadline if timeout is None else timeout,
                                   metadata=metadata)
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        return answer

    def _stream(self, stub: Any, deadline: float, requests: Iterable[Message],
                timeout: float | None, metadata: Metadata | None) -> Iterator[Message]:
        call = stub(iter(requests), timeout=deadline if timeout is None else timeout,
                    metadata=metadata)
        try:
            yield from call
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        finally:
            call.cancel()      # the caller stopped reading early: end the stream


class ShuangkouClient(_Client, ShuangkouMethods):
    """``shuangkou.v1.ShuangkouService``: stateless rules questions, scoring and variants."""


class RoundClient(_Client, RoundMethods):
    """``shuangkou.v1.RoundService``: live rounds, the state travelling with every call."""
