"""Channels to the service: retries where safe, load balancing, message limits.

Every option a client channel of ours carries is here (the one-off commands', ``shuangkou
play --server``'s, ``score-replays --server``'s and the client classes'), in a gRPC service
config:

* ``round_robin`` over every address the target resolves to (a headless Service's pods);
* a ``retryPolicy`` on ``UNAVAILABLE`` for every method in :data:`RETRIED`: each unary RPC of
  both services. The service keeps nothing between calls (docs/rounds.md), so a call sent
  twice has the effect of one: ``ApplyAction`` applies one action to the state the request
  carries and gives the same new state each time; a ``StartRound`` or ``SuggestAction``
  without a seed may answer differently, but the answer of the failed attempt never reached
  the caller. ``UNAVAILABLE`` is the one code that says the call may not have run; a
  deadline, a cancellation and every refusal are the caller's to decide. The
  ``ScoreReplays`` stream is not retried by the channel (gRPC could only replay it before the
  first reply): ``score-replays --server`` resends a failed chunk's unanswered lines itself.
  ``retryThrottling`` stops retrying when most calls fail, so retries never pile onto a
  server in trouble.

The deadlines (:data:`DEADLINES`, one per row of the method table, :mod:`.methods`) are
applied by the client classes on every call rather than as the service config's ``timeout``,
which would also cap a longer deadline a caller asks for.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import grpc

from .methods import DEADLINES, SERVICES, Method, methods

__all__ = ["Method", "methods", "required", "DEADLINES", "RETRIED", "RETRY_POLICY",
           "service_config", "channel_options", "channel", "aio_channel", "MAX_MESSAGE_BYTES"]

MAX_MESSAGE_BYTES = 64 * 1024 * 1024   # what a channel sends and accepts at most


def required(target: str | None) -> str:
    """A client's target, which it needs unless it is given a channel."""
    if target is None:
        raise TypeError("give a target (host:port) or a channel")
    return target

#: the methods the channel retries on UNAVAILABLE: every unary RPC (the module's docstring
#: says why that is safe); derived from the protos, so a new unary RPC is covered too and a
#: new streaming one is not.
RETRIED: tuple[Method, ...] = tuple(m for s in SERVICES for m in methods(s) if not m.streaming)

#: gRPC's retry policy: four attempts at most, backoff 0.1 s doubling to 1 s (jittered).
RETRY_POLICY: dict[str, Any] = {
    "maxAttempts": 4,
    "initialBackoff": "0.1s",
    "maxBackoff": "1s",
    "backoffMultiplier": 2,
    "retryableStatusCodes": ["UNAVAILABLE"],
}


def service_config() -> dict[str, Any]:
    """The service config every channel of ours carries (JSON-ready)."""
    return {
        "loadBalancingConfig": [{"round_robin": {}}],
        "methodConfig": [{
            "name": [{"service": m.service, "method": m.name} for m in RETRIED],
            "retryPolicy": RETRY_POLICY,
        }],
        # A retry spends a token, a success earns a tenth of one: when more than about one
        # call in eleven fails, retries stop until calls succeed again.
        "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1},
    }


def channel_options(max_message_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, Any]]:
    """The options of every client channel: :func:`service_config` and the message limits."""
    return [("grpc.service_config", json.dumps(service_config())),
            ("grpc.enable_retries", 1),
            ("grpc.max_receive_message_length", max_message_bytes),
            ("grpc.max_send_message_length", max_message_bytes)]


def _options(extra: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Ours, with any the caller gives replacing ours by name."""
    named = {key for key, _ in extra}
    return [o for o in channel_options() if o[0] not in named] + list(extra)


def channel(target: str, *, credentials: grpc.ChannelCredentials | None = None,
            options: Sequence[tuple[str, Any]] = ()) -> grpc.Channel:
    """A blocking channel to ``target`` (``host:port``, ``dns:///name:port`` …) with
    :func:`channel_options`; TLS when ``credentials`` are given."""
    if credentials is None:
        return grpc.insecure_channel(target, options=_options(options))
    return grpc.secure_channel(target, credentials, options=_options(options))


def aio_channel(target: str, *, credentials: grpc.ChannelCredentials | None = None,
                options: Sequence[tuple[str, Any]] = ()) -> grpc.aio.Channel:
    """:func:`channel` for asyncio (``grpc.aio``)."""
    if credentials is None:
        return grpc.aio.insecure_channel(target, options=_options(options))
    return grpc.aio.secure_channel(target, credentials, options=_options(options))
