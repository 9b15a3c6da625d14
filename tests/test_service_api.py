"""End-to-end tests of every ShuangkouService RPC over loopback gRPC, errors included."""

from __future__ import annotations

import json
from collections.abc import Iterator

import grpc
import pytest
from grpc_helpers import REPLAY, TIMEOUT, Running, cards, rich_error, running_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shuangkou import core
from shuangkou.core.replay import score_replay
from shuangkou.core.scoring import score_round
from shuangkou.service.api.results import result_to_dict
from shuangkou.service.errors import decode_status
from shuangkou.v1 import (
    cards_pb2,
    readings_pb2,
    scoring_pb2,
    service_pb2,
    variants_pb2,
)

K = readings_pb2


@pytest.fixture(scope="module")
def srv() -> Iterator[Running]:
    with running_server() as running:
        yield running


def rule_set(variant: str) -> variants_pb2.RuleSet:
    return variants_pb2.RuleSet(id=variant)


def classify(srv: Running, text: str, variant: str = "baibian", **kw: object
             ) -> service_pb2.ClassifyPlayResponse:
    return srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
        rule_set=rule_set(variant), play=cards(text), **kw), timeout=TIMEOUT)


def fails(call, *args: object, **kw: object):
    with pytest.raises(grpc.RpcError) as info:
        call(*args, timeout=TIMEOUT, **kw)
    return rich_error(info.value)


# ----------------------------------------------------------------------------- ClassifyPlay

@pytest.mark.parametrize("variant, text, kind, pattern", [
    # RULES.md §7 seed examples (baibian and bianfeng, then huopin).
    ("baibian", "7777+BJ", K.KIND_BOMB, [(4, 5)]),
    ("bianfeng", "7777+BJ", K.KIND_BOMB, [(4, 5)]),
    ("baibian", "45678+BJ", K.KIND_STRAIGHT, [(r, 1) for r in range(1, 7)]),
    ("baibian", "77899+BJ", K.KIND_PAIR_CHAIN, [(4, 2), (5, 2), (6, 2)]),
    ("bianfeng", "77+8+9+BJ+BJ", K.KIND_PAIR_CHAIN, [(4, 2), (5, 2), (6, 2)]),
    ("huopin", "33445+BJ", K.KIND_PAIR_CHAIN, [(0, 2), (1, 2), (2, 2)]),
    ("huopin", "5679+BJ", K.KIND_STRAIGHT, [(r, 1) for r in range(2, 7)]),
    ("huopin", "5678+BJ", K.KIND_STRAIGHT, [(r, 1) for r in range(2, 7)]),
    ("huopin", "444+BJ", K.KIND_BOMB, [(1, 4)]),
    ("huopin", "44444444+BJ", K.KIND_BOMB, [(1, 9)]),
    ("huopin", "33334444555+BJ", K.KIND_CHAIN_BOMB, [(0, 4), (1, 4), (2, 4)]),
])
def test_classify_rules_examples(srv: Running, variant: str, text: str, kind: int,
                                 pattern: list[tuple[int, int]]) -> None:
    reply = classify(srv, text, variant)
    assert reply.reading.kind == kind
    assert [(rc.rank, rc.count) for rc in reply.reading.ranks] == pattern
    assert reply.readings[0] == reply.reading          # primary first


@pytest.mark.parametrize("variant, text", [
    ("fengkuang", "3333 4444 5555 BJ"), ("baibian", "45678 BJ"), ("qianbian", "5 6 7 8 SJ BJ"),
    ("bianfeng", "KKKK AAAA 2222 3333"), ("huopin", "AAAA 2222 BJ"), ("baibian", "SJ BJ BJ"),
])
def test_classify_mirrors_core_reading(srv: Running, variant: str, text: str) -> None:
    reply = classify(srv, text, variant)
    local = core.classify(text, variant)
    assert len(reply.readings) == len(local.readings)
    for got, want in zip(reply.readings, local.readings, strict=True):
        assert K.Kind.Name(got.kind) == "KIND_" + want.kind.upper()
        assert (got.card_count, got.top, got.length, got.star, got.phase, got.regular,
                got.wrap_class, got.is_bomb, got.links, got.top_rank, got.text) == (
            want.cards, want.top, want.length, want.star, want.phase, want.regular,
            want.wrap_class, want.is_bomb, want.links, want.top_rank, want.describe())
        assert [(r.rank, r.count) for r in got.ranks] == list(want.ranks)
        assert list(got.wilds) == list(want.wilds)
        assert list(got.key_values) == list(want.key)


def test_classify_codes_and_text_agree(srv: Running) -> None:
    by_text = classify(srv, "7S 7H 7 BJ")
    codes = [cards_pb2.CARD_7S, cards_pb2.CARD_7H, cards_pb2.CARD_7, cards_pb2.CARD_BJ]
    by_code = srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("baibian"), play=cards_pb2.Cards(cards=codes)), timeout=TIMEOUT)
    assert by_code.reading == by_text.reading
    assert list(by_code.cards) == codes == [21, 22, 25, 75]


def test_classify_defaults_to_baibian(srv: Running) -> None:
    # SJ is not wild in baibian: "7777 SJ" has no reading there, but does in fengkuang.
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(play=cards("7777 SJ")))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert classify(srv, "7777 SJ", "fengkuang").reading.kind == K.KIND_BOMB


def test_classify_declare(srv: Running) -> None:
    # §7 rule 2/4: 4 5 6 7 8 BJ reads 456789 by default; 345678 when declared so.
    assert classify(srv, "45678 BJ").reading.top == 6
    declared = classify(srv, "45678 BJ", declaration=readings_pb2.Declaration(
        kind=K.KIND_STRAIGHT, top=5))
    assert declared.reading.top == 5 and list(declared.reading.wilds) == [0]
    # Bomb-capable cards may be declared as a non-bomb reading... if one exists.
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("baibian"), play=cards("7777"), declaration=readings_pb2.Declaration(kind=K.KIND_PAIR)))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.fields == ["declaration"] and err.reason == "ILLEGAL_PLAY"
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
        play=cards("7777"), declaration=readings_pb2.Declaration()))
    assert err.fields == ["declaration.kind"]


@pytest.mark.parametrize("play, field, reason, words", [
    (cards_pb2.Cards(cards_text="3 4"), "play.cards_text", "INVALID_PLAY", "pair"),
    (cards_pb2.Cards(cards_text="7SJ"), "play.cards_text", "INVALID_CARDS", "joker"),
    (cards_pb2.Cards(cards_text="777777777"), "play.cards_text", "INVALID_CARDS", "copies"),
    (cards_pb2.Cards(cards_text="7S 7S 7S"), "play.cards_text", "INVALID_CARDS", "copies"),
    (cards_pb2.Cards(cards=[21, 66]), "play.cards[1]", "INVALID_CARDS", "66"),
    (cards_pb2.Cards(cards=[0]), "play.cards[0]", "INVALID_CARDS", "0"),
    (cards_pb2.Cards(cards=[21], cards_text="7S"), "play", "BAD_REQUEST", "not both"),
    (cards_pb2.Cards(), "play", "BAD_REQUEST", "no cards"),
])
def test_classify_bad_cards(srv: Running, play: cards_pb2.Cards, field: str, reason: str,
                            words: str) -> None:
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(rule_set=rule_set("baibian"),
                                                                       play=play))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.fields == [field] and err.reason == reason
    assert words in err.violations[0].description and err.message


def test_three_deck_card_limits(srv: Running) -> None:
    # fengkuang_crazy has no 3-6 and three copies of each suited face (§3).
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("fengkuang_crazy"), play=cards("3333")))
    assert err.reason == "INVALID_CARDS"
    assert classify(srv, "7S 7S 7S 7", "fengkuang_crazy").reading.kind == K.KIND_BOMB


def test_unknown_variant_is_not_found(srv: Running) -> None:
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(rule_set=rule_set("poker"),
                                                                       play=cards("7")))
    assert err.code == grpc.StatusCode.NOT_FOUND
    assert err.fields == ["rule_set.id"] and err.reason == "UNKNOWN_VARIANT"
    assert "baibian" in err.message


def test_custom_variant(srv: Running) -> None:
    house = json.dumps({"id": "house", "extends": "baibian", "chain_min_links": 2})
    reply = srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
        rule_set=variants_pb2.RuleSet(custom_json=house), play=cards("3333 4444")), timeout=TIMEOUT)
    assert reply.reading.kind == K.KIND_CHAIN_BOMB
    assert fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("baibian"), play=cards("3333 4444"))).reason == "INVALID_PLAY"
    for doc, field in [("{", "rule_set.custom_json"), ("[1]", "rule_set.custom_json"),
                       ('{"extends": "baibian", "chain_min_links": 1}',
                        "rule_set.custom_json.chain_min_links"),
                       ('{"extends": "nope"}', "rule_set.custom_json.extends"),
                       ('{"extends": "baibian", "colour": 1}', "rule_set.custom_json.colour"),
                       # wrong JSON types never reach the core (they used to be INTERNAL)
                       ('{"extends": "baibian", "decks": 2.0}', "rule_set.custom_json.decks"),
                       ('{"extends": "baibian", "name": 5}', "rule_set.custom_json.name"),
                       ('{"extends": "huopin", "kou": {"double": "3"}}',
                        "rule_set.custom_json.kou.double"),
                       ('{"extends": "baibian", "multiplier": [[5, 2], [6, 4.5]]}',
                        "rule_set.custom_json.multiplier[1][1]")]:
        err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
            rule_set=variants_pb2.RuleSet(custom_json=doc), play=cards("7")))
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT, doc
        assert err.fields == [field], doc


# ----------------------------------------------------------------------------- ComparePlays

@pytest.mark.parametrize("variant, current, play, beats", [
    ("baibian", "45678", "5678 BJ", True),
    ("baibian", "45678", "456789", False),            # same type, different card count
    ("baibian", "KK", "2 2", True),
    ("baibian", "KK", "3333", True),                  # any bomb beats an ordinary play
    ("baibian", "66666666", "3333 4444 5555 6666", False),   # §8: equal keys tie
    ("baibian", "3333 4444 5555 6666", "66666666", False),
    ("fengkuang", "4444 5555 6666", "3333333", True),        # §8 seed examples
    ("fengkuang_crazy", "7777 8888 99999", "77777 8888 99999", True),
    ("qianbian", "3333 4444444 5555", "6666 7777 8888", True),
    ("huopin", "77777 88888 99999", "3333 4444 5555 6666", True),
    ("huopin", "66666 77777 888888", "3333 44444 555555 6666", True),
    ("huopin", "6666 77777 8888", "4444 55555 66666", True),
    ("huopin", "4444 55555 6666", "JJJJJJJ", True),
    ("huopin", "QQQQ KKKK AAAA", "KKKK AAAA 2222", True),
])
def test_compare_rules_examples(srv: Running, variant: str, current: str, play: str,
                                beats: bool) -> None:
    reply = srv.stub.ComparePlays(service_pb2.ComparePlaysRequest(
        rule_set=rule_set(variant), current=cards(current), play=cards(play)), timeout=TIMEOUT)
    assert reply.beats is beats
    assert reply.beats == core.beats(play, current, variant)


def test_compare_reports_standing_reading(srv: Running) -> None:
    # §7 rule 6: 4 5 6 7 8 BJ on 3 4 5 6 7 8 stands as 456789 (the primary beats).
    reply = srv.stub.ComparePlays(service_pb2.ComparePlaysRequest(
        rule_set=rule_set("baibian"), current=cards("345678"), play=cards("45678 BJ")), timeout=TIMEOUT)
    assert reply.beats and reply.play.top == 6 and reply.current.top == 5
    # Declared as 345678 it does not beat 345678 (equal top).
    reply = srv.stub.ComparePlays(service_pb2.ComparePlaysRequest(
        rule_set=rule_set("baibian"), current=cards("345678"), play=cards("45678 BJ"),
        declaration=readings_pb2.Declaration(kind=K.KIND_STRAIGHT, top=5)), timeout=TIMEOUT)
    assert not reply.beats and reply.play.top == 5


def test_compare_errors_name_the_side(srv: Running) -> None:
    err = fails(srv.stub.ComparePlays, service_pb2.ComparePlaysRequest(
        current=cards("3 4"), play=cards("55")))
    assert err.fields == ["current.cards_text"]
    err = fails(srv.stub.ComparePlays, service_pb2.ComparePlaysRequest(
        current=cards("33"), play=cards("5 6")))
    assert err.fields == ["play.cards_text"]


# ----------------------------------------------------------------------------- BatchClassify

def test_batch_codes(srv: Running) -> None:
    plays = ["7777 BJ", "3 4", "45678", "SJ BJ", "BJ BJ SJ"]
    codes = [core.parse_cards(p) for p in plays]
    reply = srv.stub.BatchClassify(service_pb2.BatchClassifyRequest(
        rule_set=rule_set("baibian"), codes=bytes(c for p in codes for c in p),
        lengths=[len(p) for p in codes], include_readings=True), timeout=TIMEOUT)
    assert list(reply.kinds) == [K.KIND_BOMB, K.KIND_UNSPECIFIED, K.KIND_STRAIGHT,
                                K.KIND_UNSPECIFIED, K.KIND_JOKER_BOMB_3]
    assert list(reply.stars) == [5, 0, 0, 0, 6]
    assert list(reply.card_counts) == [5, 0, 5, 0, 3]
    assert reply.valid_count == 3
    assert [e.index for e in reply.errors] == [1, 3]
    assert all(decode_status(e.status).code == grpc.StatusCode.INVALID_ARGUMENT
               and decode_status(e.status).reason == "INVALID_PLAY" for e in reply.errors)
    assert reply.readings[2].text == core.classify("45678").primary.describe()
    assert reply.readings[1] == readings_pb2.Reading()


def test_batch_text_with_bad_entries(srv: Running) -> None:
    reply = srv.stub.BatchClassify(service_pb2.BatchClassifyRequest(
        rule_set=rule_set("huopin"), plays_text=["33445 BJ", "xyz", "", "3344 BJ"]), timeout=TIMEOUT)
    assert list(reply.kinds) == [K.KIND_PAIR_CHAIN, 0, 0, 0]
    problems = {e.index: decode_status(e.status) for e in reply.errors}
    assert problems[1].reason == "INVALID_CARDS" and problems[1].field == "plays_text[1]"
    assert problems[2].field == "plays_text[2]"
    assert problems[3].reason == "INVALID_PLAY"


@pytest.mark.parametrize("form", ["codes", "text"])
def test_batch_errors_over_slices_are_classifys(srv: Running, form: str) -> None:
    """A batch of several slices (over BATCH_CHUNK plays), valid, invalid and impossible
    plays mixed: each error is the compact status of what classify raises for its play,
    naming the request's field; the columns are classify_batch's."""
    import random

    from randomplays import PlayMaker

    from shuangkou.service.api.shuangkou import BATCH_CHUNK
    from shuangkou.service.errors import status_proto

    rng = random.Random(5)
    maker = PlayMaker("baibian", rng)
    plays = [maker.play()[:10] for _ in range(BATCH_CHUNK * 2 + 300)]
    for i in range(0, len(plays), 97):      # impossible cards: nine copies, a bad code
        plays[i] = [1] * 9 if i % 2 else [200, 1]
    if form == "codes":
        request = service_pb2.BatchClassifyRequest(
            rule_set=rule_set("baibian"), codes=bytes(c for p in plays for c in p),
            lengths=[len(p) for p in plays])
    else:
        texts = [" ".join(core.format_cards(p)) if 200 not in p else "7S ZZ" for p in plays]
        texts[3] = ""
        request = service_pb2.BatchClassifyRequest(rule_set=rule_set("baibian"),
                                                   plays_text=texts)
    reply = srv.stub.BatchClassify(request, timeout=TIMEOUT)
    want = {}
    for i, play in enumerate(plays):
        try:
            core.classify(request.plays_text[i] if form == "text" else bytes(play), "baibian")
        except core.ShuangkouError as exc:
            exc.field = f"plays_text[{i}]" if form == "text" else "codes"
            want[i] = status_proto(exc, compact=True)
    assert [e.index for e in reply.errors] == sorted(want)
    assert all(e.status == want[e.index] for e in reply.errors)
    assert reply.valid_count == len(plays) - len(want)
    assert len(reply.kinds) == len(plays)


def test_batch_columns_are_protobufs_own_encoding() -> None:
    """The compiled column writer gives the bytes protobuf gives the same columns, values of
    several varint bytes included, and counts the kinds."""
    from array import array

    from shuangkou.service.api import _classify_replies as replies
    from shuangkou.service.api.shuangkou import _KIND_TABLE

    kind = bytes([0, 3, 255, 7, 3])
    top, cards, star = bytes([0, 130, 255, 7, 1]), bytes([5, 0, 200, 1, 2]), bytes([0, 128, 6, 0, 9])
    readings = array("H", [0, 1, 127, 128, 65535])
    tally = array("q", bytes(8 * 256))
    got = replies.batch_columns(kind, top, star, cards, readings, _KIND_TABLE, tally)
    assert got == service_pb2.BatchClassifyResponse(
        kinds=[_KIND_TABLE[k] for k in kind], tops=top, card_counts=cards, stars=star,
        reading_counts=readings).SerializeToString()
    assert tally[3] == 2 and tally[255] == 1 and sum(tally) == len(kind)
    with pytest.raises(ValueError):
        replies.batch_columns(kind, top[:2], star, cards, readings, _KIND_TABLE, tally)


def test_classify_reply_is_protobufs_own_encoding() -> None:
    """ClassifyPlay's compiled reply (its readings kept as encoded bytes) is the bytes of the
    response built with the generated classes: every variant, wild-heavy and declared plays,
    codes of several varint bytes."""
    import random

    from shuangkou.core.generate import deal
    from shuangkou.service.api import _classify_replies as replies
    from shuangkou.service.api.convert import reading_bytes, reading_message

    rng = random.Random(7)
    checked = 0
    for variant in core.BUILTIN:
        for _ in range(8):
            plays = list(core.legal_plays(deal(variant, rng)[0], variant))
            for play in rng.sample(plays, min(len(plays), 40)):
                c = core.classify(list(play.cards), variant)
                for reading in (c.primary, c.readings[-1]):
                    got = replies.classify_reply(c.cards, [reading_bytes(r) for r in c.readings],
                                               reading_bytes(reading))
                    assert got == service_pb2.ClassifyPlayResponse(
                        cards=c.cards, readings=[reading_message(r) for r in c.readings],
                        reading=reading_message(reading)).SerializeToString(), (variant, play)
                    checked += 1
    assert checked > 1000
    wide = replies.classify_reply([5, 300, 127, 128], [b"", b"\x08\x01"], b"\x10\x02")
    assert service_pb2.ClassifyPlayResponse.FromString(wide).cards == [5, 300, 127, 128]


_RULE_SETS = st.one_of(st.none(), st.builds(variants_pb2.RuleSet, id=st.sampled_from(
    ["", "baibian", "huopin", "qianbian", "nope", "\u00fc"])),
    st.builds(variants_pb2.RuleSet, custom_json=st.just('{"extends": "baibian"}')))


def _requests(message: type, **fields: st.SearchStrategy) -> st.SearchStrategy[bytes]:
    """Requests' bytes: ``message`` with any of ``fields`` set (None: left unset), two of
    them concatenated (protobuf merges them), and bytes at random."""
    def request(**values: object) -> bytes:
        return message(**{k: v for k, v in values.items() if v is not None}
                       ).SerializeToString()

    one = st.builds(request, **fields)
    return st.one_of(one, st.builds(bytes.__add__, one, one), st.binary(max_size=40))


# Plain requests (a rule set id, codes, lengths) and every shape the reader leaves to the
# generated class: custom rule sets, lengths of 2**31 and more, text plays, readings asked for.
_BATCH_REQUESTS = _requests(
    service_pb2.BatchClassifyRequest, rule_set=_RULE_SETS,
    codes=st.one_of(st.none(), st.binary(max_size=12), st.just(bytes([5, 6, 7, 8, 9, 70]))),
    lengths=st.one_of(st.none(), st.lists(st.one_of(st.integers(0, 6), st.sampled_from(
        [127, 128, 2**31 - 1, 2**31, 2**32 - 1])), max_size=5)),
    plays_text=st.one_of(st.none(), st.just(["7S 7H", "ZZ"])),
    include_readings=st.one_of(st.none(), st.booleans()))


@settings(max_examples=400, deadline=None)
@given(_BATCH_REQUESTS)
def test_a_plain_batch_request_is_read_as_its_message(data: bytes) -> None:
    """The compiled reader of BatchClassify's requests gives the fields of the message the
    generated class decodes, or that message itself (or its error) for any other shape; and
    the servicer answers both forms alike, byte for byte or error for error."""
    import sys

    from google.protobuf.message import DecodeError
    from grpc_helpers import ROOT
    from prometheus_client import CollectorRegistry

    from shuangkou.service.api._requests import read_batch_request
    from shuangkou.service.api.shuangkou import ShuangkouServicer
    from shuangkou.service.limits import Limits
    from shuangkou.service.metrics import Metrics

    sys.path.insert(0, str(ROOT / "fuzz"))
    from messages import Aborted, Context

    servicer = ShuangkouServicer(Limits(max_cards=8, max_batch=4), Metrics(CollectorRegistry()))
    try:
        message = service_pb2.BatchClassifyRequest.FromString(data)
    except DecodeError:
        with pytest.raises(DecodeError):
            read_batch_request(data)
        return
    read = read_batch_request(data)
    answers = []
    if type(read) is tuple:
        assert message.rule_set.WhichOneof("source") in (None, "id")
        assert not message.plays_text and not message.include_readings
        assert (bytes(read[1]), list(read[2])) == (message.codes, list(message.lengths))
        assert read[0] == message.rule_set.id
        calls = [(servicer.batch_plain, read), (servicer.BatchClassify, message)]
    else:
        assert read == message
        calls = [(servicer.BatchClassify, read), (servicer.BatchClassify, message)]
    for call, request in calls:
        try:
            answers.append(call(request, Context()))
        except Aborted as exc:
            answers.append((exc.code, exc.message, exc.status))
    assert answers[0] == answers[1]


def test_grpc_reads_a_plain_batch_request_from_its_bytes() -> None:
    """The handler gRPC runs for BatchClassify decodes with the compiled reader: a plain
    request arrives as its fields, any other as its message; the other methods keep the
    generated class's decoding."""
    from shuangkou.service.api._requests import read_batch_request
    from shuangkou.service.api.shuangkou import (
        SERVICE_NAME,
        ShuangkouServicer,
        register_shuangkou_service,
    )
    from shuangkou.service.limits import Limits

    handlers: dict = {}

    class Server:   # stands for a grpc.Server to the registration
        def add_generic_rpc_handlers(self, generic: object) -> None:
            pass

        def add_registered_method_handlers(self, service: str, found: dict) -> None:
            handlers.update(found)

    assert register_shuangkou_service(Server(), ShuangkouServicer(Limits(), None)) == SERVICE_NAME
    read = handlers["BatchClassify"].request_deserializer
    assert read is read_batch_request
    vid, codes, lengths = read(service_pb2.BatchClassifyRequest(
        codes=bytes([5, 6]), lengths=[1, 1]).SerializeToString())
    assert (vid, bytes(codes), list(lengths)) == ("", bytes([5, 6]), [1, 1])
    texts = service_pb2.BatchClassifyRequest(plays_text=["7S"])
    assert read(texts.SerializeToString()) == texts
    assert handlers["ClassifyPlay"].request_deserializer == \
        service_pb2.ClassifyPlayRequest.FromString


def test_raw_request_bytes_are_answered_or_refused(srv: Running) -> None:
    """Bytes sent as they are to ClassifyPlay and BatchClassify (whose requests the compiled
    reader reads) — random ones, truncated plain requests, length prefixes past the end, fields repeated,
    oversized varints — are answered or refused INVALID_ARGUMENT (NOT_FOUND for a rule set
    id that reads as unknown), never INTERNAL, and the server goes on answering."""
    import random

    rng = random.Random(5)
    plain = service_pb2.ClassifyPlayRequest(rule_set=rule_set("huopin"),
                                            play=cards("45678 BJ")).SerializeToString()
    batch = service_pb2.BatchClassifyRequest(codes=bytes([5, 6]),
                                             lengths=[1, 1]).SerializeToString()
    crafted = [b"", b"\x0a", b"\x0a\xff\xff\xff\xff\x0f", b"\x12\x05\x12\x03abc",
               b"\x1a\x05\xff\xff\xff\xff\xff", b"\x0a\x00" * 1000, plain + plain,
               batch + batch, b"\x12\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01"]
    crafted += [plain[:i] for i in range(len(plain))] + [batch[:i] for i in range(len(batch))]
    crafted += [rng.randbytes(rng.randrange(1, 64)) for _ in range(150)]
    for method in ("ClassifyPlay", "BatchClassify"):
        call = srv.channel.unary_unary(f"/shuangkou.v1.ShuangkouService/{method}")
        for data in crafted:
            try:
                call(data, timeout=TIMEOUT)
            except grpc.RpcError as exc:
                assert exc.code() in (grpc.StatusCode.INVALID_ARGUMENT,   # an unknown id:
                                      grpc.StatusCode.NOT_FOUND), (method, data, exc)
    assert classify(srv, "45678 BJ", "huopin").reading.kind == K.KIND_STRAIGHT


def test_batch_bad_requests() -> None:
    with running_server(max_batch=3, max_cards=6) as srv:
        err = fails(srv.stub.BatchClassify, service_pb2.BatchClassifyRequest(
            codes=bytes([5] * 4), lengths=[1, 1, 1, 1]))
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == ["lengths"]
        assert "limit of 3" in err.message
        err = fails(srv.stub.BatchClassify, service_pb2.BatchClassifyRequest(
            plays_text=["7"] * 4))
        assert err.fields == ["plays_text"]
        err = fails(srv.stub.BatchClassify, service_pb2.BatchClassifyRequest(
            codes=bytes([5, 5]), lengths=[1]))
        assert err.fields == ["lengths"] and err.reason == "INVALID_CARDS"
        err = fails(srv.stub.BatchClassify, service_pb2.BatchClassifyRequest(
            codes=bytes([5, 5]), lengths=[1, 2**32 - 1]))
        assert err.fields == ["lengths[1]"]
        err = fails(srv.stub.BatchClassify, service_pb2.BatchClassifyRequest(
            codes=bytes([5]), lengths=[1], plays_text=["7"]))
        assert err.fields == ["plays_text"]
        reply = srv.stub.BatchClassify(service_pb2.BatchClassifyRequest(
            plays_text=["7777777"]), timeout=TIMEOUT)      # 7 cards > max_cards 6
        assert decode_status(reply.errors[0].status).field == "plays_text[0]"
        err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
            play=cards("7777777")))
        assert err.fields == ["play.cards_text"] and "limit of 6" in err.message


# ----------------------------------------------------------------------------- EnumerateLegalPlays

def _enumerate_core():
    import importlib

    return getattr(core, "legal_plays", None) or importlib.import_module(
        "shuangkou.core._enumerate").legal_plays


def test_enumerate_following(srv: Running) -> None:
    reply = srv.stub.EnumerateLegalPlays(service_pb2.EnumerateLegalPlaysRequest(
        rule_set=rule_set("baibian"), hand=cards("3 3 4 5 6 7 BJ"), to_beat=cards("33"),
        include_counts=True, include_best_bomb=True), timeout=TIMEOUT)
    want = _enumerate_core()("3 3 4 5 6 7 BJ", "baibian", core.classify("33").primary)
    assert [list(p.cards) for p in reply.plays] == [list(p.cards) for p in want]
    assert [p.reading.text for p in reply.plays] == [p.reading.describe() for p in want]
    assert not reply.next_page_token and len(reply.plays) == 4
    for play in reply.plays:
        assert play.reading.kind == K.KIND_PAIR
        assert core.beats(list(play.cards), "33", "baibian")
    assert {c.kind: c.count for c in reply.counts if c.count} == {K.KIND_PAIR: 4}
    assert reply.total == 4
    assert not reply.HasField("best_bomb")


def test_enumerate_leading_filters_and_cap() -> None:
    with running_server(enumeration_cap=5) as srv:
        hand = cards("3333 BJ 5 6 7 8 9")
        reply = srv.stub.EnumerateLegalPlays(service_pb2.EnumerateLegalPlaysRequest(
            rule_set=rule_set("baibian"), hand=hand, include_counts=True, include_best_bomb=True),
            timeout=TIMEOUT)
        assert len(reply.plays) == 5 and reply.next_page_token      # the server's cap
        assert reply.total > 5 and reply.best_bomb.star == 5
        bombs = srv.stub.EnumerateLegalPlays(service_pb2.EnumerateLegalPlaysRequest(
            rule_set=rule_set("baibian"), hand=hand, bombs_only=True, page_size=2), timeout=TIMEOUT)
        assert len(bombs.plays) == 2 and all(p.reading.is_bomb for p in bombs.plays)
        straights = srv.stub.EnumerateLegalPlays(service_pb2.EnumerateLegalPlaysRequest(
            rule_set=rule_set("baibian"), hand=hand, kinds=[K.KIND_STRAIGHT], max_cards=5),
            timeout=TIMEOUT)
        assert straights.plays and all(p.reading.kind == K.KIND_STRAIGHT
                                       and len(p.cards) == 5 for p in straights.plays)
        err = fails(srv.stub.EnumerateLegalPlays, service_pb2.EnumerateLegalPlaysRequest(
            hand=cards("3 3 3 3 3 3 3 3 3")))
        assert err.fields == ["hand.cards_text"] and err.reason == "INVALID_CARDS"
        err = fails(srv.stub.EnumerateLegalPlays, service_pb2.EnumerateLegalPlaysRequest(
            hand=cards("3 4"), to_beat=cards("3 4")))
        assert err.fields == ["to_beat.cards_text"]
        err = fails(srv.stub.EnumerateLegalPlays, service_pb2.EnumerateLegalPlaysRequest(
            hand=cards("3 4"), kinds=[99]))
        assert err.fields == ["kinds[0]"]


# ----------------------------------------------------------------------------- ScoreRound

def structured(replay: dict) -> scoring_pb2.Replay:
    msg = scoring_pb2.Replay(hands=[cards(h) for h in replay["hands"]], leader=replay["leader"],
                             stake=replay["stake"], partial_deal=replay["partial_deal"])
    for a in replay["actions"]:
        if "play" in a:
            msg.actions.add(seat=a["seat"], type=scoring_pb2.ACTION_TYPE_PLAY,
                            cards=cards(a["play"]))
        else:
            msg.actions.add(seat=a["seat"], type=scoring_pb2.ACTION_TYPE_PASS)
    return msg



def test_replay_declarations_name_any_reading(srv: Running) -> None:
    """A replay action may declare the wild placement: fengkuang `4444 5555 6666 SJ BJ` played
    as its 8★ chain bomb (not the primary 9★) sets the round star 8, by message and by JSON."""
    eight = core.classify("4444 5555 6666 SJ BJ", "fengkuang").readings[1]
    assert eight.star == 8
    hands = ["4444 5555 6666 SJ BJ", "7S", "8S", "9S"]
    msg = scoring_pb2.Replay(hands=[cards(h) for h in hands], leader=0, partial_deal=True)
    msg.actions.add(seat=0, type=scoring_pb2.ACTION_TYPE_PLAY, cards=cards(hands[0]),
                    declaration=K.Declaration(kind=K.KIND_CHAIN_BOMB, star=8,
                                              wilds=K.WildPlacement(ranks=eight.wilds)))
    for s in (1, 2, 3):
        msg.actions.add(seat=s, type=scoring_pb2.ACTION_TYPE_PASS)
    msg.actions.add(seat=2, type=scoring_pb2.ACTION_TYPE_PLAY, cards=cards("8S"))
    got = srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(
        rule_set=rule_set("fengkuang"), replay=msg), timeout=TIMEOUT).result
    assert got.star == 8
    doc = {"variant": "fengkuang", "partial_deal": True, "leader": 0, "hands": hands,
           "actions": [{"seat": 0, "play": hands[0], "declare": "chain_bomb",
                        "declare_wilds": ["4", "5"]},
                       *({"seat": s, "pass": True} for s in (1, 2, 3)),
                       {"seat": 2, "play": "8S"}]}
    by_json = srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(
        replay_json=json.dumps(doc)), timeout=TIMEOUT).result
    assert result_to_dict(by_json) == result_to_dict(got)

def test_score_replay_json_and_structured(srv: Running) -> None:
    want = score_replay(REPLAY).to_dict()
    by_json = srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(
        replay_json=json.dumps(REPLAY)), timeout=TIMEOUT)
    assert result_to_dict(by_json.result) == want
    assert by_json.result.kind == scoring_pb2.WIN_KIND_FLAT
    assert list(by_json.result.hand_at) == [0, 1, 2, 3]
    by_msg = srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(
        rule_set=rule_set("baibian"), replay=structured(REPLAY)), timeout=TIMEOUT)
    assert by_msg.result == by_json.result


def test_score_replay_errors(srv: Running) -> None:
    bad = {**REPLAY, "actions": REPLAY["actions"][:5] + [{"seat": 2, "play": "5S"}]}
    err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(replay_json=json.dumps(bad)))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.fields == ["replay_json.actions[5]"] and "seat 1" in err.message
    err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(
        rule_set=rule_set("huopin"), replay_json=json.dumps(REPLAY)))
    assert err.fields == ["replay_json.variant"]
    for doc in ["{", "[]", json.dumps({**REPLAY, "hands": ["3S"]}),
                json.dumps({k: v for k, v in REPLAY.items() if k != "actions"})]:
        err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(replay_json=doc))
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT, doc
        assert err.fields[0].startswith("replay_json"), doc
    msg = structured(REPLAY)
    msg.actions[1].type = scoring_pb2.ACTION_TYPE_UNSPECIFIED
    err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(replay=msg))
    assert err.fields == ["replay.actions[1].type"]
    err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(rule_set=rule_set("baibian")))
    assert err.fields == ["round"]


def test_score_summary(srv: Running) -> None:
    summary = scoring_pb2.RoundSummary(
        finish_order=[0, 2], stake=3,
        bombs=[scoring_pb2.BombPlay(seat=1, cards=cards("333333")),
               scoring_pb2.BombPlay(seat=0, cards=cards("4444 5555 6666"))])
    reply = srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(rule_set=rule_set("baibian"),
                                                              summary=summary), timeout=TIMEOUT)
    want = score_round("baibian", [0, 2], [["4444 5555 6666"], ["333333"], [], []], stake=3)
    assert result_to_dict(reply.result) == want.to_dict()
    assert reply.result.kind == scoring_pb2.WIN_KIND_DOUBLE


@pytest.mark.parametrize("summary, field", [
    (scoring_pb2.RoundSummary(finish_order=[0]), "summary.finish_order"),
    (scoring_pb2.RoundSummary(finish_order=[0, 7]), "summary.finish_order[1]"),
    (scoring_pb2.RoundSummary(finish_order=[0, 2], bombs=[
        scoring_pb2.BombPlay(seat=1, cards=cards("33"))]), "summary.bombs[0]"),
    (scoring_pb2.RoundSummary(finish_order=[0, 2], bombs=[
        scoring_pb2.BombPlay(seat=5, cards=cards("3333"))]), "summary.bombs[0].seat"),
    (scoring_pb2.RoundSummary(finish_order=[0, 2], stake=0), "summary.stake"),
    (scoring_pb2.RoundSummary(escape=1), "summary.escape"),   # baibian has no escape rule
])
def test_score_summary_errors(srv: Running, summary: scoring_pb2.RoundSummary,
                              field: str) -> None:
    err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(rule_set=rule_set("baibian"),
                                                                   summary=summary))
    assert err.code == grpc.StatusCode.INVALID_ARGUMENT
    assert err.fields == [field]


# ----------------------------------------------------------------------------- ScoreReplays

def test_score_replays_stream_in_order(srv: Running) -> None:
    bad = {**REPLAY, "actions": REPLAY["actions"][:3]}
    docs = [REPLAY, bad, "{", {**REPLAY, "stake": 5}, REPLAY]
    requests = [service_pb2.ScoreReplaysRequest(
        replay_json=d if isinstance(d, str) else json.dumps(d)) for d in docs]
    requests.append(service_pb2.ScoreReplaysRequest(replay=structured(REPLAY)))
    replies = list(srv.stub.ScoreReplays(iter(requests), timeout=TIMEOUT))
    assert [r.index for r in replies] == list(range(len(requests)))
    assert [r.WhichOneof("outcome") for r in replies] == [
        "result", "error", "error", "result", "result", "result"]
    assert replies[1].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    assert decode_status(replies[1].error).reason == "INVALID_REPLAY"
    assert "before the round is over" in replies[1].error.message
    assert replies[3].result.stake == 5
    assert result_to_dict(replies[5].result) == score_replay(REPLAY).to_dict()


def test_score_replays_empty_stream(srv: Running) -> None:
    assert list(srv.stub.ScoreReplays(iter([]), timeout=TIMEOUT)) == []


# ----------------------------------------------------------------------------- variants

def test_list_and_get_variants(srv: Running) -> None:
    listed = srv.stub.ListVariants(service_pb2.ListVariantsRequest(), timeout=TIMEOUT)
    assert [v.id for v in listed.variants] == list(core.BUILTIN)
    assert all(v.builtin for v in listed.variants)
    huopin = srv.stub.GetVariant(service_pb2.GetVariantRequest(rule_set=rule_set("huopin")),
                                 timeout=TIMEOUT).variant
    assert (huopin.chain_min_links, huopin.chain_wrap, huopin.settlement_star_cap) == (
        2, "natural_two", 9)
    assert dict(huopin.kou_by_kind) == {"double": 3, "single": 2, "flat": 1}
    crazy = srv.stub.GetVariant(service_pb2.GetVariantRequest(
        rule_set=rule_set("fengkuang_crazy")), timeout=TIMEOUT).variant
    assert (crazy.decks, crazy.deck_size, crazy.ranks) == (3, 112, "789TJQKA2")
    assert not crazy.HasField("settlement_star_cap")
    assert list(crazy.base_rows["flat"].amounts) == [0, 0, 0, 0]
    # The JSON form round-trips as a custom variant.
    data = json.loads(huopin.variant_json)
    data.update(id="house", chain_min_links=3)
    house = srv.stub.GetVariant(service_pb2.GetVariantRequest(
        rule_set=variants_pb2.RuleSet(custom_json=json.dumps(data))), timeout=TIMEOUT).variant
    assert (house.id, house.chain_min_links, house.builtin) == ("house", 3, False)
    assert house.bomb_order == "huopin" and house.extends == "huopin"
    err = fails(srv.stub.GetVariant, service_pb2.GetVariantRequest(rule_set=rule_set("nope")))
    assert err.code == grpc.StatusCode.NOT_FOUND


def test_deadline_exceeded_is_reported(srv: Running) -> None:
    with pytest.raises(grpc.RpcError) as info:
        srv.stub.BatchClassify(service_pb2.BatchClassifyRequest(
            plays_text=["7777 BJ"] * 9000), timeout=0.000001)
    assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED


# ----------------------------------------------------------------------------- hostile input

_CLIENT_CODES = {grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND}
_texts = st.text(alphabet="3456789TJQKA2SHDCBJ10 +,xs小王", max_size=40)
_codes = st.lists(st.integers(-5, 300), max_size=30)


def _status(call, request) -> grpc.StatusCode:
    try:
        call(request, timeout=TIMEOUT)
        return grpc.StatusCode.OK
    except grpc.RpcError as exc:
        return exc.code()


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=_texts, codes=_codes, variant=st.sampled_from(list(core.BUILTIN) + ["", "x"]),
       kind=st.integers(0, 12), top=st.integers(0, 20))
def test_bad_input_is_never_a_server_error(srv: Running, text: str, codes: list[int],
                                           variant: str, kind: int, top: int) -> None:
    declare = readings_pb2.Declaration(kind=kind, top=top)
    play = cards_pb2.Cards(cards=[c for c in codes if 0 <= c < 2**31])
    stub = srv.stub
    requests = [
        (stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(rule_set=rule_set(variant), play=cards(text),
                                                            declaration=declare)),
        (stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(rule_set=rule_set(variant), play=play)),
        (stub.ComparePlays, service_pb2.ComparePlaysRequest(rule_set=rule_set(variant), current=play,
                                                            play=cards(text), declaration=declare)),
        (stub.EnumerateLegalPlays, service_pb2.EnumerateLegalPlaysRequest(
            rule_set=rule_set(variant), hand=cards(text), to_beat=play, page_size=top, kinds=[kind])),
        (stub.BatchClassify, service_pb2.BatchClassifyRequest(
            rule_set=rule_set(variant), codes=bytes(c % 256 for c in codes),
            lengths=[len(codes) // 2, len(codes) - len(codes) // 2])),
        (stub.ScoreRound, service_pb2.ScoreRoundRequest(replay_json=json.dumps(
            {**REPLAY, "hands": [text, text, text, text], "leader": top % 5}))),
    ]
    for call, request in requests:
        assert _status(call, request) in _CLIENT_CODES, request


def test_concurrent_batches_and_single_calls_agree(srv: Running) -> None:
    """Batches run the classifier without the GIL: concurrent calls must not mix results."""
    import threading

    plays = core.parse_cards("7777 BJ 45678") * 4500
    batch = service_pb2.BatchClassifyRequest(rule_set=rule_set("baibian"), codes=bytes(plays),
                                             lengths=[5, 5] * 4500)
    want = list(srv.stub.BatchClassify(batch, timeout=TIMEOUT).kinds)
    wrong: list[str] = []

    def batches() -> None:
        for _ in range(12):
            if list(srv.stub.BatchClassify(batch, timeout=TIMEOUT).kinds) != want:
                wrong.append("batch")

    def singles() -> None:
        for _ in range(400):
            if classify(srv, "33 44 55").reading.kind != K.KIND_PAIR_CHAIN:
                wrong.append("single")

    threads = [threading.Thread(target=f) for f in (batches, batches, singles, singles)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


# ----------------------------------------------------------------------------- v1 additions

def test_declaration_star_selects_every_reading(srv: Running) -> None:
    """fengkuang 4444 5555 6666 SJ BJ: a 9-star and an 8-star chain bomb, same kind and top;
    kind + top selects the 9-star (first in §7 rule-2 order), the star selects either."""
    play = cards("4444 5555 6666 SJ BJ")
    both = srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("fengkuang"), play=play), timeout=TIMEOUT)
    assert [(r.kind, r.top, r.star) for r in both.readings] == [
        (K.KIND_CHAIN_BOMB, 3, 9), (K.KIND_CHAIN_BOMB, 3, 8)]
    for star in (9, 8):
        reply = srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
            rule_set=rule_set("fengkuang"), play=play, declaration=readings_pb2.Declaration(
                kind=K.KIND_CHAIN_BOMB, top=3, star=star)), timeout=TIMEOUT)
        assert reply.reading.star == star
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("fengkuang"), play=play,
        declaration=readings_pb2.Declaration(kind=K.KIND_CHAIN_BOMB, star=7)))
    assert err.fields == ["declaration"] and err.reason == "ILLEGAL_PLAY"
    # Following: the 8-star reading is declared; it beats a 7-star bomb, not a 9-star one.
    for current, beats in (("7777777", True), ("77777777 BJ", False)):
        reply = srv.stub.ComparePlays(service_pb2.ComparePlaysRequest(
            rule_set=rule_set("fengkuang"), current=cards(current), play=play,
            declaration=readings_pb2.Declaration(kind=K.KIND_CHAIN_BOMB, star=8)),
            timeout=TIMEOUT)
        assert reply.play.star == 8
        assert reply.beats == core.beats(
            core.classify("4444 5555 6666 SJ BJ", "fengkuang").readings[1],
            reply_reading(current), "fengkuang") == beats


def reply_reading(text: str) -> core.Reading:
    return core.classify(text, "fengkuang").primary


def _pages(srv: Running, request: service_pb2.EnumerateLegalPlaysRequest
           ) -> list[service_pb2.EnumerateLegalPlaysResponse]:
    pages = []
    while True:
        reply = srv.stub.EnumerateLegalPlays(request, timeout=TIMEOUT)
        pages.append(reply)
        if not reply.next_page_token:
            return pages
        request.page_token = reply.next_page_token


def test_paging_reads_every_play_past_the_cap() -> None:
    """AIP-158: pages of the server cap (or of page_size) concatenate to the full list,
    which a single response cannot hold; any replica continues another's page."""
    hand = "3 4 5 6 7 7 7 7 8 9 BJ"
    want = [list(p.cards) for p in core.legal_plays(hand, "baibian")]
    assert len(want) > 10
    with running_server(enumeration_cap=10) as a, running_server(enumeration_cap=10) as b:
        request = service_pb2.EnumerateLegalPlaysRequest(hand=cards(hand))
        pages = _pages(a, request)
        assert [len(p.plays) for p in pages[:-1]] == [10] * (len(pages) - 1)
        assert [list(p.cards) for page in pages for p in page.plays] == want
        request = service_pb2.EnumerateLegalPlaysRequest(hand=cards(hand), page_size=7)
        first = a.stub.EnumerateLegalPlays(request, timeout=TIMEOUT)
        request.page_token = first.next_page_token
        second = b.stub.EnumerateLegalPlays(request, timeout=TIMEOUT)   # another replica
        assert [list(p.cards) for p in [*first.plays, *second.plays]] == want[:14]
        # page_size may change between pages; the token names an offset, not a size.
        request.page_size = 3
        third = a.stub.EnumerateLegalPlays(request, timeout=TIMEOUT)
        assert [list(p.cards) for p in third.plays] == want[7:10]


def test_page_tokens_are_checked(srv: Running) -> None:
    request = service_pb2.EnumerateLegalPlaysRequest(hand=cards("3 4 5 6 7 7 7 7 8 9 BJ"),
                                                     page_size=5)
    token = srv.stub.EnumerateLegalPlays(request, timeout=TIMEOUT).next_page_token
    assert token
    altered = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    other_hand = service_pb2.EnumerateLegalPlaysRequest(hand=cards("3 4 5 6 7 7 7 7 8 9"),
                                                        page_size=5, page_token=token)
    other_variant = service_pb2.EnumerateLegalPlaysRequest(
        rule_set=rule_set("huopin"), hand=cards("3 4 5 6 7 7 7 7 8 9 BJ"), page_size=5,
        page_token=token)
    # respellings decode to the same bytes, and are refused as api.md says (issue 19)
    respelled = [token + "==", token + "=", " " + token, token + "\n", token[:8] + " " + token[8:],
                 token.replace("-", "+").replace("_", "/") if {"-", "_"} & set(token) else
                 token + "\t"]
    for bad in (service_pb2.EnumerateLegalPlaysRequest(hand=request.hand, page_token=altered),
                service_pb2.EnumerateLegalPlaysRequest(hand=request.hand, page_token="x" * 500),
                service_pb2.EnumerateLegalPlaysRequest(hand=request.hand, page_token="%%%"),
                *[service_pb2.EnumerateLegalPlaysRequest(hand=request.hand, page_size=5,
                                                         page_token=t) for t in respelled],
                other_hand, other_variant):
        err = fails(srv.stub.EnumerateLegalPlays, bad)
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == ["page_token"]
    err = fails(srv.stub.EnumerateLegalPlays, service_pb2.EnumerateLegalPlaysRequest(
        hand=request.hand, page_size=-1))
    assert err.fields == ["page_size"]
    # The extras (counts, best bomb) do not change the list: the token stays valid.
    same = service_pb2.EnumerateLegalPlaysRequest(hand=request.hand, page_size=5,
                                                  page_token=token, include_counts=True)
    assert srv.stub.EnumerateLegalPlays(same, timeout=TIMEOUT).plays


def test_server_info(srv: Running) -> None:
    from shuangkou.service.version import build_info

    info = srv.stub.GetServerInfo(service_pb2.GetServerInfoRequest(), timeout=TIMEOUT)
    want = build_info()
    assert (info.version, info.python_version, info.grpcio_version, info.core_build) == (
        want["version"], want["python"], want["grpcio"], want["core"])
    assert list(info.variant_ids) == list(core.BUILTIN)


def test_in_band_errors_are_google_rpc_status(srv: Running) -> None:
    """A replay's bad action: ErrorInfo reason INVALID_REPLAY with the action index as
    metadata, a field violation whose description drops the "action N: " prefix."""
    from google.rpc import error_details_pb2

    bad = {**REPLAY, "actions": [REPLAY["actions"][0], {"seat": 3, "pass": True}]}
    (reply,) = srv.stub.ScoreReplays(iter([service_pb2.ScoreReplaysRequest(
        replay_json=json.dumps(bad))]), timeout=TIMEOUT)
    status = reply.error
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0] or \
        status.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.reason == "INVALID_REPLAY" and info.domain == "shuangkou.v1"
    assert dict(info.metadata) == {"action": "1"}
    decoded = decode_status(status)
    assert decoded.field == "replay_json.actions[1]" and decoded.action == 1
    assert status.message == f"action 1: {decoded.detail}"
    assert "Error" not in status.message    # no Python class names on the wire


def test_client_cancellation_is_not_a_server_error() -> None:
    """A call the client gives up on is counted CANCELLED or DEADLINE_EXCEEDED, never
    INTERNAL (an abort raised inside the error wrapper used to become INTERNAL)."""
    import time

    from grpc_helpers import metric_value

    slow = json.dumps({"extends": "huopin", "id": "big", "decks": 4, "joker_copies": 4,
                       "hand_size": 40, "chain_min_links": 2})
    plays = ["3333 4444 5555 6666 SJ SJ SJ SJ BJ BJ BJ BJ"] * 9000
    with running_server() as srv:
        batch = service_pb2.BatchClassifyRequest(
            rule_set=variants_pb2.RuleSet(custom_json=slow), plays_text=plays)
        future = srv.stub.BatchClassify.future(batch, timeout=TIMEOUT)
        time.sleep(0.2)
        future.cancel()
        with pytest.raises(grpc.RpcError) as info:
            # 0.1 s: the batch costs about 0.3 s of CPU here, so the deadline passes while it
            # runs on any host up to three times as fast (0.3 s was met now and then).
            srv.stub.BatchClassify(batch, timeout=0.1)
        assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(play=cards("77")),
                              timeout=TIMEOUT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            text = srv.scrape()
            done = metric_value(text, "grpc_server_handled_total", grpc_method="BatchClassify")
            if done >= 2:
                break
            time.sleep(0.1)
        assert done >= 2, text
        assert metric_value(text, "grpc_server_handled_total", grpc_method="BatchClassify",
                            grpc_code="INTERNAL") == 0
        assert metric_value(text, "grpc_server_handled_total", grpc_method="BatchClassify",
                            grpc_code="OK") == 0


def test_declaration_wilds_select_readings_that_share_kind_top_and_star(srv: Running) -> None:
    """huopin 9999 TTTTT JJJJJ QQQQQ KKKKKK BJ: three 9-star chain bombs with top K; the
    wild joker's rank tells them apart (in any order; set and empty = no wilds)."""
    play = cards("9999 TTTTT JJJJJ QQQQQ KKKKKK BJ")
    readings = srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("huopin"), play=play), timeout=TIMEOUT).readings
    nine = [r for r in readings if r.star == 9]
    assert len(nine) == 3 and len({(r.kind, r.top) for r in nine}) == 1
    for want in nine:
        reply = srv.stub.ClassifyPlay(service_pb2.ClassifyPlayRequest(
            rule_set=rule_set("huopin"), play=play, declaration=readings_pb2.Declaration(
                kind=K.KIND_CHAIN_BOMB, star=9,
                wilds=readings_pb2.WildPlacement(ranks=list(want.wilds)))), timeout=TIMEOUT)
        assert reply.reading == want
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("huopin"), play=play, declaration=readings_pb2.Declaration(
            kind=K.KIND_CHAIN_BOMB, wilds=readings_pb2.WildPlacement())))
    assert err.fields == ["declaration"] and err.code == grpc.StatusCode.INVALID_ARGUMENT
    err = fails(srv.stub.ClassifyPlay, service_pb2.ClassifyPlayRequest(
        rule_set=rule_set("huopin"), play=play, declaration=readings_pb2.Declaration(
            kind=K.KIND_CHAIN_BOMB, wilds=readings_pb2.WildPlacement(ranks=[99]))))
    assert err.fields == ["declaration.wilds.ranks[0]"]


def test_compare_with_a_declared_current_play(srv: Running) -> None:
    """The play on the table stands in its declared reading: fengkuang 4444 5555 6666 SJ BJ
    as its 8-star chain bomb is beaten by an 8-bomb that its 9-star reading beats."""
    eight_bomb = "77777777"
    for star, beats in ((9, False), (8, True)):
        reply = srv.stub.ComparePlays(service_pb2.ComparePlaysRequest(
            rule_set=rule_set("fengkuang"), current=cards("4444 5555 6666 SJ BJ"),
            current_declaration=readings_pb2.Declaration(kind=K.KIND_CHAIN_BOMB, star=star),
            play=cards(eight_bomb)), timeout=TIMEOUT)
        assert reply.current.star == star
        assert reply.beats == core.beats(eight_bomb, reply_reading_of(
            "4444 5555 6666 SJ BJ", star), "fengkuang") == beats
    err = fails(srv.stub.ComparePlays, service_pb2.ComparePlaysRequest(
        current=cards("33"), play=cards("44"),
        current_declaration=readings_pb2.Declaration(kind=K.KIND_STRAIGHT)))
    assert err.fields == ["current_declaration"]


def reply_reading_of(text: str, star: int) -> core.Reading:
    return next(r for r in core.classify(text, "fengkuang").readings if r.star == star)


def test_structured_replay_declarations(srv: Running) -> None:
    """A Replay message's action may declare kind, top, star and the wild placement (the
    core's typed record carries them; the round selects the reading by all four)."""
    replay = structured(REPLAY)
    replay.actions[0].declaration.CopyFrom(readings_pb2.Declaration(
        kind=K.KIND_BOMB, top=4, star=4))
    reply = srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(replay=replay), timeout=TIMEOUT)
    assert result_to_dict(reply.result) == score_replay(REPLAY).to_dict()
    replay.actions[0].declaration.star = 5
    err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(replay=replay))
    assert err.fields == ["replay.actions[0]"] and "action 0" in err.message
    replay.actions[0].declaration.ClearField("star")
    replay.actions[0].declaration.wilds.SetInParent()          # set and empty: no wilds
    reply = srv.stub.ScoreRound(service_pb2.ScoreRoundRequest(replay=replay), timeout=TIMEOUT)
    assert result_to_dict(reply.result) == score_replay(REPLAY).to_dict()
    replay.actions[0].declaration.wilds.ranks.append(5)      # 7777 has no wild to place
    err = fails(srv.stub.ScoreRound, service_pb2.ScoreRoundRequest(replay=replay))
    assert err.fields == ["replay.actions[0]"] and "action 0" in err.message
