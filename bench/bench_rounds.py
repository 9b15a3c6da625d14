"""The round flow through core.Round against the replay validator it replaced.

1. Replay validation + scoring per second per core (CPU time, best of ``--repeat`` passes):
   ``core.score_replay`` (a document folded over a Round in compiled code, settled by
   the compiled settlement core_ext/_settle.pyx) against ``score_replay`` of commit
   :data:`BASE` (the last one before Round: its Python validator and Python settlement,
   loaded from git history) — the issue-11 ratio — and against the old validator kept as
   tests/replay_v1.py (which settles through today's compiled settlement, so that ratio
   is the validation's), on the same generated replays (every variant, 5 % escapes;
   baibian escapes are refused by all), in the same run. Also from JSON text, and through
   the typed record (``parse_replay`` then fold).
2. One applied action in-process: each ``Round.play`` / ``pass_turn`` / ``escape`` of the
   same replays timed on its own (``perf_counter_ns`` around the call); median and p99.
3. The serialised state: ``to_bytes`` size per variant, and ``from_bytes`` + ``to_bytes``
   time (what a stateless round RPC pays per call).

Run: ``.venv/bin/python bench/bench_rounds.py [--replays 150] [--repeat 3]``
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import replay_v1  # noqa: E402  (the pre-Round validator, tests/replay_v1.py)
from settlement_reference import multi_bomb_star  # noqa: E402

from shuangkou import core  # noqa: E402
from shuangkou.core import Declaration, Round, ShuangkouError  # noqa: E402
from shuangkou.core.generate import generate_replay  # noqa: E402

KEYS = core.StateKeys({"k1": b"bench state key, 32 bytes long.."}, "k1")
from shuangkou.core.replay import parse_replay, replay_round, score_replay  # noqa: E402

ESCAPE_PROB = 0.05
#: The last commit before core.Round: its score_replay (validator and settlement) is
#: loaded from git history and measured in the same run as "base".
BASE = "6777089"


def base_score_replay() -> Any:
    """``score_replay`` of commit :data:`BASE` (its replay.py and scoring.py, loaded from
    git as modules of core_ext), or None when the history is not available."""
    code = {}
    for name in ("scoring", "replay"):
        got = subprocess.run(["git", "-C", str(ROOT), "show", f"{BASE}:core_ext/{name}.py"],
                             capture_output=True, text=True, check=False)
        if got.returncode:
            return None
        code[name] = got.stdout.replace("from .scoring import", "from ._base_scoring import") \
            .replace("variant.multi_bomb_star(n, k)", "_multi_bomb_star(variant, n, k)")
    for name in ("scoring", "replay"):
        mod = types.ModuleType(f"shuangkou.core._base_{name}")
        mod.__package__ = "shuangkou.core"
        # Variant.multi_bomb_star, which that settlement called, is gone: the reference's
        # copy of it (tests/settlement_reference.py) stands in.
        mod.__dict__["_multi_bomb_star"] = multi_bomb_star
        sys.modules[mod.__name__] = mod
        exec(compile(code[name], f"{BASE}:core_ext/{name}.py", "exec"), mod.__dict__)
    return sys.modules["shuangkou.core._base_replay"].score_replay


def best_rates(fns: dict[str, Any], items: list, repeat: int) -> dict[str, float]:
    """Items per CPU-second of each function over ``items``, best of ``repeat`` passes.

    The passes are interleaved (one pass of each function in turn, ``repeat`` times), so a
    busy spell on a shared machine slows all of them alike rather than one."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.process_time()
            for x in items:
                try:
                    fn(x)
                except ShuangkouError:
                    pass
            best[name] = min(best[name], time.process_time() - t)
    return {name: len(items) / b for name, b in best.items()}


def action_times(docs: list[dict]) -> list[int]:
    """Nanoseconds of each action applied to a Round on its own."""
    out: list[int] = []
    clock = time.perf_counter_ns
    for doc in docs:
        rep = parse_replay(doc)
        try:
            rnd = rep.start()
        except ShuangkouError:
            continue
        for a in rep.actions:
            if a.kind == "play":
                cards, declare = a.cards, a.declare
                t = clock()
                rnd.play(a.seat, cards, declare)
                out.append(clock() - t)
            elif a.kind == "pass":
                t = clock()
                rnd.pass_turn(a.seat)
                out.append(clock() - t)
            else:
                try:
                    t = clock()
                    rnd.escape(a.seat)
                    out.append(clock() - t)
                except ShuangkouError:
                    pass
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replays", type=int, default=150, help="replays per variant")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    docs = [generate_replay(v, seed, ESCAPE_PROB) for v in core.BUILTIN
            for seed in range(args.replays)]
    texts = [json.dumps(d) for d in docs]
    actions = sum(len(d["actions"]) for d in docs)
    # same answers first (the tests check this at scale)
    for d in docs[:200]:
        try:
            new = score_replay(d).to_dict()
        except ShuangkouError as exc:
            new = str(exc)
        try:
            old = replay_v1.score_replay(d).to_dict()
        except ShuangkouError as exc:
            old = str(exc)
        assert new == old, d
    print(f"{len(docs)} generated replays ({args.replays} per variant, {ESCAPE_PROB:.0%} "
          f"escapes), {actions / len(docs):.0f} actions on average")
    base = base_score_replay()
    if base is not None:
        b = best_rates({"base": base, "new": score_replay}, docs, args.repeat)
        print(f"validate + score vs score_replay of commit {BASE} (its own settlement), "
              f"dicts: base {b['base']:8,.0f}   Round {b['new']:8,.0f}   "
              f"ratio {b['new'] / b['base']:5.2f}x")
    r = best_rates({
        "old": replay_v1.score_replay, "new": score_replay,
        "old_json": replay_v1.score_replay, "new_json": score_replay,
        "old_validate": replay_v1.summarize_replay, "new_validate": replay_round,
        "typed": lambda d: score_replay(parse_replay(d)),
    }, docs, args.repeat)
    rj = best_rates({"old_json": replay_v1.score_replay, "new_json": score_replay}, texts,
                    args.repeat)
    print("replays per CPU-second (one core), old = the pre-Round validator (tests/replay_v1.py;"
          " it settles through today's compiled scoring.settle):")
    print(f"  validate + score, dicts: old {r['old']:8,.0f}   Round {r['new']:8,.0f}   "
          f"ratio {r['new'] / r['old']:5.2f}x")
    print(f"  validate + score, JSON:  old {rj['old_json']:8,.0f}   Round {rj['new_json']:8,.0f}"
          f"   ratio {rj['new_json'] / rj['old_json']:5.2f}x")
    print(f"  validate only, dicts:    old {r['old_validate']:8,.0f}   Round "
          f"{r['new_validate']:8,.0f}   ratio {r['new_validate'] / r['old_validate']:5.2f}x")
    print(f"  typed Replay (parse_replay + fold through the public actions): {r['typed']:,.0f}")
    times = sorted(action_times(docs))
    print(f"one applied action (Round.play / pass_turn / escape, ActionRecord built): "
          f"median {statistics.median(times) / 1000:.2f} µs, "
          f"p99 {times[int(len(times) * 0.99)] / 1000:.2f} µs over {len(times):,} actions")
    sizes = {}
    for v in core.BUILTIN:
        # a round played to the end (with few --replays, all of a variant's may escape)
        done = next((d for d in docs if d["variant"] == v
                     and not d["actions"][-1].get("escape")), None)
        rnd = replay_round(done or generate_replay(v, 0))
        blob, sealed = rnd.to_bytes(), rnd.to_bytes(KEYS)
        n, plain_t, sealed_t = 2000, [], []
        for _ in range(5):       # interleaved, best of five: the machine is shared
            t = time.process_time()
            for _ in range(n):
                Round.from_bytes(blob, v).to_bytes()
            plain_t.append((time.process_time() - t) / n * 1e6)
            t = time.process_time()
            for _ in range(n):
                Round.from_bytes(sealed, v, KEYS).to_bytes(KEYS)
            sealed_t.append((time.process_time() - t) / n * 1e6)
        sizes[v] = (len(blob), min(plain_t), len(sealed), min(sealed_t))
    print("serialised state: bytes, from_bytes + to_bytes µs; sealed (state keys, id 'k1'):")
    for v, (size, us, ssize, sus) in sizes.items():
        print(f"  {v:16s} {size:5d} B  {us:6.1f} µs   sealed {ssize:5d} B  {sus:6.1f} µs  "
              f"(+{sus - us:.1f} µs)")
    _ = Declaration


if __name__ == "__main__":
    main()
