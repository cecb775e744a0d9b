#!/usr/bin/env bash
# vs_llama.sh: q36 serve and llama-server on the same model, alternated in
# one run. Needs a llama-server binary (LLAMA_SERVER; built from the
# oracle's source: this script never builds it). Writes under OUT (required).
#   scenarios: the prefix-cache scenarios of scenarios.mjs, -np 2, on each
#     server once (token counts are deterministic; OUT/scen-SERVER.log);
#   load: for each of REPS repetitions and each -np in NPS, NP streaming
#     clients (load.mjs) for SECS s on each server, q36 first in odd
#     repetitions and llama-server first in even ones
#     (OUT/load-NP-REP-SERVER.log, the summary line last).
# Both servers get -t THREADS and their default prefix cache settings;
# llama-server's -c is the total context (NP x CTX), q36's per slot (CTX,
# default 1024; 4096 for the scenarios).
# LLAMA_TEMPLATE, when set, is passed to llama-server as --chat-template-file.
# Usage: OUT=DIR LLAMA_SERVER=BIN [Q36=./q36] bench/server/vs_llama.sh MODEL
#        [WHAT=scenarios,load] [REPS=3] [SECS=20] [NPS="1 4 16"] [MAX_TOKENS=64]
set -eu
cd "$(dirname "$0")/../.."
model=$1; what=${2:-scenarios,load}; reps=${3:-3}; secs=${4:-20}; nps=${5:-1 4 16}; maxtok=${6:-64}
: "${OUT:?OUT names the record folder}" "${LLAMA_SERVER:?LLAMA_SERVER names the llama-server binary}"
q36=${Q36:-./q36}; threads=${THREADS:-2}; ctx=${CTX:-1024}
[ "$reps" -le 10 ] && [ "$secs" -le 600 ] || { echo "vs_llama.sh: at most 10 repetitions of 600 s" >&2; exit 2; }
mkdir -p "$OUT"
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; true' EXIT

# start SERVER NP LOG [CTX]: starts one server, sets pid and url
start() {
    local who=$1 np=$2 log=$3 ctx=${4:-$ctx}
    if [ "$who" = q36 ]; then
        : >"$log.out"
        "$q36" serve -m "$model" --port 0 -np "$np" -c "$ctx" -t "$threads" >"$log.out" 2>"$log.err" &
        pid=$!
        url=
        for _ in $(seq 1 600); do
            url=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' "$log.out")
            [ -n "$url" ] && return 0
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
    else
        local port=$(( 20000 + RANDOM % 20000 ))
        "$LLAMA_SERVER" -m "$model" --host 127.0.0.1 --port "$port" -np "$np" -c $(( np * ctx )) \
            -t "$threads" -tb "$threads" ${LLAMA_TEMPLATE:+--chat-template-file "$LLAMA_TEMPLATE"} \
            >"$log.out" 2>"$log.err" &
        pid=$!
        url=http://127.0.0.1:$port
        for _ in $(seq 1 600); do
            curl -sf "$url/health" >/dev/null 2>&1 && return 0
            kill -0 $pid 2>/dev/null || break
            sleep 0.1
        done
    fi
    echo "vs_llama.sh: $who did not start: $(tail -3 "$log.err")" >&2
    exit 1
}
stop() { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=; }

echo "vs_llama.sh: $(git rev-parse --short HEAD) $(date -u +%FT%TZ) model $model, $what, reps $reps, $secs s," \
     "-np $nps, $maxtok tokens, -t $threads, ctx $ctx a slot" | tee -a "$OUT/run.log"
if [[ $what == *scenarios* ]]; then
    for who in q36 llama; do
        start $who 2 "$OUT/scen-$who" 4096
        node bench/server/scenarios.mjs "$url" 7 16 >"$OUT/scen-$who.log" 2>&1 || echo "scenarios on $who failed" | tee -a "$OUT/run.log"
        curl -s "$url/metrics" | grep -E '^(llamacpp:prompt_tokens|q36:prefix)' >>"$OUT/scen-$who.log" || true
        stop
        grep -v '^{' "$OUT/scen-$who.log" | sed "s/^/$who: /" | tee -a "$OUT/run.log"
    done
fi
if [[ $what == *load* ]]; then
    for rep in $(seq 1 "$reps"); do
        for np in $nps; do
            order="q36 llama"; [ $((rep % 2)) -eq 0 ] && order="llama q36"
            for who in $order; do
                log="$OUT/load-$np-$rep-$who"
                start $who "$np" "$log"
                node bench/server/load.mjs "$url" "$np" "$secs" "$maxtok" "$pid" >"$log.log" 2>&1 || true
                stop
                echo "$who np $np rep $rep: $(tail -1 "$log.log")" | tee -a "$OUT/run.log"
            done
        done
    done
fi
