/* page.c: GET / and its two files, the chat and monitor page embedded in
 * the binary (page_assets.S). The files are public, as they hold nothing
 * of the server's; every call the page makes for data (the API, /monitor)
 * needs the API key when one is set.
 *
 * The page allows only its own script and style (Content-Security-Policy):
 * model output is rendered as Markdown with raw HTML off, and even a miss
 * there could not run a script or load anything from elsewhere.
 */
#include "srv_internal.h"

#include <microhttpd.h>
#include <string.h>

extern const char srv_page_html[], srv_page_html_end[];
extern const char srv_page_js[], srv_page_js_end[];
extern const char srv_page_css[], srv_page_css_end[];

static int reply_static(srv_conn *c, const char *ctype, const char *p, const char *end)
{
    struct MHD_Response *r = MHD_create_response_from_buffer((size_t)(end - p), (void *)p,
                                                             MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, "Content-Type", ctype);
    /* no-cache: the browser revalidates, so a rebuilt q36 serves its own page. */
    MHD_add_response_header(r, "Cache-Control", "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; "
                            "connect-src 'self'; img-src 'self' data:; base-uri 'none'; "
                            "form-action 'none'; frame-ancestors 'none'");
    c->status = 200;
    enum MHD_Result rc = MHD_queue_response(c->mc, 200, r);
    MHD_destroy_response(r);
    return rc;
}

int route_page(srv_conn *c)
{
    return reply_static(c, "text/html; charset=utf-8", srv_page_html, srv_page_html_end);
}

int route_page_js(srv_conn *c)
{
    return reply_static(c, "text/javascript; charset=utf-8", srv_page_js, srv_page_js_end);
}

int route_page_css(srv_conn *c)
{
    return reply_static(c, "text/css; charset=utf-8", srv_page_css, srv_page_css_end);
}
