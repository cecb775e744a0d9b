#!/usr/bin/env bash
# call F: q8_0 caches' cases (ops NEW=1, fattn, model passes) and the chunk cases (L2 prefetch),
# then pp4096 with Q36_CUDA_CHUNKPF=0/3/4 and q8_0 vs f16 caches
. .cuda-carry/pre.sh
xz -dc models/q36-tiny-moe.gguf.xz > /tmp/trained.gguf
LOG=/tmp/q36-gpu; mkdir -p $LOG/models
sy() { local n=$1; shift; case $n in dense-q4km|dense-q8hd256|moe-q4km) [ -f $LOG/models/$n.gguf ] || $d/q36 synth "$@" -o $LOG/models/$n.gguf > /dev/null 2>&1;; esac; }
each_test_model sy
env $(new_env 1) TBC_OPS=ops,chunk timeout 150 $d/test_backend_cuda > $o/ops.txt 2>&1; echo "# rc $?" >> $o/ops.txt
env $(new_env 1) TBC_OPS=fattn timeout 100 $d/test_backend_cuda > $o/fattn.txt 2>&1; echo "# rc $?" >> $o/fattn.txt
for f in ops fattn; do echo "$f: $(grep -c '^ok ' $o/$f.txt) ok, $(grep -c '^FAIL' $o/$f.txt) FAIL; $(tail -1 $o/$f.txt)"; grep '^FAIL' $o/$f.txt | head -6; done
for f in dense-q4km dense-q8hd256 moe-q4km trained; do
  p=$LOG/models/$f.gguf; [ $f = trained ] && p=/tmp/trained.gguf
  for mode in "" --fast; do
    echo "### $f kvq8 $mode" >> $o/models.txt
    env $(new_env 1) Q36_CUDA_KVQ8=1 timeout 60 $d/test_backend_cuda --no-ops $mode --kv-q8 $p >> $o/models.txt 2>&1; echo "# rc $?" >> $o/models.txt
  done
done
echo "models: $(grep -c '^ok ' $o/models.txt) ok, $(grep -c '^FAIL' $o/models.txt) FAIL"; grep -E '^FAIL|^# rc [^0]' $o/models.txt | head -12
echo "# tests done at $SECONDS s"
for pf in 0 3 4 0 3; do echo "== CHUNKPF=$pf" >> $o/pf.txt; Q36_CUDA_CHUNKPF=$pf timeout 80 $d/q36 bench -m $m -ngl 99 -p 4096 -n 0 -b 4096 -ub 4096 --fast -r 2 >> $o/pf.txt 2>&1; done
grep -E '^== |pp4096' $o/pf.txt
echo "# pf done at $SECONDS s"
if [ $SECONDS -lt 420 ]; then
for kv in q8_0 f16; do
  echo "== $kv" >> $o/kv.txt
  Q36_CUDA_KVQ8=1 timeout 60 $d/q36 bench -m $m -ngl 99 -p 0 -n 64 -d 0,8192 -r 2 -ctk $kv -ctv $kv >> $o/kv.txt 2>&1
  Q36_CUDA_KVQ8=1 timeout 60 $d/q36 bench -m $m -ngl 99 -p 4096 -n 0 -b 4096 -ub 4096 -d 0,8192 --fast -r 2 -ctk $kv -ctv $kv >> $o/kv.txt 2>&1
done
grep -E '^== |tg64|pp4096' $o/kv.txt
fi
echo "# done at $SECONDS s"
pack_out $o
