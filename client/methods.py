"""The clients' one method table: a row per RPC, from which both the blocking clients
(:mod:`~shuangkou.client.sync`) and the asyncio clients (:mod:`~shuangkou.client.aio`) are made.

A row is a class attribute of :class:`ShuangkouMethods` or :class:`RoundMethods`, named as the
client method (the RPC's name in snake case)::

    classify_play = Unary(s.ClassifyPlayRequest, s.ClassifyPlayResponse, deadline=10.0)

It says what the protos cannot: the Python types of the request and the response (for mypy
and for the reader), whether the request may be left out (:class:`UnaryOptional`: an empty
one is sent) and the call's default deadline (:data:`DEADLINES`). Everything else is read
from the service descriptors, and each table is checked against them when this module is
imported (:func:`check`): an RPC without a row, a row without an RPC, or a row whose messages
or kind (unary or stream) are not the RPC's fail the import, naming the RPC.

Each row is a descriptor: read on a client, it gives the method of the client's kind — on a
blocking client a call that returns the response, on an asyncio client a coroutine; for a
stream, an iterator or an async iterator — made once per client from the client's
``_unary`` or ``_stream`` (:class:`Blocking`, :class:`Asyncio`). Its overloaded ``__get__``
gives mypy each method's exact signature on each kind of client, from the same row, so the
types stay honest without stubs to keep in step or code generated from the table.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Coroutine, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar, overload

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message

from shuangkou.v1 import rounds_pb2 as r
from shuangkou.v1 import service_pb2 as s

__all__ = ["Method", "methods", "SERVICES", "Metadata", "Unary", "UnaryOptional", "Stream",
           "Blocking", "Asyncio", "Table", "ShuangkouMethods", "RoundMethods", "TABLES",
           "DEADLINES", "check", "rows"]

Metadata = Sequence[tuple[str, str | bytes]]
Q = TypeVar("Q", bound=Message)      # a request
P = TypeVar("P", bound=Message)      # its response
Q_in = TypeVar("Q_in", bound=Message, contravariant=True)
P_out = TypeVar("P_out", bound=Message, covariant=True)

SERVICES: dict[str, ServiceDescriptor] = {
    "ShuangkouService": s.DESCRIPTOR.services_by_name["ShuangkouService"],
    "RoundService": r.DESCRIPTOR.services_by_name["RoundService"],
}


@dataclass(frozen=True)
class Method:
    """One RPC, read from the protos' descriptors."""

    service: str         # full service name, e.g. shuangkou.v1.RoundService
    name: str            # e.g. ApplyAction
    request: type[Message]
    response: type[Message]
    streaming: bool      # a stream either way (ScoreReplays)

    @property
    def path(self) -> str:
        return f"/{self.service}/{self.name}"


def methods(service: str | ServiceDescriptor) -> Iterator[Method]:
    """The RPCs of ``service`` (``ShuangkouService``, ``RoundService`` or a descriptor) in
    proto order."""
    descriptor = SERVICES[service] if isinstance(service, str) else service
    for m in descriptor.methods:
        yield Method(descriptor.full_name, m.name,
                     message_factory.GetMessageClass(m.input_type),
                     message_factory.GetMessageClass(m.output_type),
                     m.client_streaming or m.server_streaming)


# ----------------------------------------------------------------------------- the clients

class Blocking(Protocol):
    """What a blocking client gives the rows (:class:`~shuangkou.client.sync.ShuangkouClient`):
    its channel, and how it makes a unary call and a stream on a callable of it."""

    channel: grpc.Channel

    def _unary(self, stub: Any, deadline: float, request: Message, timeout: float | None,
               metadata: Metadata | None) -> Message: ...

    def _stream(self, stub: Any, deadline: float, requests: Iterable[Message],
                timeout: float | None, metadata: Metadata | None) -> Iterator[Message]: ...


class Asyncio(Protocol):
    """What an asyncio client gives the rows, as :class:`Blocking` on ``grpc.aio``."""

    channel: grpc.aio.Channel

    async def _unary(self, stub: Any, deadline: float, request: Message,
                     timeout: float | None, metadata: Metadata | None) -> Message: ...

    def _stream(self, stub: Any, deadline: float,
                requests: AsyncIterable[Message] | Iterable[Message], timeout: float | None,
                metadata: Metadata | None) -> AsyncIterator[Message]: ...


class Call(Protocol[Q_in, P_out]):
    def __call__(self, request: Q_in, *, timeout: float | None = None,
                 metadata: Metadata | None = None) -> P_out: ...


class AsyncCall(Protocol[Q_in, P_out]):
    def __call__(self, request: Q_in, *, timeout: float | None = None,
                 metadata: Metadata | None = None) -> Coroutine[Any, Any, P_out]: ...


class OptionalCall(Protocol[Q_in, P_out]):
    def __call__(self, request: Q_in | None = None, *, timeout: float | None = None,
                 metadata: Metadata | None = None) -> P_out: ...


class AsyncOptionalCall(Protocol[Q_in, P_out]):
    def __call__(self, request: Q_in | None = None, *, timeout: float | None = None,
                 metadata: Metadata | None = None) -> Coroutine[Any, Any, P_out]: ...


class StreamCall(Protocol[Q_in, P_out]):
    def __call__(self, requests: Iterable[Q_in], *, timeout: float | None = None,
                 metadata: Metadata | None = None) -> Iterator[P_out]: ...


class AsyncStreamCall(Protocol[Q_in, P_out]):
    def __call__(self, requests: AsyncIterable[Q_in] | Iterable[Q_in], *,
                 timeout: float | None = None, metadata: Metadata | None = None
                 ) -> AsyncIterator[P_out]: ...


# ----------------------------------------------------------------------------- the rows

class _Row(Generic[Q, P]):
    """One RPC of a table: its messages and default deadline. Read on a client, the method
    of that client (made once and kept in the client's ``__dict__``, where later reads find
    it first); read on the class, the row itself, callable as an unbound method."""

    streaming: ClassVar[bool] = False
    note: ClassVar[str] = ""     # what the method's docstring adds to the RPC's name
    name: str            # the Python name, e.g. classify_play
    rpc: str             # the RPC's name, e.g. ClassifyPlay
    service: str         # the table's service, e.g. ShuangkouService

    def __init__(self, request: type[Q], response: type[P], *, deadline: float) -> None:
        if not deadline > 0:
            raise ValueError(f"deadline must be > 0 seconds; got {deadline!r}")
        self.request, self.response, self.deadline = request, response, deadline

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.rpc = "".join(part.title() for part in name.split("_"))
        self.service = getattr(owner, "SERVICE", "")

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.service}.{self.rpc}>"

    @property
    def path(self) -> str:
        return f"/{SERVICES[self.service].full_name}/{self.rpc}"

    def stub(self, channel: grpc.Channel | grpc.aio.Channel) -> Any:
        """The callable of this RPC on ``channel`` (blocking or asyncio: the same factories)."""
        factory: Any = channel.stream_stream if self.streaming else channel.unary_unary
        return factory(self.path, request_serializer=self.request.SerializeToString,
                       response_deserializer=self.response.FromString)

    def method(self, client: Blocking | Asyncio) -> Any:
        """This row's method on ``client``, unnamed."""
        stub, deadline, unary = self.stub(client.channel), self.deadline, client._unary

        def call(request: Message, *, timeout: float | None = None,
                 metadata: Metadata | None = None) -> Any:
            return unary(stub, deadline, request, timeout, metadata)
        return call

    def _get(self, client: Any) -> Any:
        if client is None:
            return self
        call = self.method(client)
        call.__name__, call.__qualname__ = self.name, f"{type(client).__name__}.{self.name}"
        call.__doc__ = f"``{SERVICES[self.service].full_name}/{self.rpc}``{self.note}"
        client.__dict__[self.name] = call
        return call

    def __call__(self, client: Any, *args: Any, **kwargs: Any) -> Any:
        return self._get(client)(*args, **kwargs)


class Unary(_Row[Q, P]):
    """A unary RPC."""

    @overload
    def __get__(self, client: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, client: Blocking, owner: type | None = None) -> Call[Q, P]: ...
    @overload
    def __get__(self, client: Asyncio, owner: type | None = None) -> AsyncCall[Q, P]: ...
    def __get__(self, client: Any, owner: type | None = None) -> Any:
        return self._get(client)


class UnaryOptional(_Row[Q, P]):
    """A unary RPC whose request may be left out: an empty one is sent."""

    def method(self, client: Blocking | Asyncio) -> Any:
        call, empty = super().method(client), self.request

        def optional(request: Message | None = None, *, timeout: float | None = None,
                     metadata: Metadata | None = None) -> Any:
            return call(empty() if request is None else request, timeout=timeout,
                        metadata=metadata)
        return optional

    @overload
    def __get__(self, client: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, client: Blocking, owner: type | None = None) -> OptionalCall[Q, P]: ...
    @overload
    def __get__(self, client: Asyncio, owner: type | None = None
                ) -> AsyncOptionalCall[Q, P]: ...
    def __get__(self, client: Any, owner: type | None = None) -> Any:
        return self._get(client)


class Stream(_Row[Q, P]):
    """A stream of requests answered by a stream of replies (ScoreReplays)."""

    streaming = True
    note = (": one reply per request, in order; the deadline bounds the whole stream, and "
            "the channel never retries it. Reading stops early: the call is cancelled.")

    def method(self, client: Blocking | Asyncio) -> Any:
        stub, deadline, stream = self.stub(client.channel), self.deadline, client._stream

        def call(requests: Any, *, timeout: float | None = None,
                 metadata: Metadata | None = None) -> Any:
            return stream(stub, deadline, requests, timeout, metadata)
        return call

    @overload
    def __get__(self, client: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, client: Blocking, owner: type | None = None) -> StreamCall[Q, P]: ...
    @overload
    def __get__(self, client: Asyncio, owner: type | None = None
                ) -> AsyncStreamCall[Q, P]: ...
    def __get__(self, client: Any, owner: type | None = None) -> Any:
        return self._get(client)


# ----------------------------------------------------------------------------- the tables

class Table:
    """A service's rows (class attributes), checked against its descriptor (:func:`check`)."""

    SERVICE: ClassVar[str]     # the key of SERVICES


class ShuangkouMethods(Table):
    """``shuangkou.v1.ShuangkouService``: stateless rules questions, scoring and variants.

    The deadlines: small questions get seconds; enumeration and settlement of large inputs,
    a batch and a review get more; a whole ScoreReplays stream gets ten minutes."""

    SERVICE = "ShuangkouService"

    classify_play = Unary(s.ClassifyPlayRequest, s.ClassifyPlayResponse, deadline=10.0)
    compare_plays = Unary(s.ComparePlaysRequest, s.ComparePlaysResponse, deadline=10.0)
    enumerate_legal_plays = Unary(s.EnumerateLegalPlaysRequest, s.EnumerateLegalPlaysResponse,
                                  deadline=30.0)
    score_round = Unary(s.ScoreRoundRequest, s.ScoreRoundResponse, deadline=30.0)
    batch_classify = Unary(s.BatchClassifyRequest, s.BatchClassifyResponse, deadline=60.0)
    score_replays = Stream(s.ScoreReplaysRequest, s.ScoreReplaysResponse, deadline=600.0)
    list_variants = UnaryOptional(s.ListVariantsRequest, s.ListVariantsResponse, deadline=10.0)
    get_variant = Unary(s.GetVariantRequest, s.GetVariantResponse, deadline=10.0)
    get_server_info = UnaryOptional(s.GetServerInfoRequest, s.GetServerInfoResponse,
                                    deadline=10.0)
    # a whole round searched: ~2-7 s of CPU at the default budget
    review_round = Unary(s.ReviewRoundRequest, s.ReviewRoundResponse, deadline=60.0)


class RoundMethods(Table):
    """``shuangkou.v1.RoundService``: live rounds, the state travelling with every call.

    A searched suggestion gets 30 s (a SearchBudget allows up to 10 s)."""

    SERVICE = "RoundService"

    start_round = Unary(r.StartRoundRequest, r.StartRoundResponse, deadline=10.0)
    apply_action = Unary(r.ApplyActionRequest, r.ApplyActionResponse, deadline=10.0)
    suggest_action = Unary(r.SuggestActionRequest, r.SuggestActionResponse, deadline=30.0)


def rows(table: type[Table]) -> dict[str, _Row[Any, Any]]:
    """A table's rows by RPC name, in the order written (a table's base's first)."""
    return {row.rpc: row for klass in reversed(table.__mro__) for row in vars(klass).values()
            if isinstance(row, _Row)}


def check(table: type[Table], service: ServiceDescriptor | None = None) -> None:
    """Raise ``TypeError`` unless ``table`` has a row for every RPC of its service (by
    default the protos'; ``service`` another descriptor of it) and no other, each with the
    RPC's request and response messages and its kind."""
    written = rows(table)
    where = f"{table.__module__}.{table.__qualname__}"
    for m in methods(service or SERVICES[table.SERVICE]):
        row = written.pop(m.name, None)
        kind = "Stream" if m.streaming else "Unary"
        if row is None:
            snake = "".join("_" + c.lower() if c.isupper() else c for c in m.name).lstrip("_")
            raise TypeError(
                f"{m.service}.{m.name} has no row in {where}: add "
                f"{snake} = {kind}({m.request.__name__}, {m.response.__name__}, deadline=...)")
        got = (row.request.DESCRIPTOR.full_name, row.response.DESCRIPTOR.full_name,
               row.streaming)
        want = (m.request.DESCRIPTOR.full_name, m.response.DESCRIPTOR.full_name, m.streaming)
        if got != want:
            raise TypeError(f"{where}.{row.name} is {got} but {m.service}.{m.name} is {want}")
    if written:
        raise TypeError(f"{where}: no RPC of {table.SERVICE} is named "
                        f"{', '.join(sorted(written))}")


TABLES: tuple[type[Table], ...] = (ShuangkouMethods, RoundMethods)
for _table in TABLES:
    check(_table)

#: seconds a call may take unless ``timeout=`` says otherwise, by RPC (the rows' deadlines):
#: a hung server or network never hangs the caller.
DEADLINES: dict[str, float] = {name: row.deadline for table in TABLES
                               for name, row in rows(table).items()}
