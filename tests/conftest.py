"""Shared fixtures. Helpers live in ``reference`` (the rule-book twin and the core/reference
diff) and ``randomplays`` (play generators); the test directory is on ``sys.path`` (pytest's
rootdir-relative import), so tests import them by those names."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from reference import VARIANTS

pytest_plugins = [
    "example_fixtures",   # examples_server (the Java, Go and Node.js examples)
    "node_fixtures",      # node_server, node_installed (the Node.js examples)
    "suite_guard",        # a test that blocks forever fails the run with every stack
]

# Tools the test extras install as console scripts (grpcurl, dask, hadolint …) live beside
# the interpreter; put them first on PATH so tests find them without an activated venv.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"


@pytest.fixture(params=VARIANTS)
def variant(request: pytest.FixtureRequest) -> str:
    return request.param
