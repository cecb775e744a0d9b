# tests/gpu/lib.sh: sourced by bench.sh, profile.sh, ncu.sh, run.sh and device.sh.
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
