#!/bin/bash
# alternate the two builds, 3 rounds each, 2 threads and 1 thread
cd /tmp/thr
for round in 1 2 3; do
  for v in pool omp; do
    for t in 2 1; do
      echo "=== round $round build $v threads $t load $(cut -d' ' -f1 /proc/loadavg)"
      ./q36-$v bench -m /tmp/q08.gguf -p 256 -n 64 -d 0 -r 3 -t $t -o jsonl 2>&1 | grep -E '"n_prompt"|error' | sed 's/"samples_ts":\[[^]]*\],//'
    done
  done
done
