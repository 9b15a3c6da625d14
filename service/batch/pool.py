"""THE process pool of the batch scorer: tasks run on forked worker processes, results in
task order, a bounded number of tasks in flight (memory stays flat on huge inputs)."""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.pool import AsyncResult
from typing import Any, TypeVar

__all__ = ["run", "WINDOW_PER_JOB"]

T = TypeVar("T")
WINDOW_PER_JOB = 4           # tasks in flight per worker process

Task = tuple[Callable[..., T], tuple[Any, ...]]


def run(tasks: Iterable[Task[T]], jobs: int) -> Iterator[T]:
    """``fn(*args)`` of every ``(fn, args)`` task, in task order, on ``jobs`` processes
    (``jobs <= 1``: in this process). ``tasks`` is read lazily, at most
    ``jobs * WINDOW_PER_JOB`` ahead of the results taken."""
    if jobs <= 1:
        for fn, args in tasks:
            yield fn(*args)
        return
    import multiprocessing

    from shuangkou import core  # noqa: F401 - imported once here, inherited by the forked workers

    with multiprocessing.Pool(jobs) as pool:
        pending: collections.deque[AsyncResult[T]] = collections.deque()
        for fn, args in tasks:
            pending.append(pool.apply_async(fn, args))
            if len(pending) >= jobs * WINDOW_PER_JOB:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
