#!/usr/bin/env bash
# call 3: Nsight Compute on k_fattn_wg at depth ~30k (default and OV): where its time goes
. .cuda-carry/pre.sh
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for v in def ov; do
  e=; [ $v = ov ] && e=Q36_CUDA_FATTNWGOV=1
  env $e timeout 200 $ncu -k regex:k_fattn_wg --launch-skip 75 -c 1 --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy --section SourceCounters \
    $d/q36 bench -m $m -ngl 99 -p 4096 -n 0 -b 4096 -ub 4096 --fast -d 32768 -r 1 > $o/ncu-$v.txt 2>&1
  echo "# $v done at $SECONDS s rc $?"
done
grep -h -E "Duration|Throughput|Stall|Issued|Registers|Warp Cycles|smsp__pcsamp|Achieved" $o/ncu-*.txt | head -80
