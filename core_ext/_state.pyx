# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The serialised round (``Round.to_bytes`` / ``Round.from_bytes``): one implementation of the
state format — written, read, checked and sealed here. Its slow twin, written apart from this
one, is tests/state_reference.py; tests/test_round.py checks that the two accept exactly the
same states and refuse the others with the same sentence.

Layout (every number little-endian; seats are signed bytes, -1 = none)::

    prefix   MAGIC, then the 16 bytes of the rule set's fingerprint
    head     21 signed bytes: turn leader last prev passes over over_seat escaper
             lead_why lead_a lead_b nfin fin[4] hand_at[4] partial
             then stake (8), table_fee (8), actions (4), over_action (4)
    body     per seat: copies of each of the 52 suited faces, then cards of each of the 15
             ranks; then the cards played as each of the 76 codes
    standing 0 and zeros (a seat leads), or 1, seat, reading index (2), n, the n cards
    bombs    per seat one slot: count, then per bomb n, reading index (2), the n cards
    seed     32 bytes: SHA-256 of the seed the deal was shuffled from (core_ext/shuffle.py),
             zeros when the hands were given; carried, not checked (an audit checks it)
    round id 16 bytes: the round's identity, fixed at the deal (``Round.deal``: random, or
             the first 16 bytes of the seed commitment for a seeded deal); carried, not
             checked — a caller's precondition compares it (docs/rounds.md "Freshness")
    seal     signed states only: the key id (1–64 ASCII bytes of ``A–Z a–z 0–9 . _ -``),
             its length (1 byte), then HMAC-SHA256 (32 bytes) under that key of every byte
             before the MAC

The fingerprint (``Variant.fingerprint``) is the first 16 bytes of the SHA-256 of every rule
field of the variant — all but its labels ``id``, ``name``, ``source`` and ``extends`` — as
canonical JSON (sorted keys, no spaces, ASCII escapes): a state continues only under rules
identical to those it was played under, whatever they are called, and no other rule set
(a house variant of the same id with another table included) can read it.

The size is fixed per hand size (:func:`layout`; the seal adds its key id and 33 bytes): a
state never grows with the round. Readings are stored as their index among the cards'
readings (§7 rule-2 order), so a stored play is re-read, never trusted. A state is accepted
only if the rules can reach it: the cards are the deck's, seats and finishers agree, the
turn, trick and round end are consistent, every bomb is a bomb made of played cards.

What the rules can reach is not what happened: the stake, the table fee or a hand can be
rewritten into another reachable state. :class:`StateKeys` seals states against that: with
keys, ``pack`` appends the seal and ``load`` refuses, before reading anything else, a state
that is unsealed, sealed under a key id it does not hold, or altered in any byte.
"""

cimport cython
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.string cimport memcmp, memcpy, memset

from shuangkou.core._core cimport K_BOMB, K_CHAIN_BOMB, MAXCARDS, MAXREAD, RD, RuleSet
from shuangkou.core._core cimport Reading, classify_counts, get_rules, make_reading, u8
from shuangkou.core._round cimport (
    SEED_BYTES,
    ROUND_ID_BYTES,
    LEAD_FIRST,
    LEAD_WIND,
    MAXB,
    OVER_ESCAPE,
    OVER_NONE,
    RoundCore,
    ended_at,
)
from shuangkou.core.cards cimport (
    NCODES,
    NFACES,
    NRANKS,
    SEATS,
    code_of,
    code_rank,
    is_card_code,
    is_suited_code,
    rank_copies,
)

import hmac as _hmac
import re as _re
from hashlib import sha256 as _sha256

from shuangkou.core._core import format_cards
from shuangkou.core.cards import rank_name
from shuangkou.core.errors import ShuangkouError
from shuangkou.core.round_ends import ROUND_END_TABLE as _ROUND_END_TABLE
from shuangkou.core.variants import variant_with_rules
from shuangkou.core.scoring import MAX_STAKE as _MAX_STAKE_PY
from shuangkou.core.scoring import MAX_TABLE_FEE as _MAX_TABLE_FEE_PY

#: The serialised form's first bytes.
MAGIC = b"SKR4"     # SKR3 had no round id; SKR2 named the variant by id, had no seed;
                    # SKR1 a standing slot a byte short
#: What a state records for a round its round-end rule ended (round_ends.py, each row's).
_FINISHED = frozenset(row.over for row in _ROUND_END_TABLE)
#: Actions a state may count (the counters are C ints; a real round has a few hundred).
MAX_ACTIONS = 2**31 - 1

cdef enum:
    NHEAD = 21                                # the signed bytes of the head
    HEAD_BYTES = NHEAD + 8 + 8 + 4 + 4
    BODY_BYTES = SEATS * (52 + NFACES) + NCODES

#: Bytes of the head and of the body.
HEAD = HEAD_BYTES
BODY = BODY_BYTES

cdef unsigned long long _MAX_STAKE = _MAX_STAKE_PY
cdef unsigned long long _MAX_TABLE_FEE = _MAX_TABLE_FEE_PY


def slot_sizes(int hand_size):
    """Bytes of the standing-play slot and of each seat's bomb slot for a hand of
    ``hand_size`` cards: a seat never plays more cards than it was dealt (a whole hand can
    be one play: a triple chain, a chain bomb), a bomb has at least three."""
    return 5 + hand_size, 1 + hand_size + 3 * (hand_size // 3)


cdef class Layout:
    """A variant's serialised form: its prefix (magic, rules fingerprint), slot sizes, total."""
    # (fields in _state.pxd) The bomb cache: a stored bomb's bytes (n, index, cards) ->
    # (Reading, cards): bombs pile up as a round goes on, and each would be classified again
    # on every load.

    def __init__(self, bytes fingerprint, int hand_size):
        if len(fingerprint) != 16:
            raise ValueError("a rules fingerprint is 16 bytes")
        self.prefix = MAGIC + fingerprint
        self.standing_slot, self.bomb_slot = slot_sizes(hand_size)
        self.size = (len(self.prefix) + HEAD_BYTES + BODY_BYTES + self.standing_slot
                     + SEATS * self.bomb_slot + SEED_BYTES + ROUND_ID_BYTES)
        self.bombs = {}


#: Layouts kept (one per compiled rule set), and the bytes all their stored bombs may hold
#: together: an entry counts ``BOMB_ENTRY_BYTES`` plus ``BOMB_CARD_BYTES`` per byte of its key
#: (3 + its cards; measured with tracemalloc: 322 bytes for 4 cards, 394 for 12, counted 390
#: and 470; tests/test_round.py checks the estimate).
LAYOUT_CACHE_SIZE = 256
BOMB_CACHE_BYTES = 4 << 20
BOMB_ENTRY_BYTES = 320
BOMB_CARD_BYTES = 10

cdef dict _LAYOUTS = {}         # by compiled rule set (identity): built-ins and cached customs
cdef Py_ssize_t _bomb_bytes = 0   # what the stored bombs of every kept layout cost


cdef Layout layout_of(RuleSet rs):
    global _bomb_bytes
    cdef Layout L = _LAYOUTS.get(rs)
    if L is None:
        L = Layout(rs.variant.fingerprint, rs.variant.hand_size)
        if len(_LAYOUTS) >= LAYOUT_CACHE_SIZE:
            _LAYOUTS.clear()
            _bomb_bytes = 0
        _LAYOUTS[rs] = L
    return L


cdef int _keep_bomb(Layout L, bytes key, tuple known) except -1:
    """Remember a stored bomb's reading; past the byte budget every layout forgets its own."""
    global _bomb_bytes
    cdef Py_ssize_t cost = BOMB_ENTRY_BYTES + BOMB_CARD_BYTES * len(key)
    if _bomb_bytes + cost > BOMB_CACHE_BYTES:
        for other in list(_LAYOUTS.values()):
            (<Layout>other).bombs.clear()
        L.bombs.clear()
        _bomb_bytes = 0
    L.bombs[key] = known
    _bomb_bytes += cost
    return 0


def bomb_cache_bytes():
    """What the stored bombs kept for every layout cost, by the estimate above."""
    return _bomb_bytes


# ----------------------------------------------------------------------------- the seal

#: Fewest bytes a state key may have (HMAC-SHA256 wants at least its 32-byte output).
MIN_KEY_BYTES = 32
_KEY_ID = _re.compile(r"[A-Za-z0-9._-]{1,64}")
cdef int MAC_BYTES = 32


@cython.auto_pickle(False)      # keys are configuration, never data to pickle
cdef class StateKeys:
    """The keys that seal round states (HMAC-SHA256), by key id, and the one that signs.

    Several keys are held so that keys can rotate: states sealed under any of them load,
    new states are sealed under ``signing_id``. Ids are 1–64 characters of
    ``A–Z a–z 0–9 . _ -`` (the names a Kubernetes Secret allows); keys at least
    :data:`MIN_KEY_BYTES` bytes. The keys never appear in a message or a repr.
    """
    cdef dict _keys                 # key id (ASCII bytes) -> its HMAC pads, hashed
    cdef tuple _key                 # the signing key's
    cdef bytes _tail                # the signing key's id and the id's length
    cdef readonly str signing_id

    def __init__(self, keys, str signing_id):
        if not hasattr(keys, "items") or not keys:
            raise ShuangkouError("state keys: give at least one key (key id -> bytes)",
                                 "state_keys")
        self._keys = {}
        for kid, key in keys.items():
            if type(kid) is not str or not _KEY_ID.fullmatch(kid):
                raise ShuangkouError(f"state keys: key id {kid!r} is not 1–64 characters of "
                                     "A–Z a–z 0–9 . _ -", "state_keys")
            if not isinstance(key, (bytes, bytearray)) or len(key) < MIN_KEY_BYTES:
                raise ShuangkouError(f"state keys: key {kid!r} must be at least "
                                     f"{MIN_KEY_BYTES} bytes", "state_keys")
            self._keys[kid.encode("ascii")] = _pads(bytes(key))
        if signing_id not in keys:
            raise ShuangkouError(f"state keys: the signing key id {signing_id!r} is not one "
                                 f"of {sorted(keys)}", "state_key_id")
        self.signing_id = signing_id
        raw = signing_id.encode("ascii")
        self._key = self._keys[raw]
        self._tail = raw + bytes([len(raw)])

    @property
    def ids(self):
        """The key ids held, sorted."""
        return tuple(sorted(k.decode("ascii") for k in self._keys))

    def __repr__(self):
        return f"StateKeys(ids={list(self.ids)!r}, signing_id={self.signing_id!r})"

    cdef bytes seal(self, bytes state):
        cdef bytes signed = state + self._tail
        return signed + _mac(self._key, signed)

    cdef bytes open(self, bytes data):
        """The state inside a sealed ``data``; ShuangkouError (field ``state``) unless it is
        sealed, under a key held, and unaltered."""
        cdef Py_ssize_t n = len(data), k
        kid = _seal_id(data)
        if kid is None:
            raise _bad("it is not signed; this server takes only the states it signed")
        key = self._keys.get(kid)
        if key is None:
            raise _bad(f"it is signed with key id {kid.decode('ascii')!r}, which this server "
                       "does not hold")
        if not _hmac.compare_digest(_mac(key, data[:n - MAC_BYTES]), data[n - MAC_BYTES:]):
            raise _bad(f"its signature does not match: the state was altered (or signed with "
                       f"another key named {kid.decode('ascii')!r})")
        k = n - MAC_BYTES - 1 - len(kid)
        return data[:k]


cdef tuple _pads(bytes key):
    """HMAC-SHA256's inner and outer hashes with the key's pads already absorbed (RFC 2104):
    a MAC is then two hash copies and two updates, with no keyed set-up per state."""
    if len(key) > 64:
        key = _sha256(key).digest()
    key = key.ljust(64, b"\0")
    return (_sha256(bytes([b ^ 0x36 for b in key])), _sha256(bytes([b ^ 0x5C for b in key])))


cdef bytes _mac(tuple pads, bytes data):
    inner = (<object>pads[0]).copy()
    inner.update(data)
    outer = (<object>pads[1]).copy()
    outer.update(inner.digest())
    return outer.digest()


cdef object _seal_id(bytes data):
    """The key id a sealed state names, or None when its last bytes are no seal."""
    cdef Py_ssize_t n = len(data)
    cdef int m
    if n < MAC_BYTES + 2:
        return None
    m = (<const unsigned char*>PyBytes_AS_STRING(data))[n - MAC_BYTES - 1]
    if not 1 <= m <= 64 or n < MAC_BYTES + 1 + m:
        return None
    kid = data[n - MAC_BYTES - 1 - m:n - MAC_BYTES - 1]
    return kid if _KEY_ID.fullmatch(kid.decode("latin-1")) else None


def layout(variant):
    """The :class:`Layout` of a variant id or Variant's serialised rounds."""
    return layout_of(get_rules(variant))


# ----------------------------------------------------------------------------- writing

def pack(RoundCore r, StateKeys keys=None):
    """The round's state in the serialised form (the same size for every state of a
    variant), sealed under ``keys``' signing key when keys are given."""
    cdef Layout L = layout_of(r.rs)
    cdef bytes out = PyBytes_FromStringAndSize(NULL, L.size)
    cdef unsigned char* b = <unsigned char*>PyBytes_AS_STRING(out)
    memset(b, 0, L.size)
    pack_into(r, b, L)
    return out if keys is None else keys.seal(out)


cdef int pack_into(RoundCore r, unsigned char* b, Layout L) except -1:
    """Write the state's ``L.size`` bytes at ``b`` (zeroed by the caller)."""
    cdef bytes prefix = L.prefix
    cdef Py_ssize_t n0 = len(prefix), k, at, end
    cdef int s, i, j, n, idx, c
    cdef unsigned long long q
    cdef unsigned int w
    cdef int head[NHEAD]
    memcpy(b, PyBytes_AS_STRING(prefix), n0)
    k = n0
    head[0], head[1], head[2], head[3], head[4] = r.pos.turn, r.cleader, r.pos.last, r.pos.prev, r.pos.npasses
    head[5], head[6], head[7] = r.pos.over_kind, r.pos.over_seat, r.cescaper
    head[8], head[9], head[10], head[11] = r.pos.lead_why, r.pos.lead_a, r.pos.lead_b, r.pos.nfin
    for i in range(SEATS):
        head[12 + i] = r.pos.fin[i] if i < r.pos.nfin else -1
        head[16 + i] = <int>r.hand_at[i]
    head[20] = 1 if r.partial_deal else 0
    for i in range(NHEAD):
        b[k + i] = <unsigned char><signed char>head[i]
    k += NHEAD
    for q in (r.stake, r.table_fee):
        for i in range(8):
            b[k] = (q >> (8 * i)) & 0xff
            k += 1
    for w in (<unsigned int>r.pos.actions, <unsigned int>r.pos.over_action):
        for i in range(4):
            b[k] = (w >> (8 * i)) & 0xff
            k += 1
    for s in range(SEATS):                  # the body
        for c in range(NRANKS):
            for j in range(4):
                b[k] = r.faces[s][code_of(c, j)]
                k += 1
        for i in range(NFACES):
            b[k] = r.pos.nranks[s][i]
            k += 1
    for c in range(NCODES):
        b[k] = r.nplayed[c]
        k += 1
    if r.pos.has_st:                            # [1, seat, index (2), n, cards]
        if 5 + r.pos.st_n > L.standing_slot:
            raise AssertionError("round state slots overflowed")
        b[k], b[k + 1], b[k + 4] = 1, r.pos.st_seat, r.pos.st_n
        b[k + 2], b[k + 3] = r.pos.st_index & 0xff, (r.pos.st_index >> 8) & 0xff
        for i in range(r.pos.st_n):
            b[k + 5 + i] = r.st_cards[i]
    k += L.standing_slot
    for s in range(SEATS):                  # [count] then per bomb [n, index (2), cards]
        codes = <list>r.bomb_codes[s]
        index = <list>r.bomb_index[s]
        n = len(codes)
        at, end = k + 1, k + L.bomb_slot
        if n > 255:
            raise AssertionError("round state slots overflowed")
        b[k] = n
        for j in range(n):
            cards = codes[j]
            idx = index[j]
            if at + 3 + len(cards) > end:
                raise AssertionError("round state slots overflowed")
            b[at] = len(cards)
            b[at + 1] = idx & 0xff
            b[at + 2] = (idx >> 8) & 0xff
            at += 3
            for c in cards:
                b[at] = c
                at += 1
        k += L.bomb_slot
    memcpy(b + k, PyBytes_AS_STRING(r.seed_sha256), SEED_BYTES)
    memcpy(b + k + SEED_BYTES, PyBytes_AS_STRING(r.round_id), ROUND_ID_BYTES)
    return 0


# ----------------------------------------------------------------------------- reading

cdef object _bad(str why):
    return ShuangkouError(f"round state: {why}", "state")


def _text(codes):
    return " ".join(format_cards(list(codes)))


def load(RoundCore r, variant, data, StateKeys keys=None):
    """Load the state ``data`` into ``r`` (a new, empty round object) if the rules can reach
    it; else raise ShuangkouError (field ``state``) saying what is wrong. With ``keys`` the
    state must be sealed under one of them and unaltered (checked first). The checks run in
    a fixed order (the module doc, tests/state_reference.py), so each forged state is
    refused with one sentence."""
    cdef RuleSet rs = get_rules(variant)
    cdef Layout L = layout_of(rs)
    cdef bytes raw
    cdef const unsigned char* d
    cdef Py_ssize_t size
    cdef Py_ssize_t n0 = len(L.prefix), k, p, sp, bp
    cdef signed char h[NHEAD]
    cdef unsigned long long stake = 0, fee = 0
    cdef unsigned int actions = 0, over_action = 0
    cdef int i, s, c, j, nb, at, n, idx, nfin, mask, end_at, over, turn, seat, nr, holding
    cdef int why, a, bb, fault, what = 0
    cdef bint found
    cdef Reading x
    cdef int fin[SEATS]
    cdef int played[NFACES]
    cdef int used[NFACES]
    cdef u8 counts[NFACES]
    cdef RD buf[MAXREAD]
    if r.rs is not None:
        raise TypeError("load reads into a new round object")
    raw = data if type(data) is bytes else bytes(data)
    if keys is not None:
        raw = keys.open(raw)
    elif len(raw) > L.size:
        _signed_without_keys(raw, L)
    d = <const unsigned char*>PyBytes_AS_STRING(raw)
    size = len(raw)
    v = rs.variant
    # -- the prefix and the head
    if size != L.size or size < 4 or memcmp(d, <const char*>MAGIC, 4) != 0:
        raise _bad(f"{size} bytes is not a serialised {v.id} round ({L.size} bytes "
                   f"starting {MAGIC!r})")
    if memcmp(d, PyBytes_AS_STRING(L.prefix), n0) != 0:
        raise _bad(_other_rules(raw[4:n0], v))
    k = n0
    for i in range(NHEAD):
        h[i] = <signed char>d[k + i]
    k += NHEAD
    for i in range(8):
        stake |= (<unsigned long long>d[k + i]) << (8 * i)
        fee |= (<unsigned long long>d[k + 8 + i]) << (8 * i)
    k += 16
    for i in range(4):
        actions |= (<unsigned int>d[k + i]) << (8 * i)
        over_action |= (<unsigned int>d[k + 4 + i]) << (8 * i)
    k += 8
    nfin = h[11]
    if not 0 <= nfin <= SEATS:
        raise _bad(f"{nfin} finishers")
    # -- the slots' form
    sp = k + BODY_BYTES
    _check_slots(d, sp, L)
    # -- the cards: against the deck
    r.bind(rs)
    r.seed_sha256 = raw[L.size - ROUND_ID_BYTES - SEED_BYTES:L.size - ROUND_ID_BYTES]
    r.round_id = raw[L.size - ROUND_ID_BYTES:L.size]
    _read_body(r, &d[k])
    fault = _deck_fault(r, v.decks, v.lowest_rank, v.joker_copies, h[20] != 0, &what)
    if fault:
        raise _bad(_deck_sentence(r, fault, what, v.decks, v.lowest_rank, v.joker_copies))
    # -- seats, finishers, how the round stands
    mask = 0
    for i in range(SEATS):
        if not 0 <= h[16 + i] < SEATS or mask & (1 << h[16 + i]):
            raise _bad(f"hand_at {[h[16 + j] for j in range(SEATS)]} is not a seating of the "
                       "dealt hands")
        mask |= 1 << h[16 + i]
    if not 0 <= h[20] <= 1:
        raise _bad("partial_deal must be 0 or 1")
    if not 0 <= h[1] < SEATS:
        raise _bad(f"leader {h[1]} is not a seat")
    if not 1 <= stake <= _MAX_STAKE or fee > _MAX_TABLE_FEE:
        raise _bad("stake or table fee out of range")
    mask = 0
    for i in range(SEATS):
        if i < nfin and (not 0 <= h[12 + i] < SEATS or mask & (1 << h[12 + i])) or \
                i >= nfin and h[12 + i] != -1:
            raise _bad(f"finishing order {[h[12 + j] for j in range(nfin)]} is not distinct "
                       "seats")
        if i < nfin:
            mask |= 1 << h[12 + i]
            fin[i] = h[12 + i]
    holding = 0
    for s in range(SEATS):
        if (r.pos.nleft[s] == 0) != ((mask >> s) & 1):
            raise _bad(f"the seats without cards {[t for t in range(SEATS) if not r.pos.nleft[t]]} "
                       f"are not the finishers {[fin[j] for j in range(nfin)]}")
        holding += r.pos.nleft[s] != 0
    for s in range(SEATS):
        if r.pos.nleft[s] > v.hand_size:
            raise _bad("a seat holds more cards than a hand")
    end_at = ended_at(&r.pos.end, fin, nfin)
    over, turn = h[5], h[0]
    if over == OVER_NONE:
        if end_at >= 0:
            raise _bad(f"the finishing order {[fin[j] for j in range(nfin)]} ends the round "
                       "but it goes on")
        if not 0 <= turn < SEATS or not r.pos.nleft[turn]:
            raise _bad(f"seat {turn} cannot be the seat to act")
        if h[6] != 0 or h[7] != -1 or over_action != 0:
            raise _bad("a round in progress with an end recorded")
    elif over in _FINISHED:
        if over != r.pos.end.over or nfin == 0 \
                or end_at != nfin - 1 or h[6] != fin[nfin - 1] or h[7] != -1:
            raise _bad(f"the round cannot have ended at finishing order "
                       f"{[fin[j] for j in range(nfin)]}")
    elif over == OVER_ESCAPE:
        seat = h[7]
        if end_at >= 0 or not 0 <= seat < SEATS or not r.pos.nleft[seat] or h[6] != seat \
                or not r.escape_ok:
            raise _bad("an escape the round cannot have had")
    else:
        raise _bad(f"unknown round end {over}")
    if actions > <unsigned int>MAX_ACTIONS:
        raise _bad(f"{actions:,} actions is not a round's count")
    if over and not over_action < actions:
        raise _bad("the round ended after its last action")
    why, a, bb = h[8], h[9], h[10]
    if not 0 <= why <= 2 or not 0 <= a < SEATS or (why == LEAD_WIND) != (0 <= bb < SEATS) or \
            (why != LEAD_WIND and bb != -1):
        raise _bad("malformed lead")
    if d[sp] == 0:
        if h[4] != 0:
            raise _bad("passes recorded while a seat leads")
        if not over and a != turn:
            raise _bad(f"seat {turn} is to lead but seat {a} is recorded as leading")
    else:
        seat = d[sp + 1]
        if not seat < SEATS or h[2] != seat or not 0 <= h[3] < SEATS:
            raise _bad("the standing play's seat is inconsistent")
        if not over and not h[4] < holding - (1 if r.pos.nleft[seat] else 0):
            raise _bad(f"{h[4]} passes on a trick that has ended")
        if not over and turn == seat and r.pos.nleft[seat]:
            raise _bad("the seat to act made the standing play")
    if why == LEAD_FIRST and a != h[1]:
        raise _bad("the first trick is led by someone other than the leader")
    # -- the stored plays, read again: the standing play, then each seat's bombs
    r.pos.has_st = 0
    r.st_reading = None
    if d[sp] == 1:
        n, idx = d[sp + 4], d[sp + 2] | (d[sp + 3] << 8)
        r.pos.st = _reading_at(rs, &d[sp + 5], n, idx, buf)
        r.pos.has_st, r.pos.st_seat, r.pos.st_index, r.pos.st_n = 1, d[sp + 1], idx, n
        for i in range(n):
            r.st_cards[i] = d[sp + 5 + i]
    memset(used, 0, sizeof(used))
    bp = sp + L.standing_slot
    for s in range(SEATS):
        nb, at = d[bp], 1
        for j in range(nb):
            n = d[bp + at]
            idx = d[bp + at + 1] | (d[bp + at + 2] << 8)
            key = PyBytes_FromStringAndSize(<const char*>&d[bp + at], 3 + n)
            known = L.bombs.get(key)
            if known is None:
                rd = _reading_at(rs, &d[bp + at + 3], n, idx, buf)
                if rd.kind < K_BOMB:
                    raise ShuangkouError(f"bombs[{s}]: {_text(key[3:])} as stored is no bomb",
                                         "state")
                known = (make_reading(&rd, rs), tuple(key[3:]))
                _keep_bomb(L, key, known)
            for i in range(n):
                used[code_rank(d[bp + at + 3 + i])] += 1
            (<list>r.bomb_readings[s]).append((<tuple>known)[0])
            (<list>r.bomb_codes[s]).append((<tuple>known)[1])
            (<list>r.bomb_index[s]).append(idx)
            if j < MAXB:
                x = <Reading>(<tuple>known)[0]
                r.pos.bombs.star[s][j] = x.rd.star
                r.pos.bombs.chain[s][j] = x.rd.kind == K_CHAIN_BOMB
                r.pos.bombs.n[s] = j + 1
            at += 3 + n
        bp += L.bomb_slot
    # -- the stored plays are made of played cards; a standing bomb is among the bombs
    memset(played, 0, sizeof(played))
    for c in range(1, NCODES):
        played[code_rank(c)] += r.nplayed[c]
    for i in range(NFACES):
        if used[i] > played[i]:
            raise _bad("bombs hold cards that were never played")
    if r.pos.has_st:
        memset(counts, 0, NFACES)
        for i in range(r.pos.st_n):
            counts[code_rank(r.st_cards[i])] += 1
        for i in range(NFACES):
            if counts[i] > played[i]:
                raise _bad("the standing play holds cards that were never played")
        if r.pos.st.kind >= K_BOMB:
            found = False
            bp = sp + L.standing_slot + r.pos.st_seat * L.bomb_slot
            at = 1
            for j in range(d[bp]):
                n = d[bp + at]
                if n == r.pos.st_n and (d[bp + at + 1] | (d[bp + at + 2] << 8)) == r.pos.st_index \
                        and _same_ranks(&d[bp + at + 3], r.st_cards, n):
                    found = True
                    break
                at += 3 + n
            if not found:
                raise _bad("a standing bomb missing from its seat's bombs")
    # -- accepted: the head's fields
    r.pos.nfin = nfin
    for i in range(nfin):
        r.pos.fin[i] = fin[i]
    r.pos.turn, r.cleader, r.pos.last, r.pos.prev, r.pos.npasses = h[0], h[1], h[2], h[3], h[4]
    r.pos.over_kind, r.pos.over_seat, r.pos.over_action, r.cescaper = over, h[6], over_action, h[7]
    r.pos.lead_why, r.pos.lead_a, r.pos.lead_b = why, a, bb
    r.pos.actions = actions
    r.stake, r.table_fee = stake, fee
    r.hand_at = (h[16], h[17], h[18], h[19])
    r.partial_deal = h[20]


cdef int _signed_without_keys(bytes data, Layout L) except -1:
    """Refuse a sealed state when no keys are given, naming why (not only its size)."""
    kid = _seal_id(data)
    if kid is not None and len(data) == L.size + MAC_BYTES + 1 + len(kid):
        raise _bad(f"it is signed (key id {kid.decode('ascii')!r}), and this server holds "
                   "no state keys to check it")
    return 0


cdef str _other_rules(bytes fingerprint, v):
    """Why a state of other rules is refused: which known rule set it is a round of."""
    known = variant_with_rules(fingerprint)
    if known is not None:
        return f"it is a round of {known.id}, not {v.id}"
    return (f"it is a round of other rules than {v.id}'s (rules fingerprint "
            f"{fingerprint.hex()[:12]}…)")


cdef int _check_slots(const unsigned char* d, Py_ssize_t sp, Layout L) except -1:
    """The form of the standing slot and of the four bomb slots (their sizes, no stray
    bytes); what they hold is read later."""
    cdef Py_ssize_t p, bp
    cdef int s, j, n, at
    if d[sp] == 0:
        for p in range(sp, sp + L.standing_slot):
            if d[p]:
                raise _bad("bytes in an empty standing slot")
    elif d[sp] == 1:
        n = d[sp + 4]
        if not 0 < n <= L.standing_slot - 5:
            raise _bad("a malformed standing play")
        for p in range(sp + 5 + n, sp + L.standing_slot):
            if d[p]:
                raise _bad("a malformed standing play")
    else:
        raise _bad("a malformed standing play")
    bp = sp + L.standing_slot
    for s in range(SEATS):
        at = 1
        for j in range(d[bp]):
            if at + 3 > L.bomb_slot:
                raise _bad(f"seat {s}'s bombs overflow their slot")
            n = d[bp + at]
            if not n or at + 3 + n > L.bomb_slot:
                raise _bad(f"seat {s}'s bombs are malformed")
            at += 3 + n
        for p in range(bp + at, bp + L.bomb_slot):
            if d[p]:
                raise _bad(f"bytes after seat {s}'s bombs")
        bp += L.bomb_slot
    return 0


cdef void _read_body(RoundCore r, const unsigned char* b) noexcept:
    cdef int s, c, i
    memset(r.faces, 0, sizeof(r.faces))
    r.pos.holding = 0
    for s in range(SEATS):
        for c in range(NRANKS):
            for i in range(4):
                r.faces[s][code_of(c, i)] = b[0]
                b += 1
        r.pos.nleft[s] = 0
        for i in range(NFACES):
            r.pos.nranks[s][i] = b[0]
            r.pos.nleft[s] += b[0]
            b += 1
        if r.pos.nleft[s]:
            r.pos.holding += 1
    for c in range(NCODES):
        r.nplayed[c] = b[0]
        b += 1


cdef int _deck_fault(RoundCore r, int decks, int lowest, int jokers, bint partial,
                     int* what) noexcept:
    """0 when the held and played cards can come from the deck; else 1 (played codes that
    are no card), 2 (rank position ``what[0]`` over or short of the deck) or 3 (suited face
    ``what[0]`` held and played more than ``decks`` times)."""
    cdef int total[NFACES]
    cdef int s, c, i, held
    for c in range(NCODES):
        if r.nplayed[c] and not is_card_code(c):
            return 1
    for i in range(NFACES):
        total[i] = 0
        for s in range(SEATS):
            total[i] += r.pos.nranks[s][i]
    for c in range(1, NCODES):
        total[code_rank(c)] += r.nplayed[c]
    for i in range(NFACES):
        if total[i] > rank_copies(i, decks, lowest, jokers) or \
                (not partial and total[i] != rank_copies(i, decks, lowest, jokers)):
            what[0] = i
            return 2
    for c in range(NCODES):
        if is_suited_code(c):
            held = r.nplayed[c]
            for s in range(SEATS):
                held += r.faces[s][c]
            if held > decks:
                what[0] = c
                return 3
    return 0


cdef str _deck_sentence(RoundCore r, int fault, int what, int decks, int lowest, int jokers):
    cdef int s, c, n = 0
    if fault == 1:
        return "played cards include codes that are no card"
    if fault == 2:
        for s in range(SEATS):
            n += r.pos.nranks[s][what]
        for c in range(1, NCODES):
            if code_rank(c) == what:
                n += r.nplayed[c]
        return (f"{n} cards of rank {rank_name(what)} held and played; the deck has "
                f"{rank_copies(what, decks, lowest, jokers)}")
    n = r.nplayed[what]
    for s in range(SEATS):
        n += r.faces[s][what]
    return f"{n} copies of {format_cards([what])[0]} held and played; the deck has {decks}"


cdef RD _reading_at(RuleSet rs, const unsigned char* cards, int n, int idx,
                    RD* buf) except *:
    """Reading number ``idx`` (rule-2 order) of a stored play; ShuangkouError if there is none."""
    cdef u8 counts[NFACES]
    cdef int i, nr
    if not 0 < n <= MAXCARDS:
        raise ShuangkouError("a stored play holds 1–64 cards", "state")
    memset(counts, 0, NFACES)
    for i in range(n):
        if not is_card_code(cards[i]):
            raise ShuangkouError(f"invalid card code {cards[i]} in a stored play", "state")
        counts[code_rank(cards[i])] += 1
    nr = classify_counts(&rs.r, counts, buf, MAXREAD)
    if not 0 <= idx < nr:
        raise ShuangkouError(f"{_text([cards[i] for i in range(n)])} has no reading #{idx} "
                             f"in {rs.id}", "state")
    return buf[idx]


cdef inline bint _same_ranks(const unsigned char* x, const u8* y, int n) noexcept:
    """Whether two plays of ``n`` cards hold the same cards per rank position."""
    cdef int cnt[NFACES]
    cdef int i
    memset(cnt, 0, sizeof(cnt))
    for i in range(n):
        cnt[code_rank(x[i])] += 1
        cnt[code_rank(y[i])] -= 1
    for i in range(NFACES):
        if cnt[i]:
            return False
    return True
