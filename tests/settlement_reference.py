"""The slow, obviously-correct twin of the settlement, written from RULES.md §9–§10: the
reference the compiled settlement (core_ext/_settle.pyx) is checked against.

Plain Python, one small named function per rule (round stars §10.2, places and the kind
of win §9, whose star sets the multiplier §10.3, contribution events §10.4, each escape
rule §10.6, the finals and the int64 refusal §10.5), with its own tables, seat arithmetic
and escape amounts: it shares no settlement code with the core. From the core it takes only
what is not settlement — the records it fills (``results``), the best bomb of a hand
(``_enumerate.best_bomb``, itself checked against the legal plays in
tests/test_enumerate.py), the errors and the Variant data. Like the compiled
:func:`settle`, it takes consistent inputs (checking a summary is score_round's part). It
began as the Python settlement the compiled one replaced.

tests/test_scoring.py::test_compiled_settlement_equals_the_reference settles every
generated round it builds (escapes included, under every escape rule and house
settlement rules) both ways and compares the records field by field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from shuangkou.core._core import Reading
from shuangkou.core.errors import IllegalPlay, ShuangkouError
from shuangkou.core.results import ContributionEvent, RoundResult, SeatResult, StarSource
from shuangkou.core.variants import Variant

__all__ = ["ESCAPE_AMOUNTS", "round_star", "settle"]

SEATS = 4
#: The wire carries amounts as int64 (protos/shuangkou/v1/scoring.proto).
INT64_MAX = 2**63 - 1
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


# ----------------------------------------------------------------------------- round stars (§10.2)

def multi_bomb_star(variant: Variant, n: int, k: int) -> int:
    """Round star for k or more bombs of at least n cards (§10.2 pattern), 0 if none."""
    need = dict(variant.multi_bomb)
    if not need:
        return 0
    if n == 4:
        return k + 2 if k >= need.get(4, 99) else 0
    return n + k - 1 if k >= need.get(5, 99) else 0


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
                s = multi_bomb_star(variant, n, k)
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
    assert cards_left is not None and cards_left[winner] == 0   # consistent inputs
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


# ----------------------------------------------------------------------------- settlement

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
    must fit int64 (only house variants with huge tables reach this;
    docs/decisions/rules.md R15)."""
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
