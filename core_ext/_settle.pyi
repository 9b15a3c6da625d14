"""Typed stubs of the compiled settlement (core_ext/_settle.pyx); the public entry points
are shuangkou.core.scoring.score_round / settle / round_star."""

from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar, overload

from typing_extensions import disjoint_base

from ._core import Reading
from ._round import RoundCore
from .results import StarSource
from .variants import Variant

MAX_STAKE: Final[int]
MAX_TABLE_FEE: Final[int]
INT64_MAX: Final[int]
MULTIPLIER_STARS: Mapping[str, int]
CONTRIBUTION_MODES: Mapping[str, int]
CONTRIBUTION_RECIPIENTS: Mapping[str, int]
ESCAPES: Mapping[str, int]
KEPT_ON_ESCAPE: frozenset[str]
ESCAPE_AMOUNTS: Mapping[str, Mapping[str, int]]
KINDS_OF_WIN: tuple[str, str, str]   # variants.KINDS_OF_WIN
# the branches of variant fields, numbered as variants.py lists their values (cpdef enums)
STAR_WINNING_TEAM: int
STAR_ALL: int
STAR_WINNER: int
MODE_PER_BOMB: int
MODE_ROUND_STAR: int
TO_PLAYER: int
TO_TEAM: int
ESCAPE_NONE: int
ESCAPE_BIANFENG: int
ESCAPE_FENGKUANG: int
ESCAPE_QIANBIAN: int
ESCAPE_HUOPIN: int
WIN_DOUBLE: int
WIN_SINGLE: int
WIN_FLAT: int

_R = TypeVar("_R")

@disjoint_base
class Tables:
    @property
    def variant(self) -> Variant: ...
    def __init__(self, v: Variant) -> None: ...

def tables(v: Variant) -> Tables: ...
def round_star(bombs: Sequence[Reading], v: Variant) -> tuple[int, StarSource]: ...
@overload
def settle(v: Variant, order: tuple[int, ...], played: Sequence[Sequence[Reading]], stake: int,
           cards_left: Sequence[int] | None, escaper: int | None,
           hands: Sequence[Sequence[int]] | None, table_fee: int, result_type: type[_R],
           extra: dict[str, Any]) -> _R: ...
@overload
def settle(v: Variant, order: tuple[int, ...], played: Sequence[Sequence[Reading]], stake: int,
           cards_left: Sequence[int] | None, escaper: int | None,
           hands: Sequence[Sequence[int]] | None, table_fee: int, result_type: None,
           extra: dict[str, Any]) -> str: ...
@overload
def settle_round(r: RoundCore, result_type: type[_R], extra: dict[str, Any]) -> _R: ...
@overload
def settle_round(r: RoundCore, result_type: None, extra: dict[str, Any]) -> str: ...
