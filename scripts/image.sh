#!/usr/bin/env bash
# Build the service image on a machine without Docker, from Debian packages only: podman,
# buildah, mmdebstrap and runc (installed with apt-get when missing, waiting for apt's locks:
# scripts/apt-install.sh), two Debian bookworm base images made here with mmdebstrap and
# reused while their recipe is unchanged, and the repo's Dockerfile built unchanged with no
# layer cache (docs/operations.md, "The image, built here").
#
#   bash scripts/image.sh bases       # build or reuse the two bases; prints BUILD_BASE, RUN_BASE
#   bash scripts/image.sh build TAG   # the bases, then `buildah bud` of the Dockerfile -> TAG
#
# The bases are named by a hash of their recipe (suite, packages, hooks), so a changed recipe
# builds new ones and the old ones stay until removed by hand (podman rmi). A lock serialises
# their build across parallel runs on one machine; the app image's tag is the caller's.
set -euo pipefail
shopt -s inherit_errexit  # a failing step inside $(...) stops the script too
cd "$(dirname "$0")/.."

SUITE=bookworm
# The Dockerfile expects what python:3.11-slim gives: `python`/`pip` on PATH, and writable
# (PEP 668: Debian's own python3 refuses `pip install`), hence a venv first on PATH.
VENV=/opt/venv
ENV_PATH="$VENV/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The builder compiles the Cython core (python3-dev, build-essential); the runtime base has
# no headers and no compiler: only the interpreter, the venv module, CA roots and useradd.
BUILD_PACKAGES="python3,python3-venv,python3-dev,build-essential,ca-certificates,passwd"
RUN_PACKAGES="python3,python3-venv,ca-certificates,passwd"
# Neither base needs manuals, docs or translations (licences stay).
DPKG_OPTS=(
    --dpkgopt='path-exclude=/usr/share/man/*'
    --dpkgopt='path-exclude=/usr/share/locale/*'
    --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
)
VENV_HOOK="chroot \"\$1\" python3 -m venv $VENV"
LOCK=/var/tmp/shuangkou-image-bases.lock
# Intercepted TLS on some networks: pip inside the build trusts what the host trusts.
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

log() { printf 'image.sh: %s\n' "$*" >&2; }

ensure_tools() {
    local missing=() tool
    for tool in podman buildah mmdebstrap runc; do
        command -v "$tool" >/dev/null || missing+=("$tool")
    done
    [ "${#missing[@]}" -eq 0 ] && return
    if [ "$(id -u)" -ne 0 ]; then
        log "missing ${missing[*]}: run as root, or apt-get install podman buildah mmdebstrap runc"
        exit 1
    fi
    log "installing ${missing[*]} (apt-get, waiting for apt's locks: scripts/apt-install.sh)"
    bash scripts/apt-install.sh podman buildah mmdebstrap runc
}

recipe_hash() {  # $1: packages; everything that shapes a base goes into its name
    printf '%s\n' "$SUITE" minbase "$1" "${DPKG_OPTS[*]}" "$VENV_HOOK" "$ENV_PATH" \
        | sha256sum | cut -c1-12
}

ensure_base() {  # $1: image name, $2: packages
    local name="$1:$(recipe_hash "$2")" work started
    if podman image exists "$name"; then
        log "reusing $name"
        echo "$name"
        return
    fi
    started=$SECONDS
    work=$(mktemp -d /var/tmp/shuangkou-base.XXXXXX)
    # shellcheck disable=SC2064  # expand $work now: it is local to this function
    trap "rm -rf '$work'" RETURN
    log "building $name from Debian $SUITE ($2)"
    mmdebstrap --quiet --variant=minbase --include="$2" "${DPKG_OPTS[@]}" \
        --customize-hook="$VENV_HOOK" "$SUITE" "$work/rootfs.tar" >&2
    podman import --quiet \
        --change "ENV PATH=$ENV_PATH" \
        --change "ENV VIRTUAL_ENV=$VENV" \
        --change 'CMD ["python3"]' \
        "$work/rootfs.tar" "$name" >/dev/null
    log "built $name in $((SECONDS - started)) s"
    echo "$name"
}

bases() {
    ensure_tools
    exec 9>"$LOCK"
    # One builder at a time per machine; a second run waits, then finds the bases built.
    flock --wait 1800 9
    BUILD_BASE=$(ensure_base localhost/shuangkou-base-build "$BUILD_PACKAGES")
    RUN_BASE=$(ensure_base localhost/shuangkou-base-run "$RUN_PACKAGES")
    flock --unlock 9
    exec 9>&-
}

build() {  # $1: tag
    local tag="$1" started size
    bases
    started=$SECONDS
    log "building $tag from the Dockerfile (no layer cache)"
    # --layers=false: a cached layer once hid a source change (the runtime stage's bind mount
    # from the builder). chroot isolation and the host network: what works without a daemon.
    # --force-rm: a failed build leaves no working container behind for the next run.
    buildah bud --isolation chroot --network host --layers=false --pull=false --quiet --force-rm \
        --volume "$CA_BUNDLE:/etc/ssl/certs/ca-certificates.crt:ro" \
        --build-arg PYTHON_IMAGE="$BUILD_BASE" \
        --build-arg RUNTIME_IMAGE="$RUN_BASE" \
        --tag "$tag" --file Dockerfile . >&2
    size=$(podman image inspect --format '{{.Size}}' "$tag")
    log "built $tag in $((SECONDS - started)) s, $((size / 1000000)) MB"
}

case "${1:-}" in
    bases) bases; printf 'BUILD_BASE=%s\nRUN_BASE=%s\n' "$BUILD_BASE" "$RUN_BASE" ;;
    build) [ -n "${2:-}" ] || { log "usage: $0 build TAG"; exit 2; }; build "$2" ;;
    *) log "usage: $0 bases | build TAG"; exit 2 ;;
esac
