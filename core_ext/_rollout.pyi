"""Typed stubs of the compiled rollout engine (core_ext/_rollout.pyx): its engine class is
C-level only; its drivers are core_ext/_search.pyx's."""

from typing import Final

from typing_extensions import disjoint_base

from ._core import _VariantLike as VariantLike

#: Seconds between two looks at a driver's ``cancelled`` while deals run.
CHECK_EVERY: Final[float]
#: The largest exact endgame (cards in play) a caller may ask for.
MAX_EXACT: Final[int]
#: The most decoys a fair-play view may have.
MAX_DECOYS: Final[int]
#: The seat mask of the view that sees every hand (the true deal).
ALL_SEATS: Final[int]

def win_bonus(variant: VariantLike) -> float: ...

@disjoint_base
class Engine:
    """C-level only: the rollouts of one decision (opened by the drivers)."""
