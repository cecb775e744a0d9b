#!/usr/bin/env bash
# tests/gpu/pack.sh: what a device call carries to the GPU machine, made here
# after `make q36 gpu-tests`: stripped q36 and test_backend_cuda, the GPU
# scripts, the commit, and the shared libraries q36 links that the GPU
# machine (Ubuntu 24.04) lacks, in CARRY (default .cuda-carry); with
# --llama, also the prebuilt llama.cpp CUDA build of ../shared/llama-cuda
# in three folders .dev-p0 .dev-p1 .dev-p2, one part each.
#
# Why three: a call carries the tree (~47 MB, most of it the default model)
# plus its carried folders within 64 MiB, so the 42 MB of llama.cpp parts
# travel one per call, back to back while the machine is warm (it is given
# back after ~30 s idle; /tmp stays there between calls, an earlier call's
# carried folders do not), and CARRY (~6 MB) in a call of its own:
#   run carry=[.dev-p0]  command: mkdir -p /tmp/llama-parts && cp .dev-p0/* /tmp/llama-parts/
#   run carry=[.dev-p1]  command: mkdir -p /tmp/llama-parts && cp .dev-p1/* /tmp/llama-parts/
#   run carry=[.dev-p2]  command: mkdir -p /tmp/llama-parts && cp .dev-p2/* /tmp/llama-parts/
#   run carry=[.cuda-carry] command: STEPS=test bash .cuda-carry/device.sh
# The folders must be in .git/info/exclude (/.cuda-carry/, /.dev-p*/).
# Usage: tests/gpu/pack.sh [CARRY] [--llama]
set -eu
cd "$(dirname "$0")/../.."
dir=.cuda-carry llama=0
for a in "$@"; do
    case $a in
    --llama) llama=1 ;;
    *) dir=$a ;;
    esac
done
for f in build/q36 build/tests/gpu/test_backend_cuda; do
    [ -x "$f" ] || { echo "tests/gpu/pack.sh: $f missing: run 'make q36 gpu-tests' first" >&2; exit 1; }
done
rm -rf "$dir"
mkdir -p "$dir/lib"
# the two binaries travel xz-compressed (~20 MB -> ~5 MB) so that the tree
# and a carry fit a call's 64 MiB; device.sh unpacks them first
for f in build/q36 build/tests/gpu/test_backend_cuda; do
    strip -o "$dir/${f##*/}" "$f" && xz -T2 -6 "$dir/${f##*/}"
done
cp tests/gpu/run.sh tests/gpu/bench.sh tests/gpu/device.sh tests/gpu/profile.sh tests/gpu/lib.sh tests/gpu/serve_gpu.py \
    tests/gpu/serve_bench.py tests/gpu/ncu.sh tests/gpu/ncu_sum.py "$dir/"
cp build/commit.txt "$dir/" 2>/dev/null || git rev-parse --short HEAD >"$dir/commit.txt"
ldd build/q36 | awk '/libcjson|libutf8proc|libmicrohttpd/ { print $3 }' | while read -r l; do
    cp -L "$l" "$dir/lib/"
done
if [ "$llama" = 1 ]; then
    parts=(../shared/llama-cuda/llama-cuda-sm90.tar.xz.part*)
    [ -f "${parts[0]}" ] || { echo "tests/gpu/pack.sh: no ../shared/llama-cuda parts" >&2; exit 1; }
    for i in "${!parts[@]}"; do
        rm -rf ".dev-p$i" && mkdir -p ".dev-p$i" && cp "${parts[$i]}" ".dev-p$i/"
    done
fi
du -sh "$dir" .dev-p* 2>/dev/null
