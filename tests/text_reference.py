"""The slow twin of the compiled card tokenizer (``_core.pyx`` ``parse_into``): the grammar
as it was written in Python before it was compiled — a regular-expression split, a table
lookup per token, a rank run read character by character — with the same messages.

``parse(cards, cap)`` returns the codes or raises the CardError the core raises.
"""

from __future__ import annotations

import re
from typing import Any

from shuangkou.core import CardError, _core
from shuangkou.core.cards import CARD_BJ, CARD_SJ, MAX_CODE, RANK_CHARS

SPLIT = re.compile(r"[\s,+]+")
RUN_CHARS = set(RANK_CHARS + RANK_CHARS.lower() + "10")
TOKENS: dict[str, int] = _core._TOKENS       # the table itself is data, shared


def _run(tok: str) -> list[int]:
    """A rank run such as ``7777`` or ``10JQKA`` (rank-only cards)."""
    if not tok:
        raise CardError("empty card token", "cards")
    out = []
    i = 0
    while i < len(tok):
        if tok.startswith("10", i):
            out.append(TOKENS["10"])
            i += 2
            continue
        ch = tok[i]
        code = TOKENS.get(ch) if ch in RUN_CHARS else None
        if code is None:
            up = tok.upper()
            if "SJ" in up or "BJ" in up:
                why = "jokers must be tokens of their own (write '7 SJ', not '7SJ')"
            else:
                why = (f"{ch!r} is not a rank (3-9, T/10, J, Q, K, A, 2), suit (S H D C) or "
                       f"joker (SJ, BJ)")
            raise CardError(f"invalid card {tok!r}: {why}", "cards")
        out.append(code)
        i += 1
    return out


def parse(cards: Any, cap: int = 256) -> list[int]:
    """Text or a list of tokens/codes, as the core parses them (buffers aside)."""
    if isinstance(cards, str):
        cards = [t for t in SPLIT.split(cards) if t]
    out: list[int] = []

    def add(code: int) -> None:
        if len(out) >= cap:
            raise CardError(f"too many cards (at most {cap})", "cards")
        out.append(code)

    for tok in cards:
        code = TOKENS.get(tok) if type(tok) is str else None
        if code:
            add(code)
        elif isinstance(tok, int) and not isinstance(tok, bool):
            if tok < 1 or tok > MAX_CODE or (tok > 65 and tok not in (CARD_SJ, CARD_BJ)):
                raise CardError(f"invalid card code {tok}", "cards")
            add(tok)
        elif isinstance(tok, str):
            for c in _run(tok.strip()):
                add(c)
        else:
            raise CardError(f"a card must be a string or an int code, not {type(tok).__name__}",
                            "cards")
    return out
