# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""RoundService's replies written in compiled code: a ``RoundState`` (the state's bytes and
the readable view) and an ``ApplyActionResponse``'s state and action record, straight from
a round's public view (RoundCore.view() and its codes, core_ext/_round.pxd) — the fast path of service/api/rounds.py, which builds the same replies
with the generated classes for everything else.

The proto stays the one source: every field's key is read from the generated descriptors
when this module loads and checked to be what the writer encodes (service/api/_protobuf.pxd).
tests/test_round_service.py checks that every reply of whole rounds equals the message built
field by field. Why it exists: built with the generated classes, the reply cost 15–18 % more
instructions per ApplyAction than this (docs/history/benchmarks-notebook.md "ApplyAction: the reply writer").
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.string cimport memcmp, memcpy

from shuangkou.core._round cimport ROUND_ID_BYTES, SEED_BYTES, Position, RoundCore
from shuangkou.core._state cimport Layout, layout_of, pack_into
from shuangkou.core.cards cimport SEATS

from shuangkou.service.api._protobuf cimport (
    bytes_field, check_written, close_field, field_key, scalar, varint, vlen)

from shuangkou.v1 import cards_pb2, rounds_pb2

# ----------------------------------------------------------------------------- the keys

cdef struct Keys:
    int data, view                                  # RoundState
    int turn, hand_sizes, hands, standing, passes, finish_order, over, hand_at, actions, seed
    int round_id
    int cards                                       # Cards
    int standing_seat, standing_cards, standing_reading               # StandingPlay
    int r_seat, r_type, r_cards, r_reading, r_trick, r_finished, r_wind, r_next, r_over
    int a_state, a_record                           # ApplyActionResponse

cdef Keys K
K.data = field_key(rounds_pb2.RoundState, "data", "message")
K.view = field_key(rounds_pb2.RoundState, "view", "message")
_V = rounds_pb2.RoundView
K.turn = field_key(_V, "turn", "scalar")
K.hand_sizes = field_key(_V, "hand_sizes", "packed")
K.hands = field_key(_V, "hands", "message")
K.standing = field_key(_V, "standing", "message")
K.passes = field_key(_V, "passes", "scalar")
K.finish_order = field_key(_V, "finish_order", "packed")
K.over = field_key(_V, "over", "scalar")
K.hand_at = field_key(_V, "hand_at", "packed")
K.actions = field_key(_V, "actions_applied", "scalar")
K.seed = field_key(_V, "seed_sha256", "message")
K.round_id = field_key(_V, "round_id", "message")
K.cards = field_key(cards_pb2.Cards, "cards", "packed")
K.standing_seat = field_key(rounds_pb2.StandingPlay, "seat", "scalar")
K.standing_cards = field_key(rounds_pb2.StandingPlay, "cards", "packed")
K.standing_reading = field_key(rounds_pb2.StandingPlay, "reading", "message")
_R = rounds_pb2.ActionRecord
K.r_seat = field_key(_R, "seat", "scalar")
K.r_type = field_key(_R, "type", "scalar")
K.r_cards = field_key(_R, "cards", "packed")
K.r_reading = field_key(_R, "reading", "message")
K.r_trick = field_key(_R, "trick_won_by", "scalar")
K.r_finished = field_key(_R, "finished", "scalar")
K.r_wind = field_key(_R, "wind_to", "scalar")
K.r_next = field_key(_R, "next_turn", "scalar")
K.r_over = field_key(_R, "round_over", "scalar")
K.a_state = field_key(rounds_pb2.ApplyActionResponse, "state", "message")
K.a_record = field_key(rounds_pb2.ApplyActionResponse, "record", "message")
# The fields the writer leaves to the caller: a message gaining a field must be noticed.
check_written({rounds_pb2.RoundState: {"data", "view"},
               _V: {"turn", "hand_sizes", "hands", "standing", "passes", "finish_order",
                    "over", "hand_at", "actions_applied", "seed_sha256", "round_id"},
               rounds_pb2.StandingPlay: {"seat", "cards", "reading"},
               _R: {"seat", "type", "cards", "reading", "trick_won_by", "finished", "wind_to",
                    "next_turn", "round_over"}})


# ----------------------------------------------------------------------------- the view

cdef unsigned char _NO_SEED[SEED_BYTES]     # zero-initialised: a deal of given hands

cdef Py_ssize_t _view_bound(RoundCore r, Py_ssize_t nread) noexcept:
    cdef const Position* p = r.view()
    cdef Py_ssize_t total = 0
    cdef int s
    for s in range(SEATS):
        total += p.nleft[s]
    # + the seed commitment and the round id
    return 128 + 12 * SEATS + 2 * total + 2 * p.st_n + nread + 34 + 18


cdef Py_ssize_t _view_into(RoundCore r, unsigned char* b, const unsigned char* reading,
                           Py_ssize_t nread) noexcept:
    """Write the RoundView's fields at ``b``; their length. ``reading``: the standing play's
    Reading message (``nread`` bytes), None when a seat leads."""
    cdef const Position* p = r.view()
    cdef Py_ssize_t k = 0, inner
    cdef int s, n, m, i
    cdef const unsigned char* seed
    if not p.over_kind:
        k = scalar(b, k, K.turn, p.turn)
    m = 0
    for s in range(SEATS):
        m += vlen(p.nleft[s])
    b[k] = K.hand_sizes
    k = varint(b, k + 1, m)
    for s in range(SEATS):
        k = varint(b, k, p.nleft[s])
    for s in range(SEATS):                    # one Cards each, its codes packed
        n = p.nleft[s]
        b[k] = K.hands
        if n == 0:
            b[k + 1] = 0
            k += 2
            continue
        k = varint(b, k + 1, 1 + vlen(n) + n)
        b[k] = K.cards
        k = varint(b, k + 1, n)
        k += r.hand_codes(s, b + k)
    if p.has_st:
        inner = (2 if p.st_seat else 0) + 1 + vlen(p.st_n) + p.st_n
        if reading != NULL:
            inner += 1 + vlen(nread) + nread
        b[k] = K.standing
        k = varint(b, k + 1, inner)
        if p.st_seat:
            k = scalar(b, k, K.standing_seat, p.st_seat)
        b[k] = K.standing_cards
        k = varint(b, k + 1, p.st_n)
        memcpy(b + k, r.standing_codes(), p.st_n)
        k += p.st_n
        if reading != NULL:
            k = bytes_field(b, k, K.standing_reading, reading, nread)
    if p.npasses:
        k = scalar(b, k, K.passes, p.npasses)
    if p.nfin:
        b[k] = K.finish_order
        b[k + 1] = p.nfin
        k += 2
        for i in range(p.nfin):
            b[k] = p.fin[i]
            k += 1
    if p.over_kind:
        k = scalar(b, k, K.over, 1)
    b[k] = K.hand_at
    b[k + 1] = SEATS
    k += 2
    for i in range(SEATS):
        b[k] = <int>r.hand_at[i]
        k += 1
    if p.actions:
        k = scalar(b, k, K.actions, p.actions)
    seed = <const unsigned char*>PyBytes_AS_STRING(r.seed_sha256)
    if memcmp(seed, _NO_SEED, SEED_BYTES) != 0:       # a seeded deal's commitment
        k = bytes_field(b, k, K.seed, seed, SEED_BYTES)
    k = bytes_field(b, k, K.round_id, <const unsigned char*>PyBytes_AS_STRING(r.round_id),
                    ROUND_ID_BYTES)
    return k


cdef inline Py_ssize_t _data_size(Layout L, object sealed):
    return L.size if sealed is None else len(<bytes>sealed)


cdef Py_ssize_t _state_into(RoundCore r, unsigned char* b, Layout L,
                            const unsigned char* reading, Py_ssize_t nread,
                            object sealed) except -1:
    """Write the RoundState's fields at ``b`` (zeroed); their length. ``sealed``: the state's
    bytes already sealed (service state keys), or None to pack them here."""
    cdef Py_ssize_t size = _data_size(L, sealed)
    cdef Py_ssize_t head = 1 + vlen(size)
    b[0] = K.data
    varint(b, 1, size)
    if sealed is None:
        pack_into(r, b + head, L)
    else:
        memcpy(b + head, PyBytes_AS_STRING(<bytes>sealed), size)
    return close_field(b, head + size, K.view, _view_into(r, b + head + size + 4, reading, nread))


cdef inline const unsigned char* _data(object reading, Py_ssize_t* n):
    if reading is None:
        n[0] = 0
        return NULL
    n[0] = len(<bytes>reading)
    return <const unsigned char*>PyBytes_AS_STRING(<bytes>reading)


def state_bytes(RoundCore r, reading, sealed=None):
    """The ``RoundState`` of ``r`` as wire bytes; ``reading``: the standing play's Reading
    message bytes (None when a seat leads); ``sealed``: the state's bytes when sealed."""
    cdef Py_ssize_t nread
    cdef const unsigned char* rp = _data(reading, &nread)
    cdef Layout L = layout_of(r.rules())
    cdef Py_ssize_t bound = 8 + _data_size(L, sealed) + _view_bound(r, nread)
    cdef bytearray out = bytearray(bound)
    cdef Py_ssize_t n = _state_into(r, out, L, rp, nread, sealed)
    return PyBytes_FromStringAndSize(<char*><unsigned char*>out, n)


def apply_bytes(RoundCore r, int seat, int action_type, tuple cards, reading, standing,
                trick_won_by, finished, wind_to, next_turn, bint round_over, sealed=None):
    """An ``ApplyActionResponse``'s ``state`` and ``record`` as wire bytes: the round after
    the action, and the action's record (its fields as the core's ActionRecord has them;
    ``reading`` the record's Reading message bytes or None, ``standing`` the standing play's;
    ``sealed`` the state's bytes when sealed)."""
    cdef Py_ssize_t nread, nown, k, n
    cdef const unsigned char* rp = _data(standing, &nread)
    cdef const unsigned char* op = _data(reading, &nown)
    cdef Layout L = layout_of(r.rules())
    cdef Py_ssize_t bound = (8 + _data_size(L, sealed) + _view_bound(r, nread) + 64
                             + len(cards) + nown)
    cdef bytearray out = bytearray(bound + 8)
    cdef unsigned char* b = out
    cdef int i
    k = close_field(b, 0, K.a_state, _state_into(r, b + 4, L, rp, nread, sealed))
    b += k + 4                                # the record, at k + 4
    n = 0
    if seat:
        n = scalar(b, n, K.r_seat, seat)
    if action_type:
        n = scalar(b, n, K.r_type, action_type)
    if cards:
        b[n] = K.r_cards
        n = varint(b, n + 1, len(cards))
        for i in range(len(cards)):
            b[n] = <int>cards[i]
            n += 1
    if op != NULL:
        n = bytes_field(b, n, K.r_reading, op, nown)
    for key, value in ((K.r_trick, trick_won_by), (K.r_finished, finished),
                       (K.r_wind, wind_to), (K.r_next, next_turn)):
        if value is not None:
            n = scalar(b, n, key, <int>value)
    if round_over:
        n = scalar(b, n, K.r_over, 1)
    b -= k + 4
    n = close_field(b, k, K.a_record, n)
    return PyBytes_FromStringAndSize(<char*>b, n)
