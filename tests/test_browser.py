"""A browser page plays a live round through the HTTP port: examples/browser/round.html in
headless Chromium (Debian's `chromium`, installed by scripts/setup-env.sh), served from
another loopback origin that the server allows (CORS), calling the Connect protocol and
gRPC-Web through @connectrpc/connect-web with the types buf generates (`npm ci` and
`npm run build`: buf generate, tsc, esbuild). Its outcome is the core's round for the same
seed; from an origin the server does not allow, the page names the CORS failure."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from grpc_helpers import running_server

from shuangkou import core

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "browser"
NPM = shutil.which("npm")
TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8"}
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags that work on this machine kind (no sandbox as root; no background connections,
# which a closed network refuses).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


class _Page(BaseHTTPRequestHandler):
    outcome: dict[str, Any] | None = None
    arrived = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 - round.html and the bundle it loads, nothing else
        path = self.path.split("?")[0]
        if path not in ("/round.html", "/dist/round.js"):
            self.send_error(404)
            return
        body = (EXAMPLE / path.lstrip("/")).read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", TYPES[Path(path).suffix])
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - the page reports its outcome here
        size = int(self.headers.get("Content-Length", 0))
        type(self).outcome = json.loads(self.rfile.read(size))
        self.send_response(204)
        self.end_headers()
        type(self).arrived.set()

    def log_message(self, *args: Any) -> None:
        pass


# What the Go and Java examples generate and build with (scripts/setup-env.sh installs them
# for the suite): the browser example must build without any of them.
OTHER_GENERATORS = {"protoc", "protoc-gen-go", "protoc-gen-go-grpc", "protoc-gen-grpc-java",
                    "grpc_java_plugin", "java", "javac", "go", "gofmt"}


def _path_without_other_generators(folder: Path) -> str:
    """A PATH of one folder linking every command on this PATH but :data:`OTHER_GENERATORS`:
    a machine with node and npm and neither Go's nor Java's code generators."""
    folder.mkdir(parents=True, exist_ok=True)
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = os.path.join(directory, name)
            link = folder / name
            if name not in OTHER_GENERATORS and not link.exists() and os.access(target, os.X_OK):
                link.symlink_to(target)
    return str(folder)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`npm ci` (the versions of the committed package-lock.json) and `npm run build`, as
    the README documents them, on a PATH without the Go and Java generators (the build
    generates the TypeScript alone: scripts/generate-clients.sh typescript)."""
    assert NPM is not None, "npm: scripts/setup-env.sh installs it"
    env = {**os.environ,
           "PATH": _path_without_other_generators(tmp_path_factory.mktemp("bin"))}
    assert shutil.which("protoc", path=env["PATH"]) is None
    for args, timeout in ((["ci", "--prefer-offline", "--no-audit", "--no-fund",
                            "--loglevel=error"], 300), (["run", "build"], 300)):
        done = subprocess.run([NPM, *args], cwd=EXAMPLE, capture_output=True, text=True,
                              timeout=timeout, env=env)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return EXAMPLE / "dist" / "round.js"


def test_the_example_builds_without_the_go_and_java_generators(bundle: Path) -> None:
    """The documented build (`npm ci`, `npm run build`) needs node, npm and the TypeScript
    generator only: it failed with "grpc-java's plugin is not found"."""
    assert bundle.stat().st_size > 0
    assert (EXAMPLE / "src" / "gen" / "shuangkou" / "v1" / "service_pb.ts").exists()


@pytest.fixture
def page_server(bundle: Path) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def core_round(variant: str, seed_text: str) -> core.Round:
    r = core.Round.deal_seeded(variant, hashlib.sha256(seed_text.encode()).digest())
    while not r.is_over:
        s = core.suggest(r)
        r.play(s.seat, s.cards, s.declaration) if s.kind == "play" else r.pass_turn(s.seat)
    return r


def open_page(url: str, profile: Path) -> dict[str, Any]:
    """The outcome the page at ``url`` POSTs to its report address."""
    assert CHROMIUM is not None, "Debian's chromium: scripts/setup-env.sh installs it"
    _Page.outcome, _Page.arrived = None, threading.Event()
    browser = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", url],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        arrived = _Page.arrived.wait(90)
    finally:
        browser.kill()
        browser.wait(30)
    assert arrived, "the page reported nothing within 90 s"
    assert _Page.outcome is not None
    return _Page.outcome


def test_a_browser_page_plays_a_live_round(page_server: str, tmp_path: Path) -> None:
    with running_server(http=True, http_cors_origins=(page_server,)) as srv:
        outcome = open_page(f"{page_server}/round.html?api={srv.http_url}&variant=qianbian"
                            f"&seed=browser&report=/result", tmp_path)
    assert "error" not in outcome, outcome
    r = core_round("qianbian", "browser")
    result = r.result()
    assert outcome["over"] is True and outcome["actions"] == r.actions_applied
    assert outcome["finals"] == list(result.final)
    assert outcome["kind"] == "WIN_KIND_" + result.kind.upper()
    assert outcome["grpcWebStatus"] == 9 and outcome["grpcWebDetails"]   # FAILED_PRECONDITION
    assert outcome["grpcWebHint"] and outcome["connectReason"] == "NOT_YOUR_TURN"


def test_a_page_from_an_origin_not_allowed_names_cors(page_server: str, tmp_path: Path
                                                       ) -> None:
    with running_server(http=True, http_cors_origins=("http://elsewhere.example",)) as srv:
        outcome = open_page(f"{page_server}/round.html?api={srv.http_url}&report=/result",
                            tmp_path)
    assert "CORS" in outcome.get("error", ""), outcome
    assert f"--http-cors-origins {page_server}" in outcome["error"]
