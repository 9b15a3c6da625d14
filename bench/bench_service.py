"""Unary ClassifyPlay and BatchClassify over gRPC, against a health Check on the same server.

    .venv/bin/python bench/bench_service.py [--seconds 2] [--passes 3] [--against REV]

Each pass starts one ``shuangkou serve --workers 1`` and calls it from one client process
over one channel, sequentially (one call in flight: the rate is the inverse of a round
trip, what a game server waiting on its answer sees). Lines, each for ``--seconds``, the
order rotated per pass (the health Check and the two valid ClassifyPlay lines are measured
side by side, in turns of 0.2 s each turn starting with the next, for their ratios):

* ``health Check``: the transport's own cost, the yardstick;
* ``ClassifyPlay, suited text`` / ``rank runs``: plays of the seeded generator as text
  (``"7S 7H BJ"``; ``"45678 BJ"``), a different play each call;
* ``ClassifyPlay, invalid``: the invalid plays of the mix as suited text (each answered
  INVALID_ARGUMENT with its reason), and its server CPU over a valid play's;
* ``BatchClassify 8,192 plays`` (codes + lengths, the packed form): valid plays; and the
  same count alternating valid and invalid (``half invalid``), in plays per second;
* each ClassifyPlay line over Check (``… / Check``, per pass).

Also the server's CPU (all its threads, /proc) per call for Check and ClassifyPlay, and per
play for BatchClassify (what a batch of invalid plays buys of the server). With
``--against REV`` each pass runs once per build, alternating (bench/baseline.py): the
server and the client are that build's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import baseline

ROOT = Path(__file__).resolve().parents[1]
BATCH = 8_192


def make_payload(n: int, seed: int) -> dict[str, Any]:
    """Valid and invalid baibian plays (codes), from the seeded generator."""
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "bench")]
    from bench_classify import make_mix, runs_text

    core = baseline.core()
    valid, invalid = make_mix("baibian", n, seed)
    return {"valid": valid, "invalid": invalid,
            "text": [" ".join(core.format_cards(p)) for p in valid],
            "invalid text": [" ".join(core.format_cards(p)) for p in invalid],
            "runs": [runs_text(core, p) for p in valid]}


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_server() -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen([sys.executable, "-m", "shuangkou.service", "serve", "--host",
                             "127.0.0.1", "--port", "0", "--http-host", "127.0.0.1", "--http-port", "0",
                             "--metrics-port", "0", "--workers", "1",
                             "--log-level", "INFO"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"on 127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=proc.stderr.read, daemon=True).start()
            return proc, int(m.group(1))
    raise RuntimeError("the server did not start")


def measure(payload: dict[str, Any], seconds: float, rotate: int) -> dict[str, float]:
    import grpc
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    from shuangkou.v1 import cards_pb2, service_pb2, service_pb2_grpc, variants_pb2

    proc, port = start_server()
    try:
        channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[
            ("grpc.max_receive_message_length", 64 << 20)])
        grpc.channel_ready_future(channel).result(timeout=30)
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        health = health_pb2_grpc.HealthStub(channel)
        rule_set = variants_pb2.RuleSet(id="baibian")
        check = health_pb2.HealthCheckRequest()
        classify = {form: [service_pb2.ClassifyPlayRequest(
            rule_set=rule_set, play=cards_pb2.Cards(cards_text=t)) for t in payload[form]]
            for form in ("text", "runs", "invalid text")}
        valid = payload["valid"][:BATCH]
        mixed = [p for pair in zip(payload["valid"], payload["invalid"], strict=True)
                 for p in pair][:BATCH]
        batches = {name: service_pb2.BatchClassifyRequest(
            rule_set=rule_set, codes=bytes(c for p in plays for c in p),
            lengths=[len(p) for p in plays]) for name, plays in (("valid", valid),
                                                                  ("half invalid", mixed))}

        def slice_of(call: Any, requests: list[Any], seconds: float,
                     done: int = 0) -> tuple[int, float, float]:
            """Sequential calls for ``seconds``: (calls, wall s, server CPU s)."""
            n, c0, t0 = 0, cpu_seconds(proc.pid), time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                for r in requests[(done + n) % len(requests):][:50]:
                    call(r, timeout=60)
                    n += 1
            return n, time.perf_counter() - t0, cpu_seconds(proc.pid) - c0

        def timed(call: Any, requests: list[Any]) -> tuple[float, float]:
            """(calls/s, server CPU µs per call) for ``seconds`` of sequential calls."""
            for r in requests[:20]:
                call(r)
            n, dt, cpu = slice_of(call, requests, seconds)
            return n / dt, cpu / n * 1e6

        def side_by_side(runs: list[tuple[Any, list[Any]]]) -> list[tuple[float, float]]:
            """:func:`timed` of each run, in turns of 0.2 s, for ``seconds`` each in all: the
            ratios between them see the same load (a shared machine drifts within seconds)."""
            totals = [[0, 0.0, 0.0] for _ in runs]
            for call, requests in runs:
                for r in requests[:20]:
                    call(r)
            for turn in range(max(1, round(seconds / 0.2))):
                # each turn starts with the next run: none is always the first or the last
                for i in range(turn, turn + len(runs)):
                    (call, requests), total = runs[i % len(runs)], totals[i % len(runs)]
                    n, dt, cpu = slice_of(call, requests, 0.2, int(total[0]))
                    total[0] += n
                    total[1] += dt
                    total[2] += cpu
            return [(n / dt, cpu / n * 1e6) for n, dt, cpu in totals]

        def refused(call: Any) -> Any:
            """``call`` for requests it must refuse: INVALID_ARGUMENT is the answer."""
            def call_refused(request: Any, timeout: float | None = None) -> None:
                try:
                    call(request, timeout=timeout)
                except grpc.RpcError as exc:
                    if exc.code() != grpc.StatusCode.INVALID_ARGUMENT:
                        raise
                else:
                    raise AssertionError("an invalid play was accepted")
            return call_refused

        size = len(valid)
        unary = side_by_side([(health.Check, [check]), (stub.ClassifyPlay, classify["text"]),
                              (stub.ClassifyPlay, classify["runs"])])
        lines = [("health Check", lambda: unary[0]),
                 ("ClassifyPlay, suited text", lambda: unary[1]),
                 ("ClassifyPlay, rank runs", lambda: unary[2]),
                 ("ClassifyPlay, invalid (suited text)",
                  lambda: timed(refused(stub.ClassifyPlay), classify["invalid text"])),
                 (f"BatchClassify {size:,} plays", lambda: timed(stub.BatchClassify,
                                                                 [batches["valid"]])),
                 (f"BatchClassify {size:,} plays, half invalid",
                  lambda: timed(stub.BatchClassify, [batches["half invalid"]]))]
        k = rotate % len(lines)
        out: dict[str, float] = {}
        for name, run in lines[k:] + lines[:k]:
            rate, cpu = run()
            if name.startswith("BatchClassify"):
                out[f"{name} (plays/s)"] = rate * size
                out[f"{name}, server CPU (ns/play)"] = cpu / size * 1e3
            else:
                out[f"{name} (calls/s)"] = rate
                out[f"{name}, server CPU (µs/call)"] = cpu
        for form in ("suited text", "rank runs"):
            out[f"ClassifyPlay, {form} / Check"] = (out[f"ClassifyPlay, {form} (calls/s)"]
                                                    / out["health Check (calls/s)"])
        out["ClassifyPlay, invalid / valid, server CPU"] = (
            out["ClassifyPlay, invalid (suited text), server CPU (µs/call)"]
            / out["ClassifyPlay, suited text, server CPU (µs/call)"])
        channel.close()
        return out
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="per line and pass")
    ap.add_argument("--passes", type=int, default=3, help="servers started per build")
    ap.add_argument("--plays", type=int, default=BATCH, help="distinct plays of each kind")
    ap.add_argument("--seed", type=int, default=1)
    baseline.add_argument(ap)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--rotate", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        payload = json.loads(Path(args.worker).read_text())
        print(json.dumps(measure(payload, args.seconds, random.randrange(100))))
        return
    payload = make_payload(args.plays, args.seed)
    interpreters = baseline.builds(args.against)
    results = baseline.alternate(__file__, ["--seconds", str(args.seconds)], interpreters,
                                 args.passes, payload)
    print(f"one server (--workers 1), one client, sequential calls on one channel; "
          f"{args.seconds:g} s per line, {args.passes} passes per build; medians\n")
    baseline.report(results, "see each line", width=52)


if __name__ == "__main__":
    main()
