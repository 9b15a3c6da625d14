"""Fuzz core.classify_batch with arbitrary buffers and lengths.

Buffers are raw bytes (any code 0-255) or packed plays; lengths are any integers (negative,
past the buffer, past 2**31) in lists, tuples or ``array`` buffers. A batch either raises a
core_ext error or returns five columns of one entry per play, and each valid entry matches
``classify`` of the same slice (checked on the first plays of each batch).
"""

from __future__ import annotations

import sys
from array import array

from common import Input, core_call, main, play_codes, variant_any

from shuangkou import core

KIND_INDEX = {name: i for i, name in enumerate(core.KINDS)}
CHECKED = 8   # plays per batch cross-checked against classify


def batch_input(inp: Input) -> tuple[object, object]:
    if inp.byte() % 3 == 0:
        codes = inp.raw(300)
        lengths: list[int] = []
        left = len(codes)
        while left > 0 and len(lengths) < 60:
            n = inp.int(0, min(left, 30))
            lengths.append(n)
            left -= n
        if inp.byte() % 4 == 0:   # make the lengths lie
            lengths.append(inp.edge_int() * (1 if inp.bool() else -1))
    else:
        buf = bytearray()
        lengths = []
        for _ in range(inp.int(0, 20)):
            play = play_codes(inp)
            buf.extend(play)
            lengths.append(len(play))
        codes = bytes(buf)
    shape = inp.byte() % 6
    if shape == 1:
        return memoryview(codes), tuple(lengths)
    if shape == 2:
        return bytearray(codes), array("i", [max(-2**31, min(2**31 - 1, n)) for n in lengths])
    if shape == 3:
        return codes, array("I", [n % 2**32 for n in lengths])
    if shape == 4:
        return inp.choice((codes.decode("latin-1"), list(codes), None, 7)), lengths
    return codes, lengths


def one_input(data: bytes) -> None:
    inp = Input(data)
    variant = variant_any(inp)
    codes, lengths = batch_input(inp)
    ok, cols = core_call(core.classify_batch, codes, lengths, variant)
    if not ok:
        return
    n = len(lengths)   # type: ignore[arg-type]
    if sorted(cols) != ["cards", "kind", "readings", "star", "top"] or \
            any(len(col) != n for col in cols.values()):
        raise AssertionError(f"columns {sorted(cols)} of the wrong shape for {n} plays")
    raw = b"" if codes is None else bytes(codes)   # type: ignore[arg-type]
    offset = 0
    for i, length in enumerate(list(lengths)[:CHECKED]):   # type: ignore[call-overload]
        piece = raw[offset:offset + length]
        offset += length
        good, c = core_call(core.classify, piece, variant) if piece else (False, None)
        if cols["kind"][i] == 255:
            if good:
                raise AssertionError(f"batch marks play {i} {list(piece)} invalid; classify "
                                     f"reads {c.primary.describe()}")
            continue
        if not good:
            raise AssertionError(f"batch reads play {i} {list(piece)} but classify rejects it")
        p = c.primary
        got = (cols["kind"][i], cols["top"][i], cols["star"][i], cols["cards"][i],
               cols["readings"][i])
        want = (KIND_INDEX[p.kind], p.top, p.star, p.cards, len(c.readings))
        if got != want:
            raise AssertionError(f"play {i} {list(piece)}: batch {got} vs classify {want}")


if __name__ == "__main__":
    main(one_input, sys.argv)
