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

import functools
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
PANEL_NAMES = ("cautious", "bomber", "blind", "hoarder", "team")   # bench/panel.py


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
    Case("bench_panel.py", ("run", "--rollouts", "12", "--deals", "1", "--variants", "huopin",
                            "--opponents", *PANEL_NAMES, "rule", "random", "search24"),
         (*(rf"^mix\s+12 r\s+{name}\s+huopin\s+2\s+[\d.]+%" for name in
            (*PANEL_NAMES, "rule", "random", "search24")),
          r"^mix 12 r:$", r"^  panel: 5 deals, [+-][\d.]+ \[.*; \d of 5 lines meet the target",
          r"^  search24: [\d.]+% of 2 rounds \[", r"^  random: [\d.]+% of 2 rounds \[",
          r"^  CPU per searched decision: \d+ decisions, median [\d.]+ ms")),
    Case("bench_panel.py", ("run", "--race", "--margin", "3", "--read", "--rollouts", "12",
                            "--deals", "1", "--variants", "bianfeng", "--opponents", "blind"),
         (r"^mix\+read\+r\+m3\s+12 r\s+blind\s+bianfeng\s+2\s+[\d.]+%",
          r"^  panel: 1 deals, [+-][\d.]+ \[")),
    Case("bench_panel.py", ("parts", "--race", "--margin", "2", "--rollouts", "12", "--deals",
                            "1", "--variants", "bianfeng", "--opponents", "team"),
         (r"^mix\+r\+m2 12 r against team in bianfeng: 2 rounds \(1 deals\)$",
          r"^  (won|lost)\s+(won|lost)\s+[12]\s+[+-][\d.]+\s+[+-][\d.]+\s+[+-][\d.]+  \w",
          r"^  gain per round [+-][\d.]+: base × multiplier [+-][\d.]+, contributions [+-]")),
    Case("bench_panel.py", ("departures", "--race", "--margin", "3", "--rollouts", "12",
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
    Case("panel.py", ("--deals", "1", "--variants", "huopin"),
         tuple(rf"^{name}\s+huopin\s+2\s+[\d.]+%" for name in PANEL_NAMES)),
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


def test_the_panel_report_pairs_two_searches(tmp_path: Path) -> None:
    """bench_panel's ``report --pair`` (how docs/BENCHMARKS.md compares two searches) on two
    runs into one file: ``sound`` with racing beside ``mix`` without, on the same deal."""
    out = tmp_path / "panel.jsonl"
    common = ("--rollouts", "12", "--deals", "1", "--variants", "huopin", "--opponents",
              "rule", "--out", str(out))
    for model in (("--model", "mix"), ("--model", "sound", "--race")):
        subprocess.run([sys.executable, str(BENCH / "bench_panel.py"), "run", *model, *common],
                       cwd=ROOT, check=True, capture_output=True, timeout=60 * LOAD)
    got = subprocess.run([sys.executable, str(BENCH / "bench_panel.py"), "report", str(out),
                          "--pair", "sound+r:12", "mix:12"], cwd=ROOT, check=True,
                         capture_output=True, text=True, timeout=60 * LOAD).stdout
    assert re.search(r"^sound\+r:12 − mix:12, on the same deals", got, re.M), got
    assert re.search(r"^sound\+r − mix\s+12 r rule\s+huopin\s+1 deals\s+[+-][\d.]+ \[", got,
                     re.M), got


def test_the_panel_keeps_its_deals_gzipped(tmp_path: Path) -> None:
    """bench/results keeps ``run``'s deals a gzip per opponent and variant: ``keep`` merges
    a run's file into such a folder (again: nothing changes, not a byte), ``report`` reads
    the gzip as the plain file, ``run --kept`` skips the deals kept, and ``run`` refuses to
    append to a gzip (it says how to grow one instead)."""
    out, kept = tmp_path / "panel.jsonl", tmp_path / "kept"
    bench = [sys.executable, str(BENCH / "bench_panel.py")]
    deal = ("run", "--rollouts", "12", "--deals", "1", "--variants", "huopin", "--opponents",
            "rule")

    def call(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*bench, *args], cwd=ROOT, capture_output=True, text=True,
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


#: The deals behind docs/BENCHMARKS.md's issue-34 table of the 托管 default, as ``run`` wrote
#: them, a gzip per opponent and variant: grown with the commands that section documents.
KEPT = ROOT / "bench" / "results" / "tuoguan-panel"
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
#: 托管's default since issue 34's twenty-second stop (docs/decisions.md 79): the search and
#: its rollouts, twice 600 without the bomb over the partner's standing play
_DEFAULT = (f"{_M3}+npb", 1200)
#: ``report --pair``: 托管's default against the default before it (600 rollouts) on the
#: same deals
_AGAINST_600 = ("--pair", "{}:{}".format(*_DEFAULT), f"{_M3}:600")
_REPORTED = _reported(*_DEFAULT)
_DOCUMENTED = re.compile(rf"^\| `(\w+)` \| (\w+) \| ([\d,]+) \| ({_NUM}%) \(({_NUM}%)–({_NUM}%)\) "
                         rf"\| ({_NUM}%) \| ({_NUM}) \[({_NUM}), ({_NUM})\] \| ({_NUM}) \|", re.M)


def _section(title: str) -> str:
    """The text of docs/BENCHMARKS.md's section ``title`` (ASCII minus signs)."""
    text = (ROOT / "docs" / "BENCHMARKS.md").read_text().replace("−", "-")
    return text.split(title, 1)[1].split("\n##", 1)[0]


@functools.cache
def _report(*args: str) -> str:
    """What ``bench_panel.py report`` prints for these arguments."""
    return subprocess.run([sys.executable, str(BENCH / "bench_panel.py"), "report", *args],
                          cwd=ROOT, check=True, capture_output=True, text=True,
                          timeout=120 * LOAD).stdout


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


#: docs/BENCHMARKS.md's tables of the 托管 default over the kept deals: the section each
#: opens, its number of lines, every one of which the folder reproduces, and the search
#: (with its rollouts when not the default's 600).
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


@pytest.mark.parametrize("title", sorted(_TABLES))
def test_the_documented_lines_are_what_the_kept_deals_give(title: str) -> None:
    """A per-line table of the 托管 default in docs/BENCHMARKS.md is what ``report``
    prints for the deals kept in bench/results, each line as it stood with the table's
    number of deals (``report --below N``: the folder grows after a table is written): the
    table's wins, the rule policy's wins, the points over it with their interval and the
    raw points (not the CPU: a measurement of the host). The rounds are deterministic under
    a rollout budget, so a deal measured again on any machine is the same deal."""
    lines, model, *rollouts = _TABLES[title]
    line_of = _reported(model, *rollouts)
    section = _section(title)
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
    """docs/BENCHMARKS.md's 1,200 against 600 rollouts against `team` (the seventh stop) is
    what ``report --pair`` prints for the kept deals of the two lines."""
    files = [str(KEPT / f"team-{vid}.jsonl.gz") for vid in ("bianfeng", "baibian")]
    got = _report("--pair", "mix+r+m2:1200", "mix+r+m2:600", *files)
    for line in ("team      baibian           1000 deals   -0.46 [-0.90, -0.02]",
                 "team      bianfeng          1000 deals   -0.30 [-0.73, +0.13]",
                 "panel     pooled            2000 deals   -0.38 [-0.69, -0.07]"):
        assert line in got, got


def test_the_documented_margin_pairing_is_what_the_kept_deals_give() -> None:
    """docs/BENCHMARKS.md's margin of three against two (the ninth stop: the 托管 default
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
    """docs/BENCHMARKS.md's head to head at 1,200 rollouts without the bomb over the
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
    """docs/BENCHMARKS.md's eleven panel lines measured at 1,200 rollouts with the filter
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
    """docs/BENCHMARKS.md's twelve panel lines of the twentieth stop at 1,200 rollouts with
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
    """docs/BENCHMARKS.md's last ten panel lines at 1,200 rollouts with the filter (the
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
    """docs/BENCHMARKS.md's twenty-second stop of issue 34, where 托管's default became
    1,200 rollouts with the filter: random play pooled over the seven variants at 1,000
    deals, against the default before it on the same deals (pooled and per variant), and
    the targets table's head to head and panel, as ``report`` prints them."""
    section = _section("### Random play at 1,200 rollouts with the filter")
    prose = " ".join(section.split())
    files = sorted(map(str, KEPT.glob("random-*.jsonl.gz")))
    got = _report("--below", "1000", *files).split("{} {} r:".format(*_DEFAULT), 1)[1]
    assert got.startswith("\n  random: 99.8% of 14000 rounds [99.7%, 99.9%]"), got
    assert "99.8 % of the 14,000 rounds [99.7, 99.9]" in prose
    got = _report("--below", "1000", *_AGAINST_600, *files)
    _check_pairing_matrix(section, 1000, got, cells=7)
    _assert_reported_as_documented("pooled            7000 deals   -0.42 [-0.61, -0.23]", got,
                                   prose)
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
    """docs/BENCHMARKS.md's three − two over the whole panel (the tenth stop), each line on
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
    """docs/BENCHMARKS.md's 1,200 rollouts against 托管's 600 (the eleventh stop:
    docs/decisions.md 78) is what ``report`` prints for the kept deals: the head to head in
    seven variants (points and the rounds won, paired), and the whole panel's first 40
    deals per line."""
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
    """docs/BENCHMARKS.md's styles read from the round's actions against the 托管 default
    (the tenth stop: docs/decisions.md 77) is what ``report --pair`` prints for the kept
    deals: four panel lines pooled, and the head to head in fengkuang_crazy. `blind` paired
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
    """docs/BENCHMARKS.md's twelfth stop of issue 34 is what ``report --pair`` prints for the
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
    """docs/BENCHMARKS.md's thirteenth stop of issue 34 is what ``report`` prints for the
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
    """docs/BENCHMARKS.md's fourteenth stop of issue 34 is what ``report`` prints for the
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
    """docs/BENCHMARKS.md's fifteenth stop of issue 34 is what ``report`` prints for the
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
    """docs/BENCHMARKS.md's sixteenth stop of issue 34 is what ``report`` prints for the
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
