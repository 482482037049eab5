#!/usr/bin/env bash
# The demo's install step on a fresh Debian 12 (docs/performance.md, "The
# demo's install"): a minbase bookworm tree is debootstrapped into a scratch
# directory from the mirror this host's apt uses, the install line of
# SOURCE/scripts/demo.sh (or, with --tests, `bash scripts/install-deps.sh`,
# the README's test step) runs in it under systemd-nspawn, and the script
# prints how many packages that installed, how much it downloaded and how
# long it took. The tree is removed at the end. Needs root and the mirror.
#
# usage: sudo bash bench/demo_install.sh [--tests] [SOURCE (default: this checkout)]
set -euo pipefail
step=demo
if [ "${1:-}" = --tests ]; then
  step=tests
  shift
fi
source_dir=$(cd "${1:-$(dirname "$0")/..}" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "needs root (debootstrap, systemd-nspawn, mounts)" >&2; exit 77; }
for tool in debootstrap systemd-nspawn dpkg-query; do
  command -v "$tool" > /dev/null || { echo "$tool is not installed" >&2; exit 1; }
done
mirror=${GLOOWATCH_TEST_MIRROR:-$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' |
  awk '$2 == "bookworm" { print $1; exit }')}
[ -n "$mirror" ] || { echo "no apt source for bookworm (set GLOOWATCH_TEST_MIRROR)" >&2; exit 1; }

if [ "$step" = demo ]; then
  line=$(grep -E '^[^#]*scripts/install-deps\.sh' "$source_dir/scripts/demo.sh" | head -n1)
  [ -n "$line" ] || { echo "no install-deps.sh line in $source_dir/scripts/demo.sh" >&2; exit 1; }
else
  line="bash scripts/install-deps.sh"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gloowatch-demo-install-XXXXXX")
cleanup() {
  awk -v d="$work/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount "$m" 2> /dev/null || umount -l "$m"; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

echo "debootstrap --variant=minbase bookworm from $mirror (not counted)"
timeout 900 debootstrap --variant=minbase bookworm "$work/root" "$mirror" > "$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log"; exit 1; }
apt-get indextargets --format '$(REPO_URI) $(RELEASE)' |
  awk '$2 ~ /^bookworm(-updates|-security)?$/ { print "deb", $1, $2, "main" }' | sort -u \
  > "$work/root/etc/apt/sources.list"
[ -s "$work/root/etc/apt/sources.list" ] || echo "deb $mirror bookworm main" > "$work/root/etc/apt/sources.list"
rm -f "$work/root/var/cache/apt/archives/"*.deb
mkdir -p "$work/root/root/src"
tar -C "$source_dir" -c scripts tests/deploy/kubernetes/package.json \
  tests/deploy/kubernetes/package-lock.json | tar -C "$work/root/root/src" -x

installed() { dpkg-query --admindir="$work/root/var/lib/dpkg" -W -f '${db:Status-Abbrev}\n' | grep -c '^ii'; }
before=$(installed)
echo "running the $step step in it: $line"
start=$(date +%s.%N)
rc=0
timeout 3600 systemd-nspawn --register=no --keep-unit --quiet --console=pipe -D "$work/root" \
  --chdir=/root/src /bin/bash -c "$line" < /dev/null > "$work/step.log" 2>&1 || rc=$?
seconds=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
after=$(installed)
downloaded=$(du -sm "$work/root/var/cache/apt/archives" | cut -f1)
[ "$rc" -eq 0 ] || { tail -15 "$work/step.log"; echo "the step FAILED (exit $rc) after ${seconds} s"; }
echo "$step step: $((after - before)) packages installed ($before in the minbase tree, $after after)," \
  "${downloaded} MiB of .debs downloaded, ${seconds} s; machine load $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$rc"
