"""Fuzz classification and comparison: core.classify, beats and play_reading.

Inputs are mostly plays of few consecutive ranks plus jokers (so they reach deep into the
reading search) under every built-in variant, with arbitrary declarations. Beyond "a result
or a core_ext error", the harness checks the invariants a caller relies on: the primary is
the first reading, every reading describes and serialises, ``play_reading`` against a play
agrees with ``beats``, and nothing beats itself.
"""

from __future__ import annotations

import sys

from common import KIND_NAMES, Input, cards_any, core_call, main, play_codes, variant_any

from shuangkou import core


def declare_any(inp: Input) -> object:
    pick = inp.byte() % 8
    if pick < 3:
        return None
    if pick < 7:
        return KIND_NAMES[inp.int(0, len(KIND_NAMES) - 1)]
    return inp.choice(("", "Bomb", "triple_chain ", 5, ["bomb"], b"bomb"))


def top_any(inp: Input) -> object:
    pick = inp.byte() % 6
    if pick < 3:
        return None
    if pick < 5:
        return inp.int(-2, 16)
    return inp.choice(("A", "10", "t", "SJ", "bj", "X", "", 2**40, -2**40, 1.5, [3]))


def check_classification(c: core.Classification) -> None:
    readings = c.readings
    if not readings or c.primary is not readings[0]:
        if not readings or c.primary.describe() != readings[0].describe():
            raise AssertionError("primary is not the first reading")
    for r in readings:
        r.describe()
        r.to_dict()
        if r.cards != len(c.cards):
            raise AssertionError(f"reading {r.describe()} counts {r.cards} of {len(c.cards)} cards")
        if r.is_bomb != bool(r.key):
            raise AssertionError(f"bomb key mismatch in {r.describe()}")
        if r.beats(r):
            raise AssertionError(f"{r.describe()} beats itself")


def one_input(data: bytes) -> None:
    inp = Input(data)
    variant = variant_any(inp)
    b = play_codes(inp) if inp.byte() % 4 else cards_any(inp)
    a = play_codes(inp) if inp.byte() % 4 else cards_any(inp)
    declare = declare_any(inp)
    ok, c = core_call(core.classify, b, variant, declare)
    if ok:
        check_classification(c)
    ok_beats, beats = core_call(core.beats, b, a, variant)
    ok_read, reading = core_call(core.play_reading, b, variant, a, declare, top_any(inp))
    if ok_read and declare is None and ok_beats and not beats:
        raise AssertionError(f"play_reading found {reading.describe()} beating {a!r} but "
                             f"beats() says no")
    ok_a, ca = core_call(core.classify, a, variant)
    if ok and ok_a and ok_beats and beats != any(r.beats(ca.primary) for r in c.readings) \
            and declare is None:
        raise AssertionError("beats() disagrees with Reading.beats over the readings")


if __name__ == "__main__":
    main(one_input, sys.argv)
