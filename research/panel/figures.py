"""The 95 % intervals the measurements print: Wilson's for a share of rounds, the normal
one for a mean over deals."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

__all__ = ["wilson", "interval"]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of the share ``k`` of ``n`` ((0, 1) for none)."""
    if not n:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def interval(xs: Sequence[float]) -> tuple[float, float]:
    """Mean and the half-width of its normal 95 % interval."""
    mean = statistics.fmean(xs)
    return mean, (1.96 * statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else 0.0)
