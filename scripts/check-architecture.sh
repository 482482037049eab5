#!/usr/bin/env bash
# The dependency rules of the tree (docs/design.md, "Libraries"): which
# folder's code may include which, that only the transport includes Gloo, and
# what tests/ may include from tests/.
# Prints every violation; exit 1 if there is one.
set -euo pipefail
cd "$(dirname "$0")/.."

# folder: the folders of this project its files may include from
declare -A allowed=(
  [common]="common proto"
  [channel]="channel common proto"
  [daemon]="daemon channel common proto"
  [transport]="transport channel common proto"
  [client]="client common proto"
  [gloowatchd]="gloowatchd daemon transport channel common proto"  # main of both processes
)
status=0
checked=0
for folder in "${!allowed[@]}"; do
  while IFS= read -r file; do
    checked=$((checked + 1))
    while IFS=: read -r line text; do
      if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*[\<\"]gloo/ ]] && [[ $folder != transport ]]; then
        echo "$file:$line: includes Gloo; only transport/ may"
        status=1
      fi
      if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"([a-z_]+)/ ]]; then
        target=${BASH_REMATCH[1]}
        [[ -d $target ]] || continue  # a library's header (absl/, grpcpp/, ...)
        if [[ " ${allowed[$folder]} " != *" $target "* ]]; then
          echo "$file:$line: $folder/ may not include $target/ (allowed: ${allowed[$folder]})"
          status=1
        fi
      fi
    done < <(grep -n '#[[:space:]]*include' "$file" || true)
  done < <(git ls-files -- "$folder/*.cc" "$folder/*.h")
done
# tests/: a test takes from tests/ only the support library and its own
# folder (no test leans on another kind's test code), and the support
# library, which every test links, client tests included, takes nothing from
# client/.
while IFS= read -r file; do
  checked=$((checked + 1))
  own=${file#tests/}
  own=${own%%/*}
  while IFS=: read -r line text; do
    if [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"tests/([a-z_]+)/ ]] &&
      [[ ${BASH_REMATCH[1]} != support && ${BASH_REMATCH[1]} != "$own" ]]; then
      echo "$file:$line: tests/$own/ may include from tests/ only tests/support/ and its own folder"
      status=1
    fi
    if [[ $file == tests/support/* ]] &&
      [[ $text =~ ^[[:space:]]*#[[:space:]]*include[[:space:]]*\"client/ ]]; then
      echo "$file:$line: tests/support/ may not include client/ (every test links it)"
      status=1
    fi
  done < <(grep -n '#[[:space:]]*include' "$file" || true)
done < <(git ls-files -- 'tests/*.cc' 'tests/*.h')
if [[ $checked -eq 0 ]]; then
  echo "check-architecture: no files checked" >&2
  exit 1
fi
[[ $status -eq 0 ]] && echo "check-architecture: $checked files follow the rules"
exit $status
