"""Freshness and identity of a round's state (issue 33, item 5): the state carries its round
id, and ApplyAction / SuggestAction refuse, against the caller's ``precondition``, an earlier
state of the round (STALE_STATE) or another round's (OTHER_ROUND) — on a real
``shuangkou serve`` with state keys, over gRPC and over HTTP (the Connect protocol's JSON),
where the seal alone accepts both (docs/rounds.md "Freshness and identity")."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from grpc_helpers import TIMEOUT, ServerProcess, rich_error

from shuangkou import core
from shuangkou.core.round import ROUND_ID_BYTES
from shuangkou.core.shuffle import commitment
from shuangkou.v1 import cards_pb2, rounds_pb2, rounds_pb2_grpc, scoring_pb2, variants_pb2

PLAY = scoring_pb2.ACTION_TYPE_PLAY
HANDS = ("3S 3H 7777", "4S 9S", "5S 5H", "6S 9H")
BAIBIAN = variants_pb2.RuleSet(id="baibian")


def _deal() -> rounds_pb2.StartRoundRequest:
    return rounds_pb2.StartRoundRequest(rule_set=BAIBIAN, leader=0, partial_deal=True,
                                        hands=[cards_pb2.Cards(cards_text=h) for h in HANDS])


def _play(text: str) -> rounds_pb2.RoundAction:
    return rounds_pb2.RoundAction(seat=0, type=PLAY, cards=cards_pb2.Cards(cards_text=text))


def _expect(round_id: bytes, actions: int | None) -> rounds_pb2.StatePrecondition:
    want = rounds_pb2.StatePrecondition(round_id=round_id)
    if actions is not None:
        want.actions_applied = actions
    return want


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    """One ``shuangkou serve`` sealing its states (a key file as a Secret mounts one)."""
    keys = tmp_path_factory.mktemp("keys")
    (keys / "k1").write_bytes(b"k" * 44 + b"\n")
    server = ServerProcess("--port", "0", "--metrics-port", "0",
                           env={"SHUANGKOU_STATE_KEYS": str(keys)})
    try:
        server.wait_serving()
        yield server
    finally:
        assert server.stop() == 0


@pytest.fixture(scope="module")
def stub(sealed: ServerProcess) -> Iterator[rounds_pb2_grpc.RoundServiceStub]:
    with grpc.insecure_channel(f"127.0.0.1:{sealed.port}") as channel:
        yield rounds_pb2_grpc.RoundServiceStub(channel)


def _apply(stub: Any, state: bytes, action: rounds_pb2.RoundAction,
           want: rounds_pb2.StatePrecondition | None = None) -> rounds_pb2.ApplyActionResponse:
    request = rounds_pb2.ApplyActionRequest(rule_set=BAIBIAN, state=state, action=action)
    if want is not None:
        request.precondition.CopyFrom(want)
    return stub.ApplyAction(request, timeout=TIMEOUT)


def _refusal(call: Any) -> tuple[grpc.StatusCode, str, str]:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    err = rich_error(caught.value)
    return err.code, err.reason, err.message


def test_the_round_id_is_fixed_at_the_deal_and_shown_in_every_view(stub: Any) -> None:
    x = stub.StartRound(_deal(), timeout=TIMEOUT).state
    y = stub.StartRound(_deal(), timeout=TIMEOUT).state
    assert len(x.view.round_id) == ROUND_ID_BYTES and x.view.round_id != y.view.round_id
    done = _apply(stub, x.data, _play("7777"))
    assert done.state.view.round_id == x.view.round_id
    seed = bytes(range(32))
    seeded = stub.StartRound(rounds_pb2.StartRoundRequest(rule_set=BAIBIAN, seed=seed),
                             timeout=TIMEOUT).state
    assert seeded.view.round_id == commitment(seed)[:ROUND_ID_BYTES]


def test_a_stale_or_swapped_sealed_state_is_refused_over_grpc(stub: Any) -> None:
    """The issue's two attacks, each accepted by the seal alone and refused with the
    precondition; the state the game server keeps goes on."""
    x0 = stub.StartRound(_deal(), timeout=TIMEOUT).state
    y0 = stub.StartRound(_deal(), timeout=TIMEOUT).state
    x_id = x0.view.round_id
    x1 = _apply(stub, x0.data, _play("7777"), _expect(x_id, 0)).state
    assert x1.view.actions_applied == 1
    # the seal alone: the earlier state branches the round, table Y's state plays for X
    assert _apply(stub, x0.data, _play("3S 3H")).state.view.actions_applied == 1
    assert _apply(stub, y0.data, _play("3S 3H")).state.view.round_id == y0.view.round_id
    # with the precondition the table keeps (X's id, 1 action applied): both refused
    code, reason, message = _refusal(lambda: _apply(stub, x0.data, _play("3S 3H"),
                                                    _expect(x_id, 1)))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "STALE_STATE")
    assert "after 0 actions, not after 1" in message
    code, reason, message = _refusal(lambda: _apply(stub, y0.data, _play("3S 3H"),
                                                    _expect(x_id, 0)))
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "OTHER_ROUND")
    assert x_id.hex() in message and y0.view.round_id.hex() in message
    # each part alone, and SuggestAction alike
    assert _refusal(lambda: _apply(stub, y0.data, _play("3S 3H"), _expect(x_id, None)))[1] \
        == "OTHER_ROUND"
    assert _refusal(lambda: _apply(stub, x0.data, _play("3S 3H"), _expect(b"", 1)))[1] \
        == "STALE_STATE"
    hint = rounds_pb2.SuggestActionRequest(rule_set=BAIBIAN, state=x0.data,
                                           precondition=_expect(x_id, 1))
    assert _refusal(lambda: stub.SuggestAction(hint, timeout=TIMEOUT))[1] == "STALE_STATE"
    hint.state = x1.data
    assert stub.SuggestAction(hint, timeout=TIMEOUT).action.seat == x1.view.turn
    # the kept state with the kept precondition goes on
    assert _apply(stub, x1.data, rounds_pb2.RoundAction(seat=1, type=scoring_pb2.
                                                        ACTION_TYPE_PASS),
                  _expect(x_id, 1)).state.view.actions_applied == 2
    # a round id that is not one is a bad request, not a mismatch
    code, reason, _ = _refusal(lambda: _apply(stub, x1.data, _play("3S 3H"),
                                              _expect(b"short", 1)))
    assert code == grpc.StatusCode.INVALID_ARGUMENT


def _connect(server: ServerProcess, method: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.http_port}/shuangkou.v1.RoundService/{method}",
        data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_a_stale_or_swapped_sealed_state_is_refused_over_http(sealed: ServerProcess) -> None:
    assert sealed.http_port
    deal = {"rule_set": {"id": "baibian"}, "partial_deal": True, "leader": 0,
            "hands": [{"cards_text": h} for h in HANDS]}
    status, x0 = _connect(sealed, "StartRound", deal)
    assert status == 200
    _, y0 = _connect(sealed, "StartRound", deal)
    x_id = x0["state"]["view"]["roundId"]
    assert len(base64.b64decode(x_id)) == ROUND_ID_BYTES
    assert x_id != y0["state"]["view"]["roundId"]

    def move(state: Any, expected: int, method: str = "ApplyAction") -> tuple[int, Any]:
        body = {"rule_set": {"id": "baibian"}, "state": state["state"]["data"],
                "precondition": {"round_id": x_id, "actions_applied": expected}}
        if method == "ApplyAction":
            body["action"] = {"seat": 0, "type": "ACTION_TYPE_PLAY",
                              "cards": {"cards_text": "7777"}}
        return _connect(sealed, method, body)

    status, x1 = move(x0, 0)
    assert status == 200 and x1["state"]["view"]["actionsApplied"] == 1
    for state, expected, method, reason in ((x0, 1, "ApplyAction", "STALE_STATE"),
                                            (y0, 0, "ApplyAction", "OTHER_ROUND"),
                                            (x0, 1, "SuggestAction", "STALE_STATE"),
                                            (y0, 0, "SuggestAction", "OTHER_ROUND")):
        status, error = move(state, expected, method)
        assert status == 400 and error["code"] == "failed_precondition", (method, error)
        assert error["details"][0]["debug"]["reason"] == reason, error
    assert move(x1, 1, "SuggestAction")[0] == 200


def test_the_round_id_in_process_and_in_the_state_format(tmp_path: Path) -> None:
    r = core.Round.deal("baibian", list(HANDS), 0, partial_deal=True)
    again = core.Round.deal("baibian", list(HANDS), 0, partial_deal=True)
    assert r.round_id != again.round_id and len(r.round_id) == ROUND_ID_BYTES
    chosen = core.Round.deal("baibian", list(HANDS), 0, partial_deal=True,
                             round_id=bytes(range(16)))
    data = chosen.to_bytes()
    assert data.startswith(b"SKR4") and data.endswith(bytes(range(16)))
    loaded = core.Round.from_bytes(data, "baibian")
    assert loaded.round_id == bytes(range(16)) and loaded.copy().round_id == bytes(range(16))
    _ = loaded.play(0, "7777")
    assert core.Round.from_bytes(loaded.to_bytes(), "baibian").round_id == bytes(range(16))
    with pytest.raises(core.ShuangkouError) as bad:
        core.Round.deal("baibian", list(HANDS), 0, partial_deal=True, round_id=b"short")
    assert bad.value.field == "round_id"
    # a state of the format before (SKR3: no round id) is refused, naming the size and prefix
    old = b"SKR3" + data[4:-ROUND_ID_BYTES]
    with pytest.raises(core.ShuangkouError) as refused:
        core.Round.from_bytes(old, "baibian")
    assert f"({len(data)} bytes starting b'SKR4')" in str(refused.value)
    seed = b"table 7, round 12: a 32-byte key"
    assert core.Round.deal_seeded("baibian", seed).round_id == commitment(seed)[:16]


def test_a_remote_table_sends_the_round_and_count_it_keeps(sealed: ServerProcess) -> None:
    """``shuangkou play --server``'s table keeps what a game server keeps and sends it with
    every call: its own state goes on; an earlier state, or another table's, put in its
    place is refused."""
    from shuangkou.core.shuffle import deal_from_seed
    from shuangkou.service.play.tables import Deal, Move, Refused, RemoteTable

    dealt = deal_from_seed("baibian", bytes(range(16)))
    deal = Deal("baibian", tuple(tuple(h) for h in dealt.hands), dealt.leader, dealt.revealed)
    table, other = (RemoteTable(f"127.0.0.1:{sealed.port}", "baibian") for _ in range(2))
    try:
        seen = table.start(deal)
        other.start(deal)
        assert len(table.round_id) == ROUND_ID_BYTES and table.round_id != other.round_id
        first = table.state
        hint = table.suggest(1)
        _, seen = table.apply(hint.move)
        assert table.actions_applied == 1 and seen.turn is not None
        table.state = first                                 # an earlier state of the round
        with pytest.raises(Refused, match="after 0 actions, not after 1"):
            table.suggest(1)
        table.state = other.state                           # another table's, same count
        table.actions_applied = 0
        with pytest.raises(Refused, match=other.round_id.hex()):
            table.apply(Move(seen.turn, "pass"))
    finally:
        table.channel.close()
        other.channel.close()
