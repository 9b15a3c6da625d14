#!/usr/bin/env bash
# Build the Java examples from ../../protos and run one of them.
#
#   bash run.sh build                 generate and compile only
#   bash run.sh client [ARGS]         build when out of date, then run Client.java
#   bash run.sh table [ARGS]          build when out of date, then run Table.java
#
# The build uses no Maven repository: protoc with the grpc-java plugin generates the
# messages and stubs into build/gen (never committed), and javac compiles them with the two
# example files against the jars Debian installs in /usr/share/java (libgrpc-java 1.41,
# libprotobuf-java 3.21, netty, guava, gson, perfmark: scripts/setup-env.sh installs them).
# google/rpc/status.proto and error_details.proto are generated too (com.google.rpc: Status,
# ErrorInfo, BadRequest), because Debian's proto-google-common-protos 1.16 has no ErrorInfo.
# A stamp in build/ skips the build when none of its inputs changed.
#
# Environment: SHUANGKOU_JAVA_LIB (jar folder, default /usr/share/java), PROTOC,
# PROTOC_GEN_GRPC_JAVA (the grpc-java plugin; Debian names it grpc_java_plugin),
# SHUANGKOU_GOOGLEAPIS_DIR (a folder holding google/rpc/error_details.proto).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$HERE/build
LIB=${SHUANGKOU_JAVA_LIB:-/usr/share/java}
USAGE="usage: bash run.sh build | client [ARGS] | table [ARGS]"

# Run time: grpc-java over netty, protobuf (and its JSON printer, which needs gson and guava).
RUNTIME_JARS=(grpc-api grpc-context grpc-core grpc-netty grpc-protobuf grpc-protobuf-lite
  grpc-stub protobuf protobuf-util guava gson perfmark-api netty-buffer netty-codec
  netty-codec-http netty-codec-http2 netty-codec-socks netty-common netty-handler
  netty-handler-proxy netty-resolver netty-transport)
# Compile time only: the @javax.annotation.Generated of the grpc-java 1.41 stubs.
COMPILE_JARS=(geronimo-annotation-1.3-spec)

die() { echo "run.sh: $*" >&2; exit 2; }

tool() {   # the first of the given commands that exists
  local name
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
  done
  return 1
}

classpath() {   # colon-separated jars of the given names, each required
  local jar out=""
  for jar in "$@"; do
    [ -f "$LIB/$jar.jar" ] || die "$LIB/$jar.jar is missing (bash scripts/setup-env.sh installs it)"
    out+="${out:+:}$LIB/$jar.jar"
  done
  echo "$out"
}

# The folder that holds google/rpc/error_details.proto: the vendored googleapis when it has
# it, else the copy the Python package googleapis-common-protos ships.
googleapis_dir() {
  local dir python
  for dir in "${SHUANGKOU_GOOGLEAPIS_DIR:-}" "$ROOT/third_party/googleapis"; do
    if [ -n "$dir" ] && [ -f "$dir/google/rpc/error_details.proto" ]; then echo "$dir"; return 0; fi
  done
  for python in "$ROOT/.venv/bin/python" python3; do
    dir=$("$python" -c 'from google.rpc import error_details_pb2 as m; from pathlib import Path
print(Path(m.__file__).parents[2])' 2>/dev/null) || continue
    if [ -f "$dir/google/rpc/error_details.proto" ]; then echo "$dir"; return 0; fi
  done
  die "no google/rpc/error_details.proto: set SHUANGKOU_GOOGLEAPIS_DIR"
}

build() {
  local protoc plugin googleapis cp stamp
  protoc=${PROTOC:-$(tool protoc)} || die "protoc not found (Debian: protobuf-compiler)"
  plugin=${PROTOC_GEN_GRPC_JAVA:-$(tool protoc-gen-grpc-java grpc_java_plugin)} \
    || die "the grpc-java plugin is not found (Debian: protobuf-compiler-grpc-java-plugin)"
  command -v javac >/dev/null || die "javac not found (a JDK 17)"
  googleapis=$(googleapis_dir)
  cp=$(classpath "${RUNTIME_JARS[@]}")
  stamp=$({
    "$protoc" --version; readlink -f "$(command -v javac)"; echo "$plugin $googleapis $cp"
    cd "$ROOT" && find protos third_party -name '*.proto' -print0 | LC_ALL=C sort -z \
      | xargs -0 sha256sum
    cd "$HERE" && sha256sum run.sh ./*.java "$googleapis/google/rpc/error_details.proto"
  } | sha256sum | cut -d' ' -f1)
  if [ -f "$BUILD/stamp" ] && [ "$(cat "$BUILD/stamp")" = "$stamp" ]; then return 0; fi
  rm -rf "$BUILD"
  mkdir -p "$BUILD/gen" "$BUILD/classes"
  (cd "$ROOT" && "$protoc" -I protos -I third_party/googleapis -I "$googleapis" \
    --plugin=protoc-gen-grpc-java="$plugin" \
    --java_out="$BUILD/gen" --grpc-java_out="$BUILD/gen" \
    protos/shuangkou/v1/*.proto google/rpc/status.proto google/rpc/error_details.proto)
  find "$BUILD/gen" -name '*.java' >"$BUILD/sources"
  javac --release 17 -encoding UTF-8 -nowarn -Xlint:-deprecation -Xlint:-unchecked \
    -cp "$cp:$(classpath "${COMPILE_JARS[@]}")" -d "$BUILD/classes" \
    @"$BUILD/sources" "$HERE"/*.java
  echo "$BUILD/classes:$cp" >"$BUILD/classpath"
  echo "$stamp" >"$BUILD/stamp"
}

case "${1:-}" in
  build) build ;;
  client | table)
    main=shuangkou.example.Client
    [ "$1" = table ] && main=shuangkou.example.Table
    shift
    build
    exec java ${JAVA_OPTS:-} -cp "$(cat "$BUILD/classpath")" "$main" "$@"
    ;;
  *) echo "$USAGE" >&2; exit 2 ;;
esac
