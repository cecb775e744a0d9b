# tests/gpu/lib.sh: sourced by bench.sh and profile.sh.
# run TIMEOUT CMD...: appends the command line, then its output and exit
# status, to $out (and shows them).
run() {
    local t=$1; shift
    echo "\$ $*" | tee -a "$out"
    timeout "$t" "$@" 2>&1 | tee -a "$out"
    echo "(exit ${PIPESTATUS[0]})" | tee -a "$out"
}
