#!/usr/bin/env bash
# Fails when a C++ source is not formatted per .clang-format.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -- '*.cc' '*.h' 2>/dev/null || find daemon client tests bench -name '*.cc' -o -name '*.h')
clang-format --dry-run --Werror "${files[@]}"
echo "clang-format: ${#files[@]} files formatted"
