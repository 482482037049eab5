#!/usr/bin/env bash
# Installs the Debian 12 packages listed in scripts/packages.txt.
set -euo pipefail
cd "$(dirname "$0")"
mapfile -t packages < <(grep -v '^#' packages.txt | tr ' ' '\n' | grep -v '^$')
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${packages[@]}"
