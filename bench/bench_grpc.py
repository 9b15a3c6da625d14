"""gRPC service throughput and latency, printed as a table (docs/BENCHMARKS.md, "The gRPC and
HTTP service").

Every server runs in its own process; load comes from client processes (blocking calls on a
bounded number of threads, for a fixed time), all on this machine over loopback:

1. transport choice: the same ClassifyPlay handler on a bare sync ``grpc.server`` (thread
   pool) and on ``grpc.aio`` (async handler calling the core inline), no interceptors;
2. production server (``shuangkou serve``, metrics interceptor on): ClassifyPlay vs the
   health Check RPC in the same run (the ratio shows what the rules cost over bare gRPC),
   with p50/p99 latency under the bounded load;
3. BatchClassify plays/s (8,192 plays per message: under the batch cap the default 4 MiB
   message limit derives);
4. ``--workers 1`` vs ``--workers 2`` on ClassifyPlay.

Usage: ``.venv/bin/python bench/bench_grpc.py [--seconds 3] [--concurrency 8] [--clients 2]``
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[1]
BATCH = 8_192   # plays per BatchClassify: under the cap the default 4 MiB message limit derives
sys.path.insert(0, str(ROOT))

from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from shuangkou.v1 import (  # noqa: E402
    cards_pb2,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

PLAY = service_pb2.ClassifyPlayRequest(rule_set=variants_pb2.RuleSet(id="baibian"), play=cards_pb2.Cards(
    cards=[cards_pb2.CARD_4, cards_pb2.CARD_5, cards_pb2.CARD_6, cards_pb2.CARD_7,
           cards_pb2.CARD_8, cards_pb2.CARD_BJ]))


# ----------------------------------------------------------------------------- servers

def _bare_servicer():
    from prometheus_client import CollectorRegistry

    from shuangkou.service.api.shuangkou import ShuangkouServicer
    from shuangkou.service.limits import Limits
    from shuangkou.service.metrics import Metrics
    servicer = ShuangkouServicer(Limits(), Metrics(CollectorRegistry()))
    reply = type(servicer).ClassifyPlay

    def classify_play(request: Any, context: Any) -> Any:
        """A message, as the generated serializer of a bare server takes (the servicer
        returns the reply's bytes: our interceptor passes them on as they are)."""
        return service_pb2.ClassifyPlayResponse.FromString(reply(servicer, request, context))

    servicer.ClassifyPlay = classify_play   # type: ignore[method-assign]
    return servicer


def _serve_sync(threads: int) -> None:
    server = grpc.server(futures.ThreadPoolExecutor(threads))
    service_pb2_grpc.add_ShuangkouServiceServicer_to_server(_bare_servicer(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"PORT {port}", flush=True)
    sys.stdin.read()
    server.stop(0)


def _serve_aio() -> None:
    inner = _bare_servicer()
    classify = type(inner).ClassifyPlay.__wrapped__     # the handler without the sync abort
    parse = service_pb2.ClassifyPlayResponse.FromString   # it returns the reply's bytes

    class AsyncServicer(service_pb2_grpc.ShuangkouServiceServicer):
        async def ClassifyPlay(self, request, context):  # noqa: N802 - the RPC's name
            return parse(classify(inner, request, context))

    async def main() -> None:
        server = grpc.aio.server()
        service_pb2_grpc.add_ShuangkouServiceServicer_to_server(AsyncServicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(f"PORT {port}", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
        await server.stop(0)

    asyncio.run(main())


class Server:
    """A server subprocess: a bare one of this script, or ``shuangkou serve``."""

    def __init__(self, args: list[str], pattern: str) -> None:
        self.proc = subprocess.Popen(args, cwd=ROOT, stdin=subprocess.PIPE, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stream = self.proc.stdout if pattern == "PORT" else self.proc.stderr
        for line in stream:
            m = re.search(r"PORT (\d+)" if pattern == "PORT" else r"on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        else:
            raise RuntimeError("server did not start: " + self.proc.stderr.read())
        threading.Thread(target=stream.read, daemon=True).start()   # keep the pipe drained
        _wait_ready(self.port)

    @classmethod
    def bare(cls, mode: str, threads: int) -> Server:
        return cls([sys.executable, __file__, "--_serve", mode, "--threads", str(threads)], "PORT")

    @classmethod
    def shuangkou(cls, workers: int) -> Server:
        return cls([sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--http-port", "0", "--port",
                    "0", "--metrics-port", "0", "--workers", str(workers),
                    "--log-level", "INFO"], "LOG")

    def close(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.stdin.close()
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _wait_ready(port: int) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        grpc.channel_ready_future(channel).result(timeout=30)


# ----------------------------------------------------------------------------- load

def _client(port: int, method: str, seconds: float, threads: int, out) -> None:
    """One client process: ``threads`` blocking callers for ``seconds``; sends latencies."""
    channels = [grpc.insecure_channel(f"127.0.0.1:{port}",
                                      options=[("grpc.use_local_subchannel_pool", 1)])
                for _ in range(threads)]
    lat: list[list[float]] = [[] for _ in range(threads)]
    plays = [0] * threads
    stop = time.perf_counter() + seconds

    def run(i: int) -> None:
        if method == "Check":
            stub = health_pb2_grpc.HealthStub(channels[i])
            call, request, weight = stub.Check, health_pb2.HealthCheckRequest(), 1
        elif method == "BatchClassify":
            stub = service_pb2_grpc.ShuangkouServiceStub(channels[i])
            call, request, weight = stub.BatchClassify, _batch(BATCH), BATCH
        else:
            stub = service_pb2_grpc.ShuangkouServiceStub(channels[i])
            call, request, weight = stub.ClassifyPlay, PLAY, 1
        call(request, timeout=30)                     # warm up the connection
        while (t0 := time.perf_counter()) < stop:
            call(request, timeout=30)
            lat[i].append(time.perf_counter() - t0)
            plays[i] += weight

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    out.send(([x for xs in lat for x in xs], sum(plays)))


def _batch(n: int) -> service_pb2.BatchClassifyRequest:
    import random

    from shuangkou import core
    rng = random.Random(7)
    plays = ["7777 BJ", "45678", "33 44 55", "KK", "9", "TTT JJJ QQQ", "5678 BJ"]  # all valid
    codes, lengths = bytearray(), []
    for _ in range(n):
        play = core.parse_cards(rng.choice(plays))
        codes.extend(play)
        lengths.append(len(play))
    return service_pb2.BatchClassifyRequest(rule_set=variants_pb2.RuleSet(id="baibian"), codes=bytes(codes),
                                            lengths=lengths)


def load(port: int, method: str, seconds: float, concurrency: int, clients: int) -> dict:
    """Bounded load: ``clients`` processes × (concurrency / clients) threads for ``seconds``."""
    ctx = multiprocessing.get_context("spawn")
    pipes, procs = [], []
    per = max(1, concurrency // clients)
    for _ in range(clients):
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_client, args=(port, method, seconds, per, send))
        p.start()
        pipes.append(recv)
        procs.append(p)
    lat: list[float] = []
    units = 0
    for recv in pipes:
        got, n = recv.recv()
        lat.extend(got)
        units += n
    for p in procs:
        p.join()
    lat.sort()
    return {"calls/s": len(lat) / seconds, "units/s": units / seconds,
            "p50_ms": 1000 * lat[len(lat) // 2] if lat else float("nan"),
            "p99_ms": 1000 * lat[int(len(lat) * 0.99)] if lat else float("nan"),
            "calls": len(lat)}


def _row(name: str, r: dict, unit: str = "calls/s") -> str:
    return (f"{name:<44} {r['calls/s']:>10,.0f} {r['units/s'] if unit != 'calls/s' else r['calls/s']:>12,.0f} "
            f"{r['p50_ms']:>8.2f} {r['p99_ms']:>8.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--concurrency", type=int, default=8, help="calls in flight")
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3, help="sync/aio rounds (best kept)")
    parser.add_argument("--_serve", choices=("sync", "aio"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._serve == "sync":
        return _serve_sync(args.threads)
    if args._serve == "aio":
        return _serve_aio()

    s, c, k = args.seconds, args.concurrency, args.clients
    print(f"{os.cpu_count()} cores; {s:g} s per line; {c} calls in flight from {k} client "
          f"processes; loopback\n")
    print(f"{'measurement':<44} {'calls/s':>10} {'plays/s':>12} {'p50 ms':>8} {'p99 ms':>8}")
    results: dict[str, dict] = {}
    runs: dict[str, list[float]] = {"sync": [], "aio": []}
    for _ in range(args.repeat):        # alternate the two transports; keep each one's best
        for mode in ("sync", "aio"):
            server = Server.bare(mode, args.threads)
            try:
                r = load(server.port, "ClassifyPlay", s, c, k)
            finally:
                server.close()
            print(_row(f"ClassifyPlay, bare {mode} server", r), flush=True)
            runs[mode].append(r["calls/s"])
            if mode not in results or r["calls/s"] > results[mode]["calls/s"]:
                results[mode] = r
    server = Server.shuangkou(1)
    try:
        results["classify"] = load(server.port, "ClassifyPlay", s, c, k)
        print(_row("ClassifyPlay, shuangkou serve", results["classify"]), flush=True)
        results["check"] = load(server.port, "Check", s, c, k)
        print(_row("health Check, same server", results["check"]), flush=True)
        results["batch"] = load(server.port, "BatchClassify", s, min(c, 2), min(k, 2))
        print(_row(f"BatchClassify ({BATCH:,} plays/call)", results["batch"], "units/s"),
              flush=True)
    finally:
        server.close()
    server = Server.shuangkou(2)
    try:
        results["workers2"] = load(server.port, "ClassifyPlay", s, c, k)
        print(_row("ClassifyPlay, shuangkou serve --workers 2", results["workers2"]),
              flush=True)
    finally:
        server.close()
    print()
    print(f"aio / sync (bare ClassifyPlay, {args.repeat} rounds): best "
          f"{results['aio']['calls/s'] / results['sync']['calls/s']:.2f}x, median "
          f"{statistics.median(runs['aio']) / statistics.median(runs['sync']):.2f}x")
    print(f"ClassifyPlay / health Check (same server):  "
          f"{results['classify']['calls/s'] / results['check']['calls/s']:.2f}x")
    print(f"--workers 2 / --workers 1 (ClassifyPlay):   "
          f"{results['workers2']['calls/s'] / results['classify']['calls/s']:.2f}x")
    print(f"BatchClassify plays/s / ClassifyPlay calls/s: "
          f"{results['batch']['units/s'] / results['classify']['calls/s']:.0f}x")


if __name__ == "__main__":
    main()
