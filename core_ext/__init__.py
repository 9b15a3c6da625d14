"""Shuangkou (双扣) rules core: cards, readings, bomb order, legal plays and scoring.

The layers, bottom up: :mod:`shuangkou.core.cards` (card codes, rank names, seats) →
:mod:`shuangkou.core.variants` (rule sets as data) → ``_core`` (readings, bomb order, declarations,
comparison; compiled) → ``_enumerate`` (legal plays; compiled) →
:mod:`shuangkou.core.scoring` (settlement, §10; compiled in ``_settle``, records in
:mod:`shuangkou.core.results`) → :mod:`shuangkou.core.replay` (round validation, §9).

Quick tour::

    >>> from shuangkou import core
    >>> core.classify("45678 BJ", "baibian").primary.describe()
    'straight 456789 (wild as 9)'
    >>> core.beats("3333333", "4444 5555 6666", "fengkuang")
    True

Everything takes a ``variant``: a built-in id (see :func:`list_variants`) or a
:class:`Variant`. Errors are ``ValueError`` subclasses from :mod:`shuangkou.core.errors`.
"""

if __name__ != "shuangkou.core":   # the folder imported by its own name (python in the repo root)
    raise ImportError(f"this folder is the package shuangkou.core; import it by that name, not "
                      f"as {__name__!r} (docs/decisions/engineering.md E1)")

from ._core import (
    BOMB_KINDS,
    KINDS,
    Classification,
    Reading,
    RuleSet,
    beats,
    classify,
    classify_batch,
    compare,
    format_cards,
    parse_cards,
    play_reading,
    rules_for,
    validate_hand,
)
from ._enumerate import LegalPlays, Play, best_bomb, count_plays, legal_plays
from .cards import RANK_CHARS, SEATS, SUIT_CHARS, card_code, card_rank, card_suit
from .declaration import Declaration
from .errors import (
    CardError,
    DeadlineExceeded,
    IllegalPlay,
    InvalidPlay,
    RuleViolation,
    ShuangkouError,
    VariantError,
)
from .generate import generate_replay
from .records import BatchResult, Comparison
from .replay import (
    Action,
    Replay,
    ReplayError,
    ReplayResult,
    parse_replay,
    score_replay,
    score_replay_json,
    summarize_replay,
)
from .round import ActionRecord, Round, Standing, StateKeys
from .scoring import RoundResult, SeatResult, StarSource, score_round, settle
from .suggest import Suggestion, suggest
from .variants import BUILTIN, Variant, get_variant, list_variants, load_variant, load_variants

__all__ = [
    "BOMB_KINDS", "BUILTIN", "KINDS", "RANK_CHARS", "SEATS", "SUIT_CHARS",
    "BatchResult", "CardError", "Classification", "Comparison", "DeadlineExceeded", "Declaration", "IllegalPlay", "InvalidPlay", "LegalPlays", "Play",
    "Reading", "ReplayError", "ReplayResult", "RoundResult", "RuleSet", "RuleViolation", "SeatResult",
    "ShuangkouError", "StarSource", "StateKeys", "Suggestion", "Variant", "VariantError",
    "beats", "best_bomb", "card_code", "card_rank", "card_suit", "classify", "classify_batch", "compare",
    "count_plays", "format_cards", "generate_replay", "get_variant", "legal_plays", "list_variants",
    "load_variant", "load_variants", "parse_cards", "play_reading", "rules_for",
    "score_replay", "score_replay_json", "score_round", "settle", "suggest", "summarize_replay", "validate_hand",
    "Action", "ActionRecord", "Replay", "Round", "Standing", "parse_replay",
]
