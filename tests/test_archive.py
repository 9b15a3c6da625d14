"""Archive scoring (service.batch.archive, .partitions, .inputs): partitions on line boundaries,
exactly once with provenance, resumable, the same records as the single-machine scorer.

The Dask tests run a REAL ``dask scheduler`` and two ``dask worker`` processes on loopback
(started here, killed at the end): a multi-file archive with gzipped parts and malformed
lines, a resumed run after the client was killed, a worker killed mid-job.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from grpc_helpers import ROOT, free_port

from shuangkou.core.generate import generate_replay
from shuangkou.service import inputs
from shuangkou.service.batch import archive, partitions
from shuangkou.service.batch import command as batch
from shuangkou.service.batch.records import score_line

pytest.importorskip("distributed", reason="the dask extra (pip install -e .[test])")
DASK = Path(sys.executable).with_name("dask")
BAD = ["{not json", "", "[]", '{"variant": "baibian"}', "\xff\xfe"]


def _unique() -> list[str]:
    variants = ["baibian", "huopin", "fengkuang_crazy", "qianbian", "bianfeng",
                "bianfeng_lishui", "fengkuang"]
    return [json.dumps(generate_replay(variants[i % 7], i, escape_prob=0.2)) for i in range(28)]


@pytest.fixture(scope="module")
def unique() -> list[str]:
    return _unique()


def make_archive(root: Path, unique: list[str], lines_per_file: tuple[int, ...]) -> list[str]:
    """Files a.jsonl, then b/00.jsonl.gz, b/01.jsonl.gz ... (a directory of gzipped parts);
    every 9th line malformed, a CRLF ending and a lone CR inside a line; returns the lines
    in merged order."""
    everything: list[str] = []
    (root / "b").mkdir(parents=True, exist_ok=True)
    for n, count in enumerate(lines_per_file):
        lines = [BAD[(k // 9) % len(BAD)] if k % 9 == 4 else unique[(k + n) % len(unique)]
                 for k in range(count)]
        data = "\n".join(lines).encode("utf-8", errors="surrogateescape") + b"\n"
        data = data.replace(b"\n", b"\r\n", 1).replace(b", ", b",\r", 1)  # \r\n and lone \r
        if n == 0:
            (root / "a.jsonl").write_bytes(data[:-1])          # no final newline
        else:
            with gzip.open(root / "b" / f"{n - 1:02d}.jsonl.gz", "wb") as f:
                f.write(data)
        everything += [line.decode("utf-8", errors="replace").removesuffix("\r")
                       for line in data.rstrip(b"\n").split(b"\n")]
    return everything


def merged(outdir: Path) -> list[dict]:
    return [json.loads(line) for p in sorted((outdir / "parts").glob("*.jsonl"))
            for line in p.read_text(encoding="utf-8").splitlines()]


def check_exactly_once(outdir: Path, lines: list[str], names: list[tuple[str, int]]) -> None:
    """One record per input line, in merged order, naming file and line, equal to the
    single-line scorer's record."""
    records = merged(outdir)
    assert [(r["file"], r["line"]) for r in records] == names
    assert [score_line_without_source(r) for r in records] == [score_line(x) for x in lines]


def score_line_without_source(record: dict) -> str:
    record = dict(record)
    del record["file"], record["line"]
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def sources(root: Path, counts: tuple[int, ...]) -> list[tuple[str, int]]:
    names = [str(root / "a.jsonl")] + [str(root / "b" / f"{n:02d}.jsonl.gz")
                                       for n in range(len(counts) - 1)]
    return [(name, k + 1) for name, c in zip(names, counts, strict=True) for k in range(c)]


# ----------------------------------------------------------------------------- partitions

@pytest.mark.parametrize("size", [1, 2, 3, 7, 100])
def test_partitions_cover_every_line_once(tmp_path: Path, unique: list[str], size: int) -> None:
    lines = make_archive(tmp_path, unique, (11, 9, 1))
    files = inputs.expand([str(tmp_path / "a.jsonl"), str(tmp_path / "b")])
    parts = partitions.plan(files, size)
    got = [line for p in parts for line in partitions.read_partition(files[p.file], p)]
    assert got == lines
    assert [p.id for p in parts] == sorted(p.id for p in parts)
    assert all(p.lines <= size for p in parts)
    assert partitions.plan(files, size) == parts                  # deterministic


def test_expand_globs_directories_and_missing(tmp_path: Path, unique: list[str]) -> None:
    make_archive(tmp_path, unique, (3, 3, 3))
    (tmp_path / "b" / "notes.txt").write_text("not an input")
    names = [f.name for f in inputs.expand([str(tmp_path / "b"), str(tmp_path / "*.jsonl"),
                                                str(tmp_path / "b" / "00.jsonl.gz")])]
    assert names == [str(tmp_path / "b" / "00.jsonl.gz"), str(tmp_path / "b" / "01.jsonl.gz"),
                     str(tmp_path / "a.jsonl")]                     # each file once
    with pytest.raises(FileNotFoundError):
        inputs.expand([str(tmp_path / "nothing-*.jsonl")])


def _tree(root: Path) -> None:
    for name in ("a.jsonl", "b.json", ".hidden.jsonl", "x/c.jsonl", "x/y/d.jsonl.gz",
                 "x/.h/e.jsonl", "x/y/z/f.ndjson", "q[1]/g.jsonl", "notes.txt"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("{}\n")


@pytest.mark.parametrize("pattern", [
    "*.jsonl", "**/*.jsonl", "**", "x/**", "**/y/*", "x/**/*.j*", "*/*.jsonl", "?.jsonl",
    "[ab].json*", ".*", "**/.h/*", "x/.h/*", "q[[]1]/*", "**/z/*.ndjson", "x/y/**/*"])
def test_globs_match_as_glob_glob(tmp_path: Path, pattern: str,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Without links the walker finds what glob.glob(recursive=True) finds, relative or
    absolute."""
    import glob
    _tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    for spec in (pattern, str(tmp_path / pattern)):
        want = sorted(m for m in glob.glob(spec, recursive=True) if os.path.isfile(m))
        assert sorted(inputs._glob(spec, set())) == want, spec


@pytest.mark.parametrize("spec", ["loop/**/*.jsonl", "loop", "loop/**", "loop/*/*.jsonl"])
def test_symlink_loops_end_and_every_file_is_scored_once(
        tmp_path: Path, unique: list[str], spec: str) -> None:
    """`self -> .` scored a 2-line file 41 times (glob follows it until the path is too long
    to resolve); with `up -> ..` beside it the run never ended. Links are followed, each
    real folder once; a file reached through a link, or named twice, is scored once."""
    (tmp_path / "loop" / "sub").mkdir(parents=True)
    (tmp_path / "loop" / "sub" / "a.jsonl").write_text(unique[0] + "\n" + unique[1] + "\n")
    (tmp_path / "loop" / "sub" / "self").symlink_to(".")
    (tmp_path / "loop" / "sub" / "up").symlink_to("..")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "b.jsonl").write_text(unique[2] + "\n")
    (tmp_path / "loop" / "there").symlink_to("../elsewhere")   # a link to new ground: taken
    (tmp_path / "loop" / "again.jsonl").symlink_to("sub/a.jsonl")
    done = _shuangkou("score-replays", spec, "loop/sub/a.jsonl", "-j", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = [json.loads(r)["ok"] for r in done.stdout.splitlines()]
    assert got == [True] * 3
    out = _shuangkou("score-replays", spec, "--output-dir", "out", "-j", "1", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(merged(tmp_path / "out")) == 3


def test_local_archive_run_resume_and_summary(tmp_path: Path, unique: list[str],
                                              capsys: pytest.CaptureFixture[str]) -> None:
    counts = (40, 25, 30)
    lines = make_archive(tmp_path / "in", unique, counts)
    out = tmp_path / "out"
    args = [str(tmp_path / "in" / "a.jsonl"), str(tmp_path / "in" / "b"), "--output-dir", str(out),
            "--partition-lines", "8", "-j", "2"]
    assert batch.main(args) == 3
    check_exactly_once(out, lines, sources(tmp_path / "in", counts))
    summary = json.loads((out / "summary.json").read_text())
    err = capsys.readouterr().err
    assert summary["lines"] == len(lines) and "top rejection reasons" in err
    assert summary["scored"] + summary["rejected"] == len(lines)
    assert sum(v["lines"] for v in summary["variants"].values()) == len(lines)
    assert sum(summary["kinds"].values()) == summary["scored"]
    top = summary["rejections"][0]
    assert top["count"] >= 1 and {"file", "line", "reason"} <= set(top["example"])
    # an interrupted run: two partitions lost (one mid-write), a stale temporary file
    done = sorted((out / "parts").glob("*.done"))
    done[3].unlink()
    done[5].unlink()
    (out / "parts" / f"{done[5].stem}.jsonl").write_text("torn")
    (out / "parts" / f".{done[5].stem}.jsonl.tmp.x.1.abc").write_text("torn")
    assert batch.main(args) == 3
    check_exactly_once(out, lines, sources(tmp_path / "in", counts))
    assert "in 2 partitions" in capsys.readouterr().err
    # another run's output directory is refused
    assert batch.main([*args[:2], "--output-dir", str(out), "--partition-lines", "9"]) == 2
    assert "another run" in capsys.readouterr().err


def test_an_output_dir_inside_the_input_dir_resumes(tmp_path: Path, unique: list[str],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``score-replays IN --output-dir IN/out`` twice: the second run resumes (nothing to
    do) instead of reading the first run's manifest, summary and partitions as replays."""
    counts = (12, 7)
    lines = make_archive(tmp_path / "in", unique, counts)
    args = [str(tmp_path / "in"), "--output-dir", str(tmp_path / "in" / "out"),
            "--partition-lines", "5", "-j", "1"]
    assert batch.main(args) == 3
    capsys.readouterr()
    assert batch.main(args) == 3                   # some lines are malformed: status 3 again
    err = capsys.readouterr().err
    assert "this run: 0 lines in 0 partitions" in err and "another run" not in err, err
    names = sorted(sources(tmp_path / "in", counts))     # a directory's files: sorted by path
    check_exactly_once(tmp_path / "in" / "out", lines, names)
    # a lost partition is scored again, and only it
    next((tmp_path / "in" / "out" / "parts").glob("*.done")).unlink()
    assert batch.main(args) == 3
    assert "in 1 partitions" in capsys.readouterr().err
    check_exactly_once(tmp_path / "in" / "out", lines, names)


def test_scans_skip_every_run_output(tmp_path: Path, unique: list[str]) -> None:
    """An earlier run's output folder among the inputs (its manifest, summary and parts),
    and this run's own output paths, are never inputs of a directory or a glob; other
    files beside them are, and a file named directly is taken as named."""
    make_archive(tmp_path / "in", unique, (3, 3))
    old = tmp_path / "in" / "old"
    assert batch.main([str(tmp_path / "in" / "a.jsonl"), "--output-dir", str(old), "-j", "1"]) == 0
    (old / "notes.jsonl").write_text(unique[0] + "\n")   # not the run's: an input
    expected = [str(tmp_path / "in" / "a.jsonl"), str(tmp_path / "in" / "b" / "00.jsonl.gz"),
                str(old / "notes.jsonl")]
    assert [f.name for f in inputs.expand([str(tmp_path / "in")])] == expected
    assert [f.name for f in inputs.expand([str(tmp_path / "in" / "**" / "*.json*")])] == \
        sorted(expected)
    part = next((old / "parts").glob("*.jsonl"))
    assert [f.name for f in inputs.expand([str(part)])] == [str(part)]     # named: taken
    with pytest.raises(FileNotFoundError, match="only the output of a score-replays run"):
        inputs.expand([str(old / "parts" / "*.jsonl")])
    # this run's --output file and --output-dir, before either holds a manifest
    mine = tmp_path / "in" / "records.jsonl"
    mine.write_text("")
    (tmp_path / "in" / "new" / "parts").mkdir(parents=True)
    (tmp_path / "in" / "new" / "parts" / "x.jsonl").write_text("")
    assert [f.name for f in inputs.expand([str(tmp_path / "in")],
                                          [str(mine), str(tmp_path / "in" / "new")])] == expected


def test_shards_then_merge(tmp_path: Path, unique: list[str],
                           capsys: pytest.CaptureFixture[str]) -> None:
    counts = (20, 13)
    lines = make_archive(tmp_path / "in", unique, counts)
    out = tmp_path / "out"
    base = [str(tmp_path / "in"), "--output-dir", str(out), "--partition-lines", "5", "-j", "1"]
    assert batch.main([*base, "--shard", "0/3"]) == 3
    assert batch.main(["--merge", "--output-dir", str(out)]) == 2            # shards 1 and 2 missing
    assert "not complete" in capsys.readouterr().err
    for i in (2, 1):
        batch.main([*base, "--shard", f"{i}/3"])
    assert batch.main(["--merge", "--output-dir", str(out)]) == 3
    check_exactly_once(out, lines, sorted(sources(tmp_path / "in", counts)))
    assert json.loads((out / "summary.json").read_text())["lines"] == len(lines)
    assert archive.shard_of(list(range(7)), 1, 3) == [1, 4]  # type: ignore[arg-type]
    with pytest.raises(SystemExit):
        batch.main([*base, "--shard", "3/3"])


def test_rejection_reasons_group_whatever_cards_they_name() -> None:
    """The summary's reason template blanks every card token the core writes (format_cards:
    TS, 10S, SJ, BJ and rank-only cards such as 7; describe()'s rank strings) as it blanks
    numbers, a group of them as one: the core's reasons differing only in a TS, 7 or SJ card
    group count together."""
    from shuangkou import core

    def reason(hand: str, play: str) -> str:
        r = core.Round.deal("baibian", ["KS KH 3S", hand, "4S", "5S"], 0, partial_deal=True)
        r.play(0, "KS KH")
        with pytest.raises(core.ShuangkouError) as info:
            r.play(1, play)
        return str(info.value)

    low = [reason(hand, hand) for hand in ("TS TH", "7 7", "9S 9H", "10S 10D")]
    assert "TS TH (pair TT) does not beat pair KK" in low[0]
    missing = [reason("3H", play) for play in ("TS", "7", "SJ", "BJ BJ", "9H")]
    for group in (low, missing):
        assert len({archive.reason_template(r) for r in group}) == 1, group
    assert archive.reason_template("not valid JSON: line 1 column 2 (char 1)") == \
        "not valid JSON: line N column N (char N)"


# Lines no UTF-8 file can hold as they read (a lone surrogate escaped, in a value or a key),
# bytes that are not UTF-8 and a control character: each is one rejected record.
HOSTILE_LINES = [b'{"variant":"\\ud800"}', b'{"\\udc80":1}', b'{"variant":"\\ud800\\u0041"}',
                 b'{"variant":"\xff\xfe"}', b'\x00']


def _shuangkou(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).with_name("shuangkou")), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", ["score-replays", "review-replays"])
def test_any_line_is_one_record_and_a_summary(tmp_path: Path, unique: list[str],
                                              command: str) -> None:
    """Invalid Unicode, in a file whose own name is not UTF-8 either: a rejection per line,
    a summary, the same on a rerun and a merge (each crashed writing summary.json, exit 1);
    an older run's counts holding a lone surrogate merge too."""
    (tmp_path / "in").mkdir()
    name = os.fsdecode(b"day\xff.jsonl")
    data = b"\n".join(HOSTILE_LINES) + b"\n"
    if command == "score-replays":
        data += unique[0].encode() + b"\n"
    (tmp_path / "in" / name).write_bytes(data)
    args = [command, "in", "--output-dir", "out", "-j", "1", "--no-progress"]
    first = _shuangkou(*args, cwd=tmp_path)
    assert first.returncode == 3, first.stderr                   # complete, lines rejected
    records = merged(tmp_path / "out")
    assert [(r["file"], r["line"]) for r in records] == [
        (f"in/{name}", k + 1) for k in range(len(HOSTILE_LINES) + (command == "score-replays"))]
    assert [r["ok"] for r in records[:len(HOSTILE_LINES)]] == [False] * len(HOSTILE_LINES)
    assert "not valid JSON" in records[0]["error"]["reason"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["rejected"] == len(HOSTILE_LINES)
    assert summary["variants"]["(not JSON)"]["rejected"] == 4
    rerun = _shuangkou(*args, cwd=tmp_path)
    assert rerun.returncode == 3 and "1 partitions were already complete" in rerun.stderr
    # the counts an older run wrote: the lone surrogate Python's json read from line 1
    (done,) = (tmp_path / "out" / "parts").glob("*.done")
    counts = json.loads(done.read_text())
    counts["variants"]["\ud800"] = counts["variants"].pop("(not JSON)")
    done.write_text(json.dumps(counts))
    merge = _shuangkou(command, "--merge", "--output-dir", "out", cwd=tmp_path)
    assert merge.returncode == 3, merge.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["variants"]["\ud800"]["rejected"] == 4     # written as its JSON escape


def test_archive_flags_need_an_output_dir() -> None:
    for flags in (["--dask", "local"], ["--shard", "0/2"], ["--merge"]):
        with pytest.raises(SystemExit) as info:
            batch.main(["x.jsonl", *flags])
        assert info.value.code == 2


# ----------------------------------------------------------------------------- real Dask


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([str(DASK), *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


class Cluster:
    def __init__(self) -> None:
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler = _spawn("scheduler", "--host", "127.0.0.1", "--port", str(self.port),
                                "--no-dashboard")
        self.workers = [self.worker(f"w{i}") for i in range(2)]
        self.wait_workers(2)

    def worker(self, name: str) -> subprocess.Popen[bytes]:
        return _spawn("worker", self.address, "--nthreads", "1", "--no-nanny", "--name", name,
                      "--no-dashboard", "--death-timeout", "60")

    def wait_workers(self, n: int, timeout: float = 90.0) -> None:
        from dask.distributed import Client

        deadline = time.monotonic() + timeout
        with Client(self.address, timeout=timeout) as client:
            while len(client.scheduler_info()["workers"]) < n:
                assert time.monotonic() < deadline, "dask workers did not start"
                time.sleep(0.2)

    def close(self) -> None:
        for proc in [*self.workers, self.scheduler]:
            _kill(proc)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.close()


def _cli(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "shuangkou.service", "score-replays", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_done(out: Path, n: int, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(list((out / "parts").glob("*.done"))) < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_dask_archive_exactly_once_equals_single_machine(
        tmp_path: Path, unique: list[str], cluster: Cluster,
        capsys: pytest.CaptureFixture[str]) -> None:
    counts = (90, 60, 45, 1)
    lines = make_archive(tmp_path / "in", unique, counts)
    out = tmp_path / "out"
    inputs = [str(tmp_path / "in" / "a.jsonl"), str(tmp_path / "in" / "b" / "*.jsonl.gz")]
    assert batch.main([*inputs, "--output-dir", str(out), "--dask", cluster.address,
                       "--partition-lines", "16"]) == 3
    check_exactly_once(out, lines, sources(tmp_path / "in", counts))
    assert "2 workers" in capsys.readouterr().err
    # the single-machine scorer (stdout mode) writes the same records in the merged order
    assert batch.main([*inputs, "-j", "1"]) == 3
    single = capsys.readouterr().out.splitlines()
    assert [score_line_without_source(r) for r in merged(out)] == single


def test_dask_resumes_after_the_client_is_killed(tmp_path: Path, unique: list[str],
                                                 cluster: Cluster) -> None:
    counts = (400, 200)
    lines = make_archive(tmp_path / "in", unique, counts)
    out = tmp_path / "out"
    args = [str(tmp_path / "in"), "--output-dir", str(out), "--dask", cluster.address,
            "--partition-lines", "10", "--no-progress"]
    first = _cli(*args)
    _wait_done(out, 3, first)
    first.kill()                                   # the client dies mid-run
    first.communicate()
    before = len(list((out / "parts").glob("*.done")))
    second = _cli(*args)
    _, err = second.communicate(timeout=240)
    assert second.returncode == 3, err
    check_exactly_once(out, lines, sorted(sources(tmp_path / "in", counts)))
    # Tasks the dead client had already handed to the workers may still finish after the
    # count above: the second run finds at least that many done.
    found = re.search(r"(\d+) partitions were already complete", err)
    assert found and int(found[1]) >= before, err


def test_dask_worker_killed_mid_job(tmp_path: Path, unique: list[str], cluster: Cluster) -> None:
    counts = (500, 300)
    lines = make_archive(tmp_path / "in", unique, counts)
    out = tmp_path / "out"
    proc = _cli(str(tmp_path / "in"), "--output-dir", str(out), "--dask", cluster.address,
                "--partition-lines", "10", "--no-progress")
    _wait_done(out, 4, proc)
    _kill(cluster.workers[0])                      # SIGKILL: its running task is lost
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 3, err
    check_exactly_once(out, lines, sorted(sources(tmp_path / "in", counts)))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["lines"] == len(lines) and summary["this_run"]["partitions"] == 80


def test_unreachable_scheduler_is_one_line_exit_2(tmp_path: Path, unique: list[str],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    make_archive(tmp_path / "in", unique, (3,))
    address = f"tcp://127.0.0.1:{free_port()}"
    real = archive.dask_client
    monkeypatch.setattr(archive, "dask_client", lambda a: real(a, timeout=2))
    assert batch.main([str(tmp_path / "in"), "--output-dir", str(tmp_path / "out"),
                       "--dask", address]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"cannot reach the Dask scheduler {address}" in err[0]
