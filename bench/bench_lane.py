"""The lane for searches and reviews (issue 61; docs/BENCHMARKS.md "The lane"), against a real
server process: what cheap calls and probes see while expensive calls crowd in, and what two
callers of 托管 get from one process.

Parts (``--parts``, all by default; each against a server of its own):

* ``reviews``: ``--reviews`` (32) concurrent ReviewRounds of one round at the largest budget
  the server accepts — the API's 1,000,000 rollouts a decision, or, from a server that caps
  a review's rollouts (review_max_rollouts), the most its cap allows this round — each with
  a 3,600 s deadline, hung up after the window; meanwhile gRPC ClassifyPlay, gRPC health
  Check and HTTP /readyz, each from a probe of its own (one call at a time, the next 20 ms
  after the last was answered) for ``--seconds``: p50 and p99 (targets: p50 < 20 ms, p99 <
  100 ms), and what the reviews got back;
* ``abandoned``: ``--abandoned`` (100) HTTP SuggestActions, a 10 s search each, whose
  clients hang up after ``--hang-up`` (1 s); meanwhile, and for as long again after, a gRPC
  ClassifyPlay probe: p50 of the calls made while the clients wait (target < 20 ms);
* ``throughput``: SuggestAction at the 托管 default (``search: {}``) from 1 then 2 concurrent
  callers for ``--throughput-seconds`` each, one process: decisions a second and the ratio
  (target: 2 callers >= 1.8x one); then the same from a ``--workers 2`` server;
* ``rates``: no server: the cost model's rates (service/costs.py ``RATES``), CPU-seconds
  of one rollout per card in play, measured here beside the model's.

The server is started from ``--server`` (a command; default this interpreter's
``-m shuangkou.service serve``: give another build's to measure that build), on loopback
ports of its own; or ``--port`` and ``--http-port`` name one already running (the
``--workers 2`` line is then left out). Each part prints the host's load average: the figures
are the shared host's.

    .venv/bin/python bench/bench_lane.py
    .venv/bin/python bench/bench_lane.py --server "/path/to/old/.venv/bin/python -m shuangkou.service serve"
    .venv/bin/python bench/bench_lane.py --parts rates
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import grpc
from google.protobuf import json_format
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status

ROOT = Path(__file__).resolve().parents[1]

from shuangkou import core  # noqa: E402
from shuangkou.core.suggest import MAX_ROLLOUTS  # noqa: E402
from shuangkou.v1 import (  # noqa: E402
    cards_pb2,
    rounds_pb2,
    rounds_pb2_grpc,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

PROBE_EVERY = 0.02          # seconds between one probe's calls (--probe-ms)
PROBE_TIMEOUT = 10.0        # a probe that takes longer counts as this long
REVIEW_DEADLINE = 3600.0
SEARCH_MS = 10_000          # an abandoned search's budget
TARGET_P50, TARGET_P99, TARGET_RATIO = 20.0, 100.0, 1.8
LISTEN = re.compile(r"serving shuangkou\.v1 on [^ ]+:(\d+)")
HTTP = re.compile(r"HTTP \(Connect, gRPC-Web\) on [^ ]+:(\d+)")


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min)"


# ----------------------------------------------------------------------------- the server

@dataclass
class Server:
    port: int
    http_port: int
    proc: subprocess.Popen[str] | None = None


@contextmanager
def server(args: argparse.Namespace, *extra: str) -> Iterator[Server]:
    """The server under test: the one ``--port`` names, or one started from ``--server``
    on loopback ports of its own (stopped after)."""
    if args.port:
        yield Server(args.port, args.http_port)
        return
    command = [*shlex.split(args.server), "--host", "127.0.0.1", "--port", "0",
               "--http-host", "127.0.0.1", "--http-port", "0", "--metrics-port", "0",
               "--log-level", "INFO", "--grace", "1", *extra]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    found = None
    for line in proc.stderr:
        listen, http = LISTEN.search(line), HTTP.search(line)
        if listen and http:
            found = Server(int(listen.group(1)), int(http.group(1)), proc)
            break
    if found is None:
        proc.kill()
        raise SystemExit(f"bench_lane: the server did not start: {' '.join(command)}")
    threading.Thread(target=proc.stderr.read, daemon=True).start()      # drain the log
    try:
        wait_serving(found.port)
        yield found
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_serving(port: int) -> None:
    deadline = time.monotonic() + 60
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = health_pb2_grpc.HealthStub(channel).Check
        while time.monotonic() < deadline:
            try:
                if check(health_pb2.HealthCheckRequest(), timeout=2).status == \
                        health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.1)
    raise SystemExit("bench_lane: the server never became SERVING")


def channel(port: int) -> grpc.Channel:
    """A channel on a connection of its own (gRPC would share one between channels)."""
    return grpc.insecure_channel(f"127.0.0.1:{port}",
                                 options=[("grpc.use_local_subchannel_pool", 1)])


# ----------------------------------------------------------------------------- probes

class Probe:
    """One kind of cheap call made from a thread of its own until stopped, as a probe or a
    client waiting for its answer makes them: one at a time, the next :attr:`every` seconds
    after the last was answered. Each call's latency in ms by the time it was made, from
    start() (a failure counts its time and is named)."""

    every = PROBE_EVERY

    def __init__(self, name: str, call: Callable[[], None]) -> None:
        self.name, self._call = name, call
        self.samples: list[tuple[float, float]] = []      # (made at, ms)
        self.failures: collections.Counter[str] = collections.Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.t0 = 0.0

    def start(self) -> Probe:
        self.t0 = time.perf_counter()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            at = time.perf_counter()
            try:
                self._call()
            except grpc.RpcError as exc:
                self.failures[exc.code().name] += 1
            except (OSError, http.client.HTTPException, RuntimeError) as exc:
                self.failures[type(exc).__name__] += 1
            self.samples.append((at - self.t0, (time.perf_counter() - at) * 1e3))
            self._stop.wait(self.every)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def line(self, label: str = "", p99: bool = True, start: float = 0.0,
             end: float = float("inf")) -> str:
        """p50 (and p99) of the calls issued in [start, end) seconds from start()."""
        label = label or self.name
        ms = sorted(m for at, m in self.samples if start <= at < end)
        if not ms:
            return f"  {label:<24} no samples"
        p50, p99v = ms[len(ms) // 2], ms[min(len(ms) - 1, int(0.99 * len(ms)))]
        met = p50 < TARGET_P50 and (not p99 or p99v < TARGET_P99)
        failed = f"; failed {dict(self.failures)}" if self.failures else ""
        tail = f", p99 {p99v:8.1f} ms" if p99 else ""
        return (f"  {label:<24} p50 {p50:8.1f} ms{tail}  ({len(ms)} calls{failed}) "
                f"{'meets' if met else 'MISSES'} the target")


def classify_probe(port: int) -> Probe:
    stub = service_pb2_grpc.ShuangkouServiceStub(channel(port))
    request = service_pb2.ClassifyPlayRequest(rule_set=variants_pb2.RuleSet(id="baibian"),
                                              play=cards_pb2.Cards(cards_text="7777"))
    return Probe("gRPC ClassifyPlay", lambda: stub.ClassifyPlay(request,
                                                               timeout=PROBE_TIMEOUT) and None)


def health_probe(port: int) -> Probe:
    check = health_pb2_grpc.HealthStub(channel(port)).Check
    return Probe("gRPC health Check",
                 lambda: check(health_pb2.HealthCheckRequest(), timeout=PROBE_TIMEOUT) and None)


def readyz_probe(http_port: int) -> Probe:
    def call() -> None:
        conn = http.client.HTTPConnection("127.0.0.1", http_port, timeout=PROBE_TIMEOUT)
        try:
            conn.request("GET", "/readyz")
            resp = conn.getresponse()
            resp.read()
            if resp.status != 200:
                raise RuntimeError(f"/readyz {resp.status}")
        finally:
            conn.close()
    return Probe("HTTP /readyz", call)


# ----------------------------------------------------------------------------- reviews

def review_request(port: int) -> tuple[service_pb2.ReviewRoundRequest, str]:
    """A ReviewRound of one generated round at the largest budget the server accepts, and
    how that budget was found."""
    replay = core.generate_replay("baibian", 3)
    request = service_pb2.ReviewRoundRequest(replay_json=json.dumps(replay),
                                             rollouts=MAX_ROLLOUTS)
    with channel(port) as ch:
        try:       # a server that caps it refuses at once; one that does not, reviews
            service_pb2_grpc.ShuangkouServiceStub(ch).ReviewRound(request, timeout=0.5)
        except grpc.RpcError as exc:
            status = rpc_status.from_call(exc)
            if exc.code() == grpc.StatusCode.INVALID_ARGUMENT and status is not None:
                from google.rpc import error_details_pb2

                for detail in status.details:
                    info = error_details_pb2.ErrorInfo()
                    if detail.Unpack(info) and info.metadata.get("setting") == \
                            "review_max_rollouts":
                        decisions = sum("escape" not in a for a in replay["actions"])
                        request.rollouts = int(info.metadata["limit"]) // decisions
                        return request, (f"{request.rollouts:,} rollouts a decision x "
                                         f"{decisions} decisions: the server's "
                                         f"review_max_rollouts {int(info.metadata['limit']):,}")
            elif exc.code() != grpc.StatusCode.DEADLINE_EXCEEDED:
                raise SystemExit(f"bench_lane: ReviewRound refused: {exc.details()}") from None
    return request, f"{MAX_ROLLOUTS:,} rollouts a decision (the API's largest)"


def part_reviews(args: argparse.Namespace) -> None:
    with server(args) as srv:
        request, how = review_request(srv.port)
        print(f"reviews: {args.reviews} concurrent ReviewRounds at {how}, {REVIEW_DEADLINE:,.0f} s "
              f"deadlines; probes {Probe.every * 1e3:g} ms apart for {args.seconds:g} s; "
              f"{load()}")
        channels = [channel(srv.port) for _ in range(4)]
        calls = [service_pb2_grpc.ShuangkouServiceStub(channels[i % 4]).ReviewRound.future(
            request, timeout=REVIEW_DEADLINE) for i in range(args.reviews)]
        time.sleep(1.0)           # admitted or refused: the reviews are under way
        probes = [classify_probe(srv.port).start(), health_probe(srv.port).start(),
                  readyz_probe(srv.http_port).start()]
        time.sleep(args.seconds)
        for p in probes:
            p.stop()
        got: collections.Counter[str] = collections.Counter()
        reasons: collections.Counter[str] = collections.Counter()
        for call in calls:
            if not call.done():
                got["still running (hung up now)"] += 1
                call.cancel()
                continue
            try:
                call.result()
                got["OK"] += 1
            except grpc.RpcError as exc:
                got[exc.code().name] += 1
                reasons[_reason(exc)] += 1
        for p in probes:
            print(p.line())
        print(f"  the reviews: {dict(got)}" + (f"; reasons {dict(reasons)}" if reasons else ""))
        for c in channels:
            c.close()
        print(f"  {load()}")


def _reason(exc: grpc.RpcError) -> str:
    """The ErrorInfo reason of a failed call (its code's name without one)."""
    from google.rpc import error_details_pb2

    status = rpc_status.from_call(exc)    # type: ignore[arg-type]
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info.reason
    return exc.code().name


# ----------------------------------------------------------------------------- abandoned searches

def search_body() -> bytes:
    """A SuggestAction whose search runs its whole budget (a deal whose opening lead keeps two
    candidates in contention: tests/test_edge.py)."""
    import random

    from shuangkou.core.generate import deal

    r = core.Round.deal("baibian", deal("baibian", random.Random(1)), 0)
    return json_format.MessageToJson(rounds_pb2.SuggestActionRequest(
        rule_set=variants_pb2.RuleSet(id="baibian"), state=r.to_bytes(),
        search=rounds_pb2.SearchBudget(max_ms=SEARCH_MS))).encode()


def abandon(http_port: int, body: bytes, after: float, seen: collections.Counter[str]) -> None:
    """One HTTP SuggestAction whose client hangs up ``after`` seconds (what it was answered
    before then, if anything, is tallied in ``seen``)."""
    sock = socket.create_connection(("127.0.0.1", http_port), timeout=5)
    t0 = time.monotonic()
    try:
        sock.sendall(b"POST /shuangkou.v1.RoundService/SuggestAction HTTP/1.1\r\n"
                     b"Host: bench\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        sock.settimeout(after)
        try:
            head = sock.recv(64)
            seen[head.split(b"\r\n", 1)[0].decode("latin-1", "replace")[9:] or "closed"] += 1
        except TimeoutError:
            seen["hung up"] += 1
        time.sleep(max(0.0, t0 + after - time.monotonic()))
    finally:
        sock.close()


def part_abandoned(args: argparse.Namespace) -> None:
    with server(args) as srv:
        body = search_body()
        print(f"abandoned: {args.abandoned} HTTP SuggestActions ({SEARCH_MS:,} ms searches) "
              f"hung up after {args.hang_up:g} s; a gRPC ClassifyPlay probe, calls "
              f"{Probe.every * 1e3:g} ms apart, idle, while the clients wait, and as long again "
              f"after they hung up; {load()}")
        idle = classify_probe(srv.port).start()
        time.sleep(args.hang_up)
        idle.stop()
        probe = classify_probe(srv.port)
        seen: collections.Counter[str] = collections.Counter()
        clients = [threading.Thread(target=abandon, args=(srv.http_port, body, args.hang_up,
                                                          seen)) for _ in range(args.abandoned)]
        probe.start()
        for c in clients:
            c.start()
        for c in clients:
            c.join()
        time.sleep(max(0.0, probe.t0 + 2 * args.hang_up - time.perf_counter()))
        probe.stop()
        print(idle.line("idle", p99=False))
        print(probe.line("while the clients wait", p99=False, end=args.hang_up))
        print(probe.line("after they hung up", p99=False, start=args.hang_up))
        print(f"  the searches, before their clients hung up: {dict(seen)}")
        print(f"  {load()}")


# ----------------------------------------------------------------------------- throughput

def states() -> list[bytes]:
    """Round states at every decision of a few generated baibian rounds: 托管's work."""
    from shuangkou.core.replay import parse_replay

    out = []
    for seed in (1, 2, 3):
        typed = parse_replay(core.generate_replay("baibian", seed))
        r = typed.start()
        for action in typed.actions:
            if action.kind != "escape":
                out.append(r.to_bytes())
            r.apply(action)
    return out


def throughput(port: int, callers: int, seconds: float, data: list[bytes]
               ) -> tuple[float, float]:
    """SuggestActions at the 托管 default answered a second from ``callers`` concurrent
    callers (each on connections of its own, spread over the server's workers), and the
    rollouts a second they report (a search stopped by its 100 ms before its 1,200 rollouts
    answers as fast, with fewer)."""
    done = [0] * callers
    rollouts = [0] * callers
    stop = time.monotonic() + seconds

    def caller(k: int) -> None:
        stubs = [rounds_pb2_grpc.RoundServiceStub(channel(port)) for _ in range(4)]
        i = k
        while time.monotonic() < stop:
            reply = stubs[i % 4].SuggestAction(rounds_pb2.SuggestActionRequest(
                rule_set=variants_pb2.RuleSet(id="baibian"), state=data[i % len(data)],
                search=rounds_pb2.SearchBudget()), timeout=30)
            done[k] += 1
            rollouts[k] += reply.search.rollouts
            i += callers

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(callers)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - t0
    return sum(done) / took, sum(rollouts) / took


def part_throughput(args: argparse.Namespace) -> None:
    data = states()
    print(f"throughput: SuggestAction at the 托管 default (search: {{}}) over {len(data)} "
          f"states, {args.throughput_seconds:g} s a line; {load()}")
    setups = [("one process", ())] + ([] if args.port else [("--workers 2", ("--workers",
                                                                             "2"))])
    rates: dict[str, tuple[float, float]] = {}
    for label, extra in setups:
        with server(args, *extra) as srv:
            throughput(srv.port, 1, min(1.0, args.throughput_seconds), data)      # warm
            (one, one_r), (two, two_r) = (throughput(srv.port, n, args.throughput_seconds,
                                                     data) for n in (1, 2))
        rates[label] = (one, two)
        met = "meets" if two >= TARGET_RATIO * one else "MISSES"
        print(f"  {label:<12} 1 caller {one:6.1f}/s ({one_r:,.0f} rollouts/s), 2 callers "
              f"{two:6.1f}/s ({two_r:,.0f} rollouts/s): {two / one:.2f}x"
              + (f" ({met} the {TARGET_RATIO}x target)" if label == "one process" else ""))
    if len(rates) == 2:
        print(f"  --workers 2 with 2 callers: {rates['--workers 2'][1] / rates['one process'][1]:.2f}x "
              "one process's")
    print(f"  {load()}")


# ----------------------------------------------------------------------------- rates

def part_rates(args: argparse.Namespace) -> None:
    """The cost model's rates measured: CPU-seconds of one rollout per card in play, the
    review's evaluation and 托管's search, every sixth decision of generated rounds."""
    from shuangkou.core import _search
    from shuangkou.core.replay import parse_replay
    from shuangkou.core.suggest import TUOGUAN
    from shuangkou.core.variants import list_variants
    from shuangkou.service.costs import RATES

    print(f"rates: CPU-seconds of one rollout per card in play (x 1e-6), {args.rates_rollouts} "
          f"rollouts a decision, seeds 1..{args.rates_seeds}; {load()}")
    for v in list_variants():
        cpu = {"evaluate": 0.0, "search": 0.0}
        work = {"evaluate": 0, "search": 0}
        for seed in range(1, args.rates_seeds + 1):
            typed = parse_replay(core.generate_replay(v.id, seed))
            r = typed.start()
            left = sum(len(h) for h in typed.hands)
            for i, action in enumerate(typed.actions):
                before = r.copy()
                record = r.apply(action)
                if action.kind != "escape" and i % 6 == 0:
                    t0 = time.thread_time()
                    ev = _search.evaluate(before, (action.cards, record.reading,
                                                   action.declare is not None),
                                          rollouts=args.rates_rollouts, model="mix")
                    cpu["evaluate"] += time.thread_time() - t0
                    work["evaluate"] += ev.rollouts * left
                    t0 = time.thread_time()
                    ev = _search.search(before, rollouts=args.rates_rollouts, model="mix",
                                        race=TUOGUAN.race, partner_bomb=TUOGUAN.partner_bomb)
                    cpu["search"] += time.thread_time() - t0
                    work["search"] += ev.rollouts * left
                left -= len(action.cards)
        got = {k: cpu[k] / work[k] * 1e6 if work[k] else 0.0 for k in cpu}
        print(f"  {v.id:<16} evaluate {got['evaluate']:.3f}, search {got['search']:.3f}; "
              f"the model {RATES[v.id] * 1e6:.3f}")


PARTS: dict[str, Callable[[argparse.Namespace], None]] = {
    "reviews": part_reviews, "abandoned": part_abandoned, "throughput": part_throughput,
    "rates": part_rates}


def main() -> None:
    doc = __doc__ or ""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0].replace("\n", " "))
    parser.add_argument("--parts", default=",".join(PARTS),
                        help=f"comma-separated, of {', '.join(PARTS)} (default: all)")
    parser.add_argument("--server", default=f"{shlex.quote(sys.executable)} -m shuangkou.service "
                        "serve", help="the command that starts a server (ports are added)")
    parser.add_argument("--port", type=int, default=0, help="gRPC port of a running server")
    parser.add_argument("--http-port", type=int, default=0, help="its HTTP port")
    parser.add_argument("--reviews", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=20.0, help="the probes' window")
    parser.add_argument("--abandoned", type=int, default=100)
    parser.add_argument("--hang-up", type=float, default=1.0)
    parser.add_argument("--throughput-seconds", type=float, default=10.0)
    parser.add_argument("--rates-rollouts", type=int, default=400)
    parser.add_argument("--rates-seeds", type=int, default=4)
    parser.add_argument("--probe-ms", type=float, default=PROBE_EVERY * 1e3,
                        help="ms from a probe's answer to its next call")
    args = parser.parse_args()
    Probe.every = args.probe_ms / 1e3
    if bool(args.port) != bool(args.http_port):
        parser.error("--port and --http-port go together")
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = set(parts) - set(PARTS)
    if unknown:
        parser.error(f"unknown part(s) {', '.join(sorted(unknown))}")
    print(f"bench_lane: {os.cpu_count()} cores; {args.server if not args.port else f'port {args.port}'}")
    for part in parts:
        PARTS[part](args)


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    main()
