"""`/charset/{name}`: a page encoded in a legacy or Unicode charset, declared where asked.

Cyrillic text for `windows-1251`, `koi8-r` and `utf-8`, accented French for `iso-8859-1`, long
enough for a charset detector to tell them apart. `?declared=` says where the charset is named:
`header` (Content-Type, the default), `meta` (`<meta charset>`), `http-equiv` (`<meta
http-equiv="Content-Type" content="...; charset=...">`) or `none` (a reader must detect it).
"""

from aiohttp import web

CYRILLIC_TITLE = "Съешь ещё этих мягких французских булок"
CYRILLIC_TEXT = (
    "Съешь же ещё этих мягких французских булок, да выпей чаю. Широкая электрификация южных "
    "губерний даст мощный толчок подъёму сельского хозяйства. В чащах юга жил бы цитрус? Да, "
    "но фальшивый экземпляр!"
)
LATIN_TITLE = "Crème brûlée à la française"
LATIN_TEXT = (
    "Hélas, l'été s'achève déjà et les élèves reprennent le chemin de l'école. À bientôt, chère "
    "amie; n'oubliez pas la fête. Voilà une journée très agréable: où est le garçon? Ça coûte "
    "cher, déjà."
)
# The charsets served and the (title, text) of each page.
CHARSET_PAGES = {
    "windows-1251": (CYRILLIC_TITLE, CYRILLIC_TEXT),
    "koi8-r": (CYRILLIC_TITLE, CYRILLIC_TEXT),
    "utf-8": (CYRILLIC_TITLE, CYRILLIC_TEXT),
    "iso-8859-1": (LATIN_TITLE, LATIN_TEXT),
}
DECLARED_IN = ("header", "meta", "http-equiv", "none")


def charset_body(name: str, declared: str) -> bytes:
    """The page for charset `name`, with its charset in a meta tag when `declared` asks.

    Raises:
        KeyError: when `name` is not in `CHARSET_PAGES`.
    """
    title, text = CHARSET_PAGES[name]
    meta = {
        "meta": f'<meta charset="{name}">',
        "http-equiv": f'<meta http-equiv="Content-Type" content="text/html; charset={name}">',
    }.get(declared, "")
    html = (
        f"<!DOCTYPE html>\n<html><head>{meta}<title>{title}</title></head>\n"
        f'<body><h1>{title}</h1>\n<p>{text}</p>\n<p><a href="/page/0">Page 0</a></p>\n'
        "</body></html>\n"
    )
    return html.encode(name)


async def charset_page(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    declared = request.query.get("declared", "header")
    if name not in CHARSET_PAGES or declared not in DECLARED_IN:
        raise web.HTTPNotFound(
            text=f"charsets: {', '.join(CHARSET_PAGES)}; declared: {', '.join(DECLARED_IN)}"
        )
    content_type = f"text/html; charset={name}" if declared == "header" else "text/html"
    return web.Response(body=charset_body(name, declared), headers={"Content-Type": content_type})
