from ._core import (
    BOMB_KINDS as BOMB_KINDS,
)
from ._core import (
    KINDS as KINDS,
)
from ._core import (
    RANK_CHARS as RANK_CHARS,
)
from ._core import (
    SUIT_CHARS as SUIT_CHARS,
)
from ._core import (
    Classification as Classification,
)
from ._core import (
    Reading as Reading,
)
from ._core import (
    RuleSet as RuleSet,
)
from ._core import (
    beats as beats,
)
from ._core import (
    card_code as card_code,
)
from ._core import (
    card_rank as card_rank,
)
from ._core import (
    card_suit as card_suit,
)
from ._core import (
    classify as classify,
)
from ._core import (
    classify_batch as classify_batch,
)
from ._core import (
    format_cards as format_cards,
)
from ._core import (
    parse_cards as parse_cards,
)
from ._core import (
    play_reading as play_reading,
)
from ._core import (
    rules_for as rules_for,
)
from ._core import (
    validate_hand as validate_hand,
)
from ._enumerate import (
    LegalPlays as LegalPlays,
)
from ._enumerate import (
    Play as Play,
)
from ._enumerate import (
    best_bomb as best_bomb,
)
from ._enumerate import (
    count_plays as count_plays,
)
from ._enumerate import (
    legal_plays as legal_plays,
)
from .errors import (
    CardError as CardError,
)
from .errors import (
    IllegalPlay as IllegalPlay,
)
from .errors import (
    InvalidPlay as InvalidPlay,
)
from .errors import (
    ShuangkouError as ShuangkouError,
)
from .errors import (
    VariantError as VariantError,
)
from .generate import generate_replay as generate_replay
from .replay import (
    ReplayError as ReplayError,
)
from .replay import (
    ReplayResult as ReplayResult,
)
from .replay import (
    score_replay as score_replay,
)
from .replay import (
    summarize_replay as summarize_replay,
)
from .scoring import RoundResult as RoundResult
from .scoring import score_round as score_round
from .variants import (
    BUILTIN as BUILTIN,
)
from .variants import (
    Variant as Variant,
)
from .variants import (
    get_variant as get_variant,
)
from .variants import (
    list_variants as list_variants,
)
from .variants import (
    load_variant as load_variant,
)
from .variants import (
    load_variants as load_variants,
)
