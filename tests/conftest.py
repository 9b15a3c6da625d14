"""Shared fixtures. Helpers live in ``reference`` (the rule-book twin and the core/reference
diff) and ``randomplays`` (play generators); the test directory is on ``sys.path`` (pytest's
rootdir-relative import), so tests import them by those names."""

from __future__ import annotations

import pytest
from reference import VARIANTS


@pytest.fixture(params=VARIANTS)
def variant(request: pytest.FixtureRequest) -> str:
    return request.param
