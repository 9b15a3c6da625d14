"""``shuangkou serve`` as a real process: graceful SIGTERM, --workers, CLI errors."""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import sys

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_helpers import (
    REPLAY,
    ROOT,
    TIMEOUT,
    ServerProcess,
    cards,
    free_port,
    metric_value,
    scrape,
)

from service.gen.shuangkou.v1 import service_pb2, service_pb2_grpc
from service.server import SERVICE_NAME


def test_sigterm_drains_in_flight_stream() -> None:
    server = ServerProcess("--port", "0", "--metrics-port", "0", "--grace", "20")
    try:
        server.wait_serving()
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            watch = health_pb2_grpc.HealthStub(channel).Watch(
                health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=30)
            assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
            requests: queue.Queue[service_pb2.ScoreReplaysRequest | None] = queue.Queue()
            replies = service_pb2_grpc.ShuangkouServiceStub(channel).ScoreReplays(
                iter(requests.get, None), timeout=30)
            request = service_pb2.ScoreReplaysRequest(replay_json=json.dumps(REPLAY))
            for _ in range(2):
                requests.put(request)
            got = [next(replies), next(replies)]          # the stream is now in flight
            server.proc.send_signal(signal.SIGTERM)
            assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
            for _ in range(3):                            # still served during the grace
                requests.put(request)
            requests.put(None)
            got.extend(replies)
            assert [r.index for r in got] == [0, 1, 2, 3, 4]
            assert all(r.WhichOneof("outcome") == "result" for r in got)
        assert server.proc.wait(30) == 0
    finally:
        server.stop()


def test_workers_share_the_port_and_report_metrics() -> None:
    metrics_port = free_port()
    server = ServerProcess("--workers", "2", "--port", "0", "--metrics-port", str(metrics_port))
    try:
        server.wait_serving()
        pids = re.search(r"with 2 workers \(pids (\d+), (\d+)\)", "".join(server.log))
        assert pids, server.log
        calls = 12
        for _ in range(calls):       # a connection per call: the kernel spreads them
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                reply = service_pb2_grpc.ShuangkouServiceStub(channel).ClassifyPlay(
                    service_pb2.ClassifyPlayRequest(play=cards("7777 BJ")), timeout=TIMEOUT)
                assert reply.reading.star == 5
        text = scrape(metrics_port)
        up = set(re.findall(r'shuangkou_worker_up\{pid="(\d+)"\} 1\.0', text))
        assert up == set(pids.groups())
        assert metric_value(text, "grpc_server_handled_total", grpc_method="ClassifyPlay",
                            grpc_code="OK") == calls
        assert metric_value(text, "shuangkou_plays_classified_total", kind="bomb") == calls
        assert server.stop() == 0
    finally:
        server.stop()


def test_second_server_on_a_busy_port_fails() -> None:
    first = ServerProcess("--port", "0", "--metrics-port", "0")
    try:
        first.wait_serving()
        second = subprocess.run(
            [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port",
             str(first.port), "--metrics-port", "0"],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1
        assert "cannot listen" in second.stderr
    finally:
        first.stop()


@pytest.mark.parametrize("args, code, words", [
    (["--help"], 0, "serve"),
    (["serve", "--help"], 0, "SHUANGKOU_MAX_CARDS"),
    (["score-replays", "--help"], 0, "--server"),
    (["serve", "--port", "http"], 2, "'port' from --port must be an int"),
    (["serve", "--workers", "0"], 2, "'workers'"),
    ([], 2, "serve"),
])
def test_cli_usage(args: list[str], code: int, words: str) -> None:
    run = subprocess.run([sys.executable, "-m", "service", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == code
    assert words in run.stdout + run.stderr
