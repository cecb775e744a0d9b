#!/usr/bin/env bash
# Runs every test program and script, counts their "ok"/"FAIL" lines and prints
# the closing "N passed, N failed". A program that exits non-zero without a FAIL
# line (a crash, a sanitizer report) counts as one failure of its own.
# Usage: tests/run.sh [BUILD_DIR]   (default build)
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
passed=0 failed=0
run_one() {
    local name=$1; shift
    local out rc
    out=$("$@" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^(ok|FAIL) ' || true
    local p f
    p=$(printf '%s\n' "$out" | grep -c '^ok ')
    f=$(printf '%s\n' "$out" | grep -c '^FAIL ')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exited $rc with no failed case; last output:"
        printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
        f=1
    elif [ "$f" -gt 0 ]; then
        printf '%s\n' "$out" | grep -vE '^(ok|FAIL) ' | tail -n 30 | sed 's/^/    /'
    fi
    passed=$((passed + p)); failed=$((failed + f))
}
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    echo "# $(basename "$t")"
    run_one "$(basename "$t")" "$t"
done
for s in tests/*.test.sh; do
    [ -f "$s" ] || continue
    echo "# $(basename "$s")"
    run_one "$(basename "$s")" env BUILD="$build" bash "$s"
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
