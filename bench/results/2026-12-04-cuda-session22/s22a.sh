#!/usr/bin/env bash
# session 22 call A: chunk + gemm16 op groups, fast passes, prefill beside llama.cpp, profile, TF32 A/B
set -u
dir=.cuda-carry
. $dir/lib.sh
out=${OUT:-/tmp/q36-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for f in $dir/q36.xz $dir/test_backend_cuda.xz; do [ -f "$f" ] && xz -d -f "$f" && chmod +x "${f%.xz}"; done
{ nvidia-smi; echo "commit: $(cat $dir/commit.txt)"; } >"$out/env.txt" 2>&1
if [ "$(ls /tmp/llama-parts 2>/dev/null | wc -l)" -ge 3 ]; then
  mkdir -p /tmp/llama-cuda
  [ -d /tmp/llama-cuda/llama-cuda-sm90/lib ] || cat /tmp/llama-parts/llama-cuda-sm90.tar.xz.part* | xz -d | tar x -C /tmp/llama-cuda
  export LLAMA_LIB=/tmp/llama-cuda/llama-cuda-sm90/lib LD_LIBRARY_PATH=/tmp/llama-cuda/llama-cuda-sm90/lib:$LD_LIBRARY_PATH
fi
L=/tmp/q36-gpu/models; mkdir -p $L
q=$dir/q36; t=$dir/test_backend_cuda
( $q synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o $L/35b.gguf >/dev/null 2>&1; echo "# 35b synth $?" ) &
( $q synth --arch qwen35 --preset 0.8b --type q4_K_M -o $L/08b.gguf >/dev/null 2>&1 ) &
s() { local n=$1; shift; $q synth "$@" -o $L/$n.gguf >/dev/null 2>&1 || echo "FAIL synth $n"; }
s dense-q4km  --arch qwen35 --hidden 256 --ffn 512 --ssm-head-dim 64 --type q4_K_M --seed 2
s dense-q8hd256 --arch qwen35 --hidden 256 --ffn 512 --heads 2 --kv-heads 1 --head-dim 256 --rope-dims 64 --ssm-head-dim 128 --type q8_0 --seed 5
s dense-f16 --arch qwen35 --type f16 --seed 6
s dense-f32 --arch qwen35 --type f32 --attn-interval 2 --seed 8
s moe-q4k-top8 --arch qwen35moe --hidden 256 --experts 16 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K --seed 10
s moe-q8-top3 --arch qwen35moe --experts 8 --experts-used 3 --kv-heads 1 --type q8_0 --attn-interval 3 --seed 11
s moe-q4km --arch qwen35moe --hidden 256 --experts 32 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K_M --seed 13
xz -dc models/q36-tiny-moe.gguf.xz > $L/trained.gguf
echo "# models at $SECONDS s"
env $(new_env 1) TBC_OPS=${OPSX:-moe} timeout 300 $t > $out/ops.txt 2>&1
echo "# ops exit $? at $SECONDS s: ok $(grep -c '^ok ' $out/ops.txt) FAIL $(grep -c '^FAIL ' $out/ops.txt)"
grep '^FAIL ' $out/ops.txt | head -20
for m in dense-q4km dense-q8hd256 dense-f16 dense-f32 moe-q4k-top8 moe-q8-top3 moe-q4km trained; do
  env $(new_env 1) timeout 150 $t --no-ops --fast $L/$m.gguf > /tmp/fast-$m.txt 2>&1
  echo "fast $m: exit $? ok $(grep -c '^ok ' /tmp/fast-$m.txt) FAIL $(grep -c '^FAIL ' /tmp/fast-$m.txt)"
  grep '^FAIL ' /tmp/fast-$m.txt | head -5
done > $out/fast.txt
cat $out/fast.txt
cat /tmp/fast-*.txt > $out/fast-all.txt
echo "# fast passes done at $SECONDS s"
wait
pp=(-ngl 99 -p 4096 -n 0 -b 4096 -ub 4096 --fast)
base=(); [ -n "${LLAMA_LIB:-}" ] && base=(--baseline llama.cpp --llama-lib "$LLAMA_LIB")
{
for m in 08b 35b; do echo "\$ q36 bench -m $m ${pp[*]} -r 3 ${base[*]}"; timeout 200 $q bench -m $L/$m.gguf "${pp[@]}" -r 3 "${base[@]}"; echo "# exit $?"; done
echo "\$ q36 bench -m 35b ${pp[*]} -r 1 --profile"; timeout 150 $q bench -m $L/35b.gguf "${pp[@]}" -r 1 --profile
for v in ${VARS:-Q36_CUDA_MOEWQ=0}; do echo "\$ env $v q36 bench -m 35b ${pp[*]} -r 3"; env $v timeout 150 $q bench -m $L/35b.gguf "${pp[@]}" -r 3; done
echo "\$ q36 bench -m 35b ${pp[*]} -r 3 (again)"; timeout 150 $q bench -m $L/35b.gguf "${pp[@]}" -r 3
} > $out/prefill.txt 2>&1
grep -E "^\\$|pp4096|k_chunk|cublas|forward\)" $out/prefill.txt | head -60
echo "# done at $SECONDS s"
