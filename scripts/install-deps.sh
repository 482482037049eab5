#!/usr/bin/env bash
# Installs the Debian 12 packages of scripts/packages-build.txt (build and
# run) and scripts/packages-test.txt (tests, benchmarks, checks), and the npm
# packages the Kubernetes manifest test validates with (pinned by
# tests/deploy/kubernetes/package-lock.json, into that folder).
#
# --build-only: the first list alone, without recommended packages: what the
# demo needs (scripts/demo.sh). Packages already installed are not asked for
# again, and when none is missing apt is not run at all.
set -euo pipefail
cd "$(dirname "$0")"
lists=(packages-build.txt packages-test.txt)
apt_flags=()
case "${1:-}" in
  "") ;;
  --build-only)
    lists=(packages-build.txt)
    apt_flags=(--no-install-recommends)
    ;;
  *)
    echo "usage: install-deps.sh [--build-only]" >&2
    exit 64
    ;;
esac
mapfile -t packages < <(cat "${lists[@]}" | grep -v '^#' | tr ' ' '\n' | grep -v '^$')
installed=$(dpkg-query -W -f '${db:Status-Abbrev} ${Package}\n' "${packages[@]}" 2> /dev/null |
  awk '$1 == "ii" { print $2 }' || true)
missing=()
for package in "${packages[@]}"; do
  grep -qxF "$package" <<< "$installed" || missing+=("$package")
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
updated=false
apt_install() {
  $updated || $SUDO apt-get update -qq
  updated=true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@"
}
[ "${#missing[@]}" -eq 0 ] || apt_install "${apt_flags[@]}" "${missing[@]}"
[ "${1:-}" = --build-only ] && exit 0
# Debian's nodejs and npm unless the machine already has a Node.js with npm
# (another vendor's nodejs package conflicts with Debian's npm).
command -v npm > /dev/null || apt_install nodejs npm
npm ci --prefix ../tests/deploy/kubernetes --no-audit --no-fund --loglevel=error
