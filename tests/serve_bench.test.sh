#!/usr/bin/env bash
# serve_bench.test.sh: the GPU machine's server benchmark
# (tests/gpu/serve_bench.py) on the CPU (NGL=0), q36 alone, so that it
# still reads what q36 serve prints and streams: short runs at -np 1 and 2
# on the default model complete requests of exactly max_tokens tokens
# (ignore_eos) with no failure, a time to first token and a table row each;
# a model that does not load fails the run (exit 1, a FAIL line); refused
# requests (a server with an API key the clients do not send) are counted
# as failures and fail the run. No speed is checked.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
default_model serve_bench.setup
command -v python3 >/dev/null || { fail serve_bench.setup "python3 is missing (scripts/setup.sh)"; exit 1; }
bench() { NGL=0 timeout 120 python3 tests/gpu/serve_bench.py "$Q36" "$@" --seconds 2 --threads 1 --max-tokens 16 --log-dir "$tmp/logs"; }

bench "$model" --np 1,2 >"$tmp/run.out" 2>&1; rc=$?
check=$(python3 - "$tmp/run.out" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
bad = [f"np {r.get('np')}: {r}" for r in rows
       if not (r.get("done", 0) > 0 and r.get("failed") == 0 and r.get("warmup_failed") == 0
               and r.get("tokens") == 16 * r["done"] and r.get("ttft_ms_median") is not None)]
nps = sorted(r.get("np") for r in rows)
print("good" if nps == [1, 2] and not bad else f"rows for -np {nps}; {bad}"[:400])
EOF
)
[ $rc -eq 0 ] && [ "$check" = good ] && ok serve_bench.cpu_run ||
    fail serve_bench.cpu_run "exit $rc, $check; $(grep -E '^(FAIL|Traceback)' "$tmp/run.out" | head -n 3)"
grep -qE '^\| 1 \| 1 \| [0-9.]+ \| [0-9]+ / [0-9]+ \(stream\) \| 0 \|$' "$tmp/run.out" &&
grep -qE '^\| 2 \| 1 \| [0-9.]+ \|' "$tmp/run.out" &&
    ok serve_bench.table || fail serve_bench.table "$(grep '^|' "$tmp/run.out" | head -n 4)"

head -c 4096 /dev/urandom >"$tmp/bad.gguf"
bench "$tmp/bad.gguf" --np 1 >"$tmp/bad.out" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -q '^FAIL q36 -np 1: did not start: .*bad magic' "$tmp/bad.out" &&
    ok serve_bench.start_failure_fails || fail serve_bench.start_failure_fails "exit $rc: $(tail -n 3 "$tmp/bad.out")"

bench "$model" --np 1 --q36-arg=--api-key --q36-arg=not-sent >"$tmp/key.out" 2>&1; rc=$?
[ $rc -eq 1 ] && grep -qE '^FAIL q36 -np 1: [0-9]+ of [0-9]+ requests failed .*status 401' "$tmp/key.out" &&
grep -qE '"done": 0, "failed": [1-9]' "$tmp/key.out" &&
    ok serve_bench.failed_requests_fail || fail serve_bench.failed_requests_fail "exit $rc: $(grep -E '^(FAIL|\{)' "$tmp/key.out" | head -n 2 | cut -c1-300)"
