"""The Scrapy peer of the extraction benchmark (`bench.dagster.bench_extract`), run by the Scrapy
venv's Python (it imports only Scrapy and `scrapy_spider`'s settings). Every URL of a file is
fetched once (no link followed) and one item per product page is written to a JSON-lines
feed, with the fields the benchmark's selector set takes, by the same CSS and XPath selectors.
Settings as `scrapy_spider.py`'s: robots.txt obeyed, 8 requests in flight per host, no delay.

    python scrapy_extract_spider.py URLS.txt OUT.jsonl
"""

import sys

import scrapy
from scrapy.crawler import CrawlerProcess

# Run as a script: its folder, where the list spider lives, is on sys.path.
from scrapy_spider import SETTINGS


def number(text: str | None) -> float | None:
    """A shop's price ("$1,234.50") as a float; None when the page shows none."""
    if text is None:
        return None
    return float(text.strip().replace("$", "").replace(",", ""))


class ProductSpider(scrapy.Spider):
    """Every URL of a file, once; one item per product page."""

    name = "products"

    def __init__(self, path: str, **kwargs):
        super().__init__(**kwargs)
        with open(path) as urls:
            self.start_urls = [line.strip() for line in urls if line.strip()]

    def parse(self, response):
        name = response.css("h1::text").get()
        image = response.css("img.main::attr(src)").get()
        stars = response.css(".rating::attr(data-stars)").get()
        yield {
            "url": response.url,
            "name": name.strip() if name is not None else None,
            "price": number(response.css("span.price::text").get()),
            "sku": response.xpath("//*[@itemprop='sku']/text()").get(),
            "tags": response.css(".tags li::text").getall(),
            "image": response.urljoin(image) if image is not None else None,
            "stars": int(stars) if stars is not None else None,
        }


def main(argv: list[str]) -> int:
    path, out = argv
    settings = {**SETTINGS, "FEEDS": {out: {"format": "jsonlines"}}}
    process = CrawlerProcess(settings)
    process.crawl(ProductSpider, path=path)
    process.start()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
