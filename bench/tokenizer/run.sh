#!/usr/bin/env bash
# Builds bench/tokenizer/bench_tok.c against build/libq36.a and the pinned
# libllama, runs it, and writes the record (command, machine, commit, raw
# output) to bench/results/<date>-tokenizer/ (or the folder given).
# Usage: bench/tokenizer/run.sh [OUT_DIR]    (run `make` first)
set -eu
cd "$(dirname "$0")/../.."
out=${1:-bench/results/$(date -u +%Y-%m-%d)-tokenizer}
lib=tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
mkdir -p "$out" build/bench
make -s build/libq36.a
cc -std=c11 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Isrc -Itests \
   -Ibuild/llama.cpp/include -Ibuild/llama.cpp/ggml/include \
   -Ibench/tokenizer -DQ36_ORACLE_LIB="\"$PWD/$lib\"" -o build/bench/bench_tok bench/tokenizer/bench_tok.c \
   build/libq36.a -L"$lib" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
   -Wl,-rpath,"$PWD/$lib" -lcjson -lpcre2-8 -lm -pthread -Wl,--exclude-libs,libq36.a
{
    echo "command: bench/tokenizer/run.sh $out  (build/bench/bench_tok)"
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet -- src/tokenizer bench/tokenizer || echo ' (+ uncommitted changes in src/tokenizer or bench/tokenizer)')"
    echo "pcre2: $(pcre2-config --version 2>/dev/null || dpkg-query -W -f='${Version}' libpcre2-8-0)"
    echo "cc: $(cc --version | head -1)"
    echo "load: $(cat /proc/loadavg)"
    echo "machine:"
    lscpu | head -20 | sed 's/^/  /'
    echo
    build/bench/bench_tok
} | tee "$out/output.txt"
