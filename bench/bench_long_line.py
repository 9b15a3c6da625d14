"""Memory of one huge archive line (issue 62): peak RSS of the whole process tree (the pod's
memory: the command and its pool workers) while ``score-replays`` and ``review-replays`` read
an archive whose middle line is ``--mib`` MiB, in every mode that reads lines.

    .venv/bin/python bench/bench_long_line.py [--mib 1024] [--modes plain,pool,...]

Each mode runs the real command on a fresh copy of the archive (a replay, the long line, a
replay; plain and gzipped) and prints its exit status, the long line's record and the peak
RSS, polled every 10 ms over /proc. A line over the maximum line size (1 MiB,
service/batch/inputs.py) is read past in blocks and never held, so the peak is the
command's own, whatever the line's size. The host is shared: note the load average.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tests"))
from grpc_helpers import ServerProcess  # noqa: E402

from shuangkou.core.generate import generate_replay  # noqa: E402

MODES = {
    # name: arguments after the command (ARCHIVE, GZ and OUT replaced), how the input comes
    "plain": (["score-replays", "ARCHIVE", "-j", "1"], None),
    "pool": (["score-replays", "ARCHIVE", "-j", "2", "--chunk-size", "1"], None),
    "stdin": (["score-replays", "-", "-j", "1"], "ARCHIVE"),
    "gzip": (["score-replays", "GZ", "-j", "1"], None),
    "archive": (["score-replays", "ARCHIVE", "--output-dir", "OUT", "-j", "1",
                 "--partition-lines", "1"], None),
    "archive-gz": (["score-replays", "GZ", "--output-dir", "OUT", "-j", "1"], None),
    "server": (["score-replays", "ARCHIVE", "--server", "SERVER", "-j", "1"], None),
    "review-replays": (["review-replays", "ARCHIVE", "--output-dir", "OUT", "-j", "1",
                        "--rollouts", "8"], None),
    "review --line": (["review", "ARCHIVE", "--line", "2", "--rollouts", "8"], None),
}


def _tree(pid: int) -> list[int]:
    """``pid`` and every descendant (from /proc's children lists)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return found


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run(argv: list[str], stdin: Path | None) -> tuple[int, str, str, float]:
    """Exit status, stdout, stderr and the peak RSS (MiB) of the process tree."""
    with (stdin.open("rb") if stdin else open(os.devnull, "rb")) as source:
        proc = subprocess.Popen([str(BIN / "shuangkou"), *argv], stdin=source,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        peak = [0]

        def poll() -> None:
            while proc.poll() is None:
                peak[0] = max(peak[0], sum(_rss_kib(p) for p in _tree(proc.pid)))
                time.sleep(0.01)

        watcher = threading.Thread(target=poll, daemon=True)
        watcher.start()
        out, err = proc.communicate()
        watcher.join()
    return proc.returncode, out, err, peak[0] / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024, help="the long line's MiB")
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"comma-separated, of {', '.join(MODES)}")
    args = parser.parse_args()
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        replay = json.dumps(generate_replay("baibian", 1)).encode()
        archive, packed = folder / "day.jsonl", folder / "day.jsonl.gz"
        with archive.open("wb") as out:
            out.write(replay + b"\n" + b'{"variant": "baibian", "players": ["')
            block = b"x" * (1 << 20)
            for _ in range(args.mib):
                out.write(block)
            out.write(b'"]}\n' + replay + b"\n")
        with archive.open("rb") as source, gzip.open(packed, "wb", compresslevel=1) as out:
            while chunk := source.read(1 << 24):
                out.write(chunk)
        server = ServerProcess("--port", "0", "--metrics-port", "0", "--no-http") \
            if "server" in modes else None
        try:
            if server is not None:
                server.wait_serving()
            load = os.getloadavg()[0]
            print(f"a {args.mib:,} MiB line between two replays; load average {load:.2f}")
            print(f"{'mode':<16} {'exit':>4}  {'peak RSS':>9}  the long line's record")
            for n, mode in enumerate(modes):
                argv, stdin = MODES[mode]
                subst = {"ARCHIVE": str(archive), "GZ": str(packed),
                         "OUT": str(folder / f"out{n}"),
                         "SERVER": f"127.0.0.1:{server.port}" if server else ""}
                argv = [subst.get(a, a) for a in argv]
                status, out, err, peak = run(argv, archive if stdin else None)
                if argv[0] == "review":         # its one line, after the file's name
                    said = err.strip().splitlines()[-1].split(" line 2: ", 1)[-1] \
                        if err.strip() else ""
                else:
                    parts = sorted((folder / f"out{n}" / "parts").glob("*.jsonl"))
                    records = (out.splitlines() if not parts else
                               [x for p in parts for x in p.read_text().splitlines()])
                    said = json.loads(records[1])["error"]["reason"] if len(records) > 1 \
                        else err.strip()[-200:]
                print(f"{mode:<16} {status:>4}  {peak:>5.0f} MiB  {said[:90]}")
        finally:
            if server is not None:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
