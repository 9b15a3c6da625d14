"""A round in progress (RULES.md §9): :class:`Round`, the one model of round flow.

A game server (or the replay validator, or the replay generator's bot) deals a round with
:meth:`Round.deal` and applies actions: ``play`` (optionally declaring the reading),
``pass_turn`` and ``escape``. Each has a verify / can / do triple: ``verify_*`` raises the
precise :class:`~shuangkou.core.errors.RuleViolation` (``NOT_YOUR_TURN``, ``CARDS_NOT_HELD`` …),
``can_*`` answers yes or no, and the action returns a frozen :class:`ActionRecord`.
``result()`` settles a finished round exactly as :func:`~shuangkou.core.scoring.score_round`
does; ``to_bytes`` / ``from_bytes`` are a compact serialised form whose size never grows
with the number of actions (no history is kept), validated on the way in.

The flow itself (turn, trick, 接风, finishing, round end, card-held checks) is compiled
(core_ext/_round.pyx); this module adds the deal, the seating swap, settlement and the
serialised form.

    >>> from shuangkou.core import Round
    >>> r = Round.deal("baibian", ["3S 3H", "4S 9S", "5S 5H", "6S 9H"], 0, partial_deal=True)
    >>> r.play(0, "3S 3H").next_turn, r.pass_turn(1).next_turn
    (1, 2)
    >>> rec = r.play(2, "5S 5H")
    >>> rec.finished, rec.round_over, r.result().kind
    (2, True, 'double')
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from operator import gt
from typing import Any

from ._core import format_cards, parse_cards
from ._round import (
    MAGIC,
    MAX_ACTIONS,
    ROUND_END_RULES,
    TURN_AFTER,
    WIND_ORDER,
    RoundCore,
    copies_held,
    deck_exact,
    layout,
    unpack_slots,
)
from .cards import SEATS, card_rank, is_suited, rank_name
from .cards import partner as partner_of
from .errors import RuleViolation, ShuangkouError
from .round_records import ActionRecord, Standing
from .scoring import MAX_STAKE, MAX_TABLE_FEE, RoundResult
from .variants import BUILTIN, Variant, get_variant, variant_from_mapping

__all__ = ["ActionRecord", "Round", "Standing", "ROUND_END_RULES", "TURN_AFTER", "WIND_ORDER",
           "check_deal", "seating"]

_SUITED_CODES = tuple(c for c in range(1, 66) if is_suited(c))   # the 52 suited faces


def _seat(value: Any, what: str, field: str) -> int:
    if type(value) is not int or not 0 <= value < SEATS:
        raise ShuangkouError(f"{what} must be a seat 0–3; got {value!r}", field)
    return value


def _int(value: Any, name: str, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise ShuangkouError(f"{name} must be an integer {low}–{high:,}; got {value!r}", name)
    return value


# ----------------------------------------------------------------------------- the deal (§9)

_DECKS: dict[tuple[int, int, int], list[int]] = {}


def deck(v: Variant) -> list[int]:
    """The variant's deck as sorted card codes (cached by its shape)."""
    shape = (v.decks, v.lowest_rank, v.joker_copies)
    cards = _DECKS.get(shape)
    if cards is None:
        cards = _DECKS[shape] = sorted(
            [1 + r * 5 + s for r in range(v.lowest_rank, 13) for s in range(4)] * v.decks
            + [70, 75] * v.joker_copies)
    return cards


def deck_ranks(v: Variant) -> list[int]:
    """Cards of each rank position in the variant's deck."""
    return [v.joker_copies if r >= 13 else v.copies_per_rank if r >= v.lowest_rank else 0
            for r in range(15)]


def check_deal(hands: Sequence[Sequence[int]], v: Variant, partial: bool) -> None:
    """§9: the four hands together are exactly the deck (or a part of it if ``partial``)."""
    if not partial:
        for d, hand in enumerate(hands):
            if len(hand) != v.hand_size:
                raise ShuangkouError(f"hands[{d}] has {len(hand)} cards; every seat is dealt "
                                     f"{v.hand_size} in {v.id}", "hands")
        if deck_exact(list(hands), v.decks, v.lowest_rank, v.joker_copies):
            return                    # exactly the deck, card for card (the usual case)
    faces, ranks = [0] * 76, [0] * 15
    for hand in hands:
        for c in hand:
            faces[c] += 1
            ranks[card_rank(c)] += 1
    over = next((c for c in _SUITED_CODES if faces[c] > v.decks), None)
    if over is not None:
        raise ShuangkouError(f"the hands hold {faces[over]} copies of "
                             f"{format_cards([over])[0]}; the {v.id} deck has {v.decks}",
                             "hands")
    want = deck_ranks(v)
    for r in range(15):
        if ranks[r] > want[r] or (not partial and ranks[r] != want[r]):
            raise ShuangkouError(
                f"the hands are not {'part of ' if partial else ''}the {v.id} deck: "
                f"{ranks[r]} cards of rank {rank_name(r)} dealt, the deck has {want[r]}"
                + ("" if partial else " (pass partial_deal to allow partial deals)"), "hands")


def _revealed_partner(revealed: Any, hands: Sequence[Sequence[int]], leader: int, v: Variant,
                      stated: bool) -> int | None:
    """The dealt seat of the leader's partner as the revealed card says (§9), or None."""
    if revealed is None:
        return None
    try:
        codes = parse_cards([revealed] if isinstance(revealed, str) else revealed)
    except ShuangkouError as exc:
        raise ShuangkouError(f"revealed: {exc}", "revealed") from None
    if len(codes) != 1 or not (is_suited(codes[0]) or card_rank(codes[0]) >= 13):
        raise ShuangkouError(f"revealed must be one suited card or a joker; got {revealed!r}",
                             "revealed")
    card = codes[0]
    copies = v.joker_copies if card_rank(card) >= 13 else v.decks
    held = copies_held(hands, card)
    if not held[leader]:
        raise ShuangkouError(f"the leader (dealt seat {leader}) does not hold the revealed "
                             f"card {format_cards([card])[0]}", "revealed")
    if copies != 2:
        if not stated:
            name = format_cards([card])[0]
            raise ShuangkouError(f"the {v.id} deck has {copies} copies of {name}, so the "
                                 "revealed card cannot form the teams: give 'teams' (or "
                                 "'partner')", "teams")
        return None
    if held[leader] >= 2:
        return partner_of(leader)       # the leader holds both copies: nothing moves
    for d in range(SEATS):
        if d != leader and held[d]:
            return d
    return None                              # partial deal without the other copy: no swap


def _stated_partner(partner: Any, teams: Any, leader: int) -> int | None:
    """The dealt seat of the leader's partner from ``teams`` / ``partner``, or None."""
    mate = None
    if teams is not None:
        if (not isinstance(teams, (list, tuple)) or len(teams) != 2
                or not all(isinstance(t, (list, tuple)) and len(t) == 2 for t in teams)
                or sorted(_seat(s, "teams entry", "teams") for t in teams for s in t)
                != [0, 1, 2, 3]):
            raise ShuangkouError(f"teams must split the dealt seats 0–3 into two pairs, e.g. "
                                 f"[[0, 2], [1, 3]]; got {teams!r}", "teams")
        mate = next(t[0] + t[1] - leader for t in teams if leader in t)
    if partner is not None:
        stated = _seat(partner, "partner", "partner")
        if stated == leader or (mate is not None and stated != mate):
            raise ShuangkouError(f"partner {stated} contradicts the leader {leader}"
                                 + (f" and teams {teams!r}" if mate is not None else ""),
                                 "partner")
        mate = stated
    return mate


def seating(v: Variant, hands: Sequence[Sequence[int]], leader: int, *, revealed: Any = None,
            partner: Any = None, teams: Any = None) -> list[int]:
    """``hand_at[table seat]`` = dealt seat, after the revealed-card swap (§9): the leader's
    partner (by the revealed card, or as stated) swaps with the seat opposite the leader."""
    by_card = _revealed_partner(revealed, hands, leader, v, teams is not None or
                                partner is not None)
    stated = _stated_partner(partner, teams, leader)
    if by_card is not None and stated is not None and by_card != stated:
        raise ShuangkouError(f"the revealed card makes dealt seat {by_card} the leader's "
                             f"partner but the replay states {stated}", "teams")
    mate = stated if stated is not None else by_card
    hand_at = list(range(SEATS))
    opposite = partner_of(leader)
    if mate is not None and mate != opposite:
        hand_at[opposite], hand_at[mate] = mate, opposite
    return hand_at


# ----------------------------------------------------------------------------- serialised form

#: turn leader last prev passes over over_seat escaper lead(3) nfin fin(4) hand_at(4)
#: partial | stake table_fee | actions over_action  (seats: -1 = none)
_HEAD = struct.Struct("<21b QQ II")
_BODY = SEATS * (len(_SUITED_CODES) + 15) + 76   # RoundCore._write_body(): hands, played
# Then the standing slot and four bomb slots, sized by the hand (_round.slot_sizes); a
# variant's whole layout (prefix, slots, size) is ``_round.layout(variant)``.


def _bad(message: str) -> ShuangkouError:
    return ShuangkouError(f"round state: {message}", "state")


# ----------------------------------------------------------------------------- the round

class Round(RoundCore):
    """One round in progress, in table seats (seats ``s`` and ``s + 2`` are partners).

    State: ``variant``; ``hand_at`` (the dealt hand sitting at each table seat); ``turn``
    (None once over); ``standing`` (:class:`Standing` or None when a seat leads);
    ``passes``; ``finish_order``; ``is_over``; ``actions_applied``; ``bombs`` (per seat, the
    bomb readings that stood); ``hand(seat)``; ``escaper``; ``stake``; ``table_fee``.
    """

    @classmethod
    def deal(cls, variant: str | Variant, hands: Sequence[Any], leader: int, *,
             revealed: Any = None, partner: int | None = None,
             teams: Sequence[Sequence[int]] | None = None, stake: int = 1, table_fee: int = 0,
             partial_deal: bool = False) -> Round:
        """Start a round from the four hands as dealt (dealt seats 0–3) and the leader (the
        dealt seat holding the revealed card; it leads first and never moves). The §9 swap
        seats the leader's partner — by ``revealed``, or ``teams`` / ``partner`` (dealt
        seats) — opposite the leader. Raises ShuangkouError naming the field."""
        v = get_variant(variant)
        if isinstance(hands, (str, bytes)) or len(hands) != SEATS:
            raise ShuangkouError("hands must list the 4 dealt hands", "hands")
        dealt = []
        for d, hand in enumerate(hands):
            try:
                codes = parse_cards(hand, v)
            except ShuangkouError as exc:
                raise ShuangkouError(f"hands[{d}]: {exc}", "hands") from None
            if not codes:
                raise ShuangkouError(f"hands[{d}] is empty", "hands")
            dealt.append(codes)
        return cls._from_deal(v, dealt, leader, revealed=revealed, partner=partner,
                              teams=teams, stake=stake, table_fee=table_fee,
                              partial=partial_deal)

    @classmethod
    def _from_deal(cls, v: Variant, dealt: list[list[int]], leader: Any, *, revealed: Any,
                   partner: Any, teams: Any, stake: Any, table_fee: Any,
                   partial: bool, checked: bool = False) -> Round:
        """:meth:`deal` from parsed hands (the replay validator enters here; ``checked``:
        it has found them exactly the deck, hand by hand, already)."""
        leader = _seat(leader, "leader", "leader")
        stake = _int(stake, "stake", 1, MAX_STAKE)
        table_fee = _int(table_fee, "table_fee", 0, MAX_TABLE_FEE)
        if not checked:
            check_deal(dealt, v, partial)
        hand_at = seating(v, dealt, leader, revealed=revealed, partner=partner, teams=teams)
        r = cls.__new__(cls)
        r._start(v, [dealt[d] for d in hand_at], leader, tuple(hand_at), stake, table_fee,
                 bool(partial))
        return r

    # -- derived answers
    def legal_plays(self, *, limit: int | None = None) -> Any:
        """The legal plays of the seat to act (``shuangkou.core.legal_plays``); passing is
        allowed besides when following (``.can_pass``)."""
        from ._enumerate import legal_plays  # the enumeration engine (compiled separately)

        if self.turn is None:
            raise RuleViolation("the round is over: nobody is to act", "ROUND_OVER")
        standing = self.standing
        return legal_plays(list(self.hand(self.turn)), self.variant,
                           standing.reading if standing is not None else None, limit=limit)

    def result(self) -> RoundResult:
        """The settlement (§10) of the finished round — what ``score_round`` gives for its
        finishing order, bombs, cards left, escape and stake."""
        if not self.is_over:
            raise ShuangkouError(f"the round is not over: seat {self.turn} is to act",
                                 "round")
        return self._settle(RoundResult)

    def copy(self) -> Round:
        other = type(self).__new__(type(self))
        self._copy_into(other)
        return other

    def __copy__(self) -> Round:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> Round:
        return self.copy()             # the records it shares (readings) are immutable

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle as the serialised form (worker processes, caches)."""
        v = self.variant
        spec = v.id if BUILTIN.get(v.id) is v else v.to_dict()   # Variant holds mappingproxies
        return _unpickle, (type(self), self.to_bytes(), spec)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Round):
            return NotImplemented
        return self.variant == other.variant and self.to_bytes() == other.to_bytes()

    __hash__ = None  # type: ignore[assignment]   # mutable

    def __repr__(self) -> str:
        state = "over" if self.is_over else f"seat {self.turn} to act"
        return (f"<Round {self.variant.id}: {state}, {self.actions_applied} actions, "
                f"cards left {list(self.cards_left)}>")

    # -- serialised form
    def to_bytes(self) -> bytes:
        """The state in a compact binary form: the same size for every state of a variant
        (hands, played cards, standing play, passes, finishing order, bombs; no history).
        Layout: magic, variant id, ``_HEAD``, the body, the standing slot, four bomb slots
        (written by the compiled ``RoundCore._pack``; :func:`_unpack` reads it)."""
        return self._pack()

    @classmethod
    def from_bytes(cls, data: bytes, variant: str | Variant) -> Round:
        """A round from :meth:`to_bytes`, checked to be a state the rules can reach
        (cards, seats, turn, standing play, bombs). Raises ShuangkouError (field
        ``state``) for a forged or inconsistent state."""
        v = get_variant(variant)
        r = cls.__new__(cls)
        if r._load_state(v, data):           # compiled: every check, no sentence
            return r
        return cls._from_bytes_checked(bytes(data), v)

    @classmethod
    def _from_bytes_checked(cls, data: bytes, v: Variant) -> Round:
        """:meth:`from_bytes` check by check in Python: the reference the compiled
        ``_load_state`` is tested against, and the precise sentence when it refuses."""
        st = _unpack(data, v)
        r = cls.__new__(cls)
        r._load_body(data, st["body_at"])
        why = r._check_cards(v.decks, v.lowest_rank, v.joker_copies, bool(st["partial"]))
        if why is not None:
            raise _bad(why)
        _validate(st, v, r.cards_left)
        r._restore(v, st)
        _validate_live(r, st)
        return r


def _unpickle(cls: type[Round], data: bytes, spec: str | dict[str, Any]) -> Round:
    return cls.from_bytes(data, spec if isinstance(spec, str) else variant_from_mapping(spec))


def _unpack(data: bytes, v: Variant) -> dict[str, Any]:
    shape = layout(v)
    if len(data) != shape.size or not data.startswith(MAGIC):
        raise _bad(f"{len(data)} bytes is not a serialised {v.id} round "
                   f"({shape.size} bytes starting {MAGIC!r})")
    pos = len(MAGIC)
    n = data[pos]
    vid = data[pos + 1:pos + 1 + n]
    if vid != v.id.encode():
        raise _bad(f"it is a round of {vid.decode(errors='replace')!r}, not {v.id}")
    pos += 1 + n
    h = _HEAD.unpack_from(data, pos)
    pos += _HEAD.size
    nfin = h[11]
    if not 0 <= nfin <= SEATS:
        raise _bad(f"{nfin} finishers")
    st: dict[str, Any] = {
        "turn": h[0], "leader": h[1], "last": h[2], "prev": h[3], "passes": h[4],
        "over": h[5], "over_seat": h[6], "escaper": h[7], "lead": (h[8], h[9], h[10]),
        "finish": tuple(h[12:12 + nfin]), "fin_pad": h[12 + nfin:16], "hand_at": tuple(h[16:20]),
        "partial": None, "stake": h[21], "table_fee": h[22], "actions": h[23],
        "over_action": h[24]}
    st["partial"] = h[20]
    st["body_at"] = pos
    pos += _BODY
    st["standing"], st["bombs"], st["standing_ranks"], st["bomb_ranks"] = unpack_slots(
        data, pos, shape.standing_slot, shape.bomb_slot)
    return st


def _validate(st: dict[str, Any], v: Variant, left: Sequence[int]) -> None:
    """The checks that need no readings (the cards were checked against the deck): seats,
    finishers, the turn, the standing play's bookkeeping. ``left``: cards held per seat."""
    seats = range(SEATS)
    if sorted(st["hand_at"]) != [0, 1, 2, 3]:
        raise _bad(f"hand_at {list(st['hand_at'])} is not a seating of the dealt hands")
    if st["partial"] not in (0, 1):
        raise _bad("partial_deal must be 0 or 1")
    st["partial"] = bool(st["partial"])
    if st["leader"] not in seats:
        raise _bad(f"leader {st['leader']} is not a seat")
    if not 1 <= st["stake"] <= MAX_STAKE or not 0 <= st["table_fee"] <= MAX_TABLE_FEE:
        raise _bad("stake or table fee out of range")
    fin = st["finish"]
    if len(set(fin)) != len(fin) or any(s not in seats for s in fin) or \
            any(x != -1 for x in st["fin_pad"]):
        raise _bad(f"finishing order {list(fin)} is not distinct seats")
    if {s for s in seats if not left[s]} != set(fin):
        raise _bad(f"the seats without cards {[s for s in seats if not left[s]]} are not the "
                   f"finishers {list(fin)}")
    if any(left[s] > v.hand_size for s in seats):
        raise _bad("a seat holds more cards than a hand")
    # how the round stands
    over, rule = st["over"], ROUND_END_RULES[v.round_end]
    ended_at = _ended_at(fin, rule)
    if over == 0:
        if ended_at is not None:
            raise _bad(f"the finishing order {list(fin)} ends the round but it goes on")
        if st["turn"] not in seats or not left[st["turn"]]:
            raise _bad(f"seat {st['turn']} cannot be the seat to act")
        if st["over_seat"] != 0 or st["escaper"] != -1 or st["over_action"] != 0:
            raise _bad("a round in progress with an end recorded")
    elif over in (1, 2):
        if over != (2 if rule == 1 else 1) or ended_at != len(fin) - 1 \
                or st["over_seat"] != fin[-1] or st["escaper"] != -1:
            raise _bad(f"the round cannot have ended at finishing order {list(fin)}")
    elif over == 3:
        if ended_at is not None or st["escaper"] not in seats or not left[st["escaper"]] \
                or st["over_seat"] != st["escaper"] or v.escape == "none":
            raise _bad("an escape the round cannot have had")
    else:
        raise _bad(f"unknown round end {over}")
    if st["actions"] > MAX_ACTIONS:
        raise _bad(f"{st['actions']:,} actions is not a round's count")
    if over and not st["over_action"] < st["actions"]:
        raise _bad("the round ended after its last action")
    why, a, b = st["lead"]
    if why not in (0, 1, 2) or a not in seats or (why == 2) != (b in seats) or \
            (why != 2 and b != -1):
        raise _bad("malformed lead")
    standing = st["standing"]
    if standing is None:
        if st["passes"] != 0:
            raise _bad("passes recorded while a seat leads")
        if not over and a != st["turn"]:
            raise _bad(f"seat {st['turn']} is to lead but seat {a} is recorded as leading")
    else:
        seat, cards, _ = standing
        holding = sum(1 for s in seats if left[s])
        if seat not in seats or st["last"] != seat or st["prev"] not in seats:
            raise _bad("the standing play's seat is inconsistent")
        if not over and not st["passes"] < holding - (1 if left[seat] else 0):
            raise _bad(f"{st['passes']} passes on a trick that has ended")
        if not over and st["turn"] == seat and left[seat]:
            raise _bad("the seat to act made the standing play")
    if why == 0 and a != st["leader"]:
        raise _bad("the first trick is led by someone other than the leader")


def _ended_at(fin: Sequence[int], rule: int) -> int | None:
    """Index in the finishing order at which the round ended (by the round-end rule)."""
    done: set[int] = set()
    for i, s in enumerate(fin):
        if rule == 1 or partner_of(s) in done:
            return i
        done.add(s)
    return None


def _validate_live(r: Round, st: dict[str, Any]) -> None:
    """The checks on the restored readings: the standing play's and every bomb's cards were
    played (bombs real)."""
    played = r._played_ranks()
    if any(map(gt, st["bomb_ranks"], played)):      # cards per rank in all the bombs
        raise _bad("bombs hold cards that were never played")
    if st["standing"] is not None:
        if any(map(gt, st["standing_ranks"], played)):
            raise _bad("the standing play holds cards that were never played")
        reading = r.standing.reading if r.standing is not None else None
        if reading is not None and reading.is_bomb and \
                reading not in r.bombs[st["standing"][0]]:
            raise _bad("a standing bomb missing from its seat's bombs")
