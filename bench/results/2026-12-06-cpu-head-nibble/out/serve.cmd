NGL=0 python3 tests/gpu/serve_bench.py ./build/q36 build/default.gguf --base-q36 --base-q36-env Q36_CPU_HEADNIB=0 --np 1,4 --seconds 12 --max-tokens 128 --ctx 2048 --reps 2 --budget 200
