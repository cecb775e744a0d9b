./build/q36 bench -m build/models/q08-q8_0.gguf -p 512 -n 128 -d 0,4096 -r 5 -t 2 --baseline llama.cpp --bandwidth --progress
