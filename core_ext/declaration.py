"""How a player names the reading a play is meant as (RULES.md §7 rule 4)."""

from __future__ import annotations

from typing import Any, NamedTuple

from .errors import ShuangkouError

__all__ = ["Declaration", "declaration_of"]


class Declaration(NamedTuple):
    """A declared reading. ``kind`` names the type; the other parts, when set, narrow the
    choice among readings of that type (unset parts match any reading):

    * ``top``: the top rank (position 0–14 or a name such as ``"9"``, ``"SJ"``); for chains,
      the last rank in chain order (``K A 2 3`` has top ``3``, see docs/decisions.md);
    * ``star``: the bomb's star;
    * ``wilds``: the ranks the wild jokers stand for, in any order (``()`` = no wilds).

    Kind, top and star tell most readings apart, but some chain bombs share all three
    (huopin ``9999 TTTTT JJJJJJ QQQQQQ KKKKKK`` vs ``9999 TTTTTT JJJJJ QQQQQQ KKKKKK``, both
    9 stars, top K); the wild placement names every reading (docs/decisions.md).
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
    if top is not None and not (type(top) is str and len(top) <= 2) \
            and not (type(top) is int and 0 <= top <= 14):
        raise ShuangkouError(f"declare_top must be a rank such as \"9\" or a rank position "
                             f"0–14; got {top!r}", "declare_top")
    if star is not None and not (type(star) is int and 0 <= star <= 255):
        raise ShuangkouError(f"declare_star must be a star 0–255; got {star!r}", "declare_star")
    if wilds is not None and not (type(wilds) is list and len(wilds) <= 8
                                  and all(type(w) in (str, int) for w in wilds)):
        raise ShuangkouError(f"declare_wilds must be a list of at most 8 ranks such as [\"9\"]; "
                             f"got {wilds!r}", "declare_wilds")
    return Declaration(kind, top, star, None if wilds is None else tuple(wilds))
