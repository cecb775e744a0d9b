#!/usr/bin/env bash
# q36 synth writes every weight type, llama.cpp loads and decodes each file,
# and `q36 info --dump` of its tensors equals llama.cpp's dequantization of
# the same tensor bit for bit (a dense and a MoE file, 2-D and 3-D tensors).
set -u
. "$(dirname "$0")/lib.sh"
need_oracle synth_types

types="${SYNTH_TYPES:-f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq1_s iq1_m iq2_xxs
       iq2_xs iq2_s iq3_xxs iq3_s iq4_nl iq4_xs mxfp4 q1_0 q2_0}"
# A dense file per type (the head in another type), and a MoE file for a few.
for t in $types; do
    m="$tmp/$t.gguf"
    if ! "$Q36" synth --preset tiny --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 --ffn 512 \
            --tied off --type "$t" --head-type q6_K --seed 3 -o "$m" 2>"$tmp/err"; then
        fail "synth_$t" "$(cat "$tmp/err")"; continue
    fi
    for tensor in blk.0.ffn_up.weight blk.3.attn_q.weight token_embd.weight; do
        rm -f "$tmp/q.f32" "$tmp/o.f32"
        "$Q36" info -m "$m" --dump "$tensor" -o "$tmp/q.f32" >"$tmp/qshape" 2>"$tmp/err" ||
            { fail "dump_${t}_$tensor" "q36: $(cat "$tmp/err")"; continue; }
        "$ORACLE" dequant -m "$m" --tensor "$tensor" -o "$tmp/o.f32" >/dev/null 2>"$tmp/err" ||
            { fail "dump_${t}_$tensor" "oracle: $(cat "$tmp/err")"; continue; }
        cmp -s "$tmp/q.f32" "$tmp/o.f32" && ok "dump_${t}_$tensor" ||
            fail "dump_${t}_$tensor" "q36 and llama.cpp dequantize differently ($(cmp "$tmp/q.f32" "$tmp/o.f32" | head -1))"
    done
    # Realistic magnitude: ffn_up is drawn at RMS 1/sqrt(256) = 0.0625.
    rm -f "$tmp/q.f32"
    "$Q36" info -m "$m" --dump blk.0.ffn_up.weight -o "$tmp/q.f32" >/dev/null ||
        { fail "rms_$t" "q36 info --dump failed"; continue; }
    rms=$(od -An -v -tf4 -w4 "$tmp/q.f32" | awk '{s+=$1*$1; n++} END {printf "%.4f", sqrt(s/n)}')
    awk -v r="$rms" 'BEGIN {exit !(r > 0.05 && r < 0.08)}' && ok "rms_$t ($rms)" ||
        fail "rms_$t" "blk.0.ffn_up RMS $rms, expected about 0.0625"
    out=$("$ORACLE" decode_check -m "$m" 2>&1) && ok "llama_decodes_$t" || fail "llama_decodes_$t" "$out"
done
for t in q4_K iq4_xs mxfp4; do
    m="$tmp/moe_$t.gguf"
    "$Q36" synth --arch qwen35moe --preset tiny --hidden 256 --heads 4 --kv-heads 2 --head-dim 64 \
        --experts 4 --experts-used 2 --expert-ffn 256 --shared-ffn 256 --type "$t" -o "$m" 2>/dev/null
    for tensor in blk.1.ffn_down_exps.weight blk.1.ffn_gate_exps.weight; do
        rm -f "$tmp/q.f32" "$tmp/o.f32"
        "$Q36" info -m "$m" --dump "$tensor" -o "$tmp/q.f32" >/dev/null 2>&1
        "$ORACLE" dequant -m "$m" --tensor "$tensor" -o "$tmp/o.f32" >/dev/null 2>&1
        cmp -s "$tmp/q.f32" "$tmp/o.f32" && ok "dump_moe_${t}_$tensor" || fail "dump_moe_${t}_$tensor" "differs from llama.cpp"
    done
    out=$("$ORACLE" decode_check -m "$m" 2>&1) && ok "llama_decodes_moe_$t" || fail "llama_decodes_moe_$t" "$out"
done
# --type q4_K_M: llama-quantize's mix. 8 blocks (DDDA DDDA): use_more_bits
# holds for 0, 3, 6, 7 of 8, so attn_v-like tensors 0, 3, 6, 7 (blk.0/6
# attn_qkv, blk.3/7 attn_v) and ffn_down of blocks 0, 3, 6, 7 are Q6_K, as is
# the head (tied: token_embd); the rest Q4_K; llama.cpp loads and decodes it.
m="$tmp/mix.gguf"
"$Q36" synth --preset tiny --hidden 256 --layers 8 --type q4_K_M -o "$m" 2>/dev/null
"$Q36" info -m "$m" --tensors >"$tmp/mix.txt" 2>&1
want="token_embd.weight=q6_K blk.0.attn_qkv.weight=q6_K blk.1.attn_qkv.weight=q4_K
      blk.2.attn_qkv.weight=q4_K blk.3.attn_v.weight=q6_K blk.4.attn_qkv.weight=q4_K
      blk.6.attn_qkv.weight=q6_K blk.7.attn_v.weight=q6_K blk.3.attn_q.weight=q4_K
      blk.0.ffn_down.weight=q6_K blk.1.ffn_down.weight=q4_K blk.3.ffn_down.weight=q6_K
      blk.5.ffn_down.weight=q4_K blk.6.ffn_down.weight=q6_K blk.7.ffn_down.weight=q6_K
      blk.0.ffn_up.weight=q4_K blk.0.attn_gate.weight=q4_K blk.0.ssm_conv1d.weight=f32"
bad=""
for kv in $want; do
    got=$(awk -v n="${kv%%=*}" '$2 == n { print $3 }' "$tmp/mix.txt")
    [ "$got" = "${kv#*=}" ] || bad="$bad ${kv%%=*}:$got(want ${kv#*=})"
done
[ -z "$bad" ] && ok mix_q4_K_M_types || fail mix_q4_K_M_types "$bad"
out=$("$ORACLE" decode_check -m "$m" 2>&1) && ok llama_decodes_mix_q4_K_M || fail llama_decodes_mix_q4_K_M "$out"
"$Q36" synth --preset tiny --hidden 256 --layers 8 --tied off --type q4_K_M -o "$m" 2>/dev/null
"$Q36" info -m "$m" --tensors >"$tmp/mix.txt" 2>&1
[ "$(awk '$2 == "output.weight" { print $3 }' "$tmp/mix.txt")" = q6_K ] &&
    [ "$(awk '$2 == "token_embd.weight" { print $3 }' "$tmp/mix.txt")" = q4_K ] &&
    ok mix_q4_K_M_untied_head || fail mix_q4_K_M_untied_head "$(grep -E 'output|token_embd' "$tmp/mix.txt")"
"$Q36" synth --preset tiny --hidden 256 --layers 8 --tied off --type q4_K_M --head-type q8_0 -o "$m" 2>/dev/null
"$Q36" info -m "$m" --tensors >"$tmp/mix.txt" 2>&1
[ "$(awk '$2 == "output.weight" { print $3 }' "$tmp/mix.txt")" = q8_0 ] && ok mix_q4_K_M_head_type ||
    fail mix_q4_K_M_head_type "$(grep -E 'output' "$tmp/mix.txt")"
# Errors: an unknown tensor, and --dump without -o.
"$Q36" info -m "$tmp/q8_0.gguf" --dump nope.weight -o "$tmp/x.f32" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q "nope.weight" "$tmp/err" && [ ! -e "$tmp/x.f32" ] && ok dump_unknown_tensor ||
    fail dump_unknown_tensor "exit $rc: $(cat "$tmp/err")"
"$Q36" info -m "$tmp/q8_0.gguf" --dump token_embd.weight 2>/dev/null; rc=$?
[ $rc -eq 2 ] && ok dump_needs_output || fail dump_needs_output "exit $rc, expected 2"
