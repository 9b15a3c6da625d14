"""The codecs of the HTTP port: Connect's ``proto`` and ``json`` encodings of the messages of
shuangkou.v1, decoded through the server's admission, and the message registry the JSON is
read and written with (:func:`schema`, also what an error detail is rendered readable with).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, cast

import orjson
from google.protobuf import descriptor_pb2
from google.rpc import error_details_pb2

from shuangkou.v1 import rounds_pb2, service_pb2

from ..admission import Admission, RejectedMessage
from ..errors import bounded

if TYPE_CHECKING:
    from protobuf import Registry

__all__ = ["Codec", "schema"]


@functools.cache
def schema() -> Registry:
    """Every message of shuangkou.v1 (and the google.rpc details) as the native protobuf-py
    runtime that connectrpc ships knows them: its JSON is ~30x faster than
    ``google.protobuf.json_format`` and writes the same proto3 JSON (tests/test_http.py holds
    it to json_format), and it renders error details readable (Connect's ``debug``). Built
    from the generated modules' descriptors; those omit the JSON field names, which are
    filled in here (lowerCamelCase, as protoc does).

    Every message and enum class of the registry is made here, before it is shared: the
    runtime makes each on first use, and two threads that first use one at once can find it
    half made (a valid request refused, "AttributeError")."""
    from protobuf import DescEnum, DescMessage
    from protobuf.wkt import FileDescriptorSet

    files: dict[str, descriptor_pb2.FileDescriptorProto] = {}

    def add(file: Any) -> None:
        if file.name not in files:
            for dependency in file.dependencies:
                add(dependency)
            files[file.name] = descriptor_pb2.FileDescriptorProto()
            file.CopyToProto(files[file.name])

    def name_fields(messages: Iterable[descriptor_pb2.DescriptorProto]) -> None:
        for message in messages:
            for f in message.field:
                f.json_name = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), f.name)
            name_fields(message.nested_type)

    for module in (service_pb2, rounds_pb2, error_details_pb2):
        add(module.DESCRIPTOR)
    fds = descriptor_pb2.FileDescriptorSet()
    for proto in files.values():
        name_fields(proto.message_type)
        fds.file.add().CopyFrom(proto)
    registry = FileDescriptorSet.from_binary(fds.SerializeToString()).to_registry()
    for desc in registry:
        if isinstance(desc, (DescMessage, DescEnum)):
            desc.type                       # noqa: B018 - made now, once
    return registry


class Codec:
    """connectrpc's codec protocol, decoding through the server's admission: a request over
    ``max_message_bytes`` or one that does not decode becomes a :class:`RejectedMessage`,
    which the interceptor counts and refuses as it does on gRPC (a ScoreReplays stream
    answers it in-band). JSON is proto3 JSON, read and written by the native runtime of
    :func:`schema` (orjson parses the text first: it bounds nesting at 1,024 levels and
    refuses lone surrogates); a field the message does not have is an error, not ignored."""

    def __init__(self, admission: Admission, json: bool) -> None:
        self._admission, self._json = admission, json
        self._registry = schema()           # at start-up, not by a request's thread
        self._decoders: dict[type[Any], Callable[[bytes], Any]] = {}
        self._native: dict[str, Any] = {}

    def name(self) -> str:
        return "json" if self._json else "proto"

    def _native_type(self, message_class: Any) -> Any:
        name = message_class.DESCRIPTOR.full_name
        native = self._native.get(name)
        if native is None:
            desc = self._registry.message(name)
            if desc is None:
                raise TypeError(f"{name} is not a message of shuangkou.v1")
            native = self._native[name] = desc.type
        return native

    def encode(self, message: Any) -> bytes:
        data = cast(bytes, message.SerializeToString())
        if not self._json:
            return data
        native = self._native_type(type(message)).from_binary(data)
        return cast(str, native.to_json(registry=self._registry)).encode()

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        decode = self._decoders.get(message_class)
        if decode is None:
            decode = self._decoders[message_class] = self._admission.decoder(
                message_class.FromString)
        if not self._json:
            return decode(bytes(data))
        from protobuf import message_from_json_value

        name = message_class.DESCRIPTOR.name
        try:
            value = orjson.loads(data)
            if not isinstance(value, dict):
                raise ValueError("a request is one JSON object")
            native = message_from_json_value(self._native_type(message_class), value,
                                             registry=self._registry)
            binary = native.to_binary()
        except Exception as exc:  # noqa: BLE001 - any decode failure is the caller's
            return RejectedMessage("undecodable",
                                   f"request is not a valid {name} in JSON: {_why(exc, data)}")
        return decode(binary)


def _why(exc: Exception, data: bytes | bytearray) -> str:
    """What is wrong with a JSON request, in the client's terms: orjson calls invalid UTF-8
    "surrogates not allowed", and a document nested deeper than a message (under orjson's
    1,024 levels) exhausts the converter's recursion instead."""
    if isinstance(exc, RecursionError):
        return ("nested too deeply (no message of this API nests past a few levels; JSON "
                "is read to 1,024)")
    try:
        bytes(data).decode()
    except UnicodeDecodeError as bad:
        return f"not UTF-8 (byte {bad.start:,}: 0x{data[bad.start]:02x})"
    if isinstance(exc, OverflowError):
        # the native runtime says "value V out of range for uint32 for field F": V can be
        # hundreds of digits (1e300), F is what the client needs
        text = str(exc).replace("\n", " ")
        value, found, rest = text.removeprefix("value ").partition(" out of range")
        if text.startswith("value ") and found:
            text = f"value {bounded(value, 24)} out of range{rest}"
        return bounded(text, 200)
    if isinstance(exc, (ValueError, TypeError)):
        return bounded(str(exc).replace("\n", " "), 200)
    return type(exc).__name__
