# cython: language_level=3
"""Protobuf's wire encoding for the compiled reply writers (service/api/_round_replies.pyx,
service/api/_classify_replies.pyx): a field's key read from the generated descriptors and
checked to be the shape the writer encodes, and the varint, scalar and length-delimited
writers. Inline, so each writer compiles them in; the one place protobuf's encoding is
written by hand."""

from libc.string cimport memcpy, memmove


cdef inline int field_key(message, str name, str shape) except -1:
    """The one-byte key of field ``name`` of ``message``, checked to have the ``shape`` the
    writer gives it: ``scalar`` (a varint), ``packed`` (a packed repeated varint),
    ``message`` (a length-delimited message or bytes), ``text`` (a string). A proto change
    the writer does not follow fails at import, not on the wire."""
    from google.protobuf.descriptor import FieldDescriptor as F

    scalars = (F.TYPE_UINT32, F.TYPE_BOOL, F.TYPE_ENUM)
    field = message.DESCRIPTOR.fields_by_name[name]
    # protobuf 6.32 added is_repeated; 7 dropped label
    repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == 3
    if shape == "scalar":
        ok, wire = field.type in scalars and not repeated, 0
    elif shape == "packed":
        ok, wire = field.type in scalars and repeated and field.is_packed, 2
    elif shape == "text":
        ok, wire = field.type == F.TYPE_STRING and not repeated, 2
    else:
        ok, wire = field.type in (F.TYPE_MESSAGE, F.TYPE_BYTES), 2
    key = field.number << 3 | wire
    if not ok or key >= 128:
        raise ImportError(f"{message.DESCRIPTOR.full_name}.{name} is no longer the {shape} "
                          "field the reply writer encodes (service/api/_protobuf.pxd)")
    return key


cdef inline int check_written(dict written) except -1:
    """Every field of each message of ``written`` (message class -> the names its writer
    writes) is written: a message gaining a field the writer leaves out fails at import."""
    for message, fields in written.items():
        have = set(message.DESCRIPTOR.fields_by_name)
        if have != fields:
            raise ImportError(f"{message.DESCRIPTOR.full_name} has the fields {sorted(have)}; "
                              f"the reply writer writes {sorted(fields)}")
    return 0


cdef inline int vlen(unsigned long long v) noexcept:
    cdef int n = 1
    while v >= 0x80:
        v >>= 7
        n += 1
    return n


cdef inline Py_ssize_t varint(unsigned char* b, Py_ssize_t k, unsigned long long v) noexcept:
    """Write ``v`` as a varint at ``b[k]``; the position after it."""
    while v >= 0x80:
        b[k] = (v & 0x7f) | 0x80
        v >>= 7
        k += 1
    b[k] = v
    return k + 1


cdef inline Py_ssize_t scalar(unsigned char* b, Py_ssize_t k, int key,
                               unsigned long long v) noexcept:
    b[k] = key
    return varint(b, k + 1, v)


cdef inline Py_ssize_t close_field(unsigned char* b, Py_ssize_t k, int key, Py_ssize_t n) noexcept:
    """Finish a length-delimited field whose ``n`` payload bytes were written at
    ``b + k + 4`` (room left for its key and a length below 2**21): key and length at
    ``b + k``, the payload moved up behind them. The position after the field."""
    cdef int vl = vlen(<unsigned long long>n)
    b[k] = key
    varint(b, k + 1, <unsigned long long>n)
    memmove(b + k + 1 + vl, b + k + 4, n)
    return k + 1 + vl + n


cdef inline Py_ssize_t bytes_field(unsigned char* b, Py_ssize_t k, int key,
                                    const unsigned char* data, Py_ssize_t n) noexcept:
    b[k] = key
    k = varint(b, k + 1, <unsigned long long>n)
    memcpy(b + k, data, n)
    return k + n
