rep 0 A: /tmp/q36_ab_2XE0ft/a/build/q36 bench -m build/models/moe-scaled-q4_K.gguf -p 512 -n 128 -d 0 -r 1 -t 2 -o jsonl
rep 0 B: /tmp/q36_ab_2XE0ft/b/build/q36 bench -m build/models/moe-scaled-q4_K.gguf -p 512 -n 128 -d 0 -r 1 -t 2 -o jsonl
rep 1 B: /tmp/q36_ab_2XE0ft/b/build/q36 bench -m build/models/moe-scaled-q4_K.gguf -p 512 -n 128 -d 0 -r 1 -t 2 -o jsonl
rep 1 A: /tmp/q36_ab_2XE0ft/a/build/q36 bench -m build/models/moe-scaled-q4_K.gguf -p 512 -n 128 -d 0 -r 1 -t 2 -o jsonl
rep 2 A: /tmp/q36_ab_2XE0ft/a/build/q36 bench -m build/models/moe-scaled-q4_K.gguf -p 512 -n 128 -d 0 -r 1 -t 2 -o jsonl
rep 2 B: /tmp/q36_ab_2XE0ft/b/build/q36 bench -m build/models/moe-scaled-q4_K.gguf -p 512 -n 128 -d 0 -r 1 -t 2 -o jsonl
