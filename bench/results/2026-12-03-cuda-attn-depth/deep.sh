#!/usr/bin/env bash
# the session-15 deep-decode bench: q36 beside llama.cpp at depths, the
# deep profile, Q8KEEP A/B. Run from the carried tree's root (run1 ran it
# with the defaults below). Since then device.sh's deep step does the same.
set -u
d=.cuda-carry
STEPS=none bash $d/device.sh >/dev/null 2>&1
# WORK: the scratch folder (device.sh unpacks llama.cpp under $WORK/llama-cuda)
work=${WORK:-/tmp}
L=${LLAMA_LIB:-$work/llama-cuda/llama-cuda-sm90/lib}
export LD_LIBRARY_PATH=$PWD/$d/lib:$L
q=$d/q36 m8=$work/m08.gguf m35=$work/m35.gguf
base=(--baseline llama.cpp --llama-lib $L)
[ -d $L ] || { echo "no llama.cpp unpacked"; base=(); }
echo "# commit $(cat $d/commit.txt)"
[ -f $m8 ] || $q synth --arch qwen35 --preset 0.8b --type q4_K_M -o $m8 >/dev/null
[ -f $m35 ] || $q synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o $m35 >/dev/null
r() { echo "\$ $*"; timeout 150 "$@"; echo "(exit $?)"; }
fa=(-b 4096 -ub 4096 --fast)
r $q bench -m $m35 -ngl 99 -p 0 -n 64 -d 32768 -r 2 "${fa[@]}" "${base[@]}"
r $q bench -m $m35 -ngl 99 -p 0 -n 64 -d 8192 -r 2 "${fa[@]}" "${base[@]}"
r $q bench -m $m35 -ngl 99 -p 0 -n 64 -r 3 "${base[@]}"
r $q bench -m $m8 -ngl 99 -p 0 -n 128 -d 32768 -r 2 "${fa[@]}" "${base[@]}"
r $q bench -m $m8 -ngl 99 -p 0 -n 128 -r 3 "${base[@]}"
r $q bench -m $m35 -ngl 99 -p 0 -n 16 -d 32768 -r 1 "${fa[@]}" --profile
for i in 1 2; do
  for v in Q36_CUDA_Q8KEEP=0 Q36_CUDA_Q8KEEP=1; do
    r env $v $q bench -m $m8 -ngl 99 -p 0 -n 128 -r 3
    r env $v $q bench -m $m35 -ngl 99 -p 0 -n 64 -r 3
  done
done
