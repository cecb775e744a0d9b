./build/q36 bench -m build/models/q08-q5_K.gguf -p 512 -n 128 -r 5 -t 2 --baseline llama.cpp
ef366054a82d47f30a0d4d0829cc0ed04f04820c89000a1ea0e46642f2e4d479  ../../../build/models/q08-q5_K.gguf
