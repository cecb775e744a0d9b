/work/base/build/q36 bench -m q08-q4_K.gguf -p 512 -n 64 -d 0 -r 1 -t 2 --profile   # built from c6d98c0 (the session-1 engine plus bench --bandwidth)
