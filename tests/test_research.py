"""The research tools (research/) run, import one way, and the deals they keep give the
documented figures.

* Every tool runs as docs/BENCHMARKS.md and its notebook (docs/history/) document it
  (:data:`TOOLS`: each with the smallest
  arguments it accepts, as tests/test_bench.py runs the benchmarks): it must exit 0 and
  print its figures (the lines in ``expect``; the values are measurements, not checked).
* research/ imports ``shuangkou`` and itself, never bench/; neither folder's modules import
  each other in a cycle, imports inside functions counted (tests/test_layers.py's reading of
  imports).
* The deals kept in research/results/tuoguan-panel/ give every figure docs/BENCHMARKS.md, its
  notebook and docs/rounds.md state from them: the rounds are deterministic under a rollout budget, so a
  deal measured again on any machine is the same deal.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from test_layers import _cycle, _imported

ROOT = Path(__file__).resolve().parents[1]
RESEARCH = ROOT / "research"
#: the runner of 托管 against the panel, as the docs run it
RUNNER = (str(RESEARCH / "tuoguan_panel.py"),)
LOAD = 2.5      # a run beside a second suite gets this many times as long (tests/test_bench.py)
PANEL_NAMES = ("cautious", "bomber", "blind", "hoarder", "team")   # research/panel/styles.py


@dataclass(frozen=True)
class Tool:
    command: tuple[str, ...]    # after the interpreter: a script's path, or -m and a module
    args: tuple[str, ...]       # the smallest run
    expect: tuple[str, ...]     # regular expressions, each matching a line of stdout
    timeout: float = 60.0       # seconds for the whole run

    @property
    def id(self) -> str:
        return " ".join((Path(self.command[-1]).stem, *self.args))


TOOLS = [
    Tool(RUNNER, ("run", "--rollouts", "12", "--deals", "1", "--variants", "huopin",
                            "--opponents", *PANEL_NAMES, "rule", "random", "search24"),
         (*(rf"^mix\s+12 r\s+{name}\s+huopin\s+2\s+[\d.]+%" for name in
            (*PANEL_NAMES, "rule", "random", "search24")),
          r"^mix 12 r:$", r"^  panel: 5 deals, [+-][\d.]+ \[.*; \d of 5 lines meet the target",
          r"^  search24: [\d.]+% of 2 rounds \[", r"^  random: [\d.]+% of 2 rounds \[",
          r"^  CPU per searched decision: \d+ decisions, median [\d.]+ ms")),
    Tool(RUNNER, ("run", "--race", "--margin", "3", "--read", "--rollouts", "12",
                            "--deals", "1", "--variants", "bianfeng", "--opponents", "blind"),
         (r"^mix\+read\+r\+m3\s+12 r\s+blind\s+bianfeng\s+2\s+[\d.]+%",
          r"^  panel: 1 deals, [+-][\d.]+ \[")),
    Tool(RUNNER, ("parts", "--race", "--margin", "2", "--rollouts", "12", "--deals",
                            "1", "--variants", "bianfeng", "--opponents", "team"),
         (r"^mix\+r\+m2 12 r against team in bianfeng: 2 rounds \(1 deals\)$",
          r"^  (won|lost)\s+(won|lost)\s+[12]\s+[+-][\d.]+\s+[+-][\d.]+\s+[+-][\d.]+  \w",
          r"^  gain per round [+-][\d.]+: base × multiplier [+-][\d.]+, contributions [+-]")),
    Tool(RUNNER, ("departures", "--race", "--margin", "3", "--rollouts", "12",
                            "--deals", "1", "--variants", "bianfeng", "--opponents", "rule",
                            "--truth"),
         (r"^mix\+r\+m3 12 r against rule in bianfeng: \d+ searched decisions \(1 deals\)$",
          r"^  mix\+r\+m3 12 r\s+overturns the rule policy\s+\d+ \([\d.]+%\); the measured "
          r"choice\s+(\d+) \(100\.0%\)$",
          r"^  mix\+r\+m3 24 r\s+overturns the rule policy\s+\d+ ",
          r"^  mix\+r\+m3 12 r, margin 2\s+overturns the rule policy\s+\d+ ",
          r"^  search24 600 r\s+overturns the rule policy\s+\d+ \([\d.]+%\); the measured "
          r"choice\s+\d+ ",
          r"^  played out against rule, the true hands: mix\+r\+m3 12 r overturns the rule "
          r"policy: \d+ decisions$",
          r"^  played out against rule, the true hands: mix\+r\+m3 24 r overturns it where "
          r"mix\+r\+m3 12 r keeps it: \d+ decisions$")),
    Tool(("-m", "research.panel"), ("--deals", "1", "--variants", "huopin"),
         tuple(rf"^{name}\s+huopin\s+2\s+[\d.]+%" for name in PANEL_NAMES)),
]


@pytest.mark.parametrize("tool", TOOLS, ids=[t.id for t in TOOLS])
def test_research_tool(tool: Tool) -> None:
    done = subprocess.run([sys.executable, *tool.command, *tool.args], cwd=ROOT,
                          capture_output=True, text=True, timeout=tool.timeout * LOAD)
    report = f"{tool.id}: exit {done.returncode}\n--- stdout\n{done.stdout}\n--- stderr\n" \
             f"{done.stderr}"
    assert done.returncode == 0, report
    lines = done.stdout.splitlines()
    missing = [p for p in tool.expect if not any(re.search(p, line) for line in lines)]
    assert not missing, f"no line matches {missing}\n{report}"


def test_every_tool_has_a_case() -> None:
    """Each research script, and the panel's module, is run above."""
    scripts = {str(p) for p in RESEARCH.glob("*.py") if p.name != "__init__.py"}
    covered = {tool.command[-1] for tool in TOOLS}
    assert scripts | {"research.panel"} == covered, covered


# ----------------------------------------------------------------------------- imports

def _graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of ``modules`` it imports (importing ``a.b`` runs ``a``)."""
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        imported = _imported(name, path)
        graph[name] = {target for dotted in imported for i in range(1, dotted.count(".") + 2)
                       if (target := ".".join(dotted.split(".")[:i])) in modules
                       and target != name and not name.startswith(target + ".")}
    return graph


def test_research_and_bench_import_one_way() -> None:
    """research/'s modules (by their dotted names) and bench/'s scripts (which import each
    other by file name, bench/ on ``sys.path``) form no import cycle, and no module of
    research/ imports a bench script: the panel runner imports the panel, never a
    benchmark, and a benchmark may use the panel."""
    research = {".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
                for p in RESEARCH.rglob("*.py")}
    bench = {p.stem: p for p in (ROOT / "bench").glob("*.py")}
    assert {"research.panel", "research.panel.styles", "research.tuoguan_panel"} <= set(research)
    graph = _graph({**research, **bench})
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or ())
    for name in research:
        assert not graph[name] & set(bench), (name, graph[name] & set(bench))
        assert "bench" not in {d.split(".")[0] for d in _imported(name, research[name])}, name
    assert "research.panel" in graph["bench_review"]       # the graph sees the imports


# ----------------------------------------------------------------------------- kept deals

def test_the_kept_deals_store_the_cpu_as_steps() -> None:
    """``keep`` stores each round's CPU as the steps between its values sorted, in
    hundredths of a millisecond (``cpu_steps``), and ``report`` reads them back as ``run``
    wrote them, every value as it was (the order aside); ``run``'s own ``cpu_ms`` is read
    as it is."""
    runner = _runner()
    row = {"model": "mix", "deal": 0, "rounds": [
        {"team": 0, "won": True, "cpu_ms": [12.34, 0.9, 45.0, 12.34, 0.07]},
        {"team": 1, "won": False, "cpu_ms": []}]}
    kept = runner.kept(row)
    assert [x["cpu_steps"] for x in kept["rounds"]] == [[7, 83, 1144, 0, 3266], []]
    assert all("cpu_ms" not in x for x in kept["rounds"])
    assert runner.unkept(kept) == {**row, "rounds": [
        {"team": 0, "won": True, "cpu_ms": [0.07, 0.9, 12.34, 12.34, 45.0]},
        {"team": 1, "won": False, "cpu_ms": []}]}
    assert runner.unkept(row) == row and runner.kept(runner.unkept(kept)) == kept
    with gzip.open(sorted(KEPT.glob("*.jsonl.gz"))[0], "rt") as lines:
        first = json.loads(next(lines))
    assert all(set(x) == {"team", "won", "points", "base_won", "base_points", "cpu_steps"}
               for x in first["rounds"]), first


def test_the_panel_report_pairs_two_searches(tmp_path: Path) -> None:
    """tuoguan_panel's ``report --pair`` (how the benchmarks compare two searches) on two
    runs into one file: ``sound`` with racing beside ``mix`` without, on the same deal."""
    out = tmp_path / "panel.jsonl"
    common = ("--rollouts", "12", "--deals", "1", "--variants", "huopin", "--opponents",
              "rule", "--out", str(out))
    for model in (("--model", "mix"), ("--model", "sound", "--race")):
        subprocess.run([sys.executable, *RUNNER, "run", *model, *common],
                       cwd=ROOT, check=True, capture_output=True, timeout=60 * LOAD)
    got = subprocess.run([sys.executable, *RUNNER, "report", str(out),
                          "--pair", "sound+r:12", "mix:12"], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=60 * LOAD).stdout
    assert re.search(r"^sound\+r:12 − mix:12, on the same deals", got, re.M), got
    assert re.search(r"^sound\+r − mix\s+12 r rule\s+huopin\s+1 deals\s+[+-][\d.]+ \[", got,
                     re.M), got


def test_the_panel_keeps_its_deals_gzipped(tmp_path: Path) -> None:
    """research/results keeps ``run``'s deals a gzip per opponent and variant: ``keep`` merges
    a run's file into such a folder (again: nothing changes, not a byte), ``report`` reads
    the gzip as the plain file, ``run --kept`` skips the deals kept, and ``run`` refuses to
    append to a gzip (it says how to grow one instead)."""
    out, kept = tmp_path / "panel.jsonl", tmp_path / "kept"
    tool = [sys.executable, *RUNNER]
    deal = ("run", "--rollouts", "12", "--deals", "1", "--variants", "huopin", "--opponents",
            "rule")

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*tool, *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=60 * LOAD)

    assert call(*deal, "--out", str(out)).returncode == 0
    assert call("keep", str(out), "--into", str(kept)).stdout.endswith(
        "rule-huopin.jsonl.gz: 0 -> 1 deals\n")
    packed = kept / "rule-huopin.jsonl.gz"
    before = packed.read_bytes()
    again = call("keep", str(out), "--into", str(kept))
    assert again.returncode == 0 and again.stdout == "" and packed.read_bytes() == before
    plain, zipped = (call("report", str(path)).stdout for path in (out, packed))
    assert zipped == plain and "huopin" in plain, (plain, zipped)
    more = tmp_path / "more.jsonl"
    assert call(*deal, "--kept", str(kept), "--out", str(more)).returncode == 0
    assert more.read_text() == ""
    refused = call("run", "--out", str(packed))
    assert refused.returncode != 0 and "--kept" in refused.stderr, refused
    # another search on the kept deal reuses its rule-policy rounds: the same as played
    other = ("--model", "mix", "--race")
    reused, played = tmp_path / "reused.jsonl", tmp_path / "played.jsonl"
    assert call(*deal, *other, "--kept", str(kept), "--out", str(reused)).returncode == 0
    assert call(*deal, *other, "--out", str(played)).returncode == 0

    def rounds(path: Path) -> list[dict[str, Any]]:     # what was played, not how long it took
        return [{k: v for k, v in r.items() if k != "cpu_ms"}
                for r in json.loads(path.read_text())["rounds"]]

    assert rounds(reused) == rounds(played)


#: The deals behind docs/BENCHMARKS.md's table of 托管's strength (and the notebook's tables of
#: issue 34), as ``run`` wrote them, a gzip per opponent and variant: grown with the commands
#: those sections document.
KEPT = ROOT / "research" / "results" / "tuoguan-panel"
_NUM = r"[+-]?[\d.]+"


def _reported(model: str, rollouts: int = 600) -> re.Pattern[str]:
    """A line of ``report`` for ``model`` at ``rollouts``: opponent, variant, rounds, wins
    and their interval, the rule policy's wins, points over it and their interval, raw
    points."""
    return re.compile(rf"^{re.escape(model)}\s+{rollouts} r\s+(\S+)\s+(\S+)\s+(\d+)\s+({_NUM}%)\s+"
                      rf"({_NUM}%)-\s*({_NUM}%)\s+({_NUM}%)\s+({_NUM})\s+({_NUM})\.\.\s*({_NUM})"
                      rf"\s+({_NUM})\s", re.M)


#: 托管's default to issue 34's ninth stop (a margin of two), and since (three)
_M2, _M3 = "mix+r+m2", "mix+r+m3"
#: 托管's default since issue 34's twenty-second stop (docs/decisions/engineering.md E62):
#: the search and its rollouts, twice 600 without the bomb over the partner's standing play
_DEFAULT = (f"{_M3}+npb", 1200)
#: ``report --pair``: 托管's default against the default before it (600 rollouts) on the
#: same deals
_AGAINST_600 = ("--pair", "{}:{}".format(*_DEFAULT), f"{_M3}:600")
_REPORTED = _reported(*_DEFAULT)
_DOCUMENTED = re.compile(rf"^\| `(\w+)` \| (\w+) \| ([\d,]+) \| ({_NUM}%) \(({_NUM}%)–({_NUM}%)\) "
                         rf"\| ({_NUM}%) \| ({_NUM}) \[({_NUM}), ({_NUM})\] \| ({_NUM}) \|", re.M)


#: the book of current figures, and its lab notebook of issue 34 stop by stop, moved whole out
#: of the book (issue 59): each test reads the document whose section states its figure
BOOK = ROOT / "docs" / "BENCHMARKS.md"
NOTEBOOK = ROOT / "docs" / "history" / "benchmarks-notebook.md"


def _section(title: str, doc: Path = NOTEBOOK) -> str:
    """The text of ``doc``'s section ``title`` (ASCII minus signs)."""
    text = doc.read_text().replace("−", "-")
    return text.split(title, 1)[1].split("\n##", 1)[0]


@functools.cache
def _runner() -> Any:
    """research/tuoguan_panel.py as a module (it is a script, so not in a package)."""
    sys.path.insert(0, str(RESEARCH))
    try:
        import tuoguan_panel
    finally:
        sys.path.remove(str(RESEARCH))
    return tuoguan_panel


@functools.cache
def _deals(path: Path) -> tuple[dict[str, Any], ...]:
    """A kept file's deals, read once for every table that reads them."""
    return tuple(_runner().read_deals(path))


@pytest.fixture(autouse=True, scope="module")
def _forget_the_deals() -> Iterator[None]:
    """The deals read (about 700 MB as Python objects) are let go with the module."""
    yield
    _report.cache_clear()
    _deals.cache_clear()


@functools.cache
def _report(*args: str) -> str:
    """What ``tuoguan_panel.py report`` prints for these arguments: run in this process, on
    deals read once for all the tables (reading the 16 MB of gzip takes 10 s of CPU, and
    the tables ask ``report`` dozens of times; the command line itself runs in
    test_the_panel_report_pairs_two_searches)."""
    runner = _runner()
    parsed = runner.parser().parse_args(["report", *args])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runner.report((row for path in parsed.files for row in _deals(path)), parsed.pair,
                      parsed.below)
    return out.getvalue()


def test_the_rule_policys_rounds_of_a_kept_deal_are_the_same_whichever_search_was_measured(
        ) -> None:
    """Every kept deal measured by several searches (or budgets) against one opponent has
    the same rule-policy rounds in each: they depend on the deal and the opponent only
    (deterministic), which is what lets ``run`` reuse them."""
    shared = 0
    for path in sorted(KEPT.glob("*.jsonl.gz")):
        bases: dict[tuple[object, ...], list[tuple[bool, int]]] = {}
        with gzip.open(path, "rt") as kept:
            for line in kept:
                row = json.loads(line)
                key = (row["ms"], row["opponent"], row["variant"], row["deal"])
                base = [(r["base_won"], r["base_points"]) for r in row["rounds"]]
                shared += key in bases
                assert bases.setdefault(key, base) == base, (path.name, key)
    assert shared > 5_000


#: docs/BENCHMARKS.md's table of 托管's strength, and the notebook's tables of the 托管 default
#: of each stop, over the kept deals: the section each opens, its number of lines, every one
#: of which the folder reproduces, and the search (with its rollouts when not the default's
#: 600).
_BOOK_TABLES: dict[str, tuple[int, str] | tuple[int, str, int]] = {
           "### 托管's strength": (49, *_DEFAULT)}
_TABLES: dict[str, tuple[int, str] | tuple[int, str, int]] = {
           "### Every line grown": (49, _M2), "### A thousand deals per line": (9, _M2),
           "### Three more opponents at a thousand deals": (19, _M2),
           "### The panel complete": (7, _M2), "### A margin of three": (4, _M3),
           "### The panel at a margin of three": (35, _M3), "### Three knobs more": (15, _M3),
           "### Three ideas more": (18, _M3), "### Random play at a thousand deals": (7, _M3),
           "### The head to head at a thousand deals": (7, _M3),
           "### Eight ideas more": (7, _M3, 1200),
           "### The partner-bomb filter landed": (11, *_DEFAULT),
           "### The panel at 1,200 rollouts with the filter": (12, *_DEFAULT),
           "### Twelve lines more at 1,200 rollouts with the filter": (12, *_DEFAULT),
           "### The last ten lines at 1,200 rollouts with the filter": (10, *_DEFAULT),
           "### Random play at 1,200 rollouts with the filter": (7, *_DEFAULT)}


@pytest.mark.parametrize(("doc", "title"), [*((BOOK, t) for t in sorted(_BOOK_TABLES)),
                                            *((NOTEBOOK, t) for t in sorted(_TABLES))],
                         ids=[*sorted(_BOOK_TABLES), *sorted(_TABLES)])
def test_the_documented_lines_are_what_the_kept_deals_give(doc: Path, title: str) -> None:
    """A per-line table of the 托管 default in docs/BENCHMARKS.md or its notebook is what ``report``
    prints for the deals kept in research/results, each line as it stood with the table's
    number of deals (``report --below N``: the folder grows after a table is written): the
    table's wins, the rule policy's wins, the points over it with their interval and the
    raw points (not the CPU: a measurement of the host). The rounds are deterministic under
    a rollout budget, so a deal measured again on any machine is the same deal."""
    lines, model, *rollouts = {**_BOOK_TABLES, **_TABLES}[title]
    line_of = _reported(model, *rollouts)
    section = _section(title, doc)
    documented = {(m[0], m[1]): (int(m[2].replace(",", "")), *m[3:]) for m in
                  (match.groups() for match in _DOCUMENTED.finditer(section))}
    assert len(documented) == lines, sorted(documented)
    files = sorted(map(str, KEPT.glob("*.jsonl.gz")))
    reported: dict[tuple[str, str], tuple[object, ...]] = {}
    for below in sorted({deals for deals, *_ in documented.values()}):
        got = _report("--below", str(below), *files)
        reported.update({(m[0], m[1]): (int(m[2]) // 2, *m[3:]) for m in
                         (match.groups() for match in line_of.finditer(got))
                         if documented.get((m[0], m[1]), (0,))[0] == below})
    wrong = {line: (documented[line], reported.get(line)) for line in documented
             if reported.get(line) != documented[line]}
    assert not wrong, wrong


def test_the_documented_rollout_pairing_is_what_the_kept_deals_give() -> None:
    """The notebook's 1,200 against 600 rollouts against `team` (the seventh stop) is
    what ``report --pair`` prints for the kept deals of the two lines."""
    files = [str(KEPT / f"team-{vid}.jsonl.gz") for vid in ("bianfeng", "baibian")]
    got = _report("--pair", "mix+r+m2:1200", "mix+r+m2:600", *files)
    for line in ("team      baibian           1000 deals   -0.46 [-0.90, -0.02]",
                 "team      bianfeng          1000 deals   -0.30 [-0.73, +0.13]",
                 "panel     pooled            2000 deals   -0.38 [-0.69, -0.07]"):
        assert line in got, got


def test_the_documented_margin_pairing_is_what_the_kept_deals_give() -> None:
    """The notebook's margin of three against two (the ninth stop: the 托管 default
    became three) is what ``report --pair`` prints for the kept deals: the four panel lines
    and the head to head in five variants."""
    files = [str(KEPT / f"{o}-{vid}.jsonl.gz") for o in ("team", "bomber")
             for vid in ("bianfeng", "baibian")]
    got = _report("--below", "1000", "--pair", f"{_M3}:600", f"{_M2}:600", *files)
    for line in ("bomber    baibian           1000 deals   +0.53 [+0.24, +0.82]",
                 "bomber    bianfeng          1000 deals   +0.23 [-0.09, +0.55]",
                 "team      baibian           1000 deals   +0.92 [+0.45, +1.40]",
                 "team      bianfeng          1000 deals   +0.88 [+0.40, +1.36]",
                 "panel     pooled            4000 deals   +0.64 [+0.44, +0.84]"):
        assert line in got, got
    five = ("baibian", "fengkuang", "fengkuang_crazy", "bianfeng", "bianfeng_lishui")
    got = _report("--below", "276", "--pair", f"{_M3}:600", f"{_M2}:600",
                  *(str(KEPT / f"search24-{vid}.jsonl.gz") for vid in five))
    for line in ("search24  baibian            276 deals   -0.05 [-0.97, +0.88]",
                 "search24  fengkuang          276 deals   -0.87 [-1.95, +0.21]",
                 "search24  fengkuang_crazy    276 deals   -1.19 [-2.23, -0.15]",
                 "search24  bianfeng           276 deals   -1.09 [-1.99, -0.19]",
                 "search24  bianfeng_lishui    276 deals   -1.04 [-2.15, +0.07]",
                 "search24  pooled            1380 deals   -0.85 [-1.30, -0.39]",
                 "search24: 52.2% of 2760 rounds [50.3%, 54.0%]; the search team's points per "
                 "round +0.49 [+0.11, +0.88] (1380 deals)",
                 "search24: 54.0% of 2760 rounds [52.2%, 55.9%]; the search team's points per "
                 "round +1.34 [+0.96, +1.73] (1380 deals)"):
        assert line in got, got

def test_the_documented_partner_bomb_pairings_are_what_the_kept_deals_give() -> None:
    """The notebook's head to head at 1,200 rollouts without the bomb over the
    partner's standing play (the eighteenth stop), against the default on the same 1,000
    deals a variant and against 1,200 with that bomb on the 476 measured so: what
    ``report --pair`` prints for the kept deals."""
    section = _section("### The partner-bomb filter landed")
    files = [str(path) for path in sorted(KEPT.glob("search24-*.jsonl.gz"))]
    for below, other, points, rounds in (
            ("1000", f"{_M3}:600", "7000 deals   +0.77 [+0.55, +0.99]",
             "rounds won 55.6% against 53.0%: +2.6 pp [+1.8, +3.5]"),
            ("476", f"{_M3}:1200", "3332 deals   +0.24 [+0.13, +0.36]",
             "rounds won 55.8% against 55.0%: +0.8 pp [+0.4, +1.3]")):
        got = _report("--below", below, "--pair", f"{_M3}+npb:1200", other, *files)
        assert re.search(rf"search24\s+pooled\s+{re.escape(points)}\n", got), got
        assert rounds in got, got
        assert points.split("deals", 1)[1].strip() in section, points     # as documented


def _assert_reported_as_documented(points: str, got: str, section: str) -> None:
    """``report`` printed the paired line ``points`` (a line's name, its deals, the mean
    and interval), and ``section`` states its mean and interval."""
    assert points in got, got
    assert points.split("deals", 1)[1].strip() in section, points


def test_the_documented_panel_pairing_at_1200_with_the_filter_is_what_the_kept_deals_give(
        ) -> None:
    """The notebook's eleven panel lines measured at 1,200 rollouts with the filter
    (the nineteenth stop) against the default on the same deals: what ``report --pair``
    prints for the kept deals, pooled over the nine lines at 1,000 deals and for the lines
    the section names, the two stopped ones on the deals they had then."""
    section = _section("### The panel at 1,200 rollouts with the filter")
    pair = _AGAINST_600
    lines = ("bomber-huopin", "bomber-fengkuang", "bomber-bianfeng_lishui", "bomber-qianbian",
             "bomber-fengkuang_crazy", "hoarder-baibian", "hoarder-bianfeng",
             "team-bianfeng_lishui", "cautious-baibian")
    got = _report("--below", "1000", *pair, *(str(KEPT / f"{line}.jsonl.gz") for line in lines))
    stopped = {
        "cautious-bianfeng": ("495", "bianfeng           495 deals   -0.62 [-1.27, +0.03]"),
        "team-huopin": ("784", "huopin             784 deals   +0.22 [-0.50, +0.93]")}
    for line, (below, points) in stopped.items():
        got += _report("--below", below, *pair, str(KEPT / f"{line}.jsonl.gz"))
        _assert_reported_as_documented(points, got, section)
    for points in ("pooled            9000 deals   -0.19 [-0.33, -0.04]",
                   "qianbian          1000 deals   -1.10 [-1.71, -0.49]",
                   "fengkuang_crazy   1000 deals   +0.76 [+0.31, +1.20]"):
        _assert_reported_as_documented(points, got, section)
    assert "rounds won 95.0% against 94.7%" in got, got


def test_the_documented_pairing_of_twelve_lines_more_at_1200_is_what_the_kept_deals_give(
        ) -> None:
    """The notebook's twelve panel lines of the twentieth stop at 1,200 rollouts with
    the filter: against the default on the same deals (pooled and the lines the section
    names), and the 25 lines measured that way, pooled, as ``report`` prints them."""
    section = _section("### Twelve lines more at 1,200 rollouts with the filter")
    lines = ("cautious-fengkuang", "cautious-bianfeng", "cautious-huopin", "hoarder-fengkuang",
             "team-huopin", *(f"blind-{variant}" for variant in (
                 "baibian", "fengkuang", "fengkuang_crazy", "bianfeng", "bianfeng_lishui",
                 "qianbian", "huopin")))
    got = _report("--below", "1000", *_AGAINST_600,
                  *(str(KEPT / f"{line}.jsonl.gz") for line in lines))
    for points in ("pooled           12000 deals   +0.01 [-0.14, +0.16]",
                   "fengkuang         1000 deals   -0.40 [-1.00, +0.20]",
                   "fengkuang_crazy   1000 deals   +0.86 [+0.31, +1.42]",
                   "fengkuang         1000 deals   +0.66 [+0.11, +1.21]"):
        _assert_reported_as_documented(points, got, section)
    assert "rounds won 94.2% against 93.8%" in got, got
    assert "12000 deals, +7.22 [+7.00, +7.43] points" in got, got
    measured = [str(KEPT / f"{line}.jsonl.gz") for line in (
        *lines, "team-bianfeng", "team-baibian", "bomber-bianfeng", "bomber-baibian",
        "bomber-huopin", "bomber-fengkuang", "bomber-bianfeng_lishui", "bomber-qianbian",
        "bomber-fengkuang_crazy", "hoarder-baibian", "hoarder-bianfeng",
        "team-bianfeng_lishui", "cautious-baibian")]
    got = _report("--below", "1000", *measured)
    assert ("25000 deals, +5.95 [+5.81, +6.08] points per round over the rule policy; 25 of "
            "25 lines meet the target") in got, got
    assert "+5.95 [+5.81, +6.08] points per round pooled (25,000 deals)" in section


def test_the_documented_last_ten_lines_at_1200_are_what_the_kept_deals_give() -> None:
    """The notebook's last ten panel lines at 1,200 rollouts with the filter (the
    twenty-first stop): the whole panel measured that way, pooled, and against the default
    on the same deals (the ten lines pooled and the lines the section names, the whole
    panel pooled and per line), as ``report`` prints them."""
    section = _section("### The last ten lines at 1,200 rollouts with the filter")
    lines = [str(KEPT / f"{line}.jsonl.gz") for line in (
        "cautious-bianfeng_lishui", "cautious-qianbian", "cautious-fengkuang_crazy",
        "hoarder-bianfeng_lishui", "hoarder-huopin", "hoarder-qianbian",
        "hoarder-fengkuang_crazy", "team-fengkuang", "team-qianbian", "team-fengkuang_crazy")]
    pair = _AGAINST_600
    got = _report("--below", "1000", *pair, *lines)
    for points in ("pooled           10000 deals   +0.27 [+0.01, +0.53]",
                   "fengkuang         1000 deals   -0.77 [-1.32, -0.22]",
                   "fengkuang_crazy   1000 deals   +1.90 [+0.94, +2.86]"):
        _assert_reported_as_documented(points, got, section)
    assert "rounds won 94.6% against 93.9%" in got, got
    assert "10000 deals, +10.41 [+10.01, +10.81] points" in got, got
    got = _report("--below", "1000", *_PANEL_FILES)
    assert ("35000 deals, +7.22 [+7.07, +7.37] points per round over the rule policy; 35 of "
            "35 lines meet the target") in got, got
    assert "+7.22 [+7.07,\n  +7.37] points per round over the rule policy pooled" in section
    got = _report("--below", "1000", *pair, *_PANEL_FILES)
    _check_pairing_matrix(section, 1000, got)
    _assert_reported_as_documented("pooled           35000 deals   +0.00 [-0.10, +0.11]", got,
                                   section)
    assert "rounds won 94.6% against 94.1%: +0.4 pp [+0.2, +0.6]" in got, got


def test_the_documented_random_play_at_1200_with_the_filter_is_what_the_kept_deals_give(
        ) -> None:
    """The notebook's twenty-second stop of issue 34, where 托管's default became
    1,200 rollouts with the filter: random play pooled over the seven variants at 1,000
    deals, against the default before it on the same deals (pooled and per variant), and
    the targets table's head to head and panel, as ``report`` prints them: the current
    figures as the book states them (托管's strength), the pairings with the default before
    as the notebook does."""
    section = _section("### Random play at 1,200 rollouts with the filter")
    prose = " ".join(_section("### 托管's strength", BOOK).split())
    files = sorted(map(str, KEPT.glob("random-*.jsonl.gz")))
    got = _report("--below", "1000", *files).split("{} {} r:".format(*_DEFAULT), 1)[1]
    assert got.startswith("\n  random: 99.8% of 14000 rounds [99.7%, 99.9%]"), got
    assert "99.8 % of the 14,000 rounds [99.7, 99.9]" in prose
    got = _report("--below", "1000", *_AGAINST_600, *files)
    _check_pairing_matrix(section, 1000, got, cells=7)
    _assert_reported_as_documented("pooled            7000 deals   -0.42 [-0.61, -0.23]", got,
                                   " ".join(section.split()))
    assert "rounds won 99.8% against 99.7%: +0.1 pp [+0.0, +0.2]" in got, got
    got = _report("--below", "1000", *map(str, sorted(KEPT.glob("search24-*.jsonl.gz"))))
    assert ("search24: 55.6% of 14000 rounds [54.8%, 56.5%]; the search team's points per "
            "round +2.09 [+1.88, +2.30] (7000 deals)") in got, got
    assert ("55.6 % of 14,000 rounds [54.8, 56.5]; the search team's points per round +2.09 "
            "[+1.88, +2.30]") in prose
    got = _report("--below", "1000", *_PANEL_FILES)
    assert ("35000 deals, +7.22 [+7.07, +7.37] points per round over the rule policy; 35 of "
            "35 lines meet the target") in got, got
    assert "35 of 35 lines; pooled +7.22 [+7.07, +7.37] (35,000 deals)" in prose


def _check_pairing_matrix(section: str, deals: int, got: str, cells: int = 35) -> None:
    """Every cell of the section's opponent × variant table of paired differences is the
    line ``report --pair`` printed (``got``) for that line on its first ``deals``; the
    table has ``cells`` (the whole panel's by default)."""
    matrix = section.split("| opponent | baibian |", 1)[1].split("\n\n", 1)[0]
    header, _, *rows = ("| opponent | baibian |" + matrix).splitlines()
    variants = header.strip(" |").split(" | ")[1:]
    for row in rows:
        opponent, *documented = row.strip(" |").split(" | ")
        for variant, cell in zip(variants, documented, strict=True):
            line = rf"{opponent.strip('`')}\s+{variant}\s+{deals} deals\s+{re.escape(cell)}\n"
            assert re.search(line, got), cell
            cells -= 1
    assert cells == 0


_PANEL_FILES = [str(path) for path in sorted(KEPT.glob("*.jsonl.gz"))
                if not path.name.startswith(("search24", "random"))]


def test_the_documented_margin_over_the_panel_is_what_the_kept_deals_give() -> None:
    """The notebook's three − two over the whole panel (the tenth stop), each line on
    its first 200 deals and pooled, is what ``report --pair`` prints for the kept deals."""
    section = _section("### The panel at a margin of three")
    got = _report("--below", "200", "--pair", f"{_M3}:600", f"{_M2}:600", *_PANEL_FILES)
    _check_pairing_matrix(section, 200, got)
    pooled = re.search(rf"Pooled over the 7,000 deals: \*\*({_NUM}) \[({_NUM}), ({_NUM})\]\*\*",
                       section)
    assert pooled, "the pooled figure moved: update this test"
    assert (f"panel     pooled            7000 deals   {pooled[1]} [{pooled[2]}, {pooled[3]}]"
            in got), got
    got = _report("--below", "276", "--pair", f"{_M3}:600", f"{_M2}:600",
                  *map(str, sorted(KEPT.glob("search24-*.jsonl.gz"))))
    for line in ("search24  qianbian           276 deals   +1.45 [-0.40, +3.30]",
                 "search24  huopin             276 deals   -0.30 [-1.35, +0.75]",
                 "search24  pooled            1932 deals   -0.44 [-0.89, +0.00]",
                 "search24: 52.7% of 3864 rounds [51.1%, 54.3%]; the search team's points per "
                 "round +1.30 [+0.92, +1.69] (1932 deals)",
                 "search24: 54.2% of 3864 rounds [52.6%, 55.7%]; the search team's points per "
                 "round +1.74 [+1.38, +2.11] (1932 deals)"):
        assert line in got, got
    got = _report("--below", "276", *map(str, sorted(KEPT.glob("random-*.jsonl.gz"))))
    three = got.split(f"{_M3} 600 r:", 1)[1]
    assert ("random: 99.7% of 3864 rounds [99.4%, 99.8%]; the search team's points per round "
            "+20.70 [+20.07, +21.34] (1932 deals)") in three, got


def test_the_documented_1200_rollouts_are_what_the_kept_deals_give() -> None:
    """The notebook's 1,200 rollouts against 托管's 600 (the eleventh stop:
    docs/decisions/engineering.md E62) is what ``report`` prints for the kept deals: the
    head to head in seven variants (points and the rounds won, paired), and the whole
    panel's first 40 deals per line."""
    section = _section("### 1,200 rollouts at a margin of three")
    got = _report("--below", "276", "--pair", f"{_M3}:1200", f"{_M3}:600",
                  *map(str, sorted(KEPT.glob("search24-*.jsonl.gz"))))
    rows = re.findall(r"^\| (\w+) \| .* \| ([^|]+) \|$", section.split("Over the 1,932")[0],
                      re.M)
    assert len(rows) == 8, rows
    for row in rows:
        if row[0] != "variant":
            assert re.search(rf"search24\s+{row[0]}\s+276 deals\s+{re.escape(row[1])}\n",
                             got), row
    for line in ("search24  pooled            1932 deals   +0.62 [+0.22, +1.02]",
                 "search24  pooled            1932 deals rounds won 55.6% against 52.7%: "
                 "+2.9 pp [+1.2, +4.5]",
                 "search24: 55.6% of 3864 rounds [54.0%, 57.1%]; the search team's points per "
                 "round +1.92 [+1.56, +2.29] (1932 deals)"):
        assert line in got, got
    got = _report("--below", "40", "--pair", f"{_M3}:1200", f"{_M3}:600", *_PANEL_FILES)
    _check_pairing_matrix(section, 40, got)
    assert "panel     pooled            1400 deals   +0.03 [-0.51, +0.56]" in got, got
    four = [str(KEPT / f"{o}-{vid}.jsonl.gz") for o in ("team", "bomber")
            for vid in ("baibian", "bianfeng")]
    got = _report("--below", "300", "--pair", f"{_M3}:1200", f"{_M3}:600", *four)
    table = section.split("| `bomber` | baibian |", 1)[1].split("\n\n", 1)[0]
    for row in ("| `bomber` | baibian |" + table).splitlines():
        opponent, variant, mine, _, paired = row.strip(" |").split(" | ")
        assert re.search(rf"{opponent.strip('`')}\s+{variant}\s+300 deals\s+"
                         rf"{re.escape(paired)}\n", got), row
        gain, low, high = re.findall(_NUM, mine)
        assert re.search(rf"^{re.escape(_M3)}\s+1200 r\s+{opponent.strip('`')}\s+{variant}\s+"
                         rf"600 .* {re.escape(gain)}\s+{re.escape(low)}\.\.\s*{re.escape(high)}\s",
                         got, re.M), row
    for line in ("panel     pooled            1200 deals   -0.22 [-0.58, +0.14]",
                 "panel     pooled            1200 deals rounds won 94.2% against 94.7%: "
                 "-0.5 pp [-1.5, +0.5]", "short: team bianfeng +2.24 [+1.15, +3.32] (300)"):
        assert line in got, got
    # the margin of 4.2 at 1,200, and the smaller win bonus
    h2h = [str(KEPT / f"search24-{vid}.jsonl.gz")
           for vid in ("baibian", "bianfeng", "fengkuang_crazy", "huopin")]
    for other, row in ((f"{_M3}:600", "1,200 at 4.2 - 600 at 3"),
                       (f"{_M3}:1200", "1,200 at 4.2 - 1,200 at 3")):
        team, heads, won = section.split(f"| {row} | ", 1)[1].split(" |\n", 1)[0].split(" | ")
        got = _report("--below", "300", "--pair", "mix+r+m4.2:1200", other,
                      str(KEPT / "team-bianfeng.jsonl.gz"))
        assert f"team      bianfeng           300 deals   {team}" in got, got
        got = _report("--below", "140", "--pair", "mix+r+m4.2:1200", other, *h2h)
        assert f"search24  pooled             560 deals   {heads}" in got, got
        ours, _, theirs, share = won.replace(" %", "%").split(" ", 3)
        assert f"560 deals rounds won {ours} against {theirs.rstrip(':')}: {share}" in got, got
    got = _report("--pair", "mix+w16+r+m3:600", f"{_M3}:600",
                  str(KEPT / "search24-baibian.jsonl.gz"))
    for line in ("search24  pooled             100 deals   +0.57 [-0.44, +1.58]",
                 "rounds won 57.5% against 54.5%: +3.0 pp [-1.8, +7.8]"):
        assert line in got, got


def test_the_documented_reading_of_styles_is_what_the_kept_deals_give(tmp_path: Path) -> None:
    """The notebook's styles read from the round's actions against the 托管 default
    (the tenth stop: docs/decisions/engineering.md E64) is what ``report --pair`` prints
    for the kept deals: four panel lines pooled, and the head to head in fengkuang_crazy. `blind` paired
    on the default's 200 deals of then (its line grew since): its first 200 stand in."""
    blind = tmp_path / "blind-baibian.jsonl"
    with gzip.open(KEPT / "blind-baibian.jsonl.gz", "rt") as kept:
        blind.write_text("".join(line for line in kept if json.loads(line)["deal"] < 200))
    files = [str(KEPT / f"{o}-{vid}.jsonl.gz") for o, vid in (
        ("team", "baibian"), ("team", "bianfeng"), ("bomber", "baibian"))] + [str(blind)]
    got = _report("--below", "300", "--pair", "mix+read+r+m3:600", f"{_M3}:600", *files)
    for line in ("bomber    baibian            300 deals   -0.01 [-0.58, +0.57]",
                 "blind     baibian            200 deals   +0.13 [-0.70, +0.96]",
                 "team      baibian            300 deals   -0.01 [-0.78, +0.77]",
                 "team      bianfeng           300 deals   -0.26 [-0.97, +0.45]",
                 "panel     pooled            1100 deals   -0.05 [-0.41, +0.31]"):
        assert line in got, got
    got = _report("--below", "200", "--pair", "mix+read+r+m3:600", f"{_M3}:600",
                  str(KEPT / "search24-fengkuang_crazy.jsonl.gz"))
    assert "search24  fengkuang_crazy    200 deals   +0.17 [-0.97, +1.31]" in got, got


def _check_knobs(section: str, rows: int) -> None:
    """A section's table of searches against 托管's default on the same deals (`team` in
    bianfeng, the head to head pooled over the variants measured: points and rounds won,
    or "not measured") is what ``report --pair MODEL:600 mix+r+m3:600`` prints for the
    kept deals."""
    found = re.findall(r"^\| [^|]*\(`([\w.+]+)`\) \| (.+) \| (.+) \| (.+) \|$", section, re.M)
    assert len(found) == rows, found
    h2h = [str(path) for path in sorted(KEPT.glob("search24-*.jsonl.gz"))]
    for model, team, heads, won in found:
        pair = ("--pair", f"{model}:600", f"{_M3}:600")
        if team != "not measured":
            cell, deals = team.rsplit(" (", 1)
            got = _report(*pair, str(KEPT / "team-bianfeng.jsonl.gz"))
            assert re.search(rf"team\s+bianfeng\s+{deals[:-1]} deals\s+{re.escape(cell)}\n",
                             got), (model, got)
        if heads == "not measured":
            assert won == heads, (model, won)
            continue
        cell, deals = heads.rsplit(" (", 1)
        got = _report(*pair, *h2h)
        assert re.search(rf"search24\s+pooled\s+{deals[:-1]} deals\s+{re.escape(cell)}\n",
                         got), (model, got)
        shares = re.fullmatch(r"(\S+) % against (\S+) %, (.+)", won)
        assert shares, won
        ours, theirs, difference = shares.groups()
        assert (f"{deals[:-1]} deals rounds won {ours}% against {theirs}%: {difference}"
                in got), (model, got)


def test_the_documented_knobs_are_what_the_kept_deals_give() -> None:
    """The notebook's twelfth stop of issue 34 is what ``report --pair`` prints for the
    kept deals: 1,200 rollouts against 600 on `team`'s bianfeng line, and each knob against
    托管's default on the same deals (its `team` line in bianfeng, its head to head pooled
    over the variants it was measured in: points, and the rounds won)."""
    section = _section("### Three knobs more")
    got = _report("--below", "1000", "--pair", f"{_M3}:1200", f"{_M3}:600",
                  str(KEPT / "team-bianfeng.jsonl.gz"))
    paired = re.search(rf"1,200 - 600, paired: \*\*({_NUM} \[{_NUM}, {_NUM}\])\*\*", section)
    assert paired, "the 1,200 pairing moved: update this test"
    assert re.search(rf"team\s+bianfeng\s+1000 deals\s+{re.escape(paired[1])}\n", got), got
    for line in ("1000 deals rounds won 92.8% against 93.5%: -0.8 pp [-1.9, +0.4]",
                 "short: team bianfeng +2.97 [+2.35, +3.58] (1000)"):
        assert line in got, got
    _check_knobs(section, 3)
    grown = [str(KEPT / f"{line}.jsonl.gz") for line in (
        "cautious-bianfeng", "bomber-fengkuang", "bomber-fengkuang_crazy",
        "bomber-bianfeng_lishui", "bomber-qianbian", "bomber-huopin", "blind-baibian",
        "blind-fengkuang", "blind-bianfeng", "blind-huopin", "hoarder-fengkuang",
        "hoarder-bianfeng", "hoarder-bianfeng_lishui")]
    got = _report("--below", "1000", *grown)
    assert ("panel: 13000 deals, +5.99 [+5.83, +6.15] points per round over the rule policy; "
            "13 of 13 lines meet the target") in got, got


def test_the_documented_ideas_and_the_panel_at_a_thousand_are_what_the_kept_deals_give(
        ) -> None:
    """The notebook's thirteenth stop of issue 34 is what ``report`` prints for the
    kept deals: each idea against 托管's default on the same deals, and the panel pooled at
    1,000 deals, over the eighteen lines grown and over all 35."""
    section = _section("### Three ideas more")
    _check_knobs(section, 3)
    panel = [path for path in sorted(KEPT.glob("*.jsonl.gz"))
             if not path.name.startswith(("search24-", "random-"))]
    assert len(panel) == 35, panel
    grown = re.findall(r"^\| `(\w+)` \| (\w+) \| 1,000 \|", section, re.M)
    assert len(grown) == 18, grown
    for files, pooled in (([KEPT / f"{o}-{v}.jsonl.gz" for o, v in grown],
                           "18000 deals, +8.90 [+8.66, +9.14]"),
                          (panel, "35000 deals, +7.22 [+7.07, +7.36]")):
        got = _report("--below", "1000", *map(str, files))
        assert (f"panel: {pooled} points per round over the rule policy; {len(files)} of "
                f"{len(files)} lines meet the target") in got, got
        assert pooled.split(", ", 1)[1] in section, pooled


def test_the_documented_random_play_and_inference_at_1200_are_what_the_kept_deals_give(
        ) -> None:
    """The notebook's fourteenth stop of issue 34 is what ``report`` prints for the
    kept deals: random play pooled over the seven variants at 1,000 deals, and inference
    from passes at 1,200 rollouts against 1,200 without it and against 托管's 600."""
    section = _section("### Random play at a thousand deals")
    got = _report("--below", "1000", *map(str, sorted(KEPT.glob("random-*.jsonl.gz"))))
    assert "random: 99.7% of 14000 rounds [99.5%, 99.7%]" in got, got
    assert "99.7 % of the 14,000 rounds [99.5, 99.7]" in section
    team = str(KEPT / "team-bianfeng.jsonl.gz")
    for ours, cell in ((f"{_M3}:1200", "-0.16 [-0.70, +0.38]"),
                       (f"{_M3}:600", "-1.21 [-2.06, -0.37]")):
        got = _report("--below", "300", "--pair", "mix+i+r+m3:1200", ours, team)
        assert re.search(rf"team\s+bianfeng\s+300 deals\s+{re.escape(cell)}\n", got), got
        assert cell in section, cell
    got = _report("--below", "300", team)
    for model, line in (("mix+i+r+m3", "+2.07 [+0.96, +3.19]"), (_M3, "+2.24")):
        assert re.search(rf"^{re.escape(model)}\s+1200 r team\s+bianfeng\s+600 .*"
                         rf"{re.escape(line.split()[0])}\s", got, re.M), (model, got)
        assert line in " ".join(section.split()), line


def test_the_documented_head_to_head_at_a_thousand_is_what_the_kept_deals_give() -> None:
    """The notebook's fifteenth stop of issue 34 is what ``report`` prints for the
    kept deals: the head to head against issue 24's search pooled over the seven variants
    at 1,000 deals each, and over their first 276 as the earlier stops had them."""
    section = " ".join(_section("### The head to head at a thousand deals").split())
    h2h = sorted(map(str, KEPT.glob("search24-*.jsonl.gz")))
    assert len(h2h) == 7, h2h
    for below, pooled, shown in (
            ("1000", "53.0% of 14000 rounds [52.2%, 53.8%]; the search team's points per round "
             "+1.32 [+1.10, +1.53] (7000 deals)", ("53.0 % of the 14,000 rounds [52.2, 53.8]",
                                                   "+1.32 [+1.10, +1.53]")),
            ("276", "52.7% of 3864 rounds [51.1%, 54.3%]", ("52.7 % [51.1, 54.3]",))):
        got = _report("--below", below, *h2h).split(f"{_M3} 600 r:", 1)[1]
        assert f"search24: {pooled}" in got, got
        for figure in shown:
            assert figure in section, figure


_CELL = re.compile(rf"({_NUM}) \[({_NUM}), ({_NUM})\] \(n ([\d,]+)\)$|(\d+)% of rounds, ({_NUM}) "
                   rf"\(n ([\d,]+)\)$")
_POOLED = re.compile(rf"Pooled over the panel as the table shows it \(([\d,]+) deals\): ({_NUM}) "
                     rf"\[({_NUM}), ({_NUM})\] points per round over the rule policy; (\d+) of the "
                     rf"(\d+) panel lines")
_HEAD_TO_HEAD = re.compile(rf"Head to head over the seven variants \(([\d,]+) deals\): ({_NUM}) % of "
                           rf"rounds \[({_NUM}), ({_NUM})\], ({_NUM}) \[({_NUM}), ({_NUM})\] points")


def _line(groups: tuple[str, ...], deals: int) -> str:
    """A cell of docs/rounds.md's strength table from a line of ``report`` (one decimal)."""
    if groups[0] in ("search24", "random"):
        return f"{float(groups[3][:-1]):.0f}% of rounds, {float(groups[10]):+.1f} (n {deals:,})"
    gain, low, high = (float(x) for x in groups[7:10])
    return f"{gain:+.1f} [{low:+.1f}, {high:+.1f}] (n {deals:,})"


def test_the_strength_table_in_rounds_is_what_the_kept_deals_give(tmp_path: Path) -> None:
    """docs/rounds.md's strength table against the panel is what ``report`` prints for the
    kept deals, each cell at its own number of deals (``report --below N``), and so is the
    pooled line under it: ``report`` on exactly the panel's deals the table shows."""
    text = (ROOT / "docs" / "rounds.md").read_text().replace("−", "-")
    header, *rows = text.split("| opponent | baibian", 1)[1].split("\n\n", 1)[0].splitlines()
    variants = ["baibian", *header.strip(" |").split(" | ")]
    documented: dict[tuple[str, str], tuple[int, str]] = {}
    for row in rows[1:]:
        opponent, *cells = row.strip(" |").split(" | ")
        for variant, cell in zip(variants, cells, strict=True):
            match = _CELL.search(cell)
            assert match, cell
            deals = int((match[4] or match[7]).replace(",", ""))
            documented[(opponent.strip("`"), variant)] = (deals, cell)
    assert len(documented) == 49, sorted(documented)
    shown = tmp_path / "shown.jsonl"
    with shown.open("w") as out:
        for (opponent, variant), (deals, _) in documented.items():
            if opponent in ("search24", "random"):
                continue
            with gzip.open(KEPT / f"{opponent}-{variant}.jsonl.gz", "rt") as kept:
                for line in kept:
                    deal = json.loads(line)
                    # the table's search only (托管's default): a file keeps others' beside it
                    default = (deal["model"], deal["rollouts"]) == _DEFAULT
                    if default and deal["deal"] < deals:
                        out.write(line)
    files = sorted(map(str, KEPT.glob("*.jsonl.gz")))
    for below in sorted({deals for deals, _ in documented.values()}):
        got = _report("--below", str(below), *files)
        for match in _REPORTED.finditer(got):
            key = (match[1], match[2])
            if documented.get(key, (0,))[0] == below:
                assert _line(match.groups(), int(match[3]) // 2) == documented.pop(key)[1], key
    assert not documented, f"not in {KEPT} with the table's deals: {sorted(documented)}"
    prose = " ".join(text.split())
    pooled, head = _POOLED.search(prose), _HEAD_TO_HEAD.search(prose)
    assert pooled and head, "docs/rounds.md no longer pools the table: update this test"
    got = _report(str(shown))
    count, gain, low, high, meet, lines = pooled.groups()
    assert (f"panel: {count.replace(',', '')} deals, {gain} [{low}, {high}] points per round over "
            f"the rule policy; {meet} of {lines} lines meet the target") in got, got
    count, share, low, high, points, least, most = head.groups()
    got = _report("--below", str(int(count.replace(",", "")) // 7),
                  *map(str, sorted(KEPT.glob("search24-*.jsonl.gz"))))
    assert (f"search24: {share}% of {2 * int(count.replace(',', ''))} rounds [{low}%, {high}%]; "
            f"the search team's points per round {points} [{least}, {most}] "
            f"({count.replace(',', '')} deals)") in got, got


def test_the_documented_eight_ideas_are_what_the_kept_deals_give() -> None:
    """The notebook's sixteenth stop of issue 34 is what ``report`` prints for the
    kept deals: the three settings against 托管's default on the same deals (and the win
    bonus's `team` line in fengkuang_crazy), and 1,200 rollouts head to head pooled over
    the deals each variant holds now, against 600 on the same deals."""
    section = _section("### Eight ideas more")
    _check_knobs(section, 3)
    prose = " ".join(section.split())
    crazy = re.search(rf"and ({_NUM} \[{_NUM}, {_NUM}\]) against `team` in fengkuang_crazy",
                      prose)
    assert crazy, "the win bonus's team line moved: update this test"
    got = _report("--pair", "mix+w80+r+m3:600", f"{_M3}:600",
                  str(KEPT / "team-fengkuang_crazy.jsonl.gz"))
    assert re.search(rf"team\s+fengkuang_crazy\s+300 deals\s+{re.escape(crazy[1])}\n", got), got
    pooled = re.search(rf"\*\*({_NUM}) % of the ([\d,]+) rounds \[({_NUM}), ({_NUM})\]\*\*, the "
                       rf"search team \*\*({_NUM}) \[({_NUM}), ({_NUM})\]\*\*", prose)
    paired = re.search(rf"1,200 - 600: \*\*({_NUM} \[{_NUM}, {_NUM}\])\*\* points per round and "
                       rf"\*\*({_NUM}) percentage points of the rounds won \[({_NUM}), ({_NUM})\]",
                       prose)
    assert pooled and paired, "the 1,200 head to head moved: update this test"
    share, rounds, low, high, points, least, most = pooled.groups()
    h2h = sorted(map(str, KEPT.glob("search24-*.jsonl.gz")))
    got = _report("--below", "1000", "--pair", f"{_M3}:1200", f"{_M3}:600", *h2h)
    deals = int(rounds.replace(",", "")) // 2
    assert (f"search24: {share}% of {deals * 2} rounds [{low}%, {high}%]; the search team's "
            f"points per round {points} [{least}, {most}] ({deals} deals)") in got, got
    cell, pp, pp_low, pp_high = paired.groups()
    assert re.search(rf"search24\s+pooled\s+{deals} deals\s+{re.escape(cell)}\n", got), got
    assert re.search(rf"{deals} deals rounds won {_NUM}% against {_NUM}%: {re.escape(pp)} pp "
                     rf"\[{re.escape(pp_low)}, {re.escape(pp_high)}\]", got), got
