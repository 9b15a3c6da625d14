"""``shuangkou classify | compare | plays | score | generate | variants``: answers, output
forms, exit statuses, and identical output from the local core and from a server
(``--server``, a real server on a loopback port)."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from grpc_helpers import REPLAY, free_port, running_server

from shuangkou import core
from shuangkou.service import cli
from shuangkou.service.commands import main

ROOT = Path(__file__).resolve().parents[1]
HOUSE_TOML = 'id = "my_house"\nextends = "bianfeng"\n' \
             'multiplier = [[5, 2], [6, 4], [7, 8], [8, 16], [9, 32]]\n'


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with running_server() as running:
        yield f"127.0.0.1:{running.port}"


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("commands")
    paths = {"house": d / "house.toml", "replay": d / "replay.json",
             "summary": d / "summary.json", "generated": d / "generated.json",
             "two": d / "two.json", "clash": d / "clash.json", "bad": d / "bad.json"}
    paths["house"].write_text(HOUSE_TOML)
    paths["replay"].write_text(json.dumps(REPLAY))
    paths["summary"].write_text(json.dumps(
        {"variant": "baibian", "finish_order": [0, 2], "stake": 2,
         "bombs": [{"seat": 0, "cards": "7777777"}, {"seat": 1, "cards": "8888"}]}))
    paths["generated"].write_text(json.dumps(core.generate_replay("bianfeng", 7)))
    paths["two"].write_text(json.dumps({"variants": {
        "a": {"extends": "baibian", "chain_min_links": 2}, "b": {"extends": "a"}}}))
    paths["clash"].write_text(json.dumps({"id": "huopin", "extends": "baibian"}))
    paths["bad"].write_text('{"finish_order": [0, 2], "bombs": [{"seat": 0, "cards": "77"}]}')
    paths["folder"] = d / "house_variants"
    paths["folder"].mkdir()
    return paths


def run(*argv: str) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of one command, in process."""
    out, err = io.StringIO(), io.StringIO()
    old = sys.stderr
    sys.stderr = err
    try:
        try:
            status = main(list(argv), out)
        except SystemExit as exc:   # argparse: usage errors
            status = int(exc.code or 0)
    finally:
        sys.stderr = old
    return status, out.getvalue(), err.getvalue()


def ok(*argv: str) -> str:
    status, out, err = run(*argv)
    assert status == 0, err
    return out


# Every command form, each run locally and against the server.
CASES = [
    ["classify", "45678 BJ"],
    ["classify", "45678 BJ", "--declare", "straight:8", "--json"],
    ["classify", "3333 BJ BJ", "--variant", "fengkuang"],
    ["compare", "33", "7777"],
    ["compare", "77777 88888 99999", "3333 4444 5555 6666", "--variant", "huopin", "--json"],
    ["compare", "7777", "33"],
    ["plays", "33 44 55 66 77 BJ", "--beat", "55", "--counts"],
    ["plays", "33 44 55 66 77 BJ", "--json", "--kind", "pair_chain", "--max-cards", "6"],
    ["plays", "3 4 5 6 7 8 9 T J Q K A 2 SJ BJ", "--limit", "7"],
    ["plays", "7777 8888 9999 BJ", "--bombs-only", "--variant", "bianfeng"],
    ["score", "{replay}"],
    ["score", "{generated}", "--json"],
    ["score", "{summary}"],
    ["variants"],
    ["variants", "qianbian"],
    ["variants", "{house}", "--json"],
    ["variants", "{two}"],
    ["classify", "4444 BJ", "--variant", "{house}", "--json"],
    ["score", "{summary}", "--variant", "b", "--variants", "{two}"],
    # bad input: exit 1 with the same one-line message
    ["classify", "3S 4"],
    ["classify", "3333", "--variant", "nope"],
    ["compare", "33", "44", "--declare", "bomb"],
    ["plays", "3S 3S 3S 3S 3S", "--variant", "baibian"],
    ["score", "{bad}"],
    ["variants", "{clash}"],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) for c in CASES])
def test_local_and_server_print_the_same(argv: list[str], server: str,
                                         files: dict[str, Path]) -> None:
    args = [a.format(**files) for a in argv]
    local = run(*args)
    remote = run(*args, "--server", server)
    assert local == remote
    status, out, err = local
    if status == 0:
        assert out and not err
        if "--json" in args:
            json.loads(out)
    else:
        assert status == 1 and not out
        assert err.count("\n") == 1 and err.startswith(f"shuangkou {args[0]}: ")


def test_classify_answers_as_the_core() -> None:
    data = json.loads(ok("classify", "45678 BJ", "--json"))
    c = core.classify("45678 BJ", "baibian")
    assert data["reading"]["text"] == "straight 456789 (wild as 9)"
    assert [r["text"] for r in data["readings"]] == [r.describe() for r in c.readings]
    assert data["cards"] == ["4", "5", "6", "7", "8", "BJ"]
    declared = json.loads(ok("classify", "45678 BJ", "--declare", "straight:8", "--json"))
    assert declared["reading"]["text"] == "straight 345678 (wild as 3)"
    assert ok("classify", "45678 BJ").splitlines() == [
        "cards     4 5 6 7 8 BJ",
        "stands    straight 456789 (wild as 9)",
        "readings  straight 456789 (wild as 9)",
        "          straight 345678 (wild as 3)"]


def test_compare() -> None:
    assert ok("compare", "33", "7777") == "yes: bomb 7777 (4 stars) beats pair 33\n"
    assert ok("compare", "7777", "33") == "no: pair 33 does not beat bomb 7777 (4 stars)\n"
    data = json.loads(ok("compare", "4444 5555 6666", "3333333", "-v", "fengkuang", "--json"))
    assert data["beats"] is True and data["current"]["kind"] == "chain_bomb"
    assert data["play"]["text"] == core.classify("3333333", "fengkuang").primary.describe()


def test_plays_leading_and_following() -> None:
    lead = json.loads(ok("plays", "33 44 55 66 77 BJ", "--limit", "0", "--counts", "--json"))
    plays = core.legal_plays("33 44 55 66 77 BJ", "baibian")
    assert [p["cards"] for p in lead["plays"]] == [list(p.text) for p in plays]
    assert lead["counts"] == core.count_plays("33 44 55 66 77 BJ", "baibian")
    assert sum(lead["counts"].values()) == len(plays) and not lead["truncated"]
    follow = ok("plays", "33 44 55 66 77 BJ", "--beat", "55").splitlines()
    assert follow == ["6 6   pair 66", "6 BJ  pair 66 (wild as 6)", "7 7   pair 77",
                      "7 BJ  pair 77 (wild as 7)", "4 plays"]
    capped = json.loads(ok("plays", "33 44 55 66 77 BJ", "--limit", "3", "--json"))
    assert len(capped["plays"]) == 3 and capped["truncated"]
    assert ok("plays", "33", "--beat", "BJ BJ").splitlines() == ["0 plays"]


def test_score_replay_and_summary(files: dict[str, Path]) -> None:
    data = json.loads(ok("score", str(files["replay"]), "--json"))
    assert data == core.score_replay(REPLAY).to_dict()
    summary = json.loads(ok("score", str(files["summary"]), "--json"))
    expected = core.score_round("baibian", [0, 2], [["7777777"], ["8888"], [], []], stake=2)
    assert summary["final"] == list(expected.final)
    text = ok("score", str(files["summary"])).splitlines()
    assert text[0] == "baibian: double win for team 0; finish order 0 2; stake 2"
    assert text[1].split() == ["seat", "team", "place", "base", "star", "mult", "contrib",
                               "final"]
    # stdin
    out = subprocess.run([sys.executable, "-m", "shuangkou.service", "score", "-", "--json"],
                         input=json.dumps(REPLAY), capture_output=True, text=True, cwd=ROOT,
                         timeout=60, check=True).stdout
    assert json.loads(out) == data


def test_generate_is_seeded_and_scores(files: dict[str, Path]) -> None:
    out = ok("generate", "--variant", "qianbian", "--seed", "5", "-n", "3")
    lines = out.splitlines()
    assert len(lines) == 3
    assert [json.loads(line) for line in lines] == [
        core.generate_replay("qianbian", seed) for seed in (5, 6, 7)]
    assert out == ok("generate", "--variant", "qianbian", "--seed", "5", "-n", "3")
    for line in lines:
        core.score_replay(line)
    house = json.loads(ok("generate", "--variant", str(files["house"])))
    assert core.score_replay(house).variant == "my_house"


def test_variants(files: dict[str, Path]) -> None:
    rows = json.loads(ok("variants", "--json"))
    assert [v["id"] for v in rows] == list(core.BUILTIN)
    listed = ok("variants", "--variants", str(files["house"])).splitlines()
    assert listed[0].split() == ["id", "name", "extends", "decks", "hand", "wild"]
    assert listed[-1].split()[:1] == ["my_house"] and "bianfeng" in listed[-1]
    shown = json.loads(ok("variants", str(files["house"]), "--json"))
    assert shown["multiplier"][-1] == [9, 32] and shown["extends"] == "bianfeng"
    assert len(json.loads(ok("variants", str(files["two"]), "--json"))) == 2


@pytest.mark.parametrize(("argv", "status", "message"), [
    (["classify", "3S 4"], 1, "two cards of different ranks are not a pair"),
    (["classify", "33", "--variant", "nope"], 1, "unknown variant 'nope'"),
    (["classify", "33", "--declare", "quad"], 2, "--declare: 'quad' is not a play type"),
    (["classify", "33", "--declare", "pair:Z"], 2, "--declare: 'Z' is not a rank"),
    (["plays", "33", "--kind", "quad"], 2, "--kind: 'quad' is not a play type"),
    (["score", "/nonexistent/replay.json"], 2, "cannot read /nonexistent/replay.json"),
    (["score", "{summary}", "--variant", "{two}"], 2, "defines 2 variants (a, b)"),
    (["variants", "{clash}"], 1, "may not take the built-in id 'huopin'"),
    (["generate", "--escape", "2"], 2, "--escape a probability"),
    (["classify", "33", "--variants", "/nonexistent.toml"], 2, "does not exist"),
    (["classify", "33", "--variants", "{folder}"], 2, "is a folder: a house variant file is"),
    (["compare", "33", "44", "--variant", "{folder}"], 2, "is a folder"),
    (["variants", "{folder}"], 2, "is a folder"),
])
def test_errors_are_one_line(argv: list[str], status: int, message: str,
                             files: dict[str, Path]) -> None:
    got, out, err = run(*[a.format(**files) for a in argv])
    assert (got, out) == (status, "")
    assert err.count("\n") == 1 and err.startswith(f"shuangkou {argv[0]}: ") and message in err


def test_usage_errors_exit_2() -> None:
    for argv in (["classify"], ["plays", "33", "--limit", "x"], ["compare", "33"]):
        status, out, err = run(*argv)
        assert status == 2 and not out and "usage: shuangkou" in err


def test_unreachable_server_exits_2() -> None:
    port = free_port()   # nothing listens there
    status, out, err = run("classify", "33", "--server", f"127.0.0.1:{port}")
    assert status == 2 and not out
    assert err.count("\n") == 1 and f"server 127.0.0.1:{port}: UNAVAILABLE" in err


def test_server_list_target(server: str) -> None:
    """``--server host:port,host:port`` spreads calls over a fixed list."""
    port = server.rsplit(":", 1)[1]
    assert ok("classify", "33", "--server", f"localhost:{port},127.0.0.1:{port}") \
        == ok("classify", "33")


def test_shuangkou_command_line() -> None:
    """The installed entry point dispatches to the commands and lists them in --help."""
    assert cli.main(["compare", "33", "44"]) == 0
    done = subprocess.run([sys.executable, "-m", "shuangkou.service", "--help"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    for name in ("classify", "compare", "plays", "score", "generate", "variants"):
        assert name in done.stdout
    done = subprocess.run([sys.executable, "-m", "shuangkou.service", "classify", "45678 BJ", "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout)["reading"]["kind"] == "straight"


def test_rule_set_adapter_names_ids_and_inline_house_variants(files: dict[str, Path]) -> None:
    """shuangkou.service.client names a rule set with the ``RuleSet`` message: an id as is, a house
    variant inline as the JSON of its data (extending its built-in)."""
    from shuangkou.service.client import _rule_set
    from shuangkou.v1 import service_pb2

    assert _rule_set("huopin").id == "huopin"
    house = core.load_variant(files["house"])
    inline = json.loads(_rule_set(house).custom_json)
    assert inline["id"] == "my_house" and inline["extends"] == "bianfeng"
    for request in (service_pb2.ClassifyPlayRequest, service_pb2.GetVariantRequest):
        request(rule_set=_rule_set("huopin"))
        request(rule_set=_rule_set(house))


# ----------------------------------------------------------------------------- issue 21's smaller items

def test_generate_refuses_escapes_a_variant_cannot_settle() -> None:
    status, out, err = run("generate", "--escape", "0.5", "-n", "2")
    assert status == 2 and out == ""
    assert "baibian defines no escape settlement" in err and "huopin" in err
    replays = ok("generate", "--escape", "1", "-n", "2", "--variant", "huopin").splitlines()
    for line in replays:
        assert core.score_replay(line).escaper is not None


def test_score_of_json_lines_points_to_score_replays(tmp_path: Path) -> None:
    path = tmp_path / "rounds.jsonl"
    path.write_text(json.dumps(REPLAY) + "\n" + json.dumps(REPLAY) + "\n")
    status, _, err = run("score", str(path))
    assert status == 1 and "Extra data" in err and "shuangkou score-replays" in err


def test_help_has_no_markup() -> None:
    for argv in ([], ["serve"], ["score-replays"], *([c] for c in cli.ONE_OFF_COMMANDS)):
        done = subprocess.run([sys.executable, "-m", "shuangkou.service", *argv, "--help"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        for markup in ("``", ":func:", ":class:", ":data:", ":mod:"):
            assert markup not in done.stdout, (argv, markup)


def test_a_house_variant_never_shows_its_parents_name(tmp_path: Path) -> None:
    path = tmp_path / "club.toml"
    path.write_text('[variants.club]\nextends = "bianfeng"\nchain_min_links = 2\n\n'
                    '[variants.club_fast]\nextends = "club"\nmultiplier = [[5, 2], [6, 4]]\n')
    shown = {v["id"]: v for v in json.loads(ok("variants", str(path), "--json"))}
    assert shown["club"]["name"] == "club"
    assert shown["club"]["source"] == "house variant extending bianfeng"
    assert shown["club_fast"]["name"] == "club_fast"
    assert shown["club_fast"]["source"] == "house variant extending club"
    assert shown["club_fast"]["chain_min_links"] == 2      # the parent's rules still apply
    assert shown["club_fast"]["extends"] == "bianfeng"     # the built-in at the root


def test_a_dask_run_that_cannot_start_writes_no_manifest(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from shuangkou.service.batch import archive, command

    def unreachable(address: str, timeout: float = 30.0) -> None:
        raise archive.ClusterError(f"cannot reach the Dask scheduler {address}")

    monkeypatch.setattr(archive, "dask_client", unreachable)
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(REPLAY) + "\n")
    out = tmp_path / "out"
    assert command.main(["--dask", "127.0.0.1:1", "--output-dir", str(out), str(source)]) == 2
    assert not (out / archive.MANIFEST).exists()


def test_the_repository_root_tracks_no_stray_output() -> None:
    root = Path(__file__).resolve().parents[1]
    tracked = subprocess.run(["git", "ls-files"], cwd=root, capture_output=True, text=True,
                             timeout=60).stdout.split()
    top = {name for name in tracked if "/" not in name}
    assert not [n for n in top if n.endswith((".jsonl", ".json.gz", ".jsonl.gz"))], top
    assert all((root / n).stat().st_size > 0 for n in top if (root / n).is_file()), top


# ----------------------------------------------------------------------------- issue 62's newcomer items

SHUANGKOU = str(Path(sys.executable).with_name("shuangkou"))


def _sk(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([SHUANGKOU, *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, timeout=120)


def test_dash_o_names_the_output_in_every_command(tmp_path: Path) -> None:
    """README: "-o FILE names an output file in every command" (review and generate refused
    it): each command that prints an answer writes the same answer to FILE, stdout empty;
    view writes its page, play saves its replay, score-replays its records."""
    (tmp_path / "round.json").write_text(json.dumps(core.generate_replay("baibian", 3)))
    (tmp_path / "day.jsonl").write_text(json.dumps(core.generate_replay("huopin", 4)) + "\n")
    for argv in (["classify", "45678 BJ"], ["compare", "33", "44", "--json"],
                 ["plays", "33 44 BJ", "--counts"], ["score", "round.json"],
                 ["generate", "-n", "2", "--seed", "5"], ["variants"], ["variants", "huopin"],
                 ["review", "round.json", "--rollouts", "4"],
                 ["score-replays", "day.jsonl", "-j", "1"]):
        printed = _sk(*argv, cwd=tmp_path)
        assert printed.returncode == 0, (argv, printed.stderr)
        written = _sk(*argv, "-o", "answer.txt", cwd=tmp_path)
        assert written.returncode == 0 and written.stdout == "", (argv, written.stderr)
        answer = (tmp_path / "answer.txt").read_text(encoding="utf-8")
        if argv[0] == "review":         # the review's own timing differs run to run
            answer, printed.stdout = (re.sub(r"in [\d.]+ s", "", x)
                                      for x in (answer, printed.stdout))
        assert answer == printed.stdout, argv
    assert _sk("view", "round.json", "-o", "page.html", cwd=tmp_path).returncode == 0
    assert (tmp_path / "page.html").read_text().startswith("<!DOCTYPE html>")
    played = _sk("play", "--seed", "1", "-o", "saved.json", cwd=tmp_path, stdin="q\n")
    assert played.returncode == 0, played.stderr
    assert json.loads((tmp_path / "saved.json").read_text())["variant"] == "baibian"
    refused = _sk("classify", "33", "-o", str(tmp_path / "no" / "such" / "dir"), cwd=tmp_path)
    assert refused.returncode == 2 and "cannot write" in refused.stderr


# A `shuangkou` with a bug planted in the rules' answers and in the batch scorer's records:
# the real commands must crash with status 70 and their traceback.
CRASHING = """import sys
from shuangkou.service import commands
from shuangkou.service.batch import records

def bug(*args, **kwargs):
    raise KeyError("planted")

commands.LocalRules.classify = bug
records.Block.score = bug
from shuangkou.service.cli import main
sys.exit(main())
"""


def test_one_exit_status_per_kind_of_failure_across_commands(tmp_path: Path) -> None:
    """service/exits.py: 1 bad input, 2 bad usage / an unreadable file / an unreachable
    server, 3 lines rejected, 70 a crash: the same in every command (the same impossible
    replay exited 2 from review and 1 from score; a crash exited 1, as rejected lines)."""
    impossible = dict(REPLAY, actions=REPLAY["actions"][:1])
    (tmp_path / "impossible.json").write_text(json.dumps(impossible))
    (tmp_path / "day.jsonl").write_text(json.dumps(impossible) + "\n")
    cases: list[tuple[list[str], int]] = [
        (["score", "impossible.json"], 1),
        (["review", "impossible.json"], 1),
        (["classify", "33 44 55"], 0),
        (["classify", "ZZ"], 1),
        (["score", "missing.json"], 2),
        (["review", "missing.json"], 2),
        (["view", "missing.json"], 2),
        (["score-replays", "missing.jsonl"], 2),
        (["review-replays", "missing.jsonl", "--output-dir", "out"], 2),
        (["classify"], 2),
        (["review"], 2),
        (["score-replays", "--resume"], 2),
        (["play", "--seed", "-1"], 2),
        (["classify", "33", "--server", f"127.0.0.1:{free_port()}"], 2),
        (["score-replays", "day.jsonl", "--server", f"127.0.0.1:{free_port()}"], 2),
        (["score-replays", "day.jsonl", "-j", "1"], 3),
        (["review-replays", "day.jsonl", "--output-dir", "out", "-j", "1"], 3),
    ]
    for argv, status in cases:
        done = _sk(*argv, cwd=tmp_path)
        assert done.returncode == status, (argv, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr, argv
    for argv in (["classify", "33"], ["score-replays", "day.jsonl", "-j", "1"]):
        done = subprocess.run([sys.executable, "-c", CRASHING, *argv], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 70, (argv, done.stderr)
        assert "KeyError: 'planted'" in done.stderr and "internal error" in done.stderr


def test_the_wrong_shape_of_input_says_which_command_reads_it(tmp_path: Path) -> None:
    """A replay printed for people given to score-replays ("730 replays, 0 scored, 730
    rejected", no word of `shuangkou score`) or review-replays; an archive given to review
    (a JSON parser's error, no word of --line) or view."""
    doc = core.generate_replay("baibian", 3)
    (tmp_path / "pretty.json").write_text(json.dumps(doc, indent=2))
    lines = json.dumps(doc, indent=2).count("\n") + 1
    done = _sk("score-replays", "pretty.json", "-j", "1", cwd=tmp_path)
    assert done.returncode == 3
    assert f"pretty.json is one JSON document over {lines:,} lines" in done.stderr
    assert "`shuangkou score pretty.json`" in done.stderr and "jq -c" in done.stderr
    done = _sk("review-replays", "pretty.json", "--output-dir", "out", "-j", "1", cwd=tmp_path)
    assert done.returncode == 3 and "`shuangkou review pretty.json`" in done.stderr
    assert _sk("score", "pretty.json", cwd=tmp_path).returncode == 0
    (tmp_path / "day.jsonl").write_text(json.dumps(doc) + "\n" + json.dumps(doc) + "\n")
    done = _sk("review", "day.jsonl", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.count("\n") == 1
    assert "day.jsonl holds 2 JSON lines" in done.stderr and "--line N" in done.stderr
    assert "shuangkou review-replays day.jsonl --output-dir DIR" in done.stderr
    done = _sk("view", "day.jsonl", "-o", "page.html", cwd=tmp_path)
    assert done.returncode == 0 and "view one with --line N" in done.stderr
    assert "--line" not in _sk("review", "pretty.json", "--rollouts", "4", cwd=tmp_path).stderr


def test_server_pointed_at_a_url_or_the_http_port_says_so(tmp_path: Path) -> None:
    """`--server http://localhost:50051` and `--server` at the HTTP port gave gRPC's raw
    errors ("Misformatted domain name", "Trying to connect an http1.x server")."""
    from shuangkou.service.batch import command as batch

    (tmp_path / "day.jsonl").write_text(json.dumps(REPLAY) + "\n")
    with running_server(http=True) as s:
        status, out, err = run("classify", "33", "--server", f"http://127.0.0.1:{s.port}")
        assert status == 2 and not out
        assert f"not a URL: --server 127.0.0.1:{s.port}" in err and "Misformatted" not in err
        status, _, err = run("classify", "33", "--server", "http://localhost:8080")
        assert status == 2 and "8080 is the HTTP port's default" in err
        for argv in (["classify", "33"], ["score-replays", "day.jsonl", "-j", "1"],
                     ["play", "--seed", "1"]):
            done = _sk(*argv, "--server", f"localhost:{s.http_port}", cwd=tmp_path,
                       stdin="q\n")
            assert done.returncode == 2, (argv, done.stderr)
            assert (f"localhost:{s.http_port} answers HTTP/1.1, not gRPC: is it the HTTP "
                    "port? --server takes the gRPC port") in done.stderr, (argv, done.stderr)
            done = _sk(*argv, "--server", f"http://localhost:{s.port}", cwd=tmp_path)
            assert done.returncode == 2 and "not a URL" in done.stderr, (argv, done.stderr)
        assert batch.main([str(tmp_path / "day.jsonl"), "--server", f"127.0.0.1:{s.port}",
                           "-j", "1"]) == 0                      # the gRPC port: scored
