# run from the carried tree's root right after run1, on the same warm machine (its 35B-A3B
# file already made by run1's pre.sh)
. .cuda-carry/pre.sh; (OUT=$o/b STEPS=batch BATCH_ONLY=35b BATCH_T=1,4 BATCH_VARIANTS="Q36_CUDA_DROP=k_matvec8 Q36_CUDA_DROP=k_q8x Q36_CUDA_DROP=k_matvec8_id Q36_CUDA_DROP=k_norm Q36_CUDA_DROP=k_route_warp,k_combine Q36_CUDA_DROP=k_conv,k_deltanet Q36_CUDA_PAD=1" timeout 400 bash .cuda-carry/device.sh) > $o/batch.log 2>&1; grep -h "^# bench-batch.*a step\|^###" $o/b/*.txt | head -40
