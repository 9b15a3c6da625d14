"""Rounds played by known policies, as replay documents: what the review is checked on
(tests/test_review.py) and measured on (bench/bench_review.py).

``played(variant, seed, policy)`` deals a seeded round (the leader's partner opposite, so
dealt and table seats are the same) and plays it to its end with ``policy`` in all four
seats: ``"random"`` (a uniformly random legal action: every distinct play, and the pass when
following), ``"rule"`` (the rule policy, suggest with no budget) or ``"search"`` (the 托管
search at ``rollouts``). Usable from benchmarks as ``from tests.review_rounds import played``
(repository root on ``sys.path``).
"""

from __future__ import annotations

import random
from typing import Any

from shuangkou.core import Round, format_cards, get_variant
from shuangkou.core.cards import rank_name
from shuangkou.core.generate import deal
from shuangkou.core.suggest import Budget, suggest

POLICIES = ("random", "rule", "search")


def played(variant: str, seed: int, policy: str = "rule", *, rollouts: int = 60,
           search_seats: tuple[int, ...] = (0, 1, 2, 3)) -> dict[str, Any]:
    """A complete replay document of one round played by ``policy`` (module doc); with
    ``search_seats`` the search plays only those seats and the rule policy the others."""
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}; got {policy!r}")
    v = get_variant(variant)
    rng = random.Random(f"review/{v.id}/{seed}")
    hands = deal(v, rng)
    leader = seed % 4
    r = Round.deal(v, hands, leader, partner=(leader + 2) % 4)
    actions: list[dict[str, Any]] = []
    while not r.is_over:
        seat = r.turn
        assert seat is not None
        if policy == "random":
            options: list[Any] = list(r.legal_plays())
            if r.standing is not None:
                options.append(None)
            pick = rng.choice(options)
            if pick is None:
                r.pass_turn(seat)
                actions.append({"seat": seat, "pass": True})
            else:
                r.play(seat, pick.cards)       # undeclared: the first reading that beats
                actions.append({"seat": seat, "play": format_cards(list(pick.cards))})
            continue
        budget = (Budget(rollouts=rollouts) if policy == "search" and seat in search_seats
                  else Budget())
        s = suggest(r, budget=budget, seed=seed)
        if s.kind == "pass":
            r.pass_turn(seat)
            actions.append({"seat": seat, "pass": True})
            continue
        r.play(seat, s.cards, s.declaration)
        a: dict[str, Any] = {"seat": seat, "play": format_cards(list(s.cards))}
        if s.declaration is not None:
            a["declare"] = s.declaration.kind
            a["declare_top"] = rank_name(s.reading.top)
            if s.reading.star:
                a["declare_star"] = s.reading.star
        actions.append(a)
    return {"variant": v.id, "hands": [format_cards(h) for h in hands], "leader": leader,
            "partner": (leader + 2) % 4, "actions": actions}
