"""Random replays for tests and benchmarks: deal a round and play it out with a simple bot.

:func:`generate_replay` is seeded and reproducible (the same variant, seed and escape
probability give the same replay). The bot picks among :func:`shuangkou.core.legal_plays`: it
leads low, follows with the cheapest play that beats, rarely beats its partner, throws
bombs often enough that every star rule gets exercised, and sometimes declares a
non-primary reading. The round itself (seating, turn order, 接风, round end) is a
:class:`~shuangkou.core.Round`, the one model of round flow; the independent check of that flow is
the slow reference in tests/reference.py.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from ._core import classify, format_cards, play_reading
from .cards import SEATS, SJ, card_rank, deck, partner, rank_name
from .declaration import Declaration
from .round import Action, Round
from .variants import BUILTIN, Variant, get_variant

__all__ = ["generate_replay", "deal"]

_STAKES = (1, 1, 1, 2, 5)     # stakes drawn for generated replays
_TABLE_FEES = (0, 0, 3)       # table fees drawn for escaped replays


def deal(variant: str | Variant, rng: random.Random) -> list[list[int]]:
    """Shuffle the variant's deck and deal ``hand_size`` cards to each seat (codes)."""
    v = get_variant(variant)
    cards = deck(v.decks, v.lowest_rank, v.joker_copies)
    rng.shuffle(cards)
    return [sorted(cards[i * v.hand_size:(i + 1) * v.hand_size]) for i in range(SEATS)]


class _Bot:
    """Chooses moves. Probabilities are tuned for variety (bombs, declarations), not strength."""

    BOMB_ON_LEAD = 0.15      # lead a bomb (any) while ordinary plays remain
    FOLLOW = 0.85            # follow an opponent when an ordinary play beats
    BOMB_INSTEAD = 0.08      # ... but bomb it instead
    FOLLOW_PARTNER = 0.12    # beat the partner's play
    BOMB_FOLLOW = 0.55       # bomb an opponent's play when only bombs beat
    ANY_BOMB = 0.5           # when bombing, any bomb that beats rather than the cheapest
    LEAD_WILD = 0.2          # lead a play that uses a wild joker (often several readings)
    DECLARE = 0.3            # declare another reading when the cards have several

    def __init__(self, v: Variant, rng: random.Random) -> None:
        from ._enumerate import legal_plays  # the enumeration engine (compiled separately)

        self.v = v
        self.rng = rng
        self.legal_plays = legal_plays

    def lead(self, hand: list[int]) -> Any:
        plays = list(self.legal_plays(hand, self.v))
        out = self._going_out(plays, hand)
        if out is not None:
            return out
        ordinary = [p for p in plays if not p.reading.is_bomb]
        if not ordinary or self.rng.random() < self.BOMB_ON_LEAD:
            return self._bomb([p for p in plays if p.reading.is_bomb] or plays)
        wild = [p for p in ordinary if len(p.cards) > 1 and card_rank(max(p.cards)) >= SJ]
        if wild and self.rng.random() < self.LEAD_WILD:
            several = [p for p in wild if len(classify(p.cards, self.v)) > 1]
            return self.rng.choice(several or wild)
        # low plays first; among the lowest, longer plays get rid of more cards
        lowest = min(p.reading.top for p in ordinary)
        return self.rng.choice([p for p in ordinary if p.reading.top <= lowest + 1])

    def follow(self, hand: list[int], standing: Any, partner_played: bool) -> Any | None:
        plays = list(self.legal_plays(hand, self.v, standing))
        if not plays:
            return None
        out = self._going_out(plays, hand)
        if out is not None:
            return out
        ordinary = [p for p in plays if not p.reading.is_bomb]
        bombs = [p for p in plays if p.reading.is_bomb]
        chance = self.FOLLOW_PARTNER if partner_played else (
            self.FOLLOW if ordinary else self.BOMB_FOLLOW)
        if self.rng.random() >= chance:
            return None
        if ordinary and not (bombs and self.rng.random() < self.BOMB_INSTEAD):
            best = min((p.reading.top, len(p.cards)) for p in ordinary)
            return self.rng.choice([p for p in ordinary if (p.reading.top, len(p.cards)) == best])
        return self._bomb(bombs)

    @staticmethod
    def _going_out(plays: Sequence[Any], hand: list[int]) -> Any | None:
        return next((p for p in plays if len(p.cards) == len(hand)), None)

    def _bomb(self, bombs: Sequence[Any]) -> Any:
        if self.rng.random() < self.ANY_BOMB:
            return self.rng.choice(bombs)
        cheapest = min(p.reading.key for p in bombs)
        return self.rng.choice([p for p in bombs if p.reading.key == cheapest])


def _declaration(play: Any, v: Variant, standing: Any, rng: random.Random) -> tuple[dict[str, Any], Any]:
    """The action fields for a play and the reading that then stands (§7 rules 4–6):
    sometimes a declaration of another reading that may stand (any when leading, one that
    beats when following)."""
    undeclared = play_reading(play.cards, v, standing)
    if rng.random() < _Bot.DECLARE:
        options = [r for r in classify(play.cards, v).readings
                   if (r.kind, r.top) != (undeclared.kind, undeclared.top)
                   and (standing is None or r.beats(standing))]
        if options:
            wanted = rng.choice(options)
            top = rank_name(wanted.top)
            reading = play_reading(play.cards, v, standing, wanted.kind, top)
            return {"declare": wanted.kind, "declare_top": top}, reading
    return {}, undeclared


def _team_fields(hands: list[list[int]], v: Variant, rng: random.Random) -> dict[str, Any]:
    """Pick the leader and the revealed card; return the replay's team fields (``teams``
    when the deck does not hold exactly two copies of the card: three decks)."""
    leader = rng.randrange(SEATS)
    card = rng.choice(hands[leader])
    copies = v.joker_copies if card_rank(card) >= SJ else v.decks
    fields: dict[str, Any] = {"leader": leader, "revealed": format_cards([card])[0]}
    if copies != 2:
        holders = [d for d in range(SEATS) for _ in range(hands[d].count(card))]
        if hands[leader].count(card) >= 2:
            mate = partner(leader)
        else:
            mate = next((d for d in holders if d != leader), partner(leader))
        others = [d for d in range(SEATS) if d not in (leader, mate)]
        fields["teams"] = [sorted((leader, mate)), others]
    return fields


def generate_replay(variant: str | Variant, seed: int, escape_prob: float = 0.0) -> dict[str, Any]:
    """A random, complete replay of one round under ``variant`` (a JSON-able dict).

    With probability ``escape_prob`` the round is cut at a random move and a random seat
    still holding cards escapes (in ``baibian``, which has no escape rule, such replays are
    refused by :func:`~shuangkou.core.replay.score_replay`).
    """
    v = get_variant(variant)
    rng = random.Random(f"{v.id}/{seed}")
    dealt = deal(v, rng)
    fields = _team_fields(dealt, v, rng)
    rnd = Round.deal(v, dealt, fields["leader"], revealed=fields["revealed"],
                     teams=fields.get("teams"))
    bot = _Bot(v, rng)
    actions: list[dict[str, Any]] = []
    holding: list[list[int]] = []      # seats holding cards before each action
    while not rnd.is_over:
        left = rnd.cards_left
        holding.append([s for s in range(SEATS) if left[s]])
        seat = rnd.turn
        assert seat is not None           # the round is not over
        hand = list(rnd.hand(seat))
        standing = rnd.standing
        if standing is None:
            play = bot.lead(hand)
        else:
            play = bot.follow(hand, standing.reading, standing.seat == partner(seat))
        if play is None:
            actions.append({"seat": seat, "pass": True})
            rnd.apply(Action(seat, "pass"))
            continue
        declared, _ = _declaration(play, v, standing.reading if standing else None, rng)
        actions.append({"seat": seat, "play": format_cards(play.cards), **declared})
        rnd.apply(Action(seat, "play", tuple(play.cards),
                         Declaration(declared["declare"], declared["declare_top"])
                         if declared else None))
    extra: dict[str, Any] = {"stake": rng.choice(_STAKES)}
    if escape_prob and rng.random() < escape_prob:
        cut = rng.randrange(len(actions))
        actions = actions[:cut] + [{"seat": rng.choice(holding[cut]), "escape": True}]
        extra["table_fee"] = rng.choice(_TABLE_FEES)
    return {
        "variant": v.id if BUILTIN.get(v.id) is v else v.to_dict(),
        "hands": [format_cards(h) for h in dealt],
        **fields,
        "actions": actions,
        **extra,
    }
