"""The hand-written .pyi stubs describe the compiled modules as they are.

``mypy.stubtest`` imports the built extensions and checks every name, signature, default
and class of the stubs against them (Cython's functions carry real signatures); the names
Cython adds on its own are in tests/stubtest_allowlist.txt. ``mypy --strict`` over the
whole package (pyproject [tool.mypy]) then checks callers against those stubs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMPILED = sorted(f"core_ext.{p.stem}" for p in (ROOT / "core_ext").glob("_*.pyx"))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_every_compiled_module_has_a_stub() -> None:
    assert {"core_ext._core", "core_ext._enumerate", "core_ext._round"} <= set(COMPILED)
    for module in COMPILED:
        assert (ROOT / (module.replace(".", "/") + ".pyi")).is_file(), module


def test_stubs_match_the_compiled_modules() -> None:
    done = _run("mypy.stubtest", *COMPILED, "--allowlist", "tests/stubtest_allowlist.txt")
    assert done.returncode == 0, done.stdout + done.stderr


def test_core_ext_is_strictly_typed() -> None:
    done = _run("mypy")     # files and strict = true from pyproject.toml
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_public_module_name_has_a_stub() -> None:
    import core_ext

    declared: set[str] = set()
    for node in ast.parse((ROOT / "core_ext" / "__init__.pyi").read_text()).body:
        if isinstance(node, ast.ImportFrom):
            declared |= {alias.asname or alias.name for alias in node.names}
    assert set(core_ext.__all__) <= declared, set(core_ext.__all__) - declared
