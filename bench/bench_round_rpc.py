"""RoundService over gRPC: ApplyAction late in a long round vs a health Check, same server.

    .venv/bin/python bench/bench_round_rpc.py [--seconds 3] [--concurrency 8] [--clients 2]
                                              [--actions 130] [--repeat 3] [--handlers-only]

One ``shuangkou serve`` process (``--workers 1``, metrics interceptor on); load from client
processes on loopback, bounded (``--concurrency`` blocking calls in flight), for a fixed
time per measurement. Measured in one run, ``--repeat`` times in turn: health ``Check``;
``ApplyAction`` on the state after ``--actions - 1`` actions of a round (its
``--actions``-th action, a play); the same RPC on the state of the round's first action
(the leader's play). The issue's target: ApplyAction at the end of a 130-action round
>= 0.8x the Check rate. The request is the same each call: the server keeps nothing between
calls, so applying one action to one state any number of times is the honest repeated work.

Three figures for the ratio, since clients and server share the machine's two cores and a
shared machine's other load moves single rates by +-20 %: the ratio of the best rates
(the least disturbed run of each), the median of the per-run ratios (each pair measured
back to back), and the server's capacity — its CPU time per call (all threads, from
/proc), whose inverse is the rate one server core sustains. First, in process, the server-side
Python each call runs besides gRPC (the interceptor's decoding, the handler, the encoding),
warm; in a live server the same code runs between gRPC's own work and costs more.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import statistics
import sys
import threading
import time
import timeit
from pathlib import Path
from types import SimpleNamespace

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from bench_grpc import Server  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402

from shuangkou import core  # noqa: E402
from shuangkou.core.generate import deal  # noqa: E402
from shuangkou.v1 import (  # noqa: E402
    rounds_pb2,
    rounds_pb2_grpc,
    scoring_pb2,
    variants_pb2,
)

VARIANT = "baibian"
ROUND_SERVICE = rounds_pb2.DESCRIPTOR.services_by_name["RoundService"].full_name


def long_round(actions: int) -> tuple[bytes, bytes]:
    """Serialized ApplyActionRequests: the first action of a round and its ``actions``-th,
    both plays (a play costs the server more than a pass), from the first seeded round
    (random legal actions) that lasts that long with a play at that action."""
    for seed in range(1000):
        rng = random.Random(seed)
        hands = deal(VARIANT, rng)
        r = core.Round.deal(VARIANT, hands, 0, revealed=hands[0][:1])
        requests = []
        while not r.is_over and len(requests) < actions:
            plays = r.legal_plays()
            pick = rng.randrange(len(plays) + (r.standing is not None))
            action = rounds_pb2.RoundAction(seat=r.turn)
            state = r.to_bytes()
            if pick == len(plays):
                action.type = scoring_pb2.ACTION_TYPE_PASS
                r.pass_turn(r.turn)
            else:
                action.type = scoring_pb2.ACTION_TYPE_PLAY
                action.cards.cards[:] = plays[pick].cards
                r.play(r.turn, plays[pick].cards)
            requests.append(rounds_pb2.ApplyActionRequest(
                rule_set=variants_pb2.RuleSet(id=VARIANT), state=state, action=action))
        if len(requests) == actions and requests[-1].action.type == scoring_pb2.ACTION_TYPE_PLAY:
            return requests[0].SerializeToString(), requests[-1].SerializeToString()
    raise RuntimeError(f"no round of {actions} actions in 1000 seeds")


def _client(port: int, payload: bytes | None, seconds: float, threads: int, out) -> None:
    """One client process: ``threads`` blocking callers for ``seconds``; sends the count."""
    channels = [grpc.insecure_channel(f"127.0.0.1:{port}",
                                      options=[("grpc.use_local_subchannel_pool", 1)])
                for _ in range(threads)]
    calls = [0] * threads
    stop = time.perf_counter() + seconds

    def run(i: int) -> None:
        if payload is None:
            call, request = (health_pb2_grpc.HealthStub(channels[i]).Check,
                             health_pb2.HealthCheckRequest())
        else:
            call = rounds_pb2_grpc.RoundServiceStub(channels[i]).ApplyAction
            request = rounds_pb2.ApplyActionRequest.FromString(payload)
        call(request, timeout=30)                     # warm up (and fail early if refused)
        while time.perf_counter() < stop:
            call(request, timeout=30)
            calls[i] += 1

    pool = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    out.send(sum(calls))


def rate(port: int, payload: bytes | None, args: argparse.Namespace) -> float:
    ctx = multiprocessing.get_context("spawn")
    per = max(1, args.concurrency // args.clients)
    pipes, procs = [], []
    for _ in range(args.clients):
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_client, args=(port, payload, args.seconds, per, send))
        p.start()
        pipes.append(recv)
        procs.append(p)
    total = sum(recv.recv() for recv in pipes)
    for p in procs:
        p.join()
    return total / args.seconds


class _Handlers:
    """Stands in for a grpc.Server to collect the method handlers a servicer registers."""

    def __init__(self) -> None:
        self.by_method: dict[str, grpc.RpcMethodHandler] = {}

    def add_generic_rpc_handlers(self, handlers: object) -> None:
        pass

    def add_registered_method_handlers(self, service: str, handlers: dict) -> None:
        self.by_method.update({f"/{service}/{m}": h for m, h in handlers.items()})


class _Context:
    """The part of a ServicerContext the interceptor and servicers read on success."""

    def is_active(self) -> bool:
        return True

    def code(self) -> None:
        return None


def handler_times(late: bytes, first: bytes, number: int = 20_000) -> dict[str, float]:
    """Microseconds per call of each RPC's server-side Python in process, warm: the request's
    bytes through the metrics interceptor's decoder, handler and serializer — what a server
    thread runs for the call besides gRPC itself (best of 5 × ``number`` calls)."""
    from prometheus_client import CollectorRegistry

    from shuangkou.service.api.rounds import RoundServicer, register_round_service
    from shuangkou.service.limits import Limits
    from shuangkou.service.metrics import Metrics
    try:
        from shuangkou.service.interceptor import MetricsInterceptor
    except ImportError:     # a build before the interceptor had a module of its own
        from shuangkou.service.metrics import MetricsInterceptor  # type: ignore[attr-defined,no-redef]
    from shuangkou.service.server import HealthServicer

    server = _Handlers()
    register_round_service(server,  # type: ignore[arg-type]
                           RoundServicer(Limits(), Metrics(CollectorRegistry())))
    health = HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health, server)
    interceptor = MetricsInterceptor(Metrics(CollectorRegistry()))

    def through(method: str) -> grpc.RpcMethodHandler:
        details = SimpleNamespace(method=method, invocation_metadata=())
        return interceptor.intercept_service(lambda _: server.by_method[method], details)

    check = through("/grpc.health.v1.Health/Check")
    apply = through(f"/{ROUND_SERVICE}/ApplyAction")
    context = _Context()
    loads = {"check": (check, health_pb2.HealthCheckRequest().SerializeToString()),
             "late": (apply, late), "first": (apply, first)}
    times = {}
    for name, (h, payload) in loads.items():
        def call(h: grpc.RpcMethodHandler = h, payload: bytes = payload) -> bytes:
            reply = h.unary_unary(h.request_deserializer(payload), context)
            return reply if h.response_serializer is None else h.response_serializer(reply)
        call()
        times[name] = min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6
    return times


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process, all its threads (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--concurrency", type=int, default=8, help="calls in flight")
    ap.add_argument("--clients", type=int, default=2, help="client processes")
    ap.add_argument("--actions", type=int, default=130, help="the action measured late")
    ap.add_argument("--repeat", type=int, default=3, help="runs of the three")
    ap.add_argument("--no-pin", dest="pin", action="store_false",
                    help="let the scheduler place server and clients (default: server on "
                         "one CPU, clients on the rest)")
    ap.add_argument("--handlers-only", action="store_true",
                    help="only the in-process figures (no server, no load)")
    args = ap.parse_args()
    first, late = long_round(args.actions)
    print(f"state bytes: first action {len(rounds_pb2.ApplyActionRequest.FromString(first).state)}"
          f", action {args.actions}: {len(rounds_pb2.ApplyActionRequest.FromString(late).state)}")
    us = handler_times(late, first)
    print("server-side Python per call, in process, warm (decode + interceptor + handler + "
          "encode):")
    for name, t in us.items():
        print(f"  {LABELS[name].format(n=args.actions):<28} {t:6.1f} us")
    if args.handlers_only:
        return
    cpus = sorted(os.sched_getaffinity(0))
    pin = args.pin and len(cpus) >= 2
    if pin:          # the server on one core, the clients on the others (inherited)
        os.sched_setaffinity(0, cpus[:1])
    server = Server.shuangkou(1)
    if pin:
        os.sched_setaffinity(0, cpus[1:])
        print(f"server pinned to CPU {cpus[0]}, clients to CPU {', '.join(map(str, cpus[1:]))}")
    rates: dict[str, list[float]] = {"check": [], "late": [], "first": []}
    cpu: dict[str, list[float]] = {"check": [], "late": [], "first": []}
    try:
        for turn in range(args.repeat):
            for name, payload in (("check", None), ("late", late), ("first", first)):
                c0 = cpu_seconds(server.proc.pid)
                got = rate(server.port, payload, args)
                per_call = (cpu_seconds(server.proc.pid) - c0) / (got * args.seconds)
                rates[name].append(got)
                cpu[name].append(per_call)
                print(f"  run {turn + 1}: {LABELS[name].format(n=args.actions):<28} "
                      f"{got:>9,.0f} calls/s   server CPU {per_call * 1e6:6.0f} us/call",
                      flush=True)
    finally:
        server.close()
    for name in rates:
        print(f"best {LABELS[name].format(n=args.actions):<28} {max(rates[name]):>9,.0f} calls/s"
              f"   server CPU (median) {statistics.median(cpu[name]) * 1e6:6.0f} us/call")
    n = args.actions
    paired = [a / c for a, c in zip(rates["late"], rates["check"], strict=True)]
    print(f"ApplyAction (action {n}) / Check (target >= 0.8x):")
    print(f"  best rates             {max(rates['late']) / max(rates['check']):.2f}x")
    print(f"  median of run ratios   {statistics.median(paired):.2f}x   "
          f"(runs: {', '.join(f'{x:.2f}' for x in paired)})")
    print(f"  server capacity        "
          f"{statistics.median(cpu['check']) / statistics.median(cpu['late']):.2f}x   "
          f"(CPU per call, medians)")
    print(f"action {n} / action 1: best rates {max(rates['late']) / max(rates['first']):.2f}x, "
          f"server capacity "
          f"{statistics.median(cpu['first']) / statistics.median(cpu['late']):.2f}x")


LABELS = {"check": "health Check", "late": "ApplyAction, action {n}",
          "first": "ApplyAction, action 1"}


if __name__ == "__main__":
    main()
