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
(core_ext/_round.pyx), the serialised form too (core_ext/_state.pyx); this module adds the
deal and the seating swap, and settles through :func:`~shuangkou.core.scoring.settle`.

    >>> from shuangkou.core import Round
    >>> r = Round.deal("baibian", ["3S 3H", "4S 9S", "5S 5H", "6S 9H"], 0, partial_deal=True)
    >>> r.play(0, "3S 3H").next_turn, r.pass_turn(1).next_turn
    (1, 2)
    >>> rec = r.play(2, "5S 5H")
    >>> rec.finished, rec.round_over, r.result().kind
    (2, True, 'double')
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, TypeVar

from . import _state
from ._core import format_cards, parse_cards
from ._round import NO_ROUND_ID, NO_SEED, RoundCore, copies_held, deck_exact
from ._settle import settle_round
from ._state import StateKeys
from .cards import MAX_CODE, SEATS, card_rank, check_seat, is_suited, rank_copies, rank_name
from .cards import partner as partner_of
from .errors import CardError, RuleViolation, ShuangkouError
from .round_records import Action, ActionRecord, Standing
from .scoring import MAX_STAKE, MAX_TABLE_FEE, RoundResult
from .variants import BUILTIN, Variant, get_variant, variant_from_mapping

__all__ = ["Action", "ActionRecord", "Round", "StateKeys", "Standing", "ROUND_ID_BYTES",
           "check_deal", "check_int", "dealt_hands", "seating"]

_R = TypeVar("_R", bound=RoundResult)
#: Bytes of a round's identity (``Round.round_id``, kept in every state).
ROUND_ID_BYTES = len(NO_ROUND_ID)


def check_int(value: Any, name: str, low: int, high: int) -> int:
    """``value`` if it is an integer ``low``–``high``, else ShuangkouError naming ``name``
    (a round's stake and table fee; a replay's, which are the round's)."""
    if type(value) is not int or not low <= value <= high:
        raise ShuangkouError(f"{name} must be an integer {low}–{high:,}; got {value!r}", name)
    return value


def _same_kind(exc: ShuangkouError) -> type[ShuangkouError]:
    """The class to re-raise a card error as under another field: bad cards stay
    INVALID_CARDS (docs/api.md), whatever field they are reported on."""
    return CardError if isinstance(exc, CardError) else ShuangkouError


# ----------------------------------------------------------------------------- the deal (§9)

def dealt_hands(hands: Sequence[Any], v: Variant) -> list[list[int]]:
    """The four dealt hands (cards as :func:`~shuangkou.core.parse_cards` reads them) as
    codes, none empty; ShuangkouError naming ``hands`` (CardError for bad cards)."""
    if isinstance(hands, (str, bytes)) or len(hands) != SEATS:
        raise ShuangkouError("hands must list the 4 dealt hands", "hands")
    dealt = []
    for d, hand in enumerate(hands):
        try:
            codes = parse_cards(hand, v)
        except ShuangkouError as exc:
            raise _same_kind(exc)(f"hands[{d}]: {exc}", "hands") from None
        if not codes:
            raise ShuangkouError(f"hands[{d}] is empty", "hands")
        dealt.append(codes)
    return dealt


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
    over = next((c for c in range(1, MAX_CODE + 1) if is_suited(c) and faces[c] > v.decks),
                None)
    if over is not None:
        raise CardError(f"the hands hold {faces[over]} copies of "
                             f"{format_cards([over])[0]}; the {v.id} deck has {v.decks}",
                             "hands")
    for r in range(15):
        want = rank_copies(r, v.decks, v.lowest_rank, v.joker_copies)
        if ranks[r] > want or (not partial and ranks[r] != want):
            raise (CardError if ranks[r] > want else ShuangkouError)(
                f"the hands are not {'part of ' if partial else ''}the {v.id} deck: "
                f"{ranks[r]} cards of rank {rank_name(r)} dealt, the deck has {want}"
                + ("" if partial else " (pass partial_deal to allow partial deals)"), "hands")


def _revealed_partner(revealed: Any, hands: Sequence[Sequence[int]], leader: int, v: Variant,
                      stated: bool) -> int | None:
    """The dealt seat of the leader's partner as the revealed card says (§9), or None."""
    if revealed is None:
        return None
    try:
        codes = parse_cards([revealed] if isinstance(revealed, str) else revealed)
    except ShuangkouError as exc:
        raise _same_kind(exc)(f"revealed: {exc}", "revealed") from None
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
                or sorted(check_seat(s, "teams entry", "teams") for t in teams for s in t)
                != [0, 1, 2, 3]):
            raise ShuangkouError(f"teams must split the dealt seats 0–3 into two pairs, e.g. "
                                 f"[[0, 2], [1, 3]]; got {teams!r}", "teams")
        mate = next(t[0] + t[1] - leader for t in teams if leader in t)
    if partner is not None:
        stated = check_seat(partner, "partner")
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


# ----------------------------------------------------------------------------- the round

class Round(RoundCore):
    """One round in progress, in table seats (seats ``s`` and ``s + 2`` are partners).

    State: ``variant``; ``hand_at`` (the dealt hand sitting at each table seat); ``turn``
    (None once over); ``standing`` (:class:`Standing` or None when a seat leads);
    ``passes``; ``finish_order``; ``is_over``; ``actions_applied``; ``bombs`` (per seat, the
    bomb readings that stood); ``hand(seat)``; ``escaper``; ``stake``; ``table_fee``;
    ``round_id`` (16 bytes naming the round, fixed at the deal and kept in every state: a
    caller compares it to tell one round's states from another's, docs/rounds.md).
    """

    @classmethod
    def deal(cls, variant: str | Variant, hands: Sequence[Any], leader: int, *,
             revealed: Any = None, partner: int | None = None,
             teams: Sequence[Sequence[int]] | None = None, stake: int = 1, table_fee: int = 0,
             partial_deal: bool = False, round_id: bytes | None = None) -> Round:
        """Start a round from the four hands as dealt (dealt seats 0–3) and the leader (the
        dealt seat holding the revealed card; it leads first and never moves). The §9 swap
        seats the leader's partner — by ``revealed``, or ``teams`` / ``partner`` (dealt
        seats) — opposite the leader. ``round_id``: the round's 16-byte identity (default:
        16 random bytes, so two deals of the same hands are two rounds). Raises
        ShuangkouError naming the field."""
        v = get_variant(variant)
        return cls._from_deal(v, dealt_hands(hands, v), leader, revealed=revealed, partner=partner,
                              teams=teams, stake=stake, table_fee=table_fee,
                              partial=partial_deal, round_id=round_id)

    @classmethod
    def deal_seeded(cls, variant: str | Variant, seed: bytes, *, partner: int | None = None,
                    teams: Sequence[Sequence[int]] | None = None, stake: int = 1,
                    table_fee: int = 0) -> Round:
        """Start a round dealt from ``seed`` (16–64 bytes) by the documented shuffle
        (:mod:`shuangkou.core.shuffle`): the hands, the leader and the revealed card are the
        seed's; ``seed_sha256`` records its commitment, and its first 16 bytes are the
        ``round_id`` (so every replica deals the same state from one seed). ``teams`` /
        ``partner`` only for a three-deck variant, where no card forms the teams (else they
        are as dealt)."""
        from .shuffle import commitment, deal_from_seed

        v = get_variant(variant)
        d = deal_from_seed(v, seed)
        if d.revealed is not None and (teams is not None or partner is not None):
            raise ShuangkouError("a seeded deal reveals a card, which forms the teams: give no "
                                 "'teams' or 'partner'", "teams" if teams else "partner")
        return cls._from_deal(v, [list(h) for h in d.hands], d.leader,
                              revealed=None if d.revealed is None else [d.revealed],
                              partner=partner, teams=teams, stake=stake, table_fee=table_fee,
                              partial=False, checked=True, seed_sha256=commitment(seed),
                              round_id=commitment(seed)[:ROUND_ID_BYTES])

    @classmethod
    def _from_deal(cls, v: Variant, dealt: list[list[int]], leader: Any, *, revealed: Any,
                   partner: Any, teams: Any, stake: Any, table_fee: Any,
                   partial: bool, checked: bool = False,
                   seed_sha256: bytes | None = None, round_id: bytes | None = None) -> Round:
        """:meth:`deal` from parsed hands (the replay validator enters here; ``checked``:
        it has found them exactly the deck, hand by hand, already)."""
        if round_id is None:
            round_id = os.urandom(ROUND_ID_BYTES)
        elif not isinstance(round_id, bytes) or len(round_id) != ROUND_ID_BYTES:
            raise ShuangkouError(f"round_id must be {ROUND_ID_BYTES} bytes", "round_id")
        leader = check_seat(leader, "leader")
        stake = check_int(stake, "stake", 1, MAX_STAKE)
        table_fee = check_int(table_fee, "table_fee", 0, MAX_TABLE_FEE)
        if not checked:
            check_deal(dealt, v, partial)
        hand_at = seating(v, dealt, leader, revealed=revealed, partner=partner, teams=teams)
        r = cls.__new__(cls)
        r._start(v, [dealt[d] for d in hand_at], leader, tuple(hand_at), stake, table_fee,
                 bool(partial), NO_SEED if seed_sha256 is None else seed_sha256, round_id)
        return r

    # -- actions
    def apply(self, action: Action) -> ActionRecord:
        """Apply ``action`` (an :class:`Action`, checked for form when it was made) by
        :meth:`play`, :meth:`pass_turn` or :meth:`escape`: the one dispatch that replays,
        the round service and tables share."""
        if action.kind == "play":
            return self.play(action.seat, action.cards, action.declare)
        if action.kind == "pass":
            return self.pass_turn(action.seat)
        return self.escape(action.seat)

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
        return self.settle(RoundResult)

    def settle(self, result_type: type[_R], **extra: Any) -> _R:
        """The settlement of the state as it stands, as ``result_type`` with the ``extra``
        fields (a replay's result adds the seating and the action count)."""
        return settle_round(self, result_type, extra)

    def settle_json(self, **extra: Any) -> str:
        """:meth:`settle` as the JSON text of the record's ``to_dict()`` (what ``orjson.dumps``
        writes), straight from the settlement, no record built: with no ``extra`` a
        RoundResult's, with ``hand_at`` and ``actions`` a ReplayResult's."""
        return settle_round(self, None, extra)

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

    # -- serialised form (core_ext/_state.pyx documents the layout)
    def to_bytes(self, keys: StateKeys | None = None) -> bytes:
        """The state in a compact binary form: the same size for every state of a variant
        (hands, played cards, standing play, passes, finishing order, bombs; no history),
        bound to the variant's rules (its fingerprint) and, with ``keys``, sealed under
        their signing key (an HMAC: core_ext/_state.pyx)."""
        return _state.pack(self, keys)

    @classmethod
    def from_bytes(cls, data: bytes, variant: str | Variant,
                   keys: StateKeys | None = None) -> Round:
        """A round from :meth:`to_bytes`, checked to be a state the rules can reach
        (cards, seats, turn, standing play, bombs) under exactly the rules of ``variant``;
        with ``keys``, sealed under one of them and unaltered. Raises ShuangkouError
        (field ``state``) for a forged, altered or inconsistent state, saying what is
        wrong."""
        r = cls.__new__(cls)
        _state.load(r, get_variant(variant), data, keys)
        return r


def _unpickle(cls: type[Round], data: bytes, spec: str | dict[str, Any]) -> Round:
    return cls.from_bytes(data, spec if isinstance(spec, str) else variant_from_mapping(spec))
