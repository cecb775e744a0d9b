#!/usr/bin/env bash
# the device calls (run tool), 19:07 UTC, on one warm machine: four calls carrying the llama.cpp
# CUDA build of ../shared/llama-cuda in parts of 10.8 MB (a tree with tests/gpu/pack.sh's parts
# of 15.7 MB was refused as over 64 MiB), made here by
#   cat ../shared/llama-cuda/llama-cuda-sm90.tar.xz.part* | split -b 10800000 -d -a 2 - llama-cuda-sm90.tar.xz.part
# part00-part02 in .dev-p0-.dev-p2, part03 and the 78,536-byte part04 in .dev-p3, each call
# copying its folder's parts into tests/gpu/device.sh's parts folder on the warm machine (as
# tests/gpu/pack.sh's comment shows), then this script with carry [".cuda-carry"] packed by tests/gpu/pack.sh at e36adc6 and
# ../../2026-12-05-cuda-session26/run-52c9f53/pre.sh copied to .cuda-carry/pre.sh:
. .cuda-carry/pre.sh
# (the call as run also listed the parts folder here: part00-part04)
OUT=$o/p STEPS=prefill timeout 400 bash .cuda-carry/device.sh > /dev/null 2>&1
grep -h -E "^\\$|^\| qwen|^\| llama|exit status|ratio|q36/" $o/p/prefill.txt | cut -c1-160
cd $o && tar cJf all.tar.xz p && rm -rf p
echo "# done at $SECONDS s"; ls -la $o
