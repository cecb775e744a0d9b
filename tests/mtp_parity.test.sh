#!/usr/bin/env bash
# mtp_parity.test.sh: q36's MTP block against llama.cpp's (`oracle mtp`:
# a target context exporting h_nextn, then a context of type MTP over
# (id p, h_nextn of p-1), zeros at p = 0, as its draft-mtp catch-up pairs
# them). The MTP head's logits of every row, `q36 logits --mtp` beside
# `oracle mtp`, K/V f32 on both sides: on the trained default model (prompts
# of 1, 17, 64 and 300 tokens of Python) bit-identical (measured 0), and on
# q36 synth models with a random MTP block (qwen35 dense FFN, qwen35moe)
# within relative L2 1e-3 at every row (measured 0 there too, on zen4).
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
need_oracle mtp_parity.setup
XZ=models/q36-tiny-moe.gguf.xz
M=$tmp/trained.gguf
if ! xz -dc "$XZ" >"$M" 2>"$tmp/err"; then
    fail mtp_parity.setup "cannot unpack $XZ: $(head -c 200 "$tmp/err")"; exit 1
fi
cat tools/train/model_mtp.py >"$tmp/text.txt"
if ! "$Q36" tokenize -m "$M" -f "$tmp/text.txt" --ids >"$tmp/all.ids" 2>"$tmp/err"; then
    fail mtp_parity.setup "q36 tokenize: $(tail -n 1 "$tmp/err")"; exit 1
fi
read -r -a ALL < <(tr '\n' ' ' <"$tmp/all.ids")

# check NAME MODEL IDS_FILE BOUND
check() {
    local name=$1 model=$2 ids=$3 bound=$4 V r rel
    V=$("$Q36" info -m "$model" | awk '$1 == "n_vocab" { print $2 }')
    if ! "$Q36" logits -m "$model" --ids-file "$ids" --mtp -o "$tmp/q.f32" -ctk f32 -ctv f32 >/dev/null 2>"$tmp/err"; then
        fail "$name" "q36: $(tail -n 1 "$tmp/err")"; return
    fi
    if ! "$ORACLE" mtp -m "$model" --ids-file "$ids" -o "$tmp/o.f32" >/dev/null 2>"$tmp/err"; then
        fail "$name" "oracle: $(tail -n 1 "$tmp/err")"; return
    fi
    r=$("$ORACLE" compare "$tmp/q.f32" "$tmp/o.f32" -n "$V")
    rel=$(echo "$r" | awk '{ for (i = 1; i < NF; i++) if ($i == "worst_rel_l2") print $(i + 1) }')
    if awk -v x="$rel" -v b="$bound" 'BEGIN { exit !(x != "" && x <= b) }'; then
        ok "$name"
        echo "# $name: $r"
    else
        fail "$name" "$r"
    fi
}

for P in 1 17 64 300; do
    echo "${ALL[*]:0:P}" >"$tmp/p.ids"
    check "mtp_parity.trained_$P" "$M" "$tmp/p.ids" 0
done

for spec in "qwen35|--arch qwen35 --preset tiny --seed 21 --mtp on" \
            "qwen35moe|--arch qwen35moe --preset tiny --seed 22 --layers 5 --attn-interval 2 --mtp on"; do
    name=${spec%%|*}; flags=${spec#*|}
    if ! "$Q36" synth $flags -o "$tmp/$name.gguf" >/dev/null 2>"$tmp/err"; then
        fail "mtp_parity.synth_$name" "q36 synth: $(tail -n 1 "$tmp/err")"; continue
    fi
    echo "3 17 99 4 250 7 7 31 64 5 1 2 77 300 12 9 200 44 18 6 3 8 15" >"$tmp/s.ids"
    check "mtp_parity.synth_$name" "$tmp/$name.gguf" "$tmp/s.ids" 1e-3
done
