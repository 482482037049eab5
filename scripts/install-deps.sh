#!/usr/bin/env bash
# Installs the Debian 12 packages listed in scripts/packages.txt, and the npm
# packages the Kubernetes manifest test validates with (pinned by
# tests/deploy/kubernetes/package-lock.json, into that folder).
set -euo pipefail
cd "$(dirname "$0")"
mapfile -t packages < <(grep -v '^#' packages.txt | tr ' ' '\n' | grep -v '^$')
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${packages[@]}"
# Debian's nodejs and npm unless the machine already has a Node.js with npm
# (another vendor's nodejs package conflicts with Debian's npm).
if ! command -v npm > /dev/null; then
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm
fi
npm ci --prefix ../tests/deploy/kubernetes --no-audit --no-fund --loglevel=error
