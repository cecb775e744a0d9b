#!/usr/bin/env bash
# fuzz_server.test.sh: builds the server's libFuzzer targets (the tool-call
# parser, fuzz_chat_stream; the request-to-prompt path, fuzz_request) and
# runs each for ${FUZZ_SERVER_SECONDS:-10} seconds from the seeds in
# tests/fuzz/seeds/NAME/ (the corpora grow in build-fuzz/corpus-NAME).
# One line per target: "ok fuzz_NAME (N runs)" or "FAIL fuzz_NAME: ..." with
# the crash file. A missing clang is a failure.
set -u
cd "$(dirname "$0")/.."
secs=${FUZZ_SERVER_SECONDS:-10}
command -v clang >/dev/null 2>&1 || { echo "FAIL fuzz_server: clang not found (scripts/setup.sh installs it)"; exit 1; }
status=0
for name in chat_stream request; do
    bin=build-fuzz/fuzz_$name
    mkdir -p "build-fuzz/corpus-$name" build-fuzz/crashes
    if ! make --no-print-directory -s "$bin" >"build-fuzz/build-$name.log" 2>&1; then
        echo "FAIL fuzz_$name: the fuzz target does not build (build-fuzz/build-$name.log):"
        tail -n 20 "build-fuzz/build-$name.log" | sed 's/^/    /'
        status=1; continue
    fi
    cp -n tests/fuzz/seeds/$name/* "build-fuzz/corpus-$name/" 2>/dev/null || true
    log=build-fuzz/last_run_$name.log
    "$bin" -max_total_time="$secs" -max_len=16384 -rss_limit_mb=2048 -timeout=10 \
        -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/ "build-fuzz/corpus-$name" >"$log" 2>&1
    rc=$?
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
    if [ "$rc" -ne 0 ]; then
        crash=$(grep -oE 'build-fuzz/crashes/[A-Za-z0-9_.-]+' "$log" | tail -n 1)
        echo "FAIL fuzz_$name: fuzzer exited $rc; input: ${crash:-unknown}; log: $log"
        grep -E 'ERROR|SUMMARY|runtime error' "$log" | head -n 5 | sed 's/^/    /'
        status=1
    elif [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
        echo "FAIL fuzz_$name: no runs recorded; log: $log"; status=1
    else
        echo "ok fuzz_$name ($runs runs)"
    fi
done
exit $status
