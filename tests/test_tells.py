"""core_ext/tells.py: each decision's tell of the partner's hand and of the opponents',
checked against the definition written out here from the module doc (whether a hand beats
a play is asked of ``legal_plays``, not of the ``count_plays`` the module uses; the
reference is the 提示 button's first hint, ``suggest``), and a round's tell score against
the sum written out by hand."""

from __future__ import annotations

from typing import Any

import pytest

from shuangkou.core import generate_replay, legal_plays
from shuangkou.core.fairplay import RoundScore
from shuangkou.core.replay import parse_replay
from shuangkou.core.suggest import suggest
from shuangkou.core.tells import DECOYS, Tell, opponents_tell, sight_score, tell, tell_score

ORDINARY_BOMBS = {"bomb", "joker_bomb_3", "joker_bomb_4", "chain_bomb"}


def _beats(hand: tuple[int, ...], variant: Any, reading: Any) -> float:
    """Whether ``hand`` has a legal play over ``reading`` that is no bomb."""
    if not hand:
        return 0.0
    return float(any(p.reading.kind not in ORDINARY_BOMBS
                     for p in legal_plays(list(hand), variant, reading)))


def _partner_after(r: Any, seat: int) -> bool:
    """Whether ``seat``'s partner still acts in this trick after it (RULES.md §9: the turn
    goes round the seats holding cards until the play stands)."""
    partner = (seat + 2) % 4
    if not r.cards_left[partner]:
        return False
    st = r.standing
    if st is None:
        return True
    order = [s for s in ((st.seat + k) % 4 for k in (1, 2, 3)) if r.cards_left[s] or s == seat]
    return partner in order[order.index(seat) + 1:]


def _after(r: Any, seat: int) -> list[int]:
    """The seats still to act in this trick after ``seat`` when a play stands (RULES.md §9)."""
    st = r.standing
    order = [s for s in ((st.seat + k) % 4 for k in (1, 2, 3)) if r.cards_left[s] or s == seat]
    return order[order.index(seat) + 1:]


def _decisions(variant: str, seed: int) -> list[tuple[Any, Any, Any, int]]:
    """Every (round before, action, record, index) of a generated round."""
    typed = parse_replay(generate_replay(variant, seed))
    r = typed.start()
    out = []
    for i, action in enumerate(typed.actions):
        before = r.copy()
        record = r.apply(action)
        out.append((before, action, record, i))
    return out


def _ordinary(reading: Any) -> bool:
    return reading is not None and reading.kind not in ORDINARY_BOMBS


@pytest.mark.parametrize("variant,seed", [("baibian", 1), ("huopin", 2), ("fengkuang", 3),
                                          ("bianfeng", 4)])
def test_each_decision_tells_what_the_definition_says(variant: str, seed: int) -> None:
    """A lead other than the reference's (both ordinary), the partner still to act: whether
    the partner beats the play led less whether it beats the reference's. A follow over an
    opponent's play, the partner still to act after the seat, passing where the reference
    plays or playing where it passes: whether the partner beats the standing play. Nothing
    else tells, and a seat that plays the reference never does."""
    kinds = set()
    for before, action, record, i in _decisions(variant, seed):
        seat = before.turn
        got = tell(before, action.cards, record.reading, seed=7, index=i)
        assert got == tell(before.copy(), action.cards, record.reading, seed=7, index=i)
        ref = suggest(before)
        st = before.standing
        hand = before.hand((seat + 2) % 4)
        passed = action.kind == "pass"
        follows = st is not None and st.seat % 2 != seat % 2 and passed != (ref.kind == "pass")
        leads = st is None and _ordinary(record.reading) and _ordinary(ref.reading) and \
            sorted(ref.cards) != sorted(action.cards)
        if not _partner_after(before, seat) or not (follows or leads):
            assert got is None, (i, got)
            continue
        assert got is not None
        kinds.add(got.kind)
        assert len(got.decoy_values) == DECOYS
        if follows:
            assert got.kind == "follow" and got.passed == passed
            assert got.value == _beats(hand, before.variant, st.reading)
            assert set(got.decoy_values) <= {0.0, 1.0}
            assert got.score == (got.excess if passed else -got.excess)
        else:
            assert got.kind == "lead" and not got.passed and got.score == got.excess
            assert got.value == _beats(hand, before.variant, record.reading) - _beats(
                hand, before.variant, ref.reading)
    assert kinds == {"lead", "follow"}


@pytest.mark.parametrize("variant,seed", [("baibian", 1), ("huopin", 2), ("qianbian", 3),
                                          ("bianfeng", 4)])
def test_each_beat_tells_what_the_definition_says(variant: str, seed: int) -> None:
    """A beat: an ordinary play over an opponent's, an opponent still to act after the seat,
    and the reference another ordinary beat; its value is whether no opponent after can
    beat the play chosen (ordinarily) less the same of the reference's."""
    seen = 0
    for before, action, record, i in _decisions(variant, seed):
        seat = before.turn
        got = opponents_tell(before, action.cards, record.reading, seed=7, index=i)
        assert got == opponents_tell(before.copy(), action.cards, record.reading, seed=7,
                                     index=i)
        st = before.standing
        ref = suggest(before)
        opponents = [] if st is None else [s for s in _after(before, seat) if s % 2 != seat % 2]
        if st is None or st.seat % 2 == seat % 2 or not opponents or \
                not _ordinary(record.reading) or not _ordinary(ref.reading) or \
                sorted(ref.cards) == sorted(action.cards):
            assert got is None, (i, got)
            continue
        seen += 1
        assert got is not None and got.kind == "beat" and not got.passed
        assert len(got.decoy_values) == DECOYS and got.score == got.excess

        def safe(reading: Any, r: Any = before, after: list[int] = opponents) -> float:
            return float(not any(_beats(r.hand(s), r.variant, reading) for s in after))
        assert got.value == safe(record.reading) - safe(ref.reading)
    assert seen > 0


def test_a_seats_sight_score_adds_its_beats_to_its_tells() -> None:
    beat = Tell("beat", False, 1.0, (0.0,) * 8)                         # excess +1
    follow = Tell("follow", True, 1.0, (0.0, 1.0))                     # excess +0.5
    assert sight_score([beat, follow]) == RoundScore(1.5, 1.5, 2)
    assert sight_score([]) is None


def test_a_seats_tell_score_sums_its_tells_a_follow_signed_by_its_departure() -> None:
    lead = Tell("lead", False, 0.5, (0.0,) * 4 + (0.5,) * 4)        # excess 0.5 - 0.25
    pass_beat = Tell("follow", True, 1.0, (0.0, 1.0))                 # passed: +0.5
    play_beat = Tell("follow", False, 1.0, (1.0, 1.0))                # played: -0
    play_none = Tell("follow", False, 0.0, (1.0, 0.0))                # played: -(-0.5)
    want = 0.25 + 0.5 - 0.0 + 0.5
    got = tell_score([[lead, pass_beat, play_beat, play_none]])
    assert got == RoundScore(pytest.approx(want), pytest.approx(want), 4)
    # a partnership's seats are summed
    both = tell_score([[pass_beat], [play_none]])
    assert both == RoundScore(1.0, 1.0, 2)
    assert tell_score([[], []]) is None
