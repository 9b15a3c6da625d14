"""A stand-in for ``shuangkou.core.review`` in archive tests: the review's JSON shape with
figures drawn from the replay and the seed, and the scorer's errors (the real review raises
as score_replay does). tests/test_review_archive.py puts it in ``sys.modules`` (and, through
a ``sitecustomize``, in Dask worker processes), so archive tests test the archive, not the
search."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from shuangkou.core.replay import score_replay


@dataclass(frozen=True)
class ReviewBudget:
    rollouts: int = 200
    width: int = 6
    decoys: int = 3
    fair_deals: int = 12


DEFAULT_REVIEW = ReviewBudget()


class Review:
    def __init__(self, d: dict[str, Any]) -> None:
        self.d = d

    def to_dict(self) -> dict[str, Any]:
        return self.d


def _evidence(rng: random.Random, kind: str, decoys: int) -> dict[str, Any]:
    """A decision's evidence on one view, as the review's JSON form gives it: regrets that
    are often all 0 (nothing carried) and otherwise a few points."""
    regrets = [0.0 if rng.random() < 0.4 else round(rng.expovariate(0.4), 3)
               for _ in range(decoys + 1)]
    true, others = regrets[0], regrets[1:]
    return {"kind": kind, "regret": true, "decoy_regrets": others,
            "excess": sum(others) / len(others) - true, "disagree": rng.random() < 0.5,
            "follows": true == 0.0}


def review(replay: Any, *, budget: Any = DEFAULT_REVIEW, seed: int = 0,
           timeout: float | None = None, cancelled: Any = None, oracle: bool = False,
           fair: bool = False, partial_deal: bool = False) -> Review:
    result = score_replay(replay, partial_deal=partial_deal)
    doc = json.loads(replay) if isinstance(replay, str) else replay
    rng = random.Random(f"{seed}:{budget.rollouts}:{json.dumps(doc['actions'])}")
    named = doc.get("players")
    decisions = []
    for i, a in enumerate(doc["actions"]):
        forced = rng.random() < 0.3
        loss = 0.0 if forced else round(rng.expovariate(0.7), 3)
        gain = None if not oracle else 0.0 if forced else round(rng.gauss(-0.5, 1.0), 3)
        best_taken = forced or loss == 0.0 or rng.random() < 0.5
        verdict = "forced" if forced else ("blunder" if loss > 6 else "mistake" if loss > 3
                                           else "inaccuracy" if loss > 1 else "good")
        decisions.append({
            "index": i, "seat": a["seat"], "forced": forced,
            "candidates": [{"taken": best_taken, "hint_rank": 0},
                           {"taken": not best_taken, "hint_rank": 1}], "best": 0,
            "loss": loss, "loss_se": 0.1, "stake": 0.0 if forced else loss + 2.0,
            "verdict": verdict,
            "agrees_first": best_taken, "agrees_top3": best_taken or rng.random() < 0.6,
            "oracle_gain": gain, "deals": 0 if forced else budget.rollouts,
            "tuoguan": 0 if forced else rng.randrange(2),
            "fair": [] if forced or not fair else [_evidence(rng, kind, budget.decoys)
                                                   for kind in ("partner", "all")]})
    return Review({
        "variant": result.variant, "seed": seed, "width": budget.width,
        "players": None if named is None else [named[d] for d in result.hand_at],
        "decisions": decisions, "seats": [], "result": {"final": list(result.final)},
        "rollouts": budget.rollouts, "seconds": rng.random()})
