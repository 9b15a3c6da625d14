#!/usr/bin/env bash
# Set up (venv, build) and start the service on the embedded default configuration
# (gRPC on :50051, Prometheus metrics on :9090). Extra arguments go to `shuangkou serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup-env.sh
exec .venv/bin/shuangkou serve "$@"
