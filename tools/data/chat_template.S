/* The Qwen3.6-style chat template that `q36 synth` writes, as a NUL-terminated
 * string symbol, so the .jinja file stays readable and is not escaped into C. */
    .section .rodata
    .global synth_chat_template
    .type synth_chat_template, @object
synth_chat_template:
    .incbin "tools/data/chat_template.jinja"
    .byte 0
    .section .note.GNU-stack,"",@progbits
