"""Rounds between two teams of players: a shuffled deal, a round played out, a team's
points."""

from __future__ import annotations

import random

from shuangkou import core
from shuangkou.core import Round
from shuangkou.core.cards import SEATS
from shuangkou.core.generate import deal
from shuangkou.core.suggest import SeatStyles
from shuangkou.core.variants import Variant

from .players import Player

__all__ = ["VARIANTS", "new_round", "play", "team_points"]

#: the built-in variants, in their order
VARIANTS = [v.id for v in core.list_variants()]


def new_round(v: Variant, rng: random.Random) -> Round:
    """A shuffled deal; the leader reveals a random card of its hand (teams stated with
    three decks, where the revealed card cannot form them)."""
    hands = deal(v, rng)
    leader = rng.randrange(SEATS)
    if v.decks == 2:
        return Round.deal(v, hands, leader, revealed=[rng.choice(hands[leader])])
    return Round.deal(v, hands, leader, partner=(leader + 2) % SEATS)


def play(r: Round, team: int, ours: Player, theirs: Player, rng: random.Random,
         seats: SeatStyles | None = None) -> Round:
    """Play ``r`` out: ``team``'s seats (0: seats 0/2, 1: 1/3) play ``ours``, the others
    ``theirs``; every action tallied in ``seats`` when given."""
    while not r.is_over:
        player = ours if r.turn % 2 == team else theirs
        if seats is None:
            player(r, rng)
        else:
            seats.track(r, lambda: player(r, rng))  # noqa: B023 - called at once
    return r


def team_points(r: Round, team: int) -> int:
    """The points of ``team`` (0: seats 0/2, 1: 1/3) in the finished round ``r``."""
    final = r.result().final
    return final[team] + final[team + 2]
