#!/usr/bin/env bash
# Builds bench/sampler/bench_smp.c against build/libq36.a and the pinned
# libllama, runs it, and writes the record (command, machine, commit, raw
# output) to bench/results/<date>-sampler/ (or the folder given).
# Usage: bench/sampler/run.sh [OUT_DIR]    (run `make` first)
set -eu
cd "$(dirname "$0")/../.."
out=${1:-bench/results/$(date -u +%Y-%m-%d)-sampler}
lib=tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
mkdir -p "$out" build/bench
make -s build/libq36.a
cc -std=c11 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Isrc -Itests \
   -Ibuild/llama.cpp/include -Ibuild/llama.cpp/ggml/include \
   -o build/bench/bench_smp bench/sampler/bench_smp.c \
   build/libq36.a -L"$lib" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
   -Wl,-rpath,"$PWD/$lib" -lm -pthread -Wl,--exclude-libs,libq36.a
{
    echo "command: bench/sampler/run.sh $out  (build/bench/bench_smp)"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src/sampler bench/sampler || echo ' (+ uncommitted changes in src/sampler or bench/sampler)')"
    echo "cc: $(cc --version | head -1)"
    echo "load: $(cat /proc/loadavg)"
    echo "machine:"
    lscpu | head -20 | sed 's/^/  /'
    echo
    build/bench/bench_smp
} | tee "$out/output.txt"
