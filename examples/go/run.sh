#!/usr/bin/env bash
# Build the Go examples from ../../protos and run one of them.
#
#   bash run.sh build                 generate and compile only
#   bash run.sh client [ARGS]         build when out of date, then run cmd/client
#   bash run.sh table [ARGS]          build when out of date, then run cmd/table
#
# The build is offline, without the Go module proxy: `buf generate` with the repository's
# buf.gen.yaml (scripts/generate-clients.sh: protoc-gen-go and protoc-gen-go-grpc, run
# locally) generates the messages and stubs into gen/ (never committed), vendor/
# is made of links to the module sources Debian installs in /usr/share/gocode/src (the
# versions go.mod requires; run.sh checks the installed packages are those versions), and
# `go build -mod=vendor` compiles with GOPROXY=off. scripts/setup-env.sh installs the
# packages. A stamp in build/ skips the build when none of its inputs changed.
#
# Environment: SHUANGKOU_GOCODE (module sources, default /usr/share/gocode/src), GO (the go
# command).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BUILD=$HERE/build
GOCODE=${SHUANGKOU_GOCODE:-/usr/share/gocode/src}
USAGE="usage: bash run.sh build | client [ARGS] | table [ARGS]"

die() { echo "run.sh: $*" >&2; exit 2; }

need() {   # the path of a command, or a loud failure naming the Debian package
  command -v "$1" 2>/dev/null || die "$1 not found (Debian: $2; bash scripts/setup-env.sh installs it)"
}

# "module version" for every requirement of go.mod.
requirements() {
  awk '/^require \($/ {block = 1; next} block && /^\)$/ {block = 0; next}
       block && NF >= 2 && $1 !~ /^\/\// {print $1, $2}
       /^require [^(]/ {print $2, $3}' "$HERE/go.mod"
}

# The installed Debian package of a module's sources must be the version go.mod names:
# v1.33.3 <- 1.33.3-2, v0.7.0 <- 1:0.7.0+dfsg-1, v0.0.0-20200413115906-b5235f65be36 <-
# 0.0~git20200413.b5235f6-3.
check_version() {
  local module=$1 version=$2 package installed upstream
  package=$(dpkg -S "$GOCODE/$module" 2>/dev/null | head -1 | cut -d: -f1 | cut -d, -f1) || true
  [ -n "$package" ] || return 0   # not from a Debian package (SHUANGKOU_GOCODE): trusted
  installed=$(dpkg-query -W -f '${Version}' "$package")
  upstream=${installed#*:}
  upstream=${upstream%-*}
  upstream=${upstream%%+*}
  if [[ $version =~ ^v0\.0\.0-([0-9]{8})[0-9]{6}-([0-9a-f]{7}) ]]; then
    [[ $upstream == *"git${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"* ]] && return 0
  elif [ "v$upstream" = "$version" ]; then
    return 0
  fi
  die "go.mod requires $module $version but $package $installed is installed: update go.mod"
}

# vendor/: a link per required module to its Debian sources, and vendor/modules.txt listing
# each module (## explicit, as go.mod requires it) and its packages.
vendor() {
  local module version dir go_version
  rm -rf "$HERE/vendor"
  mkdir -p "$HERE/vendor"
  while read -r module version; do
    dir=$GOCODE/$module
    [ -f "$dir/go.mod" ] || die "$dir/go.mod is missing: the Debian package of $module is not installed"
    check_version "$module" "$version"
    mkdir -p "$HERE/vendor/$(dirname "$module")"
    ln -s "$dir" "$HERE/vendor/$module"
    go_version=$(awk '$1 == "go" {print $2; exit}' "$dir/go.mod")
    echo "# $module $version"
    echo "## explicit${go_version:+; go $go_version}"
    # Its packages: folders with non-test Go files, outside testdata and nested modules.
    (cd "$dir" && find . \( -name testdata -o -name '[._]?*' \) -prune -o \
        \( -type d ! -path . -exec test -f '{}/go.mod' \; -prune \) -o \
        -name '*.go' ! -name '*_test.go' -printf '%h\n' \
      | sed -e 's|^\./||' -e 's|^\.$||' | LC_ALL=C sort -u \
      | sed -e "s|^|$module/|" -e "s|/$||")
  done < <(requirements) >"$HERE/vendor/modules.txt"
}

build() {
  local go stamp
  go=${GO:-$(need go golang-go)}
  need protoc-gen-go protoc-gen-go >/dev/null
  need protoc-gen-go-grpc protoc-gen-go-grpc >/dev/null
  stamp=$({
    "$go" version; protoc-gen-go --version; protoc-gen-go-grpc --version
    dpkg-query -W -f '${Package} ${Version}\n' 2>/dev/null | grep '^golang-' || true
    cd "$ROOT" && find protos third_party -name '*.proto' -print0 | LC_ALL=C sort -z \
      | xargs -0 sha256sum
    sha256sum buf.gen.yaml tools/package-lock.json scripts/generate-clients.sh
    cd "$HERE" && find run.sh go.mod cmd -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum
  } | sha256sum | cut -d' ' -f1)
  if [ -f "$BUILD/stamp" ] && [ "$(cat "$BUILD/stamp")" = "$stamp" ] \
    && [ -x "$BUILD/bin/client" ] && [ -x "$BUILD/bin/table" ] && [ -d "$HERE/gen" ]; then
    return 0
  fi
  rm -rf "$BUILD"
  mkdir -p "$BUILD/bin"
  # gen/: buf generate with the repository's buf.gen.yaml, its Go plugins.
  bash "$ROOT/scripts/generate-clients.sh" go
  vendor
  (cd "$HERE" && GOFLAGS=-mod=vendor GOPROXY=off GOWORK=off GO111MODULE=on \
    "$go" build -p 1 -trimpath -o "$BUILD/bin/" ./cmd/client ./cmd/table)
  echo "$stamp" >"$BUILD/stamp"
}

case "${1:-}" in
  build) build ;;
  client | table)
    program=$1
    shift
    build
    exec "$BUILD/bin/$program" "$@"
    ;;
  *) echo "$USAGE" >&2; exit 2 ;;
esac
