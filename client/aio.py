"""The asyncio clients (``grpc.aio``): :class:`AsyncShuangkouClient` and
:class:`AsyncRoundClient`, the methods of :mod:`~shuangkou.client.sync` as coroutines (and
``score_replays`` as an async iterator), with the same deadlines, retries and errors.
Create them inside the running event loop; ``async with`` closes a channel they opened.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Iterable, Sequence
from typing import Any, ClassVar, Self, TypeVar, cast

import grpc
from google.protobuf.message import Message

from shuangkou.v1 import rounds_pb2 as r
from shuangkou.v1 import service_pb2 as s

from . import channels
from .errors import error_of
from .sync import Metadata, timeout_of

__all__ = ["AsyncShuangkouClient", "AsyncRoundClient"]

R = TypeVar("R", bound=Message)


class _AsyncClient:
    SERVICE: ClassVar[str]

    def __init__(self, target: str | None = None, *, channel: grpc.aio.Channel | None = None,
                 credentials: grpc.ChannelCredentials | None = None,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        self._owned = channel is None        # closed by close() only if opened here
        self.channel = channel if channel is not None else channels.aio_channel(
            channels.required(target),
            credentials=credentials, options=options)
        self._unary, self._streams = channels.bind(self.channel, self.SERVICE)

    async def close(self) -> None:
        """Close the channel if this client opened it."""
        if self._owned:
            await self.channel.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, reply: type[R], method: str, request: Message,
                    timeout: float | None, metadata: Metadata | None) -> R:
        try:
            answer = await self._unary[method](request, timeout=timeout_of(method, timeout),
                                               metadata=metadata)
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        return cast(R, answer)


class AsyncShuangkouClient(_AsyncClient):
    """``shuangkou.v1.ShuangkouService`` on asyncio."""

    SERVICE = "ShuangkouService"

    async def classify_play(self, request: s.ClassifyPlayRequest, *,
                            timeout: float | None = None, metadata: Metadata | None = None
                            ) -> s.ClassifyPlayResponse:
        return await self._call(s.ClassifyPlayResponse, "ClassifyPlay", request, timeout,
                                metadata)

    async def compare_plays(self, request: s.ComparePlaysRequest, *,
                            timeout: float | None = None, metadata: Metadata | None = None
                            ) -> s.ComparePlaysResponse:
        return await self._call(s.ComparePlaysResponse, "ComparePlays", request, timeout,
                                metadata)

    async def enumerate_legal_plays(self, request: s.EnumerateLegalPlaysRequest, *,
                                    timeout: float | None = None,
                                    metadata: Metadata | None = None
                                    ) -> s.EnumerateLegalPlaysResponse:
        return await self._call(s.EnumerateLegalPlaysResponse, "EnumerateLegalPlays",
                                request, timeout, metadata)

    async def score_round(self, request: s.ScoreRoundRequest, *, timeout: float | None = None,
                          metadata: Metadata | None = None) -> s.ScoreRoundResponse:
        return await self._call(s.ScoreRoundResponse, "ScoreRound", request, timeout,
                                metadata)

    async def batch_classify(self, request: s.BatchClassifyRequest, *,
                             timeout: float | None = None, metadata: Metadata | None = None
                             ) -> s.BatchClassifyResponse:
        return await self._call(s.BatchClassifyResponse, "BatchClassify", request, timeout,
                                metadata)

    async def list_variants(self, request: s.ListVariantsRequest | None = None, *,
                            timeout: float | None = None, metadata: Metadata | None = None
                            ) -> s.ListVariantsResponse:
        return await self._call(s.ListVariantsResponse, "ListVariants",
                                request or s.ListVariantsRequest(), timeout, metadata)

    async def get_variant(self, request: s.GetVariantRequest, *, timeout: float | None = None,
                          metadata: Metadata | None = None) -> s.GetVariantResponse:
        return await self._call(s.GetVariantResponse, "GetVariant", request, timeout,
                                metadata)

    async def get_server_info(self, request: s.GetServerInfoRequest | None = None, *,
                              timeout: float | None = None, metadata: Metadata | None = None
                              ) -> s.GetServerInfoResponse:
        return await self._call(s.GetServerInfoResponse, "GetServerInfo",
                                request or s.GetServerInfoRequest(), timeout, metadata)

    async def review_round(self, request: s.ReviewRoundRequest, *,
                           timeout: float | None = None, metadata: Metadata | None = None
                           ) -> s.ReviewRoundResponse:
        return await self._call(s.ReviewRoundResponse, "ReviewRound", request, timeout,
                                metadata)

    async def score_replays(self, requests: AsyncIterable[s.ScoreReplaysRequest]
                            | Iterable[s.ScoreReplaysRequest], *,
                            timeout: float | None = None, metadata: Metadata | None = None
                            ) -> AsyncIterator[s.ScoreReplaysResponse]:
        """One reply per request, in order; the deadline bounds the whole stream."""
        call = self._streams["ScoreReplays"](requests,
                                             timeout=timeout_of("ScoreReplays", timeout),
                                             metadata=metadata)
        try:
            async for reply in call:
                yield cast(s.ScoreReplaysResponse, reply)
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        finally:
            call.cancel()      # the caller stopped reading early: end the stream


class AsyncRoundClient(_AsyncClient):
    """``shuangkou.v1.RoundService`` on asyncio."""

    SERVICE = "RoundService"

    async def start_round(self, request: r.StartRoundRequest, *, timeout: float | None = None,
                          metadata: Metadata | None = None) -> r.StartRoundResponse:
        return await self._call(r.StartRoundResponse, "StartRound", request, timeout,
                                metadata)

    async def apply_action(self, request: r.ApplyActionRequest, *,
                           timeout: float | None = None, metadata: Metadata | None = None
                           ) -> r.ApplyActionResponse:
        return await self._call(r.ApplyActionResponse, "ApplyAction", request, timeout,
                                metadata)

    async def suggest_action(self, request: r.SuggestActionRequest, *,
                             timeout: float | None = None, metadata: Metadata | None = None
                             ) -> r.SuggestActionResponse:
        return await self._call(r.SuggestActionResponse, "SuggestAction", request, timeout,
                                metadata)
