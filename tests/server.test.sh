#!/usr/bin/env bash
# q36 serve end to end on the default model: the official openai and
# @anthropic-ai/sdk clients (tests/server, pinned) through chat, streams,
# usage, thinking, tools, count_tokens; a table of malformed requests, each
# with its status and error shape, while a stream on another slot goes on;
# a client that leaves mid-stream; 16 concurrent streams; the prefix cache
# with its default flags (cache.mjs) and kept across a restart
# (--cache-dir, cachedir.mjs); a slot that fails
# mid-stream (Q36_SERVER_FAIL_ROW) failing only its request; a clean stop;
# MTP speculative decoding in every slot, token-identical to plain decoding.
set -u
. "$(dirname "$0")/lib.sh"
SDK=tests/server/node_modules
[ -d "$SDK/openai" ] && [ -d "$SDK/@anthropic-ai/sdk" ] ||
    { fail server_sdk "$SDK is missing (scripts/setup.sh)"; exit 1; }
default_model server_model
key=test-key-$$
printf '%s\n' "$key" >"$tmp/key"

# --port 0: the kernel picks a free port; the first stdout line names the URL.
# No -m: the default model.
"$Q36" serve --port 0 -np 4 -c 512 --api-key-file "$tmp/key" --max-body 1048576 \
    >"$tmp/out" 2>"$tmp/err" &
pid=$!
url=$(wait_url "$tmp/out" $pid)
[ -n "$url" ] && ok serve_prints_url || { fail serve_prints_url "$(cat "$tmp/out" "$tmp/err")"; kill $pid; exit 1; }
grep -q "default.gguf" "$tmp/out" && ok serve_default_model || fail serve_default_model "$(cat "$tmp/out")"

node tests/server/sdk.mjs "$url" "$key" default.gguf 512
node tests/server/cache.mjs "$url" "$key" default.gguf

kill -TERM $pid
for _ in $(seq 1 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
if kill -0 $pid 2>/dev/null; then
    fail serve_stops_on_sigterm "still running 5 s after SIGTERM"; kill -9 $pid
else
    wait $pid; rc=$?
    [ $rc -eq 0 ] && ok serve_stops_on_sigterm || fail serve_stops_on_sigterm "exit $rc: $(tail -2 "$tmp/err")"
fi

# A slot that fails mid-stream fails its request alone (row 30: a decode
# step of one of the two streams).
Q36_SERVER_FAIL_ROW=30 "$Q36" serve --port 0 -np 2 -c 512 >"$tmp/out2" 2>"$tmp/err2" &
pid=$!
url=$(wait_url "$tmp/out2" $pid)
if [ -n "$url" ]; then
    node tests/server/fault.mjs "$url"
else
    fail fault_server "did not start: $(cat "$tmp/err2")"
fi
kill -TERM $pid; wait $pid

# Continuous batching and the prefix cache: a server without a cache (the
# cold replies, 8 slots) and one with a small cache that thins and evicts (4 slots,
# a checkpoint every 32 tokens).
"$Q36" serve --port 0 -np 8 -c 2048 --cache-ram 0 >"$tmp/out3" 2>"$tmp/err3" &
pid_cold=$!
"$Q36" serve --port 0 -np 4 -c 2048 --cache-ram 40 --cache-every 32 >"$tmp/out4" 2>"$tmp/err4" &
pid_hot=$!
url_cold=$(wait_url "$tmp/out3" $pid_cold)
url_hot=$(wait_url "$tmp/out4" $pid_hot)
if [ -n "$url_cold" ] && [ -n "$url_hot" ]; then
    grep -q "prefix cache 40.0 MiB" "$tmp/out4" && ok serve_prints_memory_plan || fail serve_prints_memory_plan "$(cat "$tmp/out4")"
    node tests/server/batch.mjs "$url_cold" "$url_hot" "${Q36_TEST_SEED:-$$}"
else
    fail batch_servers "did not start: $(cat "$tmp/err3" "$tmp/err4")"
fi
kill -TERM $pid_cold $pid_hot; wait $pid_cold; wait $pid_hot
# The same with q8_0 K/V caches (their rows restored from checkpoints as
# bytes; attention in llama.cpp's flash-attention order): cached replies
# bit-identical to cold ones, a reply the same alone and beside others.
"$Q36" serve --port 0 -np 8 -c 2048 --cache-ram 0 -ctk q8_0 -ctv q8_0 >"$tmp/out3q" 2>"$tmp/err3q" &
pid_cold=$!
"$Q36" serve --port 0 -np 4 -c 2048 --cache-ram 40 --cache-every 32 -ctk q8_0 -ctv q8_0 >"$tmp/out4q" 2>"$tmp/err4q" &
pid_hot=$!
url_cold=$(wait_url "$tmp/out3q" $pid_cold)
url_hot=$(wait_url "$tmp/out4q" $pid_hot)
if [ -n "$url_cold" ] && [ -n "$url_hot" ]; then
    BATCH_TAG=kv_q8 node tests/server/batch.mjs "$url_cold" "$url_hot" "${Q36_TEST_SEED:-$$}"
else
    fail kv_q8_batch_servers "did not start: $(cat "$tmp/err3q" "$tmp/err4q")"
fi
kill -TERM $pid_cold $pid_hot; wait $pid_cold; wait $pid_hot

# MTP speculative decoding in every slot (spec.mjs): a plain server, one
# with drafts (prompts read in chunks of 32 beside the verify rows; its
# drafting slots' MTP rows padded, as on a GPU; the guard on, as by
# default, so that its steps without drafts leave the MTP rows for later:
# at least 0.7 of the drafts must still hit, ~0.8 without either), and one
# whose draft head of one id (almost) never hits (adaptive k, no guard);
# that one runs with the engine's op timers (Q36_SERVER_PROFILE=1), which
# change no result, and prints their table when it stops.
"$Q36" serve --port 0 -np 4 -c 2048 -ub 32 >"$tmp/out5" 2>"$tmp/err5" &
pid_plain=$!
Q36_SERVER_MTP_PAD=1 "$Q36" serve --port 0 -np 4 -c 2048 -ub 32 --spec-type draft-mtp --draft-vocab 16384 >"$tmp/out6" 2>"$tmp/err6" &
pid_mtp=$!
Q36_SERVER_PROFILE=1 Q36_SERVER_MTP_GUARD=0 "$Q36" serve --port 0 -np 2 -c 2048 --spec-type draft-mtp --draft-vocab 1 >"$tmp/out7" 2>"$tmp/err7" &
pid_low=$!
url_plain=$(wait_url "$tmp/out5" $pid_plain)
url_mtp=$(wait_url "$tmp/out6" $pid_mtp)
url_low=$(wait_url "$tmp/out7" $pid_low)
if [ -n "$url_plain" ] && [ -n "$url_mtp" ] && [ -n "$url_low" ]; then
    SPEC_PAD=1 SPEC_MIN_RATE=0.7 SPEC_GUARD=1 SPEC_MIN_ACCEPTED=20 node tests/server/spec.mjs "$url_plain" "$url_mtp" "$url_low"
else
    fail spec_servers "did not start: $(cat "$tmp/err5" "$tmp/err6" "$tmp/err7")"
fi
kill -TERM $pid_plain $pid_mtp $pid_low; wait $pid_plain; wait $pid_mtp; wait $pid_low
# the profiled server's table: engine steps counted, matmul rows, the MTP
# block's passes as a layer row of their own, no profile in the others
if grep -Eq '^q36 serve: profile: [1-9][0-9]* engine steps, [1-9][0-9]* forward calls' "$tmp/err7" &&
   grep -q '^q36 serve: profile: matmul q8_0 ' "$tmp/err7" &&
   grep -Eq '^q36 serve: profile: layer mtp block +[0-9.]+ +[0-9.]*[1-9]' "$tmp/err7" &&
   grep -q '^q36 serve: profile: layer deltanet ' "$tmp/err7" &&
   ! grep -q 'q36 serve: profile' "$tmp/err5" "$tmp/err6"; then
    ok serve_profile_table
else fail serve_profile_table "$(grep 'profile' "$tmp/err7" | head -5) $(tail -2 "$tmp/err7")"; fi
# The same on a random-weight dense qwen35 with an MTP block (q36 synth): its
# drafts miss, so nearly every round rewinds, and slots pause their drafts;
# its drafting server keeps k_max drafts a round (Q36_SERVER_MTP_ADAPTIVE=0,
# the GPU's default) and drafts in every step (no guard: its draft counts
# are the test's).
if "$Q36" synth --arch qwen35 --preset tiny --seed 13 --mtp on -o "$tmp/dense.gguf" >"$tmp/synth.log" 2>&1; then
    "$Q36" serve -m "$tmp/dense.gguf" --port 0 -np 4 -c 4096 -ub 32 >"$tmp/out8" 2>"$tmp/err8" &
    pid_plain=$!
    Q36_SERVER_MTP_GUARD=0 Q36_SERVER_MTP_ADAPTIVE=0 "$Q36" serve -m "$tmp/dense.gguf" --port 0 -np 4 -c 4096 -ub 32 --spec-type draft-mtp >"$tmp/out9" 2>"$tmp/err9" &
    pid_mtp=$!
    url_plain=$(wait_url "$tmp/out8" $pid_plain)
    url_mtp=$(wait_url "$tmp/out9" $pid_mtp)
    if [ -n "$url_plain" ] && [ -n "$url_mtp" ]; then
        SPEC_TAG=synth_dense SPEC_MIN_ACCEPTED=0 SPEC_ADAPTIVE=0 node tests/server/spec.mjs "$url_plain" "$url_mtp" -
    else
        fail synth_dense_spec_servers "did not start: $(cat "$tmp/err8" "$tmp/err9")"
    fi
    kill -TERM $pid_plain $pid_mtp; wait $pid_plain; wait $pid_mtp
else
    fail synth_dense_spec_model "$(tail -2 "$tmp/synth.log")"
fi
# --cache-dir: checkpoints written at a clean stop are read by the next
# server (the same reply, the prompt from the cache); a corrupt file and one
# of another model are reported and the server starts with an empty cache.
cdir=$tmp/pcache
cache_dir_server() { # MODEL LOG: starts a server on the cache folder, sets pid and url
    "$Q36" serve -m "$1" --port 0 -np 2 -c 1024 --cache-dir "$cdir" >"$2.out" 2>"$2.err" &
    pid=$!
    url=$(wait_url "$2.out" $pid)
}
cache_dir_server "$model" "$tmp/cd1"
[ -n "$url" ] && node tests/server/cachedir.mjs "$url" first "$tmp/cd.sig"
kill -TERM $pid; wait $pid
grep -q "checkpoints written to $cdir/q36-prefix-cache.bin" "$tmp/cd1.err" && ok cache_dir_written ||
    fail cache_dir_written "$(cat "$tmp/cd1.err")"
cache_dir_server "$model" "$tmp/cd2"
[ -n "$url" ] && node tests/server/cachedir.mjs "$url" again "$tmp/cd.sig"
kill -TERM $pid; wait $pid
cp "$cdir/q36-prefix-cache.bin" "$tmp/good.bin"
printf 'X' | dd of="$cdir/q36-prefix-cache.bin" bs=1 seek=5000 conv=notrunc status=none   # inside record 0
cache_dir_server "$model" "$tmp/cdc"
[ -n "$url" ] && node tests/server/cachedir.mjs "$url" corrupt_file "$tmp/cd.sig"
kill -TERM $pid; wait $pid
grep -q "q36-prefix-cache.bin: record 0 of [0-9]* is corrupt" "$tmp/cdc.err" && ok cache_dir_corrupt_named ||
    fail cache_dir_corrupt_named "$(cat "$tmp/cdc.err")"
head -c 1000 "$tmp/good.bin" >"$cdir/q36-prefix-cache.bin"
cache_dir_server "$model" "$tmp/cd3"
[ -n "$url" ] && node tests/server/cachedir.mjs "$url" truncated_file "$tmp/cd.sig"
kill -TERM $pid; wait $pid
grep -q "q36-prefix-cache.bin: truncated in record 0" "$tmp/cd3.err" && ok cache_dir_truncated_named ||
    fail cache_dir_truncated_named "$(cat "$tmp/cd3.err")"
# the file the last server wrote, offered to another model
"$Q36" synth --arch qwen35 --preset tiny -o "$tmp/other.gguf" >/dev/null
cache_dir_server "$tmp/other.gguf" "$tmp/cd4"
[ -n "$url" ] && curl -sf "$url/health" >/dev/null && ok cache_dir_foreign_serves || fail cache_dir_foreign_serves "$(cat "$tmp/cd4.err")"
kill -TERM $pid; wait $pid
grep -q "written for another model or engine options" "$tmp/cd4.err" && ok cache_dir_foreign_named ||
    fail cache_dir_foreign_named "$(cat "$tmp/cd4.err")"

# Refusals at start: a bad address, a missing model, a bad flag, a prefix
# cache that does not fit in memory (named with its numbers).
expect serve_cache_too_big 1 "$Q36" serve --port 0 --cache-ram 1000000000
grep -q "prefix cache .* MiB are available" "$tmp/err" && ok serve_cache_too_big_numbers || fail serve_cache_too_big_numbers "$(cat "$tmp/err")"
expect serve_bad_host 1 "$Q36" serve --host not-an-ip --port 0
expect serve_missing_model 1 "$Q36" serve -m "$tmp/none.gguf" --port 0
grep -q "none.gguf" "$tmp/err" && ok serve_missing_model_named || fail serve_missing_model_named "$(cat "$tmp/err")"
expect serve_bad_flag 2 "$Q36" serve --frobnicate 1
expect serve_bad_spec_type 2 "$Q36" serve --spec-type ngram
expect serve_draft_max_over_batch 1 "$Q36" serve --port 0 --spec-type draft-mtp --draft-max 8 -b 4
if "$Q36" synth --arch qwen35 --preset tiny --seed 13 -o "$tmp/nomtp.gguf" >"$tmp/synth.log" 2>&1; then
    expect serve_spec_model_without_mtp 1 "$Q36" serve -m "$tmp/nomtp.gguf" --port 0 --spec-type draft-mtp
    grep -q "no MTP block" "$tmp/err" && ok serve_spec_model_without_mtp_named || fail serve_spec_model_without_mtp_named "$(cat "$tmp/err")"
else
    fail serve_spec_model_without_mtp "$(tail -2 "$tmp/synth.log")"
fi
