#!/usr/bin/env bash
# Create .venv (Python 3.11) and install the project editable with its test extras.
# Idempotent; serialised with a lock so parallel builds never collide. Re-run after
# editing a .pyx or a .proto to rebuild the extension and the generated stubs.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$(command -v python3.11 || command -v python3)}
exec 9>.build.lock
flock 9
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
# The editable build compiles core_ext/*.pyx in place and generates service/gen/ from protos/.
.venv/bin/python -m pip install -q -e ".[test]"
