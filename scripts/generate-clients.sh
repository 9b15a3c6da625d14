#!/usr/bin/env bash
# Generate the examples' client code from protos/ with buf.gen.yaml: Go, Java, TypeScript, or
# only the languages named (each example generates its own: the browser example needs only
# the TypeScript generator, not the Go and Java ones).
#
#   bash scripts/generate-clients.sh [go] [java] [typescript]     (none: all three)
#
# buf and protoc-gen-es are the versions pinned in tools/package-lock.json (`npm ci` in tools/
# when they are missing or another version, from npm's cache when it holds them); the Go and
# Java plugins are Debian's (scripts/setup-env.sh installs them), and only the languages asked
# for need theirs. No plugin runs remotely, so this works without network access to buf.build.
# A language's plugins are those of buf.gen.yaml writing into its example (examples/go/gen,
# examples/java/gen, examples/browser/src/gen); only their folders are cleaned and written.
#
# Environment: PROTOC_GEN_GRPC_JAVA (grpc-java's plugin, when it is neither
# protoc-gen-grpc-java nor Debian's grpc_java_plugin on PATH), PROTOC (protoc, for the java
# builtin; default: the one on PATH).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS=$ROOT/tools

die() { echo "generate-clients.sh: $*" >&2; exit 2; }

# The languages asked for, each by the folder its plugins write into.
declare -A OUT=([go]=examples/go/gen [java]=examples/java/gen [typescript]=examples/browser/src/gen)
langs=("$@")
[ ${#langs[@]} -gt 0 ] || langs=(go java typescript)
for lang in "${langs[@]}"; do
  [ -n "${OUT[$lang]:-}" ] || die "unknown language '$lang' (go, java, typescript)"
done
wants() { [[ " ${langs[*]} " == *" $1 "* ]]; }

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
need=()
wants go && need+=(protoc-gen-go protoc-gen-go-grpc)
if wants java; then
  java_plugin=${PROTOC_GEN_GRPC_JAVA:-$(command -v protoc-gen-grpc-java || command -v grpc_java_plugin || true)}
  [ -n "$java_plugin" ] || die "grpc-java's plugin is not found (Debian: protobuf-compiler-grpc-java-plugin)"
  ln -s "$java_plugin" "$BIN/protoc-gen-grpc-java"
  if [ -n "${PROTOC:-}" ]; then ln -s "$PROTOC" "$BIN/protoc"; fi
  need+=(protoc)
fi
for plugin in "${need[@]}"; do
  command -v "$plugin" >/dev/null || [ -e "$BIN/$plugin" ] \
    || die "$plugin not found (Debian: ${plugin/protoc/protobuf-compiler}; bash scripts/setup-env.sh installs it)"
done

# buf.gen.yaml with only the plugins of the languages asked for (a plugin is a "  - " item
# under plugins:, with its out: line; everything above plugins: is kept as it is).
outs=()
for lang in "${langs[@]}"; do outs+=("${OUT[$lang]}"); done
awk -v outs="${outs[*]}" '
  BEGIN { n = split(outs, list, " "); for (i = 1; i <= n; i++) want[list[i]] = 1 }
  function flush() { if (item != "" && keep) printf "%s", item; item = ""; keep = 0 }
  !in_plugins { print; if ($0 ~ /^plugins:/) in_plugins = 1; next }
  /^  - / { flush(); item = $0 "\n"; next }
  /^    out: / { keep = ($2 in want) }
  item != "" { item = item $0 "\n" }
  END { flush() }
' "$ROOT/buf.gen.yaml" >"$BIN/buf.gen.yaml"
grep -q '^  - ' "$BIN/buf.gen.yaml" || die "buf.gen.yaml has no plugin for ${langs[*]}"
cd "$ROOT" && PATH="$BIN:$PATH" "$TOOLS/node_modules/.bin/buf" generate --template "$BIN/buf.gen.yaml"
