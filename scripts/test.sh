#!/usr/bin/env bash
# Set up (venv, build of the Cython core and gRPC stubs) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
.venv/bin/python -m ruff check .
.venv/bin/python -m mypy          # the typed core API, .pyi stubs included
status=0
.venv/bin/python -m pytest "$@" || status=$?
if [ "$status" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$status"
