"""How the search imagines the other seats: the rule policy's styles and the rollout models,
as two tables.

A **style** is one row of :data:`STYLE_TABLE`: the rule policy (core_ext/_suggest.pyx, the
steps suggest.py documents) played with other thresholds — when it spends a wild joker or
breaks a bomb to beat an opponent, when it bombs, when it holds its bombs back, whether it
plays over its partner. The thresholds are counted by how close the nearest opponent is to
going out (the fewest cards an opponent still holds): :data:`CLOSE` (one or two cards),
:data:`DANGER` (the rule policy's own threshold) or :data:`ANY` (any distance). The first
row is the rule policy itself.

A **rollout model** is one row of :data:`MODEL_TABLE`: the styles a rollout draws each other
seat's style from, uniformly, per deal (a model of one style draws nothing); the seat that
searches always plays the rule policy. ``Budget.model`` names a row.

The compiled policy and the rollouts read both tables when they are imported
(``_suggest.pyx`` copies the styles into C, ``_rollout.pyx`` the models), so a new style or
model is one row here and no rebuild (docs/design.md, the worked example;
tests/test_styles.py adds one). The tables are checked at import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .errors import ShuangkouError

__all__ = ["ANY", "CLOSE", "DANGER", "MAX_STYLES", "MODELS", "MODEL_TABLE", "Model", "STYLES",
           "STYLE_TABLE", "Style", "model", "style_index"]

#: An opponent this close to going out (cards or fewer) is "about to go out": the rule
#: policy's threshold (its C constant DANGER, which _suggest.pyx checks against this one).
DANGER = 5
#: An opponent with this many cards or fewer is one play from going out.
CLOSE = 2
#: Any distance: a threshold that always holds (at least the policy's NO_DANGER, the
#: distance when no opponent holds cards).
ANY = 99
#: The most styles the compiled policy holds (_suggest.pyx ``MAXSTYLES``).
MAX_STYLES = 16


@dataclass(frozen=True)
class Style:
    """One way of playing the rule policy."""

    name: str
    over_partner: bool     # plays over its partner's standing play as over an opponent's
    spend_within: int      # following an opponent: spends a wild joker or breaks a bomb to
    #                        beat when an opponent holds this many cards or fewer
    bomb_within: int       # bombs an opponent's play when an opponent holds this many cards
    #                        or fewer (else only to go out, or for a star that pays)
    hold_beyond: int       # passes, keeping its bombs, when every opponent holds more than
    #                        this many cards and no bomb takes it out (ANY: never)
    words: str             # what it is, for the docs and the panel's reports


#: The styles, the rule policy first (the seat that searches plays it).
STYLE_TABLE: tuple[Style, ...] = (
    Style("rule", over_partner=False, spend_within=DANGER, bomb_within=DANGER, hold_beyond=ANY,
          words="the rule policy"),
    Style("bold", over_partner=False, spend_within=ANY, bomb_within=ANY, hold_beyond=ANY,
          words="beats whenever it can: spends wilds, breaks and plays bombs"),
    Style("cautious", over_partner=False, spend_within=CLOSE, bomb_within=DANGER,
          hold_beyond=CLOSE,
          words="keeps wilds and bombs unless an opponent has 1-2 cards or it goes out"),
    Style("blind", over_partner=True, spend_within=DANGER, bomb_within=DANGER, hold_beyond=ANY,
          words="plays over its partner as over an opponent"),
)

#: The style names, in table order (a style's index is its position).
STYLES: tuple[str, ...] = tuple(row.name for row in STYLE_TABLE)


@dataclass(frozen=True)
class Model:
    """One rollout model: the styles each other seat's style is drawn from, per deal."""

    name: str
    draws: tuple[str, ...]    # style names, drawn uniformly (repeats weigh); one: no draw
    words: str


#: The rollout models (``Budget.model``).
MODEL_TABLE: tuple[Model, ...] = (
    Model("rule", ("rule",), "the rule policy in every seat (issue 24's search)"),
    Model("mix", ("rule", "rule", "bold", "cautious", "blind"),
          "the rule policy 2 in 5, bold, cautious and partner-blind 1 in 5 each: a choice "
          "does not hinge on one assumed opponent"),
    Model("sound", ("rule", "rule", "bold", "cautious"),
          "the mixture without its partner-blind style: every seat plays for its team"),
)

#: The model names, in table order.
MODELS: tuple[str, ...] = tuple(row.name for row in MODEL_TABLE)


def style_index(name: str) -> int:
    """The index of the style ``name`` (ShuangkouError naming ``style`` when no row has it)."""
    if name not in STYLES:
        raise ShuangkouError(f"style must be one of {', '.join(STYLES)}; got {name!r}",
                             "style")
    return STYLES.index(name)


def model(name: str) -> Model:
    """The row of the model ``name`` (ShuangkouError naming ``model`` when no row has it)."""
    if name not in MODELS:
        raise ShuangkouError(f"model must be one of {', '.join(MODELS)}; got {name!r}",
                             "model")
    return MODEL_TABLE[MODELS.index(name)]


def _check_tables(styles: Sequence[Style], models: Sequence[Model]) -> None:
    """Refuse tables whose rows collide or do not fit the compiled policy (at import)."""
    names = [row.name for row in styles]
    if not styles or names[0] != "rule" or len(set(names)) != len(names) \
            or len(styles) > MAX_STYLES:
        raise ShuangkouError(f"the style table needs distinct names, 'rule' first, and at "
                             f"most {MAX_STYLES} rows", "style")
    for row in styles:
        for field in ("spend_within", "bomb_within", "hold_beyond"):
            value = getattr(row, field)
            if type(value) is not int or not 0 <= value <= ANY:
                raise ShuangkouError(f"style {row.name}: {field} must be 0–{ANY} cards",
                                     "style")
    known = set(names)
    if len({row.name for row in models}) != len(models):
        raise ShuangkouError("the model table needs distinct names", "model")
    for m in models:
        if not m.draws or not set(m.draws) <= known or len(m.draws) > 64:
            raise ShuangkouError(f"model {m.name}: draws must name 1–64 styles of the style "
                                 "table", "model")


_check_tables(STYLE_TABLE, MODEL_TABLE)
