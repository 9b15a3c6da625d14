"""The rollout engine's records and its one choice rule (core_ext/rollouts.py), its drivers
(core_ext/_search.pyx), and rollouts that leave the GIL to the process's other threads."""

from __future__ import annotations

import dataclasses
import random
from dataclasses import replace

import pytest
from review_rounds import played

from shuangkou import core
from shuangkou.core import _search
from shuangkou.core.generate import deal
from shuangkou.core.review import ReviewBudget, review
from shuangkou.core.rollouts import (
    REVIEW_CHOICE,
    TUOGUAN_CHOICE,
    ChoiceRule,
    Evaluated,
    Evaluation,
    choose,
)
from shuangkou.core.suggest import TUOGUAN, suggestions


def candidate(gain: float, se: float, *, points: float = 0.0, points_se: float = 0.0,
              live: bool = True, deals: int = 40) -> Evaluated:
    return Evaluated((), None, False, 0, 99, 0, live, deals, 0.0, 0.0, gain, se, points,
                     points_se, 0.0, 0.0, 0.0, None, None)


def evaluation(*cands: Evaluated) -> Evaluation:
    return Evaluation(0, (candidate(0.0, 0.0), *cands), None, False, 40, 0, 40 * 3, 900, 0,
                      0.01, False, False)


def test_the_choice_is_the_largest_gain_beyond_its_margin_else_the_rule_policy() -> None:
    ev = evaluation(candidate(2.0, 0.5), candidate(3.0, 2.0), candidate(2.5, 0.5))
    assert choose(ev, ChoiceRule("value", 3.0)) == 3     # 2.5 > 1.5; 3.0 is not > 6.0
    assert choose(ev, ChoiceRule("value", 1.0)) == 2     # all qualify: the largest gain
    assert choose(ev, ChoiceRule("value", 0.0)) == 2
    assert choose(ev, ChoiceRule("value", 10.0)) == 0
    # exactly the margin is not beyond it; a tie keeps the first
    assert choose(evaluation(candidate(1.0, 1.0)), ChoiceRule("value", 1.0)) == 0
    assert choose(evaluation(candidate(2.0, 0.1), candidate(2.0, 0.1)),
                  ChoiceRule("value", 1.0)) == 1
    # a candidate the race dropped, or one of under two deals, is never chosen
    assert choose(evaluation(candidate(9.0, 0.1, live=False)), TUOGUAN_CHOICE) == 0
    assert choose(evaluation(candidate(9.0, 0.1, deals=1)), TUOGUAN_CHOICE) == 0
    # the measure: value (points + the win bonus) or points
    ev = evaluation(candidate(5.0, 0.1, points=-1.0, points_se=0.1),
                    candidate(0.5, 0.1, points=2.0, points_se=0.5))
    assert choose(ev, ChoiceRule("value", 3.0)) == 1
    assert choose(ev, ChoiceRule("points", 1.0)) == 2


def test_records_are_frozen() -> None:
    c = candidate(1.0, 1.0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.gain = 2.0  # type: ignore[misc]


def test_the_choice_ties_the_expected_difference_of_the_two_settings() -> None:
    """The two named settings of the one rule: 托管 on value at its Budget's margin (three by
    default), the review on points at one."""
    assert (TUOGUAN_CHOICE.measure, TUOGUAN_CHOICE.margin) == ("value", TUOGUAN.margin)
    assert (REVIEW_CHOICE.measure, REVIEW_CHOICE.margin) == ("points", 1.0)


@pytest.mark.parametrize("variant", ["baibian", "huopin"])
def test_tuoguan_plays_the_engines_choice_at_its_margin(variant: str) -> None:
    """suggest's first action is the candidate ``choose`` names on the driver's own
    evaluation, at the Budget's margin, position after position."""
    v = core.get_variant(variant)
    r = core.Round.deal(v, deal(v, random.Random(f"choice/{variant}")), 0, partner=2)
    checked = 0
    for margin in (3.0, 1.0, 0.0):
        budget = replace(TUOGUAN, rollouts=120, ms=0.0, margin=margin)
        x = r.copy()
        for _ in range(25):
            if x.is_over:
                break
            ranked = suggestions(x, budget=budget, seed=9)
            ev = _search.search(x, rollouts=120, seed=9, model=budget.model, race=budget.race,
                                partner_bomb=budget.partner_bomb)
            chosen = ev.candidates[choose(ev, ChoiceRule("value", margin))]
            first = ranked.actions[0]
            assert first.cards == chosen.cards and first.deals == chosen.deals
            checked += len(ev.candidates) > 1
            if first.kind == "pass":
                x.pass_turn(first.seat)
            else:
                x.play(first.seat, first.cards, first.declaration)
    assert checked


def test_the_review_names_the_engines_choice_on_points() -> None:
    """Each reviewed decision's ``choice`` is ``choose`` at REVIEW_CHOICE on the evaluation
    of that decision."""
    doc = played("baibian", 3, "rule")
    rv = review(doc, budget=ReviewBudget(rollouts=120), seed=2)
    typed = core.parse_replay(doc)
    rnd = typed.start()
    checked = 0
    for i, action in enumerate(typed.actions):
        before = rnd.copy()
        record = rnd.apply(action)
        d = next(d for d in rv.decisions if d.index == i)
        if d.forced:
            continue
        ev = _search.evaluate(before, (action.cards, record.reading, action.declare is not None),
                              rollouts=120, seed=2, width=6, model="mix")
        want = ev.candidates[choose(ev, REVIEW_CHOICE)]
        got = d.candidates[d.choice]
        assert (got.cards if not got.taken else tuple(action.cards)) == (
            want.cards if not got.taken else tuple(action.cards))
        assert got.hint_rank == want.hint_rank
        checked += 1
        if checked >= 12:
            break
    assert checked >= 6
