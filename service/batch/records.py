"""The output records of the batch scorer, shared by every backend (local pool, Dask workers,
Kubernetes shards, the gRPC client in :mod:`shuangkou.service.batch.remote`).

A record is ``{"ok": true, ...ReplayResult.to_dict()}`` (its JSON text written by the
settlement itself, ``score_replay_json``) or ``{"ok": false, "error":
{"action": n, "reason": "..."}}`` (docs/replays.md). It takes nothing but the core and the lines'
types, so every backend can depend on it without a cycle (and the CLI scores without
importing grpc).
"""

from __future__ import annotations

import collections
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..inputs import Line, LongLine

try:  # orjson writes the same compact UTF-8 JSON about 5x faster than json.dumps
    import orjson
except ImportError:  # pragma: no cover - a declared dependency; json is the fallback
    orjson = None  # type: ignore[assignment]

__all__ = ["EMPTY_LINE", "Block", "RemoteFailure", "dumps", "error_record", "failure_record",
           "line_error", "record_of", "result_record", "score_line", "score_lines"]


class RemoteFailure(Exception):
    """Remote scoring cannot go on: no server answers (one line, names the target)."""


def result_record(result: dict[str, Any]) -> dict[str, Any]:
    """The output record of a scored replay: ``ok`` plus the result's ``to_dict()``."""
    return {"ok": True, **result}


# The wire's bound on a message (service/errors.py MAX_MESSAGE_CHARS; a test checks they
# agree), repeated here so that scoring a file never imports the wire's modules (grpc: a
# tenth of a second of start-up for the first rejected line).
REASON_BYTES = 300
EMPTY_LINE = "empty line (expected one replay JSON object)"


def error_record(reason: str, action: int | None = None) -> dict[str, Any]:
    """The output record of a rejected line (the reason bounded as on the wire, so local and
    remote scoring write the same records)."""
    from shuangkou.core.documents import bounded

    error: dict[str, Any] = {"reason": bounded(reason, REASON_BYTES)}
    if action is not None:
        error = {"action": action, **error}
    return {"ok": False, "error": error}


def line_error(line: Line) -> dict[str, Any] | None:
    """The record of a line that holds no replay to read, whatever the job: an empty line, or
    one over the maximum line size (read past, never held); None for any other line."""
    if isinstance(line, LongLine):
        return error_record(line.reason)
    if not line.strip():
        return error_record(EMPTY_LINE)
    return None


def _outcome(line: Line, partial_deal: bool, as_json: bool) -> Any:
    """One input line (without its newline) scored: its ``ReplayResult`` (with ``as_json``
    the record's JSON text, ``{"ok":true,...}``), or the error record (a dict) of a line
    that does not score; never raises."""
    replay = (_core_names or _load_core())[2]
    if (refused := line_error(line)) is not None:
        return refused
    assert isinstance(line, str)
    text = line.strip()
    try:
        if as_json:
            return '{"ok":true,' + replay.score_replay_json(text, partial_deal=partial_deal)[1:]
        return replay.score_replay(text, partial_deal=partial_deal)
    except Exception as exc:  # noqa: BLE001 - a bug must not stop a batch of 100k
        return failure_record(exc)


def failure_record(exc: Exception) -> dict[str, Any]:
    """The error record of a line whose scoring (or review) raised ``exc``: a replay's
    error at its action, a rules error as it reads, anything else as an internal error."""
    ShuangkouError, ReplayError, _ = _core_names or _load_core()
    if isinstance(exc, ReplayError):
        return error_record(exc.detail, exc.action)
    if isinstance(exc, ShuangkouError):
        return error_record(str(exc))
    rec = error_record(f"internal error: {type(exc).__name__}: {exc}")
    rec["error"]["internal"] = True
    return rec


def record_of(line: Line, partial_deal: bool = False) -> dict[str, Any]:
    """Score one input line (without its newline) into its record; never raises."""
    got = _outcome(line, partial_deal, False)
    return got if isinstance(got, dict) else result_record(got.to_dict())


def _kind(text: str) -> str:
    """The kind of win of a scored record's JSON text: its first ``"kind":"`` is the key
    (a JSON string holds no unescaped quote, so no variant id can contain that text)."""
    start = text.index('"kind":"') + 8
    return text[start:text.index('"', start)]


_core_names: tuple[Any, Any, Any] | None = None


def _load_core() -> tuple[Any, Any, Any]:
    """The core's names record_of needs, imported on the first line (the CLI starts without
    the core; a per-line ``import`` statement costs a dict lookup and a call each time)."""
    global _core_names
    from shuangkou.core import replay
    from shuangkou.core.errors import ShuangkouError

    _core_names = (ShuangkouError, replay.ReplayError, replay)
    return _core_names


def _json_dumps(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def dumps(record: dict[str, Any]) -> str:
    """One record as compact JSON text (UTF-8, non-ASCII kept), without a newline.

    orjson and ``json.dumps(ensure_ascii=False, separators=(",", ":"))`` give the same text
    for records (ints, strings, lists, dicts, None, bools); json takes the rare values orjson
    refuses (integers beyond 64 bits, lone surrogates echoed from the input).
    """
    if orjson is not None:
        try:
            return orjson.dumps(record).decode("utf-8")
        except (TypeError, orjson.JSONEncodeError):
            pass
    return _json_dumps(record)


def score_line(line: Line, partial_deal: bool = False) -> str:
    """Score one JSONL line; returns the output record as one JSON line (no newline)."""
    got = _outcome(line, partial_deal, True)
    return dumps(got) if isinstance(got, dict) else got


@dataclass
class Block:
    """Records of a chunk of input lines, joined, with the counts the summary needs."""

    text: str = ""            # one record per line, each ending in a newline
    lines: int = 0
    ok: int = 0
    internal: int = 0
    kinds: collections.Counter[str] = field(default_factory=collections.Counter)

    def add(self, record: dict[str, Any]) -> str:
        """Count ``record``; returns its JSON text."""
        self.lines += 1
        if record["ok"]:
            self.ok += 1
            self.kinds[record["kind"]] += 1
        elif record["error"].get("internal"):
            self.internal += 1
        return dumps(record)

    def score(self, line: Line, partial_deal: bool = False) -> str:
        """Score one input line and count its record; returns the record's JSON text."""
        got = _outcome(line, partial_deal, True)
        if isinstance(got, dict):
            return self.add(got)
        text: str = got
        self.lines += 1
        self.ok += 1
        self.kinds[_kind(text)] += 1
        return text


def score_lines(lines: Iterable[Line], partial_deal: bool = False) -> Block:
    """Score a chunk of lines (a pool worker's unit of work)."""
    block = Block()
    block.text = "".join([block.score(line, partial_deal) + "\n" for line in lines])
    return block
