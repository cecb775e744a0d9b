#!/usr/bin/env bash
# session 22 call B: moe op group, fast passes incl. MOEWQ=1 model passes, prefill variants
set -u
dir=.cuda-carry
. $dir/lib.sh
out=${OUT:-/tmp/q36-out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for f in $dir/q36.xz $dir/test_backend_cuda.xz; do [ -f "$f" ] && xz -d -f "$f" && chmod +x "${f%.xz}"; done
{ nvidia-smi; echo "commit: $(cat $dir/commit.txt)"; } >"$out/env.txt" 2>&1
L=/tmp/q36-gpu/models; mkdir -p $L
q=$dir/q36; t=$dir/test_backend_cuda
( [ -f $L/35b.gguf ] || $q synth --arch qwen35moe --preset 35b-a3b --type q4_K_M -o $L/35b.gguf >/dev/null 2>&1; echo "# 35b synth $?" ) &
s() { local n=$1; shift; [ -f $L/$n.gguf ] || $q synth "$@" -o $L/$n.gguf >/dev/null 2>&1 || echo "FAIL synth $n"; }
s moe-q4k-top8 --arch qwen35moe --hidden 256 --experts 16 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K --seed 10
s moe-q8-top3 --arch qwen35moe --experts 8 --experts-used 3 --kv-heads 1 --type q8_0 --attn-interval 3 --seed 11
s moe-q4km --arch qwen35moe --hidden 256 --experts 32 --experts-used 8 --expert-ffn 256 --shared-ffn 256 --type q4_K_M --seed 13
xz -dc models/q36-tiny-moe.gguf.xz > $L/trained.gguf
env $(new_env 1) TBC_OPS=moe timeout 300 $t > $out/ops.txt 2>&1
echo "# ops exit $? at $SECONDS s: ok $(grep -c '^ok ' $out/ops.txt) FAIL $(grep -c '^FAIL ' $out/ops.txt)"
grep '^FAIL ' $out/ops.txt | head -20
for m in moe-q4k-top8 moe-q8-top3 moe-q4km trained; do
  for v in default Q36_CUDA_MOEWQ=1+Q36_CUDA_MOEGEMM=3+Q36_CUDA_MOEROWS=0; do
    set_=(); [ $v = default ] || set_=(${v//+/ })
    env $(new_env 1) "${set_[@]}" timeout 150 $t --no-ops --fast $L/$m.gguf > /tmp/fast-$m-$v.txt 2>&1
    echo "fast $m $v: exit $? ok $(grep -c '^ok ' /tmp/fast-$m-$v.txt) FAIL $(grep -c '^FAIL ' /tmp/fast-$m-$v.txt)"
    grep '^FAIL ' /tmp/fast-$m-$v.txt | head -5
  done
done > $out/fast.txt
cat $out/fast.txt
cat /tmp/fast-*.txt > $out/fast-all.txt
wait
pp=(-ngl 99 -p 4096 -n 0 -b 4096 -ub 4096 --fast)
{
echo "\$ q36 bench -m 35b ${pp[*]} -r 3"; timeout 150 $q bench -m $L/35b.gguf "${pp[@]}" -r 3
for v in Q36_CUDA_MOEWQ=1 Q36_CUDA_F16KEEP=0 Q36_CUDA_F16KEEP=0+Q36_CUDA_MOEWQ=0; do
  echo "\$ env ${v//+/ } q36 bench -m 35b ${pp[*]} -r 3"; env ${v//+/ } timeout 150 $q bench -m $L/35b.gguf "${pp[@]}" -r 3; done
echo "\$ env Q36_CUDA_MOEWQ=1 q36 bench -m 35b ${pp[*]} -r 1 --profile"; env Q36_CUDA_MOEWQ=1 timeout 150 $q bench -m $L/35b.gguf "${pp[@]}" -r 1 --profile
} > $out/prefill.txt 2>&1
grep -E "^\\$|pp4096|_wq|_wg|forward\)" $out/prefill.txt | head -60
echo "# done at $SECONDS s"
