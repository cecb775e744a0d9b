#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-03-cpu-attn512-rows/run.sh OLD_ATTNBENCH NEW_ATTNBENCH ROUNDS > run.txt
# attnbench (bench/results/2026-12-01-cpu-avx2-kernels2/attnbench.c, built against each tree's
# libq36.a), old and new alternating: decode at depth 4096 over 8 layers' caches (from memory),
# 1 and 2 threads, and 512 query rows at depth 4096, 2 threads; the 0.8B shape (8 query heads
# over 2) natively (AVX-512) and under Q36_QUANT_PATH_MAX=avx2.
set -u
old=$1 new=$2 rounds=${3:-3}
for r in $(seq 1 "$rounds"); do
    for cap in "" avx2; do
        echo "## round $r, ${cap:-native}, load $(cut -d' ' -f1-3 /proc/loadavg)"
        for b in old new; do
            a=$old; [ $b = new ] && a=$new
            for th in 1 2; do
                printf '%s decode th%s: ' $b $th
                Q36_QUANT_PATH_MAX=${cap:-} Q36_BENCH_LAYERS=8 "$a" 1 4096 $th 40
            done
            printf '%s prompt512 th2: ' $b
            Q36_QUANT_PATH_MAX=${cap:-} "$a" 512 4096 2 3
        done
    done
done
