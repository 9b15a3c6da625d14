"""What engine assistance rests on, per kind of the panel: its players' agreement with 托管's
choice where that is not the rule policy's action, over every such decision (whatever the
player took there), with its 95 % interval over the kind's seat-rounds, and its loss share
on its other evaluated decisions (its skill where agreement cannot tell) — the figures
``review-replays --fair-play`` gives a player beside the engine test (``agreement``), here
over the rounds kept (``keep``) of a panel.

A reference seat (``ref-<policy> vs <kind>``) is left out when it is the rule policy: it
plays the rule policy's action, so it never takes 托管's choice there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from shuangkou.core.fairplay import Agreement

from .power import load

__all__ = ["agreements", "table"]


def agreements(folder: Path) -> dict[str, Agreement]:
    """Each kind's sums over its seat-rounds in the kept ``folder`` (module doc)."""
    pools = load(folder)
    out: dict[str, Agreement] = {}
    for kind, players in sorted(pools.players.items()):
        if kind.startswith("ref-rule"):
            continue
        # a row kept before departures were counted has none, and takes choices nonetheless
        if any(p.engine.departs < p.engine.engine + p.engine.rule for p in players):
            raise ValueError(f"{folder}: {kind}'s rows hold no departures (kept before they "
                             "were counted): review its rounds again")
        sums = Agreement()
        for p in players:
            sums.add(*p.engine)
        out[kind] = sums
    return out


def table(folder: Path) -> list[dict[str, Any]]:
    """The rows :func:`agreements` gives, as printed: kind, seat-rounds, departures, the
    agreement with its interval and the loss share elsewhere."""
    rows = []
    for kind, a in agreements(folder).items():
        half = 1.96 * a.se
        rows.append({"kind": kind, "rounds": a.rounds, "departs": a.departs,
                     "agreement": round(a.agreement, 3),
                     "low": round(max(0.0, a.agreement - half), 3),
                     "high": round(min(1.0, a.agreement + half), 3),
                     "elsewhere": round(a.elsewhere, 3)})
    return rows
