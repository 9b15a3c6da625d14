"""The regression guard of every bench: the same workload on this build and a previous one.

    .venv/bin/python bench/baseline.py REV [--dry-run]    # build REV, print its python

A bench script that takes ``--against REV`` (a git revision, or the path of another build's
python) calls :func:`builds` for ``{"this": …, "base": …}`` interpreters and
:func:`alternate` to run its worker in each, pass after pass, alternating which goes first.
A revision is built once in a git worktree under ``build/baseline/<commit>`` with its own
``.venv`` (``bash scripts/setup-env.sh --runtime`` of that revision), so its editable install
is its own tree's build. Workers run from a scratch folder outside both trees with
``PYTHONPATH`` empty, so each interpreter imports its own build; they are this file's
sibling scripts, so they must import either layout: :func:`core` gives ``shuangkou.core``
(from the one-import-name redesign on) or ``core_ext`` (``d528df1`` and before).

Figures come back as ``{line: value}`` per pass; :func:`report` prints, per line, the
median of each build and the median of the paired ratios (this / base, one pair per pass):
on a shared machine the pairs taken side by side are the figures to trust.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASELINES = ROOT / "build" / "baseline"

__all__ = ["core", "python_for", "builds", "alternate", "report", "add_argument"]


def core() -> ModuleType:
    """The rules core of whichever build this interpreter runs."""
    try:
        return importlib.import_module("shuangkou.core")
    except ImportError:
        return importlib.import_module("core_ext")


def _git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def python_for(against: str, *, dry_run: bool = False, log: Callable[[str], None] = print) -> str:
    """The python of the build ``against`` names: an interpreter path as it is, else a git
    revision, built (once) in ``build/baseline/<commit>``."""
    if os.sep in against and Path(against).is_file():
        return against
    commit = _git("rev-parse", "--verify", f"{against}^{{commit}}")
    tree = BASELINES / commit[:12]
    python = tree / ".venv" / "bin" / "python"
    if dry_run:
        log(f"baseline {against} = {commit[:12]}: {tree} "
            f"({'built' if python.exists() else 'to build'})")
        return str(python)
    if not (tree / ".git").exists():
        BASELINES.mkdir(parents=True, exist_ok=True)
        _git("worktree", "add", "--detach", "--force", str(tree), commit)
    # up to date in a second when nothing changed; a first build takes a few minutes
    got = subprocess.run(["bash", "scripts/setup-env.sh", "--runtime"], cwd=tree,
                         capture_output=True, text=True, check=False)
    if got.returncode:
        sys.exit(f"baseline {against}: setup-env failed:\n{got.stderr[-4000:]}")
    log(f"baseline {against} = {commit[:12]}, built in {tree.relative_to(ROOT)}")
    return str(python)


def add_argument(ap: argparse.ArgumentParser) -> None:
    """The ``--against`` option every bench takes."""
    ap.add_argument("--against", metavar="REV|PYTHON",
                    help="also run on the build of this git revision (built under "
                         "build/baseline/) or this interpreter, alternating, and print ratios")


def builds(against: str | None) -> dict[str, str]:
    """``{"this": sys.executable}``, plus ``"base"`` when ``against`` names a build."""
    out = {"this": sys.executable}
    if against:
        out["base"] = python_for(against)
    return out


def alternate(script: str | Path, worker_args: Sequence[str], interpreters: dict[str, str],
              passes: int, payload: Any = None) -> dict[str, list[dict[str, float]]]:
    """Run ``script --worker FILE *worker_args`` ``passes`` times in each interpreter, in
    fresh processes, alternating the order; each run prints one JSON object of figures.

    ``payload`` (JSON-able) is written to FILE once and read by every worker, so both builds
    see exactly the same input."""
    out: dict[str, list[dict[str, float]]] = {name: [] for name in interpreters}
    names = list(interpreters)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "payload.json"
        path.write_text(json.dumps(payload))
        for k in range(passes):
            for name in names if k % 2 == 0 else names[::-1]:
                got = subprocess.run(
                    [interpreters[name], str(Path(script).resolve()), "--worker", str(path),
                     *worker_args],
                    capture_output=True, text=True, check=False, cwd=tmp,
                    env={**os.environ, "PYTHONPATH": ""})
                if got.returncode:
                    sys.exit(f"{interpreters[name]} {script}: {got.stderr[-4000:]}")
                out[name].append(json.loads(got.stdout.strip().splitlines()[-1]))
    return out


def report(results: dict[str, list[dict[str, float]]], unit: str, *,
           higher_is_better: bool = True, width: int = 46) -> dict[str, float]:
    """Print each line's median per build and, with a base, the median of the paired ratios
    (this / base: above 1 is faster when ``higher_is_better``). Returns those ratios."""
    this = results["this"]
    base = results.get("base")
    lines = list(this[0])
    head = f"{'line':{width}s} {'this':>12s}"
    if base:
        head += f" {'base':>12s} {'this/base':>10s}  (paired, per pass)"
    print(head + f"   [{unit}]")
    ratios: dict[str, float] = {}
    for line in lines:
        mine = [p[line] for p in this]
        row = f"{line:{width}s} {_fmt(statistics.median(mine)):>12s}"
        if base and all(line in p for p in base):
            theirs = [p[line] for p in base]
            pairs = [a / b if b else float("inf") for a, b in zip(mine, theirs, strict=True)]
            ratios[line] = statistics.median(pairs)
            row += (f" {_fmt(statistics.median(theirs)):>12s} {ratios[line]:10.3f}  "
                    + " ".join(f"{r:.2f}" for r in pairs))
        print(row)
    if ratios:
        print(f"geometric mean this/base over {len(ratios)} lines: "
              f"{statistics.geometric_mean(ratios.values()):.3f}"
              + ("" if higher_is_better else " (times: below 1 is faster)"))
    return ratios


def _fmt(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}" if abs(x) < 10 else f"{x:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("rev", help="git revision to build under build/baseline/")
    ap.add_argument("--dry-run", action="store_true", help="only say where it is (or would be)")
    args = ap.parse_args()
    print(python_for(args.rev, dry_run=args.dry_run))


if __name__ == "__main__":
    main()
