#!/usr/bin/env bash
# bench/gpuhost/run.sh: on the GPU machine (its 16-core Intel host), from the
# repository root: unpacks bench/gpuhost/pack.sh's archive, names the CPU and
# the libggml-cpu variant llama.cpp loads there, and runs the suite's parts
# that compare with llama.cpp (every test_ggml_* program, the CPU unit tests
# and the parity scripts). Node is absent there, so the npm-driven scripts
# (server, bench_cli, oracle_selftest) are not run. Writes to OUT.
# Usage: bench/gpuhost/run.sh ARCHIVE OUT_DIR
set -u
cd "$(dirname "$0")/../.."
tar -xJf "${1:?archive}"
out=${2:?out dir}; mkdir -p "$out"
bins=$PWD/tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
export LD_LIBRARY_PATH=$PWD/syslib:$bins Q36_ORACLE_LIB=$bins
mkdir -p build && xz -dc models/q36-tiny-moe.gguf.xz >build/default.gguf
ln -sf build/q36 q36   # the unit tests that make models run ./q36
{
    echo "date: $(date -u +%FT%TZ)"
    echo "commit: $(cat build/commit.txt 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo unknown)"
    lscpu | grep -vE '^(Vulnerability)'
    echo "llama.cpp CPU variant: $(build/oracle cpu 2>&1)"
} >"$out/machine.txt"
cat "$out/machine.txt"
sel=(build/tests/test_*)
scripts=(tests/parity.test.sh tests/trained_parity.test.sh tests/oracle_models.test.sh tests/perplexity.test.sh)
{
    p=0 f=0 s=0
    for t in "${sel[@]}" "${scripts[@]}"; do
        echo "# $t"
        case $t in *.sh) o=$(BUILD=build Q36=build/q36 timeout 300 bash "$t" 2>&1) ;; *) o=$(timeout 300 "$t" 2>&1) ;; esac
        rc=$?
        printf '%s\n' "$o" | grep -E '^(FAIL|skip|# ggml variant)' | head -40
        np=$(printf '%s\n' "$o" | grep -c '^ok '); nf=$(printf '%s\n' "$o" | grep -c '^FAIL ')
        ns=$(printf '%s\n' "$o" | grep -c '^skip ')
        [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ] && { echo "FAIL $t: exit $rc"; printf '%s\n' "$o" | tail -5; nf=1; }
        echo "$t: $np ok, $nf failed, $ns skipped"
        p=$((p + np)) f=$((f + nf)) s=$((s + ns))
    done
    echo "$p passed, $f failed, $s skipped"
} 2>&1 | tee "$out/suite.log"
