/* The chat and monitor page that GET / serves: the files the build writes
 * into $(BUILD)/web (index.html and style.css copied from src/server/web,
 * app.js bundled there by esbuild from the page's modules and the pinned
 * npm libraries), each as a start and an end symbol. The assembler finds
 * them through -I$(BUILD)/web (the Makefile), so build folders do not mix. */
    .section .rodata
    .global srv_page_html, srv_page_html_end
    .global srv_page_js, srv_page_js_end
    .global srv_page_css, srv_page_css_end
srv_page_html:
    .incbin "index.html"
srv_page_html_end:
srv_page_js:
    .incbin "app.js"
srv_page_js_end:
srv_page_css:
    .incbin "style.css"
srv_page_css_end:
    .section .note.GNU-stack,"",@progbits
