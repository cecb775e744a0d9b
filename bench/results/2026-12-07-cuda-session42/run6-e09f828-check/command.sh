#!/usr/bin/env bash
# call 3: HEAD's op cases for what this session's code touched (prompt attention, the int8
# decode products), then the fast model passes on moe-q4km and the trained model
d=.cuda-carry; for f in $d/q36.xz $d/test_backend_cuda.xz; do [ -f $f ] && xz -d -f $f; done; chmod +x $d/q36 $d/test_backend_cuda
export LD_LIBRARY_PATH=$PWD/$d/lib; o=$OUT; nvidia-smi > $o/env.txt; cat $d/commit.txt >> $o/env.txt
(OUT=$o/t STEPS=ops OPS=fattn,mv8,mvyf,mvwide timeout 150 bash $d/device.sh) > /dev/null 2>&1
echo "ops: ok $(grep -c '^ok' $o/t/ops.txt) FAIL $(grep -c '^FAIL' $o/t/ops.txt)"; grep -h -E "^FAIL|^# exit" $o/t/ops.txt | head
echo "# ops done at $SECONDS s"
[ $SECONDS -lt 170 ] && (OUT=$o/f STEPS=fast FAST_MODELS="moe-q4km" timeout 100 bash $d/device.sh) > /dev/null 2>&1 &&
  echo "fast: ok $(grep -c '^ok' $o/f/fast.txt) FAIL $(grep -c '^FAIL' $o/f/fast.txt)" && grep -h -E "^FAIL|^# exit" $o/f/fast.txt | head
# (here the call rewrote the device's working folder as <device tmp> in $o's .txt files with
# sed; tests/gpu/device.sh now does that itself: tests/gpu/lib.sh, scrub_out)
echo "# done at $SECONDS s"
