#!/usr/bin/env bash
# bench/cpu/avx2.sh: bench/cpu/run.sh's whole table (the four files, depths 0
# and 4096, pp512 and tg128, then one profiled run per file) as on a CPU
# without AVX-512, on a machine that has it: q36 with Q36_QUANT_PATH_MAX=avx2
# (every CPU kernel choice an AVX2 one), llama.cpp from a temporary folder of
# links to the pinned libraries in which libggml-cpu-haswell.so (its AVX2
# build) is the only CPU variant. Writes what run.sh writes to OUT.
# Usage: bench/cpu/avx2.sh OUT_DIR [reps (5)] [threads (2)] [depths (0,4096)]
# Env: as run.sh (Q36, MODELS, FILES).
set -eu
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/cpu/avx2.sh OUT_DIR [reps] [threads] [depths]}
bins=$PWD/tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
[ -d "$bins" ] || { echo "bench/cpu/avx2.sh: $bins missing (run scripts/setup.sh)" >&2; exit 1; }
lib=$(mktemp -d)
trap 'rm -rf "$lib"' EXIT
for f in "$bins"/*; do
    case $(basename "$f") in
    libggml-cpu-haswell.so) ln -s "$f" "$lib/" ;;
    libggml-cpu-*) ;;
    *) ln -s "$f" "$lib/" ;;
    esac
done
Q36_QUANT_PATH_MAX=avx2 LLAMA_LIB=$lib bench/cpu/run.sh "$@"
