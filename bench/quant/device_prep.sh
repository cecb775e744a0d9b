#!/usr/bin/env bash
# device_prep.sh: builds, on this machine, what bench/quant/device_run.sh
# runs on another x86-64 host, and gathers it in one folder to carry:
#   build/quant-dev/test_quant_paths   (make build/tests/test_quant_paths)
#   build/quant-dev/bench_dot          (the build command in bench_dot.c)
#   build/quant-dev/lib/               libggml-base.so + the x86 libggml-cpu-*.so
# Neither binary uses -march: they pick their paths by cpuid at run time.
# They need glibc >= 2.34 there (and libstdc++ for the ggml libraries).
# Usage (repository root): bench/quant/device_prep.sh   [make -j2 at most]
set -euo pipefail
cd "$(dirname "$0")/../.."
L=$PWD/tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
D=build/quant-dev
make -j2 build/libq36.a build/tests/test_quant_paths >/dev/null
mkdir -p "$D/lib"
cc -std=c11 -O2 -Wall -Wextra -D_GNU_SOURCE -Isrc -Ibuild/llama.cpp/ggml/include \
   -DQ36_ORACLE_LIB="\"$L\"" bench/quant/bench_dot.c build/libq36.a \
   -ldl -lm -pthread -o "$D/bench_dot"
cp build/tests/test_quant_paths "$D/"
cp "$L/libggml-base.so" "$D/lib/"
for v in x64 sse42 sandybridge ivybridge piledriver haswell alderlake skylakex cannonlake \
         cascadelake icelake cooperlake zen4 sapphirerapids; do
    cp "$L/libggml-cpu-$v.so" "$D/lib/"
done
git rev-parse HEAD > "$D/commit"
du -sh "$D"
ls -l "$D" "$D/lib"
