"""The opponent panel (issue 34): players of clearly different styles, written apart from
the code they measure, and the rounds they play against it.

* :data:`PANEL` — the styles by name (:mod:`.styles`: ``cautious``, ``bomber``, ``blind``,
  ``hoarder``, ``team``); each a :data:`Player`, a function ``(round, rng) -> None`` that
  makes the seat to act take its action. Each sees only its own hand and the public table,
  lists its legal plays with the core's public API (``Round.legal_plays``) and picks by
  plain rules of its own — none shares code with the rule policy or the search.
* :func:`random_action`, :func:`rule_player`, :func:`search_player` — the players that are
  not styles: uniform random play, the rule policy, a search (:mod:`.players`).
* :func:`new_round`, :func:`play`, :func:`team_points` — a seeded deal, a round played out by
  two teams of players, a team's points (:mod:`.rounds`).
* :func:`wilson`, :func:`interval` — the 95 % intervals of a share and of a mean
  (:mod:`.figures`).

::

    import random
    from research.panel import PANEL, new_round, play, rule_player, team_points
    from shuangkou.core import get_variant

    r = play(new_round(get_variant("baibian"), random.Random(1)), 0, rule_player,
             PANEL["bomber"], random.Random(2))
    team_points(r, 0)

``python -m research.panel`` (from the repository root) shows how strong each style is
(:mod:`.__main__`).
"""

from .figures import interval, wilson
from .players import Player, act, random_action, rule_action, rule_player, search, search_player
from .rounds import VARIANTS, new_round, play, team_points
from .styles import PANEL, blind, bomber, cautious, hoarder, team

__all__ = ["PANEL", "cautious", "bomber", "blind", "hoarder", "team", "Player", "act",
           "random_action", "rule_action", "rule_player", "search", "search_player",
           "VARIANTS", "new_round", "play", "team_points", "wilson", "interval"]
