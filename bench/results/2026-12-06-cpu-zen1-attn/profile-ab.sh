#!/usr/bin/env bash
# profile-ab.sh: q36 bench --profile (pp512 at depth 4096, one repetition,
# 2 threads) of two q36 binaries in turn, A B A B ..., REPS pairs, raw output
# to OUT/profile-<commit>-<i>.txt; then the forward and attention lines.
# Usage: profile-ab.sh OUT BIN_A COMMIT_A BIN_B COMMIT_B MODEL [REPS (3)]
set -eu
out=$1 ba=$2 ca=$3 bb=$4 cb=$5 m=$6 reps=${7:-3}
mkdir -p "$out"
for i in $(seq 1 "$reps"); do
    for s in "$ba:$ca" "$bb:$cb"; do
        b=${s%%:*} c=${s##*:}
        echo "rep $i $c: $b bench -m $m -p 512 -n 0 -d 4096 -r 1 -t 2 --profile" >>"$out/profile.cmd"
        "$b" bench -m "$m" -p 512 -n 0 -d 4096 -r 1 -t 2 --profile >"$out/profile-$c-$i.txt" 2>&1
    done
done
for f in "$out"/profile-*.txt; do
    sed -n '/pp512 @ d4096: /,/(forward)/p' "$f" >"$out/.cut"
    fw=$(sed -n 's/.*(\([0-9.]*\) ms\/token).*/\1/p' "$out/.cut" | head -1)
    at=$(grep -E '^\| attention +\| +[0-9]+ \|' "$out/.cut" | head -1 | awk -F'|' '{gsub(/ /, "", $6); print $6}')
    echo "$(basename "$f" .txt): forward $fw ms/token, attention $at ms/token"
done
rm -f "$out/.cut"
