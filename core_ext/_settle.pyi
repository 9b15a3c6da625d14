"""Typed stubs of the compiled settlement (core_ext/_settle.pyx); the public entry points
are shuangkou.core.scoring.score_round / settle / round_star."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from typing_extensions import disjoint_base

from ._core import Reading
from .variants import Variant

ROUND_ENDS: Mapping[str, int]
MULTIPLIER_STARS: Mapping[str, int]
CONTRIBUTION_MODES: Mapping[str, int]
CONTRIBUTION_RECIPIENTS: Mapping[str, int]
KINDS_OF_WIN: tuple[str, str, str]

_R = TypeVar("_R")

@disjoint_base
class Tables:
    @property
    def variant(self) -> Variant: ...
    def __init__(self, v: Variant) -> None: ...

def tables(v: Variant) -> Tables: ...
def bind_records(star_source: type, seat_result: type, contribution_event: type,
                 check_fits: Callable[..., None]) -> None: ...
def round_star(bombs: Sequence[Reading], v: Variant) -> tuple[int, Any]: ...
def round_stars(played: Sequence[Sequence[Reading]], v: Variant) -> list[tuple[int, Any]]: ...
def settle(v: Variant, order: tuple[int, ...], played: Sequence[Sequence[Reading]], stake: int,
           cards_left: Sequence[int] | None, escaper: int | None,
           hands: Sequence[Sequence[int]] | None, table_fee: int, result_type: type[_R],
           escape_settle: Callable[..., Any], extra: dict[str, Any]) -> _R: ...
