"""The hand-written .pyi stubs describe the compiled modules as they are.

``mypy.stubtest`` imports the built extensions and checks every name, signature, default
and class of the stubs against them (Cython's functions carry real signatures); the names
Cython adds on its own are in tests/stubtest_allowlist.txt. ``mypy --strict`` over
``shuangkou.core`` and ``shuangkou.service`` (pyproject [tool.mypy]) then checks callers
against those stubs and against protoc's .pyi stubs of ``shuangkou.v1``.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: installed package -> its folder (pyproject package-dir)
FOLDERS = {"shuangkou.core": "core_ext", "shuangkou.service": "service",
           "shuangkou.client": "client"}
#: every compiled module -> its .pyx
COMPILED = {".".join((package, *p.relative_to(ROOT / folder).with_suffix("").parts)): p
            for package, folder in FOLDERS.items() for p in (ROOT / folder).rglob("_*.pyx")}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # mypy reads the sources through build/tree (pyproject mypy_path), stubtest too.
    env = {**os.environ, "MYPYPATH": str(ROOT / "build" / "tree")}
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env=env)


def test_every_compiled_module_has_a_stub() -> None:
    assert {"shuangkou.core._core", "shuangkou.core._enumerate", "shuangkou.core._round",
            "shuangkou.service.api._round_replies",
            "shuangkou.service.api._classify_replies"} <= set(COMPILED)
    for module, source in COMPILED.items():
        assert source.with_suffix(".pyi").is_file(), module


def test_stubs_match_the_compiled_modules() -> None:
    done = _run("mypy.stubtest", *sorted(COMPILED), "--allowlist", "tests/stubtest_allowlist.txt",
                "--mypy-config-file", "pyproject.toml")   # its overrides for google.rpc
    assert done.returncode == 0, done.stdout + done.stderr


def test_core_ext_and_service_are_strictly_typed() -> None:
    done = _run("mypy")     # files, strict = true and the overrides from pyproject.toml
    assert done.returncode == 0, done.stdout + done.stderr
    # Both packages are checked (service/gen only through its .pyi stubs), none skipped.
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["strict"] is True
    assert set(FOLDERS) <= set(config["packages"])
    checked = sum(len({(f.parent, f.stem) for f in (ROOT / folder).rglob("*")
                       if f.suffix in (".py", ".pyi")})
                  for folder in FOLDERS.values())   # one module per name (.pyi wins), subpackages too
    assert f"in {checked} source files" in done.stdout, done.stdout
    for override in config.get("overrides", []):
        modules = override["module"]
        modules = [modules] if isinstance(modules, str) else modules
        if override.get("ignore_errors") or override.get("ignore_missing_imports"):
            # Only generated or third-party code may be exempt, never our own modules.
            assert all(m.startswith("shuangkou.v1.") for m in modules), override


def test_every_public_module_name_has_a_stub() -> None:
    from shuangkou import core

    declared: set[str] = set()
    for node in ast.parse((ROOT / "core_ext" / "__init__.pyi").read_text()).body:
        if isinstance(node, ast.ImportFrom):
            declared |= {alias.asname or alias.name for alias in node.names}
    assert set(core.__all__) <= declared, set(core.__all__) - declared
