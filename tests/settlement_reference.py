"""The slow, obviously-correct twin of the settlement, written from RULES.md §9–§10: the
reference the compiled settlement (core_ext/_settle.pyx) is checked against.

Plain Python, one small named function per rule (round stars §10.2, the round end and
places §9, whose star sets the multiplier §10.3, contribution events §10.4, each escape
rule §10.6, the finals and the int64 refusal §10.5), with its own records, seat arithmetic
and round end: it shares no settlement code with the core. From the core it takes only
what is not settlement — reading cards (``_core``), the best bomb of a hand
(``_enumerate.best_bomb``, itself checked against tests/enum_reference.py), the errors and
the Variant data. It began as the Python settlement the compiled one replaced.

tests/test_scoring.py::test_compiled_settlement_equals_the_reference settles every
generated round and summary it builds (escapes included, under every escape rule and
house settlement rules) both ways and compares them record for record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from shuangkou.core._core import Reading, classify, parse_cards
from shuangkou.core.errors import IllegalPlay, InvalidPlay, ShuangkouError
from shuangkou.core.variants import Variant, get_variant

__all__ = [
    "ContributionEvent",
    "ESCAPE_AMOUNTS",
    "MAX_STAKE",
    "MAX_TABLE_FEE",
    "RoundResult",
    "SeatResult",
    "StarSource",
    "round_star",
    "score_round",
    "settle",
]

SEATS = 4
#: Largest stake and table fee accepted. With a house variant's table amounts (each up to
#: variants.MAX_AMOUNT) a settlement can still pass int64; :func:`settle` refuses those.
MAX_STAKE = 10**9
MAX_TABLE_FEE = 10**12
#: The wire carries amounts as int64 (protos/shuangkou/v1/scoring.proto).
INT64_MAX = 2**63 - 1
KINDS_OF_WIN = ("double", "single", "flat")
#: Place of the first finisher's partner -> kind of win (§9).
_KIND_BY_PARTNER_PLACE = {2: "double", 3: "single", 4: "flat"}

#: §10.6 escape amounts in units of the escape multiplier M (before the stake):
#: what the escaper pays and what each receiving seat gets.
ESCAPE_AMOUNTS: Mapping[str, Mapping[str, int]] = {
    "bianfeng": {"pay": 4 * 2, "receive": 0},   # 双扣 base × M × 2, nobody receives
    "fengkuang": {"pay": 4, "receive": 1},      # 4th-place 双扣 base × M; half to the opponents
    "qianbian": {"pay": 3 * 4, "receive": 4},   # 3 × the 双扣 base × M(S); holders get the base
}


def partner(seat: int) -> int:
    return (seat + 2) % SEATS


# ----------------------------------------------------------------------------- result records

@dataclass(frozen=True)
class StarSource:
    """Where a seat's round star came from (§10.2).

    ``rule``: ``none`` (no bomb), ``bomb`` (the star of bomb number ``bomb`` of the seat,
    0-based in play order), ``multi_bomb`` (``k`` or more bombs of at least ``n`` cards) or
    ``chain_bonus`` (chain bomb number ``bomb`` plus ``bonus`` other bombs of equal star).
    """

    rule: str = "none"
    bomb: int | None = None
    n: int | None = None
    k: int | None = None
    bonus: int | None = None

    def describe(self) -> str:
        if self.rule == "bomb":
            return f"bomb #{self.bomb}"
        if self.rule == "multi_bomb":
            return f"{self.k} bombs of at least {self.n} cards"
        if self.rule == "chain_bonus":
            return f"chain bomb #{self.bomb} + {self.bonus} bombs of equal star"
        return "no bomb"

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"rule": self.rule}
        for name in ("bomb", "n", "k", "bonus"):
            value = getattr(self, name)
            if value is not None:
                d[name] = value
        d["text"] = self.describe()
        return d


@dataclass(frozen=True)
class ContributionEvent:
    """One contribution payment (§10.4): ``to`` seats get +gain, the others pay each."""

    seat: int                 # whose bomb / round star earned it
    star: int                 # the settlement star (capped) it was paid at
    gain: int
    pay: int
    to: tuple[int, ...]       # seats receiving +gain (the player, or the player's team)
    bomb: int | None = None   # bomb number of the seat (per-bomb mode); None = round star

    def to_dict(self) -> dict[str, Any]:
        return {"seat": self.seat, "star": self.star, "gain": self.gain, "pay": self.pay,
                "to": list(self.to), "bomb": self.bomb}


@dataclass(frozen=True)
class SeatResult:
    """One seat's settlement: ``final = (base × multiplier + contribution + escape) × stake``
    (the huopin escaper also pays the table fee, which the stake does not multiply)."""

    seat: int
    team: int                 # 0 = seats 0 and 2, 1 = seats 1 and 3
    place: int | None         # None for seats still holding cards at an escape
    base: int
    star: int                 # the seat's round star (uncapped)
    star_source: StarSource
    multiplier: int
    contribution: int
    escape: int               # escape settlement amount (0 unless the round was escaped)
    final: int

    def to_dict(self) -> dict[str, Any]:
        return {"seat": self.seat, "team": self.team, "place": self.place, "base": self.base,
                "star": self.star, "star_source": self.star_source.to_dict(),
                "multiplier": self.multiplier, "contribution": self.contribution,
                "escape": self.escape, "final": self.final}


@dataclass(frozen=True)
class RoundResult:
    """The settlement of one round. ``kind`` is double/single/flat (双扣/单扣/平扣) or escape."""

    variant: str
    kind: str
    winning_team: int | None  # 0 = seats 0 and 2, 1 = seats 1 and 3; None after an escape
    finish_order: tuple[int, ...]  # seats that emptied their hands, in order
    star: int                 # settlement star that set the multiplier (capped)
    star_seat: int | None     # whose star that was (None: no bomb counted / escape rules)
    multiplier: int
    stake: int
    escaper: int | None
    table_fee: int
    seats: tuple[SeatResult, ...]
    contributions: tuple[ContributionEvent, ...]

    @property
    def final(self) -> tuple[int, ...]:
        return tuple(s.final for s in self.seats)

    @property
    def ranking(self) -> tuple[int, ...]:
        """Seats by place (1st first); only the finishers after an escape."""
        placed = [s for s in self.seats if s.place is not None]
        return tuple(s.seat for s in sorted(placed, key=lambda s: s.place or 0))

    @property
    def total(self) -> int:
        """Sum of the final amounts: 0 where the variant is zero-sum (docs/replays.md)."""
        return sum(s.final for s in self.seats)

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant, "kind": self.kind,
            "winning_team": self.winning_team,
            "finish_order": list(self.finish_order), "star": self.star,
            "star_seat": self.star_seat, "multiplier": self.multiplier, "stake": self.stake,
            "escaper": self.escaper, "table_fee": self.table_fee,
            "final": list(self.final), "total": self.total,
            "seats": [s.to_dict() for s in self.seats],
            "contributions": [c.to_dict() for c in self.contributions],
        }


# ----------------------------------------------------------------------------- round stars (§10.2)

def round_star(bombs: Sequence[Reading], variant: Variant) -> tuple[int, StarSource]:
    """A seat's round star and its source from the bombs it played (in play order).

    The maximum of each bomb's star, the multi-bomb table (variants with ``multi_bomb``)
    over the N-bombs and joker bombs (N = their star), and the chain bonus (``chain_bonus``).
    On equal stars the simplest source is reported: a bomb, then the table, then the bonus.
    """
    if not bombs:
        return 0, _NO_BOMB
    star = 0
    source: tuple[Any, ...] = ()  # the source's fields; the record is built once at the end
    for i, b in enumerate(bombs):
        if b.star > star:
            star, source = b.star, ("bomb", i)
    if variant.multi_bomb:
        sizes = sorted((b.star for b in bombs if b.kind != "chain_bomb"), reverse=True)
        for k in range(1, len(sizes) + 1):
            # k bombs have at least sizes[k-1] cards; the star grows with N (N + k − 1 for
            # N ≥ 5, k + 2 for N = 4), so only N = sizes[k-1] and N = 4 need checking.
            for n in (sizes[k - 1], 4):
                s = variant.multi_bomb_star(n, k)
                if s > star:
                    star, source = s, ("multi_bomb", n, k)
    if variant.chain_bonus:
        for i, b in enumerate(bombs):
            if b.kind == "chain_bomb":
                bonus = sum(1 for j, o in enumerate(bombs) if j != i and o.star == b.star)
                if b.star + bonus > star:
                    star, source = b.star + bonus, ("chain_bonus", i, bonus)
    if not source:
        return star, _NO_BOMB
    if source[0] == "bomb":
        return star, StarSource("bomb", bomb=source[1])
    if source[0] == "multi_bomb":
        return star, StarSource("multi_bomb", n=source[1], k=source[2])
    return star, StarSource("chain_bonus", bomb=source[1], bonus=source[2])


_NO_BOMB = StarSource()   # shared: the records are frozen


def _cap(star: int, variant: Variant) -> int:
    cap = variant.settlement_star_cap
    return star if cap is None else min(star, cap)


# ----------------------------------------------------------------------------- named behaviours

# Whose star sets the multiplier (§10.3): (round stars, first finisher) -> (star, seat).
def _star_of_winning_team(stars: Sequence[int], winner: int) -> tuple[int, int]:
    mate = partner(winner)
    return (stars[winner], winner) if stars[winner] >= stars[mate] else (stars[mate], mate)


def _star_of_all(stars: Sequence[int], winner: int) -> tuple[int, int]:
    seat = max(range(SEATS), key=lambda s: (stars[s], s == winner))
    return stars[seat], seat


def _star_of_winner(stars: Sequence[int], winner: int) -> tuple[int, int]:
    return stars[winner], winner


_MULTIPLIER_STAR: Mapping[str, Callable[[Sequence[int], int], tuple[int, int]]] = {
    "winning_team": _star_of_winning_team,
    "all": _star_of_all,
    "winner": _star_of_winner,
}


# Who receives a contribution (§10.4).
_RECIPIENTS: Mapping[str, Callable[[int], tuple[int, ...]]] = {
    "player": lambda seat: (seat,),
    "team": lambda seat: (seat, partner(seat)),
}


def _contribution_event(variant: Variant, seat: int, star: int,
                        bomb: int | None) -> ContributionEvent | None:
    star = _cap(star, variant)
    gain, pay = variant.contribution_for(star)
    if not gain and not pay:
        return None
    to = _RECIPIENTS[variant.contribution_recipients](seat)
    return ContributionEvent(seat=seat, star=star, gain=gain, pay=pay, to=to, bomb=bomb)


# When contributions are paid (§10.4): bombs per seat, round stars -> events.
def _per_bomb_events(variant: Variant, bombs: Sequence[Sequence[Reading]],
                     stars: Sequence[int]) -> list[ContributionEvent]:
    first = variant.contribution[0][0] if variant.contribution else None
    events = (_contribution_event(variant, seat, b.star, i)
              for seat in range(SEATS) for i, b in enumerate(bombs[seat])
              if first is not None and b.star >= first)   # below the first row pays nothing
    return [e for e in events if e is not None]


def _round_star_events(variant: Variant, bombs: Sequence[Sequence[Reading]],
                       stars: Sequence[int]) -> list[ContributionEvent]:
    events = (_contribution_event(variant, seat, stars[seat], None) for seat in range(SEATS))
    return [e for e in events if e is not None]


_CONTRIBUTION_MODES: Mapping[str, Callable[..., list[ContributionEvent]]] = {
    "per_bomb": _per_bomb_events,
    "round_star": _round_star_events,
}
#: Contribution modes that survive an escape (§10.6): earned-when-played payments stand.
_KEPT_ON_ESCAPE = frozenset({"per_bomb"})


def _apply_events(events: Iterable[ContributionEvent]) -> list[int]:
    amounts = [0] * SEATS
    for e in events:
        for seat in range(SEATS):
            amounts[seat] += e.gain if seat in e.to else -e.pay
    return amounts


# ----------------------------------------------------------------------------- round end (§9)

class _Outcome(NamedTuple):
    kind: str
    winner: int
    places: tuple[int, ...]       # place of each seat, 1..4
    base: tuple[int, ...]         # base amount of each seat (before the multiplier)


def _derived_places(finish_order: Sequence[int]) -> tuple[int, ...]:
    """Places: finishers in order, then the others in turn order after the last finisher."""
    places = [0] * SEATS
    for i, seat in enumerate(finish_order):
        places[seat] = i + 1
    nxt = len(finish_order) + 1
    last = finish_order[-1]
    for step in range(1, SEATS):
        seat = (last + step) % SEATS
        if not places[seat]:
            places[seat] = nxt
            nxt += 1
    return tuple(places)


def _round_over_at(finish_order: Sequence[int], round_end: str) -> int | None:
    """Index in ``finish_order`` at which the round ended, or None if it has not."""
    if round_end == "first_out":
        return 0 if finish_order else None
    done: set[int] = set()
    for i, seat in enumerate(finish_order):
        done.add(seat)
        if partner(seat) in done:
            return i
    return None


def _finishing_order_outcome(variant: Variant, finish_order: Sequence[int],
                             cards_left: Sequence[int] | None) -> _Outcome:
    places = _derived_places(finish_order)
    winner = finish_order[0]
    kind = _KIND_BY_PARTNER_PLACE[places[partner(winner)]]
    row = variant.base[kind]
    return _Outcome(kind, winner, places, tuple(row[places[s] - 1] for s in range(SEATS)))


def _first_out_outcome(variant: Variant, finish_order: Sequence[int],
                       cards_left: Sequence[int] | None) -> _Outcome:
    winner = finish_order[0]
    if cards_left is None:
        raise ShuangkouError(f"{variant.id}: scoring needs the cards each seat still holds "
                             "(cards_left or hands)", "cards_left")
    if cards_left[winner] != 0:
        raise ShuangkouError(f"seat {winner} finished first but cards_left says it holds "
                             f"{cards_left[winner]} cards", "cards_left")
    losers = (winner + 1) % SEATS, (winner + 3) % SEATS
    held = sum(cards_left[s] for s in losers)
    double_from, single_from = variant.kou_thresholds
    kind = "double" if held >= double_from else "single" if held >= single_from else "flat"
    k = variant.kou[kind]
    base = tuple(k if s % 2 == winner % 2 else -k for s in range(SEATS))
    return _Outcome(kind, winner, _derived_places(finish_order), base)


_ROUND_ENDS: Mapping[str, Callable[..., _Outcome]] = {
    "finishing_order": _finishing_order_outcome,
    "first_out": _first_out_outcome,
}


# ----------------------------------------------------------------------------- escapes (§10.6)

@dataclass(frozen=True)
class _EscapeContext:
    variant: Variant
    escaper: int
    bombs: Sequence[Sequence[Reading]]
    stars: Sequence[int]                  # round stars so far
    hands: Sequence[Sequence[int]] | None  # current hands (codes), None if not given
    stake: int
    table_fee: int


@dataclass(frozen=True)
class _EscapeSettlement:
    amounts: tuple[int, ...]     # per seat, before the stake
    star: int
    star_seat: int | None
    multiplier: int
    fee: int = 0                 # added to the escaper's final after the stake


def _need_hands(ctx: _EscapeContext) -> Sequence[Sequence[int]]:
    if ctx.hands is None:
        raise ShuangkouError(f"{ctx.variant.id}: settling an escape needs the four current "
                             "hands (its best bomb is part of the rule)", "hands")
    return ctx.hands


def _best_bomb_stars(ctx: _EscapeContext) -> list[int]:
    """Star of the best bomb each current hand could play (0 when it has none)."""
    from shuangkou.core._enumerate import best_bomb  # the enumeration engine (compiled separately)

    stars = []
    for hand in _need_hands(ctx):
        best = best_bomb(list(hand), ctx.variant) if hand else None
        stars.append(best.star if best is not None else 0)
    return stars


def _escape_none(ctx: _EscapeContext) -> _EscapeSettlement:
    raise IllegalPlay(f"{ctx.variant.id} defines no escape settlement (its rules say nothing "
                      "about a player leaving mid-round), so an escaped round cannot be scored",
                      "escape")


def _escape_bianfeng(ctx: _EscapeContext) -> _EscapeSettlement:
    """The escaper pays 双扣 × current M × 2 (M from the highest round star so far)."""
    seat = max(range(SEATS), key=lambda s: ctx.stars[s])
    star = _cap(ctx.stars[seat], ctx.variant)
    m = ctx.variant.multiplier_for(star)
    amounts = [0] * SEATS
    amounts[ctx.escaper] = -ESCAPE_AMOUNTS["bianfeng"]["pay"] * m
    return _EscapeSettlement(tuple(amounts), star, seat if star else None, m)


def _escape_fengkuang(ctx: _EscapeContext) -> _EscapeSettlement:
    """M from the best bomb in any current hand; escaper pays 4M, each opponent gets M."""
    held = _best_bomb_stars(ctx)
    seat = max(range(SEATS), key=lambda s: held[s])
    star = _cap(held[seat], ctx.variant)
    m = ctx.variant.multiplier_for(star)
    amounts = [0] * SEATS
    amounts[ctx.escaper] = -ESCAPE_AMOUNTS["fengkuang"]["pay"] * m
    for s in ((ctx.escaper + 1) % SEATS, (ctx.escaper + 3) % SEATS):
        amounts[s] = ESCAPE_AMOUNTS["fengkuang"]["receive"] * m
    return _EscapeSettlement(tuple(amounts), star, seat if star else None, m)


def _escape_qianbian(ctx: _EscapeContext) -> _EscapeSettlement:
    """S = best single bomb played or held; escaper pays 12·M(S), S-bomb teams get 4·M(S)."""
    held = _best_bomb_stars(ctx)
    played = [max((b.star for b in ctx.bombs[s]), default=0) for s in range(SEATS)]
    best = [max(held[s], played[s]) for s in range(SEATS)]
    seat = max(range(SEATS), key=lambda s: best[s])
    s_star = best[seat]
    m = ctx.variant.multiplier_for(_cap(s_star, ctx.variant))
    amounts = [0] * SEATS
    amounts[ctx.escaper] = -ESCAPE_AMOUNTS["qianbian"]["pay"] * m
    if s_star:
        # A team "played or holds a bomb of star S" when either member does; S is the
        # maximum, so holding one means the hand's best bomb has exactly star S.
        teams = {s % 2 for s in range(SEATS) if s_star in (played[s], held[s])}
        for s in range(SEATS):
            if s != ctx.escaper and s % 2 in teams:
                amounts[s] = ESCAPE_AMOUNTS["qianbian"]["receive"] * m
    return _EscapeSettlement(tuple(amounts), s_star, seat if s_star else None, m)


def _escape_huopin(ctx: _EscapeContext) -> _EscapeSettlement:
    """The escaper pays escape_fee × stake plus the table fee; the others nothing."""
    amounts = [0] * SEATS
    amounts[ctx.escaper] = -ctx.variant.escape_fee
    return _EscapeSettlement(tuple(amounts), 0, None, 1, fee=ctx.table_fee)


_ESCAPES: Mapping[str, Callable[[_EscapeContext], _EscapeSettlement]] = {
    "none": _escape_none,
    "bianfeng": _escape_bianfeng,
    "fengkuang": _escape_fengkuang,
    "qianbian": _escape_qianbian,
    "huopin": _escape_huopin,
}


# ----------------------------------------------------------------------------- inputs

def _check_int(name: str, value: Any, low: int, high: int = 10**6) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ShuangkouError(f"{name} must be an integer {low}–{high:,}; got {value!r}", name)
    return value


def _check_seat(name: str, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < SEATS:
        raise ShuangkouError(f"{name} must be a seat 0–3; got {value!r}", name)
    return value


def _bomb_reading(play: Any, variant: Variant, seat: int, i: int) -> Reading:
    """A bomb given as a standing Reading or as cards (read by its primary reading)."""
    if isinstance(play, Reading):
        reading = play
        if reading.variant != variant.id:
            raise ShuangkouError(f"bombs[{seat}][{i}] is a {reading.variant} reading, "
                                 f"not {variant.id}", "bombs")
    else:
        reading = classify(play, variant).primary
    if not reading.is_bomb:
        raise InvalidPlay(f"bombs[{seat}][{i}] is not a bomb: it reads as "
                          f"{reading.describe()}", "bombs")
    return reading


def _bombs_by_seat(bombs: Sequence[Sequence[Any]] | None,
                   variant: Variant) -> list[list[Reading]]:
    if bombs is None:
        return [[] for _ in range(SEATS)]
    if isinstance(bombs, (str, bytes)) or len(bombs) != SEATS:
        raise ShuangkouError("bombs must list the bombs of each of the 4 seats", "bombs")
    return [[_bomb_reading(p, variant, seat, i) for i, p in enumerate(plays)]
            for seat, plays in enumerate(bombs)]


def _check_finish_order(finish_order: Sequence[int], variant: Variant,
                        escaper: int | None) -> tuple[int, ...]:
    order = tuple(_check_seat(f"finish_order[{i}]", s) for i, s in enumerate(finish_order))
    if len(set(order)) != len(order):
        raise ShuangkouError(f"finish_order repeats a seat: {list(order)}", "finish_order")
    over = _round_over_at(order, variant.round_end)
    if escaper is not None:
        if escaper in order:
            raise ShuangkouError(f"seat {escaper} escaped but had already finished",
                                 "escape")
        if over is not None:
            raise ShuangkouError(f"the round was already over at seat {order[over]}'s "
                                 "finish; nobody can escape afterwards", "escape")
        return order
    if over is None:
        what = ("the first finisher" if variant.round_end == "first_out"
                else "both players of one team")
        raise ShuangkouError(f"finish_order {list(order)} does not end the round: "
                             f"{variant.id} ends with {what}", "finish_order")
    if over != len(order) - 1:
        raise ShuangkouError(f"finish_order {list(order)} goes on after the round ended at "
                             f"seat {order[over]}; later places are derived, not given",
                             "finish_order")
    return order


def _hand_codes(hands: Sequence[Any] | None, variant: Variant) -> list[list[int]] | None:
    if hands is None:
        return None
    if isinstance(hands, (str, bytes)) or len(hands) != SEATS:
        raise ShuangkouError("hands must list the current hand of each of the 4 seats", "hands")
    return [parse_cards(h, variant) for h in hands]


# ----------------------------------------------------------------------------- entry point

def score_round(
    variant: str | Variant,
    finish_order: Sequence[int] = (),
    bombs: Sequence[Sequence[Any]] | None = None,
    *,
    stake: int = 1,
    cards_left: Sequence[int] | None = None,
    escape: int | None = None,
    hands: Sequence[Any] | None = None,
    table_fee: int = 0,
) -> RoundResult:
    """Settle a round from its summary (§9 round end, §10).

    :param variant: built-in id or :class:`Variant`.
    :param finish_order: the seats in the order their hands emptied, up to the end of the
        round (``huopin``: the one first finisher). With ``escape``: those who had finished.
    :param bombs: per seat (4 entries), the bombs it played in order: each a standing
        :class:`Reading`, or cards (read by their primary reading).
    :param stake: multiplies every amount (§10).
    :param cards_left: ``huopin``: the number of cards each seat still holds (or give
        ``hands``).
    :param escape: the seat that abandoned the round (§10.6), if any.
    :param hands: the cards each seat still holds (needed for ``fengkuang*``/``qianbian``
        escapes; also gives ``cards_left``).
    :param table_fee: ``huopin`` escape: the table fee the escaper pays on top.
    :raises ShuangkouError: inconsistent summary (message names the field);
        :class:`IllegalPlay` for an escape in a variant without an escape rule;
        :class:`InvalidPlay`/:class:`CardError` for a bomb that is not one.
    """
    v = get_variant(variant)
    stake = _check_int("stake", stake, 1, MAX_STAKE)
    table_fee = _check_int("table_fee", table_fee, 0, MAX_TABLE_FEE)
    if escape is not None:
        _check_seat("escape", escape)
    order = _check_finish_order(finish_order, v, escape)
    played = _bombs_by_seat(bombs, v)
    codes = _hand_codes(hands, v)
    if codes is not None:
        for s in order:
            if codes[s]:
                raise ShuangkouError(f"seat {s} finished but hands[{s}] holds cards", "hands")
        if cards_left is None:
            cards_left = [len(h) for h in codes]
    if cards_left is not None:
        if isinstance(cards_left, (str, bytes)) or len(cards_left) != SEATS:
            raise ShuangkouError("cards_left must give a count for each of the 4 seats",
                                 "cards_left")
        cards_left = [_check_int(f"cards_left[{s}]", n, 0) for s, n in enumerate(cards_left)]

    return settle(v, order, played, stake=stake, cards_left=cards_left, escaper=escape,
                  hands=codes, table_fee=table_fee)


def settle(v: Variant, order: tuple[int, ...], played: Sequence[Sequence[Reading]], *,
           stake: int, cards_left: Sequence[int] | None, escaper: int | None,
           hands: Sequence[Sequence[int]] | None, table_fee: int,
           result_type: type[RoundResult] = RoundResult, **extra: Any) -> RoundResult:
    """Settle inputs that are already consistent (the second half of :func:`score_round`;
    replays, validated move by move, come straight here). ``result_type`` and ``extra``
    let a caller return a richer record (core.replay.ReplayResult)."""
    rounds = [round_star(played[s], v) for s in range(SEATS)]
    stars = [r[0] for r in rounds]
    if escaper is not None:
        return _settle_escape(v, order, played, rounds, hands, escaper, stake, table_fee,
                              result_type, extra)
    outcome = _ROUND_ENDS[v.round_end](v, order, cards_left)
    cap = v.settlement_star_cap
    star, star_seat = _MULTIPLIER_STAR[v.multiplier_star](
        stars if cap is None or max(stars) <= cap else [min(s, cap) for s in stars],
        outcome.winner)
    m = v.multiplier_for(star)
    events = _CONTRIBUTION_MODES[v.contribution_mode](v, played, stars)
    contrib = _apply_events(events)
    base, places = outcome.base, outcome.places
    _check_fits(v, [(base[s] * m + contrib[s]) * stake for s in range(SEATS)], stake)
    seats = tuple([
        SeatResult(s, s % 2, places[s], base[s], stars[s], rounds[s][1], m, contrib[s], 0,
                   (base[s] * m + contrib[s]) * stake)
        for s in range(SEATS)])
    return result_type(
        variant=v.id, kind=outcome.kind, winning_team=outcome.winner % 2,
        finish_order=order, star=star, star_seat=star_seat if star else None, multiplier=m,
        stake=stake, escaper=None, table_fee=table_fee, seats=seats,
        contributions=tuple(events), **extra)


def _check_fits(v: Variant, finals: Sequence[int], stake: int) -> None:
    """Refuse a settlement the wire cannot carry exactly: every final amount and their sum
    must fit int64 (only house variants with huge tables reach this; docs/decisions.md)."""
    total = sum(finals)
    if -INT64_MAX <= min(finals) and max(finals) <= INT64_MAX and -INT64_MAX <= total <= INT64_MAX:
        return
    worst = max((*finals, total), key=abs)
    if abs(worst) > INT64_MAX:
        raise ShuangkouError(
            f"the settlement does not fit the 64-bit amounts results carry: an amount of "
            f"{worst:.3e} (base × multiplier + contributions in {v.id}, × stake {stake:,}); "
            f"lower the stake or the variant's table amounts", "stake")


def _settle_escape(v: Variant, order: tuple[int, ...], played: Sequence[Sequence[Reading]],
                   rounds: list[tuple[int, StarSource]], codes: Sequence[Sequence[int]] | None,
                   escaper: int, stake: int, table_fee: int, result_type: type[RoundResult],
                   extra: dict[str, Any]) -> RoundResult:
    stars = [r[0] for r in rounds]
    if codes is not None and not codes[escaper]:
        raise ShuangkouError(f"seat {escaper} escaped but hands[{escaper}] is empty", "hands")
    ctx = _EscapeContext(v, escaper, played, stars, codes, stake, table_fee)
    settled = _ESCAPES[v.escape](ctx)
    events = (_CONTRIBUTION_MODES[v.contribution_mode](v, played, stars)
              if v.contribution_mode in _KEPT_ON_ESCAPE else [])
    contrib = _apply_events(events)
    places = {s: i + 1 for i, s in enumerate(order)}
    _check_fits(v, [(settled.amounts[s] + contrib[s]) * stake
                    - (settled.fee if s == escaper else 0) for s in range(SEATS)], stake)
    seats = tuple(
        SeatResult(seat=s, team=s % 2, place=places.get(s), base=0, star=stars[s],
                   star_source=rounds[s][1], multiplier=settled.multiplier,
                   contribution=contrib[s], escape=settled.amounts[s],
                   final=(settled.amounts[s] + contrib[s]) * stake
                   - (settled.fee if s == escaper else 0))
        for s in range(SEATS))
    return result_type(
        variant=v.id, kind="escape", winning_team=None, finish_order=order,
        star=settled.star, star_seat=settled.star_seat, multiplier=settled.multiplier,
        stake=stake, escaper=escaper, table_fee=table_fee, seats=seats,
        contributions=tuple(events), **extra)
