"""Pages of bot checks, all answering 200: block pages modelled on real anti-bot services, and
normal content pages that merely carry a captcha widget (which a validator must let through).

`/blocked/{kind}` serves `BLOCK_PAGES[kind]`; `/widget-captcha?widget=` serves a contact page
with `WIDGETS[widget]` (default `recaptcha`).
"""

from aiohttp import web

# The snippets each service asks a site to embed, with the notice reCAPTCHA requires.
WIDGETS = {
    "recaptcha": (
        '<script src="https://www.google.com/recaptcha/api.js" async defer></script>',
        '<div class="g-recaptcha" data-sitekey="6Lc_test_site_key" '
        'data-callback="onCaptchaSolved"></div>\n'
        "<p><small>This site is protected by reCAPTCHA and the Google Privacy Policy and "
        "Terms of Service apply.</small></p>",
    ),
    "hcaptcha": (
        '<script src="https://js.hcaptcha.com/1/api.js" async defer></script>',
        '<div class="h-captcha" data-sitekey="10000000-ffff-ffff-ffff-000000000001" '
        'data-callback="onCaptchaSolved"></div>',
    ),
    "turnstile": (
        '<script src="https://challenges.cloudflare.com/turnstile/v0/api.js" async defer></script>',
        '<div class="cf-turnstile" data-sitekey="1x00000000000000000000AA" '
        'data-callback="onCaptchaSolved"></div>',
    ),
}
WIDGET_PAGE_TITLE = "Contact us"
_WIDGET_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
{script}
<script>function onCaptchaSolved(token) {{
  document.getElementById("captcha-token").value = token; // captcha passed
}}</script></head>
<body><h1>{title}</h1>
<p>Write to us and we answer within two working days. Orders, returns and questions about
your account are welcome; please give your order number when you have one.</p>
<form action="/echo" method="post" id="contact-form">
<label>Email <input type="email" name="email"></label>
<label>Message <textarea name="message"></textarea></label>
<input type="hidden" id="captcha-token" name="captcha_token">
{widget}
<button type="submit">Send</button>
</form>
<p><a href="/page/0">Back to the shop</a></p>
</body></html>
"""

_RECAPTCHA_SCRIPT, _RECAPTCHA_DIV = WIDGETS["recaptcha"]
_TURNSTILE_SCRIPT, _TURNSTILE_DIV = WIDGETS["turnstile"]
BLOCK_PAGES = {
    "access-denied": (  # Akamai
        "<HTML><HEAD>\n<TITLE>Access Denied</TITLE>\n</HEAD><BODY>\n<H1>Access Denied</H1>\n"
        'You don\'t have permission to access "http&#58;&#47;&#47;shop&#46;test&#47;" on this '
        "server.<P>\nReference&#32;&#35;18&#46;2f4d1002&#46;1700000000&#46;5c3b2e1\n"
        "</BODY>\n</HTML>\n"
    ),
    "unusual-traffic": (  # Google's /sorry page: a block page that has a reCAPTCHA widget too
        "<!DOCTYPE html>\n<html><head><title>https://www.google.com/search?q=shoes</title>\n"
        f"{_RECAPTCHA_SCRIPT}</head>\n<body><div><b>About this page</b><br><br>\n"
        "Our systems have detected unusual traffic from your computer network. This page "
        "checks to see if it's really you sending the requests, and not a robot.\n"
        f'<form id="captcha-form" action="index" method="post">{_RECAPTCHA_DIV}</form>\n'
        "</div></body></html>\n"
    ),
    "verify-human": (  # Cloudflare's managed challenge
        '<!DOCTYPE html>\n<html lang="en-US"><head><title>Just a moment...</title>\n'
        f'{_TURNSTILE_SCRIPT}</head>\n<body><div class="main-wrapper" role="main">\n'
        '<h1 class="zone-name-title">shop.test</h1>\n'
        "<p>Verify you are human by completing the action below.</p>\n"
        f"{_TURNSTILE_DIV}\n<p>shop.test needs to review the security of your connection "
        "before proceeding.</p></div></body></html>\n"
    ),
    "cloudflare-blocked": (
        "<!DOCTYPE html>\n<html><head><title>Attention Required! | Cloudflare</title></head>\n"
        '<body><div id="cf-wrapper"><h1 data-translate="block_headline">Sorry, you have been '
        'blocked</h1>\n<h2 class="cf-subheadline">You are unable to access shop.test</h2>\n'
        "<p>This website is using a security service to protect itself from online attacks."
        "</p></div></body></html>\n"
    ),
}


def widget_page(widget: str) -> str:
    """The contact page carrying `widget`'s script and snippet.

    Raises:
        KeyError: when `widget` is not in `WIDGETS`.
    """
    script, snippet = WIDGETS[widget]
    return _WIDGET_PAGE.format(title=WIDGET_PAGE_TITLE, script=script, widget=snippet)


async def widget_captcha(request: web.Request) -> web.Response:
    widget = request.query.get("widget", "recaptcha")
    if widget not in WIDGETS:
        raise web.HTTPNotFound(text=f"widgets: {', '.join(WIDGETS)}")
    return web.Response(text=widget_page(widget), content_type="text/html")


async def blocked(request: web.Request) -> web.Response:
    kind = request.match_info["kind"]
    if kind not in BLOCK_PAGES:
        raise web.HTTPNotFound(text=f"block pages: {', '.join(BLOCK_PAGES)}")
    return web.Response(text=BLOCK_PAGES[kind], content_type="text/html")
