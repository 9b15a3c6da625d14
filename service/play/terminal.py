"""The table in a terminal: one player against three 托管 seats (one of them the partner).

Line by line (any terminal, a pipe, a pseudo-terminal): the other seats' moves are printed
as they happen, and on the player's turn the table, the play to beat and the player's hand,
sorted, then a prompt. At the prompt:

* cards (``7S 7H``, ``77``, ``45678 BJ``; ``... as straight:8`` to declare the reading) —
  play them; a card written without a suit takes one of that rank from the hand;
* ``h`` — 提示: the 托管 policy's suggestion and why; Enter then plays it;
* ``l [KIND]`` — the legal plays, numbered (``l pair``, ``l bomb``); ``#N`` plays one;
* ``p`` — pass; ``a`` — let 托管 make this move; ``A`` — 托管 to the end of the round;
* ``s [FILE]`` — write the replay so far; ``q`` — leave; ``?`` — these keys.

At the end the settlement (as ``shuangkou score`` prints it) and, on request, the replay
(docs/replays.md), which ``shuangkou view`` turns into a page. Every decision about the
rules — what may be played, what stands, whose turn — is the table's
(:mod:`~shuangkou.service.play.tables`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from shuangkou import core
from shuangkou.core.cards import (
    RED_SUITS,
    SEATS,
    SUIT_SYMBOLS,
    card_rank,
    card_suit,
    partner,
    rank_name,
    rank_position,
)
from shuangkou.core.declaration import Declaration
from shuangkou.core.errors import ShuangkouError

from ..shown import shown
from .tables import Deal, Happened, Hint, Move, Option, Refused, Seen, Table

__all__ = ["Game", "Colours", "replay_document", "KEYS"]

KEYS = ("cards: play (77, 7S 7H, ... as straight:8)   h: hint (提示), Enter plays it   "
        "l [KIND]: legal plays, #N plays one   p: pass   a: 托管 this move   "
        "A: 托管 to the end   s [FILE]: save the replay   q: quit")
_SHOWN = 40                      # legal plays listed at once
_ORDINAL = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th"}


@dataclass(frozen=True)
class Colours:
    """ANSI colours, or none (``NO_COLOR``, ``--no-color``, output that is not a terminal)."""

    on: bool

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on else text

    def red(self, text: str) -> str:
        return self._wrap("31;1", text)

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)

    def card(self, code: int) -> str:
        """A card as ``7♥``; jokers as ``SJ`` / ``BJ`` (the big one red)."""
        rank, suit = card_rank(code), card_suit(code)
        if rank == 14:
            return self.red("BJ")
        if rank == 13:
            return self.bold("SJ")
        name = "10" if rank_name(rank) == "T" else rank_name(rank)
        if suit >= len(SUIT_SYMBOLS):
            return name
        text = name + SUIT_SYMBOLS[suit]
        return self.red(text) if suit in RED_SUITS else self.bold(text)

    def cards(self, codes: tuple[int, ...] | list[int], group: bool = False) -> str:
        """Cards in a row; ``group``: sorted, a wider gap between ranks (a hand)."""
        if not group:
            return " ".join(self.card(c) for c in codes)
        out: list[str] = []
        last = None
        for c in sorted(codes):
            if last is not None:
                out.append("  " if card_rank(c) != last else " ")
            out.append(self.card(c))
            last = card_rank(c)
        return "".join(out)


def replay_document(deal: Deal, actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The replay (docs/replays.md) of a deal and the actions made so far."""
    variant: Any = deal.variant
    if not isinstance(variant, str):
        from ..api.convert import variant_document

        variant = variant_document(variant)
    doc: dict[str, Any] = {"variant": variant,
                           "hands": [core.format_cards(h) for h in deal.hands],
                           "leader": deal.leader}
    if deal.revealed is not None:
        doc["revealed"] = core.format_cards([deal.revealed])[0]
    if deal.teams is not None:
        doc["teams"] = [list(t) for t in deal.teams]
    doc["actions"] = actions
    doc["stake"] = deal.stake
    return doc


def _action(move: Move, did: Happened) -> dict[str, Any]:
    """A replay action: a declared play names exactly the reading that stood."""
    if move.kind != "play":
        return {"seat": move.seat, move.kind: True}
    action: dict[str, Any] = {"seat": move.seat, "play": core.format_cards(did.cards)}
    d = did.exact
    if move.declared is not None and d is not None:
        action["declare"] = d.kind
        if d.top is not None:
            action["declare_top"] = rank_name(int(d.top))
        if d.star:
            action["declare_star"] = d.star
        if d.wilds:
            action["declare_wilds"] = [rank_name(int(w)) for w in d.wilds]
    return action


@dataclass
class Game:
    """One round at the terminal. The player holds the hand dealt to seat ``dealt`` (and
    sits, after the §9 swap, at table seat ``me``); ``seed`` varies the 托管 seats'
    choices among equals (the same seed and keys give the same round)."""

    table: Table
    deal: Deal
    dealt: int
    out: IO[str]
    ask: Callable[[str], str]
    colours: Colours
    delay: float = 0.0
    seed: int = 0
    save: str | None = None
    auto: bool = False
    actions: list[dict[str, Any]] = field(default_factory=list)
    seen: Seen | None = None
    trick: int = 1
    hint: Hint | None = None
    listed: list[Option] = field(default_factory=list)
    me: int = 0

    # -- output
    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def who(self, seat: int) -> str:
        if seat == self.me:
            return self.colours.bold("you")
        role = "partner" if seat == partner(self.me) else "opponent"
        return f"seat {seat} ({role})"

    # -- the round
    def run(self) -> int:
        """Play the round to its end (or until the player leaves); the exit status."""
        c = self.colours
        self.seen = self.table.start(self.deal)
        v = core.get_variant(self.deal.variant)
        self.me = self.seen.hand_at.index(self.dealt)
        # a house variant's name and id come from a file or a server: escaped
        self.say(c.bold(f"shuangkou play · {shown(v.name)} ({shown(v.id)}) · seed {self.seed}"))
        self.say(f"You sit at seat {self.me} (dealt hand {self.dealt}); your partner is seat "
                 f"{partner(self.me)}; seats {(self.me + 1) % 4} and {(self.me + 3) % 4} are "
                 "the opponents. The other three seats are played by 托管.")
        lead = f"Seat {self.seen.turn} leads the first trick"
        if self.deal.revealed is not None:
            lead += f" (it revealed {c.card(self.deal.revealed)})"
        self.say(lead + ".  Type ? for the keys.")
        while not self.seen.over:
            turn = self.seen.turn
            assert turn is not None
            if turn == self.me and not self.auto:
                move = self._ask_move()
                if move is None:
                    return self._leave()
            else:
                if self.delay and turn != self.me:
                    time.sleep(self.delay)
                move = self.table.suggest(self._seed()).move
            try:
                self._apply(move)
            except Refused as exc:
                self.say(c.red(f"refused: {shown(str(exc))}"))
        self._settle()
        return 0

    def _seed(self) -> int:
        return (self.seed * 1_000_003 + len(self.actions)) % (1 << 63)

    def _apply(self, move: Move) -> None:
        did, self.seen = self.table.apply(move)
        self.actions.append(_action(move, did))
        self.hint = None
        self.listed = []
        c = self.colours
        if did.kind == "play":
            line = f"  {self.who(did.seat)}: {c.cards(did.cards)}  — {did.reading}"
            if did.finished is not None:
                line += c.bold(f"  · out {_ORDINAL[len(self.seen.finish_order)]}")
        elif did.kind == "pass":
            line = c.dim(f"  {self.who(did.seat)}: pass")
        else:
            line = c.red(f"  {self.who(did.seat)}: escapes (逃跑)")
        self.say(line)
        if did.trick_won_by is not None:
            self.trick += 1
            verb = "take" if did.trick_won_by == self.me else "takes"
            note = f"  → {self.who(did.trick_won_by)} {verb} trick {self.trick - 1}"
            if did.wind_to is not None:
                verb = "lead" if did.wind_to == self.me else "leads"
                note += f"; 接风: {self.who(did.wind_to)} {verb}"
            self.say(c.dim(note))

    def _status(self) -> None:
        seen = self.seen
        assert seen is not None
        c = self.colours
        self.say(c.bold(f"── trick {self.trick} · your turn " + "─" * 30))
        for s in range(SEATS):
            if s == self.me:
                continue
            left = seen.sizes[s]
            self.say(f"  {self.who(s):<22} {left:>2} cards" if left else
                     f"  {self.who(s):<22}  out")
        if seen.standing is None:
            self.say("  you lead: play anything")
        else:
            seat, cards, reading = seen.standing
            self.say(f"  to beat: {c.cards(cards)}  — {reading}, by {self.who(seat)}")
        hand = seen.hands[self.me]
        self.say(f"  your hand ({len(hand)}): {c.cards(hand, group=True)}")

    def _ask_move(self) -> Move | None:
        """The player's move; None when the player leaves."""
        self._status()
        while True:
            try:
                line = self.ask("> ").strip()
            except EOFError:
                return None
            move = self._command(line)
            if move == "quit":
                return None
            if isinstance(move, Move):
                return move

    def _command(self, line: str) -> Move | str | None:
        seen = self.seen
        assert seen is not None
        c = self.colours
        word, _, rest = line.partition(" ")
        if line == "":
            if self.hint is not None:
                return self.hint.move
            self.say(c.dim("type cards to play them, p to pass, h for a hint, ? for the keys"))
        elif line == "?":
            self.say(KEYS)
        elif line == "h":
            self.hint = self.table.suggest(self._seed())
            what = (c.cards(self.hint.move.cards) + f"  — {self.hint.reading}"
                    if self.hint.move.kind == "play" else "pass")
            self.say(f"  提示: {what}  ({self.hint.reason}); Enter plays it")
        elif word == "l":
            self._list(rest.strip())
        elif line.startswith("#") and line[1:].isdigit():
            k = int(line[1:])
            if not 1 <= k <= len(self.listed):
                self.say(c.red("no such play: list them with l first"))
                return None
            option = self.listed[k - 1]
            declared = option.declared if self.table.needs_declaration(option) else None
            return Move(self.me, "play", option.cards, declared)
        elif line == "p":
            return Move(self.me, "pass")
        elif line == "a":
            return self.table.suggest(self._seed()).move
        elif line == "A":
            self.auto = True
            self.say(c.dim("  托管 plays your seat to the end of the round"))
            return self.table.suggest(self._seed()).move
        elif word == "s":
            self._write(rest.strip() or None)
        elif line == "q":
            return "quit"
        else:
            return self._typed(line)
        return None

    def _list(self, kind: str) -> None:
        c = self.colours
        if kind and kind not in core.KINDS:
            self.say(c.red(f"{kind!r} is not a play type ({', '.join(core.KINDS)})"))
            return
        options = [o for o in self.table.options() if not kind or o.kind == kind
                   or (kind == "bomb" and o.kind in core.BOMB_KINDS)]
        self.listed = options
        if not options:
            self.say("  nothing beats it: pass (p)" if self.seen and self.seen.standing
                     else "  no play of that type")
            return
        for k, o in enumerate(options[:_SHOWN], 1):
            self.say(f"  {'#' + str(k):>4}  {c.cards(o.cards)}  — {o.reading}")
        if len(options) > _SHOWN:
            self.say(c.dim(f"  … {len(options) - _SHOWN} more: narrow with l KIND "
                           f"({', '.join(core.KINDS)})"))

    def _typed(self, line: str) -> Move | None:
        text, _, declared_text = line.partition(" as ")
        try:
            codes = core.parse_cards(text)
            declared = _declaration(declared_text.strip()) if declared_text else None
        except ShuangkouError as exc:
            self.say(self.colours.red(f"{shown(str(exc))} (? for the keys)"))
            return None
        assert self.seen is not None
        return Move(self.me, "play", _from_hand(codes, self.seen.hands[self.me]), declared)

    def _write(self, path: str | None) -> None:
        path = path or self.save or _default_name(self.deal, self.seed)
        doc = replay_document(self.deal, self.actions)
        try:
            Path(path).write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
        except OSError as exc:
            self.say(self.colours.red(f"cannot write {shown(path)}: "
                                      f"{shown(str(exc.strerror or exc))}"))
            return
        self.say(f"  replay written to {shown(path)} ({len(self.actions)} actions); "
                 f"shuangkou view {shown(path)} draws it")

    def _leave(self) -> int:
        self.say("You left the round.")
        if self.save:
            self._write(self.save)
        return 0

    def _settle(self) -> None:
        from ..commands import text_score

        result = self.table.result()
        self.say(self.colours.bold("── the round is over " + "─" * 30))
        self.say(shown(text_score(result), lines=True))
        mine = result["final"][self.me]
        self.say(self.colours.bold(f"You (seat {self.me}): {mine:+d}"))
        if self.save:
            self._write(self.save)
            return
        try:
            answer = self.ask("Save the replay? file name, or Enter for no: ").strip()
        except EOFError:
            return
        if answer:
            self._write(answer)


def _declaration(text: str) -> Declaration:
    """``KIND[:TOP]`` as typed after ``as``."""
    kind, _, top = text.partition(":")
    if kind not in core.KINDS:
        raise ShuangkouError(f"{kind!r} is not a play type ({', '.join(core.KINDS)})")
    position = None
    if top:
        position = rank_position(top)
        if position is None:
            raise ShuangkouError(f"{top!r} is not a rank")
    return Declaration(kind, position)


def _from_hand(codes: list[int], hand: tuple[int, ...]) -> tuple[int, ...]:
    """The typed cards as cards of the hand: a card without a suit takes one of its rank
    (the suited cards named first); a card the hand lacks is left for the table to refuse."""
    left = list(hand)
    for c in codes:
        if c in left and card_suit(c) < 4:
            left.remove(c)
    out = []
    for c in codes:
        if card_suit(c) < 4 or card_rank(c) >= 13:
            out.append(c)
            if card_rank(c) >= 13 and c in left:
                left.remove(c)
            continue
        same = next((h for h in left if card_rank(h) == card_rank(c)), None)
        if same is None:
            out.append(c)
        else:
            left.remove(same)
            out.append(same)
    return tuple(out)


def _default_name(deal: Deal, seed: int) -> str:
    v = deal.variant if isinstance(deal.variant, str) else deal.variant.id
    return f"round-{v}-{seed}.json"
