"""What the v1 API's bounds cost, printed as figures and ratios (docs/BENCHMARKS.md).

Against an in-process server on a loopback port (4 handler threads, default limits):

1. BatchClassify of a maximal batch (the derived cap) of valid plays, classified in chunks
   of ``BATCH_CHUNK`` with a deadline check between chunks vs in one chunk: the ratio is
   what the checks cost;
2. the same batch with every play invalid: plays/s and the reply size against the limit;
3. EnumerateLegalPlays: reading a long list in pages of 100 vs in one page (each page
   re-enumerates up to its end: the cost of stateless tokens).

Usage: ``.venv/bin/python bench/bench_api.py [--repeat 5]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc
from prometheus_client import CollectorRegistry

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shuangkou import core  # noqa: E402
from shuangkou.service.api import shuangkou as servicer_module  # noqa: E402
from shuangkou.service.config import Config  # noqa: E402
from shuangkou.service.limits import Limits  # noqa: E402
from shuangkou.service.metrics import Metrics  # noqa: E402
from shuangkou.service.server import create_server  # noqa: E402
from shuangkou.v1 import cards_pb2, service_pb2, service_pb2_grpc  # noqa: E402

S = service_pb2
HAND = "33 44 55 66 77 88 99 TT JJ QQ KK AA BJ BJ"   # 2,744 legal plays leading
BIG = 64 << 20


def best_of(repeat: int, work: Callable[[], object]) -> float:
    """Fastest of ``repeat`` runs, in seconds (the least disturbed by other load)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        work()
        times.append(time.perf_counter() - t0)
    return min(times) if len(times) < 3 else statistics.median(sorted(times)[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    config = Config(host="127.0.0.1", port=0, metrics_port=0, threads=4)
    cap = Limits(max_batch=config.max_batch, max_message_bytes=config.max_message_bytes).batch_cap
    server, port = create_server(config, metrics=Metrics(CollectorRegistry()))
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[
        ("grpc.max_receive_message_length", BIG), ("grpc.max_send_message_length", BIG)])
    stub = service_pb2_grpc.ShuangkouServiceStub(channel)
    try:
        plays = [core.parse_cards(p) for p in ("7777 BJ", "45678", "33 44 55", "SJ BJ")]
        chosen = [plays[i % len(plays)] for i in range(cap)]
        valid = S.BatchClassifyRequest(codes=bytes(c for p in chosen for c in p),
                                       lengths=[len(p) for p in chosen])
        call = lambda: stub.BatchClassify(valid, timeout=60)  # noqa: E731
        chunked = best_of(args.repeat, call)
        chunk = servicer_module.BATCH_CHUNK
        servicer_module.BATCH_CHUNK = 10**9
        whole = best_of(args.repeat, call)
        servicer_module.BATCH_CHUNK = chunk
        print(f"BatchClassify, {cap:,} valid plays (the cap): {cap / chunked:,.0f} plays/s in "
              f"chunks of {chunk:,}, {cap / whole:,.0f} plays/s in one chunk "
              f"(chunked/one = {chunked / whole:.2f}x time)")
        invalid = S.BatchClassifyRequest(plays_text=["Z" * 400] * cap)
        reply = stub.BatchClassify(invalid, timeout=60)
        bad = best_of(args.repeat, lambda: stub.BatchClassify(invalid, timeout=60))
        print(f"BatchClassify, {cap:,} invalid plays of 400 characters: {cap / bad:,.0f} "
              f"plays/s; reply {reply.ByteSize():,} bytes of the {config.max_message_bytes:,} "
              f"limit ({reply.ByteSize() / cap:.0f} bytes a play)")
        hand = cards_pb2.Cards(cards_text=HAND)
        total = len(core.legal_plays(HAND, "baibian"))

        def paged(size: int) -> int:
            request = S.EnumerateLegalPlaysRequest(hand=hand, page_size=size)
            seen = 0
            while True:
                page = stub.EnumerateLegalPlays(request, timeout=60)
                seen += len(page.plays)
                if not page.next_page_token:
                    return seen
                request.page_token = page.next_page_token

        assert paged(100) == paged(0) == total
        pages = best_of(args.repeat, lambda: paged(100))
        one = best_of(args.repeat, lambda: paged(0))
        print(f"EnumerateLegalPlays, {total:,} plays: {-(-total // 100)} pages of 100 in "
              f"{pages * 1e3:.0f} ms, one page in {one * 1e3:.0f} ms "
              f"(paged/one = {pages / one:.2f}x)")
    finally:
        channel.close()
        server.stop(None)


if __name__ == "__main__":
    main()
