"""Frozen records returned by the rules core's calls (built by the compiled ``_core``)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import ItemsView, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from .errors import ShuangkouError

if TYPE_CHECKING:   # _core imports this module: only the type checker may look back
    from ._core import Reading

__all__ = ["Comparison", "BatchResult", "BatchErrors", "BATCH_COLUMNS"]


@dataclass(frozen=True)
class Comparison:
    """The outcome of :func:`shuangkou.core.compare`: does ``play`` beat ``current``?

    ``current`` is the reading standing on the table; ``play`` is the reading of the new
    play that would stand if it beats (§7 rule 6), else its declared or primary reading.
    """

    beats: bool
    current: Reading
    play: Reading


class InvalidPlays(Protocol):
    """What builds a batch's errors (the compiled ``_core``'s batch pass): by position among
    the invalid plays, and grouped."""

    def __call__(self, k: int) -> ShuangkouError: ...

    def grouped(self) -> tuple[Sequence[int], list[ShuangkouError]]: ...


class BatchErrors(Mapping[int, ShuangkouError]):
    """The invalid plays of a batch: play index -> the exception ``classify`` raises for it.

    The batch pass only marks which plays are invalid, so an invalid play costs what a
    valid one does; each exception is built from the batch's own copy of the play when it
    is first looked up, and kept. Iteration is in index order.
    """

    __slots__ = ("_indexes", "_build", "_built")

    def __init__(self, indexes: Sequence[int],
                 build: InvalidPlays | None = None) -> None:
        self._indexes = indexes          # ascending
        self._build = build              # position in ``indexes`` -> its exception
        self._built: dict[int, ShuangkouError] = {}

    def _position(self, index: object) -> int:
        if not isinstance(index, int):
            return -1
        k = bisect_left(self._indexes, index)
        return k if k < len(self._indexes) and self._indexes[k] == index else -1

    def __getitem__(self, index: int) -> ShuangkouError:
        k = self._position(index)
        if k < 0 or self._build is None:
            raise KeyError(index)
        exc = self._built.get(k)
        if exc is None:
            exc = self._built[k] = self._build(k)
        return exc

    def __contains__(self, index: object) -> bool:
        return self._position(index) >= 0

    def __iter__(self) -> Iterator[int]:
        return iter(self._indexes)

    def items(self) -> ItemsView[int, ShuangkouError]:
        return _BatchItems(self)

    def _pairs(self) -> Iterator[tuple[int, ShuangkouError]]:
        """(index, exception) in index order, each built once (by position: no search)."""
        built, build = self._built, self._build
        for k, index in enumerate(self._indexes):
            exc = built.get(k)
            if exc is None:
                if build is None:
                    raise KeyError(index)
                exc = built[k] = build(k)
            yield index, exc

    def __len__(self) -> int:
        return len(self._indexes)

    def __repr__(self) -> str:
        return f"<BatchErrors: {len(self)} invalid plays>"

    @property
    def indexes(self) -> Sequence[int]:
        """The invalid plays' indexes, ascending (an ``array`` from the batch pass)."""
        return self._indexes

    def grouped(self) -> tuple[Sequence[int], list[ShuangkouError]]:
        """The invalid plays grouped by their exception, without building one per play:
        ``(groups, exceptions)``, where the play at ``indexes[k]`` raises an exception equal
        (type, message, field) to ``exceptions[groups[k]]``. The exceptions are new objects
        (not those ``self[index]`` returns), so a caller may change their ``field``."""
        if self._build is None:
            return array("I"), []
        return self._build.grouped()


class _BatchItems(ItemsView[int, ShuangkouError]):
    """A BatchErrors' items view, iterated by position."""

    _mapping: BatchErrors

    def __iter__(self) -> Iterator[tuple[int, ShuangkouError]]:
        return self._mapping._pairs()


#: Column names of a :class:`BatchResult`, in order.
BATCH_COLUMNS = ("kind", "top", "star", "cards", "readings")


@dataclass(frozen=True, eq=False)
class BatchResult(Mapping[str, "array[int]"]):
    """What :func:`shuangkou.core.classify_batch` found, one entry per play, as columns.

    ``kind`` is an index into :data:`shuangkou.core.KINDS` (255 = no reading or impossible
    cards); ``top``, ``star`` and ``cards`` describe the primary reading; ``readings``
    counts the readings. ``errors`` (:class:`BatchErrors`) maps the index of every invalid
    play to the exception :func:`shuangkou.core.classify` raises for it.

    It is also a read-only mapping of column name to column (``result["kind"]``), the
    shape ``classify_batch`` returned before it reported errors.
    """

    kind: array[int]
    top: array[int]
    star: array[int]
    cards: array[int]
    readings: array[int]
    errors: BatchErrors

    def __getitem__(self, column: str) -> array[int]:
        if column not in BATCH_COLUMNS:
            raise KeyError(column)
        value: array[int] = getattr(self, column)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(BATCH_COLUMNS)

    def __len__(self) -> int:
        return len(BATCH_COLUMNS)

    @property
    def plays(self) -> int:
        """How many plays the batch held."""
        return len(self.kind)

    @property
    def valid(self) -> int:
        """How many plays have a reading."""
        return len(self.kind) - len(self.errors)
