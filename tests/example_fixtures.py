"""What the tests of the example clients in other languages share (examples/node, java, go):
a server on a loopback port, the table runners' comparison with ScoreRound, and the checks of
the Java and Go clients, which print the same document. Registered for the whole suite by
``pytest_plugins`` in conftest.py.

Every runner prints its settlement as proto3 JSON (Node.js with numbers for 64-bit integers,
Java and Go with strings, Go with ``null`` for unset fields); it is read back into a
``RoundResult`` with ``json_format.ParseDict``, so the comparison is message against message.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_helpers import TIMEOUT, ServerProcess, free_port

from shuangkou import core
from shuangkou.v1 import (
    cards_pb2,
    readings_pb2,
    scoring_pb2,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

# (variant, seed, stake): every built-in variant, one table each.
TABLE_CASES = [
    ("baibian", 1, 1), ("fengkuang", 2, 5), ("fengkuang_crazy", 5, 3), ("bianfeng", 3, 1),
    ("bianfeng_lishui", 4, 2), ("qianbian", 6, 1), ("huopin", 7, 1),
]


@contextlib.contextmanager
def loopback_server() -> Iterator[str]:
    """`shuangkou serve` on a free loopback port, no metrics endpoint; SIGTERM at the end."""
    process = ServerProcess("--port", "0", "--metrics-port", "0", "--workers", "1",
                            "--grace", "2")
    try:
        process.wait_serving()
        yield f"127.0.0.1:{process.port}"
    finally:
        process.stop(15)


@pytest.fixture(scope="module")
def examples_server() -> Iterator[str]:
    with loopback_server() as address:
        yield address


# ------------------------------------------------------------------------- table runners

def as_replay(table: dict[str, Any]) -> scoring_pb2.Replay:
    """A table runner's deal and actions as a replay message for ScoreRound."""
    replay = scoring_pb2.Replay(
        hands=[cards_pb2.Cards(cards_text=" ".join(h)) for h in table["hands"]],
        leader=table["leader"], stake=table["stake"])
    if "revealed" in table:
        replay.revealed = core.parse_cards(table["revealed"])[0]
    for team in table.get("teams", []):
        replay.teams.add(seats=team)
    for a in table["actions"]:
        action = replay.actions.add(seat=a["seat"], type=scoring_pb2.ActionType.Value(a["type"]))
        if "cards" in a:
            action.cards.cards_text = " ".join(a["cards"])
        if "declaration" in a:
            json_format.ParseDict(a["declaration"], action.declaration)
    return replay


def score_replay(address: str, variant: str,
                 replay: scoring_pb2.Replay) -> scoring_pb2.RoundResult:
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        return stub.ScoreRound(service_pb2.ScoreRoundRequest(
            rule_set=variants_pb2.RuleSet(id=variant), replay=replay), timeout=TIMEOUT).result


def assert_settles_like_score_round(address: str, table: dict[str, Any]) -> None:
    """The settlement a table printed is the RoundResult ScoreRound gives for its deal and
    actions as a replay, field for field; the replay-only fields (hand_at, action_count,
    each seat's dealt_seat) are checked against the table's own record instead."""
    want = score_replay(address, table["variant"], as_replay(table))
    assert list(want.hand_at) == table["handAt"]
    assert want.action_count == len(table["actions"])
    assert [s.dealt_seat for s in want.seats] == list(want.hand_at)
    want.ClearField("hand_at")
    want.ClearField("action_count")
    for seat in want.seats:
        seat.ClearField("dealt_seat")
    got = json_format.ParseDict(table["result"], scoring_pb2.RoundResult())
    assert json_format.MessageToDict(got) == json_format.MessageToDict(want)
    assert got == want
    assert got.stake == table["stake"]


# ------------------------------------------------------------------- Java and Go clients

Run = Callable[..., "tuple[int, dict[str, Any]]"]

STEPS = {   # step -> (RPC, request type, response type)
    "classify": ("ClassifyPlay", service_pb2.ClassifyPlayRequest,
                 service_pb2.ClassifyPlayResponse),
    "compare": ("ComparePlays", service_pb2.ComparePlaysRequest,
                service_pb2.ComparePlaysResponse),
    "enumerate": ("EnumerateLegalPlays", service_pb2.EnumerateLegalPlaysRequest,
                  service_pb2.EnumerateLegalPlaysResponse),
    "score": ("ScoreRound", service_pb2.ScoreRoundRequest, service_pb2.ScoreRoundResponse),
}


def run_example(example: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`bash run.sh ARGS` in an example's folder (built: the stamp makes it a no-op)."""
    return subprocess.run(["bash", "run.sh", *args], cwd=example, capture_output=True,
                          text=True, timeout=180)


def build_example(example: Path) -> Path:
    """`bash run.sh build`, from the Debian packages the test set-up installs: a missing one
    fails here, loudly (scripts/setup-env.sh installs them)."""
    done = subprocess.run(["bash", "run.sh", "build"], cwd=example, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return example / "build"


def parsed(out: dict[str, Any], step: str, part: str) -> Any:
    """One step's request or response read back into its message."""
    _, request_type, response_type = STEPS[step]
    message = (request_type if part == "request" else response_type)()
    assert part in out[step], f"{step}: {out[step].get('error')}"
    return json_format.ParseDict(out[step][part], message)


def ask(address: str, step: str, request: Message) -> Message:
    """The same request from Python: the oracle the clients' answers are compared with."""
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.ShuangkouServiceStub(channel)
        response: Message = getattr(stub, STEPS[step][0])(request, timeout=TIMEOUT)
        return response


class ClientChecks:
    """Tests of a client that prints {step: {request, response | error}} (Java, Go), run as
    `run.sh client ARGS` in the folder ``example``. A subclass named Test… sets ``example``;
    its module provides the fixture ``built`` (the example built once)."""

    example: Path

    @pytest.fixture
    def run(self, built: Path) -> Run:
        def run(*args: str) -> tuple[int, dict[str, Any]]:
            """Exit status and JSON output (exit 1 exactly when a step failed)."""
            done = run_example(self.example, "client", *args)
            assert done.stdout, f"exit {done.returncode}, no output\n{done.stderr}"
            out = json.loads(done.stdout)
            failed = any("error" in out[step] for step in STEPS)
            assert done.returncode == (1 if failed else 0), done.stderr
            return done.returncode, out
        return run

    def test_every_answer_is_the_servers(self, run: Run, examples_server: str) -> None:
        """Each step's printed response, read back, is the response Python gets for the
        printed request: every field survives the other language's stubs and JSON."""
        status, out = run(examples_server)
        assert status == 0 and out["address"] == examples_server
        assert out["variant"] == "baibian"
        for step in STEPS:
            request = parsed(out, step, "request")
            assert parsed(out, step, "response") == ask(examples_server, step, request), step

    def test_the_default_examples(self, run: Run, examples_server: str) -> None:
        _, out = run(examples_server)
        # §7 seed example: 7777+BJ reads as 77777, a 5-bomb (star 5) of sevens (position 4).
        reading = parsed(out, "classify", "response").reading
        assert (reading.kind, reading.card_count, reading.star, reading.top) == (
            readings_pb2.KIND_BOMB, 5, 5, 4)
        assert list(reading.wilds) == [4] and "77777" in reading.text
        # §8: a 5-bomb beats the 4-bomb 8888.
        compare = parsed(out, "compare", "response")
        assert compare.beats and compare.current.star == 4 and compare.play.star == 5
        # §10: seats 0 and 2 finish first (双扣), seat 0 played 7777777: M = 8, finals
        # 4*8+12, -4*8-4, 4*8-4, -4*8-4.
        result = parsed(out, "score", "response").result
        assert result.kind == scoring_pb2.WIN_KIND_DOUBLE
        assert [s.final for s in result.seats] == [44, -36, 28, -36] and result.total == 0

    def test_enumerate_following_a_pair(self, run: Run, examples_server: str) -> None:
        # Following a pair of sixes with 7 7 8: the pair of sevens is the only legal play.
        _, out = run(examples_server, "--hand", "7 7 8", "--to-beat", "6 6")
        page = parsed(out, "enumerate", "response")
        (play,) = page.plays
        assert (play.reading.kind, play.reading.top) == (readings_pb2.KIND_PAIR, 4)
        assert page.total == 1 and not page.next_page_token and not page.HasField("best_bomb")
        assert out["enumerate"]["pagesRead"] == 1

    def test_pages_concatenate_to_the_whole_list(self, run: Run, examples_server: str) -> None:
        """Following next_page_token page by page (AIP-158) reads every legal play, in
        order: the same list as one page large enough to hold them all."""
        hand = "3 4 5 6 7 7 7 7 8 9 BJ"
        _, whole = run(examples_server, "--hand", hand, "--page-size", "1000")
        _, paged = run(examples_server, "--hand", hand, "--page-size", "7", "--pages", "1000")
        want = parsed(whole, "enumerate", "response")
        got = parsed(paged, "enumerate", "response")
        assert not want.next_page_token and not got.next_page_token
        assert list(got.plays) == list(want.plays)
        assert paged["enumerate"]["pagesRead"] == -(-len(want.plays) // 7) > 1
        _, first = run(examples_server, "--hand", hand, "--page-size", "5")
        page = parsed(first, "enumerate", "response")
        assert len(page.plays) == 5 and page.next_page_token
        assert page.total == len(want.plays)
        # The strongest bomb in the hand: 7777 with the wild BJ, a 5-bomb.
        assert (page.best_bomb.kind, page.best_bomb.card_count) == (readings_pb2.KIND_BOMB, 5)

    def test_a_bad_play_is_reported_by_reason_and_the_rest_goes_on(
            self, run: Run, examples_server: str) -> None:
        status, out = run(examples_server, "--play", "7 8")
        assert status == 1
        for step in ("classify", "compare"):
            error = out[step]["error"]
            assert (error["code"], error["reason"], error["field"]) == (
                "INVALID_ARGUMENT", "INVALID_PLAY", "play.cards_text"), step
            assert error["message"]
        assert "response" in out["enumerate"] and "response" in out["score"]

    def test_unreachable_server_is_unavailable(self, run: Run) -> None:
        status, out = run(f"127.0.0.1:{free_port()}", "--deadline-ms", "2000")
        assert status == 1
        assert {out[step]["error"]["code"] for step in STEPS} <= {
            "UNAVAILABLE", "DEADLINE_EXCEEDED"}

    def test_bad_arguments_exit_2(self, built: Path) -> None:
        done = run_example(self.example, "client", "--page-size", "-3")
        assert done.returncode == 2 and "--page-size" in done.stderr and "usage" in done.stderr


class TableChecks:
    """Tests of a table runner (Java, Go), run as `run.sh table ARGS` in the folder
    ``example``; the module provides the fixture ``built``."""

    example: Path

    def table(self, address: str, *args: str) -> dict[str, Any]:
        done = run_example(self.example, "table", address, *args)
        assert done.returncode == 0, done.stderr
        table: dict[str, Any] = json.loads(done.stdout)
        return table

    @pytest.mark.parametrize(("variant", "seed", "stake"), TABLE_CASES)
    def test_table_settlement_equals_score_round(self, built: Path, examples_server: str,
                                                 variant: str, seed: int, stake: int) -> None:
        """The round asked for, every action with the policy's reason, the move out of turn
        refused as NOT_YOUR_TURN, and the settlement ScoreRound gives for the same deal and
        actions."""
        table = self.table(examples_server, "--variant", variant, "--seed", str(seed),
                           "--stake", str(stake))
        assert (table["variant"], table["seed"], table["stake"]) == (variant, seed, stake)
        assert table["leader"] == seed % 4
        assert table["actions"] and all(a["reason"] for a in table["actions"])
        (refused,) = table["refused"]
        assert refused["reason"] == "NOT_YOUR_TURN" and "turn" in refused["message"]
        assert refused["seat"] != table["actions"][0]["seat"]
        assert refused["cards"][0] in table["hands"][table["handAt"][refused["seat"]]]
        assert_settles_like_score_round(examples_server, table)

    def test_same_seed_same_round(self, built: Path, examples_server: str) -> None:
        first = self.table(examples_server, "--variant", "bianfeng", "--seed", "9")
        again = self.table(examples_server, "--variant", "bianfeng", "--seed", "9")
        assert first["hands"] == again["hands"] and first["actions"] == again["actions"]
        assert first["result"] == again["result"]

    def test_bad_arguments_exit_2(self, built: Path) -> None:
        done = run_example(self.example, "table", "--variant", "nope")
        assert done.returncode == 2 and "usage" in done.stderr
