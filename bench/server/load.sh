#!/usr/bin/env bash
# load.sh: starts q36 serve on a model and runs CLIENTS streaming clients for
# SECONDS against it (load.mjs), then stops it; the summary line is JSON.
# Bounded: at most 256 clients, 3600 s. Writes nothing unless OUT is set
# (then OUT/load.log and OUT/server.log). Q36 names the binary (default ./q36).
# Usage: bench/server/load.sh [CLIENTS=8] [SECONDS=30] [MAX_TOKENS=64] [q36 serve flags...]
set -eu
cd "$(dirname "$0")/../.."
clients=${1:-8}; secs=${2:-30}; maxtok=${3:-64}
shift $(( $# < 3 ? $# : 3 ))
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
: >"$out/server.out"             # before the server starts: the loop below reads it at once
"${Q36:-./q36}" serve --port 0 -np "$clients" "$@" >"$out/server.out" 2>"$out/server.log" &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
url=
for _ in $(seq 1 100); do
    url=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' "$out/server.out")
    [ -n "$url" ] && break
    sleep 0.1
done
[ -n "$url" ] || { echo "load.sh: the server did not start: $(cat "$out/server.log")" >&2; exit 1; }
echo "load.sh: $(git rev-parse --short HEAD) $(date -u +%FT%TZ) $clients clients, $secs s, $maxtok tokens, $url" | tee "$out/load.log"
node bench/server/load.mjs "$url" "$clients" "$secs" "$maxtok" "$pid" | tee -a "$out/load.log"
