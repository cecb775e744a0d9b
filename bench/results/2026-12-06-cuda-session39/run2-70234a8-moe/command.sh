#!/usr/bin/env bash
# the device call (run tool, carry [".cuda-carry"] packed by tests/gpu/pack.sh at 70234a8, with
# ../../2026-12-05-cuda-session26/run-52c9f53/pre.sh copied to .cuda-carry/pre.sh), 21:47 UTC,
# on the machine warm from run1: the moe op group, then the 35B-A3B's pp4096 (fast, one pass)
# with the defaults and the three other forms of the expert products, two rounds
. .cuda-carry/pre.sh
OUT=$o/t STEPS=ops OPS=moe timeout 150 bash .cuda-carry/device.sh > /dev/null 2>&1
echo "moe ops: ok $(grep -c '^ok' $o/t/ops.txt) FAIL $(grep -c '^FAIL' $o/t/ops.txt)"; grep -h -E "^FAIL|^# exit" $o/t/ops.txt | head -20
echo "# ops done at $SECONDS s"
V1="Q36_CUDA_MOEWGPIPE=1" V2="Q36_CUDA_MOEWQ=1" V3="Q36_CUDA_MOEWQ=1 Q36_CUDA_MOEWGPIPE=1"
for r in 1 2; do for v in 0 1 2 3; do
  case $v in 0) e=;; 1) e=$V1;; 2) e=$V2;; 3) e=$V3;; esac
  env $e bash -c ". .cuda-carry/pre.sh >/dev/null 2>&1; b pp35-v$v-r$r $m -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 2"
done; echo "# round $r done at $SECONDS s"; [ $SECONDS -gt 380 ] && break; done
for f in $o/pp35-v*-r*.txt; do echo "$(basename $f .txt): $(grep '^| qwen' $f | awk -F'|' '{print $6}') $(grep -c 'rc 0' $f)"; done
for v in 1 3; do case $v in 1) e=$V1;; 3) e=$V3;; esac
  env $e bash -c ". .cuda-carry/pre.sh >/dev/null 2>&1; b pp35-v$v-prof $m -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 1 --profile"
  [ $SECONDS -gt 480 ] && break
done
grep -h -E "k_moe|forward " $o/pp35-v*-prof.txt
cd $o && tar cJf all.tar.xz t pp*.txt && rm -rf t pp*.txt
echo "# done at $SECONDS s"
