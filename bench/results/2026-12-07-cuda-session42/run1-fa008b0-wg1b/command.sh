#!/usr/bin/env bash
# call 1: k_fattn_wg<true> (Q36_CUDA_FATTNWG1B=1, one block barrier a tile): op cases, then (if
# they pass) the A/B against the default at depths 0 and 32768 on the 35B-A3B file, q36 alone,
# a profile of each at depth 32768, the fast model passes, and one decode profile (issue 14)
. .cuda-carry/pre.sh
(OUT=$o/t STEPS=ops OPS=fattn timeout 170 bash .cuda-carry/device.sh) > /dev/null 2>&1
ok=$(grep -c '^ok' $o/t/ops.txt); bad=$(grep -c '^FAIL' $o/t/ops.txt)
echo "ops: ok $ok FAIL $bad; wg1b cases ok $(grep -c '^ok.*_wg1b' $o/t/ops.txt)"; grep -h -E "^FAIL|^# exit" $o/t/ops.txt | head -12
echo "# ops done at $SECONDS s"
if [ "$bad" = 0 ] && [ "$ok" -gt 500 ]; then
  P="-p 4096 -n 0 -b 4096 -ub 4096 --fast"
  for r in 1 2; do
    b d0-def-r$r $m $P -r 2; Q36_CUDA_FATTNWG1B=1 b d0-one-r$r $m $P -r 2
    b d32k-def-r$r $m $P -d 32768 -r 2; Q36_CUDA_FATTNWG1B=1 b d32k-one-r$r $m $P -d 32768 -r 2
    echo "# round $r done at $SECONDS s"; [ $SECONDS -gt 300 ] && break
  done
  for f in $o/d*-r*.txt; do echo "$(basename $f .txt): $(grep '^| qwen' $f | awk -F'|' '{print $6}') $(grep -c 'rc 0' $f)"; done
  [ $SECONDS -lt 340 ] && b d32k-def-prof $m $P -d 32768 -r 1 --profile && grep -h -E "k_fattn|forward " $o/d32k-def-prof.txt
  [ $SECONDS -lt 360 ] && Q36_CUDA_FATTNWG1B=1 b d32k-one-prof $m $P -d 32768 -r 1 --profile && grep -h -E "k_fattn|forward " $o/d32k-one-prof.txt
  [ $SECONDS -lt 390 ] && (OUT=$o/f STEPS=fast FAST_MODELS="moe-q4km" FAST_VARIANTS=Q36_CUDA_FATTNWG1B=1 timeout 150 bash .cuda-carry/device.sh) > /dev/null 2>&1 &&
    echo "fast: ok $(grep -c '^ok' $o/f/fast.txt) FAIL $(grep -c '^FAIL' $o/f/fast.txt)" && grep -h -E "^FAIL|^# exit|^###" $o/f/fast.txt | head
fi
[ $SECONDS -lt 520 ] && b tg35-prof $m -p 0 -n 32 -r 1 --profile && head -c 6000 $o/tg35-prof.txt
cd $o && tar cJf all.tar.xz d*.txt && rm -f d*.txt
echo "# done at $SECONDS s"
