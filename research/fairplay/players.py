"""The fair-play panel's players: honest ones of every panel style and strength, and the
cheats — hand-sharing partnerships and full-sight clients on two engines (the search told
the hands, :func:`searcher`; plain rules, :mod:`.sighted`), round throwers
(:func:`thrower`) and engine-assisted players (:func:`assisted`).

Every player is a research.panel :data:`~research.panel.Player` (``(round, rng) -> None``:
the seat to act takes its action). A cheat reads the hands it should not see with
``Round.hand``, as a client sent them would; an honest player never does. A :data:`Seat`
makes the player of one seat for one round and says what it drew for it (a thrower draws
whether it throws the round), so that the archive records it.

The search is 托管's (``suggest.TUOGUAN``: the mixture of styles in its rollouts, racing, a
margin of three standard errors in value, no bomb over the partner's standing play) at
:data:`SEARCH_ROLLOUTS` rollouts and no time cap, so that a seed fixes every choice; a
cheat's search keeps the hands it is told as they are in every rollout
(``core._search.search``'s ``sees``). The engine-assisted player asks 托管 itself
(``core.suggest.suggest`` at :data:`ASSIST`, 托管's budget without its time cap).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from research.panel import PANEL, Player, act, random_action, rule_player, search
from shuangkou.core import Round
from shuangkou.core.cards import SEATS
from shuangkou.core.suggest import TUOGUAN, suggest

__all__ = ["ASSIST", "ASSIST_SHARE", "HONEST", "SEARCH_ROLLOUTS", "SIGHTS", "THROW_SHARE",
           "WEAKER", "Seat", "assisted", "honest_seat", "searcher", "thrower"]

#: The rollouts of the panel's search (托管 spends 1,200, capped at 100 ms).
SEARCH_ROLLOUTS = 600
#: The rollouts of the panel's weaker searches: honest players between the rule policy and
#: the search in strength (docs/BENCHMARKS.md "Fair play").
WEAKER = (50, 200)
#: 托管's budget as the engine-assisted player asks it: without the time cap (a seed then
#: fixes its choice).
ASSIST = replace(TUOGUAN, ms=0.0)
#: The share of its decisions an engine-assisted player hands to 托管.
ASSIST_SHARE = 0.5
#: The share of its rounds a thrower throws (drawn per round).
THROW_SHARE = 0.25
#: What a search is told, by name: nothing, the partner's hand, every hand.
SIGHTS = ("own", "partner", "all")

#: A seat's player for one round and what was drawn for it (recorded by the archive).
Seat = Callable[[random.Random], tuple[Player, dict[str, Any]]]


def _told(seat: int, sight: str) -> tuple[int, ...]:
    if sight == "partner":
        return ((seat + 2) % SEATS,)
    if sight == "all":
        return tuple(s for s in range(SEATS) if s != seat)
    return ()


def searcher(sight: str = "own", rollouts: int = SEARCH_ROLLOUTS) -> Player:
    """托管's search at ``rollouts`` (module doc) told ``sight`` (:data:`SIGHTS`): ``own``
    is honest, ``partner`` a hand-sharing partnership's seat, ``all`` a full-sight client."""
    if sight not in SIGHTS:
        raise ValueError(f"sight must be one of {SIGHTS}; got {sight!r}")

    def play(r: Round, rng: random.Random) -> None:
        seat = r.turn
        assert seat is not None
        ranked, _ = search(r, rollouts=rollouts, ms=0.0, model=TUOGUAN.model,
                           exact=TUOGUAN.exact, race=TUOGUAN.race, margin=TUOGUAN.margin,
                           partner_bomb=TUOGUAN.partner_bomb, seed=rng.getrandbits(63),
                           sees=_told(seat, sight))
        act(r, *ranked[0][:3])
    return play


def assisted(base: Player, share: float = ASSIST_SHARE) -> Player:
    """A seat that plays 托管's choice (``suggest`` at :data:`ASSIST`) on ``share`` of its
    decisions, drawn per decision, and ``base`` on the others."""
    def play(r: Round, rng: random.Random) -> None:
        if rng.random() >= share:
            base(r, rng)
            return
        seat = r.turn
        assert seat is not None
        s = suggest(r, budget=ASSIST, seed=rng.getrandbits(63))
        if s.kind == "pass":
            r.pass_turn(seat)
        else:
            r.play(seat, s.cards, s.declaration)
    return play


def thrower(base: Player, throw: Player, share: float = THROW_SHARE) -> Seat:
    """A seat that throws ``share`` of its rounds (drawn per round, recorded as
    ``{"throws": bool}``) by playing ``throw``, and plays ``base`` the others."""
    def seat(rng: random.Random) -> tuple[Player, dict[str, Any]]:
        throws = rng.random() < share
        return (throw if throws else base), {"throws": throws}
    return seat


def honest_seat(player: Player) -> Seat:
    """The same player every round, nothing drawn."""
    def seat(rng: random.Random) -> tuple[Player, dict[str, Any]]:
        return player, {}
    return seat


#: The honest players by name: the five panel styles, the rule policy, uniform random play
#: and 托管's search (module doc).
HONEST: dict[str, Player] = {**PANEL, "rule": rule_player, "random": random_action,
                             "search": searcher("own")}
