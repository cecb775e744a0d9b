#!/usr/bin/env bash
# Cold prefill at a checkpoint spacing of 64, before and after checkpoints
# inside a pass: one cold prompt (~2,000 tokens, and a short one of ~300) on a
# fresh `q36 serve -np 1 -c 4096 -t 2`, the binaries alternated in each
# repetition (the order reversed in even ones), the server's timings.prompt_ms.
# BEFORE, AFTER: q36 binaries; M: the model; REPS (default 3).
set -u
M=${M:-/tmp/serve-models/q08-q4_K-qwenvocab.gguf}
REPS=${REPS:-3}
python3 - <<'PY'
import json, random
random.seed(5)
v="the of and to in is that for it as with was on be by this are from at or an have not but which one all were when there can more if no out so said what".split()
for name, n in (("long", 1830), ("short", 260)):
    w=[random.choice(v) for _ in range(n)]
    t="\n".join(" ".join(w[i:i+12]) for i in range(0,len(w),12))
    json.dump({"messages":[{"role":"system","content":"You are a careful assistant."},{"role":"user","content":t}],"max_tokens":1,"temperature":0},open("/tmp/incheck-prefill-%s.json" % name,"w"))
PY
run() {   # run BINARY_NAME BINARY FLAGS PROMPT
    "$2" serve -m "$M" --port 0 -np 1 -c 4096 -t 2 $3 >/tmp/incheck-p.out 2>/tmp/incheck-p.err & local pid=$!
    local url=
    for _ in $(seq 300); do url=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' /tmp/incheck-p.out); [ -n "$url" ] && break; sleep 0.1; done
    local r; r=$(curl -s "$url/v1/chat/completions" -H 'content-type: application/json' -d @/tmp/incheck-prefill-$4.json)
    echo "rep $rep $4 $1 $3: $(echo "$r" | python3 -c 'import json,sys; j=json.load(sys.stdin); t=j["timings"]; print("prompt_n", t["prompt_n"], "prompt_ms", round(t["prompt_ms"]), "tok/s", round(t["prompt_per_second"],1))')"
    kill $pid; wait $pid 2>/dev/null
}
for rep in $(seq 1 "$REPS"); do
    for p in long short; do
        if [ $((rep % 2)) -eq 1 ]; then
            run before "$BEFORE" "--cache-every 64" $p; run after "$AFTER" "--cache-every 64" $p; run after "$AFTER" "--cache-ram 0" $p
        else
            run after "$AFTER" "--cache-ram 0" $p; run after "$AFTER" "--cache-every 64" $p; run before "$BEFORE" "--cache-every 64" $p
        fi
    done
done
