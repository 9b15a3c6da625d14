"""The Python client example (examples/python) against a real server on a loopback port."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from grpc_helpers import free_port, running_server

from shuangkou import core

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "python"


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with running_server() as running:
        yield f"127.0.0.1:{running.port}"


def client(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "client.py", *args], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=60)


def test_client_answers_as_the_core(address: str) -> None:
    done = client(address)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    c = core.classify("45678 BJ", "baibian")
    assert lines[0] == f"classify 45678 BJ: {c.primary.describe()}"
    plays = core.legal_plays("33 44 55 66 77 BJ", "baibian", to_beat="55")
    assert lines[2] == f"plays beating 55: {len(plays)}"
    assert [line.strip() for line in lines[3:3 + len(plays)]] == \
        [p.reading.describe() for p in plays]
    result = core.score_round("baibian", [0, 2], [["7777777"], [], [], []])
    assert f"final {list(result.final)}" in lines[-2]
    assert lines[-1].startswith("classify 3S 4: INVALID_ARGUMENT: ")
    assert "[field play.cards_text, reason INVALID_PLAY]" in lines[-1]


def test_client_variant_and_env(address: str) -> None:
    done = subprocess.run([sys.executable, "client.py", "--variant", "fengkuang"],
                          cwd=EXAMPLE, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SHUANGKOU_ADDR": address})
    assert done.returncode == 0, done.stderr
    expected = core.classify("45678 BJ", "fengkuang").primary.describe()
    assert done.stdout.splitlines()[0] == f"classify 45678 BJ: {expected}"


def test_unreachable_server_fails() -> None:
    done = client(f"127.0.0.1:{free_port()}")
    assert done.returncode != 0 and "UNAVAILABLE" in done.stderr


def test_round_plays_a_live_round_to_its_settlement(address: str) -> None:
    """round.py: a seeded deal played to the end by 托管, a refused move handled by its
    reason, the settlement that of the core's round."""
    done = subprocess.run([sys.executable, "round.py", address, "--seed", "test", "--variant",
                           "huopin"], cwd=EXAMPLE, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1].startswith("refused: LEADER_MUST_PLAY: ")
    import hashlib
    r = core.Round.deal_seeded("huopin", hashlib.sha256(b"test").digest())
    while not r.is_over:
        s = core.suggest(r)
        if s.kind == "play":
            r.play(s.seat, s.cards, s.declaration)
        else:
            r.pass_turn(s.seat)
    result = r.result()
    assert lines[-1].endswith(f"final {list(result.final)}"), lines[-1]


def test_round_and_client_fail_in_one_line_when_the_server_is_down() -> None:
    for script in ("round.py", "client.py"):
        done = subprocess.run([sys.executable, script, f"127.0.0.1:{free_port()}"],
                              cwd=EXAMPLE, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and "UNAVAILABLE" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1
