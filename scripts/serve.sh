#!/usr/bin/env bash
# Set up what serving needs (.venv with the runtime dependencies and grpcurl, the compiled
# core; skipped when already up to date, see scripts/setup-env.sh) and start the service on
# the embedded default configuration: gRPC on 127.0.0.1:50051, HTTP on 127.0.0.1:8080,
# Prometheus metrics on 127.0.0.1:9090 -- loopback, this machine only, unless asked
# otherwise (`--host 0.0.0.0 --http-host 0.0.0.0 --metrics-host 0.0.0.0`). Extra arguments
# go to `shuangkou serve`, e.g. `bash scripts/serve.sh --port 50052 --metrics-port 9091`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh --runtime
exec .venv/bin/shuangkou serve "$@"
