#!/usr/bin/env bash
# Install Debian packages with apt-get, waiting for the package manager's locks instead of
# failing on them: THE way the scripts here install packages (scripts/setup-env.sh for the
# test suite's packages, scripts/image.sh for podman and its tools). Run as root.
#
#   bash scripts/apt-install.sh PACKAGE...
#
# Two set-ups started at once (two clones' `bash scripts/test.sh`, or serve and test in two
# terminals), or one beside another suite's image build, each run apt-get: without waiting,
# the second stops at once on apt's lock ("could not install the Debian packages"). So:
#
# * every apt-get here carries -o DPkg::Lock::Timeout (dpkg's lock: another install or
#   removal, ours or not, is waited for);
# * `apt-get update` does not honour that option for its own lock on the package lists (apt
#   2.6 stops at once: "Could not get lock /var/lib/apt/lists/lock"), so while another
#   process holds it, the update is tried again every 2 s;
# * the scripts' own installs take a lock of ours, one at a time, and the one that waited
#   installs only what the other did not (often nothing).
#
# Each wait lasts at most APT_LOCK_TIMEOUT seconds (default 900: an image build's apt run
# takes minutes on a loaded host). Exit status 0 when every package is installed, 1 if not.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: bash scripts/apt-install.sh PACKAGE..." >&2; exit 2; }
timeout=${APT_LOCK_TIMEOUT:-900}
APT_GET=(apt-get -o "DPkg::Lock::Timeout=$timeout" -o Acquire::Retries=3)
LOCK=${SHUANGKOU_APT_LOCK:-/var/lock/shuangkou-apt.lock}

say() { echo "apt-install: $*" >&2; }

# The packages of "$@" that are not installed (one dpkg-query).
missing() {
  local installed pkg
  installed=$({ dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null \
    || true; } | awk '$1 == "ii" {print $2}')
  for pkg in "$@"; do
    grep -qxF "$pkg" <<<"$installed" || echo "$pkg"
  done
}

exec 8>"$LOCK"
if ! flock --nonblock 8; then
  say "another set-up is installing packages; waiting (up to $timeout s)"
  flock --wait "$timeout" 8 || { say "still locked after $timeout s: $LOCK"; exit 1; }
fi
mapfile -t todo < <(missing "$@")
[ ${#todo[@]} -gt 0 ] || exit 0
say "installing ${todo[*]}"
waited=0
until out=$("${APT_GET[@]}" update -qq 2>&1); do
  if ! grep -q "Could not get lock" <<<"$out" || [ "$waited" -ge "$timeout" ]; then
    printf '%s\n' "$out" >&2
    exit 1
  fi
  [ "$waited" -gt 0 ] || say "apt's package lists are locked by another process; waiting"
  sleep 2
  waited=$((waited + 2))
done
DEBIAN_FRONTEND=noninteractive "${APT_GET[@]}" install -y -qq --no-install-recommends \
  "${todo[@]}" >/dev/null || exit 1
