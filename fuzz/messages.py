"""Random request messages for the gRPC boundary, and the check of what the service answers.

:func:`random_request` walks a request type's descriptor and fills fields from fuzz bytes:
enums take listed and unlisted values (proto3 enums are open), cards are often real plays,
``RuleSet.custom_json``/``replay_json`` are often near-valid documents. :class:`Context` is an
in-process ``grpc.ServicerContext`` that turns ``abort`` into :class:`Aborted`, and
:func:`check_status` says whether a failure is one the API documents (a code from
:data:`ALLOWED` with a ``google.rpc.BadRequest`` that names a field).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import grpc
from common import VARIANTS, Input, play_codes
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

from shuangkou.v1 import service_pb2

FD = FieldDescriptor
ALLOWED = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                     grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.DEADLINE_EXCEEDED})
NEEDS_FIELD = frozenset({grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND})
# Every unary RPC: name -> request class.
UNARY = {
    "ClassifyPlay": service_pb2.ClassifyPlayRequest,
    "ComparePlays": service_pb2.ComparePlaysRequest,
    "EnumerateLegalPlays": service_pb2.EnumerateLegalPlaysRequest,
    "ScoreRound": service_pb2.ScoreRoundRequest,
    "BatchClassify": service_pb2.BatchClassifyRequest,
    "ListVariants": service_pb2.ListVariantsRequest,
    "GetVariant": service_pb2.GetVariantRequest,
}
STREAM = {"ScoreReplays": service_pb2.ScoreReplaysRequest}


# ----------------------------------------------------------------------------- documents

def custom_variant_json(inp: Input) -> str:
    doc: dict[str, Any] = {"extends": inp.choice(VARIANTS), "id": "house"}
    for _ in range(inp.int(0, 3)):
        doc[inp.choice(("chain_min_links", "wild_jokers", "decks", "hand_size", "escape_fee",
                        "multiplier", "extends", "lowest_rank", "name", "stake"))] = inp.json(1)
    text = json.dumps(doc, default=repr)
    return text if inp.byte() % 8 else text[: inp.int(0, len(text))]


def replay_document(inp: Input) -> dict[str, Any]:
    from fuzz_replay import SEEDS, mutate, small_replay

    base = inp.choice(SEEDS) if SEEDS and inp.bool() else small_replay(inp)
    return mutate(inp, base)


def _codes(doc_cards: Any) -> list[int]:
    return [c for c in doc_cards if type(c) is int] if isinstance(doc_cards, list) else []


def replay_message(inp: Input, msg: Message) -> None:
    """Fill a Replay message from a replay document (the same data as replay_json)."""
    doc = replay_document(inp)
    hands = doc.get("hands")
    for h in hands if isinstance(hands, list) else []:
        msg.hands.add().cards.extend(c % 2**31 for c in _codes(h))
    for key in ("leader", "partner"):
        if type(doc.get(key)) is int:
            setattr(msg, key, doc[key] % 2**32)
    actions = doc.get("actions")
    for a in actions if isinstance(actions, list) else []:
        if not isinstance(a, dict):
            continue
        act = msg.actions.add(seat=a.get("seat") % 2**32 if type(a.get("seat")) is int else 0)
        if "play" in a:
            act.type = 1
            act.cards.cards.extend(c % 2**31 for c in _codes(a["play"]))
        else:
            act.type = 2 if a.get("pass") else 3 if a.get("escape") else inp.edge_int() % 2**31
    msg.partial_deal = doc.get("partial_deal") is True


# ----------------------------------------------------------------------------- messages

def _scalar(inp: Input, f: FieldDescriptor, path: str) -> Any:
    name = f.name
    if f.type == FD.TYPE_ENUM:
        values = [v.number for v in f.enum_type.values]
        return inp.choice(values) if inp.byte() % 4 else inp.edge_int() % 2**31
    if f.type == FD.TYPE_BOOL:
        return inp.bool()
    if f.type == FD.TYPE_STRING:
        in_rule_set = f.containing_type.name == "RuleSet"
        if in_rule_set and name == "id":
            return inp.choice(VARIANTS) if inp.byte() % 6 else inp.choice(("", "nope", "BAIBIAN"))
        if in_rule_set and name == "custom_json":
            return custom_variant_json(inp)
        if name == "replay_json":
            doc = replay_document(inp) if inp.byte() % 6 else inp.json(3)
            return json.dumps(doc, default=repr)
        if name in ("cards_text", "plays_text"):
            from shuangkou.core import format_cards

            return inp.text() if inp.bool() else " ".join(format_cards(play_codes(inp)))
        return inp.text(3)
    if f.type == FD.TYPE_BYTES:
        return bytes(play_codes(inp)) if inp.bool() else inp.raw(64)
    if f.type in (FD.TYPE_UINT32, FD.TYPE_FIXED32):
        return inp.edge_int() % 2**32
    if f.type in (FD.TYPE_UINT64, FD.TYPE_FIXED64):
        return inp.edge_int() % 2**64
    if f.type in (FD.TYPE_INT32, FD.TYPE_SINT32, FD.TYPE_SFIXED32):
        return max(-2**31, min(2**31 - 1, inp.edge_int()))
    if f.type in (FD.TYPE_INT64, FD.TYPE_SINT64, FD.TYPE_SFIXED64):
        return max(-2**63, min(2**63 - 1, inp.edge_int()))
    if f.type in (FD.TYPE_DOUBLE, FD.TYPE_FLOAT):
        return float(inp.edge_int())
    raise AssertionError(f"unhandled field type {f.type} at {path}")


def fill(inp: Input, msg: Message, depth: int = 4, path: str = "") -> Message:
    """Set a random subset of ``msg``'s fields (recursively, ``depth`` levels)."""
    desc = msg.DESCRIPTOR
    if desc.name == "Replay" and inp.byte() % 3:
        replay_message(inp, msg)
        return msg
    for f in desc.fields:
        if inp.byte() % 3 == 0:
            continue
        where = f"{path}.{f.name}"
        is_map = f.type == FD.TYPE_MESSAGE and f.message_type.GetOptions().map_entry
        repeated = f.is_repeated
        if f.type == FD.TYPE_MESSAGE and not is_map:
            if depth <= 0:
                continue
            if repeated:
                for _ in range(inp.int(0, 4)):
                    fill(inp, getattr(msg, f.name).add(), depth - 1, where)
            else:
                fill(inp, getattr(msg, f.name), depth - 1, where)
                getattr(msg, f.name).SetInParent()
        elif is_map:
            key_f, val_f = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
            target = getattr(msg, f.name)
            for _ in range(inp.int(0, 3)):
                key = _scalar(inp, key_f, where)
                if val_f.type == FD.TYPE_MESSAGE:
                    fill(inp, target[key], depth - 1, where)
                else:
                    target[key] = _scalar(inp, val_f, where)
        elif repeated:
            values = getattr(msg, f.name)
            if f.type == FD.TYPE_ENUM and f.name == "cards" and inp.bool():
                values.extend(play_codes(inp))
            elif f.name == "lengths" and inp.bool() and msg.codes:
                values.extend(_split(inp, len(msg.codes)))
            else:
                values.extend(_scalar(inp, f, where) for _ in range(inp.int(0, 6)))
        else:
            setattr(msg, f.name, _scalar(inp, f, where))
    return msg


def _split(inp: Input, total: int) -> list[int]:
    out = []
    while total > 0:
        n = inp.int(1, total)
        out.append(n)
        total -= n
    return out


def random_request(inp: Input, cls: type[Message]) -> Message:
    return fill(inp, cls())


def random_rpc(inp: Input) -> tuple[str, Any]:
    """``(method, request)`` for a unary RPC or ``(method, [requests])`` for a stream."""
    names = [*UNARY, *STREAM]
    name = inp.choice(names)
    if name in STREAM:
        return name, [random_request(inp, STREAM[name]) for _ in range(inp.int(0, 4))]
    return name, random_request(inp, UNARY[name])


# ----------------------------------------------------------------------------- running

def answered(name: str, reply: Any) -> Message:
    """A unary servicer method's reply as its message: a method may answer with the reply's
    bytes (BatchClassify), which gRPC sends as they are; they must parse."""
    if not isinstance(reply, bytes):
        return reply        # type: ignore[no-any-return]
    from google.protobuf import message_factory

    method = service_pb2.DESCRIPTOR.services_by_name["ShuangkouService"].methods_by_name[name]
    return message_factory.GetMessageClass(method.output_type).FromString(reply)


class Aborted(Exception):
    """``context.abort``: the RPC ended with ``code`` (and ``details`` when given)."""

    def __init__(self, code: grpc.StatusCode, message: str,
                 status: status_pb2.Status | None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message
        self.status = status


class Context:
    """The part of ``grpc.ServicerContext`` the servicer uses, in process."""

    def is_active(self) -> bool:
        return True

    def time_remaining(self) -> float | None:
        return None

    def invocation_metadata(self) -> tuple[()]:
        return ()

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise Aborted(code, details, None)

    def abort_with_status(self, status: grpc.Status) -> None:
        detail = dict(status.trailing_metadata or ()).get("grpc-status-details-bin")
        parsed = status_pb2.Status.FromString(detail) if detail else None
        raise Aborted(status.code, status.details, parsed)


@dataclass
class LogTrap(logging.Handler):
    """Keeps the exceptions the service logs (an INTERNAL's cause) instead of printing them."""

    caught: list[BaseException] = field(default_factory=list)

    def __post_init__(self) -> None:
        logging.Handler.__init__(self)

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info and record.exc_info[1] is not None:
            self.caught.append(record.exc_info[1])

    def __hash__(self) -> int:
        return id(self)


def install_log_trap() -> LogTrap:
    trap = LogTrap()
    logger = logging.getLogger("shuangkou.service")
    logger.addHandler(trap)
    logger.propagate = False
    return trap


def violations(status: status_pb2.Status | None) -> list[error_details_pb2.BadRequest.FieldViolation]:
    out: list[error_details_pb2.BadRequest.FieldViolation] = []
    for detail in status.details if status is not None else ():
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            out.extend(bad.field_violations)
    return out


def check_status(code: grpc.StatusCode, status: status_pb2.Status | None, what: str) -> None:
    """Raise AssertionError unless ``code`` is documented and its details name a field."""
    if code not in ALLOWED:
        raise AssertionError(f"{what}: status {code.name}")
    if code in NEEDS_FIELD:
        fields = [v.field for v in violations(status)]
        if not fields or not all(fields):
            raise AssertionError(f"{what}: {code.name} without a field violation naming the "
                                 f"field (violations: {fields})")
