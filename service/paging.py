"""Stateless, tamper-checked page tokens for EnumerateLegalPlays (AIP-158).

A token is the offset of the next play plus a MAC over the offset and every request field
that shapes the list (rule set, hand, play to beat and its declaration, filters). Nothing is
kept on the server, so any replica running the same build continues a page: the list order
is the core's deterministic order. The MAC key is fixed per token format, not a secret:
the check catches corrupted tokens and tokens sent back with different request fields (the
offset would then point into another list); forging one only selects an offset of the
caller's own list, which paging would reach anyway.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct
from typing import Any

from .errors import BadInput

__all__ = ["encode_token", "decode_token", "TOKEN_FIELD"]

TOKEN_FIELD = "page_token"
_FORMAT = 1
_KEY = b"shuangkou.v1 EnumerateLegalPlays page token, format 1"
_MAC_BYTES = 12
# Fields that do not change the list: a page may be read at any size, counts are extras.
_FREE_FIELDS = ("page_size", "page_token", "include_counts", "include_best_bomb")


def _fingerprint(request: Any) -> bytes:
    """The request without the fields that do not shape the list, deterministically encoded."""
    shape = type(request)()
    shape.CopyFrom(request)
    for name in _FREE_FIELDS:
        shape.ClearField(name)
    encoded: bytes = shape.SerializeToString(deterministic=True)
    return encoded


def _mac(offset_bytes: bytes, request: Any) -> bytes:
    return hmac.new(_KEY, offset_bytes + _fingerprint(request), hashlib.sha256).digest()[
        :_MAC_BYTES]


def encode_token(offset: int, request: Any) -> str:
    """The token of the page starting at play ``offset`` of ``request``'s list."""
    head = struct.pack(">BQ", _FORMAT, offset)
    return base64.urlsafe_b64encode(head + _mac(head, request)).decode().rstrip("=")


def decode_token(token: str, request: Any) -> int:
    """The offset a token names (0 for ""); INVALID_ARGUMENT if it is not one of ours for
    this request."""
    if not token:
        return 0
    bad = BadInput("page_token is not a token of this request's list (altered, or sent with "
                   "other request fields)", TOKEN_FIELD)
    if len(token) > 64:
        raise bad
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    except (ValueError, TypeError):
        raise bad from None
    if len(raw) != 9 + _MAC_BYTES or raw[0] != _FORMAT:
        raise bad
    head, mac = raw[:9], raw[9:]
    if not hmac.compare_digest(mac, _mac(head, request)):
        raise bad
    return int(struct.unpack(">BQ", head)[1])
