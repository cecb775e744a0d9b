#!/usr/bin/env bash
# two device calls (run tool, carry [".cuda-carry"] at bf1e999, pre.sh as in run2), on the
# machine warm from run4: Nsight Compute on one launch of the default attention kernel at
# depth ~30k (ncu-def.txt), then, with Q36_CUDA_FATTNWS=1, on one launch of its WS form
# (ncu-ws.txt; the first call asked for it by the label k_fattn_ws, which names no symbol:
# both forms are k_fattn_wg, and with the switch only the WS form launches)
. .cuda-carry/pre.sh
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for v in def ws; do
  e=; [ $v = ws ] && e=Q36_CUDA_FATTNWS=1
  env $e timeout 150 $ncu -k regex:k_fattn_wg --launch-skip 75 -c 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section SchedulerStats --print-details all \
    $d/q36 bench -m $m -ngl 99 -p 4096 -n 0 -b 4096 -ub 4096 --fast -d 32768 -r 1 > $o/ncu-$v.txt 2>&1
done
