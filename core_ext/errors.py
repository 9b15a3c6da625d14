"""The exceptions of the rules core. All are ``ValueError``s, so callers may catch broadly."""

from __future__ import annotations

__all__ = ["ShuangkouError", "CardError", "InvalidPlay", "IllegalPlay", "VariantError",
           "DeadlineExceeded"]


class ShuangkouError(ValueError):
    """Base of every rules-core error. ``field`` names the offending input where known."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class CardError(ShuangkouError):
    """Card text is malformed, or a hand/play is impossible in the variant's deck."""


class InvalidPlay(ShuangkouError):
    """The cards form no valid play under the variant (no reading exists)."""


class IllegalPlay(ShuangkouError):
    """A valid play that is not allowed here: it does not beat, or the declared reading is absent."""


class VariantError(ShuangkouError):
    """A variant is unknown, or a custom variant is malformed."""


class DeadlineExceeded(ShuangkouError, TimeoutError):
    """Work given a time budget (``timeout=``) ran out of it; nothing partial is returned."""
