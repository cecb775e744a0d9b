#!/usr/bin/env bash
# device_run.sh: runs the prebuilt quant path test and dot-product bench
# on another host (the GPU machine's CPU), from the repository root, and
# writes the raw output under $OUT (default ./quant-dev-out).
#   BIN  folder with test_quant_paths and bench_dot (default build/quant-dev,
#        made by bench/quant/device_prep.sh)
#   LIB  folder with libggml-base.so and libggml-cpu-*.so (default $BIN/lib)
#   GGML_VARIANT  the libggml-cpu variant the bench compares against
#        (default: the best-scoring one this CPU runs, as ggml would load)
#   RUNS number of bench runs (default 3; each prints medians of 11 samples)
#   LENS row lengths (default "1024 4096 16384")
# Files: lscpu.txt, test_quant_paths.txt, bench_run<k>.txt for the
# runs against the default variant, bench_median.txt (per-cell medians of
# those, bench/quant/median_runs.awk), bench_haswell.txt (AVX2 ggml), and
# summary.txt (every file's lines in one). One thread, pinned to one core
# when taskset exists. Exit status: the test's.
set -u
cd "$(dirname "$0")/../.."
BIN=${BIN:-build/quant-dev}
export LIB=${LIB:-$BIN/lib}
OUT=${OUT:-$PWD/quant-dev-out}
RUNS=${RUNS:-3}
LENS=${LENS:-1024 4096 16384}
mkdir -p "$OUT"
export LD_LIBRARY_PATH=$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PIN=""
command -v taskset >/dev/null && PIN="taskset -c 1"

{
    echo "# date: $(date -u +%FT%TZ)  host: $(hostname)  commit: $(cat "$BIN/commit" 2>/dev/null || echo ?)"
    lscpu | head -25
    echo "# avx512 flags: $(grep -o 'avx512[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
    echo "# nproc: $(nproc)  load: $(cat /proc/loadavg)"
} > "$OUT/lscpu.txt" 2>&1
cat "$OUT/lscpu.txt"

for b in "$BIN/test_quant_paths" "$BIN/bench_dot"; do
    if [ ! -x "$b" ]; then
        echo "device_run: $b missing (run bench/quant/device_prep.sh on the build machine and carry $BIN)" | tee -a "$OUT/lscpu.txt"
        exit 2
    fi
done

echo "== test_quant_paths"
$PIN "$BIN/test_quant_paths" > "$OUT/test_quant_paths.txt" 2>&1
rc=$?
cat "$OUT/test_quant_paths.txt"
echo "# test_quant_paths exit $rc" | tee -a "$OUT/test_quant_paths.txt"
if [ "$rc" -gt 1 ]; then
    ldd "$BIN/test_quant_paths" 2>&1 | tee -a "$OUT/test_quant_paths.txt"
fi

# shellcheck disable=SC2086
for k in $(seq 1 "$RUNS"); do
    echo "== bench_dot run $k (ggml variant: ${GGML_VARIANT:-best for this CPU})"
    $PIN "$BIN/bench_dot" -r 11 $LENS > "$OUT/bench_run$k.txt" 2>&1
    cat "$OUT/bench_run$k.txt"
done
echo "== median over the $RUNS runs"
awk -f bench/quant/median_runs.awk "$OUT"/bench_run*.txt | tee "$OUT/bench_median.txt"
if [ -z "${GGML_VARIANT:-}" ]; then
    echo "== bench_dot against ggml haswell (AVX2), n = 4096"
    # shellcheck disable=SC2086
    $PIN "$BIN/bench_dot" -r 11 -g haswell 4096 > "$OUT/bench_haswell.txt" 2>&1
    cat "$OUT/bench_haswell.txt"
fi
for f in "$OUT"/lscpu.txt "$OUT"/test_quant_paths.txt "$OUT"/bench_*.txt; do
    echo "### $(basename "$f")"
    cat "$f"
done > "$OUT/summary.txt"
exit "$rc"
