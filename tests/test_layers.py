"""The packages import one way (docs/design.md's layers): no module of ``shuangkou.core`` or
``shuangkou.service``, compiled or Python, imports one that imports it back, however far
round. Every import counts wherever it is written — at the top, inside a function (an import
deferred to a call is still a dependency: it only hides the cycle until that call) — save
those for type checking only and the cimports of .pxd declarations, which are not imports
at run time.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from shuangkou import client, core, service

ROOT = Path(__file__).resolve().parents[1]
#: installed package -> its folder
PACKAGES = {"shuangkou.core": Path(core.__file__).parent,
            "shuangkou.service": Path(service.__file__).parent,
            "shuangkou.client": Path(client.__file__).parent}


def _modules(package: str, folder: Path) -> dict[str, Path]:
    """Every module of ``package`` (a package by its ``__init__``) -> its source."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.suffix not in (".py", ".pyx") or "__pycache__" in path.parts:
            continue
        parts = path.relative_to(folder).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join((package, *parts))] = path
    return out


def _imported(name: str, path: Path) -> set[str]:
    """The dotted names module ``name`` (at ``path``) imports at run time: each ``import x``,
    and for ``from x import y`` both ``x`` and ``x.y`` (``y`` may be a module)."""
    text = path.read_text()
    found: set[str] = set()
    if path.suffix == ".pyx":
        for base, names in re.findall(r"^\s*from\s+([\w.]+)\s+import\s+(\([^)]*\)|[^\n]+)",
                                      text, re.M):
            found.add(base)
            found.update(f"{base}.{n}" for n in re.findall(r"(\w+)(?:\s+as\s+\w+)?",
                                                           names.strip("()")))
        found.update(re.findall(r"^\s*import\s+([\w.]+)", text, re.M))
        return found
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(text))
    return found


def _graph(package: str, folder: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (an imported module's packages too:
    importing ``a.b.c`` runs ``a/b/__init__``; not its own packages, run before it)."""
    modules = _modules(package, folder)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for dotted in _imported(name, path):
            parts = dotted.split(".")
            for i in range(1, len(parts) + 1):
                target = ".".join(parts[:i])
                if target in modules and target != name and not name.startswith(target + "."):
                    deps.add(target)
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> tuple[str, ...] | None:
    """A cycle of ``graph`` (its modules in order, the first again at the end), or None."""
    done: set[str] = set()

    def walk(name: str, path: tuple[str, ...]) -> tuple[str, ...] | None:
        for dep in sorted(graph[name]):
            if dep in path:
                return (*path[path.index(dep):], dep)
            if dep not in done:
                found = walk(dep, (*path, dep))
                if found:
                    return found
        done.add(name)
        return None

    for name in sorted(graph):
        found = walk(name, (name,))
        if found:
            return found
    return None


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_imports_form_no_cycle(package: str) -> None:
    graph = _graph(package, PACKAGES[package])
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or ())


def test_the_graph_sees_the_imports() -> None:
    """The graph reads compiled and Python modules, imports inside functions, relative ones."""
    c = _graph("shuangkou.core", PACKAGES["shuangkou.core"])
    assert c["shuangkou.core._settle"] >= {"shuangkou.core.results", "shuangkou.core._enumerate"}
    assert "shuangkou.core.scoring" in c["shuangkou.core.round"]
    s = _graph("shuangkou.service", PACKAGES["shuangkou.service"])
    # server.serve imports the supervisor's collector inside the function
    assert "shuangkou.service.workers" in s["shuangkou.service.server"]
    assert "shuangkou.service.inputs" in s["shuangkou.service.view.command"]
    assert "shuangkou.service.api._round_replies" in s["shuangkou.service.api.rounds"]
    assert "shuangkou.service.api.convert" in s["shuangkou.service.api.shuangkou"]
    # the HTTP port by job: the seam (and the Call it gives a handler) below the bridge that
    # runs calls, the registration's Collect imported from its one home, error bodies from
    # errors.py; the port's assembly imported by the server inside serve()
    assert "shuangkou.service.http.seam" in s["shuangkou.service.http.bridge"]
    assert "shuangkou.service.api.shuangkou" in s["shuangkou.service.http.seam"]
    assert "shuangkou.service.errors" in s["shuangkou.service.http.conventions"]
    assert "shuangkou.service.http.port" in s["shuangkou.service.server"]


#: The service's command packages that build on one another, each importing only the ones
#: after it: the archives (review-replays, score-replays --view-rejected) draw the view's page
#: and read reviews as the review command does; the page shows a review. What all of them
#: read (files, THE line splitter, one replay) is service/inputs.py, under none of them.
ONE_WAY = ("shuangkou.service.batch", "shuangkou.service.view", "shuangkou.service.review")


def _reached(graph: dict[str, set[str]], name: str) -> set[str]:
    """Every module ``name`` imports, however far round."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        for dep in graph[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def _within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def test_the_command_packages_import_one_way() -> None:
    """batch → view → review, never back, however far round: view/ and batch/ are two
    packages, not one split in two (issue 59)."""
    s = _graph("shuangkou.service", PACKAGES["shuangkou.service"])
    assert "shuangkou.service.view.page" in s["shuangkou.service.batch.pages"]
    assert "shuangkou.service.review.fair" in s["shuangkou.service.view.page"]
    for i, package in enumerate(ONE_WAY):
        for name in (n for n in s if _within(n, package)):
            back = {r for r in _reached(s, name) for earlier in ONE_WAY[:i]
                    if _within(r, earlier)}
            assert not back, f"{name} imports {sorted(back)}"


def test_the_client_imports_neither_the_core_nor_the_service() -> None:
    """shuangkou.client is what a game server installs to call us: grpc, google.rpc and the
    generated shuangkou.v1 only (the service builds on it, never the other way round)."""
    folder = PACKAGES["shuangkou.client"]
    for name, path in _modules("shuangkou.client", folder).items():
        ours = {d for d in _imported(name, path) if d.startswith("shuangkou.")}
        assert all(d.startswith(("shuangkou.client", "shuangkou.v1")) for d in ours), (name, ours)
    adapter = PACKAGES["shuangkou.service"] / "client.py"
    assert "shuangkou.client" in _imported("shuangkou.service.client", adapter)


def test_every_package_of_the_folders_is_installed() -> None:
    """A subpackage missing from pyproject's ``packages`` imports in the editable install
    and is absent from the wheel and the image: every folder with an ``__init__.py`` is
    listed."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"])
    for package, folder in PACKAGES.items():
        for init in sorted(folder.rglob("__init__.py")):
            name = ".".join((package, *init.parent.relative_to(folder).parts))
            assert name in listed, f"{name} is not in pyproject's [tool.setuptools] packages"


def test_a_cycle_is_found() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ("a", "b", "c", "a")
    assert _cycle({"a": {"b"}, "b": set()}) is None


# ----------------------------------------------------------------------------- cimports

def _cimported(path: Path) -> set[str]:
    """The declarations ``path`` (a .pyx or .pxd) cimports: the modules of its
    ``from x cimport ...`` and ``cimport x`` lines."""
    text = path.read_text()
    found = set(re.findall(r"^\s*from\s+([\w.]+)\s+cimport\b", text, re.M))
    found.update(re.findall(r"^\s*cimport\s+([\w.]+)", text, re.M))
    return {name for name in found if name.startswith("shuangkou.")}


def _compiled(package: str, folder: Path) -> dict[str, set[str]]:
    """Each compiled module of ``package`` (its .pyx and its .pxd together) -> the shuangkou
    modules it cimports."""
    out: dict[str, set[str]] = {}
    for path in sorted(folder.rglob("*.p[yx][xd]")):
        if path.suffix not in (".pyx", ".pxd") or "__pycache__" in path.parts:
            continue
        name = ".".join((package, *path.relative_to(folder).with_suffix("").parts))
        out.setdefault(name, set()).update(d for d in _cimported(path) if d != name)
    return out


def test_the_cimports_go_one_way() -> None:
    """The compiled declarations depend one way too: no cycle among the core's cimports, and
    the service's compiled modules cimport the core (and their own), never the reverse."""
    core_graph = _compiled("shuangkou.core", PACKAGES["shuangkou.core"])
    assert core_graph["shuangkou.core._rollout"] >= {"shuangkou.core._round",
                                                     "shuangkou.core._suggest"}
    graph = {k: {d for d in v if d in core_graph} for k, v in core_graph.items()}
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or ())
    assert all(d.startswith("shuangkou.core") for deps in core_graph.values() for d in deps)
    service = _compiled("shuangkou.service", PACKAGES["shuangkou.service"])
    assert service and all(d.startswith(("shuangkou.core", "shuangkou.service"))
                           for deps in service.values() for d in deps)


#: What the round publishes to compiled modules outside the core (core_ext/_round.pxd: the
#: readonly attributes, and the view methods).
PUBLIC_VIEW = {"view", "standing_codes", "rules", "hand_codes"}


def _private_fields() -> set[str]:
    """RoundCore's C fields that are not readonly (core_ext/_round.pxd)."""
    text = (PACKAGES["shuangkou.core"] / "_round.pxd").read_text()
    block = text[text.index("cdef class RoundCore:"):]
    fields = set()
    for line in re.findall(r"^    cdef (?!readonly)(.+)$", block, re.M):
        code = line.split("#", 1)[0]
        if "(" in code:                                    # a method
            continue
        names = code.split(None, 1)[1]                     # past the type
        fields.update(n.strip().split("[")[0] for n in names.split(","))
    return fields - PUBLIC_VIEW


def test_the_service_reads_only_the_rounds_public_view() -> None:
    """No module of the service reads a private field of RoundCore: the compiled reply
    writers read its public view (``view()``, ``standing_codes()``, ``hand_codes()``,
    ``rules()``). (Its Python modules cannot: a C field that is not readonly is not a Python
    attribute.)"""
    private = _private_fields()
    assert {"pos", "faces", "rs", "st_cards", "bomb_readings", "cescaper"} <= private
    pattern = re.compile(r"\.(" + "|".join(sorted(private)) + r")\b")
    for path in sorted(PACKAGES["shuangkou.service"].rglob("*")):
        if path.suffix not in (".pyx", ".pxd"):
            continue
        for i, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            assert not pattern.search(code), f"{path.name}:{i}: {line.strip()}"
