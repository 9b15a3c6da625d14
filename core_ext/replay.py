"""Replays: a dealt round and its moves, validated move by move (RULES.md §9) and scored (§10).

The JSON format is documented in ``docs/replays.md``. :func:`score_replay` validates a
replay and settles it; :func:`summarize_replay` stops after validation and returns the
inputs of :func:`~core_ext.scoring.score_round`, so a replay's score can be checked
against the summary's.

Hands are kept as count vectors (copies of each suited face, cards of each rank), so a
move costs a few list operations plus one call into the compiled core for its reading.
A card written without a suit in a play takes any card of that rank from the hand; a
suited one needs that very face (docs/replays.md, "Decisions").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from ._core import Reading, format_cards, parse_cards, play_reading
from .errors import IllegalPlay, ShuangkouError
from .scoring import SEATS, RoundResult, score_round
from .variants import Variant, get_variant, variant_from_mapping

__all__ = ["ReplayError", "ReplayResult", "ReplaySummary", "score_replay", "summarize_replay"]

_RANK_OF = [(c - 1) // 5 if c else -1 for c in range(76)]
_SUITED = [bool(c) and (c - 1) % 5 < 4 for c in range(76)]
_RANK_NAMES = "3456789TJQKA2"
_KEYS = frozenset({"variant", "hands", "leader", "revealed", "teams", "partner", "actions",
                   "stake", "table_fee", "partial_deal"})
_ACTION_KEYS = frozenset({"seat", "play", "pass", "escape", "declare", "declare_top"})


class ReplayError(IllegalPlay):
    """A replay that cannot have happened under the rules.

    ``action`` is the 0-based index of the offending action in ``actions`` (None when the
    replay is malformed as a whole); ``reason`` says why, naming the seat and cards.
    """

    def __init__(self, reason: str, action: int | None = None, field: str | None = None) -> None:
        where = f"action {action}: " if action is not None else ""
        super().__init__(where + reason,
                         field or (f"actions[{action}]" if action is not None else None))
        self.action = action
        self.reason = reason


def _rank_name(rank: int) -> str:
    return _RANK_NAMES[rank] if rank < 13 else ("SJ" if rank == 13 else "BJ")


def _seat(value: Any, what: str, action: int | None = None) -> int:
    if type(value) is not int or not 0 <= value < SEATS:
        raise ReplayError(f"{what} must be a seat 0–3; got {value!r}", action)
    return value


# ----------------------------------------------------------------------------- summary

@dataclass(frozen=True)
class ReplaySummary:
    """What a validated replay leaves behind: the inputs of :func:`score_round`.

    Seats are table seats (after the swap); ``hand_at[t]`` is the dealt seat whose hand
    sits at table seat ``t``.
    """

    variant: Variant
    finish_order: tuple[int, ...]
    bombs: tuple[tuple[Reading, ...], ...]           # standing bomb readings per seat
    bomb_cards: tuple[tuple[tuple[int, ...], ...], ...]  # the same bombs as card codes
    hands: tuple[tuple[int, ...], ...]               # cards each seat holds at the end
    escaper: int | None
    escape_action: int | None
    stake: int
    table_fee: int
    hand_at: tuple[int, ...]
    actions: int

    @property
    def cards_left(self) -> tuple[int, ...]:
        return tuple(len(h) for h in self.hands)

    def score_args(self, *, as_cards: bool = False) -> dict[str, Any]:
        """Keyword arguments of :func:`score_round` (bombs as cards with ``as_cards``)."""
        return {"variant": self.variant, "finish_order": self.finish_order,
                "bombs": self.bomb_cards if as_cards else self.bombs, "stake": self.stake,
                "cards_left": self.cards_left, "escape": self.escaper,
                "hands": self.hands if self.escaper is not None else None,
                "table_fee": self.table_fee}


@dataclass(frozen=True)
class ReplayResult(RoundResult):
    """A replay's settlement: the :class:`RoundResult` plus where each dealt hand sat."""

    hand_at: tuple[int, ...]   # dealt seat whose hand sits at each table seat
    actions: int               # number of actions validated

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["hand_at"] = list(self.hand_at)
        for s in d["seats"]:
            s["dealt_seat"] = self.hand_at[s["seat"]]
        d["actions"] = self.actions
        return d


# ----------------------------------------------------------------------------- set-up checks

def _load(replay: Mapping[str, Any] | str | bytes) -> Mapping[str, Any]:
    if isinstance(replay, (str, bytes, bytearray)):
        try:
            replay = json.loads(replay)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ReplayError(f"not valid JSON: {exc}") from None
    if not isinstance(replay, Mapping):
        raise ReplayError("a replay must be a JSON object")
    unknown = set(replay) - _KEYS
    if unknown:
        raise ReplayError(f"unknown replay field {sorted(unknown)[0]!r}; fields are "
                          f"{', '.join(sorted(_KEYS))}", field=sorted(unknown)[0])
    return replay


def _variant(spec: Any) -> Variant:
    try:
        if isinstance(spec, Mapping):
            return variant_from_mapping(spec)
        return get_variant(spec)
    except ShuangkouError as exc:
        raise ReplayError(f"variant: {exc}", field="variant") from None


def _int_field(replay: Mapping[str, Any], name: str, default: int, low: int) -> int:
    value = replay.get(name, default)
    if type(value) is not int or value < low:
        raise ReplayError(f"{name} must be an integer >= {low}; got {value!r}", field=name)
    return value


def _dealt_hands(raw: Any, v: Variant) -> list[list[int]]:
    if not isinstance(raw, list) or len(raw) != SEATS:
        raise ReplayError("hands must list the 4 dealt hands", field="hands")
    hands = []
    for d, hand in enumerate(raw):
        try:
            codes = parse_cards(hand, v)
        except ShuangkouError as exc:
            raise ReplayError(f"hands[{d}]: {exc}", field="hands") from None
        if not codes:
            raise ReplayError(f"hands[{d}] is empty", field="hands")
        hands.append(codes)
    return hands


def _check_deal(hands: list[list[int]], v: Variant, partial: bool) -> None:
    """§9: the four hands together are exactly the deck (or a part of it if ``partial``)."""
    ranks = [0] * 15
    faces = [0] * 76
    for d, hand in enumerate(hands):
        if not partial and len(hand) != v.hand_size:
            raise ReplayError(f"hands[{d}] has {len(hand)} cards; every seat is dealt "
                              f"{v.hand_size} in {v.id}", field="hands")
        for c in hand:
            ranks[_RANK_OF[c]] += 1
            faces[c] += 1
    for c in range(76):
        if _SUITED[c] and faces[c] > v.decks:
            raise ReplayError(f"the hands hold {faces[c]} copies of {format_cards([c])[0]}; "
                              f"the {v.id} deck has {v.decks}", field="hands")
    for r in range(15):
        want = v.joker_copies if r >= 13 else v.copies_per_rank if r >= v.lowest_rank else 0
        if ranks[r] > want or (not partial and ranks[r] != want):
            raise ReplayError(f"the hands are not {'part of ' if partial else ''}the {v.id} "
                              f"deck: {ranks[r]} cards of rank {_rank_name(r)} dealt, the deck "
                              f"has {want}" + ("" if partial else
                                               " (pass partial_deal to allow partial deals)"),
                              field="hands")


def _revealed_partner(replay: Mapping[str, Any], hands: list[list[int]], leader: int,
                      v: Variant) -> int | None:
    """The dealt seat of the leader's partner as the revealed card says (§9), or None."""
    if replay.get("revealed") is None:
        return None
    try:
        codes = parse_cards([replay["revealed"]] if isinstance(replay["revealed"], str)
                            else replay["revealed"])
    except ShuangkouError as exc:
        raise ReplayError(f"revealed: {exc}", field="revealed") from None
    if len(codes) != 1 or not (_SUITED[codes[0]] or _RANK_OF[codes[0]] >= 13):
        raise ReplayError(f"revealed must be one suited card or a joker; got "
                          f"{replay['revealed']!r}", field="revealed")
    card = codes[0]
    copies = v.joker_copies if _RANK_OF[card] >= 13 else v.decks
    held = [hand.count(card) for hand in hands]
    name = format_cards([card])[0]
    if not held[leader]:
        raise ReplayError(f"the leader (dealt seat {leader}) does not hold the revealed card "
                          f"{name}", field="revealed")
    if copies != 2:
        if "teams" not in replay and "partner" not in replay:
            raise ReplayError(f"the {v.id} deck has {copies} copies of {name}, so the revealed "
                              "card cannot form the teams: give 'teams' (or 'partner')",
                              field="teams")
        return None
    if held[leader] >= 2:
        return (leader + 2) % SEATS          # the leader holds both copies: nothing moves
    others = [d for d in range(SEATS) if d != leader and held[d]]
    return others[0] if others else None     # partial deal without the other copy: no swap


def _stated_partner(replay: Mapping[str, Any], leader: int) -> int | None:
    """The dealt seat of the leader's partner from 'teams' / 'partner', or None."""
    partner = None
    if replay.get("teams") is not None:
        teams = replay["teams"]
        if (not isinstance(teams, list) or len(teams) != 2
                or not all(isinstance(t, list) and len(t) == 2 for t in teams)
                or sorted(_seat(s, "teams entry") for t in teams for s in t) != [0, 1, 2, 3]):
            raise ReplayError(f"teams must split the dealt seats 0–3 into two pairs, e.g. "
                              f"[[0, 2], [1, 3]]; got {teams!r}", field="teams")
        partner = next(t[0] + t[1] - leader for t in teams if leader in t)
    if replay.get("partner") is not None:
        stated = _seat(replay["partner"], "partner")
        if stated == leader or (partner is not None and stated != partner):
            raise ReplayError(f"partner {stated} contradicts the leader {leader}"
                              + (f" and teams {replay['teams']!r}" if partner is not None else ""),
                              field="partner")
        partner = stated
    return partner


def _seating(replay: Mapping[str, Any], hands: list[list[int]], leader: int,
             v: Variant) -> list[int]:
    """hand_at[table seat] = dealt seat, after the revealed-card swap (§9)."""
    by_card = _revealed_partner(replay, hands, leader, v)
    stated = _stated_partner(replay, leader)
    if by_card is not None and stated is not None and by_card != stated:
        raise ReplayError(f"the revealed card makes dealt seat {by_card} the leader's partner "
                          f"but the replay states {stated}", field="teams")
    partner = stated if stated is not None else by_card
    hand_at = list(range(SEATS))
    opposite = (leader + 2) % SEATS
    if partner is not None and partner != opposite:
        hand_at[opposite], hand_at[partner] = partner, opposite
    return hand_at


# ----------------------------------------------------------------------------- the moves

def _over_when_team_out(finished: list[int], seat: int) -> str:
    mate = (seat + 2) % SEATS
    return f"seats {mate} and {seat} have both finished" if mate in finished else ""


def _over_at_first_out(finished: list[int], seat: int) -> str:
    return f"seat {seat} went out first"


#: Does the round end when ``seat`` has just emptied its hand (§9)? A reason, or "".
_ROUND_OVER: Mapping[str, Callable[[list[int], int], str]] = {
    "finishing_order": _over_when_team_out,
    "first_out": _over_at_first_out,
}


class _Round:
    """Mutable state of a round being replayed (table seats)."""

    __slots__ = ("v", "faces", "ranks", "left", "finished", "standing", "last", "passes",
                 "turn", "prev", "lead_note", "over", "over_note", "escaper", "escape_action",
                 "bombs", "bomb_cards", "round_over")

    def __init__(self, v: Variant, hands: list[list[int]], leader: int) -> None:
        self.v = v
        self.faces = [[0] * 76 for _ in range(SEATS)]
        self.ranks = [[0] * 15 for _ in range(SEATS)]
        for t, hand in enumerate(hands):
            faces, ranks = self.faces[t], self.ranks[t]
            for c in hand:
                faces[c] += 1
                ranks[_RANK_OF[c]] += 1
        self.left = [len(h) for h in hands]
        self.finished: list[int] = []
        self.standing: Reading | None = None
        self.last = -1
        self.passes = 0
        self.turn = leader
        self.lead_note = f"seat {leader} leads the first trick (revealed card)"
        self.over: int | None = None
        self.over_note = ""
        self.escaper: int | None = None
        self.escape_action: int | None = None
        self.bombs: list[list[Reading]] = [[] for _ in range(SEATS)]
        self.bomb_cards: list[list[tuple[int, ...]]] = [[] for _ in range(SEATS)]
        self.round_over = _ROUND_OVER[v.round_end]
        self.prev = -1

    def next_holding(self, seat: int) -> int:
        left = self.left
        for step in (1, 2, 3):
            s = (seat + step) % SEATS
            if left[s]:
                return s
        return seat

    def take(self, i: int, seat: int, codes: list[int]) -> None:
        """Remove a play's cards from the seat's hand (suited cards need that face)."""
        faces, ranks = self.faces[seat], self.ranks[seat]
        for c in codes:
            r = _RANK_OF[c]
            if not ranks[r] or (_SUITED[c] and not faces[c]):
                self._not_held(i, seat, c)
            ranks[r] -= 1
            if _SUITED[c]:
                faces[c] -= 1

    def _not_held(self, i: int, seat: int, c: int) -> None:
        name = format_cards([c])[0]
        r = _RANK_OF[c]
        n = self.ranks[seat][r]
        if not n:
            have = f"it holds no {_rank_name(r)}" if r < 13 else f"it holds no {name}"
        else:
            suited = [format_cards([f])[0] for f in range(1 + r * 5, 5 + r * 5)
                      for _ in range(self.faces[seat][f])]
            have = (f"its {n} card(s) of rank {_rank_name(r)} left are "
                    f"{' '.join(suited) or 'without a suit'}"
                    + (" (and cards without a suit)" if suited and len(suited) < n else ""))
        raise ReplayError(f"seat {seat} does not hold {name} ({have})", i)

    def hand(self, seat: int) -> tuple[int, ...]:
        """The seat's remaining cards (suited where the hand says so)."""
        out: list[int] = []
        faces, ranks = self.faces[seat], self.ranks[seat]
        for r in range(15):
            n = ranks[r]
            if not n:
                continue
            for f in range(1 + r * 5, 5 + r * 5) if r < 13 else ():
                k = min(faces[f], n)
                out.extend([f] * k)
                n -= k
            out.extend([1 + r * 5 + 4] * n)
        return tuple(out)

    # -- moves
    def check_turn(self, i: int, seat: int) -> None:
        if self.over is not None:
            raise ReplayError(f"the round ended at action {self.over} ({self.over_note}); "
                              "nothing may follow", i)
        if seat != self.turn:
            if not self.left[seat]:
                place = self.finished.index(seat) + 1
                raise ReplayError(f"seat {seat} has no cards left (it finished {place}"
                                  f"{_ordinal(place)}); it is seat {self.turn}'s turn", i)
            note = self.lead_note if self.standing is None else (
                f"seat {self.turn} follows seat {self.prev} in turn order")
            raise ReplayError(f"seat {seat} acted but it is seat {self.turn}'s turn ({note})", i)

    def play(self, i: int, seat: int, codes: list[int], reading: Reading) -> None:
        self.standing = reading
        self.last = seat
        self.passes = 0
        if reading.is_bomb:
            self.bombs[seat].append(reading)
            self.bomb_cards[seat].append(tuple(codes))
        self.left[seat] -= len(codes)
        self.prev = seat
        if not self.left[seat]:
            self.finished.append(seat)
            note = self.round_over(self.finished, seat)
            if note:
                self.over = i
                self.over_note = note
                return
        self.turn = self.next_holding(seat)

    def pass_(self, i: int, seat: int) -> None:
        if self.standing is None:
            raise ReplayError(f"seat {seat} leads the trick and may not pass "
                              f"({self.lead_note})", i)
        self.passes += 1
        self.prev = seat
        last = self.last
        left = self.left
        others = sum(1 for s in range(SEATS) if left[s] and s != last)
        if self.passes < others:
            self.turn = self.next_holding(seat)
            return
        self.standing = None
        if left[last]:
            self.turn = last
            self.lead_note = f"seat {last} leads: everyone passed on its play"
        else:  # 接风: the partner of the player who went out takes the lead
            mate = (last + 2) % SEATS
            self.turn = mate if left[mate] else self.next_holding(last)
            self.lead_note = (f"接风: seat {self.turn} leads after seat {last} went out and "
                              "everyone passed")

    def escape(self, i: int, seat: int) -> None:
        if self.over is not None:
            raise ReplayError(f"the round ended at action {self.over} ({self.over_note}); "
                              "nothing may follow", i)
        if not self.left[seat]:
            raise ReplayError(f"seat {seat} has no cards left and cannot escape", i)
        self.escaper = seat
        self.escape_action = i
        self.over = i
        self.over_note = f"seat {seat} escaped"


def _ordinal(n: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(n, "th")


def _cards(i: int, raw: Any) -> list[int]:
    try:
        codes = parse_cards(raw)
    except ShuangkouError as exc:
        raise ReplayError(f"play: {exc}", i) from None
    if not codes:
        raise ReplayError("a play needs at least one card (use {\"pass\": true} to pass)", i)
    return codes


def _run(actions: Any, state: _Round) -> None:
    if not isinstance(actions, list):
        raise ReplayError("actions must be a list", field="actions")
    v = state.v
    for i, a in enumerate(actions):
        if type(a) is not dict:
            raise ReplayError("an action must be an object such as {\"seat\": 0, \"pass\": true}", i)
        seat = a.get("seat")
        if type(seat) is not int or not 0 <= seat < SEATS:
            raise ReplayError(f"seat must be a seat 0–3; got {seat!r}", i)
        if len(a) > 2 and not a.keys() <= _ACTION_KEYS:
            bad = sorted(set(a) - _ACTION_KEYS)[0]
            raise ReplayError(f"unknown action field {bad!r}", i)
        raw = a.get("play")
        if raw is not None:
            if "pass" in a or "escape" in a:
                raise ReplayError("an action is one of play, pass or escape", i)
            state.check_turn(i, seat)
            codes = _cards(i, raw)
            state.take(i, seat, codes)
            try:
                reading = play_reading(codes, v, state.standing, a.get("declare"),
                                       a.get("declare_top"))
            except ShuangkouError as exc:
                raise ReplayError(f"seat {seat} plays {' '.join(format_cards(codes))}: {exc}",
                                  i) from None
            state.play(i, seat, codes, reading)
        elif a.get("pass") is True:
            if "escape" in a or "declare" in a:
                raise ReplayError("a pass takes no other field", i)
            state.check_turn(i, seat)
            state.pass_(i, seat)
        elif a.get("escape") is True:
            if "pass" in a or "declare" in a:
                raise ReplayError("an escape takes no other field", i)
            state.escape(i, seat)
        else:
            raise ReplayError("an action needs \"play\": [cards], \"pass\": true or "
                              "\"escape\": true", i)
    if state.over is None:
        why = state.lead_note if state.standing is None else "a trick is in progress"
        raise ReplayError(f"the replay ends before the round is over: seat {state.turn} is to "
                          f"act ({why})", field="actions")


# ----------------------------------------------------------------------------- entry points

def summarize_replay(replay: Mapping[str, Any] | str | bytes, *,
                     partial_deal: bool = False) -> ReplaySummary:
    """Validate a replay move by move (§9) and return what scoring needs.

    :param replay: the replay document (a mapping, or JSON text).
    :param partial_deal: accept hands that are only part of the deck (puzzles, tests);
        a replay may also say ``"partial_deal": true``.
    :raises ReplayError: with ``.action`` (index into ``actions``, or None) and ``.reason``.
    """
    r = _load(replay)
    if "variant" not in r or "hands" not in r or "actions" not in r:
        missing = next(k for k in ("variant", "hands", "actions") if k not in r)
        raise ReplayError(f"a replay needs {missing!r}", field=missing)
    v = _variant(r["variant"])
    partial = partial_deal or r.get("partial_deal") is True
    leader = _seat(r.get("leader"), "leader")
    stake = _int_field(r, "stake", 1, 1)
    table_fee = _int_field(r, "table_fee", 0, 0)
    dealt = _dealt_hands(r["hands"], v)
    _check_deal(dealt, v, partial)
    hand_at = _seating(r, dealt, leader, v)
    state = _Round(v, [dealt[d] for d in hand_at], leader)
    _run(r["actions"], state)
    return ReplaySummary(
        variant=v, finish_order=tuple(state.finished),
        bombs=tuple(tuple(b) for b in state.bombs),
        bomb_cards=tuple(tuple(b) for b in state.bomb_cards),
        hands=tuple(state.hand(s) for s in range(SEATS)),
        escaper=state.escaper, escape_action=state.escape_action,
        stake=stake, table_fee=table_fee, hand_at=tuple(hand_at), actions=len(r["actions"]))


def score_replay(replay: Mapping[str, Any] | str | bytes, *,
                 partial_deal: bool = False) -> ReplayResult:
    """Validate a replay (§9) and settle it (§10): the :func:`score_round` breakdown plus
    the seat mapping. Raises :class:`ReplayError` for any replay that could not happen,
    including an escape in a variant without an escape rule (at the escape's index)."""
    summary = summarize_replay(replay, partial_deal=partial_deal)
    try:
        result = score_round(**summary.score_args())
    except ShuangkouError as exc:
        raise ReplayError(str(exc), summary.escape_action, exc.field) from None
    return ReplayResult(**{f.name: getattr(result, f.name) for f in fields(RoundResult)},
                        hand_at=summary.hand_at, actions=summary.actions)

