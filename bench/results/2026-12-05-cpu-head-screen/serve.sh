#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-head-screen/serve.sh ROUNDS
# bench/server/spec.sh (plain and 16k-draft-vocabulary MTP servers, greedy code completions of
# 128 tokens, 5 repetitions, one thread) at -np 1 and 4, with the greedy head's screen off
# (Q36_CPU_HEADSCREEN=0, both servers) and on (the default), alternating; one OUT folder a run.
set -u
d=bench/results/2026-12-05-cpu-head-screen
for r in $(seq 1 "${1:-2}"); do
    for np in 1 4; do
        for hs in 0 1; do
            OUT=$d/serve-r$r-np$np-hs$hs Q36_CPU_HEADSCREEN=$hs \
                CONFIGS="plain;mtp16k --spec-type draft-mtp --draft-vocab 16384" \
                bench/server/spec.sh 5 128 1 $np >/dev/null 2>&1 || echo "run r$r np$np hs$hs failed"
        done
    done
done
