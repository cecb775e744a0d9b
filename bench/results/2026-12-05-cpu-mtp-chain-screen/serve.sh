#!/usr/bin/env bash
# Usage (repository root): bench/results/2026-12-05-cpu-mtp-chain-screen/serve.sh OLD NEW ROUNDS
# bench/server/spec.sh (plain and 16k-draft-vocabulary MTP servers, greedy code completions of
# 128 tokens, 5 repetitions, one thread) at -np 1 and 4 with the old and the new binary,
# alternating; one OUT folder a run.
set -u
d=bench/results/2026-12-05-cpu-mtp-chain-screen
old=$1 new=$2
for r in $(seq 1 "${3:-1}"); do
    for np in 1 4; do
        for b in old new; do
            bin=$old
            [ $b = new ] && bin=$new
            OUT=$d/serve-r$r-np$np-$b Q36=$bin \
                CONFIGS="plain;mtp16k --spec-type draft-mtp --draft-vocab 16384" \
                bench/server/spec.sh 5 128 1 $np >/dev/null 2>&1 || echo "run r$r np$np $b failed"
        done
    done
done
