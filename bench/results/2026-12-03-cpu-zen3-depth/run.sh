#!/usr/bin/env bash
# Usage (repository root, after make q36 and bench/cpu/run.sh made build/models):
#   bench/results/2026-12-03-cpu-zen3-depth/run.sh OUT_DIR
# The three cells of ../2026-12-03-cpu-zen3/ just under issue 11's 1.5x, pp512 at
# depth 4096, again: q36 bench beside the pinned llama.cpp, 5 repetitions
# interleaved, 2 threads, one file after another.
set -u
out=${1:?usage: run.sh OUT_DIR}
for f in q08-q4_K moe-scaled-q4_K q08-q4_K_M; do
    echo "./build/q36 bench -m build/models/$f.gguf -p 512 -n 0 -d 4096 -r 5 -t 2 --baseline llama.cpp" >"$out/$f.cmd"
    echo "load before: $(cat /proc/loadavg)" >"$out/$f.stderr"
    ./build/q36 bench -m "build/models/$f.gguf" -p 512 -n 0 -d 4096 -r 5 -t 2 --baseline llama.cpp \
        >"$out/$f.md" 2>>"$out/$f.stderr"
    echo "load after: $(cat /proc/loadavg)" >>"$out/$f.stderr"
done
