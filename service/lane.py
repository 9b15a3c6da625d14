"""The lane for expensive work: the searches (SuggestAction with a ``search`` budget) and the
reviews (ReviewRound) run on threads of their own, as many as the cores this process may
use, so that they never hold the handler threads every other call needs, nor more cores
than there are.

A lane call is admitted by what it is expected to cost (:mod:`shuangkou.service.costs`):
the lane holds at most ``max_cost`` expected CPU-seconds of calls, running and waiting, and
at most ``max_calls`` calls — each holds the handler thread it came in on while it waits for
its answer, so this bound is what keeps handler threads free for every other call (a lane
that is empty admits any one call, whatever it costs: the caps on one call's cost bound it).
A call past either bound is refused at once with ``RESOURCE_EXHAUSTED`` (reason
``LANE_FULL``, the bound named), never queued behind the work it would add to.

The handler thread waits for its call's answer with the call's deadline and cancellation
honoured: a client that hangs up, or whose deadline passes, frees its place at once if its
work has not started, and stops its work within a deal if it has (the ``cancelled``
callable the core takes). Both ports' calls come through here: the servicers are the same.

Every refusal is counted in ``shuangkou_requests_rejected_total`` by reason (:data:`REASONS`,
the lane's and the caps'), the lane's queue in the ``shuangkou_lane_*`` series.
"""

from __future__ import annotations

import contextvars
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import grpc

from .errors import OverCap, Refused, RequestEnded, ended

if TYPE_CHECKING:
    from .config import Config
    from .metrics import Metrics

__all__ = ["Lane", "LANE_METHODS", "REVIEW_ROUND", "SUGGEST_ACTION", "REASONS", "usable_cores",
           "cgroup_cpus", "lane_threads"]

T = TypeVar("T")

#: The methods whose work runs in the lane (a SuggestAction only with a search budget).
REVIEW_ROUND = "/shuangkou.v1.ShuangkouService/ReviewRound"
SUGGEST_ACTION = "/shuangkou.v1.RoundService/SuggestAction"
LANE_METHODS = (REVIEW_ROUND, SUGGEST_ACTION)
#: The refusals of the lane and of the caps on one call's cost, by the ``ErrorInfo.reason``
#: of the error -> the ``reason`` label of ``shuangkou_requests_rejected_total``.
REASONS = {"LANE_FULL": "lane_full", "OVER_CAP": "over_cap", "CAP_REACHED": "cap_reached"}
#: How often a handler thread waiting for its call's answer looks whether the call is still
#: wanted: a client that hangs up frees its place within this.
POLL_SECONDS = 0.02


# ----------------------------------------------------------------------------- sizing

def cgroup_cpus(root: Path = Path("/sys/fs/cgroup"),
                membership: Path = Path("/proc/self/cgroup")) -> float | None:
    """The CPUs the cgroup CPU quota gives this process (a container's CPU limit), or None
    without one. cgroup v2 (``cpu.max``, "max" or "<quota> <period>") and v1
    (``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``, -1: none); the process's own cgroup and
    every one above it as far as they are visible, the smallest quota winning."""
    try:
        lines = membership.read_text().splitlines()
    except OSError:
        return None
    found: list[float] = []
    for line in lines:
        _, controllers, path = line.split(":", 2) if line.count(":") >= 2 else ("", "-", "")
        if controllers == "":                               # v2: one hierarchy
            for d in _ancestors(root, path):
                fields = _read(d / "cpu.max").split()
                if len(fields) == 2 and fields[0].isdigit() and fields[1].isdigit() \
                        and int(fields[1]) > 0:
                    found.append(int(fields[0]) / int(fields[1]))
        elif "cpu" in controllers.split(","):               # v1: the cpu controller's
            for mount in (root / controllers, root / "cpu"):
                for d in _ancestors(mount, path):
                    quota, period = _read(d / "cpu.cfs_quota_us"), _read(d / "cpu.cfs_period_us")
                    if quota.isdigit() and int(quota) > 0 and period.isdigit() \
                            and int(period) > 0:
                        found.append(int(quota) / int(period))
    return min(found) if found else None


def _ancestors(base: Path, path: str) -> Iterator[Path]:
    """``base/path`` and each folder above it up to ``base``, those that exist (inside a
    container the cgroup's path is often not visible under its own mount, its root is)."""
    parts = [p for p in path.split("/") if p]
    for n in range(len(parts), -1, -1):
        d = base.joinpath(*parts[:n])
        if d.is_dir():
            yield d


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except (OSError, ValueError):
        return ""


def usable_cores() -> float:
    """The cores this process may use: its CPU affinity, bounded by the cgroup quota."""
    cores: float = len(os.sched_getaffinity(0))
    quota = cgroup_cpus()
    return min(cores, quota) if quota else cores


def lane_threads(config: Config) -> int:
    """The lane's threads: ``lane_threads``, or (0) the whole cores this process may use,
    shared among the ``workers`` processes; at least one."""
    if config.lane_threads:
        return config.lane_threads
    return max(1, math.floor(usable_cores()) // config.workers)


# ----------------------------------------------------------------------------- the lane

class Lane:
    """The bounded executor of one server process's expensive calls (module doc).

    ``threads`` run the work; ``max_calls`` calls at most, running and waiting; ``max_cost``
    expected CPU-seconds at most (``backlog`` seconds for each thread, for the messages);
    ``metrics``: where its queue and refusals are counted (None: not counted)."""

    def __init__(self, threads: int, max_calls: int, backlog: float,
                 metrics: Metrics | None = None) -> None:
        self.threads, self.max_calls, self.backlog = threads, max_calls, backlog
        self.max_cost = backlog * threads
        self._pool = futures.ThreadPoolExecutor(threads, thread_name_prefix="lane")
        self._lock = threading.Lock()
        self.cost = 0.0          # expected CPU-seconds of the calls in the lane
        self.calls = 0           # calls in the lane, running and waiting
        self.running = 0
        self._m = metrics
        if metrics is not None:
            metrics.lane_threads.set(threads)
            metrics.lane_max_calls.set(max_calls)
            metrics.lane_max_cost.set(self.max_cost)
            self._gauges = (metrics.lane_cost, metrics.lane_calls.labels("running"),
                            metrics.lane_calls.labels("waiting"))
            self._update()

    @classmethod
    def of(cls, config: Config, metrics: Metrics | None = None) -> Lane:
        return cls(lane_threads(config), config.lane_call_cap, config.lane_backlog, metrics)

    def run(self, method: str, context: grpc.ServicerContext, cost: Callable[[], float],
            work: Callable[[], T]) -> T:
        """``work()``'s answer, run in the lane for the call ``method``
        (``/service/Method``) of ``context``: ``cost()`` is its expected CPU-seconds (it
        may refuse the call, :class:`~shuangkou.service.errors.OverCap`). Raises
        :class:`~shuangkou.service.errors.Refused` (``LANE_FULL``) past the lane's bounds,
        :class:`~shuangkou.service.errors.RequestEnded` when the call ended while it
        waited, and whatever ``work`` raised; each refusal counted."""
        with self.counted(method):
            expected = cost()
            self._admit(expected)
            return self._wait(method, context, expected, work)

    def _admit(self, cost: float) -> None:
        with self._lock:
            if self.calls >= self.max_calls:
                raise Refused(f"the lane for searches and reviews holds its limit of "
                              f"{self.max_calls} calls (lane_max_calls); retry with backoff",
                              "LANE_FULL", "lane_max_calls", self.max_calls)
            if self.calls and self.cost + cost > self.max_cost:
                raise Refused(
                    f"the lane for searches and reviews holds {self.cost:,.1f} expected "
                    f"CPU-seconds of its {self.max_cost:,.0f} (lane_backlog {self.backlog:g} s "
                    f"x {self.threads} lane threads); this call's {cost:,.2f} would pass "
                    "them: retry with backoff", "LANE_FULL", "lane_backlog", self.backlog)
            self.calls += 1
            self.cost += cost
            self._update()

    def _wait(self, method: str, context: grpc.ServicerContext, cost: float,
              work: Callable[[], T]) -> T:
        queued = time.monotonic()
        # the work runs in the call's context (its trace span is the call's span's child)
        future = self._pool.submit(contextvars.copy_context().run, self._work, method, cost,
                                   queued, work)
        future.add_done_callback(lambda _: self._leave(cost))   # ran, failed or cancelled
        while True:
            done, _ = futures.wait((future,), timeout=POLL_SECONDS)
            if done:
                return future.result()
            if not context.is_active():
                # not started: its place is free now; started: `cancelled` stops it
                future.cancel()
                raise ended(context) or RequestEnded(grpc.StatusCode.CANCELLED)

    def _work(self, method: str, cost: float, queued: float, work: Callable[[], T]) -> T:
        """On a lane thread: ``work()``, its wait and CPU time counted."""
        with self._lock:
            self.running += 1
            self._update()
        m = self._m
        if m is not None:
            m.lane_wait.labels(method.rpartition("/")[2]).observe(time.monotonic() - queued)
        t0 = time.thread_time()
        try:
            return work()
        finally:
            with self._lock:
                self.running -= 1
                self._update()
            if m is not None:
                name = method.rpartition("/")[2]
                m.lane_cpu.labels(name).inc(time.thread_time() - t0)
                m.lane_expected.labels(name).inc(cost)

    def _leave(self, cost: float) -> None:
        with self._lock:
            self.calls -= 1
            self.cost = max(0.0, self.cost - cost) if self.calls else 0.0
            self._update()

    def _update(self) -> None:
        """The queue's gauges (under the lock)."""
        if self._m is not None:
            queued, running, waiting = self._gauges
            queued.set(self.cost)
            running.set(self.running)
            waiting.set(self.calls - self.running)

    def count(self, method: str, reason: str) -> None:
        """One refusal of ``method`` (``/service/Method``) for ``reason`` (a value of
        :data:`REASONS`), in ``shuangkou_requests_rejected_total``."""
        if self._m is not None:
            service, _, name = method.lstrip("/").rpartition("/")
            self._m.rejected.labels("unary", service, name, reason).inc()

    @contextmanager
    def counted(self, method: str) -> Iterator[None]:
        """Count the refusals of the lane and of the caps raised inside, by reason (a
        SuggestAction's budget is checked against the caps before it is known to search)."""
        try:
            yield
        except (OverCap, Refused) as exc:
            self.count(method, REASONS[exc.reason])
            raise

    def shutdown(self) -> None:
        """Stop: calls not started are dropped (their handlers were stopped first)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
