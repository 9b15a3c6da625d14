"""``shuangkou score-replays`` (service/batch/) end to end on small JSONL files."""

from __future__ import annotations

import copy
import io
import json
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shuangkou.core.generate import generate_replay
from shuangkou.core.replay import score_replay
from shuangkou.service import inputs
from shuangkou.service.batch import command as batch
from shuangkou.service.batch import progress
from shuangkou.service.batch.records import score_line


def _replays() -> list[str]:
    """Valid replays of several variants, then bad ones of every kind."""
    good = [generate_replay(v, seed) for v, seed in
            (("baibian", 1), ("fengkuang_crazy", 2), ("huopin", 3), ("qianbian", 4))]
    escaped = generate_replay("bianfeng", 5, escape_prob=1.0)
    bad_card = copy.deepcopy(good[0])
    i = next(i for i, a in enumerate(bad_card["actions"]) if "play" in a and i > 2)
    bad_card["actions"][i]["play"] = ["ZZ"]
    refused = generate_replay("baibian", 6, escape_prob=1.0)
    return [json.dumps(r) for r in (*good, escaped)] + [
        json.dumps(bad_card),                      # error at action i
        "{not json",                               # malformed as a whole
        "",                                        # empty line
        json.dumps(refused),                       # baibian escape: refused at its index
        json.dumps(good[1]),
    ]


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return _replays()


@pytest.fixture()
def jsonl(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "replays.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _records(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines()]


def _expected(line: str) -> dict:
    return {"ok": True, **score_replay(line).to_dict()}


def check_records(records: list[dict], lines: list[str]) -> None:
    assert len(records) == len(lines)
    for k in (0, 1, 2, 3, 4, 9):
        assert records[k] == _expected(lines[k])
    assert records[4]["kind"] == "escape"
    bad = records[5]["error"]
    assert records[5]["ok"] is False and bad["action"] >= 3 and "ZZ" in bad["reason"]
    assert records[6] == {"ok": False, "error": {"reason": records[6]["error"]["reason"]}}
    assert "not valid JSON" in records[6]["error"]["reason"]
    assert "empty line" in records[7]["error"]["reason"] and "action" not in records[7]["error"]
    refused = json.loads(lines[8])
    assert records[8]["error"]["action"] == len(refused["actions"]) - 1
    assert "no escape" in records[8]["error"]["reason"]


def test_one_worker(jsonl: Path, lines: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert batch.main([str(jsonl), "--jobs", "1"]) == 3      # some records are errors
    out, err = capsys.readouterr()
    check_records(_records(out), lines)
    assert "10 replays, 6 scored" in err and "4 rejected" in err
    assert "\r" not in err                                    # no progress bar off a terminal


def test_pool_keeps_the_order(jsonl: Path, lines: list[str],
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert batch.main([str(jsonl), "--jobs", "2", "--chunk-size", "3"]) == 3
    out, err = capsys.readouterr()
    check_records(_records(out), lines)
    assert "2 workers" in err


def test_stdin_and_several_files(jsonl: Path, lines: list[str], monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(lines[0] + "\n"))
    assert batch.main(["-", str(jsonl), "--jobs", "1"]) == 3
    records = _records(capsys.readouterr().out)
    assert records[0] == _expected(lines[0])
    check_records(records[1:], lines)


def test_all_valid_exits_zero(tmp_path: Path, lines: list[str],
                              capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_text(lines[0] + "\n" + lines[1], encoding="utf-8")   # no final newline
    assert batch.main([str(path), "-j", "1"]) == 0
    assert len(_records(capsys.readouterr().out)) == 2


def test_progress_bar_on_a_terminal(jsonl: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    monkeypatch.setattr(progress, "PROGRESS_INTERVAL", 0.0)
    batch.main([str(jsonl), "--jobs", "1"])
    text = tty.getvalue()
    assert "\r[" in text and "ETA" in text and "/s" in text and "10/10" in text
    assert text.rstrip().splitlines()[-1].startswith("score-replays: 10 replays")
    tty2 = Tty()
    monkeypatch.setattr(sys, "stderr", tty2)
    batch.main([str(jsonl), "--jobs", "1", "--no-progress"])
    assert "\r" not in tty2.getvalue()


def test_unreadable_file_and_bad_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert batch.main([str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        batch.main(["--jobs", "0", str(tmp_path)])
    assert info.value.code == 2


def test_dash_o_is_the_records_file(tmp_path: Path, jsonl: Path, lines: list[str],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """``-o`` names an output FILE here as in ``view``: ``score-replays a.jsonl -o
    scores.jsonl`` writes the records there (never a directory); a folder is refused with
    the way to an archive (--output-dir), and so is an input file as the output."""
    out = tmp_path / "scores.jsonl"
    assert batch.main([str(jsonl), "-o", str(out), "-j", "1"]) == 3
    assert out.is_file() and capsys.readouterr().out == ""
    check_records(_records(out.read_text()), lines)
    (tmp_path / "folder").mkdir()
    with pytest.raises(SystemExit) as info:
        batch.main([str(jsonl), "-o", str(tmp_path / "folder")])
    assert info.value.code == 2 and "--output-dir" in capsys.readouterr().err
    assert batch.main([str(jsonl), "-o", str(jsonl)]) == 2
    assert "also an input" in capsys.readouterr().err
    assert jsonl.read_text().splitlines() == lines               # untouched


def test_an_output_file_inside_the_input_folder_resumes(
        tmp_path: Path, lines: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``score-replays IN -o IN/records.jsonl --resume``: the records file is never read as
    replays, so a rerun resumes where the first run stopped."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "replays.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = folder / "records.jsonl"
    assert batch.main([str(folder), "-o", str(out), "-j", "1"]) == 3
    whole = out.read_text()
    out.write_text(whole[:whole.index("\n") + 1])        # interrupted after one record
    capsys.readouterr()
    assert batch.main([str(folder), "-o", str(out), "--resume", "-j", "1"]) == 3
    assert out.read_text() == whole
    assert f"{len(lines) - 1} replays" in capsys.readouterr().err


def test_shuangkou_cli_dispatch(jsonl: Path, lines: list[str],
                                capsys: pytest.CaptureFixture[str]) -> None:
    from shuangkou.service import cli

    assert cli.main(["score-replays", str(jsonl), "--jobs", "1"]) == 3
    check_records(_records(capsys.readouterr().out), lines)


def test_server_delegates_to_remote(jsonl: Path, lines: list[str],
                                    monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    calls = []

    def score_remote(items, target, streams):   # a stand-in for service.batch.remote
        calls.append((target, streams))
        for line in items:
            yield json.loads(score_line(line))

    monkeypatch.setitem(sys.modules, "shuangkou.service.batch.remote",
                        types.SimpleNamespace(score_remote=score_remote,
                                                  parse_targets=lambda t: [t]))
    assert batch.main([str(jsonl), "--server", "127.0.0.1:1", "--jobs", "3"]) == 3
    out, err = capsys.readouterr()
    check_records(_records(out), lines)
    assert calls == [("127.0.0.1:1", 3)] and "server 127.0.0.1:1" in err


def test_score_line_internal_errors_do_not_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    from shuangkou import core

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaputt")

    monkeypatch.setattr(core.replay, "score_replay", boom)
    monkeypatch.setattr(core.replay, "score_replay_json", boom)   # the records' JSON path
    rec = json.loads(score_line('{"variant": "baibian"}'))
    assert rec == {"ok": False, "error": {"reason": "internal error: RuntimeError: kaputt",
                                          "internal": True}}


def test_server_failure_is_reported(jsonl: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    def score_remote(items, target, streams):
        yield json.loads(score_line(next(iter(items))))
        raise ConnectionError("server gone")

    monkeypatch.setitem(sys.modules, "shuangkou.service.batch.remote",
                        types.SimpleNamespace(score_remote=score_remote,
                                                  parse_targets=lambda t: [t]))
    assert batch.main([str(jsonl), "--server", "127.0.0.1:1"]) == 2   # not "rejected" (3)
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 1
    assert "server 127.0.0.1:1 failed after 1 records: ConnectionError: server gone" in err


def test_server_records_equal_local_records(jsonl: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """End to end over loopback: the service scores the file into the same records."""
    pytest.importorskip("shuangkou.service.batch.remote")
    from grpc_helpers import running_server

    assert batch.main([str(jsonl), "--jobs", "1"]) == 3
    local = capsys.readouterr().out
    with running_server() as srv:
        assert batch.main([str(jsonl), "--server", f"127.0.0.1:{srv.port}", "--jobs", "2"]) == 3
    remote = capsys.readouterr().out
    assert _records(remote) == _records(local)


@pytest.mark.parametrize("chunk", [1, 2, 3, 50])
def test_file_ranges_cut_at_line_ends(jsonl: Path, chunk: int) -> None:
    data = jsonl.read_bytes()
    ranges = list(inputs.byte_ranges(str(jsonl), chunk))
    assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    assert all(data[end - 1:end] == b"\n" for _, end in ranges)


def test_crlf_and_no_final_newline(tmp_path: Path, lines: list[str],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "crlf.jsonl"
    path.write_bytes("\r\n".join(lines[:3]).encode())
    assert batch.main([str(path), "--jobs", "2", "--chunk-size", "1"]) == 0
    records = _records(capsys.readouterr().out)
    assert records == [_expected(line) for line in lines[:3]]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"\n", b"\r", b"\xe4", b"\xb8", b"\xad", b"\xff",
                                 b"\xc3\xa9", b"\xf0\x9f", b"\x98\x80", b"\xed\xa0"]),
                max_size=24), st.integers(1, 7))
def test_lines_are_decoded_as_if_one_by_one(parts: list[bytes], block: int) -> None:
    """split_lines decodes a block at once: the same lines as cutting at \n, dropping a
    CRLF's \r and decoding each line alone (its slow twin), bad UTF-8 included; a stream
    read in blocks of any size gives them too."""
    data = b"".join(parts)
    raw = data.split(b"\n")
    if raw[-1] == b"":
        raw.pop()
    want = [(r[:-1] if r.endswith(b"\r") else r).decode("utf-8", errors="replace")
            for r in raw]
    assert inputs.split_lines(data) == want
    stream = io.BytesIO(data)
    stream.read1 = lambda n=-1: io.BytesIO.read(stream, min(block, n))  # type: ignore[method-assign]
    assert list(inputs.stream_lines(stream)) == want


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\xe4\xb8\xad", b"\xff"]),
                max_size=40), st.integers(1, 9))
def test_lines_over_the_limit_are_counted_not_held(parts: list[bytes], limit: int) -> None:
    """With the limit (and so the block) at ``limit`` bytes: every line over it is a
    LongLine of its size, every other line as before, wherever the blocks cut."""
    data = b"".join(parts)
    raw = data.split(b"\n")
    if raw[-1] == b"":
        raw.pop()
    want: list[inputs.Line] = [                 # a size counts a CRLF's \r too
        inputs.LongLine(len(r)) if len(r) > limit else
        (r[:-1] if r.endswith(b"\r") else r).decode("utf-8", "replace") for r in raw]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(inputs, "MAX_LINE_BYTES", limit)
        m.setattr(inputs, "BLOCK", limit)
        assert list(inputs.stream_lines(io.BytesIO(data))) == want


def test_every_reader_splits_lines_the_same_way(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """One line splitter (service/inputs.py) for the local pool's readers (byte
    ranges, whole files, gzip, stdin) and the archive's partitions (plain and gzipped): a
    line ends at \\n, a CRLF ending's \\r is dropped (JSON whitespace), a lone \\r stays."""
    import gzip

    from shuangkou.service.batch import partitions

    data = b"a\r\nb\rc\n"
    want = ["a", "b\rc"]
    plain, packed = tmp_path / "x.jsonl", tmp_path / "x.jsonl.gz"
    plain.write_bytes(data)
    with gzip.open(packed, "wb") as f:
        f.write(data)
    assert inputs.split_lines(data) == want
    assert list(inputs.read_range(str(plain), 0, len(data))) == want     # the pool's ranges
    assert list(inputs.file_lines(str(plain))) == want
    assert list(inputs.file_lines(str(packed))) == want
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), newline=""))
    assert list(inputs.file_lines("-")) == want
    monkeypatch.setattr(sys, "stdin", io.StringIO(data.decode(), newline=""))
    assert list(inputs.file_lines("-")) == want                          # a text stand-in
    files = inputs.expand([str(plain), str(packed)])
    for f in files:                                                       # the archive's
        parts = partitions.plan([f], 1)
        assert [x for p in parts for x in partitions.read_partition(f, p)] == want
        assert [x for _, chunk in partitions.read_sequential(f, parts) for x in chunk] == want


def test_gzip_globs_and_directories_on_stdout(tmp_path: Path, lines: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import gzip

    (tmp_path / "d").mkdir()
    with gzip.open(tmp_path / "d" / "x.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    (tmp_path / "y.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert batch.main([str(tmp_path / "d"), str(tmp_path / "*.jsonl"), "-j", "2",
                       "--chunk-size", "4"]) == 3
    records = _records(capsys.readouterr().out)
    check_records(records[:len(lines)], lines)
    check_records(records[len(lines):], lines)
    assert batch.main([str(tmp_path / "nothing*.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_archive_progress_on_a_terminal_and_local_dask(jsonl: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    out = tmp_path / "out"
    assert batch.main([str(jsonl), "--output-dir", str(out), "--partition-lines", "3",
                       "--dask", "local:1"]) == 3
    text = tty.getvalue()
    assert "\r[" in text and "4/4 partitions" in text and "10/10 lines" in text, text
    assert "dask local:1, 1 worker" in text
    records = [json.loads(x) for p in sorted((out / "parts").glob("*.jsonl"))
               for x in p.read_text().splitlines()]
    assert [r["line"] for r in records] == list(range(1, 11))


def test_a_local_cluster_leaves_port_8787_alone() -> None:
    """``--dask local`` starts no dashboard, so a second one on the host (two suites, or a
    notebook's cluster holding 8787) must not fight over the dashboard's port and warn."""
    pytest.importorskip("distributed")
    import socket
    import warnings

    from shuangkou.service.batch.archive import dask_client

    held = socket.socket()
    try:
        held.bind(("127.0.0.1", 8787))  # already held by another cluster: the same test
        held.listen()
    except OSError:
        pass
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = dask_client("local:1")
            try:
                assert client.submit(abs, -3).result(timeout=60) == 3
            finally:
                client.close()
                client.cluster.close()
    finally:
        held.close()
    assert not [w for w in caught if "8787" in str(w.message)], [str(w.message) for w in caught]


def test_records_bound_reasons_as_the_wire_does() -> None:
    """The batch records keep their own copy of the wire's message bound (so that scoring a
    file never imports grpc); it is the wire's."""
    from shuangkou.service import errors
    from shuangkou.service.batch import records

    assert records.REASON_BYTES == errors.MAX_MESSAGE_CHARS
    long = "é" * 400
    assert records.error_record(long)["error"]["reason"] == errors.bounded(long)


def test_scoring_a_file_imports_no_grpc(tmp_path: Path) -> None:
    """score-replays starts without the server's modules, rejected lines included."""
    from shuangkou.core.generate import generate_replay

    doc = generate_replay("baibian", 3, 1.0)          # an escape: baibian rejects it
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(doc) + "\n")
    code = ("import sys; from shuangkou.service.cli import main; main(['score-replays', "
            f"{str(path)!r}, '--jobs', '1', '--no-progress']); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', "
            "'multiprocessing')))")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False)
    assert '"ok":false' in got.stdout and got.stdout.strip().endswith("[]"), got


# ----------------------------------------------------------------------------- long lines

LIMIT = inputs.MAX_LINE_BYTES
SHUANGKOU = str(Path(sys.executable).with_name("shuangkou"))


def _long(size: int) -> bytes:
    """A line of ``size`` bytes that starts as a replay would."""
    head = b'{"variant": "baibian", "players": ["'
    return head + b"x" * (size - len(head) - 3) + b'"]}'


def _run(*args: str, cwd: Path, stdin: Path | None = None) -> subprocess.CompletedProcess[str]:
    with (stdin.open("rb") if stdin else open("/dev/null", "rb")) as source:
        return subprocess.run([SHUANGKOU, *args], cwd=cwd, stdin=source, capture_output=True,
                              text=True, timeout=120)


def test_a_line_just_over_the_limit_is_one_rejection_everywhere(tmp_path: Path,
                                                                lines: list[str]) -> None:
    """A line of the maximum line size is read; one byte more and it is rejected, saying
    so, in every mode that reads lines: the pool (one worker and several), stdin, gzip, an
    archive (plain and gzipped), review-replays; review --line and view --line refuse it."""
    import gzip

    at_limit = _long(LIMIT)
    over = _long(LIMIT + 1)
    data = b"\n".join([lines[0].encode(), over, at_limit, lines[1].encode()]) + b"\n"
    (tmp_path / "day.jsonl").write_bytes(data)
    with gzip.open(tmp_path / "gz.jsonl.gz", "wb") as f:
        f.write(data)
    (tmp_path / "bad.jsonl").write_bytes(b'{"bad": 1}\n' + over + b"\n")
    said = f"line of {LIMIT + 1:,} bytes is over the maximum line size ({LIMIT:,} bytes)"
    for args, source in [
            (["score-replays", "day.jsonl", "-j", "1"], None),
            (["score-replays", "day.jsonl", "-j", "2", "--chunk-size", "1"], None),
            (["score-replays", "-", "-j", "1"], tmp_path / "day.jsonl"),
            (["score-replays", "gz.jsonl.gz", "-j", "1"], None),
            (["score-replays", "day.jsonl", "--output-dir", "o0", "--partition-lines", "2"],
             None),
            (["score-replays", "gz.jsonl.gz", "--output-dir", "o1"], None),
            (["review-replays", "bad.jsonl", "--output-dir", "o2"], None)]:
        done = _run(*args, "--no-progress", cwd=tmp_path, stdin=source)
        assert done.returncode == 3, (args, done.stderr)
        out = next((tmp_path / d for d in ("o0", "o1", "o2") if d in args), None)
        records = _records(done.stdout) if out is None else [
            r for p in sorted((out / "parts").glob("*.jsonl")) for r in _records(p.read_text())]
        if args[0] == "review-replays":
            assert [r["ok"] for r in records] == [False, False]
            assert said in records[1]["error"]["reason"]
            continue
        assert [r["ok"] for r in records] == [True, False, False, True], args
        assert said in records[1]["error"]["reason"]
        assert "not valid JSON" not in records[1]["error"]["reason"]
        # at the limit: read, and refused for what it holds
        assert records[2]["error"]["reason"] == "a replay needs 'hands'"
    for command in ("review", "view"):
        done = _run(command, "day.jsonl", "--line", "2", cwd=tmp_path)
        assert done.returncode == 2 and said in done.stderr, done.stderr


def _peak_rss_mib(args: list[str], cwd: Path) -> float:
    """The command's peak RSS (its own process: -j 1 reads in the parent)."""
    code = ("import resource, sys\nfrom shuangkou.service.cli import main\n"
            "status = main(sys.argv[1:])\n"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
            "sys.exit(status)")
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 3, done.stderr
    return int(done.stderr.strip().splitlines()[-1]) / 1024


@pytest.mark.parametrize("args", [["-j", "1"], ["--output-dir", "out", "-j", "1"]],
                         ids=["records", "archive"])
def test_a_long_line_costs_no_memory(tmp_path: Path, lines: list[str], args: list[str]) -> None:
    """A 96 MiB line peaked at ~3 times its size (read whole, decoded, split); read past in
    blocks now, it costs what a short bad line costs, within a few MiB."""
    (tmp_path / "short.jsonl").write_bytes(lines[0].encode() + b"\n" + _long(LIMIT + 1) + b"\n")
    (tmp_path / "long.jsonl").write_bytes(lines[0].encode() + b"\n" + _long(96 << 20) + b"\n")
    short = _peak_rss_mib(["score-replays", "short.jsonl", *args], tmp_path)
    if "out" in args:
        args = ["--output-dir", "out2", "-j", "1"]
    long = _peak_rss_mib(["score-replays", "long.jsonl", *args], tmp_path)
    assert long < short + 8, (short, long)
