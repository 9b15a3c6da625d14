"""A round's story (issue 22): what happened in a replayed round, as data for a person.

Who held what (the hands as dealt, the seating after the §9 swap, each seat's hand after
every action), every trick in order — who led it and why (the first lead, the winner of the
last trick, or 接风), each play with the reading that stood, what a wild joker stood for and
what was declared, the passes, who finished when — each bomb with its star and its number
among the seat's bombs (the numbers the settlement's star sources and contribution events
use), and the settlement with every term; for a rejected replay, everything up to the first
action that cannot happen and why.

Nothing here applies a rule. :func:`story_of` takes the verdict of the replay from
:func:`~shuangkou.core.replay.score_replay` (the result, or the :class:`ReplayError` that
``shuangkou score`` and ``score-replays`` report), then drives the one state machine,
:class:`~shuangkou.core.Round`, through the actions before the rejected one and keeps what
each :class:`~shuangkou.core.ActionRecord` says.

    >>> from shuangkou.core.story import story_of
    >>> s = story_of({"variant": "baibian", "partial_deal": True, "leader": 0,
    ...               "hands": ["3S 7777", "4S", "5S 8", "6S"],
    ...               "actions": [{"seat": 0, "play": "7777"}, {"seat": 1, "pass": True},
    ...                           {"seat": 2, "pass": True}, {"seat": 3, "pass": True},
    ...                           {"seat": 0, "play": "3S"}, {"seat": 1, "play": "4S"},
    ...                           {"seat": 2, "play": "5S"}, {"seat": 3, "play": "9S"}]})
    >>> [(t.leader, t.lead, t.won_by) for t in s.tricks]
    [(0, 'first', 0), (0, 'won', None)]
    >>> s.rejection.action, s.rejection.reason
    (7, 'seat 3 does not hold 9S (it holds no 9)')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._core import Reading, parse_cards
from .cards import CARD_BJ, CARD_SJ, SEATS
from .declaration import Declaration
from .errors import ReplayError, ShuangkouError
from .replay import parse_replay, score_replay
from .results import ReplayResult
from .round_records import ActionRecord
from .variants import Variant

__all__ = ["Rejection", "RoundStory", "Step", "Trick", "story_of", "wild_ranks"]

Hands = tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Step:
    """One action as it happened: the replay's ``index``, the acting ``seat`` and ``kind``
    (``play``, ``pass``, ``escape``); for a play its ``cards``, the ``reading`` that stood,
    ``stands_for`` (per card, the rank position a wild joker stood for, else None) and what
    was ``declared``; ``bomb``: the seat's bomb number (0-based, in play order) when the play
    is a bomb; ``place``: the place the play finished in (1 = first out); ``hands``: what
    each table seat holds after the action; ``record``: the round's own record of it."""

    index: int
    seat: int
    kind: str
    cards: tuple[int, ...]
    reading: Reading | None
    stands_for: tuple[int | None, ...]
    declared: Declaration | None
    bomb: int | None
    place: int | None
    hands: Hands
    record: ActionRecord


@dataclass(frozen=True)
class Trick:
    """One trick: its ``number`` (1-based), the ``leader`` and why it leads (``lead``:
    ``first`` — the first trick; ``won`` — it won the last trick; ``wind`` — 接风, the lead
    passed to it because ``wind_from``, who won the last trick, had gone out), its
    ``steps``, and the seat whose play took it (``won_by``; None when the round or the story
    ended inside it)."""

    number: int
    leader: int
    lead: str
    wind_from: int | None
    steps: tuple[Step, ...]
    won_by: int | None


@dataclass(frozen=True)
class Rejection:
    """Why a replay was rejected: the index of the first action that cannot happen
    (``action``; None when the replay is wrong as a whole: its deal, its seating, or its end
    before the round is over), the ``reason`` (the sentence ``score`` gives), the ``field``,
    the action as ``written`` and its ``cards`` when they read as cards."""

    action: int | None
    reason: str
    field: str | None
    written: Any = None
    cards: tuple[int, ...] = ()


@dataclass(frozen=True)
class RoundStory:
    """A replayed round told in full (see the module doc). Seats are table seats (after the
    swap) except in ``dealt``, the hands by dealt seat; ``hand_at[t]`` is the dealt seat
    whose hand sits at table seat ``t``. ``variant`` and the deal are None when the replay
    is wrong before its first action (its ``document`` is kept, as far as it is JSON)."""

    document: Mapping[str, Any] | None
    variant: Variant | None
    dealt: Hands | None
    hand_at: tuple[int, ...]
    leader: int | None
    revealed: int | None
    stake: int
    table_fee: int
    tricks: tuple[Trick, ...]
    hands: Hands | None                  # what each seat holds where the story stops
    finish_order: tuple[int, ...]
    escaper: int | None
    result: ReplayResult | None
    rejection: Rejection | None

    @property
    def steps(self) -> tuple[Step, ...]:
        """Every action applied, in order."""
        return tuple(step for trick in self.tricks for step in trick.steps)

    @property
    def bombs(self) -> tuple[Step, ...]:
        """The plays that stood as bombs, in order."""
        return tuple(step for step in self.steps if step.bomb is not None)

    @property
    def seated(self) -> Hands | None:
        """The dealt hands by table seat (after the swap)."""
        if self.dealt is None:
            return None
        return tuple(self.dealt[d] for d in self.hand_at)


def wild_ranks(cards: tuple[int, ...], reading: Reading, variant: Variant
               ) -> tuple[int | None, ...]:
    """Per card of a play, the rank position it stood for if it was a wild joker, else
    None: the reading's ``wilds`` (what the wilds stand for, §4) given to the play's wild
    jokers in turn (jokers beyond them stand as themselves)."""
    wild_codes = {CARD_SJ if name == "SJ" else CARD_BJ for name in variant.wild_jokers}
    wilds = list(reading.wilds)
    out: list[int | None] = []
    for c in cards:
        out.append(wilds.pop(0) if c in wild_codes and wilds else None)
    return tuple(out)


# ----------------------------------------------------------------------------- telling

def _document(replay: Mapping[str, Any] | str | bytes) -> Mapping[str, Any] | None:
    if isinstance(replay, Mapping):
        return replay
    try:
        doc = json.loads(replay)
    except (ValueError, UnicodeDecodeError):
        return None
    return doc if isinstance(doc, dict) else None


def _written_cards(action: Any) -> tuple[int, ...]:
    """The cards of an action as written, when they read as cards (for the page)."""
    if not isinstance(action, Mapping) or "play" not in action:
        return ()
    try:
        return tuple(parse_cards(action["play"]))
    except (ShuangkouError, TypeError):
        return ()


def story_of(replay: Mapping[str, Any] | str | bytes, *,
             partial_deal: bool = False) -> RoundStory:
    """The story of a replay document (docs/replays.md); never raises for a bad replay —
    its :class:`Rejection` says what ``score_replay`` says."""
    result: ReplayResult | None = None
    error: ReplayError | None = None
    try:
        result = score_replay(replay, partial_deal=partial_deal)
    except ReplayError as exc:
        error = exc
    doc = _document(replay)
    actions = doc.get("actions") if doc is not None else None
    if not isinstance(actions, list):
        actions = []
    applied = len(actions) if error is None or error.action is None else error.action
    rejection = None
    if error is not None:
        written = actions[error.action] if error.action is not None else None
        rejection = Rejection(error.action, error.detail, error.field, written,
                              _written_cards(written))
    try:
        if doc is None:
            raise ReplayError("not a JSON object")
        typed = parse_replay({**doc, "actions": actions[:applied]}, partial_deal=partial_deal)
        rnd = typed.start()
    except ReplayError:      # wrong before the first action: nothing was dealt
        return RoundStory(doc, None, None, (0, 1, 2, 3), None, None, 1, 0, (), None, (),
                          None, None, rejection)
    seated = rnd.hand_at
    tricks: list[Trick] = []
    steps: list[Step] = []
    leader, lead, wind_from = rnd.leader, "first", None
    bombs = [0] * SEATS
    for i, a in enumerate(typed.actions):
        rec = rnd.apply(a)
        bomb = None
        if rec.reading is not None and rec.reading.is_bomb:
            bomb, bombs[a.seat] = bombs[a.seat], bombs[a.seat] + 1
        steps.append(Step(
            i, a.seat, a.kind, a.cards, rec.reading,
            wild_ranks(a.cards, rec.reading, rnd.variant) if rec.reading is not None else (),
            a.declare, bomb,
            len(rnd.finish_order) if rec.finished is not None else None,
            tuple(rnd.hand(s) for s in range(SEATS)), rec))
        if rec.trick_won_by is not None:         # this pass closed the trick
            tricks.append(Trick(len(tricks) + 1, leader, lead, wind_from, tuple(steps),
                                rec.trick_won_by))
            steps = []
            assert rec.next_turn is not None      # a pass never ends the round
            leader = rec.next_turn
            lead, wind_from = ("wind", rec.trick_won_by) if rec.wind_to is not None \
                else ("won", None)
    if steps:
        tricks.append(Trick(len(tricks) + 1, leader, lead, wind_from, tuple(steps), None))
    revealed = _written_cards({"play": typed.revealed}) if typed.revealed is not None else ()
    return RoundStory(
        doc, rnd.variant, typed.hands, seated, typed.leader,
        revealed[0] if len(revealed) == 1 else None, rnd.stake, rnd.table_fee, tuple(tricks),
        tuple(rnd.hand(s) for s in range(SEATS)), rnd.finish_order, rnd.escaper, result,
        rejection)
