#!/usr/bin/env bash
# The q36 command line: exit statuses, one-line errors that name the file,
# q36 synth determinism and geometry, q36 info on what synth writes.
set -u
. "$(dirname "$0")/lib.sh"

expect cli_help 0 "$Q36" --help
expect cli_unknown_command 2 "$Q36" frobnicate
expect info_help 0 "$Q36" info --help
expect synth_help 0 "$Q36" synth --help
expect info_missing_file 1 "$Q36" info -m "$tmp/nope.gguf"
grep -q "nope.gguf" "$tmp/err" && ok info_missing_file_named || fail info_missing_file_named "$(cat "$tmp/err")"
printf 'not a gguf file at all' >"$tmp/text.gguf"
expect info_not_gguf 1 "$Q36" info -m "$tmp/text.gguf"
grep -q "text.gguf" "$tmp/err" && grep -qi "magic" "$tmp/err" && ok info_not_gguf_message || fail info_not_gguf_message "$(cat "$tmp/err")"
# Every subcommand that reads a whole file names it when it cannot.
for sub in "tokenize -f" "run -n 1 -f" "perplexity -f" "logits -o $tmp/l.bin --ids-file" "synth -o $tmp/v.gguf --vocab"; do
    name=read_missing_${sub%% *}
    expect "$name" 1 "$Q36" $sub "$tmp/absent.txt"
    grep -q "absent.txt: cannot open" "$tmp/err" && ok "${name}_named" || fail "${name}_named" "$(cat "$tmp/err")"
done
printf 'hi there' | "$Q36" tokenize -f - 2>/dev/null | grep -q "'hi'" && ok tokenize_stdin || fail tokenize_stdin "no 'hi' token from standard input"
expect info_bad_flag 2 "$Q36" info --frob
expect info_bad_ctx 2 "$Q36" info -c -5
expect synth_no_output 2 "$Q36" synth --preset tiny
expect synth_bad_type 2 "$Q36" synth --type q9_9 -o "$tmp/x.gguf"
expect synth_bad_preset 2 "$Q36" synth --preset 70b -o "$tmp/x.gguf"
expect synth_bad_geometry 2 "$Q36" synth --heads 3 --kv-heads 2 -o "$tmp/x.gguf"
expect synth_bad_vocab 1 "$Q36" synth --vocab "$tmp/text.gguf" -o "$tmp/x.gguf"
[ ! -e "$tmp/x.gguf" ] && ok synth_failure_leaves_no_file || fail synth_failure_leaves_no_file "x.gguf exists"

# Same seed, same bytes; another seed, other bytes.
"$Q36" synth --preset tiny --seed 7 -o "$tmp/a.gguf" 2>/dev/null
"$Q36" synth --preset tiny --seed 7 -o "$tmp/b.gguf" 2>/dev/null
"$Q36" synth --preset tiny --seed 8 -o "$tmp/c.gguf" 2>/dev/null
cmp -s "$tmp/a.gguf" "$tmp/b.gguf" && ok synth_deterministic || fail synth_deterministic "same seed, different files"
cmp -s "$tmp/a.gguf" "$tmp/c.gguf" && fail synth_seed_matters "seeds 7 and 8 gave the same file" || ok synth_seed_matters

# The layer pattern from the interval key and from the per-layer array agree.
"$Q36" synth --layers 7 --attn-interval 3 -o "$tmp/i.gguf" 2>/dev/null
"$Q36" synth --layers 7 --attn-interval 3 --layer-array on -o "$tmp/l.gguf" 2>/dev/null
pi=$("$Q36" info -m "$tmp/i.gguf" | awk '/layer types/{print $3}')
pl=$("$Q36" info -m "$tmp/l.gguf" | awk '/layer types/{print $3}')
[ "$pi" = "DDADDAD" ] && ok info_layer_pattern_interval || fail info_layer_pattern_interval "got '$pi', expected DDADDAD"
[ "$pl" = "$pi" ] && ok info_layer_pattern_array || fail info_layer_pattern_array "array gave '$pl', interval '$pi'"
"$Q36" info -m "$tmp/l.gguf" | grep -q "recurrent_layers" && ok info_names_array_key || fail info_names_array_key "no recurrent_layers line"

# A hidden size no block divides falls back to f16 for the 2-D weights.
"$Q36" synth --hidden 100 --heads 2 --kv-heads 1 --head-dim 50 --rope-dims 10 -o "$tmp/odd.gguf" 2>/dev/null
"$Q36" info -m "$tmp/odd.gguf" | grep -q "f16" && ok synth_odd_hidden_f16 || fail synth_odd_hidden_f16 "no f16 tensors"

# Absent optional keys are reported with the default used.
"$Q36" info -m "$tmp/a.gguf" | grep -q "nextn_predict_layers  (absent: default)" \
    && ok info_reports_defaults || fail info_reports_defaults "no default line for nextn_predict_layers"

# A file cut short is refused with "truncated" and the byte offset.
size=$(stat -c %s "$tmp/a.gguf")
head -c $((size - 1000)) "$tmp/a.gguf" >"$tmp/cut.gguf"
expect info_truncated 1 "$Q36" info -m "$tmp/cut.gguf"
grep -q "truncated" "$tmp/err" && grep -q "byte" "$tmp/err" && ok info_truncated_message || fail info_truncated_message "$(cat "$tmp/err")"
# The memory plan for N slots: K/V and DeltaNet state N times one slot's.
kv1=$("$Q36" info -m "$tmp/a.gguf" -c 100000 | awk '/K\/V cache/{print $3}')
kv4=$("$Q36" info -m "$tmp/a.gguf" -c 100000 -np 4 | awk '/K\/V cache/{print $3}')
awk -v a="$kv1" -v b="$kv4" 'BEGIN { exit !(a > 0 && b > 3.99 * a && b < 4.01 * a) }' \
    && ok info_plan_slots || fail info_plan_slots "K/V MiB -np 1: '$kv1', -np 4: '$kv4'"
expect info_bad_slots 2 "$Q36" info -np 0
# q8_0 K/V: 34 bytes for 32 values against f16's 64 (the plan names the types)
kv8=$("$Q36" info -m "$tmp/a.gguf" -c 100000 -ctk q8_0 -ctv q8_0 | awk '/K\/V cache/{print $3}')
awk -v a="$kv1" -v b="$kv8" 'BEGIN { exit !(b > 0 && b > 0.53 * a - 0.1 && b < 0.53 * a + 0.1) }' &&
    "$Q36" info -m "$tmp/a.gguf" -ctk q8_0 -ctv q8_0 | grep -q "K q8_0, V q8_0" \
    && ok info_plan_kv_q8 || fail info_plan_kv_q8 "K/V MiB f16: '$kv1', q8_0: '$kv8'"
expect info_bad_ctk 2 "$Q36" info -ctk q4_0
