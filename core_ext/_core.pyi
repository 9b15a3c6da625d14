"""Typed stubs of the compiled rules core (core_ext/_core.pyx)."""

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Literal

from typing_extensions import disjoint_base

# The card vocabulary lives in shuangkou.core.cards; _core imports these names from there.
from .cards import CARD_BJ as CARD_BJ
from .cards import CARD_SJ as CARD_SJ
from .cards import MAX_CODE as MAX_CODE
from .cards import RANK_CHARS as RANK_CHARS
from .cards import SUIT_CHARS as SUIT_CHARS
from .declaration import Declaration
from .records import BatchResult, Comparison
from .variants import Variant

_KindName = Literal["single", "pair", "triple", "straight", "pair_chain", "triple_chain",
                   "bomb", "joker_bomb_3", "joker_bomb_4", "chain_bomb"]
_CardsLike = str | Iterable[str | int] | bytes | bytearray | memoryview
_VariantLike = str | Variant | "RuleSet"
_PlayLike = _CardsLike | "Reading" | "Classification"
_DeclarationLike = str | Declaration | tuple[Any, ...]

KINDS: tuple[_KindName, ...]
BOMB_KINDS: frozenset[str]
# the branches of variant fields, numbered as variants.py lists their values (cpdef enums)
F_STAR: int
F_TIER: int
F_TOP: int
F_NEG_CARDS: int
F_CARDS: int
F_NEG_Y: int
F_Y: int
F_WRAP_CLASS: int
F_RANK_LIST: int
PHASE_COMMON: int
PHASE_LARGEST: int
PHASE_SMALLEST: int
WRAP_NONE: int
WRAP_THROUGH_ACE: int
WRAP_NATURAL_TWO: int
RULES_CACHE_SIZE: int
RULES_CACHE_BYTES: int
RULES_ENTRY_BYTES: int
RULES_ROW_BYTES: int

def rules_bytes(v: Variant) -> int: ...
def rules_cache_bytes() -> int: ...

def parse_cards(cards: _CardsLike, variant: _VariantLike | None = None) -> list[int]:
    """Parse text, tokens or codes into card codes; with a variant, check its deck.

    :raises CardError: naming the offending card and why.
    """

def validate_hand(cards: _CardsLike, variant: _VariantLike) -> list[int]:
    """Parse a hand and check it is possible in the variant's deck."""

def format_cards(codes: Iterable[int | str]) -> list[str]:
    """Card codes as text tokens (``["7S", "7", "BJ"]``)."""

@disjoint_base
class RuleSet:
    """A variant compiled to the form the C core reads (cached per variant)."""
    variant: Variant
    id: str
    def __init__(self, variant: str | Variant) -> None: ...
    settlement: Any   # shuangkou.core._settle's tables, built on first use

def rules_for(variant: _VariantLike) -> RuleSet:
    """The compiled RuleSet of a variant id or Variant (cached)."""

@disjoint_base
class Reading:
    """One reading of a play (§7): type, strength and what the wilds stand for."""
    rules: RuleSet
    @property
    def kind(self) -> _KindName: ...
    @property
    def variant(self) -> str: ...
    @property
    def cards(self) -> int:
        """Number of cards."""
    @property
    def top(self) -> int:
        """Top rank position (last rank in chain order; 13 = SJ, 14 = BJ)."""
    @property
    def top_rank(self) -> str: ...
    @property
    def length(self) -> int:
        """Ranks in the pattern (links of a chain; 1 for sets of one rank)."""
    @property
    def star(self) -> int:
        """Bomb star (0 for ordinary plays)."""
    @property
    def phase(self) -> int:
        """X of a bomb (N for an N-bomb); 0 otherwise."""
    @property
    def links(self) -> int:
        """Y of a chain bomb (1 for an N-bomb; 0 otherwise)."""
    @property
    def regular(self) -> bool: ...
    @property
    def wrap_class(self) -> int:
        """0: A23…, 1: …KA2, 2: no wrap."""
    @property
    def is_bomb(self) -> bool: ...
    @property
    def ranks(self) -> tuple[tuple[int, int], ...]:
        """``((rank, count), ...)`` in chain order."""
    @property
    def wilds(self) -> tuple[int, ...]:
        """Rank positions the wild jokers stand for."""
    @property
    def key(self) -> tuple[int, ...]:
        """The §8 bomb key (empty for ordinary plays)."""
    @property
    def packed(self) -> bytes:
        """The reading's C form as bytes: equal for readings of one rule set that are the
        same in every field (a cache key)."""
    @property
    def declaration(self) -> Declaration:
        """The Declaration naming exactly this reading among its cards' readings."""
    def beats(self, other: Reading) -> bool: ...
    def describe(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...

@disjoint_base
class Classification:
    """Every reading of a play (§7), in rule-2 order; ``primary`` is the first."""
    rules: RuleSet
    cards: tuple[int, ...]
    @property
    def readings(self) -> tuple[Reading, ...]: ...
    @property
    def primary(self) -> Reading: ...
    @property
    def kind(self) -> _KindName: ...
    @property
    def star(self) -> int: ...
    @property
    def variant(self) -> str: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[Reading]: ...
    def reading(self, kind: str | Declaration | None = None, top: int | str | None = None,
                star: int | None = None,
                wilds: tuple[int | str, ...] | None = None) -> Reading | None:
        """The strongest reading that matches (unset parts match any), or None."""
    def to_dict(self) -> dict[str, Any]: ...

def classify(cards: _CardsLike, variant: _VariantLike = "baibian",
             declare: _DeclarationLike | None = None) -> Classification:
    """Every reading of a set of cards under a variant (§7).

    :raises CardError: malformed or impossible cards.
    :raises InvalidPlay: no reading exists (the message says why).
    :raises IllegalPlay: ``declare`` names no reading of the cards.
    """

def beats(b: _PlayLike, a: _PlayLike, variant: _VariantLike = "baibian") -> bool:
    """Does ``b`` played on top of ``a`` beat it (any reading of b; a's standing reading)?"""

def play_reading(cards: _CardsLike, variant: _VariantLike = "baibian",
                 to_beat: _PlayLike | None = None, declare: _DeclarationLike | None = None,
                 declare_top: int | str | None = None) -> Reading:
    """The reading that stands on the table after playing ``cards`` (§7 rules 4–6).

    :raises IllegalPlay: it does not beat ``to_beat`` or the declared reading is absent.
    """

def compare(play: _PlayLike, current: _PlayLike,
            variant: _VariantLike = "baibian", *, declare: _DeclarationLike | None = None,
            current_declare: _DeclarationLike | None = None) -> Comparison:
    """Does ``play`` beat ``current`` (§7 rules 4–6, §8), and in which reading?

    :raises IllegalPlay: a declared reading does not exist.
    """

def classify_batch(codes: bytes | bytearray | memoryview, lengths: Sequence[int] | array[int],
                   variant: _VariantLike = "baibian", *,
                   timeout: float | None = None) -> BatchResult:
    """Classify plays packed back to back; columns kind/top/star/cards/readings (255 = invalid)
    and, per invalid play, the exception saying why. With ``timeout`` (seconds) the batch
    stops once it runs out: the result then covers only the plays done (``plays``).

    :raises InvalidPlay: ``timeout`` is not a number of seconds.
    """

def explain_invalid(counts: Sequence[int], rs: RuleSet, n: int) -> str: ...
