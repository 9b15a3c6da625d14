"""Typed stubs of the serialised round (core_ext/_state.pyx); the public face is
shuangkou.core.Round.to_bytes / from_bytes."""

from typing import Final

from typing_extensions import disjoint_base

from ._core import _VariantLike as VariantLike
from ._round import RoundCore

MAGIC: bytes
MAX_ACTIONS: int
HEAD: int
BODY: int

@disjoint_base
class Layout:
    """A variant's serialised form: its prefix (magic, id length, id), slot sizes, total."""
    prefix: Final[bytes]
    standing_slot: Final[int]
    bomb_slot: Final[int]
    size: Final[int]
    def __init__(self, vid: str, hand_size: int) -> None: ...

def layout(variant: VariantLike) -> Layout: ...
def slot_sizes(hand_size: int) -> tuple[int, int]: ...
def pack(r: RoundCore) -> bytes: ...
def load(r: RoundCore, variant: VariantLike, data: bytes) -> None: ...
