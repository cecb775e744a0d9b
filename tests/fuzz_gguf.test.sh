#!/usr/bin/env bash
# fuzz_gguf.test.sh: builds the libFuzzer target of the GGUF reader and runs it
# for ${FUZZ_SECONDS:-30} seconds from the seeds in tests/gguf/seeds/ (the
# corpus grows in build-fuzz/corpus). Prints "ok fuzz_gguf (N runs)" or
# "FAIL fuzz_gguf: ..." with the crash file. A missing clang is a failure.
set -u
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-30}
if ! command -v clang >/dev/null 2>&1; then
    echo "FAIL fuzz_gguf: clang not found (scripts/setup.sh installs it)"
    exit 1
fi
mkdir -p build-fuzz/corpus build-fuzz/crashes
if ! make --no-print-directory -s build-fuzz/fuzz_gguf >build-fuzz/build.log 2>&1; then
    echo "FAIL fuzz_gguf: the fuzz target does not build (build-fuzz/build.log):"
    tail -n 20 build-fuzz/build.log | sed 's/^/    /'
    exit 1
fi
cp -n tests/gguf/seeds/* build-fuzz/corpus/ 2>/dev/null || true
log=build-fuzz/last_run.log
build-fuzz/fuzz_gguf -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 \
    -timeout=10 -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/ \
    build-fuzz/corpus >"$log" 2>&1
rc=$?
runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
if [ "$rc" -ne 0 ]; then
    crash=$(grep -oE 'build-fuzz/crashes/[A-Za-z0-9_.-]+' "$log" | tail -n 1)
    echo "FAIL fuzz_gguf: fuzzer exited $rc; input: ${crash:-unknown}; log: $log"
    grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -n 5 | sed 's/^/    /'
    exit 1
fi
if [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
    echo "FAIL fuzz_gguf: no runs recorded; log: $log"
    exit 1
fi
echo "ok fuzz_gguf ($runs runs)"
