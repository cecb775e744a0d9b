#!/usr/bin/env bash
# the device call (run tool, carry [".cuda-carry"] at 70234a8, pre.sh as in run2), 21:49 UTC,
# on the machine warm from run3 (llama.cpp unpacked there): decode beside llama.cpp, then the
# defaults against Q36_CUDA_Q8KEEP=1 (norms write the int8 rows the next products read), two
# rounds, q36 alone
# (run3's tests/gpu/device.sh unpacked the llama.cpp build on the GPU machine's temporary disk,
# written <device tmp> as in the record's raw files)
. .cuda-carry/pre.sh; LL="<device tmp>/llama-cuda/llama-cuda-sm90/lib"; export LD_LIBRARY_PATH=$LL:$LD_LIBRARY_PATH
b tg35-llama $m -p 0 -n 64 -r 3 --baseline llama.cpp --llama-lib $LL
b tg08-llama $m08 -p 0 -n 128 -r 3 --baseline llama.cpp --llama-lib $LL
for r in 1 2; do
  b tg35-v0-r$r $m -p 0 -n 64 -r 3; Q36_CUDA_Q8KEEP=1 b tg35-v1-r$r $m -p 0 -n 64 -r 3
  b tg08-v0-r$r $m08 -p 0 -n 128 -r 3; Q36_CUDA_Q8KEEP=1 b tg08-v1-r$r $m08 -p 0 -n 128 -r 3
done
grep -h -E '^\$|^\| tg|^\| qwen' $o/tg*.txt | cut -c1-150
tar cJf $o/tg.tar.xz -C $o $(cd $o; ls tg*.txt); rm $o/tg*.txt
