"""Fuzz card parsing: arbitrary text, bytes, token lists and codes (core.parse_cards,
format_cards, validate_hand). Every input parses or raises CardError; what parses is a list
of valid codes that formats and parses back to itself."""

from __future__ import annotations

import sys

from common import Input, cards_any, core_call, main, valid_codes, variant_any

from shuangkou import core

VALID = frozenset(valid_codes())


def one_input(data: bytes) -> None:
    inp = Input(data)
    cards = cards_any(inp)
    variant = variant_any(inp) if inp.bool() else None
    ok, codes = core_call(core.parse_cards, cards, variant)
    if not ok:
        return
    if not all(type(c) is int and c in VALID for c in codes):
        raise AssertionError(f"parse_cards({cards!r}) gave invalid codes {codes}")
    text = core.format_cards(codes)
    again = core.parse_cards(" ".join(text))
    if again != codes:
        raise AssertionError(f"format/parse round trip: {codes} -> {text} -> {again}")
    if variant is not None:
        ok, hand = core_call(core.validate_hand, codes, variant)
        if ok and hand != codes:
            raise AssertionError("validate_hand changed the cards")


if __name__ == "__main__":
    main(one_input, sys.argv)
