#!/usr/bin/env bash
# Installs what building and testing q36 need on Debian 12, and nothing when it
# is all there already (a second run takes well under a second).
#   Debian packages: a C compiler, make, clang (libFuzzer), cJSON, PCRE2, utf8proc,
#   libmicrohttpd (q36 serve), xz (the default model), git, node/npm, chromium (the page's
#   browser tests), python3 (tests/gpu/serve_bench.py's CPU check)
#   npm (tests/oracle, pinned by package-lock.json): llama.cpp's prebuilt
#   libraries and source bundle, the Qwen3 tokenizer, a Jinja engine;
#   (tests/server, pinned the same way): the openai and @anthropic-ai/sdk clients;
#   (src/server/web): esbuild, markdown-it and highlight.js, bundled into the page;
#   (tests/web): puppeteer-core, which drives Debian's chromium in tests/web.test.sh.
# Then it unpacks the llama.cpp headers from the bundle into build/llama.cpp.
# `scripts/setup.sh page` installs only node/npm if missing and the page's npm
# packages (src/server/web): what `make` needs to build q36 serve's embedded
# page, and what the Makefile runs when they are missing.
set -eu
cd "$(dirname "$0")/.."
mode=${1:-all}

pkgs="gcc make clang libclang-rt-14-dev libcjson-dev libpcre2-dev libutf8proc-dev libmicrohttpd-dev xz-utils git ca-certificates chromium python3"
missing=""
[ "$mode" = page ] && pkgs=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
# Node.js may come from Debian (nodejs + npm) or from elsewhere with npm inside.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
if [ -n "$missing" ]; then
    echo "setup: installing Debian packages:$missing" >&2
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

# npm packages exactly as locked (versions and sha512 integrity), in DIR:
# `npm install` on the lock, checked unchanged afterwards. `npm ci` refuses
# the oracle's lock (npm leaves the macOS/Windows optional packages out of a
# lock made on Linux and then calls it out of sync).
npm_pinned() {
    local dir=$1; shift
    local stamp=$dir/node_modules/.q36-stamp
    if [ -f "$stamp" ] && [ ! "$dir/package-lock.json" -nt "$stamp" ]; then
        return 0
    fi
    echo "setup: installing the pinned packages in $dir" >&2
    mkdir -p build
    cp "$dir/package-lock.json" build/.package-lock.orig
    (cd "$dir" && npm install "$@" --no-audit --no-fund --loglevel=error)
    if ! cmp -s "$dir/package-lock.json" build/.package-lock.orig; then
        cp build/.package-lock.orig "$dir/package-lock.json"
        echo "setup: npm wanted to change $dir/package-lock.json; refusing" >&2
        exit 1
    fi
    touch "$stamp"
}

if [ "$mode" = page ]; then
    npm_pinned src/server/web --ignore-scripts
    exit 0
fi

# The oracle: --omit=optional skips node-llama-cpp's other platform builds
# (CUDA, Vulkan, ARM: about 550 MB); --ignore-scripts skips its post-install
# step, which would try to download or build.
npm_pinned tests/oracle --ignore-scripts --omit=optional
# The official openai and @anthropic-ai/sdk clients that drive q36 serve.
npm_pinned tests/server --ignore-scripts
# The page's libraries and its bundler (esbuild's binary comes in its
# @esbuild/linux-x64 package; its install script only re-checks that).
npm_pinned src/server/web --ignore-scripts
# puppeteer-core: no browser download; it drives Debian's chromium.
npm_pinned tests/web --ignore-scripts

# llama.cpp's source of that exact build, for its headers (and for reading).
bundle=tests/oracle/node_modules/node-llama-cpp/llama/gitRelease.bundle
if [ ! -f build/llama.cpp/include/llama.h ] || [ "$bundle" -nt build/llama.cpp/include/llama.h ]; then
    echo "setup: unpacking llama.cpp source from the oracle bundle" >&2
    rm -rf build/llama.cpp
    mkdir -p build
    git -c advice.detachedHead=false clone -q "$bundle" build/llama.cpp
    touch build/llama.cpp/include/llama.h
fi
