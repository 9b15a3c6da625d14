# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""A BatchClassify request read from its bytes, when it has the plain shape game servers
send — a rule set by id, the codes and the lengths, each field once — as those three fields
(:func:`read_batch_request`); any other shape, and bytes that do not decode, are the
generated class's. Why: the lengths are read straight into the ``array("i")`` the core takes,
where the message's repeated field copied into a list and converted again by the core cost
about a tenth of the call's server CPU per play (docs/BENCHMARKS.md, "The gRPC and HTTP service").
gRPC decodes BatchClassify's requests with it (the ShuangkouService registration,
service/api/shuangkou.py); the servicer's ``BatchClassify`` itself takes messages only.

The reader takes a strict subset of the wire format, its keys read from the generated
descriptors and checked at import (service/api/_protobuf.pxd), so the .proto stays the one
source.
"""

from cpython.bytes cimport PyBytes_AS_STRING
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.string cimport memset

from array import array

from shuangkou.service.api._protobuf cimport field_key

from shuangkou.v1 import service_pb2, variants_pb2

cdef struct Keys:
    int rule_set, codes, lengths, id                # BatchClassifyRequest, RuleSet

cdef Keys K
K.rule_set = field_key(service_pb2.BatchClassifyRequest, "rule_set", "message")
K.codes = field_key(service_pb2.BatchClassifyRequest, "codes", "message")
K.lengths = field_key(service_pb2.BatchClassifyRequest, "lengths", "packed")
K.id = field_key(variants_pb2.RuleSet, "id", "text")


cdef enum:
    NKEYS = 64      # the keys a plain message may hold are below this (checked at import)

for _k in (K.rule_set, K.id, K.codes, K.lengths):
    if _k >= NKEYS:
        raise ImportError("a field the request reader reads has a key of 64 or more "
                          "(service/api/_requests.pyx)")

# The fields a plain message may hold, a bit per key: of a BatchClassifyRequest, a RuleSet.
cdef unsigned long long _BATCH = 1ULL << K.rule_set | 1ULL << K.codes | 1ULL << K.lengths
cdef unsigned long long _RULE_SET = 1ULL << K.id


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
    return "" if starts[K.id] < 0 else _text(b, starts[K.id], ends[K.id])


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


def read_batch_request(bytes data):
    """A BatchClassify request from its bytes: ``(rule set id, codes, lengths)`` (the codes
    a view of ``data``, the lengths an ``array("i")``) when it holds at most a rule set by
    id, the codes and the lengths (packed, each below 2**31), each field once (no text
    plays, no readings asked for); else the generated class's message."""
    cdef const unsigned char* b = <const unsigned char*>PyBytes_AS_STRING(data)
    cdef Py_ssize_t starts[NKEYS]
    cdef Py_ssize_t ends[NKEYS]
    if _field_table(b, 0, len(data), _BATCH, starts, ends):
        vid = _rule_set_id(b, starts[K.rule_set], ends[K.rule_set])
        codes = memoryview(b"") if starts[K.codes] < 0 else \
            memoryview(data)[starts[K.codes]:ends[K.codes]]
        lengths = array("i") if starts[K.lengths] < 0 else \
            _lengths(b, starts[K.lengths], ends[K.lengths])
        if vid is not None and lengths is not None:
            return vid, codes, lengths
    return service_pb2.BatchClassifyRequest.FromString(data)
