# run on the device from the carried tree's root, the machine of run1 still warm
# (its 35B-A3B file in <device tmp>/models), one line as sent, with the device's
# working folder (tests/gpu/device.sh's LOG) written <device tmp> here as in the output
# (so the sed that rewrote that path in the output reads as a no-op):
xz -d -f .cuda-carry/test_backend_cuda.xz .cuda-carry/q36.xz; chmod +x .cuda-carry/test_backend_cuda .cuda-carry/q36; export LD_LIBRARY_PATH=$PWD/.cuda-carry/lib; m='<device tmp>'/models/35b-a3b-q4km.gguf; for r in 1 2 3; do for v in def Q36_CUDA_SIDE=1 Q36_CUDA_SIDE=1+Q36_CUDA_Q8KEEP=2 Q36_CUDA_SIDE=1+Q36_CUDA_Q8KEEP=2+Q36_CUDA_CMBNORM=1; do set=(); [ "$v" = def ] || set=(${v//+/ }); echo "### r$r $v"; env "${set[@]}" BENCH_T=1,4 timeout 60 .cuda-carry/test_backend_cuda --bench-batch $m 2>&1 | grep -E 'bench-batch' | sed 's#<device tmp>#<device tmp>#'; done; done 2>&1 | tee $OUT/ab.txt | grep -c bench
