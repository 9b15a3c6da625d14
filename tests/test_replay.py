"""Replay validation (RULES.md §9) and replay scoring (§10): hand-made rounds, the format's
errors, generated rounds per variant (replay score == summary score, sum rules) and
corrupted generated rounds rejected at the right action."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import json
import random
from typing import Any

import pytest

from shuangkou import core
from shuangkou.core.errors import IllegalPlay
from shuangkou.core.generate import deal, generate_replay
from shuangkou.core.replay import (
    ReplayError,
    replay_round,
    score_replay,
    score_replay_json,
    summarize_replay,
)
from shuangkou.core.scoring import score_round

VARIANTS = list(core.BUILTIN)
GENERATED_PER_VARIANT = 300


def replay(variant: str, hands: list[str], actions: list[dict], **kw: Any) -> dict:
    """A partial-deal replay (hands as text, dealt seats = table seats unless swapped)."""
    return {"variant": variant, "hands": hands, "leader": kw.pop("leader", 0),
            "actions": actions, "partial_deal": True, **kw}


def play(seat: int, cards: str, **kw: Any) -> dict:
    return {"seat": seat, "play": cards.split(), **kw}


def pas(seat: int) -> dict:
    return {"seat": seat, "pass": True}


def rejected(rep: dict | str, **kw: Any) -> ReplayError:
    with pytest.raises(ReplayError) as info:
        score_replay(rep, **kw)
    return info.value


# ----------------------------------------------------------------------------- hand-made rounds

HANDS = ["3S 3H 9C", "4S 9S", "5S 5H TD", "6S 9H"]


def round_dict(res: Any) -> dict:
    """A replay result as the summary scorer reports it (without the seat mapping)."""
    d = {k: v for k, v in res.to_dict().items() if k not in ("hand_at", "actions")}
    for s in d["seats"]:
        s.pop("dealt_seat", None)
    return d


def test_double_win_and_summary_agree() -> None:
    rep = replay("baibian", ["3S 3H", "4S 9S", "5S 5H", "6S 9H"],
                 [play(0, "3S 3H"), pas(1), play(2, "5 5")])
    res = score_replay(rep)
    assert res.kind == "double" and res.finish_order == (0, 2)
    assert res.final == (4, -4, 4, -4)
    assert res.hand_at == (0, 1, 2, 3) and res.actions == 3
    summary = summarize_replay(rep)
    assert summary.cards_left == (0, 2, 0, 2)
    assert score_round(**summary.score_args()).to_dict() == round_dict(res)


def test_jiefeng_lead_goes_to_the_partner() -> None:
    base = [play(0, "3S 3H"), pas(1), pas(2), pas(3)]
    # seat 0 went out and everyone passed: seat 2 (partner) leads, not seat 1
    err = rejected(replay("baibian", ["3S 3H", "4S 9S", "5S 5H TD", "6S 9H"],
                          [*base, play(1, "4S")]))
    assert err.action == 4 and "接风" in err.detail and "seat 2" in err.detail
    res = score_replay(replay("baibian", ["3S 3H", "4S 9S", "5S 5H TD", "6S 9H"],
                              [*base, play(2, "5S 5H"), pas(3), pas(1), play(2, "TD")]))
    assert res.finish_order == (0, 2) and res.kind == "double"


def test_trick_won_by_a_player_still_holding_cards() -> None:
    rep = replay("baibian", HANDS, [play(0, "9C"), pas(1), pas(2), pas(3), play(0, "3S 3H"),
                                     pas(1), play(2, "5S 5H"), pas(3), pas(0)])
    err = rejected(rep)    # seat 2 leads after everyone passed: seat 0 is out, so seat 1
    assert err.action == 8 and "seat 0 has no cards left" in err.detail
    rep["actions"][8:] = [pas(1), play(2, "TD")]
    res = score_replay(rep)
    assert res.finish_order == (0, 2)


def test_leader_may_not_pass() -> None:
    err = rejected(replay("baibian", HANDS, [pas(0)]))
    assert err.action == 0 and "may not pass" in err.detail
    err = rejected(replay("baibian", HANDS, [play(0, "9C"), pas(1), pas(2), pas(3), pas(0)]))
    assert err.action == 4 and "leads the trick and may not pass" in err.detail


def test_turn_order() -> None:
    err = rejected(replay("baibian", HANDS, [play(0, "9C"), play(2, "TD")]))
    assert err.action == 1 and "seat 1's turn" in err.detail
    err = rejected(replay("baibian", HANDS, [play(1, "4S")]))
    assert err.action == 0 and "seat 0's turn" in err.detail


def test_cards_must_come_from_the_hand() -> None:
    err = rejected(replay("baibian", HANDS, [play(0, "7S")]))
    assert err.action == 0 and "does not hold 7S" in err.detail and "no 7" in err.detail
    err = rejected(replay("baibian", HANDS, [play(0, "3D")]))   # holds 3S 3H, not 3D
    assert err.action == 0 and "3S 3H" in err.detail
    err = rejected(replay("baibian", HANDS, [play(0, "3 3 3")]))  # three 3s, holds two
    assert err.action == 0 and "does not hold a third 3 (it holds two" in err.detail


def test_rank_only_tokens_take_any_suit() -> None:
    rep = replay("baibian", HANDS, [play(0, "3 3H"), pas(1), pas(2), pas(3), play(0, "9"),
                                     pas(1), play(2, "TD"), pas(3), pas(1), play(2, "5 5")])
    res = score_replay(rep)
    assert res.finish_order == (0, 2)
    err = rejected(replay("baibian", HANDS, [play(0, "3 3 3H")]))
    assert err.action == 0 and "does not hold 3H (the play's other cards take its 2" \
        in err.detail
    err = rejected(replay("baibian", HANDS, [play(0, "3H 3H")]))
    assert err.action == 0 and "does not hold a second 3H (it holds one 3H" in err.detail
    # a rank-only card in a hand can only be played by a rank-only token
    err = rejected(replay("baibian", ["3 3H 9C", *HANDS[1:]], [play(0, "3S 3H")]))
    assert err.action == 0 and "does not hold 3S" in err.detail and "without a suit" in err.detail


def test_follow_must_beat() -> None:
    err = rejected(replay("baibian", HANDS, [play(0, "9C"), play(1, "4S")]))
    assert err.action == 1 and "does not beat" in err.detail
    err = rejected(replay("baibian", HANDS, [play(0, "3S 3H"), play(1, "4S 9S")]))
    assert err.action == 1 and "4S 9S" in err.detail     # not a play at all


def test_nothing_after_the_round_ends() -> None:
    rep = replay("baibian", ["3S 3H", "4S 9S", "5S 5H", "6S 9H"],
                 [play(0, "3S 3H"), pas(1), play(2, "5 5"), pas(3)])
    err = rejected(rep)
    assert err.action == 3 and "round ended at action 2" in err.detail


def test_incomplete_replay_is_malformed_as_a_whole() -> None:
    err = rejected(replay("baibian", HANDS, [play(0, "9C"), pas(1)]))
    assert err.action is None and "before the round is over" in err.detail
    assert "seat 2" in err.detail


def test_declared_reading_stands() -> None:
    hands = ["5S 6S 7S 8S BJ 3C", "5H 6H 7H 8H 9H 4C", "3S", "4S"]
    lead = play(0, "5S 6S 7S 8S BJ", declare="straight", declare_top="8")
    # 4-8 stands, so 5-9 beats it; undeclared the primary 5-9 would stand and 5-9 would not
    rep = replay("baibian", hands, [lead, play(1, "5H 6H 7H 8H 9H"), pas(2), pas(3), pas(0),
                                    play(1, "4C"), pas(2), pas(3), play(0, "3C")])
    err = rejected(rep)
    assert err.action == 8   # 3C does not beat 4C
    rep["actions"][8] = pas(0)
    err = rejected(rep)       # seat 1 went out and the others passed: 接风 to seat 3
    assert err.action is None and "接风" in err.detail
    undeclared = replay("baibian", hands, [play(0, "5S 6S 7S 8S BJ"),
                                           play(1, "5H 6H 7H 8H 9H")])
    err = rejected(undeclared)
    assert err.action == 1 and "does not beat" in err.detail


def test_bombs_are_scored_from_the_standing_readings() -> None:
    hands = ["7S 7H 7D 7C BJ 3S", "8S 8H 8D 8C 8S 8H 4D", "3H", "4S"]
    rep = replay("baibian", hands, [
        play(0, "3S"), play(1, "8S 8H 8D 8C 8S 8H"),     # a 6-bomb (6 stars)
        pas(2), pas(3), play(0, "7S 7H 7D 7C BJ")])        # a 5-bomb does not beat it
    err = rejected(rep)
    assert err.action == 4 and "does not beat" in err.detail
    rep["actions"][4:] = [pas(0), play(1, "4D")]         # seat 1 out, then 接风 to seat 3
    rep["actions"] += [pas(2), pas(3), pas(0), play(3, "4S")]
    res = score_replay(rep)
    assert res.kind == "double" and res.winning_team == 1 and res.finish_order == (1, 3)
    assert res.seats[1].star == 6 and res.multiplier == 4
    # base 4 −4 4 −4 by place × 4, seat 1's 6-star bomb +6 / −2
    assert res.final == (-16 - 2, 16 + 6, -16 - 2, 16 - 2)


def test_huopin_ends_at_the_first_finisher() -> None:
    hands = ["3S", "4S 5S 6S", "7S 8S 9S TS", "JS QS KS"]
    res = score_replay(replay("huopin", hands, [play(0, "3S")]))
    assert res.kind == "flat" and res.finish_order == (0,)        # losers hold 3 + 3 = 6
    assert res.final == (1, -1, 1, -1)
    err = rejected(replay("huopin", hands, [play(0, "3S"), pas(1)]))
    assert err.action == 1 and "went out first" in err.detail


def test_huopin_kind_by_losers_cards() -> None:
    hands = ["3S", "4S 5S 6S 7S", "7H", "9S TS JS"]
    res = score_replay(replay("huopin", hands, [play(0, "3S")]))
    assert res.kind == "single" and res.final == (2, -2, 2, -2)   # losers hold 4 + 3 = 7
    hands[3] = "9S TS"
    res = score_replay(replay("huopin", hands, [play(0, "3S")]))
    assert res.kind == "flat" and res.final == (1, -1, 1, -1)     # 6


def test_escape() -> None:
    rep = replay("bianfeng", HANDS, [play(0, "9C"), {"seat": 2, "escape": True}], stake=3)
    res = score_replay(rep)
    assert res.kind == "escape" and res.escaper == 2
    assert res.final == (0, 0, -8 * 3, 0)
    err = rejected(replay("bianfeng", HANDS, [play(0, "9C"), {"seat": 2, "escape": True},
                                               pas(1)]))
    assert err.action == 2 and "nothing may follow" in err.detail


def test_escape_refused_in_baibian_at_its_index() -> None:
    err = rejected(replay("baibian", HANDS, [play(0, "9C"), pas(1), {"seat": 3, "escape": True}]))
    assert err.action == 2 and "no escape" in err.detail
    assert isinstance(err, IllegalPlay)


def test_escape_by_a_finished_seat() -> None:
    rep = replay("bianfeng", ["3S", "4S 9S", "5S 5H", "6S 9H"],
                 [play(0, "3S"), pas(1), pas(2), pas(3), {"seat": 0, "escape": True}])
    err = rejected(rep)
    assert err.action == 4 and "no cards left" in err.detail


# ----------------------------------------------------------------------------- seating

def full_deal(variant: str, seed: int = 1) -> list[list[int]]:
    return deal(variant, random.Random(seed))


def test_revealed_card_swaps_the_partner_opposite() -> None:
    # dealt seat 1 holds the other 7S: it swaps with dealt seat 2 (opposite the leader)
    hands = ["7S 3S", "7S 4S", "5S 9S", "6S"]
    actions = [play(0, "3S"), pas(1), play(2, "4S"), pas(3), play(0, "7S"), pas(1), pas(2),
               pas(3), play(2, "7S")]
    res = score_replay(replay("baibian", hands, actions, revealed="7S"))
    assert res.hand_at == (0, 2, 1, 3)
    assert [s["dealt_seat"] for s in res.to_dict()["seats"]] == [0, 2, 1, 3]
    assert res.kind == "double" and res.finish_order == (0, 2)
    # without the revealed card the seats are the teams as dealt: seat 2 holds 5S 9S
    err = rejected(replay("baibian", hands, actions))
    assert err.action == 2 and "does not hold 4S" in err.detail


def test_leader_holding_both_copies_moves_nobody() -> None:
    from shuangkou.core.replay import _seating

    hands = [["7S", "7S", "3H"], ["4S"], ["5S"], ["6S"]]
    codes = [core.parse_cards(h) for h in hands]
    v = core.get_variant("baibian")
    assert _seating({"revealed": "7S"}, codes, 0, v) == [0, 1, 2, 3]
    assert _seating({"revealed": "7S"}, [codes[1], codes[0], codes[2], codes[3]], 1, v) == \
        [0, 1, 2, 3]
    # other copy with dealt seat 3: seats 3 and 2 swap
    others = [core.parse_cards(h) for h in ("4S 3S", "5S", "6S", "4S")]
    assert _seating({"revealed": "4S"}, others, 0, v) == [0, 1, 3, 2]


def test_seating_errors() -> None:
    hands = ["3S 3H 9C", "4S 9S", "5S 5H TD", "6S 9H"]
    err = rejected(replay("baibian", hands, [], revealed="4S"))
    assert "does not hold the revealed card 4S" in err.detail
    err = rejected(replay("baibian", hands, [], revealed="3"))
    assert "suited card or a joker" in err.detail
    err = rejected(replay("baibian", ["3S 3H", "3S", "5S", "6S"], [], revealed="3S",
                          teams=[[0, 2], [1, 3]]))
    assert "revealed card makes dealt seat 1 the leader's partner but the replay states 2" \
        in err.detail
    err = rejected(replay("baibian", hands, [], teams=[[0, 1], [1, 3]]))
    assert "two pairs" in err.detail
    err = rejected(replay("baibian", hands, [], partner=0))
    assert "partner 0" in err.detail


def test_three_decks_need_the_teams() -> None:
    rep = generate_or_skip("fengkuang_crazy", 1)
    assert "teams" in rep
    bare = {k: v for k, v in rep.items() if k != "teams"}
    err = rejected(bare)
    assert err.action is None and "'teams'" in err.detail


def test_three_decks_teams_swap() -> None:
    from shuangkou.core.replay import _seating

    v = core.get_variant("fengkuang_crazy")
    codes = [core.parse_cards(h) for h in ("7S 8S", "9S", "TS", "JS")]
    assert _seating({"revealed": "7S", "teams": [[0, 1], [2, 3]]}, codes, 0, v) == [0, 2, 1, 3]
    assert _seating({"revealed": "7S", "partner": 3}, codes, 0, v) == [0, 1, 3, 2]
    assert _seating({"teams": [[1, 3], [0, 2]]}, codes, 0, v) == [0, 1, 2, 3]


# ----------------------------------------------------------------------------- the deal

def complete(variant: str) -> dict:
    hands = full_deal(variant)
    return {"variant": variant, "hands": [core.format_cards(h) for h in hands],
            "leader": 0, "actions": []}


@pytest.mark.parametrize("variant", ["baibian", "fengkuang_crazy"])
def test_complete_deal_is_accepted(variant: str) -> None:
    err = rejected(complete(variant))        # valid deal: fails only because nothing is played
    assert "before the round is over" in err.detail


def test_incomplete_deals_are_rejected() -> None:
    rep = complete("baibian")
    rep["hands"][1] = rep["hands"][1][:-1]
    err = rejected(rep)
    assert "hands[1] has 26 cards" in err.detail
    assert "before the round is over" in rejected(rep, partial_deal=True).detail
    rep = complete("baibian")
    other = next(c for c in rep["hands"][2] if c[0] != rep["hands"][1][0][0])
    rep["hands"][1][0] = other                      # one card of a rank too many, one too few
    err = rejected(rep)
    assert "not the baibian deck" in err.detail or "copies of" in err.detail
    rep = complete("baibian")
    rep["hands"][3][0] = "3" if not rep["hands"][3][0].startswith("3") else "4"
    assert "not the baibian deck" in rejected(rep).detail


def test_cards_outside_the_deck() -> None:
    rep = replay("fengkuang_crazy", ["3S", "8S", "9S", "TS"], [], teams=[[0, 2], [1, 3]])
    err = rejected(rep)
    assert "hands[0]" in err.detail and "no 3s" in err.detail


# ----------------------------------------------------------------------------- the format

@pytest.mark.parametrize("doc,match", [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ({"hands": [], "actions": []}, "needs 'variant'"),
    ({"variant": "nope", "hands": [], "actions": []}, "unknown variant"),
    ({"variant": "baibian", "hands": [], "actions": [], "stakes": 2}, "unknown replay field"),
    ({"variant": "baibian", "hands": [[], [], [], []], "actions": []}, "leader"),
    ({"variant": "baibian", "hands": [["3S"]], "leader": 0, "actions": []}, "4 dealt hands"),
    ({"variant": "baibian", "hands": ["3S", "4S", "", "6S"], "leader": 0, "actions": []},
     "hands[2] is empty"),
    ({"variant": "baibian", "hands": ["3S", "4S", "5X", "6S"], "leader": 0, "actions": []},
     "hands[2]"),
    ({"variant": "baibian", "hands": ["3S", "4S", "5S", "6S"], "leader": 0, "actions": [],
      "stake": 0}, "stake"),
    ({"variant": "baibian", "hands": ["3S", "4S", "5S", "6S"], "leader": 0, "actions": [],
      "stake": 10**30}, "stake must be an integer 1–1,000,000,000"),
    ({"variant": "baibian", "hands": ["3S", "4S", "5S", "6S"], "leader": 0, "actions": [],
      "table_fee": -1}, "table_fee"),
    ({"variant": "baibian", "hands": ["3S", "4S", "5S", "6S"], "leader": 1.0, "actions": []},
     "leader"),
])
def test_malformed_replays(doc: Any, match: str) -> None:
    if isinstance(doc, dict):
        doc = {"partial_deal": True, **doc}
    err = rejected(doc)
    assert err.action is None and match in str(err)


@pytest.mark.parametrize("action,match", [
    ("pass", "an action must be an object"),
    ({"seat": 5, "pass": True}, "seat must be a seat 0–3"),
    ({"seat": True, "pass": True}, "seat must be a seat"),
    ({"seat": 0}, "needs"),
    ({"seat": 0, "pass": False}, "needs"),
    ({"seat": 0, "play": ["9C"], "pass": True}, "one of play, pass or escape"),
    ({"seat": 0, "play": ["9C"], "by": "me"}, "unknown action field 'by'"),
    ({"seat": 0, "play": []}, "at least one card"),
    ({"seat": 0, "play": ["9X"]}, "play:"),
    ({"seat": 0, "play": ["9C"], "declare": "flush"}, "unknown play type"),
    ({"seat": 0, "play": ["9C"], "declare": "pair"}, "cannot be read as pair"),
    ({"seat": 0, "play": ["9C"], "declare": ["single"]}, "declare must be a play type"),
    ({"seat": 0, "play": ["9C"], "declare": "single", "declare_top": 2**40}, "declare_top"),
    ({"seat": 0, "play": ["9C"], "declare": "single", "declare_top": [9]}, "declare_top"),
    ({"seat": 0, "play": ["9C"], "declare_top": "9"}, "declare_top needs declare"),
    ({"seat": 0, "play": None}, "play"),
])
def test_malformed_actions(action: Any, match: str) -> None:
    err = rejected(replay("baibian", HANDS, [action]))
    assert err.action == 0 and match in err.detail
    assert err.field == "actions[0]"


@pytest.mark.parametrize("kind", ["pass", "escape"])
@pytest.mark.parametrize("extra", [{"declare": "single"}, {"declare": "single", "declare_top": 9},
                                   {"declare_top": "9"}, {"declare_star": 4},
                                   {"declare_wilds": []}, {"declare": None}])
def test_a_declaration_on_a_pass_or_an_escape_is_refused(kind: str, extra: dict) -> None:
    """Never silently ignored, in documents (folded as read) and typed replays alike."""
    from shuangkou.core.replay import Action, parse_replay

    action = {"seat": 1, kind: True, **extra}
    doc = replay("bianfeng", HANDS, [play(0, "9C"), action])
    err = rejected(doc)
    word = "a pass" if kind == "pass" else "an escape"
    assert (err.action, err.detail) == (1, f"{word} takes no other field")
    with pytest.raises(ReplayError) as typed:
        parse_replay(doc)
    assert (typed.value.action, typed.value.detail) == (1, f"{word} takes no other field")
    # a typed replay cannot even hold one: the Action record refuses it when made
    for wrong, field in (((), core.Declaration("single")), "declaration"), (((21,), None),
                                                                            "cards"):
        with pytest.raises(core.ShuangkouError,
                           match=f"{word} takes no cards or declaration") as info:
            Action(1, kind, *wrong)
        assert info.value.field == field


def test_json_text_and_custom_variant() -> None:
    rep = replay({"extends": "bianfeng", "id": "house", "stake_note": 1}, HANDS, [])
    assert "unknown field 'stake_note'" in rejected(rep).detail
    rep = replay({"extends": "bianfeng", "id": "house",
                  "base": {"double": [5, 5, -5, -5], "single": [2, -2, 2, -2],
                           "flat": [1, -1, -1, 1]}},
                 ["3S 3H", "4S 9S", "5S 5H", "6S 9H"], [play(0, "3S 3H"), pas(1), play(2, "5 5")])
    res = score_replay(json.dumps(rep))
    assert res.variant == "house" and res.final == (5, -5, 5, -5)


# ----------------------------------------------------------------------------- generated rounds

def generate_or_skip(variant: str, seed: int, escape_prob: float = 0.0) -> dict:
    if importlib.util.find_spec("shuangkou.core._enumerate") is None:
        pytest.skip("shuangkou.core.legal_plays (the enumeration engine) is not built yet")
    return generate_replay(variant, seed, escape_prob)


def expected_total(res: Any, variant: str) -> int | None:
    """The sum rule of docs/replays.md (None: escapes, checked separately)."""
    if res.kind == "escape":
        return None
    v = core.get_variant(variant)
    base = sum(v.base[res.kind]) if v.round_end == "finishing_order" else 0
    events = sum(len(e.to) * e.gain - (4 - len(e.to)) * e.pay for e in res.contributions)
    return (base * res.multiplier + events) * res.stake


@pytest.mark.parametrize("variant", VARIANTS)
def test_generated_replays_validate_and_score(variant: str) -> None:
    generate_or_skip(variant, 0)
    kinds: set[str] = set()
    for seed in range(GENERATED_PER_VARIANT):
        rep = generate_replay(variant, seed, escape_prob=0.1)
        if seed < 3:   # seeded: the same arguments give the same replay
            assert generate_replay(variant, seed, escape_prob=0.1) == rep
        if variant == "baibian" and any(a.get("escape") for a in rep["actions"]):
            err = rejected(rep)
            assert err.action == len(rep["actions"]) - 1
            continue
        res = score_replay(json.dumps(rep))
        kinds.add(res.kind)
        summary = summarize_replay(rep)
        by_cards = score_round(**summary.score_args(as_cards=True))
        assert by_cards.to_dict() == round_dict(res), seed
        total = expected_total(res, variant)
        if total is not None:
            assert res.total == total, seed
            if variant not in ("baibian", "qianbian"):
                assert res.total == 0, seed
    assert {"double", "single", "flat"} & kinds


@pytest.mark.parametrize("variant", VARIANTS)
def test_generated_escapes(variant: str) -> None:
    generate_or_skip(variant, 0)
    seen = 0
    for seed in range(40):
        rep = generate_replay(variant, seed, escape_prob=1.0)
        assert rep["actions"][-1].get("escape") is True
        if variant == "baibian":
            assert "no escape" in rejected(rep).detail
            continue
        res = score_replay(rep)
        assert res.kind == "escape" and res.escaper == rep["actions"][-1]["seat"]
        assert res.seats[res.escaper].escape < 0
        summary = summarize_replay(rep)
        assert score_round(**summary.score_args(as_cards=True)).to_dict() == round_dict(res)
        seen += 1
    assert seen or variant == "baibian"


# ----------------------------------------------------------------------------- corruptions

def leads(rep: dict) -> list[int]:
    """Indexes of the actions that lead a trick (the first, and each after a trick ends)."""
    res = score_replay(rep)
    out = [0]
    left = [len(rep["hands"][d]) for d in res.hand_at]
    last, passes = -1, 0
    for i, a in enumerate(rep["actions"]):
        if "play" in a:
            left[a["seat"]] -= len(core.parse_cards(a["play"]))
            last, passes = a["seat"], 0
        elif a.get("pass"):
            passes += 1
            if passes == sum(1 for s in range(4) if left[s] and s != last):
                out.append(i + 1)
    return [i for i in out if i < len(rep["actions"])]


def hands_before(rep: dict, index: int) -> list[list[int]]:
    res = score_replay(rep)
    hands = [list(core.parse_cards(rep["hands"][d])) for d in res.hand_at]
    for a in rep["actions"][:index]:
        if "play" in a:
            for c in core.parse_cards(a["play"]):
                hands[a["seat"]].remove(c)
    return hands


def corruptible(variant: str, seeds: range) -> list[dict]:
    generate_or_skip(variant, 0)
    return [generate_replay(variant, seed) for seed in seeds]


@pytest.mark.parametrize("variant", VARIANTS)
def test_corrupt_card_not_in_hand(variant: str) -> None:
    for rep in corruptible(variant, range(5)):
        i = next(i for i, a in enumerate(rep["actions"]) if "play" in a and i > 3)
        a = rep["actions"][i]
        held = hands_before(rep, i)[a["seat"]]
        deck = core.parse_cards(sum(rep["hands"], []))
        foreign = next(c for c in deck if c not in held)
        bad = copy.deepcopy(rep)
        bad["actions"][i]["play"] = [*a["play"][:-1], core.format_cards([foreign])[0]]
        err = rejected(bad)
        assert err.action == i and "does not hold" in err.detail


@pytest.mark.parametrize("variant", VARIANTS)
def test_corrupt_pass_on_the_lead(variant: str) -> None:
    for rep in corruptible(variant, range(5)):
        for i in leads(rep)[:3]:
            bad = copy.deepcopy(rep)
            bad["actions"][i] = {"seat": rep["actions"][i]["seat"], "pass": True}
            err = rejected(bad)
            assert err.action == i and "may not pass" in err.detail


@pytest.mark.parametrize("variant", VARIANTS)
def test_corrupt_wrong_seat(variant: str) -> None:
    for rep in corruptible(variant, range(5)):
        i = len(rep["actions"]) // 2
        bad = copy.deepcopy(rep)
        bad["actions"][i]["seat"] = (rep["actions"][i]["seat"] + 1) % 4
        err = rejected(bad)
        assert err.action == i and ("turn" in err.detail or "no cards left" in err.detail)


@pytest.mark.parametrize("variant", VARIANTS)
def test_corrupt_action_after_the_end(variant: str) -> None:
    for rep in corruptible(variant, range(3)):
        res = score_replay(rep)
        still = next(s for s in range(4) if s not in res.finish_order)
        for extra in ({"seat": still, "pass": True}, {"seat": still, "escape": True}):
            bad = copy.deepcopy(rep)
            bad["actions"].append(extra)
            err = rejected(bad)
            assert err.action == len(rep["actions"]) and "nothing may follow" in err.detail


@pytest.mark.parametrize("variant", VARIANTS)
def test_corrupt_play_that_does_not_beat(variant: str) -> None:
    found = 0
    for rep in corruptible(variant, range(20)):
        lead_at = set(leads(rep))
        for i, a in enumerate(rep["actions"]):
            prev = rep["actions"][i - 1] if i else None
            if i in lead_at or not prev or "play" not in prev or "play" not in a:
                continue
            standing = core.play_reading(prev["play"], rep["variant"]) \
                if "declare" not in prev else None
            if standing is None or standing.kind != "single" or standing.top >= 13:
                continue
            held = hands_before(rep, i)[a["seat"]]
            low = [c for c in held if core.card_rank(c) <= standing.top]
            if not low:
                continue
            bad = copy.deepcopy(rep)
            bad["actions"][i] = {"seat": a["seat"], "play": core.format_cards(low[:1])}
            err = rejected(bad)
            assert err.action == i and "does not beat" in err.detail
            found += 1
            break
        if found >= 3:
            break
    assert found


@pytest.mark.parametrize("variant", VARIANTS)
def test_corrupt_jiefeng(variant: str) -> None:
    if core.get_variant(variant).round_end == "first_out":
        pytest.skip("huopin ends at the first finisher: no 接风")
    found = 0
    for rep in corruptible(variant, range(40)):
        res = score_replay(rep)
        first = res.finish_order[0]
        left = [len(rep["hands"][d]) for d in res.hand_at]
        for i, a in enumerate(rep["actions"]):
            if "play" in a:
                left[a["seat"]] -= len(core.parse_cards(a["play"]))
            if a["seat"] == first and not left[first]:
                # find the lead after the passes that follow the going-out play
                j = i + 1
                while j < len(rep["actions"]) and rep["actions"][j].get("pass"):
                    j += 1
                if j < len(rep["actions"]) and j - i - 1 == sum(1 for s in range(4) if left[s]):
                    assert rep["actions"][j]["seat"] == (first + 2) % 4
                    bad = copy.deepcopy(rep)
                    bad["actions"][j]["seat"] = (first + 1) % 4
                    err = rejected(bad)
                    assert err.action == j and "接风" in err.detail
                    found += 1
                break
    assert found


def test_generated_replays_of_a_house_variant() -> None:
    generate_or_skip("baibian", 0)
    house = core.get_variant("bianfeng").replace(
        id="house", wild_jokers=["SJ", "BJ"], escape="fengkuang",
        base={"double": [6, 6, -6, -6], "single": [3, -3, 3, -3], "flat": [1, -1, -1, 1]})
    for seed in range(20):
        rep = generate_replay(house, seed, escape_prob=0.3)
        assert rep["variant"]["extends"] == "bianfeng" and rep["variant"]["id"] == "house"
        res = score_replay(json.dumps(rep))
        assert res.variant == "house"
        summary = summarize_replay(rep)
        assert score_round(**summary.score_args()).to_dict() == round_dict(res)
        if res.kind != "escape":
            assert res.total == 0
            assert {abs(s.base) for s in res.seats} <= {1, 3, 6}


# ----------------------------------------------------------------------------- the JSON face

def _json_face_agrees(rep: dict) -> str:
    """score_replay_json gives orjson's text of score_replay's to_dict(), or the same error;
    the round's own settle_json() is its RoundResult's."""
    import orjson

    text = json.dumps(rep, ensure_ascii=False)
    try:
        res = score_replay(text)
    except ReplayError as exc:
        with pytest.raises(ReplayError) as info:
            score_replay_json(text)
        assert (info.value.detail, info.value.action, info.value.field) == \
            (exc.detail, exc.action, exc.field)
        return "rejected"
    assert score_replay_json(text) == orjson.dumps(res.to_dict()).decode()
    rnd = replay_round(text)
    assert rnd.settle_json() == orjson.dumps(rnd.result().to_dict()).decode()
    return res.kind


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_json_face_is_to_dict_as_orjson_writes_it(variant: str) -> None:
    """The batch records' JSON text, written by the settlement itself (core_ext/_settle.pyx),
    is byte for byte what orjson writes of the record's to_dict(): every kind, escapes, and
    the same errors where a replay does not score."""
    generate_or_skip(variant, 0)
    kinds = {_json_face_agrees(generate_replay(variant, seed, escape_prob=0.2))
             for seed in range(120)}
    assert len(kinds) >= 3, kinds


def test_the_json_face_of_house_variants() -> None:
    """Per-bomb contributions (events with bomb numbers), contributions to a team, a
    non-ASCII id, a stake and table fee, and a settlement beyond 64 bits (the same error)."""
    generate_or_skip("baibian", 0)
    per_bomb = core.get_variant("bianfeng").replace(
        id="庄家_1", contribution_mode="per_bomb", contribution_recipients="team",
        escape="huopin")
    events = 0
    for seed in range(60):
        rep = generate_replay(per_bomb, seed, escape_prob=0.3)
        rep["stake"], rep["table_fee"] = 7, 3
        _json_face_agrees(rep)
        with contextlib.suppress(ReplayError):
            events += len(score_replay(rep).contributions)
    assert events > 0
    million = 10**6
    huge = core.get_variant("bianfeng").replace(
        id="huge", multiplier=[[1, million]],
        base={k: [million * (1 if x > 0 else -1) for x in row]
              for k, row in core.get_variant("bianfeng").base.items()})
    beyond = 0
    for seed in range(20):
        rep = generate_replay(huge, seed)
        rep["stake"] = 10**9
        if _json_face_agrees(rep) == "rejected":
            beyond += "64-bit" in rejected(rep).detail
    assert beyond
