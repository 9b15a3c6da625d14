"""The output records of the batch scorer, shared by every backend (local pool, Dask workers,
Kubernetes shards, the gRPC client in :mod:`shuangkou.service.batch.remote`).

A record is ``{"ok": true, ...ReplayResult.to_dict()}`` or ``{"ok": false, "error":
{"action": n, "reason": "..."}}`` (docs/replays.md). Besides the core it takes only the
wire's text bound from :mod:`shuangkou.service.errors`, so every backend can depend on it
without a cycle.
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass, field
from typing import Any

try:  # orjson writes the same compact UTF-8 JSON about 5x faster than json.dumps
    import orjson
except ImportError:  # pragma: no cover - a declared dependency; json is the fallback
    orjson = None  # type: ignore[assignment]

__all__ = ["Block", "RemoteFailure", "dumps", "error_record", "record_of", "result_record", "score_line",
           "score_lines"]


class RemoteFailure(Exception):
    """Remote scoring cannot go on: no server answers (one line, names the target)."""


def result_record(result: dict[str, Any]) -> dict[str, Any]:
    """The output record of a scored replay: ``ok`` plus the result's ``to_dict()``."""
    return {"ok": True, **result}


def error_record(reason: str, action: int | None = None) -> dict[str, Any]:
    """The output record of a rejected line (the reason bounded as on the wire, so local and
    remote scoring write the same records)."""
    from ..errors import bounded

    error: dict[str, Any] = {"reason": bounded(reason)}
    if action is not None:
        error = {"action": action, **error}
    return {"ok": False, "error": error}


def record_of(line: str, partial_deal: bool = False) -> dict[str, Any]:
    """Score one input line (without its newline) into its record; never raises."""
    from shuangkou.core.errors import ShuangkouError
    from shuangkou.core.replay import ReplayError, score_replay

    text = line.strip()
    if not text:
        return error_record("empty line (expected one replay JSON object)")
    try:
        return result_record(score_replay(text, partial_deal=partial_deal).to_dict())
    except ReplayError as exc:
        return error_record(exc.detail, exc.action)
    except ShuangkouError as exc:
        return error_record(str(exc))
    except Exception as exc:  # noqa: BLE001 - a bug must not stop a batch of 100k
        rec = error_record(f"internal error: {type(exc).__name__}: {exc}")
        rec["error"]["internal"] = True
        return rec


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


def score_line(line: str, partial_deal: bool = False) -> str:
    """Score one JSONL line; returns the output record as one JSON line (no newline)."""
    return dumps(record_of(line, partial_deal))


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


def score_lines(lines: list[str], partial_deal: bool = False) -> Block:
    """Score a chunk of lines (a pool worker's unit of work for stdin)."""
    block = Block()
    block.text = "".join(block.add(record_of(line, partial_deal)) + "\n" for line in lines)
    return block
