"""A slow, obviously-correct twin of a round's tricks (RULES.md §9), for the story and
page tests: who led each trick and why, which actions it holds, who took it, and the
reading that stood after each play — from the replay alone, with the rule written out
here (a trick ends when every other seat still holding cards has passed on the last play;
its player leads next, or by 接风 its partner, then the next seat holding cards), the
seating from the replay's score and each reading from ``core.play_reading``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from shuangkou import core


@dataclass
class TwinTrick:
    leader: int
    lead: str                   # first / won / wind
    actions: list[int]          # replay indices
    won_by: int | None


def twin_tricks(replay: dict[str, Any]) -> tuple[list[TwinTrick], dict[int, core.Reading]]:
    """The tricks of a valid replay and the reading that stood after each play, by action
    index."""
    v = core.get_variant(replay["variant"])
    hand_at = core.score_replay(replay).hand_at
    left = [len(core.parse_cards(replay["hands"][hand_at[t]])) for t in range(4)]
    tricks = [TwinTrick(replay["leader"], "first", [], None)]
    readings: dict[int, core.Reading] = {}
    standing = None
    last = passes = 0
    for i, a in enumerate(replay["actions"]):
        trick = tricks[-1]
        trick.actions.append(i)
        seat = a["seat"]
        if "play" in a:
            cards = core.parse_cards(a["play"])
            standing = core.play_reading(cards, v, standing, a.get("declare"),
                                         a.get("declare_top"))
            readings[i] = standing
            left[seat] -= len(cards)
            last, passes = seat, 0
        elif a.get("pass"):
            passes += 1
            holding = sum(1 for n in left if n)
            if passes == holding - (1 if left[last] else 0):
                trick.won_by = last
                if left[last]:
                    tricks.append(TwinTrick(last, "won", [], None))
                else:
                    mate = (last + 2) % 4
                    nxt = next(s for s in (mate, (last + 1) % 4, (mate + 1) % 4) if left[s])
                    tricks.append(TwinTrick(nxt, "wind", [], None))
                standing, passes = None, 0
    if not tricks[-1].actions:
        tricks.pop()
    return tricks, readings
