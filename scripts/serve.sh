#!/usr/bin/env bash
# Set up what serving needs (.venv with the runtime dependencies, the compiled core; skipped
# when already up to date, see scripts/setup-env.sh) and start the service on the embedded
# default configuration (gRPC on :50051, Prometheus metrics on :9090). Extra arguments go to
# `shuangkou serve`, e.g. `bash scripts/serve.sh --port 50052 --metrics-port 9091`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh --runtime
exec .venv/bin/shuangkou serve "$@"
