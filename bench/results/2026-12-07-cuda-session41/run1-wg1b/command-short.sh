#!/usr/bin/env bash
# the short form of command.sh for a call with little device time left: op cases, one
# interleaved pair at depth 32768, the decode profile
. .cuda-carry/pre.sh
echo "# synth done at $SECONDS s"
(OUT=$o/t STEPS=ops OPS=fattn timeout 150 bash .cuda-carry/device.sh) > /dev/null 2>&1
ok=$(grep -c '^ok' $o/t/ops.txt); bad=$(grep -c '^FAIL' $o/t/ops.txt)
echo "ops: ok $ok FAIL $bad; wg1b cases ok $(grep -c '^ok.*_wg1b' $o/t/ops.txt)"; grep -h -E "^FAIL|^# exit" $o/t/ops.txt | head -12
echo "# ops done at $SECONDS s"
if [ "$bad" = 0 ] && [ "$ok" -gt 500 ] && [ $SECONDS -lt 260 ]; then
  P="-p 4096 -n 0 -b 4096 -ub 4096 --fast"
  b d32k-def-r1 $m $P -d 32768 -r 2; Q36_CUDA_FATTNWG1B=1 b d32k-one-r1 $m $P -d 32768 -r 2
  for f in $o/d*-r*.txt; do echo "$(basename $f .txt): $(grep '^| qwen' $f | awk -F'|' '{print $6}') $(grep -c 'rc 0' $f)"; done
  echo "# A/B done at $SECONDS s"
fi
[ $SECONDS -lt 380 ] && b tg35-prof $m -p 0 -n 32 -r 1 --profile && head -c 6000 $o/tg35-prof.txt
cd $o && tar cJf all.tar.xz *.txt && rm -f d*.txt
echo "# done at $SECONDS s"
