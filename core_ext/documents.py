"""Documents from outside: JSON text parsed safely, and outside text quoted within bounds.

A request or a file can hold JSON no parser should have to carry and no reply could quote:
nesting thousands of levels deep, integers of millions of digits, lone surrogate escapes
(``"\\ud800"``: not UTF-8). :func:`load_json` refuses them with one sentence naming the
document, never Python's own text. Errors are :class:`~shuangkou.core.errors.ShuangkouError`
without a field (the caller knows where the document came from).
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ShuangkouError

__all__ = ["load_json", "bounded", "MAX_JSON_DEPTH"]

MAX_JSON_DEPTH = 32   # replays and variants nest 3 deep; deeper documents are hostile


def bounded(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes (quoted input can be arbitrarily long;
    bytes, not characters, so that the size of a reply is known in advance)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    return data[:limit - 3].decode("utf-8", "ignore") + "…"


def load_json(text: str, name: str, *,
              invalid: type[Exception] = ShuangkouError) -> Any:
    """Parse the JSON document ``text`` (called ``name`` in messages).

    Malformed JSON raises ``invalid`` (the caller's own error class, given the message and
    no field); nesting deeper than :data:`MAX_JSON_DEPTH`, integers past Python's
    4,300-digit limit and lone surrogates (as a value or a key) raise ShuangkouError.
    """
    try:
        data = json.loads(text)
    except RecursionError:
        raise ShuangkouError(f"{name} is nested too deeply (at most {MAX_JSON_DEPTH} levels)"
                             ) from None
    except json.JSONDecodeError as exc:
        raise invalid(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                      f"{exc.colno}", None) from None
    except ValueError:   # int() past sys.get_int_max_str_digits()
        raise ShuangkouError(f"{name} holds an integer too long to read") from None
    _check_json(data, name)
    return data


def _check_json(data: Any, name: str) -> None:
    """Depth and text checks over a parsed document, without recursion."""
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise ShuangkouError(f"{name} is nested too deeply (at most {MAX_JSON_DEPTH} "
                                     "levels)")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    _check_text(key, name)
                stack.append((item, depth + 1))
        elif isinstance(value, str):
            _check_text(value, name)


def _check_text(text: str, name: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ShuangkouError(f"{name} holds a lone surrogate escape (\\ud800-\\udfff), which "
                             "is not text") from None
