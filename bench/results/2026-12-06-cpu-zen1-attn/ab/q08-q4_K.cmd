rep 0 A: <tmp>/a/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 -o jsonl
rep 0 B: <tmp>/b/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 -o jsonl
rep 1 B: <tmp>/b/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 -o jsonl
rep 1 A: <tmp>/a/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 -o jsonl
rep 2 A: <tmp>/a/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 -o jsonl
rep 2 B: <tmp>/b/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 -o jsonl
