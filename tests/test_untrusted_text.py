"""Untrusted text shown to people (issue 33, item 7): a house variant's name and source
holding terminal control sequences reach ``shuangkou variants`` (from a file, and with
``--server`` from a real server) and ``shuangkou play`` escaped, through the one escaping
function (service/shown.py); on the round page a right-to-left override in a name stays
inside the name (headless Chromium); ``score-replays --view-rejected`` names the pages of
two input files apart whatever their names."""

from __future__ import annotations

import html
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from grpc_helpers import ServerProcess

from shuangkou import core
from shuangkou.service.batch.pages import page_name
from shuangkou.service.shown import shown

#: What the issue sent: a window title (OSC 0 … BEL), a screen clear, an OSC 8 link, a C1
#: CSI, a carriage return, and a right-to-left override.
HOSTILE_NAME = ("evil\x1b]0;owned\x07 \x1b[2J\x1b]8;;http://x.example\x1b\\link\x1b]8;;\x1b\\"
                " \x9b31m\rRLO\u202eemosewa")
HOSTILE_SOURCE = "src\x1b[31mred\x07"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def _house(tmp: Path, name: str = HOSTILE_NAME) -> Path:
    path = tmp / "hostile.json"
    path.write_text(json.dumps({"id": "hostile", "extends": "bianfeng", "name": name,
                                "source": HOSTILE_SOURCE}), encoding="utf-8")
    return path


def shuangkou(*argv: str, stdin: str = "", cwd: Path | None = None
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shuangkou.service", *argv], input=stdin,
                          capture_output=True, text=True, timeout=120, cwd=cwd)


def _no_raw_controls(text: str) -> None:
    for ch in RAW:
        assert ch not in text, (ch, text)


def test_shown_escapes_controls_and_keeps_the_rest() -> None:
    assert shown("a\x1b[2Jb\x07") == "a\\x1b[2Jb\\x07"
    assert shown("x\u202ey\x9b\u2066z") == "x\\u202ey\\u009b\\u2066z"
    assert shown("百变双扣 · ok") == "百变双扣 · ok"
    assert shown("one\ntwo\tthree") == "one\\x0atwo\\x09three"       # a name fakes no line
    assert shown("one\ntwo\tthree\r", lines=True) == "one\ntwo\tthree\\x0d"
    document = json.dumps({"name": HOSTILE_NAME}, ensure_ascii=False)
    assert json.loads(shown(document, lines=True)) == {"name": HOSTILE_NAME}


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server that loaded the hostile house variant: its names reach clients."""
    path = _house(tmp_path_factory.mktemp("house"))
    server = ServerProcess("--port", "0", "--metrics-port", "0", "--variants", str(path))
    try:
        server.wait_serving()
        yield f"127.0.0.1:{server.port}"
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("where", ["file", "server"])
def test_variants_prints_hostile_names_escaped(tmp_path: Path, hostile_server: str,
                                               where: str) -> None:
    path = _house(tmp_path)
    given = ["--variants", str(path)] if where == "file" else ["--server", hostile_server]
    listed = shuangkou("variants", *given)
    shown_one = shuangkou("variants", "hostile", *given)
    as_json = shuangkou("variants", "hostile", "--json", *given)
    for done in (listed, shown_one, as_json):
        assert done.returncode == 0, done.stderr
        _no_raw_controls(done.stdout + done.stderr)
    assert shown(HOSTILE_NAME) in listed.stdout and shown(HOSTILE_NAME) in shown_one.stdout
    assert shown(HOSTILE_SOURCE) in shown_one.stdout
    assert json.loads(as_json.stdout)["name"] == HOSTILE_NAME     # the data itself, intact


def test_play_prints_a_hostile_name_escaped(tmp_path: Path) -> None:
    done = shuangkou("play", "--variant", str(_house(tmp_path)), "--seed", "3", "--delay",
                     "0", "--no-color", stdin="q\n")
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[0]
    assert head == f"shuangkou play · {shown(HOSTILE_NAME)} (hostile) · seed 3"
    _no_raw_controls(done.stdout + done.stderr)


def test_page_names_are_one_per_input_file() -> None:
    names = ["day.jsonl", "x/day.jsonl", "x_day.jsonl", "../../day.jsonl", "./day.jsonl",
             "-", "stdin", "a" * 300, "a" * 301, "x y.jsonl", "x_y.jsonl"]
    pages = [page_name(n, 3) for n in names]
    assert len(set(pages)) == len(pages), pages
    assert pages[0] == "day.jsonl-3.html" and pages[2] == "x_day.jsonl-3.html"
    assert all(len(p) < 200 and "/" not in p for p in pages)
    assert page_name("x/day.jsonl", 3) == pages[1]          # the same on every run


def test_view_rejected_writes_a_page_per_input_file(tmp_path: Path) -> None:
    """``x/day.jsonl``, ``x_day.jsonl``, ``day.jsonl`` and ``../../day.jsonl``: one rejected
    line each, four pages, each the page of its own file."""
    work = tmp_path / "a" / "b"
    (work / "x").mkdir(parents=True)
    inputs = {"x/day.jsonl": "x", "x_day.jsonl": "x_", "day.jsonl": "plain",
              "../../day.jsonl": "up"}
    for name, tag in inputs.items():
        (work / name).write_text(json.dumps({"variant": "huopin", "hands": tag}) + "\n")
    done = shuangkou("score-replays", *inputs, "--no-progress", "-j", "1", "--view-rejected",
                     "pages", cwd=work)
    assert done.returncode == 3, done.stderr             # complete, lines rejected
    index = json.loads((work / "pages" / "index.json").read_text())
    assert [p["file"] for p in index["pages"]] == list(inputs)
    pages = [p["page"] for p in index["pages"]]
    assert len(set(pages)) == 4 and "day.jsonl-1.html" in pages
    for entry in index["pages"]:
        page = (work / "pages" / entry["page"]).read_text(encoding="utf-8")
        assert html.escape(f'"hands": "{inputs[entry["file"]]}"') in page, entry
        assert f'replay: <bdi>{html.escape(entry["file"])} line 1</bdi>' in page, entry


NAME_BOXES = """() => {
  const h = document.querySelector('h1'), [name, id] = h.querySelectorAll('bdi');
  const box = e => e.getBoundingClientRect();
  return {name: name.textContent, id: id.textContent, nameRight: box(name).right,
          idLeft: box(id).left, text: h.innerText,
          isolated: getComputedStyle(name).unicodeBidi};
}"""


def test_a_right_to_left_override_in_a_name_stays_in_the_name(tmp_path: Path) -> None:
    """The page of a replay of a house variant named with U+202E: the name is isolated, so
    the heading's own text after it (the id) is laid out after it, left to right."""
    from playwright.sync_api import sync_playwright
    from test_view import ARGS, CHROMIUM, DESKTOP

    name = "RLO \u202eemosewa"          # short: the heading holds it on one line
    variant = core.load_variant(_house(tmp_path, name))
    replay: dict[str, Any] = core.generate_replay(variant, 1)
    from shuangkou.service.api.convert import variant_document

    replay["variant"] = variant_document(variant)
    src = tmp_path / "rtl.json"
    src.write_text(json.dumps(replay), encoding="utf-8")
    done = shuangkou("view", src.name, "-o", "rtl.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _no_raw_controls(done.stderr)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_context(java_script_enabled=False, viewport=DESKTOP).new_page()
            page.goto((tmp_path / "rtl.html").as_uri())
            boxes = page.evaluate(NAME_BOXES)
            title = page.title()
        finally:
            browser.close()
    assert boxes["name"] == name and boxes["id"] == "hostile"
    assert boxes["isolated"] == "isolate"
    assert boxes["idLeft"] >= boxes["nameRight"] - 1, boxes   # the id after the name
    assert boxes["text"].endswith("(hostile)"), boxes
    assert "\u2068" + name + "\u2069" in title


def test_score_replays_prints_a_hostile_file_name_escaped(tmp_path: Path) -> None:
    name = "day\x1b]0;owned\x07\u202e.jsonl"
    (tmp_path / name).write_text('{"variant": "huopin", "hands": "no"}\n')
    done = shuangkou("score-replays", name, "--no-progress", "-j", "1", "--view-rejected",
                     "pages\x1b[2J", cwd=tmp_path)
    assert done.returncode == 3, done.stderr             # complete, lines rejected
    _no_raw_controls(done.stdout + done.stderr)
    assert shown("pages\x1b[2J") in done.stderr
    missing = shuangkou("score-replays", "gone\x1b[2J.jsonl", "--no-progress", cwd=tmp_path)
    assert missing.returncode == 2 and "gone\\x1b[2J.jsonl" in missing.stderr
    _no_raw_controls(missing.stderr)


#: Player ids may hold markup (core_ext/replay.py check_players refuses only controls).
MARKUP_PLAYERS = ['<img src=x onerror="alert(1)">', "</td></table><script>x()</script>",
                  "a&b", "d'quote\""]


def test_fair_play_page_and_summary_escape_what_the_replays_and_files_hold(
        tmp_path: Path) -> None:
    """Fair play reaches the page (``view --review --fair-play``: names in the fair-play
    section, isolated and escaped) and the terminal (``review-replays --fair-play``: a
    thrown round is named by its file, here one with control sequences in its name)."""
    replay = {**core.generate_replay("bianfeng", 2), "players": MARKUP_PLAYERS}
    (tmp_path / "r.json").write_text(json.dumps(replay), encoding="utf-8")
    done = shuangkou("view", "r.json", "--review", "--fair-play", "--rollouts", "12",
                     "--decoys", "1", "--fair-deals", "2", "-o", "r.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    section = page[page.index('<section id="fair-play">'):]
    section = section[:section.index("</section>")]
    for name in MARKUP_PLAYERS:
        assert f"<bdi>{html.escape(name)}</bdi>" in section
        assert name not in page
    name = "day\x1b]0;owned\x07\u202e.jsonl"
    (tmp_path / name).write_text("\n".join(
        json.dumps({**core.generate_replay("bianfeng", s), "players": ["a", "b", "c", "d"]})
        for s in range(2)) + "\n")
    done = shuangkou("review-replays", name, "--output-dir", "out", "--fair-play",
                     "--rollouts", "12", "--decoys", "1", "--fair-deals", "2", "--no-oracle",
                     "-j", "1", "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    _no_raw_controls(done.stdout + done.stderr)
    assert f"({shown(name)} line " in done.stderr              # the thrown round's file
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    notes = [p["thrown_rounds"]["note"] for p in summary["fair_play"]["players"].values()
             if p["thrown_rounds"]["note"]]     # a player who never blocked names no round
    assert notes and all(f"({name} line " in n for n in notes)            # the data itself, intact
