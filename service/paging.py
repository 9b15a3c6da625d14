"""Stateless, tamper-checked page tokens (AIP-158): EnumerateLegalPlays and ListVariants.

A token is the offset of the next item plus a MAC over the offset, every request field that
shapes the list (for plays: rule set, hand, play to beat and its declaration, filters) and
the list's own scope (for rule sets: the ids the server lists). Nothing is kept on the
server, so any replica running the same build continues a page: the list order is the
core's deterministic order, or the server's registered rule sets. The MAC key is fixed per
token format and RPC, not a secret: the check catches corrupted tokens and tokens sent back
with different request fields (the offset would then point into another list); forging one
only selects an offset of the caller's own list, which paging would reach anyway. A token
is accepted only as it was issued: a respelling (whitespace, ``=`` padding, another base64
alphabet) is an altered token.
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
_MAC_BYTES = 12
# Fields that do not change the list: a page may be read at any size, counts are extras.
_FREE_FIELDS = ("page_size", "page_token", "include_counts", "include_best_bomb")


def _key(request: Any) -> bytes:
    """The MAC key of the request's RPC (``EnumerateLegalPlaysRequest`` -> its RPC's name)."""
    rpc = type(request).DESCRIPTOR.name.removesuffix("Request")
    return f"shuangkou.v1 {rpc} page token, format {_FORMAT}".encode()


def _fingerprint(request: Any) -> bytes:
    """The request without the fields that do not shape the list, deterministically encoded."""
    shape = type(request)()
    shape.CopyFrom(request)
    for name in _FREE_FIELDS:
        if name in shape.DESCRIPTOR.fields_by_name:
            shape.ClearField(name)
    encoded: bytes = shape.SerializeToString(deterministic=True)
    return encoded


def _mac(offset_bytes: bytes, request: Any, scope: bytes) -> bytes:
    return hmac.new(_key(request), offset_bytes + _fingerprint(request) + scope,
                    hashlib.sha256).digest()[:_MAC_BYTES]


def _spelled(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def encode_token(offset: int, request: Any, scope: bytes = b"") -> str:
    """The token of the page starting at item ``offset`` of ``request``'s list (``scope``:
    what else identifies the list, e.g. the ids of the rule sets listed)."""
    head = struct.pack(">BQ", _FORMAT, offset)
    return _spelled(head + _mac(head, request, scope))


def decode_token(token: str, request: Any, scope: bytes = b"") -> int:
    """The offset a token names (0 for ""); INVALID_ARGUMENT if it is not one of ours for
    this request, exactly as issued."""
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
    if len(raw) != 9 + _MAC_BYTES or raw[0] != _FORMAT or _spelled(raw) != token:
        raise bad
    head, mac = raw[:9], raw[9:]
    if not hmac.compare_digest(mac, _mac(head, request, scope)):
        raise bad
    return int(struct.unpack(">BQ", head)[1])
