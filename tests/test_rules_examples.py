"""Every example and table row of RULES.md §2–§8, against the core AND the reference twin.

Each test is named after its section (``test_s7_...`` for §7). A check runs on both
implementations, so both are pinned to the rule book, not just to each other:

* ``expect_reading``: the primary reading (kind + pattern) of both, and identical reading lists;
* ``expect_invalid`` / ``expect_card_error``: both reject, with the core's message checked;
* ``expect_beats``: ``core.beats`` and ``reference.beats_ref`` agree with the rule book.
"""

from __future__ import annotations

import re

import pytest
from reference import (
    BJ_WILD,
    BOTH_WILD,
    VARIANTS,
    Card,
    RefCardError,
    beats_ref,
    classify_ref,
    codes,
    deck_problems,
    parse,
    play_reading_ref,
    reading_diff,
    view,
)

from shuangkou import core
from shuangkou.core import CardError, Declaration, IllegalPlay, InvalidPlay
from shuangkou.core.cards import rank_name

FULL_DECK = tuple(v for v in VARIANTS if v != "fengkuang_crazy")
WRAP = ("bianfeng", "bianfeng_lishui", "huopin")
NO_WRAP = tuple(v for v in VARIANTS if v not in WRAP)
BIANFENG = ("bianfeng", "bianfeng_lishui")
FENGKUANG = ("fengkuang", "fengkuang_crazy")


# ----------------------------------------------------------------------------- helpers

def pattern(text: str) -> tuple[tuple[int, int], ...]:
    """'3333 44444 5555' -> ((0, 4), (1, 5), (2, 4)): ranks in the order written."""
    counts: dict[int, int] = {}
    for c in parse(text):
        counts[c.rank] = counts.get(c.rank, 0) + 1
    return tuple(counts.items())


def expect_reading(cards: str, variant: str, kind: str, shape: str | None = None,
                   star: int | None = None) -> core.Reading:
    """Both implementations read ``cards`` with this primary kind (and pattern, star)."""
    diff = reading_diff(cards, variant)
    assert diff is None, diff
    primary = core.classify(cards, variant).primary
    ref = classify_ref(cards, variant)[0]
    for r in (primary, ref):
        assert r.kind == kind, (cards, variant, view(r))
        if shape is not None:
            assert tuple(map(tuple, r.ranks)) == pattern(shape), (cards, variant, view(r))
        if star is not None:
            assert r.star == star, (cards, variant, view(r))
    return primary


def expect_invalid(cards: str, variant: str, why: str | None = None) -> None:
    """Both say the cards form no play; the core's reason matches ``why`` (a regex)."""
    assert not deck_problems(cards, variant)
    assert classify_ref(cards, variant) == [], (cards, variant)
    with pytest.raises(InvalidPlay, match=why) as info:
        core.classify(cards, variant)
    assert str(info.value), "InvalidPlay must say why"


def expect_card_error(cards: str, variant: str, card: str, why: str) -> None:
    """Both reject the cards as impossible input; the core's message names card and reason."""
    try:
        problems = deck_problems(cards, variant)
    except RefCardError:
        problems = ["unparseable"]
    assert problems, (cards, variant)
    for call in (lambda: core.classify(cards, variant),
                 lambda: core.validate_hand(cards, variant)):
        with pytest.raises(CardError) as info:
            call()
        message = str(info.value)
        assert card in message and re.search(why, message), message


def expect_beats(b: str, a: str, variant: str, expected: bool) -> None:
    """b played on a (a's primary stands) beats it or not, in both implementations."""
    assert beats_ref(b, a, variant) is expected, ("reference", b, a, variant)
    assert core.beats(b, a, variant) is expected, ("core", b, a, variant)


def expect_order(stronger: str, weaker: str, variant: str) -> None:
    """stronger beats weaker and not the other way round."""
    expect_beats(stronger, weaker, variant, True)
    expect_beats(weaker, stronger, variant, False)


def expect_tie(x: str, y: str, variant: str) -> None:
    """§8: equal keys — neither beats the other."""
    expect_beats(x, y, variant, False)
    expect_beats(y, x, variant, False)


# ----------------------------------------------------------------------------- §2 cards

@pytest.mark.parametrize("text, expected", [
    ("7", [Card(4)]),
    ("7S", [Card(4, "S")]),
    ("10H", [Card(7, "H")]),
    ("TH", [Card(7, "H")]),
    ("SJ", [Card(13)]),
    ("BJ", [Card(14)]),
    ("7777", [Card(4)] * 4),
    ("45678", [Card(r) for r in range(1, 6)]),
    ("10JQKA", [Card(r) for r in range(7, 12)]),
    ("7 7S,10H+SJ  BJ", [Card(4), Card(4, "S"), Card(7, "H"), Card(13), Card(14)]),
    ("77+8+9+BJ+BJ", [Card(4), Card(4), Card(5), Card(6), Card(14), Card(14)]),
    ("7s sj bj 10h tjq", [Card(4, "S"), Card(13), Card(14), Card(7, "H"), Card(7), Card(8),
                          Card(9)]),
    ("3 A 2", [Card(0), Card(11), Card(12)]),
])
def test_s2_notation(text: str, expected: list[Card]) -> None:
    assert parse(text) == expected
    assert core.parse_cards(text) == [c.code for c in expected]


def test_s2_rank_positions_and_codes() -> None:
    """Rank positions 3 = 0 … A = 11, 2 = 12; card codes per docs/design.md."""
    assert [c.rank for c in parse("3 4 5 6 7 8 9 T J Q K A 2 SJ BJ")] == list(range(15))
    assert core.parse_cards("3S 3 7S 2C SJ BJ") == [1, 5, 21, 64, 70, 75]
    assert codes("3S 3 7S 2C SJ BJ") == [1, 5, 21, 64, 70, 75]


@pytest.mark.parametrize("text", ["7SJ", "1", "11", "7X", "X", "S7", "SJBJ", "77S", "BJ7"])
def test_s2_notation_invalid_tokens(text: str) -> None:
    with pytest.raises(RefCardError):
        parse(text)
    with pytest.raises(CardError, match=re.escape(repr(text))):
        core.parse_cards(text)


def test_s2_jokers_are_tokens_of_their_own() -> None:
    with pytest.raises(CardError, match="own"):
        core.parse_cards("7SJ")


@pytest.mark.parametrize("variant", VARIANTS)
def test_s2_joker_order(variant: str) -> None:
    """BJ > SJ > 2 as singles, and as pairs."""
    expect_order("BJ", "SJ", variant)
    expect_order("SJ", "2", variant)
    expect_order("2", "A", variant)
    expect_order("BJ BJ", "SJ SJ", variant)
    expect_order("SJ SJ", "22", variant)


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s2_suits_never_matter(variant: str) -> None:
    for suited, plain in [("7S 7H", "77"), ("3S 4H 5D 6C 7S", "34567"),
                          ("9S 9H 9D 9C BJ", "9999 BJ")]:
        assert [view(r) for r in core.classify(suited, variant).readings] == [
            view(r) for r in core.classify(plain, variant).readings]
        assert classify_ref(suited, variant) == classify_ref(plain, variant)
    expect_tie("7S 7H", "7D 7C", variant)


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s2_deck_limits_two_decks(variant: str) -> None:
    """A rank at most 8 times, a suited face at most twice, each joker at most twice."""
    core.validate_hand("77777777", variant)
    expect_card_error("777777777", variant, "7", "9 copies")
    core.validate_hand("7S 7S", variant)
    expect_card_error("7S 7S 7S", variant, "7S", "3 copies")
    core.validate_hand("SJ SJ BJ BJ", variant)
    expect_card_error("SJ SJ SJ", variant, "SJ", "3 copies")
    expect_card_error("BJ BJ BJ", variant, "BJ", "3 copies")
    # A suitless card counts only toward its rank's limit.
    core.validate_hand("7S 7S 7 7 7 7 7 7", variant)
    assert not deck_problems("7S 7S 7 7 7 7 7 7", variant)
    expect_card_error("7S 7S 7 7 7 7 7 7 7", variant, "7", "9 copies")


def test_s2_deck_limits_three_decks() -> None:
    variant = "fengkuang_crazy"
    core.validate_hand("777777777777", variant)
    expect_card_error("7777777777777", variant, "7", "13 copies")
    core.validate_hand("7S 7S 7S", variant)
    expect_card_error("7S 7S 7S 7S", variant, "7S", "4 copies")
    expect_card_error("SJ SJ SJ", variant, "SJ", "3 copies")


@pytest.mark.parametrize("variant", VARIANTS)
def test_s2_play_never_more_cards_than_a_hand(variant: str) -> None:
    size = core.get_variant(variant).hand_size
    assert size == (28 if variant == "fengkuang_crazy" else 27)
    cards = [c.text for c in parse("7777 8888 9999 TTTT JJJJ QQQQ KKKK AAAA 2222")]
    core.validate_hand(" ".join(cards[:size]), variant)
    expect_card_error(" ".join(cards[:size + 1]), variant, str(size + 1), f"at most {size}")


@pytest.mark.parametrize("card", ["3", "4S", "5", "6H"])
def test_s2_ranks_absent_from_the_crazy_deck(card: str) -> None:
    expect_card_error(card, "fengkuang_crazy", card, "no")
    expect_card_error(f"7777 {card}", "fengkuang_crazy", card, "no")


# ----------------------------------------------------------------------------- §3 decks

@pytest.mark.parametrize("variant", VARIANTS)
def test_s3_decks(variant: str) -> None:
    v = core.get_variant(variant)
    crazy = variant == "fengkuang_crazy"
    assert v.deck_size == (112 if crazy else 108)
    assert v.hand_size * 4 == v.deck_size
    assert v.ranks == ("789TJQKA2" if crazy else "3456789TJQKA2")
    assert v.copies_per_rank == (12 if crazy else 8)
    assert v.joker_copies == 2


# ----------------------------------------------------------------------------- §4 wilds

@pytest.mark.parametrize("variant", FULL_DECK)
def test_s4_big_joker_is_wild_everywhere(variant: str) -> None:
    expect_reading("7 BJ", variant, "pair", "77")
    expect_reading("77 BJ", variant, "triple", "777")
    expect_reading("2 BJ", variant, "pair", "22")


@pytest.mark.parametrize("variant", BOTH_WILD)
def test_s4_small_joker_wild_in_both_wild_variants(variant: str) -> None:
    expect_reading("7 SJ", variant, "pair", "77")
    expect_reading("77 SJ BJ", variant, "bomb", "7777", star=4)
    expect_reading("7777 SJ BJ", variant, "bomb", "777777", star=6)


@pytest.mark.parametrize("variant", BJ_WILD)
def test_s4_non_wild_small_joker_mixed_is_invalid(variant: str) -> None:
    expect_invalid("7 SJ", variant, "SJ is not wild")
    expect_invalid("7777 SJ", variant, "SJ")
    expect_invalid("7777 SJ BJ", variant, "SJ")
    expect_invalid("4567 SJ", variant, "SJ")


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s4_every_joker_in_a_mixed_play_is_wild(variant: str) -> None:
    expect_reading("7 BJ BJ", variant, "triple", "777")
    expect_reading("77 BJ BJ", variant, "bomb", "7777", star=4)
    if variant in BOTH_WILD:
        expect_reading("7 SJ BJ", variant, "triple", "777")
        expect_reading("7 SJ SJ BJ", variant, "bomb", "7777", star=4)


def test_s4_wilds_stand_only_for_ranks_of_the_deck() -> None:
    """In fengkuang_crazy a wild is 7…2, never 3…6."""
    readings = core.classify("789T BJ", "fengkuang_crazy").readings
    assert [tuple(map(tuple, r.ranks)) for r in readings] == [pattern("789TJ")]
    assert reading_diff("789T BJ", "fengkuang_crazy") is None
    expect_reading("7 BJ", "fengkuang_crazy", "pair", "77")
    chains = core.classify("8888 9999 SJ SJ BJ BJ", "fengkuang_crazy").readings
    assert [tuple(map(tuple, r.ranks)) for r in chains] == [pattern("8888 9999 TTTT"),
                                                            pattern("7777 8888 9999")]
    assert reading_diff("8888 9999 SJ SJ BJ BJ", "fengkuang_crazy") is None


@pytest.mark.parametrize("variant", VARIANTS)
def test_s4_wilds_exceed_deck_copies(variant: str) -> None:
    """Eight 4s + a wild = a nine-card bomb (§4, §12.2)."""
    eight = "8" if variant == "fengkuang_crazy" else "4"
    expect_reading(eight * 8 + " BJ", variant, "bomb", eight * 9, star=9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_s4_all_joker_plays_read_naturally(variant: str) -> None:
    assert expect_reading("SJ", variant, "single").top == 13
    assert expect_reading("BJ", variant, "single").top == 14
    assert expect_reading("SJ SJ", variant, "pair").top == 13
    assert expect_reading("BJ BJ", variant, "pair").top == 14
    for three in ("SJ SJ BJ", "SJ BJ BJ"):
        expect_reading(three, variant, "joker_bomb_3", star=6)
    expect_reading("SJ SJ BJ BJ", variant, "joker_bomb_4", star=7)
    expect_invalid("SJ BJ", variant, "not a pair")


@pytest.mark.parametrize("variant", BOTH_WILD)
def test_s4_either_joker_as_wild_is_equally_strong(variant: str) -> None:
    """9 T J Q BJ = 9 T J Q SJ where both are wild."""
    assert reading_diff("9TJQ BJ", variant) is None
    assert [view(r) for r in core.classify("9TJQ BJ", variant).readings] == [
        view(r) for r in core.classify("9TJQ SJ", variant).readings]
    assert classify_ref("9TJQ BJ", variant) == classify_ref("9TJQ SJ", variant)
    expect_tie("9TJQ BJ", "9TJQ SJ", variant)
    expect_tie("8888 SJ", "8888 BJ", variant)


# ----------------------------------------------------------------------------- §5 ordinary plays

@pytest.mark.parametrize("variant", FULL_DECK)
def test_s5_ordinary_types(variant: str) -> None:
    expect_reading("7", variant, "single", "7")
    expect_reading("2", variant, "single", "2")
    expect_reading("77", variant, "pair", "77")
    expect_reading("777", variant, "triple", "777")
    expect_reading("222", variant, "triple", "222")
    expect_reading("34567", variant, "straight", "34567")
    expect_reading("3456789TJQKA", variant, "straight", "3456789TJQKA")
    expect_reading("334455", variant, "pair_chain", "334455")
    expect_reading("QQKKAA", variant, "pair_chain", "QQKKAA")
    expect_reading("333444555", variant, "triple_chain", "333444555")
    expect_reading("QQQKKKAAA", variant, "triple_chain", "QQQKKKAAA")


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s5_too_short_or_no_such_type(variant: str) -> None:
    expect_invalid("3456", variant)
    expect_invalid("3344", variant)
    expect_invalid("333444", variant)
    expect_invalid("3 5 7", variant, "three distinct ranks and no wild")
    expect_invalid("77788", variant)         # no three-with-two
    expect_invalid("777888 99TT", variant)   # no airplane with wings
    expect_invalid("7777 89", variant)       # no four-with-two
    expect_invalid("34568", variant)         # not consecutive
    expect_invalid("3345 6", variant)        # not one card each


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s5_two_and_jokers_never_in_runs_and_no_wrap(variant: str) -> None:
    expect_invalid("JQKA2", variant, "2 cannot be in a straight")
    expect_invalid("QKA23", variant, "2")
    expect_invalid("A2345", variant, "2")
    expect_invalid("KKAA22", variant, "2")
    expect_invalid("KKKAAA222", variant, "2")
    expect_invalid("22 33 44", variant, "2")


def test_s5_crazy_runs_within_7_to_a() -> None:
    expect_reading("789TJ", "fengkuang_crazy", "straight", "789TJ")
    expect_reading("778899", "fengkuang_crazy", "pair_chain", "778899")
    expect_reading("789TJQKA", "fengkuang_crazy", "straight", "789TJQKA")
    expect_invalid("TJQKA2", "fengkuang_crazy", "2")


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s5_ordinary_beats_same_type_same_count_higher_top(variant: str) -> None:
    expect_order("45678", "34567", variant)
    expect_tie("34567", "3S 4 5 6 7", variant)
    expect_beats("456789", "34567", variant, False)    # different card count
    expect_beats("45678", "345678", variant, False)
    expect_order("88", "77", variant)
    expect_beats("88", "777", variant, False)          # different type
    expect_beats("888", "77", variant, False)
    expect_order("445566", "334455", variant)
    expect_beats("445566", "33445566", variant, False)
    expect_order("444555666", "333444555", variant)
    expect_order("A", "K", variant)
    expect_tie("7", "7", variant)
    expect_beats("34567", "33", variant, False)


# ----------------------------------------------------------------------------- §6 bombs

@pytest.mark.parametrize("variant", FULL_DECK)
def test_s6_n_bomb_stars(variant: str) -> None:
    for n in range(4, 9):
        expect_reading("7" * n, variant, "bomb", "7" * n, star=n)
    expect_reading("2222", variant, "bomb", "2222", star=4)


@pytest.mark.parametrize("variant", VARIANTS)
def test_s6_joker_bomb_stars(variant: str) -> None:
    expect_reading("SJ SJ BJ", variant, "joker_bomb_3", star=6)
    expect_reading("SJ BJ BJ", variant, "joker_bomb_3", star=6)
    expect_reading("SJ SJ BJ BJ", variant, "joker_bomb_4", star=7)


# The chain-bomb table of §6: min Y, per-rank counts, X, may contain 2.
CHAIN_TABLE = {
    "baibian": (3, "equal", None, False),
    "bianfeng": (3, "equal", None, True),
    "bianfeng_lishui": (3, "equal", None, True),
    "fengkuang": (3, "any", max, False),
    "fengkuang_crazy": (3, "any", max, False),
    "qianbian": (3, "any", min, False),
    "huopin": (2, "any", min, True),
}


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s6_chain_bomb_table(variant: str) -> None:
    min_y, counts, x_of, wraps = CHAIN_TABLE[variant]
    chain = expect_reading("3333 4444 5555", variant, "chain_bomb", "3333 4444 5555", star=7)
    assert chain.regular and chain.phase == 4 and chain.length == 3
    expect_reading("55555 66666 77777 88888", variant, "chain_bomb", star=9)
    if min_y == 2:
        expect_reading("3333 4444", variant, "chain_bomb", "3333 4444", star=6)
    else:
        expect_invalid("3333 4444", variant)
    if counts == "equal":
        expect_invalid("3333 44444 5555", variant, "same count")
    else:
        irregular = expect_reading("3333 44444 5555", variant, "chain_bomb",
                                   "3333 44444 5555", star=x_of(4, 5) + 3)
        assert not irregular.regular and irregular.phase == x_of(4, 5)
    if wraps:
        expect_reading("KKKK AAAA 2222", variant, "chain_bomb", "KKKK AAAA 2222", star=7)
    else:
        expect_invalid("KKKK AAAA 2222", variant, "2")


def test_s6_irregular_chain_stars() -> None:
    """§12.6: huopin/qianbian take the smallest count, fengkuang the largest."""
    expect_reading("4444 55555 66666", "huopin", "chain_bomb", star=7)     # seed 004
    expect_reading("3333 4444444 5555", "qianbian", "chain_bomb", star=7)  # seed 003
    expect_reading("3333 4444444 5555", "fengkuang", "chain_bomb", star=10)
    expect_reading("7777 8888 99999", "fengkuang_crazy", "chain_bomb", star=8)


def test_s6_crazy_chains_within_7_to_a() -> None:
    expect_reading("7777 8888 9999", "fengkuang_crazy", "chain_bomb", "7777 8888 9999", star=7)
    expect_reading("QQQQ KKKK AAAA", "fengkuang_crazy", "chain_bomb", star=7)
    expect_invalid("KKKK AAAA 2222", "fengkuang_crazy", "2")


@pytest.mark.parametrize("variant", WRAP)
@pytest.mark.parametrize("chain", ["KKKK AAAA 2222", "AAAA 2222 3333", "QQQQ KKKK AAAA 2222",
                                   "KKKK AAAA 2222 3333", "AAAA 2222 3333 4444"])
def test_s6_wrap_around_chains(variant: str, chain: str) -> None:
    r = expect_reading(chain, variant, "chain_bomb", chain)
    assert r.star == 4 + len(chain.split())
    assert r.wrap_class == (1 if chain.endswith("2222") else 0)


@pytest.mark.parametrize("variant", WRAP)
def test_s6_two_only_together_with_ace(variant: str) -> None:
    expect_invalid("2222 3333 4444", variant, "only together with A")
    expect_invalid("2222 3333 4444 5555", variant, "A")


@pytest.mark.parametrize("variant", NO_WRAP)
@pytest.mark.parametrize("chain", ["KKKK AAAA 2222", "AAAA 2222 3333", "2222 3333 4444"])
def test_s6_no_wrap_elsewhere(variant: str, chain: str) -> None:
    if variant == "fengkuang_crazy" and "3" in chain:
        expect_card_error(chain, variant, "3", "no")
    else:
        expect_invalid(chain, variant, "2")


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s6_longest_chain_from_a_hand(variant: str) -> None:
    """A 27-card hand holds at most six 4-card bombs: a 6-link chain bomb."""
    expect_reading("3333 4444 5555 6666 7777 8888", variant, "chain_bomb", star=10)


@pytest.mark.parametrize("variant, cards, star", [
    ("baibian", "44444444 BJ BJ", 10),
    ("bianfeng", "44444444 BJ BJ", 10),
    ("bianfeng_lishui", "44444444 BJ BJ", 10),
    ("fengkuang", "44444444 SJ SJ BJ BJ", 12),
    ("qianbian", "44444444 SJ SJ BJ BJ", 12),
    ("huopin", "44444444 SJ SJ BJ BJ", 12),
    ("fengkuang_crazy", "777777777777 SJ SJ BJ BJ", 16),
])
def test_s6_largest_n_bomb(variant: str, cards: str, star: int) -> None:
    expect_reading(cards, variant, "bomb", star=star)


def test_s6_huopin_star_uncapped_for_bomb_order() -> None:
    """The 9-star cap is for settlement only: a 12-card bomb beats a 10-card one."""
    expect_reading("44444444 SJ SJ BJ BJ", "huopin", "bomb", star=12)
    expect_order("33333333 SJ SJ BJ BJ", "AAAAAAAA SJ BJ", "huopin")


# ----------------------------------------------------------------------------- §7 reading

@pytest.mark.parametrize("variant", ["baibian", "bianfeng", "bianfeng_lishui"])
def test_s7_seed_examples_baibian_bianfeng(variant: str) -> None:
    expect_reading("7777+BJ", variant, "bomb", "77777", star=5)
    expect_reading("45678+BJ", variant, "straight", "456789")
    expect_reading("77899+BJ", variant, "pair_chain", "778899")
    expect_reading("77+8+9+BJ+BJ", variant, "pair_chain", "778899")


def test_s7_seed_examples_huopin() -> None:
    v = "huopin"
    expect_reading("33445+BJ", v, "pair_chain", "334455")
    expect_reading("5679+BJ", v, "straight", "56789")
    expect_invalid("3344+BJ", v)
    expect_reading("5678+BJ", v, "straight", "56789")
    expect_reading("444+BJ", v, "bomb", "4444", star=4)
    expect_reading("44444444+BJ", v, "bomb", "444444444", star=9)
    expect_reading("33334444555+BJ", v, "chain_bomb", "3333 4444 5555", star=7)


@pytest.mark.parametrize("variant", FULL_DECK)
def test_s7_primary_highest_top_within_a_type(variant: str) -> None:
    """`4 5 6 7 8 BJ` → 4 5 6 7 8 9, not 3…8; both readings are listed."""
    expect_reading("4 5 6 7 8 BJ", variant, "straight", "456789")
    readings = core.classify("4 5 6 7 8 BJ", variant).readings
    assert [tuple(map(tuple, r.ranks)) for r in readings] == [pattern("456789"),
                                                               pattern("345678")]
    assert [r.wilds for r in readings] == [(6,), (0,)]


@pytest.mark.parametrize("variant", ("fengkuang", "qianbian", "huopin"))
def test_s7_primary_strongest_bomb_then_all_other_readings(variant: str) -> None:
    """`77 + four wilds`: the 6-bomb is primary; pair chains and… follow in rule-2 order."""
    readings = core.classify("77 SJ SJ BJ BJ", variant).readings
    assert reading_diff("77 SJ SJ BJ BJ", variant) is None
    assert [(r.kind, tuple(map(tuple, r.ranks))) for r in readings] == [
        ("bomb", pattern("777777")),
        ("pair_chain", pattern("778899")),
        ("pair_chain", pattern("667788")),
        ("pair_chain", pattern("556677")),
    ]


@pytest.mark.parametrize("variant", ("fengkuang", "qianbian", "huopin"))
def test_s7_type_order_then_top(variant: str) -> None:
    """`7 8 + four wilds`: pair chains before straights, each highest top first."""
    readings = core.classify("78 SJ SJ BJ BJ", variant).readings
    assert reading_diff("78 SJ SJ BJ BJ", variant) is None
    assert [(r.kind, tuple(map(tuple, r.ranks))) for r in readings] == [
        ("pair_chain", pattern("778899")),
        ("pair_chain", pattern("667788")),
        ("straight", pattern("789TJQ")),
        ("straight", pattern("6789TJ")),
        ("straight", pattern("56789T")),
        ("straight", pattern("456789")),
        ("straight", pattern("345678")),
    ]


@pytest.mark.parametrize("variant", FENGKUANG + ("qianbian",))
def test_s7_lowest_placement_reported(variant: str) -> None:
    """3333 4444 5555 + wild: the wild as 3, 4 or 5 gives one reading; the lowest is reported."""
    cards = "7777 8888 9999 BJ" if variant == "fengkuang_crazy" else "3333 4444 5555 BJ"
    low = "77777 8888 9999" if variant == "fengkuang_crazy" else "33333 4444 5555"
    readings = core.classify(cards, variant).readings
    assert len(readings) == 1
    expect_reading(cards, variant, "chain_bomb", low, star=8 if variant in FENGKUANG else 7)


def test_s7_lowest_placement_in_a_wrap_chain_huopin() -> None:
    """AAAA 2222222 33333 4444 + wild: the wild as 2 or as 3 both list the ranks 2 3 A 4
    (§8 huopin), so they are one reading; the lowest rank position (3) is reported, although
    the 2 comes first in the chain A 2 3 4."""
    r = expect_reading("AAAA 2222222 33333 4444 SJ", "huopin", "chain_bomb", star=8)
    assert r.ranks == pattern("AAAAA 2222222 33333 4444")
    readings = core.classify("AAAA 2222222 33333 4444 SJ", "huopin").readings
    assert [r.wilds for r in readings] == [(11,), (1,), (0,)]


@pytest.mark.parametrize("variant", VARIANTS)
def test_s7_invalid_says_why(variant: str) -> None:
    if variant != "fengkuang_crazy":
        expect_invalid("3 5 7", variant, "distinct ranks")
        expect_invalid("33 4", variant)
    expect_invalid("SJ BJ", variant, "not a pair")
    expect_invalid("JQKA2", variant, "2 cannot be in a straight")
    with pytest.raises(InvalidPlay, match="no cards"):
        core.classify("", variant)


@pytest.mark.parametrize("variant", ("fengkuang", "qianbian", "huopin"))
def test_s7_declare_any_reading_when_leading(variant: str) -> None:
    """A bomb-capable play may be declared as a non-bomb reading when leading (rule 4)."""
    cards = "77 SJ SJ BJ BJ"
    declared = core.play_reading(cards, variant, declare="pair_chain")
    assert declared.kind == "pair_chain" and tuple(map(tuple, declared.ranks)) == pattern("778899")
    assert view(declared) == view(play_reading_ref(cards, variant, declare="pair_chain"))
    only = core.classify(cards, variant, declare="pair_chain").readings
    assert [r.kind for r in only] == ["pair_chain"] * 3
    assert core.play_reading(cards, variant).kind == "bomb"   # undeclared: the primary
    with pytest.raises(IllegalPlay, match="straight"):
        core.play_reading(cards, variant, declare="straight")
    assert play_reading_ref(cards, variant, declare="straight") is None


@pytest.mark.parametrize("variant", ("fengkuang", "qianbian", "huopin"))
def test_s7_follow_any_reading_beats_and_which_stands(variant: str) -> None:
    """Rules 5/6: legal if any reading beats; the primary stands if it beats, else the first
    reading in rule-2 order that beats; a declared reading must beat."""
    cards = "78 SJ SJ BJ BJ"            # pair chains 778899 / 667788, straights …Q … 8
    straight = "6789TJ"
    expect_beats(cards, straight, variant, True)
    a = core.classify(straight, variant).primary
    standing = core.play_reading(cards, variant, to_beat=a)
    assert standing.kind == "straight" and tuple(map(tuple, standing.ranks)) == pattern("789TJQ")
    assert view(standing) == view(play_reading_ref(cards, variant, classify_ref(straight, variant)[0]))
    pairs = core.classify("556677", variant).primary
    assert core.play_reading(cards, variant, to_beat=pairs).top == 6      # primary 778899
    declared = core.play_reading(cards, variant, to_beat=pairs, declare="pair_chain")
    assert declared.top == 6
    with pytest.raises(IllegalPlay):
        core.play_reading(cards, variant, to_beat=pairs, declare="straight")
    with pytest.raises(IllegalPlay, match="does not beat"):
        core.play_reading(cards, variant, to_beat=core.classify("789TJQ", variant).primary)
    expect_beats(cards, "789TJQ", variant, False)


def test_s7_declare_by_star_when_kind_and_top_agree() -> None:
    """fengkuang 4444 5555 6666 SJ BJ: a 9★ and an 8★ chain bomb, both with top 6 (rule 4)."""
    cards = "4444 5555 6666 SJ BJ"
    c = core.classify(cards, "fengkuang")
    assert [(r.kind, r.top_rank, r.star) for r in c] == [("chain_bomb", "6", 9),
                                                          ("chain_bomb", "6", 8)]
    eight = core.play_reading(cards, "fengkuang", declare=Declaration("chain_bomb", "6", 8))
    assert eight.star == 8 and tuple(map(tuple, eight.ranks)) == pattern("44444 55555 6666")
    assert core.play_reading(cards, "fengkuang", None, "chain_bomb", "6").star == 9
    assert c.reading("chain_bomb", "6", 8) == eight == c.reading(Declaration("chain_bomb", star=8))
    assert [r.star for r in core.classify(cards, "fengkuang",
                                              declare=Declaration("chain_bomb", star=8))] == [8]
    with pytest.raises(IllegalPlay, match="cannot be read as chain_bomb with top 6, 7 stars"):
        core.play_reading(cards, "fengkuang", declare=Declaration("chain_bomb", "6", 7))
    assert c.reading("chain_bomb", "6", 7) is None


def test_s7_declare_by_wild_placement_when_kind_top_and_star_agree() -> None:
    """huopin 9999 TTTTT JJJJJ QQQQQ KKKKK SJ BJ: the two wilds may join any two links at 9★
    (X = the smallest count); only the placement tells those readings apart."""
    cards = "9999 TTTTT JJJJJ QQQQQ KKKKK SJ BJ"
    nine = [r for r in core.classify(cards, "huopin") if (r.kind, r.star) == ("chain_bomb", 9)]
    assert len(nine) > 1 and len({r.top for r in nine}) == 1
    for r in nine:
        declared = Declaration("chain_bomb", "K", 9, tuple(rank_name(w) for w in r.wilds))
        assert core.play_reading(cards, "huopin", declare=declared) == r
    jk = core.play_reading(cards, "huopin", declare=Declaration("chain_bomb", "K", 9, ("K", "J")))
    assert tuple(map(tuple, jk.ranks)) == pattern("9999 TTTTT JJJJJJ QQQQQ KKKKKK")
    with pytest.raises(IllegalPlay, match="wild as 9 9"):    # 99999 9 …: X would be 5, 10★
        core.play_reading(cards, "huopin", declare=Declaration("chain_bomb", "K", 9, ("9", "9")))
    assert core.play_reading(cards, "huopin",
                                 declare=Declaration("chain_bomb", wilds=("9", "9"))).star == 10


@pytest.mark.parametrize("cards, top", [("KKKK AAAA 2222 3333", "3"), ("AAAA 2222 3333", "3"),
                                        ("QQQQ KKKK AAAA 2222", "2"), ("AAAA 2222", "2")])
def test_s7_top_of_a_huopin_wrap_chain_is_its_last_rank_in_chain_order(cards: str, top: str) -> None:
    """docs/decisions/rules.md R7: top is the last rank in chain order, in huopin as in
    bianfeng."""
    r = core.classify(cards, "huopin").primary
    assert r.kind == "chain_bomb" and r.top_rank == top
    assert core.play_reading(cards, "huopin", declare=Declaration("chain_bomb", top)) == r


@pytest.mark.parametrize("declare, field", [
    (Declaration("flush"), "declare"), (Declaration("bomb", "1"), "declare_top"),
    (Declaration("bomb", star=-1), "declare.star"), (Declaration("bomb", wilds=("X",)), "declare.wilds"),
    (Declaration("bomb", wilds="77"), "declare.wilds"), (("bomb", 4, 5, (), "extra"), "declare"),
    (42, "declare"),
])
def test_s7_malformed_declarations_name_the_field(declare: object, field: str) -> None:
    with pytest.raises(InvalidPlay) as err:
        core.play_reading("7777 BJ", "baibian", declare=declare)
    assert err.value.field == field


def test_s7_the_top_may_not_be_declared_twice() -> None:
    with pytest.raises(InvalidPlay, match="declared twice"):
        core.play_reading("7777 BJ", "baibian", declare=Declaration("bomb", "7"),
                              declare_top="7")


@pytest.mark.parametrize("variant", ("fengkuang", "qianbian", "huopin"))
def test_s7_compare_reports_the_reading_that_would_stand(variant: str) -> None:
    """compare (rule 6): the standing reading if the play beats; else the primary."""
    cards = "78 SJ SJ BJ BJ"
    got = core.compare(cards, "6789TJ", variant)
    assert got.beats and got.current.describe() == "straight 6789TJ"
    assert got.play.kind == "straight" and got.play.top_rank == "Q"
    lost = core.compare(cards, "789TJQ", variant)
    assert not lost.beats and lost.play == core.classify(cards, variant).primary
    assert core.compare(cards, "556677", variant).play.top_rank == "9"    # the primary
    declared = core.compare(cards, "556677", variant, declare="pair_chain")
    assert declared.beats and declared.play.kind == "pair_chain"
    # a declared reading that does not beat is reported as declared, beats False
    low = core.compare(cards, "99TTJJ", variant, declare=Declaration("pair_chain", "8"))
    assert not low.beats and low.play.top_rank == "8"
    with pytest.raises(IllegalPlay, match="triple"):
        core.compare(cards, "556677", variant, declare="triple_chain")


def test_s7_compare_with_a_declared_current_reading() -> None:
    """The current play stands in its declared reading (fengkuang 8★ instead of 9★)."""
    current = "4444 5555 6666 SJ BJ"
    assert not core.compare("44444444", current, "fengkuang").beats         # 8★ vs 9★
    got = core.compare("44444444", current, "fengkuang",
                           current_declare=Declaration("chain_bomb", star=8))
    assert got.beats and got.current.star == 8
    standing = core.play_reading(current, "fengkuang", declare=Declaration("chain_bomb", star=8))
    assert core.compare("44444444", standing, "fengkuang") == got
    with pytest.raises(IllegalPlay) as err:
        core.compare("44444444", current, "fengkuang", current_declare="straight")
    assert err.value.field == "current_declare"
    with pytest.raises(InvalidPlay):
        core.compare("44444444", standing, "fengkuang", current_declare="bomb")
    eight = core.classify("44444444", "fengkuang").primary
    assert core.compare(eight, standing, "fengkuang") == got     # Readings on both sides
    with pytest.raises(InvalidPlay):
        core.compare(eight, standing, "fengkuang", declare="bomb")


# ----------------------------------------------------------------------------- §8 bomb order

@pytest.mark.parametrize("variant", VARIANTS)
def test_s8_bomb_beats_every_ordinary_play(variant: str) -> None:
    low = "7777" if variant == "fengkuang_crazy" else "3333"
    for ordinary in ("BJ", "BJ BJ", "222", "789TJQKA", "QQKKAA", "QQQKKKAAA"):
        expect_order(low, ordinary, variant)
    expect_order("SJ SJ BJ", "BJ BJ", variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_s8_all_three_joker_bombs_are_equal(variant: str) -> None:
    expect_tie("SJ SJ BJ", "SJ BJ BJ", variant)
    expect_tie("SJ SJ BJ", "SJ SJ BJ", variant)
    expect_tie("SJ SJ BJ BJ", "SJ SJ BJ BJ", variant)


@pytest.mark.parametrize("variant", VARIANTS)
def test_s8_star_first(variant: str) -> None:
    expect_order("77777", "AAAA", variant)
    expect_order("777777", "22222", variant)
    expect_order("77777777", "SJ SJ BJ BJ", variant)
    expect_order("SJ SJ BJ BJ", "SJ SJ BJ", variant)
    expect_order("9999 TTTT JJJJ QQQQ", "KKKKKKK", variant)   # 8 stars > 7


def test_s8_baibian() -> None:
    v = "baibian"
    expect_order("8888", "7777", v)
    expect_order("2222", "AAAA", v)
    expect_order("333333", "SJ SJ BJ", v)          # three-joker bomb smallest at 6
    expect_order("SJ SJ BJ", "22222", v)
    expect_order("SJ SJ BJ BJ", "2222222", v)      # four-joker bomb largest at 7
    expect_order("SJ SJ BJ BJ", "QQQQ KKKK AAAA", v)
    expect_order("3333 4444 5555", "3333333", v)   # equal stars: top
    expect_order("JJJJJJJ", "3333 4444 5555", v)
    expect_tie("66666666", "3333 4444 5555 6666", v)   # equal keys across kinds


@pytest.mark.parametrize("variant", BIANFENG)
def test_s8_bianfeng(variant: str) -> None:
    expect_order("3333333", "QQQQ KKKK AAAA", variant)          # fewer cards
    expect_order("33333333", "QQQQ KKKK AAAA", variant)         # star first
    expect_order("3333 4444 5555", "KKKK AAAA 2222", variant)   # class 2 > class 1
    expect_order("KKKK AAAA 2222", "AAAA 2222 3333", variant)   # class 1 > class 0
    expect_order("AAAA 2222 3333 4444", "KKKK AAAA 2222 3333", variant)   # class 0 by top
    expect_order("QQQQ KKKK AAAA 2222", "KKKK AAAA 2222 3333", variant)
    expect_order("4444 5555 6666", "3333 4444 5555", variant)
    expect_order("333333", "SJ SJ BJ", variant)
    expect_order("SJ SJ BJ BJ", "2222222", variant)
    expect_order("SJ SJ BJ BJ", "QQQQ KKKK AAAA", variant)
    expect_order("33333333", "SJ SJ BJ BJ", variant)


@pytest.mark.parametrize("variant", FENGKUANG)
def test_s8_fengkuang(variant: str) -> None:
    low = "7" if variant == "fengkuang_crazy" else "3"
    expect_order(low * 6, "SJ SJ BJ", variant)
    expect_order("SJ SJ BJ BJ", "2222222", variant)
    expect_order("SJ SJ BJ BJ", "TTTT JJJJ QQQQ", variant)
    expect_order("TTTT JJJJ QQQQ", "8888 9999 TTTT", variant)     # equal Y: top
    if variant == "fengkuang":
        expect_order("3333333", "4444 5555 6666", variant)        # seed: Y 1 < 3
        expect_tie("3333 44444 5555", "33333 4444 5555", variant)
    else:
        # seed (crazy room): 8 stars, Y 3, top 9, 14 cards > 13
        expect_order("77777 8888 99999", "7777 8888 99999", variant)
        expect_order("7777777", "8888 9999 TTTT", variant)


def test_s8_qianbian() -> None:
    v = "qianbian"
    expect_order("6666 7777 8888", "3333 4444444 5555", v)   # seed: 12 cards < 15
    expect_order("3333333", "SJ SJ BJ BJ", v)                 # N-bomb > four-joker bomb
    expect_order("SJ SJ BJ BJ", "QQQQ KKKK AAAA", v)          # four-joker bomb > chain
    expect_order("3333333", "QQQQ KKKK AAAA", v)
    expect_order("333333", "SJ SJ BJ", v)                     # three-joker bomb smallest
    expect_order("TTTT JJJJ QQQQ", "3333 4444 5555", v)       # chains: top
    expect_order("8888", "7777", v)


def test_s8_huopin() -> None:
    v = "huopin"
    expect_order("3333 4444 5555 6666", "77777 88888 99999", v)      # Y
    expect_order("3333 44444 555555 6666", "66666 77777 888888", v)
    expect_order("4444 55555 66666", "6666 77777 8888", v)           # cards
    expect_order("4444 55555 6666", "3333 4444 55555", v)            # rank list
    expect_order("JJJJJJJ", "4444 55555 6666", v)                    # N-bomb > chain
    expect_order("KKKK AAAA 2222", "QQQQ KKKK AAAA", v)              # the 2 is natural
    expect_order("AAAA 2222 3333", "QQQQ KKKK AAAA", v)              # §12.14
    expect_order("KKKK AAAA 2222", "AAAA 2222 3333", v)
    expect_reading("AAAA 2222", v, "chain_bomb", "AAAA 2222", star=6)
    expect_invalid("2222 3333", v, "A")
    expect_order("333333", "SJ SJ BJ", v)                            # joker bombs smallest
    expect_order("3333 4444", "SJ SJ BJ", v)
    expect_order("3333 4444 5555", "SJ SJ BJ BJ", v)
    expect_order("3333333", "3333 4444 5555", v)
    expect_order("2222", "AAAA", v)


@pytest.mark.parametrize("variant", VARIANTS)
def test_s8_equal_bombs_do_not_beat(variant: str) -> None:
    expect_tie("8888", "8S 8H 8D 8C", variant)
    expect_tie("888 BJ", "8888", variant)


def test_s7_a_declaration_without_a_kind_matches_any_kind() -> None:
    only = core.classify("7 SJ SJ BJ BJ", "fengkuang", declare=Declaration(None, "7"))
    assert [r.describe() for r in only] == ["bomb 77777 (5 stars) (wild as 7 7 7 7)",
                                            "straight 34567 (wild as 3 4 5 6)"]
