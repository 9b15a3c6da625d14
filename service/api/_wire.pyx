# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Replies written in compiled code: a ``RoundState`` (the state's bytes and the readable
view) and an ``ApplyActionResponse``'s state and action record, straight from a round's C
fields — the fast path of service/api/rounds.py, which builds the same replies with the
generated classes for everything else — a ``BatchClassifyResponse``'s packed columns
and its ``errors``, one ``BatchError`` per invalid play from a status per distinct reason,
and a ``ClassifyPlayResponse`` from its readings' encoded bytes (service/api/shuangkou.py).
Two requests are read here too, in the plain shape game servers send: a
``ClassifyPlayRequest`` and a ``BatchClassifyRequest`` (:func:`read_classify_request`,
:func:`read_batch_request`); and a plain ClassifyPlay of a valid play is answered here
whole (:func:`classify_plain`).

The proto stays the one source: every field's key (its number and wire type) is read from
the generated descriptors (``shuangkou.v1.rounds_pb2``) when this module loads, and checked to
be what the writer encodes (a scalar varint, a packed list, a message); a proto change the
writer does not follow fails at import, not on the wire. tests/test_round_service.py checks
that every reply of whole rounds equals the message built field by field. Why it exists:
built with the generated classes, the reply cost 15–18 % more instructions per ApplyAction
than this (docs/BENCHMARKS.md "ApplyAction: the reply writer").
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memcmp, memcpy, memmove, memset

from array import array

from shuangkou.core._core cimport RD, Classification
from shuangkou.core._round cimport ROUND_ID_BYTES, SEED_BYTES, RoundCore
from shuangkou.core._state cimport Layout, layout_of, pack_into
from shuangkou.core.cards cimport NFACES, NO_SUIT, SEATS, code_of

from google.protobuf.descriptor import FieldDescriptor

from shuangkou.core import classify as _classify, parse_cards as _parse_cards
from shuangkou.core.cards import is_card as _is_card
from shuangkou.core.errors import ShuangkouError as _ShuangkouError
from shuangkou.service.api import convert as _convert
from shuangkou.service.errors import scoped as _scoped
from shuangkou.v1 import cards_pb2, rounds_pb2, service_pb2, variants_pb2

# ----------------------------------------------------------------------------- the keys

_VARINT, _LEN = 0, 2
_SCALARS = {FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_BOOL, FieldDescriptor.TYPE_ENUM}


def _key(message, str name, str shape):
    """The one-byte key of field ``name`` of ``message``, checked to have the ``shape`` the
    writer gives it: ``scalar`` (a varint), ``packed`` (a packed repeated varint),
    ``message`` (a length-delimited message or bytes), ``text`` (a string)."""
    field = message.DESCRIPTOR.fields_by_name[name]
    # protobuf 6.32 added is_repeated; 7 dropped label
    repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == 3
    if shape == "scalar":
        ok, wire = field.type in _SCALARS and not repeated, _VARINT
    elif shape == "packed":
        ok, wire = field.type in _SCALARS and repeated and field.is_packed, _LEN
    elif shape == "text":
        ok, wire = field.type == FieldDescriptor.TYPE_STRING and not repeated, _LEN
    else:
        ok, wire = field.type in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_BYTES), _LEN
    key = field.number << 3 | wire
    if not ok or key >= 128:
        raise ImportError(f"{message.DESCRIPTOR.full_name}.{name} is no longer the {shape} "
                          "field the reply writer encodes (service/api/_wire.pyx)")
    return key


cdef struct Keys:
    int data, view                                  # RoundState
    int turn, hand_sizes, hands, standing, passes, finish_order, over, hand_at, actions, seed
    int round_id
    int cards                                       # Cards
    int st_seat, st_cards, st_reading               # StandingPlay
    int r_seat, r_type, r_cards, r_reading, r_trick, r_finished, r_wind, r_next, r_over
    int a_state, a_record                           # ApplyActionResponse
    int b_errors, e_index, e_status                 # BatchClassifyResponse, BatchError
    int b_kinds, b_tops, b_stars, b_cards, b_readings
    int c_cards, c_readings, c_reading              # ClassifyPlayResponse
    int q_rule_set, q_play, q_id, q_text            # ClassifyPlayRequest, RuleSet, Cards
    int bq_codes, bq_lengths                        # BatchClassifyRequest

cdef Keys K
K.data = _key(rounds_pb2.RoundState, "data", "message")
K.view = _key(rounds_pb2.RoundState, "view", "message")
_V = rounds_pb2.RoundView
K.turn = _key(_V, "turn", "scalar")
K.hand_sizes = _key(_V, "hand_sizes", "packed")
K.hands = _key(_V, "hands", "message")
K.standing = _key(_V, "standing", "message")
K.passes = _key(_V, "passes", "scalar")
K.finish_order = _key(_V, "finish_order", "packed")
K.over = _key(_V, "over", "scalar")
K.hand_at = _key(_V, "hand_at", "packed")
K.actions = _key(_V, "actions_applied", "scalar")
K.seed = _key(_V, "seed_sha256", "message")
K.round_id = _key(_V, "round_id", "message")
K.cards = _key(cards_pb2.Cards, "cards", "packed")
K.st_seat = _key(rounds_pb2.StandingPlay, "seat", "scalar")
K.st_cards = _key(rounds_pb2.StandingPlay, "cards", "packed")
K.st_reading = _key(rounds_pb2.StandingPlay, "reading", "message")
_R = rounds_pb2.ActionRecord
K.r_seat = _key(_R, "seat", "scalar")
K.r_type = _key(_R, "type", "scalar")
K.r_cards = _key(_R, "cards", "packed")
K.r_reading = _key(_R, "reading", "message")
K.r_trick = _key(_R, "trick_won_by", "scalar")
K.r_finished = _key(_R, "finished", "scalar")
K.r_wind = _key(_R, "wind_to", "scalar")
K.r_next = _key(_R, "next_turn", "scalar")
K.r_over = _key(_R, "round_over", "scalar")
K.a_state = _key(rounds_pb2.ApplyActionResponse, "state", "message")
K.a_record = _key(rounds_pb2.ApplyActionResponse, "record", "message")
K.b_errors = _key(service_pb2.BatchClassifyResponse, "errors", "message")
K.e_index = _key(service_pb2.BatchError, "index", "scalar")
K.e_status = _key(service_pb2.BatchError, "status", "message")
_B = service_pb2.BatchClassifyResponse
K.b_kinds = _key(_B, "kinds", "packed")
K.b_tops = _key(_B, "tops", "packed")
K.b_stars = _key(_B, "stars", "packed")
K.b_cards = _key(_B, "card_counts", "packed")
K.b_readings = _key(_B, "reading_counts", "packed")
_C = service_pb2.ClassifyPlayResponse
K.c_cards = _key(_C, "cards", "packed")
K.c_readings = _key(_C, "readings", "message")
K.c_reading = _key(_C, "reading", "message")
K.q_rule_set = _key(service_pb2.ClassifyPlayRequest, "rule_set", "message")
K.q_play = _key(service_pb2.ClassifyPlayRequest, "play", "message")
K.q_id = _key(variants_pb2.RuleSet, "id", "text")
K.q_text = _key(cards_pb2.Cards, "cards_text", "text")
if _key(service_pb2.BatchClassifyRequest, "rule_set", "message") != K.q_rule_set:
    raise ImportError("BatchClassifyRequest.rule_set is no longer ClassifyPlayRequest's key "
                      "(service/api/_wire.pyx reads both)")
K.bq_codes = _key(service_pb2.BatchClassifyRequest, "codes", "message")
K.bq_lengths = _key(service_pb2.BatchClassifyRequest, "lengths", "packed")
#: The fields the writer leaves to the caller: a message gaining a field the writer does
#: not write must be noticed (checked at import below).
_WRITTEN = {rounds_pb2.RoundState: {"data", "view"},
            _V: {"turn", "hand_sizes", "hands", "standing", "passes", "finish_order", "over",
                 "hand_at", "actions_applied", "seed_sha256", "round_id"},
            rounds_pb2.StandingPlay: {"seat", "cards", "reading"},
            _R: {"seat", "type", "cards", "reading", "trick_won_by", "finished", "wind_to",
                 "next_turn", "round_over"},
            service_pb2.BatchError: {"index", "status"},
            _C: {"cards", "readings", "reading"}}
for _message, _fields in _WRITTEN.items():
    _have = set(_message.DESCRIPTOR.fields_by_name)
    if _have != _fields:
        raise ImportError(f"{_message.DESCRIPTOR.full_name} has the fields {sorted(_have)}; "
                          f"the reply writer (service/api/_wire.pyx) writes {sorted(_fields)}")


# ----------------------------------------------------------------------------- encoding

cdef inline int _vlen(unsigned long long v) noexcept:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline Py_ssize_t _varint(unsigned char* b, Py_ssize_t k, unsigned long long v) noexcept:
    """Write ``v`` as a varint at ``b[k]``; the position after it."""
    while v >= 0x80:
        b[k] = (v & 0x7f) | 0x80
        v >>= 7
        k += 1
    b[k] = v
    return k + 1


cdef inline Py_ssize_t _scalar(unsigned char* b, Py_ssize_t k, int key,
                               unsigned long long v) noexcept:
    b[k] = key
    return _varint(b, k + 1, v)


cdef inline Py_ssize_t _close(unsigned char* b, Py_ssize_t k, int key, Py_ssize_t n) noexcept:
    """Finish a length-delimited field whose ``n`` payload bytes were written at
    ``b + k + 4`` (room left for its key and a length below 2**21): key and length at
    ``b + k``, the payload moved up behind them. The position after the field."""
    cdef int vl = _vlen(<unsigned long long>n)
    b[k] = key
    _varint(b, k + 1, <unsigned long long>n)
    memmove(b + k + 1 + vl, b + k + 4, n)
    return k + 1 + vl + n


cdef inline Py_ssize_t _bytes_field(unsigned char* b, Py_ssize_t k, int key,
                                    const unsigned char* data, Py_ssize_t n) noexcept:
    b[k] = key
    k = _varint(b, k + 1, <unsigned long long>n)
    memcpy(b + k, data, n)
    return k + n


# ----------------------------------------------------------------------------- the view

cdef unsigned char _NO_SEED[SEED_BYTES]     # zero-initialised: a deal of given hands

cdef Py_ssize_t _view_bound(RoundCore r, Py_ssize_t nread) noexcept:
    cdef Py_ssize_t total = 0
    cdef int s
    for s in range(SEATS):
        total += r.nleft[s]
    # + the seed commitment and the round id
    return 128 + 12 * SEATS + 2 * total + 2 * r.st_n + nread + 34 + 18


cdef Py_ssize_t _view_into(RoundCore r, unsigned char* b, const unsigned char* reading,
                           Py_ssize_t nread) noexcept:
    """Write the RoundView's fields at ``b``; their length. ``reading``: the standing play's
    Reading message (``nread`` bytes), None when a seat leads."""
    cdef Py_ssize_t k = 0, inner
    cdef int s, rk, f, n, m, i
    cdef const unsigned char* seed
    if not r.over_kind:
        k = _scalar(b, k, K.turn, r.cturn)
    m = 0
    for s in range(SEATS):
        m += _vlen(r.nleft[s])
    b[k] = K.hand_sizes
    k = _varint(b, k + 1, m)
    for s in range(SEATS):
        k = _varint(b, k, r.nleft[s])
    for s in range(SEATS):                    # one Cards each, its codes packed
        n = r.nleft[s]
        b[k] = K.hands
        if n == 0:
            b[k + 1] = 0
            k += 2
            continue
        k = _varint(b, k + 1, 1 + _vlen(n) + n)
        b[k] = K.cards
        k = _varint(b, k + 1, n)
        for rk in range(NFACES):
            m = r.nranks[s][rk]
            if not m:
                continue
            if rk < 13:
                for f in range(code_of(rk, 0), code_of(rk, NO_SUIT)):
                    i = min(r.faces[s][f], m)
                    m -= i
                    while i:
                        b[k] = f
                        k += 1
                        i -= 1
            while m:
                b[k] = code_of(rk, NO_SUIT)
                k += 1
                m -= 1
    if r.has_st:
        inner = (2 if r.st_seat else 0) + 1 + _vlen(r.st_n) + r.st_n
        if reading != NULL:
            inner += 1 + _vlen(nread) + nread
        b[k] = K.standing
        k = _varint(b, k + 1, inner)
        if r.st_seat:
            k = _scalar(b, k, K.st_seat, r.st_seat)
        b[k] = K.st_cards
        k = _varint(b, k + 1, r.st_n)
        for i in range(r.st_n):
            b[k] = r.st_cards[i]
            k += 1
        if reading != NULL:
            k = _bytes_field(b, k, K.st_reading, reading, nread)
    if r.npasses:
        k = _scalar(b, k, K.passes, r.npasses)
    if r.nfin:
        b[k] = K.finish_order
        b[k + 1] = r.nfin
        k += 2
        for i in range(r.nfin):
            b[k] = r.fin[i]
            k += 1
    if r.over_kind:
        k = _scalar(b, k, K.over, 1)
    b[k] = K.hand_at
    b[k + 1] = SEATS
    k += 2
    for i in range(SEATS):
        b[k] = <int>r.hand_at[i]
        k += 1
    if r.actions_applied:
        k = _scalar(b, k, K.actions, r.actions_applied)
    seed = <const unsigned char*>PyBytes_AS_STRING(r.seed_sha256)
    if memcmp(seed, _NO_SEED, SEED_BYTES) != 0:       # a seeded deal's commitment
        k = _bytes_field(b, k, K.seed, seed, SEED_BYTES)
    k = _bytes_field(b, k, K.round_id, <const unsigned char*>PyBytes_AS_STRING(r.round_id),
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
    cdef Py_ssize_t head = 1 + _vlen(size)
    b[0] = K.data
    _varint(b, 1, size)
    if sealed is None:
        pack_into(r, b + head, L)
    else:
        memcpy(b + head, PyBytes_AS_STRING(<bytes>sealed), size)
    return _close(b, head + size, K.view, _view_into(r, b + head + size + 4, reading, nread))


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
    cdef Layout L = layout_of(r.rs)
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
    cdef Layout L = layout_of(r.rs)
    cdef Py_ssize_t bound = (8 + _data_size(L, sealed) + _view_bound(r, nread) + 64
                             + len(cards) + nown)
    cdef bytearray out = bytearray(bound + 8)
    cdef unsigned char* b = out
    cdef int i
    k = _close(b, 0, K.a_state, _state_into(r, b + 4, L, rp, nread, sealed))
    b += k + 4                                # the record, at k + 4
    n = 0
    if seat:
        n = _scalar(b, n, K.r_seat, seat)
    if action_type:
        n = _scalar(b, n, K.r_type, action_type)
    if cards:
        b[n] = K.r_cards
        n = _varint(b, n + 1, len(cards))
        for i in range(len(cards)):
            b[n] = <int>cards[i]
            n += 1
    if op != NULL:
        n = _bytes_field(b, n, K.r_reading, op, nown)
    for key, value in ((K.r_trick, trick_won_by), (K.r_finished, finished),
                       (K.r_wind, wind_to), (K.r_next, next_turn)):
        if value is not None:
            n = _scalar(b, n, key, <int>value)
    if round_over:
        n = _scalar(b, n, K.r_over, 1)
    b -= k + 4
    n = _close(b, k, K.a_record, n)
    return PyBytes_FromStringAndSize(<char*>b, n)


# ----------------------------------------------------------------------------- BatchClassify

ctypedef fused column_t:
    unsigned char
    unsigned short


cdef Py_ssize_t _packed(unsigned char* b, Py_ssize_t k, int key, const column_t[:] col,
                        const unsigned char* table) noexcept:
    """The packed field ``key`` of a column (one-byte values may be mapped through
    ``table``) written at ``b[k]``; the position after it. With ``b`` NULL, only that
    position (the size pass)."""
    cdef Py_ssize_t i, n = col.shape[0], m = 0
    cdef unsigned int v
    for i in range(n):
        v = table[col[i]] if table != NULL else col[i]
        m += _vlen(v)
    if b == NULL:
        return k + 1 + _vlen(m) + m
    b[k] = key
    k = _varint(b, k + 1, m)
    for i in range(n):
        k = _varint(b, k, table[col[i]] if table != NULL else col[i])
    return k


cdef Py_ssize_t _columns(unsigned char* b, const unsigned char[:] kind, const unsigned char[:] top,
                         const unsigned char[:] star, const unsigned char[:] cards,
                         const unsigned short[:] readings, const unsigned char* table) noexcept:
    """The five columns in field order at ``b`` (NULL: their size)."""
    cdef Py_ssize_t k = _packed(b, 0, K.b_kinds, kind, table)
    k = _packed(b, k, K.b_tops, top, NULL)
    k = _packed(b, k, K.b_cards, cards, NULL)
    k = _packed(b, k, K.b_stars, star, NULL)
    return _packed(b, k, K.b_readings, readings, NULL)


def batch_columns(const unsigned char[:] kind, const unsigned char[:] top,
                  const unsigned char[:] star, const unsigned char[:] cards,
                  const unsigned short[:] readings, const unsigned char[:] kind_values,
                  long long[:] tally):
    """The packed columns of one slice of a batch (``kinds`` … ``reading_counts``, in field
    order: protobuf's own encoding of them), as bytes: each play's core kind index mapped
    through ``kind_values`` (256 entries: the proto's Kind) and counted in ``tally`` (256
    entries, by core index)."""
    cdef Py_ssize_t i, n = kind.shape[0]
    if top.shape[0] != n or star.shape[0] != n or cards.shape[0] != n or readings.shape[0] != n:
        raise ValueError("the columns of a batch differ in length")
    if kind_values.shape[0] != 256 or tally.shape[0] != 256:
        raise ValueError("kind_values and tally have 256 entries")
    cdef const unsigned char* table = &kind_values[0]
    for i in range(n):
        tally[kind[i]] += 1
    out = PyBytes_FromStringAndSize(NULL, _columns(NULL, kind, top, star, cards, readings,
                                                   table))
    _columns(<unsigned char*>PyBytes_AS_STRING(out), kind, top, star, cards, readings, table)
    return out


def batch_errors(long long first, const long long[:] indexes, const unsigned int[:] groups,
                 list statuses):
    """``BatchClassifyResponse.errors`` of one slice of a batch, as bytes: for the invalid
    play at ``first + indexes[k]``, a ``BatchError`` whose status is the encoded
    ``google.rpc.Status`` ``statuses[groups[k]]`` (one per distinct reason: the plays of a
    batch repeat a handful)."""
    cdef Py_ssize_t k, n = indexes.shape[0], size = 0, inner, m
    cdef unsigned long long index
    if groups.shape[0] != n:
        raise ValueError(f"{n} indexes but {groups.shape[0]} groups")
    cdef Py_ssize_t ng = len(statuses)
    cdef long long[::1] lens = array("q", [len(<bytes?>x) for x in statuses]) if ng else None
    for k in range(n):
        if groups[k] >= ng:
            raise IndexError(f"group {groups[k]} of {ng} statuses")
        index = first + indexes[k]
        m = lens[groups[k]]
        inner = 1 + _vlen(index) + 1 + _vlen(m) + m
        size += 1 + _vlen(inner) + inner
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef unsigned char* b = <unsigned char*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t j = 0
    cdef bytes status
    for k in range(n):
        index = first + indexes[k]
        status = statuses[groups[k]]
        m = lens[groups[k]]
        inner = 1 + _vlen(index) + 1 + _vlen(m) + m
        b[j] = K.b_errors
        j = _varint(b, j + 1, inner)
        j = _scalar(b, j, K.e_index, index)
        j = _bytes_field(b, j, K.e_status, <const unsigned char*>PyBytes_AS_STRING(status), m)
    return out


def classify_reply(cards, list readings, bytes reading):
    """A ``ClassifyPlayResponse`` as bytes (protobuf's own encoding of it): the play's card
    codes, every reading and the one the play stands as, each given as its encoded
    ``Reading`` (kept once per distinct reading by the servicer, service/api/convert.py)."""
    cdef Py_ssize_t i, n = len(cards), payload = 0, size, m
    cdef unsigned long long code
    for i in range(n):
        code = cards[i]
        payload += _vlen(code)
    size = 1 + _vlen(payload) + payload if n else 0
    for x in readings:
        m = len(<bytes?>x)
        size += 1 + _vlen(m) + m
    size += 1 + _vlen(len(reading)) + len(reading)
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef unsigned char* b = <unsigned char*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t k = 0
    cdef bytes data
    if n:
        b[k] = K.c_cards
        k = _varint(b, k + 1, payload)
        for i in range(n):
            k = _varint(b, k, <unsigned long long>cards[i])
    for x in readings:
        data = x
        k = _bytes_field(b, k, K.c_readings, <const unsigned char*>PyBytes_AS_STRING(data),
                         len(data))
    k = _bytes_field(b, k, K.c_reading, <const unsigned char*>PyBytes_AS_STRING(reading),
                     len(reading))
    return out


# ----------------------------------------------------------------------------- reading

cdef inline Py_ssize_t _span(const unsigned char* b, Py_ssize_t k, Py_ssize_t end,
                             Py_ssize_t* start) noexcept:
    """The end of the length-delimited payload whose length is the varint at ``b[k]`` (the
    payload begins at ``start[0]``); -1 when the length is malformed or runs past ``end``."""
    cdef unsigned long long n = 0
    cdef int shift = 0
    while k < end and shift < 64:
        n |= <unsigned long long>(b[k] & 0x7f) << shift
        k += 1
        if b[k - 1] < 0x80:
            if n > <unsigned long long>(end - k):
                return -1
            start[0] = k
            return k + <Py_ssize_t>n
        shift += 7
    return -1


cdef inline object _text(const unsigned char* b, Py_ssize_t start, Py_ssize_t end):
    """The UTF-8 text of ``b[start:end]``, None when it is not valid UTF-8 (protobuf refuses
    it as well: the generated class then says why)."""
    try:
        return PyUnicode_DecodeUTF8(<const char*>b + start, end - start, NULL)
    except UnicodeDecodeError:
        return None


cdef inline bint _one_byte_codes(const unsigned char* b, Py_ssize_t start,
                                 Py_ssize_t end) noexcept:
    """Whether the packed varints of ``b[start:end]`` are each one byte (below 128)."""
    cdef Py_ssize_t i
    for i in range(start, end):
        if b[i] >= 0x80:
            return False
    return True


cdef enum:
    NKEYS = 64      # the keys a plain message may hold are below this (checked at import)

for _k in (K.q_rule_set, K.q_play, K.q_id, K.q_text, K.cards, K.bq_codes, K.bq_lengths):
    if _k >= NKEYS:
        raise ImportError("a field the request readers read has a key of 64 or more "
                          "(service/api/_wire.pyx)")

# The fields a plain message may hold, a bit per key: of a ClassifyPlayRequest, its Cards,
# a BatchClassifyRequest, a RuleSet.
cdef unsigned long long _CLASSIFY = 1ULL << K.q_rule_set | 1ULL << K.q_play
cdef unsigned long long _CARDS = 1ULL << K.cards | 1ULL << K.q_text
cdef unsigned long long _BATCH = 1ULL << K.q_rule_set | 1ULL << K.bq_codes | 1ULL << K.bq_lengths
cdef unsigned long long _RULE_SET = 1ULL << K.q_id


cdef bint _field_table(const unsigned char* b, Py_ssize_t k, Py_ssize_t end,
                  unsigned long long allowed, Py_ssize_t* starts, Py_ssize_t* ends) noexcept:
    """The fields of the message in ``b[k:end]`` as a table: the payload of the field of key
    ``j`` is ``b[starts[j]:ends[j]]`` (``starts[j]`` -1: absent). True when every field is
    length-delimited, of a key in ``allowed`` (a bit per key) and given once; False for any
    other message (a field given twice is merged by protobuf: the generated class reads
    those)."""
    cdef int key
    cdef Py_ssize_t start, stop
    memset(starts, -1, NKEYS * sizeof(Py_ssize_t))
    while k < end:
        key = b[k]
        if key >= NKEYS or not (allowed >> key) & 1 or starts[key] >= 0:
            return False
        stop = _span(b, k + 1, end, &start)
        if stop < 0:
            return False
        starts[key], ends[key] = start, stop
        k = stop
    return True


cdef inline object _rule_set_id(const unsigned char* b, Py_ssize_t start, Py_ssize_t end):
    """The id of the RuleSet in ``b[start:end]`` ("" for none or an empty one); None for any
    other RuleSet (a custom one, an id of bad UTF-8 or given twice)."""
    cdef Py_ssize_t starts[NKEYS]
    cdef Py_ssize_t ends[NKEYS]
    if start < 0:
        return ""
    if not _field_table(b, start, end, _RULE_SET, starts, ends):
        return None
    return "" if starts[K.q_id] < 0 else _text(b, starts[K.q_id], ends[K.q_id])


cdef object _lengths(const unsigned char* b, Py_ssize_t start, Py_ssize_t end):
    """The packed varints of ``b[start:end]`` as an ``array("i")``; None when one is cut
    short or is 2**31 or more (the generated class then reads them)."""
    cdef Py_ssize_t i, count = 0, j = 0
    cdef unsigned long long v = 0
    cdef int shift = 0
    if start < end and b[end - 1] >= 0x80:
        return None
    for i in range(start, end):
        count += b[i] < 0x80
    out = array("i", bytes(4 * count))
    cdef int[:] w = out
    for i in range(start, end):
        if shift > 28:
            return None
        v |= <unsigned long long>(b[i] & 0x7f) << shift
        if b[i] < 0x80:
            if v > 0x7fffffff:
                return None
            w[j] = <int>v
            j += 1
            v, shift = 0, 0
        else:
            shift += 7
    return out


# Two requests are read here from their bytes, when they have the plain shape game servers
# send: a unary ClassifyPlay and a BatchClassify are mostly the transport's cost, and
# building the message and reading its fields in Python cost more than the classification
# (issue 20's profiles). Any other shape — or bytes that do not decode — is left to the
# generated class. The servicer checks what it is given as it checks a message's fields,
# so a plain request is answered exactly as its message would be.

def read_classify_request(bytes data):
    """A ClassifyPlay request from its bytes: ``(rule set id, card codes, card text)`` when
    it holds at most a rule set by id and the play's codes (packed, each below 128) or its
    text, each field once (no declaration); else the generated class's message."""
    cdef const unsigned char* b = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t starts[NKEYS]
    cdef Py_ssize_t ends[NKEYS]
    cdef Py_ssize_t at, to
    codes, text = [], ""
    if _field_table(b, 0, len(data), _CLASSIFY, starts, ends):
        vid = _rule_set_id(b, starts[K.q_rule_set], ends[K.q_rule_set])
        at, to = starts[K.q_play], ends[K.q_play]
        if vid is not None and (at < 0 or _field_table(b, at, to, _CARDS, starts, ends)):
            if at >= 0 and starts[K.cards] >= 0:
                if not _one_byte_codes(b, starts[K.cards], ends[K.cards]):
                    vid = None
                else:
                    codes = list(b[starts[K.cards]:ends[K.cards]])
            if at >= 0 and starts[K.q_text] >= 0:
                text = _text(b, starts[K.q_text], ends[K.q_text])
            if vid is not None and text is not None:
                return vid, codes, text
    return service_pb2.ClassifyPlayRequest.FromString(data)


def read_batch_request(bytes data):
    """A BatchClassify request from its bytes: ``(rule set id, codes, lengths)`` (the codes
    a view of ``data``, the lengths an ``array("i")``) when it holds at most a rule set by
    id, the codes and the lengths (packed, each below 2**31), each field once (no text
    plays, no readings asked for); else the generated class's message."""
    cdef const unsigned char* b = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t starts[NKEYS]
    cdef Py_ssize_t ends[NKEYS]
    if _field_table(b, 0, len(data), _BATCH, starts, ends):
        vid = _rule_set_id(b, starts[K.q_rule_set], ends[K.q_rule_set])
        codes = memoryview(b"") if starts[K.bq_codes] < 0 else \
            memoryview(data)[starts[K.bq_codes]:ends[K.bq_codes]]
        lengths = array("i") if starts[K.bq_lengths] < 0 else \
            _lengths(b, starts[K.bq_lengths], ends[K.bq_lengths])
        if vid is not None and lengths is not None:
            return vid, codes, lengths
    return service_pb2.BatchClassifyRequest.FromString(data)


# ----------------------------------------------------------------------------- answering

cdef bint _IS_CARD[128]
for _code in range(128):
    _IS_CARD[_code] = _is_card(_code)


cdef bytes _encoded(Classification c, int i):
    """The encoded ``Reading`` of the ``i``-th reading of ``c``: looked up in the servicers'
    one cache (convert.ENCODED_READINGS, keyed by the rule set and the reading's packed C
    form, as :func:`convert.reading_bytes` keys it), made by that function when missing."""
    key = (c.rules, PyBytes_FromStringAndSize(<char*>&c.rd[i], sizeof(RD)))
    got = _convert.ENCODED_READINGS.get(key)
    if got is None:
        got = _convert.reading_bytes(c.readings[i])
    return got


def classify_plain(tuple request, int max_cards):
    """ClassifyPlay's answer to a plain request (:func:`read_classify_request`):
    ``(reply bytes, variant label, kind)``, or the error the servicer raises for an unknown
    rule set or for cards that form no play (tagged with the field it names); None for
    cards that do not parse, are not cards or are too many, or no cards — which the
    servicer's Python path answers, errors and all. The servicer's steps, in compiled code
    (the rule set resolved by the servicer's own :func:`convert.variant_by_id`): a unary
    ClassifyPlay is mostly the transport's cost, and in a running server each Python step of
    the servicer costs several times what it does in a loop (issue 20's profile)."""
    cdef Py_ssize_t v
    vid, codes, text = request
    variant = _convert.variant_by_id(vid)
    if text:
        if codes or len(text) > 16 * max_cards:
            return None
        try:
            codes = _parse_cards(text)
        except _ShuangkouError:
            return None
    else:
        for code in codes:
            v = code
            if v < 0 or v >= 128 or not _IS_CARD[v]:
                return None
    if not codes or len(codes) > max_cards:
        return None
    try:
        found = _classify(codes, variant)
    except _ShuangkouError as exc:   # no play: the servicer's answer, the field it names
        raise _scoped(exc, "play.cards_text" if text else "play.cards")
    cdef Classification c = <Classification?>found
    readings = [_encoded(c, i) for i in range(c.n)]
    return classify_reply(c.cards, readings, readings[0]), _convert.variant_label(variant), c.kind
