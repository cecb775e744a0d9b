#!/usr/bin/env bash
# run.sh: q36 run on a 3,601-token prompt ("hello world " x 300) with f16 and
# with q8_0 K/V caches, alternating, REPS rounds (default 2): prompt and
# decode tok/s from q36's own closing line; q8_0 also with each OTHER binary
# given (an earlier build). From the repository root:
#   bash bench/results/2026-12-04-cpu-kv-q8/run.sh [REPS [OTHER...]] > .../run.txt
set -eu
reps=${1:-2}
shift || true
M=build/models/q08-q4_K.gguf
[ -s "$M" ] || build/q36 synth --preset 0.8b --type q4_K -o "$M" >/dev/null
p=$(mktemp); trap 'rm -f "$p"' EXIT
python3 -c "print('hello world ' * 300)" >"$p"
echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- src tools || echo ' (with uncommitted changes)')"
echo "cpu: $(lscpu | grep 'Model name' | sed 's/ \+/ /g'), flags: $(grep -m1 '^flags' /proc/cpuinfo | grep -oE 'avx512f|avx2' | sort -u | tr '\n' ' ')"
echo "model: $M ($(sha256sum "$M" | cut -c1-16))"
for r in $(seq "$reps"); do
    for run in "build/q36 f16" "build/q36 q8_0" $(for b in "$@"; do echo "$b:q8_0"; done); do
        bin=${run%% *} kv=${run##* }
        case $run in *:q8_0) bin=${run%:q8_0} kv=q8_0 ;; esac
        echo "## round $r, $bin -ctk $kv -ctv $kv, load $(cut -d' ' -f1 /proc/loadavg)"
        echo "\$ $bin run -m $M -f PROMPT -n 32 -ctk $kv -ctv $kv -t 2 --temp 0"
        "$bin" run -m "$M" -f "$p" -n 32 -ctk $kv -ctv $kv -t 2 --temp 0 2>&1 >/dev/null | tail -n 1
    done
done
