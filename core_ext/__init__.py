"""Shuangkou (双扣) rules core: cards, readings, bomb order, legal plays and scoring.

Quick tour::

    >>> import core_ext
    >>> core_ext.classify("45678 BJ", "baibian").primary.describe()
    'straight 456789 (wild as 9)'
    >>> core_ext.beats("3333 4444 5555", "JJJJJJJ", "baibian")
    False

Everything takes a ``variant``: a built-in id (see :func:`list_variants`) or a
:class:`Variant`. Errors are ``ValueError`` subclasses from :mod:`core_ext.errors`.
"""

from ._core import (
    BOMB_KINDS,
    KINDS,
    RANK_CHARS,
    SUIT_CHARS,
    Classification,
    Reading,
    RuleSet,
    beats,
    card_code,
    card_rank,
    card_suit,
    classify,
    classify_batch,
    format_cards,
    parse_cards,
    play_reading,
    rules_for,
    validate_hand,
)
from .errors import CardError, IllegalPlay, InvalidPlay, ShuangkouError, VariantError
from .variants import BUILTIN, Variant, get_variant, list_variants, load_variant, load_variants

__all__ = [
    "BOMB_KINDS", "BUILTIN", "KINDS", "RANK_CHARS", "SUIT_CHARS",
    "CardError", "Classification", "IllegalPlay", "InvalidPlay", "Reading", "RuleSet",
    "ShuangkouError", "Variant", "VariantError",
    "beats", "card_code", "card_rank", "card_suit", "classify", "classify_batch",
    "format_cards", "get_variant", "list_variants", "load_variant", "load_variants",
    "parse_cards", "play_reading", "rules_for", "validate_hand",
]

# Legal-play enumeration (compiled separately in _enumerate.pyx).
from ._enumerate import LegalPlays, Play, best_bomb, count_plays, legal_plays  # noqa: E402

__all__ += ["LegalPlays", "Play", "best_bomb", "count_plays", "legal_plays"]
