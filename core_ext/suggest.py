"""托管 and 提示: a sensible action for the seat to act (issue 11).

:func:`suggest` looks at a round the way the player in the seat would: its own hand and the
public table (whose turn, the play standing and who made it, every seat's card count,
finishing order, the bombs it played). It never looks at another seat's cards. The policy,
in the order it is applied (the ``reason`` sentence of the :class:`Suggestion` names the
step that decided):

1. **Go out when it can**: a legal play that empties the hand is taken.
2. **Partner winning**: when the partner made the standing play, pass (unless step 1).
3. **Leading** — shed weak cards: every ordinary play is valued by the low cards it gets rid
   of (a 3 is worth 10, a K 1, an A, 2 or joker nothing), minus a penalty per group of equal
   ranks it splits; plays that would split a bomb (a rank held 4+ times) or spend a wild
   joker are set aside while others remain. Two refinements: with two plays left (the hand
   minus one play is itself a play) lead the stronger part first and keep the other to go out;
   when an opponent is down to one or two cards, lead a shape they cannot answer (no single
   against one card, neither singles nor pairs against two) or else the highest single; when
   only the partner is down to one card, lead the lowest single for them.
4. **Following an opponent** — the cheapest ordinary play that beats (fewest splits, no wild,
   no bomb broken, lowest top). A bomb only when it matters: an opponent is about to go out
   (``DANGER`` cards or fewer), the bomb leaves a hand that goes out in one more play or is
   small, or its star pays on its own (from natural cards only: wilds are worth more kept):
   it reaches the variant's contribution table (§10.4: every such bomb in the per-bomb
   mode, one above the seat's round star so far in the round-star mode), or, once the
   seat's team holds 1st place, the multiplier table above the seat's star (§10.3); then
   the cheapest bomb that beats, or the cheapest one that pays when paying is the reason.
5. Otherwise pass.

Deterministic: equal candidates keep the enumerator's order and the first is taken; a
``seed`` picks among equals instead (variety for 托管 tables).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, Literal

from ._core import format_cards, play_reading
from ._enumerate import legal_plays
from .cards import CODE_RANKS, JOKER_CODES, SEATS, SJ, partner, seats_after
from .declaration import Declaration
from .errors import ShuangkouError
from .variants import Variant, get_variant

__all__ = ["Suggestion", "suggest", "decide", "DANGER"]

DANGER = 5            # an opponent with this many cards or fewer may go out soon
_SMALL_AFTER_BOMB = 4  # a bomb that leaves this many cards or fewer clears the way out
_SPLIT = 6            # the cost of splitting a group of equal ranks (pair, triple)
_ENDGAME = 10         # hands (or what a bomb leaves) this small are tried as two-play finishes
# How much a card of each rank position is worth getting rid of when leading (§2 ranks:
# 3=0 … A=11, 2=12, SJ=13, BJ=14): low cards are liabilities, high ones regain the lead.
_LIABILITY = tuple(max(0, 10 - r) for r in range(15))


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A legal action for the seat to act and why.

    ``kind`` is ``"play"`` or ``"pass"``; for a play, ``cards`` are codes from the hand and
    ``declaration`` names the reading to declare when the one meant is not what would stand
    undeclared (§7 rule 6), else None; ``reading`` is the reading that will stand.
    """

    kind: Literal["play", "pass"]
    seat: int
    cards: tuple[int, ...] = ()
    declaration: Declaration | None = None
    reading: Any = None
    reason: str = ""

    @property
    def text(self) -> tuple[str, ...]:
        """The cards as text tokens."""
        return tuple(format_cards(self.cards))




@dataclass(slots=True)
class _Hand:
    """One hand's shape: rank counts, the wild codes of the variant, and the *plain* cards
    (neither a wild joker nor of a rank held 4+ times), which weak plays are made of."""

    cards: tuple[int, ...]
    counts: list[int]
    wild: frozenset[int]
    plain: list[int]

    @classmethod
    def of(cls, hand: tuple[int, ...], v: Variant) -> _Hand:
        counts = [0] * 15
        for c in hand:
            counts[CODE_RANKS[c]] += 1
        wild = frozenset(JOKER_CODES[j] for j in v.wild_jokers)
        plain = [c for c in hand if c not in wild and counts[CODE_RANKS[c]] < 4]
        return cls(hand, counts, wild, plain)

    def splits(self, cards: tuple[int, ...]) -> int:
        """Groups of equal ranks (pairs, triples) the play leaves a part of."""
        used: dict[int, int] = {}
        for c in cards:
            r = CODE_RANKS[c]
            used[r] = used.get(r, 0) + 1
        return sum(1 for r, n in used.items() if n < self.counts[r])

    def precious(self, cards: tuple[int, ...]) -> bool:
        """Spends a wild joker in a mixed play, or splits a bomb."""
        jokers_only = all(CODE_RANKS[c] >= SJ for c in cards)
        return any((c in self.wild and not jokers_only) or self.counts[CODE_RANKS[c]] >= 4
                   for c in cards)


def _liability(cards: tuple[int, ...]) -> int:
    return sum(_LIABILITY[CODE_RANKS[c]] for c in cards)


def _remainder(hand: tuple[int, ...], cards: tuple[int, ...]) -> list[int]:
    rest = list(hand)
    for c in cards:
        rest.remove(c)
    return rest


def _reading(cards: Any, v: Variant, to_beat: Any = None) -> Any:
    """The reading that would stand, or None when the cards are no play (or do not beat)."""
    try:
        return play_reading(cards, v, to_beat)
    except ShuangkouError:
        return None


@dataclass(frozen=True, slots=True)
class _Stakes:
    """What a bomb's star can still earn the seat: its round star so far (§10.2, the
    highest bomb it played) and whether its team holds 1st place (its stars then set the
    multiplier, §10.3)."""

    star: int = 0
    winning: bool = False

    def pays(self, reading: Any, v: Variant) -> bool:
        """Does this bomb's star earn points by itself? A per-bomb contribution (§10.4); a
        round-star contribution above the star already reached; or a higher multiplier
        for a team that already holds 1st place."""
        star = reading.star
        first = v.contribution[0][0] if v.contribution else None
        if first is not None and star >= first and (v.contribution_mode == "per_bomb"
                                                     or star > self.star):
            return True
        return (self.winning and bool(v.multiplier) and v.multiplier_star != "winner"
                and star >= v.multiplier[0][0] and star > self.star)


def _pick(candidates: list[tuple[Any, Any]], rng: random.Random | None) -> Any:
    """The best (lowest score) play; ties: the first, or a seeded choice."""
    best = min(score for score, _ in candidates)
    tied = [p for score, p in candidates if score == best]
    return tied[0] if rng is None else rng.choice(tied)


def _smallest(bombs: list[Any], rng: random.Random | None) -> Any:
    return _pick([(p.reading.key, p) for p in bombs], rng)


def decide(variant: str | Variant, seat: int, hand: tuple[int, ...] | list[int],
           sizes: tuple[int, ...] | list[int], standing: tuple[int, Any] | None = None,
           *, seed: int | None = None, star: int = 0, winning: bool = False) -> Suggestion:
    """The policy on plain table facts: ``sizes`` = cards held per seat, ``standing`` =
    (seat, reading) of the play to beat or None when ``seat`` leads; ``star`` = the
    highest star the seat has played, ``winning`` = its team holds 1st place. See the
    module doc.

    Only what the policy may choose is enumerated: weak plays from the plain cards, bombs
    when one is wanted, everything only for small hands; so a full hand with four wild
    jokers costs about as much as any other.
    """
    v = get_variant(variant)
    hand = tuple(sorted(hand))
    rng = None if seed is None else random.Random(seed)
    to_beat = None if standing is None else standing[1]
    whole = _reading(hand, v, to_beat)
    if whole is not None:
        return _play(v, seat, hand, whole, to_beat, "goes out with its last cards")
    mate = partner(seat)
    opponents = [s for s in seats_after(seat) if s != mate and sizes[s]]
    danger = min((sizes[s] for s in opponents), default=99)
    shape = _Hand.of(hand, v)
    if standing is None:
        return _lead(v, seat, shape, sizes[mate], danger, rng)
    if standing[0] == mate:
        return Suggestion("pass", seat, reason="lets the partner's winning play stand")
    return _follow(v, seat, shape, to_beat, danger, _Stakes(star, winning), rng)


def _lead(v: Variant, seat: int, shape: _Hand, partner_size: int, danger: int,
          rng: random.Random | None) -> Suggestion:
    hand = shape.cards
    if len(hand) <= _ENDGAME:
        # Two plays left: lead the stronger part (a bomb, else the higher top), keep the rest.
        plays = list(legal_plays(hand, v))
        for p in sorted(plays, key=lambda p: (not p.reading.is_bomb, -p.reading.top)):
            if _reading(_remainder(hand, p.cards), v) is not None:
                return _lead_play(v, seat, p, "leads the stronger of its last two plays")
    plain = list(legal_plays(shape.plain, v)) if shape.plain else []
    if not plain:   # only bombs and wilds: every play, the ordinary ones first
        plain = [p for p in legal_plays(hand, v) if not p.reading.is_bomb]
    if danger <= 2:
        safe = [p for p in plain if p.reading.kind != "single"
                and (danger == 1 or p.reading.kind != "pair")]
        if safe:
            best = _pick([(-_liability(p.cards) - len(p.cards), p) for p in safe], rng)
            return _lead_play(v, seat, best, f"an opponent has {danger} card(s) left: "
                              "leads a shape they cannot answer")
        bombs = list(legal_plays(hand, v, bombs_only=True))
        if bombs:
            return _lead_play(v, seat, _smallest(bombs, rng),
                              "an opponent is about to go out: leads a bomb")
        singles = [p for p in plain if p.reading.kind == "single"]
        if singles:
            return _lead_play(v, seat, max(singles, key=lambda p: p.reading.top),
                              "an opponent is about to go out: leads its highest single")
    if partner_size == 1 and danger > 1:
        singles = [p for p in plain if p.reading.kind == "single"]
        if singles:
            return _lead_play(v, seat, singles[0],
                              "the partner has 1 card left: leads a low single for them")
    if plain:
        best = _pick([(_SPLIT * shape.splits(p.cards) - _liability(p.cards)
                       + p.reading.top / 16, p) for p in plain], rng)
        return _lead_play(v, seat, best, "leads to shed its weakest cards")
    bombs = list(legal_plays(hand, v, bombs_only=True))
    return _lead_play(v, seat, _smallest(bombs, rng), "only bombs left: leads the smallest")


def _follow(v: Variant, seat: int, shape: _Hand, to_beat: Any, danger: int, stakes: _Stakes,
            rng: random.Random | None) -> Suggestion:
    hand = shape.cards
    threatened = danger <= DANGER
    ordinary = [p for p in legal_plays(shape.plain, v, to_beat)
                if not p.reading.is_bomb] if shape.plain else []
    if not ordinary and threatened:   # spend wilds or split a bomb to stop an opponent
        ordinary = [p for p in legal_plays(hand, v, to_beat) if not p.reading.is_bomb]
    if ordinary:
        best = _pick([((shape.precious(p.cards), shape.splits(p.cards), p.reading.top), p)
                      for p in ordinary], rng)
        return _follow_play(v, seat, best, to_beat, "beats with its cheapest play")
    bombs = list(legal_plays(hand, v, to_beat, bombs_only=True))
    if not bombs:
        return Suggestion("pass", seat,
                          reason="nothing beats it without spending a wild or breaking a bomb")
    if threatened:
        return _follow_play(v, seat, _smallest(bombs, rng), to_beat,
                            f"bombs: an opponent has {danger} card(s) left")
    for p in sorted(bombs, key=lambda p: p.reading.key):
        rest = _remainder(hand, p.cards)
        if len(rest) <= _SMALL_AFTER_BOMB or (len(rest) <= _ENDGAME
                                              and _reading(rest, v) is not None):
            return _follow_play(v, seat, p, to_beat, "bombs to take the lead and go out")
    paying = [p for p in bombs if stakes.pays(p.reading, v) and not shape.wild.intersection(p.cards)]
    if paying:
        return _follow_play(v, seat, _smallest(paying, rng), to_beat,
                            "bombs with a star that pays")
    return Suggestion("pass", seat, reason="keeps its bombs for when they matter")


def _lead_play(v: Variant, seat: int, play: Any, reason: str) -> Suggestion:
    return _play(v, seat, tuple(play.cards), play.reading, None, reason)


def _follow_play(v: Variant, seat: int, play: Any, to_beat: Any, reason: str) -> Suggestion:
    return _play(v, seat, tuple(play.cards), play.reading, to_beat, reason)


def _play(v: Variant, seat: int, cards: tuple[int, ...], meant: Any, to_beat: Any,
          reason: str) -> Suggestion:
    """A play suggestion; declares the reading meant when it is not what would stand."""
    stands = play_reading(cards, v, to_beat)
    declaration = None
    if (stands.kind, stands.top, stands.key) != (meant.kind, meant.top, meant.key):
        declaration = Declaration(meant.kind, meant.top, meant.star or None)
        stands = meant
    return Suggestion("play", seat, cards, declaration, stands,
                      f"{reason}: {stands.describe()}")


def suggest(round: Any, *, seed: int | None = None) -> Suggestion:
    """A legal action for the seat to act in ``round`` (a :class:`shuangkou.core.Round`).

    :raises RuleViolation: the round is over (``ROUND_OVER``).
    """
    if round.is_over or round.turn is None:
        from .errors import RuleViolation
        raise RuleViolation("the round is over: nothing to suggest", "ROUND_OVER")
    seat = round.turn
    sizes = tuple(len(round.hand(s)) for s in range(SEATS))
    standing = round.standing
    table = None if standing is None else (standing.seat, standing.reading)
    star = max((b.star for b in round.bombs[seat]), default=0)
    first = round.finish_order[0] if round.finish_order else None
    s = decide(round.variant, seat, round.hand(seat), sizes, table, seed=seed, star=star,
               winning=first is not None and first % 2 == seat % 2)
    if s.declaration is not None:
        # The reading that will stand is the Round's to say: play it on a copy (µs).
        stands = round.copy().play(s.seat, s.cards, s.declaration).reading
        if stands.key != s.reading.key or (stands.kind, stands.top) != (s.reading.kind,
                                                                       s.reading.top):
            s = replace(s, reading=stands)
    return s
