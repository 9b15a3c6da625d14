"""A test that blocks forever fails within its timeout, with every thread's stack in the output
(tests/suite_guard.py): run as a pytest of its own, with a timeout of a few seconds.

Two ways to block: in C without the GIL (a lock acquired twice; the shape of a wait inside
grpc's C core), which pytest-timeout's thread method ends, and in C holding the GIL (libc's
``pause`` called through ``ctypes.PyDLL``), where no Python thread runs and the C watchdog
(``faulthandler``) ends the run. Either way the run exits non-zero and its output names the
blocked test's frame and the other thread's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

BLOCKED = '''
import ctypes
import threading
import time


def bystander_waits() -> None:
    time.sleep(600)


def test_{name}() -> None:
    threading.Thread(target=bystander_waits, name="bystander", daemon=True).start()
    {block}
'''

CASES = {
    # a C wait that releases the GIL, as a thread waiting on grpc's core does
    "lock_twice": "lock = threading.Lock(); lock.acquire(); lock.acquire()",
    # a C call that keeps the GIL: pytest-timeout's timer thread cannot run
    "holding_the_gil": "ctypes.PyDLL(None).pause()",
}


@pytest.mark.parametrize("name", CASES)
def test_a_test_blocked_forever_fails_with_every_stack(name: str, tmp_path: Path) -> None:
    test = tmp_path / f"test_{name}.py"
    test.write_text(BLOCKED.format(name=name, block=CASES[name]))
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\ntimeout = 2\ntimeout_method = thread\nguard_grace = 3\n")
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    # the timeout here bounds a hang of the guard itself; the run must end long before
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "suite_guard",
                          "-p", "no:cacheprovider", "-q", str(test)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out
    assert f"test_{name}" in out and "bystander_waits" in out, out
    if name == "lock_twice":
        assert "Timeout" in out and "Stack of bystander" in out and "lock.acquire()" in out, out
    else:
        assert "most recent call first" in out and "Timeout (0:00:05)" in out, out
