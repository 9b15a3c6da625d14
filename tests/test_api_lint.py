"""The public API's own checks: `buf lint` (STANDARD) and `buf breaking` against the released
v1 image, api-image/shuangkou-v1.binpb (docs/api.md "Compatibility").

buf comes from the npm package @bufbuild/buf pinned in tools/package-lock.json: `npm ci`
installs it once (from the npm cache when it holds the package); every check then runs
offline, the googleapis imports resolving from the vendored third_party/googleapis module.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "tools"
IMAGE = ROOT / "api-image" / "shuangkou-v1.binpb"
NPM = shutil.which("npm")

pytestmark = pytest.mark.skipif(NPM is None or shutil.which("node") is None,
                                reason="npm and node are needed to install buf")


def _pinned_version() -> str:
    lock = json.loads((TOOLS / "package-lock.json").read_text())
    return str(lock["packages"]["node_modules/@bufbuild/buf"]["version"])


@pytest.fixture(scope="session")
def buf() -> Path:
    """The pinned buf binary; `npm ci` in tools/ unless that exact version is installed."""
    binary = TOOLS / "node_modules" / ".bin" / "buf"
    want = _pinned_version()
    if binary.exists():
        have = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                              timeout=60)
        if have.returncode == 0 and have.stdout.strip() == want:
            return binary
    assert NPM is not None
    done = subprocess.run([NPM, "ci", "--prefer-offline", "--no-audit", "--no-fund",
                           "--loglevel=error"], cwd=TOOLS, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return binary


def run(buf: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(buf), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_lint_is_clean(buf: Path) -> None:
    done = run(buf, "lint", "protos")
    assert done.returncode == 0, done.stdout + done.stderr


def test_no_breaking_change_against_the_released_api(buf: Path) -> None:
    assert IMAGE.is_file(), "the released API image is committed"
    done = run(buf, "breaking", "protos", "--against", str(IMAGE))
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    """A copy of the buf workspace to break on purpose."""
    for name in ("protos", "third_party"):
        shutil.copytree(ROOT / name, tmp_path / name)
    shutil.copy(ROOT / "buf.yaml", tmp_path / "buf.yaml")
    return tmp_path


def _edit(workspace: Path, file: str, old: str, new: str) -> None:
    path = workspace / "protos" / "shuangkou" / "v1" / file
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_a_renamed_field_is_a_breaking_change(buf: Path, workspace: Path) -> None:
    _edit(workspace, "service.proto", "Cards hand = 2;", "Cards cards_in_hand = 2;")
    done = run(buf, "breaking", "protos", "--against", str(IMAGE), cwd=workspace)
    assert done.returncode != 0 and "cards_in_hand" in done.stdout, done.stdout + done.stderr


def test_a_removed_rpc_is_a_breaking_change(buf: Path, workspace: Path) -> None:
    _edit(workspace, "service.proto",
          "  rpc GetServerInfo(GetServerInfoRequest) returns (GetServerInfoResponse) {\n"
          "    option idempotency_level = NO_SIDE_EFFECTS;\n  }\n", "")
    done = run(buf, "breaking", "protos", "--against", str(IMAGE), cwd=workspace)
    assert done.returncode != 0 and "GetServerInfo" in done.stdout, done.stdout + done.stderr


def test_lint_rejects_a_bare_response_type(buf: Path, workspace: Path) -> None:
    """What the first lint run found: an RPC must return its own response message."""
    _edit(workspace, "service.proto", "returns (GetVariantResponse)", "returns (Variant)")
    done = run(buf, "lint", "protos", cwd=workspace)
    assert done.returncode != 0 and "GetVariantResponse" in done.stdout, done.stdout


def test_googleapis_is_imported_not_generated() -> None:
    """The vendored googleapis module is for buf only: the stubs use googleapis-common-protos."""
    from google.rpc import status_pb2

    from shuangkou.v1 import service_pb2

    assert not (ROOT / "protos" / "google").exists()
    error = service_pb2.ScoreReplaysResponse.DESCRIPTOR.fields_by_name["error"]
    assert error.message_type is status_pb2.Status.DESCRIPTOR
