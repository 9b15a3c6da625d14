"""The exceptions of the rules core. All are ``ValueError``s, so callers may catch broadly.

Every class carries ``reason``, a stable machine-readable code (``google.rpc.ErrorInfo.reason``
on the wire); :class:`RuleViolation` instances carry their own, one per rule of the round
(``NOT_YOUR_TURN``, ``CARDS_NOT_HELD`` ...).
"""

from __future__ import annotations

from typing import ClassVar

__all__ = ["ShuangkouError", "CardError", "InvalidPlay", "IllegalPlay", "VariantError",
           "DeadlineExceeded", "RuleViolation", "ReplayError"]


class ShuangkouError(ValueError):
    """Base of every rules-core error. ``field`` names the offending input where known."""

    reason: str = "BAD_REQUEST"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class CardError(ShuangkouError):
    """Card text is malformed, or a hand/play is impossible in the variant's deck."""

    reason = "INVALID_CARDS"


class InvalidPlay(ShuangkouError):
    """The cards form no valid play under the variant (no reading exists)."""

    reason = "INVALID_PLAY"


class IllegalPlay(ShuangkouError):
    """A valid play that is not allowed here: it does not beat, or the declared reading is absent."""

    reason = "ILLEGAL_PLAY"


class VariantError(ShuangkouError):
    """A variant is unknown, or a custom variant is malformed."""

    reason = "INVALID_VARIANT"


class DeadlineExceeded(ShuangkouError, TimeoutError):
    """Work given a time budget (``timeout=``) ran out of it; nothing partial is returned."""

    reason = "DEADLINE_EXCEEDED"


class RuleViolation(IllegalPlay):
    """An action that the round in its current state does not allow (RULES.md §9).

    Unlike the other errors the input is well formed; the state forbids it, so the wire
    status is ``FAILED_PRECONDITION``. ``reason`` is one of :data:`RULE_REASONS`.
    """

    RULE_REASONS: ClassVar[tuple[str, ...]] = (
        "NOT_YOUR_TURN",      # the seat is not the one to act
        "CARDS_NOT_HELD",     # the play uses cards the seat does not hold
        "DOES_NOT_BEAT",      # no reading (or not the declared one) beats the standing play
        "LEADER_MUST_PLAY",   # the seat leads the trick and tried to pass
        "ROUND_OVER",         # the round has ended
        "SEAT_FINISHED",      # the seat has no cards left (e.g. it tries to escape)
        "NO_SUCH_READING",    # the declaration names no reading of the cards
        "ESCAPE_NOT_ALLOWED",  # the variant defines no escape settlement
    )

    def __init__(self, message: str, reason: str, field: str | None = None) -> None:
        if reason not in self.RULE_REASONS:
            raise ValueError(f"unknown rule reason {reason!r}")
        super().__init__(message, field)
        self.reason = reason


class ReplayError(IllegalPlay):
    """A replay that cannot have happened under the rules (docs/replays.md).

    ``action`` is the 0-based index of the offending action in ``actions`` (None when the
    replay is malformed as a whole); ``detail`` says why, naming the seat and cards (the
    message without the action prefix).
    """

    reason = "INVALID_REPLAY"

    def __init__(self, detail: str, action: int | None = None, field: str | None = None) -> None:
        where = f"action {action}: " if action is not None else ""
        super().__init__(where + detail,
                         field or (f"actions[{action}]" if action is not None else None))
        self.action = action
        self.detail = detail
