"""The examples in docstrings and the README run as written."""

import doctest
import re
from pathlib import Path

import core_ext

ROOT = Path(__file__).resolve().parents[1]


def test_package_doctests() -> None:
    result = doctest.testmod(core_ext)
    assert result.attempted > 0 and result.failed == 0


def test_readme_python_example_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.S).group(1)
    namespace: dict = {}
    exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102 - our own example
    c = namespace["c"]
    assert c.primary.describe() == "straight 456789 (wild as 9)"
    assert [r.describe() for r in c.readings][1] == "straight 345678 (wild as 3)"
