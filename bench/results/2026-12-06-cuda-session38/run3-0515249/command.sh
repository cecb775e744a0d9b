#!/usr/bin/env bash
# the device call (run tool, carry [".cuda-carry"] packed by tests/gpu/pack.sh at 0515249, with
# ../../2026-12-05-cuda-session26/run-52c9f53/pre.sh copied to .cuda-carry/pre.sh), 18:37 UTC:
# the chunked delta rule's wide state kernel (Q36_CUDA_CHUNKBV=32) and the prep kernel's
# mma.sync form (Q36_CUDA_CHUNKPREP=3; at 0515249 both off by default) against the defaults:
# speed on both bench files (pp4096, fast, one pass), then the chunk op cases and fast-mode
# model passes
. .cuda-carry/pre.sh
V1="Q36_CUDA_CHUNKBV=32" V2="Q36_CUDA_CHUNKBV=32 Q36_CUDA_CHUNKPREP=3"
for r in 1 2 3; do for v in 0 1 2; do
  case $v in 0) e=;; 1) e=$V1;; 2) e=$V2;; esac
  env $e bash -c ". .cuda-carry/pre.sh >/dev/null 2>&1; b pp35-v$v-r$r $m -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 2"
  env $e bash -c ". .cuda-carry/pre.sh >/dev/null 2>&1; b pp08-v$v-r$r $m08 -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 3"
done; done
for f in $o/pp*-v*-r*.txt; do echo "$(basename $f .txt): $(grep '^| qwen' $f | awk -F'|' '{print $6}') $(grep -c 'rc 0' $f)"; done
echo "# speed done at $SECONDS s"
env $V2 bash -c ". .cuda-carry/pre.sh >/dev/null 2>&1; b pp35-v2-prof $m -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 1 --profile; b pp08-v2-prof $m08 -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 1 --profile"
grep -h -E "k_chunk|forward " $o/pp*-prof.txt
echo "# profiles done at $SECONDS s"
OUT=$o/t STEPS=ops OPS=chunk timeout 150 bash .cuda-carry/device.sh > /dev/null 2>&1
grep -h -E "passed|^FAIL" $o/t/ops.txt | head -30
echo "# ops done at $SECONDS s"
OUT=$o/t STEPS=fast FAST_MODELS="dense-q4km moe-q4km" FAST_VARIANTS="$(echo $V2 | tr ' ' '+')" timeout $((575 - SECONDS)) bash .cuda-carry/device.sh > /dev/null 2>&1
grep -h -E "^###|passed|^FAIL" $o/t/fast.txt | head -40
echo "# fast done at $SECONDS s"
cd $o && tar cJf all.tar.xz pp*.txt t && rm -rf t pp*.txt
echo "# done at $SECONDS s"; ls -la $o
