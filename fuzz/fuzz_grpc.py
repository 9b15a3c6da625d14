"""Fuzz the gRPC boundary: random request messages of every RPC, handled in process by
:class:`shuangkou.service.api.shuangkou.ShuangkouServicer` with the server's default limits.

Each request must end in a response that serialises, or in a documented status
(INVALID_ARGUMENT / NOT_FOUND with a google.rpc.BadRequest naming the field, or
RESOURCE_EXHAUSTED / DEADLINE_EXCEEDED). INTERNAL, UNKNOWN or an escaping exception is a finding; the service's
logged cause is re-raised so the report shows the real traceback. ScoreReplays streams must
answer every request once, in order, and an item's error carries a documented code.
"""

from __future__ import annotations

import sys

import grpc
from common import KNOWN, STRICT, Input, _seen, main
from messages import (
    STREAM,
    Aborted,
    Context,
    answered,
    check_status,
    install_log_trap,
    random_rpc,
)
from prometheus_client import CollectorRegistry

from shuangkou.service.api.shuangkou import ShuangkouServicer
from shuangkou.service.errors import decode_status
from shuangkou.service.limits import Limits
from shuangkou.service.metrics import Metrics

SERVICER = ShuangkouServicer(Limits(), Metrics(CollectorRegistry()))
TRAP = install_log_trap()


def _internal(what: str) -> None:
    """An INTERNAL answer: re-raise the logged cause (unless it is a known finding)."""
    cause = TRAP.caught[-1] if TRAP.caught else None
    TRAP.caught.clear()
    if cause is not None and not STRICT:
        for known in KNOWN:
            if known.matches(cause):
                _seen[known.id] = _seen.get(known.id, 0) + 1
                return
    raise AssertionError(f"{what}: INTERNAL") from cause


def one_input(data: bytes) -> None:
    inp = Input(data)
    name, request = random_rpc(inp)
    method = getattr(SERVICER, name)
    what = f"{name}({request!r:.300})"
    if name in STREAM:
        answers = list(method(iter(request), Context()))
        if [a.index for a in answers] != list(range(len(request))):
            raise AssertionError(f"{what}: stream answered {[a.index for a in answers]}")
        for a in answers:
            a.SerializeToString()
            if a.WhichOneof("outcome") == "error":
                failure = decode_status(a.error)
                if failure.code is grpc.StatusCode.INTERNAL:
                    _internal(what)
                elif failure.code not in (grpc.StatusCode.INVALID_ARGUMENT,
                                          grpc.StatusCode.NOT_FOUND) or not failure.field:
                    raise AssertionError(f"{what}: stream item error {a.error}")
        return
    try:
        response = method(request, Context())
    except Aborted as exc:
        if exc.code is grpc.StatusCode.INTERNAL:
            _internal(what)
            return
        check_status(exc.code, exc.status, what)
        return
    answered(name, response).SerializeToString()


if __name__ == "__main__":
    main(one_input, sys.argv)
