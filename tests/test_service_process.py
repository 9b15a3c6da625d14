"""``shuangkou serve`` as a real process: graceful SIGTERM, --workers, CLI errors."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import socket
import subprocess
import sys
import time

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

from shuangkou.service.server import SERVICE_NAME
from shuangkou.v1 import service_pb2, service_pb2_grpc
from shuangkou.v1.variants_pb2 import RuleSet


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
        wait_workers_up(metrics_port, 2)
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


def wait_workers_up(metrics_port: int, n: int, timeout: float = 60.0) -> str:
    """Poll /metrics until the supervisor reports ``n`` workers answering health checks."""
    deadline = time.monotonic() + timeout
    while True:
        text = scrape(metrics_port)
        if metric_value(text, "shuangkou_workers_up") == n:
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"workers_up never reached {n}:\n{text}")
        time.sleep(0.2)


@pytest.mark.parametrize("sig, reason", [(signal.SIGKILL, "died"), (signal.SIGSTOP, "hung")])
def test_a_dead_or_hung_worker_is_replaced(sig: signal.Signals, reason: str) -> None:
    metrics_port = free_port()
    server = ServerProcess("--workers", "2", "--port", "0", "--metrics-port", str(metrics_port),
                           "--worker-check-interval", "0.5")
    try:
        server.wait_serving()
        pids = re.search(r"with 2 workers \(pids (\d+), (\d+)\)", "".join(server.log))
        assert pids, server.log
        wait_workers_up(metrics_port, 2)
        victim = int(pids.group(1))
        os.kill(victim, sig)
        t0 = time.monotonic()
        deadline = t0 + 30
        while "restarted" not in "".join(server.log):
            assert time.monotonic() < deadline, server.log
            time.sleep(0.1)
        text = wait_workers_up(metrics_port, 2)
        assert metric_value(text, "shuangkou_worker_restarts_total", reason=reason) == 1
        up = set(re.findall(r'shuangkou_worker_up\{pid="(\d+)"\} 1\.0', text))
        assert str(victim) not in up and len(up) == 2
        with pytest.raises(ProcessLookupError):   # the hung one was killed, not left behind
            for _ in range(50):
                os.kill(victim, 0)
                time.sleep(0.1)
        for _ in range(6):             # every connection is answered by a live worker
            with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                          timeout=TIMEOUT)
        assert server.stop() == 0
    finally:
        server.stop()


def test_shutdown_takes_at_most_grace_with_long_work_in_flight() -> None:
    server = ServerProcess("--port", "0", "--metrics-port", "0", "--grace", "1")
    try:
        server.wait_serving()
        house = json.dumps({"id": "house", "extends": "baibian"})
        # Three batches of ~5 s of CPU each (one core at a time under the GIL).
        request = service_pb2.BatchClassifyRequest(rule_set=RuleSet(custom_json=house),
                                                   plays_text=["3456789TJQKA2 34567"] * 100_000)
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = service_pb2_grpc.ShuangkouServiceStub(channel)
            calls = [stub.BatchClassify.future(request, timeout=60) for _ in range(3)]
            time.sleep(1.0)
            t0 = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            assert server.proc.wait(30) == 0, "".join(server.log)[-4000:]
            took = time.monotonic() - t0
            for call in calls:
                with contextlib.suppress(grpc.RpcError):
                    call.result()
        # the grace of 1 s, not the ~15 s of CPU the three batches would take to finish;
        # room for a loaded host
        assert took < 1 + 9, (took, server.log)
    finally:
        server.stop()


def test_metrics_port_clash_names_the_port_and_setting() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--http-port", "0", "--port", "0",
             "--metrics-host", "127.0.0.1", "--metrics-port", str(port)],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2            # trouble running (service/exits.py), not a crash
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    assert f"127.0.0.1:{port}" in lines[0] and "--metrics-port" in lines[0]
    assert "in use" in lines[0]


HOUSE_TOML = """
[variants.club_rules]
extends = "baibian"
escape = "none"

[variants.club_lite]
extends = "club_rules"
"""


def test_house_variants_from_files_are_served_by_id(tmp_path) -> None:
    path = tmp_path / "house.toml"
    path.write_text(HOUSE_TOML)
    server = ServerProcess("--port", "0", "--metrics-port", "0", "--variants", str(path))
    try:
        server.wait_serving()
        assert "house variants club_rules, club_lite" in "".join(server.log)
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            stub = service_pb2_grpc.ShuangkouServiceStub(channel)
            ids = [v.id for v in stub.ListVariants(service_pb2.ListVariantsRequest(),
                                                   timeout=TIMEOUT).variants]
            assert ids[-2:] == ["club_rules", "club_lite"] and "baibian" in ids
            reply = stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
                rule_set=RuleSet(id="club_lite"), play=cards("7777 BJ")), timeout=TIMEOUT)
            assert reply.reading.star == 5
        assert server.stop() == 0
    finally:
        server.stop()


@pytest.mark.parametrize("text, words", [
    ('{"id": "baibian", "extends": "qianbian"}', "may not take the built-in id"),
    ('{"id": "x", "extends": "nowhere"}', "unknown variant 'nowhere'"),
    ('{"id": "x", "extends": "baibian", "joker": 1}', "unknown field 'joker'"),
])
def test_bad_house_variants_refuse_to_start(tmp_path, text: str, words: str) -> None:
    path = tmp_path / "house.json"
    path.write_text(text)
    run = subprocess.run(
        [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--http-port", "0", "--port", "0",
         "--metrics-port", "0", "--variants", str(path)],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert words in run.stderr and str(path) in run.stderr


def test_version_everywhere() -> None:
    from shuangkou.service.version import build_info, version

    run = subprocess.run([sys.executable, "-m", "shuangkou.service", "--version"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == f"shuangkou {version()}"
    metrics_port = free_port()
    server = ServerProcess("--port", "0", "--metrics-port", str(metrics_port))
    try:
        server.wait_serving()
        assert f"version {version()}" in "".join(server.log)
        labels = build_info()
        assert metric_value(scrape(metrics_port), "shuangkou_build_info", **labels) == 1
    finally:
        server.stop()


@pytest.mark.parametrize("workers", ["1", "2"])
def test_second_server_on_a_busy_port_fails(workers: str) -> None:
    """A gRPC port in use is one line, as for the HTTP and metrics ports: the address, the
    system's reason and the setting; status 2 (it cannot run as configured:
    service/exits.py); none of gRPC's own log lines."""
    first = ServerProcess("--port", "0", "--metrics-port", "0")
    try:
        first.wait_serving()
        second = subprocess.run(
            [sys.executable, "-m", "shuangkou.service", "serve", "--host", "127.0.0.1", "--http-port", "0", "--port",
             str(first.port), "--metrics-port", "0", "--workers", workers],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert lines[0].endswith(f"cannot listen on 127.0.0.1:{first.port}: Address already in "
                                 "use (setting port, flag --port)"), lines[0]
    finally:
        first.stop()


def test_http_port_in_use_is_the_same_line() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-m", "shuangkou.service", "serve", "--port", "0", "--metrics-port",
             "0", "--http-port", str(port)], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].endswith(
        f"cannot listen on 127.0.0.1:{port}: Address already in use (setting http_port, flag "
        "--http-port; --no-http disables HTTP)"), run.stderr


@pytest.mark.parametrize("args, code, words", [
    (["--help"], 0, "serve"),
    (["serve", "--help"], 0, "SHUANGKOU_MAX_CARDS"),
    (["score-replays", "--help"], 0, "--server"),
    (["serve", "--port", "http"], 2, "'port' from --port must be an int"),
    (["serve", "--workers", "0"], 2, "'workers'"),
    ([], 2, "serve"),
    (["serve", "--variants"], 2, "--variants"),
    (["serve", "--max-connection-age", "-1"], 2, "'max_connection_age'"),
])
def test_cli_usage(args: list[str], code: int, words: str) -> None:
    run = subprocess.run([sys.executable, "-m", "shuangkou.service", *args], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == code
    assert words in run.stdout + run.stderr
