#!/usr/bin/env bash
# the short form of c2.sh for little device time: op cases, one-slot and 4-slot steps on the
# 35B-A3B file with and without Q36_CUDA_MV6S=1, one interleaved tg round on it
. .cuda-carry/pre.sh
echo "# synth done at $SECONDS s"
(OUT=$o/t STEPS=ops OPS=mv6s,mv8 timeout 120 bash .cuda-carry/device.sh) > /dev/null 2>&1
ok=$(grep -c '^ok' $o/t/ops.txt); bad=$(grep -c '^FAIL' $o/t/ops.txt)
echo "ops: ok $ok FAIL $bad; mv6s cases ok $(grep -c '^ok cuda.mv6s' $o/t/ops.txt)"; grep -h -E "^FAIL|^# exit" $o/t/ops.txt | head -12
echo "# ops done at $SECONDS s"
if [ "$bad" = 0 ] && [ "$ok" -gt 50 ]; then
  (OUT=$o/b STEPS=batch BATCH_ONLY=35b BATCH_T=1,4 BATCH_VARIANTS="Q36_CUDA_MV6S=1" timeout 120 bash .cuda-carry/device.sh) > /dev/null 2>&1
  grep -h "^# bench-batch.*a step\|^###" $o/b/*.txt
  echo "# batch done at $SECONDS s"
  [ $SECONDS -lt 330 ] && { b tg35-def-r1 $m -p 0 -n 64 -r 3; Q36_CUDA_MV6S=1 b tg35-s6-r1 $m -p 0 -n 64 -r 3; }
  for f in $o/tg*-r*.txt; do echo "$(basename $f .txt): $(grep '^| qwen' $f | awk -F'|' '{print $6}') $(grep -c 'rc 0' $f)"; done
fi
cd $o && tar cJf all.tar.xz tg*.txt 2>/dev/null && rm -f tg*.txt
echo "# done at $SECONDS s"
