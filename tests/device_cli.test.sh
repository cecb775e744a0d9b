#!/usr/bin/env bash
# device_cli.test.sh: the device flags without a GPU (CI has none): -ngl 0
# and --device cpu give the CPU's logits bit for bit; -ngl 99 either runs
# (a CUDA device is there) or fails with one line naming the reason (no
# device, or a q36 built without the cuda backend); a misspelt device is a
# usage error. The GPU's own numbers are tests/gpu/run.sh's.
# Env: BUILD (default build), Q36 (default ./q36). Run from the repo root.
set -u
cd "$(dirname "$0")/.."
. tests/lib.sh
M=$tmp/m.gguf
if ! "$Q36" synth --arch qwen35 --preset tiny --seed 3 -o "$M" >"$tmp/log" 2>&1; then
    fail device_cli.setup "q36 synth: $(tail -n 1 "$tmp/log")"; exit 1
fi
ids="1 2 3 4 5 6"
"$Q36" logits -m "$M" --ids "$ids" -o "$tmp/a.f32" >/dev/null 2>&1
"$Q36" logits -m "$M" --ids "$ids" -o "$tmp/b.f32" -ngl 0 >/dev/null 2>&1 &&
"$Q36" logits -m "$M" --ids "$ids" -o "$tmp/c.f32" --device cpu >/dev/null 2>&1 &&
    cmp -s "$tmp/a.f32" "$tmp/b.f32" && cmp -s "$tmp/a.f32" "$tmp/c.f32" &&
    ok device_cli.ngl0_and_device_cpu_are_the_cpu || fail device_cli.ngl0_and_device_cpu_are_the_cpu "logits differ or a run failed"

"$Q36" logits -m "$M" --ids "$ids" -o "$tmp/g.f32" -ngl 99 >/dev/null 2>"$tmp/err"; rc=$?
if [ $rc -eq 0 ]; then
    ok device_cli.ngl99_runs_on_a_gpu
elif [ $rc -eq 1 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
     grep -qE 'no CUDA device|not built into this q36' "$tmp/err"; then
    ok device_cli.ngl99_without_a_gpu_is_one_error_line
else
    fail device_cli.ngl99 "exit $rc: $(head -c 300 "$tmp/err")"
fi
"$Q36" info -m "$M" -ngl 99 >"$tmp/info" 2>&1 && grep -q 'GPU memory plan' "$tmp/info" &&
    ok device_cli.info_names_the_gpu_plan || fail device_cli.info_names_the_gpu_plan "$(tail -n 2 "$tmp/info")"
expect device_cli.unknown_device 2 "$Q36" logits -m "$M" --ids "1" -o "$tmp/x.f32" --device tpu0
expect device_cli.ngl_needs_a_number 2 "$Q36" run -m "$M" -p hi -ngl many
