#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the project editable (as `shuangkou.*`, docs/decisions.md
# "Packaging"): the compiled core is built in place and the stubs generated beside protos/.
#
#   bash scripts/setup-env.sh            runtime + test extras (what scripts/test.sh needs)
#   bash scripts/setup-env.sh --runtime  only what serving needs (scripts/serve.sh)
#   bash scripts/setup-env.sh --check    exit 0 when the install is up to date, 1 when not
#
# The build is skipped when nothing it depends on changed: a stamp in .venv records a hash of
# the build inputs (core_ext/*.pyx|*.pxd, protos/**/*.proto, setup.py, pyproject.toml, the
# Python version) and the extras installed; a test install also satisfies --runtime.
# Serialised with a lock so parallel builds never collide.
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
    find core_ext protos -type f \( -name '*.pyx' -o -name '*.pxd' -o -name '*.proto' \) \
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

if [ "$mode" = check ]; then
  up_to_date runtime && exit 0
  exit 1
fi

exec 9>.build.lock
flock 9
if up_to_date "$mode"; then
  echo "setup-env: .venv is up to date ($mode), nothing to build" >&2
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
echo "setup-env: installing ($mode) and building the core; ~2 minutes" >&2
if [ "$mode" = test ]; then
  .venv/bin/python -m pip install -q -e ".[test]"
else
  .venv/bin/python -m pip install -q -e .
fi
# A test install stays a test install when serving later asks only for the runtime.
extras=$mode
if [ "$mode" = runtime ] && [ -f "$STAMP" ] && [ "$(cut -d' ' -f2 "$STAMP")" = test ]; then
  extras=test
fi
echo "$(inputs_hash) $extras" >"$STAMP"
