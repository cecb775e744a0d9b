#!/usr/bin/env bash
# call 1: the owed op cases (OV attention, q80tc), fast model passes with OV, batch A/B Q80TC
o=$OUT; T0=$SECONDS
(OUT=$o/t STEPS=ops OPS=fattn,q80tc,mvq80 timeout 170 bash .cuda-carry/device.sh) > /dev/null 2>&1
echo "ops: ok $(grep -c '^ok' $o/t/ops.txt) FAIL $(grep -c '^FAIL' $o/t/ops.txt)"; grep -h -E "^FAIL|^# exit" $o/t/ops.txt | head -20
echo "# ops done at $SECONDS s"
(OUT=$o/f STEPS=fast FAST_MODELS="moe-q4km dense-q4km" FAST_VARIANTS=Q36_CUDA_FATTNWGOV=1 timeout 200 bash .cuda-carry/device.sh) > /dev/null 2>&1
echo "fast: ok $(grep -c '^ok' $o/f/fast.txt) FAIL $(grep -c '^FAIL' $o/f/fast.txt)"; grep -h -E "^FAIL|^# exit|^###" $o/f/fast.txt | head -20
echo "# fast done at $SECONDS s"
(OUT=$o/b STEPS=batch BATCH_ONLY=trained BATCH_T=4,8,16 BATCH_VARIANTS=Q36_CUDA_Q80TC=8 timeout 120 bash .cuda-carry/device.sh) 2>&1 | grep -E 'ms a step, |###'
echo "# batch done at $SECONDS s"
nvidia-smi -L > $o/smi.txt
