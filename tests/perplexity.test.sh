#!/usr/bin/env bash
# perplexity.test.sh: `q36 perplexity` against llama-perplexity's method run
# on llama.cpp (`oracle perplexity`, tests/oracle/oracle_ppl.c), and its exits.
#
# Per model (random weights, the real Qwen3 tokenizer), on the test corpus's
# text with chunks of 64 tokens, K/V f32 on both sides and flash attention
# off in the oracle: the same number of chunks, and a final perplexity within
# 0.1% of llama.cpp's (the issue's bound; the f32 model is expected to agree
# to the printed digits). Then the exits: 2 on bad usage, 1 on a user error
# (missing file, a file shorter than two chunks) with one line on stderr.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
need_oracle perplexity.setup
cat tests/corpus/code_python.txt tests/corpus/code_c.txt tests/corpus/contractions.txt >"$tmp/text.txt"

final() { sed -n 's/^Final estimate: PPL = \([0-9.]*\).*/\1/p' "$1"; }
chunks() { tr ',' '\n' <"$1" | grep -c '^\['; }

for spec in "qwen35_f32|--arch qwen35 --preset tiny --type f32" \
            "qwen35moe_q8_0|--arch qwen35moe --preset tiny --mtp on"; do
    name=${spec%%|*}; flags=${spec#*|}
    M=$tmp/$name.gguf
    # shellcheck disable=SC2086
    if ! "$Q36" synth $flags --vocab "$VOCAB" --seed 3 -o "$M" >"$tmp/log" 2>&1; then
        fail "perplexity.$name" "q36 synth: $(tail -n 1 "$tmp/log")"; continue
    fi
    if ! "$Q36" perplexity -m "$M" -f "$tmp/text.txt" -c 64 -ctk f32 -ctv f32 >"$tmp/q.out" 2>"$tmp/q.err"; then
        fail "perplexity.$name" "q36: $(tail -n 1 "$tmp/q.err")"; continue
    fi
    if ! "$ORACLE" perplexity -m "$M" -f "$tmp/text.txt" -c 64 >"$tmp/o.out" 2>"$tmp/o.err"; then
        fail "perplexity.$name" "oracle: $(tail -n 1 "$tmp/o.err")"; continue
    fi
    q=$(final "$tmp/q.out"); o=$(final "$tmp/o.out")
    nq=$(chunks "$tmp/q.out"); no=$(chunks "$tmp/o.out")
    if [ -z "$q" ] || [ -z "$o" ] || [ "$nq" != "$no" ] || [ "$nq" -lt 2 ]; then
        fail "perplexity.$name" "q36 '$q' ($nq chunks) llama '$o' ($no chunks)"; continue
    fi
    if awk -v q="$q" -v o="$o" 'BEGIN { d = q - o; if (d < 0) d = -d; exit !(d <= 1e-3 * o) }'; then
        ok "perplexity.$name"
        echo "# perplexity $name: q36 $q llama.cpp $o over $nq chunks of 64"
    else
        fail "perplexity.$name" "q36 $q vs llama.cpp $o: more than 0.1% apart"
    fi
done

M=$tmp/qwen35_f32.gguf
printf 'def f():\n    return 1\n' >"$tmp/short.txt"
expect perplexity.usage_no_file 2 "$Q36" perplexity -m "$M"
expect perplexity.usage_bad_c 2 "$Q36" perplexity -m "$M" -f "$tmp/text.txt" -c x
expect perplexity.err_missing_file 1 "$Q36" perplexity -m "$M" -f "$tmp/none.txt"
expect perplexity.err_too_short 1 "$Q36" perplexity -m "$M" -f "$tmp/short.txt" -c 64
