"""Fuzz replay validation and round settlement: core.replay.score_replay on arbitrary
JSON-ish documents and on mutations of valid replays, and core.scoring.score_round on
arbitrary summaries.

A document either fails with a core_ext error (ReplayError naming the action or field) or
settles into a result whose amounts add up, which serialises to JSON.
"""

from __future__ import annotations

import copy
import json
import random
import sys

from common import VARIANTS, Input, cards_any, core_call, main, play_codes, variant_any

from shuangkou.core.replay import score_replay
from shuangkou.core.scoring import score_round

REPLAY_KEYS = ("variant", "hands", "leader", "revealed", "teams", "partner", "actions",
               "stake", "table_fee", "partial_deal", "seat", "play", "pass", "escape",
               "declare", "declare_top")


def _generated() -> list[dict[str, object]]:
    """Valid replays to mutate (needs the enumeration engine; empty without it)."""
    try:
        from shuangkou.core.generate import generate_replay
        return [generate_replay(v, seed=s) for v in VARIANTS for s in range(3)]
    except Exception:  # noqa: BLE001 - the generator is optional here
        return []


SEEDS = _generated()


def small_replay(inp: Input) -> dict[str, object]:
    """A partial deal and a few moves that follow the turn order more often than not."""
    variant = inp.choice(VARIANTS)
    rng = random.Random(inp.int(0, 2**16))
    deck = [1 + r * 5 + s for r in range(4, 13) for s in range(4)] * 2 + [70, 70, 75, 75]
    rng.shuffle(deck)
    hands = [sorted(deck[i * 8:i * 8 + inp.int(1, 8)]) for i in range(4)]
    held = [list(h) for h in hands]
    actions: list[dict[str, object]] = []
    seat = inp.int(0, 3)
    for _ in range(inp.int(0, 24)):
        pick = inp.byte() % 8
        if pick < 5 and held[seat]:
            k = inp.int(1, min(4, len(held[seat])))
            play = held[seat][:k] if inp.bool() else held[seat][-k:]
            del held[seat][:0]
            for c in play:
                held[seat].remove(c)
            actions.append({"seat": seat, "play": play})
        elif pick < 7:
            actions.append({"seat": seat, "pass": True})
        else:
            actions.append({"seat": seat, "escape": True})
        seat = (seat + (1 if inp.byte() % 4 else inp.int(0, 3))) % 4
    doc: dict[str, object] = {"variant": variant, "hands": hands, "leader": actions[0]["seat"]
                              if actions else 0, "partial_deal": True, "actions": actions}
    if inp.bool():
        doc["revealed"] = inp.choice(hands[0]) if hands[0] else "7S"
    return doc


def mutate(inp: Input, doc: dict[str, object]) -> dict[str, object]:
    doc = copy.deepcopy(doc)
    for _ in range(inp.int(0, 4)):
        pick = inp.byte() % 7
        actions = doc.get("actions")
        if pick == 0:
            doc[inp.choice(REPLAY_KEYS)] = inp.json(2, REPLAY_KEYS)
        elif pick == 1 and doc:
            doc.pop(inp.choice(sorted(doc)), None)
        elif pick == 2 and isinstance(actions, list) and actions:
            del actions[inp.int(0, len(actions) - 1):]
        elif pick == 3 and isinstance(actions, list) and actions:
            a = actions[inp.int(0, len(actions) - 1)]
            if isinstance(a, dict):
                a[inp.choice(REPLAY_KEYS[-6:])] = inp.json(1) if inp.bool() else cards_any(inp)
        elif pick == 4 and isinstance(actions, list) and actions:
            i, j = inp.int(0, len(actions) - 1), inp.int(0, len(actions) - 1)
            actions[i], actions[j] = actions[j], actions[i]
        elif pick == 5:
            doc["stake"] = inp.edge_int()
        else:
            doc["variant"] = variant_any(inp) if inp.bool() else {"extends": inp.choice(VARIANTS)}
    return doc


def check_result(result: object) -> None:
    d = result.to_dict()   # type: ignore[attr-defined]
    json.dumps(d)
    if sum(d["final"]) != d["total"]:
        raise AssertionError(f"finals {d['final']} do not add up to total {d['total']}")


def summary_args(inp: Input) -> dict[str, object]:
    args: dict[str, object] = {
        "variant": variant_any(inp),
        "finish_order": [inp.int(0, 4) if inp.byte() % 8 else inp.edge_int()
                         for _ in range(inp.int(0, 5))],
        "bombs": [[play_codes(inp) if inp.byte() % 4 else cards_any(inp)
                   for _ in range(inp.int(0, 2))] for _ in range(inp.choice((4, 4, 4, 3)))],
    }
    for key in ("stake", "table_fee", "escape"):
        if inp.bool():
            args[key] = inp.edge_int() if inp.byte() % 2 else inp.json(1)
    if inp.bool():
        args["cards_left"] = [inp.int(0, 30) for _ in range(inp.choice((4, 4, 3)))]
    if inp.bool():
        args["hands"] = [play_codes(inp, inp.int(0, 6)) for _ in range(4)]
    return args


def one_input(data: bytes) -> None:
    inp = Input(data)
    pick = inp.byte() % 8
    if pick < 2:
        ok, result = core_call(score_round, **summary_args(inp))
    else:
        if pick < 5 and SEEDS:
            doc: object = mutate(inp, inp.choice(SEEDS))
        elif pick < 7:
            doc = mutate(inp, small_replay(inp))
        else:
            doc = inp.json(4, REPLAY_KEYS)
        if inp.byte() % 4 == 0:
            doc = json.dumps(doc, default=repr) if inp.bool() else inp.raw(64)
        ok, result = core_call(score_replay, doc)
    if ok:
        check_result(result)


if __name__ == "__main__":
    main(one_input, sys.argv)
