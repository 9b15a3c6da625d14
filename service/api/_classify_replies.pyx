# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""ShuangkouService's classification replies written in compiled code: a
``BatchClassifyResponse``'s packed columns and its ``errors`` (one ``BatchError`` per invalid
play from a status per distinct reason), and a ``ClassifyPlayResponse`` from its readings'
encoded bytes (service/api/shuangkou.py). Each is protobuf's own encoding of the message
(tests/test_service_api.py compares them with the generated classes' bytes); the keys are
read from the descriptors at import and checked (service/api/_protobuf.pxd).
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize

from array import array

from shuangkou.service.api._protobuf cimport (
    bytes_field, check_written, field_key, scalar, varint, vlen)

from shuangkou.v1 import service_pb2

# ----------------------------------------------------------------------------- the keys

cdef struct Keys:
    int b_errors, e_index, e_status                 # BatchClassifyResponse, BatchError
    int b_kinds, b_tops, b_stars, b_cards, b_readings
    int c_cards, c_readings, c_reading              # ClassifyPlayResponse

cdef Keys K
_B = service_pb2.BatchClassifyResponse
K.b_errors = field_key(_B, "errors", "message")
K.e_index = field_key(service_pb2.BatchError, "index", "scalar")
K.e_status = field_key(service_pb2.BatchError, "status", "message")
K.b_kinds = field_key(_B, "kinds", "packed")
K.b_tops = field_key(_B, "tops", "packed")
K.b_stars = field_key(_B, "stars", "packed")
K.b_cards = field_key(_B, "card_counts", "packed")
K.b_readings = field_key(_B, "reading_counts", "packed")
_C = service_pb2.ClassifyPlayResponse
K.c_cards = field_key(_C, "cards", "packed")
K.c_readings = field_key(_C, "readings", "message")
K.c_reading = field_key(_C, "reading", "message")
# The fields the writer leaves to the caller: a message gaining a field must be noticed.
check_written({service_pb2.BatchError: {"index", "status"},
               _C: {"cards", "readings", "reading"}})


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
        m += vlen(v)
    if b == NULL:
        return k + 1 + vlen(m) + m
    b[k] = key
    k = varint(b, k + 1, m)
    for i in range(n):
        k = varint(b, k, table[col[i]] if table != NULL else col[i])
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
        inner = 1 + vlen(index) + 1 + vlen(m) + m
        size += 1 + vlen(inner) + inner
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef unsigned char* b = <unsigned char*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t j = 0
    cdef bytes status
    for k in range(n):
        index = first + indexes[k]
        status = statuses[groups[k]]
        m = lens[groups[k]]
        inner = 1 + vlen(index) + 1 + vlen(m) + m
        b[j] = K.b_errors
        j = varint(b, j + 1, inner)
        j = scalar(b, j, K.e_index, index)
        j = bytes_field(b, j, K.e_status, <const unsigned char*>PyBytes_AS_STRING(status), m)
    return out


# ----------------------------------------------------------------------------- ClassifyPlay

def classify_reply(cards, list readings, bytes reading):
    """A ``ClassifyPlayResponse`` as bytes (protobuf's own encoding of it): the play's card
    codes, every reading and the one the play stands as, each given as its encoded
    ``Reading`` (kept once per distinct reading by the servicer, service/api/convert.py)."""
    cdef Py_ssize_t i, n = len(cards), payload = 0, size, m
    cdef unsigned long long code
    for i in range(n):
        code = cards[i]
        payload += vlen(code)
    size = 1 + vlen(payload) + payload if n else 0
    for x in readings:
        m = len(<bytes?>x)
        size += 1 + vlen(m) + m
    size += 1 + vlen(len(reading)) + len(reading)
    out = PyBytes_FromStringAndSize(NULL, size)
    cdef unsigned char* b = <unsigned char*>PyBytes_AS_STRING(out)
    cdef Py_ssize_t k = 0
    cdef bytes data
    if n:
        b[k] = K.c_cards
        k = varint(b, k + 1, payload)
        for i in range(n):
            k = varint(b, k, <unsigned long long>cards[i])
    for x in readings:
        data = x
        k = bytes_field(b, k, K.c_readings, <const unsigned char*>PyBytes_AS_STRING(data),
                         len(data))
    k = bytes_field(b, k, K.c_reading, <const unsigned char*>PyBytes_AS_STRING(reading),
                     len(reading))
    return out
