#!/usr/bin/env bash
# the op group ops with run.sh's NEW=1 and NEW=0 switches, test_backend_cuda built at
# 52c9f53 plus same_bytes naming the first differing bytes (committed in 14ef8ba)
d=.cuda-carry; for f in $d/q36.xz $d/test_backend_cuda.xz; do [ -f $f ] && xz -d -f $f; done; chmod +x $d/q36 $d/test_backend_cuda
export LD_LIBRARY_PATH=$PWD/$d/lib; o=$OUT; . $d/lib.sh
env $(new_env 1) TBC_OPS=ops timeout 200 $d/test_backend_cuda > $o/ops.txt 2>&1; echo "# rc $?" >> $o/ops.txt
env $(new_env 0) TBC_OPS=ops timeout 200 $d/test_backend_cuda > $o/ops0.txt 2>&1; echo "# rc $?" >> $o/ops0.txt
grep -h "q8_0.*kv_store" $o/ops.txt | head -5; grep -h "q8_0.*kv_store" $o/ops0.txt | head -3
