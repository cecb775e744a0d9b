rep 1 445193b: <ab.sh build of 445193b>/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 1 8035fad: <ab.sh build of 8035fad>/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 2 445193b: <ab.sh build of 445193b>/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 2 8035fad: <ab.sh build of 8035fad>/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 3 445193b: <ab.sh build of 445193b>/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
rep 3 8035fad: <ab.sh build of 8035fad>/build/q36 bench -m build/models/q08-q4_K.gguf -p 512 -n 0 -d 4096 -r 1 -t 2 --profile
