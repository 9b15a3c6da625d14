"""What shuangkou.client adds to a call: the generated stub vs the client, one caller.

    .venv/bin/python bench/bench_client.py [--calls 2000] [--repeat 3]

One ``shuangkou serve`` process (``--workers 1``) on loopback; one client thread making
blocking calls one after another, so each figure is a call's round trip. For ClassifyPlay
and ApplyAction (the first action of a seeded round, the same request each call: the server
keeps nothing), in turn ``--repeat`` times: the generated stub on a plain channel
(``grpc.insecure_channel``, ``timeout=`` given), the blocking client
(``ShuangkouClient``/``RoundClient``: its channel options — the service config with the
retry policy — the method table, the default deadline, the error mapping) and the asyncio
client (one coroutine awaiting each call). The best run of each is printed, and the client's
cost per call over the stub's. Also, in process and without a server, the client's own
Python per call (the method the table made, the default deadline, ``try``), on a channel
whose callables answer at once.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_grpc import Server  # noqa: E402

from shuangkou.client import (  # noqa: E402
    AsyncRoundClient,
    AsyncShuangkouClient,
    RoundClient,
    ShuangkouClient,
)
from shuangkou.v1 import (  # noqa: E402
    cards_pb2,
    rounds_pb2,
    rounds_pb2_grpc,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

RULES = variants_pb2.RuleSet(id="baibian")
CLASSIFY = service_pb2.ClassifyPlayRequest(play=cards_pb2.Cards(cards_text="45678 BJ"),
                                           rule_set=RULES)


class Answering:
    """A stand-in for a channel: each of its callables answers at once, with nothing."""

    def unary_unary(self, path: str, **serializers: Any) -> Callable[..., None]:
        return lambda request, timeout, metadata: None


def per_call(calls: int, call: Callable[[], Any]) -> float:
    """µs per call, ``calls`` in a row after a few to warm up."""
    for _ in range(20):
        call()
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls * 1e6


def per_call_async(calls: int, make: Callable[[], Any], method: str, request: Any) -> float:
    async def run() -> float:
        client = make()
        try:
            call = getattr(client, method)
            for _ in range(20):
                await call(request)
            start = time.perf_counter()
            for _ in range(calls):
                await call(request)
            return (time.perf_counter() - start) / calls * 1e6
        finally:
            await client.close()
    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    server = Server.shuangkou(1)
    target = f"127.0.0.1:{server.port}"
    try:
        plain = grpc.insecure_channel(target)
        rules = ShuangkouClient(target)
        rounds = RoundClient(channel=rules.channel)
        state = rounds.start_round(rounds_pb2.StartRoundRequest(rule_set=RULES,
                                                                seed=bytes(32))).state
        hint = rounds.suggest_action(rounds_pb2.SuggestActionRequest(rule_set=RULES,
                                                                     state=state.data))
        apply = rounds_pb2.ApplyActionRequest(rule_set=RULES, state=state.data,
                                              action=hint.action)
        stub = service_pb2_grpc.ShuangkouServiceStub(plain)
        round_stub = rounds_pb2_grpc.RoundServiceStub(plain)
        cases = {
            ("ClassifyPlay", "generated stub"): lambda: per_call(
                args.calls, lambda: stub.ClassifyPlay(CLASSIFY, timeout=10)),
            ("ClassifyPlay", "ShuangkouClient"): lambda: per_call(
                args.calls, lambda: rules.classify_play(CLASSIFY)),
            ("ClassifyPlay", "AsyncShuangkouClient"): lambda: per_call_async(
                args.calls, lambda: AsyncShuangkouClient(target), "classify_play", CLASSIFY),
            ("ApplyAction", "generated stub"): lambda: per_call(
                args.calls, lambda: round_stub.ApplyAction(apply, timeout=10)),
            ("ApplyAction", "RoundClient"): lambda: per_call(
                args.calls, lambda: rounds.apply_action(apply)),
            ("ApplyAction", "AsyncRoundClient"): lambda: per_call_async(
                args.calls, lambda: AsyncRoundClient(target), "apply_action", apply),
        }
        best: dict[tuple[str, str], float] = {}
        for _ in range(args.repeat):
            for key, run in cases.items():
                best[key] = min(best.get(key, float("inf")), run())
        for (method, how), us in best.items():
            stub_us = best[(method, "generated stub")]
            print(f"{method:<13} {how:<21} {us:8,.0f} µs/call  {us - stub_us:+7,.0f} µs vs stub")
        rules.close()
        plain.close()
    finally:
        server.close()

    # The client's own Python per call, on a channel whose callables answer at once.
    local = ShuangkouClient(channel=Answering())  # type: ignore[arg-type]
    n = 200_000
    own = timeit.timeit(lambda: local.classify_play(CLASSIFY), number=n) / n * 1e6
    print(f"client's own Python per call (no network): {own:.2f} µs")


if __name__ == "__main__":
    main()
