# Sourced by the booted-container tests (docs/testing.md, "The booted
# container"): a cached minimal Debian 12 tree, the .deb installed into a
# copy of it with apt, containers booted from it with systemd-nspawn, and
# cleanup on every exit. The caller has `set -euo pipefail`.
#
# GLOOWATCH_TEST_CACHE (default /var/cache/gloowatch-test) holds the tree and
# the downloaded .debs between runs; GLOOWATCH_TEST_MIRROR overrides the
# Debian mirror, which is otherwise the one this host's apt uses;
# GLOOWATCH_TEST_DEB installs that .deb instead of building one.

ct_here=$(dirname "${BASH_SOURCE[0]}")
cache=${GLOOWATCH_TEST_CACHE:-/var/cache/gloowatch-test}
base=$cache/bookworm-systemd
# What the cached tree was built with; a different stamp rebuilds it.
stamp="bookworm minbase systemd,systemd-sysv,dbus v1"
tmp_parent=${TMPDIR:-/tmp}
fail=0
err() { echo "FAIL: $*"; fail=1; }
die() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok: $*"; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }'; }

# Unmounts every mount under DIR, deepest first.
unmount_under() {
  awk -v d="$1/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r |
    while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
}

# Powers a container off: SIGTERM to nspawn, SIGKILL after 10 s.
stop_nspawn() {
  kill -0 "$1" 2>/dev/null || return 0
  kill -TERM "$1"
  for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$1" 2>/dev/null
}

# A long step runs in the background, so that a signal ends the wait for it
# at once (bash runs traps only between commands).
child_pid=
bounded() {  # SECONDS COMMAND...
  local rc=0
  timeout "$1" "${@:2}" &
  child_pid=$!
  wait "$child_pid" || rc=$?
  child_pid=
  return "$rc"
}

ct_cleanup() {
  set +e
  kill "$timer_pid" 2>/dev/null
  [ -z "$child_pid" ] || { kill -TERM "$child_pid"; wait "$child_pid"; } 2>/dev/null
  local pid
  for pid in $(cat "$tmp/nspawn.pids" 2>/dev/null); do stop_nspawn "$pid"; wait "$pid" 2>/dev/null; done
  # The caller's own resources (namespaces, processes), if it defines this.
  if declare -F ct_extra_cleanup > /dev/null; then ct_extra_cleanup; fi
  unmount_under "$tmp"
  rm -rf "$tmp"
}

# ct_init NAME BUDGET_SECONDS: checks what is needed, removes what a run
# killed with SIGKILL left (each run records its pids in its directory),
# makes this run's directory $tmp and ends the run (through the EXIT trap,
# which cleans up) after BUDGET_SECONDS, before ctest's timeout.
ct_init() {
  [ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (debootstrap, systemd-nspawn, mounts)"; exit 77; }
  local tool stale pid
  for tool in debootstrap systemd-nspawn nsenter cpack curl flock; do
    command -v "$tool" >/dev/null ||
      die "$tool is not installed (scripts/packages-test.txt lists its package)"
  done
  for stale in "$tmp_parent/gloowatch-$1"-*; do
    [ -f "$stale/script.pid" ] || continue
    kill -0 "$(cat "$stale/script.pid")" 2>/dev/null && continue
    for pid in $(cat "$stale/nspawn.pids" 2>/dev/null); do
      grep -qF "$stale/" "/proc/$pid/cmdline" 2>/dev/null && kill -KILL "$pid"
    done
    sleep 1
    unmount_under "$stale"
    rm -rf "$stale"
    echo "removed the leftovers of an earlier run: $stale"
  done
  tmp=$(mktemp -d "$tmp_parent/gloowatch-$1-XXXXXX")
  echo $$ > "$tmp/script.pid"
  : > "$tmp/nspawn.pids"
  # Its sleep holds no output pipe, so that ctest does not wait for it.
  (
    trap 'kill "$sleep_pid"; exit 0' TERM
    sleep "$2" > /dev/null 2>&1 &
    sleep_pid=$!
    wait "$sleep_pid" && echo "FAIL: still running after $2 s" && kill -TERM $$
  ) &
  timer_pid=$!
  trap ct_cleanup EXIT
  trap 'exit 130' INT TERM HUP
}

# "URI SUITE" for every deb source of this host's apt, one-line and deb822.
apt_sources() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -e 's/#.*//' -e 's/\[[^]]*\]//' "$f" | awk '$1 == "deb" {print $2, $3}'
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() {
           if (types ~ /(^| )deb( |$)/ && enabled != "no") for (i in u) for (j in s) print u[i], s[j]
           split("", u); split("", s); types = ""; enabled = ""
         }
         /^[ \t]*#/ { next }
         /^[ \t]*$/ { flush(); next }
         tolower($1) == "types:" { types = $0 }
         tolower($1) == "uris:" { for (i = 2; i <= NF; i++) u[i] = $i }
         tolower($1) == "suites:" { for (i = 2; i <= NF; i++) s[i] = $i }
         tolower($1) == "enabled:" { enabled = tolower($2) }
         END { flush() }' "$f"
  done
}

tree_ok() {
  [ "$(cat "$base.stamp" 2>/dev/null)" = "$stamp" ] && [ -x "$base/usr/lib/systemd/systemd" ] &&
    [ -x "$base/usr/bin/apt-get" ] && [ -x "$base/usr/bin/dbus-daemon" ] && [ -e "$base/sbin/init" ]
}

# ct_install BUILD_DIR [recommends]: the cached tree (built once, rebuilt when absent or
# incomplete), the .deb built from BUILD_DIR and installed with apt into an
# overlay of it; $installed is then the lowerdir stack of that installed tree
# for ct_mount (the cached tree stays as debootstrap left it).
ct_install() {
  local mirror started apt_flags=--no-install-recommends
  [ "${2:-}" = recommends ] && apt_flags=""   # as apt installs it by default
  mirror=${GLOOWATCH_TEST_MIRROR:-$(apt_sources | awk '$2 == "bookworm" { print $1; exit }')}
  [ -n "$mirror" ] || die "no apt source for bookworm in /etc/apt/sources.list{,.d} (set GLOOWATCH_TEST_MIRROR)"
  mkdir -p "$cache/apt-archives/partial"
  exec 9> "$cache/.lock"
  flock -w 300 -x 9 || die "could not lock $cache within 5 minutes"
  if ! tree_ok; then
    echo "building the cached Debian 12 tree in $base from $mirror (about a minute)"
    rm -rf "$base" "$base.partial" "$base.stamp"
    if ! bounded 400 debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus bookworm \
        "$base.partial" "$mirror" > "$tmp/debootstrap.log" 2>&1; then
      tail -20 "$tmp/debootstrap.log"
      rm -rf "$base.partial"
      die "debootstrap of bookworm from $mirror failed (is the mirror reachable?)"
    fi
    mv "$base.partial" "$base"
    echo "$stamp" > "$base.stamp"
  fi
  flock -s 9   # other runs may use the tree meanwhile, none may rebuild it

  local root=$tmp/install/root
  mkdir -p "$tmp/install/upper" "$tmp/install/work" "$root"
  mount -t overlay overlay -o "lowerdir=$base,upperdir=$tmp/install/upper,workdir=$tmp/install/work" \
    "$root" || die "cannot mount an overlay of $base"
  apt_sources | awk '$2 ~ /^bookworm(-updates|-security)?$/ { print "deb", $1, $2, "main" }' |
    sort -u > "$root/etc/apt/sources.list"
  [ -s "$root/etc/apt/sources.list" ] || echo "deb $mirror bookworm main" > "$root/etc/apt/sources.list"
  if [ -n "${GLOOWATCH_TEST_DEB:-}" ]; then
    DEB=$GLOOWATCH_TEST_DEB   # a .deb built before, e.g. by hand while iterating
  else
    . "$ct_here/build_deb.sh"
    build_deb "$1" "$tmp/out" || exit 1
  fi
  cp "$DEB" "$root/root/gloowatch.deb"
  started=$(date +%s)
  if ! bounded 300 systemd-nspawn --register=no --keep-unit --quiet --console=pipe -D "$root" \
      --bind="$cache/apt-archives:/var/cache/apt/archives" /bin/sh -c \
      "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $apt_flags /root/gloowatch.deb" \
      < /dev/null > "$tmp/apt.log" 2>&1; then
    tail -30 "$tmp/apt.log"
    die "apt-get install of the .deb in the container failed (mirror $mirror)"
  fi
  ok "installed $(basename "$DEB") with apt in $(($(date +%s) - started)) s"
  umount "$root"
  installed=$tmp/install/upper:$base
}

# ct_mount NAME: mounts a writable copy of the installed tree at
# $tmp/NAME/root and prints that path.
ct_mount() {
  local dir=$tmp/$1
  mkdir -p "$dir/upper" "$dir/work" "$dir/root"
  mount -t overlay overlay -o "lowerdir=$installed,upperdir=$dir/upper,workdir=$dir/work" \
    "$dir/root" || die "cannot mount an overlay for $1"
  echo "$dir/root"
}

# ct_boot NAME NSPAWN_ARGS...: boots $tmp/NAME/root (mounted by ct_mount)
# and waits until its systemd reports running; sets LEADER to the pid of
# that systemd (PID 1 inside), the child of nspawn.
ct_boot() {
  local name=$1 nspawn pid state
  shift
  systemd-nspawn --register=no --keep-unit --console=read-only --machine="$name" \
    -D "$tmp/$name/root" -b "$@" < /dev/null > "$tmp/$name/boot.log" 2>&1 &
  nspawn=$!
  echo "$nspawn" >> "$tmp/nspawn.pids"
  LEADER=
  for _ in $(seq 200); do
    for pid in $(cat /proc/"$nspawn"/task/*/children 2>/dev/null); do
      [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = systemd ] && LEADER=$pid
    done
    [ -n "$LEADER" ] && break
    kill -0 "$nspawn" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$LEADER" ] || { tail -20 "$tmp/$name/boot.log"; die "$name: the container's systemd did not start"; }
  for _ in $(seq 120); do
    state=$(ct_in "$LEADER" systemctl is-system-running 2>/dev/null || true)
    case "$state" in running | degraded) break ;; esac
    sleep 0.5
  done
  case "$state" in
    running) ok "$name booted to multi-user.target (is-system-running: running)" ;;
    *) ct_in "$LEADER" systemctl --failed --no-legend || true
       err "$name: is-system-running: ${state:-no answer} after 60 s" ;;
  esac
}

# Runs a command inside the container whose systemd is LEADER, or (ct_net)
# this host's command in the container's network namespace only.
ct_in() { timeout 30 nsenter -t "$1" -a env SYSTEMD_PAGER= SYSTEMD_COLORS=0 "${@:2}"; }
ct_net() { timeout 10 nsenter -t "$1" -n "${@:2}"; }

wait_for() {  # SECONDS COMMAND...: true once COMMAND succeeds
  local deadline=$(($(date +%s) + $1))
  shift
  until "$@"; do [ "$(date +%s)" -lt "$deadline" ] || return 1; sleep 0.2; done
}

# A daemon config with fast schedules. node_config NAME ADDRESS [PEER ADDRESS]...
node_config() {
  local name=$1 address=$2
  shift 2
  cat <<EOF
node: $name
grpc_listen: $address:7601
metrics_listen: $address:7610
gloo: {address: $address, timeout: 2s}
schedule: {latency_interval: 500ms, skew_interval: 1s, bandwidth_interval: 30s}
probe: {bandwidth_bytes: 1MiB, bandwidth_message_bytes: 256KiB, backoff_initial: 200ms, backoff_max: 1s}
peers:
EOF
  while [ $# -gt 0 ]; do printf '  - {name: %s, grpc: %s:7601}\n' "$1" "$2"; shift 2; done
}
