"""Card parsing, formatting and deck validation (RULES.md §2, §3; docs/design.md card codes).

Every CardError is checked for what it says: the offending card (or count) and why.
"""

from __future__ import annotations

import random

import pytest
import text_reference
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from randomplays import PlayMaker, deal, full_deck
from reference import VARIANTS, Card, as_cards, deck_problems, parse

from shuangkou import core
from shuangkou.core import CardError, VariantError, _core
from shuangkou.core import cards as vocab

ALL_CODES = [1 + r * 5 + s for r in range(13) for s in range(5)] + [70, 75]


# ----------------------------------------------------------------------------- codes

def test_card_codes() -> None:
    assert core.card_code(4, 0) == 21                # 7S
    assert core.card_code(4) == 25                   # 7 (no suit)
    assert (core.card_rank(64), core.card_suit(64)) == (12, 3)   # 2C
    assert (core.card_rank(75), core.card_suit(75)) == (14, 4)   # BJ
    assert core.RANK_CHARS == "3456789TJQKA2"
    assert core.SUIT_CHARS == "SHDC"
    for code in ALL_CODES:
        assert Card.from_code(code).code == code
        assert core.card_code(core.card_rank(code), core.card_suit(code)) == code


def test_card_code_of_a_suited_joker_is_refused() -> None:
    with pytest.raises(CardError, match="rank 13 and suit 0"):
        core.card_code(13, 0)


def test_one_home_for_the_vocabulary() -> None:
    # core_ext re-exports the cards module's names; _core only imports them
    assert core.card_code is vocab.card_code and core.SEATS == vocab.SEATS == 4
    assert core.RANK_CHARS is vocab.RANK_CHARS and _core.RANK_CHARS is vocab.RANK_CHARS
    assert core.Variant.ranks.fget(core.get_variant("fengkuang_crazy")) == "789TJQKA2"


def test_the_compiled_twin_agrees_with_the_cards_module() -> None:
    # _core.pxd keeps C copies of the code arithmetic for its hot loops: parsing a code
    # accepts exactly the codes vocab.is_card accepts, and reads its rank the same way
    for code in range(0, 80):
        try:
            parsed = core.parse_cards(bytes([code]))
        except CardError:
            assert not vocab.is_card(code)
            continue
        assert vocab.is_card(code) and parsed == [code]
        assert core.classify([code], "baibian").primary.top == vocab.card_rank(code)
    assert (vocab.CARD_SJ, vocab.CARD_BJ, vocab.MAX_CODE) == (70, 75, 75)
    assert core.parse_cards("SJ BJ") == [vocab.CARD_SJ, vocab.CARD_BJ]


def test_the_deck_in_python_and_in_c_agree() -> None:
    # cards.deck / deck_copies and their C twin in cards.pxd (used by the compiled deal check)
    from shuangkou.core._round import deck_exact

    for v in core.list_variants():
        shape = (v.decks, v.lowest_rank, v.joker_copies)
        cards = vocab.deck(*shape)
        assert len(cards) == v.deck_size and cards == sorted(cards)
        assert deck_exact([cards, [], [], []], *shape)
        assert not deck_exact([cards[1:], [], [], []], *shape)
        assert not deck_exact([cards + [vocab.card_code(12)], [], [], []], *shape)


def test_cards_per_rank_in_python_and_in_c_agree() -> None:
    # cards.rank_copies, and its C twin through the compiled state check (a deal with one
    # card of a rank too many is refused naming the deck's count of that rank)
    for v in core.list_variants():
        shape = (v.decks, v.lowest_rank, v.joker_copies)
        cards = vocab.deck(*shape)
        for r in range(vocab.BJ + 1):
            assert vocab.rank_copies(r, *shape) == sum(vocab.card_rank(c) == r for c in cards)
        assert v.copies_per_rank == vocab.rank_copies(vocab.TWO, *shape)
        assert v.deck_size == len(cards)


def test_one_seat_check_in_python_and_in_c() -> None:
    # cards.check_seat's sentence, whether the check ran in Python or in the C twin is_seat
    from shuangkou.core._suggest import choose

    assert [vocab.is_seat(x) for x in (0, 3, 4, -1, True, 1.0, 2**70)] == \
        [True, True, False, False, False, False, False]
    r = core.Round.deal("bianfeng", ["3S", "4S", "5S", "6S"], 0, partial_deal=True)
    for call in (lambda: r.play(4, "4S"), lambda: r.pass_turn(-1),
                 lambda: choose("bianfeng", 7, "3S", [1, 1, 1, 1]),
                 lambda: core.Action(9, "pass")):
        with pytest.raises(core.ShuangkouError, match="^seat must be a seat 0–3; got ") as e:
            call()
        assert e.value.field == "seat"
    with pytest.raises(core.ShuangkouError, match=r"^finish_order\[1\] must be a seat 0–3"):
        core.score_round("bianfeng", [0, 5], [[], [], [], []])


def test_rank_names_and_positions() -> None:
    names = [vocab.rank_name(r) for r in range(15)]
    assert names == list("3456789TJQKA2") + ["SJ", "BJ"]
    assert [vocab.rank_position(n) for n in names] == list(range(15))
    assert vocab.rank_position("10") == vocab.rank_position("t") == 7
    assert vocab.rank_position("sj") == vocab.SJ and vocab.rank_position("1") is None
    assert vocab.is_suited(21) and not vocab.is_suited(25) and not vocab.is_suited(75)


def test_seats() -> None:
    assert [vocab.partner(s) for s in range(4)] == [2, 3, 0, 1]
    assert [vocab.next_seat(s) for s in range(4)] == [1, 2, 3, 0]
    assert vocab.seats_after(3) == (0, 1, 2)
    assert [vocab.team(s) for s in range(4)] == [0, 1, 0, 1]
    assert vocab.same_team(0, 2) and vocab.same_team(3, 1) and not vocab.same_team(0, 1)


# ----------------------------------------------------------------------------- formatting

def test_format_cards() -> None:
    assert core.format_cards([1, 5, 21, 64, 70, 75, 36, 40]) == [
        "3S", "3", "7S", "2C", "SJ", "BJ", "TS", "T"]


def test_every_card_round_trips() -> None:
    texts = core.format_cards(ALL_CODES)
    assert texts == [Card.from_code(c).text for c in ALL_CODES]
    assert core.parse_cards(" ".join(texts)) == ALL_CODES
    assert core.parse_cards(texts) == ALL_CODES          # a list of tokens
    assert core.parse_cards(ALL_CODES) == ALL_CODES      # codes pass through


@pytest.mark.parametrize("variant", VARIANTS)
def test_random_plays_round_trip(variant: str) -> None:
    maker = PlayMaker(variant, random.Random(f"cards/{variant}"))
    for cards in maker.plays(300):
        text = " ".join(core.format_cards(cards))
        assert core.parse_cards(text) == cards
        assert [c.code for c in parse(text)] == cards
        assert core.parse_cards(text.lower().replace(" ", ",")) == cards


# ----------------------------------------------------------------------------- parsing

@pytest.mark.parametrize("text, codes", [
    ("7S 7H BJ", [21, 22, 75]),
    ("7s,7h+bj", [21, 22, 75]),
    ("  BJ  ,+ SJ\t\n", [75, 70]),
    ("10JQKA", [40, 45, 50, 55, 60]),
    ("1010", [40, 40]),
    ("10h TH", [37, 37]),
    ("", []),
    ("   ", []),
])
def test_parse_text(text: str, codes: list[int]) -> None:
    assert core.parse_cards(text) == codes
    assert [c.code for c in parse(text)] == codes


def test_parse_token_lists() -> None:
    assert core.parse_cards(["7S", "bj"]) == [21, 75]
    assert core.parse_cards(("7S",)) == [21]
    assert core.parse_cards(["7777"]) == [25] * 4
    assert core.parse_cards([21, "7S"]) == [21, 21]


@pytest.mark.parametrize("cards, says", [
    ("7SJ", ["'7SJ'", "own"]),
    ("1", ["'1'", "not a rank"]),
    ("7X", ["'7X'", "'X'"]),
    ("XYZ", ["'XYZ'"]),
    ("7 8 Q7S", ["'Q7S'"]),
    ("BJ7", ["'BJ7'"]),
    ([0], ["code 0"]),
    ([76], ["code 76"]),
    ([66], ["code 66"]),               # SJ with a suit
    ([None], ["string or an int", "NoneType"]),
    ([True], ["string or an int", "bool"]),
    ([""], ["empty"]),
    (["77 88"], ["'77 88'"]),          # one list item is one token
])
def test_parse_errors_name_the_card_and_why(cards: object, says: list[str]) -> None:
    with pytest.raises(CardError) as info:
        core.parse_cards(cards)
    assert isinstance(info.value, ValueError)
    assert info.value.field == "cards"
    for part in says:
        assert part in str(info.value), str(info.value)


# Characters card text is made of, and the ones it must refuse or treat as separators:
# ranks and suits in both cases, "10", jokers, Unicode whitespace (NBSP, ideographic space,
# the separators \x1c-\x1f that str.isspace accepts), "," "+", and strangers.
TEXT_ALPHABET = list("3456789TJQKA2tjqka210SHDCshdcXx ,+\t\n") + [
    "\xa0", "\u3000", "\x1c", "\x85", "\u2028", "小", "大", "王", "\u017f", "\U0001f0a1",
    "\x00", "é"]
TOKEN_PIECES = ["7S", "10h", "th", "SJ", "bj", "小王", "大王", "10", "1010", "45678", "7777",
                "7SJ", " 7S ", "", " ", "王", "\xa0BJ", "Ｓ"]


def _outcome(fn: object, cards: object) -> object:
    try:
        return fn(cards)  # type: ignore[operator]
    except CardError as exc:
        return (type(exc), str(exc), exc.field)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TEXT_ALPHABET), max_size=24).map("".join))
def test_compiled_text_grammar_is_the_reference_one(text: str) -> None:
    """The compiled tokenizer splits, reads and refuses text exactly as the Python
    grammar it replaced (tests/text_reference.py): same codes, same messages."""
    assert _outcome(core.parse_cards, text) == _outcome(text_reference.parse, text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(TOKEN_PIECES),
                          st.lists(st.sampled_from(TEXT_ALPHABET), max_size=5).map("".join),
                          st.integers(-2, 80)), max_size=8))
def test_compiled_token_lists_are_the_reference_ones(tokens: list[object]) -> None:
    assert _outcome(core.parse_cards, tokens) == _outcome(text_reference.parse, tokens)


@pytest.mark.parametrize("variant", VARIANTS)
def test_why_cards_form_no_play_is_the_reference_sentence(variant: str) -> None:
    """The compiled reasons (one sentence per reason, built once per rule set) say what the
    Python explanation they replaced said, on the generator's near misses and joker piles."""
    maker = PlayMaker(variant, random.Random(f"why/{variant}"))
    plays = [p for p in maker.plays(3000)] + [[70] * k + [75] * j for k in range(5) for j in range(5)]
    seen = 0
    for cards in plays:
        try:
            core.classify(cards, variant)
        except core.InvalidPlay as exc:
            counts = [0] * 15
            for c in cards:
                counts[core.card_rank(c)] += 1
            want = text_reference.explain_invalid(counts, variant, len(cards))
            assert (str(exc), exc.field, exc.args) == (want, "cards", (want,))
            assert _core.explain_invalid(counts, core.rules_for(variant), len(cards)) == want
            seen += 1
        except CardError:
            pass
    assert seen > 200


def test_text_past_the_card_cap_is_refused_like_the_reference() -> None:
    for text in ("7 " * 257, "7" * 257, "7" * 300 + "X", "7 " * 256 + "SJ"):
        assert _outcome(core.parse_cards, text) == _outcome(text_reference.parse, text)
    with pytest.raises(CardError, match="at most 64"):
        core.classify("7" * 65, "baibian")


@pytest.mark.parametrize("text", ["7SJ", "1", "7X", "XYZ", "BJ7", "77S", "S7", "SJBJ"])
def test_reference_rejects_the_same_tokens(text: str) -> None:
    with pytest.raises(ValueError, match="not a card"):
        parse(text)
    with pytest.raises(CardError):
        core.parse_cards(text)


# ----------------------------------------------------------------------------- deck limits

@pytest.mark.parametrize("variant, cards, says", [
    ("baibian", "777777777", ["'7'", "9 copies", "8"]),
    ("baibian", "7S 7S 7S", ["'7S'", "3 copies", "2"]),
    ("baibian", "7S 7S 7 7 7 7 7 7 7", ["'7'", "9 copies"]),
    ("baibian", "SJ SJ SJ", ["'SJ'", "3 copies", "2"]),
    ("qianbian", "BJ BJ BJ", ["'BJ'", "3 copies"]),
    ("fengkuang_crazy", "7777777777777", ["'7'", "13 copies", "12"]),
    ("fengkuang_crazy", "7S 7S 7S 7S", ["'7S'", "4 copies", "3"]),
    ("fengkuang_crazy", "3", ["'3'", "no 3s"]),
    ("fengkuang_crazy", "7777 6S", ["'6S'", "no 6s"]),
    ("baibian", "3333 4444 5555 6666 7777 8888 9999", ["28 cards", "27"]),
    ("fengkuang_crazy", "7777 8888 9999 TTTT JJJJ QQQQ KKKK A", ["29 cards", "28"]),
])
def test_deck_errors_name_the_card_and_why(variant: str, cards: str, says: list[str]) -> None:
    assert deck_problems(cards, variant)
    for call in (core.validate_hand, core.classify):
        with pytest.raises(CardError) as info:
            call(cards, variant)
        for part in says:
            assert part in str(info.value), str(info.value)


@pytest.mark.parametrize("variant", VARIANTS)
def test_dealt_hands_are_valid(variant: str) -> None:
    v = core.get_variant(variant)
    assert len(full_deck(variant)) == v.deck_size
    for hand in deal(variant, random.Random(variant)):
        assert len(hand) == v.hand_size
        assert core.validate_hand(hand, variant) == hand
        assert core.validate_hand(" ".join(core.format_cards(hand)), v) == hand
        assert not deck_problems(hand, variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_validate_hand_agrees_with_reference(variant: str) -> None:
    """Dealt hands cut down and padded with random cards: CardError exactly when the
    reference finds a deck problem."""
    rng = random.Random(f"validate/{variant}")
    v = core.get_variant(variant)
    any_card = [c for c in range(1, 76) if c <= 65 or c in (70, 75)]
    errors = 0
    for _ in range(400):
        hand = rng.sample(deal(variant, rng)[0], rng.randint(0, v.hand_size))
        hand += rng.choices(any_card, k=rng.randint(0, 4))
        problems = deck_problems(hand, variant)
        try:
            core.validate_hand(hand, variant)
        except CardError:
            errors += 1
            assert problems, core.format_cards(hand)
        else:
            assert not problems, (problems, core.format_cards(hand))
    assert 20 < errors < 380   # both outcomes well exercised


def test_validate_hand_unknown_variant() -> None:
    with pytest.raises(VariantError, match="unknown variant 'nope'") as info:
        core.validate_hand("7777", "nope")
    assert info.value.field == "variant"


def test_reference_parser_basics() -> None:
    assert as_cards([21, 75]) == [Card(4, "S"), Card(14)]
    assert [c.text for c in parse("10h tjq sj")] == ["TH", "T", "J", "Q", "SJ"]


def test_vocabulary_doctests() -> None:
    import doctest

    result = doctest.testmod(vocab)
    assert result.attempted > 0 and result.failed == 0


def test_batch_errors_for_impossible_cards_are_classifys() -> None:
    """classify_batch reports, per invalid play, exactly what classify raises for it."""
    plays = [b"", bytes([21] * 3), bytes([1] * 28), bytes([5] * 70), bytes([21, 0, 22]),
             bytes([21, 66]), bytes([5] * 9), bytes([70, 75]), bytes([21, 22])]
    result = core.classify_batch(b"".join(plays), [len(p) for p in plays], "baibian")
    assert sorted(result.errors) == list(range(len(plays) - 1))   # all but the last pair
    for i, play in enumerate(plays[:-1]):
        with pytest.raises(core.ShuangkouError) as err:
            core.classify(play, "baibian")
        got = result.errors[i]
        assert (type(got), str(got), got.field) == (type(err.value), str(err.value), err.value.field)
    assert isinstance(result.errors[0], core.InvalidPlay)      # no cards
    assert isinstance(result.errors[3], CardError)                 # more than 64 cards
    assert result.valid == 1 and result.kind[-1] == core.KINDS.index("pair")


def test_a_batch_with_a_time_budget_stops_with_the_plays_done() -> None:
    """classify_batch(timeout=) stops once the budget is spent and returns a prefix of what
    the whole batch gives (columns and errors alike); no budget or a generous one: all."""
    heavy = core.load_variant({"id": "heavy", "extends": "huopin", "decks": 4,
                               "joker_copies": 4, "hand_size": 40, "chain_min_links": 2})
    run = [1 + r * 5 + s for r in range(2, 10) for s in range(4)]      # 5555 … TTTT, 32 cards
    plays = [run + [70] * 4 + [75] * 4, [21, 27], run[:4] + [70] * 8] * 20
    buf = bytes(c for p in plays for c in p)
    lengths = [len(p) for p in plays]
    whole = core.classify_batch(buf, lengths, heavy)
    part = core.classify_batch(buf, lengths, heavy, timeout=1e-9)
    assert 1 <= part.plays < whole.plays
    for column in whole:
        assert list(part[column]) == list(whole[column][:part.plays])
    assert list(part.errors) == [i for i in whole.errors if i < part.plays]
    assert all(str(part.errors[i]) == str(whole.errors[i]) for i in part.errors)
    assert core.classify_batch(buf, lengths, heavy, timeout=60).plays == whole.plays
    for bad in ("soon", float("nan"), object()):
        with pytest.raises(core.InvalidPlay, match="timeout"):
            core.classify_batch(buf, lengths, heavy, timeout=bad)  # type: ignore[arg-type]


def test_batch_errors_is_a_mapping_built_on_demand() -> None:
    plays = [[21, 22], [21, 27], [0], [21, 27, 33]]
    buf = bytearray(c for p in plays for c in p)
    result = core.classify_batch(buf, [len(p) for p in plays], "baibian")
    buf[:] = bytes(len(buf))       # the caller's buffer changes: the errors do not
    errors = result.errors
    assert list(errors) == [1, 2, 3] and len(errors) == 3 and 0 not in errors and 9 not in errors
    assert "x" not in errors and errors.get(0) is None
    assert errors[1] is errors[1]           # built once, kept
    assert isinstance(errors[2], CardError) and "code 0" in str(errors[2])
    assert dict(errors) == {i: errors[i] for i in (1, 2, 3)}
    with pytest.raises(KeyError):
        errors[0]
