"""The blocking clients: :class:`ShuangkouClient` (rules questions, scoring, variants) and
:class:`RoundClient` (live rounds). Each method takes the request message of its RPC and
returns the response message; ``timeout`` (seconds) replaces the method's default deadline
(:data:`~shuangkou.client.channels.DEADLINES`), ``metadata`` is sent with the call. A failed
call raises :class:`~shuangkou.client.errors.ServiceError`.

Both clients can share one channel (``RoundClient(channel=rules.channel)``); a client that
opened its channel closes it in :meth:`close` (or at the end of a ``with`` block).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, ClassVar, Self, TypeVar, cast

import grpc
from google.protobuf.message import Message

from shuangkou.v1 import rounds_pb2 as r
from shuangkou.v1 import service_pb2 as s

from . import channels
from .errors import error_of

__all__ = ["ShuangkouClient", "RoundClient", "Metadata"]

R = TypeVar("R", bound=Message)
Metadata = Sequence[tuple[str, str | bytes]]


def timeout_of(method: str, timeout: float | None) -> float:
    """The deadline of one call: the one asked for, else the method's default."""
    return channels.DEADLINES[method] if timeout is None else timeout


class _Client:
    SERVICE: ClassVar[str]

    def __init__(self, target: str | None = None, *, channel: grpc.Channel | None = None,
                 credentials: grpc.ChannelCredentials | None = None,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        self._owned = channel is None        # closed by close() only if opened here
        self.channel = channel if channel is not None else channels.channel(
            channels.required(target),
            credentials=credentials, options=options)
        self._unary, self._streams = channels.bind(self.channel, self.SERVICE)

    def close(self) -> None:
        """Close the channel if this client opened it."""
        if self._owned:
            self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, reply: type[R], method: str, request: Message, timeout: float | None,
              metadata: Metadata | None) -> R:
        try:
            answer = self._unary[method](request, timeout=timeout_of(method, timeout),
                                         metadata=metadata)
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        return cast(R, answer)


class ShuangkouClient(_Client):
    """``shuangkou.v1.ShuangkouService``: stateless rules questions, scoring and variants."""

    SERVICE = "ShuangkouService"

    def classify_play(self, request: s.ClassifyPlayRequest, *, timeout: float | None = None,
                      metadata: Metadata | None = None) -> s.ClassifyPlayResponse:
        return self._call(s.ClassifyPlayResponse, "ClassifyPlay", request, timeout, metadata)

    def compare_plays(self, request: s.ComparePlaysRequest, *, timeout: float | None = None,
                      metadata: Metadata | None = None) -> s.ComparePlaysResponse:
        return self._call(s.ComparePlaysResponse, "ComparePlays", request, timeout, metadata)

    def enumerate_legal_plays(self, request: s.EnumerateLegalPlaysRequest, *,
                              timeout: float | None = None, metadata: Metadata | None = None
                              ) -> s.EnumerateLegalPlaysResponse:
        return self._call(s.EnumerateLegalPlaysResponse, "EnumerateLegalPlays", request,
                          timeout, metadata)

    def score_round(self, request: s.ScoreRoundRequest, *, timeout: float | None = None,
                    metadata: Metadata | None = None) -> s.ScoreRoundResponse:
        return self._call(s.ScoreRoundResponse, "ScoreRound", request, timeout, metadata)

    def batch_classify(self, request: s.BatchClassifyRequest, *, timeout: float | None = None,
                       metadata: Metadata | None = None) -> s.BatchClassifyResponse:
        return self._call(s.BatchClassifyResponse, "BatchClassify", request, timeout, metadata)

    def list_variants(self, request: s.ListVariantsRequest | None = None, *,
                      timeout: float | None = None, metadata: Metadata | None = None
                      ) -> s.ListVariantsResponse:
        return self._call(s.ListVariantsResponse, "ListVariants",
                          request or s.ListVariantsRequest(), timeout, metadata)

    def get_variant(self, request: s.GetVariantRequest, *, timeout: float | None = None,
                    metadata: Metadata | None = None) -> s.GetVariantResponse:
        return self._call(s.GetVariantResponse, "GetVariant", request, timeout, metadata)

    def get_server_info(self, request: s.GetServerInfoRequest | None = None, *,
                        timeout: float | None = None, metadata: Metadata | None = None
                        ) -> s.GetServerInfoResponse:
        return self._call(s.GetServerInfoResponse, "GetServerInfo",
                          request or s.GetServerInfoRequest(), timeout, metadata)

    def review_round(self, request: s.ReviewRoundRequest, *, timeout: float | None = None,
                     metadata: Metadata | None = None) -> s.ReviewRoundResponse:
        return self._call(s.ReviewRoundResponse, "ReviewRound", request, timeout, metadata)

    def score_replays(self, requests: Iterable[s.ScoreReplaysRequest], *,
                      timeout: float | None = None, metadata: Metadata | None = None
                      ) -> Iterator[s.ScoreReplaysResponse]:
        """One reply per request, in order; the deadline bounds the whole stream. Not
        retried by the channel (:mod:`~shuangkou.client.channels`)."""
        call = self._streams["ScoreReplays"](iter(requests),
                                             timeout=timeout_of("ScoreReplays", timeout),
                                             metadata=metadata)
        try:
            for reply in call:
                yield cast(s.ScoreReplaysResponse, reply)
        except grpc.RpcError as exc:
            raise error_of(exc) from None
        finally:
            call.cancel()      # the caller stopped reading early: end the stream


class RoundClient(_Client):
    """``shuangkou.v1.RoundService``: live rounds, the state travelling with every call."""

    SERVICE = "RoundService"

    def start_round(self, request: r.StartRoundRequest, *, timeout: float | None = None,
                    metadata: Metadata | None = None) -> r.StartRoundResponse:
        return self._call(r.StartRoundResponse, "StartRound", request, timeout, metadata)

    def apply_action(self, request: r.ApplyActionRequest, *, timeout: float | None = None,
                     metadata: Metadata | None = None) -> r.ApplyActionResponse:
        return self._call(r.ApplyActionResponse, "ApplyAction", request, timeout, metadata)

    def suggest_action(self, request: r.SuggestActionRequest, *, timeout: float | None = None,
                       metadata: Metadata | None = None) -> r.SuggestActionResponse:
        return self._call(r.SuggestActionResponse, "SuggestAction", request, timeout,
                          metadata)
