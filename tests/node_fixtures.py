"""Fixtures of the Node.js example tests (tests/test_node_client.py, tests/test_node_table.py),
registered for the whole suite by ``pytest_plugins`` in conftest.py."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from example_fixtures import loopback_server

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "node"
NODE, NPM = shutil.which("node"), shutil.which("npm")


@pytest.fixture(scope="module")
def node_server() -> Iterator[str]:
    """`shuangkou serve` on a free loopback port (example_fixtures.loopback_server)."""
    with loopback_server() as address:
        yield address


@pytest.fixture(scope="module")
def node_installed() -> Path:
    """`npm ci`: exactly the versions in the committed package-lock.json."""
    assert NPM is not None
    done = subprocess.run(
        [NPM, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
        cwd=EXAMPLE, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return EXAMPLE / "node_modules"
