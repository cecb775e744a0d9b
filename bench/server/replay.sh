#!/usr/bin/env bash
# replay.sh: starts q36 serve on a model and replays the scripted agent
# conversation of replay.mjs against it (20 requests), then stops it; the
# summary line is JSON. Writes nothing unless OUT is set (then
# OUT/replay.log, OUT/server.out, OUT/server.log). Q36 names the binary
# (default ./q36).
# Usage: bench/server/replay.sh [SEED=1] [MAX_TOKENS=24] [q36 serve flags...]
set -eu
cd "$(dirname "$0")/../.."
seed=${1:-1}; maxtok=${2:-24}
shift $(( $# < 2 ? $# : 2 ))
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
: >"$out/server.out"             # before the server starts: the loop below reads it at once
"${Q36:-./q36}" serve --port 0 "$@" >"$out/server.out" 2>"$out/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
url=
for _ in $(seq 1 100); do
    url=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' "$out/server.out")
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "replay.sh: the server did not start: $(cat "$out/server.log")" >&2; exit 1; }
echo "replay.sh: $(git rev-parse --short HEAD) $(date -u +%FT%TZ) seed $seed, $maxtok tokens a reply, q36 serve $*" | tee "$out/replay.log"
rc=0
node bench/server/replay.mjs "$url" "$seed" "$maxtok" | tee -a "$out/replay.log" || rc=$?
curl -s "$url/metrics" | grep -E '^(llamacpp:prompt_tokens|q36:prefix)' | tee -a "$out/replay.log" || true
exit $rc
