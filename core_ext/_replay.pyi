"""Typed stubs of replay-document reading (core_ext/_replay.pyx); the public face is
core_ext/replay.py."""

from typing import Any

from ._round import RoundCore
from .round_records import Action

ACTION_FIELDS: frozenset[str]

def deal_codes(raw: Any, hand_size: int, decks: int, lowest: int,
               jokers: int) -> list[list[int]] | None: ...
def read_actions(actions: list[Any]) -> tuple[Action, ...]: ...
def fold(r: RoundCore, actions: list[Any]) -> None: ...
