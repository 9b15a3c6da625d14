# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Replay documents read in compiled code (docs/replays.md): the dealt hands, and the actions
either folded over a round as they are read (:func:`fold`, the batch scorer's path) or read
into typed :class:`~shuangkou.core.round_records.Action` records (:func:`read_actions`).

Both readers share the cards (the core's one tokenizer, ``token_code``, with
``parse_cards`` for everything else), declarations (:func:`~shuangkou.core.declaration.
declaration_of`) and every sentence, so a typed replay and a document fail alike; the rules
are the round's own (``RoundCore.do_play`` …), so a replay and a live round fail alike.
core_ext/replay.py is the Python face.
"""

from cpython.dict cimport PyDict_Next
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_1BYTE_KIND, PyUnicode_DATA, PyUnicode_GET_LENGTH, PyUnicode_KIND
from libc.string cimport memcmp, memset

from shuangkou.core._core cimport MAXCARDS, RD, Decl, _parse_decl, token_code, u8
from shuangkou.core._round cimport RoundCore
from shuangkou.core.cards cimport NCODES, NFACES, SEATS, deck_copies, is_seat

from shuangkou.core._core import format_cards, parse_cards
from shuangkou.core.cards import check_seat
from shuangkou.core.declaration import declaration_of
from shuangkou.core.errors import ReplayError, ShuangkouError
from shuangkou.core.round_records import Action

#: The fields an action may have.
ACTION_FIELDS = frozenset({"seat", "play", "pass", "escape", "declare", "declare_top",
                           "declare_star", "declare_wilds"})

_NOT_AN_OBJECT = "an action must be an object such as {\"seat\": 0, \"pass\": true}"
_ONE_KIND = "an action is one of play, pass or escape"
_EMPTY_PLAY = "a play needs at least one card (use {\"pass\": true} to pass)"
_NO_KIND = "an action needs \"play\": [cards], \"pass\": true or \"escape\": true"

#: The pass and escape of each seat: records are frozen, so read replays share them.
_PASSES = tuple(Action(s, "pass") for s in range(SEATS))
_ESCAPES = tuple(Action(s, "escape") for s in range(SEATS))

cdef enum:
    KEY_OTHER = 0
    KEY_SEAT = 1
    KEY_PLAY = 2
    KEY_PASS = 3
    KEY_ESCAPE = 4


cdef inline int _action_key(object k) noexcept:
    """Which of an action's usual fields the key names exactly (KEY_OTHER for any other)."""
    cdef Py_ssize_t n
    cdef const char* d
    if type(k) is not str or PyUnicode_KIND(k) != PyUnicode_1BYTE_KIND:
        return KEY_OTHER
    n = PyUnicode_GET_LENGTH(k)
    d = <const char*>PyUnicode_DATA(k)
    if n == 4:
        if memcmp(d, b"seat", 4) == 0:
            return KEY_SEAT
        if memcmp(d, b"play", 4) == 0:
            return KEY_PLAY
        if memcmp(d, b"pass", 4) == 0:
            return KEY_PASS
    elif n == 6 and memcmp(d, b"escape", 6) == 0:
        return KEY_ESCAPE
    return KEY_OTHER


def _text(codes):
    return " ".join(format_cards(list(codes)))


cdef int _seat_of(object value, int i) except -1:
    if is_seat(value):
        return value
    try:
        check_seat(value)          # raises: the sentence has one home (cards.py)
    except ShuangkouError as exc:
        raise ReplayError(str(exc), i) from None
    return -1


cdef int _check_fields(dict a, int i) except -1:
    if not a.keys() <= ACTION_FIELDS:
        raise ReplayError(f"unknown action field {sorted(set(a) - ACTION_FIELDS)[0]!r}", i)
    return 0


cdef int _play_codes(object raw, int i, int* codes) except -1:
    """The cards of a play into ``codes``; their count. One-card tokens are read by the
    core's tokenizer; anything else (text, codes, runs) by ``parse_cards``."""
    cdef int j, n = -1
    if type(raw) is list and len(<list>raw) <= MAXCARDS:
        n = len(<list>raw)
        for j in range(n):
            codes[j] = token_code((<list>raw)[j])
            if not codes[j]:
                n = -1
                break
    if n < 0:
        try:
            lst = parse_cards(raw)
        except ShuangkouError as exc:
            raise ReplayError(f"play: {exc}", i) from None
        except TypeError:
            raise ReplayError(f"play must be a list of cards or a text; got {raw!r}",
                              i) from None
        if len(lst) > MAXCARDS:
            raise ReplayError(f"play: too many cards (at most {MAXCARDS})", i)
        n = len(lst)
        for j in range(n):
            codes[j] = lst[j]
    if n == 0:
        raise ReplayError(_EMPTY_PLAY, i)
    return n


cdef object _declared(dict a, int i):
    try:
        return declaration_of(a)
    except ShuangkouError as exc:
        raise ReplayError(str(exc), i) from None


# ----------------------------------------------------------------------------- the deal

def deal_codes(raw, int hand_size, int decks, int lowest, int jokers):
    """The fast path of reading a replay's dealt hands: 4 lists of one-card tokens that hold
    ``hand_size`` cards each and together exactly the deck -> their codes; anything else ->
    None (the caller parses and checks in full, for its error sentences)."""
    cdef int counts[NCODES]
    cdef int s, j, c
    if type(raw) is not list or len(<list>raw) != SEATS:
        return None
    memset(counts, 0, sizeof(counts))
    out = []
    for s in range(SEATS):
        hand = (<list>raw)[s]
        if type(hand) is not list or len(<list>hand) != hand_size:
            return None
        codes = [0] * hand_size
        for j in range(hand_size):
            c = token_code((<list>hand)[j])
            if not c:
                return None
            counts[c] += 1
            codes[j] = c
        out.append(codes)
    for c in range(1, NCODES):
        if counts[c] != deck_copies(c, decks, lowest, jokers):
            return None
    return out


# ----------------------------------------------------------------------------- typed actions

def read_actions(list actions):
    """The actions of a document as typed :class:`Action` records, checked for form (seats,
    fields, cards, declarations); the rules are checked when they are applied."""
    return tuple([_read_action(i, actions[i]) for i in range(len(actions))])


cdef object _read_action(int i, object a):
    cdef int codes[MAXCARDS]
    cdef int n, seat
    if type(a) is not dict:
        raise ReplayError(_NOT_AN_OBJECT, i)
    seat = _seat_of((<dict>a).get("seat"), i)
    _check_fields(a, i)
    if "play" in a:
        if "pass" in a or "escape" in a:
            raise ReplayError(_ONE_KIND, i)
        n = _play_codes((<dict>a)["play"], i, codes)
        return Action(seat, "play", tuple([codes[j] for j in range(n)]), _declared(a, i))
    if (<dict>a).get("pass") is True:
        if len(<dict>a) > 2:
            raise ReplayError("a pass takes no other field", i)
        return _PASSES[seat]
    if (<dict>a).get("escape") is True:
        if len(<dict>a) > 2:
            raise ReplayError("an escape takes no other field", i)
        return _ESCAPES[seat]
    raise ReplayError(_NO_KIND, i)


# ----------------------------------------------------------------------------- folding

def fold(RoundCore r, list actions):
    """Apply a document's actions to ``r`` as they are read; ReplayError at the first that
    cannot happen (form or rules, in the order replay validation has always checked them,
    so each corrupt replay keeps its error and index: docs/replays.md), or when the round
    is not over after the last."""
    cdef int i, j, n, seat
    cdef int codes[MAXCARDS]
    cdef u8 fc[NCODES]
    cdef u8 rk[NFACES]
    cdef u8 counts[NFACES]
    cdef RD rd
    cdef Decl decl
    cdef Py_ssize_t count = len(actions)
    cdef Py_ssize_t pos
    cdef PyObject* k
    cdef PyObject* v
    cdef int has_play, is_pass, is_escape, field
    cdef bint fast, extra
    for i in range(count):
        a = actions[i]
        if type(a) is not dict:
            raise ReplayError(_NOT_AN_OBJECT, i)
        # the fields: one scan of a small action's items (no hashing), else lookups
        seat_o = play_o = None
        has_play = is_pass = is_escape = 0
        fast = len(<dict>a) <= 2
        if fast:
            pos = 0
            while PyDict_Next(a, &pos, &k, &v):
                field = _action_key(<object>k)
                if field == KEY_SEAT:
                    seat_o = <object>v
                elif field == KEY_PLAY:
                    has_play, play_o = 1, <object>v
                elif field == KEY_PASS:
                    is_pass = <object>v is True
                elif field == KEY_ESCAPE:
                    is_escape = <object>v is True
                else:
                    fast = 0
                    break
        if not fast:
            seat_o = (<dict>a).get("seat")
            has_play = "play" in a
            play_o = (<dict>a).get("play")
            is_pass = (<dict>a).get("pass", None) is True
            is_escape = (<dict>a).get("escape", None) is True
        seat = _seat_of(seat_o, i)
        extra = len(<dict>a) > 2
        if extra:
            _check_fields(a, i)
        try:
            if has_play:
                r.turn_check(seat)
                if extra and ("pass" in a or "escape" in a):
                    raise ReplayError(_ONE_KIND, i)
                n = _play_codes(play_o, i, codes)
                decl.kind = decl.top = decl.star = decl.nwild = -1
                if extra:
                    declared = _declared(a, i)
                    if declared is not None:
                        try:
                            _parse_decl(declared, None, &decl)
                        except ShuangkouError as exc:
                            r.take(seat, codes, n, fc, rk, counts)      # held first
                            raise ReplayError(f"seat {seat} plays "
                                              f"{_text([codes[j] for j in range(n)])}: {exc}", i)
                r.do_play(seat, codes, n, &decl, 1, &rd)
            elif is_pass:
                r.turn_check(seat)
                if extra:           # beyond seat and pass: a declaration is never ignored
                    raise ReplayError("a pass takes no other field", i)
                r.do_pass(seat)
            elif is_escape:
                if extra:
                    raise ReplayError("an escape takes no other field", i)
                r.do_escape(seat)
            else:
                raise ReplayError(_NO_KIND, i)
        except ReplayError:
            raise
        except ShuangkouError as exc:
            raise ReplayError(str(exc), i) from None
    if not r.is_over:
        raise ReplayError(f"the replay ends before the round is over: seat {r.pos.turn} is to act "
                          f"({r._why_turn()})", None, "actions")
