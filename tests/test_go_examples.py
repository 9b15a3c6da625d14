"""The Go examples (examples/go: cmd/client, cmd/table) against a real server on a loopback
port.

`run.sh build` generates the messages and stubs from protos/ with `buf generate` (buf.gen.yaml:
protoc-gen-go and protoc-gen-go-grpc), vendors the module sources Debian installs (grpc-go 1.33, protobuf-go
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


def test_buf_gen_maps_every_proto_file_to_the_go_package() -> None:
    """buf.gen.yaml's M options (the protos name no go_package) list every .proto file, for
    both Go plugins: a new file without its line would not build."""
    import yaml

    root = EXAMPLE.parents[1]
    files = {f"shuangkou/v1/{p.name}" for p in (root / "protos" / "shuangkou" / "v1").glob("*.proto")}
    plugins = yaml.safe_load((root / "buf.gen.yaml").read_text())["plugins"]
    for plugin in (p for p in plugins if p.get("local") in ("protoc-gen-go", "protoc-gen-go-grpc")):
        mapped = {o[1:].split("=")[0] for o in plugin["opt"] if o.startswith("M")}
        assert mapped == files, plugin["local"]


class TestClient(ClientChecks):
    example = EXAMPLE


class TestTable(TableChecks):
    example = EXAMPLE
