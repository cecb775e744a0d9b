#!/usr/bin/env bash
# spec.sh: q36 serve with and without MTP drafts (--spec-type draft-mtp),
# alternated in one run (spec.mjs): servers of the same model and flags,
# started together and used one at a time; by default plain, drafts with
# the draft head over 16384 ids, drafts with the full head (llama.cpp's),
# or the list in CONFIGS. Each
# repetition sends the same -np concurrent greedy code completions to each.
# No prefix cache (--cache-ram 0): every repetition reads its prompts again,
# so the MTP block sees every prompt with its hidden rows.
# Writes OUT/run.jsonl, OUT/machine.txt, OUT/server-*.log, OUT/metrics-*.txt
# (each server's /metrics at the end) when OUT is set.
# Usage: bench/server/spec.sh [REPS=5] [MAX_TOKENS=128] [THREADS=1] [NP=4] [q36 serve flags...]
# NP: slots and concurrent requests (1 to 4: the first NP of the four prompts).
# Q36 names the binary (default ./q36); MODEL the GGUF (default: q36's own).
set -eu
cd "$(dirname "$0")/../.."
reps=${1:-5}; maxtok=${2:-128}; threads=${3:-1}; np=${4:-4}
shift $(( $# < 4 ? $# : 4 ))
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
prompts="bench/results/2026-12-01-mtp/prompt-code.txt bench/results/2026-12-01-mtp/prompt-model_mtp.txt
bench/results/2026-12-01-mtp/prompt-export_gguf.txt $out/prompt-data.txt"
head -c 1500 tools/train/data.py >"$out/prompt-data.txt"
prompts=$(echo $prompts | tr ' ' '\n' | head -n "$np" | tr '\n' ' ')
m=${MODEL:+-m $MODEL}
{ echo "commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src tools || echo ' (+ uncommitted changes)')"
  echo "date $(date -u +%FT%TZ)"; lscpu | grep -E "Model name|^CPU\(s\)"; uptime
  echo "flags: -np $np -t $threads --cache-ram 0 $* ; reps $reps, $maxtok tokens"
  echo "configs: ${CONFIGS:-default}"; } | tee "$out/machine.txt"
pids=()
start() {   # start LABEL FLAGS...: a server; its URL into url_LABEL
    local label=$1; shift
    "${Q36:-./q36}" serve $m --port 0 -np "$np" -t "$threads" -c 4096 --cache-ram 0 "$@" \
        >"$out/server-$label.out" 2>"$out/server-$label.log" &
    pids+=($!)
}
trap 'kill ${pids[@]} 2>/dev/null || true' EXIT
# CONFIGS: the servers, "LABEL FLAGS..." separated by ';', the first the
# baseline of the ratios
configs=${CONFIGS:-"plain;mtp16k --spec-type draft-mtp --draft-vocab 16384;mtpfull --spec-type draft-mtp"}
labels=()
IFS=';' read -ra cfg <<<"$configs"
for c in "${cfg[@]}"; do
    read -ra w <<<"$c"
    labels+=("${w[0]}")
    start "${w[@]}" "$@"
done
urls=()
i=0
for label in "${labels[@]}"; do
    u=
    for _ in $(seq 1 100); do
        u=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' "$out/server-$label.out")
        [ -n "$u" ] && break
        sleep 0.1
    done
    [ -n "$u" ] || { echo "spec.sh: server $label did not start: $(cat "$out/server-$label.log")" >&2; exit 1; }
    urls+=("$label=$u,${pids[$i]}")
    i=$((i + 1))
done
node bench/server/spec.mjs "$reps" "$maxtok" "${urls[@]}" -- $prompts | tee "$out/run.jsonl"
# each server's /metrics after the run: the engine thread's time in forward
# passes, draft passes and accepting verify rows (q36_step_seconds_total ...)
for u in "${urls[@]}"; do
    l=${u%%=*}; a=${u#*=}
    curl -s "${a%,*}/metrics" >"$out/metrics-$l.txt" || echo "spec.sh: no /metrics from $l" >&2
done
uptime | tee -a "$out/machine.txt"
