# prefill cost of the checkpoint spacing: one cold prompt of ~2,000 tokens on a fresh server, --cache-every 64 vs 512 (and 0 / --cache-ram 0), alternated
set -u
cd /work/wt/serve
M=${M:-/tmp/serve-models/q08-q4_K-qwenvocab.gguf}
python3 - <<'PY'
import json, random
random.seed(5)
v="the of and to in is that for it as with was on be by this are from at or an have not but which one all were when there can more if no out so said what".split()
w=[random.choice(v) for _ in range(1830)]
t="\n".join(" ".join(w[i:i+12]) for i in range(0,len(w),12))
json.dump({"messages":[{"role":"system","content":"You are a careful assistant."},{"role":"user","content":t}],"max_tokens":1,"temperature":0},open("/tmp/serve-prefill.json","w"))
PY
for rep in 1 2 3; do
  order="64 512 none"; [ $((rep % 2)) -eq 0 ] && order="none 512 64"
  for every in $order; do
    flags="--cache-every $every"; [ $every = none ] && flags="--cache-ram 0"
    /tmp/serve-q36-bench serve -m $M --port 0 -np 1 -c 4096 -t 2 $flags > /tmp/serve-p.out 2>/tmp/serve-p.err & pid=$!
    url=; for i in $(seq 300); do url=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' /tmp/serve-p.out); [ -n "$url" ] && break; sleep 0.1; done
    r=$(curl -s $url/v1/chat/completions -H 'content-type: application/json' -d @/tmp/serve-prefill.json)
    echo "rep $rep every $every: $(echo "$r" | python3 -c 'import json,sys; j=json.load(sys.stdin); t=j["timings"]; print("prompt_n", t["prompt_n"], "prompt_ms", round(t["prompt_ms"]), "tok/s", round(t["prompt_per_second"],1))')"
    kill $pid; wait $pid 2>/dev/null
  done
done
