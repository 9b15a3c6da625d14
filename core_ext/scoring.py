"""Round settlement from a summary (RULES.md §9 round end, §10 scoring): the Python face.

:func:`score_round` takes what a round leaves behind — the finishing order (``huopin``: the
first finisher and the cards each seat still holds), the bombs each seat played, the stake
and, for an escape, the escaping seat and the current hands — checks it, and returns a
:class:`RoundResult` with a per-seat breakdown.

Seats are table seats (after the revealed-card swap): seats ``s`` and ``s + 2`` are
partners. The settlement itself — round stars, places and the kind of win, the multiplier,
contributions, escapes and the finals — is compiled (core_ext/_settle.pyx, over the
:class:`~shuangkou.core.variants.Variant`'s tables; every rule that behaves differently
between variants is chosen there by the variant field that names it); :func:`settle` and
:func:`round_star` delegate to it, and the records are those of core_ext/results.py. Here:
the checks of a summary, the round end asked of the round (``round_over_at``), the
constants and the records, re-exported.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import _settle
from ._core import Reading, classify, parse_cards
from ._round import round_over_at
from ._settle import ESCAPE_AMOUNTS, MAX_STAKE, MAX_TABLE_FEE
from .cards import SEATS, check_seat
from .errors import InvalidPlay, ShuangkouError
from .results import ContributionEvent, RoundResult, SeatResult, StarSource
from .round_ends import round_end
from .variants import Variant, get_variant

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


def round_star(bombs: Sequence[Reading], variant: Variant) -> tuple[int, StarSource]:
    """A seat's round star and its source from the bombs it played (in play order, §10.2).

    The maximum of each bomb's star, the multi-bomb table (variants with ``multi_bomb``)
    over the N-bombs and joker bombs (N = their star), and the chain bonus (``chain_bonus``).
    On equal stars the simplest source is reported: a bomb, then the table, then the bonus.
    """
    return _settle.round_star(bombs, variant)


# ----------------------------------------------------------------------------- inputs

def _check_int(name: str, value: Any, low: int, high: int = 10**6) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise ShuangkouError(f"{name} must be an integer {low}–{high:,}; got {value!r}", name)
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
    order = tuple(check_seat(s, f"finish_order[{i}]") for i, s in enumerate(finish_order))
    if len(set(order)) != len(order):
        raise ShuangkouError(f"finish_order repeats a seat: {list(order)}", "finish_order")
    over = round_over_at(order, variant.round_end)
    if escaper is not None:
        if escaper in order:
            raise ShuangkouError(f"seat {escaper} escaped but had already finished",
                                 "escape")
        if over is not None:
            raise ShuangkouError(f"the round was already over at seat {order[over]}'s "
                                 "finish; nobody can escape afterwards", "escape")
        return order
    if over is None:
        raise ShuangkouError(f"finish_order {list(order)} does not end the round: "
                             f"{variant.id} ends with {round_end(variant.round_end).ends_with}",
                             "finish_order")
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
        check_seat(escape, "escape")
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
    replays, validated move by move, come straight here), escapes included. ``result_type``
    and ``extra`` let a caller return a richer record (shuangkou.core.results.ReplayResult).
    A finishing order that did not end the round (or, with ``escaper``, had already ended
    it) is refused, as is a seat outside 0–3.
    """
    return _settle.settle(v, tuple(order), played, stake, cards_left, escaper, hands,
                          table_fee, result_type, extra)
