"""The serialised round state, read and checked in plain Python: the slow twin of
core_ext/_state.pyx, written apart from it from the layout its module doc gives.

:func:`check` answers what ``Round.from_bytes`` must: None for a state the rules can reach,
else the exact error sentence, the checks in the documented order. tests/test_round.py runs
both on every reachable state of whole rounds and on thousands of forgeries and requires
the same verdict and sentence. Readings of stored plays are the core's (classification has
its own references); the format, the rules fingerprint, the seal, the seats, the round end
and the deck are checked here.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import struct
from dataclasses import dataclass
from typing import Any

from shuangkou import core
from shuangkou.core.variants import Variant, get_variant, house_variants

MAGIC = b"SKR4"
SEED_BYTES = 32   # the seed commitment: carried, never checked
ROUND_ID_BYTES = 16   # the round's identity, last: carried, never checked
SEATS = 4
MAX_ACTIONS = 2**31 - 1
MAX_STAKE, MAX_TABLE_FEE = 10**9, 10**12
#: turn leader last prev passes over over_seat escaper lead(3) nfin fin(4) hand_at(4)
#: partial | stake table_fee | actions over_action  (seats: -1 = none)
HEAD = struct.Struct("<21b QQ II")
SUITED = [c for c in range(1, 66) if (c - 1) % 5 != 4]      # the 52 suited faces
BODY = SEATS * (len(SUITED) + 15) + 76
PREFIX = len(MAGIC) + 16
KEY_ID = re.compile(rb"[A-Za-z0-9._-]{1,64}")


def rank(code: int) -> int:
    return (code - 1) // 5


def is_card(code: int) -> bool:
    return 1 <= code <= 65 or code in (70, 75)


def slot_sizes(hand_size: int) -> tuple[int, int]:
    return 5 + hand_size, 1 + hand_size + 3 * (hand_size // 3)


def size_of(v: Variant) -> int:
    standing, bomb = slot_sizes(v.hand_size)
    return PREFIX + HEAD.size + BODY + standing + SEATS * bomb + SEED_BYTES + ROUND_ID_BYTES


def fingerprint(v: Variant) -> bytes:
    """Every field but the labels, as canonical JSON, hashed (the module doc's definition)."""
    rules = {k: val for k, val in v.to_dict().items()
             if k not in ("id", "name", "source", "extends")}
    text = json.dumps(rules, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).digest()[:16]


def seal(state: bytes, kid: str, key: bytes) -> bytes:
    signed = state + kid.encode() + bytes([len(kid)])
    return signed + hmac.new(key, signed, hashlib.sha256).digest()


class Refused(Exception):
    pass


def _bad(why: str) -> Refused:
    return Refused(f"round state: {why}")


@dataclass
class State:
    """What an accepted state says (the fields tests compare with the loaded Round)."""

    turn: int | None
    standing: tuple[int, tuple[int, ...], int] | None   # seat, cards, reading index
    bombs: list[list[tuple[tuple[int, ...], int]]]     # per seat: cards, reading index
    faces: list[list[int]]
    ranks: list[list[int]]
    played: list[int]


def check(data: bytes, variant: str | Variant,
          keys: dict[str, bytes] | None = None) -> str | None:
    """None when ``data`` is a state the rules can reach, else why not (the sentence)."""
    try:
        read(data, variant, keys)
    except Refused as exc:
        return str(exc)
    return None


def _key_id(data: bytes) -> bytes | None:
    """The key id the last bytes of ``data`` name as a seal, or None."""
    if len(data) < 34:
        return None
    m = data[-33]
    if not 1 <= m <= 64 or len(data) < 33 + m:
        return None
    kid = data[-33 - m:-33]
    return kid if KEY_ID.fullmatch(kid) else None


def _unsealed(data: bytes, keys: dict[str, bytes]) -> bytes:
    kid = _key_id(data)
    if kid is None:
        raise _bad("it is not signed; this server takes only the states it signed")
    key = keys.get(kid.decode())
    if key is None:
        raise _bad(f"it is signed with key id {kid.decode()!r}, which this server does not "
                   "hold")
    if hmac.new(key, data[:-32], hashlib.sha256).digest() != data[-32:]:
        raise _bad(f"its signature does not match: the state was altered (or signed with "
                   f"another key named {kid.decode()!r})")
    return data[:-33 - len(kid)]


def _rules_named(fp: bytes, v: Variant) -> str:
    for known in [*core.BUILTIN.values(), *house_variants()]:
        if fingerprint(known) == fp:
            return f"it is a round of {known.id}, not {v.id}"
    return f"it is a round of other rules than {v.id}'s (rules fingerprint {fp.hex()[:12]}…)"


def read(data: bytes, variant: str | Variant,
         keys: dict[str, bytes] | None = None) -> State:
    v = get_variant(variant)
    # -- the seal, then prefix and head
    if keys is not None:
        data = _unsealed(data, keys)
    elif len(data) > size_of(v):
        kid = _key_id(data)
        if kid is not None and len(data) == size_of(v) + 33 + len(kid):
            raise _bad(f"it is signed (key id {kid.decode()!r}), and this server holds no "
                       "state keys to check it")
    if len(data) != size_of(v) or not data.startswith(MAGIC):
        raise _bad(f"{len(data)} bytes is not a serialised {v.id} round ({size_of(v)} bytes "
                   f"starting {MAGIC!r})")
    if data[4:PREFIX] != fingerprint(v):
        raise _bad(_rules_named(data[4:PREFIX], v))
    pos = PREFIX
    h = HEAD.unpack_from(data, pos)
    turn, leader, last, prev, passes, over, over_seat, escaper = h[:8]
    why, a, b, nfin = h[8:12]
    hand_at, partial = h[16:20], h[20]
    stake, fee, actions, over_action = h[21:25]
    if not 0 <= nfin <= SEATS:
        raise _bad(f"{nfin} finishers")
    fin, fin_pad = h[12:12 + nfin], h[12 + nfin:16]
    pos += HEAD.size
    body, sp = pos, pos + BODY
    standing_slot, bomb_slot = slot_sizes(v.hand_size)
    standing, bombs = _slots(data, sp, standing_slot, bomb_slot)
    # -- the body against the deck
    faces, ranks = [], []
    k = body
    for _ in range(SEATS):
        faces.append([0] * 76)
        for c in SUITED:
            faces[-1][c] = data[k]
            k += 1
        ranks.append(list(data[k:k + 15]))
        k += 15
    played = list(data[k:k + 76])
    left = [sum(r) for r in ranks]
    _deck(v, faces, ranks, played, bool(partial))
    # -- seats, finishers, the round end
    seats = range(SEATS)
    if sorted(hand_at) != [0, 1, 2, 3]:
        raise _bad(f"hand_at {list(hand_at)} is not a seating of the dealt hands")
    if partial not in (0, 1):
        raise _bad("partial_deal must be 0 or 1")
    if leader not in seats:
        raise _bad(f"leader {leader} is not a seat")
    if not 1 <= stake <= MAX_STAKE or not 0 <= fee <= MAX_TABLE_FEE:
        raise _bad("stake or table fee out of range")
    if len(set(fin)) != len(fin) or any(s not in seats for s in fin) or \
            any(x != -1 for x in fin_pad):
        raise _bad(f"finishing order {list(fin)} is not distinct seats")
    if {s for s in seats if not left[s]} != set(fin):
        raise _bad(f"the seats without cards {[s for s in seats if not left[s]]} are not the "
                   f"finishers {list(fin)}")
    if any(left[s] > v.hand_size for s in seats):
        raise _bad("a seat holds more cards than a hand")
    ended = _ended_at(fin, v.round_end)
    if over == 0:
        if ended is not None:
            raise _bad(f"the finishing order {list(fin)} ends the round but it goes on")
        if turn not in seats or not left[turn]:
            raise _bad(f"seat {turn} cannot be the seat to act")
        if over_seat != 0 or escaper != -1 or over_action != 0:
            raise _bad("a round in progress with an end recorded")
    elif over in (1, 2):
        if over != (2 if v.round_end == "first_out" else 1) or not fin \
                or ended != len(fin) - 1 or over_seat != fin[-1] or escaper != -1:
            raise _bad(f"the round cannot have ended at finishing order {list(fin)}")
    elif over == 3:
        if ended is not None or escaper not in seats or not left[escaper] \
                or over_seat != escaper or v.escape == "none":
            raise _bad("an escape the round cannot have had")
    else:
        raise _bad(f"unknown round end {over}")
    if actions > MAX_ACTIONS:
        raise _bad(f"{actions:,} actions is not a round's count")
    if over and not over_action < actions:
        raise _bad("the round ended after its last action")
    if why not in (0, 1, 2) or a not in seats or (why == 2) != (b in seats) or \
            (why != 2 and b != -1):
        raise _bad("malformed lead")
    if standing is None:
        if passes != 0:
            raise _bad("passes recorded while a seat leads")
        if not over and a != turn:
            raise _bad(f"seat {turn} is to lead but seat {a} is recorded as leading")
    else:
        seat = standing[0]
        holding = sum(1 for s in seats if left[s])
        if seat not in seats or last != seat or prev not in seats:
            raise _bad("the standing play's seat is inconsistent")
        if not over and not passes < holding - (1 if left[seat] else 0):
            raise _bad(f"{passes} passes on a trick that has ended")
        if not over and turn == seat and left[seat]:
            raise _bad("the seat to act made the standing play")
    if why == 0 and a != leader:
        raise _bad("the first trick is led by someone other than the leader")
    # -- stored plays: read again, made of played cards
    standing_reading = None
    if standing is not None:
        standing_reading = _reading(v, standing[1], standing[2])
    for s in seats:
        for cards, idx in bombs[s]:
            if not _reading(v, cards, idx).is_bomb:
                raise Refused(f"bombs[{s}]: {_text(cards)} as stored is no bomb")
    by_rank = [0] * 15
    for c, n in enumerate(played):
        if n:
            by_rank[rank(c)] += n
    used = [0] * 15
    for s in seats:
        for cards, _ in bombs[s]:
            for c in cards:
                used[rank(c)] += 1
    if any(u > p for u, p in zip(used, by_rank, strict=True)):
        raise _bad("bombs hold cards that were never played")
    if standing is not None:
        need = [0] * 15
        for c in standing[1]:
            need[rank(c)] += 1
        if any(u > p for u, p in zip(need, by_rank, strict=True)):
            raise _bad("the standing play holds cards that were never played")
        if standing_reading.is_bomb and standing_reading not in [
                _reading(v, cards, idx) for cards, idx in bombs[standing[0]]]:
            raise _bad("a standing bomb missing from its seat's bombs")
    return State(None if over else turn, standing, bombs, faces, ranks, played)


def _slots(data: bytes, pos: int, standing_slot: int,
           bomb_slot: int) -> tuple[Any, list[list[tuple[tuple[int, ...], int]]]]:
    standing = None
    if data[pos] == 0:
        if any(data[pos:pos + standing_slot]):
            raise _bad("bytes in an empty standing slot")
    elif data[pos] == 1:
        k = data[pos + 4]
        if not 0 < k <= standing_slot - 5 or any(data[pos + 5 + k:pos + standing_slot]):
            raise _bad("a malformed standing play")
        standing = (data[pos + 1], tuple(data[pos + 5:pos + 5 + k]),
                    data[pos + 2] | data[pos + 3] << 8)
    else:
        raise _bad("a malformed standing play")
    pos += standing_slot
    bombs = []
    for s in range(SEATS):
        seat_bombs, at = [], 1
        for _ in range(data[pos]):
            if at + 3 > bomb_slot:
                raise _bad(f"seat {s}'s bombs overflow their slot")
            k = data[pos + at]
            if not k or at + 3 + k > bomb_slot:
                raise _bad(f"seat {s}'s bombs are malformed")
            seat_bombs.append((tuple(data[pos + at + 3:pos + at + 3 + k]),
                               data[pos + at + 1] | data[pos + at + 2] << 8))
            at += 3 + k
        if any(data[pos + at:pos + bomb_slot]):
            raise _bad(f"bytes after seat {s}'s bombs")
        bombs.append(seat_bombs)
        pos += bomb_slot
    return standing, bombs


def _deck(v: Variant, faces: list[list[int]], ranks: list[list[int]], played: list[int],
          partial: bool) -> None:
    if any(n and not is_card(c) for c, n in enumerate(played)):
        raise _bad("played cards include codes that are no card")
    for r in range(15):
        want = v.joker_copies if r >= 13 else (4 * v.decks if r >= v.lowest_rank else 0)
        total = sum(ranks[s][r] for s in range(SEATS)) + sum(
            n for c, n in enumerate(played) if c and rank(c) == r)
        if total > want or (not partial and total != want):
            raise _bad(f"{total} cards of rank {core.cards.rank_name(r)} held and played; the "
                       f"deck has {want}")
    for c in SUITED:
        held = played[c] + sum(faces[s][c] for s in range(SEATS))
        if held > v.decks:
            raise _bad(f"{held} copies of {core.format_cards([c])[0]} held and played; the "
                       f"deck has {v.decks}")


def _ended_at(fin: tuple[int, ...], round_end: str) -> int | None:
    out: set[int] = set()
    for i, s in enumerate(fin):
        if round_end == "first_out" or (s + 2) % SEATS in out:
            return i
        out.add(s)
    return None


def _reading(v: Variant, cards: tuple[int, ...], idx: int) -> Any:
    if not 0 < len(cards) <= 64:
        raise Refused("a stored play holds 1–64 cards")
    for c in cards:
        if not is_card(c):
            raise Refused(f"invalid card code {c} in a stored play")
    # Classified as cards, not as a hand of this deck: a forged play may hold more copies
    # than the deck (refused later, as never played), which only the deck check minds.
    roomy = v.replace(id=v.id + "_any", decks=4, joker_copies=4)
    try:
        readings = core.classify(list(cards), roomy).readings
    except (core.InvalidPlay, core.CardError):
        readings = ()
    if not 0 <= idx < len(readings):
        raise Refused(f"{_text(cards)} has no reading #{idx} in {v.id}")
    return readings[idx]


def _text(codes: Any) -> str:
    return " ".join(core.format_cards(list(codes)))
