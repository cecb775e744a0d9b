#!/usr/bin/env bash
# call E: where the chunk kernels' and the decode step's time goes (Nsight Compute)
. .cuda-carry/pre.sh
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
echo "ncu: $ncu" >> $o/env.txt; $ncu --version >> $o/env.txt 2>&1
A="-m $m -ngl 99 -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 1"
for kr in k_chunk_prep_tc k_chunk_state_split; do
  timeout 150 $ncu --clock-control none --section WarpStateStats --section InstructionStats --section SchedulerStats \
    --section ComputeWorkloadAnalysis --section SourceCounters --print-details all -k "regex:$kr" --launch-skip 8 --launch-count 1 \
    $d/q36 bench $A > $o/ncu-$kr.txt 2>&1; echo "# rc $?" >> $o/ncu-$kr.txt
  timeout 120 $ncu --clock-control none --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__inst_executed_pipe_lsu.sum,sm__inst_executed_pipe_tensor.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__sass_inst_executed_op_shared_ld.sum,smsp__sass_inst_executed_op_global_st.sum,smsp__sass_inst_executed_op_ldgsts.sum" \
    -k "regex:$kr" --launch-skip 8 --launch-count 1 $d/q36 bench $A > $o/ncum-$kr.txt 2>&1; echo "# rc $?" >> $o/ncum-$kr.txt
  echo "== $kr"; grep -E 'stalled|inst_executed|conflicts|rc ' $o/ncum-$kr.txt | head -40
done
echo "# chunk ncu done at $SECONDS s"
csv=$o/ncu-decode35.csv
timeout 200 env Q36_CUDA_GRAPHS=0 $ncu --clock-control none --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  --launch-skip 1500 --launch-count 700 $d/q36 bench -m $m -ngl 99 -p 0 -n 8 -r 1 > $csv 2>&1
python3 $d/ncu_sum.py $csv > $o/ncu-decode35-sum.txt 2>&1; head -40 $o/ncu-decode35-sum.txt
xz $csv
echo "# done at $SECONDS s"
pack_out $o
