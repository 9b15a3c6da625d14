"""The Java examples (examples/java: Client.java, Table.java) against a real server on a
loopback port.

`run.sh build` generates the messages and stubs from protos/ with `buf generate` (buf.gen.yaml:
protoc's java and the grpc-java plugin, into gen/) and compiles them with javac against the jars of Debian's libgrpc-java 1.41 and
libprotobuf-java 3.21, once for the module; so these tests also prove the protos, the
google.rpc error details and the round state work from Java. The checks are those of the Go
examples (example_fixtures: ClientChecks, TableChecks).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from example_fixtures import ClientChecks, TableChecks, build_example

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "java"


@pytest.fixture(scope="module")
def built() -> Path:
    build = build_example(EXAMPLE)
    assert (EXAMPLE / "gen" / "shuangkou" / "v1" / "RoundServiceGrpc.java").is_file()
    assert (build / "classes" / "com" / "google" / "rpc" / "ErrorInfo.class").is_file()
    return build


class TestClient(ClientChecks):
    example = EXAMPLE


class TestTable(TableChecks):
    example = EXAMPLE
