"""How a player names the reading a play is meant as (RULES.md §7 rule 4)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .cards import BJ
from .errors import ShuangkouError

__all__ = ["Declaration", "MAX_STAR", "MAX_WILDS", "check_parts", "declaration_of"]

MAX_STAR = 255
#: Wild jokers one play can hold: a deck has at most 4 copies of each joker (variants.py,
#: ``joker_copies`` 0–4; RULES.md §3), so a play holds at most 8 jokers, and the compiled
#: core's declaration holds 8 wild ranks (docs/decisions/rules.md R11).
MAX_WILDS = 8

#: The fields the parts are reported on in a replay document (RULES.md §7 rule 4).
DOCUMENT_FIELDS = ("declare_top", "declare_star", "declare_wilds")


class Declaration(NamedTuple):
    """A declared reading. ``kind`` names the type; the other parts, when set, narrow the
    choice among readings of that type (unset parts match any reading):

    * ``top``: the top rank (position 0–14 or a name such as ``"9"``, ``"SJ"``); for chains,
      the last rank in chain order (``K A 2 3`` has top ``3``, see docs/decisions/rules.md R7);
    * ``star``: the bomb's star;
    * ``wilds``: the ranks the wild jokers stand for, in any order (``()`` = no wilds).

    Kind, top and star tell most readings apart, but some chain bombs share all three
    (huopin ``9999 TTTTT JJJJJJ QQQQQQ KKKKKK`` vs ``9999 TTTTTT JJJJJ QQQQQQ KKKKKK``, both
    9 stars, top K); the wild placement names every reading (docs/decisions/rules.md R10).
    """

    kind: str
    top: int | str | None = None
    star: int | None = None
    wilds: tuple[int | str, ...] | None = None


def declaration_of(fields: dict[str, Any]) -> Declaration | None:
    """The declaration a document's fields state (a replay action, RULES.md §7 rule 4):
    ``declare`` (a play type name) and, to tell readings of that type apart, ``declare_top``
    (a rank), ``declare_star`` (a star) and ``declare_wilds`` (the ranks the wild jokers stand
    for); None when nothing is declared. Checked for form here (ShuangkouError saying which
    field and why); whether the cards have that reading is the round's to say."""
    kind, top = fields.get("declare"), fields.get("declare_top")
    star, wilds = fields.get("declare_star"), fields.get("declare_wilds")
    if kind is not None and type(kind) is not str:
        raise ShuangkouError(f"declare must be a play type name such as \"straight\"; got "
                             f"{kind!r}", "declare")
    if kind is None:
        for name in ("declare_top", "declare_star", "declare_wilds"):
            if fields.get(name) is not None:
                raise ShuangkouError(f"{name} needs declare (the play type it refines)", name)
        return None
    check_parts(top, star, wilds)
    return Declaration(kind, top, star, None if wilds is None else tuple(wilds))


def _rank_form(value: Any) -> bool:
    """Written as a rank: a name of at most two characters (``"9"``, ``"10"``, ``"SJ"``;
    which rank it names is the core's to read) or a position 0–14."""
    return (type(value) is str and len(value) <= 2) or (type(value) is int and 0 <= value <= BJ)


def check_parts(top: Any, star: Any, wilds: Any,
                fields: tuple[str, str, str] = DOCUMENT_FIELDS,
                error: type[ShuangkouError] = ShuangkouError) -> None:
    """The one check of a declaration's parts for form (every reader calls it: documents,
    the compiled core, the service's messages): ``top`` a rank, ``star`` 0–255, ``wilds``
    at most :data:`MAX_WILDS` ranks; unset parts (None) pass. Raises ``error`` naming the
    part's field from ``fields`` (top, star, wilds; a wild as ``wilds[i]``).

        >>> check_parts("9", 8, ["SJ"])
        >>> check_parts(None, None, list(range(9)))
        Traceback (most recent call last):
        ...
        shuangkou.core.errors.ShuangkouError: declare_wilds must be a list of at most 8 ranks such as ["9"]; got [0, 1, 2, 3, 4, 5, 6, 7, 8]
    """
    top_field, star_field, wilds_field = fields
    if top is not None and not _rank_form(top):
        raise error(f"{top_field} must be a rank such as \"9\" or a rank position 0–{BJ}; "
                    f"got {top!r}", top_field)
    if star is not None and not (type(star) is int and 0 <= star <= MAX_STAR):
        raise error(f"{star_field} must be a star 0–{MAX_STAR}; got {star!r}", star_field)
    if wilds is None:
        return
    if not isinstance(wilds, (list, tuple)) or len(wilds) > MAX_WILDS:
        raise error(f"{wilds_field} must be a list of at most {MAX_WILDS} ranks such as "
                    f"[\"9\"]; got {wilds!r}", wilds_field)
    for i, w in enumerate(wilds):
        if not _rank_form(w):
            raise error(f"{wilds_field}[{i}] must be a rank such as \"9\" or a rank position "
                        f"0–{BJ}; got {w!r}", f"{wilds_field}[{i}]")
