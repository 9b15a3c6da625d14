"""Typed stubs of the serialised round (core_ext/_state.pyx); the public face is
shuangkou.core.Round.to_bytes / from_bytes."""

from collections.abc import Mapping
from typing import Final

from typing_extensions import disjoint_base

from ._core import _VariantLike as VariantLike
from ._round import RoundCore

MAGIC: bytes
MAX_ACTIONS: int
HEAD: int
BODY: int

LAYOUT_CACHE_SIZE: int
BOMB_CACHE_BYTES: int
BOMB_ENTRY_BYTES: int
BOMB_CARD_BYTES: int
MIN_KEY_BYTES: int

@disjoint_base
class Layout:
    """A variant's serialised form: its prefix (magic, rules fingerprint), slot sizes, total."""
    prefix: Final[bytes]
    standing_slot: Final[int]
    bomb_slot: Final[int]
    size: Final[int]
    def __init__(self, fingerprint: bytes, hand_size: int) -> None: ...

@disjoint_base
class StateKeys:
    """The keys that seal round states (HMAC-SHA256), by key id, and the one that signs."""
    signing_id: Final[str]
    def __init__(self, keys: Mapping[str, bytes], signing_id: str) -> None: ...
    @property
    def ids(self) -> tuple[str, ...]: ...

def layout(variant: VariantLike) -> Layout: ...
def bomb_cache_bytes() -> int: ...
def slot_sizes(hand_size: int) -> tuple[int, int]: ...
def pack(r: RoundCore, keys: StateKeys | None = None) -> bytes: ...
def load(r: RoundCore, variant: VariantLike, data: bytes, keys: StateKeys | None = None) -> None: ...
