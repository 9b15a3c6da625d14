"""The round ``shuangkou play`` runs, behind one interface: in this process
(:class:`LocalTable`, the core's :class:`~shuangkou.core.Round` and
:func:`~shuangkou.core.suggest`) or on a running service (:class:`RemoteTable`, the
``RoundService`` calls of docs/rounds.md, the legal plays from ``EnumerateLegalPlays``).

Both give the same plain records, so the terminal (:mod:`~shuangkou.service.play.terminal`)
cannot tell them apart and the same keys give the same round either way. The rules are the
table's: nothing here decides whether a move is legal, what stands or who is to act.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, cast

from shuangkou import core
from shuangkou.core.cards import SEATS
from shuangkou.core.declaration import Declaration
from shuangkou.core.errors import ShuangkouError
from shuangkou.core.variants import Variant

__all__ = ["Deal", "Move", "Happened", "Hint", "Option", "Refused", "Seen", "Table",
           "LocalTable", "RemoteTable"]


class Refused(Exception):
    """The table refused a move; the message is its sentence (the state is unchanged)."""


@dataclass(frozen=True)
class Deal:
    """A round's deal in the fields of a replay (docs/replays.md): dealt hands, leader, the
    revealed card or the teams, the stake."""

    variant: str | Variant
    hands: tuple[tuple[int, ...], ...]
    leader: int
    revealed: int | None = None
    teams: tuple[tuple[int, int], ...] | None = None
    stake: int = 1


@dataclass(frozen=True)
class Move:
    """An action to apply: ``play`` (``cards``, optionally the reading ``declared``),
    ``pass`` or ``escape``."""

    seat: int
    kind: str
    cards: tuple[int, ...] = ()
    declared: Declaration | None = None


@dataclass(frozen=True)
class Seen:
    """The table after an action, as a player sees it (and the seat to act's hand)."""

    turn: int | None
    sizes: tuple[int, ...]
    hands: tuple[tuple[int, ...], ...]
    standing: tuple[int, tuple[int, ...], str] | None   # seat, cards, reading text
    finish_order: tuple[int, ...]
    over: bool
    hand_at: tuple[int, ...]


@dataclass(frozen=True)
class Happened:
    """What an action did (the round's ActionRecord): the reading that now stands and the
    declaration that names exactly that reading (for the replay), the trick's winner when a
    pass closed it, the seat that went out, 接风, the seat to act next."""

    seat: int
    kind: str
    cards: tuple[int, ...]
    reading: str
    exact: Declaration | None
    trick_won_by: int | None
    finished: int | None
    wind_to: int | None
    next_turn: int | None
    round_over: bool


@dataclass(frozen=True)
class Hint:
    """A suggested move (托管 / 提示), the reading it stands in and why."""

    move: Move
    reading: str
    reason: str


@dataclass(frozen=True)
class Option:
    """A legal play of the seat to act and the reading it stands in."""

    cards: tuple[int, ...]
    reading: str
    kind: str
    declared: Declaration


class Table(Protocol):
    """A round being played (see the module doc)."""

    def start(self, deal: Deal) -> Seen: ...
    def apply(self, move: Move) -> tuple[Happened, Seen]: ...
    def suggest(self, seed: int | None) -> Hint: ...
    def options(self) -> list[Option]: ...
    def needs_declaration(self, option: Option) -> bool: ...
    def result(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


# ----------------------------------------------------------------------------- in process

class LocalTable:
    """The round in this process."""

    def __init__(self) -> None:
        self.round: core.Round | None = None

    @property
    def _r(self) -> core.Round:
        assert self.round is not None, "start the round first"
        return self.round

    def start(self, deal: Deal) -> Seen:
        self.round = core.Round.deal(
            deal.variant, [list(h) for h in deal.hands], deal.leader,
            revealed=None if deal.revealed is None else [deal.revealed],
            teams=None if deal.teams is None else [list(t) for t in deal.teams],
            stake=deal.stake)
        return self._seen()

    def _seen(self) -> Seen:
        r = self._r
        st = r.standing
        return Seen(r.turn, tuple(r.cards_left), tuple(r.hand(s) for s in range(SEATS)),
                    None if st is None else (st.seat, st.cards, st.reading.describe()),
                    r.finish_order, r.is_over, r.hand_at)

    def apply(self, move: Move) -> tuple[Happened, Seen]:
        r = self._r
        try:
            rec = r.apply(core.Action(move.seat, move.kind, move.cards, move.declared))
        except ShuangkouError as exc:
            raise Refused(str(exc)) from None
        reading = rec.reading
        return Happened(rec.seat, rec.kind, rec.cards,
                        "" if reading is None else reading.describe(),
                        None if reading is None else reading.declaration, rec.trick_won_by,
                        rec.finished, rec.wind_to, rec.next_turn, rec.round_over), self._seen()

    def suggest(self, seed: int | None) -> Hint:
        s = core.suggest(self._r, seed=seed)
        return Hint(Move(s.seat, s.kind, s.cards, s.declaration),
                    "" if s.reading is None else s.reading.describe(), s.reason)

    def options(self) -> list[Option]:
        return [Option(tuple(p.cards), p.reading.describe(), p.reading.kind,
                       p.reading.declaration) for p in self._r.legal_plays()]

    def needs_declaration(self, option: Option) -> bool:
        r = self._r
        st = r.standing
        stands = core.play_reading(option.cards, r.variant,
                                   None if st is None else st.reading)
        return stands.declaration != option.declared

    def result(self) -> dict[str, Any]:
        return self._r.result().to_dict()

    def close(self) -> None:
        pass


# ----------------------------------------------------------------------------- on a server

class RemoteTable:
    """The round on a running service: its state travels with every call (docs/rounds.md),
    so any replica answers. Like a game server it keeps the round id StartRound gave and the
    action count of the last state it was sent, and every call carries them as the
    precondition: a state that is not this round's latest is refused (docs/rounds.md
    "Freshness and identity")."""

    def __init__(self, target: str, variant: str | Variant) -> None:
        from shuangkou.client import RoundClient, ShuangkouClient

        from ..client import rule_set_message

        # One channel for both services (shuangkou.client: deadlines, retries on UNAVAILABLE).
        self.rules = ShuangkouClient(target)
        self.rounds = RoundClient(channel=self.rules.channel)
        self.channel = self.rules.channel
        self.rule_set = rule_set_message(variant)
        self.target = target
        self.state = b""
        self.round_id = b""                 # fixed by StartRound: what later states must carry
        self.actions_applied = 0            # the count of the last state the server sent
        self._standing: Any = None          # the StandingPlay message of the last state
        self._seen: Seen | None = None
        self.last_result: Any = None

    def _call(self, method: Callable[[Any], Any], request: Any) -> Any:
        import grpc

        from shuangkou.client import ServiceError

        from ..client import server_failure

        try:
            return method(request)
        except ServiceError as exc:
            if exc.code in (grpc.StatusCode.FAILED_PRECONDITION,
                            grpc.StatusCode.INVALID_ARGUMENT):
                raise Refused(exc.message or exc.code.name) from None
            raise ConnectionError(server_failure(self.target, exc.code.name,
                                                 exc.message)) from None

    def _keep(self, state: Any) -> Seen:
        self.state = state.data
        v = state.view
        self.actions_applied = v.actions_applied
        st = v.standing if v.HasField("standing") else None
        self._standing = st
        self._seen = Seen(v.turn if v.HasField("turn") else None, tuple(v.hand_sizes),
                    tuple(tuple(h.cards) for h in v.hands),
                    None if st is None else (st.seat, tuple(st.cards), st.reading.text),
                    tuple(v.finish_order), v.over, tuple(v.hand_at))
        return self._seen

    def start(self, deal: Deal) -> Seen:
        from shuangkou.v1 import rounds_pb2, scoring_pb2

        request = rounds_pb2.StartRoundRequest(
            rule_set=self.rule_set, leader=deal.leader, stake=deal.stake,
            hands=[_cards(h) for h in deal.hands])
        if deal.revealed is not None:
            request.revealed = deal.revealed   # type: ignore[assignment]  # a Card enum value
        for team in deal.teams or ():
            request.teams.append(scoring_pb2.Team(seats=list(team)))
        state = self._call(self.rounds.start_round, request).state
        self.round_id = state.view.round_id
        return self._keep(state)

    def _precondition(self) -> Any:
        """The round and the action count :attr:`state` must show (a StatePrecondition)."""
        from shuangkou.v1 import rounds_pb2

        return rounds_pb2.StatePrecondition(round_id=self.round_id,
                                            actions_applied=self.actions_applied)

    def apply(self, move: Move) -> tuple[Happened, Seen]:
        from shuangkou.v1 import rounds_pb2

        from ..api.convert import ACTION_NAMES, ACTION_TYPES

        action = rounds_pb2.RoundAction(seat=move.seat, type=ACTION_TYPES[move.kind])
        if move.kind == "play":
            action.cards.CopyFrom(_cards(move.cards))
            if move.declared is not None:
                action.declaration.CopyFrom(_declaration_message(move.declared))
        reply = self._call(self.rounds.apply_action, rounds_pb2.ApplyActionRequest(
            rule_set=self.rule_set, state=self.state, action=action,
            precondition=self._precondition()))
        rec = reply.record
        seen = self._keep(reply.state)
        if reply.HasField("result"):
            self.last_result = reply.result

        def opt(name: str) -> int | None:
            return getattr(rec, name) if rec.HasField(name) else None

        has_reading = rec.HasField("reading")
        return Happened(rec.seat, ACTION_NAMES[rec.type], tuple(rec.cards),
                        rec.reading.text if has_reading else "",
                        _exact(rec.reading) if has_reading else None, opt("trick_won_by"),
                        opt("finished"), opt("wind_to"), opt("next_turn"),
                        rec.round_over), seen

    def suggest(self, seed: int | None) -> Hint:
        from shuangkou.v1 import rounds_pb2

        from ..api.convert import ACTION_NAMES, declaration

        request = rounds_pb2.SuggestActionRequest(rule_set=self.rule_set, state=self.state,
                                                  precondition=self._precondition())
        if seed is not None:
            request.seed = seed
        reply = self._call(self.rounds.suggest_action, request)
        a = reply.action
        kind = ACTION_NAMES[a.type]
        return Hint(Move(a.seat, kind, tuple(a.cards.cards),
                         declaration(a, "declaration", "action.declaration")),
                    reply.reading.text if kind == "play" else "", reply.reason)


    def options(self) -> list[Option]:
        from shuangkou.v1 import service_pb2

        from ..api.convert import KIND_NAMES

        seen = self._seen
        assert seen is not None and seen.turn is not None
        out: list[Option] = []
        token = ""
        while True:
            request = service_pb2.EnumerateLegalPlaysRequest(
                rule_set=self.rule_set, page_token=token)
            request.hand.CopyFrom(_cards(seen.hands[seen.turn]))
            if self._standing is not None:
                request.to_beat.CopyFrom(_cards(self._standing.cards))
                request.to_beat_declaration.CopyFrom(_exact_message(self._standing.reading))
            reply = self._call(self.rules.enumerate_legal_plays, request)
            out += [Option(tuple(p.cards), p.reading.text, KIND_NAMES[p.reading.kind],
                           _exact(p.reading)) for p in reply.plays]
            token = reply.next_page_token
            if not token:
                return out

    def needs_declaration(self, option: Option) -> bool:
        from shuangkou.v1 import service_pb2

        if self._standing is None:
            reply = self._call(self.rules.classify_play, service_pb2.ClassifyPlayRequest(
                rule_set=self.rule_set, play=_cards(option.cards)))
            stands = reply.reading
        else:
            reply = self._call(self.rules.compare_plays, service_pb2.ComparePlaysRequest(
                rule_set=self.rule_set, play=_cards(option.cards),
                current=_cards(self._standing.cards),
                current_declaration=_exact_message(self._standing.reading)))
            stands = reply.play
        return _exact(stands) != option.declared

    def result(self) -> dict[str, Any]:
        from ..api.results import result_to_dict

        assert self.last_result is not None, "the round is not over"
        return result_to_dict(self.last_result)

    def close(self) -> None:
        self.channel.close()


def _cards(codes: Sequence[int]) -> Any:
    """Card codes as a Cards message (the Card enum's values are the codes)."""
    from shuangkou.v1 import cards_pb2

    return cards_pb2.Cards(cards=cast("list[cards_pb2.Card]", list(codes)))


def _exact(reading: Any) -> Declaration:
    """The declaration naming exactly a Reading message (kind, top, star, wilds)."""
    from ..api.convert import KIND_NAMES

    return Declaration(KIND_NAMES[reading.kind], reading.top, reading.star,
                       tuple(reading.wilds))


def _exact_message(reading: Any) -> Any:
    from shuangkou.v1 import readings_pb2

    return readings_pb2.Declaration(kind=reading.kind, top=reading.top, star=reading.star,
                                    wilds=readings_pb2.WildPlacement(ranks=list(reading.wilds)))


def _declaration_message(d: Declaration) -> Any:
    """A core Declaration as the Declaration message (unset parts left unset)."""
    from shuangkou.core.cards import rank_position
    from shuangkou.v1 import readings_pb2

    from ..api.convert import KIND_BY_NAME

    def rank(value: int | str) -> int:
        position = value if isinstance(value, int) else rank_position(value)
        if position is None:
            raise Refused(f"{value!r} is not a rank")
        return position

    msg = readings_pb2.Declaration(kind=KIND_BY_NAME[d.kind])  # type: ignore[index]
    if d.top is not None:
        msg.top = rank(d.top)
    if d.star is not None:
        msg.star = d.star
    if d.wilds is not None:
        msg.wilds.CopyFrom(readings_pb2.WildPlacement(ranks=[rank(w) for w in d.wilds]))
    return msg
