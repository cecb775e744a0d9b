rep 1 445193b: /tmp/libs/q36-445193b bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 1 8035fad: /tmp/libs/q36-8035fad bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 2 445193b: /tmp/libs/q36-445193b bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 2 8035fad: /tmp/libs/q36-8035fad bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 3 445193b: /tmp/libs/q36-445193b bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 3 8035fad: /tmp/libs/q36-8035fad bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
