#!/usr/bin/env bash
# The dependency rules of the tree (docs/design.md, "Libraries"; the test
# libraries in docs/testing.md, "The layout"): which folder's code may include
# which, the layers inside client/, that only the transport (and tests and
# benchmarks) include Gloo, that the test support's light library stays light,
# and that no production code includes the simulated clock.
# Prints every violation; exit 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

# The test support's light library (gloowatch_test_light): what client tests
# and unit tests may take from tests/support/. The rest of tests/support/ is
# the heavy library (daemons as processes, clusters, Prometheus).
light="tests/support/chromium tests/support/free_port tests/support/paths"
light+=" tests/support/simulated_clock tests/support/subprocess tests/support/temp_dir"
light+=" tests/support/wait_for"
production="common channel daemon transport gloowatchd client"

# One line a folder (or module): its path, then what its code may include
# from this project. The longest path that holds a file decides its rule; an
# include is allowed when its path is one of the listed paths or lies under
# one. `gloo` stands for Gloo's headers. A C++ file no line covers is an
# error: a new folder gets its line here.
#
# The daemon's internal layers are the block marked "daemon/", one line a
# subfolder (docs/design.md, the table of daemon/'s folders); the line
# `daemon` is the hub's (daemon/daemon.{h,cc}), which wires them all.
rules="
common                  common proto
channel                 channel common proto
transport               transport channel common proto gloo
gloowatchd              gloowatchd daemon transport channel common proto

# daemon/: the gloowatchd process; no Gloo. One library a folder; each folder
# includes from daemon/ only the folders below it named on its line, the hub
# all of them.
daemon                  daemon channel common proto
daemon/api              daemon/api daemon/supervisor daemon/system channel common proto
daemon/peers            daemon/peers daemon/metrics channel common proto
daemon/training         daemon/training daemon/system channel common proto
daemon/supervisor       daemon/supervisor channel common proto
daemon/metrics          daemon/metrics daemon/system channel common proto
daemon/http             daemon/http channel common proto
daemon/system           daemon/system channel common proto

# client/: layers only point down: cli -> features -> sources -> core. The
# features are health, act, job, preflight, diagnose and explain_log; the
# edges between them: diagnose runs preflight's name resolution, act acts on
# the culprits health names. Nothing in client/
# includes daemon/, transport/ or channel/.
client/core             client/core common proto
client/sources          client/sources client/core common proto
client/health           client/health client/sources client/core common proto
client/act              client/act client/health client/sources client/core common proto
client/job              client/job client/sources client/core common proto
client/preflight        client/preflight client/sources client/core common proto
client/explain_log      client/explain_log client/sources client/core common proto
client/diagnose         client/diagnose client/preflight client/sources client/core common proto
client/cli              client common proto

# tests/: a test takes from tests/ only the support library and its own
# folder. Unit and client tests take only the light support library.
$(for m in $light; do echo "$m  $light common"; done)
tests/support           tests/support common proto gloo
tests/unit              tests/unit $light common channel daemon transport proto gloo
tests/client            tests/client $light client common proto
tests/inprocess         tests/inprocess tests/support common channel daemon transport proto gloo
tests/loopback          tests/loopback tests/support $production proto gloo
tests/netns             tests/netns tests/support $production proto gloo
tests/soak              tests/soak tests/support $production proto gloo
tests/fuzz              tests/fuzz common

# bench/: figures about all of it, through the test support's clusters.
bench                   bench tests/support $production proto gloo
"

declare -A allowed=()
while read -r folder rest; do
  [[ -z $folder || $folder == \#* ]] && continue
  allowed[$folder]=$rest
done <<< "$rules"

# The folders an include is checked against: those that hold C++ code, the
# generated proto/, and Gloo.
mapfile -t code_folders < <(git ls-files -- '*.cc' '*.h' | cut -d/ -f1 | sort -u)
declare -A checked_root=([proto]=1 [gloo]=1)
for f in "${code_folders[@]}"; do checked_root[$f]=1; done

# Whether `path` is `prefix`, lies under it, or is its module (prefix.h/.cc).
under() {
  local path=$1 prefix=$2
  [[ $path == "$prefix" || $path == "$prefix"/* || $path == "$prefix".* ]]
}

# The rule of `file`: the longest folder line that holds it.
rule_of() {
  local file=$1 best=""
  for folder in "${!allowed[@]}"; do
    if under "$file" "$folder" && ((${#folder} > ${#best})); then best=$folder; fi
  done
  echo "$best"
}

is_production() {
  local file=$1
  for p in $production; do under "$file" "$p" && return 0; done
  return 1
}

status=0
checked=0
include_re='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]([^>"]+)[>"]'
while IFS= read -r file; do
  checked=$((checked + 1))
  folder=$(rule_of "$file")
  if [[ -z $folder ]]; then
    echo "$file: no rule covers this folder; add its line to scripts/check-architecture.sh"
    status=1
    continue
  fi
  while IFS=: read -r line text; do
    [[ $text =~ $include_re ]] || continue
    path=${BASH_REMATCH[1]}
    if [[ $path == *../* || $path == ./* ]]; then
      echo "$file:$line: includes \"$path\" by a relative path; name it from the top of the tree"
      status=1
      continue
    fi
    root=${path%%/*}
    [[ $path == */* && -n ${checked_root[$root]:-} ]] || continue  # a library's header
    if [[ $path == */simulated_clock.h ]] && is_production "$file"; then
      echo "$file:$line: production code may not include the simulated clock ($path): tests only"
      status=1
      continue
    fi
    ok=0
    for a in ${allowed[$folder]}; do
      if under "$path" "$a"; then
        ok=1
        break
      fi
    done
    if [[ $ok -eq 0 ]]; then
      if [[ $root == gloo ]]; then
        echo "$file:$line: includes Gloo ($path); of the production code only transport/ may"
      else
        echo "$file:$line: $folder may not include $path (allowed: ${allowed[$folder]})"
      fi
      status=1
    fi
  done < <(grep -n '#[[:space:]]*include' "$file" || true)
done < <(git ls-files -- '*.cc' '*.h' '*.cpp' '*.hpp')

# The simulated clock lives with the tests, and no production library
# compiles it.
while IFS= read -r file; do
  if [[ $file != tests/support/simulated_clock.* && $file != tests/*_test.cc ]]; then
    echo "$file: the simulated clock belongs in tests/support/, not in production code"
    status=1
  fi
done < <(git ls-files -- '*simulated_clock*')
for cmake in CMakeLists.txt $(git ls-files -- $(for p in $production; do echo "$p/*CMakeLists.txt"; done)); do
  if grep -n 'simulated_clock' "$cmake"; then
    echo "$cmake: a production library compiles the simulated clock"
    status=1
  fi
done

if [[ $checked -eq 0 ]]; then
  echo "check-architecture: no files checked" >&2
  exit 1
fi
[[ $status -eq 0 ]] && echo "check-architecture: $checked files follow the rules"
exit $status
