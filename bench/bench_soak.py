"""Load and soak: a sustained mixed load on a ``shuangkou serve`` process over loopback.

1. **Calibrate**: for rising client concurrency (in-flight RPCs), run the mixed load for a
   few seconds each; start the soak at the level with the best throughput whose p99 stays
   under 60 % of the target (50 ms);
2. **Soak**: run the mixed load for ``--seconds`` (or until ``--max-ops`` operations),
   sampling the server's resident memory every second; every 5 s the number of in-flight
   RPCs is lowered when the recent p99 passes 80 % of the target and raised when it is
   under half of it, so the load stays at the highest rate the target allows.

The mix per cycle: one BatchClassify of ``--batch`` plays (each play counts as one
operation: that is how a million operations fit in a few minutes on 2 cores), ClassifyPlay,
ComparePlays, EnumerateLegalPlays (leading and following), ScoreRound from a summary and
from a replay. Requests are built up front from seeded deals and replays of every built-in
variant. Reported: RPCs and operations per second, p50/p99 per RPC, errors (must be 0) and
server RSS growth after warm-up (must stay under 5 %). Everything is bounded in time and
count and stops by itself; the server is stopped at the end.

Usage: ``.venv/bin/python bench/bench_soak.py [--seconds 180] [--json out.json]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from shuangkou.core import format_cards, legal_plays, parse_cards  # noqa: E402
from shuangkou.core.generate import deal, generate_replay  # noqa: E402
from shuangkou.v1 import (  # noqa: E402
    cards_pb2,
    scoring_pb2,
    service_pb2,
    service_pb2_grpc,
)
from shuangkou.v1.variants_pb2 import RuleSet  # noqa: E402

VARIANTS = ("baibian", "fengkuang", "fengkuang_crazy", "bianfeng", "bianfeng_lishui",
            "qianbian", "huopin")
S = service_pb2
LISTEN = re.compile(r"serving shuangkou\.v1 on [^ ]+:(\d+)")


# ----------------------------------------------------------------------------- the mix

@dataclass
class Mix:
    """Pre-built requests; ``cycle`` lists one round of (rpc, request, operations)."""

    cycle: list[tuple[str, Any, int]] = field(default_factory=list)


def build_mix(batch: int, seed: int = 7) -> Mix:
    rng = random.Random(seed)
    mix = Mix()
    plays: list[tuple[str, list[int]]] = []
    hands: list[tuple[str, list[int]]] = []
    for variant in VARIANTS:
        for _ in range(4):
            for hand in deal(variant, rng):
                hands.append((variant, hand))
                listing = legal_plays(hand, variant, limit=400)
                plays.extend((variant, list(p.cards)) for p in rng.sample(
                    list(listing), min(40, len(listing))))
    replays = [(v, json.dumps(generate_replay(v, seed=s))) for v in VARIANTS for s in range(3)]
    # BatchClassify: baibian plays packed as codes (plus a few invalid ones).
    pool = [p for v, p in plays if v == "baibian"] + [[21, 33], [75, 70], [5, 10]]
    batches = []
    for _ in range(8):
        chosen = [rng.choice(pool) for _ in range(batch)]
        batches.append(S.BatchClassifyRequest(
            rule_set=RuleSet(id="baibian"), codes=bytes(c for p in chosen for c in p),
            lengths=[len(p) for p in chosen]))
    for i in range(8):
        mix.cycle.append(("BatchClassify", batches[i], batch))
        for _ in range(6):
            v, p = rng.choice(plays)
            mix.cycle.append(("ClassifyPlay", S.ClassifyPlayRequest(
                rule_set=RuleSet(id=v), play=cards_pb2.Cards(cards_text=" ".join(format_cards(p)))), 1))
        for _ in range(4):
            v, a = rng.choice(plays)
            b = rng.choice([p for w, p in plays if w == v])
            mix.cycle.append(("ComparePlays", S.ComparePlaysRequest(
                rule_set=RuleSet(id=v), current=cards_pb2.Cards(cards=a), play=cards_pb2.Cards(cards=b)), 1))
        for _ in range(2):
            v, h = rng.choice(hands)
            to_beat = rng.choice([p for w, p in plays if w == v]) if rng.random() < 0.5 else []
            mix.cycle.append(("EnumerateLegalPlays", S.EnumerateLegalPlaysRequest(
                rule_set=RuleSet(id=v), hand=cards_pb2.Cards(cards=h), to_beat=cards_pb2.Cards(cards=to_beat),
                page_size=200, include_counts=rng.random() < 0.3), 1))
        v = rng.choice(("baibian", "bianfeng", "qianbian"))
        bombs = [scoring_pb2.BombPlay(seat=rng.randrange(4), cards=cards_pb2.Cards(
            cards_text=rng.choice(("7777", "88888 BJ", "JJJJJJ"))))
            for _ in range(rng.randrange(3))]
        mix.cycle.append(("ScoreRound", S.ScoreRoundRequest(rule_set=RuleSet(id=v), summary=scoring_pb2.RoundSummary(
            finish_order=rng.choice(([0, 2], [1, 0, 3], [2, 1, 3, 0][:3])), bombs=bombs)), 1))
        v, doc = replays[i % len(replays)]
        mix.cycle.append(("ScoreRound", S.ScoreRoundRequest(replay_json=doc), 1))
    parse_cards("7S")   # the core is importable and consistent with the requests
    return mix


# ----------------------------------------------------------------------------- the server

class Server:
    """``python -m shuangkou.service serve`` on 127.0.0.1, any free port; its RSS from /proc."""

    def __init__(self, threads: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--http-port", "0", "--port", "0",
             "--metrics-port", "0", "--threads", str(threads), "--log-level", "INFO"],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = 0
        self.log: list[str] = []
        ready = threading.Event()

        def read() -> None:
            assert self.proc.stderr is not None
            for line in self.proc.stderr:
                self.log.append(line)
                m = LISTEN.search(line)
                if m and not self.port:
                    self.port = int(m.group(1))
                    ready.set()
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(60) or not self.port:
            self.stop()
            raise RuntimeError("server did not start:\n" + "".join(self.log))

    def rss_mib(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


# ----------------------------------------------------------------------------- load

@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    rpcs: int = 0
    ops: int = 0

    def all_latencies(self) -> list[float]:
        return [x for xs in self.latencies.values() for x in xs]


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


@dataclass
class Throttle:
    """How many of the workers may send; the soak lowers it when the recent p99 nears the
    target and raises it again when there is room (the machine is shared and noisy)."""

    active: int
    limit: int
    target: float = float("inf")
    window: list[float] = field(default_factory=list)
    history: list[int] = field(default_factory=list)

    def adjust(self) -> None:
        if len(self.window) >= 50:
            p99 = pct(self.window, 0.99)
            if p99 > 0.8 * self.target and self.active > 1:
                self.active = max(1, self.active * 3 // 4)
            elif p99 < 0.5 * self.target and self.active < self.limit:
                self.active += 1
        self.window = []
        self.history.append(self.active)


async def run_load(port: int, mix: Mix, concurrency: int, seconds: float, max_ops: int,
                   channels: int, on_tick: Any = None, throttle: Throttle | None = None
                   ) -> Tally:
    """``concurrency`` workers, each looping over the mix from its own offset, until the time
    or the operation budget runs out (only ``throttle.active`` of them send at a time)."""
    tally = Tally()
    throttle = throttle or Throttle(concurrency, concurrency)
    chans = [grpc.aio.insecure_channel(f"127.0.0.1:{port}") for _ in range(channels)]
    stubs = [service_pb2_grpc.ShuangkouServiceStub(c) for c in chans]
    deadline = time.monotonic() + seconds
    cycle = mix.cycle

    async def worker(w: int) -> None:
        stub = stubs[w % len(stubs)]
        i = (w * 7919) % len(cycle)
        while time.monotonic() < deadline and tally.ops < max_ops:
            if w >= throttle.active:
                await asyncio.sleep(0.05)
                continue
            rpc, request, ops = cycle[i]
            i = (i + 1) % len(cycle)
            started = time.perf_counter()
            try:
                await getattr(stub, rpc)(request, timeout=10)
            except grpc.aio.AioRpcError as exc:
                key = f"{rpc}:{exc.code().name}"
                tally.errors[key] = tally.errors.get(key, 0) + 1
            elapsed = time.perf_counter() - started
            tally.latencies.setdefault(rpc, []).append(elapsed)
            throttle.window.append(elapsed)
            tally.rpcs += 1
            tally.ops += ops

    async def ticker() -> None:
        n = 0
        while time.monotonic() < deadline and tally.ops < max_ops:
            await asyncio.sleep(1.0)
            n += 1
            if n % 5 == 0:
                throttle.adjust()
            if on_tick:
                on_tick(tally)

    await asyncio.gather(*(worker(w) for w in range(concurrency)), ticker())
    for c in chans:
        await c.close()
    return tally


def calibrate(port: int, mix: Mix, levels: list[int], seconds: float, target: float,
              channels: int) -> tuple[int, list[dict[str, float]]]:
    """The concurrency with the best throughput among the levels whose p99 stays under 60 %
    of the target (headroom for a sustained run on a shared machine)."""
    rows = []
    best, best_rate = levels[0], 0.0
    for level in levels:
        t0 = time.monotonic()
        tally = asyncio.run(run_load(port, mix, level, seconds, 10**12, channels))
        elapsed = time.monotonic() - t0
        lat = tally.all_latencies()
        row = {"concurrency": level, "rpc_s": tally.rpcs / elapsed, "ops_s": tally.ops / elapsed,
               "p50_ms": pct(lat, 0.5) * 1e3, "p99_ms": pct(lat, 0.99) * 1e3,
               "errors": sum(tally.errors.values())}
        rows.append(row)
        print(f"  calibrate c={level:3d}: {row['rpc_s']:8.0f} RPC/s {row['ops_s']:9.0f} ops/s "
              f"p50 {row['p50_ms']:6.2f} ms p99 {row['p99_ms']:6.2f} ms errors {row['errors']}",
              flush=True)
        if row["p99_ms"] >= target or row["errors"]:
            break
        if row["p99_ms"] < 0.6 * target and row["rpc_s"] > best_rate:
            best, best_rate = level, row["rpc_s"]
    return best, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=180.0, help="soak duration (bound)")
    ap.add_argument("--max-ops", type=int, default=3_000_000, help="operation budget (bound)")
    ap.add_argument("--batch", type=int, default=1000, help="plays per BatchClassify")
    ap.add_argument("--target-p99-ms", type=float, default=50.0)
    ap.add_argument("--levels", default="1,2,4,8,16,32", help="concurrency levels to try")
    ap.add_argument("--calibrate-seconds", type=float, default=6.0)
    ap.add_argument("--channels", type=int, default=4, help="client channels (connections)")
    ap.add_argument("--threads", type=int, default=16, help="server RPC threads")
    ap.add_argument("--warmup", type=float, default=0.2,
                    help="fraction of the soak before the RSS baseline is taken")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)

    print("building requests ...", flush=True)
    mix = build_mix(args.batch)
    print(f"  {len(mix.cycle)} requests per cycle, {sum(o for *_, o in mix.cycle)} operations")
    server = Server(args.threads)
    try:
        print(f"server pid {server.proc.pid} on 127.0.0.1:{server.port}, RSS "
              f"{server.rss_mib():.1f} MiB", flush=True)
        levels = [int(x) for x in args.levels.split(",")]
        best, rows = calibrate(server.port, mix, levels, args.calibrate_seconds,
                               args.target_p99_ms, args.channels)
        print(f"soak at concurrency {best} for up to {args.seconds:g} s / {args.max_ops} ops",
              flush=True)
        samples: list[tuple[float, int, float]] = []
        start = time.monotonic()
        last_print = [start]

        def tick(tally: Tally) -> None:
            now = time.monotonic()
            samples.append((now - start, tally.ops, server.rss_mib()))
            if now - last_print[0] >= 15:
                last_print[0] = now
                print(f"  t={now - start:5.0f}s ops={tally.ops:9d} rpcs={tally.rpcs:8d} "
                      f"RSS {samples[-1][2]:.1f} MiB in flight {throttle.active}", flush=True)

        throttle = Throttle(best, max(levels), args.target_p99_ms / 1e3)
        tally = asyncio.run(run_load(server.port, mix, max(levels), args.seconds, args.max_ops,
                                     args.channels, tick, throttle))
        elapsed = time.monotonic() - start
        samples.append((elapsed, tally.ops, server.rss_mib()))
    finally:
        server.stop()
    lat = tally.all_latencies()
    warm = [s for s in samples if s[0] >= args.warmup * elapsed]
    base = warm[0][2] if warm else samples[0][2]
    peak_after = max(s[2] for s in warm) if warm else base
    final = samples[-1][2]
    figures = {
        "concurrency": best, "concurrency_range": [min(throttle.history or [best]),
                                                   max(throttle.history or [best])],
        "seconds": round(elapsed, 1), "rpcs": tally.rpcs, "ops": tally.ops,
        "rpc_per_s": round(tally.rpcs / elapsed, 1), "ops_per_s": round(tally.ops / elapsed, 1),
        "p50_ms": round(pct(lat, 0.5) * 1e3, 2), "p99_ms": round(pct(lat, 0.99) * 1e3, 2),
        "p99_ms_by_rpc": {k: round(pct(v, 0.99) * 1e3, 2) for k, v in tally.latencies.items()},
        "rpcs_by_rpc": {k: len(v) for k, v in tally.latencies.items()},
        "errors": sum(tally.errors.values()), "errors_by_kind": tally.errors,
        "rss_start_mib": round(samples[0][2], 1), "rss_after_warmup_mib": round(base, 1),
        "rss_final_mib": round(final, 1), "rss_peak_after_warmup_mib": round(peak_after, 1),
        "rss_growth_pct": round(100 * (final - base) / base, 2),
        "rss_peak_growth_pct": round(100 * (peak_after - base) / base, 2),
        "calibration": rows, "batch": args.batch, "channels": args.channels,
        "cpu_count": os.cpu_count(),
    }
    print("\nsoak figures")
    for key in ("concurrency", "concurrency_range", "seconds", "rpcs", "ops", "rpc_per_s", "ops_per_s", "p50_ms",
                "p99_ms", "errors", "rss_after_warmup_mib", "rss_final_mib", "rss_growth_pct",
                "rss_peak_growth_pct"):
        print(f"  {key:24s} {figures[key]}")
    print(f"  {'p99_ms_by_rpc':24s} {figures['p99_ms_by_rpc']}")
    print(f"  {'median RPC latency':24s} {statistics.median(lat) * 1e3:.2f} ms")
    ok = figures["errors"] == 0 and figures["rss_growth_pct"] < 5 and figures["p99_ms"] < \
        args.target_p99_ms
    print(f"  verdict: {'PASS' if ok else 'FAIL'} (errors 0, RSS growth < 5 %, p99 < "
          f"{args.target_p99_ms:g} ms)")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
