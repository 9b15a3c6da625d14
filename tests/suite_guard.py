"""A test that blocks forever fails the run, with every thread's stack, instead of hanging it.

Two layers, both armed for every test (``pytest_plugins`` in conftest.py):

* pytest-timeout with ``timeout_method = "thread"`` (pyproject): at the test's ``timeout``
  a timer thread prints every thread's stack and ends the process. The ``signal`` method
  cannot do this when the main thread waits inside C (a futex under grpc's C core, a lock
  acquired without a timeout): the Python handler of SIGALRM only runs between bytecodes
  of the main thread. The thread method needs only the GIL to be free, which a C call that
  blocks normally releases.
* A backstop for a C call that blocks while holding the GIL (no Python thread runs then,
  pytest-timeout's timer included): :func:`faulthandler.dump_traceback_later`, whose
  watchdog is a C thread, dumps every thread's stack and exits ``guard_grace`` seconds after
  the timeout. Its output goes to a copy of the stderr the run started with, since the
  test's own stderr is captured (and lost when the process exits).
"""

from __future__ import annotations

import faulthandler
import os
import sys
from collections.abc import Iterator
from typing import IO

import pytest

_stderr: IO[str] | None = None


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("guard_grace", "seconds after a test's timeout at which the C watchdog "
                  "dumps every thread's stack and exits the run (a hang holding the GIL)",
                  default="60")


def pytest_configure(config: pytest.Config) -> None:
    global _stderr
    if _stderr is None:
        _stderr = os.fdopen(os.dup(sys.__stderr__.fileno()), "w")  # before any capture


def _limit(item: pytest.Item) -> float:
    """The test's pytest-timeout limit in seconds (0: none)."""
    marker = item.get_closest_marker("timeout")
    if marker is not None:
        value = marker.args[0] if marker.args else marker.kwargs.get("timeout", 0)
    else:
        value = item.config.getini("timeout") or 0
    return float(value or 0)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[None]:
    limit = _limit(item)
    if limit > 0 and _stderr is not None:
        grace = float(item.config.getini("guard_grace"))
        faulthandler.dump_traceback_later(limit + grace, exit=True, file=_stderr)
    try:
        yield
    finally:
        if limit > 0:
            faulthandler.cancel_dump_traceback_later()
