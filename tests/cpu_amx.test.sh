#!/usr/bin/env bash
# cpu_amx.test.sh: q36 with llama.cpp's AMX order forced on (Q36_CPU_AMX=1,
# cpu_amx.c), on two synthetic files of the shapes llama.cpp's AMX buffer
# takes: a Q8_0 trunk with an untied Q6_K head (the Q8_0 tile and the Q6_K
# dot), and llama-quantize's Q4_K_M mix (Q4_K and Q6_K dots):
# - the order changes the logits (the switch reaches the products) but
#   stays within a rounding-sized distance of the default order;
# - exact mode stays batch-invariant under it: the prompt in one pass and
#   one token a pass give the same bits (one order whatever the rows);
# - Q36_CPU_AMX=0 gives the default order's bits.
# On a CPU with AMX q36 takes the order by itself, and the parity tests
# compare it with llama.cpp there. The distance is the oracle harness's
# `compare`. Env: BUILD, Q36 (default ./q36).
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
need_oracle cpu_amx.setup
# check NAME SYNTH-ARGS...: the cases below on one synthetic file
check() {
    local n=$1; shift
    local M=$tmp/$n.gguf
    if ! "$Q36" synth --arch qwen35 --preset tiny --hidden 256 --n-vocab 512 --tied off \
            "$@" --seed 7 -o "$M" >"$tmp/log" 2>&1; then
        fail "cpu_amx.$n.setup" "q36 synth: $(tail -n 1 "$tmp/log")"; return
    fi
    local ids="5 17 99 3 250 41 7 7 301 12 64 128"
    lg() { local f=$1; shift; "$@" "$Q36" logits -m "$M" --ids "$ids" --all -o "$f" >/dev/null 2>"$tmp/e"; }
    lg "$tmp/def.f32" env -u Q36_CPU_AMX && lg "$tmp/off.f32" env Q36_CPU_AMX=0 &&
        lg "$tmp/amx.f32" env Q36_CPU_AMX=1 &&
        Q36_CPU_AMX=1 "$Q36" logits -m "$M" --ids "$ids" --all --split 1 -t 3 -o "$tmp/amx1.f32" >/dev/null 2>"$tmp/e" ||
        { fail "cpu_amx.$n.setup" "q36 logits: $(head -c 300 "$tmp/e")"; return; }
    # the default is the AMX order exactly where this CPU would have llama.cpp take it
    if grep -qw amx_int8 /proc/cpuinfo; then
        cmp -s "$tmp/def.f32" "$tmp/amx.f32" && ok "cpu_amx.$n.default_follows_cpu" ||
            fail "cpu_amx.$n.default_follows_cpu" "AMX CPU: the default is not the AMX order"
    else
        cmp -s "$tmp/def.f32" "$tmp/off.f32" && ok "cpu_amx.$n.default_follows_cpu" ||
            fail "cpu_amx.$n.default_follows_cpu" "no AMX: the default is not the plain order"
    fi
    ! cmp -s "$tmp/off.f32" "$tmp/amx.f32" && ok "cpu_amx.$n.changes_logits" ||
        fail "cpu_amx.$n.changes_logits" "Q36_CPU_AMX=1 left every logit unchanged"
    cmp -s "$tmp/amx.f32" "$tmp/amx1.f32" && ok "cpu_amx.$n.batch_invariant" ||
        fail "cpu_amx.$n.batch_invariant" "one pass and one token a pass differ"
    local worst
    worst=$("$ORACLE" compare "$tmp/off.f32" "$tmp/amx.f32" -n 512 |
        awk '{ for (i = 1; i < NF; i++) if ($i == "worst_rel_l2") print $(i + 1) }')
    awk -v w="$worst" 'BEGIN { exit !(w != "" && w < 0.02) }' && ok "cpu_amx.$n.near_plain_order" ||
        fail "cpu_amx.$n.near_plain_order" "worst relative L2 '$worst' against the plain order (want < 0.02)"
    echo "# cpu_amx.$n: worst relative L2 against the plain order $worst"
}
check q8_0 --type q8_0 --head-type q6_K
check q4_K_M --type q4_K_M
