#!/usr/bin/env bash
# Builds bench/tokenizer/bench_tok_utf8proc.c (with pretok_utf8proc.c)
# against build/libq36.a, runs it RUNS times (default 3), each only once no
# compiler (cc1) is running on the machine, and writes the record (command,
# machine, commit, raw output) to OUT_DIR/output.txt.
# Usage: bench/tokenizer/run_utf8proc.sh [OUT_DIR [RUNS]]    (run `make` first)
set -eu
cd "$(dirname "$0")/../.."
out=${1:-bench/results/$(date -u +%Y-%m-%d)-tokenizer-utf8proc}
runs=${2:-3}
lib=tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
mkdir -p "$out" build/bench
make -s build/libq36.a
cc -std=c11 -O2 -g -D_GNU_SOURCE -Wall -Wextra -Wshadow -Isrc -Itests -Ibench/tokenizer \
   -Ibuild/llama.cpp/include -Ibuild/llama.cpp/ggml/include \
   -DQ36_ORACLE_LIB="\"$PWD/$lib\"" -o build/bench/bench_tok_utf8proc \
   bench/tokenizer/bench_tok_utf8proc.c bench/tokenizer/pretok_utf8proc.c \
   build/libq36.a -L"$lib" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so \
   -Wl,-rpath,"$PWD/$lib" -lcjson -lpcre2-8 -lutf8proc -lm -pthread -Wl,--exclude-libs,libq36.a
{
    echo "command: bench/tokenizer/run_utf8proc.sh $out $runs  (build/bench/bench_tok_utf8proc, $runs times)"
    echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src/tokenizer bench/tokenizer 2>/dev/null || echo ' (+ uncommitted changes in src/tokenizer or bench/tokenizer)')"
    echo "pcre2: $(dpkg-query -W -f='${Version}' libpcre2-8-0)  utf8proc: $(dpkg-query -W -f='${Version}' libutf8proc2)"
    echo "cc: $(cc --version | head -1)"
    echo "machine:"
    lscpu | head -25 | sed 's/^/  /'
    for r in $(seq 1 "$runs"); do
        while [ "$(ps aux | grep -c '[c]c1')" -ne 0 ]; do sleep 5; done
        echo
        echo "== run $r of $runs: $(date -u +%Y-%m-%dT%H:%M:%SZ), cc1 processes: $(ps aux | grep -c '[c]c1'), load: $(cat /proc/loadavg)"
        build/bench/bench_tok_utf8proc
    done
} | tee "$out/output.txt"
