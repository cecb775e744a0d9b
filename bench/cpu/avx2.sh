#!/usr/bin/env bash
# bench/cpu/avx2.sh: q36 against llama.cpp as on a CPU without AVX-512, on a
# machine that has it: q36 with Q36_QUANT_PATH_MAX=avx2 (every CPU kernel
# choice an AVX2 one), llama.cpp from a temporary folder of links to the
# pinned libraries in which libggml-cpu-haswell.so (its AVX2 build) is the
# only CPU variant. Writes the machine, the command and the raw output to OUT.
# Usage: bench/cpu/avx2.sh OUT_DIR [model (build/models/q08-q4_K.gguf)] [reps (5)] [threads (2)]
# Env: Q36 (default ./build/q36).
set -eu
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/cpu/avx2.sh OUT_DIR [model] [reps] [threads]}
model=${2:-build/models/q08-q4_K.gguf} reps=${3:-5} threads=${4:-2}
Q36=${Q36:-./build/q36}
bins=$PWD/tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
[ -d "$bins" ] || { echo "bench/cpu/avx2.sh: $bins missing (run scripts/setup.sh)" >&2; exit 1; }
[ -s "$model" ] || { echo "bench/cpu/avx2.sh: $model missing (bench/cpu/run.sh makes it)" >&2; exit 1; }
lib=$(mktemp -d)
trap 'rm -rf "$lib"' EXIT
for f in "$bins"/*; do
    case $(basename "$f") in
    libggml-cpu-haswell.so) ln -s "$f" "$lib/" ;;
    libggml-cpu-*) ;;
    *) ln -s "$f" "$lib/" ;;
    esac
done
mkdir -p "$out"
name=$(basename "$model" .gguf)
cmd=(env Q36_QUANT_PATH_MAX=avx2 "$Q36" bench -m "$model" -p 512 -n 128 -d 0,4096 -r "$reps"
     -t "$threads" --baseline llama.cpp --llama-lib "$lib" --bandwidth --progress)
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(git rev-parse HEAD)"
    echo "q36 binary: $Q36"
    echo "llama.cpp: the pinned libraries with libggml-cpu-haswell.so as the only CPU variant"
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"
echo "${cmd[*]}" >"$out/$name.cmd"
"${cmd[@]}" >"$out/$name.md" 2>"$out/$name.stderr"
echo "load after: $(cat /proc/loadavg)" >>"$out/machine.txt"
echo "done: $out"
