#!/usr/bin/env bash
# Instruction counts (valgrind --tool=callgrind, repeatable under load) of a
# fresh `q36 serve -np 1 -c 4096 -t 1` that evaluates one cold prompt (the
# short one of spacing-prefill.sh, 302 tokens) and stops: before and after at
# --cache-every 64, after with --cache-ram 0, and a server that starts and
# stops with no request (its start-up, the same in all). BEFORE, AFTER: q36
# binaries; M: the model; OUTDIR: where callgrind.out.* go; PROMPT: short
# (default) or long.
set -u
M=${M:-/tmp/serve-models/q08-q4_K-qwenvocab.gguf}
PROMPT=${PROMPT:-short}
OUTDIR=${OUTDIR:-/tmp/incheck-cg}
mkdir -p "$OUTDIR"
cg() {   # cg NAME BINARY FLAGS PROMPT(or none)
    valgrind --tool=callgrind --callgrind-out-file="$OUTDIR/callgrind.out.$1" "$2" serve -m "$M" \
        --port 0 -np 1 -c 4096 -t 1 $3 >"$OUTDIR/$1.out" 2>"$OUTDIR/$1.err" & local pid=$!
    local url=
    for _ in $(seq 6000); do url=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' "$OUTDIR/$1.out"); [ -n "$url" ] && break; sleep 0.2; done
    if [ "$4" != none ]; then
        local r; r=$(curl -s "$url/v1/chat/completions" -H 'content-type: application/json' -d @/tmp/incheck-prefill-$4.json)
        echo "$1: $(echo "$r" | python3 -c 'import json,sys; j=json.load(sys.stdin); t=j["timings"]; print("prompt_n", t["prompt_n"], "prompt_ms", round(t["prompt_ms"]))')"
    fi
    kill -TERM $pid; wait $pid
    echo "$1: Ir $(callgrind_annotate "$OUTDIR/callgrind.out.$1" 2>/dev/null | sed -n 's/^\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p')"
}
cg startup "$AFTER" "--cache-every 64" none
cg before64 "$BEFORE" "--cache-every 64" "$PROMPT"
cg after64 "$AFTER" "--cache-every 64" "$PROMPT"
cg after_nocache "$AFTER" "--cache-ram 0" "$PROMPT"
