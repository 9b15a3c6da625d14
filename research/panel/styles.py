"""The panel's styles (issue 34): players of clearly different styles for measuring 托管.

Each is written apart from the rule policy and from the search's rollout models
(core_ext/_suggest.pyx, _search.pyx): it sees only its own hand and the public table and
lists its legal plays with the core's public enumeration API (``Round.legal_plays``), then
picks by its own plain rules. Every one goes out when a legal play empties its hand.

* ``cautious`` — a cautious shedder: sheds its lowest plays, never spends a wild joker or
  breaks a four-of-a-kind in an ordinary play, and bombs only when an opponent is down to
  two cards or fewer;
* ``bomber`` — an aggressive beater: beats every opponent's play it can with its strongest
  ordinary beat, else its smallest bomb, and leads its longest play;
* ``blind`` — a partner-blind greedy player: always plays its cheapest legal play, over
  partner and opponent alike, leading the play that sheds the most cards;
* ``hoarder`` — a wild-hoarder: keeps wild jokers and bombs to the end (plays them only to
  go out or when nothing else is left), leads its longest play of low cards, follows with
  its cheapest beat, never overtakes its partner;
* ``team`` — the plain greedy team player of issue 34: sheds the cheapest play, spares bombs
  and wilds, never overtakes its partner, bombs only when an opponent has five cards or
  fewer.

``PANEL`` maps each name to a :data:`~research.panel.players.Player`: a function ``(round,
rng) -> None`` that makes the seat to act take its action.
"""

from __future__ import annotations

import random
from typing import Any

from shuangkou.core import Round
from shuangkou.core.cards import SEATS, card_rank

from .players import Player

__all__ = ["PANEL", "cautious", "bomber", "blind", "hoarder", "team"]

SJ, BJ = 13, 14


def _ranks(cards: Any) -> list[int]:
    counts = [0] * 15
    for c in cards:
        counts[card_rank(c)] += 1
    return counts


class _View:
    """What the seat to act sees, with the facts every panel style weighs."""

    def __init__(self, r: Round) -> None:
        self.r = r
        self.seat: int = r.turn  # type: ignore[assignment]
        self.hand = r.hand(self.seat)
        self.held = _ranks(self.hand)
        st = r.standing
        self.following = st is not None
        self.partner_leads = st is not None and st.seat == (self.seat + 2) % SEATS
        v = r.variant
        self.wild = {SJ for w in v.wild_jokers if w == "SJ"} | {BJ for w in v.wild_jokers
                                                                  if w == "BJ"}
        left = r.cards_left
        opp = [left[s] for s in range(SEATS) if s % 2 != self.seat % 2 and left[s]]
        self.danger = min(opp) if opp else 99
        self.plays = list(r.legal_plays())

    def out(self) -> Any:
        """A legal play that empties the hand, or None."""
        n = len(self.hand)
        return next((p for p in self.plays if len(p.cards) == n), None)

    def precious(self, p: Any) -> bool:
        """Spends a wild joker or breaks a rank held four or more times."""
        used = _ranks(p.cards)
        return any(used[w] for w in self.wild) or any(
            used[k] and self.held[k] >= 4 and used[k] < self.held[k] for k in range(15))

    def low(self, p: Any) -> tuple[int, int]:
        """Lower is cheaper: the top rank, then fewer cards."""
        return (p.reading.top, len(p.cards))

    def act(self, p: Any) -> None:
        if p is None:
            self.r.pass_turn(self.seat)
        else:
            self.r.play(self.seat, p.cards, p.reading.declaration)


def _bomb_key(p: Any) -> tuple[int, ...]:
    return tuple(p.reading.key)


def cautious(r: Round, rng: random.Random) -> None:
    """Sheds its lowest plays, keeps wilds and bombs until an opponent has 1-2 cards."""
    v = _View(r)
    p = v.out()
    if p is None and not v.partner_leads:
        plain = [p for p in v.plays if not p.reading.is_bomb and not v.precious(p)]
        bombs = sorted((p for p in v.plays if p.reading.is_bomb), key=_bomb_key)
        if plain:
            p = min(plain, key=lambda q: (q.reading.top, -len(q.cards)) if not v.following
                    else v.low(q))
        elif bombs and (v.danger <= 2 or not v.following):
            p = bombs[0]
        elif not v.following:
            p = min(v.plays, key=v.low)
    v.act(p)


def bomber(r: Round, rng: random.Random) -> None:
    """Beats every opponent's play it can — strongest ordinary beat, else smallest bomb —
    and leads its longest play."""
    v = _View(r)
    p = v.out()
    if p is None and not v.partner_leads:
        ordinary = [p for p in v.plays if not p.reading.is_bomb]
        bombs = sorted((p for p in v.plays if p.reading.is_bomb), key=_bomb_key)
        if not v.following:
            p = max(ordinary or bombs, key=lambda q: (len(q.cards), -q.reading.top))
        elif ordinary:
            p = max(ordinary, key=lambda q: (q.reading.top, -len(q.cards)))
        elif bombs:
            p = bombs[0]
    v.act(p)


def blind(r: Round, rng: random.Random) -> None:
    """Always its cheapest legal play, whoever made the standing play; leads the play that
    sheds the most cards."""
    v = _View(r)
    p = v.out()
    if p is None and v.plays:
        if v.following:
            p = min(v.plays, key=lambda q: (q.reading.is_bomb, _bomb_key(q), q.reading.top))
        else:
            p = max(v.plays, key=lambda q: (not q.reading.is_bomb, len(q.cards),
                                            -q.reading.top))
    v.act(p)


def hoarder(r: Round, rng: random.Random) -> None:
    """Keeps wilds and bombs to the end; leads its longest play of low cards, follows with
    its cheapest beat, never over its partner."""
    v = _View(r)
    p = v.out()
    if p is None and not v.partner_leads:
        keep = [q for q in v.plays if not q.reading.is_bomb and not v.precious(q)]
        if keep:
            if v.following:
                p = min(keep, key=v.low)
            else:
                p = max(keep, key=lambda q: (len(q.cards) * 15 - q.reading.top * 2))
        elif not v.following:
            p = min(v.plays, key=lambda q: (q.reading.is_bomb, _bomb_key(q), q.reading.top))
    v.act(p)


def team(r: Round, rng: random.Random) -> None:
    """Go out when possible, shed the cheapest play, spare bombs and wilds, never overtake
    the partner, bomb only when an opponent has five cards or fewer."""
    v = _View(r)
    p = v.out()
    if p is None and not v.partner_leads:
        plain = [q for q in v.plays if not q.reading.is_bomb and not v.precious(q)]
        spend = [q for q in v.plays if not q.reading.is_bomb]
        bombs = sorted((q for q in v.plays if q.reading.is_bomb), key=_bomb_key)
        if plain:
            p = min(plain, key=v.low)
        elif spend and (v.danger <= 5 or not v.following):
            p = min(spend, key=v.low)
        elif bombs and (v.danger <= 5 or not v.following):
            p = bombs[0]
    v.act(p)


PANEL: dict[str, Player] = {"cautious": cautious, "bomber": bomber, "blind": blind,
                            "hoarder": hoarder, "team": team}

