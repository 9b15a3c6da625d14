"""Replays: a dealt round and its moves, validated move by move (RULES.md §9) and scored (§10).

The JSON format is documented in ``docs/replays.md``. :func:`score_replay` validates a
replay and settles it; :func:`summarize_replay` stops after validation and returns the
inputs of :func:`~shuangkou.core.scoring.score_round`, so a replay's score can be checked
against the summary's.

One round flow: a replay is its deal plus actions folded over a :class:`~shuangkou.core.Round`
(core_ext/round.py), the same state machine game servers drive live, so turn order,
接风, round end and the card-held checks live in one place (compiled). A document is
folded as it is read (core_ext/_replay.pyx, which reads the actions with the core's one card
tokenizer); :func:`parse_replay` gives the typed :class:`Replay` record, which folds through
the public actions with the same errors.
A card written without a suit in a play takes any card of that rank from the hand; a
suited one needs that very face (docs/replays.md, "Decisions").
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

import orjson

from ._core import Reading, format_cards, parse_cards
from ._replay import deal_codes, fold, read_actions
from .cards import SEATS, check_seat
from .errors import ReplayError, ShuangkouError
from .results import ReplayResult
from .round import Action, Round, check_int, dealt_hands, seating
from .scoring import MAX_STAKE, MAX_TABLE_FEE
from .variants import Variant, get_variant, variant_from_mapping

__all__ = ["Action", "MAX_PLAYER_CHARS", "Replay", "ReplayError", "ReplayResult", "ReplaySummary",
           "check_players", "parse_replay", "replay_round", "score_replay", "score_replay_json",
           "summarize_replay"]

_KEYS = frozenset({"variant", "hands", "leader", "revealed", "teams", "partner", "actions",
                   "stake", "table_fee", "partial_deal", "seed", "players"})

#: The longest player id a replay may name, in characters: room for a UUID, an e-mail
#: address or a platform's account handle, and a bound on what an archive's summary repeats.
MAX_PLAYER_CHARS = 128
# Control, format (zero-width, bidi overrides: two ids that print alike), surrogate and
# line/paragraph separator characters: an id is printed in summaries and terminals.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


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
    cards_left: tuple[int, ...]                      # cards each seat holds at the end
    escaper: int | None
    escape_action: int | None
    stake: int
    table_fee: int
    hand_at: tuple[int, ...]
    actions: int
    _round: Any = field(default=None, repr=False, compare=False)

    @cached_property
    def hands(self) -> tuple[tuple[int, ...], ...]:
        """The cards each seat holds at the end (suited where the deal said so)."""
        return tuple(self._round.hand(s) for s in range(SEATS))

    def score_args(self, *, as_cards: bool = False) -> dict[str, Any]:
        """Keyword arguments of :func:`score_round` (bombs as cards with ``as_cards``)."""
        return {"variant": self.variant, "finish_order": self.finish_order,
                "bombs": self.bomb_cards if as_cards else self.bombs, "stake": self.stake,
                "cards_left": self.cards_left, "escape": self.escaper,
                "hands": self.hands if self.escaper is not None else None,
                "table_fee": self.table_fee}


# ----------------------------------------------------------------------------- set-up checks

def _load(replay: Mapping[str, Any] | str | bytes) -> Mapping[str, Any]:
    if isinstance(replay, (str, bytes, bytearray)):
        try:
            replay = orjson.loads(replay)   # ~2x json.loads on replay-sized documents
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
            try:
                key = json.dumps(spec, sort_keys=True)
            except (TypeError, ValueError):
                return variant_from_mapping(spec)
            return _custom_variant(key)
        return get_variant(spec)
    except ShuangkouError as exc:
        raise ReplayError(f"variant: {exc}", field="variant") from None


@lru_cache(maxsize=256)
def _custom_variant(spec_json: str) -> Variant:
    """An inline custom variant, validated once per distinct definition (batch files)."""
    return variant_from_mapping(json.loads(spec_json))


def _int_field(replay: Mapping[str, Any], name: str, default: int, low: int, high: int) -> int:
    try:
        return check_int(replay.get(name, default), name, low, high)
    except ShuangkouError as exc:
        raise ReplayError(str(exc), field=name) from None


def check_players(raw: Any) -> tuple[str, ...] | None:
    """A replay's ``players`` (one id per DEALT seat, docs/replays.md), checked: None when
    absent; ReplayError (field ``players``) for anything but 4 distinct non-empty strings of
    at most :data:`MAX_PLAYER_CHARS` printable characters.

    >>> check_players(["alice", "bob", "carol", "dan"])
    ('alice', 'bob', 'carol', 'dan')
    >>> check_players(["alice", "bob", "alice", "dan"])
    Traceback (most recent call last):
    ...
    shuangkou.core.errors.ReplayError: players: 'alice' is named at dealt seats 0 and 2 (one player sits at one seat)
    """
    if raw is None:
        return None
    if not isinstance(raw, (list, tuple)) or len(raw) != SEATS:
        raise ReplayError(f"players must list {SEATS} player ids, one per dealt seat",
                          field="players")
    seen: dict[str, int] = {}
    for d, name in enumerate(raw):
        if not isinstance(name, str) or not name:
            raise ReplayError(f"players[{d}] must be a non-empty string (a player id)",
                              field="players")
        if len(name) > MAX_PLAYER_CHARS:
            raise ReplayError(f"players[{d}] is {len(name)} characters long; at most "
                              f"{MAX_PLAYER_CHARS}", field="players")
        bad = next((c for c in name if unicodedata.category(c) in _UNPRINTABLE), None)
        if bad is not None:
            raise ReplayError(f"players[{d}] holds the unprintable character U+{ord(bad):04X}",
                              field="players")
        if name in seen:
            raise ReplayError(f"players: {name!r} is named at dealt seats {seen[name]} and {d} "
                              "(one player sits at one seat)", field="players")
        seen[name] = d
    return tuple(raw)


def _dealt_hands(raw: Any, v: Variant) -> list[list[int]]:
    if not isinstance(raw, list):      # a document's hands: JSON, so a list or nothing
        raise ReplayError("hands must list the 4 dealt hands", field="hands")
    try:
        return dealt_hands(raw, v)
    except ShuangkouError as exc:
        raise ReplayError(str(exc), field=exc.field) from None


def _seating(replay: Mapping[str, Any], hands: list[list[int]], leader: int,
             v: Variant) -> list[int]:
    """hand_at[table seat] = dealt seat, after the revealed-card swap (§9)."""
    try:
        return seating(v, hands, leader, revealed=replay.get("revealed"),
                       partner=replay.get("partner"), teams=replay.get("teams"))
    except ShuangkouError as exc:
        raise ReplayError(str(exc), field=exc.field) from None


# ----------------------------------------------------------------------------- typed replays

@dataclass(frozen=True)
class Replay:
    """A replay document parsed and checked for form (not yet for the rules): the deal in
    dealt seats, the team information, stake and fee, and the actions in table seats."""

    variant: Variant
    hands: tuple[tuple[int, ...], ...]
    leader: int
    revealed: Any = None
    partner: int | None = None
    teams: Any = None
    stake: int = 1
    table_fee: int = 0
    partial_deal: bool = False
    actions: tuple[Action, ...] = ()
    players: tuple[str, ...] | None = None     # by dealt seat; never used in scoring

    def start(self) -> Round:
        """The round as dealt (seating checked), before any action."""
        try:
            return Round._from_deal(self.variant, [list(h) for h in self.hands], self.leader,
                                    revealed=self.revealed, partner=self.partner,
                                    teams=self.teams, stake=self.stake,
                                    table_fee=self.table_fee, partial=self.partial_deal)
        except ReplayError:
            raise
        except ShuangkouError as exc:
            raise ReplayError(str(exc), field=exc.field) from None


def _header(r: Mapping[str, Any], partial_deal: bool) -> dict[str, Any]:
    """The checked deal fields of a loaded document (everything but the actions)."""
    if "variant" not in r or "hands" not in r or "actions" not in r:
        missing = next(k for k in ("variant", "hands", "actions") if k not in r)
        raise ReplayError(f"a replay needs {missing!r}", field=missing)
    v = _variant(r["variant"])
    try:
        leader = check_seat(r.get("leader"), "leader")
    except ShuangkouError as exc:
        raise ReplayError(str(exc)) from None
    stake = _int_field(r, "stake", 1, 1, MAX_STAKE)
    table_fee = _int_field(r, "table_fee", 0, 0, MAX_TABLE_FEE)
    hands, checked = _hands(r["hands"], v)
    h = {"variant": v, "partial_deal": partial_deal or r.get("partial_deal") is True,
         "leader": leader, "stake": stake, "table_fee": table_fee,
         "hands": hands, "checked": checked, "revealed": r.get("revealed"),
         "partner": r.get("partner"), "teams": r.get("teams"), "seed_sha256": None,
         "players": check_players(r.get("players"))}
    if "seed" in r:
        _check_seeded(h, r["seed"])
    return h


def _check_seeded(h: dict[str, Any], seed_hex: Any) -> None:
    """A replay that names the seed it was dealt from (docs/rounds.md "A fair deal"): its
    hands, leader and revealed card must be what the seed deals; the round then carries the
    seed's commitment."""
    from .shuffle import MAX_SEED_BYTES, commitment, deal_from_seed

    if not isinstance(seed_hex, str) or len(seed_hex) > 2 * MAX_SEED_BYTES:
        raise ReplayError("seed must be the seed's bytes in hex", field="seed")
    try:
        seed = bytes.fromhex(seed_hex)
        deal = deal_from_seed(h["variant"], seed)
    except ValueError:
        raise ReplayError("seed must be the seed's bytes in hex", field="seed") from None
    except ShuangkouError as exc:
        raise ReplayError(str(exc), field="seed") from None
    if h["partial_deal"]:
        raise ReplayError("a seeded deal is a whole deck: partial_deal with a seed",
                          field="seed")
    for d, hand in enumerate(h["hands"]):
        if tuple(sorted(hand)) != deal.hands[d]:
            raise ReplayError(f"hands[{d}] is not what the seed deals to dealt seat {d}",
                              field="hands")
    if h["leader"] != deal.leader:
        raise ReplayError(f"the seed makes dealt seat {deal.leader} the leader, not "
                          f"{h['leader']}", field="leader")
    if deal.revealed is not None:
        if h["revealed"] is not None:
            try:
                given = parse_cards([h["revealed"]] if isinstance(h["revealed"], str)
                                    else h["revealed"])
            except ShuangkouError as exc:
                raise ReplayError(f"revealed: {exc}", field="revealed") from None
            if given != [deal.revealed]:
                raise ReplayError(f"the seed reveals {format_cards([deal.revealed])[0]}",
                                  field="revealed")
        h["revealed"] = [deal.revealed]
    h["seed_sha256"] = commitment(seed)


def _hands(raw: Any, v: Variant) -> tuple[list[list[int]], bool]:
    """The dealt hands as codes, and whether they are known to be the deck. The usual deal
    (lists of tokens, each hand full, together exactly the deck) is read and checked in one
    compiled pass; anything else is parsed here and checked by the Round, in full, for its
    precise error."""
    fast = deal_codes(raw, v.hand_size, v.decks, v.lowest_rank, v.joker_copies)
    return (fast, True) if fast is not None else (_dealt_hands(raw, v), False)


def _start(h: dict[str, Any]) -> Round:
    try:
        return Round._from_deal(h["variant"], h["hands"], h["leader"], revealed=h["revealed"],
                                partner=h["partner"], teams=h["teams"], stake=h["stake"],
                                table_fee=h["table_fee"], partial=h["partial_deal"],
                                checked=h["checked"], seed_sha256=h["seed_sha256"])
    except ReplayError:
        raise
    except ShuangkouError as exc:
        raise ReplayError(str(exc), field=exc.field) from None


def parse_replay(document: Mapping[str, Any] | str | bytes, *,
                 partial_deal: bool = False) -> Replay:
    """Parse a replay document (docs/replays.md) into a typed :class:`Replay`, checking its
    form: fields, seats, cards, declarations. The rules are checked when it is folded over
    a :class:`Round` (:func:`score_replay`, :func:`summarize_replay`)."""
    r = _load(document)
    h = _header(r, partial_deal)
    raw = r["actions"]
    if not isinstance(raw, list):
        raise ReplayError("actions must be a list", field="actions")
    return Replay(variant=h["variant"], hands=tuple(tuple(x) for x in h["hands"]),
                  leader=h["leader"], revealed=h["revealed"], partner=h["partner"],
                  teams=h["teams"], stake=h["stake"], table_fee=h["table_fee"],
                  partial_deal=h["partial_deal"],
                  actions=read_actions(raw), players=h["players"])


def _fold_typed(rnd: Round, actions: Sequence[Action]) -> None:
    """Apply a typed replay's actions over ``rnd`` (errors as ReplayError at their index)."""
    for i, a in enumerate(actions):
        try:
            rnd.apply(a)
        except ShuangkouError as exc:
            raise ReplayError(str(exc), i) from None
    if not rnd.is_over:
        raise ReplayError(f"the replay ends before the round is over: seat {rnd.turn} is to "
                          f"act ({rnd._why_turn()})", field="actions")


def replay_round(replay: Replay | Mapping[str, Any] | str | bytes, *,
                 partial_deal: bool = False) -> Round:
    """The finished :class:`Round` a replay describes: its deal, with every action applied
    (RULES.md §9). Raises :class:`ReplayError` at the first action that cannot happen.

    A document is folded as it is read (its actions are checked and applied one by one in
    compiled code, never materialised as :class:`Action` records); a :class:`Replay` is
    folded through the public actions. Both report the same errors.
    """
    if isinstance(replay, Replay):
        rnd = replay.start()
        _fold_typed(rnd, replay.actions)
        return rnd
    r = _load(replay)
    rnd = _start(_header(r, partial_deal))
    actions = r["actions"]
    if not isinstance(actions, list):
        raise ReplayError("actions must be a list", field="actions")
    fold(rnd, actions)
    return rnd


def _summary(rnd: Round) -> ReplaySummary:
    return ReplaySummary(
        variant=rnd.variant, finish_order=rnd.finish_order, bombs=rnd.bombs,
        bomb_cards=rnd.bomb_cards, cards_left=rnd.cards_left, escaper=rnd.escaper,
        escape_action=rnd.escape_action, stake=rnd.stake, table_fee=rnd.table_fee,
        hand_at=rnd.hand_at, actions=rnd.actions_applied, _round=rnd)


def summarize_replay(replay: Replay | Mapping[str, Any] | str | bytes, *,
                     partial_deal: bool = False) -> ReplaySummary:
    """Validate a replay move by move (§9) and return what scoring needs.

    :param replay: a :class:`Replay`, or the replay document (a mapping, or JSON text).
    :param partial_deal: accept hands that are only part of the deck (puzzles, tests);
        a replay may also say ``"partial_deal": true``.
    :raises ReplayError: with ``.action`` (index into ``actions``, or None) and ``.detail``.
    """
    return _summary(replay_round(replay, partial_deal=partial_deal))


def score_replay(replay: Replay | Mapping[str, Any] | str | bytes, *,
                 partial_deal: bool = False) -> ReplayResult:
    """Validate a replay (§9) and settle it (§10): the :func:`score_round` breakdown plus
    the seat mapping. Raises :class:`ReplayError` for any replay that could not happen,
    including an escape in a variant without an escape rule (at the escape's index)."""
    result: ReplayResult = _settled(replay_round(replay, partial_deal=partial_deal), False)
    return result


def score_replay_json(replay: Replay | Mapping[str, Any] | str | bytes, *,
                      partial_deal: bool = False) -> str:
    """``score_replay(replay).to_dict()`` as compact JSON text (what ``orjson.dumps``
    writes), written by the settlement without building the records: what batch scorers
    store. The same errors as :func:`score_replay`."""
    text: str = _settled(replay_round(replay, partial_deal=partial_deal), True)
    return text


def _settled(rnd: Round, as_json: bool) -> Any:
    extra = {"hand_at": rnd.hand_at, "actions": rnd.actions_applied}
    try:
        return rnd.settle_json(**extra) if as_json else rnd.settle(ReplayResult, **extra)
    except ShuangkouError as exc:   # an amount beyond the wire's 64 bits
        raise ReplayError(str(exc), rnd.escape_action, exc.field) from None
