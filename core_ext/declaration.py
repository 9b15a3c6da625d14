"""How a player names the reading a play is meant as (RULES.md §7 rule 4)."""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Declaration"]


class Declaration(NamedTuple):
    """A declared reading: its ``kind`` and, to tell readings of one kind apart, its ``top``
    (rank position or name) and ``star``. Unset parts match any reading."""

    kind: str
    top: int | str | None = None
    star: int | None = None
