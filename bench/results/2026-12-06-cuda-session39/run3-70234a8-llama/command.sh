#!/usr/bin/env bash
# the device calls (run tool), 21:48 UTC, on the machine warm from run2: four calls each
# carrying one folder .dev-pN of tests/gpu/pack.sh --llama's parts of ../shared/llama-cuda
# (the llama.cpp v0.5.0 CUDA build) and running
#   mkdir -p <device tmp>/llama-parts && cp .dev-pN/llama-cuda-sm90.tar.xz.part* <device tmp>/llama-parts/
# then this, carry [".cuda-carry"] (70234a8, pre.sh as in run2):
. .cuda-carry/pre.sh
OUT=$o/p STEPS=prefill PREFILL_D=32768 timeout 420 bash .cuda-carry/device.sh > /dev/null 2>&1
echo "# prefill done at $SECONDS s"
[ $SECONDS -lt 470 ] && b pp8192 $m -p 8192 -n 0 -b 8192 -ub 8192 --fast -r 2 && grep -h '^| qwen' $o/pp8192.txt
cd $o && tar cJf all.tar.xz p pp8192.txt; rm -rf p
