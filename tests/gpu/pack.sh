#!/usr/bin/env bash
# tests/gpu/pack.sh: what a device call carries to the GPU machine, made here
# after `make q36 gpu-tests`: stripped q36 and test_backend_cuda, the GPU
# scripts, the commit, and the shared libraries q36 links that the GPU
# machine (Ubuntu 24.04) lacks, in CARRY (default .cuda-carry); with
# --llama, also the prebuilt llama.cpp CUDA build of ../shared/llama-cuda
# cut anew into LLAMA_PARTS (default 4) folders .dev-p0 .. .dev-p3, one
# part each, and their number in CARRY/llama-parts.txt.
#
# Why four: a call carries the tree (~50 MB, most of it the default models)
# plus its carried folders within 64 MiB, so the 43 MB of llama.cpp travel
# a part a call, back to back while the machine is warm (it is given back
# after ~30 s idle; /tmp stays there between calls, an earlier call's
# carried folders do not), and CARRY (~13 MB) in a call of its own. The
# three parts of ../shared/llama-cuda (15.7 MB each) no longer fit beside
# the tree (2026-12-06: refused as over 64 MiB).
#   run carry=[.dev-p0]  command: mkdir -p /tmp/llama-parts && cp .dev-p0/* /tmp/llama-parts/
#   ... the same for .dev-p1, .dev-p2, .dev-p3, then
#   run carry=[.cuda-carry] command: STEPS=test bash .cuda-carry/device.sh
# (device.sh unpacks the build once every part named in llama-parts.txt is
# in /tmp/llama-parts.)
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
    n=${LLAMA_PARTS:-4} tmp=$(mktemp -d)
    total=$(cat "${parts[@]}" | wc -c)
    cat "${parts[@]}" | split -b $(( (total + n - 1) / n )) -d -a 2 - "$tmp/llama-cuda-sm90.tar.xz.part"
    rm -rf .dev-p*
    i=0
    for f in "$tmp"/llama-cuda-sm90.tar.xz.part*; do
        mkdir -p ".dev-p$i" && mv "$f" ".dev-p$i/" && i=$((i + 1))
    done
    rmdir "$tmp"
    echo "$i" >"$dir/llama-parts.txt"
fi
du -sh "$dir" .dev-p* 2>/dev/null
