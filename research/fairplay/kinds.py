"""The kinds of tested team the archive deals against a reference team: honest ones, and the
cheats, each with the signal it should raise.

A :class:`Kind` names what both seats of the tested team play (each seat its own player,
drawn per round: a thrower draws each round whether it throws) and the signal
(:data:`SIGNALS`) it cheats on — None for an honest kind. Hand sharing is a partnership's
signal; the others are a player's.
"""

from __future__ import annotations

from dataclasses import dataclass

from research.panel import PANEL, team

from . import players
from .players import HONEST, Seat, assisted, honest_seat, searcher, thrower
from .sighted import seer, sharer, throwing

__all__ = ["KINDS", "REFERENCES", "SIGNALS", "Kind"]

#: The fair-play signals, each a partnership's (hand sharing) or a player's (the others),
#: by their names in review-replays' fair-play summary.
SIGNALS = ("hand_sharing", "full_sight", "thrown_rounds", "engine")


@dataclass(frozen=True)
class Kind:
    """A tested team's kind: ``name`` (the player ids start with it), ``seat`` (each tested
    seat's player per round), ``cheat`` (the signal it cheats on; None: honest) and
    ``what`` it is, for the labels."""

    name: str
    seat: Seat
    cheat: str | None
    what: str


def _search(rollouts: int) -> str:
    return f"托管's search at {rollouts} rollouts (suggest.TUOGUAN's settings, no time cap)"


_SEARCH = _search(players.SEARCH_ROLLOUTS)

KINDS: dict[str, Kind] = {k.name: k for k in [
    *(Kind(f"honest-{name}", honest_seat(HONEST[name]), None,
           f"the panel's {name} style (research/panel/styles.py)") for name in PANEL),
    Kind("honest-rule", honest_seat(HONEST["rule"]), None, "the rule policy (托管 without a budget)"),
    Kind("honest-random", honest_seat(HONEST["random"]), None, "uniformly random legal play"),
    Kind("honest-search", honest_seat(HONEST["search"]), None, _SEARCH),
    *(Kind(f"honest-search-{rollouts}", honest_seat(searcher("own", rollouts)), None,
           _search(rollouts)) for rollouts in players.WEAKER),
    Kind("share-search", honest_seat(searcher("partner")), "hand_sharing",
         _SEARCH + ", told the partner's hand (a hand-sharing pair)"),
    Kind("share-rule", honest_seat(sharer), "hand_sharing",
         "plain rules on the partner's hand over the team style (research/fairplay/sighted.py "
         "sharer; a hand-sharing pair)"),
    Kind("sight-search", honest_seat(searcher("all")), "full_sight",
         _SEARCH + ", told every hand (a full-sight client at each seat)"),
    Kind("sight-rule", honest_seat(seer), "full_sight",
         "plain rules on every hand over the team style (research/fairplay/sighted.py seer; a "
         "full-sight client at each seat)"),
    Kind("throw-rule", thrower(HONEST["rule"], throwing), "thrown_rounds",
         f"the rule policy, throwing {players.THROW_SHARE:.0%} of its rounds (drawn per round "
         "and recorded; sighted.py throwing: blocks its partner, passes on the opponents, "
         "leads broken bombs and wilds)"),
    Kind("engine-team", honest_seat(assisted(team)), "engine",
         f"the team style, playing 托管's choice (suggest at {players.ASSIST.rollouts} rollouts, no time "
         f"cap) on {players.ASSIST_SHARE:.0%} of its decisions (drawn per decision)"),
]}

#: The reference teams a tested team plays against.
REFERENCES: dict[str, Seat] = {"rule": honest_seat(HONEST["rule"]),
                               "search": honest_seat(HONEST["search"])}
