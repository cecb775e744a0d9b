#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-head-screen/run-08b.sh ROUNDS > run-08b.txt
# q36 run on the synthetic Qwen3.5-0.8B Q8_0 file (bench/cpu/run.sh's build/models/q08-q8_0.gguf:
# a tied Q8_0 head of 248,320 x 1,024, whose screen copy is 273 MiB), greedy and sampled (the
# defaults, --seed 42), 256 tokens after a 64-token prompt, 2 threads, the screen off
# (Q36_CPU_HEADSCREEN=0 Q36_RUN_TOPK=0: whole rows, as before) and on (the defaults), alternating.
set -u
err=$(mktemp)
trap 'rm -f "$err"' EXIT
m=build/models/q08-q8_0.gguf
for r in $(seq 1 "${1:-3}"); do
    for mode in greedy sampled; do
        flags=(--seed 42); [ $mode = greedy ] && flags=(--temp 0)
        for cfg in off on; do
            env=(); [ $cfg = off ] && env=(Q36_CPU_HEADSCREEN=0 Q36_RUN_TOPK=0)
            out=$(env "${env[@]}" ./q36 run -m "$m" --ids "$(seq -s ' ' 1000 1063)" -n 256 -t 2 \
                --print-ids "${flags[@]}" 2>"$err")
            echo "round $r $mode $cfg: $(grep -o 'generated.*' "$err") ids $(printf '%s' "$out" | md5sum | cut -c1-8) load $(cut -d' ' -f1 /proc/loadavg)"
        done
    done
done
