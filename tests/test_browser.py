"""A browser page plays a live round through the HTTP port: examples/browser/round.html in
headless Chromium (Debian's `chromium`, installed by scripts/setup-env.sh), served from
another loopback origin that the server allows (CORS), calling the Connect protocol's JSON
with fetch() and gRPC-Web. Its outcome is the core's round for the same seed."""

from __future__ import annotations

import hashlib
import json
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

PAGE = Path(__file__).resolve().parents[1] / "examples" / "browser" / "round.html"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# The flags that work on this machine kind (no sandbox as root; no background connections,
# which a closed network refuses).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage"]


class _Page(BaseHTTPRequestHandler):
    outcome: dict[str, Any] | None = None
    arrived = threading.Event()

    def do_GET(self) -> None:  # noqa: N802
        body = PAGE.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
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


@pytest.fixture
def page_server() -> Iterator[str]:
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


def _outcome(url: str, tmp_path: Path) -> dict[str, Any] | None:
    """What the page at ``url`` reported, opened in headless Chromium."""
    assert CHROMIUM is not None, "Debian's chromium: scripts/setup-env.sh installs it"
    _Page.outcome, _Page.arrived = None, threading.Event()
    browser = subprocess.Popen([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path}", url],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        arrived = _Page.arrived.wait(90)
    finally:
        browser.kill()
        browser.wait(30)
    assert arrived, "the page reported nothing within 90 s"
    return _Page.outcome


def test_a_browser_page_plays_a_live_round(page_server: str, tmp_path: Path) -> None:
    with running_server(http=True, http_cors_origins=(page_server,)) as srv:
        outcome = _outcome(f"{page_server}/round.html?api={srv.http_url}&variant=qianbian"
                           f"&seed=browser&report=/result", tmp_path)
    assert outcome is not None and "error" not in outcome, outcome
    r = core_round("qianbian", "browser")
    result = r.result()
    assert outcome["over"] is True and outcome["actions"] == r.actions_applied
    assert outcome["finals"] == list(result.final)
    assert outcome["kind"] == "WIN_KIND_" + result.kind.upper()
    assert outcome["grpcWebStatus"] == 9 and outcome["grpcWebDetails"]   # FAILED_PRECONDITION
    assert outcome["grpcWebHint"] and outcome["connectReason"] == "NOT_YOUR_TURN"


def test_an_origin_the_server_does_not_allow_is_named(page_server: str, tmp_path: Path) -> None:
    """The page opened from an origin outside http_cors_origins says which origin to allow
    (the browser itself only says "Failed to fetch")."""
    with running_server(http=True, http_cors_origins=("http://localhost:1",)) as srv:
        outcome = _outcome(f"{page_server}/round.html?api={srv.http_url}&report=/result",
                           tmp_path)
    error = (outcome or {}).get("error", "")
    assert f"answers, but not to pages from {page_server}" in error, outcome
    assert f"--http-cors-origins {page_server}" in error
