"""The thrown-round test (core_ext/fairplay.py): each decision's chance to block checked
against the definition written out here from the module doc (whether the seat has a play
over its partner's is asked of ``legal_plays``, not of the ``count_plays`` the module uses),
and the test's p-value against the exact one, counted over every way of dealing the blocks
among the chances, and its false alarms on players who block at a steady rate."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from shuangkou.core import generate_replay, legal_plays
from shuangkou.core.fairplay import RoundBlocks, over_partner, thrown_signal
from shuangkou.core.replay import parse_replay


def _chance(before: Any, cards: tuple[int, ...]) -> bool | None:
    """RULES.md §9: a seat may pass or beat the play that stands; a chance is the partner's
    play standing and a play over it in the seat's hand; a block plays over it and keeps a
    card."""
    seat = before.turn
    st = before.standing
    if seat is None or st is None or st.seat != (seat + 2) % 4:
        return None
    if not cards:
        return False if legal_plays(list(before.hand(seat)), before.variant, st.reading) \
            else None
    return len(before.hand(seat)) > len(cards)


@pytest.mark.parametrize("variant,seed", [("baibian", 11), ("huopin", 12), ("fengkuang", 13),
                                          ("bianfeng", 14), ("qianbian", 15)])
def test_each_decisions_chance_to_block_is_the_definitions(variant: str, seed: int) -> None:
    seen = set()
    typed = parse_replay(generate_replay(variant, seed))
    r = typed.start()
    for action in typed.actions:
        before = r.copy()
        r.apply(action)
        if action.kind == "escape":
            continue
        got = over_partner(before, action.cards)
        assert got == _chance(before, action.cards), (variant, seed, action)
        seen.add(got)
    assert seen == {None, False, True}


def _exact(rounds: list[RoundBlocks]) -> float:
    """The share of all ways of dealing the blocks among the chances whose Σ blocks² is at
    least the observed."""
    slots = [k for k, r in enumerate(rounds) for _ in range(r.chances)]
    total = sum(r.blocks for r in rounds)
    observed = sum(r.blocks ** 2 for r in rounds)
    ways = hits = 0
    for chosen in itertools.combinations(range(len(slots)), total):
        counts = [0] * len(rounds)
        for i in chosen:
            counts[slots[i]] += 1
        ways += 1
        hits += sum(c * c for c in counts) >= observed
    return hits / ways


@pytest.mark.parametrize("blocks,chances", [((3, 0, 0, 0), (3, 2, 4, 3)),
                                            ((2, 1, 0, 1), (3, 2, 4, 3)),
                                            ((1, 1, 1, 1), (2, 2, 2, 2)),
                                            ((4, 1, 0), (5, 3, 4))])
def test_the_p_value_is_the_exact_one(blocks: tuple[int, ...],
                                      chances: tuple[int, ...]) -> None:
    rounds = [RoundBlocks(b, c) for b, c in zip(blocks, chances, strict=True)]
    got = thrown_signal(rounds, permutations=20000, enough=10**6, seed=3)
    assert got.p == pytest.approx(_exact(rounds), abs=0.012)
    assert got.estimate == sum(b * b for b in blocks) / sum(blocks)
    assert got.low <= got.high
    assert got == thrown_signal(rounds, permutations=20000, enough=10**6, seed=3)


def test_steady_blocking_is_flagged_at_most_at_the_nominal_rate() -> None:
    """Players who block each chance at a rate of their own (from never to most of the
    time), over 10 to 50 rounds of 1 to 6 chances: at p < 0.05 a share at most 5 %, beyond
    the sampling error of 400 players; a player whose blocks crowd into two rounds is."""
    rng = random.Random(5)
    flagged = 0
    players = 400
    for _ in range(players):
        rate = rng.choice((0.02, 0.1, 0.3, 0.6))
        rounds = []
        for _ in range(rng.choice((10, 20, 50))):
            n = rng.randint(1, 6)
            rounds.append(RoundBlocks(sum(rng.random() < rate for _ in range(n)), n))
        flagged += thrown_signal(rounds, seed=rng.randrange(10**6)).p < 0.05
    assert flagged / players <= 0.05 + 2 * (0.05 * 0.95 / players) ** 0.5
    crowded = [RoundBlocks(0, 3)] * 8 + [RoundBlocks(3, 4), RoundBlocks(2, 3)]
    assert thrown_signal(crowded, ["x"] * 10).note == "round 8: 3 of 4 chances blocked; x gained most"
    assert thrown_signal(crowded).p < 0.01


def test_no_block_names_no_round_and_bad_counts_are_refused() -> None:
    assert thrown_signal([RoundBlocks(0, 3)] * 12).p == 1.0
    assert thrown_signal([RoundBlocks(0, 3)] * 12).note == ""
    assert thrown_signal([RoundBlocks(1, 3)] + [RoundBlocks(0, 3)] * 11).p == 1.0
    with pytest.raises(ValueError, match="blocks must be 0 to its chances"):
        thrown_signal([RoundBlocks(4, 3)])
