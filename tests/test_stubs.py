"""The hand-written .pyi stubs describe the compiled modules as they are."""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUBS = sorted((ROOT / "core_ext").glob("_*.pyi"))


def _public_names(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
    return {k: v for k, v in names.items() if not k.startswith("_")}


@pytest.mark.parametrize("stub", STUBS, ids=lambda p: p.name)
def test_stub_names_exist_in_the_module(stub: Path) -> None:
    module = importlib.import_module(f"core_ext.{stub.stem}")
    for name, node in _public_names(ast.parse(stub.read_text())).items():
        assert hasattr(module, name), f"{stub.name} declares {name}, the module lacks it"
        if isinstance(node, ast.ClassDef):
            cls = getattr(module, name)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
                    assert hasattr(cls, item.name), f"{name}.{item.name} is not in the module"


def test_every_public_module_name_has_a_stub() -> None:
    import core_ext

    declared = set(_public_names(ast.parse((ROOT / "core_ext" / "__init__.pyi").read_text())))
    for node in ast.parse((ROOT / "core_ext" / "__init__.pyi").read_text()).body:
        if isinstance(node, ast.ImportFrom):
            declared |= {alias.asname or alias.name for alias in node.names}
    assert set(core_ext.__all__) <= declared, set(core_ext.__all__) - declared
