"""Hostile input against a real server on loopback: every row is a request an attacker or a
broken client could send, the status it must get, and the request field its
google.rpc.BadRequest details must name.

The server runs in process on 127.0.0.1 (port 0) with the default limits
(service/defaults.toml: 4 MiB messages, 64 cards, 100,000 plays per batch). After the table
the server must still answer, so no row may wedge it. A row with ``open=True`` is a finding
reported to its owner and not fixed yet (docs/reliability.md, "Findings"): it runs as an
expected failure until the fix lands.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status
from prometheus_client import CollectorRegistry

from shuangkou.core.errors import VariantError
from shuangkou.core.variants import load_variants
from shuangkou.service.config import Config
from shuangkou.service.errors import MAX_MESSAGE_CHARS, decode_status
from shuangkou.service.limits import Limits
from shuangkou.service.metrics import Metrics
from shuangkou.service.server import create_server
from shuangkou.v1 import (
    cards_pb2,
    readings_pb2,
    scoring_pb2,
    service_pb2,
    service_pb2_grpc,
    variants_pb2,
)

S = service_pb2
RS = variants_pb2.RuleSet
C = cards_pb2.Cards
INVALID = grpc.StatusCode.INVALID_ARGUMENT
TIMEOUT = 60.0
BIG = 64 << 20   # the client may send and receive more than the server accepts
CAP = Limits(max_batch=Config().max_batch,
             max_message_bytes=Config().max_message_bytes).batch_cap
OPEN = "open finding reported to the owner (docs/reliability.md)"


@dataclass
class Server:
    stub: service_pb2_grpc.ShuangkouServiceStub
    server: grpc.Server
    port: int


@contextlib.contextmanager
def loopback(**settings: Any) -> Iterator[Server]:
    config = Config(**{"host": "127.0.0.1", "port": 0, "metrics_port": 0, "threads": 4,
                       **settings})
    server, port = create_server(config, metrics=Metrics(CollectorRegistry()))
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=[
        ("grpc.max_send_message_length", BIG), ("grpc.max_receive_message_length", BIG)])
    try:
        yield Server(service_pb2_grpc.ShuangkouServiceStub(channel), server, port)
    finally:
        channel.close()
        server.stop(None)


@pytest.fixture(scope="module")
def srv() -> Iterator[Server]:
    with loopback() as s:
        yield s


def fields_of(exc: grpc.RpcError) -> list[str]:
    status: status_pb2.Status | None = rpc_status.from_call(exc)  # type: ignore[arg-type]
    out = []
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            out.extend(v.field for v in bad.field_violations)
    return out


# ----------------------------------------------------------------------------- requests

def replay_json(**changes: Any) -> str:
    doc: dict[str, Any] = {"variant": "baibian", "hands": ["7S", "8S", "9S", "TS"],
                           "leader": 0, "partial_deal": True,
                           "actions": [{"seat": 0, "play": "7S"}]}
    doc.update(changes)
    return json.dumps(doc)


def variant_json(**fields: Any) -> str:
    return json.dumps({"id": "house", "extends": "baibian", **fields})


def classify(text: str = "77", **kw: Any) -> S.ClassifyPlayRequest:
    return S.ClassifyPlayRequest(play=C(cards_text=text), **kw)


HOSTILE_JSON = [
    ("nested-array", "[" * 5000 + "]" * 5000),
    ("nested-object", '{"a":' * 5000 + "1" + "}" * 5000),
    ("long-integer", '{"id": "house", "extends": "baibian", "decks": ' + "9" * 5000 + "}"),
    ("surrogate-value", '{"id": "\\ud800", "extends": "baibian"}'),
    ("surrogate-key", '{"\\ud800": 1}'),
]
JSON_FIELDS: list[tuple[str, str, Callable[[str], Callable[[], Any]], str]] = [
    ("custom-json", "GetVariant",
     lambda doc: lambda: S.GetVariantRequest(rule_set=RS(custom_json=doc)),
     "rule_set.custom_json"),
    ("replay-json", "ScoreRound",
     lambda doc: lambda: S.ScoreRoundRequest(replay_json=doc), "replay_json"),
]


@dataclass(frozen=True)
class Row:
    id: str
    rpc: str
    request: Callable[[], Any]
    code: grpc.StatusCode | None        # None: the call succeeds
    field: str = ""                     # the field the BadRequest names (exact)
    open: bool = False                  # an open finding: xfail until fixed
    timeout: float = TIMEOUT


ROWS = [
    # --- size: messages, cards, batches
    Row("oversized-message", "ClassifyPlay", lambda: classify("7 " * (3 * 10**6)),
        grpc.StatusCode.RESOURCE_EXHAUSTED),
    Row("million-card-codes", "ClassifyPlay",
        lambda: S.ClassifyPlayRequest(play=C(cards=[21] * 10**6)), INVALID, "play.cards"),
    Row("million-card-hand", "EnumerateLegalPlays",
        lambda: S.EnumerateLegalPlaysRequest(hand=C(cards=[21] * 10**6)), INVALID,
        "hand.cards"),
    Row("long-card-text", "ComparePlays",
        lambda: S.ComparePlaysRequest(current=C(cards_text="77"),
                                      play=C(cards_text="7 " * 100_000)),
        INVALID, "play.cards_text"),
    Row("batch-past-max", "BatchClassify",
        lambda: S.BatchClassifyRequest(plays_text=["7777 BJ"] * 100_001), INVALID,
        "plays_text"),
    Row("batch-lengths-past-max", "BatchClassify",
        lambda: S.BatchClassifyRequest(codes=bytes([21]) * 100_001, lengths=[1] * 100_001),
        INVALID, "lengths"),
    # A batch the server allows is answerable: at the cap (--max-batch lowered to fit the
    # reply in --max-message-bytes), with every reading or every play invalid.
    Row("batch-at-cap-with-readings", "BatchClassify",
        lambda: S.BatchClassifyRequest(plays_text=["7777 BJ"] * CAP, include_readings=True),
        None),
    Row("batch-at-cap-all-invalid", "BatchClassify",
        lambda: S.BatchClassifyRequest(plays_text=["Z" * 400] * CAP), None),
    Row("batch-past-cap", "BatchClassify",
        lambda: S.BatchClassifyRequest(plays_text=["7777 BJ"] * (CAP + 1)), INVALID,
        "plays_text"),
    Row("batch-lengths-lie", "BatchClassify",
        lambda: S.BatchClassifyRequest(codes=bytes([21, 22]), lengths=[5]), INVALID, "lengths"),
    Row("batch-length-past-int32", "BatchClassify",
        lambda: S.BatchClassifyRequest(codes=b"", lengths=[2**32 - 1]), INVALID, "lengths"),
    Row("batch-text-and-codes", "BatchClassify",
        lambda: S.BatchClassifyRequest(codes=b"\x15", lengths=[1], plays_text=["7"]), INVALID,
        "plays_text"),
    # --- cards the deck cannot hold
    Row("duplicate-suited-card", "ClassifyPlay", lambda: classify("7S 7S 7S"), INVALID,
        "play.cards_text"),
    Row("nine-of-a-rank", "EnumerateLegalPlays",
        lambda: S.EnumerateLegalPlaysRequest(hand=C(cards_text="777777777")), INVALID,
        "hand.cards_text"),
    Row("five-big-jokers", "ClassifyPlay",
        lambda: S.ClassifyPlayRequest(play=C(cards=[75] * 5)), INVALID, "play.cards"),
    Row("rank-outside-deck", "ClassifyPlay",
        lambda: classify("3333", rule_set=RS(id="fengkuang_crazy")), INVALID, "play.cards_text"),
    Row("both-codes-and-text", "ClassifyPlay",
        lambda: S.ClassifyPlayRequest(play=C(cards=[21], cards_text="7S")), INVALID, "play"),
    # --- unknown enum values (proto3 enums are open)
    Row("unknown-card-code", "ClassifyPlay",
        lambda: S.ClassifyPlayRequest(play=C(cards=[21, 66])), INVALID, "play.cards[1]"),
    Row("card-code-past-enum", "ClassifyPlay",
        lambda: S.ClassifyPlayRequest(play=C(cards=[2**31 - 1])), INVALID, "play.cards[0]"),
    Row("negative-card-code", "ComparePlays",
        lambda: S.ComparePlaysRequest(current=C(cards=[-7]), play=C(cards=[21])), INVALID,
        "current.cards[0]"),
    Row("unknown-declared-kind", "ClassifyPlay",
        lambda: classify(declaration=readings_pb2.Declaration(kind=99)), INVALID, "declaration.kind"),
    Row("declared-top-past-ranks", "ClassifyPlay",
        lambda: classify(declaration=readings_pb2.Declaration(kind=2, top=2**32 - 1)), INVALID,
        "declaration.top"),
    Row("unknown-kind-filter", "EnumerateLegalPlays",
        lambda: S.EnumerateLegalPlaysRequest(hand=C(cards_text="77"), kinds=[1, 99]), INVALID,
        "kinds[1]"),
    Row("unknown-action-type", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay=scoring_pb2.Replay(
            hands=[C(cards_text=t) for t in ("7S", "8S", "9S", "TS")], partial_deal=True,
            actions=[scoring_pb2.Action(seat=0, type=99)])),
        INVALID, "replay.actions[0].type"),
    Row("unknown-revealed-card", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay=scoring_pb2.Replay(
            hands=[C(cards_text=t) for t in ("7S", "8S", "9S", "TS")], partial_deal=True,
            revealed=999, actions=[scoring_pb2.Action(seat=0, type=1, cards=C(cards=[21]))])),
        INVALID, "replay.revealed"),
    Row("unknown-variant", "ClassifyPlay", lambda: classify(rule_set=RS(id="nope")),
        grpc.StatusCode.NOT_FOUND, "rule_set.id"),
    # --- empty requests
    Row("empty-classify", "ClassifyPlay", S.ClassifyPlayRequest, INVALID, "play"),
    Row("empty-compare", "ComparePlays", S.ComparePlaysRequest, INVALID, "current"),
    Row("empty-enumerate", "EnumerateLegalPlays", S.EnumerateLegalPlaysRequest, INVALID,
        "hand"),
    Row("empty-score", "ScoreRound", S.ScoreRoundRequest, INVALID, "round"),
    Row("empty-batch", "BatchClassify", S.BatchClassifyRequest, None),
    Row("empty-list-variants", "ListVariants", S.ListVariantsRequest, None),
    Row("empty-get-variant", "GetVariant", S.GetVariantRequest, None),
    Row("empty-summary", "ScoreRound",
        lambda: S.ScoreRoundRequest(summary=scoring_pb2.RoundSummary()), INVALID,
        "summary.finish_order"),
    # --- malformed custom variants
    Row("variant-claims-builtin-id", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(id="baibian"))),
        INVALID, "rule_set.custom_json.id"),
    Row("variant-not-json", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json="{extends: baibian")), INVALID,
        "rule_set.custom_json"),
    Row("variant-not-object", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json="[1, 2]")), INVALID,
        "rule_set.custom_json"),
    Row("variant-missing-extends", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json='{"id": "house"}')), INVALID,
        "rule_set.custom_json.extends"),
    Row("variant-extends-itself", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(extends="house"))), INVALID,
        "rule_set.custom_json.extends"),
    Row("variant-unknown-field", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(jokers_wild=True))),
        INVALID, "rule_set.custom_json.jokers_wild"),
    Row("variant-absurd-decks", "ClassifyPlay",
        lambda: classify(rule_set=RS(custom_json=variant_json(decks=10**9))), INVALID,
        "rule_set.custom_json.decks"),
    Row("variant-absurd-multiplier", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(
            multiplier=[[s, 2] for s in range(1, 1_000)]))),
        INVALID, "rule_set.custom_json.multiplier"),
    Row("variant-absurd-multi-bomb", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(
            multi_bomb=[[4, 3]] * 1_000))),
        INVALID, "rule_set.custom_json.multi_bomb"),
    Row("variant-oversized-document", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(
            multi_bomb=[[4, 3]] * 100_000))),
        INVALID, "rule_set.custom_json"),
    Row("variant-row-not-a-list", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(multi_bomb=[{"n": 4}]))),
        INVALID, "rule_set.custom_json.multi_bomb"),
    Row("variant-wrong-shape", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(base=[1, 2, 3]))), INVALID,
        "rule_set.custom_json.base"),
    Row("variant-float-decks", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(decks=2.0))), INVALID,
        "rule_set.custom_json.decks"),
    Row("variant-name-not-text", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(name=5))), INVALID,
        "rule_set.custom_json.name"),
    Row("variant-huge-escape-fee", "GetVariant",
        lambda: S.GetVariantRequest(rule_set=RS(custom_json=variant_json(escape_fee=10**30))),
        INVALID, "rule_set.custom_json.escape_fee"),
    Row("escape-with-huge-fee", "ScoreRound",
        lambda: S.ScoreRoundRequest(
            rule_set=RS(custom_json=json.dumps({"id": "house", "extends": "huopin",
                                            "escape_fee": 10**30})),
            summary=scoring_pb2.RoundSummary(escape=1, cards_left=[5, 5, 5, 5])),
        INVALID, "rule_set.custom_json.escape_fee"),
    # --- malformed replays
    Row("replay-not-json", "ScoreRound", lambda: S.ScoreRoundRequest(replay_json="{]"),
        INVALID, "replay_json"),
    Row("replay-not-object", "ScoreRound", lambda: S.ScoreRoundRequest(replay_json="[]"),
        INVALID, "replay_json"),
    Row("replay-missing-hands", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=json.dumps({"variant": "baibian",
                                                            "actions": []})),
        INVALID, "replay_json.hands"),
    Row("replay-wrong-seat", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=replay_json(
            actions=[{"seat": 1, "play": "8S"}])),
        INVALID, "replay_json.actions[0]"),
    Row("replay-card-not-held", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=replay_json(
            actions=[{"seat": 0, "play": "2C"}])),
        INVALID, "replay_json.actions[0]"),
    Row("replay-ends-early", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=replay_json()), INVALID, "replay_json.actions"),
    Row("replay-million-passes", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=replay_json(
            actions=[{"seat": 0, "play": "7S"}] + [{"seat": 1, "pass": True}] * 100_000)),
        INVALID, "replay_json.actions[2]"),
    Row("replay-three-hands", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay=scoring_pb2.Replay(
            hands=[C(cards_text="7S")] * 3, partial_deal=True)),
        INVALID, "replay.hands"),
    Row("replay-variant-conflict", "ScoreRound",
        lambda: S.ScoreRoundRequest(rule_set=RS(id="huopin"), replay_json=replay_json()), INVALID,
        "replay_json.variant"),
    Row("replay-huge-stake", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=replay_json(
            stake=10**30, actions=[{"seat": 0, "play": "7S"}, {"seat": 1, "pass": True},
                                   {"seat": 2, "pass": True}, {"seat": 3, "pass": True},
                                   {"seat": 2, "play": "9S"}])),
        INVALID, "replay_json.stake"),
    Row("replay-declared-top-past-int", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=replay_json(actions=[
            {"seat": 0, "play": "7S", "declare": "single", "declare_top": 2**40}])),
        INVALID, "replay_json.actions[0]"),
    Row("replay-declare-not-text", "ScoreRound",
        lambda: S.ScoreRoundRequest(replay_json=replay_json(actions=[
            {"seat": 0, "play": "7S", "declare": ["single"]}])),
        INVALID, "replay_json.actions[0]"),
    Row("summary-stake-past-int64", "ScoreRound",
        lambda: S.ScoreRoundRequest(summary=scoring_pb2.RoundSummary(
            finish_order=[0, 2], stake=2**63 - 1)),
        INVALID, "summary.stake"),
    Row("summary-million-finish-order", "ScoreRound",
        lambda: S.ScoreRoundRequest(summary=scoring_pb2.RoundSummary(
            finish_order=[7] * 1_000_000)),
        INVALID, "summary.finish_order"),
    Row("summary-seat-past-table", "ScoreRound",
        lambda: S.ScoreRoundRequest(summary=scoring_pb2.RoundSummary(finish_order=[0, 7])),
        INVALID, "summary.finish_order[1]"),
    # --- JSON no parser should have to carry: deep nesting, huge integers, lone surrogates
    *[Row(f"{where}-{name}", rpc, make(doc), INVALID, field)
      for name, doc in HOSTILE_JSON
      for where, rpc, make, field in JSON_FIELDS],
    # --- deadlines
    Row("past-deadline", "EnumerateLegalPlays",
        lambda: S.EnumerateLegalPlaysRequest(
            hand=C(cards_text="77777777 88888888 9999999 SJ SJ BJ BJ"), rule_set=RS(id="huopin"),
            include_counts=True),
        grpc.StatusCode.DEADLINE_EXCEEDED, timeout=1e-6),
]


@pytest.mark.parametrize("row", [
    pytest.param(r, id=r.id, marks=[pytest.mark.xfail(reason=OPEN, strict=False)] if r.open
                 else []) for r in ROWS])
def test_hostile_request(srv: Server, row: Row) -> None:
    call = getattr(srv.stub, row.rpc)
    if row.code is None:
        call(row.request(), timeout=row.timeout)
        return
    with pytest.raises(grpc.RpcError) as info:
        call(row.request(), timeout=row.timeout)
    exc = info.value
    assert exc.code() == row.code, f"{exc.code().name}: {exc.details()}"
    assert exc.details(), "the status carries no message"
    if row.code != grpc.StatusCode.RESOURCE_EXHAUSTED:   # ours, not gRPC's transport text
        assert len(exc.details().encode()) <= MAX_MESSAGE_CHARS, "an unbounded message"
        assert "Traceback" not in exc.details() and "Error:" not in exc.details()
    if row.field:   # the field, or a more precise path inside it (lengths[3], hand.cards[0])
        (got,) = fields_of(exc)
        assert got == row.field or got.startswith((row.field + "[", row.field + ".")), \
            f"{got!r}: {exc.details()}"


def test_server_survives_the_table(srv: Server) -> None:
    reply = srv.stub.ClassifyPlay(classify("7777 BJ"), timeout=TIMEOUT)
    assert reply.reading.kind == readings_pb2.KIND_BOMB


def test_slow_request_past_its_deadline_does_not_wedge_the_server() -> None:
    """A request that outlives its deadline ends DEADLINE_EXCEEDED; the server still answers
    other clients afterwards (within a generous bound, not a timing assertion)."""
    huge = json.dumps({"extends": "huopin", "id": "big", "decks": 4, "joker_copies": 4,
                       "hand_size": 40, "chain_min_links": 2})
    request = S.EnumerateLegalPlaysRequest(
        hand=C(cards_text="3333 4444 5555 6666 77777 88888 SJ SJ SJ SJ BJ BJ BJ BJ"),
        rule_set=RS(custom_json=huge), include_counts=True)
    with loopback() as s:
        with pytest.raises(grpc.RpcError) as info:
            s.stub.EnumerateLegalPlays(request, timeout=0.05)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        reply = s.stub.ClassifyPlay(classify("7777 BJ"), timeout=TIMEOUT)
        assert reply.reading.kind == readings_pb2.KIND_BOMB


def test_stream_of_hostile_replays_answers_each_in_order() -> None:
    requests = [S.ScoreReplaysRequest(replay_json="{]"),
                S.ScoreReplaysRequest(rule_set=RS(id="nope"), replay_json=replay_json()),
                S.ScoreReplaysRequest(),
                S.ScoreReplaysRequest(replay_json=replay_json(actions=[{"seat": 3}]))]
    with loopback() as s:
        answers = list(s.stub.ScoreReplays(iter(requests * 50), timeout=TIMEOUT))
    assert [a.index for a in answers] == list(range(200))
    errors = [decode_status(a.error) for a in answers]
    assert {e.code for e in errors} == {INVALID, grpc.StatusCode.NOT_FOUND}
    assert all(e.field for e in errors)


@pytest.mark.parametrize(("name", "doc"), HOSTILE_JSON)
def test_poison_line_in_a_stream_is_answered_in_band(name: str, doc: str) -> None:
    """A line no JSON parser should carry gets an in-band INVALID_ARGUMENT naming the field
    (bounded, no Python exception text), and the stream goes on."""
    good = replay_json(actions=[{"seat": 0, "play": "7S"}, {"seat": 1, "pass": True},
                                {"seat": 2, "pass": True}, {"seat": 3, "pass": True}])
    requests = [S.ScoreReplaysRequest(replay_json=doc),
                S.ScoreReplaysRequest(replay_json=good),
                S.ScoreReplaysRequest(replay_json=doc)]
    with loopback() as s:
        answers = list(s.stub.ScoreReplays(iter(requests), timeout=TIMEOUT))
    assert [a.index for a in answers] == [0, 1, 2]
    for answer in (answers[0], answers[2]):
        error = decode_status(answer.error)
        assert error.code == INVALID and error.field == "replay_json", error
        assert len(error.message) <= 300 and "Error" not in error.message
    assert answers[1].WhichOneof("outcome") == "error"   # ends early: a replay error ...
    assert decode_status(answers[1].error).reason == "INVALID_REPLAY"   # ... not a crash


def test_many_short_lived_channels() -> None:
    """Clients that connect, send one bad request and vanish leave the server serving."""
    with loopback() as s:
        for _ in range(50):
            with grpc.insecure_channel(f"127.0.0.1:{s.port}") as channel:
                stub = service_pb2_grpc.ShuangkouServiceStub(channel)
                with contextlib.suppress(grpc.RpcError):
                    stub.ClassifyPlay(S.ClassifyPlayRequest(), timeout=TIMEOUT)
        reply = s.stub.ClassifyPlay(classify("77"), timeout=TIMEOUT)
        assert reply.reading.kind == readings_pb2.KIND_PAIR


# ----------------------------------------------------------------------------- variant files

@pytest.mark.parametrize(("text", "field"), [
    ('[variants.a]\nextends = "b"\n[variants.b]\nextends = "a"\n', "extends"),
    ('[variants.a]\nextends = "a"\n', "extends"),
    ('[variants.a]\nextends = "baibian"\ndecks = "two"\n', "decks"),
    ("variants = 5\n", "variants"),
    ("not toml ===", None),
])
def test_malformed_variant_files(tmp_path: Path, text: str, field: str | None) -> None:
    path = tmp_path / "house.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(VariantError) as info:
        load_variants(path)
    assert info.value.field == field
    assert str(info.value)
