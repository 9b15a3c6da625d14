"""Typed stubs of the compiled 托管 search (core_ext/_search.pyx); the public entry points
are shuangkou.core.suggest.suggest / suggestions with a Budget."""

from collections.abc import Callable, Sequence
from typing import Any, Final

from ._core import Reading
from ._core import _VariantLike as VariantLike
from ._round import RoundCore

MAX_WIDTH: Final[int]
MAX_ROLLOUTS: Final[int]
MAX_EXACT: Final[int]
MODELS: Final[tuple[str, ...]]
CONTEXTS: Final[tuple[str, ...]]
OUTCOMES: Final[tuple[str, ...]]
READ_FLOOR: Final[float]

#: (cards, reading, declared, reason, danger, points, wins, se, deals)
_Ranked = tuple[tuple[int, ...], Reading | None, bool, int, int, float, float, float, int]

def search(root: RoundCore, *, rollouts: int = 0, ms: float = 0.0, seed: int | None = None,
           width: int = 6, count: int = 1, timeout: float | None = None,
           win: float | None = None, cancelled: Callable[[], bool] | None = None,
           model: str = "rule", exact: int = 0, infer: bool = False,
           race: bool = False, margin: float = 1.0,
           read: Sequence[Sequence[float]] | None = None, partner_bomb: bool = True,
           ) -> tuple[list[_Ranked], dict[str, Any]]: ...
def selfplay(variant: VariantLike, rounds: int, policy: str = "rule", seed: int = 0,
             timeout: float | None = None) -> tuple[int, int, int, float]: ...

#: what a seat did in what it followed: a tally's [context][outcome]
_Tally = Sequence[Sequence[int]]

def action_context(r: RoundCore) -> int: ...
def action_outcome(r: RoundCore, seat: int, before: int) -> int: ...
def style_counts(variant: VariantLike, rounds: int, seed: int = 0) -> list[list[list[int]]]: ...
def log_rates(counts: Sequence[_Tally]) -> list[list[list[float]]]: ...
def read_weights(seen: Sequence[_Tally], rates: Sequence[Sequence[Sequence[float]]],
                 model: str = "mix") -> tuple[tuple[float, ...], ...]: ...

#: (cards, reading, declared, reason, hint_rank, points, first, true_points, true_first)
_Evaluated = tuple[tuple[int, ...], Reading | None, bool, int, int, float | None,
                   float | None, float | None, float | None]

def evaluate(root: RoundCore,
             taken: tuple[Sequence[int], Reading | None, bool] | None = None, *,
             rollouts: int = 0, ms: float = 0.0, seed: int | None = None, width: int = 6,
             timeout: float | None = None, cancelled: Callable[[], bool] | None = None,
             model: str = "mix", exact: int = 0, oracle: bool = False,
             win: float | None = None) -> tuple[list[_Evaluated], dict[str, Any]]: ...
