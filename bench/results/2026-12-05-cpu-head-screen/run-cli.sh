#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-head-screen/run-cli.sh ROUNDS > run-cli.txt
# q36 run on the default model, the code prompt, 2000 tokens, one thread: sampled (the defaults:
# --temp 0.8 --top-k 40 --top-p 0.95 --min-p 0.05, --seed 42) and greedy (--temp 0), with
#   rows:   Q36_RUN_TOPK=0 Q36_CPU_HEADSCREEN=0 (whole rows of logits, the exact head: before)
#   topk:   Q36_CPU_HEADSCREEN=0                (sampled only: a step's 40 best from the exact
#                                                head's product)
#   screen: the defaults                        (the 40 best, or the greedy id, from the screen)
# alternating; the generated tokens' rate from q36's own stderr line, and a hash of the ids.
set -u
err=$(mktemp)
trap 'rm -f "$err"' EXIT
p=bench/results/2026-12-01-mtp/prompt-code.txt
for r in $(seq 1 "${1:-5}"); do
    for mode in sampled greedy; do
        flags=(--seed 42); [ $mode = greedy ] && flags=(--temp 0)
        cfgs=(rows topk screen); [ $mode = greedy ] && cfgs=(rows screen)
        for cfg in "${cfgs[@]}"; do
            case $cfg in
                rows) env=(Q36_RUN_TOPK=0 Q36_CPU_HEADSCREEN=0) ;;
                topk) env=(Q36_CPU_HEADSCREEN=0) ;;
                screen) env=() ;;
            esac
            out=$(env "${env[@]}" ./q36 run -f "$p" -n 2000 -t 1 --print-ids "${flags[@]}" 2>"$err")
            echo "round $r $mode $cfg: $(grep -o 'generated.*' "$err") ids $(printf '%s' "$out" | md5sum | cut -c1-8) load $(cut -d' ' -f1 /proc/loadavg)"
        done
    done
done
