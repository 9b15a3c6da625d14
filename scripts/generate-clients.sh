#!/usr/bin/env bash
# Generate the examples' client code from protos/ with buf.gen.yaml (Go, Java, TypeScript).
#
#   bash scripts/generate-clients.sh
#
# buf and protoc-gen-es are the versions pinned in tools/package-lock.json (`npm ci` in tools/
# when they are missing or another version, from npm's cache when it holds them); the Go and
# Java plugins are Debian's (scripts/setup-env.sh installs them). No plugin runs remotely, so
# this works without network access to buf.build.
#
# Environment: PROTOC_GEN_GRPC_JAVA (grpc-java's plugin, when it is neither
# protoc-gen-grpc-java nor Debian's grpc_java_plugin on PATH), PROTOC (protoc, for the java
# builtin; default: the one on PATH).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=$ROOT/tools

die() { echo "generate-clients.sh: $*" >&2; exit 2; }

# The pinned buf and protoc-gen-es, installed by `npm ci` unless they already are.
pinned() {
  node -e 'const l = require(process.argv[1]).packages;
    console.log(l["node_modules/@bufbuild/buf"].version, l["node_modules/@bufbuild/protoc-gen-es"].version)' \
    "$TOOLS/package-lock.json"
}
installed() {
  local es
  es=$(node -e 'console.log(require(process.argv[1]).version)' \
    "$TOOLS/node_modules/@bufbuild/protoc-gen-es/package.json" 2>/dev/null) || return 1
  echo "$("$TOOLS/node_modules/.bin/buf" --version 2>/dev/null) $es"
}
command -v node >/dev/null || die "node not found (Debian: nodejs npm)"
if [ "$(installed || true)" != "$(pinned)" ]; then
  command -v npm >/dev/null || die "npm not found (Debian: npm)"
  (cd "$TOOLS" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error) >&2
fi

# buf.gen.yaml names plugins by their upstream names; Debian's grpc-java plugin is
# grpc_java_plugin, so a private bin folder links it under the name buf looks for.
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
java_plugin=${PROTOC_GEN_GRPC_JAVA:-$(command -v protoc-gen-grpc-java || command -v grpc_java_plugin || true)}
[ -n "$java_plugin" ] || die "grpc-java's plugin is not found (Debian: protobuf-compiler-grpc-java-plugin)"
ln -s "$java_plugin" "$BIN/protoc-gen-grpc-java"
if [ -n "${PROTOC:-}" ]; then ln -s "$PROTOC" "$BIN/protoc"; fi
for plugin in protoc-gen-go protoc-gen-go-grpc protoc; do
  command -v "$plugin" >/dev/null || [ -e "$BIN/$plugin" ] \
    || die "$plugin not found (Debian: ${plugin/protoc/protobuf-compiler}; bash scripts/setup-env.sh installs it)"
done
cd "$ROOT" && PATH="$BIN:$PATH" "$TOOLS/node_modules/.bin/buf" generate
