"""A typed Python client of the Shuangkou service (``shuangkou.v1``), sync and asyncio.

::

    from shuangkou.client import ShuangkouClient
    from shuangkou.v1 import cards_pb2, service_pb2

    with ShuangkouClient("localhost:50051") as rules:
        reply = rules.classify_play(service_pb2.ClassifyPlayRequest(
            play=cards_pb2.Cards(cards_text="45678 BJ")))
        print(reply.reading.text)

* :class:`ShuangkouClient`, :class:`RoundClient` (blocking) and
  :class:`AsyncShuangkouClient`, :class:`AsyncRoundClient` (``grpc.aio``): one method per
  RPC, taking and returning the generated messages of ``shuangkou.v1``, made from one
  method table (:mod:`~shuangkou.client.methods`) checked against the protos.
* Every call carries a deadline: the method's default (:data:`DEADLINES`) unless
  ``timeout=`` gives another.
* Retries only where safe (:mod:`~shuangkou.client.channels`): every unary call is retried
  on ``UNAVAILABLE`` by the channel's service config, because the service keeps nothing
  between calls (a retried ``ApplyAction`` gives the same new state); the ``ScoreReplays``
  stream is never retried by the channel.
* A failed call raises :class:`ServiceError` carrying the status code, the message and the
  ``google.rpc`` details the server sent (``reason``, ``field``, ``action``);
  :class:`Rejected` when the request itself was refused (sending it again gets the same
  answer).

The package imports ``grpc``, the ``google.rpc`` messages and ``shuangkou.v1`` only: not the
rules core, not the service.
"""

if __name__ != "shuangkou.client":   # the folder imported by its own name (python in the repo root)
    raise ImportError(f"this folder is the package shuangkou.client; import it by that name, "
                      f"not as {__name__!r} (docs/decisions/engineering.md E1)")

from .aio import AsyncRoundClient, AsyncShuangkouClient
from .channels import (
    RETRIED,
    RETRY_POLICY,
    aio_channel,
    channel,
    channel_options,
    service_config,
)
from .errors import InBand, Rejected, ServiceError, decode_status, error_of
from .methods import DEADLINES
from .sync import RoundClient, ShuangkouClient

__all__ = ["ShuangkouClient", "RoundClient", "AsyncShuangkouClient", "AsyncRoundClient",
           "ServiceError", "Rejected", "InBand", "decode_status", "error_of", "DEADLINES",
           "RETRIED", "RETRY_POLICY", "service_config", "channel_options", "channel",
           "aio_channel"]
