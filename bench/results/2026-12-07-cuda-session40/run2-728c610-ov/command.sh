#!/usr/bin/env bash
# call 2: the overlapped prompt attention (Q36_CUDA_FATTNWGOV=1) against the default, q36 alone,
# 35B-A3B synthetic Q4_K_M, fast mode, depths 0 and 32768, interleaved, two rounds; then profiles
. .cuda-carry/pre.sh
echo "# synth done at $SECONDS s"
P="-p 4096 -n 0 -b 4096 -ub 4096 --fast"
for r in 1 2; do
  b d0-def-r$r $m $P -r 2; Q36_CUDA_FATTNWGOV=1 b d0-ov-r$r $m $P -r 2
  b d32k-def-r$r $m $P -d 32768 -r 2; Q36_CUDA_FATTNWGOV=1 b d32k-ov-r$r $m $P -d 32768 -r 2
  echo "# round $r done at $SECONDS s"; [ $SECONDS -gt 330 ] && break
done
for f in $o/d*-r*.txt; do echo "$(basename $f .txt): $(grep '^| qwen' $f | awk -F'|' '{print $6}') $(grep -c 'rc 0' $f)"; done
[ $SECONDS -lt 400 ] && Q36_CUDA_FATTNWGOV=1 b d32k-ov-prof $m $P -d 32768 -r 1 --profile && grep -h -E "k_fattn|forward " $o/d32k-ov-prof.txt
[ $SECONDS -lt 460 ] && b d32k-def-prof $m $P -d 32768 -r 1 --profile && grep -h -E "k_fattn|forward " $o/d32k-def-prof.txt
cd $o && tar cJf all.tar.xz d*.txt && rm -f d*.txt
echo "# done at $SECONDS s"
