# tests/gpu/lib.sh: sourced by bench.sh, profile.sh, ncu.sh, run.sh and device.sh.
# each_test_model FN: FN NAME SYNTH-ARGS... for each synthetic test model
# of run.sh (both architectures, the device weight types, odd geometries:
# head dims 64/128/256, 1-3 KV heads, experts top-1/3/8); device.sh's fast
# step makes the ones it names.
each_test_model() {
    $1 dense-q4km  --arch qwen35    --hidden 256 --ffn 512 --ssm-head-dim 64 --type q4_K_M --seed 2
    $1 dense-q5k   --arch qwen35    --hidden 256 --ffn 512 --heads 6 --kv-heads 3 --type q5_K --seed 3
    $1 dense-q6k   --arch qwen35    --hidden 256 --ffn 512 --head-dim 128 --rope-dims 32 --type q6_K --seed 4
    $1 dense-q8hd256 --arch qwen35  --hidden 256 --ffn 512 --heads 2 --kv-heads 1 --head-dim 256 --rope-dims 64 --ssm-head-dim 128 --type q8_0 --seed 5
    $1 dense-f16   --arch qwen35    --type f16 --seed 6
    $1 dense-bf16  --arch qwen35    --type bf16 --seed 7
    $1 dense-f32   --arch qwen35    --type f32 --attn-interval 2 --seed 8
    $1 dense-iq4xs --arch qwen35    --hidden 256 --ffn 512 --type iq4_xs --seed 9
    $1 moe-q4k-top8 --arch qwen35moe --hidden 256 --experts 16 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K --seed 10
    $1 moe-q8-top3 --arch qwen35moe --experts 8 --experts-used 3 --kv-heads 1 --type q8_0 --attn-interval 3 --seed 11
    $1 moe-top1    --arch qwen35moe --experts 4 --experts-used 1 --type q8_0 --seed 12
    $1 moe-q4km    --arch qwen35moe --hidden 256 --experts 32 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K_M --seed 13
}
# new_env V: the decode switches run.sh's op and model passes set together
# (NEW=0: op by op; NEW=1: the backend's default), as env arguments.
new_env() {
    local s
    for s in GRAPHS FASTMV FUSED PDL ATTNGQA MVMIXED EXACTINV; do
        printf 'Q36_CUDA_%s=%s ' "$s" "$1"
    done
}
# run TIMEOUT CMD...: appends the command line, then its output and exit
# status, to $out (and shows them).
run() {
    local t=$1; shift
    echo "\$ $*" | tee -a "$out"
    timeout "$t" "$@" 2>&1 | tee -a "$out"
    echo "(exit ${PIPESTATUS[0]})" | tee -a "$out"
}
# scrub_out DIR: the device's working folder ($LOG) written as <device tmp>
# in DIR's text files, as records keep them
scrub_out() {
    [ -n "${LOG:-}" ] && find "$1" -name '*.txt' -type f -exec sed -i "s#$LOG#<device tmp>#g" {} +
    return 0
}
# pack_out DIR: a device call brings back at most 8 files from $OUT (the
# rest are left out, "count"); with more than 7 there, they all go into
# DIR/out.tar.xz instead (unpack with tar -xJf).
pack_out() {
    local d=$1 n
    n=$(find "$d" -maxdepth 1 -type f | wc -l)
    [ "$n" -le 7 ] && return 0
    tar -cJf /tmp/q36-out.tar.xz -C "$d" . && find "$d" -mindepth 1 -delete &&
        mv /tmp/q36-out.tar.xz "$d/out.tar.xz"
}
