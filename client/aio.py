"""The asyncio clients (``grpc.aio``): :class:`AsyncShuangkouClient` and
:class:`AsyncRoundClient`, the method table's rows (:mod:`~shuangkou.client.methods`) as
coroutines (and ``score_replays`` as an async iterator), with the same deadlines, retries and
errors as :mod:`~shuangkou.client.sync`. Create them inside the running event loop;
``async with`` closes a channel they opened.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from typing import Any, Self

import grpc
from google.protobuf.message import Message

from . import channels
from .errors import error_of
from .methods import Metadata, RoundMethods, ShuangkouMethods

__all__ = ["AsyncShuangkouClient", "AsyncRoundClient"]


class _AsyncClient:
    """An asyncio client of one service: the channel, and how each row of its table is
    called on it (:class:`~shuangkou.client.methods.Asyncio`)."""

    def __init__(self, target: str | None = None, *, channel: grpc.aio.Channel | None = None,
                 credentials: grpc.ChannelCredentials | None = None,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        self._owned = channel is None        # closed by close() only if opened here
        self.channel = channel if channel is not None else channels.aio_channel(
            channels.required(target),
            credentials=credentials, options=options)

    async def close(self) -> None:
        """Close the channel if this client opened it."""
        if self._owned:
            await self.channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _unary(self, stub: Any, deadline: float, request: Message,
                     timeout: float | None, metadata: Metadata | None) -> Message:
        try:
            answer: Message = await stub(request,
                                         timeout=deadline if timeout is None else timeout,
                                         metadata=metadata)
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        return answer

    async def _stream(self, stub: Any, deadline: float,
                      requests: AsyncIterable[Message] | Iterable[Message],
                      timeout: float | None, metadata: Metadata | None
                      ) -> AsyncIterator[Message]:
        call = stub(requests, timeout=deadline if timeout is None else timeout,
                    metadata=metadata)
        try:
            async for reply in call:
                yield reply
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        finally:
            call.cancel()      # the caller stopped reading early: end the stream


class AsyncShuangkouClient(_AsyncClient, ShuangkouMethods):
    """``shuangkou.v1.ShuangkouService`` on asyncio."""


class AsyncRoundClient(_AsyncClient, RoundMethods):
    """``shuangkou.v1.RoundService`` on asyncio."""
