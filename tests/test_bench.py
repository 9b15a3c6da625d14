"""Every bench script runs: docs/BENCHMARKS.md documents ``.venv/bin/python bench/<script>``
commands, and a script that no test runs rots (a renamed message field, a limit that now
refuses its load, a division by an empty sample).

One smoke test per case in :data:`CASES`: the script runs as a subprocess (this interpreter,
in the repository root, ``.venv/bin`` first on PATH, ``TMPDIR`` in the test's scratch folder)
with the smallest arguments it accepts — a few plays, hands, rounds or lines, fractions of a
second of load, one repeat — and must exit 0 and print its figures (the lines in ``expect``;
the values are not checked: they are measurements on a shared machine). Servers stay on
loopback. Each run is the leader of its own session, so every process it started can be
found afterwards: one still alive a few seconds after the script exited (a server it did not
stop) fails the test, and is killed. Every script in bench/ must have a case
(:func:`test_every_script_has_a_case`).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench"
BIN = Path(sys.executable).parent
SETTLE = 30.0   # seconds the script's processes get to exit after it did (a loaded host too)
#: The cases' timeouts are for an idle host; a run beside a second suite gets this many times
#: as long (a bound against a hang: nothing here is a speed requirement).
LOAD = 2.5
#: A figure of baseline.report's table: "1,234" from 1,000 up, "123.4" or "1.23" below. The
#: same line's figure crosses 1,000 as the host's load changes (health Checks per second fell
#: below 1,000 beside a second suite, and the line's pattern no longer matched): the pattern
#: takes every form.
FIG = r"[\d,]+(?:\.\d+)?"


@dataclass(frozen=True)
class Case:
    script: str                 # a file of bench/
    args: tuple[str, ...]       # the smallest run
    expect: tuple[str, ...]     # regular expressions, each matching a line of stdout
    absent: tuple[str, ...] = ()    # strings that must not appear in stdout or stderr
    timeout: float = 60.0       # seconds for the whole run

    @property
    def id(self) -> str:
        return " ".join((self.script.removesuffix(".py"), *self.args))


CASES = [
    # 10,000 plays: over the batch cap of the default 4 MiB message limit (9,601), as the
    # default 100,000 are, so a server without the 64 MiB limit would refuse them
    Case("bench_abuse.py", ("--plays", "10000"),
         (r"^ClassifyPlay, 64 ScoreReplays \+ 64 Watch held: p50 ",
          r"^streams refused RESOURCE_EXHAUSTED \(max_streams 16\): \d+ of 64$",
          r"^server threads with 1000 idle metrics connections: \d+",
          r"^worker killed \(SIGKILL\): workers_up dropped after ",
          r"^worker hung \(SIGSTOP\): workers_up dropped after ",
          r"^SIGTERM with 3 BatchClassify of 10,000 plays in flight, grace 1 s: exited after "),
         # refused batches: nothing would be in flight at SIGTERM
         absent=("INVALID_ARGUMENT",), timeout=150),
    Case("bench_abuse.py", ("--deadline", "--plays", "10000"),
         (r"^default limits, 4 x BatchClassify of [\d,]+ invalid plays \(the cap\): answers "
          r"OK/OK/OK/OK; RSS idle ",
          r"^--max-message-bytes 64 MiB: BatchClassify of 10,000 plays .*server CPU after ",
          r"^--max-message-bytes 64 MiB, 4 x BatchClassify of 10,000 invalid plays: answers "
          r"OK/OK/OK/OK"), timeout=120),
    Case("bench_burst.py", ("--calls", "300"),
         (r"^gRPC's own shedding .*: 300 ApplyAction at once -> [\d,]+ OK \+ 0 "
          r"RESOURCE_EXHAUSTED .*the server saw [\d,]+; ",
          r"^shipped settings .*: 300 ApplyAction at once -> [\d,]+ OK \+ [\d,]+ "
          r"RESOURCE_EXHAUSTED \(counted overloaded: [\d,]+\) \+ 0 other ; the server saw 300;"),
         timeout=120),
    Case("bench_api.py", ("--repeat", "1"),
         (r"^BatchClassify, [\d,]+ valid plays \(the cap\): [\d,]+ plays/s",
          r"^BatchClassify, [\d,]+ invalid plays of 400 characters: [\d,]+ plays/s",
          r"^EnumerateLegalPlays, 2,744 plays: 28 pages of 100 in \d+ ms")),
    Case("bench_client.py", ("--calls", "20", "--repeat", "1"),
         (rf"^ClassifyPlay\s+ShuangkouClient\s+{FIG} µs/call",
          rf"^ApplyAction\s+AsyncRoundClient\s+{FIG} µs/call",
          r"^client's own Python per call \(no network\): [\d.]+ µs$"), timeout=90),
    Case("bench_classify.py", ("--plays", "20", "--ref-plays", "5", "--repeats", "1",
                               "--passes", "2", "--against", sys.executable),
         (r"^plays per variant: 20 valid \+ 20 invalid", r"^huopin(\s+[\d,]+){6}(\s+[\d.]+x){4}$",
          r"^median(\s+[\d,]+){6}", r"^huopin\s+ref\s+[\d,]+/s",
          rf"^huopin batch half invalid, errors read\s+{FIG}\s+{FIG}\s+[\d.]+",
          r"^geometric mean this/base over \d+ lines: [\d.]+$")),
    Case("baseline.py", ("HEAD", "--dry-run"), (r"^baseline HEAD = [0-9a-f]{12}: ",)),
    Case("bench_declarations.py", ("--plays", "20", "--pairs", "5"),
         (r"^variant\s+large bombs\s+kind\+top", r"^huopin\s+\d+\s+[\d.]+%",
          r"^variant\s+compare µs", r"^huopin\s+[\d.]+\s+[\d.]+\s+[\d.]+x$")),
    Case("bench_enumerate.py", ("--hands", "2", "--small", "1", "--repeats", "1",
                                "--passes", "2", "--against", sys.executable),
         (r"^hands per variant: 2 random deals", r"^huopin\s+\d+\s+[\d.]+ \(",
          r"^lead: median over the variants [\d.]+ µs", r"^huopin\s+8-card bombs\s+\d+",
          r"^brute force vs engine", r"^huopin\s+[\d.]+\s+\d+\s+\d+x$",
          rf"^huopin lead\+objs\s+{FIG}\s+{FIG}\s+[\d.]+")),
    Case("bench_failover.py", ("--lines", "500", "--kill-after", "0.5"),
         (r"^archive: 500 lines \(1 malformed\); replica B SIGKILLed ",
          r"^records: 500 remote, 500 local; identical and aligned: 500;"), timeout=90),
    Case("bench_long_line.py", ("--mib", "3", "--modes", "plain,archive,server,review --line"),
         (r"^a 3 MiB line between two replays; load average [\d.]+$",
          *(rf"^{mode}\s+{status}\s+\d+ MiB  line of 3,145,767 bytes is over the maximum "
            for mode, status in (("plain", 3), ("archive", 3), ("server", 3),
                                 ("review --line", 2)))),
         timeout=90),
    Case("bench_grpc.py", ("--seconds", "1", "--repeat", "1", "--clients", "1",
                           "--concurrency", "2", "--threads", "2"),
         (r"^ClassifyPlay, bare sync server\s+[\d,]+", r"^ClassifyPlay, bare aio server\s+[\d,]+",
          r"^health Check, same server\s+[\d,]+", r"^BatchClassify \(",
          r"^ClassifyPlay, shuangkou serve --workers 2\s+[\d,]+",
          r"^ClassifyPlay / health Check \(same server\):\s+[\d.]+x$"), timeout=120),
    Case("bench_logs.py", ("--seconds", "0.3", "--repeat", "1", "--threads", "2"),
         (r"^plain\s+[\d,]+ calls/s\s+[\d,]+ µs server CPU/call\s+1\.00x plain",
          r"^access, all kept\s+[\d,]+ calls/s", r"^access, bucket full\s+[\d,]+ calls/s",
          r"^tracing\s+[\d,]+ calls/s", r"^tracing: the collector received [\d,]+ spans",
          r"^AccessLog.call: [\d.]+ µs a line the bucket refuses, [\d.]+ µs a line written",
          r"^serve start-up: .* opentelemetry modules loaded with tracing off: 0$"),
         timeout=120),
    Case("bench_http.py", ("--seconds", "0.3", "--repeat", "1", "--clients", "1",
                           "--threads", "1"),
         (r"^ClassifyPlay\s+grpc\s+[\d,]+ calls/s", r"^ClassifyPlay\s+connect-json\s+[\d,]+",
          r"^ClassifyPlay\s+connect-get\s+[\d,]+ calls/s",
          r"^ApplyAction\s+grpc-web\s+[\d,]+ calls/s\s+[\d,]+ µs server CPU/call\s+[\d.]+x gRPC$"),
         timeout=120),
    Case("bench_lane.py", ("--reviews", "4", "--seconds", "1", "--abandoned", "6",
                           "--hang-up", "0.5", "--throughput-seconds", "0.5",
                           "--rates-rollouts", "20", "--rates-seeds", "1"),
         (r"^reviews: 4 concurrent ReviewRounds at [\d,]+ rollouts a decision x \d+ decisions: "
          r"the server's review_max_rollouts 1,000,000",
          r"^  gRPC ClassifyPlay +p50 +[\d.]+ ms, p99 +[\d.]+ ms",
          r"^  gRPC health Check +p50 ", r"^  HTTP /readyz +p50 ",
          r"^  the reviews: .*LANE_FULL",
          r"^  while the clients wait +p50 +[\d.]+ ms",
          r"^  one process +1 caller +[\d.]+/s \([\d,]+ rollouts/s\), 2 callers .*x \(",
          r"^  --workers 2 with 2 callers: [\d.]+x one process's$",
          r"^  huopin +evaluate [\d.]+, search [\d.]+; the model [\d.]+$"), timeout=150),
    Case("bench_probes.py", ("--threads", "1", "--search-ms", "300", "--probes", "2"),
         (r"^/healthz idle\s+median\s+[\d.]+ ms\s+max\s+[\d.]+ ms$",
          r"^/readyz during 2 searches\s+median\s+[\d.]+ ms",
          r"^GetServerInfo \(POST\) meanwhile\s+[\d,]+ ms$"), timeout=120),
    Case("bench_edge.py", ("--candidates", "uvicorn", "--seconds", "0.3", "--repeat", "1",
                           "--clients", "1", "--threads", "1"),
         (r"^uvicorn\s+flood of 1,100: 5/5 answered or refused within 1 s",
          r"^uvicorn\s+ClassifyPlay gRPC\s+[\d,]+ calls/s, Connect JSON\s+[\d,]+ calls/s: "
          r"[\d.]+x gRPC$"), timeout=120),
    Case("bench_edge.py", ("--abuse", "--heads", "2", "--head-mib", "1", "--bodies", "2",
                           "--body-mib", "10", "--flood", "50", "--flood-seconds", "2"),
         (r"^heads: 2 x 1 MiB at once: 431 x 2 in [\d.]+ s; RSS idle [\d,]+ MiB, peak "
          r"\+[\d.]+ MiB$",
          r"^bodies \(Content-Length\): 2 x 10 MiB at once to ClassifyPlay: 413 x 2 in ",
          r"^bodies \(chunked\): 2 x 10 MiB at once to ClassifyPlay: 413 x 2 in ",
          r"^reconnect flood: 50 connections for 2 s, [\d,]+ opened; another client's calls "
          r"\d+/\d+ answered \(slowest \d+ ms\); API health SERVING \d+/\d+ checks; "
          r"connections evicted [\d,]+, refused [\d,]+$"), timeout=120),
    Case("bench_replays.py", ("--replays", "2", "--file-replays", "20", "--repeat", "1",
                              "--dask", "--partition-lines", "10", "--growth", "20"),
         (r"^huopin\s+[\d.]+(\s+[\d,]+){5}\s+0$",
          r"^batch CLI: 20 replays", r"^CLI code path in-process on 20 lines",
          r"^\s+2\s+[\d.]+\s+[\d,]+", r"^\s+dask local:2 \(--output-dir\):\s+[\d.]+ s",
          r"overhead per partition", r"^\s+20\s+[\d.]+\s+[\d,]+$"),
         # _run reports a failed ``score-replays`` on stderr and goes on
         absent=("command failed",), timeout=120),
    Case("bench_review_archive.py", ("collusion", "--rounds", "2", "--rollouts", "6"),
         (r"^2 rounds reviewed in [\d.]+ s", r"^cheat-a & cheat-b\s+\d+\s+[\d.]+%",
          r"^fair-1 & fair-2\s+\d+")),
    Case("bench_review_archive.py", ("throughput", "--rounds", "2", "--rollouts", "6"),
         (r"^1 local process\s+2 replays in\s+[\d.]+ s: [\d.]+ replays/s, workers busy "
          r"\d+%, [\d.]+ CPU-s",
          r"^dask local:2\s+2 replays in", r"^two Dask workers over one: [\d.]+x"),
         timeout=180),
    Case("bench_replays.py", ("--cli-path-only", "--file-replays", "20", "--repeat", "1"),
         (r"^CLI code path in-process on 20 lines, .* = [\d.]+x$",)),
    Case("bench_replays.py", ("--cli-against", sys.executable, "--file-replays", "20",
                              "--passes", "1"),
         (r"^CLI / in-process, per CPU-second\s+[\d.]+\s+[\d.]+", r"^geometric mean")),
    Case("bench_replays.py", ("--cli-against", "--house", "--file-replays", "20",
                              "--passes", "1"),
         (r"^batch CLI vs in-process on the same 20 lines of the house variant house_heavy",
          r"^CLI / in-process, per CPU-second\s+[\d.]+$")),
    Case("bench_round_rpc.py", ("--seconds", "0.5", "--repeat", "1", "--actions", "30"),
         (r"^\s+health Check\s+[\d.]+ us$", r"^\s+ApplyAction, action 30\s+[\d.]+ us$",
          r"^\s+run 1: ApplyAction, action 30\s+[\d,]+ calls/s\s+server CPU",
          r"^\s+median of run ratios\s+[\d.]+x", r"^\s+server capacity\s+[\d.]+x"),
         timeout=90),
    Case("bench_rounds.py", ("--replays", "1", "--repeat", "1"),
         (r"^7 generated replays \(1 per variant", r"^\s+validate \+ score, dicts: old ",
          r"^one applied action .*: median [\d.]+ µs",
          r"^\s+huopin\s+\d+ B\s+[\d.]+ µs   sealed\s+\d+ B\s+[\d.]+ µs  \(\+-?[\d.]+ µs\)$")),
    # against itself: the comparison path, with this interpreter as the "other" build
    Case("bench_service.py", ("--seconds", "0.2", "--passes", "2", "--plays", "50",
                              "--against", sys.executable),
         (rf"^health Check \(calls/s\)\s+{FIG}\s+{FIG}\s", r"^ClassifyPlay, rank runs / Check\s+",
          rf"^BatchClassify 50 plays \(plays/s\)\s+{FIG}\s",
          r"^geometric mean this/base over \d+ lines"), timeout=120),
    # one deal of three policies, a few rollouts; two largest losses played on 4 deals each
    Case("bench_review.py", ("validity", "--deals", "1", "--rollouts", "6", "--policies",
                             "random", "team", "rule", "--confirm", "2", "--confirm-deals", "4"),
         (r"^baibian: 1 deals x 2 seatings per policy, each round reviewed at 6 rollouts per decision",
          r"^random\s+2\s+\d+\s+[+-][\d.]+ ±\s+[\d.]+\s+-?[\d.]+ ±\s+[\d.]+\s+[\d.]+\s+"
          r"[\d.]+ ±\s+[\d.]+",
          r"^rule\s+2\s+\d+\s", r"^Spearman rank correlation of mean loss with points/round: "
          r"[+-][\d.]+", r"^Spearman rank correlation of the loss share with points/round: "
          r"[+-][\d.]+", r"^Spearman rank correlation of agreement with the engine's first "
          r"choice with points/round: [+-][\d.]+",
          r"^the same round reviewed twice, the same review: True$"),
         timeout=180),
    Case("bench_search.py", ("speed", "--rounds", "2", "--repeat", "1", "--variants", "huopin"),
         (r"^huopin\s+[\d,]+\s+[\d,]+\s+[\d.]+$", r"^slowest variant: [\d,]+ random actions/s")),
    Case("bench_search.py", ("latency", "--states", "1", "--budgets", "10", "--rollouts", "600",
                             "1200"),
         (r"^\d+ positions \(1 per variant\); wall time of one search$",
          r"^\s+10 ms\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+$",
          r"^\s+600 r, 100 ms\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+$",
          r"^\s+1200 r, 100 ms \(托管\)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+\d+$")),
    Case("bench_search.py", ("strength", "--rollouts", "12", "--rounds", "2", "--variants",
                             "huopin", "qianbian"),
         (r"^rule\s+12 r\s+huopin\s+2\s+[\d.]+%", r"^rule\s+12 r\s+qianbian\s+2\s")),
    Case("bench_review.py", ("cost", "--rounds", "1", "--variants", "huopin", "--rollouts",
                             "20", "--policies", "rule", "random"),
         (r"^huopin\s+rule\s+1\s+[\d.]+\s+[\d.]+\s+[\d.]+", r"^huopin\s+random\s+1\s",
          r"^slowest round: [\d.]+ s of CPU")),
    Case("bench_review.py", ("search", "--rounds", "1", "--repeat", "1"),
         (r"^\d+ positions, 600 rollouts each: best of 1 [\d.]+ s CPU, [\d.]+ ms per position; "
          r"answers [0-9a-f]{12}$",
          r"^\d+ positions, 600 rollouts each, racing: best of 1 [\d.]+ s CPU, [\d.]+ ms per "
          r"position; answers [0-9a-f]{12}$",
          r"^racing: [\d.]+x the CPU, the same answer at \d+ of \d+ positions$")),
    Case("bench_settle.py", ("--replays", "2", "--repeat", "1", "--against", sys.executable),
         (r"^14 generated rounds \(2 per variant, \d+ escaped\)",
          r"^score_round, plain\s+huopin\s+[\d.]+\s+[\d.]+\s+[\d.]+$",
          r"^score_replay\s+qianbian\s+[\d.]+", r"^suggest at the 10th action",
          r"^geometric mean this/other over \d+ lines: [\d.]+$")),
    # the p99 target is the soak's pass mark on an idle machine, not what a smoke run checks;
    # the verdict (exit 0) still needs 0 errors and RSS growth under 5 %
    Case("bench_soak.py", ("--seconds", "1", "--max-ops", "200", "--batch", "10",
                           "--calibrate-seconds", "0.5", "--levels", "1", "--channels", "1",
                           "--threads", "2", "--target-p99-ms", "2000"),
         (r"^\s+calibrate c=\s*1: ", r"^\s+errors\s+0$", r"^\s+p99_ms_by_rpc\s+\{",
          r"^\s+verdict: PASS"), timeout=90),
    Case("bench_suggest.py", ("--rounds", "2", "--latency", "1", "--repeats", "1"),
         (r"^huopin\s+[\d.]+/\s*[\d.]+", r"^worst p99: [\d.]+ ms",
          r"^huopin\s+random\s+2\s+[\d.]+%", r"^huopin\s+bot\s+2\s+[\d.]+%",
          r"^heavy hand \(112,343 beating plays\): 32 suggestion")),
    Case("bench_suggest.py", ("--server", "--concurrent", "2", "--search-ms", "300"),
         (r"^SuggestAction on the heavy hand, rule policy, deadline 0.3 s -> ",
          r"^2 maximal SuggestActions at once .* RSS idle \d+ MiB, peak \d+ MiB")),
]

def test_every_script_has_a_case() -> None:
    scripts = {p.name for p in BENCH.glob("*.py")}
    covered = {case.script for case in CASES}
    assert covered <= scripts, f"cases for scripts that do not exist: {covered - scripts}"
    assert scripts <= covered, f"bench scripts without a case: {scripts - covered}"


def session(sid: int) -> list[int]:
    """Live processes (zombies aside) of session ``sid``: those a run started, at any depth,
    unless one left the session itself (setsid)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:         # exited meanwhile
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:   # state, ..., session (stat field 6)
            found.append(int(stat.parent.name))
    return found


def kill_session(sid: int) -> list[int]:
    """SIGKILL what is left of session ``sid``; the pids it had."""
    left = session(sid)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return left


def describe(pids: list[int]) -> str:
    lines = []
    for pid in pids:
        try:
            cmd = (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
                   .decode(errors="replace"))
        except OSError:
            cmd = "?"
        lines.append(f"  {pid}: {cmd.strip()}")
    return "\n".join(lines)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bench_script(case: Case, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
           "TMPDIR": str(tmp_path), "PYTHONUNBUFFERED": "1"}
    # Output to files, not pipes: a process left behind holding a pipe would keep the read
    # open; waiting for the script itself keeps the time out and the stray check apart.
    stdout, stderr = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with stdout.open("w") as out_file, stderr.open("w") as err_file:
        proc = subprocess.Popen([sys.executable, str(BENCH / case.script), *case.args],
                                cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out_file,
                                stderr=err_file, start_new_session=True)
        try:
            proc.wait(timeout=case.timeout * LOAD)
            timed_out = False
        except subprocess.TimeoutExpired:
            kill_session(proc.pid)
            proc.wait()
            timed_out = True
    out, err = stdout.read_text(errors="replace"), stderr.read_text(errors="replace")
    if timed_out:
        pytest.fail(f"{case.id}: still running after {case.timeout * LOAD:g} s (killed)\n"
                    f"--- stdout\n{out}\n--- stderr\n{err}")
    deadline = time.monotonic() + SETTLE
    while session(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    stray = session(proc.pid)
    if stray:
        details = describe(stray)
        kill_session(proc.pid)
        pytest.fail(f"{case.id}: processes left running {SETTLE:g} s after it exited:\n"
                    f"{details}")
    report = f"{case.id}: exit {proc.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"
    assert proc.returncode == 0, report
    lines = out.splitlines()
    missing = [p for p in case.expect if not any(re.search(p, line) for line in lines)]
    assert not missing, f"no line matches {missing}\n{report}"
    found = [s for s in case.absent if s in out or s in err]
    assert not found, f"printed {found}\n{report}"
