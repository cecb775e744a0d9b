#!/usr/bin/env bash
# Runs every test program and script, counts their "ok"/"FAIL"/"skip" lines
# and prints the closing "N passed, N failed, N skipped". A case prints
# "skip NAME: why" only when this CPU lacks the instructions of the kernel it
# tests. A program that exits non-zero without a FAIL line (a crash, a
# sanitizer report), or that prints no case line at all, counts as one
# failure of its own. The "# ggml variant V" lines (the libggml-cpu build
# the oracle compares with) are shown too.
# Usage: tests/run.sh [BUILD_DIR]   (default build)
# Env: Q36_ORACLE_LIB (the oracle's library folder), Q36_QUANT_PATH_MAX:
# both set by `make check-avx2`, passed on to every test.
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
passed=0 failed=0 skipped=0
run_one() {
    local name=$1; shift
    local out rc
    out=$("$@" 2>&1); rc=$?
    printf '%s\n' "$out" | grep -E '^(ok|FAIL|skip) |^# ggml variant ' || true
    local p f s
    p=$(printf '%s\n' "$out" | grep -c '^ok ')
    f=$(printf '%s\n' "$out" | grep -c '^FAIL ')
    s=$(printf '%s\n' "$out" | grep -c '^skip ')
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $name: exited $rc with no failed case; last output:"
        printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
        f=1
    elif [ "$p" -eq 0 ] && [ "$f" -eq 0 ] && [ "$s" -eq 0 ]; then
        echo "FAIL $name: printed no case line; last output:"
        printf '%s\n' "$out" | tail -n 20 | sed 's/^/    /'
        f=1
    elif [ "$f" -gt 0 ]; then
        printf '%s\n' "$out" | grep -vE '^(ok|FAIL|skip) ' | tail -n 30 | sed 's/^/    /'
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
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
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
