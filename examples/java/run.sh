#!/usr/bin/env bash
# Build the Java examples from ../../protos and run one of them.
#
#   bash run.sh build                 generate and compile only
#   bash run.sh client [ARGS]         build when out of date, then run Client.java
#   bash run.sh table [ARGS]          build when out of date, then run Table.java
#
# The build uses no Maven repository: `buf generate` with the repository's buf.gen.yaml
# (scripts/generate-clients.sh: protoc's builtin java and the grpc-java plugin, run locally)
# generates the messages and stubs into gen/ (never committed), and javac compiles them with
# the two example files against the jars Debian installs in /usr/share/java (libgrpc-java
# 1.41, libprotobuf-java 3.21, netty, guava, gson, perfmark: scripts/setup-env.sh installs
# them). google/rpc/status.proto and error_details.proto are generated too (com.google.rpc:
# Status, ErrorInfo, BadRequest), because Debian's proto-google-common-protos 1.16 has no
# ErrorInfo. A stamp in build/ skips the build when none of its inputs changed.
#
# Environment: SHUANGKOU_JAVA_LIB (jar folder, default /usr/share/java), PROTOC and
# PROTOC_GEN_GRPC_JAVA (scripts/generate-clients.sh; Debian names the plugin grpc_java_plugin).
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

classpath() {   # colon-separated jars of the given names, each required
  local jar out=""
  for jar in "$@"; do
    [ -f "$LIB/$jar.jar" ] || die "$LIB/$jar.jar is missing (bash scripts/setup-env.sh installs it)"
    out+="${out:+:}$LIB/$jar.jar"
  done
  echo "$out"
}

build() {
  local cp stamp
  command -v javac >/dev/null || die "javac not found (a JDK 17)"
  cp=$(classpath "${RUNTIME_JARS[@]}")
  stamp=$({
    protoc --version 2>/dev/null || true; readlink -f "$(command -v javac)"; echo "$cp"
    cd "$ROOT" && find protos third_party -name '*.proto' -print0 | LC_ALL=C sort -z \
      | xargs -0 sha256sum
    sha256sum buf.gen.yaml tools/package-lock.json scripts/generate-clients.sh
    cd "$HERE" && sha256sum run.sh ./*.java
  } | sha256sum | cut -d' ' -f1)
  if [ -f "$BUILD/stamp" ] && [ "$(cat "$BUILD/stamp")" = "$stamp" ] && [ -d "$HERE/gen" ]; then
    return 0
  fi
  rm -rf "$BUILD"
  mkdir -p "$BUILD/classes"
  # gen/: buf generate with the repository's buf.gen.yaml, its Java plugins.
  bash "$ROOT/scripts/generate-clients.sh" java
  find "$HERE/gen" -name '*.java' >"$BUILD/sources"
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
