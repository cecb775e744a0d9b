#!/usr/bin/env bash
# parity.test.sh: q36's forward pass against llama.cpp's (build/oracle) on
# q36 synth models of many geometries and weight types.
#
# Per model, with K/V f32 on both sides and flash attention off in the
# oracle (the strict-parity settings, docs/ORACLE.md):
#   logits_P      `q36 logits --all` vs `oracle logits --all` for a prompt of
#                 P tokens (P = 1, 7, 64, 600): worst relative L2 error over
#                 positions, ||q36 - llama|| / ||llama||, must be <= TOL
#   greedy        24 greedy tokens after a 7-token prompt (one decode per
#                 token on both sides) are equal; a difference is accepted
#                 only where the oracle's own top-1 minus top-2 margin at that
#                 step is below MARGIN (a near-tie), and is then reported
#   decode        q36 prefill of 64 tokens vs the same tokens appended one at
#                 a time: bit-identical logits (q36 is batch-invariant)
# One line per case; a summary line "# worst NAME: ..." per model.
#
# Interval 1 (no DeltaNet layer) is not here: llama.cpp aborts on such files.
# Tolerance: f32 weights: TOL 1e-4 (only
# summation order and libm-vs-SIMD exp differ: ~1e-6 measured).
# Quantized/f16/bf16 weights: the same ~1e-7 float differences can move
# one activation across a Q8/f16 rounding boundary; on these random-weight
# models one such flip moves the logits by up to ~1e-2 (llama.cpp itself
# shows 1.6-7.8% between its batch and single-token paths, docs/ORACLE.md),
# so TOL_Q = 3e-2 there and the flip-free rate is reported.
# Env: BUILD (default build), Q36 (default ./q36), PARITY_QUICK=1 (fewer models).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
Q36=${Q36:-./q36}
ORACLE=$BUILD/oracle
TOL_F32=${TOL_F32:-1e-4}
TOL_Q=${TOL_Q:-3e-2}
MARGIN=${MARGIN:-0.05}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for need in "$ORACLE" "$Q36"; do
    if [ ! -x "$need" ]; then
        echo "FAIL parity.setup: $need is not built (make $need)"
        exit 1
    fi
done

# name | synth flags
models=(
    "tiny_q8_0        | --arch qwen35 --preset tiny"
    "tiny_f32         | --arch qwen35 --preset tiny --type f32"
    "tiny_f16         | --arch qwen35 --preset tiny --type f16"
    "tiny_bf16        | --arch qwen35 --preset tiny --type bf16"
    "tiny_q4_K        | --arch qwen35 --preset tiny --type q4_K --head-type q6_K"
    "tiny_q6_K        | --arch qwen35 --preset tiny --type q6_K"
    "l5_int2_kv1      | --arch qwen35 --preset tiny --layers 5 --attn-interval 2 --kv-heads 1"
    "l7_int3_hd128    | --arch qwen35 --preset tiny --layers 7 --attn-interval 3 --heads 6 --kv-heads 3 --head-dim 128 --rope-dims 32 --tied off --type f32"
    "l6_int5_hd256    | --arch qwen35 --preset tiny --layers 6 --attn-interval 5 --head-dim 256 --rope-dims 64 --mtp on"
    "l3_int2_array    | --arch qwen35 --preset tiny --layers 3 --attn-interval 2 --layer-array on --type f32"
    "hk2_hv4_dk64     | --arch qwen35 --preset tiny --ssm-k-heads 2 --ssm-v-heads 4 --ssm-head-dim 64 --type f32"
    "moe_tiny         | --arch qwen35moe --preset tiny"
    "moe_tiny_f32     | --arch qwen35moe --preset tiny --type f32"
    "moe_e64_k8       | --arch qwen35moe --preset tiny --experts 64 --experts-used 8 --type f32"
    "moe_e4_k1_untied | --arch qwen35moe --preset tiny --experts 4 --experts-used 1 --tied off --type f32"
    "moe_e16_k3_q4_K  | --arch qwen35moe --preset tiny --experts 16 --experts-used 3 --type q4_K --layers 5 --attn-interval 2"
)
[ "${PARITY_QUICK:-0}" = 1 ] && models=("${models[@]:0:2}" "${models[11]}")

ids_file() {   # n_vocab count seed -> file of ids
    awk -v V="$1" -v n="$2" -v s="$3" 'BEGIN { x = s; for (i = 0; i < n; i++) {
        x = (x * 1103515245 + 12345) % 2147483648; printf "%d ", int(x / 65536) % V } }'
}

for line in "${models[@]}"; do
    name=$(echo "${line%%|*}" | xargs)
    flags=${line#*|}
    M=$tmp/$name.gguf
    # shellcheck disable=SC2086
    if ! "$Q36" synth $flags -o "$M" >"$tmp/synth.log" 2>&1; then
        echo "FAIL parity.$name.synth: $(tail -n 1 "$tmp/synth.log")"
        continue
    fi
    V=$("$Q36" info -m "$M" | awk '$1 == "n_vocab" { print $2 }')
    tol=$TOL_Q
    case "$flags" in *"--type f32"*) tol=$TOL_F32 ;; esac
    worst=0 worst_at=""
    for P in 1 7 64 600; do
        ids_file "$V" "$P" "$P" >"$tmp/ids"
        if ! "$Q36" logits -m "$M" --ids-file "$tmp/ids" -o "$tmp/q.f32" --all -ctk f32 -ctv f32 \
                >/dev/null 2>"$tmp/err"; then
            echo "FAIL parity.$name.logits_$P: q36: $(tail -n 1 "$tmp/err")"
            continue
        fi
        if ! "$ORACLE" logits -m "$M" --ids-file "$tmp/ids" -o "$tmp/o.f32" --all -t 1 \
                >/dev/null 2>"$tmp/err"; then
            echo "FAIL parity.$name.logits_$P: oracle: $(tail -n 1 "$tmp/err")"
            continue
        fi
        c=$("$ORACLE" compare "$tmp/q.f32" "$tmp/o.f32" -n "$V")
        rel=$(echo "$c" | awk '{ print $6 }')
        if awk -v r="$rel" -v t="$tol" 'BEGIN { exit !(r <= t) }'; then
            echo "ok parity.$name.logits_$P"
        else
            echo "FAIL parity.$name.logits_$P: worst relative L2 $rel > $tol ($c)"
        fi
        if awk -v r="$rel" -v w="$worst" 'BEGIN { exit !(r > w) }'; then
            worst=$rel worst_at="P=$P $(echo "$c" | awk '{ print "row", $8, "max_abs", $4, "argmax_mismatch", $10 }')"
        fi
    done
    echo "# worst $name: rel_l2 $worst ($worst_at), tolerance $tol"

    # greedy continuation, one decode per token on both sides
    ids_file "$V" 7 77 >"$tmp/ids"
    q=$("$Q36" logits -m "$M" --ids-file "$tmp/ids" -o "$tmp/qg.f32" --greedy 24 -ctk f32 -ctv f32 2>"$tmp/err")
    o=$("$ORACLE" greedy -m "$M" --ids-file "$tmp/ids" -n 24 -t 1 --logits "$tmp/og.f32" 2>>"$tmp/err")
    if [ -z "$q" ] || [ -z "$o" ]; then
        echo "FAIL parity.$name.greedy: $(tail -n 1 "$tmp/err")"
    elif [ "$q" = "$o" ]; then
        echo "ok parity.$name.greedy"
    else
        margins=$("$ORACLE" argmax "$tmp/og.f32" -n "$V" --margins | sed -n 2p)
        read -ra qa <<<"$q"; read -ra oa <<<"$o"; read -ra ma <<<"$margins"
        i=0
        while [ "$i" -lt 24 ] && [ "${qa[$i]}" = "${oa[$i]}" ]; do i=$((i + 1)); done
        if awk -v m="${ma[$i]}" -v t="$MARGIN" 'BEGIN { exit !(m < t) }'; then
            echo "ok parity.$name.greedy"
            echo "# near-tie $name: step $i q36 ${qa[$i]} llama ${oa[$i]}, llama's top-2 margin ${ma[$i]} < $MARGIN"
        else
            echo "FAIL parity.$name.greedy: step $i q36 ${qa[$i]} llama ${oa[$i]}, margin ${ma[$i]} (q36: $q | llama: $o)"
        fi
    fi

    # prefill vs token-by-token inside q36: bit-identical
    ids_file "$V" 64 5 >"$tmp/ids"
    if "$Q36" logits -m "$M" --ids-file "$tmp/ids" -o "$tmp/a.f32" --all -ctk f32 -ctv f32 >/dev/null 2>"$tmp/err" &&
       "$Q36" logits -m "$M" --ids-file "$tmp/ids" -o "$tmp/b.f32" --all -ctk f32 -ctv f32 --split 1 -t 2 >/dev/null 2>>"$tmp/err"; then
        if cmp -s "$tmp/a.f32" "$tmp/b.f32"; then
            echo "ok parity.$name.decode"
        else
            echo "FAIL parity.$name.decode: prefill and one-at-a-time differ: $("$ORACLE" compare "$tmp/b.f32" "$tmp/a.f32" -n "$V")"
        fi
    else
        echo "FAIL parity.$name.decode: $(tail -n 1 "$tmp/err")"
    fi
done
