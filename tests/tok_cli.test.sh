#!/usr/bin/env bash
# q36 tokenize / q36 detokenize on GGUFs written by q36 synth: ids equal to
# the llama.cpp oracle harness (build/oracle tokenize) on a few corpus files
# with the real Qwen3 vocabulary (pre qwen35 and qwen2) and with synth's
# built-in vocabulary; detokenize(tokenize(x)) == x; the output formats; the
# exit statuses and one-line errors.
set -u
. "$(dirname "$0")/lib.sh"

[ -x "$ORACLE" ] || { fail tok_cli_oracle "no oracle harness at $ORACLE (make oracle)"; exit 1; }
for pre in qwen35 qwen2; do
    "$Q36" synth --preset tiny --vocab "$VOCAB" --pre $pre -o "$tmp/$pre.gguf" 2>"$tmp/err" \
        || { fail tok_cli_synth_$pre "$(cat "$tmp/err")"; continue; }
done
"$Q36" synth --preset tiny -o "$tmp/builtin.gguf" 2>/dev/null || fail tok_cli_synth_builtin "synth failed"

# ids: q36 vs the oracle, on files of the corpus.
check_ids() {   # NAME MODEL FILE
    local q o
    q=$("$Q36" tokenize -m "$2" -f "$3" --ids 2>&1) || { fail "$1" "q36: $q"; return; }
    o=$("$ORACLE" tokenize -m "$2" -f "$3" 2>&1) || { fail "$1" "oracle: $o"; return; }
    [ "$q" = "$o" ] && ok "$1" || fail "$1" "q36 '${q:0:120}' oracle '${o:0:120}'"
}
check_ids tok_cli.qwen35.specials      "$tmp/qwen35.gguf" tests/corpus/specials.txt
check_ids tok_cli.qwen35.mixed_scripts "$tmp/qwen35.gguf" tests/corpus/mixed_scripts.txt
check_ids tok_cli.qwen35.invalid_utf8  "$tmp/qwen35.gguf" tests/corpus/invalid_utf8.bin
check_ids tok_cli.qwen2.combining      "$tmp/qwen2.gguf"  tests/corpus/combining.txt
check_ids tok_cli.builtin.emoji        "$tmp/builtin.gguf" tests/corpus/emoji.txt
check_ids tok_cli.builtin.code         "$tmp/builtin.gguf" tests/corpus/code_python.txt

# Round trip through the command line, raw bytes.
for f in tests/corpus/emoji.txt tests/corpus/whitespace.txt; do
    name=tok_cli.roundtrip.$(basename "$f" .txt)
    ids=$("$Q36" tokenize -m "$tmp/qwen35.gguf" -f "$f" --ids)
    "$Q36" detokenize -m "$tmp/qwen35.gguf" --ids "$ids" >"$tmp/back"
    cmp -s "$f" "$tmp/back" && ok "$name" || fail "$name" "detokenize(tokenize(x)) differs from x"
done

# The one-token-per-line format: "id 'piece'".
"$Q36" tokenize -m "$tmp/qwen35.gguf" -p "Hi <think>" >"$tmp/lines"
printf "%s\n" "13048 'Hi'" "220 ' '" "151667 '<think>'" >"$tmp/want"
cmp -s "$tmp/lines" "$tmp/want" && ok tok_cli.lines_format || fail tok_cli.lines_format "$(head -c 200 "$tmp/lines")"
p=$("$Q36" tokenize -m "$tmp/qwen35.gguf" -p "<|im_start|>" --no-parse-special --ids)
[ "$p" != "151644" ] && ok tok_cli.no_parse_special || fail tok_cli.no_parse_special "control token parsed: $p"
d=$("$Q36" detokenize -m "$tmp/qwen35.gguf" --ids "151644 13048 151645" --no-special)
[ "$d" = "Hi" ] && ok tok_cli.detok_no_special || fail tok_cli.detok_no_special "got '$d'"
e=$("$Q36" tokenize -m "$tmp/qwen35.gguf" -p "" --ids)
[ -z "$e" ] && ok tok_cli.empty_text || fail tok_cli.empty_text "got '$e'"

# Errors: usage (2) and user errors (1, one line naming what is wrong).
expect tok_cli.help 0 "$Q36" tokenize --help
expect tok_cli.detok_help 0 "$Q36" detokenize --help
expect tok_cli.no_text 2 "$Q36" tokenize -m "$tmp/qwen35.gguf"
expect tok_cli.both_texts 2 "$Q36" tokenize -m "$tmp/qwen35.gguf" -p a -f b
expect tok_cli.bad_flag 2 "$Q36" tokenize --frob
expect tok_cli.missing_model 1 "$Q36" tokenize -m "$tmp/nope.gguf" -p hi
grep -q nope.gguf "$tmp/err" && ok tok_cli.missing_model_named || fail tok_cli.missing_model_named "$(cat "$tmp/err")"
expect tok_cli.missing_file 1 "$Q36" tokenize -m "$tmp/qwen35.gguf" -f "$tmp/nope.txt"
expect tok_cli.detok_no_ids 2 "$Q36" detokenize -m "$tmp/qwen35.gguf"
expect tok_cli.detok_bad_list 2 "$Q36" detokenize -m "$tmp/qwen35.gguf" --ids "1 x 3"
expect tok_cli.detok_bad_id 1 "$Q36" detokenize -m "$tmp/qwen35.gguf" --ids "1 999999"
grep -q 999999 "$tmp/err" && ok tok_cli.detok_bad_id_named || fail tok_cli.detok_bad_id_named "$(cat "$tmp/err")"
exit 0
