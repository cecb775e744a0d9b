./build/q36 bench -m build/models/q08-q4_K_M.gguf -p 512 -n 128 -d 0,4096 -r 3 -t 2 --baseline llama.cpp --bandwidth --progress
