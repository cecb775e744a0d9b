#!/usr/bin/env bash
# the device call (run tool, made by a helper agent after six refused starts; carry
# [".cuda-carry"] packed by tests/gpu/pack.sh at 70234a8), 21:42 UTC: the chunk op group and
# the fast-mode model passes, owed from session 38 (259c754 was never run on a GPU; 70234a8
# holds it and adds the expert products' wg_group)
o=$OUT; OUT=$o/t STEPS=ops OPS=chunk timeout 90 bash .cuda-carry/device.sh
OUT=$o/f STEPS=fast FAST_MODELS="dense-q4km moe-q4km" timeout 150 bash .cuda-carry/device.sh
nvidia-smi -L > $o/smi.txt
grep -c '^ok' $o/t/ops.txt $o/f/fast.txt; grep -c '^FAIL' $o/t/ops.txt $o/f/fast.txt
