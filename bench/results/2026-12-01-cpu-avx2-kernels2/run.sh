#!/usr/bin/env bash
# run.sh: the before/after kernel timings of this record, old and new
# binaries alternating, every run capped at AVX2 (Q36_QUANT_PATH_MAX=avx2).
# OLD: a source tree at the commit before this work (8121cd7) with
# build/libq36.a built; the new library is this tree's build/libq36.a.
# Usage: bench/results/2026-12-01-cpu-avx2-kernels2/run.sh OLD_TREE [rounds (3)]
set -eu
cd "$(dirname "$0")/../../.."
old=${1:?usage: run.sh OLD_TREE [rounds]}
rounds=${2:-3}
d=bench/results/2026-12-01-cpu-avx2-kernels2
libs="-lcjson -lpcre2-8 -lutf8proc -lm -pthread -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcublas -lcudart_static -ldl -lrt -lstdc++"
cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o build/attnbench $d/attnbench.c build/libq36.a $libs
cc -O2 -std=c11 -D_GNU_SOURCE -DOLD -I"$old/src" -o build/attnbench_old $d/attnbench.c "$old/build/libq36.a" $libs
cc -O2 -std=c11 -D_GNU_SOURCE -Isrc -o build/convbench $d/convbench.c build/libq36.a $libs
cc -O2 -std=c11 -D_GNU_SOURCE -I"$old/src" -o build/convbench_old $d/convbench.c "$old/build/libq36.a" $libs
export Q36_QUANT_PATH_MAX=avx2
for r in $(seq "$rounds"); do
    echo "## round $r ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
    for b in old new; do
        s=; [ $b = old ] && s=_old
        echo "# $b: attention decode, depth 4096, caches of 8 layers in turn (from memory)"
        Q36_BENCH_LAYERS=8 build/attnbench$s 1 4096 1 100
        echo "# $b: attention decode, depth 4096, one cache (in L2/L3)"
        build/attnbench$s 1 4096 1 100
        echo "# $b: attention, 8 query rows (2 tiles) at depth 4096"
        build/attnbench$s 8 4096 1 40
        echo "# $b: attention kernels, one KV head, 4 queries (decode)"
        build/attnbench$s 1 4096 1 40 parts4
        echo "# $b: attention kernels, one KV head, 32 queries (a prompt tile)"
        build/attnbench$s 1 4096 1 20 parts32
        echo "# $b: conv, one token, AVX2 path, 18 layers' weights and tails in turn"
        build/convbench$s 1 2 18 300
    done
done
