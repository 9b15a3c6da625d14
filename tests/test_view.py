"""``shuangkou view`` and ``score-replays --view-rejected``: the page of a round rendered in
headless Chromium (Debian's ``chromium``, which scripts/setup-env.sh installs; driven by
Playwright, which never downloads a browser) for a round of every variant.

Each page is opened from disk with JavaScript on and off, at a desktop width and a phone's;
screenshots are taken (``build/screenshots/``); the DOM is checked for each trick (its
leader, its actions, who took it: against the twin in tests/round_twin.py), each play's
cards and standing reading, the wild jokers marked, and the settlement terms equal to
``shuangkou score --json``'s; a rejected replay marks its first illegal action with the
reason ``score-replays`` gives. Nothing is fetched: every request the page makes is counted.
"""

from __future__ import annotations

import html
import json
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from round_twin import twin_tricks

from shuangkou import core

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "build" / "screenshots"
README_SHOT = ROOT / "docs" / "images" / "round-page.png"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# What Chromium needs here: no sandbox as root, no GPU, and none of its own network traffic
# (docs: the machine's network is closed, so background connections only fail).
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
DESKTOP = {"width": 1000, "height": 1400}
PHONE = {"width": 390, "height": 844}
VARIANTS = list(core.BUILTIN)


def shuangkou(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "shuangkou.service", *argv], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def showcase(variant: str) -> dict[str, Any]:
    """A seeded round of ``variant`` with a bomb and a wild joker in a standing reading
    (the first such seed), so the page shows both."""
    for seed in range(60):
        replay = core.generate_replay(variant, seed)
        story = core.summarize_replay(replay)
        wilds = any(r.wilds for r in twin_tricks(replay)[1].values())
        if any(story.bombs) and wilds:
            return replay
    raise AssertionError(f"no seed below 60 gives {variant} a bomb and a wild")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), ("Debian's chromium is missing: bash scripts/setup-env.sh "
                                     "installs it")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Opened:
    """A page opened from disk, with the requests it made."""

    def __init__(self, browser: Any, path: Path, *, js: bool, viewport: dict[str, int]) -> None:
        self.context = browser.new_context(java_script_enabled=js, viewport=viewport)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.goto(path.as_uri())

    def close(self) -> None:
        self.context.close()

    def all(self, selector: str, script: str) -> Any:
        return self.page.eval_on_selector_all(selector, script)


def view(tmp_path: Path, replay: dict[str, Any] | str, name: str) -> Path:
    src = tmp_path / f"{name}.json"
    src.write_text(replay if isinstance(replay, str) else json.dumps(replay), encoding="utf-8")
    out = tmp_path / f"{name}.html"
    done = shuangkou("view", src.name, "-o", out.name, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("\n") == 1 and str(out.name) in done.stderr
    return out


STEPS = """els => els.map(e => ({index: +e.dataset.index, seat: +e.dataset.seat,
    kind: e.dataset.kind, cards: e.dataset.cards, reading: e.dataset.reading,
    wilds: e.querySelectorAll('.c .as').length, text: e.innerText}))"""
TRICKS = """els => els.map(e => ({leader: +e.dataset.leader, lead: e.dataset.lead,
    won: e.dataset.wonBy === '' ? null : +e.dataset.wonBy,
    steps: [...e.querySelectorAll('li.step[data-kind]')].map(s => +s.dataset.index)}))"""
TERMS = """els => els.map(e => Object.fromEntries([['seat', +e.dataset.seat],
    ...[...e.querySelectorAll('td[data-term]')].map(t => [t.dataset.term, t.innerText])]))"""


WIDE = """w => [...document.querySelectorAll('*')].filter(e =>
    e.getBoundingClientRect().right > w && !e.closest('.scroll')).map(e =>
    e.tagName + '.' + e.className + ' ' + e.getBoundingClientRect().right).slice(0, 5)"""


def _number(text: str) -> int | None:
    return None if text in ("–", "") else int(text.replace("−", "-").replace(",", ""))


def check_round(opened: Opened, replay: dict[str, Any], scored: dict[str, Any]) -> None:
    """The DOM against the replay, the twin's tricks and ``score``'s settlement."""
    tricks, readings = twin_tricks(replay)
    shown = opened.all("li.trick", TRICKS)
    assert shown == [{"leader": t.leader, "lead": t.lead, "won": t.won_by, "steps": t.actions}
                     for t in tricks]
    steps = opened.all("li.step[data-kind]", STEPS)
    assert [s["index"] for s in steps] == list(range(len(replay["actions"])))
    for s, a in zip(steps, replay["actions"], strict=True):
        assert s["seat"] == a["seat"]
        if "play" in a:
            codes = core.parse_cards(a["play"])
            assert (s["kind"], s["cards"]) == ("play", " ".join(core.format_cards(codes)))
            reading = readings[s["index"]]
            assert s["reading"] == reading.describe() and s["reading"] in s["text"]
            assert s["wilds"] == len(reading.wilds)
        else:
            assert s["kind"] == ("pass" if a.get("pass") else "escape")
    # the settlement: every term as `shuangkou score --json` gives it
    terms = opened.all("#settlement tr[data-seat]", TERMS)
    assert len(terms) == 4
    for row, seat in zip(terms, scored["seats"], strict=True):
        assert row["seat"] == seat["seat"]
        for name in ("team", "place", "base", "star", "multiplier", "contribution", "escape",
                     "final"):
            assert _number(row[name]) == seat[name], (name, row, seat)
        assert _number(row["dealt"]) == seat["dealt_seat"]
    section = opened.page.eval_on_selector("#settlement", "e => ({...e.dataset})")
    assert int(section["multiplier"]) == scored["multiplier"]
    assert int(section["star"]) == scored["star"] and int(section["stake"]) == scored["stake"]
    assert int(section["total"]) == scored["total"]
    formulas = opened.all("#settlement ul.formulas li", "els => els.map(e => e.innerText)")
    for text, seat in zip(formulas, scored["seats"], strict=True):
        assert _number(text.rsplit("= ", 1)[1]) == seat["final"]
    events = opened.all("#settlement ul.events li", "els => els.length")
    assert (events or 0) == len(scored["contributions"])
    kind = opened.page.eval_on_selector("#verdict", "e => e.dataset.kind")
    assert kind == scored["kind"]
    assert opened.requests == [opened.page.url], "the page fetched something"


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("variant", VARIANTS)
def test_round_page_in_chromium(browser: Any, tmp_path: Path, variant: str) -> None:
    replay = showcase(variant)
    page = view(tmp_path, replay, variant)
    scored = json.loads(shuangkou("score", str(page.with_suffix(".json")), "--json").stdout)
    html = page.read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html and " src=" not in html
    SHOTS.mkdir(parents=True, exist_ok=True)
    for js, viewport, label in ((True, DESKTOP, "desktop"), (False, PHONE, "phone-nojs")):
        opened = Opened(browser, page, js=js, viewport=viewport)
        try:
            check_round(opened, replay, scored)
            width = opened.page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport["width"], (f"{label}: {width}px wide", opened.page.evaluate(
                WIDE, viewport["width"]))
            player_shown = opened.page.eval_on_selector("#player", "e => !e.hidden")
            assert player_shown is js
            shot = SHOTS / f"round-{variant}-{label}.png"
            opened.page.screenshot(path=str(shot), full_page=not js)
            assert png_size(shot)[0] == viewport["width"]
        finally:
            opened.close()


def test_stepping_through_with_javascript(browser: Any, tmp_path: Path) -> None:
    replay = showcase("fengkuang")
    page = view(tmp_path, replay, "steps")
    opened = Opened(browser, page, js=True, viewport=PHONE)
    try:
        p = opened.page
        p.click("#player .toggle")
        p.click("#player .next")
        p.click("#player .next")
        assert p.eval_on_selector("li.step.current", "e => +e.dataset.index") == 2
        hands = opened.all("#player .hands .hand", "els => els.map(e => "
                           "[...e.querySelectorAll('[data-card]')].map(c => c.dataset.card))")
        r = core.Round.deal(replay["variant"], replay["hands"], replay["leader"],
                            revealed=replay.get("revealed"), teams=replay.get("teams"))
        for a in replay["actions"][:3]:
            if "play" in a:
                r.play(a["seat"], a["play"], a.get("declare") and core.Declaration(
                    a["declare"], a.get("declare_top")))
            else:
                r.pass_turn(a["seat"])
        assert hands == [core.format_cards(sorted(r.hand(s))) for s in range(4)]
        p.keyboard.press("End")
        last = len(replay["actions"]) - 1
        assert p.eval_on_selector("li.step.current", "e => +e.dataset.index") == last
        p.click(f"#a{last - 1}")
        assert p.eval_on_selector("li.step.current", "e => +e.dataset.index") == last - 1
        p.screenshot(path=str(SHOTS / "round-steps-phone.png"))
    finally:
        opened.close()


def test_escaped_round_page(browser: Any, tmp_path: Path) -> None:
    replay = core.generate_replay("qianbian", 4, 1.0)
    page = view(tmp_path, replay, "escape")
    scored = json.loads(shuangkou("score", str(page.with_suffix(".json")), "--json").stdout)
    assert scored["kind"] == "escape"
    opened = Opened(browser, page, js=False, viewport=DESKTOP)
    try:
        check_round(opened, replay, scored)
        assert "escapes (逃跑)" in opened.page.inner_text("li.step.escape")
    finally:
        opened.close()


def _rejected(variant: str) -> tuple[dict[str, Any], int]:
    replay = showcase(variant)
    at = next(i for i, a in enumerate(replay["actions"]) if i >= 30 and "play" in a)
    replay["actions"][at]["play"] = ["BJ"] * 5      # more big jokers than any hand holds
    return replay, at


def test_rejected_replay_marks_the_first_illegal_action(browser: Any, tmp_path: Path) -> None:
    replay, at = _rejected("bianfeng")
    page = view(tmp_path, replay, "rejected")
    record = json.loads(shuangkou("score-replays", str(page.with_suffix(".json")),
                                  "--no-progress").stdout)
    assert record["ok"] is False and record["error"]["action"] == at
    opened = Opened(browser, page, js=False, viewport=PHONE)
    try:
        p = opened.page
        marked = p.eval_on_selector("#rejected", "e => ({...e.dataset, text: e.innerText})")
        assert int(marked["index"]) == at and marked["reason"] == record["error"]["reason"]
        assert record["error"]["reason"] in marked["text"]
        assert record["error"]["reason"] in p.inner_text("#verdict")
        steps = opened.all("li.step[data-kind]", "els => els.map(e => +e.dataset.index)")
        assert steps == list(range(at))                 # everything before it, nothing after
        assert p.inner_text("#settlement").strip().endswith("rejected.")
        assert p.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
        p.screenshot(path=str(SHOTS / "round-rejected-phone.png"))
    finally:
        opened.close()


def test_score_replays_writes_a_page_per_rejected_line(browser: Any, tmp_path: Path) -> None:
    lines = [json.dumps(core.generate_replay("huopin", s)) for s in range(6)]
    bad, at = _rejected("huopin")
    lines[2] = json.dumps(bad)
    lines[4] = '{"variant": "huopin", "hands": "no"}'
    archive = tmp_path / "day.jsonl"
    archive.write_text("\n".join(lines) + "\n")
    pages = tmp_path / "pages"
    done = shuangkou("score-replays", "day.jsonl", "--no-progress", "-j", "1",
                     "--view-rejected", "pages", cwd=tmp_path)
    assert done.returncode == 3                  # complete, some lines rejected
    assert "2 pages of rejected lines" in done.stderr and "index.html" in done.stderr
    records = [json.loads(x) for x in done.stdout.splitlines()]
    index = json.loads((pages / "index.json").read_text())
    assert [(p["line"], p["action"], p["reason"]) for p in index["pages"]] == [
        (n + 1, r["error"].get("action"), r["error"]["reason"])
        for n, r in enumerate(records) if not r["ok"]]
    assert sorted(x.name for x in pages.glob("*.html")) == sorted(
        ["index.html", "day.jsonl-3.html", "day.jsonl-5.html"])
    opened = Opened(browser, pages / "index.html", js=False, viewport=PHONE)
    try:
        links = opened.all("a[href]", "els => els.map(e => e.getAttribute('href'))")
        assert links == ["day.jsonl-3.html#rejected", "day.jsonl-5.html#rejected"]
        opened.page.click("a[href^='day.jsonl-3']")
        assert int(opened.page.eval_on_selector("#rejected", "e => e.dataset.index")) == at
    finally:
        opened.close()
    # an archive scored into partitions: the same pages, named the same
    arch = shuangkou("score-replays", "day.jsonl", "--no-progress", "-j", "1",
                     "--output-dir", "out", "--view-rejected", "pages2", "--view-limit", "1",
                     cwd=tmp_path)
    assert "1 pages of rejected lines (the first 1 of 2)" in arch.stderr
    assert (tmp_path / "pages2" / "day.jsonl-3.html").read_text() == \
        (pages / "day.jsonl-3.html").read_text()
    usage = shuangkou("score-replays", "-", "--view-rejected", str(pages))
    assert usage.returncode == 2 and "--view-rejected" in usage.stderr


REVIEWED = """els => els.map(e => ({index: +e.dataset.index, verdict: e.dataset.verdict,
    loss: e.dataset.loss, best: e.dataset.best,
    tag: (e.querySelector('.review .tag.rv') || {}).innerText,
    loss_text: (e.querySelector('.review .loss') || {}).innerText || '',
    alt: (e.querySelector('.review .alt') || {}).innerText || ''}))"""
SEAT_TERMS = """els => els.map(e => Object.fromEntries([['seat', +e.dataset.seat],
    ...[...e.querySelectorAll('td[data-term]')].map(t => [t.dataset.term, t.innerText])]))"""
REVIEW_ROLLOUTS = "24"   # per decision: the page's test, not the review's figures


def _review_json(replay_file: Path) -> dict[str, Any]:
    """The review ``view --review`` draws, computed apart by the core with the same budget
    and seed."""
    from dataclasses import replace

    from shuangkou.core.review import DEFAULT_REVIEW, review

    budget = replace(DEFAULT_REVIEW, rollouts=int(REVIEW_ROLLOUTS))
    data: dict[str, Any] = review(replay_file.read_text(), budget=budget, seed=4).to_dict()
    return data


def test_reviewed_round_page_in_chromium(browser: Any, tmp_path: Path) -> None:
    """``view --review``: every action carries its verdict and loss, the best alternative
    beside it when it was not taken; the graph has a point per action and a dot per
    inaccuracy, mistake or blunder; the seat summary is the review's; nothing is fetched,
    with or without JavaScript, and a phone needs no sideways scrolling."""
    replay = showcase("qianbian")
    src = tmp_path / "reviewed.json"
    src.write_text(json.dumps(replay), encoding="utf-8")
    done = shuangkou("view", src.name, "-o", "reviewed.html", "--review", "--rollouts",
                     REVIEW_ROLLOUTS, "--seed", "4", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith("; reviewed")
    want = _review_json(src)
    page = tmp_path / "reviewed.html"
    html = page.read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html and " src=" not in html
    scored = json.loads(shuangkou("score", src.name, "--json", cwd=tmp_path).stdout)
    for js, viewport, label in ((True, DESKTOP, "desktop"), (False, PHONE, "phone-nojs")):
        opened = Opened(browser, page, js=js, viewport=viewport)
        try:
            check_round(opened, replay, scored)      # the page is still the round's page
            shown = opened.all("li.step[data-kind]", REVIEWED)
            assert [s["index"] for s in shown] == [d["index"] for d in want["decisions"]]
            for s, d in zip(shown, want["decisions"], strict=True):
                assert s["verdict"] == d["verdict"] and float(s["loss"]) == \
                    pytest.approx(d["loss"], abs=0.005)
                assert s["tag"].split()[0] == d["verdict"]
                best = d["candidates"][d["best"]]
                assert s["best"] == (" ".join(best["cards"]) if best["kind"] == "play"
                                     else best["kind"])
                if d["verdict"] == "forced" or best["points"] is None:
                    assert not s["loss_text"]
                else:
                    assert s["loss_text"].startswith("loss ")
                    assert bool(s["alt"]) is (not best["taken"])
            graph = opened.page.eval_on_selector("#eval-graph", """e => ({
                points: +e.dataset.points,
                vertices: e.querySelector('polyline').getAttribute('points').split(' ').length,
                dots: [...e.querySelectorAll('circle')].map(c => +c.dataset.index)})""")
            valued = [d for d in want["decisions"] if d["eval_team0"] is not None]
            assert graph["points"] == graph["vertices"] == len(valued)
            assert graph["dots"] == [d["index"] for d in valued
                                     if d["verdict"] in ("inaccuracy", "mistake", "blunder")]
            seats = opened.all("#review tr[data-seat]", SEAT_TERMS)
            for row, s in zip(seats, want["seats"], strict=True):
                assert row["seat"] == s["seat"] and int(row["decisions"]) == s["decisions"]
                assert int(row["blunders"]) == s["blunders"]
                assert int(row["mistakes"]) == s["mistakes"]
                if s["mean_loss"] is not None:
                    assert float(row["mean_loss"]) == pytest.approx(s["mean_loss"], abs=0.005)
                if s["loss_share"] is not None:
                    assert row["loss_share"] == f'{s["loss_share"]:.0%}'
            section = opened.page.eval_on_selector("#review", "e => ({...e.dataset})")
            assert section == {"rollouts": REVIEW_ROLLOUTS, "seed": "4",
                               "width": str(want["width"])}
            width = opened.page.evaluate("document.documentElement.scrollWidth")
            assert width <= viewport["width"], (label, opened.page.evaluate(
                WIDE, viewport["width"]))
            opened.page.eval_on_selector("#review", "e => e.scrollIntoView()")
            opened.page.screenshot(path=str(SHOTS / f"round-review-{label}.png"))
        finally:
            opened.close()


def test_review_options_and_a_rejected_replay(tmp_path: Path) -> None:
    replay, _ = _rejected("baibian")
    (tmp_path / "bad.json").write_text(json.dumps(replay))
    done = shuangkou("view", "bad.json", "--review", "--rollouts", "4", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr.strip().endswith("; not reviewed")
    assert 'id="review"' not in (tmp_path / "bad.html").read_text()
    usage = shuangkou("view", "bad.json", "--rollouts", "4", cwd=tmp_path)
    assert usage.returncode == 2 and "go with --review" in usage.stderr
    for argv, says in ((["--fair-play"], "go with --review"),
                       (["--review", "--decoys", "2"], "go with --fair-play"),
                       (["--review", "--fair-play", "--decoys", "0"], "decoys must be")):
        usage = shuangkou("view", "bad.json", *argv, cwd=tmp_path)
        assert usage.returncode == 2 and says in usage.stderr, (argv, usage.stderr)


FAIR = """els => els.map(e => ({index: +e.dataset.index,
    views: [...e.querySelectorAll('.fair .ev')].map(v => ({view: v.dataset.view,
        regret: +v.dataset.regret, excess: +v.dataset.excess, text: v.innerText})),
    tuoguan: (e.querySelector('.fair .tg') || {dataset: {}}).dataset.taken || null,
    tells: [...e.querySelectorAll('.fair .tl')].map(t => t.dataset.tell),
    blocked: (e.querySelector('.fair .bk') || {dataset: {}}).dataset.blocked || null,
    conceded: (e.querySelector('.fair .cd') || {dataset: {}}).dataset.conceded || null}))"""
FAIR_ROWS = """els => els.map(e => Object.fromEntries([['row', e.dataset.team ?? e.dataset.seat],
    ...[...e.querySelectorAll('td[data-term]')].map(t => [t.dataset.term, t.innerText])]))"""


def test_fair_play_on_the_reviewed_page(browser: Any, tmp_path: Path) -> None:
    """``view --review --fair-play``: each action shows the evidence of each view that
    carried some, its tell, its chance to block and 托管's choice where it is not the rule
    policy's, as the core's
    review
    (computed apart) has them; the fair-play section the round's scores per partnership and seat and
    the caveats; a phone needs no sideways scrolling. Without --fair-play, none of it."""
    from dataclasses import replace

    from shuangkou.core.review import DEFAULT_REVIEW, review
    from shuangkou.service.review.fair import CAVEATS, engine_tells, evidence_of, round_fair

    replay = {**core.generate_replay("huopin", 5), "players": ["ann", "bo", "cy", "di"]}
    src = tmp_path / "fair.json"
    src.write_text(json.dumps(replay), encoding="utf-8")
    done = shuangkou("view", src.name, "-o", "fair.html", "--review", "--fair-play",
                     "--rollouts", "60", "--decoys", "2", "--fair-deals", "3", "--seed", "4",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    budget = replace(DEFAULT_REVIEW, rollouts=60, decoys=2, fair_deals=3)
    want = review(src.read_text(), budget=budget, seed=4, fair=True).to_dict()
    scores = round_fair(want["decisions"], want["result"]["final"])
    opened = Opened(browser, tmp_path / "fair.html", js=False, viewport=PHONE)
    try:
        shown = opened.all("li.step[data-kind]", FAIR)
        for s, d in zip(shown, want["decisions"], strict=True):
            carried = [e for e in evidence_of(d) if e.carries]
            assert [v["view"] for v in s["views"]] == [e.kind for e in carried]
            for v, e in zip(s["views"], carried, strict=True):
                assert v["regret"] == pytest.approx(e.regret, abs=0.005)
                assert v["excess"] == pytest.approx(e.excess, abs=0.005)
            assert s["tuoguan"] == engine_tells(d)
            assert s["tells"] == [t["kind"] for t in (d["tell"], d["opponents_tell"])
                                  if t is not None]
            over = d["over_partner"]
            assert s["blocked"] == (None if over is None else str(over).lower())
            given = d["concedes"]
            assert s["conceded"] == (None if given is None else str(given).lower())
        assert "false" in {s["blocked"] for s in shown}
        assert any(s["views"] for s in shown) and any(s["tuoguan"] for s in shown)
        assert {k for s in shown for k in s["tells"]} == {"lead", "follow", "beat"}
        rows = opened.all("#fair-play tr[data-team], #fair-play tr[data-seat]", FAIR_ROWS)
        made = [*scores.hand_sharing, *scores.full_sight]
        assert len(rows) == len(made) == 6
        for row, r in zip(rows, made, strict=True):
            assert int(row["decisions"]) == (r.decisions if r is not None else 0)
        # the partnerships' tells, then the seats' sight scores
        for row, t in zip(rows, [*scores.tells, *scores.sight], strict=True):
            assert int(row["tells"]) == (t.decisions if t is not None else 0)
        for row, t in zip(rows[2:], scores.engine, strict=True):
            assert (int(row["departs"]), int(row["engine"]), int(row["rule"])) == \
                (t.departs, t.engine, t.rule)
            assert t.engine + t.rule <= t.departs
        for row, b in zip(rows[2:], scores.give_ups, strict=True):
            assert (int(row["blocks"]), int(row["chances"]), int(row["concessions"]),
                    int(row["to_concede"])) == (b.blocks, b.chances, b.concessions,
                                                b.to_concede)
        text = opened.page.inner_text("#fair-play")
        assert all(c.split(":")[0] in text for c in CAVEATS) and "ann" in text
        width = opened.page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], opened.page.evaluate(WIDE, PHONE["width"])
    finally:
        opened.close()
    plain = shuangkou("view", src.name, "-o", "plain.html", "--review", "--rollouts", "24",
                      cwd=tmp_path)
    assert plain.returncode == 0, plain.stderr
    page = (tmp_path / "plain.html").read_text(encoding="utf-8")
    assert 'id="fair-play"' not in page and 'class="fair"' not in page


def test_the_page_names_every_verdict_of_the_review() -> None:
    from shuangkou.core.review import VERDICTS
    from shuangkou.service.view import page

    assert set(page._VERDICT_TEXT) == set(VERDICTS)
    assert set(page._MARKED) < set(VERDICTS)


def test_a_hostile_player_name_is_escaped_on_the_reviewed_page() -> None:
    """Player ids come from the replay: escaped and isolated like every other input text."""
    from shuangkou.core.review import Review, ReviewBudget, SeatSummary
    from shuangkou.core.story import story_of
    from shuangkou.service.view.page import render

    replay = core.generate_replay("baibian", 1)
    story = story_of(json.dumps(replay))
    evil = "<script>alert(1)</script>\u202e"
    players = (evil, "b", "c", "d")
    review = Review("baibian", ReviewBudget(rollouts=1), 0, False, False, players, (),
                    tuple(SeatSummary(s, players[s], 0, 0, None, None, 0, 0, 0, None, None,
                                      None) for s in range(4)),
                    (0, 0, 0, 0), 0, 0, 0.0)
    html = render(story, review=review)
    assert "<script>alert" not in html
    assert "<bdi>&lt;script&gt;alert(1)&lt;/script&gt;\u202e</bdi>" in html


def test_view_reads_one_line_of_an_archive(tmp_path: Path) -> None:
    import gzip

    lines = [json.dumps(core.generate_replay("baibian", s)) for s in range(3)]
    with gzip.open(tmp_path / "a.jsonl.gz", "wt") as f:
        f.write("\n".join(lines) + "\n")
    done = shuangkou("view", "a.jsonl.gz", "--line", "2", cwd=tmp_path)
    assert done.returncode == 0 and "a-2.html" in done.stderr
    assert "a.jsonl.gz line 2" in (tmp_path / "a-2.html").read_text()
    assert shuangkou("view", "a.jsonl.gz", "--line", "9", cwd=tmp_path).returncode == 2
    assert shuangkou("view", "missing.json", cwd=tmp_path).returncode == 2
    out = subprocess.run([sys.executable, "-m", "shuangkou.service", "view", "-"],
                         input="not json", capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("<!DOCTYPE html>")
    assert "rejected as a whole: not valid JSON" in out.stderr


@pytest.mark.parametrize("cut", [1, 200, 1001])
def test_a_cut_off_replay_says_so(cut: int) -> None:
    """A replay file truncated mid-write or mid-copy (the end of its JSON missing, even
    inside a string) gets a page that says it was cut off and shows where its text ends."""
    from shuangkou.service.view.page import page_of

    text = json.dumps(core.generate_replay("baibian", 4), indent=1)[:-cut]
    story, page = page_of(text, "round.json")
    assert story.rejection is not None and story.rejection.action is None
    assert "The replay is cut off: its text ends after" in page
    assert html.escape(text[-40:]) in page and "not a JSON object" not in page


@pytest.mark.parametrize("text, words", [
    ("", "The replay is empty"),
    ('{"variant": 1,, "hands": []}', "The replay is not valid JSON: Expecting"),
    ("[1, 2]", "The replay is JSON but not an object"),
])
def test_a_replay_that_is_no_json_object_says_what_it_is(text: str, words: str) -> None:
    from shuangkou.service.view.page import page_of

    assert words in page_of(text, "round.json")[1]


def test_readme_shows_a_screenshot_the_suite_makes(browser: Any, tmp_path: Path) -> None:
    """docs/images/round-page.png is this test's screenshot (the page of a bianfeng round
    with a multiplier and contributions, at the desktop width, from its bombs to its
    settlement), committed; the README shows it. The suite writes it afresh to
    build/screenshots/ on every run (copy it over to refresh the committed one)."""
    replay = core.generate_replay("bianfeng", 2)
    result = core.score_replay(replay)
    assert result.multiplier > 1 and result.contributions
    page = view(tmp_path, replay, "bianfeng-round")
    opened = Opened(browser, page, js=False, viewport={"width": 1000, "height": 1000})
    try:
        shot = SHOTS / "round-page.png"
        top = opened.page.eval_on_selector("#bombs", "e => e.getBoundingClientRect().top")
        opened.page.screenshot(path=str(shot), full_page=True,
                               clip={"x": 0, "y": top - 8, "width": 1000, "height": 1000})
    finally:
        opened.close()
    assert png_size(shot) == png_size(README_SHOT) == (1000, 1000)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/images/round-page.png" in readme
