"""Records kept when a replica dies mid-run (issue 9, item 6): `score-replays --server A,B`
over a 30,000-line archive while one of the two `shuangkou serve` processes is SIGKILLed.

    .venv/bin/python bench/bench_failover.py [--lines 30000] [--kill-after 3]

Prints how many lines were scored remotely, whether every record equals the local scorer's
record for the same line (alignment and content), and the run's exit status.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from grpc_helpers import ServerProcess  # noqa: E402

from shuangkou.core import BUILTIN  # noqa: E402
from shuangkou.core.generate import generate_replay  # noqa: E402


def archive(n: int, path: Path) -> None:
    """n lines: generated replays of every variant (cycled), one malformed line in 500."""
    distinct = [json.dumps(generate_replay(v, seed, escape_prob=0.05))
                for seed in range(300) for v in BUILTIN]
    with path.open("w") as out:
        for i in range(n):
            out.write("{not json\n" if i % 500 == 499 else distinct[i % len(distinct)] + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=30_000)
    parser.add_argument("--kill-after", type=float, default=3.0,
                        help="seconds after the start of the run to SIGKILL replica B")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="shuangkou-failover-"))
    src = tmp / "archive.jsonl"
    archive(args.lines, src)
    cli = [str(ROOT / ".venv" / "bin" / "shuangkou"), "score-replays"]
    local = subprocess.run([*cli, str(src)], capture_output=True, text=True, check=False)
    a = ServerProcess("--port", "0", "--metrics-port", "0")
    b = ServerProcess("--port", "0", "--metrics-port", "0")
    try:
        a.wait_serving()
        b.wait_serving()
        target = f"127.0.0.1:{a.port},127.0.0.1:{b.port}"
        t0 = time.monotonic()
        run = subprocess.Popen([*cli, "--server", target, "-j", "4", str(src)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(args.kill_after)
        b.proc.send_signal(signal.SIGKILL)
        killed_at = time.monotonic() - t0
        out, err = run.communicate(timeout=900)
        wall = time.monotonic() - t0
    finally:
        a.stop()
        b.stop()
    remote_lines = out.splitlines()
    local_lines = local.stdout.splitlines()
    same = sum(x == y for x, y in zip(remote_lines, local_lines, strict=False))
    print(f"archive: {args.lines:,} lines ({args.lines // 500} malformed); replica B SIGKILLed "
          f"{killed_at:.1f} s into a {wall:.1f} s run")
    print(f"records: {len(remote_lines):,} remote, {len(local_lines):,} local; identical and "
          f"aligned: {same:,}; exit status remote {run.returncode}, local {local.returncode}")
    if err.strip():
        print("stderr:", err.strip().splitlines()[-1])
    return 0 if same == len(local_lines) == args.lines else 1


if __name__ == "__main__":
    sys.exit(main())
