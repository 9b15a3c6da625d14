"""The gRPC side of the one-off commands (``shuangkou classify --server ...``): the one module
that builds request messages and reads responses for :mod:`shuangkou.service.commands`.

Everything here turns messages into the plain dicts :mod:`shuangkou.service.commands` prints, the same
dicts its local path builds from the core, so both print identical output. Request field
names live only here (the rule set, the Cards messages, declarations), so a change to the
protos is a change to this file alone. The calls go through :class:`shuangkou.client.ShuangkouClient`
(its deadlines, retries and channel options: :mod:`shuangkou.client.channels`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from shuangkou.client import Rejected, ServiceError, ShuangkouClient
from shuangkou.core.variants import Variant
from shuangkou.v1 import (
    cards_pb2,
    readings_pb2,
    scoring_pb2,
    service_pb2,
    variants_pb2,
)

from .api.convert import KIND_BY_NAME, KIND_NAMES, variant_document
from .api.results import result_to_dict

if TYPE_CHECKING:
    from google.protobuf.message import Message

    from shuangkou.core._core import _KindName as KindName

__all__ = ["RemoteRules", "ServerError", "check_target", "reading_dict", "rule_set_message",
           "server_failure", "summary_message"]

Q = TypeVar("Q", bound="Message")
A = TypeVar("A", bound="Message")


# ----------------------------------------------------------------------------- --server

def check_target(target: str) -> str:
    """``--server TARGET`` as gRPC dials it (every command's ``--server``: one-off
    questions, ``score-replays``, ``play``); ValueError, saying what to give, for a URL
    (gRPC reads ``http://host:port`` as a host name and fails with "Misformatted domain
    name")."""
    from urllib.parse import urlsplit

    scheme, sep, _ = target.partition("://")
    if not sep or scheme.lower() not in ("http", "https", "grpc", "grpcs"):
        return target
    grpc_port, http_port = _default_ports()
    url = urlsplit(target)
    host = url.hostname or "localhost"
    port = url.port or (443 if url.scheme.lower() in ("https", "grpcs") else 80)
    hint = (f" ({port} is the HTTP port's default; the gRPC port's is {grpc_port})"
            if port == http_port else "")
    raise ValueError(f"--server {target}: give the gRPC port as HOST:PORT, not a URL: "
                     f"--server {host}:{port}{hint}")


def server_failure(target: str, code: str, details: str) -> str:
    """One line for a server that failed a call: ``server TARGET: CODE: details``, and what
    to check when gRPC's own words say it (an HTTP/1.1 server answered: the HTTP port)."""
    line = f"server {target}: {code}: {details}"
    http1 = [t for t in target.split(",") if "http1.x server" in details or _answers_http1(t)]
    if "UNAVAILABLE" in code and http1:
        grpc_port, http_port = _default_ports()
        line += (f" -- {http1[0]} answers HTTP/1.1, not gRPC: is it the HTTP port? --server "
                 f"takes the gRPC port ({grpc_port} by default; HTTP is {http_port})")
    return line


def _answers_http1(target: str, timeout: float = 1.0) -> bool:
    """Whether ``host:port`` answers a plain HTTP/1.1 request as an HTTP/1.1 server does
    (gRPC's own error says so only when its last attempt reached that address: a name
    that resolves to ::1 and 127.0.0.1 often ends on the other one)."""
    import socket

    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or "/" in host:
        return False
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout) as conn:
            conn.settimeout(timeout)
            conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            return conn.recv(8).startswith(b"HTTP/1.")
    except (OSError, ValueError):
        return False


def _default_ports() -> tuple[int, int]:
    """The gRPC and HTTP ports' defaults (service/defaults.toml)."""
    from .config import defaults

    d = defaults()
    return int(d["port"]), int(d["http_port"])


class ServerError(Exception):
    """A failed call: ``message`` is the server's one-line error, ``usage`` is False for bad
    input (exit 1) and True when the server could not be reached or failed (exit 2)."""

    def __init__(self, message: str, *, usage: bool) -> None:
        super().__init__(message)
        self.usage = usage


def reading_dict(kind: str, text: str, cards: int, top: int, top_rank: str, star: int,
                 is_bomb: bool) -> dict[str, Any]:
    """A reading as the commands print it (from a core Reading or a Reading message)."""
    return {"kind": kind, "text": text, "cards": cards, "top": top, "top_rank": top_rank,
            "star": star, "is_bomb": is_bomb}


def _reading(msg: readings_pb2.Reading) -> dict[str, Any]:
    return reading_dict(KIND_NAMES[msg.kind], msg.text, msg.card_count, msg.top, msg.top_rank,
                        msg.star, msg.is_bomb)


def _card_texts(codes: Sequence[int]) -> list[str]:
    from shuangkou import core

    return core.format_cards(list(codes))


def _rule_set(variant: str | Variant) -> variants_pb2.RuleSet:
    """The ``RuleSet`` naming a rule set: a built-in/registered id, or a house variant inline."""
    if isinstance(variant, str):
        return variants_pb2.RuleSet(id=variant)
    return variants_pb2.RuleSet(custom_json=json.dumps(variant_document(variant)))


rule_set_message = _rule_set     # the public name (``shuangkou play --server``)


def _declare(kind: KindName | None, top: int | None) -> readings_pb2.Declaration | None:
    if kind is None:
        return None
    declaration = readings_pb2.Declaration(kind=KIND_BY_NAME[kind])
    if top is not None:
        declaration.top = top
    return declaration


def _cards(text: str) -> cards_pb2.Cards:
    return cards_pb2.Cards(cards_text=text)


class RemoteRules:
    """The rules questions of :class:`shuangkou.service.commands.LocalRules`, asked of a server."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.client = ShuangkouClient(target)

    def close(self) -> None:
        self.client.close()

    def _call(self, method: Callable[[Q], A], request: Q) -> A:
        try:
            return method(request)
        except ServiceError as exc:
            details = exc.message or exc.code.name
            if isinstance(exc, Rejected):      # the input is at fault: exit 1
                raise ServerError(details, usage=False) from None
            raise ServerError(server_failure(self.target, exc.code.name, details),
                              usage=True) from None

    def classify(self, cards: str, variant: str | Variant, declare: tuple[KindName | None, int | None]
                 ) -> dict[str, Any]:
        reply = self._call(self.client.classify_play, service_pb2.ClassifyPlayRequest(
            play=_cards(cards), declaration=_declare(*declare), rule_set=_rule_set(variant)))
        return {"cards": _card_texts(reply.cards), "reading": _reading(reply.reading),
                "readings": [_reading(r) for r in reply.readings]}

    def compare(self, current: str, play: str, variant: str | Variant,
                current_declare: tuple[KindName | None, int | None],
                declare: tuple[KindName | None, int | None]) -> dict[str, Any]:
        reply = self._call(self.client.compare_plays, service_pb2.ComparePlaysRequest(
            current=_cards(current), play=_cards(play),
            current_declaration=_declare(*current_declare), declaration=_declare(*declare),
            rule_set=_rule_set(variant)))
        return {"beats": reply.beats, "current": _reading(reply.current),
                "play": _reading(reply.play)}

    def plays(self, hand: str, variant: str | Variant, to_beat: str | None, *,
              kinds: Sequence[KindName], bombs_only: bool, max_cards: int | None, limit: int,
              counts: bool) -> dict[str, Any]:
        reply = self._call(self.client.enumerate_legal_plays, service_pb2.EnumerateLegalPlaysRequest(
            hand=_cards(hand), to_beat=_cards(to_beat) if to_beat else None,
            kinds=[KIND_BY_NAME[k] for k in kinds], bombs_only=bombs_only,
            max_cards=max_cards or 0, page_size=limit, include_counts=counts,
            rule_set=_rule_set(variant)))
        result: dict[str, Any] = {
            "plays": [{"cards": _card_texts(p.cards), "reading": _reading(p.reading)}
                      for p in reply.plays],
            "truncated": bool(reply.next_page_token)}
        if counts:
            result["counts"] = {KIND_NAMES[c.kind]: c.count for c in reply.counts}
        return result

    def score_replay(self, document: str, variant: str | Variant | None) -> dict[str, Any]:
        request = service_pb2.ScoreRoundRequest(
            replay_json=document,
            rule_set=_rule_set(variant) if variant is not None else None)
        return result_to_dict(self._call(self.client.score_round, request).result)

    def score_summary(self, summary: dict[str, Any], variant: str | Variant) -> dict[str, Any]:
        request = service_pb2.ScoreRoundRequest(summary=summary_message(summary),
                                                rule_set=_rule_set(variant))
        return result_to_dict(self._call(self.client.score_round, request).result)

    def variants(self) -> list[dict[str, Any]]:
        reply = self._call(self.client.list_variants, service_pb2.ListVariantsRequest())
        return [_variant(v) for v in reply.variants]

    def variant(self, variant: str | Variant) -> dict[str, Any]:
        return _variant(self._call(self.client.get_variant,
                                   service_pb2.GetVariantRequest(rule_set=_rule_set(variant))).variant)


def summary_message(summary: dict[str, Any]) -> scoring_pb2.RoundSummary:
    """A JSON round summary (checked by :func:`shuangkou.service.commands.read_summary`) as the
    RoundSummary message, which the local path scores with the server's own code."""
    msg = scoring_pb2.RoundSummary(
        finish_order=summary["finish_order"], table_fee=summary.get("table_fee") or 0,
        cards_left=summary.get("cards_left") or [],
        hands=[_cards(" ".join(h) if isinstance(h, list) else h)
               for h in summary.get("hands") or []])
    for bomb in summary.get("bombs", []):
        msg.bombs.add(seat=bomb["seat"], cards=_cards(bomb["cards"]),
                      declaration=_declare(bomb.get("declare"), bomb.get("declare_top")))
    if summary.get("escape") is not None:
        msg.escape = summary["escape"]
    if summary.get("stake") is not None:
        msg.stake = summary["stake"]
    return msg


def _variant(msg: Any) -> dict[str, Any]:
    """A Variant message as the data ``core_ext`` holds (``variant_data``)."""
    data: dict[str, Any] = json.loads(msg.variant_json)
    data["extends"] = msg.extends or None
    return data
