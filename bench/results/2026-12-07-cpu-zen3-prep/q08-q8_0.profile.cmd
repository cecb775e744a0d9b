./build/q36 bench -m build/models/q08-q8_0.gguf -p 512 -n 64 -d 0,4096 -r 1 -t 2 --profile
