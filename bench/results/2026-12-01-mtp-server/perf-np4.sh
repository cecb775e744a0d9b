# perf-np4.sh [q36 serve flags]: perf record -g of a q36 serve -np 4 -t 1 under spec.sh's 4
# concurrent 256-token greedy completions, one run; prints the flat profile. From the repository root.
out=$(mktemp -d)
./q36 serve --port 0 -np 4 -t 1 -c 4096 --cache-ram 0 "$@" >$out/o 2>$out/e & pid=$!
for i in $(seq 50); do url=$(sed -n 's/^q36 serve: listening on \(http[^ ]*\).*/\1/p' $out/o); [ -n "$url" ] && break; sleep 0.2; done
perf record -F 999 -g -p $pid -o $out/perf.data 2>/dev/null & pp=$!
sleep 0.5
node bench/server/spec.mjs 1 256 "x=$url" -- bench/results/2026-12-01-mtp/prompt-code.txt bench/results/2026-12-01-mtp/prompt-model_mtp.txt bench/results/2026-12-01-mtp/prompt-export_gguf.txt bench/results/2026-12-01-mtp-server/np4-t1/prompt-data.txt | head -1 | cut -c1-200
kill -INT $pp; wait $pp
kill $pid; wait $pid
perf report -i $out/perf.data --no-children --sort symbol -g none 2>/dev/null | grep -v "^#" | grep "%" | head -25
