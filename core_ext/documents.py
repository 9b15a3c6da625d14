"""Documents from outside: JSON and TOML text parsed safely, files read within bounds, and
outside text quoted within bounds.

A request or a file can hold what no parser should have to carry and no reply could quote:
nesting thousands of levels deep, integers of millions of digits, lone surrogate escapes
(``"\\ud800"``: not UTF-8), bytes that are not UTF-8. :func:`load_json`, :func:`load_toml`
and :func:`read_document` refuse them with one sentence naming the document and where in it
(the field, or the line and column when the parser itself gave up), never Python's own text.
Errors are :class:`~shuangkou.core.errors.ShuangkouError` without a field (the caller knows
where the document came from).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from .errors import ShuangkouError

__all__ = ["load_json", "load_toml", "read_document", "bounded", "MAX_JSON_DEPTH",
           "MAX_FILE_BYTES"]

MAX_JSON_DEPTH = 32   # replays and variants nest 3 deep; deeper documents are hostile
MAX_FILE_BYTES = 1 << 20   # a document file (house variants: ~1.5 KB a rule set)
# The last key before a position: a JSON member name or a TOML "key =" (error path only).
_KEY = re.compile(r'"((?:[^"\\\n]|\\.){0,80})"\s*:|^[ \t]*([A-Za-z0-9_.\-"\' ]{1,80}?)[ \t]*=',
                  re.M)
_LONG_INT = re.compile(r"\d{4301,}")
_LOOKBACK = 65536      # characters searched back for the key (hostile documents are large)


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
        raise ShuangkouError(_too_deep(name, text, _deep_at(text))) from None
    except json.JSONDecodeError as exc:
        raise invalid(f"{name} is not valid JSON: {exc.msg} at line {exc.lineno} column "
                      f"{exc.colno}", None) from None
    except ValueError:   # int() past sys.get_int_max_str_digits()
        raise ShuangkouError(_too_long(name, text)) from None
    _check_json(data, name)
    return data


def load_toml(text: str, name: str, *,
              invalid: type[Exception] = ShuangkouError) -> Any:
    """Parse the TOML document ``text`` with the checks of :func:`load_json` (TOML has no
    surrogates, but nests and holds integers just as deep and long)."""
    import tomllib  # only here: what reads no TOML (the batch scorer) starts without it

    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise ShuangkouError(_too_deep(name, text, _deep_at(text))) from None
    except tomllib.TOMLDecodeError as exc:
        raise invalid(f"{name} is not valid TOML: {exc}", None) from None
    except ValueError:
        raise ShuangkouError(_too_long(name, text)) from None
    _check_json(data, name)
    return data


def read_document(path: str | Path, name: str, *,
                  invalid: type[Exception] = ShuangkouError) -> Any:
    """The document in the file ``path`` (TOML if it ends in ``.toml``, else JSON), read
    within :data:`MAX_FILE_BYTES` and required to be UTF-8 text; errors as the loaders'."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise invalid(f"cannot read {name}: {exc.strerror}", None) from None
    if len(raw) > MAX_FILE_BYTES:
        raise ShuangkouError(f"{name} is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, start = raw.count(b"\n", 0, exc.start) + 1, raw.rfind(b"\n", 0, exc.start)
        raise ShuangkouError(f"{name} is not UTF-8 text: byte 0x{raw[exc.start]:02x} at line "
                             f"{line} column {exc.start - start}") from None
    if path.suffix == ".toml":
        return load_toml(text, name, invalid=invalid)
    return load_json(text, name, invalid=invalid)


def _where(text: str, pos: int) -> str:
    """Where ``pos`` is in ``text``: its line and column, and the field it belongs to (the
    last key before it) when one is found (error path only)."""
    line = text.count("\n", 0, pos) + 1
    column = pos - text.rfind("\n", 0, pos)
    key = None
    for m in _KEY.finditer(text, max(0, pos - _LOOKBACK), pos):
        key = m.group(1) if m.group(1) is not None else m.group(2).strip()
    field = f"field {bounded(key, 80)!r} at " if key else ""
    return f"{field}line {line} column {column}"


def _deep_at(text: str) -> int:
    """Where brackets first nest deeper than :data:`MAX_JSON_DEPTH` (strings skipped), or -1
    (error path only; searched within the first MAX_FILE_BYTES characters)."""
    depth = 0
    for m in re.finditer(r'"(?:[^"\\]|\\.)*"|\'[^\'\n]*\'|[\[\]{}]', text[:MAX_FILE_BYTES]):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return m.start()
        elif c in "]}":
            depth -= 1
    return -1


def _too_deep(name: str, text: str, pos: int) -> str:
    where = f" ({_where(text, pos)})" if pos >= 0 else ""
    return f"{name} is nested too deeply{where}: at most {MAX_JSON_DEPTH} levels"


def _too_long(name: str, text: str) -> str:
    m = _LONG_INT.search(text)
    where = f" ({_where(text, m.start())})" if m else ""
    return f"{name} holds an integer too long to read{where}"


def _check_json(data: Any, name: str) -> None:
    """Depth and text checks over a parsed document, without recursion; a refusal names the
    path of the offending value (``variants.h.multiplier[0]``)."""
    stack: list[tuple[Any, int, Any]] = [(data, 1, None)]     # value, depth, its path (lazy)
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_JSON_DEPTH:
                raise ShuangkouError(f"{name}: {_path(path)} is nested too deeply: at most "
                                     f"{MAX_JSON_DEPTH} levels")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    _check_text(key, name, path)
                stack.append((item, depth + 1, (path, key)))
        elif isinstance(value, str):
            _check_text(value, name, path)


def _path(path: Any) -> str:
    """``(parent, key)`` links as a field path: ``variants.h.multiplier[0][1]``."""
    keys = []
    while path is not None:
        path, key = path
        keys.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    text = "".join(reversed(keys)).lstrip(".")
    return f"field {bounded(text.encode('utf-8', 'backslashreplace').decode(), 120)!r}" \
        if text else "the document"


def _check_text(text: str, name: str, path: Any) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ShuangkouError(f"{name}: {_path(path)} holds a lone surrogate escape "
                             "(\\ud800-\\udfff), which is not text") from None
