"""`/products/` : a shop's shape, with data to extract (`product(n)` is what each page shows).

`/products/list/{k}` lists products 20k .. 20k+19 (each a link to its page, with its name and
price as a shop's list shows them) and links to the next list page; `/products/{n}` is product
n's page: its name in `<h1>`, price (`$1,234.50`, thousands separated), SKU (`itemprop`), tags
(0-3), main image (a relative `src`), star rating (a `data-` attribute), description. Every
seventh product (n % 7 == 6) is sold out: its page has no price. Products are 0 .. count-1
(the site's `pages`); beyond them a 404.
"""

import html
from typing import NamedTuple

from aiohttp import web

PER_LIST_PAGE = 20
_ADJECTIVES = ("Blue", "Sturdy", "Compact", "Deluxe", "Quiet", "Rustic", "Smart", "Tiny")
_NOUNS = ("widget", "kettle", "lamp", "backpack", "chair", "speaker", "notebook", "drill")
_TAGS = ("new", "sale", "eco", "bestseller", "gift")


class Product(NamedTuple):
    """What product n's page shows (None and [] where it shows nothing)."""

    n: int
    name: str
    price: float | None  # None: sold out
    sku: str
    tags: list[str]
    image: str  # the path the page's relative `src` resolves to
    stars: int


def product(n: int, seed: int = 0) -> Product:
    """Product n of a site built with `seed`."""
    mix = (n * 2654435761 + seed * 40503) % 2**32
    name = f"{_ADJECTIVES[mix % len(_ADJECTIVES)]} {_NOUNS[(mix >> 3) % len(_NOUNS)]} {n}"
    price = None if n % 7 == 6 else ((mix >> 6) % 250_000) / 100 + 1
    tags = [_TAGS[(mix >> (9 + 3 * i)) % len(_TAGS)] for i in range(n % 4)]
    return Product(n, name, price, f"SKU-{n:06d}", tags, f"/img/products/{n}.png", 1 + mix % 5)


def product_html(item: Product) -> str:
    """Product `item`'s page."""
    name = html.escape(item.name)
    price = (
        f'<span class="price" itemprop="price">${item.price:,.2f}</span>'
        if item.price is not None
        else '<p class="sold-out">Sold out</p>'
    )
    tags = "".join(f"<li>{tag}</li>" for tag in item.tags)
    return (
        f"<!DOCTYPE html>\n<html><head><title>{name} | Shop</title></head>\n"
        f'<body><nav><a href="/products/list/{item.n // PER_LIST_PAGE}">Back to the list</a>'
        f'</nav>\n<main itemscope><h1 itemprop="name">\n  {name}\n</h1>\n{price}\n'
        f'<span itemprop="sku">{item.sku}</span>\n<ul class="tags">{tags}</ul>\n'
        f'<img class="main" src="../img/products/{item.n}.png" alt="{name}">\n'
        f'<span class="rating" data-stars="{item.stars}">{"*" * item.stars}</span>\n'
        f'<div class="description"><p>The {name} does what a {name.split()[1]} does, '
        "and does it well.</p></div></main></body></html>\n"
    )


def list_html(page: int, count: int, seed: int) -> str:
    """List page `page` of a shop of `count` products."""
    first = page * PER_LIST_PAGE
    items = []
    for n in range(first, min(first + PER_LIST_PAGE, count)):
        item = product(n, seed)
        price = f"${item.price:,.2f}" if item.price is not None else "sold out"
        items.append(
            f'<li class="product"><a href="/products/{n}">{html.escape(item.name)}</a> '
            f'<span class="price">{price}</span></li>'
        )
    more = first + PER_LIST_PAGE < count
    following = f'<a rel="next" href="/products/list/{page + 1}">Next</a>' if more else ""
    return (
        f"<!DOCTYPE html>\n<html><head><title>Products, page {page}</title></head>\n"
        f'<body><h1>Products</h1><ul class="products">{"".join(items)}</ul>{following}'
        "</body></html>\n"
    )


class Products:
    """The `/products/` routes of a site of `count` products."""

    def __init__(self, count: int, seed: int) -> None:
        self.count = count
        self.seed = seed

    async def page(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        if n >= self.count:
            raise web.HTTPNotFound(text=f"products are 0..{self.count - 1}")
        return web.Response(text=product_html(product(n, self.seed)), content_type="text/html")

    async def list_page(self, request: web.Request) -> web.Response:
        page = int(request.match_info["k"])
        if page * PER_LIST_PAGE >= self.count:
            raise web.HTTPNotFound(text=f"list pages are 0..{(self.count - 1) // PER_LIST_PAGE}")
        return web.Response(text=list_html(page, self.count, self.seed), content_type="text/html")

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(r"/products/{n:\d+}", self.page),
            web.get(r"/products/list/{k:\d+}", self.list_page),
        ]
