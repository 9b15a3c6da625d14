"""The players that are not styles — uniform random play, the rule policy, a search — and
how a search's ranked choice becomes the seat's action.

A :data:`Player` is a function ``(round, rng) -> None`` that makes the seat to act take its
action; the styles (:mod:`.styles`) are players too.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

from shuangkou.core import Declaration, Round, _search
from shuangkou.core._suggest import choose_in
from shuangkou.core.rollouts import ChoiceRule, choose
from shuangkou.core.suggest import SeatStyles

__all__ = ["Player", "Ranked", "act", "random_action", "rule_action", "rule_player", "search",
           "search_player"]

#: One searched candidate as the panel reads it: (cards, reading, declared, reason, danger,
#: points, wins, se, deals), points and wins its mean gains over the rule policy's action.
Ranked = tuple[Any, ...]

Player = Callable[[Round, random.Random], None]


def act(r: Round, cards: tuple[int, ...], reading: Any, declared: bool) -> None:
    """The seat to act takes a ranked choice of the search or the rule policy (its first
    three fields: the cards, empty for a pass; their reading; whether it is declared)."""
    seat = r.turn
    if not cards:
        r.pass_turn(seat)
    elif declared:
        r.play(seat, cards, Declaration(reading.kind, reading.top, reading.star or None))
    else:
        r.play(seat, cards)


def random_action(r: Round, rng: random.Random) -> None:
    """Uniformly one of the legal actions (every legal play, and the pass when following)."""
    plays = r.legal_plays()
    pick = rng.randrange(len(plays) + (r.standing is not None))
    if pick == len(plays):
        r.pass_turn(r.turn)
    else:
        r.play(r.turn, plays[pick].cards)


def rule_action(r: Round) -> tuple[Any, ...]:
    """The rule policy's action as (cards, reading, declared)."""
    p = choose_in(r)[0]
    return (p.cards, p.reading, p.declared)


def rule_player(r: Round, rng: random.Random) -> None:
    """The rule policy (托管 without a budget)."""
    act(r, *rule_action(r))


def search(r: Round, *, margin: float = 1.0, count: int = 1,
           **kw: Any) -> tuple[list[Ranked], dict[str, Any]]:
    """The engine's search (core._search.search with ``kw``) ranked as 托管 ranks it — the
    engine's choice at ``margin`` first (rollouts.choose), then the candidates still in the
    race by their gain — the first ``count``, and what it spent (rollouts, deals, width,
    kept: the rule policy's action was chosen)."""
    ev = _search.search(r, **kw)
    cands = ev.candidates
    best = choose(ev, ChoiceRule("value", margin))
    order = sorted(range(len(cands)), key=lambda k: (k != best, not cands[k].live,
                                                     -cands[k].gain, k))
    ranked = [(c.cards, c.reading, c.declared, c.reason, c.danger, c.gain_points,
               c.gain_first, c.gain_se, c.deals) for c in (cands[k] for k in order[:count])]
    return ranked, {"rollouts": ev.rollouts, "deals": ev.deals, "width": len(cands),
                    "kept": best == 0}


def search_player(model: str, rollouts: int, ms: float, cpu: list[float] | None = None,
                  exact: int = 0, infer: bool = False, win: float | None = None,
                  race: bool = False, margin: float = 1.0,
                  seats: SeatStyles | None = None, width: int = 6,
                  partner_bomb: bool = True) -> Player:
    """A seat that searches each decision (``core._search.search`` with these arguments; the
    CPU of those with more than one candidate goes to ``cpu``, in ms); with ``seats`` (the
    round's actions tallied by :func:`~research.panel.rounds.play`), its rollouts draw the
    other seats' styles as their actions read."""
    def play(r: Round, rng: random.Random) -> None:
        c = time.thread_time()
        read = seats.weights(r.variant, model) if seats is not None else None
        ranked, stats = search(r, rollouts=rollouts, ms=ms, model=model, exact=exact,
                               infer=infer, win=win, race=race, margin=margin, read=read,
                               width=width, partner_bomb=partner_bomb)
        if cpu is not None and stats["width"] > 1:
            cpu.append((time.thread_time() - c) * 1e3)
        act(r, *ranked[0][:3])
    return play
