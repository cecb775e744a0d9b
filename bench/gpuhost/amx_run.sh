#!/usr/bin/env bash
# bench/gpuhost/amx_run.sh: on the GPU machine, from the root of the carried
# tree: unpacks bench/gpuhost/amx_pack.sh's archive and checks q36's AMX
# order against llama.cpp there: the machine and the CPU build llama.cpp
# loads; test_cpu_amx and tests/cpu_amx.test.sh; the trained model's logits
# at P = 64 and 600 against the oracle's with the order automatic, off and
# on (cmp: bit identity); trained_parity.test.sh with the order automatic
# and off; parity.test.sh quick, then whole within 250 s. Writes to $OUT.
# Usage: bash bench/gpuhost/amx_run.sh [ARCHIVE (.hostcheck/hc.tar.xz)]
set -u
out=${OUT:-amx-out}; mkdir -p "$out"
tar -xJf "${1:-.hostcheck/hc.tar.xz}"
bins=$PWD/tests/oracle/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
export LD_LIBRARY_PATH=$PWD/syslib:$bins Q36_ORACLE_LIB=$bins BUILD=build-cpu Q36=build-cpu/q36
{
  echo "date: $(date -u +%FT%TZ)"; echo "commit: $(cat build-cpu/commit.txt)"
  lscpu | grep -E 'Model name|^CPU\(s\)|Flags' | sed 's/Flags:.*\(amx[a-z0-9_ ]*\).*/Flags (amx): \1/'
  grep -o -w 'amx_[a-z0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
  echo "oracle cpu: $(build-cpu/oracle cpu 2>&1)"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
step() { local n=$1; shift; echo "### $n: $*"; local t0=$(date +%s); "$@" > "$out/$n.txt" 2>&1; echo "rc $? in $(( $(date +%s) - t0 )) s"; grep -E '^(FAIL|skip)|^#' "$out/$n.txt" | head -20; echo "ok: $(grep -c '^ok ' "$out/$n.txt") FAIL: $(grep -c '^FAIL ' "$out/$n.txt")"; }
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
step unit build-cpu/tests/test_cpu_amx
step switch bash tests/cpu_amx.test.sh
# bit-exactness on the trained model, P=64 and 600, both orders
xz -dc models/q36-tiny-moe.gguf.xz > $t/trained.gguf
cat tools/train/model_mtp.py tools/train/export_gguf.py > $t/text.txt
build-cpu/q36 tokenize -m $t/trained.gguf -f $t/text.txt --ids | tr '\n' ' ' > $t/all.ids
for P in 64 600; do
  cut -d' ' -f1-$P $t/all.ids > $t/p.ids
  build-cpu/oracle logits -m $t/trained.gguf --ids-file $t/p.ids -o $t/o.f32 --all > /dev/null 2>&1
  for v in auto 0 1; do
    if [ $v = auto ]; then env -u Q36_CPU_AMX build-cpu/q36 logits -m $t/trained.gguf --ids-file $t/p.ids -o $t/q.f32 --all -ctk f32 -ctv f32 -t 8 >/dev/null 2>&1
    else Q36_CPU_AMX=$v build-cpu/q36 logits -m $t/trained.gguf --ids-file $t/p.ids -o $t/q.f32 --all -ctk f32 -ctv f32 -t 8 >/dev/null 2>&1; fi
    cmp -s $t/q.f32 $t/o.f32 && r=identical || r="differ ($(cmp $t/q.f32 $t/o.f32 | head -c 80))"
    echo "trained P=$P Q36_CPU_AMX=$v: $r" | tee -a "$out/bits.txt"
  done
done
step trained bash tests/trained_parity.test.sh
step trained_amx0 env Q36_CPU_AMX=0 bash tests/trained_parity.test.sh
step parity_quick env PARITY_QUICK=1 bash tests/parity.test.sh
timeout 250 bash -c 'bash tests/parity.test.sh > '"$out"'/parity_full.txt 2>&1'; echo "parity full rc $?: ok $(grep -c '^ok ' $out/parity_full.txt) FAIL $(grep -c '^FAIL ' $out/parity_full.txt)"; grep '^FAIL' $out/parity_full.txt | head -20
