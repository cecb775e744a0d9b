#!/usr/bin/env bash
# A first-sight 1,811-token prompt on q36 serve (CPU, default model, -t 2,
# -np 1), with the prefix cache off (--cache-ram 0) and on (the default
# 2,048 MiB), alternating, ROUNDS rounds; each server start gets four
# prompts that differ in their first word (no prefix in common with an
# earlier one beyond the chat template's few tokens); prints each reply's
# timings.prompt_ms. Then the page-fault probe (pf.c) of this machine.
# Usage (repository root): bash bench/results/2026-12-06-cpu-cache-first-prompt/run.sh [ROUNDS]
set -eu
here=$(dirname "$0")
rounds=${1:-3}
port=${PORT:-18555}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - >"$tmp/long.json" <<'PY'
import json, random
random.seed(1)
words = "alpha beta gamma delta code function return value struct pointer memory thread buffer parse token model layer".split()
txt = " ".join(random.choice(words) for _ in range(1800))
print(json.dumps({"messages": [{"role": "user", "content": txt}], "max_tokens": 4, "temperature": 0}))
PY
for round in $(seq 1 "$rounds"); do
    for cr in 0 2048; do
        ./q36 serve -m build/default.gguf -np 1 -c 4096 -t 2 --port $port --cache-ram $cr >"$tmp/sv.out" 2>"$tmp/sv.err" &
        pid=$!
        sleep 1.5
        out=""
        for i in 1 2 3 4; do
            sed "s/alpha/alpha$i$round/" "$tmp/long.json" >"$tmp/long$i.json"
            ms=$(curl -s -X POST http://127.0.0.1:$port/v1/chat/completions -H 'Content-Type: application/json' \
                -d @"$tmp/long$i.json" | python3 -c "import json,sys; d=json.load(sys.stdin); print(d['timings']['prompt_n'], round(d['timings']['prompt_ms']))")
            out="$out | $ms"
        done
        echo "round $round --cache-ram $cr:$out"
        kill $pid
        wait $pid 2>/dev/null || true
    done
done
gcc -O2 -o "$tmp/pf" "$here/pf.c" && "$tmp/pf"
