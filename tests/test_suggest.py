"""The 托管 policy (core.suggest): each documented step on a hand made for it, legality
and determinism over whole self-played rounds in every variant."""

from __future__ import annotations

import random

import pytest

from shuangkou import core
from shuangkou.core import Round, RuleViolation, Suggestion, format_cards, parse_cards, suggest
from shuangkou.core.generate import deal
from shuangkou.core.suggest import DANGER, decide

VARIANTS = [v.id for v in core.list_variants()]
FULL = (27, 27, 27, 27)


def text(s: Suggestion) -> str:
    return " ".join(format_cards(s.cards))


def reading(cards: str, variant: str = "baibian") -> core.Reading:
    return core.classify(cards, variant).primary


# --------------------------------------------------------------------- 1. go out
def test_goes_out_leading_with_one_play() -> None:
    s = decide("baibian", 0, parse_cards("5 6 7 8 9"), (5, 27, 27, 27))
    assert (s.kind, text(s)) == ("play", "5 6 7 8 9")
    assert s.reason.startswith("goes out")


def test_goes_out_following_even_over_the_partner() -> None:
    s = decide("baibian", 0, parse_cards("K K"), (2, 27, 5, 27), (2, reading("Q Q")))
    assert text(s) == "K K" and s.reason.startswith("goes out")


# --------------------------------------------------------------------- 2. partner
def test_lets_the_partner_win_the_trick() -> None:
    s = decide("baibian", 1, parse_cards("4 9 9 K K 2"), FULL, (3, reading("8 8")))
    assert s.kind == "pass" and "partner" in s.reason


# --------------------------------------------------------------------- 3. leading
def test_leads_the_weak_cards_as_a_chain_rather_than_one_by_one() -> None:
    hand = parse_cards("3 4 5 6 7 Q K A 2 2 BJ")
    s = decide("baibian", 0, hand, (11, 27, 27, 27))
    assert text(s) == "3 4 5 6 7" and s.reason.startswith("leads to shed")


def test_leading_keeps_pairs_and_bombs_whole() -> None:
    hand = parse_cards("3 3 4 4 4 4 9 J Q K")
    s = decide("baibian", 0, hand, (10, 27, 27, 27))
    assert text(s) == "3 3"        # not a 3 from the pair, nothing from the 4444 bomb


def test_leading_keeps_the_wild_joker() -> None:
    hand = parse_cards("3 5 6 7 8 K BJ")
    s = decide("baibian", 0, hand, (7, 27, 27, 27))
    assert "BJ" not in format_cards(s.cards)


def test_two_plays_left_leads_the_stronger_first() -> None:
    s = decide("baibian", 0, parse_cards("3 9 9 9 9"), (5, 27, 27, 27))
    assert text(s) == "9 9 9 9" and "last two" in s.reason


def test_against_an_opponent_with_one_card_no_single_is_led() -> None:
    hand = parse_cards("3 6 6 9 J Q K A 2 2 8 8 T T 5 5 7")
    s = decide("baibian", 0, hand, (17, 1, 27, 27))
    assert s.reading.kind != "single" and "1 card" in s.reason


def test_against_one_card_with_only_singles_leads_the_highest() -> None:
    hand = parse_cards("3 5 9 J 2")
    s = decide("baibian", 0, hand, (5, 27, 27, 1))
    assert text(s) == "2"


def test_feeds_a_partner_with_one_card() -> None:
    hand = parse_cards("3 6 6 9 9 J Q K A")
    s = decide("baibian", 0, hand, (9, 20, 1, 20))
    assert text(s) == "3" and "partner" in s.reason


# --------------------------------------------------------------------- 4. following
def test_follows_with_the_cheapest_beat_that_splits_nothing() -> None:
    hand = parse_cards("6 6 6 9 9 Q K K 5 5 5 5")
    s = decide("baibian", 0, hand, (12, 20, 27, 27), (1, reading("4 4")))
    assert text(s) == "9 9"       # not 6 6 (splits the triple), not 5 5 (splits the bomb)


def test_keeps_bombs_when_nothing_is_at_stake() -> None:
    hand = parse_cards("3 4 6 8 8 8 8 J 9 T Q")
    s = decide("baibian", 0, hand, (11, 20, 27, 20), (1, reading("A")))
    assert s.kind == "pass" and "bombs" in s.reason


def test_bombs_an_opponent_about_to_go_out() -> None:
    hand = parse_cards("3 4 6 8 8 8 8 9 9 9 9 J")
    s = decide("baibian", 0, hand, (12, DANGER, 27, 20), (1, reading("A")))
    assert text(s) == "8 8 8 8" and "bombs" in s.reason   # the cheapest bomb


def test_bombs_when_the_rest_goes_out() -> None:
    hand = parse_cards("8 8 8 8 4 5 6 7 8 9 T")
    s = decide("baibian", 0, hand, (11, 20, 27, 20), (1, reading("2")))
    assert s.reading.is_bomb and "go out" in s.reason


def test_bombs_with_a_star_that_pays() -> None:
    """baibian pays contributions from 6 stars (§10.4): a natural 6-bomb is worth playing."""
    hand = parse_cards("3 4 6 9 9 9 9 9 9 J Q K A 2 5")
    s = decide("baibian", 0, hand, (15, 20, 27, 20), (1, reading("2")))
    assert text(s) == "9 9 9 9 9 9" and "pays" in s.reason


def test_round_star_contribution_pays_once() -> None:
    """bianfeng_lishui pays contributions once, at the round star (§10.4): a 6-bomb pays
    until the seat has reached 6 stars."""
    hand = parse_cards("3 4 6 9 9 9 9 9 9 J Q K A 2 5")
    table = ("bianfeng_lishui", 0, hand, (15, 20, 27, 20), (1, reading("2", "bianfeng_lishui")))
    assert "pays" in decide(*table).reason
    assert decide(*table, star=6).kind == "pass"


def test_a_higher_multiplier_pays_once_the_team_holds_first_place() -> None:
    """baibian multiplies from 5 stars (§10.3): a 5-bomb pays once the team holds 1st."""
    hand = parse_cards("3 4 6 9 9 9 9 9 J Q K A 2 5")
    table = ("baibian", 0, hand, (14, 20, 0, 20), (1, reading("2")))
    assert decide(*table).kind == "pass"
    assert "pays" in decide(*table, winning=True).reason


def test_passes_when_nothing_beats() -> None:
    s = decide("baibian", 0, parse_cards("3 4 5"), (3, 20, 27, 20), (1, reading("2 2")))
    assert s.kind == "pass" and s.cards == ()


# --------------------------------------------------------------------- declarations
def test_declares_the_reading_it_means_when_another_would_stand() -> None:
    """qianbian 3 4 5 SJ SJ BJ: undeclared it stands as the pair chain 334455 (§7 rule 6);
    meant as the straight 345678 it carries a declaration, and the Round agrees."""
    from shuangkou.core.suggest import _play
    cards = tuple(parse_cards("3S 4H 5H SJ SJ BJ"))
    straight = next(r for r in core.classify(cards, "qianbian").readings
                    if r.kind == "straight")
    s = _play(core.get_variant("qianbian"), 0, cards, straight, None, "leads")
    assert s.declaration is not None and s.declaration.kind == "straight"
    r = Round.deal("qianbian", ["3S 4H 5H SJ SJ BJ 9", "4S", "5S", "6S"], 0,
                   partial_deal=True, partner=2)
    rec = r.play(0, s.cards, s.declaration)
    assert (rec.reading.kind, rec.reading.top) == ("straight", straight.top)
    assert _play(core.get_variant("qianbian"), 0, cards,
                 core.play_reading(cards, "qianbian"), None, "x").declaration is None


# --------------------------------------------------------------------- whole rounds
def start(variant: str, seed: int) -> Round:
    v = core.get_variant(variant)
    rng = random.Random(seed)
    hands = deal(v, rng)
    if v.decks == 2:
        return Round.deal(v, hands, seed % 4, revealed=hands[seed % 4][:1])
    return Round.deal(v, hands, seed % 4, partner=(seed % 4 + 2) % 4)


@pytest.mark.parametrize("variant", VARIANTS)
def test_four_suggest_seats_play_legal_rounds_to_the_end(variant: str) -> None:
    for seed in range(3):
        r = start(variant, seed)
        actions = 0
        while not r.is_over:
            s = suggest(r)
            assert s.seat == r.turn and s.reason
            if s.kind == "pass":
                assert r.can_pass(s.seat)
                r.pass_turn(s.seat)
            else:
                assert r.can_play(s.seat, s.cards, s.declaration)
                rec = r.play(s.seat, s.cards, s.declaration)
                assert (rec.reading.kind, rec.reading.top) == (s.reading.kind, s.reading.top)
            actions += 1
            assert actions < 600
        result = r.result()
        assert result.finish_order


@pytest.mark.parametrize("variant", ["baibian", "qianbian", "fengkuang_crazy"])
def test_deterministic_and_seeded(variant: str) -> None:
    r = start(variant, 5)
    assert suggest(r) == suggest(r.copy())
    seeded = {suggest(r, seed=k) for k in range(8)}
    assert all(s.kind == "play" for s in seeded)
    assert suggest(r, seed=3) == suggest(r, seed=3)


def test_nothing_to_suggest_when_the_round_is_over() -> None:
    r = Round.deal("huopin", ["7", "3", "5", "6"], 0, partial_deal=True, partner=2)
    r.play(0, "7")
    assert r.is_over
    with pytest.raises(RuleViolation) as caught:
        suggest(r)
    assert caught.value.reason == "ROUND_OVER"
