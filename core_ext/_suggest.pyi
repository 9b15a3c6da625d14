"""Typed stubs of the compiled 托管 rule policy (core_ext/_suggest.pyx); the public entry
points are shuangkou.core.suggest.decide / suggest / suggestions."""

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import Final

from ._core import Reading
from ._core import _CardsLike as CardsLike
from ._core import _VariantLike as VariantLike
from ._round import RoundCore
from .rollouts import Proposal

POLICY_CONSTANTS: Final[Mapping[str, int]]

class Reason(IntEnum):
    """Why the policy proposes an action (_suggest.pxd; suggest.REASON_TABLE words each)."""

    R_OUT = 0
    R_PARTNER = 1
    R_LAST_TWO = 2
    R_SAFE = 3
    R_LEAD_BOMB = 4
    R_HIGH_SINGLE = 5
    R_FEED = 6
    R_SHED = 7
    R_ONLY_BOMBS = 8
    R_CHEAP = 9
    R_NOTHING = 10
    R_BOMB_DANGER = 11
    R_BOMB_OUT = 12
    R_BOMB_PAYS = 13
    R_KEEP = 14
    R_ALT_KIND = 15
    R_ALT_HIGH = 16
    R_ALT_BOMB = 17
    R_ALT_PASS = 18
    R_ALT_NEXT = 19
    NREASONS = 20

def style_rules() -> list[tuple[bool, int, int, int]]: ...
def choose(variant: VariantLike, seat: int, hand: CardsLike, sizes: Sequence[int],
           standing: tuple[int, Reading] | None = None, *, seed: int | None = None,
           star: int = 0, winning: bool = False, played: Sequence[Reading] = (),
           count: int = 1, diverse: bool = False,
           timeout: float | None = None) -> list[Proposal]: ...
def choose_in(r: RoundCore, *, seed: int | None = None, count: int = 1, diverse: bool = False,
              timeout: float | None = None) -> list[Proposal]: ...
