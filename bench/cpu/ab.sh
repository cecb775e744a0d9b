#!/usr/bin/env bash
# bench/cpu/ab.sh: q36 at one commit against q36 at another, on the CPU, in
# the same run: both commits are built in temporary folders (git archive, no
# checkout touched), then `q36 bench` runs on each model for each commit,
# one repetition at a time, the two commits alternating (A B, then B A, ...)
# so that a busy or drifting machine weighs on both alike. Everything a
# record needs goes to OUT: the machine, both commits, every command and its
# raw JSON lines, and a summary (median tokens/s per test, B/A).
# Usage: bench/cpu/ab.sh OUT_DIR COMMIT_A COMMIT_B [reps (5)] [threads (2)] [depths (0,4096)]
# Env: MODELS (default build/models: the files bench/cpu/run.sh makes; made
#      here with q36 synth of COMMIT_A when absent), FILES (3, 4: and the
#      Q4_K_M mix, 5: and an all-Q5_K 0.8B file; default 3),
#      P (prompt, default 512), N (generated, default 128).
set -eu
cd "$(dirname "$0")/../.."
out=${1:?usage: bench/cpu/ab.sh OUT_DIR COMMIT_A COMMIT_B [reps] [threads] [depths]}
ca=${2:?commit A} cb=${3:?commit B}
reps=${4:-5} threads=${5:-2} depths=${6:-0,4096}
MODELS=${MODELS:-build/models} P=${P:-512} N=${N:-128}
mkdir -p "$out" "$MODELS"
tmp=$(mktemp -d -t q36_ab_XXXXXX)
trap 'rm -rf "$tmp"' EXIT

build() { # commit, folder: q36 of that commit at folder/build/q36
    local c=$1 d=$2
    mkdir -p "$d"
    git archive "$c" | tar -x -C "$d"
    # the commit compiled in (the Makefile asks git, which the archive lacks)
    make -C "$d" -j2 BUILD=build Q36_COMMIT="$(git rev-parse --short "$c")" build/q36 \
        >"$out/build-$(basename "$d").log" 2>&1
    sed -i "s#$tmp#<tmp>#g" "$out/build-$(basename "$d").log"    # no machine paths in a record
    echo "$d/build/q36"
}
qa=$(build "$ca" "$tmp/a")
qb=$(build "$cb" "$tmp/b")

synth() { # file, q36 synth flags...
    local f=$MODELS/$1; shift
    [ -s "$f" ] || "$qa" synth "$@" -o "$f" >/dev/null
    echo "$f"
}
files=("$(synth q08-q4_K.gguf --preset 0.8b --type q4_K)"
       "$(synth q08-q8_0.gguf --preset 0.8b --type q8_0)"
       "$(synth moe-scaled-q4_K.gguf --arch qwen35moe --preset 35b-a3b --hidden 1024 --layers 16 \
             --experts 64 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K)")
[ "${FILES:-3}" -ge 4 ] && files+=("$(synth q08-q4_K_M.gguf --preset 0.8b --type q4_K_M)")
[ "${FILES:-3}" -ge 5 ] && files+=("$(synth q08-q5_K.gguf --preset 0.8b --type q5_K)")

{
    echo "date: $(date -u +%FT%TZ)"
    echo "A: $(git rev-parse "$ca") ($ca)"
    echo "B: $(git rev-parse "$cb") ($cb)"
    echo "script: bench/cpu/ab.sh at $(git rev-parse HEAD)"
    echo "reps: $reps threads: $threads depths: $depths p: $P n: $N"
    echo "models:"; sha256sum "${files[@]}"
    echo "lscpu:"; lscpu | grep -vE '^(Flags|Vulnerability)'
    echo "memory:"; free -m
    echo "load before: $(cat /proc/loadavg)"
} >"$out/machine.txt"

for m in "${files[@]}"; do
    name=$(basename "$m" .gguf)
    : >"$out/$name.A.jsonl"
    : >"$out/$name.B.jsonl"
    for ((r = 0; r < reps; r++)); do
        order="A B"
        ((r % 2)) && order="B A"
        for side in $order; do
            q=$qa
            [ "$side" = B ] && q=$qb
            cmd=("$q" bench -m "$m" -p "$P" -n "$N" -d "$depths" -r 1 -t "$threads" -o jsonl)
            echo "rep $r $side: ${cmd[*]//$tmp/<tmp>}" >>"$out/$name.cmd"
            "${cmd[@]}" >>"$out/$name.$side.jsonl" 2>>"$out/$name.stderr"
        done
    done
    echo "load after $name: $(cat /proc/loadavg)" >>"$out/machine.txt"
done

# summary: median tokens/s of each (model, test) per commit, and B/A
python3 - "$out" "${files[@]}" >"$out/summary.md" <<'EOF'
import json, os, statistics, sys
out, files = sys.argv[1], sys.argv[2:]
print("| model | test | A t/s | B t/s | B/A |")
print("|---|---|---:|---:|---:|")
for f in files:
    name = os.path.basename(f)[:-5]
    med = {}
    for side in "AB":
        runs = {}
        for line in open(os.path.join(out, f"{name}.{side}.jsonl")):
            if not line.startswith("{"):
                continue
            j = json.loads(line)
            test = (f"pp{j['n_prompt']}" if j["n_prompt"] else f"tg{j['n_gen']}") + f" @ d{j['n_depth']}"
            runs.setdefault(test, []).extend(j["samples_ts"])
        med[side] = {t: statistics.median(v) for t, v in runs.items()}
    for t in med["A"]:
        a, b = med["A"][t], med["B"].get(t, float("nan"))
        print(f"| {name} | {t} | {a:.2f} | {b:.2f} | {b / a:.3f} |")
EOF
cat "$out/summary.md"
echo "done: $out"
