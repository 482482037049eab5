#!/usr/bin/env bash
# Builds the config parser's libFuzzer target with clang (ASan + UBSan) and
# runs it for SECONDS (default 60) from the seed corpus in tests/fuzz/corpus.
# Prints how many inputs were tried; non-zero exit on any crash.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=${FUZZ_BUILD_DIR:-build-fuzz}
mkdir -p "$out/corpus"
cp tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
clang++ -std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -I. tests/fuzz/config_fuzzer.cc common/config.cc common/user_text.cc -o "$out/config_fuzzer" \
  $(pkg-config --cflags --libs absl_status absl_statusor absl_strings absl_str_format absl_time \
    absl_flat_hash_map absl_hash absl_raw_hash_set \
    yaml-cpp)
"$out/config_fuzzer" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$out/corpus" 2>&1 | tee "$out/fuzz.log" | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==|SUMMARY)" || true
if grep -qE "^==[0-9]+==ERROR|SUMMARY: .*Sanitizer|deadly signal" "$out/fuzz.log"; then
  echo "config fuzz: FAILED, see $out/fuzz.log"
  exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log")
[ -n "$runs" ] || { echo "config fuzz: no statistics in $out/fuzz.log"; exit 1; }
echo "config fuzz: $runs inputs in ${seconds}s, no crash, leak or undefined behaviour"
