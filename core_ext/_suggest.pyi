"""Typed stubs of the compiled 托管 rule policy (core_ext/_suggest.pyx); the public entry
points are shuangkou.core.suggest.decide / suggest / suggestions."""

from collections.abc import Mapping, Sequence
from typing import Final

from ._core import Reading
from ._core import _CardsLike as CardsLike
from ._core import _VariantLike as VariantLike
from ._round import RoundCore

POLICY_CONSTANTS: Final[Mapping[str, int]]

#: (cards, reading, declared, reason, danger): a pass has cards () and reading None.
_Row = tuple[tuple[int, ...], Reading | None, bool, int, int]

def choose(variant: VariantLike, seat: int, hand: CardsLike, sizes: Sequence[int],
           standing: tuple[int, Reading] | None = None, *, seed: int | None = None,
           star: int = 0, winning: bool = False, played: Sequence[Reading] = (),
           count: int = 1, diverse: bool = False,
           timeout: float | None = None) -> list[_Row]: ...
def choose_in(r: RoundCore, *, seed: int | None = None, count: int = 1, diverse: bool = False,
              timeout: float | None = None) -> list[_Row]: ...
