"""How a player names the reading a play is meant as (RULES.md §7 rule 4)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Declaration"]


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
