#!/usr/bin/env bash
# GPU MTP A/B: q36old (before the chained drafts' be_matmul_argmax) and q36, alternating
set -u
dir=.cuda-carry
# both binaries unpacked (the first call forgot q36: its file has only q36old lines)
for b in q36old q36; do xz -dkf $dir/$b.xz && chmod +x $dir/$b; done
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
m=$(mktemp --suffix=.gguf)
xz -dc models/q36-tiny-moe.gguf.xz >"$m"
for r in 1 2; do
    for b in q36old q36; do
        for dv in "--draft-vocab 16384 --draft-max 6" ""; do
            echo "## round $r, $b, ${dv:-full head --draft-max 3}"
            timeout 100 $dir/$b bench -m "$m" -ngl 99 --spec-type draft-mtp \
                -f bench/results/2026-12-01-mtp/prompt-code.txt -n 256 -r 5 $dv 2>&1 |
                grep -E '^q36 [0-9a-f]{7}|^\| (plain|draft)|window cost|tokens per verify|acceptance by'
        done
    done
done
