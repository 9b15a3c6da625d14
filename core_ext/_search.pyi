"""Typed stubs of the rollout engine's drivers (core_ext/_search.pyx); the public entry
points are shuangkou.core.suggest.suggest / suggestions with a Budget, and
shuangkou.core.review.review."""

from collections.abc import Callable, Sequence
from typing import Final

from ._core import Reading
from ._core import _VariantLike as VariantLike
from ._round import RoundCore
from .rollouts import Evaluation, SelfPlay

MAX_WIDTH: Final[int]
MAX_ROLLOUTS: Final[int]
WIDE_VIEWS: Final[tuple[str, ...]]
FAIR_VIEWS: Final[tuple[str, ...]]
CONTEXTS: Final[tuple[str, ...]]
OUTCOMES: Final[tuple[str, ...]]
READ_FLOOR: Final[float]

def search(root: RoundCore, *, rollouts: int = 0, ms: float = 0.0, seed: int | None = None,
           width: int = 6, timeout: float | None = None, win: float | None = None,
           cancelled: Callable[[], bool] | None = None, model: str = "rule", exact: int = 0,
           infer: bool = False, race: bool = False,
           read: Sequence[Sequence[float]] | None = None,
           partner_bomb: bool = True, sees: Sequence[int] = ()) -> Evaluation: ...
def evaluate(root: RoundCore,
             taken: tuple[Sequence[int], Reading | None, bool] | None = None, *,
             rollouts: int = 0, ms: float = 0.0, seed: int | None = None, width: int = 6,
             timeout: float | None = None, cancelled: Callable[[], bool] | None = None,
             model: str = "mix", exact: int = 0, wide: str | None = None,
             win: float | None = None, race: bool = False, decoys: int = 0,
             fair_deals: int = 0,
             fair_views: Sequence[str] = ("partner", "all")) -> Evaluation: ...
def selfplay(variant: VariantLike, rounds: int, policy: str = "rule", seed: int = 0,
             timeout: float | None = None) -> SelfPlay: ...

#: what a seat did in what it followed: a tally's [context][outcome]
_Tally = Sequence[Sequence[int]]

def action_context(r: RoundCore) -> int: ...
def action_outcome(r: RoundCore, seat: int, before: int) -> int: ...
def style_counts(variant: VariantLike, rounds: int, seed: int = 0) -> list[list[list[int]]]: ...
def log_rates(counts: Sequence[_Tally]) -> list[list[list[float]]]: ...
def read_weights(seen: Sequence[_Tally], rates: Sequence[Sequence[Sequence[float]]],
                 model: str = "mix") -> tuple[tuple[float, ...], ...]: ...
