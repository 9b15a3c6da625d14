"""Slow twins of the core's text, as it was written in Python before it was compiled.

* ``parse(cards, cap)``: the card tokenizer (``_core.pyx`` ``parse_into``) — a
  regular-expression split, a table lookup per token, a rank run read character by
  character; returns the codes or raises the CardError the core raises.
* ``explain_invalid(counts, variant, n)``: the sentence saying why cards form no play
  (``_core.pyx`` ``invalid_text``).
"""

from __future__ import annotations

import re
from typing import Any

from shuangkou.core import CardError, _core, get_variant
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


def explain_invalid(counts: list[int], variant: str, n: int) -> str:
    """A reason a player would understand for cards that form no play."""
    v = get_variant(variant)
    c = list(counts)
    nat = sum(c[:13])
    sj, bj = c[13], c[14]
    ranks = [r for r in range(13) if c[r]]
    if n == 0:
        return "no cards"
    if nat == 0:
        if n == 2:
            return "SJ and BJ are not a pair (a pair of jokers is SJ SJ or BJ BJ)"
        return f"{n} jokers are not a play (three jokers and four jokers are the joker bombs)"
    for name, cnt in (("SJ", sj), ("BJ", bj)):
        if cnt and name not in v.wild_jokers:
            return (f"{name} is not wild in {v.id} and cannot be played together with other "
                    f"cards (only alone, as SJ SJ, or in a joker bomb)")
    w = sj + bj
    if n == 2:
        return "two cards of different ranks are not a pair" + ("" if w else " and there is no wild")
    if n == 3:
        return "three cards must be of one rank to make a triple" + (
            "" if w else " (three distinct ranks and no wild)")
    if n == 4:
        return "four cards must be of one rank to make a bomb"
    if c[12] and len(ranks) > 1:
        if v.chain_wrap == "none":
            return "2 cannot be in a straight, pair chain, triple chain or chain bomb"
        if max(c[:13]) < 4 or not c[11]:
            return ("2 cannot be in a straight, pair chain or triple chain, and a chain bomb "
                    "runs through 2 only together with A")
        return "2 cannot be in a straight, pair chain or triple chain"
    span = max(ranks) - min(ranks) + 1
    if max(c[:13]) > 3 and len(ranks) > 1:
        return (f"cards of several ranks with 4 or more of one rank must form a chain bomb "
                f"(at least {v.chain_min_links} consecutive ranks of 4+ cards each"
                + (", all of the same count" if v.chain_counts == "equal" else "") + ")")
    if span > n:
        return "the ranks are too far apart to form a straight or chain"
    return ("the cards form no straight (5+ consecutive single ranks), pair chain (3+ "
            "consecutive pairs), triple chain (3+ consecutive triples) or bomb")
