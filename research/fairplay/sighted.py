"""Rule-based cheats written from plain rules, apart from the rule policy and the search: a
seat that reads its partner's hand (:func:`sharer`), one that reads every hand
(:func:`seer`), and the play of a seat throwing its round (:func:`throwing`).

Each is built on the panel's plain greedy team player (research.panel ``team``): where its
own rules have nothing to say, it plays as ``team`` does. The hands it should not see it
reads with ``Round.hand`` and weighs with the core's public enumeration
(``shuangkou.core.legal_plays``, ``count_plays``, ``play_reading``) — what a client that
was sent the hands could compute.

* :func:`sharer` — hand sharing: never blocks its partner; passes an opponent's play when
  the partner, still to act in the trick, can go out over it, or beat it with an ordinary
  play when this seat would spend a bomb or a wild or the partner holds fewer cards; leads a play the partner can go out over,
  else (the partner short of cards) one the partner can follow, else the cheap lead of the
  kind the partner is strongest in.
* :func:`seer` — full sight: the sharer's rules, and with the opponents' hands: stops an
  opponent who could go out over the standing play (its cheapest beat that no opponent
  after it can beat, a bomb if need be), leaves the trick to a partner whose ordinary beat
  no opponent can beat but with a bomb, takes a trick with its cheapest ordinary beat no
  opponent after it can beat but with a bomb, and leads the cheap play no opponent can go
  out over that the fewest opponents can beat with an ordinary play, then the one the
  opponent strongest in its kind beats least often.
* :func:`throwing` — a thrown round: blocks its partner (beats the partner's standing play
  with its cheapest ordinary beat), passes on every opponent's play, and leads singles
  broken from its bombs and wild jokers, then its lowest single (it sheds nothing useful,
  wastes its bombs and keeps its cards to the end). This seat need not see any hand.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from research.panel import team
from shuangkou.core import Round, count_plays, legal_plays, play_reading
from shuangkou.core.cards import SEATS, card_rank

__all__ = ["sharer", "seer", "throwing"]

#: the play types that are bombs (shuangkou.core.KINDS after the ordinary ones)
BOMB_KINDS = frozenset({"bomb", "joker_bomb_3", "joker_bomb_4", "chain_bomb"})
#: a partner with this many cards or fewer is fed plays it can follow
SHORT = 8
#: an opponent with this many cards or fewer is watched for going out
DANGER = 6
#: the cheap leads: a top rank within this many ranks of the lowest lead's
CHEAP = 3
SJ = 13


class _Table:
    """The seat to act's decision with what it reads of the other hands."""

    def __init__(self, r: Round) -> None:
        self.r = r
        self.v = r.variant
        seat = r.turn
        assert seat is not None
        self.seat = seat
        self.partner = (seat + 2) % SEATS
        self.hand = r.hand(seat)
        self.left = r.cards_left
        st = r.standing
        self.reading = st.reading if st is not None else None
        self.by = st.seat if st is not None else None
        self.plays = list(r.legal_plays())
        held = [0] * 15
        for c in self.hand:
            held[card_rank(c)] += 1
        self.held = held
        self.wild = {SJ + (w == "BJ") for w in self.v.wild_jokers}
        # the seats still to act in this trick after this one, in turn order
        if self.by is None:
            self.after: tuple[int, ...] = tuple((seat + k) % SEATS for k in (1, 2, 3)
                                                if self.left[(seat + k) % SEATS])
        else:
            order = [s for s in ((self.by + k) % SEATS for k in (1, 2, 3))
                     if self.left[s] or s == seat]
            self.after = tuple(order[order.index(seat) + 1:])
        self.opponents = tuple(s for s in range(SEATS) if s % 2 != seat % 2 and self.left[s])

    # what a play is
    def ordinary(self) -> list[Any]:
        """The plays that are no bomb and spend no wild joker nor break a bomb's rank."""
        return [p for p in self.plays if not p.reading.is_bomb and not self.precious(p)]

    def precious(self, p: Any) -> bool:
        used = [0] * 15
        for c in p.cards:
            used[card_rank(c)] += 1
        return any(used[w] for w in self.wild) or any(
            used[k] and self.held[k] >= 4 and used[k] < self.held[k] for k in range(15))

    def out(self) -> Any:
        n = len(self.hand)
        return next((p for p in self.plays if len(p.cards) == n), None)

    # what another seat's hand can do
    def goes_out(self, seat: int, reading: Any) -> bool:
        """``seat`` can empty its hand in one play over ``reading`` (None: leading)."""
        hand = self.r.hand(seat)
        if not hand:
            return False
        try:
            play_reading(hand, self.v, reading)
        except ValueError:
            return False
        return True

    def beats(self, seat: int, reading: Any) -> int:
        """How many ordinary plays of ``seat``'s hand beat ``reading``."""
        hand = self.r.hand(seat)
        if not hand:
            return 0
        counts = count_plays(hand, self.v, reading)
        return sum(n for kind, n in counts.items() if kind not in BOMB_KINDS)

    def can_beat(self, seat: int, reading: Any) -> bool:
        """``seat``'s hand beats ``reading`` at all (a bomb counts)."""
        hand = self.r.hand(seat)
        return bool(hand) and len(legal_plays(hand, self.v, reading, limit=1)) > 0

    def act(self, p: Any) -> None:
        if p is None:
            self.r.pass_turn(self.seat)
        else:
            self.r.play(self.seat, p.cards, p.reading.declaration)


def _low(p: Any) -> tuple[int, int]:
    return (p.reading.top, -len(p.cards))


def _cheap(plays: Sequence[Any]) -> list[Any]:
    """The leads whose top is within :data:`CHEAP` ranks of the lowest."""
    if not plays:
        return []
    lowest = min(p.reading.top for p in plays)
    return [p for p in plays if p.reading.top <= lowest + CHEAP]


_DEFER = object()     # the rules have nothing to say: play as the base style


def _share(t: _Table) -> Any:
    """The sharer's choice (module doc): a play, None for a pass, or _DEFER."""
    partner_in = t.left[t.partner] > 0
    if t.reading is not None:
        if t.by == t.partner:
            return None                                 # never block the partner
        if partner_in and t.partner in t.after:
            if t.goes_out(t.partner, t.reading):
                return None                             # the partner goes out over it
            if t.beats(t.partner, t.reading) and (not t.ordinary()
                                                  or t.left[t.partner] < t.left[t.seat]):
                return None           # the partner covers: keep the bombs, or let it shed
        return _DEFER
    if not partner_in:
        return _DEFER
    leads = t.ordinary()
    feed = [p for p in leads if t.goes_out(t.partner, p.reading)]
    if feed:
        return min(feed, key=_low)
    if t.left[t.partner] <= SHORT:
        follow = [p for p in leads if t.beats(t.partner, p.reading)]
        if follow:
            return min(follow, key=_low)
    cheap = _cheap(leads)
    if cheap:
        return max(cheap, key=lambda p: (t.beats(t.partner, p.reading) > 0,
                                         t.beats(t.partner, p.reading), -p.reading.top,
                                         len(p.cards)))
    return _DEFER


def sharer(r: Round, rng: random.Random) -> None:
    """Hand sharing by plain rules (module doc), the panel's ``team`` otherwise."""
    t = _Table(r)
    p = t.out()
    if p is None:
        p = _share(t)
        if p is _DEFER:
            team(r, rng)
            return
    t.act(p)


def _sees(t: _Table) -> Any:
    """The seer's choice (module doc): a play, None for a pass, or _DEFER."""
    later = [s for s in t.after if s in t.opponents]
    if t.reading is not None and t.by != t.partner:
        beats = sorted(t.plays, key=lambda p: (p.reading.is_bomb, tuple(p.reading.key),
                                                p.reading.top, len(p.cards)))
        if any(t.goes_out(s, t.reading) for s in later):
            safe = [p for p in beats if not any(t.can_beat(s, p.reading) for s in later)]
            return safe[0] if safe else (beats[-1] if beats else None)
        if t.partner in t.after and t.left[t.partner]:
            mate = legal_plays(t.r.hand(t.partner), t.v, t.reading)
            if any(not q.reading.is_bomb and not any(t.beats(s, q.reading)
                                                    for s in t.opponents)
                   for q in mate):
                return None                             # the partner wins this trick
        plain = [p for p in t.ordinary() if not any(t.beats(s, p.reading) for s in later)]
        if plain:
            return min(plain, key=_low)                 # a trick no opponent can take
        return _share(t)
    if t.reading is None:
        leads = t.ordinary() or [p for p in t.plays if not p.reading.is_bomb]
        if leads:
            def risk(p: Any) -> tuple[Any, ...]:
                return (any(t.goes_out(s, p.reading) for s in t.opponents),
                        sum(t.beats(s, p.reading) > 0 for s in t.opponents),
                        max((t.beats(s, p.reading) for s in t.opponents), default=0),
                        -(t.beats(t.partner, p.reading) > 0), p.reading.top, -len(p.cards))
            return min(_cheap(leads), key=risk)
    return _share(t)


def seer(r: Round, rng: random.Random) -> None:
    """Full sight by plain rules (module doc), the panel's ``team`` otherwise."""
    t = _Table(r)
    p = t.out()
    if p is None:
        p = _sees(t)
        if p is _DEFER:
            team(r, rng)
            return
    t.act(p)


def throwing(r: Round, rng: random.Random) -> None:
    """The play of a thrown round (module doc)."""
    t = _Table(r)
    if t.reading is not None:
        block = [p for p in t.plays if not p.reading.is_bomb] if t.by == t.partner else []
        t.act(min(block, key=lambda p: (p.reading.top, len(p.cards))) if block else None)
        return
    singles = [p for p in t.plays if p.reading.kind == "single"]
    if not singles:
        t.act(min(t.plays, key=lambda p: (p.reading.is_bomb, p.reading.top)))
        return

    def waste(p: Any) -> tuple[int, int, int]:
        rank = card_rank(p.cards[0])
        return (-(t.held[rank] >= 4), -(rank in t.wild), p.reading.top)
    t.act(min(singles, key=waste))
