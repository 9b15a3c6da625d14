"""The Go examples (examples/go: cmd/client, cmd/table) against a real server on a loopback
port.

`run.sh build` generates the messages and stubs from protos/ with protoc-gen-go and
protoc-gen-go-grpc, vendors the module sources Debian installs (grpc-go 1.33, protobuf-go
1.28, genproto's errdetails) and runs `go build -mod=vendor` with GOPROXY=off, once for the
module; so these tests also prove the protos, the google.rpc error details and the round
state work from Go. The checks are those of the Java examples (example_fixtures:
ClientChecks, TableChecks).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from example_fixtures import ClientChecks, TableChecks, build_example

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "go"


@pytest.fixture(scope="module")
def built() -> Path:
    build = build_example(EXAMPLE)
    assert (EXAMPLE / "gen" / "shuangkou" / "v1" / "rounds_grpc.pb.go").is_file()
    assert (EXAMPLE / "vendor" / "modules.txt").is_file()
    return build


class TestClient(ClientChecks):
    example = EXAMPLE


class TestTable(TableChecks):
    example = EXAMPLE
