# run from the repository root of the carried tree (tests/gpu/pack.sh at 8c43601), one device call
cd .cuda-carry && xz -d -f q36.xz test_backend_cuda.xz && chmod +x q36 test_backend_cuda && cd ..
export LD_LIBRARY_PATH=$PWD/.cuda-carry/lib; xz -dc models/q36-tiny-moe.gguf.xz > /tmp/trained.gguf
ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
for T in 4 16; do
    Q36_CUDA_GRAPHS=0 BENCH_T=$T timeout 200 $ncu --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv --launch-skip 900 --launch-count 450 \
        .cuda-carry/test_backend_cuda --bench-batch /tmp/trained.gguf > $OUT/ncu-T$T.csv 2>&1
    python3 .cuda-carry/ncu_sum.py $OUT/ncu-T$T.csv > $OUT/ncu-T$T-sum.txt 2>&1
done
xz -9 $OUT/ncu-T*.csv
