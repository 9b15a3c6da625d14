"""Typed stubs of the compiled legal-play enumerator (core_ext/_enumerate.pyx).

See docs/enumeration.md for what counts as a distinct play, the order and the filters.
"""

from collections.abc import Iterable, Iterator
from typing import Any, Literal, overload

from typing_extensions import disjoint_base

from ._core import Classification, Reading, _CardsLike, _KindName, _VariantLike

__all__ = ["LegalPlays", "Play", "best_bomb", "count_plays", "legal_plays"]

@disjoint_base
class Play:
    """One legal play: the card codes to play (taken from the hand) and its reading.

    ``cards``: codes from the hand, the lowest codes of each rank first, in rank order (a
    server can play them as they are). ``reading``: the reading the play is listed with —
    leading, the strongest of its type (of all its bomb readings for a bomb); following,
    the strongest of its type that beats. A ``(cards, reading)`` pair: it unpacks, indexes,
    hashes and compares as that tuple; taken from a LegalPlays it is a view of its entry
    there, its parts built on first access.
    """

    def __init__(self, cards: Iterable[int], reading: Reading) -> None: ...
    @property
    def cards(self) -> tuple[int, ...]:
        """The card codes to play."""

    @property
    def reading(self) -> Reading:
        """The reading the play is listed with."""

    @property
    def kind(self) -> _KindName:
        """The reading's type name."""

    @property
    def text(self) -> tuple[str, ...]:
        """The cards as text tokens, e.g. ``("7S", "7H", "BJ")``."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: Literal[0], /) -> tuple[int, ...]: ...
    @overload
    def __getitem__(self, index: Literal[1], /) -> Reading: ...
    @overload
    def __getitem__(self, index: int | slice, /) -> Any: ...
    def __iter__(self) -> Iterator[Any]: ...
    def __hash__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __ne__(self, other: object, /) -> bool: ...
    def __lt__(self, other: Play | tuple[Any, ...], /) -> bool: ...
    def __le__(self, other: Play | tuple[Any, ...], /) -> bool: ...
    def __gt__(self, other: Play | tuple[Any, ...], /) -> bool: ...
    def __ge__(self, other: Play | tuple[Any, ...], /) -> bool: ...
    def __reduce__(self) -> tuple[type[Play], tuple[tuple[int, ...], Reading]]: ...

_PlayToBeat = _CardsLike | Reading | Classification | Play

@disjoint_base
class LegalPlays:
    """The legal plays of a hand in the documented order: a read-only sequence of Play.

    Plays are held in C and become :class:`Play` objects when indexed or iterated.
    """

    @property
    def truncated(self) -> bool:
        """``limit`` cut the list (more plays exist)."""

    @property
    def can_pass(self) -> bool:
        """True when following: passing is always allowed then (it is not listed)."""

    @property
    def to_beat(self) -> Reading | None:
        """The reading standing on the table (None when leading)."""

    @property
    def hand(self) -> tuple[int, ...]:
        """The hand's card codes, sorted."""

    @property
    def variant(self) -> str:
        """The variant id."""

    def __len__(self) -> int: ...
    @overload
    def __getitem__(self, index: int, /) -> Play: ...
    @overload
    def __getitem__(self, index: slice, /) -> list[Play]: ...
    def __iter__(self) -> Iterator[Play]: ...
    def __contains__(self, play: object, /) -> bool: ...
    def count(self, kind: _KindName | None = None) -> int:
        """Number of plays listed (of one type when ``kind`` is given)."""

    def by_kind(self) -> dict[str, int]:
        """Plays listed per type: ``{kind: count}`` for every kind, in KINDS order."""

def legal_plays(hand: _CardsLike, variant: _VariantLike, to_beat: _PlayToBeat | None = None, *,
                kinds: Iterable[_KindName] | _KindName | None = None, bombs_only: bool = False,
                max_cards: int | None = None, limit: int | None = None,
                timeout: float | None = None) -> LegalPlays:
    """Every legal play from ``hand`` under ``variant`` (§7, §8), each exactly once.

    Leading (``to_beat`` None): every distinct play — a multiset of the hand's card faces
    listed once per ordinary type among its readings and once for all its bomb readings.
    Following: exactly the plays that beat ``to_beat`` (cards, whose primary reading
    stands; or a Reading, or a Play: its reading), each with the strongest reading of its type that beats.
    Order: ordinary types in KINDS order, then bombs; weakest first; ties by cards.
    ``kinds``/``bombs_only``/``max_cards`` filter (a play's type is its listed reading's);
    ``limit`` caps the number returned and bounds the work (``truncated`` says it cut).
    ``timeout`` (seconds) bounds the time: past it the work stops and nothing is returned.

    :raises CardError: the hand is malformed or impossible in the deck (field ``hand``).
    :raises InvalidPlay: ``to_beat`` forms no play (field ``to_beat``), or an unknown type
        in ``kinds`` (or ``kinds`` is no collection of names).
    :raises VariantError: unknown variant, or a ``to_beat`` Reading of another variant.
    :raises ShuangkouError: ``limit`` or ``max_cards`` is not a non-negative integer.
    :raises DeadlineExceeded: the ``timeout`` ran out.
    """

def count_plays(hand: _CardsLike, variant: _VariantLike,
                to_beat: _PlayToBeat | None = None, *,
                timeout: float | None = None) -> dict[str, int]:
    """Legal plays per type, ``{kind: count}`` for every kind in KINDS order — what
    :func:`legal_plays` would list, without building the plays."""

def best_bomb(hand: _CardsLike, variant: _VariantLike, *,
              timeout: float | None = None) -> Reading | None:
    """The strongest bomb the hand can play by the variant's §8 key, or None; among equally
    strong bombs the one :func:`legal_plays` lists first."""
