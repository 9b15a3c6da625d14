"""The replay validator as it was before core.Round: an independent twin of the round flow.

Kept as the test reference for turn order, tricks, 接风, round end, seating and the
card-held checks, written separately from the compiled round (core_ext/_round.pyx) and
sharing no code with core_ext/replay.py: the reading of the document (fields, variant,
stake, dealt hands) was rewritten from docs/replays.md when the two had drifted into
copies (issue 31); only the card tokenizer, the reading of a play and the settlement come
from the core. tests/test_round.py checks that both give the same result or the same
error on thousands of generated and corrupted replays, and bench/bench_rounds.py measures
the new path against it in the same run.

Original description: replays, a dealt round and its moves, validated move by move
(RULES.md §9) and scored (§10).

The JSON format is documented in ``docs/replays.md``. :func:`score_replay` validates a
replay and settles it; :func:`summarize_replay` stops after validation and returns the
inputs of :func:`~shuangkou.core.scoring.score_round`, so a replay's score can be checked
against the summary's.

Hands are kept as count vectors (copies of each suited face, cards of each rank), so a
move costs a few list operations plus one call into the compiled core for its reading.
A card written without a suit in a play takes any card of that rank from the hand; a
suited one needs that very face (docs/replays.md, "Decisions").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import orjson

from shuangkou.core._core import Reading, format_cards, parse_cards, play_reading, rules_for
from shuangkou.core.cards import SEATS
from shuangkou.core.errors import ReplayError, ShuangkouError
from shuangkou.core.results import ReplayResult
from shuangkou.core.scoring import MAX_STAKE, MAX_TABLE_FEE, settle
from shuangkou.core.variants import Variant, get_variant, variant_from_mapping

__all__ = ["ReplayError", "ReplayResult", "ReplaySummary", "score_replay", "summarize_replay"]

_RANK_OF = [(c - 1) // 5 if c else -1 for c in range(76)]
_SUITED = [bool(c) and (c - 1) % 5 < 4 for c in range(76)]
_SUITED_CODES = [c for c in range(76) if _SUITED[c]]
_RANK_NAMES = "3456789TJQKA2"
# Card tokens as written by format_cards (and "10" for "T"): the fast path of play parsing.
_TOKEN_CODES = {name: c for c in range(1, 76) if _RANK_OF[c] < 13 or c in (70, 75)
                for name in {format_cards([c])[0], format_cards([c])[0].replace("T", "10")}}
_KEYS = frozenset({"variant", "hands", "leader", "revealed", "teams", "partner", "actions",
                   "stake", "table_fee", "partial_deal"})
_ACTION_KEYS = frozenset({"seat", "play", "pass", "escape", "declare", "declare_top"})


def _rank_name(rank: int) -> str:
    return _RANK_NAMES[rank] if rank < 13 else ("SJ" if rank == 13 else "BJ")


def _seat(value: Any, what: str, action: int | None = None) -> int:
    if type(value) is not int or not 0 <= value < SEATS:
        raise ReplayError(f"{what} must be a seat 0–3; got {value!r}", action)
    return value


# ----------------------------------------------------------------------------- summary

class ReplaySummary(NamedTuple):
    """The inputs of ``score_round`` a validated replay leaves (docs/replays.md "Scoring"),
    in table seats; ``hand_at[t]`` is the dealt seat sitting at table seat ``t``."""

    variant: Variant
    stake: int
    table_fee: int
    hand_at: tuple[int, ...]
    actions: int
    finish_order: tuple[int, ...]
    cards_left: tuple[int, ...]
    hands: tuple[tuple[int, ...], ...]       # what each seat holds when the round ends
    bombs: tuple[tuple[Reading, ...], ...]   # the bombs that stood, per seat, as readings
    bomb_cards: tuple[tuple[tuple[int, ...], ...], ...]   # and as the cards played
    escaper: int | None
    escape_action: int | None


# ----------------------------------------------------------------------------- the document

def _document(source: Mapping[str, Any] | str | bytes) -> Mapping[str, Any]:
    """The replay object (docs/replays.md "Format"): JSON text is decoded first; only the
    documented top-level fields are allowed."""
    doc: Any = source
    if isinstance(source, (str, bytes, bytearray)):
        try:
            doc = orjson.loads(source)
        except orjson.JSONDecodeError as exc:
            raise ReplayError(f"not valid JSON: {exc}") from None
    if not isinstance(doc, Mapping):
        raise ReplayError("a replay must be a JSON object")
    stray = sorted(k for k in doc if k not in _KEYS)
    if stray:
        raise ReplayError(f"unknown replay field {stray[0]!r}; fields are "
                          f"{', '.join(sorted(_KEYS))}", field=stray[0])
    return doc


def _rule_set(spec: Any) -> Variant:
    """The variant a replay names: a built-in id (or alias), or an inline definition."""
    try:
        return variant_from_mapping(spec) if isinstance(spec, Mapping) else get_variant(spec)
    except ShuangkouError as exc:
        raise ReplayError(f"variant: {exc}", field="variant") from None


def _bounded(doc: Mapping[str, Any], name: str, low: int, high: int) -> int:
    """An integer field within its documented range (``stake`` 1…, ``table_fee`` 0…), the
    low end being its default."""
    value = doc[name] if name in doc else low
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ReplayError(f"{name} must be an integer {low}–{high:,}; got {value!r}",
                          field=name)
    return value


def _hands_as_dealt(raw: Any, v: Variant) -> list[list[int]]:
    """The four dealt hands as card codes, in dealt seats 0–3, none of them empty."""
    if type(raw) is not list or len(raw) != SEATS:
        raise ReplayError("hands must list the 4 dealt hands", field="hands")
    out: list[list[int]] = []
    for seat in range(SEATS):
        try:
            cards = parse_cards(raw[seat], v)
        except ShuangkouError as exc:
            raise ReplayError(f"hands[{seat}]: {exc}", field="hands") from None
        if len(cards) == 0:
            raise ReplayError(f"hands[{seat}] is empty", field="hands")
        out.append(cards)
    return out


def _count(hands: list[list[int]]) -> list[tuple[list[int], list[int]]]:
    """Each hand as count vectors: (copies of each card code, cards of each rank)."""
    rank_of = _RANK_OF
    out = []
    for hand in hands:
        faces, ranks = [0] * 76, [0] * 15
        for c in hand:
            faces[c] += 1
            ranks[rank_of[c]] += 1
        out.append((faces, ranks))
    return out


def _check_deal(hands: list[list[int]], counts: list[tuple[list[int], list[int]]],
                v: Variant, partial: bool) -> None:
    """§9: the four hands together are exactly the deck (or a part of it if ``partial``)."""
    if not partial:
        for d, hand in enumerate(hands):
            if len(hand) != v.hand_size:
                raise ReplayError(f"hands[{d}] has {len(hand)} cards; every seat is dealt "
                                  f"{v.hand_size} in {v.id}", field="hands")
    if not partial and sorted([c for hand in hands for c in hand]) == _deck(v):
        return                    # exactly the deck, card for card (the usual case)
    faces = list(map(sum, zip(*(f for f, _ in counts), strict=True)))
    ranks = list(map(sum, zip(*(r for _, r in counts), strict=True)))
    if max(map(faces.__getitem__, _SUITED_CODES)) > v.decks:
        c = next(c for c in _SUITED_CODES if faces[c] > v.decks)
        raise ReplayError(f"the hands hold {faces[c]} copies of {format_cards([c])[0]}; "
                          f"the {v.id} deck has {v.decks}", field="hands")
    want = _deck_ranks(v)
    if ranks != want:
        for r in range(15):
            if ranks[r] > want[r] or (not partial and ranks[r] != want[r]):
                raise ReplayError(
                    f"the hands are not {'part of ' if partial else ''}the {v.id} deck: "
                    f"{ranks[r]} cards of rank {_rank_name(r)} dealt, the deck has {want[r]}"
                    + ("" if partial else " (pass partial_deal to allow partial deals)"),
                    field="hands")


_DECKS: dict[tuple[int, int, int], list[int]] = {}


def _deck(v: Variant) -> list[int]:
    """The variant's deck as sorted card codes (cached by its shape)."""
    shape = (v.decks, v.lowest_rank, v.joker_copies)
    deck = _DECKS.get(shape)
    if deck is None:
        deck = _DECKS[shape] = sorted(
            [1 + r * 5 + s for r in range(v.lowest_rank, 13) for s in range(4)] * v.decks
            + [70, 75] * v.joker_copies)
    return deck


def _deck_ranks(v: Variant) -> list[int]:
    """Cards of each rank position in the variant's deck."""
    return [v.joker_copies if r >= 13 else v.copies_per_rank if r >= v.lowest_rank else 0
            for r in range(15)]


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
    """A round being replayed, in table seats: the hands as count vectors and the moves' log.

    The move loop (:meth:`run`) keeps the trick state in locals; the lists here are shared
    with it and describe the round when it stops (or fails).
    """

    __slots__ = ("v", "rules", "faces", "ranks", "left", "finished", "bombs", "bomb_cards",
                 "over", "over_note", "escaper", "escape_action", "leader")

    def __init__(self, v: Variant, counts: list[tuple[list[int], list[int]]],
                 leader: int) -> None:
        self.v = v
        self.rules = rules_for(v)
        self.faces = [f for f, _ in counts]   # per table seat: copies of each card code
        self.ranks = [r for _, r in counts]   # per table seat: cards of each rank
        self.left = [sum(r) for r in self.ranks]
        self.finished: list[int] = []
        self.bombs: list[list[Reading]] = [[] for _ in range(SEATS)]
        self.bomb_cards: list[list[tuple[int, ...]]] = [[] for _ in range(SEATS)]
        self.over: int | None = None
        self.over_note = ""
        self.escaper: int | None = None
        self.escape_action: int | None = None
        self.leader = leader

    def hand(self, seat: int) -> tuple[int, ...]:
        """The seat's remaining cards (suited where the hand says so)."""
        out: list[int] = []
        faces, ranks = self.faces[seat], self.ranks[seat]
        for r in range(15):
            n = ranks[r]
            if n:
                for f in range(1 + r * 5, 5 + r * 5) if r < 13 else ():
                    k = min(faces[f], n)
                    out += [f] * k
                    n -= k
                out += [5 + r * 5] * n
        return tuple(out)

    def run(self, actions: Any) -> None:
        """Validate every move (§9); raises ReplayError at the first that cannot happen."""
        if not isinstance(actions, list):
            raise ReplayError("actions must be a list", field="actions")
        rules, left, finished = self.rules, self.left, self.finished
        faces, ranks = self.faces, self.ranks
        round_over = _ROUND_OVER[self.v.round_end]
        tokens, rank_of, suited = _TOKEN_CODES, _RANK_OF, _SUITED
        after = _AFTER
        holding = sum(1 for n in left if n)
        over: int | None = None
        standing: Reading | None = None
        last = prev = -1
        passes = 0
        turn = self.leader
        lead: tuple[int, ...] = (_FIRST_TRICK, turn)            # why `turn` leads (formatted only on errors)
        for i, a in enumerate(actions):
            if type(a) is not dict:
                raise ReplayError("an action must be an object such as "
                                  "{\"seat\": 0, \"pass\": true}", i)
            try:
                seat = a["seat"]
            except KeyError:
                seat = None
            if type(seat) is not int or not 0 <= seat < SEATS:
                raise ReplayError(f"seat must be a seat 0–3; got {seat!r}", i)
            extra = len(a) > 2
            if extra and not a.keys() <= _ACTION_KEYS:
                raise ReplayError(f"unknown action field {sorted(set(a) - _ACTION_KEYS)[0]!r}", i)
            if "play" in a:
                raw = a["play"]
                if seat != turn or over is not None:
                    self._turn_error(i, seat, turn, standing, prev, lead)
                if extra and ("pass" in a or "escape" in a):
                    raise ReplayError("an action is one of play, pass or escape", i)
                try:
                    codes = [tokens[t] for t in raw] if type(raw) is list else _cards(i, raw)
                except (KeyError, TypeError):
                    codes = _cards(i, raw)   # codes, runs like "7777", lower case, errors
                if not codes:
                    raise ReplayError("a play needs at least one card "
                                      "(use {\"pass\": true} to pass)", i)
                f, rk = faces[seat], ranks[seat]
                for k, c in enumerate(codes):
                    r = rank_of[c]
                    if not rk[r] or (suited[c] and not f[c]):
                        self._not_held(i, seat, c, codes[:k])
                    rk[r] -= 1
                    if suited[c]:
                        f[c] -= 1
                try:
                    if extra:
                        reading = play_reading(codes, rules, standing, *_declaration(i, a))
                    else:
                        reading = play_reading(codes, rules, standing)
                except ShuangkouError as exc:
                    raise ReplayError(f"seat {seat} plays {' '.join(format_cards(codes))}: "
                                      f"{exc}", i) from None
                standing, last, prev, passes = reading, seat, seat, 0
                if reading.is_bomb:
                    self.bombs[seat].append(reading)
                    self.bomb_cards[seat].append(tuple(codes))
                n = left[seat] - len(codes)
                left[seat] = n
                if not n:
                    holding -= 1
                    finished.append(seat)
                    note = round_over(finished, seat)
                    if note:
                        over = self.over = i
                        self.over_note = note
                        continue
                for turn in after[seat]:
                    if left[turn]:
                        break
            elif "pass" in a and a["pass"] is True:
                if seat != turn or over is not None:
                    self._turn_error(i, seat, turn, standing, prev, lead)
                if extra:           # a declaration (any part of it) on a pass is refused
                    raise ReplayError("a pass takes no other field", i)
                if standing is None:
                    raise ReplayError(f"seat {seat} leads the trick and may not pass "
                                      f"({_lead_note(lead)})", i)
                passes += 1
                prev = seat
                if passes < holding - (1 if left[last] else 0):
                    for turn in after[seat]:
                        if left[turn]:
                            break
                    continue
                standing = None           # everyone still holding cards passed: trick over
                if left[last]:
                    turn, lead = last, (_WON_TRICK, last)
                else:                     # 接风: the partner of the player who went out leads
                    mate = (last + 2) % SEATS
                    turn = mate if left[mate] else _next_holding(left, last)
                    lead = (_JIEFENG, turn, last)
            elif "escape" in a and a["escape"] is True:
                if extra:
                    raise ReplayError("an escape takes no other field", i)
                if over is not None:
                    self._turn_error(i, seat, turn, standing, prev, lead)
                if not left[seat]:
                    raise ReplayError(f"seat {seat} has no cards left and cannot escape", i)
                self.escape_action = over = self.over = i
                self.escaper = seat
                self.over_note = f"seat {seat} escaped"
            else:
                raise ReplayError("an action needs \"play\": [cards], \"pass\": true or "
                                  "\"escape\": true", i)
        if over is None:
            why = _lead_note(lead) if standing is None else "a trick is in progress"
            raise ReplayError(f"the replay ends before the round is over: seat {turn} is to "
                              f"act ({why})", field="actions")

    # -- error messages (cold paths)
    def _turn_error(self, i: int, seat: int, turn: int, standing: Reading | None, prev: int,
                    lead: tuple[int, ...]) -> None:
        if self.over is not None:
            raise ReplayError(f"the round ended at action {self.over} (counting from 0: after "
                              f"{self.over + 1} actions; {self.over_note}); nothing may "
                              "follow", i)
        if not self.left[seat]:
            place = self.finished.index(seat) + 1
            raise ReplayError(f"seat {seat} has no cards left (it finished {place}"
                              f"{_ordinal(place)}); it is seat {turn}'s turn", i)
        note = _lead_note(lead) if standing is None else (
            f"seat {turn} follows seat {prev} in turn order")
        raise ReplayError(f"seat {seat} acted but it is seat {turn}'s turn ({note})", i)

    def _not_held(self, i: int, seat: int, c: int, before: list[int]) -> None:
        """``before``: the play's cards already taken from the seat's counts."""
        name = format_cards([c])[0]
        r = _RANK_OF[c]
        n = self.ranks[seat][r]
        # held before the play, counted when the play's earlier cards took it all (the
        # play names the card more often than the seat holds it)
        had = n + sum(_RANK_OF[b] == r for b in before)
        held = (before.count(c) if not self.faces[seat][c] else 0) if _SUITED[c] else had
        if not n and had:
            have = f"the play's other cards take its {had} card(s) of rank {_rank_name(r)}"
        elif not n:
            have = f"it holds no {_rank_name(r)}" if r < 13 else f"it holds no {name}"
        else:
            suited = [format_cards([f])[0] for f in range(1 + r * 5, 5 + r * 5)
                      for _ in range(self.faces[seat][f])]
            have = (f"its {n} card(s) of rank {_rank_name(r)} left are "
                    f"{' '.join(suited) or 'without a suit'}"
                    + (" (and cards without a suit)" if suited and len(suited) < n else ""))
        if held:     # the play names the card more often than the seat holds it
            nth = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(held + 1,
                                                                        f"{held + 1}th")
            count = {1: "one", 2: "two", 3: "three", 4: "four"}.get(held, str(held))
            what = (f"{count} card(s) of rank {name}" if r < 13 and not _SUITED[c]
                    else f"{count} {name}")
            raise ReplayError(f"seat {seat} does not hold a {nth} {name} (it holds {what}"
                              + (f"; {have}" if n else "") + ")", i)
        raise ReplayError(f"seat {seat} does not hold {name} ({have})", i)


_FIRST_TRICK, _WON_TRICK, _JIEFENG = range(3)


def _lead_note(lead: tuple[int, ...]) -> str:
    """Why a seat leads, for error messages."""
    if lead[0] == _FIRST_TRICK:
        return f"seat {lead[1]} leads the first trick"
    if lead[0] == _WON_TRICK:
        return f"seat {lead[1]} leads: everyone passed on its play"
    return f"接风: seat {lead[1]} leads after seat {lead[2]} went out and everyone passed"


def _next_holding(left: list[int], seat: int) -> int:
    """The next seat in turn order that still holds cards."""
    for s in _AFTER[seat]:
        if left[s]:
            return s
    return seat


_AFTER = tuple(tuple((s + k) % SEATS for k in (1, 2, 3)) for s in range(SEATS))


def _ordinal(n: int) -> str:
    return {1: "st", 2: "nd", 3: "rd"}.get(n, "th")


def _declaration(i: int, a: dict[str, Any]) -> tuple[str | None, str | int | None]:
    """An action's ``declare`` (a play type name) and ``declare_top`` (a rank), checked."""
    kind, top = a.get("declare"), a.get("declare_top")
    if kind is not None and type(kind) is not str:
        raise ReplayError(f"declare must be a play type name such as \"straight\"; got "
                          f"{kind!r}", i)
    if top is not None:
        if kind is None:
            raise ReplayError("declare_top needs declare (the play type it is the top of)", i)
        if not (type(top) is str and len(top) <= 2) and not (type(top) is int and 0 <= top <= 14):
            raise ReplayError(f"declare_top must be a rank such as \"9\" or a rank position "
                              f"0–14; got {top!r}", i)
    return kind, top


def _cards(i: int, raw: Any) -> list[int]:
    """Slow path of a play's cards: full parsing with a CardError turned into a ReplayError."""
    try:
        return parse_cards(raw)
    except ShuangkouError as exc:
        raise ReplayError(f"play: {exc}", i) from None
    except TypeError:
        raise ReplayError(f"play must be a list of cards or a text; got {raw!r}", i) from None


# ----------------------------------------------------------------------------- entry points

def summarize_replay(replay: Mapping[str, Any] | str | bytes, *,
                     partial_deal: bool = False) -> ReplaySummary:
    """Validate a replay move by move (§9) and return what scoring needs.

    :param replay: the replay document (a mapping, or JSON text).
    :param partial_deal: accept hands that are only part of the deck (puzzles, tests);
        a replay may also say ``"partial_deal": true``.
    :raises ReplayError: with ``.action`` (index into ``actions``, or None) and ``.detail``.
    """
    r = _document(replay)
    if "variant" not in r or "hands" not in r or "actions" not in r:
        missing = next(k for k in ("variant", "hands", "actions") if k not in r)
        raise ReplayError(f"a replay needs {missing!r}", field=missing)
    v = _rule_set(r["variant"])
    partial = partial_deal or r.get("partial_deal") is True
    leader = _seat(r.get("leader"), "leader")
    stake = _bounded(r, "stake", 1, MAX_STAKE)
    table_fee = _bounded(r, "table_fee", 0, MAX_TABLE_FEE)
    dealt = _hands_as_dealt(r["hands"], v)
    counts = _count(dealt)
    _check_deal(dealt, counts, v, partial)
    hand_at = _seating(r, dealt, leader, v)
    state = _Round(v, [counts[d] for d in hand_at], leader)
    state.run(r["actions"])
    return ReplaySummary(
        variant=v, finish_order=tuple(state.finished),
        bombs=tuple(tuple(b) for b in state.bombs),
        bomb_cards=tuple(tuple(b) for b in state.bomb_cards),
        cards_left=tuple(state.left), escaper=state.escaper,
        escape_action=state.escape_action, stake=stake, table_fee=table_fee,
        hand_at=tuple(hand_at), actions=len(r["actions"]),
        hands=tuple(state.hand(s) for s in range(SEATS)))


def score_replay(replay: Mapping[str, Any] | str | bytes, *,
                 partial_deal: bool = False) -> ReplayResult:
    """Validate a replay (§9) and settle it (§10): the :func:`score_round` breakdown plus
    the seat mapping. Raises :class:`ReplayError` for any replay that could not happen,
    including an escape in a variant without an escape rule (at the escape's index)."""
    sm = summarize_replay(replay, partial_deal=partial_deal)
    try:
        result = settle(sm.variant, sm.finish_order, sm.bombs, stake=sm.stake,
                        cards_left=sm.cards_left, escaper=sm.escaper,
                        hands=sm.hands if sm.escaper is not None else None,
                        table_fee=sm.table_fee, result_type=ReplayResult,
                        hand_at=sm.hand_at, actions=sm.actions)
    except ShuangkouError as exc:   # an escape the variant cannot settle (baibian)
        raise ReplayError(str(exc), sm.escape_action, exc.field) from None
    return result  # type: ignore[return-value]

